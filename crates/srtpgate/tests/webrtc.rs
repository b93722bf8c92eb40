//! WebRTC legs through `srtpgate serve`: a browser-like endpoint (ICE
//! controlling agent with one socket, DTLS-SRTP, rtcp-mux: srtpgate-webrtc's
//! client machine, independent of the daemon's call code)
//! calls an SDES phone and is called by one, with the NG flags Kamailio
//! sends for WebRTC bridging. Checked: the SDP each side receives, ICE
//! checks answered and the media peer chosen by them, the handshake in both
//! DTLS roles, media both ways, a certificate that is not the announced one
//! refused, and bad ICE credentials refused, each with its counter.

use srtp::{Context, CpuEngine, Suite};
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_testkit::daemon::*;
use srtpgate_webrtc::dtls::Identity;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

mod browser;
use browser::Browser;

/// One labelled series of a metric (`name{label}`), `None` when absent.
fn series(d: &Daemon, name: &str, label: &str) -> Option<f64> {
    let want = format!("srtpgate_{name}{{{label}}} ");
    d.metrics().lines().find_map(|l| l.strip_prefix(&want).map(|v| v.trim().parse().expect("metric value")))
}

/// Polls a series until it has `want`.
fn wait_series(d: &Daemon, name: &str, label: &str, want: f64) {
    let deadline = Instant::now() + WAIT;
    while series(d, name, label) != Some(want) {
        assert!(Instant::now() < deadline, "{name}{{{label}}} is {:?}, want {want}", series(d, name, label));
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn flags(list: &[&str]) -> Value {
    Value::List(list.iter().map(|s| Value::from(*s)).collect())
}

/// What Kamailio sends for the leg towards a browser, and towards a phone.
fn to_browser(v: Value) -> Value {
    v.with("ICE", "force")
        .with("transport-protocol", "UDP/TLS/RTP/SAVPF")
        .with("rtcp-mux", flags(&["offer", "require"]))
        .with("SDES", flags(&["off"]))
        .with("flags", flags(&["generate-mid"]))
}

fn to_phone(v: Value) -> Value {
    v.with("ICE", "remove")
        .with("DTLS", "off")
        .with("transport-protocol", "RTP/SAVP")
        .with("rtcp-mux", flags(&["demux"]))
}

/// The browser's offer to the phone and the phone's SDES answer, with
/// Kamailio's flags each way; the browser learns the relay's answer.
/// Returns the relay's keys offered to the phone, and the phone's key.
fn browser_calls_phone(d: &Daemon, b: &mut Browser, phone: &mut Endpoint, call: &str) -> (Vec<CryptoAttr>, CryptoAttr) {
    let r = d.request(&to_phone(offer(call, "browser", &b.sdp("actpass"))));
    let to_p = reply_sdp(&r);
    let offered = cryptos(&to_p);
    phone.recv_key(Some(&offered[0]));
    phone.relay(&to_p);
    let pk = key(offered[0].tag, offered[0].suite);
    phone.send_key(Some(&pk));
    let a = phone.sdp_spec("RTP/SAVP", std::slice::from_ref(&pk)).text();
    let r = d.request(&to_browser(answer(call, "browser", "phone", &a)));
    b.learn(&reply_sdp(&r));
    (offered, pk)
}

fn media_both_ways(b: &mut Browser, phone: &mut Endpoint) {
    for i in 0..5 {
        let sent = b.send_rtp(&format!("browser {i}"));
        assert_eq!(phone.recv_rtp("browser to phone"), sent, "browser to phone, packet {i}");
        let sent = phone.send_rtp(&format!("phone {i}"));
        assert_eq!(b.recv_rtp("phone to browser"), sent, "phone to browser, packet {i}");
    }
}

#[test]
fn browser_calls_a_phone_through_the_relay() {
    let d = Daemon::start("webrtc-b2p", 16, &[]);
    let mut b = Browser::new();
    let mut phone = Endpoint::new(LO);
    // The browser's offer, towards the phone.
    let r = d.request(&to_phone(offer("wb1", "browser", &b.sdp("actpass"))));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_p = reply_sdp(&r);
    let m = &to_p.media()[0];
    assert_eq!(m.proto(), "RTP/SAVP", "{to_p}");
    for gone in ["ice-ufrag", "ice-pwd", "candidate", "fingerprint", "setup", "rtcp-mux"] {
        assert!(m.attr(gone).is_none(), "a={gone} reached the phone: {to_p}");
    }
    assert!(to_p.session_attr("ice-lite").is_none());
    let offered = cryptos(&to_p);
    assert!(!offered.is_empty(), "the phone got no a=crypto: {to_p}");
    phone.recv_key(Some(&offered[0]));
    phone.relay(&to_p);
    // The phone answers with its key.
    let pk = key(offered[0].tag, offered[0].suite);
    phone.send_key(Some(&pk));
    let a = phone.sdp_spec("RTP/SAVP", std::slice::from_ref(&pk)).text();
    let r = d.request(&to_browser(answer("wb1", "browser", "phone", &a)));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_b = reply_sdp(&r);
    let m = &to_b.media()[0];
    assert_eq!(m.proto(), "UDP/TLS/RTP/SAVPF");
    assert!(to_b.session_attr("ice-lite").is_some(), "{to_b}");
    assert_eq!(m.attr("setup"), Some("passive"), "an actpass offer is answered passive");
    assert!(m.attr("fingerprint").unwrap().starts_with("sha-256 "));
    assert!(m.attr("rtcp-mux").is_some());
    assert_eq!(m.attr("mid"), Some("0"), "the answer keeps the offer's mid");
    assert!(m.attr("crypto").is_none());
    assert!(m.attrs("candidate").next().unwrap().ends_with("typ host"));
    b.learn(&to_b);
    // Media before DTLS finishes goes nowhere.
    phone.send_rtp("too early");
    // ICE, then DTLS with the browser as the client.
    assert_eq!(b.check(), Ok(b.sock().local_addr().unwrap()));
    let keys = b.handshake(true).expect("DTLS handshake");
    assert_eq!(keys.suite, Suite::AEAD_AES_256_GCM, "dimpl's first preference");
    b.keyed(&keys);
    media_both_ways(&mut b, &mut phone);
    assert_eq!(series(&d, "dtls_handshakes_total", "outcome=\"completed\""), Some(1.0));
    assert!(series(&d, "stun_checks_total", "result=\"answered\"").unwrap() >= 1.0);
    let forwarded = series(&d, "webrtc_signals_total", "worker=\"0\",outcome=\"forwarded\"").unwrap();
    assert!(forwarded >= 3.0, "a check and the handshake went to the WebRTC thread: {forwarded}");
    let q = d.query("wb1");
    assert!(show(&q).contains("connected"), "{}", show(&q));
    assert!(drops(&q, "phone", "no_destination") >= 1, "the early packet waited for no keys: {}", show(&q));
    d.delete("wb1");
}

#[test]
fn phone_calls_a_browser_and_the_relay_is_the_dtls_client() {
    let d = Daemon::start("webrtc-p2b", 17, &[]);
    let mut b = Browser::new();
    let mut phone = Endpoint::new(LO);
    let pk = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    phone.send_key(Some(&pk));
    let o = phone.sdp_spec("RTP/SAVP", std::slice::from_ref(&pk)).text();
    let r = d.request(&to_browser(offer("wp1", "phone", &o)));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_b = reply_sdp(&r);
    let m = &to_b.media()[0];
    assert_eq!(m.proto(), "UDP/TLS/RTP/SAVPF");
    assert_eq!(m.attr("setup"), Some("actpass"));
    assert_eq!(m.attr("mid"), Some("1"), "generate-mid (counted from 1, as rtpengine)");
    assert!(m.attr("rtcp-mux").is_some() && m.attr("crypto").is_none() && m.attr("ice-pwd").is_some());
    assert!(to_b.session_attr("ice-lite").is_some());
    b.learn(&to_b);
    // The browser answers passive: the relay must send the ClientHello
    // once the browser's address is known from its check.
    let r = d.request(&to_phone(answer("wp1", "phone", "browser", &b.sdp("passive"))));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_p = reply_sdp(&r);
    let m = &to_p.media()[0];
    assert_eq!(m.proto(), "RTP/SAVP");
    assert!(m.attr("fingerprint").is_none() && m.attr("ice-ufrag").is_none() && m.attr("mid").is_none());
    let relay_key = cryptos(&to_p).into_iter().next().expect("the phone's answer has the relay's key");
    phone.recv_key(Some(&relay_key));
    phone.relay(&to_p);
    assert!(b.check().is_ok());
    let keys = b.handshake(false).expect("DTLS handshake with the relay as client");
    b.keyed(&keys);
    media_both_ways(&mut b, &mut phone);
    // A re-INVITE with the same fingerprint keeps the association: no new
    // handshake, media flows on.
    let r = d.request(&to_browser(offer("wp1", "phone", &o)));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let r = d.request(&to_phone(answer("wp1", "phone", "browser", &b.sdp("passive"))));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    media_both_ways(&mut b, &mut phone);
    assert_eq!(series(&d, "dtls_handshakes_total", "outcome=\"started\""), Some(1.0));
    d.delete("wp1");
}

#[test]
fn a_certificate_other_than_the_announced_one_and_bad_ice_credentials_are_refused() {
    let d = Daemon::start("webrtc-mitm", 23, &[]);
    let mut b = Browser::new();
    b.client.announce_fingerprint(Identity::generate().unwrap().fingerprint());
    let mut phone = Endpoint::new(LO);
    browser_calls_phone(&d, &mut b, &mut phone, "wm1");
    // A check with the wrong password: 401, counted, no peer chosen.
    assert_eq!(b.check_with(Some("not-the-relays-password-at-all")), Err(401));
    assert_eq!(series(&d, "stun_checks_total", "result=\"refused\""), Some(1.0));
    assert!(b.check().is_ok());
    // The handshake runs with a certificate the SDP did not announce.
    assert!(b.handshake(true).is_err(), "the relay must not finish the handshake");
    wait_series(&d, "dtls_handshakes_total", "outcome=\"fingerprint_mismatch\"", 1.0);
    assert_eq!(series(&d, "dtls_handshakes_total", "outcome=\"completed\""), Some(0.0));
    // No keys: the phone's media reaches nobody.
    phone.send_rtp("nobody hears this");
    let deadline = Instant::now() + Duration::from_millis(300);
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        if let Ok((n, _)) = b.sock().recv_from(&mut buf) {
            assert!(!(128..=191).contains(&buf[0]), "media reached the browser without keys ({n} bytes)");
        }
    }
    d.delete("wm1");
}

#[test]
fn the_load_generator_plays_browsers() {
    let d = Daemon::start("webrtc-loadgen", 0, &[]);
    let json = std::env::temp_dir().join(format!("srtpgate-lg-webrtc-{}.json", std::process::id()));
    let out = std::process::Command::new(srtpgate_testkit::daemon::bench_bin())
        .args(["loadgen", "--ng", &d.ng.to_string(), "--calls", "8", "--duration", "1", "--webrtc", "--quiet"])
        .arg("--json")
        .arg(&json)
        .output()
        .expect("loadgen runs");
    assert!(out.status.success(), "loadgen: {}", String::from_utf8_lossy(&out.stderr));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(r["setup_errors"], 0, "{r}");
    assert_eq!(r["lost"], 0);
    assert!(r["packets_received"].as_u64().unwrap() >= 8 * 2 * 40, "{}", r["packets_received"]);
    assert_eq!(series(&d, "dtls_handshakes_total", "outcome=\"completed\""), Some(8.0));
    assert_eq!(series(&d, "stun_checks_total", "result=\"answered\""), Some(8.0));
}

/// The browser's SDP with audio and video in one BUNDLE group, as a browser
/// with `bundlePolicy: "max-bundle"` writes it: the video section
/// `a=bundle-only` with port 0 (`same_port`: the video section repeats the
/// audio's port instead and both offer the mid header extension, as
/// Chrome's offers do).
fn bundled_sdp(b: &mut Browser, setup: &str, same_port: bool) -> String {
    let mut audio = b.sdp(setup).replace("a=group:BUNDLE 0", "a=group:BUNDLE 0 1");
    if same_port {
        audio = audio.replace("a=mid:0\r\n", "a=mid:0\r\na=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r\n");
    }
    let fp = b.client.fingerprint().to_string();
    let creds = b.client.creds();
    let port = if same_port { b.port() } else { 0 };
    let mut video = vec![
        format!("m=video {port} UDP/TLS/RTP/SAVPF 96"),
        "c=IN IP4 127.0.0.1".to_string(),
        format!("a=ice-ufrag:{}", creds.ufrag),
        format!("a=ice-pwd:{}", creds.pwd),
        format!("a=fingerprint:{fp}"),
        format!("a=setup:{setup}"),
        "a=mid:1".into(),
        "a=sendrecv".into(),
        "a=rtcp-mux".into(),
        "a=rtpmap:96 VP8/90000".into(),
        "a=rtcp-fb:96 nack pli".into(),
    ];
    if same_port {
        video.push("a=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid".into());
    } else {
        video.push("a=bundle-only".into());
    }
    video.push(String::new());
    audio + &video.join("\r\n")
}

/// A phone's answer with audio (`pa`) and video (`pv`) m-lines, SDES.
fn phone_av_sdp(pa: &Endpoint, ka: &CryptoAttr, pv: &Endpoint, kv: &CryptoAttr) -> String {
    let mut s = pa.sdp_spec("RTP/SAVP", std::slice::from_ref(ka)).text();
    s.push_str(&format!(
        "m=video {} RTP/SAVP 96\r\na=rtpmap:96 VP8/90000\r\na=sendrecv\r\na=rtcp:{}\r\na=crypto:{kv}\r\n",
        pv.port(),
        pv.rtcp_port()
    ));
    s
}

/// An RTP packet without its header extension, and the value of element
/// `id` of that extension (one-byte form) if there was one.
fn without_extension(p: &[u8], id: u8) -> (Vec<u8>, Option<Vec<u8>>) {
    if p[0] & 0x10 == 0 {
        return (p.to_vec(), None);
    }
    let head = 12 + 4 * (p[0] & 0x0f) as usize;
    assert_eq!(&p[head..head + 2], &[0xbe, 0xde], "a one-byte header extension");
    let end = head + 4 + 4 * u16::from_be_bytes([p[head + 2], p[head + 3]]) as usize;
    let (mut i, mut found) = (head + 4, None);
    while i < end && p[i] != 0 {
        let len = (p[i] & 0x0f) as usize + 1;
        if p[i] >> 4 == id {
            found = Some(p[i + 1..i + 1 + len].to_vec());
        }
        i += 1 + len;
    }
    let mut out = p[..head].to_vec();
    out[0] &= !0x10;
    out.extend_from_slice(&p[end..]);
    (out, found)
}

/// RTP of the browser's video sender (its own SSRC and context).
fn video_rtp(ctx: &mut Context<CpuEngine>, seq: u16) -> (Vec<u8>, Vec<u8>) {
    let mut payload = format!("video {seq}").into_bytes();
    payload.resize(900, 0x11);
    let mut plain = rtp(0x71de0, seq, &payload);
    plain[1] = 96;
    let mut out = vec![0u8; plain.len() + 64];
    let n = ctx.protect_rtp(&plain, &mut out).unwrap();
    out.truncate(n);
    (plain, out)
}

#[test]
fn a_browser_bundles_audio_and_video_on_one_port() {
    for (call, same_port) in [("wbun1", false), ("wbun2", true)] {
        let d = Daemon::start("webrtc-bundle", if same_port { 2 } else { 1 }, &[]);
        let mut b = Browser::new();
        let (mut pa, mut pv) = (Endpoint::new(LO), Endpoint::new(LO));
        let r = d.request(&to_phone(offer(call, "browser", &bundled_sdp(&mut b, "actpass", same_port))));
        assert_eq!(result(&r), "ok", "{}", show(&r));
        let to_p = reply_sdp(&r);
        assert_eq!(to_p.media().len(), 2);
        let (ma, mv) = (&to_p.media()[0], &to_p.media()[1]);
        assert!(mv.port() != 0 && mv.port() != ma.port(), "the phone gets a port per m-line: {to_p}");
        assert!(to_p.session_attr("group").is_none(), "no BUNDLE towards the phone: {to_p}");
        assert!(mv.attr("bundle-only").is_none(), "{to_p}");
        let ka_relay = cryptos(&to_p)[0].clone();
        let kv_relay = mv.crypto()[0].clone().unwrap();
        pa.recv_key(Some(&ka_relay));
        pv.recv_key(Some(&kv_relay));
        pa.relay(&to_p);
        let ip = to_p.media_connection(1).unwrap();
        pv.relay_rtp = SocketAddr::new(ip, mv.port());
        pv.relay_rtcp = SocketAddr::new(ip, mv.rtcp().map(|r| r.0).unwrap_or(mv.port() + 1));
        let (ka, kv) = (key(ka_relay.tag, ka_relay.suite), key(kv_relay.tag, kv_relay.suite));
        pa.send_key(Some(&ka));
        pv.send_key(Some(&kv));
        let r = d.request(&to_browser(answer(call, "browser", "phone", &phone_av_sdp(&pa, &ka, &pv, &kv))));
        assert_eq!(result(&r), "ok", "{}", show(&r));
        let to_b = reply_sdp(&r);
        assert_eq!(to_b.session_attr("group"), Some("BUNDLE 0 1"), "the browser's group accepted: {to_b}");
        let (ma, mv) = (&to_b.media()[0], &to_b.media()[1]);
        assert_eq!(mv.port(), ma.port(), "one transport for both m-lines: {to_b}");
        assert_eq!(mv.attr("ice-ufrag"), ma.attr("ice-ufrag"));
        assert_eq!(mv.attr("fingerprint"), ma.attr("fingerprint"));
        assert_eq!((ma.attr("mid"), mv.attr("mid")), (Some("0"), Some("1")));
        assert!(mv.attr("rtcp-mux").is_some() && mv.attr("bundle-only").is_none(), "{to_b}");
        let ext = same_port.then_some("4 urn:ietf:params:rtp-hdrext:sdes:mid");
        assert_eq!((ma.attr("extmap"), mv.attr("extmap")), (ext, ext), "{to_b}");
        b.learn(&to_b);
        assert!(b.check().is_ok());
        let keys = b.handshake(true).expect("one DTLS handshake for the group");
        b.keyed(&keys);
        let mut vtx = Context::new(keys.local_policy().unwrap(), CpuEngine::new()).unwrap();
        let mut vrx = Context::new(keys.remote_policy().unwrap(), CpuEngine::new()).unwrap();
        for i in 0..4u16 {
            // Audio and video from the browser's one socket reach the
            // phone's audio and video ports.
            let sent = b.send_rtp(&format!("audio {i}"));
            assert_eq!(pa.recv_rtp("browser audio"), sent);
            let (plain, wire) = video_rtp(&mut vtx, 500 + i);
            b.sock().send_to(&wire, b.relay()).unwrap();
            assert_eq!(pv.recv_rtp("browser video"), plain, "video {i}");
            // And both of the phone's streams reach the browser's socket.
            // Towards a browser that offered the mid extension, the relay
            // writes each stream's mid into its RTP (the phone's SSRCs are
            // in no SDP: the browser tells the streams apart by it).
            let want_mid = |mid: &str| same_port.then(|| mid.as_bytes().to_vec());
            let sent = pa.send_rtp(&format!("phone audio {i}"));
            let (got, mid) = without_extension(&b.recv_rtp("phone audio"), 4);
            assert_eq!((got, mid), (sent, want_mid("0")));
            let sent = pv.send_rtp(&format!("phone video {i}"));
            let mut got = None;
            let mut buf = [0u8; 2048];
            let deadline = Instant::now() + WAIT;
            while got.is_none() && Instant::now() < deadline {
                if let Ok((n, from)) = b.sock().recv_from(&mut buf) {
                    assert_eq!(from, b.relay(), "video leaves by the bundle's port");
                    let mut out = vec![0u8; n];
                    let m = vrx.unprotect_rtp(&buf[..n], &mut out).expect("video under the bundle's keys");
                    out.truncate(m);
                    got = Some(out);
                }
            }
            let (got, mid) = without_extension(&got.expect("phone video"), 4);
            assert_eq!((got, mid), (sent, want_mid("1")), "phone video {i}");
        }
        // RTCP of the browser's video sender goes to the phone's video leg.
        let mut sr = rtcp_sr(0x71de0, 1);
        let mut out = vec![0u8; sr.len() + 64];
        let n = vtx.protect_rtcp(&sr, &mut out).unwrap();
        b.sock().send_to(&out[..n], b.relay()).unwrap();
        pv.mux = false;
        assert_eq!(pv.recv_rtcp("browser video RTCP"), std::mem::take(&mut sr));
        assert_quiet(&pa.rtcp, "the phone's audio RTCP port");
        assert_eq!(series(&d, "dtls_handshakes_total", "outcome=\"started\""), Some(1.0), "one association");
        let q = show(&d.query(call));
        assert!(q.contains("\"bundled with\": 1"), "{q}");
        d.delete(call);
    }
}

#[test]
fn bundle_reject_gives_each_m_line_its_transport() {
    let d = Daemon::start("webrtc-bundle-reject", 3, &[]);
    let mut b = Browser::new();
    let (pa, pv) = (Endpoint::new(LO), Endpoint::new(LO));
    let r = d.request(&to_phone(offer("wbr", "browser", &bundled_sdp(&mut b, "actpass", true))));
    let to_p = reply_sdp(&r);
    let (ka_relay, kv_relay) = (cryptos(&to_p)[0].clone(), to_p.media()[1].crypto()[0].clone().unwrap());
    let (ka, kv) = (key(ka_relay.tag, ka_relay.suite), key(kv_relay.tag, kv_relay.suite));
    let req = to_browser(answer("wbr", "browser", "phone", &phone_av_sdp(&pa, &ka, &pv, &kv)))
        .with("flags", flags(&["generate-mid", "BUNDLE-reject"]));
    let r = d.request(&req);
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_b = reply_sdp(&r);
    assert!(to_b.session_attr("group").is_none(), "{to_b}");
    let (ma, mv) = (&to_b.media()[0], &to_b.media()[1]);
    assert!(mv.port() != ma.port() && mv.attr("ice-ufrag") != ma.attr("ice-ufrag"), "{to_b}");
    d.delete("wbr");
}

#[test]
fn bundle_offer_groups_the_m_lines_towards_a_browser() {
    let d = Daemon::start("webrtc-bundle-offer", 4, &[]);
    let mut b = Browser::new();
    let (mut pa, mut pv) = (Endpoint::new(LO), Endpoint::new(LO));
    let (ka, kv) = (key(1, Suite::AES_CM_128_HMAC_SHA1_80), key(1, Suite::AES_CM_128_HMAC_SHA1_80));
    pa.send_key(Some(&ka));
    pv.send_key(Some(&kv));
    let req = to_browser(offer("wbo", "phone", &phone_av_sdp(&pa, &ka, &pv, &kv)))
        .with("flags", flags(&["generate-mid", "BUNDLE-offer"]));
    let r = d.request(&req);
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_b = reply_sdp(&r);
    assert_eq!(to_b.session_attr("group"), Some("BUNDLE 1 2"), "{to_b}");
    let (ma, mv) = (&to_b.media()[0], &to_b.media()[1]);
    assert!(ma.port() != mv.port(), "each m-line its own port until the answer bundles: {to_b}");
    b.learn(&to_b);
    // The browser accepts the group: one port, mids echoed.
    let a = bundled_sdp(&mut b, "passive", true)
        .replace("a=extmap:4 ", "a=extmap:1 ")
        .replace("a=group:BUNDLE 0 1", "a=group:BUNDLE 1 2")
        .replace("a=mid:1", "a=mid:2")
        .replace("a=mid:0", "a=mid:1");
    let r = d.request(&to_phone(answer("wbo", "phone", "browser", &a)));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_p = reply_sdp(&r);
    assert!(to_p.session_attr("group").is_none(), "{to_p}");
    pa.recv_key(Some(&cryptos(&to_p)[0]));
    pv.recv_key(Some(&to_p.media()[1].crypto()[0].clone().unwrap()));
    pa.relay(&to_p);
    let ip = to_p.media_connection(1).unwrap();
    pv.relay_rtp = SocketAddr::new(ip, to_p.media()[1].port());
    assert!(b.check().is_ok());
    let keys = b.handshake(false).expect("DTLS with the relay as client, on the group's first port");
    b.keyed(&keys);
    let mut vtx = Context::new(keys.local_policy().unwrap(), CpuEngine::new()).unwrap();
    let mut vrx = Context::new(keys.remote_policy().unwrap(), CpuEngine::new()).unwrap();
    // The browser's answer took the mid extension the relay offered: its
    // RTP carries each stream's mid.
    assert_eq!(to_b.media()[1].attr("extmap"), Some("1 urn:ietf:params:rtp-hdrext:sdes:mid"), "{to_b}");
    for i in 0..3 {
        let sent = b.send_rtp(&format!("browser {i}"));
        assert_eq!(pa.recv_rtp("browser to phone"), sent);
        let sent = pa.send_rtp(&format!("phone {i}"));
        assert_eq!(without_extension(&b.recv_rtp("phone to browser"), 1), (sent, Some(b"1".to_vec())));
    }
    for i in 0..3u16 {
        let (plain, wire) = video_rtp(&mut vtx, 700 + i);
        b.sock().send_to(&wire, b.relay()).unwrap();
        assert_eq!(pv.recv_rtp("browser video"), plain);
        let sent = pv.send_rtp(&format!("phone video {i}"));
        let (wire, from) = recv_within(b.sock(), WAIT).expect("phone video reaches the browser");
        assert_eq!(from, b.relay(), "out of the group's port");
        let mut out = vec![0u8; wire.len()];
        let n = vrx.unprotect_rtp(&wire, &mut out).expect("under the group's keys");
        assert_eq!(without_extension(&out[..n], 1), (sent, Some(b"2".to_vec())));
    }
    d.delete("wbo");
}

/// Every way a key could be written into a log line: base64 (with and
/// without padding), hex in both cases, and Rust's `Debug` of a byte slice.
fn spellings(secret: &[u8]) -> Vec<String> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(secret);
    vec![
        b64.trim_end_matches('=').to_string(),
        secret.iter().map(|b| format!("{b:02x}")).collect(),
        secret.iter().map(|b| format!("{b:02X}")).collect(),
        format!("{secret:?}").trim_matches(['[', ']']).to_string(),
    ]
}

