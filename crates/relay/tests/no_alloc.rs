//! A worker's rounds allocate nothing once its legs are set up: a relayed
//! SRTP stream (RTP and RTCP, AES-CM/HMAC-SHA1 on one leg, GCM on the
//! other), STUN datagrams handed to the control thread from an ICE leg, and
//! a transcoded plain RTP stream (PCMU to PCMA), both calls recorded (each
//! packet copied, decrypted, to the recorder's queue), the SRTP caller's
//! RTP forked to a subscriber under its own key, its RFC 4733 digits
//! reported to the DTMF log, its RTCP copied for call quality (and the
//! jitter of its RTP measured), the transcoded caller silenced, and a third
//! call's callee played a prompt (and a digit) under its key, through the
//! sockets backend and, where the kernel has it, io_uring.
//!
//! The worker runs in this process on a thread of the test's own, over
//! loopback sockets; a counting global allocator counts the allocations of
//! that thread only (libtest's threads and the endpoints' do not count).

mod common;

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use srtp::{Context, CpuEngine, MasterKey, Policy, Suite};
use srtpgate_codec::payload::PayloadKinds;
use srtpgate_codec::player::{Digit, Output, Player, Progress, PromptPlay};
use srtpgate_codec::prompt::Prompt;
use srtpgate_codec::transcode::{Direction, Transcoder};
use srtpgate_codec::Registry;
use srtpgate_relay::io::{uring, IoKind, IoSetup, Wake};
use srtpgate_relay::stats::{LegStats, WorkerStats, SILENCED};
use srtpgate_relay::worker::{
    Cmd, ForkConfig, ForkSockets, LegConfig, LegSockets, Play, SentDigit, Signal, Tapped, Worker,
};
use srtpgate_relay::WorkerConfig;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: srtpgate_testkit::CountingAllocator = srtpgate_testkit::CountingAllocator;

/// Allocations made by each test's worker thread.
static ALLOCS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

const A_SUITE: Suite = Suite::AES_CM_128_HMAC_SHA1_80;
const B_SUITE: Suite = Suite::AEAD_AES_128_GCM;
const SSRC: u32 = 0xa11c_e000;
const TC_SSRC: u32 = 0x0000_c0de;
const FORK_SSRC: u32 = 0x0f0f_0001;
/// How long an endpoint waits for what the worker should have sent before
/// the test fails (a deadline against hanging, not a measurement).
const PATIENCE: Duration = Duration::from_secs(10);

fn ctx(suite: Suite, seed: u8) -> Context<CpuEngine> {
    let key: Vec<u8> = (0..suite.master_key_len() as u8).map(|b| b ^ seed).collect();
    let salt: Vec<u8> = (0..suite.master_salt_len() as u8).map(|b| b.wrapping_add(seed)).collect();
    Context::new(Policy::new(suite, MasterKey::new(suite, &key, &salt).unwrap()), CpuEngine::new()).unwrap()
}

fn udp() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s
}

