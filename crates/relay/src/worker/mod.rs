//! A worker thread: it owns the sockets of the media streams given to it
//! (its [`shard`]), receives what arrived on any of them through its I/O
//! backend, runs the crypto of everything that arrived in one round as two
//! engine batches (unprotect with the sending leg's keys, then protect with
//! the receiving leg's), and sends through the backend. The round's stages
//! are in [`round`].
//!
//! With the CPU engine a batch runs on this thread, packet after packet (run
//! to completion); with the GPU engine the same batch is one transfer. All
//! state a packet touches (sockets, contexts, counters) belongs to this
//! thread: no lock, and no allocation per packet (buffers come from the
//! worker's [`Pool`]).
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | the commands and their types, the worker's loop |
//! | `command.rs` | each command applied to the shard |
//! | `shard.rs` | what a worker owns; streams coming and going |
//! | `streams.rs` | the streams by slot, and their BUNDLE links |
//! | `stream.rs` | a stream and its two legs |
//! | `packet.rs` | a packet and its fate; tokens, RTP/RTCP, the mid extension |
//! | `round.rs` | the round's stages |
//! | `transcode.rs` | the transcode stage |
//! | `signal.rs` | STUN/DTLS datagrams for the control thread |

mod command;
mod packet;
mod round;
mod shard;
mod signal;
mod stream;
mod streams;
mod transcode;

pub use signal::{Signal, SignalData, SIGNAL_BUFS};

use crate::io::{self, Wake};
use crate::pool::Pool;
use crate::stats::{LegStats, WorkerStats};
use crate::WorkerConfig;
use crossbeam_channel::{Receiver, TryRecvError};
use round::Queues;
use shard::Shard;
use signal::SignalBufs;
use srtp::{Context, Engine};
use srtpgate_codec::transcode::Transcoder;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Identifies a call across the control thread and the workers.
pub type CallKey = u64;

/// Most packets one loop can handle (one engine batch); the configured batch
/// is at most this.
pub const MAX_LOOP_PACKETS: usize = 1024;

/// The sockets of one leg of a media stream: where that leg's endpoint
/// sends, and where the relay sends to it from.
pub struct LegSockets {
    /// RTP socket.
    pub rtp: UdpSocket,
    /// RTCP socket (RTP port + 1; idle when the endpoint multiplexes RTCP).
    pub rtcp: UdpSocket,
    /// Counters of this leg.
    pub stats: Arc<LegStats>,
}

/// What the signalling agreed for one leg; `None` fields keep what is set.
pub struct LegConfig<E: Engine> {
    /// The endpoint's RTP and RTCP addresses from its SDP (re-learnt from
    /// the first valid packet).
    pub peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// The endpoint multiplexes RTCP on the RTP port (RFC 5761).
    pub rtcp_mux: bool,
    /// Context that unprotects what the endpoint sends (inner `None`: plain RTP).
    pub rx: Option<Option<Context<E>>>,
    /// Context that protects what the relay sends to the endpoint (inner `None`: plain RTP).
    pub tx: Option<Option<Context<E>>>,
    /// A tag of the key of `tx` (when `tx` is given), which
    /// [`Cmd::Reserve`] must name.
    pub tx_key: u64,
    /// The sending context (new or kept) protects only indices reserved by
    /// [`Cmd::Reserve`] (calls kept across restarts).
    pub reserving: bool,
    /// Accept a new source address after latching (media handover); SRTP
    /// legs always may re-latch on an authenticated packet.
    pub handover: bool,
    /// Transcoding of the RTP this leg sends, before it is protected for
    /// the other leg (inner `None`: pass-through).
    pub transcode: Option<Option<Box<Transcoder>>>,
    /// The leg speaks ICE and/or DTLS on its port: datagrams that are not
    /// RTP or RTCP by RFC 7983's first-byte rule (STUN 0–3, DTLS 20–63) go
    /// to the control thread as [`Signal`]s.
    pub demux: bool,
    /// Its SRTP keys come from a DTLS handshake that has not finished:
    /// media from and to it is dropped (`no_destination`) until
    /// [`Cmd::Keys`] brings them.
    pub keys_pending: bool,
    /// The leg is bundled (RFC 8843) into the transport of this stream's
    /// leg (another stream of the call): its media comes in and goes out
    /// through that stream's port, to that stream's ICE peer.
    pub bundle: Option<usize>,
    /// The RTP payload types of this leg's m-line: on a bundled leg,
    /// what the transport's port hands to this stream.
    pub payload_types: Vec<u8>,
    /// RTP to this leg carries the stream's `a=mid` in this RTP header
    /// extension (RFC 8843 §15; one-byte form, RFC 8285: id 1–14, mid of
    /// 1–16 bytes), so that a bundling endpoint can tell the streams apart
    /// without knowing their SSRCs.
    pub mid_ext: Option<(u8, Vec<u8>)>,
}

