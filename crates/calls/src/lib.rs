//! The call table's decisions, without I/O: no sockets, threads, clocks or
//! runtime, so that they are tested and fuzzed without a relay.
//!
//! The daemon (`srtpgate serve`) owns the sockets and the workers and
//! applies what is decided here. What lives here so far:
//!
//! - [`negotiate`]: a media stream's codecs under rtpengine's codec options,
//!   from the offer's formats to pass-through or a [`negotiate::Transcoding`].
//!
//! The call table itself (offer and answer as decide, then edit the SDP,
//! then commands for the workers) moves here next, with the SDP transport
//! edits of WebRTC legs and the records kept for a restart.

#![forbid(unsafe_code)]

pub mod negotiate;
