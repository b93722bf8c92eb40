//! `answer`: decide, then edit, then commit; all or nothing.
//!
//! 1. **decide** ([`Table::decide_answer`]): per m-line, from the call and
//!    the answer, an [`AnswerLine`]: the codec plan (and the transcoders,
//!    built here because building them can fail), the keys each leg sends
//!    and receives with (checked), BUNDLE and the ICE/DTLS transports (a
//!    new DTLS association is made here too). Nothing changes yet.
//! 2. **edit**: the SDP for the offerer, one pass over the m-lines, then the
//!    session lines; the text must fit a reply.
//! 3. **commit**: the legs take the plan, retired keys are replaced, the
//!    ICE/DTLS legs start, and one `Configure` per leg is queued. A refused
//!    answer leaves the call as the last accepted one left it, so the keys
//!    recorded are always those the worker holds (a later answer decides
//!    from them whether to keep or replace the worker's contexts).

use crate::call::{other, Call, Leg, Stream};
use crate::command::{Command, Keying, LegSetup, Resources};
use crate::edit::{fits_reply, is_dtls, is_secure, point_media, point_session, pts_of, sdp_address};
use crate::keys::{key_tag, keying, renewed, same_key};
use crate::negotiate::{self, Plan, Transcoding};
use crate::offer::{endpoint, runs_ice, sip_source};
use crate::table::{Now, Refusal, Table};
use crate::transcoders::transcoders;
use crate::transport::{self as web, LocalTransport, PeerTransport};
use crate::web_leg::WebLeg;
use srtpgate_codec::transcode::Transcoder;
use srtpgate_ng::{Bundle, Request, Value};
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::formats::Format;
use srtpgate_sdp::Sdp;
use srtpgate_webrtc::dtls::{DtlsLeg, Fingerprint, Setup};
use srtpgate_webrtc::ice::IceCreds;
use std::net::SocketAddr;

/// What the answer decided for one m-line.
enum AnswerLine {
    /// Not relayed since the offer: port 0 in the answer too.
    NotRelayed,
    /// The answerer rejected it (port 0).
    Rejected,
    /// Relayed.
    Relay(Box<Answered>),
}

/// How a stream's transcoding changes.
enum Codecs {
    /// As it was (pass-through still, or the same pair: the running
    /// transcoders keep their state).
    Kept,
    /// It stops transcoding.
    Stops,
    /// It transcodes between a new pair: (to the answerer, to the offerer).
    Starts(Box<Transcoding>, Box<Transcoder>, Box<Transcoder>),
}

/// The formats for the offerer's answer, its ptime, and how transcoding
/// changes.
type CodecStep = (Option<Vec<Format>>, Option<u32>, Codecs);

/// A leg's ICE/DTLS transport after the answer (`None` on the line: the
/// leg runs none, or shares its BUNDLE owner's).
struct Transport {
    /// The relay's ICE credentials, when it runs ICE on the leg.
    ice: Option<IceCreds>,
    /// DTLS: a new association to run (`None`: keep the running one), and
    /// the peer's SDP address for a client without ICE.
    dtls: Option<(Option<DtlsLeg>, Option<SocketAddr>)>,
}

/// One leg's keys after the answer.
struct LegKeys {
    /// The key the endpoint sends with and the relay's towards it.
    endpoint: Option<CryptoAttr>,
    relay: Option<CryptoAttr>,
    /// The worker's contexts, where the key changed.
    rx: Option<Option<Keying>>,
    tx: Option<Option<Keying>>,
}