/// Commands from the control thread.
pub enum Cmd<E: Engine> {
    /// A new media stream of a call, with its two legs' sockets.
    AddStream { call: CallKey, stream: usize, legs: [LegSockets; 2] },
    /// The negotiated parameters of one leg of a stream.
    Configure { call: CallKey, stream: usize, party: usize, config: Box<LegConfig<E>> },
    /// Close every stream of a call.
    RemoveCall { call: CallKey },
    /// Close one stream of a call (a refused re-offer that had added it).
    RemoveStream { call: CallKey, stream: usize },
    /// The SRTP contexts of a leg whose keys a DTLS handshake agreed:
    /// `rx` unprotects what its endpoint sends, `tx` protects what the relay
    /// sends to it.
    Keys { call: CallKey, stream: usize, party: usize, rx: Box<Context<E>>, tx: Box<Context<E>> },
    /// A leg's peer chosen by ICE (a valid check, nominated or first):
    /// media to the leg goes there (RTCP too, which ICE legs multiplex).
    Latch { call: CallKey, stream: usize, party: usize, peer: SocketAddr },
    /// A datagram the control thread sends from a leg's RTP port (STUN
    /// answers, DTLS records).
    Send { call: CallKey, stream: usize, party: usize, to: SocketAddr, data: Vec<u8> },
    /// Hand every stream of a call, with all its state (sockets, latched
    /// peers, contexts, transcoders), to another worker; then report on
    /// `done` how many streams went. Datagrams of the call already read in
    /// this round are dropped (counted as stray).
    MoveCall { call: CallKey, to: Mover<E>, done: std::sync::mpsc::SyncSender<usize> },
    /// Streams another worker handed over ([`Cmd::MoveCall`]).
    Adopt { streams: Vec<Moved<E>> },
    /// Report where every keyed leg's SRTP contexts stand (for the call
    /// state kept across restarts): one [`LegState`] per leg with a
    /// context. Allocates: the control thread asks a few times a second.
    Snapshot { reply: std::sync::mpsc::Sender<Vec<LegState>> },
    /// Reserve the SRTP and SRTCP indices of `ssrc` on a leg's sending
    /// context up to these (inclusive; no SRTP index: none yet), once the
    /// reservation is persisted. Applied only while the leg's sending key
    /// is still `key` ([`LegConfig::tx_key`]): a reservation made for a
    /// key that a re-INVITE replaced must not reach the new one.
    Reserve { call: CallKey, stream: usize, party: usize, key: u64, ssrc: u32, rtp: Option<u64>, rtcp: u32 },
    /// Leave the loop.
    Stop,
}

/// Where one leg's SRTP contexts stand ([`Cmd::Snapshot`]).
#[derive(Debug)]
pub struct LegState {
    /// The call.
    pub call: CallKey,
    /// Its media stream.
    pub stream: usize,
    /// The leg.
    pub party: usize,
    /// The streams of the context that unprotects what the endpoint sends.
    pub rx: Vec<srtp::StreamState>,
    /// Its master keys' use.
    pub rx_uses: Vec<(u64, u64)>,
    /// The streams of the context that protects what goes to the endpoint.
    pub tx: Vec<srtp::StreamState>,
    /// Its master keys' use.
    pub tx_uses: Vec<(u64, u64)>,
    /// A packet towards the endpoint waited for a reservation since the
    /// last snapshot: its SSRC, the index it needed, and whether SRTCP.
    pub wanted: Option<(u32, u64, bool)>,
}

/// A stream on its way from one worker to another (opaque).
pub struct Moved<E: Engine>(stream::Stream<E>);

/// Where a worker sends the streams it hands over: another worker's command
/// channel and waker.
pub struct Mover<E: Engine> {
    pub(crate) tx: crossbeam_channel::Sender<Cmd<E>>,
    pub(crate) waker: Arc<dyn Wake>,
}

/// A worker: its shard and the round's queues.
pub struct Worker<E: Engine>
where
    E::Keys: 'static,
{
    shard: Shard<E>,
    queues: Queues<E::Keys>,
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
        let pool = if cfg.io.kind == io::IoKind::Xdp {
            Pool::with_headroom(cfg.buffers.max(io::xdp::MIN_FRAMES))
        } else {
            Pool::new(cfg.buffers)
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
        let shard = Shard {
            engine,
            io,
            streams: streams::Streams::new(),
            pool,
            stats,
            registered,
            signal: cfg.signal.clone(),
            signal_bufs: SignalBufs::new(),
        };
        Ok(Worker {
            shard,
            queues: Queues::new(),
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
        loop {
            let idle = if self.busy_poll || more { Duration::ZERO } else { Duration::from_millis(500) };
            let shard = &mut self.shard;
            let round = shard.io.wait(idle, self.max_batch, &mut shard.pool, &mut self.queues.rx);
            more = round.more;
            if round.woken || !self.cmds.is_empty() {
                loop {
                    match self.cmds.try_recv() {
                        Ok(Cmd::Stop) | Err(TryRecvError::Disconnected) => return,
                        Ok(cmd) => self.shard.command(cmd, &mut self.queues.rx),
                        Err(TryRecvError::Empty) => break,
                    }
                }
            }
            self.shard.round(&mut self.queues);
            self.shard.stats.pool_free.store(self.shard.pool.free() as u64, Relaxed);
        }
    }
}
