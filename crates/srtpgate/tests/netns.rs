//! The relay in its own network namespace, the load generator in another,
//! joined by a veth pair (`bench/netns/rig.sh`, addresses from the
//! benchmarking range 198.18.0.0/15): SRTP calls re-keyed both ways through
//! each I/O backend, every packet decrypted by its endpoint with its own
//! keys, none lost. Skips, saying why, where the rig cannot be built (not
//! root, no iproute2, no namespaces).

use srtpgate_testkit::daemon::{context, cryptos, recv_within, srtp_call, Daemon, WAIT};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

mod namespaces;
use namespaces::{enter, usable, Rig};
use std::{
    process::Stdio,
    time::{Duration, Instant},
};

/// The rig of `bench/netns/rig.sh` and the relay running in it, stopped
/// before the rig is removed.
struct Bench {
    relay: Option<Child>,
    rig: Rig,
}

impl Bench {
    fn up(name: &str) -> Result<Bench, String> {
        Ok(Bench { relay: None, rig: Rig::up("rig.sh", name)? })
    }

    fn exec(&self, side: &str) -> Command {
        self.rig.exec(side)
    }

    fn stop_relay(&mut self) {
        if let Some(mut r) = self.relay.take() {
            let _ = r.kill();
            let _ = r.wait();
        }
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.stop_relay();
    }
}

