//! The Opus plugin as the relay loads it: its descriptor, round trips at
//! the narrowband and fullband PCM rates, the fmtp and controls, and in-band
//! FEC rebuilding a lost packet better than concealment does.

use srtpgate_codec::{abi, common_pcm_rate, Instance, Plugin, Registry};
use std::sync::Arc;

fn plugin() -> Arc<Plugin> {
    Plugin::load(&srtpgate_codec::built_plugin("libsrtpgate_plugin_opus.so").expect("built beside the test"))
        .expect("load")
}

/// A voice-like test signal: a 150 Hz buzz with harmonics, its loudness
/// changing, at `rate`.
fn voice(n: usize, rate: u32) -> Vec<i16> {
    (0..n)
        .map(|i| {
            let t = i as f64 / rate as f64;
            let env = 0.6 + 0.4 * (2.0 * std::f64::consts::PI * 3.0 * t).sin();
            let x: f64 = (1..8).map(|h| (2.0 * std::f64::consts::PI * 150.0 * h as f64 * t).sin() / h as f64).sum();
            (5000.0 * env * x) as i16
        })
        .collect()
}

fn state(p: &Arc<Plugin>, fmtp: Option<&str>, rate: u32) -> Instance {
    p.instance(0, fmtp, Some(rate)).expect("state")
}

fn err(a: &[i16], b: &[i16]) -> f64 {
    a.iter().zip(b).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum::<f64>() / a.len() as f64
}

#[test]
fn descriptor_and_pcm_rates() {
    let p = plugin();
    let c = &p.codecs()[0];
    assert_eq!((c.name.as_str(), c.clock_rate, c.channels, c.pcm_channels), ("opus", 48000, 2, 1));
    assert_eq!(c.pcm_rate_list(), [48000, 24000, 16000, 12000, 8000]);
    assert_eq!(c.fmtp.as_deref(), Some("minptime=10;useinbandfec=1"));
    let reg = Registry::new();
    let pcma = &reg.plugins()[0].codecs()[1];
    assert_eq!(common_pcm_rate(c, pcma), Some(8000), "beside G.711 Opus runs at 8 kHz");
    assert!(p.instance(0, None, Some(44100)).is_err());
}

#[test]
fn round_trips_at_8_and_48_khz() {
    let p = plugin();
    for rate in [8000u32, 48000] {
        let mut c = state(&p, None, rate);
        assert_eq!(c.frame_samples(), rate as usize / 50, "20 ms frames");
        let x = voice(rate as usize, rate);
        let frame = c.frame_samples();
        let mut wire = [0u8; 1500];
        let mut out = vec![0i16; 6000];
        let mut got = Vec::new();
        for f in x.chunks_exact(frame) {
            let n = c.encode(f, &mut wire).expect("encode");
            assert!(n > 0 && n < 400, "{n} bytes");
            let m = c.decode(&wire[..n], &mut out).expect("decode");
            assert_eq!(m, frame);
            got.extend_from_slice(&out[..m]);
        }
        // Energy survives (the codec's delay makes a sample-wise error meaningless).
        let e = |v: &[i16]| v.iter().map(|&s| (s as f64).powi(2)).sum::<f64>() / v.len() as f64;
        let (a, b) = (e(&x[rate as usize / 2..]), e(&got[rate as usize / 2..]));
        assert!((b / a - 1.0).abs() < 0.3, "{rate} Hz: energy {a:.0} → {b:.0}");
        // 40 ms frames are Opus frames too; 30 ms is not one.
        assert!(c.encode(&x[..2 * frame], &mut wire).is_ok());
        assert!(c.encode(&x[..frame * 3 / 2], &mut wire).is_err());
        // A malformed packet (code 3 with no frames) is an error, not a crash.
        assert!(c.decode(&[0x03, 0x00], &mut out).is_err());
        assert!(c.decode(&[], &mut out).is_err());
    }
}

