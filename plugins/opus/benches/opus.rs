//! Opus per 20 ms frame at 8 kHz PCM (what the relay runs beside G.711):
//! libopus called directly (the reference), the same through the plugin ABI
//! (`Instance`, the loaded `.so`), and one packet through a transcoder each
//! way (PCMA → Opus, Opus → PCMA), at complexity 5 (the default) and 10;
//! and at 16 kHz (beside G.722) what decoding and a lost packet cost with
//! libopus's models (the default: LACE, deep concealment) and without
//! (`SRTPGATE_PLC_CLASSIC`).
//!
//! `cargo bench -p srtpgate-plugin-opus`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use srtpgate_codec::g711::alaw_encode;
use srtpgate_codec::transcode::{Direction, Transcoder};
use srtpgate_codec::{abi, Plugin, Registry};
use srtpgate_opus_sys::ffi as sys;
use std::hint::black_box;

fn speech(n: usize) -> Vec<i16> {
    (0..n)
        .map(|i| {
            let t = i as f64 / 8000.0;
            let env = 0.6 + 0.4 * (2.0 * std::f64::consts::PI * 3.0 * t).sin();
            let x: f64 = (1..8).map(|h| (2.0 * std::f64::consts::PI * 140.0 * h as f64 * t).sin() / h as f64).sum();
            (5000.0 * env * x) as i16
        })
        .collect()
}

