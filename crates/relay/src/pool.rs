//! Preallocated packet buffers (design.md §4).
//!
//! A worker's pool is filled once at start. A buffer leaves the pool by move
//! and comes back by move, so the type system guarantees that no buffer has
//! two owners; taking one never allocates and never blocks: an empty pool is
//! reported to the caller, which drops the packet and counts it.

/// Bytes of one packet buffer: the largest UDP payload we accept plus the
/// longest SRTP/SRTCP trailer the relay may append.
pub const BUF_LEN: usize = 2048 + srtp::MAX_RTCP_TRAILER_LEN;

/// A fixed set of packet buffers.
pub struct Pool {
    free: Vec<Vec<u8>>,
    size: usize,
}

impl Pool {
    /// A pool of `n` buffers of [`BUF_LEN`] bytes, allocated now.
    pub fn new(n: usize) -> Pool {
        Pool { free: (0..n).map(|_| vec![0u8; BUF_LEN]).collect(), size: n }
    }

    /// Takes a buffer (full length), or `None` when all are in use.
    #[inline]
    pub fn take(&mut self) -> Option<Vec<u8>> {
        self.free.pop()
    }

    /// Returns a buffer taken from this pool.
    #[inline]
    pub fn put(&mut self, buf: Vec<u8>) {
        debug_assert_eq!(buf.len(), BUF_LEN, "a buffer came back resized");
        debug_assert!(self.free.len() < self.size, "more buffers returned than taken");
        self.free.push(buf);
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
        assert_eq!(c.len(), BUF_LEN);
        p.put(b);
        p.put(c);
        assert_eq!((p.free(), p.size()), (2, 2));
    }
}
