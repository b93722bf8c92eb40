//! The logic of the srtp fuzz targets, shared by the libFuzzer binaries in
//! `fuzz_targets/` and by the plain replay test in `tests/replay.rs`, which
//! runs every file under `seeds/<target>/` through the same function (so the
//! seeds and any saved crash reproducers stay covered by `cargo test`).
//!
//! Every function panics (assertion failure) on a bug and returns normally
//! otherwise; none of them may panic on any input.
//!
//! Input format of `unprotect_rtp` / `unprotect_rtcp`:
//!
//! ```text
//! byte 0      configuration: suite = Suite::ALL[b % 11]; f = b / 11:
//!             f & 1 -> 4-byte MKI (value 1), f & 2 -> key derivation rate 2^4,
//!             f & 4 -> unencrypted SRTP/SRTCP, f & 8 -> replay window 64
//! then        records: 2-byte big-endian length L, then L bytes (fewer if
//!             the input ends first); a tail of 1 byte is a record of its own
//! ```
//!
//! Each record is one packet. It is
//! 1. unprotected as-is by two receive contexts, one on [`CpuEngine`] and one
//!    on [`PortableEngine`]: both must give the same `Ok` bytes or the same
//!    `Err`;
//! 2. taken as a plain RTP (RTCP) packet and protected by two send contexts
//!    (CPU and portable): both must give the same result. When protection
//!    succeeds, a copy with one bit flipped must be rejected by two further
//!    receive contexts (CPU and portable, the same error), and the genuine
//!    protected packet must then unprotect on both to the original bytes.

use srtp::header::{check_padding, RtcpHeader, RtpHeader};
use srtp::{Context, CpuEngine, Engine, Error, MasterKey, Policy, PortableEngine, Suite};
use srtp::{MAX_PACKET_LEN, MAX_RTCP_TRAILER_LEN, MAX_TRAILER_LEN};

/// The targets, by name, as `(name, function)`: the names of the fuzz
/// binaries and of the folders under `seeds/`.
pub const TARGETS: [(&str, fn(&[u8])); 14] = [
    ("rtp_header", rtp_header),
    ("rtcp_header", rtcp_header),
    ("rtcp_report", rtcp_report),
    ("unprotect_rtp", unprotect_rtp),
    ("unprotect_rtcp", unprotect_rtcp),
    ("sdes_key", sdes_key),
    ("ng_message", ng::ng_message),
    ("sdp", sdp::sdp),
    ("transcode", transcode::transcode),
    ("ui_message", ui::ui_message),
    ("webrtc_datagram", webrtc::webrtc_datagram),
    ("ng_structured", structured_ng::ng_structured),
    ("sdp_structured", structured_sdp::sdp_structured),
    ("call_table", call_table::call_table),
];

pub mod call_table;
pub mod ng;
pub mod sdp;
pub mod structured_ng;
pub mod structured_sdp;
pub mod transcode;
pub mod ui;
pub mod webrtc;

/// `RtpHeader::parse` and `check_padding` on arbitrary bytes.
pub fn rtp_header(data: &[u8]) {
    let Ok(h) = RtpHeader::parse(data) else {
        return;
    };
    assert!(h.len >= 12, "header length {} < 12", h.len);
    assert!(h.len <= data.len(), "header length {} > packet length {}", h.len, data.len());
    let cc = (data[0] & 0x0f) as usize;
    let mut want = 12 + 4 * cc;
    if data[0] & 0x10 != 0 {
        want += 4 + 4 * u16::from_be_bytes([data[want + 2], data[want + 3]]) as usize;
    }
    assert_eq!(h.len, want, "header length disagrees with CC and extension length");
    assert_eq!(data[0] >> 6, 2);
    assert_eq!(h.seq, u16::from_be_bytes([data[2], data[3]]));
    assert_eq!(h.ssrc, u32::from_be_bytes([data[8], data[9], data[10], data[11]]));
    assert_eq!(h.padding, data[0] & 0x20 != 0);
    // The header alone parses to the same header.
    assert_eq!(RtpHeader::parse(&data[..h.len]), Ok(h));
    let padding = check_padding(&h, data);
    if h.padding {
        if padding.is_ok() {
            let n = *data.last().expect("padding accepted on an empty packet") as usize;
            assert!(n >= 1 && n <= data.len() - h.len, "padding {n} accepted with payload {}", data.len() - h.len);
        }
    } else {
        assert!(padding.is_ok());
    }
}

