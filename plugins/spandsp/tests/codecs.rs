//! The spandsp plugin as the relay loads it: G.722 at both PCM rates and
//! G.726 at every bit rate, round trips that keep a tone, RFC 3551's
//! codeword order, concealment, and a PCMA → G.722 transcoder whose output a
//! 16 kHz G.722 decoder (what a wideband phone runs) plays back as the tone.

use srtpgate_codec::dtmf::power_share as share;
use srtpgate_codec::transcode::{Direction, Transcoder};
use srtpgate_codec::{common_pcm_rate, g711, Instance, Plugin, Registry};
use std::sync::Arc;

fn plugin() -> Arc<Plugin> {
    let lib = srtpgate_codec::built_plugin("libsrtpgate_plugin_spandsp.so").expect("built beside the test");
    Plugin::load(&lib).expect("load")
}

fn tone(n: usize, rate: u32, hz: f64, from: usize) -> Vec<i16> {
    (from..from + n)
        .map(|i| (6000.0 * (i as f64 * 2.0 * std::f64::consts::PI * hz / rate as f64).sin()) as i16)
        .collect()
}

fn instance(p: &Arc<Plugin>, name: &str, rate: Option<u32>) -> Instance {
    let i = p.codecs().iter().position(|c| c.name == name).expect(name);
    p.instance(i, None, rate).expect("state")
}

#[test]
fn lists_its_codecs() {
    let p = plugin();
    assert_eq!(p.name(), "spandsp");
    let names: Vec<(&str, u32, u32)> = p.codecs().iter().map(|c| (c.name.as_str(), c.clock_rate, c.pcm_rate)).collect();
    assert_eq!(
        names,
        [
            ("G722", 8000, 16000),
            ("G726-16", 8000, 8000),
            ("G726-24", 8000, 8000),
            ("G726-32", 8000, 8000),
            ("G726-40", 8000, 8000)
        ]
    );
    assert_eq!(p.codecs()[0].static_pt, Some(9));
    assert_eq!(p.codecs()[0].pcm_rate_list(), [16000, 8000]);
    // Beside G.711 the common rate is 8 kHz, beside itself 16 kHz.
    let pcma = Registry::new().plugins()[0].codecs()[1].clone();
    assert_eq!(common_pcm_rate(&p.codecs()[0], &pcma), Some(8000));
    assert_eq!(common_pcm_rate(&p.codecs()[0], &p.codecs()[0]), Some(16000));
    assert!(p.instance(1, None, Some(16000)).is_err(), "G.726 is narrowband");
}

#[test]
fn every_codec_keeps_a_tone_through_a_round_trip() {
    let p = plugin();
    for (name, rate, bytes_per_10ms) in [
        ("G722", None, 80),
        ("G722", Some(8000), 80),
        ("G726-16", None, 20),
        ("G726-24", None, 30),
        ("G726-32", None, 40),
        ("G726-40", None, 50),
    ] {
        let mut c = instance(&p, name, rate);
        let r = c.pcm_rate();
        let frame = c.frame_samples() * 2; // 20 ms
        let mut decoded = Vec::new();
        let mut wire = [0u8; 4000];
        let mut pcm = [0i16; 4000];
        for k in 0..25 {
            let x = tone(frame, r, 1000.0, k * frame);
            let n = c.encode(&x, &mut wire).expect("encode");
            assert_eq!(n, 2 * bytes_per_10ms, "{name} at {r} Hz: bytes of 20 ms");
            let m = c.decode(&wire[..n], &mut pcm).expect("decode");
            assert_eq!(m, frame, "{name}: samples of 20 ms");
            decoded.extend_from_slice(&pcm[..m]);
        }
        // After the codec settles, the tone is nearly all the signal.
        let s = share(&decoded[decoded.len() / 2..], r, 1000.0);
        assert!(s > 0.9, "{name} at {r} Hz: 1 kHz share {s:.3}");
        // Concealment continues the tone for a lost packet.
        let m = c.conceal(&mut pcm[..frame]).expect("conceal");
        assert_eq!(m, frame);
        assert!(share(&pcm[..frame], r, 1000.0) > 0.5, "{name}: concealment is the tone");
        // A payload too long for the buffer is refused, not overrun.
        assert!(c.decode(&wire[..n_bytes(name)], &mut pcm[..10]).is_err(), "{name}");
    }
}

