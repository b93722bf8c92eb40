//! The HTTP endpoint: Prometheus `/metrics` and `/health`.
//!
//! The exposition text is written here from the relay's own atomic counters
//! (the Prometheus client crates keep histograms behind locks or atomics of
//! their own, which the media path would have to update per packet).

use super::Shared;
use crate::relay::stats::{Drop, Histogram, LegSnapshot};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// A connection is closed (gracefully: a request in flight is finished)
/// after this many header timeouts in all, so that a client that stops
/// reading a response cannot hold it.
const LIFETIME_TIMEOUTS: u32 = 6;

/// The most a connection buffers of a request (hyper's default is 400 KB;
/// the routes take no body).
const MAX_BUF: usize = 16 * 1024;

/// What the HTTP listener has done.
#[derive(Default, Debug)]
pub struct HttpStats {
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections served and closed by the client or after their request.
    pub served: AtomicU64,
    /// Connections refused at the cap.
    pub refused: AtomicU64,
    /// Connections closed for a header or idle timeout, or at their lifetime.
    pub timed_out: AtomicU64,
}

/// Takes one from the open-connection gauge when dropped.
struct OpenGuard<'a>(&'a AtomicU64);

impl std::ops::Drop for OpenGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// Serves until the runtime stops: at most `max_connections` at once (the
/// next ones get a 503 and are closed at once, so HTTP holds at most that
/// many files); a client has `timeout` to send each request's header, which
/// also closes idle keep-alive connections.
pub async fn serve(listener: tokio::net::TcpListener, shared: Arc<Shared>, max_connections: usize, timeout: Duration) {
    let mut app = Router::new().route("/metrics", get(metrics)).route("/health", get(health));
    if shared.ui.is_some() {
        app = app.merge(super::ui::routes());
    }
    let app = app.with_state(shared.clone());
    let permits = Arc::new(tokio::sync::Semaphore::new(max_connections));
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // EMFILE and the like: wait rather than spin.
                tracing::warn!("HTTP accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            shared.http.refused.fetch_add(1, Relaxed);
            let body = "too many HTTP connections\n";
            let msg = format!(
                "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            // Best effort and without waiting: the socket's buffer takes it.
            let _ = stream.try_write(msg.as_bytes());
            continue;
        };
        shared.http.open.fetch_add(1, Relaxed);
        let svc = TowerToHyperService::new(app.clone());
        let stats = shared.clone();
        tokio::spawn(async move {
            // Counts the connection closed however the task ends.
            let _open = OpenGuard(&stats.http.open);
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(timeout).max_buf_size(MAX_BUF);
            // With upgrades: the management page's WebSocket leaves this
            // connection's limits (the page has its own cap and rate limit).
            let conn = builder.serve_connection(TokioIo::new(stream), svc).with_upgrades();
            tokio::pin!(conn);
            let lifetime = tokio::time::sleep(timeout * LIFETIME_TIMEOUTS);
            tokio::pin!(lifetime);
            let timed_out = tokio::select! {
                r = conn.as_mut() => r.is_err_and(|e| e.is_timeout()),
                _ = &mut lifetime => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(timeout, conn).await;
                    true
                }
            };
            let outcome = if timed_out { &stats.http.timed_out } else { &stats.http.served };
            outcome.fetch_add(1, Relaxed);
            drop(permit);
        });
    }
}

/// 200 while every media worker runs, 503 otherwise.
async fn health(State(shared): State<Arc<Shared>>) -> (axum::http::StatusCode, &'static str) {
    let (ok, draining) = shared
        .control
        .lock()
        .map(|c| (c.plane.workers().iter().all(|w| w.1), c.table.draining()))
        .unwrap_or((false, false));
    match (ok, draining) {
        (true, false) => (axum::http::StatusCode::OK, "ok\n"),
        (true, true) => (axum::http::StatusCode::SERVICE_UNAVAILABLE, "draining\n"),
        (false, _) => (axum::http::StatusCode::SERVICE_UNAVAILABLE, "a media worker has stopped\n"),
    }
}

async fn metrics(State(shared): State<Arc<Shared>>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], render(&shared))
}

/// What the metrics page reads under the control lock.
struct Snapshot {
    media: LegSnapshot,
    stats: Vec<Arc<crate::relay::stats::WorkerStats>>,
    ports_used: usize,
    ports_all: usize,
    t: srtpgate_calls::Totals,
    wt: srtpgate_calls::web_leg::WebTotals,
    keep: Option<(u64, u64, u64, bool)>,
    sessions: usize,
    without_media: usize,
    running: usize,
    uptime: f64,
    engine_stats: Option<srtp::EngineStats>,
    recorder: Option<Arc<super::recorder::RecorderStats>>,
    transcoded: usize,
    quality: bool,
}

