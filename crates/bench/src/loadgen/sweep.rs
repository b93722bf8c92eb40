//! `srtpgate loadgen sweep`: the same load at a series of concurrent-call
//! counts, for one or more relay configurations (srtpgate with an engine and
//! a worker count, rtpengine, or a relay already running), each started and
//! stopped here; JSON results and the figures.

use super::plot::{self, Point, Series};
use super::{run_load, LoadgenArgs, NgClient};
use clap::Args;
use srtpgate_ng::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Options of `srtpgate loadgen sweep`.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Concurrent-call counts: values and ranges FROM:TO:STEP, comma-separated.
    #[arg(long, default_value = "50:150:10,500,1000,2000,5000,10000")]
    pub counts: String,
    /// Relay configurations, comma-separated: `srtpgate:ENGINE:WORKERS`
    /// (ENGINE cpu, gpu or auto; `:busy` appended for `--busy-poll`, `:sockets`
    /// `:uring` or `:xdp` for `--io`, `:rec` to record every call as pcap,
    /// `:rec-wav` as pcap and WAVs, `:play10` to play a prompt to the callee
    /// of every tenth call from its setup on, and last `:args=ARGS` for more
    /// `srtpgate serve` arguments: the rest of the spec, colons included,
    /// split at spaces, e.g. `srtpgate:cpu:1:args=--call-quality off`),
    /// `rtpengine:THREADS` (`:rec`: rtpengine's pcap recording), or
    /// `ng:ADDR:PORT` for a relay that is already running.
    #[arg(long, default_value = "srtpgate:cpu:1")]
    pub configs: String,
    /// Seconds of measurement per count.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Runs per count, one after another on the same relay. A count holds
    /// when every one of its runs meets the bounds (BENCHMARKS' capacity
    /// rule), and the sweep of a configuration stops after a count that
    /// does not.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    /// Seconds each call lasts before it is replaced (0 = the whole run).
    #[arg(long, default_value_t = 0.0)]
    pub call_duration: f64,
    /// SDES suite.
    #[arg(long, default_value = "AES_CM_128_HMAC_SHA1_80")]
    pub suite: String,
    /// A configuration's sweep stops after the first count whose p99 delay
    /// exceeds this (ms) ...
    #[arg(long, default_value_t = 5.0)]
    pub max_p99_ms: f64,
    /// ... or whose loss ratio exceeds this.
    #[arg(long, default_value_t = 0.0001)]
    pub max_loss: f64,
    /// CPUs for the relay (taskset list, e.g. 0 or 0-7).
    #[arg(long)]
    pub relay_cpus: Option<String>,
    /// CPUs for the load generator (this process), e.g. 1 or 8-15.
    #[arg(long)]
    pub loadgen_cpus: Option<String>,
    /// Call count of the overlaid delay histogram (figure 6.3).
    #[arg(long, default_value_t = 120)]
    pub histogram_at: usize,
    /// Output folder for sweep.json and the figures.
    #[arg(long, default_value = "sweep-out")]
    pub out: PathBuf,
    /// Script that starts rtpengine (`bench/rtpengine/start.sh`).
    #[arg(long, default_value = "bench/rtpengine/start.sh")]
    pub rtpengine_start: PathBuf,
    /// Sender/receiver thread pairs of the load generator.
    #[arg(long, default_value_t = 1)]
    pub loadgen_threads: usize,
    /// Draw the figures of an earlier sweep.json into --out, and run nothing.
    #[arg(long)]
    pub replot: Option<PathBuf>,
    /// Show the progress line of each run.
    #[arg(long)]
    pub progress: bool,
    /// Seconds a started relay has to answer its first NG ping (it listens
    /// once ready: `srtpgate serve --engine gpu` starts its engine and
    /// calibrates first, under 1 s on the GPU machines; an older relay whose
    /// driver compiled the kernels took 30 s on a fresh one).
    #[arg(long, default_value_t = 120.0, value_name = "SECONDS")]
    pub relay_start_timeout: f64,
    /// The callers' codec: real encoded audio (see `loadgen --codec`).
    #[arg(long)]
    pub codec: Option<String>,
    /// The callees' codec: every call transcoded (see `loadgen --transcode-to`).
    #[arg(long = "transcode-to", requires = "codec")]
    pub transcode_to: Option<String>,
    /// Every caller is a browser (ICE, DTLS-SRTP; see `loadgen --webrtc`).
    #[arg(long, conflicts_with = "codec")]
    pub webrtc: bool,
    /// Every endpoint sends an SR with a report block and an SDES CNAME as
    /// SRTCP every SECONDS, as phones do (0: no RTCP; see `loadgen
    /// --rtcp-interval`).
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub rtcp_interval: f64,
    /// Codec plugins for --codec and --transcode-to (also given to a srtpgate relay).
    #[arg(long = "codec-plugin-dir")]
    pub codec_plugin_dir: Option<PathBuf>,
    /// Run in the namespace rig NAME, built with `--rig` at the start and
    /// removed at the end: the relay in NAME-relay (198.18.0.2), the load in
    /// NAME-lg (198.18.0.1), joined by a veth pair. Needs root and iproute2
    /// (`IP` names another `ip`).
    #[arg(long)]
    pub netns: Option<String>,
    /// The rig script (`up NAME` / `down NAME`).
    #[arg(long, default_value = "bench/netns/rig.sh")]
    pub rig: PathBuf,
}

/// The relay's address in the rig and the load generator's.
const RIG_RELAY: [u8; 4] = [198, 18, 0, 2];
const RIG_LOADGEN: [u8; 4] = [198, 18, 0, 1];

