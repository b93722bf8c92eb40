//! The delay bound: RTP that waited longer than `stale_ns` before its
//! worker took it is dropped and counted as `stale`, never relayed late;
//! RTCP of the same age is relayed; RTP sent once the worker keeps up goes
//! through. Through the sockets backend and, where the kernel has it,
//! io_uring (both read the kernel's receive time).
//!
//! The packets wait in the kernel for a worker that has not started yet:
//! the same state as a worker that fell behind, without depending on how
//! fast this machine is.

mod common;

use crossbeam_channel::unbounded;
use srtp::CpuEngine;
use srtpgate_relay::io::{uring, IoKind, IoSetup};
use srtpgate_relay::stats::{Drop, LegStats, WorkerStats};
use srtpgate_relay::worker::{Cmd, LegConfig, LegSockets, Worker};
use srtpgate_relay::WorkerConfig;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

/// The bound under test.
const BOUND: Duration = Duration::from_millis(30);
/// How long the first packets wait: well past the bound.
const WAIT: Duration = Duration::from_millis(150);
/// How long an endpoint waits for a packet before the test fails (a
/// deadline against hanging, not a measurement).
const PATIENCE: Duration = Duration::from_secs(10);

fn udp() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(PATIENCE)).unwrap();
    s
}

/// Turns the kernel's receive timestamps on for `s` now, so that packets
/// queued before the worker starts carry the time they arrived (without
/// it the kernel would stamp them when they are read).
fn timestamps_on(s: &UdpSocket) {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket and a pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "SO_TIMESTAMPNS: {}", std::io::Error::last_os_error());
}

fn recv(s: &UdpSocket, buf: &mut [u8]) -> usize {
    loop {
        match s.recv(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => return r.expect("the relayed packet arrives"),
        }
    }
}

fn plain(peer: SocketAddr, peer_rtcp: SocketAddr) -> LegConfig<CpuEngine> {
    common::leg(peer, peer_rtcp, None, None)
}

fn rtp(seq: u16) -> Vec<u8> {
    srtpgate_testkit::packets::Rtp::new(0x5e1e, seq).pt(0).packet(&[0x55; 160])
}

fn rtcp_rr() -> Vec<u8> {
    let mut p = vec![0x80, 201, 0, 1];
    p.extend_from_slice(&0x5e1eu32.to_be_bytes());
    p
}

fn stale_rtp_is_dropped_and_counted(io: IoKind) {
    let (a, a_rtcp, b, b_rtcp) = (udp(), udp(), udp(), udp());
    let sockets: [LegSockets; 2] =
        std::array::from_fn(|_| LegSockets { rtp: udp(), rtcp: udp(), stats: Arc::new(LegStats::default()) });
    let to_a = (sockets[0].rtp.local_addr().unwrap(), sockets[0].rtcp.local_addr().unwrap());
    timestamps_on(&sockets[0].rtp);
    timestamps_on(&sockets[0].rtcp);
    let a_stats = sockets[0].stats.clone();

    // A talks to a relay that is not reading yet.
    for seq in 1..=5 {
        a.send_to(&rtp(seq), to_a.0).unwrap();
    }
    a_rtcp.send_to(&rtcp_rr(), to_a.1).unwrap();
    std::thread::sleep(WAIT);

    let (cmds, rx) = unbounded();
    let stats = Arc::new(WorkerStats::new());
    let cfg = WorkerConfig {
        buffers: 256,
        batch: 32,
        busy_poll: false,
        stale_ns: BOUND.as_nanos() as u64,
        io: IoSetup::plain(io),
        pin: Vec::new(),
        signal: None,
        recorder: Vec::new(),
        dtmf: None,
        quality: None,
    };
    let st = stats.clone();
    let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
    let worker = std::thread::spawn(move || match Worker::new(CpuEngine::new(), 0, rx, cfg, st) {
        Ok(w) => {
            let _ = ready_tx.send(Ok(w.waker()));
            w.run();
        }
        Err(e) => {
            let _ = ready_tx.send(Err(e));
        }
    });
    let waker = ready_rx.recv().unwrap().expect("the worker starts");
    cmds.send(Cmd::AddStream { call: 1, stream: 0, legs: sockets }).unwrap();
    let side_a = plain(a.local_addr().unwrap(), a_rtcp.local_addr().unwrap());
    let side_b = plain(b.local_addr().unwrap(), b_rtcp.local_addr().unwrap());
    cmds.send(Cmd::Configure { call: 1, stream: 0, party: 0, config: Box::new(side_a) }).unwrap();
    cmds.send(Cmd::Configure { call: 1, stream: 0, party: 1, config: Box::new(side_b) }).unwrap();
    waker.wake().unwrap();

    // The old RTCP is relayed; the old RTP is not.
    let mut buf = [0u8; 1500];
    let n = recv(&b_rtcp, &mut buf);
    assert_eq!(&buf[..n], &rtcp_rr()[..], "the RTCP that waited is relayed");
    // Now the worker keeps up: fresh RTP goes through, and is the first
    // RTP B hears.
    for seq in 6..=10 {
        a.send_to(&rtp(seq), to_a.0).unwrap();
        let n = recv(&b, &mut buf);
        assert_eq!(n, 172);
        assert_eq!(u16::from_be_bytes([buf[2], buf[3]]), seq, "only fresh RTP is relayed, in order");
    }
    let stale = a_stats.drops[Drop::Stale as usize].load(Relaxed);
    assert_eq!(stale, 5, "the five RTP packets that waited are counted stale on their leg");
    assert_eq!(stats.total.drops[Drop::Stale as usize].load(Relaxed), 5, "and in the worker's totals");
    assert_eq!(a_stats.snapshot().dropped(), 5, "nothing else was dropped");

    cmds.send(Cmd::Stop).unwrap();
    waker.wake().unwrap();
    worker.join().unwrap();
}

#[test]
fn sockets_drop_stale_rtp() {
    stale_rtp_is_dropped_and_counted(IoKind::Sockets);
}

#[test]
fn uring_drops_stale_rtp() {
    if let Err(e) = uring::probe() {
        srtpgate_testkit::skip("uring", "uring_drops_stale_rtp", e);
        return;
    }
    stale_rtp_is_dropped_and_counted(IoKind::Uring);
}
