//! `srtpgate serve`: the media relay daemon. NG control over UDP, media
//! workers, the HTTP endpoint for metrics, timeouts, and a clean stop on
//! SIGTERM/SIGINT.

pub mod cache;
pub mod config;
pub mod control;
#[cfg(test)]
mod heap_scan;
pub mod http;
pub mod plane;
pub mod prompts;
pub mod quality;
pub mod recorder;
pub mod redis_store;
#[cfg(test)]
mod tests;
pub mod ui;
pub mod ui_view;

use cache::ReplyCache;
use config::{Config, EngineChoice, ServeArgs};
use control::Control;
use srtp::{CpuEngine, Engine};
use srtp_cuda::{GpuConfig, GpuEngine};
use srtpgate_ng::Value;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;
use zeroize::{Zeroize, Zeroizing};

/// Files kept free of media sockets beside those open at start and the HTTP
/// connections: log rotation, /proc reads, the accept of a refused HTTP
/// connection, sockets closing in a worker after their call ended.
const FD_SLACK: usize = 64;

/// The most time the GPU engine's start spends measuring the hybrid
/// threshold (a whole measurement takes well under it on the GPU machines).
const CALIBRATION: Duration = Duration::from_secs(2);

/// Runs the daemon until a signal; errors are configuration or start-up failures.
pub fn run(args: ServeArgs) -> Result<(), String> {
    let started = Instant::now();
    let cfg = Config::resolve(&args)?;
    let filter = tracing_subscriber::EnvFilter::try_new(&cfg.log_level)
        .map_err(|e| format!("log-level {:?}: {e}", cfg.log_level))?;
    // The filter behind a reload handle, so that the management page can
    // change the log level of the running relay.
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    let log: Option<ui::LogControl> = tracing_subscriber::registry()
        .with(filter)
        .with(tracing_subscriber::fmt::layer().with_target(false))
        .try_init()
        .is_ok()
        .then(|| -> ui::LogControl {
            Box::new(move |level: &str| {
                let f =
                    tracing_subscriber::EnvFilter::try_new(level).map_err(|e| format!("log level {level:?}: {e}"))?;
                handle.reload(f).map_err(|e| e.to_string())
            })
        });
    let limit = crate::relay::sys::raise_nofile_limit();
    tracing::info!("open-file limit {limit} (each relayed media stream takes 4)");
    warn_ephemeral_overlap(&cfg);
    let cfg = Arc::new(cfg);
    match cfg.engine {
        EngineChoice::Cpu => serve(cfg.clone(), CpuEngine::new(), log, started),
        EngineChoice::Gpu | EngineChoice::Auto => {
            let mode = cfg.gpu_mode.parse().map_err(|e: String| e)?;
            // One submission lane per media worker, its own (asynchronous
            // rounds: the worker goes on while the GPU runs its batches),
            // and one more for the threads that share (blocking batches);
            // beyond 64 workers, the rest share. A lane's buffers are cut
            // into a part per batch in flight (four), and a part holds the
            // largest batch of a round: a batch larger than a part would
            // run synchronously, stalling the worker just when it is
            // loaded. The staging buffer (packets outside the registered
            // pools only) is small.
            let gcfg = GpuConfig {
                mode,
                lanes: cfg.workers.clamp(1, 64) + 1,
                chunk_packets: 4 * crate::relay::worker::MAX_BATCH,
                chunk_bytes: 1 << 20,
                kernel_cache: cfg.gpu_kernel_cache.clone(),
                devices: cfg.gpu_devices.clone(),
                ..GpuConfig::default()
            };
            match GpuEngine::new(gcfg) {
                Ok(g) => {
                    let info = g.info();
                    let kernels = match &info.kernels {
                        srtp_cuda::Kernels::Cached(path) => format!("kernels from {}", path.display()),
                        srtp_cuda::Kernels::Compiled { took, kept, refused } => {
                            let kept = match kept {
                                Ok(path) => format!("kept in {}", path.display()),
                                Err(why) => format!("not kept ({why})"),
                            };
                            let refused = if *refused { " (the driver refused the cached ones)" } else { "" };
                            format!("kernels compiled in {:.2} s{refused}, {kept}", took.as_secs_f64())
                        }
                    };
                    let gpus: Vec<String> = info
                        .gpus
                        .iter()
                        .map(|p| match p.numa {
                            Some(node) => format!("GPU {} (node {node}): {} lanes", p.ordinal, p.lanes),
                            None => format!("GPU {}: {} lanes", p.ordinal, p.lanes),
                        })
                        .collect();
                    tracing::info!(
                        "GPU engine on {} × {} (sm_{}{}, {} SMs, {} blocks of {} threads, {} lanes: {}) started in {:.2} s: {kernels}",
                        info.gpus.len(),
                        info.name,
                        info.cc.0,
                        info.cc.1,
                        info.sms,
                        info.blocks,
                        info.threads,
                        info.lanes,
                        gpus.join(", "),
                        info.start.as_secs_f64()
                    );
                    // Small batches stay on the CPU: below the crossover the
                    // GPU's round trip is longer than the CPU's work (the
                    // hybrid policy), measured here unless configured, for
                    // at most CALIBRATION so that a start stays short.
                    match cfg.gpu_min_batch {
                        Some(n) => {
                            g.set_cpu_below(n);
                            g.set_lane_below(n);
                        }
                        None => match g.calibrate_within(CALIBRATION) {
                            Ok(c) => {
                                let rows: Vec<String> = c
                                    .rows
                                    .iter()
                                    .map(|(n, cpu, gpu)| format!("{n}: cpu {cpu:.1} us gpu {gpu:.1} us"))
                                    .collect();
                                let lane: Vec<String> = c
                                    .rows
                                    .iter()
                                    .zip(&c.lane_us)
                                    .map(|((n, _, _), us)| format!("{n}: {us:.1} us"))
                                    .collect();
                                let size =
                                    |n: usize| if n == usize::MAX { "no number of".to_string() } else { n.to_string() };
                                tracing::info!(
                                    "GPU hybrid threshold measured in {:.2} s{}: batches of {} packets and more go to the GPU ({}); \
                                     handed over by a worker without waiting, batches of {} and more (the worker's time: {})",
                                    c.took.as_secs_f64(),
                                    if c.cut { " (the time bound ended it; larger sizes not measured)" } else { "" },
                                    size(c.threshold),
                                    rows.join(", "),
                                    size(c.lane_threshold),
                                    lane.join(", ")
                                );
                            }
                            Err(e) => {
                                tracing::warn!(
                                    "GPU calibration failed ({e}); batches of 64 packets and more go to the GPU"
                                );
                                g.set_cpu_below(64);
                                g.set_lane_below(64);
                            }
                        },
                    }
                    serve(cfg.clone(), Arc::new(g), log, started)
                }
                Err(e) => {
                    // GPUs the operator named that are not there: never a
                    // quiet fall back to the CPU.
                    let misnamed = matches!(e, srtp_cuda::GpuError::Config(_));
                    // `Unavailable` and `Config` say so themselves; a CUDA or
                    // NVRTC failure gets the same lead.
                    let why = match e {
                        srtp_cuda::GpuError::Unavailable(_) | srtp_cuda::GpuError::Config(_) => e.to_string(),
                        e => format!("GPU engine unavailable: {e}"),
                    };
                    if misnamed {
                        return Err(format!("{why} (see --gpu-devices)"));
                    }
                    if cfg.engine != EngineChoice::Auto {
                        return Err(format!("{why} (use --engine cpu or auto)"));
                    }
                    tracing::warn!("{why}; running on the CPU engine");
                    serve(cfg.clone(), CpuEngine::new(), log, started)
                }
            }
        }
    }
}

