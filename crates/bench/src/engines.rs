//! `srtpgate bench`: ns per operation and operations per second of the
//! engines, beside the cost of the bare primitives measured in the same run.
//!
//! One thread; pin it with `taskset` for stable figures. The packet is a
//! G.711 20 ms packet: 12-byte RTP header and 160-byte payload.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes_gcm::aead::AeadInPlace;
use clap::{Args, Subcommand};
use serde::Serialize;
use srtp::engine::Engine;
use srtp::{Context, CpuEngine, MasterKey, Policy, PortableEngine, Suite};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Arguments of `srtpgate bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    target: BenchTarget,
}

#[derive(Subcommand, Debug)]
enum BenchTarget {
    /// The CPU engines (`cpu`, `portable`) on one core.
    Cpu(CpuBench),
    /// The GPU engine.
    Gpu(GpuBench),
}

#[derive(Args, Debug)]
struct CpuBench {
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
    /// Only these suites (SDES names, comma-separated).
    #[arg(long, value_delimiter = ',')]
    suite: Vec<String>,
    /// Only these engines (cpu, portable; comma-separated).
    #[arg(long, value_delimiter = ',')]
    engine: Vec<String>,
    /// Stream counts to measure (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 10_000])]
    streams: Vec<usize>,
    /// Payload size in bytes.
    #[arg(long, default_value_t = 160)]
    payload: usize,
    /// Seconds of measurement per figure.
    #[arg(long, default_value_t = 0.4)]
    seconds: f64,
}

#[derive(Args, Debug)]
struct GpuBench {
    /// Print one JSON document instead of a table.
    #[arg(long)]
    json: bool,
    /// Batch sizes in packets (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 16, 256, 1024, 4096, 65_536, 1_048_576])]
    batch: Vec<usize>,
    /// Only these suites (SDES names, comma-separated; default: every GPU suite).
    #[arg(long, value_delimiter = ',')]
    suite: Vec<String>,
    /// Seconds per figure.
    #[arg(long, default_value_t = 0.3)]
    seconds: f64,
    /// Fewer repetitions (a smoke run).
    #[arg(long)]
    quick: bool,
    /// Only these sections (comma-separated): links, exact, kernel, pool,
    /// latency, packed, cpu, calibrate, blocks, one-packet. Default: all.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Submitting threads (relay workers) of the pool-resident figures.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 8, 16])]
    threads: Vec<usize>,
}

/// One measured figure, in the shape other tools read.
#[derive(Serialize, Debug, Clone)]
struct Record {
    engine: String,
    suite: String,
    op: String,
    payload: usize,
    streams: usize,
    ns_per_op: f64,
    ops_per_s: f64,
}

#[derive(Serialize)]
struct Report<'a> {
    machine: String,
    results: &'a [Record],
}

pub fn run(args: BenchArgs) -> Result<(), String> {
    match args.target {
        BenchTarget::Cpu(b) => cpu(b),
        BenchTarget::Gpu(g) => {
            let suites: Vec<Suite> = if g.suite.is_empty() {
                crate::gpubench::gpu_suites()
            } else {
                g.suite.iter().map(|s| s.parse::<Suite>().map_err(|e| e.to_string())).collect::<Result<_, _>>()?
            };
            if g.batch.iter().any(|&b| b == 0 || b > 4 << 20) {
                return Err("batch sizes must be 1..=4194304".into());
            }
            let opts = crate::gpubench::GpuBenchOptions {
                batches: g.batch,
                seconds: g.seconds,
                suites,
                quick: g.quick,
                only: g.only,
                threads: g.threads,
            };
            crate::gpubench::run(opts, g.json)
        }
    }
}

fn cpu(b: CpuBench) -> Result<(), String> {
    let suites: Vec<Suite> = if b.suite.is_empty() {
        Suite::ALL.to_vec()
    } else {
        b.suite.iter().map(|s| s.parse::<Suite>().map_err(|e| e.to_string())).collect::<Result<_, _>>()?
    };
    let engines: Vec<String> =
        if b.engine.is_empty() { vec!["cpu".into(), "portable".into()] } else { b.engine.clone() };
    if let Some(e) = engines.iter().find(|e| !matches!(e.as_str(), "cpu" | "portable")) {
        return Err(format!("unknown engine {e:?} (cpu, portable)"));
    }
    if b.payload > 1400 {
        return Err("payload must be at most 1400 bytes".into());
    }
    if b.streams.iter().any(|&s| s == 0 || s > 1_000_000) {
        return Err("stream counts must be 1..=1000000".into());
    }
    let budget = Duration::from_secs_f64(b.seconds.clamp(0.01, 60.0));
    let mut out = Vec::new();
    out.extend(primitives(b.payload, budget));
    if !b.json {
        print_table(&out);
    }
    for engine in &engines {
        for &suite in &suites {
            for &streams in &b.streams {
                let recs = match engine.as_str() {
                    "cpu" => measure(CpuEngine::new(), suite, b.payload, streams, budget)?,
                    _ => measure(PortableEngine::new(), suite, b.payload, streams, budget)?,
                };
                if !b.json {
                    print_table(&recs);
                }
                out.extend(recs);
            }
        }
    }
    if b.json {
        let report = Report { machine: crate::machine::machine(), results: &out };
        println!("{}", serde_json::to_string(&report).map_err(|e| e.to_string())?);
    }
    Ok(())
}

fn print_table(recs: &[Record]) {
    for r in recs {
        println!(
            "{:<9} {:<24} {:<16} {:>5} B {:>6} streams {:>9.1} ns/op {:>12.0} ops/s",
            r.engine, r.suite, r.op, r.payload, r.streams, r.ns_per_op, r.ops_per_s
        );
    }
}

fn record(engine: &str, suite: &str, op: &str, payload: usize, streams: usize, ns: f64) -> Record {
    Record {
        engine: engine.into(),
        suite: suite.into(),
        op: op.into(),
        payload,
        streams,
        ns_per_op: (ns * 10.0).round() / 10.0,
        ops_per_s: (1e9 / ns).round(),
    }
}

/// Runs `f` (which does `n` operations) until `budget` is spent, in rounds;
/// returns the median ns per operation over the rounds.
fn time_rounds(budget: Duration, n: usize, mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    let mut samples = Vec::new();
    while start.elapsed() < budget || samples.len() < 3 {
        let t = Instant::now();
        f();
        samples.push(t.elapsed().as_nanos() as f64 / n as f64);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

/// The cost of the primitives alone (RustCrypto, the crates the cpu engine
/// uses): AES-128-CTR over the payload plus the SHA-1 blocks of HMAC over
/// header + payload + ROC with precomputed pad states; and AES-128-GCM.
fn primitives(payload: usize, budget: Duration) -> Vec<Record> {
    let aes = aes::Aes128::new_from_slice(&[7u8; 16]).expect("16-byte key");
    let mut data = vec![0u8; payload];
    let blocks_n = payload.div_ceil(16);
    let n = 10_000;
    let mut blocks = vec![aes::Block::default(); blocks_n];
    let ctr = time_rounds(budget, n, || {
        for i in 0..n {
            let base = (i as u128) << 16;
            for (j, b) in blocks.iter_mut().enumerate() {
                *b = (base + j as u128).to_be_bytes().into();
            }
            aes.encrypt_blocks(&mut blocks);
            for (d, k) in data.chunks_mut(16).zip(blocks.iter()) {
                for (d, k) in d.iter_mut().zip(k.iter()) {
                    *d ^= k;
                }
            }
            black_box(&data);
        }
    });
    // HMAC input: 12 + payload + 4 bytes after the 64-byte ipad block, plus the
    // outer block: ceil((64 + 12 + payload + 4 + 9) / 64) - 1 + 1 blocks.
    let sha_blocks = (64 + 12 + payload + 4 + 9).div_ceil(64) - 1 + 1;
    let block = sha1::digest::generic_array::GenericArray::clone_from_slice(&[5u8; 64]);
    let sha = time_rounds(budget, n, || {
        for _ in 0..n {
            let mut st = [0x67452301u32, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];
            for _ in 0..sha_blocks {
                sha1::compress(&mut st, core::slice::from_ref(&block));
            }
            black_box(st);
        }
    });
    let gcm = aes_gcm::Aes128Gcm::new_from_slice(&[9u8; 16]).expect("16-byte key");
    let hdr = [0x80u8; 12];
    let seal = time_rounds(budget, n, || {
        for i in 0..n {
            let mut nonce = [0u8; 12];
            nonce[4..].copy_from_slice(&(i as u64).to_be_bytes());
            let tag = gcm.encrypt_in_place_detached((&nonce).into(), &hdr, &mut data);
            black_box((&data, tag.ok()));
        }
    });
    let key = aws_lc_rs::aead::LessSafeKey::new(
        aws_lc_rs::aead::UnboundKey::new(&aws_lc_rs::aead::AES_128_GCM, &[9u8; 16]).expect("16-byte key"),
    );
    let aws_seal = time_rounds(budget, n, || {
        for i in 0..n {
            let mut nonce = [0u8; 12];
            nonce[4..].copy_from_slice(&(i as u64).to_be_bytes());
            let tag = key.seal_in_place_separate_tag(
                aws_lc_rs::aead::Nonce::assume_unique_for_key(nonce),
                aws_lc_rs::aead::Aad::from(&hdr),
                &mut data,
            );
            black_box((&data, tag.ok()));
        }
    });
    let s = Suite::AES_CM_128_HMAC_SHA1_80.name();
    vec![
        record("aws-lc", Suite::AEAD_AES_128_GCM.name(), "gcm_seal", payload, 1, aws_seal),
        record("rustcrypto", s, "aes128_ctr", payload, 1, ctr),
        record("rustcrypto", s, &format!("sha1_{sha_blocks}blocks"), payload, 1, sha),
        record("rustcrypto", s, "primitive_limit", payload, 1, ctr + sha),
        record("rustcrypto", Suite::AEAD_AES_128_GCM.name(), "gcm_seal", payload, 1, seal),
    ]
}

fn rtp(ssrc: u32, seq: u16, payload: usize) -> Vec<u8> {
    let mut p = vec![0x80, 0x00];
    p.extend(seq.to_be_bytes());
    p.extend(0u32.to_be_bytes());
    p.extend(ssrc.to_be_bytes());
    p.resize(12 + payload, 0xd5);
    p
}

fn policy(suite: Suite, streams: usize) -> Result<Policy, String> {
    let key: Vec<u8> = (1..=suite.master_key_len() as u8).collect();
    let salt: Vec<u8> = (50..50 + suite.master_salt_len() as u8).collect();
    let mut p = Policy::new(suite, MasterKey::new(suite, &key, &salt).map_err(|e| e.to_string())?);
    p.max_streams = streams;
    Ok(p)
}

/// Protect and unprotect of `streams` SSRCs round-robin in one context.
fn measure<E: Engine + Clone>(
    engine: E,
    suite: Suite,
    payload: usize,
    streams: usize,
    budget: Duration,
) -> Result<Vec<Record>, String> {
    let name = engine.name();
    let err = |e: srtp::Error| e.to_string();
    // Protect: one packet buffer, as a relay's receive buffer is, rewritten
    // with the next stream's SSRC and sequence number: what grows with the
    // number of streams is the per-stream state, not the packet memory.
    let mut tx = Context::new(policy(suite, streams)?, engine.clone()).map_err(err)?;
    let mut pkt = rtp(0x1000, 0, payload);
    let mut out = vec![0u8; 12 + payload + srtp::MAX_TRAILER_LEN];
    let mut seq = 0u16;
    for s in 0..streams {
        tx.protect_rtp(&rtp(0x1000 + s as u32, 0, payload), &mut out).map_err(err)?;
    }
    let per_round = (20_000 / streams).max(1) * streams;
    let mut failed = None;
    let protect = time_rounds(budget, per_round, || {
        for i in 0..per_round {
            let s = i % streams;
            if s == 0 {
                seq = seq.wrapping_add(1);
            }
            pkt[2..4].copy_from_slice(&seq.to_be_bytes());
            pkt[8..12].copy_from_slice(&(0x1000 + s as u32).to_be_bytes());
            if let Err(e) = tx.protect_rtp(&pkt, &mut out) {
                failed = Some(e);
            }
            black_box(&out);
        }
    });
    if let Some(e) = failed {
        return Err(format!("{name} {suite} protect: {e}"));
    }

    // Unprotect: pre-protected packets (distinct per stream, so read from a
    // larger array), in rounds over a fresh receiver whose streams were
    // created (untimed) by each stream's first packet.
    let rounds_per_stream = (40_000 / streams).clamp(2, 20_000);
    let mut sender = Context::new(policy(suite, streams)?, engine.clone()).map_err(err)?;
    let mut wire: Vec<Vec<u8>> = Vec::with_capacity(rounds_per_stream * streams);
    for r in 0..rounds_per_stream {
        for s in 0..streams {
            let n = sender.protect_rtp(&rtp(0x1000 + s as u32, r as u16, payload), &mut out).map_err(err)?;
            wire.push(out[..n].to_vec());
        }
    }
    let timed = &wire[streams..];
    let mut back = vec![0u8; 12 + payload + srtp::MAX_TRAILER_LEN];
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed() < budget || samples.len() < 3 {
        let mut rx = Context::new(policy(suite, streams)?, engine.clone()).map_err(err)?;
        for w in &wire[..streams] {
            rx.unprotect_rtp(w, &mut back).map_err(err)?;
        }
        let t = Instant::now();
        for w in timed {
            if let Err(e) = rx.unprotect_rtp(w, &mut back) {
                failed = Some(e);
            }
            black_box(&back);
        }
        samples.push(t.elapsed().as_nanos() as f64 / timed.len() as f64);
    }
    if let Some(e) = failed {
        return Err(format!("{name} {suite} unprotect: {e}"));
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    let unprotect = samples[samples.len() / 2];
    Ok(vec![
        record(name, suite.name(), "protect", payload, streams, protect),
        record(name, suite.name(), "unprotect", payload, streams, unprotect),
    ])
}
