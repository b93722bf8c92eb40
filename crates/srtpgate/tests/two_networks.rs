//! The relay between two networks, its public side behind a 1:1 NAT
//! (`bench/netns/two-networks.sh`: callers on 198.18.1.0/24, callees on
//! 198.18.2.0/24, the relay in both, its public address 203.0.113.1 mapped
//! to 198.18.2.1 by a NAT on the public side). The relay runs with
//! `--interface priv/198.18.1.1 --interface 'pub/198.18.2.1!203.0.113.1'`,
//! and every call is offered with `direction=[priv pub]`, as a Kamailio
//! script written for rtpengine sends it. On each I/O backend that runs
//! here: an SDES call, a plain-RTP call, a transcoded call (PCMU caller,
//! PCMA callee) and a call from an SDES phone to a browser-like WebRTC
//! client; each side's SDP carries its side's address (the NAT address on
//! the public side, in `c=` and in the ICE candidate), media flows both
//! ways, and what reaches the public side comes from the NAT address.
//! Skips, saying why, where the rig cannot be built.

use srtp::Suite;
use srtpgate_ng::Value;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::Sdp;
use srtpgate_testkit::daemon::*;
use std::net::IpAddr;
use std::time::{Duration, Instant};

mod browser;
mod namespaces;
use browser::Browser;
use namespaces::{enter, usable, Rig};

const RELAY_PRIV: &str = "198.18.1.1";
const RELAY_PUB: &str = "198.18.2.1";
const NAT: &str = "203.0.113.1";
const CALLER: &str = "198.18.1.2";
const CALLEE: &str = "198.18.2.2";

fn ip(s: &str) -> IpAddr {
    s.parse().expect("address")
}

/// What a Kamailio script with `rtpengine_offer("direction=priv direction=pub")` sends.
fn directed(v: Value) -> Value {
    v.with("direction", Value::from(vec!["priv", "pub"]))
}

/// An endpoint on the caller's side and one on the callee's: each made in
/// its namespace; the thread ends in the caller's (where NG goes from).
fn endpoints(rig: &Rig) -> (Endpoint, Endpoint) {
    enter(&rig.ns("pub"));
    let b = Endpoint::new(ip(CALLEE));
    enter(&rig.ns("priv"));
    (Endpoint::new(ip(CALLER)), b)
}

/// The SDP addresses each side was given: the callee's (public) the NAT
/// address, the caller's (private) the relay's private one.
fn check_addresses(what: &str, to_callee: &Sdp, to_caller: &Sdp) {
    let c = |s: &Sdp| s.to_string().lines().find_map(|l| l.strip_prefix("c=IN IP4 ").map(str::to_string));
    assert_eq!(c(to_callee).as_deref(), Some(NAT), "{what}: the callee's SDP:\n{to_callee}");
    assert_eq!(c(to_caller).as_deref(), Some(RELAY_PRIV), "{what}: the caller's SDP:\n{to_caller}");
}

/// `n` packets each way, one at a time; what reaches the callee comes from
/// the NAT address.
fn both_ways(what: &str, a: &mut Endpoint, b: &mut Endpoint, n: usize) {
    for i in 0..n {
        let sent = a.send_rtp(&format!("{what} a {i}"));
        let deadline = Instant::now() + WAIT;
        let (wire, from) = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let got = recv_within(&b.rtp, left).unwrap_or_else(|| panic!("{what}: caller to callee {i}: nothing"));
            if got.0.len() > 12 && !(192..=223).contains(&got.0[1]) {
                break got;
            }
        };
        assert_eq!(from.ip(), ip(NAT), "{what}: the callee got media from {from}");
        assert_eq!(b.open_rtp(&wire).expect("caller to callee: unprotect"), sent, "{what}: caller to callee {i}");
        let sent = b.send_rtp(&format!("{what} b {i}"));
        assert_eq!(a.recv_rtp(&format!("{what}: callee to caller {i}")), sent, "{what}: callee to caller {i}");
    }
}