/// The namespace rig of a sweep, removed on drop (after this thread went
/// back to the namespace it came from).
struct Rig {
    script: PathBuf,
    name: String,
    home: Option<std::fs::File>,
}

impl Rig {
    fn up(script: &std::path::Path, name: &str) -> Result<Rig, String> {
        let out = Command::new(script).args(["up", name]).output().map_err(|e| format!("{}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "the namespace rig cannot be built: {}{}",
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let home = std::fs::File::open("/proc/thread-self/ns/net").ok();
        Ok(Rig { script: script.to_path_buf(), name: name.to_string(), home })
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        if let Some(home) = &self.home {
            use std::os::fd::AsRawFd;
            // SAFETY: setns back to the namespace this thread started in.
            unsafe { libc::setns(home.as_raw_fd(), libc::CLONE_NEWNET) };
        }
        let _ = Command::new(&self.script).args(["down", &self.name]).stdout(Stdio::null()).status();
    }
}

/// Moves the calling thread (and the threads it starts later) into the
/// network namespace `ns` (an `ip netns` name).
fn enter_netns(ns: &str) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let path = format!("/var/run/netns/{ns}");
    let f = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    // SAFETY: setns on an open namespace descriptor; it changes this thread's namespace only.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(format!("setns {ns}: {}", std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The cores of a taskset list (`0`, `0-7`, `0,2,4-5`).
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b) = (a.parse::<usize>(), b.parse::<usize>());
        match (a, b) {
            (Ok(a), Ok(b)) if a <= b && b < 4096 => out.extend(a..=b),
            _ => return Err(format!("cpus: {part:?} is not N or N-M")),
        }
    }
    Ok(out)
}

/// What a recording configuration writes per call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Recording {
    /// The decrypted pcap and the metadata JSON.
    Pcap,
    /// Those and a WAV per party and a mixed one.
    PcapWav,
}

/// A relay configuration of the sweep.
#[derive(Clone, Debug, PartialEq)]
pub enum RelaySpec {
    /// `srtpgate serve` with this engine and worker count.
    Srtpgate {
        /// cpu, gpu or auto.
        engine: String,
        /// Media workers.
        workers: usize,
        /// Workers poll without sleeping (`--busy-poll`).
        busy: bool,
        /// I/O backend (`--io`; `None`: the relay's default).
        io: Option<String>,
        /// Every call recorded.
        record: Option<Recording>,
        /// Percentage of calls whose callee hears a prompt (`play media`).
        play: Option<u32>,
        /// More arguments of `srtpgate serve` (`:args=`), last.
        args: Vec<String>,
    },
    /// rtpengine (userspace) with this many media threads.
    Rtpengine {
        /// Threads.
        threads: usize,
        /// Every call recorded (`--recording-method=pcap`).
        record: bool,
    },
    /// A relay already listening for NG here.
    Ng(SocketAddr),
}

impl RelaySpec {
    /// Parses one spec.
    pub fn parse(s: &str) -> Result<RelaySpec, String> {
        // `:args=` takes the rest, colons and all.
        let (s, extra) = match s.split_once(":args=") {
            Some((spec, rest)) if spec.trim_start().starts_with("srtpgate:") => {
                let extra: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
                if extra.is_empty() {
                    return Err(format!("config {s:?}: args= gives no argument"));
                }
                (spec, extra)
            }
            _ => (s, Vec::new()),
        };
        let parts: Vec<&str> = s.trim().split(':').collect();
        let num = |v: &str| v.parse::<usize>().map_err(|_| format!("config {s:?}: {v:?} is not a number"));
        match parts.as_slice() {
            ["srtpgate", engine, workers, opts @ ..] if ["cpu", "gpu", "auto"].contains(engine) => {
                let (mut busy, mut io, mut record, mut play) = (false, None, None, None);
                for o in opts {
                    match *o {
                        "busy" => busy = true,
                        "sockets" | "uring" | "xdp" => io = Some(o.to_string()),
                        "rec" => record = Some(Recording::Pcap),
                        "rec-wav" => record = Some(Recording::PcapWav),
                        p if p.strip_prefix("play").and_then(|n| n.parse::<u32>().ok()).is_some_and(|n| n <= 100) => {
                            play = p[4..].parse().ok()
                        }
                        other => {
                            return Err(format!(
                                "config {s:?}: {other:?} is not busy, sockets, uring, xdp, rec, rec-wav or playN"
                            ))
                        }
                    }
                }
                Ok(RelaySpec::Srtpgate {
                    engine: engine.to_string(),
                    workers: num(workers)?,
                    busy,
                    io,
                    record,
                    play,
                    args: extra,
                })
            }
            ["rtpengine", threads] => Ok(RelaySpec::Rtpengine { threads: num(threads)?, record: false }),
            ["rtpengine", threads, "rec"] => Ok(RelaySpec::Rtpengine { threads: num(threads)?, record: true }),
            ["ng", ..] if parts.len() >= 3 => {
                let addr = s.trim()["ng:".len()..].parse().map_err(|e| format!("config {s:?}: {e}"))?;
                Ok(RelaySpec::Ng(addr))
            }
            _ => {
                Err(format!("config {s:?}: expected srtpgate:cpu|gpu|auto:WORKERS, rtpengine:THREADS or ng:ADDR:PORT"))
            }
        }
    }

