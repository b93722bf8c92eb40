//! NG datagrams (cookie and bencoded body), requests parsed into typed
//! commands, and replies. See the crate documentation for the key and flag
//! policy.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::str::FromStr;

use base64::Engine as _;
use srtp::Suite;
use thiserror::Error;

use crate::bencode::{self, BencodeError, Value};
use crate::MAX_DATAGRAM;

/// The longest cookie accepted (rtpengine's modules send about 20 bytes).
pub const MAX_COOKIE: usize = 64;
/// Untrusted text echoed in errors and warnings is cut to this many characters.
const MAX_ECHO: usize = 64;
/// Nesting limit of bracket lists inside an `rtpp-flags` string.
const MAX_RTPP_DEPTH: usize = 4;
/// Distinct warnings a request keeps; the rest are only counted (a request
/// of thousands of unknown keys would otherwise have a reply larger than
/// itself).
pub const MAX_WARNINGS: usize = 16;

/// Why a datagram or request was refused. `Display` is the text meant for the
/// reply's `error-reason`.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum NgError {
    /// The datagram is longer than [`MAX_DATAGRAM`].
    #[error("datagram of {0} bytes is over the limit of {MAX_DATAGRAM}")]
    TooLarge(usize),
    /// The cookie is missing or malformed.
    #[error("malformed datagram: {0}")]
    BadDatagram(&'static str),
    /// The body is not valid bencode.
    #[error(transparent)]
    Bencode(#[from] BencodeError),
    /// The body (or a reply) is not a dictionary.
    #[error("message is not a dictionary")]
    NotADictionary,
    /// A required key is absent.
    #[error("missing key '{0}'")]
    MissingKey(&'static str),
    /// The `command` is none of those this relay implements.
    #[error("Unrecognized command '{0}'")]
    UnknownCommand(String),
    /// A key's value has the wrong type.
    #[error("key '{key}' must be {expected}")]
    WrongType {
        /// The key as sent.
        key: String,
        /// What it must be, e.g. "a string".
        expected: &'static str,
    },
    /// The same key twice, in two spellings (`to-tag` and `to tag`).
    #[error("duplicate key '{0}'")]
    DuplicateKey(String),
    /// A flag nobody documents.
    #[error("unknown flag '{0}'")]
    UnknownFlag(String),
    /// An unknown item in `replace`, `SDES`, `rtcp-mux`, `OSRTP` or an
    /// unknown `ICE` value.
    #[error("unknown {list} option '{item}'")]
    UnknownOption {
        /// The list: "replace", "SDES", "rtcp-mux", "OSRTP", "ICE".
        list: &'static str,
        /// The item as sent.
        item: String,
    },
    /// A value outside what its key allows.
    #[error("invalid value '{value}' for '{key}'")]
    InvalidValue {
        /// The key.
        key: String,
        /// The value as sent.
        value: String,
    },
    /// A transport protocol this relay does not speak (DTLS-SRTP ones,
    /// `accept`, or anything unknown).
    #[error("unsupported transport-protocol '{0}'")]
    UnsupportedTransport(String),
    /// An SRTP crypto suite name that is unknown or not implemented.
    #[error("unknown crypto suite '{0}'")]
    UnknownSuite(String),
    /// A documented feature this relay refuses (rather than ignores).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A reply without a valid `result`.
    #[error("malformed reply: {0}")]
    BadReply(&'static str),
}

/// The commands this relay implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// `ping`: answered with `{"result":"pong"}`.
    Ping,
    /// `offer`.
    Offer,
    /// `answer`.
    Answer,
    /// `delete`.
    Delete,
    /// `query`.
    Query,
    /// `list`.
    List,
    /// `statistics`.
    Statistics,
    /// `start recording`.
    StartRecording,
    /// `stop recording` (or a pause, with `pause=yes` or the `pause` flag).
    StopRecording,
    /// `pause recording`.
    PauseRecording,
    /// `subscribe request`: a copy of some parties' media for a new
    /// participant (a recorder), offered in the reply's SDP.
    SubscribeRequest,
    /// `subscribe answer`: the subscriber's answer; its copy starts.
    SubscribeAnswer,
    /// `unsubscribe`: the subscriber's copy stops.
    Unsubscribe,
    /// `play media`: a prompt played to a party.
    PlayMedia,
    /// `stop media`: the prompt stops.
    StopMedia,
    /// `play DTMF`: a digit sent as if a party had pressed it.
    PlayDtmf,
    /// `block media`: what a party (or everyone) sends is not relayed.
    BlockMedia,
    /// `unblock media`.
    UnblockMedia,
    /// `silence media`: what a party sends is relayed as silence.
    SilenceMedia,
    /// `unsilence media`.
    UnsilenceMedia,
    /// `block DTMF`: a party's DTMF is not relayed.
    BlockDtmf,
    /// `unblock DTMF`.
    UnblockDtmf,
}

impl Command {
    /// Every command.
    pub const ALL: [Command; 22] = [
        Command::Ping,
        Command::Offer,
        Command::Answer,
        Command::Delete,
        Command::Query,
        Command::List,
        Command::Statistics,
        Command::StartRecording,
        Command::StopRecording,
        Command::PauseRecording,
        Command::SubscribeRequest,
        Command::SubscribeAnswer,
        Command::Unsubscribe,
        Command::PlayMedia,
        Command::StopMedia,
        Command::PlayDtmf,
        Command::BlockMedia,
        Command::UnblockMedia,
        Command::SilenceMedia,
        Command::UnsilenceMedia,
        Command::BlockDtmf,
        Command::UnblockDtmf,
    ];

    /// The wire name.
    pub const fn name(self) -> &'static str {
        match self {
            Command::Ping => "ping",
            Command::Offer => "offer",
            Command::Answer => "answer",
            Command::Delete => "delete",
            Command::Query => "query",
            Command::List => "list",
            Command::Statistics => "statistics",
            Command::StartRecording => "start recording",
            Command::StopRecording => "stop recording",
            Command::PauseRecording => "pause recording",
            Command::SubscribeRequest => "subscribe request",
            Command::SubscribeAnswer => "subscribe answer",
            Command::Unsubscribe => "unsubscribe",
            Command::PlayMedia => "play media",
            Command::StopMedia => "stop media",
            Command::PlayDtmf => "play DTMF",
            Command::BlockMedia => "block media",
            Command::UnblockMedia => "unblock media",
            Command::SilenceMedia => "silence media",
            Command::UnsilenceMedia => "unsilence media",
            Command::BlockDtmf => "block DTMF",
            Command::UnblockDtmf => "unblock DTMF",
        }
    }
}

impl FromStr for Command {
    type Err = NgError;

    /// Case-insensitive, like rtpengine.
    fn from_str(s: &str) -> Result<Command, NgError> {
        Command::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| NgError::UnknownCommand(clip(s)))
    }
}

/// The SDP transport protocols the relay speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransportProtocol {
    /// `RTP/AVP`.
    RtpAvp,
    /// `RTP/SAVP`.
    RtpSavp,
    /// `RTP/AVPF`.
    RtpAvpf,
    /// `RTP/SAVPF`.
    RtpSavpf,
    /// `UDP/TLS/RTP/SAVP`: SRTP keyed by DTLS (RFC 5764).
    UdpTlsRtpSavp,
    /// `UDP/TLS/RTP/SAVPF`: SRTP keyed by DTLS with RTCP feedback (WebRTC).
    UdpTlsRtpSavpf,
}

impl TransportProtocol {
    /// Every protocol.
    pub const ALL: [TransportProtocol; 6] = [
        TransportProtocol::RtpAvp,
        TransportProtocol::RtpSavp,
        TransportProtocol::RtpAvpf,
        TransportProtocol::RtpSavpf,
        TransportProtocol::UdpTlsRtpSavp,
        TransportProtocol::UdpTlsRtpSavpf,
    ];

