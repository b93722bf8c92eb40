//! `srtpgate bench`: ns per operation and operations per second of the
//! engines, beside the cost of the bare primitives measured in the same run.
//!
//! One thread; pin it with `taskset` for stable figures. The packet is a
//! G.711 20 ms packet: 12-byte RTP header and 160-byte payload.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes_gcm::aead::AeadInPlace;
use clap::{Args, Subcommand};
use serde::Serialize;
use srtp::engine::{Engine, Op, Outcome};
use srtp::{Context, CpuEngine, Kind, MacPath, MasterKey, Policy, PortableEngine, Suite};
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
    /// Packets per engine call (repeatable or comma-separated). A batch of 1
    /// is the one-shot path (`protect_rtp`); larger batches go through
    /// prepare, one transform, commit.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize])]
    batch: Vec<usize>,
    /// HMAC paths of the cpu engine (repeatable or comma-separated): auto
    /// (as chosen for this CPU), avx512, avx2, shani, single.
    #[arg(long = "mac-path", value_delimiter = ',', default_values_t = ["auto".to_string()])]
    mac_path: Vec<String>,
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
    /// Frame pitches in bytes of the pool section (comma-separated): packets
    /// at the start of frames this far apart, instead of the relay's two
    /// layouts (its pool and AF_XDP's frames): 188..=8192 bytes.
    #[arg(long, value_delimiter = ',')]
    pitch: Vec<usize>,
    /// Submission lanes of the engines (0: one per core, at most 16). In the
    /// persistent mode the lanes share the SMs out: a relay with W workers
    /// runs W + 1 lanes.
    #[arg(long, default_value_t = 0)]
    lanes: usize,
    /// GPUs the engines spread their lanes over: the first N (0: every
    /// visible GPU). Run with 1 and with all to measure the scaling.
    #[arg(long, default_value_t = 0)]
    gpus: usize,
}

/// One measured figure, in the shape other tools read.
#[derive(Serialize, Debug, Clone)]
struct Record {
    engine: String,
    suite: String,
    /// `protect`, `unprotect` (through the context: prepare, transform,
    /// commit), `protect_transform`, `unprotect_transform` (the engine's
    /// transform alone), or a primitive's name.
    op: String,
    payload: usize,
    streams: usize,
    ns_per_op: f64,
    ops_per_s: f64,
    /// Packets per engine call.
    batch: usize,
    /// The cpu engine's HMAC path (`auto:avx512` where chosen for this CPU);
    /// null for other engines and the primitives.
    mac_path: Option<String>,
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
                pitches: g.pitch,
                lanes: g.lanes,
                gpus: g.gpus,
            };
            crate::gpubench::run(opts, g.json)
        }
    }
}

