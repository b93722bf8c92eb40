//! Links the system's spandsp (Debian `libspandsp-dev`).
fn main() {
    if let Err(e) = pkg_config::Config::new().atleast_version("0.0.6").probe("spandsp") {
        panic!("spandsp not found ({e}): install Debian's libspandsp-dev (scripts/deps.sh does)");
    }
}
