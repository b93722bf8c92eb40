//! Bytes a worker lends to another thread (STUN and DTLS datagrams for the
//! control thread, recorded packets for the recorder) in buffers it reuses:
//! a buffer goes back to its worker when the receiver drops it, so the
//! hand-off allocates only while a worker's set grows to the most it needed
//! at once.

use crossbeam_channel::Receiver;

/// Bytes in a buffer of a worker's [`LentBufs`], which goes back to that
/// worker when dropped (on whichever thread). A pool
/// [`Buf`](crate::pool::Buf) cannot make the trip: it belongs to the
/// worker's thread and region.
pub struct Lent {
    bytes: Vec<u8>,
    /// Where the buffer goes back to (`None`: freed, not reused).
    home: Option<crossbeam_channel::Sender<Vec<u8>>>,
}

impl Lent {
    /// Bytes not from a worker's set (freed when dropped).
    pub fn new(bytes: Vec<u8>) -> Lent {
        Lent { bytes, home: None }
    }
}

impl std::ops::Deref for Lent {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Debug for Lent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Lent({} bytes)", self.bytes.len())
    }
}

impl std::ops::Drop for Lent {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            // The channel has room for every buffer the worker made; it is
            // closed only when the worker is gone (then the buffer is freed).
            let _ = home.try_send(std::mem::take(&mut self.bytes));
        }
    }
}

/// A worker's [`Lent`] buffers, at most `most` of them: the free ones come
/// back through a channel as their receivers drop them.
pub(super) struct LentBufs {
    home: crossbeam_channel::Sender<Vec<u8>>,
    free: Receiver<Vec<u8>>,
    /// Buffers made so far (free or out).
    made: usize,
    most: usize,
}

impl LentBufs {
    pub(super) fn new(most: usize) -> LentBufs {
        let (home, free) = crossbeam_channel::bounded(most);
        LentBufs { home, free, made: 0, most }
    }

    /// A copy of `bytes` in a buffer of the set, or `None` when all are
    /// out.
    pub(super) fn copy(&mut self, bytes: &[u8]) -> Option<Lent> {
        let mut b = match self.free.try_recv() {
            Ok(b) => b,
            Err(_) if self.made < self.most => {
                self.made += 1;
                Vec::with_capacity(crate::pool::BUF_LEN)
            }
            Err(_) => return None,
        };
        b.clear();
        // No allocation: a datagram is at most a pool buffer long (a longer
        // one, from an AF_XDP frame, grows this buffer once).
        b.extend_from_slice(bytes);
        Some(Lent { bytes: b, home: Some(self.home.clone()) })
    }
}
