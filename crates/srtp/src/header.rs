//! RTP (RFC 3550 §5.1) and RTCP (RFC 3550 §6.4) header views.
//!
//! Parsing never panics: every bound is checked and a malformed packet is a
//! typed [`HeaderError`].

use crate::error::HeaderError;

/// The parts of an RTP header SRTP needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtpHeader {
    /// Marker bit.
    pub marker: bool,
    /// Payload type.
    pub payload_type: u8,
    /// Sequence number.
    pub seq: u16,
    /// Timestamp.
    pub timestamp: u32,
    /// Synchronisation source.
    pub ssrc: u32,
    /// Padding bit.
    pub padding: bool,
    /// Length of the header including CSRCs and extension: the payload starts here.
    pub len: usize,
}

impl RtpHeader {
    /// Parses the header of `pkt`, which must hold at least the whole header.
    /// Padding is not checked here (in SRTP it is inside the encrypted payload);
    /// see [`check_padding`].
    pub fn parse(pkt: &[u8]) -> Result<RtpHeader, HeaderError> {
        if pkt.len() < 12 {
            return Err(HeaderError::TooShort(pkt.len()));
        }
        let version = pkt[0] >> 6;
        if version != 2 {
            return Err(HeaderError::BadVersion(version));
        }
        let cc = pkt[0] & 0x0f;
        let mut len = 12 + 4 * cc as usize;
        if len > pkt.len() {
            return Err(HeaderError::CsrcOverrun(cc));
        }
        if pkt[0] & 0x10 != 0 {
            if len + 4 > pkt.len() {
                return Err(HeaderError::ExtensionOverrun);
            }
            let words = u16::from_be_bytes([pkt[len + 2], pkt[len + 3]]) as usize;
            len += 4 + 4 * words;
            if len > pkt.len() {
                return Err(HeaderError::ExtensionOverrun);
            }
        }
        Ok(RtpHeader {
            marker: pkt[1] & 0x80 != 0,
            payload_type: pkt[1] & 0x7f,
            seq: u16::from_be_bytes([pkt[2], pkt[3]]),
            timestamp: u32::from_be_bytes([pkt[4], pkt[5], pkt[6], pkt[7]]),
            ssrc: u32::from_be_bytes([pkt[8], pkt[9], pkt[10], pkt[11]]),
            padding: pkt[0] & 0x20 != 0,
            len,
        })
    }
}

/// Checks the RTP padding of a plaintext packet whose header is `hdr`: with
/// the P bit set, the last byte counts the padding bytes (at least 1) and
/// they must fit in the payload.
pub fn check_padding(hdr: &RtpHeader, pkt: &[u8]) -> Result<(), HeaderError> {
    if !hdr.padding {
        return Ok(());
    }
    let payload = pkt.len().saturating_sub(hdr.len);
    match pkt.last() {
        Some(&n) if payload > 0 && n != 0 && n as usize <= payload => Ok(()),
        Some(&n) if payload > 0 => Err(HeaderError::BadPadding(n)),
        _ => Err(HeaderError::BadPadding(0)),
    }
}

/// The first RTCP header of a (compound) packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RtcpHeader {
    /// Packet type (200 = SR, 201 = RR, …).
    pub packet_type: u8,
    /// SSRC of the sender.
    pub ssrc: u32,
}

impl RtcpHeader {
    /// Parses the first RTCP header and checks that every packet of the
    /// compound packet has version 2 and a length inside the buffer.
    pub fn parse(pkt: &[u8]) -> Result<RtcpHeader, HeaderError> {
        if pkt.len() < 8 {
            return Err(HeaderError::TooShort(pkt.len()));
        }
        let packet_type = pkt[1];
        if !(192..=223).contains(&packet_type) {
            return Err(HeaderError::NotRtcp(packet_type));
        }
        let mut off = 0;
        while off < pkt.len() {
            if pkt.len() - off < 4 {
                return Err(HeaderError::RtcpLength);
            }
            let version = pkt[off] >> 6;
            if version != 2 {
                return Err(HeaderError::BadVersion(version));
            }
            let words = u16::from_be_bytes([pkt[off + 2], pkt[off + 3]]) as usize;
            off += 4 * (words + 1);
        }
        if off != pkt.len() {
            return Err(HeaderError::RtcpLength);
        }
        Ok(RtcpHeader { packet_type, ssrc: u32::from_be_bytes([pkt[4], pkt[5], pkt[6], pkt[7]]) })
    }

