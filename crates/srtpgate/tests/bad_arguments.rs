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

#[test]
fn serve_refuses_load_limits_out_of_range_and_a_bad_lease() {
    refused(&["serve", "--max-load", "1.5"], &["max-load", "1.5", "0.0-1.0"]);
    refused(&["serve", "--max-load=-0.2"], &["max-load", "-0.2"]);
    refused(&["serve", "--max-bandwidth", "lots"], &["max-bandwidth", "lots"]);
    refused(&["serve", "--redis-lease-ms", "50"], &["redis-lease-ms", "50"]);
    refused(&["serve", "--interface", "dmz/not-an-address!also-not"], &["dmz/not-an-address"]);
}

/// A device given as an interface that has no address (a new network
/// namespace's loopback, down) is refused at start, naming the device.
#[test]
fn serve_refuses_a_device_without_an_address() {
    let ns = format!("sgbare{}", std::process::id() % 100_000);
    let made = Command::new("ip").args(["netns", "add", &ns]).output();
    if !made.as_ref().is_ok_and(|o| o.status.success()) {
        let why = made.map(|o| String::from_utf8_lossy(&o.stderr).to_string()).unwrap_or_else(|e| e.to_string());
        srtpgate_testkit::skip("netns", "a device without an address", format!("ip netns add: {why}"));
        return;
    }
    // Removed however the test ends.
    struct Bare(String);
    impl Drop for Bare {
        fn drop(&mut self) {
            let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        }
    }
    let bare = Bare(ns);
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &bare.0, env!("CARGO_BIN_EXE_srtpgate"), "serve", "--interface", "pub/lo"]);
    srtpgate_testkit::cli::refused(&mut cmd, &["interface 'pub/lo'", "device lo has no address"]);
}

/// Recording settings that cannot work are refused at start, each named:
/// rtpengine's `proc` method, an unknown framing, a pattern that leaves
/// the directory or does not expand, a directory that cannot be made.
#[test]
fn serve_refuses_bad_recording_settings() {
    refused(&["serve", "--recording-dir", "/tmp", "--recording-method", "proc"], &["recording-method 'proc'"]);
    refused(&["serve", "--recording-format", "pcapng"], &["recording-format 'pcapng'", "raw or eth"]);
    refused(&["serve", "--recording-pattern", "../%c"], &["recording-pattern '../%c'", "not a relative path"]);
    refused(&["serve", "--recording-pattern", "%c-%q"], &["recording-pattern '%c-%q'", "unknown format '%q'"]);
    refused(&["serve", "--max-metadata-length", "100000"], &["max-metadata-length", "100000"]);
    refused(&["serve", "--recording-dir", "/proc/srtpgate-recordings"], &["recording-dir /proc/srtpgate-recordings"]);
}

/// `--io mem` whose directory cannot be made stops the start with the path
/// and the system's reason (here: under /proc, where nothing can be made).
#[test]
fn serve_refuses_a_mem_dir_it_cannot_make() {
    refused(
        &[
            "serve",
            "--interface",
            "127.0.0.1",
            "--listen-ng",
            "127.0.0.1:0",
            "--io",
            "mem",
            "--mem-dir",
            "/proc/srtpgate-none",
        ],
        &["io mem", "/proc/srtpgate-none"],
    );
}
