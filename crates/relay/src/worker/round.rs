//! A worker's round: what the backend delivered, through named stages, with
//! the crypto of the whole round as engine batches (one to unprotect, one or
//! two to protect), each handed to the engine between two stages.
//!
//! | stage | what it does to a packet |
//! |---|---|
//! | [`receive`](Shard::receive) | a datagram becomes a packet: its stream by the socket's token (on a BUNDLE transport, the member stream by payload type or SSRC), STUN and DTLS handed to the control thread, RTP or RTCP; RTP older than the delay bound dropped as stale |
//! | unprotect ([`begin`](Shard::begin), [`opened`](Shard::opened)) | the source and the leg checked, then one engine batch with each receiving leg's context, then the commit |
//! | [`route`] | the authenticated packet: its sequence number for the leg's loss, its source latched, a digit's end reported to the DTMF log; a copy to the recorder and one per subscriber ([`fork::copy`]) |
//! | [`transcode`](Shard::transcode) | (streams with a codec) decoded and encoded: one packet, several or none |
//! | protect ([`seal`](Shard::seal)) | the operator's controls ([`controls::apply`]: hold, block, silence, DTMF block, a prompt in its place), a destination, the mid extension; one engine batch with each sending leg's context, then the commit |
//! | [`send`](Shard::send) | by the backend, in runs of packets that leave by one socket |
//! | [`release`](Shard::release) | each packet's fate counted once, its buffers back to the pool |
//!
//! A batch goes to the engine by [`submit`](Shard::submit) and its verdicts
//! come back by [`commit`](Shard::commit); [`step`](Shard::step) takes a
//! round from one batch to the next. With an engine that has a lane (the
//! GPU) the worker does not wait in between: the round waits in the
//! worker's flight (`flight.rs`) while the worker begins the next.
//!
//! Before `receive` and `unprotect` the round announces what they will read
//! of its calls to the cache ([`Shard::prefetch_streams`],
//! [`Shard::prefetch_keys`]), so that the misses of all its packets
//! overlap.
//!
//! A stage looks a packet's stream up once and hands it to the packet's
//! step (`route`, `check_and_prepare`, `prepare_protect`) with the packet.
//! Packets of transcoded streams wait in a queue of their own: the others
//! of the round are protected and sent first, so a slow codec does not
//! delay another call's packets beyond its own round. Subscribers' copies
//! go next, then the packets the players made ([`Shard::played`]), through
//! the same protect, send and release.

use super::controls::{self, Verdict};
use super::flight::{Phase, Round, MAX_BATCH};
use super::fork;
use super::packet::{add_mid_extension, classify, token, untoken, Fate, Origin, Pkt};
use super::shard::Shard;
use super::signal::Signal;
use super::stream::{Leg, Stream};
use crate::io::{Datagram, Io};
use crate::pool::{Buf, Pool};
use crate::stats::{Drop, Stage};
use crate::sys::{self, BATCH};
use srtp::header::{RtcpHeader, RtpHeader};
use srtp::{Context, Engine, Job, Kind, Op, Outcome, Ticket};
use srtpgate_codec::payload::PayloadKind;
use srtpgate_quality::RtcpCopy;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

/// The token of a socket the backend does not hold (a fork's): sent as a
/// plain datagram by its descriptor.
const NO_TOKEN: u32 = u32::MAX;

/// Most packets one round can handle (one engine batch); the configured
/// batch is at most this.
pub const MAX_LOOP_PACKETS: usize = 1024;

/// What every round of a worker shares: the backend's datagrams before
/// they become a round's packets, and the engine batch (allocations kept
/// from round to round).
pub(super) struct Queues<K: 'static> {
    /// What the backend delivered.
    pub rx: Vec<Datagram>,
    /// The engine batch being built.
    jobs: Vec<Job<'static, K>>,
}

impl<K: 'static> Queues<K> {
    pub fn new() -> Queues<K> {
        Queues { rx: Vec::with_capacity(MAX_LOOP_PACKETS), jobs: Vec::with_capacity(MAX_BATCH) }
    }
}

