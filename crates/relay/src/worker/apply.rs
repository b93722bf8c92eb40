//! The control thread's commands, applied to a worker's shard between
//! rounds.

use super::command::{Cmd, LegConfig, LegState, Moved};
use super::fork::{Fork, ForkKey};
use super::packet::token;
use super::shard::Shard;
use super::stream::{CallKey, Leg};
use crate::io::Datagram;
use srtp::{Context, Engine};

impl<E: Engine> Shard<E>
where
    E::Keys: 'static,
{
    /// Applies one command (not [`Cmd::Stop`], which the loop handles).
    /// `rx` holds what the backend delivered for the coming round: a
    /// stream that goes takes its datagrams with it.
    pub(super) fn command(&mut self, cmd: Cmd<E>, rx: &mut Vec<Datagram>) {
        match cmd {
            Cmd::AddStream { call, stream, legs } => {
                if let Err(e) = self.add_stream(call, stream, legs) {
                    tracing::error!(call, "cannot register media sockets: {e}");
                }
            }
            Cmd::Configure { call, stream, party, config } => {
                let Some((slot, d)) = self.streams.leg_mut(call, stream, party) else { return };
                let done = configure(d, *config, stream);
                if done.unlatched {
                    self.io.latch(token(slot, party, false), None);
                    self.io.latch(token(slot, party, true), None);
                }
                if done.relink {
                    self.streams.relink(call);
                }
            }
            Cmd::Keys { call, stream, party, rx: keys_rx, tx, tx_key } => {
                if let Some((_, d)) = self.streams.leg_mut(call, stream, party) {
                    d.rx = Some(*keys_rx);
                    d.tx = Some(*tx);
                    d.tx_key = tx_key;
                    d.keys_pending = false;
                }
            }
            Cmd::Send { call, stream, party, to, data } => {
                if let Some((_, d)) = self.streams.leg_mut(call, stream, party) {
                    if let Err(e) = d.rtp.send_to(&data, to) {
                        tracing::debug!(call, "sending a STUN/DTLS datagram to {to}: {e}");
                        self.stats.signal(false);
                    }
                }
            }
            Cmd::Latch { call, stream, party, peer } => {
                let Some((slot, d)) = self.streams.leg_mut(call, stream, party) else { return };
                let changed = d.peer_rtp != Some(peer) || !d.latched_rtp;
                d.peer_rtp = Some(peer);
                d.latched_rtp = true;
                if d.mux {
                    d.peer_rtcp = Some(peer);
                }
                if changed {
                    self.io.latch(token(slot, party, false), Some(peer));
                }
            }
            Cmd::RemoveCall { call } => {
                drop(self.remove_call(call, rx));
            }
            Cmd::Record { call, on } => {
                for s in self.streams.iter_mut().filter(|s| s.call == call) {
                    s.record = on;
                }
            }
            Cmd::RemoveStream { call, stream } => {
                if let Some(slot) = self.streams.slot_of(call, stream) {
                    self.remove(slot, rx);
                    self.streams.relink(call);
                }
            }
            Cmd::MoveCall { call, to, done } => {
                let moved: Vec<Moved<E>> = self.remove_call(call, rx).into_iter().map(Moved).collect();
                let n = moved.len();
                if n > 0 {
                    if to.tx.send(Cmd::Adopt { streams: moved }).is_err() {
                        tracing::error!(call, "the media worker a call moves to has stopped; the call has no media");
                    } else if let Err(e) = to.waker.wake() {
                        tracing::error!("cannot wake a worker: {e}");
                    }
                }
                let _ = done.send(n);
            }
            Cmd::Adopt { streams } => {
                let mut calls = Vec::new();
                for Moved(s) in streams {
                    let call = s.call;
                    if !calls.contains(&call) {
                        calls.push(call);
                    }
                    if let Err(e) = self.adopt(s) {
                        tracing::error!(call, "cannot register media sockets of a call moved here: {e}");
                    }
                }
                for call in calls {
                    self.streams.relink(call);
                }
            }
            Cmd::Snapshot { reply } => {
                let mut out: Vec<LegState> = Vec::new();
                for s in self.streams.iter_mut() {
                    let (call, index) = (s.call, s.index);
                    for (party, d) in s.legs.iter_mut().enumerate() {
                        out.extend(leg_state(d, call, index, party));
                    }
                }
                let _ = reply.send(out);
            }
            Cmd::Reserve { call, stream, party, key, ssrc, rtp, rtcp } => {
                if let Some((_, d)) = self.streams.leg_mut(call, stream, party) {
                    if let Some(tx) = d.tx.as_mut().filter(|_| d.tx_key == key) {
                        if let Err(e) = tx.reserve(ssrc, rtp, rtcp) {
                            tracing::warn!(call, stream, party, "index reservation refused: {e}");
                        }
                    }
                }
            }
            Cmd::AddFork { call, stream, party, fork } => match self.streams.leg_mut(call, stream, party) {
                Some((_, d)) => d.forks.push(Fork::new(fork)),
                None => tracing::warn!(call, stream, "a fork of a stream this worker does not hold"),
            },
            Cmd::ConfigureFork { call, fork, config } => {
                if let Some(f) = self.fork_mut(call, fork) {
                    f.configure(*config);
                }
            }
            Cmd::RemoveFork { call, fork } => {
                for s in self.streams.iter_mut().filter(|s| s.call == call) {
                    for d in &mut s.legs {
                        d.forks.retain(|f| f.key != fork);
                    }
                }
            }
            Cmd::Play { call, stream, party, play } => self.play(call, stream, party, *play),
            Cmd::StopPlay { call, stream, party } => self.stop_play(call, stream, party),
            Cmd::Stop => {}
        }
    }

    /// Fork `fork` of call `call`, on whichever leg it copies.
    fn fork_mut(&mut self, call: CallKey, fork: ForkKey) -> Option<&mut Fork<E>> {
        self.streams
            .iter_mut()
            .filter(|s| s.call == call)
            .flat_map(|s| s.legs.iter_mut())
            .flat_map(|d| d.forks.iter_mut())
            .find(|f| f.key == fork)
    }
}