fn sdes_call(d: &Daemon, rig: &Rig, id: &str, proto: &str) {
    let (mut a, mut b) = endpoints(rig);
    let srtp = proto == "RTP/SAVP";
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let keys = |k: &CryptoAttr| if srtp { vec![k.clone()] } else { Vec::new() };
    let r = d.request(&directed(offer(id, "a", &a.sdp_spec(proto, &keys(&a_key)).text())));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_b = reply_sdp(&r);
    let relay_b = cryptos(&to_b).into_iter().next();
    let b_key = relay_b.as_ref().map(|k| key(k.tag, k.suite));
    let r = d.request(&answer(id, "a", "b", &b.sdp_spec(proto, &b_key.iter().cloned().collect::<Vec<_>>()).text()));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_a = reply_sdp(&r);
    check_addresses(id, &to_b, &to_a);
    if srtp {
        a.send_key(Some(&a_key));
        a.recv_key(cryptos(&to_a).first());
        b.send_key(b_key.as_ref());
        b.recv_key(relay_b.as_ref());
    }
    a.relay(&to_a);
    b.relay(&to_b);
    both_ways(id, &mut a, &mut b, 5);
    assert_eq!(result(&d.delete(id)), "ok");
}

/// The endpoint's SDP offering only payload type `pt`.
fn only(e: &Endpoint, k: &CryptoAttr, pt: u8) -> String {
    let text = e.sdp_spec("RTP/SAVP", std::slice::from_ref(k)).text();
    let mut out = Vec::new();
    for l in text.split("\r\n").filter(|l| !l.is_empty()) {
        if let Some(m) = l.strip_prefix("m=audio ") {
            let head: Vec<&str> = m.split(' ').take(2).collect();
            out.push(format!("m=audio {} {pt}", head.join(" ")));
        } else if !l.starts_with("a=rtpmap:") && !l.starts_with("a=fmtp:") {
            out.push(l.to_string());
        }
    }
    out.join("\r\n") + "\r\n"
}

fn transcoded_call(d: &Daemon, rig: &Rig, id: &str) {
    let (mut a, mut b) = endpoints(rig);
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let flags = Value::from(vec!["codec-transcode-PCMA", "codec-mask-PCMU"]);
    let r = d.request(&directed(offer(id, "a", &only(&a, &a_key, 0))).with("flags", flags));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_b = reply_sdp(&r);
    let relay_b = cryptos(&to_b).remove(0);
    let b_key = key(relay_b.tag, relay_b.suite);
    let r = d.request(&answer(id, "a", "b", &only(&b, &b_key, 8)));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_a = reply_sdp(&r);
    check_addresses(id, &to_b, &to_a);
    a.send_key(Some(&a_key));
    a.recv_key(cryptos(&to_a).first());
    a.relay(&to_a);
    b.send_key(Some(&b_key));
    b.recv_key(Some(&relay_b));
    b.relay(&to_b);
    // 20 ms of silence a packet in each codec, each way: what arrives is
    // in the other side's codec.
    transcoded_way(id, &mut a, &mut b, (0, 8), 0xff);
    transcoded_way(id, &mut b, &mut a, (8, 0), 0xd5);
    assert_eq!(result(&d.delete(id)), "ok");
}

