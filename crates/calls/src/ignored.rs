//! What a request asks for that the relay does not do. The parser reads
//! every option rtpengine documents into a [`Request`]; the ones this relay
//! does not act on, or acts on only in part, become sentences for the
//! reply's `warning`, so that a script that sends them learns what happens
//! instead of getting other behaviour without a word. Keys are also named
//! for `srtpgate_ng_keys_ignored_total`. A value that asks for what the
//! relay does anyway (`delete-delay=0`, rtpengine's `default` interface)
//! gets no warning. `direction` and `media-address` are acted on
//! (`interface.rs`, `edit.rs`).

use srtpgate_ng::{Ice, Osrtp, Request};

/// Keys parsed into the request that the relay does not act on as
/// rtpengine would: (the key's label for `srtpgate_ng_keys_ignored_total`,
/// the warning).
pub(crate) fn ignored_keys(req: &Request) -> Vec<(&'static str, String)> {
    let mut w = Vec::new();
    if !req.osrtp.is_empty() {
        w.push(("osrtp", osrtp(&req.osrtp)));
    }
    // rtpengine deletes at once for 0 and uses its configured delay for a
    // negative value; this relay's delay is always none, so only a positive
    // value asks for something it does not do.
    if let Some(n) = req.delete_delay.filter(|&n| n > 0) {
        w.push(("delete-delay", format!("delete-delay={n} ignored: srtpgate deletes calls at once")));
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
    w.extend(misplaced_media_keys(req));
    w
}

/// Media-control keys sent with a command that does not take them.
fn misplaced_media_keys(req: &Request) -> Vec<(&'static str, String)> {
    use srtpgate_ng::Command as C;
    let m = &req.media;
    let keys: [(&'static str, bool, &[C]); 12] = [
        ("file", m.file.is_some(), &[C::PlayMedia]),
        ("blob", m.blob.is_some(), &[C::PlayMedia]),
        ("db-id", m.db_id.is_some(), &[C::PlayMedia]),
        ("repeat-times", m.repeat_times.is_some(), &[C::PlayMedia]),
        ("repeat-duration", m.repeat_duration.is_some(), &[C::PlayMedia]),
        ("start-pos", m.start_pos.is_some(), &[C::PlayMedia]),
        ("code", m.code.is_some(), &[C::PlayDtmf, C::BlockDtmf]),
        ("duration", m.duration.is_some(), &[C::PlayDtmf]),
        ("volume", m.volume.is_some(), &[C::PlayDtmf]),
        ("pause", m.pause.is_some(), &[C::PlayDtmf]),
        ("dtmf-security", m.dtmf_security.is_some(), &[C::BlockDtmf]),
        (
            "address",
            m.address.is_some(),
            &[
                C::PlayMedia,
                C::StopMedia,
                C::PlayDtmf,
                C::BlockMedia,
                C::UnblockMedia,
                C::SilenceMedia,
                C::UnsilenceMedia,
                C::BlockDtmf,
                C::UnblockDtmf,
            ],
        ),
    ];
    keys.into_iter()
        .filter(|(_, given, takes)| *given && !takes.contains(&req.command))
        .map(|(k, _, _)| (k, format!("key '{k}' ignored: '{}' does not take it", req.command.name())))
        .collect()
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
            ("direction", list(&["priv", "pub"])),
            ("media-address", Value::from("192.0.2.9")),
            ("supports", list(&["load limit"])),
            ("ICE", Value::from("force")),
        ] {
            let r = req(std::slice::from_ref(&extra));
            assert!(ignored_keys(&r).is_empty(), "{}: {:?}", extra.0, ignored_keys(&r));
        }
    }

    #[test]
    fn each_ignored_key_says_what_happens_instead() {
        let r = req(&[("OSRTP", list(&["accept-RFC"])), ("delete-delay", Value::from("30"))]);
        let w = ignored_keys(&r);
        let keys: Vec<&str> = w.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["osrtp", "delete-delay"]);
        assert_eq!(
            w[0].1,
            "OSRTP=[accept-RFC] ignored: opportunistic SRTP is not supported: a=crypto lines of RTP/AVP m-lines \
             are dropped and none are added to them, so those legs carry plain RTP"
        );
        assert_eq!(w[1].1, "delete-delay=30 ignored: srtpgate deletes calls at once");
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
