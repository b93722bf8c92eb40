//! A kept call put back at start (or by a standby taking over): its
//! record and index fields as [`Table::keep_calls`] reads them from the
//! store, made into a call on the same ports, with the same keys and peers,
//! every sending context resumed past what was reserved, transcoders made
//! anew, and WebRTC legs answering ICE with the same credentials on the
//! pair ICE chose, under the keys their handshake exported.

use crate::call::{Call, Leg, Stream};
use crate::command::{Command, Keying, LegSetup, Resources, Resume};
use crate::interface::{Binding, Interfaces, Pair};
use crate::keys::{key_tag, keying};
use crate::negotiate::Offered;
use crate::record::{self, LegRecord, WebRecord};
use crate::table::{Now, Table};
use crate::transcoders::transcoders;
use crate::web_leg::WebLeg;
use srtpgate_codec::transcode::Transcoder;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_stats::LegStats;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

/// A context of a kept call: m-line, party, sending, key id.
type ContextId = (usize, usize, bool, String);

/// What was kept of a context: its streams and its keys' use.
type Kept = (Vec<srtp::StreamState>, Vec<(u64, u64)>);

/// How far the SRTCP index of a resumed stream jumps past what Redis holds
/// (SRTCP indices are the relay's own choice: a margin costs nothing).
const RTCP_JUMP: u32 = 1 << 16;

