//! The rounds a worker has in flight: asynchronous rounds.
//!
//! A round's crypto runs as engine batches ([`round`](super::round)): the
//! unprotect batch, then the protect batch of the call's own packets, then
//! one of the transcoded packets, the subscribers' copies and the players'
//! packets. A [`Phase`] names the batch a round waits for.
//!
//! With an engine on another device (the GPU), the worker hands a batch to
//! its lane ([`srtp::Lane`]) and goes on: it receives and prepares the next
//! round while the device runs the last. The rounds in flight move on in
//! the order they began, each as far as its lane's batches are done, so
//! that every context commits its packets in the order they were prepared
//! (replay windows, rollover counters, latching and counters see the
//! packets in the order the CPU engine gives them). A round that meets a
//! batch still on the device waits there, and the rounds behind it with it.
//!
//! With the CPU engine there is no lane: every batch runs as it is handed
//! over, and a round runs from its first stage to its last before the next
//! begins, as one call.
//!
//! The worker completes every round in flight before it applies a command
//! (which may change or drop the contexts and streams the batches name),
//! and before it stops.

use super::packet::Pkt;
use super::round::{Lap, Queues, MAX_LOOP_PACKETS};
use super::shard::Shard;
use srtp::{Engine, Outcome, Ticket};
use std::collections::VecDeque;

/// Most jobs one engine batch of a round can have: the protect batch of
/// the transcoded packets, the subscribers' copies and the players'
/// packets holds up to three queues' worth.
pub const MAX_BATCH: usize = 3 * MAX_LOOP_PACKETS;

/// Where a round is: the batch it waits for, or done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    /// Its unprotect batch.
    Opening,
    /// The protect batch of the call's own packets (relayed as they are).
    SealingRelayed,
    /// The protect batch of the transcoded packets, the subscribers'
    /// copies and the players' packets.
    SealingRest,
    /// Sent and released.
    Done,
}

/// A round's packets between stages, and the batch it waits for; allocated
/// once, when the worker starts, and reused.
pub(super) struct Round {
    /// Packets of streams relayed as they are.
    pub relayed: Vec<Pkt>,
    /// Packets of streams with a transcoder, until it runs.
    pub coded: Vec<Pkt>,
    /// What the transcoders made of them, in each stream's order.
    pub transcoded: Vec<Pkt>,
    /// Subscribers' copies of the round's packets (forks).
    pub forked: Vec<Pkt>,
    /// What the players made for this round.
    pub played: Vec<Pkt>,
    pub phase: Phase,
    /// The batch the engine's lane holds for it.
    pub ticket: Option<Ticket>,
    /// The verdicts of its last batch, in the batch's order.
    pub verdicts: Box<[Outcome]>,
}

impl Round {
    fn new() -> Round {
        let q = || Vec::with_capacity(MAX_LOOP_PACKETS);
        Round {
            relayed: q(),
            coded: q(),
            transcoded: q(),
            forked: q(),
            played: q(),
            phase: Phase::Done,
            ticket: None,
            verdicts: vec![Outcome::Pending; MAX_BATCH].into_boxed_slice(),
        }
    }
}

/// The rounds in flight, oldest first, and the spare ones.
pub(super) struct Flight {
    rounds: VecDeque<Round>,
    spare: Vec<Round>,
}

impl Flight {
    /// Room for `depth` rounds in flight (at least one).
    pub fn new(depth: usize) -> Flight {
        let depth = depth.max(1);
        Flight { rounds: VecDeque::with_capacity(depth), spare: (0..depth).map(|_| Round::new()).collect() }
    }

    /// Whether a round is in flight.
    pub fn busy(&self) -> bool {
        !self.rounds.is_empty()
    }
}

impl<E: Engine> Shard<E>
where
    E::Keys: 'static,
{
    /// Begins a round with what the backend delivered into `q.rx` (and what
    /// the players have), after the oldest round in flight completed if
    /// the lane holds no more; then moves the rounds in flight on.
    pub(super) fn fly(&mut self, f: &mut Flight, q: &mut Queues<E::Keys>, lap: &mut Lap) {
        if f.spare.is_empty() {
            self.stats.lane_wait();
            self.land_oldest(f, q, lap);
        }
        if let Some(mut r) = f.spare.pop() {
            self.begin(&mut r, q, lap);
            f.rounds.push_back(r);
        }
        self.advance(f, q, lap);
    }

    /// Moves the rounds in flight on, oldest first, each as far as its
    /// lane's batches are done; stops at the first whose batch is not.
    pub(super) fn advance(&mut self, f: &mut Flight, q: &mut Queues<E::Keys>, lap: &mut Lap) {
        while let Some(r) = f.rounds.front_mut() {
            let waits = match (&r.ticket, self.lane.as_mut()) {
                (Some(t), Some(lane)) => !lane.is_done(t),
                _ => false,
            };
            if waits {
                return;
            }
            self.step(r, q, lap);
            if r.phase == super::flight::Phase::Done {
                let r = f.rounds.pop_front().expect("the front round");
                f.spare.push(r);
            }
        }
    }

    /// Completes every round in flight, waiting for the lane.
    pub(super) fn land(&mut self, f: &mut Flight, q: &mut Queues<E::Keys>, lap: &mut Lap) {
        if f.busy() {
            self.stats.lane_wait();
        }
        while f.busy() {
            self.land_oldest(f, q, lap);
        }
    }

    /// Completes the oldest round in flight, waiting for the lane.
    fn land_oldest(&mut self, f: &mut Flight, q: &mut Queues<E::Keys>, lap: &mut Lap) {
        let Some(mut r) = f.rounds.pop_front() else { return };
        while r.phase != Phase::Done {
            self.step(&mut r, q, lap);
        }
        f.spare.push(r);
    }
}
