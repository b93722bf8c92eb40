//! Errors of the SRTP core. Every failure on untrusted input is one of these.

use thiserror::Error;

/// Why an RTP or RTCP header was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum HeaderError {
    /// Fewer bytes than the fixed header.
    #[error("packet too short ({0} bytes)")]
    TooShort(usize),
    /// Version field is not 2.
    #[error("unsupported RTP version {0}")]
    BadVersion(u8),
    /// The CSRC list runs past the end of the packet.
    #[error("CSRC count {0} exceeds packet length")]
    CsrcOverrun(u8),
    /// The header extension runs past the end of the packet.
    #[error("header extension length exceeds packet length")]
    ExtensionOverrun,
    /// The padding count is zero or larger than the payload.
    #[error("invalid padding length {0}")]
    BadPadding(u8),
    /// The RTCP length field disagrees with the packet.
    #[error("RTCP length field exceeds packet length")]
    RtcpLength,
    /// The RTCP packet type is outside 192..=223 (RFC 5761 §4).
    #[error("not an RTCP packet (type {0})")]
    NotRtcp(u8),
}

/// An SRTP/SRTCP error.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Error {
    /// Header did not parse.
    #[error("malformed header: {0}")]
    Malformed(#[from] HeaderError),
    /// Protected packet shorter than the trailer (tag, MKI, SRTCP index).
    #[error("malformed header: packet too short for the SRTP trailer")]
    TrailerTooShort,
    /// Tag check failed.
    #[error("authentication failed")]
    AuthFailed,
    /// The index was seen before or is older than the replay window.
    #[error("replayed packet")]
    Replayed,
    /// The packet carried an MKI that names no master key.
    #[error("unknown MKI")]
    UnknownMki,
    /// The master key reached its lifetime (RFC 3711 §9.2).
    #[error("master key lifetime reached; re-key the session")]
    KeyExpired,
    /// Protecting this packet would use an index beyond what was reserved
    /// for the stream ([`Context::reserve`](crate::Context::reserve)): the
    /// reservation must be persisted and raised first. Says the stream and
    /// the index it wanted (the next SRTCP index for SRTCP).
    #[error("index {index} of SSRC {ssrc:#010x} not reserved")]
    NotReserved {
        /// The stream.
        ssrc: u32,
        /// The index the packet would have used.
        index: u64,
    },
    /// Too many streams in one context.
    #[error("stream limit reached ({0} streams)")]
    TooManyStreams(usize),
    /// The output buffer cannot hold the result.
    #[error("output buffer too small (need {0} bytes)")]
    BufferTooSmall(usize),
    /// The packet is larger than this implementation accepts.
    #[error("packet too large ({0} bytes)")]
    PacketTooLarge(usize),
    /// An SDES suite name that is not supported.
    #[error("unknown crypto suite {0:?}")]
    UnknownSuite(String),
    /// Bad key material or policy.
    #[error("invalid key: {0}")]
    InvalidKey(String),
    /// Bad policy parameter.
    #[error("invalid policy: {0}")]
    InvalidPolicy(String),
}
