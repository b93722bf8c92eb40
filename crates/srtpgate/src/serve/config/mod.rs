//! Settings of `srtpgate serve`: a TOML file, environment variables and
//! flags named as rtpengine's, in rising precedence (a flag beats the
//! environment, which beats the file, which beats the defaults).

mod sources;

pub use sources::ServeArgs;
use sources::{FileConfig, InterfaceEntry, UiFile};
use srtp::Suite;
use srtpgate_calls::interface::{self, Interfaces, Spec};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// The management page's settings (docs/MANAGEMENT.md).
#[derive(Clone, Debug)]
pub struct UiConfig {
    /// SHA-256 of the token.
    pub token_sha256: Option<[u8; 32]>,
    /// A user and the Argon2 hash (PHC string) of its password.
    pub user: Option<(String, String)>,
    /// Watching without a credential.
    pub read_only_open: bool,
    /// How long a session lasts after login.
    pub session: Duration,
    /// Most pages connected at once.
    pub max_clients: usize,
}

/// The crypto engine to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineChoice {
    /// The CPU engine.
    Cpu,
    /// The GPU engine (refuses to start without a usable GPU).
    Gpu,
    /// The GPU engine when one is usable, else the CPU engine.
    Auto,
}

/// The resolved configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// NG control address.
    pub listen_ng: SocketAddr,
    /// Media interfaces (the first is the default).
    pub interfaces: Interfaces,
    /// Media port range.
    pub port_min: u16,
    /// Media port range.
    pub port_max: u16,
    /// HTTP address, if any.
    pub listen_http: Option<SocketAddr>,
    /// Crypto engine.
    pub engine: EngineChoice,
    /// GPU mode name.
    pub gpu_mode: String,
    /// Hybrid threshold of the GPU engine; `None`: measured at start.
    pub gpu_min_batch: Option<usize>,
    /// See `--gpu-kernel-cache` (`None`: off, or no directory to default to).
    pub gpu_kernel_cache: Option<PathBuf>,
    /// See `--gpu-devices` (empty: every visible GPU).
    pub gpu_devices: Vec<usize>,
    /// Codec plugin directory.
    pub codec_plugin_dir: Option<PathBuf>,
    /// Encoder complexity (0–10), for codecs that have one.
    pub codec_complexity: Option<u8>,
    /// Decoders' concealment where a plugin offers a choice
    /// (`srtpgate_codec::abi::PLC_NEURAL` or `PLC_CLASSIC`).
    pub plc: i32,
    /// Delay line of directions that detect DTMF, ms.
    pub dtmf_delay_ms: u32,
    /// I/O backend: sockets, uring, xdp, mem or auto (resolved when the workers start).
    pub io: String,
    /// The simulated NIC's directory (`--io mem`).
    pub mem_dir: PathBuf,
    /// Worker threads.
    pub workers: usize,
    /// The last this many workers carry the transcoded calls (0: all share).
    pub transcode_workers: usize,
    /// Buffers per worker.
    pub buffers: usize,
    /// Crypto batch bound (0 = by engine).
    pub batch: usize,
    /// Workers never sleep.
    pub busy_poll: bool,
    /// The delay bound (`--stale-after`; `None`: off).
    pub stale_after: Option<Duration>,
    /// Each worker on a CPU of its own.
    pub pin_workers: bool,
    /// Media timeout.
    pub timeout: Duration,
    /// Longest call (None = no limit).
    pub final_timeout: Option<Duration>,
    /// Most calls.
    pub max_sessions: usize,
    /// Load limits beside it: workers' busy share, bytes/s received,
    /// files left for media.
    pub max_load: Option<f64>,
    /// See `max_load`.
    pub max_bandwidth: Option<u64>,
    /// See `max_load`.
    pub min_free_files: Option<usize>,
    /// Suites offered to a plain-RTP offerer's peer.
    pub sdes_suites: Vec<Suite>,
    /// libsrtp < 2.8 AES-192 key derivation.
    pub libsrtp_aes192_kdf: bool,
    /// The DTLS certificate and key files (PEM); `None`: made at start.
    pub dtls_certificate: Option<(PathBuf, PathBuf)>,
    /// Calls kept in Redis.
    pub redis: Option<RedisConfig>,
    /// Log filter.
    pub log_level: String,
    /// Socket buffer size (0 = system default).
    pub socket_buffer: usize,
    /// Bounds on what NG requests and the state they create may hold.
    pub limits: Limits,
    /// Most HTTP connections at once.
    pub http_max_connections: usize,
    /// HTTP header and keep-alive idle timeout.
    pub http_timeout: Duration,
    /// The management page (None: off).
    pub ui: Option<UiConfig>,
    /// Call recording (None: off).
    pub recording: Option<RecordingConfig>,
    /// Longest `metadata` (bytes).
    pub max_metadata_length: usize,
    /// The prompts' directory (`play media`), as given.
    pub media_dir: Option<PathBuf>,
    /// Where digits are reported (`--dtmf-log-dest`).
    pub dtmf_log_dest: Option<SocketAddr>,
    /// Call quality and its MOS (`None`: `--call-quality off`).
    pub quality: Option<srtpgate_quality::Model>,
    /// Where RTCP reports go as HEP (`--homer`).
    pub homer: Option<HomerConfig>,
}

/// Homer (`--homer` and its companions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HomerConfig {
    /// The collector's address.
    pub addr: SocketAddr,
    /// Over TCP (else UDP).
    pub tcp: bool,
    /// The HEP capture ID.
    pub id: u32,
}

/// Call recording (`--recording-dir` and its companions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordingConfig {
    /// Where recordings go.
    pub dir: PathBuf,
    /// The pcap's link type (raw IP or Ethernet).
    pub eth: bool,
    /// The file name pattern below `dir`.
    pub pattern: String,
    /// A WAV per party, and one of both mixed.
    pub single: bool,
    /// See `single`.
    pub mixed: bool,
}

/// Bounds on the signalling side: what one NG request may carry, what the
/// calls it creates may hold, and the retransmission cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest Call-ID, tag, via-branch or label (bytes).
    pub max_id_length: usize,
    /// Longest SDP body (bytes).
    pub max_sdp_length: usize,
    /// Most m-lines in one SDP.
    pub max_media: usize,
    /// Most calls without a media port.
    pub max_sessions_without_media: usize,
    /// Bytes of cached replies.
    pub ng_cache_bytes: usize,
    /// Age of cached replies.
    pub ng_cache_ttl: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_id_length: 256,
            max_sdp_length: 32 * 1024,
            max_media: 16,
            max_sessions_without_media: 1000,
            ng_cache_bytes: 32 << 20,
            ng_cache_ttl: Duration::from_secs(30),
        }
    }
}

