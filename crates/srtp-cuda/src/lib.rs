//! The GPU engine: batched SRTP on CUDA, behind the same [`srtp::Engine`]
//! interface as the CPU engines.
//!
//! * Kernels are CUDA C (`kernels/srtp.cu`), compiled by NVRTC when the engine
//!   starts, for the device's own architecture (sm_90 on Hopper). The CUDA
//!   driver and NVRTC are loaded at run time (cudarc's dynamic loading), so the
//!   binary builds and runs on machines without CUDA: there, [`GpuEngine::new`]
//!   returns [`GpuError::Unavailable`] and callers run on the CPU.
//! * Per-session precomputation lives on the device: a key slot holds the AES
//!   round keys, the HMAC-SHA1 midstates and the GHASH table of one session
//!   key ([`layout`]). It is uploaded once when a key is installed
//!   ([`srtp::Engine::prepare_keys`]) and its slot is freed when the keys drop.
//!   A batch carries packet bytes and a 64-byte descriptor per packet only.
//! * Two modes ([`Mode`]): `Launch` (one host→device copy of the packed batch,
//!   one kernel, one copy back, double-buffered on two streams so that copies
//!   and compute of consecutive chunks overlap) and `Persistent` (a resident
//!   kernel that polls a descriptor ring in mapped pinned host memory: no launch
//!   and no copy per batch).
//! * Hybrid: batches smaller than [`GpuConfig::cpu_below`] run on the CPU
//!   engine, which every key also carries.
//!
//! This is the only crate of the project with `unsafe`: raw device memory,
//! pinned host memory and kernel launches. Every block says why it is sound.

pub mod batcher;
pub mod layout;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use srtp::cpu::CpuKeys;
use srtp::engine::{Engine, Job, Outcome};
use srtp::{CpuEngine, SessionKeys};
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The suites the kernels implement (AES-f8 runs on the CPU inside the engine).
pub const KERNEL_SUITES: [srtp::Suite; 10] = [
    srtp::Suite::AES_CM_128_HMAC_SHA1_80,
    srtp::Suite::AES_CM_128_HMAC_SHA1_32,
    srtp::Suite::AES_192_CM_HMAC_SHA1_80,
    srtp::Suite::AES_192_CM_HMAC_SHA1_32,
    srtp::Suite::AES_256_CM_HMAC_SHA1_80,
    srtp::Suite::AES_256_CM_HMAC_SHA1_32,
    srtp::Suite::AEAD_AES_128_GCM,
    srtp::Suite::AEAD_AES_256_GCM,
    srtp::Suite::NULL_HMAC_SHA1_80,
    srtp::Suite::NULL_HMAC_SHA1_32,
];

/// The kernels' source, compiled at start by NVRTC.
pub const KERNEL_SOURCE: &str = include_str!("../kernels/srtp.cu");

/// Why the GPU engine could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No driver, no device, or no NVRTC: the GPU engine is unavailable here.
    #[error("GPU engine unavailable: {0}")]
    Unavailable(String),
    /// A CUDA call failed.
    #[error("CUDA error: {0}")]
    Cuda(String),
    /// NVRTC refused the kernels.
    #[error("kernel compilation failed: {0}")]
    Compile(String),
    /// Out of key slots or a batch too large for the configured buffers.
    #[error("GPU engine capacity: {0}")]
    Capacity(String),
    /// The persistent kernel did not answer in time.
    #[error("persistent kernel did not complete a batch within {0:?}")]
    Timeout(Duration),
}

impl From<result::DriverError> for GpuError {
    fn from(e: result::DriverError) -> Self {
        GpuError::Cuda(format!("{e:?}"))
    }
}

/// How batches reach the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One launch per chunk, copies in and out, two streams.
    Launch,
    /// A resident kernel polling a ring in mapped host memory.
    Persistent,
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "launch" => Ok(Mode::Launch),
            "persistent" => Ok(Mode::Persistent),
            _ => Err(format!("unknown GPU mode {s:?} (launch, persistent)")),
        }
    }
}

/// Settings of the GPU engine.
#[derive(Clone, Debug)]
pub struct GpuConfig {
    /// Launch or persistent.
    pub mode: Mode,
    /// CUDA device ordinal.
    pub device: usize,
    /// Key slots on the device (one per session key and direction).
    pub key_slots: u32,
    /// Packets per chunk (launch) or per ring batch (persistent).
    pub chunk_packets: usize,
    /// Bytes of packet data per chunk.
    pub chunk_bytes: usize,
    /// Thread blocks (0 = the device's multiprocessors × 3 for launch, × 1
    /// for persistent: every block of the resident kernel must be resident).
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Batches with fewer packets run on the CPU engine (0 = never).
    pub cpu_below: usize,
    /// How long the persistent kernel may wait for a batch before a call gives up.
    pub timeout: Duration,
    /// The persistent kernel exits after this long without work (it is
    /// relaunched on the next batch), so it can never hold the device forever.
    pub idle_exit: Duration,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            mode: Mode::Launch,
            device: 0,
            key_slots: 65_536,
            chunk_packets: 65_536,
            chunk_bytes: 65_536 * 192,
            blocks: 0,
            threads: 256,
            cpu_below: 0,
            timeout: Duration::from_secs(5),
            idle_exit: Duration::from_secs(10),
        }
    }
}

