//! A batcher in front of an engine: it closes a batch after a time window or
//! a size bound, whichever comes first, so that latency stays bounded at low
//! load and batches grow with load. With the GPU engine, batches smaller than
//! its `cpu_below` run on the CPU: low load stays on the CPU and moves to the
//! GPU as the queue grows (the hybrid policy).

use srtp::engine::{Engine, Job, Op, Outcome};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A job that owns its buffer, so it can cross threads.
pub struct OwnedJob<K> {
    /// The engine's keys.
    pub keys: Arc<K>,
    /// Protect or unprotect.
    pub op: Op,
    /// IV / counter block.
    pub iv: [u8; 16],
    /// The packet.
    pub buf: Vec<u8>,
    /// Encrypted range start.
    pub enc_start: usize,
    /// Encrypted range end.
    pub enc_end: usize,
    /// End of the HMAC-authenticated range.
    pub auth_end: usize,
    /// Authenticated suffix.
    pub suffix: [u8; 4],
    /// Suffix bytes used.
    pub suffix_len: usize,
    /// Tag offset.
    pub tag_start: usize,
    /// Tag length.
    pub tag_len: usize,
    /// The engine's verdict.
    pub outcome: Outcome,
}

impl<K> OwnedJob<K> {
    /// The engine job over this job's buffer, outcome pending.
    pub fn job(&mut self) -> Job<'_, K> {
        Job {
            keys: &*self.keys,
            op: self.op,
            iv: self.iv,
            buf: &mut self.buf[..],
            enc_start: self.enc_start,
            enc_end: self.enc_end,
            auth_end: self.auth_end,
            suffix: self.suffix,
            suffix_len: self.suffix_len,
            tag_start: self.tag_start,
            tag_len: self.tag_len,
            outcome: Outcome::Pending,
        }
    }
}

/// When a batch closes.
#[derive(Clone, Copy, Debug)]
pub struct BatcherConfig {
    /// Longest time the first job of a batch waits for more.
    pub window: Duration,
    /// Most jobs in one batch.
    pub max_batch: usize,
}

impl Default for BatcherConfig {
    fn default() -> Self {
        BatcherConfig { window: Duration::from_micros(100), max_batch: 4096 }
    }
}

type Reply<K> = Sender<OwnedJob<K>>;

/// Statistics of the batches closed so far.
#[derive(Clone, Copy, Debug, Default)]
pub struct BatchStats {
    /// Batches run.
    pub batches: u64,
    /// Jobs run.
    pub jobs: u64,
    /// Batches closed by the size bound (the rest by the window).
    pub closed_by_size: u64,
}

type Request<K> = (OwnedJob<K>, Reply<K>);

/// The batcher: `submit` from any thread; a worker thread runs the batches.
pub struct Batcher<E: Engine> {
    tx: Option<Sender<Request<E::Keys>>>,
    worker: Option<JoinHandle<BatchStats>>,
}

impl<E> Batcher<E>
where
    E: Engine + 'static,
    E::Keys: 'static,
{
    /// Starts the worker thread.
    pub fn new(engine: E, cfg: BatcherConfig) -> Batcher<E> {
        let (tx, rx) = channel::<Request<E::Keys>>();
        let worker = std::thread::Builder::new()
            .name("srtp-batcher".into())
            .spawn(move || run(engine, cfg, rx))
            .expect("spawning the batcher thread");
        Batcher { tx: Some(tx), worker: Some(worker) }
    }

    /// Queues a job; the transformed job comes back on `reply`.
    pub fn submit(&self, job: OwnedJob<E::Keys>, reply: Reply<E::Keys>) -> Result<(), OwnedJob<E::Keys>> {
        match &self.tx {
            Some(tx) => tx.send((job, reply)).map_err(|e| e.0 .0),
            None => Err(job),
        }
    }

    /// Stops the worker after the queued jobs and returns its statistics.
    pub fn finish(mut self) -> BatchStats {
        self.tx.take();
        self.worker.take().and_then(|w| w.join().ok()).unwrap_or_default()
    }
}

impl<E: Engine> Drop for Batcher<E> {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

fn run<E: Engine>(engine: E, cfg: BatcherConfig, rx: Receiver<Request<E::Keys>>) -> BatchStats {
    let mut stats = BatchStats::default();
    let mut batch: Vec<Request<E::Keys>> = Vec::with_capacity(cfg.max_batch);
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(cfg.max_batch);
    loop {
        // Block for the first job of a batch.
        match rx.recv() {
            Ok(first) => batch.push(first),
            Err(_) => return stats,
        }
        let deadline = Instant::now() + cfg.window;
        let mut open = true;
        while batch.len() < cfg.max_batch {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match rx.recv_timeout(left) {
                Ok(j) => batch.push(j),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if batch.len() >= cfg.max_batch {
            stats.closed_by_size += 1;
        }
        outcomes.clear();
        {
            let mut jobs: Vec<Job<'_, E::Keys>> = batch.iter_mut().map(|(j, _)| j.job()).collect();
            engine.transform(&mut jobs);
            outcomes.extend(jobs.iter().map(|j| j.outcome));
        }
        stats.batches += 1;
        stats.jobs += batch.len() as u64;
        for ((mut job, reply), outcome) in batch.drain(..).zip(outcomes.iter()) {
            job.outcome = *outcome;
            let _ = reply.send(job);
        }
        if !open {
            return stats;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use srtp::{CpuEngine, SessionKeys, Suite};

    fn job(keys: &Arc<<CpuEngine as Engine>::Keys>, i: u8) -> OwnedJob<<CpuEngine as Engine>::Keys> {
        let mut buf = vec![i; 12 + 160 + 10];
        buf[0] = 0x80;
        OwnedJob {
            keys: keys.clone(),
            op: Op::Protect,
            iv: [i; 16],
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
    }

    /// Jobs come back transformed exactly as a direct transform does them;
    /// the size bound and the window both close batches.
    #[test]
    fn batches_by_size_and_window() {
        let engine = CpuEngine::new();
        let sk = SessionKeys::derive(Suite::AES_CM_128_HMAC_SHA1_80, &[1; 16], &[2; 14], false, 0).unwrap();
        let keys = Arc::new(engine.prepare_keys(&sk).unwrap());
        let b = Batcher::new(engine, BatcherConfig { window: Duration::from_millis(20), max_batch: 8 });
        let (tx, rx) = channel();
        for i in 0..20u8 {
            b.submit(job(&keys, i), tx.clone()).ok().unwrap();
        }
        let mut got: Vec<_> = (0..20).map(|_| rx.recv_timeout(Duration::from_secs(5)).unwrap()).collect();
        got.sort_by_key(|j| j.iv[0]);
        for (i, j) in got.iter().enumerate() {
            let mut want = job(&keys, i as u8);
            let mut one = [want.job()];
            engine.transform(&mut one);
            assert_eq!(one[0].outcome, Outcome::Done);
            assert_eq!(j.outcome, Outcome::Done);
            assert_eq!(j.buf, want.buf);
        }
        let stats = b.finish();
        assert_eq!(stats.jobs, 20);
        // 20 jobs with a bound of 8: at least two batches closed by size; the
        // last 4 by the window.
        assert!(stats.closed_by_size >= 2, "{stats:?}");
        assert!(stats.batches >= 3, "{stats:?}");
    }
}
