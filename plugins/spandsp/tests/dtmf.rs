//! spandsp's DTMF detector through the plugin ABI, as the relay uses it.

use srtpgate_codec::dtmf::{event_of, Detector, ToneGen};
use srtpgate_codec::Plugin;
use std::sync::Arc;

fn plugin() -> Arc<Plugin> {
    let lib = srtpgate_codec::built_plugin("libsrtpgate_plugin_spandsp.so").expect("built beside the test");
    Plugin::load(&lib).expect("load")
}

/// `digits` as tones of `on` ms with `off` ms of silence between, at `rate`.
fn keyed(digits: &str, rate: u32, on: usize, off: usize) -> (Vec<i16>, Vec<(usize, usize, u8)>) {
    let ms = rate as usize / 1000;
    let mut x = vec![0i16; off * ms];
    let mut spans = Vec::new();
    let mut g = ToneGen::new(rate);
    for d in digits.chars() {
        let e = event_of(d).unwrap();
        g.start(e, -10.0);
        let start = x.len();
        x.resize(start + on * ms, 0);
        g.fill(&mut x[start..]);
        spans.push((start, x.len(), e));
        x.resize(x.len() + off * ms, 0);
    }
    (x, spans)
}

#[test]
fn detects_every_key_at_8_and_16_khz_with_its_timing() {
    let p = plugin();
    assert_eq!(p.dtmf_detector(), Some("spandsp dtmf_rx"));
    for rate in [8000u32, 16000] {
        let (x, spans) = keyed("0123456789*#ABCD", rate, 60, 60);
        let mut d = Detector::new(&p, rate).unwrap();
        let mut seen = Vec::new();
        // In packets of 20 ms, as the transcoder feeds it.
        let step = rate as usize / 50;
        for (k, chunk) in x.chunks(step).enumerate() {
            for c in d.feed(chunk).unwrap() {
                seen.push((k * step + c.at, c.event, c.on, c.level));
            }
        }
        assert_eq!(seen.len(), 2 * spans.len(), "{rate} Hz: {seen:?}");
        let ms = rate as f64 / 1000.0;
        for (k, &(start, end, e)) in spans.iter().enumerate() {
            let (on, off) = (seen[2 * k], seen[2 * k + 1]);
            assert_eq!((on.1, on.2, off.1, off.2), (e, true, e, false), "{rate} Hz");
            let (lag_on, lag_off) = ((on.0 - start) as f64 / ms, (off.0 - end) as f64 / ms);
            eprintln!("{rate} Hz event {e}: on after {lag_on:.1} ms, off after {lag_off:.1} ms, {} dBm0", on.3);
            assert!(on.0 > start && lag_on < 45.0, "{rate} Hz event {e}: on {lag_on} ms");
            assert!(off.0 > end && lag_off < 45.0, "{rate} Hz event {e}: off {lag_off} ms");
        }
    }
}

// ---------------------------------------------------------------------------
// In-band tones to RFC 4733 through a transcoder (PCMA without
// telephone-event to PCMU with it), the delay line muting each tone.

use srtpgate_codec::dtmf::{frequencies, power_share};
use srtpgate_codec::g711::{alaw_encode, ulaw_decode};
use srtpgate_codec::transcode::{Detect, Direction, Transcoder};
use srtpgate_codec::Registry;

fn detecting(delay_ms: u32) -> Transcoder {
    let r = Registry::new();
    let (pa, ia) = r.find("PCMA", 8000, 1).unwrap();
    let (pu, iu) = r.find("PCMU", 8000, 1).unwrap();
    Transcoder::new(Direction {
        decoder: pa.instance(ia, None, None).unwrap(),
        in_pt: 8,
        encoder: pu.instance(iu, None, None).unwrap(),
        out_pt: 0,
        out_ptime: None,
        dtmf: None,
        detect: Some(Detect { detector: Detector::new(&plugin(), 8000).unwrap(), out_pt: 101, delay_ms }),
        tones_from: None,
    })
    .unwrap()
}

/// What came out: µ-law audio placed by timestamp (offset from the first
/// input's), and the event packets (ts offset, marker, event, end, duration).
#[derive(Default)]
struct Heard {
    audio: Vec<i16>,
    sent: Vec<bool>,
    events: Vec<(u32, bool, u8, bool, u16)>,
    /// Input packet index → output audio timestamps sent while pushing it.
    lag: Vec<(usize, u32)>,
}

const TS0: u32 = 0xffff_ff00; // wraps during the call

