//! Named interfaces through `srtpgate serve`: a relay between a private
//! side (127.0.0.1) and a public one (127.0.0.2, advertised as a
//! documentation address as behind 1:1 NAT), with `direction` putting each
//! leg of an SDES call on its side. Checked: the address each party's SDP
//! carries, media both ways through the sockets bound on each side, what
//! `query` reports of each leg, and an unknown interface refused.

use srtp::Suite;
use srtpgate_ng::Value;
use srtpgate_testkit::daemon::*;
use std::net::{IpAddr, SocketAddr};

const PUBLIC: &str = "127.0.0.2";
const ADVERTISED: &str = "203.0.113.5";

fn ip(s: &str) -> IpAddr {
    s.parse().expect("ip")
}

/// The media entry of `tag`'s first m-line in a `query` reply.
fn media<'a>(q: &'a Value, tag: &str) -> &'a Value {
    q.get("tags")
        .and_then(|t| t.get(tag))
        .and_then(|t| t.get("medias"))
        .and_then(Value::as_list)
        .and_then(|m| m.first())
        .unwrap_or_else(|| panic!("no media of {tag}: {}", show(q)))
}

#[test]
fn direction_puts_each_leg_on_its_side_behind_nat() {
    let public = format!("pub/{PUBLIC}!{ADVERTISED}");
    let d = Daemon::start_on("interfaces", 1, &["priv/127.0.0.1", &public], &[]);
    let mut a = Endpoint::new(ip("127.0.0.1"));
    let mut b = Endpoint::new(ip("127.0.0.3"));
    let dir = |x: &str, y: &str| Value::List(vec![Value::from(x), Value::from(y)]);
    let a_key = key(1, Suite::AES_CM_128_HMAC_SHA1_80);
    let a_sdp = a.sdp_spec("RTP/SAVP", std::slice::from_ref(&a_key)).text();
    let r = d.request(&offer("nat-call", "alice", &a_sdp).with("direction", dir("priv", "pub")));
    let to_b = reply_sdp(&r);
    // The callee is told the public address, never the one the socket binds.
    assert_eq!(to_b.connection(), Some(ip(ADVERTISED)), "{to_b}");
    assert!(!to_b.to_string().contains(PUBLIC), "{to_b}");
    let relay_b = cryptos(&to_b).into_iter().next().expect("a key for the callee");
    let b_key = key(relay_b.tag, relay_b.suite);
    let callee = ip("127.0.0.3");
    let b_sdp = SdpSpec { ip: callee, origin: callee, ..b.sdp_spec("RTP/SAVP", std::slice::from_ref(&b_key)) }.text();
    // The answer's sender is the callee: the offer's list reversed.
    let r = d.request(&answer("nat-call", "alice", "bob", &b_sdp).with("direction", dir("pub", "priv")));
    let to_a = reply_sdp(&r);
    assert_eq!(to_a.connection(), Some(ip("127.0.0.1")), "{to_a}");
    a.send_key(Some(&a_key));
    a.recv_key(Some(&cryptos(&to_a)[0]));
    b.send_key(Some(&b_key));
    b.recv_key(Some(&relay_b));
    a.relay(&to_a);
    b.relay(&to_b);
    // The NAT in front of the relay: what the callee sends to the public
    // address reaches the relay's socket on its public side.
    let port = to_b.media()[0].port();
    b.relay_rtp = SocketAddr::new(ip(PUBLIC), port);
    b.relay_rtcp = SocketAddr::new(ip(PUBLIC), port + 1);
    exchange(&mut a, &mut b, 20, 2);

    let q = d.query("nat-call");
    let (ma, mb) = (media(&q, "alice"), media(&q, "bob"));
    assert_eq!(ma.get("interface").and_then(Value::as_str), Some("priv"), "{}", show(&q));
    assert_eq!(mb.get("interface").and_then(Value::as_str), Some("pub"), "{}", show(&q));
    let stream = &mb.get("streams").and_then(Value::as_list).expect("streams")[0];
    assert_eq!(stream.get("local address").and_then(Value::as_str), Some(PUBLIC), "{}", show(&q));
    let adv = stream.get("advertised endpoint").and_then(|e| e.get("address")).and_then(Value::as_str);
    assert_eq!(adv, Some(ADVERTISED), "{}", show(&q));
    for tag in ["alice", "bob"] {
        let st = stream_stats(&q, tag);
        assert_eq!(st.get("errors").and_then(Value::as_int), Some(0), "{tag}: {}", show(&q));
    }

    // A name this relay has no interface for is refused, naming the ones
    // there are.
    let r = d.request(&offer("nowhere", "alice", &a_sdp).with("direction", dir("priv", "dmz")));
    assert_eq!(r.get("result").and_then(Value::as_str), Some("error"), "{}", show(&r));
    assert_eq!(
        r.get("error-reason").and_then(Value::as_str),
        Some("unknown interface 'dmz' (this relay has: priv, pub)")
    );
    d.delete("nat-call");
}
