//! The call table driven without a relay: offers, answers, re-offers and
//! deletes for SDES, plain RTP, WebRTC (BUNDLE, DTLS roles) and transcoded
//! calls, checked through the replies' SDP and the commands the table
//! queued, carried out on [`SimHost`]'s model of the workers.

use srtp::Suite;
use srtpgate_calls::interface::{Interfaces, Spec};
use srtpgate_calls::recording::RecordingSettings;
use srtpgate_calls::sim::SimHost;
use srtpgate_calls::{Limits, Load, Now, Settings, Table};
use srtpgate_codec::Registry;
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::Sdp;
use srtpgate_testkit::ng::{answer, delete, offer};
use srtpgate_webrtc::dtls::Identity;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const FP: &str =
    "sha-256 0A:0B:0C:0D:0E:0F:10:11:12:13:14:15:16:17:18:19:1A:1B:1C:1D:1E:1F:20:21:22:23:24:25:26:27:28:29";

struct Rig {
    table: Table,
    host: SimHost,
    now: Now,
}

fn settings(workers: usize, transcode_workers: usize) -> Settings {
    Settings {
        interfaces: Interfaces::plain(&["198.18.0.1".parse().unwrap()]),
        limits: Limits {
            max_id_length: 256,
            max_sdp_length: 32 * 1024,
            max_media: 16,
            max_sessions_without_media: 10,
            max_sessions: 100,
            max_load: None,
            max_bandwidth: None,
            min_free_files: None,
        },
        sdes_suites: vec![Suite::AES_CM_128_HMAC_SHA1_80, Suite::AES_CM_128_HMAC_SHA1_32],
        libsrtp_aes192_kdf: false,
        codec_complexity: None,
        plc: 0,
        dtmf_delay_ms: 0,
        workers,
        transcode_workers,
        timeout: Duration::from_secs(60),
        final_timeout: None,
        recording: Default::default(),
        quality: Some(Default::default()),
    }
}

impl Rig {
    fn new(workers: usize, transcode_workers: usize) -> Rig {
        Rig::with(settings(workers, transcode_workers))
    }

    fn with(cfg: Settings) -> Rig {
        let now = Now { mono: Instant::now(), wall: SystemTime::now() };
        let id = Arc::new(Identity::generate().expect("identity"));
        let workers = cfg.workers;
        let table = Table::new(cfg, Arc::new(Registry::new()), id, now);
        Rig { table, host: SimHost::new(workers, 30_000, 30_098), now }
    }

    /// One request; the reply, with the queued commands carried out.
    fn ask(&mut self, body: Value) -> Value {
        let dgram = srtpgate_ng::request("c", &body);
        let (_, b) = srtpgate_ng::split(&dgram).expect("split");
        let req = srtpgate_ng::parse_request(b).expect("request");
        let v = self.table.handle(&req, self.now, &mut self.host);
        self.host.drain(&mut self.table);
        assert!(self.host.faults.is_empty(), "{:?}", self.host.faults);
        self.table.check_invariants().expect("invariants");
        v
    }

    /// Asks, and wants `ok`; the reply's SDP.
    fn ok(&mut self, body: Value) -> Sdp {
        let v = self.ask(body);
        assert_eq!(v.get("result").and_then(Value::as_str), Some("ok"), "{v:?}");
        Sdp::parse(v.get("sdp").and_then(Value::as_str).expect("sdp")).expect("reply SDP parses")
    }

    fn error(&mut self, body: Value) -> String {
        let v = self.ask(body);
        assert_eq!(v.get("result").and_then(Value::as_str), Some("error"), "{v:?}");
        v.get("error-reason").and_then(Value::as_str).unwrap_or("").to_string()
    }

    /// The keys a leg's worker holds: (receives with, sends with).
    fn keys(&self, stream: usize, party: usize) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let leg = self.host.legs.iter().find(|(k, _)| (k.1, k.2) == (stream, party)).expect("leg").1;
        (leg.rx.clone(), leg.tx.clone())
    }
}