/// The metrics page.
pub fn render(shared: &Shared) -> String {
    let mut o = String::with_capacity(8192);
    let Ok(control) = shared.control.lock() else { return "# call table unavailable\n".into() };
    let workers = control.plane.workers();
    let (ports_used, ports_all) = control.plane.ports();
    let snap = Snapshot {
        media: control.plane.media_totals().0,
        stats: workers.iter().map(|w| w.0.clone()).collect(),
        ports_used,
        ports_all,
        t: control.table.totals.clone(),
        wt: control.table.web_totals.clone(),
        keep: control.keep_counters(),
        sessions: control.table.len(),
        without_media: control.table.without_media(),
        running: workers.iter().filter(|w| w.1).count(),
        uptime: control.table.started.elapsed().as_secs_f64(),
        engine_stats: control.plane.engine_stats(),
        recorder: control.recorder.as_ref().map(|r| r.stats.clone()),
        transcoded: control.table.transcoded_media(),
        quality: control.table.settings().quality.is_some(),
    };
    drop(control);
    signalling(&mut o, shared, &snap);
    calls_and_store(&mut o, shared, &snap);
    http_and_page(&mut o, shared);
    media(&mut o, &snap);
    worker_counters(&mut o, shared, &snap);
    recording(&mut o, &snap);
    media_control(&mut o, &snap);
    call_quality(&mut o, shared, &snap);
    worker_pipeline(&mut o, &snap);
    delay_and_engine(&mut o, &snap);
    o
}

/// One metric: its help and type lines, then a line per label set.
fn metric(o: &mut String, name: &str, kind: &str, help: &str, lines: &[(String, f64)]) {
    let _ = writeln!(o, "# HELP srtpgate_{name} {help}\n# TYPE srtpgate_{name} {kind}");
    for (labels, v) in lines {
        let _ = writeln!(o, "srtpgate_{name}{labels} {v}");
    }
}

/// A metric without labels.
fn one(v: f64) -> Vec<(String, f64)> {
    vec![(String::new(), v)]
}

/// The process, the call table and the signalling: NG, calls, Redis, WebRTC legs, limits.
fn signalling(o: &mut String, shared: &Shared, snap: &Snapshot) {
    let ports_used = snap.ports_used;
    let ports_all = snap.ports_all;
    let t = &snap.t;
    let sessions = snap.sessions;
    let running = snap.running;
    let uptime = snap.uptime;
    metric(o, "uptime_seconds", "gauge", "Seconds since start.", &one(uptime));
    metric(
        o,
        "info",
        "gauge",
        "Build and engine.",
        &[(
            format!("{{version=\"{}\",engine=\"{}\",io=\"{}\"}}", env!("CARGO_PKG_VERSION"), shared.engine, shared.io),
            1.0,
        )],
    );
    metric(o, "sessions", "gauge", "Calls now.", &one(sessions as f64));
    metric(o, "workers_running", "gauge", "Media worker threads running.", &one(running as f64));
    metric(o, "port_pairs_in_use", "gauge", "Media port pairs in use.", &one(ports_used as f64));
    metric(o, "port_pairs", "gauge", "Media port pairs in the range.", &one(ports_all as f64));
    let mut cmds: Vec<_> = t.commands.iter().map(|(k, v)| (format!("{{command=\"{k}\"}}"), *v as f64)).collect();
    cmds.sort_by(|a, b| a.0.cmp(&b.0));
    metric(o, "ng_requests_total", "counter", "NG requests by command.", &cmds);
    let mut errs: Vec<_> = t
        .errors
        .iter()
        .map(|(k, v)| (format!("{{reason=\"{}\"}}", k.replace(['"', '\\', '\n'], "_")), *v as f64))
        .collect();
    errs.sort_by(|a, b| a.0.cmp(&b.0));
    metric(o, "ng_errors_total", "counter", "NG requests refused, by reason.", &errs);
    metric(
        o,
        "ng_malformed_total",
        "counter",
        "NG datagrams that were not valid requests.",
        &one(shared.ng_malformed.load(Relaxed) as f64),
    );
    metric(
        o,
        "ng_codec_options_ignored_total",
        "counter",
        "Codec options of offers ignored as malformed (named in the reply's warning).",
        &one(t.codec_options_ignored as f64),
    );
    let keys: Vec<_> = t.keys_ignored.iter().map(|(k, v)| (format!("{{key=\"{k}\"}}"), *v as f64)).collect();
    metric(
        o,
        "ng_keys_ignored_total",
        "counter",
        "NG requests answered with a key accepted but not acted on (named in the reply's warning), by key.",
        &keys,
    );
    let limited: Vec<_> = srtpgate_calls::LoadLimit::ALL
        .iter()
        .map(|k| (format!("{{limit=\"{}\"}}", k.name()), t.load_limited.get(k).copied().unwrap_or(0) as f64))
        .collect();
    metric(
        o,
        "ng_load_limited_total",
        "counter",
        "New calls refused for the relay's load (answered as rtpengine's load limit), by limit.",
        &limited,
    );
    metric(
        o,
        "calls_ended_total",
        "counter",
        "Calls ended, by cause.",
        &[
            ("{cause=\"delete\"}".into(), t.calls_deleted as f64),
            ("{cause=\"timeout\"}".into(), t.calls_timed_out as f64),
            ("{cause=\"final_timeout\"}".into(), t.calls_final_timeout as f64),
            ("{cause=\"operator\"}".into(), t.calls_ended_by_operator as f64),
        ],
    );
    metric(
        o,
        "calls_created_total",
        "counter",
        "Calls created (refused offers create none).",
        &one(t.calls_created as f64),
    );
    metric(
        o,
        "calls_resumed_total",
        "counter",
        "Calls kept in Redis resumed at start, by result.",
        &[
            ("{result=\"ok\"}".into(), t.calls_resumed as f64),
            ("{result=\"failed\"}".into(), t.calls_not_resumed as f64),
        ],
    );
}