/// The master keys and salts of an SRTP policy, each alone.
fn secrets_of(p: &srtp::Policy) -> Vec<Vec<u8>> {
    p.keys.iter().flat_map(|k| [k.key().to_vec(), k.salt().to_vec()]).collect()
}

#[test]
fn no_key_reaches_the_log_at_trace_level() {
    let d = Daemon::start("webrtc-secrets", 5, &["--log-level", "trace"]);
    let mut b = Browser::new();
    let mut phone = Endpoint::new(LO);
    let (offered, pk) = browser_calls_phone(&d, &mut b, &mut phone, "wsec");
    assert!(b.check().is_ok());
    let keys = b.handshake(true).expect("DTLS handshake");
    b.keyed(&keys);
    media_both_ways(&mut b, &mut phone);
    d.delete("wsec");
    // The SDES keys both ways (the relay's and the phone's), and the keys
    // DTLS exported for both directions.
    let mut secrets: Vec<Vec<u8>> = Vec::new();
    for c in offered.iter().chain([&pk]) {
        secrets.extend(secrets_of(&c.policy().unwrap()));
    }
    secrets.extend(secrets_of(&keys.local_policy().unwrap()));
    secrets.extend(secrets_of(&keys.remote_policy().unwrap()));
    std::thread::sleep(Duration::from_millis(200));
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(log.contains("TRACE") || log.contains("DEBUG"), "the log ran at trace level:\n{}", d.log_tail());
    assert!(log.lines().count() > 20, "the call was logged");
    for s in &secrets {
        for w in spellings(s) {
            assert!(!log.contains(&w), "key material ({w}) in the log {}", d.log.display());
        }
    }
}