/// The bounds on requests and the state they create, and the reply cache.
fn resolve_limits(args: &ServeArgs, file: &FileConfig) -> Result<Limits, String> {
    let d = Limits::default();
    Ok(Limits {
        max_id_length: bounded("max-id-length", args.max_id_length.or(file.max_id_length), d.max_id_length, 16..=4096)?,
        // A reply carries the rewritten SDP, which must fit a datagram.
        max_sdp_length: bounded(
            "max-sdp-length",
            args.max_sdp_length.or(file.max_sdp_length),
            d.max_sdp_length,
            256..=48 * 1024,
        )?,
        max_media: bounded("max-media", args.max_media.or(file.max_media), d.max_media, 1..=srtpgate_sdp::MAX_MEDIA)?,
        max_sessions_without_media: bounded(
            "max-sessions-without-media",
            args.max_sessions_without_media.or(file.max_sessions_without_media),
            d.max_sessions_without_media,
            0..=1 << 24,
        )?,
        ng_cache_bytes: bounded(
            "ng-cache-bytes",
            args.ng_cache_bytes.or(file.ng_cache_bytes),
            d.ng_cache_bytes,
            1 << 20..=1 << 31,
        )?,
        ng_cache_ttl: Duration::from_secs(bounded(
            "ng-cache-seconds",
            args.ng_cache_seconds.or(file.ng_cache_seconds),
            d.ng_cache_ttl.as_secs(),
            1..=3600,
        )?),
    })
}

/// An interface given by network device (`pub/eth0`) or as `any`, as
/// rtpengine takes them: one spec per address the device has (IPv4, and
/// IPv6 but link-local, while it is up), or per address of every device but
/// loopback for `any`, each with the spec's name and advertised address.
/// `None` when the address part is an IP address or names no device (the
/// spec is parsed as written, and refused if it is not an address).
fn device_specs(s: &str) -> Option<Result<Vec<Spec>, String>> {
    let (name, rest) = s.split_once('/').map_or(("", s), |(n, r)| (n, r));
    let (addr, advertised) = rest.split_once('!').map_or((rest, None), |(a, v)| (a, Some(v)));
    if addr.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    let ips = if addr == "any" { crate::relay::sys::any_addrs() } else { crate::relay::sys::device_addrs(addr)? };
    if ips.is_empty() {
        return Some(Err(format!("interface '{s}': device {addr} has no address to serve media on (is it up?)")));
    }
    let prefix = if name.is_empty() { String::new() } else { format!("{name}/") };
    let suffix = advertised.map_or(String::new(), |a| format!("!{a}"));
    // One advertised address fits one family: the device's others keep
    // their own.
    Some(
        ips.iter()
            .map(|ip| {
                let with = format!("{prefix}{ip}{suffix}");
                Spec::parse(&with).or_else(|_| Spec::parse(&format!("{prefix}{ip}"))).map_err(|e| e.to_string())
            })
            .collect(),
    )
}

/// Where the Debian package puts the codec plugins; searched when no
/// directory is given.
/// The simulated NIC's directory by default (`--io mem`): tmpfs.
pub const DEFAULT_MEM_DIR: &str = "/dev/shm/srtpgate-mem";

/// The default delay bound, ms (`--stale-after`). A relayed packet later
/// than this is worse than a lost one: receivers' jitter buffers (typically
/// 40–200 ms) conceal a loss but play a late packet as a gap anyway, and
/// it delays the ones behind it. It sits well above the relay's own worst
/// added delay at capacity on the machines measured (docs/BENCHMARKS.md,
/// "Bounded delay under overload"), so a loaded relay drops nothing stale.
pub const DEFAULT_STALE_AFTER_MS: u64 = 60;

pub const DEFAULT_CODEC_DIR: &str = "/usr/lib/srtpgate/codecs";

/// The codec plugin directory: the one given, else the package's where it
/// exists.
fn codec_plugin_dir(args: &ServeArgs, file: &FileConfig) -> Option<PathBuf> {
    args.codec_plugin_dir.clone().or(file.codec_plugin_dir.clone()).or_else(|| {
        let d = PathBuf::from(DEFAULT_CODEC_DIR);
        d.is_dir().then_some(d)
    })
}

/// The NG and HTTP addresses, the media addresses and the port range.
#[allow(clippy::type_complexity)]
fn resolve_addresses(
    args: &ServeArgs,
    file: &FileConfig,
) -> Result<(SocketAddr, Interfaces, (u16, u16), Option<SocketAddr>), String> {
    let listen_ng = match (args.listen_ng, &file.listen_ng) {
        (Some(a), _) => a,
        (None, Some(s)) => parse("listen_ng", s)?,
        (None, None) => SocketAddr::from(([127, 0, 0, 1], 2223)),
    };
    let (specs, ranges) = interface_specs(args, file)?;
    let port_min = args.port_min.or(file.port_min).unwrap_or(30_000);
    let port_max = args.port_max.or(file.port_max).unwrap_or(40_000);
    if port_min == 0 || port_min >= port_max {
        return Err(format!("port range: port-min {port_min} must be above 0 and below port-max {port_max}"));
    }
    let listen_http = match (args.listen_http, &file.listen_http) {
        (Some(a), _) => Some(a),
        (None, Some(s)) => Some(parse("listen_http", s)?),
        (None, None) => None,
    };
    let interfaces = Interfaces::new(&specs, &ranges).map_err(|e| e.to_string())?;
    Ok((listen_ng, interfaces, (port_min, port_max), listen_http))
}

/// The interfaces the command line names (all of them, when it names
/// any), else the file's, else 127.0.0.1; and the port ranges of those the
/// file gives one.
#[allow(clippy::type_complexity)]
fn interface_specs(args: &ServeArgs, file: &FileConfig) -> Result<(Vec<Spec>, Vec<(String, (u16, u16))>), String> {
    let spec = |s: &str| -> Result<Vec<Spec>, String> {
        device_specs(s).unwrap_or_else(|| Ok(vec![Spec::parse(s).map_err(|e| e.to_string())?]))
    };
    if !args.interface.is_empty() {
        let specs: Vec<Vec<Spec>> = args.interface.iter().map(|s| spec(s)).collect::<Result<_, _>>()?;
        return Ok((specs.into_iter().flatten().collect(), Vec::new()));
    }
    let Some(entries) = &file.interface else {
        return Ok((spec("127.0.0.1")?, Vec::new()));
    };
    let (mut specs, mut ranges) = (Vec::new(), Vec::new());
    for e in entries {
        match e {
            InterfaceEntry::Spec(s) => specs.extend(spec(s)?),
            InterfaceEntry::Table(t) => {
                let name = t.name.as_deref().unwrap_or(interface::DEFAULT);
                let text = match &t.advertised {
                    Some(a) => format!("{name}/{}!{a}", t.address),
                    None => format!("{name}/{}", t.address),
                };
                specs.extend(spec(&text)?);
                match (t.port_min, t.port_max) {
                    (Some(min), Some(max)) => ranges.push((name.to_string(), (min, max))),
                    (None, None) => {}
                    _ => return Err(format!("interface '{name}': give both port_min and port_max, or neither")),
                }
            }
        }
    }
    Ok((specs, ranges))
}

