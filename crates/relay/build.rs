//! Builds the XDP program (bpf/relay.bpf.c) with clang for the `xdp`
//! backend. Without clang (or `CLANG` naming one) the relay is built without
//! it: `--io xdp` then says the program was not built, and `auto` passes
//! over it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(xdp_program)");
    println!("cargo::rerun-if-changed=bpf/relay.bpf.c");
    println!("cargo::rerun-if-env-changed=CLANG");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("relay.bpf.o");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".into());
    let built = Command::new(&clang)
        .args(["-O2", "-g", "-target", "bpf", "-Wall", "-Werror", "-c", "bpf/relay.bpf.c", "-o"])
        .arg(&out)
        .output();
    match built {
        Ok(o) if o.status.success() => println!("cargo::rustc-cfg=xdp_program"),
        Ok(o) => {
            // A broken program is a build error, not a silent fallback.
            panic!("{clang} could not build bpf/relay.bpf.c:\n{}", String::from_utf8_lossy(&o.stderr));
        }
        Err(e) => println!(
            "cargo::warning=the xdp backend is not built: cannot run {clang} ({e}); install clang (Debian: apt install clang)"
        ),
    }
}
