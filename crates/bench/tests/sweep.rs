//! `srtpgate loadgen sweep` end to end: a short sweep (a few calls, a second
//! each) against `srtpgate serve`, which the sweep starts and stops itself.

use std::process::Command;

#[test]
fn short_sweep_writes_results_and_figures() {
    let out = std::env::temp_dir().join(format!("srtpgate-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let status = Command::new(env!("CARGO_BIN_EXE_srtpgate-bench"))
        .args(["loadgen", "sweep", "--configs", "srtpgate:cpu:1", "--counts", "2,4", "--duration", "1"])
        .args(["--histogram-at", "4", "--out"])
        .arg(&out)
        .status()
        .expect("run srtpgate loadgen sweep");
    assert!(status.success(), "sweep exited with {status}");
    let text = std::fs::read_to_string(out.join("sweep.json")).expect("sweep.json written");
    let v: serde_json::Value = serde_json::from_str(&text).expect("sweep.json is JSON");
    let configs = v["configs"].as_array().expect("configs");
    assert_eq!(configs.len(), 1);
    assert_eq!(configs[0]["name"], "srtpgate cpu, 1 worker");
    let points = configs[0]["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "{points:?}");
    for (p, calls) in points.iter().zip([2, 4]) {
        assert_eq!(p["calls"], calls);
        assert_eq!(p["setup_errors"], 0);
        // 1 s at 50 packets/s per leg, two legs a call: about 100 packets a call.
        let sent = p["packets_sent"].as_u64().expect("packets_sent");
        assert!(sent >= 60 * calls, "only {sent} packets sent for {calls} calls");
        assert_eq!(p["packets_received"], p["packets_sent"], "loss on loopback: {p}");
        assert_eq!(p["auth_failures"], 0);
        let p50 = p["delay_us"]["p50"].as_u64().expect("p50");
        let p99 = p["delay_us"]["p99"].as_u64().expect("p99");
        assert!(p50 <= p99, "quantiles out of order");
        let hist: u64 =
            p["delay_us"]["histogram_10us"].as_array().expect("histogram").iter().filter_map(|c| c.as_u64()).sum();
        assert!(hist > 0 && hist <= p["delay_us"]["count"].as_u64().expect("count"));
    }
    // Which counts met the delay bound depends on the machine: only its shape is checked.
    assert!(matches!(configs[0]["max_calls_within_bounds"].as_u64(), None | Some(2) | Some(4)));
    for f in ["delay-all.png", "delay-all.svg", "histogram-4.png", "cpu.svg"] {
        let len = std::fs::metadata(out.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")).len();
        assert!(len > 1000, "{f} is only {len} bytes");
    }
    let svg = std::fs::read_to_string(out.join("delay-all.svg")).expect("svg");
    assert!(svg.contains("concurrent calls"), "axis label missing");
    let _ = std::fs::remove_dir_all(&out);
}