    /// The SDP name.
    pub const fn name(self) -> &'static str {
        match self {
            TransportProtocol::RtpAvp => "RTP/AVP",
            TransportProtocol::RtpSavp => "RTP/SAVP",
            TransportProtocol::RtpAvpf => "RTP/AVPF",
            TransportProtocol::RtpSavpf => "RTP/SAVPF",
            TransportProtocol::UdpTlsRtpSavp => "UDP/TLS/RTP/SAVP",
            TransportProtocol::UdpTlsRtpSavpf => "UDP/TLS/RTP/SAVPF",
        }
    }

    /// Whether media is SRTP.
    pub const fn is_secure(self) -> bool {
        !matches!(self, TransportProtocol::RtpAvp | TransportProtocol::RtpAvpf)
    }

    /// Whether the SRTP keys come from DTLS.
    pub const fn is_dtls(self) -> bool {
        matches!(self, TransportProtocol::UdpTlsRtpSavp | TransportProtocol::UdpTlsRtpSavpf)
    }

    /// Whether the RTCP feedback profile (AVPF) is used.
    pub const fn is_feedback(self) -> bool {
        matches!(self, TransportProtocol::RtpAvpf | TransportProtocol::RtpSavpf | TransportProtocol::UdpTlsRtpSavpf)
    }
}

impl FromStr for TransportProtocol {
    type Err = NgError;

    /// Case-insensitive; `accept` and unknown names are
    /// [`NgError::UnsupportedTransport`].
    fn from_str(s: &str) -> Result<TransportProtocol, NgError> {
        TransportProtocol::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| NgError::UnsupportedTransport(clip(s)))
    }
}

/// The `replace` list: which parts of the SDP to rewrite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Replace {
    /// `origin`: the address in `o=`.
    pub origin: bool,
    /// `origin-full`: the whole `o=` line.
    pub origin_full: bool,
    /// `session-connection`: the session-level `c=` (always done by current
    /// rtpengine; kept for old modules).
    pub session_connection: bool,
    /// `SDP-version`: manage the `o=` version.
    pub sdp_version: bool,
    /// `username`: keep the `o=` username stable.
    pub username: bool,
    /// `session-name`: keep `s=` stable.
    pub session_name: bool,
    /// `zero-address`: replace `0.0.0.0` with a real address.
    pub zero_address: bool,
    /// `force-increment-sdp-ver`: always increment the `o=` version.
    pub force_increment_sdp_ver: bool,
}

/// The `ICE` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Ice {
    /// `remove`: strip ICE attributes.
    Remove,
    /// `force`: strip, then offer the relay as the only candidate.
    Force,
    /// `default`: like `force` if the SDP had ICE, else nothing.
    Default,
    /// `force-relay`: add the relay as a `relay` candidate.
    ForceRelay,
    /// `optional`: add the relay as a low-priority candidate.
    Optional,
}

/// `record call` in an offer or answer (`record-call` flag: `Yes`;
/// `discard recording` flag: `Discard`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordCall {
    /// `yes`/`on`: start recording the call (a paused recording stays
    /// paused, as in rtpengine: only `start recording` resumes it).
    Yes,
    /// `no`/`off`: stop it, as `stop recording`.
    No,
    /// `discard`: stop it and delete what it wrote.
    Discard,
}

/// The `DTLS` key: the relay's DTLS role towards the endpoint that receives
/// this message's SDP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtls {
    /// `off`, `no`, `disable(d)`: no DTLS-SRTP towards it (SDES or plain).
    Off,
    /// `passive`: the relay waits for the endpoint's ClientHello
    /// (`a=setup:passive`).
    Passive,
    /// `active`: the relay sends the ClientHello (`a=setup:active`).
    Active,
}

/// One item of the `rtcp-mux` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RtcpMux {
    /// `offer`: offer rtcp-mux even if the client did not.
    Offer,
    /// `require`: offer and assume it accepted (implies `offer`).
    Require,
    /// `demux`: accept towards the offerer, do not offer onwards.
    Demux,
    /// `accept`: accept and offer onwards if offered.
    Accept,
    /// `reject`: reject rtcp-mux if offered.
    Reject,
}

/// A `BUNDLE-…` flag (RFC 8843 on ICE/DTLS legs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bundle {
    /// `accept`: answer a BUNDLE group with one transport (the default on
    /// ICE/DTLS legs).
    Accept,
    /// `offer`: offer the m-lines towards an ICE/DTLS answerer as one
    /// BUNDLE group.
    Offer,
    /// `reject`: answer without BUNDLE (each m-line its own transport).
    Reject,
    /// `require`: taken as `offer` (and `accept`).
    Require,
    /// `strict`: taken as `accept`.
    Strict,
}

/// One item of the `SDES` list (or an `SDES-…` flag).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Sdes {
    /// `off`, `no`, `disable`, `disabled`: do not offer SDES.
    Off,
    /// `no-SUITE`: exclude a suite (canonical name).
    No(String),
    /// `only-SUITE`: offer only the listed suites (canonical name).
    Only(String),
    /// `unencrypted_srtp` session parameter.
    UnencryptedSrtp,
    /// `unencrypted_srtcp` session parameter.
    UnencryptedSrtcp,
    /// `unauthenticated_srtp` session parameter.
    UnauthenticatedSrtp,
    /// `encrypted_srtp`: negate `unencrypted_srtp`.
    EncryptedSrtp,
    /// `encrypted_srtcp`: negate `unencrypted_srtcp`.
    EncryptedSrtcp,
    /// `authenticated_srtp`: negate `unauthenticated_srtp`.
    AuthenticatedSrtp,
    /// `lifetime`: add `|2^31` to each key.
    Lifetime,
    /// `pad`: keep base64 padding in keys (also the `pad crypto` flag).
    Pad,
    /// `static`: keep the negotiated suite in re-invites.
    Static,
    /// `prefer` (`priority`): prefer SDES over DTLS.
    Prefer,
    /// `nonew`: add no suites the offer did not have.
    NonNew,
    /// `order:A;B;…`: order of the suites added (canonical names).
    Order(Vec<String>),
    /// `offerer_pref:A;B;…`: suites preferred for the offerer (canonical names).
    OffererPref(Vec<String>),
}

/// One item of the `OSRTP` list (or an `OSRTP-…` flag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Osrtp {
    /// `offer`, `offer-RFC`.
    Offer,
    /// `offer-legacy`.
    OfferLegacy,
    /// `accept-RFC`.
    AcceptRfc,
    /// `accept-legacy`.
    AcceptLegacy,
    /// `accept`: both `accept-RFC` and `accept-legacy`.
    Accept,
}

impl Osrtp {
    /// The item as rtpengine's documentation spells it (`offer-RFC` is
    /// [`Osrtp::Offer`], spelt `offer`).
    pub fn name(self) -> &'static str {
        match self {
            Osrtp::Offer => "offer",
            Osrtp::OfferLegacy => "offer-legacy",
            Osrtp::AcceptRfc => "accept-RFC",
            Osrtp::AcceptLegacy => "accept-legacy",
            Osrtp::Accept => "accept",
        }
    }
}

/// Codec manipulations: the `codec` dictionary and `codec-…` flags, as
/// given (codec specifications such as `opus/48000/2`); the daemon applies
/// them to the SDP and decides where to transcode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CodecOps {
    /// `strip`: codecs to remove.
    pub strip: Vec<String>,
    /// `offer`: codecs to keep, in this order.
    pub offer: Vec<String>,
    /// `except`: codecs exempt from `strip=all`.
    pub except: Vec<String>,
    /// `ignore`: codecs to leave alone.
    pub ignore: Vec<String>,
    /// `transcode`: codecs to add to the offer, transcoded.
    pub transcode: Vec<String>,
    /// `mask`: codecs removed from the offer but still accepted from the offerer (transcoded).
    pub mask: Vec<String>,
    /// `accept`: codecs left in the offer and accepted from the offerer even when the answerer refuses them.
    pub accept: Vec<String>,
    /// `consume`: as `mask`.
    pub consume: Vec<String>,
    /// `set`: parameters (bit rate, fmtp) for codecs the relay encodes.
    pub set: Vec<String>,
}

