//! One packet on its way through a worker's round, and what becomes of it.

use crate::pool::Buf;
use crate::stats::Drop;
use srtp::{Kind, Prepared};
use std::net::SocketAddr;

/// One packet on its way through the round's stages. It carries its
/// stream (`slot`) and the leg it came in on (`party`). The crypto works
/// where the bytes lie, in `a`; a second buffer `b` is taken only where it
/// must write elsewhere (an engine that does not leave a failed packet as
/// received, a second try, a trailer with no room left).
pub(super) struct Pkt {
    /// Buffer holding the packet as received (and, worked in place, as it
    /// is now).
    pub a: Buf,
    /// Second buffer for the transformed packet (taken when needed).
    pub b: Option<Buf>,
    /// The current bytes are in `b`.
    pub in_b: bool,
    pub len: usize,
    /// Its stream's slot.
    pub slot: u32,
    /// The leg it arrived on (0 or 1); it leaves by the other.
    pub party: u8,
    pub kind: Kind,
    pub from: SocketAddr,
    /// When it was received (the backend's time stamp, else the round's).
    pub rx_ns: u64,
    /// When it left ([`Fate::Sent`]).
    pub sent_ns: u64,
    /// The crypto step in flight (prepared, not committed).
    pub prep: Option<Prepared>,
    /// What became of it so far.
    pub fate: Fate,
    /// Where it came from, which decides where it leaves by.
    pub origin: Origin,
}

/// Where a packet came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// Its leg's endpoint (`party`); it leaves by the other leg.
    Party,
    /// A subscriber's copy of what `party` sent: the index of its fork on
    /// that leg, which it leaves by.
    Fork(u8),
    /// The player of the other leg (`play media`, `play DTMF`), as if
    /// `party` had sent it: it leaves by the other leg, to the listener.
    Player,
}

/// What becomes of a packet in a round: one of these, never two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fate {
    /// On its way to the other leg.
    Forward,
    /// Dropped, and why (counted once, when the round returns its buffers).
    Dropped(Drop),
    /// Taken by a transcoder that sends nothing for it yet (its audio
    /// waits for the rest of an output packet): accepted, not a drop.
    Absorbed,
    /// Handed to the backend (counted when the round returns its buffers).
    Sent,
}

impl Fate {
    pub fn is_dropped(self) -> bool {
        matches!(self, Fate::Dropped(_))
    }
}

impl Pkt {
    /// A packet as received, on its way.
    pub fn new(a: Buf, len: usize, slot: u32, party: u8, kind: Kind, from: SocketAddr, rx_ns: u64) -> Pkt {
        Pkt {
            a,
            b: None,
            in_b: false,
            len,
            slot,
            party,
            kind,
            from,
            rx_ns,
            sent_ns: 0,
            prep: None,
            fate: Fate::Forward,
            origin: Origin::Party,
        }
    }

    /// The leg it leaves by.
    pub fn other(&self) -> usize {
        1 - self.party as usize
    }

    /// The packet's current bytes.
    pub fn bytes(&self) -> &[u8] {
        let buf = if self.in_b { self.b.as_deref().unwrap_or(&[]) } else { &self.a[..] };
        &buf[..self.len.min(buf.len())]
    }

    /// The buffer holding the current bytes, to change in place.
    pub fn current_mut(&mut self) -> &mut Buf {
        match (self.in_b, self.b.as_mut()) {
            (true, Some(b)) => b,
            _ => &mut self.a,
        }
    }
}

/// The backend's token of one socket: its stream's slot, the leg, RTP or
/// RTCP.
pub(super) fn token(slot: u32, party: usize, rtcp: bool) -> u32 {
    slot * 4 + party as u32 * 2 + rtcp as u32
}

/// The socket a token names: slot, leg, RTCP port.
pub(super) fn untoken(tok: u32) -> (u32, usize, bool) {
    (tok / 4, ((tok / 2) % 2) as usize, tok % 2 == 1)
}

/// RTP or RTCP: by port, or on a multiplexed port by the packet type
/// (RFC 5761 §4: 192–223 are RTCP).
pub(super) fn classify(rtcp_port: bool, mux: bool, bytes: &[u8]) -> Kind {
    if rtcp_port || (mux && bytes.len() >= 2 && (192..=223).contains(&bytes[1])) {
        Kind::Rtcp
    } else {
        Kind::Rtp
    }
}

