//! The io_uring backend: one ring per worker (single issuer, task work run
//! only when the worker enters the kernel), its sockets in the ring's table
//! of registered files, a multishot `recvmsg` armed on each that takes its
//! buffers from a provided-buffer ring, and every send of a round queued as
//! a submission entry. One `io_uring_enter` per round submits the sends and
//! waits for the next packets, whichever calls they belong to, so the
//! system calls per packet fall with the load instead of staying at two.
//!
//! Written on the `io-uring` crate's raw interface (there is no higher-level
//! crate for multishot receive into provided buffers that leaves the
//! packets' memory to the caller). The kernel writes into the buffer ring's
//! memory and reads the send slots' memory while requests are in flight:
//! both are allocated once, never move, and live as long as the ring (which
//! is dropped first). Every `unsafe` block says what it relies on.
//!
//! A received datagram is copied once from the ring into a pool buffer (the
//! engines' buffers), and an outgoing one once into a send slot that stays
//! untouched until its completion: about 200 bytes each way, tens of
//! nanoseconds against the microseconds of a system call.

use super::{Datagram, Io, Round, Wake};
use crate::pool::{Pool, BUF_LEN};
use crate::stats::WorkerStats;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use socket2::SockAddr;
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Submission queue entries (the sends of a round, re-arms, cancels).
const SQ_ENTRIES: u32 = 4096;
/// Completion queue entries: multishot receives post one per datagram.
const CQ_ENTRIES: u32 = 32768;
/// Most registered-file slots (the kernel allows no more than the
/// open-file limit); sockets whose token is beyond use plain fds.
const MAX_FILES: u32 = 65_536;
/// The provided-buffer group of the receive ring.
const BGID: u16 = 0;
/// Room for the sender's address in a received buffer (sockaddr_storage).
const NAME_LEN: usize = 128;
/// Room for control messages (one SCM_TIMESTAMPNS).
const CONTROL_LEN: usize = 64;
/// One receive buffer: the kernel's `io_uring_recvmsg_out` header, the name,
/// the control messages and the payload (larger payloads are truncated and
/// dropped as malformed, as with the other backends).
const RBUF: usize = 16 + NAME_LEN + CONTROL_LEN + 2048;
/// Send slots: packets in flight at once.
const SEND_SLOTS: usize = 4096;
/// Receive completions held beyond one per receive buffer (those that end
/// a multishot receive without a buffer).
const HELD_SLACK: usize = 1024;

/// What a completion is for (the top byte of its user data).
const K_RECV: u64 = 1;
const K_SEND: u64 = 2;
const K_WAKE: u64 = 3;
const K_CANCEL: u64 = 4;

fn user_data(kind: u64, gen: u32, index: u32) -> u64 {
    kind << 56 | (gen as u64 & 0xff_ffff) << 32 | index as u64
}

fn decode(ud: u64) -> (u64, u32, u32) {
    (ud >> 56, ((ud >> 32) & 0xff_ffff) as u32, ud as u32)
}

/// The control thread's way in: an eventfd that a multishot poll watches.
pub struct EventFd(OwnedFd);

