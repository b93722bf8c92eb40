//! `srtpgate loadgen`: simulated SRTP endpoints that set up calls through a
//! relay over the NG protocol (so it drives `srtpgate serve` and rtpengine
//! alike), then send and receive real SRTP over UDP in both directions, each
//! leg with its own keys, and record every packet's delay through the relay.
//!
//! Threads: the caller (this thread) sets calls up and tears them down; one
//! sender paces every leg's packets (the legs' send times are spread evenly
//! over the packet time, so one cursor over them is the timer wheel); one
//! receiver decrypts, checks and accounts. All endpoints of one side share a
//! socket: the relay tells the calls apart by its own ports, and batched
//! system calls then serve many calls at once. With `--rtcp-interval`, each
//! side has a second socket for RTCP (announced with `a=rtcp`): the sender
//! sends each endpoint's reports as SRTCP, the receiver reads the relay's.

pub mod account;
pub mod plot;
pub mod quality;
pub mod rtcp;
pub mod sweep;
pub mod webrtc;

use crate::relay::sys::{self, Received, RecvScratch, SendScratch, BATCH};
use account::{extend_seq, Delays, StreamRx};
use clap::Args;
use crossbeam_channel::{unbounded, Receiver, Sender};
use rand::{rngs::OsRng, Rng, SeedableRng, TryRngCore};
use srtp::{Context, CpuEngine, Suite};
use srtpgate_codec::Registry;
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::formats::Format;
use srtpgate_sdp::Sdp;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `srtpgate loadgen [OPTIONS]` runs one load; `srtpgate loadgen sweep` a series.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LoadgenCli {
    #[command(subcommand)]
    cmd: Option<LoadgenCmd>,
    #[command(flatten)]
    args: LoadgenArgs,
}

// Parsed once from the command line: the variants' sizes do not matter.
#[allow(clippy::large_enum_variant)]
#[derive(clap::Subcommand, Debug)]
enum LoadgenCmd {
    /// Run the load at a series of call counts for one or more relays; JSON and figures.
    Sweep(sweep::SweepArgs),
    /// Figures of `bench/netns/capacity.py` results: delay by calls and
    /// calls against relay CPU, one series per relay configuration.
    PlotCapacity(sweep::PlotCapacityArgs),
    /// One transcoded call with real speech, loss and jitter; writes what
    /// each endpoint hears as WAV (for PESQ) and the delay through the relay.
    Quality(quality::QualityArgs),
}

/// Runs `srtpgate loadgen`.
pub fn main(cli: LoadgenCli) -> Result<(), String> {
    match cli.cmd {
        Some(LoadgenCmd::Sweep(a)) => sweep::run(a),
        Some(LoadgenCmd::PlotCapacity(a)) => sweep::plot_capacity(a),
        Some(LoadgenCmd::Quality(a)) => quality::run(a),
        None => run(cli.args),
    }
}

/// Options of `srtpgate loadgen`.
#[derive(Args, Debug, Clone)]
pub struct LoadgenArgs {
    /// The relay's NG address.
    #[arg(long, default_value = "127.0.0.1:2223")]
    pub ng: SocketAddr,
    /// Concurrent calls.
    #[arg(long, default_value_t = 100)]
    pub calls: usize,
    /// Seconds of measurement once every call is up.
    #[arg(long, default_value_t = 10.0)]
    pub duration: f64,
    /// Calls set up per second during ramp-up.
    #[arg(long, default_value_t = 500.0)]
    pub setup_rate: f64,
    /// Packet time in ms.
    #[arg(long, default_value_t = 20)]
    pub ptime: u32,
    /// Payload bytes per packet (160 = G.711 at 20 ms).
    #[arg(long, default_value_t = 160)]
    pub payload: usize,
    /// SDES suite of both legs.
    #[arg(long, default_value = "AES_CM_128_HMAC_SHA1_80")]
    pub suite: String,
    /// Address of the simulated endpoints.
    #[arg(long, default_value = "127.0.0.1")]
    pub local: IpAddr,
    /// Seconds to wait for in-flight packets after the measurement.
    #[arg(long, default_value_t = 0.5)]
    pub drain: f64,
    /// Write the result as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Print nothing but the result.
    #[arg(long)]
    pub quiet: bool,
    /// Seconds each call lasts before it is torn down and replaced by a new
    /// one (call churn; 0 = calls last the whole test).
    #[arg(long, default_value_t = 0.0)]
    pub call_duration: f64,
    /// Busy-hour call attempts: sets the call duration to calls × 3600 / BHCA.
    #[arg(long)]
    pub bhca: Option<f64>,
    /// Subscribers the calls are drawn from (at least 2 × calls; names only).
    #[arg(long)]
    pub subscribers: Option<usize>,
    /// Seconds over which the calls are first set up (instead of --setup-rate).
    #[arg(long)]
    pub ramp: Option<f64>,
    /// Sender/receiver thread pairs (each with its own two sockets).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Show a progress line (calls, packets/s, loss, current p99) on stderr.
    #[arg(long)]
    pub progress: bool,
    /// The caller's only codec (rtpmap name, e.g. PCMU): the legs send real
    /// encoded audio in it instead of test payloads (--payload is then the
    /// codec's frame).
    #[arg(long)]
    pub codec: Option<String>,
    /// The callee's only codec: each offer asks the relay to transcode
    /// (`codec-transcode-<this>`, `codec-mask-<--codec>`), so every call is
    /// transcoded both ways. The delay is then measured by sequence number
    /// (the payload is re-encoded).
    #[arg(long = "transcode-to", requires = "codec")]
    pub transcode_to: Option<String>,
    /// The caller of every call is a browser: ICE (a nominating check to
    /// the relay's candidate), DTLS-SRTP (a handshake per call, the keys
    /// exported), rtcp-mux, `UDP/TLS/RTP/SAVPF`; the callee an SDES phone.
    /// The NG options are a Kamailio WebRTC bridge's.
    #[arg(long, conflicts_with = "codec")]
    pub webrtc: bool,
    /// Codec plugins for --codec and --transcode-to.
    #[arg(long = "codec-plugin-dir", env = "SRTPGATE_CODEC_PLUGIN_DIR")]
    pub codec_plugin_dir: Option<std::path::PathBuf>,
    /// Every offer asks the relay to record the call (`record call: yes`,
    /// as Kamailio's `record-call=yes`); the relay needs a recording
    /// directory.
    #[arg(long)]
    pub record_call: bool,
    /// A prompt of the relay's media directory (`--media-dir`) played to the
    /// callee of a share of the calls (`--play-share`) from its setup to its
    /// end (`play media`, repeated): the callee's leg then counts the
    /// prompt's packets instead of the caller's, which the relay drops, and
    /// neither counts towards loss or delay.
    #[arg(long)]
    pub play_media: Option<String>,
    /// The share of calls that --play-media plays to (every 1/share-th call).
    #[arg(long, default_value_t = 0.1)]
    pub play_share: f64,
    /// Every endpoint sends RTCP as a phone does, every SECONDS (0: none): a
    /// compound of an SR (NTP time from the wall clock, the RTP time on the
    /// stream's clock, packets and octets sent) with one report block on the
    /// stream it receives (fraction and cumulative lost, extended highest
    /// sequence number, RFC 3550 interarrival jitter, LSR/DLSR of the last
    /// SR received), and an SDES CNAME, as SRTCP under the leg's SRTP key.
    /// The first at a random offset within the interval (a seeded generator:
    /// the same offsets every run). It goes to the relay's RTCP port from its
    /// SDP (`a=rtcp`, else the RTP port + 1; the RTP port under rtcp-mux, as
    /// the --webrtc caller has); the endpoints announce their own RTCP socket
    /// with `a=rtcp`, and read the SRTCP the relay sends them there.
    #[arg(long, default_value_t = 5.0, value_name = "SECONDS")]
    pub rtcp_interval: f64,
    /// The relay's process (when known: a sweep started it), for its CPU
    /// time; otherwise found through the NG port in /proc.
    #[arg(skip)]
    pub relay_pid: Option<u32>,
    /// The relay's cores: their softirq time (/proc/stat) is counted as
    /// relay CPU as well (the kernel's packet work runs there).
    #[arg(skip)]
    pub relay_cores: Vec<usize>,
}

/// One sender/receiver pair with its endpoint sockets: RTP of side 0 and
/// side 1, then (with RTCP) RTCP of side 0 and side 1.
struct Group {
    ports: Vec<u16>,
    /// The RTCP sockets' ports (none without RTCP).
    rtcp_ports: Vec<u16>,
    /// The sockets' inodes (their kernel drop counts, /proc/net/udp).
    inodes: Vec<u64>,
    /// With --webrtc: the browser on the caller socket.
    browser: Option<webrtc::Browser>,
    tx: Sender<TxMsg>,
    rx: Sender<RxLeg>,
    sender: std::thread::JoinHandle<(Vec<u64>, u64)>,
    receiver: std::thread::JoinHandle<RxResult>,
}

