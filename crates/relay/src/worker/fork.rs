//! Media forking's data path (rtpengine's `subscribe`): a copy of each RTP
//! packet a party sends, once authenticated and routed, re-protected for a
//! subscriber under the subscriber's own key, with the fork's own SSRC,
//! sequence numbers and timestamps, and sent from the fork's port.
//!
//! The copy is a packet of its own in the round ([`Pkt::fork`]), taken
//! after the original packet was routed, so the call's packet is never
//! delayed or changed; a copy that finds no buffer is dropped and counted
//! on the fork. Only RTP is copied: the subscriber's RTCP would describe
//! another stream than the party's (its own SSRC and numbering).

use super::packet::{Origin, Pkt};
use crate::pool::Pool;
use crate::stats::{Drop, LegStats};
use srtp::{Context, Engine, Kind};
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

/// A fork's name, as the call table gave it.
pub type ForkKey = u64;

/// The sockets and counters of a new fork ([`super::Cmd::AddFork`]).
pub struct ForkSockets {
    /// Its name.
    pub key: ForkKey,
    /// The port the copies leave from.
    pub rtp: UdpSocket,
    /// RTP port + 1, held so that the pair stays the fork's (not read).
    pub rtcp: UdpSocket,
    /// Its counters.
    pub stats: Arc<LegStats>,
}

/// Where a fork's copies go once the subscriber answered
/// ([`super::Cmd::ConfigureFork`]).
pub struct ForkConfig<E: Engine> {
    /// The subscriber's RTP address.
    pub peer: SocketAddr,
    /// Protects the copies (`None`: plain RTP).
    pub tx: Option<Context<E>>,
    /// The copies' SSRC.
    pub ssrc: u32,
    /// The party's RTP clock rate, Hz.
    pub clock_rate: u32,
}

/// One fork of a leg: a subscriber's copy of what the leg's party sends.
pub(super) struct Fork<E: Engine> {
    pub key: ForkKey,
    pub rtp: UdpSocket,
    _rtcp: UdpSocket,
    pub stats: Arc<LegStats>,
    pub peer: Option<SocketAddr>,
    pub tx: Option<Context<E>>,
    pub renumber: Renumber,
}

impl<E: Engine> Fork<E> {
    pub fn new(s: ForkSockets) -> Fork<E> {
        Fork {
            key: s.key,
            rtp: s.rtp,
            _rtcp: s.rtcp,
            stats: s.stats,
            peer: None,
            tx: None,
            renumber: Renumber::new(0, 8000),
        }
    }

    pub fn configure(&mut self, c: ForkConfig<E>) {
        self.peer = Some(c.peer);
        self.tx = c.tx;
        self.renumber = Renumber::new(c.ssrc, c.clock_rate);
    }
}

/// Copies a routed RTP packet `p` for each of `forks` (its leg's) that has
/// a subscriber, into `out` (which never grows: a full queue drops the
/// copy).
pub(super) fn copy<E: Engine>(p: &Pkt, forks: &mut [Fork<E>], pool: &mut Pool, out: &mut Vec<Pkt>) {
    if p.kind != Kind::Rtp {
        return;
    }
    let bytes = p.bytes();
    for (i, f) in forks.iter_mut().enumerate() {
        if f.peer.is_none() {
            continue;
        }
        let buf = if out.len() < out.capacity() { pool.take() } else { None };
        let Some(mut buf) = buf else {
            f.stats.dropped(Drop::PoolExhausted);
            continue;
        };
        if bytes.len() < 12 || buf.len() < bytes.len() {
            f.stats.dropped(Drop::Malformed);
            pool.put(buf);
            continue;
        }
        buf[..bytes.len()].copy_from_slice(bytes);
        f.renumber.apply(&mut buf[..12], p.rx_ns);
        let mut c = Pkt::new(buf, bytes.len(), p.slot, p.party, Kind::Rtp, p.from, p.rx_ns);
        c.origin = Origin::Fork(i as u8);
        out.push(c);
    }
}