fn n_bytes(name: &str) -> usize {
    if name == "G722" {
        80
    } else {
        40
    }
}

#[test]
fn g726_codewords_are_packed_from_the_least_significant_bit() {
    // RFC 3551 §4.5.4: the first codeword in the low bits of the first
    // byte. spandsp's MSB-first packing (ITU-T I.366.2, AAL2) of the same
    // audio is the same bytes with their nibbles swapped.
    let p = plugin();
    let mut c = instance(&p, "G726-32", None);
    let x = tone(160, 8000, 700.0, 0);
    let mut wire = [0u8; 80];
    assert_eq!(c.encode(&x, &mut wire).expect("encode"), 80);
    let mut aal2 = [0u8; 80];
    // SAFETY: a state made and freed here; buffers sized for the call.
    unsafe {
        use srtpgate_spandsp_sys as sys;
        let s = sys::g726_init(std::ptr::null_mut(), 32000, sys::G726_ENCODING_LINEAR, sys::G726_PACKING_LEFT);
        assert!(!s.is_null());
        assert_eq!(sys::g726_encode(s, aal2.as_mut_ptr(), x.as_ptr(), 160), 80);
        sys::g726_free(s);
    }
    assert_ne!(wire, aal2);
    let swapped: Vec<u8> = aal2.iter().map(|b| b.rotate_left(4)).collect();
    assert_eq!(wire.to_vec(), swapped);
}

#[test]
fn pcma_to_g722_needs_no_resampler_and_plays_on_a_wideband_phone() {
    let p = plugin();
    let reg = Registry::new();
    let (pa, ia) = reg.find("PCMA", 8000, 1).expect("PCMA");
    let mut t = Transcoder::new(Direction {
        decoder: pa.instance(ia, None, Some(8000)).expect("PCMA"),
        in_pt: 8,
        encoder: instance(&p, "G722", Some(8000)),
        out_pt: 9,
        out_ptime: None,
        dtmf: None,
        detect: None,
        tones_from: None,
    })
    .expect("transcoder");
    // The phone: a G.722 decoder at 16 kHz.
    let mut phone = instance(&p, "G722", None);
    let mut heard = Vec::new();
    let mut pcm = [0i16; 2000];
    for k in 0..50u16 {
        let mut pkt = vec![0x80, 8, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4];
        pkt[2..4].copy_from_slice(&k.to_be_bytes());
        pkt[4..8].copy_from_slice(&(160 * k as u32).to_be_bytes());
        pkt.extend(tone(160, 8000, 1000.0, 160 * k as usize).into_iter().map(g711::alaw_encode));
        t.push(&pkt).expect("push");
        let out: Vec<Vec<u8>> = t.outputs().map(<[u8]>::to_vec).collect();
        assert_eq!(out.len(), 1, "one packet out per packet in, nothing held");
        let o = &out[0];
        assert_eq!(o[1] & 0x7f, 9);
        assert_eq!(u32::from_be_bytes([o[4], o[5], o[6], o[7]]), 160 * k as u32, "G.722's RTP clock is 8000");
        assert_eq!(o.len() - 12, 160, "64 kbit/s: 160 bytes a 20 ms packet");
        let n = phone.decode(&o[12..], &mut pcm).expect("phone decodes");
        assert_eq!(n, 320, "20 ms at 16 kHz");
        heard.extend_from_slice(&pcm[..n]);
    }
    let s = share(&heard[heard.len() / 2..], 16000, 1000.0);
    assert!(s > 0.8, "the phone hears the 1 kHz tone: share {s:.3}");
}
