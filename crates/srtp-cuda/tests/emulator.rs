//! Bit-exactness of the kernels' device code against the CPU engine, through
//! the host emulator (`kernels/emu_main.c`: `srtp.cu` compiled by the system
//! C compiler). No GPU needed.
//!
//! Random batches mix every suite the kernels implement (AES-CM 128/192/256
//! with 80- and 32-bit tags, NULL, GCM 128/256), protect and unprotect, SRTP-
//! and SRTCP-shaped jobs, jobs with arbitrary (unaligned, overlapping) offsets,
//! payloads up to 1500 bytes and a few past 4 KiB (the T-table hoisting
//! boundary), counters about to wrap byte 15 / byte 14 / all 128 bits,
//! corrupted tags and malformed descriptors. Each job's expected result comes
//! from `srtp::CpuEngine`; the emulator must give the same outcome and, for a
//! success, the same bytes. A failed job must leave its packet untouched (a
//! property of these kernels; the engine contract leaves it unspecified), and
//! no byte of the data region outside the packets may change.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use srtp::cpu::CpuKeys;
use srtp::engine::{Engine, Job, Op, Outcome};
use srtp::{CpuEngine, SessionKeys, Suite};
use srtp_cuda::layout::{self, Batch, DESC_WORDS, D_OUTCOME, KEY_WORDS};
use std::path::{Path, PathBuf};
use std::process::Command;

const KERNELS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels");

/// Builds the emulator, with AddressSanitizer and UBSan when the compiler has
/// them (every packet runs in its own exactly-sized heap buffer, so any access
/// outside the packet aborts). None (after [`srtpgate_testkit::skip`]) without a compiler.
fn build_emulator() -> Option<PathBuf> {
    // Built once per test binary: the tests run in parallel, and one must not
    // execute the file while another is still writing it.
    static EMU: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    EMU.get_or_init(build_emulator_once).clone()
}

fn build_emulator_once() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let src = format!("{KERNELS}/emu_main.c");
    let base = ["-O2", "-std=c11", "-Wall", "-Wextra", "-Werror", "-x", "c", &src];
    let mut last_err = String::new();
    for (name, extra) in [
        ("srtp-emu-asan", &["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"][..]),
        ("srtp-emu", &[][..]),
    ] {
        let out = dir.join(name);
        match Command::new("cc").args(base).args(extra).arg("-o").arg(&out).output() {
            Ok(o) if o.status.success() => {
                eprintln!("emulator: {} {}", out.display(), extra.join(" "));
                return Some(out);
            }
            Ok(o) => last_err = String::from_utf8_lossy(&o.stderr).into_owned(),
            Err(e) => {
                srtpgate_testkit::skip("cc", "kernel emulator tests", format!("no C compiler: {e}"));
                return None;
            }
        }
    }
    panic!("the emulator does not compile:\n{last_err}");
}

fn run_emulator(emu: &Path, batch: &Batch, tag: &str) -> Batch {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let input = dir.join(format!("batch-{tag}.in"));
    let output = dir.join(format!("batch-{tag}.out"));
    std::fs::write(&input, layout::write_batch(batch)).unwrap();
    let o = Command::new(emu).arg(&input).arg(&output).output().expect("run emulator");
    assert!(o.status.success(), "emulator failed on {tag}: {}", String::from_utf8_lossy(&o.stderr));
    layout::read_batch(&std::fs::read(&output).unwrap()).unwrap()
}

/// The kernels' suites (AES-f8 stays on the CPU).
const SUITES: [Suite; 10] = srtp_cuda::KERNEL_SUITES;

fn random_keys(rng: &mut StdRng, suite: Suite) -> SessionKeys {
    let mut v = |n: usize| (0..n).map(|_| rng.random()).collect::<Vec<u8>>();
    let (enc, salt, auth) = (v(suite.session_key_len()), v(suite.session_salt_len()), v(suite.auth_key_len()));
    SessionKeys::from_raw(suite, &enc, &salt, &auth).unwrap()
}

/// One job: its key, its fields and its input packet.
#[derive(Clone, Debug)]
struct Spec {
    key: usize,
    op: Op,
    iv: [u8; 16],
    buf: Vec<u8>,
    enc_start: usize,
    enc_end: usize,
    auth_end: usize,
    suffix: [u8; 4],
    suffix_len: usize,
    tag_start: usize,
    tag_len: usize,
}

