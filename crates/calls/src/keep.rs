//! The calls kept for a restart or a takeover (Redis, through the daemon):
//! a call's record after each offer and answer, the reservations of the
//! indices the relay sends with (raised ahead of use, from the workers'
//! reports of where their contexts stand); the calls resumed at start are
//! `resume.rs`'s.
//!
//! The table writes nothing itself: each write is a [`Persist`] the daemon
//! drains ([`Table::poll_persist`]) into its store. A reservation's
//! [`Command::Reserve`] rides with its write and reaches the worker only
//! once the store has it.

use crate::call::{CallKey, Leg};
use crate::command::{Command, Resources};
use crate::interface::Interfaces;
use crate::record::{self, CallRecord, LegRecord, StreamRecord, WebRecord};
use crate::table::{unix, Now, Table};
use crate::web_leg::WebLeg;
use srtpgate_sdp::crypto::CryptoAttr;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// A write for the store.
pub enum Persist {
    /// A call's record.
    Put(CallRecord),
    /// Forget a call.
    Delete(String),
    /// Index fields of a call; `then` goes to the workers once written.
    Fields { id: String, fields: Vec<(String, String)>, then: Vec<Command> },
}

/// Where one leg's contexts stand, as its worker reports it.
#[derive(Debug, Default)]
pub struct LegState {
    /// The call.
    pub call: CallKey,
    /// Its media stream.
    pub stream: usize,
    /// The party.
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
    /// last report: its SSRC, the index it needed, and whether SRTCP.
    pub wanted: Option<(u32, u64, bool)>,
}

/// Index fields of one call to write, and the commands that follow them.
type Writes = (Vec<(String, String)>, Vec<Command>);

/// Fewest SRTP indices reserved ahead of a stream (0.72 s at 50 packets a
/// second): what a resumed relay may have to skip.
const MIN_SPAN: u64 = 36;
/// Seconds of a stream reserved ahead (at least [`MIN_SPAN`] packets);
/// half of it is the headroom a renewal has.
const SPAN_SECONDS: f64 = 0.75;
/// Most SRTP indices reserved ahead (the index estimate bridges 2^15).
const MAX_SPAN: u64 = 1 << 14;
/// SRTCP indices reserved ahead.
const RTCP_SPAN: u32 = 16;
/// How often the receiving streams' indices and the keys' use are written
/// (a receiving stream is also written when it first appears and whenever
/// its rollover counter changes, so that a restart resumes it at most one
/// rollover behind; `srtp::Context::resume_rx` bridges that one).
const RX_EVERY: Duration = Duration::from_secs(5);
/// A reservation a packet waits for is written and sent again after this.
const RESEND: Duration = Duration::from_secs(1);

/// The reservation of one stream the relay sends.
pub(crate) struct Res {
    /// The key it is under ([`record::key_id`]).
    key: String,
    /// Highest SRTP index reserved.
    rtp: Option<u64>,
    /// The SRTCP index after the reservation.
    rtcp_end: u32,
    /// The highest index at the last snapshot, and when.
    last: Option<(u64, Instant)>,
    /// Indices reserved ahead: [`SPAN_SECONDS`] of the stream's peak rate
    /// (decaying slowly, so that a burst after a quiet spell, a video key
    /// frame, finds room), at least [`MIN_SPAN`].
    span: u64,
    /// When its last write was queued (a packet waiting on a write already
    /// queued does not queue another).
    queued: Option<Instant>,
    /// Resumed from this reservation, which the sender has not passed yet:
    /// the stream's highest index is the reservation, not a packet sent,
    /// and the jump to the sender's first index past it is no rate.
    resumed: Option<u64>,
}

/// Most sending streams (SSRCs) of one leg whose reservations are kept:
/// a peer that keeps changing SSRC does not grow Redis without end.
const MAX_SSRCS: usize = 16;
/// Most receiving streams whose last written rollover counter is
/// remembered; beyond it, new streams wait for the periodic write.
const MAX_RX_STREAMS: usize = 1 << 20;

impl Res {
    fn new(key: String) -> Res {
        Res { key, rtp: None, rtcp_end: 0, last: None, span: MIN_SPAN, queued: None, resumed: None }
    }
}

impl Keeper {
    /// A resumed call's reservation of one stream under key `kid`: where
    /// the new ones start.
    pub(crate) fn resume_reservation(
        &mut self,
        id: (CallKey, usize, usize, u32),
        kid: &str,
        rtp: Option<u64>,
        rtcp_end: u32,
    ) {
        self.res.insert(id, Res { rtp, rtcp_end, resumed: rtp, ..Res::new(kid.to_string()) });
    }
}

