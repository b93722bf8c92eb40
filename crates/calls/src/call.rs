//! What the table keeps of one call: its two parties (found by their SIP
//! tags), its media streams (one per SDP m-line) and, per stream, one leg
//! for each party.
//!
//! Vocabulary, used in every crate: a **party** is one end of the call (the
//! offerer of the first `offer` is party 0, the answerer party 1; a
//! re-INVITE from the callee is an offer from party 1). A **leg** is one
//! party's end of one media stream on the relay: the port pair where that
//! party's endpoint sends, the key it sends with (from its `a=crypto` or its
//! DTLS handshake), the key the relay sends to it with (made here), its
//! peer addresses and transport. A packet that arrives on party `p`'s leg is
//! unprotected with `p`'s endpoint key and protected with the relay's key
//! for the other party's leg, so each endpoint only ever holds its own keys.

use crate::interface::{Binding, Pair};
use crate::negotiate::{Offered, Transcoding};
use crate::transport::PeerTransport;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::formats::Format;
use srtpgate_stats::LegStats;
use srtpgate_webrtc::dtls::Setup;
use srtpgate_webrtc::ice::IceCreds;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

/// The data plane's name for a call (Call-IDs are the signalling's).
pub type CallKey = u64;

/// The other party of a call.
pub fn other(party: usize) -> usize {
    1 - party
}

/// One party's end of a media stream on the relay.
#[derive(Clone)]
pub struct Leg {
    /// Where the relay binds this leg: its interface and address (local,
    /// and advertised in SDP).
    pub at: Binding,
    /// The relay's RTP port of this leg (RTCP is the next).
    pub port: u16,
    /// Its counters, written by the worker that owns its sockets.
    pub stats: Arc<LegStats>,
    /// This party's endpoint speaks SRTP.
    pub srtp: bool,
    /// What this party offered (when it was the offerer), valid suites only.
    pub offered: Vec<CryptoAttr>,
    /// The key this party's endpoint sends with, once agreed.
    pub endpoint_key: Option<CryptoAttr>,
    /// Keys the relay put in the SDP this party received (one per suite
    /// offered to it; after its answer, the one it picked comes first).
    pub relay_keys: Vec<CryptoAttr>,
    /// The relay key in use towards this party, once agreed.
    pub relay_key: Option<CryptoAttr>,
    /// The endpoint's RTP and RTCP addresses from its SDP.
    pub peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// The endpoint offered or accepted rtcp-mux.
    pub mux: bool,
    /// The SDP protocol of this leg.
    pub proto: String,
    /// This leg's SRTP keys come from DTLS (`UDP/TLS/RTP/SAVP(F)`).
    pub dtls: bool,
    /// The relay runs ICE-lite on this leg.
    pub ice_on: bool,
    /// The relay's ICE credentials on this leg (made once).
    pub ice: Option<IceCreds>,
    /// What this party's last SDP said of ICE and DTLS.
    pub transport: PeerTransport,
    /// The `a=setup` the relay offered this party.
    pub setup_offered: Option<Setup>,
    /// The relay's DTLS role on this leg as its offer asked
    /// (`DTLS-reverse`), for the answer to apply.
    pub dtls_pref: Option<srtpgate_ng::Dtls>,
    /// BUNDLE (RFC 8843): the stream whose transport this leg shares (its
    /// own index on the group's owner), `None` when not bundled.
    pub bundle: Option<usize>,
    /// The relay offered this party the m-lines as one BUNDLE group.
    pub bundle_offered: bool,
    /// A bundled (non-owner) leg got SRTP keys from its owner's handshake.
    pub bundle_keyed: bool,
    /// RTP payload types this party's SDP and the relay's SDP to it named
    /// (on a bundled leg: what the shared port hands to this stream).
    pub pts: Vec<u8>,
    /// The `a=extmap` id of the mid header extension with this party (on
    /// bundled legs: the relay writes the mid into the RTP it sends).
    pub mid_ext: Option<u8>,
}

impl Leg {
    /// A leg on the relay's `ip` and `port`, nothing negotiated yet.
    pub fn new(at: Binding, port: u16, stats: Arc<LegStats>) -> Leg {
        Leg {
            at,
            port,
            stats,
            srtp: false,
            offered: Vec::new(),
            endpoint_key: None,
            relay_keys: Vec::new(),
            relay_key: None,
            peer: None,
            mux: false,
            proto: String::new(),
            dtls: false,
            ice_on: false,
            ice: None,
            transport: PeerTransport::default(),
            setup_offered: None,
            dtls_pref: None,
            bundle: None,
            bundle_offered: false,
            bundle_keyed: false,
            pts: Vec::new(),
            mid_ext: None,
        }
    }

    /// The port pair this leg holds on its interface.
    pub fn pair(&self) -> Pair {
        Pair { interface: self.at.interface, port: self.port }
    }

    /// The relay's address in SDP and ICE candidates for this leg.
    pub fn advertised(&self) -> IpAddr {
        self.at.addr.advertised
    }