#[test]
fn controls_are_taken_and_unknown_ones_refused() {
    let p = plugin();
    let mut c = p
        .instance_for(0, Some("useinbandfec=1; maxaveragebitrate=20000"), Some(8000), abi::USE_ENCODE)
        .expect("encoder");
    assert!(c.control(abi::CTL_PACKET_LOSS, 5).expect("loss"));
    assert!(c.control(abi::CTL_COMPLEXITY, 3).expect("complexity"));
    assert!(c.control(abi::CTL_BITRATE, 16000).expect("bitrate"));
    assert!(!c.control(99, 1).expect("unknown control"));
    // An encode-only state does not decode.
    assert!(c.decode(&[0x08, 0, 0], &mut [0i16; 960]).is_err());
}

#[test]
fn in_band_fec_rebuilds_a_lost_packet_better_than_concealment() {
    let p = plugin();
    let rate = 16000;
    let mut enc = p.instance_for(0, Some("useinbandfec=1"), Some(rate), abi::USE_ENCODE).expect("encoder");
    enc.control(abi::CTL_PACKET_LOSS, 20).expect("loss");
    enc.control(abi::CTL_BITRATE, 32000).expect("bitrate");
    let frame = rate as usize / 50;
    let x = voice(frame * 30, rate);
    let mut wire = [0u8; 1500];
    let packets: Vec<Vec<u8>> = x
        .chunks_exact(frame)
        .map(|f| {
            let n = enc.encode(f, &mut wire).expect("encode");
            wire[..n].to_vec()
        })
        .collect();
    let lost = 20;
    // Three receivers: all packets; packet 20 lost and concealed; packet 20
    // lost and rebuilt from packet 21's FEC.
    let mut all = p.instance_for(0, None, Some(rate), abi::USE_DECODE).expect("decoder");
    let mut plc = p.instance_for(0, None, Some(rate), abi::USE_DECODE).expect("decoder");
    let mut fec = p.instance_for(0, None, Some(rate), abi::USE_DECODE).expect("decoder");
    assert!(fec.can_recover());
    let mut out = vec![0i16; frame];
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for (k, pk) in packets.iter().enumerate() {
        all.decode(pk, &mut out).expect("decode");
        a.extend_from_slice(&out);
        if k == lost {
            assert_eq!(plc.conceal(&mut out).expect("conceal"), frame);
            b.extend_from_slice(&out);
            assert_eq!(fec.recover(&packets[k + 1], &mut out).expect("recover"), frame);
            c.extend_from_slice(&out);
            continue;
        }
        plc.decode(pk, &mut out).expect("decode");
        b.extend_from_slice(&out);
        fec.decode(pk, &mut out).expect("decode");
        c.extend_from_slice(&out);
    }
    let span = lost * frame..(lost + 1) * frame;
    let (e_plc, e_fec) = (err(&a[span.clone()], &b[span.clone()]), err(&a[span.clone()], &c[span]));
    assert!(e_fec < e_plc / 2.0, "FEC error {e_fec:.0} vs concealment {e_plc:.0}");
}

/// Opus packets of 20 ms at 16 kHz, with in-band FEC or without.
fn packets_16k(x: &[i16], fec: bool) -> Vec<Vec<u8>> {
    let p = plugin();
    let fmtp = if fec { "useinbandfec=1" } else { "useinbandfec=0" };
    let mut enc = p.instance_for(0, Some(fmtp), Some(16000), abi::USE_ENCODE).expect("encoder");
    enc.control(abi::CTL_PACKET_LOSS, 20).expect("loss");
    enc.control(abi::CTL_BITRATE, 32000).expect("bitrate");
    let mut wire = [0u8; 1500];
    x.chunks_exact(320)
        .map(|f| {
            let n = enc.encode(f, &mut wire).expect("encode");
            wire[..n].to_vec()
        })
        .collect()
}

