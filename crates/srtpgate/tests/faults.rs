//! Network faults between the endpoints and the relay: loss (1 % and 10 %),
//! reordering by delay jitter, duplication, corruption, all of them at once,
//! a 30-second outage and a burst of 30 000 lost packets, each across the
//! sequence-number wrap, on SRTP↔SRTP calls through `srtpgate serve`.
//!
//! Each leg's packets cross an impairing link, in both directions: a thread
//! pair that drops, duplicates, corrupts (one bit anywhere in the datagram)
//! and delays what crosses it, as `tc netem` would. It is done in user space
//! because the kernel of the machines this runs on has no `sch_netem`
//! (`CONFIG_NET_SCH_NETEM` is not set): the test says so when that is the
//! case, and runs the same faults all the same. Doing it here has one gain:
//! the link knows exactly what it did, so the checks are exact:
//!
//! - the relay received exactly what the link delivered to it;
//! - it relayed everything that arrived whole, once, and dropped and counted
//!   each duplicate (`replayed`) and each corrupted packet (`auth_failed`;
//!   `malformed` when the bit hit the header's version; `replayed` when it
//!   hit the sequence number and made an index already seen);
//! - what it sent, captured before the far link's faults, unprotects in
//!   order under the key it gave that leg with no index used twice (no
//!   keystream reuse) and carries the sender's packets unchanged, including
//!   after the outage and the burst (its rollover counter estimate held);
//! - each endpoint received exactly what was sent minus what the two links
//!   dropped or corrupted, every packet intact.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use srtp::{Context, CpuEngine, Error, Suite};
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_testkit::daemon::{
    answer, cryptos, key, offer, reply_sdp, rtcp_sr, rtp, show, stream_stats, Daemon, SdpSpec, LO,
};
use std::collections::{BinaryHeap, HashMap};
use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Packets a second each way (20 ms packets).
const RATE: u64 = 50;
/// Seconds each call sends for.
const SECONDS: u64 = 40;
/// The outage: from 5 s to 35 s of the run.
const OUTAGE: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(35));
/// The burst: packet numbers lost at once (under 2^15, the most that the
/// RFC 3711 index estimate can bridge).
const BURST: (u64, u64) = (100, 30_100);
/// Every how many RTP packets an SRTCP report goes.
const RTCP_EVERY: u64 = 50;

/// What a link does to the datagrams that cross it.
#[derive(Clone, Copy, Default, Debug)]
struct Faults {
    /// Probability that a datagram is lost.
    loss: f64,
    /// Probability that it arrives twice.
    dup: f64,
    /// Probability that one of its bits is flipped.
    corrupt: f64,
    /// Each datagram is delayed by a uniform 0..jitter (which reorders).
    jitter: Duration,
    /// Nothing crosses between these two times since the start.
    outage: Option<(Duration, Duration)>,
}

/// What a link did, in one direction.
#[derive(Default)]
struct Tally {
    /// Datagrams delivered (copies and corrupted ones included).
    delivered: AtomicU64,
    /// Of those, corrupted.
    corrupted: AtomicU64,
    /// Of those, second copies.
    duplicates: AtomicU64,
    /// Datagrams lost (outage included).
    lost: AtomicU64,
}

impl Tally {
    fn get(&self) -> (u64, u64, u64, u64) {
        let l = |a: &AtomicU64| a.load(Ordering::SeqCst);
        (l(&self.delivered), l(&self.corrupted), l(&self.duplicates), l(&self.lost))
    }
}

/// A datagram waiting in a link.
struct Due {
    at: Instant,
    n: u64,
    bytes: Vec<u8>,
}

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.n) == (o.at, o.n)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.at, o.n).cmp(&(self.at, self.n))
    }
}

