//! End-to-end tests of `srtpgate serve`'s control side: the NG replay
//! recordings (documented examples and Kamailio 5.6's requests), re-INVITEs
//! and refused offers and answers, the open-file limit and HTTP timeouts,
//! hostile offers within the memory bound, and a key past its lifetime.
//! Each test starts its own daemon (own NG/HTTP ports and media range).

use srtp::Suite;
use srtpgate_ng::Value;
use srtpgate_testkit::daemon::*;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::time::{Duration, Instant};

fn in_range(d: &Daemon, port: u16) -> bool {
    (d.port_min..=d.port_max).contains(&port)
}

fn fixtures(dir: &str) -> Vec<(String, Vec<u8>)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ng").join(dir);
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {}", root.display());
    files
        .into_iter()
        .map(|p| (p.file_name().expect("name").to_string_lossy().into_owned(), std::fs::read(&p).expect("read")))
        .collect()
}

/// Sends a fixture; its reply (None when, after a ping sent behind it, the
/// pong came first).
fn send_fixture(d: &Daemon, name: &str, bytes: &[u8]) -> Option<(Vec<u8>, Value)> {
    d.send_raw(bytes);
    let ping = d.cookie();
    d.send_raw(&srtpgate_ng::request(&ping, &Value::dict().with("command", "ping")));
    let raw = d.recv_raw(WAIT).unwrap_or_else(|| panic!("{name}: no reply at all"));
    let (cookie, v) =
        srtpgate_ng::parse_reply(&raw).unwrap_or_else(|e| panic!("{name}: reply does not parse ({e}): {raw:?}"));
    if cookie == ping.as_bytes() {
        return None;
    }
    let pong = d.recv_raw(WAIT).expect("the pong");
    assert!(pong.starts_with(format!("{ping} ").as_bytes()), "{name}: pong expected after the reply");
    Some((cookie, v))
}

fn fixture_cookie(bytes: &[u8]) -> Vec<u8> {
    bytes.split(|&b| b == b' ').next().expect("cookie").to_vec()
}

/// Runs `tests/ng/documented` in order against a fresh daemon; one line
/// per fixture whose reply is not what `expected.json` says.
fn documented_mismatches(name: &str, slot: u16) -> Vec<String> {
    let d = Daemon::start(name, slot, &[]);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/ng/documented/expected.json");
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&root).expect("expected.json")).expect("JSON");
    let files = fixtures("documented");
    assert_eq!(files.len(), expected.as_object().expect("object").len(), "fixtures vs expected.json");
    let mut bad = Vec::new();
    for (file, bytes) in &files {
        let want = expected.get(file).and_then(|v| v.as_str()).unwrap_or_else(|| panic!("{file} not in expected.json"));
        match (want, send_fixture(&d, file, bytes)) {
            ("no reply", None) => {}
            ("no reply", Some((_, v))) => bad.push(format!("{file}: expected no reply, got {}", show(&v))),
            (_, None) => bad.push(format!("{file}: no reply, expected {want}")),
            (want, Some((cookie, v))) => {
                // The cookie, the shape of errors and of offers: always.
                assert_eq!(cookie, fixture_cookie(bytes), "{file}: cookie");
                let got = result(&v);
                if got == "error" {
                    assert!(v.get("error-reason").and_then(Value::as_str).is_some(), "{file}: {}", show(&v));
                }
                if got == "ok" && file.contains("offer") {
                    let sdp = reply_sdp(&v);
                    assert!(in_range(&d, sdp.media()[0].port()), "{file}: relay port:\n{sdp}");
                }
                let ok = match want {
                    "ok or error" => got == "ok" || got == "error",
                    w => got == w,
                };
                if !ok {
                    bad.push(format!("{file}: result {got:?}, expected {want}: {}", show(&v)));
                }
            }
        }
    }
    d.ping();
    bad
}

/// Runs `tests/ng/kamailio-5.6` in order; one line per fixture not answered
/// `ok`/`pong` (with the SDP checked where there is one).
fn kamailio_mismatches(name: &str, slot: u16) -> Vec<String> {
    let d = Daemon::start(name, slot, &[]);
    let mut bad = Vec::new();
    for (file, bytes) in fixtures("kamailio-5.6") {
        let Some((cookie, v)) = send_fixture(&d, &file, &bytes) else {
            bad.push(format!("{file}: no reply"));
            continue;
        };
        assert_eq!(cookie, fixture_cookie(&bytes), "{file}: cookie");
        let want = if file.contains("ping") { "pong" } else { "ok" };
        if result(&v) != want {
            bad.push(format!("{file}: {}", show(&v)));
            continue;
        }
        if file.contains("offer") || file.contains("answer") {
            let sdp = reply_sdp(&v);
            assert_eq!(sdp.media_connection(0), Some(LO), "{file}:\n{sdp}");
            assert!(in_range(&d, sdp.media()[0].port()), "{file}:\n{sdp}");
            assert!(!cryptos(&sdp).is_empty(), "{file}: SRTP keys:\n{sdp}");
        }
    }
    // Every call the fixtures made was deleted.
    if bad.is_empty() {
        assert!(d.list().is_empty(), "calls left: {:?}", d.list());
        d.wait_metric("port_pairs_in_use", 0.0);
    }
    bad
}

