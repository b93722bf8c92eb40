//! `srtpgate packet protect|unprotect`: a line filter over hex packets.
//!
//! One output line per input line, always: the result as lowercase hex, or
//! `error: REASON`. State (ROC, replay windows) carries from line to line,
//! per SSRC, as in a real endpoint. Empty lines are skipped.

use clap::{Args, ValueEnum};
use srtp::{Context, CpuEngine, Kind, MasterKey, Op, Policy, PortableEngine, Suite};
use std::io::{BufRead, BufWriter, Write};

/// Direction of the transform.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Direction {
    /// RTP/RTCP to SRTP/SRTCP.
    Protect,
    /// SRTP/SRTCP to RTP/RTCP.
    Unprotect,
}

/// Which engine does the cryptography.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum EngineName {
    /// AES-NI/SHA-NI through RustCrypto (production).
    Cpu,
    /// Table AES written in the project (not constant-time).
    Portable,
    /// The GPU engine (CUDA): every packet runs on the GPU, one batch per
    /// line; where no GPU is usable it exits with the reason.
    Gpu,
}

/// Arguments of `srtpgate packet`.
#[derive(Args, Debug)]
pub struct PacketArgs {
    /// protect or unprotect.
    #[arg(value_enum)]
    direction: Direction,
    /// Crypto suite, by its SDES name (e.g. AES_CM_128_HMAC_SHA1_80).
    #[arg(long)]
    suite: String,
    /// SDES inline key: base64(master key ∥ salt)[|lifetime][|MKI:len]; several
    /// keys separated by ';' (the first protects).
    #[arg(long)]
    key: String,
    /// Packets are RTCP/SRTCP.
    #[arg(long)]
    rtcp: bool,
    /// Replay window in packets (64..=32768).
    #[arg(long, default_value_t = 128)]
    replay_window: usize,
    /// Key derivation rate (0 or a power of two up to 2^24).
    #[arg(long, default_value_t = 0)]
    kdr: u64,
    /// Engine.
    #[arg(long, value_enum, default_value_t = EngineName::Cpu)]
    engine: EngineName,
    /// GPU engine mode: launch or persistent.
    #[arg(long, env = "SRTPGATE_GPU_MODE", default_value = "launch")]
    gpu_mode: String,
    /// AES-192 suites: derive keys as libsrtp before 2.8.0 does (an AES-256
    /// PRF, cisco/libsrtp#763) instead of as RFC 6188 says.
    #[arg(long)]
    libsrtp_aes192_kdf: bool,
}

/// Builds a policy from the suite name and `;`-separated SDES keys.
pub fn policy(suite: &str, keys: &str) -> Result<Policy, String> {
    let suite: Suite = suite.parse().map_err(|e| format!("{e}"))?;
    let mut list = Vec::new();
    for k in keys.split(';').filter(|k| !k.trim().is_empty()) {
        list.push(MasterKey::from_sdes(suite, k).map_err(|e| e.to_string())?);
    }
    let first = list.first().cloned().ok_or("no key given")?;
    let mut p = Policy::new(suite, first);
    p.keys = list;
    Ok(p)
}

pub fn run(args: PacketArgs) -> Result<(), String> {
    let mut p = policy(&args.suite, &args.key)?;
    p.replay_window = args.replay_window;
    p.kdr = args.kdr;
    p.libsrtp_aes192_kdf = args.libsrtp_aes192_kdf;
    p.max_streams = 65_536;
    let kind = if args.rtcp { Kind::Rtcp } else { Kind::Rtp };
    let op = match args.direction {
        Direction::Protect => Op::Protect,
        Direction::Unprotect => Op::Unprotect,
    };
    match args.engine {
        EngineName::Cpu => filter(Context::new(p, CpuEngine::new()).map_err(|e| e.to_string())?, kind, op),
        EngineName::Portable => filter(Context::new(p, PortableEngine::new()).map_err(|e| e.to_string())?, kind, op),
        EngineName::Gpu => {
            let mode = args.gpu_mode.parse()?;
            // cpu_below 0: no batch is handed to the CPU engine.
            let cfg = srtp_cuda::GpuConfig { mode, key_slots: 1024, cpu_below: 0, lanes: 1, ..Default::default() };
            let gpu = srtp_cuda::GpuEngine::new(cfg).map_err(|e| e.to_string())?;
            filter(Context::new(p, gpu).map_err(|e| e.to_string())?, kind, op)
        }
    }
}

fn filter<E: srtp::Engine>(mut ctx: Context<E>, kind: Kind, op: Op) -> Result<(), String> {
    let stdin = std::io::stdin();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut buf = vec![0u8; srtp::MAX_PACKET_LEN + srtp::MAX_RTCP_TRAILER_LEN];
    let mut line = String::new();
    let mut input = stdin.lock();
    let mut text = String::with_capacity(4096);
    loop {
        line.clear();
        match input.read_line(&mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("reading stdin: {e}")),
        }
        let trimmed = line.trim();
        if trimmed.is_empty() {
            continue;
        }
        text.clear();
        match hex::decode(trimmed) {
            Err(_) => text.push_str("error: bad hex"),
            Ok(pkt) => match transform(&mut ctx, kind, op, &pkt, &mut buf) {
                Ok(n) => text.push_str(&hex::encode(&buf[..n])),
                Err(e) => {
                    text.push_str("error: ");
                    text.push_str(&e.to_string());
                }
            },
        }
        text.push('\n');
        out.write_all(text.as_bytes()).map_err(|e| format!("writing stdout: {e}"))?;
        out.flush().map_err(|e| format!("writing stdout: {e}"))?;
    }
    Ok(())
}

fn transform<E: srtp::Engine>(
    ctx: &mut Context<E>,
    kind: Kind,
    op: Op,
    pkt: &[u8],
    buf: &mut [u8],
) -> Result<usize, srtp::Error> {
    match (kind, op) {
        (Kind::Rtp, Op::Protect) => ctx.protect_rtp(pkt, buf),
        (Kind::Rtp, Op::Unprotect) => ctx.unprotect_rtp(pkt, buf),
        (Kind::Rtcp, Op::Protect) => ctx.protect_rtcp(pkt, buf),
        (Kind::Rtcp, Op::Unprotect) => ctx.unprotect_rtcp(pkt, buf),
    }
}