impl Group {
    fn start(
        args: &LoadgenArgs,
        g: usize,
        legs: usize,
        clock: Clock,
        window: Arc<Window>,
        live: Arc<Live>,
        audio: Option<Arc<Audio>>,
    ) -> Result<Group, String> {
        let rtcp_ns = rtcp_interval_ns(args.rtcp_interval)?;
        let socks: Vec<UdpSocket> = (0..if rtcp_ns.is_some() { 4 } else { 2 })
            .map(|_| {
                let s = UdpSocket::bind(SocketAddr::new(args.local, 0)).map_err(|e| format!("endpoint socket: {e}"))?;
                set_buffers(&s, 64 << 20);
                Ok(s)
            })
            .collect::<Result<_, String>>()?;
        let mut ports: Vec<u16> = socks.iter().map(|s| s.local_addr().map(|a| a.port()).unwrap_or(0)).collect();
        let rtcp_ports = ports.split_off(2);
        // What each leg's receiver has seen, for its endpoint's reports.
        let shared: Arc<Vec<rtcp::Shared>> =
            Arc::new(if rtcp_ns.is_some() { (0..legs).map(|_| rtcp::Shared::default()).collect() } else { Vec::new() });
        let inodes = socks.iter().filter_map(socket_inode).collect();
        let (tx, tx_rx) = unbounded::<TxMsg>();
        let (rx, rx_rx) = unbounded::<RxLeg>();
        let send_socks: Vec<UdpSocket> =
            socks.iter().map(|s| s.try_clone()).collect::<Result<_, _>>().map_err(|e| e.to_string())?;
        let (period, payload) = (Duration::from_millis(args.ptime as u64), args.payload);
        let (w2, l2) = (window.clone(), live.clone());
        // Send times by leg and sequence number, for packets whose payload
        // the relay re-encodes.
        let times: Arc<Vec<AtomicU64>> =
            Arc::new(if audio.is_some() { (0..legs * TIMES).map(|_| AtomicU64::new(0)).collect() } else { Vec::new() });
        let (a2, t2) = (audio.clone(), times.clone());
        // With --webrtc, what arrives on the caller socket that is not RTP
        // (STUN answers, DTLS) goes to the browser, which sets calls up.
        let (browser, signals) = if args.webrtc {
            let (sig_tx, sig_rx) = crossbeam_channel::bounded(1024);
            let sock = socks[0].try_clone().map_err(|e| e.to_string())?;
            (Some(webrtc::Browser::new(sock, sig_rx)?), Some(sig_tx))
        } else {
            (None, None)
        };
        // RTP clock of each side's codec (a leg sends and receives its own).
        let clocks = audio.as_ref().map_or([8000u64; 2], |a| a.codecs.clone().map(|f| f.clock_rate as u64));
        let reports = Reports { interval_ns: rtcp_ns, shared: shared.clone(), seed: RTCP_SEED + g as u64 };
        let sender = std::thread::Builder::new()
            .name(format!("lg-send-{g}"))
            .spawn(move || sender(send_socks, tx_rx, legs, period, payload, clock, w2, l2, a2, t2, reports))
            .map_err(|e| e.to_string())?;
        let receiver = std::thread::Builder::new()
            .name(format!("lg-recv-{g}"))
            .spawn(move || receiver(socks, rx_rx, legs, clock, window, clocks, live, times, signals, shared))
            .map_err(|e| e.to_string())?;
        Ok(Group { ports, rtcp_ports, inodes, browser, tx, rx, sender, receiver })
    }
}

/// Send times kept per leg (a ring by sequence number).
const TIMES: usize = 256;

/// Seed of the RTCP offsets (plus the group's index).
const RTCP_SEED: u64 = 0x5254_4350;

/// The run's clock: its start, and the wall-clock time then (ns since the
/// Unix epoch), from which RTCP's NTP times are counted.
#[derive(Clone, Copy)]
struct Clock {
    epoch: Instant,
    wall_ns: u64,
}

impl Clock {
    fn start() -> Clock {
        let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Clock { epoch: Instant::now(), wall_ns: wall.as_nanos() as u64 }
    }

