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
//! Ethernet, IP and UDP headers written into the frame's headroom.

use std::ptr::NonNull;

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
/// neither `Send` nor `Sync`), and the pool outlives every buffer (the
/// worker's buffers live in its own fields, dropped before the pool's
/// region; the region is unmapped only when the pool is dropped).
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

/// A fixed set of packet buffers in one mapped region.
pub struct Pool {
    base: NonNull<u8>,
    len: usize,
    pitch: usize,
    head: usize,
    free: Vec<u32>,
    size: usize,
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

    fn with_layout(n: usize, pitch: usize, head: usize) -> Pool {
        assert!(pitch >= head + BUF_LEN && n <= u32::MAX as usize / 2);
        let len = (n.max(1) * pitch).next_multiple_of(4096);
        // SAFETY: an anonymous private mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        assert!(p != libc::MAP_FAILED, "cannot map {len} bytes of packet buffers: {}", std::io::Error::last_os_error());
        let base = NonNull::new(p as *mut u8).expect("mmap returned a null mapping");
        Pool { base, len, pitch, head, free: (0..n as u32).rev().collect(), size: n }
    }

    /// The buffer of frame `frame` starting `off` bytes into it.
    fn buf(&self, frame: u32, off: usize) -> Buf {
        debug_assert!((frame as usize) < self.size && off <= self.pitch);
        // SAFETY: frame < size and off ≤ pitch keep the pointer inside the
        // region (or one past a frame's end, with no bytes).
        let ptr = unsafe { self.base.add(frame as usize * self.pitch + off) };
        Buf { ptr, cap: (self.pitch - off) as u32, frame, off: off as u32 }
    }

    /// Takes a buffer (full length), or `None` when all are in use.
    #[inline]
    pub fn take(&mut self) -> Option<Buf> {
        let f = self.free.pop()?;
        Some(self.buf(f, self.head))
    }

    /// Returns a buffer taken from this pool (an empty one is ignored).
    #[inline]
    pub fn put(&mut self, buf: Buf) {
        if buf.is_empty() {
            return;
        }
        self.put_frame(buf.frame);
    }

    /// Returns frame `frame`, handed out as a [`Buf`] that was then given
    /// up with [`Pool::release`] (a frame the kernel owned).
    #[inline]
    pub fn put_frame(&mut self, frame: u32) {
        debug_assert!((frame as usize) < self.size, "a frame from another pool");
        debug_assert!(self.free.len() < self.size, "more buffers returned than taken");
        self.free.push(frame);
    }

    /// Gives up a buffer without returning its frame (the kernel owns it
    /// now: it is in a fill or transmit ring); its frame number.
    pub fn release(buf: Buf) -> u32 {
        buf.frame
    }

    /// The buffer of frame `frame` from `off` bytes into it: a frame the
    /// kernel handed back with a packet at `off`.
    pub fn frame_buf(&self, frame: u32, off: usize) -> Option<Buf> {
        ((frame as usize) < self.size && off <= self.pitch).then(|| self.buf(frame, off))
    }

    /// The whole region (for registration as an AF_XDP UMEM).
    pub fn region(&self) -> NonNull<[u8]> {
        NonNull::slice_from_raw_parts(self.base, self.len)
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

impl Drop for Pool {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `with_layout`, unmapped once.
        unsafe { libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.len) };
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
        p.put(view);
        assert_eq!(p.free(), 3);
        let r = p.region();
        assert_eq!(r.len(), 3 * XDP_FRAME);
        assert_eq!(r.as_ptr() as *mut u8 as usize % 4096, 0, "a UMEM is page-aligned");
    }
}
