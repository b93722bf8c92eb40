//! What a worker owns: its streams, the I/O backend their sockets are
//! registered with, the buffer pool, the engine; and how a stream comes
//! into the shard and leaves it.

use super::command::LegSockets;
use super::lent::LentBufs;
use super::packet::token;
use super::signal::Signal;
use super::stream::{CallKey, Leg, Stream};
use super::streams::Streams;
use super::tap::Tap;
use crate::io::{Datagram, Io};
use crate::pool::Pool;
use crate::stats::WorkerStats;
use srtp::Engine;
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

pub(super) struct Shard<E: Engine>
where
    E::Keys: 'static,
{
    /// The worker's own lane to the engine's device (`None`: the engine
    /// runs batches on this thread). Declared before `engine`, `streams`
    /// and `pool`, whose keys and frames its batches name.
    pub lane: Option<Box<dyn srtp::Lane<E::Keys>>>,
    pub engine: E,
    /// Declared before `pool`: a backend that registered the pool's region
    /// (AF_XDP) is dropped first.
    pub io: Box<dyn Io>,
    pub streams: Streams<E>,
    pub pool: Pool,
    pub stats: Arc<WorkerStats>,
    /// The pool's region is registered with the engine.
    pub registered: bool,
    /// Where STUN and DTLS datagrams of ICE/DTLS legs go.
    pub signal: Option<crossbeam_channel::Sender<Signal>>,
    /// The buffers those datagrams travel in.
    pub signal_bufs: LentBufs,
    /// Where recorded calls' packets go (`None`: recording is off).
    pub tap: Option<Tap>,
    /// Where the digits endpoints send are reported (`None`: no DTMF log).
    pub dtmf: Option<crossbeam_channel::Sender<srtpgate_codec::dtmf::SentDigit>>,
    /// Where the RTCP the endpoints send is copied for call quality
    /// (`None`: call quality is off).
    pub quality: Option<crossbeam_channel::Sender<srtpgate_quality::RtcpCopy>>,
    /// The legs (slot, party) whose player may have something to play.
    pub playing: Vec<(u32, u8)>,
    /// The delay bound (ns; 0: none): see [`crate::WorkerConfig::stale_ns`].
    pub stale_ns: u64,
}

impl<E: Engine> std::ops::Drop for Shard<E>
where
    E::Keys: 'static,
{
    fn drop(&mut self) {
        if self.registered {
            self.engine.unregister_memory(self.pool.region().as_ptr() as *mut u8);
        }
    }
}

impl<E: Engine> Shard<E>
where
    E::Keys: 'static,
{
    /// A new stream of a call on its two legs' sockets.
    pub fn add_stream(&mut self, call: CallKey, index: usize, legs: [LegSockets; 2]) -> std::io::Result<()> {
        self.adopt(Stream { call, index, legs: legs.map(|s| Leg::new(s.rtp, s.rtcp, s.stats)), record: false })
    }

    /// Takes a stream, new or handed over by another worker: a free slot,
    /// its sockets registered with this worker's backend, its latched peers
    /// told to the backend (the AF_XDP map names the owning worker).
    pub fn adopt(&mut self, s: Stream<E>) -> std::io::Result<()> {
        let slot = self.streams.reserve();
        for (i, d) in s.legs.iter().enumerate() {
            let added = self
                .io
                .add(token(slot, i, false), d.rtp.as_raw_fd())
                .and_then(|()| self.io.add(token(slot, i, true), d.rtcp.as_raw_fd()));
            if let Err(e) = added {
                for (j, d) in s.legs.iter().enumerate().take(i + 1) {
                    self.io.remove(token(slot, j, false), d.rtp.as_raw_fd());
                    self.io.remove(token(slot, j, true), d.rtcp.as_raw_fd());
                }
                self.streams.give_back(slot);
                return Err(e);
            }
        }
        for (i, d) in s.legs.iter().enumerate() {
            // A player handed over with its call goes on here.
            if d.player.as_ref().is_some_and(|p| !p.idle()) {
                self.playing.push((slot, i as u8));
            }
            if d.latched_rtp {
                self.io.latch(token(slot, i, false), d.peer_rtp);
            }
            if d.latched_rtcp {
                self.io.latch(token(slot, i, true), d.peer_rtcp);
            }
        }
        self.streams.put(slot, s);
        self.stats.legs.fetch_add(2, Relaxed);
        Ok(())
    }

    /// Takes the stream in `slot` off the backend and out of the shard and
    /// returns it (dropping it closes its sockets). Datagrams of this round
    /// from its sockets (in `rx`) are dropped as stray: they must not reach
    /// a stream that takes the slot next.
    pub fn remove(&mut self, slot: u32, rx: &mut Vec<Datagram>) -> Option<Stream<E>> {
        let s = self.streams.take(slot)?;
        self.release_sockets(slot, &s, rx);
        Some(s)
    }

    /// Takes every stream of a call off the backend and out of the shard
    /// (see [`Shard::remove`]).
    pub fn remove_call(&mut self, call: CallKey, rx: &mut Vec<Datagram>) -> Vec<Stream<E>> {
        let taken: Vec<(u32, Stream<E>)> = self.streams.take_call(call).collect();
        taken
            .into_iter()
            .map(|(slot, s)| {
                self.release_sockets(slot, &s, rx);
                s
            })
            .collect()
    }

    fn release_sockets(&mut self, slot: u32, s: &Stream<E>, rx: &mut Vec<Datagram>) {
        for (i, d) in s.legs.iter().enumerate() {
            self.io.remove(token(slot, i, false), d.rtp.as_raw_fd());
            self.io.remove(token(slot, i, true), d.rtcp.as_raw_fd());
        }
        self.stats.legs.fetch_sub(2, Relaxed);
        let (pool, stats) = (&mut self.pool, &self.stats);
        rx.retain_mut(|d| {
            if d.tok / 4 != slot {
                return true;
            }
            stats.stray();
            if !d.pool_exhausted() {
                pool.put(std::mem::take(&mut d.buf));
            }
            false
        });
    }
}
