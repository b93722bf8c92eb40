//! A worker thread: it owns the sockets of the media streams given to it,
//! receives with `recvmmsg`, runs the crypto of everything that arrived in
//! one loop as two engine batches (unprotect with the sending leg's keys,
//! then protect with the receiving leg's), and sends with `sendmmsg`.
//!
//! With the CPU engine a batch runs on this thread, packet after packet (run
//! to completion); with the GPU engine the same batch is one transfer. All
//! state a packet touches (sockets, contexts, counters) belongs to this
//! thread: no lock, and no allocation per packet (buffers come from the
//! worker's [`Pool`]).

use super::pool::Pool;
use super::stats::{Drop, LegStats, WorkerStats};
use super::sys::{self, Received, RecvScratch, SendScratch, BATCH};
use crossbeam_channel::{Receiver, TryRecvError};
use mio::net::UdpSocket as MioSocket;
use mio::{Events, Interest, Poll, Token, Waker};
use srtp::header::{RtcpHeader, RtpHeader};
use srtp::{Context, Engine, Job, Kind, Op, Outcome, Prepared};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// Identifies a call across the control thread and the workers.
pub type CallKey = u64;

/// The token of the worker's waker.
pub const WAKER: Token = Token(usize::MAX);

/// Most packets one loop can handle (one engine batch); the configured batch
/// is at most this.
pub const MAX_LOOP_PACKETS: usize = 1024;

/// The sockets of one side of a media stream: where that side's endpoint
/// sends, and where the relay sends to it from.
pub struct SideSockets {
    /// RTP socket.
    pub rtp: UdpSocket,
    /// RTCP socket (RTP port + 1; idle when the endpoint multiplexes RTCP).
    pub rtcp: UdpSocket,
    /// Counters of this leg.
    pub stats: Arc<LegStats>,
}

/// What the signalling agreed for one side; `None` fields keep what is set.
pub struct SideConfig<E: Engine> {
    /// The endpoint's RTP and RTCP addresses from its SDP (re-learnt from
    /// the first valid packet).
    pub peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// The endpoint multiplexes RTCP on the RTP port (RFC 5761).
    pub rtcp_mux: bool,
    /// Context that unprotects what the endpoint sends (inner `None`: plain RTP).
    pub rx: Option<Option<Context<E>>>,
    /// Context that protects what the relay sends to the endpoint (inner `None`: plain RTP).
    pub tx: Option<Option<Context<E>>>,
    /// Accept a new source address after latching (media handover); SRTP
    /// legs always may re-latch on an authenticated packet.
    pub handover: bool,
}

/// Commands from the control thread.
pub enum Cmd<E: Engine> {
    /// A new media stream of a call, with its two sides' sockets.
    AddStream { call: CallKey, stream: usize, sides: [SideSockets; 2] },
    /// The negotiated parameters of one side of a stream.
    Configure { call: CallKey, stream: usize, side: usize, config: Box<SideConfig<E>> },
    /// Close every stream of a call.
    RemoveCall { call: CallKey },
    /// Leave the loop.
    Stop,
}

struct Side<E: Engine> {
    rtp: MioSocket,
    rtcp: MioSocket,
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
}

struct Stream<E: Engine> {
    call: CallKey,
    index: usize,
    sides: [Side<E>; 2],
}

/// One packet on its way through the loop.
struct Pkt {
    /// Buffer holding the packet as received.
    a: Vec<u8>,
    /// Second buffer for the transformed packet (taken when needed).
    b: Option<Vec<u8>>,
    /// The current bytes are in `b`.
    in_b: bool,
    len: usize,
    slot: u32,
    side: u8,
    kind: Kind,
    from: SocketAddr,
    rx_ns: u64,
    prep: Option<Prepared>,
    /// Dropped, and why.
    dropped: Option<Drop>,
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
    poll: Poll,
    cmds: Receiver<Cmd<E>>,
    streams: Vec<Option<Stream<E>>>,
    free_slots: Vec<u32>,
    pool: Pool,
    stats: Arc<WorkerStats>,
    recv: Box<RecvScratch>,
    send: Box<SendScratch>,
    pkts: Vec<Pkt>,
    /// Packets gathered before the crypto runs: a packet waits for the
    /// others of its batch, so small for the CPU engine, large for the GPU.
    max_batch: usize,
    /// Poll without sleeping: the worker never waits to be woken (which on a
    /// virtual machine can take milliseconds), at the price of a whole core.
    busy_poll: bool,
    jobs: Vec<Job<'static, E::Keys>>,
    rx_bufs: Vec<Vec<u8>>,
    received: [Received; BATCH],
    drain: Vec<u8>,
}

