//! Bad command-line input and bad files for the commands that take them:
//! each exits non-zero with a message that names what is wrong, and never
//! panics.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn srtpgate(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_srtpgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run srtpgate");
    let _ = child.stdin.take().expect("stdin").write_all(stdin.as_bytes());
    child.wait_with_output().expect("srtpgate")
}

/// Exits with an error (not a panic) whose text holds every one of `want`.
fn refused(args: &[&str], want: &[&str]) {
    let out = srtpgate(args, "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded: {err}");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: {w:?} not in {err:?}");
    }
}

#[test]
fn packet_refuses_an_unknown_gpu_mode() {
    let key = "WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz";
    let args = ["packet", "protect", "--suite", "AES_CM_128_HMAC_SHA1_80", "--key", key, "--engine", "gpu"];
    refused(&[&args[..], &["--gpu-mode", "sideways"]].concat(), &["sideways"]);
}

#[test]
fn serve_refuses_a_bad_gpu_threshold() {
    refused(&["serve", "--engine", "gpu", "--gpu-min-batch", "lots"], &["gpu-min-batch", "lots"]);
}
