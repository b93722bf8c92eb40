//! I/O backends: how a worker's packets come in and go out.
//!
//! A worker hands its backend the sockets of its legs, each under a token
//! (`slot * 4 + side * 2 + rtcp`). Each round the backend waits (up to an
//! idle time, or not at all) for packets or a wake-up from the control
//! thread, delivers what arrived on any of the worker's sockets, as many as
//! the round has room for, and later takes the round's outgoing packets.
//!
//! - [`sockets`]: epoll and one `recvmmsg` per ready socket, `sendmmsg` per
//!   destination socket: the portable path, about two system calls per
//!   packet when each leg sees 50 packets/s.
//! - [`uring`]: one io_uring per worker; a multishot `recvmsg` on every
//!   socket fills buffers from a provided-buffer ring, every send is a
//!   submission entry, and one `io_uring_enter` per round submits the sends
//!   and waits for the next packets.

pub mod sockets;
pub mod uring;

use crate::pool::Pool;
use crate::stats::WorkerStats;
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

/// A received datagram, in a buffer of the worker's pool.
#[derive(Debug)]
pub struct Datagram {
    /// The buffer (empty when the pool had none: the datagram was read and
    /// dropped, and only its leg is known).
    pub buf: Vec<u8>,
    /// Bytes of the datagram in `buf`.
    pub len: usize,
    /// The token of the socket it came in on.
    pub tok: u32,
    /// The sender.
    pub from: Option<SocketAddr>,
    /// The kernel's receive time (CLOCK_REALTIME, ns).
    pub rx_ns: Option<u64>,
    /// Larger than the buffer.
    pub truncated: bool,
}

impl Datagram {
    /// A datagram read from the socket of `tok` and dropped for want of a
    /// pool buffer (no allocation: an empty `Vec` holds none).
    pub fn dropped(tok: u32) -> Datagram {
        Datagram { buf: Vec::new(), len: 0, tok, from: None, rx_ns: None, truncated: false }
    }

    /// Read and dropped for want of a pool buffer.
    pub fn pool_exhausted(&self) -> bool {
        self.buf.is_empty()
    }
}

/// Wakes a worker blocked in its backend (the control thread sent a command).
pub trait Wake: Send + Sync {
    /// Interrupts the worker's wait.
    fn wake(&self) -> io::Result<()>;
}

/// One round's wait: whether the control thread woke the worker, and
/// whether packets may still be waiting (the next wait should not sleep).
#[derive(Clone, Copy, Debug, Default)]
pub struct Round {
    /// The waker fired.
    pub woken: bool,
    /// Not everything that arrived was delivered.
    pub more: bool,
}

/// A worker's packet I/O.
pub trait Io {
    /// The backend's name (`sockets`, `uring`).
    fn name(&self) -> &'static str;
    /// The waker for the control thread.
    fn waker(&self) -> Arc<dyn Wake>;
    /// Starts receiving on `fd` under `tok`.
    fn add(&mut self, tok: u32, fd: RawFd) -> io::Result<()>;
    /// Stops receiving on `fd` (before the worker closes it).
    fn remove(&mut self, tok: u32, fd: RawFd);
    /// Waits up to `idle` for packets or a wake-up, then appends at most
    /// `room` datagrams to `out`, in buffers taken from `pool`.
    fn wait(&mut self, idle: Duration, room: usize, pool: &mut Pool, out: &mut Vec<Datagram>) -> Round;
    /// Sends `msgs` from the socket `fd` (token `tok`); how many the kernel
    /// took. The bytes may be reused as soon as this returns.
    fn send(&mut self, tok: u32, fd: RawFd, msgs: &[(&[u8], SocketAddr)]) -> usize;
}

/// Which backend a worker uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// epoll, `recvmmsg`, `sendmmsg`.
    Sockets,
    /// io_uring.
    Uring,
}

impl IoKind {
    /// The setting's name.
    pub fn name(self) -> &'static str {
        match self {
            IoKind::Sockets => "sockets",
            IoKind::Uring => "uring",
        }
    }
}

/// The backend to run: `choice` (`sockets`, `uring`, or `auto` for the best
/// one this machine can run), with why others were passed over.
pub fn resolve(choice: &str) -> Result<(IoKind, Vec<String>), String> {
    match choice {
        "sockets" => Ok((IoKind::Sockets, Vec::new())),
        "uring" => uring::probe().map(|()| (IoKind::Uring, Vec::new())).map_err(|e| format!("io uring: {e}")),
        "auto" => match uring::probe() {
            Ok(()) => Ok((IoKind::Uring, Vec::new())),
            Err(e) => Ok((IoKind::Sockets, vec![format!("uring passed over: {e}")])),
        },
        other => Err(format!("io: {other:?} is not one of sockets, uring, auto")),
    }
}

/// A backend of `kind` for one worker whose pool has `buffers` buffers,
/// made on the worker's own thread (it stays there).
pub fn open(kind: IoKind, buffers: usize, stats: Arc<WorkerStats>) -> io::Result<Box<dyn Io>> {
    Ok(match kind {
        IoKind::Sockets => Box::new(sockets::SocketsIo::new(stats)?),
        IoKind::Uring => Box::new(uring::UringIo::new(buffers, stats)?),
    })
}
