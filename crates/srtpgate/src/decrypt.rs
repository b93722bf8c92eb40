//! `srtpgate decrypt`: turns the SRTP/SRTCP of a recorded call into RTP/RTCP.
//!
//! The capture is read twice. The first pass finds the flows — UDP payloads
//! of RTP version 2, told apart by (source, destination, SSRC, RTP or RTCP),
//! with RTCP recognised by the RFC 5761 rule (second byte 192..=223) — and
//! keeps the first few packets of each. For every flow the (key, suite) that
//! authenticates those packets is picked: candidates are every `--key` × every
//! suite whose key+salt length fits it (or only the suite a key or `--suite`
//! names), and for SRTP a few rollover counters, in case the capture starts
//! late in the call. The second pass decrypts each flow with its own
//! [`srtp::Context`] (so the ROC and the replay window follow that flow alone)
//! and writes every frame to a pcap file of the same link type and
//! timestamps: decrypted packets with their UDP payload replaced and the IP
//! and UDP lengths and checksums fixed, everything else unchanged.
//!
//! A summary per flow goes to stderr. Only unreadable input or bad arguments
//! are errors; a capture no key fits is still copied, with a note.

use crate::pcap::{self, link_name, locate_udp, replace_udp_payload, CaptureReader, Format, Skip};
use crate::sample::parse_suite;
use clap::Args;
use srtp::{Context, CpuEngine, MasterKey, Policy, Suite};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Arguments of `srtpgate decrypt`.
#[derive(Args, Debug)]
pub struct DecryptArgs {
    /// SDES key of one direction (repeat for the other): `inline:BASE64[|LIFETIME][|MKI:LEN]`,
    /// plain `BASE64`, `SUITE inline:...`, or a whole SDP line `a=crypto:1 SUITE inline:...`.
    #[arg(long = "key", value_name = "KEY", required = true)]
    keys: Vec<String>,
    /// Try only this suite for keys that do not name one (SDES name, e.g. AEAD_AES_128_GCM).
    #[arg(long, value_parser = parse_suite)]
    suite: Option<Suite>,
    /// Decrypt only the flows of this SSRC (decimal or 0x hex).
    #[arg(long, value_parser = parse_ssrc)]
    ssrc: Option<u32>,
    /// Capture to read (pcap or pcapng).
    input: PathBuf,
    /// Capture to write (pcap).
    output: PathBuf,
}

/// Parses an SSRC given in decimal or as `0x` hex.
fn parse_ssrc(s: &str) -> Result<u32, String> {
    let t = s.trim();
    let parsed = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => t.parse::<u32>(),
    };
    parsed.map_err(|_| format!("{s:?} is not an SSRC (a 32-bit number, decimal or 0x hex)"))
}

/// Packets of a flow kept from the first pass to pick its key.
const SAMPLES: usize = 16;
/// Rollover counters tried for an SRTP flow whose first packets fail with ROC 0.
const ROC_GUESSES: u32 = 16;
/// Streams without a key listed one by one in the summary.
const MAX_UNKEYED_SHOWN: usize = 20;
/// Replay window: wide, as a capture may reorder or duplicate packets.
const REPLAY_WINDOW: usize = 1024;

/// One (key, suite) pair to try.
struct Candidate {
    /// 1-based number of the `--key` it comes from.
    key_no: usize,
    suite: Suite,
    policy: Policy,
}

/// Splits off a case-insensitive prefix.
fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix).then(|| s.get(prefix.len()..)).flatten()
}

/// Session parameters of an `a=crypto` line (RFC 4568 §6.3) that matter here.
#[derive(Default)]
struct SessionParams {
    kdr: u64,
    encrypt_rtp: bool,
    encrypt_rtcp: bool,
}