/// What the table keeps for the store.
pub(crate) struct Keeper {
    res: HashMap<(CallKey, usize, usize, u32), Res>,
    /// The rollover counter last written of each receiving stream.
    rx_roc: HashMap<(CallKey, usize, usize, u32), u32>,
    rx_saved: Instant,
    /// Writes for the store.
    out: VecDeque<Persist>,
}

/// What is kept of a WebRTC leg: its SDP-level state, and where its ICE
/// and DTLS stand (`web`, the running association, if any).
fn web_record(d: &Leg, web: Option<&WebLeg>) -> Option<WebRecord> {
    if !d.dtls && !d.ice_on && d.bundle.is_none() {
        return None;
    }
    let keys = web.and_then(|w| w.keys.as_ref()).map(|k| {
        let (l, r) = k.parts();
        (k.suite.to_string(), hex::encode(l), hex::encode(r))
    });
    Some(WebRecord {
        dtls: d.dtls,
        ice_on: d.ice_on,
        ice: d.ice.as_ref().map(|c| (c.ufrag.clone(), c.pwd.clone())),
        peer_ice: d.transport.ice.clone(),
        fingerprint: d.transport.fingerprint.as_ref().map(ToString::to_string),
        setup: d.transport.setup.map(|s| s.as_str().to_string()),
        mid: d.transport.mid.clone(),
        setup_offered: d.setup_offered.map(|s| s.as_str().to_string()),
        bundle: d.bundle,
        bundle_offered: d.bundle_offered,
        bundle_keyed: d.bundle_keyed,
        mid_ext: d.mid_ext,
        ice_peer: web.and_then(|w| w.ice_peer),
        nominated: web.is_some_and(|w| w.nominated),
        dtls_peer: web.and_then(|w| w.dtls_peer),
        active: web.and_then(|w| w.dtls.as_ref()).is_some_and(|a| a.is_active()),
        keys,
    })
}

fn leg_record(d: &Leg, interfaces: &Interfaces, web: Option<&WebLeg>) -> LegRecord {
    let s = |k: &CryptoAttr| k.to_string();
    LegRecord {
        ip: d.at.addr.local,
        interface: interfaces.get(d.at.interface).map(|i| i.name.clone()),
        port: d.port,
        srtp: d.srtp,
        proto: d.proto.clone(),
        mux: d.mux,
        peer: d.peer,
        offered: d.offered.iter().map(s).collect(),
        endpoint_key: d.endpoint_key.as_ref().map(s),
        relay_keys: d.relay_keys.iter().map(s).collect(),
        relay_key: d.relay_key.as_ref().map(s),
        pts: d.pts.clone(),
        web: web_record(d, web),
    }
}

impl Table {
    /// Keeps the calls from now on, after resuming `loaded`. Returns how
    /// many calls were resumed and how many could not be.
    pub fn keep_calls(&mut self, loaded: Vec<record::Loaded>, now: Now, res: &mut dyn Resources) -> (usize, usize) {
        self.keep =
            Some(Keeper { res: HashMap::new(), rx_roc: HashMap::new(), rx_saved: now.mono, out: VecDeque::new() });
        let (mut ok, mut failed) = (0, 0);
        for l in loaded {
            let id = l.record.id.clone();
            match self.resume_call(l, now, res) {
                Ok(()) => {
                    ok += 1;
                    tracing::info!(call_id = id, "call resumed from Redis");
                }
                Err(e) => {
                    failed += 1;
                    tracing::error!(call_id = id, "call not resumed: {e}");
                }
            }
        }
        self.totals.calls_resumed += ok as u64;
        self.totals.calls_not_resumed += failed as u64;
        (ok, failed)
    }

    /// Whether calls are kept.
    pub fn keeping(&self) -> bool {
        self.keep.is_some()
    }

    /// The next write for the store, in the order they were made.
    pub fn poll_persist(&mut self) -> Option<Persist> {
        self.keep.as_mut()?.out.pop_front()
    }

    fn persist(&mut self, p: Persist) {
        if let Some(k) = self.keep.as_mut() {
            k.out.push_back(p);
        }
    }