/// `RtcpHeader::parse` and `parse_fixed`: whatever the full parse accepts,
/// the fixed-header parse accepts with the same result.
pub fn rtcp_header(data: &[u8]) {
    let full = RtcpHeader::parse(data);
    let fixed = RtcpHeader::parse_fixed(data);
    if let Ok(h) = full {
        assert_eq!(fixed, Ok(h), "parse accepted what parse_fixed rejects");
    }
    if let Ok(h) = fixed {
        assert!(data.len() >= 8);
        assert_eq!(data[0] >> 6, 2);
        assert!((192..=223).contains(&h.packet_type));
        assert_eq!(h.ssrc, u32::from_be_bytes([data[4], data[5], data[6], data[7]]));
    }
}

/// Call quality's reading of an RTCP compound: the reports and their
/// blocks stay inside the packet and its counts, the JSON for Homer is
/// valid JSON whatever the packet holds (SDES text included), and its HEP3
/// packet decodes to the same payload.
pub fn rtcp_report(data: &[u8]) {
    use srtpgate_quality::{hep, rtcp};
    for r in rtcp::reports(data) {
        assert!(r.pt == rtcp::SR || r.pt == rtcp::RR);
        assert!(r.blocks.len() <= 31 && r.blocks.len() * 24 < data.len());
    }
    let Some(json) = rtcp::homer_json(data) else { return };
    if let Err(e) = serde_json::from_str::<serde_json::Value>(&json) {
        panic!("not JSON ({e}): {json}");
    }
    let mut out = Vec::new();
    let meta = hep::Meta {
        src: "198.18.0.1:4000".parse().expect("addr"),
        dst: "198.18.0.2:30001".parse().expect("addr"),
        unix_us: 1_800_000_000_000_000,
        capture_id: 2001,
        correlation: "call",
    };
    if hep::encode(&mut out, &meta, hep::PROTO_RTCP_JSON, json.as_bytes()).is_some() {
        let chunks = hep::decode(&out).expect("our HEP3 decodes");
        assert_eq!(chunks.last().map(|c| c.1), Some(json.as_bytes()));
    }
}

/// `MasterKey::from_sdes` on arbitrary UTF-8, for every suite. An accepted
/// key has the suite's lengths and makes a context.
pub fn sdes_key(data: &[u8]) {
    let Ok(s) = core::str::from_utf8(data) else {
        return;
    };
    for suite in Suite::ALL {
        let Ok(k) = MasterKey::from_sdes(suite, s) else {
            continue;
        };
        assert_eq!(k.key().len(), suite.master_key_len());
        assert_eq!(k.salt().len(), suite.master_salt_len());
        assert!(k.mki().len() <= 128);
        Context::new(Policy::new(suite, k), CpuEngine::new()).expect("an accepted SDES key makes no context");
    }
}

/// SRTP: see the module documentation.
pub fn unprotect_rtp(data: &[u8]) {
    run_packets(data, false);
}

/// SRTCP: see the module documentation.
pub fn unprotect_rtcp(data: &[u8]) {
    run_packets(data, true);
}

/// The fixed test key of the context configuration `b` (see the module docs).
pub fn policy(b: u8) -> Policy {
    let suite = Suite::ALL[b as usize % Suite::ALL.len()];
    let f = b as usize / Suite::ALL.len();
    let key: Vec<u8> = (0..suite.master_key_len() as u8).map(|i| i.wrapping_mul(17).wrapping_add(3)).collect();
    let salt: Vec<u8> = (0..suite.master_salt_len() as u8).map(|i| 0xa0 ^ i).collect();
    let mut mk = MasterKey::new(suite, &key, &salt).expect("fixed key fits the suite");
    if f & 1 != 0 {
        mk = mk.with_mki(&[0, 0, 0, 1]);
    }
    let mut p = Policy::new(suite, mk);
    if f & 2 != 0 {
        p.kdr = 1 << 4;
    }
    if f & 4 != 0 {
        p.encrypt_rtp = false;
        p.encrypt_rtcp = false;
    }
    if f & 8 != 0 {
        p.replay_window = 64;
    }
    p
}

/// Splits the records after the configuration byte (see the module docs).
pub fn records(mut rest: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while !rest.is_empty() {
        if rest.len() < 2 {
            out.push(rest);
            break;
        }
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        let body = &rest[2..];
        let len = len.min(body.len());
        out.push(&body[..len]);
        rest = &body[len..];
    }
    out
}

