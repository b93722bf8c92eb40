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
//! * **Packets stay where they are.** A relay worker registers its buffer pool
//!   ([`srtp::Engine::register_memory`]: page-locked and mapped into the
//!   device's address space once). A batch whose packets lie in registered
//!   memory is handed to the device as 48-byte wire descriptors (the packet's
//!   device address, lengths, key slot, IV; [`layout::WIRE_WORDS`]) written by
//!   the calling thread; the kernels read each packet from the pool over PCIe
//!   with coalesced loads, transform it in device scratch, and write the result
//!   back in place. The host moves no packet byte. Packets elsewhere (plain
//!   `Vec`s) are packed into a staging buffer first, as before.
//! * **Lanes**: each calling thread (relay worker) submits through a lane of
//!   its own — stream, descriptor ring, outcome words, device scratch and, in
//!   the persistent mode, its own resident kernel on a share of the SMs — so N
//!   workers fill the GPU together with no lock per packet (a lane's mutex is
//!   taken once per batch and is uncontended while lanes ≥ workers).
//! * **Several GPUs**: the lanes are spread over every visible GPU (or
//!   those [`GpuConfig::devices`] names), lane i on GPU i mod n. Each GPU has
//!   its own context, kernels and copy of the key table: a key slot holds
//!   the same key on every GPU, so a lane on any of them runs any key. A
//!   thread takes a lane of a GPU on its own NUMA node (`placement`), and
//!   of those the GPU with the fewest lanes taken; registered memory is
//!   mapped into every GPU. With one GPU nothing of this shows.
//! * Two modes ([`Mode`]): `Launch` (one kernel launch per batch on the
//!   lane's stream) and `Persistent` (a resident kernel per lane polls the
//!   lane's doorbell in mapped host memory: no launch per batch).
//! * Hybrid: batches smaller than the threshold run on the CPU engine, which
//!   every key also carries; [`GpuEngine::calibrate`] measures the threshold
//!   on the machine (the batch size from which the GPU's round trip is shorter
//!   than the CPU's time for the batch). [`srtp::Engine::stats`] reports the
//!   share of batches and packets each path ran and the round-trip histogram.
//!
//! This is the only crate of the project with `unsafe`: raw device memory,
//! pinned and registered host memory and kernel launches. Every block says
//! why it is sound.

pub mod batcher;
mod gpu_lane;
pub mod kernel_cache;
pub mod layout;
mod placement;

pub use gpu_lane::GpuLane;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{result, sys, CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use srtp::cpu::CpuKeys;
use srtp::engine::{Engine, EngineStats, Job, Outcome};
use srtp::{CpuEngine, SessionKeys};
use std::sync::atomic::{fence, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};
use zeroize::Zeroize;

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
    /// The configuration names GPUs that are not there, or one twice.
    #[error("GPU engine configuration: {0}")]
    Config(String),
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
    /// Every lane is a thread's own ([`GpuLane`]): the batch runs on the CPU.
    #[error("every GPU lane is a worker's own")]
    NoLane,
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
    /// CUDA device ordinals the lanes are spread over (empty: every
    /// visible GPU; with fewer lanes than GPUs, the first ones). Every key
    /// is installed on each of them.
    pub devices: Vec<usize>,
    /// Key slots on the device (one per session key and direction).
    pub key_slots: u32,
    /// Packets per device submission (larger batches are split).
    pub chunk_packets: usize,
    /// Bytes of the staging buffer that packets outside registered memory are
    /// packed into, per lane.
    pub chunk_bytes: usize,
    /// Launch mode: move the frames of a batch from registered memory to a
    /// device copy by DMA (one strided copy per sub-batch) and let the kernel
    /// read them there, instead of reading each packet over PCIe itself.
    /// Results are written back in place over PCIe, or, when the sub-batch's
    /// packets fill a run of consecutive frames one each (no other frame in
    /// between), by one strided DMA back.
    pub dma_in: bool,
    /// Thread blocks per submission (0 = the device's multiprocessors × 3 for
    /// launch; for persistent, the multiprocessors shared out between the
    /// lanes: every block of a resident kernel must stay resident).
    pub blocks: u32,
    /// Threads per block (a multiple of 32, at most
    /// [`layout::MAX_BLOCK_THREADS`]).
    pub threads: u32,
    /// Submission lanes: threads that transform at the same time each get
    /// one (0 = one per core, at most 16).
    pub lanes: usize,
    /// Batches with fewer packets run on the CPU engine (0 = never); see
    /// [`GpuEngine::calibrate`].
    pub cpu_below: usize,
    /// How long the persistent kernel may wait for a batch before a call gives up.
    pub timeout: Duration,
    /// The persistent kernel exits after this long without work (it is
    /// relaunched on the next batch), so it can never hold the device forever.
    pub idle_exit: Duration,
    /// Where the compiled kernels are kept between starts
    /// ([`kernel_cache`]); `None`: compiled at every start.
    pub kernel_cache: Option<std::path::PathBuf>,
}

