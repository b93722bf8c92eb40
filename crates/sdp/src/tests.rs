//! Tests of the SDP model: round trips of real-world SDPs, setters that
//! change exactly what they should, limits and errors, and properties.

use super::crypto::{CryptoAttr, CryptoError};
use super::*;
use proptest::prelude::*;
use rand::SeedableRng;
use std::net::{Ipv4Addr, Ipv6Addr};

const SAMPLES: [(&str, &str); 8] = [
    ("linphone_savp", include_str!("../testdata/linphone_savp.sdp")),
    ("baresip_ice", include_str!("../testdata/baresip_ice.sdp")),
    ("asterisk_ipv6", include_str!("../testdata/asterisk_ipv6.sdp")),
    ("freeswitch_rtcp_mux", include_str!("../testdata/freeswitch_rtcp_mux.sdp")),
    ("polycom_audio_video", include_str!("../testdata/polycom_audio_video.sdp")),
    ("cisco_rejected", include_str!("../testdata/cisco_rejected.sdp")),
    ("two_level_c", include_str!("../testdata/two_level_c.sdp")),
    ("webrtc_savpf", include_str!("../testdata/webrtc_savpf.sdp")),
];

fn sample(name: &str) -> Sdp {
    let text = SAMPLES.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).unwrap();
    Sdp::parse(text).unwrap()
}

fn lines(sdp: &Sdp) -> Vec<String> {
    sdp.lines().map(str::to_string).collect()
}

fn v4(s: &str) -> IpAddr {
    IpAddr::V4(s.parse::<Ipv4Addr>().unwrap())
}

fn v6(s: &str) -> IpAddr {
    IpAddr::V6(s.parse::<Ipv6Addr>().unwrap())
}

/// Applies `change` to `sdp` and checks the lines become `expect(before)`.
fn check_change(sdp: &mut Sdp, change: impl FnOnce(&mut Sdp), expect: impl FnOnce(&mut Vec<String>)) {
    let mut want = lines(sdp);
    expect(&mut want);
    change(sdp);
    assert_eq!(lines(sdp), want);
    // And the result still parses to the same thing.
    assert_eq!(Sdp::parse(&sdp.to_string()).unwrap(), *sdp);
}

fn index_of(sdp: &Sdp, line: &str) -> usize {
    sdp.lines().position(|l| l == line).unwrap_or_else(|| panic!("no line {line:?}"))
}

#[test]
fn round_trip_samples_byte_for_byte() {
    for (name, text) in SAMPLES {
        assert!(text.contains("\r\n"), "{name} must be CRLF");
        let sdp = Sdp::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(sdp.to_string(), text, "{name}");
        // LF input gives the same lines and CRLF output.
        let lf = Sdp::parse(&text.replace("\r\n", "\n")).unwrap();
        assert_eq!(lf.to_string(), text, "{name} from LF");
    }
}