/// Media workers, and how many of them carry the transcoded calls.
fn resolve_workers(args: &ServeArgs, file: &FileConfig) -> Result<(usize, usize), String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = match args.workers.or(file.workers).unwrap_or(0) {
        0 => cores,
        n if n > 1024 => return Err(format!("workers: {n} is more than 1024")),
        n => n,
    };
    // By default a pool only where codec plugins are loaded: the
    // built-in G.711 costs ~1 µs a packet, no reason to take workers
    // from pass-through calls.
    let plugins = codec_plugin_dir(args, file).is_some();
    let transcode_workers = match args.transcode_workers.or(file.transcode_workers) {
        None if workers >= 4 && plugins => workers / 4,
        None => 0,
        Some(t) if t > 0 && t >= workers => {
            return Err(format!(
                "transcode_workers: {t} of {workers} workers leaves none for pass-through calls (0 = shared)"
            ))
        }
        Some(t) => t,
    };
    Ok((workers, transcode_workers))
}

/// The codecs' settings: encoder complexity, decoders' concealment, the
/// DTMF detectors' delay line.
fn resolve_codecs(args: &ServeArgs, file: &FileConfig) -> Result<(Option<u8>, i32, u32), String> {
    let codec_complexity = args.codec_complexity.or(file.codec_complexity);
    if let Some(c) = codec_complexity.filter(|&c| c > 10) {
        return Err(format!("codec_complexity: {c} is out of range (0–10)"));
    }
    let plc = match args.plc.as_deref().or(file.plc.as_deref()).unwrap_or("neural") {
        "neural" => srtpgate_codec::abi::PLC_NEURAL,
        "classic" => srtpgate_codec::abi::PLC_CLASSIC,
        other => return Err(format!("plc: {other:?} is not one of neural, classic")),
    };
    let dtmf_delay_ms = args.dtmf_delay.or(file.dtmf_delay).unwrap_or(srtpgate_codec::transcode::DEFAULT_DTMF_DELAY_MS);
    if dtmf_delay_ms > srtpgate_codec::transcode::MAX_CONCEAL_MS {
        return Err(format!(
            "dtmf_delay: {dtmf_delay_ms} ms is out of range (0–{})",
            srtpgate_codec::transcode::MAX_CONCEAL_MS
        ));
    }
    Ok((codec_complexity, plc, dtmf_delay_ms))
}

