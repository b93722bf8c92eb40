//! `offer`: decide, then edit, then commit.
//!
//! 1. **decide** ([`Table::decide_offer`]): from the call as it stands and
//!    the offered SDP, one [`LinePlan`] per m-line: protocols, transport,
//!    codecs, the relay's keys and ICE credentials for the answerer, and
//!    whether the line needs new port pairs. Nothing changes yet.
//! 2. **ports**: the new streams' port pairs, from [`Resources`].
//! 3. **edit**: one pass of the line-preserving edits over the SDP, then
//!    the session lines; the text must fit a reply.
//! 4. **commit**: the call takes the plan and the commands for its worker
//!    are queued. Nothing here can fail, so a refused offer leaves the call
//!    as it was and only gives back the ports of step 2.

use crate::call::{other, Call, Leg, Stream};
use crate::command::{Command, Resources};
use crate::edit::{fits_reply, is_dtls, is_secure, point_media, point_session, pts_of, sdp_address, with_security};
use crate::interface::{Binding, Named, Pair};
use crate::keys::{allowed_suites, fresh, with_params};
use crate::negotiate::{self, Offered};
use crate::table::{Now, Refusal, Table};
use crate::transport::{self as web, LocalTransport, PeerTransport};
use srtp::Suite;
use srtpgate_ng::{Bundle, Ice, Request, RtcpMux, Sdes, Value};
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::formats::Format;
use srtpgate_sdp::Sdp;
use srtpgate_stats::LegStats;
use srtpgate_webrtc::dtls::Setup;
use srtpgate_webrtc::ice::IceCreds;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

/// What the offer decided for one m-line.
enum LinePlan {
    /// Port 0 in the offer: passed on as it is.
    Untouched,
    /// Not RTP (T.38 over udptl…): rejected rather than let the endpoints
    /// try to reach each other directly.
    NotRelayed,
    /// Relayed.
    Relay(Box<Relayed>),
}

/// An m-line the relay carries, as the offer set it up.
struct Relayed {
    /// audio, video, …
    media_type: String,
    /// The offerer's protocol and the one the answerer gets.
    in_proto: String,
    out_proto: String,
    /// The offerer's valid SDES keys.
    offered: Vec<CryptoAttr>,
    /// What the offerer's SDP said of ICE and DTLS.
    peer_t: PeerTransport,
    /// ICE-lite towards the answerer.
    ice_a: bool,
    /// Where the relay binds its legs towards the offerer and the answerer.
    at: (Binding, Binding),
    /// The offerer's addresses from its SDP.
    peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// The offerer multiplexes RTCP; the answerer is offered rtcp-mux.
    o_mux: bool,
    mux_onwards: bool,
    /// The formats for the answerer (when the request engaged codecs) and
    /// what the answer needs.
    to_answerer: Option<Vec<Format>>,
    codecs: Offered,
    /// The offerer's payload types and BUNDLE owner, and its mid extension.
    o_pts: Vec<u8>,
    o_bundle: Option<usize>,
    o_mid_ext: Option<u8>,
    /// The relay's keys for the answerer.
    relay_keys: Vec<CryptoAttr>,
    /// The relay's ICE credentials towards the answerer.
    ice: Option<IceCreds>,
    /// The `a=setup` offered to the answerer.
    setup: Option<Setup>,
    /// Offered to the answerer as one BUNDLE group.
    bundle_a: bool,
    /// The mid written for the answerer.
    mid: Option<String>,
    /// The relay's RTP ports of the two legs (known after step 2).
    ports: (u16, u16),
    /// A stream new to the call (it needs port pairs).
    new: bool,
}

/// What every m-line's decision reads from the offer as a whole.
struct OfferContext {
    /// The session `c=` address.
    session_addr: Option<IpAddr>,
    /// The family `address family` asks for.
    family_v6: Option<bool>,
    /// The suites the configuration and the SDES options allow.
    allowed: Vec<Suite>,
    /// `SDES-off`.
    sdes_off: bool,
    /// Each m-line's accepted BUNDLE owner.
    bundles: Vec<Option<usize>>,
    /// `BUNDLE-offer`/`-require`.
    offer_bundle: bool,
    /// The interfaces `direction` names for the offerer's and the
    /// answerer's legs.
    interfaces: (Option<Named>, Option<Named>),
}

