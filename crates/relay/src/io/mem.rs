//! The `mem` backend: a NIC simulated in shared memory, driven exactly as
//! AF_XDP zero-copy drives a real one, with the NIC's own cost set to zero.
//! For benchmarks and tests (`--io mem`); `auto` never chooses it.
//!
//! Each worker's packet pool lives in a file of the NIC's directory
//! (`worker-N`, on tmpfs: `/dev/shm`), beside four single-producer
//! single-consumer rings, as an AF_XDP socket's UMEM and rings are laid out:
//!
//! | ring | producer → consumer | holds |
//! |---|---|---|
//! | fill | worker → NIC | frames the NIC may receive into |
//! | rx | NIC → worker | received frames (Ethernet, IPv4/IPv6, UDP) and their receive time |
//! | tx | worker → NIC | frames to transmit, headers written in their headroom |
//! | completion | NIC → worker | transmitted frames, back to the pool |
//!
//! The other side (the load generator's NIC, [`Port`]) maps the same file:
//! it writes frames into the frames the fill ring gave it and reads the
//! transmitted ones where the worker re-keyed them. Neither side makes a
//! system call per packet: indices are atomics in the shared mapping, read
//! with acquire and published with release ordering, as in AF_XDP's rings.
//! A worker that has nothing to do parks for at most [`PARK`] (with
//! `--busy-poll` it never does).
//!
//! The NIC is trusted as a driver is, except with the worker's frames: a
//! frame it hands back (rx or completion) must be one the worker lent it
//! (fill or tx), or it is refused and counted, so that no frame is ever
//! used twice. What it writes into a frame is parsed like any packet.
//!
//! Steering: the NIC's `steering` file maps a UDP destination port to the
//! worker that owns it (1 + its index; 0: none), written by the workers as
//! legs come and go, as flow-steering rules would be installed on a NIC.
//! A frame for a port no worker owns is the NIC's to drop.
//!
//! Every leg keeps its UDP socket (ports are still bound by the control
//! plane, and a subscriber's copies still leave by their fork's socket),
//! but no packet of a leg goes through the kernel.

use super::frame::{addr_sum, ipv4_udp_dst_port, parse, write_headers};
use super::legs::Legs;
use super::sockets::SocketsIo;
use super::{Datagram, Io, Round, Wake};
use crate::pool::{Buf, Pool, Region, XDP_FRAME, XDP_HEADROOM};
use crate::stats::WorkerStats;
use std::fs::{File, OpenOptions};
use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The first bytes of a worker's file.
pub const MAGIC: u64 = u64::from_be_bytes(*b"SRTPGMEM");
/// The layout's version.
pub const VERSION: u32 = 1;
/// Entries of each ring (a power of two): the fill ring is the only buffer
/// between the NIC and a worker that is late, as with AF_XDP.
pub const RING: u32 = 8192;
/// Frames of a worker's pool with this backend, at least: the fill ring's
/// share and as many for frames being re-keyed and in flight.
pub const MIN_FRAMES: usize = 2 * RING as usize;
/// The longest a worker with nothing to do parks before it looks again.
pub const PARK: Duration = Duration::from_micros(50);
/// The relay's MAC address on the simulated NIC (locally administered).
pub const RELAY_MAC: [u8; 6] = [0x02, 0x53, 0x52, 0x54, 0x50, 0x01];
/// The MAC address frames are transmitted to (the NIC's peer).
pub const PEER_MAC: [u8; 6] = [0x02, 0x53, 0x52, 0x54, 0x50, 0x02];
/// Bytes of the header page.
const HEADER_LEN: usize = 4096;
/// Bytes of the steering table (a byte per UDP port).
const STEERING_LEN: usize = 65_536;

/// The header page of a worker's file.
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`VERSION`].
    pub version: u32,
    /// The worker's index.
    pub worker: u32,
    /// Frames in the pool.
    pub frames: u32,
    /// Bytes between the starts of two frames.
    pub pitch: u32,
    /// Where a frame's packet may start at the earliest (headroom for the
    /// headers the worker writes in front of a payload).
    pub headroom: u32,
    /// Entries per ring.
    pub ring: u32,
    /// Offset of the frames in the file.
    pub frames_offset: u64,
    /// The relay's process.
    pub pid: u32,
    /// 1 while the worker serves the rings.
    pub ready: AtomicU32,
}

