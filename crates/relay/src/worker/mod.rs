//! A worker thread: it owns the sockets of the media streams given to it
//! (its shard), receives what arrived on any of them through its I/O
//! backend, runs the crypto of everything that arrived in one round as two
//! engine batches (unprotect with the sending leg's keys, then protect with
//! the receiving leg's), and sends through the backend. The round's stages
//! are in `round.rs`.
//!
//! With the CPU engine a batch runs on this thread, packet after packet (run
//! to completion); with the GPU engine the same batch is one transfer, and
//! the worker goes on with its next round while the device runs it
//! (asynchronous rounds, `flight.rs`). All
//! state a packet touches (sockets, contexts, counters) belongs to this
//! thread: no lock, and no allocation per packet (buffers come from the
//! worker's [`Pool`]).
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the worker and its loop |
//! | `command.rs` | the commands and the types they carry |
//! | `apply.rs` | each command applied to the shard |
//! | `shard.rs` | what a worker owns; streams coming and going |
//! | `streams.rs` | the streams by slot, and their BUNDLE links |
//! | `stream.rs` | a stream and its two legs |
//! | `packet.rs` | a packet and its fate; tokens, RTP/RTCP, the mid extension |
//! | `round.rs` | the round's stages |
//! | `flight.rs` | the rounds in flight while the engine's lane (the GPU) runs their batches |
//! | `transcode.rs` | the transcode stage |
//! | `signal.rs` | STUN/DTLS datagrams for the control thread |
//! | `tap.rs` | recorded calls' packets for the recorder |
//! | `fork.rs` | subscribers' copies of a party's packets |
//! | `play.rs` | what the relay plays to an endpoint |
//! | `controls.rs` | block, silence and DTMF block on relayed packets; digits for the DTMF log |
//! | `lent.rs` | the buffers both travel in |

mod apply;
mod command;
mod controls;
mod flight;
mod fork;
mod lent;
mod packet;
mod play;
mod round;
mod shard;
mod signal;
mod stream;
mod streams;
mod tap;
mod transcode;

pub use command::{Cmd, LegConfig, LegSockets, LegState, Moved, Mover};
pub use flight::MAX_BATCH;
pub use fork::{ForkConfig, ForkKey, ForkSockets};
pub use lent::Lent;
pub use play::Play;
pub use round::MAX_LOOP_PACKETS;
pub use signal::{Signal, SIGNAL_BUFS};
pub use srtpgate_codec::dtmf::SentDigit;
pub use stream::CallKey;
pub use tap::{Tapped, RECORD_BUFS};

use crate::io::{self, Wake};
use crate::pool::Pool;
use crate::stats::WorkerStats;
use crate::WorkerConfig;
use crossbeam_channel::{Receiver, TryRecvError};
use flight::Flight;
use lent::LentBufs;
use round::{Lap, Queues};
use shard::Shard;
use srtp::Engine;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tap::Tap;

/// A worker: its shard and the round's queues.
pub struct Worker<E: Engine>
where
    E::Keys: 'static,
{
    shard: Shard<E>,
    queues: Queues<E::Keys>,
    /// The rounds whose batches the engine's lane holds.
    flight: Flight,
    cmds: Receiver<Cmd<E>>,
    /// Packets gathered before the crypto runs: a packet waits for the
    /// others of its batch, so small for the CPU engine, large for the GPU.
    max_batch: usize,
    /// Poll without sleeping: the worker never waits to be woken (which on a
    /// virtual machine can take milliseconds), at the price of a whole core.
    busy_poll: bool,
}