/// Generic flags (the `flags` list) that a plain SDES relay can act on. See
/// the crate documentation for the names each field answers to and for the
/// flags that are accepted and ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags {
    /// `trust address`: use the SDP addresses.
    pub trust_address: bool,
    /// `SIP source address`: use `received-from` instead of the SDP address.
    pub sip_source_address: bool,
    /// `symmetric`: symmetric RTP (the default).
    pub symmetric: bool,
    /// `asymmetric`: do not learn endpoint addresses.
    pub asymmetric: bool,
    /// `strict source`: drop packets from other sources after learning.
    pub strict_source: bool,
    /// `media handover`: re-learn the endpoint on source change.
    pub media_handover: bool,
    /// `port latching`: keep local ports when the remote port changes.
    pub port_latching: bool,
    /// `no port latching`.
    pub no_port_latching: bool,
    /// `loop protect`: mark the SDP, skip already-marked SDPs.
    pub loop_protect: bool,
    /// `no rtcp attribute`: omit `a=rtcp`.
    pub no_rtcp_attribute: bool,
    /// `full rtcp attribute`: `a=rtcp` with the address.
    pub full_rtcp_attribute: bool,
    /// `generate mid`: add `a=mid`.
    pub generate_mid: bool,
    /// `strip extmap`: remove `a=extmap`.
    pub strip_extmap: bool,
    /// `fragment`: the SDP is a trickle-ICE fragment.
    pub fragment: bool,
    /// `reset`: un-learn endpoint properties.
    pub reset: bool,
    /// `original sendrecv`: keep direction attributes.
    pub original_sendrecv: bool,
    /// `directional` (sent by Kamailio/OpenSIPS with `from-tag=`).
    pub directional: bool,
    /// `unidirectional`.
    pub unidirectional: bool,
    /// `fatal` (delete): errors instead of warnings.
    pub fatal: bool,
    /// `to-tag` (delete): honour the to-tag.
    pub to_tag: bool,
    /// `debug`, `debugging`: debug logging for this call.
    pub debug: bool,
    /// `NAT wait`: send nothing before the first packet arrives.
    pub nat_wait: bool,
    /// `pierce NAT`: send empty packets to open NAT bindings.
    pub pierce_nat: bool,
    /// `reject ICE`, `ICE reject`.
    pub reject_ice: bool,
    /// `trickle ICE`.
    pub trickle_ice: bool,
    /// `single codec`: keep only the first codec in an answer.
    pub single_codec: bool,
    /// `always transcode` (`force transcoding`): transcode to the offerer's
    /// first codec even when the answerer picked one the offerer has.
    pub always_transcode: bool,
    /// `all` (the flag, or the key `all=all`): every party (`subscribe
    /// request`).
    pub all: bool,
    /// `provisional`.
    pub provisional: bool,
    /// `new branch`.
    pub new_branch: bool,
    /// `siprec`: a `subscribe request`'s SDP and reply in SIPREC's form
    /// (`a=label`, `tag-medias`, `media-labels`).
    pub siprec: bool,
    /// `block egress` (`play media`): the other party's media towards the
    /// listener is dropped while the prompt plays (srtpgate always does).
    pub block_egress: bool,
    /// `inject DTMF` (offer, answer): allow `play DTMF` (srtpgate allows it
    /// without).
    pub inject_dtmf: bool,
}

/// The keys of the media-control commands (`play media`, `play DTMF`,
/// `block DTMF`), as given; the call table checks their values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediaKeys {
    /// `file`: a prompt file.
    pub file: Option<String>,
    /// `blob` (or `blob64`, decoded): a prompt file's bytes.
    pub blob: Option<Vec<u8>>,
    /// `db-id`: a prompt in rtpengine's database.
    pub db_id: Option<i64>,
    /// `repeat-times`: how many times the prompt plays.
    pub repeat_times: Option<i64>,
    /// `repeat-duration`: ms the prompt plays for at least (repeated).
    pub repeat_duration: Option<i64>,
    /// `start-pos`: the first sample (at the file's rate) played.
    pub start_pos: Option<i64>,
    /// `code` (`digit`): a DTMF digit, as sent (`5`, `#`, `11`).
    pub code: Option<String>,
    /// `duration`: ms of a played DTMF digit.
    pub duration: Option<i64>,
    /// `volume`: dB (below the loudest) of a played DTMF digit.
    pub volume: Option<i64>,
    /// `pause` as a number: ms between played DTMF digits.
    pub pause: Option<i64>,
    /// `address`: selects the party whose SDP has this address.
    pub address: Option<String>,
    /// `DTMF-security`: how `block DTMF` blocks.
    pub dtmf_security: Option<String>,
}

/// A parsed NG request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The command.
    pub command: Command,
    /// `call-id`.
    pub call_id: Option<String>,
    /// `from-tag`.
    pub from_tag: Option<String>,
    /// `to-tag`.
    pub to_tag: Option<String>,
    /// `via-branch`.
    pub via_branch: Option<String>,
    /// `sdp`.
    pub sdp: Option<String>,
    /// `transport-protocol`, or an `RTP/…` flag.
    pub transport_protocol: Option<TransportProtocol>,
    /// `replace` and `replace-…` flags.
    pub replace: Replace,
    /// `direction`, or `from-interface`/`to-interface` (a missing side is
    /// ""): the logical interfaces of the sender of this message and of its
    /// receiver. In `rtpp-flags`, `direction=X` (and a bare `internal` or
    /// `external`) names the first side, a second one the other side, as
    /// rtpengine parses them.
    pub direction: Option<(String, String)>,
    /// `ICE`.
    pub ice: Option<Ice>,
    /// `rtcp-mux` and `rtcp-mux-…` flags, in order.
    pub rtcp_mux: Vec<RtcpMux>,
    /// `BUNDLE-…` flags, in order.
    pub bundle: Vec<Bundle>,
    /// `SDES` and `SDES-…` flags (and `pad crypto`), in order.
    pub sdes: Vec<Sdes>,
    /// `OSRTP` and `OSRTP-…` flags, in order.
    pub osrtp: Vec<Osrtp>,
    /// `record call` (or the `record call` flag; `discard recording` flag:
    /// [`RecordCall::Discard`]).
    pub record_call: Option<RecordCall>,
    /// `metadata`: text kept with the call's recording.
    pub metadata: Option<String>,
    /// `recording-file` (`output-destination`, …): where the recording
    /// goes, below the recording directory.
    pub recording_file: Option<String>,
    /// `recording-path` (`recording-dir`, `output-path`, …): a directory
    /// below the recording directory for the recording's files.
    pub recording_path: Option<String>,
    /// `recording-pattern` (`output-pattern`): the file name pattern.
    pub recording_pattern: Option<String>,
    /// `pause` = `yes`/`on`/`true`, or the `pause` flag: `stop recording`
    /// pauses instead.
    pub pause: bool,
    /// `received-from`: (`IP4`|`IP6`, address).
    pub received_from: Option<(String, String)>,
    /// `media-address` (a valid IP address).
    pub media_address: Option<String>,
    /// `address family`: `IP4` or `IP6`.
    pub address_family: Option<String>,
    /// `delete-delay` (seconds).
    pub delete_delay: Option<i64>,
    /// `ptime`: packet time (ms) of what the relay sends to the receiver of
    /// this message.
    pub ptime: Option<u32>,
    /// `ptime-reverse`: packet time (ms) of what the relay sends to the
    /// sender of this message.
    pub ptime_reverse: Option<u32>,
    /// `label` / `from-label`.
    pub label: Option<String>,
    /// `set-label` (or `to-label`): the label of the participant a
    /// `subscribe request` creates.
    pub set_label: Option<String>,
    /// `from-tags` (and `from-tags-…` flags): the parties a `subscribe
    /// request` copies.
    pub from_tags: Vec<String>,
    /// Keys of the media-control commands.
    pub media: MediaKeys,
    /// `limit` (list).
    pub limit: Option<i64>,
    /// `offset` (list; an srtpgate extension for paging).
    pub offset: Option<i64>,
    /// `DTLS` is `off`/`no`/`disable`.
    pub dtls_off: bool,
    /// `DTLS`: `passive` or `active` (`off` is [`Request::dtls_off`] too).
    pub dtls: Option<Dtls>,
    /// `DTLS-reverse`: the relay's role towards the sender of this message
    /// (`passive` or `active`; `off` is taken as no preference).
    pub dtls_reverse: Option<Dtls>,
    /// `supports` contains `load limit`.
    pub supports_load_limit: bool,
    /// `codec` and `codec-…` flags.
    pub codec: CodecOps,
    /// Generic flags.
    pub flags: Flags,
    /// Accepted but ignored things, one sentence each, no duplicates, at
    /// most [`MAX_WARNINGS`].
    pub warnings: Vec<String>,
    /// Warnings past [`MAX_WARNINGS`], counted only.
    pub warnings_left_out: usize,
    /// The keys behind the parser's warnings about keys, each once: the
    /// normalized name of a key srtpgate knows and ignores (`tos`,
    /// `record-call`, `supports` for a feature it lacks, `codec` for an
    /// unknown operation, `direction` for a third `direction=` in
    /// `rtpp-flags`), `other` for a key it does not know. A bounded set of
    /// names, for counting.
    pub ignored_keys: Vec<&'static str>,
    /// The whole request dictionary.
    pub raw: Value,
}