/// The fork's own numbering of the copies: its SSRC, and the party's
/// sequence numbers and timestamps shifted by offsets that change only when
/// the party's SSRC does (a re-INVITE, a restarted phone), so that the
/// subscriber sees one stream without jumps: the next sequence number, and
/// a timestamp advanced by the time that passed.
pub(super) struct Renumber {
    ssrc: u32,
    clock_rate: u32,
    /// The party's SSRC now and the offsets applied to it.
    source: Option<(u32, u16, u32)>,
    /// The newest copy: its sequence number, timestamp and arrival (ns).
    last: Option<(u16, u32, u64)>,
}

impl Renumber {
    pub fn new(ssrc: u32, clock_rate: u32) -> Renumber {
        Renumber { ssrc, clock_rate: clock_rate.max(1), source: None, last: None }
    }

    /// Rewrites the fixed RTP header `h` (12 bytes) of a copy that arrived
    /// at `at_ns`.
    pub fn apply(&mut self, h: &mut [u8], at_ns: u64) {
        let seq = u16::from_be_bytes([h[2], h[3]]);
        let ts = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
        let ssrc = u32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        let (seq_off, ts_off) = match self.source {
            Some((s, so, to)) if s == ssrc => (so, to),
            _ => {
                let (out_seq, out_ts) = match self.last {
                    None => (seq, ts),
                    Some((ls, lt, la)) => {
                        let ticks = at_ns.saturating_sub(la) as u128 * self.clock_rate as u128 / 1_000_000_000;
                        (ls.wrapping_add(1), lt.wrapping_add((ticks as u32).max(1)))
                    }
                };
                let offsets = (out_seq.wrapping_sub(seq), out_ts.wrapping_sub(ts));
                self.source = Some((ssrc, offsets.0, offsets.1));
                offsets
            }
        };
        let (out_seq, out_ts) = (seq.wrapping_add(seq_off), ts.wrapping_add(ts_off));
        h[2..4].copy_from_slice(&out_seq.to_be_bytes());
        h[4..8].copy_from_slice(&out_ts.to_be_bytes());
        h[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
        let newer = match self.last {
            None => true,
            Some((ls, _, _)) => {
                let ahead = out_seq.wrapping_sub(ls);
                ahead != 0 && ahead < 0x8000
            }
        };
        if newer {
            self.last = Some((out_seq, out_ts, at_ns));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Renumber;

    fn header(seq: u16, ts: u32, ssrc: u32) -> [u8; 12] {
        let mut h = [0u8; 12];
        h[0] = 0x80;
        h[2..4].copy_from_slice(&seq.to_be_bytes());
        h[4..8].copy_from_slice(&ts.to_be_bytes());
        h[8..12].copy_from_slice(&ssrc.to_be_bytes());
        h
    }

    fn fields(h: &[u8; 12]) -> (u16, u32, u32) {
        (
            u16::from_be_bytes([h[2], h[3]]),
            u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
        )
    }

    #[test]
    fn copies_run_on_across_a_new_source_ssrc() {
        let mut r = Renumber::new(0xfeed, 8000);
        let ms = 1_000_000u64;
        let mut out = Vec::new();
        for k in 0..3u16 {
            let mut h = header(100 + k, 5_000 + 160 * k as u32, 7);
            r.apply(&mut h, k as u64 * 20 * ms);
            out.push(fields(&h));
        }
        // A late packet keeps its place.
        let mut h = header(101, 5_160, 7);
        r.apply(&mut h, 70 * ms);
        assert_eq!(fields(&h), (101, 5_160, 0xfeed));
        // The party's new SSRC (a re-INVITE) 60 ms after the last packet,
        // numbered from elsewhere: the copy goes on from where it stood.
        let mut h = header(40_000, 1_000_000, 9);
        r.apply(&mut h, 100 * ms);
        out.push(fields(&h));
        let mut h = header(40_001, 1_000_160, 9);
        r.apply(&mut h, 120 * ms);
        out.push(fields(&h));
        assert_eq!(
            out,
            [
                (100, 5_000, 0xfeed),
                (101, 5_160, 0xfeed),
                (102, 5_320, 0xfeed),
                (103, 5_320 + 60 * 8, 0xfeed),
                (104, 5_320 + 60 * 8 + 160, 0xfeed),
            ]
        );
    }
}
