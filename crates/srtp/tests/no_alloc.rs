//! The packet path allocates nothing: once a context has seen its streams
//! (their state is created by the first packet of each SSRC), protect and
//! unprotect of RTP and RTCP, one-shot or as a batch (prepare, job,
//! transform, commit), make no heap allocation, on every engine and for
//! both kinds of suite (AES-CM with HMAC-SHA1, and GCM).
//!
//! The counting global allocator (`srtpgate_testkit`) counts per thread (libtest runs tests on
//! threads of its own, which must not count against each other).

use srtp::{
    Context, CpuEngine, Engine, Job, Kind, MacPath, MasterKey, Op, Outcome, Policy, PortableEngine, Prepared,
    SessionKeys, Suite,
};
use srtpgate_testkit::allocations as allocs;

#[global_allocator]
static GLOBAL: srtpgate_testkit::CountingAllocator = srtpgate_testkit::CountingAllocator;

const SSRCS: [u32; 3] = [0x1111_1111, 0x2222_2222, 0x3333_3333];
/// Packets per batch (the batch path), one per SSRC in turn.
const BATCH: usize = 8;
/// Room for any packet below with its trailer.
const BUF: usize = 512;

fn rtp(ssrc: u32, seq: u16, out: &mut [u8; BUF]) -> usize {
    srtpgate_testkit::packets::Rtp::new(ssrc, seq).write(&[seq as u8; 160], out)
}

fn rtcp(ssrc: u32, n: u32, out: &mut [u8; BUF]) -> usize {
    out[..8].copy_from_slice(&[0x80, 200, 0, 6, 0, 0, 0, 0]);
    out[4..8].copy_from_slice(&ssrc.to_be_bytes());
    out[8..12].copy_from_slice(&n.to_be_bytes());
    out[12..28].fill(n as u8);
    28
}

/// A sender's and a receiver's context of one suite on engine `e`.
fn pair<E: Engine + Clone>(suite: Suite, e: &E) -> (Context<E>, Context<E>) {
    let key: Vec<u8> = (0..suite.master_key_len() as u8).collect();
    let salt: Vec<u8> = (0..suite.master_salt_len() as u8).map(|b| b ^ 0x5a).collect();
    let policy = || Policy::new(suite, MasterKey::new(suite, &key, &salt).expect("master key"));
    (Context::new(policy(), e.clone()).expect("sender"), Context::new(policy(), e.clone()).expect("receiver"))
}

/// Protects and unprotects `n` RTP and RTCP packets of every SSRC one at a
/// time; checks each round trip.
fn one_shot<E: Engine>(tx: &mut Context<E>, rx: &mut Context<E>, seq: &mut u16, n: usize) {
    let (mut plain, mut prot, mut back) = ([0u8; BUF], [0u8; BUF], [0u8; BUF]);
    for _ in 0..n {
        *seq = seq.wrapping_add(1);
        for &ssrc in &SSRCS {
            let len = rtp(ssrc, *seq, &mut plain);
            let p = tx.protect_rtp(&plain[..len], &mut prot).expect("protect RTP");
            let u = rx.unprotect_rtp(&prot[..p], &mut back).expect("unprotect RTP");
            assert_eq!(&back[..u], &plain[..len]);
            let len = rtcp(ssrc, *seq as u32, &mut plain);
            let p = tx.protect_rtcp(&plain[..len], &mut prot).expect("protect RTCP");
            let u = rx.unprotect_rtcp(&prot[..p], &mut back).expect("unprotect RTCP");
            assert_eq!(&back[..u], &plain[..len]);
        }
    }
}

