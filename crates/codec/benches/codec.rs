//! The cost of the codec path per 20 ms frame (160 samples at 8 kHz):
//! G.711 called directly (the reference: the same code without the ABI),
//! the same through the plugin ABI (`Instance`: a call through the table's
//! function pointers with its checks), and one packet through a transcoder
//! (parse, decode, FIFO, encode, header), PCMU to PCMA. And the cost of
//! one frame a player makes (`play media`): the encoder alone (the
//! reference) beside `Player::next` (the prompt's frame, the encoder, the
//! RTP header), in PCMU and, when the Opus plugin is built beside the
//! bench (`cargo build --release -p srtpgate-plugin-opus`), in Opus.
//!
//! `cargo bench -p srtpgate-codec`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use srtpgate_codec::g711::{alaw_encode, ulaw_decode, ulaw_encode};
use srtpgate_codec::player::{Output, Player, Progress, PromptPlay};
use srtpgate_codec::prompt::Prompt;
use srtpgate_codec::transcode::{Direction, Transcoder};
use srtpgate_codec::{Plugin, Registry};
use std::hint::black_box;
use std::sync::Arc;

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

/// A player of a 10 s prompt (a moving tone) in codec `index` of `plugin`,
/// and the encoder alone beside it.
fn player_benches(c: &mut Criterion, name: &str, plugin: &Arc<Plugin>, index: usize, pt: u8, rate: Option<u32>) {
    let mut g = c.benchmark_group("player_20ms");
    g.throughput(Throughput::Elements(1));
    let enc = enc_at(plugin, index, rate);
    let pcm_rate = enc.pcm_rate();
    let frame = pcm_rate as usize / 50;
    let pcm: Vec<i16> = (0..pcm_rate as usize * 10)
        .map(|i| {
            (6000.0 * (i as f64 * std::f64::consts::TAU * (300.0 + (i / 800) as f64) / pcm_rate as f64).sin()) as i16
        })
        .collect();
    let channels = enc.info().pcm_channels as usize;
    g.bench_function(format!("{name}_encode_only"), |b| {
        let mut e = enc_at(plugin, index, rate);
        let mut out = [0u8; 1500];
        let mut x = vec![0i16; frame * channels];
        let mut at = 0;
        b.iter(|| {
            for (k, s) in x.chunks_exact_mut(channels).enumerate() {
                s.fill(pcm[(at + k) % pcm.len()]);
            }
            at = (at + frame) % pcm.len();
            black_box(e.encode(black_box(&x), &mut out).expect("encode"));
        })
    });
    g.bench_function(format!("{name}_player_frame"), |b| {
        let clock_rate = plugin.codecs()[index].clock_rate;
        let out = Output { encoder: Some(enc_at(plugin, index, rate)), pt, clock_rate, ptime_ms: 20, event_pt: None };
        let mut p = Player::new(out, 1, 1, 1, Arc::new(Progress::default()));
        let prompt = Arc::new(Prompt::from_pcm(pcm.clone(), pcm_rate));
        p.play(PromptPlay { prompt, start: 0, times: 0, for_ms: Some(86_400_000) }, true).expect("play");
        let mut buf = [0u8; 1500];
        // Each call is due: the clock runs a frame ahead per packet.
        let mut now = 1u64;
        b.iter(|| {
            now += 20_000_000;
            black_box(p.next(now, &mut buf).expect("a frame"));
        })
    });
    g.finish();
}

/// An encoder of codec `index` with PCM at `rate` (`None`: its own).
fn enc_at(plugin: &Arc<Plugin>, index: usize, rate: Option<u32>) -> srtpgate_codec::Instance {
    plugin.instance_for(index, None, rate, srtpgate_codec::abi::USE_ENCODE).expect("encoder")
}

fn players(c: &mut Criterion) {
    let r = Registry::new();
    let (pu, iu) = r.find("PCMU", 8000, 1).expect("PCMU");
    player_benches(c, "pcmu", &pu, iu, 0, None);
    match srtpgate_codec::built_plugin("libsrtpgate_plugin_opus.so").map(|p| Plugin::load(&p)) {
        Some(Ok(opus)) => {
            let i = opus.codecs().iter().position(|c| c.name == "opus").expect("opus");
            // At 48 kHz (the codec's own rate: a 48 kHz prompt) and at
            // 16 kHz (what the relay encodes a 16 kHz prompt from).
            player_benches(c, "opus48k", &opus, i, 111, None);
            player_benches(c, "opus16k", &opus, i, 111, Some(16_000));
        }
        Some(Err(e)) => eprintln!("player_20ms/opus: the Opus plugin does not load: {e}"),
        None => eprintln!("player_20ms/opus: skipped: libsrtpgate_plugin_opus.so is not built beside the bench"),
    }
}

criterion_group!(codec, benches, players);
criterion_main!(codec);
