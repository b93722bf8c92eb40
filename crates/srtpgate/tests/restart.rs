//! A relay that keeps its calls in Redis is killed (SIGKILL, mid-call) and
//! started again: the calls resume within a second, and no keystream is
//! reused — every packet and report that either endpoint received, before
//! and after the crash, unprotects under one continuous context, and no
//! (key, SSRC, index) came twice, even when old packets are sent again to
//! the restarted relay from the plain-RTP side. The keys are not in Redis
//! in the clear. Needs `redis-server` (Debian `redis-server`, which the
//! test command installs); skips, saying so on stderr, without it (fails
//! with `SRTPGATE_REQUIRE=redis`).

use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_testkit::daemon::{answer, cryptos, key, offer, reply_sdp, srtp_call, Daemon, Endpoint, SdpSpec, LO};
use srtpgate_testkit::redis::Redis;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What one endpoint received: when, and the bytes.
type Got = Vec<(Instant, Vec<u8>)>;

/// What one endpoint sent (RTP only): when, and the bytes on the wire.
type Sent = Arc<Mutex<Vec<(Instant, Vec<u8>)>>>;

/// Packets a second of [`stream`].
const RATE: u32 = 50;

/// Sends RTP (50 a second, an RTCP report every 25) and records what comes
/// back, until `stop`. Returns the endpoint and what it received.
fn stream(e: Endpoint, sent: Sent, stop: Arc<AtomicBool>) -> JoinHandle<(Endpoint, Got)> {
    stream_wrapping(e, sent, stop, None)
}

/// [`stream`], starting at the sequence number that makes it cross its
/// wrap at `wrap` (the packet sent then, or the first after it, carries
/// sequence number 0).
fn stream_wrapping(
    mut e: Endpoint,
    sent: Sent,
    stop: Arc<AtomicBool>,
    wrap: Option<Instant>,
) -> JoinHandle<(Endpoint, Got)> {
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut next = Instant::now();
        let mut n = 0u64;
        let period = Duration::from_secs(1) / RATE;
        if let Some(t) = wrap {
            let ahead = (t.saturating_duration_since(next).as_micros() / period.as_micros()) as u16;
            e.skip(0u16.wrapping_sub(ahead).wrapping_sub(e.next_seq()));
        }
        while !stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            if now >= next {
                let mut payload = n.to_be_bytes().to_vec();
                payload.resize(160, 0xd5);
                let (_, wire) = e.next_rtp(&payload);
                e.rtp.send_to(&wire, e.relay_rtp).expect("send");
                sent.lock().expect("sent").push((Instant::now(), wire));
                if n % 25 == 24 {
                    e.send_rtcp();
                }
                n += 1;
                next += period;
                continue;
            }
            if let Some((wire, _)) = srtpgate_testkit::daemon::recv_within(&e.rtp, next.saturating_duration_since(now))
            {
                got.push((Instant::now(), wire));
            }
        }
        // What is still on its way.
        while let Some((wire, _)) = srtpgate_testkit::daemon::recv_within(&e.rtp, Duration::from_millis(200)) {
            got.push((Instant::now(), wire));
        }
        (e, got)
    })
}