/// Runs `spec` on the CPU engine: (outcome, bytes after).
fn cpu_run(keys: &CpuKeys, spec: &Spec) -> (Outcome, Vec<u8>) {
    let mut buf = spec.buf.clone();
    let mut jobs = [Job {
        keys,
        op: spec.op,
        iv: spec.iv,
        buf: &mut buf,
        enc_start: spec.enc_start,
        enc_end: spec.enc_end,
        auth_end: spec.auth_end,
        suffix: spec.suffix,
        suffix_len: spec.suffix_len,
        tag_start: spec.tag_start,
        tag_len: spec.tag_len,
        outcome: Outcome::Pending,
    }];
    CpuEngine::new().transform(&mut jobs);
    let outcome = jobs[0].outcome;
    (outcome, buf)
}

fn payload_len(rng: &mut StdRng) -> usize {
    match rng.random_range(0..100) {
        0..=3 => rng.random_range(4097..9000),
        4..=9 => rng.random_range(0..48),
        _ => rng.random_range(0..1500),
    }
}

/// A counter block, often with its low bytes about to wrap.
fn random_iv(rng: &mut StdRng) -> [u8; 16] {
    let mut iv: [u8; 16] = rng.random();
    match rng.random_range(0..8) {
        0 => iv[15] = 0xff - rng.random_range(0..4),
        1 => {
            iv[14] = 0xff;
            iv[15] = rng.random_range(0xf0..=0xff);
        }
        2 => {
            iv = [0xff; 16];
            iv[15] = rng.random_range(0xe0..=0xff);
        }
        3 => iv[14..].fill(0), // RFC 3711: the low 16 bits start at zero
        _ => {}
    }
    iv
}

/// A well-formed job for `suite` (before the protect/unprotect decision).
fn random_spec(rng: &mut StdRng, key: usize, suite: Suite) -> Spec {
    let gcm = suite.is_aead();
    let mut s = Spec {
        key,
        op: Op::Protect,
        iv: random_iv(rng),
        buf: Vec::new(),
        enc_start: 0,
        enc_end: 0,
        auth_end: 0,
        suffix: rng.random(),
        suffix_len: 0,
        tag_start: 0,
        tag_len: 0,
    };
    let shape = rng.random_range(0..10);
    let len;
    if shape < 5 {
        // SRTP: header (CSRCs, maybe an extension; rarely an unaligned size),
        // payload, optional MKI, tag; the ROC as suffix for HMAC.
        let h = if rng.random_range(0..8) == 0 { rng.random_range(0..200) } else { 12 + 4 * rng.random_range(0..20) };
        let p = payload_len(rng);
        s.enc_start = h;
        s.enc_end = h + p;
        s.auth_end = h + p;
        s.tag_len = suite.srtp_tag_len();
        let mki = if gcm { 0 } else { [0, 0, 0, 1, 4][rng.random_range(0..5)] };
        s.tag_start = h + p + mki;
        s.suffix_len = if gcm { 0 } else { 4 };
        len = s.tag_start + s.tag_len;
    } else if shape < 8 {
        // SRTCP: 8-byte header, payload (maybe unencrypted), index word, tag.
        // GCM: the E-flag and index word as the AAD suffix.
        let p = payload_len(rng);
        s.enc_start = 8;
        s.enc_end = if rng.random_range(0..6) == 0 { 8 } else { 8 + p };
        if gcm {
            s.tag_start = s.enc_end;
            s.suffix_len = 4;
            if s.enc_end == 8 {
                // Unencrypted SRTCP: the whole packet is AAD (long, split path).
                s.enc_start = 8 + p;
                s.enc_end = 8 + p;
                s.tag_start = 8 + p;
            }
        } else {
            s.auth_end = 8 + p + 4;
            s.tag_start = s.auth_end;
        }
        s.tag_len = suite.srtcp_tag_len();
        len = s.tag_start + s.tag_len;
    } else {
        // Arbitrary offsets inside a random buffer (unaligned, overlapping).
        len = rng.random_range(0..400);
        if gcm {
            let l = len.max(16);
            let a = rng.random_range(0..=l - 16);
            let b = rng.random_range(0..=l - 16);
            s.enc_start = a.min(b);
            s.enc_end = a.max(b);
            s.tag_start = s.enc_end;
            s.tag_len = 16;
            s.suffix_len = rng.random_range(0..=4);
            s.buf = (0..l).map(|_| rng.random()).collect();
            return s;
        }
        let a = rng.random_range(0..=len);
        let b = rng.random_range(0..=len);
        s.enc_start = a.min(b);
        s.enc_end = a.max(b);
        s.auth_end = rng.random_range(0..=len);
        s.tag_len = rng.random_range(0..=20.min(len));
        s.tag_start = rng.random_range(0..=len - s.tag_len);
        s.suffix_len = rng.random_range(0..=4);
    }
    let extra = if rng.random_range(0..10) == 0 { rng.random_range(1..20) } else { 0 };
    s.buf = (0..len + extra).map(|_| rng.random()).collect();
    s
}

