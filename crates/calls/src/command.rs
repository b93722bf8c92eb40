//! What the call table asks of the data plane, and what it takes from it.
//!
//! The table decides; it never touches a socket or a worker. Every effect
//! on the media path is a [`Command`] queued while a request is handled and
//! drained by the caller after the reply is built
//! ([`Table::poll_command`](crate::Table::poll_command), as quinn-proto's
//! `poll_transmit`), so a refused request leaves nothing to undo. Keys
//! travel as policies ([`Keying`]): the worker's engine builds the contexts,
//! and only the workers know the engine.
//!
//! What the table needs from its host, port pairs and which workers run,
//! comes through [`Resources`], so the table is tested and fuzzed without a
//! relay.

use crate::call::CallKey;
use crate::interface::{Binding, Pair};
use srtp::{Policy, StreamState};
use srtpgate_codec::player::{Digit, Player, PromptPlay};
use srtpgate_codec::prompt::Prompt;
use srtpgate_codec::transcode::Transcoder;
use srtpgate_stats::{Histogram, LegSnapshot, LegStats};
use std::net::SocketAddr;
use std::sync::Arc;

/// Port pairs and workers, as the table's host has them.
pub trait Resources {
    /// Binds an RTP/RTCP port pair at `at` (the interface's port range,
    /// its local address); the RTP port. The sockets wait in the host until
    /// [`Command::AddStream`] names the pair, or until
    /// [`release`](Resources::release).
    fn allocate(&mut self, at: Binding) -> Result<u16, String>;
    /// Binds the pair at `port` at `at` (a call resumed from Redis).
    fn allocate_at(&mut self, at: Binding, port: u16) -> Result<(), String>;
    /// The pair is free again (its sockets close once no worker holds
    /// them).
    fn release(&mut self, pair: Pair);
    /// What the data plane bears now, for the load limits.
    fn load(&self) -> Load;
    /// Whether worker `w` runs.
    fn worker_alive(&self, w: usize) -> bool;
    /// Every packet the workers handled, live calls or ended, and the
    /// delay histogram (for `statistics`).
    fn media_totals(&self) -> (LegSnapshot, Histogram);
    /// A prompt's audio (`play media`): a file of the operator's media
    /// directory, or the bytes of one, at the rate `rate_for` gives for the
    /// file's own; the error says why not, for the reply.
    fn prompt(&mut self, source: &PromptSource, rate_for: &dyn Fn(u32) -> u32) -> Result<Arc<Prompt>, String>;
}

/// Where a prompt comes from (`play media`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptSource {
    /// `file`: a name in the media directory (or an absolute path inside it).
    File(String),
    /// `blob`/`blob64`: a file's bytes.
    Blob(Vec<u8>),
}

/// What the data plane bears now (sampled over the last second or so).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Load {
    /// Share of the media workers' time spent on packets and commands
    /// rather than waiting for them (0–1, the workers' mean).
    pub busy: f64,
    /// Bytes the workers received per second.
    pub bytes_per_s: u64,
    /// Files left for media sockets under the open-file budget (`None`:
    /// no budget known).
    pub free_files: Option<usize>,
}

/// How a worker builds one SRTP context.
#[derive(Clone, Debug)]
pub struct Keying {
    /// The policy (checked by [`Policy::check`] before it was sent).
    pub policy: Policy,
    /// Where a context kept across a restart stood.
    pub resume: Option<Resume>,
}

impl Keying {
    /// A fresh context of `policy`.
    pub fn new(policy: Policy) -> Keying {
        Keying { policy, resume: None }
    }
}

/// What was kept of a context across a restart (see
/// `srtp::Context::resume`).
#[derive(Clone, Debug, Default)]
pub struct Resume {
    /// Its streams' indices (a sending context's SRTCP indices already
    /// moved past what was kept).
    pub streams: Vec<StreamState>,
    /// Its master keys' use.
    pub key_uses: Vec<(u64, u64)>,
}