/// Warns when the media port range overlaps the kernel's ephemeral range
/// (where outgoing connections of any process take their local ports) in
/// ports not reserved with `net.ipv4.ip_local_reserved_ports`: those ports
/// may be taken when the relay needs them.
fn warn_ephemeral_overlap(cfg: &Config) {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let range = read("/proc/sys/net/ipv4/ip_local_port_range");
    let reserved = read("/proc/sys/net/ipv4/ip_local_reserved_ports");
    if let Some(n) = ephemeral_overlap(cfg.port_min, cfg.port_max, &range, &reserved) {
        tracing::warn!(
            "{n} media ports of {}-{} are in the kernel's ephemeral port range ({}) and not reserved: \
             other processes' connections may take them; reserve them with \
             sysctl net.ipv4.ip_local_reserved_ports={}-{} (or move the range)",
            cfg.port_min,
            cfg.port_max,
            range.trim().replace('\t', "-"),
            cfg.port_min,
            cfg.port_max
        );
    }
}

/// Ports of `min..=max` inside the ephemeral range (`ip_local_port_range`:
/// "LOW HIGH") and outside the reserved list (`ip_local_reserved_ports`:
/// "A,B-C,…"); `None` when there are none or the range is unreadable.
pub fn ephemeral_overlap(min: u16, max: u16, range: &str, reserved: &str) -> Option<usize> {
    let mut it = range.split_whitespace().map(|v| v.parse::<u16>());
    let (Some(Ok(lo)), Some(Ok(hi))) = (it.next(), it.next()) else { return None };
    let reserved: Vec<(u16, u16)> = reserved
        .trim()
        .split(',')
        .filter_map(|item| {
            let (a, b) = item.split_once('-').unwrap_or((item, item));
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .collect();
    let n = (min.max(lo)..=max.min(hi)).filter(|p| !reserved.iter().any(|(a, b)| (a..=b).contains(&p))).count();
    (n > 0).then_some(n)
}

/// STUN/DTLS datagrams queued between the workers and the WebRTC thread.
const SIGNAL_QUEUE: usize = 8192;

/// The WebRTC thread: answers ICE checks and runs DTLS handshakes from the
/// datagrams the workers hand over, and the handshakes' retransmission
/// timers (every 20 ms). Holds the call table's lock per batch of
/// datagrams, never across a wait. Ends when the relay stops.
fn webrtc_loop(shared: std::sync::Weak<Shared>, rx: crossbeam_channel::Receiver<crate::relay::worker::Signal>) {
    const TICK: Duration = Duration::from_millis(20);
    let mut last_tick = std::time::Instant::now();
    loop {
        let got = match rx.recv_timeout(TICK) {
            Ok(sig) => Some(sig),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => None,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
        };
        let Some(shared) = shared.upgrade() else { return };
        let Ok(mut control) = shared.control.lock() else { return };
        if let Some(sig) = got {
            control.signal(&sig);
            // What else is queued, under the same lock (at most a batch).
            for sig in rx.try_iter().take(256) {
                control.signal(&sig);
            }
        }
        let now = std::time::Instant::now();
        if now.duration_since(last_tick) >= TICK {
            last_tick = now;
            control.web_tick();
        }
    }
}

/// The reservation thread of kept calls: every 100 ms asks the workers
/// where their contexts stand (without holding the call table while they
/// answer), then raises the reservations running out.
fn keep_loop(shared: std::sync::Weak<Shared>) {
    const EVERY: Duration = Duration::from_millis(100);
    loop {
        std::thread::sleep(EVERY);
        let Some(shared) = shared.upgrade() else { return };
        let Some(states) = worker_states(&shared) else { return };
        if let Ok(mut c) = shared.control.lock() {
            c.keep_states(states, false);
        } else {
            return;
        };
    }
}

/// Where every worker's contexts stand (kept calls only), asked without
/// holding the call table while the workers answer; `None` when the table
/// is poisoned.
fn worker_states(shared: &Shared) -> Option<Vec<crate::relay::worker::LegState>> {
    let replies = shared.control.lock().ok()?.plane.ask_states();
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut states = Vec::new();
    for r in replies {
        if let Ok(s) = r.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            states.extend(s);
        }
    }
    Some(states)
}

/// The state the NG and HTTP tasks share.
pub struct Shared {
    /// The call table and the workers it commands (locked by signalling and
    /// metrics only, never by media).
    pub control: Mutex<Control>,
    /// The engine's name.
    pub engine: &'static str,
    /// The I/O backend's name.
    pub io: &'static str,
    /// The XDP program (`xdp` backend): its counters go to `/metrics`.
    pub xdp: Option<Arc<crate::relay::io::xdp::Program>>,
    /// NG datagrams that were not requests (no cookie, bad bencode, …).
    pub ng_malformed: AtomicU64,
    /// Requests answered from the retransmission cache.
    pub ng_retransmits: AtomicU64,
    /// Replies that did not fit a datagram as built: warnings left out, or
    /// an error reply sent instead.
    pub ng_replies_trimmed: AtomicU64,
    /// Bytes and entries of the retransmission cache (written by the NG task).
    pub ng_cache_bytes: AtomicU64,
    /// Entries of the retransmission cache.
    pub ng_cache_entries: AtomicU64,
    /// HTTP connection counters.
    pub http: http::HttpStats,
    /// The management page, when configured.
    pub ui: Option<ui::Ui>,
    /// The Homer sender's counters (`--homer`).
    pub homer: Arc<quality::HomerStats>,
}

impl Shared {
    /// The shared state over a call table.
    pub fn new(
        control: Control,
        engine: &'static str,
        io: &'static str,
        xdp: Option<Arc<crate::relay::io::xdp::Program>>,
    ) -> Shared {
        Shared {
            control: Mutex::new(control),
            engine,
            io,
            xdp,
            ng_malformed: AtomicU64::new(0),
            ng_retransmits: AtomicU64::new(0),
            ng_replies_trimmed: AtomicU64::new(0),
            ng_cache_bytes: AtomicU64::new(0),
            ng_cache_entries: AtomicU64::new(0),
            http: http::HttpStats::default(),
            ui: None,
            homer: Arc::default(),
        }
    }
}

fn serve<E>(cfg: Arc<Config>, engine: E, log: Option<ui::LogControl>, started: Instant) -> Result<(), String>
where
    E: Engine + Clone + 'static,
    E::Keys: 'static,
{
    // The CPU engine gains nothing from large batches and every packet of a
    // batch waits for the others; the GPU engine needs them.
    let batch = match cfg.batch {
        0 if engine.name().starts_with("gpu") => 1024,
        0 => 32,
        n => n,
    };
    let media_addrs: Vec<std::net::IpAddr> =
        cfg.interfaces.iter().flat_map(|i| i.addrs.iter().map(|a| a.local)).collect();
    let (io, passed_over) = crate::relay::io::resolve(&cfg.io, &media_addrs, cfg.workers, cfg.buffers, &cfg.mem_dir)?;
    for why in passed_over {
        tracing::info!("io auto: {why}");
    }
    let kind = io.kind;
    let xdp = io.xdp.clone();
    let pin = if cfg.pin_workers { crate::relay::sys::allowed_cpus() } else { Vec::new() };
    if cfg.pin_workers && pin.is_empty() {
        tracing::warn!("pin-workers: the process's CPU set cannot be read; the workers are not pinned");
    }
    // STUN and DTLS datagrams of ICE/DTLS legs, from the workers to the
    // WebRTC thread (bounded: a flood of them is dropped and counted).
    let (signal_tx, signal_rx) = crossbeam_channel::bounded(SIGNAL_QUEUE);
    // Recorded calls' packets, from each worker through its own queue.
    let (tap_tx, tap_rx): (Vec<_>, Vec<_>) = match &cfg.recording {
        Some(_) => (0..cfg.workers).map(|_| crossbeam_channel::bounded(recorder::TAP_QUEUE)).unzip(),
        None => (Vec::new(), Vec::new()),
    };
    // Digits the endpoints send, from the workers to the DTMF log.
    let (dtmf_tx, dtmf_rx) = match cfg.dtmf_log_dest {
        Some(_) => {
            let (tx, rx) = crossbeam_channel::bounded(DTMF_QUEUE);
            (Some(tx), Some(rx))
        }
        None => (None, None),
    };
    // Authenticated RTCP, from the workers to the call quality reader.
    let (rtcp_tx, rtcp_rx) = match cfg.quality {
        Some(_) => {
            let (tx, rx) = crossbeam_channel::bounded(quality::RTCP_QUEUE);
            (Some(tx), Some(rx))
        }
        None => (None, None),
    };
    let wcfg = crate::relay::WorkerConfig {
        buffers: cfg.buffers,
        batch,
        busy_poll: cfg.busy_poll,
        stale_ns: cfg.stale_after.map_or(0, |d| d.as_nanos() as u64),
        io,
        pin,
        signal: Some(signal_tx),
        recorder: tap_tx,
        dtmf: dtmf_tx,
        quality: rtcp_tx,
    };
    let workers = crate::relay::spawn_workers(&engine, cfg.workers, wcfg)
        .map_err(|e| format!("cannot start media workers ({} I/O): {e}", kind.name()))?;
    tracing::info!("media workers use {} I/O", kind.name());
    let name = engine.name();
    let mut control = Control::new(&cfg, relay(&cfg, engine, workers)?)?;
    control.recorder = cfg
        .recording
        .as_ref()
        .map(|r| recorder::Recorder::start(r, tap_rx, control.table.codecs().clone(), control.plane.files_elsewhere()))
        .transpose()?;
    if let Some(r) = &cfg.redis {
        let (store, loaded) = redis_store::Store::open(r)?;
        let kept = loaded.len();
        let (ok, failed) = control.keep_in(store, loaded);
        tracing::info!(
            "calls kept in Redis at {} (namespace {}): {kept} found, {ok} resumed, {failed} not",
            redis_store::redacted(&r.url),
            r.namespace
        );
    }
    let keeping = control.table.keeping();
    let mut shared = Shared::new(control, name, kind.name(), xdp);
    shared.ui = cfg.ui.clone().map(|u| ui::Ui::new(u, log, &cfg.log_level));
    let shared = Arc::new(shared);
    start_threads(&shared, signal_rx, keeping)?;
    if let Some(rx) = rtcp_rx {
        quality::start(&shared, rx, cfg.homer)?;
    }
    if let (Some(rx), Some(dest)) = (dtmf_rx, cfg.dtmf_log_dest) {
        let socket = std::net::UdpSocket::bind(if dest.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" })
            .map_err(|e| format!("dtmf-log-dest {dest}: {e}"))?;
        let weak = Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("dtmf-log".into())
            .spawn(move || dtmf_log_loop(weak, rx, socket, dest))
            .map_err(|e| format!("cannot start the DTMF log thread: {e}"))?;
        tracing::info!("DTMF digits reported to udp {dest}");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("control")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the control runtime: {e}"))?;
    let result = rt.block_on(async {
        let ng = UdpSocket::bind(cfg.listen_ng).await.map_err(|e| format!("listen-ng {}: {e}", cfg.listen_ng))?;
        tracing::info!(
            "srtpgate serve: NG on udp {}, media on {} ports {}-{}, {} workers, engine {}",
            cfg.listen_ng,
            describe_interfaces(&cfg.interfaces),
            cfg.port_min,
            cfg.port_max,
            cfg.workers,
            name
        );
        let mut http_files = 0;
        if let Some(addr) = cfg.listen_http {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("listen-http {addr}: {e}"))?;
            tracing::info!(
                "HTTP (/metrics, /health) on {addr}, at most {} connections, {} s header and idle timeout",
                cfg.http_max_connections,
                cfg.http_timeout.as_secs()
            );
            tokio::spawn(http::serve(listener, shared.clone(), cfg.http_max_connections, cfg.http_timeout));
            if shared.ui.is_some() {
                tracing::info!("management page on http://{addr}/ui/");
                tokio::spawn(ui::sampler(shared.clone()));
            }
            // The page's WebSockets leave the HTTP cap (they are upgraded).
            http_files = cfg.http_max_connections + cfg.ui.as_ref().map_or(0, |u| u.max_clients);
        }
        set_fd_budget(&shared, http_files);
        // From here NG requests are answered and /health says ok.
        tracing::info!("ready in {:.2} s", started.elapsed().as_secs_f64());
        let timer = shared.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                if let Ok(mut c) = timer.control.lock() {
                    c.expire();
                }
            }
        });
        tokio::select! {
            r = ng_loop(ng, shared.clone(), cfg.limits.clone()) => r,
            _ = shutdown_signal() => {
                tracing::info!("signal received, stopping");
                Ok(())
            }
        }
    });
    stop(shared, rt);
    tracing::info!("stopped");
    result
}