#[test]
fn getters_on_samples() {
    let s = sample("linphone_savp");
    assert_eq!(s.connection(), Some(v4("192.168.1.20")));
    assert_eq!(s.origin_address(), Some(v4("192.168.1.20")));
    assert_eq!(s.media().len(), 1);
    let m = &s.media()[0];
    assert_eq!(m.media_type(), "audio");
    assert_eq!(m.port(), 7078);
    assert_eq!(m.port_count(), None);
    assert_eq!(m.proto(), "RTP/SAVP");
    assert_eq!(m.formats(), vec!["96", "97", "98", "0", "8", "101"]);
    assert!(m.is_rtp());
    assert_eq!(m.connection(), None);
    assert_eq!(s.media_connection(0), Some(v4("192.168.1.20")));
    assert_eq!(m.attr("rtpmap"), Some("96 opus/48000/2"));
    assert_eq!(m.attrs("fmtp").count(), 3);
    assert_eq!(m.attrs("rtcp-fb").collect::<Vec<_>>(), vec!["* trr-int 1000", "* ccm tmmbr"]);
    assert!(!m.rtcp_mux());
    assert_eq!(m.rtcp(), None);
    assert_eq!(m.direction(), None);
    assert_eq!(s.media_direction(0), Direction::SendRecv);
    let c = m.crypto();
    assert_eq!(c.len(), 5);
    let suites: Vec<_> = c.iter().take(4).map(|r| r.as_ref().unwrap().suite).collect();
    assert_eq!(
        suites,
        vec![
            srtp::Suite::AES_CM_128_HMAC_SHA1_80,
            srtp::Suite::AES_CM_128_HMAC_SHA1_32,
            srtp::Suite::AES_256_CM_HMAC_SHA1_80,
            srtp::Suite::AEAD_AES_128_GCM
        ]
    );
    assert_eq!(c[4], Err(CryptoError::UnknownSuite("AES_CM_999_HMAC_SHA1_80".into())));
    assert!(s.session_attr("rtcp-xr").unwrap().starts_with("rcvr-rtt=all:10000"));

    let s = sample("baresip_ice");
    let m = &s.media()[0];
    assert_eq!(m.attrs("candidate").count(), 4);
    assert!(m.has_attr("end-of-candidates"));
    assert_eq!(m.attr("end-of-candidates"), Some(""));
    assert_eq!(m.direction(), Some(Direction::SendRecv));
    assert_eq!(s.session_attr("ice-options"), Some("trickle"));
    let c = m.crypto();
    let c = c[0].as_ref().unwrap();
    assert_eq!(c.keys[0].lifetime, Some(1 << 31));
    assert_eq!(c.keys[0].mki, Some((1, 4)));

    let s = sample("asterisk_ipv6");
    assert_eq!(s.connection(), Some(v6("2001:db8::10")));
    assert_eq!(s.origin_address(), Some(v6("2001:db8::10")));
    assert!(!s.media()[0].is_rtp() || s.media()[0].proto() == "RTP/AVP");

    let s = sample("freeswitch_rtcp_mux");
    let m = &s.media()[0];
    assert_eq!(m.rtcp(), Some((24581, Some(v4("198.51.100.4")))));
    assert!(m.rtcp_mux());
    let c: Vec<_> = m.crypto().into_iter().map(Result::unwrap).collect();
    assert_eq!(c[0].suite, srtp::Suite::AES_192_CM_HMAC_SHA1_80);
    assert_eq!(c[2].suite, srtp::Suite::AEAD_AES_256_GCM);

    let s = sample("polycom_audio_video");
    assert_eq!(s.media().len(), 2);
    assert_eq!(s.media()[1].media_type(), "video");
    assert_eq!(s.media()[1].formats(), vec!["109", "34"]);
    assert_eq!(s.session_direction(), Some(Direction::SendRecv));
    assert_eq!(s.media_direction(0), Direction::SendRecv);
    assert_eq!(s.media_direction(1), Direction::SendOnly);
    assert_eq!(s.media()[1].crypto().len(), 1);

    let s = sample("cisco_rejected");
    let ports: Vec<_> = s.media().iter().map(Media::port).collect();
    assert_eq!(ports, vec![16384, 0, 0]);
    assert_eq!(s.media()[2].proto(), "udptl");
    assert!(!s.media()[2].is_rtp());
    assert_eq!(s.media()[2].formats(), vec!["t38"]);

    let s = sample("two_level_c");
    assert_eq!(s.connection(), Some(v4("192.0.2.1")));
    assert_eq!(s.media()[0].connection(), Some(v4("192.0.2.2")));
    assert_eq!(s.media()[1].connection(), Some(v4("224.2.1.1")));
    assert_eq!(s.media()[1].port(), 6002);
    assert_eq!(s.media()[1].port_count(), Some(2));
    assert_eq!(s.media_connection(1), Some(v4("224.2.1.1")));

    let s = sample("webrtc_savpf");
    assert_eq!(s.connection(), None);
    assert_eq!(s.origin_address(), Some(v4("127.0.0.1")));
    assert_eq!(s.session_attr("ice-lite"), Some(""));
    assert_eq!(s.session_attr("msid-semantic"), Some("WMS"));
    let m = &s.media()[0];
    assert_eq!(m.proto(), "UDP/TLS/RTP/SAVPF");
    assert!(m.is_rtp(), "DTLS-SRTP is RTP");
    assert_eq!(m.rtcp(), Some((9, Some(v4("0.0.0.0")))));
    assert_eq!(s.media_connection(0), Some(v4("0.0.0.0")));
}

#[test]
fn set_connection_session_replaces_only_that_line() {
    let mut s = sample("linphone_savp");
    let i = index_of(&s, "c=IN IP4 192.168.1.20");
    check_change(&mut s, |s| s.set_connection(v4("203.0.113.9")), |l| l[i] = "c=IN IP4 203.0.113.9".into());
    check_change(&mut s, |s| s.set_connection(v6("2001:db8::1")), |l| l[i] = "c=IN IP6 2001:db8::1".into());
    assert_eq!(s.connection(), Some(v6("2001:db8::1")));
}

