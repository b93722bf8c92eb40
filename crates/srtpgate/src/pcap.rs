//! Capture files for `decrypt` and `sample`: reading pcap and pcapng, writing
//! pcap and pcapng, link-layer framing (Ethernet with 802.1Q/802.1ad tags,
//! Linux cooked SLL and SLL2, raw IP, BSD loopback), IPv4/IPv6 and UDP
//! parsing and building, and the Internet checksum.
//!
//! Nothing here panics on input read from a file: every offset is checked,
//! and a frame that does not parse is reported as a [`Skip`] reason.

use pcap_file::pcap::{PcapHeader, PcapReader, PcapWriter, RawPcapPacket};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption};
use pcap_file::pcapng::{PcapNgReader, PcapNgWriter};
use pcap_file::{DataLink, Endianness, PcapError, TsResolution};
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::time::Duration;

/// `LINKTYPE_NULL`: BSD loopback, 4-byte address family in host byte order.
pub const LINKTYPE_NULL: u32 = 0;
/// `LINKTYPE_ETHERNET`.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// `LINKTYPE_RAW`: raw IPv4 or IPv6.
pub const LINKTYPE_RAW: u32 = 101;
/// `DLT_RAW` as some systems number it in files (12 and 14 both mean raw IP).
pub const LINKTYPE_RAW_ALT12: u32 = 12;
/// `DLT_RAW` on OpenBSD.
pub const LINKTYPE_RAW_ALT14: u32 = 14;
/// `LINKTYPE_LOOP`: OpenBSD loopback, 4-byte address family in network order.
pub const LINKTYPE_LOOP: u32 = 108;
/// `LINKTYPE_LINUX_SLL`: Linux cooked capture v1.
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// `LINKTYPE_IPV4`: raw IPv4.
pub const LINKTYPE_IPV4: u32 = 228;
/// `LINKTYPE_IPV6`: raw IPv6.
pub const LINKTYPE_IPV6: u32 = 229;
/// `LINKTYPE_LINUX_SLL2`: Linux cooked capture v2.
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_VLAN: u16 = 0x8100;
const ETHERTYPE_QINQ: u16 = 0x88a8;
const ETHERTYPE_QINQ_OLD: u16 = 0x9100;
const IPPROTO_UDP: u8 = 17;

/// A human name for a link type, for messages.
pub fn link_name(link: u32) -> String {
    match link {
        LINKTYPE_NULL => "BSD loopback".into(),
        LINKTYPE_ETHERNET => "Ethernet".into(),
        LINKTYPE_RAW | LINKTYPE_RAW_ALT12 | LINKTYPE_RAW_ALT14 => "raw IP".into(),
        LINKTYPE_LOOP => "OpenBSD loopback".into(),
        LINKTYPE_LINUX_SLL => "Linux cooked (SLL)".into(),
        LINKTYPE_IPV4 => "raw IPv4".into(),
        LINKTYPE_IPV6 => "raw IPv6".into(),
        LINKTYPE_LINUX_SLL2 => "Linux cooked v2 (SLL2)".into(),
        n => format!("link type {n}"),
    }
}

// ---------------------------------------------------------------------------
// Reading capture files
// ---------------------------------------------------------------------------

/// The container format of a capture file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Classic libpcap, with microsecond (`nano == false`) or nanosecond timestamps.
    Pcap {
        /// Nanosecond timestamps.
        nano: bool,
        /// Snapshot length from the file header.
        snaplen: u32,
    },
    /// pcapng.
    PcapNg,
}

/// One captured frame.
#[derive(Clone, Debug)]
pub struct Frame {
    /// Capture time since the Unix epoch.
    pub ts: Duration,
    /// Length of the frame on the wire (may exceed `data.len()` when the
    /// capture was cut to a snapshot length).
    pub orig_len: u32,
    /// The captured bytes, starting with the link-layer header.
    pub data: Vec<u8>,
    /// The frame's link type (`LINKTYPE_*`), or `None` when a pcapng packet
    /// names an interface that was never described.
    pub link: Option<u32>,
    /// The pcapng interface's snapshot length (0 = unlimited), or the pcap
    /// header's.
    pub snaplen: u32,
}

