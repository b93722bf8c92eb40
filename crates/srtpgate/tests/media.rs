//! In-call media control through `srtpgate serve`, driven over NG with
//! rtpengine's commands and keys: `play media` (a WAV of the media
//! directory, or sent as `blob64`) and `stop media`, `play DTMF` (RFC 4733
//! events, or a tone without telephone-event), `block media`, `silence
//! media`, `block DTMF` and their undoing, and the DTMF log. Every check is
//! made on what the receiving endpoint decrypts and decodes.

use base64::Engine as _;
use srtpgate_codec::dtmf::power_share;
use srtpgate_codec::g711::ulaw_decode;
use srtpgate_ng::Value;
use srtpgate_testkit::daemon::{drops, recv_within, result, show, srtp_call, Call, Daemon, Endpoint, LO};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A fresh media directory for one test.
fn media_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("media-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("media dir");
    dir
}

/// A WAV of a `hz` sine, `ms` long, at `rate` (16-bit mono), as bytes.
fn tone_wav(hz: f64, ms: u32, rate: u32) -> Vec<u8> {
    let spec =
        hound::WavSpec { channels: 1, sample_rate: rate, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = hound::WavWriter::new(&mut out, spec).expect("wav");
    for i in 0..(rate as u64 * ms as u64 / 1000) {
        let v = (i as f64 * hz * std::f64::consts::TAU / rate as f64).sin() * 12_000.0;
        w.write_sample(v as i16).expect("sample");
    }
    w.finalize().expect("wav");
    out.into_inner()
}

fn ng(command: &str, call: &Call) -> Value {
    Value::dict().with("command", command).with("call-id", call.id.as_str())
}

fn ok(v: &Value) {
    assert_eq!(result(v), "ok", "{}", show(v));
}

/// A packet the receiving endpoint decrypted: header fields and payload.
#[derive(Clone, Debug)]
struct Got {
    pt: u8,
    marker: bool,
    seq: u16,
    ts: u32,
    ssrc: u32,
    payload: Vec<u8>,
}

fn parse(p: &[u8]) -> Got {
    Got {
        pt: p[1] & 0x7f,
        marker: p[1] & 0x80 != 0,
        seq: u16::from_be_bytes([p[2], p[3]]),
        ts: u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
        ssrc: u32::from_be_bytes([p[8], p[9], p[10], p[11]]),
        payload: p[12..].to_vec(),
    }
}

/// For `ms`: the caller sends a packet every 20 ms (payload 0x55, PCMU)
/// and the callee's endpoint collects, in order, what it decrypts.
fn pump(c: &mut Call, ms: u64) -> Vec<Got> {
    let mut got = Vec::new();
    let end = Instant::now() + Duration::from_millis(ms);
    let mut next = Instant::now();
    while Instant::now() < end {
        if Instant::now() >= next {
            c.a.send_rtp("caller");
            next += Duration::from_millis(20);
        }
        let wait = next.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        while let Some((wire, _)) = recv_within(&c.b.rtp, wait) {
            let plain = c.b.open_rtp(&wire).expect("the callee decrypts what it gets");
            got.push(parse(&plain));
            if Instant::now() >= next {
                break;
            }
        }
    }
    got
}

/// The decoded PCMU of these packets, in order.
fn pcm(pkts: &[&Got]) -> Vec<i16> {
    pkts.iter().flat_map(|g| g.payload.iter().map(|&b| ulaw_decode(b))).collect()
}

#[test]
fn a_prompt_replaces_the_other_party_and_ends_with_it_back() {
    let dir = media_dir("prompt");
    std::fs::write(dir.join("hold.wav"), tone_wav(1000.0, 400, 16_000)).unwrap();
    let d = Daemon::start("media-prompt", 0, &["--media-dir", dir.to_str().unwrap()]);
    let mut c = srtp_call(&d, "prompt-1", LO, false);
    // Media flows first.
    let before = pump(&mut c, 200);
    assert!(before.iter().any(|g| g.ssrc == c.a.ssrc), "the caller's media reaches the callee");
    let r = d.request(&ng("play media", &c).with("from-tag", c.to_tag.as_str()).with("file", "hold.wav"));
    ok(&r);
    assert_eq!(r.get("duration").and_then(Value::as_int), Some(400), "{}", show(&r));
    let got = pump(&mut c, 900);
    let prompt: Vec<&Got> = got.iter().filter(|g| g.ssrc != c.a.ssrc).collect();
    // 400 ms in 20 ms PCMU frames, numbered as one stream, the first marked.
    assert_eq!(prompt.len(), 20, "prompt packets: {:?}", prompt.iter().map(|g| g.seq).collect::<Vec<_>>());
    assert!(prompt[0].marker && prompt[1..].iter().all(|g| !g.marker));
    for w in prompt.windows(2) {
        assert_eq!(w[1].seq, w[0].seq.wrapping_add(1));
        assert_eq!(w[1].ts, w[0].ts.wrapping_add(160));
        assert_eq!((w[1].pt, w[1].payload.len()), (0, 160));
    }
    let audio = pcm(&prompt);
    assert!(power_share(&audio, 8000, 1000.0) > 0.8, "the callee hears the 1 kHz prompt");
    // While it played, nothing of the caller's; after it, the caller again.
    let first = got.iter().position(|g| g.ssrc != c.a.ssrc).unwrap();
    let last = got.iter().rposition(|g| g.ssrc != c.a.ssrc).unwrap();
    assert!(got[first..=last].iter().all(|g| g.ssrc != c.a.ssrc), "the prompt replaced the caller");
    assert!(got[last + 1..].iter().filter(|g| g.ssrc == c.a.ssrc).count() >= 5, "the caller is back");
    let q = d.query(&c.id);
    assert!(drops(&q, &c.from_tag, "replaced") >= 15, "{}", show(&q));
    // A second prompt goes on in the same numbering, marked again.
    ok(&d.request(&ng("play media", &c).with("from-tag", c.to_tag.as_str()).with("file", "hold.wav")));
    let again: Vec<Got> = pump(&mut c, 200).into_iter().filter(|g| g.ssrc != c.a.ssrc).collect();
    assert_eq!(again[0].ssrc, prompt[0].ssrc);
    assert!(again[0].marker);
    assert!(again[0].seq.wrapping_sub(prompt[19].seq) == 1, "{} after {}", again[0].seq, prompt[19].seq);
    assert!(again[0].ts.wrapping_sub(prompt[19].ts) >= 160 * 8, "the timestamp moved on by the gap");
}

#[test]
fn stop_media_cuts_the_prompt_and_reports_where() {
    let d = Daemon::start("media-stop", 1, &[]);
    let mut c = srtp_call(&d, "stop-1", LO, false);
    let wav = base64::engine::general_purpose::STANDARD.encode(tone_wav(500.0, 3000, 8000));
    let r = d.request(&ng("play media", &c).with("from-tag", c.to_tag.as_str()).with("blob64", wav.as_str()));
    ok(&r);
    assert_eq!(r.get("duration").and_then(Value::as_int), Some(3000));
    let got = pump(&mut c, 300);
    assert!(got.iter().filter(|g| g.ssrc != c.a.ssrc).count() >= 10);
    let r = d.request(&ng("stop media", &c).with("from-tag", c.to_tag.as_str()));
    ok(&r);
    let pos = r.get("last-frame-pos").and_then(Value::as_int).expect("last-frame-pos");
    // About 300 ms into an 8 kHz file.
    assert!((1600..=4000).contains(&pos), "last-frame-pos {pos}");
    let after = pump(&mut c, 300);
    let prompt_after = after.iter().filter(|g| g.ssrc != c.a.ssrc).count();
    assert!(prompt_after <= 2, "{prompt_after} prompt packets after stop media");
    assert!(after.iter().filter(|g| g.ssrc == c.a.ssrc).count() >= 10, "the caller is back at once");
}

#[test]
fn played_dtmf_arrives_as_rfc4733_events() {
    let d = Daemon::start("media-dtmf", 2, &[]);
    let mut c = srtp_call(&d, "dtmf-1", LO, false);
    pump(&mut c, 100);
    // The caller "presses" 5 for 100 ms: the callee hears it.
    let r =
        d.request(&ng("play DTMF", &c).with("from-tag", c.from_tag.as_str()).with("code", "5").with("duration", "100"));
    ok(&r);
    let got = pump(&mut c, 500);
    let ev: Vec<&Got> = got.iter().filter(|g| g.pt == 101).collect();
    let durations: Vec<u16> = ev.iter().map(|g| u16::from_be_bytes([g.payload[2], g.payload[3]])).collect();
    assert_eq!(durations, vec![160, 320, 480, 640, 800, 800, 800], "{ev:?}");
    assert!(ev.iter().all(|g| g.payload[0] == 5 && g.ts == ev[0].ts));
    assert!(ev[0].marker && ev[1..].iter().all(|g| !g.marker));
    let ends = ev.iter().filter(|g| g.payload[1] & 0x80 != 0).count();
    assert_eq!(ends, 3, "the end packet three times");
    assert_eq!(ev[0].payload[1] & 0x3f, 8, "volume -8 dB by default");
}

#[test]
fn played_dtmf_is_a_tone_without_telephone_event() {
    let d = Daemon::start("media-tone", 3, &[]);
    let mut a = Endpoint::new(LO);
    let mut b = Endpoint::new(LO);
    let sdp = |e: &Endpoint| {
        format!(
            "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\nm=audio {} RTP/AVP 0\r\n\
             a=rtpmap:0 PCMU/8000\r\na=rtcp:{}\r\na=sendrecv\r\n",
            e.port(),
            e.rtcp_port()
        )
    };
    let o = d.request(&srtpgate_testkit::daemon::offer("tone-1", "ta", &sdp(&a)));
    b.relay(&srtpgate_testkit::daemon::reply_sdp(&o));
    let an = d.request(&srtpgate_testkit::daemon::answer("tone-1", "ta", "tb", &sdp(&b)));
    a.relay(&srtpgate_testkit::daemon::reply_sdp(&an));
    let mut c = Call {
        id: "tone-1".into(),
        from_tag: "ta".into(),
        to_tag: "tb".into(),
        a,
        b,
        offer_out: srtpgate_testkit::daemon::reply_sdp(&o),
        answer_out: srtpgate_testkit::daemon::reply_sdp(&an),
        a_key: None,
        b_key: None,
    };
    pump(&mut c, 100);
    ok(&d.request(&ng("play DTMF", &c).with("from-tag", "ta").with("code", "1").with("duration", "200")));
    let got = pump(&mut c, 500);
    let tone: Vec<&Got> = got.iter().filter(|g| g.ssrc != c.a.ssrc).collect();
    assert!(tone.iter().all(|g| g.pt == 0));
    assert!(tone.len() >= 10, "{} tone packets", tone.len());
    let audio = pcm(&tone[..10]);
    let (lo, hi) = srtpgate_codec::dtmf::frequencies(1).unwrap();
    assert!(power_share(&audio, 8000, lo as f64) > 0.3 && power_share(&audio, 8000, hi as f64) > 0.3);
}

/// The caller sends `n` RTP packets of `pt` with `payload`; what the
/// callee decrypts.
fn send_pt(c: &mut Call, n: usize, pt: u8, payload: &[u8], ts: u32) -> Vec<Got> {
    let mut got = Vec::new();
    for _ in 0..n {
        let seq = c.a.next_seq();
        c.a.skip(1);
        let plain = srtpgate_testkit::packets::Rtp::new(c.a.ssrc, seq).pt(pt).ts(ts).packet(payload);
        c.a.send_plain(&plain);
        while let Some((wire, _)) = recv_within(&c.b.rtp, Duration::from_millis(30)) {
            got.push(parse(&c.b.open_rtp(&wire).expect("decrypt")));
        }
    }
    got
}

#[test]
fn blocked_silenced_and_dtmf_blocked_as_the_callee_hears_it() {
    let d = Daemon::start("media-block", 4, &[]);
    let mut c = srtp_call(&d, "block-1", LO, false);
    let speech = [0x55u8; 160];
    assert_eq!(send_pt(&mut c, 3, 0, &speech, 0).len(), 3);
    // block media for the caller: nothing of its audio; its DTMF passes.
    ok(&d.request(&ng("block media", &c).with("from-tag", c.from_tag.as_str())));
    assert!(send_pt(&mut c, 3, 0, &speech, 0).is_empty());
    assert_eq!(send_pt(&mut c, 1, 101, &[4, 0x8a, 3, 0x20], 1000).len(), 1, "DTMF passes a blocked party");
    // The callee's media towards the caller is not blocked.
    c.b.send_rtp("callee");
    assert!(recv_within(&c.a.rtp, Duration::from_millis(500)).is_some());
    ok(&d.request(&ng("unblock media", &c).with("from-tag", c.from_tag.as_str())));
    assert_eq!(send_pt(&mut c, 3, 0, &speech, 0).len(), 3);
    // Call-wide block, then undone.
    ok(&d.request(&ng("block media", &c)));
    assert!(send_pt(&mut c, 2, 0, &speech, 0).is_empty());
    ok(&d.request(&ng("unblock media", &c)));
    assert_eq!(send_pt(&mut c, 2, 0, &speech, 0).len(), 2);
    // silence media: the packets flow, as PCMU silence, headers kept.
    ok(&d.request(&ng("silence media", &c).with("from-tag", c.from_tag.as_str())));
    let s = send_pt(&mut c, 3, 0, &speech, 0);
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|g| g.payload.len() == 160 && g.payload.iter().all(|&b| b == 0xff)), "{s:?}");
    assert!(s.iter().all(|g| g.ssrc == c.a.ssrc));
    ok(&d.request(&ng("unsilence media", &c).with("from-tag", c.from_tag.as_str())));
    assert!(send_pt(&mut c, 1, 0, &speech, 0)[0].payload == speech);
    // block DTMF: events dropped, audio flows.
    ok(&d.request(&ng("block DTMF", &c).with("from-tag", c.from_tag.as_str())));
    assert!(send_pt(&mut c, 3, 101, &[4, 0x0a, 0, 160], 2000).is_empty());
    assert_eq!(send_pt(&mut c, 2, 0, &speech, 0).len(), 2);
    let q = d.query(&c.id);
    assert_eq!(drops(&q, &c.from_tag, "dtmf_blocked"), 3, "{}", show(&q));
    assert!(drops(&q, &c.from_tag, "blocked") >= 5);
    // DTMF-security=zero: events relayed as 0.
    ok(&d.request(&ng("block DTMF", &c).with("from-tag", c.from_tag.as_str()).with("DTMF-security", "zero")));
    let z = send_pt(&mut c, 1, 101, &[9, 0x0a, 0, 160], 3000);
    assert_eq!(z[0].payload[0], 0);
    ok(&d.request(&ng("unblock DTMF", &c).with("from-tag", c.from_tag.as_str())));
    assert_eq!(send_pt(&mut c, 1, 101, &[9, 0x0a, 0, 160], 4000)[0].payload[0], 9);
}

