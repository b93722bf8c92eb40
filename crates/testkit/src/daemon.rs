//! The tests that drive `srtpgate serve` as a process (the daemon's
//! integration tests, the load generator's): a daemon per test (its own
//! ports, killed on drop), an NG client over UDP, `/metrics` over a bare
//! `TcpStream`, SDP offers/answers, and RTP/SRTP endpoints built on the SRTP
//! core's contexts (independent of the daemon's media code).

use srtp::{Context, CpuEngine, Suite};
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::rand::{rngs::OsRng, TryRngCore};
use srtpgate_sdp::Sdp;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The daemon's executable: `SRTPGATE_BIN`, else `srtpgate` in the
/// directory of the test's own build (`target/<profile>/`, where cargo puts
/// the workspace's binaries; `cargo test --workspace` builds it before any
/// test runs). Panics, naming the path, when it is not there.
pub fn bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SRTPGATE_BIN") {
        return PathBuf::from(p);
    }
    // target/<profile>/deps/<test>-<hash> → target/<profile>/srtpgate
    let exe = std::env::current_exe().expect("the test's own path");
    let dir = exe.parent().and_then(|d| if d.ends_with("deps") { d.parent() } else { Some(d) });
    let p = dir.expect("the test's build directory").join("srtpgate");
    assert!(p.is_file(), "{} is not built: cargo build -p srtpgate (same profile), or set SRTPGATE_BIN", p.display());
    p
}

/// The load generator's executable (`srtpgate-bench`), which some of the
/// daemon's tests drive it with: `SRTPGATE_BENCH_BIN`, else beside the
/// daemon ([`bin`]).
pub fn bench_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("SRTPGATE_BENCH_BIN") {
        return PathBuf::from(p);
    }
    let p = bin().with_file_name("srtpgate-bench");
    assert!(p.is_file(), "{} is not built: cargo build -p srtpgate-bench (same profile)", p.display());
    p
}

/// `target/tmp`, where the daemons' logs go (cargo's `CARGO_TARGET_TMPDIR`
/// of integration tests, found from the test's own path).
pub(crate) fn tmp_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    exe.ancestors().find(|d| d.ends_with("target")).map_or_else(std::env::temp_dir, |t| t.join("tmp"))
}

/// 127.0.0.1.
pub const LO: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// How long a test waits for a packet or a reply that should come.
pub const WAIT: Duration = Duration::from_secs(3);

/// Ports per test's media range (each call takes two pairs).
const RANGE: u16 = 100;

/// The media port range of test slot `slot`: below the ephemeral range (so
/// the tests' own sockets, bound to port 0, never land in it), one range per
/// slot so tests run in parallel, and shifted by the process id so that two
/// runs of this file at once mostly stay apart (a port held by someone else
/// is skipped by the daemon anyway).
pub fn port_range(slot: u16) -> (u16, u16) {
    assert!(slot < 24, "slot {slot} out of range");
    let base = 20_000 + (std::process::id() % 5) as u16 * 2_000 + slot * RANGE;
    (base, base + RANGE - 1)
}

/// The NG (UDP) and HTTP (TCP) port of test slot `slot` at start attempt
/// `attempt`: below the ephemeral range too. A port probed free in the
/// ephemeral range could be taken, between the probe and the daemon's bind,
/// by another test's endpoint, which would then get this test's pings.
fn control_port(slot: u16, attempt: u16) -> u16 {
    assert!(slot < 24 && attempt < 4, "slot {slot} attempt {attempt} out of range");
    15_000 + ((std::process::id() % 5) as u16 * 4 + attempt) * 24 + slot
}

/// A running `srtpgate serve`.
pub struct Daemon {
    child: Child,
    /// The test's name (cookies, log file).
    pub name: String,
    /// The NG address.
    pub ng: SocketAddr,
    /// The HTTP address.
    pub http: SocketAddr,
    /// The media port range.
    pub port_min: u16,
    /// The media port range.
    pub port_max: u16,
    /// Where its log goes.
    pub log: PathBuf,
    sock: UdpSocket,
    seq: AtomicU64,
    /// Its command line (for [`Daemon::crash_and_restart`]).
    args: Vec<String>,
}

impl Daemon {
    /// Starts a daemon on 127.0.0.1 media, one worker, with `extra` flags.
    pub fn start(name: &str, slot: u16, extra: &[&str]) -> Daemon {
        Daemon::start_on(name, slot, &["127.0.0.1"], extra)
    }

    /// Starts a daemon with the given media interfaces; waits for `pong`.
    pub fn start_on(name: &str, slot: u16, interfaces: &[&str], extra: &[&str]) -> Daemon {
        Daemon::start_with(name, slot, interfaces, extra, None)
    }

    /// Starts a daemon whose open-file limit (soft and hard) is `nofile`.
    pub fn start_limited(name: &str, slot: u16, nofile: u64, extra: &[&str]) -> Daemon {
        Daemon::start_with(name, slot, &["127.0.0.1"], extra, Some(nofile))
    }

    /// Starts a daemon in network namespace `netns` (through `ip netns
    /// exec`) with NG and HTTP on `host`, which the calling thread reaches
    /// (it runs in a namespace joined to that one).
    pub fn start_in_netns(name: &str, netns: &str, host: IpAddr, interfaces: &[&str], extra: &[&str]) -> Daemon {
        Daemon::spawn(name, 0, interfaces, extra, None, Some((netns, host)))
    }