/// The negotiated parameters of one leg, for its worker.
pub struct LegSetup {
    /// The endpoint's RTP and RTCP addresses from its SDP (re-learnt from
    /// the first valid packet).
    pub peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// The endpoint multiplexes RTCP on the RTP port (RFC 5761).
    pub rtcp_mux: bool,
    /// Unprotects what the endpoint sends (`None`: kept as it is; inner
    /// `None`: plain RTP).
    pub rx: Option<Option<Keying>>,
    /// Protects what the relay sends to the endpoint (as `rx`).
    pub tx: Option<Option<Keying>>,
    /// A tag of the sending key ([`crate::record::key_tag`]), which
    /// [`Command::Reserve`] names.
    pub tx_key: u64,
    /// The sending context protects only indices reserved by
    /// [`Command::Reserve`] (calls kept across restarts).
    pub reserving: bool,
    /// Accept a new source address after latching (media handover).
    pub handover: bool,
    /// Transcoding of the RTP this leg receives from its endpoint, before it
    /// is protected for the other leg (`None`: kept; inner `None`:
    /// pass-through).
    pub transcode: Option<Option<Box<Transcoder>>>,
    /// The leg speaks ICE and/or DTLS on its port: datagrams that are not
    /// RTP or RTCP go to the control thread.
    pub demux: bool,
    /// Its SRTP keys come from a DTLS handshake that has not finished.
    pub keys_pending: bool,
    /// Bundled (RFC 8843) into the transport of this stream's leg.
    pub bundle: Option<usize>,
    /// The RTP payload types of this leg's m-line.
    pub payload_types: Vec<u8>,
    /// The mid header extension RTP to this leg carries: id and mid.
    pub mid_ext: Option<(u8, Vec<u8>)>,
    /// What each payload type of the leg's SDP carries (`None`: kept).
    pub kinds: Option<Box<srtpgate_codec::payload::PayloadKinds>>,
}

/// The data plane's name for one fork of a subscriber (unique in the
/// table).
pub type ForkKey = u64;

/// What a forked copy needs once the subscriber answered.
pub struct ForkSetup {
    /// Where the copy goes (RTP).
    pub peer: SocketAddr,
    /// Protects the copy (`None`: plain RTP).
    pub tx: Option<Keying>,
    /// The SSRC of the copy (chosen here, not the party's).
    pub ssrc: u32,
    /// RTP clock rate of the party's media, for the timestamps of a copy
    /// whose source restarted.
    pub clock_rate: u32,
}

/// One effect on the data plane. Every command names the worker that
/// carries the call, and a leg by its stream and party.
pub enum Command {
    /// A new media stream: the port pairs [`Resources::allocate`] bound, and
    /// the counters of its two legs.
    AddStream { worker: usize, call: CallKey, stream: usize, ports: [Pair; 2], stats: [Arc<LegStats>; 2] },
    /// The negotiated parameters of one leg.
    Configure { worker: usize, call: CallKey, stream: usize, party: usize, setup: Box<LegSetup> },
    /// Close one stream (its ports were released).
    RemoveStream { worker: usize, call: CallKey, stream: usize },
    /// Close every stream of a call.
    RemoveCall { worker: usize, call: CallKey },
    /// The keys a DTLS handshake agreed for a leg: `rx` unprotects what its
    /// endpoint sends, `tx` protects what the relay sends to it (with
    /// reserved indices only when `reserving`, under key `tx_key`: see
    /// [`LegSetup::tx_key`]).
    Keys {
        worker: usize,
        call: CallKey,
        stream: usize,
        party: usize,
        rx: Box<Keying>,
        tx: Box<Keying>,
        tx_key: u64,
        reserving: bool,
    },
    /// The leg's peer chosen by ICE: media to the leg goes there.
    Latch { worker: usize, call: CallKey, stream: usize, party: usize, peer: SocketAddr },
    /// A datagram to send from a leg's RTP port (STUN answers, DTLS).
    Send { worker: usize, call: CallKey, stream: usize, party: usize, to: SocketAddr, data: Vec<u8> },
    /// Hand the call, with all its state, to worker `to`.
    MoveCall { worker: usize, call: CallKey, to: usize },
    /// Copy what the call's endpoints send, once authenticated, to the
    /// recorder (`on`), or stop: every stream the worker holds of it.
    Record { worker: usize, call: CallKey, on: bool },
    /// A copy of what `party` sends on `stream`, for a subscriber: the port
    /// pair it leaves by ([`Resources::allocate`] bound it) and its
    /// counters. Nothing is copied before [`Command::ConfigureFork`].
    AddFork {
        worker: usize,
        call: CallKey,
        stream: usize,
        party: usize,
        fork: ForkKey,
        port: Pair,
        stats: Arc<LegStats>,
    },
    /// Where a fork's copy goes, under which key and SSRC.
    ConfigureFork { worker: usize, call: CallKey, fork: ForkKey, setup: Box<ForkSetup> },
    /// Stop a fork (its port pair was released).
    RemoveFork { worker: usize, call: CallKey, fork: ForkKey },
    /// Play to the endpoint of `party`'s leg of `stream`: a prompt
    /// (replacing one playing) or a digit. `player` is how (its codec and
    /// numbering) when the leg has no player yet or a prompt starts.
    Play {
        worker: usize,
        call: CallKey,
        stream: usize,
        party: usize,
        player: Box<Player>,
        prompt: Option<PromptPlay>,
        digit: Option<Digit>,
    },
    /// Stop the prompt playing to `party`'s leg of `stream`.
    StopPlay { worker: usize, call: CallKey, stream: usize, party: usize },
    /// Reserve the indices of `ssrc` on a leg's sending context up to these
    /// (inclusive; no SRTP index: none yet), while its sending key is still
    /// `key` ([`LegSetup::tx_key`]). Only sent once Redis holds the
    /// reservation ([`Persist::Fields`](crate::keep::Persist::Fields)).
    Reserve {
        worker: usize,
        call: CallKey,
        stream: usize,
        party: usize,
        key: u64,
        ssrc: u32,
        rtp: Option<u64>,
        rtcp: u32,
    },
}