/// Digits queued between the workers and the DTMF log thread.
const DTMF_QUEUE: usize = 4096;

/// The DTMF log thread: each digit the workers report becomes one JSON
/// datagram to `dest` (rtpengine's `dtmf-log-dest`). Takes the call
/// table's lock per digit, only to read the call's names. Ends when the
/// relay stops.
fn dtmf_log_loop(
    shared: std::sync::Weak<Shared>,
    rx: crossbeam_channel::Receiver<crate::relay::worker::SentDigit>,
    socket: std::net::UdpSocket,
    dest: std::net::SocketAddr,
) {
    for e in rx.iter() {
        let Some(shared) = shared.upgrade() else { return };
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let record = match shared.control.lock() {
            Ok(c) => c.table.dtmf_record(&e, unix),
            Err(_) => return,
        };
        let Some(record) = record else { continue };
        if let Err(err) = socket.send_to(record.as_bytes(), dest) {
            tracing::debug!("dtmf-log-dest {dest}: {err}");
        }
    }
}

/// The WebRTC thread and, when calls are kept, the reservation thread.
fn start_threads(
    shared: &Arc<Shared>,
    signal_rx: crossbeam_channel::Receiver<crate::relay::worker::Signal>,
    keeping: bool,
) -> Result<(), String> {
    let weak = Arc::downgrade(shared);
    std::thread::Builder::new()
        .name("webrtc".into())
        .spawn(move || webrtc_loop(weak, signal_rx))
        .map_err(|e| format!("cannot start the WebRTC thread: {e}"))?;
    if keeping {
        let weak = Arc::downgrade(shared);
        std::thread::Builder::new()
            .name("keep".into())
            .spawn(move || keep_loop(weak))
            .map_err(|e| format!("cannot start the Redis reservation thread: {e}"))?;
    }
    Ok(())
}

