//! The parts of a plain RTCP compound packet (RFC 3550 §6) that call quality
//! reads: sender reports, reception report blocks, source descriptions.
//!
//! A walk stops at the first packet that is not version 2 or runs past the
//! end (a compound packet cut by [`crate::RTCP_COPY`], or a malformed one):
//! what came before it counts, nothing after it is guessed.

use std::fmt::Write as _;

/// RTCP packet types read here.
pub const SR: u8 = 200;
/// Receiver report.
pub const RR: u8 = 201;
/// Source description.
pub const SDES: u8 = 202;

/// The sender information of an SR (RFC 3550 §6.4.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SenderInfo {
    /// NTP timestamp, seconds.
    pub ntp_msw: u32,
    /// NTP timestamp, fraction.
    pub ntp_lsw: u32,
    /// RTP timestamp of the same instant.
    pub rtp_ts: u32,
    /// Packets sent.
    pub packets: u32,
    /// Payload octets sent.
    pub octets: u32,
}

impl SenderInfo {
    /// The middle 32 bits of the NTP timestamp: what a receiver echoes as
    /// LSR.
    pub fn ntp_middle(&self) -> u32 {
        self.ntp_msw << 16 | self.ntp_lsw >> 16
    }
}

/// One reception report block (RFC 3550 §6.4.1): what the reporter
/// received of source `ssrc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportBlock {
    /// The source reported on.
    pub ssrc: u32,
    /// Lost since the last report, in 1/256.
    pub fraction_lost: u8,
    /// Cumulative packets lost (24 bits, as rtpengine reads them: unsigned).
    pub cumulative_lost: u32,
    /// Extended highest sequence number received.
    pub highest_seq: u32,
    /// Interarrival jitter, in the source's RTP clock.
    pub jitter: u32,
    /// Middle bits of the last SR received from the source (0: none).
    pub lsr: u32,
    /// Delay since that SR, in 1/65536 s.
    pub dlsr: u32,
}

/// An SR or RR: its sender, the sender information of an SR, the blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// [`SR`] or [`RR`].
    pub pt: u8,
    /// The SSRC of the endpoint that sent it.
    pub ssrc: u32,
    /// An SR's sender information.
    pub sender: Option<SenderInfo>,
    /// Its reception report blocks.
    pub blocks: Vec<ReportBlock>,
}