/// 40 calls for 2 s through the relay running `io`: the load generator's
/// JSON result.
fn run(rig: &mut Bench, io: &str, out: &Path) -> serde_json::Value {
    let bin = srtpgate_testkit::daemon::bin();
    let log = std::fs::File::create(out.join(format!("relay-{io}.log"))).expect("log");
    let relay = rig
        .exec("relay")
        .arg(&bin)
        .args(["serve", "--interface", "198.18.0.2", "--listen-ng", "198.18.0.2:2223"])
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
        .arg(srtpgate_testkit::daemon::bench_bin())
        .args(["loadgen", "--ng", "198.18.0.2:2223", "--local", "198.18.0.1", "--calls", "40"])
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
    let mut rig = match Bench::up(&name) {
        Ok(r) => r,
        Err(why) => {
            srtpgate_testkit::skip("netns", "the namespace rig", why);
            return;
        }
    };
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("netns");
    std::fs::create_dir_all(&out).expect("out dir");
    for io in ["sockets", "uring", "xdp"] {
        if let Err(why) = usable(io) {
            srtpgate_testkit::skip(io, &format!("the {io} backend in the namespace rig"), why);
            continue;
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

/// `n` RTP packets and one RTCP report from `from` to `to`, one at a time,
/// each compared with `reference` (a fresh context of the relay's key
/// toward `to`); what arrived.
fn one_direction(
    io: &str,
    dir: &str,
    from: &mut srtpgate_testkit::daemon::Endpoint,
    to: &mut srtpgate_testkit::daemon::Endpoint,
    reference: &mut srtp::Context<srtp::CpuEngine>,
    n: usize,
) -> Vec<Vec<u8>> {
    let mut arrived = Vec::new();
    for i in 0..n {
        let mut payload = format!("{dir} {i}").into_bytes();
        payload.resize(160, i as u8);
        let (plain, wire) = from.next_rtp(&payload);
        from.rtp.send_to(&wire, from.relay_rtp).expect("send RTP");
        let (got, _) = recv_within(&to.rtp, WAIT).unwrap_or_else(|| panic!("{io} {dir} RTP {i}: nothing arrived"));
        let mut want = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
        let k = reference.protect_rtp(&plain, &mut want).expect("protect");
        assert_eq!(got, want[..k], "{io} {dir} RTP {i}: not the bytes the relay's key gives");
        arrived.push(got);
    }
    let plain = from.send_rtcp();
    let s = if to.mux { &to.rtp } else { &to.rtcp };
    let (got, _) = recv_within(s, WAIT).unwrap_or_else(|| panic!("{io} {dir} RTCP: nothing arrived"));
    let mut want = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
    let k = reference.protect_rtcp(&plain, &mut want).expect("protect RTCP");
    assert_eq!(got, want[..k], "{io} {dir} SRTCP: not the bytes the relay's key gives");
    arrived.push(got);
    arrived
}

/// What one backend sent for one call: every packet as it arrived, both
/// ways, RTP then SRTCP.
fn exact_call(d: &Daemon, io: &str, id: &str, ip: IpAddr, n: usize) -> Vec<Vec<u8>> {
    let mut c = srtp_call(d, id, ip, false);
    // The relay's keys toward each endpoint are in the SDP it gave them:
    // what it must send is the endpoint's plain packet protected with a
    // fresh context of that key, byte for byte, whatever the backend.
    let mut to_b = context(&cryptos(&c.offer_out)[0]);
    let mut to_a = context(&cryptos(&c.answer_out)[0]);
    let mut arrived = one_direction(io, "a->b", &mut c.a, &mut c.b, &mut to_b, n);
    arrived.extend(one_direction(io, "b->a", &mut c.b, &mut c.a, &mut to_a, n));
    let _ = d.delete(id);
    arrived
}

#[test]
fn every_backend_relays_bit_for_bit_ipv4_and_ipv6() {
    let name = format!("sx{}", std::process::id() % 100_000);
    let rig = match Bench::up(&name) {
        Ok(r) => r,
        Err(why) => {
            srtpgate_testkit::skip("netns", "the namespace rig", why);
            return;
        }
    };
    let lg = rig.rig.ns("lg");
    let relay = rig.rig.ns("relay");
    // The endpoints live in the load generator's namespace: this thread
    // moves there (and the test harness gives each test its own thread).
    let worker = std::thread::spawn(move || {
        enter(&lg);
        let host: IpAddr = "198.18.0.2".parse().expect("addr");
        let mut seen: Vec<(String, Vec<Vec<u8>>)> = Vec::new();
        for io in ["sockets", "uring", "xdp"] {
            if let Err(why) = usable(io) {
                srtpgate_testkit::skip(io, &format!("the {io} backend in the namespace rig"), why);
                continue;
            }
            let d = Daemon::start_in_netns(
                &format!("exact-{io}"),
                &relay,
                host,
                &["198.18.0.2", "2001:db8:18::2"],
                &["--io", io],
            );
            assert!(std::fs::read_to_string(&d.log)
                .unwrap_or_default()
                .contains(&format!("media workers use {io} I/O")));
            let mut all = Vec::new();
            for (id, ip) in [("v4", "198.18.0.1"), ("v6", "2001:db8:18::1")] {
                all.extend(exact_call(&d, io, &format!("{io}-{id}"), ip.parse().expect("addr"), 50));
            }
            if io == "xdp" {
                let page = d.metrics();
                let redirected = page
                    .lines()
                    .find(|l| l.starts_with("srtpgate_xdp_frames_total{verdict=\"redirected\"}"))
                    .and_then(|l| l.rsplit_once(' '))
                    .and_then(|(_, v)| v.parse::<f64>().ok())
                    .unwrap_or(0.0);
                println!("xdp: {redirected} frames took the AF_XDP path");
                // 2 calls × 2 directions × 50 RTP (after the first of each
                // direction latched) and the SRTCP reports.
                assert!(redirected >= 2.0 * 2.0 * 45.0, "the XDP path carried {redirected} frames:\n{page}");
            }
            println!("{io}: {} packets as the relay's keys give them", all.len());
            seen.push((io.to_string(), all));
        }
        // The same packets went in; each backend's are exactly the reference
        // transform under that run's keys, so they differ only by key: the
        // count and the lengths must match.
        for w in seen.windows(2) {
            let lens = |v: &Vec<Vec<u8>>| v.iter().map(Vec::len).collect::<Vec<_>>();
            assert_eq!(lens(&w[0].1), lens(&w[1].1), "{} and {} sent different packets", w[0].0, w[1].0);
        }
    });
    let r = worker.join();
    drop(rig);
    if let Err(e) = r {
        std::panic::resume_unwind(e);
    }
}