/// A clean stop: writes where every kept stream stands, then ends every
/// call and stops the workers.
fn stop(shared: Arc<Shared>, rt: tokio::runtime::Runtime) {
    // A clean stop writes where every kept stream stands, the receiving
    // ones included (they are otherwise written every few seconds), so that
    // the next start resumes them exactly.
    if shared.control.lock().is_ok_and(|c| c.table.keeping()) {
        let states = worker_states(&shared).unwrap_or_default();
        if let Ok(mut c) = shared.control.lock() {
            c.keep_states(states, true);
            c.release_lease();
            if !c.written(Duration::from_secs(2)) {
                tracing::warn!("redis: the streams' last state was not written within 2 s");
            }
        }
    }
    // Stop the media: end every call (their recordings completed), then
    // stop the workers.
    if let Ok(mut c) = shared.control.lock() {
        c.clear();
        drop(c.recorder.take());
    }
    drop(rt);
    if let Ok(shared) = Arc::try_unwrap(shared) {
        if let Ok(control) = shared.control.into_inner() {
            drop(control);
        }
    }
}

/// The workers behind the call table, over the configured port range.
fn relay<E>(
    cfg: &Config,
    engine: E,
    workers: Vec<crate::relay::WorkerHandle<E>>,
) -> Result<Box<dyn plane::Plane>, String>
where
    E: Engine + Clone + 'static,
    E::Keys: 'static,
{
    // Each interface its own range (its own, or the relay's): a port
    // number may serve two interfaces, whose sockets bind different
    // addresses.
    let mut ranges = Vec::new();
    for i in cfg.interfaces.iter() {
        let (min, max) = i.ports.unwrap_or((cfg.port_min, cfg.port_max));
        let mut ports =
            crate::relay::ports::Ports::new(min, max).map_err(|e| format!("interface '{}': {e}", i.name))?;
        ports.socket_buffer = cfg.socket_buffer;
        ranges.push(ports);
    }
    let mut relay = plane::Relay::new(engine, workers, crate::relay::ports::PortSet::new(ranges));
    relay.prompts = prompts::Prompts::new(cfg.media_dir.as_deref())?;
    Ok(Box::new(relay))
}