/// An m-line the relay carries, as the answer set it up.
struct Answered {
    /// The offerer's formats in the answer to it, and its ptime.
    to_offerer: Option<Vec<Format>>,
    ptime: Option<u32>,
    codecs: Codecs,
    /// The answerer's leg: its addresses, rtcp-mux, BUNDLE owner, mid
    /// extension, transport, whether it answered SRTP, its keys, and its
    /// ICE/DTLS transport.
    a_peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    a_mux: bool,
    a_bundle: Option<usize>,
    a_mid_ext: Option<u8>,
    a_transport: PeerTransport,
    a_srtp: bool,
    a_keys: LegKeys,
    a_web: Option<Transport>,
    a_pending: bool,
    /// The offerer's leg: its BUNDLE owner's port and ICE credentials when
    /// it is a member, its DTLS role, its keys and transport.
    o_bundle: Option<usize>,
    o_owner: Option<(u16, Option<IceCreds>)>,
    o_setup: Option<Setup>,
    o_keys: LegKeys,
    o_web: Option<Transport>,
    o_pending: bool,
}

/// What every m-line's decision reads from the answer as a whole.
struct AnswerContext {
    /// The session `c=` address.
    session_addr: Option<std::net::IpAddr>,
    /// The BUNDLE owner of each m-line in the answer.
    answer_bundles: Vec<Option<usize>>,
    /// Each stream's offerer leg port and ICE credentials, which members of
    /// its BUNDLE group answer with.
    owners: Vec<Option<(u16, Option<IceCreds>)>>,
    /// libsrtp's AES-192 key derivation.
    kdf: bool,
}

/// What the edit of an m-line leaves for the commit: the payload types of
/// the line sent to the offerer (both legs learn them), and the offerer's
/// mid extension id where the edit wrote one.
struct Edited {
    pts: Vec<u8>,
    o_mid_ext: Option<Option<u8>>,
}

