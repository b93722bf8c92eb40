//! The G.729 plugin as the relay loads it: voice frames, Annex B as the
//! receiver's fmtp asks (the negotiation regression: `annexb=no` means no
//! SID frame and no silence left untransmitted), SID decoding, malformed
//! payloads, and concealment.

use srtpgate_codec::{abi, Instance, Plugin};
use std::sync::Arc;

fn plugin() -> Arc<Plugin> {
    Plugin::load(&srtpgate_codec::built_plugin("libsrtpgate_plugin_g729.so").expect("built beside the test"))
        .expect("load")
}

fn voice(n: usize, from: usize) -> Vec<i16> {
    (from..from + n)
        .map(|i| {
            let t = i as f64 / 8000.0;
            let x: f64 = (1..6).map(|h| (2.0 * std::f64::consts::PI * 140.0 * h as f64 * t).sin() / h as f64).sum();
            (6000.0 * x) as i16
        })
        .collect()
}

fn encoder(p: &Arc<Plugin>, fmtp: Option<&str>) -> Instance {
    p.instance_for(0, fmtp, None, abi::USE_ENCODE).expect("encoder")
}

#[test]
fn voice_round_trip() {
    let p = plugin();
    let c = &p.codecs()[0];
    assert_eq!((c.name.as_str(), c.clock_rate, c.static_pt, c.frame_samples), ("G729", 8000, Some(18), 80));
    let mut enc = encoder(&p, None);
    let mut dec = p.instance_for(0, None, None, abi::USE_DECODE).expect("decoder");
    let mut wire = [0u8; 200];
    let mut out = [0i16; 1600];
    let mut got = Vec::new();
    for k in 0..50 {
        let x = voice(160, 160 * k);
        let n = enc.encode(&x, &mut wire).expect("encode");
        assert_eq!(n, 20, "two voice frames a 20 ms packet");
        let m = dec.decode(&wire[..n], &mut out).expect("decode");
        assert_eq!(m, 160);
        got.extend_from_slice(&out[..m]);
    }
    let e = |v: &[i16]| v.iter().map(|&s| (s as f64).powi(2)).sum::<f64>() / v.len() as f64;
    let (a, b) = (e(&voice(4000, 4000)), e(&got[4000..]));
    assert!(b / a > 0.3 && b / a < 2.0, "energy {a:.0} → {b:.0}");
    // Concealment after the last packet continues with sound, then fades.
    assert_eq!(dec.conceal(&mut out[..165]).expect("conceal"), 160, "whole frames only");
    assert!(e(&out[..80]) > a * 0.01, "concealment is not silence");
    // Malformed: not whole frames plus at most one SID.
    assert!(dec.decode(&wire[..11], &mut out).is_err());
    assert!(dec.decode(&[], &mut out).is_err());
    assert!(dec.decode(&wire[..20], &mut out[..100]).is_err(), "too small a buffer");
}

#[test]
fn annex_b_follows_the_receivers_fmtp() {
    let p = plugin();
    let silence = [0i16; 160];
    let mut wire = [0u8; 200];
    // annexb=no: every frame is a voice frame, silence included.
    let mut no = encoder(&p, Some("annexb=no"));
    for _ in 0..30 {
        assert_eq!(no.encode(&silence, &mut wire).expect("encode"), 20, "annexb=no sends no SID and skips nothing");
    }
    // Absent or annexb=yes: after a few silent frames, SID frames (2 bytes)
    // or nothing.
    for fmtp in [None, Some("annexb=yes")] {
        let mut yes = encoder(&p, fmtp);
        let sizes: Vec<usize> = (0..30).map(|_| yes.encode(&silence, &mut wire).expect("encode")).collect();
        assert!(sizes.iter().skip(5).all(|&n| n == 0 || n == 2 || n == 12), "{fmtp:?}: {sizes:?}");
        assert!(sizes.contains(&0), "{fmtp:?}: silence is left untransmitted: {sizes:?}");
        assert!(sizes.iter().any(|&n| n % 10 == 2), "{fmtp:?}: a SID frame is sent: {sizes:?}");
    }
    // A SID frame decodes to 10 ms of quiet comfort noise.
    let mut dec = p.instance_for(0, None, None, abi::USE_DECODE).expect("decoder");
    let mut out = [0i16; 160];
    let mut yes = encoder(&p, None);
    let sid = (0..30)
        .find_map(|_| {
            let n = yes.encode(&silence, &mut wire).expect("encode");
            (n % 10 == 2).then(|| wire[n - 2..n].to_vec())
        })
        .expect("a SID frame");
    assert_eq!(dec.decode(&sid, &mut out).expect("SID"), 80);
    assert!(out[..80].iter().all(|s| s.unsigned_abs() < 2000), "comfort noise is quiet");
}