/// The interfaces as the start-up line names them:
/// `priv 10.0.0.5, pub 10.0.1.5 (advertised 203.0.113.5)`.
fn describe_interfaces(all: &srtpgate_calls::interface::Interfaces) -> String {
    let mut out = Vec::new();
    for i in all.iter() {
        for a in &i.addrs {
            let nat = if a.advertised != a.local { format!(" (advertised {})", a.advertised) } else { String::new() };
            let range = i.ports.map_or(String::new(), |(min, max)| format!(" ports {min}-{max}"));
            out.push(format!("{} {}{nat}{range}", i.name, a.local));
        }
    }
    out.join(", ")
}

/// Sets aside for media sockets what the open-file limit leaves beside the
/// files open now (listeners, workers, the engine), the HTTP connections
/// and some slack, so that neither side can take the files the other needs.
fn set_fd_budget(shared: &Shared, http_files: usize) {
    let limit = crate::relay::sys::nofile_limit().0;
    let open = crate::relay::sys::open_files().unwrap_or(32);
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let budget = limit.saturating_sub(open + http_files + FD_SLACK);
    if let Ok(mut control) = shared.control.lock() {
        control.plane.set_fd_budget(budget);
        let (_, pairs) = control.plane.ports();
        let streams = budget / 4;
        if streams < pairs / 2 {
            tracing::warn!(
                "the open-file limit ({limit}) leaves {budget} files for media: {streams} relayed streams, \
                 fewer than the port range's {}; raise LimitNOFILE / ulimit -n",
                pairs / 2
            );
        } else {
            tracing::info!("{budget} files set aside for media sockets ({streams} relayed streams)");
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
        // Without signal handlers, run until killed.
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

async fn ng_loop(sock: UdpSocket, shared: Arc<Shared>, limits: config::Limits) -> Result<(), String> {
    // Requests carry SDES keys: the buffer is wiped after each one and when
    // the loop ends.
    let mut buf = Zeroizing::new(vec![0u8; srtpgate_ng::MAX_DATAGRAM + 1]);
    let mut cache = ReplyCache::new(limits.ng_cache_bytes, limits.ng_cache_ttl);
    loop {
        let (n, from) = match sock.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("NG receive: {e}");
                continue;
            }
        };
        let reply = handle_datagram(&buf[..n], from, &shared, &mut cache, Instant::now());
        if let Some(b) = buf.get_mut(..n) {
            b.zeroize();
        }
        shared.ng_cache_bytes.store(cache.bytes() as u64, Relaxed);
        shared.ng_cache_entries.store(cache.len() as u64, Relaxed);
        if let Some(reply) = reply {
            if let Err(e) = sock.send_to(&reply, from).await {
                tracing::warn!("NG reply to {from}: {e}");
            }
        }
    }
}

/// One NG datagram from `from` in, its reply out. `None` only when the
/// datagram has no cookie to reply to (it is counted as malformed); every
/// reply fits in one datagram. The reply is zeroized when dropped: an
/// offer's or answer's carries SDES keys. (The request's parsed copies wipe
/// themselves: `Value` and `Request` zeroize on drop.)
pub fn handle_datagram(
    data: &[u8],
    from: SocketAddr,
    shared: &Shared,
    cache: &mut ReplyCache,
    now: Instant,
) -> Option<Zeroizing<Vec<u8>>> {
    let (cookie, body) = match srtpgate_ng::split(data) {
        Ok(x) => x,
        Err(e) => {
            shared.ng_malformed.fetch_add(1, Relaxed);
            tracing::info!("NG datagram without a usable cookie: {e}");
            return None;
        }
    };
    if let Some(reply) = cache.get(from, cookie, now) {
        shared.ng_retransmits.fetch_add(1, Relaxed);
        return Some(Zeroizing::new(reply.to_vec()));
    }
    let value = match srtpgate_ng::parse_request(body) {
        Ok(req) => {
            let Ok(mut control) = shared.control.lock() else {
                return Some(Zeroizing::new(srtpgate_ng::reply(cookie, &srtpgate_ng::error("internal error"))));
            };
            control.handle(&req)
        }
        Err(e) => {
            shared.ng_malformed.fetch_add(1, Relaxed);
            let reason = e.to_string();
            if let Ok(mut control) = shared.control.lock() {
                control.table.count_error(&reason);
            }
            tracing::info!("NG request refused: {reason}");
            srtpgate_ng::error(&reason)
        }
    };
    let (reply, trimmed) = fit_reply(cookie, value);
    if trimmed {
        shared.ng_replies_trimmed.fetch_add(1, Relaxed);
    }
    cache.insert(from, cookie, &reply, now);
    Some(reply)
}

/// The reply datagram, made to fit: as built when it does; else without
/// its warnings; else an error reply saying why. The flag says whether it
/// was changed. Every buffer is zeroized when dropped (`reply` sizes each
/// one up front, so none grows and leaves a copy behind).
pub fn fit_reply(cookie: &[u8], mut value: Value) -> (Zeroizing<Vec<u8>>, bool) {
    let max = srtpgate_ng::MAX_REPLY;
    let out = Zeroizing::new(srtpgate_ng::reply(cookie, &value));
    if out.len() <= max {
        return (out, false);
    }
    if value.remove("warning").is_some() {
        value.insert("warning", "warnings left out: the reply would not fit in one datagram");
        let out = Zeroizing::new(srtpgate_ng::reply(cookie, &value));
        if out.len() <= max {
            return (out, true);
        }
    }
    tracing::warn!("NG reply of {} bytes does not fit in a datagram; sending an error", out.len());
    let e = srtpgate_ng::error(&format!("reply of {} bytes does not fit in one datagram (at most {max})", out.len()));
    (Zeroizing::new(srtpgate_ng::reply(cookie, &e)), true)
}
