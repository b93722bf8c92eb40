//! The tests of bad command lines: a command that must refuse its input.

use std::process::{Command, Stdio};

/// Runs `cmd` (stdin empty) and wants it to exit with an error, not a
/// panic, whose text holds every one of `want`.
pub fn refused(cmd: &mut Command, want: &[&str]) {
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?} does not run: {e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{cmd:?} succeeded: {err}");
    assert!(!err.contains("panicked"), "{cmd:?} panicked: {err}");
    for w in want {
        assert!(err.contains(w), "{cmd:?}: {w:?} not in {err:?}");
    }
}
