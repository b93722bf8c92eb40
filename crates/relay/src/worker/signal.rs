//! STUN and DTLS datagrams on the way from a worker to the control thread,
//! in buffers the worker lends ([`Lent`]).

use super::lent::Lent;
use super::stream::CallKey;
use std::net::SocketAddr;

/// A STUN or DTLS datagram an ICE/DTLS leg received, for the control
/// thread. Its bytes are in a buffer the worker reuses: ICE checks arrive
/// before anything is authenticated, so a flood of them must not make the
/// worker allocate.
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
    pub data: Lent,
}

/// Most [`Signal`] buffers one worker has out at once; a datagram that finds
/// none free is dropped and counted (`signals_dropped`), as one that finds
/// the control thread's queue full.
pub const SIGNAL_BUFS: usize = 1024;