/// What the edit of an m-line leaves for the commit.
struct Edited {
    /// The payload types of the m-line sent to the answerer.
    pts: Vec<u8>,
    /// The mid extension id in it.
    mid_ext: Option<u8>,
}

impl Table {
    pub(crate) fn offer(&mut self, req: &Request, now: Now, res: &mut dyn Resources) -> Result<Value, Refusal> {
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
        // The offer's sender is the offerer: `direction`'s first name is
        // its leg's interface, the second the answerer's.
        let (from, to, notes) = self.cfg.interfaces.requested(req.direction.as_ref())?;
        self.notes.extend(notes);
        let new = !self.calls.contains_key(&call_id);
        let fresh_call = if new { Some(self.admit(&from_tag, now, res)?) } else { None };
        let call = match &fresh_call {
            Some(c) => c,
            None => self.calls.get(&call_id).ok_or("call vanished")?,
        };
        let (o, tags) = offerer(call, &call_id, &from_tag, req)?;
        let call_holds = call.holds_ports();
        let decided = self.decide_offer(call, o, req, &mut sdp, (from, to));
        let mut plans = decided?;
        for p in &plans {
            if let LinePlan::Relay(r) = p {
                self.note_codecs(&r.codecs);
            }
        }
        self.bind_ports(&mut plans, res)?;
        let result = self.edit_offer(&plans, o, req, &mut sdp, fresh_call.as_ref()).and_then(|edits| {
            let holds = call_holds || plans.iter().any(|p| matches!(p, LinePlan::Relay(r) if r.new));
            if !holds && new && self.without_media >= self.cfg.limits.max_sessions_without_media {
                return Err(format!(
                    "{} calls hold no media already; at most {} (max-sessions-without-media)",
                    self.without_media, self.cfg.limits.max_sessions_without_media
                ));
            }
            // Zeroized if refused below; moved whole into the reply, whose
            // values wipe themselves.
            let text = sdp.text();
            fits_reply(&text)?;
            Ok((edits, text))
        });
        let (edits, mut text) = match result {
            Ok(r) => r,
            Err(e) => {
                for p in &plans {
                    if let LinePlan::Relay(r) = p {
                        if r.new {
                            res.release(Pair { interface: r.at.0.interface, port: r.ports.0 });
                            res.release(Pair { interface: r.at.1.interface, port: r.ports.1 });
                        }
                    }
                }
                return Err(e);
            }
        };
        if let Some(c) = fresh_call {
            self.insert(call_id.clone(), c);
            self.totals.calls_created += 1;
            tracing::info!(call_id, "new call");
        }
        self.commit_offer(&call_id, o, tags, req, plans, edits, now);
        Ok(srtpgate_ng::ok().with("sdp", std::mem::take(&mut *text)))
    }

    /// Step 1: one plan per m-line. Reads the call; edits the offered SDP
    /// only where a BUNDLE member's port 0 stands for its owner's port.
    fn decide_offer(
        &self,
        call: &Call,
        o: usize,
        req: &Request,
        sdp: &mut Sdp,
        interfaces: (Option<Named>, Option<Named>),
    ) -> Result<Vec<LinePlan>, Refusal> {
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
                    accept_bundle && (is_dtls(sdp.media()[p].proto()) || PeerTransport::read(sdp, p).ice.is_some())
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
        let ctx = OfferContext {
            session_addr: sdp.connection(),
            family_v6: family(req),
            allowed: allowed_suites(&self.cfg.sdes_suites, &req.sdes),
            sdes_off: req.sdes.contains(&Sdes::Off),
            bundles,
            offer_bundle,
            interfaces,
        };
        (0..n).map(|i| self.decide_line(call, o, i, req, sdp, &ctx)).collect()
    }

