//! DTLS-SRTP keys are gone from freed memory once a leg is dropped, checked
//! by looking: two legs (the relay's and a browser's) run a full DTLS 1.2
//! handshake in memory, each exports its SRTP master keys and salts, both
//! are dropped with the keys, and no heap block freed meanwhile may hold an
//! exported key or salt. The test kit's [`Quarantine`] keeps every block
//! this test's thread frees until the keys are known and the scan runs.
//!
//! srtpgate's copies of the keys ([`SrtpKeys`]) zeroize themselves; dimpl's
//! do not (it hands the exported material over in a plain `Vec` and keeps
//! the secrets it came from in plain buffers: 9 of the 246 blocks a
//! handshake freed held an exported key or salt when this test ran on the
//! system allocator). So the daemon's global allocator zeroes every block it
//! frees (1Password's `zeroizing-alloc`, `ZeroAlloc`), and this test runs
//! on the same wrapper around the quarantine. What aws-lc allocates itself
//! goes through its own allocator, which cleanses on free.

use crate::dtls::{DtlsLeg, Fingerprint, Identity, SrtpKeys};
use srtpgate_testkit::quarantine::{self, Quarantine};
use std::time::Instant;
use zeroizing_alloc::ZeroAlloc;

/// The daemon's allocator (`crates/srtpgate/src/main.rs`) around the
/// quarantine.
#[global_allocator]
static ALLOCATOR: ZeroAlloc<Quarantine> = ZeroAlloc(Quarantine);

fn fingerprint(id: &Identity) -> Fingerprint {
    Fingerprint::parse(id.fingerprint()).expect("fingerprint")
}

/// A full handshake between a relay leg (passive: a browser's `actpass`
/// offer) and the browser's; the keys each exported.
fn handshake(relay_id: &Identity, browser_id: &Identity) -> (SrtpKeys, SrtpKeys) {
    let now = Instant::now();
    let mut relay = DtlsLeg::new(relay_id, false, fingerprint(browser_id), true, now).expect("relay leg");
    let mut browser = DtlsLeg::new(browser_id, true, fingerprint(relay_id), true, now).expect("browser leg");
    let mut to_browser = relay.start(now).expect("start").send;
    let mut to_relay = browser.start(now).expect("start").send;
    let (mut relay_keys, mut browser_keys) = (None, None);
    for _ in 0..20 {
        for d in std::mem::take(&mut to_browser) {
            let step = browser.handle(&d, now).expect("browser");
            to_relay.extend(step.send);
            browser_keys = browser_keys.or(step.keys);
        }
        for d in std::mem::take(&mut to_relay) {
            let step = relay.handle(&d, now).expect("relay");
            to_browser.extend(step.send);
            relay_keys = relay_keys.or(step.keys);
        }
        if let (Some(_), Some(_)) = (&relay_keys, &browser_keys) {
            break;
        }
    }
    (relay_keys.expect("the relay exported keys"), browser_keys.expect("the browser exported keys"))
}

#[test]
fn dtls_exported_keys_are_zeroized_when_the_legs_are_dropped() {
    let _one = quarantine::one_at_a_time();
    let relay_id = Identity::generate().expect("certificate");
    let browser_id = Identity::generate().expect("certificate");
    // The controls: a key freed without the wipe is found; one freed
    // through the global allocator is not.
    quarantine::arm();
    quarantine::free_unwiped(std::hint::black_box(b"sixteen byte key".to_vec()));
    assert_eq!(quarantine::release(&[b"sixteen byte key"]).found, 1, "the scan must see a key left in freed memory");
    quarantine::arm();
    drop(std::hint::black_box(b"sixteen byte key".to_vec()));
    assert_eq!(quarantine::release(&[b"sixteen byte key"]).found, 0, "the global allocator wipes what it frees");

    quarantine::arm();
    let (relay, browser) = handshake(&relay_id, &browser_id);
    // The keys, on the stack, before their owners go.
    let (mut local, mut remote) = ([0u8; 44], [0u8; 44]);
    let n = relay.local.len();
    local[..n].copy_from_slice(&relay.local);
    remote[..n].copy_from_slice(&relay.remote);
    assert_eq!(&browser.remote[..], &local[..n], "the legs agree on the keys");
    assert_eq!(&browser.local[..], &remote[..n]);
    drop((relay, browser));
    let kl = if n == 44 { 32 } else { 16 }; // 32 + 12 (AES-256-GCM), 16 + 12 or 16 + 14
    let secrets: [&[u8]; 4] = [&local[..kl], &local[kl..n], &remote[..kl], &remote[kl..n]];
    let scan = quarantine::release(&secrets);
    assert_eq!(scan.overflow, 0, "the quarantine overflowed");
    assert!(scan.blocks > 50, "the handshake freed heap blocks ({})", scan.blocks);
    assert_eq!(scan.found, 0, "{} of {} freed heap blocks still held an exported key or salt", scan.found, scan.blocks);
}