#[test]
fn digits_reach_the_dtmf_log_once_each() {
    let log = UdpSocket::bind((LO, 0)).unwrap();
    let dest = log.local_addr().unwrap().to_string();
    let d = Daemon::start("media-dtmflog", 5, &["--dtmf-log-dest", &dest]);
    let mut c = srtp_call(&d, "dtmflog-1", LO, false);
    // Event 7, 100 ms: two updates and the end three times.
    for (e, dur) in [(0x0a, 160u16), (0x0a, 320), (0x8a, 800), (0x8a, 800), (0x8a, 800)] {
        let [hi, lo] = dur.to_be_bytes();
        send_pt(&mut c, 1, 101, &[7, e, hi, lo], 5000);
    }
    let (msg, _) = recv_within(&log, Duration::from_secs(2)).expect("a DTMF log datagram");
    let v: serde_json::Value = serde_json::from_slice(&msg).expect("JSON");
    assert_eq!(v["callid"], "dtmflog-1");
    assert_eq!(v["source_tag"], c.from_tag.as_str());
    assert_eq!(v["type"], "DTMF");
    assert_eq!((v["event"].as_u64(), v["duration"].as_u64(), v["volume"].as_u64()), (Some(7), Some(100), Some(10)));
    assert_eq!(v["source_ip"], "127.0.0.1");
    assert_eq!(v["tags"].as_array().map(Vec::len), Some(2));
    assert!(recv_within(&log, Duration::from_millis(300)).is_none(), "one datagram per digit");
}

