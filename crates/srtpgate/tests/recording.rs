//! Call recording through `srtpgate serve`, driven over NG as Kamailio's
//! rtpengine module drives it: `start recording`, `pause recording`,
//! `stop recording` (also `pause=yes` and `discard-recording`), with
//! `metadata` and `recording-file`. Each recording's pcap holds exactly
//! the packets its endpoints sent while it recorded, decrypted, from each
//! endpoint's address to the relay's port of its leg; its JSON holds the
//! call without a key; both appear under their final names only when
//! complete. A directory that fills up leaves the call's media untouched,
//! and the failure is counted.
//!
//! Forking (`subscribe request`/`answer`, `unsubscribe`): subscribers get
//! each party's packets under keys of their own, renumbered as one stream.

use pcap_file::pcap::PcapReader;
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_testkit::daemon::{
    assert_quiet, cryptos, key, one_way, recv_within, reply_sdp, result, show, srtp_call, wait_bindable, Call, Daemon,
    Endpoint, LO, WAIT,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A fresh directory for one test's recordings.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("recording-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("recording dir");
    dir
}

fn rec(command: &str, call: &str) -> Value {
    Value::dict().with("command", command).with("call-id", call)
}

fn ok(v: Value) {
    assert_eq!(v.get("result").and_then(Value::as_str), Some("ok"), "{v:?}");
}

/// Every file below `dir` (recursively).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Waits until a file ending in `suffix` is below `dir`; its path.
fn wait_for_file(dir: &Path, suffix: &str) -> PathBuf {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(p) = files(dir).into_iter().find(|p| p.to_string_lossy().ends_with(suffix)) {
            return p;
        }
        assert!(Instant::now() < deadline, "no {suffix} file below {}: {:?}", dir.display(), files(dir));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// One packet of a raw-IP pcap: UDP source, destination, payload.
struct Frame {
    src: SocketAddr,
    dst: SocketAddr,
    payload: Vec<u8>,
}

fn read_pcap(path: &Path) -> Vec<Frame> {
    let mut r = PcapReader::new(std::fs::File::open(path).expect("pcap")).expect("a pcap file");
    assert_eq!(u32::from(r.header().datalink), 101, "raw IP");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.expect("a packet");
        let ip = etherparse::SlicedPacket::from_ip(&p.data).expect("IPv4/UDP");
        let (Some(etherparse::NetSlice::Ipv4(v4)), Some(etherparse::TransportSlice::Udp(udp))) = (ip.net, ip.transport)
        else {
            panic!("not IPv4/UDP");
        };
        let h = v4.header();
        out.push(Frame {
            src: SocketAddr::new(h.source_addr().into(), udp.source_port()),
            dst: SocketAddr::new(h.destination_addr().into(), udp.destination_port()),
            payload: udp.payload().to_vec(),
        });
    }
    out
}

/// `n` RTP packets each way; what each side sent (plain).
fn talk(c: &mut Call, n: usize) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut sent = (Vec::new(), Vec::new());
    for (from_a, out) in [(true, &mut sent.0), (false, &mut sent.1)] {
        let (from, to): (&mut Endpoint, &mut Endpoint) =
            if from_a { (&mut c.a, &mut c.b) } else { (&mut c.b, &mut c.a) };
        for i in 0..n {
            let p = from.send_rtp(if from_a { "a->b" } else { "b->a" });
            assert_eq!(to.recv_rtp(&format!("RTP {i}")), p, "relayed intact");
            out.push(p);
        }
    }
    sent
}

