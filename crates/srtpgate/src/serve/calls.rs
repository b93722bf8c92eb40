//! Calls and the offer/answer logic: the NG commands turned into SDP
//! rewrites, port pairs, fresh SDES keys for each leg, and the workers'
//! per-leg crypto contexts.
//!
//! A call has two parties, found by their SIP tags: the offerer of the first
//! `offer` is side 0, the answerer side 1 (a re-INVITE from the callee is an
//! offer from side 1). Each media stream (SDP m-line) has, per side, a port
//! pair on the relay where that side's endpoint sends, the key the endpoint
//! sends with (from its `a=crypto`), and the key the relay sends to it with
//! (generated here, put in the SDP that side receives). A packet from side
//! `s` is unprotected with `s`'s endpoint key and protected with the relay's
//! key for the other side, so each endpoint only ever holds its own keys.

mod ignored;
mod keep;

use super::config::Config;
use crate::relay::ports::Ports;
use crate::relay::stats::{LegSnapshot, LegStats};
use crate::relay::worker::{CallKey, Cmd, SideConfig, SideSockets};
use crate::relay::WorkerHandle;
use srtpgate_calls::negotiate::{self, Offered, Plan, Transcoding};
use srtpgate_calls::transport::{self as web, LocalTransport, PeerTransport};
use srtpgate_calls::web_leg::{Actions, WebLeg, WebTotals};
// Keys come from the OS generator; `OsRng.unwrap_err()` panics where the OS
// has no randomness (rand 0.9 made OsRng fallible), so no key is ever weak.
use rand::{rngs::OsRng, TryRngCore};
use srtp::{Context, Engine, Suite};
use srtpgate_codec::transcode::{Detect, Direction, Transcoder};
use srtpgate_codec::{abi, Registry};
use srtpgate_ng::{Bundle, Command, Ice, Request, RtcpMux, Sdes, Value};
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::formats::Format;
use srtpgate_sdp::{Media, Sdp};
use srtpgate_webrtc::dtls::{Identity, Setup};
use srtpgate_webrtc::ice::IceCreds;
use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Distinct error labels counted; further reasons count as `other`.
const MAX_ERROR_LABELS: usize = 256;

/// Room in a reply datagram for everything beside the SDP (cookie, result,
/// warnings).
const REPLY_ROOM: usize = srtpgate_ng::MAX_WARNING_TEXT + 512;

/// `list` pages hold this many Call-IDs unless `limit` says otherwise.
pub const LIST_PAGE: usize = 32;

/// Why a command failed: the text goes into the NG reply's `error-reason`.
pub type CmdError = String;

/// One side of a media stream.
#[derive(Clone)]
struct Side {
    ip: IpAddr,
    port: u16,
    stats: Arc<LegStats>,
    /// This side's endpoint speaks SRTP.
    srtp: bool,
    /// What this side offered (when it was the offerer), valid suites only.
    offered: Vec<CryptoAttr>,
    /// The key this side's endpoint sends with, once agreed.
    endpoint_key: Option<CryptoAttr>,
    /// Keys the relay put in the SDP this side received (one per suite
    /// offered to it; after its answer, the one it picked comes first).
    relay_keys: Vec<CryptoAttr>,
    /// The relay key in use towards this side, once agreed.
    relay_key: Option<CryptoAttr>,
    /// The endpoint's addresses from its SDP.
    peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// The endpoint offered or accepted rtcp-mux.
    mux: bool,
    /// The SDP protocol of this side.
    proto: String,
    /// This side's SRTP keys come from DTLS (`UDP/TLS/RTP/SAVP(F)`).
    dtls: bool,
    /// The relay runs ICE-lite towards this side.
    ice_on: bool,
    /// The relay's ICE credentials towards this side (made once).
    ice: Option<IceCreds>,
    /// What this side's last SDP said of ICE and DTLS.
    transport: PeerTransport,
    /// The `a=setup` the relay offered this side.
    setup_offered: Option<Setup>,
    /// The relay's DTLS role towards this side as its offer asked
    /// (`DTLS-reverse`), for the answer to apply.
    dtls_pref: Option<srtpgate_ng::Dtls>,
    /// BUNDLE (RFC 8843): the stream whose transport this side shares
    /// (its own index on the group's owner), `None` when not bundled.
    bundle: Option<usize>,
    /// The relay offered this side the m-lines as one BUNDLE group.
    bundle_offered: bool,
    /// A bundled (non-owner) side got SRTP contexts from its owner's keys.
    bundle_keyed: bool,
    /// RTP payload types this side's SDP and the relay's SDP to it named
    /// (on a bundled side: what the shared port hands to this stream).
    pts: Vec<u8>,
    /// The `a=extmap` id of the mid header extension with this side (on
    /// bundled sides: the relay writes the mid into the RTP it sends).
    mid_ext: Option<u8>,
}