impl<E: Engine> Shard<E>
where
    E::Keys: 'static,
{
    /// A round's first step: what the backend delivered into `q.rx` becomes
    /// the round's packets, checked and prepared, and their unprotect batch
    /// goes to the engine ([`Phase::Opening`]).
    pub(super) fn begin(&mut self, r: &mut Round, q: &mut Queues<E::Keys>, lap: &mut Lap) {
        let now = lap.now();
        if !q.rx.is_empty() {
            self.prefetch_streams(&q.rx);
            for d in q.rx.drain(..) {
                self.receive(d, now, &mut r.relayed, &mut r.coded);
            }
            lap.lap(Stage::Receive);
        }
        r.phase = Phase::Opening;
        if r.relayed.is_empty() && r.coded.is_empty() {
            return;
        }
        self.prefetch_keys(&r.relayed);
        self.prefetch_keys(&r.coded);
        for p in r.relayed.iter_mut().chain(r.coded.iter_mut()) {
            if p.fate.is_dropped() {
                continue;
            }
            match self.streams.get_mut(p.slot) {
                Some(s) => check_and_prepare(p, &mut s.legs[p.party as usize], &mut self.pool),
                None => p.fate = Fate::Dropped(Drop::Other),
            }
        }
        lap.lap(Stage::Unprotect);
        r.ticket =
            self.submit(Op::Unprotect, [&mut r.relayed, &mut r.coded, &mut []], &mut q.jobs, &mut r.verdicts, lap);
    }

    /// Takes the round on from the batch the engine finished (`r.ticket`,
    /// completed here, waiting if need be) to its next batch, or to its
    /// end: the stages between two batches.
    pub(super) fn step(&mut self, r: &mut Round, q: &mut Queues<E::Keys>, lap: &mut Lap) {
        if let Some(t) = r.ticket.take() {
            self.complete(t, &mut r.verdicts, lap);
        }
        match r.phase {
            Phase::Opening => {
                self.opened(r, lap);
                // The call's own packets leave first; transcoding waits.
                self.seal([&mut r.relayed, &mut [], &mut []], lap);
                r.phase = Phase::SealingRelayed;
                r.ticket =
                    self.submit(Op::Protect, [&mut r.relayed, &mut [], &mut []], &mut q.jobs, &mut r.verdicts, lap);
            }
            Phase::SealingRelayed => {
                self.commit(Op::Protect, [&mut r.relayed, &mut [], &mut []], &r.verdicts);
                lap.lap(Stage::Protect);
                self.leave(&mut r.relayed, lap);
                if !r.coded.is_empty() {
                    self.transcode(&mut r.coded, &mut r.transcoded);
                    self.detected_digits(&r.transcoded);
                    lap.lap(Stage::Transcode);
                }
                if !self.playing.is_empty() {
                    self.played(lap.now(), &mut r.played);
                    lap.lap(Stage::Transcode);
                }
                // Then the transcoded packets, the subscribers' copies (after
                // the call's own packets) and the players' packets.
                self.seal([&mut r.transcoded, &mut r.forked, &mut r.played], lap);
                r.phase = Phase::SealingRest;
                let rest = [&mut r.transcoded[..], &mut r.forked[..], &mut r.played[..]];
                r.ticket = self.submit(Op::Protect, rest, &mut q.jobs, &mut r.verdicts, lap);
            }
            Phase::SealingRest => {
                self.commit(Op::Protect, [&mut r.transcoded, &mut r.forked, &mut r.played], &r.verdicts);
                lap.lap(Stage::Protect);
                self.leave(&mut r.transcoded, lap);
                self.leave(&mut r.forked, lap);
                self.leave(&mut r.played, lap);
                r.phase = Phase::Done;
            }
            Phase::Done => {}
        }
    }

    /// Announces what the round reads of the streams of its datagrams to
    /// the cache ([`srtp::prefetch`]). A round visits a different call with
    /// almost every packet, and that call's state has left the cache since
    /// its last packet 20 ms ago; announced for the whole round at once, the
    /// misses overlap instead of each packet waiting for its own. Two
    /// passes, each reading only what the one before announced: the legs
    /// (found by address from the token), then what the legs point to
    /// (counters, the contexts' stream entries and key sets).
    fn prefetch_streams(&self, rx: &[Datagram]) {
        for d in rx {
            if let Some(s) = self.streams.get(untoken(d.tok).0) {
                s.legs[0].prefetch();
                s.legs[1].prefetch();
            }
        }
        for d in rx {
            let (slot, party, _) = untoken(d.tok);
            let Some(s) = self.streams.get(slot) else { continue };
            let (this, o) = (&s.legs[party], &s.legs[1 - party]);
            // The counters of every packet (LegStats's first two lines),
            // and on the leg it arrived on, its delay's histogram.
            srtp::prefetch::bytes(&*this.stats, 2 * srtp::prefetch::LINE);
            srtp::prefetch::value(&this.stats.delay_buckets);
            srtp::prefetch::bytes(&*o.stats, 2 * srtp::prefetch::LINE);
            if let Some(rx) = &this.rx {
                rx.prefetch_state(Op::Unprotect);
            }
            if let Some(tx) = &o.tx {
                tx.prefetch_state(Op::Protect);
            }
        }
    }

    /// Announces the session keys the round's packets are unprotected and
    /// protected with: a step after [`Shard::prefetch_streams`], whose key
    /// sets name them.
    fn prefetch_keys(&self, pkts: &[Pkt]) {
        for p in pkts.iter().filter(|p| !p.fate.is_dropped()) {
            let Some(s) = self.streams.get(p.slot) else { continue };
            if let Some(rx) = &s.legs[p.party as usize].rx {
                rx.prefetch_keys(p.kind);
            }
            if let Some(tx) = &s.legs[p.other()].tx {
                tx.prefetch_keys(p.kind);
            }
        }
    }

    /// Digits a transcoder detected in the audio of a sender that has no
    /// telephone-event (its output carries them as events), for the DTMF
    /// log: RFC 4733 digits of the sender were reported on arrival.
    fn detected_digits(&mut self, transcoded: &[Pkt]) {
        let Some(tx) = self.dtmf.as_ref() else { return };
        for p in transcoded.iter().filter(|p| p.fate == Fate::Forward && p.kind == Kind::Rtp) {
            let Some(s) = self.streams.get_mut(p.slot) else { continue };
            let (call, index) = (s.call, s.index);
            let (this, o) = s.legs_of(p.party as usize);
            if this.sends_events {
                continue;
            }
            if let Some(d) = controls::dtmf_end(p, &o.kinds, &mut this.last_event_ts) {
                report_digit(tx, &self.stats, call, index, p, d);
            }
        }
    }

    /// Send, release: the rest of the way of the (sealed) packets in `pkts`.
    fn leave(&mut self, pkts: &mut Vec<Pkt>, lap: &mut Lap) {
        if pkts.is_empty() {
            return;
        }
        self.send(pkts, lap.now());
        lap.lap(Stage::Send);
        self.release(pkts);
        lap.lap(Stage::Release);
    }

    /// Receive: one datagram becomes a packet of its stream, into `relayed`
    /// or (a stream with a transcoder) `coded`; STUN and DTLS on an ICE/DTLS
    /// leg go to the control thread instead.
    fn receive(&mut self, d: Datagram, now: u64, relayed: &mut Vec<Pkt>, coded: &mut Vec<Pkt>) {
        let (owner, party, rtcp_port) = untoken(d.tok);
        let slot = self.bundle_member(owner, party, rtcp_port, &d.buf[..d.len.min(d.buf.len())]);
        let Some(stream) = self.streams.get(slot) else {
            self.stats.stray();
            if !d.pool_exhausted() {
                self.pool.put(d.buf);
            }
            return;
        };
        let leg = &stream.legs[party];
        if d.pool_exhausted() {
            leg.stats.dropped(Drop::PoolExhausted);
            self.stats.total.dropped(Drop::PoolExhausted);
            return;
        }
        let len = d.len.min(d.buf.len());
        if leg.demux && !(128..=191).contains(&d.buf.first().copied().unwrap_or(0)) {
            // STUN or DTLS (or noise) on an ICE/DTLS leg: the control
            // thread's business, not the media's.
            let forwarded = match (&self.signal, d.from) {
                // A full queue is seen before a buffer is taken for it.
                (Some(tx), Some(from)) if !d.truncated && !tx.is_full() => match self.signal_bufs.copy(&d.buf[..len]) {
                    Some(data) => {
                        tx.try_send(Signal { call: stream.call, stream: stream.index, party, from, data }).is_ok()
                    }
                    None => false,
                },
                _ => false,
            };
            self.stats.signal(forwarded);
            self.pool.put(d.buf);
            return;
        }
        leg.stats.received(len);
        self.stats.total.received(len);
        let kind = classify(rtcp_port, leg.mux, &d.buf[..len]);
        if kind == Kind::Rtcp {
            leg.stats.rtcp_received(len);
        }
        let from = d.from.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
        let mut p = Pkt::new(d.buf, len, slot, party as u8, kind, from, d.rx_ns.unwrap_or(now));
        if d.truncated || d.from.is_none() {
            p.fate = Fate::Dropped(Drop::Malformed);
        } else if kind == Kind::Rtp && self.stale_ns > 0 && now.saturating_sub(p.rx_ns) > self.stale_ns {
            // Shed here, before any crypto: a late worker catches up at the
            // cost of reading what it cannot relay in time. RTCP carries
            // no audio and is small; it always goes on.
            p.fate = Fate::Dropped(Drop::Stale);
        }
        if stream.transcodes() {
            coded.push(p);
        } else {
            relayed.push(p);
        }
    }

    /// The stream a datagram on `owner`'s port belongs to: on a BUNDLE
    /// transport, media of another stream of the call goes to that stream
    /// (RTP by payload type, RTCP by sender SSRC); otherwise `owner`.
    fn bundle_member(&mut self, owner: u32, party: usize, rtcp_port: bool, b: &[u8]) -> u32 {
        let Some(s) = self.streams.get_mut(owner) else { return owner };
        let leg = &mut s.legs[party];
        if leg.members.is_empty() || b.len() < 12 || !(128..=191).contains(&b[0]) {
            return owner;
        }
        if classify(rtcp_port, leg.mux, b) == Kind::Rtp {
            let ssrc = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
            if let Some(m) = leg.members.iter_mut().find(|m| m.takes_pt(b[1] & 0x7f)) {
                // Learnt before authentication: a forged packet can at worst
                // send the RTCP of that SSRC to another stream of the same
                // call, whose context (the same keys) still checks it.
                m.note_ssrc(ssrc);
                return m.slot;
            }
        } else {
            let ssrc = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
            if let Some(m) = leg.members.iter().find(|m| m.has_ssrc(ssrc)) {
                return m.slot;
            }
        }
        owner
    }

    /// Unprotect's second half, once the engine ran the round's unprotect
    /// batch: each packet committed and routed, copied to the recorder when
    /// the call records and into `forked` for the leg's subscribers.
    fn opened(&mut self, r: &mut Round, lap: &mut Lap) {
        if r.relayed.is_empty() && r.coded.is_empty() {
            return;
        }
        self.commit(Op::Unprotect, [&mut r.relayed, &mut r.coded, &mut []], &r.verdicts);
        let now_ms = lap.now() / 1_000_000;
        for p in r.relayed.iter_mut().chain(r.coded.iter_mut()) {
            if p.fate.is_dropped() {
                continue;
            }
            if let Some(s) = self.streams.get_mut(p.slot) {
                // Checked again: a round before this one, in flight when it
                // was checked, may have latched the leg since.
                if from_stranger(p, &s.legs[p.party as usize]) {
                    p.fate = Fate::Dropped(Drop::UnknownPeer);
                    continue;
                }
                route(p, &mut s.legs[p.party as usize], &mut *self.io, now_ms, self.quality.is_some());
                if let (Kind::Rtcp, Some(tx)) = (p.kind, self.quality.as_ref()) {
                    let copy = RtcpCopy::new(s.call, s.index as u16, p.party, p.from, p.rx_ns, p.bytes());
                    self.stats.rtcp_report(tx.try_send(copy).is_ok());
                }
                if let Some(tx) = self.dtmf.as_ref().filter(|_| p.kind == Kind::Rtp) {
                    let leg = &mut s.legs[p.party as usize];
                    if let Some(d) = controls::dtmf_end(p, &leg.kinds, &mut leg.last_event_ts) {
                        report_digit(tx, &self.stats, s.call, s.index, p, d);
                    }
                }
                if let (true, Some(tap)) = (s.record, self.tap.as_mut()) {
                    self.stats.recorded(tap.copy(s.call, s.index, p));
                }
                let forks = &mut s.legs[p.party as usize].forks;
                if !forks.is_empty() {
                    fork::copy(p, forks, &mut self.pool, &mut r.forked);
                }
            }
        }
        lap.lap(Stage::Unprotect);
    }

    /// Protect's first half: each packet forwarded prepared with the other
    /// leg's context (or its fork's), the operator's controls applied.
    fn seal(&mut self, queues: [&mut [Pkt]; 3], lap: &mut Lap) {
        let [a, b, c] = queues;
        if a.is_empty() && b.is_empty() && c.is_empty() {
            return;
        }
        for p in a.iter_mut().chain(b.iter_mut()).chain(c.iter_mut()) {
            if p.fate != Fate::Forward {
                continue;
            }
            match (self.streams.get_mut(p.slot), p.origin) {
                (Some(s), Origin::Party | Origin::Player) => {
                    if prepare_protect(p, s, &mut self.pool) {
                        self.stats.silenced.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
                (Some(s), Origin::Fork(f)) => prepare_fork(p, s, f, &mut self.pool),
                (None, _) => p.fate = Fate::Dropped(Drop::Other),
            }
        }
        lap.lap(Stage::Protect);
    }

    /// Hands the packets prepared in this step (unprotect with the
    /// receiving leg's context, or protect with the sending one's) to the
    /// engine as one batch: through the worker's lane, where the engine has
    /// one, without waiting (the ticket says where the batch is), else run
    /// here. The verdicts known on return are in `verdicts`, in the order
    /// of the batch; [`commit`](Self::commit) reads them in the same order.
    fn submit(
        &mut self,
        op: Op,
        queues: [&mut [Pkt]; 3],
        jobs: &mut Vec<Job<'static, E::Keys>>,
        verdicts: &mut [Outcome],
        lap: &mut Lap,
    ) -> Option<Ticket> {
        let [a, b, c] = queues;
        let streams = &self.streams;
        let mut batch: Vec<Job<'_, E::Keys>> = recycle(std::mem::take(jobs));
        // A context with a key derivation rate may replace the keys a job
        // in flight names when it prepares its next packet: such a batch
        // runs before the worker goes on.
        let mut rekeys = false;
        for p in a.iter_mut().chain(b.iter_mut()).chain(c.iter_mut()) {
            let (Some(prep), false) = (p.prep.as_ref(), p.fate.is_dropped()) else { continue };
            if batch.len() == verdicts.len() {
                // No room for its verdict: dropped rather than unverified.
                p.fate = Fate::Dropped(Drop::Other);
                continue;
            }
            let ctx = streams.get(p.slot).and_then(|s| match op {
                Op::Unprotect => s.legs[p.party as usize].rx.as_ref(),
                Op::Protect => sealer(s, p),
            });
            let out: Option<&mut Buf> = if p.in_b { p.b.as_mut() } else { Some(&mut p.a) };
            let (Some(ctx), Some(out)) = (ctx, out) else {
                p.fate = Fate::Dropped(Drop::Other);
                continue;
            };
            rekeys |= ctx.key_derivation_rate() != 0;
            match ctx.job(prep, out) {
                Ok(j) => batch.push(j),
                Err(e) => p.fate = Fate::Dropped(Drop::of(&e)),
            }
        }
        let mut ticket = None;
        if !batch.is_empty() {
            self.stats.batch(batch.len());
            match self.lane.as_mut().filter(|_| !rekeys) {
                // SAFETY: the jobs' buffers are the frames of this round's
                // packets and their keys those of its streams' contexts
                // (none with a key derivation rate: those run here). The
                // round keeps its packets, untouched, until `complete`
                // returns for the ticket (a round waits in the worker's
                // flight, and only `step` touches it, after completing); the
                // worker completes every round before a command can change
                // or drop a context, and before it drops the pool; it never
                // holds more rounds than the lane's depth.
                Some(lane) => ticket = unsafe { lane.submit(&mut batch) },
                None => self.engine.transform(&mut batch),
            }
            if ticket.is_some() {
                self.stats.lane_batch();
            }
            lap.lap(Stage::Crypto);
        }
        for (v, j) in verdicts.iter_mut().zip(batch.iter()) {
            *v = j.outcome;
        }
        *jobs = recycle(batch);
        ticket
    }

    /// Waits for a batch the lane holds and writes its verdicts. A batch the
    /// lane lost (a device error) leaves its packets' verdicts pending, and
    /// its packets are dropped at commit; the error is counted.
    fn complete(&mut self, t: Ticket, verdicts: &mut [Outcome], lap: &mut Lap) {
        let Some(lane) = self.lane.as_mut() else { return };
        if let Err(e) = lane.complete(t, verdicts) {
            self.stats.engine_error();
            tracing::warn!("engine lane: {e}; the batch's packets are dropped");
        }
        lap.lap(Stage::Crypto);
    }

    /// Commits each packet of the batch in order, with its verdict: the
    /// SRTP state moves on only for packets that authenticated.
    fn commit(&mut self, op: Op, queues: [&mut [Pkt]; 3], verdicts: &[Outcome]) {
        let [a, b, c] = queues;
        let mut k = 0;
        for p in a.iter_mut().chain(b.iter_mut()).chain(c.iter_mut()) {
            let Some(prep) = p.prep.take() else { continue };
            if p.fate.is_dropped() {
                continue;
            }
            let outcome = verdicts.get(k).copied().unwrap_or(Outcome::Pending);
            k += 1;
            let Some(s) = self.streams.get_mut(p.slot) else { continue };
            let ctx = match op {
                Op::Unprotect => s.legs[p.party as usize].rx.as_mut(),
                Op::Protect => sealer_mut(s, p),
            };
            let Some(ctx) = ctx else { continue };
            // A batch committed since this one was prepared may have moved
            // the packet's index (a new stream across the sequence wrap):
            // the packet, still as received in `a`, is tried at the index
            // it gets now, as it would have been prepared after that batch.
            let moved = match (outcome, op) {
                (Outcome::AuthFailed, Op::Unprotect) => ctx.index_now(&prep),
                _ => None,
            };
            let committed = match moved {
                Some(index) => match second_try(p, &mut self.pool) {
                    Some((pkt, b)) => ctx.retry_at(&prep, index, pkt, b),
                    None => Err(srtp::Error::AuthFailed),
                },
                None => {
                    let out: &[u8] = if p.in_b { p.b.as_deref().unwrap_or(&[]) } else { &p.a };
                    match ctx.commit(&prep, outcome, out) {
                        // A resumed stream's kept rollover counter may be one
                        // behind the sender's (Context::resume_rx): the
                        // packet, still as received in `a`, is tried once
                        // under the next one.
                        Err(srtp::Error::AuthFailed) if op == Op::Unprotect && prep.next_roc_possible() => {
                            match second_try(p, &mut self.pool) {
                                Some((pkt, b)) => ctx.retry_next_roc(&prep, pkt, b),
                                None => Err(srtp::Error::AuthFailed),
                            }
                        }
                        r => r,
                    }
                }
            };
            match committed {
                Ok(len) => p.len = len,
                Err(e) => p.fate = Fate::Dropped(Drop::of(&e)),
            }
        }
    }

    /// Send: the packets forwarded leave by the backend, as frames where
    /// it sends them as they lie (AF_XDP), else in runs of packets that
    /// leave by one socket. A packet the backend took is [`Fate::Sent`],
    /// stamped `now` as a frame (it leaves with the backend's next
    /// doorbell), or the clock after its socket's call.
    fn send(&mut self, pkts: &mut [Pkt], now: u64) {
        if self.io.frames() {
            self.transmit_frames(pkts, now);
        }
        let mut i = 0;
        while i < pkts.len() {
            // The run of packets leaving by one socket to one address.
            let Some((tok, fd, to)) = self.destination(&pkts[i]) else {
                nowhere(&mut pkts[i]);
                i += 1;
                continue;
            };
            let mut msgs: [(&[u8], SocketAddr); BATCH] = [(&[], to); BATCH];
            let mut idx = [0usize; BATCH];
            let mut m = 0;
            let mut j = i;
            while j < pkts.len() && m < BATCH {
                match self.destination(&pkts[j]) {
                    Some((_, f, t)) if f == fd => {
                        msgs[m] = (pkts[j].bytes(), t);
                        idx[m] = j;
                        m += 1;
                        j += 1;
                    }
                    None => j += 1,
                    Some(_) => break,
                }
            }
            let sent = self.io.send(tok, fd, &msgs[..m]).min(m);
            let now = sys::now_ns();
            for (k, &pi) in idx[..m].iter().enumerate() {
                let p = &mut pkts[pi];
                if k < sent {
                    p.fate = Fate::Sent;
                    p.sent_ns = now;
                } else {
                    p.fate = Fate::Dropped(Drop::Other);
                }
            }
            // What the run skipped and is still on its way had nowhere to go.
            pkts[i..j].iter_mut().for_each(nowhere);
            i = j;
        }
    }

    /// Hands every packet the backend can send as it lies in its buffer
    /// (AF_XDP frames) to the backend; the rest stay for the sockets.
    fn transmit_frames(&mut self, pkts: &mut [Pkt], now: u64) {
        for p in pkts.iter_mut() {
            let Some((tok, _, to)) = self.destination(p) else { continue };
            let buf = if p.in_b { p.b.take().unwrap_or_default() } else { std::mem::take(&mut p.a) };
            match self.io.transmit(tok, buf, p.len, to) {
                Ok(()) => {
                    p.fate = Fate::Sent;
                    p.sent_ns = now;
                }
                Err(buf) if p.in_b => p.b = Some(buf),
                Err(buf) => p.a = buf,
            }
        }
        self.io.flush(&mut self.pool);
    }

    /// The socket (token and descriptor) and address a forwarded packet
    /// leaves by; `None` for one not forwarded, or with nowhere to go.
    fn destination(&self, p: &Pkt) -> Option<(u32, RawFd, SocketAddr)> {
        if p.fate != Fate::Forward {
            return None;
        }
        let s = self.streams.get(p.slot)?;
        if let Origin::Fork(f) = p.origin {
            // A subscriber's copy leaves by its fork's socket, which the
            // backend does not hold (no token: sent as a datagram).
            let f = s.legs[p.party as usize].forks.get(f as usize)?;
            return Some((NO_TOKEN, f.rtp.as_raw_fd(), f.peer?));
        }
        let other = p.other();
        let o = &s.legs[other];
        if let Some(ps) = o.bundle_slot {
            // Bundled: out of the transport owner's port, to its peer.
            let t = self.streams.get(ps).filter(|t| t.call == s.call)?;
            let od = &t.legs[other];
            return Some((token(ps, other, false), od.rtp.as_raw_fd(), od.peer_rtp?));
        }
        match (p.kind, o.mux) {
            (Kind::Rtcp, false) => Some((token(p.slot, other, true), o.rtcp.as_raw_fd(), o.peer_rtcp?)),
            _ => Some((token(p.slot, other, false), o.rtp.as_raw_fd(), o.peer_rtp?)),
        }
    }

    /// Release: each packet's fate counted on its leg and the worker's
    /// totals (a packet sent, on the leg it left by, with its delay on
    /// the leg it came from), and its buffers returned to the pool.
    fn release(&mut self, pkts: &mut Vec<Pkt>) {
        for mut p in pkts.drain(..) {
            match (p.fate, p.origin) {
                (Fate::Dropped(why), Origin::Fork(f)) => {
                    if let Some(f) =
                        self.streams.get(p.slot).and_then(|s| s.legs[p.party as usize].forks.get(f as usize))
                    {
                        f.stats.dropped(why);
                    }
                    self.stats.total.dropped(why);
                }
                (Fate::Sent, Origin::Fork(f)) => {
                    if let Some(f) =
                        self.streams.get(p.slot).and_then(|s| s.legs[p.party as usize].forks.get(f as usize))
                    {
                        f.stats.sent(p.len);
                    }
                    self.stats.total.sent(p.len);
                }
                (Fate::Dropped(why), Origin::Player) => self.stats.total.dropped(why),
                (Fate::Sent, Origin::Player) => {
                    if let Some(s) = self.streams.get(p.slot) {
                        s.legs[p.other()].stats.sent(p.len);
                    }
                    self.stats.total.sent(p.len);
                }
                (Fate::Dropped(why), Origin::Party) => {
                    if let Some(s) = self.streams.get(p.slot) {
                        s.legs[p.party as usize].stats.dropped(why);
                    }
                    self.stats.total.dropped(why);
                }
                (Fate::Sent, Origin::Party) => {
                    let delay = p.sent_ns.saturating_sub(p.rx_ns);
                    if let Some(s) = self.streams.get(p.slot) {
                        s.legs[p.other()].stats.sent(p.len);
                        s.legs[p.party as usize].stats.delay(delay);
                    }
                    self.stats.total.sent(p.len);
                    self.stats.delay(delay);
                }
                (Fate::Forward | Fate::Absorbed, _) => {}
            }
            self.pool.put(std::mem::take(&mut p.a));
            if let Some(b) = p.b.take() {
                self.pool.put(b);
            }
        }
    }
}

/// Hands a digit to the DTMF log's queue (counted either way).
fn report_digit(
    tx: &crossbeam_channel::Sender<srtpgate_codec::dtmf::SentDigit>,
    stats: &crate::stats::WorkerStats,
    call: super::stream::CallKey,
    stream: usize,
    p: &Pkt,
    (event, volume, duration, pt): (u8, u8, u16, u8),
) {
    let e = srtpgate_codec::dtmf::SentDigit {
        call,
        stream,
        party: p.party as usize,
        event,
        volume,
        duration,
        pt,
        from: p.from,
    };
    stats.dtmf_event(tx.try_send(e).is_ok());
}

/// A packet still on its way when the send stage passed it had no
/// destination (a bundled leg whose transport has no peer).
fn nowhere(p: &mut Pkt) {
    if p.fate == Fate::Forward {
        p.fate = Fate::Dropped(Drop::NoDestination);
    }
}

/// Whether `p` comes from another source than the one its leg latched, on
/// a leg that takes none: plain RTP without handover (an SRTP leg re-latches
/// a source whose packet authenticated).
fn from_stranger<E: Engine>(p: &Pkt, leg: &Leg<E>) -> bool {
    let (peer, latched) = leg.peer(p.kind == Kind::Rtcp);
    latched && peer != Some(p.from) && !(leg.handover || leg.rx.is_some())
}

/// Unprotect's first step for one packet on its leg: the source checked
/// (after latching, another one is refused unless the call allows handover
/// or the leg is SRTP, where a packet from a new address re-latches only
/// once it authenticated), the leg ready, then the SRTP prepare (where the
/// packet lies, or into a second buffer where a failed packet would not be
/// left as received), or a plain packet's header checked.
fn check_and_prepare<E: Engine>(p: &mut Pkt, leg: &mut Leg<E>, pool: &mut Pool) {
    if from_stranger(p, leg) {
        p.fate = Fate::Dropped(Drop::UnknownPeer);
        return;
    }
    if !leg.ready() {
        p.fate = Fate::Dropped(Drop::NoDestination);
        return;
    }
    match leg.rx.as_mut() {
        // Where a packet that fails stays as received, it is unprotected
        // where it lies: no second buffer, no copy (a second try at
        // commit still finds it in `a`).
        Some(ctx) if ctx.keeps_failed() => match ctx.prepare_in_place(p.kind, Op::Unprotect, &mut p.a, p.len) {
            Ok(prep) => p.prep = Some(prep),
            Err(e) => p.fate = Fate::Dropped(Drop::of(&e)),
        },
        Some(ctx) => {
            let bytes = &p.a[..p.len];
            let Some(mut b) = p.b.take().or_else(|| pool.take()) else {
                p.fate = Fate::Dropped(Drop::PoolExhausted);
                return;
            };
            match ctx.prepare(p.kind, Op::Unprotect, bytes, &mut b) {
                Ok(prep) => {
                    p.prep = Some(prep);
                    p.in_b = true;
                }
                Err(e) => p.fate = Fate::Dropped(Drop::of(&e)),
            }
            p.b = Some(b);
        }
        None => {
            let bytes = &p.a[..p.len];
            let ok = match p.kind {
                Kind::Rtp => RtpHeader::parse(bytes).is_ok(),
                Kind::Rtcp => RtcpHeader::parse_fixed(bytes).is_ok(),
            };
            if !ok {
                p.fate = Fate::Dropped(Drop::Malformed);
            }
        }
    }
}

/// A second try at unprotecting `p`: the packet as received (in `a`) and
/// the buffer it is unprotected into (`b`, taken from the pool where the
/// first try ran in place), which then holds the current bytes. None when
/// the pool has no buffer.
fn second_try<'p>(p: &'p mut Pkt, pool: &mut Pool) -> Option<(&'p [u8], &'p mut [u8])> {
    if p.b.is_none() {
        p.b = pool.take();
    }
    let Pkt { a, b, len, in_b, .. } = p;
    let b = b.as_mut()?;
    *in_b = true;
    Some((&a[..*len], &mut b[..]))
}

/// A round's clock: read at the boundaries of its stages (never per
/// packet), each lap added to the stage it closes. A reading also serves as
/// the next stage's `now` (the stale check, the send stamps, the leg's last
/// packet), so a round with packets reads the clock about ten times
/// however many it holds (and once more per socket call on the sockets'
/// path, whose send stamps follow the call). It is the wall clock ([`sys::now_ns`]) because
/// the kernel's receive timestamps, which delays are measured from, are.
pub(super) struct Lap {
    at: u64,
    ns: [u64; Stage::ALL.len()],
}

impl Lap {
    pub(super) fn starting(at: u64) -> Lap {
        Lap { at, ns: [0; Stage::ALL.len()] }
    }

    /// The last reading.
    pub(super) fn now(&self) -> u64 {
        self.at
    }

    /// Reads the clock: the time since the last reading goes to `stage`.
    fn lap(&mut self, stage: Stage) {
        let now = sys::now_ns();
        self.ns[stage as usize] += now.saturating_sub(self.at);
        self.at = now.max(self.at);
    }

    pub(super) fn add_to(&self, counters: &[std::sync::atomic::AtomicU64; Stage::ALL.len()]) {
        for (c, &n) in counters.iter().zip(&self.ns) {
            if n > 0 {
                c.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// Route: a packet accepted from its leg's endpoint (authenticated, or
/// plain and well formed). Its sequence number counts towards the leg's
/// expected packets (the header is in the clear in the received buffer),
/// with call quality on its arrival towards the leg's jitter (not events
/// or comfort noise, whose timestamps stand still), and its source is
/// latched: media to the endpoint goes where it sends from.
fn route<E: Engine>(p: &mut Pkt, leg: &mut Leg<E>, io: &mut dyn Io, now_ms: u64, quality: bool) {
    if p.kind == Kind::Rtp && p.len >= 12 {
        let seq = u16::from_be_bytes([p.a[2], p.a[3]]);
        let ssrc = u32::from_be_bytes([p.a[8], p.a[9], p.a[10], p.a[11]]);
        let t = leg.seq.get_or_insert(super::stream::SeqTrack::new(ssrc, seq));
        t.note(ssrc, seq);
        leg.stats.rtp_seen(t.expected());
        let pt = p.a[1] & 0x7f;
        leg.stats.rtp_source_seen(ssrc, pt);
        if quality && !matches!(leg.kinds.get(pt), PayloadKind::Event | PayloadKind::ComfortNoise) {
            let ts = u32::from_be_bytes([p.a[4], p.a[5], p.a[6], p.a[7]]);
            leg.jitter.note(ssrc, ts, leg.kinds.clock(pt), p.rx_ns);
            leg.stats.set_jitter_us(leg.jitter.micros());
        }
    }
    leg.stats.accepted(now_ms);
    let on_rtcp_port = p.kind == Kind::Rtcp && !leg.mux;
    let (peer, latched) = if on_rtcp_port {
        (&mut leg.peer_rtcp, &mut leg.latched_rtcp)
    } else {
        (&mut leg.peer_rtp, &mut leg.latched_rtp)
    };
    if !*latched || *peer != Some(p.from) {
        *peer = Some(p.from);
        *latched = true;
        // A bundled leg's own port is not in use: the transport's owner
        // latched on the same packet's address.
        if leg.bundle_slot.is_none() {
            io.latch(token(p.slot, p.party as usize, on_rtcp_port), Some(p.from));
        }
    }
}

/// Protect's first step for one forwarded packet (or one a player made):
/// the operator's controls on relayed RTP ([`controls::apply`]; RTCP keeps
/// flowing), the leg it leaves by ready and with a peer, the mid extension
/// (BUNDLE towards an endpoint that needs it), then the SRTP prepare with
/// that leg's context from the current buffer into the other one (a plain
/// leg sends the bytes as they are). True when the payload was silenced.
fn prepare_protect<E: Engine>(p: &mut Pkt, s: &mut Stream<E>, pool: &mut Pool) -> bool {
    let (this, o) = s.legs_of(p.party as usize);
    let mut silenced = false;
    if p.kind == Kind::Rtp && p.origin == Origin::Party {
        match controls::apply(p, this, o) {
            Verdict::Relay => {}
            Verdict::Silenced => silenced = true,
            Verdict::Drop(why) => {
                p.fate = Fate::Dropped(why);
                return false;
            }
        }
    }
    if !o.ready() || o.peer(p.kind == Kind::Rtcp).0.is_none() {
        p.fate = Fate::Dropped(Drop::NoDestination);
        return false;
    }
    if let (Kind::Rtp, Some((id, mid, n))) = (p.kind, o.mid_ext) {
        let buf = if p.in_b { p.b.as_deref_mut() } else { Some(&mut p.a[..]) };
        if let Some(buf) = buf {
            p.len = add_mid_extension(buf, p.len, id, &mid[..n as usize]);
        }
    }
    let Some(ctx) = o.tx.as_mut() else { return silenced };
    if let Err(Some(srtp::Error::NotReserved { ssrc, index })) = seal(p, ctx, pool) {
        o.wanted = Some((ssrc, index, p.kind == Kind::Rtcp));
    }
    silenced
}

/// Protect's first step for a subscriber's copy: its fork answered, then
/// the SRTP prepare with the fork's context (a plain fork sends the copy as
/// it is).
fn prepare_fork<E: Engine>(p: &mut Pkt, s: &mut Stream<E>, fork: u8, pool: &mut Pool) {
    let Some(f) = s.legs[p.party as usize].forks.get_mut(fork as usize).filter(|f| f.peer.is_some()) else {
        p.fate = Fate::Dropped(Drop::NoDestination);
        return;
    };
    if let Some(ctx) = f.tx.as_mut() {
        let _ = seal(p, ctx, pool);
    }
}

/// The SRTP prepare of `p` with the sending context `ctx`, from its
/// current buffer into the other (taken from the pool when it has none).
/// On failure the packet is dropped, and the SRTP error (none: no buffer)
/// returned.
fn seal<E: Engine>(p: &mut Pkt, ctx: &mut Context<E>, pool: &mut Pool) -> Result<(), Option<srtp::Error>> {
    // Where it lies when its buffer has room for the trailer (always, but
    // for a packet near the buffer's end): no copy, no second buffer.
    let (kind, len) = (p.kind, p.len);
    match ctx.prepare_in_place(kind, Op::Protect, p.current_mut(), len) {
        Ok(prep) => {
            p.prep = Some(prep);
            return Ok(());
        }
        Err(srtp::Error::BufferTooSmall(_)) => {}
        Err(e) => {
            p.fate = Fate::Dropped(Drop::of(&e));
            return Err(Some(e));
        }
    }
    if p.b.is_none() {
        match pool.take() {
            Some(b) => p.b = Some(b),
            None => {
                p.fate = Fate::Dropped(Drop::PoolExhausted);
                return Err(None);
            }
        }
    }
    let Pkt { a, b: Some(b), in_b, len, kind, .. } = p else { return Err(None) };
    let (src, dst): (&[u8], &mut [u8]) = if *in_b { (&b[..*len], &mut a[..]) } else { (&a[..*len], &mut b[..]) };
    match ctx.prepare(*kind, Op::Protect, src, dst) {
        Ok(prep) => {
            p.prep = Some(prep);
            p.in_b = !p.in_b;
            Ok(())
        }
        Err(e) => {
            p.fate = Fate::Dropped(Drop::of(&e));
            Err(Some(e))
        }
    }
}

/// The context that protects packet `p` on its way out: the other leg's,
/// or its fork's for a subscriber's copy.
fn sealer<'s, E: Engine>(s: &'s Stream<E>, p: &Pkt) -> Option<&'s Context<E>> {
    match p.origin {
        Origin::Party | Origin::Player => s.legs[p.other()].tx.as_ref(),
        Origin::Fork(f) => s.legs[p.party as usize].forks.get(f as usize)?.tx.as_ref(),
    }
}

/// [`sealer`], to commit with.
fn sealer_mut<'s, E: Engine>(s: &'s mut Stream<E>, p: &Pkt) -> Option<&'s mut Context<E>> {
    match p.origin {
        Origin::Party | Origin::Player => s.legs[p.other()].tx.as_mut(),
        Origin::Fork(f) => s.legs[p.party as usize].forks.get_mut(f as usize)?.tx.as_mut(),
    }
}

/// Reuses a vector's allocation for another element type of the same layout
/// (here: the same type with another lifetime), so the round's engine batch
/// is allocated once. Done by hand: `collect()` reusing the source's
/// allocation is an optimisation std does not promise, and a round that
/// allocated its job vector would break the worker's no-allocation rule
/// silently.
fn recycle<T, U>(v: Vec<T>) -> Vec<U> {
    const { assert!(size_of::<T>() == size_of::<U>() && align_of::<T>() == align_of::<U>()) };
    let mut v = std::mem::ManuallyDrop::new(v);
    v.clear();
    let (ptr, cap) = (v.as_mut_ptr(), v.capacity());
    // SAFETY: the allocation came from a `Vec<T>` of capacity `cap`, and `U`
    // has `T`'s size and alignment (checked above), so it is the allocation
    // of a `Vec<U>` of that capacity; length 0: no element is read as a `U`;
    // `ManuallyDrop` keeps the old vector from freeing it.
    unsafe { Vec::from_raw_parts(ptr.cast::<U>(), 0, cap) }
}