impl Default for GpuConfig {
    fn default() -> Self {
        GpuConfig {
            mode: Mode::Launch,
            devices: Vec::new(),
            key_slots: 65_536,
            chunk_packets: 65_536,
            chunk_bytes: 65_536 * 192,
            dma_in: false,
            blocks: 0,
            threads: 256,
            lanes: 0,
            cpu_below: 0,
            timeout: Duration::from_secs(5),
            idle_exit: Duration::from_secs(10),
            kernel_cache: None,
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

/// One GPU the engine runs on: its context, its kernels, its copy of the
/// key table and of the AES table. Lanes are spread over the engine's GPUs
/// and each lane runs on one; a key slot holds the same key on every GPU.
struct Gpu {
    ctx: Arc<CudaContext>,
    ordinal: usize,
    /// The NUMA node of its PCI slot (None: not known).
    numa: Option<u32>,
    keys_dev: CUdeviceptr,
    gather_fn: CudaFunction,
    persistent_fn: CudaFunction,
    te0: DevBuf,
    /// Packets its lanes ran.
    packets: AtomicU64,
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: keys_dev was allocated by malloc_sync in this context and is
        // freed once, after every user has gone: the keys, and the engine
        // handles, each of which drops its lanes (stopping their resident
        // kernels) before its share of the GPUs.
        unsafe {
            let _ = self.ctx.bind_to_thread();
            let _ = result::free_sync(self.keys_dev);
        }
    }
}

/// Device state shared by the engine handle and the keys.
struct Shared {
    gpus: Vec<Gpu>,
    /// Freed slots, and the next slot never used.
    free_slots: Mutex<(Vec<u32>, u32)>,
    key_slots: u32,
    /// Counts reuses of freed slots. A resident kernel may hold a slot's old
    /// words in an SM's L1 (not coherent with host writes), so a lane whose
    /// kernel started before the latest reuse restarts it — a launch starts
    /// with a clean L1 — before its next batch.
    generation: AtomicU64,
}

/// Page-locked host memory, mapped into the device's address space when
/// asked for.
struct Pinned {
    ptr: *mut u8,
    len: usize,
    dev: CUdeviceptr,
}

// SAFETY: the buffer is plain memory owned by this struct; access is
// serialised by the lane's mutex.
unsafe impl Send for Pinned {}

impl Pinned {
    fn mapped(len: usize) -> Result<Pinned, GpuError> {
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

/// A completion event without timing (the cheapest to record and query).
fn event() -> Result<sys::CUevent, GpuError> {
    let mut ev: sys::CUevent = std::ptr::null_mut();
    // SAFETY: creates an event in the current context (bound by the caller).
    unsafe { sys::cuEventCreate(&mut ev, sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32).result()? };
    Ok(ev)
}

/// A device buffer on one GPU.
struct DevBuf {
    ptr: CUdeviceptr,
    /// Its GPU's context: freed there, whichever GPU the dropping thread
    /// last worked with.
    ctx: Arc<CudaContext>,
}

impl DevBuf {
    fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<DevBuf, GpuError> {
        ctx.bind_to_thread()?;
        // SAFETY: plain device allocation in the bound context, freed in Drop.
        Ok(DevBuf { ptr: unsafe { result::malloc_sync(len.max(16))? }, ctx: ctx.clone() })
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: allocated by malloc_sync in ctx, freed once.
        unsafe {
            let _ = self.ctx.bind_to_thread();
            let _ = result::free_sync(self.ptr);
        }
    }
}

/// Host memory registered with the device: packets inside it are read and
/// written by the kernels where they lie.
struct Region {
    host: usize,
    len: usize,
    /// Its address on each GPU, in the engine's order.
    dev: Vec<u64>,
    /// Bytes from one frame's start to the next (0: not known).
    pitch: usize,
    /// A device copy on each GPU the host moves the frames of a batch into
    /// by DMA ([`GpuConfig::dma_in`]), so that the kernel reads packets from
    /// device memory and only writes results over PCIe; empty without.
    mirrors: Vec<DevBuf>,
}

/// The part of a registered region a sub-batch touches: frames
/// `first..=last` (of `pitch` bytes), bytes `lo..hi` of each.
#[derive(Clone, Copy, Debug)]
struct Span {
    region: usize,
    first: usize,
    last: usize,
    lo: usize,
    hi: usize,
    /// Job k lies in frame first + k: every frame of the span belongs to
    /// one job of the sub-batch, so the span may also be copied back whole.
    dense: bool,
}

/// The resident kernel's control words of one lane, and its state.
struct Ring {
    ctl: Pinned,
    counter: DevBuf,
    seq: u32,
    running: bool,
    /// The slot-reuse generation when the kernel started.
    generation: u64,
}

const CTL_BYTES: usize = 256;
/// Control words (see kernels/srtp.cu): stop, completion, exited; from
/// `CTL_SLOTS`, a 64-bit slot word per batch rung (`seq % RUNG`): the batch's
/// low 16 bits, first descriptor and count, so that one store rings it.
const CTL_STOP: usize = 2;
const CTL_DONE: usize = 3;
const CTL_EXITED: usize = 4;
const CTL_SLOTS: usize = 8;
/// Batches a lane's resident kernel can have rung at once (`SRTP_RUNG`),
/// and batches a [`GpuLane`] holds in flight in either mode.
const RUNG: usize = 4;
/// A slot word's count and first descriptor have 24 bits each.
const MAX_CHUNK_PACKETS: usize = 1 << 24;
/// The resident kernel's counter buffer: the counter and relay words
/// (`SRTP_CNT_WORDS`), then the stage trace (`SRTP_TR_ENTRIES` entries of
/// `SRTP_TR_WORDS` 64-bit words).
const CNT_WORDS: usize = 8;
const TRACE_ENTRIES: usize = 256;
const TRACE_WORDS: usize = 8;
const COUNTER_BYTES: usize = CNT_WORDS * 4 + TRACE_ENTRIES * TRACE_WORDS * 8;

/// One submission lane: what a thread needs to run a batch on the device
/// without sharing anything per batch with other threads.
struct Lane {
    /// The GPU it runs on (an index into the engine's GPUs).
    gpu: usize,
    stream: Arc<CudaStream>,
    /// Wire descriptors (mapped): written by the host, read by the kernel.
    wire: Pinned,
    /// Outcome words (mapped): written by the kernel.
    outcomes: Pinned,
    /// A scratch slot per thread of the lane's grid.
    scratch: DevBuf,
    /// Staging for packets outside registered memory (mapped in the
    /// persistent mode; plain pinned memory copied by DMA in the launch mode,
    /// where mapped memory copied at 6.1 / 1.6 GB/s against 55).
    stage: Pinned,
    stage_dev: Option<DevBuf>,
    ring: Option<Ring>,
    blocks: u32,
    /// A thread took it as its own ([`GpuLane`]): other threads do not
    /// submit through it.
    owned: bool,
    /// Launch mode: the completion event of each part of the descriptor
    /// and outcome buffers (a batch in flight on a [`GpuLane`]).
    events: [sys::CUevent; RUNG],
}

// SAFETY: the events are driver handles, used only under the lane's mutex.
unsafe impl Send for Lane {}

/// Round-trip histogram bounds, µs (a last bucket holds the rest).
pub const ROUND_TRIP_BOUNDS_US: [f64; 12] =
    [5.0, 10.0, 20.0, 35.0, 50.0, 75.0, 100.0, 200.0, 500.0, 1000.0, 5000.0, 20000.0];

/// Per-batch counters (atomics: any thread, no lock).
#[derive(Default)]
struct Stats {
    cpu_batches: AtomicU64,
    cpu_packets: AtomicU64,
    gpu_batches: AtomicU64,
    round_trip: [AtomicU64; ROUND_TRIP_BOUNDS_US.len() + 1],
    round_trip_ns: AtomicU64,
}

/// The GPU engine. Cheap to clone (a handle).
#[derive(Clone)]
pub struct GpuEngine {
    // Fields drop in this order: the lanes (stopping their resident
    // kernels) before the GPUs' modules and memory the kernels use.
    lanes: Arc<Vec<Mutex<Lane>>>,
    regions: Arc<RwLock<Vec<Region>>>,
    shared: Arc<Shared>,
    /// The lanes near each NUMA node's cores.
    homes: Arc<placement::Homes>,
    cfg: Arc<GpuConfig>,
    cpu: CpuEngine,
    info: Arc<DeviceInfo>,
    stats: Arc<Stats>,
    cpu_below: Arc<AtomicUsize>,
    /// The hybrid threshold of batches handed over through a [`GpuLane`].
    lane_below: Arc<AtomicUsize>,
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
    /// Blocks per submission (per lane's resident kernel in the persistent mode).
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Submission lanes, over every GPU.
    pub lanes: usize,
    /// The GPUs the lanes run on (name, capability and SMs above are the
    /// first one's).
    pub gpus: Vec<GpuPlace>,
    /// Where the kernels' machine code came from.
    pub kernels: Kernels,
    /// How long [`GpuEngine::new`] took.
    pub start: Duration,
    /// The SMs' clock, kHz (converts the stage trace's cycles).
    pub clock_khz: u32,
}

/// One GPU of the engine, and its share of the lanes.
#[derive(Clone, Debug)]
pub struct GpuPlace {
    /// CUDA device ordinal.
    pub ordinal: usize,
    /// The NUMA node of its PCI slot, where the system says.
    pub numa: Option<u32>,
    /// Lanes that run on it.
    pub lanes: usize,
}

/// Where one persistent-mode batch spent its time on the device
/// ([`GpuEngine::stage_trace`]), ns. The stages of the warp holding the
/// batch's first descriptor, measured on block 0's SM; `span` from the batch
/// taken to its last block finished (the device's global timer).
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchStages {
    /// The batch's number on its lane.
    pub seq: u32,
    /// Its descriptors.
    pub packets: u32,
    /// Taken to the first warp's descriptors read (host memory, over PCIe).
    pub read_ns: f64,
    /// To its packets staged into device scratch (over PCIe).
    pub stage_ns: f64,
    /// To its packets transformed.
    pub transform_ns: f64,
    /// To its results and outcomes written back (stores issued).
    pub write_ns: f64,
    /// Taken to the last block finished (every block's share, the fences).
    pub span_ns: f64,
}

/// Where a start found the kernels' machine code.
#[derive(Clone, Debug)]
pub enum Kernels {
    /// Read from the kernel cache.
    Cached(std::path::PathBuf),
    /// Compiled by NVRTC in this long; `kept` says whether the cache took it
    /// (and if not, why); `refused`: the cache held this build's file, and
    /// the driver refused it.
    Compiled { took: Duration, kept: Result<std::path::PathBuf, String>, refused: bool },
}

/// The hybrid threshold measured by [`GpuEngine::calibrate`].
#[derive(Clone, Debug)]
pub struct Calibration {
    /// (batch, CPU engine µs on this thread, GPU round trip µs), medians.
    pub rows: Vec<(usize, f64, f64)>,
    /// Batches of at least this many packets go to the GPU (`usize::MAX`:
    /// the GPU was slower at every size measured).
    pub threshold: usize,
    /// Per row, the thread's own time for a batch handed over through a
    /// [`GpuLane`] (submit, and complete once done; the device's time not
    /// counted), µs, median; empty where no lane could be taken.
    pub lane_us: Vec<f64>,
    /// A lane's batches of at least this many packets go to the GPU: the
    /// smallest size from which handing over costs the thread less than
    /// the CPU engine's time, at every larger size.
    pub lane_threshold: usize,
    /// The time budget ended before every size was measured (if the GPU won
    /// at no size measured, the threshold is then the first size not
    /// measured).
    pub cut: bool,
    /// How long it took.
    pub took: Duration,
}

/// Whether the CUDA driver and NVRTC libraries can be loaded here.
pub fn libraries_present() -> bool {
    // SAFETY: these only try to dlopen the libraries.
    unsafe { cudarc::driver::sys::is_culib_present() && cudarc::nvrtc::sys::is_culib_present() }
}

/// The kernels' module for the context's device: the cubin from the kernel
/// cache when it holds this build's, else compiled by NVRTC (and kept there).
/// A cached cubin the driver refuses is compiled again and replaced.
/// Returns the machine code too: other GPUs of the same kind load it.
fn load_kernels(
    ctx: &Arc<CudaContext>,
    device: &str,
    cc: (i32, i32),
    cache: Option<&std::path::Path>,
) -> Result<(Arc<cudarc::driver::CudaModule>, Kernels, Vec<u8>), GpuError> {
    // A real architecture (sm_XX, not compute_XX): NVRTC then makes the
    // device's machine code, which loads without the driver compiling PTX.
    let options = vec![format!("--gpu-architecture=sm_{}{}", cc.0, cc.1), "-default-device".to_string()];
    let mut driver = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut driver) }.result()?;
    let mut nvrtc = (0, 0);
    // SAFETY: writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut nvrtc.0, &mut nvrtc.1) }
        .result()
        .map_err(|e| GpuError::Compile(format!("{e:?}")))?;
    let key = kernel_cache::BuildKey { source: KERNEL_SOURCE, options: &options, device, cc, driver, nvrtc };
    let cache = cache.map(kernel_cache::KernelCache::new);
    let mut refused = false;
    if let Some(cubin) = cache.as_ref().and_then(|c| c.load(&key)) {
        match ctx.load_module(cudarc::nvrtc::Ptx::from_binary(cubin.clone())) {
            Ok(module) => {
                let path = cache.as_ref().map(|c| c.dir().join(key.file_name())).unwrap_or_default();
                return Ok((module, Kernels::Cached(path), cubin));
            }
            Err(_) => refused = true,
        }
    }
    let t = Instant::now();
    let cubin = compile_cubin(KERNEL_SOURCE, &options)?;
    let took = t.elapsed();
    let module = ctx.load_module(cudarc::nvrtc::Ptx::from_binary(cubin.clone()))?;
    let kept = match &cache {
        Some(c) => c.store(&key, &cubin).map(|()| c.dir().join(key.file_name())).map_err(|e| e.to_string()),
        None => Err("no kernel cache configured".to_string()),
    };
    Ok((module, Kernels::Compiled { took, kept, refused }, cubin))
}

/// Compiles `source` with NVRTC into the device's machine code. By hand
/// over cudarc's NVRTC calls: cudarc 0.18 returns only a program's PTX,
/// and the cubin is what a later start loads without compiling.
fn compile_cubin(source: &str, options: &[String]) -> Result<Vec<u8>, GpuError> {
    use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};
    let err = |e: nvrtc::NvrtcError| GpuError::Compile(format!("{e:?}"));
    let src = std::ffi::CString::new(source).map_err(|e| GpuError::Compile(e.to_string()))?;
    let prog = nvrtc::create_program(&src, None).map_err(err)?;
    // SAFETY: `prog` was created above from `src`, which outlives it, and is
    // destroyed once, below; the cubin buffer has the size NVRTC reports.
    let compiled = unsafe {
        match nvrtc::compile_program(prog, options) {
            Ok(()) => {
                let mut size = 0usize;
                nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size).result().and_then(|()| {
                    let mut cubin = vec![0u8; size];
                    nvrtc_sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()).result().map(|()| cubin)
                })
            }
            Err(e) => {
                let log = nvrtc::get_program_log(prog).unwrap_or_default();
                let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
                let _ = nvrtc::destroy_program(prog);
                return Err(GpuError::Compile(format!("{e:?}: {}", String::from_utf8_lossy(&log))));
            }
        }
    };
    // SAFETY: as above; not used after this.
    let _ = unsafe { nvrtc::destroy_program(prog) };
    compiled.map_err(err)
}

thread_local! {
    /// The lane this thread submits through (assigned on first use).
    static LANE: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}
