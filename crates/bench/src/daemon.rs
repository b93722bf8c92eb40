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

/// [`bin`], refused with a line that says how to mend it when it names a
/// file that is not there (a bare `srtpgate` is looked up on `PATH` when it
/// is started).
pub fn checked() -> Result<PathBuf, String> {
    let p = bin();
    if p.components().count() > 1 && !p.is_file() {
        return Err(format!(
            "the daemon to start, {}, is not there: build it (cargo build --release -p srtpgate) or name it with {ENV}",
            p.display()
        ));
    }
    Ok(p)
}
