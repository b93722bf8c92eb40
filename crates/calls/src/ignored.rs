//! What a request asks for that the relay does not do. The parser reads
//! every option rtpengine documents into a [`Request`]; the ones this relay
//! does not act on, or acts on only in part, become sentences for the
//! reply's `warning`, so that a script that sends them learns what happens
//! instead of getting other behaviour without a word. Keys are also named
//! for `srtpgate_ng_keys_ignored_total`. A value that asks for what the
//! relay does anyway (`delete-delay=0`, rtpengine's `default` interface)
//! gets no warning.

use srtpgate_ng::{Ice, Osrtp, Request};

/// Untrusted text echoed in a warning is cut to this many characters, as
/// the parser cuts it.
const MAX_ECHO: usize = 64;

/// rtpengine's name for an interface configured without a name. The
/// relay's media addresses (`--interface ADDR`, no names) are that
/// interface, so naming it asks for what the relay does.
const DEFAULT_INTERFACE: &str = "default";

fn clip(s: &str) -> String {
    s.chars().take(MAX_ECHO).collect()
}

/// Keys parsed into the request that the relay does not act on as
/// rtpengine would: (the key's label for `srtpgate_ng_keys_ignored_total`,
/// the warning).
pub(crate) fn ignored_keys(req: &Request) -> Vec<(&'static str, String)> {
    let mut w = Vec::new();
    if let Some(text) = req.direction.as_ref().and_then(|(from, to)| direction(from, to)) {
        w.push(("direction", text));
    }
    if !req.osrtp.is_empty() {
        w.push(("osrtp", osrtp(&req.osrtp)));
    }
    // rtpengine deletes at once for 0 and uses its configured delay for a
    // negative value; this relay's delay is always none, so only a positive
    // value asks for something it does not do.
    if let Some(n) = req.delete_delay.filter(|&n| n > 0) {
        w.push(("delete-delay", format!("delete-delay={n} ignored: srtpgate deletes calls at once")));
    }
    if let Some(addr) = &req.media_address {
        w.push((
            "media-address",
            format!(
                "media-address={} ignored: media goes to the address in the SDP (received-from with \
                 SIP-source-address), then to where the peer's packets come from",
                clip(addr)
            ),
        ));
    }
    if matches!(req.ice, Some(Ice::ForceRelay | Ice::Optional)) {
        w.push((
            "ice",
            "ICE: srtpgate is ICE-lite with one host candidate (force-relay and optional act as force)".into(),
        ));
    }
    if !req.codec.ignore.is_empty() {
        w.push(("codec", "codec 'ignore' has no effect in srtpgate".into()));
    }
    w
}

/// The warning for `direction` (`from-interface`, `to-interface`), unless
/// it names no interface or only the default one. The relay has no named
/// interfaces: each side's media address is the configured one of its
/// address family. rtpengine reads `internal` and `external`, when no
/// interface has that name, as IPv4 and IPv6 (obsolete, `address family`
/// replaces it); the relay does not, and says so.
fn direction(from: &str, to: &str) -> Option<String> {
    let named = |s: &str| !s.is_empty() && s != DEFAULT_INTERFACE;
    if !named(from) && !named(to) {
        return None;
    }
    let (from, to) = (clip(from), clip(to));
    let what = match (from.is_empty(), to.is_empty()) {
        (false, true) => format!("from-interface={from}"),
        (true, false) => format!("to-interface={to}"),
        _ => format!("direction=[{from} {to}]"),
    };
    let legacy = [&from, &to].iter().any(|s| matches!(s.as_str(), "internal" | "external"));
    let why = if legacy {
        "srtpgate has no named interfaces and does not take internal/external as IPv4/IPv6 (address-family does)"
    } else {
        "srtpgate has no named interfaces"
    };
    Some(format!("{what} ignored: {why}; media addresses are picked by address family alone"))
}

/// The warning for `OSRTP` and `OSRTP-…` flags. The relay speaks no
/// opportunistic SRTP (RFC 8643): it reads no `a=crypto` in an RTP/AVP(F)
/// m-line, removes them from what it forwards and writes none into such a
/// line, so the offer is neither passed on (rtpengine's default), made
/// (`offer`) nor accepted (`accept`): those legs carry plain RTP.
fn osrtp(items: &[Osrtp]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for o in items {
        if !names.contains(&o.name()) {
            names.push(o.name());
        }
    }
    let mut text = format!(
        "OSRTP=[{}] ignored: opportunistic SRTP is not supported: a=crypto lines of RTP/AVP m-lines are \
         dropped and none are added to them, so those legs carry plain RTP",
        names.join(" ")
    );
    if items.iter().any(|o| matches!(o, Osrtp::OfferLegacy | Osrtp::AcceptLegacy | Osrtp::Accept)) {
        text.push_str(
            "; legacy best-effort SRTP (each m-line twice, RTP/AVP and RTP/SAVP) is neither written nor merged",
        );
    }
    text
}

