//! `srtpgate-bench nic`: the load of a relay whose workers run the
//! simulated NIC (`srtpgate serve --io mem`): the relay's own cost per
//! packet at NIC speed, with no kernel on either side.
//!
//! Calls are set up over NG as the load generator sets them up (SDES
//! offer and answer; virtual endpoints, 198.18.x.y for callers and
//! 198.19.x.y for callees). Then, per worker the steering table names:
//!
//! - **generators** (`--generators`, each on a share of the legs) make
//!   each leg's RTP every 20 ms (G.711-sized, the creation time in the
//!   payload), protect it under the leg's key, and queue it for the NIC;
//! - a **NIC receive** thread per worker writes each packet as an
//!   Ethernet/IPv4/UDP frame into a frame the worker gave it (its fill
//!   ring) and posts it on the worker's receive ring with its receive time;
//! - a **NIC transmit** thread per worker takes each frame the worker
//!   transmits, checks its headers and checksums and that it goes to a
//!   leg's endpoint, copies it to the checker of that leg, and hands the
//!   frame back (completion ring);
//! - **checkers** (`--checkers`) decrypt each under the receiving leg's key,
//!   check the payload is what its sender made, and record its delay
//!   (transmit time minus creation time) by the second it was made.
//!
//! The result: packets made and relayed in the window, loss, delay
//! quantiles and per second, the relay's worker threads' CPU time, and
//! from it ns per relayed packet and calls per worker core, beside the
//! SRTP primitives (one unprotect and one protect of the same packet on
//! this machine, measured in the same run).

