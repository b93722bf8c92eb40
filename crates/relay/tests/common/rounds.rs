//! A relay scenario that any engine runs the same way: a worker on the
//! simulated NIC (`--io mem`) relays calls whose packets include every case
//! a batch's order matters for (a replayed packet in a later round, a
//! forged one, SRTCP both ways, two directions at once). What it returns,
//! the frames transmitted and each leg's counters, must be the same for
//! every engine: the CPU engine runs each round to its end before the
//! next, an engine with a lane (the GPU, or the deferred test engine)
//! holds several rounds in flight.
//!
//! Shared by the relay's tests and the GPU tests (`srtp-cuda/tests/gpu.rs`).

use crossbeam_channel::unbounded;
use srtp::{Context, Engine, MasterKey, Policy, Suite};
use srtpgate_relay::io::frame::{addr_sum, checksums_ok, parse, write_headers};
use srtpgate_relay::io::mem::{Nic, Port, PEER_MAC, RELAY_MAC};
use srtpgate_relay::io::{IoKind, IoSetup};
use srtpgate_relay::stats::{LegStats, WorkerStats};
use srtpgate_relay::worker::{Cmd, LegConfig, LegSockets, Worker};
use srtpgate_relay::WorkerConfig;
use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Calls of the scenario.
pub const CALLS: usize = 6;
/// Bursts the NIC receives (each published at once, so that the worker
/// meets rounds of every size).
const BURSTS: u16 = 14;
/// A deadline against hanging, not a measurement.
const PATIENCE: Duration = Duration::from_secs(20);
const A_SUITE: Suite = Suite::AES_CM_128_HMAC_SHA1_80;
const B_SUITE: Suite = Suite::AEAD_AES_128_GCM;

/// What a relay made of the scenario.
#[derive(Debug, PartialEq, Eq)]
pub struct Relayed {
    /// UDP payloads transmitted, per destination, in order.
    pub frames: BTreeMap<SocketAddr, Vec<Vec<u8>>>,
    /// Per call and leg: packets in, bytes in, packets out, bytes out, and
    /// drops by reason.
    pub legs: Vec<(u64, u64, u64, u64, Vec<u64>)>,
    /// Batches the engine's lane held while the worker went on.
    pub lane_batches: u64,
    /// Crypto batches in all.
    pub batches: u64,
    /// Times the worker waited for its lane (as many rounds in flight as
    /// the lane holds, or a command).
    pub lane_waits: u64,
    /// Allocations the worker's thread made after the warm-up (the first
    /// three bursts: every stream's first packets), when counted.
    pub allocations: Option<u64>,
}