    /// Writes a call's record (after an offer or answer), or forgets it
    /// when it cannot be kept.
    pub(crate) fn keep_call(&mut self, call_id: &str) {
        if self.keep.is_none() {
            return;
        }
        let Some(call) = self.calls.get(call_id) else { return };
        let record = CallRecord {
            id: call_id.to_string(),
            created: unix(call.created),
            tags: call.tags.clone(),
            answered: call.answered,
            offerer: call.offerer,
            block: call.block,
            streams: call
                .streams
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let web = |p: usize| self.web.get(&(call.key, i, p));
                    s.as_ref().map(|s| StreamRecord {
                        media_type: s.media_type.clone(),
                        rejected: s.rejected,
                        mux_offered: s.mux_offered,
                        legs: [
                            leg_record(&s.legs[0], &self.cfg.interfaces, web(0)),
                            leg_record(&s.legs[1], &self.cfg.interfaces, web(1)),
                        ],
                        transcoding: s.transcoding.clone(),
                    })
                })
                .collect(),
        };
        self.persist(Persist::Put(record));
    }

    /// Whether sending contexts use reserved indices only (calls are
    /// kept).
    pub(crate) fn reserving(&self) -> bool {
        self.keep.is_some()
    }

    /// Forgets an ended call.
    pub(crate) fn forget_kept(&mut self, call_id: &str, key: CallKey) {
        if let Some(k) = self.keep.as_mut() {
            k.res.retain(|r, _| r.0 != key);
            k.rx_roc.retain(|r, _| r.0 != key);
            k.out.push_back(Persist::Delete(call_id.to_string()));
        }
    }

    /// Raises the reservations that are running out or that a packet waited
    /// for, and (every [`RX_EVERY`], or when `flush`) writes the receiving
    /// streams' indices and the keys' use.
    pub fn keep_states(&mut self, states: Vec<LegState>, now: Now, flush: bool) {
        let Some(k) = self.keep.as_mut() else { return };
        let now = now.mono;
        let save_rx = flush || now.duration_since(k.rx_saved) >= RX_EVERY;
        if save_rx {
            k.rx_saved = now;
        }
        let mut writes: BTreeMap<String, Writes> = BTreeMap::new();
        for st in states {
            let Some(call_id) = self.by_key.get(&st.call) else { continue };
            let Some(call) = self.calls.get(call_id) else { continue };
            let Some(Some(stream)) = call.streams.get(st.stream) else { continue };
            let Some(d) = stream.legs.get(st.party) else { continue };
            let (fields, then) = writes.entry(call_id.clone()).or_default();
            let (tx_key, rx_key) = key_ids(&self.web, st.call, st.stream, st.party, d);
            if let Some(key) = tx_key {
                reserve(k, &st, call.worker, &key, now, fields, then);
                if save_rx {
                    fields.push((record::uses_field(st.stream, st.party, true, &key), uses_value(&st.tx_uses)));
                }
            }
            if let Some(key) = rx_key {
                for s in &st.rx {
                    // A stream's first index, and each new rollover counter,
                    // at once; the rest every RX_EVERY.
                    let id = (st.call, st.stream, st.party, s.ssrc);
                    let roc = s.rtp.map(|i| (i >> 16) as u32);
                    let known = k.rx_roc.get(&id).copied();
                    let room = known.is_some() || k.rx_roc.len() < MAX_RX_STREAMS;
                    let changed = roc.is_some() && roc != known && room;
                    if changed {
                        k.rx_roc.extend(roc.map(|r| (id, r)));
                    } else if !save_rx {
                        continue;
                    }
                    fields.push((
                        record::index_field(st.stream, st.party, false, &key, s.ssrc),
                        record::index_value(s.rtp, s.rtcp),
                    ));
                }
                if save_rx {
                    fields.push((record::uses_field(st.stream, st.party, false, &key), uses_value(&st.rx_uses)));
                }
            }
        }
        for (id, (fields, then)) in writes {
            if !fields.is_empty() {
                k.out.push_back(Persist::Fields { id, fields, then });
            }
        }
    }

    /// Writes every kept call's record and every reservation in force again
    /// (after the store came back: it may have lost them).
    pub fn rewrite_kept(&mut self) {
        let ids: Vec<String> = self.calls.keys().cloned().collect();
        for id in &ids {
            self.keep_call(id);
        }
        let Some(k) = self.keep.as_mut() else { return };
        let mut writes: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (&(call, stream, party, ssrc), r) in &k.res {
            let Some(id) = self.by_key.get(&call) else { continue };
            writes.entry(id.clone()).or_default().push((
                record::index_field(stream, party, true, &r.key, ssrc),
                record::index_value(r.rtp, Some(r.rtcp_end)),
            ));
        }
        for (id, fields) in writes {
            k.out.push_back(Persist::Fields { id, fields, then: Vec::new() });
        }
        tracing::info!("redis: every kept call and reservation written again");
    }
}