    /// The legend name.
    pub fn name(&self) -> String {
        match self {
            RelaySpec::Srtpgate { engine, workers, busy, io, record, play, args } => format!(
                "srtpgate {engine}, {workers} worker{}{}{}{}{}{}",
                if *workers == 1 { "" } else { "s" },
                if *busy { ", busy-poll" } else { "" },
                io.as_ref().map(|io| format!(", {io}")).unwrap_or_default(),
                match record {
                    None => "",
                    Some(Recording::Pcap) => ", recording pcap",
                    Some(Recording::PcapWav) => ", recording pcap + WAV",
                },
                play.map(|p| format!(", {p} % playing")).unwrap_or_default(),
                if args.is_empty() { String::new() } else { format!(", {}", args.join(" ")) }
            ),
            RelaySpec::Rtpengine { threads, record } => format!(
                "rtpengine 10.5, {threads} thread{}{}",
                if *threads == 1 { "" } else { "s" },
                if *record { ", recording pcap" } else { "" }
            ),
            RelaySpec::Ng(a) => format!("relay at {a}"),
        }
    }
}

impl RelaySpec {
    /// Whether the relay records every call.
    pub fn records(&self) -> bool {
        matches!(self, RelaySpec::Srtpgate { record: Some(_), .. } | RelaySpec::Rtpengine { record: true, .. })
    }

    /// The share of calls that hear a prompt.
    pub fn plays(&self) -> Option<f64> {
        match self {
            RelaySpec::Srtpgate { play: Some(p), .. } => Some(*p as f64 / 100.0),
            _ => None,
        }
    }
}

/// The prompt a `playN` configuration plays, in its media directory.
const PROMPT: &str = "prompt.wav";

/// A media directory beside `recordings` holding [`PROMPT`]: 10 s at 16 kHz
/// of a tone whose pitch and level move like speech (what music on hold
/// costs an encoder more than silence), resampled by the relay to each
/// listener's codec.
fn media_dir(recordings: &std::path::Path) -> Result<PathBuf, String> {
    let dir = recordings.with_file_name(format!(
        "media-{}",
        recordings.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let path = dir.join(PROMPT);
    let mut w = hound::WavWriter::create(&path, spec).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut phase = 0.0f64;
    for i in 0..160_000u32 {
        let t = i as f64 / 16_000.0;
        let hz = 220.0 + 80.0 * (t * 2.1).sin() + 40.0 * (t * 5.3).sin();
        phase += std::f64::consts::TAU * hz / 16_000.0;
        let level = 6000.0 * (0.6 + 0.4 * (t * 3.7).sin());
        let v = level * (phase.sin() + 0.3 * (3.0 * phase).sin());
        w.write_sample(v as i16).map_err(|e| e.to_string())?;
    }
    w.finalize().map_err(|e| e.to_string())?;
    Ok(dir)
}

/// Calls `f` with every file below `dir` and its metadata (recursively;
/// nothing when it is missing).
fn each_file(dir: &std::path::Path, mut f: impl FnMut(&std::path::Path, &std::fs::Metadata)) {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => todo.push(e.path()),
                Ok(m) => f(&e.path(), &m),
                Err(_) => {}
            }
        }
    }
}

/// Bytes and files below `dir`.
fn disk_use(dir: &std::path::Path) -> (u64, u64) {
    let (mut bytes, mut files) = (0, 0);
    each_file(dir, |_, m| {
        bytes += m.len();
        files += 1;
    });
    (bytes, files)
}

/// Waits (up to 20 s) until what is below `dir` stops changing for 0.5 s.
fn settle(dir: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = disk_use(dir);
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        let now = disk_use(dir);
        if now == last {
            return;
        }
        last = now;
    }
}

/// Deletes every file below `dir`, keeping the folders.
fn remove_files(dir: &std::path::Path) {
    each_file(dir, |p, _| {
        let _ = std::fs::remove_file(p);
    });
}

/// Parses `50:150:10,500` into counts.
pub fn parse_counts(s: &str) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let nums: Result<Vec<usize>, _> = part.split(':').map(str::parse::<usize>).collect();
        match nums.map_err(|_| format!("counts: {part:?} is not a number or FROM:TO:STEP"))?.as_slice() {
            [n] => out.push(*n),
            [a, b, step] if *step > 0 && a <= b => out.extend((*a..=*b).step_by(*step)),
            _ => return Err(format!("counts: {part:?} is not FROM:TO:STEP with FROM ≤ TO and STEP > 0")),
        }
    }
    if out.is_empty() || out.contains(&0) {
        return Err("counts: give at least one count, each ≥ 1".into());
    }
    Ok(out)
}

/// A started relay, stopped on drop.
struct Relay {
    child: Option<Child>,
    /// rtpengine's stop script, and the NG port its start script recorded it under.
    rtpengine_stop: Option<(PathBuf, u16)>,
    ng: SocketAddr,
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SIGTERM for a clean stop (Child::kill would send SIGKILL), then reap.
            let _ = Command::new("kill").arg("-TERM").arg(c.id().to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some((stop, port)) = self.rtpengine_stop.take() {
            let _ = Command::new(stop).env("NG_PORT", port.to_string()).stdout(Stdio::null()).status();
        }
    }
}

/// rtpengine's options for recording every call into `dir` (none when it
/// does not record).
fn rtpengine_recording(record: bool, dir: &std::path::Path) -> String {
    if record {
        format!("--recording-dir={} --recording-method=pcap", dir.display())
    } else {
        String::new()
    }
}

