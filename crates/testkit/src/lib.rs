//! What the workspace's tests share across crates: skipping a test that
//! needs something this machine lacks (a GPU, Redis, io_uring, network
//! namespaces, …) so that the skip is seen, and failing instead where the
//! test command says the machine has it.
//!
//! libtest captures what a test prints with `println!`/`eprintln!` and
//! shows it only when the test fails, so a skip printed that way passes
//! unseen. [`skip`] writes to the process's standard error directly, which
//! libtest does not capture, and, when `SRTPGATE_SKIP_LOG` names a file,
//! appends the line there too (`scripts/test.sh` lists that file at its
//! end). `SRTPGATE_REQUIRE` is a comma-separated list of needs (or `all`)
//! that the machine is known to have: a test that would skip for one of
//! them fails instead.
//!
//! Also the counting allocator of the tests that prove a path allocates
//! nothing ([`CountingAllocator`]), the quarantine of the tests that look
//! for keys left in freed memory ([`quarantine`]), the RTP and RTCP packets
//! the tests send ([`packets`]), and (feature `daemon`)
//! the driver of `srtpgate serve` as a process with its NG client, SDP
//! builders and SRTP endpoints ([`daemon`]), and a Redis server of a
//! test's own ([`redis`]); (feature `engine`) an engine whose batches
//! complete later, for the asynchronous path without a device
//! ([`deferred`]).

pub mod cli;
#[cfg(feature = "daemon")]
pub mod daemon;
#[cfg(feature = "engine")]
pub mod deferred;
#[cfg(feature = "ng")]
pub mod ng;
pub mod packets;
pub mod quarantine;
#[cfg(feature = "daemon")]
pub mod redis;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Display;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The variable naming the needs that must not be skipped.
pub const REQUIRE: &str = "SRTPGATE_REQUIRE";
/// The variable naming a file every skip is appended to.
pub const SKIP_LOG: &str = "SRTPGATE_SKIP_LOG";

/// Whether `SRTPGATE_REQUIRE` names `need` (or `all`).
pub fn required(need: &str) -> bool {
    std::env::var(REQUIRE).is_ok_and(|list| list.split(',').map(str::trim).any(|n| n == need || n == "all"))
}

/// Skips what a test was about to do because `need` is missing, for
/// `reason`: says so on standard error (and in `SRTPGATE_SKIP_LOG`), or
/// panics when `SRTPGATE_REQUIRE` names `need`. `what` names the test or
/// its part. The caller returns (or goes on without the part) afterwards.
#[track_caller]
pub fn skip(need: &str, what: &str, reason: impl Display) {
    if required(need) {
        panic!("{what}: needs {need}, which {REQUIRE} requires, but: {reason}");
    }
    let line = format!("SKIPPED ({need}) {what}: {reason}\n");
    // Not `eprintln!`: libtest captures it.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os(SKIP_LOG) {
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// A global allocator for a test binary that proves a path allocates
/// nothing: it forwards every call to the system allocator and counts each
/// thread's allocations and reallocations ([`allocations`]), also into a
/// shared counter where a thread asks ([`count_allocations_into`], for a
/// thread whose count another reads). Install it with
/// `#[global_allocator] static A: srtpgate_testkit::CountingAllocator = srtpgate_testkit::CountingAllocator;`.
pub struct CountingAllocator;

thread_local! {
    // Const-initialised, without destructors: usable from the allocator.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static SHARED: Cell<Option<&'static AtomicU64>> = const { Cell::new(None) };
}

fn count() {
    // `try_with`: a thread's locals are gone while it exits, and it may
    // still allocate then.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    if let Ok(Some(shared)) = SHARED.try_with(Cell::get) {
        shared.fetch_add(1, Relaxed);
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counters are const-initialised thread-locals and a static atomic (no
// allocation, no reentry).
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        count();
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}

/// Allocations (and reallocations) this thread has made so far, where the
/// binary's global allocator is a [`CountingAllocator`].
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Adds this thread's allocations from now on to `counter` too.
pub fn count_allocations_into(counter: &'static AtomicU64) {
    SHARED.with(|s| s.set(Some(counter)));
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the environment is process-wide, and tests run in threads.
    #[test]
    fn a_required_need_fails_and_another_skips_into_the_log() {
        let log = std::env::temp_dir().join(format!("testkit-skips-{}", std::process::id()));
        let _ = std::fs::remove_file(&log);
        std::env::set_var(SKIP_LOG, &log);
        std::env::set_var(REQUIRE, "redis, uring");
        assert!(required("uring") && required("redis") && !required("gpu"));
        skip("gpu", "a test", "no GPU here");
        let failed = std::panic::catch_unwind(|| skip("uring", "another test", "probe failed"));
        let text = std::fs::read_to_string(&log).expect("the skip log");
        assert_eq!(text, "SKIPPED (gpu) a test: no GPU here\n");
        let msg = failed.expect_err("a required need panics");
        let msg = msg.downcast_ref::<String>().expect("a message");
        assert!(msg.contains("needs uring") && msg.contains("probe failed"), "{msg}");
        std::env::set_var(REQUIRE, "all");
        assert!(required("gpu"));
        std::env::remove_var(REQUIRE);
        std::env::remove_var(SKIP_LOG);
        let _ = std::fs::remove_file(&log);
    }
}
