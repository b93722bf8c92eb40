//! What the control thread tells a worker: the commands and the types they
//! carry (a leg's sockets and configuration, where its contexts stand, a
//! call on its way to another worker).

use super::fork::{ForkConfig, ForkKey, ForkSockets};
use super::play::Play;
use super::stream::{CallKey, Stream};
use crate::io::Wake;
use crate::stats::LegStats;
use srtp::{Context, Engine};
use srtpgate_codec::payload::PayloadKinds;
use srtpgate_codec::transcode::Transcoder;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;

/// The sockets of one leg of a media stream: where that leg's endpoint
/// sends, and where the relay sends to it from.
pub struct LegSockets {
    /// RTP socket.
    pub rtp: UdpSocket,
    /// RTCP socket (RTP port + 1; idle when the endpoint multiplexes RTCP).
    pub rtcp: UdpSocket,
    /// Counters of this leg.
    pub stats: Arc<LegStats>,
}

/// What the signalling agreed for one leg; `None` fields keep what is set.
pub struct LegConfig<E: Engine> {
    /// The endpoint's RTP and RTCP addresses from its SDP (re-learnt from
    /// the first valid packet).
    pub peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// The endpoint multiplexes RTCP on the RTP port (RFC 5761).
    pub rtcp_mux: bool,
    /// Context that unprotects what the endpoint sends (inner `None`: plain RTP).
    pub rx: Option<Option<Context<E>>>,
    /// Context that protects what the relay sends to the endpoint (inner `None`: plain RTP).
    pub tx: Option<Option<Context<E>>>,
    /// A tag of the key of `tx` (when `tx` is given), which
    /// [`Cmd::Reserve`] must name.
    pub tx_key: u64,
    /// The sending context (new or kept) protects only indices reserved by
    /// [`Cmd::Reserve`] (calls kept across restarts).
    pub reserving: bool,
    /// Accept a new source address after latching (media handover); SRTP
    /// legs always may re-latch on an authenticated packet.
    pub handover: bool,
    /// Transcoding of the RTP this leg sends, before it is protected for
    /// the other leg (inner `None`: pass-through).
    pub transcode: Option<Option<Box<Transcoder>>>,
    /// The leg speaks ICE and/or DTLS on its port: datagrams that are not
    /// RTP or RTCP by RFC 7983's first-byte rule (STUN 0–3, DTLS 20–63) go
    /// to the control thread as [`Signal`](super::Signal)s.
    pub demux: bool,
    /// Its SRTP keys come from a DTLS handshake that has not finished:
    /// media from and to it is dropped (`no_destination`) until
    /// [`Cmd::Keys`] brings them.
    pub keys_pending: bool,
    /// The leg is bundled (RFC 8843) into the transport of this stream's
    /// leg (another stream of the call): its media comes in and goes out
    /// through that stream's port, to that stream's ICE peer.
    pub bundle: Option<usize>,
    /// The RTP payload types of this leg's m-line: on a bundled leg,
    /// what the transport's port hands to this stream.
    pub payload_types: Vec<u8>,
    /// RTP to this leg carries the stream's `a=mid` in this RTP header
    /// extension (RFC 8843 §15; one-byte form, RFC 8285: id 1–14, mid of
    /// 1–16 bytes), so that a bundling endpoint can tell the streams apart
    /// without knowing their SSRCs.
    pub mid_ext: Option<(u8, Vec<u8>)>,
    /// What each payload type of this leg's m-line carries (events, a
    /// codec the relay can silence), by the leg's SDP (`None`: kept).
    pub kinds: Option<Box<PayloadKinds>>,
}