/// Starts the relay of `spec`; a recording one writes below `recordings`.
fn start(spec: &RelaySpec, args: &SweepArgs, port_base: u16, recordings: &std::path::Path) -> Result<Relay, String> {
    // NG below the media ports, which span 10 000–65 000 (4 ports a call:
    // room for 13 000 calls).
    let relay_ip: std::net::IpAddr = if args.netns.is_some() { RIG_RELAY.into() } else { [127, 0, 0, 1].into() };
    let ng: SocketAddr = match spec {
        RelaySpec::Ng(a) => *a,
        _ => SocketAddr::new(relay_ip, port_base),
    };
    // In the rig a relay runs in the relay's namespace.
    let in_rig = |program: &std::ffi::OsStr| -> Command {
        match &args.netns {
            Some(name) => {
                let mut c = Command::new(std::env::var_os("IP").unwrap_or_else(|| "ip".into()));
                c.args(["netns", "exec", &format!("{name}-relay")]).arg(program);
                c
            }
            None => Command::new(program),
        }
    };
    let (port_min, port_max) = ("10000".to_string(), "65000".to_string());
    let mut relay = match spec {
        RelaySpec::Ng(_) => Relay { child: None, rtpengine_stop: None, ng },
        RelaySpec::Srtpgate { engine, workers, busy, io, record, play, args: extra } => {
            let exe = crate::daemon::checked()?;
            let exe_name = exe.display().to_string();
            let mut cmd = match &args.relay_cpus {
                Some(cpus) => {
                    let mut c = in_rig("taskset".as_ref());
                    c.arg("-c").arg(cpus).arg(exe);
                    c
                }
                None => in_rig(exe.as_os_str()),
            };
            cmd.args(["serve", "--listen-ng", &ng.to_string(), "--interface", &relay_ip.to_string()])
                .args(["--port-min", &port_min, "--port-max", &port_max])
                .args(["--workers", &workers.to_string(), "--engine", engine, "--log-level", "warn"])
                .args(["--buffers", "16384"])
                .args(
                    args.codec_plugin_dir
                        .iter()
                        .flat_map(|d| [std::ffi::OsStr::new("--codec-plugin-dir"), d.as_os_str()]),
                )
                .args(if *busy { &["--busy-poll"][..] } else { &[][..] })
                .args(io.iter().flat_map(|io| ["--io", io.as_str()]))
                .stdout(Stdio::null());
            if record.is_some() {
                cmd.arg("--recording-dir").arg(recordings);
            }
            if *record == Some(Recording::PcapWav) {
                cmd.args(["--recording-audio", "single,mixed"]);
            }
            if play.is_some() {
                cmd.arg("--media-dir").arg(media_dir(recordings)?);
            }
            // Last, so that they can override the sweep's own.
            cmd.args(extra);
            let child = cmd.spawn().map_err(|e| format!("cannot start {exe_name} serve: {e}"))?;
            Relay { child: Some(child), rtpengine_stop: None, ng }
        }
        RelaySpec::Rtpengine { threads, record } if args.netns.is_some() => {
            // In the rig: in the foreground (the script execs rtpengine), a child of ours.
            let mut cmd = in_rig(args.rtpengine_start.as_os_str());
            cmd.env("NG_PORT", ng.port().to_string())
                .env("ADDR", relay_ip.to_string())
                .env("FOREGROUND", "1")
                .env("EXTRA_ARGS", rtpengine_recording(*record, recordings))
                .env("THREADS", threads.to_string())
                .env("PORT_MIN", &port_min)
                .env("PORT_MAX", &port_max)
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some(cpus) = &args.relay_cpus {
                cmd.env("CPU", cpus);
            }
            if args.transcode_to.is_some() {
                // rtpengine sends transcoded audio from its media threads
                // (with none, it forwards almost nothing).
                cmd.env("MEDIA_THREADS", threads.to_string());
            }
            let child = cmd.spawn().map_err(|e| format!("{}: {e}", args.rtpengine_start.display()))?;
            Relay { child: Some(child), rtpengine_stop: None, ng }
        }
        RelaySpec::Rtpengine { threads, record } => {
            let script = &args.rtpengine_start;
            let stop = script.with_file_name("stop.sh");
            let mut cmd = Command::new(script);
            cmd.env("NG_PORT", ng.port().to_string())
                .env("EXTRA_ARGS", rtpengine_recording(*record, recordings))
                .env("THREADS", threads.to_string())
                .env("PORT_MIN", &port_min)
                .env("PORT_MAX", &port_max)
                .stdout(Stdio::null());
            if let Some(cpus) = &args.relay_cpus {
                cmd.env("CPU", cpus);
            }
            if args.transcode_to.is_some() {
                // As above: transcoded audio leaves from rtpengine's media threads.
                cmd.env("MEDIA_THREADS", threads.to_string());
            }
            let ok = cmd.status().map_err(|e| format!("{}: {e}", script.display()))?;
            if !ok.success() {
                return Err(format!("{} failed ({ok})", script.display()));
            }
            Relay { child: None, rtpengine_stop: Some((stop, ng.port())), ng }
        }
    };
    wait_for_ping(spec, &mut relay, args.relay_start_timeout)?;
    Ok(relay)
}

