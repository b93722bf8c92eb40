//! The batch-first crypto engine interface (design.md §2).
//!
//! An SRTP operation is split in three steps: *prepare* (per stream, in
//! order: parse, index, replay pre-check, IV), *transform* (this trait: a pure
//! function of keys, IV and bytes, any order, in parallel) and *commit* (per
//! stream: only on success update the ROC and replay window). Batching the
//! middle step across streams is what lets one engine serve many calls.

use crate::error::Error;
use crate::kdf::SessionKeys;

/// What a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Encrypt, then write the tag.
    Protect,
    /// Check the tag in constant time, then decrypt.
    Unprotect,
}

/// The engine's verdict on a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not transformed yet.
    Pending,
    /// Done; for unprotect the tag was valid.
    Done,
    /// Unprotect only: the tag did not match; the payload is unspecified.
    AuthFailed,
}

/// One packet's transform, in place in `buf`.
///
/// Layout of `buf`: `[0, enc_start)` is sent in clear, `[enc_start, enc_end)`
/// is encrypted, the tag occupies `[tag_start, tag_start + tag_len)`.
/// * HMAC suites authenticate `buf[..auth_end]` followed by `suffix` (the ROC
///   for SRTP; empty for SRTCP, whose index word lies inside `auth_end`).
/// * GCM authenticates `buf[..enc_start]` followed by `suffix` as AAD (for
///   SRTCP the E-flag and index word) and encrypts `[enc_start, enc_end)`.
#[derive(Debug)]
pub struct Job<'a, K> {
    /// The engine's precomputed session keys.
    pub keys: &'a K,
    /// Protect or unprotect.
    pub op: Op,
    /// Counter block (AES-CM), IV (f8), or the 12-byte nonce in the first bytes (GCM).
    pub iv: [u8; 16],
    /// The packet.
    pub buf: &'a mut [u8],
    /// Start of the encrypted range.
    pub enc_start: usize,
    /// End of the encrypted range.
    pub enc_end: usize,
    /// End of the HMAC-authenticated range.
    pub auth_end: usize,
    /// Bytes authenticated after `buf[..auth_end]` (HMAC) or after the AAD (GCM).
    pub suffix: [u8; 4],
    /// How many bytes of `suffix` are used (0 or 4).
    pub suffix_len: usize,
    /// Offset of the tag.
    pub tag_start: usize,
    /// Tag length.
    pub tag_len: usize,
    /// Set by the engine.
    pub outcome: Outcome,
}

