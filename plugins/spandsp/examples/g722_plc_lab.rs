//! 16 kHz G.722 concealment variants outside the relay, for PESQ
//! (`bench/quality/lab.py` runs it over the loss patterns of the quality
//! runs and scores the outputs; BENCHMARKS' G.722 → Opus section).
//!
//! ```sh
//! cargo run --release -p srtpgate-plugin-spandsp --example g722_plc_lab -- \
//!     speech16k.wav OUTDIR PATTERNS 'classic;neural:ola=5:state=resync' [opus]
//! ```
//! PATTERNS: one line per loss pattern, `name lost,lost,…` (20 ms packet
//! indices). A variant is `KIND[:ola=MS][:state=keep|resync|sync]`:
//! KIND `plugin` (the spandsp plugin's decoder as the relay runs it, its
//! defaults: the shipped code, looking ahead at the packet after a gap;
//! `plugin:state=nolook` conceals without looking ahead, as before; `ola`
//! does not apply), `classic`
//! (`srtpgate_codec::plc`), `neural` (libopus's neural PLC, re-implemented
//! here for 20 ms packets to vary its parts) or `truth` (what a decoder
//! that lost nothing plays: a perfect concealment); `ola` the neural one's cross-fade into the next packet;
//! `state` what the ADPCM decoder does over the loss: `keep` (left
//! as it was), `resync` (the concealment G.722-encoded into it, as the
//! plugin does) or `sync` (the lost packet decoded into it: an oracle).
//! Writes OUTDIR/VARIANT@PATTERN.wav, and with `opus` also the same audio
//! Opus-coded at 16 kHz as the relay sends it (…@PATTERN@opus.wav; the
//! Opus plugin is loaded from `target/release/`, so run from the
//! repository root).
use srtpgate_codec::plc::Plc;
use srtpgate_codec::{abi, Plugin};
use srtpgate_opus_sys::plc::{NeuralPlc, FRAME};
use srtpgate_spandsp_sys as sys;

/// Samples by which G.722's analysis and synthesis QMF delay audio.
const QMF_DELAY: usize = 22;

mod wav;
use wav::write;

struct Variant {
    kind: String,
    ola: usize,
    state: String,
}

fn parse(v: &str) -> Variant {
    let mut it = v.split(':');
    let mut r = Variant { kind: it.next().unwrap_or("classic").into(), ola: 80, state: "keep".into() };
    for kv in it {
        match kv.split_once('=') {
            Some(("ola", ms)) => r.ola = (ms.parse::<f64>().expect("ms") * 16.0) as usize,
            Some(("state", s)) => r.state = s.into(),
            _ => panic!("unknown option {kv}"),
        }
    }
    r
}

enum Concealer {
    Classic(Plc),
    Neural { plc: NeuralPlc, look: NeuralPlc, missing: bool, ola: usize },
}

impl Concealer {
    /// 320 samples of concealment.
    fn conceal(&mut self, pcm: &mut [i16; 320]) {
        match self {
            Concealer::Classic(p) => p.conceal(pcm),
            Concealer::Neural { plc, missing, .. } => {
                for f in pcm.chunks_mut(FRAME) {
                    plc.conceal(f.try_into().expect("frame"));
                }
                *missing = true;
            }
        }
    }

    /// What the concealment would continue with, the concealer unchanged.
    fn ahead(&mut self, out: &mut [i16; 320]) {
        match self {
            Concealer::Classic(p) => p.clone().conceal(out),
            Concealer::Neural { plc, look, .. } => {
                look.copy_from(plc);
                for f in out.chunks_mut(FRAME) {
                    look.conceal(f.try_into().expect("frame"));
                }
            }
        }
    }

    fn received(&mut self, pcm: &mut [i16; 320], ahead: &[i16; 320]) {
        match self {
            Concealer::Classic(p) => p.received(pcm),
            Concealer::Neural { plc, missing, ola, .. } => {
                if *missing {
                    let n = (*ola).min(320);
                    for (i, x) in pcm[..n].iter_mut().enumerate() {
                        let w = (i + 1) as f32 / (n + 1) as f32;
                        *x = (ahead[i] as f32 * (1.0 - w) + *x as f32 * w).round() as i16;
                    }
                    *missing = false;
                }
                for f in pcm.chunks(FRAME) {
                    plc.update(f.try_into().expect("frame"));
                }
            }
        }
    }
}

/// Decodes `pay` through the spandsp plugin's 16 kHz G.722 decoder, the
/// packets in `lost` concealed by it as the relay conceals them: when the
/// packet after a gap arrives, `conceal` for all but the gap's last packet
/// and `recover` (which looks ahead at the next packet) for that one; with
/// `look` false, `conceal` for all (the plugin before the look-ahead).
fn run_plugin(sp: &std::sync::Arc<Plugin>, pay: &[[u8; 160]], lost: &[usize], look: bool) -> Vec<i16> {
    let mut dec = sp.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
    let mut y = Vec::new();
    let mut pcm = [0i16; 320];
    let mut gap = 0;
    for (k, packet) in pay.iter().enumerate() {
        if lost.contains(&k) {
            gap += 1;
            continue;
        }
        for g in 0..gap {
            let n = if look && g + 1 == gap {
                dec.recover(packet, &mut pcm).expect("recover")
            } else {
                dec.conceal(&mut pcm).expect("conceal")
            };
            y.extend_from_slice(&pcm[..n]);
        }
        gap = 0;
        let n = dec.decode(packet, &mut pcm).expect("decode");
        y.extend_from_slice(&pcm[..n]);
    }
    for _ in 0..gap {
        let n = dec.conceal(&mut pcm).expect("conceal");
        y.extend_from_slice(&pcm[..n]);
    }
    y
}

