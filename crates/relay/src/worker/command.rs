//! The control thread's commands, applied to a worker's shard between
//! rounds.

use super::packet::token;
use super::shard::Shard;
use super::{Cmd, LegState, Moved};
use crate::io::Datagram;
use srtp::Engine;

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
                let done = d.configure(*config, stream);
                if done.unlatched {
                    self.io.latch(token(slot, party, false), None);
                    self.io.latch(token(slot, party, true), None);
                }
                if done.relink {
                    self.streams.relink(call);
                }
            }
            Cmd::Keys { call, stream, party, rx: keys_rx, tx } => {
                if let Some((_, d)) = self.streams.leg_mut(call, stream, party) {
                    d.rx = Some(*keys_rx);
                    d.tx = Some(*tx);
                    d.tx_key = 0;
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
                        out.extend(d.state(call, index, party));
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
            Cmd::Stop => {}
        }
    }
}
