//! Call quality through `srtpgate serve`: phones that send SRTP and SRTCP
//! sender reports with reception report blocks (RFC 3550: loss, jitter,
//! LSR/DLSR) under a seeded impairment profile, and what `query`,
//! `delete`, `statistics`, /metrics and Homer make of it.
//!
//! Decided before the first run:
//! - seed 37; three calls at once for 7 s, G.711 every 20 ms both ways;
//!   reports every 1.2 s from each phone (the caller's first at 0.3 s, the
//!   callee's at 0.9 s);
//! - each phone plays a 10 ms network leg: it reports a DLSR 10 ms short,
//!   so the relay's leg round trip is 10 ms plus loopback, and both legs
//!   add to 20 ms;
//! - clean call: no impairment; impaired call: the caller's RTP loses 5 %
//!   and each packet leaves up to 90 ms late (uniform: an RFC 3550 jitter
//!   of about 30 ms); relay-only call: the caller's RTP loses 5 %, and
//!   neither phone sends RTCP;
//! - tolerances: leg round trip 10–16 ms and both legs 20–32 ms; clean
//!   MOS ≥ 4.0, loss 0, jitter ≤ 5 ms; impaired: loss 2–9 %, jitter 18–42
//!   ms (as reported and as the relay measured), MOS ≥ 0.3 below the clean
//!   call's; relay-only: loss 1–10 %, source `relay`.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use srtp::Suite;
use srtpgate_ng::Value;
use srtpgate_quality::hep;
use srtpgate_testkit::daemon::{context, drops, key, result, show, srtp_call, Call, Daemon, Endpoint, LO};
use srtpgate_testkit::packets::Rtp;
use std::collections::VecDeque;
use std::net::UdpSocket;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SEED: u64 = 37;
const RUN: Duration = Duration::from_secs(7);
const REPORT_EVERY: Duration = Duration::from_millis(1200);
/// The network leg each phone plays (taken off its DLSR).
const LEG: Duration = Duration::from_millis(10);

/// What a phone does to the RTP it sends.
#[derive(Clone, Copy)]
struct Impairment {
    loss: f64,
    late_max_ms: u64,
}

const CLEAN: Impairment = Impairment { loss: 0.0, late_max_ms: 0 };

/// One phone: its schedule and what it received, as RFC 3550's receiver
/// keeps it.
struct Phone {
    ssrc: u32,
    /// RTP to send: when, sequence number, timestamp.
    sends: VecDeque<(Instant, u16, u32)>,
    sent: u32,
    dropped: u32,
    next_report: Option<Instant>,
    reports: u32,
    t0: Instant,
    // Receiver state.
    peer: Option<u32>,
    base: u32,
    max: u32,
    received: u32,
    expected_prior: u32,
    received_prior: u32,
    transit: Option<f64>,
    jitter: f64,
    last_sr: Option<(u32, Instant)>,
    /// The cumulative loss of its last report.
    reported_lost: u32,
}

impl Phone {
    fn new(ep: &mut Endpoint, t0: Instant, first_report: Option<Duration>, imp: Impairment, rng: &mut StdRng) -> Phone {
        ep.rtp.set_nonblocking(true).unwrap();
        ep.rtcp.set_nonblocking(true).unwrap();
        let mut sends = Vec::new();
        let mut dropped = 0;
        for k in 0..(RUN.as_millis() / 20) as u32 {
            let at = t0 + Duration::from_millis(20 * k as u64);
            let seq = 1000 + k as u16;
            if rng.random_bool(imp.loss) {
                dropped += 1;
                continue;
            }
            let late = if imp.late_max_ms > 0 { rng.random_range(0..=imp.late_max_ms * 1000) } else { 0 };
            sends.push((at + Duration::from_micros(late), seq, 160 * k));
        }
        sends.sort_by_key(|s| s.0);
        Phone {
            ssrc: ep.ssrc,
            sends: sends.into(),
            sent: 0,
            dropped,
            next_report: first_report.map(|d| t0 + d),
            reports: 0,
            t0,
            peer: None,
            base: 0,
            max: 0,
            received: 0,
            expected_prior: 0,
            received_prior: 0,
            transit: None,
            jitter: 0.0,
            last_sr: None,
            reported_lost: 0,
        }
    }

