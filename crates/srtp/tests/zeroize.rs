//! Key material is zeroized when it is dropped, checked by looking: this
//! test binary's global allocator scans every heap block freed while it is
//! armed for the bytes of a master key, its salt and the session keys
//! derived from them (RFC 3711 B.3's key derivation vector, so the session
//! keys are known), and counts the blocks that still hold one. A control
//! shows that the scan finds a key left in a plain `Vec`.
//!
//! It covers the Rust heap (the master key's copies, the derived keys, the
//! AES key schedules, the portable engine's tables and HMAC state); memory
//! that aws-lc allocates itself goes through its own allocator, which
//! cleanses on free. One test in this binary, so nothing else allocates
//! while the scan is armed.

use srtp::{Context, CpuEngine, Engine, MasterKey, Policy, PortableEngine, Suite};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

const MASTER_KEY: [u8; 16] =
    [0xE1, 0xF9, 0x7A, 0x0D, 0x3E, 0x01, 0x8B, 0xE0, 0xD6, 0x4F, 0xA3, 0x2C, 0x06, 0xDE, 0x41, 0x39];
const MASTER_SALT: [u8; 14] = [0x0E, 0xC6, 0x75, 0xAD, 0x49, 0x8A, 0xFE, 0xEB, 0xB6, 0x96, 0x0B, 0x3A, 0xAB, 0xE6];
/// The SRTP session keys RFC 3711 B.3 derives from them (label 0, 1, 2).
const SESSION_ENC: [u8; 16] =
    [0xC6, 0x1E, 0x7A, 0x93, 0x74, 0x4F, 0x39, 0xEE, 0x10, 0x73, 0x4A, 0xFE, 0x3F, 0xF7, 0xA0, 0x87];
const SESSION_AUTH: [u8; 20] = [
    0xCE, 0xBE, 0x32, 0x1F, 0x6F, 0xF7, 0x71, 0x6B, 0x6F, 0xD4, 0xAB, 0x49, 0xAF, 0x25, 0x6A, 0x15, 0x6D, 0x38, 0xBA,
    0xA4,
];
const SESSION_SALT: [u8; 14] = [0x30, 0xCB, 0xBC, 0x08, 0x86, 0x3D, 0x8C, 0x85, 0xD4, 0x9D, 0xB3, 0x4A, 0x9A, 0xE1];

static ARMED: AtomicBool = AtomicBool::new(false);
static FOUND: AtomicUsize = AtomicUsize::new(0);
static SCANNED: AtomicUsize = AtomicUsize::new(0);

struct Watch;

fn holds(block: &[u8], secret: &[u8]) -> bool {
    block.windows(secret.len()).any(|w| w == secret)
}

unsafe impl GlobalAlloc for Watch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ARMED.load(SeqCst) {
            // SAFETY: the block is still ours until System.dealloc below.
            let block = unsafe { std::slice::from_raw_parts(ptr, layout.size()) };
            SCANNED.fetch_add(1, SeqCst);
            let secrets: [&[u8]; 5] = [&MASTER_KEY, &MASTER_SALT, &SESSION_ENC, &SESSION_AUTH, &SESSION_SALT];
            if secrets.iter().any(|s| holds(block, s)) {
                FOUND.fetch_add(1, SeqCst);
            }
        }
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static A: Watch = Watch;

fn rtp(seq: u16) -> Vec<u8> {
    srtpgate_testkit::packets::Rtp::new(0xcafe_babe, seq).ts(1).packet(&[0x42; 160])
}

/// A sender and a receiver under the key, a few packets each way, then
/// everything dropped.
fn use_and_drop<E: Engine + Clone>(engine: E) {
    let suite = Suite::AES_CM_128_HMAC_SHA1_80;
    let key = MasterKey::new(suite, &MASTER_KEY, &MASTER_SALT).unwrap();
    let mut tx = Context::new(Policy::new(suite, key.clone()), engine.clone()).unwrap();
    let mut rx = Context::new(Policy::new(suite, key), engine).unwrap();
    let (mut out, mut back) = (vec![0u8; 256], vec![0u8; 256]);
    for seq in 0..20 {
        let n = tx.protect_rtp(&rtp(seq), &mut out).unwrap();
        let m = rx.unprotect_rtp(&out[..n], &mut back).unwrap();
        assert_eq!(back[..m], rtp(seq)[..]);
    }
    let parsed = MasterKey::from_sdes(suite, "inline:4fl6DT4Bi+DWT6MsBt5BOQ7Gda1Jiv7rtpYLOqvm|2^20|1:4").unwrap();
    drop(parsed);
}

#[test]
fn key_material_is_zeroized_on_drop() {
    // The control: a key in a plain Vec is found when it is freed, and the
    // same in a Zeroizing one is not.
    ARMED.store(true, SeqCst);
    let plain = std::hint::black_box(MASTER_KEY.to_vec());
    drop(plain);
    ARMED.store(false, SeqCst);
    assert_eq!(FOUND.swap(0, SeqCst), 1, "the scan must see a key left in freed memory");
    ARMED.store(true, SeqCst);
    let wiped = std::hint::black_box(zeroize::Zeroizing::new(MASTER_KEY.to_vec()));
    drop(wiped);
    ARMED.store(false, SeqCst);
    assert_eq!(FOUND.swap(0, SeqCst), 0);

    SCANNED.store(0, SeqCst);
    ARMED.store(true, SeqCst);
    use_and_drop(CpuEngine::new());
    use_and_drop(PortableEngine::new());
    ARMED.store(false, SeqCst);
    let found = FOUND.load(SeqCst);
    let scanned = SCANNED.load(SeqCst);
    assert!(scanned > 10, "the contexts freed heap blocks ({scanned})");
    assert_eq!(found, 0, "{found} of {scanned} freed heap blocks still held key material");
}