/// Breaks one rule of well-formedness (or a kind's own rule). Returns true if
/// the CPU engine cannot run the result (HMAC tag over 20 bytes: it would
/// panic), whose expected outcome is then AuthFailed.
fn make_malformed(rng: &mut StdRng, s: &mut Spec, gcm: bool) -> bool {
    let len = s.buf.len();
    match rng.random_range(0..7) {
        0 => s.enc_end = len + rng.random_range(1..100),
        1 => s.auth_end = len + 1,
        2 => s.tag_start = len - s.tag_len.min(len) + rng.random_range(1..5),
        3 => {
            s.enc_start = s.enc_end + 1;
            s.buf.extend_from_slice(&[0; 2]);
        }
        4 => s.suffix_len = 5,
        5 if gcm => s.tag_len = 12,
        6 if gcm => {
            s.tag_start = s.enc_end + 1;
            s.buf.push(0);
        }
        _ if !gcm => {
            s.tag_len = 21;
            s.tag_start = 0;
            s.buf.resize(s.buf.len().max(30), 0);
            return true;
        }
        _ => s.enc_end = usize::MAX,
    }
    false
}

/// Corrupts an authenticated byte, the tag or the suffix of a protected packet.
fn corrupt(rng: &mut StdRng, s: &mut Spec, gcm: bool) {
    let bit = 1u8 << rng.random_range(0..8);
    match rng.random_range(0..3) {
        0 if s.tag_len > 0 => s.buf[s.tag_start + rng.random_range(0..s.tag_len)] ^= bit,
        1 if s.suffix_len > 0 => s.suffix[rng.random_range(0..s.suffix_len)] ^= bit,
        _ => {
            let end = if gcm { s.enc_end } else { s.auth_end };
            if end > 0 {
                s.buf[rng.random_range(0..end)] ^= bit;
            } else if s.tag_len > 0 {
                s.buf[s.tag_start] ^= bit;
            }
        }
    }
}

struct Expect {
    offset: usize,
    outcome: Outcome,
    bytes: Vec<u8>,
}