/// Adds a one-byte-header RTP extension element (RFC 8285) `id` with
/// `value` to the plain RTP packet of `len` bytes in `buf`, in place: a new
/// extension block when the packet has none, appended to its one-byte block
/// otherwise. Returns the new length; the packet is left as it was when it
/// already carries `id`, has a two-byte block, is malformed or would not
/// fit in `buf` with room for an SRTP trailer.
pub(super) fn add_mid_extension(buf: &mut [u8], len: usize, id: u8, value: &[u8]) -> usize {
    if len < 12 || len > buf.len() || value.is_empty() || value.len() > 16 || !(1..=14).contains(&id) {
        return len;
    }
    let head = 12 + 4 * (buf[0] & 0x0f) as usize;
    let words = (1 + value.len()).div_ceil(4);
    let (at, new_block) = if buf[0] & 0x10 == 0 {
        (head, true)
    } else {
        if len < head + 4 || buf[head..head + 2] != [0xbe, 0xde] {
            return len;
        }
        let ext_words = u16::from_be_bytes([buf[head + 2], buf[head + 3]]) as usize;
        let end = head + 4 + 4 * ext_words;
        if end > len {
            return len;
        }
        // Already there (an endpoint that speaks BUNDLE itself)?
        let mut i = head + 4;
        while i < end {
            let b = buf[i];
            if b == 0 {
                i += 1;
                continue;
            }
            if b >> 4 == 15 {
                break;
            }
            if b >> 4 == id {
                return len;
            }
            i += 2 + (b & 0x0f) as usize;
        }
        (end, false)
    };
    let grow = 4 * words + if new_block { 4 } else { 0 };
    if len + grow + srtp::MAX_RTCP_TRAILER_LEN > buf.len() || at > len {
        return len;
    }
    buf.copy_within(at..len, at + grow);
    let mut w = at;
    if new_block {
        buf[w..w + 4].copy_from_slice(&[0xbe, 0xde, 0, words as u8]);
        w += 4;
        buf[0] |= 0x10;
    } else {
        let ext_words = u16::from_be_bytes([buf[head + 2], buf[head + 3]]) as usize + words;
        buf[head + 2..head + 4].copy_from_slice(&(ext_words as u16).to_be_bytes());
    }
    buf[w] = id << 4 | (value.len() as u8 - 1);
    buf[w + 1..w + 1 + value.len()].copy_from_slice(value);
    for b in &mut buf[w + 1 + value.len()..w + 4 * words] {
        *b = 0;
    }
    len + grow
}

#[cfg(test)]
mod mid_tests {
    use super::add_mid_extension;

    #[test]
    fn the_mid_goes_into_a_new_or_existing_one_byte_extension() {
        let mut buf = vec![0u8; 256];
        let pkt = [0x80, 0, 0, 1, 0, 0, 0, 160, 0xaa, 0xbb, 0xcc, 0xdd, 0x55, 0x66];
        buf[..14].copy_from_slice(&pkt);
        let n = add_mid_extension(&mut buf, 14, 4, b"1");
        assert_eq!(n, 22);
        assert_eq!(
            &buf[..22],
            &[0x90, 0, 0, 1, 0, 0, 0, 160, 0xaa, 0xbb, 0xcc, 0xdd, 0xbe, 0xde, 0, 1, 0x40, b'1', 0, 0, 0x55, 0x66]
        );
        // Again: already there, nothing changes.
        assert_eq!(add_mid_extension(&mut buf, 22, 4, b"1"), 22);
        // Another element appended to the block (a mid of 4 bytes: 2 words).
        let n = add_mid_extension(&mut buf, 22, 9, b"abcd");
        assert_eq!(n, 30);
        assert_eq!(&buf[12..16], &[0xbe, 0xde, 0, 3]);
        assert_eq!(&buf[20..28], &[0x93, b'a', b'b', b'c', b'd', 0, 0, 0]);
        assert_eq!(&buf[28..30], &[0x55, 0x66]);
        // A two-byte block, a CSRC list that runs past the end, no room: left alone.
        let mut two = [0x90u8, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 0x10, 0x00, 0, 0];
        assert_eq!(add_mid_extension(&mut two, 16, 4, b"1"), 16);
        let mut csrc = [0x8fu8, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4];
        assert_eq!(add_mid_extension(&mut csrc, 12, 4, b"1"), 12);
        let mut full = [0x80u8; 20];
        assert_eq!(add_mid_extension(&mut full, 20, 4, b"1"), 20);
    }

    #[test]
    fn any_packet_is_extended_or_left_alone_without_panicking() {
        // The packet comes from an endpoint: arbitrary bytes (a xorshift
        // stream, no dependency), lengths around the header's and the
        // buffer's edges.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let cap = 8 + (next() % 120) as usize;
            let mut buf: Vec<u8> = (0..cap).map(|_| next() as u8).collect();
            let len = (next() % (cap as u64 + 4)) as usize;
            let mid = b"abcdefghijklmnopq";
            let n = (next() % 18) as usize;
            let id = (next() % 16) as u8;
            let before = buf.clone();
            let out = add_mid_extension(&mut buf, len, id, &mid[..n]);
            assert!(out == len || (out > len && out + srtp::MAX_RTCP_TRAILER_LEN <= cap));
            if out == len {
                assert_eq!(buf, before, "a packet left alone is unchanged");
            } else {
                let words = (1 + n).div_ceil(4);
                assert!((1..=14).contains(&id) && (out - len == 4 * words || out - len == 4 * words + 4));
                assert_eq!(buf[0], before[0] | 0x10);
                assert_eq!(buf[1..12], before[1..12], "the fixed header stays");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demultiplexing() {
        assert_eq!(classify(true, false, &[0x80, 0]), Kind::Rtcp);
        assert_eq!(classify(false, true, &[0x80, 200]), Kind::Rtcp);
        assert_eq!(classify(false, true, &[0x80, 0x80 | 8]), Kind::Rtp);
        assert_eq!(classify(false, false, &[0x80, 200]), Kind::Rtp);
        assert_eq!(classify(false, true, &[0x80]), Kind::Rtp);
    }
}
