//! The GPU engine against the CPU engine, on a machine with a GPU. Without
//! one (CI) every test prints why it skips and passes.

use proptest::prelude::*;
use srtp::engine::{Engine, Job, Op, Outcome};
use srtp::{Context, CpuEngine, Error, MasterKey, Policy, SessionKeys, Suite};
use srtp_cuda::{GpuConfig, GpuEngine, Mode};
use srtpgate_testkit::packets::rtp;

/// The relay's test helpers, with the scenario every engine must relay the
/// same way.
#[path = "../../relay/tests/common/mod.rs"]
#[allow(dead_code)]
mod relay;

/// One engine per mode for the whole test binary (starting one compiles the
/// kernels); None, with the reason printed, where there is no GPU.
fn engine(mode: Mode) -> Option<GpuEngine> {
    engine_of(if mode == Mode::Launch { 0 } else { 1 })
}

/// The launch mode with frames moved to the device by DMA before the kernel
/// reads them ([`GpuConfig::dma_in`]).
fn engine_dma() -> Option<GpuEngine> {
    engine_of(2)
}

fn engine_of(i: usize) -> Option<GpuEngine> {
    static ENGINES: std::sync::OnceLock<[Result<GpuEngine, Result<String, String>>; 3]> = std::sync::OnceLock::new();
    let all = ENGINES.get_or_init(|| {
        [(Mode::Launch, false), (Mode::Persistent, false), (Mode::Launch, true)].map(|(mode, dma_in)| {
            GpuEngine::new(GpuConfig {
                mode,
                dma_in,
                key_slots: 4096,
                chunk_packets: 4096,
                chunk_bytes: 4096 * 1600,
                // Sub-batches of 2 048: large batches exercise the pipeline.
                ..Default::default()
            })
            .map_err(|e| match e {
                // No driver, no device: these tests cannot run here.
                srtp_cuda::GpuError::Unavailable(why) => Err(why),
                // A GPU is there but the engine failed (kernels that do not
                // compile, say): that is a failure, never a skip.
                other => Ok(other.to_string()),
            })
        })
    });
    match &all[i] {
        Ok(e) => Some(e.clone()),
        Err(Err(why)) => {
            skip(why);
            None
        }
        Err(Ok(failure)) => panic!("the GPU engine did not start on a machine with a GPU: {failure}"),
    }
}

/// Says once (fails where `SRTPGATE_REQUIRE` names `gpu`) why the GPU
/// tests do not run here.
fn skip(reason: &str) {
    static SAID: std::sync::Once = std::sync::Once::new();
    if srtpgate_testkit::required("gpu") {
        srtpgate_testkit::skip("gpu", "GPU tests", reason);
    }
    SAID.call_once(|| srtpgate_testkit::skip("gpu", "GPU tests", reason));
}

/// Contexts on the GPU engine interoperate with contexts on the CPU engine,
/// for every suite (AES-f8 runs on the CPU inside the GPU engine), SRTP and
/// SRTCP, across the sequence wrap, with replay and tamper detection.
fn contexts_interoperate(gpu: &GpuEngine) {
    for suite in Suite::ALL {
        let key: Vec<u8> = (0..suite.master_key_len() as u8).collect();
        let salt: Vec<u8> = (9..9 + suite.master_salt_len() as u8).collect();
        let policy = Policy::new(suite, MasterKey::new(suite, &key, &salt).unwrap());
        let mut g_tx = Context::new(policy.clone(), gpu.clone()).unwrap();
        let mut c_rx = Context::new(policy.clone(), CpuEngine::new()).unwrap();
        let mut c_tx = Context::new(policy.clone(), CpuEngine::new()).unwrap();
        let mut g_rx = Context::new(policy, gpu.clone()).unwrap();
        let (mut a, mut b, mut back) = (vec![0u8; 2048], vec![0u8; 2048], vec![0u8; 2048]);
        for seq in (65530..=65535u16).chain(0..6) {
            let p = rtp(3, seq, &vec![seq as u8; 160 + seq as usize % 300]);
            let n = g_tx.protect_rtp(&p, &mut a).unwrap();
            let m = c_tx.protect_rtp(&p, &mut b).unwrap();
            assert_eq!(a[..n], b[..m], "{suite} seq {seq}: GPU and CPU protect differ");
            assert_eq!(c_rx.unprotect_rtp(&a[..n], &mut back).unwrap(), p.len());
            assert_eq!(&back[..p.len()], &p[..]);
            assert_eq!(g_rx.unprotect_rtp(&b[..m], &mut back).unwrap(), p.len());
            assert_eq!(&back[..p.len()], &p[..]);
            assert_eq!(g_rx.unprotect_rtp(&b[..m], &mut back), Err(Error::Replayed));
            let mut bad = b[..m].to_vec();
            bad[m - 1] ^= 1;
            let mut c2 = bad.clone();
            c2[3] ^= 0x40; // a fresh index, so the tag check runs
            assert_eq!(g_rx.unprotect_rtp(&c2, &mut back), Err(Error::AuthFailed), "{suite}");
        }
        let mut rtcp = vec![0x80, 200, 0, 6, 0, 0, 0, 3];
        rtcp.extend([7u8; 20]);
        let n = g_tx.protect_rtcp(&rtcp, &mut a).unwrap();
        assert_eq!(c_rx.unprotect_rtcp(&a[..n], &mut back).unwrap(), rtcp.len(), "{suite} rtcp");
    }
}