/// One ring entry: a frame's address (frame × pitch + offset of its first
/// byte) and, on the rx and tx rings, the frame's length and receive time
/// (CLOCK_REALTIME ns; 0 on tx).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Desc {
    /// The frame's address in the frames area.
    pub addr: u64,
    /// Bytes of the frame.
    pub len: u32,
    /// Unused (0).
    pub flags: u32,
    /// When the NIC received it (rx), CLOCK_REALTIME ns.
    pub ns: u64,
}

/// A ring index on a cache line of its own (producer and consumer are on
/// two cores).
#[repr(C, align(64))]
struct Index(AtomicU32);

#[repr(C)]
struct RingHead {
    producer: Index,
    consumer: Index,
}

/// Bytes one ring takes in the file (page-aligned).
const fn ring_bytes() -> usize {
    (std::mem::size_of::<RingHead>() + RING as usize * std::mem::size_of::<Desc>()).next_multiple_of(4096)
}

/// Offset of the frames in a worker's file.
pub const fn frames_offset() -> usize {
    HEADER_LEN + 4 * ring_bytes()
}

/// Which ring (its place in the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Worker → NIC: free frames.
    Fill = 0,
    /// NIC → worker: received frames.
    Rx = 1,
    /// Worker → NIC: frames to send.
    Tx = 2,
    /// NIC → worker: sent frames.
    Completion = 3,
}

/// One side of one ring in a shared mapping: the producer or the consumer
/// (never both). Entries are written before the producer index is
/// published (release) and read after it is loaded (acquire).
pub struct Ring {
    head: NonNull<RingHead>,
    descs: NonNull<Desc>,
    /// The producer's next index (producer side), or the last one seen
    /// (consumer side).
    prod: u32,
    /// The consumer's next index (consumer side), or the last one seen.
    cons: u32,
}

impl Ring {
    /// The ring `which` of the mapping at `base` (a worker's file mapped
    /// from offset 0).
    ///
    /// # Safety
    /// `base` must map at least [`frames_offset`] bytes of a worker's file
    /// for as long as the ring is used, and only one party may use each
    /// side of the ring.
    unsafe fn at(base: NonNull<u8>, which: Which) -> Ring {
        // SAFETY: within the mapping, per the caller; page-aligned offsets.
        let head = unsafe { base.add(HEADER_LEN + which as usize * ring_bytes()) }.cast::<RingHead>();
        // SAFETY: the entries follow the head in the same ring's bytes.
        let descs = unsafe { head.add(1) }.cast::<Desc>();
        // SAFETY: the head is valid (above).
        let (p, c) = unsafe {
            (head.as_ref().producer.0.load(Ordering::Acquire), head.as_ref().consumer.0.load(Ordering::Acquire))
        };
        Ring { head, descs, prod: p, cons: c }
    }

    fn head(&self) -> &RingHead {
        // SAFETY: valid for the ring's life (`Ring::at`).
        unsafe { self.head.as_ref() }
    }

    /// Producer: entries that can be pushed now.
    pub fn room(&mut self) -> u32 {
        if self.prod.wrapping_sub(self.cons) >= RING {
            self.cons = self.head().consumer.0.load(Ordering::Acquire);
        }
        RING - self.prod.wrapping_sub(self.cons)
    }

    /// Producer: appends `d` (seen by the consumer after [`Ring::publish`]);
    /// false when the ring is full.
    pub fn push(&mut self, d: Desc) -> bool {
        if self.room() == 0 {
            return false;
        }
        // SAFETY: the index is masked into the ring; the consumer does not
        // read this entry before the producer index passes it.
        unsafe { self.descs.add((self.prod & (RING - 1)) as usize).write_volatile(d) };
        self.prod = self.prod.wrapping_add(1);
        true
    }

    /// Producer: makes the pushed entries visible.
    pub fn publish(&mut self) {
        self.head().producer.0.store(self.prod, Ordering::Release);
    }

    /// Consumer: entries waiting.
    pub fn waiting(&mut self) -> u32 {
        if self.prod == self.cons {
            self.prod = self.head().producer.0.load(Ordering::Acquire);
        }
        self.prod.wrapping_sub(self.cons)
    }

