//! `srtpgate sample`: writes a deterministic capture of an SRTP call, to try
//! `srtpgate decrypt` on (and to test it).
//!
//! The call (every value fixed, so two runs give identical files):
//!
//! * direction A: 192.0.2.10:40000 → 192.0.2.20:50000 (`--ipv6`:
//!   [2001:db8::10]:40000 → [2001:db8::20]:50000), SSRC 0x2f1d4c3b,
//!   first sequence number 65500, a 440 Hz tone;
//! * direction B: the reverse, SSRC 0x7c6e5a48, first sequence number 65480,
//!   a 660 Hz tone;
//! * G.711 µ-law (payload type 0), 160-byte payloads every 20 ms from
//!   2024-01-01T00:00:00Z (B 10 ms after A), so both sequence numbers wrap
//!   and the rollover counter (ROC) becomes 1 within the first 2 seconds;
//! * per direction, an RTCP compound packet (sender report + SDES CNAME) on
//!   port + 1, at 1 s and then every 5 s;
//! * master keys (key ∥ salt, the first `key + salt length` bytes of):
//!   A: 01 02 03 … 2e, B: a0 a1 a2 … cd. Both are printed on stdout as SDP
//!   `a=crypto` lines, ready for `srtpgate decrypt --key`.

use crate::pcap::{
    build_udp_frame, CaptureWriter, Endpoint, LINKTYPE_ETHERNET, LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2, LINKTYPE_RAW,
};
use clap::{Args, ValueEnum};
use srtp::{Context, CpuEngine, MasterKey, Policy, Suite};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Container format of the written capture.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum FileFormat {
    /// Classic libpcap (microsecond timestamps).
    Pcap,
    /// pcapng (nanosecond timestamps).
    Pcapng,
}

/// Link-layer framing of the written capture.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum LinkKind {
    /// Ethernet II.
    Ethernet,
    /// Linux cooked capture (SLL, as `tcpdump -i any` wrote it).
    Sll,
    /// Linux cooked capture v2 (SLL2).
    Sll2,
    /// Raw IP, no link-layer header.
    Raw,
}

impl LinkKind {
    fn linktype(self) -> u32 {
        match self {
            LinkKind::Ethernet => LINKTYPE_ETHERNET,
            LinkKind::Sll => LINKTYPE_LINUX_SLL,
            LinkKind::Sll2 => LINKTYPE_LINUX_SLL2,
            LinkKind::Raw => LINKTYPE_RAW,
        }
    }
}

/// Arguments of `srtpgate sample`.
#[derive(Args, Debug)]
pub struct SampleArgs {
    /// The SRTP capture to write.
    out: PathBuf,
    /// Also write the same call unencrypted (RTP/RTCP) to this file.
    #[arg(long, value_name = "PLAIN_OUT")]
    plain: Option<PathBuf>,
    /// File format.
    #[arg(long, value_enum, default_value_t = FileFormat::Pcap)]
    format: FileFormat,
    /// Use IPv6 addresses (2001:db8::10 and 2001:db8::20).
    #[arg(long)]
    ipv6: bool,
    /// Link-layer framing.
    #[arg(long, value_enum, default_value_t = LinkKind::Ethernet)]
    link: LinkKind,
    /// Crypto suite, by its SDES name.
    #[arg(long, default_value = "AES_CM_128_HMAC_SHA1_80", value_parser = parse_suite)]
    suite: Suite,
    /// Length of the call in seconds (1..=3600).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=3600))]
    seconds: u32,
}

/// Parses an SDES suite name, listing the valid ones on error.
pub fn parse_suite(s: &str) -> Result<Suite, String> {
    s.parse::<Suite>().map_err(|_| {
        let names: Vec<&str> = Suite::ALL.iter().map(|s| s.name()).collect();
        format!("unknown crypto suite {s:?}; known suites: {}", names.join(", "))
    })
}