#[test]
fn launch_mode_contexts() {
    if let Some(g) = engine(Mode::Launch) {
        contexts_interoperate(&g);
    }
}

#[test]
fn persistent_mode_contexts() {
    if let Some(g) = engine(Mode::Persistent) {
        contexts_interoperate(&g);
    }
}

/// Every kernel suite, and AES-f8, which the engine runs on the CPU.
const GPU_SUITES: [Suite; 11] = {
    let k = srtp_cuda::KERNEL_SUITES;
    [k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9], Suite::F8_128_HMAC_SHA1_80]
};

/// One random job's description.
#[derive(Debug, Clone)]
struct Spec {
    suite: usize,
    key: u8,
    op_unprotect: bool,
    iv: [u8; 16],
    payload: Vec<u8>,
    rtcp_suffix: bool,
    corrupt: bool,
    /// Misalignment of the packet in registered memory.
    shift: usize,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0..GPU_SUITES.len(),
        0u8..4,
        any::<bool>(),
        any::<[u8; 16]>(),
        prop::collection::vec(any::<u8>(), 0..1600),
        any::<bool>(),
        any::<bool>(),
        0usize..16,
    )
        .prop_map(|(suite, key, op_unprotect, iv, payload, rtcp_suffix, corrupt, shift)| Spec {
            suite,
            key,
            op_unprotect,
            iv,
            payload,
            rtcp_suffix,
            corrupt,
            shift,
        })
}

/// Page-aligned memory registered with the engine, like a relay's buffer
/// pool; unregistered and freed on drop.
struct Registered<'a> {
    gpu: &'a GpuEngine,
    ptr: *mut u8,
    len: usize,
}

impl<'a> Registered<'a> {
    fn new(gpu: &'a GpuEngine, len: usize, fill: u8) -> Registered<'a> {
        let layout = std::alloc::Layout::from_size_align(len, 4096).unwrap();
        // SAFETY: non-zero size; freed in Drop with the same layout.
        let ptr = unsafe { std::alloc::alloc(layout) };
        assert!(!ptr.is_null());
        // SAFETY: fresh allocation of len bytes.
        unsafe { std::ptr::write_bytes(ptr, fill, len) };
        // SAFETY: unregistered in Drop before the memory is freed.
        unsafe { gpu.register(ptr, len, 0).expect("register") };
        Registered { gpu, ptr, len }
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: live allocation, borrowed mutably through self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.gpu.unregister(self.ptr);
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, std::alloc::Layout::from_size_align(self.len, 4096).unwrap()) };
    }
}

/// Cuts `region` into one buffer per length, buffer i starting `shifts[i]`
/// bytes after a 64-byte boundary with at least 32 untouched bytes between
/// buffers; returns the buffers and their offsets.
fn cut<'r>(region: &'r mut [u8], lens: &[usize], shifts: &[usize]) -> (Vec<&'r mut [u8]>, Vec<usize>) {
    let mut rest = region;
    let mut at = 0usize;
    let mut bufs = Vec::new();
    let mut offs = Vec::new();
    for (&len, &shift) in lens.iter().zip(shifts) {
        let start = (at + 32).next_multiple_of(64) + shift;
        let (_, tail) = rest.split_at_mut(start - at);
        let (buf, tail) = tail.split_at_mut(len);
        bufs.push(buf);
        offs.push(start);
        at = start + len;
        rest = tail;
    }
    (bufs, offs)
}