/// Parses one `--key` into its candidates.
fn parse_key(text: &str, key_no: usize, only: Option<Suite>) -> Result<Vec<Candidate>, String> {
    let label = format!("--key #{key_no}");
    let mut rest = text.trim();
    let mut sdp = false;
    for prefix in ["a=crypto:", "crypto:"] {
        if let Some(r) = strip_prefix_ci(rest, prefix) {
            rest = r;
            sdp = true;
            break;
        }
    }
    let mut tokens = rest.split_whitespace().peekable();
    if sdp {
        match tokens.next() {
            Some(tag) if !tag.is_empty() && tag.bytes().all(|b| b.is_ascii_digit()) => {}
            _ => {
                return Err(format!("{label}: an a=crypto line starts with a numeric tag: a=crypto:1 SUITE inline:..."))
            }
        }
    }
    let first = tokens.next().ok_or_else(|| format!("{label}: empty key"))?;
    let (named, params) = if sdp || tokens.peek().is_some() {
        let suite = parse_suite(first).map_err(|e| format!("{label}: {e}"))?;
        let params = tokens.next().ok_or_else(|| format!("{label}: no key after the suite name {first}"))?;
        (Some(suite), params)
    } else {
        (None, first)
    };
    let mut session = SessionParams { kdr: 0, encrypt_rtp: true, encrypt_rtcp: true };
    for p in tokens {
        if let Some(n) = strip_prefix_ci(p, "KDR=") {
            let n: u32 = n.parse().ok().filter(|n| *n <= 24).ok_or_else(|| format!("{label}: bad KDR {n:?}"))?;
            session.kdr = 1u64 << n;
        } else if p.eq_ignore_ascii_case("UNENCRYPTED_SRTP") {
            session.encrypt_rtp = false;
        } else if p.eq_ignore_ascii_case("UNENCRYPTED_SRTCP") {
            session.encrypt_rtcp = false;
        } else if p.eq_ignore_ascii_case("UNAUTHENTICATED_SRTP") {
            return Err(format!("{label}: UNAUTHENTICATED_SRTP is not supported"));
        }
        // Other session parameters (WSH, FEC_ORDER, FEC_KEY, extensions) do not matter here.
    }
    if !params.to_ascii_lowercase().starts_with("inline:") && params.contains(':') {
        return Err(format!("{label}: only inline keys are supported, got {params:?}"));
    }

    let suites: Vec<Suite> = match (named, only) {
        (Some(n), Some(o)) if n != o => {
            return Err(format!("{label} names suite {n}, but --suite is {o}"));
        }
        (Some(n), _) => vec![n],
        (None, Some(o)) => vec![o],
        (None, None) => Suite::ALL.to_vec(),
    };
    let explicit = suites.len() == 1;
    let mut out = Vec::new();
    let mut first_error = None;
    for suite in suites {
        match policy_for(suite, params, &session) {
            Ok(policy) => out.push(Candidate { key_no, suite, policy }),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    if out.is_empty() {
        let why = first_error.unwrap_or_default();
        return Err(if explicit || why.contains("base64") {
            format!("{label}: {why}")
        } else {
            format!(
                "{label} fits no crypto suite ({why}); key ∥ salt is 30 bytes for AES_CM_128/NULL/F8 suites, \
                 38 for AES_192, 46 for AES_256, 28 for AEAD_AES_128_GCM, 44 for AEAD_AES_256_GCM"
            )
        });
    }
    Ok(out)
}

/// The policy of one suite for `;`-separated inline keys. Key lifetimes are
/// dropped: a recording is decrypted whatever the sender should have done.
fn policy_for(suite: Suite, params: &str, session: &SessionParams) -> Result<Policy, String> {
    let mut keys = Vec::new();
    for part in params.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let k = MasterKey::from_sdes(suite, part).map_err(|e| e.to_string())?;
        let k = MasterKey::new(suite, k.key(), k.salt()).map_err(|e| e.to_string())?.with_mki(k.mki());
        keys.push(k);
    }
    let first = keys.first().cloned().ok_or("no key")?;
    let mut policy = Policy::new(suite, first);
    policy.keys = keys;
    policy.kdr = session.kdr;
    policy.encrypt_rtp = session.encrypt_rtp;
    policy.encrypt_rtcp = session.encrypt_rtcp;
    policy.replay_window = REPLAY_WINDOW;
    policy.max_streams = 4;
    // Checks what the policy cannot express alone (MKIs of several keys, …).
    Context::new(policy.clone(), CpuEngine::new()).map_err(|e| e.to_string())?;
    Ok(policy)
}

/// What identifies a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FlowKey {
    src: SocketAddr,
    dst: SocketAddr,
    ssrc: u32,
    rtcp: bool,
}

