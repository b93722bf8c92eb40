//! `srtpgate serve`: the media relay daemon. NG control over UDP, media
//! workers, the HTTP endpoint for metrics, timeouts, and a clean stop on
//! SIGTERM/SIGINT.

pub mod calls;
pub mod config;
pub mod http;

use calls::Calls;
use config::{Config, EngineChoice, ServeArgs};
use srtp::{CpuEngine, Engine};
use srtp_cuda::{GpuConfig, GpuEngine};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

/// Replies kept for retransmitted requests (same cookie), as rtpengine does:
/// the modules resend on timeout, and an offer must not run twice.
const REPLY_CACHE: usize = 4096;
const REPLY_TTL: Duration = Duration::from_secs(30);

/// Runs the daemon until a signal; errors are configuration or start-up failures.
pub fn run(args: ServeArgs) -> Result<(), String> {
    let cfg = Config::resolve(&args)?;
    let filter = tracing_subscriber::EnvFilter::try_new(&cfg.log_level)
        .map_err(|e| format!("log-level {:?}: {e}", cfg.log_level))?;
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).try_init();
    raise_fd_limit();
    let cfg = Arc::new(cfg);
    match cfg.engine {
        EngineChoice::Cpu => serve(cfg.clone(), CpuEngine::new()),
        EngineChoice::Gpu | EngineChoice::Auto => {
            let mode = cfg.gpu_mode.parse().map_err(|e: String| e)?;
            // Small batches stay on the CPU: at low load the GPU's fixed
            // cost per batch would only add delay (the hybrid policy).
            let gcfg = GpuConfig { mode, cpu_below: 64, ..GpuConfig::default() };
            match GpuEngine::new(gcfg) {
                Ok(g) => {
                    tracing::info!("GPU engine: {:?}", g.info());
                    serve(cfg.clone(), Arc::new(g))
                }
                Err(e) if cfg.engine == EngineChoice::Auto => {
                    tracing::warn!("GPU engine unavailable ({e}); running on the CPU engine");
                    serve(cfg.clone(), CpuEngine::new())
                }
                Err(e) => Err(format!("GPU engine unavailable: {e} (use --engine cpu or auto)")),
            }
        }
    }
}

/// Each call leg holds two sockets: lift the soft limit on open files to the
/// hard limit (distributions start processes at 1024, which is 256 legs).
fn raise_fd_limit() {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            let want = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) != 0 {
                tracing::warn!("cannot raise the open-file limit above {}", lim.rlim_cur);
            }
        }
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            tracing::info!("open-file limit {} (each call leg takes 2)", lim.rlim_cur);
        }
    }
}

/// The state the NG and HTTP tasks share.
pub struct Shared<E: Engine> {
    /// The call table (locked by signalling and metrics only, never by media).
    pub calls: Mutex<Calls<E>>,
    /// The engine's name.
    pub engine: &'static str,
    /// NG datagrams that were not requests (no cookie, bad bencode, …).
    pub ng_malformed: std::sync::atomic::AtomicU64,
}