impl Table {
    /// Puts a kept call back: the same ports, keys and peers; the contexts
    /// resumed from the indices kept (every index up to a reservation taken
    /// as used).
    pub(crate) fn resume_call(&mut self, l: record::Loaded, now: Now, res: &mut dyn Resources) -> Result<(), String> {
        let r = l.record;
        if self.calls.contains_key(&r.id) {
            return Err("a call with this Call-ID is here already".into());
        }
        let parse = |v: &String| CryptoAttr::parse(v).map_err(|e| format!("kept key: {e}"));
        let parse_all = |v: &[String]| v.iter().map(parse).collect::<Result<Vec<_>, _>>();
        let states = kept_states(&l.indexes);
        let kdf = self.cfg.libsrtp_aes192_kdf;
        let mut streams = Vec::with_capacity(r.streams.len());
        let mut setups = Vec::new();
        let mut webs: Vec<(usize, usize, WebLeg)> = Vec::new();
        for (i, s) in r.streams.iter().enumerate() {
            let Some(s) = s else {
                streams.push(None);
                continue;
            };
            // Transcoders made anew (codec state starts fresh), numbering
            // their output past what was reserved before: (offerer's leg,
            // answerer's leg).
            let mut coders: [Option<Box<Transcoder>>; 2] = [None, None];
            if let Some((o, t)) = &s.transcoding {
                let o = (*o).min(1);
                let (to_answerer, to_offerer) =
                    transcoders(t, &self.codecs, self.cfg.codec_complexity, self.cfg.plc, self.cfg.dtmf_delay_ms)
                        .map_err(|e| format!("transcoding {} <-> {}: {e}", t.offerer, t.answerer))?;
                coders[o] = Some(to_answerer);
                coders[1 - o] = Some(to_offerer);
                for (p, coder) in coders.iter_mut().enumerate() {
                    // What leg p's endpoint sends is transcoded and sent on
                    // the other leg, under that leg's reservations.
                    let q = 1 - p;
                    let next: Vec<(u32, u16)> = states
                        .iter()
                        .filter(|((si, party, tx, _), _)| *si == i && *party == q && *tx)
                        .flat_map(|(_, (sts, _))| sts.iter())
                        .filter_map(|st| Some((st.ssrc, (st.rtp? as u16).wrapping_add(1))))
                        .collect();
                    if let Some(c) = coder.as_mut() {
                        c.continue_sequences(next);
                    }
                }
            }
            let mut legs = Vec::with_capacity(2);
            for (p, d) in s.legs.iter().enumerate() {
                let mut leg = Leg {
                    srtp: d.srtp,
                    offered: parse_all(&d.offered)?,
                    endpoint_key: d.endpoint_key.as_ref().map(parse).transpose()?,
                    relay_keys: parse_all(&d.relay_keys)?,
                    relay_key: d.relay_key.as_ref().map(parse).transpose()?,
                    peer: d.peer,
                    mux: d.mux,
                    proto: d.proto.clone(),
                    pts: d.pts.clone(),
                    ..Leg::new(kept_binding(&self.cfg.interfaces, d)?, d.port, Arc::new(LegStats::default()))
                };
                leg.stats.block.store(r.block[p], std::sync::atomic::Ordering::Relaxed);
                if let Some(w) = &d.web {
                    restore_web(&mut leg, w);
                }
                let with_resume = |mut k: Keying, tx: bool, kid: String| {
                    let (streams, key_uses) = states.get(&(i, p, tx, kid)).cloned().unwrap_or_default();
                    let streams = streams
                        .into_iter()
                        .map(|st| srtp::StreamState {
                            rtcp: st.rtcp.map(|r| if tx { r.saturating_add(RTCP_JUMP) } else { r }),
                            ..st
                        })
                        .collect();
                    k.resume = Some(Resume { streams, key_uses });
                    k
                };
                let resumed = |c: &Option<CryptoAttr>, tx: bool| -> Result<Option<Keying>, String> {
                    let Some(c) = c else { return Ok(None) };
                    Ok(Some(with_resume(keying(c, kdf)?, tx, record::key_id(c))))
                };
                let mut setup = LegSetup {
                    peer: Some(leg.peer.unwrap_or((None, None))),
                    rtcp_mux: leg.mux,
                    rx: Some(resumed(&leg.endpoint_key, false)?),
                    tx: Some(resumed(&leg.relay_key, true)?),
                    tx_key: key_tag(&leg.relay_key),
                    reserving: true,
                    handover: false,
                    transcode: coders[p].take().map(Some),
                    demux: leg.dtls || leg.ice_on,
                    keys_pending: false,
                    bundle: leg.bundle,
                    payload_types: leg.pts.clone(),
                    mid_ext: leg.mid_ext(),
                    // Formats are not kept: DTMF and silence controls see none.
                    kinds: None,
                };
                if leg.dtls {
                    // The keys of its transport's handshake (the group
                    // owner's, for a bundled leg), resumed where their
                    // indices stand.
                    let owner = leg.bundle.unwrap_or(i);
                    let keys = r.streams.get(owner).and_then(Option::as_ref).and_then(|o| kept_keys(&o.legs[p]));
                    match keys.transpose()? {
                        Some(keys) => {
                            let (rx, tx) = crate::web::keyings(&keys)?;
                            setup.rx = Some(Some(with_resume(*rx, false, record::dtls_key_id(&keys, false))));
                            setup.tx = Some(Some(with_resume(*tx, true, record::dtls_key_id(&keys, true))));
                            setup.tx_key = record::key_tag(&record::dtls_key_id(&keys, true));
                        }
                        None => {
                            // Its handshake had not finished: its media waits
                            // for a new offer and handshake.
                            tracing::warn!(
                                call_id = r.id,
                                stream = i,
                                party = p,
                                "DTLS had no keys yet at the restart"
                            );
                            (setup.rx, setup.tx, setup.keys_pending) = (Some(None), Some(None), true);
                        }
                    }
                }
                if let Some(w) = d.web.as_ref().filter(|w| (w.dtls || w.ice_on) && leg.bundle.is_none_or(|b| b == i)) {
                    let keys = kept_keys(d).transpose()?;
                    webs.push((i, p, resumed_web(&leg, w, keys)));
                }
                setups.push((i, p, setup));
                legs.push(leg);
            }
            let [a, b]: [Leg; 2] = legs.try_into().map_err(|_| "a stream without two legs")?;
            streams.push(Some(Stream {
                media_type: s.media_type.clone(),
                legs: [a, b],
                rejected: s.rejected,
                mux_offered: s.mux_offered,
                offered: Offered::default(),
                transcoding: s.transcoding.clone(),
            }));
        }
        // Its ports, once everything else is made: a call that cannot have
        // them all is not resumed, and holds none.
        let mut bound: Vec<Pair> = Vec::new();
        for s in streams.iter().flatten() {
            for d in &s.legs {
                if let Err(e) = res.allocate_at(d.at, d.port) {
                    for p in bound {
                        res.release(p);
                    }
                    return Err(format!("port {} on {}: {e}", d.port, d.at.addr.local));
                }
                bound.push(d.pair());
            }
        }
        let worker = match self.place(res) {
            Ok(w) => w,
            Err(e) => {
                for p in bound {
                    res.release(p);
                }
                return Err(e);
            }
        };
        let call = Call {
            subscriptions: Vec::new(),
            labels: [None, None],
            controls: Default::default(),
            quality: Default::default(),
            key: 0, // given by `insert`
            worker,
            created: UNIX_EPOCH + Duration::from_secs(r.created),
            last_signal: now.mono,
            tags: r.tags.clone(),
            streams,
            answered: r.answered,
            offerer: r.offerer.min(1),
            block: r.block,
            recording: None,
            recording_target: Default::default(),
            metadata: None,
        };
        let key = self.insert(r.id.clone(), call);
        let adds: Vec<Command> = self.calls[&r.id]
            .streams
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some(s.as_ref()?.add_command(worker, key, i)))
            .collect();
        // The reservations kept are where the new ones start.
        if let Some(k) = self.keep.as_mut() {
            for ((i, party, tx, kid), (sts, _)) in &states {
                if !tx {
                    continue;
                }
                for st in sts {
                    let rtcp_end = st.rtcp.unwrap_or(0).saturating_add(RTCP_JUMP);
                    k.resume_reservation((key, *i, *party, st.ssrc), kid, st.rtp, rtcp_end);
                }
            }
        }
        for c in adds {
            self.command(c);
        }
        for (stream, party, setup) in setups {
            self.command(Command::Configure { worker, call: key, stream, party, setup: Box::new(setup) });
        }
        // WebRTC transports: media goes to the pair ICE chose, and consent
        // checks are answered with the same credentials.
        for (stream, party, web) in webs {
            if let Some(peer) = web.ice_peer {
                self.command(Command::Latch { worker, call: key, stream, party, peer });
            }
            self.web.insert((key, stream, party), web);
        }
        if self.calls[&r.id].streams.iter().flatten().any(|s| s.transcoding.is_some()) {
            self.move_to_transcoding(&r.id, res);
        }
        Ok(())
    }
}

