//! Opus at 16 kHz under loss, outside the relay: the speech Opus-coded as
//! the quality harness's endpoint codes it (`useinbandfec=1`, 5 % loss
//! set), the packets in each pattern dropped, and the rest decoded at 16
//! kHz four ways: `plugin` (what the relay does, the plugin's decoder as
//! shipped: LACE and libopus's deep concealment, in-band FEC of the next
//! packet for the last lost frame), and on the plugin's decoder set to
//! `SRTPGATE_PLC_CLASSIC` (libopus 1.6.1 without its models): `fec` (FEC and libopus's classic concealment), `plc` (the
//! classic concealment only) and `neural` (libopus's neural PLC from
//! `srtpgate-opus-sys`, as G.722 uses it, in place of the concealment,
//! the Opus decoder still run through its own to keep its state, 5 ms
//! cross-fade into the next packet). `bench/quality/lab.py --direction
//! opus` runs and scores it.
//!
//! ```sh
//! cargo run --release -p srtpgate-plugin-spandsp --example opus_loss -- speech16k.wav OUTDIR PATTERNS 'plugin;fec;plc;neural'
//! ```
//! Writes OUTDIR/VARIANT@PATTERN.wav. Run from the repository root (the Opus
//! plugin is loaded from `target/release/`).
use srtpgate_codec::{abi, Plugin};
use srtpgate_opus_sys::plc::{NeuralPlc, FRAME};

mod wav;

/// Cross-fade from the neural continuation into the next packet (5 ms).
const OLA: usize = 80;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 5 {
        eprintln!("usage: opus_loss SPEECH16K.wav OUTDIR PATTERNS VARIANTS");
        std::process::exit(2);
    }
    let (hdr, src) = wav::read(&a[1]);
    let patterns = wav::patterns(&a[3]);
    let op = Plugin::load(std::path::Path::new("target/release/libsrtpgate_plugin_opus.so")).expect("opus plugin");
    let mut enc = op.instance_for(0, Some("useinbandfec=1"), Some(16000), abi::USE_ENCODE).expect("encoder");
    enc.control(abi::CTL_PACKET_LOSS, 5).expect("packet loss");
    let packets: Vec<Vec<u8>> = src
        .chunks_exact(320)
        .map(|f| {
            let mut o = [0u8; 1500];
            let n = enc.encode(f, &mut o).expect("encode");
            o[..n].to_vec()
        })
        .collect();
    for v in a[4].split(';') {
        for (name, lost) in &patterns {
            let mut dec = op.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
            if v != "plugin" {
                dec.control(abi::CTL_PLC, abi::PLC_CLASSIC).expect("classic");
            }
            let (mut model, mut look) = (NeuralPlc::new().expect("state"), NeuralPlc::new().expect("state"));
            let mut y: Vec<i16> = Vec::new();
            let mut gap = 0usize;
            let mut pcm = [0i16; 960];
            for (k, p) in packets.iter().enumerate() {
                if lost.contains(&k) {
                    gap += 1;
                    continue;
                }
                if gap > 0 {
                    let mut fill = vec![0i16; 320 * gap];
                    let n = match v {
                        "plugin" | "fec" => dec.recover(p, &mut fill).expect("recover"),
                        "plc" => dec.conceal(&mut fill).expect("conceal"),
                        "neural" => {
                            let mut state_only = vec![0i16; 320 * gap];
                            dec.conceal(&mut state_only).expect("conceal");
                            for f in fill.chunks_mut(FRAME) {
                                model.conceal(f.try_into().expect("frame"));
                            }
                            fill.len()
                        }
                        other => panic!("unknown variant {other}"),
                    };
                    assert_eq!(n, fill.len());
                    y.extend_from_slice(&fill);
                }
                let n = dec.decode(p, &mut pcm).expect("decode");
                if gap > 0 && v == "neural" {
                    look.copy_from(&model);
                    let mut c = [0i16; FRAME];
                    look.conceal(&mut c);
                    for (i, x) in pcm[..OLA].iter_mut().enumerate() {
                        let w = (i + 1) as f32 / (OLA + 1) as f32;
                        *x = (c[i] as f32 * (1.0 - w) + *x as f32 * w).round() as i16;
                    }
                }
                for f in pcm[..n].chunks_exact(FRAME) {
                    model.update(f.try_into().expect("frame"));
                }
                y.extend_from_slice(&pcm[..n]);
                gap = 0;
            }
            wav::write(&hdr, &format!("{}/{v}@{name}.wav", a[2]), &y);
        }
    }
}
