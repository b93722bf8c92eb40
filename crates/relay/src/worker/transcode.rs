//! The round's transcode stage: the plain RTP of streams with a codec
//! through their transcoders, and their RTCP rewritten to match.

use super::packet::{Fate, Pkt};
use super::round::MAX_LOOP_PACKETS;
use super::shard::Shard;
use super::stream::Leg;
use crate::stats::{Drop, Transcoded, WorkerStats};
use srtp::{Engine, Kind};
use srtpgate_codec::transcode::Counts;

impl<E: Engine> Shard<E>
where
    E::Keys: 'static,
{
    /// Runs the transcoders over the packets in `coded` (unprotected,
    /// routed), moving them to `out`: each packet becomes its transcoder's
    /// first output (in its own buffer) and further outputs (concealed
    /// packets for lost ones, repacketized audio) follow it as packets of
    /// their own, so a stream's packets leave in order; a packet that
    /// produced nothing yet is absorbed. Dropped packets pass unchanged.
    pub(super) fn transcode(&mut self, coded: &mut Vec<Pkt>, out: &mut Vec<Pkt>) {
        let mut rest = coded.drain(..);
        while let Some(mut p) = rest.next() {
            let Some(s) = self.streams.get_mut(p.slot).filter(|_| !p.fate.is_dropped()) else {
                out.push(p);
                continue;
            };
            let (call, index) = (s.call, s.index);
            let (this, other) = s.legs_of(p.party as usize);
            if p.kind == Kind::Rtcp {
                rewrite_rtcp(&mut p, this, other, (call, index));
                out.push(p);
                continue;
            }
            decode_encode(&mut p, this, &self.stats, (call, index));
            let more = this.transcode.as_ref().filter(|_| p.fate == Fate::Forward);
            let (slot, party, from, rx_ns) = (p.slot, p.party, p.from, p.rx_ns);
            out.push(p);
            for o in more.into_iter().flat_map(|t| t.outputs().skip(1)) {
                // The round has room for this many packets (one engine
                // batch): past it, the rest of this packet's audio is lost.
                let buf = if out.len() + rest.len() < MAX_LOOP_PACKETS { self.pool.take() } else { None };
                let Some(mut a) = buf else {
                    let why =
                        if out.len() + rest.len() < MAX_LOOP_PACKETS { Drop::PoolExhausted } else { Drop::Transcode };
                    this.stats.dropped(why);
                    self.stats.total.dropped(why);
                    continue;
                };
                a[..o.len()].copy_from_slice(o);
                out.push(Pkt::new(a, o.len(), slot, party, Kind::Rtp, from, rx_ns));
            }
        }
    }
}

/// A sender report of a transcoded stream rewritten into the other leg's
/// clock; the loss this endpoint reports sizes the FEC of the stream
/// encoded towards it.
fn rewrite_rtcp<E: Engine>(p: &mut Pkt, this: &mut Leg<E>, other: &mut Leg<E>, (call, stream): (u64, usize)) {
    if this.transcode.is_none() && other.transcode.is_none() {
        return;
    }
    let len = p.len;
    let buf = p.current_mut();
    let len = len.min(buf.len());
    let lost = srtpgate_codec::transcode::rtcp(&mut buf[..len], this.transcode.as_deref());
    if let (Some(f), Some(t)) = (lost, other.transcode.as_mut()) {
        if let Err(e) = t.set_receiver_loss(f) {
            tracing::debug!(call, stream, "codec loss control: {e}");
        }
    }
}

/// One RTP packet through its leg's transcoder: the packet's buffer takes
/// the first output, or the packet is absorbed (no output yet) or dropped
/// (a decode error; a fatal one, or a panic, ends the leg's transcoding).
fn decode_encode<E: Engine>(p: &mut Pkt, leg: &mut Leg<E>, stats: &WorkerStats, (call, stream): (u64, usize)) {
    if leg.transcode_failed {
        p.fate = Fate::Dropped(Drop::Transcode);
        return;
    }
    let Some(t) = leg.transcode.as_mut() else { return };
    let before = t.counts();
    let bytes = p.bytes();
    // A bug in a transcoder (or an in-tree codec) ends that stream's
    // transcoding, not the worker.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.push(bytes)));
    count(stats, &before, &t.counts());
    let failed = match r {
        Ok(Ok(())) => false,
        Ok(Err(e)) if e.is_fatal() => {
            tracing::warn!(call, stream, party = p.party, "transcoding ended: {e}");
            true
        }
        Ok(Err(_)) => {
            p.fate = Fate::Dropped(Drop::Transcode);
            return;
        }
        Err(_) => {
            tracing::error!(call, stream, party = p.party, "transcoder panicked; transcoding ended");
            true
        }
    };
    if failed {
        stats.transcoded(Transcoded::CodecFailed, 1);
        leg.transcode = None;
        leg.transcode_failed = true;
        p.fate = Fate::Dropped(Drop::Transcode);
        return;
    }
    let Some(first) = t.outputs().next() else {
        p.fate = Fate::Absorbed;
        return;
    };
    let buf = p.current_mut();
    buf[..first.len()].copy_from_slice(first);
    p.len = first.len();
}

/// The transcoder's counters that moved in one push, into the worker's.
fn count(stats: &WorkerStats, before: &Counts, after: &Counts) {
    let moved = [
        (Transcoded::Decoded, after.decoded - before.decoded),
        (Transcoded::Encoded, after.encoded - before.encoded),
        (Transcoded::Concealed, after.concealed_samples - before.concealed_samples),
        (Transcoded::FecDecoded, after.recovered_samples - before.recovered_samples),
        (Transcoded::Untransmitted, after.untransmitted - before.untransmitted),
        (Transcoded::DtmfDetected, after.dtmf_detected - before.dtmf_detected),
        (Transcoded::DtmfPlayed, after.dtmf_played - before.dtmf_played),
        (Transcoded::Late, after.late - before.late),
        (Transcoded::Reordered, after.reordered - before.reordered),
    ];
    for (what, n) in moved {
        stats.transcoded(what, n);
    }
}
