//! Frames down to their UDP datagram and back: link-layer framing
//! (Ethernet with 802.1Q/802.1ad tags, Linux cooked SLL and SLL2, raw IP,
//! BSD loopback), IPv4/IPv6 and UDP parsing and building, and the Internet
//! checksum. Nothing here panics on a frame read from a file: every offset
//! is checked, and a frame that does not parse is a [`Skip`] reason.

use super::*;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Why a frame holds no usable UDP datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// The link type is not one we parse.
    UnsupportedLink,
    /// Not IPv4 or IPv6 (ARP, LLDP, …).
    NotIp,
    /// IP, but not UDP (TCP, ICMP, …).
    NotUdp,
    /// An IP fragment (not reassembled).
    Fragment,
    /// The capture holds only part of the datagram (snapshot length).
    Truncated,
    /// Headers that contradict themselves or the frame length.
    Malformed,
}

/// Where the UDP datagram lies in a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpLoc {
    /// Offset of the IP header.
    pub ip_off: usize,
    /// True for IPv6.
    pub v6: bool,
    /// Offset of the UDP header.
    pub udp_off: usize,
    /// Length of the UDP datagram (header + payload), from its length field.
    pub udp_len: usize,
    /// Source address and port.
    pub src: SocketAddr,
    /// Destination address and port.
    pub dst: SocketAddr,
}

impl UdpLoc {
    /// Offset of the UDP payload.
    pub fn payload_off(&self) -> usize {
        self.udp_off + 8
    }

    /// The UDP payload of `frame` (the frame this was found in).
    pub fn payload<'a>(&self, frame: &'a [u8]) -> &'a [u8] {
        frame.get(self.payload_off()..self.udp_off + self.udp_len).unwrap_or_default()
    }
}

/// Finds the UDP datagram of a frame of link type `link`.
pub fn locate_udp(link: u32, frame: &[u8]) -> Result<UdpLoc, Skip> {
    let (ethertype, off) = match link {
        LINKTYPE_ETHERNET => (be16(frame, 12).ok_or(Skip::Malformed)?, 14),
        LINKTYPE_LINUX_SLL => (be16(frame, 14).ok_or(Skip::Malformed)?, 16),
        LINKTYPE_LINUX_SLL2 => {
            if frame.len() < 20 {
                return Err(Skip::Malformed);
            }
            (be16(frame, 0).ok_or(Skip::Malformed)?, 20)
        }
        LINKTYPE_RAW | LINKTYPE_RAW_ALT12 | LINKTYPE_RAW_ALT14 | LINKTYPE_IPV4 | LINKTYPE_IPV6 => {
            match frame.first().map(|b| b >> 4) {
                Some(4) => (ETHERTYPE_IPV4, 0),
                Some(6) => (ETHERTYPE_IPV6, 0),
                Some(_) => return Err(Skip::NotIp),
                None => return Err(Skip::Malformed),
            }
        }
        LINKTYPE_NULL | LINKTYPE_LOOP => {
            let le = read_u32(frame, 0, false).ok_or(Skip::Malformed)?;
            let be = read_u32(frame, 0, true).ok_or(Skip::Malformed)?;
            let family = if link == LINKTYPE_LOOP {
                be
            } else if le < 0x1_0000 {
                le
            } else {
                be
            };
            match family {
                2 => (ETHERTYPE_IPV4, 4),
                10 | 24 | 28 | 30 => (ETHERTYPE_IPV6, 4),
                _ => return Err(Skip::NotIp),
            }
        }
        _ => return Err(Skip::UnsupportedLink),
    };
    let (mut ethertype, mut off) = (ethertype, off);
    // 802.1Q / 802.1ad tags, stacked at most a few deep.
    let mut tags = 0;
    while matches!(ethertype, ETHERTYPE_VLAN | ETHERTYPE_QINQ | ETHERTYPE_QINQ_OLD) {
        tags += 1;
        if tags > 8 {
            return Err(Skip::Malformed);
        }
        ethertype = be16(frame, off + 2).ok_or(Skip::Malformed)?;
        off += 4;
    }
    match ethertype {
        ETHERTYPE_IPV4 => locate_udp_v4(frame, off),
        ETHERTYPE_IPV6 => locate_udp_v6(frame, off),
        _ => Err(Skip::NotIp),
    }
}