/// Calls by outcome, Redis, the WebRTC legs, the bounds.
fn calls_and_store(o: &mut String, shared: &Shared, snap: &Snapshot) {
    let t = &snap.t;
    let wt = &snap.wt;
    let keep = snap.keep;
    let without_media = snap.without_media;
    if let Some((errors, batches, pending, fenced)) = keep {
        metric(o, "redis_errors_total", "counter", "Failed Redis writes (each retried).", &one(errors as f64));
        metric(o, "redis_batches_total", "counter", "Batches of writes in Redis.", &one(batches as f64));
        metric(o, "redis_pending_writes", "gauge", "Writes waiting for Redis.", &one(pending as f64));
        metric(
            o,
            "redis_lease_held",
            "gauge",
            "1 while this relay holds its namespace's lease; 0 once another took it over (fenced: no writes, \
             no new calls, media stops at the end of its reservations).",
            &one(if fenced { 0.0 } else { 1.0 }),
        );
    }
    metric(
        o,
        "calls_moved_total",
        "counter",
        "Calls moved to a transcoding worker when their answer turned transcoding on.",
        &one(t.calls_moved as f64),
    );
    metric(
        o,
        "stun_checks_total",
        "counter",
        "ICE connectivity checks (STUN Binding requests) on ICE legs, by result.",
        &[
            ("{result=\"answered\"}".into(), wt.stun_checks as f64),
            ("{result=\"refused\"}".into(), wt.stun_refused as f64),
        ],
    );
    metric(
        o,
        "dtls_handshakes_total",
        "counter",
        "DTLS-SRTP handshakes of DTLS legs, by outcome (fingerprint_mismatch is also in failed).",
        &[
            ("{outcome=\"started\"}".into(), wt.dtls_started as f64),
            ("{outcome=\"completed\"}".into(), wt.dtls_completed as f64),
            ("{outcome=\"failed\"}".into(), wt.dtls_failed as f64),
            ("{outcome=\"fingerprint_mismatch\"}".into(), wt.fingerprint_mismatch as f64),
        ],
    );
    metric(
        o,
        "webrtc_datagrams_ignored_total",
        "counter",
        "Datagrams on ICE/DTLS legs that were neither a check nor DTLS of a leg that runs it.",
        &one(wt.signals_ignored as f64),
    );
    metric(o, "sessions_without_media", "gauge", "Calls that hold no media port.", &one(without_media as f64));
    metric(
        o,
        "ng_retransmits_total",
        "counter",
        "NG requests answered from the retransmission cache.",
        &one(shared.ng_retransmits.load(Relaxed) as f64),
    );
    metric(
        o,
        "ng_replies_trimmed_total",
        "counter",
        "NG replies that did not fit a datagram as built (warnings left out, or an error sent instead).",
        &one(shared.ng_replies_trimmed.load(Relaxed) as f64),
    );
    metric(
        o,
        "ng_cache_bytes",
        "gauge",
        "Bytes of the NG retransmission cache.",
        &one(shared.ng_cache_bytes.load(Relaxed) as f64),
    );
    metric(
        o,
        "ng_cache_entries",
        "gauge",
        "Replies in the NG retransmission cache.",
        &one(shared.ng_cache_entries.load(Relaxed) as f64),
    );
}

