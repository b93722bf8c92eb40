//! `srtpgate`: the command-line entry point of the SRTP media relay and its
//! operator commands. The load generator and the benchmarks are another
//! binary (`srtpgate-bench`, `crates/bench`), so the daemon carries none of
//! what only they need.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod codecs;
mod decrypt;
mod packet;
mod pcap;
mod sample;
mod serve;

/// The data plane (its own crate).
use srtpgate_relay as relay;

/// Every heap block is zeroed when it is freed. srtpgate's own key
/// buffers zeroize themselves (`Zeroizing`, the SRTP contexts' `Drop`), but
/// libraries it hands keys to do not all: dimpl keeps a DTLS handshake's
/// exported SRTP keys and the secrets they came from in plain buffers (9 of
/// the 246 blocks a handshake frees held an exported key without this;
/// `crates/webrtc/src/heap_scan.rs` checks none does with it). The media
/// path allocates and frees nothing (the allocation tests), so the wipe
/// costs the control plane only. (The unit tests install their own
/// allocator: `serve/heap_scan.rs`.)
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: zeroizing_alloc::ZeroAlloc<std::alloc::System> = zeroizing_alloc::ZeroAlloc(std::alloc::System);

/// The command line. `about` takes the package description from
/// Cargo.toml, so `--help` and the package say the same.
#[derive(Parser, Debug)]
#[command(name = "srtpgate", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Protect or unprotect packets given as hex lines on stdin.
    Packet(packet::PacketArgs),
    /// Decrypt the SRTP/SRTCP flows of a capture into a new capture.
    Decrypt(decrypt::DecryptArgs),
    /// Write a sample capture of an SRTP call (for `decrypt`).
    Sample(sample::SampleArgs),
    /// Run the media relay, controlled by the rtpengine NG protocol.
    Serve(Box<serve::config::ServeArgs>),
    /// List the codecs available for transcoding: in-tree and from plugins.
    Codecs(codecs::CodecsArgs),
    /// Hash a password (read from stdin, first line) for the management
    /// page's `password_hash` (Argon2id, PHC string).
    HashPassword,
    /// Write the manual pages (srtpgate.1 and one per command) into DIR:
    /// the package's pages come from the same definitions as `--help`.
    #[command(hide = true)]
    Man {
        /// Where the pages go.
        dir: std::path::PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Packet(args) => packet::run(args),
        Command::Decrypt(args) => decrypt::run(args),
        Command::Sample(args) => sample::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Codecs(args) => codecs::run(args),
        Command::HashPassword => hash_password(),
        Command::Man { dir } => man_pages(&dir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("srtpgate: {e}");
            ExitCode::from(2)
        }
    }
}

/// `srtpgate man DIR`: section 1 pages of the command and of each
/// subcommand (`srtpgate-serve.1`, …), hidden ones left out.
fn man_pages(dir: &std::path::Path) -> Result<(), String> {
    use clap::CommandFactory;
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cmd = Cli::command();
    let write = |name: &str, c: clap::Command| -> Result<(), String> {
        let path = dir.join(format!("{name}.1"));
        let mut out = Vec::new();
        clap_mangen::Man::new(c).render(&mut out).map_err(|e| format!("{name}: {e}"))?;
        std::fs::write(&path, out).map_err(|e| format!("{}: {e}", path.display()))
    };
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // The page's name and its synopsis: `srtpgate-serve`, `srtpgate serve …`.
        let name = format!("srtpgate-{}", sub.get_name());
        let usage = format!("srtpgate {}", sub.get_name());
        write(&name, sub.clone().name(name.clone()).bin_name(usage))?;
    }
    write("srtpgate", cmd)
}

/// `srtpgate hash-password`: Argon2id with a random salt, RustCrypto's
/// default parameters (19 MiB, 2 passes).
fn hash_password() -> Result<(), String> {
    use argon2::password_hash::{PasswordHasher, SaltString};
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).map_err(|e| format!("reading the password: {e}"))?;
    let password = line.trim_end_matches(['\r', '\n']);
    if password.is_empty() {
        return Err("hash-password: an empty password (give it on stdin)".into());
    }
    let mut salt = [0u8; 16];
    aws_lc_rs::rand::fill(&mut salt).map_err(|_| "no random bytes for the salt".to_string())?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| e.to_string())?;
    let hash = argon2::Argon2::default().hash_password(password.as_bytes(), &salt).map_err(|e| e.to_string())?;
    println!("{hash}");
    Ok(())
}