/// The key picked for a flow.
#[derive(Clone, Copy, Debug)]
struct Pick {
    cand: usize,
    roc: u32,
}

/// A flow and its counters.
struct Flow {
    key: FlowKey,
    samples: Vec<Vec<u8>>,
    pick: Option<Pick>,
    ctx: Option<Context<CpuEngine>>,
    packets: u64,
    decrypted: u64,
    auth_failures: u64,
    replays: u64,
    errors: u64,
    first_error: Option<String>,
}

/// If `payload` looks like RTP or RTCP (version 2), its SSRC and whether it is RTCP.
fn classify(payload: &[u8]) -> Option<(u32, bool)> {
    let (&b0, &b1) = (payload.first()?, payload.get(1)?);
    if b0 >> 6 != 2 || payload.len() < 12 {
        return None;
    }
    let rtcp = (192..=223).contains(&b1);
    let at = if rtcp { 4 } else { 8 };
    let ssrc: [u8; 4] = payload.get(at..at + 4)?.try_into().ok()?;
    Some((u32::from_be_bytes(ssrc), rtcp))
}

fn unprotect(ctx: &mut Context<CpuEngine>, rtcp: bool, pkt: &[u8], out: &mut [u8]) -> Result<usize, srtp::Error> {
    if rtcp {
        ctx.unprotect_rtcp(pkt, out)
    } else {
        ctx.unprotect_rtp(pkt, out)
    }
}

fn new_ctx(policy: &Policy) -> Option<Context<CpuEngine>> {
    Context::new(policy.clone(), CpuEngine::new()).ok()
}

/// Picks the (key, suite, ROC) that authenticates a flow's first packets.
/// `order` lists the candidates to try, best first, with their numbers.
fn pick_key(flow: &Flow, order: &[(usize, &Candidate)], buf: &mut [u8]) -> Option<Pick> {
    let mut ctxs: Vec<Option<Context<CpuEngine>>> = order.iter().map(|_| None).collect();
    for (j, sample) in flow.samples.iter().enumerate() {
        // Other rollover counters only on the first two packets: if the ROC
        // is not 0, a correct one authenticates them (bar damage), and
        // non-SRTP flows that look like RTP should not cost much.
        let rocs = if flow.key.rtcp || j >= 2 { 1 } else { ROC_GUESSES };
        for roc in 0..rocs {
            for (slot, &(c, cand)) in ctxs.iter_mut().zip(order) {
                if slot.is_none() {
                    *slot = new_ctx(&cand.policy);
                }
                let Some(ctx) = slot.as_mut() else {
                    continue;
                };
                if !flow.key.rtcp {
                    ctx.set_roc(flow.key.ssrc, roc);
                }
                if unprotect(ctx, flow.key.rtcp, sample, buf).is_err() {
                    continue; // a failure leaves the context as it was
                }
                // A 32-bit SRTP tag matches by chance once in 2^32 tries:
                // ask one of the next packets to agree.
                let rest = flow.samples.get(j + 1..).unwrap_or_default();
                let short_tag = !flow.key.rtcp && cand.suite.srtp_tag_len() < 10;
                if !short_tag || rest.is_empty() || rest.iter().take(3).any(|p| unprotect(ctx, false, p, buf).is_ok()) {
                    return Some(Pick { cand: c, roc });
                }
                *slot = None; // its state now holds a false start
            }
        }
    }
    None
}

