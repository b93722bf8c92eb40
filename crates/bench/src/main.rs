//! `srtpgate-bench`: the load generator and the benchmarks of srtpgate, a
//! binary of their own so that the daemon (`srtpgate`) carries none of what
//! only they need (plotting, progress bars, WAV writing, the reference
//! crypto crates).
//!
//! A sweep that starts srtpgate relays runs the daemon found by
//! [`daemon::bin`]: `--srtpgate PATH`, else `srtpgate` beside this binary,
//! else on `PATH`.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod daemon;
mod engines;
mod gpubench;
mod loadgen;
mod machine;
mod nic;

/// The data plane (its own crate).
use srtpgate_relay as relay;

/// The command line.
#[derive(Parser, Debug)]
#[command(name = "srtpgate-bench", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Set up SRTP calls through a relay and measure the delay of every packet.
    Loadgen(Box<loadgen::LoadgenCli>),
    /// Measure the engines.
    Engines(engines::BenchArgs),
    /// Load a relay whose workers run the simulated NIC (`serve --io mem`).
    Nic(nic::NicArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Loadgen(args) => loadgen::main(*args),
        Command::Engines(args) => engines::run(args),
        Command::Nic(args) => nic::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("srtpgate-bench: {e}");
            ExitCode::from(2)
        }
    }
}
