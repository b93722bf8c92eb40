//! Call quality, without I/O.
//!
//! The relay holds every leg's keys, so it can read the RTCP the endpoints
//! send without changing what it forwards. From the sender and receiver
//! reports ([`rtcp`]) and the relay's own view of the RTP it receives
//! ([`jitter`]), a call's [`Book`] keeps, per SSRC, what the endpoint of
//! that SSRC received: loss, jitter, round-trip time and the MOS of the
//! E-model as rtpengine reduces it ([`mos`]), as rtpengine's NG replies
//! carry them. [`hep`] writes a report as HEP3 for Homer.
//!
//! The workers only copy an authenticated RTCP packet ([`RtcpCopy`]) into
//! a bounded queue; everything else runs on the control plane.

#![forbid(unsafe_code)]

pub mod book;
pub mod hep;
pub mod jitter;
pub mod mos;
pub mod rtcp;

pub use book::{Book, Sample, Source, SsrcQuality};
pub use jitter::ArrivalJitter;
pub use mos::Model;

use std::net::SocketAddr;

/// Bytes of an RTCP packet a worker copies for the control plane: a
/// compound packet of an SR or RR with a few report blocks and an SDES
/// fits many times; a longer one is cut at a packet boundary by the parser.
pub const RTCP_COPY: usize = 768;

/// One RTCP packet an endpoint sent, authenticated and decrypted by the
/// worker that owns its leg, as plain bytes (fixed size: the worker hands
/// it to a bounded queue without allocating).
#[derive(Clone)]
pub struct RtcpCopy {
    /// The call's key (the control plane's `CallKey`).
    pub call: u64,
    /// The stream (m-line) index.
    pub stream: u16,
    /// The leg it arrived on: the party that sent it.
    pub party: u8,
    /// Where it came from.
    pub from: SocketAddr,
    /// When it arrived, UNIX time in ns (the kernel's receive time where
    /// the I/O backend has it): round trips are differences of these.
    pub rx_ns: u64,
    len: u16,
    bytes: [u8; RTCP_COPY],
}

impl RtcpCopy {
    /// A copy of `pkt` (its first [`RTCP_COPY`] bytes).
    pub fn new(call: u64, stream: u16, party: u8, from: SocketAddr, rx_ns: u64, pkt: &[u8]) -> RtcpCopy {
        let len = pkt.len().min(RTCP_COPY);
        let mut bytes = [0; RTCP_COPY];
        bytes[..len].copy_from_slice(&pkt[..len]);
        RtcpCopy { call, stream, party, from, rx_ns, len: len as u16, bytes }
    }

    /// The packet's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for RtcpCopy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtcpCopy")
            .field("call", &self.call)
            .field("stream", &self.stream)
            .field("party", &self.party)
            .field("from", &self.from)
            .field("len", &self.len)
            .finish()
    }
}