fn key(tag: u32) -> CryptoAttr {
    CryptoAttr::generate(tag, Suite::AES_CM_128_HMAC_SHA1_80, &mut rand::rngs::OsRng.unwrap_err())
}

use rand::TryRngCore as _;

/// An SDP with one m-line per `(type, port, proto, fmt, extra lines)`.
fn sdp(ip: &str, media: &[(&str, u16, &str, &str, String)]) -> String {
    let mut s = format!("v=0\r\no=- 1 1 IN IP4 {ip}\r\ns=-\r\nc=IN IP4 {ip}\r\nt=0 0\r\n");
    for (ty, port, proto, fmt, extra) in media {
        s.push_str(&format!("m={ty} {port} {proto} {fmt}\r\n{extra}"));
    }
    s
}

fn crypto_line(k: &CryptoAttr) -> String {
    format!("a=crypto:{k}\r\n")
}

/// The key material of a crypto line, as the model holds it.
fn material(k: &CryptoAttr) -> Vec<u8> {
    k.policy()
        .expect("policy")
        .keys
        .iter()
        .flat_map(|m| m.key().iter().chain(m.salt()).copied().collect::<Vec<u8>>())
        .collect()
}

fn first_crypto(sdp: &Sdp, i: usize) -> CryptoAttr {
    sdp.media()[i].crypto().into_iter().next().expect("a=crypto").expect("parses")
}

#[test]
fn sdes_offer_answer_reoffer_delete() {
    let mut r = Rig::new(1, 0);
    let ka = key(1);
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/SAVP", "0 8", crypto_line(&ka))]);
    let to_b = r.ok(offer("c1", "a", &o));
    let m = &to_b.media()[0];
    assert_eq!(m.proto(), "RTP/SAVP");
    assert!((30_000..=30_098).contains(&m.port()));
    let relay_b = first_crypto(&to_b, 0);
    assert_ne!(material(&relay_b), material(&ka), "the relay's key is its own");
    // Both legs' ports are bound and with the worker; nothing configured yet.
    assert_eq!((r.host.bound.len(), r.host.streams.len()), (2, 1));

    let kb = key(relay_b.tag);
    let a = sdp("198.18.2.2", &[("audio", 5000, "RTP/SAVP", "0", crypto_line(&kb))]);
    let to_a = r.ok(answer("c1", "a", "b", &a));
    let relay_a = first_crypto(&to_a, 0);
    assert_eq!(to_a.media()[0].port(), r.host.streams.values().next().unwrap()[0].port);
    let (a_rx, a_tx) = r.keys(0, 0);
    let (b_rx, b_tx) = r.keys(0, 1);
    assert_eq!(a_rx, Some(material(&ka)), "party a's leg receives with a's key");
    assert_eq!(a_tx, Some(material(&relay_a)), "and sends with the relay's key in a's answer");
    assert_eq!(b_rx, Some(material(&kb)));
    assert_eq!(b_tx, Some(material(&relay_b)));
    let all = [a_rx, a_tx, b_rx, b_tx];
    for (i, x) in all.iter().enumerate() {
        for y in &all[i + 1..] {
            assert_ne!(x, y, "every leg's keys differ");
        }
    }

    // A re-offer that adds video: the audio keeps its port and the relay's
    // key; the video gets a stream of its own.
    let kv = key(1);
    let o2 = sdp(
        "198.18.1.1",
        &[("audio", 4000, "RTP/SAVP", "0 8", crypto_line(&ka)), ("video", 4002, "RTP/SAVP", "96", crypto_line(&kv))],
    );
    let to_b2 = r.ok(offer("c1", "a", &o2));
    assert_eq!(to_b2.media()[0].port(), m.port());
    assert_eq!(material(&first_crypto(&to_b2, 0)), material(&relay_b), "the relay's key stays");
    assert_eq!((r.host.bound.len(), r.host.streams.len()), (4, 2));

    // A re-offer with fewer m-lines, or a bad one, changes nothing.
    let before = (r.host.bound.clone(), r.host.applied);
    assert!(r.error(offer("c1", "a", &o)).contains("fewer"));
    let bad = sdp(
        "198.18.1.1",
        &[
            ("audio", 4000, "RTP/SAVP", "0 8", crypto_line(&ka)),
            ("video", 4002, "RTP/SAVP", "96", crypto_line(&kv)),
            ("video", 4004, "RTP/SAVP", "97", String::new()),
        ],
    );
    assert!(r.error(offer("c1", "a", &bad)).contains("without a usable a=crypto"));
    assert_eq!((r.host.bound.clone(), r.host.applied), before, "a refused offer binds nothing and sends nothing");

    // An answer whose crypto tag was not offered is refused; the call keeps
    // the keys it had.
    let wrong = sdp(
        "198.18.2.2",
        &[
            ("audio", 5000, "RTP/SAVP", "0", crypto_line(&key(9))),
            ("video", 5002, "RTP/SAVP", "96", crypto_line(&key(9))),
        ],
    );
    assert!(r.error(answer("c1", "a", "b", &wrong)).contains("was not offered"));
    assert_eq!(r.keys(0, 1).0, Some(material(&kb)));

    let v = r.ask(delete("c1"));
    assert!(v.get("tags").is_some(), "delete answers with the call's report");
    assert!(r.host.bound.is_empty() && r.host.streams.is_empty(), "every port released, every stream closed");
    assert_eq!(r.table.len(), 0);
}

