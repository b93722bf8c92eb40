//! A worker thread: it owns the sockets of the media streams given to it,
//! receives what arrived on any of them through its I/O backend, runs the
//! crypto of everything that arrived in one round as two engine batches
//! (unprotect with the sending leg's keys, then protect with the receiving
//! leg's), and sends through the backend.
//!
//! With the CPU engine a batch runs on this thread, packet after packet (run
//! to completion); with the GPU engine the same batch is one transfer. All
//! state a packet touches (sockets, contexts, counters) belongs to this
//! thread: no lock, and no allocation per packet (buffers come from the
//! worker's [`Pool`]).

use crate::io::{self, Datagram, Io, Wake};
use crate::pool::{Buf, Pool};
use crate::stats::{Drop, LegStats, Transcoded, WorkerStats};
use crate::sys::{self, BATCH};
use crate::WorkerConfig;
use crossbeam_channel::{Receiver, TryRecvError};
use srtp::header::{RtcpHeader, RtpHeader};
use srtp::{Context, Engine, Job, Kind, Op, Outcome, Prepared};
use srtpgate_codec::transcode::Transcoder;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
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

/// A datagram on a leg's port that is not media (STUN, DTLS), for the
/// control thread. Its bytes are in a buffer the worker reuses
/// ([`SignalData`]): ICE checks arrive before anything is authenticated, so
/// a flood of them must not make the worker allocate.
#[derive(Debug)]
pub struct Signal {
    /// The call.
    pub call: CallKey,
    /// Its media stream (m-line index).
    pub stream: usize,
    /// The leg (0 or 1) it arrived on.
    pub party: usize,
    /// Where it came from.
    pub from: SocketAddr,
    /// The datagram.
    pub data: SignalData,
}

/// Most [`Signal`] buffers one worker has out at once; a datagram that finds
/// none free is dropped and counted (`signals_dropped`), as one that finds
/// the control thread's queue full.
pub const SIGNAL_BUFS: usize = 1024;

/// The bytes of a [`Signal`]: a buffer of the worker that sent it, which
/// goes back to that worker when dropped (on whichever thread), so the
/// hand-off allocates only while a worker's set of them grows to the most
/// it needed at once (at most [`SIGNAL_BUFS`]). A pool [`Buf`] cannot make
/// the trip: it belongs to the worker's thread and region.
pub struct SignalData {
    bytes: Vec<u8>,
    /// Where the buffer goes back to (`None`: freed, not reused).
    home: Option<crossbeam_channel::Sender<Vec<u8>>>,
}

impl SignalData {
    /// Bytes not from a worker's set (freed when dropped).
    pub fn new(bytes: Vec<u8>) -> SignalData {
        SignalData { bytes, home: None }
    }
}

impl std::ops::Deref for SignalData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Debug for SignalData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignalData({} bytes)", self.bytes.len())
    }
}

impl std::ops::Drop for SignalData {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            // The channel has room for every buffer the worker made; it is
            // closed only when the worker is gone (then the buffer is freed).
            let _ = home.try_send(std::mem::take(&mut self.bytes));
        }
    }
}

/// A worker's [`SignalData`] buffers: the free ones come back through a
/// channel as the control thread drops its signals.
struct SignalBufs {
    home: crossbeam_channel::Sender<Vec<u8>>,
    free: Receiver<Vec<u8>>,
    /// Buffers made so far (free or out).
    made: usize,
}

impl SignalBufs {
    fn new() -> SignalBufs {
        let (home, free) = crossbeam_channel::bounded(SIGNAL_BUFS);
        SignalBufs { home, free, made: 0 }
    }

    /// A copy of `bytes` in a buffer of the set, or `None` when all
    /// [`SIGNAL_BUFS`] are out.
    fn copy(&mut self, bytes: &[u8]) -> Option<SignalData> {
        let mut b = match self.free.try_recv() {
            Ok(b) => b,
            Err(_) if self.made < SIGNAL_BUFS => {
                self.made += 1;
                Vec::with_capacity(crate::pool::BUF_LEN)
            }
            Err(_) => return None,
        };
        b.clear();
        // No allocation: a datagram is at most a pool buffer long (a longer
        // one, from an AF_XDP frame, grows this buffer once).
        b.extend_from_slice(bytes);
        Some(SignalData { bytes: b, home: Some(self.home.clone()) })
    }
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

struct Leg<E: Engine> {
    rtp: UdpSocket,
    rtcp: UdpSocket,
    stats: Arc<LegStats>,
    peer_rtp: Option<SocketAddr>,
    peer_rtcp: Option<SocketAddr>,
    latched_rtp: bool,
    latched_rtcp: bool,
    mux: bool,
    configured: bool,
    rx: Option<Context<E>>,
    tx: Option<Context<E>>,
    handover: bool,
    transcode: Option<Box<Transcoder>>,
    /// The transcoder failed: this leg's RTP is dropped until the
    /// signalling sets the stream up again.
    transcode_failed: bool,
    /// The sequence numbers of the RTP from the endpoint, for the leg's
    /// expected and lost packets.
    seq: Option<SeqTrack>,
    /// See [`LegConfig::demux`].
    demux: bool,
    /// See [`LegConfig::keys_pending`].
    keys_pending: bool,
    /// See [`LegConfig::bundle`].
    bundle: Option<usize>,
    /// See [`LegConfig::payload_types`] (bit per type).
    pts: u128,
    /// The slot of the stream whose port this bundled leg shares (kept by
    /// [`Worker::relink`]).
    bundle_slot: Option<u32>,
    /// On the leg that owns a BUNDLE transport: the other bundled streams.
    members: Vec<Member>,
    /// See [`LegConfig::mid_ext`]: id, the mid and its length.
    mid_ext: Option<(u8, [u8; 16], u8)>,
    /// A packet to this leg waited for an index reservation (SSRC,
    /// index, SRTCP), for the next [`Cmd::Snapshot`].
    wanted: Option<(u32, u64, bool)>,
    /// [`LegConfig::tx_key`] of `tx`.
    tx_key: u64,
}

/// A stream bundled into another's transport, as that transport's leg
/// sees it: RTP goes to it by payload type, RTCP by the sender's SSRC
/// (learnt from its RTP; RTCP of an SSRC not seen stays with the owner).
#[derive(Clone, Copy)]
struct Member {
    slot: u32,
    pts: u128,
    ssrcs: [u32; 4],
    seen: u8,
}

impl Member {
    fn note_ssrc(&mut self, ssrc: u32) {
        let n = (self.seen as usize).min(self.ssrcs.len());
        if !self.ssrcs[..n].contains(&ssrc) {
            self.ssrcs[n % self.ssrcs.len()] = ssrc;
            self.seen = self.seen.saturating_add(1).min(self.ssrcs.len() as u8);
        }
    }
}

/// Payload types as a bit set.
fn pt_bits(pts: &[u8]) -> u128 {
    pts.iter().filter(|&&p| p < 128).fold(0, |m, &p| m | 1u128 << p)
}

/// Expected RTP packets of one leg by sequence number (RFC 3550 A.1, in
/// short): the extended highest sequence number since the count began; a
/// new SSRC or a jump of more than [`SeqTrack::MAX_DROPOUT`] (a restarted
/// sender) begins a new span, the packets of the spans before kept.
#[derive(Clone, Copy, Debug)]
struct SeqTrack {
    ssrc: u32,
    first: u64,
    high: u64,
    before: u64,
}

impl SeqTrack {
    const MAX_DROPOUT: u16 = 3000;