    /// Consumer: the next entry (its slot is the producer's again after
    /// [`Ring::release`]).
    pub fn pop(&mut self) -> Option<Desc> {
        if self.waiting() == 0 {
            return None;
        }
        // SAFETY: the producer published this entry (acquire above) and
        // does not overwrite it before the consumer index passes it.
        let d = unsafe { self.descs.add((self.cons & (RING - 1)) as usize).read_volatile() };
        self.cons = self.cons.wrapping_add(1);
        Some(d)
    }

    /// Consumer: the entry `k` places after the next one, without taking
    /// it (`None` past what is waiting).
    pub fn peek(&mut self, k: u32) -> Option<Desc> {
        if k >= self.waiting() {
            return None;
        }
        // SAFETY: as in `pop`: published, and not overwritten before the
        // consumer index passes it.
        Some(unsafe { self.descs.add((self.cons.wrapping_add(k) & (RING - 1)) as usize).read_volatile() })
    }

    /// Consumer: gives the popped entries' slots back.
    pub fn release(&mut self) {
        self.head().consumer.0.store(self.cons, Ordering::Release);
    }
}

/// The simulated NIC's directory, shared by the workers: where their files
/// are, and the steering table.
pub struct Nic {
    dir: PathBuf,
    steering: Region,
}

impl Nic {
    /// Sets up the NIC's directory `dir` (made if missing; the workers'
    /// files are made as they start).
    pub fn create(dir: &Path) -> Result<Arc<Nic>, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("steering");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        file.set_len(STEERING_LEN as u64).map_err(|e| format!("{}: {e}", path.display()))?;
        let steering = Region::shared(&file, 0, STEERING_LEN).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Arc::new(Nic { dir: dir.to_path_buf(), steering }))
    }

    /// The file of worker `index`.
    pub fn worker_path(dir: &Path, index: usize) -> PathBuf {
        dir.join(format!("worker-{index}"))
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn steer(&self, port: u16, worker: Option<usize>) {
        let v = worker.map_or(0, |w| (w + 1).min(255) as u8);
        // SAFETY: `port` < 65 536 indexes the table; atomic byte access.
        unsafe { (*self.steering.ptr().as_ptr().add(port as usize).cast::<AtomicU8>()).store(v, Ordering::Release) };
    }

    /// The pool of worker `index`: `buffers` frames (at least
    /// [`MIN_FRAMES`]) in the frames area of its file, made now.
    pub fn pool(&self, index: usize, buffers: usize) -> io::Result<Pool> {
        let frames = buffers.max(MIN_FRAMES);
        let path = Nic::worker_path(&self.dir, index);
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&path)?;
        file.set_len((frames_offset() + frames * XDP_FRAME) as u64)?;
        Pool::shared(&file, frames_offset(), frames)
    }
}

/// Wakes a worker parked in its wait.
struct Waker {
    woken: AtomicBool,
    thread: std::thread::Thread,
}

impl Wake for Waker {
    fn wake(&self) -> io::Result<()> {
        self.woken.store(true, Ordering::Release);
        self.thread.unpark();
        Ok(())
    }
}

/// The `mem` backend of one worker.
pub struct MemIo {
    // The rings point into `map`: declared (dropped) before it.
    fill: Ring,
    rx: Ring,
    tx: Ring,
    completion: Ring,
    map: Region,
    nic: Arc<Nic>,
    index: usize,
    pitch: u64,
    /// Frames in the fill ring (the NIC's to receive into).
    in_fill: u32,
    /// Bit per frame: the NIC holds it (given by the fill or tx ring, not
    /// back yet). A frame the NIC hands back must be one of these: the
    /// NIC's process cannot make the worker hand out a frame it is using.
    at_nic: Vec<u64>,
    /// Frames the NIC handed back that it did not hold (refused).
    refused: u64,
    fill_target: u32,
    /// The legs' tokens, looked up for every received frame.
    leg_tokens: Legs,
    /// A leg's local address, by token.
    locals: Vec<Option<SocketAddr>>,
    /// Per token: the last destination and its pseudo-header address sum
    /// ([`addr_sum`]), so that a leg's packets are not summed each time.
    sums: Vec<Option<(SocketAddr, u64)>>,
    ip_id: u16,
    waker: Arc<Waker>,
    /// Sends of sockets the backend does not hold (subscribers' copies).
    inner: SocketsIo,
    stats: Arc<WorkerStats>,
}