/// An engine of `srtpgate-bench engines cpu`: the cpu engine on a MAC path,
/// or the portable engine.
enum Bench {
    Cpu(CpuEngine, String),
    Portable,
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
    if b.batch.iter().any(|&n| n == 0 || n > 4096) {
        return Err("batch sizes must be 1..=4096".into());
    }
    let mut benches = Vec::new();
    for engine in &engines {
        if engine == "portable" {
            benches.push(Bench::Portable);
            continue;
        }
        for p in &b.mac_path {
            if p == "auto" {
                let e = CpuEngine::new();
                benches.push(Bench::Cpu(e, format!("auto:{}", e.mac_path())));
                continue;
            }
            let path: MacPath = p.parse()?;
            match CpuEngine::with_mac_path(path) {
                Some(e) => benches.push(Bench::Cpu(e, path.to_string())),
                None => eprintln!("skipped: this CPU lacks the {path} MAC path"),
            }
        }
    }
    let budget = Duration::from_secs_f64(b.seconds.clamp(0.01, 60.0));
    let mut out = Vec::new();
    out.extend(primitives(b.payload, budget));
    if !b.json {
        print_table(&out);
    }
    for bench in &benches {
        for &suite in &suites {
            for &streams in &b.streams {
                for &batch in &b.batch {
                    let shape = Shape { suite, payload: b.payload, streams, batch };
                    let recs = match bench {
                        Bench::Cpu(e, path) => measure(*e, Some(path), shape, budget)?,
                        Bench::Portable => measure(PortableEngine::new(), None, shape, budget)?,
                    };
                    if !b.json {
                        print_table(&recs);
                    }
                    out.extend(recs);
                }
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
            "{:<9} {:<13} {:<24} {:<20} {:>5} B {:>6} streams {:>5} batch {:>9.1} ns/op {:>12.0} ops/s",
            r.engine,
            r.mac_path.as_deref().unwrap_or("-"),
            r.suite,
            r.op,
            r.payload,
            r.streams,
            r.batch,
            r.ns_per_op,
            r.ops_per_s
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
        batch: 1,
        mac_path: None,
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

/// What one call of [`measure`] measures.
#[derive(Clone, Copy)]
struct Shape {
    suite: Suite,
    payload: usize,
    streams: usize,
    batch: usize,
}

/// Protect and unprotect of `streams` SSRCs round-robin in one context, in
/// engine calls of `batch` packets (1: the one-shot path), and the engine's
/// transform alone on `batch` prepared packets.
fn measure<E: Engine + Clone>(
    engine: E,
    mac_path: Option<&str>,
    shape: Shape,
    budget: Duration,
) -> Result<Vec<Record>, String> {
    let Shape { suite, payload, streams, batch } = shape;
    let name = engine.name();
    let (protect, unprotect) =
        if batch == 1 { one_shot(&engine, shape, budget)? } else { batched(&engine, shape, budget)? };
    let (protect_t, unprotect_t) = transform_only(&engine, suite, payload, batch, budget)?;
    let rec = |op: &str, ns: f64| Record {
        batch,
        mac_path: mac_path.map(str::to_string),
        ..record(name, suite.name(), op, payload, streams, ns)
    };
    Ok(vec![
        rec("protect", protect),
        rec("unprotect", unprotect),
        rec("protect_transform", protect_t),
        rec("unprotect_transform", unprotect_t),
    ])
}

/// One packet of `payload` bytes unprotected and protected through a `cpu`
/// engine context, alone (the loops of `engines cpu --batch 1`): ns each,
/// unprotect first. `srtpgate-bench nic` shows them beside the relay's cost
/// per packet.
pub(crate) fn one_packet_ns(suite: Suite, payload: usize) -> Result<(f64, f64), String> {
    let shape = Shape { suite, payload, streams: 1, batch: 1 };
    let (protect, unprotect) = one_shot(&CpuEngine::new(), shape, Duration::from_millis(300))?;
    Ok((unprotect, protect))
}

/// Protect and unprotect one packet at a time (`protect_rtp`,
/// `unprotect_rtp`): the loops of the figures from before batches, kept as
/// they were so that those stay comparable. Returns ns per packet.
#[inline(never)]
fn one_shot<E: Engine + Clone>(engine: &E, shape: Shape, budget: Duration) -> Result<(f64, f64), String> {
    let Shape { suite, payload, streams, .. } = shape;
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
    Ok((protect, samples[samples.len() / 2]))
}

/// Protect and unprotect in engine calls of `batch` packets: prepare each,
/// one transform, commit each ([`run_batch`]). Returns ns per packet.
#[inline(never)]
fn batched<E: Engine + Clone>(engine: &E, shape: Shape, budget: Duration) -> Result<(f64, f64), String> {
    let Shape { suite, payload, streams, batch } = shape;
    let name = engine.name();
    let err = |e: srtp::Error| e.to_string();
    // Protect: one packet buffer per batch slot, rewritten with the next
    // stream's SSRC and sequence number.
    let mut tx = Context::new(policy(suite, streams)?, engine.clone()).map_err(err)?;
    let mut pkts: Vec<Vec<u8>> = (0..batch).map(|_| rtp(0x1000, 0, payload)).collect();
    let mut outs: Vec<Vec<u8>> = (0..batch).map(|_| vec![0u8; 12 + payload + srtp::MAX_TRAILER_LEN]).collect();
    let mut seq = 0u16;
    for s in 0..streams {
        tx.protect_rtp(&rtp(0x1000 + s as u32, 0, payload), &mut outs[0]).map_err(err)?;
    }
    let per_round = (20_000 / streams.max(batch)).max(1) * streams.max(batch) / batch * batch;
    let mut failed = None;
    let mut preps = Vec::with_capacity(batch);
    let mut outcomes = Vec::with_capacity(batch);
    let mut next = 0usize;
    let protect = time_rounds(budget, per_round, || {
        for _ in 0..per_round / batch {
            for pkt in pkts.iter_mut() {
                let s = next % streams;
                next += 1;
                if s == 0 {
                    seq = seq.wrapping_add(1);
                }
                pkt[2..4].copy_from_slice(&seq.to_be_bytes());
                pkt[8..12].copy_from_slice(&(0x1000 + s as u32).to_be_bytes());
            }
            if let Err(e) = run_batch(&mut tx, Op::Protect, &pkts, &mut outs, &mut preps, &mut outcomes) {
                failed = Some(e);
            }
            black_box(&outs);
        }
    });
    if let Some(e) = failed {
        return Err(format!("{name} {suite} protect: {e}"));
    }
    // Unprotect: as in `one_shot`, `batch` packets per engine call.
    let rounds_per_stream = (40_000 / streams).clamp(2, 20_000).max(batch.div_ceil(streams) + 1);
    let mut sender = Context::new(policy(suite, streams)?, engine.clone()).map_err(err)?;
    let mut wire: Vec<Vec<u8>> = Vec::with_capacity(rounds_per_stream * streams);
    for r in 0..rounds_per_stream {
        for s in 0..streams {
            let n = sender.protect_rtp(&rtp(0x1000 + s as u32, r as u16, payload), &mut outs[0]).map_err(err)?;
            wire.push(outs[0][..n].to_vec());
        }
    }
    let timed = &wire[streams..];
    let timed = &timed[..timed.len() / batch * batch];
    let mut samples = Vec::new();
    let start = Instant::now();
    while start.elapsed() < budget || samples.len() < 3 {
        let mut rx = Context::new(policy(suite, streams)?, engine.clone()).map_err(err)?;
        for w in &wire[..streams] {
            rx.unprotect_rtp(w, &mut outs[0]).map_err(err)?;
        }
        let t = Instant::now();
        for chunk in timed.chunks(batch) {
            if let Err(e) = run_batch(&mut rx, Op::Unprotect, chunk, &mut outs, &mut preps, &mut outcomes) {
                failed = Some(e);
            }
            black_box(&outs);
        }
        samples.push(t.elapsed().as_nanos() as f64 / timed.len() as f64);
    }
    if let Some(e) = failed {
        return Err(format!("{name} {suite} unprotect: {e}"));
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    Ok((protect, samples[samples.len() / 2]))
}

/// One engine call over `pkts`: prepare each into `outs`, one transform,
/// commit each. `preps` and `outcomes` are reused buffers.
fn run_batch<E: Engine>(
    ctx: &mut Context<E>,
    op: Op,
    pkts: &[Vec<u8>],
    outs: &mut [Vec<u8>],
    preps: &mut Vec<srtp::Prepared>,
    outcomes: &mut Vec<Outcome>,
) -> Result<(), srtp::Error> {
    preps.clear();
    for (p, o) in pkts.iter().zip(outs.iter_mut()) {
        preps.push(ctx.prepare(Kind::Rtp, op, p, o)?);
    }
    outcomes.clear();
    {
        let mut jobs = preps.iter().zip(outs.iter_mut()).map(|(p, o)| ctx.job(p, o)).collect::<Result<Vec<_>, _>>()?;
        ctx.engine().transform(&mut jobs);
        outcomes.extend(jobs.iter().map(|j| j.outcome));
    }
    for ((p, o), b) in preps.iter().zip(outcomes.iter()).zip(outs.iter()) {
        ctx.commit(p, *o, b)?;
    }
    Ok(())
}

/// The engine's transform alone (no prepare, no commit) on `batch` packets
/// of `batch` streams prepared once: protect re-encrypts the same buffers;
/// unprotect copies each protected packet back first (included: a few ns).
/// Returns ns per packet (protect, unprotect).
fn transform_only<E: Engine + Clone>(
    engine: &E,
    suite: Suite,
    payload: usize,
    batch: usize,
    budget: Duration,
) -> Result<(f64, f64), String> {
    let err = |e: srtp::Error| e.to_string();
    let mut tx = Context::new(policy(suite, batch)?, engine.clone()).map_err(err)?;
    let pkts: Vec<Vec<u8>> = (0..batch).map(|s| rtp(0x2000 + s as u32, 1, payload)).collect();
    let mut outs: Vec<Vec<u8>> = (0..batch).map(|_| vec![0u8; 12 + payload + srtp::MAX_TRAILER_LEN]).collect();
    let preps = pkts
        .iter()
        .zip(outs.iter_mut())
        .map(|(p, o)| tx.prepare(Kind::Rtp, Op::Protect, p, o))
        .collect::<Result<Vec<_>, _>>();
    let preps = preps.map_err(err)?;
    let reps = (20_000 / batch).max(1);
    let mut jobs =
        preps.iter().zip(outs.iter_mut()).map(|(p, o)| tx.job(p, o)).collect::<Result<Vec<_>, _>>().map_err(err)?;
    engine.transform(&mut jobs);
    let protected: Vec<Vec<u8>> = jobs.iter().map(|j| j.buf.to_vec()).collect();
    let protect = time_rounds(budget, reps * batch, || {
        for _ in 0..reps {
            engine.transform(&mut jobs);
        }
        black_box(&jobs);
    });
    for j in jobs.iter_mut() {
        j.op = Op::Unprotect;
    }
    let unprotect = time_rounds(budget, reps * batch, || {
        for _ in 0..reps {
            for (j, p) in jobs.iter_mut().zip(&protected) {
                j.buf.copy_from_slice(p);
            }
            engine.transform(&mut jobs);
        }
        black_box(&jobs);
    });
    if jobs.iter().any(|j| j.outcome != Outcome::Done) {
        return Err(format!("{} {suite}: the transform-only unprotect failed", engine.name()));
    }
    Ok((protect, unprotect))
}