impl Drop for Request {
    fn drop(&mut self) {
        // The SDP of an offer or answer carries SDES keys (`inline:`); the
        // raw dictionary's copy wipes itself (see `Value`).
        if let Some(sdp) = &mut self.sdp {
            zeroize::Zeroize::zeroize(sdp);
        }
    }
}

impl Request {
    fn new(command: Command, raw: Value) -> Request {
        Request {
            command,
            call_id: None,
            from_tag: None,
            to_tag: None,
            via_branch: None,
            sdp: None,
            transport_protocol: None,
            replace: Replace::default(),
            direction: None,
            ice: None,
            rtcp_mux: Vec::new(),
            bundle: Vec::new(),
            sdes: Vec::new(),
            osrtp: Vec::new(),
            record_call: None,
            metadata: None,
            recording_file: None,
            recording_path: None,
            recording_pattern: None,
            pause: false,
            received_from: None,
            media_address: None,
            address_family: None,
            delete_delay: None,
            ptime: None,
            ptime_reverse: None,
            label: None,
            set_label: None,
            from_tags: Vec::new(),
            media: MediaKeys::default(),
            limit: None,
            offset: None,
            dtls_off: false,
            dtls: None,
            dtls_reverse: None,
            supports_load_limit: false,
            codec: CodecOps::default(),
            flags: Flags::default(),
            warnings: Vec::new(),
            warnings_left_out: 0,
            ignored_keys: Vec::new(),
            raw,
        }
    }

    /// The warnings joined for the reply's `warning` key, `None` if none.
    pub fn warning(&self) -> Option<String> {
        warning_text(&self.warnings, self.warnings_left_out)
    }

    /// Notes a key the parser accepts and ignores (its warning is given
    /// separately).
    fn ignore_key(&mut self, key: &'static str) {
        if !self.ignored_keys.contains(&key) {
            self.ignored_keys.push(key);
        }
    }

    fn warn(&mut self, w: String) {
        if self.warnings.contains(&w) {
            return;
        }
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings.push(w);
        } else {
            self.warnings_left_out += 1;
        }
    }
}

/// The longest `warning` text of a reply, in bytes.
pub const MAX_WARNING_TEXT: usize = 2048;

/// Warnings joined for a reply's `warning` key: at most [`MAX_WARNINGS`] of
/// them and [`MAX_WARNING_TEXT`] bytes, then a count of those left out
/// (`left_out` more were left out before). `None` when there are none.
pub fn warning_text(warnings: &[String], left_out: usize) -> Option<String> {
    if warnings.is_empty() && left_out == 0 {
        return None;
    }
    let mut text = String::new();
    let mut shown = 0;
    for w in warnings.iter().take(MAX_WARNINGS) {
        if text.len() + w.len() + 2 > MAX_WARNING_TEXT - 48 {
            break;
        }
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(w);
        shown += 1;
    }
    let more = left_out + warnings.len() - shown;
    if more > 0 {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!("and {more} more warnings"));
    }
    Some(text)
}

/// Whether two values of one key say the same (an integer and its decimal
/// string agree).
fn agree(a: &Value, b: &Value) -> bool {
    a == b || matches!((a.as_int(), b.as_int()), (Some(x), Some(y)) if x == y)
}

/// Splits a datagram into (cookie, body).
pub fn split(datagram: &[u8]) -> Result<(&[u8], &[u8]), NgError> {
    if datagram.len() > MAX_DATAGRAM {
        return Err(NgError::TooLarge(datagram.len()));
    }
    let space = datagram.iter().position(|&b| b == b' ').ok_or(NgError::BadDatagram("no space after the cookie"))?;
    let (cookie, rest) = datagram.split_at(space);
    if cookie.is_empty() {
        return Err(NgError::BadDatagram("empty cookie"));
    }
    if cookie.len() > MAX_COOKIE {
        return Err(NgError::BadDatagram("cookie longer than 64 bytes"));
    }
    if !cookie.iter().all(|b| b.is_ascii_graphic()) {
        return Err(NgError::BadDatagram("cookie with a non-printable byte"));
    }
    Ok((cookie, rest.get(1..).unwrap_or_default()))
}

/// A reply datagram: `cookie`, a space, `body` bencoded. The vector is
/// allocated at its final length and never grows, so no freed block keeps
/// part of it (an offer's reply carries SDES keys); the caller wipes it.
pub fn reply(cookie: &[u8], body: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(cookie.len() + 1 + body.encoded_len());
    out.extend_from_slice(cookie);
    out.push(b' ');
    body.encode(&mut out);
    out
}

/// A request datagram (for clients).
pub fn request(cookie: &str, body: &Value) -> Vec<u8> {
    reply(cookie.as_bytes(), body)
}

/// `{"result":"ok"}`.
pub fn ok() -> Value {
    Value::dict().with("result", "ok")
}

/// `{"result":"error","error-reason":reason}`.
pub fn error(reason: &str) -> Value {
    Value::dict().with("result", "error").with("error-reason", reason)
}

/// Parses a reply datagram (for clients): the cookie and the dictionary,
/// which must hold a string `result`.
pub fn parse_reply(datagram: &[u8]) -> Result<(Vec<u8>, Value), NgError> {
    let (cookie, body) = split(datagram)?;
    let v = bencode::decode(body)?;
    if !matches!(v, Value::Dict(_)) {
        return Err(NgError::NotADictionary);
    }
    if v.get("result").and_then(Value::as_str).is_none() {
        return Err(NgError::BadReply("no string 'result'"));
    }
    Ok((cookie.to_vec(), v))
}

