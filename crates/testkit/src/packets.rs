//! The RTP and RTCP packets the tests send: one builder for every crate's
//! tests, so that a test says what it varies (SSRC, sequence number,
//! payload type, timestamp) and nothing else.

/// The header of a test RTP packet: version 2, no padding, extension or
/// CSRCs.
#[derive(Clone, Copy, Debug)]
pub struct Rtp {
    /// Payload type.
    pub pt: u8,
    /// Marker bit.
    pub marker: bool,
    /// Sequence number.
    pub seq: u16,
    /// Timestamp.
    pub ts: u32,
    /// SSRC.
    pub ssrc: u32,
}

impl Rtp {
    /// Payload type 0, the timestamp 160 a packet (20 ms of 8 kHz audio).
    pub fn new(ssrc: u32, seq: u16) -> Rtp {
        Rtp { pt: 0, marker: false, seq, ts: u32::from(seq).wrapping_mul(160), ssrc }
    }

    /// With payload type `pt`.
    pub fn pt(self, pt: u8) -> Rtp {
        Rtp { pt, ..self }
    }

    /// With timestamp `ts`.
    pub fn ts(self, ts: u32) -> Rtp {
        Rtp { ts, ..self }
    }

    /// With the marker bit set.
    pub fn marked(self) -> Rtp {
        Rtp { marker: true, ..self }
    }

    /// The 12 header bytes.
    pub fn header(&self) -> [u8; 12] {
        let mut h = [0u8; 12];
        h[0] = 0x80;
        h[1] = (u8::from(self.marker) << 7) | (self.pt & 0x7f);
        h[2..4].copy_from_slice(&self.seq.to_be_bytes());
        h[4..8].copy_from_slice(&self.ts.to_be_bytes());
        h[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
        h
    }

    /// The packet with `payload`.
    pub fn packet(&self, payload: &[u8]) -> Vec<u8> {
        let mut p = self.header().to_vec();
        p.extend_from_slice(payload);
        p
    }

    /// Writes the packet with `payload` into `out` without allocating;
    /// its length. Panics when `out` is too short.
    pub fn write(&self, payload: &[u8], out: &mut [u8]) -> usize {
        let n = 12 + payload.len();
        out[..12].copy_from_slice(&self.header());
        out[12..n].copy_from_slice(payload);
        n
    }
}

/// An RTP packet of `ssrc` and `seq` ([`Rtp::new`]) with `payload`.
pub fn rtp(ssrc: u32, seq: u16, payload: &[u8]) -> Vec<u8> {
    Rtp::new(ssrc, seq).packet(payload)
}

/// A plain RTCP sender report of `ssrc`, its times and counts made from `n`.
pub fn rtcp_sr(ssrc: u32, n: u32) -> Vec<u8> {
    let mut p = vec![0x80, 200, 0, 6];
    p.extend_from_slice(&ssrc.to_be_bytes());
    for w in [0xe000_0000u32.wrapping_add(n), n, n.wrapping_mul(160), n, n.wrapping_mul(160)] {
        p.extend_from_slice(&w.to_be_bytes());
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_land_where_rfc_3550_puts_them() {
        let p = Rtp::new(0x0102_0304, 0x0506).pt(96).marked().ts(0x0708_090a).packet(&[0xaa]);
        assert_eq!(p, [0x80, 0xe0, 5, 6, 7, 8, 9, 0x0a, 1, 2, 3, 4, 0xaa]);
        let mut buf = [0u8; 16];
        assert_eq!(Rtp::new(1, 2).write(&[9, 9], &mut buf), 14);
        assert_eq!(&buf[..14], &rtp(1, 2, &[9, 9])[..]);
        assert_eq!(rtcp_sr(7, 1).len(), 28);
    }
}