impl Table {
    pub(crate) fn answer(&mut self, req: &Request, now: Now, res: &mut dyn Resources) -> Result<Value, Refusal> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        let from_tag = req.from_tag.clone().ok_or("missing key 'from-tag'")?;
        let to_tag = req.to_tag.clone().ok_or("missing key 'to-tag'")?;
        let text = req.sdp.as_deref().ok_or("missing key 'sdp'")?;
        let mut sdp = Sdp::parse(text).map_err(|e| format!("bad SDP: {e}"))?;
        // The answer's sender is the answerer: `direction`'s first name is
        // its leg's interface, the second the offerer's (rtpengine's
        // reading, so an answer repeats the offer's list reversed).
        let (from, to, notes) = self.cfg.interfaces.requested(req.direction.as_ref())?;
        self.notes.extend(notes);
        let call = self.calls.get(&call_id).ok_or_else(|| format!("Unknown call-id '{call_id}'"))?;
        let o =
            call.party_of(&from_tag).ok_or_else(|| format!("from-tag '{from_tag}' is no party of call '{call_id}'"))?;
        let a = other(o);
        for s in call.streams.iter().flatten() {
            for (party, named) in [(a, from), (o, to)] {
                self.leg_binding(call, Some(s), party, named, false)?;
            }
        }
        if matches!(&call.tags[a], Some(t) if *t != to_tag && call.answered) {
            // Another branch of a forked call answered: it takes the leg.
            tracing::info!(call_id, to_tag, "answer from another to-tag replaces the callee");
        }
        let n = sdp.media().len();
        if n != call.streams.len() {
            return Err(format!("answer has {n} media sections, the offer had {}", call.streams.len()));
        }
        let ice = offerer_ice(call, o, req);
        let lines = self.decide_answer(call, o, req, &sdp, &ice, now)?;
        let edits = self.edit_answer(call, o, req, &mut sdp, &lines, &ice);
        // Zeroized on a refusal below; moved whole into the reply.
        let mut text = sdp.text();
        fits_reply(&text)?;
        self.commit_answer(&call_id, o, to_tag, req, lines, edits, ice, now, res);
        Ok(srtpgate_ng::ok().with("sdp", std::mem::take(&mut *text)))
    }

    /// Step 1: one line per m-line, from the call as it stands.
    fn decide_answer(
        &self,
        call: &Call,
        o: usize,
        req: &Request,
        sdp: &Sdp,
        ice: &[Option<(bool, Option<IceCreds>)>],
        now: Now,
    ) -> Result<Vec<AnswerLine>, Refusal> {
        let session_addr = sdp.connection();
        // BUNDLE: the groups the answerer accepted (of those the relay
        // offered it), and the transport of each offerer's group owner (its
        // port and ICE credentials), which its members answer with.
        let answer_bundles = web::bundle_of(sdp);
        let owners: Vec<Option<(u16, Option<IceCreds>)>> = call
            .streams
            .iter()
            .zip(ice)
            .map(|(s, i)| s.as_ref().map(|s| (s.legs[o].port, i.as_ref().and_then(|i| i.1.clone()))))
            .collect();
        let kdf = self.cfg.libsrtp_aes192_kdf;
        let ctx = AnswerContext { session_addr, answer_bundles, owners, kdf };
        call.streams
            .iter()
            .enumerate()
            .map(|(i, s)| self.decide_answer_line(call, o, i, s.as_ref(), req, sdp, ice, &ctx, now))
            .collect()
    }

    /// Step 1 for one m-line.
    #[allow(clippy::too_many_arguments)]
    fn decide_answer_line(
        &self,
        call: &Call,
        o: usize,
        i: usize,
        stream: Option<&Stream>,
        req: &Request,
        sdp: &Sdp,
        ice: &[Option<(bool, Option<IceCreds>)>],
        ctx: &AnswerContext,
        now: Now,
    ) -> Result<AnswerLine, Refusal> {
        let a = other(o);
        let (session_addr, kdf) = (ctx.session_addr, ctx.kdf);
        let (answer_bundles, owners) = (&ctx.answer_bundles, &ctx.owners);
        let m = &sdp.media()[i];
        let Some(stream) = stream else {
            return Ok(AnswerLine::NotRelayed);
        };
        if m.port() == 0 {
            return Ok(AnswerLine::Rejected);
        }
        let (to_offerer, ptime, codecs) = self.decide_codecs(stream, o, req, &m.payload_formats(), i)?;
        // The answerer's leg.
        let peer_t = PeerTransport::read(sdp, i);
        let sa = &stream.legs[a];
        let addr = sdp.media_connection(i);
        let peer_ip = sip_source(req).or(addr.or(session_addr).filter(|ip| !ip.is_unspecified()));
        let a_peer = peer_ip.map(|ip| endpoint(ip, m.port(), m.rtcp()));
        let a_mux = m.rtcp_mux() && stream.mux_offered;
        let a_bundle = answer_bundles.get(i).copied().flatten().filter(|_| sa.bundle_offered && a_mux);
        let group = answer_bundles.iter().filter(|b| a_bundle.is_some() && **b == a_bundle).count();
        let a_mid_ext = web::mid_extmap(m).filter(|_| group > 1);
        let a_member = a_bundle.is_some_and(|p| p != i);
        let a_srtp = is_secure(m.proto());
        let a_ice = sa.ice.clone().filter(|_| sa.ice_on);
        let a_web = if a_member {
            // Bundled into another stream's transport: no handshake or
            // checks of its own.
            if sa.dtls && !is_dtls(m.proto()) {
                return Err(format!("media {i}: {} answer to a {} offer", m.proto(), sa.proto));
            }
            None
        } else if sa.dtls {
            if !is_dtls(m.proto()) {
                return Err(format!("media {i}: {} answer to a {} offer", m.proto(), sa.proto));
            }
            let fp = peer_t
                .fingerprint
                .clone()
                .ok_or_else(|| format!("media {i}: DTLS-SRTP answer without a=fingerprint (sha-256)"))?;
            let active = web::relay_active(peer_t.setup, None);
            let hint = a_peer.and_then(|p| p.0);
            Some(
                self.transport(call, i, a, a_ice, Some((fp, active, hint)), now)
                    .map_err(|e| format!("media {i}: {e}"))?,
            )
        } else if sa.ice_on {
            Some(Transport { ice: sa.ice.clone(), dtls: None })
        } else {
            None
        };
        if !a_srtp && !sa.relay_keys.is_empty() {
            // RFC 3264 answers keep the offer's protocol; a plain answer
            // to SRTP would have the relay send this leg's media in clear.
            return Err(format!("media {i}: plain {} answer to an RTP/SAVP offer", m.proto()));
        }
        let (a_rx, a_tx) = if a_srtp && !sa.dtls { answered_keys(sa, m, i)? } else { (None, None) };
        let picked = a_tx.as_ref().map(|k| k.suite);
        let a_keys = leg_keys(sa, a_rx, a_tx, kdf)?;
        let a_pending = sa.dtls && !keyed(self, call, i, a, a_member, sa.bundle_keyed);
        // The offerer's leg: answered with its own tag for the suite the
        // answerer picked when it offered that suite, else its first
        // usable one. A member of the offerer's BUNDLE group answers
        // with its owner's port and ICE credentials, and runs no
        // transport.
        let so = &stream.legs[o];
        let (o_ice_on, o_ice) = ice[i].clone().unwrap_or((false, None));
        let mut o_bundle = if req.bundle.contains(&Bundle::Reject) { None } else { so.bundle };
        let o_owner = o_bundle.filter(|&p| p != i && so.mux).and_then(|p| owners.get(p).cloned().flatten());
        if o_bundle.is_some() && o_owner.is_none() && o_bundle != Some(i) {
            o_bundle = None;
        }
        let (o_setup, o_web) = if so.dtls {
            let fp = so.transport.fingerprint.clone().ok_or_else(|| format!("media {i}: no a=fingerprint"))?;
            let active = web::relay_active(so.transport.setup, req.dtls.or(so.dtls_pref));
            let web = match o_owner {
                None => {
                    let ice = o_ice.clone().filter(|_| o_ice_on);
                    let hint = so.peer.and_then(|p| p.0);
                    Some(
                        self.transport(call, i, o, ice, Some((fp, active, hint)), now)
                            .map_err(|e| format!("media {i}: {e}"))?,
                    )
                }
                Some(_) => None,
            };
            (Some(if active { Setup::Active } else { Setup::Passive }), web)
        } else {
            (None, (o_ice_on && o_owner.is_none()).then(|| Transport { ice: o_ice.clone(), dtls: None }))
        };
        let (o_rx, o_tx) =
            if so.srtp && !so.dtls { offerer_keys(so, picked, &self.cfg.sdes_suites, i)? } else { (None, None) };
        let o_keys = leg_keys(so, o_rx, o_tx, kdf)?;
        let o_pending = so.dtls && !keyed(self, call, i, o, o_owner.is_some(), so.bundle_keyed);
        Ok(AnswerLine::Relay(Box::new(Answered {
            to_offerer,
            ptime,
            codecs,
            a_peer,
            a_mux,
            a_bundle,
            a_mid_ext,
            a_transport: peer_t,
            a_srtp,
            a_keys,
            a_web,
            a_pending,
            o_bundle,
            o_owner,
            o_setup,
            o_keys,
            o_web,
            o_pending,
        })))
    }

    /// The codec plan of a stream: the formats for the offerer's answer, its
    /// ptime, and how transcoding changes.
    fn decide_codecs(
        &self,
        stream: &Stream,
        o: usize,
        req: &Request,
        answered: &[Format],
        i: usize,
    ) -> Result<CodecStep, Refusal> {
        let mut offered = stream.offered.clone();
        if req.ptime.is_some() || req.ptime_reverse.is_some() {
            offered.engaged = true;
            offered.ptime_to_offerer = req.ptime.or(offered.ptime_to_offerer);
            offered.ptime_to_answerer = req.ptime_reverse.or(offered.ptime_to_answerer);
        }
        let plan = negotiate::answer(&offered, answered, &self.codecs).map_err(|e| format!("media {i}: {e}"))?;
        Ok(match plan {
            Plan::Pass(rewrite) => {
                (rewrite, None, if stream.transcoding.is_some() { Codecs::Stops } else { Codecs::Kept })
            }
            Plan::Transcode { to_offerer, transcoding } => {
                let ptime = transcoding.ptime.1;
                if stream.transcoding.as_ref() == Some(&(o, (*transcoding).clone())) {
                    // The same codecs as before (a re-INVITE): the running
                    // transcoders keep their state.
                    (Some(to_offerer), ptime, Codecs::Kept)
                } else {
                    let (to_a, to_o) = transcoders(
                        &transcoding,
                        &self.codecs,
                        self.cfg.codec_complexity,
                        self.cfg.plc,
                        self.cfg.dtmf_delay_ms,
                    )
                    .map_err(|e| format!("media {i}: {e}"))?;
                    (Some(to_offerer), ptime, Codecs::Starts(transcoding, to_a, to_o))
                }
            }
        })
    }

    /// A leg's ICE/DTLS transport: its ICE credentials, and the DTLS
    /// association for `dtls` (fingerprint, role, address hint), made anew
    /// unless the leg's running one fits.
    fn transport(
        &self,
        call: &Call,
        stream: usize,
        party: usize,
        ice: Option<IceCreds>,
        dtls: Option<(Fingerprint, bool, Option<SocketAddr>)>,
        now: Now,
    ) -> Result<Transport, String> {
        let dtls = match dtls {
            Some((fp, active, hint)) => {
                let running = self.web.get(&(call.key, stream, party));
                let made = WebLeg::prepare_dtls(running, &self.identity, &fp, active, ice.is_some(), now.mono)?;
                Some((made, hint))
            }
            None => None,
        };
        Ok(Transport { ice, dtls })
    }

    /// Step 2: the SDP for the offerer.
    fn edit_answer(
        &self,
        call: &Call,
        o: usize,
        req: &Request,
        sdp: &mut Sdp,
        lines: &[AnswerLine],
        ice: &[Option<(bool, Option<IceCreds>)>],
    ) -> Vec<Option<Edited>> {
        let mut edits = Vec::with_capacity(lines.len());
        let mut offerer_mids: Vec<String> = Vec::new();
        let mut ice_towards_offerer = false;
        for (i, line) in lines.iter().enumerate() {
            let m = &mut sdp.media_mut()[i];
            let r = match line {
                AnswerLine::NotRelayed | AnswerLine::Rejected => {
                    if m.port() != 0 {
                        m.set_port(0);
                    }
                    edits.push(None);
                    continue;
                }
                AnswerLine::Relay(r) => r,
            };
            if let Some(list) = &r.to_offerer {
                m.set_payload_formats(list);
            }
            if let Some(ms) = r.ptime {
                m.set_ptime(Some(ms));
            }
            // Both legs learn the payload types of the line as the offerer
            // gets it (the edits below leave the formats alone).
            let pts = pts_of(m);
            let Some(stream) = call.streams[i].as_ref() else { continue };
            let so = &stream.legs[o];
            let (o_ice_on, o_ice) = ice[i].clone().unwrap_or((false, None));
            let ip = sdp_address(so.advertised(), req);
            point_media(m, (ip, so.port), &so.proto, r.o_keys.relay.as_slice(), so.mux, req);
            web::strip_dtls(m);
            m.remove_attrs("mid");
            let (port, ice) = match &r.o_owner {
                Some((port, ice)) => (*port, ice.as_ref()),
                None => (so.port, o_ice.as_ref()),
            };
            m.set_port(port);
            let local = LocalTransport {
                ice: ice.filter(|_| o_ice_on),
                dtls: r.o_setup.map(|s| (self.identity.fingerprint(), s)),
                mid: so.transport.mid.clone(),
            };
            web::write_local(m, &local, SocketAddr::new(ip, port), so.mux);
            let mut o_mid_ext = None;
            if r.o_bundle.is_some() {
                offerer_mids.extend(so.transport.mid.clone());
                if so.mid_ext.is_some() {
                    o_mid_ext = Some(web::add_mid_extmap(m, so.mid_ext));
                }
            }
            edits.push(Some(Edited { pts, o_mid_ext }));
            ice_towards_offerer |= o_ice_on;
        }
        let relay_ip = call
            .streams
            .iter()
            .flatten()
            .next()
            .map_or_else(|| self.cfg.interfaces.bind(0, false).addr.advertised, |s| s.legs[o].advertised());
        let relay_ip = sdp_address(relay_ip, req);
        point_session(sdp, relay_ip, req);
        web::strip_session(sdp);
        if ice_towards_offerer {
            sdp.add_session_attr("ice-lite", None);
        }
        web::write_bundle(sdp, &offerer_mids);
        edits
    }

    /// Step 3: the legs take the plan; each leg's parameters go to the
    /// worker; the ICE/DTLS legs start.
    #[allow(clippy::too_many_arguments)]
    fn commit_answer(
        &mut self,
        call_id: &str,
        o: usize,
        to_tag: String,
        req: &Request,
        lines: Vec<AnswerLine>,
        edits: Vec<Option<Edited>>,
        ice: Vec<Option<(bool, Option<IceCreds>)>>,
        now: Now,
        res: &dyn Resources,
    ) {
        let a = other(o);
        let handover = req.flags.media_handover;
        let Some(call) = self.calls.get_mut(call_id) else { return };
        call.last_signal = now.mono;
        call.tags[a] = Some(to_tag);
        if let Some(l) = &req.label {
            call.labels[a] = Some(l.clone());
        }
        call.answered = true;
        let (key, worker) = (call.key, call.worker);
        let mut configs = Vec::new();
        let mut webs: Vec<(usize, usize, Transport)> = Vec::new();
        for (i, (line, edit)) in lines.into_iter().zip(edits).enumerate() {
            let Some(stream) = call.streams[i].as_mut() else { continue };
            // The offerer's ICE as the answer runs it (made once).
            if let Some((on, creds)) = ice[i].clone() {
                stream.legs[o].ice_on = on;
                stream.legs[o].ice = creds;
            }
            let r = match line {
                AnswerLine::Relay(r) => *r,
                AnswerLine::Rejected => {
                    stream.rejected = true;
                    continue;
                }
                AnswerLine::NotRelayed => continue,
            };
            let Some(edit) = edit else { continue };
            stream.rejected = false;
            let (tc_o, tc_a) = match r.codecs {
                Codecs::Kept => (None, None),
                Codecs::Stops => {
                    stream.transcoding = None;
                    (Some(None), Some(None))
                }
                Codecs::Starts(t, to_a, to_o) => {
                    tracing::info!(
                        call_id,
                        media = i,
                        "transcoding {} (offerer) <-> {} (answerer)",
                        t.offerer,
                        t.answerer
                    );
                    stream.transcoding = Some((o, *t));
                    (Some(Some(to_a)), Some(Some(to_o)))
                }
            };
            let sa = &mut stream.legs[a];
            sa.peer = r.a_peer;
            sa.mux = r.a_mux;
            sa.bundle = r.a_bundle;
            sa.mid_ext = r.a_mid_ext;
            sa.transport = r.a_transport;
            sa.srtp = r.a_srtp;
            extend_pts(sa, &edit.pts);
            take_keys(sa, r.a_keys.endpoint.clone(), r.a_keys.relay.clone());
            configs.push((i, a, setup(sa, r.a_keys, handover, tc_a, r.a_pending)));
            if let Some(w) = r.a_web {
                webs.push((i, a, w));
            }
            let so = &mut stream.legs[o];
            so.bundle = r.o_bundle;
            if let Some(ext) = edit.o_mid_ext {
                so.mid_ext = ext;
            }
            extend_pts(so, &edit.pts);
            take_keys(so, r.o_keys.endpoint.clone(), r.o_keys.relay.clone());
            configs.push((i, o, setup(so, r.o_keys, handover, tc_o, r.o_pending)));
            for (_, party, s) in configs.iter_mut().rev().take(2) {
                s.kinds = Some(Box::new(stream.payload_kinds(*party)));
            }
            if let Some(w) = r.o_web {
                webs.push((i, o, w));
            }
        }
        let n = call.streams.len();
        let transcodes = call.streams.iter().flatten().any(|s| s.transcoding.is_some());
        // The old worker applies the configuration before it hands the call
        // over (if it does), so nothing sent here can overtake the move.
        // Kept calls send only with indices reserved in Redis first.
        let reserving = self.reserving();
        for (stream, party, mut setup) in configs {
            setup.reserving = reserving;
            self.command(Command::Configure { worker, call: key, stream, party, setup: Box::new(setup) });
        }
        self.start_web(key, n, webs, now);
        // Streams bundled into a transport that is keyed already (added by a
        // re-INVITE) get their keys now.
        for i in 0..n {
            for party in 0..2 {
                self.key_members(key, i, party, false);
            }
        }
        if transcodes && !self.tc_pool().contains(&worker) {
            self.move_to_transcoding(call_id, res);
        }
    }

    /// The ICE/DTLS legs after an answer: those set up or kept run (a
    /// re-INVITE with the same fingerprint keeps its keys); legs that no
    /// longer speak ICE or DTLS lose theirs.
    fn start_web(&mut self, key: crate::call::CallKey, n: usize, webs: Vec<(usize, usize, Transport)>, now: Now) {
        for i in 0..n {
            for party in 0..2 {
                if !webs.iter().any(|w| (w.0, w.1) == (i, party)) {
                    self.web.remove(&(key, i, party));
                }
            }
        }
        let mut actions = Vec::new();
        for (i, party, t) in webs {
            let leg = self.web.entry((key, i, party)).or_insert_with(|| WebLeg::new(None));
            leg.ice = t.ice;
            match t.dtls {
                Some((Some(made), hint)) => {
                    actions.push((i, party, leg.install_dtls(made, hint, now.mono, &mut self.web_totals)))
                }
                Some((None, _)) => {}
                None => leg.dtls = None,
            }
        }
        for (stream, party, act) in actions {
            self.apply_web(key, stream, party, act);
        }
    }
}