    /// ns since the start.
    fn elapsed(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    /// The NTP time of `t` ns since the start.
    fn ntp(&self, t: u64) -> u64 {
        rtcp::ntp(self.wall_ns + t)
    }
}

/// `--rtcp-interval` in ns, `None` for 0 (no RTCP).
fn rtcp_interval_ns(secs: f64) -> Result<Option<u64>, String> {
    if !secs.is_finite() || !(0.0..=3600.0).contains(&secs) {
        return Err(format!("loadgen: --rtcp-interval {secs}: 0 (none) to 3600 seconds"));
    }
    Ok((secs > 0.0).then(|| ((secs * 1e9) as u64).max(1_000_000)))
}

/// The sender's RTCP: the interval, what the receiver publishes per leg, and
/// the seed of the first reports' offsets.
struct Reports {
    interval_ns: Option<u64>,
    shared: Arc<Vec<rtcp::Shared>>,
    seed: u64,
}

/// Real audio for the legs: one second of a speech-like signal encoded in
/// the caller's codec (side 0) and the callee's (side 1), frame by frame.
pub struct Audio {
    codecs: [Format; 2],
    frames: [Vec<Vec<u8>>; 2],
    transcode: bool,
}

impl Audio {
    /// Encodes the signal with `codec` (and `to`) from `registry`.
    pub fn new(registry: &Registry, codec: &str, to: Option<&str>, ptime_ms: u32) -> Result<Audio, String> {
        let mut codecs = Vec::new();
        let mut frames = Vec::new();
        for (side, name) in [Some(codec), to.or(Some(codec))].into_iter().flatten().enumerate() {
            let (plugin, index) = registry
                .plugins()
                .iter()
                .find_map(|p| p.codecs().iter().position(|c| c.name.eq_ignore_ascii_case(name)).map(|i| (p.clone(), i)))
                .ok_or_else(|| format!("loadgen: no codec {name:?} (see `srtpgate codecs`)"))?;
            let info = plugin.codecs()[index].clone();
            let mut enc = plugin.instance(index, None, None).map_err(|e| e.to_string())?;
            let rate = info.pcm_rate as usize;
            let per_frame = rate * ptime_ms as usize / 1000 * info.pcm_channels as usize;
            let pcm = speech_like(rate, info.pcm_channels as usize);
            let mut out = vec![0u8; 4096];
            let mut list = Vec::new();
            for chunk in pcm.chunks_exact(per_frame.max(1)) {
                let n = enc.encode(chunk, &mut out).map_err(|e| e.to_string())?;
                list.push(out[..n].to_vec());
            }
            if list.is_empty() {
                return Err(format!("loadgen: codec {name} gave no frames"));
            }
            let pt = info.static_pt.unwrap_or(96 + side as u8);
            codecs.push(Format {
                pt,
                name: info.name.clone(),
                clock_rate: info.clock_rate,
                channels: info.channels,
                fmtp: info.fmtp.clone(),
                extra: Vec::new(),
            });
            frames.push(list);
        }
        let (Ok(codecs), Ok(frames)) = (<[Format; 2]>::try_from(codecs), <[Vec<Vec<u8>>; 2]>::try_from(frames)) else {
            return Err("loadgen: two codecs expected".into());
        };
        Ok(Audio { codecs, frames, transcode: to.is_some() })
    }
}

/// One second of a voice-like signal: a 140 Hz glottal tone with formant-
/// like harmonics, in syllables of about 250 ms, at about −20 dBov.
fn speech_like(rate: usize, channels: usize) -> Vec<i16> {
    let mut out = Vec::with_capacity(rate * channels);
    for i in 0..rate {
        let t = i as f64 / rate as f64;
        let f0 = 140.0 + 20.0 * (2.0 * std::f64::consts::PI * 3.0 * t).sin();
        let mut x = 0.0;
        for (h, a) in [(1.0, 1.0), (2.0, 0.6), (3.0, 0.5), (5.0, 0.3), (8.0, 0.15), (13.0, 0.08)] {
            x += a * (2.0 * std::f64::consts::PI * f0 * h * t).sin();
        }
        let env = (0.5 - 0.5 * (2.0 * std::f64::consts::PI * 4.0 * t).cos()).powf(0.7);
        let v = (x * env * 1300.0) as i16;
        out.extend(std::iter::repeat_n(v, channels));
    }
    out
}

/// Call setups so far.
#[derive(Default)]
struct Tally {
    serial: u64,
    setups: u64,
    setup_errors: u64,
    callee_suites: Vec<Suite>,
    first_error: Option<String>,
}

/// Live counters for the progress line.
#[derive(Default)]
struct Live {
    sent: AtomicU64,
    received: AtomicU64,
    /// p99 of the last half second, µs.
    recent_p99_us: AtomicU64,
}

/// The sender's inputs.
enum TxMsg {
    /// A leg starts sending.
    Add(Box<TxLeg>),
    /// A leg stops (its call ends).
    Remove(usize),
}

/// Runs the load and prints (and optionally writes) the result.
pub fn run(args: LoadgenArgs) -> Result<(), String> {
    let result = run_load(&args)?;
    let text = serde_json::to_string_pretty(&result).map_err(|e| e.to_string())?;
    if let Some(path) = &args.json {
        std::fs::write(path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    println!("{text}");
    Ok(())
}

/// A request/reply client of the NG protocol.
pub struct NgClient {
    sock: UdpSocket,
    seq: u64,
    prefix: String,
}

impl NgClient {
    /// A client of the relay at `to`.
    pub fn new(to: SocketAddr) -> Result<NgClient, String> {
        let bind: SocketAddr = if to.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" }.parse().map_err(|_| "address")?;
        let sock = UdpSocket::bind(bind).map_err(|e| format!("NG socket: {e}"))?;
        sock.connect(to).map_err(|e| format!("NG {to}: {e}"))?;
        sock.set_read_timeout(Some(Duration::from_millis(500))).map_err(|e| e.to_string())?;
        Ok(NgClient { sock, seq: 0, prefix: format!("{:x}", sys::now_ns() & 0xffff_ffff) })
    }

    /// Sends a request and waits for its reply (resending twice on silence).
    pub fn call(&mut self, body: &Value) -> Result<Value, String> {
        self.seq += 1;
        let cookie = format!("{}_{}", self.prefix, self.seq);
        let msg = srtpgate_ng::request(&cookie, body);
        let mut buf = vec![0u8; srtpgate_ng::MAX_DATAGRAM];
        for _ in 0..3 {
            self.sock.send(&msg).map_err(|e| format!("NG send: {e}"))?;
            let deadline = Instant::now() + Duration::from_millis(1500);
            while Instant::now() < deadline {
                let Ok(n) = self.sock.recv(&mut buf) else { break };
                let Ok((c, v)) = srtpgate_ng::parse_reply(&buf[..n]) else { continue };
                if c == cookie.as_bytes() {
                    return Ok(v);
                }
            }
        }
        Err("no NG reply from the relay".into())
    }
}

/// An ok reply's SDP, or the error.
pub(crate) fn reply_sdp(v: &Value, what: &str) -> Result<String, String> {
    match v.get("result").and_then(Value::as_str) {
        Some("ok") => v.get("sdp").and_then(Value::as_str).map(str::to_string).ok_or(format!("{what}: no sdp")),
        _ => Err(format!(
            "{what}: {}",
            v.get("error-reason").and_then(Value::as_str).unwrap_or("relay refused without a reason")
        )),
    }
}

/// An SDES endpoint's SDP; `rtcp`: its RTCP port (`a=rtcp`, RFC 3605).
pub(crate) fn endpoint_sdp(
    id: u64,
    ip: IpAddr,
    port: u16,
    rtcp: Option<u16>,
    crypto: &CryptoAttr,
    codec: Option<&Format>,
) -> String {
    let fam = if ip.is_ipv6() { "IP6" } else { "IP4" };
    let (pt, map) = match codec {
        Some(f) => (f.pt, f.rtpmap()),
        None => (0, "0 PCMU/8000".to_string()),
    };
    let fmtp = codec.and_then(|f| f.fmtp.as_ref()).map_or_else(String::new, |p| format!("a=fmtp:{pt} {p}\r\n"));
    let rtcp = rtcp.map_or_else(String::new, |p| format!("a=rtcp:{p}\r\n"));
    format!(
        "v=0\r\no=- {id} 1 IN {fam} {ip}\r\ns=-\r\nc=IN {fam} {ip}\r\nt=0 0\r\nm=audio {port} RTP/SAVP {pt}\r\na=rtpmap:{map}\r\n{fmtp}a=ptime:20\r\na=sendrecv\r\n{rtcp}a=crypto:{crypto}\r\n"
    )
}

/// Where the relay takes an SDES endpoint's media, from an SDP it wrote.
pub(crate) struct RelaySide {
    /// RTP.
    pub rtp: SocketAddr,
    /// RTCP: `a=rtcp` (RFC 3605), else the RTP port + 1. The endpoints offer
    /// no rtcp-mux, so an `a=rtcp-mux` of the relay's does not apply.
    pub rtcp: SocketAddr,
    /// Its crypto lines.
    pub crypto: Vec<CryptoAttr>,
}

/// The relay's addresses and crypto lines, from an SDP it wrote.
pub(crate) fn relay_side(sdp: &str) -> Result<RelaySide, String> {
    let s = Sdp::parse(sdp).map_err(|e| format!("relay SDP: {e}"))?;
    let m = s.media().first().ok_or("relay SDP without media")?;
    let ip = s.media_connection(0).ok_or("relay SDP without address")?;
    let c: Vec<CryptoAttr> = m.crypto().into_iter().filter_map(Result::ok).collect();
    if c.is_empty() {
        return Err("relay SDP without a usable a=crypto".into());
    }
    let rtcp = match m.rtcp() {
        Some((port, addr)) => SocketAddr::new(addr.unwrap_or(ip), port),
        None => SocketAddr::new(ip, m.port().wrapping_add(1)),
    };
    Ok(RelaySide { rtp: SocketAddr::new(ip, m.port()), rtcp, crypto: c })
}

/// The line the callee answers: never one that carries the caller's own key
/// (a relay that offers it lets the callee pick it and then forwards SRTP
/// without decrypting: rtpengine 10.5 does so). Preference: the requested
/// suite, then the same cipher with the other tag length, then any.
pub(crate) fn pick_line(lines: &[CryptoAttr], caller: &CryptoAttr, suite: Suite) -> Option<CryptoAttr> {
    let fresh: Vec<&CryptoAttr> = lines
        .iter()
        .filter(|c| c.keys.first().map(|k| &k.key_salt[..]) != caller.keys.first().map(|k| &k.key_salt[..]))
        .collect();
    fresh
        .iter()
        .find(|c| c.suite == suite)
        .or_else(|| fresh.iter().find(|c| c.suite.cipher() == suite.cipher()))
        .or_else(|| fresh.first())
        .map(|c| (*c).clone())
}

pub(crate) fn context(c: &CryptoAttr) -> Result<Context<CpuEngine>, String> {
    let mut p = c.policy().map_err(|e| e.to_string())?;
    p.max_streams = 4;
    Context::new(p, CpuEngine::new()).map_err(|e| e.to_string())
}

/// A leg ready to send: its index, its context and where it sends.
struct TxLeg {
    leg: usize,
    ctx: Context<CpuEngine>,
    to: SocketAddr,
    ssrc: u32,
    /// Payload type (with --codec).
    pt: u8,
    /// Its packets count towards loss (not: the relay plays a prompt in
    /// their place).
    counted: bool,
    /// Its endpoint's RTCP (none without --rtcp-interval).
    rtcp: Option<RtcpTx>,
}

/// Where an endpoint's RTCP goes and what it calls itself.
struct RtcpTx {
    /// The group's socket it leaves from (the RTP one under rtcp-mux).
    sock: usize,
    /// The relay's RTCP address for the leg.
    to: SocketAddr,
    /// SDES CNAME.
    cname: Box<[u8]>,
}

/// A leg ready to receive: the relay port packets come from, and its context.
struct RxLeg {
    leg: usize,
    from_port: u16,
    /// The relay's RTCP port that its SRTCP comes from to the side's RTCP
    /// socket (none under rtcp-mux: it comes from `from_port`).
    rtcp_port: Option<u16>,
    side: usize,
    ctx: Context<CpuEngine>,
    /// It hears a prompt (--play-media): its packets are counted apart.
    played: bool,
}

/// The measurement window, in ns since the run's start (0 = not yet).
struct Window {
    start: AtomicU64,
    end: AtomicU64,
    stop: AtomicBool,
}

/// Runs one load and returns its result as JSON (see docs/OPERATIONS.md).
pub fn run_load(args: &LoadgenArgs) -> Result<serde_json::Value, String> {
    let suite: Suite = args.suite.parse().map_err(|e: srtp::Error| e.to_string())?;
    if args.calls == 0 || args.ptime == 0 || args.payload < 16 || args.payload > 1400 {
        return Err("loadgen: calls ≥ 1, ptime ≥ 1 ms, payload 16..=1400 bytes".into());
    }
    let legs = 2 * args.calls;
    let subscribers = args.subscribers.unwrap_or(2 * args.calls);
    if subscribers < 2 * args.calls {
        return Err(format!("loadgen: {subscribers} subscribers cannot hold {} concurrent calls", args.calls));
    }
    let call_secs = match args.bhca {
        Some(b) if b > 0.0 => args.calls as f64 * 3600.0 / b,
        Some(_) => return Err("loadgen: --bhca must be positive".into()),
        None => args.call_duration.max(0.0),
    };
    let setup_rate = match args.ramp {
        Some(r) if r > 0.0 => args.calls as f64 / r,
        _ => args.setup_rate.max(1.0),
    };
    let live = Arc::new(Live::default());
    let threads = args.threads.clamp(1, 64).min(args.calls);
    let rtcp_ns = rtcp_interval_ns(args.rtcp_interval)?;
    let clock = Clock::start();
    let epoch = clock.epoch;
    let window =
        Arc::new(Window { start: AtomicU64::new(0), end: AtomicU64::new(u64::MAX), stop: AtomicBool::new(false) });
    let audio = match &args.codec {
        Some(c) => {
            let mut registry = Registry::new();
            if let Some(dir) = &args.codec_plugin_dir {
                for e in registry.load_dir(dir).map_err(|e| e.to_string())? {
                    eprintln!("loadgen: codec plugin not loaded: {e}");
                }
            }
            Some(Arc::new(Audio::new(&registry, c, args.transcode_to.as_deref(), args.ptime)?))
        }
        None => None,
    };
    // Call i belongs to group i % threads: its own sockets, sender and receiver.
    let mut groups = Vec::with_capacity(threads);
    for g in 0..threads {
        let calls_g = args.calls.div_ceil(threads);
        groups.push(Group::start(args, g, 2 * calls_g, clock, window.clone(), live.clone(), audio.clone())?);
    }
    let _ = legs;

    // Ramp up.
    let mut ng = NgClient::new(args.ng)?;
    let run_id = sys::now_ns() % 1_000_000_007;
    let setup_start = Instant::now();
    let mut slots: Vec<Option<(String, Instant)>> = (0..args.calls).map(|_| None).collect();
    let mut t = Tally::default();
    let progress = (args.progress && !args.quiet).then(|| {
        let pb = indicatif::ProgressBar::new_spinner();
        pb.enable_steady_tick(Duration::from_millis(200));
        pb
    });
    let new_call = |t: &mut Tally, ng: &mut NgClient, i: usize, now: Instant, first_round: bool| {
        t.serial += 1;
        let call_id = format!("lg-{run_id}-{}", t.serial);
        // Caller and callee: two distinct subscribers of the pool.
        let sub = (t.serial as usize * 2) % subscribers;
        let g = &groups[i % threads];
        let legs = (&g.tx, &g.rx, g.browser.as_ref());
        let record = args.record_call;
        let play = args.play_media.as_deref().filter(|_| plays(i, args.play_share));
        match setup_call(
            ng,
            &call_id,
            i / threads,
            sub,
            args.local,
            &g.ports,
            &g.rtcp_ports,
            suite,
            legs,
            audio.as_deref(),
            record,
            play,
        ) {
            Ok(callee_suite) => {
                t.setups += 1;
                if !t.callee_suites.contains(&callee_suite) {
                    t.callee_suites.push(callee_suite);
                }
                // With churn, the first calls end at spread-out times so
                // that call attempts arrive evenly afterwards.
                let secs = if call_secs <= 0.0 {
                    f64::INFINITY
                } else if first_round {
                    call_secs * (i as f64 + 1.0) / args.calls as f64
                } else {
                    call_secs
                };
                Some((call_id, now + Duration::from_secs_f64(secs.min(1e9))))
            }
            Err(e) => {
                t.setup_errors += 1;
                t.first_error.get_or_insert(e);
                None
            }
        }
    };
    for (i, slot) in slots.iter_mut().enumerate() {
        let due = setup_start + Duration::from_secs_f64(i as f64 / setup_rate);
        if let Some(d) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(d);
        }
        *slot = new_call(&mut t, &mut ng, i, Instant::now(), true);
        if let Some(pb) = &progress {
            pb.set_message(format!("setting up calls: {}/{}", i + 1, args.calls));
        }
    }
    let up = slots.iter().flatten().count();
    if up == 0 {
        window.stop.store(true, Relaxed);
        return Err(format!("no call could be set up: {}", t.first_error.unwrap_or_default()));
    }
    let setup_s = setup_start.elapsed().as_secs_f64();
    // Let every call's first packets through, then measure.
    std::thread::sleep(Duration::from_millis(5 * args.ptime as u64));
    let start = epoch.elapsed().as_nanos() as u64;
    window.start.store(start, Relaxed);
    let relay_before = ng.call(&Value::dict().with("command", "statistics")).ok();
    let relay_cpu_now = || match args.relay_pid {
        Some(pid) => cpu_seconds(&format!("/proc/{pid}/stat")).map(|c| (c, pid)),
        None => process_cpu(args.ng),
    };
    let cpu_before = relay_cpu_now();
    let softirq_before = softirq_seconds(&args.relay_cores);
    let own_before = cpu_seconds("/proc/self/stat");
    let (setups_before, measure_start) = (t.setups, Instant::now());
    let measure_end = measure_start + Duration::from_secs_f64(args.duration);
    let mut ending: Vec<(usize, Instant)> = Vec::new();
    let mut is_ending = vec![false; slots.len()];
    let mut deletes = 0u64;
    let mut delete_errors = 0u64;
    let mut next_progress = Instant::now();
    while Instant::now() < measure_end {
        let now = Instant::now();
        // Calls whose time is up stop sending, and are deleted and replaced
        // a little later (packets in flight still count).
        for (i, slot) in slots.iter_mut().enumerate() {
            if slot.as_ref().is_some_and(|(_, end)| *end <= now) && !is_ending[i] {
                is_ending[i] = true;
                let g = &groups[i % threads];
                let _ = g.tx.send(TxMsg::Remove(2 * (i / threads)));
                let _ = g.tx.send(TxMsg::Remove(2 * (i / threads) + 1));
                ending.push((i, now + Duration::from_millis(100)));
            }
        }
        let due: Vec<usize> = ending.iter().filter(|(_, t)| *t <= now).map(|(i, _)| *i).collect();
        ending.retain(|(_, t)| *t > now);
        for i in due {
            is_ending[i] = false;
            if let Some((id, _)) = slots[i].take() {
                deletes += 1;
                if !delete(&mut ng, &id) {
                    delete_errors += 1;
                }
            }
            slots[i] = new_call(&mut t, &mut ng, i, Instant::now(), false);
        }
        if now >= next_progress {
            next_progress = now + Duration::from_millis(500);
            if let Some(pb) = &progress {
                let secs = measure_start.elapsed().as_secs_f64().max(1e-3);
                let (sent, recv) = (live.sent.load(Relaxed), live.received.load(Relaxed));
                pb.set_message(format!(
                    "calls {} | {:.0} packets/s | received {:.3} % | p99 {} µs | {:.0}/{:.0} s",
                    slots.iter().flatten().count(),
                    sent as f64 / secs,
                    if sent > 0 { 100.0 * recv as f64 / sent as f64 } else { 100.0 },
                    live.recent_p99_us.load(Relaxed),
                    secs,
                    args.duration
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let end = epoch.elapsed().as_nanos() as u64;
    window.end.store(end, Relaxed);
    let cpu_after = relay_cpu_now();
    let softirq_after = softirq_seconds(&args.relay_cores);
    let own_after = cpu_seconds("/proc/self/stat");
    let relay_after = ng.call(&Value::dict().with("command", "statistics")).ok();
    let attempts_in_window = t.setups - setups_before;
    std::thread::sleep(Duration::from_secs_f64(args.drain));
    // Before the threads stop and close the sockets.
    let own_drops = socket_drops(&groups.iter().flat_map(|g| g.inodes.iter().copied()).collect::<Vec<_>>());
    window.stop.store(true, Relaxed);
    if let Some(pb) = progress {
        pb.finish_and_clear();
    }
    let mut sent: Vec<u64> = Vec::new();
    let mut rtcp_sent = 0;
    let mut rx = RxResult::empty();
    for g in groups {
        let (s, r) = g.sender.join().map_err(|_| "sender thread panicked")?;
        sent.extend(s);
        rtcp_sent += r;
        rx.merge(g.receiver.join().map_err(|_| "receiver thread panicked")?);
    }
    // Tear down.
    for (id, _) in slots.iter().flatten() {
        deletes += 1;
        if !delete(&mut ng, id) {
            delete_errors += 1;
        }
    }
    let calls_up = up;
    let sent_total: u64 = sent.iter().sum();
    let all: Vec<&StreamRx> = rx.streams.iter().chain(rx.finished.iter()).collect();
    let received: u64 = all.iter().map(|s| s.received).sum();
    let lost = sent_total.saturating_sub(rx.in_window);
    let loss = if sent_total > 0 { lost as f64 / sent_total as f64 } else { 0.0 };
    let q = |x| rx.delays.quantile_us(x);
    let jitter: Vec<u64> = all.iter().filter(|s| s.received > 1).map(|s| s.jitter()).collect();
    let secs = (end - start) as f64 / 1e9;
    let relay_cpu = match (cpu_before, cpu_after) {
        (Some((b, _)), Some((a, _))) => Some((a - b) / secs),
        _ => None,
    };
    let rtcp_json = serde_json::json!({
        "interval_s": rtcp_ns.map_or(0.0, |ns| ns as f64 / 1e9),
        "sent": rtcp_sent,
        "received": rx.rtcp.received,
        "auth_failures": rx.rtcp.auth_failures,
        "report_blocks_received": rx.rtcp.blocks,
        // The endpoints' round trips through the relay (A − LSR − DLSR).
        "rtt_us": {
            "count": rx.rtcp.rtt_n,
            "mean": (rx.rtcp.rtt_n > 0).then(|| to_us(rx.rtcp.rtt_sum) / rx.rtcp.rtt_n as f64),
            "max": (rx.rtcp.rtt_n > 0).then(|| to_us(rx.rtcp.rtt_max as u64)),
        },
    });
    let mut result = serde_json::json!({
        "calls": calls_up,
        "subscribers": subscribers,
        "call_seconds": if call_secs > 0.0 { Some(call_secs) } else { None },
        "call_attempts": t.setups + t.setup_errors,
        "call_attempts_per_hour_measured": attempts_in_window as f64 * 3600.0 / ((end - start) as f64 / 1e9),
        "deletes": deletes,
        "setup_errors": t.setup_errors,
        "first_setup_error": t.first_error,
        "delete_errors": delete_errors,
        "setup_seconds": setup_s,
        "suite": suite.name(),
        "callee_suites": t.callee_suites.iter().map(|s| s.name()).collect::<Vec<_>>(),
        "ptime_ms": args.ptime,
        "payload_bytes": audio.as_ref().map_or(args.payload, |a| a.frames[0][0].len()),
        "codec": audio.as_ref().map(|a| a.codecs[0].to_string()),
        "transcode_to": audio.as_ref().filter(|a| a.transcode).map(|a| a.codecs[1].to_string()),
        "measured_seconds": secs,
        "packets_sent": sent_total,
        "packets_received": rx.in_window,
        "packets_received_all": received,
        "packets_per_second": sent_total as f64 / secs,
        "lost": lost,
        "loss_ratio": loss,
        "duplicates": all.iter().map(|s| s.duplicates).sum::<u64>(),
        "reordered": all.iter().map(|s| s.reordered).sum::<u64>(),
        "auth_failures": rx.auth_failures,
        "played": args.play_media.as_ref().map(|file| {
            let calls = (0..calls_up).filter(|&i| plays(i, args.play_share)).count();
            serde_json::json!({
                "file": file,
                "calls": calls,
                "packets_received": rx.played,
                "packets_per_call_second": rx.played as f64 / (calls.max(1) as f64 * secs),
            })
        }),
        "receive_buffer_drops": own_drops,
        "unknown_source": rx.unknown,
        "jitter_max_rtp_units": jitter.iter().max().copied().unwrap_or(0),
        "jitter_mean_rtp_units": if jitter.is_empty() { 0.0 } else { jitter.iter().sum::<u64>() as f64 / jitter.len() as f64 },
        "delay_us": {
            "p1": q(0.01), "p50": q(0.5), "p90": q(0.9), "p99": q(0.99), "p999": q(0.999),
            "max": rx.delays.max_us(), "mean": rx.delays.mean_us(), "count": rx.delays.count(),
            "histogram_10us": rx.delays.histogram(10, 20_000),
        },
        "relay_cpu_cores": relay_cpu,
        "relay_softirq_cores": softirq_before.zip(softirq_after).map(|(b, a)| (a - b) / secs),
        "loadgen_cpu_cores": own_before.zip(own_after).map(|(b, a)| (a - b) / secs),
        "relay_delay_us": relay_window(relay_before.as_ref(), relay_after.as_ref()),
        "relay_statistics_after": relay_after.as_ref().map(value_json),
    });
    // (beside the rest: one more key would pass json!'s recursion limit)
    result["delay_by_second"] = serde_json::Value::from(rx.timeline.rows());
    result["rtcp"] = rtcp_json;
    if !args.quiet {
        eprintln!(
            "loadgen: {} calls, {:.0} packets/s, loss {:.4} %, delay p50 {} p99 {} max {}{}",
            calls_up,
            sent_total as f64 / secs,
            loss * 100.0,
            micros(q(0.5)),
            micros(q(0.99)),
            // With no packet received there is no delay: not 0 µs.
            micros((rx.delays.count() > 0).then(|| rx.delays.max_us())),
            relay_cpu.map(|c| format!(", relay CPU {:.0} %", c * 100.0)).unwrap_or_default()
        );
    }
    Ok(result)
}

/// A time in 1/65536 s in µs.
fn to_us(units: u64) -> f64 {
    units as f64 * 1e6 / 65_536.0
}

/// A delay for a summary line: `110 µs`, or `n/a` when no packet was
/// measured (a run in which nothing came back has no quantiles).
pub(crate) fn micros(us: Option<u64>) -> String {
    us.map_or_else(|| "n/a".to_string(), |us| format!("{us} µs"))
}

/// Sets socket buffers: past net.core.[rw]mem_max where the process may
/// (SO_RCVBUFFORCE, CAP_NET_ADMIN), else best effort up to it. The load
/// generator's two sockets a thread take every call's packets, so their
/// receive buffer is what lets it ride out being descheduled.
fn set_buffers(s: &UdpSocket, bytes: usize) {
    let forced = |opt: libc::c_int| {
        let v = bytes as libc::c_int;
        // SAFETY: setsockopt on an open socket with a c_int value of the
        // size given.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    };
    let r = socket2::SockRef::from(s);
    if !forced(libc::SO_RCVBUFFORCE) {
        let _ = r.set_recv_buffer_size(bytes);
    }
    if !forced(libc::SO_SNDBUFFORCE) {
        let _ = r.set_send_buffer_size(bytes);
    }
}

/// A socket's inode (its line in /proc/net/udp).
fn socket_inode(s: &UdpSocket) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/fd/{}", s.as_raw_fd())).ok().map(|m| m.ino())
}

/// Datagrams the kernel dropped on these sockets (their receive buffers were
/// full): the `drops` column of /proc/net/udp and udp6, by inode.
pub fn socket_drops(inodes: &[u64]) -> Option<u64> {
    let mut total = None;
    for file in ["/proc/net/udp", "/proc/net/udp6"] {
        let Ok(text) = std::fs::read_to_string(file) else { continue };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode ref pointer drops
            let (Some(ino), Some(drops)) = (f.get(9).and_then(|v| v.parse::<u64>().ok()), f.get(12)) else {
                continue;
            };
            if inodes.contains(&ino) {
                *total.get_or_insert(0) += drops.parse::<u64>().unwrap_or(0);
            }
        }
    }
    total
}

/// CPU seconds used so far by the process listening on the NG port (found
/// through /proc), when it runs on this host.
fn process_cpu(ng: SocketAddr) -> Option<(f64, u32)> {
    let pid = pid_of_udp_port(ng.port())?;
    Some((cpu_seconds(&format!("/proc/{pid}/stat"))?, pid))
}

/// Softirq seconds so far of `cores` (/proc/stat), or `None` for no cores.
pub fn softirq_seconds(cores: &[usize]) -> Option<f64> {
    if cores.is_empty() {
        return None;
    }
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let mut ticks = 0u64;
    for line in stat.lines() {
        let mut f = line.split_whitespace();
        let Some(cpu) = f.next().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        if cores.contains(&cpu) {
            // user nice system idle iowait irq softirq
            ticks += f.nth(6)?.parse::<u64>().ok()?;
        }
    }
    Some(ticks as f64 / 100.0)
}

/// User + system CPU seconds of a process, from its /proc stat file.
pub(crate) fn cpu_seconds(stat_path: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(stat_path).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = 100.0; // USER_HZ on Linux
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks)
}

fn pid_of_udp_port(port: u16) -> Option<u32> {
    let mut inodes = Vec::new();
    for file in ["/proc/net/udp", "/proc/net/udp6"] {
        let Ok(t) = std::fs::read_to_string(file) else { continue };
        for line in t.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local_port =
                f.get(1).and_then(|a| a.rsplit_once(':')).and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port == Some(port) {
                inodes.extend(f.get(9).map(|s| format!("socket:[{s}]")));
            }
        }
    }
    let procs = std::fs::read_dir("/proc").ok()?;
    for p in procs.flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            if let Ok(target) = std::fs::read_link(fd.path()) {
                if inodes.iter().any(|i| target.to_string_lossy() == *i) {
                    return Some(pid);
                }
            }
        }
    }
    None
}

/// The relay's own delay histogram (srtpgate's `statistics`) over the
/// measurement: bucket counts after minus before, and the upper bound of the
/// bucket holding each quantile (`null` beyond the last bound).
fn relay_window(before: Option<&Value>, after: Option<&Value>) -> Option<serde_json::Value> {
    let get = |v: Option<&Value>, k: &str| -> Option<Vec<i64>> {
        let l = v?.get("statistics")?.get("relaydelay")?.get(k)?.as_list()?;
        l.iter().map(Value::as_int).collect()
    };
    let (bounds, b, a) = (get(after, "bounds us")?, get(before, "counts")?, get(after, "counts")?);
    let counts: Vec<i64> = a.iter().zip(&b).map(|(x, y)| x - y).collect();
    let n: i64 = counts.iter().sum();
    let q = |x: f64| -> Option<i64> {
        let rank = ((x * n as f64).ceil() as i64).max(1);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bounds.get(i).copied();
            }
        }
        None
    };
    (n > 0).then(|| {
        serde_json::json!({
            "count": n, "p50_at_most": q(0.5), "p90_at_most": q(0.9), "p99_at_most": q(0.99),
            "p999_at_most": q(0.999), "bounds_us": bounds, "counts": counts,
        })
    })
}