#[test]
fn set_connection_session_inserts_after_preamble() {
    let mut s = sample("webrtc_savpf");
    // v= o= s= then t=: c= goes after s=.
    check_change(&mut s, |s| s.set_connection(v4("192.0.2.7")), |l| l.insert(3, "c=IN IP4 192.0.2.7".into()));
    // The media c= stays.
    assert_eq!(s.media()[0].connection(), Some(v4("0.0.0.0")));
}

#[test]
fn set_connection_media_replace_and_insert() {
    let mut s = sample("two_level_c");
    let i = index_of(&s, "c=IN IP4 224.2.1.1/127");
    check_change(
        &mut s,
        |s| s.media_mut()[1].set_connection(v4("198.51.100.1")),
        |l| l[i] = "c=IN IP4 198.51.100.1".into(),
    );
    // Insert: after m= and i=.
    let mut s = Sdp::parse("v=0\r\nm=video 1 RTP/AVP 31\r\ni=cam\r\nb=AS:1\r\na=x\r\n").unwrap();
    check_change(
        &mut s,
        |s| s.media_mut()[0].set_connection(v4("192.0.2.1")),
        |l| l.insert(3, "c=IN IP4 192.0.2.1".into()),
    );
    let mut s = sample("linphone_savp");
    let m = index_of(&s, "m=audio 7078 RTP/SAVP 96 97 98 0 8 101");
    check_change(&mut s, |s| s.media_mut()[0].set_connection(v6("::1")), |l| l.insert(m + 1, "c=IN IP6 ::1".into()));
    // Several media c= (layered multicast): the first is replaced, the rest removed.
    let mut s = Sdp::parse("v=0\r\nm=audio 1 RTP/AVP 0\r\nc=IN IP4 224.2.1.1/127\r\nc=IN IP4 224.2.1.2/127\r\na=x\r\n")
        .unwrap();
    check_change(
        &mut s,
        |s| s.media_mut()[0].set_connection(v4("192.0.2.1")),
        |l| {
            l[2] = "c=IN IP4 192.0.2.1".into();
            l.remove(3);
        },
    );
}

#[test]
fn set_all_connections() {
    // Session c= and media c= everywhere: every one replaced, nothing added.
    let mut s = sample("two_level_c");
    let a = v4("203.0.113.5");
    let idx: Vec<usize> = s.lines().enumerate().filter(|(_, l)| l.starts_with("c=")).map(|(i, _)| i).collect();
    check_change(
        &mut s,
        |s| s.set_all_connections(a),
        |l| {
            for &i in &idx {
                l[i] = "c=IN IP4 203.0.113.5".into();
            }
        },
    );
    for i in 0..2 {
        assert_eq!(s.media_connection(i), Some(a));
    }
    // WebRTC: no session c=, every media has one: no session c= is added.
    let mut s = sample("webrtc_savpf");
    s.set_all_connections(a);
    assert_eq!(s.connection(), None);
    assert_eq!(s.media_connection(0), Some(a));
    // Media without c= and no session c=: a session c= is inserted.
    let mut s = Sdp::parse("v=0\r\no=- 1 1 IN IP4 1.1.1.1\r\ns=-\r\nt=0 0\r\nm=audio 1 RTP/AVP 0\r\n").unwrap();
    s.set_all_connections(a);
    assert_eq!(s.connection(), Some(a));
    assert_eq!(s.media_connection(0), Some(a));
}