/// One direction of a link: reads `from`, applies the faults, writes to
/// `to` by `out`. `capture` keeps every datagram as read (before the faults).
#[allow(clippy::too_many_arguments)]
fn direction(
    from: UdpSocket,
    out: UdpSocket,
    to: SocketAddr,
    faults: Faults,
    seed: u64,
    start: Instant,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
    capture: Option<Arc<Mutex<Vec<Vec<u8>>>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut queue: BinaryHeap<Due> = BinaryHeap::new();
        let mut n = 0u64;
        let mut buf = vec![0u8; 2048];
        while !stop.load(Ordering::SeqCst) || !queue.is_empty() {
            let now = Instant::now();
            while queue.peek().is_some_and(|d| d.at <= now) {
                let d = queue.pop().expect("peeked");
                out.send_to(&d.bytes, to).expect("link send");
                tally.delivered.fetch_add(1, Ordering::SeqCst);
            }
            let wait = queue.peek().map_or(Duration::from_millis(5), |d| d.at.saturating_duration_since(now));
            from.set_read_timeout(Some(wait.clamp(Duration::from_micros(200), Duration::from_millis(5))))
                .expect("timeout");
            let len = match from.recv_from(&mut buf) {
                Ok((len, _)) => len,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
                Err(e) => panic!("link recv: {e}"),
            };
            let mut bytes = buf[..len].to_vec();
            if let Some(c) = &capture {
                c.lock().expect("capture").push(bytes.clone());
            }
            let since = now.duration_since(start);
            let out_now = faults.outage.is_some_and(|(a, b)| since >= a && since < b);
            // One fate per datagram, so that the counts stay exact.
            let r: f64 = rng.random();
            if out_now || r < faults.loss {
                tally.lost.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            let mut copies = 1;
            if r < faults.loss + faults.corrupt {
                let bit = rng.random_range(0..bytes.len() * 8);
                bytes[bit / 8] ^= 1 << (bit % 8);
                tally.corrupted.fetch_add(1, Ordering::SeqCst);
            } else if r < faults.loss + faults.corrupt + faults.dup {
                copies = 2;
                tally.duplicates.fetch_add(1, Ordering::SeqCst);
            }
            for _ in 0..copies {
                let delay = if faults.jitter.is_zero() {
                    Duration::ZERO
                } else {
                    rng.random_range(Duration::ZERO..faults.jitter)
                };
                n += 1;
                queue.push(Due { at: now + delay, n, bytes: bytes.clone() });
            }
        }
    })
}

/// A link between one endpoint and the relay: the endpoint sends to
/// `near_addr`, the relay to `far_addr` (the address in the endpoint's SDP).
struct Link {
    near: UdpSocket,
    far: UdpSocket,
    /// Endpoint → relay.
    up: Arc<Tally>,
    /// Relay → endpoint.
    down: Arc<Tally>,
    /// What the relay sent towards the endpoint, before the faults.
    from_relay: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Link {
    fn new() -> Link {
        Link {
            near: UdpSocket::bind((LO, 0)).expect("bind link"),
            far: UdpSocket::bind((LO, 0)).expect("bind link"),
            up: Arc::default(),
            down: Arc::default(),
            from_relay: Arc::default(),
        }
    }

    fn near_addr(&self) -> SocketAddr {
        self.near.local_addr().expect("addr")
    }

    fn far_port(&self) -> u16 {
        self.far.local_addr().expect("addr").port()
    }

    /// Starts both directions between `endpoint` and `relay`.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        endpoint: SocketAddr,
        relay: SocketAddr,
        faults: Faults,
        seed: u64,
        start: Instant,
        stop: [&Arc<AtomicBool>; 2],
    ) -> [JoinHandle<()>; 2] {
        let c = |s: &UdpSocket| s.try_clone().expect("clone");
        [
            direction(c(&self.near), c(&self.far), relay, faults, seed, start, stop[0].clone(), self.up.clone(), None),
            direction(
                c(&self.far),
                c(&self.near),
                endpoint,
                faults,
                seed ^ 0x5555,
                start,
                stop[1].clone(),
                self.down.clone(),
                Some(self.from_relay.clone()),
            ),
        ]
    }
}

/// What an endpoint sent and received.
#[derive(Default)]
struct Ends {
    /// Plain packets sent by packet number (RTP) — all of them, also those
    /// "lost in the network" before the link (the burst).
    sent: HashMap<u64, Vec<u8>>,
    /// Plain SRTCP reports sent by number.
    sent_rtcp: HashMap<u64, Vec<u8>>,
    /// Datagrams put on the link.
    put: u64,
    /// Packets received that unprotected, by packet number (RTP) or
    /// report number (RTCP, as `u64::MAX - n`), with their plain bytes.
    got: Vec<(u64, Vec<u8>)>,
    /// Received datagrams that failed: replayed, and any other error.
    replayed: u64,
    failed: u64,
}

