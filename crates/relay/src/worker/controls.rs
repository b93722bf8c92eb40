//! The operator's controls on relayed RTP (rtpengine's `block media`,
//! `silence media`, `block DTMF`, and the prompt that takes the other
//! party's place), and the digits reported to the DTMF log. Each reads the
//! plaintext packet and the two legs' settings; nothing here allocates.

use super::packet::Pkt;
use super::stream::Leg;
use crate::stats::{Drop, DTMF_DROP, DTMF_REWRITE, HELD, MUTED, SILENCED};
use srtp::header::RtpHeader;
use srtp::Engine;
use srtpgate_codec::payload::{self, PayloadKind, PayloadKinds};
use std::sync::atomic::Ordering::Relaxed;

/// What the controls make of one relayed RTP packet from `this` to `o`.
pub(super) enum Verdict {
    /// Relay it (perhaps changed).
    Relay,
    /// Relay it, its payload replaced by silence.
    Silenced,
    /// Drop it.
    Drop(Drop),
}

/// Applies the controls to RTP packet `p` (plaintext) from leg `this`
/// to leg `o`. Payload types are read by `o`'s table: on a transcoded
/// stream the packet is the transcoder's output, in `o`'s numbering, and
/// on a relayed one both legs number alike.
pub(super) fn apply<E: Engine>(p: &mut Pkt, this: &Leg<E>, o: &Leg<E>) -> Verdict {
    if o.player.as_ref().is_some_and(|pl| pl.replacing()) {
        return Verdict::Drop(Drop::Replaced);
    }
    let block = this.stats.block.load(Relaxed);
    let (dtmf, held) = (this.stats.dtmf.load(Relaxed), o.stats.block.load(Relaxed) & HELD != 0);
    if block == 0 && dtmf == 0 && !held {
        return Verdict::Relay;
    }
    let Some((pt, start, end)) = payload_range(p.bytes()) else {
        return Verdict::Relay;
    };
    let kind = o.kinds.get(pt);
    if kind == PayloadKind::Event {
        // DTMF passes a blocked (muted) party, as in rtpengine; `block
        // DTMF` and a hold stop it.
        return match dtmf {
            _ if held => Verdict::Drop(Drop::Blocked),
            DTMF_DROP => Verdict::Drop(Drop::DtmfBlocked),
            d if d & DTMF_REWRITE != 0 && end > start => {
                p.current_mut()[start] = d & 0x0f;
                Verdict::Relay
            }
            _ => Verdict::Relay,
        };
    }
    if held || block & MUTED != 0 {
        return Verdict::Drop(Drop::Blocked);
    }
    if block & SILENCED != 0 && kind != PayloadKind::ComfortNoise {
        let buf = p.current_mut();
        if let Some(n) = payload::silence(kind, &mut buf[start..end]) {
            if n != end - start {
                // A shorter payload (Opus): no padding after it any more.
                buf[0] &= !0x20;
                p.len = start + n;
            }
            return Verdict::Silenced;
        }
    }
    Verdict::Relay
}

/// The payload type and payload bytes (padding excluded) of plain RTP.
fn payload_range(b: &[u8]) -> Option<(u8, usize, usize)> {
    let h = RtpHeader::parse(b).ok()?;
    let pad = if h.padding { *b.last()? as usize } else { 0 };
    let end = b.len().checked_sub(pad).filter(|&e| e >= h.len)?;
    Some((h.payload_type, h.len, end))
}

/// The digit packet `p` (plaintext RTP, its payload types as `kinds` say)
/// ends, if it is an event's first end packet: RFC 4733 senders repeat the
/// end packet (same timestamp), which is reported once (`last_ts` keeps
/// the timestamp of the last one reported).
pub(super) fn dtmf_end(p: &Pkt, kinds: &PayloadKinds, last_ts: &mut Option<u32>) -> Option<(u8, u8, u16, u8)> {
    let b = p.bytes();
    let (pt, start, end) = payload_range(b)?;
    if kinds.get(pt) != PayloadKind::Event || end - start < 4 || b[start + 1] & 0x80 == 0 {
        return None;
    }
    let ts = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
    if *last_ts == Some(ts) {
        return None;
    }
    *last_ts = Some(ts);
    let duration = u16::from_be_bytes([b[start + 2], b[start + 3]]);
    Some((b[start], b[start + 1] & 0x3f, duration, pt))
}