impl MemIo {
    /// The backend of worker `index` over `pool` (made by [`Nic::pool`]);
    /// call on the worker's thread.
    pub fn new(nic: Arc<Nic>, index: usize, pool: &Pool, stats: Arc<WorkerStats>) -> io::Result<MemIo> {
        let path = Nic::worker_path(&nic.dir, index);
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        let map = Region::shared(&file, 0, frames_offset())?;
        // SAFETY: the header page is mapped; the file was just made (zeros).
        let header = unsafe { map.ptr().cast::<Header>().as_mut() };
        header.magic = MAGIC;
        header.version = VERSION;
        header.worker = index as u32;
        header.frames = pool.size() as u32;
        header.pitch = pool.pitch() as u32;
        header.headroom = pool.headroom() as u32;
        header.ring = RING;
        header.frames_offset = frames_offset() as u64;
        header.pid = std::process::id();
        // SAFETY: the mapping covers the rings and lives in `map`, dropped
        // after them; the worker is the only party on its sides.
        let rings = unsafe { [Which::Fill, Which::Rx, Which::Tx, Which::Completion].map(|w| Ring::at(map.ptr(), w)) };
        let [fill, rx, tx, completion] = rings;
        let me = MemIo {
            fill,
            rx,
            tx,
            completion,
            map,
            nic,
            index,
            pitch: pool.pitch() as u64,
            in_fill: 0,
            at_nic: vec![0; pool.size().div_ceil(64)],
            refused: 0,
            fill_target: (pool.size() as u32 / 2).min(RING),
            leg_tokens: Legs::new(),
            locals: Vec::new(),
            sums: Vec::new(),
            ip_id: 0,
            waker: Arc::new(Waker { woken: AtomicBool::new(false), thread: std::thread::current() }),
            inner: SocketsIo::new(stats.clone())?,
            stats,
        };
        me.header().ready.store(1, Ordering::Release);
        Ok(me)
    }

    fn header(&self) -> &Header {
        // SAFETY: the header page is mapped while `map` lives.
        unsafe { self.map.ptr().cast::<Header>().as_ref() }
    }

    /// Marks frame `f` as the NIC's.
    fn lend(&mut self, f: u32) {
        if let Some(w) = self.at_nic.get_mut(f as usize / 64) {
            *w |= 1 << (f % 64);
        }
    }

    /// The NIC holds frame `f` (lent, not taken back).
    fn at_nic(&self, f: u32) -> bool {
        self.at_nic.get(f as usize / 64).is_some_and(|w| w & (1 << (f % 64)) != 0)
    }

    /// Takes frame `f` back from the NIC: false (counted) when the NIC did
    /// not hold it.
    fn take_back(&mut self, f: u32) -> bool {
        match self.at_nic.get_mut(f as usize / 64) {
            Some(w) if *w & (1 << (f % 64)) != 0 => {
                *w &= !(1 << (f % 64));
                true
            }
            _ => {
                self.refused += 1;
                if self.refused.is_power_of_two() {
                    tracing::warn!("mem: the NIC handed back {} frames it did not hold", self.refused);
                }
                false
            }
        }
    }

    /// Frames the NIC transmitted, back to the pool.
    fn reap(&mut self, pool: &mut Pool) {
        while let Some(d) = self.completion.pop() {
            let f = (d.addr / self.pitch) as u32;
            if self.take_back(f) {
                pool.put_frame(f);
            }
        }
        self.completion.release();
    }

    /// Tops the fill ring up from the pool.
    fn refill(&mut self, pool: &mut Pool) {
        let mut n = 0;
        while self.in_fill < self.fill_target && self.fill.room() > 0 {
            let Some(b) = pool.take() else { break };
            let addr = u64::from(b.frame()) * self.pitch + b.offset() as u64;
            self.lend(Pool::release(b));
            self.fill.push(Desc { addr, ..Desc::default() });
            self.in_fill += 1;
            n += 1;
        }
        if n > 0 {
            self.fill.publish();
        }
    }