/// Sends from `from` every 20 ms until a packet reaches `to` (at most
/// `within`); returns how long that took. Packets before it wait for the
/// restarted relay's first reservation, or fall inside its last one.
fn until_through(from: &mut Endpoint, to: &mut Endpoint, within: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < within {
        let sent = from.send_rtp("after the restart");
        if let Some((wire, _)) = recv_within(&to.rtp, Duration::from_millis(20)) {
            if wire.len() > 12 && !(192..=223).contains(&wire[1]) {
                let got = to.open_rtp(&wire).expect("a packet after the restart that does not unprotect");
                assert_eq!(got[12..], sent[12..], "not the packet sent");
                return Some(start.elapsed());
            }
        }
    }
    None
}

/// A WebRTC call kept in Redis survives a crash (SIGKILL) and restart:
/// the browser keeps its keys and its ICE pair, the restarted relay answers
/// its consent checks with the same credentials and relays media both ways
/// under the keys the handshake agreed, without a new handshake.
#[test]
fn a_webrtc_call_survives_a_crash_without_a_new_handshake() {
    let Some(redis) = srtpgate_testkit::redis::Redis::for_test() else { return };
    let (_, args) = redis.relay_args("webrtc-restart");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut d = Daemon::start("webrtc-restart", 18, &args);
    let mut b = Browser::new();
    let mut phone = Endpoint::new(LO);
    browser_calls_phone(&d, &mut b, &mut phone, "kept-webrtc");
    assert_eq!(b.check(), Ok(b.sock().local_addr().unwrap()));
    let keys = b.handshake(true).expect("DTLS handshake");
    b.keyed(&keys);
    // The first packets wait for the first reservation in Redis.
    until_through(&mut b.media, &mut phone, WAIT).expect("browser to phone before the crash");
    until_through(&mut phone, &mut b.media, WAIT).expect("phone to browser before the crash");
    media_both_ways(&mut b, &mut phone);
    std::thread::sleep(Duration::from_millis(300));

    let restarted = d.crash_and_restart();
    assert_eq!(series(&d, "calls_resumed_total", "result=\"ok\""), Some(1.0), "{}", d.log_tail());
    // Consent (RFC 7675): the browser's checks are answered as before.
    assert_eq!(b.check(), Ok(b.sock().local_addr().unwrap()), "a consent check after the restart");
    let to_phone = until_through(&mut b.media, &mut phone, Duration::from_secs(3)).expect("browser to phone");
    let to_browser = until_through(&mut phone, &mut b.media, Duration::from_secs(3)).expect("phone to browser");
    println!(
        "after the restart ({:?} ago): browser to phone in {to_phone:?}, phone to browser in {to_browser:?}",
        restarted.elapsed()
    );
    media_both_ways(&mut b, &mut phone);
    assert_eq!(series(&d, "dtls_handshakes_total", "outcome=\"completed\""), Some(0.0), "no new handshake");
    d.delete("kept-webrtc");
}