#[test]
fn a_16_khz_decoder_uses_the_speech_models_by_default_and_libopus_classic_on_request() {
    // By default a 16 kHz decoder cleans up SILK frames (LACE) and conceals
    // with the speech model: what it plays differs from the classic
    // decoder's, for received and for lost frames, and the concealment
    // stays at the voice's level. Unknown kinds are refused, and an
    // encoder has no concealment.
    let p = plugin();
    let x = voice(320 * 14, 16000);
    let packets = packets_16k(&x, false);
    let dec = || p.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
    let (mut models, mut classic) = (dec(), dec());
    assert!(classic.control(abi::CTL_PLC, abi::PLC_CLASSIC).expect("classic"));
    let (mut a, mut b) = ([0i16; 960], [0i16; 960]);
    let mut differ = 0;
    for pk in &packets[..10] {
        assert_eq!(models.decode(pk, &mut a).expect("decode"), 320);
        assert_eq!(classic.decode(pk, &mut b).expect("decode"), 320);
        differ += (a[..320] != b[..320]) as usize;
    }
    assert!(differ >= 8, "LACE changed {differ} of 10 frames");
    let (mut la, mut lb) = ([0i16; 640], [0i16; 640]);
    assert_eq!(models.conceal(&mut la).expect("conceal"), 640);
    assert_eq!(classic.conceal(&mut lb).expect("conceal"), 640);
    assert_ne!(la, lb, "the deep concealment is not the classic one");
    let rms = |v: &[i16]| (v.iter().map(|&s| (s as f64).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
    let (r, h) = (rms(&la[..320]), rms(&x[320 * 9..320 * 10]));
    assert!(r > 0.3 * h && r < 2.0 * h, "concealment rms {r:.0} against the voice's {h:.0}");
    // Both go on decoding, and the models can be switched back on.
    assert_eq!(models.decode(&packets[12], &mut a).expect("decode"), 320);
    assert!(classic.control(abi::CTL_PLC, abi::PLC_NEURAL).expect("neural"));
    assert_eq!(classic.decode(&packets[12], &mut b).expect("decode"), 320);
    assert!(models.control(abi::CTL_PLC, 7).is_err(), "an unknown kind is an error");
    let mut enc = p.instance_for(0, None, Some(16000), abi::USE_ENCODE).expect("encoder");
    assert!(!enc.control(abi::CTL_PLC, abi::PLC_NEURAL).expect("no decoder"));
}

#[test]
fn at_16_khz_fec_rebuilds_the_last_lost_frame_only_where_the_packet_carries_it() {
    // Two decoders see the same packets and lose the same one; one
    // conceals it, the other is given the next packet to recover from.
    // Where that packet has no FEC (libopus leaves it out of some), the
    // recovery is the same concealment, sample for sample; where
    // it has FEC, the lost 20 ms are rebuilt, nearer what a decoder that
    // lost nothing plays.
    let p = plugin();
    let x = voice(320 * 20, 16000);
    for fec in [false, true] {
        let packets = packets_16k(&x, fec);
        let dec = || p.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
        let mut all = dec();
        let mut out = [0i16; 960];
        let mut clean = Vec::new();
        for pk in &packets {
            let n = all.decode(pk, &mut out).expect("decode");
            clean.extend_from_slice(&out[..n]);
        }
        let mut rebuilt = 0;
        for lost in 4..19 {
            let (mut a, mut b) = (dec(), dec());
            for pk in &packets[..lost] {
                a.decode(pk, &mut out).expect("decode");
                b.decode(pk, &mut out).expect("decode");
            }
            let (mut ca, mut cb) = ([0i16; 320], [0i16; 320]);
            assert_eq!(a.conceal(&mut ca).expect("conceal"), 320);
            assert_eq!(b.recover(&packets[lost + 1], &mut cb).expect("recover"), 320);
            if ca != cb {
                let truth = &clean[320 * lost..320 * (lost + 1)];
                let (ea, eb) = (err(truth, &ca), err(truth, &cb));
                assert!(eb < ea / 2.0, "loss at {lost}: FEC error {eb:.0} against concealment {ea:.0}");
                rebuilt += 1;
            }
            assert_eq!(b.decode(&packets[lost + 1], &mut out).expect("decode"), 320);
        }
        if fec {
            assert!(rebuilt >= 4, "{rebuilt} of 15 losses rebuilt from FEC");
        } else {
            assert_eq!(rebuilt, 0, "no FEC sent, none used");
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, ..Default::default() })]

    /// A 16 kHz decoder given any bytes as packets, losses of any length
    /// (recovered from any bytes or concealed) and concealment switches,
    /// in any order: errors for malformed packets, every concealment's
    /// samples within the asked-for length (whole 2.5 ms; the host pads the
    /// rest), never a crash.
    #[test]
    fn a_16_khz_decoder_takes_any_sequence_of_packets_losses_and_switches(
        events in proptest::collection::vec(
            (0u8..10, proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300), 0usize..1000),
            1..60,
        )
    ) {
        let p = plugin();
        let x = voice(320 * 8, 16000);
        let good = packets_16k(&x, true);
        let mut dec = p.instance_for(0, None, Some(16000), abi::USE_DECODE).expect("decoder");
        let mut pcm = [0i16; 5760];
        for (k, (what, bytes, n)) in events.into_iter().enumerate() {
            let payload = if what % 2 == 0 { &good[k % good.len()][..] } else { &bytes[..] };
            match what {
                0..=3 => {
                    let _ = dec.decode(payload, &mut pcm);
                }
                4..=5 => {
                    let m = dec.conceal(&mut pcm[..n]).expect("conceal");
                    proptest::prop_assert!(m <= n && n - m < 40, "{m} of {n}");
                }
                6..=7 => {
                    if let Ok(m) = dec.recover(payload, &mut pcm[..n]) {
                        proptest::prop_assert!(m <= n && n - m < 40, "{m} of {n}");
                    }
                }
                _ => {
                    let kind = if n % 2 == 0 { abi::PLC_NEURAL } else { abi::PLC_CLASSIC };
                    proptest::prop_assert_eq!(dec.control(abi::CTL_PLC, kind).ok(), Some(true));
                }
            }
        }
    }
}