    /// Step 1 for one m-line.
    fn decide_line(
        &self,
        call: &Call,
        o: usize,
        i: usize,
        req: &Request,
        sdp: &Sdp,
        ctx: &OfferContext,
    ) -> Result<LinePlan, Refusal> {
        let a = other(o);
        let (session_addr, family_v6, sdes_off, offer_bundle) =
            (ctx.session_addr, ctx.family_v6, ctx.sdes_off, ctx.offer_bundle);
        let (allowed, bundles) = (&ctx.allowed, &ctx.bundles);
        let m = &sdp.media()[i];
        if m.port() == 0 {
            return Ok(LinePlan::Untouched);
        }
        if !m.is_rtp() {
            tracing::warn!(media = m.media_type(), proto = m.proto(), "media not relayed; rejected");
            return Ok(LinePlan::NotRelayed);
        }
        let addr = sdp.media_connection(i);
        let peer_t = PeerTransport::read(sdp, i);
        let in_proto = m.proto().to_string();
        let (srtp_o, dtls_o) = (is_secure(&in_proto), is_dtls(&in_proto));
        let out_proto = onward_proto(&in_proto, req);
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
        let peer_v6 = peer_ip.or(session_addr).is_some_and(|ip| ip.is_ipv6());
        let existing = call.streams.get(i).and_then(Option::as_ref);
        let at = (
            self.leg_binding(call, existing, o, ctx.interfaces.0, peer_v6).map_err(|e| format!("media {i}: {e}"))?,
            self.leg_binding(call, existing, a, ctx.interfaces.1, family_v6.unwrap_or(peer_v6))
                .map_err(|e| format!("media {i}: {e}"))?,
        );
        let peer = peer_ip.map(|ip| endpoint(ip, m.port(), m.rtcp()));
        let mux_flags = &req.rtcp_mux;
        let o_mux = m.rtcp_mux() && !mux_flags.contains(&RtcpMux::Reject);
        let mux_onwards = (o_mux && !mux_flags.contains(&RtcpMux::Demux))
            || mux_flags.contains(&RtcpMux::Offer)
            || mux_flags.contains(&RtcpMux::Require);
        // Codecs: the options applied; a stream that transcodes keeps
        // the receiver's codec in a re-offer that names none.
        let implicit: Vec<Format> = match existing.and_then(|s| s.transcoding.as_ref()) {
            Some((off, t)) => vec![if *off == a { t.offerer.clone() } else { t.answerer.clone() }],
            None => Vec::new(),
        };
        let formats = m.payload_formats();
        let (to_answerer, codecs) = negotiate::offer(
            &formats,
            &req.codec,
            req.flags.always_transcode,
            (req.ptime, req.ptime_reverse),
            &implicit,
            &self.codecs,
        )
        .map_err(|e| format!("media {i}: {e}"))?;
        // The mid goes into the RTP to a group of several m-lines only.
        let o_bundle = bundles.get(i).copied().flatten();
        let shared = o_bundle.is_some() && bundles.iter().filter(|x| **x == o_bundle).count() > 1;
        let prior_a = existing.map(|s| &s.legs[a]);
        let relay_keys = if srtp_a && !sdes_off {
            answerer_keys(prior_a, &offered, srtp_o && !dtls_o, allowed, &req.sdes)
                .map_err(|e| format!("media {i}: {e}"))?
        } else {
            Vec::new()
        };
        let ice = match prior_a.and_then(|l| l.ice.clone()) {
            Some(c) => Some(c),
            None if ice_a => Some(IceCreds::generate()),
            None => None,
        };
        let setup = dtls_a.then_some(match req.dtls {
            Some(srtpgate_ng::Dtls::Passive) => Setup::Passive,
            Some(srtpgate_ng::Dtls::Active) => Setup::Active,
            _ => Setup::ActPass,
        });
        // Offered as one BUNDLE group (`BUNDLE-offer`, ICE/DTLS
        // answerers), each m-line keeps its own port until the answer
        // accepts the group (RFC 8843).
        let bundle_a = offer_bundle && (ice_a || dtls_a) && mux_onwards;
        let mid =
            (req.flags.generate_mid || bundle_a).then(|| peer_t.mid.clone().unwrap_or_else(|| (i + 1).to_string()));
        Ok(LinePlan::Relay(Box::new(Relayed {
            media_type: m.media_type().to_string(),
            o_mid_ext: web::mid_extmap(m).filter(|_| shared),
            o_pts: formats.iter().map(|f| f.pt).collect(),
            o_bundle,
            in_proto,
            out_proto,
            offered,
            peer_t,
            ice_a,
            at,
            peer,
            o_mux,
            mux_onwards,
            to_answerer: codecs.engaged.then_some(to_answerer),
            codecs,
            relay_keys,
            ice,
            setup,
            bundle_a,
            mid,
            ports: existing.map_or((0, 0), |s| (s.legs[o].port, s.legs[a].port)),
            new: existing.is_none(),
        })))
    }

