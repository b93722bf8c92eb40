//! Bad command-line input and bad files for the commands that take them:
//! each exits non-zero with a message that names what is wrong, and never
//! panics.

use std::process::Command;

/// `srtpgate ARGS` exits with an error (not a panic) whose text holds every
/// one of `want`.
fn refused(args: &[&str], want: &[&str]) {
    srtpgate_testkit::cli::refused(Command::new(env!("CARGO_BIN_EXE_srtpgate")).args(args), want);
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
