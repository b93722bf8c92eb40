//! The calls kept in Redis ([`crate::serve::redis_store`]; the records are
//! `srtpgate_calls::record`): a call's record
//! after each offer and answer, the reservations of the indices the relay
//! sends with (raised ahead of use, from the workers' snapshots), and the
//! calls resumed at start.

use super::*;
use crate::relay::worker::SideState;
use crate::serve::redis_store::{Loaded, Store, Then};
use srtpgate_calls::record::{self, CallRecord, SideRecord, StreamRecord};

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
/// How far the SRTCP index of a resumed stream jumps past what Redis holds
/// (SRTCP indices are the relay's own choice: a margin costs nothing).
const RTCP_JUMP: u32 = 1 << 16;

/// Index fields of one call to write, and what runs once they are in Redis.
type Writes = (Vec<(String, String)>, Vec<Then>);

/// A context of a kept call: m-line, side, sending, key id.
type ContextId = (usize, usize, bool, String);

/// What was kept of a context: its streams and its keys' use.
type Kept = (Vec<srtp::StreamState>, Vec<(u64, u64)>);

/// The reservation of one stream the relay sends.
pub(super) struct Res {
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
}

/// Most sending streams (SSRCs) of one side whose reservations are kept:
/// a peer that keeps changing SSRC does not grow Redis without end.
const MAX_SSRCS: usize = 16;
/// Most receiving streams whose last written rollover counter is
/// remembered; beyond it, new streams wait for the periodic write.
const MAX_RX_STREAMS: usize = 1 << 20;

impl Res {
    fn new(key: String) -> Res {
        Res { key, rtp: None, rtcp_end: 0, last: None, span: MIN_SPAN, queued: None }
    }
}

/// The Redis side of the call table.
pub(super) struct Keeper {
    store: Store,
    res: HashMap<(CallKey, usize, usize, u32), Res>,
    /// The rollover counter last written of each receiving stream.
    rx_roc: HashMap<(CallKey, usize, usize, u32), u32>,
    rx_saved: Instant,
    /// [`Store::recoveries`] when last seen.
    recoveries: u64,
}

impl Keeper {
    /// The store's counters: failed operations, batches written, writes
    /// waiting.
    pub(super) fn counters(&self) -> (u64, u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.store.errors.load(Relaxed), self.store.batches.load(Relaxed), self.store.pending.load(Relaxed))
    }
}

/// A call can be kept when none of its sides runs ICE or DTLS and none of
/// its streams transcodes.
fn keepable(call: &Call) -> bool {
    call.streams.iter().flatten().all(|s| s.transcoding.is_none() && s.sides.iter().all(|d| !d.dtls && !d.ice_on))
}

fn side_record(d: &Side) -> SideRecord {
    let s = |k: &CryptoAttr| k.to_string();
    SideRecord {
        ip: d.ip,
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
    }
}

