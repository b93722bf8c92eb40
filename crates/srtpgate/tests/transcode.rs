//! Transcoded calls through `srtpgate serve`: two SRTP endpoints with no
//! codec in common (the caller only PCMU, the callee only PCMA) hold a call,
//! and what each decodes is checked as audio (the tone that was sent, by
//! frequency and level), not just as packets that arrived. Also the
//! regressions rtpengine users report: timestamps across gaps, a mid-call
//! packet-time change, transcoding kept across a re-INVITE, RFC 4733 events
//! carried across.

use srtp::Suite;
use srtpgate_codec::dtmf::power_share as share_at;
use srtpgate_codec::g711::{alaw_decode, alaw_encode, ulaw_decode, ulaw_encode};
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::Sdp;
use srtpgate_testkit::daemon::*;

/// An endpoint's SDP offering only `codecs` (`"0"`, `"8 101"`, …), and
/// telephone-event on `te_pt` (0: none).
fn sdp_with(e: &Endpoint, keys: &[CryptoAttr], codecs: &str, te_pt: u8) -> String {
    let text = e.sdp_spec("RTP/SAVP", keys).text();
    let mut out = Vec::new();
    for l in text.split("\r\n").filter(|l| !l.is_empty()) {
        if l.starts_with("m=audio") {
            let te = if te_pt == 0 { String::new() } else { format!(" {te_pt}") };
            out.push(format!("{} {codecs}{te}", l.split(" 0 8 101").next().unwrap_or(l)));
        } else if l.starts_with("a=rtpmap:") {
            continue;
        } else {
            out.push(l.to_string());
        }
    }
    if te_pt != 0 {
        out.push(format!("a=rtpmap:{te_pt} telephone-event/8000"));
    }
    out.join("\r\n") + "\r\n"
}

fn formats(sdp: &Sdp) -> Vec<(u8, String)> {
    sdp.media()[0].payload_formats().into_iter().map(|f| (f.pt, f.name)).collect()
}

/// `ms` of a `hz` tone from sample `at`, amplitude 8 000.
fn tone(hz: f64, at: usize, ms: usize) -> Vec<i16> {
    (at..at + ms * 8).map(|i| (8000.0 * (i as f64 * 2.0 * std::f64::consts::PI * hz / 8000.0).sin()) as i16).collect()
}

