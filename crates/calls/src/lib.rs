//! The call table's decisions, without I/O: no sockets, threads, clocks or
//! runtime, so that they are tested and fuzzed without a relay.
//!
//! The daemon (`srtpgate serve`) owns the sockets and the workers and
//! applies what is decided here. What lives here so far:
//!
//! - [`negotiate`]: a media stream's codecs under rtpengine's codec options,
//!   from the offer's formats to pass-through or a [`negotiate::Transcoding`];
//! - [`transport`]: a WebRTC leg's ICE, DTLS and BUNDLE attributes, read from
//!   a side's SDP and written into the SDP the relay sends it;
//! - [`web_leg`]: the running ICE-lite and DTLS-SRTP association of such a
//!   leg, fed datagrams and timers, returning what to send and the keys.
//!
//! - [`record`]: what is kept of a call for a restart or a takeover (its
//!   sealed record, the fields of its streams' indices).
//!
//! The call table itself (offer and answer as decide, then edit the SDP,
//! then commands for the workers) moves here next.

#![forbid(unsafe_code)]

pub mod negotiate;
pub mod record;
pub mod transport;
pub mod web_leg;
