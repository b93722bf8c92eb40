//! STUN and DTLS datagrams on the way from a worker to the control thread,
//! in buffers the worker reuses.

use super::stream::CallKey;
use crossbeam_channel::Receiver;
use std::net::SocketAddr;

/// control thread. Its bytes are in a buffer the worker reuses
/// ([`SignalData`]): ICE checks arrive before anything is authenticated, so
/// a flood of them must not make the worker allocate.
#[derive(Debug)]
pub struct Signal {
    /// The call.
    pub call: CallKey,
    /// Its media stream (m-line index).
    pub stream: usize,
    /// The leg (0 or 1) it arrived on.
    pub party: usize,
    /// Where it came from.
    pub from: SocketAddr,
    /// The datagram.
    pub data: SignalData,
}

/// Most [`Signal`] buffers one worker has out at once; a datagram that finds
/// none free is dropped and counted (`signals_dropped`), as one that finds
/// the control thread's queue full.
pub const SIGNAL_BUFS: usize = 1024;

/// The bytes of a [`Signal`]: a buffer of the worker that sent it, which
/// goes back to that worker when dropped (on whichever thread), so the
/// hand-off allocates only while a worker's set of them grows to the most
/// it needed at once (at most [`SIGNAL_BUFS`]). A pool [`Buf`](crate::pool::Buf) cannot make
/// the trip: it belongs to the worker's thread and region.
pub struct SignalData {
    bytes: Vec<u8>,
    /// Where the buffer goes back to (`None`: freed, not reused).
    home: Option<crossbeam_channel::Sender<Vec<u8>>>,
}

impl SignalData {
    /// Bytes not from a worker's set (freed when dropped).
    pub fn new(bytes: Vec<u8>) -> SignalData {
        SignalData { bytes, home: None }
    }
}

impl std::ops::Deref for SignalData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Debug for SignalData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SignalData({} bytes)", self.bytes.len())
    }
}

impl std::ops::Drop for SignalData {
    fn drop(&mut self) {
        if let Some(home) = self.home.take() {
            // The channel has room for every buffer the worker made; it is
            // closed only when the worker is gone (then the buffer is freed).
            let _ = home.try_send(std::mem::take(&mut self.bytes));
        }
    }
}

/// A worker's [`SignalData`] buffers: the free ones come back through a
/// channel as the control thread drops its signals.
pub(super) struct SignalBufs {
    home: crossbeam_channel::Sender<Vec<u8>>,
    free: Receiver<Vec<u8>>,
    /// Buffers made so far (free or out).
    made: usize,
}

impl SignalBufs {
    pub(super) fn new() -> SignalBufs {
        let (home, free) = crossbeam_channel::bounded(SIGNAL_BUFS);
        SignalBufs { home, free, made: 0 }
    }

    /// A copy of `bytes` in a buffer of the set, or `None` when all
    /// [`SIGNAL_BUFS`] are out.
    pub(super) fn copy(&mut self, bytes: &[u8]) -> Option<SignalData> {
        let mut b = match self.free.try_recv() {
            Ok(b) => b,
            Err(_) if self.made < SIGNAL_BUFS => {
                self.made += 1;
                Vec::with_capacity(crate::pool::BUF_LEN)
            }
            Err(_) => return None,
        };
        b.clear();
        // No allocation: a datagram is at most a pool buffer long (a longer
        // one, from an AF_XDP frame, grows this buffer once).
        b.extend_from_slice(bytes);
        Some(SignalData { bytes: b, home: Some(self.home.clone()) })
    }
}