/// A plain RTP packet: `pt`, `seq`, `ts`, `payload`.
fn packet(ssrc: u32, pt: u8, seq: u16, ts: u32, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x80, pt, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    p[2..4].copy_from_slice(&seq.to_be_bytes());
    p[4..8].copy_from_slice(&ts.to_be_bytes());
    p[8..12].copy_from_slice(&ssrc.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

struct Head {
    pt: u8,
    seq: u16,
    ts: u32,
}

fn head(p: &[u8]) -> Head {
    Head { pt: p[1] & 0x7f, seq: u16::from_be_bytes([p[2], p[3]]), ts: u32::from_be_bytes([p[4], p[5], p[6], p[7]]) }
}

/// Fraction of the signal's power at `hz` (Goertzel, 8 kHz) and its RMS.
fn tone_share(pcm: &[i16], hz: f64) -> (f64, f64) {
    let energy: f64 = pcm.iter().map(|&x| (x as f64).powi(2)).sum();
    (share_at(pcm, 8000, hz), (energy / pcm.len() as f64).sqrt())
}

/// Keys both endpoints (each sends with its own key and receives with the
/// relay's key of its side) and points them at the relay's ports; returns
/// the relay's key towards the caller.
fn connect(
    a: &mut Endpoint,
    a_key: &CryptoAttr,
    ans: &Sdp,
    b: &mut Endpoint,
    b_key: &CryptoAttr,
    o: &Sdp,
    relay_b: &CryptoAttr,
) -> CryptoAttr {
    let relay_a = cryptos(ans).remove(0);
    a.send_key(Some(a_key));
    a.recv_key(Some(&relay_a));
    a.relay(ans);
    b.send_key(Some(b_key));
    b.recv_key(Some(relay_b));
    b.relay(o);
    relay_a
}

/// A PCMU-only caller and a PCMA-only callee, both SRTP, bridged with
/// `codec-transcode-PCMA` and `codec-mask-PCMU`.
struct Bridged {
    d: Daemon,
    a: Endpoint,
    b: Endpoint,
    id: String,
    a_keys: (CryptoAttr, CryptoAttr),
    b_keys: (CryptoAttr, CryptoAttr),
}

fn bridged(name: &str, slot: u16) -> Bridged {
    bridged_on(Daemon::start(name, slot, &[]), name)
}

fn bridged_on(d: Daemon, name: &str) -> Bridged {
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let id = format!("{name}-call");
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let flags = Value::from(vec!["codec-transcode-PCMA", "codec-mask-PCMU"]);
    let r = d.request(&offer(&id, "alice", &sdp_with(&a, std::slice::from_ref(&a_key), "0", 101)).with("flags", flags));
    let o = reply_sdp(&r);
    assert_eq!(formats(&o), [(101, "telephone-event".into()), (8, "PCMA".into())], "offer to the callee:\n{o}");
    let relay_b = cryptos(&o).remove(0);
    let b_key = key(relay_b.tag, relay_b.suite);
    // The callee takes PCMA, with its events on another payload type.
    let r = d.request(&answer(&id, "alice", "bob", &sdp_with(&b, std::slice::from_ref(&b_key), "8", 96)));
    let ans = reply_sdp(&r);
    assert_eq!(formats(&ans), [(0, "PCMU".into()), (101, "telephone-event".into())], "answer to the caller:\n{ans}");
    let relay_a = connect(&mut a, &a_key, &ans, &mut b, &b_key, &o, &relay_b);
    Bridged { d, a, b, id, a_keys: (a_key, relay_a), b_keys: (b_key, relay_b) }
}

/// Sends `n` packets of `ms` of a `hz` tone from `from` in `law` (0 µ-law, 8
/// A-law), starting at sample `at`, skipping the indices in `lose`.
#[allow(clippy::too_many_arguments)]
fn talk(from: &mut Endpoint, law: u8, hz: f64, seq0: u16, at: usize, n: usize, ms: usize, lose: &[usize]) {
    for k in 0..n {
        if lose.contains(&k) {
            continue;
        }
        let s = at + k * ms * 8;
        let pcm = tone(hz, s, ms);
        let payload: Vec<u8> = pcm.iter().map(|&x| if law == 0 { ulaw_encode(x) } else { alaw_encode(x) }).collect();
        from.send_plain(&packet(from.ssrc, law, seq0.wrapping_add(k as u16), 5000 + s as u32, &payload));
    }
}

/// Receives `n` packets and decodes them with `law`: (headers, PCM).
fn listen(to: &mut Endpoint, law: u8, n: usize, what: &str) -> (Vec<Head>, Vec<i16>) {
    let mut heads = Vec::new();
    let mut pcm = Vec::new();
    for i in 0..n {
        let p = to.recv_rtp(&format!("{what} {i}"));
        let h = head(&p);
        assert_eq!(h.pt, law, "{what} {i}: payload type");
        pcm.extend(p[12..].iter().map(|&c| if law == 0 { ulaw_decode(c) } else { alaw_decode(c) }));
        heads.push(h);
    }
    (heads, pcm)
}

/// `srtpgate_transcode_total{what="<what>"}` of a `/metrics` page.
fn transcode_metric(page: &str, what: &str) -> Option<f64> {
    let key = format!("srtpgate_transcode_total{{what=\"{what}\"}} ");
    page.lines().find_map(|l| l.strip_prefix(&key)).and_then(|v| v.trim().parse().ok())
}

fn check_tone(pcm: &[i16], hz: f64, what: &str) {
    let (share, rms) = tone_share(pcm, hz);
    assert!(share > 0.9, "{what}: only {:.0} % of the power at {hz} Hz", share * 100.0);
    assert!((4800.0..6500.0).contains(&rms), "{what}: RMS {rms:.0}, sent 5657");
}

#[test]
fn pcmu_caller_and_pcma_callee_hear_each_other() {
    let mut c = bridged("transcode-g711", 0);
    talk(&mut c.a, 0, 1000.0, 100, 0, 25, 20, &[]);
    let (h, pcm) = listen(&mut c.b, 8, 25, "caller to callee");
    check_tone(&pcm, 1000.0, "caller to callee");
    for (k, x) in h.iter().enumerate() {
        assert_eq!((x.seq, x.ts), (100 + k as u16, 5000 + 160 * k as u32), "packet {k}");
    }
    talk(&mut c.b, 8, 440.0, 7, 0, 25, 20, &[]);
    let (_, pcm) = listen(&mut c.a, 0, 25, "callee to caller");
    check_tone(&pcm, 440.0, "callee to caller");
    let m = c.d.metrics();
    assert_eq!(transcode_metric(&m, "encoded_packets"), Some(50.0), "{m}");
    // `query` names each side's codec.
    let q = c.d.query(&c.id);
    let media = |tag: &str| q.get("tags").and_then(|t| t.get(tag)).and_then(|t| t.get("medias")).cloned();
    let codec = |tag: &str| {
        media(tag)
            .and_then(|m| m.as_list().and_then(|l| l.first().cloned()))
            .and_then(|m| m.get("codec").and_then(Value::as_str).map(str::to_string))
    };
    assert_eq!(codec("alice").as_deref(), Some("PCMU/8000"), "{}", show(&q));
    assert_eq!(codec("bob").as_deref(), Some("PCMA/8000"), "{}", show(&q));
    assert_eq!(transcode_metric(&m, "codec_failures"), Some(0.0));
    c.d.delete(&c.id);
}

/// `n` packets of a 1 kHz tone from the caller (sequence numbers from
/// `seqs.0`) and of 440 Hz from the callee (from `seqs.1`), each checked as
/// heard by the other.
fn hear_each_other(c: &mut Bridged, seqs: (u16, u16), n: usize, what: &str) {
    talk(&mut c.a, 0, 1000.0, seqs.0, 0, n, 20, &[]);
    let (_, pcm) = listen(&mut c.b, 8, n, &format!("{what}, caller to callee"));
    check_tone(&pcm, 1000.0, &format!("{what}, caller to callee"));
    talk(&mut c.b, 8, 440.0, seqs.1, 0, n, 20, &[]);
    let (_, pcm) = listen(&mut c.a, 0, n, &format!("{what}, callee to caller"));
    check_tone(&pcm, 440.0, &format!("{what}, callee to caller"));
}

/// `worker_legs{worker="<w>"}` of a `/metrics` page.
fn worker_legs(page: &str, w: usize) -> Option<f64> {
    let key = format!("srtpgate_worker_legs{{worker=\"{w}\"}} ");
    page.lines().find_map(|l| l.strip_prefix(&key)).and_then(|v| v.trim().parse().ok())
}

/// Polls until worker `w` holds `want` legs.
fn wait_legs(d: &Daemon, w: usize, want: f64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let m = d.metrics();
        if worker_legs(&m, w) == Some(want) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "worker {w}: want {want} legs\n{m}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// With a transcoding worker, a call starts on a pass-through worker and
/// moves, with its sockets, keys and latched peers, when its answer turns
/// transcoding on; a pass-through call stays; media flows both ways after
/// the move, and later commands (delete) reach the new worker.
#[test]
fn a_transcoded_call_moves_to_a_transcoding_worker() {
    let name = "transcode-worker";
    let d = Daemon::start(name, 11, &["--workers", "2", "--transcode-workers", "1"]);
    // A pass-through call first: it stays on worker 0.
    let p = Endpoint::new(LO);
    let k = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let sdp = sdp_with(&p, std::slice::from_ref(&k), "8", 0);
    reply_sdp(&d.request(&offer("pass", "x", &sdp)));
    reply_sdp(&d.request(&answer("pass", "x", "y", &sdp)));
    wait_legs(&d, 0, 2.0);
    let mut c = bridged_on(d, name);
    wait_legs(&c.d, 1, 2.0);
    wait_legs(&c.d, 0, 2.0);
    assert_eq!(c.d.metric("calls_moved_total"), Some(1.0));
    hear_each_other(&mut c, (100, 7), 25, "after the move");
    // A re-INVITE keeps the call where it is.
    let r = c.d.request(
        &offer(&c.id, "alice", &sdp_with(&c.a, std::slice::from_ref(&c.a_keys.0), "0", 101))
            .with("flags", Value::from(vec!["codec-transcode-PCMA", "codec-mask-PCMU"])),
    );
    let _ = reply_sdp(&r);
    let r = c.d.request(&answer(&c.id, "alice", "bob", &sdp_with(&c.b, std::slice::from_ref(&c.b_keys.0), "8", 96)));
    let _ = reply_sdp(&r);
    assert_eq!(c.d.metric("calls_moved_total"), Some(1.0));
    c.d.delete(&c.id);
    wait_legs(&c.d, 1, 0.0);
    wait_legs(&c.d, 0, 2.0);
}

/// rtpengine closes RTP timestamp gaps and holds packets after one: here a
/// lost packet's time stays in the timestamps, its audio is concealed and
/// sent with the next packet, and nothing waits for it.
#[test]
fn loss_keeps_timestamps_true_and_is_concealed() {
    let mut c = bridged("transcode-loss", 1);
    talk(&mut c.a, 0, 1000.0, 0, 0, 10, 20, &[4]);
    let (h, pcm) = listen(&mut c.b, 8, 10, "with packet 4 lost");
    for (k, x) in h.iter().enumerate() {
        assert_eq!((x.seq, x.ts), (k as u16, 5000 + 160 * k as u32), "packet {k}");
    }
    // The concealed 20 ms continue the tone, fading (over 60 ms).
    let (share, rms) = tone_share(&pcm[4 * 160..5 * 160], 1000.0);
    assert!(share > 0.9 && rms > 4000.0, "concealment: {:.0} % at 1 kHz, RMS {rms:.0}", share * 100.0);
    let m = c.d.metrics();
    assert_eq!(transcode_metric(&m, "concealed_samples"), Some(160.0), "{m}");
    // A second of silence suppression is not concealed: time jumps as sent.
    talk(&mut c.a, 0, 1000.0, 10, 10 * 160 + 8000, 1, 20, &[]);
    let (h, _) = listen(&mut c.b, 8, 1, "after a second of silence");
    assert_eq!(h[0].ts, 5000 + 10 * 160 + 8000);
    c.d.delete(&c.id);
}

/// rtpengine users report broken audio when a phone changes its packet
/// time mid-call: the callee keeps getting 20 ms packets with true
/// timestamps when the caller switches to 30 ms.
#[test]
fn a_mid_call_ptime_change_is_repacketized() {
    let mut c = bridged("transcode-ptime", 2);
    talk(&mut c.a, 0, 1000.0, 0, 0, 6, 20, &[]);
    talk(&mut c.a, 0, 1000.0, 6, 6 * 160, 8, 30, &[]);
    // 120 ms + 240 ms = 18 packets of 20 ms.
    let (h, pcm) = listen(&mut c.b, 8, 18, "after the switch to 30 ms");
    for (k, x) in h.iter().enumerate() {
        assert_eq!(x.ts, 5000 + 160 * k as u32, "packet {k}");
        assert_eq!(x.seq, h[0].seq.wrapping_add(k as u16), "packet {k}");
    }
    check_tone(&pcm, 1000.0, "repacketized");
    assert_quiet(&c.b.rtp, "no more than the audio sent");
    c.d.delete(&c.id);
}

/// rtpengine users report transcoding lost after a re-INVITE: here the
/// callee re-offers its PCMA without any codec flag, the caller (PCMU
/// only) is still offered PCMU, answers it, and the call stays transcoded.
#[test]
fn a_reinvite_keeps_transcoding() {
    let mut c = bridged("transcode-reinvite", 3);
    let b_sdp = sdp_with(&c.b, std::slice::from_ref(&c.b_keys.0), "8", 96);
    let r = c.d.request(&offer(&c.id, "bob", &b_sdp).with("to-tag", "alice"));
    let o = reply_sdp(&r);
    assert!(formats(&o).contains(&(0, "PCMU".into())), "re-offer to the caller:\n{o}");
    let relay_a = cryptos(&o).into_iter().find(|k| k.tag == c.a_keys.0.tag).unwrap_or_else(|| cryptos(&o).remove(0));
    let a_key = key(relay_a.tag, relay_a.suite);
    let a_sdp = sdp_with(&c.a, std::slice::from_ref(&a_key), "0", 101);
    let r = c.d.request(&answer(&c.id, "bob", "alice", &a_sdp));
    let ans = reply_sdp(&r);
    assert_eq!(formats(&ans)[0], (8, "PCMA".into()), "re-answer to the callee:\n{ans}");
    // Keys as the re-INVITE set them (the relay may keep its own).
    let relay_b = cryptos(&ans).remove(0);
    c.a.send_key(Some(&a_key));
    c.a.recv_key(Some(&relay_a));
    c.b.recv_key(Some(&relay_b));
    hear_each_other(&mut c, (300, 900), 10, "after the re-INVITE");
    c.d.delete(&c.id);
}

/// RFC 4733 events cross with the payload type each side negotiated.
#[test]
fn dtmf_events_cross_with_each_sides_payload_type() {
    let mut c = bridged("transcode-dtmf", 4);
    talk(&mut c.a, 0, 1000.0, 0, 0, 2, 20, &[]);
    listen(&mut c.b, 8, 2, "audio before the event");
    // Digit 5, end bit, volume 10, 800 samples.
    let ev = [5u8, 0x8a, 0x03, 0x20];
    c.a.send_plain(&packet(c.a.ssrc, 0x80 | 101, 2, 5000 + 320, &ev));
    let p = c.b.recv_rtp("the event");
    let h = head(&p);
    assert_eq!((h.pt, h.ts), (96, 5000 + 320));
    assert_eq!(p[1] & 0x80, 0x80, "marker kept");
    assert_eq!(&p[12..], &ev);
    c.d.delete(&c.id);
}

/// `ptime` in the offer: the relay repacketizes what the caller sends
/// (20 ms) into 40 ms packets for the callee, and says so in the offer;
/// both keep PCMU (no codec option: the same codec, re-encoded).
#[test]
fn ptime_option_repacketizes_towards_the_callee() {
    let d = Daemon::start("transcode-ptime-option", 5, &[]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let id = "ptime-option-call";
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let r = d.request(&offer(id, "alice", &sdp_with(&a, std::slice::from_ref(&a_key), "0", 101)).with("ptime", 40i64));
    let o = reply_sdp(&r);
    assert_eq!(o.media()[0].ptime(), Some(40), "offer to the callee:\n{o}");
    let relay_b = cryptos(&o).remove(0);
    let b_key = key(relay_b.tag, relay_b.suite);
    let r = d.request(&answer(id, "alice", "bob", &sdp_with(&b, std::slice::from_ref(&b_key), "0", 101)));
    let ans = reply_sdp(&r);
    assert_eq!(formats(&ans)[0], (0, "PCMU".into()), "answer to the caller:\n{ans}");
    connect(&mut a, &a_key, &ans, &mut b, &b_key, &o, &relay_b);
    talk(&mut a, 0, 1000.0, 40, 0, 10, 20, &[]);
    let mut pcm = Vec::new();
    for k in 0..5u32 {
        let p = b.recv_rtp(&format!("40 ms packet {k}"));
        let h = head(&p);
        assert_eq!((h.pt, h.seq, h.ts, p.len()), (0, 40 + k as u16, 5000 + 320 * k, 12 + 320), "packet {k}");
        pcm.extend(p[12..].iter().map(|&c| ulaw_decode(c)));
    }
    check_tone(&pcm, 1000.0, "repacketized to 40 ms");
    assert_quiet(&b.rtp, "ten 20 ms packets make five 40 ms ones");
    // The other way nothing was asked: the caller gets the callee's 20 ms packets.
    talk(&mut b, 0, 440.0, 7, 0, 4, 20, &[]);
    let (h, _) = listen(&mut a, 0, 4, "callee to caller");
    assert!(h.iter().enumerate().all(|(k, x)| x.ts == 5000 + 160 * k as u32));
    d.delete(id);
}

/// A configuration naming a codec no plugin provides (`codec-transcode-G729`
/// without the G.729 plugin) must not refuse calls: the codec is left out
/// and the reply says so, as rtpengine does.
#[test]
fn a_codec_without_a_plugin_is_left_out_with_a_warning() {
    let d = Daemon::start("transcode-missing-codec", 6, &[]);
    let a = Endpoint::new(LO);
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let flags = Value::from(vec!["codec-transcode-G729", "codec-transcode-PCMA"]);
    let r = d.request(
        &offer("missing-codec", "alice", &sdp_with(&a, std::slice::from_ref(&a_key), "0", 101)).with("flags", flags),
    );
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let w = r.get("warning").and_then(Value::as_str).unwrap_or("");
    assert!(w.contains("codec 'G729' cannot be transcoded"), "warning: {w:?}");
    let o = reply_sdp(&r);
    assert_eq!(formats(&o), [(0, "PCMU".into()), (101, "telephone-event".into()), (8, "PCMA".into())], "{o}");
    d.delete("missing-codec");
}

/// The workspace's codec plugins (spandsp, Opus, G.729), copied into a
/// directory for `--codec-plugin-dir`; None, with the reason printed, when
/// cargo has not built them (they are built with the workspace's tests).
fn plugin_dir(name: &str) -> Option<std::path::PathBuf> {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_srtpgate"));
    let dir = std::env::temp_dir().join(format!("srtpgate-{name}-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    for lib in ["spandsp", "opus", "g729"] {
        let file = format!("libsrtpgate_plugin_{lib}.so");
        let Some(built) =
            [bin.with_file_name(&file), bin.with_file_name("deps").join(&file)].into_iter().find(|p| p.is_file())
        else {
            let why = format!("{file} not built beside {} (run the workspace's tests)", bin.display());
            srtpgate_testkit::skip("plugins", name, why);
            return None;
        };
        std::fs::copy(&built, dir.join(format!("{lib}.so"))).expect("copy plugin");
    }
    Some(dir)
}

/// A codec of the plugins in `dir`, at its own PCM rate (what a phone runs).
fn phone_codec(dir: &std::path::Path, name: &str, fmtp: Option<&str>) -> srtpgate_codec::Instance {
    let mut reg = srtpgate_codec::Registry::new();
    assert!(reg.load_dir(dir).expect("plugin dir").is_empty());
    let p = reg.plugins().iter().find(|p| p.codecs().iter().any(|c| c.name == name)).expect(name).clone();
    let i = p.codecs().iter().position(|c| c.name == name).expect(name);
    p.instance(i, fmtp, None).expect("codec state")
}

/// A `hz` tone of `n` samples at `rate` from sample `at`, amplitude 8 000.
fn tone_at(rate: u32, hz: f64, at: usize, n: usize) -> Vec<i16> {
    (at..at + n).map(|i| (8000.0 * (i as f64 * 2.0 * std::f64::consts::PI * hz / rate as f64).sin()) as i16).collect()
}

/// A PCMA-only caller and a callee that has only `codec` (payload type
/// `pt`, SDP lines `lines`), bridged with `codec-transcode-<codec>` and
/// `codec-mask-PCMA`; the caller and callee exchange a tone both ways,
/// each checks what it decodes. Returns the daemon, the endpoints and the
/// callee's codec for more.
/// A PCMA caller and a callee of `codec` (`spec` after `codec-transcode-`:
/// the codec, with parameters after slashes) bridged by the relay, audio
/// checked both ways; the call is recorded with each party's WAV and the
/// mix, and each party's tone is found in its WAV (decoded by the same
/// plugins); returns the mean payload bytes of the 40 packets the relay
/// encoded for the callee (None when the plugins are not built).
fn plugin_call(name: &str, slot: u16, spec: &str, pt: u8, clock: u32, lines: &[String]) -> Option<f64> {
    let codec = spec.split('/').next().expect("name");
    let dir = plugin_dir(name)?;
    let rec = dir.join("recordings");
    let d = Daemon::start(
        name,
        slot,
        &[
            "--codec-plugin-dir",
            dir.to_str().expect("path"),
            "--recording-dir",
            rec.to_str().expect("path"),
            "--recording-audio",
            "single,mixed",
        ],
    );
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let id = format!("{name}-call");
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let transcode = format!("codec-transcode-{spec}");
    let flags = Value::from(vec![transcode.as_str(), "codec-mask-PCMA"]);
    let r = d.request(&offer(&id, "alice", &sdp_with(&a, std::slice::from_ref(&a_key), "8", 101)).with("flags", flags));
    let o = reply_sdp(&r);
    let offered = o.media()[0].payload_formats();
    let f =
        offered.iter().find(|f| f.name.eq_ignore_ascii_case(codec)).unwrap_or_else(|| panic!("{codec} offered:\n{o}"));
    assert!(!offered.iter().any(|f| f.name == "PCMA"), "PCMA masked:\n{o}");
    assert_eq!(f.clock_rate, clock, "{o}");
    let relay_b = cryptos(&o).remove(0);
    let b_key = key(relay_b.tag, relay_b.suite);
    let mut answer_sdp = sdp_with(&b, std::slice::from_ref(&b_key), &pt.to_string(), 96.max(pt + 1))
        .replace("telephone-event/8000", &format!("telephone-event/{clock}"));
    for l in lines {
        answer_sdp.push_str(l);
        answer_sdp.push_str("\r\n");
    }
    let r = d.request(&answer(&id, "alice", "bob", &answer_sdp));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let ans = reply_sdp(&r);
    assert_eq!(formats(&ans)[0], (8, "PCMA".into()), "the caller keeps PCMA:\n{ans}");
    connect(&mut a, &a_key, &ans, &mut b, &b_key, &o, &relay_b);
    let r = d.request(&Value::dict().with("command", "start recording").with("call-id", id.as_str()));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let fmtp =
        lines.iter().find_map(|l| l.split_once(' ').filter(|_| l.starts_with("a=fmtp:")).map(|(_, v)| v.to_string()));
    let mut phone = phone_codec(&dir, if codec == "OPUS" { "opus" } else { codec }, fmtp.as_deref());
    let rate = phone.pcm_rate();
    let step = clock / 50;

    // Caller → callee: 40 packets of PCMA tone; the callee decodes them.
    talk(&mut a, 8, 1000.0, 100, 0, 40, 20, &[]);
    let mut heard = Vec::new();
    let mut buf = vec![0i16; 8000];
    let mut bytes = 0;
    for k in 0..40u32 {
        let p = b.recv_rtp(&format!("{codec} packet {k}"));
        bytes += p.len() - 12;
        let h = head(&p);
        assert_eq!((h.pt, h.ts), (pt, 5000 + step * k), "{codec} packet {k}: payload type and timestamp");
        let n = phone.decode(&p[12..], &mut buf).expect("the callee decodes");
        assert_eq!(n, rate as usize / 50, "20 ms of audio");
        heard.extend_from_slice(&buf[..n]);
    }
    let s = share_at(&heard[heard.len() / 2..], rate, 1000.0);
    assert!(s > 0.8, "{codec}: the callee hears the tone ({:.0} % at 1 kHz)", s * 100.0);

    // Callee → caller: 40 packets of the callee's codec; PCMA arrives.
    let mut wire = vec![0u8; 4000];
    for k in 0..40usize {
        let x = tone_at(rate, 1000.0, k * rate as usize / 50, rate as usize / 50);
        let n = phone.encode(&x, &mut wire).expect("the callee encodes");
        b.send_plain(&packet(b.ssrc, pt, 7 + k as u16, 9000 + step * k as u32, &wire[..n]));
    }
    let (h, pcm) = listen(&mut a, 8, 40, &format!("{codec} to PCMA"));
    for (k, x) in h.iter().enumerate() {
        assert_eq!((x.seq, x.ts), (7 + k as u16, 9000 + 160 * k as u32), "PCMA packet {k}");
    }
    let (s, _) = tone_share(&pcm[pcm.len() / 2..], 1000.0);
    assert!(s > 0.8, "{codec}: the caller hears the tone ({:.0} % at 1 kHz)", s * 100.0);
    let m = d.metrics();
    assert_eq!(transcode_metric(&m, "encoded_packets"), Some(80.0), "{m}");
    assert_eq!(transcode_metric(&m, "codec_failures"), Some(0.0), "{m}");
    // The callee's sender report reaches the caller with its RTP time in
    // the caller's clock (same origin: the stream's first timestamp).
    let sr = b.send_rtcp();
    let got = a.recv_rtcp("the callee's sender report");
    let ts = |p: &[u8]| u32::from_be_bytes([p[16], p[17], p[18], p[19]]) as i64;
    let want = 9000 + (ts(&sr) - 9000).div_euclid((clock / 8000) as i64);
    assert_eq!(ts(&got), want.rem_euclid(1 << 32), "SR time {} in the caller's clock", ts(&sr));

    if clock != 8000 {
        // RFC 4733 across clock rates (an rtpengine complaint): an event
        // from the caller (telephone-event/8000) reaches the callee on its
        // telephone-event/<clock> with timestamp and duration in its clock.
        let ratio = clock / 8000;
        let event = [5u8, 0x0a, (800u16 >> 8) as u8, (800u16 & 0xff) as u8];
        a.send_plain(&packet(a.ssrc, 101 | 0x80, 140, 5000 + 160 * 40, &event));
        let p = b.recv_rtp("the caller's event");
        let h = head(&p);
        assert_eq!((h.pt, h.ts), (96.max(pt + 1), 5000 + 160 * 40 * ratio), "event payload type and time");
        assert_eq!(&p[12..], &[5, 0x0a, ((800 * ratio) >> 8) as u8, ((800 * ratio) & 0xff) as u8], "duration");
        // And back: the callee's event arrives in 8 kHz units.
        let back = [7u8, 0x8a, ((160 * ratio) >> 8) as u8, ((160 * ratio) & 0xff) as u8];
        b.send_plain(&packet(b.ssrc, 96.max(pt + 1), 47, 9000 + step * 40, &back));
        let p = a.recv_rtp("the callee's event");
        assert_eq!((head(&p).pt, head(&p).ts), (101, 9000 + 160 * 40));
        assert_eq!(&p[12..], &[7, 0x8a, 0, 160], "end bit kept, duration in 8 kHz units");
    }
    if codec == "G729" {
        // Annex B negotiation: the callee said annexb=no, so silence from
        // the caller reaches it as voice frames, never as SID frames or
        // as nothing.
        let silence: Vec<u8> = vec![alaw_encode(0); 160];
        for k in 0..20u16 {
            a.send_plain(&packet(a.ssrc, 8, 140 + k, 5000 + 160 * (40 + k as u32), &silence));
        }
        for k in 0..20 {
            let p = b.recv_rtp(&format!("G.729 silence {k}"));
            assert_eq!(p.len() - 12, 20, "annexb=no: two voice frames, no SID");
        }
        assert_eq!(transcode_metric(&d.metrics(), "untransmitted_frames"), Some(0.0));
    }
    d.delete(&id);
    check_recorded_tones(&rec, codec);
    let _ = std::fs::remove_dir_all(&dir);
    Some(bytes as f64 / 40.0)
}

/// The WAVs of a recorded transcoded call (the only recording below
/// `rec`): each party's holds its 1 kHz tone, decoded from its own codec
/// (the caller's PCMA, the callee's `codec`); the mix holds it too.
fn check_recorded_tones(rec: &std::path::Path, codec: &str) {
    let deadline = std::time::Instant::now() + WAIT;
    let json = loop {
        let day = std::fs::read_dir(rec).ok().and_then(|mut d| d.next()).and_then(Result::ok).map(|e| e.path());
        let json = day
            .and_then(|d| std::fs::read_dir(d).ok())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "json"));
        if let Some(j) = json {
            break j;
        }
        assert!(std::time::Instant::now() < deadline, "{codec}: no recording below {}", rec.display());
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let meta = std::fs::read_to_string(&json).unwrap();
    let base = json.with_extension("");
    for who in ["caller", "callee", "mix"] {
        let path = base.with_file_name(format!("{}.{who}.wav", base.file_name().unwrap().to_string_lossy()));
        let r = hound::WavReader::open(&path).unwrap_or_else(|e| panic!("{codec} {who}: {e}\n{meta}"));
        let rate = r.spec().sample_rate;
        let pcm: Vec<i16> = r.into_samples::<i16>().map(Result::unwrap).collect();
        // In 0.1 s blocks weighed by their energy: the tone fills only part
        // of the file (silence before and after it).
        let (mut tone, mut all) = (0.0, 0.0);
        for b in pcm.chunks(rate as usize / 10) {
            let e: f64 = b.iter().map(|&x| (x as f64).powi(2)).sum();
            tone += share_at(b, rate, 1000.0) * e;
            all += e;
        }
        let s = tone / all;
        assert!(s > 0.8, "{codec}: the {who}'s WAV ({rate} Hz) is {:.0} % a 1 kHz tone\n{meta}", s * 100.0);
    }
}

/// PCMA ↔ G.722 through the spandsp plugin: G.722 runs at 8 kHz PCM beside
/// PCMA (no resampler), and the wideband phone's 16 kHz decoder hears the
/// tone; G.722's RTP clock is 8000.
#[test]
fn pcma_caller_and_g722_callee() {
    plugin_call("transcode-g722", 7, "G722", 9, 8000, &[]);
}

/// PCMA ↔ Opus: the Opus phone runs at 48 kHz, the relay's Opus at 8 kHz.
#[test]
fn pcma_caller_and_opus_callee() {
    let lines = ["a=rtpmap:111 opus/48000/2".to_string(), "a=fmtp:111 useinbandfec=1".to_string()];
    let Some(default) = plugin_call("transcode-opus", 8, "OPUS", 111, 48000, &lines) else { return };
    // A bit rate after the codec in the NG option (as rtpengine takes it)
    // reaches the relay's encoder: 8 kbit/s is 20 bytes a 20 ms packet
    // (VBR: a little more on this tone), the default 32 kbit/s more.
    let low = plugin_call("transcode-opus-8k", 12, "OPUS/48000/2/8000", 111, 48000, &lines).expect("built");
    eprintln!("Opus to the callee: {default:.1} bytes a packet by default, {low:.1} at 8 kbit/s");
    assert!(low < 30.0 && default > 1.5 * low, "{default:.1} bytes by default, {low:.1} at 8 kbit/s");
}

/// PCMA ↔ G.729, with the callee's `annexb=no` honoured (rtpengine users
/// report SID frames sent to phones that refused Annex B).
#[test]
fn pcma_caller_and_g729_callee_without_annex_b() {
    plugin_call("transcode-g729", 9, "G729", 18, 8000, &["a=fmtp:18 annexb=no".to_string()]);
}

/// DTMF between a caller that keys tones in its audio (no telephone-event)
/// and a callee that takes RFC 4733 events, with
/// `codec-transcode-telephone-event`: the caller's tone reaches the callee
/// as events and not as audio (none of it leaks before the detector
/// decides: the direction has a 40 ms delay line), and the callee's events
/// reach the caller as the key's tone pair.
#[test]
fn inband_dtmf_and_rfc4733_events_are_converted_both_ways() {
    let name = "transcode-inband-dtmf";
    let Some(dir) = plugin_dir(name) else { return };
    let d = Daemon::start(name, 10, &["--codec-plugin-dir", dir.to_str().expect("path")]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let id = format!("{name}-call");
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let flags = Value::from(vec!["codec-transcode-telephone-event"]);
    let r = d.request(&offer(&id, "alice", &sdp_with(&a, std::slice::from_ref(&a_key), "8", 0)).with("flags", flags));
    let o = reply_sdp(&r);
    assert_eq!(formats(&o), [(8, "PCMA".into()), (96, "telephone-event".into())], "offer to the callee:\n{o}");
    let relay_b = cryptos(&o).remove(0);
    let b_key = key(relay_b.tag, relay_b.suite);
    let r = d.request(&answer(&id, "alice", "bob", &sdp_with(&b, std::slice::from_ref(&b_key), "8", 96)));
    let ans = reply_sdp(&r);
    assert_eq!(formats(&ans), [(8, "PCMA".into())], "answer to the caller, no telephone-event:\n{ans}");
    connect(&mut a, &a_key, &ans, &mut b, &b_key, &o, &relay_b);

    // Caller: 200 ms of 440 Hz, the key 7 for 100 ms, 300 ms of 440 Hz.
    let (lo, hi) = srtpgate_codec::dtmf::frequencies(7).expect("key");
    let mut x = tone(440.0, 0, 200);
    let mut g = srtpgate_codec::dtmf::ToneGen::new(8000);
    g.start(7, -10.0);
    let mut key7 = vec![0i16; 800];
    g.fill(&mut key7);
    x.extend(key7);
    x.extend(tone(440.0, 2400, 300));
    for (k, chunk) in x.chunks(160).enumerate() {
        let payload: Vec<u8> = chunk.iter().map(|&v| alaw_encode(v)).collect();
        a.send_plain(&packet(a.ssrc, 8, 100 + k as u16, 5000 + 160 * k as u32, &payload));
    }
    // The callee: audio and events until the audio up to 560 ms is in (the
    // last 40 ms stay in the delay line until more audio comes).
    let mut audio = vec![None::<i16>; x.len()];
    let mut events = Vec::new();
    while audio[4479].is_none() {
        let p = b.recv_rtp("the callee's audio and events");
        let h = head(&p);
        match h.pt {
            8 => {
                let at = (h.ts - 5000) as usize;
                for (i, &c) in p[12..].iter().enumerate() {
                    audio[at + i] = Some(alaw_decode(c));
                }
            }
            96 => events.push((
                h.ts - 5000,
                p[1] & 0x80 != 0,
                p[12],
                p[13] & 0x80 != 0,
                u16::from_be_bytes([p[14], p[15]]),
            )),
            pt => panic!("payload type {pt}"),
        }
    }
    assert!(!events.is_empty() && events.iter().all(|e| e.2 == 7), "{events:?}");
    let (start, marker, _, _, _) = events[0];
    assert!(marker && (1280..=1600).contains(&start), "event starts with the tone (1600): {events:?}");
    let last = events.last().expect("events");
    assert!(last.3, "the final packet came: {events:?}");
    assert!((720..=960).contains(&last.4), "duration {} of a 100 ms key", last.4);
    assert_eq!(events.iter().filter(|e| e.3).count(), 3, "three final packets");
    // None of the tone is in the audio the callee got; the 440 Hz is.
    for w in (1600..2400).step_by(80) {
        let win: Vec<i16> = audio[w..w + 80].iter().flatten().copied().collect();
        if win.len() == 80 && win.iter().any(|&v| v.unsigned_abs() > 200) {
            let leak = share_at(&win, 8000, lo as f64) + share_at(&win, 8000, hi as f64);
            assert!(leak < 0.1, "the tone leaked at sample {w}: {leak:.2}");
        }
    }
    let before: Vec<i16> = audio[160..1280].iter().map(|v| v.expect("sent")).collect();
    assert!(share_at(&before, 8000, 440.0) > 0.8);
    assert_eq!(transcode_metric(&d.metrics(), "dtmf_detected"), Some(1.0));

    // Callee → caller: PCMA audio, then the key 3 as events (start, updates,
    // three final packets), then audio again; the caller hears the tone pair.
    let mut wire_ts = 9000u32;
    let mut seq = 50u16;
    let send_audio = |b: &mut Endpoint, n: usize, seq: &mut u16, ts: &mut u32| {
        for _ in 0..n {
            let pcm = tone(440.0, (*ts - 9000) as usize, 20);
            let payload: Vec<u8> = pcm.iter().map(|&v| alaw_encode(v)).collect();
            b.send_plain(&packet(b.ssrc, 8, *seq, *ts, &payload));
            *seq += 1;
            *ts += 160;
        }
    };
    send_audio(&mut b, 5, &mut seq, &mut wire_ts);
    let ev_ts = wire_ts;
    for (k, (dur, end)) in
        [(160u16, false), (320, false), (480, false), (640, true), (640, true), (640, true)].into_iter().enumerate()
    {
        let ev = [3u8, (end as u8) << 7 | 10, (dur >> 8) as u8, dur as u8];
        b.send_plain(&packet(b.ssrc, 96 | if k == 0 { 0x80 } else { 0 }, seq, ev_ts, &ev));
        seq += 1;
    }
    wire_ts += 640;
    send_audio(&mut b, 5, &mut seq, &mut wire_ts);
    let (heads, pcm) = listen(&mut a, 8, 14, "the caller's audio");
    for (k, h) in heads.iter().enumerate() {
        assert_eq!(h.ts, 9000 + 160 * k as u32, "caller packet {k}: audio throughout, no gap");
    }
    let (lo, hi) = srtpgate_codec::dtmf::frequencies(3).expect("key");
    let keyed = &pcm[800..1440];
    assert!(share_at(keyed, 8000, lo as f64) > 0.3 && share_at(keyed, 8000, hi as f64) > 0.3, "the caller hears key 3");
    assert!(share_at(&pcm[..800], 8000, 440.0) > 0.8 && share_at(&pcm[1440..], 8000, 440.0) > 0.8);
    assert_eq!(transcode_metric(&d.metrics(), "dtmf_played"), Some(1.0));
    d.delete(&id);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Both sides talk at once, paced (a packet each way every 20 ms, `n` in
/// all, sequence numbers from `seqs`); for each side what it received:
/// sequence numbers and decoded PCM (the caller's in µ-law, the callee's in
/// A-law).
fn converse(c: &mut Bridged, seqs: (u16, u16), n: usize) -> [(Vec<u16>, Vec<i16>); 2] {
    let mut got: [(Vec<u16>, Vec<i16>); 2] = Default::default();
    let take = |e: &mut Endpoint, law: u8, into: &mut (Vec<u16>, Vec<i16>)| {
        while let Some((wire, _)) = recv_within(&e.rtp, std::time::Duration::from_millis(1)) {
            let Ok(p) = e.open_rtp(&wire) else { panic!("a packet that does not open") };
            if p[1] & 0x7f != law {
                continue;
            }
            into.0.push(u16::from_be_bytes([p[2], p[3]]));
            into.1.extend(p[12..].iter().map(|&x| if law == 0 { ulaw_decode(x) } else { alaw_decode(x) }));
        }
    };
    for k in 0..n {
        talk(&mut c.a, 0, 1000.0, seqs.0.wrapping_add(k as u16), k * 160, 1, 20, &[]);
        talk(&mut c.b, 8, 440.0, seqs.1.wrapping_add(k as u16), k * 160, 1, 20, &[]);
        std::thread::sleep(std::time::Duration::from_millis(20));
        take(&mut c.a, 0, &mut got[0]);
        take(&mut c.b, 8, &mut got[1]);
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    take(&mut c.a, 0, &mut got[0]);
    take(&mut c.b, 8, &mut got[1]);
    got
}

/// A transcoded call kept in Redis survives a crash (SIGKILL) and restart:
/// the new process makes the transcoders anew and each side hears the
/// other's tone again, under the same keys, and what the relay sends goes
/// on past every sequence number (so SRTP index) it sent before.
#[test]
fn a_transcoded_call_survives_a_crash_and_restart() {
    let Some(redis) = srtpgate_testkit::redis::Redis::for_test() else { return };
    let (_, args) = redis.relay_args("transcode-restart");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut c = bridged_on(Daemon::start("transcode-restart", 13, &args), "transcode-restart");
    let before = converse(&mut c, (100, 7), 50);
    c.d.crash_and_restart();
    assert_eq!(c.d.metric("calls_resumed_total"), Some(1.0), "{}", c.d.log_tail());
    let after = converse(&mut c, (150, 57), 100);
    for (side, what, hz) in [(0, "the caller", 440.0), (1, "the callee", 1000.0)] {
        let (seq0, pcm0) = &before[side];
        let (seq1, pcm1) = &after[side];
        println!(
            "{what}: {} packets before the crash (last {:?}), {} after it (first {:?})",
            seq0.len(),
            seq0.last(),
            seq1.len(),
            seq1.first()
        );
        assert!(seq0.len() >= 45, "{what}: {} packets before the crash", seq0.len());
        check_tone(&pcm0[pcm0.len() - 25 * 160..], hz, &format!("{what} before the crash"));
        assert!(seq1.len() >= 50, "{what}: {} packets after the restart", seq1.len());
        check_tone(&pcm1[pcm1.len() - 25 * 160..], hz, &format!("{what} after the restart"));
        // Numbered on from past the last reservation: never back.
        let last = *seq0.iter().max().expect("before");
        assert!(seq1.iter().all(|&s| s > last), "{what}: a sequence number sent again: {seq1:?} after {last}");
        assert!(seq1.windows(2).all(|w| w[1] == w[0].wrapping_add(1) || w[1] > w[0]), "{what}: {seq1:?}");
    }
    c.d.delete(&c.id);
}

/// `play media` and `silence media` towards an Opus callee of a PCMA ↔
/// Opus call: the prompt (a 16 kHz WAV, resampled) is encoded in Opus and
/// decodes, at the phone, to its 1 kHz tone; the caller's tone, silenced,
/// decodes to silence (the Opus silent frames of the relay).
#[test]
fn a_prompt_and_silence_reach_an_opus_callee() {
    use base64::Engine as _;
    let name = "transcode-opus-play";
    let Some(dir) = plugin_dir(name) else { return };
    let d = Daemon::start(name, 14, &["--codec-plugin-dir", dir.to_str().expect("path")]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let id = format!("{name}-call");
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let flags = Value::from(vec!["codec-transcode-opus", "codec-mask-PCMA"]);
    let r = d.request(&offer(&id, "alice", &sdp_with(&a, std::slice::from_ref(&a_key), "8", 101)).with("flags", flags));
    let o = reply_sdp(&r);
    let relay_b = cryptos(&o).remove(0);
    let b_key = key(relay_b.tag, relay_b.suite);
    let answer_sdp = sdp_with(&b, std::slice::from_ref(&b_key), "111", 112)
        .replace("telephone-event/8000", "telephone-event/48000")
        + "a=rtpmap:111 opus/48000/2\r\n";
    let r = d.request(&answer(&id, "alice", "bob", &answer_sdp));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let ans = reply_sdp(&r);
    connect(&mut a, &a_key, &ans, &mut b, &b_key, &o, &relay_b);
    let mut phone = phone_codec(&dir, "opus", None);
    let rate = phone.pcm_rate() as usize;

    // The prompt: 300 ms of 1 kHz at 16 kHz, sent in the request.
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut wav = std::io::Cursor::new(Vec::new());
    let mut w = hound::WavWriter::new(&mut wav, spec).expect("wav");
    for s in tone_at(16000, 1000.0, 0, 4800) {
        w.write_sample(s).expect("sample");
    }
    w.finalize().expect("wav");
    let blob = base64::engine::general_purpose::STANDARD.encode(wav.into_inner());
    let r = d.request(
        &Value::dict()
            .with("command", "play media")
            .with("call-id", id.as_str())
            .with("from-tag", "bob")
            .with("blob64", blob.as_str()),
    );
    assert_eq!((result(&r), r.get("duration").and_then(Value::as_int)), ("ok", Some(300)), "{}", show(&r));
    let mut heard = Vec::new();
    let mut buf = vec![0i16; 48_000];
    for k in 0..15 {
        let p = b.recv_rtp(&format!("prompt packet {k}"));
        assert_eq!(head(&p).pt, 111, "the prompt in the callee's Opus");
        let n = phone.decode(&p[12..], &mut buf).expect("the callee decodes the prompt");
        assert_eq!(n, rate / 50, "20 ms frames");
        heard.extend_from_slice(&buf[..n]);
    }
    let s = share_at(&heard[heard.len() / 3..], rate as u32, 1000.0);
    assert!(s > 0.8, "the callee hears the prompt's 1 kHz ({:.0} %)", s * 100.0);
    std::thread::sleep(std::time::Duration::from_millis(100));

    // silence media on the caller: its tone reaches the callee as silence.
    let r = d.request(
        &Value::dict().with("command", "silence media").with("call-id", id.as_str()).with("from-tag", "alice"),
    );
    assert_eq!(result(&r), "ok", "{}", show(&r));
    talk(&mut a, 8, 1000.0, 300, 0, 20, 20, &[]);
    let mut quiet = Vec::new();
    for k in 0..20 {
        let p = b.recv_rtp(&format!("silenced packet {k}"));
        let n = phone.decode(&p[12..], &mut buf).expect("the callee decodes silence");
        quiet.extend_from_slice(&buf[..n]);
    }
    let peak = quiet[quiet.len() / 2..].iter().map(|v| v.unsigned_abs()).max().unwrap_or(0);
    assert!(peak < 100, "the silenced caller decodes to silence (peak {peak})");
    d.delete(&id);
    let _ = std::fs::remove_dir_all(&dir);
}