/// Counts of frames that carry no SRTP we decrypt.
#[derive(Default)]
struct Other {
    frames: u64,
    not_rtp: u64,
    not_udp: u64,
    not_ip: u64,
    fragments: u64,
    truncated: u64,
    malformed: u64,
    unsupported_link: u64,
    unselected: u64,
}

impl Other {
    fn count(&mut self, skip: Skip) {
        match skip {
            Skip::UnsupportedLink => self.unsupported_link += 1,
            Skip::NotIp => self.not_ip += 1,
            Skip::NotUdp => self.not_udp += 1,
            Skip::Fragment => self.fragments += 1,
            Skip::Truncated => self.truncated += 1,
            Skip::Malformed => self.malformed += 1,
        }
    }
}

/// Link types that mean the same framing, so a pcapng mixing them can still
/// be written as one pcap.
fn same_link(a: u32, b: u32) -> bool {
    let norm = |l: u32| match l {
        pcap::LINKTYPE_RAW_ALT12 | pcap::LINKTYPE_RAW_ALT14 => pcap::LINKTYPE_RAW,
        l => l,
    };
    norm(a) == norm(b)
}

pub fn run(args: DecryptArgs) -> Result<(), String> {
    let mut cands = Vec::new();
    for (i, k) in args.keys.iter().enumerate() {
        cands.extend(parse_key(k, i + 1, args.suite)?);
    }
    let same = match (std::fs::canonicalize(&args.input), std::fs::canonicalize(&args.output)) {
        (Ok(a), Ok(b)) => a == b,
        _ => args.input == args.output,
    };
    if same {
        return Err(format!("IN and OUT are the same file ({})", args.input.display()));
    }
    let mut buf = vec![0u8; srtp::MAX_PACKET_LEN + srtp::MAX_RTCP_TRAILER_LEN];
    let mut scan = find_flows(&args)?;
    pick_keys(&mut scan.flows, &cands, &mut buf);
    let (written, other) = write_decrypted(&args, &mut scan, &mut buf)?;
    report(&scan.flows, &cands, &other, args.ssrc);
    eprintln!("wrote {} ({written} packets, {})", args.output.display(), link_name(scan.link));
    Ok(())
}

/// What the first pass over a capture finds.
struct Scan {
    /// Its format.
    format: Format,
    /// The flows, their first packets.
    flows: Vec<Flow>,
    /// Flows by key.
    index: HashMap<FlowKey, usize>,
    /// The link type the output is written with.
    link: u32,
    /// The largest snapshot length seen.
    max_snaplen: u32,
}

/// Pass 1: the flows, their first packets, the link type.
fn find_flows(args: &DecryptArgs) -> Result<Scan, String> {
    let mut reader = CaptureReader::open(&args.input)?;
    let format = reader.format();
    let mut flows: Vec<Flow> = Vec::new();
    let mut index: HashMap<FlowKey, usize> = HashMap::new();
    let mut out_link: Option<u32> = None;
    let mut max_snaplen = 0u32;
    while let Some(frame) = reader.next_frame()? {
        max_snaplen = max_snaplen.max(frame.snaplen).max(u32::try_from(frame.data.len()).unwrap_or(u32::MAX));
        let Some(link) = frame.link else { continue };
        match out_link {
            None => out_link = Some(link),
            Some(o) if !same_link(o, link) => {
                return Err(format!(
                    "{}: packets of different link types ({} and {}) cannot go into one pcap; \
                     split the capture by interface first (e.g. with tshark -Y frame.interface_id==0)",
                    reader.name(),
                    link_name(o),
                    link_name(link)
                ));
            }
            Some(_) => {}
        }
        let Ok(loc) = locate_udp(link, &frame.data) else {
            continue;
        };
        let payload = loc.payload(&frame.data);
        let Some((ssrc, rtcp)) = classify(payload) else {
            continue;
        };
        if args.ssrc.is_some_and(|s| s != ssrc) {
            continue;
        }
        let key = FlowKey { src: loc.src, dst: loc.dst, ssrc, rtcp };
        let n = *index.entry(key).or_insert_with(|| {
            flows.push(Flow {
                key,
                samples: Vec::new(),
                pick: None,
                ctx: None,
                packets: 0,
                decrypted: 0,
                auth_failures: 0,
                replays: 0,
                errors: 0,
                first_error: None,
            });
            flows.len() - 1
        });
        if let Some(f) = flows.get_mut(n) {
            if f.samples.len() < SAMPLES {
                f.samples.push(payload.to_vec());
            }
        }
    }
    let link = match (out_link, format) {
        (Some(l), _) => l,
        (None, Format::Pcap { .. }) => reader.link(),
        (None, Format::PcapNg) => pcap::LINKTYPE_ETHERNET,
    };
    Ok(Scan { format, flows, index, link, max_snaplen })
}