/// Each relayed stream's offerer ICE as this answer runs it: on or off, and
/// the relay's credentials (made once).
fn offerer_ice(call: &Call, o: usize, req: &Request) -> Vec<Option<(bool, Option<IceCreds>)>> {
    call.streams
        .iter()
        .map(|s| {
            s.as_ref().map(|s| {
                let so = &s.legs[o];
                let on = runs_ice(req, so.transport.ice.is_some());
                let creds = match &so.ice {
                    Some(c) => Some(c.clone()),
                    None if on => Some(IceCreds::generate()),
                    None => None,
                };
                (on, creds)
            })
        })
        .collect()
}

/// The answerer's SDES key and the relay's key it picked (by crypto tag
/// and suite, from those the relay offered it).
fn answered_keys(
    sa: &Leg,
    m: &srtpgate_sdp::Media,
    i: usize,
) -> Result<(Option<CryptoAttr>, Option<CryptoAttr>), Refusal> {
    let mine = m
        .crypto()
        .into_iter()
        .next()
        .ok_or_else(|| format!("media {i}: RTP/SAVP answer without a=crypto"))?
        .map_err(|e| format!("media {i}: bad a=crypto in the answer: {e}"))?;
    let relay =
        sa.relay_keys.iter().find(|k| k.tag == mine.tag && k.suite == mine.suite).cloned().ok_or_else(|| {
            format!("media {i}: the answer's crypto tag {} ({}) was not offered", mine.tag, mine.suite)
        })?;
    Ok((Some(mine), Some(relay)))
}