fn differential(gpu: &GpuEngine, specs: &[Spec], registered: bool) -> Result<(), TestCaseError> {
    let cpu = CpuEngine::new();
    let sks: Vec<Vec<SessionKeys>> = GPU_SUITES
        .iter()
        .map(|&s| {
            (0..4u8)
                .map(|k| {
                    SessionKeys::derive(
                        s,
                        &vec![k; s.master_key_len()],
                        &vec![k ^ 0x5a; s.master_salt_len()],
                        k % 2 == 1,
                        0,
                    )
                    .unwrap()
                })
                .collect()
        })
        .collect();
    let ck: Vec<Vec<_>> = sks.iter().map(|v| v.iter().map(|k| cpu.prepare_keys(k).unwrap()).collect()).collect();
    let gk: Vec<Vec<_>> = sks.iter().map(|v| v.iter().map(|k| gpu.prepare_keys(k).unwrap()).collect()).collect();
    // Buffers: header(12) + payload + tag.
    let mut bufs: Vec<Vec<u8>> = specs
        .iter()
        .map(|s| {
            let mut b = vec![0x80u8; 12];
            b.extend(&s.payload);
            b.extend(vec![0u8; GPU_SUITES[s.suite].srtp_tag_len()]);
            b
        })
        .collect();
    // Unprotect jobs need valid tags first (protect on the CPU), some corrupted.
    for (s, b) in specs.iter().zip(bufs.iter_mut()) {
        if s.op_unprotect {
            let mut one = [mk_job(&ck[s.suite][s.key as usize], s, Op::Protect, b)];
            cpu.transform(&mut one);
            if s.corrupt {
                let last = b.len() - 1;
                b[last] ^= 0x80;
            }
        }
    }
    let mut cb = bufs.clone();
    let oc: Vec<Outcome> = {
        let mut jobs: Vec<_> =
            specs.iter().zip(cb.iter_mut()).map(|(s, b)| mk_job(&ck[s.suite][s.key as usize], s, op(s), b)).collect();
        cpu.transform(&mut jobs);
        jobs.iter().map(|j| j.outcome).collect()
    };
    let og: Vec<Outcome> = if registered {
        // The packets lie in registered memory at every alignment, as in a
        // relay's pool or an AF_XDP frame: the kernels read and write them
        // there, and no byte around them may change.
        const FILL: u8 = 0xa5;
        let lens: Vec<usize> = bufs.iter().map(|b| b.len()).collect();
        let shifts: Vec<usize> = specs.iter().map(|s| s.shift).collect();
        let total = lens.iter().map(|l| l + 128).sum::<usize>() + 4096;
        let mut reg = Registered::new(gpu, total.next_multiple_of(4096), FILL);
        let region = reg.bytes();
        let (mut rbufs, offs) = cut(region, &lens, &shifts);
        for (r, b) in rbufs.iter_mut().zip(&bufs) {
            r.copy_from_slice(b);
        }
        let out: Vec<Outcome> = {
            let mut jobs: Vec<_> = specs
                .iter()
                .zip(rbufs.iter_mut())
                .map(|(s, b)| mk_job(&gk[s.suite][s.key as usize], s, op(s), b))
                .collect();
            gpu.transform_gpu(&mut jobs).unwrap();
            jobs.iter().map(|j| j.outcome).collect()
        };
        for (b, r) in bufs.iter_mut().zip(&rbufs) {
            b.copy_from_slice(r);
        }
        drop(rbufs);
        let region = reg.bytes();
        let mut inside = vec![false; region.len()];
        for (&o, &l) in offs.iter().zip(&lens) {
            inside[o..o + l].iter_mut().for_each(|x| *x = true);
        }
        let touched = region.iter().zip(&inside).position(|(&v, &ins)| !ins && v != FILL);
        prop_assert!(touched.is_none(), "byte {:?} outside every packet was written", touched);
        out
    } else {
        let mut jobs: Vec<_> =
            specs.iter().zip(bufs.iter_mut()).map(|(s, b)| mk_job(&gk[s.suite][s.key as usize], s, op(s), b)).collect();
        gpu.transform_gpu(&mut jobs).unwrap();
        jobs.iter().map(|j| j.outcome).collect()
    };
    for i in 0..specs.len() {
        prop_assert_eq!(oc[i], og[i], "job {} {:?}", i, GPU_SUITES[specs[i].suite]);
        if oc[i] == Outcome::Done {
            prop_assert_eq!(&cb[i], &bufs[i], "job {} {:?}", i, GPU_SUITES[specs[i].suite]);
        }
    }
    Ok(())
}

fn op(s: &Spec) -> Op {
    if s.op_unprotect {
        Op::Unprotect
    } else {
        Op::Protect
    }
}