/// Parses a request body (the bytes after the cookie).
pub fn parse_request(body: &[u8]) -> Result<Request, NgError> {
    if body.len() > MAX_DATAGRAM {
        return Err(NgError::TooLarge(body.len()));
    }
    if body.first() == Some(&b'{') {
        return Err(NgError::Unsupported("JSON-encoded messages (send bencode)".into()));
    }
    let raw = bencode::decode(body)?;
    let Value::Dict(entries) = &raw else {
        return Err(NgError::NotADictionary);
    };
    // Keys are processed in sorted order, so the result does not depend on
    // the order they were sent in.
    let mut sorted: Vec<(&[u8], &Value)> = entries.iter().map(|(k, v)| (k.as_slice(), v)).collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));

    // Two spellings of one key (Kamailio 5.6 sends both `delete delay` = 0
    // and `delete-delay` = "0") are accepted when they agree; the first in
    // sorted order is used.
    let mut seen: HashMap<String, &Value> = HashMap::new();
    let mut skip: HashSet<&[u8]> = HashSet::new();
    let mut command = None;
    for (k, v) in &sorted {
        let Ok(name) = std::str::from_utf8(k) else { continue };
        let norm = normalize(name);
        if let Some(first) = seen.get(&norm) {
            if !agree(first, v) {
                return Err(NgError::DuplicateKey(clip(name)));
            }
            skip.insert(k);
            continue;
        }
        seen.insert(norm.clone(), v);
        if norm == "command" {
            let s = v.as_str().ok_or_else(|| wrong(name, "a string"))?;
            command = Some(s.parse::<Command>()?);
        }
    }
    let command = command.ok_or(NgError::MissingKey("command"))?;

    let mut req = Request::new(command, Value::Dict(Vec::new()));
    for (k, v) in sorted.iter().filter(|(k, _)| !skip.contains(k)) {
        match std::str::from_utf8(k) {
            Ok(name) => apply_key(&mut req, name, v, false)?,
            Err(_) => {
                req.ignore_key("other");
                req.warn(format!("unknown key '{}' ignored", clip(&String::from_utf8_lossy(k))));
            }
        }
    }
    req.raw = raw;

    let needs: &[&'static str] = match command {
        Command::Offer => &["call-id", "from-tag", "sdp"],
        Command::Answer => &["call-id", "from-tag", "to-tag", "sdp"],
        Command::Delete
        | Command::Query
        | Command::StartRecording
        | Command::StopRecording
        | Command::PauseRecording
        | Command::SubscribeRequest
        | Command::PlayMedia
        | Command::StopMedia
        | Command::PlayDtmf
        | Command::BlockMedia
        | Command::UnblockMedia
        | Command::SilenceMedia
        | Command::UnsilenceMedia
        | Command::BlockDtmf
        | Command::UnblockDtmf => &["call-id"],
        Command::SubscribeAnswer => &["call-id", "to-tag", "sdp"],
        Command::Unsubscribe => &["call-id", "to-tag"],
        Command::Ping | Command::List | Command::Statistics => &[],
    };
    for &key in needs {
        let present = match key {
            "call-id" => req.call_id.is_some(),
            "from-tag" => req.from_tag.is_some(),
            "to-tag" => req.to_tag.is_some(),
            _ => req.sdp.is_some(),
        };
        if !present {
            return Err(NgError::MissingKey(key));
        }
    }
    Ok(req)
}

