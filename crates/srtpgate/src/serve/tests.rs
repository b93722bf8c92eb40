//! The NG server (not just the parser) driven with hostile requests and
//! sequences: every request with a cookie gets a reply that fits a datagram,
//! memory stays within the configured bounds, and the counters add up.

use super::cache::ReplyCache;
use super::config::{Config, ServeArgs};
use super::control::Control;
use super::{ephemeral_overlap, fit_reply, handle_datagram, Shared};
use proptest::prelude::*;
use srtp::CpuEngine;
use srtpgate_ng::{Value, MAX_REPLY};
use srtpgate_testkit::daemon::padded_sdp;
use srtpgate_testkit::ng::offer;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

type Server = Shared;

/// A call table with one worker on 127.0.0.1, ports `base..base+99`, and
/// `limits` applied over the defaults.
pub(super) fn server(base: u16, args: ServeArgs) -> (Server, ReplyCache) {
    let args =
        ServeArgs { port_min: Some(base), port_max: Some(base + 99), workers: Some(1), buffers: Some(64), ..args };
    let cfg = std::sync::Arc::new(Config::resolve(&args).expect("config"));
    let engine = CpuEngine::new();
    let wcfg = crate::relay::WorkerConfig {
        buffers: 64,
        batch: 32,
        busy_poll: false,
        stale_ns: 0,
        io: crate::relay::IoSetup::plain(crate::relay::IoKind::Sockets),
        pin: Vec::new(),
        signal: None,
        recorder: Vec::new(),
        dtmf: None,
        quality: None,
    };
    let workers = crate::relay::spawn_workers(&engine, 1, wcfg).expect("worker");
    let cache = ReplyCache::new(cfg.limits.ng_cache_bytes, cfg.limits.ng_cache_ttl);
    let relay = super::relay(&cfg, engine, workers).expect("relay");
    let control = Control::new(&cfg, relay).expect("control");
    (Shared::new(control, "cpu", "sockets", None), cache)
}

