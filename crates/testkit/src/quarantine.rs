//! A global allocator for tests that look for secrets left in freed heap
//! memory, where the secrets are only known after the fact (keys a relay
//! chose, keys a handshake derived), so blocks cannot be judged as they are
//! freed. While a thread has armed it ([`arm`]), that thread's frees are not
//! passed on: each block is kept as it was at the free (a quarantine: not
//! reused, so its bytes stay) until [`release`] scans them all for the
//! secrets and frees them. Other threads, and the armed thread before and
//! after, pass straight through to the system allocator, so tests running
//! beside it are not touched and arming, quarantining and releasing never
//! race. Install it with
//! `#[global_allocator] static A: srtpgate_testkit::quarantine::Quarantine = srtpgate_testkit::quarantine::Quarantine;`
//! and hold [`one_at_a_time`] across arm and release.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Mutex, MutexGuard};

/// Freed blocks held while armed: (address, size, alignment).
const SLOTS: usize = 1 << 18;
thread_local! {
    /// This thread's frees are quarantined (const-initialised, no
    /// destructor: usable from within the allocator).
    static ARMED: Cell<bool> = const { Cell::new(false) };
}
static NEXT: AtomicUsize = AtomicUsize::new(0);
/// Frees past [`SLOTS`] while armed (freed at once, unscanned).
static OVERFLOW: AtomicUsize = AtomicUsize::new(0);
static HELD: [[AtomicUsize; 3]; SLOTS] = [const { [const { AtomicUsize::new(0) }; 3] }; SLOTS];
static SCAN: Mutex<()> = Mutex::new(());

/// See the module's documentation.
pub struct Quarantine;

// SAFETY: allocation is the system allocator's; a quarantined block is
// freed later with the layout it was freed with, once, by `release`.
unsafe impl GlobalAlloc for Quarantine {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ARMED.try_with(Cell::get).unwrap_or(false) {
            let i = NEXT.fetch_add(1, SeqCst);
            if let Some(slot) = HELD.get(i) {
                slot[0].store(ptr as usize, SeqCst);
                slot[1].store(layout.size(), SeqCst);
                slot[2].store(layout.align(), SeqCst);
                return;
            }
            OVERFLOW.fetch_add(1, SeqCst);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Held for a scan from [`arm`] to [`release`]: one scan at a time in a
/// binary.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    SCAN.lock().unwrap_or_else(|e| e.into_inner())
}

/// Quarantines this thread's frees from now on.
pub fn arm() {
    ARMED.with(|a| a.set(true));
}

/// What [`release`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    /// Blocks freed while armed and scanned.
    pub blocks: usize,
    /// Of those, blocks that held one of the secrets.
    pub found: usize,
    /// Blocks freed while armed beyond what the quarantine holds (freed at
    /// once, unscanned): a test should require none.
    pub overflow: usize,
}

/// Frees `v`'s block into the quarantine directly, past whatever allocator
/// wraps [`Quarantine`] as the global one (a wipe on free): a scan's control,
/// a block that must be found. Arm first.
pub fn free_unwiped(v: Vec<u8>) {
    let mut v = std::mem::ManuallyDrop::new(v);
    if v.capacity() == 0 {
        return;
    }
    let layout = Layout::array::<u8>(v.capacity()).expect("a Vec's layout");
    // SAFETY: the block is the Vec's, allocated by the global allocator,
    // which hands allocation to `Quarantine` (the system allocator); the Vec
    // is not dropped, so it is freed once, here.
    unsafe { Quarantine.dealloc(v.as_mut_ptr(), layout) }
}

/// Disarms, then scans every quarantined block for `secrets` (empty ones
/// ignored) and frees it.
pub fn release(secrets: &[&[u8]]) -> Scan {
    ARMED.with(|a| a.set(false));
    let n = NEXT.swap(0, SeqCst).min(SLOTS);
    let mut found = 0;
    for slot in HELD.iter().take(n) {
        let (ptr, size, align) = (slot[0].load(SeqCst), slot[1].load(SeqCst), slot[2].load(SeqCst));
        // SAFETY: the block was handed to dealloc with this layout and has
        // not been freed or reused since; it is freed here, once.
        let block = unsafe { std::slice::from_raw_parts(ptr as *const u8, size) };
        if secrets.iter().any(|s| !s.is_empty() && block.windows(s.len()).any(|w| w == *s)) {
            found += 1;
        }
        unsafe { System.dealloc(ptr as *mut u8, Layout::from_size_align_unchecked(size, align)) };
    }
    Scan { blocks: n, found, overflow: OVERFLOW.swap(0, SeqCst) }
}