/// Opens everything `e` received in order with its one receiving context
/// (the endpoint did not restart): each must open, and no (SSRC, index)
/// may come twice. Returns (RTP, RTCP) counts and the first arrival after
/// `restart`.
fn check_received(
    what: &str,
    plain: bool,
    e: &mut Endpoint,
    got: &Got,
    restart: Instant,
) -> (usize, usize, Option<Duration>) {
    let mut seen = HashSet::new();
    let (mut rtp, mut rtcp) = (0, 0);
    let mut first_after = None;
    for (i, (at, wire)) in got.iter().enumerate() {
        let is_rtcp = wire.len() > 1 && (200..=204).contains(&wire[1]);
        if is_rtcp && plain {
            rtcp += 1;
        } else if is_rtcp {
            let plain = e.open_rtcp(wire).unwrap_or_else(|err| panic!("{what}: report {i} does not open: {err}"));
            let ssrc = u32::from_be_bytes(plain[4..8].try_into().expect("4"));
            // The SRTCP index: the word before the 10-byte tag.
            let n = wire.len();
            let index = u32::from_be_bytes(wire[n - 14..n - 10].try_into().expect("4")) & 0x7fff_ffff;
            assert!(seen.insert((true, ssrc, u64::from(index))), "{what}: SRTCP index {index} of {ssrc:08x} twice");
            rtcp += 1;
        } else {
            let plain = e.open_rtp(wire).unwrap_or_else(|err| panic!("{what}: packet {i} does not open: {err}"));
            let ssrc = u32::from_be_bytes(plain[8..12].try_into().expect("4"));
            let seq = u16::from_be_bytes([plain[2], plain[3]]);
            // A plain-RTP receiver has no keystream to check.
            if let Some(roc) = e.rx_roc(ssrc) {
                let index = (u64::from(roc) << 16) | u64::from(seq);
                assert!(seen.insert((false, ssrc, index)), "{what}: SRTP index {index} of {ssrc:08x} twice");
            }
            rtp += 1;
        }
        if *at > restart + Duration::from_millis(5) && first_after.is_none() {
            first_after = Some(at.duration_since(restart));
        }
    }
    (rtp, rtcp, first_after)
}

/// The base64 key material of an `a=crypto` attribute.
fn inline_keys(c: &CryptoAttr) -> Vec<String> {
    c.to_string().split("inline:").skip(1).map(|k| k.split(['|', ';', ' ']).next().unwrap_or("").to_string()).collect()
}

