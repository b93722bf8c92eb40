//! Replays every file under `seeds/<target>/` through the target's logic
//! (`srtp_fuzz::TARGETS`), without libFuzzer: `cargo test --manifest-path
//! fuzz/Cargo.toml`. Crash reproducers saved there as `crash-*` keep failing
//! this test until the bug is fixed.

use std::path::Path;

#[test]
fn replay_seeds() {
    replay(&Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds"), true);
}

/// With `SRTP_FUZZ_CORPORA` set to a folder of `<target>/` corpora (the
/// test command unpacks `fuzz/corpora.tar.xz` there), replays those too.
#[test]
fn replay_corpora() {
    match std::env::var_os("SRTP_FUZZ_CORPORA") {
        Some(dir) => replay(Path::new(&dir), false),
        None => println!("SRTP_FUZZ_CORPORA not set: the committed corpora are not replayed here"),
    }
}

fn replay(root: &Path, every_target: bool) {
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, target) in srtp_fuzz::TARGETS {
        let dir = root.join(name);
        if !every_target && !dir.exists() {
            continue;
        }
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("readable seed folder").path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no seeds in {}", dir.display());
        for path in files {
            let data = std::fs::read(&path).expect("readable seed");
            total += 1;
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "{} of {total} inputs failed:\n{}", failures.len(), failures.join("\n"));
    println!("replayed {total} inputs from {}", root.display());
}

#[test]
fn records_split() {
    assert_eq!(srtp_fuzz::records(&[0, 2, 7, 8, 0, 5, 9]), vec![&[7u8, 8][..], &[9][..]]);
    assert_eq!(srtp_fuzz::records(&[4]), vec![&[4u8][..]]);
    let enc = srtp_fuzz::encode(3, &[&[1, 2, 3], &[]]);
    assert_eq!(enc, vec![3, 0, 3, 1, 2, 3, 0, 0]);
    assert_eq!(srtp_fuzz::records(&enc[1..]), vec![&[1u8, 2, 3][..], &[][..]]);
}

/// The generated SRTP/SRTCP seeds carry packets that authenticate under the
/// targets' fixed keys, so the fuzzer starts from the accepting path.
#[test]
fn seeds_authenticate() {
    use srtp::{Context, CpuEngine};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    for (name, rtcp) in [("unprotect_rtp", false), ("unprotect_rtcp", true)] {
        for e in std::fs::read_dir(root.join(name)).expect("seed folder") {
            let path = e.expect("entry").path();
            if !path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("seed-")) {
                continue;
            }
            let data = std::fs::read(&path).expect("seed");
            let mut rx = Context::new(srtp_fuzz::policy(data[0]), CpuEngine::new()).expect("policy");
            let ok = srtp_fuzz::records(&data[1..])
                .into_iter()
                .filter(|p| {
                    let mut out = vec![0u8; p.len()];
                    if rtcp { rx.unprotect_rtcp(p, &mut out) } else { rx.unprotect_rtp(p, &mut out) }.is_ok()
                })
                .count();
            assert!(ok > 0, "no packet of {} authenticates", path.display());
        }
    }
}