/// Commands from the control thread.
pub enum Cmd<E: Engine> {
    /// A new media stream of a call, with its two legs' sockets.
    AddStream { call: CallKey, stream: usize, legs: [LegSockets; 2] },
    /// The negotiated parameters of one leg of a stream.
    Configure { call: CallKey, stream: usize, party: usize, config: Box<LegConfig<E>> },
    /// Close every stream of a call.
    RemoveCall { call: CallKey },
    /// Close one stream of a call (a refused re-offer that had added it).
    RemoveStream { call: CallKey, stream: usize },
    /// The SRTP contexts of a leg whose keys a DTLS handshake agreed:
    /// `rx` unprotects what its endpoint sends, `tx` protects what the relay
    /// sends to it, under key `tx_key` ([`LegConfig::tx_key`]; its
    /// reservations say whether it reserves).
    Keys { call: CallKey, stream: usize, party: usize, rx: Box<Context<E>>, tx: Box<Context<E>>, tx_key: u64 },
    /// A leg's peer chosen by ICE (a valid check, nominated or first):
    /// media to the leg goes there (RTCP too, which ICE legs multiplex).
    Latch { call: CallKey, stream: usize, party: usize, peer: SocketAddr },
    /// A datagram the control thread sends from a leg's RTP port (STUN
    /// answers, DTLS records).
    Send { call: CallKey, stream: usize, party: usize, to: SocketAddr, data: Vec<u8> },
    /// Hand every stream of a call, with all its state (sockets, latched
    /// peers, contexts, transcoders), to another worker; then report on
    /// `done` how many streams went. Datagrams of the call already read in
    /// this round are dropped (counted as stray).
    MoveCall { call: CallKey, to: Mover<E>, done: std::sync::mpsc::SyncSender<usize> },
    /// Streams another worker handed over ([`Cmd::MoveCall`]).
    Adopt { streams: Vec<Moved<E>> },
    /// Report where every keyed leg's SRTP contexts stand (for the call
    /// state kept across restarts): one [`LegState`] per leg with a
    /// context. Allocates: the control thread asks a few times a second.
    Snapshot { reply: std::sync::mpsc::Sender<Vec<LegState>> },
    /// Reserve the SRTP and SRTCP indices of `ssrc` on a leg's sending
    /// context up to these (inclusive; no SRTP index: none yet), once the
    /// reservation is persisted. Applied only while the leg's sending key
    /// is still `key` ([`LegConfig::tx_key`]): a reservation made for a
    /// key that a re-INVITE replaced must not reach the new one.
    Reserve { call: CallKey, stream: usize, party: usize, key: u64, ssrc: u32, rtp: Option<u64>, rtcp: u32 },
    /// Copy what the endpoints of every stream of a call send, once
    /// authenticated, to the recorder (`on`), or stop.
    Record { call: CallKey, on: bool },
    /// A subscriber's copy of what `party` sends on `stream` (rtpengine's
    /// `subscribe`): its sockets; nothing is copied until
    /// [`Cmd::ConfigureFork`].
    AddFork { call: CallKey, stream: usize, party: usize, fork: ForkSockets },
    /// Where a fork's copies go, under which key and SSRC.
    ConfigureFork { call: CallKey, fork: ForkKey, config: Box<ForkConfig<E>> },
    /// Stop a fork and close its sockets.
    RemoveFork { call: CallKey, fork: ForkKey },
    /// Play a prompt or a digit to the endpoint of `party`'s leg.
    Play { call: CallKey, stream: usize, party: usize, play: Box<Play> },
    /// Stop the prompt playing to the endpoint of `party`'s leg.
    StopPlay { call: CallKey, stream: usize, party: usize },
    /// Leave the loop.
    Stop,
}

/// Where one leg's SRTP contexts stand ([`Cmd::Snapshot`]).
#[derive(Debug)]
pub struct LegState {
    /// The call.
    pub call: CallKey,
    /// Its media stream.
    pub stream: usize,
    /// The leg.
    pub party: usize,
    /// The streams of the context that unprotects what the endpoint sends.
    pub rx: Vec<srtp::StreamState>,
    /// Its master keys' use.
    pub rx_uses: Vec<(u64, u64)>,
    /// The streams of the context that protects what goes to the endpoint.
    pub tx: Vec<srtp::StreamState>,
    /// Its master keys' use.
    pub tx_uses: Vec<(u64, u64)>,
    /// A packet towards the endpoint waited for a reservation since the
    /// last snapshot: its SSRC, the index it needed, and whether SRTCP.
    pub wanted: Option<(u32, u64, bool)>,
}

/// A stream on its way from one worker to another (opaque).
pub struct Moved<E: Engine>(pub(super) Stream<E>);

/// Where a worker sends the streams it hands over: another worker's command
/// channel and waker.
pub struct Mover<E: Engine> {
    pub(crate) tx: crossbeam_channel::Sender<Cmd<E>>,
    pub(crate) waker: Arc<dyn Wake>,
}