fn run_batch(emu: &Path, seed: u64, jobs_per_batch: usize) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    // Key slots: two per suite, then an AES-f8 slot (unsupported kind).
    let mut session = Vec::new();
    for suite in SUITES.iter().chain(SUITES.iter()) {
        session.push(random_keys(&mut rng, *suite));
    }
    session.push(random_keys(&mut rng, Suite::F8_128_HMAC_SHA1_80));
    let engine = CpuEngine::new();
    let cpu_keys: Vec<CpuKeys> = session.iter().map(|k| engine.prepare_keys(k).unwrap()).collect();
    let mut batch = Batch::default();
    for k in &session {
        batch.keys.extend_from_slice(&layout::key_slot(k));
    }
    let f8_slot = session.len() - 1;

    let mut specs = Vec::new();
    let mut expects = Vec::new();
    let mut failures = 0;
    for _ in 0..jobs_per_batch {
        let key = if rng.random_range(0..100) == 0 { f8_slot } else { rng.random_range(0..f8_slot) };
        let suite = session[key].suite();
        let gcm = suite.is_aead();
        let mut s = random_spec(&mut rng, key, suite);
        if rng.random_bool(0.5) {
            // Unprotect a packet the CPU engine protected.
            let (o, protected) = cpu_run(&cpu_keys[key.min(f8_slot)], &s);
            assert_eq!(o, Outcome::Done);
            s.buf = protected;
            s.op = Op::Unprotect;
            if rng.random_range(0..8) == 0 {
                corrupt(&mut rng, &mut s, gcm);
            }
        }
        let mut cpu_cannot = false;
        if rng.random_range(0..30) == 0 {
            cpu_cannot = make_malformed(&mut rng, &mut s, gcm);
        }
        let (outcome, bytes) = if key == f8_slot || cpu_cannot {
            (Outcome::AuthFailed, s.buf.clone())
        } else {
            cpu_run(&cpu_keys[key], &s)
        };
        let bytes = if outcome == Outcome::Done { bytes } else { s.buf.clone() };
        failures += usize::from(outcome != Outcome::Done);
        specs.push(s);
        expects.push(Expect { offset: 0, outcome, bytes });
    }

    // The data region: a background pattern, packets at 16-aligned offsets
    // with random gaps.
    let mut off = 0usize;
    for (s, e) in specs.iter().zip(expects.iter_mut()) {
        off += 16 * rng.random_range(0..3);
        e.offset = off;
        off = (off + s.buf.len()).next_multiple_of(16);
    }
    let total = off + 16 * rng.random_range(0..3) + rng.random_range(0..16);
    let background: Vec<u8> = (0..total).map(|i| (i as u8).wrapping_mul(151) ^ 0xa5).collect();
    batch.data = background.clone();
    let mut want = background;
    for (s, e) in specs.iter().zip(&expects) {
        batch.data[e.offset..e.offset + s.buf.len()].copy_from_slice(&s.buf);
        want[e.offset..e.offset + s.buf.len()].copy_from_slice(&e.bytes);
        let d = layout::descriptor(
            s.key as u32,
            s.op,
            s.iv,
            s.enc_start,
            s.enc_end,
            s.auth_end,
            s.suffix,
            s.suffix_len,
            s.tag_start,
            s.tag_len,
            e.offset as u32,
            s.buf.len() as u32,
        );
        batch.descs.extend_from_slice(&d);
    }

    let got = run_emulator(emu, &batch, &format!("{seed}"));
    assert_eq!(got.keys, batch.keys, "seed {seed}: key slots changed");
    for (i, (s, e)) in specs.iter().zip(&expects).enumerate() {
        let d = &got.descs[i * DESC_WORDS..(i + 1) * DESC_WORDS];
        assert_eq!(&d[..D_OUTCOME], &batch.descs[i * DESC_WORDS..i * DESC_WORDS + D_OUTCOME]);
        assert_eq!(layout::outcome(d[D_OUTCOME]), e.outcome, "seed {seed} job {i}: {s:?}");
        let g = &got.data[e.offset..e.offset + s.buf.len()];
        if g != &e.bytes[..] {
            let first = g.iter().zip(&e.bytes).position(|(a, b)| a != b).unwrap();
            panic!(
                "seed {seed} job {i} ({:?}, len {}): first differing byte {first}\n{s:?}",
                session[s.key].suite(),
                s.buf.len()
            );
        }
    }
    assert!(got.data == want, "seed {seed}: bytes outside the packets changed");
    failures
}

#[test]
fn emulator_matches_cpu_engine() {
    let Some(emu) = build_emulator() else { return };
    // The emulator's T-table is the one the engine uploads.
    let out = Command::new(&emu).arg("--te0").output().unwrap();
    let te0: Vec<u32> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| u32::from_str_radix(l, 16).unwrap()).collect();
    assert_eq!(te0, layout::te0().to_vec());

    let mut jobs = 0;
    let mut failures = 0;
    for seed in 0..48u64 {
        let n = if seed % 8 == 0 { 400 } else { 90 };
        failures += run_batch(&emu, seed, n);
        jobs += n;
    }
    eprintln!("{jobs} jobs, {failures} expected failures, all identical");
    assert!(failures > 20 && failures < jobs / 4);
}