impl Side {
    /// A side on the relay's `ip` and `port`, nothing negotiated yet.
    fn new(ip: IpAddr, port: u16, stats: Arc<LegStats>) -> Side {
        Side {
            ip,
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
}

#[derive(Clone)]
struct Stream {
    media_type: String,
    sides: [Side; 2],
    /// Rejected (port 0) in the answer.
    rejected: bool,
    /// rtcp-mux was offered to the answerer.
    mux_offered: bool,
    /// What the last offer's codec options left for its answer.
    offered: Offered,
    /// The codecs transcoded between since the last answer, and the side
    /// that offered them (`None`: pass-through).
    transcoding: Option<(usize, Transcoding)>,
}

struct Call {
    key: CallKey,
    worker: usize,
    created: SystemTime,
    last_signal: Instant,
    tags: [Option<String>; 2],
    /// Media streams by m-line index (`None`: not relayed).
    streams: Vec<Option<Stream>>,
    answered: bool,
    /// Side of the last offer.
    offerer: usize,
    /// Each side's hold/mute bits from the management page (kept for
    /// streams a later offer adds).
    block: [u8; 2],
}

/// Counters of the signalling.
#[derive(Default, Debug, Clone)]
pub struct Totals {
    /// Requests by command name.
    pub commands: HashMap<&'static str, u64>,
    /// Requests refused, by reason text prefix (up to the first quote).
    pub errors: HashMap<String, u64>,
    /// Calls created (offers refused create none, so created − ended =
    /// calls now).
    pub calls_created: u64,
    /// Offers refused.
    pub offers_refused: u64,
    /// Codec options of offers ignored as malformed (each named in the
    /// reply's warning).
    pub codec_options_ignored: u64,
    /// Requests answered with a key accepted but not acted on (named in the
    /// reply's warning), by key: a bounded set of names (the parser's table
    /// of keys, `other`, and those `ignored::ignored_keys` names).
    pub keys_ignored: BTreeMap<&'static str, u64>,
    /// Calls ended by `delete`.
    pub calls_deleted: u64,
    /// Calls ended by the media timeout.
    pub calls_timed_out: u64,
    /// Calls ended by the final timeout.
    pub calls_final_timeout: u64,
    /// Calls moved to a transcoding worker when transcoding began.
    pub calls_moved: u64,
    /// Calls ended from the management page.
    pub calls_ended_by_operator: u64,
    /// Calls resumed from Redis at start.
    pub calls_resumed: u64,
    /// Calls kept in Redis that could not be resumed (ports taken, a record
    /// that does not parse).
    pub calls_not_resumed: u64,
}

/// The call table and everything offer/answer need.
pub struct Calls<E: Engine> {
    cfg: Arc<Config>,
    engine: E,
    ports: Ports,
    workers: Vec<WorkerHandle<E>>,
    /// Codecs the relay transcodes with.
    codecs: Arc<Registry>,
    /// By Call-ID, in order (so that `list` pages follow one order; a call
    /// added or deleted between two pages shifts the later ones).
    calls: BTreeMap<String, Call>,
    /// Calls that hold no media port (every m-line rejected).
    without_media: usize,
    next_key: CallKey,
    next_worker: usize,
    next_tc_worker: usize,
    /// Warnings of the request being handled beyond the parser's (codecs
    /// that cannot be transcoded), for its reply.
    notes: Vec<String>,
    /// The request being handled was refused by a limit on new calls (the
    /// session limit, a drain): with `supports: [load limit]` its reply is
    /// `result: load limit`, which sends the module to its next relay.
    load_limited: bool,
    /// Counters.
    pub totals: Totals,
    /// When the relay started.
    pub started: Instant,
    /// New calls are refused (drain, from the management page).
    draining: bool,
    /// Calls by key (the workers name calls by key).
    by_key: HashMap<CallKey, String>,
    /// The running transport of every ICE/DTLS side: (call, stream, side).
    web: BTreeMap<(CallKey, usize, usize), WebLeg>,
    /// The relay's DTLS certificate.
    identity: Arc<Identity>,
    /// Counters of the ICE/DTLS legs.
    pub web_totals: WebTotals,
    /// The calls kept in Redis (`--redis`).
    keep: Option<keep::Keeper>,
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn is_secure(proto: &str) -> bool {
    proto.to_ascii_uppercase().contains("SAVP")
}

/// SRTP keyed by DTLS (RFC 5764 §8).
fn is_dtls(proto: &str) -> bool {
    proto.to_ascii_uppercase().starts_with("UDP/TLS/")
}

/// The SDP protocol with the security of `secure`, keeping AVP/AVPF.
fn with_security(proto: &str, secure: bool) -> String {
    let fb = proto.to_ascii_uppercase().ends_with("AVPF");
    match (secure, fb) {
        (true, true) => "RTP/SAVPF",
        (true, false) => "RTP/SAVP",
        (false, true) => "RTP/AVPF",
        (false, false) => "RTP/AVP",
    }
    .to_string()
}

impl<E: Engine + Clone + 'static> Calls<E>
where
    E::Keys: 'static,
{
    /// A call table over `workers`.
    pub fn new(cfg: Arc<Config>, engine: E, workers: Vec<WorkerHandle<E>>) -> Result<Calls<E>, String> {
        let mut ports = Ports::new(cfg.port_min, cfg.port_max)?;
        ports.socket_buffer = cfg.socket_buffer;
        let mut codecs = Registry::new();
        if let Some(dir) = &cfg.codec_plugin_dir {
            for e in codecs.load_dir(dir).map_err(|e| format!("codec-plugin-dir: {e}"))? {
                tracing::error!("codec plugin not loaded: {e}");
            }
        }
        for p in codecs.plugins() {
            let names: Vec<String> = p.codecs().iter().map(|c| format!("{}/{}", c.name, c.clock_rate)).collect();
            tracing::info!(plugin = p.name(), version = p.version(), "codecs: {}", names.join(" "));
        }
        let identity = match &cfg.dtls_certificate {
            Some((cert, key)) => {
                let read = |p: &std::path::Path| {
                    std::fs::read_to_string(p).map_err(|e| format!("dtls certificate file {}: {e}", p.display()))
                };
                Identity::from_pem(&read(cert)?, &read(key)?).map_err(|e| e.to_string())?
            }
            None => Identity::generate().map_err(|e| e.to_string())?,
        };
        tracing::info!("DTLS certificate fingerprint: {}", identity.fingerprint());
        Ok(Calls {
            cfg,
            engine,
            ports,
            workers,
            codecs: Arc::new(codecs),
            notes: Vec::new(),
            load_limited: false,
            calls: BTreeMap::new(),
            without_media: 0,
            next_key: 1,
            next_worker: 0,
            next_tc_worker: 0,
            totals: Totals::default(),
            started: Instant::now(),
            draining: false,
            by_key: HashMap::new(),
            web: BTreeMap::new(),
            identity: Arc::new(identity),
            web_totals: WebTotals::default(),
            keep: None,
        })
    }

    /// The crypto engine (for its counters).
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The media workers.
    pub fn workers(&self) -> &[WorkerHandle<E>] {
        &self.workers
    }

    /// Calls now.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// Checks the counters kept beside the table against the table itself.
    #[cfg(test)]
    pub fn check_invariants(&self) -> Result<(), String> {
        let without = self.calls.values().filter(|c| !c.holds_ports()).count();
        if without != self.without_media {
            return Err(format!("{without} calls without media, counted {}", self.without_media));
        }
        let pairs = 2 * self.calls.values().flat_map(|c| c.streams.iter().flatten()).count();
        if pairs != self.ports.in_use() {
            return Err(format!("{pairs} port pairs held by calls, {} in use", self.ports.in_use()));
        }
        Ok(())
    }

    /// The configured bounds.
    pub fn limits(&self) -> &super::config::Limits {
        &self.cfg.limits
    }

    /// Calls that hold no media port.
    pub fn without_media(&self) -> usize {
        self.without_media
    }

    /// Port pairs in use and in the range.
    pub fn ports(&self) -> (usize, usize) {
        (self.ports.in_use(), self.ports.capacity())
    }

    /// Caps the files media sockets may hold (see [`Ports::fd_budget`]).
    pub fn set_fd_budget(&mut self, files: usize) {
        self.ports.fd_budget = Some(files);
    }

    /// Refuses identifiers and bodies over the configured lengths, before
    /// anything is looked up or kept.
    fn check_lengths(&self, req: &Request) -> Result<(), CmdError> {
        let l = &self.cfg.limits;
        let ids = [
            ("call-id", &req.call_id),
            ("from-tag", &req.from_tag),
            ("to-tag", &req.to_tag),
            ("via-branch", &req.via_branch),
            ("label", &req.label),
        ];
        for (key, v) in ids {
            if let Some(v) = v {
                if v.len() > l.max_id_length {
                    return Err(format!(
                        "key {key} of {} bytes is over the limit of {} (max-id-length)",
                        v.len(),
                        l.max_id_length
                    ));
                }
            }
        }
        if let Some(sdp) = &req.sdp {
            if sdp.len() > l.max_sdp_length {
                return Err(format!(
                    "SDP of {} bytes is over the limit of {} (max-sdp-length)",
                    sdp.len(),
                    l.max_sdp_length
                ));
            }
        }
        Ok(())
    }

    /// Handles one request; the reply dictionary (ok or error).
    pub fn handle(&mut self, req: &Request) -> Value {
        *self.totals.commands.entry(req.command.name()).or_default() += 1;
        self.notes.clear();
        self.load_limited = false;
        let r = self.check_lengths(req).and_then(|()| match req.command {
            Command::Ping => Ok(Value::dict().with("result", "pong")),
            Command::Offer => self.offer(req),
            Command::Answer => self.answer(req),
            Command::Delete => self.delete(req),
            Command::Query => self.query(req),
            Command::List => Ok(self.list(req)),
            Command::Statistics => Ok(self.statistics()),
        });
        match r {
            Ok(mut v) => {
                if matches!(req.command, Command::Offer | Command::Answer) {
                    if let Some(id) = req.call_id.as_deref() {
                        self.keep_call(id);
                    }
                }
                // A reply that warns already (`delete` of an unknown call)
                // keeps its warning, first.
                let mut warnings: Vec<String> =
                    v.get("warning").and_then(Value::as_str).map(str::to_owned).into_iter().collect();
                warnings.extend(req.warnings.iter().cloned());
                for key in &req.ignored_keys {
                    *self.totals.keys_ignored.entry(key).or_default() += 1;
                }
                for (key, w) in ignored::ignored_keys(req) {
                    *self.totals.keys_ignored.entry(key).or_default() += 1;
                    warnings.push(w);
                }
                warnings.extend(ignored::inert_flags(req));
                warnings.append(&mut self.notes);
                if let Some(w) = srtpgate_ng::warning_text(&warnings, req.warnings_left_out) {
                    tracing::warn!(command = req.command.name(), "{w}");
                    v.insert("warning", w);
                }
                v
            }
            Err(e) => {
                if req.command == Command::Offer {
                    self.totals.offers_refused += 1;
                }
                self.count_error(&e);
                tracing::info!(
                    command = req.command.name(),
                    call_id = req.call_id.as_deref().unwrap_or(""),
                    "refused: {e}"
                );
                if self.load_limited && req.supports_load_limit {
                    // rtpengine's `load limit` extension: the module tries
                    // its next relay instead of failing the call.
                    return Value::dict().with("result", "load limit").with("message", e.as_str());
                }
                srtpgate_ng::error(&e)
            }
        }
    }

    /// Counts a refused request by the start of its reason.
    pub fn count_error(&mut self, reason: &str) {
        // A bounded label: the text before the first quote, digits folded.
        let key: String = reason
            .split('\'')
            .next()
            .unwrap_or(reason)
            .trim()
            .chars()
            .take(48)
            .map(|c| if c.is_ascii_digit() { 'N' } else { c })
            .collect();
        let key = if self.totals.errors.len() >= MAX_ERROR_LABELS && !self.totals.errors.contains_key(&key) {
            "other".to_string()
        } else {
            key
        };
        *self.totals.errors.entry(key).or_default() += 1;
    }

    fn offer(&mut self, req: &Request) -> Result<Value, CmdError> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        let from_tag = req.from_tag.clone().ok_or("missing key 'from-tag'")?;
        let text = req.sdp.as_deref().ok_or("missing key 'sdp'")?;
        let mut sdp = Sdp::parse(text).map_err(|e| format!("bad SDP: {e}"))?;
        let sections = sdp.media().len();
        let max_media = self.cfg.limits.max_media;
        if sections > max_media {
            // Each relayed m-line takes two port pairs and each m-line some
            // state: one SDP must not be able to take the whole range.
            return Err(format!("{sections} media sections; at most {max_media} per call (max-media)"));
        }
        let new = !self.calls.contains_key(&call_id);
        // A refused re-offer leaves the call as it was (see `undo_offer`).
        let saved = self.calls.get(&call_id).map(|c| (c.streams.clone(), c.tags.clone(), c.offerer));
        if new {
            if self.draining {
                self.load_limited = true;
                return Err("draining: this relay takes no new calls".into());
            }
            if self.calls.len() >= self.cfg.max_sessions {
                self.load_limited = true;
                return Err(format!("session limit reached ({} calls)", self.cfg.max_sessions));
            }
            let key = self.next_key;
            self.next_key += 1;
            // Round robin over the running workers of the pass-through
            // pool (any running worker when none of those runs).
            let worker = self
                .pick(self.pass_pool(), self.next_worker)
                .or_else(|| self.pick(0..self.workers.len(), 0))
                .ok_or("no media worker is running")?;
            self.next_worker = worker + 1;
            self.by_key.insert(key, call_id.clone());
            self.calls.insert(
                call_id.clone(),
                Call {
                    key,
                    worker,
                    created: SystemTime::now(),
                    last_signal: Instant::now(),
                    tags: [Some(from_tag.clone()), None],
                    block: [0; 2],
                    streams: Vec::new(),
                    answered: false,
                    offerer: 0,
                },
            );
            // Counted as without media until it holds a port.
            self.without_media += 1;
        }
        let result = self.offer_sdp(&call_id, &from_tag, req, &mut sdp).and_then(|()| {
            let holds = self.calls.get(&call_id).is_some_and(Call::holds_ports);
            if !holds && new && self.without_media > self.cfg.limits.max_sessions_without_media {
                return Err(format!(
                    "{} calls hold no media already; at most {} (max-sessions-without-media)",
                    self.without_media - 1,
                    self.cfg.limits.max_sessions_without_media
                ));
            }
            // Zeroized if refused below; moved whole into the reply, whose
            // values wipe themselves.
            let text = sdp.text();
            sdp_fits_reply(&text)?;
            Ok(text)
        });
        match result {
            Ok(mut text) => {
                if new {
                    self.totals.calls_created += 1;
                    tracing::info!(call_id, "new call");
                }
                Ok(srtpgate_ng::ok().with("sdp", std::mem::take(&mut *text)))
            }
            Err(e) => {
                // A refused offer creates no call (ports it bound are freed),
                // and changes nothing in an existing one.
                match saved {
                    None => self.remove(&call_id),
                    Some(saved) => self.undo_offer(&call_id, saved),
                }
                Err(e)
            }
        }
    }

    /// Puts a call back as it was before a refused re-offer: the streams it
    /// added are closed and their ports freed; keys and tags return.
    fn undo_offer(
        &mut self,
        call_id: &str,
        (streams, tags, offerer): (Vec<Option<Stream>>, [Option<String>; 2], usize),
    ) {
        let Some(call) = self.calls.get_mut(call_id) else { return };
        let had_ports = streams.iter().any(Option::is_some);
        let holds_ports = call.holds_ports();
        for (i, s) in call.streams.iter().enumerate() {
            let Some(s) = s else { continue };
            if streams.get(i).is_some_and(Option::is_some) {
                continue;
            }
            for d in &s.sides {
                self.ports.release(d.port);
            }
            let range = (call.key, i, 0)..=(call.key, i, 1);
            let gone: Vec<_> = self.web.range(range).map(|(k, _)| *k).collect();
            for k in gone {
                self.web.remove(&k);
            }
            self.workers[call.worker].send(Cmd::RemoveStream { call: call.key, stream: i });
        }
        call.streams = streams;
        call.tags = tags;
        call.offerer = offerer;
        if holds_ports && !had_ports {
            self.without_media += 1;
        }
    }

    fn offer_sdp(&mut self, call_id: &str, from_tag: &str, req: &Request, sdp: &mut Sdp) -> Result<(), CmdError> {
        let cfg = self.cfg.clone();
        let identity = self.identity.clone();
        let mut ice_towards_answerer = false;
        let call = self.calls.get_mut(call_id).ok_or("call vanished")?;
        call.last_signal = Instant::now();
        let o = if call.tags[0].as_deref() == Some(from_tag) {
            0
        } else if call.tags[1].as_deref() == Some(from_tag) {
            1
        } else if call.tags[1].is_none() && !call.answered {
            // A new offer from another tag before any answer: a fresh start.
            call.tags[0] = Some(from_tag.to_string());
            0
        } else {
            return Err(format!("from-tag '{from_tag}' is no party of call '{call_id}'"));
        };
        let a = 1 - o;
        if let (Some(t), None) = (&req.to_tag, &call.tags[a]) {
            call.tags[a] = Some(t.clone());
        }
        call.offerer = o;
        let session_addr = sdp.connection();
        let family_v6 = match req.address_family.as_deref() {
            Some(f) if f.eq_ignore_ascii_case("IP6") => Some(true),
            Some(f) if f.eq_ignore_ascii_case("IP4") => Some(false),
            _ => None,
        };
        let mux_flags = &req.rtcp_mux;
        let allowed = allowed_suites(&cfg.sdes_suites, &req.sdes);
        let sdes_off = req.sdes.contains(&Sdes::Off);
        let (key, worker) = (call.key, call.worker);
        let codecs = self.codecs.clone();
        let n = sdp.media().len();
        if call.streams.len() > n {
            return Err(format!("re-offer has {n} media sections, fewer than the {} before", call.streams.len()));
        }
        // BUNDLE from an ICE/DTLS offerer is accepted unless refused: a
        // bundle-only section (port 0) takes its group owner's port.
        let accept_bundle = !req.bundle.contains(&Bundle::Reject);
        let bundles: Vec<Option<usize>> = web::bundle_of(sdp)
            .into_iter()
            .map(|b| {
                b.filter(|&p| {
                    accept_bundle && {
                        let t = PeerTransport::read(sdp, p);
                        is_dtls(sdp.media()[p].proto()) || t.ice.is_some()
                    }
                })
            })
            .collect();
        for (i, b) in bundles.iter().enumerate() {
            if let Some(p) = *b {
                let port = sdp.media()[p].port();
                if sdp.media()[i].port() == 0 {
                    sdp.media_mut()[i].set_port(port);
                }
            }
        }
        let offer_bundle = req.bundle.iter().any(|b| matches!(b, Bundle::Offer | Bundle::Require));
        let mut bundle_mids: Vec<String> = Vec::new();
        for i in 0..n {
            let addr = sdp.media_connection(i);
            let peer_t = PeerTransport::read(sdp, i);
            let m = &mut sdp.media_mut()[i];
            if m.port() == 0 {
                continue;
            }
            if !m.is_rtp() {
                // Not RTP (e.g. T.38 over udptl): refuse it rather than let
                // the endpoints try to reach each other directly.
                tracing::warn!(call_id, media = m.media_type(), proto = m.proto(), "media not relayed; rejected");
                m.set_port(0);
                continue;
            }
            let in_proto = m.proto().to_string();
            let srtp_o = is_secure(&in_proto);
            let dtls_o = is_dtls(&in_proto);
            let mut out_proto = match req.transport_protocol {
                // To or from DTLS: the protocol named.
                Some(t) if t.is_dtls() || dtls_o => t.name().to_string(),
                Some(t) => with_security(&in_proto, t.is_secure()),
                None => in_proto.clone(),
            };
            if is_dtls(&out_proto) && req.dtls == Some(srtpgate_ng::Dtls::Off) {
                // DTLS=off: SRTP with SDES instead.
                out_proto = with_security(&out_proto, true);
            }
            let dtls_a = is_dtls(&out_proto);
            let srtp_a = is_secure(&out_proto) && !dtls_a;
            let offered: Vec<CryptoAttr> = if srtp_o {
                m.crypto().into_iter().filter_map(Result::ok).filter(|c| c.policy().is_ok()).collect()
            } else {
                Vec::new()
            };
            if srtp_o && !dtls_o && offered.is_empty() {
                return Err(format!("media {i}: RTP/SAVP offer without a usable a=crypto line"));
            }
            if dtls_o && peer_t.fingerprint.is_none() {
                return Err(format!("media {i}: {in_proto} offer without a=fingerprint (sha-256)"));
            }
            // ICE-lite towards the answerer: as the option says, else when
            // the offerer spoke ICE.
            let ice_a = runs_ice(req, peer_t.ice.is_some());
            let peer_ip = sip_source(req).or(addr.filter(|ip| !ip.is_unspecified()));
            let v6 = family_v6.unwrap_or(peer_ip.or(session_addr).is_some_and(|ip| ip.is_ipv6()));
            let o_ip = cfg.interface_for(peer_ip.or(session_addr).is_some_and(|ip| ip.is_ipv6()));
            let a_ip = cfg.interface_for(v6);
            let rtcp = m.rtcp();
            let peer = peer_ip.map(|ip| {
                let rtp = SocketAddr::new(ip, m.port());
                let rtcp = match rtcp {
                    Some((p, ip2)) => SocketAddr::new(ip2.unwrap_or(ip), p),
                    None => SocketAddr::new(ip, m.port().wrapping_add(1)),
                };
                (Some(rtp), Some(rtcp))
            });
            let o_mux = m.rtcp_mux() && !mux_flags.contains(&RtcpMux::Reject);
            let mux_onwards = (o_mux && !mux_flags.contains(&RtcpMux::Demux))
                || mux_flags.contains(&RtcpMux::Offer)
                || mux_flags.contains(&RtcpMux::Require);
            // The stream, new or from an earlier offer (ports and the relay's
            // keys stay for the life of the call).
            if call.streams.len() <= i {
                call.streams.resize_with(i + 1, || None);
            }
            if call.streams[i].is_none() {
                let po = self.ports.allocate(o_ip).map_err(|e| e.to_string())?;
                let pa = match self.ports.allocate(a_ip) {
                    Ok(p) => p,
                    Err(e) => {
                        self.ports.release(po.port);
                        return Err(e.to_string());
                    }
                };
                if !call.holds_ports() {
                    // The call's first ports: it no longer counts as without media.
                    self.without_media -= 1;
                }
                let (so, sa) = (Arc::new(LegStats::default()), Arc::new(LegStats::default()));
                let mut sides = [Side::new(o_ip, po.port, so.clone()), Side::new(a_ip, pa.port, sa.clone())];
                if o == 1 {
                    sides.swap(0, 1);
                }
                let (s0, s1) = if o == 0 { (po, pa) } else { (pa, po) };
                for (k, side) in sides.iter().enumerate() {
                    side.stats.block.store(call.block[k], std::sync::atomic::Ordering::Relaxed);
                }
                let (st0, st1) = (sides[0].stats.clone(), sides[1].stats.clone());
                self.workers[worker].send(Cmd::AddStream {
                    call: key,
                    stream: i,
                    sides: [
                        SideSockets { rtp: s0.rtp, rtcp: s0.rtcp, stats: st0 },
                        SideSockets { rtp: s1.rtp, rtcp: s1.rtcp, stats: st1 },
                    ],
                });
                call.streams[i] = Some(Stream {
                    media_type: m.media_type().to_string(),
                    sides,
                    rejected: false,
                    mux_offered: false,
                    offered: Offered::default(),
                    transcoding: None,
                });
            }
            let Some(stream) = call.streams[i].as_mut() else { continue };
            stream.rejected = false;
            stream.mux_offered = mux_onwards;
            // Codecs: the options applied; a stream that transcodes keeps
            // the receiver's codec in a re-offer that names none.
            let implicit: Vec<Format> = match &stream.transcoding {
                Some((off, leg)) => vec![if *off == a { leg.offerer.clone() } else { leg.answerer.clone() }],
                None => Vec::new(),
            };
            let formats = m.payload_formats();
            let (to_answerer, codec_plan) = negotiate::offer(
                &formats,
                &req.codec,
                req.flags.always_transcode,
                (req.ptime, req.ptime_reverse),
                &implicit,
                &codecs,
            )
            .map_err(|e| format!("media {i}: {e}"))?;
            if codec_plan.engaged {
                m.set_payload_formats(&to_answerer);
                if let Some(ms) = req.ptime {
                    m.set_ptime(Some(ms));
                }
            }
            for name in &codec_plan.unsupported {
                let w = format!("codec '{name}' cannot be transcoded (no codec or plugin for it): left out");
                if !self.notes.contains(&w) {
                    self.notes.push(w);
                }
            }
            for opt in &codec_plan.malformed {
                let w = format!("codec option '{opt}' is not name/clock/channels/bitrate/ptime/fmtp: ignored");
                if !self.notes.contains(&w) {
                    self.totals.codec_options_ignored += 1;
                    self.notes.push(w);
                }
            }
            stream.offered = codec_plan;
            let so = &mut stream.sides[o];
            so.srtp = srtp_o;
            so.offered = offered.clone();
            so.peer = peer;
            so.mux = o_mux;
            so.proto = in_proto.clone();
            so.dtls = dtls_o;
            so.transport = peer_t.clone();
            so.dtls_pref = req.dtls_reverse;
            so.bundle = bundles.get(i).copied().flatten();
            so.pts = formats.iter().map(|f| f.pt).collect();
            // The mid goes into the RTP to a group of several m-lines only.
            let shared =
                |b: &[Option<usize>], p: Option<usize>| p.is_some() && b.iter().filter(|x| **x == p).count() > 1;
            so.mid_ext = web::mid_extmap(m).filter(|_| shared(&bundles, so.bundle));
            let sa = &mut stream.sides[a];
            sa.proto = out_proto.clone();
            sa.dtls = dtls_a;
            sa.ice_on = ice_a;
            if ice_a && sa.ice.is_none() {
                sa.ice = Some(IceCreds::generate());
            }
            sa.setup_offered = dtls_a.then_some(match req.dtls {
                Some(srtpgate_ng::Dtls::Passive) => Setup::Passive,
                Some(srtpgate_ng::Dtls::Active) => Setup::Active,
                _ => Setup::ActPass,
            });
            // The relay's keys for the answerer: the offerer's suites when it
            // offered SRTP (so the answerer's pick fits both legs), else the
            // configured list; each filtered by the SDES options.
            if srtp_a && !sdes_off {
                let suites: Vec<Suite> = if srtp_o && !dtls_o {
                    let mut v: Vec<Suite> = Vec::new();
                    for c in &offered {
                        if allowed.contains(&c.suite) && !v.contains(&c.suite) {
                            v.push(c.suite);
                        }
                    }
                    v
                } else {
                    allowed.clone()
                };
                if suites.is_empty() {
                    return Err(format!("media {i}: no crypto suite left to offer (offered suites vs SDES options)"));
                }
                let same = sa.relay_keys.len() == suites.len()
                    && sa.relay_keys.iter().zip(&suites).all(|(k, s)| k.suite == *s);
                if !same {
                    let mut rng = OsRng.unwrap_err();
                    sa.relay_keys = suites
                        .iter()
                        .enumerate()
                        .map(|(t, s)| with_params(CryptoAttr::generate(t as u32 + 1, *s, &mut rng), &req.sdes))
                        .collect();
                }
            } else {
                sa.relay_keys.clear();
            }
            // Rewrite the m-line for the answerer. Offered as one BUNDLE
            // group (`BUNDLE-offer`, ICE/DTLS answerers), each m-line keeps
            // its own port until the answer accepts the group (RFC 8843).
            let bundle_a = offer_bundle && (ice_a || dtls_a) && mux_onwards;
            rewrite_media(m, sa, &out_proto, &sa.relay_keys, mux_onwards, req);
            web::strip_dtls(m);
            let local = LocalTransport {
                ice: sa.ice.as_ref().filter(|_| ice_a),
                dtls: sa.setup_offered.map(|s| (identity.fingerprint(), s)),
                mid: (req.flags.generate_mid || bundle_a)
                    .then(|| peer_t.mid.clone().unwrap_or_else(|| (i + 1).to_string())),
            };
            web::write_local(m, &local, SocketAddr::new(sa.ip, sa.port), mux_onwards);
            sa.bundle_offered = bundle_a;
            sa.pts = pts_of(m);
            sa.mid_ext = if bundle_a { web::add_mid_extmap(m, None) } else { None };
            if bundle_a {
                bundle_mids.extend(m.attr("mid").map(|v| v.trim().to_string()));
            }
            ice_towards_answerer |= ice_a;
        }
        let relay_ip = call
            .streams
            .iter()
            .flatten()
            .next()
            .map(|s| s.sides[a].ip)
            .unwrap_or_else(|| cfg.interface_for(family_v6.unwrap_or(false)));
        rewrite_session(sdp, relay_ip, req);
        web::strip_session(sdp);
        if ice_towards_answerer {
            sdp.add_session_attr("ice-lite", None);
        }
        web::write_bundle(sdp, &bundle_mids);
        Ok(())
    }

    /// `answer`: all or nothing. A refused answer leaves the call as the
    /// last accepted one left it, so that the keys recorded here are always
    /// those the worker holds (a later answer decides from them whether to
    /// keep or replace the worker's contexts).
    fn answer(&mut self, req: &Request) -> Result<Value, CmdError> {
        let saved = req.call_id.as_ref().and_then(|id| self.calls.get(id)).map(|c| (c.streams.clone(), c.tags.clone()));
        let r = self.answer_inner(req);
        if r.is_err() {
            if let (Some(id), Some((streams, tags))) = (&req.call_id, saved) {
                if let Some(c) = self.calls.get_mut(id) {
                    c.streams = streams;
                    c.tags = tags;
                }
            }
        }
        r
    }

    fn answer_inner(&mut self, req: &Request) -> Result<Value, CmdError> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        let from_tag = req.from_tag.clone().ok_or("missing key 'from-tag'")?;
        let to_tag = req.to_tag.clone().ok_or("missing key 'to-tag'")?;
        let text = req.sdp.as_deref().ok_or("missing key 'sdp'")?;
        let mut sdp = Sdp::parse(text).map_err(|e| format!("bad SDP: {e}"))?;
        let cfg = self.cfg.clone();
        let engine = self.engine.clone();
        let call = self.calls.get_mut(&call_id).ok_or_else(|| format!("Unknown call-id '{call_id}'"))?;
        call.last_signal = Instant::now();
        let o = call
            .tags
            .iter()
            .position(|t| t.as_deref() == Some(from_tag.as_str()))
            .ok_or_else(|| format!("from-tag '{from_tag}' is no party of call '{call_id}'"))?;
        let a = 1 - o;
        match &call.tags[a] {
            Some(t) if *t != to_tag && call.answered => {
                // Another branch of a forked call answered: it takes the leg.
                tracing::info!(call_id, to_tag, "answer from another to-tag replaces the callee");
            }
            _ => {}
        }
        call.tags[a] = Some(to_tag.clone());
        let n = sdp.media().len();
        if n != call.streams.len() {
            return Err(format!("answer has {n} media sections, the offer had {}", call.streams.len()));
        }
        let session_addr = sdp.connection();
        let codecs = self.codecs.clone();
        let identity = self.identity.clone();
        let mut configs: Vec<(usize, usize, SideConfig<E>)> = Vec::new();
        // ICE/DTLS sides: (stream, side, DTLS fingerprint and relay role,
        // the peer's SDP address, the relay's ICE credentials).
        type WebSetup =
            (usize, usize, Option<(srtpgate_webrtc::dtls::Fingerprint, bool)>, Option<SocketAddr>, Option<IceCreds>);
        let mut webs: Vec<WebSetup> = Vec::new();
        let mut ice_towards_offerer = false;
        // BUNDLE: the groups the answerer accepted (of those the relay
        // offered it), and the transport of each offerer's group owner
        // (its port and ICE credentials), which its members answer with.
        let answer_bundles = web::bundle_of(&sdp);
        for s in call.streams.iter_mut().flatten() {
            let so = &mut s.sides[o];
            so.ice_on = runs_ice(req, so.transport.ice.is_some());
            if so.ice_on && so.ice.is_none() {
                so.ice = Some(IceCreds::generate());
            }
        }
        let owners: Vec<Option<(u16, Option<IceCreds>)>> =
            call.streams.iter().map(|s| s.as_ref().map(|s| (s.sides[o].port, s.sides[o].ice.clone()))).collect();
        let mut offerer_mids: Vec<String> = Vec::new();
        for i in 0..n {
            let addr = sdp.media_connection(i);
            let peer_t = PeerTransport::read(&sdp, i);
            let m = &mut sdp.media_mut()[i];
            let Some(stream) = call.streams[i].as_mut() else {
                if m.port() != 0 {
                    m.set_port(0);
                }
                continue;
            };
            if m.port() == 0 {
                stream.rejected = true;
                m.set_port(0);
                continue;
            }
            stream.rejected = false;
            // Codecs: pass-through, or the pair to transcode between.
            let mut offered = stream.offered.clone();
            if req.ptime.is_some() || req.ptime_reverse.is_some() {
                offered.engaged = true;
                offered.ptime_to_offerer = req.ptime.or(offered.ptime_to_offerer);
                offered.ptime_to_answerer = req.ptime_reverse.or(offered.ptime_to_answerer);
            }
            let plan =
                negotiate::answer(&offered, &m.payload_formats(), &codecs).map_err(|e| format!("media {i}: {e}"))?;
            let (tc_o, tc_a) = match plan {
                Plan::Pass(rewrite) => {
                    if let Some(list) = rewrite {
                        m.set_payload_formats(&list);
                    }
                    let was = stream.transcoding.take().is_some();
                    (was.then_some(None), was.then_some(None))
                }
                Plan::Transcode { to_offerer, transcoding } => {
                    m.set_payload_formats(&to_offerer);
                    if let Some(ms) = transcoding.ptime.1 {
                        m.set_ptime(Some(ms));
                    }
                    let transcoding = *transcoding;
                    if stream.transcoding.as_ref() == Some(&(o, transcoding.clone())) {
                        // The same codecs as before (a re-INVITE): the
                        // running transcoders keep their state.
                        (None, None)
                    } else {
                        let (to_a, to_o) = transcoders(
                            &transcoding,
                            &codecs,
                            self.cfg.codec_complexity,
                            self.cfg.plc,
                            self.cfg.dtmf_delay_ms,
                        )
                        .map_err(|e| format!("media {i}: {e}"))?;
                        tracing::info!(
                            call_id,
                            media = i,
                            "transcoding {} (offerer) <-> {} (answerer)",
                            transcoding.offerer,
                            transcoding.answerer
                        );
                        stream.transcoding = Some((o, transcoding));
                        (Some(Some(to_a)), Some(Some(to_o)))
                    }
                }
            };
            // The answerer's side.
            let peer_ip = sip_source(req).or(addr.or(session_addr).filter(|ip| !ip.is_unspecified()));
            let rtcp = m.rtcp();
            let port = m.port();
            let mux_a = m.rtcp_mux() && stream.mux_offered;
            let sa = &mut stream.sides[a];
            sa.peer = peer_ip.map(|ip| {
                let rtcp = match rtcp {
                    Some((p, ip2)) => SocketAddr::new(ip2.unwrap_or(ip), p),
                    None => SocketAddr::new(ip, port.wrapping_add(1)),
                };
                (Some(SocketAddr::new(ip, port)), Some(rtcp))
            });
            sa.mux = mux_a;
            sa.bundle = answer_bundles.get(i).copied().flatten().filter(|_| sa.bundle_offered && mux_a);
            let group = answer_bundles.iter().filter(|b| sa.bundle.is_some() && **b == sa.bundle).count();
            sa.mid_ext = web::mid_extmap(m).filter(|_| group > 1);
            sa.pts.extend(pts_of(m));
            sa.pts.sort_unstable();
            sa.pts.dedup();
            let a_member = sa.bundle.is_some_and(|p| p != i);
            let answered_secure = is_secure(m.proto());
            if a_member {
                // Bundled into another stream's transport: no handshake or
                // checks of its own.
                if sa.dtls && !is_dtls(m.proto()) {
                    return Err(format!("media {i}: {} answer to a {} offer", m.proto(), sa.proto));
                }
            } else if sa.dtls {
                if !is_dtls(m.proto()) {
                    return Err(format!("media {i}: {} answer to a {} offer", m.proto(), sa.proto));
                }
                let fp = peer_t
                    .fingerprint
                    .clone()
                    .ok_or_else(|| format!("media {i}: DTLS-SRTP answer without a=fingerprint (sha-256)"))?;
                let active = web::relay_active(peer_t.setup, None);
                webs.push((i, a, Some((fp, active)), sa.peer.and_then(|p| p.0), sa.ice.clone().filter(|_| sa.ice_on)));
            } else if sa.ice_on {
                webs.push((i, a, None, None, sa.ice.clone()));
            }
            sa.transport = peer_t;
            if !answered_secure && !sa.relay_keys.is_empty() {
                // RFC 3264 answers keep the offer's protocol; a plain answer to
                // SRTP would have the relay send this leg's media in clear.
                return Err(format!("media {i}: plain {} answer to an RTP/SAVP offer", m.proto()));
            }
            let (a_rx, a_tx, picked) = if answered_secure && !sa.dtls {
                let mine = m
                    .crypto()
                    .into_iter()
                    .next()
                    .ok_or_else(|| format!("media {i}: RTP/SAVP answer without a=crypto"))?
                    .map_err(|e| format!("media {i}: bad a=crypto in the answer: {e}"))?;
                let relay =
                    sa.relay_keys.iter().find(|k| k.tag == mine.tag && k.suite == mine.suite).cloned().ok_or_else(
                        || format!("media {i}: the answer's crypto tag {} ({}) was not offered", mine.tag, mine.suite),
                    )?;
                let suite = relay.suite;
                (Some(mine), Some(relay), Some(suite))
            } else {
                (None, None, None)
            };
            let rx_new = !same_key(&sa.endpoint_key, &a_rx);
            let tx_new = !same_key(&sa.relay_key, &a_tx);
            if tx_new {
                // The relay key in use is retired: replace it in the offered
                // set, so no later answer can bring it back (a context built
                // anew from a used key would reuse its keystream).
                if let Some(old) = &sa.relay_key {
                    for k in sa.relay_keys.iter_mut().filter(|k| k.tag == old.tag && k.suite == old.suite) {
                        let mut fresh = CryptoAttr::generate(k.tag, k.suite, &mut OsRng.unwrap_err());
                        fresh.session_params = k.session_params.clone();
                        *k = fresh;
                    }
                }
            }
            sa.srtp = answered_secure;
            sa.endpoint_key = a_rx.clone();
            sa.relay_key = a_tx.clone();
            let handover = req.flags.media_handover;
            let ctx = |k: &Option<CryptoAttr>| -> Result<Option<Context<E>>, CmdError> {
                k.as_ref().map(|k| context(k, engine.clone(), cfg.libsrtp_aes192_kdf)).transpose()
            };
            let a_keyed = match sa.bundle.filter(|&p| p != i) {
                Some(_) => sa.bundle_keyed,
                None => self.web.get(&(call.key, i, a)).is_some_and(|w| w.keyed),
            };
            configs.push((
                i,
                a,
                SideConfig {
                    peer: Some(sa.peer.unwrap_or((None, None))),
                    rtcp_mux: mux_a,
                    rx: if rx_new { Some(ctx(&a_rx)?) } else { None },
                    tx: if tx_new { Some(ctx(&a_tx)?) } else { None },
                    tx_key: Self::key_tag(&a_tx),
                    reserving: false,
                    handover,
                    transcode: tc_a,
                    demux: sa.dtls || sa.ice_on,
                    keys_pending: sa.dtls && !a_keyed,
                    bundle: sa.bundle,
                    payload_types: sa.pts.clone(),
                    mid_ext: mid_ext(sa),
                },
            ));
            // The offerer's side: answer it with its own tag for the suite
            // the answerer picked when it offered that suite, else its first
            // usable one.
            let so = &mut stream.sides[o];
            if req.bundle.contains(&Bundle::Reject) {
                so.bundle = None;
            }
            // A member of the offerer's BUNDLE group answers with its
            // owner's port and ICE credentials, and runs no transport.
            let o_owner = so.bundle.filter(|&p| p != i && so.mux).and_then(|p| owners.get(p).cloned().flatten());
            if so.bundle.is_some() && o_owner.is_none() && so.bundle != Some(i) {
                so.bundle = None;
            }
            let o_dtls = if so.dtls {
                let fp = so.transport.fingerprint.clone().ok_or_else(|| format!("media {i}: no a=fingerprint"))?;
                let active = web::relay_active(so.transport.setup, req.dtls.or(so.dtls_pref));
                if o_owner.is_none() {
                    webs.push((
                        i,
                        o,
                        Some((fp, active)),
                        so.peer.and_then(|p| p.0),
                        so.ice.clone().filter(|_| so.ice_on),
                    ));
                }
                Some(if active { Setup::Active } else { Setup::Passive })
            } else {
                if so.ice_on && o_owner.is_none() {
                    webs.push((i, o, None, None, so.ice.clone()));
                }
                None
            };
            let (o_rx, o_tx) = if so.srtp && !so.dtls {
                let chosen = picked
                    .and_then(|s| so.offered.iter().find(|c| c.suite == s))
                    .or_else(|| so.offered.iter().find(|c| cfg.sdes_suites.contains(&c.suite)))
                    .or_else(|| so.offered.first())
                    .cloned()
                    .ok_or_else(|| format!("media {i}: the offerer has no usable crypto suite"))?;
                let relay = match &so.relay_key {
                    Some(k) if k.suite == chosen.suite && k.tag == chosen.tag => k.clone(),
                    _ => {
                        let mut k = CryptoAttr::generate(chosen.tag, chosen.suite, &mut OsRng.unwrap_err());
                        k.session_params = chosen.session_params.clone();
                        k
                    }
                };
                (Some(chosen), Some(relay))
            } else {
                (None, None)
            };
            let rx_new = !same_key(&so.endpoint_key, &o_rx);
            let tx_new = !same_key(&so.relay_key, &o_tx);
            so.endpoint_key = o_rx.clone();
            so.relay_key = o_tx.clone();
            let o_keyed = match o_owner {
                Some(_) => so.bundle_keyed,
                None => self.web.get(&(call.key, i, o)).is_some_and(|w| w.keyed),
            };
            // Rewrite the m-line for the offerer; its mid is the offer's.
            rewrite_media(m, so, &so.proto, so.relay_key.as_slice(), so.mux, req);
            web::strip_dtls(m);
            m.remove_attrs("mid");
            let (port, ice) = match &o_owner {
                Some((port, ice)) => (*port, ice.as_ref()),
                None => (so.port, so.ice.as_ref()),
            };
            m.set_port(port);
            let local = LocalTransport {
                ice: ice.filter(|_| so.ice_on),
                dtls: o_dtls.map(|s| (identity.fingerprint(), s)),
                mid: so.transport.mid.clone(),
            };
            web::write_local(m, &local, SocketAddr::new(so.ip, port), so.mux);
            if so.bundle.is_some() {
                offerer_mids.extend(so.transport.mid.clone());
                if so.mid_ext.is_some() {
                    so.mid_ext = web::add_mid_extmap(m, so.mid_ext);
                }
            }
            so.pts.extend(pts_of(m));
            so.pts.sort_unstable();
            so.pts.dedup();
            configs.push((
                i,
                o,
                SideConfig {
                    peer: Some(so.peer.unwrap_or((None, None))),
                    rtcp_mux: so.mux,
                    rx: if rx_new { Some(ctx(&o_rx)?) } else { None },
                    tx: if tx_new { Some(ctx(&o_tx)?) } else { None },
                    tx_key: Self::key_tag(&o_tx),
                    reserving: false,
                    handover,
                    transcode: tc_o,
                    demux: so.dtls || so.ice_on,
                    keys_pending: so.dtls && !o_keyed,
                    bundle: so.bundle,
                    payload_types: so.pts.clone(),
                    mid_ext: mid_ext(so),
                },
            ));
            ice_towards_offerer |= so.ice_on;
        }
        let (key, worker) = (call.key, call.worker);
        let relay_ip = call.streams.iter().flatten().next().map(|s| s.sides[o].ip).unwrap_or(cfg.interfaces[0]);
        rewrite_session(&mut sdp, relay_ip, req);
        web::strip_session(&mut sdp);
        if ice_towards_offerer {
            sdp.add_session_attr("ice-lite", None);
        }
        web::write_bundle(&mut sdp, &offerer_mids);
        // Zeroized on every early return below; moved whole into the reply.
        let mut text = sdp.text();
        sdp_fits_reply(&text)?;
        // The ICE/DTLS sides: associations set up or kept (a re-INVITE
        // with the same fingerprint keeps its keys); sides that are no
        // longer ICE/DTLS lose theirs.
        let now = Instant::now();
        let mut web_actions = Vec::new();
        for i in 0..n {
            for side in 0..2 {
                if !webs.iter().any(|w| (w.0, w.1) == (i, side)) {
                    self.web.remove(&(call.key, i, side));
                }
            }
        }
        for (i, side, dtls, hint, ice) in webs {
            let leg = self.web.entry((call.key, i, side)).or_insert_with(|| WebLeg::new(None));
            leg.ice = ice;
            match dtls {
                Some((fp, active)) => {
                    let act = leg
                        .ensure_dtls(&identity, fp, active, hint, now, &mut self.web_totals)
                        .map_err(|e| format!("media {i}: {e}"))?;
                    web_actions.push((i, side, act));
                }
                None => leg.dtls = None,
            }
        }
        call.answered = true;
        let transcodes = call.streams.iter().flatten().any(|s| s.transcoding.is_some());
        // The old worker applies the configuration before it hands the call
        // over (if it does), so nothing sent here can overtake the move.
        // Kept calls send only with indices reserved in Redis first.
        let reserving = self.reserving(&call_id);
        for (stream, side, mut config) in configs {
            config.reserving = reserving;
            self.workers[worker].send(Cmd::Configure { call: key, stream, side, config: Box::new(config) });
        }
        for (stream, side, act) in web_actions {
            self.apply_web(key, stream, side, act);
        }
        // Streams bundled into a transport that is keyed already (added by
        // a re-INVITE) get their contexts now.
        for i in 0..n {
            for side in 0..2 {
                self.key_members(key, i, side, false);
            }
        }
        if transcodes && !self.tc_pool().contains(&worker) {
            self.move_to_transcoding(&call_id);
        }
        Ok(srtpgate_ng::ok().with("sdp", std::mem::take(&mut *text)))
    }

    /// The workers that new calls go to: all, or those before the
    /// transcoding pool.
    fn pass_pool(&self) -> std::ops::Range<usize> {
        0..self.workers.len() - self.cfg.transcode_workers.min(self.workers.len().saturating_sub(1))
    }

    /// The workers that carry transcoded calls (empty when all share).
    fn tc_pool(&self) -> std::ops::Range<usize> {
        self.pass_pool().end..self.workers.len()
    }

    /// The first running worker of `pool` from worker `next` on, round robin.
    fn pick(&self, pool: std::ops::Range<usize>, next: usize) -> Option<usize> {
        let n = pool.len();
        let from = next.saturating_sub(pool.start);
        (0..n).map(|k| pool.start + (from + k) % n).find(|&w| self.workers[w].alive())
    }

    /// Hands a call that now transcodes to a worker of the transcoding pool,
    /// waiting (briefly) until the old worker has put it in the new one's
    /// queue, so that later commands reach the new worker after it.
    fn move_to_transcoding(&mut self, call_id: &str) {
        let Some(to) = self.pick(self.tc_pool(), self.next_tc_worker) else {
            tracing::warn!(call_id, "no transcoding worker is running: the call stays where it is");
            return;
        };
        self.next_tc_worker = to + 1;
        let Some(call) = self.calls.get_mut(call_id) else { return };
        let (done_tx, done_rx) = std::sync::mpsc::sync_channel(1);
        self.workers[call.worker].send(Cmd::MoveCall { call: call.key, to: self.workers[to].mover(), done: done_tx });
        match done_rx.recv_timeout(Duration::from_secs(1)) {
            Ok(streams) => {
                tracing::debug!(call_id, from = call.worker, to, streams, "call moved to a transcoding worker")
            }
            Err(e) => tracing::error!(call_id, from = call.worker, to, "moving a call to a transcoding worker: {e}"),
        }
        call.worker = to;
        self.totals.calls_moved += 1;
    }

    fn delete(&mut self, req: &Request) -> Result<Value, CmdError> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        if !self.calls.contains_key(&call_id) {
            // The modules repeat deletes (a 486 gives two): not an error.
            return Ok(srtpgate_ng::ok().with("warning", format!("call '{call_id}' not found (already deleted?)")));
        }
        let reply = self.call_report(&call_id).unwrap_or_else(srtpgate_ng::ok);
        self.remove(&call_id);
        self.totals.calls_deleted += 1;
        tracing::info!(call_id, "call deleted");
        Ok(reply)
    }