/// The SDES suites offered to a plain-RTP offerer's peer: the flags', else
/// the file's, else [`DEFAULT_SUITES`]; at least one.
fn resolve_suites(flags: &[String], file: Option<Vec<String>>) -> Result<Vec<Suite>, String> {
    let names: Vec<String> = if !flags.is_empty() {
        flags.to_vec()
    } else if let Some(l) = file {
        l
    } else {
        DEFAULT_SUITES.iter().map(|s| s.name().to_string()).collect()
    };
    let suites = names
        .iter()
        .map(|n| Suite::from_str(n.trim()).map_err(|e| format!("sdes-suites: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    if suites.is_empty() {
        return Err("sdes-suites: at least one suite is needed".into());
    }
    Ok(suites)
}

/// `value` (or `default`), refused outside `range` with a line naming `what`.
fn bounded<T>(what: &str, value: Option<T>, default: T, range: std::ops::RangeInclusive<T>) -> Result<T, String>
where
    T: PartialOrd + Copy + std::fmt::Display,
{
    let v = value.unwrap_or(default);
    if range.contains(&v) {
        Ok(v)
    } else {
        Err(format!("{what}: {v} is outside {}..={}", range.start(), range.end()))
    }
}

/// Suites a relay offers by default, strongest first among those phones
/// commonly support; NULL (no confidentiality) and F8 are left out.
pub const DEFAULT_SUITES: [Suite; 8] = [
    Suite::AES_CM_128_HMAC_SHA1_80,
    Suite::AES_CM_128_HMAC_SHA1_32,
    Suite::AEAD_AES_128_GCM,
    Suite::AEAD_AES_256_GCM,
    Suite::AES_256_CM_HMAC_SHA1_80,
    Suite::AES_256_CM_HMAC_SHA1_32,
    Suite::AES_192_CM_HMAC_SHA1_80,
    Suite::AES_192_CM_HMAC_SHA1_32,
];

fn parse<T: FromStr>(what: &str, v: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    v.trim().parse().map_err(|e| format!("{what}: {v:?} is not valid: {e}"))
}

impl Config {
    /// Merges the file (if given), the flags and the environment (which
    /// clap has already folded into the flags) over the defaults, and checks
    /// the result.
    pub fn resolve(args: &ServeArgs) -> Result<Config, String> {
        let file: FileConfig = match &args.config {
            Some(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|e| format!("cannot read config {}: {e}", path.display()))?;
                toml::from_str(&text).map_err(|e| format!("config {}: {e}", path.display()))?
            }
            None => FileConfig::default(),
        };
        let codec_plugin_dir = codec_plugin_dir(args, &file);
        let (listen_ng, interfaces, (port_min, port_max), listen_http) = resolve_addresses(args, &file)?;
        let (workers, transcode_workers) = resolve_workers(args, &file)?;
        let limits = resolve_limits(args, &file)?;
        let (codec_complexity, plc, dtmf_delay_ms) = resolve_codecs(args, &file)?;
        let engine = match args.engine.as_deref().or(file.engine.as_deref()).unwrap_or("cpu") {
            "cpu" => EngineChoice::Cpu,
            "gpu" => EngineChoice::Gpu,
            "auto" => EngineChoice::Auto,
            other => return Err(format!("engine: {other:?} is not one of cpu, gpu, auto")),
        };
        let gpu_mode = args.gpu_mode.clone().or(file.gpu_mode).unwrap_or_else(|| "persistent".into());
        if gpu_mode != "launch" && gpu_mode != "persistent" {
            return Err(format!("gpu-mode: {gpu_mode:?} is not one of launch, persistent"));
        }
        let gpu_min_batch = match (&args.gpu_min_batch, &file.gpu_min_batch) {
            (Some(s), _) => parse_min_batch(s)?,
            (None, Some(toml::Value::String(s))) => parse_min_batch(s)?,
            (None, Some(toml::Value::Integer(n))) => parse_min_batch(&n.to_string())?,
            (None, Some(other)) => {
                return Err(format!("gpu_min_batch: {other} is neither a number of packets nor \"auto\""))
            }
            (None, None) => None,
        };
        let gpu_devices = match (&args.gpu_devices, &file.gpu_devices) {
            (Some(s), _) => parse_gpu_devices(s).map_err(|e| format!("--gpu-devices: {e}"))?,
            (None, Some(toml::Value::String(s))) => parse_gpu_devices(s).map_err(|e| format!("gpu_devices: {e}"))?,
            (None, Some(toml::Value::Array(a))) => {
                let list: Vec<String> = a.iter().map(|v| v.to_string()).collect();
                parse_gpu_devices(&list.join(",")).map_err(|e| format!("gpu_devices: {e}"))?
            }
            (None, Some(other)) => return Err(format!("gpu_devices: {other} is neither a list of GPUs nor \"all\"")),
            (None, None) => Vec::new(),
        };
        let gpu_kernel_cache = match args.gpu_kernel_cache.clone().or(file.gpu_kernel_cache) {
            // Empty would be the working directory (`/` under systemd).
            Some(d) if d.as_os_str().is_empty() => {
                return Err("gpu-kernel-cache: empty (a directory, or \"off\")".into())
            }
            Some(d) if d.as_os_str() == "off" => None,
            Some(d) => Some(d),
            None => default_kernel_cache(|k| std::env::var_os(k)),
        };
        let io = args.io.clone().or(file.io).unwrap_or_else(|| "auto".into());
        if !["sockets", "uring", "xdp", "mem", "auto"].contains(&io.as_str()) {
            return Err(format!("io: {io:?} is not one of sockets, uring, xdp, mem, auto"));
        }
        let buffers = args.buffers.or(file.buffers).unwrap_or(4096);
        if !(64..=1 << 20).contains(&buffers) {
            return Err(format!("buffers: {buffers} is outside 64..=1048576"));
        }
        let batch = args.batch.or(file.batch).unwrap_or(0);
        if batch > crate::relay::worker::MAX_LOOP_PACKETS {
            return Err(format!("batch: {batch} is more than {}", crate::relay::worker::MAX_LOOP_PACKETS));
        }
        let stale_after = args.stale_after.or(file.stale_after).unwrap_or(DEFAULT_STALE_AFTER_MS);
        if stale_after > 10_000 {
            return Err(format!("stale-after: {stale_after} ms is more than 10000 (0 turns it off)"));
        }
        let timeout = args.timeout.or(file.timeout).unwrap_or(60);
        // rtpengine's 0 turns a limit off.
        let max_load = args.max_load.or(file.max_load).filter(|&l| l != 0.0);
        if let Some(l) = max_load.filter(|l| !(0.0..=1.0).contains(l)) {
            return Err(format!("max-load: {l} is not a share of the workers' time (0.0-1.0; 0 turns it off)"));
        }
        if timeout == 0 {
            return Err("timeout: must be at least 1 second".into());
        }
        let final_timeout = args.final_timeout.or(file.final_timeout).unwrap_or(0);
        let sdes_suites = resolve_suites(&args.sdes_suites, file.sdes_suites)?;
        let http_max_connections =
            bounded("http-max-connections", args.http_max_connections.or(file.http_max_connections), 64, 1..=4096)?;
        let http_timeout =
            Duration::from_secs(bounded("http-timeout", args.http_timeout.or(file.http_timeout), 10, 1..=3600)?);
        let ui = resolve_ui(args, file.ui.unwrap_or_default())?;
        let max_metadata_length = bounded(
            "max-metadata-length",
            args.max_metadata_length.or(file.max_metadata_length),
            srtpgate_calls::recording::DEFAULT_MAX_METADATA,
            0..=65536,
        )?;
        let recording = resolve_recording(
            args,
            [file.recording_dir.map(|d| d.to_string_lossy().into_owned()), file.recording_method],
            [file.recording_format, file.recording_pattern],
            file.recording_audio,
        )?;
        if ui.is_some() && listen_http.is_none() {
            return Err("ui: the management page is served on the HTTP address: set listen-http".into());
        }
        let media_dir = args.media_dir.clone().or(file.media_dir);
        if let Some(d) = &media_dir {
            if !d.is_dir() {
                return Err(format!("media-dir: {} is not a directory", d.display()));
            }
        }
        let dtmf_log_dest = args.dtmf_log_dest.or(file.dtmf_log_dest);
        let quality_on = match args.call_quality.as_deref() {
            Some(v) => v == "on",
            None => file.call_quality.unwrap_or(true),
        };
        let quality = match args.mos.clone().or(file.mos).map(|m| m.to_ascii_uppercase()).as_deref() {
            None | Some("CQ") => srtpgate_quality::Model::Cq,
            Some("LQ") => srtpgate_quality::Model::Lq,
            Some(m) => return Err(format!("mos: '{m}' is not CQ or LQ")),
        };
        let quality = quality_on.then_some(quality);
        let homer = match args.homer.clone().or(file.homer) {
            None => None,
            Some(h) => {
                use std::net::ToSocketAddrs;
                let addr = h
                    .to_socket_addrs()
                    .map_err(|e| format!("homer: '{h}': {e}"))?
                    .next()
                    .ok_or_else(|| format!("homer: '{h}' has no address"))?;
                let tcp = match args.homer_protocol.clone().or(file.homer_protocol).as_deref() {
                    None | Some("udp") => false,
                    Some("tcp") => true,
                    Some(p) => return Err(format!("homer-protocol: '{p}' is not udp or tcp")),
                };
                if quality.is_none() {
                    return Err("homer: Homer gets the RTCP call quality reads: not with call-quality off".into());
                }
                Some(HomerConfig { addr, tcp, id: args.homer_id.or(file.homer_id).unwrap_or(2001) })
            }
        };
        Ok(Config {
            ui,
            recording,
            media_dir,
            dtmf_log_dest,
            quality,
            homer,
            max_metadata_length,
            listen_ng,
            interfaces,
            port_min,
            port_max,
            listen_http,
            engine,
            gpu_mode,
            gpu_min_batch,
            gpu_kernel_cache,
            gpu_devices,
            codec_plugin_dir,
            codec_complexity,
            plc,
            dtmf_delay_ms,
            io,
            mem_dir: args.mem_dir.clone().or_else(|| file.mem_dir.clone()).unwrap_or_else(|| DEFAULT_MEM_DIR.into()),
            workers,
            transcode_workers,
            buffers,
            batch,
            busy_poll: args.busy_poll || file.busy_poll.unwrap_or(false),
            stale_after: (stale_after > 0).then(|| Duration::from_millis(stale_after)),
            pin_workers: args.pin_workers || file.pin_workers.unwrap_or(false),
            timeout: Duration::from_secs(timeout),
            final_timeout: (final_timeout > 0).then(|| Duration::from_secs(final_timeout)),
            max_sessions: args.max_sessions.or(file.max_sessions).unwrap_or(100_000),
            max_load,
            max_bandwidth: args.max_bandwidth.or(file.max_bandwidth).filter(|&b| b > 0),
            min_free_files: args.min_free_files.or(file.min_free_files).filter(|&f| f > 0),
            sdes_suites,
            libsrtp_aes192_kdf: args.libsrtp_aes192_kdf || file.libsrtp_aes192_kdf.unwrap_or(false),
            dtls_certificate: match (
                args.dtls_certificate.clone().or(file.dtls_certificate),
                args.dtls_private_key.clone().or(file.dtls_private_key),
            ) {
                (Some(c), Some(k)) => Some((c, k)),
                (None, None) => None,
                _ => return Err("dtls_certificate and dtls_private_key go together".into()),
            },
            redis: match (args.redis.clone().or(file.redis), args.redis_key_file.clone().or(file.redis_key_file)) {
                (Some(url), Some(key_file)) => Some(RedisConfig {
                    url,
                    key: read_redis_key(&key_file)?,
                    namespace: args
                        .redis_namespace
                        .clone()
                        .or(file.redis_namespace)
                        .unwrap_or_else(|| "srtpgate".into()),
                    instance: match args.redis_instance.clone().or(file.redis_instance) {
                        Some(name) => check_instance(&name)?,
                        None => check_instance(&host_name())?,
                    },
                    lease: Duration::from_millis(match args.redis_lease_ms.or(file.redis_lease_ms) {
                        Some(ms) if !(300..=600_000).contains(&ms) => {
                            return Err(format!("redis_lease_ms {ms}: not between 300 and 600000"))
                        }
                        Some(ms) => ms,
                        None => 3000,
                    }),
                }),
                (None, _) => None,
                (Some(_), None) => return Err("redis needs redis_key_file (the key that encrypts keys at rest)".into()),
            },
            log_level: args.log_level.clone().or(file.log_level).unwrap_or_else(|| "info".into()),
            socket_buffer: file.socket_buffer.unwrap_or(0),
            limits,
            http_max_connections,
            http_timeout,
        })
    }

    /// What the call table is configured with.
    pub fn table_settings(&self) -> srtpgate_calls::Settings {
        srtpgate_calls::Settings {
            interfaces: self.interfaces.clone(),
            limits: srtpgate_calls::Limits {
                max_id_length: self.limits.max_id_length,
                max_sdp_length: self.limits.max_sdp_length,
                max_media: self.limits.max_media,
                max_sessions_without_media: self.limits.max_sessions_without_media,
                max_sessions: self.max_sessions,
                max_load: self.max_load,
                max_bandwidth: self.max_bandwidth,
                min_free_files: self.min_free_files,
            },
            sdes_suites: self.sdes_suites.clone(),
            libsrtp_aes192_kdf: self.libsrtp_aes192_kdf,
            codec_complexity: self.codec_complexity,
            plc: self.plc,
            dtmf_delay_ms: self.dtmf_delay_ms,
            workers: self.workers,
            transcode_workers: self.transcode_workers,
            timeout: self.timeout,
            final_timeout: self.final_timeout,
            quality: self.quality,
            recording: srtpgate_calls::RecordingSettings {
                dir: self.recording.as_ref().map(|r| r.dir.clone()),
                pattern: self
                    .recording
                    .as_ref()
                    .map_or_else(|| srtpgate_calls::recording::DEFAULT_PATTERN.to_string(), |r| r.pattern.clone()),
                max_metadata: self.max_metadata_length,
            },
        }
    }
}

/// The recording settings, checked: off without a directory; the method
/// and format rtpengine's names.
fn resolve_recording(
    args: &ServeArgs,
    [file_dir, file_method]: [Option<String>; 2],
    [file_format, file_pattern]: [Option<String>; 2],
    file_audio: Option<Vec<String>>,
) -> Result<Option<RecordingConfig>, String> {
    let audio =
        if args.recording_audio.is_empty() { file_audio.unwrap_or_default() } else { args.recording_audio.clone() };
    let (mut single, mut mixed) = (false, false);
    for a in &audio {
        match a.trim() {
            "single" => single = true,
            "mixed" => mixed = true,
            "" => {}
            other => return Err(format!("recording-audio '{other}': single or mixed")),
        }
    }
    let method = args.recording_method.clone().or(file_method).unwrap_or_else(|| "pcap".into());
    if method != "pcap" {
        return Err(format!(
            "recording-method '{method}': srtpgate writes pcap (rtpengine's proc method, a kernel module \
             and a separate daemon, has no equivalent here)"
        ));
    }
    let format = args.recording_format.clone().or(file_format).unwrap_or_else(|| "raw".into());
    let eth = match format.as_str() {
        "raw" => false,
        "eth" => true,
        other => return Err(format!("recording-format '{other}': raw or eth")),
    };
    let pattern = args
        .recording_pattern
        .clone()
        .or(file_pattern)
        .unwrap_or_else(|| srtpgate_calls::recording::DEFAULT_PATTERN.into());
    srtpgate_calls::recording::check_pattern(&pattern).map_err(|e| format!("recording-pattern '{pattern}': {e}"))?;
    let Some(dir) = args.recording_dir.clone().or(file_dir.map(PathBuf::from)) else { return Ok(None) };
    if dir.as_os_str().is_empty() {
        return Err("recording-dir: empty".into());
    }
    Ok(Some(RecordingConfig { dir, eth, pattern, single, mixed }))
}

/// The `[ui]` settings, checked: off unless a credential or open read-only
/// access is configured.
fn resolve_ui(args: &ServeArgs, f: UiFile) -> Result<Option<UiConfig>, String> {
    let token = match args.ui_token_sha256.as_ref().or(f.token_sha256.as_ref()) {
        Some(h) => {
            let b = hex::decode(h.trim()).ok().and_then(|b| <[u8; 32]>::try_from(b).ok());
            Some(b.ok_or("ui token_sha256: not 64 hex digits (printf %s \"$TOKEN\" | sha256sum)")?)
        }
        None => None,
    };
    let user = match (args.ui_user.clone().or(f.user), args.ui_password_hash.clone().or(f.password_hash)) {
        (Some(u), Some(h)) => {
            argon2::PasswordHash::new(&h).map_err(|e| {
                format!("ui password_hash: not a PHC hash string ({e}); make one with srtpgate hash-password")
            })?;
            if u.is_empty() {
                return Err("ui user: empty".into());
            }
            Some((u, h))
        }
        (None, None) => None,
        _ => return Err("ui: user and password_hash go together".into()),
    };
    let read_only_open = args.ui_read_only_open || f.read_only_open.unwrap_or(false);
    if token.is_none() && user.is_none() && !read_only_open {
        return Ok(None);
    }
    Ok(Some(UiConfig {
        token_sha256: token,
        user,
        read_only_open,
        session: Duration::from_secs(bounded("ui session_seconds", f.session_seconds, 43_200, 60..=30 * 86_400)?),
        max_clients: bounded("ui max_clients", f.max_clients, 16, 1..=1024)?,
    }))
}

/// Where the GPU engine keeps its kernels when not told: the service's
/// cache directory (systemd's `CacheDirectory=`, which it names in
/// `$CACHE_DIRECTORY`), else the user's (`$XDG_CACHE_HOME`, `~/.cache`).
fn default_kernel_cache(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let nonempty = |k: &str| var(k).filter(|v| !v.is_empty());
    if let Some(dirs) = nonempty("CACHE_DIRECTORY") {
        // Several directories are separated by colons: the first is ours.
        let first = dirs.to_string_lossy().split(':').next().map(PathBuf::from)?;
        return Some(first.join("gpu-kernels"));
    }
    let base = nonempty("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| nonempty("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("srtpgate").join("gpu-kernels"))
}

/// `auto` (measure at start) or a batch size of 0..=65 536 packets (0: every
/// batch on the GPU).
fn parse_min_batch(s: &str) -> Result<Option<usize>, String> {
    match s.trim() {
        "auto" => Ok(None),
        v => match v.parse::<usize>() {
            Ok(n) if n <= 65_536 => Ok(Some(n)),
            _ => Err(format!("gpu-min-batch: {s:?} is neither a number of packets (0..=65536) nor \"auto\"")),
        },
    }
}

/// `all`, or CUDA ordinals separated by commas (each at most once).
fn parse_gpu_devices(s: &str) -> Result<Vec<usize>, String> {
    if s.trim() == "all" {
        return Ok(Vec::new());
    }
    if s.trim().is_empty() {
        return Err("no GPU named: a list such as 0,1, or \"all\"".into());
    }
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim) {
        match part.parse::<usize>() {
            Ok(d) if d < 64 && !out.contains(&d) => out.push(d),
            Ok(d) if d < 64 => return Err(format!("GPU {d} named twice in {s:?}")),
            _ => return Err(format!("{part:?} in {s:?} is not a GPU ordinal (0..64); a list such as 0,1, or \"all\"")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpu_devices_are_all_or_a_list_of_ordinals() {
        assert_eq!(Config::resolve(&ServeArgs::default()).expect("defaults").gpu_devices, Vec::<usize>::new());
        let flag = |s: &str| Config::resolve(&ServeArgs { gpu_devices: Some(s.into()), ..Default::default() });
        assert_eq!(flag("1, 0").expect("list").gpu_devices, vec![1, 0]);
        assert_eq!(flag("all").expect("all").gpu_devices, Vec::<usize>::new());
        for bad in ["", "0,0", "x", "-1", "99", "0,,1"] {
            let e = flag(bad).expect_err(bad);
            assert!(e.contains("--gpu-devices"), "{bad}: {e}");
        }
        assert_eq!(with_file("gpu_devices = [0, 2]\n").expect("array").gpu_devices, vec![0, 2]);
        assert_eq!(with_file("gpu_devices = \"3\"\n").expect("string").gpu_devices, vec![3]);
        for bad in ["gpu_devices = [\"a\"]\n", "gpu_devices = 1\n", "gpu_devices = [1, 1]\n", "gpu_devices = []\n"] {
            let e = with_file(bad).expect_err(bad);
            assert!(e.contains("gpu_devices"), "{bad}: {e}");
        }
    }

    fn with_file(text: &str) -> Result<Config, String> {
        let dir = std::env::temp_dir().join(format!("srtpgate-cfg-{}-{}", std::process::id(), text.len()));
        std::fs::write(&dir, text).expect("write config");
        let r = Config::resolve(&ServeArgs { config: Some(dir.clone()), ..Default::default() });
        let _ = std::fs::remove_file(dir);
        r
    }

    #[test]
    fn redis_needs_a_key_file_of_64_hex_digits() {
        let e = with_file("redis = \"redis://127.0.0.1/\"\n").expect_err("no key");
        assert!(e.contains("redis needs redis_key_file"), "{e}");
        let key = std::env::temp_dir().join(format!("srtpgate-redis-key-{}", std::process::id()));
        for (text, ok) in [
            ("ab".repeat(32), true),
            (format!(" {}\n", "AB".repeat(32)), true),
            ("ab".repeat(31), false),
            ("zz".repeat(32), false),
        ] {
            std::fs::write(&key, &text).expect("key file");
            let c = with_file(&format!("redis = \"redis://127.0.0.1/\"\nredis_key_file = \"{}\"\n", key.display()));
            match (c, ok) {
                (Ok(c), true) => {
                    let r = c.redis.expect("redis");
                    assert_eq!(*r.key, [0xab; 32]);
                    assert_eq!(r.namespace, "srtpgate");
                    assert!(!format!("{r:?}").contains("171"), "the key in Debug");
                }
                (Err(e), false) => assert!(e.contains("not 64 hex digits"), "{e}"),
                (r, _) => panic!("{text:?}: {:?}", r.map(|_| ())),
            }
        }
        // The lease: instance name and time, checked.
        let base = format!("redis = \"redis://127.0.0.1/\"\nredis_key_file = \"{}\"\n", key.display());
        std::fs::write(&key, "ab".repeat(32)).expect("key file");
        let r = with_file(&format!("{base}redis_instance = \"relay-a\"\nredis_lease_ms = 1500\n")).expect("lease");
        let r = r.redis.expect("redis");
        assert_eq!((r.instance.as_str(), r.lease), ("relay-a", Duration::from_millis(1500)));
        assert_eq!(with_file(&base).expect("defaults").redis.expect("redis").lease, Duration::from_secs(3));
        let e = with_file(&format!("{base}redis_lease_ms = 100\n")).map(|_| ()).expect_err("too short");
        assert!(e.contains("redis_lease_ms 100: not between 300 and 600000"), "{e}");
        let e = with_file(&format!("{base}redis_instance = \"a b\"\n")).map(|_| ()).expect_err("a space");
        assert!(e.contains("without spaces"), "{e}");
        let _ = std::fs::remove_file(key);
    }

    #[test]
    fn a_dtls_certificate_without_its_key_is_refused() {
        let e = with_file("dtls_certificate = \"/x/cert.pem\"\n").expect_err("a certificate without a key");
        assert!(e.contains("dtls_certificate and dtls_private_key go together"), "{e}");
        let c = with_file("dtls_certificate = \"/x/c.pem\"\ndtls_private_key = \"/x/k.pem\"\n").expect("both");
        assert!(c.dtls_certificate.is_some());
    }

    #[test]
    fn the_example_file_is_valid() {
        let c = with_file(include_str!("../../../../../examples/srtpgate.toml")).expect("examples/srtpgate.toml");
        assert_eq!(c.dtmf_delay_ms, 40);
    }

    #[test]
    fn defaults_file_and_flags() {
        let c = Config::resolve(&ServeArgs::default()).expect("defaults");
        assert_eq!(c.listen_ng, "127.0.0.1:2223".parse().expect("addr"));
        assert_eq!((c.port_min, c.port_max, c.engine), (30_000, 40_000, EngineChoice::Cpu));
        let c = with_file("listen_ng = \"127.0.0.1:9\"\ninterface = [\"::1\", \"127.0.0.2\"]\nport_min = 2000\nport_max = 3000\nengine = \"auto\"\n")
            .expect("file");
        assert_eq!(c.listen_ng.port(), 9);
        let ip = |s: &str| s.parse::<std::net::IpAddr>().expect("ip");
        assert_eq!(c.table_settings().interfaces.bind(0, false).addr.local, ip("127.0.0.2"));
        assert_eq!(c.table_settings().interfaces.bind(0, true).addr.local, ip("::1"));
        assert_eq!(c.engine, EngineChoice::Auto);
        let args = ServeArgs { port_min: Some(5000), port_max: Some(6000), ..Default::default() };
        let c = Config::resolve(&args).expect("flags");
        assert_eq!((c.port_min, c.port_max), (5000, 6000));
    }

    /// Named interfaces as rtpengine writes them, on the command line or
    /// in the file, where a table can also give one its own port range.
    #[test]
    fn named_interfaces_with_nat_and_port_ranges() {
        let ip = |s: &str| s.parse::<std::net::IpAddr>().expect("ip");
        let args = ServeArgs {
            interface: vec!["priv/127.0.0.1".into(), "pub/127.0.0.2!203.0.113.5".into()],
            ..Default::default()
        };
        let c = Config::resolve(&args).expect("flags");
        let names: Vec<&str> = c.interfaces.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["priv", "pub"]);
        assert_eq!(c.interfaces.bind(1, false).addr.advertised, ip("203.0.113.5"));
        let c = with_file(
            "interface = [\"priv/127.0.0.1\", { name = \"pub\", address = \"127.0.0.2\", advertised = \"203.0.113.5\", \
             port_min = 42000, port_max = 42999 }]\n",
        )
        .expect("file");
        assert_eq!(c.interfaces.get(1).map(|i| i.ports), Some(Some((42_000, 42_999))));
        assert_eq!(c.interfaces.get(0).map(|i| i.ports), Some(None));
        assert_eq!(c.interfaces.bind(1, false).addr.local, ip("127.0.0.2"));
        // A network device, as rtpengine takes one: its addresses.
        let c = Config::resolve(&ServeArgs { interface: vec!["priv/lo".into()], ..Default::default() }).expect("lo");
        assert_eq!(c.interfaces.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(), ["priv"]);
        assert_eq!(c.interfaces.bind(0, false).addr.local, ip("127.0.0.1"));
        for (bad, says) in [
            ("interface = [{ name = \"x\", address = \"127.0.0.1\", port_min = 4000 }]\n", "both port_min"),
            ("interface = [{ address = \"127.0.0.1\", colour = 1 }]\n", "interface"),
            ("interface = [\"a/127.0.0.1\", \"b/127.0.0.1\"]\n", "given twice"),
            ("interface = [\"a/nosuchdev0\"]\n", "not an IP address"),
        ] {
            let e = with_file(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn the_delay_bound() {
        assert_eq!(with_file("").expect("default").stale_after, Some(Duration::from_millis(DEFAULT_STALE_AFTER_MS)));
        assert_eq!(with_file("stale_after = 0\n").expect("off").stale_after, None);
        assert_eq!(with_file("stale_after = 120\n").expect("120").stale_after, Some(Duration::from_millis(120)));
        let args = ServeArgs { stale_after: Some(40), ..Default::default() };
        assert_eq!(Config::resolve(&args).expect("flag").stale_after, Some(Duration::from_millis(40)));
        let e = with_file("stale_after = 60000\n").expect_err("too long");
        assert!(e.contains("stale-after") && e.contains("10000"), "{e}");
        assert!(with_file("stale_after = -1\n").is_err());
    }

    #[test]
    fn call_quality_and_homer() {
        let c = with_file("").expect("default");
        assert_eq!((c.quality, c.homer), (Some(srtpgate_quality::Model::Cq), None));
        assert_eq!(with_file("call_quality = false\n").expect("off").quality, None);
        assert_eq!(with_file("mos = \"lq\"\n").expect("LQ").quality, Some(srtpgate_quality::Model::Lq));
        let c = with_file("homer = \"127.0.0.1:9060\"\nhomer_protocol = \"tcp\"\n").expect("homer");
        assert_eq!(c.homer, Some(HomerConfig { addr: "127.0.0.1:9060".parse().unwrap(), tcp: true, id: 2001 }));
        for (bad, says) in [
            ("mos = \"MQ\"\n", "not CQ or LQ"),
            ("homer = \"127.0.0.1\"\n", "homer"),
            ("homer = \"127.0.0.1:9060\"\nhomer_protocol = \"sctp\"\n", "not udp or tcp"),
            ("homer = \"127.0.0.1:9060\"\ncall_quality = false\n", "call-quality off"),
        ] {
            let e = with_file(bad).expect_err(bad);
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_configs_say_what_is_wrong() {
        let e = with_file("port_min = 10\nport_max = 5\n").expect_err("inverted range");
        assert!(e.contains("port-min 10"), "{e}");
        let e = with_file("listen_ng = \"nowhere\"\n").expect_err("bad address");
        assert!(e.contains("listen_ng"), "{e}");
        let e = with_file("colour = 1\n").expect_err("unknown key");
        assert!(e.contains("colour"), "{e}");
        let e = with_file("io = \"dpdk\"\n").expect_err("bad io");
        assert!(e.contains("dpdk") && e.contains("sockets, uring, xdp, mem, auto"), "{e}");
        let e = with_file("engine = \"fpga\"\n").expect_err("bad engine");
        assert!(e.contains("fpga"), "{e}");
        let e = with_file("interface = [\"0.0.0.0\"]\n").expect_err("unspecified");
        assert!(e.contains("0.0.0.0"), "{e}");
        let e = with_file("sdes_suites = [\"ROT13\"]\n").expect_err("bad suite");
        assert!(e.contains("ROT13"), "{e}");
        let e = with_file("max_media = 0\n").expect_err("no media");
        assert!(e.contains("max-media: 0"), "{e}");
        let e = with_file("max_sdp_length = 65536\n").expect_err("SDP over a reply");
        assert!(e.contains("max-sdp-length"), "{e}");
        let e = with_file("http_timeout = 0\n").expect_err("no HTTP timeout");
        assert!(e.contains("http-timeout"), "{e}");
        for bad in
            ["gpu_min_batch = \"soon\"\n", "gpu_min_batch = -1\n", "gpu_min_batch = 1.5\n", "gpu_min_batch = 70000\n"]
        {
            let e = with_file(bad).expect_err(bad);
            assert!(e.contains("gpu_min_batch") || e.contains("gpu-min-batch"), "{bad}: {e}");
        }
        let e = Config::resolve(&ServeArgs { gpu_min_batch: Some("many".into()), ..Default::default() })
            .expect_err("bad flag");
        assert!(e.contains("gpu-min-batch") && e.contains("many"), "{e}");
        assert_eq!(with_file("gpu_min_batch = 128\n").expect("number").gpu_min_batch, Some(128));
        assert_eq!(with_file("codec_complexity = 3\n").expect("complexity").codec_complexity, Some(3));
        assert_eq!(with_file("").expect("default").dtmf_delay_ms, 40);
        assert_eq!(with_file("dtmf_delay = 60\n").expect("delay").dtmf_delay_ms, 60);
        let e = with_file("dtmf_delay = 500\n").expect_err("out of range");
        assert!(e.contains("dtmf_delay"), "{e}");
        let c = with_file("workers = 8\ncodec_plugin_dir = \"/nonexistent\"\n").expect("a quarter");
        assert_eq!((c.workers, c.transcode_workers), (8, 2));
        assert_eq!(with_file("workers = 8\n").expect("no plugins").transcode_workers, 0);
        assert_eq!(with_file("workers = 3\ncodec_plugin_dir = \"/x\"\n").expect("shared").transcode_workers, 0);
        assert_eq!(with_file("workers = 8\ntranscode_workers = 0\n").expect("shared").transcode_workers, 0);
        assert_eq!(with_file("workers = 2\ntranscode_workers = 1\n").expect("one").transcode_workers, 1);
        assert!(with_file("pin_workers = true\n").expect("pin").pin_workers);
        assert!(!with_file("").expect("default").pin_workers);
        let e = with_file("workers = 2\ntranscode_workers = 2\n").expect_err("none left");
        assert!(e.contains("transcode_workers") && e.contains("none for pass-through"), "{e}");
        assert_eq!(with_file("").expect("default").plc, srtpgate_codec::abi::PLC_NEURAL);
        assert_eq!(with_file("plc = \"classic\"\n").expect("classic").plc, srtpgate_codec::abi::PLC_CLASSIC);
        let e = with_file("plc = \"fancy\"\n").expect_err("unknown");
        assert!(e.contains("plc") && e.contains("neural, classic"), "{e}");
        let e = with_file("codec_complexity = 11\n").expect_err("out of range");
        assert!(e.contains("codec_complexity"), "{e}");
        assert_eq!(with_file("gpu_min_batch = \"auto\"\n").expect("auto").gpu_min_batch, None);
        assert_eq!(Config::resolve(&ServeArgs::default()).expect("defaults").gpu_min_batch, None);
        let c = with_file("max_id_length = 64\nng_cache_seconds = 5\nhttp_max_connections = 8\n").expect("limits");
        assert_eq!(
            (c.limits.max_id_length, c.limits.ng_cache_ttl, c.http_max_connections),
            (64, Duration::from_secs(5), 8)
        );
        assert_eq!(Config::resolve(&ServeArgs::default()).expect("defaults").limits, Limits::default());
        let e = Config::resolve(&ServeArgs { config: Some("/nonexistent/x.toml".into()), ..Default::default() })
            .expect_err("missing file");
        assert!(e.contains("/nonexistent/x.toml"), "{e}");
    }

    #[test]
    fn the_kernel_cache_is_the_services_or_the_users_unless_set() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| std::ffi::OsString::from(v))
        };
        let d = |pairs| default_kernel_cache(env(pairs));
        assert_eq!(
            d(&[("CACHE_DIRECTORY", "/var/cache/srtpgate:/var/cache/other"), ("HOME", "/home/x")]),
            Some(PathBuf::from("/var/cache/srtpgate/gpu-kernels"))
        );
        assert_eq!(
            d(&[("XDG_CACHE_HOME", "/xdg"), ("HOME", "/home/x")]),
            Some(PathBuf::from("/xdg/srtpgate/gpu-kernels"))
        );
        assert_eq!(d(&[("HOME", "/home/x")]), Some(PathBuf::from("/home/x/.cache/srtpgate/gpu-kernels")));
        assert_eq!(d(&[("HOME", "")]), None);
        let set = ServeArgs { gpu_kernel_cache: Some("/srv/k".into()), ..Default::default() };
        assert_eq!(Config::resolve(&set).unwrap().gpu_kernel_cache, Some(PathBuf::from("/srv/k")));
        let off = ServeArgs { gpu_kernel_cache: Some("off".into()), ..Default::default() };
        assert_eq!(Config::resolve(&off).unwrap().gpu_kernel_cache, None);
        assert_eq!(with_file("gpu_kernel_cache = \"/k\"\n").unwrap().gpu_kernel_cache, Some(PathBuf::from("/k")));
        let e =
            Config::resolve(&ServeArgs { gpu_kernel_cache: Some("".into()), ..Default::default() }).expect_err("empty");
        assert!(e.contains("gpu-kernel-cache"), "{e}");
    }
}

/// Where the calls are kept ([`Config::redis`]).
#[derive(Clone)]
pub struct RedisConfig {
    /// The server's URL.
    pub url: String,
    /// Encrypts the keys kept there (AES-256-GCM).
    pub key: zeroize::Zeroizing<[u8; 32]>,
    /// The prefix of the relay's keys.
    pub namespace: String,
    /// This relay's name in the namespace's lease.
    pub instance: String,
    /// How long the lease outlives its holder.
    pub lease: Duration,
}

/// The host's name (the default instance name of the Redis lease).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "srtpgate".into())
}

/// An instance name: printable, no spaces (the lease holds `NAME EPOCH`).
fn check_instance(name: &str) -> Result<String, String> {
    if name.is_empty() || name.len() > 200 || !name.chars().all(|c| c.is_ascii_graphic()) {
        return Err(format!("redis_instance {name:?}: 1 to 200 printable characters without spaces"));
    }
    Ok(name.to_string())
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &self.url)
            .field("namespace", &self.namespace)
            .field("instance", &self.instance)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

/// Reads the key of `--redis-key-file`: 64 hex digits (surrounding
/// white space allowed), nothing else.
fn read_redis_key(path: &std::path::Path) -> Result<zeroize::Zeroizing<[u8; 32]>, String> {
    let text = zeroize::Zeroizing::new(
        std::fs::read_to_string(path).map_err(|e| format!("redis_key_file {}: {e}", path.display()))?,
    );
    let mut key = zeroize::Zeroizing::new([0u8; 32]);
    let hex_text = text.trim();
    if hex_text.len() != 64 || hex::decode_to_slice(hex_text, &mut key[..]).is_err() {
        return Err(format!("redis_key_file {}: not 64 hex digits (32 bytes)", path.display()));
    }
    Ok(key)
}