/// Decodes `pay` with the packets in `lost` concealed as `v` says.
fn run(v: &Variant, pay: &[[u8; 160]], lost: &[usize]) -> Vec<i16> {
    // SAFETY: states made and freed here; buffers sized for each call.
    unsafe {
        let null = std::ptr::null_mut;
        let new = || sys::g722_decode_init(null(), 64000, 0);
        // The decoder, a shadow for the re-sync, one that loses nothing.
        let (d, shadow, t) = (new(), new(), new());
        let e = sys::g722_encode_init(std::ptr::null_mut(), 64000, 0);
        let mut c = match v.kind.as_str() {
            "neural" => Concealer::Neural {
                plc: NeuralPlc::new().expect("state"),
                look: NeuralPlc::new().expect("state"),
                missing: false,
                ola: v.ola,
            },
            _ => Concealer::Classic(Plc::new(16000)),
        };
        let truth = v.kind == "truth";
        let mut y: Vec<i16> = Vec::new();
        // Where the current loss started in `y`.
        let mut at_loss: Option<usize> = None;
        for (k, packet) in pay.iter().enumerate() {
            let mut tpcm = [0i16; 320];
            sys::g722_decode(t, tpcm.as_mut_ptr(), packet.as_ptr(), 160);
            let mut pcm = [0i16; 320];
            if lost.contains(&k) {
                if at_loss.is_none() {
                    at_loss = Some(y.len());
                    sys::srtpgate_g722_decode_copy(shadow, d);
                }
                if truth {
                    pcm = tpcm;
                } else {
                    c.conceal(&mut pcm);
                }
                if v.state == "sync" {
                    let mut junk = [0i16; 320];
                    sys::g722_decode(d, junk.as_mut_ptr(), packet.as_ptr(), 160);
                }
                y.extend_from_slice(&pcm);
                continue;
            }
            let mut ahead = [0i16; 320];
            if let Some(from) = at_loss.take() {
                if truth {
                    ahead = tpcm;
                } else {
                    c.ahead(&mut ahead);
                }
                if v.state == "resync" {
                    // As the plugin: the gap's audio from 22 samples in to 22
                    // past it, the 24 before as the encoder's QMF history,
                    // encoded and decoded into the state at the loss.
                    let mut audio: Vec<i16> = vec![0; 2usize.saturating_sub(from)];
                    audio.extend_from_slice(&y[from.saturating_sub(2)..]);
                    audio.extend_from_slice(&ahead[..QMF_DELAY]);
                    sys::srtpgate_g722_encode_from_decode(e, shadow, audio.as_ptr());
                    let body = &audio[24..];
                    let mut codes = vec![0u8; body.len() / 2];
                    let n = sys::g722_encode(e, codes.as_mut_ptr(), body.as_ptr(), body.len() as i32);
                    let mut junk = vec![0i16; body.len()];
                    sys::g722_decode(shadow, junk.as_mut_ptr(), codes.as_ptr(), n);
                    sys::srtpgate_g722_decode_copy(d, shadow);
                }
            }
            sys::g722_decode(d, pcm.as_mut_ptr(), packet.as_ptr(), 160);
            if !truth {
                c.received(&mut pcm, &ahead);
            }
            y.extend_from_slice(&pcm);
        }
        for s in [d, shadow, t] {
            sys::g722_decode_free(s);
        }
        sys::g722_encode_free(e);
        y
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 5 {
        eprintln!("usage: g722_plc_lab SPEECH16K.wav OUTDIR PATTERNS VARIANTS [opus]");
        std::process::exit(2);
    }
    let (hdr, src) = wav::read(&a[1]);
    let patterns = wav::patterns(&a[3]);
    let opus = a.get(5).is_some_and(|s| s == "opus");
    let op = Plugin::load(std::path::Path::new("target/release/libsrtpgate_plugin_opus.so")).expect("opus plugin");
    let sp =
        Plugin::load(std::path::Path::new("target/release/libsrtpgate_plugin_spandsp.so")).expect("spandsp plugin");
    let mut pay = Vec::new();
    // SAFETY: a state made and freed here; 320 samples in, 160 bytes out.
    unsafe {
        let e = sys::g722_encode_init(std::ptr::null_mut(), 64000, 0);
        for f in src.chunks_exact(320) {
            let mut b = [0u8; 160];
            sys::g722_encode(e, b.as_mut_ptr(), f.as_ptr(), 320);
            pay.push(b);
        }
        sys::g722_encode_free(e);
    }
    for name in a[4].split(';') {
        let v = parse(name);
        for (pattern, lost) in &patterns {
            let y = match v.kind.as_str() {
                "plugin" => run_plugin(&sp, &pay, lost, v.state != "nolook"),
                _ => run(&v, &pay, lost),
            };
            write(&hdr, &format!("{}/{name}@{pattern}.wav", a[2]), &y);
            if opus {
                let mut enc =
                    op.instance_for(0, Some("useinbandfec=1"), Some(16000), abi::USE_ENCODE).expect("encoder");
                let mut dec = op.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
                let mut z = Vec::new();
                for f in y.chunks(320) {
                    let mut o = [0u8; 1500];
                    let q = enc.encode(f, &mut o).expect("encode");
                    let mut pcm = [0i16; 960];
                    let r = dec.decode(&o[..q], &mut pcm).expect("decode");
                    z.extend_from_slice(&pcm[..r]);
                }
                write(&hdr, &format!("{}/{name}@{pattern}@opus.wav", a[2]), &z);
            }
        }
    }
}
