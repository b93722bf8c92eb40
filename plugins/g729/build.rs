//! Links the system's bcg729 (Debian `libbcg729-dev`).
fn main() {
    if let Err(e) = pkg_config::Config::new().atleast_version("1.0").probe("libbcg729") {
        panic!("bcg729 not found ({e}): install Debian's libbcg729-dev (scripts/deps.sh does)");
    }
}