fn ctx<E: Engine + Clone>(engine: &E, suite: Suite, seed: u8) -> Context<E> {
    let key: Vec<u8> = (0..suite.master_key_len() as u8).map(|b| b ^ seed).collect();
    let salt: Vec<u8> = (0..suite.master_salt_len() as u8).map(|b| b.wrapping_add(seed)).collect();
    Context::new(Policy::new(suite, MasterKey::new(suite, &key, &salt).unwrap()), engine.clone()).unwrap()
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// One party of a call as the NIC sees it: its phone's address, the
/// relay's ports for it, and the phone's own contexts.
struct Phone<E: Engine> {
    addr: SocketAddr,
    rtcp: SocketAddr,
    relay_rtp: SocketAddr,
    relay_rtcp: SocketAddr,
    tx: Context<E>,
    rx: Context<E>,
    ssrc: u32,
    seq: u16,
    stats: Arc<LegStats>,
}

/// Runs the scenario with `engine` (`tag` names the run in messages and
/// its NIC directory); returns what the relay transmitted and counted.
pub fn run<E>(engine: E, tag: &str) -> Relayed
where
    E: Engine + Clone + Send + 'static,
    E::Keys: Send + 'static,
{
    run_counting(engine, tag, None)
}

/// [`run`], with the worker thread's allocations counted into `allocs`
/// (the test binary's counting allocator).
pub fn run_counting<E>(engine: E, tag: &str, allocs: Option<&'static std::sync::atomic::AtomicU64>) -> Relayed
where
    E: Engine + Clone + Send + 'static,
    E::Keys: Send + 'static,
{
    // In shared memory where there is some, as a deployment's NIC directory
    // (`/dev/shm/srtpgate-mem`): a device can lock its pages for DMA,
    // which Linux refuses for pages of a disk file system's file.
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() { shm.to_path_buf() } else { std::env::temp_dir() };
    let dir = base.join(format!("srtpgate-rounds-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let nic = Nic::create(&dir).expect("the NIC's directory");
    let (cmds, rx) = unbounded();
    let stats = Arc::new(WorkerStats::new());
    let cfg = WorkerConfig {
        buffers: 1024,
        // Rounds of at most 16 packets: the scenario's 300 or so packets
        // are many more rounds than a lane holds.
        batch: 16,
        busy_poll: false,
        stale_ns: 60_000_000_000,
        io: IoSetup { kind: IoKind::Mem, xdp: None, mem: Some(nic) },
        pin: Vec::new(),
        signal: None,
        recorder: Vec::new(),
        dtmf: None,
        quality: None,
    };
    let (st, e) = (stats.clone(), engine.clone());
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    let worker = std::thread::spawn(move || match Worker::new(e, 0, rx, cfg, st) {
        Ok(w) => {
            if let Some(a) = allocs {
                srtpgate_testkit::count_allocations_into(a);
            }
            let _ = ready_tx.send(Ok(w.waker()));
            w.run();
        }
        Err(e) => {
            let _ = ready_tx.send(Err(e));
        }
    });
    let waker = ready_rx.recv().unwrap().expect("the worker starts");

    // Each call: party 0 protects with AES_CM_128_HMAC_SHA1_80, party 1
    // with AEAD_AES_128_GCM; the relay unprotects with one's keys and
    // protects with the other's.
    let udp = || UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut phones: Vec<[Phone<E>; 2]> = Vec::new();
    for c in 0..CALLS {
        let sockets: [LegSockets; 2] =
            std::array::from_fn(|_| LegSockets { rtp: udp(), rtcp: udp(), stats: Arc::new(LegStats::default()) });
        let seed = 16 * c as u8;
        let make = |party: usize, sock: &LegSockets| {
            let suite = if party == 0 { A_SUITE } else { B_SUITE };
            let addr: SocketAddr = format!("198.18.{}.{}:{}", 1 + party, 1 + c, 5000 + 2 * c).parse().unwrap();
            Phone {
                addr,
                rtcp: SocketAddr::new(addr.ip(), addr.port() + 1),
                relay_rtp: sock.rtp.local_addr().unwrap(),
                relay_rtcp: sock.rtcp.local_addr().unwrap(),
                // The phone's tx is the relay leg's rx, and the other way.
                tx: ctx(&engine, suite, seed + 2 * party as u8 + 1),
                rx: ctx(&engine, suite, seed + 2 * party as u8 + 2),
                ssrc: 0x5000_0000 + (c as u32) * 2 + party as u32,
                // Call 3's party 0 sends 65 533..=65 535 in the first burst
                // and 0.. in the second: a new stream's first packets on
                // both sides of the wrap, prepared (with rounds in flight)
                // before any is committed. The others cross it later.
                seq: if c == 3 { 65_533 } else { 65_520 - c as u16 },
                stats: sock.stats.clone(),
            }
        };
        let pair = [make(0, &sockets[0]), make(1, &sockets[1])];
        cmds.send(Cmd::AddStream { call: c as u64 + 1, stream: 0, legs: sockets }).unwrap();
        for (party, p) in pair.iter().enumerate() {
            let suite = if party == 0 { A_SUITE } else { B_SUITE };
            let seed = seed + 2 * party as u8;
            let config: LegConfig<E> =
                super::leg(p.addr, p.rtcp, Some(ctx(&engine, suite, seed + 1)), Some(ctx(&engine, suite, seed + 2)));
            cmds.send(Cmd::Configure { call: c as u64 + 1, stream: 0, party, config: Box::new(config) }).unwrap();
        }
        phones.push(pair);
    }
    waker.wake().unwrap();
    let mut port = Port::open(&dir, 0, PATIENCE).expect("the worker's file");
    let start = Instant::now();
    while Port::steered(&dir, phones[CALLS - 1][1].relay_rtp.port()).unwrap() != Some(0) {
        assert!(start.elapsed() < PATIENCE, "{tag}: the last leg's port is steered to worker 0");
        std::thread::sleep(Duration::from_millis(5));
    }

    // The bursts. Sequence numbers cross 65 535 (the rollover counter) on
    // every call's party 0; burst 5 repeats a packet of burst 4 (replayed across
    // rounds), burst 8 carries a forged packet, every fourth burst SRTCP.
    let mut sent = 0u64;
    let mut expected = 0u64;
    let mut last: Option<(SocketAddr, SocketAddr, Vec<u8>)> = None;
    let mut frames: BTreeMap<SocketAddr, Vec<Vec<u8>>> = BTreeMap::new();
    let mut taken = 0u64;
    let take = |port: &mut Port, frames: &mut BTreeMap<SocketAddr, Vec<Vec<u8>>>| {
        port.tx.transmitted(|f| {
            assert!(checksums_ok(f), "valid IPv4 and UDP checksums");
            let (hdr, len, _src, dst) = parse(f).expect("Ethernet, IPv4, UDP");
            frames.entry(dst).or_default().push(f[hdr..hdr + len].to_vec());
        }) as u64
    };
    // A wake lands every round in flight (as a command would): an engine
    // that completes batches only when waited for gets there. Only once
    // the worker has received all that was sent: a wake while it still
    // reads would land its rounds before they fill the lane.
    let land = |stats: &WorkerStats, sent: u64| {
        if stats.total.packets_in.load(std::sync::atomic::Ordering::SeqCst) >= sent {
            waker.wake().unwrap();
        }
    };
    let counted = |phones: &[[Phone<E>; 2]]| -> u64 {
        phones.iter().flatten().map(|p| p.stats.snapshot()).map(|s| s.packets_out + s.dropped()).sum()
    };
    let mut warm = None;
    for b in 0..BURSTS {
        if b == 3 {
            // Warm: every stream has its first packets behind it. Once the
            // worker has relayed and counted all of it, its allocations are
            // read; none may follow.
            let t0 = Instant::now();
            while taken < expected || counted(&phones) < sent {
                land(&stats, sent);
                taken += take(&mut port, &mut frames);
                assert!(t0.elapsed() < PATIENCE, "{tag}: the warm-up bursts relayed");
                std::thread::yield_now();
            }
            warm = allocs.map(|a| a.load(std::sync::atomic::Ordering::SeqCst));
        }
        let mut burst: Vec<(SocketAddr, SocketAddr, Vec<u8>)> = Vec::new();
        for (c, pair) in phones.iter_mut().enumerate() {
            for (party, p) in pair.iter_mut().enumerate() {
                let n = if party == 0 { (b as usize + c) % 5 } else { usize::from(b % 3 == c as u16 % 3) };
                for _ in 0..n {
                    let rtp = srtpgate_testkit::packets::Rtp::new(p.ssrc, p.seq)
                        .pt(0)
                        .packet(&[(p.seq as u8) ^ (c as u8); 160]);
                    p.seq = p.seq.wrapping_add(1);
                    let mut out = vec![0u8; 256];
                    let len = p.tx.protect_rtp(&rtp, &mut out).unwrap();
                    out.truncate(len);
                    burst.push((p.addr, p.relay_rtp, out));
                    expected += 1;
                }
                if b % 4 == 1 && party == c % 2 {
                    let rtcp = srtpgate_testkit::packets::rtcp_sr(p.ssrc, u32::from(b));
                    let mut out = vec![0u8; 256];
                    let len = p.tx.protect_rtcp(&rtcp, &mut out).unwrap();
                    out.truncate(len);
                    burst.push((p.rtcp, p.relay_rtcp, out));
                    expected += 1;
                }
            }
        }
        if b == 5 {
            // Replayed: a packet the relay relayed in an earlier round.
            if let Some(l) = last.clone() {
                burst.insert(burst.len() / 2, l);
            }
        }
        if b == 8 {
            // Forged: a valid packet with one bit of its tag flipped.
            let mut f = burst[0].clone();
            let n = f.2.len();
            f.2[n - 1] ^= 1;
            burst.push(f);
        }
        if b == 4 {
            last = burst.last().cloned();
        }
        for (i, (from, to, bytes)) in burst.iter().enumerate() {
            let t0 = Instant::now();
            while !port.rx.receive(now_ns(), |f| {
                f[42..42 + bytes.len()].copy_from_slice(bytes);
                write_headers(f, RELAY_MAC, PEER_MAC, *from, *to, addr_sum(from.ip(), to.ip()), bytes.len(), i as u16);
                42 + bytes.len()
            }) {
                port.rx.publish();
                taken += take(&mut port, &mut frames);
                assert!(t0.elapsed() < PATIENCE, "{tag}: the worker keeps the fill ring stocked");
                std::thread::yield_now();
            }
            sent += 1;
        }
        port.rx.publish();
        taken += take(&mut port, &mut frames);
    }
    // Everything authentic goes through; the replayed and forged do not.
    let t0 = Instant::now();
    while taken < expected {
        land(&stats, sent);
        taken += take(&mut port, &mut frames);
        assert!(t0.elapsed() < PATIENCE, "{tag}: {taken} of {expected} frames transmitted");
        std::thread::yield_now();
    }
    let t0 = Instant::now();
    while counted(&phones) < sent {
        assert!(t0.elapsed() < PATIENCE, "{tag}: {} of {sent} packets counted", counted(&phones));
        std::thread::sleep(Duration::from_millis(2));
    }
    let allocations = allocs.zip(warm).map(|(a, w)| a.load(std::sync::atomic::Ordering::SeqCst) - w);
    assert_eq!(taken, expected, "{tag}: nothing more than was relayed");

    // Each frame decrypts under its receiver's key to what its sender sent.
    for pair in phones.iter_mut() {
        for party in 0..2 {
            let (this, other) = if party == 0 {
                let (a, b) = pair.split_at_mut(1);
                (&mut a[0], &mut b[0])
            } else {
                let (a, b) = pair.split_at_mut(1);
                (&mut b[0], &mut a[0])
            };
            let mut plain = [0u8; 256];
            for f in frames.get(&other.addr).into_iter().flatten() {
                let n = other.rx.unprotect_rtp(f, &mut plain).expect("the receiver's key decrypts it");
                assert_eq!(u32::from_be_bytes(plain[8..12].try_into().unwrap()), this.ssrc, "{tag}: the sender's SSRC");
                assert_eq!(n, 172, "{tag}: a G.711 packet");
            }
            for f in frames.get(&other.rtcp).into_iter().flatten() {
                other.rx.unprotect_rtcp(f, &mut plain).expect("the receiver's key decrypts the SRTCP");
            }
        }
    }
    let legs = phones
        .iter()
        .flatten()
        .map(|p| {
            let s = p.stats.snapshot();
            (s.packets_in, s.bytes_in, s.packets_out, s.bytes_out, s.drops.to_vec())
        })
        .collect();
    cmds.send(Cmd::Stop).unwrap();
    waker.wake().unwrap();
    worker.join().unwrap();
    drop(port);
    let _ = std::fs::remove_dir_all(&dir);
    let load = |a: &std::sync::atomic::AtomicU64| a.load(std::sync::atomic::Ordering::Relaxed);
    Relayed {
        frames,
        legs,
        lane_batches: load(&stats.lane_batches),
        batches: load(&stats.batches),
        allocations,
        lane_waits: load(&stats.lane_waits),
    }
}
