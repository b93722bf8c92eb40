//! `srtpgate codecs`: the in-tree codecs, a plugin loaded from a directory,
//! and the errors for a directory that cannot be read and a file that is not
//! a plugin.

use std::process::Command;

fn codecs(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_srtpgate")).arg("codecs").args(args).output().expect("run srtpgate");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn in_tree_codecs_are_listed() {
    let (ok, out, err) = codecs(&[]);
    assert!(ok, "{err}");
    let line = |name: &str| out.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} in {out}"));
    assert!(line("PCMU ").contains("8000") && line("PCMU ").contains("(built in)"), "{out}");
    assert!(line("PCMA ").contains(" 8 "), "static payload type 8: {out}");
    assert!(line("DTMF detector:").contains("none loaded"), "{out}");
}

#[test]
fn plugins_load_from_a_directory_and_failures_are_reported() {
    let dir = std::env::temp_dir().join(format!("srtpgate-codecs-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // The L16 plugin is a workspace member: cargo builds it beside the binary
    // (`cargo build`) or in its deps/ directory (`cargo test`).
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_srtpgate"));
    let name = "libsrtpgate_plugin_l16.so";
    let candidates = [bin.with_file_name(name), bin.with_file_name("deps").join(name)];
    let built = candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| candidates[1].clone());
    if built.is_file() {
        std::fs::copy(&built, dir.join("l16.so")).expect("copy plugin");
        let (ok, out, err) = codecs(&["--codec-plugin-dir", dir.to_str().expect("path")]);
        assert!(ok, "{err}");
        let l16: Vec<&str> = out.lines().filter(|l| l.starts_with("L16 ")).collect();
        assert_eq!(l16.len(), 2, "L16 at 8 and 16 kHz: {out}");
        assert!(l16[0].contains("l16") && l16[0].contains("2.0.0") && l16[0].contains("l16.so"), "{out}");
    } else {
        let why = format!("{} not built (run the workspace's tests to build the plugin)", built.display());
        srtpgate_testkit::skip("plugins", "the L16 plugin's listing", why);
    }
    std::fs::write(dir.join("zz-junk.so"), b"not a library").expect("write");
    let (ok, out, err) = codecs(&["--codec-plugin-dir", dir.to_str().expect("path")]);
    assert!(!ok, "a plugin that does not load fails the command");
    assert!(out.contains("PCMU"), "the rest is still listed: {out}");
    assert!(err.contains("zz-junk.so") && err.contains("did not load"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let (ok, _, err) = codecs(&["--codec-plugin-dir", "/nonexistent/plugins"]);
    assert!(!ok && err.contains("/nonexistent/plugins") && err.contains("cannot read"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