impl EventFd {
    fn new() -> io::Result<EventFd> {
        // SAFETY: eventfd has no memory arguments; the fd it returns is new
        // and owned here.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a valid descriptor nobody else owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Resets the counter (after a wake-up).
    fn drain(&self) {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into a live u64; a failure (EAGAIN) is fine.
        let _ = unsafe { libc::read(self.0.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }
}

impl Wake for EventFd {
    fn wake(&self) -> io::Result<()> {
        let v = 1u64;
        // SAFETY: writes 8 bytes from a live u64.
        let n = unsafe { libc::write(self.0.as_raw_fd(), (&v as *const u64).cast(), 8) };
        if n == 8 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// The provided-buffer ring: `n` entries the kernel takes buffers from, and
/// the buffers.
struct BufRing {
    ring: *mut types::BufRingEntry,
    layout: Layout,
    bufs: Vec<u8>,
    n: u16,
    /// Our copy of the tail; published to the kernel by `publish`.
    tail: u16,
}

impl BufRing {
    fn new(n: u16) -> io::Result<BufRing> {
        let layout = Layout::from_size_align(n as usize * std::mem::size_of::<types::BufRingEntry>(), 4096)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        // SAFETY: a non-zero size; checked for null below.
        let ring = unsafe { alloc_zeroed(layout) } as *mut types::BufRingEntry;
        if ring.is_null() {
            return Err(io::Error::new(io::ErrorKind::OutOfMemory, "buffer ring"));
        }
        let mut r = BufRing { ring, layout, bufs: vec![0u8; n as usize * RBUF], n, tail: 0 };
        for bid in 0..n {
            r.push(bid);
        }
        r.publish();
        Ok(r)
    }

    /// Queues buffer `bid` for the kernel (seen once published).
    fn push(&mut self, bid: u16) {
        let i = (self.tail & (self.n - 1)) as usize;
        let addr = self.bufs.as_ptr() as u64 + bid as u64 * RBUF as u64;
        // SAFETY: `i < n`, inside the ring's allocation; the kernel reads
        // entries only up to the published tail, which does not cover this
        // one yet.
        let e = unsafe { &mut *self.ring.add(i) };
        e.set_addr(addr);
        e.set_len(RBUF as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the pushed buffers visible to the kernel.
    fn publish(&self) {
        // SAFETY: the tail field of the first entry, aligned for u16, inside
        // the allocation; the release store orders the entries written before.
        let tail = unsafe { &*(types::BufRingEntry::tail(self.ring) as *const AtomicU16) };
        tail.store(self.tail, Ordering::Release);
    }

    /// The bytes the kernel wrote into buffer `bid`.
    fn get(&self, bid: u16, len: usize) -> &[u8] {
        let start = bid as usize * RBUF;
        &self.bufs[start..start + len.min(RBUF)]
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ring as *mut u8, self.layout) }
    }
}

/// Packets in flight to the kernel: their bytes and destination stay here,
/// untouched, until the send's completion.
struct SendSlots {
    bufs: Vec<u8>,
    addrs: Vec<SockAddr>,
    free: Vec<u32>,
}

/// The io_uring backend of one worker.
pub struct UringIo {
    // Dropped first: the kernel stops using the memory below with it.
    ring: IoUring,
    bufs: BufRing,
    sends: SendSlots,
    /// The template of the multishot `recvmsg` (name and control lengths).
    msghdr: Box<libc::msghdr>,
    waker: Arc<EventFd>,
    /// Registered-file slots.
    files: u32,
    /// Sockets by token (-1: none) and their generation (stale completions
    /// of a removed socket are told apart from a new socket's).
    fds: Vec<RawFd>,
    gens: Vec<u32>,
    /// Tokens whose multishot receive ended and must be armed again.
    rearm: Vec<u32>,
    /// Receive completions read past a full round (token, generation,
    /// result, flags), delivered first next round: the completion queue
    /// is read to its end every round, so that the send completions queued
    /// behind a backlog of receives free their slots (a worker that fell
    /// behind would otherwise run out of send slots and drop what it
    /// relays). At most one per receive buffer, and room for that is made
    /// at start.
    held: std::collections::VecDeque<(u32, u32, i32, u32)>,
    wake_armed: bool,
    stats: Arc<WorkerStats>,
}

/// The ring as srtpgate sets it up.
fn ring() -> io::Result<IoUring> {
    IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(CQ_ENTRIES)
        .setup_submit_all()
        .build(SQ_ENTRIES)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) => io::Error::new(
                e.kind(),
                format!(
                    "{e}: io_uring is disabled for this process (sysctl kernel.io_uring_disabled, or a seccomp filter)"
                ),
            ),
            Some(libc::ENOSYS) => io::Error::new(e.kind(), format!("{e}: the kernel has no io_uring")),
            Some(libc::EINVAL) => io::Error::new(
                e.kind(),
                format!("{e}: the kernel lacks single-issuer/deferred task run (Linux 6.1 or later needed)"),
            ),
            _ => e,
        })
}

impl UringIo {
    /// A ring whose receive buffers are `buffers` (rounded to a power of
    /// two, 64…32 768). Must be called on the thread that will use it (the
    /// ring has a single issuer).
    pub fn new(buffers: usize, stats: Arc<WorkerStats>) -> io::Result<UringIo> {
        let ring = ring()?;
        let files = crate::sys::nofile_limit().0.min(MAX_FILES as u64) as u32;
        ring.submitter().register_files_sparse(files)?;
        let n = buffers.clamp(64, 32_768).next_power_of_two().min(32_768) as u16;
        let bufs = BufRing::new(n)?;
        // SAFETY: the ring memory is valid for `n` entries and lives as long
        // as the ring (`bufs` is dropped after `ring`).
        unsafe { ring.submitter().register_buf_ring_with_flags(bufs.ring as u64, n, BGID, 0)? };
        // SAFETY: an all-zero msghdr is a valid (empty) value.
        let mut msghdr: Box<libc::msghdr> = Box::new(unsafe { std::mem::zeroed() });
        msghdr.msg_namelen = NAME_LEN as u32;
        msghdr.msg_controllen = CONTROL_LEN;
        let sends = SendSlots {
            bufs: vec![0u8; SEND_SLOTS * BUF_LEN],
            addrs: (0..SEND_SLOTS).map(|_| SockAddr::from(SocketAddr::from(([0, 0, 0, 0], 0)))).collect(),
            free: (0..SEND_SLOTS as u32).rev().collect(),
        };
        let mut me = UringIo {
            ring,
            bufs,
            sends,
            msghdr,
            waker: Arc::new(EventFd::new()?),
            files,
            fds: Vec::new(),
            gens: Vec::new(),
            rearm: Vec::new(),
            held: std::collections::VecDeque::with_capacity(n as usize + HELD_SLACK),
            wake_armed: false,
            stats,
        };
        me.arm_wake();
        Ok(me)
    }

    fn push(&mut self, e: &squeue::Entry) {
        loop {
            // SAFETY: every entry pushed refers to memory that outlives its
            // request (see the module notes).
            if unsafe { self.ring.submission().push(e) }.is_ok() {
                return;
            }
            // Queue full: hand what is there to the kernel now.
            if let Err(err) = self.ring.submit() {
                tracing::warn!("io_uring submit: {err}");
            }
            self.stats.syscall();
        }
    }

    fn arm_wake(&mut self) {
        let e = opcode::PollAdd::new(types::Fd(self.waker.0.as_raw_fd()), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(user_data(K_WAKE, 0, 0));
        self.push(&e);
        self.wake_armed = true;
    }

    fn arm_recv(&mut self, tok: u32) {
        let Some(&fd) = self.fds.get(tok as usize).filter(|fd| **fd >= 0) else { return };
        let gen = self.gens[tok as usize];
        let msg: *const libc::msghdr = &*self.msghdr;
        let e = if tok < self.files {
            opcode::RecvMsgMulti::new(types::Fixed(tok), msg, BGID).build()
        } else {
            opcode::RecvMsgMulti::new(types::Fd(fd), msg, BGID).build()
        };
        self.push(&e.user_data(user_data(K_RECV, gen, tok)));
    }

    /// One receive completion: the datagram into a pool buffer (or a drop
    /// marker), the ring buffer back to the kernel.
    fn received(&mut self, tok: u32, gen: u32, res: i32, flags: u32, pool: &mut Pool, out: &mut Vec<Datagram>) {
        let live = self.fds.get(tok as usize).is_some_and(|fd| *fd >= 0) && self.gens.get(tok as usize) == Some(&gen);
        if !cqueue::more(flags) && live && res != -libc::ECANCELED {
            self.rearm.push(tok);
        }
        let Some(bid) = cqueue::buffer_select(flags) else {
            if res < 0 && res != -libc::ENOBUFS && res != -libc::ECANCELED {
                tracing::debug!("io_uring recvmsg: {}", io::Error::from_raw_os_error(-res));
            }
            return;
        };
        if live && res >= 0 {
            let data = self.bufs.get(bid, res as usize);
            match types::RecvMsgOut::parse(data, &self.msghdr) {
                Ok(m) => {
                    let payload = m.payload_data();
                    match pool.take() {
                        Some(mut buf) => {
                            let len = payload.len().min(buf.len());
                            buf[..len].copy_from_slice(&payload[..len]);
                            out.push(Datagram {
                                buf,
                                len,
                                tok,
                                from: sockaddr(m.name_data()),
                                rx_ns: crate::sys::control_timestamp_ns(m.control_data()),
                                truncated: m.is_payload_truncated(),
                            });
                        }
                        None => out.push(Datagram::dropped(tok)),
                    }
                }
                Err(()) => tracing::debug!("io_uring recvmsg: malformed result of {res} bytes"),
            }
        }
        self.bufs.push(bid);
    }
}

impl Io for UringIo {
    fn name(&self) -> &'static str {
        "uring"
    }

    fn waker(&self) -> Arc<dyn Wake> {
        self.waker.clone()
    }

    fn add(&mut self, tok: u32, fd: RawFd) -> io::Result<()> {
        crate::sys::enable_timestamps(fd)?;
        let i = tok as usize;
        if self.fds.len() <= i {
            self.fds.resize(i + 1, -1);
            self.gens.resize(i + 1, 0);
        }
        if tok < self.files {
            self.ring.submitter().register_files_update(tok, &[fd])?;
        }
        self.fds[i] = fd;
        self.gens[i] = self.gens[i].wrapping_add(1) & 0xff_ffff;
        self.arm_recv(tok);
        Ok(())
    }

    fn remove(&mut self, tok: u32, _fd: RawFd) {
        let i = tok as usize;
        let Some(gen) = self.gens.get(i).copied() else { return };
        let e = opcode::AsyncCancel::new(user_data(K_RECV, gen, tok)).build().user_data(user_data(K_CANCEL, 0, tok));
        self.push(&e);
        // Cancelled now rather than at the next wait: the socket may be
        // registered with another worker's ring next (a call that moves),
        // and a receive still armed here would take its datagrams.
        if let Err(e) = self.ring.submit() {
            tracing::debug!("io_uring: submitting a cancel: {e}");
        }
        if tok < self.files {
            // The request in flight keeps its own reference to the socket.
            let _ = self.ring.submitter().register_files_update(tok, &[-1]);
        }
        self.fds[i] = -1;
        self.gens[i] = gen.wrapping_add(1) & 0xff_ffff;
        self.rearm.retain(|t| *t != tok);
    }

    fn wait(&mut self, idle: Duration, room: usize, pool: &mut Pool, out: &mut Vec<Datagram>) -> Round {
        let mut round = Round::default();
        for tok in std::mem::take(&mut self.rearm) {
            self.arm_recv(tok);
        }
        if !self.wake_armed {
            self.arm_wake();
        }
        self.bufs.publish();
        // Submit the round's sends and wait for a completion, or the idle
        // time (none when completions are already there).
        let idle = if self.ring.completion().is_empty() { idle } else { Duration::ZERO };
        let ts = types::Timespec::new().sec(idle.as_secs()).nsec(idle.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        if let Err(e) = self.ring.submitter().submit_with_args(1, &args) {
            match e.raw_os_error() {
                Some(libc::ETIME) | Some(libc::EINTR) | Some(libc::EBUSY) => {}
                _ => tracing::warn!("io_uring_enter: {e}"),
            }
        }
        self.stats.syscall();
        while out.len() < room {
            let Some((tok, gen, res, flags)) = self.held.pop_front() else { break };
            self.received(tok, gen, res, flags, pool, out);
        }
        loop {
            let Some(cqe) = self.ring.completion().next() else { break };
            let (kind, gen, index) = decode(cqe.user_data());
            match kind {
                K_RECV if out.len() < room && self.held.is_empty() => {
                    self.received(index, gen, cqe.result(), cqe.flags(), pool, out)
                }
                K_RECV => {
                    self.held.push_back((index, gen, cqe.result(), cqe.flags()));
                    if self.held.len() == self.held.capacity() {
                        break;
                    }
                }
                K_SEND => {
                    if cqe.result() < 0 {
                        self.stats.send_failed();
                        tracing::debug!("io_uring send: {}", io::Error::from_raw_os_error(-cqe.result()));
                    }
                    self.sends.free.push(index);
                }
                K_WAKE => {
                    round.woken = true;
                    self.waker.drain();
                    if !cqueue::more(cqe.flags()) {
                        self.wake_armed = false;
                    }
                }
                _ => {}
            }
        }
        self.bufs.publish();
        round.more = !self.held.is_empty() || !self.ring.completion().is_empty();
        round
    }

    fn send(&mut self, tok: u32, fd: RawFd, msgs: &[(&[u8], SocketAddr)]) -> usize {
        let mut sent = 0;
        for (bytes, to) in msgs {
            let Some(slot) = self.sends.free.pop() else { break };
            let s = slot as usize;
            let len = bytes.len().min(BUF_LEN);
            let buf = &mut self.sends.bufs[s * BUF_LEN..s * BUF_LEN + len];
            buf.copy_from_slice(&bytes[..len]);
            self.sends.addrs[s] = SockAddr::from(*to);
            let (ptr, addr, alen) = (buf.as_ptr(), self.sends.addrs[s].as_ptr(), self.sends.addrs[s].len());
            let e = if tok < self.files {
                opcode::Send::new(types::Fixed(tok), ptr, len as u32)
            } else {
                opcode::Send::new(types::Fd(fd), ptr, len as u32)
            }
            .dest_addr(addr.cast())
            .dest_addr_len(alen)
            .build()
            .user_data(user_data(K_SEND, 0, slot));
            self.push(&e);
            sent += 1;
        }
        self.stats.send_call();
        sent
    }
}

/// A socket address from the bytes of a `sockaddr_in`/`sockaddr_in6`.
fn sockaddr(b: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes(b.get(0..2)?.try_into().ok()?);
    let port = u16::from_be_bytes(b.get(2..4)?.try_into().ok()?);
    match family as i32 {
        libc::AF_INET => {
            let ip: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(ip), port)))
        }
        libc::AF_INET6 => {
            let flow = u32::from_be_bytes(b.get(4..8)?.try_into().ok()?);
            let ip: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            let scope = u32::from_ne_bytes(b.get(24..28)?.try_into().ok()?);
            Some(SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(ip), port, flow, scope)))
        }
        _ => None,
    }
}