/// Start of the call: 2024-01-01T00:00:00Z.
const START_UNIX: u64 = 1_704_067_200;
/// Seconds from 1900 (NTP era 0) to 1970.
const NTP_UNIX_OFFSET: u64 = 2_208_988_800;
/// 8 kHz, 20 ms.
const SAMPLES_PER_PACKET: usize = 160;
const PACKET_INTERVAL_NS: u64 = 20_000_000;

/// One direction of the sample call.
struct Direction {
    name: &'static str,
    src: Endpoint,
    dst: Endpoint,
    ssrc: u32,
    first_seq: u16,
    first_ts: u32,
    tone_hz: f64,
    /// Offset of the first RTP packet from the start of the call.
    offset_ns: u64,
    /// Key ∥ salt (the first `master_key_len + master_salt_len` bytes are used).
    key_material: [u8; 46],
    cname: String,
    first_ip_id: u16,
}

/// Master key ∥ salt of direction A: 0x01, 0x02, … (46 bytes; a suite uses the first key+salt bytes).
pub const KEY_A: [u8; 46] = seq_bytes(0x01);
/// Master key ∥ salt of direction B: 0xa0, 0xa1, … (46 bytes).
pub const KEY_B: [u8; 46] = seq_bytes(0xa0);

const fn seq_bytes(first: u8) -> [u8; 46] {
    let mut out = [0u8; 46];
    let mut i = 0;
    while i < 46 {
        out[i] = first.wrapping_add(i as u8);
        i += 1;
    }
    out
}

fn directions(ipv6: bool) -> [Direction; 2] {
    let (a_ip, b_ip): (IpAddr, IpAddr) = if ipv6 {
        (
            IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x10)),
            IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x20)),
        )
    } else {
        (IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 10)), IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 20)))
    };
    let a = Endpoint { addr: SocketAddr::new(a_ip, 40000), mac: [0x02, 0, 0, 0, 0, 0x0a] };
    let b = Endpoint { addr: SocketAddr::new(b_ip, 50000), mac: [0x02, 0, 0, 0, 0, 0x14] };
    [
        Direction {
            name: "A",
            src: a,
            dst: b,
            ssrc: 0x2f1d_4c3b,
            first_seq: 65500,
            first_ts: 0x0001_0000,
            tone_hz: 440.0,
            offset_ns: 0,
            key_material: KEY_A,
            cname: format!("alice@{a_ip}"),
            first_ip_id: 0x1000,
        },
        Direction {
            name: "B",
            src: b,
            dst: a,
            ssrc: 0x7c6e_5a48,
            first_seq: 65480,
            first_ts: 0x89ab_cdef,
            tone_hz: 660.0,
            offset_ns: 10_000_000,
            key_material: KEY_B,
            cname: format!("bob@{b_ip}"),
            first_ip_id: 0x2000,
        },
    ]
}

/// G.711 µ-law encoding of one 16-bit linear sample (the codec crate's).
pub fn linear_to_ulaw(sample: i16) -> u8 {
    srtpgate_codec::g711::ulaw_encode(sample)
}

/// 160 µ-law samples of a `hz` tone at 8 kHz, starting at sample `first`
/// (so consecutive packets continue the wave). Amplitude 8000 (about −12 dBFS).
fn tone_payload(hz: f64, first: u64) -> Vec<u8> {
    (0..SAMPLES_PER_PACKET as u64)
        .map(|k| {
            let n = (first + k) as f64;
            let v = (8000.0 * (2.0 * std::f64::consts::PI * hz * n / 8000.0).sin()).round();
            linear_to_ulaw(v as i16)
        })
        .collect()
}