/// The packet number a plain RTP packet of this test carries.
fn number(plain: &[u8]) -> u64 {
    u64::from_be_bytes(plain[12..20].try_into().expect("8 bytes"))
}

/// The send time of packet `n`, in packet periods since the start: the
/// burst's packets all go at once (they are lost before the link), and the
/// ones after it go on at the rate from there.
fn slot(n: u64, burst: bool) -> u64 {
    match burst {
        true if n >= BURST.1 => n - (BURST.1 - BURST.0),
        true if n >= BURST.0 => BURST.0,
        _ => n,
    }
}

/// An endpoint: sends RATE packets a second for SECONDS through `to`
/// (starting its sequence numbers `before_wrap` short of the wrap) and
/// receives on `sock` until `stop`.
#[allow(clippy::too_many_arguments)]
fn endpoint(
    sock: UdpSocket,
    to: SocketAddr,
    tx_key: CryptoAttr,
    rx_key: CryptoAttr,
    ssrc: u32,
    before_wrap: u16,
    burst: bool,
    start: Instant,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Ends> {
    std::thread::spawn(move || {
        let mut tx = srtpgate_testkit::daemon::context(&tx_key);
        let mut rx = srtpgate_testkit::daemon::context(&rx_key);
        let mut ends = Ends::default();
        let total = RATE * SECONDS + if burst { BURST.1 - BURST.0 } else { 0 };
        let mut seq = 0u16.wrapping_sub(before_wrap);
        let mut next = 0u64;
        let mut buf = vec![0u8; 2048];
        let mut out = vec![0u8; 2048];
        loop {
            let now = Instant::now();
            let due = start + Duration::from_millis(slot(next.min(total), burst) * 1000 / RATE);
            if next < total && now >= due {
                let mut payload = next.to_be_bytes().to_vec();
                payload.resize(160, 0xd5);
                let plain = rtp(ssrc, seq, &payload);
                let n = tx.protect_rtp(&plain, &mut out).expect("protect");
                ends.sent.insert(next, plain);
                // The burst: protected (the sender's index moves on) but
                // lost before the link.
                let lost = burst && (BURST.0..BURST.1).contains(&next);
                if !lost {
                    sock.send_to(&out[..n], to).expect("send");
                    ends.put += 1;
                    if next % RTCP_EVERY == RTCP_EVERY - 1 {
                        let k = next / RTCP_EVERY;
                        let plain = rtcp_sr(ssrc, k as u32);
                        let n = tx.protect_rtcp(&plain, &mut out).expect("protect RTCP");
                        sock.send_to(&out[..n], to).expect("send RTCP");
                        ends.sent_rtcp.insert(k, plain);
                        ends.put += 1;
                    }
                }
                seq = seq.wrapping_add(1);
                next += 1;
                continue;
            }
            if next >= total && stop.load(Ordering::SeqCst) {
                return ends;
            }
            let wait = if next < total { due.saturating_duration_since(now) } else { Duration::from_millis(5) };
            receive(&sock, &mut rx, &mut ends, &mut buf, wait);
        }
    })
}

/// Receives one datagram (if any within `wait`) and files it.
fn receive(sock: &UdpSocket, rx: &mut Context<CpuEngine>, ends: &mut Ends, buf: &mut [u8], wait: Duration) {
    sock.set_read_timeout(Some(wait.max(Duration::from_micros(200)))).expect("timeout");
    let len = match sock.recv_from(buf) {
        Ok((len, _)) => len,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return,
        Err(e) => panic!("endpoint recv: {e}"),
    };
    let wire = &buf[..len];
    let mut plain = vec![0u8; len];
    let rtcp = len >= 2 && (200..=204).contains(&wire[1]);
    let r = if rtcp { rx.unprotect_rtcp(wire, &mut plain) } else { rx.unprotect_rtp(wire, &mut plain) };
    match r {
        Ok(n) => {
            plain.truncate(n);
            let id = if rtcp {
                u64::MAX - u64::from(u32::from_be_bytes(plain[20..24].try_into().expect("4")))
            } else {
                number(&plain)
            };
            ends.got.push((id, plain));
        }
        Err(Error::Replayed) => ends.replayed += 1,
        Err(_) => ends.failed += 1,
    }
}

/// One call's scenario.
struct Scenario {
    name: &'static str,
    faults: Faults,
    burst: bool,
}

/// The relay's counters of one leg (by tag) in a `query` reply.
fn leg(q: &Value, tag: &str) -> (u64, u64, HashMap<String, u64>) {
    let s = stream_stats(q, tag);
    let int = |k: &str| s.get(k).and_then(Value::as_int).unwrap_or_else(|| panic!("no {k} in {}", show(q))) as u64;
    let mut drops = HashMap::new();
    if let Some(d) = s.get("drops").and_then(Value::as_dict) {
        for (k, v) in d {
            drops.insert(String::from_utf8_lossy(k).into_owned(), v.as_int().unwrap_or(0) as u64);
        }
    }
    // The RTP stream counts RTP received; the RTCP stream beside it, RTCP.
    let rtcp = srtpgate_testkit::daemon::stream(q, tag, 1)
        .get("stats")
        .and_then(|s| s.get("packets"))
        .and_then(Value::as_int)
        .unwrap_or_else(|| panic!("no RTCP stream for {tag} in {}", show(q))) as u64;
    (int("packets") + rtcp, int("packets sent"), drops)
}

/// Checks what the relay sent towards one endpoint (captured before the
/// link): every datagram unprotects in order under the relay's key for that
/// leg, no index twice, each the sender's packet unchanged.
fn check_relay_output(what: &str, captured: &[Vec<u8>], relay_key: &CryptoAttr, sender: &Ends) -> u64 {
    let mut ctx = srtpgate_testkit::daemon::context(relay_key);
    let mut plain = vec![0u8; 2048];
    for (i, wire) in captured.iter().enumerate() {
        let rtcp = wire.len() >= 2 && (200..=204).contains(&wire[1]);
        let r = if rtcp { ctx.unprotect_rtcp(wire, &mut plain) } else { ctx.unprotect_rtp(wire, &mut plain) };
        let n = match r {
            Ok(n) => n,
            Err(Error::Replayed) => panic!("{what}: the relay sent index twice (keystream reuse) at datagram {i}"),
            Err(e) => panic!("{what}: datagram {i} of the relay's does not unprotect under its key: {e}"),
        };
        if rtcp {
            let k = u64::from(u32::from_be_bytes(plain[20..24].try_into().expect("4")));
            assert_eq!(sender.sent_rtcp.get(&k).map(|p| &p[..]), Some(&plain[..n]), "{what}: report {k} changed");
        } else {
            let k = number(&plain[..n]);
            assert_eq!(sender.sent.get(&k).map(|p| &p[..]), Some(&plain[..n]), "{what}: packet {k} changed");
        }
    }
    captured.len() as u64
}

#[test]
fn calls_survive_loss_reordering_duplication_corruption_and_outages() {
    let netem = Command::new("unshare")
        .args(["-n", "sh", "-c", "tc qdisc add dev lo root netem loss 1% 2>&1"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if netem {
        println!("this kernel has sch_netem; the faults are still made by the test's own links, which know exactly what they did");
    } else {
        println!("this kernel has no sch_netem (CONFIG_NET_SCH_NETEM): the faults are made by the test's own links, in user space");
    }
    let ms = Duration::from_millis;
    let f = Faults::default;
    let scenarios = [
        Scenario { name: "loss 1%", faults: Faults { loss: 0.01, ..f() }, burst: false },
        Scenario { name: "loss 10%", faults: Faults { loss: 0.10, ..f() }, burst: false },
        Scenario { name: "jitter 0-70 ms (reordering)", faults: Faults { jitter: ms(70), ..f() }, burst: false },
        Scenario { name: "duplication 5%", faults: Faults { dup: 0.05, ..f() }, burst: false },
        Scenario { name: "corruption 5%", faults: Faults { corrupt: 0.05, ..f() }, burst: false },
        Scenario {
            name: "loss 5% + duplication 2% + corruption 2% + jitter 0-50 ms",
            faults: Faults { loss: 0.05, dup: 0.02, corrupt: 0.02, jitter: ms(50), ..f() },
            burst: false,
        },
        Scenario {
            name: "30-second outage across the wrap",
            faults: Faults { outage: Some(OUTAGE), ..f() },
            burst: false,
        },
        Scenario { name: "30 000 packets lost at once across the wrap", faults: f(), burst: true },
    ];
    let d = Daemon::start("faults", 0, &[]);
    let start = Instant::now() + Duration::from_millis(500);
    // Stopped in this order: the links towards the relay, then (once the
    // relay has sent what they delivered last) the links from it, then the
    // endpoints (once those delivered theirs).
    let (stop_up, stop_down, stop) = (Arc::default(), Arc::default(), Arc::new(AtomicBool::new(false)));
    let mut runs = Vec::new();
    let (mut ups, mut downs) = (Vec::new(), Vec::new());
    for (i, sc) in scenarios.iter().enumerate() {
        let id = format!("faults-{i}");
        let (from_tag, to_tag) = (format!("{id}-a"), format!("{id}-b"));
        let (la, lb) = (Link::new(), Link::new());
        let (ea, eb) = (UdpSocket::bind((LO, 0)).expect("bind"), UdpSocket::bind((LO, 0)).expect("bind"));
        let spec = |port: u16, k: &[CryptoAttr]| {
            SdpSpec { ip: LO, origin: LO, port, rtcp: None, proto: "RTP/SAVP", crypto: k, mux: true, ice: false }.text()
        };
        let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
        let r = d.request(&offer(&id, &from_tag, &spec(la.far_port(), std::slice::from_ref(&a_key))));
        let offer_out = reply_sdp(&r);
        let relay_for_b = cryptos(&offer_out).remove(0);
        let b_key = key(relay_for_b.tag, relay_for_b.suite);
        let r = d.request(&answer(&id, &from_tag, &to_tag, &spec(lb.far_port(), std::slice::from_ref(&b_key))));
        let answer_out = reply_sdp(&r);
        let relay_for_a = cryptos(&answer_out).remove(0);
        let (ra, _) = srtpgate_testkit::daemon::media_addrs(&answer_out);
        let (rb, _) = srtpgate_testkit::daemon::media_addrs(&offer_out);
        let seed = 1000 + i as u64;
        let [a_up, a_down] = la.run(ea.local_addr().expect("addr"), ra, sc.faults, seed, start, [&stop_up, &stop_down]);
        let [b_up, b_down] =
            lb.run(eb.local_addr().expect("addr"), rb, sc.faults, seed + 500, start, [&stop_up, &stop_down]);
        ups.extend([a_up, b_up]);
        downs.extend([a_down, b_down]);
        let before_wrap = 700 + 37 * i as u16;
        let a = endpoint(
            ea,
            la.near_addr(),
            a_key,
            relay_for_a.clone(),
            0xa000 + i as u32,
            before_wrap,
            sc.burst,
            start,
            stop.clone(),
        );
        let b = endpoint(
            eb,
            lb.near_addr(),
            b_key,
            relay_for_b.clone(),
            0xb000 + i as u32,
            before_wrap,
            sc.burst,
            start,
            stop.clone(),
        );
        runs.push((sc, id, from_tag, to_tag, la, lb, relay_for_a, relay_for_b, a, b));
    }
    // Every sender is done after SECONDS (the burst's after its shifted
    // clock, the same); then the links drain.
    std::thread::sleep(start.saturating_duration_since(Instant::now()) + Duration::from_secs(SECONDS) + ms(700));
    for (flag, threads) in [(&stop_up, ups), (&stop_down, downs)] {
        flag.store(true, Ordering::SeqCst);
        for t in threads {
            t.join().expect("link thread");
        }
        std::thread::sleep(ms(200));
    }
    stop.store(true, Ordering::SeqCst);
    for (sc, id, from_tag, to_tag, la, lb, relay_for_a, relay_for_b, a, b) in runs {
        let a = a.join().expect("endpoint a");
        let b = b.join().expect("endpoint b");
        let q = d.query(&id);
        let name = sc.name;
        for (dir, up, down, relay_out, from_tag_, to_tag_, relay_key, sender, receiver) in [
            ("a->b", &la.up, &lb.down, &lb.from_relay, &from_tag, &to_tag, &relay_for_b, &a, &b),
            ("b->a", &lb.up, &la.down, &la.from_relay, &to_tag, &from_tag, &relay_for_a, &b, &a),
        ] {
            let what = format!("{name}, {dir}");
            let (delivered, corrupted, dups, lost_up) = up.get();
            assert_eq!(delivered + lost_up, sender.put + dups, "{what}: the link's counts do not add up");
            let (packets_in, _, drops) = leg(&q, from_tag_);
            let (_, packets_out, _) = leg(&q, to_tag_);
            let dropped = |r: &str| drops.get(r).copied().unwrap_or(0);
            let all_drops: u64 = drops.values().sum();
            assert_eq!(
                packets_in, delivered,
                "{what}: the relay received {packets_in}, the link delivered {delivered}"
            );
            // A corrupted packet fails its tag, or its header (`malformed`),
            // or, when the flipped bit was in the sequence number, the replay
            // check that RFC 3711 makes before authentication.
            assert_eq!(
                all_drops,
                corrupted + dups,
                "{what}: drops are the corrupted and duplicated packets: {drops:?}"
            );
            assert_eq!(
                dropped("auth_failed") + dropped("malformed") + dropped("replayed"),
                all_drops,
                "{what}: a packet was dropped for another reason: {drops:?}"
            );
            assert!(dropped("replayed") >= dups, "{what}: not every duplicate was dropped as replayed: {drops:?}");
            let relayed = delivered - corrupted - dups;
            assert_eq!(packets_out, relayed, "{what}: the relay sent {packets_out} of {relayed} whole packets");
            let captured = relay_out.lock().expect("capture");
            assert_eq!(
                check_relay_output(&what, &captured, relay_key, sender),
                relayed,
                "{what}: datagrams captured from the relay"
            );
            let (delivered_down, corrupted_down, dups_down, lost_down) = down.get();
            assert_eq!(delivered_down + lost_down, relayed + dups_down, "{what}: the far link's counts");
            assert_eq!(
                receiver.got.len() as u64,
                delivered_down - corrupted_down - dups_down,
                "{what}: received intact (replayed {}, failed {})",
                receiver.replayed,
                receiver.failed
            );
            assert_eq!(
                receiver.replayed + receiver.failed,
                dups_down + corrupted_down,
                "{what}: what the endpoint refused is what the far link duplicated or corrupted"
            );
            assert!(receiver.replayed >= dups_down, "{what}: a duplicate unprotected twice");
            for (n, plain) in &receiver.got {
                let sent = if *n > u64::MAX / 2 { sender.sent_rtcp.get(&(u64::MAX - n)) } else { sender.sent.get(n) };
                assert_eq!(sent, Some(plain), "{what}: packet {n} arrived changed");
            }
            let lost = sender.put - receiver.got.len() as u64;
            let drops: HashMap<_, _> = drops.into_iter().filter(|(_, v)| *v > 0).collect();
            println!(
                "{what}: sent {} (on the wire {}), relay got {packets_in} and relayed {relayed}, dropped {drops:?}; \
                 received {} intact; lost {lost} = {} + {} on the links, corrupted {} + {}, duplicated {} + {}",
                sender.sent.len() + sender.sent_rtcp.len(),
                sender.put,
                receiver.got.len(),
                lost_up,
                lost_down,
                corrupted,
                corrupted_down,
                dups,
                dups_down,
            );
            assert_eq!(
                lost,
                lost_up + lost_down + corrupted + corrupted_down,
                "{what}: lost beyond the network's faults"
            );
        }
        if sc.burst || sc.faults.outage.is_some() {
            // The stream crossed the wrap during the gap, and packets after it
            // arrived: the index estimates on both sides held.
            let after = b.got.iter().filter(|(n, _)| *n < u64::MAX / 2 && *n >= RATE * OUTAGE.1.as_secs()).count();
            assert!(after > 100, "{name}: only {after} packets arrived after the gap");
        }
    }
}