fn locate_udp_v4(frame: &[u8], ip_off: usize) -> Result<UdpLoc, Skip> {
    let ip = frame.get(ip_off..).ok_or(Skip::Malformed)?;
    let first = *ip.first().ok_or(Skip::Malformed)?;
    if first >> 4 != 4 {
        return Err(Skip::Malformed);
    }
    let ihl = usize::from(first & 0x0f) * 4;
    if ihl < 20 {
        return Err(Skip::Malformed);
    }
    let hdr = ip.get(..20).ok_or(Skip::Malformed)?;
    let total = usize::from(be16(hdr, 2).ok_or(Skip::Malformed)?);
    if total < ihl {
        return Err(Skip::Malformed);
    }
    let flags_frag = be16(hdr, 6).ok_or(Skip::Malformed)?;
    let proto = *hdr.get(9).ok_or(Skip::Malformed)?;
    if proto != IPPROTO_UDP {
        return Err(Skip::NotUdp);
    }
    if flags_frag & 0x2000 != 0 || flags_frag & 0x1fff != 0 {
        return Err(Skip::Fragment);
    }
    if ip.len() < total {
        return Err(Skip::Truncated);
    }
    let src = Ipv4Addr::from(array::<4>(hdr, 12)?);
    let dst = Ipv4Addr::from(array::<4>(hdr, 16)?);
    udp_at(frame, ip_off, false, ip_off + ihl, ip_off + total, IpAddr::V4(src), IpAddr::V4(dst))
}

fn locate_udp_v6(frame: &[u8], ip_off: usize) -> Result<UdpLoc, Skip> {
    let hdr = frame.get(ip_off..ip_off + 40).ok_or(Skip::Malformed)?;
    if byte(hdr, 0)? >> 4 != 6 {
        return Err(Skip::Malformed);
    }
    let payload_len = usize::from(be16(hdr, 4).ok_or(Skip::Malformed)?);
    if payload_len == 0 {
        // Jumbogram or a zero-length payload: nothing we can use.
        return Err(Skip::Malformed);
    }
    let end = ip_off + 40 + payload_len;
    let mut next = byte(hdr, 6)?;
    let src = array::<16>(hdr, 8)?;
    let dst = array::<16>(hdr, 24)?;
    let mut off = ip_off + 40;
    // Walk the extension headers.
    for _ in 0..16 {
        match next {
            IPPROTO_UDP => {
                if frame.len() < end {
                    return Err(Skip::Truncated);
                }
                let (s, d) = (IpAddr::V6(Ipv6Addr::from(src)), IpAddr::V6(Ipv6Addr::from(dst)));
                return udp_at(frame, ip_off, true, off, end, s, d);
            }
            // Hop-by-hop, routing, destination options.
            0 | 43 | 60 => {
                next = byte(frame, off)?;
                off += (usize::from(byte(frame, off + 1)?) + 1) * 8;
            }
            // Authentication header.
            51 => {
                next = byte(frame, off)?;
                off += (usize::from(byte(frame, off + 1)?) + 2) * 4;
            }
            44 => return Err(Skip::Fragment),
            _ => return Err(Skip::NotUdp),
        }
        if off > end {
            return Err(Skip::Malformed);
        }
    }
    Err(Skip::Malformed)
}

fn udp_at(
    frame: &[u8],
    ip_off: usize,
    v6: bool,
    udp_off: usize,
    ip_end: usize,
    src: IpAddr,
    dst: IpAddr,
) -> Result<UdpLoc, Skip> {
    let udp = frame.get(udp_off..ip_end).ok_or(Skip::Malformed)?;
    if udp.len() < 8 {
        return Err(Skip::Malformed);
    }
    let sport = be16(udp, 0).ok_or(Skip::Malformed)?;
    let dport = be16(udp, 2).ok_or(Skip::Malformed)?;
    let udp_len = usize::from(be16(udp, 4).ok_or(Skip::Malformed)?);
    if udp_len < 8 || udp_len > udp.len() {
        return Err(Skip::Malformed);
    }
    Ok(UdpLoc { ip_off, v6, udp_off, udp_len, src: SocketAddr::new(src, sport), dst: SocketAddr::new(dst, dport) })
}

// ---------------------------------------------------------------------------
// Checksums and rewriting
// ---------------------------------------------------------------------------

