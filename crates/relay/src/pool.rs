//! Preallocated packet buffers (design.md §4).
//!
//! A worker's pool is one memory region cut into frames, mapped once at
//! start. A buffer ([`Buf`]) is a handle on part of one frame: it leaves the
//! pool by move and comes back by move, so no frame has two owners; taking
//! one never allocates and never blocks: an empty pool is reported to the
//! caller, which drops the packet and counts it.
//!
//! The region is page-aligned anonymous memory, so the AF_XDP backend can
//! register it as its UMEM: a frame the kernel received into is then the
//! buffer the worker re-keys in place and the frame it transmits, with the
//! Ethernet, IP and UDP headers written into the frame's headroom. There
//! the workers' pools are shares of one region ([`Pool::shares`]): one
//! UMEM, so that each worker's AF_XDP socket on every receive queue can
//! take frames from that queue's fill ring, whichever worker filled it; a
//! frame goes back to the pool that owns it through an [`Exchange`].

use std::ptr::NonNull;
use std::sync::Arc;

/// Bytes of one packet buffer: the largest UDP payload we accept plus the
/// longest SRTP/SRTCP trailer the relay may append.
pub const BUF_LEN: usize = 2048 + srtp::MAX_RTCP_TRAILER_LEN;

/// Frame pitch of a pool with headroom (an AF_XDP UMEM's frame size).
pub const XDP_FRAME: usize = 4096;

/// Headroom before the payload of a buffer taken from a pool with headroom:
/// room for Ethernet (with a VLAN tag), IPv6 and UDP headers.
pub const XDP_HEADROOM: usize = 256;

/// A packet buffer: part of one frame of a [`Pool`]'s region.
///
/// It is only ever used on the worker thread that owns the pool (it is
/// neither `Send` nor `Sync`). It has no tie to the pool's lifetime: it is a
/// pointer into the region, valid while the pool lives. Dropping one touches
/// no memory (no `Drop`), so buffers dropped after their pool (the worker's
/// scratch vectors are fields declared after its pool) are harmless; the
/// worker reads and writes its buffers only in its own methods, while its
/// pool is alive.
///
/// A buffer is neither `Clone` nor `Copy` and goes back by move, but one
/// frame can still get two handles: [`Pool::frame_buf`] makes a buffer
/// from a frame number the kernel handed back, and [`Pool::put_frame`]
/// returns a frame by number. So [`Pool::put`] checks, in every build, that
/// the frame is out of the pool before taking it back.
pub struct Buf {
    ptr: NonNull<u8>,
    cap: u32,
    frame: u32,
    off: u32,
}

impl Buf {
    /// A buffer with no bytes (a datagram dropped for want of one).
    pub fn empty() -> Buf {
        Buf { ptr: NonNull::dangling(), cap: 0, frame: u32::MAX, off: 0 }
    }

    /// Whether this is [`Buf::empty`].
    pub fn is_empty(&self) -> bool {
        self.frame == u32::MAX
    }

    /// The frame of the pool's region this buffer lies in.
    pub fn frame(&self) -> u32 {
        self.frame
    }

    /// Offset of the buffer's first byte in its frame (headroom before it).
    pub fn offset(&self) -> usize {
        self.off as usize
    }

    /// Drops the first `n` bytes (they become headroom): a received frame
    /// becomes the view of its payload. False, unchanged, when shorter.
    pub fn advance(&mut self, n: usize) -> bool {
        if n > self.cap as usize || self.is_empty() {
            return false;
        }
        // SAFETY: n ≤ cap, so the new pointer stays inside the same frame.
        self.ptr = unsafe { NonNull::new_unchecked(self.ptr.as_ptr().add(n)) };
        self.cap -= n as u32;
        self.off += n as u32;
        true
    }

    /// The buffer with `n` bytes of its frame's headroom in front (where the
    /// AF_XDP backend writes a packet's headers), or `None` when the
    /// headroom is smaller.
    pub fn with_front(&mut self, n: usize) -> Option<&mut [u8]> {
        if n > self.off as usize || self.is_empty() {
            return None;
        }
        // SAFETY: the `off` bytes before `ptr` are the start of the same
        // frame of the pool's region, owned through this handle as well.
        unsafe { Some(std::slice::from_raw_parts_mut(self.ptr.as_ptr().sub(n), n + self.cap as usize)) }
    }
}