fn from(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Sends `body` with `cookie` from `sender`; the reply, checked to fit and parse.
fn ask(s: &Server, cache: &mut ReplyCache, sender: SocketAddr, cookie: &str, body: &Value) -> Value {
    let dgram = srtpgate_ng::request(cookie, body);
    let reply = handle_datagram(&dgram, sender, s, cache, Instant::now()).expect("a reply");
    assert!(reply.len() <= MAX_REPLY, "reply of {} bytes", reply.len());
    let (c, v) = srtpgate_ng::parse_reply(&reply).expect("reply parses");
    assert_eq!(c, cookie.as_bytes());
    v
}

fn result(v: &Value) -> &str {
    v.get("result").and_then(Value::as_str).unwrap_or("")
}

fn reason(v: &Value) -> &str {
    v.get("error-reason").and_then(Value::as_str).unwrap_or("")
}

/// created − ended = calls now, and calls without media as counted.
fn check_counts(s: &Server) {
    let c = s.control.lock().expect("lock");
    let t = &c.table.totals;
    let ended = t.calls_deleted + t.calls_timed_out + t.calls_final_timeout;
    assert_eq!(t.calls_created - ended, c.table.len() as u64, "created {} ended {ended}", t.calls_created);
    c.table.check_invariants().expect("call table invariants");
    assert_eq!(c.table.port_pairs(), c.plane.ports().0, "port pairs held by calls and bound");
}

#[test]
fn ephemeral_range_overlap() {
    assert_eq!(ephemeral_overlap(30_000, 40_000, "32768\t60999\n", "\n"), Some(40_000 - 32_768 + 1));
    assert_eq!(ephemeral_overlap(30_000, 40_000, "32768\t60999\n", "30000-40000\n"), None);
    assert_eq!(ephemeral_overlap(30_000, 40_000, "32768 60999", "32768-35000,35001-39999"), Some(1));
    assert_eq!(ephemeral_overlap(20_000, 30_000, "32768 60999", ""), None);
    assert_eq!(ephemeral_overlap(20_000, 30_000, "", ""), None);
}

#[test]
fn oversized_replies_are_trimmed_or_refused() {
    let big = "w".repeat(MAX_REPLY);
    let (out, trimmed) = fit_reply(b"c1", srtpgate_ng::ok().with("warning", big.as_str()));
    assert!(trimmed && out.len() <= MAX_REPLY);
    let (_, v) = srtpgate_ng::parse_reply(&out).expect("parses");
    assert_eq!(result(&v), "ok");
    let (out, trimmed) = fit_reply(b"c2", srtpgate_ng::ok().with("sdp", big.as_str()));
    assert!(trimmed && out.len() <= MAX_REPLY);
    let (_, v) = srtpgate_ng::parse_reply(&out).expect("parses");
    assert_eq!(result(&v), "error");
    assert!(reason(&v).contains("does not fit in one datagram"), "{}", reason(&v));
    let (out, trimmed) = fit_reply(b"c3", srtpgate_ng::ok());
    assert!(!trimmed && *out == srtpgate_ng::reply(b"c3", &srtpgate_ng::ok()));
}

/// Issue 9, item 4: a ping of 2 200 unknown keys got no reply (each key
/// added a warning); `list` got none past ~2 000 calls.
#[test]
fn replies_always_fit_a_datagram() {
    let (s, mut cache) = server(43_000, ServeArgs { max_sessions_without_media: Some(5000), ..Default::default() });
    let mut ping = Value::dict().with("command", "ping");
    for i in 0..2200 {
        ping.insert(&format!("unknown-key-{i:05}"), 1i64);
    }
    let v = ask(&s, &mut cache, from(1), "ping-many", &ping);
    assert_eq!(result(&v), "pong");
    let w = v.get("warning").and_then(Value::as_str).unwrap_or("");
    assert!(w.ends_with("more warnings"), "{w}");

    // 2 100 calls (without media, so no ports) with 200-byte Call-IDs.
    let n = 2100;
    let id = |i: usize| format!("{i:06}{}", "c".repeat(194));
    for i in 0..n {
        let v = ask(&s, &mut cache, from(1), &format!("o{i}"), &offer(&id(i), "a", &padded_sdp(1, 0, 0)));
        assert_eq!(result(&v), "ok", "{}", reason(&v));
    }
    // Default page: 32, in order, with where the next page starts.
    let v = ask(&s, &mut cache, from(1), "l0", &Value::dict().with("command", "list"));
    let calls = v.get("calls").and_then(Value::as_list).expect("calls");
    assert_eq!(calls.len(), srtpgate_calls::LIST_PAGE);
    assert_eq!(v.get("total").and_then(Value::as_int), Some(n as i64));
    assert_eq!(v.get("next offset").and_then(Value::as_int), Some(32));
    // Any limit: cut to what fits; the pages together give every call once.
    let mut seen = Vec::new();
    let mut offset = 0i64;
    for page in 0.. {
        assert!(page < 100, "paging does not end");
        let req = Value::dict().with("command", "list").with("limit", 1_000_000i64).with("offset", offset);
        let v = ask(&s, &mut cache, from(1), &format!("l{page}-{offset}"), &req);
        let calls = v.get("calls").and_then(Value::as_list).expect("calls");
        assert!(!calls.is_empty());
        seen.extend(calls.iter().map(|c| c.as_str().expect("id").to_string()));
        match v.get("next offset").and_then(Value::as_int) {
            Some(next) => offset = next,
            None => break,
        }
    }
    assert!(offset > 0, "{n} Call-IDs of 200 bytes fit in one page");
    assert_eq!(seen, (0..n).map(id).collect::<Vec<_>>());
    check_counts(&s);
}

/// Issue 9, item 5: a second sender reusing an offer's cookie was handed
/// that offer's reply (SDP and key included). The same sender still gets
/// its retransmission answered from the cache, without running it twice.
#[test]
fn retransmission_cache_is_per_sender() {
    let (s, mut cache) = server(43_100, ServeArgs::default());
    let o = offer("c", "a", &padded_sdp(1, 40_000, 0));
    let first = ask(&s, &mut cache, from(1), "same", &o);
    assert_eq!(result(&first), "ok", "{}", reason(&first));
    let again = ask(&s, &mut cache, from(1), "same", &o);
    assert_eq!(again, first, "a retransmission gets the first reply");
    assert_eq!(s.ng_retransmits.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(s.control.lock().expect("lock").plane.ports().0, 2, "the offer ran once");
    let other = ask(&s, &mut cache, from(2), "same", &Value::dict().with("command", "ping"));
    assert_eq!(result(&other), "pong", "another sender's request runs");
    assert!(other.get("sdp").is_none());
}

/// Issue 9, items 3 and 6: field lengths, m-lines and calls without media
/// are bounded with a clear reason; refused offers create no call, so
/// created − ended = calls now.
#[test]
fn request_limits_and_counters() {
    let (s, mut cache) = server(
        43_200,
        ServeArgs { max_sessions_without_media: Some(3), max_id_length: Some(64), ..Default::default() },
    );
    let mut k = 0;
    let mut send = |body: &Value| {
        k += 1;
        ask(&s, &mut cache, from(1), &format!("k{k}"), body)
    };
    let long = "x".repeat(60_000);
    let v = send(&offer(&long[..65], "a", &padded_sdp(1, 40_000, 0)));
    assert!(reason(&v).contains("call-id of 65 bytes is over the limit of 64 (max-id-length)"), "{}", reason(&v));
    let v = send(&offer("c", &long[..100], &padded_sdp(1, 40_000, 0)));
    assert!(reason(&v).contains("from-tag of 100 bytes"), "{}", reason(&v));
    let v = send(&offer("c", "a", &padded_sdp(1, 40_000, 40_000)));
    assert!(reason(&v).contains("over the limit of 32768 (max-sdp-length)"), "{}", reason(&v));
    let v = send(&offer("c", "a", &padded_sdp(17, 0, 0)));
    assert!(reason(&v).contains("17 media sections; at most 16"), "{}", reason(&v));
    let v = send(&offer("c", "a", "not SDP"));
    assert_eq!(result(&v), "error");
    for i in 0..3 {
        let v = send(&offer(&format!("nomedia{i}"), "a", &padded_sdp(2, 0, 0)));
        assert_eq!(result(&v), "ok", "{}", reason(&v));
    }
    let v = send(&offer("nomedia3", "a", &padded_sdp(2, 0, 0)));
    assert!(reason(&v).contains("at most 3 (max-sessions-without-media)"), "{}", reason(&v));
    // A call with media is not held back by that limit, and a call without
    // media that gets some leaves the count.
    let v = send(&offer("media", "a", &padded_sdp(1, 40_000, 0)));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    let v = send(&offer("nomedia0", "a", &padded_sdp(2, 40_010, 0)));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    assert_eq!(s.control.lock().expect("lock").table.without_media(), 2);
    let v = send(&offer("nomedia3", "a", &padded_sdp(2, 0, 0)));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    let v = send(&Value::dict().with("command", "delete").with("call-id", "nomedia1"));
    assert_eq!(result(&v), "ok");
    check_counts(&s);
    let g = s.control.lock().expect("lock");
    let c = &g.table;
    assert_eq!((c.len(), c.totals.calls_created, c.totals.calls_deleted), (4, 5, 1));
    assert!(c.totals.offers_refused >= 6);
    drop(g);
    let page = super::http::render(&s);
    let m = |name: &str| -> f64 {
        let full = format!("srtpgate_{name}");
        page.lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(k, _)| k.split('{').next() == Some(full.as_str()))
            .filter_map(|(_, v)| v.parse::<f64>().ok())
            .sum()
    };
    assert_eq!(m("calls_created_total") - m("calls_ended_total"), m("sessions"), "{page}");
    assert_eq!(m("sessions_without_media"), 2.0);
}

/// A refused re-offer leaves the call as it was: the streams it added are
/// closed and their ports freed.
#[test]
fn refused_reoffer_changes_nothing() {
    let (s, mut cache) = server(43_500, ServeArgs { max_media: Some(4), ..Default::default() });
    let v = ask(&s, &mut cache, from(1), "r1", &offer("c", "a", &padded_sdp(1, 40_000, 0)));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    let before = s.control.lock().expect("lock").plane.ports().0;
    // Two more streams, the second with a crypto line nobody can use: refused
    // after the first of them bound its ports.
    let mut bad = padded_sdp(3, 40_000, 0);
    bad = bad.replacen("m=audio 40004 RTP/AVP 0\r\n", "m=audio 40004 RTP/SAVP 0\r\na=crypto:1 ROT13 inline:x\r\n", 1);
    let v = ask(&s, &mut cache, from(1), "r2", &offer("c", "a", &bad));
    assert_eq!(result(&v), "error", "{v:?}");
    assert_eq!(s.control.lock().expect("lock").plane.ports().0, before, "ports of the refused re-offer stay bound");
    check_counts(&s);
    // The call goes on as before: a re-offer of its one stream is taken.
    let v = ask(&s, &mut cache, from(1), "r3", &offer("c", "a", &padded_sdp(1, 40_000, 0)));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    assert_eq!(s.control.lock().expect("lock").plane.ports().0, before);
}

/// One hostile step.
#[derive(Clone, Debug)]
enum Op {
    Offer {
        call: u8,
        id_len: usize,
        media: usize,
        port0: bool,
        pad: usize,
    },
    Answer {
        call: u8,
    },
    Delete {
        call: u8,
    },
    Query {
        call: u8,
    },
    List {
        limit: i64,
        offset: i64,
    },
    ManyKeys {
        n: usize,
    },
    /// The last cookie again, from another sender.
    Replay,
    Garbage(Vec<u8>),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..24, prop_oneof![Just(8usize), Just(256), Just(257), Just(60_000)], 0usize..20, any::<bool>(),
              prop_oneof![Just(0usize), Just(20_000), Just(32_768), Just(57_000)])
            .prop_map(|(call, id_len, media, port0, pad)| Op::Offer { call, id_len, media, port0, pad }),
        1 => (0u8..24).prop_map(|call| Op::Answer { call }),
        1 => (0u8..24).prop_map(|call| Op::Delete { call }),
        1 => (0u8..24).prop_map(|call| Op::Query { call }),
        1 => (-2i64..100_000, -1i64..40).prop_map(|(limit, offset)| Op::List { limit, offset }),
        1 => (0usize..3000).prop_map(|n| Op::ManyKeys { n }),
        1 => Just(Op::Replay),
        1 => proptest::collection::vec(any::<u8>(), 0..64).prop_map(Op::Garbage),
    ]
}

