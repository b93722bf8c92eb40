//! The soak (issue 15, docs/RELIABILITY.md): SRTP calls start and end all
//! the time through `srtpgate serve` (`loadgen --call-duration`), and the
//! relay is sampled every few seconds: resident memory, open files, calls,
//! the relay's p99 delay over the interval. At the end nothing may be lost
//! on loopback, the counters must add up (every packet received was relayed
//! or dropped for a reason), memory must not grow after the warm-up, and
//! once the calls are gone the relay holds the same files as before.
//!
//! The test command runs it for 2 minutes with 200 calls; the long run is
//! the same test with the environment set (`bench/soak/run.sh`):
//! SRTPGATE_SOAK_SECONDS, SRTPGATE_SOAK_CALLS, SRTPGATE_SOAK_WORKERS,
//! SRTPGATE_SOAK_THREADS, SRTPGATE_SOAK_CALL_SECONDS, SRTPGATE_SOAK_PORT_MIN,
//! SRTPGATE_SOAK_PORT_MAX, SRTPGATE_SOAK_PTIME (ms, default 20) and
//! SRTPGATE_SOAK_CSV (a file for the samples).

use srtpgate_testkit::daemon::*;
use std::io::Write;
use std::time::{Duration, Instant};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// The relay's delay histogram: (upper bound in seconds, cumulative count).
fn delay_buckets(metrics: &str) -> Vec<(f64, f64)> {
    metrics
        .lines()
        .filter_map(|l| l.strip_prefix("srtpgate_relay_delay_seconds_bucket{le=\""))
        .filter_map(|l| {
            let (le, rest) = l.split_once("\"} ")?;
            let le = if le == "+Inf" { f64::INFINITY } else { le.parse().ok()? };
            Some((le, rest.trim().parse().ok()?))
        })
        .collect()
}

/// The p99 (a bucket's upper bound, µs) of what two histograms differ by.
fn interval_p99_us(before: &[(f64, f64)], after: &[(f64, f64)]) -> Option<f64> {
    let diff: Vec<(f64, f64)> =
        after.iter().map(|&(le, c)| (le, c - before.iter().find(|b| b.0 == le).map_or(0.0, |b| b.1))).collect();
    let total = diff.last()?.1;
    if total <= 0.0 {
        return None;
    }
    diff.iter().find(|(_, c)| *c >= 0.99 * total).map(|(le, _)| le * 1e6)
}

/// Datagrams the kernel dropped for full receive buffers, on every UDP
/// socket of the host (`RcvbufErrors` of /proc/net/snmp and snmp6).
fn host_receive_buffer_drops() -> u64 {
    let v4 = std::fs::read_to_string("/proc/net/snmp").unwrap_or_default();
    let mut lines = v4.lines().filter(|l| l.starts_with("Udp: "));
    let v4 = match (lines.next(), lines.next()) {
        (Some(names), Some(values)) => names
            .split_whitespace()
            .zip(values.split_whitespace())
            .find(|(n, _)| *n == "RcvbufErrors")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0),
        _ => 0,
    };
    let v6 = std::fs::read_to_string("/proc/net/snmp6").unwrap_or_default();
    let v6: u64 =
        v6.lines().find_map(|l| l.strip_prefix("Udp6RcvbufErrors")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    v4 + v6
}

struct Sample {
    t: f64,
    rss_kb: u64,
    files: usize,
    calls: f64,
    p99_us: Option<f64>,
}