/// A bencode value as JSON (for the result file).
fn value_json(v: &Value) -> serde_json::Value {
    match v {
        Value::Int(i) => serde_json::json!(i),
        Value::Bytes(b) => serde_json::json!(String::from_utf8_lossy(b)),
        Value::List(l) => serde_json::Value::Array(l.iter().map(value_json).collect()),
        Value::Dict(d) => serde_json::Value::Object(
            d.iter().map(|(k, v)| (String::from_utf8_lossy(k).into_owned(), value_json(v))).collect(),
        ),
    }
}

/// Offer and answer for call `i`: side 0 (caller) and side 1 (callee)
/// endpoints share the two sockets (and the two RTCP sockets of
/// `rtcp_ports`, when there are); each leg gets its own fresh key.
#[allow(clippy::too_many_arguments)]
fn setup_call(
    ng: &mut NgClient,
    call_id: &str,
    i: usize,
    sub: usize,
    ip: IpAddr,
    ports: &[u16],
    rtcp_ports: &[u16],
    suite: Suite,
    (tx, rx, browser): (&Sender<TxMsg>, &Sender<RxLeg>, Option<&webrtc::Browser>),
    audio: Option<&Audio>,
    record: bool,
    play: Option<&str>,
) -> Result<Suite, String> {
    let a_key = CryptoAttr::generate(1, suite, &mut OsRng.unwrap_err());
    let mut offer = Value::dict()
        .with("command", "offer")
        .with("call-id", call_id)
        .with("from-tag", format!("sub{sub}-{call_id}"))
        .with(
            "sdp",
            endpoint_sdp(2 * i as u64, ip, ports[0], rtcp_ports.first().copied(), &a_key, audio.map(|a| &a.codecs[0])),
        )
        .with("ICE", "remove")
        .with("transport-protocol", "RTP/SAVP")
        .with("replace", vec![Value::from("origin"), Value::from("session-connection")]);
    if let Some(b) = browser {
        offer = webrtc::Browser::offer_options(offer.with("sdp", b.offer_sdp(2 * i as u64, ip, ports[0])));
    }
    if record {
        offer.insert("record call", "yes");
    }
    if let Some(a) = audio.filter(|a| a.transcode) {
        offer = offer.with(
            "flags",
            vec![
                Value::from(format!("codec-transcode-{}", a.codecs[1]).as_str()),
                Value::from(format!("codec-mask-{}", a.codecs[0]).as_str()),
            ],
        );
    }
    let to_b = reply_sdp(&ng.call(&offer)?, "offer")?;
    // The callee's codec on the payload type the relay offered it.
    let b_codec = match audio {
        Some(a) => {
            let want = &a.codecs[usize::from(a.transcode)];
            let offered = Sdp::parse(&to_b).map_err(|e| format!("relay SDP: {e}"))?;
            let f = offered.media().first().map(|m| m.payload_formats()).unwrap_or_default();
            let mut f =
                f.into_iter().find(|f| f.same_codec(want)).ok_or_else(|| format!("the relay did not offer {want}"))?;
            // The callee answers with its own codec parameters.
            if want.fmtp.is_some() {
                f.fmtp = want.fmtp.clone();
            }
            Some(f)
        }
        None => None,
    };
    let side_b = relay_side(&to_b)?;
    let relay_key_b = pick_line(&side_b.crypto, &a_key, suite)
        .ok_or("the relay offered the callee only the caller's own key (SRTP passed through, not re-keyed)")?;
    // The callee answers with the relay's tag for the suite it picked, and a
    // key of its own.
    let mut b_ans = CryptoAttr::generate(relay_key_b.tag, relay_key_b.suite, &mut OsRng.unwrap_err());
    b_ans.session_params = relay_key_b.session_params.clone();
    let answer = Value::dict()
        .with("command", "answer")
        .with("call-id", call_id)
        .with("from-tag", format!("sub{sub}-{call_id}"))
        .with("to-tag", format!("sub{}-{call_id}", sub + 1))
        .with("sdp", endpoint_sdp(2 * i as u64 + 1, ip, ports[1], rtcp_ports.get(1).copied(), &b_ans, b_codec.as_ref()))
        .with("ICE", "remove")
        .with("transport-protocol", "RTP/SAVP")
        .with("replace", vec![Value::from("origin"), Value::from("session-connection")]);
    let answer = if browser.is_some() { webrtc::Browser::answer_options(answer) } else { answer };
    let to_a = reply_sdp(&ng.call(&answer)?, "answer")?;
    // The caller's contexts and the relay's addresses for it: from the SDES
    // answer, or from ICE and the DTLS handshake (rtcp-mux: RTCP on the RTP
    // address).
    let (relay_a, relay_a_rtcp, a_mux, a_tx, a_rx) = match browser {
        Some(b) => {
            let c = b.connect(&to_a)?;
            (c.relay, c.relay, true, c.tx, c.rx)
        }
        None => {
            let side_a = relay_side(&to_a)?;
            let relay_key_a = side_a
                .crypto
                .into_iter()
                .find(|c| c.tag == a_key.tag)
                .ok_or("the answer has no crypto line with the caller's tag")?;
            (side_a.rtp, side_a.rtcp, false, context(&a_key)?, context(&relay_key_a)?)
        }
    };
    let (la, lb) = (2 * i, 2 * i + 1);
    let rtcp_on = rtcp_ports.len() == 2;
    // An endpoint's RTCP: from its side's RTCP socket (the RTP one under
    // rtcp-mux) to the relay's RTCP address.
    let rtcp_tx = |side: usize, mux: bool, to: SocketAddr, ssrc: u32| {
        rtcp_on.then(|| RtcpTx {
            sock: if mux { side } else { 2 + side },
            to,
            cname: format!("{ssrc:08x}@{ip}").into_bytes().into_boxed_slice(),
        })
    };
    let send = |leg, ctx: Context<CpuEngine>, to, pt, counted, rtcp: (bool, SocketAddr)| -> Result<(), String> {
        let ssrc = rand::random::<u32>() | 1;
        let rtcp = rtcp_tx(leg % 2, rtcp.0, rtcp.1, ssrc);
        tx.send(TxMsg::Add(Box::new(TxLeg { leg, ctx, to, ssrc, pt, counted, rtcp })))
            .map_err(|_| "sender gone".to_string())
    };
    let rtcp_port = |mux: bool, at: SocketAddr| (rtcp_on && !mux).then_some(at.port());
    // The receiver first (side 0 receives from the relay's port for side 0
    // with the relay's key for it), so no packet arrives before its leg.
    rx.send(RxLeg {
        leg: la,
        from_port: relay_a.port(),
        rtcp_port: rtcp_port(a_mux, relay_a_rtcp),
        side: 0,
        ctx: a_rx,
        played: false,
    })
    .map_err(|_| "receiver gone")?;
    rx.send(RxLeg {
        leg: lb,
        from_port: side_b.rtp.port(),
        rtcp_port: rtcp_port(false, side_b.rtcp),
        side: 1,
        ctx: context(&relay_key_b)?,
        played: play.is_some(),
    })
    .map_err(|_| "receiver gone")?;
    if let Some(file) = play {
        // The callee hears the prompt, repeated for as long as the relay
        // allows (a day), in place of the caller.
        let r = ng.call(
            &Value::dict()
                .with("command", "play media")
                .with("call-id", call_id)
                .with("from-tag", format!("sub{}-{call_id}", sub + 1))
                .with("file", file)
                .with("repeat-duration", 86_400_000i64),
        )?;
        if r.get("result").and_then(Value::as_str) != Some("ok") {
            return Err(format!("play media: {}", r.get("error-reason").and_then(Value::as_str).unwrap_or("?")));
        }
    }
    send(la, a_tx, relay_a, audio.map_or(0, |a| a.codecs[0].pt), play.is_none(), (a_mux, relay_a_rtcp))?;
    send(lb, context(&b_ans)?, side_b.rtp, b_codec.map_or(0, |f| f.pt), true, (false, side_b.rtcp))?;
    Ok(relay_key_b.suite)
}

