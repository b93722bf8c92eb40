//! Criterion benchmarks of the engines (developers' view; the figures that
//! are recorded come from `srtpgate bench cpu`, beside libsrtp's).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use srtp::engine::{Engine, Op, Outcome};
use srtp::{Context, CpuEngine, Kind, MasterKey, Policy, PortableEngine, Suite};
use std::hint::black_box;

fn rtp(ssrc: u32, seq: u16) -> Vec<u8> {
    let mut p = vec![0x80, 0, 0, 0, 0, 0, 0, 0];
    p[2..4].copy_from_slice(&seq.to_be_bytes());
    p.extend(ssrc.to_be_bytes());
    p.resize(172, 0xd5);
    p
}

fn ctx<E: Engine>(suite: Suite, e: E) -> Context<E> {
    let key = vec![1u8; suite.master_key_len()];
    let salt = vec![2u8; suite.master_salt_len()];
    let mut p = Policy::new(suite, MasterKey::new(suite, &key, &salt).unwrap());
    p.max_streams = 100_000;
    Context::new(p, e).unwrap()
}

fn protect<E: Engine + Clone>(c: &mut Criterion, engine: E) {
    let mut g = c.benchmark_group(format!("protect/{}", engine.name()));
    g.throughput(Throughput::Elements(1));
    for suite in [Suite::AES_CM_128_HMAC_SHA1_80, Suite::AEAD_AES_128_GCM, Suite::AES_256_CM_HMAC_SHA1_80] {
        let mut tx = ctx(suite, engine.clone());
        let mut pkt = rtp(1, 0);
        let mut out = vec![0u8; 400];
        let mut seq = 0u16;
        g.bench_function(BenchmarkId::from_parameter(suite), |b| {
            b.iter(|| {
                seq = seq.wrapping_add(1);
                pkt[2..4].copy_from_slice(&seq.to_be_bytes());
                // Past the 2^16 wrap the index keeps growing; no reuse.
                black_box(tx.protect_rtp(&pkt, &mut out).unwrap())
            })
        });
    }
    g.finish();
}

/// The batch path: 64 packets of 64 streams through prepare/transform/commit.
fn batch<E: Engine + Clone>(c: &mut Criterion, engine: E) {
    let mut g = c.benchmark_group(format!("batch64/{}", engine.name()));
    g.throughput(Throughput::Elements(64));
    let suite = Suite::AES_CM_128_HMAC_SHA1_80;
    let mut tx = ctx(suite, engine.clone());
    let mut pkts: Vec<Vec<u8>> = (0..64).map(|s| rtp(s, 0)).collect();
    let mut bufs: Vec<Vec<u8>> = (0..64).map(|_| vec![0u8; 400]).collect();
    let mut preps = Vec::with_capacity(64);
    let mut outcomes = Vec::with_capacity(64);
    let mut seq = 0u16;
    g.bench_function(BenchmarkId::from_parameter(suite), |b| {
        b.iter(|| {
            seq = seq.wrapping_add(1);
            preps.clear();
            for (p, buf) in pkts.iter_mut().zip(bufs.iter_mut()) {
                p[2..4].copy_from_slice(&seq.to_be_bytes());
                preps.push(tx.prepare(Kind::Rtp, Op::Protect, p, buf).unwrap());
            }
            outcomes.clear();
            {
                let mut jobs: Vec<_> = preps.iter().zip(bufs.iter_mut()).map(|(p, b)| tx.job(p, b).unwrap()).collect();
                engine.transform(&mut jobs);
                outcomes.extend(jobs.iter().map(|j| j.outcome));
            }
            for ((p, o), buf) in preps.iter().zip(&outcomes).zip(&bufs) {
                black_box(tx.commit(p, *o, buf).unwrap());
            }
            debug_assert!(outcomes.iter().all(|o| *o == Outcome::Done));
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    protect(c, CpuEngine::new());
    protect(c, PortableEngine::new());
    batch(c, CpuEngine::new());
}

criterion_group!(engines, benches);
criterion_main!(engines);
