//! Media forking, as rtpengine's `subscribe request`, `subscribe answer`
//! and `unsubscribe`: a new participant of a call (a SIPREC recorder, a
//! monitor) receives a copy of what some parties send.
//!
//! 1. `subscribe request` picks the parties (`all`, a `from-tag`, or a
//!    `from-tags` list), binds one port pair per copied stream and replies
//!    with a `sendonly` SDP offer: one m-line per party and stream, the
//!    party's own codecs, and **fresh** SDES keys made for the subscriber
//!    (rtpengine offers the key it uses towards the other party, so a
//!    recorder could decrypt the live call; here it holds only its own).
//! 2. `subscribe answer` takes the subscriber's SDP: where each copy goes
//!    and which of the offered keys it accepted. The worker then protects
//!    a copy of each packet the party sends, after it is authenticated,
//!    under that key, with its own SSRC, sequence numbers and timestamps
//!    (continuous across the party's re-INVITEs and SSRC changes), and
//!    sends it from the fork's port.
//! 3. `unsubscribe` (or `delete`, or a new `subscribe request` with the same
//!    to-tag) stops it and releases the ports.
//!
//! The original call's packets are not touched: a copy is made after the
//! packet is routed, and a copy that cannot be made is dropped and counted
//! on the fork alone. What a subscriber sends (RTCP receiver reports) is not
//! read. Subscriptions are not kept across a restart (Redis).

use crate::call::{Call, Leg};
use crate::command::{Command, ForkKey, ForkSetup, Resources};
use crate::edit::{is_dtls, is_secure};
use crate::keys::{allowed_suites, fresh, keying, with_params};
use crate::offer::endpoint;
use crate::table::{Refusal, Table};
use rand::{rngs::OsRng, RngCore, TryRngCore};
use srtpgate_ng::{Request, TransportProtocol, Value};
use srtpgate_sdp::formats::Format;
use srtpgate_sdp::Sdp;
use srtpgate_stats::LegStats;
use std::fmt::Write as _;
use std::sync::Arc;
use zeroize::Zeroizing;

/// One subscriber of a call: the participant a `subscribe request` made.
pub struct Subscription {
    /// Its tag (the request's `to-tag`, or one made here).
    pub tag: String,
    /// `set-label`.
    pub label: Option<String>,
    /// Its copies, one per m-line of its SDP, in order.
    pub forks: Vec<Fork>,
    /// The subscriber answered: its copies flow.
    pub answered: bool,
}

/// A copy of one party's media of one stream, towards a subscriber.
pub struct Fork {
    /// Its name in the data plane.
    pub key: ForkKey,
    /// The copied stream (m-line index of the call).
    pub stream: usize,
    /// The copied party.
    pub party: usize,
    /// The relay's end towards the subscriber: port pair, keys offered and
    /// agreed, the subscriber's address.
    pub leg: Leg,
    /// The media type and the party's formats, as offered.
    pub media_type: String,
    pub formats: Vec<Format>,
    /// The subscriber rejected this m-line (port 0).
    pub rejected: bool,
    /// Its `a=label` (with `siprec`).
    pub label: Option<String>,
}

impl Table {
    /// `subscribe request`: a new subscriber, offered a copy of the chosen
    /// parties' media.
    pub(crate) fn subscribe_request(&mut self, req: &Request, res: &mut dyn Resources) -> Result<Value, Refusal> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        let call = self.calls.get(&call_id).ok_or_else(|| format!("Unknown call-id '{call_id}'"))?;
        let (parties, notes) = subscribed_parties(call, req)?;
        self.notes.extend(notes);
        let sources: Vec<(usize, usize)> = parties
            .iter()
            .flat_map(|&p| {
                call.streams.iter().enumerate().filter_map(move |(i, s)| match s {
                    Some(s) if !s.rejected => Some((i, p)),
                    _ => None,
                })
            })
            .collect();
        if sources.is_empty() {
            return Err("No medias found (no monologues matched)".into());
        }
        let tag = match &req.to_tag {
            Some(t) => t.clone(),
            None => random_tag(),
        };
        if call.party_of(&tag).is_some() {
            return Err(format!("to-tag '{tag}' is a party of the call, not a subscriber"));
        }
        let proto = match req.transport_protocol {
            Some(t) if t.is_dtls() => {
                return Err(
                    "a subscriber gets SDES-SRTP or plain RTP: DTLS-SRTP towards a subscriber is not supported".into()
                )
            }
            Some(t) => Some(t),
            None => None,
        };
        let suites = allowed_suites(&self.cfg.sdes_suites, &req.sdes);
        let (from, _, notes) = self.cfg.interfaces.requested(req.direction.as_ref())?;
        self.notes.extend(notes);
        let v6 = req.address_family.as_deref() == Some("IP6");
        let at = self.cfg.interfaces.bind(from.map_or(0, |n| n.index), from.and_then(|n| n.v6).unwrap_or(v6));