fn mk_job<'a, K>(keys: &'a K, s: &Spec, op: Op, buf: &'a mut [u8]) -> Job<'a, K> {
    let suite = GPU_SUITES[s.suite];
    let n = 12 + s.payload.len();
    let aead = suite.is_aead();
    Job {
        keys,
        op,
        iv: s.iv,
        buf,
        enc_start: 12,
        enc_end: n,
        auth_end: n,
        suffix: [1, 2, 3, 4],
        suffix_len: if aead && !s.rtcp_suffix { 0 } else { 4 },
        tag_start: n,
        tag_len: suite.srtp_tag_len(),
        outcome: Outcome::Pending,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Mixed suites, keys, lengths, IVs and verdicts in one batch: the GPU
    /// gives the CPU engine's bytes and decisions.
    #[test]
    fn gpu_matches_cpu(specs in prop::collection::vec(spec(), 1..400)) {
        for mode in [Mode::Launch, Mode::Persistent] {
            if let Some(g) = engine(mode) {
                differential(&g, &specs, false)?;
            }
        }
    }

    /// The same from registered memory (the relay's pool): packets at every
    /// alignment, read and written in place, neighbours untouched.
    #[test]
    fn gpu_matches_cpu_in_registered_memory(specs in prop::collection::vec(spec(), 1..400)) {
        for g in [engine(Mode::Launch), engine(Mode::Persistent), engine_dma()].into_iter().flatten() {
            differential(&g, &specs, true)?;
        }
    }
}

/// Several threads (relay workers) submit at once, each from its own
/// registered region, through their own lanes: every result is the CPU's.
/// With several GPUs the lanes are spread over them: on an engine of its
/// own (no other test's packets in its counters), each GPU runs its share,
/// and the engine, resident kernels running, drops cleanly.
#[test]
fn many_threads_every_gpu() {
    for (i, g) in [engine(Mode::Launch), engine(Mode::Persistent), engine_dma()].into_iter().enumerate() {
        let Some(g) = g else { return };
        many_threads(&g);
        if g.info().gpus.len() < 2 {
            srtpgate_testkit::skip("gpus", "lanes on several GPUs", "this machine has one GPU");
            continue;
        }
        let fresh = GpuEngine::new(GpuConfig { key_slots: 4096, ..g.config().clone() }).expect("a second engine");
        assert!(fresh.info().gpus.iter().all(|p| p.lanes > 0), "every GPU has lanes: {:?}", fresh.info().gpus);
        many_threads(&fresh);
        let per_gpu = fresh.packets_per_gpu();
        eprintln!("{} ({i}): packets per GPU (ordinal, packets) {per_gpu:?}", fresh.name());
        for (ordinal, n) in &per_gpu {
            assert!(*n > 0, "{}: GPU {ordinal} ran none of the threads' packets", fresh.name());
        }
        let stats = fresh.stats().expect("the GPU engine counts its batches");
        let on_gpu = stats.shares.iter().find(|x| x.0 == "gpu").map_or(0, |x| x.2);
        assert_eq!(per_gpu.iter().map(|x| x.1).sum::<u64>(), on_gpu, "the GPUs' counts add up to the GPU path's");
        assert_eq!(stats.devices, per_gpu, "the engine's stats carry the per-GPU counts");
        let started = std::time::Instant::now();
        drop(fresh);
        eprintln!("dropped in {:?}", started.elapsed());
    }
    let Some(g) = engine(Mode::Launch) else { return };
    let last = g.info().gpus.last().expect("a GPU").ordinal;
    if last > 0 {
        // One GPU named alone, not the first: its ordinal is the one used.
        let one = GpuEngine::new(GpuConfig { devices: vec![last], key_slots: 256, ..Default::default() })
            .expect("an engine on one GPU");
        assert_eq!(one.packets_per_gpu(), vec![(last, 0)]);
        contexts_interoperate(&one);
        assert!(one.packets_per_gpu()[0].1 > 0, "GPU {last} ran the packets");
        // Fewer lanes than GPUs: the first GPUs, none holding keys without a lane.
        let one_lane = GpuEngine::new(GpuConfig { lanes: 1, key_slots: 64, ..Default::default() }).expect("one lane");
        assert_eq!(one_lane.info().gpus.len(), 1, "one lane: one GPU");
    }
    // A GPU that is not there is a configuration error, not "unavailable".
    let absent = GpuEngine::new(GpuConfig { devices: vec![last + 1], ..Default::default() });
    assert!(matches!(absent, Err(srtp_cuda::GpuError::Config(_))), "GPU {} is not there", last + 1);
}

/// Six threads at once, spread over the cores (and so over the NUMA
/// nodes, near each GPU), each submitting rounds of random batches.
fn many_threads(g: &GpuEngine) {
    let cpus = srtpgate_relay::sys::allowed_cpus();
    // Batches of 2, 3 and 4 packets a warp of a lane's grid (each packet
    // transformed by its whole warp, one after the other), between one
    // packet a warp and one a lane.
    let warps = (g.info().blocks * g.info().threads / 32) as usize;
    let sizes = [1usize, 7, 64, 2 * warps, 3 * warps - 1, 4 * warps, 1000, 5000];
    std::thread::scope(|scope| {
        for t in 0..6u8 {
            let (cpus, sizes) = (&cpus, &sizes);
            scope.spawn(move || {
                // Unpinned where it fails: then wherever the scheduler puts it.
                if let Some(&cpu) = cpus.get(t as usize * cpus.len() / 6) {
                    let _ = srtpgate_relay::sys::pin_to(cpu);
                }
                let mut rng = t as u64 * 0x9e37_79b9 + 1;
                for round in 0..20 {
                    let n = sizes[round % sizes.len()];
                    let specs: Vec<Spec> = (0..n)
                        .map(|i| {
                            rng ^= rng << 13;
                            rng ^= rng >> 7;
                            rng ^= rng << 17;
                            Spec {
                                suite: (rng % GPU_SUITES.len() as u64) as usize,
                                key: (rng >> 8) as u8 % 4,
                                op_unprotect: rng & 1 == 1,
                                iv: [(rng >> 16) as u8; 16],
                                payload: vec![t ^ i as u8; (rng >> 24) as usize % 300],
                                rtcp_suffix: false,
                                corrupt: (rng >> 40).is_multiple_of(7),
                                shift: (rng >> 44) as usize % 16,
                            }
                        })
                        .collect();
                    differential(g, &specs, true).unwrap();
                }
            });
        }
    });
}

/// Asynchronous rounds on the GPU: a relay worker on the simulated NIC
/// hands its rounds' batches to its own lane and goes on; what it relays,
/// frame for frame, and every leg's counters are the CPU engine's. Each
/// mode, with every batch on the device, then with the hybrid's split
/// (small batches on the CPU at once).
fn relay_rounds(gpu: &GpuEngine, tag: &str) {
    let cpu = relay::rounds::run(CpuEngine::new(), &format!("{tag}-cpu"));
    for below in [0, 8] {
        gpu.set_lane_below(below);
        let before = gpu.stats().expect("the GPU engine counts its batches");
        let got = relay::rounds::run(gpu.clone(), &format!("{tag}-{below}"));
        let after = gpu.stats().expect("the GPU engine counts its batches");
        let on = |s: &srtp::EngineStats, path: &str| s.shares.iter().find(|x| x.0 == path).map_or(0, |x| x.2);
        let on_gpu = |s: &srtp::EngineStats| on(s, "gpu");
        let (gpu_n, cpu_n) = (on_gpu(&after) - on_gpu(&before), on(&after, "cpu") - on(&before, "cpu"));
        eprintln!(
            "{tag}, lane below {below}: {} of {} batches held by the lane, {gpu_n} packets on the GPU, {cpu_n} on the CPU",
            got.lane_batches, got.batches,
        );
        // The worker's buffers are whole frames, larger than a packet: the
        // device takes the packet's bytes, not the frame (a frame larger
        // than a scratch slot once sent every packet to the CPU).
        if below == 0 {
            assert!(gpu_n > cpu_n, "{tag}: with every batch handed over, most packets ran on the device");
        }
        assert_eq!(got.legs, cpu.legs, "{tag}: the same counters on every leg");
        assert_eq!(got.frames, cpu.frames, "{tag}: the same frames to every destination");
        assert!(got.lane_batches > 0, "{tag}: the worker's lane held batches while it went on");
        assert!(on_gpu(&after) > on_gpu(&before), "{tag}: packets ran on the GPU");
    }
    gpu.set_lane_below(0);
}

#[test]
fn launch_mode_relays_rounds_in_flight() {
    let Some(gpu) = engine(Mode::Launch) else { return };
    relay_rounds(&gpu, "launch");
}

#[test]
fn persistent_mode_relays_rounds_in_flight() {
    let Some(gpu) = engine(Mode::Persistent) else { return };
    relay_rounds(&gpu, "persistent");
}

#[test]
fn dma_mode_relays_rounds_in_flight() {
    let Some(gpu) = engine_dma() else { return };
    relay_rounds(&gpu, "dma");
}