    /// Where a leg of m-line stream `existing` (`None`: a new one) binds
    /// for `party`: an existing leg stays where it is; a new one goes to
    /// the interface of the party's other legs in the call (so a
    /// re-offer's new m-line joins them), else to the one the request
    /// names, else to the default; on the address of the family `v6` (or
    /// the one an obsolete name asks for). A request naming another
    /// interface than the party's is refused: the relay does not move a
    /// party's legs between interfaces within a call.
    pub(crate) fn leg_binding(
        &self,
        call: &Call,
        existing: Option<&Stream>,
        party: usize,
        named: Option<Named>,
        v6: bool,
    ) -> Result<Binding, Refusal> {
        let all = &self.cfg.interfaces;
        // The party's interface in this call so far: this stream's leg,
        // else the leg of any other stream.
        let current = existing
            .map(|s| s.legs[party].at)
            .or_else(|| call.streams.iter().flatten().map(|s| s.legs[party].at).next());
        if let (Some(now), Some(n)) = (current, named) {
            if n.index != now.interface {
                let name = |k: usize| all.get(k).map_or("?", |i| i.name.as_str()).to_string();
                return Err(format!(
                    "a leg on interface '{}' cannot move to '{}' within a call (direction names each leg's \
                     interface in the first offer; later requests repeat it or leave it out)",
                    name(now.interface),
                    name(n.index)
                ));
            }
        }
        if existing.is_some() {
            if let Some(at) = current {
                return Ok(at);
            }
        }
        let index = named.map(|n| n.index).or(current.map(|at| at.interface)).unwrap_or(0);
        Ok(all.bind(index, named.and_then(|n| n.v6).unwrap_or(v6)))
    }

    /// The warnings of an offer's codec options, once each.
    fn note_codecs(&mut self, codecs: &Offered) {
        for name in &codecs.unsupported {
            let w = format!("codec '{name}' cannot be transcoded (no codec or plugin for it): left out");
            if !self.notes.contains(&w) {
                self.notes.push(w);
            }
        }
        for opt in &codecs.malformed {
            let w = format!("codec option '{opt}' is not name/clock/channels/bitrate/ptime/fmtp: ignored");
            if !self.notes.contains(&w) {
                self.totals.codec_options_ignored += 1;
                self.notes.push(w);
            }
        }
    }

