//! `srtpgate`: the SRTP gateway's command-line entry point.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod codecs;
mod decrypt;
mod gpubench;
mod loadgen;
mod packet;
mod pcap;
mod sample;
mod serve;

/// The data plane (its own crate).
use srtpgate_relay as relay;

/// SRTP media gateway tools.
#[derive(Parser, Debug)]
#[command(name = "srtpgate", version, about)]
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
    /// Measure the engines.
    Bench(bench::BenchArgs),
    /// Run the media relay, controlled by the rtpengine NG protocol.
    Serve(Box<serve::config::ServeArgs>),
    /// Set up SRTP calls through a relay and measure the delay of every packet.
    Loadgen(Box<loadgen::LoadgenCli>),
    /// List the codecs available for transcoding: in-tree and from plugins.
    Codecs(codecs::CodecsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Packet(args) => packet::run(args),
        Command::Decrypt(args) => decrypt::run(args),
        Command::Sample(args) => sample::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Serve(args) => serve::run(*args),
        Command::Loadgen(args) => loadgen::main(*args),
        Command::Codecs(args) => codecs::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("srtpgate: {e}");
            ExitCode::from(2)
        }
    }
}