/// Whether this machine runs the backend: a ring with its flags, the
/// registered files and buffer ring, and a multishot `recvmsg` that really
/// receives a datagram sent to itself on loopback.
pub fn probe() -> Result<(), String> {
    let stats = Arc::new(WorkerStats::new());
    let mut io = UringIo::new(64, stats).map_err(|e| e.to_string())?;
    let sock = std::net::UdpSocket::bind(("127.0.0.1", 0)).map_err(|e| format!("probe socket: {e}"))?;
    sock.set_nonblocking(true).map_err(|e| e.to_string())?;
    io.add(0, sock.as_raw_fd()).map_err(|e| format!("registering a socket: {e}"))?;
    let to = sock.local_addr().map_err(|e| e.to_string())?;
    let mut pool = Pool::new(4);
    let mut out = Vec::new();
    io.wait(Duration::ZERO, 4, &mut pool, &mut out);
    sock.send_to(b"probe", to).map_err(|e| e.to_string())?;
    for _ in 0..20 {
        io.wait(Duration::from_millis(10), 4, &mut pool, &mut out);
        if let Some(d) = out.first() {
            return if d.len == 5 && d.from == Some(to) {
                Ok(())
            } else {
                Err(format!("multishot recvmsg gave {} bytes from {:?}", d.len, d.from))
            };
        }
    }
    Err("multishot recvmsg received nothing (Linux 6.0 or later needed)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe is a real receive through a multishot recvmsg on loopback.
    /// Where the kernel has io_uring (`SRTPGATE_REQUIRE=uring`), any probe
    /// failure, a wrong receive included, fails: `--io auto` would fall
    /// back to sockets and hide it.
    #[test]
    fn probe_receives_on_loopback() {
        if let Err(e) = probe() {
            srtpgate_testkit::skip("uring", "io_uring probe", e);
        }
    }

    /// Many datagrams from several senders through one ring, with a wake-up
    /// in between: each arrives once, with its sender and a kernel time.
    #[test]
    fn receives_from_many_sockets_and_wakes() {
        if let Err(e) = probe() {
            srtpgate_testkit::skip("uring", "io_uring receive test", e);
            return;
        }
        let mut io = UringIo::new(256, Arc::new(WorkerStats::new())).expect("ring");
        let socks: Vec<_> = (0..8).map(|_| std::net::UdpSocket::bind(("127.0.0.1", 0)).expect("bind")).collect();
        for (i, s) in socks.iter().enumerate() {
            s.set_nonblocking(true).expect("nonblocking");
            io.add(i as u32 * 2, s.as_raw_fd()).expect("add");
        }
        let mut pool = Pool::new(512);
        let mut out = Vec::new();
        io.wait(Duration::ZERO, 512, &mut pool, &mut out);
        let sender = std::net::UdpSocket::bind(("127.0.0.1", 0)).expect("sender");
        for round in 0..25u8 {
            for s in &socks {
                sender.send_to(&[round; 100], s.local_addr().expect("addr")).expect("send");
            }
        }
        io.waker().wake().expect("wake");
        let mut woken = false;
        for _ in 0..100 {
            let r = io.wait(Duration::from_millis(10), 512, &mut pool, &mut out);
            woken |= r.woken;
            if out.len() == 200 && woken {
                break;
            }
        }
        assert!(woken, "the waker did not end a wait");
        assert_eq!(out.len(), 200);
        let me = sender.local_addr().expect("addr");
        for d in &out {
            assert_eq!((d.len, d.from, d.tok % 2), (100, Some(me), 0));
            assert!(d.rx_ns.is_some(), "no kernel receive time");
        }
        // Removed sockets deliver nothing more.
        for (i, s) in socks.iter().enumerate() {
            io.remove(i as u32 * 2, s.as_raw_fd());
        }
        for d in out.drain(..) {
            pool.put(d.buf);
        }
        sender.send_to(b"late", socks[0].local_addr().expect("addr")).expect("send");
        io.wait(Duration::from_millis(20), 512, &mut pool, &mut out);
        assert!(out.is_empty(), "a removed socket delivered {} datagrams", out.len());
        assert_eq!(pool.free(), 512, "buffers lost");
    }

    #[test]
    fn user_data_round_trips() {
        let ud = user_data(K_RECV, 0xab_cdef, 0x1234_5678);
        assert_eq!(decode(ud), (K_RECV, 0xab_cdef, 0x1234_5678));
    }

    #[test]
    fn socket_addresses_from_bytes() {
        let v4 = SocketAddr::from(([198, 18, 0, 1], 4000));
        let s = SockAddr::from(v4);
        // SAFETY: as_ptr points at s.len() valid bytes.
        let b = unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, s.len() as usize) };
        assert_eq!(sockaddr(b), Some(v4));
        let v6: SocketAddr = "[2001:db8::7]:5004".parse().expect("addr");
        let s = SockAddr::from(v6);
        // SAFETY: as above.
        let b = unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, s.len() as usize) };
        assert_eq!(sockaddr(b), Some(v6));
        assert_eq!(sockaddr(&[0; 3]), None);
    }
}