    fn new(ssrc: u32, seq: u16) -> SeqTrack {
        SeqTrack { ssrc, first: 1 << 16 | seq as u64, high: 1 << 16 | seq as u64, before: 0 }
    }

    fn note(&mut self, ssrc: u32, seq: u16) {
        let ahead = seq.wrapping_sub(self.high as u16);
        if ssrc != self.ssrc || (ahead > Self::MAX_DROPOUT && ahead < 0x8000) {
            let before = self.expected();
            *self = SeqTrack { before, ..SeqTrack::new(ssrc, seq) };
        } else if ahead > 0 && ahead < 0x8000 {
            self.high += ahead as u64;
        }
    }

    fn expected(&self) -> u64 {
        self.before + self.high - self.first + 1
    }
}

struct Stream<E: Engine> {
    call: CallKey,
    index: usize,
    legs: [Leg<E>; 2],
}

/// A stream on its way from one worker to another (opaque).
pub struct Moved<E: Engine>(Stream<E>);

/// Where a worker sends the streams it hands over: another worker's command
/// channel and waker.
pub struct Mover<E: Engine> {
    pub(crate) tx: crossbeam_channel::Sender<Cmd<E>>,
    pub(crate) waker: Arc<dyn Wake>,
}

/// One packet on its way through the loop.
struct Pkt {
    /// Buffer holding the packet as received.
    a: Buf,
    /// Second buffer for the transformed packet (taken when needed).
    b: Option<Buf>,
    /// The current bytes are in `b`.
    in_b: bool,
    len: usize,
    slot: u32,
    party: u8,
    kind: Kind,
    from: SocketAddr,
    rx_ns: u64,
    prep: Option<Prepared>,
    /// What became of it so far.
    fate: Fate,
}

/// What becomes of a packet in a round: one of these, never two.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    /// On its way to the other leg.
    Forward,
    /// Dropped, and why (counted once, when the round returns its buffers).
    Dropped(Drop),
    /// Taken by a transcoder that sends nothing for it yet (its audio
    /// waits for the rest of an output packet): accepted, not a drop.
    Absorbed,
    /// Handed to the backend as a frame (its buffer went with it).
    Sent,
}

impl Fate {
    fn is_dropped(self) -> bool {
        matches!(self, Fate::Dropped(_))
    }
}

impl Pkt {
    fn bytes(&self) -> &[u8] {
        let buf = if self.in_b { self.b.as_deref().unwrap_or(&[]) } else { &self.a[..] };
        &buf[..self.len.min(buf.len())]
    }
}

/// The worker's state.
pub struct Worker<E: Engine>
where
    E::Keys: 'static,
{
    engine: E,
    /// Declared before `pool`: a backend that registered the pool's region
    /// (AF_XDP) is dropped first.
    io: Box<dyn Io>,
    cmds: Receiver<Cmd<E>>,
    /// Boxed: a stream is tens of kilobytes, and a vector of them inline
    /// moved all of them when it grew (tens of milliseconds at a few
    /// hundred calls, with every packet of the worker waiting).
    streams: Vec<Option<Box<Stream<E>>>>,
    free_slots: Vec<u32>,
    /// The slots of each call's streams. Commands find their stream through
    /// it: a scan of every slot costs a cache miss per stream (a stream is
    /// large), and at thousands of calls coming and going that scan held
    /// the packets of every other call for tens of milliseconds.
    by_call: HashMap<CallKey, Vec<u32>>,
    pool: Pool,
    stats: Arc<WorkerStats>,
    /// What the backend delivered this round, before it becomes packets.
    rx: Vec<Datagram>,
    pkts: Vec<Pkt>,
    /// Packets gathered before the crypto runs: a packet waits for the
    /// others of its batch, so small for the CPU engine, large for the GPU.
    max_batch: usize,
    /// Poll without sleeping: the worker never waits to be woken (which on a
    /// virtual machine can take milliseconds), at the price of a whole core.
    busy_poll: bool,
    jobs: Vec<Job<'static, E::Keys>>,
    /// Packets a transcoder added this round, after the index of the packet
    /// they came from; and the vector the round's packets are reordered
    /// through (both allocated once).
    extra: Vec<(usize, Pkt)>,
    spare: Vec<Pkt>,
    /// The round's packets of transcoded streams, run after the others left.
    later: Vec<Pkt>,
    /// The pool's region is registered with the engine.
    registered: bool,
    /// Where STUN and DTLS datagrams of ICE/DTLS legs go.
    signal: Option<crossbeam_channel::Sender<Signal>>,
    /// The buffers those datagrams travel in.
    signal_bufs: SignalBufs,
}

impl<E: Engine> std::ops::Drop for Worker<E>
where
    E::Keys: 'static,
{
    fn drop(&mut self) {
        if self.registered {
            self.engine.unregister_memory(self.pool.region().as_ptr() as *mut u8);
        }
    }
}

/// The backend's token of one socket.
fn token(slot: u32, party: usize, rtcp: bool) -> u32 {
    slot * 4 + party as u32 * 2 + rtcp as u32
}