    /// A received frame into a datagram (its UDP payload, in place).
    fn frame_in(&mut self, d: Desc, pool: &mut Pool, out: &mut Vec<Datagram>) {
        let (frame, off) = ((d.addr / self.pitch) as u32, (d.addr % self.pitch) as usize);
        if !self.take_back(frame) {
            return;
        }
        let Some(mut buf) = pool.frame_buf(frame, off) else {
            tracing::debug!("mem: a frame outside the pool ({})", d.addr);
            return;
        };
        let parsed = parse(&buf[..(d.len as usize).min(buf.len())]);
        let tok = parsed.and_then(|(_, _, _, dst)| self.leg_tokens.get(dst));
        match (parsed, tok) {
            (Some((hdr, len, from, _)), Some(tok)) if buf.advance(hdr) => {
                out.push(Datagram { buf, len, tok, from: Some(from), rx_ns: Some(d.ns), truncated: false });
            }
            _ => {
                // Not a leg's (a leg removed while its frame was in flight,
                // or not UDP over IP).
                self.stats.stray();
                pool.put(buf);
            }
        }
    }
}

impl Io for MemIo {
    fn name(&self) -> &'static str {
        "mem"
    }

    fn waker(&self) -> Arc<dyn Wake> {
        self.waker.clone()
    }

    fn add(&mut self, tok: u32, fd: RawFd) -> io::Result<()> {
        // SAFETY: the worker's socket, open for this call.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let local = socket2::SockRef::from(&borrowed)
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("mem: a leg's socket has no IP address"))?;
        if self.locals.len() <= tok as usize {
            self.locals.resize(tok as usize + 1, None);
            self.sums.resize(tok as usize + 1, None);
        }
        self.locals[tok as usize] = Some(local);
        self.sums[tok as usize] = None;
        self.leg_tokens.insert(local, tok);
        self.nic.steer(local.port(), Some(self.index));
        Ok(())
    }

    fn remove(&mut self, tok: u32, _fd: RawFd) {
        if let Some(Some(local)) = self.locals.get_mut(tok as usize).map(std::mem::take) {
            self.leg_tokens.remove(local);
            self.nic.steer(local.port(), None);
        }
    }

    fn wait(&mut self, idle: Duration, room: usize, pool: &mut Pool, out: &mut Vec<Datagram>) -> Round {
        self.reap(pool);
        self.refill(pool);
        // A busy-polling worker (no idle time) looks once and goes on
        // without reading the clock.
        if !idle.is_zero() {
            let deadline = Instant::now() + idle;
            while self.rx.waiting() == 0 && !self.waker.woken.load(Ordering::Acquire) {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                std::thread::park_timeout((deadline - now).min(PARK));
            }
        }
        let woken = self.waker.woken.swap(false, Ordering::AcqRel);
        // The frames' first lines (headers, RTP header, the start of the
        // payload) are in flight together before the first is parsed.
        let ahead = room.saturating_sub(out.len()) as u32;
        for k in 0..ahead {
            let Some(d) = self.rx.peek(k) else { break };
            pool.prefetch(d.addr, d.len as usize);
        }
        // Then each frame's leg entry, by the destination port.
        for k in 0..ahead {
            let Some(d) = self.rx.peek(k) else { break };
            let (frame, off) = ((d.addr / self.pitch) as u32, (d.addr % self.pitch) as usize);
            // Only a frame the NIC holds is read (as `frame_in` will check).
            if !self.at_nic(frame) {
                continue;
            }
            if let Some(port) = pool.frame_buf(frame, off).and_then(|b| ipv4_udp_dst_port(&b)) {
                self.leg_tokens.prefetch(port);
            }
        }
        let mut taken = 0u32;
        while out.len() < room {
            let Some(d) = self.rx.pop() else { break };
            taken += 1;
            self.frame_in(d, pool, out);
        }
        self.rx.release();
        self.in_fill = self.in_fill.saturating_sub(taken);
        self.refill(pool);
        Round { woken, more: self.rx.waiting() > 0 }
    }

    fn send(&mut self, tok: u32, fd: RawFd, msgs: &[(&[u8], SocketAddr)]) -> usize {
        if self.locals.get(tok as usize).is_some_and(Option::is_some) {
            // A leg's packet not in a frame of its own: the worker sends
            // every leg's packet by `transmit`, which took all it could;
            // what is left has no room in the transmit ring.
            return 0;
        }
        self.inner.send(tok, fd, msgs)
    }

    fn frames(&self) -> bool {
        true
    }

    fn transmit(&mut self, tok: u32, mut buf: Buf, len: usize, to: SocketAddr) -> Result<(), Buf> {
        let Some(Some(from)) = self.locals.get(tok as usize).copied() else { return Err(buf) };
        if from.is_ipv4() != to.is_ipv4() || self.tx.room() == 0 {
            return Err(buf);
        }
        let hdr = if from.is_ipv4() { 42 } else { 62 };
        self.ip_id = self.ip_id.wrapping_add(1);
        let id = self.ip_id;
        let Some(f) = buf.with_front(hdr) else { return Err(buf) };
        if f.len() < hdr + len || len > u16::MAX as usize - 48 {
            return Err(buf);
        }
        // `add` sized `sums` with `locals`, which had this token.
        let sum = match self.sums[tok as usize] {
            Some((dst, sum)) if dst == to => sum,
            _ => {
                let sum = addr_sum(from.ip(), to.ip());
                self.sums[tok as usize] = Some((to, sum));
                sum
            }
        };
        write_headers(f, PEER_MAC, RELAY_MAC, from, to, sum, len, id);
        let addr = u64::from(buf.frame()) * self.pitch + (buf.offset() - hdr) as u64;
        self.lend(Pool::release(buf));
        self.tx.push(Desc { addr, len: (hdr + len) as u32, ..Desc::default() });
        Ok(())
    }

    fn flush(&mut self, _pool: &mut Pool) {
        self.tx.publish();
    }
}