    /// The mid header extension this leg's RTP carries (bundled legs): its
    /// id and the mid.
    pub fn mid_ext(&self) -> Option<(u8, Vec<u8>)> {
        Some((self.mid_ext.filter(|_| self.bundle.is_some())?, self.transport.mid.clone()?.into_bytes()))
    }

    /// Bundled into another stream's transport (not the group's owner).
    pub fn bundled_into(&self, own: usize) -> Option<usize> {
        self.bundle.filter(|&p| p != own)
    }
}

/// One media stream (SDP m-line) of a call.
#[derive(Clone)]
pub struct Stream {
    /// audio, video, …
    pub media_type: String,
    /// One leg per party.
    pub legs: [Leg; 2],
    /// Rejected (port 0) in the answer.
    pub rejected: bool,
    /// rtcp-mux was offered to the answerer.
    pub mux_offered: bool,
    /// What the last offer's codec options left for its answer.
    pub offered: Offered,
    /// The codecs transcoded between since the last answer, and the party
    /// that offered them (`None`: pass-through).
    pub transcoding: Option<(usize, Transcoding)>,
}

impl Stream {
    /// The formats party `party` sends on this stream: the codec it
    /// transcodes from, else the offered formats its SDP kept.
    pub fn party_formats(&self, party: usize) -> Vec<Format> {
        match &self.transcoding {
            Some((offerer, t)) => vec![if *offerer == party { t.offerer.clone() } else { t.answerer.clone() }],
            None => {
                let d = &self.legs[party];
                self.offered
                    .from_offerer
                    .iter()
                    .chain(&self.offered.added)
                    .filter(|f| d.pts.is_empty() || d.pts.contains(&f.pt))
                    .cloned()
                    .collect()
            }
        }
    }

    /// Every format of party `party`'s SDP on this stream: the codec it
    /// transcodes from (as its SDP numbered it), then the offered formats
    /// its SDP kept (both sides' of a transcoded stream, by payload type).
    pub fn sdp_formats(&self, party: usize) -> impl Iterator<Item = &Format> {
        let d = &self.legs[party];
        let coded = self.transcoding.as_ref().map(|(o, t)| if *o == party { &t.offerer } else { &t.answerer });
        let offered = self.offered.from_offerer.iter().chain(&self.offered.added);
        coded.into_iter().chain(offered.filter(move |f| d.pts.is_empty() || d.pts.contains(&f.pt)))
    }

    /// What each payload type of party `party`'s SDP carries, for its
    /// worker.
    pub fn payload_kinds(&self, party: usize) -> srtpgate_codec::payload::PayloadKinds {
        srtpgate_codec::payload::PayloadKinds::from_formats(
            self.sdp_formats(party).map(|f| (f.pt, f.name.as_str(), f.clock_rate)),
        )
    }

    /// The command that opens this stream, stream `index` of call `call`,
    /// on `worker`: its legs' port pairs and counters.
    pub(crate) fn add_command(&self, worker: usize, call: CallKey, index: usize) -> crate::command::Command {
        crate::command::Command::AddStream {
            worker,
            call,
            stream: index,
            ports: [self.legs[0].pair(), self.legs[1].pair()],
            stats: [self.legs[0].stats.clone(), self.legs[1].stats.clone()],
        }
    }
}

/// One call.
pub struct Call {
    /// Its name in the data plane.
    pub key: CallKey,
    /// The worker that carries its media.
    pub worker: usize,
    /// When it was created (wall clock, for replies).
    pub created: SystemTime,
    /// The last signalling for it.
    pub last_signal: Instant,
    /// The parties' SIP tags.
    pub tags: [Option<String>; 2],
    /// The parties' labels (`label` in the offer or answer each sent).
    pub labels: [Option<String>; 2],
    /// Media streams by m-line index (`None`: not relayed).
    pub streams: Vec<Option<Stream>>,
    /// An answer was accepted.
    pub answered: bool,
    /// The party of the last offer.
    pub offerer: usize,
    /// Each party's hold/mute bits from the management page (kept for
    /// streams a later offer adds).
    pub block: [u8; 2],
    /// Its recording, from start to stop.
    pub recording: Option<crate::recording::Recording>,
    /// Where its next recording goes, as requests said.
    pub recording_target: crate::recording::Target,
    /// `metadata`, kept with its recordings.
    pub metadata: Option<String>,
    /// Its subscribers (`subscribe request`), each with its copies.
    pub subscriptions: Vec<crate::subscribe::Subscription>,
    /// The media controls the signalling set (`block media`, …).
    pub controls: crate::media::Controls,
    /// Its quality per SSRC.
    pub quality: crate::quality::CallQuality,
}

impl Call {
    /// Whether any m-line of the call holds port pairs.
    pub fn holds_ports(&self) -> bool {
        self.streams.iter().any(Option::is_some)
    }

    /// The party whose tag is `tag`.
    pub fn party_of(&self, tag: &str) -> Option<usize> {
        self.tags.iter().position(|t| t.as_deref() == Some(tag))
    }
}