    /// Ends a call: the worker closes its sockets, its ports are freed.
    fn remove(&mut self, call_id: &str) {
        let Some(call) = self.calls.remove(call_id) else { return };
        self.forget_call(call_id, call.key);
        if !call.holds_ports() {
            self.without_media -= 1;
        }
        self.by_key.remove(&call.key);
        self.remove_web(call.key, None);
        self.workers[call.worker].send(Cmd::RemoveCall { call: call.key });
        for s in call.streams.iter().flatten() {
            for d in &s.sides {
                self.ports.release(d.port);
            }
        }
    }

    /// Drops the ICE/DTLS state of a call (one stream, or all).
    fn remove_web(&mut self, key: CallKey, stream: Option<usize>) {
        let (lo, hi) = match stream {
            Some(i) => ((key, i, 0), (key, i, 1)),
            None => ((key, 0, 0), (key, usize::MAX, 1)),
        };
        let gone: Vec<_> = self.web.range(lo..=hi).map(|(k, _)| *k).collect();
        for k in gone {
            self.web.remove(&k);
        }
    }

    /// A STUN or DTLS datagram a worker handed over.
    pub fn signal(&mut self, sig: crate::relay::worker::Signal) {
        let now = Instant::now();
        let Some(leg) = self.web.get_mut(&(sig.call, sig.stream, sig.side)) else {
            self.web_totals.signals_ignored += 1;
            return;
        };
        let act = leg.datagram(sig.from, &sig.data, now, &mut self.web_totals);
        self.apply_web(sig.call, sig.stream, sig.side, act);
    }