#[test]
fn plain_rtp_to_sdes_and_back() {
    let mut r = Rig::new(1, 0);
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/AVP", "0", String::new())]);
    let to_b = r.ok(offer("c2", "a", &o).with("transport-protocol", "RTP/SAVP"));
    assert_eq!(to_b.media()[0].proto(), "RTP/SAVP");
    let offered: Vec<CryptoAttr> = to_b.media()[0].crypto().into_iter().map(|c| c.expect("parses")).collect();
    assert_eq!(offered.len(), 2, "one key per configured suite");
    let kb = key(offered[0].tag);
    let to_a = r.ok(answer("c2", "a", "b", &sdp("198.18.2.2", &[("audio", 5000, "RTP/SAVP", "0", crypto_line(&kb))])));
    assert_eq!(to_a.media()[0].proto(), "RTP/AVP");
    assert!(to_a.media()[0].crypto().is_empty());
    assert_eq!(r.keys(0, 0), (None, None), "the plain leg has no contexts");
    assert_eq!(r.keys(0, 1), (Some(material(&kb)), Some(material(&offered[0]))));
    // A plain answer to the SRTP offer would send b's media in clear.
    let o2 = r.ok(offer("c3", "a", &o).with("transport-protocol", "RTP/SAVP"));
    assert_eq!(o2.media()[0].proto(), "RTP/SAVP");
    let plain = sdp("198.18.2.2", &[("audio", 5000, "RTP/AVP", "0", String::new())]);
    assert!(r.error(answer("c3", "a", "b", &plain)).contains("plain"));
}

/// A browser's offer: audio and video in one BUNDLE group over ICE and
/// DTLS-SRTP (`actpass`).
fn browser_offer() -> String {
    let common = format!("a=ice-ufrag:abcd\r\na=ice-pwd:0123456789012345678901\r\na=fingerprint:{FP}\r\na=setup:actpass\r\na=rtcp-mux\r\n");
    let mut s = String::from("v=0\r\no=- 1 1 IN IP4 198.18.1.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n");
    s.push_str(&format!(
        "m=audio 9000 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 198.18.1.1\r\na=mid:0\r\na=rtpmap:111 opus/48000/2\r\n{common}"
    ));
    s.push_str(&format!(
        "m=video 9000 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 198.18.1.1\r\na=mid:1\r\na=rtpmap:96 VP8/90000\r\n{common}"
    ));
    s
}