/// HTTP connections and the management page.
fn http_and_page(o: &mut String, shared: &Shared) {
    let h = &shared.http;
    metric(o, "http_connections", "gauge", "HTTP connections open.", &one(h.open.load(Relaxed) as f64));
    if let Some(u) = &shared.ui {
        metric(o, "ui_clients", "gauge", "Management pages connected.", &one(u.clients.load(Relaxed) as f64));
        metric(
            o,
            "ui_login_failures_total",
            "counter",
            "Management page logins refused.",
            &one(u.login_failures.load(Relaxed) as f64),
        );
        metric(
            o,
            "ui_messages_refused_total",
            "counter",
            "Management page messages refused (malformed, unknown, not allowed or failed).",
            &one(u.messages_refused.load(Relaxed) as f64),
        );
        metric(
            o,
            "ui_actions_total",
            "counter",
            "Actions done from the management page.",
            &one(u.actions.load(Relaxed) as f64),
        );
    }
    metric(
        o,
        "http_connections_total",
        "counter",
        "HTTP connections closed, by outcome (served, refused at the cap, timed out).",
        &[
            ("{outcome=\"served\"}".into(), h.served.load(Relaxed) as f64),
            ("{outcome=\"refused\"}".into(), h.refused.load(Relaxed) as f64),
            ("{outcome=\"timed_out\"}".into(), h.timed_out.load(Relaxed) as f64),
        ],
    );
    metric(
        o,
        "open_files",
        "gauge",
        "Files the process has open.",
        &one(crate::relay::sys::open_files().unwrap_or(0) as f64),
    );
    metric(
        o,
        "open_files_limit",
        "gauge",
        "The open-file limit (RLIMIT_NOFILE).",
        &one(crate::relay::sys::nofile_limit().0 as f64),
    );
}

/// Media packets, drops, and the workers' counters.
fn media(o: &mut String, snap: &Snapshot) {
    let media = &snap.media;
    metric(
        o,
        "packets_received_total",
        "counter",
        "Media packets received from endpoints.",
        &one(media.packets_in as f64),
    );
    metric(o, "bytes_received_total", "counter", "Media bytes received from endpoints.", &one(media.bytes_in as f64));
    metric(o, "packets_sent_total", "counter", "Media packets sent to endpoints.", &one(media.packets_out as f64));
    metric(o, "bytes_sent_total", "counter", "Media bytes sent to endpoints.", &one(media.bytes_out as f64));
    let drops: Vec<_> =
        Drop::ALL.iter().map(|d| (format!("{{reason=\"{}\"}}", d.name()), media.drops[*d as usize] as f64)).collect();
    metric(o, "packets_dropped_total", "counter", "Media packets dropped, by reason.", &drops);
}

/// The workers' counters: system calls, transcoding, batches, pools, strays, signals.
fn worker_counters(o: &mut String, shared: &Shared, snap: &Snapshot) {
    let stats = &snap.stats;
    let per_worker = |f: &dyn Fn(&crate::relay::stats::WorkerStats) -> u64| -> Vec<(String, f64)> {
        stats.iter().enumerate().map(|(i, w)| (format!("{{worker=\"{i}\"}}"), f(w) as f64)).collect()
    };
    let stages: Vec<(String, f64)> = stats
        .iter()
        .enumerate()
        .flat_map(|(i, w)| {
            crate::relay::stats::Stage::ALL.iter().map(move |st| {
                (
                    format!("{{worker=\"{i}\",stage=\"{}\"}}", st.name()),
                    w.stage_ns[*st as usize].load(Relaxed) as f64 / 1e9,
                )
            })
        })
        .collect();
    metric(
        o,
        "worker_stage_seconds_total",
        "counter",
        "Time each worker spent in each stage of its rounds with packets (io, receive, unprotect, transcode, crypto, protect, send, release).",
        &stages,
    );
    metric(
        o,
        "worker_recv_calls_total",
        "counter",
        "Receive calls per worker (recvmmsg; none with io_uring or on the AF_XDP path).",
        &per_worker(&|w| w.recv_calls.load(Relaxed)),
    );
    metric(
        o,
        "worker_send_calls_total",
        "counter",
        "Send batches per worker (sendmmsg calls; queued batches with io_uring).",
        &per_worker(&|w| w.send_calls.load(Relaxed)),
    );
    metric(
        o,
        "worker_syscalls_total",
        "counter",
        "System calls of the I/O backend per worker (waits, receives, sends, submits).",
        &per_worker(&|w| w.syscalls.load(Relaxed)),
    );
    if let Some(x) = &shared.xdp {
        let drops: Vec<_> = crate::relay::stats::XDP_SOCKET_DROPS
            .iter()
            .enumerate()
            .map(|(i, why)| {
                (
                    format!("{{reason=\"{why}\"}}"),
                    stats.iter().map(|w| w.xdp_socket_drops[i].load(Relaxed)).sum::<u64>() as f64,
                )
            })
            .collect();
        metric(
            o,
            "xdp_socket_drops_total",
            "counter",
            "The kernel's drop counters of the AF_XDP sockets, summed over workers (sampled once a second).",
            &drops,
        );
        metric(
        o,
            "xdp_next_hops_evicted_total",
            "counter",
            "Next hops (destination -> MAC) the AF_XDP backend's bounded cache evicted to make room, summed over workers.",
            &one(stats.iter().map(|w| w.xdp_hops_evicted.load(Relaxed)).sum::<u64>() as f64),
        );
        if let Ok([redirected, source, queue]) = x.counters() {
            metric(
                o,
                "xdp_frames_total",
                "counter",
                "Frames the XDP program saw for a leg: redirected to an AF_XDP socket, or passed to the kernel \
                 (source: not from the latched peer or not latched; queue: the owning worker has no socket on the queue it arrived on).",
                &[
                    ("{verdict=\"redirected\"}".to_string(), redirected as f64),
                    ("{verdict=\"passed_source\"}".to_string(), source as f64),
                    ("{verdict=\"passed_queue\"}".to_string(), queue as f64),
                ],
            );
        }
    }
}