/// Whether call slot `i` hears a prompt (--play-media): every
/// 1/`share`-th slot, the same slot again when its call is replaced.
fn plays(i: usize, share: f64) -> bool {
    let share = share.clamp(0.0, 1.0);
    ((i + 1) as f64 * share).floor() > (i as f64 * share).floor()
}

/// The pacing of every leg: leg `i` sends at `round × period + i × period / legs`,
/// so the legs' packets are spread evenly over the packet time and one cursor
/// visits them in the order they fall due.
#[derive(Clone, Debug)]
pub struct Wheel {
    period_ns: u64,
    legs: usize,
    round: u64,
    cur: usize,
}

impl Wheel {
    /// A wheel over `legs` legs (at least 1) with packet time `period_ns`.
    pub fn new(period_ns: u64, legs: usize) -> Wheel {
        Wheel { period_ns, legs: legs.max(1), round: 0, cur: 0 }
    }
    /// When the leg under the cursor is due (ns since the start).
    pub fn due(&self) -> u64 {
        self.round * self.period_ns + (self.cur as u128 * self.period_ns as u128 / self.legs as u128) as u64
    }
    /// The leg under the cursor.
    pub fn leg(&self) -> usize {
        self.cur
    }
    /// Moves to the next leg (and round).
    pub fn advance(&mut self) {
        self.cur += 1;
        if self.cur == self.legs {
            self.cur = 0;
            self.round += 1;
        }
    }
}