/// One step (protect or unprotect) of `BATCH` packets through the batch
/// interface: prepare each, one engine batch (the jobs in an array, so the
/// test's own bookkeeping does not allocate), commit each. Returns the
/// results' lengths.
fn batch_step<E: Engine>(
    ctx: &mut Context<E>,
    kind: Kind,
    op: Op,
    input: &[[u8; BUF]; BATCH],
    lens: &[usize; BATCH],
    out: &mut [[u8; BUF]; BATCH],
) -> [usize; BATCH] {
    let preps: [Prepared; BATCH] =
        std::array::from_fn(|i| ctx.prepare(kind, op, &input[i][..lens[i]], &mut out[i]).expect("prepare"));
    let outcomes: [Outcome; BATCH] = {
        let mut bufs = out.iter_mut();
        let mut jobs: [Job<'_, E::Keys>; BATCH] =
            std::array::from_fn(|i| ctx.job(&preps[i], bufs.next().expect("a buffer per job")).expect("job"));
        ctx.engine().transform(&mut jobs);
        std::array::from_fn(|i| jobs[i].outcome)
    };
    std::array::from_fn(|i| ctx.commit(&preps[i], outcomes[i], &out[i]).expect("commit"))
}

/// `n` batches of RTP and of RTCP, protected then unprotected; checks each
/// round trip.
fn batches<E: Engine>(tx: &mut Context<E>, rx: &mut Context<E>, seq: &mut u16, n: usize) {
    let mut plain = [[0u8; BUF]; BATCH];
    let mut prot = [[0u8; BUF]; BATCH];
    let mut back = [[0u8; BUF]; BATCH];
    let mut lens = [0usize; BATCH];
    for _ in 0..n {
        for kind in [Kind::Rtp, Kind::Rtcp] {
            for (i, (p, l)) in plain.iter_mut().zip(lens.iter_mut()).enumerate() {
                *seq = seq.wrapping_add(1);
                let ssrc = SSRCS[i % SSRCS.len()];
                *l = if kind == Kind::Rtp { rtp(ssrc, *seq, p) } else { rtcp(ssrc, *seq as u32, p) };
            }
            let plens = batch_step(tx, kind, Op::Protect, &plain, &lens, &mut prot);
            let ulens = batch_step(rx, kind, Op::Unprotect, &prot, &plens, &mut back);
            for i in 0..BATCH {
                assert_eq!(&back[i][..ulens[i]], &plain[i][..lens[i]], "{kind:?} round trip");
            }
        }
    }
}

fn check<E: Engine + Clone>(name: &str, e: E) {
    for suite in [
        Suite::AES_CM_128_HMAC_SHA1_80,
        Suite::AES_CM_128_HMAC_SHA1_32,
        Suite::AEAD_AES_128_GCM,
        Suite::AEAD_AES_256_GCM,
    ] {
        let (mut tx, mut rx) = pair(suite, &e);
        let mut seq = 1000u16;
        // Warm-up: the first packet of each SSRC creates its stream state in
        // both contexts (bounded by `max_streams`, not per packet).
        one_shot(&mut tx, &mut rx, &mut seq, 2);
        batches(&mut tx, &mut rx, &mut seq, 2);
        let before = allocs();
        one_shot(&mut tx, &mut rx, &mut seq, 200);
        let one = allocs() - before;
        let before = allocs();
        batches(&mut tx, &mut rx, &mut seq, 100);
        let batch = allocs() - before;
        assert_eq!((one, batch), (0, 0), "{name} engine, {suite:?}: allocations (one-shot, batch) after warm-up");
    }
}

#[test]
fn cpu_engine_allocates_nothing_per_packet() {
    check("cpu", CpuEngine::new());
}

#[test]
fn portable_engine_allocates_nothing_per_packet() {
    check("portable", PortableEngine::new());
}

/// Jobs in one mixed batch of the engine-level test.
const MIXED: usize = 64;

/// One transform of `MIXED` jobs of mixed suites and lengths (72 to 1272
/// bytes), protect then unprotect, on `e`: no allocation, and every packet
/// comes back.
fn mixed_batch<E: Engine>(name: &str, e: &E) {
    let suites = [
        Suite::AES_CM_128_HMAC_SHA1_80,
        Suite::AES_CM_128_HMAC_SHA1_32,
        Suite::AEAD_AES_128_GCM,
        Suite::AES_256_CM_HMAC_SHA1_80,
        Suite::F8_128_HMAC_SHA1_80,
        Suite::NULL_HMAC_SHA1_80,
        Suite::AEAD_AES_256_GCM,
    ];
    let suite_of = |i: usize| suites[i % suites.len()];
    let keys: Vec<E::Keys> = (0..MIXED)
        .map(|i| {
            let s = suite_of(i);
            let sk =
                SessionKeys::derive(s, &vec![i as u8; s.master_key_len()], &vec![3; s.master_salt_len()], false, 0)
                    .expect("session keys");
            e.prepare_keys(&sk).expect("engine keys")
        })
        .collect();
    let len = |i: usize| 60 + (i * 97) % 1200;
    let plain: Vec<[u8; 1400]> = (0..MIXED).map(|i| [i as u8; 1400]).collect();
    let mut bufs = plain.clone();
    let step = |op: Op, bufs: &mut [[u8; 1400]]| -> u64 {
        let before = allocs();
        let mut it = bufs.iter_mut();
        let mut jobs: [Job<'_, E::Keys>; MIXED] = std::array::from_fn(|i| {
            let tag_len = suite_of(i).srtp_tag_len();
            Job {
                keys: &keys[i],
                op,
                iv: [i as u8; 16],
                buf: &mut it.next().expect("a buffer per job")[..12 + len(i) + tag_len],
                enc_start: 12,
                enc_end: 12 + len(i),
                auth_end: 12 + len(i),
                suffix: [0, 0, 0, 1],
                suffix_len: if suite_of(i).is_aead() { 0 } else { 4 },
                tag_start: 12 + len(i),
                tag_len,
                outcome: Outcome::Pending,
            }
        });
        e.transform(&mut jobs);
        assert!(jobs.iter().all(|j| j.outcome == Outcome::Done), "{name}: {op:?}");
        allocs() - before
    };
    let counts = (step(Op::Protect, &mut bufs), step(Op::Unprotect, &mut bufs));
    assert_eq!(counts, (0, 0), "{name}: allocations in a batch of {MIXED} (protect, unprotect)");
    for i in 0..MIXED {
        assert_eq!(bufs[i][..12 + len(i)], plain[i][..12 + len(i)], "{name}: job {i} round trip");
    }
}

#[test]
fn cpu_engine_batch_of_64_mixed_jobs_allocates_nothing_on_every_mac_path() {
    mixed_batch("cpu", &CpuEngine::new());
    for path in MacPath::ALL {
        match CpuEngine::with_mac_path(path) {
            Some(e) => mixed_batch(&format!("cpu {path}"), &e),
            None => eprintln!("skipped: this CPU lacks the {path} MAC path"),
        }
    }
}

#[test]
fn the_counter_sees_this_threads_allocations() {
    // The assertions above mean something only if the counter counts.
    let before = allocs();
    let v = std::hint::black_box(vec![1u8; 100]);
    drop(v);
    assert!(allocs() > before);
}