/// The call id of `call` padded to `len` (over the limit when asked).
fn call_id(call: u8, len: usize) -> String {
    let base = format!("call-{call}-");
    format!("{base}{}", "i".repeat(len.saturating_sub(base.len())))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Hostile sequences against the whole NG server: a reply for every
    /// request with a cookie (silence only for datagrams without one), no
    /// reply over a datagram, sessions, calls without media, ports and the
    /// cache within their bounds, and the counters adding up after each step.
    #[test]
    fn hostile_sequences_stay_bounded(ops in proptest::collection::vec(op(), 1..40)) {
        let max_sessions = 12;
        let cache_bytes = 1 << 20;
        let (s, mut cache) = server(43_300, ServeArgs {
            max_sessions: Some(max_sessions),
            max_sessions_without_media: Some(5),
            ng_cache_bytes: Some(cache_bytes),
            ..Default::default()
        });
        let mut last = String::from("none");
        for (i, op) in ops.iter().enumerate() {
            let cookie = format!("p{i}");
            let body = match op {
                Op::Offer { call, id_len, media, port0, pad } => {
                    let port = if *port0 { 0 } else { 40_000 };
                    offer(&call_id(*call, *id_len), "a", &padded_sdp(*media, port, *pad))
                }
                Op::Answer { call } => offer(&call_id(*call, 8), "a", &padded_sdp(1, 40_100, 0))
                    .with("command", "answer").with("to-tag", "b"),
                Op::Delete { call } => Value::dict().with("command", "delete").with("call-id", call_id(*call, 8)),
                Op::Query { call } => Value::dict().with("command", "query").with("call-id", call_id(*call, 8)),
                Op::List { limit, offset } => {
                    Value::dict().with("command", "list").with("limit", *limit).with("offset", *offset)
                }
                Op::ManyKeys { n } => {
                    let mut v = Value::dict().with("command", "ping");
                    for k in 0..*n {
                        v.insert(&format!("junk-{k}"), "x");
                    }
                    v
                }
                Op::Replay => Value::dict().with("command", "ping"),
                Op::Garbage(bytes) => {
                    let r = handle_datagram(bytes, from(9), &s, &mut cache, Instant::now());
                    let has_cookie = srtpgate_ng::split(bytes).is_ok();
                    prop_assert_eq!(r.is_some(), has_cookie, "a reply exactly when there is a cookie");
                    if let Some(r) = r {
                        prop_assert!(r.len() <= MAX_REPLY);
                        prop_assert!(srtpgate_ng::parse_reply(&r).is_ok());
                    }
                    continue;
                }
            };
            let (cookie, sender) = if matches!(op, Op::Replay) { (last.clone(), from(2)) } else { (cookie, from(1)) };
            let dgram = srtpgate_ng::request(&cookie, &body);
            if dgram.len() > srtpgate_ng::MAX_DATAGRAM {
                // Larger than any UDP datagram: no reply (the daemon's
                // receive buffer could not even hold it).
                prop_assert!(handle_datagram(&dgram, sender, &s, &mut cache, Instant::now()).is_none());
                continue;
            }
            let v = ask(&s, &mut cache, sender, &cookie, &body);
            prop_assert!(matches!(result(&v), "ok" | "pong" | "error"), "{:?}", v);
            if let Op::Replay = op {
                prop_assert_eq!(result(&v), "pong", "another sender's cookie ran its own request");
            }
            last = cookie;
            check_counts(&s);
            let g = s.control.lock().expect("lock");
            let c = &g.table;
            prop_assert!(c.len() <= max_sessions);
            prop_assert!(c.without_media() <= 5);
            drop(g);
            prop_assert!(cache.bytes() <= cache_bytes);
        }
    }
}

