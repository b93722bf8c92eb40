//! The relay's WebRTC leg, sans I/O: ICE-lite connectivity checks answered
//! ([`stun`]), the leg's ICE credentials ([`ice`]) and DTLS-SRTP
//! ([`dtls`]). The daemon (`srtpgate serve`) moves the datagrams. The
//! browser's end of such a leg ([`client`]), which the load generator and
//! the daemon's tests play, is built from the same pieces.

#![forbid(unsafe_code)]

pub mod client;
pub mod dtls;
pub mod ice;
pub mod stun;

#[cfg(test)]
mod heap_scan;

/// RFC 7983's demultiplexing of a datagram on a port that carries STUN,
/// DTLS and SRTP at once, by its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Demux {
    /// 0–3.
    Stun,
    /// 20–63.
    Dtls,
    /// 128–191.
    Rtp,
    /// Anything else (dropped).
    Other,
}

/// Classifies a datagram (RFC 7983 §7).
pub fn demux(b: &[u8]) -> Demux {
    match b.first() {
        Some(0..=3) => Demux::Stun,
        Some(20..=63) => Demux::Dtls,
        Some(128..=191) => Demux::Rtp,
        _ => Demux::Other,
    }
}