#[test]
fn ng_fixtures_documented() {
    let bad = documented_mismatches("ng-documented-strict", 16);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn ng_fixtures_kamailio_5_6() {
    let bad = kamailio_mismatches("ng-kamailio-strict", 17);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn reinvite_keeps_ports_keys_and_media() {
    let d = Daemon::start("reinvite", 18, &[]);
    let mut c = srtp_call(&d, "re-call", LO, false);
    exchange(&mut c.a, &mut c.b, 10, 1);
    // The same offer and answer again (a session refresh re-INVITE).
    let spec =
        |e: &Endpoint, k: &srtpgate_sdp::crypto::CryptoAttr| e.sdp_spec("RTP/SAVP", std::slice::from_ref(k)).text();
    let a_key = c.a_key.clone().expect("caller key");
    let b_key = c.b_key.clone().expect("callee key");
    let o = reply_sdp(&d.request(&offer("re-call", &c.from_tag, &spec(&c.a, &a_key))));
    assert_eq!(o.media()[0].port(), c.offer_out.media()[0].port(), "the callee's relay port moved");
    assert_eq!(cryptos(&o)[0].to_string(), cryptos(&c.offer_out)[0].to_string(), "the callee's relay key changed");
    let ans = reply_sdp(&d.request(&answer("re-call", &c.from_tag, &c.to_tag, &spec(&c.b, &b_key))));
    assert_eq!(ans.media()[0].port(), c.answer_out.media()[0].port(), "the caller's relay port moved");
    assert_eq!(cryptos(&ans)[0].to_string(), cryptos(&c.answer_out)[0].to_string(), "the caller's relay key changed");
    // Media goes on with the same contexts (indices continue).
    exchange(&mut c.a, &mut c.b, 10, 1);
    assert_eq!(d.metric("port_pairs_in_use"), Some(2.0));
    let q = d.query("re-call");
    for tag in [&c.from_tag, &c.to_tag] {
        assert_eq!(stream_stats(&q, tag).get("errors").and_then(Value::as_int), Some(0), "{}", show(&q));
    }
}

/// One SDP cannot take the port range: more than 16 media sections to relay
/// are refused before any port is bound, and the daemon carries on.
#[test]
fn offer_with_too_many_media_sections_is_refused() {
    let d = Daemon::start("many-media", 20, &[]);
    let mut sdp = String::from("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n");
    for i in 0..17 {
        sdp.push_str(&format!("m=audio {} RTP/AVP 0\r\n", 20_000 + 2 * i));
    }
    let r = d.request(&offer("many", "a", &sdp));
    assert_eq!(result(&r), "error", "{}", show(&r));
    let reason = r.get("error-reason").and_then(Value::as_str).unwrap_or_default().to_string();
    assert!(reason.contains("at most 16"), "{reason}");
    assert!(d.list().is_empty());
    assert_eq!(d.metric("port_pairs_in_use"), Some(0.0));
    d.ping();
}

/// A plain RTP answer to the relay's SRTP offer is refused (the relay would
/// send that leg in clear), and leaves the call as it was: a proper answer
/// afterwards is taken and gets an SRTP answer for the caller.
#[test]
fn plain_answer_to_srtp_offer_is_refused() {
    let d = Daemon::start("plain-answer", 21, &[]);
    let ip: IpAddr = LO;
    let spec =
        |port, proto, crypto| SdpSpec { ip, origin: ip, port, rtcp: None, proto, crypto, mux: false, ice: false };
    let caller = [key(1, Suite::AES_CM_128_HMAC_SHA1_80)];
    let r = d.request(&offer("pa", "a", &spec(40_000, "RTP/SAVP", &caller).text()));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let offered = cryptos(&reply_sdp(&r));
    let r = d.request(&answer("pa", "a", "b", &spec(40_002, "RTP/AVP", &[]).text()));
    assert_eq!(result(&r), "error", "{}", show(&r));
    let reason = r.get("error-reason").and_then(Value::as_str).unwrap_or_default().to_string();
    assert!(reason.contains("plain RTP/AVP answer to an RTP/SAVP offer"), "{reason}");
    let mine = key(offered[0].tag, offered[0].suite);
    let r = d.request(&answer("pa", "a", "b", &spec(40_002, "RTP/SAVP", &[mine]).text()));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_caller = reply_sdp(&r);
    assert_eq!(to_caller.media()[0].proto(), "RTP/SAVP");
    assert_eq!(cryptos(&to_caller).len(), 1);
    d.delete("pa");
}

// ---- Control-plane limits (issue 9) ----

fn error_reason(r: &Value) -> String {
    r.get("error-reason").and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Issue 9, items 1 and 2: under a low open-file limit, a flood of HTTP
/// connections that never finish their request cannot take the files calls
/// need (HTTP is capped, the rest get 503), and when media does run out of
/// files the refusal names the open-file limit, not the port range.
#[test]
fn open_file_limit_is_named_and_http_cannot_starve_media() {
    let d = Daemon::start_limited("fd-limit", 11, 200, &[]);
    let mut held = Vec::new();
    for _ in 0..180 {
        let mut s = std::net::TcpStream::connect(d.http).expect("connect HTTP");
        // A request without its final blank line.
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: relay\r\n");
        held.push(s);
    }
    // The last connections were refused at once with a 503.
    let last = held.last_mut().expect("a connection");
    last.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut buf = [0u8; 64];
    let n = last.read(&mut buf).unwrap_or(0);
    assert!(buf[..n].starts_with(b"HTTP/1.1 503"), "{:?}", String::from_utf8_lossy(&buf[..n]));
    // Calls are still set up, until the files set aside for media are used.
    let mut accepted = 0;
    let refusal = loop {
        let r = d.request(&offer(&format!("fd-{accepted}"), "a", &padded_sdp(1, 40_000, 0)));
        if result(&r) != "ok" {
            break error_reason(&r);
        }
        accepted += 1;
        assert!(accepted < 50, "no refusal after {accepted} calls");
    };
    assert!(accepted >= 8, "only {accepted} calls beside the HTTP flood: {refusal}");
    assert!(refusal.contains("open-file limit reached") && refusal.contains("RLIMIT_NOFILE 200"), "{refusal}");
    println!("fd-limit: {accepted} calls under RLIMIT_NOFILE 200 with 180 HTTP connections; then: {refusal}");
    // Freeing a call frees its files.
    d.delete("fd-0");
    let r = d.request(&offer("fd-again", "a", &padded_sdp(1, 40_000, 0)));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    drop(held);
    // The held connections close; HTTP serves again and counted the refusals.
    let deadline = Instant::now() + WAIT;
    let refused = loop {
        let page = std::net::TcpStream::connect(d.http).ok().and_then(|mut s| {
            s.set_read_timeout(Some(WAIT)).ok()?;
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n").ok()?;
            let mut text = String::new();
            s.read_to_string(&mut text).ok()?;
            text.starts_with("HTTP/1.1 200").then_some(text)
        });
        if let Some(page) = page {
            let refused = page
                .lines()
                .find(|l| l.starts_with("srtpgate_http_connections_total{outcome=\"refused\"}"))
                .and_then(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok());
            break refused.unwrap_or(-1.0);
        }
        assert!(Instant::now() < deadline, "HTTP did not come back after the flood");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(refused >= 100.0, "refused connections counted: {refused}");
}

/// Issue 9, item 2: a request without its final blank line and an idle
/// keep-alive connection are both closed after the HTTP timeout.
#[test]
fn http_header_and_idle_timeouts_close_connections() {
    let d = Daemon::start("http-timeout", 12, &["--http-timeout", "1"]);
    let mut partial = std::net::TcpStream::connect(d.http).expect("connect");
    partial.write_all(b"GET /metrics HTTP/1.1\r\nHost: relay\r\n").expect("send");
    let mut idle = std::net::TcpStream::connect(d.http).expect("connect");
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: relay\r\n\r\n").expect("send");
    let started = Instant::now();
    for (what, s) in [("partial header", &mut partial), ("idle keep-alive", &mut idle)] {
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let mut seen = Vec::new();
        let mut buf = [0u8; 512];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("{what}: still open after {:?} ({e})", started.elapsed()),
            }
        }
        if what == "idle keep-alive" {
            assert!(seen.starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&seen));
        }
    }
    println!("http-timeout: both connections closed {:?} after they opened", started.elapsed());
    // A header over the request buffer is refused, not buffered.
    let mut big = std::net::TcpStream::connect(d.http).expect("connect");
    big.set_read_timeout(Some(WAIT)).expect("timeout");
    let header = format!("GET /metrics HTTP/1.1\r\nHost: relay\r\nX-Junk: {}\r\n\r\n", "j".repeat(20_000));
    let _ = big.write_all(header.as_bytes());
    let mut reply = [0u8; 32];
    let n = big.read(&mut reply).unwrap_or(0);
    assert!(reply[..n].starts_with(b"HTTP/1.1 431"), "{:?}", String::from_utf8_lossy(&reply[..n]));
    let m = d.metrics();
    let timed_out = m
        .lines()
        .find(|l| l.starts_with("srtpgate_http_connections_total{outcome=\"timed_out\"}"))
        .and_then(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok());
    assert_eq!(timed_out, Some(2.0), "{m}");
}

/// Issue 9, item 3: 20 000 hostile offers (60 KB Call-IDs, 32 KiB SDPs of
/// rejected m-lines, 57 KB re-offers, offers until the ports run out) leave
/// the daemon within a stated memory bound: the reply cache's 32 MiB plus
/// 32 MiB. Every one is answered.
#[test]
fn hostile_offers_stay_within_memory_bound() {
    let d = Daemon::start("hostile-offers", 13, &[]);
    for i in 0..50 {
        let r = d.request(&offer(&format!("warm-{i}"), "a", &padded_sdp(1, 0, 2000)));
        assert_eq!(result(&r), "ok", "{}", show(&r));
    }
    let before = d.rss_kb();
    let long_id = "L".repeat(60_000);
    let no_media = padded_sdp(16, 0, 32 * 1024 - 64);
    let huge = padded_sdp(1, 40_000, 57_000);
    let media = padded_sdp(1, 40_000, 30_000);
    let small = padded_sdp(1, 40_000, 0);
    let started = Instant::now();
    let mut outcomes = std::collections::BTreeMap::<String, u32>::new();
    for i in 0..20_000u32 {
        let id = format!("{i:08}{}", "h".repeat(240));
        let req = match i % 4 {
            0 => offer(&long_id, "a", &small),
            1 => offer(&id, &"t".repeat(250), &no_media),
            2 => offer("warm-0", "a", &huge),
            _ => offer(&id, "a", &media),
        };
        let r = d.request(&req);
        let label = match result(&r) {
            "ok" => "ok".to_string(),
            _ => error_reason(&r).split(" of ").next().unwrap_or_default().chars().take(40).collect(),
        };
        *outcomes.entry(format!("kind {}: {label}", i % 4)).or_default() += 1;
    }
    let after = d.rss_kb();
    let m = d.metrics();
    println!(
        "hostile-offers: 20 000 offers in {:?}; RSS {before} kB -> {after} kB (+{} kB); cache {} bytes; \
         sessions {}; outcomes {outcomes:?}",
        started.elapsed(),
        after.saturating_sub(before),
        metric(&m, "ng_cache_bytes").unwrap_or(-1.0),
        metric(&m, "sessions").unwrap_or(-1.0)
    );
    assert!(metric(&m, "sessions_without_media").unwrap_or(0.0) <= 1000.0 + 50.0);
    assert!(metric(&m, "ng_cache_bytes").unwrap_or(0.0) <= (32 << 20) as f64);
    assert!(after.saturating_sub(before) <= 64 * 1024, "RSS grew by {} kB", after - before);
    assert_eq!(outcomes.get("kind 0: key call-id"), Some(&5000), "{outcomes:?}");
    d.ping();
}

#[test]
fn a_key_past_its_lifetime_is_refused_and_counted() {
    // The caller's key says it may protect 16 packets (`|2^4`); a caller
    // that goes on past that gets its packets dropped as key_expired.
    let d = Daemon::start("key-lifetime", 0, &[]);
    let (mut a, mut b) = (Endpoint::new(LO), Endpoint::new(LO));
    let mut a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    a_key.keys[0].lifetime = Some(16);
    let r = d.request(&offer("life", "alice", &a.sdp_spec("RTP/SAVP", std::slice::from_ref(&a_key)).text()));
    let o = reply_sdp(&r);
    let pick = cryptos(&o)[0].clone();
    let b_key = key(pick.tag, pick.suite);
    let r = d.request(&answer("life", "alice", "bob", &b.sdp_spec("RTP/SAVP", std::slice::from_ref(&b_key)).text()));
    let ans = reply_sdp(&r);
    let mut unlimited = a_key.clone();
    unlimited.keys[0].lifetime = None;
    a.send_key(Some(&unlimited));
    a.recv_key(Some(&cryptos(&ans)[0]));
    a.relay(&ans);
    b.send_key(Some(&b_key));
    b.recv_key(Some(&pick));
    b.relay(&o);
    for i in 0..16 {
        let sent = a.send_rtp(&format!("within {i}"));
        assert_eq!(b.recv_rtp("within the key's lifetime"), sent);
    }
    for i in 0..4 {
        a.send_rtp(&format!("past {i}"));
    }
    let q = wait_drops(&d, "life", "alice", "key_expired", 4);
    assert_eq!(drops(&q, "alice", "key_expired"), 4, "{}", show(&q));
    assert_quiet(&b.rtp, "the callee after the caller's key expired");
    let m = d.metrics();
    assert!(m.contains("reason=\"key_expired\"} 4"), "{m}");
    d.delete("life");
}