#[test]
fn bad_requests_get_clear_errors_and_leave_the_call_alone() {
    let dir = media_dir("bad");
    std::fs::write(dir.join("text.wav"), b"not a wav file at all").unwrap();
    std::fs::write(dir.parent().unwrap().join("outside.wav"), tone_wav(440.0, 100, 8000)).unwrap();
    let d = Daemon::start("media-bad", 6, &["--media-dir", dir.to_str().unwrap()]);
    let mut c = srtp_call(&d, "bad-1", LO, false);
    let play = |k: &str, v: &str| ng("play media", &c).with("from-tag", c.to_tag.as_str()).with(k, v);
    let cases: Vec<(Value, &str)> = vec![
        (ng("play media", &c).with("file", "x.wav"), "No participant party specified"),
        (play("file", "x.wav").with("call-id", "nope"), "Unknown call-ID"),
        (ng("play media", &c).with("from-tag", "nobody").with("file", "x.wav"), "no such tag"),
        (play("file", "missing.wav"), "missing.wav"),
        (play("file", "../outside.wav"), "outside the media directory"),
        (play("file", "text.wav"), "text.wav"),
        (ng("play media", &c).with("from-tag", c.to_tag.as_str()), "No media file specified"),
        (play("blob64", "aGVsbG8="), "from blob"),
        (ng("stop media", &c).with("from-tag", c.to_tag.as_str()), "Not currently playing media"),
        (ng("play DTMF", &c).with("from-tag", c.from_tag.as_str()).with("code", "X"), "Out of range 'code'"),
        (
            ng("play DTMF", &c).with("from-tag", c.from_tag.as_str()).with("code", "1").with("duration", "999999"),
            "out of range",
        ),
        (ng("block media", &c).with("from-tag", "nobody"), "no such tag"),
    ];
    for (req, want) in cases {
        let r = d.request(&req);
        assert_eq!(result(&r), "error", "{} → {}", show(&req), show(&r));
        let reason = r.get("error-reason").and_then(Value::as_str).unwrap_or("");
        assert!(reason.contains(want), "{} → {reason:?}, wanted {want:?}", show(&req));
    }
    let got = pump(&mut c, 200);
    assert!(got.iter().filter(|g| g.ssrc == c.a.ssrc).count() >= 7, "the call relays as before");
}
