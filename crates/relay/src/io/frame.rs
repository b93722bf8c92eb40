//! Ethernet, IPv4/IPv6 and UDP headers of the frames the frame backends
//! (`xdp`, `mem`) receive and transmit: parsed on the way in, written with
//! their checksums into a buffer's headroom on the way out. Written here
//! rather than taken from a packet crate because the fast path needs
//! exactly this: no allocation, the UDP checksum from a per-leg cached
//! pseudo-header sum, and headers written in place in front of a payload
//! that is already where it will be sent from.

use std::net::{IpAddr, SocketAddr};

/// An address as 16 bytes (IPv4 in the first 4) and its family (4 or 6).
pub fn ip_bytes(ip: IpAddr) -> ([u8; 16], u8) {
    let mut a = [0u8; 16];
    match ip {
        IpAddr::V4(v4) => {
            a[..4].copy_from_slice(&v4.octets());
            (a, 4)
        }
        IpAddr::V6(v6) => (v6.octets(), 6),
    }
}

/// The UDP destination port of an IPv4 frame without options, read where
/// [`parse`] would find it but unchecked otherwise: only for a hint (the
/// mem backend announces the leg entry of a frame before parsing it).
pub fn ipv4_udp_dst_port(f: &[u8]) -> Option<u16> {
    let ipv4 = f.get(12..15)? == [0x08, 0x00, 0x45];
    let port = f.get(36..38)?;
    ipv4.then(|| u16::from_be_bytes([port[0], port[1]]))
}

/// The headers of an IPv4 or IPv6 UDP frame (no VLAN tag, no IP options or
/// extension headers), as the XDP program redirects them:
/// header bytes, UDP payload length, source and destination.
pub fn parse(f: &[u8]) -> Option<(usize, usize, SocketAddr, SocketAddr)> {
    let ethertype = u16::from_be_bytes([*f.get(12)?, *f.get(13)?]);
    let (l3, src, dst, udp) = match ethertype {
        0x0800 => {
            let ip = f.get(14..34)?;
            if ip[0] != 0x45 || ip[9] != 17 {
                return None;
            }
            let src: [u8; 4] = ip[12..16].try_into().ok()?;
            let dst: [u8; 4] = ip[16..20].try_into().ok()?;
            let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
            (total.checked_sub(20)?, IpAddr::from(src), IpAddr::from(dst), 34)
        }
        0x86dd => {
            let ip = f.get(14..54)?;
            if ip[6] != 17 {
                return None;
            }
            let src: [u8; 16] = ip[8..24].try_into().ok()?;
            let dst: [u8; 16] = ip[24..40].try_into().ok()?;
            (u16::from_be_bytes([ip[4], ip[5]]) as usize, IpAddr::from(src), IpAddr::from(dst), 54)
        }
        _ => return None,
    };
    let u = f.get(udp..udp + 8)?;
    let ulen = u16::from_be_bytes([u[4], u[5]]) as usize;
    if ulen < 8 || ulen > l3 || udp + ulen > f.len() {
        return None;
    }
    let sport = u16::from_be_bytes([u[0], u[1]]);
    let dport = u16::from_be_bytes([u[2], u[3]]);
    Some((udp + 8, ulen - 8, SocketAddr::new(src, sport), SocketAddr::new(dst, dport)))
}

/// One's-complement sum of big-endian 16-bit words (RFC 1071).
pub fn sum16(mut acc: u64, b: &[u8]) -> u64 {
    let mut chunks = b.chunks_exact(2);
    for c in &mut chunks {
        acc += u64::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        acc += u64::from(*last) << 8;
    }
    acc
}

pub fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The source and destination addresses summed as 16-bit words (unfolded):
/// the part of the UDP pseudo-header that stays the same for a leg.
pub fn addr_sum(from: IpAddr, to: IpAddr) -> u64 {
    let (s, _) = ip_bytes(from);
    let (d, _) = ip_bytes(to);
    let n = if from.is_ipv4() { 4 } else { 16 };
    sum16(sum16(0, &s[..n]), &d[..n])
}

/// Writes Ethernet, IP and UDP headers in front of a `len`-byte payload at
/// `f[hdr..]`, checksums included; `hdr` is 42 (IPv4) or 62 (IPv6).
/// `addr_sum` is [`addr_sum`] of the two addresses (cached per leg).
#[allow(clippy::too_many_arguments)]
pub fn write_headers(
    f: &mut [u8],
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    from: SocketAddr,
    to: SocketAddr,
    addr_sum: u64,
    len: usize,
    id: u16,
) {
    f[0..6].copy_from_slice(&dst_mac);
    f[6..12].copy_from_slice(&src_mac);
    let ulen = (8 + len) as u16;
    let (udp, pseudo) = match (from.ip(), to.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            let ip = &mut f[14..34];
            ip[0] = 0x45;
            ip[1] = 0;
            ip[2..4].copy_from_slice(&(20 + ulen).to_be_bytes());
            ip[4..6].copy_from_slice(&id.to_be_bytes());
            ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
            ip[8] = 64;
            ip[9] = 17;
            ip[10..12].fill(0);
            ip[12..16].copy_from_slice(&s.octets());
            ip[16..20].copy_from_slice(&d.octets());
            let c = fold(sum16(0, ip));
            ip[10..12].copy_from_slice(&c.to_be_bytes());
            (34, addr_sum + 17 + u64::from(ulen))
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            f[12..14].copy_from_slice(&0x86ddu16.to_be_bytes());
            let ip = &mut f[14..54];
            ip[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
            ip[4..6].copy_from_slice(&ulen.to_be_bytes());
            ip[6] = 17;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&s.octets());
            ip[24..40].copy_from_slice(&d.octets());
            (54, addr_sum + 17 + u64::from(ulen))
        }
        _ => unreachable!("the caller checks that both addresses are of one family"),
    };
    let u = &mut f[udp..udp + 8];
    u[0..2].copy_from_slice(&from.port().to_be_bytes());
    u[2..4].copy_from_slice(&to.port().to_be_bytes());
    u[4..6].copy_from_slice(&ulen.to_be_bytes());
    u[6..8].fill(0);
    let c = fold(sum16(pseudo, &f[udp..udp + 8 + len]));
    let c = if c == 0 { 0xffff } else { c };
    f[udp + 6..udp + 8].copy_from_slice(&c.to_be_bytes());
}

