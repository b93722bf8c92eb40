//! The call table: NG requests in, replies and [`Command`]s out.
//!
//! [`Table::handle`] routes a request to its command (`offer.rs`,
//! `answer.rs`, `report.rs`), adds the warnings of what it does not act on
//! (`ignored.rs`) and counts it. Calls end by `delete`, by the timeouts
//! ([`Table::expire`]) or from the management page; each ending releases its
//! ports and queues the commands that close its streams.

use crate::call::{Call, CallKey};
use crate::command::{Command, Resources};
use crate::ignored;
use crate::interface::Interfaces;
use crate::keep::Keeper;
use crate::web_leg::{WebLeg, WebTotals};
use srtp::Suite;
use srtpgate_codec::Registry;
use srtpgate_ng::{Command as Ng, Request, Value};
use srtpgate_webrtc::dtls::Identity;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Distinct error labels counted; further reasons count as `other`.
const MAX_ERROR_LABELS: usize = 256;

/// Why a request was refused: the text goes into the reply's
/// `error-reason`.
pub type Refusal = String;

/// The moment a request or a timer is handled, on both clocks: the
/// monotonic one for ages, the wall one for replies and for the workers'
/// last-packet times.
#[derive(Clone, Copy, Debug)]
pub struct Now {
    /// Monotonic.
    pub mono: Instant,
    /// Wall clock.
    pub wall: SystemTime,
}

impl Now {
    /// Milliseconds since the epoch on the wall clock.
    pub fn unix_ms(&self) -> u64 {
        self.wall.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
}

/// Bounds on what requests and the calls they create may hold.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Longest Call-ID, tag, via-branch or label (bytes).
    pub max_id_length: usize,
    /// Longest SDP body (bytes).
    pub max_sdp_length: usize,
    /// Most m-lines in one SDP.
    pub max_media: usize,
    /// Most calls without a media port.
    pub max_sessions_without_media: usize,
    /// Most calls.
    pub max_sessions: usize,
    /// New calls wait while the workers are busier than this share of
    /// their time (0–1).
    pub max_load: Option<f64>,
    /// ... or while they receive more bytes per second than this.
    pub max_bandwidth: Option<u64>,
    /// ... or while fewer files than this are left for media sockets.
    pub min_free_files: Option<usize>,
}

/// Why a new call was refused for the relay's load: rtpengine's load-limit
/// kinds (a proxy's module tries its next relay on them), and a drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LoadLimit {
    /// `max-sessions`.
    Sessions,
    /// `max-load`.
    Load,
    /// `max-bandwidth`.
    Bandwidth,
    /// `min-free-files`.
    Files,
    /// A drain from the management page.
    Draining,
}

impl LoadLimit {
    /// Every kind, for the metrics.
    pub const ALL: [LoadLimit; 5] =
        [LoadLimit::Sessions, LoadLimit::Load, LoadLimit::Bandwidth, LoadLimit::Files, LoadLimit::Draining];

    /// The label of `srtpgate_ng_load_limited_total`.
    pub fn name(self) -> &'static str {
        match self {
            LoadLimit::Sessions => "sessions",
            LoadLimit::Load => "load",
            LoadLimit::Bandwidth => "bandwidth",
            LoadLimit::Files => "files",
            LoadLimit::Draining => "draining",
        }
    }

    /// The reply's `message` under `supports: [load limit]`: rtpengine's
    /// text for the kind. Files use the text of rtpengine's port shortage,
    /// which Kamailio's and OpenSIPS's modules also fail over on.
    pub fn message(self) -> &'static str {
        match self {
            LoadLimit::Sessions | LoadLimit::Draining => "Parallel session limit reached",
            LoadLimit::Load => "Load limit exceeded",
            LoadLimit::Bandwidth => "Bandwidth limit exceeded",
            LoadLimit::Files => "Ran out of ports",
        }
    }

    /// The `error-reason` without `supports: [load limit]`: rtpengine's
    /// one text for every load kind (OpenSIPS's module, which never sends
    /// `supports`, matches it to fail over), the port shortage's for files.
    pub fn error_reason(self) -> &'static str {
        match self {
            LoadLimit::Files => "Ran out of ports",
            _ => "Parallel session limit reached",
        }
    }
}