/// The workers' transcoding, batch, pool, stray and signal counters.
fn worker_pipeline(o: &mut String, snap: &Snapshot) {
    let stats = &snap.stats;
    let per_worker = |f: &dyn Fn(&crate::relay::stats::WorkerStats) -> u64| -> Vec<(String, f64)> {
        stats.iter().enumerate().map(|(i, w)| (format!("{{worker=\"{i}\"}}"), f(w) as f64)).collect()
    };
    let transcode: Vec<_> = crate::relay::stats::TRANSCODE_COUNTERS
        .iter()
        .enumerate()
        .map(|(i, what)| {
            (format!("{{what=\"{what}\"}}"), stats.iter().map(|w| w.transcode[i].load(Relaxed)).sum::<u64>() as f64)
        })
        .collect();
    metric(
        o,
        "transcode_total",
        "counter",
        "Transcoding, summed over workers: packets decoded and encoded, samples inserted for lost packets, \
         streams whose codec failed (their transcoding ended), of the inserted samples those decoded from \
         in-band FEC, frames the encoder left untransmitted (DTX), in-band DTMF tones detected (sent as \
         RFC 4733 events), RFC 4733 events played as tones, packets dropped as too late, and packets put \
         back in order by a reorder window.",
        &transcode,
    );
    metric(
        o,
        "worker_send_failed_total",
        "counter",
        "Sends the kernel refused after taking them, per worker.",
        &per_worker(&|w| w.send_failed.load(Relaxed)),
    );
    metric(
        o,
        "worker_packets_received_total",
        "counter",
        "Packets received per worker.",
        &per_worker(&|w| w.total.packets_in.load(Relaxed)),
    );
    metric(
        o,
        "engine_batches_total",
        "counter",
        "Crypto batches per worker.",
        &per_worker(&|w| w.batches.load(Relaxed)),
    );
    metric(
        o,
        "engine_batch_packets_total",
        "counter",
        "Packets in crypto batches per worker.",
        &per_worker(&|w| w.batch_packets.load(Relaxed)),
    );
    metric(
        o,
        "engine_lane_batches_total",
        "counter",
        "Crypto batches the engine's lane (the GPU) held while the worker went on (asynchronous rounds).",
        &per_worker(&|w| w.lane_batches.load(Relaxed)),
    );
    metric(
        o,
        "engine_lane_waits_total",
        "counter",
        "Times a worker waited for its engine lane (as many rounds in flight as it holds, or a command).",
        &per_worker(&|w| w.lane_waits.load(Relaxed)),
    );
    metric(
        o,
        "engine_errors_total",
        "counter",
        "Crypto batches the engine's lane lost (a device error); their packets were dropped.",
        &per_worker(&|w| w.engine_errors.load(Relaxed)),
    );
    metric(o, "worker_legs", "gauge", "Call legs per worker.", &per_worker(&|w| w.legs.load(Relaxed)));
    metric(o, "pool_buffers", "gauge", "Packet buffers per worker.", &per_worker(&|w| w.pool_size.load(Relaxed)));
    metric(
        o,
        "pool_buffers_free",
        "gauge",
        "Free packet buffers per worker.",
        &per_worker(&|w| w.pool_free.load(Relaxed)),
    );
    metric(
        o,
        "stray_packets_total",
        "counter",
        "Packets for ports without a call.",
        &per_worker(&|w| w.stray.load(Relaxed)),
    );
    metric(
        o,
        "webrtc_signals_total",
        "counter",
        "STUN and DTLS datagrams of ICE/DTLS legs per worker, handed to the WebRTC thread (and its replies \
         sent), or dropped (queue full, or a send that failed).",
        &stats
            .iter()
            .enumerate()
            .flat_map(|(i, w)| {
                [
                    (format!("{{worker=\"{i}\",outcome=\"forwarded\"}}"), w.signals.load(Relaxed) as f64),
                    (format!("{{worker=\"{i}\",outcome=\"dropped\"}}"), w.signals_dropped.load(Relaxed) as f64),
                ]
            })
            .collect::<Vec<_>>(),
    );
}