/// Whether a frame's IPv4 header checksum (IPv6 has none) and UDP checksum
/// are valid (what a receiving NIC checks).
pub fn checksums_ok(f: &[u8]) -> bool {
    let Some((hdr, len, from, to)) = parse(f) else { return false };
    let udp = hdr - 8;
    if from.is_ipv4() && fold(sum16(0, &f[14..34])) != 0 {
        return false;
    }
    let pseudo = addr_sum(from.ip(), to.ip()) + 17 + (8 + len) as u64;
    fold(sum16(pseudo, &f[udp..udp + 8 + len])) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The destination port where an IPv4 frame without options has it,
    /// and nothing for other frames.
    #[test]
    fn a_udp_destination_port_is_read_only_where_parse_would_find_it() {
        let frame = |ethertype: [u8; 2], ihl: u8| {
            let mut f = vec![0u8; 42];
            f[12..14].copy_from_slice(&ethertype);
            f[14] = ihl;
            f[36..38].copy_from_slice(&4000u16.to_be_bytes());
            f
        };
        assert_eq!(ipv4_udp_dst_port(&frame([8, 0], 0x45)), Some(4000));
        assert_eq!(ipv4_udp_dst_port(&frame([8, 0], 0x46)), None, "IP options: not at the usual place");
        assert_eq!(ipv4_udp_dst_port(&frame([0x86, 0xdd], 0x60)), None);
        assert_eq!(ipv4_udp_dst_port(&[0u8; 20]), None);
    }

    fn frame(from: SocketAddr, to: SocketAddr, payload: &[u8]) -> Vec<u8> {
        let hdr = if from.is_ipv4() { 42 } else { 62 };
        let mut f = vec![0u8; hdr + payload.len()];
        f[hdr..].copy_from_slice(payload);
        write_headers(&mut f, [2; 6], [4; 6], from, to, addr_sum(from.ip(), to.ip()), payload.len(), 7);
        f
    }

    #[test]
    fn headers_round_trip_with_valid_checksums() {
        for (from, to) in [("198.18.0.2:30000", "198.18.0.1:40000"), ("[2001:db8::2]:30000", "[2001:db8::1]:40001")] {
            let (from, to): (SocketAddr, SocketAddr) = (from.parse().expect("addr"), to.parse().expect("addr"));
            for len in [0usize, 1, 172, 173] {
                let payload: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
                let f = frame(from, to, &payload);
                let (hdr, plen, src, dst) = parse(&f).expect("parses");
                assert_eq!((plen, src, dst), (len, from, to));
                assert_eq!(&f[hdr..], &payload[..]);
                assert_eq!((&f[0..6], &f[6..12]), (&[2u8; 6][..], &[4u8; 6][..]));
                // A valid checksum sums to 0xffff (folds to zero).
                let (udp, pseudo) = if from.is_ipv4() {
                    assert_eq!(fold(sum16(0, &f[14..34])), 0, "IPv4 header checksum");
                    (34, sum16(sum16(0, &f[26..30]), &f[30..34]))
                } else {
                    (54, sum16(0, &f[22..54]))
                };
                let ulen = (8 + len) as u64;
                assert_eq!(fold(sum16(pseudo + 17 + ulen, &f[udp..])), 0, "UDP checksum, {len} bytes");
                assert_ne!(&f[udp + 6..udp + 8], &[0, 0], "UDP checksum present");
            }
        }
    }

    #[test]
    fn parse_refuses_what_the_program_passes() {
        let from: SocketAddr = "198.18.0.2:30000".parse().expect("addr");
        let to: SocketAddr = "198.18.0.1:40000".parse().expect("addr");
        let good = frame(from, to, &[1, 2, 3]);
        let mut arp = good.clone();
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let mut opts = good.clone();
        opts[14] = 0x46;
        let mut tcp = good.clone();
        tcp[23] = 6;
        let mut long = good.clone();
        long[38..40].copy_from_slice(&100u16.to_be_bytes());
        for (what, f) in [("ARP", &arp), ("IP options", &opts), ("TCP", &tcp), ("UDP length", &long)] {
            assert!(parse(f).is_none(), "{what}");
        }
        assert!(parse(&good[..40]).is_none(), "truncated");
        assert!(parse(&good).is_some());
    }

    #[test]
    fn checksums_are_checked() {
        let from: SocketAddr = "198.18.0.2:30000".parse().expect("addr");
        let to: SocketAddr = "198.18.0.1:40000".parse().expect("addr");
        let good = frame(from, to, &[1, 2, 3, 4, 5]);
        assert!(checksums_ok(&good));
        let mut bad_ip = good.clone();
        bad_ip[22] ^= 1; // TTL
        assert!(!checksums_ok(&bad_ip));
        let mut bad_udp = good.clone();
        bad_udp[44] ^= 1; // payload
        assert!(!checksums_ok(&bad_udp));
    }
}