#[test]
fn webrtc_bundle_and_dtls_roles() {
    for (dtls, setup) in [(None, "passive"), (Some("active"), "active")] {
        let mut r = Rig::new(1, 0);
        let to_b = r.ok(offer("w", "a", &browser_offer()).with("transport-protocol", "RTP/AVP").with("ICE", "remove"));
        for m in to_b.media() {
            assert_eq!(m.proto(), "RTP/AVP");
            assert!(m.attr("fingerprint").is_none() && m.attr("ice-ufrag").is_none());
        }
        let a = sdp(
            "198.18.2.2",
            &[("audio", 5000, "RTP/AVP", "111", String::new()), ("video", 5002, "RTP/AVP", "96", String::new())],
        );
        let mut req = answer("w", "a", "b", &a);
        if let Some(d) = dtls {
            req = req.with("DTLS", d);
        }
        let to_a = r.ok(req);
        let (m0, m1) = (&to_a.media()[0], &to_a.media()[1]);
        assert_eq!(m0.proto(), "UDP/TLS/RTP/SAVPF");
        assert_eq!(m0.port(), m1.port(), "the bundled video answers with the group's port");
        assert_eq!(m0.attr("setup").map(str::trim), Some(setup), "DTLS {dtls:?}");
        assert!(m0.attr("fingerprint").is_some() && m0.attr("ice-ufrag").is_some());
        assert!(to_a.session_attr("group").is_some_and(|g| g.contains("BUNDLE")), "{}", to_a.text().as_str());
        // The browser's legs wait for the handshake's keys.
        let pending: Vec<bool> =
            (0..2).map(|i| r.host.legs.iter().find(|(k, _)| (k.1, k.2) == (i, 0)).unwrap().1.keys_pending).collect();
        assert_eq!(pending, [true, true]);
        let q = r.ask(Value::dict().with("command", "query").with("call-id", "w"));
        let text = String::from_utf8_lossy(&srtpgate_ng::reply(b"c", &q)).into_owned();
        assert!(text.contains("12:bundled withi1e"), "the video reports its BUNDLE owner: {text}");
        r.ask(delete("w"));
        assert!(r.host.bound.is_empty() && r.host.streams.is_empty());
    }
}

#[test]
fn transcoded_call_moves_to_the_transcoding_worker() {
    let mut r = Rig::new(2, 1);
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/AVP", "0", String::new())]);
    let codec = Value::dict().with("transcode", vec![Value::from("PCMA")]);
    let to_b = r.ok(offer("t", "a", &o).with("codec", codec));
    assert_eq!(to_b.media()[0].formats(), ["0", "8"], "PCMA added to the offer");
    assert_eq!(r.host.streams.keys().next().unwrap().0, 0, "new calls go to the pass-through pool");
    let to_a = r.ok(answer("t", "a", "b", &sdp("198.18.2.2", &[("audio", 5000, "RTP/AVP", "8", String::new())])));
    assert_eq!(to_a.media()[0].formats(), ["0"], "the offerer keeps its codec");
    assert!(r.host.legs.values().all(|l| l.transcodes), "both directions transcode");
    assert_eq!(r.host.streams.keys().next().unwrap().0, 1, "the call moved to the transcoding worker");
    assert_eq!(r.table.totals.calls_moved, 1);
    // The same answer again (a re-INVITE) keeps the running transcoders:
    // no new ones are sent.
    let applied = r.host.applied;
    r.ok(answer("t", "a", "b", &sdp("198.18.2.2", &[("audio", 5000, "RTP/AVP", "8", String::new())])));
    assert_eq!(r.host.applied, applied + 2, "one Configure per leg, transcoders kept");
    r.ask(delete("t"));
    assert!(r.host.bound.is_empty() && r.host.streams.is_empty());
}