        // Ports first: a refusal gives back what it bound.
        let mut ports = Vec::with_capacity(sources.len());
        for _ in &sources {
            match res.allocate(at) {
                Ok(p) => ports.push(p),
                Err(e) => {
                    for p in ports {
                        res.release(crate::interface::Pair { interface: at.interface, port: p });
                    }
                    return Err(format!("no port pair for a subscriber: {e}"));
                }
            }
        }

        // A request for a to-tag that subscribes already replaces it.
        self.end_subscription(&call_id, &tag, res);
        let first_key = self.next_fork;
        self.next_fork += sources.len() as ForkKey;
        let call = self.calls.get_mut(&call_id).ok_or("the call went")?;
        let mut forks = Vec::with_capacity(sources.len());
        let mut commands = Vec::with_capacity(sources.len());
        for (&(stream, party), port) in sources.iter().zip(ports) {
            let Some(s) = call.streams[stream].as_ref() else {
                // The sources came from this call's streams; a port is never
                // kept without its fork all the same.
                res.release(crate::interface::Pair { interface: at.interface, port });
                continue;
            };
            let source = &s.legs[party];
            let secure = match proto {
                Some(t) => t.is_secure(),
                None => source.srtp || source.dtls || is_secure(&source.proto),
            };
            let feedback = match proto {
                Some(t) => t.is_feedback(),
                None => source.proto.ends_with('F') && !is_dtls(&source.proto),
            };
            let mut leg = Leg::new(at, port, Arc::new(LegStats::default()));
            leg.proto = match (secure, feedback) {
                (true, true) => TransportProtocol::RtpSavpf,
                (true, false) => TransportProtocol::RtpSavp,
                (false, true) => TransportProtocol::RtpAvpf,
                (false, false) => TransportProtocol::RtpAvp,
            }
            .name()
            .to_string();
            leg.srtp = secure;
            if secure {
                leg.relay_keys =
                    suites.iter().zip(1..).map(|(&suite, tag)| with_params(fresh(tag, suite), &req.sdes)).collect();
            }
            let key = first_key + forks.len() as ForkKey;
            commands.push(Command::AddFork {
                worker: call.worker,
                call: call.key,
                stream,
                party,
                fork: key,
                port: leg.pair(),
                stats: leg.stats.clone(),
            });
            forks.push(Fork {
                key,
                stream,
                party,
                media_type: s.media_type.clone(),
                formats: s.party_formats(party),
                leg,
                rejected: false,
                label: req.flags.siprec.then(|| (forks.len() + 1).to_string()),
            });
        }
        let sdp = offer_sdp(&forks, at.addr.advertised);
        let mut reply = srtpgate_ng::ok().with("sdp", sdp.as_str());
        let from_tags: Vec<Value> =
            forks.iter().map(|f| Value::from(call.tags[f.party].as_deref().unwrap_or(""))).collect();
        if parties.len() == 1 {
            reply.insert("from-tag", call.tags[parties[0]].as_deref().unwrap_or(""));
        }
        reply.insert("from-tags", Value::List(from_tags));
        if req.flags.siprec {
            let (tag_medias, media_labels) = siprec_keys(call, &forks);
            reply.insert("tag-medias", tag_medias);
            reply.insert("media-labels", media_labels);
        }
        reply.insert("to-tag", tag.as_str());
        tracing::info!(call_id, subscriber = tag, forks = forks.len(), "subscription requested");
        let n = forks.len();
        call.subscriptions.push(Subscription { tag, label: req.set_label.clone(), forks, answered: false });
        self.pairs += n;
        for c in commands {
            self.command(c);
        }
        Ok(reply)
    }

    /// `subscribe answer`: the subscriber's SDP answer; its copies start.
    pub(crate) fn subscribe_answer(&mut self, req: &Request) -> Result<Value, Refusal> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        let tag = req.to_tag.clone().ok_or("missing key 'to-tag'")?;
        let text = req.sdp.as_deref().ok_or("missing key 'sdp'")?;
        let sdp = Sdp::parse(text).map_err(|e| format!("bad SDP: {e}"))?;
        let call = self.calls.get(&call_id).ok_or_else(|| format!("Unknown call-id '{call_id}'"))?;
        let sub = call.subscriptions.iter().find(|s| s.tag == tag).ok_or("To-tag not found")?;
        if sub.answered {
            return Err("the subscription was answered already (unsubscribe, then subscribe again)".into());
        }
        if sdp.media().len() != sub.forks.len() {
            return Err(format!(
                "the subscriber's answer has {} m-lines, the offer had {}",
                sdp.media().len(),
                sub.forks.len()
            ));
        }
        // Decide for every m-line before anything changes.
        let mut plans = Vec::with_capacity(sub.forks.len());
        for (i, (m, f)) in sdp.media().iter().zip(&sub.forks).enumerate() {
            if m.port() == 0 {
                plans.push(None);
                continue;
            }
            let ip = m.connection().or(sdp.connection()).filter(|ip| !ip.is_unspecified());
            let Some(ip) = ip else {
                return Err(format!("m-line {i} of the subscriber's answer has no address"));
            };
            if is_secure(m.proto()) != f.leg.srtp || is_dtls(m.proto()) {
                return Err(format!("m-line {i}: the subscriber answered {} to an {} offer", m.proto(), f.leg.proto));
            }
            let answered: Vec<u8> = m.payload_formats().iter().map(|x| x.pt).collect();
            if let Some(missing) = f.formats.iter().find(|x| !answered.contains(&x.pt)) {
                return Err(format!(
                    "m-line {i}: the subscriber's answer leaves out {missing} (pt {}); srtpgate does not \
                     transcode towards a subscriber, so every offered format must be accepted",
                    missing.pt
                ));
            }
            let keys = if f.leg.srtp {
                let picked = m.crypto().into_iter().flatten().find_map(|c| {
                    f.leg.relay_keys.iter().find(|k| k.tag == c.tag && k.suite == c.suite).map(|k| (k.clone(), c))
                });
                let Some((relay, theirs)) = picked else {
                    return Err(format!(
                        "m-line {i}: the subscriber's answer accepts none of the offered a=crypto keys"
                    ));
                };
                let policy = keying(&relay, self.cfg.libsrtp_aes192_kdf)?;
                Some((relay, theirs, policy))
            } else {
                None
            };
            let clock_rate = f.formats.iter().find(|x| x.is_codec()).map_or(8000, |x| x.clock_rate.max(1));
            plans.push(Some((endpoint(ip, m.port(), m.rtcp()), keys, clock_rate)));
        }
        let call = self.calls.get_mut(&call_id).ok_or("the call went")?;
        let (worker, key) = (call.worker, call.key);
        let sub = call.subscriptions.iter_mut().find(|s| s.tag == tag).ok_or("To-tag not found")?;
        let mut commands = Vec::new();
        for (f, plan) in sub.forks.iter_mut().zip(plans) {
            let Some(((rtp, rtcp), keys, clock_rate)) = plan else {
                f.rejected = true;
                continue;
            };
            let Some(peer) = rtp else { continue };
            f.leg.peer = Some((rtp, rtcp));
            let tx = keys.map(|(relay, theirs, policy)| {
                f.leg.relay_key = Some(relay);
                f.leg.endpoint_key = Some(theirs);
                policy
            });
            let ssrc = OsRng.unwrap_err().next_u32();
            commands.push(Command::ConfigureFork {
                worker,
                call: key,
                fork: f.key,
                setup: Box::new(ForkSetup { peer, tx, ssrc, clock_rate }),
            });
        }
        sub.answered = true;
        for c in commands {
            self.command(c);
        }
        tracing::info!(call_id, subscriber = tag, "subscription answered");
        Ok(srtpgate_ng::ok())
    }

    /// `unsubscribe`: the subscriber's copies stop.
    pub(crate) fn unsubscribe(&mut self, req: &Request, res: &mut dyn Resources) -> Result<Value, Refusal> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        let tag = req.to_tag.clone().ok_or("missing key 'to-tag'")?;
        let call = self.calls.get(&call_id).ok_or_else(|| format!("Unknown call-id '{call_id}'"))?;
        if !call.subscriptions.iter().any(|s| s.tag == tag) {
            return Err("To-tag not found".into());
        }
        self.end_subscription(&call_id, &tag, res);
        tracing::info!(call_id, subscriber = tag, "unsubscribed");
        Ok(srtpgate_ng::ok())
    }

    /// Stops the subscription `tag` of a call, if there is one: its forks
    /// leave the worker, its ports are released.
    fn end_subscription(&mut self, call_id: &str, tag: &str, res: &mut dyn Resources) {
        let Some(call) = self.calls.get_mut(call_id) else { return };
        let Some(i) = call.subscriptions.iter().position(|s| s.tag == tag) else { return };
        let sub = call.subscriptions.remove(i);
        let (worker, key) = (call.worker, call.key);
        for f in &sub.forks {
            self.command(Command::RemoveFork { worker, call: key, fork: f.key });
            res.release(f.leg.pair());
        }
        self.pairs -= sub.forks.len();
    }

    /// The ports of a removed call's subscriptions (its worker drops the
    /// forks with the call's streams).
    pub(crate) fn release_subscriptions(&mut self, call: &Call, res: &mut dyn Resources) {
        for f in call.subscriptions.iter().flat_map(|s| &s.forks) {
            self.pairs -= 1;
            res.release(f.leg.pair());
        }
    }

    /// A call's subscribers for `query`'s `tags`, as rtpengine lists a
    /// subscription's participant: its tag, label, `subscriptions` (the
    /// parties it copies) and `medias` (one per fork: what it sent where).
    pub(crate) fn subscriber_tags(call: &Call) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for s in &call.subscriptions {
            let mut from: Vec<Value> = Vec::new();
            let mut medias = Vec::new();
            for f in &s.forks {
                let t = call.tags[f.party].as_deref().unwrap_or("");
                if !from.iter().any(|v| v.get("tag").and_then(Value::as_str) == Some(t)) {
                    from.push(Value::dict().with("tag", t).with("type", "subscription"));
                }
                let st = f.leg.stats.snapshot();
                let mut m = Value::dict()
                    .with("index", (f.stream + 1) as u64)
                    .with("from-tag", t)
                    .with("type", f.media_type.as_str())
                    .with("protocol", f.leg.proto.as_str())
                    .with("local port", f.leg.port as u64)
                    .with(
                        "state",
                        if f.rejected {
                            "rejected"
                        } else if s.answered {
                            "sending"
                        } else {
                            "offered"
                        },
                    )
                    .with("packets sent", st.packets_out)
                    .with("bytes sent", st.bytes_out)
                    .with("errors", st.dropped());
                if let Some((Some(peer), _)) = f.leg.peer {
                    m.insert("endpoint", peer.to_string());
                }
                if let Some(k) = &f.leg.relay_key {
                    m.insert("crypto suite", k.suite.name());
                }
                medias.push(m);
            }
            let mut v = Value::dict().with("tag", s.tag.as_str()).with("subscriptions", from).with("medias", medias);
            if let Some(l) = &s.label {
                v.insert("label", l.as_str());
            }
            out.push((s.tag.clone(), v));
        }
        out
    }

    /// The subscribers copying party `party`, for its `query` entry.
    pub(crate) fn subscribers_of(call: &Call, party: usize) -> Vec<Value> {
        call.subscriptions
            .iter()
            .filter(|s| s.forks.iter().any(|f| f.party == party))
            .map(|s| Value::dict().with("tag", s.tag.as_str()).with("type", "subscription"))
            .collect()
    }
}