    /// Runs the DTLS retransmission timers that are due.
    pub fn web_tick(&mut self, now: Instant) {
        let mut due = Vec::new();
        for (k, leg) in self.web.iter_mut().filter(|(_, l)| l.in_handshake()) {
            let act = leg.tick(now, &mut self.web_totals);
            if !act.send.is_empty() || act.keys.is_some() || act.latch.is_some() {
                due.push((*k, act));
            }
        }
        for ((key, stream, side), act) in due {
            self.apply_web(key, stream, side, act);
        }
    }

    /// Carries out what an ICE/DTLS leg decided: datagrams out of the leg's
    /// port, its media peer, its SRTP contexts.
    fn apply_web(&mut self, key: CallKey, stream: usize, side: usize, act: Actions) {
        let Some(call) = self.by_key.get(&key).and_then(|id| self.calls.get(id)) else { return };
        let w = &self.workers[call.worker];
        for (to, data) in act.send {
            w.send(Cmd::Send { call: key, stream, side, to, data });
        }
        if let Some(peer) = act.latch {
            w.send(Cmd::Latch { call: key, stream, side, peer });
        }
        if let Some(keys) = act.keys {
            let ctx = |p: Result<srtp::Policy, srtp::Error>| {
                p.and_then(|p| Context::new(p, self.engine.clone())).map_err(|e| e.to_string())
            };
            match (ctx(keys.remote_policy()), ctx(keys.local_policy())) {
                (Ok(rx), Ok(tx)) => {
                    w.send(Cmd::Keys { call: key, stream, side, rx: Box::new(rx), tx: Box::new(tx) });
                    tracing::info!(
                        call_id = self.by_key.get(&key).map(String::as_str),
                        stream,
                        side,
                        "DTLS-SRTP keys agreed ({})",
                        keys.suite
                    );
                    if let Some(leg) = self.web.get_mut(&(key, stream, side)) {
                        leg.keyed = true;
                        leg.keys = Some(keys);
                    }
                    self.key_members(key, stream, side, true);
                }
                (Err(e), _) | (_, Err(e)) => {
                    tracing::error!(
                        call_id = self.by_key.get(&key).map(String::as_str),
                        "DTLS-SRTP keys unusable: {e}"
                    );
                }
            }
        }
        if let Some(why) = act.failed {
            tracing::warn!(call_id = self.by_key.get(&key).map(String::as_str), stream, side, "DTLS: {why}");
        }
    }