#[test]
fn origin_setters() {
    let mut s = sample("baresip_ice");
    check_change(
        &mut s,
        |s| s.set_origin_address(v6("2001:db8::2")),
        |l| l[1] = "o=- 1618291048 1618291049 IN IP6 2001:db8::2".into(),
    );
    check_change(&mut s, Sdp::bump_version, |l| l[1] = "o=- 1618291048 1618291050 IN IP6 2001:db8::2".into());
    let mut s = Sdp::parse("v=0\r\no=a  b 1 18446744073709551615 IN IP4 1.2.3.4\r\n").unwrap();
    s.bump_version();
    assert_eq!(lines(&s)[1], "o=a  b 1 18446744073709551615 IN IP4 1.2.3.4", "saturates");
    // The username may hold a space: the last five fields are found from the end.
    let mut s = Sdp::parse("v=0\r\no=Some User 1 9 IN IP4 1.2.3.4\r\n").unwrap();
    assert_eq!(s.origin_address(), Some(v4("1.2.3.4")));
    s.bump_version();
    s.set_origin_address(v4("5.6.7.8"));
    assert_eq!(lines(&s)[1], "o=Some User 1 10 IN IP4 5.6.7.8");
    // Without o= nothing happens.
    let mut s = Sdp::parse("v=0\r\ns=-\r\n").unwrap();
    check_change(
        &mut s,
        |s| {
            s.bump_version();
            s.set_origin_address(v4("1.1.1.1"));
        },
        |_| {},
    );
}

#[test]
fn media_line_setters() {
    let mut s = sample("two_level_c");
    let i = index_of(&s, "m=video 6002/2 RTP/AVP 31");
    check_change(&mut s, |s| s.media_mut()[1].set_port(40000), |l| l[i] = "m=video 40000 RTP/AVP 31".into());
    assert_eq!(s.media()[1].port_count(), None);
    check_change(&mut s, |s| s.media_mut()[1].set_proto("RTP/SAVP"), |l| l[i] = "m=video 40000 RTP/SAVP 31".into());
    // Invalid protos are refused.
    check_change(&mut s, |s| s.media_mut()[1].set_proto("RTP/SAVP\r\na=evil"), |_| {});
    check_change(&mut s, |s| s.media_mut()[1].set_proto(""), |_| {});
    // Rejecting a stream.
    let mut s = sample("polycom_audio_video");
    let i = index_of(&s, "m=video 2226 RTP/SAVP 109 34");
    check_change(&mut s, |s| s.media_mut()[1].set_port(0), |l| l[i] = "m=video 0 RTP/SAVP 109 34".into());
}

#[test]
fn attribute_setters() {
    let mut s = sample("baresip_ice");
    let n = lines(&s).len();
    let m = index_of(&s, "m=audio 10118 RTP/SAVP 96 0 8 101");
    check_change(
        &mut s,
        |s| s.media_mut()[0].remove_ice(),
        |l| {
            let mut i = 0;
            l.retain(|x| {
                i += 1;
                i <= m || !(x.starts_with("a=candidate") || x.starts_with("a=ice-") || x == "a=end-of-candidates")
            })
        },
    );
    assert_eq!(lines(&s).len(), n - 7);
    // Session-level ice-options remains until removed.
    assert_eq!(s.session_attr("ice-options"), Some("trickle"));
    check_change(&mut s, |s| s.remove_session_attrs("ice-options"), |l| l.retain(|x| x != "a=ice-options:trickle"));
    check_change(&mut s, |s| s.media_mut()[0].add_attr("rtcp-mux", None), |l| l.push("a=rtcp-mux".into()));
    check_change(&mut s, |s| s.media_mut()[0].add_attr("ptime", Some("20")), |l| l.push("a=ptime:20".into()));
    check_change(&mut s, |s| s.media_mut()[0].add_attr("x", Some("a\r\nb=c")), |_| {});
    check_change(&mut s, |s| s.media_mut()[0].remove_attrs("RTPMAP"), |l| l.retain(|x| !x.starts_with("a=rtpmap")));
    check_change(&mut s, |s| s.add_session_attr("ice-lite", None), |l| l.insert(6, "a=ice-lite".into()));
}

#[test]
fn rtcp_setters() {
    let mut s = sample("freeswitch_rtcp_mux");
    let i = index_of(&s, "a=rtcp:24581 IN IP4 198.51.100.4");
    check_change(
        &mut s,
        |s| s.media_mut()[0].set_rtcp(30001, Some(v6("::2"))),
        |l| l[i] = "a=rtcp:30001 IN IP6 ::2".into(),
    );
    check_change(&mut s, |s| s.media_mut()[0].set_rtcp(30003, None), |l| l[i] = "a=rtcp:30003".into());
    assert_eq!(s.media()[0].rtcp(), Some((30003, None)));
    let mut s = sample("asterisk_ipv6");
    check_change(&mut s, |s| s.media_mut()[0].set_rtcp(5, None), |l| l.push("a=rtcp:5".into()));
    // Two a=rtcp lines: the first replaced, the second removed; rtcp-mux untouched.
    let mut s = Sdp::parse("v=0\r\nm=audio 1 RTP/AVP 0\r\na=rtcp:2\r\na=rtcp-mux\r\na=rtcp:3\r\n").unwrap();
    check_change(
        &mut s,
        |s| s.media_mut()[0].set_rtcp(9, None),
        |l| {
            l[2] = "a=rtcp:9".into();
            l.remove(4);
        },
    );
    assert!(s.media()[0].rtcp_mux());
}