/// Lower case, with ` ` and `_` as `-`: the spellings rtpengine treats as
/// one. Keeps the byte length, so a suffix can be cut from the original.
fn normalize(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Cuts untrusted text for errors and warnings.
fn clip(s: &str) -> String {
    s.chars().take(MAX_ECHO).collect()
}

fn wrong(key: &str, expected: &'static str) -> NgError {
    NgError::WrongType { key: clip(key), expected }
}

fn invalid(key: &str, value: &str) -> NgError {
    NgError::InvalidValue { key: clip(key), value: clip(value) }
}

fn string(key: &str, v: &Value) -> Result<String, NgError> {
    v.as_str().map(str::to_owned).ok_or_else(|| wrong(key, "a UTF-8 string"))
}

fn int(key: &str, v: &Value) -> Result<i64, NgError> {
    v.as_int().ok_or_else(|| wrong(key, "an integer"))
}

/// A list of strings, or one string of comma-separated items (as rtpengine
/// accepts); empty items are skipped.
fn strings(key: &str, v: &Value) -> Result<Vec<String>, NgError> {
    match v {
        Value::List(items) => {
            items.iter().map(|i| i.as_str().map(str::to_owned).ok_or_else(|| wrong(key, "a list of strings"))).collect()
        }
        Value::Bytes(_) => {
            let s = v.as_str().ok_or_else(|| wrong(key, "a list of strings"))?;
            Ok(s.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
        }
        _ => Err(wrong(key, "a list of strings")),
    }
}

/// Top-level keys known to rtpengine that srtpgate accepts and ignores,
/// normalized ([`normalize`]).
const IGNORED_KEYS: &[&str] = &[
    "alias-key",
    "audio-player",
    "player",
    "bundle",
    "delay-buffer",
    "drop-traffic",
    "dtls-fingerprint",
    "dtmf-delay",
    "dtmf-log-dest",
    "dtmf-log-destination",
    "dtmf-security-trigger",
    "dtmf-security-trigger-end",
    "endpoint-learning",
    "extmap",
    "frequency",
    "frequencies",
    "generate-rtcp",
    "ice-lite",
    "inbound-peer",
    "outbound-peer",
    "interface",
    "peer",
    "media",
    "medias",
    "media-echo",
    "moh",
    "recording-media-slot-offer",
    "recording-media-slot-answer",
    "recording-media-slots",
    "passthrough",
    "passthru",
    "repacketize",
    "sdp-attr",
    "sdp-media-remove",
    "t38",
    "t.38",
    "t38-version",
    "t.38-version",
    "template",
    "to-call-id",
    "tos",
    "trigger",
    "trigger-end",
    "end-trigger",
    "trigger-end-time",
    "end-trigger-time",
    "trigger-end-digits",
    "end-trigger-digits",
    "vsc-pause-rec",
    "vsc-pause-recording",
    "vsc-pause-resume-rec",
    "vsc-pause-resume-recording",
    "vsc-start-pause-resume-rec",
    "vsc-start-pause-resume-recording",
    "vsc-start-rec",
    "vsc-start-recording",
    "vsc-stop-rec",
    "vsc-stop-recording",
    "xmlrpc-callback",
];

/// Top-level keys that only inform (no effect on a relay): accepted silently.
const SILENT_KEYS: &[&str] =
    &["sip-message-type", "sip-code", "sip-response-code", "instance", "received-from-port", "call-id-hash"];

fn apply_key(req: &mut Request, name: &str, v: &Value, nested: bool) -> Result<(), NgError> {
    let key = normalize(name);
    match key.as_str() {
        "command" => {}
        "call-id" => req.call_id = Some(string(name, v)?),
        "from-tag" => req.from_tag = Some(string(name, v)?),
        "to-tag" => req.to_tag = Some(string(name, v)?),
        "via-branch" => req.via_branch = Some(string(name, v)?),
        "sdp" => req.sdp = Some(string(name, v)?),
        "label" | "from-label" => req.label = Some(string(name, v)?),
        "set-label" | "to-label" => req.set_label = Some(string(name, v)?),
        "from-tags" => req.from_tags.extend(strings(name, v)?),
        "file" => req.media.file = Some(string(name, v)?),
        "blob" => req.media.blob = Some(v.as_bytes().ok_or_else(|| wrong(name, "a byte string"))?.to_vec()),
        "blob64" => {
            let text = v.as_bytes().ok_or_else(|| wrong(name, "a base64 string"))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text.trim_ascii())
                .map_err(|_| invalid(name, "not base64"))?;
            // `blob` wins when both are given, as in rtpengine.
            req.media.blob.get_or_insert(bytes);
        }
        "db-id" => req.media.db_id = Some(int(name, v)?),
        "repeat-times" => req.media.repeat_times = Some(int(name, v)?),
        "repeat-duration" => req.media.repeat_duration = Some(int(name, v)?),
        "start-pos" => req.media.start_pos = Some(int(name, v)?),
        "code" | "digit" => {
            req.media.code = Some(match v.as_int() {
                // A one-character string is a digit (`5`, `#`), as rtpengine reads it.
                Some(n) if v.as_str().is_none_or(|s| s.len() > 1) => n.to_string(),
                _ => string(name, v)?,
            })
        }
        "duration" => req.media.duration = Some(int(name, v)?),
        "volume" => req.media.volume = Some(int(name, v)?),
        "address" => req.media.address = Some(string(name, v)?),
        "dtmf-security" => req.media.dtmf_security = Some(string(name, v)?),
        "all" => match normalize(&string(name, v)?).as_str() {
            "all" | "offer-answer" => req.flags.all = true,
            "none" => {}
            other => {
                req.ignore_key("all");
                req.warn(format!("all={} ignored: srtpgate knows 'all', 'offer-answer' and 'none'", clip(other)));
            }
        },
        "transport-protocol" => req.transport_protocol = Some(string(name, v)?.parse()?),
        "media-address" => {
            let s = string(name, v)?;
            if s.parse::<IpAddr>().is_err() {
                return Err(invalid(name, &s));
            }
            req.media_address = Some(s);
        }
        "address-family" => {
            let s = string(name, v)?;
            let family = ip_family(&s).ok_or_else(|| invalid(name, &s))?;
            req.address_family = Some(family.to_owned());
        }
        "received-from" => req.received_from = Some(received_from(name, v)?),
        "delete-delay" => req.delete_delay = Some(int(name, v)?),
        "ptime" | "ptime-reverse" | "reverse-ptime" => {
            // Kamailio's module sends `ptime=20` as text; `as_int` reads both.
            let n = int(name, v)?;
            // RFC 4566 ptime is milliseconds; 0 or above a second is no packet time.
            let ms = u32::try_from(n)
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| invalid(name, &n.to_string()))?;
            if key == "ptime" {
                req.ptime = Some(ms);
            } else {
                req.ptime_reverse = Some(ms);
            }
        }
        "limit" => {
            let n = int(name, v)?;
            if n <= 0 {
                return Err(invalid(name, &n.to_string()));
            }
            req.limit = Some(n);
        }
        "offset" => {
            let n = int(name, v)?;
            if n < 0 {
                return Err(invalid(name, &n.to_string()));
            }
            req.offset = Some(n);
        }
        "direction" => {
            // rtpengine takes one name as the first side's alone (Kamailio
            // sends one when a script has a single `direction=`).
            let mut list = strings(name, v)?.into_iter();
            match (list.next(), list.next(), list.next()) {
                (None, ..) => {}
                (Some(a), b, None) => req.direction = Some((a, b.unwrap_or_default())),
                _ => return Err(wrong(name, "a list of one or two interface names")),
            }
        }
        "from-interface" => req.direction.get_or_insert_with(Default::default).0 = string(name, v)?,
        "to-interface" => req.direction.get_or_insert_with(Default::default).1 = string(name, v)?,
        "ice" => req.ice = Some(ice(&string(name, v)?)?),
        "replace" => {
            for item in strings(name, v)? {
                replace(&mut req.replace, &item)?;
            }
        }
        "rtcp-mux" => {
            for item in strings(name, v)? {
                req.rtcp_mux.push(rtcp_mux(&item)?);
            }
        }
        "sdes" => {
            for item in strings(name, v)? {
                sdes(req, &item)?;
            }
        }
        "osrtp" => {
            for item in strings(name, v)? {
                req.osrtp.push(osrtp(&item)?);
            }
        }
        "flags" => {
            for item in strings(name, v)? {
                apply_flag(req, &item)?;
            }
        }
        "record-call" => {
            let s = string(name, v)?;
            match normalize(&s).as_str() {
                "yes" | "on" => req.record_call = Some(RecordCall::Yes),
                "no" | "off" => req.record_call = Some(RecordCall::No),
                "discard" => req.record_call = Some(RecordCall::Discard),
                // rtpengine logs and goes on.
                _ => req.warn(format!("record-call '{}' ignored: not yes, on, no, off or discard", clip(&s))),
            }
        }
        "metadata" => req.metadata = Some(string(name, v)?),
        "recording-file"
        | "recording-destination"
        | "recording-dest"
        | "output-destination"
        | "output-dest"
        | "output-file" => req.recording_file = Some(string(name, v)?),
        "recording-path"
        | "recording-dir"
        | "recording-directory"
        | "recording-folder"
        | "output-path"
        | "output-dir"
        | "output-directory"
        | "output-folder" => req.recording_path = Some(string(name, v)?),
        "recording-pattern" | "output-pattern" => req.recording_pattern = Some(string(name, v)?),
        // `stop recording` compares the value as it is (anything else is no
        // pause); `play DTMF` takes ms between digits.
        "pause" => match v.as_int() {
            Some(ms) => req.media.pause = Some(ms),
            None => req.pause = matches!(string(name, v)?.as_str(), "yes" | "on" | "true"),
        },
        "dtls-reverse" => {
            let s = string(name, v)?;
            req.dtls_reverse = match normalize(&s).as_str() {
                "off" | "no" | "disable" | "disabled" => None,
                "passive" => Some(Dtls::Passive),
                "active" => Some(Dtls::Active),
                _ => return Err(invalid(name, &s)),
            };
        }
        "dtls" => {
            let s = string(name, v)?;
            match normalize(&s).as_str() {
                "off" | "no" | "disable" | "disabled" => {
                    req.dtls_off = true;
                    req.dtls = Some(Dtls::Off);
                }
                "passive" => req.dtls = Some(Dtls::Passive),
                "active" => req.dtls = Some(Dtls::Active),
                _ => return Err(invalid(name, &s)),
            }
        }
        "supports" => {
            for item in strings(name, v)? {
                // Spelt as every other keyword: case, ` `, `-`, `_` alike.
                if normalize(&item) == "load-limit" {
                    req.supports_load_limit = true;
                } else {
                    req.ignore_key("supports");
                    req.warn(format!("optional feature '{}' not supported", clip(&item)));
                }
            }
        }
        "codec" => {
            let Value::Dict(entries) = v else {
                return Err(wrong(name, "a dictionary"));
            };
            let mut sorted: Vec<&(Vec<u8>, Value)> = entries.iter().collect();
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            for (op, list) in sorted {
                let op = String::from_utf8_lossy(op);
                let items = strings(&op, list)?;
                for item in items {
                    codec_op(req, &op, &item);
                }
            }
        }
        "rtpp-flags" => {
            if nested {
                return Err(NgError::Unsupported("'rtpp-flags' inside 'rtpp-flags'".into()));
            }
            rtpp_flags(req, &string(name, v)?)?;
        }
        k if SILENT_KEYS.contains(&k) => {}
        k => match IGNORED_KEYS.iter().find(|&&i| i == k) {
            Some(&known) => {
                req.ignore_key(known);
                req.warn(format!("key '{}' ignored: not supported by srtpgate", clip(name)));
            }
            None => {
                req.ignore_key("other");
                req.warn(format!("unknown key '{}' ignored", clip(name)));
            }
        },
    }
    Ok(())
}

fn ip_family(s: &str) -> Option<&'static str> {
    if s.eq_ignore_ascii_case("IP4") {
        Some("IP4")
    } else if s.eq_ignore_ascii_case("IP6") {
        Some("IP6")
    } else {
        None
    }
}

fn received_from(name: &str, v: &Value) -> Result<(String, String), NgError> {
    let (family, addr) = match v {
        Value::List(items) => match items.as_slice() {
            [f, a] => (Some(string(name, f)?), string(name, a)?),
            _ => return Err(wrong(name, "a list of an address family and an address")),
        },
        _ => (None, string(name, v)?),
    };
    let ip: IpAddr = addr.parse().map_err(|_| invalid(name, &addr))?;
    let actual = if ip.is_ipv4() { "IP4" } else { "IP6" };
    if let Some(f) = family {
        if ip_family(&f) != Some(actual) {
            return Err(invalid(name, &f));
        }
    }
    Ok((actual.to_owned(), addr))
}

fn ice(s: &str) -> Result<Ice, NgError> {
    Ok(match normalize(s).as_str() {
        "remove" => Ice::Remove,
        "force" => Ice::Force,
        "default" => Ice::Default,
        "force-relay" => Ice::ForceRelay,
        "optional" => Ice::Optional,
        _ => return Err(NgError::UnknownOption { list: "ICE", item: clip(s) }),
    })
}

fn replace(r: &mut Replace, s: &str) -> Result<(), NgError> {
    match normalize(s).as_str() {
        "origin" => r.origin = true,
        "origin-full" => r.origin_full = true,
        "session-connection" => r.session_connection = true,
        "sdp-version" => r.sdp_version = true,
        "username" => r.username = true,
        "session-name" => r.session_name = true,
        "zero-address" => r.zero_address = true,
        "force-increment-sdp-ver" => r.force_increment_sdp_ver = true,
        _ => return Err(NgError::UnknownOption { list: "replace", item: clip(s) }),
    }
    Ok(())
}