enum Inner {
    Pcap(PcapReader<BufReader<File>>),
    PcapNg(PcapNgReader<BufReader<File>>),
}

/// A pcap or pcapng file being read, frame by frame.
pub struct CaptureReader {
    inner: Inner,
    format: Format,
    link: u32,
    /// 1-based number of the last record returned.
    count: u64,
    name: String,
}

/// Timestamp scale of a pcapng interface: units per second, and an offset in seconds.
#[derive(Clone, Copy)]
struct TsScale {
    units_per_sec: u128,
    offset_secs: u64,
}

fn ts_scale(idb: &InterfaceDescriptionBlock<'_>) -> Result<TsScale, String> {
    let mut scale = TsScale { units_per_sec: 1_000_000, offset_secs: 0 };
    for opt in &idb.options {
        match opt {
            InterfaceDescriptionOption::IfTsResol(r) => {
                let exp = u32::from(r & 0x7f);
                let units = if r & 0x80 == 0 {
                    10u128.checked_pow(exp).filter(|_| exp <= 19)
                } else {
                    2u128.checked_pow(exp).filter(|_| exp <= 63)
                };
                scale.units_per_sec =
                    units.ok_or_else(|| format!("interface timestamp resolution 0x{r:02x} is not valid"))?;
            }
            InterfaceDescriptionOption::IfTsOffset(o) => scale.offset_secs = *o,
            _ => {}
        }
    }
    Ok(scale)
}

fn scaled_ts(raw: u64, scale: TsScale) -> Duration {
    let units = scale.units_per_sec.max(1);
    let secs = u128::from(raw) / units;
    let frac = u128::from(raw) % units;
    let nanos = frac * 1_000_000_000 / units;
    let secs = u64::try_from(secs).unwrap_or(u64::MAX).saturating_add(scale.offset_secs);
    // nanos < 1e9 because frac < units.
    Duration::from_secs(secs).saturating_add(Duration::from_nanos(u64::try_from(nanos).unwrap_or(0)))
}

/// The body of an enhanced (6) or obsolete (2) pcapng packet block after its
/// interface id: timestamp high and low words at 4 and 8, captured and
/// original lengths at 12 and 16, data from 20. Err(None) for a corrupt body
/// (the caller names the block), Err(Some) for a bad interface timestamp unit.
fn timed_packet(
    body: &[u8],
    iface: usize,
    big: bool,
    interfaces: &[InterfaceDescriptionBlock<'_>],
) -> Result<Frame, Option<String>> {
    let hi = read_u32(body, 4, big).ok_or(None)?;
    let lo = read_u32(body, 8, big).ok_or(None)?;
    let cap = read_u32(body, 12, big).ok_or(None)?;
    let orig = read_u32(body, 16, big).ok_or(None)?;
    let data = usize::try_from(cap).ok().and_then(|c| body.get(20..20usize.checked_add(c)?)).ok_or(None)?;
    let raw = (u64::from(hi) << 32) | u64::from(lo);
    let (link, snaplen, ts) = match interfaces.get(iface) {
        Some(idb) => {
            let scale = ts_scale(idb).map_err(Some)?;
            (Some(u32::from(idb.linktype)), idb.snaplen, scaled_ts(raw, scale))
        }
        None => (None, 0, Duration::from_micros(raw)),
    };
    Ok(Frame { ts, orig_len: orig.max(cap), data: data.to_vec(), link, snaplen })
}

fn read_u32(bytes: &[u8], at: usize, big: bool) -> Option<u32> {
    let b: [u8; 4] = bytes.get(at..at.checked_add(4)?)?.try_into().ok()?;
    Some(if big { u32::from_be_bytes(b) } else { u32::from_le_bytes(b) })
}

fn read_u16(bytes: &[u8], at: usize, big: bool) -> Option<u16> {
    let b: [u8; 2] = bytes.get(at..at.checked_add(2)?)?.try_into().ok()?;
    Some(if big { u16::from_be_bytes(b) } else { u16::from_le_bytes(b) })
}

fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    read_u16(bytes, at, true)
}