fn rtp(pt: u8, seq: u16, ts: u32, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x80, pt, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
    p[2..4].copy_from_slice(&seq.to_be_bytes());
    p[4..8].copy_from_slice(&ts.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// One packet a round: the payloads in turn, as payload type `pt` with
/// `step` RTP ticks a packet, pushed through `t`.
fn push_each(b: &mut criterion::Bencher<'_>, t: &mut Transcoder, pt: u8, step: u32, payloads: &[Vec<u8>]) {
    let mut seq = 0u16;
    b.iter(|| {
        seq = seq.wrapping_add(1);
        let p = rtp(pt, seq, step.wrapping_mul(seq as u32), &payloads[seq as usize % payloads.len()]);
        t.push(black_box(&p)).expect("push");
        black_box(t.outputs().next());
    });
}

fn benches(c: &mut Criterion) {
    let lib = srtpgate_codec::built_plugin("libsrtpgate_plugin_opus.so").expect("the plugin is built");
    let plugin = Plugin::load(&lib).expect("load");
    let pcm = speech(8000);
    let frames: Vec<&[i16]> = pcm.chunks_exact(160).collect();
    for complexity in [5, 10] {
        let mut g = c.benchmark_group(format!("opus_8k_20ms_c{complexity}"));
        g.throughput(Throughput::Elements(1));
        g.bench_function("direct_encode_decode", |b| {
            let mut err = 0;
            // SAFETY: states made and destroyed here; buffers sized for the calls.
            let (enc, dec) = unsafe {
                let e = sys::opus_encoder_create(8000, 1, sys::OPUS_APPLICATION_VOIP, &mut err);
                sys::opus_encoder_ctl(e, sys::OPUS_SET_COMPLEXITY_REQUEST, complexity);
                sys::opus_encoder_ctl(e, sys::OPUS_SET_SIGNAL_REQUEST, sys::OPUS_SIGNAL_VOICE);
                (e, sys::opus_decoder_create(8000, 1, &mut err))
            };
            let mut out = [0u8; 1500];
            let mut back = [0i16; 160];
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % frames.len();
                // SAFETY: as above.
                unsafe {
                    let n = sys::opus_encode(enc, frames[k].as_ptr(), 160, out.as_mut_ptr(), 1500);
                    sys::opus_decode(dec, out.as_ptr(), n, back.as_mut_ptr(), 160, 0);
                }
                black_box(&back);
            });
            // SAFETY: made above, destroyed once.
            unsafe {
                sys::opus_encoder_destroy(enc);
                sys::opus_decoder_destroy(dec);
            }
        });
        g.bench_function("abi_encode_decode", |b| {
            let mut enc = plugin.instance_for(0, None, Some(8000), abi::USE_ENCODE).expect("encoder");
            enc.control(abi::CTL_COMPLEXITY, complexity).expect("complexity");
            let mut dec = plugin.instance_for(0, None, Some(8000), abi::USE_DECODE).expect("decoder");
            let mut out = [0u8; 1500];
            let mut back = [0i16; 160];
            let mut k = 0;
            b.iter(|| {
                k = (k + 1) % frames.len();
                let n = enc.encode(frames[k], &mut out).expect("encode");
                black_box(dec.decode(&out[..n], &mut back).expect("decode"));
            });
        });
        let reg = Registry::new();
        let (pa, ia) = reg.find("PCMA", 8000, 1).expect("PCMA");
        let alaw: Vec<Vec<u8>> = frames.iter().map(|f| f.iter().map(|&x| alaw_encode(x)).collect()).collect();
        g.bench_function("transcoder_packet_pcma_to_opus", |b| {
            let mut t = Transcoder::new(Direction {
                decoder: pa.instance_for(ia, None, Some(8000), abi::USE_DECODE).expect("PCMA"),
                in_pt: 8,
                encoder: plugin.instance_for(0, None, Some(8000), abi::USE_ENCODE).expect("Opus"),
                out_pt: 96,
                out_ptime: None,
                dtmf: None,
                detect: None,
                tones_from: None,
            })
            .expect("transcoder");
            t.control(abi::CTL_COMPLEXITY, complexity).expect("complexity");
            push_each(b, &mut t, 8, 160, &alaw);
        });
        g.bench_function("transcoder_packet_opus_to_pcma", |b| {
            let mut enc = plugin.instance_for(0, None, Some(8000), abi::USE_ENCODE).expect("encoder");
            enc.control(abi::CTL_COMPLEXITY, complexity).expect("complexity");
            let mut buf = [0u8; 1500];
            let opus: Vec<Vec<u8>> = frames
                .iter()
                .map(|f| {
                    let n = enc.encode(f, &mut buf).expect("encode");
                    buf[..n].to_vec()
                })
                .collect();
            let mut t = Transcoder::new(Direction {
                decoder: plugin.instance_for(0, None, Some(8000), abi::USE_DECODE).expect("Opus"),
                in_pt: 96,
                encoder: pa.instance_for(ia, None, Some(8000), abi::USE_ENCODE).expect("PCMA"),
                out_pt: 8,
                out_ptime: None,
                dtmf: None,
                detect: None,
                tones_from: None,
            })
            .expect("transcoder");
            push_each(b, &mut t, 96, 960, &opus);
        });
        g.finish();
    }
    // A 16 kHz decoder (beside G.722): ten packets of a 20 ms voice, with
    // and without libopus's models, and the tenth lost (no FEC sent).
    let mut g = c.benchmark_group("opus_16k_loss");
    let voice: Vec<i16> = (0..320 * 10)
        .map(|i| {
            let t = i as f64 / 16000.0;
            let x: f64 = (1..20).map(|h| (2.0 * std::f64::consts::PI * 130.0 * h as f64 * t).sin() / h as f64).sum();
            (5000.0 * x) as i16
        })
        .collect();
    let packets: Vec<Vec<u8>> = {
        let mut enc = plugin.instance_for(0, None, Some(16000), abi::USE_ENCODE).expect("encoder");
        let mut wire = [0u8; 1500];
        voice
            .chunks(320)
            .map(|f| {
                let n = enc.encode(f, &mut wire).expect("encode");
                wire[..n].to_vec()
            })
            .collect()
    };
    for (name, plc, lose) in [
        ("opus_16k_10_decoded_models", None, false),
        ("opus_16k_10_decoded_classic", Some(abi::PLC_CLASSIC), false),
        ("opus_16k_9_decoded_1_concealed_models", Some(abi::PLC_NEURAL), true),
        ("opus_16k_9_decoded_1_concealed_classic", Some(abi::PLC_CLASSIC), true),
    ] {
        g.bench_function(name, |b| {
            let mut dec = plugin.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
            if let Some(v) = plc {
                dec.control(abi::CTL_PLC, v).expect("plc");
            }
            let mut pcm = [0i16; 960];
            b.iter(|| {
                for (k, p) in packets.iter().enumerate() {
                    if k == 9 && lose {
                        black_box(dec.conceal(&mut pcm[..320]).expect("conceal"));
                    } else {
                        black_box(dec.decode(black_box(p), &mut pcm).expect("decode"));
                    }
                }
            });
        });
    }
    g.finish();
}

criterion_group!(group, benches);
criterion_main!(group);
