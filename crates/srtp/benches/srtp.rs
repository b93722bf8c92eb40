//! Criterion benchmarks of the engines (developers' view; the figures that
//! are recorded come from `srtpgate bench cpu`, beside libsrtp's).

use aes::cipher::{BlockEncrypt, KeyInit};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use srtp::engine::{Engine, Job, Op, Outcome};
use srtp::sha1mac::HmacSha1;
use srtp::sha1x::{MacBatch, LANES};
use srtp::{Context, CpuEngine, Kind, MacPath, MasterKey, Policy, PortableEngine, SessionKeys, Suite};
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

/// The engine's transform alone on `n` prepared 172-byte RTP packets of `n`
/// sessions (no context: no prepare, no commit). Protect re-encrypts the same
/// buffers; unprotect first copies each packet back from its protected form
/// (about 2 ns a packet, included).
fn transform<E: Engine>(c: &mut Criterion, group: &str, engine: &E, suite: Suite, n: usize) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(n as u64));
    let keys: Vec<E::Keys> = (0..n)
        .map(|i| {
            let k = SessionKeys::derive(
                suite,
                &vec![i as u8; suite.master_key_len()],
                &vec![7; suite.master_salt_len()],
                false,
                0,
            )
            .unwrap();
            engine.prepare_keys(&k).unwrap()
        })
        .collect();
    let mut bufs: Vec<Vec<u8>> = (0..n).map(|i| rtp(i as u32, 1).into_iter().chain([0; 16]).collect()).collect();
    fn job<'a, K>(suite: Suite, k: &'a K, op: Op, buf: &'a mut [u8]) -> Job<'a, K> {
        let mut iv = [0x42u8; 16];
        iv[14..].fill(0);
        Job {
            keys: k,
            op,
            iv,
            buf,
            enc_start: 12,
            enc_end: 172,
            auth_end: 172,
            suffix: [0; 4],
            suffix_len: if suite.is_aead() { 0 } else { 4 },
            tag_start: 172,
            tag_len: suite.srtp_tag_len(),
            outcome: Outcome::Pending,
        }
    }
    let protected: Vec<Vec<u8>> = {
        let mut jobs: Vec<_> = keys.iter().zip(bufs.iter_mut()).map(|(k, b)| job(suite, k, Op::Protect, b)).collect();
        engine.transform(&mut jobs);
        assert!(jobs.iter().all(|j| j.outcome == Outcome::Done));
        drop(jobs);
        bufs.clone()
    };
    let mut jobs: Vec<_> = keys.iter().zip(bufs.iter_mut()).map(|(k, b)| job(suite, k, Op::Protect, b)).collect();
    g.bench_function(BenchmarkId::new("protect", n), |b| b.iter(|| engine.transform(&mut jobs)));
    for j in jobs.iter_mut() {
        j.op = Op::Unprotect;
    }
    g.bench_function(BenchmarkId::new("unprotect", n), |b| {
        b.iter(|| {
            for (j, p) in jobs.iter_mut().zip(&protected) {
                j.buf.copy_from_slice(p);
            }
            engine.transform(&mut jobs);
        })
    });
    for (j, p) in jobs.iter_mut().zip(&protected) {
        j.buf.copy_from_slice(p);
    }
    engine.transform(&mut jobs);
    assert!(jobs.iter().all(|j| j.outcome == Outcome::Done), "{group}: unprotect failed");
    g.finish();
}

/// Batches of 1, 16 and 64 through the transform: AES_CM_128_HMAC_SHA1_80 on
/// the engine as chosen and forced onto every MAC path, and GCM.
fn batches(c: &mut Criterion) {
    for n in [1, 16, 64] {
        let suite = Suite::AES_CM_128_HMAC_SHA1_80;
        transform(c, &format!("transform/cpu/{suite}"), &CpuEngine::new(), suite, n);
        for path in MacPath::supported() {
            let e = CpuEngine::with_mac_path(path).expect("supported");
            transform(c, &format!("transform/cpu-{path}/{suite}"), &e, suite, n);
        }
        let suite = Suite::AEAD_AES_128_GCM;
        transform(c, &format!("transform/cpu/{suite}"), &CpuEngine::new(), suite, n);
    }
}

/// The primitives beside the engine: AES-128-CTR over 160 bytes, four SHA-1
/// compressions (the HMAC of a G.711 packet, one at a time), aws-lc's bare
/// GCM seal of the same packet, and 16 HMACs of 172 + 4 bytes on each path.
fn primitives(c: &mut Criterion) {
    let mut g = c.benchmark_group("primitive");
    let aes = aes::Aes128::new_from_slice(&[7u8; 16]).unwrap();
    let mut data = [0u8; 160];
    let mut i = 0u128;
    g.bench_function("aes128_ctr_160", |b| {
        b.iter(|| {
            i += 1 << 16;
            let mut blocks: [aes::Block; 10] = core::array::from_fn(|j| (i + j as u128).to_be_bytes().into());
            aes.encrypt_blocks(&mut blocks);
            for (d, k) in data.chunks_mut(16).zip(&blocks) {
                d.iter_mut().zip(k.iter()).for_each(|(d, k)| *d ^= k);
            }
            black_box(&data);
        })
    });
    let block = sha1::digest::generic_array::GenericArray::clone_from_slice(&[5u8; 64]);
    g.bench_function("sha1_4_compressions", |b| {
        b.iter(|| {
            let mut st = black_box([0x67452301u32, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0]);
            for _ in 0..4 {
                sha1::compress(&mut st, core::slice::from_ref(&block));
            }
            black_box(st)
        })
    });
    let key = aws_lc_rs::aead::LessSafeKey::new(
        aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_128_GCM, &[9u8; 16]).unwrap(),
    );
    let hdr = [0x80u8; 12];
    let mut n = 0u64;
    g.bench_function("aws_lc_gcm_seal_160", |b| {
        b.iter(|| {
            n += 1;
            let mut nonce = [0u8; 12];
            nonce[4..].copy_from_slice(&n.to_be_bytes());
            let tag = key.seal_in_place_separate_tag(
                aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce),
                aws_lc_rs::aead::Aad::from(&hdr),
                &mut data,
            );
            black_box(tag.ok());
            black_box(&data);
        })
    });
    g.finish();
    let mut g = c.benchmark_group("mac16");
    let keys: Vec<HmacSha1> = (0..LANES).map(|i| HmacSha1::new(&[i as u8; 20])).collect();
    let msgs: Vec<Vec<u8>> = (0..LANES).map(|i| rtp(i as u32, 1)).collect();
    for path in MacPath::supported() {
        for lanes in [1, 2, 4, 8, 16] {
            g.throughput(Throughput::Elements(lanes as u64));
            g.bench_function(BenchmarkId::new(path.name(), lanes), |b| {
                b.iter(|| {
                    let mut tags = [[0u8; 20]; LANES];
                    if path == MacPath::Single {
                        for (k, m) in keys.iter().zip(&msgs).take(lanes) {
                            black_box(k.mac(&[m, &[0, 0, 0, 1]]));
                        }
                    } else {
                        let mut batch = MacBatch::new();
                        for (k, m) in keys.iter().zip(&msgs).take(lanes) {
                            batch.push(k, m, &[0, 0, 0, 1]);
                        }
                        batch.compute(path, &mut tags).unwrap();
                    }
                    black_box(tags)
                })
            });
        }
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    primitives(c);
    batches(c);
    protect(c, CpuEngine::new());
    protect(c, PortableEngine::new());
    batch(c, CpuEngine::new());
}

criterion_group!(engines, benches);
criterion_main!(engines);