fn serve<E>(cfg: Arc<Config>, engine: E) -> Result<(), String>
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
    let workers = crate::relay::spawn_workers(&engine, cfg.workers, cfg.buffers, batch, cfg.busy_poll)
        .map_err(|e| format!("cannot start media workers: {e}"))?;
    let name = engine.name();
    let calls = Calls::new(cfg.clone(), engine, workers)?;
    let shared = Arc::new(Shared { calls: Mutex::new(calls), engine: name, ng_malformed: Default::default() });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("control")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the control runtime: {e}"))?;
    let result = rt.block_on(async {
        let ng = UdpSocket::bind(cfg.listen_ng).await.map_err(|e| format!("listen-ng {}: {e}", cfg.listen_ng))?;
        tracing::info!(
            "srtpgate serve: NG on udp {}, media on {:?} ports {}-{}, {} workers, engine {}",
            cfg.listen_ng,
            cfg.interfaces,
            cfg.port_min,
            cfg.port_max,
            cfg.workers,
            name
        );
        if let Some(addr) = cfg.listen_http {
            let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| format!("listen-http {addr}: {e}"))?;
            tracing::info!("HTTP (/metrics, /health) on {addr}");
            tokio::spawn(http::serve(listener, shared.clone()));
        }
        let timer = shared.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                if let Ok(mut c) = timer.calls.lock() {
                    c.expire();
                }
            }
        });
        tokio::select! {
            r = ng_loop(ng, shared.clone()) => r,
            _ = shutdown_signal() => {
                tracing::info!("signal received, stopping");
                Ok(())
            }
        }
    });
    // Stop the media: end every call, then stop the workers.
    if let Ok(mut c) = shared.calls.lock() {
        c.clear();
    }
    drop(rt);
    if let Ok(shared) = Arc::try_unwrap(shared) {
        if let Ok(calls) = shared.calls.into_inner() {
            drop(calls);
        }
    }
    tracing::info!("stopped");
    result
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

async fn ng_loop<E>(sock: UdpSocket, shared: Arc<Shared<E>>) -> Result<(), String>
where
    E: Engine + Clone + 'static,
    E::Keys: 'static,
{
    let mut buf = vec![0u8; srtpgate_ng::MAX_DATAGRAM + 1];
    let mut cache: HashMap<Vec<u8>, (Instant, Vec<u8>)> = HashMap::new();
    let mut order: VecDeque<Vec<u8>> = VecDeque::new();
    loop {
        let (n, from) = match sock.recv_from(&mut buf).await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("NG receive: {e}");
                continue;
            }
        };
        let reply = handle_datagram(&buf[..n], &shared, &mut cache, &mut order);
        if let Some(reply) = reply {
            if let Err(e) = sock.send_to(&reply, from).await {
                tracing::warn!("NG reply to {from}: {e}");
            }
        }
    }
}

/// One NG datagram in, its reply out (`None` when it has no cookie to reply to).
pub fn handle_datagram<E>(
    data: &[u8],
    shared: &Shared<E>,
    cache: &mut HashMap<Vec<u8>, (Instant, Vec<u8>)>,
    order: &mut VecDeque<Vec<u8>>,
) -> Option<Vec<u8>>
where
    E: Engine + Clone + 'static,
    E::Keys: 'static,
{
    use std::sync::atomic::Ordering::Relaxed;
    let (cookie, body) = match srtpgate_ng::split(data) {
        Ok(x) => x,
        Err(e) => {
            shared.ng_malformed.fetch_add(1, Relaxed);
            tracing::info!("NG datagram without a usable cookie: {e}");
            return None;
        }
    };
    if let Some((at, reply)) = cache.get(cookie) {
        if at.elapsed() < REPLY_TTL {
            return Some(reply.clone());
        }
    }
    let value = match srtpgate_ng::parse_request(body) {
        Ok(req) => {
            let Ok(mut calls) = shared.calls.lock() else {
                return Some(srtpgate_ng::reply(cookie, &srtpgate_ng::error("internal error")));
            };
            calls.handle(&req)
        }
        Err(e) => {
            shared.ng_malformed.fetch_add(1, Relaxed);
            let reason = e.to_string();
            if let Ok(mut calls) = shared.calls.lock() {
                calls.count_error(&reason);
            }
            tracing::info!("NG request refused: {reason}");
            srtpgate_ng::error(&reason)
        }
    };
    let reply = srtpgate_ng::reply(cookie, &value);
    if order.len() >= REPLY_CACHE {
        if let Some(old) = order.pop_front() {
            cache.remove(&old);
        }
    }
    if cache.insert(cookie.to_vec(), (Instant::now(), reply.clone())).is_none() {
        order.push_back(cookie.to_vec());
    }
    Some(reply)
}