/// The packets of a compound: (report count, packet type, the bytes after
/// the 4-byte header up to the packet's length).
fn packets(pkt: &[u8]) -> impl Iterator<Item = (u8, u8, &[u8])> {
    let mut at = 0;
    std::iter::from_fn(move || {
        let head = pkt.get(at..at + 4)?;
        let len = (u16::from_be_bytes([head[2], head[3]]) as usize + 1) * 4;
        if head[0] >> 6 != 2 || at + len > pkt.len() {
            return None;
        }
        let body = &pkt[at + 4..at + len];
        at += len;
        Some((head[0] & 0x1f, head[1], body))
    })
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn block(b: &[u8]) -> ReportBlock {
    ReportBlock {
        ssrc: be32(b, 0),
        fraction_lost: b[4],
        cumulative_lost: u32::from_be_bytes([0, b[5], b[6], b[7]]),
        highest_seq: be32(b, 8),
        jitter: be32(b, 12),
        lsr: be32(b, 16),
        dlsr: be32(b, 20),
    }
}

/// The sender and receiver reports of a compound packet, in order. Report
/// blocks beyond the packet's length are not read.
pub fn reports(pkt: &[u8]) -> Vec<Report> {
    let mut out = Vec::new();
    for (count, pt, body) in packets(pkt) {
        let (sender, blocks_at) = match pt {
            SR if body.len() >= 24 => (
                Some(SenderInfo {
                    ntp_msw: be32(body, 4),
                    ntp_lsw: be32(body, 8),
                    rtp_ts: be32(body, 12),
                    packets: be32(body, 16),
                    octets: be32(body, 20),
                }),
                24,
            ),
            RR if body.len() >= 4 => (None, 4),
            _ => continue,
        };
        let blocks = body[blocks_at..].chunks_exact(24).take(count as usize).map(block).collect();
        out.push(Report { pt, ssrc: be32(body, 0), sender, blocks });
    }
    out
}

/// The JSON rtpengine sends to Homer for a compound packet (its
/// `homer_*` handlers in `rtcp.c`): an SR's `sender_information`, each
/// SR/RR's `ssrc`, `type`, `report_count` and `report_blocks`, each SDES's
/// `sdes_report_count` and `sdes_information`, in the packet's order, keys
/// and spacing as rtpengine writes them (a compound with two reports
/// repeats keys, as rtpengine's does). `None` when nothing was read.
pub fn homer_json(pkt: &[u8]) -> Option<String> {
    let mut s = String::from("{ ");
    for (count, pt, body) in packets(pkt) {
        match pt {
            SR | RR => {
                let blocks_at = if pt == SR { 24 } else { 4 };
                if body.len() < blocks_at {
                    continue;
                }
                if pt == SR {
                    let _ = write!(
                        s,
                        "\"sender_information\":{{\"ntp_timestamp_sec\":{},\"ntp_timestamp_usec\":{},\"octets\":{},\"rtp_timestamp\":{}, \"packets\":{}}},",
                        be32(body, 4),
                        be32(body, 8),
                        be32(body, 20),
                        be32(body, 12),
                        be32(body, 16)
                    );
                }
                let _ = write!(
                    s,
                    "\"ssrc\":{},\"type\":{},\"report_count\":{},\"report_blocks\":[",
                    be32(body, 0),
                    pt,
                    count
                );
                for b in body[blocks_at..].chunks_exact(24).take(count as usize).map(block) {
                    let _ = write!(
                        s,
                        "{{\"source_ssrc\":{},\"highest_seq_no\":{},\"fraction_lost\":{},\"ia_jitter\":{},\"packets_lost\":{},\"lsr\":{},\"dlsr\":{}}},",
                        b.ssrc, b.highest_seq, b.fraction_lost, b.jitter, b.cumulative_lost, b.lsr, b.dlsr
                    );
                }
                trim(&mut s);
                s.push_str("],");
            }
            SDES => {
                let _ = write!(s, "\"sdes_report_count\":{count},\"sdes_information\": [ ");
                sdes_items(body, count, &mut s);
                trim(&mut s);
                s.push_str("],");
            }
            _ => {}
        }
    }
    trim(&mut s);
    s.push_str(" }");
    (s.len() > "{  }".len()).then_some(s)
}

/// rtpengine's `str_sanitize`: trailing spaces and commas go.
fn trim(s: &mut String) {
    while s.ends_with([' ', ',']) {
        s.pop();
    }
}

/// Each SDES chunk's items as `{"sdes_chunk_ssrc":…,"type":…,"text":"…"},`
/// with the text escaped as rtpengine does (JSON escapes; other bytes
/// outside printable ASCII become `_`).
fn sdes_items(body: &[u8], count: u8, s: &mut String) {
    let mut at = 0;
    for _ in 0..count {
        let Some(ssrc) = body.get(at..at + 4).map(|b| be32(b, 0)) else { return };
        at += 4;
        while let Some(&kind) = body.get(at) {
            if kind == 0 {
                break;
            }
            let Some(&len) = body.get(at + 1) else { return };
            let Some(text) = body.get(at + 2..at + 2 + len as usize) else { return };
            let _ = write!(s, "{{\"sdes_chunk_ssrc\":{ssrc},\"type\":{kind},\"text\":\"");
            for &c in text {
                match c {
                    b'"' => s.push_str("\\\""),
                    b'\\' => s.push_str("\\\\"),
                    8 => s.push_str("\\b"),
                    12 => s.push_str("\\f"),
                    b'\n' => s.push_str("\\n"),
                    b'\r' => s.push_str("\\r"),
                    b'\t' => s.push_str("\\t"),
                    c if !(b' '..=126).contains(&c) => s.push('_'),
                    c => s.push(c as char),
                }
            }
            s.push_str("\"},");
            at += 2 + len as usize;
        }
        // The chunk ends with its null item(s), padded to 32 bits.
        at = (at + 4) & !3;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An SR of `ssrc` with one block about `about`, then an SDES CNAME.
    pub fn sr_with_block(ssrc: u32, ntp: (u32, u32), b: ReportBlock, cname: &str) -> Vec<u8> {
        let mut p = vec![0x81, SR, 0, 12];
        for w in [ssrc, ntp.0, ntp.1, 1234, 50, 8000] {
            p.extend(w.to_be_bytes());
        }
        p.extend(b.ssrc.to_be_bytes());
        p.push(b.fraction_lost);
        p.extend(&b.cumulative_lost.to_be_bytes()[1..]);
        for w in [b.highest_seq, b.jitter, b.lsr, b.dlsr] {
            p.extend(w.to_be_bytes());
        }
        let mut sdes = vec![0x81, SDES, 0, 0];
        sdes.extend(ssrc.to_be_bytes());
        sdes.extend([1, cname.len() as u8]);
        sdes.extend(cname.as_bytes());
        sdes.push(0);
        while sdes.len() % 4 != 0 {
            sdes.push(0);
        }
        let words = (sdes.len() / 4 - 1) as u16;
        sdes[2..4].copy_from_slice(&words.to_be_bytes());
        p.extend(sdes);
        p
    }

    fn a_block() -> ReportBlock {
        ReportBlock {
            ssrc: 0xbbbb,
            fraction_lost: 13,
            cumulative_lost: 0x01_0203,
            highest_seq: 70_000,
            jitter: 240,
            lsr: 0x1234_5678,
            dlsr: 65_536,
        }
    }

    #[test]
    fn an_sr_with_a_block_and_sdes() {
        let p = sr_with_block(0xaaaa, (3_900_000_000, 0x8000_0000), a_block(), "alice@host");
        let r = reports(&p);
        assert_eq!(r.len(), 1);
        assert_eq!((r[0].pt, r[0].ssrc), (SR, 0xaaaa));
        let si = r[0].sender.unwrap();
        assert_eq!((si.rtp_ts, si.packets, si.octets), (1234, 50, 8000));
        assert_eq!(si.ntp_middle(), (3_900_000_000u32 << 16) | 0x8000);
        assert_eq!(r[0].blocks, vec![a_block()]);
        assert_eq!(
            homer_json(&p).unwrap(),
            "{ \"sender_information\":{\"ntp_timestamp_sec\":3900000000,\"ntp_timestamp_usec\":2147483648,\
             \"octets\":8000,\"rtp_timestamp\":1234, \"packets\":50},\"ssrc\":43690,\"type\":200,\
             \"report_count\":1,\"report_blocks\":[{\"source_ssrc\":48059,\"highest_seq_no\":70000,\
             \"fraction_lost\":13,\"ia_jitter\":240,\"packets_lost\":66051,\"lsr\":305419896,\"dlsr\":65536}],\
             \"sdes_report_count\":1,\"sdes_information\": [ {\"sdes_chunk_ssrc\":43690,\"type\":1,\
             \"text\":\"alice@host\"}] }"
        );
    }

    #[test]
    fn an_rr_without_blocks_and_sdes_text_escaped() {
        let mut p = vec![0x80, RR, 0, 1, 0, 0, 0, 9];
        p.extend([0x81, SDES, 0, 3, 0, 0, 0, 9, 1, 5, b'a', b'"', 0x01, b'\\', b'z', 0, 0, 0]);
        let r = reports(&p);
        assert_eq!(r, vec![Report { pt: RR, ssrc: 9, sender: None, blocks: vec![] }]);
        assert_eq!(
            homer_json(&p).unwrap(),
            "{ \"ssrc\":9,\"type\":201,\"report_count\":0,\"report_blocks\":[],\"sdes_report_count\":1,\
             \"sdes_information\": [ {\"sdes_chunk_ssrc\":9,\"type\":1,\"text\":\"a\\\"_\\\\z\"}] }"
        );
    }

    #[test]
    fn a_cut_or_malformed_compound_keeps_what_came_before() {
        let p = sr_with_block(1, (1, 2), a_block(), "x");
        // Cut inside the SDES: the SR still counts.
        assert_eq!(reports(&p[..p.len() - 2]).len(), 1);
        // Cut inside the SR: nothing.
        assert!(reports(&p[..20]).is_empty());
        assert_eq!(homer_json(&p[..20]), None);
        // A block count larger than the packet holds reads what is there.
        let mut q = p.clone();
        q[0] = 0x80 | 5;
        assert_eq!(reports(&q)[0].blocks.len(), 1);
        // Version 1: nothing.
        let mut v = p;
        v[0] = 0x41;
        assert!(reports(&v).is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_without_panic(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = reports(&b);
            let _ = homer_json(&b);
        }
    }
}