/// Waits until the relay answers an NG ping, for up to `timeout_s` seconds;
/// fails at once when a relay started here exits meanwhile (its own stderr
/// has said why), so a relay that cannot start is not waited for in vain.
fn wait_for_ping(spec: &RelaySpec, relay: &mut Relay, timeout_s: f64) -> Result<(), String> {
    let mut ng_client = NgClient::new(relay.ng)?;
    let started = Instant::now();
    let timeout = Duration::try_from_secs_f64(timeout_s)
        .map_err(|_| format!("--relay-start-timeout {timeout_s}: not a number of seconds"))?;
    let mut said = false;
    loop {
        if let Ok(v) = ng_client.call(&Value::dict().with("command", "ping")) {
            if v.get("result").and_then(Value::as_str) == Some("pong") {
                if said {
                    eprintln!("{} answered ping after {:.1} s", spec.name(), started.elapsed().as_secs_f64());
                }
                return Ok(());
            }
        }
        if let Some(child) = relay.child.as_mut() {
            match child.try_wait() {
                Ok(None) => {}
                Ok(Some(status)) => {
                    // Reaped: Relay's drop must not signal a pid that may
                    // since belong to another process.
                    relay.child = None;
                    return Err(format!(
                        "{} exited ({status}) after {:.1} s, before it answered ping on {}",
                        spec.name(),
                        started.elapsed().as_secs_f64(),
                        relay.ng
                    ));
                }
                Err(e) => return Err(format!("{}: cannot check the relay process: {e}", spec.name())),
            }
        }
        if started.elapsed() >= timeout {
            return Err(format!(
                "{} does not answer ping on {} after {:.0} s (a slower start needs --relay-start-timeout)",
                spec.name(),
                relay.ng,
                started.elapsed().as_secs_f64()
            ));
        }
        if !said {
            // Once, so that a long start (a GPU relay's) does not look like a hang.
            eprintln!("waiting for {} to answer ping on {} (up to {timeout_s:.0} s)", spec.name(), relay.ng);
            said = true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A delay quantile of a result for the table: its value in µs, or `n/a`
/// where the run measured none (JSON null; a max of 0 over no packets).
fn delay_cell(r: &serde_json::Value, key: &str) -> String {
    let d = &r["delay_us"];
    match &d[key] {
        serde_json::Value::Number(n) if d["count"].as_u64() != Some(0) => n.to_string(),
        _ => "n/a".to_string(),
    }
}

/// Pins this process to `cpus` (a taskset list) with sched_setaffinity.
fn pin_self(cpus: &str) -> Result<(), String> {
    let status = Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &std::process::id().to_string()])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("taskset: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("taskset -c {cpus} failed"))
    }
}

/// Does one result meet the bounds?
fn within(r: &serde_json::Value, args: &SweepArgs) -> bool {
    let p99 = r["delay_us"]["p99"].as_f64().unwrap_or(f64::INFINITY);
    let loss = r["loss_ratio"].as_f64().unwrap_or(1.0);
    let setup_ok = r["setup_errors"].as_u64() == Some(0);
    setup_ok && p99 <= args.max_p99_ms * 1000.0 && loss <= args.max_loss
}

fn point(r: &serde_json::Value) -> Option<Point> {
    let d = &r["delay_us"];
    Some(Point {
        calls: r["calls"].as_f64()?,
        p1: d["p1"].as_f64().or(d["p50"].as_f64())?,
        p50: d["p50"].as_f64()?,
        p90: d["p90"].as_f64()?,
        p99: d["p99"].as_f64()?,
        // The relay's process and, when its cores are known, their softirq time.
        cpu: r["relay_cpu_cores"].as_f64().map(|c| c + r["relay_softirq_cores"].as_f64().unwrap_or(0.0)),
    })
}

/// Runs the sweep; writes `OUT/sweep.json` and the figures; prints a table.
pub fn run(args: SweepArgs) -> Result<(), String> {
    if let Some(from) = &args.replot {
        let text = std::fs::read_to_string(from).map_err(|e| format!("{}: {e}", from.display()))?;
        let summary: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", from.display()))?;
        std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
        for f in figures(&summary, &args)? {
            println!("wrote {}", f.display());
        }
        return Ok(());
    }
    let counts = parse_counts(&args.counts)?;
    let specs: Vec<RelaySpec> = args.configs.split(',').map(RelaySpec::parse).collect::<Result<_, _>>()?;
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    if let Some(cpus) = &args.loadgen_cpus {
        pin_self(cpus)?;
    }
    let relay_cores = args.relay_cpus.as_deref().map(parse_cpus).transpose()?.unwrap_or_default();
    let _rig = match &args.netns {
        Some(name) => {
            let rig = Rig::up(&args.rig, name)?;
            enter_netns(&format!("{name}-lg"))?;
            Some(rig)
        }
        None => None,
    };
    let local: std::net::IpAddr = if args.netns.is_some() { RIG_LOADGEN.into() } else { [127, 0, 0, 1].into() };
    let mut configs = Vec::new();
    // A relay that does not start ends the sweep, but the configurations
    // already measured (minutes of runs) are still written out first.
    let mut start_error = None;
    for (ci, spec) in specs.iter().enumerate() {
        // A recording relay writes below the output folder, emptied after
        // each run (the bytes counted first).
        let recordings = std::path::absolute(args.out.join(format!("recordings-{ci}")))
            .map_err(|e| format!("{}: {e}", args.out.display()))?;
        if spec.records() {
            let _ = std::fs::remove_dir_all(&recordings);
            std::fs::create_dir_all(&recordings).map_err(|e| format!("{}: {e}", recordings.display()))?;
        }
        let relay = match start(spec, &args, 9_000 + ci as u16, &recordings) {
            Ok(relay) => relay,
            Err(e) if configs.is_empty() => return Err(e),
            Err(e) => {
                start_error = Some(e);
                break;
            }
        };
        eprintln!("== {}", spec.name());
        eprintln!(
            "{:>7} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "calls", "pkts/s", "loss %", "p50 µs", "p99 µs", "max µs", "CPU"
        );
        let mut points = Vec::new();
        let mut max_ok = None;
        'counts: for &n in &counts {
            let mut all_ok = true;
            for run in 0..args.repeat {
                let lg = LoadgenArgs {
                    ng: relay.ng,
                    calls: n,
                    duration: args.duration,
                    setup_rate: 2000.0,
                    ptime: 20,
                    payload: 160,
                    suite: args.suite.clone(),
                    local,
                    drain: 0.5,
                    json: None,
                    quiet: true,
                    call_duration: args.call_duration,
                    bhca: None,
                    subscribers: None,
                    ramp: None,
                    progress: args.progress,
                    threads: args.loadgen_threads,
                    relay_pid: relay.child.as_ref().map(Child::id),
                    relay_cores: relay_cores.clone(),
                    codec: args.codec.clone(),
                    transcode_to: args.transcode_to.clone(),
                    codec_plugin_dir: args.codec_plugin_dir.clone(),
                    webrtc: args.webrtc,
                    record_call: spec.records(),
                    play_media: spec.plays().map(|_| PROMPT.to_string()),
                    play_share: spec.plays().unwrap_or(0.0),
                    rtcp_interval: args.rtcp_interval,
                };
                let began = Instant::now();
                let result = run_load(&lg);
                if spec.records() {
                    // The recordings of a run are complete once its calls
                    // are deleted; the relay may still be closing the last
                    // (padding and mixing WAVs): until the folder stops
                    // changing.
                    settle(&recordings);
                }
                let mut r = match result {
                    Ok(r) => r,
                    Err(e) => {
                        eprintln!("{n:>7} failed: {e}");
                        points.push(serde_json::json!({ "calls": n, "run": run, "error": e }));
                        break 'counts;
                    }
                };
                r["run"] = run.into();
                if spec.records() {
                    let (bytes, files) = disk_use(&recordings);
                    // Each call recorded from its offer to its delete: about
                    // the run's whole time.
                    let call_minutes = n as f64 * began.elapsed().as_secs_f64() / 60.0;
                    r["recording"] = serde_json::json!({
                        "bytes": bytes,
                        "files": files,
                        "call_minutes": call_minutes,
                        "bytes_per_call_minute": bytes as f64 / call_minutes.max(1e-9),
                    });
                    // Files only: rtpengine keeps the folders it made at start.
                    remove_files(&recordings);
                }
                let ok = within(&r, &args);
                eprintln!(
                    "{:>7} {:>10.0} {:>9.4} {:>9} {:>9} {:>9} {:>9}{}",
                    n,
                    r["packets_per_second"].as_f64().unwrap_or(0.0),
                    100.0 * r["loss_ratio"].as_f64().unwrap_or(0.0),
                    delay_cell(&r, "p50"),
                    delay_cell(&r, "p99"),
                    delay_cell(&r, "max"),
                    point(&r).and_then(|p| p.cpu).map_or("-".into(), |c| format!("{:.0} %", c * 100.0)),
                    if ok { "" } else { "  (over the bounds)" }
                );
                all_ok &= ok;
                points.push(r);
            }
            if all_ok && max_ok.is_none_or(|m| n > m) {
                max_ok = Some(n);
            }
            // Past the thesis's range, stop at the first count over the bounds.
            if !all_ok && n > 150 {
                break;
            }
        }
        drop(relay);
        if spec.records() {
            let _ = std::fs::remove_dir_all(&recordings);
        }
        configs.push(serde_json::json!({
            "name": spec.name(),
            "spec": format!("{spec:?}"),
            "max_calls_within_bounds": max_ok,
            "points": points,
        }));
    }
    let summary = serde_json::json!({
        "machine": crate::machine::machine(),
        "date": chrono_like_now(),
        "bounds": { "p99_ms": args.max_p99_ms, "loss": args.max_loss },
        "runs_per_count": args.repeat,
        "rule": "a count holds when every run at it meets the bounds; max_calls_within_bounds is the largest such count",
        "duration_s": args.duration,
        "suite": args.suite,
        "relay_cpus": args.relay_cpus,
        "loadgen_cpus": args.loadgen_cpus,
        "netns": args.netns,
        "configs": configs,
        "error": start_error,
    });
    let path = args.out.join("sweep.json");
    std::fs::write(&path, serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    // A machine without fonts still keeps its results (draw later with --replot).
    match figures(&summary, &args) {
        Ok(files) => files.iter().for_each(|f| println!("wrote {}", f.display())),
        Err(e) => eprintln!("figures not drawn: {e} (draw them later with --replot {})", path.display()),
    }
    for c in summary["configs"].as_array().into_iter().flatten() {
        println!(
            "{}: largest count within p99 ≤ {} ms and loss ≤ {} %: {}",
            c["name"].as_str().unwrap_or("?"),
            args.max_p99_ms,
            args.max_loss * 100.0,
            // null when even the first count was over the bounds.
            c["max_calls_within_bounds"].as_u64().map_or_else(|| "none".to_string(), |n| n.to_string())
        );
    }
    match start_error {
        Some(e) => Err(format!("{e} (the configurations before it are in {})", path.display())),
        None => Ok(()),
    }
}

/// The figures of a sweep summary.
/// One point per count, the run with the worst p99 where a count ran more
/// than once (the run the capacity rule judges it by), in count order.
fn worst_runs(points: impl Iterator<Item = Point>) -> Vec<Point> {
    let mut out: Vec<Point> = Vec::new();
    for p in points {
        match out.iter_mut().find(|q| q.calls == p.calls) {
            Some(q) if p.p99 > q.p99 => *q = p,
            Some(_) => {}
            None => out.push(p),
        }
    }
    out.sort_by(|a, b| a.calls.total_cmp(&b.calls));
    out
}

pub fn figures(summary: &serde_json::Value, args: &SweepArgs) -> Result<Vec<PathBuf>, String> {
    let configs = summary["configs"].as_array().cloned().unwrap_or_default();
    let series = |filter: &dyn Fn(f64) -> bool| -> Vec<Series> {
        configs
            .iter()
            .map(|c| Series {
                name: c["name"].as_str().unwrap_or("?").to_string(),
                points: worst_runs(c["points"].as_array().into_iter().flatten().filter_map(point))
                    .into_iter()
                    .filter(|p| filter(p.calls))
                    .collect(),
            })
            .collect()
    };
    let machine = summary["machine"].as_str().unwrap_or("");
    let mut files = Vec::new();
    let thesis = series(&|c| (50.0..=150.0).contains(&c));
    if thesis.iter().any(|s| !s.points.is_empty()) {
        files.extend(plot::delay_by_calls(
            &args.out.join("delay-50-150"),
            &format!("Delay through the relay, 50–150 calls ({machine})"),
            &thesis,
        )?);
    }
    let all = series(&|_| true);
    files.extend(plot::delay_by_calls(
        &args.out.join("delay-all"),
        &format!("Delay through the relay by concurrent calls ({machine})"),
        &all,
    )?);
    let hists: Vec<(String, Vec<u64>)> = configs
        .iter()
        .filter_map(|c| {
            let p = c["points"].as_array()?.iter().find(|p| p["calls"].as_u64() == Some(args.histogram_at as u64))?;
            let h: Vec<u64> = p["delay_us"]["histogram_10us"].as_array()?.iter().filter_map(|v| v.as_u64()).collect();
            Some((c["name"].as_str()?.to_string(), h))
        })
        .collect();
    if !hists.is_empty() {
        files.extend(plot::histogram_overlay(
            &args.out.join(format!("histogram-{}", args.histogram_at)),
            &format!("Delay histogram at {} concurrent calls ({machine})", args.histogram_at),
            &hists,
        )?);
    }
    files.extend(plot::calls_vs_cpu(
        &args.out.join("cpu"),
        &format!("Relay CPU by concurrent calls ({machine})"),
        &all,
    )?);
    Ok(files)
}

/// UTC date and time, as `date -u +%FT%TZ` writes it.
fn chrono_like_now() -> String {
    Command::new("date")
        .args(["-u", "+%FT%TZ"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_count_run_more_than_once_is_drawn_at_its_worst_run() {
        use super::{worst_runs, Point};
        let p = |calls, p99| Point { calls, p1: 1.0, p50: 2.0, p90: 3.0, p99, cpu: None };
        let drawn = worst_runs([p(200.0, 300.0), p(100.0, 90.0), p(200.0, 4_000.0), p(200.0, 500.0)].into_iter());
        let got: Vec<(f64, f64)> = drawn.iter().map(|q| (q.calls, q.p99)).collect();
        assert_eq!(got, [(100.0, 90.0), (200.0, 4_000.0)]);
    }

    #[test]
    fn cpu_lists_and_softirq_time() {
        assert_eq!(super::parse_cpus("0").expect("one"), vec![0]);
        assert_eq!(super::parse_cpus("0,2-4").expect("list"), vec![0, 2, 3, 4]);
        assert!(super::parse_cpus("3-1").is_err() && super::parse_cpus("x").is_err());
        assert_eq!(crate::loadgen::softirq_seconds(&[]), None);
        let (a, b) = (crate::loadgen::softirq_seconds(&[0]), crate::loadgen::softirq_seconds(&[0]));
        // /proc/stat has cpu0 wherever this runs; the count never goes back.
        assert!(a.is_some() && b >= a, "{a:?} {b:?}");
    }

    #[test]
    fn capacity_series_take_the_median_run() {
        let j: serde_json::Value = serde_json::json!({"results": [
            {"config": "xdp", "calls": 200, "p50_us": 100, "p99_us": 900, "relay_process_cores": 0.2, "relay_softirq_cores": 0.1},
            {"config": "xdp", "calls": 200, "p50_us": 100, "p99_us": 300, "relay_process_cores": 0.2, "relay_softirq_cores": 0.1},
            {"config": "xdp", "calls": 200, "p50_us": 100, "p99_us": 500, "relay_process_cores": 0.2, "relay_softirq_cores": 0.1},
            {"config": "rtpengine", "calls": 200, "p50_us": 150, "p99_us": 800},
            {"config": "xdp", "calls": 400, "p50_us": 120}
        ]});
        let s = super::capacity_series(&j).expect("series");
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].name.as_str(), s[0].points.len(), s[0].points[0].p99), ("srtpgate xdp", 1, 500.0));
        assert!((s[0].points[0].cpu.expect("cpu") - 0.3).abs() < 1e-9);
        assert_eq!((s[1].name.as_str(), s[1].points[0].cpu), ("rtpengine 10.5", None));
        assert!(super::capacity_series(&serde_json::json!({"results": []})).is_err());
    }

    use super::*;

    #[test]
    fn counts_and_specs_parse() {
        assert_eq!(parse_counts("50:70:10,500").expect("counts"), vec![50, 60, 70, 500]);
        assert!(parse_counts("10:5:1").is_err());
        assert!(parse_counts("0").is_err());
        assert!(parse_counts("x").is_err());
        assert_eq!(
            RelaySpec::parse("srtpgate:gpu:16").expect("spec"),
            RelaySpec::Srtpgate {
                engine: "gpu".into(),
                workers: 16,
                busy: false,
                io: None,
                record: None,
                play: None,
                args: vec![]
            }
        );
        assert_eq!(
            RelaySpec::parse("srtpgate:cpu:1:uring:busy").expect("spec"),
            RelaySpec::Srtpgate {
                engine: "cpu".into(),
                workers: 1,
                busy: true,
                io: Some("uring".into()),
                record: None,
                play: None,
                args: vec![]
            }
        );
        assert_eq!(
            RelaySpec::parse("srtpgate:cpu:1:xdp").expect("spec"),
            RelaySpec::Srtpgate {
                engine: "cpu".into(),
                workers: 1,
                busy: false,
                io: Some("xdp".into()),
                record: None,
                play: None,
                args: vec![]
            }
        );
        assert_eq!(
            RelaySpec::parse("srtpgate:cpu:1:rec-wav").expect("spec"),
            RelaySpec::Srtpgate {
                engine: "cpu".into(),
                workers: 1,
                busy: false,
                io: None,
                record: Some(Recording::PcapWav),
                play: None,
                args: vec![]
            }
        );
        let p = RelaySpec::parse("srtpgate:cpu:1:play10").expect("spec");
        assert_eq!(p.plays(), Some(0.1));
        assert!(p.name().ends_with(", 10 % playing"), "{}", p.name());
        assert!(RelaySpec::parse("srtpgate:cpu:1:play101").is_err());
        // More daemon arguments: the rest of the spec, colons included.
        let q =
            RelaySpec::parse("srtpgate:cpu:1:busy:args=--call-quality off --listen-http 127.0.0.1:8080").expect("spec");
        let RelaySpec::Srtpgate { busy, args, .. } = &q else { panic!("{q:?}") };
        assert!(*busy);
        assert_eq!(args, &["--call-quality", "off", "--listen-http", "127.0.0.1:8080"]);
        assert_eq!(q.name(), "srtpgate cpu, 1 worker, busy-poll, --call-quality off --listen-http 127.0.0.1:8080");
        assert_eq!(
            RelaySpec::parse("srtpgate:cpu:1:args=--call-quality=on").expect("spec").name(),
            "srtpgate cpu, 1 worker, --call-quality=on"
        );
        assert!(RelaySpec::parse("srtpgate:cpu:1:args= ").is_err());
        assert!(RelaySpec::parse("rtpengine:1:args=--x").is_err());
        assert!(RelaySpec::parse("srtpgate:cpu:1:playx").is_err());
        assert_eq!(
            RelaySpec::parse("rtpengine:1:rec").expect("spec"),
            RelaySpec::Rtpengine { threads: 1, record: true }
        );
        assert!(RelaySpec::parse("srtpgate:cpu:1:dpdk").is_err());
        assert_eq!(RelaySpec::parse("rtpengine:2").expect("spec"), RelaySpec::Rtpengine { threads: 2, record: false });
        assert_eq!(
            RelaySpec::parse("ng:127.0.0.1:2223").expect("spec"),
            RelaySpec::Ng("127.0.0.1:2223".parse().expect("addr"))
        );
        assert!(RelaySpec::parse("srtpgate:fpga:1").is_err());
        assert!(RelaySpec::parse("kamailio").is_err());
    }
}