/// The byte at `at`, or [`Skip::Malformed`].
fn byte(bytes: &[u8], at: usize) -> Result<u8, Skip> {
    bytes.get(at).copied().ok_or(Skip::Malformed)
}

/// `N` bytes from `at`, or [`Skip::Malformed`].
fn array<const N: usize>(bytes: &[u8], at: usize) -> Result<[u8; N], Skip> {
    bytes.get(at..at.checked_add(N).ok_or(Skip::Malformed)?).and_then(|s| s.try_into().ok()).ok_or(Skip::Malformed)
}

fn describe_pcap_error(e: &PcapError) -> String {
    match e {
        PcapError::IncompleteBuffer => "the file ends in the middle of a record (truncated capture?)".into(),
        PcapError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "the file ends in the middle of a record (truncated capture?), or a record is impossibly large".into()
        }
        PcapError::IoError(io) => format!("read error: {io}"),
        other => format!("corrupt file: {other}"),
    }
}

impl CaptureReader {
    /// Opens `path`, recognising pcap or pcapng by its magic number.
    pub fn open(path: &Path) -> Result<CaptureReader, String> {
        let name = path.display().to_string();
        let mut file = File::open(path).map_err(|e| format!("{name}: cannot open: {e}"))?;
        let mut head = Vec::with_capacity(4);
        (&mut file).take(4).read_to_end(&mut head).map_err(|e| format!("{name}: read error: {e}"))?;
        let magic: [u8; 4] = match head.len() {
            0 => return Err(format!("{name}: the file is empty, not a capture")),
            n => head.try_into().map_err(|_| format!("{name}: too short ({n} bytes) to be a pcap or pcapng file"))?,
        };
        let file = File::open(path).map_err(|e| format!("{name}: cannot open: {e}"))?;
        let reader = BufReader::new(file);
        let header_err = |e: PcapError| format!("{name}: bad file header: {}", describe_pcap_error(&e));
        match u32::from_be_bytes(magic) {
            0x0a0d_0d0a => {
                let r = PcapNgReader::new(reader).map_err(header_err)?;
                Ok(CaptureReader {
                    inner: Inner::PcapNg(r),
                    format: Format::PcapNg,
                    link: LINKTYPE_ETHERNET,
                    count: 0,
                    name,
                })
            }
            0xa1b2_c3d4 | 0xd4c3_b2a1 | 0xa1b2_3c4d | 0x4d3c_b2a1 => {
                let r = PcapReader::new(reader).map_err(header_err)?;
                let h = r.header();
                let format = Format::Pcap { nano: h.ts_resolution == TsResolution::NanoSecond, snaplen: h.snaplen };
                let link = u32::from(h.datalink);
                Ok(CaptureReader { inner: Inner::Pcap(r), format, link, count: 0, name })
            }
            m => Err(format!(
                "{name}: not a pcap or pcapng file (starts with {:02x} {:02x} {:02x} {:02x})",
                m >> 24,
                (m >> 16) & 0xff,
                (m >> 8) & 0xff,
                m & 0xff
            )),
        }
    }

    /// The container format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The link type of a pcap file (pcapng gives one per interface, in each [`Frame`]).
    pub fn link(&self) -> u32 {
        self.link
    }