/// Adds `data` to a ones'-complement running sum (big-endian 16-bit words;
/// an odd final byte is padded with zero).
fn sum_words(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        let &[hi, lo] = c else { continue };
        sum = sum.wrapping_add(u32::from(u16::from_be_bytes([hi, lo])));
        sum = (sum & 0xffff) + (sum >> 16);
    }
    if let [b] = chunks.remainder() {
        sum = sum.wrapping_add(u32::from(*b) << 8);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The Internet checksum (RFC 1071) of `data`.
pub fn internet_checksum(data: &[u8]) -> u16 {
    fold(sum_words(0, data))
}

/// The UDP checksum of `udp` (header with a zero checksum field, and
/// payload) between `src` and `dst`; a computed 0 is sent as 0xffff.
pub fn udp_checksum(src: IpAddr, dst: IpAddr, udp: &[u8]) -> u16 {
    let mut sum = 0;
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            sum = sum_words(sum, &s.octets());
            sum = sum_words(sum, &d.octets());
            sum = sum_words(sum, &[0, IPPROTO_UDP]);
            sum = sum_words(sum, &(udp.len() as u16).to_be_bytes());
        }
        _ => {
            let s = match src {
                IpAddr::V4(a) => a.to_ipv6_mapped(),
                IpAddr::V6(a) => a,
            };
            let d = match dst {
                IpAddr::V4(a) => a.to_ipv6_mapped(),
                IpAddr::V6(a) => a,
            };
            sum = sum_words(sum, &s.octets());
            sum = sum_words(sum, &d.octets());
            sum = sum_words(sum, &(udp.len() as u32).to_be_bytes());
            sum = sum_words(sum, &[0, 0, 0, IPPROTO_UDP]);
        }
    }
    sum = sum_words(sum, udp);
    match fold(sum) {
        0 => 0xffff,
        c => c,
    }
}