/// Options of `srtpgate loadgen plot-capacity`.
#[derive(clap::Args, Debug)]
pub struct PlotCapacityArgs {
    /// The JSON written by `bench/netns/capacity.py` (`{"meta", "results"}`).
    #[arg(long)]
    pub input: std::path::PathBuf,
    /// Base path of the figures (`-delay` and `-cpu`, `.png` and `.svg`, are appended).
    #[arg(long)]
    pub out: std::path::PathBuf,
    /// The figures' title.
    #[arg(long, default_value = "I/O backends in the namespace rig")]
    pub title: String,
}

/// The series of a capacity run: one per configuration, points in order,
/// with the relay's CPU counted with its core's softirq time.
pub fn capacity_series(json: &serde_json::Value) -> Result<Vec<Series>, String> {
    let rows = json.get("results").and_then(serde_json::Value::as_array).ok_or("no \"results\" list")?;
    let mut series: Vec<Series> = Vec::new();
    for r in rows {
        let f = |k: &str| r.get(k).and_then(serde_json::Value::as_f64);
        let (Some(config), Some(calls), Some(p50), Some(p99)) =
            (r.get("config").and_then(serde_json::Value::as_str), f("calls"), f("p50_us"), f("p99_us"))
        else {
            continue;
        };
        let cpu = match (f("relay_process_cores"), f("relay_softirq_cores")) {
            (Some(a), Some(b)) => Some(a + b),
            (a, _) => a,
        };
        let point = Point { calls, p1: f("p1_us").unwrap_or(p50), p50, p90: f("p90_us").unwrap_or(p99), p99, cpu };
        let name = if config == "rtpengine" { "rtpengine 10.5".to_string() } else { format!("srtpgate {config}") };
        match series.iter_mut().find(|s| s.name == name) {
            Some(s) => s.points.push(point),
            None => series.push(Series { name, points: vec![point] }),
        }
    }
    // Repeated runs of one count: the run with the median p99 stands for it.
    for s in &mut series {
        s.points.sort_by(|a, b| a.calls.total_cmp(&b.calls).then(a.p99.total_cmp(&b.p99)));
        let mut kept = Vec::new();
        let mut i = 0;
        while i < s.points.len() {
            let j = s.points[i..].iter().take_while(|p| p.calls == s.points[i].calls).count();
            kept.push(s.points[i + j / 2].clone());
            i += j;
        }
        s.points = kept;
    }
    if series.is_empty() {
        return Err("no measured points".into());
    }
    Ok(series)
}

/// Runs `srtpgate loadgen plot-capacity`.
pub fn plot_capacity(a: PlotCapacityArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&a.input).map_err(|e| format!("{}: {e}", a.input.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", a.input.display()))?;
    let series = capacity_series(&json).map_err(|e| format!("{}: {e}", a.input.display()))?;
    let base = a.out.to_string_lossy().to_string();
    let mut files = plot::delay_by_calls(std::path::Path::new(&format!("{base}-delay")), &a.title, &series)?;
    files.extend(plot::calls_vs_cpu(std::path::Path::new(&format!("{base}-cpu")), &a.title, &series)?);
    for f in files {
        println!("{}", f.display());
    }
    Ok(())
}