    /// Sends what is due, reads what arrived.
    fn tick(&mut self, ep: &mut Endpoint, now: Instant) {
        while self.sends.front().is_some_and(|s| s.0 <= now) {
            let (_, seq, ts) = self.sends.pop_front().unwrap();
            ep.send_plain(&Rtp::new(self.ssrc, seq).ts(ts).packet(&[0xff; 160]));
            self.sent += 1;
        }
        if self.next_report.is_some_and(|t| t <= now) {
            let plain = self.report(now);
            ep.send_rtcp_plain(&plain);
            self.reports += 1;
            self.next_report = Some(now + REPORT_EVERY);
        }
        let mut buf = [0u8; 1500];
        for s in [ep.rtp.try_clone().unwrap(), ep.rtcp.try_clone().unwrap()] {
            while let Ok((n, _)) = s.recv_from(&mut buf) {
                let wire = &buf[..n];
                if (192..=223).contains(&wire[1]) {
                    if let Ok(p) = ep.open_rtcp(wire) {
                        if p[1] == 200 && p.len() >= 28 {
                            let w = |i: usize| u32::from_be_bytes([p[i], p[i + 1], p[i + 2], p[i + 3]]);
                            self.last_sr = Some((w(8) << 16 | w(12) >> 16, Instant::now()));
                        }
                    }
                } else if let Ok(p) = ep.open_rtp(wire) {
                    self.note_rtp(&p, Instant::now());
                }
            }
        }
    }

    /// RFC 3550 A.1 (no wrap in this test) and A.8.
    fn note_rtp(&mut self, p: &[u8], at: Instant) {
        let seq = u16::from_be_bytes([p[2], p[3]]) as u32;
        let ts = u32::from_be_bytes([p[4], p[5], p[6], p[7]]) as f64;
        self.peer = Some(u32::from_be_bytes([p[8], p[9], p[10], p[11]]));
        if self.received == 0 {
            self.base = seq;
            self.max = seq;
        }
        self.max = self.max.max(seq);
        self.received += 1;
        let arrival = at.duration_since(self.t0).as_secs_f64() * 8000.0;
        let transit = arrival - ts;
        if let Some(last) = self.transit {
            self.jitter += ((transit - last).abs() - self.jitter) / 16.0;
        }
        self.transit = Some(transit);
    }

    /// An SR with a block about what it received, then an SDES CNAME.
    fn report(&mut self, now: Instant) -> Vec<u8> {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let ntp_sec = (wall.as_secs() + 2_208_988_800) as u32;
        let ntp_frac = ((wall.subsec_nanos() as u64) << 32) / 1_000_000_000;
        let rtp_ts = (now.duration_since(self.t0).as_secs_f64() * 8000.0) as u32;
        let blocks = u8::from(self.peer.is_some());
        let mut p = vec![0x80 | blocks, 200, 0, 6 + 6 * blocks];
        for w in [self.ssrc, ntp_sec, ntp_frac as u32, rtp_ts, self.sent, self.sent * 160] {
            p.extend(w.to_be_bytes());
        }
        if let Some(peer) = self.peer {
            let expected = self.max - self.base + 1;
            let lost = expected.saturating_sub(self.received);
            let exp_int = expected - self.expected_prior;
            let rec_int = self.received - self.received_prior;
            self.expected_prior = expected;
            self.received_prior = self.received;
            let lost_int = exp_int.saturating_sub(rec_int);
            let fraction = (lost_int << 8).checked_div(exp_int).unwrap_or(0);
            let (lsr, dlsr) = match self.last_sr {
                Some((middle, at)) => {
                    let held = now.duration_since(at).saturating_sub(LEG);
                    (middle, ((held.as_secs_f64() * 65_536.0) as u32).max(1))
                }
                None => (0, 0),
            };
            self.reported_lost = lost;
            p.extend(peer.to_be_bytes());
            p.push(fraction.min(255) as u8);
            p.extend(&lost.to_be_bytes()[1..]);
            for w in [self.max, self.jitter as u32, lsr, dlsr] {
                p.extend(w.to_be_bytes());
            }
        }
        p.extend([0x81, 202, 0, 3]);
        p.extend(self.ssrc.to_be_bytes());
        // CNAME "phone", the chunk's end, padding to 32 bits.
        p.extend([1, 5]);
        p.extend(b"phone");
        p.push(0);
        p
    }
}

