//! The cost of the codec path per 20 ms frame (160 samples at 8 kHz):
//! G.711 called directly (the reference: the same code without the ABI),
//! the same through the plugin ABI (`Instance`: a call through the table's
//! function pointers with its checks), and one packet through a transcoder
//! (parse, decode, FIFO, encode, header), PCMU to PCMA.
//!
//! `cargo bench -p srtpgate-codec`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use srtpgate_codec::g711::{alaw_encode, ulaw_decode, ulaw_encode};
use srtpgate_codec::transcode::{Direction, Transcoder};
use srtpgate_codec::Registry;
use std::hint::black_box;

fn frame() -> Vec<u8> {
    (0..160).map(|i| ulaw_encode((8000.0 * (i as f64 * 0.785).sin()) as i16)).collect()
}

fn benches(c: &mut Criterion) {
    let ulaw = frame();
    let mut g = c.benchmark_group("g711_20ms");
    g.throughput(Throughput::Elements(1));
    g.bench_function("direct_decode_ulaw_encode_alaw", |b| {
        let mut out = [0u8; 160];
        b.iter(|| {
            for (o, &x) in out.iter_mut().zip(black_box(&ulaw)) {
                *o = alaw_encode(ulaw_decode(x));
            }
            black_box(&out);
        })
    });
    let r = Registry::new();
    let (pu, iu) = r.find("PCMU", 8000, 1).expect("PCMU");
    let (pa, ia) = r.find("PCMA", 8000, 1).expect("PCMA");
    g.bench_function("abi_decode_ulaw_encode_alaw", |b| {
        let mut dec = pu.instance(iu, None, None).expect("state");
        let mut enc = pa.instance(ia, None, None).expect("state");
        let mut pcm = [0i16; 160];
        let mut out = [0u8; 160];
        b.iter(|| {
            let n = dec.decode(black_box(&ulaw), &mut pcm).expect("decode");
            let m = enc.encode(&pcm[..n], &mut out).expect("encode");
            black_box(&out[..m]);
        })
    });
    g.bench_function("transcoder_packet_pcmu_to_pcma", |b| {
        let mut t = Transcoder::new(Direction {
            decoder: pu.instance(iu, None, None).expect("state"),
            in_pt: 0,
            encoder: pa.instance(ia, None, None).expect("state"),
            out_pt: 8,
            out_ptime: None,
            dtmf: None,
            detect: None,
            tones_from: None,
        })
        .expect("transcoder");
        let mut p = vec![0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
        p.extend_from_slice(&ulaw);
        let mut seq = 0u16;
        b.iter(|| {
            seq = seq.wrapping_add(1);
            p[2..4].copy_from_slice(&seq.to_be_bytes());
            p[4..8].copy_from_slice(&(seq as u32 * 160).to_be_bytes());
            t.push(black_box(&p)).expect("push");
            black_box(t.outputs().next());
        })
    });
    g.finish();
}

criterion_group!(codec, benches);
criterion_main!(codec);