/// The warp-per-packet path's HMAC (`srtp_hmac_sha1_warp`: the lanes build
/// and expand the blocks' schedules, then run the rounds together) gives the
/// MAC of the one-lane HMAC, which the batch tests above hold to the CPU
/// engine: every length over the first ten blocks' edges (three passes of
/// the warp's schedule area), then random ones to a slot's size, with
/// suffixes of 0 to 4 bytes. On the device the GPU
/// tests check the whole path against the CPU engine.
#[test]
fn emulator_warp_hmac_matches_one_lane() {
    let Some(emu) = build_emulator() else { return };
    for seed in [1u64, 2] {
        let o = Command::new(&emu).args(["--hmac-warp", &seed.to_string(), "2000"]).output().unwrap();
        assert!(o.status.success(), "seed {seed}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "2000 messages, the same MAC");
    }
}

/// The kernels' shared SHA-1 areas serve as many warps as the engine lets a
/// block have, and the engine refuses more (on any machine: the
/// configuration is checked before the driver is looked for).
#[test]
fn kernel_block_limit_matches_the_engine() {
    for threads in [layout::MAX_BLOCK_THREADS + 32, 0, 100] {
        let cfg = srtp_cuda::GpuConfig { threads, ..Default::default() };
        match srtp_cuda::GpuEngine::new(cfg) {
            Err(srtp_cuda::GpuError::Capacity(why)) => assert!(why.contains("threads"), "{why}"),
            Err(e) => panic!("{threads} threads: {e}"),
            Ok(_) => panic!("{threads} threads a block accepted"),
        }
    }
    let src = std::fs::read_to_string(format!("{KERNELS}/srtp.cu")).unwrap();
    let warps: u32 = src
        .lines()
        .find_map(|l| l.strip_prefix("#define SRTP_SHA_WARPS "))
        .and_then(|v| v.trim().trim_end_matches('u').parse().ok())
        .expect("SRTP_SHA_WARPS in srtp.cu");
    assert_eq!(warps * 32, layout::MAX_BLOCK_THREADS);
}

/// Hand-made edge cases: empty packets, empty ranges, the counter wrapping all
/// 128 bits, payloads exactly at 4096/4097 bytes, every tag length.
#[test]
fn emulator_edge_cases() {
    let Some(emu) = build_emulator() else { return };
    let mut rng = StdRng::seed_from_u64(0xed6e);
    let mut batch = Batch::default();
    let mut session = Vec::new();
    for suite in SUITES {
        session.push(random_keys(&mut rng, suite));
        batch.keys.extend_from_slice(&layout::key_slot(session.last().unwrap()));
    }
    assert_eq!(batch.keys.len(), SUITES.len() * KEY_WORDS);
    let cpu_keys: Vec<CpuKeys> = session.iter().map(|k| CpuEngine::new().prepare_keys(k).unwrap()).collect();
    let mut specs = Vec::new();
    for (key, suite) in SUITES.iter().enumerate() {
        let gcm = suite.is_aead();
        for payload in [0usize, 1, 15, 16, 17, 4095, 4096, 4097, 4096 + 16 * 256 + 1] {
            for iv_kind in 0..3 {
                let mut iv = [0u8; 16];
                match iv_kind {
                    0 => {}
                    1 => iv = [0xff; 16],
                    _ => iv[12..].copy_from_slice(&[0xff, 0xff, 0xff, 0x00]),
                }
                let h = 12;
                let tag_len = if gcm { 16 } else { [0, 4, 10, 20][payload % 4] };
                let len = h + payload + tag_len;
                specs.push(Spec {
                    key,
                    op: Op::Protect,
                    iv,
                    buf: (0..len).map(|i| i as u8).collect(),
                    enc_start: h,
                    enc_end: h + payload,
                    auth_end: h + payload,
                    suffix: [1, 2, 3, 4],
                    suffix_len: if gcm { 0 } else { 4 },
                    tag_start: h + payload,
                    tag_len,
                });
            }
        }
    }
    let mut off = 0;
    let mut want = Vec::new();
    for s in &specs {
        let (o, bytes) = cpu_run(&cpu_keys[s.key], s);
        assert_eq!(o, Outcome::Done);
        batch.data.resize(off, 0x5a);
        batch.data.extend_from_slice(&s.buf);
        want.resize(off, 0x5a);
        want.extend_from_slice(&bytes);
        batch.descs.extend_from_slice(&layout::descriptor(
            s.key as u32,
            s.op,
            s.iv,
            s.enc_start,
            s.enc_end,
            s.auth_end,
            s.suffix,
            s.suffix_len,
            s.tag_start,
            s.tag_len,
            off as u32,
            s.buf.len() as u32,
        ));
        off = (off + s.buf.len()).next_multiple_of(16);
    }
    let got = run_emulator(&emu, &batch, "edges");
    for i in 0..specs.len() {
        assert_eq!(got.descs[i * DESC_WORDS + D_OUTCOME], layout::OUTCOME_DONE, "job {i}");
    }
    assert!(got.data == want, "edge cases differ");
}