impl<E: Engine + Clone + 'static> Calls<E>
where
    E::Keys: 'static,
{
    /// Keeps the calls in `store` from now on, after resuming `loaded`.
    /// Returns how many calls were resumed and how many could not be.
    pub fn keep_in(&mut self, store: Store, loaded: Vec<Loaded>) -> (usize, usize) {
        self.keep = Some(Keeper {
            store,
            res: HashMap::new(),
            rx_roc: HashMap::new(),
            rx_saved: Instant::now(),
            recoveries: 0,
        });
        let (mut ok, mut failed) = (0, 0);
        for l in loaded {
            let id = l.record.id.clone();
            match self.resume_call(l) {
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

    /// Whether calls are kept in Redis.
    pub fn keeping(&self) -> bool {
        self.keep.is_some()
    }

    /// The Redis counters (see [`Keeper::counters`]), when calls are kept.
    pub fn keep_counters(&self) -> Option<(u64, u64, u64)> {
        self.keep.as_ref().map(Keeper::counters)
    }

    /// Writes a call's record (after an offer or answer), or forgets it
    /// when it cannot be kept.
    pub(super) fn keep_call(&mut self, call_id: &str) {
        let Some(k) = self.keep.as_ref() else { return };
        let Some(call) = self.calls.get(call_id) else { return };
        if !keepable(call) {
            k.store.delete(call_id);
            return;
        }
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
                .map(|s| {
                    s.as_ref().map(|s| StreamRecord {
                        media_type: s.media_type.clone(),
                        rejected: s.rejected,
                        mux_offered: s.mux_offered,
                        sides: [side_record(&s.sides[0]), side_record(&s.sides[1])],
                    })
                })
                .collect(),
        };
        k.store.put_call(&record);
    }

    /// The tag of a side's sending key for its worker (see
    /// [`SideConfig::tx_key`]).
    pub(super) fn key_tag(k: &Option<CryptoAttr>) -> u64 {
        k.as_ref().map_or(0, |k| record::key_tag(&record::key_id(k)))
    }

    /// Whether the sending contexts of `call` use reserved indices only.
    pub(super) fn reserving(&self, call_id: &str) -> bool {
        self.keep.is_some() && self.calls.get(call_id).is_none_or(keepable)
    }

    /// Forgets an ended call.
    pub(super) fn forget_call(&mut self, call_id: &str, key: CallKey) {
        if let Some(k) = self.keep.as_mut() {
            k.store.delete(call_id);
            k.res.retain(|r, _| r.0 != key);
            k.rx_roc.retain(|r, _| r.0 != key);
        }
    }

    /// Asks every worker where its contexts stand; the answers come on the
    /// returned channels (read them without holding the call table).
    pub fn snapshot(&self) -> Vec<std::sync::mpsc::Receiver<Vec<SideState>>> {
        if self.keep.is_none() {
            return Vec::new();
        }
        self.workers
            .iter()
            .filter(|w| w.alive())
            .map(|w| {
                let (tx, rx) = std::sync::mpsc::channel();
                w.send(Cmd::Snapshot { reply: tx });
                rx
            })
            .collect()
    }

    /// Raises the reservations that are running out or that a packet waited
    /// for, and (every [`RX_EVERY`]) writes the receiving streams' indices
    /// and the keys' use. A reservation reaches its worker only once Redis
    /// has it.
    pub fn keep_states(&mut self, states: Vec<SideState>) {
        // Redis answered again after failures (perhaps restarted, empty):
        // every record and every reservation in force is written again.
        let recovered = self
            .keep
            .as_ref()
            .is_some_and(|k| k.store.recoveries.load(std::sync::atomic::Ordering::Relaxed) != k.recoveries);
        if recovered {
            self.rewrite_all();
        }
        let Some(k) = self.keep.as_mut() else { return };
        let now = Instant::now();
        let save_rx = now.duration_since(k.rx_saved) >= RX_EVERY;
        if save_rx {
            k.rx_saved = now;
        }
        let mut writes: BTreeMap<String, Writes> = BTreeMap::new();
        for st in states {
            let Some(call_id) = self.by_key.get(&st.call) else { continue };
            let Some(call) = self.calls.get(call_id) else { continue };
            if !keepable(call) {
                continue;
            }
            let Some(Some(stream)) = call.streams.get(st.stream) else { continue };
            let Some(d) = stream.sides.get(st.side) else { continue };
            let (fields, then) = writes.entry(call_id.clone()).or_default();
            if let Some(key) = d.relay_key.as_ref().map(record::key_id) {
                let tag = record::key_tag(&key);
                let mut ssrcs: Vec<(u32, Option<u64>, u32)> =
                    st.tx.iter().map(|s| (s.ssrc, s.rtp, s.rtcp.unwrap_or(0))).collect();
                if let Some((ssrc, _, _)) = st.wanted {
                    if !ssrcs.iter().any(|s| s.0 == ssrc) {
                        ssrcs.push((ssrc, None, 0));
                    }
                }
                for (ssrc, highest, rtcp_next) in ssrcs {
                    let wanted = st.wanted.filter(|w| w.0 == ssrc);
                    let id = (st.call, st.stream, st.side, ssrc);
                    if !k.res.contains_key(&id)
                        && k.res.keys().filter(|r| (r.0, r.1, r.2) == (st.call, st.stream, st.side)).count()
                            >= MAX_SSRCS
                    {
                        continue;
                    }
                    let r = k.res.entry(id).or_insert_with(|| Res::new(key.clone()));
                    if r.key != key {
                        // A new key: its indices start over.
                        *r = Res::new(key.clone());
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
                    // A packet waited: send the reservation again (its worker
                    // may not have it: a call moved), unless a write of it
                    // is already on its way.
                    let again = wanted.is_some() && r.queued.is_none_or(|q| now.duration_since(q) > RESEND);
                    if !grew && !again {
                        continue;
                    }
                    r.queued = Some(now);
                    let (rtp, end) = (r.rtp, r.rtcp_end);
                    fields.push((
                        record::index_field(st.stream, st.side, true, &key, ssrc),
                        record::index_value(rtp, Some(end)),
                    ));
                    let w = self.workers[call.worker].sender();
                    let (c, i, s) = (st.call, st.stream, st.side);
                    then.push(Box::new(move || {
                        w.send(Cmd::Reserve {
                            call: c,
                            stream: i,
                            side: s,
                            key: tag,
                            ssrc,
                            rtp,
                            rtcp: end.saturating_sub(1),
                        });
                    }));
                }
                if save_rx {
                    fields.push((record::uses_field(st.stream, st.side, true, &key), uses_value(&st.tx_uses)));
                }
            }
            if let Some(key) = d.endpoint_key.as_ref().map(record::key_id) {
                for s in &st.rx {
                    // A stream's first index, and each new rollover counter,
                    // at once; the rest every RX_EVERY.
                    let id = (st.call, st.stream, st.side, s.ssrc);
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
                        record::index_field(st.stream, st.side, false, &key, s.ssrc),
                        record::index_value(s.rtp, s.rtcp),
                    ));
                }
                if save_rx {
                    fields.push((record::uses_field(st.stream, st.side, false, &key), uses_value(&st.rx_uses)));
                }
            }
        }
        for (id, (fields, then)) in writes {
            if !fields.is_empty() {
                k.store.put_fields(&id, fields, then);
            }
        }
    }

    /// A clean stop: writes where every stream stands now (`states`, from
    /// [`snapshot`](Self::snapshot)), receiving streams included, and waits
    /// up to `within` for Redis to have it. Returns whether it did.
    pub fn flush_states(&mut self, states: Vec<SideState>, within: Duration) -> bool {
        let Some(k) = self.keep.as_mut() else { return true };
        k.rx_saved = Instant::now().checked_sub(RX_EVERY).unwrap_or(k.rx_saved);
        self.keep_states(states);
        self.keep.as_ref().is_none_or(|k| k.store.written(within))
    }

    /// Writes every kept call's record and every reservation in force again
    /// (after Redis came back: it may have lost them).
    fn rewrite_all(&mut self) {
        let ids: Vec<String> = self.calls.keys().cloned().collect();
        for id in &ids {
            self.keep_call(id);
        }
        let Some(k) = self.keep.as_mut() else { return };
        k.recoveries = k.store.recoveries.load(std::sync::atomic::Ordering::Relaxed);
        let mut writes: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for (&(call, stream, side, ssrc), r) in &k.res {
            let Some(id) = self.by_key.get(&call) else { continue };
            writes.entry(id.clone()).or_default().push((
                record::index_field(stream, side, true, &r.key, ssrc),
                record::index_value(r.rtp, Some(r.rtcp_end)),
            ));
        }
        for (id, fields) in writes {
            k.store.put_fields(&id, fields, Vec::new());
        }
        tracing::info!("redis: every kept call and reservation written again");
    }

    /// Puts a kept call back: the same ports, keys and peers; the contexts
    /// resumed from the indices kept (every index up to a reservation taken
    /// as used).
    fn resume_call(&mut self, l: Loaded) -> Result<(), String> {
        let r = l.record;
        if self.calls.contains_key(&r.id) {
            return Err("a call with this Call-ID is here already".into());
        }
        let parse = |v: &String| CryptoAttr::parse(v).map_err(|e| format!("kept key: {e}"));
        let parse_all = |v: &[String]| v.iter().map(parse).collect::<Result<Vec<_>, _>>();
        // Indices kept, by (m-line, side, direction, key): streams and uses.
        let mut states: HashMap<ContextId, Kept> = HashMap::new();
        for (f, v) in &l.indexes {
            let parts: Vec<&str> = f.split('.').collect();
            let [i, side, dir, key, last] = parts[..] else { continue };
            let (Ok(i), Ok(side)) = (i.parse::<usize>(), side.parse::<usize>()) else { continue };
            let tx = dir == "t";
            let e = states.entry((i, side, tx, key.to_string())).or_default();
            if last == "uses" {
                e.1 = parse_uses(v);
            } else if let (Ok(ssrc), Some((rtp, rtcp))) = (u32::from_str_radix(last, 16), record::parse_index(v)) {
                e.0.push(srtp::StreamState { ssrc, tx, rtp, rtcp });
            }
        }
        let worker = self
            .pick(self.pass_pool(), self.next_worker)
            .or_else(|| self.pick(0..self.workers.len(), 0))
            .ok_or("no media worker is running")?;
        self.next_worker = worker + 1;
        let key = self.next_key;
        self.next_key += 1;
        let mut streams = Vec::with_capacity(r.streams.len());
        let mut configs = Vec::new();
        for (i, s) in r.streams.iter().enumerate() {
            let Some(s) = s else {
                streams.push(None);
                continue;
            };
            let mut sides = Vec::with_capacity(2);
            for (k, d) in s.sides.iter().enumerate() {
                let side = Side {
                    srtp: d.srtp,
                    offered: parse_all(&d.offered)?,
                    endpoint_key: d.endpoint_key.as_ref().map(parse).transpose()?,
                    relay_keys: parse_all(&d.relay_keys)?,
                    relay_key: d.relay_key.as_ref().map(parse).transpose()?,
                    peer: d.peer,
                    mux: d.mux,
                    proto: d.proto.clone(),
                    pts: d.pts.clone(),
                    ..Side::new(d.ip, d.port, Arc::new(LegStats::default()))
                };
                side.stats.block.store(r.block[k], std::sync::atomic::Ordering::Relaxed);
                let resumed = |c: &Option<CryptoAttr>, tx: bool| -> Result<Option<Context<E>>, String> {
                    let Some(c) = c else { return Ok(None) };
                    let mut ctx = context(c, self.engine.clone(), self.cfg.libsrtp_aes192_kdf)?;
                    ctx.set_reserving(tx);
                    if !tx {
                        // What was kept of a stream it receives may be a
                        // rollover behind its sender, or missing.
                        ctx.resume_rx();
                    }
                    if let Some((streams, uses)) = states.get(&(i, k, tx, record::key_id(c))) {
                        ctx.resume_key_uses(uses);
                        for st in streams {
                            let st = srtp::StreamState {
                                rtcp: st.rtcp.map(|r| if tx { r.saturating_add(RTCP_JUMP) } else { r }),
                                ..*st
                            };
                            // A stream the context has no room for cannot be
                            // sent on, so its indices do not matter.
                            if let Err(e) = ctx.resume(&st) {
                                tracing::warn!(call_id = r.id, "kept index of SSRC {:08x} not resumed: {e}", st.ssrc);
                            }
                        }
                    }
                    Ok(Some(ctx))
                };
                let config = SideConfig {
                    peer: Some(side.peer.unwrap_or((None, None))),
                    rtcp_mux: side.mux,
                    rx: Some(resumed(&side.endpoint_key, false)?),
                    tx: Some(resumed(&side.relay_key, true)?),
                    tx_key: Self::key_tag(&side.relay_key),
                    reserving: true,
                    handover: false,
                    transcode: None,
                    demux: false,
                    keys_pending: false,
                    bundle: None,
                    payload_types: side.pts.clone(),
                    mid_ext: None,
                };
                configs.push((i, k, config));
                sides.push(side);
            }
            let [a, b]: [Side; 2] = sides.try_into().map_err(|_| "a stream without two sides")?;
            streams.push(Some(Stream {
                media_type: s.media_type.clone(),
                sides: [a, b],
                rejected: s.rejected,
                mux_offered: s.mux_offered,
                offered: Offered::default(),
                transcoding: None,
            }));
        }
        // Its ports, once everything else is made: a call that cannot have them
        // all is not resumed, and holds none.
        let mut pairs = Vec::new();
        for (i, s) in r.streams.iter().enumerate() {
            let Some(s) = s else { continue };
            for (k, d) in s.sides.iter().enumerate() {
                match self.ports.allocate_at(d.ip, d.port) {
                    Ok(p) => pairs.push((i, k, p)),
                    Err(e) => {
                        for (_, _, p) in &pairs {
                            self.ports.release(p.port);
                        }
                        return Err(format!("port {} on {}: {e}", d.port, d.ip));
                    }
                }
            }
        }
        // The reservations kept are where the new ones start.
        if let Some(k) = self.keep.as_mut() {
            for ((i, side, tx, kid), (sts, _)) in &states {
                if !tx {
                    continue;
                }
                for st in sts {
                    let rtcp_end = st.rtcp.unwrap_or(0).saturating_add(RTCP_JUMP);
                    k.res.insert((key, *i, *side, st.ssrc), Res { rtp: st.rtp, rtcp_end, ..Res::new(kid.clone()) });
                }
            }
        }
        let mut by_stream: BTreeMap<usize, Vec<(usize, crate::relay::ports::PortPair)>> = BTreeMap::new();
        for (i, k, p) in pairs {
            by_stream.entry(i).or_default().push((k, p));
        }
        for (i, mut ps) in by_stream {
            ps.sort_by_key(|(k, _)| *k);
            let Some(Some(s)) = streams.get(i) else { continue };
            let mut it = ps.into_iter().map(|(_, p)| p);
            let (Some(p0), Some(p1)) = (it.next(), it.next()) else { continue };
            self.workers[worker].send(Cmd::AddStream {
                call: key,
                stream: i,
                sides: [
                    SideSockets { rtp: p0.rtp, rtcp: p0.rtcp, stats: s.sides[0].stats.clone() },
                    SideSockets { rtp: p1.rtp, rtcp: p1.rtcp, stats: s.sides[1].stats.clone() },
                ],
            });
        }
        for (stream, side, config) in configs {
            self.workers[worker].send(Cmd::Configure { call: key, stream, side, config: Box::new(config) });
        }
        let call = Call {
            key,
            worker,
            created: UNIX_EPOCH + Duration::from_secs(r.created),
            last_signal: Instant::now(),
            tags: r.tags,
            streams,
            answered: r.answered,
            offerer: r.offerer.min(1),
            block: r.block,
        };
        if !call.holds_ports() {
            self.without_media += 1;
        }
        self.by_key.insert(key, r.id.clone());
        self.calls.insert(r.id, call);
        Ok(())
    }
}

fn uses_value(uses: &[(u64, u64)]) -> String {
    uses.iter().map(|(a, b)| format!("{a},{b}")).collect::<Vec<_>>().join(" ")
}

fn parse_uses(v: &str) -> Vec<(u64, u64)> {
    v.split(' ')
        .filter_map(|p| {
            let (a, b) = p.split_once(',')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}
