//! A media stream as its worker holds it: two legs, each with its sockets,
//! its latched peer, its SRTP contexts, its transcoder and its BUNDLE links.

use crate::stats::LegStats;
use srtp::{Context, Engine};
use srtpgate_codec::payload::PayloadKinds;
use srtpgate_codec::player::Player;
use srtpgate_codec::transcode::Transcoder;
use srtpgate_quality::ArrivalJitter;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

/// Identifies a call across the control thread and the workers.
pub type CallKey = u64;

/// One m-line of a call: the leg towards each party.
pub(super) struct Stream<E: Engine> {
    pub call: CallKey,
    /// The m-line's index.
    pub index: usize,
    pub legs: [Leg<E>; 2],
    /// What its endpoints send is copied to the recorder.
    pub record: bool,
}

impl<E: Engine> Stream<E> {
    /// The leg a packet of `party` arrived on and the leg it leaves by.
    pub fn legs_of(&mut self, party: usize) -> (&mut Leg<E>, &mut Leg<E>) {
        let (a, b) = self.legs.split_at_mut(1);
        if party == 0 {
            (&mut a[0], &mut b[0])
        } else {
            (&mut b[0], &mut a[0])
        }
    }

    /// The stream has a transcoder on either leg (working or failed): its
    /// packets wait for the others of the round to leave first.
    pub fn transcodes(&self) -> bool {
        self.legs.iter().any(|d| d.transcode.is_some() || d.transcode_failed)
    }
}

/// One leg of a stream: the relay's end towards one party.
pub(super) struct Leg<E: Engine> {
    pub rtp: UdpSocket,
    pub rtcp: UdpSocket,
    pub stats: Arc<LegStats>,
    pub peer_rtp: Option<SocketAddr>,
    pub peer_rtcp: Option<SocketAddr>,
    pub latched_rtp: bool,
    pub latched_rtcp: bool,
    pub mux: bool,
    pub configured: bool,
    pub rx: Option<Context<E>>,
    pub tx: Option<Context<E>>,
    pub handover: bool,
    pub transcode: Option<Box<Transcoder>>,
    /// The transcoder failed: this leg's RTP is dropped until the
    /// signalling sets the stream up again.
    pub transcode_failed: bool,
    /// The sequence numbers of the RTP from the endpoint, for the leg's
    /// expected and lost packets.
    pub seq: Option<SeqTrack>,
    /// See [`crate::worker::LegConfig::demux`].
    pub demux: bool,
    /// See [`crate::worker::LegConfig::keys_pending`].
    pub keys_pending: bool,
    /// See [`crate::worker::LegConfig::bundle`].
    pub bundle: Option<usize>,
    /// See [`crate::worker::LegConfig::payload_types`] (bit per type).
    pub pts: u128,
    /// The slot of the stream whose port this bundled leg shares (kept by
    /// [`super::streams::Streams::relink`]).
    pub bundle_slot: Option<u32>,
    /// On the leg that owns a BUNDLE transport: the other bundled streams.
    pub members: Vec<Member>,
    /// See [`crate::worker::LegConfig::mid_ext`]: id, the mid and its length.
    pub mid_ext: Option<(u8, [u8; 16], u8)>,
    /// A packet to this leg waited for an index reservation (SSRC,
    /// index, SRTCP), for the next [`crate::worker::Cmd::Snapshot`].
    pub wanted: Option<(u32, u64, bool)>,
    /// [`crate::worker::LegConfig::tx_key`] of `tx`.
    pub tx_key: u64,
    /// Subscribers' copies of what this leg's party sends.
    pub forks: Vec<super::fork::Fork<E>>,
    /// See [`crate::worker::LegConfig::kinds`].
    pub kinds: Box<PayloadKinds>,
    /// `kinds` names a telephone-event payload type (set with `kinds`).
    pub sends_events: bool,
    /// The timestamp of the last RFC 4733 event whose end was reported.
    pub last_event_ts: Option<u32>,
    /// What the relay plays to this leg's endpoint.
    pub player: Option<Box<Player>>,
    /// The relay's interarrival jitter of the endpoint's RTP.
    pub jitter: ArrivalJitter,
}

impl<E: Engine> Leg<E> {
    /// A leg on its sockets, not configured yet (media to and from it is
    /// dropped until it is).
    pub fn new(rtp: UdpSocket, rtcp: UdpSocket, stats: Arc<LegStats>) -> Leg<E> {
        Leg {
            rtp,
            rtcp,
            stats,
            peer_rtp: None,
            peer_rtcp: None,
            latched_rtp: false,
            latched_rtcp: false,
            mux: false,
            configured: false,
            rx: None,
            tx: None,
            handover: false,
            transcode: None,
            transcode_failed: false,
            seq: None,
            demux: false,
            keys_pending: false,
            bundle: None,
            pts: 0,
            bundle_slot: None,
            members: Vec::new(),
            mid_ext: None,
            wanted: None,
            tx_key: 0,
            forks: Vec::new(),
            kinds: Box::default(),
            sends_events: false,
            last_event_ts: None,
            player: None,
            jitter: ArrivalJitter::default(),
        }
    }