/// Session keys as the GPU engine holds them: a device key slot (freed on
/// drop) and the CPU engine's keys for the hybrid path.
pub struct GpuKeys {
    /// None for suites the kernels do not implement (AES-f8): such jobs run
    /// on the CPU within the same batch.
    slot: Option<u32>,
    cpu: CpuKeys,
    pool: Arc<Shared>,
}

impl Drop for GpuKeys {
    fn drop(&mut self) {
        // A lock per key removal, never per packet. The slot's words stay on
        // the device until reused; they are overwritten by the next install.
        if let (Some(slot), Ok(mut free)) = (self.slot, self.pool.free_slots.lock()) {
            free.0.push(slot);
        }
    }
}

/// Device state shared by the engine handle and the keys.
struct Shared {
    ctx: Arc<CudaContext>,
    keys_dev: CUdeviceptr,
    /// Freed slots, and the next slot never used.
    free_slots: Mutex<(Vec<u32>, u32)>,
    key_slots: u32,
    /// A freed slot was given to new keys. The resident kernel may hold the
    /// old words in an SM's L1 (not coherent with host writes), so it is
    /// restarted — a launch starts with a clean L1 — before the next batch.
    reused: std::sync::atomic::AtomicBool,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: keys_dev was allocated by malloc_sync in this context and is
        // freed once, after every user (engine and keys) has gone.
        unsafe {
            let _ = self.ctx.bind_to_thread();
            let _ = result::free_sync(self.keys_dev);
        }
    }
}

/// Page-locked host memory, mapped into the device's address space.
struct Pinned {
    ptr: *mut u8,
    len: usize,
    dev: CUdeviceptr,
}

// SAFETY: the buffer is plain memory owned by this struct; access is
// serialised by the engine's runner mutex.
unsafe impl Send for Pinned {}

impl Pinned {
    fn new(len: usize) -> Result<Pinned, GpuError> {
        Pinned::with_flags(len, sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE)
    }

    fn with_flags(len: usize, flags: u32) -> Result<Pinned, GpuError> {
        // SAFETY: a fresh allocation of `len` bytes, zeroed before use; the
        // device pointer is asked for only when the memory is mapped.
        unsafe {
            let ptr = result::malloc_host(len.max(16), flags)? as *mut u8;
            std::ptr::write_bytes(ptr, 0, len);
            let mut dev: CUdeviceptr = 0;
            if flags & sys::CU_MEMHOSTALLOC_DEVICEMAP != 0 {
                sys::cuMemHostGetDevicePointer_v2(&mut dev, ptr as *mut _, 0).result()?;
            }
            Ok(Pinned { ptr, len, dev })
        }
    }

    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: ptr/len describe our live allocation; &mut self gives exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
    fn words(&self, at: usize) -> *mut u32 {
        debug_assert!(at.is_multiple_of(4) && at < self.len);
        // SAFETY: in bounds (checked by callers' layout), 4-aligned.
        unsafe { self.ptr.add(at) as *mut u32 }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_host, freed once.
        unsafe {
            let _ = result::free_host(self.ptr as *mut _);
        }
    }
}

/// A device buffer.
struct DevBuf {
    ptr: CUdeviceptr,
}