#[test]
fn a_call_is_recorded_decrypted_with_its_pauses_and_metadata() {
    let dir = fresh_dir("pauses");
    let d = Daemon::start("recording", 0, &["--recording-dir", dir.to_str().unwrap()]);
    let mut c = srtp_call(&d, "rec-1@10.0.0.5", LO, false);
    // Never recorded: a second call with media, and nothing of it on disk.
    let mut other = srtp_call(&d, "not-recorded", LO, true);
    ok(d.request(&rec("start recording", "rec-1@10.0.0.5").with("metadata", "customer=42|queue=sales")));
    let (mut from_a, mut from_b) = talk(&mut c, 10);
    one_way(&mut c.a, &mut c.b, "a->b", 0, 1);
    one_way(&mut other.a, &mut other.b, "other", 5, 1);
    ok(d.request(&rec("pause recording", "rec-1@10.0.0.5")));
    let q = d.query("rec-1@10.0.0.5");
    assert_eq!(q.get("recording").and_then(|r| r.get("call recording")).and_then(Value::as_int), Some(0), "{q:?}");
    talk(&mut c, 5);
    // `start recording` resumes a paused recording.
    ok(d.request(&rec("start recording", "rec-1@10.0.0.5")));
    let (a2, b2) = talk(&mut c, 7);
    from_a.extend(a2);
    from_b.extend(b2);
    let q = d.query("rec-1@10.0.0.5");
    assert_eq!(q.get("recording").and_then(|r| r.get("call recording")).and_then(Value::as_int), Some(1), "{q:?}");
    assert_eq!(q.get("metadata").and_then(Value::as_str), Some("customer=42|queue=sales"));
    ok(d.request(&rec("stop recording", "rec-1@10.0.0.5")));

    let json = wait_for_file(&dir, ".json");
    let pcap = json.with_extension("pcap");
    let all = files(&dir);
    assert_eq!(all, vec![json.clone(), pcap.clone()], "the two files, no temporary one left");
    // A directory per day, then the escaped Call-ID (its dots kept) and a
    // random part.
    let name = pcap.strip_prefix(&dir).unwrap().to_string_lossy().into_owned();
    let want = "2026-11-27/rec-1@10.0.0.5-0123456789abcdef.pcap";
    assert!(name.len() == want.len() && name.contains("/rec-1@10.0.0.5-"), "{name}");

    let frames = read_pcap(&pcap);
    let [relay_a, relay_b] = c.relay_ports();
    let a_addr = c.a.rtp.local_addr().unwrap();
    let b_addr = c.b.rtp.local_addr().unwrap();
    let rtp_from = |src: SocketAddr, port: u16| -> Vec<Vec<u8>> {
        frames
            .iter()
            .filter(|f| f.src == src && f.dst == SocketAddr::new(LO, port))
            .map(|f| f.payload.clone())
            .collect()
    };
    // Exactly what each endpoint sent while recording, decrypted, in order.
    assert_eq!(rtp_from(a_addr, relay_a), from_a, "the caller's RTP in the pcap");
    assert_eq!(rtp_from(b_addr, relay_b), from_b, "the callee's RTP in the pcap");
    // The caller's RTCP report, from its RTCP port to the relay's.
    let rtcp: Vec<&Frame> = frames.iter().filter(|f| f.dst.port() == relay_a + 1).collect();
    assert_eq!(rtcp.len(), 1, "one RTCP report");
    assert_eq!(rtcp[0].src, c.a.rtcp.local_addr().unwrap());
    assert_eq!(rtcp[0].payload[1], 200, "a plain sender report");
    assert_eq!(frames.len(), 2 * 17 + 1, "nothing else: not the paused part, not the other call");

    let text = std::fs::read_to_string(&json).unwrap();
    let meta: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(meta["call-id"], "rec-1@10.0.0.5");
    assert_eq!(meta["metadata"], "customer=42|queue=sales");
    assert_eq!(meta["tags"], serde_json::json!(["rec-1@10.0.0.5-a", "rec-1@10.0.0.5-b"]));
    assert_eq!(meta["pcap"], pcap.file_name().unwrap().to_string_lossy().as_ref());
    assert_eq!(meta["packets"], 35);
    let events: Vec<&str> = meta["events"].as_array().unwrap().iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(events, ["pause", "resume"]);
    let legs = &meta["streams"][0]["legs"];
    assert_eq!(legs[0]["local"], format!("127.0.0.1:{relay_a}"));
    assert_eq!(legs[1]["local"], format!("127.0.0.1:{relay_b}"));
    assert_eq!(legs[0]["suite"], "AES_CM_128_HMAC_SHA1_80");
    assert_eq!(legs[0]["codecs"][0]["name"], "PCMU");
    // No key of the call, in any form.
    for k in [c.a_key.as_ref().unwrap(), c.b_key.as_ref().unwrap()] {
        let inline = k.to_string();
        let b64 = inline.split("inline:").nth(1).unwrap().split(['|', ' ']).next().unwrap();
        assert!(!text.contains(b64), "a key in the metadata:\n{text}");
    }
    assert_eq!(d.metric("recordings_total{outcome=\"completed\"}"), Some(1.0), "{}", d.log_tail());
    assert_eq!(d.metric("recording_packets_total{outcome=\"written\"}"), Some(35.0));
}