    /// Step 2: port pairs for the new streams (offerer's leg, then the
    /// answerer's, in m-line order); all or none.
    fn bind_ports(&self, plans: &mut [LinePlan], res: &mut dyn Resources) -> Result<(), Refusal> {
        let mut bound: Vec<Pair> = Vec::new();
        let mut fail = None;
        for p in plans.iter_mut() {
            let LinePlan::Relay(r) = p else { continue };
            if !r.new {
                continue;
            }
            match res.allocate(r.at.0).and_then(|po| match res.allocate(r.at.1) {
                Ok(pa) => Ok((po, pa)),
                Err(e) => {
                    res.release(Pair { interface: r.at.0.interface, port: po });
                    Err(e)
                }
            }) {
                Ok(ports) => {
                    r.ports = ports;
                    bound.extend([
                        Pair { interface: r.at.0.interface, port: ports.0 },
                        Pair { interface: r.at.1.interface, port: ports.1 },
                    ]);
                }
                Err(e) => {
                    fail = Some(e);
                    break;
                }
            }
        }
        match fail {
            None => Ok(()),
            Some(e) => {
                for port in bound {
                    res.release(port);
                }
                Err(e)
            }
        }
    }

    /// Step 3: the SDP for the answerer, each m-line pointed at its leg.
    fn edit_offer(
        &self,
        plans: &[LinePlan],
        o: usize,
        req: &Request,
        sdp: &mut Sdp,
        fresh_call: Option<&Call>,
    ) -> Result<Vec<Option<Edited>>, Refusal> {
        let mut edits = Vec::with_capacity(plans.len());
        let mut bundle_mids: Vec<String> = Vec::new();
        let mut ice_towards_answerer = false;
        for (i, plan) in plans.iter().enumerate() {
            let m = &mut sdp.media_mut()[i];
            let r = match plan {
                LinePlan::Untouched => {
                    edits.push(None);
                    continue;
                }
                LinePlan::NotRelayed => {
                    m.set_port(0);
                    edits.push(None);
                    continue;
                }
                LinePlan::Relay(r) => r,
            };
            if let Some(list) = &r.to_answerer {
                m.set_payload_formats(list);
                if let Some(ms) = req.ptime {
                    m.set_ptime(Some(ms));
                }
            }
            let at = (sdp_address(r.at.1.addr.advertised, req), r.ports.1);
            point_media(m, at, &r.out_proto, &r.relay_keys, r.mux_onwards, req);
            web::strip_dtls(m);
            let local = LocalTransport {
                ice: r.ice.as_ref().filter(|_| r.ice_a),
                dtls: r.setup.map(|s| (self.identity.fingerprint(), s)),
                mid: r.mid.clone(),
            };
            web::write_local(m, &local, SocketAddr::new(at.0, at.1), r.mux_onwards);
            let mid_ext = if r.bundle_a { web::add_mid_extmap(m, None) } else { None };
            if r.bundle_a {
                bundle_mids.extend(m.attr("mid").map(|v| v.trim().to_string()));
            }
            ice_towards_answerer |= r.ice_a;
            edits.push(Some(Edited { pts: pts_of(m), mid_ext }));
        }
        // The session `c=`: the first stream's address towards the answerer
        // (streams of earlier offers that this one leaves at port 0 count).
        let call = fresh_call.or_else(|| req.call_id.as_deref().and_then(|id| self.calls.get(id)));
        let first_kept = call.and_then(|c| {
            c.streams.iter().enumerate().find_map(|(i, s)| s.as_ref().map(|s| (i, s.legs[other(o)].advertised())))
        });
        let first_new = plans.iter().enumerate().find_map(|(i, p)| match p {
            LinePlan::Relay(r) => Some((i, r.at.1.addr.advertised)),
            _ => None,
        });
        let relay_ip = match (first_kept, first_new) {
            (Some(k), Some(n)) => Some(if k.0 <= n.0 { k.1 } else { n.1 }),
            (k, n) => k.or(n).map(|x| x.1),
        }
        .unwrap_or_else(|| self.cfg.interfaces.bind(0, family(req).unwrap_or(false)).addr.advertised);
        point_session(sdp, sdp_address(relay_ip, req), req);
        web::strip_session(sdp);
        if ice_towards_answerer {
            sdp.add_session_attr("ice-lite", None);
        }
        web::write_bundle(sdp, &bundle_mids);
        Ok(edits)
    }