fn rtp_packet(marker: bool, seq: u16, ts: u32, ssrc: u32, payload: &[u8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(12 + payload.len());
    p.push(0x80);
    p.push(if marker { 0x80 } else { 0 }); // PT 0 = PCMU
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&ts.to_be_bytes());
    p.extend_from_slice(&ssrc.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// A compound RTCP packet: sender report (no report blocks) + SDES CNAME.
fn rtcp_sr(ssrc: u32, at: Duration, rtp_ts: u32, packets: u32, octets: u32, cname: &str) -> Vec<u8> {
    let mut p = Vec::with_capacity(64);
    p.extend_from_slice(&[0x80, 200, 0, 6]);
    p.extend_from_slice(&ssrc.to_be_bytes());
    let ntp_sec = (at.as_secs() + NTP_UNIX_OFFSET) as u32;
    let ntp_frac = ((u64::from(at.subsec_nanos()) << 32) / 1_000_000_000) as u32;
    p.extend_from_slice(&ntp_sec.to_be_bytes());
    p.extend_from_slice(&ntp_frac.to_be_bytes());
    p.extend_from_slice(&rtp_ts.to_be_bytes());
    p.extend_from_slice(&packets.to_be_bytes());
    p.extend_from_slice(&octets.to_be_bytes());
    // SDES: one chunk, CNAME item, END, padded to a 32-bit boundary.
    let name = cname.as_bytes();
    let name = &name[..name.len().min(255)];
    let mut chunk = Vec::with_capacity(8 + name.len());
    chunk.extend_from_slice(&ssrc.to_be_bytes());
    chunk.push(1);
    chunk.push(name.len() as u8);
    chunk.extend_from_slice(name);
    chunk.push(0);
    while chunk.len() % 4 != 0 {
        chunk.push(0);
    }
    let words = (chunk.len() / 4) as u16; // header word + chunk words − 1
    p.extend_from_slice(&[0x81, 202]);
    p.extend_from_slice(&words.to_be_bytes());
    p.extend_from_slice(&chunk);
    p
}

/// Standard base64 with padding (RFC 4648), for the printed inline keys.
pub fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 0x3f) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The SDES inline key of one direction for `suite`.
fn inline_key(suite: Suite, material: &[u8; 46]) -> String {
    let len = suite.master_key_len() + suite.master_salt_len();
    format!("inline:{}", base64(&material[..len.min(material.len())]))
}

/// One packet of the call, before framing.
struct Event {
    at_ns: u64,
    dir: usize,
    rtcp: bool,
}

pub fn run(args: SampleArgs) -> Result<(), String> {
    let suite = args.suite;
    let dirs = directions(args.ipv6);
    let link = args.link.linktype();

    // One sending context per direction (each has its own master key).
    let mut ctxs = Vec::with_capacity(2);
    for d in &dirs {
        let key = MasterKey::from_sdes(suite, &inline_key(suite, &d.key_material)).map_err(|e| e.to_string())?;
        ctxs.push(Context::new(Policy::new(suite, key), CpuEngine::new()).map_err(|e| e.to_string())?);
    }

    // The schedule: RTP every 20 ms, RTCP at 1 s and every 5 s after, per direction.
    let total_ns = u64::from(args.seconds) * 1_000_000_000;
    let mut events = Vec::new();
    for (i, d) in dirs.iter().enumerate() {
        let mut t = d.offset_ns;
        while t < total_ns {
            events.push(Event { at_ns: t, dir: i, rtcp: false });
            t += PACKET_INTERVAL_NS;
        }
        let mut t = 1_000_000_000 + 5_000_000 + d.offset_ns;
        while t < total_ns {
            events.push(Event { at_ns: t, dir: i, rtcp: true });
            t += 5_000_000_000;
        }
    }
    events.sort_by_key(|e| (e.at_ns, e.dir, e.rtcp));

    let open = |path: &Path| match args.format {
        FileFormat::Pcap => CaptureWriter::pcap(path, link, 65535, false),
        FileFormat::Pcapng => CaptureWriter::pcapng(path, link, 65535),
    };
    let mut out = open(&args.out)?;
    let mut plain = match &args.plain {
        Some(p) => Some(open(p)?),
        None => None,
    };

    let mut sent = [0u64; 2];
    let mut ip_id = [dirs[0].first_ip_id, dirs[1].first_ip_id];
    let mut buf = vec![0u8; 2048];
    for e in &events {
        let d = &dirs[e.dir];
        let at = Duration::from_secs(START_UNIX) + Duration::from_nanos(e.at_ns);
        let samples_elapsed = (e.at_ns - d.offset_ns) * 8000 / 1_000_000_000;
        let (mut src, mut dst) = (d.src, d.dst);
        let pkt = if e.rtcp {
            src.addr.set_port(src.addr.port() + 1);
            dst.addr.set_port(dst.addr.port() + 1);
            let rtp_ts = d.first_ts.wrapping_add(samples_elapsed as u32);
            let n = sent[e.dir];
            rtcp_sr(d.ssrc, at, rtp_ts, n as u32, (n * SAMPLES_PER_PACKET as u64) as u32, &d.cname)
        } else {
            let n = sent[e.dir];
            sent[e.dir] += 1;
            let payload = tone_payload(d.tone_hz, n * SAMPLES_PER_PACKET as u64);
            let seq = d.first_seq.wrapping_add(n as u16);
            let ts = d.first_ts.wrapping_add((n * SAMPLES_PER_PACKET as u64) as u32);
            rtp_packet(n == 0, seq, ts, d.ssrc, &payload)
        };
        let ctx = &mut ctxs[e.dir];
        let n = if e.rtcp { ctx.protect_rtcp(&pkt, &mut buf) } else { ctx.protect_rtp(&pkt, &mut buf) }
            .map_err(|err| format!("protecting a packet of direction {}: {err}", d.name))?;
        let id = ip_id[e.dir];
        ip_id[e.dir] = id.wrapping_add(1);
        // The capture is taken on A's host: A's packets are outgoing.
        let outgoing = e.dir == 0;
        let frame = build_udp_frame(link, &src, &dst, id, outgoing, &buf[..n])?;
        out.write(at, frame.len() as u32, &frame)?;
        if let Some(w) = plain.as_mut() {
            let frame = build_udp_frame(link, &src, &dst, id, outgoing, &pkt)?;
            w.write(at, frame.len() as u32, &frame)?;
        }
    }
    out.finish()?;
    if let Some(w) = plain {
        w.finish()?;
    }

    // The keys are the command's output: alone on stdout, so that
    // `srtpgate sample x.pcap > keys.txt` (or `| tee`) holds exactly the two
    // a=crypto lines. The description is for a person and goes to stderr
    // (unbuffered), all of it before the keys: on a terminal, where both
    // streams meet, the text then comes out in this order, and the keys end
    // the output, next to the prompt, where they are easy to copy.
    eprintln!("wrote {}: {} packets, {} s, {suite}", args.out.display(), events.len(), args.seconds);
    if let Some(p) = &args.plain {
        eprintln!("wrote {} (the same call unencrypted)", p.display());
    }
    for (d, which) in dirs.iter().zip(["first", "second"]) {
        eprintln!(
            "  {}: {} -> {}, ssrc 0x{:08x}, key on the {which} a=crypto line on stdout",
            d.name, d.src.addr, d.dst.addr, d.ssrc
        );
    }
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    for d in &dirs {
        writeln!(stdout, "a=crypto:1 {} {}", suite.name(), inline_key(suite, &d.key_material))
            .map_err(|e| format!("stdout: {e}"))?;
    }
    stdout.flush().map_err(|e| format!("stdout: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulaw_known_values() {
        assert_eq!(linear_to_ulaw(0), 0xff);
        assert_eq!(linear_to_ulaw(-1), 0x7f);
        assert_eq!(linear_to_ulaw(32767), 0x80);
        assert_eq!(linear_to_ulaw(-32768), 0x00);
    }

    #[test]
    fn base64_matches_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }

    #[test]
    fn sdes_chunk_is_word_aligned() {
        let p = rtcp_sr(1, Duration::ZERO, 0, 0, 0, "bob@192.0.2.20");
        assert!(srtp::header::RtcpHeader::parse(&p).is_ok());
    }
}