impl<E: Engine + Clone> Worker<E>
where
    E::Keys: 'static,
{
    /// A worker with a pool of `cfg.buffers` packet buffers and its I/O
    /// backend; call on the thread that runs it.
    pub fn new(
        engine: E,
        index: usize,
        cmds: Receiver<Cmd<E>>,
        cfg: WorkerConfig,
        stats: Arc<WorkerStats>,
    ) -> std::io::Result<Worker<E>> {
        // AF_XDP frames need headroom for the headers written in front of
        // a packet, and a page-aligned region to register. A transmitted
        // frame comes back only when the receiver's kernel frees it (copy
        // mode), so that pool keeps at least `xdp::MIN_FRAMES` frames.
        let pool = match (cfg.io.kind, &cfg.io.mem) {
            // The workers' shares of the program's frames, one UMEM.
            (io::IoKind::Xdp, _) => match &cfg.io.xdp {
                Some(prog) => prog.pool(index),
                None => Pool::with_headroom(cfg.buffers.max(io::xdp::MIN_FRAMES)),
            },
            // The simulated NIC's frames are the pool, in its shared file.
            (io::IoKind::Mem, Some(nic)) => nic.pool(index, cfg.buffers)?,
            _ => Pool::new(cfg.buffers),
        };
        let io = io::open(&cfg.io, index, &pool, stats.clone())?;
        // An engine on another device (the GPU) reads and writes the packets
        // in the pool where they lie: the region is registered with it once.
        let region = pool.region();
        // SAFETY: the pool's region stays mapped until the pool is dropped,
        // and `Drop for Worker` unregisters it before the fields are dropped.
        let registered = unsafe { engine.register_memory(region.as_ptr() as *mut u8, region.len(), pool.pitch()) };
        if registered {
            tracing::debug!(
                worker = index,
                "buffer pool ({} bytes) registered with the {} engine",
                region.len(),
                engine.name()
            );
        }
        stats.pool_size.store(pool.size() as u64, Relaxed);
        stats.pool_free.store(pool.free() as u64, Relaxed);
        // An engine on another device gives each worker a lane of its own,
        // which holds the batches of several rounds at once.
        let lane = engine.lane();
        let depth = lane.as_ref().map_or(1, |l| l.depth());
        let shard = Shard {
            lane,
            engine,
            io,
            streams: streams::Streams::new(),
            pool,
            stats,
            registered,
            signal: cfg.signal.clone(),
            signal_bufs: LentBufs::new(SIGNAL_BUFS),
            tap: cfg.recorder.get(index).cloned().map(Tap::new),
            dtmf: cfg.dtmf.clone(),
            quality: cfg.quality.clone(),
            stale_ns: cfg.stale_ns,
            playing: Vec::new(),
        };
        Ok(Worker {
            shard,
            queues: Queues::new(),
            flight: Flight::new(depth),
            cmds,
            max_batch: cfg.batch.clamp(1, MAX_LOOP_PACKETS),
            busy_poll: cfg.busy_poll,
        })
    }

    /// The waker that interrupts the worker's wait.
    pub fn waker(&self) -> Arc<dyn Wake> {
        self.shard.io.waker()
    }

    /// Runs until [`Cmd::Stop`] or until the command channel closes.
    pub fn run(mut self) {
        let mut more = false;
        // The clock's last reading: a round's stages read it at their
        // boundaries ([`round::Lap`]), the loop once after each wait (and
        // after commands, and for a player's due time when it may sleep).
        let mut at = crate::sys::now_ns();
        loop {
            // Rounds in flight: the worker polls their lane between waits.
            let idle = if self.busy_poll || more || self.flight.busy() {
                Duration::ZERO
            } else {
                // A player's next packet bounds the wait.
                let due = self.shard.next_play_ns().map(|t| t.saturating_sub(crate::sys::now_ns()));
                Duration::from_nanos(due.unwrap_or(500_000_000).min(500_000_000))
            };
            let shard = &mut self.shard;
            let round = shard.io.wait(idle, self.max_batch, &mut shard.pool, &mut self.queues.rx);
            let woke = crate::sys::now_ns();
            if !self.queues.rx.is_empty() {
                // The backend's share of a round with packets (not idle waits).
                let io = &self.shard.stats.stage_ns[crate::stats::Stage::Io as usize];
                io.fetch_add(woke.saturating_sub(at), Relaxed);
            }
            more = round.more;
            let mut lap = Lap::starting(woke);
            if round.woken || !self.cmds.is_empty() {
                // A command may change or drop what the batches in flight
                // name: they complete first.
                self.shard.land(&mut self.flight, &mut self.queues, &mut lap);
                loop {
                    match self.cmds.try_recv() {
                        Ok(Cmd::Stop) | Err(TryRecvError::Disconnected) => return,
                        Ok(cmd) => self.shard.command(cmd, &mut self.queues.rx),
                        Err(TryRecvError::Empty) => break,
                    }
                }
                lap = Lap::starting(crate::sys::now_ns());
            }
            // A round for what arrived, or for a player's packet due: not an
            // empty round per pass, which would fill the flight.
            let due = || self.shard.next_play_ns().is_some_and(|t| t <= lap.now());
            if !self.queues.rx.is_empty() || (!self.shard.playing.is_empty() && due()) {
                self.shard.fly(&mut self.flight, &mut self.queues, &mut lap);
            } else if self.flight.busy() {
                self.shard.advance(&mut self.flight, &mut self.queues, &mut lap);
            }
            lap.add_to(&self.shard.stats.stage_ns);
            at = lap.now();
            let stats = &self.shard.stats;
            stats.pool_free.store(self.shard.pool.free() as u64, Relaxed);
            stats.busy_ns.fetch_add(at.saturating_sub(woke), Relaxed);
        }
    }
}

impl<E: Engine> Drop for Worker<E>
where
    E::Keys: 'static,
{
    /// The rounds in flight complete before the contexts, the lane and the
    /// pool their batches name are dropped.
    fn drop(&mut self) {
        let mut lap = Lap::starting(crate::sys::now_ns());
        self.shard.land(&mut self.flight, &mut self.queues, &mut lap);
    }
}