#[test]
fn direction_setter() {
    let mut s = sample("polycom_audio_video");
    let i = index_of(&s, "a=sendonly");
    check_change(&mut s, |s| s.media_mut()[1].set_direction(Direction::RecvOnly), |l| l[i] = "a=recvonly".into());
    check_change(
        &mut s,
        |s| s.media_mut()[0].set_direction(Direction::Inactive),
        |l| {
            let m1 = l.iter().position(|x| x.starts_with("m=video")).unwrap();
            l.insert(m1, "a=inactive".into());
        },
    );
    assert_eq!(Direction::SendOnly.reverse(), Direction::RecvOnly);
}

#[test]
fn crypto_setters() {
    let mut s = sample("linphone_savp");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let c = CryptoAttr::generate(1, srtp::Suite::AES_CM_128_HMAC_SHA1_80, &mut rng);
    let line = format!("a=crypto:{c}");
    check_change(
        &mut s,
        |s| {
            let m = &mut s.media_mut()[0];
            m.remove_crypto();
            m.add_crypto(&c);
        },
        |l| {
            l.retain(|x| !x.starts_with("a=crypto:"));
            l.push(line.clone());
        },
    );
    let got = s.media()[0].crypto();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].as_ref().unwrap(), &c);
}

#[test]
fn the_full_rewrite_an_offer_gets() {
    // What the daemon does to an offer, end to end.
    let mut s = sample("baresip_ice");
    let relay = v4("203.0.113.1");
    s.set_origin_address(relay);
    s.bump_version();
    s.set_all_connections(relay);
    s.remove_session_attrs("ice-options");
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    for m in s.media_mut() {
        m.remove_ice();
        m.set_port(30000);
        m.set_rtcp(30001, None);
        m.set_proto("RTP/SAVP");
        m.remove_crypto();
        m.add_crypto(&CryptoAttr::generate(1, srtp::Suite::AES_CM_128_HMAC_SHA1_80, &mut rng));
    }
    let text = s.to_string();
    assert!(!text.contains("10.0.0.5") && !text.contains("candidate") && !text.contains("ice-"));
    let again = Sdp::parse(&text).unwrap();
    assert_eq!(again.media()[0].port(), 30000);
    assert_eq!(again.media()[0].rtcp(), Some((30001, None)));
    assert_eq!(again.media()[0].crypto().len(), 1);
    // Untouched lines are still there, in order.
    let kept = ["a=tool:baresip 1.1.0", "b=AS:96", "a=fmtp:96 stereo=1;sprop-stereo=1", "a=sendrecv", "a=rtcp-rsize"];
    let pos: Vec<usize> = kept.iter().map(|k| index_of(&again, k)).collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn tolerated_input() {
    // LF only, trailing spaces (kept), a= before c=, no t=, empty trailing lines.
    let text = "v=0\no=- 1 1 IN IP4 10.0.0.1 \ns=-\nm=audio 4000 RTP/AVP 0 \na=rtpmap:0 PCMU/8000  \na=sendrecv\nc=IN IP4 10.0.0.2\n\n\n";
    let s = Sdp::parse(text).unwrap();
    assert_eq!(s.origin_address(), Some(v4("10.0.0.1")));
    let m = &s.media()[0];
    assert_eq!(m.connection(), Some(v4("10.0.0.2")));
    assert_eq!(m.formats(), vec!["0"]);
    assert_eq!(m.attr("rtpmap"), Some("0 PCMU/8000"));
    assert_eq!(
        s.to_string(),
        "v=0\r\no=- 1 1 IN IP4 10.0.0.1 \r\ns=-\r\nm=audio 4000 RTP/AVP 0 \r\na=rtpmap:0 PCMU/8000  \r\na=sendrecv\r\nc=IN IP4 10.0.0.2\r\n"
    );
    // No final newline; CRLF and LF mixed.
    let s = Sdp::parse("v=0\r\ns=-\nm=audio 1 RTP/AVP 0").unwrap();
    assert_eq!(s.to_string(), "v=0\r\ns=-\r\nm=audio 1 RTP/AVP 0\r\n");
    // c= with TTL, FQDN, mismatched type.
    let s = Sdp::parse("v=0\r\nc=IN IP4 224.2.1.1/127/3\r\n").unwrap();
    assert_eq!(s.connection(), Some(v4("224.2.1.1")));
    assert_eq!(Sdp::parse("v=0\r\nc=IN IP4 host.example.com\r\n").unwrap().connection(), None);
    assert_eq!(Sdp::parse("v=0\r\nc=IN IP4 ::1\r\n").unwrap().connection(), None);
    assert_eq!(Sdp::parse("v=0\r\nc=IN IP6\r\n").unwrap().connection(), None);
}

#[test]
fn errors_name_the_line() {
    let e = |t: &str| Sdp::parse(t).unwrap_err();
    assert_eq!(e(""), SdpError::Empty);
    assert_eq!(e("\r\n\r\n"), SdpError::Empty);
    assert_eq!(e("v=0\r\ns=-\r\nhello\r\n"), SdpError::BadLine { line: 3, reason: "not of the form x=value" });
    assert_eq!(e("v=0\r\ns=-\r\nhello\r\n").to_string(), "SDP line 3: not of the form x=value");
    assert_eq!(e("v=0\n\n=x\n"), SdpError::BadLine { line: 3, reason: "not of the form x=value" });
    assert_eq!(e("v=0\n a=x\n"), SdpError::BadLine { line: 2, reason: "not of the form x=value" });
    assert_eq!(e("v=0\n1=x\n"), SdpError::BadLine { line: 2, reason: "not of the form x=value" });
    assert_eq!(e("v=0\na=x\ry\n"), SdpError::BadLine { line: 2, reason: "CR or NUL inside the line" });
    assert_eq!(e("s=-\nv=0\n"), SdpError::NoVersion(1));
    assert_eq!(e("v=0\nm=audio\n"), SdpError::BadMedia { line: 2, reason: "no port" });
    assert_eq!(
        e("v=0\nm=audio 70000 RTP/AVP 0\n"),
        SdpError::BadMedia { line: 2, reason: "the port is not a number 0 to 65535" }
    );
    assert!(matches!(e("v=0\nm=audio 7/x RTP/AVP 0\n"), SdpError::BadMedia { line: 2, .. }));
    assert_eq!(e("v=0\nm=audio 7\n"), SdpError::BadMedia { line: 2, reason: "no transport protocol" });
    // Limits.
    let big = format!("v=0\r\ns={}\r\n", "x".repeat(MAX_SDP_LEN));
    assert!(matches!(e(&big), SdpError::TooLarge(_)));
    let many = format!("v=0\r\n{}", "a=x\r\n".repeat(MAX_LINES));
    assert_eq!(e(&many), SdpError::TooManyLines);
    let ok = format!("v=0\r\n{}", "a=x\r\n".repeat(MAX_LINES - 1));
    assert!(Sdp::parse(&ok).is_ok());
    let media = format!("v=0\r\n{}", "m=audio 1 RTP/AVP 0\r\n".repeat(MAX_MEDIA + 1));
    assert_eq!(e(&media), SdpError::TooManyMedia);
    let media = format!("v=0\r\n{}", "m=audio 1 RTP/AVP 0\r\n".repeat(MAX_MEDIA));
    assert!(Sdp::parse(&media).is_ok());
    let crypto =
        format!("v=0\r\nm=audio 1 RTP/SAVP 0\r\nm=audio 1 RTP/SAVP 0\r\n{}", "a=crypto:1 X inline:A\r\n".repeat(17));
    assert_eq!(e(&crypto), SdpError::TooManyCrypto(2));
    assert_eq!(e(&crypto).to_string(), "SDP media section 2 has too many a=crypto lines (at most 16)");
}

#[test]
fn debug_hides_keys() {
    for (name, text) in SAMPLES {
        let s = Sdp::parse(text).unwrap();
        let d = format!("{s:?}");
        for m in s.media() {
            for c in m.crypto().into_iter().flatten() {
                let b64 = c.to_string();
                let key = b64.split("inline:").nth(1).unwrap().split('|').next().unwrap().to_string();
                assert!(!d.contains(&key), "{name}: key in Debug");
            }
        }
        if text.contains("a=crypto") {
            assert!(d.contains("<redacted>"), "{name}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parse_never_panics(s in "\\PC*") {
        let _ = Sdp::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_sdp_like_lines(
        ls in proptest::collection::vec("[vosicmatbkzeu]=[ -~\\t]{0,40}|[ -~]{0,10}|\\r|", 0..30),
        crlf in any::<bool>(),
    ) {
        let text = ls.join(if crlf { "\r\n" } else { "\n" });
        if let Ok(s) = Sdp::parse(&text) {
            let again = Sdp::parse(&s.to_string()).unwrap();
            prop_assert_eq!(lines(&again), lines(&s));
        }
    }

    #[test]
    fn parsed_sdp_round_trips(
        body in proptest::collection::vec(
            prop_oneof![
                "[a-z]=[ -~]{0,30}",
                "m=[a-z]{1,6} [0-9]{1,5}(/[0-9])? [A-Za-z/]{1,10}( [0-9a-z]{1,3}){0,4}",
                "c=IN IP[46] [0-9a-f.:]{1,20}(/[0-9]{1,3})?",
                "a=(rtcp|crypto|candidate|ice-ufrag|sendonly|rtcp-mux)(:[ -~]{0,50})?",
                "o=[a-z-]{1,5} [0-9]{1,20} [0-9]{1,20} IN IP4 [0-9.]{1,15}",
            ],
            0..40,
        ),
        trailing in "[ \\t]{0,2}",
    ) {
        let mut text = String::from("v=0\r\n");
        for l in &body {
            text.push_str(l);
            text.push_str(&trailing);
            text.push_str("\r\n");
        }
        let Ok(mut s) = Sdp::parse(&text) else { return Ok(()); };
        prop_assert_eq!(s.to_string(), text.clone());
        let again = Sdp::parse(&s.to_string()).unwrap();
        prop_assert_eq!(lines(&again), lines(&s));
        // Every setter keeps it parseable.
        s.set_connection(v4("192.0.2.1"));
        s.set_origin_address(v6("2001:db8::1"));
        s.bump_version();
        s.remove_session_attrs("ice-ufrag");
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for m in s.media_mut() {
            let _ = m.crypto();
            let _ = (m.port(), m.port_count(), m.proto(), m.formats(), m.rtcp(), m.direction());
            m.set_connection(v4("192.0.2.2"));
            m.set_port(1);
            m.set_proto("RTP/SAVP");
            m.remove_ice();
            m.set_rtcp(2, Some(v4("192.0.2.3")));
            m.set_direction(Direction::SendOnly);
            m.remove_crypto();
            m.add_crypto(&CryptoAttr::generate(1, srtp::Suite::AEAD_AES_256_GCM, &mut rng));
        }
        s.set_all_connections(v4("192.0.2.4"));
        let again = Sdp::parse(&s.to_string()).unwrap();
        prop_assert_eq!(lines(&again), lines(&s));
        for (i, m) in again.media().iter().enumerate() {
            prop_assert_eq!(m.port(), 1);
            prop_assert_eq!(m.proto(), "RTP/SAVP");
            prop_assert_eq!(m.rtcp(), Some((2, Some(v4("192.0.2.3")))));
            prop_assert_eq!(again.media_connection(i), Some(v4("192.0.2.4")));
            prop_assert_eq!(m.crypto().len(), 1);
            prop_assert!(m.crypto()[0].is_ok());
        }
    }

    #[test]
    fn crypto_parse_never_panics(s in "[ -~]{0,120}") {
        let _ = CryptoAttr::parse(&s);
    }

    #[test]
    fn crypto_display_parse(
        suite in 0usize..11,
        tag in 0u32..1_000_000_000,
        lifetime in proptest::option::of(1u64..=(1 << 48)),
        mki in proptest::option::of((any::<u64>(), 1u8..=128)),
        seed in any::<u64>(),
    ) {
        let suite = srtp::Suite::ALL[suite];
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut c = CryptoAttr::generate(tag, suite, &mut rng);
        c.keys[0].lifetime = lifetime;
        c.keys[0].mki = mki.map(|(v, l)| (if l < 8 { v & ((1u64 << (8 * u32::from(l))) - 1) } else { v }, l));
        let back = CryptoAttr::parse(&c.to_string()).unwrap();
        prop_assert_eq!(&back, &c);
        prop_assert!(back.master_keys().is_ok());
    }
}