/// Reuses a vector's allocation for another element type of the same layout
/// (here: the same type with another lifetime), so the loop's scratch vectors
/// are allocated once. Done by hand: `collect()` reusing the source's
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
        Ok(Worker {
            engine,
            io,
            cmds,
            streams: Vec::new(),
            free_slots: Vec::new(),
            by_call: HashMap::new(),
            pool,
            stats,
            rx: Vec::with_capacity(MAX_LOOP_PACKETS),
            pkts: Vec::with_capacity(MAX_LOOP_PACKETS),
            max_batch: cfg.batch.clamp(1, MAX_LOOP_PACKETS),
            busy_poll: cfg.busy_poll,
            jobs: Vec::with_capacity(MAX_LOOP_PACKETS),
            extra: Vec::with_capacity(MAX_LOOP_PACKETS),
            spare: Vec::with_capacity(MAX_LOOP_PACKETS),
            later: Vec::with_capacity(MAX_LOOP_PACKETS),
            registered,
            signal: cfg.signal.clone(),
            signal_bufs: SignalBufs::new(),
        })
    }

    /// The waker that interrupts the worker's wait.
    pub fn waker(&self) -> Arc<dyn Wake> {
        self.io.waker()
    }

    /// Runs until [`Cmd::Stop`] or until the command channel closes.
    pub fn run(mut self) {
        let mut more = false;
        loop {
            let idle = if self.busy_poll || more { Duration::ZERO } else { Duration::from_millis(500) };
            let round = self.io.wait(idle, self.max_batch, &mut self.pool, &mut self.rx);
            more = round.more;
            if round.woken || !self.cmds.is_empty() {
                loop {
                    match self.cmds.try_recv() {
                        Ok(Cmd::Stop) | Err(TryRecvError::Disconnected) => return,
                        Ok(cmd) => self.command(cmd),
                        Err(TryRecvError::Empty) => break,
                    }
                }
            }
            self.admit();
            self.process();
            self.stats.pool_free.store(self.pool.free() as u64, Relaxed);
        }
    }

    fn command(&mut self, cmd: Cmd<E>) {
        match cmd {
            Cmd::AddStream { call, stream, legs } => {
                if let Err(e) = self.add_stream(call, stream, legs) {
                    tracing::error!(call, "cannot register media sockets: {e}");
                }
            }
            Cmd::Configure { call, stream, party, config } => {
                let Some(slot) = self.slot_of(call, stream) else { return };
                let Some(Some(s)) = self.streams.get_mut(slot) else { return };
                let Some(d) = s.legs.get_mut(party) else { return };
                if let Some((rtp, rtcp)) = config.peer {
                    if (rtp, rtcp) != (d.peer_rtp, d.peer_rtcp) || !d.configured {
                        d.peer_rtp = rtp;
                        d.peer_rtcp = rtcp;
                        d.latched_rtp = false;
                        d.latched_rtcp = false;
                        self.io.latch(token(slot as u32, party, false), None);
                        self.io.latch(token(slot as u32, party, true), None);
                    }
                }
                d.mux = config.rtcp_mux;
                if let Some(rx) = config.rx {
                    d.rx = rx;
                }
                if let Some(tx) = config.tx {
                    d.tx = tx;
                    d.tx_key = config.tx_key;
                }
                if let Some(tx) = d.tx.as_mut().filter(|t| t.reserving() != config.reserving) {
                    tx.set_reserving(config.reserving);
                }
                d.handover = config.handover;
                if let Some(t) = config.transcode {
                    d.transcode = t;
                    d.transcode_failed = false;
                }
                d.demux = config.demux;
                d.keys_pending = config.keys_pending;
                d.configured = true;
                let relink = d.bundle.is_some() || config.bundle.is_some() || !d.members.is_empty();
                d.bundle = config.bundle.filter(|&b| b != stream);
                d.pts = pt_bits(&config.payload_types);
                d.mid_ext =
                    config.mid_ext.as_ref().filter(|(id, m)| (1..=14).contains(id) && (1..=16).contains(&m.len())).map(
                        |(id, m)| {
                            let mut b = [0u8; 16];
                            b[..m.len()].copy_from_slice(m);
                            (*id, b, m.len() as u8)
                        },
                    );
                if relink {
                    self.relink(call);
                }
            }
            Cmd::Keys { call, stream, party, rx, tx } => {
                if let Some((_, d)) = self.leg_mut(call, stream, party) {
                    d.rx = Some(*rx);
                    d.tx = Some(*tx);
                    d.tx_key = 0;
                    d.keys_pending = false;
                }
            }
            Cmd::Send { call, stream, party, to, data } => {
                if let Some((_, d)) = self.leg_mut(call, stream, party) {
                    if let Err(e) = d.rtp.send_to(&data, to) {
                        tracing::debug!(call, "sending a STUN/DTLS datagram to {to}: {e}");
                        self.stats.signal(false);
                    }
                }
            }
            Cmd::Latch { call, stream, party, peer } => {
                let mut changed = None;
                if let Some((slot, d)) = self.leg_mut(call, stream, party) {
                    if d.peer_rtp != Some(peer) || !d.latched_rtp {
                        d.peer_rtp = Some(peer);
                        d.latched_rtp = true;
                        changed = Some(slot);
                    }
                    if d.mux {
                        d.peer_rtcp = Some(peer);
                    }
                }
                if let Some(slot) = changed {
                    self.io.latch(token(slot as u32, party, false), Some(peer));
                }
            }
            Cmd::RemoveCall { call } => {
                for slot in self.by_call.remove(&call).unwrap_or_default() {
                    self.remove_slot(slot as usize);
                }
            }
            Cmd::RemoveStream { call, stream } => {
                if let Some(slot) = self.slot_of(call, stream) {
                    self.remove_slot(slot);
                    self.relink(call);
                }
            }
            Cmd::MoveCall { call, to, done } => {
                let mut moved = Vec::new();
                for slot in self.by_call.remove(&call).unwrap_or_default() {
                    moved.extend(self.remove_slot(slot as usize).map(Moved));
                }
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
                    self.relink(call);
                }
            }
            Cmd::Snapshot { reply } => {
                let mut out = Vec::new();
                for s in self.streams.iter_mut().flatten() {
                    for (k, d) in s.legs.iter_mut().enumerate() {
                        if d.rx.is_none() && d.tx.is_none() {
                            continue;
                        }
                        out.push(LegState {
                            call: s.call,
                            stream: s.index,
                            party: k,
                            rx: d.rx.as_ref().map(Context::streams_state).unwrap_or_default(),
                            rx_uses: d.rx.as_ref().map(Context::key_uses).unwrap_or_default(),
                            tx: d.tx.as_ref().map(Context::streams_state).unwrap_or_default(),
                            tx_uses: d.tx.as_ref().map(Context::key_uses).unwrap_or_default(),
                            wanted: d.wanted.take(),
                        });
                    }
                }
                let _ = reply.send(out);
            }
            Cmd::Reserve { call, stream, party, key, ssrc, rtp, rtcp } => {
                if let Some((_, d)) = self.leg_mut(call, stream, party) {
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

    /// Links the bundled legs of a call's streams to the stream whose
    /// transport they share (slots change when streams come, go or move).
    fn relink(&mut self, call: CallKey) {
        let mine: Vec<(usize, u32)> = self
            .by_call
            .get(&call)
            .into_iter()
            .flatten()
            .filter_map(|&slot| self.streams.get(slot as usize)?.as_ref().map(|s| (s.index, slot)))
            .collect();
        // The SSRCs learnt so far stay with their stream: (leg, member).
        let mut learnt: Vec<(usize, Member)> = Vec::new();
        let mut links: Vec<(u32, usize, u32, u128)> = Vec::new();
        for &(_, slot) in &mine {
            let Some(Some(s)) = self.streams.get_mut(slot as usize) else { continue };
            for (party, d) in s.legs.iter_mut().enumerate() {
                learnt.extend(d.members.drain(..).map(|m| (party, m)));
                d.bundle_slot = d.bundle.and_then(|b| mine.iter().find(|(i, _)| *i == b).map(|&(_, ps)| ps));
                if let Some(owner) = d.bundle_slot {
                    links.push((owner, party, slot, d.pts));
                }
            }
        }
        for (owner, party, slot, pts) in links {
            let (ssrcs, seen) = learnt
                .iter()
                .find(|(s, m)| *s == party && m.slot == slot)
                .map(|(_, m)| (m.ssrcs, m.seen))
                .unwrap_or(([0; 4], 0));
            if let Some(Some(o)) = self.streams.get_mut(owner as usize) {
                o.legs[party].members.push(Member { slot, pts, ssrcs, seen });
            }
        }
    }

    /// The slot of a call's stream.
    fn slot_of(&self, call: CallKey, stream: usize) -> Option<usize> {
        self.by_call
            .get(&call)?
            .iter()
            .map(|&slot| slot as usize)
            .find(|&slot| self.streams.get(slot).is_some_and(|s| s.as_ref().is_some_and(|s| s.index == stream)))
    }

    /// One leg of a stream, with the stream's slot.
    fn leg_mut(&mut self, call: CallKey, stream: usize, party: usize) -> Option<(usize, &mut Leg<E>)> {
        let slot = self.slot_of(call, stream)?;
        let d = self.streams.get_mut(slot)?.as_mut()?.legs.get_mut(party)?;
        Some((slot, d))
    }

    /// Takes a stream, new or handed over by another worker: a free slot,
    /// its sockets registered with this worker's backend, its latched peers
    /// told to the backend (the AF_XDP map names the owning worker).
    fn adopt(&mut self, s: Stream<E>) -> std::io::Result<()> {
        let slot = self.free_slot();
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
                self.free_slots.push(slot);
                return Err(e);
            }
        }
        for (i, d) in s.legs.iter().enumerate() {
            if d.latched_rtp {
                self.io.latch(token(slot, i, false), d.peer_rtp);
            }
            if d.latched_rtcp {
                self.io.latch(token(slot, i, true), d.peer_rtcp);
            }
        }
        self.by_call.entry(s.call).or_default().push(slot);
        self.streams[slot as usize] = Some(Box::new(s));
        self.stats.legs.fetch_add(2, Relaxed);
        Ok(())
    }

    /// A free stream slot (the vector grows when none is).
    fn free_slot(&mut self) -> u32 {
        match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.streams.push(None);
                (self.streams.len() - 1) as u32
            }
        }
    }

    /// Takes the stream in `slot` off the backend, frees the slot and
    /// returns the stream (dropping it closes its sockets).
    fn remove_slot(&mut self, slot: usize) -> Option<Stream<E>> {
        let taken = self.streams[slot].take();
        if let Some(s) = &taken {
            if let Some(slots) = self.by_call.get_mut(&s.call) {
                slots.retain(|&x| x as usize != slot);
                if slots.is_empty() {
                    self.by_call.remove(&s.call);
                }
            }
            for (i, d) in s.legs.iter().enumerate() {
                self.io.remove(token(slot as u32, i, false), d.rtp.as_raw_fd());
                self.io.remove(token(slot as u32, i, true), d.rtcp.as_raw_fd());
            }
            self.stats.legs.fetch_sub(2, Relaxed);
        }
        // Datagrams of this round from its sockets must not reach a stream
        // that takes the slot next.
        let pool = &mut self.pool;
        let stats = &self.stats;
        self.rx.retain_mut(|d| {
            if d.tok / 4 != slot as u32 {
                return true;
            }
            stats.stray();
            if !d.pool_exhausted() {
                pool.put(std::mem::take(&mut d.buf));
            }
            false
        });
        self.free_slots.push(slot as u32);
        taken.map(|s| *s)
    }

    fn add_stream(&mut self, call: CallKey, index: usize, legs: [LegSockets; 2]) -> std::io::Result<()> {
        let leg = |s: LegSockets| Leg {
            rtp: s.rtp,
            rtcp: s.rtcp,
            stats: s.stats,
            peer_rtp: None,
            peer_rtcp: None,
            latched_rtp: false,
            latched_rtcp: false,
            mux: false,
            configured: false,
            rx: None,
            tx: None,
            handover: false,
            transcode: None,
            transcode_failed: false,
            seq: None,
            demux: false,
            keys_pending: false,
            bundle: None,
            pts: 0,
            bundle_slot: None,
            members: Vec::new(),
            mid_ext: None,
            wanted: None,
            tx_key: 0,
        };
        self.adopt(Stream { call, index, legs: legs.map(leg) })
    }

    /// Turns what the backend delivered into the round's packets: the leg
    /// by token, its receive counters, RTP or RTCP.
    fn admit(&mut self) {
        let now = sys::now_ns();
        let unknown = SocketAddr::from(([0, 0, 0, 0], 0));
        for d in self.rx.drain(..) {
            let mut slot = d.tok / 4;
            let party = ((d.tok / 2) % 2) as usize;
            let rtcp_port = d.tok % 2 == 1;
            // A BUNDLE transport: media of another stream of the call goes
            // to that stream (RTP by payload type, RTCP by sender SSRC).
            if let Some(Some(owner)) = self.streams.get_mut(slot as usize) {
                let leg = &mut owner.legs[party];
                let b = &d.buf[..d.len.min(d.buf.len())];
                if !leg.members.is_empty() && b.len() >= 12 && (128..=191).contains(&b[0]) {
                    if classify(rtcp_port, leg.mux, b) == Kind::Rtp {
                        let pt = b[1] & 0x7f;
                        let ssrc = u32::from_be_bytes([b[8], b[9], b[10], b[11]]);
                        if let Some(m) = leg.members.iter_mut().find(|m| m.pts >> pt & 1 == 1) {
                            // Learnt before authentication: a forged packet
                            // can at worst send the RTCP of that SSRC to
                            // another stream of the same call, whose
                            // context (the same keys) still checks it.
                            m.note_ssrc(ssrc);
                            slot = m.slot;
                        }
                    } else {
                        let ssrc = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                        if let Some(m) = leg.members.iter().find(|m| m.ssrcs[..m.seen as usize].contains(&ssrc)) {
                            slot = m.slot;
                        }
                    }
                }
            }
            let Some(Some(stream)) = self.streams.get(slot as usize) else {
                self.stats.stray();
                if !d.pool_exhausted() {
                    self.pool.put(d.buf);
                }
                continue;
            };
            let leg = &stream.legs[party];
            if d.pool_exhausted() {
                leg.stats.dropped(Drop::PoolExhausted);
                self.stats.total.dropped(Drop::PoolExhausted);
                continue;
            }
            let len = d.len.min(d.buf.len());
            if leg.demux && !(128..=191).contains(&d.buf.first().copied().unwrap_or(0)) {
                // STUN or DTLS (or noise) on an ICE/DTLS leg: the control
                // thread's business, not the media's.
                let forwarded = match (&self.signal, d.from) {
                    // A full queue is seen before a buffer is taken for it.
                    (Some(tx), Some(from)) if !d.truncated && !tx.is_full() => {
                        match self.signal_bufs.copy(&d.buf[..len]) {
                            Some(data) => tx
                                .try_send(Signal { call: stream.call, stream: stream.index, party, from, data })
                                .is_ok(),
                            None => false,
                        }
                    }
                    _ => false,
                };
                self.stats.signal(forwarded);
                self.pool.put(d.buf);
                continue;
            }
            leg.stats.received(len);
            self.stats.total.received(len);
            let kind = classify(rtcp_port, leg.mux, &d.buf[..len]);
            self.pkts.push(Pkt {
                a: d.buf,
                b: None,
                in_b: false,
                len,
                slot,
                party: party as u8,
                kind,
                from: d.from.unwrap_or(unknown),
                rx_ns: d.rx_ns.unwrap_or(now),
                prep: None,
                fate: if d.truncated || d.from.is_none() { Fate::Dropped(Drop::Malformed) } else { Fate::Forward },
            });
        }
    }

    /// Runs the loop's batch: source checks, unprotect, latch, protect, send;
    /// then counts drops and returns every buffer to the pool.
    fn process(&mut self) {
        if self.pkts.is_empty() {
            return;
        }
        // 1. Source checks, and the unprotect step's prepare (into `b`).
        for p in self.pkts.iter_mut() {
            if p.fate.is_dropped() {
                continue;
            }
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else {
                p.fate = Fate::Dropped(Drop::Other);
                continue;
            };
            let d = &mut s.legs[p.party as usize];
            let (peer, latched) = match (p.kind, d.mux) {
                (Kind::Rtcp, false) => (d.peer_rtcp, d.latched_rtcp),
                _ => (d.peer_rtp, d.latched_rtp),
            };
            // After latching, another source is refused, unless the call
            // allows handover or the leg is SRTP: there a packet from a new
            // address re-latches only once it authenticated.
            if latched && peer != Some(p.from) && !(d.handover || d.rx.is_some()) {
                p.fate = Fate::Dropped(Drop::UnknownPeer);
                continue;
            }
            if !d.configured || d.keys_pending {
                p.fate = Fate::Dropped(Drop::NoDestination);
                continue;
            }
            let bytes = &p.a[..p.len];
            match d.rx.as_mut() {
                Some(ctx) => {
                    let Some(mut b) = p.b.take().or_else(|| self.pool.take()) else {
                        p.fate = Fate::Dropped(Drop::PoolExhausted);
                        continue;
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
        self.transform_step(true);
        // Sequence numbers of the RTP accepted (authenticated, from the
        // leg's peer): the leg's expected packets, for its loss. The header
        // is in the clear in the received buffer.
        for p in self.pkts.iter() {
            if p.fate.is_dropped() || p.kind != Kind::Rtp || p.len < 12 {
                continue;
            }
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else { continue };
            let d = &mut s.legs[p.party as usize];
            let seq = u16::from_be_bytes([p.a[2], p.a[3]]);
            let ssrc = u32::from_be_bytes([p.a[8], p.a[9], p.a[10], p.a[11]]);
            let t = d.seq.get_or_insert(SeqTrack::new(ssrc, seq));
            t.note(ssrc, seq);
            d.stats.rtp_seen(t.expected());
        }
        // Packets of transcoded streams wait for their codecs; the others
        // of the round are not made to wait with them: they are protected
        // and sent first, then the transcoded ones (a slow codec does not
        // delay another call's packets beyond its own round).
        let streams = &self.streams;
        let transcoded = |p: &Pkt| {
            !p.fate.is_dropped()
                && streams
                    .get(p.slot as usize)
                    .and_then(|s| s.as_ref())
                    .is_some_and(|s| s.legs.iter().any(|d| d.transcode.is_some() || d.transcode_failed))
        };
        if self.pkts.iter().any(transcoded) {
            let mut rest = std::mem::take(&mut self.spare);
            for p in self.pkts.drain(..) {
                if transcoded(&p) {
                    self.later.push(p);
                } else {
                    rest.push(p);
                }
            }
            std::mem::swap(&mut self.pkts, &mut rest);
            self.spare = rest;
            self.finish();
            std::mem::swap(&mut self.pkts, &mut self.later);
            self.transcode();
        }
        self.finish();
    }

    /// Latches, protects and sends the round's packets (`pkts`), counts
    /// the drops and returns the buffers.
    fn finish(&mut self) {
        if self.pkts.is_empty() {
            return;
        }
        let now_ms = sys::now_ns() / 1_000_000;
        // 2. Latch the source, then the protect step's prepare with the
        // other leg's keys (from the current buffer into the other one).
        for p in self.pkts.iter_mut() {
            if p.fate.is_dropped() {
                continue;
            }
            p.prep = None;
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else { continue };
            let d = &mut s.legs[p.party as usize];
            d.stats.accepted(now_ms);
            let on_rtcp_port = p.kind == Kind::Rtcp && !d.mux;
            let (peer, latched) = if on_rtcp_port {
                (&mut d.peer_rtcp, &mut d.latched_rtcp)
            } else {
                (&mut d.peer_rtp, &mut d.latched_rtp)
            };
            if !*latched || *peer != Some(p.from) {
                *peer = Some(p.from);
                *latched = true;
                // A bundled leg's own port is not in use: the transport's
                // owner latched on the same packet's address.
                if d.bundle_slot.is_none() {
                    self.io.latch(token(p.slot, p.party as usize, on_rtcp_port), Some(p.from));
                }
            }
            if p.fate == Fate::Absorbed {
                continue;
            }
            // An operator's hold or mute (RTP only: RTCP keeps flowing).
            if p.kind == Kind::Rtp
                && (s.legs[p.party as usize].stats.blocked() & crate::stats::MUTED != 0
                    || s.legs[1 - p.party as usize].stats.blocked() & crate::stats::HELD != 0)
            {
                p.fate = Fate::Dropped(Drop::Blocked);
                continue;
            }
            let o = &mut s.legs[1 - p.party as usize];
            let dest = match (p.kind, o.mux) {
                (Kind::Rtcp, false) => o.peer_rtcp,
                _ => o.peer_rtp,
            };
            if !o.configured || o.keys_pending || dest.is_none() {
                p.fate = Fate::Dropped(Drop::NoDestination);
                continue;
            }
            if let (Kind::Rtp, Some((id, mid, n))) = (p.kind, o.mid_ext) {
                let buf = if p.in_b { p.b.as_deref_mut() } else { Some(&mut p.a[..]) };
                if let Some(buf) = buf {
                    p.len = add_mid_extension(buf, p.len, id, &mid[..n as usize]);
                }
            }
            let Some(ctx) = o.tx.as_mut() else { continue };
            if p.b.is_none() {
                match self.pool.take() {
                    Some(b) => p.b = Some(b),
                    None => {
                        p.fate = Fate::Dropped(Drop::PoolExhausted);
                        continue;
                    }
                }
            }
            let Pkt { a, b: Some(b), in_b, len, kind, .. } = p else { continue };
            let (src, dst): (&[u8], &mut [u8]) =
                if *in_b { (&b[..*len], &mut a[..]) } else { (&a[..*len], &mut b[..]) };
            match ctx.prepare(*kind, Op::Protect, src, dst) {
                Ok(prep) => {
                    p.prep = Some(prep);
                    p.in_b = !p.in_b;
                }
                Err(e) => {
                    if let srtp::Error::NotReserved { ssrc, index } = e {
                        o.wanted = Some((ssrc, index, *kind == Kind::Rtcp));
                    }
                    p.fate = Fate::Dropped(Drop::of(&e));
                }
            }
        }
        self.transform_step(false);
        // 3. Send, grouping consecutive packets that leave by the same socket.
        self.send_all();
        // 4. Count drops, return buffers.
        for mut p in self.pkts.drain(..) {
            if let Fate::Dropped(why) = p.fate {
                if let Some(Some(s)) = self.streams.get(p.slot as usize) {
                    s.legs[p.party as usize].stats.dropped(why);
                }
                self.stats.total.dropped(why);
            }
            self.pool.put(std::mem::take(&mut p.a));
            if let Some(b) = p.b.take() {
                self.pool.put(b);
            }
        }
    }

    /// Runs the transcoders of the streams that have them over the round's
    /// plain RTP: each packet becomes the transcoder's first output (in its
    /// own buffer), further outputs (concealed packets for lost ones,
    /// repacketized audio) join the round as packets of their own right
    /// after it (so a stream's packets leave in order), and a packet that
    /// produced nothing yet is absorbed.
    fn transcode(&mut self) {
        let n = self.pkts.len();
        for i in 0..n {
            let p = &mut self.pkts[i];
            if p.fate.is_dropped() {
                continue;
            }
            if p.kind == Kind::Rtcp {
                let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else { continue };
                let (x, y) = s.legs.split_at_mut(1);
                let (this, other) = if p.party == 0 { (&mut x[0], &mut y[0]) } else { (&mut y[0], &mut x[0]) };
                if this.transcode.is_none() && other.transcode.is_none() {
                    continue;
                }
                let buf: &mut Buf = match (p.in_b, p.b.as_mut()) {
                    (true, Some(b)) => b,
                    _ => &mut p.a,
                };
                let len = p.len.min(buf.len());
                // Sender reports of a transcoded stream in the other leg's
                // clock; the loss this endpoint reports sizes the FEC of
                // the stream encoded towards it.
                let lost = srtpgate_codec::transcode::rtcp(&mut buf[..len], this.transcode.as_deref());
                if let (Some(f), Some(t)) = (lost, other.transcode.as_mut()) {
                    if let Err(e) = t.set_receiver_loss(f) {
                        tracing::debug!(call = s.call, stream = s.index, "codec loss control: {e}");
                    }
                }
                continue;
            }
            if p.kind != Kind::Rtp {
                continue;
            }
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else { continue };
            let d = &mut s.legs[p.party as usize];
            if d.transcode_failed {
                p.fate = Fate::Dropped(Drop::Transcode);
                continue;
            }
            let Some(t) = d.transcode.as_mut() else { continue };
            let before = t.counts();
            let bytes = if p.in_b { p.b.as_deref().unwrap_or(&[]) } else { &p.a[..] };
            let bytes = &bytes[..p.len.min(bytes.len())];
            // A bug in a transcoder (or an in-tree codec) ends that
            // stream's transcoding, not the worker.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.push(bytes)));
            let after = t.counts();
            let st = &self.stats;
            st.transcoded(Transcoded::Decoded, after.decoded - before.decoded);
            st.transcoded(Transcoded::Encoded, after.encoded - before.encoded);
            st.transcoded(Transcoded::Concealed, after.concealed_samples - before.concealed_samples);
            st.transcoded(Transcoded::FecDecoded, after.recovered_samples - before.recovered_samples);
            st.transcoded(Transcoded::Untransmitted, after.untransmitted - before.untransmitted);
            st.transcoded(Transcoded::DtmfDetected, after.dtmf_detected - before.dtmf_detected);
            st.transcoded(Transcoded::DtmfPlayed, after.dtmf_played - before.dtmf_played);
            st.transcoded(Transcoded::Late, after.late - before.late);
            st.transcoded(Transcoded::Reordered, after.reordered - before.reordered);
            match r {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    p.fate = Fate::Dropped(Drop::Transcode);
                    if e.is_fatal() {
                        tracing::warn!(call = s.call, stream = s.index, party = p.party, "transcoding ended: {e}");
                        st.transcoded(Transcoded::CodecFailed, 1);
                        d.transcode = None;
                        d.transcode_failed = true;
                    }
                    continue;
                }
                Err(_) => {
                    p.fate = Fate::Dropped(Drop::Transcode);
                    tracing::error!(
                        call = s.call,
                        stream = s.index,
                        party = p.party,
                        "transcoder panicked; transcoding ended"
                    );
                    st.transcoded(Transcoded::CodecFailed, 1);
                    d.transcode = None;
                    d.transcode_failed = true;
                    continue;
                }
            }
            let Some(t) = d.transcode.as_ref() else { continue };
            let mut outs = t.outputs();
            let Some(first) = outs.next() else {
                p.fate = Fate::Absorbed;
                continue;
            };
            let buf: &mut Buf = match (p.in_b, p.b.as_mut()) {
                (true, Some(b)) => b,
                _ => &mut p.a,
            };
            buf[..first.len()].copy_from_slice(first);
            p.len = first.len();
            let (slot, party, from, rx_ns) = (p.slot, p.party, p.from, p.rx_ns);
            for o in outs {
                if n + self.extra.len() >= MAX_LOOP_PACKETS {
                    // The round is full: the rest of this packet's audio is lost.
                    d.stats.dropped(Drop::Transcode);
                    self.stats.total.dropped(Drop::Transcode);
                    continue;
                }
                let Some(mut a) = self.pool.take() else {
                    d.stats.dropped(Drop::PoolExhausted);
                    self.stats.total.dropped(Drop::PoolExhausted);
                    continue;
                };
                a[..o.len()].copy_from_slice(o);
                self.extra.push((
                    i,
                    Pkt {
                        a,
                        b: None,
                        in_b: false,
                        len: o.len(),
                        slot,
                        party,
                        kind: Kind::Rtp,
                        from,
                        rx_ns,
                        prep: None,
                        fate: Fate::Forward,
                    },
                ));
            }
        }
        if self.extra.is_empty() {
            return;
        }
        std::mem::swap(&mut self.pkts, &mut self.spare);
        let mut extra = self.extra.drain(..).peekable();
        for (i, p) in self.spare.drain(..).enumerate() {
            self.pkts.push(p);
            while let Some((_, e)) = extra.next_if(|(at, _)| *at == i) {
                self.pkts.push(e);
            }
        }
    }

    /// Runs the engine over the packets prepared in this step (unprotect
    /// with the receiving leg's context, or protect with the other leg's),
    /// as one batch, then commits each in order.
    fn transform_step(&mut self, unprotect: bool) {
        let streams = &self.streams;
        let ctx_of = |p: &Pkt| -> Option<&Context<E>> {
            let s = streams.get(p.slot as usize)?.as_ref()?;
            if unprotect {
                s.legs[p.party as usize].rx.as_ref()
            } else {
                s.legs[1 - p.party as usize].tx.as_ref()
            }
        };
        let mut jobs: Vec<Job<'_, E::Keys>> = recycle(std::mem::take(&mut self.jobs));
        for p in self.pkts.iter_mut() {
            let (Some(prep), false) = (p.prep.as_ref(), p.fate.is_dropped()) else { continue };
            let Some(ctx) = ctx_of(p) else {
                p.fate = Fate::Dropped(Drop::Other);
                continue;
            };
            let out: &mut Buf = match (p.in_b, p.b.as_mut()) {
                (true, Some(b)) => b,
                (true, None) => continue,
                (false, _) => &mut p.a,
            };
            match ctx.job(prep, out) {
                Ok(j) => jobs.push(j),
                Err(e) => p.fate = Fate::Dropped(Drop::of(&e)),
            }
        }
        let mut verdicts = [Outcome::Pending; MAX_LOOP_PACKETS];
        if !jobs.is_empty() {
            self.stats.batch(jobs.len());
            self.engine.transform(&mut jobs);
            for (v, j) in verdicts.iter_mut().zip(jobs.iter()) {
                *v = j.outcome;
            }
        }
        self.jobs = recycle(jobs);
        let mut k = 0;
        for p in self.pkts.iter_mut() {
            let (Some(prep), false) = (p.prep, p.fate.is_dropped()) else { continue };
            let outcome = verdicts.get(k).copied().unwrap_or(Outcome::Pending);
            k += 1;
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else { continue };
            let ctx =
                if unprotect { s.legs[p.party as usize].rx.as_mut() } else { s.legs[1 - p.party as usize].tx.as_mut() };
            let Some(ctx) = ctx else { continue };
            let out: &[u8] = if p.in_b { p.b.as_deref().unwrap_or(&[]) } else { &p.a };
            let committed = match ctx.commit(&prep, outcome, out) {
                // A resumed stream's kept rollover counter may be one behind
                // the sender's (Context::resume_rx): the packet, still as
                // received in `a`, is tried once under the next one.
                Err(srtp::Error::AuthFailed) if unprotect && prep.next_roc_possible() => match p.b.as_mut() {
                    Some(b) => ctx.retry_next_roc(&prep, &p.a[..p.len], b),
                    None => Err(srtp::Error::AuthFailed),
                },
                r => r,
            };
            match committed {
                Ok(len) => p.len = len,
                Err(e) => p.fate = Fate::Dropped(Drop::of(&e)),
            }
        }
    }

    fn send_all(&mut self) {
        if self.io.frames() {
            self.transmit_frames();
        }
        let mut i = 0;
        while i < self.pkts.len() {
            // The run of packets leaving by one socket to one address.
            let Some((tok, fd, to)) = self.destination(&self.pkts[i]) else {
                i += 1;
                continue;
            };
            let mut msgs: [(&[u8], SocketAddr); BATCH] = [(&[], to); BATCH];
            let mut idx = [0usize; BATCH];
            let mut m = 0;
            let mut j = i;
            while j < self.pkts.len() && m < BATCH {
                match self.destination(&self.pkts[j]) {
                    Some((_, f, t)) if f == fd => {
                        msgs[m] = (self.pkts[j].bytes(), t);
                        idx[m] = j;
                        m += 1;
                        j += 1;
                    }
                    None => j += 1,
                    Some(_) => break,
                }
            }
            let sent = self.io.send(tok, fd, &msgs[..m]);
            let now = sys::now_ns();
            for (k, &pi) in idx[..m].iter().enumerate() {
                let p = &self.pkts[pi];
                let Some(Some(s)) = self.streams.get(p.slot as usize) else { continue };
                if k < sent {
                    let delay = now.saturating_sub(p.rx_ns);
                    s.legs[1 - p.party as usize].stats.sent(p.len);
                    self.stats.total.sent(p.len);
                    s.legs[p.party as usize].stats.delay(delay);
                    self.stats.delay(delay);
                }
            }
            for &pi in &idx[sent.min(m)..m] {
                self.pkts[pi].fate = Fate::Dropped(Drop::Other);
            }
            i = j;
        }
    }

    /// Hands every packet the backend can send as it lies in its buffer
    /// (AF_XDP frames) to the backend; the rest stay for the sockets.
    fn transmit_frames(&mut self) {
        let now = sys::now_ns();
        for i in 0..self.pkts.len() {
            let Some((tok, _, to)) = self.destination(&self.pkts[i]) else { continue };
            let p = &mut self.pkts[i];
            let len = p.len;
            let buf = if p.in_b { p.b.take().unwrap_or_default() } else { std::mem::take(&mut p.a) };
            match self.io.transmit(tok, buf, len, to) {
                Ok(()) => {
                    p.fate = Fate::Sent;
                    let Some(Some(s)) = self.streams.get(p.slot as usize) else { continue };
                    let delay = now.saturating_sub(p.rx_ns);
                    s.legs[1 - p.party as usize].stats.sent(len);
                    self.stats.total.sent(len);
                    s.legs[p.party as usize].stats.delay(delay);
                    self.stats.delay(delay);
                }
                Err(buf) if p.in_b => p.b = Some(buf),
                Err(buf) => p.a = buf,
            }
        }
        self.io.flush(&mut self.pool);
    }

    /// The socket (token and descriptor) and address a processed packet
    /// leaves by.
    fn destination(&self, p: &Pkt) -> Option<(u32, RawFd, SocketAddr)> {
        if p.fate != Fate::Forward {
            return None;
        }
        let s = self.streams.get(p.slot as usize)?.as_ref()?;
        let other = 1 - p.party as usize;
        let o = &s.legs[other];
        if let Some(ps) = o.bundle_slot {
            // Bundled: out of the transport owner's port, to its peer.
            let t = self.streams.get(ps as usize)?.as_ref().filter(|t| t.call == s.call)?;
            let od = &t.legs[other];
            return Some((token(ps, other, false), od.rtp.as_raw_fd(), od.peer_rtp?));
        }
        match (p.kind, o.mux) {
            (Kind::Rtcp, false) => Some((token(p.slot, other, true), o.rtcp.as_raw_fd(), o.peer_rtcp?)),
            _ => Some((token(p.slot, other, false), o.rtp.as_raw_fd(), o.peer_rtp?)),
        }
    }
}

/// Adds a one-byte-header RTP extension element (RFC 8285) `id` with
/// `value` to the plain RTP packet of `len` bytes in `buf`, in place: a new
/// extension block when the packet has none, appended to its one-byte block
/// otherwise. Returns the new length; the packet is left as it was when it
/// already carries `id`, has a two-byte block, is malformed or would not
/// fit in `buf` with room for an SRTP trailer.
fn add_mid_extension(buf: &mut [u8], len: usize, id: u8, value: &[u8]) -> usize {
    if len < 12 || len > buf.len() || value.is_empty() || value.len() > 16 || !(1..=14).contains(&id) {
        return len;
    }
    let head = 12 + 4 * (buf[0] & 0x0f) as usize;
    let words = (1 + value.len()).div_ceil(4);
    let (at, new_block) = if buf[0] & 0x10 == 0 {
        (head, true)
    } else {
        if len < head + 4 || buf[head..head + 2] != [0xbe, 0xde] {
            return len;
        }
        let ext_words = u16::from_be_bytes([buf[head + 2], buf[head + 3]]) as usize;
        let end = head + 4 + 4 * ext_words;
        if end > len {
            return len;
        }
        // Already there (an endpoint that speaks BUNDLE itself)?
        let mut i = head + 4;
        while i < end {
            let b = buf[i];
            if b == 0 {
                i += 1;
                continue;
            }
            if b >> 4 == 15 {
                break;
            }
            if b >> 4 == id {
                return len;
            }
            i += 2 + (b & 0x0f) as usize;
        }
        (end, false)
    };
    let grow = 4 * words + if new_block { 4 } else { 0 };
    if len + grow + srtp::MAX_RTCP_TRAILER_LEN > buf.len() || at > len {
        return len;
    }
    buf.copy_within(at..len, at + grow);
    let mut w = at;
    if new_block {
        buf[w..w + 4].copy_from_slice(&[0xbe, 0xde, 0, words as u8]);
        w += 4;
        buf[0] |= 0x10;
    } else {
        let ext_words = u16::from_be_bytes([buf[head + 2], buf[head + 3]]) as usize + words;
        buf[head + 2..head + 4].copy_from_slice(&(ext_words as u16).to_be_bytes());
    }
    buf[w] = id << 4 | (value.len() as u8 - 1);
    buf[w + 1..w + 1 + value.len()].copy_from_slice(value);
    for b in &mut buf[w + 1 + value.len()..w + 4 * words] {
        *b = 0;
    }
    len + grow
}

/// RTP or RTCP: by port, or on a multiplexed port by the packet type
/// (RFC 5761 §4: 192–223 are RTCP).
fn classify(rtcp_port: bool, mux: bool, bytes: &[u8]) -> Kind {
    if rtcp_port || (mux && bytes.len() >= 2 && (192..=223).contains(&bytes[1])) {
        Kind::Rtcp
    } else {
        Kind::Rtp
    }
}

#[cfg(test)]
mod mid_tests {
    use super::add_mid_extension;

    #[test]
    fn the_mid_goes_into_a_new_or_existing_one_byte_extension() {
        let mut buf = vec![0u8; 256];
        let pkt = [0x80, 0, 0, 1, 0, 0, 0, 160, 0xaa, 0xbb, 0xcc, 0xdd, 0x55, 0x66];
        buf[..14].copy_from_slice(&pkt);
        let n = add_mid_extension(&mut buf, 14, 4, b"1");
        assert_eq!(n, 22);
        assert_eq!(
            &buf[..22],
            &[0x90, 0, 0, 1, 0, 0, 0, 160, 0xaa, 0xbb, 0xcc, 0xdd, 0xbe, 0xde, 0, 1, 0x40, b'1', 0, 0, 0x55, 0x66]
        );
        // Again: already there, nothing changes.
        assert_eq!(add_mid_extension(&mut buf, 22, 4, b"1"), 22);
        // Another element appended to the block (a mid of 4 bytes: 2 words).
        let n = add_mid_extension(&mut buf, 22, 9, b"abcd");
        assert_eq!(n, 30);
        assert_eq!(&buf[12..16], &[0xbe, 0xde, 0, 3]);
        assert_eq!(&buf[20..28], &[0x93, b'a', b'b', b'c', b'd', 0, 0, 0]);
        assert_eq!(&buf[28..30], &[0x55, 0x66]);
        // A two-byte block, a CSRC list that runs past the end, no room: left alone.
        let mut two = [0x90u8, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4, 0x10, 0x00, 0, 0];
        assert_eq!(add_mid_extension(&mut two, 16, 4, b"1"), 16);
        let mut csrc = [0x8fu8, 0, 0, 1, 0, 0, 0, 0, 1, 2, 3, 4];
        assert_eq!(add_mid_extension(&mut csrc, 12, 4, b"1"), 12);
        let mut full = [0x80u8; 20];
        assert_eq!(add_mid_extension(&mut full, 20, 4, b"1"), 20);
    }

    #[test]
    fn any_packet_is_extended_or_left_alone_without_panicking() {
        // The packet comes from an endpoint: arbitrary bytes (a xorshift
        // stream, no dependency), lengths around the header's and the
        // buffer's edges.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..200_000 {
            let cap = 8 + (next() % 120) as usize;
            let mut buf: Vec<u8> = (0..cap).map(|_| next() as u8).collect();
            let len = (next() % (cap as u64 + 4)) as usize;
            let mid = b"abcdefghijklmnopq";
            let n = (next() % 18) as usize;
            let id = (next() % 16) as u8;
            let before = buf.clone();
            let out = add_mid_extension(&mut buf, len, id, &mid[..n]);
            assert!(out == len || (out > len && out + srtp::MAX_RTCP_TRAILER_LEN <= cap));
            if out == len {
                assert_eq!(buf, before, "a packet left alone is unchanged");
            } else {
                let words = (1 + n).div_ceil(4);
                assert!((1..=14).contains(&id) && (out - len == 4 * words || out - len == 4 * words + 4));
                assert_eq!(buf[0], before[0] | 0x10);
                assert_eq!(buf[1..12], before[1..12], "the fixed header stays");
            }
        }
    }
}

#[cfg(test)]
mod seq_tests {
    use super::SeqTrack;

    #[test]
    fn expected_packets_follow_the_sequence_across_wraps_and_restarts() {
        let mut t = SeqTrack::new(7, 65_530);
        for s in [65_531u16, 65_535, 2, 1, 2] {
            t.note(7, s);
        }
        // 65 530 ..= 65 538 (2 after the wrap): 9 expected; late and
        // duplicate packets do not move it.
        assert_eq!(t.expected(), 9);
        // A new SSRC starts a new span, the old one kept.
        t.note(8, 40_000);
        t.note(8, 40_004);
        assert_eq!(t.expected(), 9 + 5);
        // A restart far ahead (a new stream on the same SSRC) too.
        t.note(8, 50_000);
        assert_eq!(t.expected(), 14 + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demultiplexing() {
        assert_eq!(classify(true, false, &[0x80, 0]), Kind::Rtcp);
        assert_eq!(classify(false, true, &[0x80, 200]), Kind::Rtcp);
        assert_eq!(classify(false, true, &[0x80, 0x80 | 8]), Kind::Rtp);
        assert_eq!(classify(false, false, &[0x80, 200]), Kind::Rtp);
        assert_eq!(classify(false, true, &[0x80]), Kind::Rtp);
    }
}
