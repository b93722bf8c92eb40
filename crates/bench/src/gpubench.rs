//! `srtpgate bench gpu`: the GPU engine against the PCIe limit and the CPU
//! engine on all cores, in one run. Every run first checks that the GPU gives
//! bit-identical results to the CPU engine, then times.

use serde::Serialize;
use srtp::engine::{Engine, Job, Op, Outcome};
use srtp::{CpuEngine, PortableEngine, SessionKeys, Suite};
use srtp_cuda::{GpuConfig, GpuEngine, Mode};
use std::hint::black_box;
use std::time::{Duration, Instant};

/// The GPU suites measured: the kernels' suites but the NULL cipher.
pub fn gpu_suites() -> Vec<Suite> {
    srtp_cuda::KERNEL_SUITES.into_iter().filter(|s| s.cipher() != srtp::suite::Cipher::Null).collect()
}

/// One GPU figure.
#[derive(Serialize, Debug, Clone, Default)]
pub struct GpuRecord {
    pub engine: String,
    pub suite: String,
    pub op: String,
    pub payload: usize,
    pub streams: usize,
    pub ns_per_op: f64,
    pub ops_per_s: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gbit_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us_p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_us_p99: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// GPUs the engine's lanes were spread over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes_per_s: Option<f64>,
    /// Persistent round trips: p50 and p99 of each device stage, µs
    /// ([`srtp_cuda::BatchStages`]), and of what the device did not see
    /// (`outside`: the round trip less the batch's span on the device, the
    /// two measured on different batches, so p50 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stages_us: Option<std::collections::BTreeMap<&'static str, [f64; 2]>>,
}

/// Options of `bench gpu`.
pub struct GpuBenchOptions {
    pub batches: Vec<usize>,
    pub seconds: f64,
    pub suites: Vec<Suite>,
    pub quick: bool,
    /// Sections to run (empty: all), see [`SECTIONS`].
    pub only: Vec<String>,
    /// Submitting threads of the pool-resident throughput figures.
    pub threads: Vec<usize>,
    /// Frame pitches (bytes) of the pool section instead of the relay's two
    /// layouts: a packet at the start of each frame, frames this far apart.
    pub pitches: Vec<usize>,
    /// The engines' submission lanes ([`GpuConfig::lanes`]).
    pub lanes: usize,
    /// The engines' GPUs: the first N (0: every visible one;
    /// [`GpuConfig::devices`]).
    pub gpus: usize,
}

/// The sections of `bench gpu`, in the order they run.
pub const SECTIONS: [&str; 10] =
    ["links", "exact", "kernel", "pool", "latency", "packed", "cpu", "calibrate", "blocks", "one-packet"];

/// Frame pitch of a relay worker's pool (sockets and io_uring backends): a
/// packet starts at each frame.
pub fn pool_pitch() -> usize {
    crate::relay::pool::BUF_LEN.next_multiple_of(64)
}

/// The two layouts packets have in a relay: (name, frame pitch, offset of the
/// packet in its frame). `umem`: an AF_XDP frame, the UDP payload of an IPv4
/// packet after the headroom and the Ethernet, IP and UDP headers.
pub fn layouts() -> [(&'static str, usize, usize); 2] {
    [("pool", pool_pitch(), 0), ("umem", crate::relay::pool::XDP_FRAME, crate::relay::pool::XDP_HEADROOM + 14 + 20 + 8)]
}

/// Page-aligned memory laid out like a relay's buffer pool, registered with
/// the GPU engine for as long as it lives.
struct PoolMemory<'g> {
    gpu: &'g GpuEngine,
    ptr: *mut u8,
    len: usize,
}

impl<'g> PoolMemory<'g> {
    fn new(gpu: &'g GpuEngine, len: usize, pitch: usize) -> Result<PoolMemory<'g>, String> {
        PoolMemory::with_pages(gpu, len, pitch, false)
    }

    /// An anonymous mapping like the relay's pool; `huge`: transparent huge
    /// pages asked for before the pages are touched (registration faults
    /// them in).
    fn with_pages(gpu: &'g GpuEngine, len: usize, pitch: usize, huge: bool) -> Result<PoolMemory<'g>, String> {
        let len = len.next_multiple_of(2 << 20);
        // SAFETY: an anonymous private mapping; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(format!("cannot map {len} bytes: {}", std::io::Error::last_os_error()));
        }
        let ptr = p as *mut u8;
        if huge {
            // SAFETY: advice on our own fresh mapping.
            unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
        }
        // SAFETY: the mapping stays until Drop, which unregisters first.
        if let Err(e) = unsafe { gpu.register(ptr, len, pitch) } {
            // SAFETY: mapped above.
            unsafe { libc::munmap(p, len) };
            return Err(format!("cannot register {len} bytes with the GPU: {e}"));
        }
        Ok(PoolMemory { gpu, ptr, len })
    }

    /// `n` frames of `pitch` bytes from frame `first`, as disjoint buffers of
    /// `len` bytes starting `offset` bytes into each frame.
    fn frames(&mut self, first: usize, n: usize, pitch: usize, offset: usize, len: usize) -> Vec<&mut [u8]> {
        assert!(offset + len <= pitch && (first + n) * pitch <= self.len);
        // SAFETY: the region is live and borrowed mutably through self.
        let all = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) };
        all[first * pitch..(first + n) * pitch].chunks_mut(pitch).map(|f| &mut f[offset..offset + len]).collect()
    }
}