/// Flags the parser knows that this relay does not act on (beyond what it
/// does anyway: symmetric RTP with latching, addresses from the SDP, no
/// change to direction attributes), each as a warning for the reply.
pub(crate) fn inert_flags(req: &Request) -> Vec<String> {
    let f = &req.flags;
    let named = [
        (f.asymmetric, "asymmetric"),
        (f.loop_protect, "loop-protect"),
        (f.strip_extmap, "strip-extmap"),
        (f.fragment, "fragment"),
        (f.reset, "reset"),
        (f.nat_wait, "NAT-wait"),
        (f.pierce_nat, "pierce-NAT"),
        (f.trickle_ice, "trickle-ICE"),
        (f.single_codec, "single-codec"),
        (f.unidirectional, "unidirectional"),
    ];
    named.iter().filter(|(on, _)| *on).map(|(_, n)| format!("flag '{n}' has no effect in srtpgate")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use srtpgate_ng::Value;

    fn req(extra: &[(&str, Value)]) -> Request {
        let mut v =
            Value::dict().with("command", "offer").with("call-id", "c").with("from-tag", "f").with("sdp", "v=0");
        for (k, x) in extra {
            v.insert(k, x.clone());
        }
        srtpgate_ng::parse_request(&v.to_bytes()).expect("parses")
    }

    fn list(items: &[&str]) -> Value {
        Value::List(items.iter().map(|s| Value::from(*s)).collect())
    }

    #[test]
    fn default_values_give_no_warning() {
        assert!(ignored_keys(&req(&[])).is_empty());
        for extra in [
            ("delete-delay", Value::from(0i64)),
            ("delete-delay", Value::from(-1i64)),
            ("direction", list(&["default", "default"])),
            ("from-interface", Value::from("default")),
            ("supports", list(&["load limit"])),
            ("ICE", Value::from("force")),
        ] {
            let r = req(std::slice::from_ref(&extra));
            assert!(ignored_keys(&r).is_empty(), "{}: {:?}", extra.0, ignored_keys(&r));
        }
    }

    #[test]
    fn each_ignored_key_says_what_happens_instead() {
        let r = req(&[
            ("direction", list(&["priv", "pub"])),
            ("OSRTP", list(&["accept-RFC"])),
            ("delete-delay", Value::from("30")),
            ("media-address", Value::from("192.0.2.9")),
        ]);
        let w = ignored_keys(&r);
        let keys: Vec<&str> = w.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["direction", "osrtp", "delete-delay", "media-address"]);
        assert_eq!(
            w[0].1,
            "direction=[priv pub] ignored: srtpgate has no named interfaces; media addresses are picked by \
             address family alone"
        );
        assert_eq!(
            w[1].1,
            "OSRTP=[accept-RFC] ignored: opportunistic SRTP is not supported: a=crypto lines of RTP/AVP m-lines \
             are dropped and none are added to them, so those legs carry plain RTP"
        );
        assert_eq!(w[2].1, "delete-delay=30 ignored: srtpgate deletes calls at once");
        assert!(w[3].1.starts_with("media-address=192.0.2.9 ignored: media goes to the address in the SDP"));
    }

    #[test]
    fn one_side_and_legacy_names() {
        let w = |extra: &[(&str, Value)]| ignored_keys(&req(extra)).into_iter().map(|(_, t)| t).collect::<Vec<_>>();
        assert_eq!(
            w(&[("from-interface", Value::from("priv"))]),
            ["from-interface=priv ignored: srtpgate has no named interfaces; media addresses are picked by \
              address family alone"]
        );
        assert!(w(&[("to-interface", Value::from("pub"))])[0].starts_with("to-interface=pub ignored:"));
        // One side named other than default: the whole direction is shown.
        assert!(w(&[("direction", list(&["default", "pub"]))])[0].starts_with("direction=[default pub] ignored:"));
        assert_eq!(
            w(&[("direction", list(&["internal", "internal"]))]),
            ["direction=[internal internal] ignored: srtpgate has no named interfaces and does not take \
              internal/external as IPv4/IPv6 (address-family does); media addresses are picked by address \
              family alone"]
        );
        // Untrusted names are cut.
        let long = "x".repeat(300);
        assert_eq!(w(&[("from-interface", Value::from(long.as_str()))])[0].matches('x').count(), MAX_ECHO);
    }

    #[test]
    fn osrtp_items_are_listed_once_and_legacy_noted() {
        let r = req(&[("OSRTP", list(&["offer", "offer-RFC"]))]);
        let w = ignored_keys(&r);
        assert!(w[0].1.starts_with("OSRTP=[offer] ignored:"), "{}", w[0].1);
        assert!(!w[0].1.contains("legacy"), "{}", w[0].1);
        let r = req(&[("flags", list(&["OSRTP-accept-legacy"]))]);
        let w = ignored_keys(&r);
        assert!(w[0].1.starts_with("OSRTP=[accept-legacy] ignored:"), "{}", w[0].1);
        assert!(w[0].1.ends_with("neither written nor merged"), "{}", w[0].1);
    }
}