#[test]
fn timeouts_end_calls_and_free_their_ports() {
    let mut r = Rig::new(1, 0);
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/AVP", "0", String::new())]);
    r.ok(offer("x", "a", &o));
    assert_eq!(r.table.expire(r.now, &mut r.host), 0);
    let later = Now { mono: r.now.mono + Duration::from_secs(61), wall: r.now.wall + Duration::from_secs(61) };
    assert_eq!(r.table.expire(later, &mut r.host), 1);
    r.host.drain(&mut r.table);
    assert!(r.host.bound.is_empty() && r.host.streams.is_empty());
    assert_eq!(r.table.totals.calls_timed_out, 1);
}

#[test]
fn limits_refuse_new_calls_with_nothing_bound() {
    let mut r = Rig::new(1, 0);
    // 50 port pairs: 25 calls of one stream fill the range.
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/AVP", "0", String::new())]);
    for i in 0..25 {
        r.ok(offer(&format!("f{i}"), "a", &o));
    }
    assert!(r.error(offer("full", "a", &o)).contains("port"));
    assert_eq!(r.table.len(), 25, "the refused offer made no call");
    r.table.set_draining(true);
    r.ask(delete("f0"));
    let v = r.ask(offer("drained", "a", &o).with("supports", vec![Value::from("load limit")]));
    assert_eq!(v.get("result").and_then(Value::as_str), Some("load limit"));
}

/// rtpengine's load limits: at each, a new call is refused with its text,
/// as `result: load limit` where the request supports it (the proxy tries
/// its next relay), else as rtpengine's one error; a call that exists goes
/// on; each refusal is counted by kind.
#[test]
fn load_limits_answer_as_rtpengine_does() {
    let limits = Limits {
        max_sessions: 2,
        max_load: Some(0.9),
        max_bandwidth: Some(1_000_000),
        min_free_files: Some(100),
        ..settings(1, 0).limits
    };
    let mut r = Rig::with(Settings { limits, ..settings(1, 0) });
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/AVP", "0", String::new())]);
    let supports = || Value::from(vec!["load limit"]);
    r.ok(offer("l1", "a", &o));
    let refused = |r: &mut Rig, load: Load, message: &str, reason: &str| {
        r.host.load = load;
        let v = r.ask(offer("new", "a", &o).with("supports", supports()));
        assert_eq!(v.get("result").and_then(Value::as_str), Some("load limit"), "{v:?}");
        assert_eq!(v.get("message").and_then(Value::as_str), Some(message));
        assert_eq!(r.error(offer("new", "a", &o)), reason);
        // The call that exists takes re-offers.
        r.ok(offer("l1", "a", &o).with("supports", supports()));
    };
    let calm = Load { busy: 0.2, bytes_per_s: 10_000, free_files: Some(5_000) };
    refused(&mut r, Load { busy: 0.95, ..calm }, "Load limit exceeded", "Parallel session limit reached");
    refused(
        &mut r,
        Load { bytes_per_s: 2_000_000, ..calm },
        "Bandwidth limit exceeded",
        "Parallel session limit reached",
    );
    refused(&mut r, Load { free_files: Some(40), ..calm }, "Ran out of ports", "Ran out of ports");
    r.host.load = calm;
    r.ok(offer("l2", "a", &o));
    refused(&mut r, calm, "Parallel session limit reached", "Parallel session limit reached");
    let counted: Vec<(&str, u64)> = r.table.totals.load_limited.iter().map(|(k, n)| (k.name(), *n)).collect();
    assert_eq!(counted, [("sessions", 2), ("load", 2), ("bandwidth", 2), ("files", 2)]);
    assert_eq!(r.table.len(), 2, "no refused offer made a call");
}