/// The reply cache's age: a request resent after it runs again.
#[test]
fn cached_replies_expire() {
    let (s, mut cache) = server(43_400, ServeArgs { ng_cache_seconds: Some(1), ..Default::default() });
    let dgram = srtpgate_ng::request("x", &offer("c", "a", &padded_sdp(1, 40_000, 0)));
    let t = Instant::now();
    handle_datagram(&dgram, from(1), &s, &mut cache, t).expect("reply");
    handle_datagram(&dgram, from(1), &s, &mut cache, t + Duration::from_millis(500)).expect("cached");
    assert_eq!(s.ng_retransmits.load(std::sync::atomic::Ordering::Relaxed), 1);
    handle_datagram(&dgram, from(1), &s, &mut cache, t + Duration::from_secs(2)).expect("run again");
    assert_eq!(s.ng_retransmits.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(cache.len(), 1);
}

/// A malformed codec option (a word where a number goes) is ignored with a
/// warning naming it and a counter; the call and the other options go on.
#[test]
fn malformed_codec_options_are_ignored_with_a_warning_and_counted() {
    let (s, mut cache) = server(43_700, ServeArgs::default());
    let flags = Value::from(vec!["codec-transcode-PCMA/8000/1/fast", "codec-transcode-PCMA"]);
    let v =
        ask(&s, &mut cache, from(1), "m1", &offer("malformed", "a", &padded_sdp(1, 40_000, 0)).with("flags", flags));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    let w = v.get("warning").and_then(Value::as_str).unwrap_or("");
    assert!(w.contains("codec option 'PCMA/8000/1/fast' is not name/clock/channels/bitrate/ptime/fmtp"), "{w}");
    let sdp_out = v.get("sdp").and_then(Value::as_str).unwrap_or("");
    assert!(sdp_out.contains("a=rtpmap:8 PCMA/8000"), "the well-formed option applies:\n{sdp_out}");
    assert_eq!(s.control.lock().expect("lock").table.totals.codec_options_ignored, 1);
    let page = super::http::render(&s);
    assert!(page.contains("srtpgate_ng_codec_options_ignored_total 1\n"), "{page}");
}

fn warning(v: &Value) -> &str {
    v.get("warning").and_then(Value::as_str).unwrap_or("")
}

/// A key accepted but not acted on is named in the reply's warning, with
/// what the relay does instead, and counted by key; absent, or with a value
/// that asks for what the relay does anyway, it gives neither.
#[test]
fn ignored_keys_are_warned_and_counted() {
    let (s, mut cache) = server(43_600, ServeArgs::default());
    let list = |items: &[&str]| Value::from(items.to_vec());
    // What Kamailio sends with every request, and values that ask for the
    // default: no warning, nothing counted.
    let quiet = offer("quiet", "a", &padded_sdp(1, 40_000, 0))
        .with("supports", list(&["load limit"]))
        .with("delete delay", 0i64)
        .with("delete-delay", "0")
        .with("direction", list(&["default", "default"]));
    let v = ask(&s, &mut cache, from(1), "q1", &quiet);
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    assert!(v.get("warning").is_none(), "{}", warning(&v));
    let v = ask(&s, &mut cache, from(1), "q2", &offer("quiet2", "a", &padded_sdp(1, 40_010, 0)));
    assert!(v.get("warning").is_none(), "{}", warning(&v));
    assert!(s.control.lock().expect("lock").table.totals.keys_ignored.is_empty());

    let cases: [(&str, &str, Value, &str); 3] = [
        (
            "OSRTP",
            "osrtp",
            list(&["accept"]),
            "OSRTP=[accept] ignored: opportunistic SRTP is not supported: a=crypto lines of RTP/AVP m-lines are \
             dropped and none are added to them, so those legs carry plain RTP; legacy best-effort SRTP (each \
             m-line twice, RTP/AVP and RTP/SAVP) is neither written nor merged",
        ),
        (
            "flags",
            "osrtp",
            list(&["OSRTP-offer"]),
            "OSRTP=[offer] ignored: opportunistic SRTP is not supported: a=crypto lines of RTP/AVP m-lines are \
             dropped and none are added to them, so those legs carry plain RTP",
        ),
        ("delete-delay", "delete-delay", Value::from(30i64), "delete-delay=30 ignored: srtpgate deletes calls at once"),
    ];
    for (i, (key, label, value, text)) in cases.iter().enumerate() {
        let before = s.control.lock().expect("lock").table.totals.keys_ignored.get(label).copied().unwrap_or(0);
        let body =
            offer(&format!("ignored-{i}"), "a", &padded_sdp(1, 40_020 + 10 * i as u16, 0)).with(key, value.clone());
        let v = ask(&s, &mut cache, from(1), &format!("i{i}"), &body);
        assert_eq!(result(&v), "ok", "{key}: {}", reason(&v));
        assert_eq!(warning(&v), *text, "{key}");
        let after = s.control.lock().expect("lock").table.totals.keys_ignored.get(label).copied().unwrap_or(0);
        assert_eq!(after, before + 1, "{key}");
    }
    let page = super::http::render(&s);
    // `direction` is acted on: a name this relay has no interface for is
    // refused with the names there are.
    let v = ask(
        &s,
        &mut cache,
        from(1),
        "dir",
        &offer("named", "a", &padded_sdp(1, 40_090, 0)).with("direction", list(&["priv", "pub"])),
    );
    assert_eq!(reason(&v), "unknown interface 'priv' (this relay has: default)");
    assert!(page.contains("srtpgate_ng_keys_ignored_total{key=\"osrtp\"} 2\n"), "{page}");
    assert!(page.contains("srtpgate_ng_keys_ignored_total{key=\"delete-delay\"} 1\n"), "{page}");

    // On delete: the call goes at once, and the warning says so; for an
    // unknown call its own warning stays first.
    let del = |id: &str| Value::dict().with("command", "delete").with("call-id", id).with("delete-delay", 5i64);
    let v = ask(&s, &mut cache, from(1), "d1", &del("quiet"));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    assert_eq!(warning(&v), "delete-delay=5 ignored: srtpgate deletes calls at once");
    let q = ask(&s, &mut cache, from(1), "d1q", &Value::dict().with("command", "query").with("call-id", "quiet"));
    assert_eq!(reason(&q), "Unknown call-id 'quiet'", "the call is deleted at once");
    let v = ask(&s, &mut cache, from(1), "d2", &del("quiet"));
    assert_eq!(
        warning(&v),
        "call 'quiet' not found (already deleted?); delete-delay=5 ignored: srtpgate deletes calls at once"
    );
    let v = ask(&s, &mut cache, from(1), "d3", &del("quiet").with("delete-delay", 0i64));
    assert_eq!(warning(&v), "call 'quiet' not found (already deleted?)");

    // The parser's ignored keys are counted by name as well.
    let v = ask(&s, &mut cache, from(1), "p1", &Value::dict().with("command", "ping").with("TOS", 184i64));
    assert_eq!(warning(&v), "key 'TOS' ignored: not supported by srtpgate");
    let page = super::http::render(&s);
    assert!(page.contains("srtpgate_ng_keys_ignored_total{key=\"tos\"} 1\n"), "{page}");
    assert!(page.contains("srtpgate_ng_keys_ignored_total{key=\"delete-delay\"} 3\n"), "{page}");
}

/// `supports: [load limit]` (Kamailio's module sends it with every
/// request): an offer refused by the session limit or a drain is answered
/// `result: load limit`, which sends the module to its next relay; without
/// it, the same offer is an error.
#[test]
fn load_limit_is_answered_when_supported() {
    let (s, mut cache) = server(43_800, ServeArgs { max_sessions: Some(1), ..Default::default() });
    let supports = Value::from(vec!["load limit"]);
    let v = ask(&s, &mut cache, from(1), "l1", &offer("first", "a", &padded_sdp(1, 40_000, 0)));
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    let v = ask(&s, &mut cache, from(1), "l2", &offer("second", "a", &padded_sdp(1, 40_010, 0)));
    assert_eq!(result(&v), "error");
    assert_eq!(reason(&v), "Parallel session limit reached");
    let v = ask(
        &s,
        &mut cache,
        from(1),
        "l3",
        &offer("second", "a", &padded_sdp(1, 40_010, 0)).with("supports", supports.clone()),
    );
    assert_eq!(result(&v), "load limit");
    assert_eq!(v.get("message").and_then(Value::as_str), Some("Parallel session limit reached"));
    // The call that exists takes re-offers, with or without the key.
    let v = ask(
        &s,
        &mut cache,
        from(1),
        "l4",
        &offer("first", "a", &padded_sdp(1, 40_000, 0)).with("supports", supports.clone()),
    );
    assert_eq!(result(&v), "ok", "{}", reason(&v));
    // Other refusals stay errors.
    let v = ask(&s, &mut cache, from(1), "l5", &offer("first", "b", "bogus").with("supports", supports.clone()));
    assert_eq!(result(&v), "error");
    {
        let c = &mut s.control.lock().expect("lock").table;
        assert_eq!(c.totals.offers_refused, 3);
        c.set_draining(true);
    }
    let v =
        ask(&s, &mut cache, from(1), "l6", &offer("third", "a", &padded_sdp(1, 40_020, 0)).with("supports", supports));
    assert_eq!(result(&v), "load limit");
    assert_eq!(v.get("message").and_then(Value::as_str), Some("Parallel session limit reached"));
    let page = super::http::render(&s);
    assert!(page.contains("srtpgate_ng_load_limited_total{limit=\"sessions\"} 2\n"), "{page}");
    assert!(page.contains("srtpgate_ng_load_limited_total{limit=\"draining\"} 1\n"), "{page}");
    check_counts(&s);
}