    /// The leg's peer address for a packet of `rtcp` kind and whether it
    /// is latched: RTCP has its own unless multiplexed.
    pub fn peer(&self, rtcp: bool) -> (Option<SocketAddr>, bool) {
        if rtcp && !self.mux {
            (self.peer_rtcp, self.latched_rtcp)
        } else {
            (self.peer_rtp, self.latched_rtp)
        }
    }

    /// Announces the fields a packet's way through the round reads, on the
    /// leg it arrives on or the one it leaves by ([`srtp::prefetch`]), by
    /// address only: the packet fields one by one (two in one cache line
    /// cost an instruction, not a second load), then both contexts whole
    /// (most of a leg's size; announcing only the one a leg uses measured
    /// no different, docs/BENCHMARKS.md).
    pub fn prefetch(&self) {
        use srtp::prefetch::value;
        value(&self.stats);
        value(&self.members);
        value(&self.demux);
        value(&self.transcode);
        value(&self.transcode_failed);
        value(&self.peer_rtp);
        value(&self.peer_rtcp);
        value(&self.latched_rtp);
        value(&self.mux);
        value(&self.handover);
        value(&self.configured);
        value(&self.keys_pending);
        value(&self.bundle_slot);
        value(&self.seq);
        value(&self.jitter);
        value(&self.kinds);
        value(&self.forks);
        value(&self.mid_ext);
        value(&self.player);
        value(&self.rx);
        value(&self.tx);
    }

    /// Media can go to this leg's endpoint: configured, keyed (or plain).
    pub fn ready(&self) -> bool {
        self.configured && !self.keys_pending
    }
}

/// A stream bundled into another's transport, as that transport's leg
/// sees it: RTP goes to it by payload type, RTCP by the sender's SSRC
/// (learnt from its RTP; RTCP of an SSRC not seen stays with the owner).
#[derive(Clone, Copy)]
pub(super) struct Member {
    pub slot: u32,
    pub pts: u128,
    pub ssrcs: [u32; 4],
    pub seen: u8,
}

impl Member {
    pub fn note_ssrc(&mut self, ssrc: u32) {
        let n = (self.seen as usize).min(self.ssrcs.len());
        if !self.ssrcs[..n].contains(&ssrc) {
            self.ssrcs[n % self.ssrcs.len()] = ssrc;
            self.seen = self.seen.saturating_add(1).min(self.ssrcs.len() as u8);
        }
    }

    /// The member takes RTP of this payload type.
    pub fn takes_pt(&self, pt: u8) -> bool {
        self.pts >> pt & 1 == 1
    }

    /// The member's RTP came from this SSRC.
    pub fn has_ssrc(&self, ssrc: u32) -> bool {
        self.ssrcs[..self.seen as usize].contains(&ssrc)
    }
}

/// Expected RTP packets of one leg by sequence number (RFC 3550 A.1, in
/// short): the extended highest sequence number since the count began; a
/// new SSRC or a jump of more than [`SeqTrack::MAX_DROPOUT`] (a restarted
/// sender) begins a new span, the packets of the spans before kept.
#[derive(Clone, Copy, Debug)]
pub(super) struct SeqTrack {
    ssrc: u32,
    first: u64,
    high: u64,
    before: u64,
}

impl SeqTrack {
    const MAX_DROPOUT: u16 = 3000;

    pub fn new(ssrc: u32, seq: u16) -> SeqTrack {
        SeqTrack { ssrc, first: 1 << 16 | seq as u64, high: 1 << 16 | seq as u64, before: 0 }
    }

    pub fn note(&mut self, ssrc: u32, seq: u16) {
        let ahead = seq.wrapping_sub(self.high as u16);
        if ssrc != self.ssrc || (ahead > Self::MAX_DROPOUT && ahead < 0x8000) {
            let before = self.expected();
            *self = SeqTrack { before, ..SeqTrack::new(ssrc, seq) };
        } else if ahead > 0 && ahead < 0x8000 {
            self.high += ahead as u64;
        }
    }

    pub fn expected(&self) -> u64 {
        self.before + self.high - self.first + 1
    }
}

#[cfg(test)]
mod seq_tests {
    use super::SeqTrack;

    #[test]
    fn expected_packets_follow_the_sequence_across_wraps_and_restarts() {
        let mut t = SeqTrack::new(7, 65_530);
        for s in [65_531u16, 65_535, 2, 1, 2] {
            t.note(7, s);
        }
        // 65 530 ..= 65 538 (2 after the wrap): 9 expected; late and
        // duplicate packets do not move it.
        assert_eq!(t.expected(), 9);
        // A new SSRC starts a new span, the old one kept.
        t.note(8, 40_000);
        t.note(8, 40_004);
        assert_eq!(t.expected(), 9 + 5);
        // A restart far ahead (a new stream on the same SSRC) too.
        t.note(8, 50_000);
        assert_eq!(t.expected(), 14 + 1);
    }
}