/// Deletes a call; true when the relay said ok.
fn delete(ng: &mut NgClient, id: &str) -> bool {
    let r = ng.call(&Value::dict().with("command", "delete").with("call-id", id));
    r.ok().and_then(|v| v.get("result").and_then(Value::as_str).map(|s| s == "ok")) == Some(true)
}

/// A sending leg and its stream's state.
struct TxSlot {
    leg: TxLeg,
    seq: u16,
    ts: u32,
    /// Packets and payload octets sent (the SR's counts).
    packets: u32,
    octets: u32,
    /// When its endpoint's next RTCP is due (ns since the start; never
    /// without RTCP).
    rtcp_due: u64,
    reporter: rtcp::Reporter,
}

/// Paces every leg's packets (and its endpoint's RTCP); returns the packets
/// sent in the window per leg, and the RTCP packets sent.
#[allow(clippy::too_many_arguments)]
fn sender(
    socks: Vec<UdpSocket>,
    new_legs: Receiver<TxMsg>,
    legs: usize,
    period: Duration,
    payload: usize,
    clock: Clock,
    window: Arc<Window>,
    live: Arc<Live>,
    audio: Option<Arc<Audio>>,
    times: Arc<Vec<AtomicU64>>,
    reports: Reports,
) -> (Vec<u64>, u64) {
    let mut slots: Vec<Option<TxSlot>> = (0..legs).map(|_| None).collect();
    let mut sent_in_window = vec![0u64; legs];
    let mut rtcp_sent = 0u64;
    let mut scratch = SendScratch::new();
    let biggest = audio.as_ref().map_or(payload, |a| a.frames.iter().flatten().map(Vec::len).max().unwrap_or(payload));
    let out_len = (12 + biggest + srtp::MAX_TRAILER_LEN).max(rtcp::MAX_COMPOUND + srtp::MAX_RTCP_TRAILER_LEN);
    let mut out: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; out_len]).collect();
    let mut lens = [0usize; BATCH];
    let mut dest: [(usize, SocketAddr); BATCH] = [(0, SocketAddr::from(([0, 0, 0, 0], 0))); BATCH];
    let mut plain = vec![0u8; 12 + biggest];
    let mut report = [0u8; rtcp::MAX_COMPOUND];
    let period_ns = period.as_nanos() as u64;
    let mut wheel = Wheel::new(period_ns, legs);
    // The first reports' offsets within the interval: the same every run.
    let mut rng = rand::rngs::StdRng::seed_from_u64(reports.seed);
    // Cursor of the timer wheel: leg `cur` sends at `round * period + cur * step`.

    while !window.stop.load(Relaxed) {
        for m in new_legs.try_iter() {
            match m {
                TxMsg::Add(l) if l.leg < legs => {
                    let i = l.leg;
                    let rtcp_due = match (&l.rtcp, reports.interval_ns) {
                        (Some(_), Some(every)) => clock.elapsed() + rng.random_range(0..every),
                        _ => u64::MAX,
                    };
                    slots[i] = Some(TxSlot {
                        leg: *l,
                        seq: rand::random(),
                        ts: rand::random(),
                        packets: 0,
                        octets: 0,
                        rtcp_due,
                        reporter: rtcp::Reporter::default(),
                    });
                }
                TxMsg::Remove(i) if i < legs => slots[i] = None,
                _ => {}
            }
        }
        let now = clock.elapsed();
        let mut n = 0;
        loop {
            let (due, cur) = (wheel.due(), wheel.leg());
            if due > now || n == BATCH {
                break;
            }
            if let Some(TxSlot { leg, seq, ts, packets, octets, rtcp_due, reporter }) = slots[cur].as_mut() {
                // Payload: send time (ns since the run's start), leg, filler.
                let t = clock.elapsed();
                plain[0] = 0x80;
                plain[1] = leg.pt;
                plain[2..4].copy_from_slice(&seq.to_be_bytes());
                plain[4..8].copy_from_slice(&ts.to_be_bytes());
                plain[8..12].copy_from_slice(&leg.ssrc.to_be_bytes());
                let len = match &audio {
                    Some(a) => {
                        // Real audio: the send time goes into the table the
                        // receiver reads by sequence number.
                        let frames = &a.frames[leg.leg % 2];
                        let f = &frames[*seq as usize % frames.len()];
                        plain[12..12 + f.len()].copy_from_slice(f);
                        if let Some(slot) = times.get(leg.leg * TIMES + *seq as usize % TIMES) {
                            slot.store(t, Relaxed);
                        }
                        12 + f.len()
                    }
                    None => {
                        plain[12..20].copy_from_slice(&t.to_be_bytes());
                        plain[20..24].copy_from_slice(&(leg.leg as u32).to_be_bytes());
                        plain.len()
                    }
                };
                if let Ok(out_len) = leg.ctx.protect_rtp(&plain[..len], &mut out[n]) {
                    lens[n] = out_len;
                    dest[n] = (leg.leg % 2, leg.to);
                    live.sent.fetch_add(1, Relaxed);
                    if t >= window.start.load(Relaxed) && window.start.load(Relaxed) > 0 && t < window.end.load(Relaxed)
                    {
                        sent_in_window[leg.leg] += u64::from(leg.counted);
                    }
                    *packets = packets.wrapping_add(1);
                    *octets = octets.wrapping_add((len - 12) as u32);
                    n += 1;
                }
                // The endpoint's report, at the instant of this packet (its
                // RTP time is the packet's); a full batch puts it off a
                // packet time.
                if *rtcp_due <= t && n < BATCH {
                    if let (Some(r), Some(every)) = (&leg.rtcp, reports.interval_ns) {
                        // Every interval after the first; one late by more
                        // than an interval (a stalled sender) starts afresh.
                        let next = rtcp_due.saturating_add(every);
                        *rtcp_due = if next > t { next } else { t.saturating_add(every) };
                        let info =
                            rtcp::SenderInfo { ntp: clock.ntp(t), rtp_ts: *ts, packets: *packets, octets: *octets };
                        let seen = reports.shared.get(leg.leg).map(rtcp::Shared::read).unwrap_or_default();
                        let block = reporter.block(&seen, rtcp::mid(info.ntp));
                        let len = rtcp::write_compound(&mut report, leg.ssrc, &info, block.as_ref(), &r.cname);
                        if let Ok(out_len) = leg.ctx.protect_rtcp(&report[..len], &mut out[n]) {
                            lens[n] = out_len;
                            dest[n] = (r.sock, r.to);
                            rtcp_sent += 1;
                            n += 1;
                        }
                    }
                }
                *seq = seq.wrapping_add(1);
                let clock_rate = audio.as_ref().map_or(8000, |a| a.codecs[leg.leg % 2].clock_rate as u64);
                *ts = ts.wrapping_add((period_ns * clock_rate / 1_000_000_000) as u32);
            }
            wheel.advance();
        }
        // Send per socket (legs alternate sides; one sendmmsg per socket).
        for (i, sock) in socks.iter().enumerate() {
            let mut msgs: [(&[u8], SocketAddr); BATCH] = [(&[][..], dest[0].1); BATCH];
            let mut m = 0;
            for k in (0..n).filter(|&k| dest[k].0 == i) {
                msgs[m] = (&out[k][..lens[k]], dest[k].1);
                m += 1;
            }
            let mut done = 0;
            while done < m {
                match sys::send_batch(sock.as_raw_fd(), &mut scratch, &msgs[done..m]) {
                    Ok(k) if k > 0 => done += k,
                    _ => break,
                }
            }
        }
        if n < BATCH {
            // Sleep in ticks of at least 200 µs rather than spin: packets due
            // meanwhile leave together, up to 200 µs late, each stamped with
            // its real send time (what the delay is measured from).
            let next = wheel.due();
            let now = clock.elapsed();
            if next > now {
                std::thread::sleep(Duration::from_nanos((next - now).clamp(200_000, 1_000_000)));
            }
        }
    }
    (sent_in_window, rtcp_sent)
}

