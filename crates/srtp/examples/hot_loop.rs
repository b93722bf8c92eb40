//! A tight protect loop for profilers (`perf record`): one suite, one stream.
//! Usage: cargo run --release -p srtp --example hot_loop [SUITE] [SECONDS]

use srtp::{Context, CpuEngine, MasterKey, Policy, Suite};
use std::time::{Duration, Instant};

fn main() {
    let mut args = std::env::args().skip(1);
    let suite: Suite = args.next().as_deref().unwrap_or("AEAD_AES_128_GCM").parse().expect("suite");
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let key = vec![1u8; suite.master_key_len()];
    let salt = vec![2u8; suite.master_salt_len()];
    let mut tx = Context::new(Policy::new(suite, MasterKey::new(suite, &key, &salt).expect("key")), CpuEngine::new())
        .expect("context");
    let mut pkt = vec![0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    pkt.resize(172, 0xd5);
    let mut out = [0u8; 256];
    let (start, mut n, mut seq) = (Instant::now(), 0u64, 0u16);
    while start.elapsed() < Duration::from_secs_f64(secs) {
        for _ in 0..10_000 {
            seq = seq.wrapping_add(1);
            pkt[2..4].copy_from_slice(&seq.to_be_bytes());
            std::hint::black_box(tx.protect_rtp(&pkt, &mut out).expect("protect"));
        }
        n += 10_000;
    }
    println!("{suite}: {:.1} ns/op", start.elapsed().as_nanos() as f64 / n as f64);
}