/// The parties a `subscribe request` names: every party with `all`,
/// else the `from-tag`, else the `from-tags` (unknown ones noted).
fn subscribed_parties(call: &Call, req: &Request) -> Result<(Vec<usize>, Vec<String>), Refusal> {
    if req.flags.all {
        return Ok(((0..2).filter(|&p| call.tags[p].is_some()).collect(), Vec::new()));
    }
    if let Some(t) = &req.from_tag {
        return call
            .party_of(t)
            .map(|p| (vec![p], Vec::new()))
            .ok_or_else(|| "From-tag given, but no such tag exists".into());
    }
    let (mut parties, mut notes) = (Vec::new(), Vec::new());
    for t in &req.from_tags {
        match call.party_of(t) {
            Some(p) if !parties.contains(&p) => parties.push(p),
            Some(_) => {}
            None => notes.push(format!("from-tag '{t}' not found")),
        }
    }
    Ok((parties, notes))
}

/// The SDP offered to a subscriber: one `sendonly` m-line per fork, with
/// the party's formats and the fork's keys, on the relay's address.
fn offer_sdp(forks: &[Fork], addr: std::net::IpAddr) -> Zeroizing<String> {
    let family = if addr.is_ipv6() { "IP6" } else { "IP4" };
    // Room for every line at once: a String that grew would leave copies
    // of the keys in the memory it freed.
    let mut s = Zeroizing::new(String::with_capacity(256 + 1024 * forks.len()));
    let session = OsRng.unwrap_err().next_u32();
    // Writing into a String cannot fail.
    let _ = write!(s, "v=0\r\no=- {session} 1 IN {family} {addr}\r\ns=srtpgate\r\nc=IN {family} {addr}\r\nt=0 0\r\n");
    for f in forks {
        let pts: Vec<String> = f.formats.iter().map(|x| x.pt.to_string()).collect();
        let _ = write!(s, "m={} {} {} {}\r\n", f.media_type, f.leg.port, f.leg.proto, pts.join(" "));
        for x in &f.formats {
            if !x.name.is_empty() {
                let _ = write!(s, "a=rtpmap:{}\r\n", x.rtpmap());
            }
            if let Some(p) = &x.fmtp {
                let _ = write!(s, "a=fmtp:{} {p}\r\n", x.pt);
            }
        }
        let _ = write!(s, "a=sendonly\r\na=rtcp:{}\r\n", f.leg.port.wrapping_add(1));
        if let Some(l) = &f.label {
            let _ = write!(s, "a=label:{l}\r\n");
        }
        for k in &f.leg.relay_keys {
            let _ = write!(s, "a=crypto:{k}\r\n");
        }
    }
    s
}

