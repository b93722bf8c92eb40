//! End-to-end tests of `srtpgate serve`: each test starts its own daemon
//! (own NG/HTTP ports and media range, one worker), drives it over the NG
//! protocol as a SIP proxy's module would, and plays both endpoints of the
//! calls with UDP sockets and the SRTP core's contexts.

use srtp::Suite;
use srtpgate_ng::Value;
use srtpgate_sdp::Sdp;
use srtpgate_testkit::daemon::*;
use std::net::{IpAddr, UdpSocket};
use std::time::{Duration, Instant};

fn in_range(d: &Daemon, port: u16) -> bool {
    (d.port_min..=d.port_max).contains(&port)
}

fn has_line(sdp: &Sdp, prefix: &str) -> bool {
    sdp.lines().any(|l| l.starts_with(prefix))
}

/// Offer with two keys (AES_CM_128_HMAC_SHA1_80 as tag 3, `suite` as tag 9),
/// the callee picks `suite`: each endpoint only ever sees the relay's keys,
/// media flows both ways, and a packet under the other leg's key is dropped.
fn rekey(slot: u16, name: &str, suite: Suite) {
    let d = Daemon::start(name, slot, &[]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let a_keys = [key(3, Suite::AES_CM_128_HMAC_SHA1_80), key(9, suite)];
    let origin: IpAddr = "192.0.2.55".parse().expect("ip");
    let a_sdp = SdpSpec {
        ip: LO,
        origin,
        port: a.port(),
        rtcp: Some(a.rtcp_port()),
        proto: "RTP/SAVP",
        crypto: &a_keys,
        mux: false,
        ice: true,
    }
    .text();
    let call = format!("{name}-call");
    let req = offer(&call, "alice", &a_sdp)
        .with("replace", Value::from(vec!["origin", "session-connection"]))
        .with("ICE", "remove");
    let r = d.request(&req);
    let o = reply_sdp(&r);
    // The offer as the callee sees it: the relay's address, port and keys.
    assert_eq!(o.connection(), Some(LO), "session c=");
    assert_eq!(o.media_connection(0), Some(LO));
    assert_eq!(o.origin_address(), Some(LO), "replace origin");
    let m = &o.media()[0];
    assert!(in_range(&d, m.port()), "relay port {} outside {}-{}", m.port(), d.port_min, d.port_max);
    assert_ne!(m.port(), a.port());
    assert_eq!(m.proto(), "RTP/SAVP");
    for ice in ["a=ice-", "a=candidate"] {
        assert!(!has_line(&o, ice), "ICE=remove left {ice}:\n{o}");
    }
    let relay_b = cryptos(&o);
    assert_eq!(relay_b.iter().map(|c| c.suite).collect::<Vec<_>>(), vec![Suite::AES_CM_128_HMAC_SHA1_80, suite]);
    for k in &relay_b {
        for mine in &a_keys {
            assert_ne!(k.keys[0].key_salt, mine.keys[0].key_salt, "the caller's key reached the callee");
        }
    }
    assert_ne!(relay_b[0].keys[0].key_salt, relay_b[1].keys[0].key_salt);
    // The callee picks `suite` with a key of its own.
    let pick = relay_b.iter().find(|c| c.suite == suite).expect("offered suite").clone();
    let b_key = key(pick.tag, suite);
    let b_sdp = b.sdp_spec("RTP/SAVP", std::slice::from_ref(&b_key)).text();
    let r = d.request(
        &answer(&call, "alice", "bob", &b_sdp).with("replace", Value::from(vec!["origin", "session-connection"])),
    );
    let ans = reply_sdp(&r);
    assert_eq!(ans.media_connection(0), Some(LO));
    let am = &ans.media()[0];
    assert!(in_range(&d, am.port()), "relay port {}", am.port());
    assert_ne!(am.port(), m.port(), "both sides on one relay port");
    assert_eq!(am.proto(), "RTP/SAVP");
    let relay_a = cryptos(&ans);
    assert_eq!(relay_a.len(), 1, "one key in the answer:\n{ans}");
    assert_eq!((relay_a[0].tag, relay_a[0].suite), (9, suite), "the caller's own tag for the picked suite");
    for other in [&a_keys[1], &b_key, &pick] {
        assert_ne!(relay_a[0].keys[0].key_salt, other.keys[0].key_salt, "the answer carries a relay key");
    }
    a.send_key(Some(&a_keys[1]));
    a.recv_key(Some(&relay_a[0]));
    a.relay(&ans);
    b.send_key(Some(&b_key));
    b.recv_key(Some(&pick));
    b.relay(&o);
    exchange(&mut a, &mut b, 50, 5);

    // A packet under the other leg's key (the callee's) from the caller.
    let forged = a.forge_rtp(&b_key);
    a.rtp.send_to(&forged, a.relay_rtp).expect("send");
    let q = wait_drops(&d, &call, "alice", "auth_failed", 1);
    assert_eq!(drops(&q, "alice", "auth_failed"), 1, "{}", show(&q));
    assert_eq!(drops(&q, "bob", "auth_failed"), 0, "{}", show(&q));
    // Not relayed: the callee's next packet is the caller's next good one.
    let good = a.send_rtp("after");
    assert_eq!(b.recv_rtp("after the bad packet"), good);
    let st = stream_stats(&q, "alice");
    // 50 RTP packets and the forged one (the 5 reports count on the RTCP stream).
    assert!(st.get("packets").and_then(Value::as_int).unwrap_or(0) >= 51, "{}", show(&q));
    d.delete(&call);
}

#[test]
fn srtp_rekey_aead_aes_128_gcm() {
    rekey(0, "rekey-gcm", Suite::AEAD_AES_128_GCM);
}

#[test]
fn srtp_rekey_aes_256_cm_hmac_sha1_80() {
    rekey(1, "rekey-aes256", Suite::AES_256_CM_HMAC_SHA1_80);
}

/// One side plain RTP, the other SRTP, by `transport-protocol`.
fn bridge(slot: u16, name: &str, plain_offerer: bool) {
    let d = Daemon::start(name, slot, &[]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let call = format!("{name}-call");
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_32);
    let a_keys: Vec<_> = if plain_offerer { vec![] } else { vec![a_key.clone()] };
    let (a_proto, b_proto) = if plain_offerer { ("RTP/AVP", "RTP/SAVP") } else { ("RTP/SAVP", "RTP/AVP") };
    let a_sdp = a.sdp_spec(a_proto, &a_keys).text();
    let r = d.request(&offer(&call, "alice", &a_sdp).with("transport-protocol", b_proto));
    let o = reply_sdp(&r);
    assert_eq!(o.media()[0].proto(), b_proto, "{o}");
    let relay_b = cryptos(&o);
    let b_key = if plain_offerer {
        // The relay offers the configured suites to the SRTP callee.
        assert!(relay_b.len() >= 2, "suites offered to the SRTP side:\n{o}");
        let gcm = relay_b.iter().find(|c| c.suite == Suite::AEAD_AES_128_GCM).expect("GCM offered").clone();
        Some((key(gcm.tag, gcm.suite), gcm))
    } else {
        assert!(relay_b.is_empty(), "a=crypto towards a plain RTP callee:\n{o}");
        None
    };
    let b_keys: Vec<_> = b_key.iter().map(|(k, _)| k.clone()).collect();
    let b_sdp = b.sdp_spec(b_proto, &b_keys).text();
    let r = d.request(&answer(&call, "alice", "bob", &b_sdp));
    let ans = reply_sdp(&r);
    assert_eq!(ans.media()[0].proto(), a_proto, "{ans}");
    let relay_a = cryptos(&ans);
    if plain_offerer {
        assert!(relay_a.is_empty(), "a=crypto towards a plain RTP caller:\n{ans}");
        let (bk, relay) = b_key.as_ref().expect("callee key");
        b.send_key(Some(bk));
        b.recv_key(Some(relay));
    } else {
        assert_eq!(relay_a.len(), 1, "{ans}");
        assert_eq!((relay_a[0].tag, relay_a[0].suite), (1, Suite::AES_CM_128_HMAC_SHA1_32));
        assert_ne!(relay_a[0].keys[0].key_salt, a_key.keys[0].key_salt);
        a.send_key(Some(&a_key));
        a.recv_key(Some(&relay_a[0]));
    }
    a.relay(&ans);
    b.relay(&o);
    // `exchange` compares whole packets: the plain side gets plain RTP/RTCP
    // byte for byte, the SRTP side what unprotects to it.
    exchange(&mut a, &mut b, 50, 5);
    let q = d.query(&call);
    for tag in ["alice", "bob"] {
        let st = stream_stats(&q, tag);
        assert_eq!(st.get("errors").and_then(Value::as_int), Some(0), "{tag}: {}", show(&q));
    }
    d.delete(&call);
}

/// Packets lost before the relay are counted per leg from the sequence
/// numbers it accepts (NG `query`'s "packets lost", the management page's
/// loss); packets it refused do not count as received.
#[test]
fn loss_before_the_relay_is_counted_per_leg() {
    let d = Daemon::start("loss", 22, &[]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let o = reply_sdp(&d.request(&offer("loss", "alice", &a.sdp_spec("RTP/AVP", &[]).text())));
    let ans = reply_sdp(&d.request(&answer("loss", "alice", "bob", &b.sdp_spec("RTP/AVP", &[]).text())));
    a.relay(&ans);
    b.relay(&o);
    let lost = |q: &Value, tag: &str| stream_stats(q, tag).get("packets lost").and_then(Value::as_int);
    for round in 0..3 {
        for i in 0..10 {
            let want = a.send_rtp("a->b");
            assert_eq!(b.recv_rtp(&format!("round {round} packet {i}")), want);
        }
        a.skip(3);
    }
    let _ = a.send_rtp("a->b");
    let _ = b.recv_rtp("last");
    let q = d.query("loss");
    assert_eq!((lost(&q, "alice"), lost(&q, "bob")), (Some(9), Some(0)), "{}", show(&q));
    // A stranger's packets with later sequence numbers are refused, and do
    // not move the count.
    let stranger = UdpSocket::bind((LO, 0)).expect("bind");
    stranger.send_to(&rtp(a.ssrc, 60_000, b"x"), a.relay_rtp).expect("send");
    wait_drops(&d, "loss", "alice", "unknown_peer", 1);
    assert_eq!(lost(&d.query("loss"), "alice"), Some(9));
}

#[test]
fn bridge_plain_offer_to_srtp_callee() {
    bridge(2, "bridge-rtp-savp", true);
}

#[test]
fn bridge_srtp_offer_to_plain_callee() {
    bridge(3, "bridge-savp-rtp", false);
}

#[test]
fn rtcp_mux_carries_srtcp_on_the_rtp_port() {
    let d = Daemon::start("rtcp-mux", 4, &[]);
    let mut c = srtp_call(&d, "mux-call", LO, true);
    assert!(c.offer_out.media()[0].rtcp_mux(), "rtcp-mux offered onwards:\n{}", c.offer_out);
    assert!(c.answer_out.media()[0].rtcp_mux(), "rtcp-mux in the caller's answer:\n{}", c.answer_out);
    assert!(c.a.mux && c.b.mux);
    // RTCP to the relay's RTP port arrives (SRTCP) on the other RTP port;
    // `exchange` asserts that, in both directions, with RTP on the same port.
    exchange(&mut c.a, &mut c.b, 20, 10);
    assert_quiet(&c.a.rtcp, "caller RTCP socket");
    assert_quiet(&c.b.rtcp, "callee RTCP socket");
    let q = d.query("mux-call");
    for tag in ["mux-call-a", "mux-call-b"] {
        assert_eq!(stream_stats(&q, tag).get("errors").and_then(Value::as_int), Some(0), "{}", show(&q));
    }
}

#[test]
fn latching_follows_the_real_source_and_refuses_strangers() {
    let d = Daemon::start("latching", 5, &[]);
    // The caller speaks plain RTP, the callee SRTP; both send from another
    // port than their SDP says (NAT).
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let a_decoy = UdpSocket::bind((LO, 0)).expect("bind");
    let b_decoy = UdpSocket::bind((LO, 0)).expect("bind");
    let port = |s: &UdpSocket| s.local_addr().expect("addr").port();
    let a_sdp = SdpSpec {
        ip: LO,
        origin: LO,
        port: port(&a_decoy),
        rtcp: None,
        proto: "RTP/AVP",
        crypto: &[],
        mux: false,
        ice: false,
    }
    .text();
    let o = reply_sdp(&d.request(&offer("latch", "alice", &a_sdp).with("transport-protocol", "RTP/SAVP")));
    let relay_b = cryptos(&o)[0].clone();
    let b_key = key(relay_b.tag, relay_b.suite);
    let b_sdp = SdpSpec {
        ip: LO,
        origin: LO,
        port: port(&b_decoy),
        rtcp: None,
        proto: "RTP/SAVP",
        crypto: std::slice::from_ref(&b_key),
        mux: false,
        ice: false,
    }
    .text();
    let ans = reply_sdp(&d.request(&answer("latch", "alice", "bob", &b_sdp)));
    b.send_key(Some(&b_key));
    b.recv_key(Some(&relay_b));
    a.relay(&ans);
    b.relay(&o);

    // The caller speaks first: the callee has not latched, so its packets go
    // where its SDP said.
    let first: Vec<_> = (0..5).map(|_| a.send_rtp("a->b")).collect();
    for (i, want) in first.iter().enumerate() {
        let (wire, _) = recv_within(&b_decoy, WAIT).unwrap_or_else(|| panic!("packet {i} at the callee's SDP port"));
        assert_eq!(&b.open_rtp(&wire).expect("unprotect"), want);
    }
    // The callee answers from its real port: the caller was latched to its
    // real source, so the replies go there, not to the SDP's port.
    let back: Vec<_> = (0..5).map(|_| b.send_rtp("b->a")).collect();
    for (i, want) in back.iter().enumerate() {
        assert_eq!(&a.recv_rtp(&format!("reply {i} at the caller's real port")), want);
    }
    assert_quiet(&a_decoy, "the caller's SDP port after latching");
    // And the callee is latched to its real port now.
    let more: Vec<_> = (0..5).map(|_| a.send_rtp("a->b")).collect();
    for (i, want) in more.iter().enumerate() {
        assert_eq!(&b.recv_rtp(&format!("packet {i} at the callee's real port")), want);
    }
    assert_quiet(&b_decoy, "the callee's SDP port after latching");

    // A stranger's plain RTP to the caller's relay port is dropped.
    let stranger = UdpSocket::bind((LO, 0)).expect("bind");
    for i in 0..3 {
        stranger.send_to(&rtp(a.ssrc, 40_000 + i, b"stranger"), a.relay_rtp).expect("send");
    }
    let q = wait_drops(&d, "latch", "alice", "unknown_peer", 3);
    assert_eq!(drops(&q, "alice", "unknown_peer"), 3, "{}", show(&q));
    // A stranger's forged SRTP to the callee's relay port fails
    // authentication and does not move the callee's latch.
    let forged = b.forge_rtp(&key(1, relay_b.suite));
    stranger.send_to(&forged, b.relay_rtp).expect("send");
    wait_drops(&d, "latch", "bob", "auth_failed", 1);
    // The call goes on, both ways, to the latched addresses.
    exchange(&mut a, &mut b, 10, 0);
    assert_quiet(&stranger, "the stranger");
    assert_quiet(&a_decoy, "the caller's SDP port");
    assert_quiet(&b_decoy, "the callee's SDP port");
}

#[test]
fn delete_frees_every_port() {
    let d = Daemon::start("delete", 6, &[]);
    let mut c = srtp_call(&d, "del-call", LO, false);
    exchange(&mut c.a, &mut c.b, 10, 2);
    assert_eq!(d.list(), vec!["del-call".to_string()]);
    let m = d.metrics();
    assert_eq!(metric(&m, "port_pairs_in_use"), Some(2.0));
    assert_eq!(metric(&m, "worker_legs"), Some(2.0));
    let r = d.delete("del-call");
    assert!(r.get("tags").is_some(), "delete reports the call's counters: {}", show(&r));
    let q = d.query("del-call");
    assert_eq!(result(&q), "error", "{}", show(&q));
    assert!(q.get("error-reason").and_then(Value::as_str).is_some(), "{}", show(&q));
    assert!(d.list().is_empty());
    for p in c.relay_ports() {
        wait_bindable(LO, p);
    }
    let m = d.metrics();
    assert_eq!(metric(&m, "port_pairs_in_use"), Some(0.0));
    assert_eq!(metric(&m, "sessions"), Some(0.0));
    d.wait_metric("worker_legs", 0.0);
    // Media to the old ports goes nowhere, and the daemon is fine.
    let _ = c.a.send_rtp("late");
    assert_quiet(&c.b.rtp, "callee after delete");
    // A repeated delete is not an error (the modules send two on a 486).
    let r = d.delete("del-call");
    assert!(r.get("warning").is_some(), "{}", show(&r));
    d.ping();
}

#[test]
fn media_timeout_ends_idle_calls_only() {
    let d = Daemon::start("timeout", 7, &["--timeout", "1"]);
    let idle = srtp_call(&d, "idle-call", LO, false);
    // The idle call's last signal was before this.
    let start = Instant::now();
    let mut busy = srtp_call(&d, "busy-call", LO, false);
    let mut gone = None;
    let mut sent = 0;
    // Media every 100 ms on the busy call, both ways.
    while start.elapsed() < Duration::from_millis(3_200) {
        let w = busy.a.send_rtp("a->b");
        assert_eq!(busy.b.recv_rtp("busy a->b"), w);
        let w = busy.b.send_rtp("b->a");
        assert_eq!(busy.a.recv_rtp("busy b->a"), w);
        sent += 1;
        let calls = d.list();
        assert!(calls.contains(&"busy-call".to_string()), "the busy call ended after {:?}", start.elapsed());
        if gone.is_none() && !calls.contains(&"idle-call".to_string()) {
            gone = Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let gone = gone.expect("the idle call did not end within 3.2 s with --timeout 1");
    println!("idle call ended {gone:?} after its answer; busy call carried {sent} packets each way");
    // The timer runs each second and ends calls idle for more than the
    // timeout: between 1 and 2 s, with room for a loaded machine.
    assert!(gone >= Duration::from_millis(950), "ended before the timeout: {gone:?}");
    for p in idle.relay_ports() {
        wait_bindable(LO, p);
    }
    let m = d.metrics();
    assert_eq!(metric(&m, "port_pairs_in_use"), Some(2.0), "only the busy call's pairs");
    assert!(m.contains("srtpgate_calls_ended_total{cause=\"timeout\"} 1\n"), "{m}");
    assert_eq!(result(&d.query("idle-call")), "error");
    // The busy call still works once media stops... until it times out too.
    let deadline = Instant::now() + Duration::from_secs(5);
    while d.list().contains(&"busy-call".to_string()) {
        assert!(Instant::now() < deadline, "the busy call never timed out after its media stopped");
        std::thread::sleep(Duration::from_millis(100));
    }
    d.wait_metric("port_pairs_in_use", 0.0);
    d.wait_metric("worker_legs", 0.0);
}

/// One round of `n` calls, each offer + answer + one SRTP packet relayed
/// (and, every tenth call, one forged one dropped) + delete.
fn call_round(d: &Daemon, round: usize, n: usize, a: &mut Endpoint, b: &mut Endpoint) {
    for i in 0..n {
        let id = format!("bulk-{round}-{i}");
        let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
        let a_sdp = a.sdp_spec("RTP/SAVP", std::slice::from_ref(&a_key)).text();
        let o = reply_sdp(&d.request(&offer(&id, "a", &a_sdp)));
        let relay_b = cryptos(&o)[0].clone();
        let b_key = key(relay_b.tag, relay_b.suite);
        let b_sdp = b.sdp_spec("RTP/SAVP", std::slice::from_ref(&b_key)).text();
        let ans = reply_sdp(&d.request(&answer(&id, "a", "b", &b_sdp)));
        a.send_key(Some(&a_key));
        a.relay(&ans);
        b.recv_key(Some(&relay_b));
        b.relay(&o);
        if i % 10 == 0 {
            let forged = a.forge_rtp(&b_key);
            a.rtp.send_to(&forged, a.relay_rtp).expect("send");
        }
        let w = a.send_rtp("bulk");
        assert_eq!(b.recv_rtp(&id), w, "{id}");
        d.delete(&id);
    }
}

#[test]
fn thousand_calls_leak_nothing() {
    const N: usize = 1_000;
    let d = Daemon::start("thousand", 8, &[]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let t = Instant::now();
    call_round(&d, 0, N, &mut a, &mut b);
    // After each round: no call, port pair or leg left, and every packet
    // buffer back. The worker keeps up to BATCH - 1 (31) buffers taken for
    // its next recvmmsg, which the metric counts as in use (see
    // `pool_free_metric_counts_every_idle_buffer`), so here: at most 31 out,
    // and the same number after both rounds (a leak would grow with calls).
    let settle = |d: &Daemon| -> f64 {
        d.wait_metric("port_pairs_in_use", 0.0);
        d.wait_metric("worker_legs", 0.0);
        d.wait_metric("sessions", 0.0);
        assert!(d.list().is_empty());
        let m = d.metrics();
        let (size, free) = (metric(&m, "pool_buffers"), metric(&m, "pool_buffers_free"));
        let (size, free) = (size.expect("pool_buffers"), free.expect("pool_buffers_free"));
        assert!(size >= 64.0, "pool size {size}");
        assert!(size - free < 32.0, "packet buffers leaked: {free} of {size} free");
        free
    };
    let free1 = settle(&d);
    let rss1 = d.rss_kb();
    let first = t.elapsed();
    call_round(&d, 1, N, &mut a, &mut b);
    let free2 = settle(&d);
    let rss2 = d.rss_kb();
    println!(
        "{N} calls: round 1 {first:?}, round 2 {:?}; VmRSS after round 1 {rss1} kB, after round 2 {rss2} kB; free buffers {free1}, {free2}",
        t.elapsed() - first
    );
    assert_eq!(free1, free2, "free packet buffers after {N} and {} calls", 2 * N);
    assert!(rss2 <= rss1 + 10 * 1024, "VmRSS grew from {rss1} kB to {rss2} kB over {N} more calls");
    let m = d.metrics();
    assert_eq!(metric(&m, "calls_created_total"), Some(2.0 * N as f64));
    assert!(m.contains(&format!("srtpgate_calls_ended_total{{cause=\"delete\"}} {}\n", 2 * N)), "{m}");
    // Every forged packet was dropped (none reached the callee: it got
    // the good packet sent after it). The count can come out short: see
    // `drops_of_deleted_calls_are_all_counted`.
    let forged = (2 * N).div_ceil(10) as f64;
    let counted = m
        .lines()
        .find_map(|l| l.strip_prefix("srtpgate_packets_dropped_total{reason=\"auth_failed\"} "))
        .and_then(|v| v.parse::<f64>().ok())
        .expect("auth_failed drops");
    assert!(counted <= forged && counted >= forged * 0.9, "auth_failed drops {counted}, forged {forged}");
}

#[test]
fn drops_of_deleted_calls_are_all_counted() {
    let d = Daemon::start("drop-count", 19, &[]);
    const N: usize = 200;
    for i in 0..N {
        let id = format!("dc-{i}");
        let mut c = srtp_call(&d, &id, LO, false);
        let b_key = c.b_key.clone().expect("key");
        // A forged packet and a good one, read in one batch.
        d.pause();
        let forged = c.a.forge_rtp(&b_key);
        c.a.rtp.send_to(&forged, c.a.relay_rtp).expect("send");
        let w = c.a.send_rtp("good");
        d.resume();
        assert_eq!(c.b.recv_rtp(&id), w);
        d.delete(&id);
    }
    let m = d.metrics();
    let line = format!("srtpgate_packets_dropped_total{{reason=\"auth_failed\"}} {N}\n");
    assert!(m.contains(&line), "want {line:?} in\n{m}");
}

#[test]
fn pool_free_metric_counts_every_idle_buffer() {
    let d = Daemon::start("pool-free", 14, &[]);
    let mut c = srtp_call(&d, "pool-call", LO, false);
    exchange(&mut c.a, &mut c.b, 3, 0);
    d.delete("pool-call");
    d.wait_metric("worker_legs", 0.0);
    let m = d.metrics();
    assert_eq!(metric(&m, "pool_buffers_free"), metric(&m, "pool_buffers"), "free vs pool size while idle");
}

#[test]
fn srtcp_burst_gets_distinct_indices() {
    let d = Daemon::start("srtcp-burst", 15, &[]);
    for (call, plain_caller) in [("burst-srtp", false), ("burst-plain", true)] {
        let mut c = if plain_caller {
            // Plain RTCP in, SRTCP out: the relay alone picks the indices.
            let mut a = Endpoint::new(LO);
            let mut b = Endpoint::new(LO);
            let a_sdp = a.sdp_spec("RTP/AVP", &[]).text();
            let o = reply_sdp(&d.request(&offer(call, "x", &a_sdp).with("transport-protocol", "RTP/SAVP")));
            let relay_b = cryptos(&o)[0].clone();
            let b_key = key(relay_b.tag, relay_b.suite);
            let b_sdp = b.sdp_spec("RTP/SAVP", std::slice::from_ref(&b_key)).text();
            let ans = reply_sdp(&d.request(&answer(call, "x", "y", &b_sdp)));
            b.send_key(Some(&b_key));
            b.recv_key(Some(&relay_b));
            a.relay(&ans);
            b.relay(&o);
            (a, b)
        } else {
            let c = srtp_call(&d, call, LO, false);
            (c.a, c.b)
        };
        // Ten reports in one burst (the daemon stopped meanwhile, so that
        // its worker reads them in one batch): each must reach the callee
        // and unprotect (distinct SRTCP indices).
        d.pause();
        let sent: Vec<Vec<u8>> = (0..10).map(|_| c.0.send_rtcp()).collect();
        d.resume();
        for (i, want) in sent.iter().enumerate() {
            assert_eq!(&c.1.recv_rtcp(&format!("{call}: RTCP {i} of a burst")), want);
        }
    }
}

#[test]
fn bad_input_never_disturbs_a_call() {
    let mut d = Daemon::start("bad-input", 9, &[]);
    let mut c = srtp_call(&d, "good-call", LO, false);
    exchange(&mut c.a, &mut c.b, 5, 1);

    // NG: things without a usable cookie get no reply. The daemon handles
    // datagrams in order, so the first reply after them must be the pong.
    let mut garbage = vec![0u8; 300];
    for (i, b) in garbage.iter_mut().enumerate() {
        *b = (i * 7 + 1) as u8 | 0x80;
    }
    d.send_raw(&garbage);
    d.send_raw(b"d7:command4:pinge");
    d.send_raw(b"");
    d.send_raw(b" d7:command4:pinge");
    let cookie = d.cookie();
    d.send_raw(&srtpgate_ng::request(&cookie, &Value::dict().with("command", "ping")));
    let first = d.recv_raw(WAIT).expect("a reply to the ping");
    let (got, v) = srtpgate_ng::parse_reply(&first).expect("reply parses");
    assert_eq!(got, cookie.as_bytes(), "a reply to a datagram without a cookie: {:?}", String::from_utf8_lossy(&first));
    assert_eq!(result(&v), "pong");

    let refused = |body: &[u8], why: &str| -> String {
        let cookie = d.cookie();
        let mut dgram = format!("{cookie} ").into_bytes();
        dgram.extend_from_slice(body);
        d.send_raw(&dgram);
        let raw = d.recv_raw(WAIT).unwrap_or_else(|| panic!("{why}: no reply"));
        let (c, v) = srtpgate_ng::parse_reply(&raw).unwrap_or_else(|e| panic!("{why}: reply does not parse: {e}"));
        assert_eq!(c, cookie.as_bytes(), "{why}");
        assert_eq!(result(&v), "error", "{why}: {}", show(&v));
        v.get("error-reason").and_then(Value::as_str).unwrap_or_else(|| panic!("{why}: no error-reason")).to_string()
    };
    refused(b"d7:command4:ping", "truncated bencode");
    refused(b"d7:command99:pinge", "string past the end");
    refused(b"l7:command4:pinge", "not a dictionary");
    refused(b"i42e", "an integer");
    refused(&[0xff; 64], "binary body");
    let reason = refused(b"d7:command14:launch rocketse", "unknown command");
    assert!(reason.contains("launch rockets"), "{reason}");
    let a_sdp =
        SdpSpec { ip: LO, origin: LO, port: 4000, rtcp: None, proto: "RTP/AVP", crypto: &[], mux: false, ice: false }
            .text();
    let bad_flag = offer("x1", "t", &a_sdp).with("flags", Value::from(vec!["no-such-flag"]));
    let reason = refused(&bad_flag.to_bytes(), "unknown flag");
    assert!(reason.contains("no-such-flag"), "{reason}");
    refused(&offer("x2", "t", "v=0\r\nthis is no SDP\r\n\x01\x02").to_bytes(), "malformed SDP");
    let odd = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio 4000 RTP/SAVP 0\r\na=crypto:1 ROT13_HMAC_MD5_80 inline:QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\r\n";
    let reason = refused(&offer("x3", "t", odd).to_bytes(), "a=crypto of an unknown suite only");
    assert!(reason.contains("crypto"), "{reason}");
    let reason = refused(&answer("no-such-call", "t", "u", &a_sdp).to_bytes(), "answer for an unknown call");
    assert!(reason.contains("no-such-call"), "{reason}");
    refused(
        &Value::dict().with("command", "offer").with("from-tag", "t").with("sdp", a_sdp.as_str()).to_bytes(),
        "no call-id",
    );
    // The largest UDP datagram: a request without a command.
    let big = format!("d3:sdp65000:{}e", "x".repeat(65_000));
    refused(big.as_bytes(), "64 kB datagram");
    d.ping();
    // None of the refused offers left a call or a port behind.
    assert_eq!(d.list(), vec!["good-call".to_string()]);
    assert_eq!(d.metric("port_pairs_in_use"), Some(2.0));

    // Media ports: junk to all four relay ports, from a stranger and from
    // the endpoints themselves.
    let stranger = UdpSocket::bind((LO, 0)).expect("bind");
    let targets = [c.a.relay_rtp, c.a.relay_rtcp, c.b.relay_rtp, c.b.relay_rtcp];
    let mut junk: Vec<Vec<u8>> = vec![
        vec![],
        vec![0x80],
        vec![0x80, 0, 0, 1, 0, 0],      // truncated RTP
        rtp(1, 2, b"x")[..11].to_vec(), // one byte short of a header
        {
            let mut p = rtp(0x0bad_cafe, 3, &[7; 40]);
            p[0] = 0x40;
            p
        }, // version 1
        {
            let mut p = rtp(0x0bad_cafe, 3, &[7; 40]);
            p[0] = 0x00;
            p
        }, // version 0
        {
            let mut p = rtp(0x0bad_cafe, 3, &[7; 40]);
            p[0] = 0x8f;
            p
        }, // 15 CSRCs past the end
        {
            let mut p = rtp(0x0bad_cafe, 3, &[7; 40]);
            p[0] = 0x90;
            p
        }, // extension past the end
        {
            let mut p = rtp(0x0bad_cafe, 3, &[7; 4]);
            p[0] = 0xa0;
            p.push(200);
            p
        }, // padding past the start
        vec![0x5a; 2_000],
        rtp(0x0bad_cafe, 4, &[0x33; 1_988]), // 2 000 bytes, unauthenticated
        vec![0x80; 4_000],                   // larger than a packet buffer
    ];
    let mut seed = 0x1234_5678u32;
    for len in [1usize, 12, 13, 50, 172, 1_500] {
        let v: Vec<u8> = (0..len)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                seed as u8
            })
            .collect();
        junk.push(v);
    }
    for t in targets {
        for j in &junk {
            stranger.send_to(j, t).expect("send junk");
            c.a.rtp.send_to(j, t).expect("send junk");
        }
    }
    // Replays: a good packet sent twice, and an old one again.
    let (plain, wire) = c.a.next_rtp(b"replay me");
    for _ in 0..3 {
        c.a.rtp.send_to(&wire, c.a.relay_rtp).expect("send");
    }
    assert_eq!(c.b.recv_rtp("the replayed packet, once"), plain);
    // A 2 000-byte SRTP packet (payload 1 988) relays intact.
    let (big, wire) = c.a.next_rtp(&[0xab; 1_988]);
    assert_eq!(wire.len(), 2_010);
    c.a.rtp.send_to(&wire, c.a.relay_rtp).expect("send");
    assert_eq!(c.b.recv_rtp("2 000-byte packet"), big);
    let q = wait_drops(&d, "good-call", "good-call-a", "replayed", 2);
    assert_eq!(drops(&q, "good-call-a", "replayed"), 2, "{}", show(&q));
    for reason in ["malformed", "auth_failed"] {
        assert!(drops(&q, "good-call-a", reason) > 0, "no {reason} drops: {}", show(&q));
        assert!(drops(&q, "good-call-b", reason) > 0, "no {reason} drops: {}", show(&q));
    }
    // Nothing of it reached the endpoints; the call still works both ways.
    exchange(&mut c.a, &mut c.b, 20, 2);
    assert_quiet(&c.a.rtp, "caller");
    assert_quiet(&c.b.rtp, "callee");
    assert_quiet(&stranger, "stranger");
    d.ping();
    assert!(d.alive(), "the daemon exited");
}

#[test]
fn ipv6_media() {
    let v6: IpAddr = "::1".parse().expect("ip");
    if let Err(e) = UdpSocket::bind((v6, 0)) {
        srtpgate_testkit::skip("ipv6", "ipv6_media", format!("cannot bind [::1]: {e}"));
        return;
    }
    let d = Daemon::start_on("ipv6", 10, &["::1"], &[]);
    let mut c = srtp_call(&d, "v6-call", v6, false);
    for (what, sdp) in [("offer", &c.offer_out), ("answer", &c.answer_out)] {
        assert_eq!(sdp.connection(), Some(v6), "{what}:\n{sdp}");
        assert!(has_line(sdp, "c=IN IP6 ::1"), "{what}:\n{sdp}");
        assert!(in_range(&d, sdp.media()[0].port()), "{what}:\n{sdp}");
    }
    assert!(c.a.relay_rtp.is_ipv6());
    exchange(&mut c.a, &mut c.b, 20, 2);
    let q = d.query("v6-call");
    let ep = q
        .get("tags")
        .and_then(|t| t.get("v6-call-a"))
        .and_then(|t| t.get("medias"))
        .and_then(Value::as_list)
        .and_then(|m| m[0].get("streams"))
        .and_then(Value::as_list)
        .and_then(|s| s[0].get("endpoint"))
        .expect("endpoint");
    assert_eq!(ep.get("family").and_then(Value::as_str), Some("IPv6"), "{}", show(&q));
    d.delete("v6-call");
    for p in c.relay_ports() {
        wait_bindable(v6, p);
    }
}