    /// Gives the streams bundled into a keyed transport (stream `owner`'s
    /// `side`) SRTP contexts of their own from its keys, once: a context is
    /// never made twice from one key for one stream (its index would start
    /// again, and the keystream with it). `fresh`: the transport's keys are
    /// new (a handshake just finished), so every member is keyed again.
    fn key_members(&mut self, key: CallKey, owner: usize, side: usize, fresh: bool) {
        let Some(keys) = self.web.get(&(key, owner, side)).and_then(|l| l.keys.as_ref()) else { return };
        let Some(call) = self.by_key.get(&key).and_then(|id| self.calls.get_mut(id)) else { return };
        for (j, s) in call.streams.iter_mut().enumerate() {
            let Some(s) = s else { continue };
            let d = &mut s.sides[side];
            if j == owner || d.bundle != Some(owner) || (d.bundle_keyed && !fresh) {
                continue;
            }
            let ctx = |p: Result<srtp::Policy, srtp::Error>| {
                p.and_then(|p| Context::new(p, self.engine.clone())).map_err(|e| e.to_string())
            };
            match (ctx(keys.remote_policy()), ctx(keys.local_policy())) {
                (Ok(rx), Ok(tx)) => {
                    self.workers[call.worker].send(Cmd::Keys {
                        call: key,
                        stream: j,
                        side,
                        rx: Box::new(rx),
                        tx: Box::new(tx),
                    });
                    d.bundle_keyed = true;
                }
                (Err(e), _) | (_, Err(e)) => tracing::error!(call = key, "DTLS-SRTP keys unusable: {e}"),
            }
        }
    }