/// The relay between a private and a public network, behind 1:1 NAT on the
/// public side: `direction` puts each leg on its interface (the first name
/// for the leg towards the sender of the SDP), the SDP carries each
/// interface's advertised address, a port number may serve both, the
/// choice holds across the answer and re-offers, and an unknown name or a
/// move between interfaces is refused.
#[test]
fn direction_binds_each_leg_on_its_interface() {
    let specs: Vec<Spec> = ["priv/198.18.1.254", "pub/198.18.2.254!203.0.113.7", "priv/fd00:1::254"]
        .iter()
        .map(|s| Spec::parse(s).unwrap())
        .collect();
    let mut r = Rig::with(Settings { interfaces: Interfaces::new(&specs, &[]).unwrap(), ..settings(1, 0) });
    let dir = |a: &str, b: &str| Value::from(vec![a, b]);
    let ka = key(1);
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/SAVP", "0 8", crypto_line(&ka))]);
    let to_b = r.ok(offer("n1", "a", &o).with("direction", dir("priv", "pub")));
    // Towards the callee (public side): the NAT address, never the local one.
    assert_eq!(to_b.media_connection(0), Some("203.0.113.7".parse().unwrap()), "{}", to_b.text().as_str());
    assert!(!to_b.text().contains("198.18.2.254"));
    // Each leg's pair on its own interface; the same port number may serve
    // both (one range, two interfaces).
    let pairs = *r.host.streams.values().next().unwrap();
    assert_eq!((pairs[0].interface, pairs[1].interface), (0, 1));
    assert_eq!(pairs[0].port, pairs[1].port, "ports are counted per interface");
    let kb = key(first_crypto(&to_b, 0).tag);
    let a = sdp("198.18.2.2", &[("audio", 5000, "RTP/SAVP", "0", crypto_line(&kb))]);
    // The answer repeats the list reversed (its sender is the callee).
    let to_a = r.ok(answer("n1", "a", "b", &a).with("direction", dir("pub", "priv")));
    assert_eq!(to_a.media_connection(0), Some("198.18.1.254".parse().unwrap()));
    // query: each leg's interface and both its addresses.
    let q = r.ask(Value::dict().with("command", "query").with("call-id", "n1"));
    let b_media = q.get("tags").and_then(|t| t.get("b")).and_then(|t| t.get("medias")).and_then(Value::as_list);
    let b_media = &b_media.expect("b's medias")[0];
    assert_eq!(b_media.get("interface").and_then(Value::as_str), Some("pub"));
    let stream = &b_media.get("streams").and_then(Value::as_list).expect("streams")[0];
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    assert_eq!(text(stream.get("local address")).as_deref(), Some("198.18.2.254"));
    let adv = stream.get("advertised endpoint").and_then(|e| e.get("address"));
    assert_eq!(text(adv).as_deref(), Some("203.0.113.7"));
    // A re-offer that leaves direction out keeps both; one that moves a leg
    // is refused and leaves the call as it was.
    let again = r.ok(offer("n1", "a", &o));
    assert_eq!(again.media_connection(0), Some("203.0.113.7".parse().unwrap()));
    let e = r.error(offer("n1", "a", &o).with("direction", dir("priv", "priv")));
    assert!(e.contains("cannot move to 'priv'"), "{e}");
    // A new m-line of a re-offer joins its party's interface.
    let two = sdp(
        "198.18.1.1",
        &[("audio", 4000, "RTP/SAVP", "0 8", crypto_line(&ka)), ("video", 4002, "RTP/SAVP", "96", crypto_line(&ka))],
    );
    let to_b = r.ok(offer("n1", "a", &two));
    assert_eq!(to_b.media_connection(1), Some("203.0.113.7".parse().unwrap()));
    // An unknown name is refused with the names there are; the obsolete
    // internal/external stand for the default interface's families.
    let e = r.error(offer("n2", "a", &o).with("direction", dir("priv", "dmz")));
    assert_eq!(e, "unknown interface 'dmz' (this relay has: priv, pub)");
    let v = r.ask(offer("n3", "a", &o).with("direction", dir("internal", "external")));
    assert_eq!(v.get("result").and_then(Value::as_str), Some("ok"), "{v:?}");
    let to_b = Sdp::parse(v.get("sdp").and_then(Value::as_str).unwrap()).unwrap();
    assert_eq!(to_b.media_connection(0), Some("fd00:1::254".parse().unwrap()));
    let warning = v.get("warning").and_then(Value::as_str).unwrap_or("");
    assert!(warning.contains("no interface has that name"), "{warning}");
    // media-address: this message's SDP carries it instead.
    let to_b = r.ok(offer("n4", "a", &o).with("direction", dir("priv", "pub")).with("media-address", "192.0.2.44"));
    assert_eq!(to_b.media_connection(0), Some("192.0.2.44".parse().unwrap()));
    for id in ["n1", "n3", "n4"] {
        r.ask(delete(id));
    }
    assert!(r.host.bound.is_empty(), "every pair released: {:?}", r.host.bound);
}