/// A datagram, waiting through interruptions: with io_uring in the process
/// a blocking receive on the test's thread sometimes returns EINTR.
fn recv(s: &UdpSocket, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match s.recv(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

fn addr(s: &UdpSocket) -> SocketAddr {
    s.local_addr().unwrap()
}

fn legs() -> ([LegSockets; 2], [SocketAddr; 4]) {
    let s: [LegSockets; 2] =
        std::array::from_fn(|_| LegSockets { rtp: udp(), rtcp: udp(), stats: Arc::new(LegStats::default()) });
    let a = [addr(&s[0].rtp), addr(&s[0].rtcp), addr(&s[1].rtp), addr(&s[1].rtcp)];
    (s, a)
}

fn config(peer: &UdpSocket, peer_rtcp: &UdpSocket) -> LegConfig<CpuEngine> {
    LegConfig {
        kinds: Some(Box::new(PayloadKinds::from_formats([
            (0, "PCMU", 8000),
            (8, "PCMA", 8000),
            (101, "telephone-event", 8000),
        ]))),
        ..common::leg(addr(peer), addr(peer_rtcp), None, None)
    }
}

fn rtp(pt: u8, ssrc: u32, seq: u16, payload: u8) -> Vec<u8> {
    srtpgate_testkit::packets::Rtp::new(ssrc, seq).pt(pt).packet(&[payload; 160])
}

fn rtcp(n: u32) -> Vec<u8> {
    let mut p = vec![0x80, 200, 0, 6];
    p.extend_from_slice(&SSRC.to_be_bytes());
    p.extend_from_slice(&n.to_be_bytes());
    p.resize(28, 0);
    p
}

/// A STUN binding request (RFC 8489 §5: type 0x0001, no attributes).
fn stun(n: u32) -> [u8; 20] {
    let mut p = [0u8; 20];
    p[..8].copy_from_slice(&[0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42]);
    p[8..12].copy_from_slice(&n.to_be_bytes());
    p
}

/// The test's endpoints and the worker they talk through.
struct Rig {
    cmds: Sender<Cmd<CpuEngine>>,
    waker: Arc<dyn Wake>,
    worker: Option<std::thread::JoinHandle<()>>,
    signals: Receiver<Signal>,
    /// What the worker copies to the recorder.
    taps: Receiver<Tapped>,
    stats: Arc<WorkerStats>,
    /// The SRTP call: A (AES-CM, also an ICE leg) to B (GCM).
    a: UdpSocket,
    a_rtcp: UdpSocket,
    b: UdpSocket,
    b_rtcp: UdpSocket,
    a_tx: Context<CpuEngine>,
    b_rx: Context<CpuEngine>,
    to_a: [SocketAddr; 4],
    /// The transcoded call: C sends PCMU, D gets PCMA.
    c: UdpSocket,
    d: UdpSocket,
    to_c: [SocketAddr; 4],
    /// The subscriber of A's RTP, and the key it decrypts with.
    s: UdpSocket,
    s_rx: Context<CpuEngine>,
    /// A's digits, as the DTMF log gets them.
    digits: Receiver<SentDigit>,
    /// A's RTCP, as call quality gets it.
    reports: Receiver<srtpgate_quality::RtcpCopy>,
    /// The played call: F hears a prompt under its key.
    f: UdpSocket,
    seq: u16,
}

impl Rig {
    fn new(io: IoKind, counter: usize) -> std::io::Result<Rig> {
        let (cmds, rx) = unbounded();
        let (sig_tx, signals) = bounded(64);
        let (tap_tx, taps) = bounded(256);
        let (dtmf_tx, digits) = bounded(256);
        let (quality_tx, reports) = bounded(256);
        let stats = Arc::new(WorkerStats::new());
        let cfg = WorkerConfig {
            buffers: 512,
            batch: 64,
            busy_poll: false,
            // On, and never reached: the check runs on every packet.
            stale_ns: 60_000_000_000,
            io: IoSetup::plain(io),
            pin: Vec::new(),
            signal: Some(sig_tx),
            recorder: vec![tap_tx],
            dtmf: Some(dtmf_tx),
            quality: Some(quality_tx),
        };
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let st = stats.clone();
        let worker = std::thread::spawn(move || {
            // Everything this thread allocates from here on counts.
            srtpgate_testkit::count_allocations_into(&ALLOCS[counter]);
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
        let waker = ready_rx.recv().unwrap()?;

        let (a, a_rtcp, b, b_rtcp) = (udp(), udp(), udp(), udp());
        let (sockets, to_a) = legs();
        cmds.send(Cmd::AddStream { call: 1, stream: 0, legs: sockets }).unwrap();
        let mut side_a = config(&a, &a_rtcp);
        side_a.rx = Some(Some(ctx(A_SUITE, 1)));
        side_a.tx = Some(Some(ctx(A_SUITE, 2)));
        side_a.demux = true;
        let mut side_b = config(&b, &b_rtcp);
        side_b.rx = Some(Some(ctx(B_SUITE, 3)));
        side_b.tx = Some(Some(ctx(B_SUITE, 4)));
        cmds.send(Cmd::Configure { call: 1, stream: 0, party: 0, config: Box::new(side_a) }).unwrap();
        cmds.send(Cmd::Configure { call: 1, stream: 0, party: 1, config: Box::new(side_b) }).unwrap();

        let (c, c_rtcp, d, d_rtcp) = (udp(), udp(), udp(), udp());
        // C is silenced: D gets PCMA silence of whatever C says.
        let (mut sockets, to_c) = legs();
        let c_stats = Arc::new(LegStats::default());
        c_stats.block.store(SILENCED, SeqCst);
        sockets[0].stats = c_stats;
        cmds.send(Cmd::AddStream { call: 2, stream: 0, legs: sockets }).unwrap();
        let reg = Registry::new();
        let (pu, iu) = reg.find("PCMU", 8000, 1).expect("PCMU");
        let (pa, ia) = reg.find("PCMA", 8000, 1).expect("PCMA");
        let t = Transcoder::new(Direction {
            decoder: pu.instance(iu, None, None).expect("decoder"),
            in_pt: 0,
            encoder: pa.instance(ia, None, None).expect("encoder"),
            out_pt: 8,
            out_ptime: None,
            dtmf: None,
            detect: None,
            tones_from: None,
        })
        .expect("transcoder");
        let mut side_c = config(&c, &c_rtcp);
        side_c.transcode = Some(Some(Box::new(t)));
        cmds.send(Cmd::Configure { call: 2, stream: 0, party: 0, config: Box::new(side_c) }).unwrap();
        cmds.send(Cmd::Configure { call: 2, stream: 0, party: 1, config: Box::new(config(&d, &d_rtcp)) }).unwrap();
        cmds.send(Cmd::Record { call: 1, on: true }).unwrap();
        cmds.send(Cmd::Record { call: 2, on: true }).unwrap();
        let s = udp();
        let fork = ForkSockets { key: 7, rtp: udp(), rtcp: udp(), stats: Arc::new(LegStats::default()) };
        cmds.send(Cmd::AddFork { call: 1, stream: 0, party: 0, fork }).unwrap();
        let fork = ForkConfig { peer: s.local_addr()?, tx: Some(ctx(B_SUITE, 9)), ssrc: FORK_SSRC, clock_rate: 8000 };
        cmds.send(Cmd::ConfigureFork { call: 1, fork: 7, config: Box::new(fork) }).unwrap();
        // Call 3: E and F; F hears a second of 8 kHz audio, repeated for a
        // minute, as PCMA under its key, and a digit.
        let (e, e_rtcp, f, f_rtcp) = (udp(), udp(), udp(), udp());
        let (sockets, _) = legs();
        cmds.send(Cmd::AddStream { call: 3, stream: 0, legs: sockets }).unwrap();
        let mut side_f = config(&f, &f_rtcp);
        side_f.tx = Some(Some(ctx(A_SUITE, 11)));
        cmds.send(Cmd::Configure { call: 3, stream: 0, party: 0, config: Box::new(config(&e, &e_rtcp)) }).unwrap();
        cmds.send(Cmd::Configure { call: 3, stream: 0, party: 1, config: Box::new(side_f) }).unwrap();
        let out = Output {
            encoder: Some(pa.instance(ia, None, None).expect("encoder")),
            pt: 8,
            clock_rate: 8000,
            ptime_ms: 20,
            event_pt: Some(101),
        };
        let player = Player::new(out, 0xf1a7, 1, 0, Arc::new(Progress::default()));
        let pcm: Vec<i16> = (0..8000).map(|i| ((i % 40) as i16 - 20) * 500).collect();
        let prompt =
            PromptPlay { prompt: Arc::new(Prompt::from_pcm(pcm, 8000)), start: 0, times: 0, for_ms: Some(60_000) };
        let play = Play { player, prompt: Some(prompt), digit: None };
        cmds.send(Cmd::Play { call: 3, stream: 0, party: 1, play: Box::new(play) }).unwrap();
        waker.wake()?;

        Ok(Rig {
            cmds,
            waker,
            worker: Some(worker),
            signals,
            taps,
            stats,
            a,
            a_rtcp,
            b,
            b_rtcp,
            a_tx: ctx(A_SUITE, 1),
            b_rx: ctx(B_SUITE, 4),
            to_a,
            c,
            d,
            to_c,
            s,
            s_rx: ctx(B_SUITE, 9),
            digits,
            reports,
            f,
            seq: 100,
        })
    }

    /// One burst: `n` SRTP packets, an SRTCP packet and a STUN request from
    /// A, `n` PCMU packets from C; waits until B and D got what the worker
    /// made of them (checked) and the STUN request reached the control
    /// leg.
    fn burst(&mut self, n: usize) {
        let mut out = [0u8; 1500];
        for _ in 0..n {
            self.seq = self.seq.wrapping_add(1);
            let len = self.a_tx.protect_rtp(&rtp(0, SSRC, self.seq, 0x55), &mut out).unwrap();
            self.a.send_to(&out[..len], self.to_a[0]).unwrap();
            self.c.send_to(&rtp(0, TC_SSRC, self.seq, 0x11), self.to_c[0]).unwrap();
        }
        // A digit's end (a new event each burst: reported once).
        let end = srtpgate_testkit::packets::Rtp::new(SSRC, self.seq.wrapping_add(1))
            .pt(101)
            .ts(self.seq as u32 * 1000)
            .packet(&[5, 0x8a, 3, 0x20]);
        self.seq = self.seq.wrapping_add(1);
        let len = self.a_tx.protect_rtp(&end, &mut out).unwrap();
        self.a.send_to(&out[..len], self.to_a[0]).unwrap();
        let len = self.a_tx.protect_rtcp(&rtcp(self.seq as u32), &mut out).unwrap();
        self.a_rtcp.send_to(&out[..len], self.to_a[1]).unwrap();
        self.a.send_to(&stun(self.seq as u32), self.to_a[0]).unwrap();

        let mut inb = [0u8; 1500];
        for _ in 0..n {
            let got = recv(&self.b, &mut inb).expect("B receives the relayed SRTP");
            let len = self.b_rx.unprotect_rtp(&inb[..got], &mut out).expect("B unprotects");
            assert_eq!((len, out[1], out[12]), (172, 0, 0x55));
            let got = recv(&self.d, &mut inb).expect("D receives the transcoded RTP");
            // PCMA (payload type 8), silenced.
            assert_eq!((got, inb[1] & 0x7f), (172, 8));
            assert!(inb[12..172].iter().all(|&b| b == 0xd5), "D hears silence");
            let got = recv(&self.s, &mut inb).expect("the subscriber receives its copy");
            let len = self.s_rx.unprotect_rtp(&inb[..got], &mut out).expect("the subscriber unprotects");
            assert_eq!((len, out[12], u32::from_be_bytes([out[8], out[9], out[10], out[11]])), (172, 0x55, FORK_SSRC));
        }
        let got = recv(&self.b, &mut inb).expect("B receives the digit");
        let len = self.b_rx.unprotect_rtp(&inb[..got], &mut out).expect("B unprotects the digit");
        assert_eq!((len, out[1] & 0x7f, out[12]), (16, 101, 5));
        let got = recv(&self.s, &mut inb).expect("the subscriber receives the digit");
        let len = self.s_rx.unprotect_rtp(&inb[..got], &mut out).expect("the subscriber unprotects");
        assert_eq!((len, out[12]), (16, 5));
        let digit = self.digits.recv_timeout(PATIENCE).expect("the digit reaches the DTMF log");
        assert_eq!((digit.call, digit.party, digit.event, digit.duration), (1, 0, 5, 800));
        // What F was played so far.
        self.f.set_nonblocking(true).unwrap();
        while recv(&self.f, &mut inb).is_ok() {}
        self.f.set_nonblocking(false).unwrap();
        let got = recv(&self.b_rtcp, &mut inb).expect("B receives the relayed SRTCP");
        let len = self.b_rx.unprotect_rtcp(&inb[..got], &mut out).expect("B unprotects SRTCP");
        assert_eq!(&out[..len], &rtcp(self.seq as u32)[..]);
        let report = self.reports.recv_timeout(PATIENCE).expect("the RTCP reaches call quality");
        assert_eq!((report.call, report.party, report.bytes()), (1, 0, &rtcp(self.seq as u32)[..]));
        let sig = self.signals.recv_timeout(PATIENCE).expect("the STUN request reaches the control side");
        assert_eq!((sig.call, sig.party, &sig.data[..]), (1, 0, &stun(self.seq as u32)[..]));
        // Dropped here, on this thread: its buffer goes back to the worker.
        drop(sig);
        // The recorder's copies: every packet of both calls, decrypted.
        let (mut srtp, mut srtcp, mut coded) = (0, 0, 0);
        while srtp + srtcp + coded < 2 * n + 2 {
            let t = self.taps.recv_timeout(PATIENCE).expect("the recorder gets every packet");
            match (t.call, t.rtcp) {
                (1, false) => {
                    // The audio, and the digit's end.
                    let digit = (t.data.len(), t.data[12]) == (16, 5);
                    assert!(digit || (t.data.len(), t.data[12]) == (172, 0x55), "decrypted RTP");
                    srtp += 1;
                }
                (1, true) => {
                    assert_eq!(&t.data[..], &rtcp(self.seq as u32)[..], "decrypted RTCP");
                    srtcp += 1;
                }
                _ => {
                    // As it arrived: PCMU, before the transcoder.
                    assert_eq!((t.call, t.data.len(), t.data[1] & 0x7f), (2, 172, 0));
                    coded += 1;
                }
            }
        }
        assert_eq!((srtp, srtcp, coded), (n + 1, 1, n));
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = self.cmds.send(Cmd::Stop);
        let _ = self.waker.wake();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn rounds_allocate_nothing(io: IoKind, counter: usize) {
    let mut rig = match Rig::new(io, counter) {
        Ok(r) => r,
        Err(e) => panic!("{} worker: {e}", io.name()),
    };
    let start = Instant::now();
    // Warm-up: the first packets latch the peers and create the SRTP
    // streams' state, the transcoder's first packets set it up, and the
    // signal and copy buffers are made (as many as the largest burst has
    // out at once: the sets grow to what was needed, then are reused).
    for n in [4, 4, 32] {
        rig.burst(n);
    }
    let before = ALLOCS[counter].load(SeqCst);
    assert!(before > 0, "the counter counts the worker's thread (its start allocates)");
    let rounds_before = rig.stats.batches.load(SeqCst);
    let played_before = rig.stats.played.load(SeqCst);
    for n in [1, 8, 3, 16, 5, 32, 2, 10] {
        for _ in 0..5 {
            rig.burst(n);
        }
        if n == 16 {
            // A digit played to F, before its prompt (a queue preallocated).
            let out = Output { encoder: None, pt: 8, clock_rate: 8000, ptime_ms: 20, event_pt: Some(101) };
            let player = Player::new(out, 1, 1, 0, Arc::new(Progress::default()));
            let digit = Digit { event: 9, duration_ms: 100, volume: 8, pause_ms: 100 };
            let play = Play { player, prompt: None, digit: Some(digit) };
            rig.cmds.send(Cmd::Play { call: 3, stream: 0, party: 1, play: Box::new(play) }).unwrap();
            rig.waker.wake().unwrap();
        }
        // Time for the player to play (it plays on its clock, not the bursts').
        std::thread::sleep(Duration::from_millis(40));
    }
    let played = rig.stats.played.load(SeqCst) - played_before;
    assert!(played >= 10, "F was played {played} packets");
    assert!(rig.stats.silenced.load(SeqCst) > 0, "C was silenced");
    let after = ALLOCS[counter].load(SeqCst);
    let rounds = rig.stats.batches.load(SeqCst) - rounds_before;
    let tc = rig.stats.transcode[0].load(SeqCst);
    assert!(tc > 0 && rig.stats.signals.load(SeqCst) > 0, "transcoded and signals: {tc}");
    assert!(rig.stats.recorded.load(SeqCst) > 0 && rig.stats.recorded_dropped.load(SeqCst) == 0, "recorded");
    assert_eq!(after - before, 0, "{} worker: allocations in {rounds} crypto batches after warm-up", io.name());
    eprintln!("{} worker: {rounds} crypto batches, no allocation ({:?})", io.name(), start.elapsed());
}

#[test]
fn sockets_worker_rounds_allocate_nothing() {
    rounds_allocate_nothing(IoKind::Sockets, 0);
}

#[test]
fn uring_worker_rounds_allocate_nothing() {
    if let Err(e) = uring::probe() {
        srtpgate_testkit::skip("uring", "uring_worker_rounds_allocate_nothing", e);
        return;
    }
    rounds_allocate_nothing(IoKind::Uring, 1);
}