    fn query(&mut self, req: &Request) -> Result<Value, CmdError> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        self.call_report(&call_id).ok_or_else(|| format!("Unknown call-id '{call_id}'"))
    }

    /// The `query` reply of a call (also the `delete` reply): per tag, its
    /// media with their ports, endpoints and counters; and totals.
    fn call_report(&self, call_id: &str) -> Option<Value> {
        let call = self.calls.get(call_id)?;
        let mut tags = Value::dict();
        let mut total_rtp = LegSnapshot::default();
        for side in 0..2 {
            let Some(tag) = &call.tags[side] else { continue };
            let mut medias = Vec::new();
            for (i, s) in call.streams.iter().enumerate() {
                let Some(s) = s else { continue };
                let d = &s.sides[side];
                let st = d.stats.snapshot();
                total_rtp.add(&st);
                let mut endpoint = Value::dict();
                if let Some((Some(rtp), _)) = d.peer {
                    endpoint = endpoint
                        .with("family", if rtp.is_ipv6() { "IPv6" } else { "IPv4" })
                        .with("address", rtp.ip().to_string())
                        .with("port", rtp.port() as u64);
                }
                let mut drops = Value::dict();
                for why in crate::relay::stats::Drop::ALL {
                    drops.insert(why.name(), st.drops[why as usize]);
                }
                let stream = Value::dict()
                    .with("local address", d.ip.to_string())
                    .with("local port", d.port as u64)
                    .with("endpoint", endpoint)
                    .with("rtcp-mux", if d.mux { "yes" } else { "no" })
                    .with("crypto suite", d.endpoint_key.as_ref().map_or("", |k| k.suite.name()))
                    .with(
                        "stats",
                        Value::dict()
                            .with("packets", st.packets_in)
                            .with("bytes", st.bytes_in)
                            .with("errors", st.dropped())
                            .with("packets lost", d.stats.rtp_lost())
                            .with("packets sent", st.packets_out)
                            .with("bytes sent", st.bytes_out)
                            .with("drops", drops)
                            .with("delay avg us", st.delay_ns_sum.checked_div(st.delay_count).unwrap_or(0) / 1000)
                            .with("delay max us", st.delay_ns_max / 1000)
                            .with("last packet", st.last_packet_ms / 1000),
                    );
                let mut media = Value::dict()
                    .with("index", (i + 1) as u64)
                    .with("type", s.media_type.as_str())
                    .with("protocol", d.proto.as_str())
                    .with("streams", vec![stream]);
                // The codec this side sends and receives when the stream is
                // transcoded (rtpengine reports codecs per media as well).
                if let Some((offerer, leg)) = &s.transcoding {
                    let (mine, other) =
                        if side == *offerer { (&leg.offerer, &leg.answerer) } else { (&leg.answerer, &leg.offerer) };
                    media.insert("codec", mine.to_string());
                    media.insert("transcoded to", other.to_string());
                }
                // ICE and DTLS towards this side (srtpgate's keys).
                if let Some(w) = self.web.get(&(call.key, i, side)) {
                    media.insert("transport state", w.state());
                    if let Some(peer) = w.ice_peer {
                        media.insert("ICE peer", peer.to_string());
                    }
                }
                // BUNDLE: the media whose transport this one shares.
                if let Some(p) = d.bundle.filter(|&p| p != i) {
                    media.insert("bundled with", (p + 1) as u64);
                    if let Some(w) = self.web.get(&(call.key, p, side)) {
                        media.insert("transport state", w.state());
                    }
                }
                medias.push(media);
            }
            tags.insert(
                tag,
                Value::dict().with("tag", tag.as_str()).with("created", unix(call.created)).with("medias", medias),
            );
        }
        let totals = Value::dict().with(
            "RTP",
            Value::dict()
                .with("packets", total_rtp.packets_in)
                .with("bytes", total_rtp.bytes_in)
                .with("errors", total_rtp.dropped()),
        );
        Some(
            srtpgate_ng::ok()
                .with("created", unix(call.created))
                .with("last signal", call.last_signal.elapsed().as_secs())
                .with("tags", tags)
                .with("totals", totals),
        )
    }

    /// One page of Call-IDs in order: `limit` of them (32 by default) from
    /// `offset`, and no more than fit in one reply datagram. `total` is
    /// every call; when the page ends before the last, `next offset` says
    /// where the next one starts.
    fn list(&self, req: &Request) -> Value {
        let limit = req.limit.map_or(LIST_PAGE, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let offset = req.offset.map_or(0, |o| usize::try_from(o).unwrap_or(usize::MAX));
        let budget = srtpgate_ng::MAX_REPLY - REPLY_ROOM;
        let mut used = 0;
        let mut calls: Vec<Value> = Vec::new();
        for id in self.calls.keys().skip(offset).take(limit) {
            // A string costs its length, its digits and a colon in bencode.
            used += id.len() + 8;
            if used > budget {
                break;
            }
            calls.push(Value::from(id.as_str()));
        }
        let next = offset.saturating_add(calls.len());
        let mut v = srtpgate_ng::ok().with("calls", calls).with("total", self.calls.len());
        if next < self.calls.len() {
            v.insert("next offset", next);
        }
        v
    }

    /// The `statistics` reply, in rtpengine's shape where it has one.
    fn statistics(&self) -> Value {
        let ended = self.media_totals();
        let managed = self.totals.calls_created;
        let stats: Vec<_> = self.workers.iter().map(|w| w.stats.clone()).collect();
        let h = crate::relay::stats::Histogram::of(&stats);
        let q = |x: f64| h.quantile_us(x).map_or(-1, |v| v as i64);
        Value::dict().with("result", "ok").with(
            "statistics",
            Value::dict()
                .with(
                    "currentstatistics",
                    Value::dict()
                        .with("sessionsown", self.calls.len())
                        .with("sessionsforeign", 0u64)
                        .with("sessionstotal", self.calls.len())
                        .with("transcodedmedia", 0u64),
                )
                .with(
                    "totalstatistics",
                    Value::dict()
                        .with("uptime", self.started.elapsed().as_secs())
                        .with("managedsessions", managed)
                        .with("rejectedsessions", self.totals.offers_refused)
                        .with("timeoutsessions", self.totals.calls_timed_out)
                        .with("finaltimeoutsessions", self.totals.calls_final_timeout)
                        .with("regularterminatedsessions", self.totals.calls_deleted)
                        .with("packetsrelayed", ended.packets_out)
                        .with("bytesrelayed", ended.bytes_out)
                        .with("errors", ended.dropped()),
                )
                .with(
                    "relaydelay",
                    Value::dict()
                        .with("packets", h.count())
                        .with("p50 us at most", q(0.5))
                        .with("p99 us at most", q(0.99))
                        .with("p999 us at most", q(0.999))
                        .with(
                            "bounds us",
                            crate::relay::stats::DELAY_BOUNDS_US.iter().map(|b| Value::from(*b)).collect::<Vec<_>>(),
                        )
                        .with("counts", h.buckets.iter().map(|c| Value::from(*c)).collect::<Vec<_>>()),
                ),
        )
    }

    /// Ends calls whose media and signalling stopped for the timeout, and
    /// calls older than the final timeout. Returns how many ended.
    pub fn expire(&mut self) -> usize {
        let now_ms = crate::relay::sys::now_ns() / 1_000_000;
        let mut dead = Vec::new();
        for (id, c) in &self.calls {
            let last_media = c
                .streams
                .iter()
                .flatten()
                .flat_map(|s| s.sides.iter().map(|d| d.stats.last_packet_ms.load(std::sync::atomic::Ordering::Relaxed)))
                .max()
                .unwrap_or(0);
            let media_idle = Duration::from_millis(now_ms.saturating_sub(last_media));
            let idle = media_idle.min(c.last_signal.elapsed());
            if idle > self.cfg.timeout {
                dead.push((id.clone(), false));
            } else if let Some(f) = self.cfg.final_timeout {
                if c.created.elapsed().unwrap_or_default() > f {
                    dead.push((id.clone(), true));
                }
            }
        }
        for (id, final_timeout) in &dead {
            tracing::info!(
                call_id = id.as_str(),
                "call ended by {}",
                if *final_timeout { "the final timeout" } else { "the media timeout" }
            );
            self.remove(id);
            if *final_timeout {
                self.totals.calls_final_timeout += 1;
            } else {
                self.totals.calls_timed_out += 1;
            }
        }
        dead.len()
    }

    /// Ends every call (at shutdown).
    pub fn clear(&mut self) {
        // A relay that stops keeps its calls in Redis for the next one.
        let keep = self.keep.take();
        let ids: Vec<String> = self.calls.keys().cloned().collect();
        for id in ids {
            self.remove(&id);
        }
        self.keep = keep;
    }

    /// Media counters of every call, live or ended: the workers' totals
    /// (each worker counts every packet it handled, whatever became of the
    /// call since).
    pub fn media_totals(&self) -> LegSnapshot {
        let mut t = LegSnapshot::default();
        for w in &self.workers {
            t.add(&w.stats.total.snapshot());
        }
        t
    }
}