/// The offerer's key and the relay's towards it: the offerer's line of the
/// suite the answerer picked when it offered that suite, else its first
/// configured one, else its first; the relay's key kept while that line's
/// tag and suite stay.
fn offerer_keys(
    so: &Leg,
    picked: Option<srtp::Suite>,
    configured: &[srtp::Suite],
    i: usize,
) -> Result<(Option<CryptoAttr>, Option<CryptoAttr>), Refusal> {
    let chosen = picked
        .and_then(|s| so.offered.iter().find(|c| c.suite == s))
        .or_else(|| so.offered.iter().find(|c| configured.contains(&c.suite)))
        .or_else(|| so.offered.first())
        .cloned()
        .ok_or_else(|| format!("media {i}: the offerer has no usable crypto suite"))?;
    let relay = match &so.relay_key {
        Some(k) if k.suite == chosen.suite && k.tag == chosen.tag => k.clone(),
        _ => renewed(&chosen),
    };
    Ok((Some(chosen), Some(relay)))
}

/// A leg's keys after the answer, with the worker's contexts where they
/// changed (checked, so that the worker can build them).
fn leg_keys(leg: &Leg, endpoint: Option<CryptoAttr>, relay: Option<CryptoAttr>, kdf: bool) -> Result<LegKeys, Refusal> {
    let ctx = |k: &Option<CryptoAttr>| k.as_ref().map(|k| keying(k, kdf)).transpose();
    let rx = if same_key(&leg.endpoint_key, &endpoint) { None } else { Some(ctx(&endpoint)?) };
    let tx = if same_key(&leg.relay_key, &relay) { None } else { Some(ctx(&relay)?) };
    Ok(LegKeys { endpoint, relay, rx, tx })
}