fn recording_request(command: &str, call_id: &str) -> Value {
    Value::dict().with("command", command).with("call-id", call_id)
}

/// rtpengine's recording commands: start, pause, resume, stop, and
/// `record call` in an offer; what the workers are told to copy and what
/// the recorder is told, in order; replies as rtpengine's.
#[test]
fn recording_starts_pauses_resumes_and_stops() {
    let mut cfg = settings(1, 0);
    cfg.recording = RecordingSettings { dir: Some("/var/spool/rec".into()), ..RecordingSettings::default() };
    let mut r = Rig::with(cfg);
    let ka = key(1);
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/SAVP", "0 8", crypto_line(&ka))]);
    let to_b = r.ok(offer("rec", "a", &o).with("metadata", "tenant=7"));
    let kb = key(first_crypto(&to_b, 0).tag);
    r.ok(answer("rec", "a", "b", &sdp("198.18.2.2", &[("audio", 5000, "RTP/SAVP", "0", crypto_line(&kb))])));
    assert!(r.host.tapped.is_empty() && r.host.recordings.is_empty());
    let q = r.ask(recording_request("query", "rec"));
    assert_eq!(q.get("recording"), None, "{q:?}");
    assert_eq!(q.get("metadata").and_then(Value::as_str), Some("tenant=7"));

    let ok = |v: Value| assert_eq!(v, srtpgate_ng::ok());
    ok(r.ask(recording_request("start recording", "rec")));
    assert_eq!(r.host.recordings.get(&1), Some(&true));
    assert!(r.host.tapped.contains_key(&1));
    let q = r.ask(recording_request("query", "rec"));
    let rec = q.get("recording").expect("recording while it records");
    assert_eq!(rec.get("call recording").and_then(Value::as_int), Some(1));
    ok(r.ask(recording_request("pause recording", "rec")));
    assert_eq!(r.host.recordings.get(&1), Some(&false));
    assert!(!r.host.tapped.contains_key(&1), "a paused recording copies nothing");
    let q = r.ask(recording_request("query", "rec"));
    assert_eq!(q.get("recording").and_then(|v| v.get("call recording")).and_then(Value::as_int), Some(0));
    // `record call` does not resume a paused recording; `start recording` does.
    let o2 = r.ok(offer("rec", "a", &o).with("record call", "yes"));
    drop(o2);
    assert_eq!(r.host.recordings.get(&1), Some(&false));
    ok(r.ask(recording_request("start recording", "rec")));
    assert_eq!(r.host.recordings.get(&1), Some(&true));
    // `stop recording` with pause=yes pauses; without, stops.
    ok(r.ask(recording_request("stop recording", "rec").with("pause", "yes")));
    assert_eq!(r.host.recordings.get(&1), Some(&false));
    ok(r.ask(recording_request("stop recording", "rec")));
    assert!(r.host.recordings.is_empty() && r.host.tapped.is_empty());
    assert_eq!(r.ask(recording_request("query", "rec")).get("recording"), None);

    // record call=yes in an offer starts one, named in the reply.
    let v = r.ask(offer("rec2", "a", &o).with("record call", "yes").with("recording-path", "tenant-7"));
    let files = v.get("recordings").and_then(Value::as_list).expect("recordings in the reply");
    let pcap = files[0].as_str().unwrap();
    // Below recording-path, the default pattern: a directory per day, then
    // the Call-ID and a random part.
    assert!(pcap.starts_with("/var/spool/rec/tenant-7/") && pcap.ends_with(".pcap"), "{pcap}");
    assert!(pcap.contains("/rec2-") && pcap.matches('/').count() == 6, "{pcap}");
    assert_eq!(r.host.recordings.len(), 1);
    // Deleting the call closes it.
    r.ask(delete("rec2"));
    assert!(r.host.recordings.is_empty() && r.host.tapped.is_empty());
    assert_eq!(r.table.totals.recordings_started, 2);
}

