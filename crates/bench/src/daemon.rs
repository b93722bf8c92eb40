//! Where the daemon is: the relays a sweep starts are `srtpgate serve`
//! processes of the binary built beside this one.

use std::path::PathBuf;

/// The variable that names the daemon's executable.
pub const ENV: &str = "SRTPGATE_BIN";

/// The daemon's executable: `SRTPGATE_BIN`, else `srtpgate` in this
/// binary's directory (cargo builds the workspace's binaries into one), else
/// `srtpgate` on `PATH`.
pub fn bin() -> PathBuf {
    if let Some(p) = std::env::var_os(ENV) {
        return PathBuf::from(p);
    }
    std::env::current_exe()
        .ok()
        .and_then(|e| e.parent().map(|d| d.join("srtpgate")))
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from("srtpgate"))
}