#[test]
fn calls_come_and_go_and_nothing_leaks() {
    let seconds = env("SRTPGATE_SOAK_SECONDS", 120);
    let calls = env("SRTPGATE_SOAK_CALLS", 200);
    let call_seconds = env("SRTPGATE_SOAK_CALL_SECONDS", 4);
    let workers = env("SRTPGATE_SOAK_WORKERS", 1).to_string();
    let threads = env("SRTPGATE_SOAK_THREADS", 1).to_string();
    let ptime = env("SRTPGATE_SOAK_PTIME", 20);
    // Its own port range: 4 ports a call, and calls overlap while they churn.
    let (lo, hi) =
        (env("SRTPGATE_SOAK_PORT_MIN", 40_000).to_string(), env("SRTPGATE_SOAK_PORT_MAX", 49_999).to_string());
    let d = Daemon::start("soak", 0, &["--workers", &workers, "--port-min", &lo, "--port-max", &hi]);
    let pid = d.pid();
    // The files it holds with no call (after start-up's own come and go).
    std::thread::sleep(Duration::from_secs(1));
    let files_before = open_files(pid);
    let json = std::env::temp_dir().join(format!("srtpgate-soak-{}.json", std::process::id()));
    let mut lg = std::process::Command::new(env!("CARGO_BIN_EXE_srtpgate-bench"))
        .args(["loadgen", "--ng", &d.ng.to_string(), "--calls", &calls.to_string()])
        .args(["--duration", &seconds.to_string(), "--call-duration", &call_seconds.to_string()])
        .args(["--ramp", "2", "--threads", &threads, "--ptime", &ptime.to_string(), "--quiet", "--json"])
        .arg(&json)
        .spawn()
        .expect("loadgen starts");
    let start = Instant::now();
    let host_drops_before = host_receive_buffer_drops();
    let every = Duration::from_secs(if seconds > 600 { 30 } else { 5 });
    let mut samples: Vec<Sample> = Vec::new();
    // Samples go to the CSV as they are taken, so that a run cut short
    // leaves what it had.
    let mut csv = std::env::var("SRTPGATE_SOAK_CSV").ok().map(|path| {
        let mut f = std::fs::File::create(path).expect("csv");
        writeln!(f, "seconds,rss_kb,open_files,calls,relay_p99_us").unwrap();
        f
    });
    let mut last = delay_buckets(&d.metrics());
    loop {
        std::thread::sleep(every);
        if lg.try_wait().expect("loadgen").is_some() {
            break;
        }
        let m = d.metrics();
        let now = delay_buckets(&m);
        samples.push(Sample {
            t: start.elapsed().as_secs_f64(),
            rss_kb: d.rss_kb(),
            files: open_files(pid),
            calls: metric(&m, "sessions").unwrap_or(0.0),
            p99_us: interval_p99_us(&last, &now),
        });
        if let (Some(f), Some(s)) = (csv.as_mut(), samples.last()) {
            let p99 = s.p99_us.map(|p| format!("{p:.0}")).unwrap_or_default();
            writeln!(f, "{:.1},{},{},{},{p99}", s.t, s.rss_kb, s.files, s.calls).unwrap();
            f.flush().unwrap();
        }
        last = now;
    }
    assert!(lg.wait().expect("loadgen").success(), "loadgen failed");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    for s in &samples {
        eprintln!(
            "soak: {:>6.1} s  RSS {:>7} KB  files {:>5}  calls {:>5}  p99 {:?} µs",
            s.t, s.rss_kb, s.files, s.calls, s.p99_us
        );
    }
    eprintln!("soak: loadgen {r}");
    // Where anything lost was lost: the kernel's receive-buffer drops on the
    // load generator's sockets, and on every other socket of the host (the
    // relay's, on a machine that runs nothing else).
    let host_drops = host_receive_buffer_drops() - host_drops_before;
    let lg_drops = r["receive_buffer_drops"].as_u64().unwrap_or(0);
    eprintln!(
        "soak: receive-buffer drops: {lg_drops} at the load generator, {} elsewhere on the host",
        host_drops.saturating_sub(lg_drops)
    );
    // Nothing lost on loopback, every call set up and torn down.
    let attempts = r["call_attempts"].as_u64().unwrap();
    assert!(attempts as f64 >= 0.8 * (calls * seconds / call_seconds) as f64, "few calls came and went: {r}");
    assert_eq!(r["setup_errors"], 0, "{r}");
    assert_eq!(r["delete_errors"], 0, "{r}");
    assert_eq!(
        r["lost"],
        0,
        "receive-buffer drops: {lg_drops} at the load generator, {} elsewhere; {r}",
        host_drops.saturating_sub(lg_drops)
    );
    assert_eq!(r["auth_failures"], 0, "{r}");
    // The calls are gone, and with them their ports and files.
    let deadline = Instant::now() + Duration::from_secs(5);
    while (!d.list().is_empty() || open_files(pid) > files_before) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(d.list().is_empty(), "calls left: {:?}", d.list());
    let files_after = open_files(pid);
    assert!(files_after <= files_before, "open files: {files_before} before the calls, {files_after} after");
    let m = d.metrics();
    assert_eq!(metric(&m, "port_pairs_in_use"), Some(0.0));
    // Every packet received was relayed or dropped for a reason.
    let received = metric(&m, "packets_received_total").unwrap_or(0.0);
    let sent = metric(&m, "packets_sent_total").unwrap_or(0.0);
    let dropped = metric(&m, "packets_dropped_total").unwrap_or(0.0);
    assert!(received > (calls * seconds * 1000 / ptime) as f64, "{received} packets received");
    assert_eq!(received, sent + dropped, "received {received} = relayed {sent} + dropped {dropped}");
    // Memory flat after the warm-up: the last third of the samples no
    // higher than the middle third, within 5 % (and 2 MB).
    let warm: Vec<&Sample> = samples.iter().filter(|s| s.t >= seconds as f64 / 4.0).collect();
    assert!(warm.len() >= 6, "{} samples after the warm-up", warm.len());
    let mean = |v: &[&Sample]| v.iter().map(|s| s.rss_kb as f64).sum::<f64>() / v.len() as f64;
    let third = warm.len() / 3;
    let (middle, end) = (mean(&warm[third..2 * third]), mean(&warm[warm.len() - third..]));
    assert!(end <= middle * 1.05 + 2048.0, "resident memory grew: {middle:.0} KB, then {end:.0} KB");
}