impl Drop for PoolMemory<'_> {
    fn drop(&mut self) {
        self.gpu.unregister(self.ptr);
        // SAFETY: mapped in `with_pages`, unregistered above.
        unsafe { libc::munmap(self.ptr as *mut _, self.len) };
    }
}

/// The engine's mode as the results name it.
fn mode_name(g: &GpuEngine) -> &'static str {
    match (g.config().mode, g.config().dma_in) {
        (Mode::Launch, false) => "launch",
        (Mode::Launch, true) => "launch-dma",
        (Mode::Persistent, _) => "persistent",
    }
}

/// Jobs over buffers that lie elsewhere (pool frames), with `batch`'s fields.
fn jobs_in<'a, K>(bufs: Vec<&'a mut [u8]>, fields: &[Fields], keys: &'a [K]) -> Vec<Job<'a, K>> {
    bufs.into_iter()
        .zip(fields)
        .map(|(buf, f)| Job {
            keys: &keys[f.key],
            op: f.op,
            iv: f.iv,
            buf,
            enc_start: f.enc.0,
            enc_end: f.enc.1,
            auth_end: f.auth_end,
            suffix: f.suffix,
            suffix_len: f.suffix_len,
            tag_start: f.tag_start,
            tag_len: f.tag_len,
            outcome: Outcome::Pending,
        })
        .collect()
}