impl RxResult {
    fn empty() -> RxResult {
        RxResult {
            streams: Vec::new(),
            finished: Vec::new(),
            delays: Delays::new(),
            timeline: account::Timeline::default(),
            in_window: 0,
            auth_failures: 0,
            unknown: 0,
            played: 0,
            rtcp: RtcpRx::default(),
        }
    }

    fn merge(&mut self, o: RxResult) {
        self.streams.extend(o.streams);
        self.finished.extend(o.finished);
        self.delays.merge(&o.delays);
        self.timeline.merge(&o.timeline);
        self.in_window += o.in_window;
        self.auth_failures += o.auth_failures;
        self.unknown += o.unknown;
        self.played += o.played;
        self.rtcp.merge(&o.rtcp);
    }
}

/// The SRTCP the endpoints received (the whole run).
#[derive(Clone, Copy, Debug, Default)]
struct RtcpRx {
    received: u64,
    auth_failures: u64,
    /// Report blocks in it.
    blocks: u64,
    /// Round trips from those with an LSR, in 1/65536 s.
    rtt_n: u64,
    rtt_sum: u64,
    rtt_max: u32,
}

impl RtcpRx {
    fn merge(&mut self, o: &RtcpRx) {
        self.received += o.received;
        self.auth_failures += o.auth_failures;
        self.blocks += o.blocks;
        self.rtt_n += o.rtt_n;
        self.rtt_sum += o.rtt_sum;
        self.rtt_max = self.rtt_max.max(o.rtt_max);
    }
}

struct RxResult {
    streams: Vec<StreamRx>,
    /// Streams of calls that ended (churn).
    finished: Vec<StreamRx>,
    delays: Delays,
    /// The delays by the second they were sent in.
    timeline: account::Timeline,
    in_window: u64,
    auth_failures: u64,
    unknown: u64,
    /// Packets of legs that hear a prompt, in the window.
    played: u64,
    rtcp: RtcpRx,
}