impl Drop for MemIo {
    fn drop(&mut self) {
        self.header().ready.store(0, Ordering::Release);
    }
}

/// The frames area of a worker's file as the NIC maps it.
struct Frames {
    map: Arc<Region>,
    pitch: u64,
    frames: usize,
}

impl Frames {
    /// The `len` bytes at `addr` (a frame the caller's ring handed it).
    #[allow(clippy::mut_from_ref)]
    fn bytes(&self, addr: u64, len: usize) -> Option<&mut [u8]> {
        let (frame, off) = ((addr / self.pitch) as usize, (addr % self.pitch) as usize);
        if frame >= self.frames || off + len > self.pitch as usize {
            return None;
        }
        let at = frames_offset() + frame * self.pitch as usize + off;
        // SAFETY: inside the mapped frames area (checked above). The frame
        // belongs to the one ring side that popped it (fill or tx) until it
        // is pushed on (rx or completion): no other party touches it.
        Some(unsafe { std::slice::from_raw_parts_mut(self.map.ptr().as_ptr().add(at), len) })
    }
}

/// The NIC's side of one worker's file: what a load generator maps to
/// play the NIC. Its halves work apart (two threads): [`NicRx`] receives
/// into frames the worker gave it, [`NicTx`] takes the frames the worker
/// transmits and hands them back.
pub struct Port {
    /// The receiving half.
    pub rx: NicRx,
    /// The transmitting half.
    pub tx: NicTx,
    /// The relay's process.
    pub pid: u32,
}

/// The receiving half of a [`Port`] (fill and rx rings).
pub struct NicRx {
    fill: Ring,
    rx: Ring,
    frames: Frames,
}

/// The transmitting half of a [`Port`] (tx and completion rings).
pub struct NicTx {
    tx: Ring,
    completion: Ring,
    frames: Frames,
}

// SAFETY: each half owns its two ring sides alone; the mapping is shared
// (`Frames`), and each frame has one owner at a time.
unsafe impl Send for NicRx {}
// SAFETY: as for `NicRx`.
unsafe impl Send for NicTx {}