/// The names of the keys a leg's contexts use (sending, receiving): its
/// SDES keys, or those its DTLS transport's handshake exported (the group
/// owner's, for a bundled leg), once it has them.
pub(crate) fn key_ids(
    web: &BTreeMap<(CallKey, usize, usize), WebLeg>,
    call: CallKey,
    stream: usize,
    party: usize,
    d: &Leg,
) -> (Option<String>, Option<String>) {
    if d.dtls {
        let owner = d.bundle.unwrap_or(stream);
        let keys = web.get(&(call, owner, party)).and_then(|w| w.keys.as_ref());
        return (keys.map(|k| record::dtls_key_id(k, true)), keys.map(|k| record::dtls_key_id(k, false)));
    }
    (d.relay_key.as_ref().map(record::key_id), d.endpoint_key.as_ref().map(record::key_id))
}

/// Raises one sending leg's reservations from its worker's report: the
/// fields to write and the [`Command::Reserve`]s that follow them.
fn reserve(
    k: &mut Keeper,
    st: &LegState,
    worker: usize,
    key: &str,
    now: Instant,
    fields: &mut Vec<(String, String)>,
    then: &mut Vec<Command>,
) {
    let tag = record::key_tag(key);
    let mut ssrcs: Vec<(u32, Option<u64>, u32)> = st.tx.iter().map(|s| (s.ssrc, s.rtp, s.rtcp.unwrap_or(0))).collect();
    if let Some((ssrc, _, _)) = st.wanted {
        if !ssrcs.iter().any(|s| s.0 == ssrc) {
            ssrcs.push((ssrc, None, 0));
        }
    }
    for (ssrc, highest, rtcp_next) in ssrcs {
        let wanted = st.wanted.filter(|w| w.0 == ssrc);
        let id = (st.call, st.stream, st.party, ssrc);
        if !k.res.contains_key(&id)
            && k.res.keys().filter(|r| (r.0, r.1, r.2) == (st.call, st.stream, st.party)).count() >= MAX_SSRCS
        {
            continue;
        }
        let r = k.res.entry(id).or_insert_with(|| Res::new(key.to_string()));
        if r.key != key {
            // A new key: its indices start over.
            *r = Res::new(key.to_string());
        }
        if let Some(from) = r.resumed {
            // Until the sender passes the reservation resumed from, and at
            // that first packet, there is no rate to measure.
            if highest.is_some_and(|h| h > from) {
                r.resumed = None;
            }
            r.last = None;
        }
        if let (Some((h0, t0)), Some(h)) = (r.last, highest) {
            let dt = now.duration_since(t0).as_secs_f64();
            if dt > 0.05 && h >= h0 {
                let rate = (((h - h0) as f64 / dt * SPAN_SECONDS) as u64 + 1).clamp(MIN_SPAN, MAX_SPAN);
                // The peak, decaying by a sixteenth a look.
                r.span = rate.max(r.span - r.span / 16).max(MIN_SPAN);
            }
        }
        r.last = highest.map(|h| (h, now));
        let want_rtp = wanted.filter(|w| !w.2).map(|w| w.1);
        let want_rtcp = wanted.filter(|w| w.2).map(|w| w.1 as u32);
        let base = highest.max(want_rtp);
        let mut grew = false;
        if let Some(b) = base {
            if r.rtp.is_none_or(|res| b.saturating_add(r.span / 2) > res) {
                r.rtp = Some(r.rtp.unwrap_or(0).max(b.saturating_add(r.span)));
                grew = true;
            }
        }
        let next = rtcp_next.max(want_rtcp.unwrap_or(0));
        if next.saturating_add(RTCP_SPAN / 2) > r.rtcp_end {
            r.rtcp_end = r.rtcp_end.max(next.saturating_add(RTCP_SPAN));
            grew = true;
        }
        // A packet waited: send the reservation again (its worker may not
        // have it: a call moved), unless a write of it is already on its
        // way.
        let again = wanted.is_some() && r.queued.is_none_or(|q| now.duration_since(q) > RESEND);
        if !grew && !again {
            continue;
        }
        r.queued = Some(now);
        let (rtp, end) = (r.rtp, r.rtcp_end);
        fields.push((record::index_field(st.stream, st.party, true, key, ssrc), record::index_value(rtp, Some(end))));
        then.push(Command::Reserve {
            worker,
            call: st.call,
            stream: st.stream,
            party: st.party,
            key: tag,
            ssrc,
            rtp,
            rtcp: end.saturating_sub(1),
        });
    }
}

fn uses_value(uses: &[(u64, u64)]) -> String {
    uses.iter().map(|(a, b)| format!("{a},{b}")).collect::<Vec<_>>().join(" ")
}
