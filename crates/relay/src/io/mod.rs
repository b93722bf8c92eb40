//! I/O backends: how a worker's packets come in and go out.
//!
//! A worker hands its backend the sockets of its legs, each under a token
//! (`slot * 4 + party * 2 + rtcp`). Each round the backend waits (up to an
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
//! - [`xdp`]: an XDP program steers latched legs' packets into AF_XDP
//!   sockets whose frames are the worker's pool; the worker re-keys each
//!   frame in place and transmits it; the rest takes the socket path.
//! - [`mem`]: a NIC simulated in shared memory, driven as AF_XDP zero-copy
//!   drives a real one (the relay's own cost at NIC speed, for benchmarks
//!   and tests; never chosen by `auto`).

pub mod frame;
mod legs;
pub mod mem;
pub mod sockets;
pub mod uring;
pub mod xdp;

use crate::pool::{Buf, Pool};
use crate::stats::WorkerStats;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Duration;

/// A received datagram, in a buffer of the worker's pool.
#[derive(Debug)]
pub struct Datagram {
    /// The buffer (empty when the pool had none: the datagram was read and
    /// dropped, and only its leg is known).
    pub buf: Buf,
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
    /// pool buffer (no allocation: [`Buf::empty`] holds no memory).
    pub fn dropped(tok: u32) -> Datagram {
        Datagram { buf: Buf::empty(), len: 0, tok, from: None, rx_ns: None, truncated: false }
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
    /// The leg of `tok` latched `peer` (`None`: unlatched again).
    fn latch(&mut self, _tok: u32, _peer: Option<SocketAddr>) {}
    /// Whether [`Io::transmit`] can take packets.
    fn frames(&self) -> bool {
        false
    }
    /// Sends the `len` bytes at the start of `buf` from the socket of `tok`
    /// to `to` as they lie in their buffer (the buffer goes to the kernel),
    /// or hands the buffer back for [`Io::send`].
    fn transmit(&mut self, _tok: u32, buf: Buf, _len: usize, _to: SocketAddr) -> Result<(), Buf> {
        Err(buf)
    }
    /// Hands the round's transmitted packets to the kernel.
    fn flush(&mut self, _pool: &mut Pool) {}
}

/// Which backend a worker uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    /// epoll, `recvmmsg`, `sendmmsg`.
    Sockets,
    /// io_uring.
    Uring,
    /// AF_XDP with the XDP program.
    Xdp,
    /// The simulated NIC in shared memory.
    Mem,
}

impl IoKind {
    /// The setting's name.
    pub fn name(self) -> &'static str {
        match self {
            IoKind::Sockets => "sockets",
            IoKind::Uring => "uring",
            IoKind::Xdp => "xdp",
            IoKind::Mem => "mem",
        }
    }
}

/// The backend chosen for the workers (and, for `xdp`, the attached program).
#[derive(Clone)]
pub struct IoSetup {
    /// The backend.
    pub kind: IoKind,
    /// The XDP program on the media interface (`xdp` only).
    pub xdp: Option<Arc<xdp::Program>>,
    /// The simulated NIC (`mem` only).
    pub mem: Option<Arc<mem::Nic>>,
}

impl IoSetup {
    /// A backend that needs no setup (`sockets`, `uring`).
    pub fn plain(kind: IoKind) -> IoSetup {
        IoSetup { kind, xdp: None, mem: None }
    }
}

impl std::fmt::Debug for IoSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind.name())
    }
}

/// The backend to run: `choice` (`sockets`, `uring`, `xdp`, `mem`, or
/// `auto` for the best one this machine can run), for `workers` workers of
/// `buffers` packet buffers each relaying on the media addresses `addrs`,
/// with why others were passed
/// over. `auto` takes `xdp` only where the interface runs XDP natively,
/// then `uring`; never `mem`, whose NIC lives in `mem_dir`.
pub fn resolve(
    choice: &str,
    addrs: &[IpAddr],
    workers: usize,
    buffers: usize,
    mem_dir: &std::path::Path,
) -> Result<(IoSetup, Vec<String>), String> {
    match choice {
        "mem" => mem::Nic::create(mem_dir)
            .map(|n| (IoSetup { kind: IoKind::Mem, xdp: None, mem: Some(n) }, Vec::new()))
            .map_err(|e| format!("io mem: {e}")),
        "sockets" => Ok((IoSetup::plain(IoKind::Sockets), Vec::new())),
        "uring" => {
            uring::probe().map(|()| (IoSetup::plain(IoKind::Uring), Vec::new())).map_err(|e| format!("io uring: {e}"))
        }
        "xdp" => xdp::Program::attach(addrs, workers, buffers, false)
            .map(|p| (IoSetup { kind: IoKind::Xdp, xdp: Some(p), mem: None }, Vec::new()))
            .map_err(|e| format!("io xdp: {e}")),
        "auto" => {
            let mut why = Vec::new();
            match xdp::Program::attach(addrs, workers, buffers, true) {
                Ok(p) => return Ok((IoSetup { kind: IoKind::Xdp, xdp: Some(p), mem: None }, why)),
                Err(e) => why.push(format!("xdp passed over: {e}")),
            }
            match uring::probe() {
                Ok(()) => Ok((IoSetup::plain(IoKind::Uring), why)),
                Err(e) => {
                    why.push(format!("uring passed over: {e}"));
                    Ok((IoSetup::plain(IoKind::Sockets), why))
                }
            }
        }
        other => Err(format!("io: {other:?} is not one of sockets, uring, xdp, mem, auto")),
    }
}

/// The backend of worker `index` whose packet buffers are `pool`, made on
/// the worker's own thread (it stays there).
pub fn open(setup: &IoSetup, index: usize, pool: &Pool, stats: Arc<WorkerStats>) -> io::Result<Box<dyn Io>> {
    Ok(match (setup.kind, &setup.xdp) {
        (IoKind::Sockets, _) => Box::new(sockets::SocketsIo::new(stats)?),
        (IoKind::Uring, _) => Box::new(uring::UringIo::new(pool.size(), stats)?),
        (IoKind::Xdp, Some(prog)) => Box::new(xdp::XdpIo::new(prog.clone(), index, pool, stats)?),
        (IoKind::Xdp, None) => return Err(io::Error::other("xdp: the program was not attached")),
        (IoKind::Mem, _) => match &setup.mem {
            Some(nic) => Box::new(mem::MemIo::new(nic.clone(), index, pool, stats)?),
            None => return Err(io::Error::other("mem: no NIC directory")),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_falls_back_where_xdp_cannot_run() {
        let lo = [IpAddr::from([127, 0, 0, 1])];
        let dir = std::env::temp_dir().join(format!("srtpgate-mem-resolve-{}", std::process::id()));
        let (setup, why) = resolve("auto", &lo, 1, 64, &dir).expect("auto always finds a backend");
        assert_ne!(setup.kind, IoKind::Xdp);
        assert!(why.iter().any(|w| w.starts_with("xdp passed over:")), "{why:?}");
        let e = resolve("xdp", &lo, 1, 64, &dir).expect_err("xdp on loopback is refused");
        assert!(e.starts_with("io xdp: ") && (e.contains("loopback") || e.contains("not built")), "{e}");
        let e = resolve("dpdk", &lo, 1, 64, &dir).expect_err("unknown backend");
        assert!(e.contains("sockets, uring, xdp, mem, auto"), "{e}");
        assert!(!dir.exists(), "auto never sets up the mem NIC");
    }
}