impl Port {
    /// Maps worker `index`'s file in the NIC directory `dir`, once the
    /// worker serves it (waits up to `patience`).
    pub fn open(dir: &Path, index: usize, patience: Duration) -> io::Result<Port> {
        let path = Nic::worker_path(dir, index);
        let start = Instant::now();
        loop {
            if let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) {
                let len = file.metadata()?.len() as usize;
                if len > frames_offset() {
                    let map = Region::shared(&file, 0, len)?;
                    // SAFETY: the header page is mapped.
                    let h = unsafe { map.ptr().cast::<Header>().as_ref() };
                    if h.magic == MAGIC && h.ready.load(Ordering::Acquire) == 1 {
                        if h.version != VERSION || h.ring != RING {
                            return Err(io::Error::other(format!("{}: another layout", path.display())));
                        }
                        let (pitch, frames, pid) = (u64::from(h.pitch), h.frames as usize, h.pid);
                        if frames_offset() + frames * pitch as usize > len {
                            return Err(io::Error::other(format!("{}: shorter than its frames", path.display())));
                        }
                        // SAFETY: the whole file is mapped while the halves
                        // hold `map`; the NIC is the only party on its sides.
                        let [fill, rx, tx, completion] = unsafe {
                            [Which::Fill, Which::Rx, Which::Tx, Which::Completion].map(|w| Ring::at(map.ptr(), w))
                        };
                        let map = Arc::new(map);
                        let area = |map: &Arc<Region>| Frames { map: map.clone(), pitch, frames };
                        return Ok(Port {
                            rx: NicRx { fill, rx, frames: area(&map) },
                            tx: NicTx { tx, completion, frames: area(&map) },
                            pid,
                        });
                    }
                }
            }
            if start.elapsed() > patience {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("{}: no worker serves it", path.display()),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The worker a UDP destination port is steered to in `dir` (its
    /// index), if any.
    pub fn steered(dir: &Path, port: u16) -> io::Result<Option<usize>> {
        let mut b = [0u8; 1];
        std::os::unix::fs::FileExt::read_exact_at(&File::open(dir.join("steering"))?, &mut b, u64::from(port))?;
        Ok(b[0].checked_sub(1).map(usize::from))
    }

    /// Headroom the worker leaves in front of a frame's packet.
    pub fn headroom() -> usize {
        XDP_HEADROOM
    }
}

impl NicRx {
    /// Receives one frame: `write` fills the frame's bytes (up to the frame's
    /// room) and returns its length; posted with receive time `ns`. False
    /// when the worker gave the NIC no free frame (the NIC drops it).
    pub fn receive(&mut self, ns: u64, write: impl FnOnce(&mut [u8]) -> usize) -> bool {
        let Some(d) = self.fill.pop() else { return false };
        let room = (self.frames.pitch - d.addr % self.frames.pitch) as usize;
        let Some(f) = self.frames.bytes(d.addr, room) else { return false };
        let len = write(f).min(room);
        self.rx.push(Desc { addr: d.addr, len: len as u32, flags: 0, ns })
    }

    /// Makes the received frames visible to the worker (and frees the
    /// fill ring's slots).
    pub fn publish(&mut self) {
        self.fill.release();
        self.rx.publish();
    }
}

impl NicTx {
    /// Takes each transmitted frame in turn (`check` sees its bytes) and
    /// hands it back to the worker; how many.
    pub fn transmitted(&mut self, mut check: impl FnMut(&[u8])) -> usize {
        let mut n = 0;
        while let Some(d) = self.tx.pop() {
            if let Some(f) = self.frames.bytes(d.addr, d.len as usize) {
                check(f);
            }
            self.completion.push(Desc { addr: d.addr, ..Desc::default() });
            n += 1;
        }
        if n > 0 {
            self.tx.release();
            self.completion.publish();
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame the NIC hands back must be one it was lent, once.
    #[test]
    fn frames_come_back_only_from_the_nic_and_once() {
        let dir = std::env::temp_dir().join(format!("srtpgate-mem-unit-{}", std::process::id()));
        let nic = Nic::create(&dir).expect("NIC");
        let pool = nic.pool(0, 64).expect("pool");
        let mut io = MemIo::new(nic, 0, &pool, Arc::new(WorkerStats::new())).expect("backend");
        assert!(!io.take_back(5), "never lent");
        io.lend(5);
        assert!(io.take_back(5));
        assert!(!io.take_back(5), "a second time");
        assert!(!io.take_back(u32::MAX), "not a frame of the pool");
        assert_eq!(io.refused, 3);
        drop(io);
        drop(pool);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