/// Call recording: recordings by outcome, packets and bytes written, and
/// the workers' copies (only with `--recording-dir`).
fn recording(o: &mut String, snap: &Snapshot) {
    let Some(r) = &snap.recorder else { return };
    let n = |a: &std::sync::atomic::AtomicU64| a.load(Relaxed) as f64;
    metric(o, "recordings_open", "gauge", "Recordings open (started, not yet stopped).", &one(n(&r.open)));
    metric(
        o,
        "recordings_total",
        "counter",
        "Recordings started, completed (files under their final names), discarded (discard-recording), and \
         files that could not be created, written or renamed.",
        &[
            ("{outcome=\"started\"}".into(), snap.t.recordings_started as f64),
            ("{outcome=\"completed\"}".into(), n(&r.finished)),
            ("{outcome=\"discarded\"}".into(), n(&r.discarded)),
            ("{outcome=\"failed\"}".into(), n(&r.errors)),
        ],
    );
    metric(
        o,
        "recording_packets_total",
        "counter",
        "Recorded packets written to pcap files, and those not written (after a pause or stop, or to a file \
         that failed).",
        &[("{outcome=\"written\"}".into(), n(&r.packets)), ("{outcome=\"unwritten\"}".into(), n(&r.unwritten))],
    );
    metric(o, "recording_bytes_total", "counter", "Bytes written to pcap files.", &one(n(&r.bytes)));
    metric(
        o,
        "recording_copies_total",
        "counter",
        "Packets of recorded calls each worker copied to the recorder, or whose copy it dropped (its queue \
         or its copy buffers full; the packet was relayed all the same).",
        &snap
            .stats
            .iter()
            .enumerate()
            .flat_map(|(i, w)| {
                [
                    (format!("{{worker=\"{i}\",outcome=\"queued\"}}"), w.recorded.load(Relaxed) as f64),
                    (format!("{{worker=\"{i}\",outcome=\"dropped\"}}"), w.recorded_dropped.load(Relaxed) as f64),
                ]
            })
            .collect::<Vec<_>>(),
    );
}

/// The media controls' counters: packets played and silenced, digits
/// reported to the DTMF log.
fn media_control(o: &mut String, snap: &Snapshot) {
    let per_worker = |f: &dyn Fn(&crate::relay::stats::WorkerStats) -> Vec<(&'static str, u64)>| {
        snap.stats
            .iter()
            .enumerate()
            .flat_map(|(i, w)| {
                f(w).into_iter().map(move |(label, v)| {
                    let label = if label.is_empty() { String::new() } else { format!(",{label}") };
                    (format!("{{worker=\"{i}\"{label}}}"), v as f64)
                })
            })
            .collect::<Vec<_>>()
    };
    metric(
        o,
        "played_packets_total",
        "counter",
        "Packets the relay played to endpoints (play media, play DTMF), per worker.",
        &per_worker(&|w| vec![("", w.played.load(Relaxed))]),
    );
    metric(
        o,
        "silenced_packets_total",
        "counter",
        "Packets relayed as their codec's silence (silence media), per worker.",
        &per_worker(&|w| vec![("", w.silenced.load(Relaxed))]),
    );
    metric(
        o,
        "dtmf_events_total",
        "counter",
        "DTMF digits endpoints sent (RFC 4733 end packets), reported to the DTMF log or dropped (its queue full), \
         per worker; counted only with --dtmf-log-dest.",
        &per_worker(&|w| {
            vec![
                ("outcome=\"reported\"", w.dtmf_events.load(Relaxed)),
                ("outcome=\"dropped\"", w.dtmf_events_dropped.load(Relaxed)),
            ]
        }),
    );
}

