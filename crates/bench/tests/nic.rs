//! `srtpgate serve --io mem` under `srtpgate-bench nic`: calls set up over
//! NG, their packets through the simulated NIC of two workers, every frame
//! the workers transmit checked (headers, checksums, decrypted under the
//! receiving leg's key, the payload its sender made) and nothing lost.

use srtpgate_testkit::daemon::Daemon;
use std::process::Command;

#[test]
fn the_simulated_nic_relays_every_packet_intact() {
    let dir = std::env::temp_dir().join(format!("srtpgate-nic-test-{}", std::process::id()));
    let d = Daemon::start("nic", 1, &["--io", "mem", "--mem-dir", dir.to_str().expect("path"), "--workers", "2"]);
    let json = std::env::temp_dir().join(format!("srtpgate-nic-{}.json", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_srtpgate-bench"))
        .args(["nic", "--ng", &d.ng.to_string(), "--mem-dir", dir.to_str().expect("path")])
        .args(["--calls", "20", "--duration", "2", "--generators", "1", "--checkers", "1", "--json"])
        .arg(&json)
        .output()
        .expect("srtpgate-bench runs");
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "srtpgate-bench nic failed:\n{text}");
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).expect("result")).expect("JSON");
    let _ = std::fs::remove_file(&json);
    // 20 calls (a test slot has 100 ports), 2 legs, 50 packets/s, 2 s.
    let made = r["packets_made"].as_u64().expect("made");
    assert!((3_500..=4_500).contains(&made), "{made} packets made:\n{text}");
    assert_eq!(r["packets_relayed"].as_u64(), Some(made), "every packet relayed and checked:\n{text}");
    for k in ["bad_frames", "bad_payloads", "generator_dropped", "nic_no_frame"] {
        assert_eq!(r[k].as_u64(), Some(0), "{k}:\n{text}");
    }
    assert_eq!(r["workers"].as_u64(), Some(2), "both workers' threads measured");
    // The relay counted what the NIC carried, and relayed nothing by the kernel.
    let m = d.metrics();
    let sent = m
        .lines()
        .find(|l| l.starts_with("srtpgate_packets_sent_total "))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(sent >= made as f64, "the relay sent {sent} of at least {made}");
    drop(d);
    let _ = std::fs::remove_dir_all(&dir);
}