impl DevBuf {
    fn new(len: usize) -> Result<DevBuf, GpuError> {
        // SAFETY: plain device allocation, freed in Drop.
        Ok(DevBuf { ptr: unsafe { result::malloc_sync(len.max(16))? } })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_sync, freed once.
        unsafe {
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// One staging lane of the launch mode: pinned host buffer + device buffer +
/// stream.
struct Lane {
    host: Pinned,
    dev: DevBuf,
    stream: Arc<CudaStream>,
}

/// Layout of a staged chunk: descriptors first, then the packet data.
fn chunk_layout(cfg: &GpuConfig) -> (usize, usize) {
    let descs = cfg.chunk_packets * layout::DESC_WORDS * 4;
    (descs, descs + cfg.chunk_bytes)
}

/// The persistent kernel's ring (control words, descriptors, data) in mapped
/// host memory, and the stream it runs on.
struct Ring {
    mem: Pinned,
    counter: DevBuf,
    /// Device copy of the data region: the kernel stages packets here.
    scratch: DevBuf,
    stream: Arc<CudaStream>,
    seq: u32,
    running: bool,
}

const CTL_BYTES: usize = 256;
/// Control words (see kernels/srtp.cu): doorbell, count, stop, completion, exited.
const CTL_DOORBELL: usize = 0;
const CTL_COUNT: usize = 1;
const CTL_STOP: usize = 2;
const CTL_DONE: usize = 3;
const CTL_EXITED: usize = 4;

struct Runner {
    lanes: Vec<Lane>,
    ring: Option<Ring>,
}

/// Batches larger than this are split into chunks.
/// The GPU engine. Cheap to clone (a handle); `transform` serialises batches.
#[derive(Clone)]
pub struct GpuEngine {
    shared: Arc<Shared>,
    runner: Arc<Mutex<Runner>>,
    launch_fn: Arc<CudaFunction>,
    persistent_fn: Arc<CudaFunction>,
    te0: Arc<DevBuf>,
    cfg: Arc<GpuConfig>,
    cpu: CpuEngine,
    info: Arc<DeviceInfo>,
}

/// What the engine found out about its device.
#[derive(Clone, Debug)]
pub struct DeviceInfo {
    /// Device name.
    pub name: String,
    /// Compute capability.
    pub cc: (i32, i32),
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Blocks in use.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
}

/// Whether the CUDA driver and NVRTC libraries can be loaded here.
pub fn libraries_present() -> bool {
    // SAFETY: these only try to dlopen the libraries.
    unsafe { cudarc::driver::sys::is_culib_present() && cudarc::nvrtc::sys::is_culib_present() }
}

impl GpuEngine {
    /// Starts the engine: loads the driver, compiles the kernels for the
    /// device, allocates key slots and staging buffers (and starts the
    /// persistent kernel in that mode).
    pub fn new(cfg: GpuConfig) -> Result<GpuEngine, GpuError> {
        // SAFETY: only probes for the shared libraries.
        if unsafe { !cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::Unavailable("the CUDA driver (libcuda.so) is not installed".into()));
        }
        // SAFETY: as above.
        if unsafe { !cudarc::nvrtc::sys::is_culib_present() } {
            return Err(GpuError::Unavailable("NVRTC (libnvrtc.so) is not installed".into()));
        }
        let count = CudaContext::device_count().map_err(|e| GpuError::Unavailable(format!("{e:?}")))?;
        if count <= cfg.device as i32 {
            return Err(GpuError::Unavailable(format!("no CUDA device {} ({count} present)", cfg.device)));
        }
        let ctx = CudaContext::new(cfg.device).map_err(|e| GpuError::Unavailable(format!("{e:?}")))?;
        let name = ctx.name()?;
        let cc = ctx.compute_capability()?;
        let sms = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let arch: &'static str = Box::leak(format!("sm_{}{}", cc.0, cc.1).into_boxed_str());
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(
            KERNEL_SOURCE,
            cudarc::nvrtc::CompileOptions {
                arch: Some(arch),
                options: vec!["-default-device".into()],
                ..Default::default()
            },
        )
        .map_err(|e| GpuError::Compile(format!("{e:?}")))?;
        let module = ctx.load_module(ptx)?;
        let launch_fn = module.load_function("srtp_launch")?;
        let persistent_fn = module.load_function("srtp_persistent")?;

        let key_bytes = cfg.key_slots as usize * layout::KEY_WORDS * 4;
        // SAFETY: device allocation, owned by Shared.
        let keys_dev = unsafe { result::malloc_sync(key_bytes)? };
        let shared = Arc::new(Shared {
            ctx: ctx.clone(),
            keys_dev,
            free_slots: Mutex::new((Vec::new(), 0)),
            key_slots: cfg.key_slots,
            reused: std::sync::atomic::AtomicBool::new(false),
        });
        let te0 = DevBuf::new(256 * 4)?;
        // SAFETY: te0 holds 1 KiB; the source slice is 256 words.
        unsafe { result::memcpy_htod_sync(te0.ptr, &layout::te0())? };

        let blocks = if cfg.blocks > 0 {
            cfg.blocks
        } else if cfg.mode == Mode::Persistent {
            sms
        } else {
            // 256 threads use 72 registers each: 3 blocks fit an SM.
            sms * 3
        };
        let info = DeviceInfo { name, cc, sms, blocks, threads: cfg.threads };
        let (_, chunk) = chunk_layout(&cfg);
        let mut runner = Runner { lanes: Vec::new(), ring: None };
        match cfg.mode {
            Mode::Launch => {
                for _ in 0..2 {
                    // Plain (unmapped) pinned memory: copies from mapped memory ran
                    // at 6 and 1.6 GB/s on the H100 machine, from this at 55 GB/s.
                    runner.lanes.push(Lane {
                        host: Pinned::with_flags(chunk, 0)?,
                        dev: DevBuf::new(chunk)?,
                        stream: ctx.new_stream()?,
                    });
                }
            }
            Mode::Persistent => {
                runner.ring = Some(Ring {
                    mem: Pinned::new(CTL_BYTES + chunk)?,
                    counter: DevBuf::new(16)?,
                    scratch: DevBuf::new(chunk)?,
                    stream: ctx.new_stream()?,
                    seq: 0,
                    running: false,
                });
            }
        }
        let engine = GpuEngine {
            shared,
            runner: Arc::new(Mutex::new(runner)),
            launch_fn: Arc::new(launch_fn),
            persistent_fn: Arc::new(persistent_fn),
            te0: Arc::new(te0),
            cfg: Arc::new(cfg),
            cpu: CpuEngine::new(),
            info: Arc::new(info),
        };
        if engine.cfg.mode == Mode::Persistent {
            let mut r = engine.runner.lock().map_err(|_| GpuError::Cuda("runner lock poisoned".into()))?;
            engine.start_persistent(r.ring.as_mut().expect("persistent mode has a ring"))?;
        }
        Ok(engine)
    }

    /// The device and launch geometry.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The configuration.
    pub fn config(&self) -> &GpuConfig {
        &self.cfg
    }

    fn launch_config(&self, n: usize) -> LaunchConfig {
        // Packet i runs on thread i / blocks of block i % blocks (see the
        // kernels): up to `blocks` packets, one per block, across every SM.
        let threads = self.info.threads;
        let grid = (n.max(1) as u32).min(self.info.blocks);
        LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 }
    }

    fn start_persistent(&self, ring: &mut Ring) -> Result<(), GpuError> {
        let ctl = ring.mem.words(0);
        // SAFETY: ctl points at the first CTL_BYTES of the mapped ring; the
        // kernel is not running (running == false), so the host owns it.
        unsafe {
            std::ptr::write_volatile(ctl.add(CTL_STOP), 0);
            std::ptr::write_volatile(ctl.add(CTL_EXITED), 0);
            std::ptr::write_volatile(ctl.add(CTL_DONE), ring.seq);
            std::ptr::write_volatile(ctl.add(CTL_DOORBELL), ring.seq);
            // counter = 0; relay: doorbell = last completed batch, count 0, no stop.
            result::memcpy_htod_sync(ring.counter.ptr, &[0u32, ring.seq, 0, 0])?;
        }
        fence(Ordering::SeqCst);
        let descs = ring.mem.dev + CTL_BYTES as u64;
        let data = descs + (self.cfg.chunk_packets * layout::DESC_WORDS * 4) as u64;
        let idle_ns = self.cfg.idle_exit.as_nanos() as u64;
        let cfg = LaunchConfig {
            grid_dim: (self.info.blocks, 1, 1),
            block_dim: (self.info.threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = ring.stream.launch_builder(&self.persistent_fn);
        let keys = self.shared.keys_dev;
        let ctl_dev = ring.mem.dev;
        let counter = ring.counter.ptr;
        let te0 = self.te0.ptr;
        let scratch = ring.scratch.ptr;
        b.arg(&keys).arg(&ctl_dev).arg(&descs).arg(&data).arg(&counter).arg(&te0).arg(&idle_ns).arg(&scratch);
        // SAFETY: the arguments are device pointers of live allocations that
        // outlive the kernel (it is stopped in Drop before they are freed).
        unsafe { b.launch(cfg)? };
        ring.running = true;
        Ok(())
    }

    /// Packs `jobs` into a staging area: descriptors at 0, data after
    /// `data_at`. Returns the data bytes used, or None if they do not fit.
    /// Large batches are packed by several threads, each into its own
    /// contiguous part of the area.
    fn pack(jobs: &[Job<'_, GpuKeys>], area: &mut [u8], data_at: usize) -> Option<usize> {
        let total: usize = jobs.iter().map(staged_len).sum();
        if jobs.len() * DESC_BYTES > data_at || data_at + total > area.len() {
            return None;
        }
        let (mut descs, mut data) = area.split_at_mut(data_at);
        let per = part_size(jobs.len());
        if per >= jobs.len() {
            pack_part(jobs, descs, data, 0);
            return Some(total);
        }
        std::thread::scope(|scope| {
            let mut base = 0;
            for part in jobs.chunks(per) {
                let bytes: usize = part.iter().map(staged_len).sum();
                let (d, rest) = std::mem::take(&mut descs).split_at_mut(part.len() * DESC_BYTES);
                descs = rest;
                let (x, rest) = std::mem::take(&mut data).split_at_mut(bytes);
                data = rest;
                let b = base;
                base += bytes;
                scope.spawn(move || pack_part(part, d, x, b));
            }
        });
        Some(total)
    }

    /// Copies results back into the jobs (and runs the CPU-only ones), with
    /// several threads for large batches.
    fn unpack(&self, jobs: &mut [Job<'_, GpuKeys>], area: &[u8], data_at: usize) {
        let (mut descs, mut data) = area.split_at(data_at);
        let per = part_size(jobs.len());
        let cpu = &self.cpu;
        if per >= jobs.len() {
            return unpack_part(cpu, jobs, descs, data);
        }
        std::thread::scope(|scope| {
            for part in jobs.chunks_mut(per) {
                let bytes: usize = part.iter().map(staged_len).sum();
                let (d, rest) = descs.split_at(part.len() * DESC_BYTES);
                descs = rest;
                let (x, rest) = data.split_at(bytes);
                data = rest;
                scope.spawn(move || unpack_part(cpu, part, d, x));
            }
        });
    }

    /// How many of `jobs` fit one chunk.
    fn chunk_len(&self, jobs: &[Job<'_, GpuKeys>]) -> usize {
        let mut bytes = 0usize;
        let mut n = 0usize;
        for job in jobs.iter().take(self.cfg.chunk_packets) {
            let len = if job.keys.slot.is_some() { job.buf.len() } else { 0 };
            let next = bytes + len.next_multiple_of(16);
            if next > self.cfg.chunk_bytes {
                break;
            }
            bytes = next;
            n += 1;
        }
        n
    }

    fn run_cpu(&self, jobs: &mut [Job<'_, GpuKeys>]) {
        run_cpu_with(&self.cpu, jobs)
    }

    /// Transforms on the GPU (no hybrid shortcut). Jobs the GPU could not take
    /// (a packet larger than a chunk) run on the CPU.
    pub fn transform_gpu(&self, jobs: &mut [Job<'_, GpuKeys>]) -> Result<(), GpuError> {
        let mut runner = self.runner.lock().map_err(|_| GpuError::Cuda("runner lock poisoned".into()))?;
        match self.cfg.mode {
            Mode::Launch => self.run_launch(&mut runner, jobs),
            Mode::Persistent => self.run_persistent(runner.ring.as_mut().expect("ring"), jobs),
        }
    }

    fn run_launch(&self, runner: &mut Runner, jobs: &mut [Job<'_, GpuKeys>]) -> Result<(), GpuError> {
        self.shared.ctx.bind_to_thread()?;
        // Chunks alternate between the two lanes: while one lane's chunk is
        // copied and computed, the host packs the next into the other.
        // (first job, jobs, bytes, where the data starts)
        let mut pending: [Option<(usize, usize, usize, usize)>; 2] = [None, None];
        let mut start = 0usize;
        let mut lane = 0usize;
        loop {
            if let Some((s, n, _, data_at)) = pending[lane].take() {
                runner.lanes[lane].stream.synchronize()?;
                self.unpack(&mut jobs[s..s + n], runner.lanes[lane].host.bytes(), data_at);
            }
            if start >= jobs.len() {
                if pending.iter().all(Option::is_none) {
                    break;
                }
                lane ^= 1;
                continue;
            }
            let n = self.chunk_len(&jobs[start..]);
            if n == 0 {
                // A packet larger than a chunk: the CPU takes it.
                self.run_cpu(&mut jobs[start..start + 1]);
                start += 1;
                continue;
            }
            let l = &mut runner.lanes[lane];
            // Only the descriptors in use travel: the data follows them.
            let data_at = (n * layout::DESC_WORDS * 4).next_multiple_of(256);
            let used = Self::pack(&jobs[start..start + n], l.host.bytes(), data_at).expect("chunk_len checked the fit");
            let total = data_at + used;
            let descs = l.dev.ptr;
            let data = l.dev.ptr + data_at as u64;
            // SAFETY: host and device buffers hold `total` bytes; the host
            // buffer is pinned and not touched until the stream is synchronised.
            unsafe {
                let src = std::slice::from_raw_parts(l.host.ptr, total);
                result::memcpy_htod_async(l.dev.ptr, src, l.stream.cu_stream())?;
            }
            let cfg = self.launch_config(n);
            let mut b = l.stream.launch_builder(&self.launch_fn);
            let keys = self.shared.keys_dev;
            let count = n as u32;
            let te0 = self.te0.ptr;
            b.arg(&keys).arg(&descs).arg(&data).arg(&count).arg(&te0);
            // SAFETY: pointers to live device buffers sized for n descriptors
            // and `used` data bytes.
            unsafe { b.launch(cfg)? };
            // SAFETY: as for the copy in.
            unsafe {
                let dst = std::slice::from_raw_parts_mut(l.host.ptr, total);
                result::memcpy_dtoh_async(dst, l.dev.ptr, l.stream.cu_stream())?;
            }
            pending[lane] = Some((start, n, total, data_at));
            start += n;
            lane ^= 1;
        }
        Ok(())
    }

    /// Stops the resident kernel and waits for it (bounded).
    fn stop_persistent(&self, ring: &mut Ring) -> Result<(), GpuError> {
        if !ring.running {
            return Ok(());
        }
        let ctl = ring.mem.words(0);
        // SAFETY: control words of the mapped ring.
        unsafe { std::ptr::write_volatile(ctl.add(CTL_STOP), 1) };
        fence(Ordering::SeqCst);
        let t0 = Instant::now();
        // SAFETY: as above.
        while unsafe { std::ptr::read_volatile(ctl.add(CTL_EXITED)) } == 0 {
            if t0.elapsed() > self.cfg.timeout {
                return Err(GpuError::Timeout(self.cfg.timeout));
            }
            std::hint::spin_loop();
        }
        ring.stream.synchronize()?;
        ring.running = false;
        Ok(())
    }

    fn run_persistent(&self, ring: &mut Ring, jobs: &mut [Job<'_, GpuKeys>]) -> Result<(), GpuError> {
        let (data_at, _) = chunk_layout(&self.cfg);
        if self.shared.reused.swap(false, Ordering::SeqCst) {
            self.stop_persistent(ring)?;
        }
        let mut start = 0;
        while start < jobs.len() {
            let n = self.chunk_len(&jobs[start..]);
            if n == 0 {
                self.run_cpu(&mut jobs[start..start + 1]);
                start += 1;
                continue;
            }
            let ctl = ring.mem.words(0);
            // SAFETY: reading the exited flag the kernel writes on exit.
            if !ring.running || unsafe { std::ptr::read_volatile(ctl.add(CTL_EXITED)) } != 0 {
                ring.stream.synchronize()?;
                ring.running = false;
                self.start_persistent(ring)?;
            }
            {
                let area = &mut ring.mem.bytes()[CTL_BYTES..];
                Self::pack(&jobs[start..start + n], area, data_at).expect("chunk_len checked the fit");
            }
            ring.seq = ring.seq.wrapping_add(1);
            let seq = ring.seq;
            // Publish: the batch bytes, then the count, then the doorbell.
            fence(Ordering::SeqCst);
            // SAFETY: control words of the mapped ring; the kernel reads them
            // with volatile loads.
            unsafe {
                std::ptr::write_volatile(ctl.add(CTL_COUNT), n as u32);
                fence(Ordering::SeqCst);
                std::ptr::write_volatile(ctl.add(CTL_DOORBELL), seq);
            }
            let t0 = Instant::now();
            let mut spins = 0u32;
            loop {
                // SAFETY: as above; the kernel writes CTL_DONE after a system fence.
                let done = unsafe { std::ptr::read_volatile(ctl.add(CTL_DONE)) };
                if done == seq {
                    break;
                }
                // SAFETY: as above.
                if unsafe { std::ptr::read_volatile(ctl.add(CTL_EXITED)) } != 0 {
                    // The kernel went idle just as the doorbell rang: restart it;
                    // it resumes from the last completed batch and sees ours.
                    ring.stream.synchronize()?;
                    ring.running = false;
                    ring.seq = seq.wrapping_sub(1);
                    self.start_persistent(ring)?;
                    ring.seq = seq;
                    // SAFETY: re-ring the doorbell for the restarted kernel.
                    unsafe { std::ptr::write_volatile(ctl.add(CTL_DOORBELL), seq) };
                }
                spins += 1;
                if spins.is_multiple_of(1024) && t0.elapsed() > self.cfg.timeout {
                    return Err(GpuError::Timeout(self.cfg.timeout));
                }
                std::hint::spin_loop();
            }
            fence(Ordering::SeqCst);
            let area = &ring.mem.bytes()[CTL_BYTES..];
            self.unpack(&mut jobs[start..start + n], area, data_at);
            start += n;
        }
        Ok(())
    }

    /// Measures host↔device copy bandwidth with pinned memory (bytes/s in,
    /// bytes/s out) over `bytes`-sized transfers.
    pub fn pcie_bandwidth(&self, bytes: usize, reps: u32) -> Result<(f64, f64), GpuError> {
        self.pcie_bandwidth_with(bytes, reps, sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE)
    }

    /// As [`pcie_bandwidth`](Self::pcie_bandwidth), with host memory
    /// allocated with `flags` (`CU_MEMHOSTALLOC_*`).
    pub fn pcie_bandwidth_with(&self, bytes: usize, reps: u32, flags: u32) -> Result<(f64, f64), GpuError> {
        self.shared.ctx.bind_to_thread()?;
        let host = Pinned::with_flags(bytes, flags)?;
        let dev = DevBuf::new(bytes)?;
        let stream = self.shared.ctx.new_stream()?;
        let mut times = [0f64; 2];
        for (dir, t) in times.iter_mut().enumerate() {
            let start = Instant::now();
            for _ in 0..reps {
                // SAFETY: both buffers hold `bytes` bytes.
                unsafe {
                    if dir == 0 {
                        result::memcpy_htod_async(
                            dev.ptr,
                            std::slice::from_raw_parts(host.ptr, bytes),
                            stream.cu_stream(),
                        )?;
                    } else {
                        result::memcpy_dtoh_async(
                            std::slice::from_raw_parts_mut(host.ptr, bytes),
                            dev.ptr,
                            stream.cu_stream(),
                        )?;
                    }
                }
            }
            stream.synchronize()?;
            *t = start.elapsed().as_secs_f64();
        }
        let total = bytes as f64 * reps as f64;
        Ok((total / times[0], total / times[1]))
    }
}

impl GpuEngine {
    /// Kernel time alone, the batch resident in device memory: packs `jobs`
    /// once, copies them once, then times `reps` launches with the stream
    /// synchronised. Returns ns per packet. (The jobs' buffers are not updated.)
    pub fn kernel_only(&self, jobs: &[Job<'_, GpuKeys>], reps: u32) -> Result<f64, GpuError> {
        let n = jobs.len();
        if n == 0 || n > self.cfg.chunk_packets || self.chunk_len(jobs) < n {
            return Err(GpuError::Capacity("kernel_only takes one chunk".into()));
        }
        self.shared.ctx.bind_to_thread()?;
        let data_at = (n * layout::DESC_WORDS * 4).next_multiple_of(256);
        let total = data_at + jobs.iter().map(|j| j.buf.len().next_multiple_of(16)).sum::<usize>();
        let mut host = Pinned::with_flags(total, 0)?;
        Self::pack(jobs, host.bytes(), data_at).ok_or_else(|| GpuError::Capacity("pack".into()))?;
        let dev = DevBuf::new(total)?;
        let stream = self.shared.ctx.new_stream()?;
        // SAFETY: both buffers hold `total` bytes.
        unsafe { result::memcpy_htod_async(dev.ptr, std::slice::from_raw_parts(host.ptr, total), stream.cu_stream())? };
        stream.synchronize()?;
        let cfg = self.launch_config(n);
        let (keys, descs, data, count, te0) =
            (self.shared.keys_dev, dev.ptr, dev.ptr + data_at as u64, n as u32, self.te0.ptr);
        // One untimed launch: the first pays for loading the module.
        let mut b = stream.launch_builder(&self.launch_fn);
        b.arg(&keys).arg(&descs).arg(&data).arg(&count).arg(&te0);
        // SAFETY: as below.
        unsafe { b.launch(cfg)? };
        stream.synchronize()?;
        let start = Instant::now();
        for _ in 0..reps.max(1) {
            let mut b = stream.launch_builder(&self.launch_fn);
            b.arg(&keys).arg(&descs).arg(&data).arg(&count).arg(&te0);
            // SAFETY: device buffers sized for n descriptors and their data.
            unsafe { b.launch(cfg)? };
        }
        stream.synchronize()?;
        Ok(start.elapsed().as_nanos() as f64 / (reps.max(1) as f64 * n as f64))
    }
}

impl GpuEngine {
    /// Host memory bandwidth of the packing step: bytes/s of a CPU copy from
    /// ordinary memory into pinned memory, and into ordinary memory, one thread.
    pub fn host_copy_bandwidth(&self, bytes: usize, reps: u32) -> Result<(f64, f64), GpuError> {
        self.shared.ctx.bind_to_thread()?;
        let mut pinned = Pinned::with_flags(bytes, 0)?;
        let src = vec![0x5au8; bytes];
        let mut plain = vec![0u8; bytes];
        let time = |dst: &mut [u8]| {
            dst.copy_from_slice(&src);
            let t = Instant::now();
            for _ in 0..reps.max(1) {
                dst.copy_from_slice(&src);
                std::hint::black_box(&dst);
            }
            bytes as f64 * reps.max(1) as f64 / t.elapsed().as_secs_f64()
        };
        let to_pinned = time(pinned.bytes());
        let to_plain = time(&mut plain);
        Ok((to_pinned, to_plain))
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(ring) = self.ring.as_mut() {
            if ring.running {
                let ctl = ring.mem.words(0);
                // SAFETY: ask the kernel to stop, then wait (bounded) for it.
                unsafe { std::ptr::write_volatile(ctl.add(CTL_STOP), 1) };
                fence(Ordering::SeqCst);
                let t0 = Instant::now();
                // SAFETY: reading the exit flag.
                while unsafe { std::ptr::read_volatile(ctl.add(CTL_EXITED)) } == 0
                    && t0.elapsed() < Duration::from_secs(5)
                {
                    std::thread::sleep(Duration::from_micros(50));
                }
                let _ = ring.stream.synchronize();
            }
        }
        for lane in &self.lanes {
            let _ = lane.stream.synchronize();
        }
    }
}

impl Engine for GpuEngine {
    type Keys = GpuKeys;

    fn name(&self) -> &'static str {
        match self.cfg.mode {
            Mode::Launch => "gpu-launch",
            Mode::Persistent => "gpu-persistent",
        }
    }

    fn prepare_keys(&self, keys: &SessionKeys) -> Result<GpuKeys, srtp::Error> {
        let cpu = self.cpu.prepare_keys(keys)?;
        if keys.suite().cipher() == srtp::suite::Cipher::AesF8 {
            return Ok(GpuKeys { slot: None, cpu, pool: self.shared.clone() });
        }
        let slot = {
            let mut f =
                self.shared.free_slots.lock().map_err(|_| srtp::Error::InvalidPolicy("slot lock poisoned".into()))?;
            if let Some(s) = f.0.pop() {
                self.shared.reused.store(true, Ordering::SeqCst);
                s
            } else if f.1 < self.shared.key_slots {
                f.1 += 1;
                f.1 - 1
            } else {
                return Err(srtp::Error::InvalidPolicy(format!("all {} GPU key slots in use", self.shared.key_slots)));
            }
        };
        let words = layout::key_slot(keys);
        let at = self.shared.keys_dev + (slot as usize * layout::KEY_WORDS * 4) as u64;
        let upload = self.shared.ctx.bind_to_thread().and_then(|_| {
            // SAFETY: the slot lies inside keys_dev (slot < key_slots).
            unsafe { result::memcpy_htod_sync(at, &words[..]) }
        });
        let keys = GpuKeys { slot: Some(slot), cpu, pool: self.shared.clone() };
        upload.map_err(|e| srtp::Error::InvalidPolicy(format!("GPU key upload failed: {e:?}")))?;
        Ok(keys)
    }

    fn transform(&self, jobs: &mut [Job<'_, GpuKeys>]) {
        for job in jobs.iter_mut() {
            if !job.is_well_formed() {
                job.outcome = Outcome::AuthFailed;
            }
        }
        if jobs.len() < self.cfg.cpu_below {
            return self.run_cpu(jobs);
        }
        if let Err(e) = self.transform_gpu(jobs) {
            // The batch still completes: on the CPU, with a note on stderr.
            eprintln!("srtp-cuda: {e}; this batch ran on the CPU");
            self.run_cpu(jobs);
        }
    }
}

/// Bytes a job takes in the staged data region.
fn staged_len(job: &Job<'_, GpuKeys>) -> usize {
    if job.keys.slot.is_some() {
        job.buf.len().next_multiple_of(16)
    } else {
        0
    }
}

const DESC_BYTES: usize = layout::DESC_WORDS * 4;

/// Jobs per packing thread: one part below 16 Ki jobs (spawning costs more
/// than it saves), else up to one part per core.
fn part_size(n: usize) -> usize {
    const MIN_PART: usize = 8192;
    if n < 2 * MIN_PART {
        return n.max(1);
    }
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).min(32);
    n.div_ceil(threads).max(MIN_PART)
}

/// Packs `jobs` into `descs` (their descriptors) and `data` (their bytes,
/// which start at offset `base` of the data region).
fn pack_part(jobs: &[Job<'_, GpuKeys>], descs: &mut [u8], data: &mut [u8], base: usize) {
    let mut off = 0usize;
    for (i, job) in jobs.iter().enumerate() {
        let d = match job.keys.slot {
            // Not a GPU suite: an empty, malformed descriptor the kernel
            // rejects without reading anything; the CPU runs it after.
            None => layout::descriptor(0, job.op, job.iv, 0, 0, 0, job.suffix, 0, 0, 16, (base + off) as u32, 0),
            Some(slot) => {
                let len = job.buf.len();
                data[off..off + len].copy_from_slice(job.buf);
                let d = layout::descriptor(
                    slot,
                    job.op,
                    job.iv,
                    job.enc_start,
                    job.enc_end,
                    job.auth_end,
                    job.suffix,
                    job.suffix_len,
                    job.tag_start,
                    job.tag_len,
                    (base + off) as u32,
                    len as u32,
                );
                off += len.next_multiple_of(16);
                d
            }
        };
        let at = i * DESC_BYTES;
        for (k, w) in d.iter().enumerate() {
            descs[at + 4 * k..at + 4 * k + 4].copy_from_slice(&w.to_le_bytes());
        }
    }
}

/// Reads the outcomes and bytes of `jobs` back from their part of the area.
fn unpack_part(cpu: &CpuEngine, jobs: &mut [Job<'_, GpuKeys>], descs: &[u8], data: &[u8]) {
    let mut off = 0usize;
    for (i, job) in jobs.iter_mut().enumerate() {
        if job.keys.slot.is_none() {
            run_cpu_with(cpu, core::slice::from_mut(job));
            continue;
        }
        let at = i * DESC_BYTES + layout::D_OUTCOME * 4;
        let outcome = u32::from_le_bytes([descs[at], descs[at + 1], descs[at + 2], descs[at + 3]]);
        let len = job.buf.len();
        job.outcome = match outcome {
            1 => {
                job.buf.copy_from_slice(&data[off..off + len]);
                Outcome::Done
            }
            _ => Outcome::AuthFailed,
        };
        off += len.next_multiple_of(16);
    }
}

/// Runs jobs on the CPU engine with the CPU half of their keys.
fn run_cpu_with(cpu: &CpuEngine, jobs: &mut [Job<'_, GpuKeys>]) {
    for job in jobs.iter_mut() {
        let keys = job.keys;
        let mut one = [job.with_keys(&keys.cpu)];
        cpu.transform(&mut one);
        job.outcome = one[0].outcome;
    }
}