/// Keys: SRTP flows first, then SRTCP flows, which prefer the (key, suite)
/// of an SRTP flow of their SSRC (a _32 suite's SRTCP also passes as _80).
fn pick_keys(flows: &mut [Flow], cands: &[Candidate], buf: &mut [u8]) {
    let mut rtp_picks: Vec<(u32, usize, Suite)> = Vec::new();
    for rtcp in [false, true] {
        for f in flows.iter_mut().filter(|f| f.key.rtcp == rtcp) {
            let mut order: Vec<(usize, &Candidate)> = cands.iter().enumerate().collect();
            if rtcp {
                let ssrc = f.key.ssrc;
                order.sort_by_key(|(_, c)| {
                    !rtp_picks.iter().any(|&(s, k, suite)| s == ssrc && k == c.key_no && suite == c.suite)
                });
            }
            let pick = pick_key(f, &order, buf);
            f.pick = pick;
            f.samples = Vec::new();
            let Some((p, cand)) = pick.and_then(|p| cands.get(p.cand).map(|c| (p, c))) else {
                continue;
            };
            f.ctx = new_ctx(&cand.policy);
            if !rtcp {
                rtp_picks.push((f.key.ssrc, cand.key_no, cand.suite));
                if let (Some(ctx), true) = (f.ctx.as_mut(), p.roc != 0) {
                    ctx.set_roc(f.key.ssrc, p.roc);
                }
            }
        }
    }
}

/// Pass 2: every frame written, the flows' packets decrypted. Returns the
/// frames written and what was not decrypted.
fn write_decrypted(args: &DecryptArgs, scan: &mut Scan, buf: &mut [u8]) -> Result<(u64, Other), String> {
    let Scan { format, flows, index, link, max_snaplen } = scan;
    let (link, max_snaplen) = (*link, *max_snaplen);
    let mut reader = CaptureReader::open(&args.input)?;
    let mut writer = match *format {
        Format::Pcap { nano, snaplen } => pcap::CaptureWriter::pcap(&args.output, link, snaplen, nano)?,
        Format::PcapNg => {
            let snap = if max_snaplen == 0 { 262_144 } else { max_snaplen.max(65_535) };
            pcap::CaptureWriter::pcap(&args.output, link, snap, true)?
        }
    };
    let mut other = Other::default();
    let mut written = 0u64;
    while let Some(frame) = reader.next_frame()? {
        other.frames += 1;
        let decrypted = match frame.link {
            None => {
                other.malformed += 1;
                None
            }
            Some(l) => decrypt_frame(l, &frame.data, flows, index, &mut other, buf),
        };
        match decrypted {
            Some(data) => {
                let shrink = frame.data.len().saturating_sub(data.len());
                let orig = (frame.orig_len as usize).saturating_sub(shrink);
                writer.write(frame.ts, u32::try_from(orig).unwrap_or(u32::MAX), &data)?;
            }
            None => writer.write(frame.ts, frame.orig_len, &frame.data)?,
        }
        written += 1;
    }
    writer.finish()?;
    Ok((written, other))
}

