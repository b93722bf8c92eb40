//! The media relay's data plane: port pairs, packet buffer pools, worker
//! threads that own the sockets, I/O backends (epoll with batched system
//! calls, io_uring), and counters. The control side (`srtpgate serve`)
//! binds ports, builds crypto contexts and sends workers commands; a worker
//! never takes a lock or allocates per packet.

pub mod io;
pub mod netlink;
pub mod pool;
pub mod ports;
/// The counters live in their own crate: the call table reads them without
/// depending on the data plane.
pub use srtpgate_stats as stats;
pub mod sys;
pub mod worker;

use crossbeam_channel::{unbounded, Sender};
use io::Wake;
pub use io::{IoKind, IoSetup};
use srtp::Engine;
use stats::WorkerStats;
use std::sync::Arc;
use std::thread::JoinHandle;
use worker::{Cmd, Mover, Worker};

/// Sends commands to one worker from any thread ([`WorkerHandle::sender`]).
pub struct WorkerSender<E: Engine> {
    tx: Sender<Cmd<E>>,
    waker: Arc<dyn Wake>,
}

impl<E: Engine> Clone for WorkerSender<E> {
    fn clone(&self) -> Self {
        WorkerSender { tx: self.tx.clone(), waker: self.waker.clone() }
    }
}

impl<E: Engine> WorkerSender<E> {
    /// Sends a command and wakes the worker (false: the worker is gone).
    pub fn send(&self, cmd: Cmd<E>) -> bool {
        self.tx.send(cmd).is_ok() && self.waker.wake().is_ok()
    }
}

/// The control thread's handle on one worker.
pub struct WorkerHandle<E: Engine> {
    tx: Sender<Cmd<E>>,
    waker: Arc<dyn Wake>,
    /// The worker's counters.
    pub stats: Arc<WorkerStats>,
    join: Option<JoinHandle<()>>,
}

impl<E: Engine> WorkerHandle<E> {
    /// Sends a command and wakes the worker.
    pub fn send(&self, cmd: Cmd<E>) {
        if self.tx.send(cmd).is_ok() {
            if let Err(e) = self.waker.wake() {
                tracing::error!("cannot wake a worker: {e}");
            }
        } else {
            tracing::error!("a media worker has stopped; its calls have no media");
        }
    }

    /// A handle that only sends commands, for another thread.
    pub fn sender(&self) -> WorkerSender<E> {
        WorkerSender { tx: self.tx.clone(), waker: self.waker.clone() }
    }

    /// Where another worker hands streams to this one ([`Cmd::MoveCall`]).
    pub fn mover(&self) -> Mover<E> {
        Mover { tx: self.tx.clone(), waker: self.waker.clone() }
    }

    /// Whether the worker thread is still running.
    pub fn alive(&self) -> bool {
        self.join.as_ref().is_some_and(|j| !j.is_finished())
    }

    /// Stops the worker and waits for it.
    pub fn stop(&mut self) {
        self.send(Cmd::Stop);
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

impl<E: Engine> Drop for WorkerHandle<E> {
    fn drop(&mut self) {
        self.stop();
    }
}

/// What every worker is started with.
#[derive(Clone, Debug)]
pub struct WorkerConfig {
    /// Packet buffers per worker.
    pub buffers: usize,
    /// Most packets in one crypto batch.
    pub batch: usize,
    /// Never sleep in the backend's wait.
    pub busy_poll: bool,
    /// The delay bound: an RTP packet older than this (ns, by its receive
    /// time) when the worker takes it is dropped as [`stats::Drop::Stale`]
    /// (0: never).
    pub stale_ns: u64,
    /// The I/O backend.
    pub io: IoSetup,
    /// CPUs to pin the workers to, worker i on `pin[i % len]` (empty: not
    /// pinned).
    pub pin: Vec<usize>,
    /// Where the workers send the STUN and DTLS datagrams of ICE/DTLS legs
    /// (bounded: when full, they are dropped and counted).
    pub signal: Option<crossbeam_channel::Sender<worker::Signal>>,
    /// Where worker i sends the packets of recorded calls: its own bounded
    /// queue, the `i`th (none: recording is off).
    pub recorder: Vec<crossbeam_channel::Sender<worker::Tapped>>,
    /// Where the workers report the digits endpoints send (bounded: when
    /// full, a digit is counted and not reported); none: no DTMF log.
    pub dtmf: Option<crossbeam_channel::Sender<worker::SentDigit>>,
    /// Call quality: where the workers copy the RTCP the endpoints send
    /// (bounded: when full, a packet is counted and not copied); none:
    /// call quality is off, and the workers estimate no jitter either.
    pub quality: Option<crossbeam_channel::Sender<srtpgate_quality::RtcpCopy>>,
}

/// Starts `n` workers. Each builds its backend on its own thread (an
/// io_uring has a single issuer) and reports back before this returns.
pub fn spawn_workers<E>(engine: &E, n: usize, cfg: WorkerConfig) -> std::io::Result<Vec<WorkerHandle<E>>>
where
    E: Engine + Clone + 'static,
    E::Keys: 'static,
{
    (0..n)
        .map(|i| {
            let (tx, rx) = unbounded();
            let stats = Arc::new(WorkerStats::new());
            let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
            let (engine, st, cfg) = (engine.clone(), stats.clone(), cfg.clone());
            let join = std::thread::Builder::new().name(format!("media-{i}")).spawn(move || {
                if !cfg.pin.is_empty() {
                    let cpu = cfg.pin[i % cfg.pin.len()];
                    match sys::pin_to(cpu) {
                        Ok(()) => tracing::debug!(worker = i, cpu, "media worker pinned"),
                        Err(e) => tracing::warn!(worker = i, cpu, "cannot pin the media worker: {e}"),
                    }
                }
                match Worker::new(engine, i, rx, cfg, st) {
                    Ok(w) => {
                        let _ = ready_tx.send(Ok(w.waker()));
                        w.run();
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                    }
                }
            })?;
            let waker =
                ready_rx.recv().map_err(|_| std::io::Error::other("a media worker stopped while starting"))??;
            Ok(WorkerHandle { tx, waker, stats, join: Some(join) })
        })
        .collect()
}