/// SIPREC's reply keys, as rtpengine writes them with `siprec`:
/// `tag-medias` (per fork, in order: the party's tag and its one media) and
/// `media-labels` (by label: the party, the source m-line's index, type and
/// mode), from which a SIPREC client writes its recording metadata.
fn siprec_keys(call: &Call, forks: &[Fork]) -> (Value, Value) {
    let mut tag_medias = Vec::new();
    let mut labels = Value::dict();
    for f in forks {
        let tag = call.tags[f.party].as_deref().unwrap_or("");
        let label = f.label.as_deref().unwrap_or("");
        let index = (f.stream + 1) as u64;
        let media = Value::dict()
            .with("index", index)
            .with("type", f.media_type.as_str())
            .with("label", label)
            .with("mode", "sendrecv");
        tag_medias.push(Value::dict().with("tag", tag).with("medias", vec![media]));
        labels.insert(
            label,
            Value::dict()
                .with("tag", tag)
                .with("index", index)
                .with("type", f.media_type.as_str())
                .with("mode", "sendrecv"),
        );
    }
    (Value::List(tag_medias), labels)
}

/// A tag for a subscriber that the request did not name: 32 hex digits, as
/// rtpengine makes them.
fn random_tag() -> String {
    let mut b = [0u8; 16];
    OsRng.unwrap_err().fill_bytes(&mut b);
    b.iter().fold(String::with_capacity(32), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}