fn entry(q: &Value, ssrc: u32) -> &Value {
    q.get("SSRC").and_then(|s| s.get(&ssrc.to_string())).unwrap_or_else(|| panic!("no SSRC {ssrc}: {}", show(q)))
}

fn int(v: &Value, path: &[&str]) -> i64 {
    let mut v = v;
    for k in path {
        v = v.get(k).unwrap_or_else(|| panic!("no {k} in {}", show(v)));
    }
    v.as_int().unwrap_or_else(|| panic!("{path:?} is not an integer: {}", show(v)))
}

#[test]
fn loss_jitter_round_trips_and_mos_from_rtcp_and_the_relay_view() {
    let homer = UdpSocket::bind((LO, 0)).unwrap();
    let homer_addr = homer.local_addr().unwrap().to_string();
    let d = Daemon::start("quality", 0, &["--homer", &homer_addr]);
    let mut calls: Vec<Call> =
        ["clean", "impaired", "relay-only"].iter().map(|id| srtp_call(&d, id, LO, false)).collect();
    let mut rng = StdRng::seed_from_u64(SEED);
    let t0 = Instant::now() + Duration::from_millis(50);
    let impaired = Impairment { loss: 0.05, late_max_ms: 90 };
    let plan = [
        (CLEAN, Some(300), Some(900)),
        (impaired, Some(300), Some(900)),
        (Impairment { loss: 0.05, late_max_ms: 0 }, None, None),
    ];
    let mut phones: Vec<[Phone; 2]> = calls
        .iter_mut()
        .zip(plan)
        .map(|(c, (imp, ra, rb))| {
            let ms = |m: Option<u64>| m.map(Duration::from_millis);
            [Phone::new(&mut c.a, t0, ms(ra), imp, &mut rng), Phone::new(&mut c.b, t0, ms(rb), CLEAN, &mut rng)]
        })
        .collect();
    while Instant::now() < t0 + RUN {
        let now = Instant::now();
        for (c, [a, b]) in calls.iter_mut().zip(phones.iter_mut()) {
            a.tick(&mut c.a, now);
            b.tick(&mut c.b, now);
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    std::thread::sleep(Duration::from_millis(300));

    // Clean: both directions.
    let q = d.query(&calls[0].id);
    assert_eq!(result(&q), "ok", "{}", show(&q));
    let mut clean_mos = 0;
    for p in &phones[0] {
        let e = entry(&q, p.ssrc);
        assert_eq!(e.get("source").and_then(Value::as_str), Some("RTCP"));
        let mos = int(e, &["average MOS", "MOS"]);
        assert!(mos >= 40, "clean MOS {mos}: {}", show(e));
        assert_eq!(int(e, &["average MOS", "packet loss"]), 0);
        assert!(int(e, &["average MOS", "jitter"]) <= 5, "{}", show(e));
        let leg = int(e, &["average MOS", "round-trip time leg"]);
        let rtt = int(e, &["average MOS", "round-trip time"]);
        assert!((10_000..=16_000).contains(&leg), "leg round trip {leg} µs");
        assert!((20_000..=32_000).contains(&rtt), "round trip {rtt} µs");
        assert!(int(e, &["average MOS", "samples"]) >= 3, "{}", show(e));
        assert!(int(e, &["lowest MOS", "reported at"]) > 1_700_000_000);
        let prog = e.get("MOS progression").and_then(|p| p.get("entries")).and_then(Value::as_list).unwrap();
        assert!(!prog.is_empty());
        clean_mos = clean_mos.max(mos);
    }
    // Each tag's RTP stream names the SSRC its endpoint sends (how
    // Kamailio finds the entry), then its RTCP stream.
    let tag = q.get("tags").and_then(|t| t.get(&calls[0].from_tag)).unwrap();
    let streams =
        tag.get("medias").and_then(Value::as_list).unwrap()[0].get("streams").and_then(Value::as_list).unwrap();
    assert_eq!(streams.len(), 2);
    assert_eq!(int(&streams[0], &["SSRC"]), phones[0][0].ssrc as i64);
    assert_eq!(show(streams[1].get("flags").unwrap()), show(&Value::from(vec![Value::from("RTCP")])));
    assert!(int(&streams[1], &["stats", "packets"]) >= 5);
    assert!(int(&q, &["last signal"]) > 1_700_000_000, "last signal is UNIX time");

    // SRTCP that fails authentication is dropped and feeds nothing: an RR
    // claiming everything lost, under another key, a second after the
    // caller's last report.
    std::thread::sleep(Duration::from_millis(1100));
    let before = show(entry(&d.query(&calls[0].id), phones[0][0].ssrc));
    let mut forged = vec![0x81, 201, 0, 7];
    forged.extend(phones[0][0].ssrc.to_be_bytes());
    forged.extend(phones[0][1].ssrc.to_be_bytes());
    forged.extend([255, 0, 1, 0, 0, 0, 4, 0, 0, 0, 0x1f, 0x40, 0, 0, 0, 0, 0, 0, 0, 0]);
    let mut wire = vec![0u8; forged.len() + srtp::MAX_RTCP_TRAILER_LEN];
    // Its SRTCP index past the caller's, so that it reaches the tag check
    // (an older index is refused before it, as a replay).
    let mut other = context(&key(99, Suite::AES_CM_128_HMAC_SHA1_80));
    let mut n = 0;
    for _ in 0..100 {
        n = other.protect_rtcp(&forged, &mut wire).unwrap();
    }
    let c0 = &calls[0];
    c0.a.rtcp.send_to(&wire[..n], c0.a.relay_rtcp).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let q = d.query(&calls[0].id);
    assert!(drops(&q, &calls[0].from_tag, "auth_failed") >= 1, "{}", show(&q));
    assert_eq!(show(entry(&q, phones[0][0].ssrc)), before, "the forged report changed nothing");

    // Impaired: what the callee received of the caller.
    let q = d.query(&calls[1].id);
    let [a, b] = &phones[1];
    let e = entry(&q, b.ssrc);
    let loss = int(e, &["average MOS", "packet loss"]);
    let jitter = int(e, &["average MOS", "jitter"]);
    let mos = int(e, &["average MOS", "MOS"]);
    let drop_rate = a.dropped as f64 / (a.dropped + a.sent) as f64 * 100.0;
    assert!((2..=9).contains(&loss), "loss {loss} % (the caller dropped {drop_rate:.1} %): {}", show(e));
    assert!((18..=42).contains(&jitter), "jitter {jitter} ms: {}", show(e));
    assert!(mos <= clean_mos - 3, "impaired MOS {mos} against clean {clean_mos}");
    assert_eq!(int(e, &["cumulative loss"]), b.reported_lost as i64);
    // Packets still on their way (up to 90 ms late) count as lost in a
    // report, and the last 1.2 s come after the last one.
    assert!(b.reported_lost.abs_diff(a.dropped) <= 8, "{} against {}", b.reported_lost, a.dropped);
    // The relay measured the same jitter on the caller's leg.
    let st = srtpgate_testkit::daemon::stream_stats(&q, &calls[1].from_tag);
    let relay_jitter_ms = st.get("jitter us").and_then(Value::as_int).unwrap() / 1000;
    assert!((18..=42).contains(&relay_jitter_ms), "relay jitter {relay_jitter_ms} ms");
    // The other direction is clean.
    assert!(int(entry(&q, a.ssrc), &["average MOS", "MOS"]) >= 40);

    // Relay-only: no reports, the relay's own view of the caller's stream
    // stands for what the callee received.
    let q = d.query(&calls[2].id);
    let e = entry(&q, phones[2][1].ssrc);
    assert_eq!(e.get("source").and_then(Value::as_str), Some("relay"), "{}", show(e));
    let loss = int(e, &["average MOS", "packet loss"]);
    assert!((1..=10).contains(&loss), "relay-view loss {loss}: {}", show(e));
    assert!(int(e, &["average MOS", "MOS"]) > 0);
    assert_eq!(int(e, &["average MOS", "round-trip time"]), 0);

    // Homer got every report the phones sent, filed under its call.
    let sent: u32 = phones.iter().flatten().map(|p| p.reports).sum();
    homer.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    let mut buf = [0u8; 4096];
    let mut got = 0;
    while let Ok(n) = homer.recv(&mut buf) {
        let chunks = hep::decode(&buf[..n]).expect("a well-formed HEP3 packet");
        let get = |t: u16| chunks.iter().find(|c| c.0 == t).map(|c| c.1).unwrap_or_else(|| panic!("no chunk {t}"));
        assert_eq!(get(0x0b), [hep::PROTO_RTCP_JSON]);
        assert_eq!(get(0x0c), 2001u32.to_be_bytes());
        let call_id = std::str::from_utf8(get(0x11)).unwrap();
        assert!(calls[..2].iter().any(|c| c.id == call_id), "{call_id}");
        let json: serde_json::Value = serde_json::from_slice(get(0x0f)).expect("rtpengine's RTCP JSON");
        assert_eq!(json["type"], 200);
        assert!(phones.iter().flatten().any(|p| json["ssrc"] == p.ssrc), "{json}");
        assert_eq!(json["sdes_information"][0]["text"], "phone");
        got += 1;
    }
    assert_eq!(got, sent, "HEP packets against reports sent");

    // statistics and /metrics; a deleted call's averages in the histograms.
    let s = d.request(&Value::dict().with("command", "statistics"));
    assert!(int(&s, &["statistics", "mos", "mos_samples_total"]) >= 10, "{}", show(&s));
    for c in &calls {
        assert_eq!(result(&d.delete(&c.id)), "ok");
    }
    let m = d.metrics();
    let count = srtpgate_testkit::daemon::metric(&m, "stream_mos_count").unwrap_or(0.0);
    assert!(count >= 6.0, "finished streams with a MOS: {count}\n{m}");
    assert!(
        srtpgate_testkit::daemon::metric(&m, "homer_packets_total{outcome=\"sent\"}").unwrap_or(0.0) >= sent as f64
    );
}

#[test]
fn call_quality_off_reads_nothing() {
    let d = Daemon::start("quality-off", 1, &["--call-quality", "off"]);
    let mut c = srtp_call(&d, "off-1", LO, false);
    for _ in 0..20 {
        c.a.send_rtp("a");
        c.b.send_rtp("b");
        c.a.send_rtcp();
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let q = d.query(&c.id);
    assert_eq!(show(q.get("SSRC").unwrap()), show(&Value::dict()), "{}", show(&q));
    assert!(!d.metrics().contains("srtpgate_mos_samples_total"));
}
