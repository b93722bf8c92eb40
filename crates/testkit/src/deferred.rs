//! An engine whose batches complete later: the asynchronous path of a
//! caller (a relay worker's rounds) tested where no device is.
//!
//! [`Deferred`] wraps an engine. Its [`Lane`] takes a batch at submit and
//! transforms it with the wrapped engine only when the caller completes it;
//! [`is_done`](Lane::is_done) answers true only after `polls` questions, so
//! that a caller polling between rounds holds several batches in flight, as
//! with a device's round trip. Batches smaller than `cpu_below` run at
//! submit, as a hybrid engine's small batches do.

use srtp::engine::{Engine, EngineStats, Job, Lane, Op, Outcome, Ticket};
use srtp::{Error, SessionKeys};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// Batches a [`DeferredLane`] holds at most (a full lane runs a batch at
/// once).
pub const DEPTH: usize = 4;
/// Jobs one batch may have.
const MAX_JOBS: usize = 1024;

/// An engine whose lanes defer each batch to its completion.
#[derive(Clone)]
pub struct Deferred<E> {
    inner: E,
    polls: u32,
    cpu_below: usize,
    /// The most batches any of its lanes held at once.
    most: Arc<AtomicUsize>,
}

impl<E> Deferred<E> {
    /// `inner`'s transforms, done `polls` polls after submit (`u32::MAX`:
    /// only when the caller waits for them); batches below `cpu_below`
    /// jobs at once.
    pub fn new(inner: E, polls: u32, cpu_below: usize) -> Deferred<E> {
        Deferred { inner, polls, cpu_below, most: Arc::new(AtomicUsize::new(0)) }
    }

    /// The most batches one of its lanes held at once.
    pub fn most_in_flight(&self) -> usize {
        self.most.load(Relaxed)
    }
}

impl<E: Engine + Clone + 'static> Engine for Deferred<E>
where
    E::Keys: 'static,
{
    type Keys = E::Keys;

    fn name(&self) -> &'static str {
        "deferred"
    }

    fn prepare_keys(&self, keys: &SessionKeys) -> Result<E::Keys, Error> {
        self.inner.prepare_keys(keys)
    }

    fn transform(&self, jobs: &mut [Job<'_, E::Keys>]) {
        self.inner.transform(jobs)
    }

    /// Its lanes run the inner engine's transform, later.
    fn keeps_failed(&self, suite: srtp::Suite) -> bool {
        self.inner.keeps_failed(suite)
    }

    fn stats(&self) -> Option<EngineStats> {
        self.inner.stats()
    }

    fn lane(&self) -> Option<Box<dyn Lane<E::Keys>>> {
        Some(Box::new(DeferredLane {
            engine: self.clone(),
            batches: VecDeque::with_capacity(DEPTH),
            spare: (0..DEPTH).map(|_| Vec::with_capacity(MAX_JOBS)).collect(),
            seq: 0,
        }))
    }
}

/// A job as submitted: the caller keeps its buffer and keys for it until
/// completion (the [`Lane::submit`] contract).
struct Held<K> {
    keys: *const K,
    buf: *mut u8,
    len: usize,
    op: Op,
    iv: [u8; 16],
    ranges: [usize; 6],
    suffix: [u8; 4],
}

/// A batch in flight: its jobs, and the polls it still waits.
struct Batch<K> {
    seq: u64,
    held: Vec<Held<K>>,
    polls: u32,
}

/// The lane of a [`Deferred`] engine.
pub struct DeferredLane<E: Engine> {
    engine: Deferred<E>,
    /// In flight, oldest first.
    batches: VecDeque<Batch<E::Keys>>,
    /// Job lists of batches no longer in flight (allocated once).
    spare: Vec<Vec<Held<E::Keys>>>,
    seq: u64,
}

// SAFETY: the pointers are the submitter's buffers and keys, which the
// `Lane::submit` contract keeps valid and untouched until completion; they
// are dereferenced only in `complete`, on whichever thread owns the lane.
unsafe impl<E: Engine> Send for DeferredLane<E> {}

impl<E: Engine + Clone + 'static> Lane<E::Keys> for DeferredLane<E>
where
    E::Keys: 'static,
{
    fn depth(&self) -> usize {
        DEPTH
    }

    unsafe fn submit(&mut self, jobs: &mut [Job<'_, E::Keys>]) -> Option<Ticket> {
        let spare = self.spare.pop();
        let Some(mut held) = spare.filter(|_| jobs.len() >= self.engine.cpu_below && jobs.len() <= MAX_JOBS) else {
            self.engine.inner.transform(jobs);
            return None;
        };
        for j in jobs.iter_mut() {
            held.push(Held {
                keys: j.keys,
                buf: j.buf.as_mut_ptr(),
                len: j.buf.len(),
                op: j.op,
                iv: j.iv,
                ranges: [j.enc_start, j.enc_end, j.auth_end, j.suffix_len, j.tag_start, j.tag_len],
                suffix: j.suffix,
            });
        }
        self.seq += 1;
        self.batches.push_back(Batch { seq: self.seq, held, polls: self.engine.polls });
        self.engine.most.fetch_max(self.batches.len(), Relaxed);
        Some(Ticket { seq: self.seq, jobs: jobs.len() })
    }

    fn is_done(&mut self, ticket: &Ticket) -> bool {
        let Some(b) = self.batches.iter_mut().find(|b| b.seq == ticket.seq) else { return false };
        b.polls = b.polls.saturating_sub(1);
        b.polls == 0
    }

    fn complete(&mut self, ticket: Ticket, outcomes: &mut [Outcome]) -> Result<(), String> {
        let Some(at) = self.batches.iter().position(|b| b.seq == ticket.seq) else {
            return Err(format!("no batch {} in flight", ticket.seq));
        };
        let mut b = self.batches.remove(at).expect("found");
        for (i, h) in b.held.drain(..).enumerate() {
            let [enc_start, enc_end, auth_end, suffix_len, tag_start, tag_len] = h.ranges;
            // SAFETY: the submit contract keeps the job's buffer and keys
            // valid and untouched by the caller until now.
            let (keys, buf) = unsafe { (&*h.keys, std::slice::from_raw_parts_mut(h.buf, h.len)) };
            let mut job = [Job {
                keys,
                op: h.op,
                iv: h.iv,
                buf,
                enc_start,
                enc_end,
                auth_end,
                suffix: h.suffix,
                suffix_len,
                tag_start,
                tag_len,
                outcome: Outcome::Pending,
            }];
            self.engine.inner.transform(&mut job);
            if let Some(o) = outcomes.get_mut(i).filter(|o| **o == Outcome::Pending) {
                *o = job[0].outcome;
            }
        }
        self.spare.push(b.held);
        Ok(())
    }
}