/// Ten packets of silence in payload type `pts.0` from `from`; five reach
/// `to` in `pts.1`.
fn transcoded_way(id: &str, from: &mut Endpoint, to: &mut Endpoint, pts: (u8, u8), silence: u8) {
    for k in 0..10u16 {
        let mut p = vec![0x80, pts.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        p[2..4].copy_from_slice(&(100 + k).to_be_bytes());
        p[4..8].copy_from_slice(&(u32::from(k) * 160).to_be_bytes());
        p[8..12].copy_from_slice(&from.ssrc.to_be_bytes());
        p.extend_from_slice(&[silence; 160]);
        from.send_plain(&p);
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 0..5 {
        let got = to.recv_rtp(&format!("{id}: transcoded {i}"));
        assert_eq!(got[1] & 0x7f, pts.1, "{id}: payload type of transcoded packet {i}");
    }
}

/// What Kamailio sends towards a browser and towards a phone (as in
/// tests/webrtc.rs), with `direction`.
fn webrtc_call(d: &Daemon, rig: &Rig, id: &str) {
    enter(&rig.ns("pub"));
    let mut b = Browser::on(ip(CALLEE));
    enter(&rig.ns("priv"));
    let mut phone = Endpoint::new(ip(CALLER));
    let pk = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    phone.send_key(Some(&pk));
    let to_browser = |v: Value| {
        directed(v)
            .with("ICE", "force")
            .with("transport-protocol", "UDP/TLS/RTP/SAVPF")
            .with("rtcp-mux", Value::from(vec!["offer", "require"]))
            .with("SDES", Value::from(vec!["off"]))
    };
    let o = phone.sdp_spec("RTP/SAVP", std::slice::from_ref(&pk)).text();
    let r = d.request(&to_browser(offer(id, "phone", &o)));
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_b = reply_sdp(&r);
    let candidate = to_b.media()[0].attrs("candidate").next().unwrap_or_default().to_string();
    assert!(candidate.contains(&format!(" {NAT} ")), "{id}: the browser's candidate: {candidate}\n{to_b}");
    b.learn(&to_b);
    let ans = answer(id, "phone", "browser", &b.sdp("passive"))
        .with("ICE", "remove")
        .with("DTLS", "off")
        .with("transport-protocol", "RTP/SAVP")
        .with("rtcp-mux", Value::from(vec!["demux"]));
    let r = d.request(&ans);
    assert_eq!(result(&r), "ok", "{}", show(&r));
    let to_p = reply_sdp(&r);
    check_addresses(id, &to_b, &to_p);
    phone.recv_key(cryptos(&to_p).first());
    phone.relay(&to_p);
    b.check().unwrap_or_else(|code| panic!("{id}: the browser's ICE check refused with {code}"));
    let keys = b.handshake(false).expect("DTLS handshake through the NAT");
    b.keyed(&keys);
    assert_eq!(b.relay().ip(), ip(NAT));
    for i in 0..5 {
        let sent = phone.send_rtp(&format!("{id} phone {i}"));
        assert_eq!(b.recv_rtp(&format!("{id}: phone to browser {i}")), sent);
        let sent = b.send_rtp(&format!("{id} browser {i}"));
        assert_eq!(phone.recv_rtp(&format!("{id}: browser to phone {i}")), sent);
    }
    assert_eq!(result(&d.delete(id)), "ok");
}

#[test]
fn direction_puts_each_leg_on_its_network_through_a_nat_on_every_backend() {
    let name = format!("sn{}", std::process::id() % 100_000);
    let rig = match Rig::up("two-networks.sh", &name) {
        Ok(r) => r,
        Err(why) => {
            srtpgate_testkit::skip("netns", "the two-network rig", why);
            return;
        }
    };
    let relay_ns = rig.ns("relay");
    // A thread of its own: it moves between the namespaces.
    let worker = std::thread::spawn(move || {
        enter(&rig.ns("priv"));
        for io in ["sockets", "uring", "xdp"] {
            if let Err(why) = usable(io) {
                srtpgate_testkit::skip(io, &format!("the {io} backend in the two-network rig"), why);
                continue;
            }
            let public = format!("pub/{RELAY_PUB}!{NAT}");
            let d = Daemon::start_in_netns(
                &format!("two-networks-{io}"),
                &relay_ns,
                ip(RELAY_PRIV),
                &[&format!("priv/{RELAY_PRIV}"), &public],
                &["--io", io],
            );
            let log = std::fs::read_to_string(&d.log).unwrap_or_default();
            assert!(log.contains(&format!("media workers use {io} I/O")), "{log}");
            sdes_call(&d, &rig, &format!("{io}-sdes"), "RTP/SAVP");
            sdes_call(&d, &rig, &format!("{io}-plain"), "RTP/AVP");
            transcoded_call(&d, &rig, &format!("{io}-transcoded"));
            webrtc_call(&d, &rig, &format!("{io}-webrtc"));
            if io == "xdp" {
                // One device served (the private side's, on the tie), the
                // public side's address named as relayed through its
                // sockets; both sides' media went through above.
                let log = std::fs::read_to_string(&d.log).unwrap_or_default();
                assert!(log.contains(&format!("for {RELAY_PRIV}")), "{log}");
                assert!(log.contains(&format!("media address {RELAY_PUB} is on")), "{log}");
                let page = d.metrics();
                let redirected = page
                    .lines()
                    .find_map(|l| l.strip_prefix("srtpgate_xdp_frames_total{verdict=\"redirected\"} "))
                    .and_then(|v| v.trim().parse::<f64>().ok())
                    .unwrap_or(0.0);
                println!("xdp: {redirected} frames of the private side took the AF_XDP path");
                assert!(redirected > 0.0, "the served device carried nothing over AF_XDP:\n{page}");
            }
            println!("{io}: SDES, plain, transcoded and WebRTC calls across the two networks");
        }
        rig
    });
    match worker.join() {
        Ok(rig) => drop(rig),
        Err(e) => std::panic::resume_unwind(e),
    }
}