/// Call quality: RTCP read, MOS samples as rtpengine counts them, the
/// finished streams' MOS, jitter and round trip, Homer (only with call
/// quality on).
fn call_quality(o: &mut String, shared: &Shared, snap: &Snapshot) {
    metric(o, "transcoded_media", "gauge", "Media streams being transcoded now.", &one(snap.transcoded as f64));
    if !snap.quality {
        return;
    }
    let q = &snap.t.quality;
    metric(
        o,
        "rtcp_reports_total",
        "counter",
        "Authenticated RTCP packets each worker copied to the call quality reader, or dropped (its queue full; \
         the packet was relayed all the same).",
        &snap
            .stats
            .iter()
            .enumerate()
            .flat_map(|(i, w)| {
                [
                    (format!("{{worker=\"{i}\",outcome=\"queued\"}}"), w.rtcp_reports.load(Relaxed) as f64),
                    (format!("{{worker=\"{i}\",outcome=\"dropped\"}}"), w.rtcp_reports_dropped.load(Relaxed) as f64),
                ]
            })
            .collect::<Vec<_>>(),
    );
    metric(
        o,
        "mos_samples_total",
        "counter",
        "Report blocks that gave a MOS (rtpengine's mos_samples_total).",
        &one(q.mos_samples as f64),
    );
    metric(
        o,
        "mos_total",
        "counter",
        "Sum of those MOS values (rtpengine's mos_total).",
        &one(q.mos_sum as f64 / 10.0),
    );
    metric(
        o,
        "relay_quality_samples_total",
        "counter",
        "Quality samples taken from the relay's own view, for endpoints that send no RTCP reports.",
        &one(q.relay_samples as f64),
    );
    // A histogram's series after its HELP and TYPE lines.
    let buckets = |o: &mut String, name: &str, b: &srtpgate_calls::quality::Buckets, bounds: &[u64], scale: f64| {
        let mut cum = 0;
        for (i, bound) in bounds.iter().enumerate() {
            cum += b.counts.get(i).copied().unwrap_or(0);
            let _ = writeln!(o, "{name}_bucket{{le=\"{}\"}} {cum}", *bound as f64 / scale);
        }
        let _ = writeln!(o, "{name}_bucket{{le=\"+Inf\"}} {}", b.count());
        let _ = writeln!(o, "{name}_sum {}\n{name}_count {}", b.sum as f64 / scale, b.count());
    };
    use srtpgate_calls::quality::{JITTER_BOUNDS_MS, MOS_BOUNDS, RTT_BOUNDS_MS};
    let _ = writeln!(
        o,
        "# HELP srtpgate_stream_mos Average MOS of each finished stream (an SSRC of an ended call).\n\
         # TYPE srtpgate_stream_mos histogram"
    );
    buckets(o, "srtpgate_stream_mos", &q.finished_mos, &MOS_BOUNDS, 10.0);
    let _ = writeln!(
        o,
        "# HELP srtpgate_stream_jitter_seconds Average jitter of each finished stream, as its receiver reported it.\n\
         # TYPE srtpgate_stream_jitter_seconds histogram"
    );
    buckets(o, "srtpgate_stream_jitter_seconds", &q.finished_jitter_ms, &JITTER_BOUNDS_MS, 1000.0);
    let _ = writeln!(
        o,
        "# HELP srtpgate_stream_rtt_seconds Average end-to-end round trip of each finished stream that had one.\n\
         # TYPE srtpgate_stream_rtt_seconds histogram"
    );
    buckets(o, "srtpgate_stream_rtt_seconds", &q.finished_rtt_ms, &RTT_BOUNDS_MS, 1000.0);
    let h = &shared.homer;
    metric(
        o,
        "homer_packets_total",
        "counter",
        "HEP packets to Homer: sent, dropped (queue full or too long), failed (the transport refused them).",
        &[
            ("{outcome=\"sent\"}".into(), h.sent.load(Relaxed) as f64),
            ("{outcome=\"dropped\"}".into(), h.dropped.load(Relaxed) as f64),
            ("{outcome=\"failed\"}".into(), h.failed.load(Relaxed) as f64),
        ],
    );
}

