//! The portable backend: epoll (through mio) tells which sockets are
//! readable; each gets one `recvmmsg` per round (a flooded port cannot
//! starve the others); packets leave by `sendmmsg`, one call per run of
//! packets from one socket.

use super::{Datagram, Io, Round, Wake};
use crate::pool::{Buf, Pool, BUF_LEN};
use crate::stats::WorkerStats;
use crate::sys::{self, Received, RecvScratch, SendScratch, BATCH};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

/// The waker's token (no leg token reaches it).
const WAKER: Token = Token(usize::MAX);
/// The token of descriptors another backend watches through this one (its
/// AF_XDP sockets): they only end the wait.
const WATCHED: Token = Token(usize::MAX - 1);

impl Wake for Waker {
    fn wake(&self) -> io::Result<()> {
        Waker::wake(self)
    }
}

/// epoll, `recvmmsg`, `sendmmsg`.
pub struct SocketsIo {
    poll: Poll,
    events: Events,
    waker: Arc<Waker>,
    /// Sockets by token (-1: none).
    fds: Vec<RawFd>,
    /// Sockets not drained last round: edge-triggered readiness will not be
    /// reported again for them, so they are visited next round.
    pending: Vec<u32>,
    ready: Vec<u32>,
    recv: Box<RecvScratch>,
    send: Box<SendScratch>,
    rx_bufs: Vec<Buf>,
    received: [Received; BATCH],
    /// Where a datagram goes when the pool has no buffer for it.
    drain: Vec<u8>,
    stats: Arc<WorkerStats>,
}

impl SocketsIo {
    /// A backend with its own epoll instance.
    pub fn new(stats: Arc<WorkerStats>) -> io::Result<SocketsIo> {
        let poll = Poll::new()?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Ok(SocketsIo {
            poll,
            events: Events::with_capacity(1024),
            waker,
            fds: Vec::new(),
            pending: Vec::with_capacity(1024),
            ready: Vec::with_capacity(1024),
            recv: RecvScratch::new(),
            send: SendScratch::new(),
            rx_bufs: Vec::with_capacity(BATCH),
            received: [Received { len: 0, from: None, rx_ns: None, truncated: false }; BATCH],
            drain: vec![0u8; BUF_LEN],
            stats,
        })
    }

    /// One `recvmmsg` on the socket of `tok`; true when it has nothing more.
    /// Ends the wait when `fd` becomes readable (level of readiness is the
    /// caller's to check).
    pub fn watch(&mut self, fd: RawFd) -> io::Result<()> {
        self.poll.registry().register(&mut SourceFd(&fd), WATCHED, Interest::READABLE)
    }

    fn receive(&mut self, tok: u32, room: usize, pool: &mut Pool, out: &mut Vec<Datagram>) -> bool {
        let Some(&fd) = self.fds.get(tok as usize).filter(|fd| **fd >= 0) else {
            self.stats.stray();
            return true;
        };
        let want = BATCH.min(room.saturating_sub(out.len()));
        if want == 0 {
            return false;
        }
        while self.rx_bufs.len() < want {
            match pool.take() {
                Some(b) => self.rx_bufs.push(b),
                None => break,
            }
        }
        if self.rx_bufs.is_empty() {
            // No buffer free: read into scratch space so the socket drains;
            // the worker counts the drop. The I/O thread never waits.
            let mut one = [std::mem::take(&mut self.drain)];
            let n = sys::recv_batch(fd, &mut self.recv, &mut one, &mut self.received).unwrap_or(0);
            self.drain = std::mem::take(&mut one[0]);
            self.stats.syscall();
            if n > 0 {
                out.push(Datagram::dropped(tok));
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
        self.stats.syscall();
        for (buf, r) in self.rx_bufs.drain(..n).zip(self.received.iter()) {
            out.push(Datagram {
                len: r.len.min(buf.len()),
                buf,
                tok,
                from: r.from,
                rx_ns: r.rx_ns,
                truncated: r.truncated,
            });
        }
        n < asked
    }
}

impl Io for SocketsIo {
    fn name(&self) -> &'static str {
        "sockets"
    }

    fn waker(&self) -> Arc<dyn Wake> {
        self.waker.clone()
    }

    fn add(&mut self, tok: u32, fd: RawFd) -> io::Result<()> {
        sys::enable_timestamps(fd)?;
        self.poll.registry().register(&mut SourceFd(&fd), Token(tok as usize), Interest::READABLE)?;
        let i = tok as usize;
        if self.fds.len() <= i {
            self.fds.resize(i + 1, -1);
        }
        self.fds[i] = fd;
        Ok(())
    }

    fn remove(&mut self, tok: u32, fd: RawFd) {
        let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
        if let Some(f) = self.fds.get_mut(tok as usize) {
            *f = -1;
        }
        self.pending.retain(|t| *t != tok);
    }

    fn wait(&mut self, idle: Duration, room: usize, pool: &mut Pool, out: &mut Vec<Datagram>) -> Round {
        let idle = if self.pending.is_empty() { idle } else { Duration::ZERO };
        if let Err(e) = self.poll.poll(&mut self.events, Some(idle)) {
            if e.kind() != io::ErrorKind::Interrupted {
                tracing::error!("worker poll failed: {e}");
            }
        }
        self.stats.syscall();
        let mut round = Round::default();
        self.ready.clear();
        self.ready.append(&mut self.pending);
        for ev in self.events.iter() {
            if ev.token() == WAKER {
                round.woken = true;
            } else if ev.token() == WATCHED {
            } else {
                self.ready.push(ev.token().0 as u32);
            }
        }
        // One receive per ready socket per round, while the round has room.
        let ready = std::mem::take(&mut self.ready);
        for &tok in &ready {
            if out.len() >= room || !self.receive(tok, room, pool, out) {
                self.pending.push(tok);
            }
        }
        self.ready = ready;
        for b in self.rx_bufs.drain(..) {
            pool.put(b);
        }
        round.more = !self.pending.is_empty();
        round
    }

    fn send(&mut self, _tok: u32, fd: RawFd, msgs: &[(&[u8], SocketAddr)]) -> usize {
        let sent = match sys::send_batch(fd, &mut self.send, msgs) {
            Ok(k) => k,
            Err(e) => {
                tracing::debug!("sendmmsg: {e}");
                0
            }
        };
        self.stats.send_call();
        self.stats.syscall();
        sent
    }
}
