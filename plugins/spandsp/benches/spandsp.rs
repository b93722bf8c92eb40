//! G.722 and G.726-32 per 20 ms frame through spandsp: called directly
//! (the reference), through the plugin ABI (the loaded `.so`), and one
//! packet through a PCMA → G.722 transcoder (G.722 at 8 kHz PCM); the DTMF
//! detector on 20 ms of PCM, and a PCMA → PCMU transcoder with and without
//! it (the cost of `codec-transcode-telephone-event`).
//!
//! The cost of a lost packet on a 16 kHz G.722 decoder: ten packets decoded
//! against nine decoded and one concealed (neural with the ADPCM re-sync,
//! with and without looking ahead at the next packet, or classic), the
//! concealed one after nine received as at 10 % loss.
//!
//! `cargo bench -p srtpgate-plugin-spandsp`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use srtpgate_codec::dtmf::Detector;
use srtpgate_codec::g711::alaw_encode;
use srtpgate_codec::transcode::{Detect, Direction, Transcoder};
use srtpgate_codec::{abi, Plugin, Registry};
use srtpgate_spandsp_sys as sys;
use std::hint::black_box;

fn tone(n: usize, rate: f64) -> Vec<i16> {
    (0..n).map(|i| (6000.0 * (i as f64 * 2.0 * std::f64::consts::PI * 440.0 / rate).sin()) as i16).collect()
}