/// Decrypts one frame if it belongs to a flow with a key; `None` to copy it.
fn decrypt_frame(
    link: u32,
    data: &[u8],
    flows: &mut [Flow],
    index: &HashMap<FlowKey, usize>,
    other: &mut Other,
    buf: &mut [u8],
) -> Option<Vec<u8>> {
    let loc = match locate_udp(link, data) {
        Ok(loc) => loc,
        Err(skip) => {
            other.count(skip);
            return None;
        }
    };
    let payload = loc.payload(data);
    let Some((ssrc, rtcp)) = classify(payload) else {
        other.not_rtp += 1;
        return None;
    };
    let key = FlowKey { src: loc.src, dst: loc.dst, ssrc, rtcp };
    let Some(flow) = index.get(&key).and_then(|&i| flows.get_mut(i)) else {
        other.unselected += 1;
        return None;
    };
    flow.packets += 1;
    let ctx = flow.ctx.as_mut()?;
    match unprotect(ctx, rtcp, payload, buf) {
        Ok(n) => {
            let plain = buf.get(..n)?;
            match replace_udp_payload(data, &loc, plain) {
                Ok(frame) => {
                    flow.decrypted += 1;
                    Some(frame)
                }
                Err(_) => {
                    flow.errors += 1;
                    None
                }
            }
        }
        Err(srtp::Error::AuthFailed) => {
            flow.auth_failures += 1;
            None
        }
        Err(srtp::Error::Replayed) => {
            flow.replays += 1;
            None
        }
        Err(e) => {
            flow.errors += 1;
            flow.first_error.get_or_insert_with(|| e.to_string());
            None
        }
    }
}