/// A kept leg's SDP-level ICE, DTLS and BUNDLE state, back on the leg.
fn restore_web(leg: &mut Leg, w: &WebRecord) {
    use srtpgate_webrtc::dtls::{Fingerprint, Setup};
    leg.dtls = w.dtls;
    leg.ice_on = w.ice_on;
    leg.ice = w.ice.as_ref().map(|(ufrag, pwd)| srtpgate_webrtc::ice::IceCreds {
        ufrag: ufrag.clone(),
        pwd: pwd.clone(),
        remote: w.peer_ice.clone(),
    });
    leg.transport = crate::transport::PeerTransport {
        ice: w.peer_ice.clone(),
        fingerprint: w.fingerprint.as_deref().and_then(Fingerprint::parse),
        setup: w.setup.as_deref().and_then(Setup::parse),
        mid: w.mid.clone(),
    };
    leg.setup_offered = w.setup_offered.as_deref().and_then(Setup::parse);
    leg.bundle = w.bundle;
    leg.bundle_offered = w.bundle_offered;
    leg.bundle_keyed = w.bundle_keyed;
    leg.mid_ext = w.mid_ext;
}

/// The DTLS-SRTP keys kept of a leg, if its handshake had finished.
fn kept_keys(d: &LegRecord) -> Option<Result<srtpgate_webrtc::dtls::SrtpKeys, String>> {
    let (suite, local, remote) = d.web.as_ref()?.keys.as_ref()?;
    Some((|| {
        let suite: srtp::Suite = suite.parse().map_err(|e| format!("kept DTLS-SRTP suite {suite}: {e}"))?;
        let local = zeroize::Zeroizing::new(hex::decode(local).map_err(|_| "kept DTLS-SRTP key: not hex")?);
        let remote = zeroize::Zeroizing::new(hex::decode(remote).map_err(|_| "kept DTLS-SRTP key: not hex")?);
        srtpgate_webrtc::dtls::SrtpKeys::from_parts(suite, &local, &remote)
    })())
}

/// The running transport of a resumed WebRTC leg: ICE answered with the
/// same credentials on the pair it chose; the handshake's keys kept (no
/// DTLS association: a new offer and answer start one).
fn resumed_web(leg: &Leg, w: &WebRecord, keys: Option<srtpgate_webrtc::dtls::SrtpKeys>) -> WebLeg {
    let mut web = WebLeg::new(leg.ice.clone());
    web.ice_peer = w.ice_peer;
    web.nominated = w.nominated;
    web.dtls_peer = w.dtls_peer;
    web.keyed = keys.is_some();
    web.keys = keys;
    web
}

/// Where a kept leg binds again: its interface by name (else the one that
/// holds its address), on its address, advertised as the configuration
/// says now (an operator may have changed the NAT address).
fn kept_binding(interfaces: &Interfaces, d: &LegRecord) -> Result<Binding, String> {
    let found = match &d.interface {
        Some(name) => {
            let index = interfaces.find(name).ok_or_else(|| format!("interface '{name}' is no longer configured"))?;
            interfaces
                .get(index)
                .and_then(|i| i.addrs.iter().find(|a| a.local == d.ip))
                .map(|&addr| Binding { interface: index, addr })
        }
        None => interfaces.holding(d.ip),
    };
    found.ok_or_else(|| format!("address {} is no longer on its interface", d.ip))
}

/// The indices kept of a call, by (m-line, party, direction, key): streams
/// and uses.
fn kept_states(indexes: &HashMap<String, String>) -> HashMap<ContextId, Kept> {
    let mut states: HashMap<ContextId, Kept> = HashMap::new();
    for (f, v) in indexes {
        let parts: Vec<&str> = f.split('.').collect();
        let [i, party, dir, key, last] = parts[..] else { continue };
        let (Ok(i), Ok(party)) = (i.parse::<usize>(), party.parse::<usize>()) else { continue };
        let tx = dir == "t";
        let e = states.entry((i, party, tx, key.to_string())).or_default();
        if last == "uses" {
            e.1 = parse_uses(v);
        } else if let (Ok(ssrc), Some((rtp, rtcp))) = (u32::from_str_radix(last, 16), record::parse_index(v)) {
            e.0.push(srtp::StreamState { ssrc, tx, rtp, rtcp });
        }
    }
    states
}

fn parse_uses(v: &str) -> Vec<(u64, u64)> {
    v.split(' ')
        .filter_map(|p| {
            let (a, b) = p.split_once(',')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect()
}