    fn start_with(name: &str, slot: u16, interfaces: &[&str], extra: &[&str], nofile: Option<u64>) -> Daemon {
        Daemon::spawn(name, slot, interfaces, extra, nofile, None)
    }

    fn spawn(
        name: &str,
        slot: u16,
        interfaces: &[&str],
        extra: &[&str],
        nofile: Option<u64>,
        netns: Option<(&str, IpAddr)>,
    ) -> Daemon {
        // The slot's range, unless the test names its own.
        let named = |flag: &str| extra.iter().position(|a| *a == flag).and_then(|i| extra.get(i + 1)?.parse().ok());
        let (port_min, port_max) = match (named("--port-min"), named("--port-max")) {
            (Some(lo), Some(hi)) => (lo, hi),
            _ => port_range(slot),
        };
        let dir = tmp_dir().join("relay-tests");
        std::fs::create_dir_all(&dir).expect("log dir");
        let log = dir.join(format!("{name}.log"));
        // A port held by someone else makes the start fail: retry on others.
        for attempt in 0..4 {
            // In a namespace of its own the daemon's ports are free.
            let (ng, http) = match netns {
                Some((_, host)) => (SocketAddr::new(host, 2223), SocketAddr::new(host, 8080)),
                None => {
                    (SocketAddr::new(LO, control_port(slot, attempt)), SocketAddr::new(LO, control_port(slot, attempt)))
                }
            };
            let mut args: Vec<String> =
                vec!["serve".into(), "--listen-ng".into(), ng.to_string(), "--listen-http".into(), http.to_string()];
            if !extra.contains(&"--port-min") {
                args.extend(["--port-min".into(), port_min.to_string(), "--port-max".into(), port_max.to_string()]);
            }
            // Info unless the test asks for another level.
            if !extra.contains(&"--log-level") {
                args.extend(["--log-level".into(), "info".into()]);
            }
            // One worker unless the test asks for more.
            if !extra.contains(&"--workers") {
                args.extend(["--workers".into(), "1".into()]);
            }
            for i in interfaces {
                args.push("--interface".into());
                args.push(i.to_string());
            }
            args.extend(extra.iter().map(|s| s.to_string()));
            let logf = std::fs::File::create(&log).expect("log file");
            let bin = bin();
            let mut cmd = match (nofile, netns) {
                (_, Some((ns, _))) => {
                    let mut c = Command::new("ip");
                    c.args(["netns", "exec", ns]).arg(&bin);
                    c
                }
                // The shell sets the limit and becomes the daemon (same pid).
                (Some(n), None) => {
                    let mut c = Command::new("sh");
                    c.arg("-c").arg(format!("ulimit -n {n} && exec \"$0\" \"$@\"")).arg(bin);
                    c
                }
                (None, None) => Command::new(bin),
            };
            cmd.args(&args);
            let child = spawn_logged(cmd, logf, "start srtpgate serve");
            let client = if ng.is_ipv4() { IpAddr::from([0u8; 4]) } else { IpAddr::from([0u16; 8]) };
            let sock = UdpSocket::bind((client, 0)).expect("bind NG client");
            sock.connect(ng).expect("connect NG");
            let mut d = Daemon {
                child,
                name: name.to_string(),
                ng,
                http,
                port_min,
                port_max,
                log: log.clone(),
                sock,
                seq: AtomicU64::new(0),
                args: args.clone(),
            };
            if d.wait_ready() {
                println!(
                    "{name}: daemon pid {} NG {ng} HTTP {http} ports {port_min}-{port_max}, log {}",
                    d.pid(),
                    log.display()
                );
                return d;
            }
            println!("{name}: daemon start attempt {attempt} failed: {}", d.log_tail());
        }
        panic!("{name}: srtpgate serve did not start (log {})", log.display());
    }