#[test]
fn files_named_by_the_request_discarded_ones_and_a_deleted_call() {
    let dir = fresh_dir("named");
    let d = Daemon::start("recording-named", 1, &["--recording-dir", dir.to_str().unwrap()]);
    // recording-file names the pcap below the directory; `delete` completes it.
    let mut c = srtp_call(&d, "named", LO, true);
    ok(d.request(&rec("start recording", "named").with("recording-file", "tenant-7/named-call.pcap")));
    talk(&mut c, 3);
    ok(d.delete("named"));
    wait_for_file(&dir, "tenant-7/named-call.json");
    assert_eq!(read_pcap(&dir.join("tenant-7/named-call.pcap")).len(), 6);
    // discard-recording: nothing stays.
    let mut c = srtp_call(&d, "discarded", LO, true);
    ok(d.request(&rec("start recording", "discarded").with("recording-path", "gone")));
    talk(&mut c, 3);
    ok(d.request(&rec("stop recording", "discarded").with("flags", Value::List(vec!["discard-recording".into()]))));
    let deadline = Instant::now() + WAIT;
    while d.metric("recordings_total{outcome=\"discarded\"}") != Some(1.0) {
        assert!(Instant::now() < deadline, "not discarded: {}", d.log_tail());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(files(&dir.join("gone")).is_empty(), "{:?}", files(&dir));
    // A `delete` with discard-recording discards what the call recorded.
    let mut c = srtp_call(&d, "deleted", LO, true);
    ok(d.request(&rec("start recording", "deleted").with("recording-path", "gone-too")));
    talk(&mut c, 3);
    ok(d.request(&rec("delete", "deleted").with("flags", Value::List(vec!["discard-recording".into()]))));
    let deadline = Instant::now() + WAIT;
    while d.metric("recordings_total{outcome=\"discarded\"}") != Some(2.0) {
        assert!(Instant::now() < deadline, "not discarded: {}", d.log_tail());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(files(&dir.join("gone-too")).is_empty(), "{:?}", files(&dir));
    // `stop recording` with pause=yes pauses.
    ok(d.request(&rec("start recording", "discarded")));
    ok(d.request(&rec("stop recording", "discarded").with("pause", "yes")));
    let q = d.query("discarded");
    assert_eq!(q.get("recording").and_then(|r| r.get("call recording")).and_then(Value::as_int), Some(0), "{q:?}");
    // Bad requests: clear errors, nothing written.
    let e = d.request(&rec("start recording", "nope"));
    assert_eq!(e.get("error-reason").and_then(Value::as_str), Some("Unknown call-id 'nope'"));
    let e = d.request(&rec("start recording", "named-2").with("recording-file", "../../etc/cron.d/x"));
    assert_eq!(e.get("result").and_then(Value::as_str), Some("error"));
    let e = d.request(&rec("start recording", "discarded").with("recording-file", "../../etc/cron.d/x"));
    let reason = e.get("error-reason").and_then(Value::as_str).unwrap_or("");
    assert!(reason.contains("not a relative path below the recording directory"), "{e:?}");
}

/// A recording directory that fills up (a 64 KiB tmpfs): the call's media
/// goes on, every packet relayed; the recorder counts the failure and
/// completes what it wrote.
#[test]
fn a_full_disk_leaves_the_media_alone() {
    let dir = fresh_dir("full");
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "srtpgate-test", dir.to_str().unwrap()])
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        srtpgate_testkit::skip("mount", "a_full_disk_leaves_the_media_alone", "cannot mount a tmpfs here (not root?)");
        return;
    }
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(dir.clone());
    let d = Daemon::start("recording-full", 2, &["--recording-dir", dir.to_str().unwrap()]);
    let mut c = srtp_call(&d, "full", LO, true);
    ok(d.request(&rec("start recording", "full")));
    // 2 × 400 packets of ~200 bytes each in the pcap: more than 64 KiB.
    talk(&mut c, 400);
    ok(d.request(&rec("stop recording", "full")));
    let deadline = Instant::now() + WAIT;
    while d.metric("recordings_total{outcome=\"failed\"}").unwrap_or(0.0) < 1.0 {
        assert!(Instant::now() < deadline, "no failure counted: {}", d.log_tail());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(d.log_tail().contains("No space left on device"), "{}", d.log_tail());
    // The call relays on, and can still be asked about.
    talk(&mut c, 5);
    ok(d.query("full"));
}