/// A copy of `frame` whose UDP payload (located by `loc`) is `payload`,
/// with the IP and UDP lengths, the IPv4 header checksum and the UDP
/// checksum fixed. An IPv4 datagram sent without a UDP checksum (0) keeps
/// none. Bytes after the IP packet (Ethernet padding, FCS) are kept.
pub fn replace_udp_payload(frame: &[u8], loc: &UdpLoc, payload: &[u8]) -> Result<Vec<u8>, Skip> {
    let udp_end = loc.udp_off + loc.udp_len;
    let head = frame.get(..loc.payload_off()).ok_or(Skip::Malformed)?;
    let tail = frame.get(udp_end..).ok_or(Skip::Malformed)?;
    let new_udp_len = payload.len() + 8;
    let grow = new_udp_len as isize - loc.udp_len as isize;
    let mut out = Vec::with_capacity(head.len() + payload.len() + tail.len());
    out.extend_from_slice(head);
    out.extend_from_slice(payload);
    out.extend_from_slice(tail);

    let ip = loc.ip_off;
    if loc.v6 {
        let old = be16(&out, ip + 4).ok_or(Skip::Malformed)?;
        let new = u16::try_from(old as isize + grow).map_err(|_| Skip::Malformed)?;
        out.get_mut(ip + 4..ip + 6).ok_or(Skip::Malformed)?.copy_from_slice(&new.to_be_bytes());
    } else {
        let old = be16(&out, ip + 2).ok_or(Skip::Malformed)?;
        let new = u16::try_from(old as isize + grow).map_err(|_| Skip::Malformed)?;
        out.get_mut(ip + 2..ip + 4).ok_or(Skip::Malformed)?.copy_from_slice(&new.to_be_bytes());
        let ihl = usize::from(out.get(ip).ok_or(Skip::Malformed)? & 0x0f) * 4;
        out.get_mut(ip + 10..ip + 12).ok_or(Skip::Malformed)?.copy_from_slice(&[0, 0]);
        let sum = internet_checksum(out.get(ip..ip + ihl).ok_or(Skip::Malformed)?);
        out.get_mut(ip + 10..ip + 12).ok_or(Skip::Malformed)?.copy_from_slice(&sum.to_be_bytes());
    }
    let u = loc.udp_off;
    let len16 = u16::try_from(new_udp_len).map_err(|_| Skip::Malformed)?;
    out.get_mut(u + 4..u + 6).ok_or(Skip::Malformed)?.copy_from_slice(&len16.to_be_bytes());
    let had_sum = be16(&out, u + 6).ok_or(Skip::Malformed)? != 0;
    out.get_mut(u + 6..u + 8).ok_or(Skip::Malformed)?.copy_from_slice(&[0, 0]);
    if loc.v6 || had_sum {
        let sum = udp_checksum(loc.src.ip(), loc.dst.ip(), out.get(u..u + new_udp_len).ok_or(Skip::Malformed)?);
        out.get_mut(u + 6..u + 8).ok_or(Skip::Malformed)?.copy_from_slice(&sum.to_be_bytes());
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Building frames
// ---------------------------------------------------------------------------

/// One end of a synthetic UDP conversation.
#[derive(Clone, Copy, Debug)]
pub struct Endpoint {
    /// IP address and UDP port.
    pub addr: SocketAddr,
    /// MAC address (Ethernet and SLL framing).
    pub mac: [u8; 6],
}

/// Builds a whole frame of link type `link` (Ethernet, SLL, SLL2 or raw IP)
/// carrying one UDP datagram from `src` to `dst` with `payload`.
/// `outgoing` is the SLL packet type: sent by the capturing host, or received.
pub fn build_udp_frame(
    link: u32,
    src: &Endpoint,
    dst: &Endpoint,
    ip_id: u16,
    outgoing: bool,
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    let udp_len = u16::try_from(payload.len() + 8).map_err(|_| "UDP payload too large".to_string())?;
    let mut udp = Vec::with_capacity(usize::from(udp_len));
    udp.extend_from_slice(&src.addr.port().to_be_bytes());
    udp.extend_from_slice(&dst.addr.port().to_be_bytes());
    udp.extend_from_slice(&udp_len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(payload);
    let sum = udp_checksum(src.addr.ip(), dst.addr.ip(), &udp);
    udp[6..8].copy_from_slice(&sum.to_be_bytes());

    let (ethertype, ip) = match (src.addr.ip(), dst.addr.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = u16::try_from(udp.len() + 20).map_err(|_| "IPv4 packet too large".to_string())?;
            let mut ip = Vec::with_capacity(usize::from(total));
            ip.extend_from_slice(&[0x45, 0]);
            ip.extend_from_slice(&total.to_be_bytes());
            ip.extend_from_slice(&ip_id.to_be_bytes());
            ip.extend_from_slice(&[0x40, 0, 64, IPPROTO_UDP, 0, 0]); // DF, TTL 64
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            let sum = internet_checksum(&ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            ip.extend_from_slice(&udp);
            (ETHERTYPE_IPV4, ip)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            let mut ip = Vec::with_capacity(udp.len() + 40);
            ip.extend_from_slice(&[0x60, 0, 0, 0]);
            ip.extend_from_slice(&udp_len.to_be_bytes());
            ip.extend_from_slice(&[IPPROTO_UDP, 64]);
            ip.extend_from_slice(&s.octets());
            ip.extend_from_slice(&d.octets());
            ip.extend_from_slice(&udp);
            (ETHERTYPE_IPV6, ip)
        }
        _ => return Err("source and destination must both be IPv4 or both IPv6".into()),
    };

    let mut frame = Vec::with_capacity(ip.len() + 20);
    match link {
        LINKTYPE_ETHERNET => {
            frame.extend_from_slice(&dst.mac);
            frame.extend_from_slice(&src.mac);
            frame.extend_from_slice(&ethertype.to_be_bytes());
        }
        LINKTYPE_LINUX_SLL => {
            let pkttype: u16 = if outgoing { 4 } else { 0 };
            frame.extend_from_slice(&pkttype.to_be_bytes());
            frame.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
            frame.extend_from_slice(&6u16.to_be_bytes());
            frame.extend_from_slice(&src.mac);
            frame.extend_from_slice(&[0, 0]);
            frame.extend_from_slice(&ethertype.to_be_bytes());
        }
        LINKTYPE_LINUX_SLL2 => {
            frame.extend_from_slice(&ethertype.to_be_bytes());
            frame.extend_from_slice(&[0, 0]);
            frame.extend_from_slice(&2u32.to_be_bytes()); // interface index
            frame.extend_from_slice(&1u16.to_be_bytes()); // ARPHRD_ETHER
            frame.push(if outgoing { 4 } else { 0 });
            frame.push(6);
            frame.extend_from_slice(&src.mac);
            frame.extend_from_slice(&[0, 0]);
        }
        LINKTYPE_RAW => {}
        other => return Err(format!("cannot build frames of {}", link_name(other))),
    }
    frame.extend_from_slice(&ip);
    Ok(frame)
}
