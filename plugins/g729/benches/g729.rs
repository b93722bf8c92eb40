//! G.729 per 20 ms (two frames): bcg729 called directly (the reference)
//! and through the plugin ABI (the loaded `.so`), Annex B off.
//!
//! `cargo bench -p srtpgate-plugin-g729`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use srtpgate_codec::{abi, Plugin};
use srtpgate_plugin_g729::ffi;
use std::hint::black_box;

fn benches(c: &mut Criterion) {
    let pcm: Vec<i16> = (0..160)
        .map(|i| {
            let t = i as f64 / 8000.0;
            (1..6).map(|h| (2.0 * std::f64::consts::PI * 140.0 * h as f64 * t).sin() / h as f64).sum::<f64>() * 6000.0
        })
        .map(|x| x as i16)
        .collect();
    let mut g = c.benchmark_group("g729_20ms");
    g.throughput(Throughput::Elements(1));
    g.bench_function("direct_encode_decode", |b| {
        // SAFETY: contexts made and closed here; 80 samples and 10 bytes a frame.
        unsafe {
            let e = ffi::initBcg729EncoderChannel(0);
            let d = ffi::initBcg729DecoderChannel();
            let mut bits = [0u8; 10];
            let mut len = 0u8;
            let mut out = [0i16; 80];
            b.iter(|| {
                for f in pcm.chunks_exact(80) {
                    ffi::bcg729Encoder(e, f.as_ptr(), bits.as_mut_ptr(), &mut len);
                    ffi::bcg729Decoder(d, bits.as_ptr(), len, 0, 0, 0, out.as_mut_ptr());
                }
                black_box(&out);
            });
            ffi::closeBcg729EncoderChannel(e);
            ffi::closeBcg729DecoderChannel(d);
        }
    });
    let lib = srtpgate_codec::built_plugin("libsrtpgate_plugin_g729.so").expect("the plugin is built");
    let p = Plugin::load(&lib).expect("load");
    g.bench_function("abi_encode_decode", |b| {
        let mut enc = p.instance_for(0, Some("annexb=no"), None, abi::USE_ENCODE).expect("encoder");
        let mut dec = p.instance_for(0, None, None, abi::USE_DECODE).expect("decoder");
        let mut wire = [0u8; 20];
        let mut out = [0i16; 160];
        b.iter(|| {
            let n = enc.encode(black_box(&pcm), &mut wire).expect("encode");
            black_box(dec.decode(&wire[..n], &mut out).expect("decode"));
        });
    });
    g.finish();
}

criterion_group!(group, benches);
criterion_main!(group);
