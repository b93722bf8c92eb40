//! HEP3 (the Homer Encapsulation Protocol, version 3), as rtpengine's
//! `homer.c` writes it for RTCP: the chunks Homer 7 and heplify-server read
//! to file an RTCP report under its call.
//!
//! Written by hand: HEP3 is a handful of type-length-value chunks, and no
//! maintained Rust crate writes it.

use std::net::{IpAddr, SocketAddr};

/// HEP's protocol type for RTCP as JSON (rtpengine's `PROTO_RTCP_JSON`).
pub const PROTO_RTCP_JSON: u8 = 5;

/// What a HEP packet says about the packet it carries.
#[derive(Clone, Copy, Debug)]
pub struct Meta<'a> {
    /// The packet's source (the endpoint that sent the report).
    pub src: SocketAddr,
    /// Its destination (the relay's address it arrived on).
    pub dst: SocketAddr,
    /// When it was captured, UNIX µs.
    pub unix_us: u64,
    /// The capture agent's ID (`--homer-id`).
    pub capture_id: u32,
    /// The correlation ID: the call's Call-ID.
    pub correlation: &'a str,
}

fn chunk(out: &mut Vec<u8>, kind: u16, data: &[u8]) {
    out.extend(0u16.to_be_bytes()); // generic vendor
    out.extend(kind.to_be_bytes());
    out.extend(((6 + data.len()) as u16).to_be_bytes());
    out.extend(data);
}

/// Writes one HEP3 packet carrying `payload` into `out` (cleared first),
/// chunks in rtpengine's order. `None` when it would not fit HEP's 16-bit
/// length, or when the two addresses are of different families.
pub fn encode(out: &mut Vec<u8>, m: &Meta<'_>, proto: u8, payload: &[u8]) -> Option<()> {
    out.clear();
    out.extend(b"HEP3");
    out.extend([0, 0]); // total length, set below
    let v4 = match (m.src.ip(), m.dst.ip()) {
        (IpAddr::V4(_), IpAddr::V4(_)) => true,
        (IpAddr::V6(_), IpAddr::V6(_)) => false,
        _ => return None,
    };
    chunk(out, 0x0001, &[if v4 { 2 } else { 10 }]); // AF_INET, AF_INET6
    chunk(out, 0x0002, &[17]); // UDP
    chunk(out, 0x0007, &m.src.port().to_be_bytes());
    chunk(out, 0x0008, &m.dst.port().to_be_bytes());
    chunk(out, 0x0009, &((m.unix_us / 1_000_000) as u32).to_be_bytes());
    chunk(out, 0x000a, &((m.unix_us % 1_000_000) as u32).to_be_bytes());
    chunk(out, 0x000b, &[proto]);
    chunk(out, 0x000c, &m.capture_id.to_be_bytes());
    match (m.src.ip(), m.dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            chunk(out, 0x0003, &s.octets());
            chunk(out, 0x0004, &d.octets());
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            chunk(out, 0x0005, &s.octets());
            chunk(out, 0x0006, &d.octets());
        }
        _ => return None,
    }
    chunk(out, 0x0011, m.correlation.as_bytes());
    chunk(out, 0x000f, payload);
    let total = u16::try_from(out.len()).ok()?;
    out[4..6].copy_from_slice(&total.to_be_bytes());
    Some(())
}

/// The chunks of a HEP3 packet by type (vendor 0), for tests and tools:
/// `None` when it is not well formed.
pub fn decode(p: &[u8]) -> Option<Vec<(u16, &[u8])>> {
    if p.get(..4)? != b"HEP3" || u16::from_be_bytes([p[4], p[5]]) as usize != p.len() {
        return None;
    }
    let mut at = 6;
    let mut out = Vec::new();
    while at < p.len() {
        let h = p.get(at..at + 6)?;
        let kind = u16::from_be_bytes([h[2], h[3]]);
        let len = u16::from_be_bytes([h[4], h[5]]) as usize;
        if len < 6 {
            return None;
        }
        out.push((kind, p.get(at + 6..at + len)?));
        at += len;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_ipv4_and_ipv6() {
        let mut out = Vec::new();
        let m = Meta {
            src: "192.0.2.1:4000".parse().unwrap(),
            dst: "198.51.100.2:30001".parse().unwrap(),
            unix_us: 1_700_000_000_123_456,
            capture_id: 2001,
            correlation: "call-1@host",
        };
        encode(&mut out, &m, PROTO_RTCP_JSON, b"{ }").unwrap();
        let c = decode(&out).unwrap();
        let get = |k: u16| c.iter().find(|(t, _)| *t == k).map(|(_, v)| *v).unwrap();
        assert_eq!(get(1), [2]);
        assert_eq!(get(2), [17]);
        assert_eq!(get(3), [192, 0, 2, 1]);
        assert_eq!(get(4), [198, 51, 100, 2]);
        assert_eq!(get(7), 4000u16.to_be_bytes());
        assert_eq!(get(8), 30001u16.to_be_bytes());
        assert_eq!(get(9), 1_700_000_000u32.to_be_bytes());
        assert_eq!(get(10), 123_456u32.to_be_bytes());
        assert_eq!(get(11), [5]);
        assert_eq!(get(12), 2001u32.to_be_bytes());
        assert_eq!(get(0x11), b"call-1@host");
        assert_eq!(get(0x0f), b"{ }");
        let m6 = Meta { src: "[2001:db8::1]:5".parse().unwrap(), dst: "[2001:db8::2]:6".parse().unwrap(), ..m };
        encode(&mut out, &m6, PROTO_RTCP_JSON, b"x").unwrap();
        let c = decode(&out).unwrap();
        assert_eq!(c.iter().find(|(t, _)| *t == 1).unwrap().1, [10]);
        assert_eq!(c.iter().find(|(t, _)| *t == 5).unwrap().1.len(), 16);
        // Mixed families and oversized payloads are refused.
        let mixed = Meta { dst: "[2001:db8::2]:6".parse().unwrap(), ..m };
        assert_eq!(encode(&mut out, &mixed, PROTO_RTCP_JSON, b"x"), None);
        assert_eq!(encode(&mut out, &m, PROTO_RTCP_JSON, &[0; 70_000]), None);
        assert_eq!(decode(b"HEP3\0\x07x"), None);
    }
}