/// Unknown calls, paths outside the directory, oversized metadata, and a
/// relay without a recording directory: clear errors or warnings, and
/// nothing starts.
#[test]
fn recording_requests_that_cannot_be_honoured() {
    let mut cfg = settings(1, 0);
    cfg.recording = RecordingSettings { dir: Some("/rec".into()), max_metadata: 16, ..RecordingSettings::default() };
    let mut r = Rig::with(cfg);
    assert_eq!(r.error(recording_request("start recording", "nope")), "Unknown call-id 'nope'");
    assert_eq!(r.error(recording_request("pause recording", "nope")), "Unknown call-id 'nope'");
    let o = sdp("198.18.1.1", &[("audio", 4000, "RTP/AVP", "0", String::new())]);
    r.ok(offer("c", "a", &o));
    for (key, v) in
        [("recording-file", "../../etc/passwd"), ("recording-path", "/tmp"), ("recording-file", "a/../../b")]
    {
        let e = r.error(recording_request("start recording", "c").with(key, v));
        assert!(e.contains("is not a relative path below the recording directory"), "{key}={v}: {e}");
    }
    let e = r.error(recording_request("start recording", "c").with("recording-pattern", "%x"));
    assert!(e.contains("unknown format '%x'"), "{e}");
    let e = r.error(recording_request("start recording", "c").with("metadata", "x".repeat(17)));
    assert_eq!(e, "metadata of 17 bytes is over the limit of 16 (max-metadata-length)");
    assert!(r.host.recordings.is_empty());
    // In an offer, the call goes through and the reply says why nothing records.
    let v = r.ask(offer("c", "a", &o).with("record call", "yes").with("recording-file", "/etc/x"));
    assert_eq!(v.get("result").and_then(Value::as_str), Some("ok"));
    let w = v.get("warning").and_then(Value::as_str).unwrap_or("");
    assert!(w.contains("recording-file '/etc/x' is not a relative path"), "{w}");
    // A Call-ID cannot add a directory.
    r.ok(offer("../../x", "a", &o));
    r.ask(recording_request("start recording", "../../x"));
    assert_eq!(r.host.recordings.len(), 2, "{:?}", r.host.faults);

    // Without a recording directory: ok with a warning, as rtpengine logs it.
    let mut bare = Rig::new(1, 0);
    bare.ok(offer("c", "a", &o));
    let v = bare.ask(recording_request("start recording", "c"));
    assert_eq!(v.get("result").and_then(Value::as_str), Some("ok"));
    let w = v.get("warning").and_then(Value::as_str).unwrap_or("");
    assert!(w.contains("no recording directory is configured"), "{w}");
    assert!(bare.host.recordings.is_empty());
}