/// 20 ms of a `hz` tone from sample `at`, PCMU.
fn pcmu_tone(hz: f64, at: usize) -> Vec<u8> {
    (at..at + 160)
        .map(|i| {
            let x = 8000.0 * (i as f64 * 2.0 * std::f64::consts::PI * hz / 8000.0).sin();
            srtpgate_codec::g711::ulaw_encode(x as i16)
        })
        .collect()
}

/// `n` packets each way, one every 20 ms as a phone sends: the caller's
/// 440 Hz, the callee's 1 kHz; each relayed.
fn tones(c: &mut Call, n: usize, at: &mut usize) {
    let t0 = Instant::now();
    for i in 0..n {
        for (from_a, hz) in [(true, 440.0), (false, 1000.0)] {
            let (from, to): (&mut Endpoint, &mut Endpoint) =
                if from_a { (&mut c.a, &mut c.b) } else { (&mut c.b, &mut c.a) };
            let (plain, wire) = from.next_rtp(&pcmu_tone(hz, *at));
            from.rtp.send_to(&wire, from.relay_rtp).unwrap();
            assert_eq!(to.recv_rtp("tone"), plain);
        }
        *at += 160;
        let next = t0 + std::time::Duration::from_millis(20 * (i as u64 + 1));
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}

/// Samples of a WAV and its rate.
fn wav(path: &Path) -> (Vec<i16>, u32) {
    let r = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let rate = r.spec().sample_rate;
    (r.into_samples::<i16>().map(Result::unwrap).collect(), rate)
}

/// (share of `hz`, RMS) of `pcm` from `from` to `to` seconds.
fn at_hz(pcm: &[i16], rate: u32, from: f64, to: f64, hz: f64) -> (f64, f64) {
    let s = &pcm[(from * rate as f64) as usize..(to * rate as f64) as usize];
    let energy: f64 = s.iter().map(|&x| (x as f64).powi(2)).sum();
    (srtpgate_codec::dtmf::power_share(s, rate, hz), (energy / s.len() as f64).sqrt())
}

/// With `--recording-audio single,mixed`: each party's audio decoded into a
/// WAV of its own and both mixed, placed by time: a second of each party's
/// tone, 0.4 s paused (silence), 0.6 s of tone again; each WAV as long as
/// the recording (within 40 ms), the two parties' in line.
#[test]
fn each_party_and_the_mix_as_wav() {
    let dir = fresh_dir("wav");
    let d = Daemon::start(
        "recording-wav",
        3,
        &["--recording-dir", dir.to_str().unwrap(), "--recording-audio", "single,mixed"],
    );
    let mut c = srtp_call(&d, "wav", LO, true);
    let mut at = 0;
    ok(d.request(&rec("start recording", "wav")));
    tones(&mut c, 50, &mut at);
    ok(d.request(&rec("pause recording", "wav")));
    tones(&mut c, 20, &mut at);
    ok(d.request(&rec("start recording", "wav")));
    tones(&mut c, 30, &mut at);
    ok(d.request(&rec("stop recording", "wav")));

    let json = wait_for_file(&dir, ".json");
    let meta: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let seconds = meta["seconds"].as_f64().unwrap();
    assert!((1.9..2.6).contains(&seconds), "recorded {seconds} s");
    let base = json.with_extension("");
    let file = |who: &str| base.with_file_name(format!("{}.{who}.wav", base.file_name().unwrap().to_string_lossy()));
    let audio = meta["audio"].as_array().expect("audio in the metadata");
    assert_eq!(audio.len(), 3, "{audio:?}");
    for (who, hz, other) in [("caller", 440.0, 1000.0), ("callee", 1000.0, 440.0)] {
        let (pcm, rate) = wav(&file(who));
        assert_eq!(rate, 8000);
        let len = pcm.len() as f64 / rate as f64;
        assert!((len - seconds).abs() < 0.04, "{who}: {len} s of audio for {seconds} s recorded");
        for (from, to) in [(0.2, 0.9), (1.6, 1.9)] {
            let (share, rms) = at_hz(&pcm, rate, from, to, hz);
            assert!(share > 0.95 && rms > 4000.0, "{who} {from}-{to} s: {share} of {hz} Hz at RMS {rms}");
            assert!(at_hz(&pcm, rate, from, to, other).0 < 0.01, "{who}: the other party's tone");
        }
        let (_, rms) = at_hz(&pcm, rate, 1.1, 1.3, hz);
        assert!(rms < 1.0, "{who}: {rms} RMS during the pause");
    }
    let (mix, rate) = wav(&file("mix"));
    assert!((mix.len() as f64 / rate as f64 - seconds).abs() < 0.04);
    let (a, rms) = at_hz(&mix, rate, 0.2, 0.9, 440.0);
    let (b, _) = at_hz(&mix, rate, 0.2, 0.9, 1000.0);
    assert!(a > 0.4 && b > 0.4 && a + b > 0.95 && rms > 5000.0, "the mix: {a} at 440 Hz, {b} at 1 kHz, RMS {rms}");
    assert!(at_hz(&mix, rate, 1.1, 1.3, 440.0).1 < 1.0, "the mix during the pause");
}

/// A subscriber's SDP answer: one m-line per endpoint (`None`: rejected),
/// each accepting `pts` with its own key `keys[i]` (none: plain RTP).
fn subscriber_answer(ends: &[Option<&Endpoint>], proto: &str, pts: &str, keys: &[Option<CryptoAttr>]) -> String {
    let mut s = String::from("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=recorder\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n");
    for (e, k) in ends.iter().zip(keys) {
        let port = e.map_or(0, |e| e.port());
        s.push_str(&format!("m=audio {port} {proto} {pts}\r\na=recvonly\r\n"));
        if let Some(k) = k {
            s.push_str(&format!("a=crypto:{k}\r\n"));
        }
    }
    s
}

fn sub(command: &str, call: &str) -> Value {
    Value::dict().with("command", command).with("call-id", call)
}

/// (sequence number, SSRC, payload) of a plain RTP packet.
fn seq_ssrc_payload(p: &[u8]) -> (u16, u32, Vec<u8>) {
    (u16::from_be_bytes([p[2], p[3]]), u32::from_be_bytes([p[8], p[9], p[10], p[11]]), p[12..].to_vec())
}

#[test]
fn subscribers_get_each_party_under_their_own_keys_until_they_unsubscribe() {
    let d = Daemon::start("subscribe", 4, &[]);
    let id = "fork-1@10.0.0.5";
    let mut c = srtp_call(&d, id, LO, false);

    // Bad requests first: clear errors, nothing made.
    let r = d.request(&sub("subscribe request", "no-such-call").with("flags", vec![Value::from("all")]));
    assert_eq!(result(&r), "error", "{}", show(&r));
    let r = d.request(&sub("unsubscribe", id).with("to-tag", "nobody"));
    assert_eq!(r.get("error-reason").and_then(Value::as_str), Some("To-tag not found"), "{}", show(&r));
    let r = d.request(&sub("subscribe request", id).with("from-tag", "stranger"));
    assert_eq!(result(&r), "error", "{}", show(&r));

    // A SIPREC recorder subscribes to both parties.
    let r = d.request(&sub("subscribe request", id).with("flags", vec![Value::from("all"), Value::from("siprec")]));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_tag = r.get("to-tag").and_then(Value::as_str).expect("a to-tag").to_owned();
    assert_eq!(to_tag.len(), 32, "a generated tag");
    let from: Vec<&str> = match r.get("from-tags") {
        Some(Value::List(l)) => l.iter().filter_map(Value::as_str).collect(),
        _ => panic!("from-tags: {}", show(&r)),
    };
    assert_eq!(from, [c.from_tag.as_str(), c.to_tag.as_str()]);
    let tag_medias: Vec<&str> = match r.get("tag-medias") {
        Some(Value::List(l)) => l.iter().filter_map(|t| t.get("tag").and_then(Value::as_str)).collect(),
        _ => panic!("tag-medias: {}", show(&r)),
    };
    assert_eq!(tag_medias, from, "SIPREC's tag-medias");
    let labelled = r.get("media-labels").and_then(|l| l.get("2")).and_then(|m| m.get("tag")).and_then(Value::as_str);
    assert_eq!(labelled, Some(c.to_tag.as_str()), "media-labels: {}", show(&r));
    let offer = reply_sdp(&r);
    assert_eq!(offer.media().len(), 2, "one m-line per party");
    let mut recorder = [Endpoint::new(LO), Endpoint::new(LO)];
    let mut mine = Vec::new();
    for (i, m) in offer.media().iter().enumerate() {
        assert_eq!(m.proto(), "RTP/SAVP");
        assert_eq!(m.formats(), ["0", "8", "101"], "the party's own formats");
        assert!(m.lines().iter().any(|l| l == "a=sendonly"), "sendonly");
        assert!(m.lines().iter().any(|l| *l == format!("a=label:{}", i + 1)), "SIPREC's a=label");
        let keys: Vec<CryptoAttr> = m.crypto().into_iter().map(|k| k.expect("valid a=crypto")).collect();
        let offered = keys[0].clone();
        // Fresh keys: none of those the relay gave the call's endpoints.
        for k in cryptos(&c.offer_out).iter().chain(&cryptos(&c.answer_out)).chain(&[c.a_key.clone().unwrap()]) {
            assert!(keys.iter().all(|o| o.keys[0].key_salt != k.keys[0].key_salt), "a key of the call offered");
        }
        recorder[i].recv_key(Some(&offered));
        mine.push(Some(key(offered.tag, offered.suite)));
    }
    let ends: Vec<Option<&Endpoint>> = recorder.iter().map(Some).collect();
    let answer = subscriber_answer(&ends, "RTP/SAVP", "0 8 101", &mine);
    // An answer that leaves out a codec is refused: no transcoding towards
    // a subscriber.
    let short = subscriber_answer(&ends, "RTP/SAVP", "0 101", &mine);
    let r = d.request(&sub("subscribe answer", id).with("to-tag", to_tag.as_str()).with("sdp", short.as_str()));
    assert_eq!(result(&r), "error", "{}", show(&r));
    // Refused answers and requests leave the subscription as it was.
    let one = subscriber_answer(&ends[..1], "RTP/SAVP", "0 8 101", &mine[..1]);
    let foreign =
        [Some(key(1, srtp::Suite::AES_CM_128_HMAC_SHA1_80)), Some(key(1, srtp::Suite::AES_CM_128_HMAC_SHA1_80))];
    let foreign = foreign.map(|k| {
        k.map(|mut k| {
            k.tag = 99;
            k
        })
    });
    let unkeyed = subscriber_answer(&ends, "RTP/SAVP", "0 8 101", &foreign);
    for (sdp, why) in [(one.as_str(), "m-lines"), (unkeyed.as_str(), "a=crypto")] {
        let r = d.request(&sub("subscribe answer", id).with("to-tag", to_tag.as_str()).with("sdp", sdp));
        let reason = r.get("error-reason").and_then(Value::as_str).unwrap_or("");
        assert!(reason.contains(why), "{why}: {}", show(&r));
    }
    let r = d.request(&sub("subscribe answer", id).with("to-tag", to_tag.as_str()).with("sdp", answer.as_str()));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let r = d.request(
        &sub("subscribe request", id)
            .with("from-tag", c.from_tag.as_str())
            .with("transport-protocol", "UDP/TLS/RTP/SAVP"),
    );
    let reason = r.get("error-reason").and_then(Value::as_str).unwrap_or("");
    assert!(reason.contains("DTLS-SRTP towards a subscriber is not supported"), "{}", show(&r));
    let r = d.request(&sub("subscribe answer", id).with("to-tag", to_tag.as_str()).with("sdp", answer.as_str()));
    let reason = r.get("error-reason").and_then(Value::as_str).unwrap_or("");
    assert!(reason.contains("answered already"), "a second answer: {}", show(&r));

    // A second subscriber at once: the caller only, in plain RTP.
    let r = d.request(
        &sub("subscribe request", id)
            .with("from-tag", c.from_tag.as_str())
            .with("to-tag", "monitor")
            .with("transport-protocol", "RTP/AVP"),
    );
    assert_eq!(result(&r), "ok", "{}", show(&r));
    assert_eq!(r.get("from-tag").and_then(Value::as_str), Some(c.from_tag.as_str()));
    let plain = reply_sdp(&r);
    assert_eq!(plain.media().len(), 1);
    assert_eq!(plain.media()[0].proto(), "RTP/AVP");
    assert!(plain.media()[0].crypto().is_empty());
    let monitor = Endpoint::new(LO);
    let answer = subscriber_answer(&[Some(&monitor)], "RTP/AVP", "0 8 101", &[None]);
    let r = d.request(&sub("subscribe answer", id).with("to-tag", "monitor").with("sdp", answer.as_str()));
    assert_eq!(result(&r), "ok", "{}", show(&r));

    // Each party's packets reach the other party as before, and a copy
    // reaches the recorder's m-line of that party under the recorder's
    // key, with the fork's own SSRC.
    let mut copies: [Vec<(u16, u32, Vec<u8>)>; 2] = [Vec::new(), Vec::new()];
    for round in 0..12 {
        if round == 6 {
            // The caller's phone restarts its stream (a re-INVITE, a new
            // SSRC, another numbering): the recorder's copy runs on.
            c.a.ssrc ^= 0x5a5a_5a5a;
            c.a.skip(20_000);
        }
        let pa = c.a.send_rtp("caller");
        assert_eq!(c.b.recv_rtp("to the callee"), pa);
        let pb = c.b.send_rtp("callee");
        assert_eq!(c.a.recv_rtp("to the caller"), pb);
        for (i, p) in [(0, &pa), (1, &pb)] {
            let got = recorder[i].recv_rtp("the recorder's copy");
            let (seq, ssrc, payload) = seq_ssrc_payload(&got);
            assert_eq!(payload, seq_ssrc_payload(p).2, "party {i}: the party's payload, decrypted by the recorder");
            copies[i].push((seq, ssrc, payload));
        }
        let (wire, _) = recv_within(&monitor.rtp, WAIT).expect("the monitor's plain copy");
        assert_eq!(seq_ssrc_payload(&wire).2, seq_ssrc_payload(&pa).2, "plain RTP to the monitor");
    }
    for (i, got) in copies.iter().enumerate() {
        let ssrc = got[0].1;
        assert!(ssrc != c.a.ssrc && ssrc != c.b.ssrc && got.iter().all(|g| g.1 == ssrc), "party {i}: one own SSRC");
        for w in got.windows(2) {
            assert_eq!(w[1].0, w[0].0.wrapping_add(1), "party {i}: sequence numbers run on");
        }
    }
    assert_ne!(copies[0][0].1, copies[1][0].1, "each copy its own SSRC");

    // `query` lists the subscribers and what they were sent.
    let q = d.query(id);
    let tags = q.get("tags").expect("tags");
    let rec = tags.get(&to_tag).unwrap_or_else(|| panic!("the recorder in tags: {}", show(&q)));
    let medias = match rec.get("medias") {
        Some(Value::List(l)) => l,
        _ => panic!("{}", show(&q)),
    };
    assert_eq!(medias.len(), 2);
    for m in medias {
        assert_eq!(m.get("packets sent").and_then(Value::as_int), Some(12), "{}", show(&q));
    }
    let subscribers = tags.get(&c.from_tag).and_then(|t| t.get("subscribers")).expect("the caller's subscribers");
    assert!(matches!(subscribers, Value::List(l) if l.len() == 2), "{}", show(&q));

    // Unsubscribed: the recorder gets nothing more, its ports are free,
    // the call and the other subscriber go on.
    let ports: Vec<u16> = offer.media().iter().map(|m| m.port()).collect();
    let r = d.request(&sub("unsubscribe", id).with("to-tag", to_tag.as_str()));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    for p in ports {
        wait_bindable(LO, p);
    }
    let pa = c.a.send_rtp("caller");
    assert_eq!(c.b.recv_rtp("to the callee"), pa);
    assert!(recv_within(&monitor.rtp, WAIT).is_some(), "the monitor still gets its copy");
    for r in &recorder {
        assert_quiet(&r.rtp, "an unsubscribed recorder");
    }
    // `delete` ends the other subscription with the call.
    let monitor_port = plain.media()[0].port();
    d.delete(id);
    wait_bindable(LO, monitor_port);
}
