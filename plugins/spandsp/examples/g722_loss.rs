//! Where 16 kHz G.722 loses quality across a lost packet, outside the relay:
//! speech is G.722-encoded in 20 ms packets, the packets at the given
//! indices are dropped, and the rest decoded six ways: the classic
//! concealment (`plc`), silence, each of those with the decoder also fed the
//! lost packet (`sync_*`: the ADPCM state as if nothing was lost), nothing
//! lost (`none`), and the lost time cut out (`cut`, what rtpengine does);
//! then through Opus at 16 kHz, directly and through a `Transcoder`, both
//! with the plugin's G.722 decoder (its default: the neural concealment
//! with the decoder re-synced). `g722_plc_lab` compares the concealments.
//!
//! ```sh
//! cargo build --release --workspace
//! cargo run --release -p srtpgate-plugin-spandsp --example g722_loss -- speech16k.wav /tmp/g722 60,140,218
//! ```
//! (a 16 kHz mono 16-bit WAV with a 44-byte header; PESQ the outputs
//! against it.) Run from the repository root: the plugins are loaded from
//! `target/release/`.
use srtpgate_codec::plc::Plc;
use srtpgate_spandsp_sys as sys;

mod wav;

fn main() {
    let (hdr, src) = wav::read(&std::env::args().nth(1).unwrap());
    let write = |p: &str, x: &[i16]| wav::write(&hdr, p, x);
    let out = std::env::args().nth(2).unwrap();
    let lost: Vec<usize> = std::env::args().nth(3).unwrap().split(',').map(|x| x.parse().unwrap()).collect();
    let frames = src.len() / 320;
    unsafe {
        let e = sys::g722_encode_init(std::ptr::null_mut(), 64000, 0);
        let mut pay = Vec::new();
        for k in 0..frames {
            let mut b = [0u8; 160];
            sys::g722_encode(e, b.as_mut_ptr(), src[k * 320..].as_ptr(), 320);
            pay.push(b);
        }
        for variant in ["plc", "silence", "sync_silence", "sync_plc", "none", "cut"] {
            let d = sys::g722_decode_init(std::ptr::null_mut(), 64000, 0);
            let mut plc = Plc::new(16000);
            let mut y = Vec::new();
            for (k, packet) in pay.iter().enumerate() {
                let mut pcm = [0i16; 320];
                if lost.contains(&k) && variant == "cut" {
                    continue;
                }
                if lost.contains(&k) && variant != "none" {
                    let mut scratch = [0i16; 320];
                    if variant.starts_with("sync") {
                        sys::g722_decode(d, scratch.as_mut_ptr(), packet.as_ptr(), 160);
                    }
                    if variant.ends_with("plc") {
                        plc.conceal(&mut pcm);
                    }
                } else {
                    sys::g722_decode(d, pcm.as_mut_ptr(), packet.as_ptr(), 160);
                    if variant.ends_with("plc") {
                        plc.received(&mut pcm);
                    }
                }
                y.extend_from_slice(&pcm);
            }
            write(&format!("{out}-{variant}.wav"), &y);
            sys::g722_decode_free(d);
        }
        sys::g722_encode_free(e);
    }
    chain::run(&src, &lost, &out, write);
}

pub mod chain {
    use srtpgate_codec::transcode::{Direction, Transcoder};
    use srtpgate_codec::{abi, Plugin};

    /// G.722 packets (with `lost` dropped) through a Transcoder to Opus at
    /// 16 kHz, decoded by an Opus decoder at 16 kHz.
    pub fn run(src: &[i16], lost: &[usize], out: &str, write: impl Fn(&str, &[i16])) {
        let sp = Plugin::load(std::path::Path::new("target/release/libsrtpgate_plugin_spandsp.so")).unwrap();
        let op = Plugin::load(std::path::Path::new("target/release/libsrtpgate_plugin_opus.so")).unwrap();
        let mut enc = sp.instance_for(0, None, Some(16000), abi::USE_ENCODE).unwrap();
        let mut t = Transcoder::new(Direction {
            decoder: sp.instance_for(0, None, Some(16000), abi::USE_DECODE).unwrap(),
            in_pt: 9,
            encoder: op.instance_for(0, Some("useinbandfec=1"), Some(16000), abi::USE_ENCODE).unwrap(),
            out_pt: 96,
            out_ptime: None,
            dtmf: None,
            detect: None,
            tones_from: None,
        })
        .unwrap();
        let mut dec = op.instance_for(0, None, Some(16000), abi::USE_DECODE).unwrap();
        let mut direct = op.instance_for(0, Some("useinbandfec=1"), Some(16000), abi::USE_ENCODE).unwrap();
        let mut ddec = op.instance_for(0, None, Some(16000), abi::USE_DECODE).unwrap();
        let mut y = Vec::new();
        let mut z = Vec::new();
        let mut gdec = sp.instance_for(0, None, Some(16000), abi::USE_DECODE).unwrap();
        for k in 0..src.len() / 320 {
            let mut b = [0u8; 200];
            let n = enc.encode(&src[k * 320..(k + 1) * 320], &mut b).unwrap();
            let mut pcm = [0i16; 960];
            // Direct: G.722 decode (conceal on loss) → Opus → decode.
            let m = if lost.contains(&k) {
                gdec.conceal(&mut pcm[..320]).unwrap()
            } else {
                gdec.decode(&b[..n], &mut pcm).unwrap()
            };
            let mut o = [0u8; 1500];
            let q = direct.encode(&pcm[..m], &mut o).unwrap();
            let r = ddec.decode(&o[..q], &mut pcm).unwrap();
            z.extend_from_slice(&pcm[..r]);
            if lost.contains(&k) {
                continue;
            }
            let mut p = vec![0x80, 9, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
            p[2..4].copy_from_slice(&(k as u16).to_be_bytes());
            p[4..8].copy_from_slice(&(160 * k as u32).to_be_bytes());
            p.extend_from_slice(&b[..n]);
            t.push(&p).unwrap();
            for o in t.outputs() {
                let r = dec.decode(&o[12..], &mut pcm).unwrap();
                y.extend_from_slice(&pcm[..r]);
            }
        }
        write(&format!("{out}-transcoder-opus.wav"), &y);
        write(&format!("{out}-direct-opus.wav"), &z);
    }
}