/// Whether a DTLS leg's worker holds keys already: its own handshake's, or
/// (a BUNDLE member) its owner's.
fn keyed(t: &Table, call: &Call, i: usize, party: usize, member: bool, bundle_keyed: bool) -> bool {
    if member {
        bundle_keyed
    } else {
        t.web.get(&(call.key, i, party)).is_some_and(|w| w.keyed)
    }
}

/// A leg takes its agreed keys. A relay key retired is replaced in the
/// offered set, so no later answer can bring it back (a context built anew
/// from a used key would reuse its keystream).
fn take_keys(leg: &mut Leg, endpoint: Option<CryptoAttr>, relay: Option<CryptoAttr>) {
    if !same_key(&leg.relay_key, &relay) {
        if let Some(old) = &leg.relay_key {
            for k in leg.relay_keys.iter_mut().filter(|k| k.tag == old.tag && k.suite == old.suite) {
                *k = renewed(k);
            }
        }
    }
    leg.endpoint_key = endpoint;
    leg.relay_key = relay;
}

fn extend_pts(leg: &mut Leg, pts: &[u8]) {
    leg.pts.extend_from_slice(pts);
    leg.pts.sort_unstable();
    leg.pts.dedup();
}

/// A leg's parameters for its worker.
fn setup(
    leg: &Leg,
    keys: LegKeys,
    handover: bool,
    transcode: Option<Option<Box<Transcoder>>>,
    keys_pending: bool,
) -> LegSetup {
    LegSetup {
        peer: Some(leg.peer.unwrap_or((None, None))),
        rtcp_mux: leg.mux,
        rx: keys.rx,
        tx: keys.tx,
        tx_key: key_tag(&leg.relay_key),
        reserving: false,
        handover,
        transcode,
        demux: leg.dtls || leg.ice_on,
        keys_pending,
        bundle: leg.bundle,
        payload_types: leg.pts.clone(),
        mid_ext: leg.mid_ext(),
        kinds: None,
    }
}