fn rtcp_mux(s: &str) -> Result<RtcpMux, NgError> {
    Ok(match normalize(s).as_str() {
        "offer" => RtcpMux::Offer,
        "require" => RtcpMux::Require,
        "demux" => RtcpMux::Demux,
        "accept" => RtcpMux::Accept,
        "reject" => RtcpMux::Reject,
        _ => return Err(NgError::UnknownOption { list: "rtcp-mux", item: clip(s) }),
    })
}

fn osrtp(s: &str) -> Result<Osrtp, NgError> {
    Ok(match normalize(s).as_str() {
        "offer" | "offer-rfc" => Osrtp::Offer,
        "offer-legacy" => Osrtp::OfferLegacy,
        "accept-rfc" => Osrtp::AcceptRfc,
        "accept-legacy" => Osrtp::AcceptLegacy,
        "accept" => Osrtp::Accept,
        _ => return Err(NgError::UnknownOption { list: "OSRTP", item: clip(s) }),
    })
}

/// rtpengine knows this suite, srtpgate does not implement it.
const UNIMPLEMENTED_SUITES: &[&str] = &["F8_128_HMAC_SHA1_32"];

/// The canonical name of a suite. With `known_ok`, a suite rtpengine knows
/// but srtpgate does not implement is accepted (excluding it is harmless).
fn suite_name(s: &str, known_ok: bool) -> Result<String, NgError> {
    match Suite::from_str(s) {
        Ok(suite) => Ok(suite.name().to_owned()),
        Err(_) => match UNIMPLEMENTED_SUITES.iter().find(|n| n.eq_ignore_ascii_case(s)) {
            Some(n) if known_ok => Ok((*n).to_owned()),
            _ => Err(NgError::UnknownSuite(clip(s))),
        },
    }
}

/// `order:`/`offerer_pref:` lists: `;`-separated suites; unknown ones are
/// dropped with a warning (rtpengine's own example carries a truncated name).
fn suite_list(req: &mut Request, list: &str) -> Vec<String> {
    let mut out = Vec::new();
    for name in list.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        match suite_name(name, true) {
            Ok(n) => out.push(n),
            Err(_) => req.warn(format!("unknown crypto suite '{}' ignored in SDES list", clip(name))),
        }
    }
    out
}

/// Cuts `prefix` (normalized, ASCII) off `s` if `normalize(s)` starts with
/// it, returning the rest of the original.
fn strip_prefix_norm<'a>(s: &'a str, norm: &str, prefix: &str) -> Option<&'a str> {
    if norm.starts_with(prefix) {
        s.get(prefix.len()..)
    } else {
        None
    }
}

fn sdes(req: &mut Request, s: &str) -> Result<(), NgError> {
    let norm = normalize(s);
    let item = match norm.as_str() {
        "off" | "no" | "disable" | "disabled" => Sdes::Off,
        "unencrypted-srtp" => Sdes::UnencryptedSrtp,
        "unencrypted-srtcp" => Sdes::UnencryptedSrtcp,
        "unauthenticated-srtp" => Sdes::UnauthenticatedSrtp,
        "encrypted-srtp" => Sdes::EncryptedSrtp,
        "encrypted-srtcp" => Sdes::EncryptedSrtcp,
        "authenticated-srtp" => Sdes::AuthenticatedSrtp,
        "lifetime" => Sdes::Lifetime,
        "pad" => Sdes::Pad,
        "static" => Sdes::Static,
        "prefer" | "priority" => Sdes::Prefer,
        "nonew" => Sdes::NonNew,
        _ => {
            if let Some(suite) = strip_prefix_norm(s, &norm, "no-") {
                Sdes::No(suite_name(suite, true)?)
            } else if let Some(suite) = strip_prefix_norm(s, &norm, "only-") {
                Sdes::Only(suite_name(suite, false)?)
            } else if let Some(list) = strip_prefix_norm(s, &norm, "order:") {
                Sdes::Order(suite_list(req, list))
            } else if let Some(list) = strip_prefix_norm(s, &norm, "offerer-pref:") {
                Sdes::OffererPref(suite_list(req, list))
            } else {
                return Err(NgError::UnknownOption { list: "SDES", item: clip(s) });
            }
        }
    };
    req.sdes.push(item);
    Ok(())
}

fn codec_op(req: &mut Request, op: &str, item: &str) {
    let c = &mut req.codec;
    let list = match normalize(op).as_str() {
        "strip" => &mut c.strip,
        "offer" => &mut c.offer,
        "except" => &mut c.except,
        "ignore" => &mut c.ignore,
        "transcode" => &mut c.transcode,
        "mask" => &mut c.mask,
        "accept" => &mut c.accept,
        "consume" => &mut c.consume,
        "set" => &mut c.set,
        _ => {
            req.ignore_key("codec");
            req.warn(format!("unknown codec operation '{}' ignored", clip(op)));
            return;
        }
    };
    list.push(item.to_owned());
}

/// Sets the [`Flags`] field a generic flag names (normalized); false if none.
fn set_flag(f: &mut Flags, norm: &str) -> bool {
    let field = match norm {
        "trust-address" => &mut f.trust_address,
        "sip-source-address" => &mut f.sip_source_address,
        "symmetric" => &mut f.symmetric,
        "asymmetric" => &mut f.asymmetric,
        "strict-source" => &mut f.strict_source,
        "media-handover" => &mut f.media_handover,
        "port-latching" => &mut f.port_latching,
        "no-port-latching" => &mut f.no_port_latching,
        "loop-protect" => &mut f.loop_protect,
        "no-rtcp-attribute" => &mut f.no_rtcp_attribute,
        "full-rtcp-attribute" => &mut f.full_rtcp_attribute,
        "generate-mid" => &mut f.generate_mid,
        "strip-extmap" => &mut f.strip_extmap,
        "fragment" => &mut f.fragment,
        "reset" => &mut f.reset,
        "original-sendrecv" => &mut f.original_sendrecv,
        "directional" => &mut f.directional,
        "unidirectional" => &mut f.unidirectional,
        "fatal" => &mut f.fatal,
        "to-tag" => &mut f.to_tag,
        "debug" | "debugging" => &mut f.debug,
        "nat-wait" => &mut f.nat_wait,
        "pierce-nat" => &mut f.pierce_nat,
        "reject-ice" | "ice-reject" => &mut f.reject_ice,
        "trickle-ice" => &mut f.trickle_ice,
        "single-codec" => &mut f.single_codec,
        "always-transcode" | "force-transcoding" | "always-transcoding" => &mut f.always_transcode,
        "all" => &mut f.all,
        "provisional" => &mut f.provisional,
        "new-branch" => &mut f.new_branch,
        "siprec" => &mut f.siprec,
        "block-egress" => &mut f.block_egress,
        "inject-dtmf" => &mut f.inject_dtmf,
        _ => return false,
    };
    *field = true;
    true
}

/// Generic flags rtpengine knows that srtpgate accepts and ignores
/// (normalized).
const IGNORED_FLAGS: &[&str] = &[
    "allow-asymmetric-codecs",
    "allow-asymmetric-codec",
    "allow-no-codec-media",
    "allow-no-codec-medias",
    "allow-empty-codec-media",
    "allow-empty-codec-medias",
    "allow-transcoding",
    "asymmetric-codecs",
    "symmetric-codecs",
    "reorder-codecs",
    "audio-player",
    "player",
    "no-player",
    "no-audio-player",
    "bidirectional",
    "block-dtmf",
    "block-short",
    "block-shorts",
    "block-short-packets",
    "detect-dtmf",
    "early-media",
    "egress",
    "exclude-recording",
    "skip-recording-db",
    "skip-recording-database",
    "generate-rtcp",
    "inactive",
    "mirror-rtcp",
    "rtcp-mirror",
    "mix",
    "mixed",
    "no-passthrough",
    "passthrough",
    "no-tls-id",
    "no-jitter-buffer",
    "no-redis-update",
    "recording-vsc",
    "recording-announcement",
    "recrypt",
    "static-codec",
    "static-codecs",
    "no-codec-renegotiation",
    "reuse-codecs",
];