use crate::loadgen::account::{Delays, Timeline};
use crate::loadgen::{context, endpoint_sdp, pick_line, relay_side, reply_sdp, NgClient};
use clap::Args;
use crossbeam_channel::{bounded, Receiver, Sender, TrySendError};
use rand::rngs::OsRng;
use rand::TryRngCore;
use srtp::{Context, CpuEngine, Suite};
use srtpgate_ng::Value;
use srtpgate_relay::io::frame::{addr_sum, checksums_ok, parse, write_headers};
use srtpgate_relay::io::mem::{Port, PEER_MAC, RELAY_MAC};
use srtpgate_sdp::crypto::CryptoAttr;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Options of `srtpgate-bench nic`.
#[derive(Args, Debug, Clone)]
pub struct NicArgs {
    /// The relay's NG address.
    #[arg(long, default_value = "127.0.0.1:2223")]
    pub ng: SocketAddr,
    /// The relay's simulated NIC (`srtpgate serve --io mem --mem-dir`).
    #[arg(long = "mem-dir", default_value = "/dev/shm/srtpgate-mem")]
    pub mem_dir: PathBuf,
    /// Concurrent calls (at most 65 536).
    #[arg(long, default_value_t = 1000)]
    pub calls: usize,
    /// Seconds of measurement (after one second of warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Packet time in ms (20: G.711's usual; shorter sends more packets per
    /// call, where a machine's open-file limit caps the calls).
    #[arg(long = "ptime", default_value_t = 20)]
    pub ptime_ms: u64,
    /// Threads that make and protect the endpoints' packets.
    #[arg(long, default_value_t = 2)]
    pub generators: usize,
    /// Threads that decrypt and check what the relay sent.
    #[arg(long, default_value_t = 2)]
    pub checkers: usize,
    /// SDES suite of both legs.
    #[arg(long, default_value = "AES_CM_128_HMAC_SHA1_80")]
    pub suite: String,
    /// The relay's HTTP address (`--listen-http`): its workers' time by
    /// stage is read before and after the window, and reported per relayed
    /// packet.
    #[arg(long)]
    pub http: Option<SocketAddr>,
    /// Write the result as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// G.711 at 20 ms.
const PAYLOAD: usize = 160;
/// Room for one SRTP packet.
const MAX_PACKET: usize = 256;

/// One endpoint leg: how it sends and how it hears.
struct Leg {
    /// Its own address (virtual).
    at: SocketAddr,
    /// The relay's address it sends to.
    to: SocketAddr,
    /// The worker that owns `to`.
    worker: usize,
    tx: Context<CpuEngine>,
    rx: Option<Context<CpuEngine>>,
}

/// A packet on its way from a generator to a NIC receive thread, or from a
/// NIC transmit thread to a checker.
struct Packet {
    bytes: [u8; MAX_PACKET],
    len: u16,
    leg: u32,
    /// The other end (generator → NIC: the relay's address; NIC → checker:
    /// unused).
    to: SocketAddr,
    from: SocketAddr,
    /// When the NIC took it from the worker (NIC → checker).
    at_ns: u64,
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn endpoint(i: usize, callee: bool) -> SocketAddr {
    let ip = Ipv4Addr::new(198, 18 + u8::from(callee), (i >> 8) as u8, (i & 0xff) as u8);
    SocketAddr::new(IpAddr::V4(ip), if callee { 6000 } else { 5000 })
}

/// Sets up call `i`: its two legs (caller, callee).
fn setup(
    ng: &mut NgClient,
    i: usize,
    suite: Suite,
) -> Result<[(SocketAddr, SocketAddr, CryptoAttr, CryptoAttr); 2], String> {
    let call_id = format!("nic-{i}-{:x}", now_ns() & 0xffff_ffff);
    let (a, b) = (endpoint(i, false), endpoint(i, true));
    let a_key = CryptoAttr::generate(1, suite, &mut OsRng.unwrap_err());
    let common = |v: Value| {
        v.with("call-id", call_id.as_str())
            .with("ICE", "remove")
            .with("transport-protocol", "RTP/SAVP")
            .with("replace", vec![Value::from("origin"), Value::from("session-connection")])
    };
    let offer = common(Value::dict().with("command", "offer"))
        .with("from-tag", format!("a-{call_id}"))
        .with("sdp", endpoint_sdp(2 * i as u64, a.ip(), a.port(), None, &a_key, None));
    let to_b = reply_sdp(&ng.call(&offer)?, "offer")?;
    let side_b = relay_side(&to_b)?;
    let relay_key_b = pick_line(&side_b.crypto, &a_key, suite).ok_or("the relay offered the callee no fresh key")?;
    let mut b_key = CryptoAttr::generate(relay_key_b.tag, relay_key_b.suite, &mut OsRng.unwrap_err());
    b_key.session_params = relay_key_b.session_params.clone();
    let answer = common(Value::dict().with("command", "answer"))
        .with("from-tag", format!("a-{call_id}"))
        .with("to-tag", format!("b-{call_id}"))
        .with("sdp", endpoint_sdp(2 * i as u64 + 1, b.ip(), b.port(), None, &b_key, None));
    let to_a = reply_sdp(&ng.call(&answer)?, "answer")?;
    let side_a = relay_side(&to_a)?;
    let relay_key_a =
        side_a.crypto.into_iter().find(|c| c.tag == a_key.tag).ok_or("the answer has no line with the caller's tag")?;
    Ok([(a, side_a.rtp, a_key, relay_key_a), (b, side_b.rtp, b_key, relay_key_b)])
}

/// Runs `srtpgate-bench nic`.
pub fn run(args: NicArgs) -> Result<(), String> {
    let suite: Suite = args.suite.parse().map_err(|e| format!("suite: {e}"))?;
    if args.calls == 0 || args.calls > 65_536 {
        return Err("calls must be 1..=65536".into());
    }
    let (generators, checkers) = (args.generators.clamp(1, 64), args.checkers.clamp(1, 64));
    let mut ng = NgClient::new(args.ng)?;
    let started = Instant::now();
    let mut legs: Vec<Leg> = Vec::with_capacity(2 * args.calls);
    for i in 0..args.calls {
        for (at, to, own, relays) in setup(&mut ng, i, suite)? {
            legs.push(Leg { at, to, worker: usize::MAX, tx: context(&own)?, rx: Some(context(&relays)?) });
        }
    }
    let setup_s = started.elapsed().as_secs_f64();
    // Each leg's packets go to the worker its relay port is steered to.
    let mut ports: HashMap<usize, Port> = HashMap::new();
    for leg in &mut legs {
        let deadline = Instant::now() + Duration::from_secs(5);
        leg.worker = loop {
            match Port::steered(&args.mem_dir, leg.to.port()).map_err(|e| format!("steering: {e}"))? {
                Some(w) => break w,
                None if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
                None => return Err(format!("{} is steered to no worker", leg.to)),
            }
        };
        if let std::collections::hash_map::Entry::Vacant(e) = ports.entry(leg.worker) {
            e.insert(Port::open(&args.mem_dir, leg.worker, Duration::from_secs(5)).map_err(|e| e.to_string())?);
        }
    }
    let pid = ports.values().next().map(|p| p.pid).ok_or("no worker")?;
    // Who hears what: a frame to a leg's address is that leg's.
    let by_at: Arc<HashMap<SocketAddr, u32>> =
        Arc::new(legs.iter().enumerate().map(|(l, leg)| (leg.at, l as u32)).collect());
    let primitives = crate::engines::one_packet_ns(suite, PAYLOAD)?;

    let stop = Arc::new(AtomicBool::new(false));
    let window = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let counts = Arc::new(Counts::default());
    let mut threads = Vec::new();
    // NIC receive: one per worker, fed by every generator.
    let mut to_nic: HashMap<usize, Sender<Packet>> = HashMap::new();
    let mut checkers_tx = Vec::new();
    let mut checker_threads = Vec::new();
    let mut rx_ctx: Vec<Vec<Option<Context<CpuEngine>>>> = (0..checkers).map(|_| Vec::new()).collect();
    for (l, leg) in legs.iter_mut().enumerate() {
        let c = &mut rx_ctx[l % checkers];
        c.push(leg.rx.take());
    }
    for (c, ctxs) in rx_ctx.into_iter().enumerate() {
        let (tx, rx) = bounded::<Packet>(65_536);
        checkers_tx.push(tx);
        let (window, counts) = (window.clone(), counts.clone());
        checker_threads.push(std::thread::spawn(move || check(c, checkers, ctxs, rx, &window, &counts)));
    }
    let checkers_tx = Arc::new(checkers_tx);
    for (w, port) in ports {
        let (tx, rx) = bounded::<Packet>(65_536);
        to_nic.insert(w, tx);
        let Port { rx: mut nic_rx, tx: mut nic_tx, .. } = port;
        let (stop1, counts1) = (stop.clone(), counts.clone());
        threads.push(std::thread::spawn(move || nic_receive(&mut nic_rx, rx, &stop1, &counts1)));
        let (stop2, counts2, by_at, out) = (stop.clone(), counts.clone(), by_at.clone(), checkers_tx.clone());
        threads.push(std::thread::spawn(move || nic_transmit(&mut nic_tx, &by_at, &out, checkers, &stop2, &counts2)));
    }
    drop(checkers_tx);
    let mut shares: Vec<Vec<(u32, Leg)>> = (0..generators).map(|_| Vec::new()).collect();
    for (l, leg) in legs.into_iter().enumerate() {
        shares[l % generators].push((l as u32, leg));
    }
    let t0 = Instant::now() + Duration::from_millis(100);
    let mut gens = Vec::new();
    for share in shares {
        let (stop, counts, window, to_nic) = (stop.clone(), counts.clone(), window.clone(), to_nic.clone());
        let ptime = Duration::from_millis(args.ptime_ms.clamp(1, 1000));
        gens.push(std::thread::spawn(move || generate(share, ptime, t0, &to_nic, &stop, &window, &counts)));
    }
    drop(to_nic);
    // One second of warm-up, then the window.
    std::thread::sleep(Duration::from_secs(1) + Duration::from_millis(100));
    let cpu_before = worker_cpu_seconds(pid);
    let stages_before = args.http.and_then(stage_seconds);
    let start_ns = now_ns();
    window[0].store(start_ns, Relaxed);
    std::thread::sleep(Duration::from_secs_f64(args.duration));
    let end_ns = now_ns();
    window[1].store(end_ns, Relaxed);
    let cpu_after = worker_cpu_seconds(pid);
    let stages_after = args.http.and_then(stage_seconds);
    // Let the last packets through.
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Relaxed);
    for g in gens {
        g.join().map_err(|_| "a generator panicked")?;
    }
    for t in threads {
        t.join().map_err(|_| "a NIC thread panicked")?;
    }
    let mut delays = Delays::new();
    let mut timeline = Timeline::default();
    for c in checker_threads {
        let (d, t) = c.join().map_err(|_| "a checker panicked")?;
        delays.merge(&d);
        timeline.merge(&t);
    }
    let secs = (end_ns - start_ns) as f64 / 1e9;
    let made = counts.made_in_window.load(Relaxed);
    let relayed = delays.count();
    let worker_cpu = match (cpu_before, cpu_after) {
        (Some((b, n)), Some((a, _))) => Some((a - b, n)),
        _ => None,
    };
    let q = |x| delays.quantile_us(x);
    // ns per relayed packet by stage (the relay counts every packet its
    // workers relayed in those seconds, which is these).
    let stages: Option<serde_json::Map<String, serde_json::Value>> = match (&stages_before, &stages_after) {
        (Some(b), Some(a)) if relayed > 0 => Some(
            a.iter()
                .map(|(k, v)| {
                    let d = v - b.iter().find(|(kb, _)| kb == k).map_or(0.0, |(_, x)| *x);
                    (k.clone(), serde_json::json!(d * 1e9 / relayed as f64))
                })
                .collect(),
        ),
        _ => None,
    };
    let mut result = serde_json::json!({
        "machine": crate::machine::machine(),
        "calls": args.calls,
        "ptime_ms": args.ptime_ms,
        "call_equivalents": args.calls as f64 * 20.0 / args.ptime_ms.max(1) as f64,
        "workers": worker_cpu.map(|(_, n)| n),
        "suite": suite.name(),
        "setup_seconds": setup_s,
        "measured_seconds": secs,
        "packets_made": made,
        "packets_relayed": relayed,
        "lost": made.saturating_sub(relayed),
        "loss_ratio": if made > 0 { made.saturating_sub(relayed) as f64 / made as f64 } else { 0.0 },
        "generator_dropped": counts.generator_dropped.load(Relaxed),
        "nic_no_frame": counts.no_frame.load(Relaxed),
        "bad_frames": counts.bad_frames.load(Relaxed),
        "bad_payloads": counts.bad_payloads.load(Relaxed),
        "delay_us": {"p50": q(0.5), "p99": q(0.99), "p999": q(0.999), "max": delays.max_us(), "mean": delays.mean_us()},
        "worker_cpu_cores": worker_cpu.map(|(c, _)| c / secs),
        "ns_per_relayed_packet": worker_cpu.filter(|_| relayed > 0).map(|(c, _)| c * 1e9 / relayed as f64),
        "packets_per_second": relayed as f64 / secs,
        // G.711 calls at 20 ms: 100 packets/s relayed each.
        "calls_per_core": worker_cpu.filter(|(c, _)| *c > 0.0).map(|(c, _)| relayed as f64 / secs / 100.0 / (c / secs)),
        "primitives_ns": {"unprotect": primitives.0, "protect": primitives.1, "sum": primitives.0 + primitives.1},
        "delay_by_second": timeline.rows(),
    });
    result["stage_ns_per_relayed_packet"] = serde_json::json!(stages);
    let d = &result["delay_us"];
    println!(
        "{} calls: {made} packets made, {relayed} relayed ({:.4} % lost); p50 {} µs, p99 {} µs, max {} µs; \
         worker CPU {:.3} cores: {:.0} ns per relayed packet (primitives {:.0} + {:.0} ns), {:.0} calls per core",
        args.calls,
        100.0 * result["loss_ratio"].as_f64().unwrap_or(0.0),
        d["p50"],
        d["p99"],
        d["max"],
        result["worker_cpu_cores"].as_f64().unwrap_or(f64::NAN),
        result["ns_per_relayed_packet"].as_f64().unwrap_or(f64::NAN),
        primitives.0,
        primitives.1,
        result["calls_per_core"].as_f64().unwrap_or(f64::NAN),
    );
    for (what, key) in
        [("bad frames", "bad_frames"), ("bad payloads", "bad_payloads"), ("generator drops", "generator_dropped")]
    {
        if result[key].as_u64().unwrap_or(0) > 0 {
            eprintln!("srtpgate-bench nic: {} {what}", result[key]);
        }
    }
    if let Some(st) = &stages {
        let parts: Vec<String> = st.iter().map(|(k, v)| format!("{k} {:.0}", v.as_f64().unwrap_or(0.0))).collect();
        println!("ns per relayed packet by stage: {}", parts.join(", "));
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if counts.bad_frames.load(Relaxed) + counts.bad_payloads.load(Relaxed) > 0 {
        return Err("the relay transmitted frames that failed the checks".into());
    }
    Ok(())
}

#[derive(Default)]
struct Counts {
    made_in_window: AtomicU64,
    generator_dropped: AtomicU64,
    no_frame: AtomicU64,
    bad_frames: AtomicU64,
    bad_payloads: AtomicU64,
}

/// Makes each leg's packets on time: every leg sends every `ptime`, the
/// legs of a share spread evenly over it.
fn generate(
    mut share: Vec<(u32, Leg)>,
    ptime: Duration,
    t0: Instant,
    to_nic: &HashMap<usize, Sender<Packet>>,
    stop: &AtomicBool,
    window: &[AtomicU64; 2],
    counts: &Counts,
) {
    let n = share.len().max(1) as u32;
    let mut seq = vec![0u16; share.len()];
    let ssrc: Vec<u32> = share.iter().map(|(l, _)| 0x5000_0000 | *l).collect();
    let mut k = 0usize; // packets made so far (over the share, in order)
    let mut rtp = [0u8; 12 + PAYLOAD];
    while !stop.load(Relaxed) {
        let i = k % share.len();
        let due = t0 + ptime * (k / share.len()) as u32 + ptime * i as u32 / n;
        let now = Instant::now();
        if due > now {
            let wait = due - now;
            if wait > Duration::from_micros(200) {
                std::thread::sleep(wait - Duration::from_micros(100));
            } else {
                std::hint::spin_loop();
            }
            continue;
        }
        let (l, leg) = &mut share[i];
        seq[i] = seq[i].wrapping_add(1);
        rtp[0] = 0x80;
        rtp[1] = 0;
        rtp[2..4].copy_from_slice(&seq[i].to_be_bytes());
        rtp[4..8].copy_from_slice(&(u32::from(seq[i]) * 160).to_be_bytes());
        rtp[8..12].copy_from_slice(&ssrc[i].to_be_bytes());
        let made = now_ns();
        rtp[12..20].copy_from_slice(&made.to_be_bytes());
        rtp[20..].fill(*l as u8);
        let mut p = Packet { bytes: [0; MAX_PACKET], len: 0, leg: *l, to: leg.to, from: leg.at, at_ns: 0 };
        match leg.tx.protect_rtp(&rtp, &mut p.bytes) {
            Ok(len) => p.len = len as u16,
            Err(_) => {
                k += 1;
                continue;
            }
        }
        let (s, e) = (window[0].load(Relaxed), window[1].load(Relaxed));
        if s > 0 && made >= s && (e == 0 || made < e) {
            counts.made_in_window.fetch_add(1, Relaxed);
        }
        if let Some(tx) = to_nic.get(&leg.worker) {
            if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = tx.try_send(p) {
                counts.generator_dropped.fetch_add(1, Relaxed);
            }
        }
        k += 1;
    }
}

/// The NIC receiving: each queued packet as a frame on the worker's
/// receive ring.
fn nic_receive(nic: &mut srtpgate_relay::io::mem::NicRx, rx: Receiver<Packet>, stop: &AtomicBool, counts: &Counts) {
    loop {
        let first = match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(p) => p,
            Err(_) if stop.load(Relaxed) => return,
            Err(_) => continue,
        };
        let mut next = Some(first);
        let mut n = 0;
        while let Some(p) = next.take() {
            let len = p.len as usize;
            let took = nic.receive(now_ns(), |f| {
                if f.len() < 42 + len {
                    return 0;
                }
                f[42..42 + len].copy_from_slice(&p.bytes[..len]);
                write_headers(f, RELAY_MAC, PEER_MAC, p.from, p.to, addr_sum(p.from.ip(), p.to.ip()), len, 0);
                42 + len
            });
            if !took {
                counts.no_frame.fetch_add(1, Relaxed);
            }
            n += 1;
            if n < 256 {
                next = rx.try_recv().ok();
            }
        }
        nic.publish();
    }
}

/// The NIC transmitting: each frame the worker sent, checked and copied to
/// its leg's checker, then handed back.
fn nic_transmit(
    nic: &mut srtpgate_relay::io::mem::NicTx,
    by_at: &HashMap<SocketAddr, u32>,
    out: &[Sender<Packet>],
    checkers: usize,
    stop: &AtomicBool,
    counts: &Counts,
) {
    let mut idle_since: Option<Instant> = None;
    loop {
        let at_ns = now_ns();
        let n = nic.transmitted(|f| {
            let leg = match parse(f) {
                Some((hdr, len, _, dst)) if checksums_ok(f) && f[0..6] == PEER_MAC && len <= MAX_PACKET => {
                    by_at.get(&dst).map(|&l| (l, hdr, len))
                }
                _ => None,
            };
            let Some((l, hdr, len)) = leg else {
                counts.bad_frames.fetch_add(1, Relaxed);
                return;
            };
            let mut p = Packet {
                bytes: [0; MAX_PACKET],
                len: len as u16,
                leg: l,
                to: SocketAddr::from(([0, 0, 0, 0], 0)),
                from: SocketAddr::from(([0, 0, 0, 0], 0)),
                at_ns,
            };
            p.bytes[..len].copy_from_slice(&f[hdr..hdr + len]);
            let _ = out[l as usize % checkers].send(p);
        });
        if n == 0 {
            if stop.load(Relaxed) && idle_since.is_some_and(|t| t.elapsed() > Duration::from_millis(100)) {
                return;
            }
            idle_since.get_or_insert_with(Instant::now);
            std::hint::spin_loop();
        } else {
            idle_since = None;
        }
    }
}

/// Decrypts and checks what the relay sent to the legs of checker `c`;
/// their delays.
fn check(
    c: usize,
    checkers: usize,
    mut ctxs: Vec<Option<Context<CpuEngine>>>,
    rx: Receiver<Packet>,
    window: &[AtomicU64; 2],
    counts: &Counts,
) -> (Delays, Timeline) {
    let (mut delays, mut timeline) = (Delays::new(), Timeline::default());
    let mut plain = [0u8; MAX_PACKET];
    for p in rx {
        let l = p.leg as usize;
        let Some(Some(ctx)) = ctxs.get_mut(l / checkers).filter(|_| l % checkers == c) else {
            counts.bad_payloads.fetch_add(1, Relaxed);
            continue;
        };
        let Ok(n) = ctx.unprotect_rtp(&p.bytes[..p.len as usize], &mut plain) else {
            counts.bad_payloads.fetch_add(1, Relaxed);
            continue;
        };
        // The other leg of the call made it: its index's low byte fills
        // the payload after the creation time.
        let sender = (l ^ 1) as u8;
        if n != 12 + PAYLOAD || plain[20..n].iter().any(|&b| b != sender) {
            counts.bad_payloads.fetch_add(1, Relaxed);
            continue;
        }
        let made = u64::from_be_bytes(plain[12..20].try_into().expect("8 bytes"));
        let (s, e) = (window[0].load(Relaxed), window[1].load(Relaxed));
        if s > 0 && made >= s && (e == 0 || made < e) {
            let us = p.at_ns.saturating_sub(made) / 1_000;
            delays.record(us);
            timeline.record(((made - s) / 1_000_000_000) as usize, us);
        }
    }
    (delays, timeline)
}

/// CPU seconds of the relay's worker threads (`media-N`) and how many.
fn worker_cpu_seconds(pid: u32) -> Option<(f64, usize)> {
    let mut total = 0.0;
    let mut n = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let dir = t.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim().starts_with("media-") {
            total += crate::loadgen::cpu_seconds(&dir.join("stat").to_string_lossy())?;
            n += 1;
        }
    }
    (n > 0).then_some((total, n))
}

/// The relay's workers' seconds by stage (summed over workers), from its
/// /metrics at `http`.
fn stage_seconds(http: SocketAddr) -> Option<Vec<(String, f64)>> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect_timeout(&http, Duration::from_secs(2)).ok()?;
    c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(c, "GET /metrics HTTP/1.0\r\nHost: {http}\r\n\r\n").ok()?;
    let mut page = String::new();
    c.read_to_string(&mut page).ok()?;
    let mut out: Vec<(String, f64)> = Vec::new();
    for line in page.lines().filter(|l| l.starts_with("srtpgate_worker_stage_seconds_total{")) {
        let stage = line.split("stage=\"").nth(1)?.split('"').next()?.to_string();
        let v: f64 = line.rsplit(' ').next()?.parse().ok()?;
        match out.iter_mut().find(|(k, _)| *k == stage) {
            Some((_, x)) => *x += v,
            None => out.push((stage, v)),
        }
    }
    (!out.is_empty()).then_some(out)
}
