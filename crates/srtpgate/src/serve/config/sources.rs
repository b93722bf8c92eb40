//! Where the settings come from: the flags of `srtpgate serve` (each with
//! its environment variable) and the TOML file, as parsed, before
//! [`super::Config::resolve`] merges and checks them.

use clap::Args;
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Flags of `srtpgate serve`. Each has an environment variable
/// `SRTPGATE_<NAME>` and a key of the same name (with `_`) in the file.
#[derive(Args, Debug, Default)]
pub struct ServeArgs {
    /// TOML configuration file.
    #[arg(long, env = "SRTPGATE_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address of the NG control protocol (UDP), e.g. 127.0.0.1:2223.
    #[arg(long = "listen-ng", env = "SRTPGATE_LISTEN_NG")]
    pub listen_ng: Option<SocketAddr>,
    /// Media interface, as rtpengine writes it: [NAME/]ADDRESS[!ADVERTISED]
    /// (the name `default` when left out; ADDRESS an IP address, a network
    /// device's name or `any`; ADVERTISED goes into SDP where the socket
    /// binds ADDRESS, as behind 1:1 NAT). Repeat for more
    /// interfaces, and for both families of one; the first is the default.
    #[arg(long = "interface", short = 'i', env = "SRTPGATE_INTERFACE", value_delimiter = ',')]
    pub interface: Vec<String>,
    /// Lowest media port.
    #[arg(long = "port-min", short = 'm', env = "SRTPGATE_PORT_MIN")]
    pub port_min: Option<u16>,
    /// Highest media port.
    #[arg(long = "port-max", short = 'M', env = "SRTPGATE_PORT_MAX")]
    pub port_max: Option<u16>,
    /// Address of the HTTP endpoint (/metrics, /health).
    #[arg(long = "listen-http", env = "SRTPGATE_LISTEN_HTTP")]
    pub listen_http: Option<SocketAddr>,
    /// Crypto engine: cpu, gpu, or auto (gpu when a GPU is usable, else cpu).
    #[arg(long, env = "SRTPGATE_ENGINE")]
    pub engine: Option<String>,
    /// GPU engine mode: launch or persistent.
    #[arg(long = "gpu-mode", env = "SRTPGATE_GPU_MODE")]
    pub gpu_mode: Option<String>,
    /// Batches of at least this many packets go to the GPU, smaller ones
    /// stay on the CPU engine; `auto` measures the crossover at start.
    #[arg(long = "gpu-min-batch", env = "SRTPGATE_GPU_MIN_BATCH")]
    pub gpu_min_batch: Option<String>,
    /// Directory where the GPU engine keeps its compiled kernels between
    /// starts (`off`: compile at every start). By default systemd's
    /// CacheDirectory, else $XDG_CACHE_HOME or ~/.cache, under srtpgate/.
    #[arg(long = "gpu-kernel-cache", env = "SRTPGATE_GPU_KERNEL_CACHE")]
    pub gpu_kernel_cache: Option<PathBuf>,
    /// GPUs the GPU engine spreads its lanes over: CUDA ordinals such as
    /// `0,1`, or `all` (the default: every visible GPU).
    #[arg(long = "gpu-devices", env = "SRTPGATE_GPU_DEVICES")]
    pub gpu_devices: Option<String>,
    /// Directory of codec plugins (`*.so`) loaded at start for transcoding
    /// (the in-tree G.711 is always there); by default /usr/lib/srtpgate/codecs
    /// where it exists (the Debian package's).
    #[arg(long = "codec-plugin-dir", env = "SRTPGATE_CODEC_PLUGIN_DIR")]
    pub codec_plugin_dir: Option<PathBuf>,
    /// Encoder complexity of transcoding codecs that have one (Opus: 0–10;
    /// the plugin's default, 5, when unset). Lower carries more calls a core.
    #[arg(long = "codec-complexity", env = "SRTPGATE_CODEC_COMPLEXITY")]
    pub codec_complexity: Option<u8>,
    /// How transcoding decoders conceal lost packets where a plugin offers
    /// a choice (G.722 at 16 kHz, Opus): `neural` (the default: libopus's
    /// speech model, ~0.6 ms of CPU a lost packet, at most 10 such losses a
    /// second of a stream; Opus decoders also clean up wideband frames with
    /// LACE) or `classic` (G.722: the last pitch period repeated and faded,
    /// ~40 µs; Opus: libopus without its models).
    #[arg(long = "plc", env = "SRTPGATE_PLC")]
    pub plc: Option<String>,
    /// Delay line, ms, of a transcoded direction that turns in-band DTMF
    /// into RFC 4733 events (`codec-transcode-telephone-event`): the tone
    /// is muted from its first sample only when this is at least the
    /// detector's lag (spandsp: 40 ms, the default). 0–100.
    #[arg(long = "dtmf-delay", env = "SRTPGATE_DTMF_DELAY")]
    pub dtmf_delay: Option<u32>,
    /// Packet I/O of the media workers: sockets (epoll, recvmmsg/sendmmsg),
    /// uring (io_uring), xdp (an XDP program and AF_XDP sockets on the
    /// media interface; root), mem (a NIC simulated in shared memory, for
    /// benchmarks: see --mem-dir), or auto (the best one this machine runs;
    /// never mem).
    #[arg(long, env = "SRTPGATE_IO")]
    pub io: Option<String>,
    /// With --io mem: the simulated NIC's directory (its workers' frames
    /// and rings, and the steering table), where a load generator maps it.
    #[arg(long = "mem-dir", env = "SRTPGATE_MEM_DIR")]
    pub mem_dir: Option<PathBuf>,
    /// Media worker threads (0 = one per core).
    #[arg(long, env = "SRTPGATE_WORKERS")]
    pub workers: Option<usize>,
    /// Of the media workers, how many carry the transcoded calls, so that a
    /// slow codec never shares a core with pass-through calls (a call moves
    /// there when its answer turns transcoding on). 0 = every worker carries
    /// both; default: a quarter of the workers when there are 4 or more
    /// and codec plugins are loaded, else 0.
    #[arg(long = "transcode-workers", env = "SRTPGATE_TRANSCODE_WORKERS")]
    pub transcode_workers: Option<usize>,
    /// Packet buffers per worker.
    #[arg(long, env = "SRTPGATE_BUFFERS")]
    pub buffers: Option<usize>,
    /// Most packets a worker gathers into one crypto batch (0 = 32 for the
    /// CPU engine, 1024 for the GPU engine).
    #[arg(long, env = "SRTPGATE_BATCH")]
    pub batch: Option<usize>,
    /// Workers poll their sockets without sleeping (lowest delay; each
    /// worker then uses a whole core).
    #[arg(long = "busy-poll", env = "SRTPGATE_BUSY_POLL")]
    pub busy_poll: bool,
    /// The delay bound in ms: an RTP packet older than this when its worker
    /// takes it (by the kernel's receive time) is dropped and counted as
    /// `stale` instead of relayed late (0: never). RTCP, STUN and DTLS are
    /// never stale.
    #[arg(long = "stale-after", env = "SRTPGATE_STALE_AFTER")]
    pub stale_after: Option<u64>,
    /// Pin worker i to the i-th CPU the process may run on (round robin),
    /// so that a busy worker (a transcoding one) never shares a core with
    /// another worker.
    #[arg(long = "pin-workers", env = "SRTPGATE_PIN_WORKERS")]
    pub pin_workers: bool,
    /// Seconds without media (and without signalling) after which a call ends.
    #[arg(long, env = "SRTPGATE_TIMEOUT")]
    pub timeout: Option<u64>,
    /// Seconds after which any call ends (0 = never).
    #[arg(long = "final-timeout", env = "SRTPGATE_FINAL_TIMEOUT")]
    pub final_timeout: Option<u64>,
    /// Most concurrent calls (further offers are refused).
    #[arg(long = "max-sessions", env = "SRTPGATE_MAX_SESSIONS")]
    pub max_sessions: Option<usize>,
    /// New calls are refused while the media workers are busier than this
    /// share of their time (0.0-1.0), answered as rtpengine's load limit.
    #[arg(long = "max-load", env = "SRTPGATE_MAX_LOAD")]
    pub max_load: Option<f64>,
    /// ... or while they receive more than this many bytes per second.
    #[arg(long = "max-bandwidth", env = "SRTPGATE_MAX_BANDWIDTH")]
    pub max_bandwidth: Option<u64>,
    /// ... or while fewer than this many files are left for media sockets.
    #[arg(long = "min-free-files", env = "SRTPGATE_MIN_FREE_FILES")]
    pub min_free_files: Option<usize>,
    /// SDES suites offered to a leg that did not offer any, in order
    /// (comma-separated SDES names).
    #[arg(long = "sdes-suites", env = "SRTPGATE_SDES_SUITES", value_delimiter = ',')]
    pub sdes_suites: Vec<String>,
    /// Derive AES-192 keys as libsrtp before 2.8.0 does (for such peers).
    #[arg(long = "libsrtp-aes192-kdf", env = "SRTPGATE_LIBSRTP_AES192_KDF")]
    pub libsrtp_aes192_kdf: bool,
    /// The DTLS certificate (PEM) of DTLS-SRTP legs; with
    /// --dtls-private-key. Without it, a self-signed ECDSA P-256
    /// certificate is made at start.
    #[arg(long = "dtls-certificate", env = "SRTPGATE_DTLS_CERTIFICATE", requires = "dtls_private_key")]
    pub dtls_certificate: Option<PathBuf>,
    /// Its private key (PEM, PKCS#8, ECDSA P-256 or P-384).
    #[arg(long = "dtls-private-key", env = "SRTPGATE_DTLS_PRIVATE_KEY", requires = "dtls_certificate")]
    pub dtls_private_key: Option<PathBuf>,
    /// Keep the calls in Redis (e.g. redis://127.0.0.1:6379/0), so that a
    /// restarted relay, or a standby taking over its addresses, resumes
    /// them: SDES, plain-RTP, WebRTC and transcoded calls, their keys
    /// (encrypted with --redis-key-file) and each stream's index, reserved
    /// ahead of use.
    #[arg(long, env = "SRTPGATE_REDIS", requires = "redis_key_file")]
    pub redis: Option<String>,
    /// The file of the key that encrypts the calls' keys in Redis: 32
    /// random bytes as 64 hex digits (`openssl rand -hex 32`).
    #[arg(long = "redis-key-file", env = "SRTPGATE_REDIS_KEY_FILE")]
    pub redis_key_file: Option<PathBuf>,
    /// The prefix of this relay's keys in Redis (relays that take over
    /// each other's calls share it).
    #[arg(long = "redis-namespace", env = "SRTPGATE_REDIS_NAMESPACE")]
    pub redis_namespace: Option<String>,
    /// This relay's name in the namespace's lease (default: the host
    /// name). A relay restarted under the same name takes its calls back
    /// at once; one of another name waits until the lease expires.
    #[arg(long = "redis-instance", env = "SRTPGATE_REDIS_INSTANCE")]
    pub redis_instance: Option<String>,
    /// How long the lease outlives its holder, in milliseconds (renewed
    /// every third of it): how soon a standby takes over a dead relay's
    /// calls.
    #[arg(long = "redis-lease-ms", env = "SRTPGATE_REDIS_LEASE_MS", value_parser = clap::value_parser!(u64).range(300..=600_000))]
    pub redis_lease_ms: Option<u64>,
    /// Record calls into this directory (created if missing) when NG asks
    /// (`start recording`, `record call=yes`); without it, such requests
    /// are answered with a warning and nothing is recorded.
    #[arg(long = "recording-dir", env = "SRTPGATE_RECORDING_DIR")]
    pub recording_dir: Option<PathBuf>,
    /// What a recording writes: pcap (the call's packets, decrypted, and a
    /// JSON of its metadata). rtpengine's names; its `proc` method (a kernel
    /// module and a separate daemon) has no equivalent here.
    #[arg(long = "recording-method", env = "SRTPGATE_RECORDING_METHOD")]
    pub recording_method: Option<String>,
    /// The pcap's framing: raw (IP packets, link type 101) or eth (a
    /// zeroed Ethernet header), as rtpengine's.
    #[arg(long = "recording-format", env = "SRTPGATE_RECORDING_FORMAT")]
    pub recording_format: Option<String>,
    /// Audio files of each recording besides the pcap (comma-separated):
    /// single (a WAV per party, decoded by the codec plugins), mixed (one
    /// WAV of both parties), as rtpengine's recording daemon names them.
    #[arg(long = "recording-audio", env = "SRTPGATE_RECORDING_AUDIO", value_delimiter = ',')]
    pub recording_audio: Vec<String>,
    /// File names below the recording directory: %c the Call-ID (escaped),
    /// %r 16 random hex digits, %Y %m %d %H %M %S the start (UTC), %% a %.
    /// Default %Y-%m-%d/%c-%r (a directory per day).
    #[arg(long = "recording-pattern", env = "SRTPGATE_RECORDING_PATTERN")]
    pub recording_pattern: Option<String>,
    /// Longest `metadata` accepted for a recording, in bytes.
    #[arg(long = "max-metadata-length", env = "SRTPGATE_MAX_METADATA_LENGTH")]
    pub max_metadata_length: Option<usize>,
    /// The directory of the prompts `play media` may play (`file=` a name
    /// in it, or an absolute path inside it; links out of it are refused).
    /// Without it, only prompts sent in the request (`blob`) play.
    #[arg(long = "media-dir", env = "SRTPGATE_MEDIA_DIR")]
    pub media_dir: Option<PathBuf>,
    /// Report every DTMF digit an endpoint sends as one JSON datagram to
    /// this UDP address (rtpengine's `dtmf-log-dest` format).
    #[arg(long = "dtmf-log-dest", env = "SRTPGATE_DTMF_LOG_DEST")]
    pub dtmf_log_dest: Option<SocketAddr>,
    /// Call quality (on by default): the relay reads the RTCP endpoints
    /// send and measures the jitter of the RTP it receives, for loss,
    /// jitter, round-trip time and MOS per SSRC in `query` and `delete`
    /// replies, `statistics`, /metrics and Homer. off: none of it.
    #[arg(long = "call-quality", env = "SRTPGATE_CALL_QUALITY", value_parser = ["on", "off"])]
    pub call_quality: Option<String>,
    /// The MOS reported (rtpengine's --mos): CQ, conversational (needs the
    /// round-trip time, the default) or LQ, listening (without it).
    #[arg(long = "mos", env = "SRTPGATE_MOS", value_parser = ["CQ", "LQ", "cq", "lq"])]
    pub mos: Option<String>,
    /// Send each RTCP report to Homer as HEP3 (rtpengine's --homer):
    /// ADDRESS:PORT or HOSTNAME:PORT.
    #[arg(long = "homer", env = "SRTPGATE_HOMER")]
    pub homer: Option<String>,
    /// Transport to Homer: udp (default) or tcp.
    #[arg(long = "homer-protocol", env = "SRTPGATE_HOMER_PROTOCOL", value_parser = ["udp", "tcp"])]
    pub homer_protocol: Option<String>,
    /// HEP capture ID (default 2001, as rtpengine).
    #[arg(long = "homer-id", env = "SRTPGATE_HOMER_ID")]
    pub homer_id: Option<u32>,
    /// Log filter (tracing syntax, e.g. info or srtpgate=debug).
    #[arg(long = "log-level", env = "SRTPGATE_LOG_LEVEL")]
    pub log_level: Option<String>,
    /// Longest Call-ID, SIP tag, via-branch or label accepted in NG requests, in bytes.
    #[arg(long = "max-id-length", env = "SRTPGATE_MAX_ID_LENGTH")]
    pub max_id_length: Option<usize>,
    /// Longest SDP body accepted in NG requests, in bytes.
    #[arg(long = "max-sdp-length", env = "SRTPGATE_MAX_SDP_LENGTH")]
    pub max_sdp_length: Option<usize>,
    /// Most media sections (m-lines, rejected ones included) in one SDP.
    #[arg(long = "max-media", env = "SRTPGATE_MAX_MEDIA")]
    pub max_media: Option<usize>,
    /// Most calls that hold no media port (every m-line rejected).
    #[arg(long = "max-sessions-without-media", env = "SRTPGATE_MAX_SESSIONS_WITHOUT_MEDIA")]
    pub max_sessions_without_media: Option<usize>,
    /// Bytes of NG replies kept for retransmitted requests.
    #[arg(long = "ng-cache-bytes", env = "SRTPGATE_NG_CACHE_BYTES")]
    pub ng_cache_bytes: Option<usize>,
    /// Seconds an NG reply is kept for retransmitted requests.
    #[arg(long = "ng-cache-seconds", env = "SRTPGATE_NG_CACHE_SECONDS")]
    pub ng_cache_seconds: Option<u64>,
    /// Most HTTP connections open at once (further ones get 503 and are closed).
    #[arg(long = "http-max-connections", env = "SRTPGATE_HTTP_MAX_CONNECTIONS")]
    pub http_max_connections: Option<usize>,
    /// Seconds an HTTP client has to send a request's header, and that an
    /// idle keep-alive connection stays open.
    #[arg(long = "http-timeout", env = "SRTPGATE_HTTP_TIMEOUT")]
    pub http_timeout: Option<u64>,
    /// The management page's token, as its SHA-256 in hex
    /// (`printf %s "$TOKEN" | sha256sum`); turns the page on.
    #[arg(long = "ui-token-sha256", env = "SRTPGATE_UI_TOKEN_SHA256")]
    pub ui_token_sha256: Option<String>,
    /// The management page's user (with --ui-password-hash).
    #[arg(long = "ui-user", env = "SRTPGATE_UI_USER")]
    pub ui_user: Option<String>,
    /// The user's password as an Argon2 hash (`srtpgate hash-password`).
    #[arg(long = "ui-password-hash", env = "SRTPGATE_UI_PASSWORD_HASH")]
    pub ui_password_hash: Option<String>,
    /// Anyone reaching the HTTP address may watch the management page
    /// (never act) without a credential.
    #[arg(long = "ui-read-only-open", env = "SRTPGATE_UI_READ_ONLY_OPEN")]
    pub ui_read_only_open: bool,
    /// Accepted for rtpengine compatibility: srtpgate always runs in the foreground.
    #[arg(long, short = 'f')]
    pub foreground: bool,
}