/// Prefix families (normalized) whose items are accepted and ignored, with
/// the items allowed (empty: any).
const IGNORED_PREFIXES: &[(&str, &[&str])] = &[
    ("endpoint-learning-", &["off", "immediate", "delayed", "heuristic"]),
    ("sdp-attr-add-", &[]),
    ("sdp-attr-remove-", &[]),
    ("sdp-attr-substitute-", &[]),
    ("t38-", &[]),
    ("t.38-", &[]),
];

/// Codec prefix families of the `flags` list and their `codec` operation.
const CODEC_PREFIXES: &[(&str, &str)] = &[
    ("codec-strip-", "strip"),
    ("codec-offer-", "offer"),
    ("codec-except-", "except"),
    ("codec-ignore-", "ignore"),
    ("codec-transcode-", "transcode"),
    ("transcode-", "transcode"),
    ("codec-mask-", "mask"),
    ("codec-accept-", "accept"),
    ("codec-consume-", "consume"),
    ("codec-set-", "set"),
];

fn apply_flag(req: &mut Request, s: &str) -> Result<(), NgError> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(());
    }
    if let Ok(t) = s.parse::<TransportProtocol>() {
        req.transport_protocol = Some(t);
        return Ok(());
    }
    let norm = normalize(s);
    if set_flag(&mut req.flags, &norm) {
        return Ok(());
    }
    if norm.starts_with("from-tags-") && s.len() > 10 {
        // The tag keeps its case: only the prefix is normalized.
        req.from_tags.push(s[10..].to_owned());
        return Ok(());
    }
    match norm.as_str() {
        "record-call" => {
            req.record_call = Some(RecordCall::Yes);
            return Ok(());
        }
        "discard-recording" => {
            // `record-call=yes` (or the flag) wins, as in rtpengine.
            if req.record_call != Some(RecordCall::Yes) {
                req.record_call = Some(RecordCall::Discard);
            }
            return Ok(());
        }
        "pause" => {
            req.pause = true;
            return Ok(());
        }
        "pad-crypto" => {
            req.sdes.push(Sdes::Pad);
            return Ok(());
        }
        "webrtc" => {
            // rtpengine's shorthand for a browser leg.
            req.transport_protocol = Some(TransportProtocol::UdpTlsRtpSavpf);
            req.ice = Some(Ice::Force);
            req.rtcp_mux.push(RtcpMux::Offer);
            req.rtcp_mux.push(RtcpMux::Require);
            req.flags.generate_mid = true;
            req.sdes.push(Sdes::Off);
            return Ok(());
        }
        n if IGNORED_FLAGS.contains(&n) => {
            req.warn(format!("flag '{}' ignored: not supported by srtpgate", clip(s)));
            return Ok(());
        }
        _ => {}
    }
    if let Some(rest) = strip_prefix_norm(s, &norm, "sdes-") {
        return sdes(req, rest).map_err(|e| match e {
            NgError::UnknownOption { .. } => NgError::UnknownFlag(clip(s)),
            e => e,
        });
    }
    if let Some(rest) = strip_prefix_norm(s, &norm, "osrtp-") {
        let item = osrtp(rest).map_err(|_| NgError::UnknownFlag(clip(s)))?;
        req.osrtp.push(item);
        return Ok(());
    }
    if let Some(rest) = strip_prefix_norm(s, &norm, "replace-") {
        return replace(&mut req.replace, rest).map_err(|_| NgError::UnknownFlag(clip(s)));
    }
    if let Some(rest) = strip_prefix_norm(s, &norm, "bundle-") {
        let item = match normalize(rest).as_str() {
            "accept" => Bundle::Accept,
            "offer" => Bundle::Offer,
            "reject" => Bundle::Reject,
            "require" => Bundle::Require,
            "strict" => Bundle::Strict,
            _ => return Err(NgError::UnknownFlag(clip(s))),
        };
        if matches!(item, Bundle::Require | Bundle::Strict) {
            req.warn(format!("flag '{}' taken as BUNDLE-offer/accept", clip(s)));
        }
        req.bundle.push(item);
        return Ok(());
    }
    if let Some(rest) = strip_prefix_norm(s, &norm, "rtcp-mux-") {
        let item = rtcp_mux(rest).map_err(|_| NgError::UnknownFlag(clip(s)))?;
        req.rtcp_mux.push(item);
        return Ok(());
    }
    for (prefix, op) in CODEC_PREFIXES {
        if let Some(rest) = strip_prefix_norm(s, &norm, prefix) {
            codec_op(req, op, rest);
            return Ok(());
        }
    }
    for (prefix, allowed) in IGNORED_PREFIXES {
        if let Some(rest) = strip_prefix_norm(s, &norm, prefix) {
            if !allowed.is_empty() && !allowed.contains(&normalize(rest).as_str()) {
                return Err(NgError::UnknownFlag(clip(s)));
            }
            req.warn(format!("flag '{}' ignored: not supported by srtpgate", clip(s)));
            return Ok(());
        }
    }
    Err(NgError::UnknownFlag(clip(s)))
}

/// Parses an `rtpp-flags` string (rtpengine parses the module's flag string
/// itself): space-separated tokens; `key=value` sets a top-level key,
/// `key=[a b]` a list (`[k=v …]` a dictionary), a bare token is a flag.
///
/// As in rtpengine, `direction=X` with a single name, or a bare `internal`
/// or `external`, names one side: the first such token `from-interface`, the
/// second `to-interface`; a third is ignored with a warning.
fn rtpp_flags(req: &mut Request, s: &str) -> Result<(), NgError> {
    const SIDES: [&str; 2] = ["from-interface", "to-interface"];
    let mut sides = SIDES.iter();
    for token in tokens(s)? {
        let side_name = match token.split_once('=') {
            None if matches!(normalize(token).as_str(), "internal" | "external") => Some(token),
            Some((key, value)) if normalize(key) == "direction" && !value.starts_with('[') => Some(value),
            _ => None,
        };
        if let Some(interface) = side_name {
            match sides.next() {
                Some(side) => apply_key(req, side, &Value::from(interface), true)?,
                None => {
                    req.ignore_key("direction");
                    req.warn(format!("'{}' in rtpp-flags ignored: both interfaces are already named", clip(token)));
                }
            }
            continue;
        }
        match token.split_once('=') {
            None => apply_flag(req, token)?,
            Some((key, value)) => {
                let v = rtpp_value(value, 0)?;
                apply_key(req, key, &v, true)?;
            }
        }
    }
    Ok(())
}

/// Splits on spaces outside brackets.
fn tokens(s: &str) -> Result<Vec<&str>, NgError> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = None;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth = depth.checked_sub(1).ok_or_else(|| invalid("rtpp-flags", s))?;
            }
            ' ' | '\t' | '\r' | '\n' if depth == 0 => {
                if let Some(st) = start.take() {
                    out.extend(s.get(st..i));
                }
                continue;
            }
            _ => {}
        }
        if start.is_none() {
            start = Some(i);
        }
    }
    if depth != 0 {
        return Err(invalid("rtpp-flags", s));
    }
    if let Some(st) = start {
        out.extend(s.get(st..));
    }
    Ok(out)
}

fn rtpp_value(value: &str, depth: usize) -> Result<Value, NgError> {
    let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
        return Ok(Value::from(value));
    };
    if depth >= MAX_RTPP_DEPTH {
        return Err(invalid("rtpp-flags", value));
    }
    let items = tokens(inner)?;
    if !items.is_empty() && items.iter().all(|t| t.split_once('=').is_some_and(|(k, _)| !k.contains('['))) {
        let mut d = Value::dict();
        for t in items {
            if let Some((k, v)) = t.split_once('=') {
                d.insert(k, rtpp_value(v, depth + 1)?);
            }
        }
        Ok(d)
    } else {
        items.into_iter().map(|t| rtpp_value(t, depth + 1)).collect::<Result<Vec<_>, _>>().map(Value::List)
    }
}