    /// Pings until `pong` (false when the process exited or 10 s passed).
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            let cookie = self.cookie();
            let _ = self.sock.send(&srtpgate_ng::request(&cookie, &Value::dict().with("command", "ping")));
            if let Some((c, v)) = self.recv_reply(Duration::from_millis(100)) {
                if c == cookie.as_bytes() && v.get("result").and_then(Value::as_str) == Some("pong") {
                    // Also wait for the HTTP side.
                    while Instant::now() < deadline {
                        if TcpStream::connect(self.http).is_ok() {
                            return true;
                        }
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    return false;
                }
            }
        }
        false
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the daemon (SIGSTOP) until [`resume`](Self::resume): what is
    /// sent meanwhile waits in its sockets and is read in one batch.
    pub fn pause(&self) {
        // SAFETY: kill(2) on our own child's pid has no memory effects.
        let r = unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGSTOP) };
        assert_eq!(r, 0, "SIGSTOP");
        // Wait until it is stopped (state T in /proc).
        let deadline = Instant::now() + WAIT;
        while !std::fs::read_to_string(format!("/proc/{}/stat", self.pid()))
            .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('T')))
        {
            assert!(Instant::now() < deadline, "the daemon did not stop");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Continues the daemon after [`pause`](Self::pause).
    pub fn resume(&self) {
        // SAFETY: as in `pause`.
        let r = unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGCONT) };
        assert_eq!(r, 0, "SIGCONT");
    }

    /// The process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The last lines of the log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// A fresh cookie.
    pub fn cookie(&self) -> String {
        format!("{}-{}", self.name, self.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends raw bytes to the NG port.
    pub fn send_raw(&self, bytes: &[u8]) {
        self.sock.send(bytes).expect("send NG");
    }

    /// The next raw datagram from the NG port, if one comes within `wait`.
    pub fn recv_raw(&self, wait: Duration) -> Option<Vec<u8>> {
        self.sock.set_read_timeout(Some(wait)).expect("timeout");
        let mut buf = vec![0u8; 70_000];
        match self.sock.recv(&mut buf) {
            Ok(n) => Some(buf[..n].to_vec()),
            Err(_) => None,
        }
    }

    fn recv_reply(&self, wait: Duration) -> Option<(Vec<u8>, Value)> {
        let raw = self.recv_raw(wait)?;
        let (c, v) = srtpgate_ng::parse_reply(&raw).unwrap_or_else(|e| {
            panic!("{}: reply does not parse ({e}): {:?}", self.name, String::from_utf8_lossy(&raw))
        });
        Some((c, v))
    }

    /// Sends a request with `cookie` and returns its reply (resent on
    /// timeout, as the SIP proxies' modules do; stale replies are skipped).
    pub fn request_with(&self, cookie: &str, body: &Value) -> Value {
        let bytes = srtpgate_ng::request(cookie, body);
        for _ in 0..3 {
            self.send_raw(&bytes);
            let deadline = Instant::now() + WAIT;
            while let Some(left) = deadline.checked_duration_since(Instant::now()) {
                match self.recv_reply(left) {
                    Some((c, v)) if c == cookie.as_bytes() => return v,
                    Some(_) => continue,
                    None => break,
                }
            }
        }
        panic!("{}: no reply to {cookie} {}; log:\n{}", self.name, show(body), self.log_tail());
    }

    /// Sends a request and returns its reply.
    pub fn request(&self, body: &Value) -> Value {
        self.request_with(&self.cookie(), body)
    }

    /// `ping` answers `pong`.
    pub fn ping(&self) {
        let r = self.request(&Value::dict().with("command", "ping"));
        assert_eq!(result(&r), "pong", "{}", show(&r));
    }

    /// Call-ids of `list`, every page.
    pub fn list(&self) -> Vec<String> {
        let mut ids = Vec::new();
        loop {
            let req = Value::dict().with("command", "list").with("offset", ids.len() as i64);
            let r = self.request(&req);
            assert_eq!(result(&r), "ok", "{}", show(&r));
            let page = r.get("calls").and_then(Value::as_list).expect("calls");
            ids.extend(page.iter().map(|v| v.as_str().expect("call-id").to_string()));
            if r.get("next offset").is_none() || page.is_empty() {
                return ids;
            }
        }
    }

    /// The `query` reply of a call.
    pub fn query(&self, call_id: &str) -> Value {
        self.request(&Value::dict().with("command", "query").with("call-id", call_id))
    }

    /// `delete` of a call; must be ok.
    pub fn delete(&self, call_id: &str) -> Value {
        let r = self.request(&Value::dict().with("command", "delete").with("call-id", call_id));
        assert_eq!(result(&r), "ok", "delete {call_id}: {}", show(&r));
        r
    }

    /// The body of `GET path` (HTTP/1.1 over a bare TcpStream); asserts 200.
    pub fn http_get(&self, path: &str) -> String {
        let mut s = TcpStream::connect(self.http).expect("connect HTTP");
        s.set_read_timeout(Some(WAIT)).expect("timeout");
        write!(s, "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.http).expect("send GET");
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).expect("read HTTP reply");
        let text = String::from_utf8(raw).expect("UTF-8 reply");
        let (head, body) = text.split_once("\r\n\r\n").expect("HTTP head and body");
        assert!(head.starts_with("HTTP/1.1 200"), "GET {path}: {head}");
        assert!(!head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "chunked reply: {head}");
        body.to_string()
    }

    /// The `/metrics` page.
    pub fn metrics(&self) -> String {
        self.http_get("/metrics")
    }

    /// A metric summed over its labels (None when absent).
    pub fn metric(&self, name: &str) -> Option<f64> {
        metric(&self.metrics(), name)
    }

    /// Polls `/metrics` until `name` has `want` (the workers update some
    /// gauges once per loop, after the control thread answered).
    pub fn wait_metric(&self, name: &str, want: f64) {
        let deadline = Instant::now() + WAIT;
        loop {
            let got = self.metric(name);
            if got == Some(want) {
                return;
            }
            assert!(Instant::now() < deadline, "{}: metric {name} is {got:?}, want {want}", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The daemon's resident set size (kB), from /proc.
    pub fn rss_kb(&self) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("/proc status");
        s.lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }
}

impl Daemon {
    /// Kills the daemon (SIGKILL: no clean stop) and starts it again with
    /// the same command line (same NG, HTTP and media ports; its log goes
    /// on in the same file); returns when it answers `ping`.
    pub fn crash_and_restart(&mut self) -> Instant {
        self.restart_after(libc::SIGKILL)
    }

    /// Stops the daemon with `signal` (SIGTERM: a clean stop), waits for it
    /// to exit, and starts it again as [`Daemon::crash_and_restart`] does.
    pub fn restart_after(&mut self, signal: i32) -> Instant {
        self.stop_with(signal);
        self.start_again()
    }

    /// Starts a second daemon with this one's command line (same NG, HTTP
    /// and media ports) and `extra` flags (`--flag value` pairs), its log in `NAME-standby.log`,
    /// without waiting for it: a standby (of another Redis instance name)
    /// binds nothing until it holds the lease. [`Daemon::is_ready`] says
    /// when it answers.
    pub fn standby(&self, extra: &[&str]) -> Daemon {
        let log = self.log.with_file_name(format!("{}-standby.log", self.name));
        let logf = std::fs::File::create(&log).expect("log file");
        // A flag given again replaces its value (the CLI takes each once).
        let mut args = self.args.clone();
        let mut rest = extra.iter();
        while let Some(flag) = rest.next() {
            let value = rest.next().map(|v| v.to_string());
            match (args.iter().position(|a| a == flag), value) {
                (Some(i), Some(v)) if i + 1 < args.len() => args[i + 1] = v,
                (_, v) => args.extend(std::iter::once(flag.to_string()).chain(v)),
            }
        }
        let mut cmd = Command::new(bin());
        cmd.args(&args);
        let child = spawn_logged(cmd, logf, "start the standby");
        let sock = UdpSocket::bind((IpAddr::from([0u8; 4]), 0)).expect("bind NG client");
        sock.connect(self.ng).expect("connect NG");
        Daemon {
            child,
            name: format!("{}-standby", self.name),
            ng: self.ng,
            http: self.http,
            port_min: self.port_min,
            port_max: self.port_max,
            log,
            sock,
            seq: AtomicU64::new(0),
            args,
        }
    }

    /// Whether the daemon answers `ping` within `within` (false at once
    /// when it exited).
    pub fn is_ready(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            let cookie = self.cookie();
            let _ = self.sock.send(&srtpgate_ng::request(&cookie, &Value::dict().with("command", "ping")));
            if let Some((c, v)) = self.recv_reply(Duration::from_millis(50)) {
                if c == cookie.as_bytes() && v.get("result").and_then(Value::as_str) == Some("pong") {
                    return true;
                }
            }
        }
        false
    }

    /// Starts the stopped daemon again with the same command line (its log
    /// goes on in the same file); returns when it answers `ping`.
    pub fn start_again(&mut self) -> Instant {
        let logf = std::fs::OpenOptions::new().append(true).open(&self.log).expect("log file");
        let started = Instant::now();
        let mut cmd = Command::new(bin());
        cmd.args(&self.args);
        self.child = spawn_logged(cmd, logf, "restart srtpgate serve");
        assert!(self.wait_ready(), "{}: the restarted daemon did not answer: {}", self.name, self.log_tail());
        started
    }
}

impl Daemon {
    /// Sends `signal` to the daemon (SIGKILL: a crash) and waits for it to
    /// exit.
    pub fn stop_with(&mut self, signal: i32) {
        // SAFETY: a signal to the daemon's own pid.
        unsafe { libc::kill(self.child.id() as i32, signal) };
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().expect("wait").is_none() {
            assert!(Instant::now() < deadline, "{}: the daemon did not stop on signal {signal}", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A metric of a `/metrics` page, summed over its labels.
///
/// `name` may carry labels (`recordings_total{outcome="completed"}`): then
/// only the line with exactly those labels counts.
pub fn metric(page: &str, name: &str) -> Option<f64> {
    let full = format!("srtpgate_{name}");
    if name.contains('{') {
        return page.lines().find_map(|l| l.strip_prefix(&full)?.strip_prefix(' ')?.parse().ok());
    }
    let mut found = None;
    for l in page.lines().filter(|l| !l.starts_with('#')) {
        let Some((key, value)) = l.rsplit_once(' ') else { continue };
        let metric_name = key.split('{').next().unwrap_or(key);
        if metric_name == full {
            let v: f64 = value.parse().unwrap_or_else(|_| panic!("metric line {l:?}"));
            found = Some(found.unwrap_or(0.0) + v);
        }
    }
    found
}

/// A value as readable text (JSON-like, byte strings as UTF-8 when they are).
pub fn show(v: &Value) -> String {
    match v {
        Value::Int(n) => n.to_string(),
        Value::Bytes(b) => match std::str::from_utf8(b) {
            Ok(s) => format!("{s:?}"),
            Err(_) => format!("<{} bytes>", b.len()),
        },
        Value::List(l) => format!("[{}]", l.iter().map(show).collect::<Vec<_>>().join(", ")),
        Value::Dict(d) => format!(
            "{{{}}}",
            d.iter()
                .map(|(k, v)| format!("{:?}: {}", String::from_utf8_lossy(k), show(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The `result` of a reply.
pub fn result(v: &Value) -> &str {
    v.get("result").and_then(Value::as_str).unwrap_or_else(|| panic!("no result in {}", show(v)))
}

/// The `sdp` of an ok reply, parsed.
pub fn reply_sdp(v: &Value) -> Sdp {
    assert_eq!(result(v), "ok", "{}", show(v));
    let text = v.get("sdp").and_then(Value::as_str).unwrap_or_else(|| panic!("no sdp in {}", show(v)));
    Sdp::parse(text).unwrap_or_else(|e| panic!("reply SDP does not parse ({e}):\n{text}"))
}

/// A drop counter of one tag's first stream in a `query` reply.
pub fn drops(q: &Value, tag: &str, reason: &str) -> i64 {
    stream_stats(q, tag)
        .get("drops")
        .and_then(|d| d.get(reason))
        .and_then(Value::as_int)
        .unwrap_or_else(|| panic!("no drops.{reason} for tag {tag} in {}", show(q)))
}

/// The `stats` dictionary of one tag's first stream in a `query` reply.
pub fn stream_stats<'a>(q: &'a Value, tag: &str) -> &'a Value {
    stream(q, tag, 0).get("stats").unwrap_or_else(|| panic!("no stats for tag {tag} in {}", show(q)))
}

/// Stream `i` of the first media of `tag` in a `query` reply: 0 its RTP,
/// 1 its RTCP.
pub fn stream<'a>(q: &'a Value, tag: &str, i: usize) -> &'a Value {
    assert_eq!(result(q), "ok", "{}", show(q));
    q.get("tags")
        .and_then(|t| t.get(tag))
        .and_then(|t| t.get("medias"))
        .and_then(Value::as_list)
        .and_then(|m| m.first())
        .and_then(|m| m.get("streams"))
        .and_then(Value::as_list)
        .and_then(|s| s.get(i))
        .unwrap_or_else(|| panic!("no stream {i} for tag {tag} in {}", show(q)))
}

/// Polls `query` until a drop counter of `tag` reaches `want` (the worker
/// counts after the packet arrives); returns the reply.
pub fn wait_drops(d: &Daemon, call_id: &str, tag: &str, reason: &str, want: i64) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let q = d.query(call_id);
        let got = drops(&q, tag, reason);
        if got >= want {
            return q;
        }
        assert!(Instant::now() < deadline, "drops.{reason} of {tag} stayed {got} (want {want}): {}", show(&q));
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An SDES key of `suite` with `tag`.
pub fn key(tag: u32, suite: Suite) -> CryptoAttr {
    CryptoAttr::generate(tag, suite, &mut OsRng.unwrap_err())
}

/// What an SDP of a test endpoint says.
pub struct SdpSpec<'a> {
    /// The `c=` address.
    pub ip: IpAddr,
    /// The `o=` address.
    pub origin: IpAddr,
    /// The m-line port.
    pub port: u16,
    /// `a=rtcp:` port, if any.
    pub rtcp: Option<u16>,
    /// The m-line protocol.
    pub proto: &'a str,
    /// `a=crypto` lines.
    pub crypto: &'a [CryptoAttr],
    /// `a=rtcp-mux`.
    pub mux: bool,
    /// ICE attributes (ufrag, pwd, candidates).
    pub ice: bool,
}

impl SdpSpec<'_> {
    /// The SDP text (CRLF).
    pub fn text(&self) -> String {
        let fam = |ip: IpAddr| if ip.is_ipv6() { "IP6" } else { "IP4" };
        let mut l = vec![
            "v=0".to_string(),
            format!("o=- 4711 4711 IN {} {}", fam(self.origin), self.origin),
            "s=-".into(),
            format!("c=IN {} {}", fam(self.ip), self.ip),
            "t=0 0".into(),
        ];
        if self.ice {
            l.push("a=ice-lite".into());
        }
        l.push(format!("m=audio {} {} 0 8 101", self.port, self.proto));
        l.push("a=rtpmap:0 PCMU/8000".into());
        l.push("a=rtpmap:8 PCMA/8000".into());
        l.push("a=rtpmap:101 telephone-event/8000".into());
        l.push("a=sendrecv".into());
        if let Some(p) = self.rtcp {
            l.push(format!("a=rtcp:{p}"));
        }
        if self.mux {
            l.push("a=rtcp-mux".into());
        }
        for c in self.crypto {
            l.push(format!("a=crypto:{c}"));
        }
        if self.ice {
            l.push("a=ice-ufrag:F7gI".into());
            l.push("a=ice-pwd:x9cml/YzichV2+XlhiMu8g".into());
            l.push(format!("a=candidate:1 1 UDP 2130706431 {} {} typ host", self.ip, self.port));
        }
        let mut s = l.join("\r\n");
        s.push_str("\r\n");
        s
    }
}

pub use crate::ng::{answer, delete, offer};

/// The media address (RTP, RTCP) an SDP gives for its first m-line.
pub fn media_addrs(sdp: &Sdp) -> (SocketAddr, SocketAddr) {
    let m = &sdp.media()[0];
    let ip = sdp.media_connection(0).expect("connection address");
    let rtp = SocketAddr::new(ip, m.port());
    let rtcp = match m.rtcp() {
        Some((p, a)) => SocketAddr::new(a.unwrap_or(ip), p),
        None => SocketAddr::new(ip, m.port() + 1),
    };
    (rtp, rtcp)
}

/// The `a=crypto` lines of the first m-line, all valid.
pub fn cryptos(sdp: &Sdp) -> Vec<CryptoAttr> {
    sdp.media()[0].crypto().into_iter().map(|c| c.expect("valid a=crypto")).collect()
}

/// A context for `k`.
pub fn context(k: &CryptoAttr) -> Context<CpuEngine> {
    Context::new(k.policy().expect("policy"), CpuEngine::new()).expect("context")
}

pub use crate::packets::{rtcp_sr, rtp};

/// Waits up to `wait` for a datagram on `s`.
pub fn recv_within(s: &UdpSocket, wait: Duration) -> Option<(Vec<u8>, SocketAddr)> {
    s.set_read_timeout(Some(wait.max(Duration::from_millis(1)))).expect("timeout");
    let mut buf = vec![0u8; 70_000];
    match s.recv_from(&mut buf) {
        Ok((n, from)) => Some((buf[..n].to_vec(), from)),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => None,
        Err(e) => panic!("recv: {e}"),
    }
}

/// Asserts nothing is waiting on `s` (after a short grace).
pub fn assert_quiet(s: &UdpSocket, what: &str) {
    if let Some((p, from)) = recv_within(s, Duration::from_millis(50)) {
        panic!("{what}: unexpected {}-byte datagram from {from}", p.len());
    }
}

/// A test endpoint: an RTP and an RTCP socket, the key it sends with (if
/// SRTP) and the key it receives with (if SRTP), and where the relay is.
pub struct Endpoint {
    /// RTP socket.
    pub rtp: UdpSocket,
    /// RTCP socket (unused with rtcp-mux).
    pub rtcp: UdpSocket,
    /// SSRC of what it sends.
    pub ssrc: u32,
    seq: u16,
    sr: u32,
    tx: Option<Context<CpuEngine>>,
    rx: Option<Context<CpuEngine>>,
    /// Where it sends RTP.
    pub relay_rtp: SocketAddr,
    /// Where it sends RTCP (the RTP address with rtcp-mux).
    pub relay_rtcp: SocketAddr,
    /// RTCP goes over the RTP port.
    pub mux: bool,
}

impl Endpoint {
    /// Sockets on `ip`.
    pub fn new(ip: IpAddr) -> Endpoint {
        let rtp = UdpSocket::bind((ip, 0)).expect("bind endpoint RTP");
        let rtcp = UdpSocket::bind((ip, 0)).expect("bind endpoint RTCP");
        let unset = SocketAddr::new(ip, 9);
        Endpoint {
            rtp,
            rtcp,
            ssrc: srtpgate_sdp::rand::random(),
            seq: srtpgate_sdp::rand::random::<u16>() & 0x7fff,
            sr: 0,
            tx: None,
            rx: None,
            relay_rtp: unset,
            relay_rtcp: unset,
            mux: false,
        }
    }

    /// The RTP port.
    pub fn port(&self) -> u16 {
        self.rtp.local_addr().expect("addr").port()
    }

    /// The RTCP port.
    pub fn rtcp_port(&self) -> u16 {
        self.rtcp.local_addr().expect("addr").port()
    }

    /// The SDP this endpoint sends: its address and RTP port, `a=rtcp`
    /// with its RTCP port, `proto`, `crypto`; no rtcp-mux, no ICE (change
    /// those with struct update syntax).
    pub fn sdp_spec<'a>(&self, proto: &'a str, crypto: &'a [CryptoAttr]) -> SdpSpec<'a> {
        let ip = self.rtp.local_addr().expect("addr").ip();
        SdpSpec {
            ip,
            origin: ip,
            port: self.port(),
            rtcp: Some(self.rtcp_port()),
            proto,
            crypto,
            mux: false,
            ice: false,
        }
    }

    /// The key it sends with (None: plain RTP).
    pub fn send_key(&mut self, k: Option<&CryptoAttr>) {
        self.tx = k.map(context);
    }

    /// The key it receives with (None: plain RTP).
    pub fn recv_key(&mut self, k: Option<&CryptoAttr>) {
        self.rx = k.map(context);
    }

    /// SRTP contexts agreed elsewhere (a DTLS handshake's keys): `tx`
    /// protects what it sends, `rx` unprotects what it receives.
    pub fn contexts(&mut self, tx: Context<CpuEngine>, rx: Context<CpuEngine>) {
        self.tx = Some(tx);
        self.rx = Some(rx);
    }

    /// Where the relay is for it, from the SDP it received.
    pub fn relay(&mut self, sdp: &Sdp) {
        let (rtp, rtcp) = media_addrs(sdp);
        self.relay_rtp = rtp;
        self.mux = sdp.media()[0].rtcp_mux();
        self.relay_rtcp = if self.mux { rtp } else { rtcp };
    }

    /// The next RTP packet, plain and as sent (protected when SRTP).
    pub fn next_rtp(&mut self, payload: &[u8]) -> (Vec<u8>, Vec<u8>) {
        self.seq = self.seq.wrapping_add(1);
        let plain = rtp(self.ssrc, self.seq, payload);
        let wire = match self.tx.as_mut() {
            Some(c) => {
                let mut out = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
                let n = c.protect_rtp(&plain, &mut out).expect("protect");
                out.truncate(n);
                out
            }
            None => plain.clone(),
        };
        (plain, wire)
    }

    /// Protects (when SRTP) and sends a plain RTP packet built by the test.
    pub fn send_plain(&mut self, plain: &[u8]) {
        let wire = match self.tx.as_mut() {
            Some(c) => {
                let mut out = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
                let n = c.protect_rtp(plain, &mut out).expect("protect");
                out.truncate(n);
                out
            }
            None => plain.to_vec(),
        };
        self.rtp.send_to(&wire, self.relay_rtp).expect("send RTP");
    }

    /// The next RTP packet protected with another key (`k`): what a
    /// confused or malicious sender would send.
    pub fn forge_rtp(&mut self, k: &CryptoAttr) -> Vec<u8> {
        self.seq = self.seq.wrapping_add(1);
        let plain = rtp(self.ssrc, self.seq, b"forged with another key");
        let mut out = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
        let n = context(k).protect_rtp(&plain, &mut out).expect("protect");
        out.truncate(n);
        out
    }

    /// Skips `n` sequence numbers (packets "lost" before the relay).
    pub fn skip(&mut self, n: u16) {
        self.seq = self.seq.wrapping_add(n);
    }

    /// The sequence number of the next RTP packet.
    pub fn next_seq(&self) -> u16 {
        self.seq.wrapping_add(1)
    }

    /// Sends an RTP packet with a payload naming `tag` and the sequence
    /// number; returns the plain packet.
    pub fn send_rtp(&mut self, tag: &str) -> Vec<u8> {
        let mut payload = format!("{tag} {}", self.seq.wrapping_add(1)).into_bytes();
        payload.resize(160, 0xd5);
        let (plain, wire) = self.next_rtp(&payload);
        self.rtp.send_to(&wire, self.relay_rtp).expect("send RTP");
        plain
    }

    /// Sends an RTCP sender report (from the RTCP socket, or the RTP one
    /// with rtcp-mux); returns the plain packet.
    pub fn send_rtcp(&mut self) -> Vec<u8> {
        self.sr += 1;
        let plain = rtcp_sr(self.ssrc, self.sr);
        let wire = match self.tx.as_mut() {
            Some(c) => {
                let mut out = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
                let n = c.protect_rtcp(&plain, &mut out).expect("protect RTCP");
                out.truncate(n);
                out
            }
            None => plain.clone(),
        };
        let s = if self.mux { &self.rtp } else { &self.rtcp };
        s.send_to(&wire, self.relay_rtcp).expect("send RTCP");
        plain
    }

    /// Protects (when SRTP) and sends a plain RTCP packet built by the test
    /// (from the RTCP socket, or the RTP one with rtcp-mux).
    pub fn send_rtcp_plain(&mut self, plain: &[u8]) {
        let wire = match self.tx.as_mut() {
            Some(c) => {
                let mut out = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
                let n = c.protect_rtcp(plain, &mut out).expect("protect RTCP");
                out.truncate(n);
                out
            }
            None => plain.to_vec(),
        };
        let s = if self.mux { &self.rtp } else { &self.rtcp };
        s.send_to(&wire, self.relay_rtcp).expect("send RTCP");
    }

    /// Unprotects (when SRTP) an RTP packet received.
    pub fn open_rtp(&mut self, wire: &[u8]) -> Result<Vec<u8>, srtp::Error> {
        match self.rx.as_mut() {
            Some(c) => {
                let mut out = vec![0u8; wire.len()];
                let n = c.unprotect_rtp(wire, &mut out)?;
                out.truncate(n);
                Ok(out)
            }
            None => Ok(wire.to_vec()),
        }
    }

    /// Unprotects (when SRTP) an RTCP packet received.
    pub fn open_rtcp(&mut self, wire: &[u8]) -> Result<Vec<u8>, srtp::Error> {
        match self.rx.as_mut() {
            Some(c) => {
                let mut out = vec![0u8; wire.len()];
                let n = c.unprotect_rtcp(wire, &mut out)?;
                out.truncate(n);
                Ok(out)
            }
            None => Ok(wire.to_vec()),
        }
    }

    /// The rollover counter the receiving context has for `ssrc`.
    pub fn rx_roc(&self, ssrc: u32) -> Option<u32> {
        self.rx.as_ref().and_then(|c| c.roc(ssrc, false))
    }

    /// Receives one RTP packet on the RTP socket and returns it plain.
    /// What else arrives there is passed over: RTCP on a multiplexed port,
    /// and STUN or DTLS (RFC 7983's first byte) on a WebRTC endpoint's.
    pub fn recv_rtp(&mut self, what: &str) -> Vec<u8> {
        let deadline = Instant::now() + WAIT;
        let wire = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let (wire, _) = recv_within(&self.rtp, left).unwrap_or_else(|| panic!("{what}: no RTP packet arrived"));
            if wire.len() >= 2 && (128..=191).contains(&wire[0]) && !(192..=223).contains(&wire[1]) {
                break wire;
            }
        };
        self.open_rtp(&wire).unwrap_or_else(|e| panic!("{what}: the RTP packet does not unprotect: {e}"))
    }

    /// Receives one RTCP packet (RTCP socket, or RTP one with rtcp-mux)
    /// and returns it plain.
    pub fn recv_rtcp(&mut self, what: &str) -> Vec<u8> {
        let s = if self.mux { &self.rtp } else { &self.rtcp };
        let (wire, _) = recv_within(s, WAIT).unwrap_or_else(|| panic!("{what}: no RTCP packet arrived"));
        assert!(wire.len() >= 8 && (192..=223).contains(&wire[1]), "{what}: not an RTCP packet: {wire:02x?}");
        match self.rx.as_mut() {
            Some(c) => {
                let mut out = vec![0u8; wire.len()];
                let n = c.unprotect_rtcp(&wire, &mut out).unwrap_or_else(|e| panic!("{what}: SRTCP: {e}"));
                out.truncate(n);
                out
            }
            None => wire,
        }
    }
}

/// Media both ways: `n` RTP packets from `a` to `b` in a burst (each must
/// arrive intact and in order) and `k` RTCP reports, then the same from `b`
/// to `a`.
pub fn exchange(a: &mut Endpoint, b: &mut Endpoint, n: usize, k: usize) {
    one_way(a, b, "a->b", n, k);
    one_way(b, a, "b->a", n, k);
}

/// `n` RTP packets (one burst) then `k` RTCP reports (one at a time: see
/// `srtcp_burst_gets_distinct_indices`) from `from` to `to`, each checked.
pub fn one_way(from: &mut Endpoint, to: &mut Endpoint, dir: &str, n: usize, k: usize) {
    let sent: Vec<Vec<u8>> = (0..n).map(|_| from.send_rtp(dir)).collect();
    for (i, want) in sent.iter().enumerate() {
        let got = to.recv_rtp(&format!("{dir} RTP {i}"));
        assert_eq!(&got, want, "{dir} RTP packet {i} differs (lost, reordered or corrupted)");
    }
    for i in 0..k {
        let want = from.send_rtcp();
        let got = to.recv_rtcp(&format!("{dir} RTCP {i}"));
        assert_eq!(got, want, "{dir} RTCP packet {i} differs");
    }
}

/// A call set up by offer and answer.
pub struct Call {
    /// Call-ID.
    pub id: String,
    /// The caller's tag.
    pub from_tag: String,
    /// The callee's tag.
    pub to_tag: String,
    /// The caller.
    pub a: Endpoint,
    /// The callee.
    pub b: Endpoint,
    /// The SDP the callee received (the rewritten offer).
    pub offer_out: Sdp,
    /// The SDP the caller received (the rewritten answer).
    pub answer_out: Sdp,
    /// The caller's key (what it sends with).
    pub a_key: Option<CryptoAttr>,
    /// The callee's key.
    pub b_key: Option<CryptoAttr>,
}

impl Call {
    /// The relay's RTP ports of both sides (caller's, callee's).
    pub fn relay_ports(&self) -> [u16; 2] {
        [self.answer_out.media()[0].port(), self.offer_out.media()[0].port()]
    }
}

/// Sets up an SRTP↔SRTP call (`AES_CM_128_HMAC_SHA1_80`, one key each) on
/// `ip`, both sides with or without rtcp-mux; endpoints ready for media.
pub fn srtp_call(d: &Daemon, id: &str, ip: IpAddr, mux: bool) -> Call {
    let mut a = Endpoint::new(ip);
    let mut b = Endpoint::new(ip);
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let spec = |e: &Endpoint, k: &[CryptoAttr]| {
        SdpSpec {
            ip,
            origin: ip,
            port: e.port(),
            rtcp: (!mux).then(|| e.rtcp_port()),
            proto: "RTP/SAVP",
            crypto: k,
            mux,
            ice: false,
        }
        .text()
    };
    let (from_tag, to_tag) = (format!("{id}-a"), format!("{id}-b"));
    let r = d.request(&offer(id, &from_tag, &spec(&a, std::slice::from_ref(&a_key))));
    let offer_out = reply_sdp(&r);
    let relay_for_b = cryptos(&offer_out).into_iter().next().expect("a relay key for the callee");
    let b_key = key(relay_for_b.tag, relay_for_b.suite);
    let r = d.request(&answer(id, &from_tag, &to_tag, &spec(&b, std::slice::from_ref(&b_key))));
    let answer_out = reply_sdp(&r);
    let relay_for_a = cryptos(&answer_out).into_iter().next().expect("a relay key for the caller");
    a.send_key(Some(&a_key));
    a.recv_key(Some(&relay_for_a));
    a.relay(&answer_out);
    b.send_key(Some(&b_key));
    b.recv_key(Some(&relay_for_b));
    b.relay(&offer_out);
    Call { id: id.into(), from_tag, to_tag, a, b, offer_out, answer_out, a_key: Some(a_key), b_key: Some(b_key) }
}

/// Polls until `port` (and `port + 1`) on `ip` can be bound here: the
/// daemon closed its sockets.
pub fn wait_bindable(ip: IpAddr, port: u16) {
    let deadline = Instant::now() + WAIT;
    loop {
        let r = UdpSocket::bind((ip, port)).and_then(|s| UdpSocket::bind((ip, port + 1)).map(|t| (s, t)));
        match r {
            Ok(_) => return,
            Err(e) => assert!(Instant::now() < deadline, "relay port {ip}:{port}/{} still bound: {e}", port + 1),
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// An SDP of `media` audio m-lines from `port` (0: rejected), padded with
/// attribute lines to about `pad` bytes.
pub fn padded_sdp(media: usize, port: u16, pad: usize) -> String {
    let mut s = String::from("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n");
    for i in 0..media {
        let p = if port == 0 { 0 } else { port + 2 * i as u16 };
        s.push_str(&format!("m=audio {p} RTP/AVP 0\r\n"));
    }
    while s.len() + 40 < pad {
        s.push_str("a=x-padding:0123456789012345678901234\r\n");
    }
    s
}

/// `cmd` started with no input and both outputs into `log`.
fn spawn_logged(mut cmd: Command, log: std::fs::File, what: &str) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(log.try_clone().expect("log file"))
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}