    /// Parses only the fixed 8 bytes (version, type and SSRC), as a receiver
    /// must before the encrypted rest can be checked.
    pub fn parse_fixed(pkt: &[u8]) -> Result<RtcpHeader, HeaderError> {
        if pkt.len() < 8 {
            return Err(HeaderError::TooShort(pkt.len()));
        }
        let version = pkt[0] >> 6;
        if version != 2 {
            return Err(HeaderError::BadVersion(version));
        }
        let packet_type = pkt[1];
        if !(192..=223).contains(&packet_type) {
            return Err(HeaderError::NotRtcp(packet_type));
        }
        Ok(RtcpHeader { packet_type, ssrc: u32::from_be_bytes([pkt[4], pkt[5], pkt[6], pkt[7]]) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtp(first: u8, extra: &[u8]) -> Vec<u8> {
        let mut p = vec![first, 0x80 | 8, 0x12, 0x34, 0, 0, 0, 1, 0xde, 0xad, 0xbe, 0xef];
        p.extend_from_slice(extra);
        p
    }

    #[test]
    fn parses_plain_header() {
        let h = RtpHeader::parse(&rtp(0x80, &[1, 2, 3])).unwrap();
        assert_eq!(h.seq, 0x1234);
        assert_eq!(h.ssrc, 0xdeadbeef);
        assert!(h.marker);
        assert_eq!(h.payload_type, 8);
        assert_eq!(h.len, 12);
    }

    #[test]
    fn parses_csrc_and_extension() {
        let mut extra = vec![0; 8]; // two CSRCs
        extra.extend_from_slice(&[0xbe, 0xde, 0, 1, 1, 2, 3, 4]);
        let h = RtpHeader::parse(&rtp(0x92, &extra)).unwrap();
        assert_eq!(h.len, 12 + 8 + 8);
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(RtpHeader::parse(&[0x80; 11]), Err(HeaderError::TooShort(11)));
        assert_eq!(RtpHeader::parse(&rtp(0x40, &[])), Err(HeaderError::BadVersion(1)));
        assert_eq!(RtpHeader::parse(&rtp(0x81, &[0; 3])), Err(HeaderError::CsrcOverrun(1)));
        assert_eq!(RtpHeader::parse(&rtp(0x90, &[0; 3])), Err(HeaderError::ExtensionOverrun));
        assert_eq!(RtpHeader::parse(&rtp(0x90, &[0xbe, 0xde, 0, 2, 0, 0, 0, 0])), Err(HeaderError::ExtensionOverrun));
    }

    #[test]
    fn padding_rules() {
        let p = rtp(0xa0, &[9, 9, 2]);
        let h = RtpHeader::parse(&p).unwrap();
        assert!(check_padding(&h, &p).is_ok());
        let p = rtp(0xa0, &[9, 9, 4]);
        assert_eq!(check_padding(&h, &p), Err(HeaderError::BadPadding(4)));
        let p = rtp(0xa0, &[9, 9, 0]);
        assert_eq!(check_padding(&h, &p), Err(HeaderError::BadPadding(0)));
        let p = rtp(0xa0, &[]);
        assert_eq!(check_padding(&h, &p), Err(HeaderError::BadPadding(0)));
    }

    #[test]
    fn rtcp_compound() {
        let mut p = vec![0x80, 200, 0, 1, 1, 2, 3, 4];
        p.extend_from_slice(&[0x81, 202, 0, 0]);
        assert_eq!(RtcpHeader::parse(&p).unwrap().ssrc, 0x01020304);
        p.push(0);
        assert_eq!(RtcpHeader::parse(&p), Err(HeaderError::RtcpLength));
        assert_eq!(RtcpHeader::parse(&[0x80, 96, 0, 1, 0, 0, 0, 0]), Err(HeaderError::NotRtcp(96)));
    }
}