/// Takes the legs of newly set up calls. `by_port`: the leg by the relay's
/// port, per socket (RTP of side 0 and 1, then RTCP of side 0 and 1).
fn add_legs(
    new_legs: &Receiver<RxLeg>,
    by_port: &mut [Vec<u32>],
    ctxs: &mut [Option<Context<CpuEngine>>],
    played: &mut [bool],
    shared: &[rtcp::Shared],
    r: &mut RxResult,
) {
    for l in new_legs.try_iter() {
        if l.leg < ctxs.len() && l.side < 2 {
            by_port[l.side][l.from_port as usize] = l.leg as u32;
            if let (Some(port), Some(table)) = (l.rtcp_port, by_port.get_mut(2 + l.side)) {
                table[port as usize] = l.leg as u32;
            }
            if let Some(s) = shared.get(l.leg) {
                s.reset();
            }
            ctxs[l.leg] = Some(l.ctx);
            played[l.leg] = l.played;
            // A new call in this slot: keep the old stream's counts.
            let old = std::mem::take(&mut r.streams[l.leg]);
            if old.received + old.duplicates > 0 {
                r.finished.push(old);
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn receiver(
    socks: Vec<UdpSocket>,
    new_legs: Receiver<RxLeg>,
    legs: usize,
    clock: Clock,
    window: Arc<Window>,
    clocks: [u64; 2],
    live: Arc<Live>,
    times: Arc<Vec<AtomicU64>>,
    signals: Option<Sender<webrtc::Signal>>,
    shared: Arc<Vec<rtcp::Shared>>,
) -> RxResult {
    // The last half second's delays, 10 µs buckets up to 100 ms (for the progress line).
    let mut recent = vec![0u32; 10_001];
    let mut recent_at = Instant::now();
    let mut by_port: Vec<Vec<u32>> = vec![vec![u32::MAX; 65_536]; socks.len()];
    let mut ctxs: Vec<Option<Context<CpuEngine>>> = (0..legs).map(|_| None).collect();
    let mut r = RxResult {
        streams: vec![StreamRx::default(); legs],
        finished: Vec::new(),
        delays: Delays::new(),
        timeline: account::Timeline::default(),
        in_window: 0,
        auth_failures: 0,
        unknown: 0,
        played: 0,
        rtcp: RtcpRx::default(),
    };
    let mut played = vec![false; legs];
    for s in &socks {
        let _ = s.set_read_timeout(Some(Duration::from_millis(5)));
    }
    let mut scratch = RecvScratch::new();
    let mut bufs: Vec<Vec<u8>> = (0..BATCH).map(|_| vec![0u8; 2048]).collect();
    let mut got = [Received { len: 0, from: None, rx_ns: None, truncated: false }; BATCH];
    let mut plain = vec![0u8; 2048];
    let mut poll = mio::Poll::new().ok();
    let mut events = mio::Events::with_capacity(4);
    let mut mio_socks: Vec<mio::net::UdpSocket> = socks
        .iter()
        .filter_map(|s| s.try_clone().ok())
        .map(|s| {
            let _ = s.set_nonblocking(true);
            mio::net::UdpSocket::from_std(s)
        })
        .collect();
    if let Some(p) = poll.as_mut() {
        for (i, s) in mio_socks.iter_mut().enumerate() {
            let _ = p.registry().register(s, mio::Token(i), mio::Interest::READABLE);
        }
    }
    while !window.stop.load(Relaxed) {
        add_legs(&new_legs, &mut by_port, &mut ctxs, &mut played, &shared, &mut r);
        if recent_at.elapsed() >= Duration::from_millis(500) {
            recent_at = Instant::now();
            let n: u64 = recent.iter().map(|&c| c as u64).sum();
            if n > 0 {
                let rank = n - n / 100;
                let mut seen = 0u64;
                let p99 = recent.iter().position(|&c| {
                    seen += c as u64;
                    seen >= rank
                });
                live.recent_p99_us.store(p99.map_or(100_000, |b| b as u64 * 10), Relaxed);
            }
            recent.iter_mut().for_each(|c| *c = 0);
        }
        if let Some(p) = poll.as_mut() {
            let _ = p.poll(&mut events, Some(Duration::from_millis(5)));
        }
        for (i, s) in socks.iter().enumerate() {
            // RTP sockets of side 0 and 1, then RTCP sockets.
            let side = i % 2;
            loop {
                let n = sys::recv_batch(s.as_raw_fd(), &mut scratch, &mut bufs, &mut got).unwrap_or(0);
                for k in 0..n {
                    let now = clock.elapsed();
                    let Some(from) = got[k].from else { continue };
                    if i == 0 && got[k].len > 0 && bufs[k][0] < 128 {
                        // STUN or DTLS for the browser (--webrtc).
                        if let Some(s) = &signals {
                            let _ = s.try_send((from, bufs[k][..got[k].len].to_vec()));
                            continue;
                        }
                    }
                    if i >= 2 || rtcp::is_rtcp(&bufs[k][..got[k].len]) {
                        // SRTCP, on the RTCP socket or multiplexed (RFC 5761):
                        // never counted as RTP.
                        let port = from.port() as usize;
                        let mut leg = by_port[i][port];
                        if leg == u32::MAX {
                            add_legs(&new_legs, &mut by_port, &mut ctxs, &mut played, &shared, &mut r);
                            leg = by_port[i][port];
                        }
                        let Some(Some(ctx)) = ctxs.get_mut(leg as usize) else {
                            r.unknown += 1;
                            continue;
                        };
                        let Ok(len) = ctx.unprotect_rtcp(&bufs[k][..got[k].len], &mut plain) else {
                            r.rtcp.auth_failures += 1;
                            continue;
                        };
                        r.rtcp.received += 1;
                        let at = rtcp::mid(clock.ntp(now));
                        let (mine, stats) = (shared.get(leg as usize), &mut r.rtcp);
                        rtcp::read(
                            &plain[..len],
                            |_, ntp| {
                                if let Some(m) = mine {
                                    m.sender_report(rtcp::mid(ntp), at);
                                }
                            },
                            |b| {
                                stats.blocks += 1;
                                if let Some(rtt) = b.rtt(at) {
                                    stats.rtt_n += 1;
                                    stats.rtt_sum += u64::from(rtt);
                                    stats.rtt_max = stats.rtt_max.max(rtt);
                                }
                            },
                        );
                        continue;
                    }
                    let mut leg = by_port[side][from.port() as usize];
                    if leg == u32::MAX {
                        // A call set up a moment ago: its leg may still be in the channel.
                        add_legs(&new_legs, &mut by_port, &mut ctxs, &mut played, &shared, &mut r);
                        leg = by_port[side][from.port() as usize];
                    }
                    let pkt = &bufs[k][..got[k].len];
                    let mut opened = match ctxs.get_mut(leg as usize) {
                        Some(Some(ctx)) => ctx.unprotect_rtp(pkt, &mut plain).ok(),
                        _ => {
                            r.unknown += 1;
                            continue;
                        }
                    };
                    if opened.is_none() {
                        // The relay gave this port to a newer call (its range
                        // wrapped round) whose leg may still be in the
                        // channel: the port's old leg is stale, not the packet.
                        add_legs(&new_legs, &mut by_port, &mut ctxs, &mut played, &shared, &mut r);
                        let now_leg = by_port[side][from.port() as usize];
                        if now_leg != leg {
                            leg = now_leg;
                            if let Some(Some(ctx)) = ctxs.get_mut(leg as usize) {
                                opened = ctx.unprotect_rtp(pkt, &mut plain).ok();
                            }
                        }
                    }
                    let Some(len) = opened else {
                        r.auth_failures += 1;
                        continue;
                    };
                    if played.get(leg as usize) == Some(&true) {
                        // A prompt (or the last of the caller's packets
                        // before it): apart from loss and delay.
                        let w = window.start.load(Relaxed);
                        r.played += u64::from(w > 0 && now >= w && now < window.end.load(Relaxed));
                        continue;
                    }
                    if len < 12 || (times.is_empty() && len < 24) {
                        continue;
                    }
                    let seq = u16::from_be_bytes([plain[2], plain[3]]);
                    let ts = u32::from_be_bytes([plain[4], plain[5], plain[6], plain[7]]);
                    let sent = if times.is_empty() {
                        u64::from_be_bytes(plain[12..20].try_into().unwrap_or([0; 8]))
                    } else {
                        // Sent by the other leg of the call, by sequence number.
                        let partner = leg as usize ^ 1;
                        times.get(partner * TIMES + seq as usize % TIMES).map_or(0, |t| t.load(Relaxed))
                    };
                    let st = &mut r.streams[leg as usize];
                    let ext = extend_seq(st.highest(), seq);
                    let arrival = (now as u128 * clocks[leg as usize % 2] as u128 / 1_000_000_000) as u64;
                    if !st.packet(ext, ts, arrival) {
                        continue;
                    }
                    if let Some(mine) = shared.get(leg as usize) {
                        // For the endpoint's next report (cycles counted from
                        // 0: `extend_seq` starts at 1).
                        let ssrc = u32::from_be_bytes([plain[8], plain[9], plain[10], plain[11]]);
                        let highest = st.highest().unwrap_or(ext).wrapping_sub(1 << 16) as u32;
                        let base = ext.wrapping_sub(1 << 16) as u32;
                        mine.packet(ssrc, base, highest, st.received as u32, st.jitter() as u32);
                    }
                    live.received.fetch_add(1, Relaxed);
                    let us = now.saturating_sub(sent) / 1_000;
                    if let Some(c) = recent.get_mut((us / 10) as usize) {
                        *c += 1;
                    }
                    let start = window.start.load(Relaxed);
                    if start > 0 && sent >= start && sent < window.end.load(Relaxed) {
                        r.in_window += 1;
                        r.delays.record(now.saturating_sub(sent) / 1_000);
                        r.timeline.record(((sent - start) / 1_000_000_000) as usize, now.saturating_sub(sent) / 1_000);
                    }
                }
                if n < BATCH {
                    break;
                }
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tenth_call_plays() {
        let playing: Vec<usize> = (0..40).filter(|&i| plays(i, 0.1)).collect();
        assert_eq!(playing, vec![9, 19, 29, 39]);
        assert_eq!((0..1000).filter(|&i| plays(i, 0.25)).count(), 250);
        assert!(!(0..100).any(|i| plays(i, 0.0)));
    }

    #[test]
    fn delays_print_as_values_not_options() {
        assert_eq!(micros(Some(110)), "110 µs");
        assert_eq!(micros(None), "n/a");
    }

    #[test]
    fn wheel_spreads_every_leg_once_per_period() {
        let period = 20_000_000;
        for legs in [1usize, 2, 3, 7, 1000, 4001] {
            let mut w = Wheel::new(period, legs);
            let mut seen = vec![0u32; legs];
            let mut last = 0u64;
            // Three periods: every leg exactly three times, in time order,
            // each leg at the same phase every period.
            let mut phase = vec![None; legs];
            for _ in 0..3 * legs {
                let (due, leg) = (w.due(), w.leg());
                assert!(due >= last, "dues go back in time");
                last = due;
                seen[leg] += 1;
                let p = due % period;
                assert_eq!(*phase[leg].get_or_insert(p), p, "leg {leg} drifts");
                w.advance();
            }
            assert!(seen.iter().all(|&c| c == 3), "{legs} legs: {seen:?}");
            assert_eq!(w.due(), 3 * period, "three whole periods");
            // Evenly spread: neighbours are period/legs apart (±1 ns of rounding).
            let mut phases: Vec<u64> = phase.iter().map(|p| p.expect("every leg")).collect();
            phases.sort();
            for pair in phases.windows(2) {
                let gap = pair[1] - pair[0];
                assert!(gap.abs_diff(period / legs as u64) <= 1, "gap {gap} with {legs} legs");
            }
        }
    }

    #[test]
    fn passthrough_lines_are_never_answered() {
        let caller = CryptoAttr::generate(1, Suite::AES_CM_128_HMAC_SHA1_80, &mut OsRng.unwrap_err());
        let mut own = caller.clone();
        own.tag = 1;
        let fresh32 = CryptoAttr::generate(8, Suite::AES_CM_128_HMAC_SHA1_32, &mut OsRng.unwrap_err());
        let fresh80 = CryptoAttr::generate(3, Suite::AES_CM_128_HMAC_SHA1_80, &mut OsRng.unwrap_err());
        let gcm = CryptoAttr::generate(2, Suite::AEAD_AES_128_GCM, &mut OsRng.unwrap_err());
        // rtpengine's shape: the caller's own line first, fresh ones after.
        let lines = vec![own.clone(), gcm.clone(), fresh32.clone()];
        let pick = pick_line(&lines, &caller, Suite::AES_CM_128_HMAC_SHA1_80).expect("a fresh line");
        assert_eq!(pick.tag, 8, "same cipher, other tag length");
        let lines = vec![own.clone(), fresh32, fresh80];
        assert_eq!(pick_line(&lines, &caller, Suite::AES_CM_128_HMAC_SHA1_80).expect("fresh").tag, 3);
        assert!(pick_line(&[own], &caller, Suite::AES_CM_128_HMAC_SHA1_80).is_none());
    }
}