/// Prints the summary to stderr.
fn report(flows: &[Flow], cands: &[Candidate], other: &Other, ssrc: Option<u32>) {
    let (mut packets, mut decrypted, mut auth, mut replays, mut errors, mut keyed) = (0, 0, 0, 0, 0, 0);
    let mut unkeyed_shown = 0;
    for f in flows {
        packets += f.packets;
        decrypted += f.decrypted;
        auth += f.auth_failures;
        replays += f.replays;
        errors += f.errors;
        keyed += usize::from(f.pick.is_some());
        if f.pick.is_none() {
            // Much UDP traffic (DNS, …) can look like RTP: list only the first few.
            unkeyed_shown += 1;
            if unkeyed_shown > MAX_UNKEYED_SHOWN {
                continue;
            }
        }
        let kind = if f.key.rtcp { "rtcp" } else { "rtp" };
        let pick = f.pick.and_then(|p| cands.get(p.cand).map(|c| (p, c)));
        let suite = pick.map_or("no key matched".to_string(), |(_, c)| c.suite.name().to_string());
        let mut line = format!(
            "ssrc 0x{:08x}, {} -> {}, {kind}, {suite}, packets {}, decrypted {}, auth failures {}, replays {}",
            f.key.ssrc, f.key.src, f.key.dst, f.packets, f.decrypted, f.auth_failures, f.replays
        );
        if let Some((p, c)) = pick {
            line.push_str(&format!(", key #{}", c.key_no));
            if p.roc != 0 {
                line.push_str(&format!(", initial ROC {}", p.roc));
            }
        }
        if f.errors != 0 {
            line.push_str(&format!(", other errors {}", f.errors));
            if let Some(e) = &f.first_error {
                line.push_str(&format!(" (first: {e})"));
            }
        }
        eprintln!("{line}");
    }
    if unkeyed_shown > MAX_UNKEYED_SHOWN {
        eprintln!("… and {} more streams no key matched", unkeyed_shown - MAX_UNKEYED_SHOWN);
    }
    eprintln!(
        "total: {} streams ({keyed} with a key), packets {packets}, decrypted {decrypted}, auth failures {auth}, \
         replays {replays}, other errors {errors}",
        flows.len()
    );
    let mut skipped = format!(
        "skipped: {} frames read; {} UDP not RTP/RTCP, {} IP not UDP, {} not IP, {} IP fragments, \
         {} truncated by the capture, {} malformed, {} of an unsupported link type",
        other.frames,
        other.not_rtp,
        other.not_udp,
        other.not_ip,
        other.fragments,
        other.truncated,
        other.malformed,
        other.unsupported_link
    );
    if let Some(s) = ssrc {
        skipped.push_str(&format!(", {} of SSRCs other than 0x{s:08x}", other.unselected));
    }
    eprintln!("{skipped}");
    if flows.is_empty() {
        match ssrc {
            Some(s) => eprintln!("note: no SRTP/SRTCP flow of SSRC 0x{s:08x} found; the output is a copy of the input"),
            None => eprintln!("note: no SRTP/SRTCP flows found; the output is a copy of the input"),
        }
    } else if keyed == 0 {
        eprintln!("note: no key matched any flow; nothing was decrypted and the output is a copy of the input");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K30: &str = "inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR";

    #[test]
    fn key_forms() {
        let n = parse_key(K30, 1, None).unwrap().len();
        assert_eq!(n, 5); // AES_CM_128 ×2, NULL ×2, F8
        assert_eq!(parse_key(&K30["inline:".len()..], 1, None).unwrap().len(), 5);
        let c = parse_key(&format!("AES_CM_128_HMAC_SHA1_32 {K30}"), 1, None).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].suite, Suite::AES_CM_128_HMAC_SHA1_32);
        let c = parse_key(&format!("a=crypto:1 AES_CM_128_HMAC_SHA1_80 {K30}|2^20|1:4 KDR=0"), 2, None).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].key_no, 2);
        assert_eq!(c[0].policy.keys[0].mki(), &[0, 0, 0, 1]);
        let c = parse_key(K30, 1, Some(Suite::NULL_HMAC_SHA1_32)).unwrap();
        assert_eq!(c[0].suite, Suite::NULL_HMAC_SHA1_32);
    }

    #[test]
    fn bad_keys() {
        assert!(parse_key("", 1, None).is_err());
        assert!(parse_key("inline:AAAA", 1, None).is_err());
        assert!(parse_key("inline:!!!", 1, None).is_err());
        assert!(parse_key(&format!("AES_CM_999 {K30}"), 1, None).is_err());
        assert!(parse_key(&format!("a=crypto:x AES_CM_128_HMAC_SHA1_80 {K30}"), 1, None).is_err());
        assert!(
            parse_key(&format!("a=crypto:1 AES_CM_128_HMAC_SHA1_80 {K30}"), 1, Some(Suite::AEAD_AES_128_GCM)).is_err()
        );
        assert!(parse_key(K30, 1, Some(Suite::AEAD_AES_128_GCM)).is_err());
    }

    #[test]
    fn ssrc_forms() {
        assert_eq!(parse_ssrc("0x2f1d4c3b"), Ok(0x2f1d4c3b));
        assert_eq!(parse_ssrc("123"), Ok(123));
        assert!(parse_ssrc("0x1_0000_0000").is_err());
        assert!(parse_ssrc("abc").is_err());
    }

    #[test]
    fn classify_rtp_and_rtcp() {
        let mut rtp = vec![0x80, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4];
        assert_eq!(classify(&rtp), Some((0x01020304, false)));
        rtp[1] = 200;
        assert_eq!(classify(&rtp), Some((0, true)));
        assert_eq!(classify(&[0x80, 0]), None);
        assert_eq!(classify(&[0x40; 20]), None);
    }
}