    /// Step 4: the call takes the plan; the new streams and their legs go
    /// to the worker.
    #[allow(clippy::too_many_arguments)]
    fn commit_offer(
        &mut self,
        call_id: &str,
        o: usize,
        tags: [Option<String>; 2],
        req: &Request,
        plans: Vec<LinePlan>,
        edits: Vec<Option<Edited>>,
        now: Now,
    ) {
        let a = other(o);
        let Some(call) = self.calls.get_mut(call_id) else { return };
        call.last_signal = now.mono;
        call.tags = tags;
        call.offerer = o;
        if let Some(l) = &req.label {
            call.labels[o] = Some(l.clone());
        }
        let held = call.holds_ports();
        let mut added = Vec::new();
        for (i, (plan, edit)) in plans.into_iter().zip(edits).enumerate() {
            let (LinePlan::Relay(r), Some(edit)) = (plan, edit) else { continue };
            if call.streams.len() <= i {
                call.streams.resize_with(i + 1, || None);
            }
            if r.new {
                let mut legs = [
                    Leg::new(r.at.0, r.ports.0, Arc::new(LegStats::default())),
                    Leg::new(r.at.1, r.ports.1, Arc::new(LegStats::default())),
                ];
                if o == 1 {
                    legs.swap(0, 1);
                }
                for (p, leg) in legs.iter().enumerate() {
                    let (block, dtmf) = call.leg_bits(p);
                    leg.stats.block.store(block, std::sync::atomic::Ordering::Relaxed);
                    leg.stats.dtmf.store(dtmf, std::sync::atomic::Ordering::Relaxed);
                }
                call.streams[i] = Some(Stream {
                    media_type: r.media_type.clone(),
                    legs,
                    rejected: false,
                    mux_offered: false,
                    offered: Offered::default(),
                    transcoding: None,
                });
                added.push(i);
            }
            let Some(stream) = call.streams[i].as_mut() else { continue };
            let r = *r;
            stream.rejected = false;
            stream.mux_offered = r.mux_onwards;
            stream.offered = r.codecs;
            let so = &mut stream.legs[o];
            so.srtp = is_secure(&r.in_proto);
            so.dtls = is_dtls(&r.in_proto);
            so.offered = r.offered;
            so.peer = r.peer;
            so.mux = r.o_mux;
            so.proto = r.in_proto;
            so.transport = r.peer_t;
            so.dtls_pref = req.dtls_reverse;
            so.bundle = r.o_bundle;
            so.pts = r.o_pts;
            so.mid_ext = r.o_mid_ext;
            let sa = &mut stream.legs[a];
            sa.dtls = is_dtls(&r.out_proto);
            sa.proto = r.out_proto;
            sa.ice_on = r.ice_a;
            sa.ice = r.ice;
            sa.setup_offered = r.setup;
            sa.relay_keys = r.relay_keys;
            sa.bundle_offered = r.bundle_a;
            sa.pts = edit.pts;
            sa.mid_ext = edit.mid_ext;
        }
        if !held && call.holds_ports() {
            // The call's first ports: it no longer counts as without media.
            self.without_media -= 1;
        }
        self.pairs += 2 * added.len();
        let (worker, key) = (call.worker, call.key);
        let adds: Vec<Command> =
            added.iter().filter_map(|&i| Some(call.streams[i].as_ref()?.add_command(worker, key, i))).collect();
        for c in adds {
            self.command(c);
        }
    }
}

/// The protocol the answerer is offered: the offerer's, or the one
/// `transport-protocol` names (to or from DTLS: as named; else its security
/// with the offerer's AVP/AVPF); SDES instead of DTLS with `DTLS=off`.
fn onward_proto(in_proto: &str, req: &Request) -> String {
    let out = match req.transport_protocol {
        Some(t) if t.is_dtls() || is_dtls(in_proto) => t.name().to_string(),
        Some(t) => with_security(in_proto, t.is_secure()),
        None => in_proto.to_string(),
    };
    if is_dtls(&out) && req.dtls == Some(srtpgate_ng::Dtls::Off) {
        with_security(&out, true)
    } else {
        out
    }
}