fn token(slot: u32, side: usize, rtcp: bool) -> Token {
    Token(slot as usize * 4 + side * 2 + rtcp as usize)
}

/// Reuses a vector's allocation for another element type of the same layout
/// (here: the same type with another lifetime), so the loop's scratch vectors
/// are allocated once.
fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().map(|_| unreachable!("the vector was cleared")).collect()
}

impl<E: Engine + Clone> Worker<E>
where
    E::Keys: 'static,
{
    /// A worker with a pool of `buffers` packet buffers; the waker lets the
    /// control thread interrupt its poll.
    pub fn new(
        engine: E,
        cmds: Receiver<Cmd<E>>,
        buffers: usize,
        max_batch: usize,
        busy_poll: bool,
        stats: Arc<WorkerStats>,
    ) -> std::io::Result<(Worker<E>, Arc<Waker>)> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let pool = Pool::new(buffers);
        stats.pool_size.store(pool.size() as u64, Relaxed);
        stats.pool_free.store(pool.free() as u64, Relaxed);
        let w = Worker {
            engine,
            poll,
            cmds,
            streams: Vec::new(),
            free_slots: Vec::new(),
            pool,
            stats,
            recv: RecvScratch::new(),
            send: SendScratch::new(),
            pkts: Vec::with_capacity(MAX_LOOP_PACKETS),
            max_batch: max_batch.clamp(1, MAX_LOOP_PACKETS),
            busy_poll,
            jobs: Vec::with_capacity(MAX_LOOP_PACKETS),
            rx_bufs: Vec::with_capacity(BATCH),
            received: [Received { len: 0, from: None, rx_ns: None, truncated: false }; BATCH],
            drain: vec![0u8; super::pool::BUF_LEN],
        };
        Ok((w, waker))
    }

    /// Runs until [`Cmd::Stop`] or until the command channel closes.
    pub fn run(mut self) {
        let mut events = Events::with_capacity(1024);
        let mut ready: Vec<Token> = Vec::with_capacity(1024);
        // Sockets not drained in the last round: edge-triggered readiness will
        // not be reported again for them, so they are visited next round.
        let mut pending: Vec<Token> = Vec::with_capacity(1024);
        loop {
            let idle = if self.busy_poll || !pending.is_empty() { Duration::ZERO } else { Duration::from_millis(500) };
            if let Err(e) = self.poll.poll(&mut events, Some(idle)) {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    tracing::error!("worker poll failed: {e}");
                    return;
                }
            }
            ready.clear();
            ready.append(&mut pending);
            let mut wake = false;
            for ev in events.iter() {
                if ev.token() == WAKER {
                    wake = true;
                } else {
                    ready.push(ev.token());
                }
            }
            if wake || !self.cmds.is_empty() {
                loop {
                    match self.cmds.try_recv() {
                        Ok(Cmd::Stop) | Err(TryRecvError::Disconnected) => return,
                        Ok(cmd) => self.command(cmd),
                        Err(TryRecvError::Empty) => break,
                    }
                }
            }
            // One receive per ready socket per round (a flooded port cannot
            // starve the others, nor the commands), in engine batches of at
            // most max_batch packets.
            for &tok in &ready {
                if self.pkts.len() >= self.max_batch {
                    self.process();
                }
                if !self.receive(tok) {
                    pending.push(tok);
                }
            }
            self.process();
            // Buffers set aside for the next receive are free too.
            self.stats.pool_free.store((self.pool.free() + self.rx_bufs.len()) as u64, Relaxed);
        }
    }

    fn command(&mut self, cmd: Cmd<E>) {
        match cmd {
            Cmd::AddStream { call, stream, sides } => {
                if let Err(e) = self.add_stream(call, stream, sides) {
                    tracing::error!(call, "cannot register media sockets: {e}");
                }
            }
            Cmd::Configure { call, stream, side, config } => {
                let found = self.streams.iter_mut().flatten().find(|s| s.call == call && s.index == stream);
                let Some(s) = found else { return };
                let Some(d) = s.sides.get_mut(side) else { return };
                if let Some((rtp, rtcp)) = config.peer {
                    if (rtp, rtcp) != (d.peer_rtp, d.peer_rtcp) || !d.configured {
                        d.peer_rtp = rtp;
                        d.peer_rtcp = rtcp;
                        d.latched_rtp = false;
                        d.latched_rtcp = false;
                    }
                }
                d.mux = config.rtcp_mux;
                if let Some(rx) = config.rx {
                    d.rx = rx;
                }
                if let Some(tx) = config.tx {
                    d.tx = tx;
                }
                d.handover = config.handover;
                d.configured = true;
            }
            Cmd::RemoveCall { call } => {
                for slot in 0..self.streams.len() {
                    if self.streams[slot].as_ref().is_some_and(|s| s.call == call) {
                        if let Some(mut s) = self.streams[slot].take() {
                            for d in s.sides.iter_mut() {
                                let _ = self.poll.registry().deregister(&mut d.rtp);
                                let _ = self.poll.registry().deregister(&mut d.rtcp);
                            }
                            self.stats.legs.fetch_sub(2, Relaxed);
                        }
                        self.free_slots.push(slot as u32);
                    }
                }
            }
            Cmd::Stop => {}
        }
    }

    fn add_stream(&mut self, call: CallKey, index: usize, sides: [SideSockets; 2]) -> std::io::Result<()> {
        let slot = match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.streams.push(None);
                (self.streams.len() - 1) as u32
            }
        };
        let mut built = Vec::with_capacity(2);
        for (i, s) in sides.into_iter().enumerate() {
            sys::enable_timestamps(s.rtp.as_raw_fd())?;
            sys::enable_timestamps(s.rtcp.as_raw_fd())?;
            let mut rtp = MioSocket::from_std(s.rtp);
            let mut rtcp = MioSocket::from_std(s.rtcp);
            self.poll.registry().register(&mut rtp, token(slot, i, false), Interest::READABLE)?;
            self.poll.registry().register(&mut rtcp, token(slot, i, true), Interest::READABLE)?;
            built.push(Side {
                rtp,
                rtcp,
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
            });
        }
        let (Some(b), Some(a)) = (built.pop(), built.pop()) else { unreachable!("two sides were built") };
        self.streams[slot as usize] = Some(Stream { call, index, sides: [a, b] });
        self.stats.legs.fetch_add(2, Relaxed);
        Ok(())
    }

    /// Receives one batch from the socket of `tok`. Returns true when the
    /// socket has nothing more waiting.
    fn receive(&mut self, tok: Token) -> bool {
        let slot = (tok.0 / 4) as u32;
        let side = (tok.0 / 2) % 2;
        let rtcp_port = tok.0 % 2 == 1;
        let Some(Some(stream)) = self.streams.get(slot as usize) else {
            self.stats.stray();
            return true;
        };
        let d = &stream.sides[side];
        let fd: RawFd = if rtcp_port { d.rtcp.as_raw_fd() } else { d.rtp.as_raw_fd() };
        let want = BATCH.min(self.max_batch.saturating_sub(self.pkts.len()));
        if want == 0 {
            return false;
        }
        while self.rx_bufs.len() < want {
            match self.pool.take() {
                Some(b) => self.rx_bufs.push(b),
                None => break,
            }
        }
        if self.rx_bufs.is_empty() {
            // No buffer free: read into scratch space so the socket drains,
            // and count the drop; the I/O thread never waits for buffers.
            let mut one = [std::mem::take(&mut self.drain)];
            let n = sys::recv_batch(fd, &mut self.recv, &mut one, &mut self.received).unwrap_or(0);
            self.drain = std::mem::take(&mut one[0]);
            if n > 0 {
                d.stats.dropped(Drop::PoolExhausted);
                self.stats.total.dropped(Drop::PoolExhausted);
            }
            return n == 0;
        }
        let asked = want.min(self.rx_bufs.len());
        let n = match sys::recv_batch(fd, &mut self.recv, &mut self.rx_bufs[..asked], &mut self.received) {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!("recvmmsg: {e}");
                0
            }
        };
        self.stats.recv_call();
        let now = sys::now_ns();
        let unknown = SocketAddr::from(([0, 0, 0, 0], 0));
        for (buf, r) in self.rx_bufs.drain(..n).zip(self.received.iter()) {
            let len = r.len.min(buf.len());
            d.stats.received(len);
            self.stats.total.received(len);
            let kind = classify(rtcp_port, d.mux, &buf[..len]);
            self.pkts.push(Pkt {
                a: buf,
                b: None,
                in_b: false,
                len,
                slot,
                side: side as u8,
                kind,
                from: r.from.unwrap_or(unknown),
                rx_ns: r.rx_ns.unwrap_or(now),
                prep: None,
                dropped: if r.truncated || r.from.is_none() { Some(Drop::Malformed) } else { None },
            });
        }
        n < asked
    }

    /// Runs the loop's batch: source checks, unprotect, latch, protect, send;
    /// then counts drops and returns every buffer to the pool.
    fn process(&mut self) {
        if self.pkts.is_empty() {
            return;
        }
        // 1. Source checks, and the unprotect step's prepare (into `b`).
        for p in self.pkts.iter_mut() {
            if p.dropped.is_some() {
                continue;
            }
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else {
                p.dropped = Some(Drop::Other);
                continue;
            };
            let d = &mut s.sides[p.side as usize];
            let (peer, latched) = match (p.kind, d.mux) {
                (Kind::Rtcp, false) => (d.peer_rtcp, d.latched_rtcp),
                _ => (d.peer_rtp, d.latched_rtp),
            };
            // After latching, another source is refused, unless the call
            // allows handover or the leg is SRTP: there a packet from a new
            // address re-latches only once it authenticated.
            if latched && peer != Some(p.from) && !(d.handover || d.rx.is_some()) {
                p.dropped = Some(Drop::UnknownPeer);
                continue;
            }
            if !d.configured {
                p.dropped = Some(Drop::NoDestination);
                continue;
            }
            let bytes = &p.a[..p.len];
            match d.rx.as_mut() {
                Some(ctx) => {
                    let Some(mut b) = p.b.take().or_else(|| self.pool.take()) else {
                        p.dropped = Some(Drop::PoolExhausted);
                        continue;
                    };
                    match ctx.prepare(p.kind, Op::Unprotect, bytes, &mut b) {
                        Ok(prep) => {
                            p.prep = Some(prep);
                            p.in_b = true;
                        }
                        Err(e) => p.dropped = Some(Drop::of(&e)),
                    }
                    p.b = Some(b);
                }
                None => {
                    let ok = match p.kind {
                        Kind::Rtp => RtpHeader::parse(bytes).is_ok(),
                        Kind::Rtcp => RtcpHeader::parse_fixed(bytes).is_ok(),
                    };
                    if !ok {
                        p.dropped = Some(Drop::Malformed);
                    }
                }
            }
        }
        self.transform_step(true);
        let now_ms = sys::now_ns() / 1_000_000;
        // 2. Latch the source, then the protect step's prepare with the
        // other side's keys (from the current buffer into the other one).
        for p in self.pkts.iter_mut() {
            if p.dropped.is_some() {
                continue;
            }
            p.prep = None;
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else { continue };
            let d = &mut s.sides[p.side as usize];
            d.stats.accepted(now_ms);
            match (p.kind, d.mux) {
                (Kind::Rtcp, false) => {
                    d.peer_rtcp = Some(p.from);
                    d.latched_rtcp = true;
                }
                _ => {
                    d.peer_rtp = Some(p.from);
                    d.latched_rtp = true;
                }
            }
            let o = &mut s.sides[1 - p.side as usize];
            let dest = match (p.kind, o.mux) {
                (Kind::Rtcp, false) => o.peer_rtcp,
                _ => o.peer_rtp,
            };
            if !o.configured || dest.is_none() {
                p.dropped = Some(Drop::NoDestination);
                continue;
            }
            let Some(ctx) = o.tx.as_mut() else { continue };
            if p.b.is_none() {
                match self.pool.take() {
                    Some(b) => p.b = Some(b),
                    None => {
                        p.dropped = Some(Drop::PoolExhausted);
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
                Err(e) => p.dropped = Some(Drop::of(&e)),
            }
        }
        self.transform_step(false);
        // 3. Send, grouping consecutive packets that leave by the same socket.
        self.send_all();
        // 4. Count drops, return buffers.
        for mut p in self.pkts.drain(..) {
            if let Some(why) = p.dropped {
                if let Some(Some(s)) = self.streams.get(p.slot as usize) {
                    s.sides[p.side as usize].stats.dropped(why);
                }
                self.stats.total.dropped(why);
            }
            self.pool.put(std::mem::take(&mut p.a));
            if let Some(b) = p.b.take() {
                self.pool.put(b);
            }
        }
    }

    /// Runs the engine over the packets prepared in this step (unprotect
    /// with the receiving side's context, or protect with the other side's),
    /// as one batch, then commits each in order.
    fn transform_step(&mut self, unprotect: bool) {
        let streams = &self.streams;
        let ctx_of = |p: &Pkt| -> Option<&Context<E>> {
            let s = streams.get(p.slot as usize)?.as_ref()?;
            if unprotect {
                s.sides[p.side as usize].rx.as_ref()
            } else {
                s.sides[1 - p.side as usize].tx.as_ref()
            }
        };
        let mut jobs: Vec<Job<'_, E::Keys>> = recycle(std::mem::take(&mut self.jobs));
        for p in self.pkts.iter_mut() {
            let (Some(prep), None) = (p.prep.as_ref(), p.dropped) else { continue };
            let Some(ctx) = ctx_of(p) else {
                p.dropped = Some(Drop::Other);
                continue;
            };
            let out: &mut Vec<u8> = match (p.in_b, p.b.as_mut()) {
                (true, Some(b)) => b,
                (true, None) => continue,
                (false, _) => &mut p.a,
            };
            match ctx.job(prep, out) {
                Ok(j) => jobs.push(j),
                Err(e) => p.dropped = Some(Drop::of(&e)),
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
            let (Some(prep), None) = (p.prep, p.dropped) else { continue };
            let outcome = verdicts.get(k).copied().unwrap_or(Outcome::Pending);
            k += 1;
            let Some(Some(s)) = self.streams.get_mut(p.slot as usize) else { continue };
            let ctx =
                if unprotect { s.sides[p.side as usize].rx.as_mut() } else { s.sides[1 - p.side as usize].tx.as_mut() };
            let Some(ctx) = ctx else { continue };
            let out: &[u8] = if p.in_b { p.b.as_deref().unwrap_or(&[]) } else { &p.a };
            match ctx.commit(&prep, outcome, out) {
                Ok(len) => p.len = len,
                Err(e) => p.dropped = Some(Drop::of(&e)),
            }
        }
    }

    fn send_all(&mut self) {
        let mut i = 0;
        while i < self.pkts.len() {
            // The run of packets leaving by one socket to one address.
            let Some((fd, to)) = self.destination(&self.pkts[i]) else {
                i += 1;
                continue;
            };
            let mut msgs: [(&[u8], SocketAddr); BATCH] = [(&[], to); BATCH];
            let mut idx = [0usize; BATCH];
            let mut m = 0;
            let mut j = i;
            while j < self.pkts.len() && m < BATCH {
                match self.destination(&self.pkts[j]) {
                    Some((f, t)) if f == fd => {
                        msgs[m] = (self.pkts[j].bytes(), t);
                        idx[m] = j;
                        m += 1;
                        j += 1;
                    }
                    None => j += 1,
                    Some(_) => break,
                }
            }
            let sent = match sys::send_batch(fd, &mut self.send, &msgs[..m]) {
                Ok(k) => k,
                Err(e) => {
                    tracing::debug!("sendmmsg: {e}");
                    0
                }
            };
            self.stats.send_call();
            let now = sys::now_ns();
            for (k, &pi) in idx[..m].iter().enumerate() {
                let p = &self.pkts[pi];
                let Some(Some(s)) = self.streams.get(p.slot as usize) else { continue };
                if k < sent {
                    let delay = now.saturating_sub(p.rx_ns);
                    s.sides[1 - p.side as usize].stats.sent(p.len);
                    self.stats.total.sent(p.len);
                    s.sides[p.side as usize].stats.delay(delay);
                    self.stats.delay(delay);
                }
            }
            for &pi in &idx[sent.min(m)..m] {
                self.pkts[pi].dropped = Some(Drop::Other);
            }
            i = j;
        }
    }

    /// The socket and address a processed packet leaves by.
    fn destination(&self, p: &Pkt) -> Option<(RawFd, SocketAddr)> {
        if p.dropped.is_some() {
            return None;
        }
        let s = self.streams.get(p.slot as usize)?.as_ref()?;
        let o = &s.sides[1 - p.side as usize];
        match (p.kind, o.mux) {
            (Kind::Rtcp, false) => Some((o.rtcp.as_raw_fd(), o.peer_rtcp?)),
            _ => Some((o.rtp.as_raw_fd(), o.peer_rtp?)),
        }
    }
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