    /// The file name, for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads the next frame; `Ok(None)` at the end of the file. Errors name
    /// the file and the record number.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, String> {
        let n = self.count + 1;
        let name = &self.name;
        let err = |e: &PcapError| format!("{name}: record {n}: {}", describe_pcap_error(e));
        match &mut self.inner {
            Inner::Pcap(r) => {
                let snaplen = match self.format {
                    Format::Pcap { snaplen, .. } => snaplen,
                    Format::PcapNg => 0,
                };
                let nano = matches!(self.format, Format::Pcap { nano: true, .. });
                match r.next_raw_packet() {
                    None => Ok(None),
                    Some(Err(e)) => Err(err(&e)),
                    Some(Ok(p)) => {
                        self.count = n;
                        let frac_ns = if nano { u64::from(p.ts_frac) } else { u64::from(p.ts_frac) * 1000 };
                        let ts = Duration::from_secs(u64::from(p.ts_sec)).saturating_add(Duration::from_nanos(frac_ns));
                        Ok(Some(Frame {
                            ts,
                            orig_len: p.orig_len.max(p.incl_len),
                            data: p.data.into_owned(),
                            link: Some(self.link),
                            snaplen,
                        }))
                    }
                }
            }
            Inner::PcapNg(r) => loop {
                let big = r.section().endianness == Endianness::Big;
                let (block_type, body) = match r.next_raw_block() {
                    None => return Ok(None),
                    Some(Err(e)) => return Err(err(&e)),
                    Some(Ok(b)) => (b.type_, b.body.into_owned()),
                };
                let body: &[u8] = &body;
                let bad = |what: &str| format!("{name}: record {n}: corrupt pcapng {what} block");
                match block_type {
                    // Enhanced packet block.
                    6 => {
                        let iface = read_u32(body, 0, big).ok_or_else(|| bad("enhanced packet"))?;
                        self.count = n;
                        return timed_packet(body, iface as usize, big, r.interfaces()).map(Some).map_err(|e| {
                            e.map_or_else(|| bad("enhanced packet"), |e| format!("{name}: record {n}: {e}"))
                        });
                    }
                    // Simple packet block: interface 0, no timestamp.
                    3 => {
                        let orig = read_u32(body, 0, big).ok_or_else(|| bad("simple packet"))?;
                        let idb = r.interfaces().first();
                        let snap = idb.map(|i| i.snaplen).filter(|&s| s != 0).unwrap_or(u32::MAX);
                        let cap = orig.min(snap) as usize;
                        let data = body.get(4..).unwrap_or_default();
                        let data = data.get(..cap.min(data.len())).unwrap_or_default();
                        self.count = n;
                        return Ok(Some(Frame {
                            ts: Duration::ZERO,
                            orig_len: orig.max(u32::try_from(data.len()).unwrap_or(u32::MAX)),
                            data: data.to_vec(),
                            link: idb.map(|i| u32::from(i.linktype)),
                            snaplen: idb.map(|i| i.snaplen).unwrap_or(0),
                        }));
                    }
                    // Obsolete packet block: the same layout with a 16-bit interface id.
                    2 => {
                        let iface = read_u16(body, 0, big).ok_or_else(|| bad("packet"))?;
                        self.count = n;
                        return timed_packet(body, usize::from(iface), big, r.interfaces())
                            .map(Some)
                            .map_err(|e| e.map_or_else(|| bad("packet"), |e| format!("{name}: record {n}: {e}")));
                    }
                    // Section headers, interface descriptions (kept by the
                    // reader), statistics, name resolution, custom blocks.
                    _ => {}
                }
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Writing capture files
// ---------------------------------------------------------------------------

/// Writes a pcap or pcapng file of one link type.
pub enum CaptureWriter {
    /// Classic pcap.
    Pcap {
        /// The writer.
        w: PcapWriter<BufWriter<File>>,
        /// Nanosecond timestamps.
        nano: bool,
        /// File name, for messages.
        name: String,
    },
    /// pcapng with one interface (nanosecond timestamps).
    PcapNg {
        /// The writer.
        w: PcapNgWriter<BufWriter<File>>,
        /// File name, for messages.
        name: String,
    },
}

impl CaptureWriter {
    /// Creates a pcap file of link type `link`.
    pub fn pcap(path: &Path, link: u32, snaplen: u32, nano: bool) -> Result<CaptureWriter, String> {
        let name = path.display().to_string();
        let file = File::create(path).map_err(|e| format!("{name}: cannot create: {e}"))?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen,
            datalink: DataLink::from(link),
            ts_resolution: if nano { TsResolution::NanoSecond } else { TsResolution::MicroSecond },
            endianness: Endianness::Little,
        };
        let w = PcapWriter::with_header(BufWriter::new(file), header).map_err(|e| format!("{name}: writing: {e}"))?;
        Ok(CaptureWriter::Pcap { w, nano, name })
    }

    /// Creates a pcapng file with one interface of link type `link` and
    /// nanosecond timestamps.
    pub fn pcapng(path: &Path, link: u32, snaplen: u32) -> Result<CaptureWriter, String> {
        let name = path.display().to_string();
        let file = File::create(path).map_err(|e| format!("{name}: cannot create: {e}"))?;
        let mut w = PcapNgWriter::with_endianness(BufWriter::new(file), Endianness::Little)
            .map_err(|e| format!("{name}: writing: {e}"))?;
        let idb = InterfaceDescriptionBlock {
            linktype: DataLink::from(link),
            snaplen,
            // pcap-file writes timestamps in nanoseconds: say so (the default is µs).
            options: vec![InterfaceDescriptionOption::IfTsResol(9)],
        };
        w.write_pcapng_block(idb).map_err(|e| format!("{name}: writing: {e}"))?;
        Ok(CaptureWriter::PcapNg { w, name })
    }

    /// Appends one frame.
    pub fn write(&mut self, ts: Duration, orig_len: u32, data: &[u8]) -> Result<(), String> {
        let incl_len = u32::try_from(data.len()).map_err(|_| "frame too large to write".to_string())?;
        let orig_len = orig_len.max(incl_len);
        match self {
            CaptureWriter::Pcap { w, nano, name } => {
                let ts_sec = u32::try_from(ts.as_secs())
                    .map_err(|_| format!("{name}: timestamp {}s does not fit a pcap file", ts.as_secs()))?;
                let ts_frac = if *nano { ts.subsec_nanos() } else { ts.subsec_micros() };
                let p = RawPcapPacket { ts_sec, ts_frac, incl_len, orig_len, data: Cow::Borrowed(data) };
                w.write_raw_packet(&p).map_err(|e| format!("{name}: writing: {e}"))?;
            }
            CaptureWriter::PcapNg { w, name } => {
                let p = EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp: ts,
                    original_len: orig_len,
                    data: Cow::Borrowed(data),
                    options: vec![],
                };
                w.write_pcapng_block(p).map_err(|e| format!("{name}: writing: {e}"))?;
            }
        }
        Ok(())
    }

    /// Flushes and closes the file.
    pub fn finish(self) -> Result<(), String> {
        match self {
            CaptureWriter::Pcap { w, name, .. } => w.into_writer().flush().map_err(|e| format!("{name}: writing: {e}")),
            CaptureWriter::PcapNg { w, name } => w.into_inner().flush().map_err(|e| format!("{name}: writing: {e}")),
        }
    }
}

// ---------------------------------------------------------------------------
// Parsing frames down to UDP
// ---------------------------------------------------------------------------

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

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(addr: &str, last: u8) -> Endpoint {
        Endpoint { addr: addr.parse().unwrap(), mac: [2, 0, 0, 0, 0, last] }
    }

    #[test]
    fn build_locate_replace_round_trip() {
        for (a, b) in [("192.0.2.10:40000", "192.0.2.20:50000"), ("[2001:db8::10]:40000", "[2001:db8::20]:50000")] {
            for link in [LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_RAW] {
                let (s, d) = (ep(a, 1), ep(b, 2));
                let f = build_udp_frame(link, &s, &d, 7, true, b"hello world!").unwrap();
                let loc = locate_udp(link, &f).unwrap();
                assert_eq!(loc.payload(&f), b"hello world!");
                assert_eq!(loc.src, s.addr);
                let g = replace_udp_payload(&f, &loc, b"hi").unwrap();
                assert_eq!(g, build_udp_frame(link, &s, &d, 7, true, b"hi").unwrap());
                for cut in 0..f.len() {
                    let _ = locate_udp(link, &f[..cut]);
                }
            }
        }
    }

    #[test]
    fn checksum_of_rfc1071_example() {
        assert_eq!(internet_checksum(&[0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7]), !0xddf2);
    }
}
