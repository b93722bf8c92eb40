//! Writes the seed corpus under `seeds/<target>/` (`seed-*` files only; other
//! files such as crash reproducers are left alone):
//! `cargo run --manifest-path fuzz/Cargo.toml --example gen_seeds`.
//! The SRTP/SRTCP seeds are protected with the targets' fixed keys
//! (`srtp_fuzz::policy`), so they authenticate.

use srtp::{Context, CpuEngine, MAX_RTCP_TRAILER_LEN, MAX_TRAILER_LEN};
use srtp_fuzz::{encode, policy};
use std::path::Path;

fn rtp(first: u8, seq: u16, ssrc: u32, extra: &[u8]) -> Vec<u8> {
    let mut p = vec![first, 0x80 | 96];
    p.extend_from_slice(&seq.to_be_bytes());
    p.extend_from_slice(&(seq as u32 * 160).to_be_bytes());
    p.extend_from_slice(&ssrc.to_be_bytes());
    p.extend_from_slice(extra);
    p
}

fn rtp_samples() -> Vec<(&'static str, Vec<u8>)> {
    let payload: Vec<u8> = (0..160u32).map(|i| (i * 7) as u8).collect();
    let mut csrc_ext = vec![0, 0, 0, 1, 0, 0, 0, 2]; // two CSRCs
    csrc_ext.extend_from_slice(&[0xbe, 0xde, 0, 1, 0x10, 0xaa, 0, 0]); // one-byte extension
    csrc_ext.extend_from_slice(&payload[..20]);
    let mut padded = payload[..10].to_vec();
    padded.extend_from_slice(&[0, 0, 3]);
    vec![
        ("minimal", rtp(0x80, 1, 0x1234_5678, &[])),
        ("audio", rtp(0x80, 2, 0x1234_5678, &payload)),
        ("csrc-ext", rtp(0x92, 3, 0x1234_5678, &csrc_ext)),
        ("padding", rtp(0xa0, 4, 0x1234_5678, &padded)),
    ]
}

fn rtcp_samples() -> Vec<(&'static str, Vec<u8>)> {
    let ssrc = 0x1234_5678u32.to_be_bytes();
    let mut sr = vec![0x80, 200, 0, 6];
    sr.extend_from_slice(&ssrc);
    sr.extend_from_slice(&[0xe1, 0x2b, 0, 0, 0x80, 0, 0, 0, 0, 0, 0x3e, 0x80, 0, 0, 0, 5, 0, 0, 3, 0x20]);
    let mut rr = vec![0x81, 201, 0, 7];
    rr.extend_from_slice(&ssrc);
    rr.extend_from_slice(&[0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
    let mut sdes = vec![0x81, 202, 0, 3];
    sdes.extend_from_slice(&ssrc);
    sdes.extend_from_slice(&[1, 4, b'f', b'u', b'z', b'z', 0, 0]);
    let mut bye = vec![0x81, 203, 0, 1];
    bye.extend_from_slice(&ssrc);
    let compound = [sr.clone(), sdes.clone(), bye].concat();
    vec![("sr", sr), ("rr", rr), ("sr-sdes-bye", compound)]
}

fn write(dir: &Path, name: &str, data: &[u8]) {
    std::fs::write(dir.join(format!("seed-{name}")), data).expect("write seed");
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds");
    for t in ["rtp_header", "rtcp_header", "unprotect_rtp", "unprotect_rtcp", "sdes_key"] {
        let dir = root.join(t);
        std::fs::create_dir_all(&dir).expect("seed folder");
        for e in std::fs::read_dir(&dir).expect("seed folder") {
            let p = e.expect("entry").path();
            if p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("seed-")) {
                std::fs::remove_file(p).expect("remove old seed");
            }
        }
    }
    let rtps = rtp_samples();
    let rtcps = rtcp_samples();
    for (name, p) in &rtps {
        write(&root.join("rtp_header"), name, p);
    }
    for (name, p) in &rtcps {
        write(&root.join("rtcp_header"), name, p);
    }

    // Configurations: suite index (Suite::ALL) + 11 * flags (see srtp_fuzz docs).
    let configs: [(u8, &str); 11] = [
        (0, "aes128-80"),
        (1, "aes128-32"),
        (4, "aes256-80"),
        (6, "gcm128"),
        (7, "gcm256"),
        (8, "null-80"),
        (10, "f8"),
        (11, "aes128-80-mki"),
        (22 + 6, "gcm128-kdr"),
        (44 + 1, "aes128-32-unencrypted"),
        (88 + 11 + 7, "gcm256-mki-window64"),
    ];
    let big: Vec<u8> = rtp(0x80, 9, 0x0bad_cafe, &vec![0x5a; 5000]);
    for (config, cname) in configs {
        for rtcp in [false, true] {
            let (samples, trailer, dir) = if rtcp {
                (&rtcps, MAX_RTCP_TRAILER_LEN, root.join("unprotect_rtcp"))
            } else {
                (&rtps, MAX_TRAILER_LEN, root.join("unprotect_rtp"))
            };
            let mut tx = Context::new(policy(config), CpuEngine::new()).expect("policy");
            let mut packets: Vec<Vec<u8>> = Vec::new();
            for (_, p) in samples.iter() {
                let mut out = vec![0u8; p.len() + trailer];
                let n = if rtcp { tx.protect_rtcp(p, &mut out) } else { tx.protect_rtp(p, &mut out) }.expect("protect");
                packets.push(out[..n].to_vec());
            }
            // Protected packets (they authenticate as step 1), then the plain ones
            // (step 2 protects them).
            let mut records: Vec<&[u8]> = packets.iter().map(Vec::as_slice).collect();
            records.extend(samples.iter().map(|(_, p)| p.as_slice()));
            write(&dir, cname, &encode(config, &records));
            if !rtcp && config < 11 {
                // More than 4 KiB of payload: the counter-block wrap of the
                // portable engine's AES-CTR/GCM.
                let mut out = vec![0u8; big.len() + trailer];
                let n = tx.protect_rtp(&big, &mut out).expect("protect big");
                write(&dir, &format!("{cname}-big"), &encode(config, &[&out[..n], &big]));
            }
        }
    }

    let sdes = root.join("sdes_key");
    for (name, s) in [
        ("rfc4568", "inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20|1:4"),
        ("plain30", "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR"),
        ("aes256", "inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLQ==|2^31"),
        ("aes192", "inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCU=|1024|7:2"),
        ("gcm128", "inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==|255:1"),
        ("gcm256", "inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKis|2^48|1:128"),
    ] {
        write(&sdes, name, s.as_bytes());
    }
    println!("seeds written under {}", root.display());
}