/// What [`Leg::configure`] changed that the worker must act on.
struct Configured {
    /// The peer addresses changed: the backend's latch is cleared.
    unlatched: bool,
    /// BUNDLE links may have changed: the call's streams are relinked.
    relink: bool,
}

/// Applies what the signalling agreed for a leg of stream `stream`.
fn configure<E: Engine>(leg: &mut Leg<E>, config: LegConfig<E>, stream: usize) -> Configured {
    let mut unlatched = false;
    if let Some((rtp, rtcp)) = config.peer {
        if (rtp, rtcp) != (leg.peer_rtp, leg.peer_rtcp) || !leg.configured {
            leg.peer_rtp = rtp;
            leg.peer_rtcp = rtcp;
            leg.latched_rtp = false;
            leg.latched_rtcp = false;
            unlatched = true;
        }
    }
    leg.mux = config.rtcp_mux;
    if let Some(rx) = config.rx {
        leg.rx = rx;
    }
    if let Some(tx) = config.tx {
        leg.tx = tx;
        leg.tx_key = config.tx_key;
    }
    if let Some(tx) = leg.tx.as_mut().filter(|t| t.reserving() != config.reserving) {
        tx.set_reserving(config.reserving);
    }
    leg.handover = config.handover;
    if let Some(t) = config.transcode {
        leg.transcode = t;
        leg.transcode_failed = false;
    }
    if let Some(k) = config.kinds {
        leg.sends_events = k.of_kind(srtpgate_codec::payload::PayloadKind::Event).next().is_some();
        leg.kinds = k;
    }
    leg.demux = config.demux;
    leg.keys_pending = config.keys_pending;
    leg.configured = true;
    let relink = leg.bundle.is_some() || config.bundle.is_some() || !leg.members.is_empty();
    leg.bundle = config.bundle.filter(|&b| b != stream);
    leg.pts = pt_bits(&config.payload_types);
    leg.mid_ext = config.mid_ext.as_ref().filter(|(id, m)| (1..=14).contains(id) && (1..=16).contains(&m.len())).map(
        |(id, m)| {
            let mut b = [0u8; 16];
            b[..m.len()].copy_from_slice(m);
            (*id, b, m.len() as u8)
        },
    );
    Configured { unlatched, relink }
}

/// Where a leg's contexts stand, `None` for a plain leg.
fn leg_state<E: Engine>(leg: &mut Leg<E>, call: CallKey, stream: usize, party: usize) -> Option<LegState> {
    if leg.rx.is_none() && leg.tx.is_none() {
        return None;
    }
    Some(LegState {
        call,
        stream,
        party,
        rx: leg.rx.as_ref().map(Context::streams_state).unwrap_or_default(),
        rx_uses: leg.rx.as_ref().map(Context::key_uses).unwrap_or_default(),
        tx: leg.tx.as_ref().map(Context::streams_state).unwrap_or_default(),
        tx_uses: leg.tx.as_ref().map(Context::key_uses).unwrap_or_default(),
        wanted: leg.wanted.take(),
    })
}

/// Payload types as a bit set.
fn pt_bits(pts: &[u8]) -> u128 {
    pts.iter().filter(|&&p| p < 128).fold(0, |m, &p| m | 1u128 << p)
}