fn run(t: &mut Transcoder, x: &[i16]) -> Heard {
    let mut h = Heard { audio: vec![0; x.len()], sent: vec![false; x.len()], ..Default::default() };
    let mut seq_seen = None::<u16>;
    for (k, chunk) in x.chunks(160).enumerate() {
        let mut p = vec![0x80, 8, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
        p[2..4].copy_from_slice(&(k as u16).to_be_bytes());
        p[4..8].copy_from_slice(&TS0.wrapping_add(160 * k as u32).to_be_bytes());
        p.extend(chunk.iter().map(|&s| alaw_encode(s)));
        t.push(&p).unwrap();
        for o in t.outputs() {
            let seq = u16::from_be_bytes([o[2], o[3]]);
            if let Some(s) = seq_seen {
                assert_eq!(seq, s.wrapping_add(1), "sequence numbers in order, no gap");
            }
            seq_seen = Some(seq);
            let ts = u32::from_be_bytes([o[4], o[5], o[6], o[7]]).wrapping_sub(TS0);
            match o[1] & 0x7f {
                0 => {
                    let at = ts as usize;
                    for (i, &c) in o[12..].iter().enumerate() {
                        if at + i < h.audio.len() {
                            h.audio[at + i] = ulaw_decode(c);
                            h.sent[at + i] = true;
                        }
                    }
                    h.lag.push((k, ts));
                }
                101 => {
                    let e = &o[12..16];
                    h.events.push((ts, o[1] & 0x80 != 0, e[0], e[1] & 0x80 != 0, u16::from_be_bytes([e[2], e[3]])));
                }
                pt => panic!("payload type {pt}"),
            }
        }
    }
    h
}

/// A 440 Hz background (speech stands in for it) with `digits` keyed over
/// silence, 1 s in.
fn signal(digits: &str) -> (Vec<i16>, Vec<(usize, usize, u8)>) {
    let (keys, spans) = keyed(digits, 8000, 70, 80);
    let lead = 8000;
    let mut x: Vec<i16> =
        (0..lead).map(|i| (3000.0 * (i as f64 * std::f64::consts::TAU * 440.0 / 8000.0).sin()) as i16).collect();
    x.extend(keys);
    x.resize(x.len() + 1600, 0);
    (x, spans.into_iter().map(|(a, b, e)| (a + lead, b + lead, e)).collect())
}

/// The largest share of a key's two frequencies in any 10 ms of the
/// audio sent during a tone (none sent: 0).
fn leak(h: &Heard, spans: &[(usize, usize, u8)]) -> f64 {
    let mut worst = 0.0f64;
    for &(a, b, e) in spans {
        let (lo, hi) = frequencies(e).unwrap();
        for w in (a..b).step_by(80) {
            let end = (w + 80).min(b);
            if h.sent[w..end].iter().any(|&s| s) {
                let x = &h.audio[w..end];
                let power: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / x.len() as f64;
                if power > 1e4 {
                    worst = worst.max(power_share(x, 8000, lo as f64) + power_share(x, 8000, hi as f64));
                }
            }
        }
    }
    worst
}

#[test]
fn tones_become_rfc4733_events_and_none_leaks_before_detection() {
    let (x, spans) = signal("159#D0");
    let mut t = detecting(40);
    let h = run(&mut t, &x);
    assert_eq!(t.counts().dtmf_detected, 6);
    // The events: one per key, its first packet marked, the duration
    // growing, then three final packets with the same duration.
    let mut events = h.events.iter().peekable();
    for &(a, b, e) in &spans {
        let first = *events.next().expect("an event per key");
        assert!(first.1 && first.2 == e && !first.3, "first packet of key {e}: {first:?}");
        let start = first.0 as i64;
        // The event starts where the tone did, give or take the detector's
        // spread (15 ms early at most, never late).
        assert!((a as i64 - 120..=a as i64).contains(&start), "key {e}: event at {start}, tone at {a}");
        let mut last_duration = first.4;
        let mut finals = 0;
        while let Some(&&(ts, marker, ev, end, duration)) = events.peek() {
            if ts as i64 != start {
                break;
            }
            events.next();
            assert!(!marker && ev == e);
            if end {
                finals += 1;
                assert!(finals == 1 || duration == last_duration);
            } else {
                assert_eq!(finals, 0, "no update after the end");
                assert!(duration > last_duration);
            }
            last_duration = duration;
        }
        assert_eq!(finals, 3, "key {e}: three final packets");
        // 70 ms of tone: the duration is within 15 ms of it.
        let true_len = (b - a) as i64;
        assert!((last_duration as i64 - true_len).abs() <= 120, "key {e}: {last_duration} vs {true_len}");
    }
    assert!(events.next().is_none());
    // No part of any tone is in the audio sent, its first 40 ms included.
    let worst = leak(&h, &spans);
    eprintln!("with the delay line: worst tone share {worst:.3}; events {:?}", h.events);
    assert!(worst < 0.05, "tone leaked into the audio: share {worst:.2}");
    // The audio around the keys is sent, and the background is intact.
    assert!(h.sent[..7900].iter().all(|&s| s));
    assert!(power_share(&h.audio[800..7200], 8000, 440.0) > 0.9);
    // The delay line: the audio of packet k leaves with packet k + 2.
    for &(k, ts) in &h.lag {
        assert_eq!(ts as usize, (k - 2) * 160, "packet {k}");
    }
}

#[test]
fn without_the_delay_line_the_start_of_each_tone_leaks() {
    // The same call with no delay: the detector decides 25–40 ms into each
    // tone, after that audio has been sent. The check above would fail.
    let (x, spans) = signal("159#D0");
    let mut t = detecting(0);
    let h = run(&mut t, &x);
    assert_eq!(t.counts().dtmf_detected, 6);
    let worst = leak(&h, &spans);
    eprintln!("without: worst tone share {worst:.3}");
    assert!(worst > 0.5, "share {worst:.2}");
}