#[test]
fn calls_resume_after_a_crash_without_reusing_keystream() {
    let Some(redis) = Redis::for_test() else { return };
    let (ns, args) = redis.relay_args("restart");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut d = Daemon::start("restart", 0, &args);

    // An SRTP↔SRTP call, and a plain-RTP caller with an SRTP callee.
    let c1 = srtp_call(&d, "kept-srtp", LO, true);
    let (mut pa, mut pb) = (Endpoint::new(LO), Endpoint::new(LO));
    let spec = |e: &Endpoint, proto: &'static str, k: &[CryptoAttr]| {
        SdpSpec { ip: LO, origin: LO, port: e.port(), rtcp: None, proto, crypto: k, mux: true, ice: false }.text()
    };
    let o = reply_sdp(
        &d.request(&offer("kept-plain", "pa", &spec(&pa, "RTP/AVP", &[])).with("transport-protocol", "RTP/SAVP")),
    );
    let relay_for_pb = cryptos(&o).remove(0);
    let pb_key = key(relay_for_pb.tag, relay_for_pb.suite);
    let ans =
        reply_sdp(&d.request(&answer("kept-plain", "pa", "pb", &spec(&pb, "RTP/SAVP", std::slice::from_ref(&pb_key)))));
    pa.relay(&ans);
    pb.send_key(Some(&pb_key));
    pb.recv_key(Some(&relay_for_pb));
    pb.relay(&o);
    let keys: Vec<String> = [&c1.a_key, &c1.b_key]
        .into_iter()
        .flatten()
        .chain(cryptos(&c1.answer_out).iter().chain(cryptos(&c1.offer_out).iter()))
        .chain([&pb_key, &relay_for_pb])
        .flat_map(inline_keys)
        .collect();
    assert_eq!(keys.len(), 6);

    let stop = Arc::new(AtomicBool::new(false));
    let (pa_sock, pa_relay) = (pa.rtp.try_clone().expect("clone"), pa.relay_rtp);
    let pa_sent: Sent = Arc::default();
    let threads = [
        stream(c1.a, Arc::default(), stop.clone()),
        stream(c1.b, Arc::default(), stop.clone()),
        stream(pa, pa_sent.clone(), stop.clone()),
        stream(pb, Arc::default(), stop.clone()),
    ];
    std::thread::sleep(Duration::from_secs(3));

    // The keys at rest: none in the clear anywhere in Redis.
    let all = redis.command(&["KEYS", &format!("{ns}:*")]).expect("KEYS");
    let names: Vec<String> =
        String::from_utf8_lossy(&all).lines().filter(|l| l.starts_with(&ns)).map(str::to_string).collect();
    assert!(names.contains(&format!("{ns}:call:kept-srtp")), "no record of the call in Redis: {names:?}");
    assert!(names.contains(&format!("{ns}:idx:kept-plain")), "no indices of the call in Redis: {names:?}");
    for n in &names {
        let v = if n.contains(":idx:") { redis.command(&["HGETALL", n]) } else { redis.command(&["GET", n]) };
        let v = v.expect("read");
        for k in &keys {
            assert!(!v.windows(k.len()).any(|w| w == k.as_bytes()), "a key in the clear in {n}");
        }
        assert!(!String::from_utf8_lossy(&v).contains("AES_CM"), "{n} is not sealed: {}", String::from_utf8_lossy(&v));
    }

    // The crash.
    let restart = d.crash_and_restart();
    println!("restarted: answering {:?} after it was started", restart.elapsed());
    // What the plain caller sent in its last second before the crash comes
    // again, with other payloads (a spoofed plain-RTP source can do that):
    // none of it may go out under an index used before.
    std::thread::sleep(Duration::from_millis(100));
    let old: Vec<Vec<u8>> = pa_sent
        .lock()
        .expect("sent")
        .iter()
        .filter(|(at, _)| *at < restart && *at + Duration::from_secs(1) > restart)
        .map(|(_, w)| w.clone())
        .collect();
    assert!(old.len() >= 40, "{} packets in the last second", old.len());
    for mut w in old.clone() {
        w[20] ^= 0xff;
        pa_sock.send_to(&w, pa_relay).expect("send");
    }
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::SeqCst);
    let mut ends = threads.map(|t| t.join().expect("endpoint"));
    for (i, (e, got)) in ends.iter_mut().enumerate() {
        let what = ["srtp call, caller", "srtp call, callee", "plain caller", "its srtp callee"][i];
        let (rtp, rtcp, first) = check_received(what, i == 2, e, got, restart);
        let first = first.unwrap_or_else(|| panic!("{what}: nothing after the restart"));
        println!("{what}: {rtp} RTP and {rtcp} RTCP received, none twice; first packet {first:?} after the restart");
        assert!(first < Duration::from_secs(1), "{what}: media came back {first:?} after the restart");
        let after = got.iter().filter(|(at, _)| *at > restart).count();
        assert!(after > 100, "{what}: only {after} packets after the restart");
    }
    let page = d.metrics();
    assert_eq!(srtpgate_testkit::daemon::metric(&page, "calls_resumed_total"), Some(2.0), "{page}");
    let q = d.query("kept-plain");
    let refused = srtpgate_testkit::daemon::drops(&q, "pa", "replayed");
    assert!(refused >= old.len() as i64, "only {refused} of the {} old packets refused", old.len());
    println!("old packets sent again after the restart: {} (replayed drops of the plain leg: {refused})", old.len());
    // A clean stop (SIGTERM: a service restart) leaves the calls in Redis
    // for the next start too.
    d.restart_after(libc::SIGTERM);
    let page = d.metrics();
    assert_eq!(srtpgate_testkit::daemon::metric(&page, "calls_resumed_total"), Some(2.0), "after SIGTERM: {page}");
    // The resumed calls end normally, and leave Redis (the relay's lease
    // and its epoch stay).
    for id in ["kept-srtp", "kept-plain"] {
        assert_eq!(srtpgate_testkit::daemon::result(&d.delete(id)), "ok");
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = redis.command(&["KEYS", &format!("{ns}:*")]).expect("KEYS");
        let left =
            String::from_utf8_lossy(&left).replace(&format!("{ns}:lease"), "").replace(&format!("{ns}:epoch"), "");
        if !left.contains(&ns) {
            break;
        }
        assert!(Instant::now() < deadline, "left in Redis: {left}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// While Redis is away the relay sends nothing past the reservations Redis
/// holds (counted as `not_reserved`); once Redis is back, the media goes on.
#[test]
fn media_waits_for_redis_rather_than_go_past_its_reservation() {
    let Some(mut redis) = Redis::for_test() else { return };
    let (_, args) = redis.relay_args("redis-away");
    let d = Daemon::start("redis-away", 1, &args.iter().map(String::as_str).collect::<Vec<_>>());
    let c = srtp_call(&d, "away", LO, true);
    let stop = Arc::new(AtomicBool::new(false));
    let threads = [stream(c.a, Arc::default(), stop.clone()), stream(c.b, Arc::default(), stop.clone())];
    std::thread::sleep(Duration::from_secs(2));
    let _ = redis.child.kill();
    let _ = redis.child.wait();
    let away = Instant::now();
    std::thread::sleep(Duration::from_secs(3));
    let q = d.query("away");
    let held = srtpgate_testkit::daemon::drops(&q, &c.from_tag, "not_reserved")
        + srtpgate_testkit::daemon::drops(&q, &c.to_tag, "not_reserved");
    assert!(held > 0, "nothing held back while Redis was away: {}", srtpgate_testkit::daemon::show(&q));
    let errors = srtpgate_testkit::daemon::metric(&d.metrics(), "redis_errors_total").unwrap_or(0.0);
    assert!(errors > 0.0, "no Redis error counted");
    // Redis back on its port (empty: it kept nothing on disk).
    redis.child = Redis::spawn(redis.port).expect("redis-server again");
    assert!(redis.ready(), "redis-server did not come back");
    let back = Instant::now();
    std::thread::sleep(Duration::from_secs(4));
    stop.store(true, Ordering::SeqCst);
    let ends = threads.map(|t| t.join().expect("endpoint"));
    for (i, (_, got)) in ends.iter().enumerate() {
        // RTP only: SRTCP's reservation (16 reports) lasts longer.
        let rtp = |w: &Vec<u8>| w.len() > 1 && !(200..=204).contains(&w[1]);
        let during = got.iter().filter(|(at, w)| rtp(w) && *at > away + Duration::from_secs(2) && *at < back).count();
        let after = got.iter().filter(|(at, w)| rtp(w) && *at > back + Duration::from_secs(3)).count();
        println!(
            "side {i}: {during} packets in the last second of Redis away, {after} in the last second after it \
             came back; {held} held back in all, {errors} Redis errors"
        );
        assert_eq!(during, 0, "side {i}: media went on past the reservation while Redis was away");
        assert!(after >= 40, "side {i}: media did not come back with Redis ({after} packets in a second)");
    }
}

/// The relay (since its start) refused no packet of the calls `ids` as
/// failing authentication: a receiving stream resumed a rollover behind
/// its sender would refuse every one. (Packets the relay received but may
/// not send on under an index it reserved before the failover are
/// `replayed`: they are not refused by authentication.)
fn none_failed_authentication(d: &Daemon, ids: &[&str]) {
    for id in ids {
        let q = d.query(id);
        for tag in [format!("{id}-a"), format!("{id}-b")] {
            let failed = srtpgate_testkit::daemon::drops(&q, &tag, "auth_failed");
            assert_eq!(
                failed,
                0,
                "{tag}: packets failed authentication: {}",
                srtpgate_testkit::daemon::show(srtpgate_testkit::daemon::stream_stats(&q, &tag))
            );
        }
    }
}

/// Calls whose streams wrapped a second and 20 ms before the relay was
/// killed resume, after a restart and when a second process takes over.
/// The receive side's index is written when its rollover counter changes
/// (the first call); the second call's receiving streams are taken out of
/// Redis before the relay starts again, as if the crash had come before
/// their first write: they resume at rollover 0, a rollover behind their
/// senders, and take the next one on their first packet.
#[test]
fn calls_that_wrapped_just_before_a_crash_resume() {
    let Some(redis) = Redis::for_test() else { return };
    let (ns, args) = redis.relay_args("wrap");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut d = Daemon::start("wrap", 2, &args);
    let stop = Arc::new(AtomicBool::new(false));
    let before = [Duration::from_secs(1), Duration::from_millis(20)];
    let mut ids = Vec::new();
    let mut threads = Vec::new();
    let mut failovers = Vec::new();
    // Two calls whose streams (both ways) wrap `before` a crash 3 s from
    // now; then the restart, two more calls, and another process takes
    // over 3 s later (the first calls go on through it).
    for round in 0..2 {
        let crash = Instant::now() + Duration::from_secs(3);
        for (k, b) in before.iter().enumerate() {
            let id = format!("wrap-{round}-{k}");
            let c = srtp_call(&d, &id, LO, true);
            threads.push(stream_wrapping(c.a, Arc::default(), stop.clone(), Some(crash - *b)));
            threads.push(stream_wrapping(c.b, Arc::default(), stop.clone(), Some(crash - *b)));
            ids.push(id);
        }
        std::thread::sleep(crash.saturating_duration_since(Instant::now()));
        d.stop_with(libc::SIGKILL);
        failovers.push(Instant::now());
        let unkept = &ids[ids.len() - 1];
        let idx = format!("{ns}:idx:{unkept}");
        let fields = redis.command(&["HKEYS", &idx]).expect("HKEYS");
        let fields = String::from_utf8_lossy(&fields);
        let rx: Vec<&str> = fields.lines().filter(|f| f.contains(".r.") && !f.ends_with(".uses")).collect();
        assert_eq!(rx.len(), 2, "{unkept}: receiving streams kept: {fields}");
        for f in rx {
            redis.command(&["HDEL", &idx, f]).expect("HDEL");
        }
        if round == 0 {
            d.start_again();
        } else {
            d = Daemon::start("wrap-takeover", 2, &args);
        }
        std::thread::sleep(Duration::from_secs(3));
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        none_failed_authentication(&d, &ids);
    }
    stop.store(true, Ordering::SeqCst);
    let ends: Vec<(Endpoint, Got)> = threads.into_iter().map(|t| t.join().expect("endpoint")).collect();
    for (i, (mut e, got)) in ends.into_iter().enumerate() {
        let what = format!("{} {}", ids[i / 2], ["caller", "callee"][i % 2]);
        // Everything received opens under one receiving context, none twice.
        let (rtp, _, _) = check_received(&what, false, &mut e, &got, failovers[0]);
        // The failovers each call went through.
        let through = if i < 4 { &failovers[..] } else { &failovers[1..] };
        for (k, &at) in through.iter().enumerate() {
            let after = |from: Duration, to: Duration| got.iter().filter(move |w| w.0 > at + from && w.0 < at + to);
            let first = after(Duration::from_millis(5), Duration::MAX / 4).next().map(|w| w.0.duration_since(at));
            let first = first.unwrap_or_else(|| panic!("{what}: nothing after failover {k}"));
            let second = after(Duration::from_secs(1), Duration::from_secs(2)).count();
            println!("{what}: failover {k}: first packet {first:?} after it, {second} in its second second; {rtp} RTP in all");
            assert!(first < Duration::from_secs(1), "{what}: media came back {first:?} after failover {k}");
            assert!(second >= 40, "{what}: {second} packets in the second second after failover {k}");
        }
        // The stream it received did cross the wrap.
        let ssrc = peer_ssrc(&got);
        let roc = e.rx_roc(ssrc).unwrap_or(0);
        assert_eq!(roc, 1, "{what}: the stream received has rollover counter {roc}");
    }
}

/// One relay at a time owns a namespace: a standby of another instance
/// name waits while the relay renews its lease, takes the calls over once
/// the relay is killed and its lease runs out, and a relay whose lease is
/// taken from it is fenced: its media stops at the end of what it reserved,
/// it writes nothing more, and it takes no new calls.
#[test]
fn a_standby_takes_over_only_when_the_lease_ends_and_a_relay_that_lost_it_is_fenced() {
    let Some(redis) = Redis::for_test() else { return };
    let (ns, args) = redis.relay_args("lease");
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--redis-lease-ms", "1000", "--redis-instance", "a"]);
    let mut d = Daemon::start("lease", 3, &args);
    let c = srtp_call(&d, "leased", LO, true);
    let stop = Arc::new(AtomicBool::new(false));
    let threads = [stream(c.a, Arc::default(), stop.clone()), stream(c.b, Arc::default(), stop.clone())];

    // The standby waits: three lease times pass, and it binds nothing (the
    // NG address is the relay's too: its log says whether it bound it).
    let mut standby = d.standby(&["--redis-instance", "b"]);
    std::thread::sleep(Duration::from_secs(3));
    let log = std::fs::read_to_string(&standby.log).unwrap_or_default();
    assert!(log.contains(&format!("namespace {ns} is held by a ")), "standby log:\n{log}");
    assert!(!log.contains("NG on udp"), "the standby started while the relay held its lease:\n{log}");
    assert_eq!(d.metric("redis_lease_held"), Some(1.0));

    // The relay dies; the standby takes over once the lease runs out.
    d.stop_with(libc::SIGKILL);
    let killed = Instant::now();
    let deadline = killed + Duration::from_secs(10);
    while !std::fs::read_to_string(&standby.log).unwrap_or_default().contains("NG on udp") {
        assert!(Instant::now() < deadline, "the standby did not take over: {}", standby.log_tail());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(standby.is_ready(Duration::from_secs(5)), "the standby does not answer: {}", standby.log_tail());
    println!("the standby answered {:?} after the relay was killed (lease 1 s)", killed.elapsed());
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(standby.metric("calls_resumed_total"), Some(1.0), "{}", standby.log_tail());

    // Another relay takes the lease from the standby (as an operator's
    // mistake, or a partition, would): the standby is fenced.
    redis.command(&["SET", &format!("{ns}:lease"), "c 1000000"]).expect("SET");
    let fenced = Instant::now();
    let deadline = fenced + Duration::from_secs(5);
    while standby.metric("redis_lease_held") != Some(0.0) {
        assert!(Instant::now() < deadline, "the standby did not notice it lost its lease");
        std::thread::sleep(Duration::from_millis(50));
    }
    println!("the standby saw it was fenced {:?} after the lease was taken", fenced.elapsed());
    std::thread::sleep(Duration::from_secs(3));
    stop.store(true, Ordering::SeqCst);
    let ends = threads.map(|t| t.join().expect("endpoint"));
    for (i, (_, got)) in ends.iter().enumerate() {
        let what = ["caller", "callee"][i];
        // RTP only: 16 SRTCP indices are reserved ahead, 8 s of reports.
        let rtp = |w: &&(Instant, Vec<u8>)| w.1.len() > 1 && !(200..=204).contains(&w.1[1]);
        let between = |from: Instant, to: Instant| got.iter().filter(rtp).filter(|w| w.0 > from && w.0 < to).count();
        // From half a second after the takeover (about 1.5 s after the
        // kill) to the fencing (2 s after the takeover): 75 packets sent.
        let taken_over = between(killed + Duration::from_millis(1600), fenced);
        assert!(taken_over >= 60, "{what}: {taken_over} packets between the takeover and the fencing");
        // The reservations run out within 0.75 s of the fencing; no RTP
        // comes after that.
        let late = between(fenced + Duration::from_millis(1500), fenced + Duration::from_secs(3));
        let last = got.iter().filter(rtp).map(|w| w.0).max().map(|t| t.saturating_duration_since(fenced));
        println!("{what}: {taken_over} packets between the takeover and the fencing, {late} from 1.5 s after the fencing; the last {last:?} after it");
        if late > 0 {
            println!(
                "{}",
                standby
                    .metrics()
                    .lines()
                    .filter(|l| l.contains("drop") || l.contains("redis"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
        assert_eq!(late, 0, "{what}: the fenced relay went on sending");
    }
    let sdp =
        SdpSpec { ip: LO, origin: LO, port: 40000, rtcp: None, proto: "RTP/AVP", crypto: &[], mux: true, ice: false };
    let refused = standby.request(&offer("after-fencing", "x", &sdp.text()));
    assert_eq!(srtpgate_testkit::daemon::result(&refused), "error", "{refused:?}");
    let log = std::fs::read_to_string(&standby.log).unwrap_or_default();
    assert!(log.contains("this relay is fenced"), "standby log:\n{log}");
}

/// The SSRC of the RTP that `e` received (its peer's).
fn peer_ssrc(got: &Got) -> u32 {
    // The SSRC is in the clear in SRTP.
    let wire = &got.iter().rev().find(|(_, w)| w.len() > 12 && !(200..=204).contains(&w[1])).expect("RTP received").1;
    u32::from_be_bytes(wire[8..12].try_into().expect("4"))
}
