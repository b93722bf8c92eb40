//! The `mem` backend through its NIC side ([`Port`]): a worker relays SRTP
//! frames the test writes into its receive ring, and every frame it
//! transmits has valid headers and checksums, the leg's addresses and MACs,
//! and decrypts under the receiving leg's key to what was sent; the
//! steering table names the worker of each leg's port; a frame for a port
//! no leg has is counted and its frame comes back; and once warm the
//! worker's rounds allocate nothing.
//!
//! The worker runs in this process on a thread of the test's own; the test
//! thread plays the NIC (no socket carries a packet of the legs).

mod common;

use crossbeam_channel::unbounded;
use srtp::{Context, CpuEngine, MasterKey, Policy, Suite};
use srtpgate_relay::io::frame::{addr_sum, checksums_ok, parse, write_headers};
use srtpgate_relay::io::mem::{Nic, Port, PEER_MAC, RELAY_MAC};
use srtpgate_relay::io::{IoKind, IoSetup};
use srtpgate_relay::stats::{LegStats, WorkerStats};
use srtpgate_relay::worker::{Cmd, LegConfig, LegSockets, Worker};
use srtpgate_relay::WorkerConfig;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: srtpgate_testkit::CountingAllocator = srtpgate_testkit::CountingAllocator;
static ALLOCS: AtomicU64 = AtomicU64::new(0);

const A_SUITE: Suite = Suite::AES_CM_128_HMAC_SHA1_80;
const B_SUITE: Suite = Suite::AEAD_AES_128_GCM;
const SSRC: u32 = 0x0e0e_0001;
/// A deadline against hanging, not a measurement.
const PATIENCE: Duration = Duration::from_secs(10);

fn ctx(suite: Suite, seed: u8) -> Context<CpuEngine> {
    let key: Vec<u8> = (0..suite.master_key_len() as u8).map(|b| b ^ seed).collect();
    let salt: Vec<u8> = (0..suite.master_salt_len() as u8).map(|b| b.wrapping_add(seed)).collect();
    Context::new(Policy::new(suite, MasterKey::new(suite, &key, &salt).unwrap()), CpuEngine::new()).unwrap()
}

fn leg(peer: SocketAddr, rx: Context<CpuEngine>, tx: Context<CpuEngine>) -> LegConfig<CpuEngine> {
    common::leg(peer, SocketAddr::new(peer.ip(), peer.port() + 1), Some(rx), Some(tx))
}

fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
}

/// The NIC receives `n` SRTP packets from A's phone for the relay's port
/// `to` (sequence numbers from `seq`).
fn receive(port: &mut Port, a_tx: &mut Context<CpuEngine>, from: SocketAddr, to: SocketAddr, seq: u16, n: u16) {
    let mut srtp = [0u8; 256];
    for i in 0..n {
        let rtp = srtpgate_testkit::packets::Rtp::new(SSRC, seq + i).pt(0).packet(&[(seq + i) as u8; 160]);
        let len = a_tx.protect_rtp(&rtp, &mut srtp).unwrap();
        let took = port.rx.receive(now_ns(), |f| {
            f[42..42 + len].copy_from_slice(&srtp[..len]);
            write_headers(f, RELAY_MAC, PEER_MAC, from, to, addr_sum(from.ip(), to.ip()), len, i);
            42 + len
        });
        assert!(took, "the worker keeps the fill ring stocked");
    }
    port.rx.publish();
}

/// Takes `n` transmitted frames (checked), each B's RTP.
fn transmitted(port: &mut Port, b_rx: &mut Context<CpuEngine>, from: SocketAddr, to: SocketAddr, seq: u16, n: u16) {
    let start = Instant::now();
    let mut got = Vec::new();
    while got.len() < n as usize {
        port.tx.transmitted(|f| got.push(f.to_vec()));
        assert!(start.elapsed() < PATIENCE, "{} of {n} frames transmitted", got.len());
    }
    assert_eq!(got.len(), n as usize, "nothing more than was relayed");
    let mut plain = [0u8; 256];
    for (i, f) in got.iter().enumerate() {
        assert!(checksums_ok(f), "valid IPv4 and UDP checksums");
        assert_eq!((&f[0..6], &f[6..12]), (&PEER_MAC[..], &RELAY_MAC[..]), "MACs");
        let (hdr, len, src, dst) = parse(f).expect("Ethernet, IPv4, UDP");
        assert_eq!((src, dst), (from, to), "from B's port to B's phone");
        let n = b_rx.unprotect_rtp(&f[hdr..hdr + len], &mut plain).expect("B's key decrypts it");
        let s = seq + i as u16;
        assert_eq!(u16::from_be_bytes([plain[2], plain[3]]), s, "in order");
        assert_eq!(&plain[12..n], &[s as u8; 160][..], "the payload A sent");
    }
}