impl Default for Buf {
    fn default() -> Buf {
        Buf::empty()
    }
}

impl std::ops::Deref for Buf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr` points at `cap` bytes inside the pool's live region
        // (or is dangling with `cap` 0), and this handle is their only owner.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.cap as usize) }
    }
}

impl std::ops::DerefMut for Buf {
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.cap as usize) }
    }
}

impl std::fmt::Debug for Buf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buf(frame {}, offset {}, {} bytes)", self.frame, self.off, self.cap)
    }
}

/// Memory mapped once and unmapped when its last holder drops it: the
/// frames of one or more pools, or a simulated NIC's shared file.
pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a region is plain memory; which thread touches which bytes is
// decided by its users (a pool's frames have one owner at a time, a shared
// file's rings hand each entry from one side to the other).
unsafe impl Send for Region {}
// SAFETY: as for `Send`; the region itself is never written through `&Region`.
unsafe impl Sync for Region {}

impl Region {
    /// `len` bytes (rounded up to a page) of anonymous private memory,
    /// populated now (page-aligned: an AF_XDP UMEM).
    pub fn anonymous(len: usize) -> std::io::Result<Region> {
        Region::map(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    }

    /// `len` bytes of `file` from byte `offset` (page-aligned), mapped
    /// shared: another process that maps the file sees the same bytes.
    pub fn shared(file: &std::fs::File, offset: usize, len: usize) -> std::io::Result<Region> {
        use std::os::fd::AsRawFd;
        if file.metadata()?.len() < (offset + len) as u64 || !offset.is_multiple_of(4096) {
            return Err(std::io::Error::other("the file is shorter than the region mapped from it"));
        }
        Region::map(len, libc::MAP_SHARED, file.as_raw_fd(), offset)
    }

    fn map(len: usize, flags: libc::c_int, fd: libc::c_int, offset: usize) -> std::io::Result<Region> {
        let len = len.max(1).next_multiple_of(4096);
        // SAFETY: a new mapping of `len` bytes (anonymous, or of a file we
        // hold open and that has them); the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags | libc::MAP_POPULATE,
                fd,
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Region { ptr: NonNull::new(p as *mut u8).expect("mmap returned a null mapping"), len })
    }

    /// The first byte.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// The whole mapping (an AF_XDP UMEM's area).
    pub fn bytes(&self) -> NonNull<[u8]> {
        NonNull::slice_from_raw_parts(self.ptr, self.len)
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no byte is mapped (never: a region is at least a page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr() as *mut libc::c_void, self.len) };
    }
}

/// How the pools cut from one region ([`Pool::shares`]) give each other's
/// frames back: a frame that reached another worker (an AF_XDP socket of
/// that worker received into it) goes to its owner when that worker is done
/// with it, and the owner takes it back at its next round.
///
/// One single-producer, single-consumer ring per ordered pair of pools, of
/// plain 4-byte entries (16 to a cache line): the giver writes a round's
/// frames into its ring and publishes them with one release store of its
/// index ([`Pool::reclaim`]), the owner reads everything published with one
/// acquire load and gives the room back with one release store. Per frame
/// there is no atomic read-modify-write and at most a sixteenth of a cache
/// line crossing cores (a queue with an atomic per entry cost eight `xdp`
/// workers about 4 % of their time: BENCHMARKS.md). A frame that finds its
/// ring full waits in its giver's pool and is offered again at the next
/// round, so none is lost; nothing is allocated after start. Written here
/// because a ring whose producer publishes once per round is the whole
/// point, and the SPSC crates publish per push.
pub struct Exchange {
    frames_per_share: u32,
    shares: usize,
    /// Ring `owner * shares + giver`.
    rings: Vec<PairRing>,
}

/// Entries of one pair's ring (a power of two): more than a round's frames.
const PAIR_RING: u32 = 4096;

/// A value alone on its cache line(s), so that the two sides' indices never
/// share one.
#[repr(align(128))]
struct Line<T>(T);

/// One ordered pair's ring: frame numbers at `produced` (giver's count of
/// entries written and published) and `consumed` (owner's count read).
struct PairRing {
    produced: Line<std::sync::atomic::AtomicU32>,
    consumed: Line<std::sync::atomic::AtomicU32>,
    slots: Box<[std::sync::atomic::AtomicU32]>,
}

/// A giver's side of one ring, kept in the giver's pool.
#[derive(Clone, Copy, Default)]
struct Giving {
    /// Entries written (published up to `published`).
    written: u32,
    published: u32,
    /// The owner's `consumed` as last read: room is `PAIR_RING - (written - seen)`.
    seen: u32,
}

impl Exchange {
    /// The pool that owns `frame` (`None`: no share's).
    fn owner(&self, frame: u32) -> Option<usize> {
        let o = (frame / self.frames_per_share) as usize;
        (o < self.shares).then_some(o)
    }

    fn ring(&self, owner: usize, giver: usize) -> &PairRing {
        &self.rings[owner * self.shares + giver]
    }
}

/// A fixed set of packet buffers in one mapped region.
pub struct Pool {
    /// The whole mapping (this pool's frames, and the other shares' when
    /// cut by [`Pool::shares`]).
    region: Arc<Region>,
    /// Frames in the region, this pool's and the other shares'.
    frames: u32,
    /// This pool's first frame in the region.
    first: u32,
    /// Which share of the region it is (0 for a pool of its own).
    share: usize,
    pitch: usize,
    head: usize,
    free: Vec<u32>,
    /// Bit per frame of this pool (from `first`): in `free` now. A frame
    /// returned twice would be handed out twice (two `&mut` on the same
    /// bytes), so a return is checked against it.
    in_pool: Vec<u64>,
    /// Returns refused: a frame already in the pool, or not of it.
    refused: u64,
    size: usize,
    /// Where the other shares' frames go back ([`Pool::shares`]).
    exchange: Option<Arc<Exchange>>,
    /// This pool's side of its ring to each other share (by owner).
    giving: Vec<Giving>,
    /// Other shares' frames whose ring was full, offered again by
    /// [`Pool::reclaim`] (room for every frame of the other shares).
    waiting: Vec<u32>,
}

impl Pool {
    /// A pool of `n` buffers of at least [`BUF_LEN`] bytes, mapped now.
    pub fn new(n: usize) -> Pool {
        Pool::with_layout(n, BUF_LEN.next_multiple_of(64), 0)
    }

    /// A pool of `n` frames of [`XDP_FRAME`] bytes whose buffers start after
    /// [`XDP_HEADROOM`] bytes (an AF_XDP UMEM).
    pub fn with_headroom(n: usize) -> Pool {
        Pool::with_layout(n, XDP_FRAME, XDP_HEADROOM)
    }

    /// A pool of `n` frames of [`XDP_FRAME`] bytes with [`XDP_HEADROOM`],
    /// in `file` from byte `offset` (page-aligned), mapped shared: the
    /// frames a simulated NIC in another process reads and writes
    /// (`io::mem`).
    pub fn shared(file: &std::fs::File, offset: usize, n: usize) -> std::io::Result<Pool> {
        let region = Region::shared(file, offset, n.max(1) * XDP_FRAME)?;
        Ok(Pool::over(Arc::new(region), 0, n, n, XDP_FRAME, XDP_HEADROOM, None))
    }

    /// One region of `count * n` frames of [`XDP_FRAME`] bytes with
    /// [`XDP_HEADROOM`] (one AF_XDP UMEM), the region and the exchange its
    /// pools share; [`Pool::share`] cuts pool `i` of `n` frames from it.
    /// A frame of one share that another pool is given back (by
    /// [`Pool::put`] or [`Pool::put_frame`]) travels to its owner through
    /// the exchange.
    pub fn shares(count: usize, n: usize) -> std::io::Result<(Arc<Region>, Arc<Exchange>)> {
        let (count, n) = (count.max(1), n.max(1));
        if count * n > u32::MAX as usize / 2 {
            return Err(std::io::Error::other("too many frames for one region"));
        }
        let region = Arc::new(Region::anonymous(count * n * XDP_FRAME)?);
        let rings = (0..count * count)
            .map(|_| PairRing {
                produced: Line(0.into()),
                consumed: Line(0.into()),
                slots: (0..PAIR_RING).map(|_| 0.into()).collect(),
            })
            .collect();
        Ok((region, Arc::new(Exchange { frames_per_share: n as u32, shares: count, rings })))
    }

    /// Pool `i` of the region made by [`Pool::shares`].
    pub fn share(region: &Arc<Region>, exchange: &Arc<Exchange>, i: usize) -> Pool {
        let n = exchange.frames_per_share as usize;
        let all = exchange.shares * n;
        assert!(i < exchange.shares && all * XDP_FRAME <= region.len(), "share {i} is not in the region");
        Pool::over(region.clone(), i * n, n, all, XDP_FRAME, XDP_HEADROOM, Some(exchange.clone()))
    }

    fn with_layout(n: usize, pitch: usize, head: usize) -> Pool {
        let region = Region::anonymous(n.max(1) * pitch)
            .unwrap_or_else(|e| panic!("cannot map {} bytes of packet buffers: {e}", n.max(1) * pitch));
        Pool::over(Arc::new(region), 0, n, n, pitch, head, None)
    }

    /// The pool of frames `first..first + n` of `region`, which holds
    /// `frames` frames of `pitch` bytes.
    fn over(
        region: Arc<Region>,
        first: usize,
        n: usize,
        frames: usize,
        pitch: usize,
        head: usize,
        exchange: Option<Arc<Exchange>>,
    ) -> Pool {
        assert!(pitch >= head + BUF_LEN && frames <= u32::MAX as usize / 2 && frames * pitch <= region.len());
        assert!(first + n <= frames);
        let mut in_pool = vec![0u64; n.div_ceil(64)];
        for f in 0..n {
            in_pool[f / 64] |= 1 << (f % 64);
        }
        let free = (first as u32..(first + n) as u32).rev().collect();
        let shares = exchange.as_ref().map_or(0, |x| x.shares);
        let waiting = Vec::with_capacity(if shares > 0 { frames - n } else { 0 });
        Pool {
            region,
            frames: frames as u32,
            first: first as u32,
            share: first / n.max(1),
            pitch,
            head,
            free,
            in_pool,
            refused: 0,
            size: n,
            exchange,
            giving: vec![Giving::default(); shares],
            waiting,
        }
    }

    /// The buffer of frame `frame` starting `off` bytes into it.
    fn buf(&self, frame: u32, off: usize) -> Buf {
        debug_assert!(frame < self.frames && off <= self.pitch);
        // SAFETY: frame < frames and off ≤ pitch keep the pointer inside the
        // region (or one past a frame's end, with no bytes).
        let ptr = unsafe { self.region.ptr().add(frame as usize * self.pitch + off) };
        Buf { ptr, cap: (self.pitch - off) as u32, frame, off: off as u32 }
    }

    /// Takes a buffer (full length), or `None` when all are in use.
    #[inline]
    pub fn take(&mut self) -> Option<Buf> {
        let f = self.free.pop()?;
        let i = (f - self.first) as usize;
        self.in_pool[i / 64] &= !(1 << (i % 64));
        Some(self.buf(f, self.head))
    }

    /// Returns a buffer taken from this pool (an empty one is ignored), or
    /// one of another share of its region, which goes to its owner. False
    /// when refused: its frame is in the pool already (a second return) or
    /// is not one of this region's ([`Pool::refused`] counts them).
    #[inline]
    pub fn put(&mut self, buf: Buf) -> bool {
        if buf.is_empty() {
            return true;
        }
        self.put_frame(buf.frame)
    }

    /// Returns frame `frame`, handed out as a [`Buf`] that was then given
    /// up with [`Pool::release`] (a frame the kernel owned). Refused (false,
    /// counted) as [`Pool::put`] refuses.
    #[inline]
    pub fn put_frame(&mut self, frame: u32) -> bool {
        let i = frame.wrapping_sub(self.first) as usize;
        if i >= self.size {
            // Another share's frame goes to its owner (which checks it as
            // this check does) at this pool's next `reclaim`; any other
            // number is refused.
            let given = self.give(frame);
            self.refused += u64::from(!given);
            return given;
        }
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        // A bit test per return, in release builds too: a frame returned
        // twice would be handed to two packets at once, and that corrupts
        // them silently (or hands the kernel a frame the worker writes).
        match self.in_pool.get_mut(word) {
            Some(w) if *w & bit == 0 => {
                *w |= bit;
                self.free.push(frame);
                true
            }
            _ => {
                self.refused += 1;
                false
            }
        }
    }

    /// Writes another share's `frame` into this pool's ring to its owner
    /// (published at the next [`Pool::reclaim`]), or keeps it waiting when
    /// that ring is full; false when no share owns it (or, impossibly, more
    /// of the others' frames wait than there are).
    fn give(&mut self, frame: u32) -> bool {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        let Some(x) = self.exchange.as_ref() else { return false };
        let Some(owner) = x.owner(frame) else { return false };
        let me = self.share;
        let ring = x.ring(owner, me);
        let g = &mut self.giving[owner];
        if g.written.wrapping_sub(g.seen) == PAIR_RING {
            g.seen = ring.consumed.0.load(Acquire);
        }
        if g.written.wrapping_sub(g.seen) == PAIR_RING {
            if self.waiting.len() == self.waiting.capacity() {
                return false;
            }
            self.waiting.push(frame);
            return true;
        }
        // Read by the owner only after it acquired `produced` past it.
        ring.slots[(g.written % PAIR_RING) as usize].store(frame, Relaxed);
        g.written = g.written.wrapping_add(1);
        true
    }

    /// Once a round: takes back this pool's frames that the other shares'
    /// owners published since the last call (each checked as
    /// [`Pool::put_frame`] checks), publishes the frames this pool wrote to
    /// them, and offers again those that found a ring full; how many came
    /// back. Nothing to do for a pool cut from no shared region.
    pub fn reclaim(&mut self) -> usize {
        use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
        let Some(x) = self.exchange.clone() else { return 0 };
        let me = self.share;
        let mut n = 0;
        for giver in (0..x.shares).filter(|&g| g != me) {
            let ring = x.ring(me, giver);
            let from = ring.consumed.0.load(Relaxed);
            let to = ring.produced.0.load(Acquire);
            let mut at = from;
            while at != to {
                let f = ring.slots[(at % PAIR_RING) as usize].load(Relaxed);
                n += usize::from(self.put_frame(f));
                at = at.wrapping_add(1);
            }
            if to != from {
                ring.consumed.0.store(to, Release);
            }
        }
        for _ in 0..self.waiting.len() {
            let Some(f) = self.waiting.pop() else { break };
            let before = self.waiting.len();
            if !self.give(f) {
                self.refused += 1;
            } else if self.waiting.len() > before {
                // Its ring is still full: the rest wait for the next round.
                break;
            }
        }
        for (owner, g) in self.giving.iter_mut().enumerate() {
            if g.written != g.published {
                x.ring(owner, me).produced.0.store(g.written, Release);
                g.published = g.written;
            }
        }
        n
    }

    /// Returns refused by [`Pool::put`] and [`Pool::put_frame`] (a bug in
    /// the caller; each was refused instead of handing a frame out twice).
    pub fn refused(&self) -> u64 {
        self.refused
    }

    /// Gives up a buffer without returning its frame (the kernel owns it
    /// now: it is in a fill or transmit ring); its frame number.
    pub fn release(buf: Buf) -> u32 {
        buf.frame
    }

    /// The buffer of frame `frame` from `off` bytes into it: a frame the
    /// kernel handed back with a packet at `off` (this pool's, or another
    /// share's that an AF_XDP socket of this worker received into).
    pub fn frame_buf(&self, frame: u32, off: usize) -> Option<Buf> {
        (frame < self.frames && off <= self.pitch).then(|| self.buf(frame, off))
    }

    /// Announces the first `len` bytes (at most 8 cache lines, and not past
    /// the frame's end) at `addr` of the region (a frame the NIC filled) to
    /// the processor's cache ([`srtp::prefetch`]): only a hint, nothing is
    /// read, and an address outside the region is ignored.
    #[inline]
    pub fn prefetch(&self, addr: u64, len: usize) {
        let end = (self.frames as usize * self.pitch) as u64;
        if addr >= end {
            return;
        }
        let start = self.region.ptr().as_ptr().wrapping_add(addr as usize);
        let in_frame = self.pitch - addr as usize % self.pitch;
        let lines = len.min(in_frame).div_ceil(srtp::prefetch::LINE);
        for i in 0..lines.min(8) {
            srtp::prefetch::line(start.wrapping_add(i * srtp::prefetch::LINE));
        }
    }

    /// This pool's frames (what an engine on another device registers):
    /// the whole mapping, unless the pool is one share of several.
    pub fn region(&self) -> NonNull<[u8]> {
        if self.exchange.is_none() {
            return self.mapping();
        }
        // SAFETY: the pool's frames lie inside the region (checked in `over`).
        let start = unsafe { self.region.ptr().add(self.first as usize * self.pitch) };
        NonNull::slice_from_raw_parts(start, self.size * self.pitch)
    }

    /// The whole region, every share's frames (an AF_XDP UMEM).
    pub fn mapping(&self) -> NonNull<[u8]> {
        self.region.bytes()
    }

    /// Bytes between the starts of two frames.
    pub fn pitch(&self) -> usize {
        self.pitch
    }

    /// Headroom before the payload of a taken buffer.
    pub fn headroom(&self) -> usize {
        self.head
    }

    /// Buffers free now.
    pub fn free(&self) -> usize {
        self.free.len()
    }

    /// Buffers in the pool.
    pub fn size(&self) -> usize {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustion_and_return() {
        let mut p = Pool::new(2);
        let a = p.take().expect("first");
        let b = p.take().expect("second");
        assert!(p.take().is_none(), "a third buffer from a pool of two");
        assert_ne!(a.as_ptr(), b.as_ptr());
        p.put(a);
        assert_eq!(p.free(), 1);
        let c = p.take().expect("returned buffer");
        assert!(c.len() >= BUF_LEN);
        p.put(b);
        p.put(c);
        p.put(Buf::empty());
        assert_eq!((p.free(), p.size()), (2, 2));
    }

    #[test]
    fn frames_with_headroom() {
        let mut p = Pool::with_headroom(3);
        let a = p.take().expect("a buffer");
        assert_eq!((a.offset(), a.len()), (XDP_HEADROOM, XDP_FRAME - XDP_HEADROOM));
        let f = Pool::release(a);
        assert_eq!(p.free(), 2);
        let mut view = p.frame_buf(f, 300).expect("a view of the frame");
        assert_eq!(view.len(), XDP_FRAME - 300);
        view[0] = 7;
        let front = view.with_front(42).expect("headroom");
        assert_eq!((front.len(), front[42]), (XDP_FRAME - 258, 7));
        assert!(view.with_front(301).is_none(), "headroom past the frame's start");
        assert!(p.frame_buf(3, 0).is_none(), "a frame past the region");
        assert!(p.put(view));
        assert_eq!(p.free(), 3);
        let r = p.region();
        assert_eq!(r.len(), 3 * XDP_FRAME);
        assert_eq!(p.mapping().len(), 4096 * 3, "one share: the pool is the whole mapping");
        assert_eq!(r.as_ptr() as *mut u8 as usize % 4096, 0, "a UMEM is page-aligned");
    }

    /// In every build (the check is not a `debug_assert`): `cargo test
    /// --release` runs this too.
    #[test]
    fn a_second_return_of_a_frame_is_refused() {
        let mut p = Pool::with_headroom(2);
        let a = p.take().expect("a buffer");
        let f = a.frame();
        // A second handle on the frame, as the AF_XDP backend makes one
        // from a frame number.
        let again = p.frame_buf(f, XDP_HEADROOM).expect("a view of the frame");
        assert!(p.put(a));
        assert!(!p.put(again), "a frame returned twice");
        assert!(!p.put_frame(f), "a frame returned twice, by number");
        assert!(!p.put_frame(2), "a frame past the pool");
        assert!(!p.put_frame(u32::MAX - 1), "a frame far past the pool");
        assert_eq!((p.free(), p.refused()), (2, 4));
        // The two frames are handed out once each, then the pool is empty.
        let x = p.take().expect("first");
        let y = p.take().expect("second");
        assert_ne!(x.frame(), y.frame());
        assert!(p.take().is_none(), "a frame handed out twice");
        assert!(p.put(x) && p.put(y));
        assert_eq!((p.free(), p.refused()), (2, 4));
    }

    /// Pools cut from one region hand each other's frames back: the giver
    /// publishes them at its next `reclaim`, the owner takes them at its
    /// own, checked there as its own returns are (a frame given back twice
    /// is refused once it is home).
    #[test]
    fn a_frame_of_another_share_goes_back_to_its_owner() {
        let (region, exchange) = Pool::shares(2, 3).expect("a region");
        let (mut a, mut b) = (Pool::share(&region, &exchange, 0), Pool::share(&region, &exchange, 1));
        assert_eq!(a.mapping().len(), 6 * XDP_FRAME);
        assert_eq!((a.region().len(), b.region().len()), (3 * XDP_FRAME, 3 * XDP_FRAME));
        assert_eq!(b.region().as_ptr() as *mut u8 as usize - a.mapping().as_ptr() as *mut u8 as usize, 3 * XDP_FRAME);
        let x = a.take().expect("a frame of share 0");
        let f = Pool::release(x);
        assert!(f < 3);
        // Share 1 received into it (an AF_XDP socket of its worker) and is done.
        let mut view = b.frame_buf(f, 300).expect("another share's frame is addressable");
        view[0] = 9;
        assert!(b.put(view), "handed to its owner");
        assert!(b.put_frame(f), "a second return also travels: the owner judges it");
        assert_eq!((a.free(), b.free()), (2, 3));
        assert_eq!(a.reclaim(), 0, "not published before the giver's round ends");
        assert_eq!(b.reclaim(), 0);
        assert_eq!(a.reclaim(), 1, "one return taken, the second refused");
        assert_eq!((a.free(), a.refused()), (3, 1));
        assert!(!b.put_frame(6), "past the region");
        assert_eq!(b.refused(), 1);
    }

    /// More frames than a ring holds: those that find it full wait in the
    /// giver's pool and go home in a later round; none is lost.
    #[test]
    fn frames_past_a_full_ring_wait_and_go_home_later() {
        let n = PAIR_RING as usize + 4;
        let (region, exchange) = Pool::shares(2, n).expect("a region");
        let (mut a, mut b) = (Pool::share(&region, &exchange, 0), Pool::share(&region, &exchange, 1));
        let frames: Vec<u32> = (0..n).map(|_| Pool::release(a.take().expect("a frame"))).collect();
        for &f in &frames {
            assert!(b.put_frame(f), "accepted: written or waiting");
        }
        assert_eq!(b.waiting.len(), 4);
        assert_eq!(b.reclaim(), 0, "b owns none of these; it publishes what it wrote");
        assert_eq!(b.waiting.len(), 4, "the ring is still full");
        assert_eq!(a.reclaim(), PAIR_RING as usize);
        assert_eq!(b.reclaim(), 0);
        assert!(b.waiting.is_empty(), "written once the owner made room");
        assert_eq!(a.reclaim(), 4);
        assert_eq!((a.free(), a.refused(), b.refused()), (n, 0, 0));
        // The indices wrap past the ring's size and on.
        for _ in 0..3 {
            let frames: Vec<u32> = (0..n).map(|_| Pool::release(a.take().expect("a frame"))).collect();
            frames.iter().for_each(|&f| assert!(b.put_frame(f)));
            for _ in 0..3 {
                b.reclaim();
                a.reclaim();
            }
            assert_eq!(a.free(), n);
        }
    }
}
