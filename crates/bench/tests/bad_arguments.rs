//! Bad command-line input and bad files for `srtpgate-bench`: each exits
//! non-zero with a message that names what is wrong, and never panics.

use std::process::Command;

/// `srtpgate-bench ARGS` exits with an error (not a panic) whose text holds every
/// one of `want`.
fn refused(args: &[&str], want: &[&str]) {
    srtpgate_testkit::cli::refused(Command::new(env!("CARGO_BIN_EXE_srtpgate-bench")).args(args), want);
}

#[test]
fn bench_gpu_refuses_unknown_sections_and_thread_counts() {
    refused(&["engines", "gpu", "--only", "links,teleport"], &["teleport", "links, exact"]);
    refused(&["engines", "gpu", "--threads", "0"], &["--threads"]);
    refused(&["engines", "gpu", "--pitch", "100"], &["--pitch", "188..=8192"]);
    refused(&["engines", "gpu", "--pitch", "256,65536"], &["--pitch", "188..=8192"]);
}

/// `nic` refuses call counts it cannot set up before it asks the relay
/// anything (no relay is running here), and an unknown suite.
#[test]
fn nic_refuses_call_counts_and_suites_it_cannot_run() {
    refused(&["nic", "--calls", "0"], &["calls must be 1..=65536"]);
    refused(&["nic", "--calls", "65537"], &["calls must be 1..=65536"]);
    refused(&["nic", "--calls", "2", "--suite", "ROT13"], &["suite", "ROT13"]);
}

#[test]
fn plot_capacity_refuses_missing_and_malformed_files() {
    let dir = std::env::temp_dir().join(format!("srtpgate-badargs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let out = dir.join("fig");
    let out = out.to_str().expect("utf-8 path");
    let missing = dir.join("nothing.json");
    refused(&["loadgen", "plot-capacity", "--input", missing.to_str().expect("path"), "--out", out], &["nothing.json"]);
    for (name, text, want) in [
        ("notjson.json", "{ results: [", "notjson.json"),
        ("noresults.json", "{\"meta\": {}}", "no \"results\" list"),
        ("nopoints.json", "{\"results\": [{\"config\": \"xdp\"}, 7]}", "no measured points"),
    ] {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        refused(&["loadgen", "plot-capacity", "--input", p.to_str().expect("path"), "--out", out], &[want]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_in_a_rig_that_cannot_be_built_says_so() {
    let dir = std::env::temp_dir().join(format!("srtpgate-badrig-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let rig = dir.join("rig.sh");
    std::fs::write(&rig, "#!/bin/sh\necho \"no namespaces for $2 here\" >&2\nexit 3\n").expect("write rig");
    std::fs::set_permissions(&rig, std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    let out = dir.join("out");
    let sweep = |rig: &std::path::Path, want: &[&str]| {
        let (rig, out) = (rig.to_str().expect("path"), out.to_str().expect("path"));
        let args = ["loadgen", "sweep", "--configs", "srtpgate:cpu:1", "--counts", "2", "--duration", "1"];
        refused(&[&args[..], &["--netns", "badrig", "--rig", rig, "--out", out]].concat(), want);
    };
    sweep(&rig, &["the namespace rig cannot be built", "no namespaces for badrig here"]);
    sweep(&dir.join("absent.sh"), &["absent.sh"]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A relay that exits before it answers ping (here: its NG port is taken)
/// stops the sweep at once with the relay's exit status, long before the
/// start timeout a GPU relay needs.
#[test]
fn sweep_stops_when_its_relay_exits_before_answering() {
    // The first configuration's NG port (9 000); a relay of someone else's
    // there might answer the ping, so without it the test says so and passes.
    let Ok(_taken) = std::net::UdpSocket::bind("127.0.0.1:9000") else {
        srtpgate_testkit::skip(
            "port-9000",
            "sweep_stops_when_its_relay_exits_before_answering",
            "127.0.0.1:9000 is in use: the relay's failure cannot be arranged",
        );
        return;
    };
    let out = std::env::temp_dir().join(format!("srtpgate-sweep-exit-{}", std::process::id()));
    let started = std::time::Instant::now();
    let args = ["loadgen", "sweep", "--configs", "srtpgate:cpu:1", "--counts", "2", "--duration", "1"];
    refused(
        &[&args[..], &["--relay-start-timeout", "100", "--out", out.to_str().expect("path")]].concat(),
        &["listen-ng 127.0.0.1:9000", "srtpgate cpu, 1 worker exited (exit status: 2)", "before it answered ping"],
    );
    assert!(started.elapsed().as_secs() < 60, "the sweep waited {:?} for a relay that had exited", started.elapsed());
    let _ = std::fs::remove_dir_all(&out);
}

/// A daemon named by `SRTPGATE_BIN` that is not there stops the sweep at
/// once with the path and how to mend it.
#[test]
fn sweep_names_a_daemon_that_is_not_there() {
    let out = std::env::temp_dir().join(format!("srtpgate-sweep-nobin-{}", std::process::id()));
    let missing = out.join("no-such-srtpgate");
    srtpgate_testkit::cli::refused(
        Command::new(env!("CARGO_BIN_EXE_srtpgate-bench"))
            .env("SRTPGATE_BIN", &missing)
            .args(["loadgen", "sweep", "--configs", "srtpgate:cpu:1", "--counts", "2", "--duration", "1", "--out"])
            .arg(&out),
        &[missing.to_str().expect("path"), "is not there", "SRTPGATE_BIN"],
    );
    let _ = std::fs::remove_dir_all(&out);
}