impl<K> Job<'_, K> {
    /// The same job over the same buffer with other keys (another engine's
    /// form of the same session keys), outcome pending.
    pub fn with_keys<'b, K2>(&'b mut self, keys: &'b K2) -> Job<'b, K2> {
        Job {
            keys,
            op: self.op,
            iv: self.iv,
            buf: &mut *self.buf,
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

    /// The authenticated suffix.
    pub fn suffix(&self) -> &[u8] {
        &self.suffix[..self.suffix_len]
    }

    /// Checks the offsets against the buffer, so that engines can index
    /// without further checks.
    pub fn is_well_formed(&self) -> bool {
        self.enc_start <= self.enc_end
            && self.enc_end <= self.buf.len()
            && self.auth_end <= self.buf.len()
            && self.tag_start.checked_add(self.tag_len).is_some_and(|end| end <= self.buf.len())
            && self.suffix_len <= 4
    }
}

/// A crypto engine: turns session keys into its own precomputed form once,
/// then transforms batches of jobs.
pub trait Engine: Send + Sync {
    /// Keys in the engine's precomputed form (round keys, HMAC midstates,
    /// GCM tables; for a GPU engine, a handle to a device slot).
    type Keys: Send + Sync;

    /// Short name, as used on the command line.
    fn name(&self) -> &'static str;

    /// Precomputes `keys`. Called when a session key is installed, never per packet.
    fn prepare_keys(&self, keys: &SessionKeys) -> Result<Self::Keys, Error>;

    /// Transforms every job, setting its [`Outcome`]. A job that is not
    /// [well formed](Job::is_well_formed) fails with [`Outcome::AuthFailed`].
    fn transform(&self, jobs: &mut [Job<'_, Self::Keys>]);

    /// Whether an unprotect job of `suite` whose tag does not match leaves
    /// its buffer as it was (the tag checked before any byte is
    /// decrypted). A caller that may try a failed packet again, under
    /// another index, can then unprotect it in place rather than into a
    /// copy ([`Context::prepare_in_place`](crate::Context::prepare_in_place)).
    /// By default false: the payload of a failed job is unspecified.
    fn keeps_failed(&self, _suite: crate::Suite) -> bool {
        false
    }

    /// Announces the parts of `keys` that transforming a packet reads
    /// ([`crate::prefetch`]), for a caller about to prepare a batch. Only a
    /// hint; by default nothing.
    fn prefetch_keys(&self, _keys: &Self::Keys) {}

    /// Announces a memory region that job buffers will lie in (a relay
    /// worker's buffer pool, an AF_XDP UMEM), so that an engine working on
    /// another device can reach packets where they are instead of copying
    /// them. `pitch` is the distance between the starts of two frames of the
    /// region (0: not known). Returns whether the engine registered it; the
    /// CPU engines need nothing and return false.
    ///
    /// # Safety
    /// `ptr..ptr + len` stays mapped until [`unregister_memory`](Engine::unregister_memory)
    /// is called with `ptr`, and no job is transformed from it after that.
    #[allow(unsafe_code)]
    unsafe fn register_memory(&self, _ptr: *mut u8, _len: usize, _pitch: usize) -> bool {
        false
    }

    /// Forgets a region given to [`register_memory`](Engine::register_memory).
    fn unregister_memory(&self, _ptr: *mut u8) {}

    /// Counters of the batches this engine ran (kept per batch, never per
    /// packet), for `/metrics`; `None` for an engine with one path only.
    fn stats(&self) -> Option<EngineStats> {
        None
    }

    /// A submission lane of the calling thread's own, for an engine that
    /// runs batches on another device: the thread hands a batch over and
    /// goes on while the device works ([`Lane`]). `None` (the CPU engines):
    /// [`transform`](Engine::transform) is as fast as a batch can be.
    fn lane(&self) -> Option<Box<dyn Lane<Self::Keys>>> {
        None
    }
}

/// A batch handed to a [`Lane`] and not yet completed. Only the lane that
/// issued it can complete it; dropping one without completing it leaves its
/// buffers the device's until the lane is dropped.
#[derive(Debug)]
#[must_use = "a ticket's outcomes are only known once completed"]
pub struct Ticket {
    /// The lane's number for the batch.
    pub seq: u64,
    /// Jobs of the batch on the device (those pending after submit).
    pub jobs: usize,
}

/// One thread's way to a device: batches start without waiting, so the
/// thread prepares its next batch while the device runs the last (a relay
/// worker's asynchronous rounds). The device runs them in the order
/// submitted; the thread completes them in any order.
///
/// Each batch goes through [`submit`](Lane::submit), then, once
/// [`is_done`](Lane::is_done) says so (or at once, waiting),
/// [`complete`](Lane::complete). The lane decides per batch where it runs:
/// on the device, or on the CPU at once, from the batch's size, the batches
/// it holds and the round trips it measured.
pub trait Lane<K>: Send {
    /// Batches this lane holds in flight at most.
    fn depth(&self) -> usize;

    /// Starts `jobs`. A job decided now (the batch ran on the CPU, or the
    /// device does not take the job) has its outcome set on return; the
    /// ticket, if any, stands for the others.
    ///
    /// # Safety
    /// The buffer and the keys of every job still [`Outcome::Pending`] on
    /// return stay valid, and the caller neither reads nor writes the
    /// buffer, until [`complete`](Lane::complete) returns for the ticket;
    /// and fewer than [`depth`](Lane::depth) tickets are outstanding when
    /// this is called.
    #[allow(unsafe_code)]
    unsafe fn submit(&mut self, jobs: &mut [Job<'_, K>]) -> Option<Ticket>;

    /// Whether the batch of `ticket` is done (never waits).
    fn is_done(&mut self, ticket: &Ticket) -> bool;

    /// Waits for the batch of `ticket`, then writes the verdict of the
    /// batch's `i`-th job into `outcomes[i]` where that is still
    /// [`Outcome::Pending`] (the caller passes the outcomes it saw on
    /// return from submit). An error leaves those outcomes pending and the
    /// jobs' buffers unknown.
    fn complete(&mut self, ticket: Ticket, outcomes: &mut [Outcome]) -> Result<(), String>;
}

/// What a hybrid engine reports about its batches.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineStats {
    /// Per path (`"cpu"`, `"gpu"`): batches and packets it ran.
    pub shares: Vec<(&'static str, u64, u64)>,
    /// Device round trips per batch: (upper bound in µs, count) per bucket,
    /// not cumulative; the last bound is infinite.
    pub round_trip_us: Vec<(f64, u64)>,
    /// Sum of the round trips, µs.
    pub round_trip_sum_us: f64,
    /// Batches of at least this many packets go to the device.
    pub threshold: Option<usize>,
    /// Per device of an engine with several (GPU ordinal): packets it ran.
    pub devices: Vec<(usize, u64)>,
}

/// A shared engine is an engine: contexts of many calls (and worker threads)
/// hold one engine, such as the GPU engine with its device and queues.
impl<E: Engine + ?Sized> Engine for std::sync::Arc<E> {
    type Keys = E::Keys;

    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn prepare_keys(&self, keys: &SessionKeys) -> Result<Self::Keys, Error> {
        (**self).prepare_keys(keys)
    }

    fn transform(&self, jobs: &mut [Job<'_, Self::Keys>]) {
        (**self).transform(jobs)
    }

    fn prefetch_keys(&self, keys: &Self::Keys) {
        (**self).prefetch_keys(keys)
    }

    fn keeps_failed(&self, suite: crate::Suite) -> bool {
        (**self).keeps_failed(suite)
    }

    #[allow(unsafe_code)]
    unsafe fn register_memory(&self, ptr: *mut u8, len: usize, pitch: usize) -> bool {
        // SAFETY: the caller's promise is passed on unchanged.
        unsafe { (**self).register_memory(ptr, len, pitch) }
    }

    fn unregister_memory(&self, ptr: *mut u8) {
        (**self).unregister_memory(ptr)
    }

    fn stats(&self) -> Option<EngineStats> {
        (**self).stats()
    }

    fn lane(&self) -> Option<Box<dyn Lane<Self::Keys>>> {
        (**self).lane()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the announcements it is asked for.
    struct Counting(AtomicUsize);

    impl Engine for Counting {
        type Keys = ();
        fn name(&self) -> &'static str {
            "counting"
        }
        fn prepare_keys(&self, _: &SessionKeys) -> Result<(), Error> {
            Ok(())
        }
        fn transform(&self, _: &mut [Job<'_, ()>]) {}
        fn prefetch_keys(&self, _: &()) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        fn keeps_failed(&self, suite: crate::Suite) -> bool {
            suite.is_aead()
        }
    }

    /// A shared engine passes the hint on (the relay's engines are shared).
    #[test]
    fn a_shared_engine_announces_keys_as_its_engine_does() {
        let e = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        e.prefetch_keys(&());
        Engine::prefetch_keys(&e, &());
        assert_eq!(e.0.load(Ordering::Relaxed), 2);
    }

    /// And answers whether a failed packet is kept as its engine does (the
    /// daemon's GPU engine is shared: it once answered the default).
    #[test]
    fn a_shared_engine_keeps_failed_packets_as_its_engine_does() {
        let e = std::sync::Arc::new(Counting(AtomicUsize::new(0)));
        for suite in crate::Suite::ALL {
            assert_eq!(Engine::keeps_failed(&e, suite), suite.is_aead(), "{suite:?}");
        }
    }
}