static NEXT_LANE: AtomicUsize = AtomicUsize::new(0);

impl GpuEngine {
    /// Starts the engine: loads the driver, compiles the kernels for the
    /// device (once per kind of GPU), allocates key slots on every GPU and
    /// the lanes' buffers. (Resident kernels start with a lane's first batch.)
    pub fn new(cfg: GpuConfig) -> Result<GpuEngine, GpuError> {
        let started = Instant::now();
        // The configuration first: it is wrong on any machine.
        if cfg.threads == 0
            || !cfg.threads.is_multiple_of(32)
            || cfg.threads > layout::MAX_BLOCK_THREADS
            || cfg.chunk_packets == 0
        {
            return Err(GpuError::Capacity(format!(
                "threads must be a multiple of 32 up to {} and chunk_packets > 0",
                layout::MAX_BLOCK_THREADS
            )));
        }
        if cfg.chunk_packets >= MAX_CHUNK_PACKETS {
            return Err(GpuError::Capacity(format!("chunk_packets must be below {MAX_CHUNK_PACKETS}")));
        }
        // SAFETY: only probes for the shared libraries.
        if unsafe { !cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::Unavailable("the CUDA driver (libcuda.so) is not installed".into()));
        }
        // SAFETY: as above.
        if unsafe { !cudarc::nvrtc::sys::is_culib_present() } {
            return Err(GpuError::Unavailable("NVRTC (libnvrtc.so) is not installed".into()));
        }
        let count = CudaContext::device_count().map_err(|e| GpuError::Unavailable(format!("{e:?}")))?.max(0) as usize;
        if count == 0 {
            return Err(GpuError::Unavailable("no CUDA device present".into()));
        }
        let mut ordinals: Vec<usize> = if cfg.devices.is_empty() { (0..count).collect() } else { cfg.devices.clone() };
        if let Some(missing) = ordinals.iter().find(|&&d| d >= count) {
            return Err(GpuError::Config(format!("no CUDA device {missing} ({count} present)")));
        }
        if ordinals.iter().enumerate().any(|(i, d)| ordinals[..i].contains(d)) {
            return Err(GpuError::Config(format!("a GPU is named twice in {ordinals:?}")));
        }
        let lanes_n = match cfg.lanes {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()).min(16),
            n => n,
        };
        // A GPU without a lane would only hold keys: fewer lanes than GPUs
        // use the first ones.
        ordinals.truncate(lanes_n);

        let mut gpus = Vec::with_capacity(ordinals.len());
        // Where the first GPU's machine code came from.
        let mut kernels: Option<Kernels> = None;
        // Machine code for each kind of GPU met: one compile (or cache
        // read) per kind, not per GPU.
        let mut built: Vec<(String, (i32, i32), Vec<u8>)> = Vec::new();
        let key_bytes = cfg.key_slots as usize * layout::KEY_WORDS * 4;
        for &ordinal in &ordinals {
            let ctx = CudaContext::new(ordinal).map_err(|e| GpuError::Unavailable(format!("{e:?}")))?;
            let name = ctx.name()?;
            let cc = ctx.compute_capability()?;
            let module = match built.iter().find(|(n, c, _)| *n == name && *c == cc) {
                Some((_, _, cubin)) => ctx.load_module(cudarc::nvrtc::Ptx::from_binary(cubin.clone()))?,
                None => {
                    let (module, from, cubin) = load_kernels(&ctx, &name, cc, cfg.kernel_cache.as_deref())?;
                    built.push((name, cc, cubin));
                    kernels.get_or_insert(from);
                    module
                }
            };
            let gather_fn = module.load_function("srtp_gather")?;
            let persistent_fn = module.load_function("srtp_persistent")?;
            let te0 = DevBuf::new(&ctx, 256 * 4)?;
            // SAFETY: te0 holds 1 KiB; the source slice is 256 words; ctx is
            // bound (DevBuf::new).
            unsafe { result::memcpy_htod_sync(te0.ptr, &layout::te0())? };
            // SAFETY: device allocation in the bound context, owned by the Gpu
            // from the next statement on (nothing fallible in between).
            let keys_dev = unsafe { result::malloc_sync(key_bytes)? };
            gpus.push(Gpu {
                numa: placement::gpu_node(&ctx),
                gather_fn,
                persistent_fn,
                ctx,
                ordinal,
                keys_dev,
                te0,
                packets: AtomicU64::new(0),
            });
        }
        let kernels = kernels.expect("the first GPU's kernels");
        let first = &gpus[0].ctx;
        let (name, cc) = (first.name()?, first.compute_capability()?);
        let sms = first.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32;
        let clock_khz = first.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? as u32;

        // Lane i runs on GPU i % GPUs: the lanes alternate between them.
        let on_gpu = |g: usize| (g..lanes_n).step_by(gpus.len()).count();
        let blocks_on = |g: usize| -> Result<u32, GpuError> {
            let gpu_sms = gpus[g].ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
            Ok(if cfg.blocks > 0 {
                cfg.blocks
            } else if cfg.mode == Mode::Persistent {
                // Every lane's resident kernel keeps its blocks on the device;
                // together they take one block per SM.
                (gpu_sms as u32 / on_gpu(g).max(1) as u32).max(1)
            } else {
                // 256 threads use 80 registers each: 3 blocks (and their
                // 3 × 42 KiB of shared memory) fit an SM.
                gpu_sms as u32 * 3
            })
        };
        let mut lanes = Vec::with_capacity(lanes_n);
        for i in 0..lanes_n {
            let g = i % gpus.len();
            let ctx = &gpus[g].ctx;
            let blocks = blocks_on(g)?;
            // Mapped buffers are mapped into the bound context's GPU.
            ctx.bind_to_thread()?;
            let persistent = cfg.mode == Mode::Persistent;
            lanes.push(Mutex::new(Lane {
                gpu: g,
                stream: ctx.new_stream()?,
                wire: Pinned::mapped(cfg.chunk_packets * WIRE_BYTES)?,
                outcomes: Pinned::mapped(cfg.chunk_packets * 4)?,
                scratch: DevBuf::new(ctx, blocks as usize * cfg.threads as usize * layout::SLOT_BYTES)?,
                stage: if persistent {
                    Pinned::mapped(cfg.chunk_bytes)?
                } else {
                    Pinned::with_flags(cfg.chunk_bytes, 0)?
                },
                stage_dev: if persistent { None } else { Some(DevBuf::new(ctx, cfg.chunk_bytes)?) },
                ring: if persistent {
                    Some(Ring {
                        ctl: Pinned::mapped(CTL_BYTES)?,
                        counter: DevBuf::new(ctx, COUNTER_BYTES)?,
                        seq: 0,
                        running: false,
                        generation: 0,
                    })
                } else {
                    None
                },
                blocks,
                owned: false,
                events: if persistent {
                    [std::ptr::null_mut(); RUNG]
                } else {
                    [event()?, event()?, event()?, event()?]
                },
            }));
        }
        let places = gpus
            .iter()
            .enumerate()
            .map(|(g, gpu)| GpuPlace { ordinal: gpu.ordinal, numa: gpu.numa, lanes: on_gpu(g) })
            .collect();
        let homes = placement::Homes::new(&gpus.iter().map(|g| g.numa).collect::<Vec<_>>(), lanes_n);
        let info = DeviceInfo {
            name,
            cc,
            sms,
            blocks: blocks_on(0)?,
            threads: cfg.threads,
            lanes: lanes_n,
            gpus: places,
            kernels,
            start: started.elapsed(),
            clock_khz,
        };
        let shared = Arc::new(Shared {
            gpus,
            free_slots: Mutex::new((Vec::new(), 0)),
            key_slots: cfg.key_slots,
            generation: AtomicU64::new(0),
        });
        let cpu_below = cfg.cpu_below;
        Ok(GpuEngine {
            shared,
            lanes: Arc::new(lanes),
            regions: Arc::new(RwLock::new(Vec::new())),
            homes: Arc::new(homes),
            cfg: Arc::new(cfg),
            cpu: CpuEngine::new(),
            info: Arc::new(info),
            stats: Arc::new(Stats::default()),
            cpu_below: Arc::new(AtomicUsize::new(cpu_below)),
            lane_below: Arc::new(AtomicUsize::new(cpu_below)),
        })
    }

    /// The GPU a lane runs on.
    fn gpu(&self, lane: &Lane) -> &Gpu {
        &self.shared.gpus[lane.gpu]
    }

    /// The device and launch geometry.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// The configuration.
    pub fn config(&self) -> &GpuConfig {
        &self.cfg
    }

    /// The hybrid threshold in force: batches below it run on the CPU.
    pub fn cpu_below(&self) -> usize {
        self.cpu_below.load(Ordering::Relaxed)
    }

    /// Sets the hybrid threshold (0: every batch on the GPU).
    pub fn set_cpu_below(&self, n: usize) {
        self.cpu_below.store(n, Ordering::Relaxed);
    }

    /// The hybrid threshold of a [`GpuLane`]'s batches: below it they run
    /// on the CPU at once.
    pub fn lane_below(&self) -> usize {
        self.lane_below.load(Ordering::Relaxed)
    }

    /// Sets [`lane_below`](Self::lane_below) (0: every batch to the GPU).
    pub fn set_lane_below(&self, n: usize) {
        self.lane_below.store(n, Ordering::Relaxed);
    }

    /// This thread's lane: its own when free (a lane of a GPU near the
    /// core it runs on), else any free one near it, else any free one, else
    /// it waits for its own. One lock per batch, uncontended while there are
    /// at least as many lanes as submitting threads. Lanes a thread took as
    /// its own ([`GpuLane`]) are not shared: `NoLane` when every lane is.
    fn lane(&self) -> Result<MutexGuard<'_, Lane>, GpuError> {
        let n = self.lanes.len();
        let turn = LANE.with(|l| {
            if l.get() == usize::MAX {
                l.set(NEXT_LANE.fetch_add(1, Ordering::Relaxed));
            }
            l.get()
        });
        let near = self.homes.near(placement::current_cpu());
        let mine = near[turn % near.len()];
        let order = (0..near.len()).map(|k| near[(turn + k) % near.len()]).chain((0..n).map(|k| (mine + k) % n));
        for i in order {
            if let Ok(g) = self.lanes[i].try_lock() {
                if !g.owned {
                    return Ok(g);
                }
            }
        }
        for k in 0..n {
            let g = self.lanes[(mine + k) % n].lock().map_err(|_| GpuError::Cuda("lane lock poisoned".into()))?;
            if !g.owned {
                return Ok(g);
            }
        }
        Err(GpuError::NoLane)
    }

    /// Stops every lane's resident kernel and keeps the lanes locked: page
    /// locking and unlocking memory waits for the device's running kernels,
    /// and a resident kernel only ends when idle for `idle_exit` (the first
    /// run on the GPU machine hung there). Kernels restart with their lane's
    /// next batch.
    fn quiesce(&self) -> Result<Vec<MutexGuard<'_, Lane>>, GpuError> {
        let mut held = Vec::with_capacity(self.lanes.len());
        for l in self.lanes.iter() {
            let mut g = l.lock().map_err(|_| GpuError::Cuda("lane lock poisoned".into()))?;
            self.stop_persistent(&mut g)?;
            held.push(g);
        }
        Ok(held)
    }

    /// The stage trace of the persistent mode: the last batches (up to 256
    /// per lane) each lane's resident kernel ran, oldest first per lane.
    /// Stops the resident kernels to read it (they restart with the next
    /// batch); empty in the launch mode. For measurements, not the hot path.
    pub fn stage_trace(&self) -> Result<Vec<BatchStages>, GpuError> {
        let lanes = self.quiesce()?;
        let per_cycle_ns = 1e6 / f64::from(self.info.clock_khz.max(1));
        let mut out = Vec::new();
        for lane in &lanes {
            let Some(ring) = lane.ring.as_ref() else { continue };
            self.gpu(lane).ctx.bind_to_thread()?;
            let mut words = vec![0u64; TRACE_ENTRIES * TRACE_WORDS];
            // SAFETY: the counter buffer holds CNT_WORDS words and then the
            // trace; the lane's kernel has stopped (quiesce).
            unsafe { result::memcpy_dtoh_sync(&mut words, ring.counter.ptr + (CNT_WORDS * 4) as u64)? };
            let mut lane_out: Vec<BatchStages> = words
                .chunks_exact(TRACE_WORDS)
                .filter(|e| e[7] != 0 && e[1] >= e[0] && e[2] >= e[1] && e[3] >= e[2] && e[4] >= e[3])
                .map(|e| BatchStages {
                    seq: (e[7] >> 32) as u32,
                    packets: e[7] as u32,
                    read_ns: (e[1] - e[0]) as f64 * per_cycle_ns,
                    stage_ns: (e[2] - e[1]) as f64 * per_cycle_ns,
                    transform_ns: (e[3] - e[2]) as f64 * per_cycle_ns,
                    write_ns: (e[4] - e[3]) as f64 * per_cycle_ns,
                    span_ns: e[6].saturating_sub(e[5]) as f64,
                })
                .collect();
            lane_out.sort_by_key(|b| b.seq.wrapping_sub(ring.seq));
            out.extend(lane_out);
        }
        Ok(out)
    }

    /// Registers `len` bytes at `ptr` (page-locked and mapped into every
    /// GPU's address space), so that jobs whose buffers lie there run
    /// without a host copy. Waits for batches in flight.
    ///
    /// # Safety
    /// The memory stays mapped until [`unregister`](Self::unregister).
    pub unsafe fn register(&self, ptr: *mut u8, len: usize, pitch: usize) -> Result<(), GpuError> {
        let _lanes = self.quiesce()?;
        self.shared.gpus[0].ctx.bind_to_thread()?;
        // Portable: page-locked for every context, each GPU's included.
        let flags = sys::CU_MEMHOSTREGISTER_DEVICEMAP | sys::CU_MEMHOSTREGISTER_PORTABLE;
        // SAFETY: the caller keeps the range mapped while it is registered.
        unsafe { sys::cuMemHostRegister_v2(ptr as *mut _, len, flags).result()? };
        let on_gpus = || -> Result<(Vec<u64>, Vec<DevBuf>), GpuError> {
            let mut dev = Vec::with_capacity(self.shared.gpus.len());
            let mut mirrors = Vec::new();
            for gpu in &self.shared.gpus {
                gpu.ctx.bind_to_thread()?;
                let mut d: CUdeviceptr = 0;
                // SAFETY: the range was registered above, portably.
                unsafe { sys::cuMemHostGetDevicePointer_v2(&mut d, ptr as *mut _, 0).result()? };
                dev.push(d);
                if self.cfg.dma_in && self.cfg.mode == Mode::Launch {
                    mirrors.push(DevBuf::new(&gpu.ctx, len)?);
                }
            }
            Ok((dev, mirrors))
        };
        let (dev, mirrors) = match on_gpus() {
            Ok(x) => x,
            Err(e) => {
                // SAFETY: registered just above; no batch uses it yet.
                unsafe {
                    let _ = sys::cuMemHostUnregister(ptr as *mut _).result();
                }
                return Err(e);
            }
        };
        let mut r = self.regions.write().map_err(|_| GpuError::Cuda("region lock poisoned".into()))?;
        r.push(Region { host: ptr as usize, len, dev, pitch, mirrors });
        Ok(())
    }

    /// Unregisters memory given to [`register`](Self::register), after the
    /// batches in flight.
    pub fn unregister(&self, ptr: *mut u8) {
        let lanes = self.quiesce();
        let Ok(mut r) = self.regions.write() else { return };
        if let Some(i) = r.iter().position(|x| x.host == ptr as usize) {
            r.swap_remove(i);
            let _ = self.shared.gpus[0].ctx.bind_to_thread();
            // SAFETY: registered by `register`; no batch holds the region
            // (every lane is locked and idle).
            unsafe {
                let _ = sys::cuMemHostUnregister(ptr as *mut _).result();
            }
        }
        drop(lanes);
    }

    /// Measures the hybrid threshold on this machine: AES_CM_128_HMAC_SHA1_80
    /// protect of G.711 packets (172 bytes) in registered memory, batches of
    /// 1 to 4 096 packets, the CPU engine on this thread against the GPU's
    /// round trip (median of 15 each). Sets and returns the threshold: the
    /// smallest batch from which the GPU is faster at every larger size.
    pub fn calibrate(&self) -> Result<Calibration, GpuError> {
        self.calibrate_within(Duration::MAX)
    }

    /// [`calibrate`](Self::calibrate), measuring no further size once
    /// `budget` has passed (a start that waits for it stays bounded); the
    /// threshold then comes from the sizes measured, `cut` says so.
    pub fn calibrate_within(&self, budget: Duration) -> Result<Calibration, GpuError> {
        let started = Instant::now();
        const MAX: usize = 4096;
        const PITCH: usize = 256;
        let suite = srtp::Suite::AES_CM_128_HMAC_SHA1_80;
        let sk = SessionKeys::derive(suite, &[7u8; 16], &[9u8; 14], false, 0)
            .map_err(|e| GpuError::Capacity(format!("calibration keys: {e}")))?;
        let keys = self.prepare_keys(&sk).map_err(|e| GpuError::Capacity(format!("calibration keys: {e}")))?;
        let region = PageRegion::new(MAX * PITCH)?;
        // SAFETY: the region lives until the end of this function and is
        // unregistered before it is freed.
        unsafe { self.register(region.ptr, region.len, PITCH)? };
        let result = (|| -> Result<Calibration, GpuError> {
            let mut rows = Vec::new();
            let mut lane_us = Vec::new();
            // Every batch of the lane to the device while measuring.
            let lane_below = self.lane_below();
            self.set_lane_below(0);
            let mut own = self.own_lane();
            let mut n = 1;
            let mut cut = false;
            while n <= MAX {
                if started.elapsed() > budget {
                    cut = true;
                    break;
                }
                let mut cpu_t = Vec::new();
                let mut gpu_t = Vec::new();
                for rep in 0..17 {
                    let mut jobs = region.jobs(&keys, n, PITCH);
                    let t = Instant::now();
                    run_cpu_with(&self.cpu, &mut jobs);
                    let c = t.elapsed().as_secs_f64() * 1e6;
                    let mut jobs = region.jobs(&keys, n, PITCH);
                    let t = Instant::now();
                    self.transform_gpu(&mut jobs)?;
                    let g = t.elapsed().as_secs_f64() * 1e6;
                    if rep >= 2 {
                        cpu_t.push(c);
                        gpu_t.push(g);
                    }
                }
                rows.push((n, median(&mut cpu_t), median(&mut gpu_t)));
                if let Some(lane) = own.as_mut() {
                    let mut lane_t = Vec::new();
                    for rep in 0..9 {
                        let mut jobs = region.jobs(&keys, n, PITCH);
                        let mut outcomes = vec![Outcome::Pending; n];
                        let t = Instant::now();
                        // SAFETY: the jobs' buffers lie in `region` and their
                        // keys in `keys`, both untouched until completed here.
                        let ticket = unsafe { srtp::Lane::submit(lane, &mut jobs) };
                        let mut host = t.elapsed();
                        if let Some(ticket) = ticket {
                            while !srtp::Lane::is_done(lane, &ticket) {
                                std::hint::spin_loop();
                            }
                            let t = Instant::now();
                            srtp::Lane::complete(lane, ticket, &mut outcomes).map_err(GpuError::Cuda)?;
                            host += t.elapsed();
                        }
                        if rep >= 1 {
                            lane_t.push(host.as_secs_f64() * 1e6);
                        }
                    }
                    lane_us.push(median(&mut lane_t));
                }
                n *= 2;
            }
            let mut threshold = usize::MAX;
            for &(n, c, g) in rows.iter().rev() {
                if g < c {
                    threshold = n;
                } else {
                    break;
                }
            }
            if cut && threshold == usize::MAX {
                // The GPU lost at every size measured, but the larger ones,
                // where it wins, were not: they go to it, not none at all.
                threshold = n;
            }
            drop(own);
            let mut lane_threshold = if lane_us.is_empty() { threshold } else { usize::MAX };
            for (&(n, c, _), &l) in rows.iter().zip(&lane_us).rev() {
                if l < c {
                    lane_threshold = n;
                } else {
                    break;
                }
            }
            if cut && lane_threshold == usize::MAX {
                lane_threshold = n;
            }
            self.set_lane_below(lane_below);
            Ok(Calibration { rows, threshold, lane_us, lane_threshold, cut, took: started.elapsed() })
        })();
        self.unregister(region.ptr);
        let cal = result?;
        self.set_cpu_below(cal.threshold);
        self.set_lane_below(cal.lane_threshold);
        Ok(cal)
    }

    fn launch_config(&self, n: usize, blocks: u32) -> LaunchConfig {
        // A warp takes 1..32 packets (as few as spread the batch over the
        // grid) and warp w runs in block w % grid: a small batch gets one
        // packet per warp, each warp in its own block, across the SMs.
        let grid = (n.max(1) as u32).min(blocks);
        LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (self.info.threads, 1, 1), shared_mem_bytes: 0 }
    }

    fn start_persistent(&self, lane: &mut Lane) -> Result<(), GpuError> {
        // Callers need not have bound the lane's GPU (a poll binds nothing).
        lane.stream.context().bind_to_thread()?;
        let ring = lane.ring.as_mut().expect("persistent lanes have a ring");
        let ctl = ring.ctl.words(0);
        // SAFETY: ctl points at the mapped control words; the kernel is not
        // running, so the host owns them. The new kernel starts after the
        // last batch done (ctl[3]) and takes the batches rung since, which
        // an exiting kernel may have left.
        unsafe {
            let done = std::ptr::read_volatile(ctl.add(CTL_DONE));
            std::ptr::write_volatile(ctl.add(CTL_STOP), 0);
            std::ptr::write_volatile(ctl.add(CTL_EXITED), 0);
            // counter = 0; relay: taken = done = the last completed batch,
            // count 0, no stop, first index 0.
            result::memcpy_htod_sync(ring.counter.ptr, &[0u32, done, 0, 0, 0, done, 0, 0])?;
        }
        fence(Ordering::SeqCst);
        ring.generation = self.shared.generation.load(Ordering::SeqCst);
        let idle_ns = self.cfg.idle_exit.as_nanos() as u64;
        let cfg =
            LaunchConfig { grid_dim: (lane.blocks, 1, 1), block_dim: (self.info.threads, 1, 1), shared_mem_bytes: 0 };
        let gpu = &self.shared.gpus[lane.gpu];
        let mut b = lane.stream.launch_builder(&gpu.persistent_fn);
        let (keys, ctl_dev, wire, outcomes, counter, te0, scratch) = (
            gpu.keys_dev,
            ring.ctl.dev,
            lane.wire.dev,
            lane.outcomes.dev,
            ring.counter.ptr,
            gpu.te0.ptr,
            lane.scratch.ptr,
        );
        b.arg(&keys).arg(&ctl_dev).arg(&wire).arg(&outcomes).arg(&counter).arg(&te0).arg(&idle_ns).arg(&scratch);
        // SAFETY: the arguments are device pointers of live allocations that
        // outlive the kernel (it is stopped in Drop before they are freed).
        unsafe { b.launch(cfg)? };
        ring.running = true;
        Ok(())
    }

    /// After a batch is given up (a timeout, a driver error): the lane's
    /// work stopped (its resident kernel runs what was rung, then exits) and
    /// every batch rung so far marked done, so that a kernel started later
    /// does not run them on buffers the host has taken back.
    fn abandon(&self, lane: &mut Lane) {
        let _ = self.stop_persistent(lane);
        if let Some(ring) = lane.ring.as_mut() {
            ring.running = false;
            // SAFETY: the lane's mapped control words; its kernel stopped
            // (or, past the timeout, no longer counted on).
            unsafe { std::ptr::write_volatile(ring.ctl.words(0).add(CTL_DONE), ring.seq) };
        }
    }

    /// Stops a lane's resident kernel and waits for it (bounded).
    fn stop_persistent(&self, lane: &mut Lane) -> Result<(), GpuError> {
        let Some(ring) = lane.ring.as_mut() else { return Ok(()) };
        if !ring.running {
            return Ok(());
        }
        let ctl = ring.ctl.words(0);
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
        lane.stream.synchronize()?;
        ring.running = false;
        Ok(())
    }

    /// Runs the lane's first `n` wire descriptors on the device and waits.
    fn submit(&self, lane: &mut Lane, n: usize) -> Result<(), GpuError> {
        match self.cfg.mode {
            Mode::Launch => {
                self.launch_gather(lane, lane.wire.dev, lane.outcomes.dev, n, 0, 0)?;
                lane.stream.synchronize()?;
                Ok(())
            }
            Mode::Persistent => self.submit_persistent(lane, n),
        }
    }

    fn submit_persistent(&self, lane: &mut Lane, n: usize) -> Result<(), GpuError> {
        let seq = self.ring_persistent(lane, n, 0)?;
        self.wait_persistent(lane, seq, true)?;
        Ok(())
    }

    /// Rings the lane's doorbell for `n` wire descriptors from descriptor
    /// `first` (starting its resident kernel first if it is not running);
    /// returns the batch's number, which the kernel writes when done. The
    /// caller rings a batch only once the one two before it is done.
    fn ring_persistent(&self, lane: &mut Lane, n: usize, first: usize) -> Result<u32, GpuError> {
        let stale = lane
            .ring
            .as_ref()
            .is_some_and(|r| r.running && r.generation != self.shared.generation.load(Ordering::SeqCst));
        if stale {
            self.stop_persistent(lane)?;
        }
        {
            let ring = lane.ring.as_ref().expect("persistent lanes have a ring");
            let ctl = ring.ctl.words(0);
            // SAFETY: reading the exited flag the kernel writes on exit.
            let exited = unsafe { std::ptr::read_volatile(ctl.add(CTL_EXITED)) } != 0;
            if !ring.running || exited {
                if ring.running {
                    lane.stream.synchronize()?;
                }
                lane.ring.as_mut().expect("ring").running = false;
                self.start_persistent(lane)?;
            }
        }
        let ring = lane.ring.as_mut().expect("persistent lanes have a ring");
        let ctl = ring.ctl.words(0);
        ring.seq = ring.seq.wrapping_add(1);
        let seq = ring.seq;
        // Publish: the descriptors, then the batch's slot word in one store
        // (the kernel takes a batch only when its slot names it).
        fence(Ordering::SeqCst);
        let slot = CTL_SLOTS + 2 * (seq as usize % RUNG);
        let word = (u64::from(seq & 0xffff) << 48) | ((first as u64) << 24) | n as u64;
        // SAFETY: control words of the mapped ring (page-aligned, so the slot
        // word is 8-aligned); the kernel reads them with volatile loads.
        unsafe { std::ptr::write_volatile(ctl.add(slot) as *mut u64, word) };
        fence(Ordering::SeqCst);
        Ok(seq)
    }

    /// Whether the resident kernel finished batch `seq` (when `wait`, spins
    /// until it did, restarting a kernel that went idle as the doorbell
    /// rang; gives up after the timeout).
    fn wait_persistent(&self, lane: &mut Lane, seq: u32, wait: bool) -> Result<bool, GpuError> {
        let ctl = lane.ring.as_ref().expect("persistent lanes have a ring").ctl.words(0);
        // A poll (not waiting) reads no clock: a worker polls in its loop.
        let t0 = wait.then(Instant::now);
        let mut spins = 0u32;
        loop {
            // SAFETY: as above; the kernel writes CTL_DONE after a system fence.
            let done = unsafe { std::ptr::read_volatile(ctl.add(CTL_DONE)) };
            // Batches complete in order: a later one done means this one is.
            if done.wrapping_sub(seq) < 1 << 31 {
                break;
            }
            // SAFETY: as above.
            if unsafe { std::ptr::read_volatile(ctl.add(CTL_EXITED)) } != 0 {
                // The kernel went idle just as the doorbell rang: restart it;
                // it resumes after the last completed batch and takes ours.
                lane.stream.synchronize()?;
                lane.ring.as_mut().expect("ring").running = false;
                self.start_persistent(lane)?;
            }
            if !wait {
                return Ok(false);
            }
            spins += 1;
            if spins.is_multiple_of(1024) && t0.is_some_and(|t| t.elapsed() > self.cfg.timeout) {
                return Err(GpuError::Timeout(self.cfg.timeout));
            }
            std::hint::spin_loop();
        }
        fence(Ordering::SeqCst);
        Ok(true)
    }

    /// Transforms on the GPU (no hybrid shortcut). Jobs the GPU cannot take
    /// (AES-f8, a packet longer than a scratch slot) run on the CPU.
    pub fn transform_gpu(&self, jobs: &mut [Job<'_, GpuKeys>]) -> Result<(), GpuError> {
        let t0 = Instant::now();
        let mut lane = self.lane()?;
        self.gpu(&lane).ctx.bind_to_thread()?;
        let regions = self.regions.read().map_err(|_| GpuError::Cuda("region lock poisoned".into()))?;
        let mut hint = 0usize;
        let in_place = !regions.is_empty()
            && jobs.iter().all(|j| j.keys.slot.is_none() || find_region(&regions, j.buf, &mut hint).is_some());
        let ran = if in_place {
            self.run_in_place(&mut lane, &regions, jobs)
        } else {
            drop(regions);
            self.run_packed(&mut lane, jobs)
        };
        if let Err(e) = ran {
            // The caller runs the batch on the CPU: nothing may still run on it.
            self.abandon(&mut lane);
            return Err(e);
        }
        let on_device = jobs.iter().filter(|j| device_len(j).is_some()).count();
        self.count_gpu_batch(t0.elapsed().as_nanos() as u64, on_device, lane.gpu);
        Ok(())
    }

    /// Packets each GPU ran, by CUDA ordinal, in the engine's order.
    pub fn packets_per_gpu(&self) -> Vec<(usize, u64)> {
        self.shared.gpus.iter().map(|g| (g.ordinal, g.packets.load(Ordering::Relaxed))).collect()
    }

    /// Counts a batch GPU `gpu` ran, and its round trip.
    fn count_gpu_batch(&self, ns: u64, n: usize, gpu: usize) {
        self.shared.gpus[gpu].packets.fetch_add(n as u64, Ordering::Relaxed);
        let us = ns as f64 / 1000.0;
        let bucket = ROUND_TRIP_BOUNDS_US.iter().position(|&b| us <= b).unwrap_or(ROUND_TRIP_BOUNDS_US.len());
        self.stats.round_trip[bucket].fetch_add(1, Ordering::Relaxed);
        self.stats.round_trip_ns.fetch_add(ns, Ordering::Relaxed);
        self.stats.gpu_batches.fetch_add(1, Ordering::Relaxed);
    }

    /// The zero-copy path: descriptors name the packets where they lie. In
    /// the launch mode a large batch is cut into sub-batches that alternate
    /// between the two halves of the lane's descriptor and outcome buffers:
    /// the host writes one while the device runs the other.
    fn run_in_place(&self, lane: &mut Lane, regions: &[Region], jobs: &mut [Job<'_, GpuKeys>]) -> Result<(), GpuError> {
        if self.cfg.mode == Mode::Persistent {
            for part in jobs.chunks_mut(self.cfg.chunk_packets) {
                self.write_wire(lane.gpu, regions, part, lane.wire.ptr);
                self.submit(lane, part.len())?;
                self.read_outcomes(part, lane.outcomes.ptr);
            }
            return Ok(());
        }
        let half = (self.cfg.chunk_packets / 2).max(1);
        let sub = if jobs.len() <= half { half } else { half.min(16_384) };
        let mut inflight: Option<(usize, usize, usize)> = None;
        let (mut pos, mut h) = (0usize, 0usize);
        loop {
            let next = (pos < jobs.len()).then(|| {
                let len = sub.min(jobs.len() - pos);
                // SAFETY: half h of the wire buffer holds `half` ≥ len descriptors.
                let dst = unsafe { lane.wire.ptr.add(h * half * WIRE_BYTES) };
                let span = self.write_wire(lane.gpu, regions, &jobs[pos..pos + len], dst);
                (pos, len, h, span)
            });
            if let Some((s, l, hh)) = inflight.take() {
                lane.stream.synchronize()?;
                // SAFETY: half hh of the outcome words, written by the finished kernel.
                let src = unsafe { lane.outcomes.ptr.add(hh * half * 4) };
                self.read_outcomes(&mut jobs[s..s + l], src);
            }
            let Some((s, l, hh, span)) = next else { break };
            let wire = lane.wire.dev + (hh * half * WIRE_BYTES) as u64;
            let outcomes = lane.outcomes.dev + (hh * half * 4) as u64;
            let (rd, wd) = self.dma_in(lane, regions, span)?;
            self.launch_gather(lane, wire, outcomes, l, rd, wd)?;
            self.dma_out(lane, regions, span)?;
            inflight = Some((s, l, hh));
            pos += l;
            h ^= 1;
        }
        Ok(())
    }

    /// Launches the gather kernel on the lane's stream (not waiting).
    #[allow(clippy::too_many_arguments)]
    fn launch_gather(&self, lane: &Lane, wire: u64, outcomes: u64, n: usize, rd: i64, wd: i64) -> Result<(), GpuError> {
        let cfg = self.launch_config(n, lane.blocks);
        let gpu = self.gpu(lane);
        let mut b = lane.stream.launch_builder(&gpu.gather_fn);
        let (keys, count, te0, scratch) = (gpu.keys_dev, n as u32, gpu.te0.ptr, lane.scratch.ptr);
        b.arg(&keys).arg(&wire).arg(&outcomes).arg(&count).arg(&te0).arg(&scratch).arg(&rd).arg(&wd);
        // SAFETY: `wire` and `outcomes` hold n descriptors and words of the
        // lane's mapped buffers; the scratch has a slot per thread of the
        // grid; every address a descriptor names lies in registered, staged
        // or device memory that outlives the stream's next synchronisation,
        // which the caller waits for before touching the buffers again.
        unsafe { b.launch(cfg)? };
        Ok(())
    }

    /// Writes the wire descriptors of `jobs` (in registered memory) at `dst`
    /// (mapped pinned memory with room for them): the device address of
    /// each packet where it lies, or a descriptor the device skips. Returns
    /// the frames the packets occupy when they all lie in one region.
    /// Addresses are GPU `gpu`'s.
    fn write_wire(&self, gpu: usize, regions: &[Region], jobs: &[Job<'_, GpuKeys>], dst: *mut u8) -> Option<Span> {
        let mut hint = 0usize;
        let mut span: Option<Span> = None;
        // One region, and no packet crossing a frame boundary of the stated
        // pitch: then rows first..=last, columns lo..hi hold every packet.
        let mut one_region = true;
        for (i, job) in jobs.iter().enumerate() {
            let w = match (job.keys.slot, device_len(job), find_region(regions, job.buf, &mut hint)) {
                (Some(slot), Some(len), Some(r)) => {
                    let off = job.buf.as_ptr() as usize - r.host;
                    let (frame, at) = off.checked_div(r.pitch).map_or((0, off), |f| (f, off - f * r.pitch));
                    let end = at + len;
                    one_region &= r.pitch == 0 || end <= r.pitch;
                    span = Some(match span {
                        None => Span { region: hint, first: frame, last: frame, lo: at, hi: end, dense: r.pitch > 0 },
                        Some(s) => {
                            one_region &= s.region == hint;
                            Span {
                                region: s.region,
                                first: s.first.min(frame),
                                last: s.last.max(frame),
                                lo: s.lo.min(at),
                                hi: s.hi.max(end),
                                dense: s.dense && frame == s.last + 1,
                            }
                        }
                    });
                    wire_of(job, slot, r.dev[gpu] + off as u64, len)
                }
                _ => layout::wire_skip(),
            };
            // SAFETY: the caller gives room for jobs.len() descriptors at dst;
            // one unaligned 48-byte store of little-endian words.
            unsafe {
                std::ptr::write_unaligned(dst.add(i * WIRE_BYTES) as *mut [u32; layout::WIRE_WORDS], w.map(u32::to_le))
            };
        }
        span.filter(|_| one_region)
    }

    /// The strided copy of `span`'s frames between the region and its
    /// device copy on GPU `gpu` (rows = frames, columns = the bytes the
    /// packets use), or None where the region has no device copy.
    fn span_copy(
        regions: &[Region],
        gpu: usize,
        span: Option<Span>,
        to_device: bool,
    ) -> Option<(sys::CUDA_MEMCPY2D, i64, bool)> {
        let s = span?;
        let r = &regions[s.region];
        let mirror = r.mirrors.get(gpu)?;
        let (pitch, rows) = if r.pitch > 0 { (r.pitch, s.last - s.first + 1) } else { (r.len, 1) };
        let lo = s.lo & !15;
        let hi = s.hi.next_multiple_of(16).min(pitch).min(r.len - s.last * pitch);
        let (host_t, dev_t) = (sys::CUmemorytype::CU_MEMORYTYPE_HOST, sys::CUmemorytype::CU_MEMORYTYPE_DEVICE);
        let copy = sys::CUDA_MEMCPY2D {
            srcXInBytes: lo,
            srcY: s.first,
            srcMemoryType: if to_device { host_t } else { dev_t },
            srcHost: if to_device { r.host as *const _ } else { std::ptr::null() },
            srcDevice: if to_device { 0 } else { mirror.ptr },
            srcArray: std::ptr::null_mut(),
            srcPitch: pitch,
            dstXInBytes: lo,
            dstY: s.first,
            dstMemoryType: if to_device { dev_t } else { host_t },
            dstHost: if to_device { std::ptr::null_mut() } else { r.host as *mut _ },
            dstDevice: if to_device { mirror.ptr } else { 0 },
            dstArray: std::ptr::null_mut(),
            dstPitch: pitch,
            WidthInBytes: hi - lo,
            Height: rows,
        };
        Some((copy, mirror.ptr as i64 - r.dev[gpu] as i64, s.dense))
    }

    /// Moves the frames of `span` into the region's device copy (one strided
    /// DMA on the lane's stream). Returns the kernel's read and write deltas:
    /// (0, 0) where the region has no copy (the kernel works in place); the
    /// write delta too where the span is dense (every frame a job's: the
    /// results go back by DMA, [`dma_out`](Self::dma_out)).
    fn dma_in(&self, lane: &Lane, regions: &[Region], span: Option<Span>) -> Result<(i64, i64), GpuError> {
        let Some((copy, delta, dense)) = Self::span_copy(regions, lane.gpu, span, true) else { return Ok((0, 0)) };
        // SAFETY: rows first..=last of `pitch` bytes, columns lo..hi ≤ pitch,
        // lie inside both the registered region and its device copy (same
        // length); the host does not write those frames until the stream is
        // synchronised (the jobs are borrowed for the batch).
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, lane.stream.cu_stream()).result()? };
        Ok((delta, if dense { delta } else { 0 }))
    }

    /// Moves a dense span's frames back from the device copy (after the
    /// kernel, on the same stream). Every byte copied belongs to a frame of
    /// one of the sub-batch's jobs; bytes the kernel did not write (failed
    /// packets, the rest of each frame) go back as they came in.
    fn dma_out(&self, lane: &Lane, regions: &[Region], span: Option<Span>) -> Result<(), GpuError> {
        let Some((copy, _, true)) = Self::span_copy(regions, lane.gpu, span, false) else { return Ok(()) };
        // SAFETY: as in dma_in; the frames are the jobs' own, borrowed
        // mutably for the batch.
        unsafe { sys::cuMemcpy2DAsync_v2(&copy, lane.stream.cu_stream()).result()? };
        Ok(())
    }

    /// Reads the outcomes of `jobs` from the words at `src` (written by a
    /// finished kernel) and runs the jobs the device skipped on the CPU.
    fn read_outcomes(&self, jobs: &mut [Job<'_, GpuKeys>], src: *const u8) {
        for (i, job) in jobs.iter_mut().enumerate() {
            if device_len(job).is_none() {
                self.run_aside(job);
                continue;
            }
            // SAFETY: src holds an outcome word per job; the kernel that wrote
            // them has finished (stream synchronised or doorbell answered).
            let word = u32::from_le(unsafe { std::ptr::read_unaligned(src.add(4 * i) as *const u32) });
            job.outcome = if word == layout::OUTCOME_DONE { Outcome::Done } else { Outcome::AuthFailed };
        }
    }

    /// How many of `jobs` fit one staging buffer.
    fn chunk_len(&self, jobs: &[Job<'_, GpuKeys>]) -> usize {
        let mut bytes = 0usize;
        let mut n = 0usize;
        for job in jobs.iter().take(self.cfg.chunk_packets) {
            let next = bytes + staged_len(job);
            if next > self.cfg.chunk_bytes {
                break;
            }
            bytes = next;
            n += 1;
        }
        n
    }

    /// Packets outside registered memory: packed into the lane's staging
    /// buffer (by several threads for large batches), run, and copied back.
    fn run_packed(&self, lane: &mut Lane, jobs: &mut [Job<'_, GpuKeys>]) -> Result<(), GpuError> {
        let mut start = 0usize;
        while start < jobs.len() {
            let n = self.chunk_len(&jobs[start..]);
            if n == 0 {
                // A packet larger than the staging buffer: the CPU takes it.
                run_cpu_with(&self.cpu, &mut jobs[start..start + 1]);
                start += 1;
                continue;
            }
            let part = &mut jobs[start..start + n];
            let base = match &lane.stage_dev {
                Some(d) => d.ptr,
                None => lane.stage.dev,
            };
            let used = {
                let wire = &mut lane.wire.bytes()[..n * WIRE_BYTES];
                let stage = lane.stage.bytes();
                pack(part, wire, stage, base)
            };
            if let Some(dev) = &lane.stage_dev {
                // SAFETY: the staging buffers hold chunk_bytes ≥ used bytes;
                // the host buffer is not touched until the stream is synchronised.
                unsafe {
                    let src = std::slice::from_raw_parts(lane.stage.ptr, used);
                    result::memcpy_htod_async(dev.ptr, src, lane.stream.cu_stream())?;
                }
            }
            self.submit(lane, n)?;
            if let Some(dev) = &lane.stage_dev {
                // SAFETY: as above; synchronised right after.
                unsafe {
                    let dst = std::slice::from_raw_parts_mut(lane.stage.ptr, used);
                    result::memcpy_dtoh_async(dst, dev.ptr, lane.stream.cu_stream())?;
                }
                lane.stream.synchronize()?;
            }
            let (outcomes, stage) = (&lane.outcomes, &lane.stage);
            // SAFETY: both are live pinned buffers of the lane we hold; only read.
            let (outcomes, stage) = unsafe {
                (
                    std::slice::from_raw_parts(outcomes.ptr, outcomes.len),
                    std::slice::from_raw_parts(stage.ptr, stage.len),
                )
            };
            unpack(&self.cpu, part, outcomes, stage);
            start += n;
        }
        Ok(())
    }

    /// A job of a device batch the device does not take ([`device_len`]),
    /// run on the CPU and counted there.
    fn run_aside(&self, job: &mut Job<'_, GpuKeys>) {
        self.stats.cpu_packets.fetch_add(1, Ordering::Relaxed);
        run_cpu_with(&self.cpu, core::slice::from_mut(job));
    }

    fn run_cpu(&self, jobs: &mut [Job<'_, GpuKeys>]) {
        run_cpu_with(&self.cpu, jobs);
        self.stats.cpu_batches.fetch_add(1, Ordering::Relaxed);
        self.stats.cpu_packets.fetch_add(jobs.len() as u64, Ordering::Relaxed);
    }

    /// Measures host↔device copy bandwidth with pinned memory (bytes/s in,
    /// bytes/s out) over `bytes`-sized transfers, to the first GPU (each
    /// GPU has a link of its own).
    pub fn pcie_bandwidth(&self, bytes: usize, reps: u32) -> Result<(f64, f64), GpuError> {
        self.pcie_bandwidth_with(bytes, reps, sys::CU_MEMHOSTALLOC_DEVICEMAP | sys::CU_MEMHOSTALLOC_PORTABLE)
    }

    /// As [`pcie_bandwidth`](Self::pcie_bandwidth), with host memory
    /// allocated with `flags` (`CU_MEMHOSTALLOC_*`).
    pub fn pcie_bandwidth_with(&self, bytes: usize, reps: u32, flags: u32) -> Result<(f64, f64), GpuError> {
        let ctx = &self.shared.gpus[0].ctx;
        ctx.bind_to_thread()?;
        let host = Pinned::with_flags(bytes, flags)?;
        let dev = DevBuf::new(ctx, bytes)?;
        let stream = ctx.new_stream()?;
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

    /// Kernel time alone, without the host's part of a batch: the
    /// descriptors are built and copied to the device once, then `reps`
    /// launches are timed with the stream synchronised. Packets in registered
    /// memory are read and written there (the device's zero-copy rate over
    /// PCIe); others are copied to device memory once (the kernel's own
    /// limit). Returns ns per packet. (Buffers are transformed `reps + 1`
    /// times in place, or not at all.)
    pub fn kernel_only(&self, jobs: &[Job<'_, GpuKeys>], reps: u32) -> Result<f64, GpuError> {
        let n = jobs.len();
        if n == 0 || n > self.cfg.chunk_packets || jobs.iter().any(|j| device_len(j).is_none()) {
            return Err(GpuError::Capacity("kernel_only takes one chunk of packets that fit a slot".into()));
        }
        let lane = self.lane()?;
        let gpu = self.gpu(&lane);
        gpu.ctx.bind_to_thread()?;
        let regions = self.regions.read().map_err(|_| GpuError::Cuda("region lock poisoned".into()))?;
        let mut hint = 0;
        let in_place = jobs.iter().all(|j| find_region(&regions, j.buf, &mut hint).is_some());
        let total: usize = if in_place { 0 } else { jobs.iter().map(staged_len).sum() };
        let wire_len = n * WIRE_BYTES;
        let dev = DevBuf::new(&gpu.ctx, wire_len + total + 4 * n)?;
        let mut host = Pinned::with_flags(wire_len + total, 0)?;
        {
            let (w, d) = host.bytes().split_at_mut(wire_len);
            if in_place {
                for (i, job) in jobs.iter().enumerate() {
                    let (Some(slot), Some(len), Some(r)) =
                        (job.keys.slot, device_len(job), find_region(&regions, job.buf, &mut hint))
                    else {
                        return Err(GpuError::Capacity("kernel_only takes GPU suites only".into()));
                    };
                    let addr = r.dev[lane.gpu] + (job.buf.as_ptr() as usize - r.host) as u64;
                    put_words(&mut w[i * WIRE_BYTES..(i + 1) * WIRE_BYTES], &wire_of(job, slot, addr, len));
                }
            } else {
                pack(jobs, w, d, dev.ptr + wire_len as u64);
            }
        }
        let stream = lane.stream.clone();
        // SAFETY: both buffers hold at least wire_len + total bytes.
        unsafe {
            result::memcpy_htod_async(
                dev.ptr,
                std::slice::from_raw_parts(host.ptr, wire_len + total),
                stream.cu_stream(),
            )?
        };
        stream.synchronize()?;
        let blocks = self.info.sms * 3;
        let scratch = DevBuf::new(&gpu.ctx, blocks as usize * self.info.threads as usize * layout::SLOT_BYTES)?;
        let cfg = self.launch_config(n, blocks);
        let (keys, wire, outcomes, count, te0, scr) =
            (gpu.keys_dev, dev.ptr, dev.ptr + (wire_len + total) as u64, n as u32, gpu.te0.ptr, scratch.ptr);
        let delta = 0i64;
        let launch = || -> Result<(), GpuError> {
            let mut b = stream.launch_builder(&gpu.gather_fn);
            b.arg(&keys).arg(&wire).arg(&outcomes).arg(&count).arg(&te0).arg(&scr).arg(&delta).arg(&delta);
            // SAFETY: device buffers sized for n descriptors, their data and
            // n outcome words (or registered memory held by the read lock);
            // a scratch slot per thread of the grid.
            unsafe { b.launch(cfg)? };
            Ok(())
        };
        // One untimed launch: the first pays for loading the module.
        launch()?;
        stream.synchronize()?;
        let start = Instant::now();
        for _ in 0..reps.max(1) {
            launch()?;
        }
        stream.synchronize()?;
        Ok(start.elapsed().as_nanos() as f64 / (reps.max(1) as f64 * n as f64))
    }

    /// Host memory bandwidth of the packing step: bytes/s of a CPU copy from
    /// ordinary memory into pinned memory, and into ordinary memory, one thread.
    pub fn host_copy_bandwidth(&self, bytes: usize, reps: u32) -> Result<(f64, f64), GpuError> {
        self.shared.gpus[0].ctx.bind_to_thread()?;
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

impl Drop for Lane {
    fn drop(&mut self) {
        // Its events and pinned buffers belong to its GPU's context.
        let _ = self.stream.context().bind_to_thread();
        if let Some(ring) = self.ring.as_mut() {
            if ring.running {
                let ctl = ring.ctl.words(0);
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
            }
        }
        let _ = self.stream.synchronize();
        for ev in self.events {
            if !ev.is_null() {
                // SAFETY: created in GpuEngine::new; the stream that records
                // it is synchronised above.
                unsafe {
                    let _ = sys::cuEventDestroy_v2(ev);
                }
            }
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

    /// The CPU engine's keys: the batches the CPU runs (small ones, AES-f8)
    /// read them; the device reads its own copy.
    fn prefetch_keys(&self, keys: &GpuKeys) {
        self.cpu.prefetch_keys(&keys.cpu);
    }

    /// The kernels check the tag before they decrypt, and a failed job's
    /// bytes are not copied back; but a job may run aside on the CPU
    /// engine, so its answer is this engine's.
    fn keeps_failed(&self, suite: srtp::Suite) -> bool {
        self.cpu.keeps_failed(suite)
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
                self.shared.generation.fetch_add(1, Ordering::SeqCst);
                s
            } else if f.1 < self.shared.key_slots {
                f.1 += 1;
                f.1 - 1
            } else {
                return Err(srtp::Error::InvalidPolicy(format!("all {} GPU key slots in use", self.shared.key_slots)));
            }
        };
        let mut words = layout::key_slot(keys);
        // The same slot on every GPU: a lane on any of them runs the key.
        let upload = self.shared.gpus.iter().try_for_each(|gpu| {
            let at = gpu.keys_dev + (slot as usize * layout::KEY_WORDS * 4) as u64;
            gpu.ctx.bind_to_thread()?;
            // SAFETY: the slot lies inside keys_dev (slot < key_slots).
            unsafe { result::memcpy_htod_sync(at, &words[..]) }
        });
        words.zeroize();
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
        if jobs.is_empty() {
            return;
        }
        if jobs.len() < self.cpu_below() {
            return self.run_cpu(jobs);
        }
        match self.transform_gpu(jobs) {
            Ok(()) => {}
            Err(GpuError::NoLane) => self.run_cpu(jobs),
            Err(e) => {
                // The batch still completes: on the CPU, with a note on stderr.
                eprintln!("srtp-cuda: {e}; this batch ran on the CPU");
                self.run_cpu(jobs);
            }
        }
    }

    unsafe fn register_memory(&self, ptr: *mut u8, len: usize, pitch: usize) -> bool {
        // SAFETY: the caller keeps the region mapped until unregister_memory.
        match unsafe { self.register(ptr, len, pitch) } {
            Ok(()) => true,
            Err(e) => {
                eprintln!("srtp-cuda: cannot register {len} bytes of packet memory ({e}); its batches are packed");
                false
            }
        }
    }

    fn unregister_memory(&self, ptr: *mut u8) {
        self.unregister(ptr)
    }

    fn lane(&self) -> Option<Box<dyn srtp::Lane<GpuKeys>>> {
        self.own_lane().map(|l| Box::new(l) as Box<dyn srtp::Lane<GpuKeys>>)
    }

    fn stats(&self) -> Option<EngineStats> {
        let s = &self.stats;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut round_trip_us: Vec<(f64, u64)> =
            ROUND_TRIP_BOUNDS_US.iter().zip(&s.round_trip).map(|(b, c)| (*b, load(c))).collect();
        round_trip_us.push((f64::INFINITY, load(&s.round_trip[ROUND_TRIP_BOUNDS_US.len()])));
        Some(EngineStats {
            shares: vec![
                ("cpu", load(&s.cpu_batches), load(&s.cpu_packets)),
                // Each GPU counts its own packets; the path's are their sum.
                ("gpu", load(&s.gpu_batches), self.shared.gpus.iter().map(|g| load(&g.packets)).sum()),
            ],
            round_trip_us,
            round_trip_sum_us: load(&s.round_trip_ns) as f64 / 1000.0,
            threshold: Some(self.cpu_below()),
            devices: self.packets_per_gpu(),
        })
    }
}

const WIRE_BYTES: usize = layout::WIRE_WORDS * 4;

/// The bytes of a job the device reads and writes (from the start of its
/// buffer to the end of what the transform touches: the encrypted range,
/// the authenticated bytes and the tag), or None when the device does not
/// take the job (no key slot: AES-f8; more than a scratch slot). A job's
/// buffer is often larger: a relay hands over the whole frame, room to grow
/// included, and only the packet's bytes are the device's business.
pub(crate) fn device_len(job: &Job<'_, GpuKeys>) -> Option<usize> {
    job.keys.slot?;
    // Clamped to the buffer: a malformed job (touching bytes past its
    // buffer) is then rejected by the device's own check, never read past.
    let len = job.enc_end.max(job.auth_end).max(job.tag_start + job.tag_len).min(job.buf.len());
    (len <= layout::SLOT_BYTES).then_some(len)
}

/// Bytes a job takes in the staging buffer.
fn staged_len(job: &Job<'_, GpuKeys>) -> usize {
    device_len(job).map_or(0, |len| len.next_multiple_of(16))
}

/// The region holding all of `buf`, trying `hint` first (the last hit,
/// which is left at the index found).
fn find_region<'r>(regions: &'r [Region], buf: &[u8], hint: &mut usize) -> Option<&'r Region> {
    let (p, len) = (buf.as_ptr() as usize, buf.len());
    let inside = |r: &Region| p >= r.host && p + len <= r.host + r.len;
    if let Some(r) = regions.get(*hint).filter(|r| inside(r)) {
        return Some(r);
    }
    let i = regions.iter().position(inside)?;
    *hint = i;
    Some(&regions[i])
}

fn wire_of(job: &Job<'_, GpuKeys>, slot: u32, addr: u64, len: usize) -> [u32; layout::WIRE_WORDS] {
    layout::wire(
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
        addr,
        len,
    )
}

fn put_words(dst: &mut [u8], words: &[u32]) {
    for (k, w) in words.iter().enumerate() {
        dst[4 * k..4 * k + 4].copy_from_slice(&w.to_le_bytes());
    }
}

fn word_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]])
}

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

/// Packs `jobs` into `wire` (their descriptors) and `data` (their bytes; the
/// device sees `data` at address `base`), by several threads for large
/// batches. Returns the data bytes used.
fn pack(jobs: &[Job<'_, GpuKeys>], wire: &mut [u8], data: &mut [u8], base: u64) -> usize {
    let total: usize = jobs.iter().map(staged_len).sum();
    let per = part_size(jobs.len());
    if per >= jobs.len() {
        pack_part(jobs, wire, data, base);
        return total;
    }
    let (mut wire, mut data) = (wire, data);
    std::thread::scope(|scope| {
        let mut at = base;
        for part in jobs.chunks(per) {
            let bytes: usize = part.iter().map(staged_len).sum();
            let (w, rest) = std::mem::take(&mut wire).split_at_mut(part.len() * WIRE_BYTES);
            wire = rest;
            let (x, rest) = std::mem::take(&mut data).split_at_mut(bytes);
            data = rest;
            let b = at;
            at += bytes as u64;
            scope.spawn(move || pack_part(part, w, x, b));
        }
    });
    total
}

fn pack_part(jobs: &[Job<'_, GpuKeys>], wire: &mut [u8], data: &mut [u8], base: u64) {
    let mut off = 0usize;
    for (i, job) in jobs.iter().enumerate() {
        let w = match (job.keys.slot, device_len(job)) {
            (Some(slot), Some(len)) => {
                data[off..off + len].copy_from_slice(&job.buf[..len]);
                let w = wire_of(job, slot, base + off as u64, len);
                off += len.next_multiple_of(16);
                w
            }
            // Not a GPU job: a descriptor the device skips; the CPU runs it after.
            _ => layout::wire_skip(),
        };
        put_words(&mut wire[i * WIRE_BYTES..(i + 1) * WIRE_BYTES], &w);
    }
}

/// Reads outcomes and bytes back into `jobs` (and runs the CPU-only ones),
/// by several threads for large batches.
fn unpack(cpu: &CpuEngine, jobs: &mut [Job<'_, GpuKeys>], outcomes: &[u8], data: &[u8]) {
    let per = part_size(jobs.len());
    if per >= jobs.len() {
        return unpack_part(cpu, jobs, outcomes, data);
    }
    let (mut outcomes, mut data) = (outcomes, data);
    std::thread::scope(|scope| {
        for part in jobs.chunks_mut(per) {
            let bytes: usize = part.iter().map(staged_len).sum();
            let (o, rest) = outcomes.split_at(part.len() * 4);
            outcomes = rest;
            let (x, rest) = data.split_at(bytes);
            data = rest;
            scope.spawn(move || unpack_part(cpu, part, o, x));
        }
    });
}

fn unpack_part(cpu: &CpuEngine, jobs: &mut [Job<'_, GpuKeys>], outcomes: &[u8], data: &[u8]) {
    let mut off = 0usize;
    for (i, job) in jobs.iter_mut().enumerate() {
        let Some(len) = device_len(job) else {
            run_cpu_with(cpu, core::slice::from_mut(job));
            continue;
        };
        job.outcome = match word_at(outcomes, i) {
            layout::OUTCOME_DONE => {
                job.buf[..len].copy_from_slice(&data[off..off + len]);
                Outcome::Done
            }
            _ => Outcome::AuthFailed,
        };
        off += len.next_multiple_of(16);
    }
}

/// Runs jobs on the CPU engine with the CPU half of their keys.
/// Jobs converted to the CPU engine's keys at a time: enough for its
/// multi-buffer kernels to fill their lanes.
const CPU_CHUNK: usize = 32;

/// Runs `jobs` on the CPU engine, as batches (its multi-buffer HMAC needs
/// them: one job at a time costs about twice as much a packet), converted
/// to its keys in chunks on the stack.
fn run_cpu_with(cpu: &CpuEngine, jobs: &mut [Job<'_, GpuKeys>]) {
    for part in jobs.chunks_mut(CPU_CHUNK) {
        let mut chunk: arrayvec::ArrayVec<Job<'_, CpuKeys>, CPU_CHUNK> = arrayvec::ArrayVec::new();
        let mut outcomes = [Outcome::Pending; CPU_CHUNK];
        {
            for job in part.iter_mut() {
                let keys = job.keys;
                chunk.push(job.with_keys(&keys.cpu));
            }
            cpu.transform(&mut chunk);
            for (o, j) in outcomes.iter_mut().zip(chunk.iter()) {
                *o = j.outcome;
            }
        }
        drop(chunk);
        for (job, o) in part.iter_mut().zip(outcomes) {
            job.outcome = o;
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Page-aligned memory for calibration packets, laid out like a buffer pool
/// (a packet at the start of each `pitch`-byte frame).
struct PageRegion {
    ptr: *mut u8,
    len: usize,
}

impl PageRegion {
    fn new(len: usize) -> Result<PageRegion, GpuError> {
        let layout = std::alloc::Layout::from_size_align(len, 4096).map_err(|e| GpuError::Capacity(e.to_string()))?;
        // SAFETY: a non-zero size; freed in Drop with the same layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(GpuError::Capacity("calibration memory".into()));
        }
        Ok(PageRegion { ptr, len })
    }

    /// `n` AES_CM_128_HMAC_SHA1_80 protect jobs of G.711 packets (12-byte
    /// header, 160 bytes of payload, room for the 10-byte tag).
    fn jobs<'a>(&'a self, keys: &'a GpuKeys, n: usize, pitch: usize) -> Vec<Job<'a, GpuKeys>> {
        // SAFETY: the region is live for 'a, and the frames handed out are
        // disjoint (one per job, `n * pitch <= len`).
        let all = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) };
        all.chunks_mut(pitch)
            .take(n)
            .enumerate()
            .map(|(i, frame)| {
                let buf = &mut frame[..182];
                buf[0] = 0x80;
                let mut iv = [0u8; 16];
                iv[..4].copy_from_slice(&(i as u32).to_be_bytes());
                Job {
                    keys,
                    op: srtp::engine::Op::Protect,
                    iv,
                    buf,
                    enc_start: 12,
                    enc_end: 172,
                    auth_end: 172,
                    suffix: [0; 4],
                    suffix_len: 4,
                    tag_start: 172,
                    tag_len: 10,
                    outcome: Outcome::Pending,
                }
            })
            .collect()
    }
}

impl Drop for PageRegion {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len, 4096).expect("valid at creation");
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) };
    }
}