/// Encodes packets in the record format (for seed generation).
pub fn encode(config: u8, packets: &[&[u8]]) -> Vec<u8> {
    let mut v = vec![config];
    for p in packets {
        v.extend_from_slice(&(p.len() as u16).to_be_bytes());
        v.extend_from_slice(p);
    }
    v
}

fn ctx<E: Engine>(policy: &Policy, engine: E) -> Context<E> {
    Context::new(policy.clone(), engine).expect("fixed policy is valid")
}

fn protect<E: Engine>(c: &mut Context<E>, rtcp: bool, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    if rtcp {
        c.protect_rtcp(pkt, out)
    } else {
        c.protect_rtp(pkt, out)
    }
}

fn unprotect<E: Engine>(c: &mut Context<E>, rtcp: bool, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    if rtcp {
        c.unprotect_rtcp(pkt, out)
    } else {
        c.unprotect_rtp(pkt, out)
    }
}

/// Unprotects `pkt` with both engines' contexts and checks they agree;
/// returns the plaintext or the error.
fn unprotect_both(
    cpu: &mut Context<CpuEngine>,
    portable: &mut Context<PortableEngine>,
    rtcp: bool,
    pkt: &[u8],
) -> Result<Vec<u8>, Error> {
    let mut a = vec![0u8; pkt.len()];
    let mut b = vec![0u8; pkt.len()];
    let ra = unprotect(cpu, rtcp, pkt, &mut a).map(|n| a[..n].to_vec());
    let rb = unprotect(portable, rtcp, pkt, &mut b).map(|n| b[..n].to_vec());
    assert_eq!(ra, rb, "CpuEngine and PortableEngine disagree on unprotect of {pkt:02x?}");
    if let Ok(plain) = &ra {
        assert!(plain.len() <= pkt.len());
    }
    ra
}

fn run_packets(data: &[u8], rtcp: bool) {
    let Some((&config, rest)) = data.split_first() else {
        return;
    };
    let policy = policy(config);
    // Receivers of the raw fuzz packets.
    let mut rx_cpu = ctx(&policy, CpuEngine::new());
    let mut rx_portable = ctx(&policy, PortableEngine::new());
    // Senders, and the receivers of what they protect.
    let mut tx_cpu = ctx(&policy, CpuEngine::new());
    let mut tx_portable = ctx(&policy, PortableEngine::new());
    let mut rt_cpu = ctx(&policy, CpuEngine::new());
    let mut rt_portable = ctx(&policy, PortableEngine::new());
    let trailer = if rtcp { MAX_RTCP_TRAILER_LEN } else { MAX_TRAILER_LEN };

    for (i, pkt) in records(rest).into_iter().enumerate() {
        // 1. The packet as SRTP/SRTCP.
        let _ = unprotect_both(&mut rx_cpu, &mut rx_portable, rtcp, pkt);

        // 2. The packet as RTP/RTCP: protect, tamper, round-trip.
        let mut a = vec![0u8; pkt.len() + trailer];
        let mut b = vec![0u8; pkt.len() + trailer];
        let ra = protect(&mut tx_cpu, rtcp, pkt, &mut a).map(|n| a[..n].to_vec());
        let rb = protect(&mut tx_portable, rtcp, pkt, &mut b).map(|n| b[..n].to_vec());
        assert_eq!(ra, rb, "CpuEngine and PortableEngine disagree on protect of {pkt:02x?}");
        let Ok(protected) = ra else {
            continue;
        };
        assert!(protected.len() > pkt.len() && protected.len() <= pkt.len() + trailer);
        if protected.len() > MAX_PACKET_LEN {
            // Unprotect refuses packets over MAX_PACKET_LEN (PacketTooLarge):
            // only reachable with inputs far over libFuzzer's -max_len.
            continue;
        }
        let mut tampered = protected.clone();
        let at = (pkt.len().wrapping_mul(31) + i) % tampered.len();
        tampered[at] ^= 1 << (i % 8);
        let forged = unprotect_both(&mut rt_cpu, &mut rt_portable, rtcp, &tampered);
        assert!(forged.is_err(), "a packet with bit {} of byte {at} flipped was accepted", i % 8);
        let plain = unprotect_both(&mut rt_cpu, &mut rt_portable, rtcp, &protected);
        assert_eq!(plain.as_deref(), Ok(pkt), "protected packet did not round-trip");
    }
}
