//! The relay in its own network namespace, the load generator in another,
//! joined by a veth pair (`bench/netns/rig.sh`, addresses from the
//! benchmarking range 198.18.0.0/15): SRTP calls re-keyed both ways through
//! each I/O backend, every packet decrypted by its endpoint with its own
//! keys, none lost. Skips, saying why, where the rig cannot be built (not
//! root, no iproute2, no namespaces).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rig, torn down on drop (also when a test fails).
struct Rig {
    name: String,
    relay: Option<Child>,
}

impl Rig {
    fn up(name: &str) -> Result<Rig, String> {
        let script = repo().join("bench/netns/rig.sh");
        let check = Command::new(&script).arg("check").arg(name).output().map_err(|e| e.to_string())?;
        if !check.status.success() {
            return Err(String::from_utf8_lossy(&check.stdout).trim().to_string());
        }
        let up = Command::new(&script).arg("up").arg(name).output().map_err(|e| e.to_string())?;
        if !up.status.success() {
            return Err(format!("rig up failed: {}", String::from_utf8_lossy(&up.stderr)));
        }
        Ok(Rig { name: name.to_string(), relay: None })
    }

    fn exec(&self, side: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &format!("{}-{side}", self.name)]);
        c
    }

    fn stop_relay(&mut self) {
        if let Some(mut r) = self.relay.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.stop_relay();
        let _ = Command::new(repo().join("bench/netns/rig.sh")).arg("down").arg(&self.name).status();
    }
}

/// 40 calls for 2 s through the relay running `io`: the load generator's
/// JSON result.
fn run(rig: &mut Rig, io: &str, out: &Path) -> serde_json::Value {
    let bin = env!("CARGO_BIN_EXE_srtpgate");
    let log = std::fs::File::create(out.join(format!("relay-{io}.log"))).expect("log");
    let relay = rig
        .exec("relay")
        .args([bin, "serve", "--interface", "198.18.0.2", "--listen-ng", "198.18.0.2:2223"])
        .args(["--port-min", "30000", "--port-max", "30999", "--workers", "1", "--io", io])
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("start the relay");
    rig.relay = Some(relay);
    // The relay logs its NG address once the socket is bound.
    let log_path = out.join(format!("relay-{io}.log"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log_path).unwrap_or_default().contains("NG on udp") {
        assert!(
            Instant::now() < deadline,
            "the relay did not start: {}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let json = out.join(format!("loadgen-{io}.json"));
    let status = rig
        .exec("lg")
        .args([bin, "loadgen", "--ng", "198.18.0.2:2223", "--local", "198.18.0.1", "--calls", "40"])
        .args(["--duration", "2", "--quiet", "--json"])
        .arg(&json)
        .status()
        .expect("run the load generator");
    rig.stop_relay();
    assert!(status.success(), "loadgen through the {io} backend failed");
    let text = std::fs::read_to_string(&json).expect("loadgen JSON");
    let log = std::fs::read_to_string(out.join(format!("relay-{io}.log"))).unwrap_or_default();
    assert!(log.contains(&format!("media workers use {io} I/O")), "relay log:\n{log}");
    serde_json::from_str(&text).expect("JSON")
}

#[test]
fn calls_through_every_backend_in_the_namespace_rig() {
    let name = format!("sg{}", std::process::id() % 100_000);
    let mut rig = match Rig::up(&name) {
        Ok(r) => r,
        Err(why) => {
            println!("SKIPPED: the namespace rig cannot be built here: {why}");
            return;
        }
    };
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("netns");
    std::fs::create_dir_all(&out).expect("out dir");
    let uring_ok = srtpgate_relay::io::uring::probe();
    for io in ["sockets", "uring"] {
        if io == "uring" {
            if let Err(e) = &uring_ok {
                println!("SKIPPED: uring backend: {e}");
                continue;
            }
        }
        let r = run(&mut rig, io, &out);
        let get = |k: &str| r.get(k).and_then(serde_json::Value::as_u64).unwrap_or(u64::MAX);
        println!(
            "{io}: sent {} received {} lost {} auth failures {} p99 {:?} µs",
            get("packets_sent"),
            get("packets_received"),
            get("lost"),
            get("auth_failures"),
            r.pointer("/delay_us/p99")
        );
        assert!(get("packets_sent") >= 40 * 2 * 50 * 2 * 9 / 10, "{io}: {r}");
        assert_eq!(get("lost"), 0, "{io}: {r}");
        assert_eq!(get("auth_failures"), 0, "{io}: {r}");
        assert_eq!(get("setup_errors"), 0, "{io}: {r}");
        assert_eq!(get("duplicates"), 0, "{io}: {r}");
    }
}
