//! The media relay's data plane: port pairs, packet buffer pools, worker
//! threads that own the sockets, batched system calls, and counters.

pub mod pool;
pub mod ports;
pub mod stats;
pub mod sys;
pub mod worker;

use crossbeam_channel::{unbounded, Sender};
use srtp::Engine;
use stats::WorkerStats;
use std::sync::Arc;
use std::thread::JoinHandle;
use worker::{Cmd, Worker};

/// The control thread's handle on one worker.
pub struct WorkerHandle<E: Engine> {
    tx: Sender<Cmd<E>>,
    waker: Arc<mio::Waker>,
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

/// Starts `n` workers, each with a pool of `buffers` packet buffers and
/// crypto batches of at most `batch` packets.
pub fn spawn_workers<E>(
    engine: &E,
    n: usize,
    buffers: usize,
    batch: usize,
    busy_poll: bool,
) -> std::io::Result<Vec<WorkerHandle<E>>>
where
    E: Engine + Clone + 'static,
    E::Keys: 'static,
{
    (0..n)
        .map(|i| {
            let (tx, rx) = unbounded();
            let stats = Arc::new(WorkerStats::new());
            let (w, waker) = Worker::new(engine.clone(), rx, buffers, batch, busy_poll, stats.clone())?;
            let join = std::thread::Builder::new().name(format!("media-{i}")).spawn(move || w.run())?;
            Ok(WorkerHandle { tx, waker, stats, join: Some(join) })
        })
        .collect()
}
