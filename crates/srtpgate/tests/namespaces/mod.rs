//! Network-namespace rigs for the daemon's tests (`mod namespaces;` in
//! each test file that uses one): building and removing a rig of
//! `bench/netns/` by its script, moving a thread into one of its
//! namespaces, and whether an I/O backend can run here.
#![allow(dead_code)]

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A rig of namespaces NAME-SIDE built by a script of `bench/netns/`
/// (`up`, `down`, `check` NAME), removed on drop (also when a test fails).
pub struct Rig {
    pub name: String,
    script: PathBuf,
}

impl Rig {
    /// Builds rig `name` with `bench/netns/<script>`; Err says why this
    /// machine cannot (the script's `check`) or what failed.
    pub fn up(script: &str, name: &str) -> Result<Rig, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/netns").join(script);
        let check = Command::new(&script).arg("check").arg(name).output().map_err(|e| e.to_string())?;
        if !check.status.success() {
            return Err(String::from_utf8_lossy(&check.stdout).trim().to_string());
        }
        let up = Command::new(&script).arg("up").arg(name).output().map_err(|e| e.to_string())?;
        if !up.status.success() {
            return Err(format!("rig up failed: {}", String::from_utf8_lossy(&up.stderr)));
        }
        Ok(Rig { name: name.to_string(), script })
    }

    /// The `ip netns` name of the rig's namespace `side`.
    pub fn ns(&self, side: &str) -> String {
        format!("{}-{side}", self.name)
    }

    /// A command that runs in namespace `side` (the program and its
    /// arguments follow).
    pub fn exec(&self, side: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns(side)]);
        c
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = Command::new(&self.script).arg("down").arg(&self.name).status();
    }
}

/// Moves the calling thread into network namespace `ns` (an `ip netns`
/// name): the sockets it makes from now on are there (and stay there when
/// it moves on).
pub fn enter(ns: &str) {
    let f = std::fs::File::open(format!("/var/run/netns/{ns}")).expect("namespace file");
    // SAFETY: setns on an open namespace descriptor affects this thread only.
    let r = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(r, 0, "setns {ns}: {}", std::io::Error::last_os_error());
}

/// Whether this machine can run I/O backend `io` (and why not).
pub fn usable(io: &str) -> Result<(), String> {
    match io {
        "uring" => srtpgate_relay::io::uring::probe().map_err(|e| e.to_string()),
        "xdp" if !srtpgate_relay::io::xdp::BUILT => {
            Err("the XDP program was not built (no clang when srtpgate was built)".into())
        }
        _ => Ok(()),
    }
}