/// Mean bit rate of two seconds of voice encoded at `rate` (VBR: this
/// simple signal takes less than the target).
fn bit_rate(c: &mut Instance, rate: u32) -> f64 {
    let frame = rate as usize / 50;
    let x = voice(frame * 100, rate);
    let mut wire = [0u8; 1500];
    let bytes: usize = x.chunks_exact(frame).map(|f| c.encode(f, &mut wire).expect("encode")).sum();
    bytes as f64 * 8.0 / 2.0
}

#[test]
fn encoders_send_32_kbit_unless_the_receiver_or_the_relay_asks_for_less() {
    let p = plugin();
    let enc = |fmtp, rate, bitrate: Option<i32>| {
        let mut c = p.instance_for(0, fmtp, Some(rate), abi::USE_ENCODE).expect("encoder");
        if let Some(b) = bitrate {
            c.control(abi::CTL_BITRATE, b).expect("bitrate");
        }
        bit_rate(&mut c, rate)
    };
    for rate in [8000, 16000] {
        let default = enc(None, rate, None);
        let set32 = enc(None, rate, Some(32000));
        // libopus alone would aim at 11 (8 kHz) or 19 kbit/s (16 kHz).
        let auto = enc(None, rate, Some(60 * rate as i32 / (rate as i32 / 50) + rate as i32));
        let capped = enc(Some("maxaveragebitrate=16000"), rate, None);
        // A higher maximum does not raise it, and a rate the relay sets
        // stays under the receiver's maximum.
        let high = enc(Some("maxaveragebitrate=96000"), rate, None);
        let over = enc(Some("maxaveragebitrate=16000"), rate, Some(48000));
        eprintln!("{rate} Hz: default {default:.0}, 32000 {set32:.0}, libopus's {auto:.0}, max 16000 {capped:.0}, max 96000 {high:.0} bit/s");
        assert!((default - set32).abs() < 0.02 * set32, "{rate} Hz: default {default:.0}, 32 kbit/s {set32:.0}");
        assert!(default > 1.2 * auto, "{rate} Hz: default {default:.0}, libopus's {auto:.0}");
        assert!(capped < 0.8 * default, "{rate} Hz: capped at 16000: {capped:.0} bit/s");
        assert!((high - default).abs() < 0.02 * default, "{rate} Hz: {high:.0} against {default:.0} bit/s");
        assert!((over - capped).abs() < 0.02 * capped, "{rate} Hz: 48000 under a 16000 maximum: {over:.0} bit/s");
    }
}