/// One `interface` of the configuration file: rtpengine's string, or a
/// table that can also give the interface its own port range.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub(super) enum InterfaceEntry {
    /// `[NAME/]ADDRESS[!ADVERTISED]`.
    Spec(String),
    /// `{ name, address, advertised, port_min, port_max }`.
    Table(InterfaceTable),
}

/// An interface written as a table.
#[derive(Deserialize, Debug, Clone)]
#[serde(deny_unknown_fields)]
pub(super) struct InterfaceTable {
    pub(super) name: Option<String>,
    pub(super) address: String,
    pub(super) advertised: Option<String>,
    pub(super) port_min: Option<u16>,
    pub(super) port_max: Option<u16>,
}

/// The configuration file: every key optional, unknown keys refused.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) listen_ng: Option<String>,
    pub(super) interface: Option<Vec<InterfaceEntry>>,
    pub(super) port_min: Option<u16>,
    pub(super) port_max: Option<u16>,
    pub(super) listen_http: Option<String>,
    pub(super) engine: Option<String>,
    pub(super) gpu_mode: Option<String>,
    pub(super) gpu_min_batch: Option<toml::Value>,
    pub(super) gpu_kernel_cache: Option<PathBuf>,
    pub(super) gpu_devices: Option<toml::Value>,
    pub(super) codec_plugin_dir: Option<PathBuf>,
    pub(super) codec_complexity: Option<u8>,
    pub(super) plc: Option<String>,
    pub(super) dtmf_delay: Option<u32>,
    pub(super) io: Option<String>,
    pub(super) mem_dir: Option<PathBuf>,
    pub(super) workers: Option<usize>,
    pub(super) transcode_workers: Option<usize>,
    pub(super) buffers: Option<usize>,
    pub(super) batch: Option<usize>,
    pub(super) busy_poll: Option<bool>,
    pub(super) stale_after: Option<u64>,
    pub(super) pin_workers: Option<bool>,
    pub(super) timeout: Option<u64>,
    pub(super) final_timeout: Option<u64>,
    pub(super) max_sessions: Option<usize>,
    pub(super) max_load: Option<f64>,
    pub(super) max_bandwidth: Option<u64>,
    pub(super) min_free_files: Option<usize>,
    pub(super) sdes_suites: Option<Vec<String>>,
    pub(super) libsrtp_aes192_kdf: Option<bool>,
    pub(super) dtls_certificate: Option<PathBuf>,
    pub(super) dtls_private_key: Option<PathBuf>,
    pub(super) redis: Option<String>,
    pub(super) redis_key_file: Option<PathBuf>,
    pub(super) redis_namespace: Option<String>,
    pub(super) redis_instance: Option<String>,
    pub(super) redis_lease_ms: Option<u64>,
    pub(super) recording_dir: Option<PathBuf>,
    pub(super) recording_method: Option<String>,
    pub(super) recording_format: Option<String>,
    pub(super) recording_pattern: Option<String>,
    pub(super) recording_audio: Option<Vec<String>>,
    pub(super) max_metadata_length: Option<usize>,
    pub(super) media_dir: Option<PathBuf>,
    pub(super) dtmf_log_dest: Option<SocketAddr>,
    pub(super) call_quality: Option<bool>,
    pub(super) mos: Option<String>,
    pub(super) homer: Option<String>,
    pub(super) homer_protocol: Option<String>,
    pub(super) homer_id: Option<u32>,
    pub(super) log_level: Option<String>,
    pub(super) socket_buffer: Option<usize>,
    pub(super) max_id_length: Option<usize>,
    pub(super) max_sdp_length: Option<usize>,
    pub(super) max_media: Option<usize>,
    pub(super) max_sessions_without_media: Option<usize>,
    pub(super) ng_cache_bytes: Option<usize>,
    pub(super) ng_cache_seconds: Option<u64>,
    pub(super) http_max_connections: Option<usize>,
    pub(super) http_timeout: Option<u64>,
    pub(super) ui: Option<UiFile>,
}

/// The file's `[ui]` table.
#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct UiFile {
    pub(super) token_sha256: Option<String>,
    pub(super) user: Option<String>,
    pub(super) password_hash: Option<String>,
    pub(super) read_only_open: Option<bool>,
    pub(super) session_seconds: Option<u64>,
    pub(super) max_clients: Option<usize>,
}