/// The management page's view of the call table (docs/MANAGEMENT.md).
impl<E: Engine + Clone + 'static> Calls<E>
where
    E::Keys: 'static,
{
    /// One row per call, for the page's table.
    pub fn ui_rows(&self) -> Vec<srtpgate_ui::CallRow> {
        let now = SystemTime::now();
        self.calls.iter().map(|(id, c)| self.ui_row(id, c, now)).collect()
    }

    fn ui_row(&self, call_id: &str, c: &Call, now: SystemTime) -> srtpgate_ui::CallRow {
        use srtpgate_ui::{CallRow, Direction, LegRow};
        let mut row = CallRow {
            call_id: call_id.to_string(),
            from_tag: c.tags[0].clone().unwrap_or_default(),
            to_tag: c.tags[1].clone().unwrap_or_default(),
            age_s: now.duration_since(c.created).map_or(0, |d| d.as_secs()),
            worker: c.worker,
            answered: c.answered,
            ..Default::default()
        };
        let mut hist =
            crate::relay::stats::Histogram { buckets: vec![0; crate::relay::stats::DELAY_BOUNDS_US.len() + 1] };
        let mut codecs = Vec::new();
        for side in 0..2 {
            let mut leg = LegRow { tag: c.tags[side].clone().unwrap_or_default(), ..Default::default() };
            for (k, st) in c.streams.iter().flatten().enumerate() {
                let d = &st.sides[side];
                let snap = d.stats.snapshot();
                leg.packets_in += snap.packets_in;
                leg.packets_out += snap.packets_out;
                leg.dropped += snap.dropped();
                leg.lost += d.stats.rtp_lost();
                for why in crate::relay::stats::Drop::ALL {
                    let n = snap.drops[why as usize];
                    if n > 0 {
                        *row.drops.entry(why.name()).or_default() += n;
                    }
                }
                for (b, n) in hist.buckets.iter_mut().zip(d.stats.histogram().buckets) {
                    *b += n;
                }
                if k == 0 {
                    leg.local = SocketAddr::new(d.ip, d.port).to_string();
                    leg.peer = match d.peer {
                        Some((Some(a), _)) => a.to_string(),
                        _ => String::new(),
                    };
                    leg.suite = match (&d.endpoint_key, d.srtp) {
                        (Some(k), _) => k.suite.name().to_string(),
                        (None, true) => String::new(),
                        (None, false) => "RTP".into(),
                    };
                    let block = d.stats.blocked();
                    leg.direction =
                        Direction::of(block & crate::relay::stats::MUTED != 0, block & crate::relay::stats::HELD != 0)
                            .name();
                    leg.codec = match &st.transcoding {
                        Some((offerer, l)) => {
                            row.transcoded = true;
                            if side == *offerer {
                                l.offerer.to_string()
                            } else {
                                l.answerer.to_string()
                            }
                        }
                        None => st.offered.from_offerer.first().map(|f| f.to_string()).unwrap_or_default(),
                    };
                    if !leg.codec.is_empty() && !codecs.contains(&leg.codec) {
                        codecs.push(leg.codec.clone());
                    }
                }
            }
            row.packets_in += leg.packets_in;
            row.packets_out += leg.packets_out;
            row.dropped += leg.dropped;
            row.lost += leg.lost;
            if c.tags[side].is_some() || side == 0 {
                row.legs.push(leg);
            }
        }
        row.codecs = codecs.join(" ↔ ");
        row.delay_p50_us = hist.quantile_or_over_us(0.5);
        row.delay_p99_us = hist.quantile_or_over_us(0.99);
        row
    }

    /// Everything the relay keeps about one call, for the page's detail view.
    pub fn ui_detail(&self, call_id: &str) -> Option<serde_json::Value> {
        use serde_json::json;
        let c = self.calls.get(call_id)?;
        let row = self.ui_row(call_id, c, SystemTime::now());
        let mut hist =
            crate::relay::stats::Histogram { buckets: vec![0; crate::relay::stats::DELAY_BOUNDS_US.len() + 1] };
        let mut streams = Vec::new();
        for (i, st) in c.streams.iter().enumerate() {
            let Some(st) = st else { continue };
            let mut sides = Vec::new();
            for side in 0..2 {
                let d = &st.sides[side];
                let snap = d.stats.snapshot();
                for (b, n) in hist.buckets.iter_mut().zip(d.stats.histogram().buckets) {
                    *b += n;
                }
                let drops: serde_json::Map<String, serde_json::Value> = crate::relay::stats::Drop::ALL
                    .iter()
                    .map(|w| (w.name().to_string(), json!(snap.drops[*w as usize])))
                    .collect();
                let block = d.stats.blocked();
                sides.push(json!({
                    "tag": c.tags[side].clone().unwrap_or_default(),
                    "local": SocketAddr::new(d.ip, d.port).to_string(),
                    "peer": match d.peer { Some((Some(a), _)) => a.to_string(), _ => String::new() },
                    "protocol": d.proto,
                    "suite": d.endpoint_key.as_ref().map_or(if d.srtp { "" } else { "RTP" }, |k| k.suite.name()),
                    "rtcp_mux": d.mux,
                    "direction": srtpgate_ui::Direction::of(block & crate::relay::stats::MUTED != 0, block & crate::relay::stats::HELD != 0).name(),
                    "packets_in": snap.packets_in, "bytes_in": snap.bytes_in,
                    "packets_out": snap.packets_out, "bytes_out": snap.bytes_out,
                    "rtp_received": d.stats.rtp_received.load(std::sync::atomic::Ordering::Relaxed),
                    "rtp_lost": d.stats.rtp_lost(),
                    "drops": drops,
                    "delay_avg_us": snap.delay_ns_sum.checked_div(snap.delay_count).unwrap_or(0) / 1000,
                    "delay_max_us": snap.delay_ns_max / 1000,
                    "last_packet_ms": snap.last_packet_ms,
                }));
            }
            streams.push(json!({"index": i + 1, "type": st.media_type, "sides": sides}));
        }
        Some(json!({
            "call": row,
            "streams": streams,
            "histogram": {"bounds_us": crate::relay::stats::DELAY_BOUNDS_US, "counts": hist.buckets},
        }))
    }

    /// Ends a call from the management page.
    pub fn end_call(&mut self, call_id: &str) -> Result<(), String> {
        if !self.calls.contains_key(call_id) {
            return Err(format!("no call '{call_id}'"));
        }
        self.remove(call_id);
        self.totals.calls_ended_by_operator += 1;
        Ok(())
    }

    /// Sets the direction of the leg tagged `tag` (every stream of it).
    pub fn set_direction(&mut self, call_id: &str, tag: &str, dir: srtpgate_ui::Direction) -> Result<(), String> {
        let c = self.calls.get_mut(call_id).ok_or_else(|| format!("no call '{call_id}'"))?;
        let side = (0..2)
            .find(|&s| c.tags[s].as_deref() == Some(tag))
            .ok_or_else(|| format!("no leg '{tag}' in call '{call_id}'"))?;
        let (muted, held) = dir.blocks();
        let bits =
            if muted { crate::relay::stats::MUTED } else { 0 } | if held { crate::relay::stats::HELD } else { 0 };
        c.block[side] = bits;
        for st in c.streams.iter().flatten() {
            st.sides[side].stats.block.store(bits, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    /// Takes no new calls (true) or takes them again.
    pub fn set_draining(&mut self, on: bool) {
        self.draining = on;
    }

    /// Whether new calls are refused.
    pub fn draining(&self) -> bool {
        self.draining
    }

    /// Workers' counters, for the page's engine view.
    pub fn worker_stats(&self) -> Vec<(Arc<crate::relay::stats::WorkerStats>, bool, bool)> {
        let n = self.workers.len();
        self.workers
            .iter()
            .enumerate()
            .map(|(i, w)| (w.stats.clone(), w.alive(), i >= n - self.cfg.transcode_workers.min(n)))
            .collect()
    }
}

impl Call {
    /// Whether any m-line of the call holds port pairs.
    fn holds_ports(&self) -> bool {
        self.streams.iter().any(Option::is_some)
    }
}

/// An SDP for a reply must leave room in the datagram for the rest of it.
/// The mid header extension of a bundled side, for its worker.
fn mid_ext(d: &Side) -> Option<(u8, Vec<u8>)> {
    Some((d.mid_ext.filter(|_| d.bundle.is_some())?, d.transport.mid.clone()?.into_bytes()))
}

/// The RTP payload types of an m-line.
fn pts_of(m: &Media) -> Vec<u8> {
    m.formats().iter().filter_map(|f| f.parse().ok()).filter(|&p: &u8| p < 128).collect()
}

fn sdp_fits_reply(sdp: &str) -> Result<(), CmdError> {
    let most = srtpgate_ng::MAX_REPLY - REPLY_ROOM;
    if sdp.len() > most {
        return Err(format!("rewritten SDP of {} bytes would not fit in a reply datagram (at most {most})", sdp.len()));
    }
    Ok(())
}

/// Whether two crypto lines give the same keys and parameters (the tag, a
/// name for the line, does not count: a context is kept across a new tag).
fn same_key(a: &Option<CryptoAttr>, b: &Option<CryptoAttr>) -> bool {
    let material = |c: &CryptoAttr| {
        let keys: Vec<_> = c.keys.iter().map(|k| (k.key_salt.to_vec(), k.lifetime, k.mki)).collect();
        (c.suite, keys, c.session_params.clone())
    };
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => material(x) == material(y),
        _ => false,
    }
}

/// With the `SIP-source-address` flag, the endpoint's address is where its
/// SIP message came from (`received-from`), not what its SDP says (NAT).
fn sip_source(req: &Request) -> Option<IpAddr> {
    if !req.flags.sip_source_address {
        return None;
    }
    req.received_from.as_ref().and_then(|(_, a)| a.parse().ok())
}

/// Whether the relay runs ICE-lite towards the side that receives this
/// message's SDP: as the `ICE` option says, else when the SDP it answers or
/// forwards (`had_ice`) spoke ICE.
fn runs_ice(req: &Request, had_ice: bool) -> bool {
    let on = match req.ice {
        Some(Ice::Remove) => false,
        Some(Ice::Force | Ice::ForceRelay | Ice::Optional) => true,
        Some(Ice::Default) | None => had_ice,
    };
    on && !req.flags.reject_ice
}

/// The suites allowed by the configuration and the request's SDES options.
fn allowed_suites(configured: &[Suite], sdes: &[Sdes]) -> Vec<Suite> {
    let only: Vec<Suite> =
        sdes.iter().filter_map(|s| if let Sdes::Only(n) = s { n.parse().ok() } else { None }).collect();
    let no: Vec<Suite> = sdes.iter().filter_map(|s| if let Sdes::No(n) = s { n.parse().ok() } else { None }).collect();
    let base: Vec<Suite> = if only.is_empty() { configured.to_vec() } else { only };
    base.into_iter().filter(|s| !no.contains(s)).collect()
}

/// Applies the SDES session-parameter options to a generated key.
fn with_params(mut k: CryptoAttr, sdes: &[Sdes]) -> CryptoAttr {
    for o in sdes {
        let p = match o {
            Sdes::UnencryptedSrtp => "UNENCRYPTED_SRTP",
            Sdes::UnencryptedSrtcp => "UNENCRYPTED_SRTCP",
            _ => continue,
        };
        if !k.session_params.iter().any(|x| x == p) {
            k.session_params.push(p.to_string());
        }
    }
    if sdes.contains(&Sdes::Lifetime) {
        for key in &mut k.keys {
            key.lifetime = Some(1 << 31);
        }
    }
    k
}

/// The two transcoders of a stream: (offerer to answerer, answerer to
/// offerer).
fn transcoders(
    t: &Transcoding,
    codecs: &Registry,
    complexity: Option<u8>,
    plc: i32,
    dtmf_delay_ms: u32,
) -> Result<(Box<Transcoder>, Box<Transcoder>), CmdError> {
    let find = |f: &Format| codecs.find(&f.name, f.clock_rate, f.channels).ok_or_else(|| format!("no codec for {f}"));
    let (a, b) = (find(&t.offerer)?, find(&t.answerer)?);
    // Both legs' codecs work at one PCM rate, so nothing is resampled.
    let rate = srtpgate_codec::common_pcm_rate(&a.0.codecs()[a.1], &b.0.codecs()[b.1])
        .ok_or_else(|| format!("{} and {} share no PCM rate", t.offerer, t.answerer))?;
    let instance = |(p, i): &(std::sync::Arc<srtpgate_codec::Plugin>, usize), fmtp: &Option<String>, uses| {
        p.instance_for(*i, fmtp.as_deref(), Some(rate), uses).map_err(|e| e.to_string())
    };
    // One direction: decode `from` (its own fmtp), encode `to` (with the
    // fmtp `set` chose and the bit rate of `set`/`transcode`); DTMF from the sender's telephone-event `te.0` to
    // the receiver's `te.1`: passed, detected in the audio, or played.
    let direction = |from: (&Format, &_),
                     to: (&Format, &_),
                     fmtp: &Option<String>,
                     bitrate: Option<u32>,
                     ptime,
                     te: (Option<u8>, Option<u8>)| {
        let detect = match (te, codecs.dtmf_detector()) {
            ((None, Some(out_pt)), Some(p)) => Some(Detect {
                detector: srtpgate_codec::dtmf::Detector::new(p, rate).map_err(|e| e.to_string())?,
                out_pt,
                delay_ms: dtmf_delay_ms,
            }),
            ((None, Some(_)), None) => {
                tracing::warn!("no DTMF detector loaded (the spandsp plugin has one): in-band tones pass as audio");
                None
            }
            _ => None,
        };
        let mut t = Transcoder::new(Direction {
            decoder: instance(from.1, &from.0.fmtp, abi::USE_DECODE)?,
            in_pt: from.0.pt,
            encoder: instance(to.1, fmtp, abi::USE_ENCODE)?,
            out_pt: to.0.pt,
            out_ptime: ptime,
            dtmf: te.0.zip(te.1),
            detect,
            tones_from: if te.1.is_none() { te.0 } else { None },
        })?;
        // Codecs without these controls ignore them.
        if let Some(c) = complexity {
            t.control(abi::CTL_COMPLEXITY, c as i32).map_err(|e| e.to_string())?;
        }
        if let Some(b) = bitrate {
            t.control(abi::CTL_BITRATE, b.min(i32::MAX as u32) as i32).map_err(|e| e.to_string())?;
        }
        // Likewise decoders with one kind of concealment; a decoder that
        // cannot switch keeps its own (the call goes on).
        if let Err(e) = t.control_decoder(abi::CTL_PLC, plc) {
            tracing::warn!("decoder concealment not set: {e}");
        }
        Ok::<_, CmdError>(t)
    };
    let (te_o, te_a) = (t.dtmf.0.as_ref().map(|f| f.pt), t.dtmf.1.as_ref().map(|f| f.pt));
    let (o, n) = ((&t.offerer, &a), (&t.answerer, &b));
    let to_answerer = direction(o, n, &t.fmtp.1, t.bitrate.1, t.ptime.0, (te_o, te_a))?;
    let to_offerer = direction(n, o, &t.fmtp.0, t.bitrate.0, t.ptime.1, (te_a, te_o))?;
    Ok((Box::new(to_answerer), Box::new(to_offerer)))
}

/// A context for a key agreed in SDP.
fn context<E: Engine>(k: &CryptoAttr, engine: E, libsrtp_aes192_kdf: bool) -> Result<Context<E>, CmdError> {
    let mut p = k.policy().map_err(|e| format!("a=crypto tag {}: {e}", k.tag))?;
    p.libsrtp_aes192_kdf = libsrtp_aes192_kdf;
    Context::new(p, engine).map_err(|e| format!("a=crypto tag {}: {e}", k.tag))
}

/// Points an m-line at the relay's side `d`: port, protocol, `c=` (where the
/// section has its own), the relay's crypto lines, `a=rtcp` and `a=rtcp-mux`;
/// ICE attributes go (the relay does not run ICE).
fn rewrite_media(m: &mut Media, d: &Side, proto: &str, keys: &[CryptoAttr], mux: bool, req: &Request) {
    m.set_port(d.port);
    m.set_proto(proto);
    if m.connection().is_some() {
        m.set_connection(d.ip);
    }
    m.remove_ice();
    m.remove_crypto();
    for k in keys {
        m.add_crypto(k);
    }
    m.remove_attrs("rtcp");
    if !req.flags.no_rtcp_attribute {
        m.set_rtcp(d.port + 1, req.flags.full_rtcp_attribute.then_some(d.ip));
    }
    m.remove_attrs("rtcp-mux");
    if mux {
        m.add_attr("rtcp-mux", None);
    }
}

/// Session-level rewrites: the session `c=` (always, when present, and
/// inserted when a relayed m-line has no `c=`), the origin on request, and
/// ICE attributes.
fn rewrite_session(sdp: &mut Sdp, relay_ip: IpAddr, req: &Request) {
    let uncovered = sdp.media().iter().any(|m: &Media| m.port() != 0 && m.connection().is_none());
    if sdp.connection().is_some() || uncovered {
        sdp.set_connection(relay_ip);
    }
    if req.replace.origin || req.replace.origin_full {
        sdp.set_origin_address(relay_ip);
    }
    if req.replace.sdp_version || req.replace.force_increment_sdp_ver {
        sdp.bump_version();
    }
    for a in ["ice-ufrag", "ice-pwd", "ice-options", "ice-lite"] {
        sdp.remove_session_attrs(a);
    }
}