/// The delay histogram and the engine's counters.
fn delay_and_engine(o: &mut String, snap: &Snapshot) {
    let stats = &snap.stats;
    let engine_stats = &snap.engine_stats;
    let h = Histogram::of(stats);
    let sum: u64 = stats.iter().map(|w| w.total.delay_ns_sum.load(Relaxed)).sum();
    let _ = writeln!(
        o,
        "# HELP srtpgate_relay_delay_seconds Time from a packet's arrival (kernel timestamp) to its send.\n# TYPE srtpgate_relay_delay_seconds histogram"
    );
    h.write_prometheus(o, "srtpgate_relay_delay_seconds", sum);
    if let Some(es) = engine_stats {
        write_engine_stats(o, es);
    }
}

/// The hybrid engine's share of batches and packets per path, its threshold
/// and the device round trips.
fn write_engine_stats(o: &mut String, es: &srtp::EngineStats) {
    let _ = writeln!(
        o,
        "# HELP srtpgate_engine_path_batches_total Crypto batches by the path that ran them (hybrid GPU engine).\n# TYPE srtpgate_engine_path_batches_total counter"
    );
    for (path, batches, _) in &es.shares {
        let _ = writeln!(o, "srtpgate_engine_path_batches_total{{path=\"{path}\"}} {batches}");
    }
    let _ = writeln!(
        o,
        "# HELP srtpgate_engine_path_packets_total Packets by the path that transformed them (hybrid GPU engine).\n# TYPE srtpgate_engine_path_packets_total counter"
    );
    for (path, _, packets) in &es.shares {
        let _ = writeln!(o, "srtpgate_engine_path_packets_total{{path=\"{path}\"}} {packets}");
    }
    if !es.devices.is_empty() {
        let _ = writeln!(
            o,
            "# HELP srtpgate_engine_gpu_packets_total Packets each GPU ran (its CUDA ordinal).\n# TYPE srtpgate_engine_gpu_packets_total counter"
        );
        for (gpu, packets) in &es.devices {
            let _ = writeln!(o, "srtpgate_engine_gpu_packets_total{{gpu=\"{gpu}\"}} {packets}");
        }
    }
    if let Some(t) = es.threshold {
        // usize::MAX: the GPU was slower at every batch size measured.
        let v = if t == usize::MAX { f64::INFINITY } else { t as f64 };
        let _ = writeln!(
            o,
            "# HELP srtpgate_engine_gpu_min_batch Batches of at least this many packets go to the GPU.\n# TYPE srtpgate_engine_gpu_min_batch gauge\nsrtpgate_engine_gpu_min_batch {}",
            prom_f64(v)
        );
    }
    if !es.round_trip_us.is_empty() {
        let _ = writeln!(
            o,
            "# HELP srtpgate_engine_gpu_round_trip_seconds Time from handing a batch to the GPU to having its results.\n# TYPE srtpgate_engine_gpu_round_trip_seconds histogram"
        );
        let mut cum = 0u64;
        for (le, n) in &es.round_trip_us {
            cum += n;
            let le = if le.is_finite() { format!("{}", le / 1e6) } else { "+Inf".into() };
            let _ = writeln!(o, "srtpgate_engine_gpu_round_trip_seconds_bucket{{le=\"{le}\"}} {cum}");
        }
        let _ = writeln!(o, "srtpgate_engine_gpu_round_trip_seconds_sum {}", es.round_trip_sum_us / 1e6);
        let _ = writeln!(o, "srtpgate_engine_gpu_round_trip_seconds_count {cum}");
    }
}

fn prom_f64(v: f64) -> String {
    if v.is_infinite() {
        "+Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_stats_name_each_path_and_each_gpu() {
        let es = srtp::EngineStats {
            shares: vec![("cpu", 2, 30), ("gpu", 5, 700)],
            round_trip_us: vec![(5.0, 1), (10.0, 3), (f64::INFINITY, 1)],
            round_trip_sum_us: 42.0,
            threshold: Some(usize::MAX),
            devices: vec![(0, 400), (1, 300)],
        };
        let mut o = String::new();
        write_engine_stats(&mut o, &es);
        for line in [
            "srtpgate_engine_path_packets_total{path=\"gpu\"} 700",
            "srtpgate_engine_gpu_packets_total{gpu=\"0\"} 400",
            "srtpgate_engine_gpu_packets_total{gpu=\"1\"} 300",
            "srtpgate_engine_gpu_min_batch +Inf",
            "srtpgate_engine_gpu_round_trip_seconds_bucket{le=\"+Inf\"} 5",
        ] {
            assert!(o.lines().any(|l| l == line), "{line} missing from:\n{o}");
        }
        // An engine without devices writes no per-GPU family.
        let mut o = String::new();
        write_engine_stats(&mut o, &srtp::EngineStats::default());
        assert!(!o.contains("srtpgate_engine_gpu_packets_total"), "{o}");
    }
}
