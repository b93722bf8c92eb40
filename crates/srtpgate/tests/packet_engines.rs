//! `srtpgate packet` on every engine: the same lines through `cpu`,
//! `portable` and `gpu` give the same bytes, RTP and RTCP, protect and
//! unprotect, every suite. Where no GPU is usable, `--engine gpu` must exit
//! with a clear reason, and the GPU part is skipped saying so.

use srtp::Suite;
use std::io::Write;
use std::process::{Command, Stdio};

/// The SDES inline key of a fresh `a=crypto` line of `suite`.
fn inline_key(suite: Suite) -> String {
    let line = srtpgate_testkit::daemon::key(1, suite).to_string();
    let inline = line.split("inline:").nth(1).expect("an inline key");
    inline.split(['|', ' ']).next().expect("the key").to_string()
}

/// Runs `srtpgate packet` with `args`, `input` on stdin: (exit ok, stdout, stderr).
fn packet(args: &[&str], input: &str) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_srtpgate"))
        .arg("packet")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run srtpgate packet");
    // A command that refuses its arguments (`--engine gpu` without a GPU)
    // exits without reading: its stdin may be closed before this writes.
    match child.stdin.take().expect("stdin").write_all(input.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.expect("write stdin"),
    }
    let out = child.wait_with_output().expect("srtpgate packet");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// Plain RTP (or RTCP sender report) lines of growing length, as hex.
fn plain_lines(rtcp: bool, n: usize) -> String {
    (0..n)
        .map(|i| {
            let p = if rtcp {
                let mut p = vec![0x80, 200, 0, 6, 0xca, 0xfe, 0xba, 0xbe];
                p.extend((0..20).map(|j| (i * 7 + j) as u8));
                p
            } else {
                srtpgate_testkit::daemon::rtp(0xcafe_babe, 1000 + i as u16, &vec![i as u8; 1 + i * 13 % 300])
            };
            format!("{}\n", hex(&p))
        })
        .collect()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[test]
fn every_engine_gives_the_same_bytes() {
    let mut gpu_skipped = None;
    for suite in Suite::ALL {
        let key = inline_key(suite);
        for rtcp in [false, true] {
            let plain = plain_lines(rtcp, 40);
            let mut base = vec!["--suite", suite.name(), "--key", &key];
            if rtcp {
                base.push("--rtcp");
            }
            let run = |dir: &str, engine: &str, input: &str| {
                let mut a = vec![dir];
                a.extend(base.iter().copied());
                a.extend(["--engine", engine]);
                packet(&a, input)
            };
            let (ok, protected, err) = run("protect", "cpu", &plain);
            assert!(ok && !protected.contains("error"), "{suite:?} rtcp={rtcp}: {err}{protected}");
            let (ok, opened, err) = run("unprotect", "cpu", &protected);
            assert!(ok, "{err}");
            assert_eq!(opened, plain, "{suite:?} rtcp={rtcp}: the CPU engine does not round-trip");
            for engine in ["portable", "gpu"] {
                if engine == "gpu" && gpu_skipped.is_some() {
                    continue;
                }
                let (ok, p, err) = run("protect", engine, &plain);
                if engine == "gpu" && !ok {
                    assert!(err.contains("GPU engine unavailable"), "an unclear refusal: {err}");
                    gpu_skipped = Some(err.trim().to_string());
                    continue;
                }
                assert!(ok, "{engine}: {err}");
                assert_eq!(p, protected, "{engine} {suite:?} rtcp={rtcp}: protect differs from the CPU engine");
                let (ok, o, err) = run("unprotect", engine, &protected);
                assert!(ok, "{engine}: {err}");
                assert_eq!(o, plain, "{engine} {suite:?} rtcp={rtcp}: unprotect differs from the CPU engine");
            }
        }
    }
    if let Some(why) = gpu_skipped {
        srtpgate_testkit::skip("gpu", "every_engine_gives_the_same_bytes, the gpu engine", why);
    }
}
