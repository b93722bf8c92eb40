//! Capture files for `decrypt` and `sample`: reading pcap and pcapng, writing
//! pcap and pcapng; their frames down to UDP and back in `udp.rs`.
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
        let w = PcapWriter::with_header(BufWriter::new(file), header)
            .map_err(|e| format!("{name}: writing: {}", io_text(e)))?;
        Ok(CaptureWriter::Pcap { w, nano, name })
    }

    /// Creates a pcapng file with one interface of link type `link` and
    /// nanosecond timestamps.
    pub fn pcapng(path: &Path, link: u32, snaplen: u32) -> Result<CaptureWriter, String> {
        let name = path.display().to_string();
        let file = File::create(path).map_err(|e| format!("{name}: cannot create: {e}"))?;
        let mut w = PcapNgWriter::with_endianness(BufWriter::new(file), Endianness::Little)
            .map_err(|e| format!("{name}: writing: {}", io_text(e)))?;
        let idb = InterfaceDescriptionBlock {
            linktype: DataLink::from(link),
            snaplen,
            // pcap-file writes timestamps in nanoseconds: say so (the default is µs).
            options: vec![InterfaceDescriptionOption::IfTsResol(9)],
        };
        w.write_pcapng_block(idb).map_err(|e| format!("{name}: writing: {}", io_text(e)))?;
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
                w.write_raw_packet(&p).map_err(|e| format!("{name}: writing: {}", io_text(e)))?;
            }
            CaptureWriter::PcapNg { w, name } => {
                let p = EnhancedPacketBlock {
                    interface_id: 0,
                    timestamp: ts,
                    original_len: orig_len,
                    data: Cow::Borrowed(data),
                    options: vec![],
                };
                w.write_pcapng_block(p).map_err(|e| format!("{name}: writing: {}", io_text(e)))?;
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

/// A pcap-file error as text: an I/O error as the system says it
/// (pcap-file's own text for one is "Error reading bytes", also when
/// writing).
fn io_text(e: PcapError) -> String {
    match e {
        PcapError::IoError(io) => io.to_string(),
        other => other.to_string(),
    }
}

mod udp;
pub use udp::*;

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