/// Times one PCMA packet of a 440 Hz tone (20 ms, consecutive sequence
/// numbers and timestamps) pushed through `t`.
fn push_alaw(b: &mut criterion::Bencher<'_>, t: &mut Transcoder) {
    let alaw: Vec<u8> = tone(160, 8000.0).into_iter().map(alaw_encode).collect();
    let mut p = vec![0x80, 8, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
    p.extend_from_slice(&alaw);
    let mut seq = 0u16;
    b.iter(|| {
        seq = seq.wrapping_add(1);
        p[2..4].copy_from_slice(&seq.to_be_bytes());
        p[4..8].copy_from_slice(&(160 * seq as u32).to_be_bytes());
        t.push(black_box(&p)).expect("push");
        black_box(t.outputs().next());
    });
}

fn benches(c: &mut Criterion) {
    let lib = srtpgate_codec::built_plugin("libsrtpgate_plugin_spandsp.so").expect("the plugin is built");
    let plugin = Plugin::load(&lib).expect("load");
    let mut g = c.benchmark_group("spandsp_20ms");
    g.throughput(Throughput::Elements(1));
    for (name, index, rate, n) in [("g722_16k", 0usize, 16000u32, 320usize), ("g726_32", 3, 8000, 160)] {
        let pcm = tone(n, rate as f64);
        g.bench_function(format!("{name}_direct_encode_decode"), |b| {
            let mut wire = [0u8; 400];
            let mut back = [0i16; 400];
            // SAFETY: states made and freed here; buffers sized for the calls.
            unsafe {
                if index == 0 {
                    let e = sys::g722_encode_init(std::ptr::null_mut(), 64000, 0);
                    let d = sys::g722_decode_init(std::ptr::null_mut(), 64000, 0);
                    b.iter(|| {
                        let k = sys::g722_encode(e, wire.as_mut_ptr(), pcm.as_ptr(), n as i32);
                        black_box(sys::g722_decode(d, back.as_mut_ptr(), wire.as_ptr(), k));
                    });
                    sys::g722_encode_free(e);
                    sys::g722_decode_free(d);
                } else {
                    let (lin, pack) = (sys::G726_ENCODING_LINEAR, sys::G726_PACKING_RIGHT);
                    let e = sys::g726_init(std::ptr::null_mut(), 32000, lin, pack);
                    let d = sys::g726_init(std::ptr::null_mut(), 32000, lin, pack);
                    b.iter(|| {
                        let k = sys::g726_encode(e, wire.as_mut_ptr(), pcm.as_ptr(), n as i32);
                        black_box(sys::g726_decode(d, back.as_mut_ptr(), wire.as_ptr(), k));
                    });
                    sys::g726_free(e);
                    sys::g726_free(d);
                }
            }
        });
        g.bench_function(format!("{name}_abi_encode_decode"), |b| {
            let mut enc = plugin.instance_for(index, None, Some(rate), abi::USE_ENCODE).expect("encoder");
            let mut dec = plugin.instance_for(index, None, Some(rate), abi::USE_DECODE).expect("decoder");
            let mut wire = [0u8; 400];
            let mut back = [0i16; 400];
            b.iter(|| {
                let k = enc.encode(black_box(&pcm), &mut wire).expect("encode");
                black_box(dec.decode(&wire[..k], &mut back).expect("decode"));
            });
        });
    }
    // A lost packet on a 16 kHz G.722 decoder.
    let voice: Vec<i16> = (0..320 * 10)
        .map(|i| {
            let t = i as f64 / 16000.0;
            let x: f64 = (1..20).map(|h| (2.0 * std::f64::consts::PI * 130.0 * h as f64 * t).sin() / h as f64).sum();
            (5000.0 * x) as i16
        })
        .collect();
    let packets: Vec<Vec<u8>> = {
        let mut enc = plugin.instance_for(0, None, Some(16000), abi::USE_ENCODE).expect("encoder");
        let mut wire = [0u8; 400];
        voice
            .chunks(320)
            .map(|f| {
                let n = enc.encode(f, &mut wire).expect("encode");
                wire[..n].to_vec()
            })
            .collect()
    };
    for (name, plc, look) in [
        ("g722_16k_10_decoded", None, false),
        ("g722_16k_9_decoded_1_concealed_neural", Some(abi::PLC_NEURAL), false),
        ("g722_16k_9_decoded_1_concealed_neural_looking_ahead", Some(abi::PLC_NEURAL), true),
        ("g722_16k_9_decoded_1_concealed_classic", Some(abi::PLC_CLASSIC), false),
    ] {
        g.bench_function(name, |b| {
            let mut dec = plugin.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
            if let Some(v) = plc {
                dec.control(abi::CTL_PLC, v).expect("plc");
            }
            let mut pcm = [0i16; 400];
            b.iter(|| {
                for (k, p) in packets.iter().enumerate() {
                    if k == 9 && plc.is_some() {
                        // As the relay fills a loss: when the next packet
                        // (the first, on the next round) has come.
                        if look {
                            black_box(dec.recover(&packets[0], &mut pcm[..320]).expect("recover"));
                        } else {
                            black_box(dec.conceal(&mut pcm[..320]).expect("conceal"));
                        }
                    } else {
                        black_box(dec.decode(black_box(p), &mut pcm).expect("decode"));
                    }
                }
            });
        });
    }
    let reg = Registry::new();
    let (pa, ia) = reg.find("PCMA", 8000, 1).expect("PCMA");
    g.bench_function("transcoder_packet_pcma_to_g722", |b| {
        let mut t = Transcoder::new(Direction {
            decoder: pa.instance_for(ia, None, Some(8000), abi::USE_DECODE).expect("PCMA"),
            in_pt: 8,
            encoder: plugin.instance_for(0, None, Some(8000), abi::USE_ENCODE).expect("G.722"),
            out_pt: 9,
            out_ptime: None,
            dtmf: None,
            detect: None,
            tones_from: None,
        })
        .expect("transcoder");
        push_alaw(b, &mut t);
    });
    // In-band DTMF: the detector alone (8 and 16 kHz PCM, the latter
    // decimated first), and a PCMA → PCMU transcoder with and without it.
    g.bench_function("dtmf_rx_direct_8k", |b| {
        let pcm = tone(160, 8000.0);
        // SAFETY: a receiver made and freed here; 160 samples.
        unsafe {
            let rx = sys::dtmf_rx_init(std::ptr::null_mut(), None, std::ptr::null_mut());
            b.iter(|| black_box(sys::dtmf_rx(rx, black_box(pcm.as_ptr()), 160)));
            sys::dtmf_rx_free(rx);
        }
    });
    for rate in [8000u32, 16000] {
        g.bench_function(format!("dtmf_detect_{}k", rate / 1000), |b| {
            let mut d = Detector::new(&plugin, rate).expect("detector");
            let pcm = tone(rate as usize / 50, rate as f64);
            b.iter(|| black_box(d.feed(black_box(&pcm)).expect("feed").len()));
        });
    }
    let (pu, iu) = reg.find("PCMU", 8000, 1).expect("PCMU");
    for detect in [false, true] {
        let name =
            if detect { "transcoder_packet_pcma_to_pcmu_detecting_dtmf" } else { "transcoder_packet_pcma_to_pcmu" };
        g.bench_function(name, |b| {
            let mut t = Transcoder::new(Direction {
                decoder: pa.instance_for(ia, None, Some(8000), abi::USE_DECODE).expect("PCMA"),
                in_pt: 8,
                encoder: pu.instance_for(iu, None, Some(8000), abi::USE_ENCODE).expect("PCMU"),
                out_pt: 0,
                out_ptime: None,
                dtmf: None,
                detect: detect.then(|| Detect {
                    detector: Detector::new(&plugin, 8000).expect("detector"),
                    out_pt: 101,
                    delay_ms: 40,
                }),
                tones_from: None,
            })
            .expect("transcoder");
            push_alaw(b, &mut t);
        });
    }
    g.finish();
}

criterion_group!(group, benches);
criterion_main!(group);