/// The relay's keys for the answerer: the offerer's suites when it offered
/// SDES (`sdes_o`, so that the answerer's pick fits both legs), else the
/// configured list; each filtered by the SDES options. The keys the leg has
/// are kept while the suites stay the same.
fn answerer_keys(
    prior: Option<&Leg>,
    offered: &[CryptoAttr],
    sdes_o: bool,
    allowed: &[Suite],
    sdes: &[Sdes],
) -> Result<Vec<CryptoAttr>, Refusal> {
    let suites: Vec<Suite> = if sdes_o {
        let mut v: Vec<Suite> = Vec::new();
        for c in offered {
            if allowed.contains(&c.suite) && !v.contains(&c.suite) {
                v.push(c.suite);
            }
        }
        v
    } else {
        allowed.to_vec()
    };
    if suites.is_empty() {
        return Err("no crypto suite left to offer (offered suites vs SDES options)".into());
    }
    Ok(match prior.map(|l| &l.relay_keys) {
        Some(k) if k.len() == suites.len() && k.iter().zip(&suites).all(|(k, s)| k.suite == *s) => k.clone(),
        _ => suites.iter().enumerate().map(|(t, s)| with_params(fresh(t as u32 + 1, *s), sdes)).collect(),
    })
}

/// The party that offers, and the call's tags after this offer.
fn offerer(call: &Call, call_id: &str, from_tag: &str, req: &Request) -> Result<(usize, [Option<String>; 2]), Refusal> {
    let mut tags = call.tags.clone();
    let o = if tags[0].as_deref() == Some(from_tag) {
        0
    } else if tags[1].as_deref() == Some(from_tag) {
        1
    } else if tags[1].is_none() && !call.answered {
        // A new offer from another tag before any answer: a fresh start.
        tags[0] = Some(from_tag.to_string());
        0
    } else {
        return Err(format!("from-tag '{from_tag}' is no party of call '{call_id}'"));
    };
    let a = other(o);
    if let (Some(t), None) = (&req.to_tag, &tags[a]) {
        tags[a] = Some(t.clone());
    }
    Ok((o, tags))
}

/// The address family `address family` asks for (`Some(true)`: IPv6).
fn family(req: &Request) -> Option<bool> {
    match req.address_family.as_deref() {
        Some(f) if f.eq_ignore_ascii_case("IP6") => Some(true),
        Some(f) if f.eq_ignore_ascii_case("IP4") => Some(false),
        _ => None,
    }
}

/// An endpoint's RTP and RTCP addresses from its m-line: `a=rtcp` where
/// given, else the next port.
pub(crate) fn endpoint(
    ip: IpAddr,
    port: u16,
    rtcp: Option<(u16, Option<IpAddr>)>,
) -> (Option<SocketAddr>, Option<SocketAddr>) {
    let rtcp = match rtcp {
        Some((p, ip2)) => SocketAddr::new(ip2.unwrap_or(ip), p),
        None => SocketAddr::new(ip, port.wrapping_add(1)),
    };
    (Some(SocketAddr::new(ip, port)), Some(rtcp))
}

/// With the `SIP-source-address` flag, the endpoint's address is where its
/// SIP message came from (`received-from`), not what its SDP says (NAT).
pub(crate) fn sip_source(req: &Request) -> Option<IpAddr> {
    if !req.flags.sip_source_address {
        return None;
    }
    req.received_from.as_ref().and_then(|(_, a)| a.parse().ok())
}

/// Whether the relay runs ICE-lite towards the party that receives this
/// message's SDP: as the `ICE` option says, else when the SDP it answers or
/// forwards (`had_ice`) spoke ICE.
pub(crate) fn runs_ice(req: &Request, had_ice: bool) -> bool {
    let on = match req.ice {
        Some(Ice::Remove) => false,
        Some(Ice::Force | Ice::ForceRelay | Ice::Optional) => true,
        Some(Ice::Default) | None => had_ice,
    };
    on && !req.flags.reject_ice
}