/// Bit-exactness from registered memory: every GPU suite, protect and
/// unprotect (every 7th tag corrupted), payloads 0..4 100 bytes, in both
/// pool layouts, against the CPU engine. Returns the packets compared.
fn check_exact_pool(gpu: &GpuEngine, seed: u64) -> Result<usize, String> {
    let cpu = CpuEngine::new();
    let n = 300;
    let mut mems: Vec<PoolMemory> =
        layouts().iter().map(|l| PoolMemory::new(gpu, n * l.1, l.1)).collect::<Result<_, _>>()?;
    let mut total = 0;
    for (si, suite) in gpu_suites().into_iter().enumerate() {
        let sks = session_keys(suite, 17);
        let ck: Vec<_> = sks.iter().map(|k| cpu.prepare_keys(k).expect("cpu keys")).collect();
        let gk: Vec<_> =
            sks.iter().map(|k| gpu.prepare_keys(k).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        for op in [Op::Protect, Op::Unprotect] {
            for payload in [0usize, 1, 15, 16, 17, 160, 1000, 2200, 4100] {
                for (li, (name, pitch, offset)) in layouts().into_iter().enumerate() {
                    let mem = &mut mems[li];
                    let mut a =
                        make_batch(suite, n, payload, 17, Op::Protect, seed ^ (si as u64) << 8 ^ payload as u64);
                    let len = a.spans[0].1;
                    if offset + len > pitch {
                        continue;
                    }
                    if op == Op::Unprotect {
                        cpu.transform(&mut jobs(&mut a, &ck));
                        a.fields.iter_mut().for_each(|f| f.op = Op::Unprotect);
                        for i in (0..n).step_by(7) {
                            let (at, len) = a.spans[i];
                            a.data[at + len - 1] ^= 0x20;
                        }
                    }
                    let mut frames = mem.frames(0, n, pitch, offset, len);
                    for (f, &(at, l)) in frames.iter_mut().zip(&a.spans) {
                        f.copy_from_slice(&a.data[at..at + l]);
                    }
                    let og: Vec<Outcome> = {
                        let mut j = jobs_in(frames, &a.fields, &gk);
                        gpu.transform_gpu(&mut j).map_err(|e| e.to_string())?;
                        j.iter().map(|j| j.outcome).collect()
                    };
                    let oc: Vec<Outcome> = {
                        let mut j = jobs(&mut a, &ck);
                        cpu.transform(&mut j);
                        j.iter().map(|j| j.outcome).collect()
                    };
                    let frames = mem.frames(0, n, pitch, offset, len);
                    for i in 0..n {
                        let (at, l) = a.spans[i];
                        if oc[i] != og[i] || (oc[i] == Outcome::Done && a.data[at..at + l] != *frames[i]) {
                            return Err(format!(
                                "GPU differs from CPU in registered memory ({name} layout): {suite} {op:?} payload \
                                 {payload} packet {i}: cpu {:?} gpu {:?}",
                                oc[i], og[i]
                            ));
                        }
                    }
                    total += n;
                }
            }
        }
    }
    Ok(total)
}

/// Host-to-host throughput from pool-resident packets: `threads` threads
/// (relay workers), each transforming its own `batch` packets in place in
/// registered memory through its own lane, for `budget`.
#[allow(clippy::too_many_arguments)]
fn pool_throughput(
    gpu: &GpuEngine,
    mem: &mut PoolMemory<'_>,
    layout: (&str, usize, usize),
    suite: Suite,
    batch: usize,
    threads: usize,
    payload: usize,
    budget: Duration,
) -> Result<GpuRecord, String> {
    let (name, pitch, offset) = layout;
    let keys = session_keys(suite, 1024.min(batch));
    let gk: Vec<_> = keys.iter().map(|k| gpu.prepare_keys(k).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
    let tmpl = make_batch(suite, batch, payload, gk.len(), Op::Protect, batch as u64);
    let len = tmpl.spans[0].1;
    let all = mem.frames(0, batch * threads, pitch, offset, len);
    let mut per_thread: Vec<Vec<&mut [u8]>> = Vec::new();
    let mut it = all.into_iter();
    for _ in 0..threads {
        let mut v: Vec<&mut [u8]> = it.by_ref().take(batch).collect();
        for (f, &(at, l)) in v.iter_mut().zip(&tmpl.spans) {
            f.copy_from_slice(&tmpl.data[at..at + l]);
        }
        per_thread.push(v);
    }
    let barrier = std::sync::Barrier::new(threads);
    let cpus = crate::relay::sys::allowed_cpus();
    /// Per thread: operations, time, round trips (µs).
    type Run = Result<(u64, Duration, Vec<f64>), String>;
    let results: Vec<Run> = std::thread::scope(|s| {
        let hs: Vec<_> = per_thread
            .into_iter()
            .enumerate()
            .map(|(k, bufs)| {
                let (gk, tmpl, barrier, cpus) = (&gk, &tmpl, &barrier, &cpus);
                s.spawn(move || {
                    // Spread over the cores as a relay's workers are (and so
                    // over the NUMA nodes, each thread near its GPUs).
                    // A failure leaves it where the scheduler puts it.
                    if !cpus.is_empty() {
                        let _ = crate::relay::sys::pin_to(cpus[k * cpus.len() / threads]);
                    }
                    let mut jobs = jobs_in(bufs, &tmpl.fields, gk);
                    gpu.transform_gpu(&mut jobs).map_err(|e| e.to_string())?;
                    barrier.wait();
                    let start = Instant::now();
                    let mut ops = 0u64;
                    let mut lat = Vec::new();
                    while start.elapsed() < budget || lat.len() < 3 {
                        let t = Instant::now();
                        gpu.transform_gpu(&mut jobs).map_err(|e| e.to_string())?;
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                        ops += jobs.len() as u64;
                        if lat.len() > 200_000 {
                            break;
                        }
                    }
                    Ok((ops, start.elapsed(), lat))
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("bench thread panicked".into()))).collect()
    });
    let mut ops = 0u64;
    let mut secs = 0f64;
    let mut lat = Vec::new();
    for r in results {
        let (o, d, l) = r?;
        ops += o;
        secs = secs.max(d.as_secs_f64());
        lat.extend(l);
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let ns = secs * 1e9 / ops as f64;
    let mut r = rec(gpu.name(), suite, &format!("protect_{name}"), payload, ns);
    r.batch = Some(batch);
    r.threads = Some(threads);
    r.gpus = Some(gpu.info().gpus.len());
    r.mode = Some(mode_name(gpu).into());
    r.gbit_s = Some(((12 + payload) as f64 * 8.0) / ns);
    r.latency_us_p50 = Some((percentile(&lat, 0.5) * 10.0).round() / 10.0);
    r.latency_us_p99 = Some((percentile(&lat, 0.99) * 10.0).round() / 10.0);
    r.blocks = Some(gpu.info().blocks);
    Ok(r)
}

/// A batch of packets in one buffer, with the fields of each job.
struct Batch {
    data: Vec<u8>,
    spans: Vec<(usize, usize)>,
    fields: Vec<Fields>,
}

#[derive(Clone, Copy)]
struct Fields {
    key: usize,
    op: Op,
    iv: [u8; 16],
    enc: (usize, usize),
    auth_end: usize,
    suffix: [u8; 4],
    suffix_len: usize,
    tag_start: usize,
    tag_len: usize,
}

/// `n` G.711-like packets (12-byte header + `payload`) for `suite`, spread
/// over `keys` session keys; for unprotect, first protected with the CPU engine.
fn make_batch(suite: Suite, n: usize, payload: usize, keys: usize, op: Op, seed: u64) -> Batch {
    let tag = suite.srtp_tag_len();
    let len = 12 + payload + tag;
    let mut data = vec![0u8; n * len];
    let mut x = seed | 1;
    for b in data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
    let mut spans = Vec::with_capacity(n);
    let mut fields = Vec::with_capacity(n);
    for i in 0..n {
        spans.push((i * len, len));
        let mut iv = [0u8; 16];
        iv[..8].copy_from_slice(&(seed ^ i as u64).to_be_bytes());
        iv[8..12].copy_from_slice(&(i as u32).to_be_bytes());
        let aead = suite.is_aead();
        fields.push(Fields {
            key: i % keys,
            op,
            iv,
            enc: (12, 12 + payload),
            auth_end: 12 + payload,
            suffix: (i as u32 >> 16).to_be_bytes(),
            suffix_len: if aead { 0 } else { 4 },
            tag_start: 12 + payload,
            tag_len: tag,
        });
        data[i * len] = 0x80;
    }
    Batch { data, spans, fields }
}

fn jobs<'a, K>(batch: &'a mut Batch, keys: &'a [K]) -> Vec<Job<'a, K>> {
    let mut rest: &mut [u8] = &mut batch.data;
    let mut bufs = Vec::with_capacity(batch.spans.len());
    for &(_, len) in &batch.spans {
        let (buf, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        bufs.push(buf);
    }
    jobs_in(bufs, &batch.fields, keys)
}

fn session_keys(suite: Suite, n: usize) -> Vec<SessionKeys> {
    (0..n)
        .map(|i| {
            let k: Vec<u8> = (0..suite.master_key_len()).map(|j| (i * 31 + j) as u8).collect();
            let s: Vec<u8> = (0..suite.master_salt_len()).map(|j| (i * 7 + j + 1) as u8).collect();
            SessionKeys::derive(suite, &k, &s, false, 0).expect("key lengths fit the suite")
        })
        .collect()
}

/// Transforms a copy of `batch` with the CPU engine and the GPU engine and
/// compares bytes and verdicts. Returns the number of packets compared.
fn check_exact(gpu: &GpuEngine, seed: u64) -> Result<usize, String> {
    let cpu = CpuEngine::new();
    let mut total = 0;
    for (si, suite) in gpu_suites().into_iter().enumerate() {
        let sks = session_keys(suite, 17);
        let ck: Vec<_> = sks.iter().map(|k| cpu.prepare_keys(k).expect("cpu keys")).collect();
        let gk: Vec<_> =
            sks.iter().map(|k| gpu.prepare_keys(k).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
        for op in [Op::Protect, Op::Unprotect] {
            for payload in [0usize, 1, 15, 16, 17, 160, 1000, 4100] {
                let a = make_batch(suite, 300, payload, 17, Op::Protect, seed ^ (si as u64) << 8 ^ payload as u64);
                total += compare_batch(&cpu, gpu, &ck, &gk, a, op, 7)
                    .map_err(|e| format!("GPU differs from CPU: {suite} {op:?} payload {payload} {e}"))?;
            }
        }
    }
    // A batch large enough for the multi-threaded packing path.
    let suite = Suite::AES_CM_128_HMAC_SHA1_80;
    let sks = session_keys(suite, 64);
    let ck: Vec<_> = sks.iter().map(|k| cpu.prepare_keys(k).expect("cpu keys")).collect();
    let gk: Vec<_> = sks.iter().map(|k| gpu.prepare_keys(k).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
    for op in [Op::Protect, Op::Unprotect] {
        let a = make_batch(suite, 40_000, 160, 64, Op::Protect, seed ^ 0xbeef);
        total += compare_batch(&cpu, gpu, &ck, &gk, a, op, 11)
            .map_err(|e| format!("GPU differs from CPU on a 40 000-packet {op:?} batch: {e}"))?;
    }
    Ok(total)
}

/// Runs `a` through the CPU engine and, as a copy, through the GPU engine,
/// and compares verdicts and (where the packet authenticated) bytes. For
/// unprotect the batch is first protected on the CPU and every `corrupt`-th
/// tag is damaged. Returns the packets compared, or the first difference.
fn compare_batch(
    cpu: &CpuEngine,
    gpu: &GpuEngine,
    ck: &[srtp::cpu::CpuKeys],
    gk: &[srtp_cuda::GpuKeys],
    mut a: Batch,
    op: Op,
    corrupt: usize,
) -> Result<usize, String> {
    if op == Op::Unprotect {
        cpu.transform(&mut jobs(&mut a, ck));
        a.fields.iter_mut().for_each(|f| f.op = Op::Unprotect);
        for i in (0..a.spans.len()).step_by(corrupt) {
            let (at, len) = a.spans[i];
            a.data[at + len - 1] ^= 0x20;
        }
    }
    let mut b = Batch { data: a.data.clone(), spans: a.spans.clone(), fields: a.fields.clone() };
    let oa: Vec<Outcome> = {
        let mut ja = jobs(&mut a, ck);
        cpu.transform(&mut ja);
        ja.iter().map(|j| j.outcome).collect()
    };
    let ob: Vec<Outcome> = {
        let mut jb = jobs(&mut b, gk);
        gpu.transform_gpu(&mut jb).map_err(|e| e.to_string())?;
        jb.iter().map(|j| j.outcome).collect()
    };
    for i in 0..oa.len() {
        let (at, len) = a.spans[i];
        if oa[i] != ob[i] || (oa[i] == Outcome::Done && a.data[at..at + len] != b.data[at..at + len]) {
            return Err(format!("packet {i}: cpu {:?} gpu {:?}", oa[i], ob[i]));
        }
    }
    Ok(oa.len())
}

/// p50 and p99 (µs) of each stage of the traced batches of `n` packets.
fn stage_figures(
    trace: &[srtp_cuda::BatchStages],
    n: usize,
    round_trip_p50: Option<f64>,
) -> Option<std::collections::BTreeMap<&'static str, [f64; 2]>> {
    let of: Vec<&srtp_cuda::BatchStages> = trace.iter().filter(|b| b.packets as usize == n).collect();
    if of.is_empty() {
        return None;
    }
    let pick = |f: &dyn Fn(&srtp_cuda::BatchStages) -> f64| {
        let mut v: Vec<f64> = of.iter().map(|b| f(b) / 1e3).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        [(percentile(&v, 0.5) * 100.0).round() / 100.0, (percentile(&v, 0.99) * 100.0).round() / 100.0]
    };
    let mut m = std::collections::BTreeMap::new();
    m.insert("1_read", pick(&|b| b.read_ns));
    m.insert("2_stage", pick(&|b| b.stage_ns));
    m.insert("3_transform", pick(&|b| b.transform_ns));
    m.insert("4_write", pick(&|b| b.write_ns));
    let span = pick(&|b| b.span_ns);
    m.insert("5_span", span);
    if let Some(rt) = round_trip_p50 {
        m.insert("6_outside", [((rt - span[0]) * 100.0).round() / 100.0, f64::NAN]);
    }
    m.insert("batches", [of.len() as f64, of.len() as f64]);
    Some(m)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn rec(engine: &str, suite: Suite, op: &str, payload: usize, ns: f64) -> GpuRecord {
    GpuRecord {
        engine: engine.into(),
        suite: suite.name().into(),
        op: op.into(),
        payload,
        streams: 1,
        ns_per_op: (ns * 10.0).round() / 10.0,
        ops_per_s: (1e9 / ns).round(),
        ..Default::default()
    }
}

/// Throughput (and, for small batches, round-trip latency) of `gpu` on
/// batches of `n` packets.
fn measure_gpu(gpu: &GpuEngine, suite: Suite, n: usize, payload: usize, budget: Duration) -> Result<GpuRecord, String> {
    let keys = session_keys(suite, 1024.min(n.max(1)));
    let gk: Vec<_> = keys.iter().map(|k| gpu.prepare_keys(k).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
    let mut batch = make_batch(suite, n, payload, gk.len(), Op::Protect, n as u64);
    let mut lat = Vec::new();
    // Warm-up.
    gpu.transform_gpu(&mut jobs(&mut batch, &gk)).map_err(|e| e.to_string())?;
    let start = Instant::now();
    while start.elapsed() < budget || lat.len() < 5 {
        let mut j = jobs(&mut batch, &gk);
        let t = Instant::now();
        gpu.transform_gpu(&mut j).map_err(|e| e.to_string())?;
        lat.push(t.elapsed().as_secs_f64() * 1e6);
        black_box(&j);
        if lat.len() > 100_000 {
            break;
        }
    }
    let mut sorted = lat.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median_us = percentile(&sorted, 0.5);
    let ns = median_us * 1e3 / n as f64;
    let mut r = rec(gpu.name(), suite, "protect", payload, ns);
    r.batch = Some(n);
    r.mode = Some(if gpu.config().mode == Mode::Launch { "launch" } else { "persistent" }.into());
    r.gbit_s = Some(((12 + payload) as f64 * 8.0) / ns);
    r.latency_us_p50 = Some((median_us * 10.0).round() / 10.0);
    r.latency_us_p99 = Some((percentile(&sorted, 0.99) * 10.0).round() / 10.0);
    r.blocks = Some(gpu.info().blocks);
    Ok(r)
}

/// The CPU engine on every core: each thread transforms its own batch.
fn cpu_all_cores(suite: Suite, payload: usize, budget: Duration) -> GpuRecord {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = 4096;
    let total_ops: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let cpu = CpuEngine::new();
                    let keys: Vec<_> =
                        session_keys(suite, 64).iter().map(|k| cpu.prepare_keys(k).expect("keys")).collect();
                    let mut batch = make_batch(suite, per, payload, keys.len(), Op::Protect, t as u64);
                    let start = Instant::now();
                    let mut ops = 0u64;
                    while start.elapsed() < budget {
                        let mut j = jobs(&mut batch, &keys);
                        cpu.transform(&mut j);
                        black_box(&j);
                        ops += per as u64;
                    }
                    (ops, start.elapsed())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().map(|(o, _)| o).unwrap_or(0)).sum()
    });
    let ns = budget.as_secs_f64() * 1e9 / total_ops as f64;
    let mut r = rec("cpu-all-cores", suite, "protect", payload, ns);
    r.threads = Some(threads);
    r.gbit_s = Some(((12 + payload) as f64 * 8.0) / ns);
    r
}

/// One packet of `payload` bytes through `engine`, single-packet latency.
fn one_packet<E: Engine>(engine: &E, suite: Suite, payload: usize, reps: usize) -> Result<f64, String> {
    let keys: Vec<_> = session_keys(suite, 1)
        .iter()
        .map(|k| engine.prepare_keys(k).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut batch = make_batch(suite, 1, payload, 1, Op::Protect, 99);
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let mut j = jobs(&mut batch, &keys);
        let t = Instant::now();
        engine.transform(&mut j);
        samples.push(t.elapsed().as_nanos() as f64);
    }
    samples.sort_by(|a, b| a.total_cmp(b));
    Ok(percentile(&samples, 0.5))
}

pub fn run(opts: GpuBenchOptions, json: bool) -> Result<(), String> {
    for o in &opts.only {
        if !SECTIONS.contains(&o.as_str()) {
            return Err(format!("--only {o:?}: not a section (one of {})", SECTIONS.join(", ")));
        }
    }
    if opts.threads.iter().any(|&t| t == 0 || t > 64) {
        return Err("--threads: 1..=64 submitting threads".into());
    }
    // The pool section's packets: 12 + 160 bytes and a tag of up to 16.
    if opts.pitches.iter().any(|&p| !(188..=8192).contains(&p)) {
        return Err("--pitch: frame pitches of 188..=8192 bytes (a packet is up to 188; 1 Mi frames are pinned)".into());
    }
    let on = |s: &str| opts.only.is_empty() || opts.only.iter().any(|o| o == s);
    let mut out: Vec<GpuRecord> = Vec::new();
    let budget = Duration::from_secs_f64(opts.seconds.clamp(0.01, 30.0));
    let say = |r: &GpuRecord| {
        if !json {
            println!(
                "{:<15} {:<24} {:<9} batch {:>8} {:>10.1} ns/op {:>14.0} ops/s {:>8.1} Gbit/s p50 {:>9.1} us p99 {:>9.1} us",
                r.engine,
                r.suite,
                r.op,
                r.batch.unwrap_or(1),
                r.ns_per_op,
                r.ops_per_s,
                r.gbit_s.unwrap_or(0.0),
                r.latency_us_p50.unwrap_or(0.0),
                r.latency_us_p99.unwrap_or(0.0)
            );
        }
    };
    // Launch, persistent, and launch with the frames moved in by DMA.
    let configs = [(Mode::Launch, false), (Mode::Persistent, false), (Mode::Launch, true)];
    let mut engines = Vec::new();
    for (mode, dma_in) in configs {
        let devices = (0..opts.gpus).collect();
        match GpuEngine::new(GpuConfig { mode, dma_in, lanes: opts.lanes, devices, ..Default::default() }) {
            Ok(e) => engines.push(e),
            Err(e @ srtp_cuda::GpuError::Unavailable(_)) => {
                eprintln!("srtpgate: {e}; measuring the CPU engines only");
                break;
            }
            // A GPU is there but the engine did not start: an error, not a
            // CPU-only run that would pass for a measurement.
            Err(e) => return Err(format!("the GPU engine did not start: {e}")),
        }
    }
    if let Some(g) = engines.first() {
        let i = g.info();
        let gpus: Vec<String> = i
            .gpus
            .iter()
            .map(|p| {
                format!("{} (node {}, {} lanes)", p.ordinal, p.numa.map_or("?".into(), |n| n.to_string()), p.lanes)
            })
            .collect();
        eprintln!(
            "GPU: {} × {} (sm_{}{}, {} SMs), {} blocks × {} threads, {} lanes: GPUs {}",
            i.gpus.len(),
            i.name,
            i.cc.0,
            i.cc.1,
            i.sms,
            i.blocks,
            i.threads,
            i.lanes,
            gpus.join(", ")
        );
    }
    if let Some(g) = engines.first().filter(|_| on("links")) {
        let (h2d, d2h) = g.pcie_bandwidth(64 << 20, 20).map_err(|e| e.to_string())?;
        let (h2d0, d2h0) = g.pcie_bandwidth_with(64 << 20, 20, 0).map_err(|e| e.to_string())?;
        for (op, bw) in [
            ("pcie_h2d", h2d),
            ("pcie_d2h", d2h),
            ("pcie_h2d_pinned_unmapped", h2d0),
            ("pcie_d2h_pinned_unmapped", d2h0),
        ] {
            let mut r =
                GpuRecord { engine: "pcie".into(), op: op.into(), bytes_per_s: Some(bw.round()), ..Default::default() };
            r.gbit_s = Some(bw * 8.0 / 1e9);
            if !json {
                println!("{op}: {:.1} GB/s (pinned, 64 MiB transfers)", bw / 1e9);
            }
            out.push(r);
        }
        let (to_pinned, to_plain) = g.host_copy_bandwidth(64 << 20, 10).map_err(|e| e.to_string())?;
        for (op, bw) in [("host_copy_to_pinned", to_pinned), ("host_copy_to_pageable", to_plain)] {
            let r =
                GpuRecord { engine: "host".into(), op: op.into(), bytes_per_s: Some(bw.round()), ..Default::default() };
            if !json {
                println!("{op}: {:.1} GB/s (one thread, 64 MiB)", bw / 1e9);
            }
            out.push(r);
        }
    }
    if on("exact") {
        for g in &engines {
            let n = check_exact(g, 7).map_err(|e| format!("{}: {e}", g.name()))?;
            eprintln!(
                "{}: bit-identical to the CPU engine on {n} packed packets (8 suites, protect and unprotect)",
                g.name()
            );
            let n = check_exact_pool(g, 9).map_err(|e| format!("{}: {e}", g.name()))?;
            eprintln!(
                "{}: bit-identical to the CPU engine on {n} packets in registered memory (pool and AF_XDP \
                 layouts, 8 suites, protect and unprotect)",
                g.name()
            );
        }
    }
    if let Some(g) = engines.first().filter(|_| on("kernel")) {
        // The kernel alone, the batch resident on the device: the GPU's own
        // limit, without the host link.
        for &suite in &opts.suites {
            let keys = session_keys(suite, 1024);
            let gk: Vec<_> =
                keys.iter().map(|k| g.prepare_keys(k).map_err(|e| e.to_string())).collect::<Result<_, _>>()?;
            let mut batch = make_batch(suite, 65_536, 160, gk.len(), Op::Protect, 5);
            let j = jobs(&mut batch, &gk);
            let ns = g.kernel_only(&j, if opts.quick { 5 } else { 50 }).map_err(|e| e.to_string())?;
            let mut r = rec("gpu-kernel", suite, "kernel_only", 160, ns);
            r.batch = Some(65_536);
            r.gbit_s = Some(172.0 * 8.0 / ns);
            r.blocks = Some(g.info().blocks);
            say(&r);
            out.push(r);
            // The same kernel on packets in registered host memory (read and
            // written over PCIe where they lie), without the host's part.
            let len = batch.spans[0].1;
            for (name, pitch, offset) in layouts() {
                let mut mem = PoolMemory::new(g, 65_536 * pitch, pitch)?;
                let frames = mem.frames(0, 65_536, pitch, offset, len);
                let j = jobs_in(frames, &batch.fields, &gk);
                let ns = g.kernel_only(&j, if opts.quick { 5 } else { 50 }).map_err(|e| e.to_string())?;
                let mut r = rec("gpu-kernel", suite, &format!("kernel_only_{name}"), 160, ns);
                r.batch = Some(65_536);
                r.gbit_s = Some(172.0 * 8.0 / ns);
                r.blocks = Some(g.info().blocks);
                say(&r);
                out.push(r);
            }
        }
    }
    let pool_engines: Vec<&GpuEngine> = engines.iter().filter(|g| g.config().mode == Mode::Launch).collect();
    for g in pool_engines.into_iter().filter(|_| on("pool")) {
        // Packets where a relay keeps them: launch mode (read over PCIe, or
        // moved in by DMA), every layout, batch and number of submitting
        // threads (at most 1 Mi packets in flight).
        // As many frames as the largest load runs (at most 1 Mi), pinned.
        let max_packets = opts
            .batches
            .iter()
            .filter(|&&n| n >= 1024)
            .flat_map(|&n| opts.threads.iter().map(move |&t| n * t))
            .filter(|&p| p <= 1 << 20)
            .max()
            .unwrap_or(1024);
        let pool_layouts: Vec<(&str, usize, usize)> = if opts.pitches.is_empty() {
            layouts().to_vec()
        } else {
            opts.pitches.iter().map(|&p| ("pitch", p, 0)).collect()
        };
        for layout in pool_layouts {
            let mut mem = PoolMemory::new(g, max_packets * layout.1, layout.1)?;
            for &suite in &opts.suites {
                for &n in opts.batches.iter().filter(|&&n| n >= 1024) {
                    for &t in &opts.threads {
                        if n * t > max_packets {
                            continue;
                        }
                        let mut r = pool_throughput(g, &mut mem, layout, suite, n, t, 160, budget)?;
                        if layout.0 == "pitch" {
                            r.op = format!("protect_pitch{}", layout.1);
                        }
                        say(&r);
                        out.push(r);
                    }
                }
            }
        }
    }
    for g in engines.iter().filter(|g| g.config().mode == Mode::Launch).filter(|_| on("pool")) {
        // The pool layout in transparent huge pages (fewer pages for the
        // device to translate), the two heaviest loads of the section.
        let layout = layouts()[0];
        let mut mem = PoolMemory::with_pages(g, (1 << 20) * layout.1, layout.1, true)?;
        for &suite in &opts.suites {
            for (n, t) in [(16_384usize, 16usize), (65_536, 8)] {
                let mut r = pool_throughput(g, &mut mem, layout, suite, n, t, 160, budget)?;
                r.op = "protect_pool_thp".into();
                say(&r);
                out.push(r);
            }
        }
    }
    if on("latency") {
        // Round trips from the pool, one thread, both modes.
        for g in &engines {
            let mut mem = PoolMemory::new(g, 4096 * pool_pitch(), pool_pitch())?;
            for &n in &[1usize, 16, 64, 256, 1024, 4096] {
                let mut r =
                    pool_throughput(g, &mut mem, layouts()[0], Suite::AES_CM_128_HMAC_SHA1_80, n, 1, 160, budget)?;
                r.op = "round_trip_pool".into();
                if g.config().mode == Mode::Persistent {
                    let trace = g.stage_trace().map_err(|e| e.to_string())?;
                    r.stages_us = stage_figures(&trace, n, r.latency_us_p50);
                    if let (Some(st), false) = (&r.stages_us, json) {
                        let parts: Vec<String> =
                            st.iter().map(|(k, v)| format!("{k} {:.1}/{:.1}", v[0], v[1])).collect();
                        println!("{} stages of {n} (p50/p99 us): {}", g.name(), parts.join(", "));
                    }
                }
                say(&r);
                out.push(r);
            }
        }
    }
    if on("packed") {
        for g in engines.iter().filter(|g| !g.config().dma_in) {
            for &suite in &opts.suites {
                for &n in &opts.batches {
                    let r = measure_gpu(g, suite, n, 160, budget)?;
                    say(&r);
                    out.push(r);
                }
            }
        }
    }
    if on("cpu") {
        for &suite in &opts.suites {
            let r = cpu_all_cores(suite, 160, budget);
            say(&r);
            out.push(r);
        }
    }
    if on("calibrate") {
        for g in engines.iter().filter(|g| !g.config().dma_in) {
            let cal = g.calibrate().map_err(|e| e.to_string())?;
            for &(n, cpu_us, gpu_us) in &cal.rows {
                let mut r = rec(g.name(), Suite::AES_CM_128_HMAC_SHA1_80, "calibrate", 160, gpu_us * 1e3 / n as f64);
                r.batch = Some(n);
                r.latency_us_p50 = Some((gpu_us * 10.0).round() / 10.0);
                r.mode = Some(format!("cpu_us={:.1}", cpu_us));
                if !json {
                    println!("{} calibrate batch {n:>5}: cpu {cpu_us:>9.1} us, gpu {gpu_us:>9.1} us", g.name());
                }
                out.push(r);
            }
            let t = if cal.threshold == usize::MAX { "never".to_string() } else { cal.threshold.to_string() };
            eprintln!("{}: hybrid threshold measured: batches from {t} packets go to the GPU", g.name());
        }
    }
    if let Some(g) = engines.first().filter(|_| on("blocks")) {
        // Throughput against the number of blocks in use (launch mode).
        let sms = g.info().sms;
        let mut blocks = 1u32;
        while blocks <= sms * 8 {
            let ge = GpuEngine::new(GpuConfig { mode: Mode::Launch, blocks, ..Default::default() })
                .map_err(|e| e.to_string())?;
            let mut r = measure_gpu(&ge, Suite::AES_CM_128_HMAC_SHA1_80, 65_536, 160, budget / 2)?;
            r.op = "blocks_sweep".into();
            say(&r);
            out.push(r);
            blocks = if blocks < sms && blocks * 2 > sms { sms } else { blocks * 2 };
        }
    }
    // The thesis's table 6.1: one packet of 1, 5, 10, 15, 20 AES blocks.
    let suite = Suite::AES_CM_128_HMAC_SHA1_80;
    let blocks_list: &[usize] = if on("one-packet") { &[1, 5, 10, 15, 20] } else { &[] };
    for &aes_blocks in blocks_list {
        let payload = aes_blocks * 16;
        let mut rows = vec![
            ("cpu", one_packet(&CpuEngine::new(), suite, payload, 20_000)?),
            ("portable", one_packet(&PortableEngine::new(), suite, payload, 20_000)?),
        ];
        for g in engines.iter().filter(|g| !g.config().dma_in) {
            rows.push((g.name(), one_packet(g, suite, payload, if opts.quick { 200 } else { 2000 })?));
        }
        for (name, ns) in rows {
            let mut r = rec(name, suite, "one_packet", payload, ns);
            r.batch = Some(1);
            say(&r);
            out.push(r);
        }
    }
    if json {
        #[derive(Serialize)]
        struct Doc<'a> {
            machine: String,
            gpu: Option<String>,
            results: &'a [GpuRecord],
        }
        let gpu = engines.first().map(|g| g.info().name.clone());
        let doc = Doc { machine: crate::machine::machine(), gpu, results: &out };
        println!("{}", serde_json::to_string(&doc).map_err(|e| e.to_string())?);
    }
    Ok(())
}
