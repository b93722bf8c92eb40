//! Links the system's spandsp (Debian `libspandsp-dev`).
fn main() {
    let lib = match pkg_config::Config::new().atleast_version("0.0.6").probe("spandsp") {
        Ok(lib) => lib,
        Err(e) => panic!("spandsp not found ({e}): install Debian's libspandsp-dev (scripts/deps.sh does)"),
    };
    // G.722 state operations against spandsp's private layout
    // (g722_state.c): compiled here so that they match the installed headers.
    let mut b = cc::Build::new();
    b.file("g722_state.c").warnings(false).cargo_warnings(false);
    for dir in &lib.include_paths {
        b.include(dir);
    }
    b.compile("srtpgate_g722_state");
    println!("cargo:rerun-if-changed=g722_state.c");
}