#[test]
fn a_worker_relays_frames_of_the_simulated_nic() {
    let dir = std::env::temp_dir().join(format!("srtpgate-mem-test-{}", std::process::id()));
    let nic = Nic::create(&dir).expect("the NIC's directory");
    let (cmds, rx) = unbounded();
    let stats = Arc::new(WorkerStats::new());
    let cfg = WorkerConfig {
        buffers: 512,
        batch: 64,
        busy_poll: false,
        stale_ns: 60_000_000_000,
        io: IoSetup { kind: IoKind::Mem, xdp: None, mem: Some(nic) },
        pin: Vec::new(),
        signal: None,
        recorder: Vec::new(),
        dtmf: None,
        quality: None,
    };
    let st = stats.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    let worker = std::thread::spawn(move || {
        srtpgate_testkit::count_allocations_into(&ALLOCS);
        match Worker::new(CpuEngine::new(), 0, rx, cfg, st) {
            Ok(w) => {
                let _ = ready_tx.send(Ok(w.waker()));
                w.run();
            }
            Err(e) => {
                let _ = ready_tx.send(Err(e));
            }
        }
    });
    let waker = ready_rx.recv().unwrap().expect("the worker starts");
    let udp = || UdpSocket::bind("127.0.0.1:0").unwrap();
    let sockets: [LegSockets; 2] =
        std::array::from_fn(|_| LegSockets { rtp: udp(), rtcp: udp(), stats: Arc::new(LegStats::default()) });
    let (to_a, from_b) = (sockets[0].rtp.local_addr().unwrap(), sockets[1].rtp.local_addr().unwrap());
    let (a_stats, b_stats) = (sockets[0].stats.clone(), sockets[1].stats.clone());
    let (phone_a, phone_b): (SocketAddr, SocketAddr) =
        ("198.18.1.1:5000".parse().unwrap(), "198.18.2.1:6000".parse().unwrap());
    cmds.send(Cmd::AddStream { call: 1, stream: 0, legs: sockets }).unwrap();
    let side_a = leg(phone_a, ctx(A_SUITE, 1), ctx(A_SUITE, 2));
    let side_b = leg(phone_b, ctx(B_SUITE, 3), ctx(B_SUITE, 4));
    cmds.send(Cmd::Configure { call: 1, stream: 0, party: 0, config: Box::new(side_a) }).unwrap();
    cmds.send(Cmd::Configure { call: 1, stream: 0, party: 1, config: Box::new(side_b) }).unwrap();
    waker.wake().unwrap();

    let mut port = Port::open(&dir, 0, PATIENCE).expect("the worker's file");
    let (mut a_tx, mut b_rx) = (ctx(A_SUITE, 1), ctx(B_SUITE, 4));
    // The legs are the worker's once it applied the commands.
    let start = Instant::now();
    while Port::steered(&dir, to_a.port()).unwrap() != Some(0) {
        assert!(start.elapsed() < PATIENCE, "A's port is steered to worker 0");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(Port::steered(&dir, from_b.port()).unwrap(), Some(0));

    // Warm-up, then bursts counted for allocations.
    receive(&mut port, &mut a_tx, phone_a, to_a, 1, 40);
    transmitted(&mut port, &mut b_rx, from_b, phone_b, 1, 40);
    let before = ALLOCS.load(SeqCst);
    let mut seq = 41;
    for n in [1u16, 64, 7, 200, 3] {
        receive(&mut port, &mut a_tx, phone_a, to_a, seq, n);
        transmitted(&mut port, &mut b_rx, from_b, phone_b, seq, n);
        seq += n;
    }
    assert_eq!(ALLOCS.load(SeqCst) - before, 0, "the mem worker's rounds allocate nothing");

    // A frame for a port that no leg has: counted, its frame returned.
    let stray: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let took = port.rx.receive(now_ns(), |f| {
        f[42..46].copy_from_slice(&[0x80, 0, 0, 1]);
        write_headers(f, RELAY_MAC, PEER_MAC, phone_a, stray, addr_sum(phone_a.ip(), stray.ip()), 4, 0);
        46
    });
    assert!(took);
    port.rx.publish();
    let start = Instant::now();
    while stats.stray.load(SeqCst) == 0 {
        assert!(start.elapsed() < PATIENCE, "the stray frame is counted");
        std::thread::sleep(Duration::from_millis(5));
    }
    let relayed = u64::from(seq - 1);
    assert_eq!(a_stats.packets_in.load(SeqCst), relayed);
    assert_eq!(b_stats.packets_out.load(SeqCst), relayed);
    assert_eq!(a_stats.snapshot().dropped(), 0, "nothing dropped");
    // The round's clock: every stage a relayed packet passes was timed.
    use srtpgate_relay::stats::Stage;
    for st in [Stage::Io, Stage::Receive, Stage::Unprotect, Stage::Crypto, Stage::Protect, Stage::Send, Stage::Release]
    {
        assert!(stats.stage_ns[st as usize].load(SeqCst) > 0, "{} timed", st.name());
    }
    assert_eq!(stats.stage_ns[Stage::Transcode as usize].load(SeqCst), 0, "nothing transcoded");

    // The leg's removal clears its steering.
    cmds.send(Cmd::RemoveCall { call: 1 }).unwrap();
    waker.wake().unwrap();
    let start = Instant::now();
    while Port::steered(&dir, to_a.port()).unwrap().is_some() {
        assert!(start.elapsed() < PATIENCE, "A's port is no longer steered");
        std::thread::sleep(Duration::from_millis(5));
    }
    cmds.send(Cmd::Stop).unwrap();
    waker.wake().unwrap();
    worker.join().unwrap();
    drop(port);
    let _ = std::fs::remove_dir_all(&dir);
}