/// What the table is configured with.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The relay's logical interfaces (the first is the default).
    pub interfaces: Interfaces,
    /// Bounds.
    pub limits: Limits,
    /// Suites offered to a plain-RTP offerer's peer.
    pub sdes_suites: Vec<Suite>,
    /// libsrtp < 2.8 AES-192 key derivation.
    pub libsrtp_aes192_kdf: bool,
    /// Encoder complexity (0–10), for codecs that have one.
    pub codec_complexity: Option<u8>,
    /// Decoders' concealment where a plugin offers a choice.
    pub plc: i32,
    /// Delay line of directions that detect DTMF, ms.
    pub dtmf_delay_ms: u32,
    /// Media workers.
    pub workers: usize,
    /// The last this many workers carry the transcoded calls (0: all share).
    pub transcode_workers: usize,
    /// Media timeout.
    pub timeout: Duration,
    /// Longest call (`None`: no limit).
    pub final_timeout: Option<Duration>,
    /// Call recording.
    pub recording: crate::recording::RecordingSettings,
    /// Call quality and the MOS it gives (`None`: off).
    pub quality: Option<srtpgate_quality::Model>,
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
    /// reply's warning), by key: a bounded set of names.
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
    /// Calls kept in Redis that could not be resumed.
    pub calls_not_resumed: u64,
    /// New calls refused for the relay's load, by kind.
    pub load_limited: BTreeMap<LoadLimit, u64>,
    /// Recordings started.
    pub recordings_started: u64,
    /// Call quality.
    pub quality: crate::quality::QualityTotals,
}

/// The call table.
pub struct Table {
    pub(crate) cfg: Settings,
    /// Codecs the relay transcodes with.
    pub(crate) codecs: Arc<Registry>,
    /// The relay's DTLS certificate.
    pub(crate) identity: Arc<Identity>,
    /// By Call-ID, in order (so that `list` pages follow one order).
    pub(crate) calls: BTreeMap<String, Call>,
    /// Calls by key (the workers name calls by key).
    pub(crate) by_key: HashMap<CallKey, String>,
    /// Calls that hold no media port (every m-line rejected).
    pub(crate) without_media: usize,
    /// Port pairs the calls hold.
    pub(crate) pairs: usize,
    next_key: CallKey,
    /// The next fork's key.
    pub(crate) next_fork: crate::command::ForkKey,
    next_worker: usize,
    next_tc_worker: usize,
    /// Warnings of the request being handled beyond the parser's, for its
    /// reply.
    pub(crate) notes: Vec<String>,
    /// The request being handled was refused by a limit on new calls: with
    /// `supports: [load limit]` its reply is `result: load limit`.
    pub(crate) load_limited: Option<LoadLimit>,
    /// New calls are refused (drain, from the management page).
    draining: bool,
    /// The running transport of every ICE/DTLS leg: (call, stream, party).
    pub(crate) web: BTreeMap<(CallKey, usize, usize), WebLeg>,
    /// Counters of the ICE/DTLS legs.
    pub web_totals: WebTotals,
    /// Counters.
    pub totals: Totals,
    /// When the table started.
    pub started: Instant,
    /// Commands for the data plane, drained by the caller.
    commands: VecDeque<Command>,
    /// Steps for the recorder, drained by the caller.
    pub(crate) recorder: VecDeque<crate::recording::RecorderEvent>,
    /// The calls kept for a restart (Redis), when on.
    pub(crate) keep: Option<Keeper>,
}

impl Table {
    /// A call table with `codecs` and the DTLS `identity`.
    pub fn new(cfg: Settings, codecs: Arc<Registry>, identity: Arc<Identity>, now: Now) -> Table {
        Table {
            cfg,
            codecs,
            identity,
            calls: BTreeMap::new(),
            by_key: HashMap::new(),
            without_media: 0,
            pairs: 0,
            next_key: 1,
            next_fork: 1,
            next_worker: 0,
            next_tc_worker: 0,
            notes: Vec::new(),
            load_limited: None,
            draining: false,
            web: BTreeMap::new(),
            web_totals: WebTotals::default(),
            totals: Totals::default(),
            started: now.mono,
            commands: VecDeque::new(),
            recorder: VecDeque::new(),
            keep: None,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.cfg
    }

    /// The codecs.
    pub fn codecs(&self) -> &Arc<Registry> {
        &self.codecs
    }

    /// Calls now.
    pub fn len(&self) -> usize {
        self.calls.len()
    }

    /// No calls.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Calls that hold no media port.
    pub fn without_media(&self) -> usize {
        self.without_media
    }

    /// Port pairs held by the calls.
    pub fn port_pairs(&self) -> usize {
        self.pairs
    }

    /// The Call-IDs, in order.
    pub fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.calls.keys().map(String::as_str)
    }

