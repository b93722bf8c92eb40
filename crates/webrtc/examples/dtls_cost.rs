//! What a WebRTC leg costs the relay, measured on one core: DTLS-SRTP
//! handshakes per second (the relay's side only: its `DtlsLeg` calls are
//! timed, the peer's are not), the memory a connected leg keeps, and the
//! STUN check and answer. Prints one JSON object.
//!
//!     cargo run --release -p srtpgate-webrtc --example dtls_cost -- [handshakes] [relay-role]
//!
//! relay-role: `passive` (the relay is the DTLS server, as towards a
//! browser that offered actpass; default) or `active`.
//!
//! The heap is the daemon's: every freed block zeroed (`ZeroAlloc`, as
//! `srtpgate serve` runs), so the time includes that wipe.

use srtpgate_webrtc::dtls::{DtlsLeg, Fingerprint, Identity};
use srtpgate_webrtc::stun;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Counts live heap bytes, to see what a connected leg keeps.
struct Counting;
/// The daemon's allocator: the system's, each freed block zeroed.
static HEAP: zeroizing_alloc::ZeroAlloc<System> = zeroizing_alloc::ZeroAlloc(System);
static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size() as isize, Relaxed);
        HEAP.alloc(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size() as isize, Relaxed);
        HEAP.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n as isize - l.size() as isize, Relaxed);
        HEAP.realloc(p, l, n)
    }
}

#[global_allocator]
static A: Counting = Counting;

fn fp(id: &Identity) -> Fingerprint {
    Fingerprint::parse(id.fingerprint()).expect("fingerprint")
}

/// One handshake; returns the relay side's time and its connected leg.
fn handshake(relay_id: &Identity, peer_id: &Identity, relay_active: bool) -> (Duration, DtlsLeg) {
    let now = Instant::now();
    let mut relay_time = Duration::ZERO;
    let t = Instant::now();
    let mut relay = DtlsLeg::new(relay_id, relay_active, fp(peer_id), true, now).expect("relay leg");
    let mut to_peer = relay.start(now).expect("start").send;
    relay_time += t.elapsed();
    let mut peer = DtlsLeg::new(peer_id, !relay_active, fp(relay_id), true, now).expect("peer leg");
    let mut to_relay = peer.start(now).expect("start").send;
    let (mut rk, mut pk) = (false, false);
    for _ in 0..20 {
        let mut next_relay = Vec::new();
        for d in to_peer.drain(..) {
            let s = peer.handle(&d, now).expect("peer");
            next_relay.extend(s.send);
            pk |= s.keys.is_some();
        }
        to_relay.extend(next_relay);
        let t = Instant::now();
        let mut next_peer = Vec::new();
        for d in to_relay.drain(..) {
            let s = relay.handle(&d, now).expect("relay");
            next_peer.extend(s.send);
            rk |= s.keys.is_some();
        }
        relay_time += t.elapsed();
        to_peer = next_peer;
        if rk && pk {
            return (relay_time, relay);
        }
    }
    panic!("no handshake");
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let relay_active = args.next().as_deref() == Some("active");
    let relay_id = Identity::generate().expect("certificate");
    let peer_id = Identity::generate().expect("certificate");
    // Warm up.
    for _ in 0..20 {
        handshake(&relay_id, &peer_id, relay_active);
    }
    let mut relay_total = Duration::ZERO;
    let mut times = Vec::with_capacity(n);
    let before = LIVE.load(Relaxed);
    let mut kept = Vec::with_capacity(n);
    for _ in 0..n {
        let (t, leg) = handshake(&relay_id, &peer_id, relay_active);
        relay_total += t;
        times.push(t.as_secs_f64() * 1e6);
        kept.push(leg);
    }
    let bytes_per_leg = (LIVE.load(Relaxed) - before) as f64 / n as f64;
    drop(kept);
    times.sort_by(|a, b| a.partial_cmp(b).unwrap());
    // STUN: a check verified and answered (what the relay does per check).
    let mut req = [0u8; stun::MAX_ANSWER];
    let rn = stun::request(&[3; 12], "relayufr:peer", "relaypassword0123456789x", 1, true, &mut req);
    let from = "198.18.0.2:40000".parse().unwrap();
    let k = 200_000;
    let t = Instant::now();
    let mut out = [0u8; stun::MAX_ANSWER];
    for _ in 0..k {
        let c = stun::check_request(std::hint::black_box(&req[..rn]), "relayufr", "relaypassword0123456789x").unwrap();
        std::hint::black_box(stun::success(&c.txid, from, "relaypassword0123456789x", &mut out));
    }
    let stun_ns = t.elapsed().as_nanos() as f64 / k as f64;
    let us = relay_total.as_secs_f64() * 1e6 / n as f64;
    println!(
        "{{\"handshakes\": {n}, \"relay_role\": \"{}\", \"relay_us_per_handshake\": {us:.1}, \
         \"relay_p50_us\": {:.1}, \"relay_p99_us\": {:.1}, \"handshakes_per_s_per_core\": {:.0}, \
         \"bytes_per_connected_leg\": {bytes_per_leg:.0}, \"stun_check_and_answer_ns\": {stun_ns:.0}, \
         \"stun_checks_per_s_per_core\": {:.0}}}",
        if relay_active { "active" } else { "passive" },
        times[n / 2],
        times[n * 99 / 100],
        1e6 / us,
        1e9 / stun_ns
    );
}
