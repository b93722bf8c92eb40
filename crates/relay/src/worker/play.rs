//! The play stage: packets the relay makes for a leg's endpoint itself
//! (`play media`, `play DTMF`), from that leg's [`Player`]. They join the
//! round as if the other party had sent them ([`Origin::Player`]) and are
//! protected under the leg's own sending context, sent and released like
//! relayed packets. While a player plays, what the other party sends to
//! that endpoint is dropped ([`Drop::Replaced`](crate::stats::Drop)).

use super::packet::{Origin, Pkt};
use super::shard::Shard;
use super::stream::CallKey;
use srtp::{Engine, Kind};
use srtpgate_codec::player::{Digit, Player, PromptPlay};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;

/// A player's frame may leave this much before it is due, with the others
/// due by then: one wake of the worker serves every player due within the
/// window, instead of one wake per player and frame. A listener's jitter
/// buffer takes 2 ms without a sound.
const EARLY_NS: u64 = 2_000_000;

/// What to play to one leg's endpoint.
pub struct Play {
    /// A player for the leg as the signalling now has it (codec, payload
    /// types): it takes the place of the leg's player for a prompt, and is
    /// used for a digit when the leg has none.
    pub player: Player,
    /// A prompt (`play media`), replacing any prompt playing.
    pub prompt: Option<PromptPlay>,
    /// A digit (`play DTMF`), before any prompt.
    pub digit: Option<Digit>,
}

impl<E: Engine> Shard<E>
where
    E::Keys: 'static,
{
    /// Starts what `play` holds on the leg of `party` (the listener).
    pub(super) fn play(&mut self, call: CallKey, stream: usize, party: usize, play: Play) {
        let now = crate::sys::now_ns();
        let Some((slot, leg)) = self.streams.leg_mut(call, stream, party) else {
            tracing::warn!(call, stream, "play: a stream this worker does not hold");
            return;
        };
        let Play { mut player, prompt, digit } = play;
        let started = match (prompt, leg.player.as_mut()) {
            (Some(p), old) => {
                // A new prompt continues the numbering of what this
                // endpoint was played before, under the same SSRC.
                if let Some(old) = old {
                    player.continue_from(old, now);
                }
                let r = player.play(p, true);
                if let (Ok(()), Some(d)) = (&r, digit) {
                    let _ = player.dtmf(d);
                }
                leg.player = Some(Box::new(player));
                r
            }
            (None, Some(old)) => digit.map_or(Ok(()), |d| old.dtmf(d)),
            (None, None) => {
                let r = digit.map_or(Ok(()), |d| player.dtmf(d));
                leg.player = Some(Box::new(player));
                r
            }
        };
        if let Err(e) = started {
            tracing::warn!(call, stream, party, "play: {e}");
        }
        if !self.playing.contains(&(slot, party as u8)) {
            self.playing.push((slot, party as u8));
        }
    }

    /// Stops the prompt playing to the leg of `party` (digits go on).
    pub(super) fn stop_play(&mut self, call: CallKey, stream: usize, party: usize) {
        if let Some(pl) = self.streams.leg_mut(call, stream, party).and_then(|(_, d)| d.player.as_mut()) {
            pl.stop_prompts();
        }
    }

    /// The packets due by `now` (and [`EARLY_NS`] after it) from every
    /// playing leg, into `out` (as many as it has room for; the rest wait
    /// for the next round).
    pub(super) fn played(&mut self, now: u64, out: &mut Vec<Pkt>) {
        let mut i = 0;
        while i < self.playing.len() {
            let (slot, party) = self.playing[i];
            let player =
                self.streams.get_mut(slot).and_then(|s| s.legs[party as usize].player.as_mut()).filter(|pl| !pl.idle());
            let Some(player) = player else {
                self.playing.swap_remove(i);
                continue;
            };
            i += 1;
            while out.len() < out.capacity() {
                let Some(mut buf) = self.pool.take() else { break };
                match player.next(now + EARLY_NS, &mut buf) {
                    Some(n) => {
                        let from = SocketAddr::from(([0, 0, 0, 0], 0));
                        // As if the other party had sent it: it leaves by
                        // this leg.
                        let mut p = Pkt::new(buf, n, slot, 1 - party, Kind::Rtp, from, now);
                        p.origin = Origin::Player;
                        self.stats.played.fetch_add(1, Relaxed);
                        out.push(p);
                    }
                    None => {
                        self.pool.put(buf);
                        break;
                    }
                }
            }
        }
    }

    /// When the next played packet is due (ns), if any leg plays.
    pub(super) fn next_play_ns(&self) -> Option<u64> {
        self.playing
            .iter()
            .filter_map(|&(slot, party)| self.streams.get(slot)?.legs[party as usize].player.as_ref()?.due())
            .min()
    }
}