impl Command {
    /// The worker it goes to.
    pub fn worker(&self) -> usize {
        match self {
            Command::AddStream { worker, .. }
            | Command::Configure { worker, .. }
            | Command::RemoveStream { worker, .. }
            | Command::RemoveCall { worker, .. }
            | Command::Keys { worker, .. }
            | Command::Latch { worker, .. }
            | Command::Send { worker, .. }
            | Command::MoveCall { worker, .. }
            | Command::Record { worker, .. }
            | Command::AddFork { worker, .. }
            | Command::ConfigureFork { worker, .. }
            | Command::RemoveFork { worker, .. }
            | Command::Play { worker, .. }
            | Command::StopPlay { worker, .. }
            | Command::Reserve { worker, .. } => *worker,
        }
    }
}

impl std::fmt::Debug for Command {
    // Keys and transcoders stay out of logs: the variant and its place.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Command::AddStream { call, stream, ports, .. } => write!(f, "AddStream({call}/{stream} {ports:?})"),
            Command::Configure { call, stream, party, .. } => write!(f, "Configure({call}/{stream}/{party})"),
            Command::RemoveStream { call, stream, .. } => write!(f, "RemoveStream({call}/{stream})"),
            Command::RemoveCall { call, .. } => write!(f, "RemoveCall({call})"),
            Command::Keys { call, stream, party, .. } => write!(f, "Keys({call}/{stream}/{party})"),
            Command::Latch { call, stream, party, peer, .. } => write!(f, "Latch({call}/{stream}/{party} {peer})"),
            Command::Send { call, stream, party, data, .. } => {
                write!(f, "Send({call}/{stream}/{party} {} B)", data.len())
            }
            Command::MoveCall { call, worker, to } => write!(f, "MoveCall({call} {worker}->{to})"),
            Command::Record { call, on, .. } => write!(f, "Record({call} {on})"),
            Command::AddFork { call, stream, party, fork, port, .. } => {
                write!(f, "AddFork({call}/{stream}/{party} #{fork} {port:?})")
            }
            Command::ConfigureFork { call, fork, .. } => write!(f, "ConfigureFork({call} #{fork})"),
            Command::RemoveFork { call, fork, .. } => write!(f, "RemoveFork({call} #{fork})"),
            Command::Play { call, stream, party, digit, .. } => {
                write!(f, "Play({call}/{stream}/{party}{})", if digit.is_some() { " digit" } else { "" })
            }
            Command::StopPlay { call, stream, party, .. } => write!(f, "StopPlay({call}/{stream}/{party})"),
            Command::Reserve { call, stream, party, ssrc, .. } => {
                write!(f, "Reserve({call}/{stream}/{party} {ssrc:08x})")
            }
        }
    }
}