    /// The next command for the data plane, in the order they were made.
    pub fn poll_command(&mut self) -> Option<Command> {
        self.commands.pop_front()
    }

    pub(crate) fn command(&mut self, c: Command) {
        self.commands.push_back(c);
    }

    /// Checks what the table counts beside its calls against the calls.
    pub fn check_invariants(&self) -> Result<(), String> {
        let without = self.calls.values().filter(|c| !c.holds_ports()).count();
        if without != self.without_media {
            return Err(format!("{without} calls without media, counted {}", self.without_media));
        }
        let pairs = 2 * self.calls.values().flat_map(|c| c.streams.iter().flatten()).count()
            + self.calls.values().flat_map(|c| c.subscriptions.iter().map(|s| s.forks.len())).sum::<usize>();
        if pairs != self.pairs {
            return Err(format!("{pairs} port pairs held by calls, {} counted", self.pairs));
        }
        if self.by_key.len() != self.calls.len() {
            return Err(format!("{} keys for {} calls", self.by_key.len(), self.calls.len()));
        }
        for (key, _, _) in self.web.keys() {
            if !self.by_key.contains_key(key) {
                return Err(format!("an ICE/DTLS leg of call {key}, which is gone"));
            }
        }
        Ok(())
    }

    /// Handles one request; the reply dictionary (ok or error). The data
    /// plane's part is queued for [`poll_command`](Self::poll_command).
    pub fn handle(&mut self, req: &Request, now: Now, res: &mut dyn Resources) -> Value {
        *self.totals.commands.entry(req.command.name()).or_default() += 1;
        self.notes.clear();
        self.load_limited = None;
        let r = self.check_lengths(req).and_then(|()| match req.command {
            Ng::Ping => Ok(Value::dict().with("result", "pong")),
            Ng::Offer => self.offer(req, now, res),
            Ng::Answer => self.answer(req, now, res),
            Ng::Delete => self.delete(req, now, res),
            Ng::Query => self.query(req, now),
            Ng::List => Ok(self.list(req)),
            Ng::Statistics => Ok(self.statistics(now, res)),
            Ng::StartRecording => self.start_recording(req, now),
            Ng::StopRecording => self.stop_recording(req, now),
            Ng::PauseRecording => self.pause_recording(req, now),
            Ng::SubscribeRequest => self.subscribe_request(req, res),
            Ng::SubscribeAnswer => self.subscribe_answer(req),
            Ng::Unsubscribe => self.unsubscribe(req, res),
            Ng::PlayMedia => self.play_media(req, res),
            Ng::StopMedia => self.stop_media(req),
            Ng::PlayDtmf => self.play_dtmf(req),
            Ng::BlockMedia
            | Ng::UnblockMedia
            | Ng::SilenceMedia
            | Ng::UnsilenceMedia
            | Ng::BlockDtmf
            | Ng::UnblockDtmf => self.media_control(req),
        });
        match r {
            Ok(mut v) => {
                if matches!(req.command, Ng::Offer | Ng::Answer) {
                    self.record_after_offer_answer(req, now, &mut v);
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
                if req.command == Ng::Offer {
                    self.totals.offers_refused += 1;
                }
                self.count_error(&e);
                tracing::info!(
                    command = req.command.name(),
                    call_id = req.call_id.as_deref().unwrap_or(""),
                    "refused: {e}"
                );
                if let Some(kind) = self.load_limited.filter(|_| req.supports_load_limit) {
                    // rtpengine's `load limit` extension: the module tries
                    // its next relay instead of failing the call.
                    return Value::dict().with("result", "load limit").with("message", kind.message());
                }
                srtpgate_ng::error(&e)
            }
        }
    }

    /// Refuses identifiers and bodies over the configured lengths, before
    /// anything is looked up or kept.
    fn check_lengths(&self, req: &Request) -> Result<(), Refusal> {
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

    /// A new call of `call_id` with its first party's tag, on a worker of
    /// the pass-through pool; refused at the limits on new calls.
    pub(crate) fn admit(&mut self, tag: &str, now: Now, res: &dyn Resources) -> Result<Call, Refusal> {
        if let Some((kind, why)) = self.over_limit(res) {
            tracing::warn!("new call refused: {why}");
            *self.totals.load_limited.entry(kind).or_default() += 1;
            self.load_limited = Some(kind);
            return Err(kind.error_reason().to_string());
        }
        let worker = self.place(res)?;
        Ok(Call {
            key: 0,
            worker,
            created: now.wall,
            last_signal: now.mono,
            tags: [Some(tag.to_string()), None],
            labels: [None, None],
            block: [0; 2],
            controls: Default::default(),
            quality: Default::default(),
            recording: None,
            recording_target: Default::default(),
            metadata: None,
            subscriptions: Vec::new(),
            streams: Vec::new(),
            answered: false,
            offerer: 0,
        })
    }

    /// The first load limit a new call would pass, with what was measured
    /// (rtpengine's order: sessions, load, bandwidth; then files).
    fn over_limit(&self, res: &dyn Resources) -> Option<(LoadLimit, String)> {
        let l = &self.cfg.limits;
        if self.draining {
            return Some((LoadLimit::Draining, "draining: this relay takes no new calls".into()));
        }
        if self.calls.len() >= l.max_sessions {
            return Some((LoadLimit::Sessions, format!("{} calls, max-sessions {}", self.calls.len(), l.max_sessions)));
        }
        if l.max_load.is_none() && l.max_bandwidth.is_none() && l.min_free_files.is_none() {
            return None;
        }
        let load = res.load();
        if let Some(max) = l.max_load.filter(|&m| load.busy >= m) {
            return Some((LoadLimit::Load, format!("workers busy {:.2} of their time, max-load {max}", load.busy)));
        }
        if let Some(max) = l.max_bandwidth.filter(|&m| load.bytes_per_s >= m) {
            return Some((LoadLimit::Bandwidth, format!("{} bytes/s received, max-bandwidth {max}", load.bytes_per_s)));
        }
        match (l.min_free_files, load.free_files) {
            (Some(min), Some(free)) if free < min => {
                Some((LoadLimit::Files, format!("{free} files left for media sockets, min-free-files {min}")))
            }
            _ => None,
        }
    }

    /// Puts a new call in the table under a fresh key.
    pub(crate) fn insert(&mut self, call_id: String, mut call: Call) -> CallKey {
        let key = self.next_key;
        self.next_key += 1;
        call.key = key;
        if !call.holds_ports() {
            self.without_media += 1;
        }
        self.pairs += 2 * call.streams.iter().flatten().count();
        self.by_key.insert(key, call_id.clone());
        self.calls.insert(call_id, call);
        key
    }

    /// Round robin over the running workers of the pass-through pool (any
    /// running worker when none of those runs).
    pub(crate) fn place(&mut self, res: &dyn Resources) -> Result<usize, Refusal> {
        let worker = self
            .pick(self.pass_pool(), self.next_worker, res)
            .or_else(|| self.pick(0..self.cfg.workers, 0, res))
            .ok_or("no media worker is running")?;
        self.next_worker = worker + 1;
        Ok(worker)
    }

    /// The workers that new calls go to: all, or those before the
    /// transcoding pool.
    fn pass_pool(&self) -> std::ops::Range<usize> {
        let n = self.cfg.workers;
        0..n - self.cfg.transcode_workers.min(n.saturating_sub(1))
    }

    /// The workers that carry transcoded calls (empty when all share).
    pub(crate) fn tc_pool(&self) -> std::ops::Range<usize> {
        self.pass_pool().end..self.cfg.workers
    }

    /// The first running worker of `pool` from worker `next` on.
    fn pick(&self, pool: std::ops::Range<usize>, next: usize, res: &dyn Resources) -> Option<usize> {
        let n = pool.len();
        let from = next.saturating_sub(pool.start);
        (0..n).map(|k| pool.start + (from + k) % n).find(|&w| res.worker_alive(w))
    }

    /// Hands a call that now transcodes to a worker of the transcoding pool.
    pub(crate) fn move_to_transcoding(&mut self, call_id: &str, res: &dyn Resources) {
        if self.tc_pool().is_empty() {
            // No transcoding pool: every worker transcodes.
            return;
        }
        let Some(to) = self.pick(self.tc_pool(), self.next_tc_worker, res) else {
            tracing::warn!(call_id, "no transcoding worker is running: the call stays where it is");
            return;
        };
        self.next_tc_worker = to + 1;
        let Some(call) = self.calls.get_mut(call_id) else { return };
        let (worker, key) = (call.worker, call.key);
        call.worker = to;
        self.totals.calls_moved += 1;
        self.command(Command::MoveCall { worker, call: key, to });
    }

    fn delete(&mut self, req: &Request, now: Now, res: &mut dyn Resources) -> Result<Value, Refusal> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        if !self.calls.contains_key(&call_id) {
            // The modules repeat deletes (a 486 gives two): not an error.
            return Ok(srtpgate_ng::ok().with("warning", format!("call '{call_id}' not found (already deleted?)")));
        }
        let reply = self.call_report(&call_id, now).unwrap_or_else(srtpgate_ng::ok);
        // rtpengine's delete discards the recording with `discard-recording`.
        if req.record_call == Some(srtpgate_ng::RecordCall::Discard) {
            self.discard_recording(&call_id);
        }
        self.remove(&call_id, res);
        self.totals.calls_deleted += 1;
        tracing::info!(call_id, "call deleted");
        Ok(reply)
    }

    /// Ends a call: its ports are released, its worker closes its streams.
    pub(crate) fn remove(&mut self, call_id: &str, res: &mut dyn Resources) {
        let Some(call) = self.calls.remove(call_id) else { return };
        self.finish_quality(&call);
        self.stop_recording_of_removed(&call);
        self.forget_kept(call_id, call.key);
        if !call.holds_ports() {
            self.without_media -= 1;
        }
        self.by_key.remove(&call.key);
        self.remove_web(call.key, None);
        self.command(Command::RemoveCall { worker: call.worker, call: call.key });
        self.release_subscriptions(&call, res);
        for s in call.streams.iter().flatten() {
            self.pairs -= 2;
            for d in &s.legs {
                res.release(d.pair());
            }
        }
    }

    /// Drops the ICE/DTLS state of a call (one stream, or all).
    pub(crate) fn remove_web(&mut self, key: CallKey, stream: Option<usize>) {
        let (lo, hi) = match stream {
            Some(i) => ((key, i, 0), (key, i, 1)),
            None => ((key, 0, 0), (key, usize::MAX, 1)),
        };
        let gone: Vec<_> = self.web.range(lo..=hi).map(|(k, _)| *k).collect();
        for k in gone {
            self.web.remove(&k);
        }
    }

    /// Ends calls whose media and signalling stopped for the timeout, and
    /// calls older than the final timeout. Returns how many ended.
    pub fn expire(&mut self, now: Now, res: &mut dyn Resources) -> usize {
        let now_ms = now.unix_ms();
        let mut dead = Vec::new();
        for (id, c) in &self.calls {
            let last_media = c
                .streams
                .iter()
                .flatten()
                .flat_map(|s| s.legs.iter().map(|d| d.stats.last_packet_ms.load(std::sync::atomic::Ordering::Relaxed)))
                .max()
                .unwrap_or(0);
            let media_idle = Duration::from_millis(now_ms.saturating_sub(last_media));
            let idle = media_idle.min(now.mono.saturating_duration_since(c.last_signal));
            if idle > self.cfg.timeout {
                dead.push((id.clone(), false));
            } else if let Some(f) = self.cfg.final_timeout {
                if now.wall.duration_since(c.created).unwrap_or_default() > f {
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
            self.remove(id, res);
            if *final_timeout {
                self.totals.calls_final_timeout += 1;
            } else {
                self.totals.calls_timed_out += 1;
            }
        }
        dead.len()
    }

    /// Ends every call (at shutdown). Calls kept in Redis stay there for
    /// the next relay.
    pub fn clear(&mut self, res: &mut dyn Resources) {
        let keep = self.keep.take();
        let ids: Vec<String> = self.calls.keys().cloned().collect();
        for id in ids {
            self.remove(&id, res);
        }
        self.keep = keep;
    }

    /// Ends a call from the management page.
    pub fn end_call(&mut self, call_id: &str, res: &mut dyn Resources) -> Result<(), String> {
        if !self.calls.contains_key(call_id) {
            return Err(format!("no call '{call_id}'"));
        }
        self.remove(call_id, res);
        self.totals.calls_ended_by_operator += 1;
        Ok(())
    }

    /// Sets the direction of the party tagged `tag` (every stream of it).
    pub fn set_direction(&mut self, call_id: &str, tag: &str, muted: bool, held: bool) -> Result<(), String> {
        let c = self.calls.get_mut(call_id).ok_or_else(|| format!("no call '{call_id}'"))?;
        let party = c.party_of(tag).ok_or_else(|| format!("no leg '{tag}' in call '{call_id}'"))?;
        let bits = if muted { srtpgate_stats::MUTED } else { 0 } | if held { srtpgate_stats::HELD } else { 0 };
        c.block[party] = bits;
        c.apply_controls();
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
}

/// Seconds since the epoch.
pub(crate) fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}
