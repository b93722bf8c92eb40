//! Recording's tap: a copy of each authenticated packet of a recorded call,
//! decrypted and as it arrived (before any transcoding, as rtpengine
//! records), on its way to the recorder through the worker's own bounded
//! queue. A full queue, or all the worker's copy buffers out, drops the
//! copy and counts it: the packet itself is relayed all the same, never
//! later.

use super::lent::{Lent, LentBufs};
use super::packet::Pkt;
use super::stream::CallKey;
use srtp::Kind;
use std::net::SocketAddr;

/// One packet of a recorded call, decrypted, as it arrived.
#[derive(Debug)]
pub struct Tapped {
    /// The call.
    pub call: CallKey,
    /// Its media stream (m-line index).
    pub stream: usize,
    /// The leg (0 or 1) it arrived on.
    pub party: usize,
    /// RTCP (else RTP).
    pub rtcp: bool,
    /// Where it came from.
    pub from: SocketAddr,
    /// When it arrived: nanoseconds since the epoch.
    pub at_ns: u64,
    /// The packet: plain RTP or RTCP, without SRTP's tag and index.
    pub data: Lent,
}

/// Most copies one worker has out at once.
pub const RECORD_BUFS: usize = 4096;

/// A worker's way to the recorder.
pub(super) struct Tap {
    tx: crossbeam_channel::Sender<Tapped>,
    bufs: LentBufs,
}

impl Tap {
    pub(super) fn new(tx: crossbeam_channel::Sender<Tapped>) -> Tap {
        Tap { tx, bufs: LentBufs::new(RECORD_BUFS) }
    }

    /// Hands a copy of packet `p` (authenticated, its current bytes the
    /// plaintext) of stream `stream` of call `call` to the recorder; false
    /// when the copy was dropped.
    pub(super) fn copy(&mut self, call: CallKey, stream: usize, p: &Pkt) -> bool {
        // A full queue is seen before a buffer is taken for it.
        if self.tx.is_full() {
            return false;
        }
        let Some(data) = self.bufs.copy(p.bytes()) else { return false };
        let rtcp = p.kind == Kind::Rtcp;
        let t = Tapped { call, stream, party: p.party as usize, rtcp, from: p.from, at_ns: p.rx_ns, data };
        self.tx.try_send(t).is_ok()
    }
}
