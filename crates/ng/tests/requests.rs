//! NG requests as Kamailio's and OpenSIPS's `rtpengine` modules send them
//! (built from the modules' `parse_flags` and rtpengine's NG documentation).

use proptest::prelude::*;
use srtpgate_ng::*;

const SDP: &str = "v=0\r\no=- 1545997027 1 IN IP4 198.51.100.1\r\ns=tester\r\nt=0 0\r\n\
                   m=audio 2000 RTP/AVP 0 8 101\r\nc=IN IP4 198.51.100.1\r\na=rtpmap:101 telephone-event/8000\r\n\
                   a=sendrecv\r\n";

fn list(items: &[&str]) -> Value {
    Value::List(items.iter().map(|s| Value::from(*s)).collect())
}

/// A minimal offer, for the tests to add options to.
fn base() -> Value {
    Value::dict().with("command", "offer").with("call-id", "c").with("from-tag", "f").with("sdp", SDP)
}

fn parse(v: &Value) -> Result<Request, NgError> {
    parse_request(&v.to_bytes())
}

fn err(v: &Value) -> String {
    parse(v).expect_err("should be refused").to_string()
}

/// What `rtpengine_offer("trust-address replace-origin replace-session-connection
/// ICE=remove RTP/SAVP SDES-no-AES_CM_128_HMAC_SHA1_32 rtcp-mux-demux
/// via-branch=1 record-call=yes label=caller")` sends, keys in the module's
/// (unsorted) insertion order.
fn kamailio_offer_bytes() -> Vec<u8> {
    let mut b = b"d".to_vec();
    let mut kv = |k: &str, v: Value| {
        b.extend(format!("{}:{}", k.len(), k).as_bytes());
        v.encode(&mut b);
    };
    kv("sdp", Value::from(SDP));
    kv("ICE", Value::from("remove"));
    kv("record-call", Value::from("yes"));
    kv("label", Value::from("caller"));
    kv("flags", list(&["trust-address", "SDES-no-AES_CM_128_HMAC_SHA1_32", "directional"]));
    kv("replace", list(&["origin", "session-connection"]));
    kv("transport-protocol", Value::from("RTP/SAVP"));
    kv("rtcp-mux", list(&["demux"]));
    kv("call-id", Value::from("a84b4c76e66710@pc33.atlanta.example.com"));
    kv("via-branch", Value::from("z9hG4bK776asdhds"));
    kv("received-from", list(&["IP4", "192.0.2.10"]));
    kv("from-tag", Value::from("1928301774"));
    kv("command", Value::from("offer"));
    b.push(b'e');
    b
}

#[test]
fn kamailio_offer() {
    let datagram = [b"12345_678_0 ".as_slice(), &kamailio_offer_bytes()].concat();
    let (cookie, body) = split(&datagram).unwrap();
    assert_eq!(cookie, b"12345_678_0");
    let r = parse_request(body).unwrap();
    assert_eq!(r.command, Command::Offer);
    assert_eq!(r.call_id.as_deref(), Some("a84b4c76e66710@pc33.atlanta.example.com"));
    assert_eq!(r.from_tag.as_deref(), Some("1928301774"));
    assert_eq!(r.to_tag, None);
    assert_eq!(r.via_branch.as_deref(), Some("z9hG4bK776asdhds"));
    assert_eq!(r.sdp.as_deref(), Some(SDP));
    assert_eq!(r.transport_protocol, Some(TransportProtocol::RtpSavp));
    assert!(r.transport_protocol.unwrap().is_secure());
    assert_eq!(r.replace, Replace { origin: true, session_connection: true, ..Replace::default() });
    assert_eq!(r.ice, Some(Ice::Remove));
    assert_eq!(r.rtcp_mux, vec![RtcpMux::Demux]);
    assert_eq!(r.sdes, vec![Sdes::No("AES_CM_128_HMAC_SHA1_32".into())]);
    assert_eq!(r.record_call, Some(RecordCall::Yes));
    assert_eq!(r.received_from, Some(("IP4".into(), "192.0.2.10".into())));
    assert_eq!(r.label.as_deref(), Some("caller"));
    assert!(r.flags.trust_address && r.flags.directional);
    assert!(!r.flags.strict_source);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    assert_eq!(r.warning(), None);
    assert_eq!(r.raw.get("command").and_then(Value::as_str), Some("offer"));
}

#[test]
fn offer_with_everything() {
    let v = Value::dict()
        .with("command", "offer")
        .with("call-id", "cfBXzDSZqhYNcXM")
        .with("from-tag", "mS9rSAn0Cr")
        .with("sdp", SDP)
        .with("via-branch", "5KiTRPZHH1nL6")
        .with(
            "flags",
            list(&[
                "trust address",
                "strict-source",
                "loop_protect",
                "no-rtcp-attribute",
                "full rtcp attribute",
                "generate-mid",
                "strip extmap",
                "port-latching",
                "media-handover",
                "symmetric",
                "SIP-source-address",
                "fragment",
                "pad crypto",
                "OSRTP-accept",
                "codec-strip-PCMU",
                "codec-offer-opus",
                "SDES-only-aes_cm_128_hmac_sha1_80",
                "SDES-lifetime",
                "replace-username",
                "rtcp-mux-offer",
                "RTP/AVPF",
            ]),
        )
        .with("replace", list(&["origin", "SDP version", "session name", "zero_address", "force-increment-sdp-ver"]))
        .with("address family", "IP6")
        .with("received from", list(&["IP6", "2001:db8::1"]))
        .with("ICE", "force-relay")
        .with("rtcp-mux", list(&["accept", "require"]))
        .with(
            "SDES",
            list(&[
                "unencrypted_srtcp",
                "UNAUTHENTICATED_SRTP",
                "no-NULL_HMAC_SHA1_32",
                "order:AES_256_CM_HMAC_SHA1_80;AES_CM_128_HMAC_SHA1_80;",
            ]),
        )
        .with("media address", "2001:db8::6f24:65b")
        .with("DTLS", "off")
        .with("direction", list(&["priv", "pub"]))
        .with("record call", "no")
        .with("delete-delay", "30")
        .with("codec", Value::dict().with("strip", list(&["G729"])).with("transcode", list(&["PCMA"])))
        .with("TOS", 184i64)
        .with("supports", list(&["load limit"]));
    let r = parse(&v).unwrap();
    let f = r.flags;
    assert!(f.trust_address && f.strict_source && f.loop_protect && f.no_rtcp_attribute && f.full_rtcp_attribute);
    assert!(f.generate_mid && f.strip_extmap && f.port_latching && f.media_handover && f.symmetric);
    assert!(f.sip_source_address && f.fragment);
    assert!(!f.asymmetric && !f.reset);
    assert_eq!(r.transport_protocol, Some(TransportProtocol::RtpAvpf));
    assert_eq!(
        r.replace,
        Replace {
            origin: true,
            username: true,
            sdp_version: true,
            session_name: true,
            zero_address: true,
            force_increment_sdp_ver: true,
            ..Replace::default()
        }
    );
    assert_eq!(r.ice, Some(Ice::ForceRelay));
    // Keys are processed sorted ("flags" < "rtcp-mux"), items in list order.
    assert_eq!(r.rtcp_mux, vec![RtcpMux::Offer, RtcpMux::Accept, RtcpMux::Require]);
    assert_eq!(
        r.sdes,
        vec![
            Sdes::UnencryptedSrtcp,
            Sdes::UnauthenticatedSrtp,
            Sdes::No("NULL_HMAC_SHA1_32".into()),
            Sdes::Order(vec!["AES_256_CM_HMAC_SHA1_80".into(), "AES_CM_128_HMAC_SHA1_80".into()]),
            Sdes::Pad,
            Sdes::Only("AES_CM_128_HMAC_SHA1_80".into()),
            Sdes::Lifetime,
        ]
    );
    assert_eq!(r.osrtp, vec![Osrtp::Accept]);
    assert_eq!(r.codec.strip, vec!["G729".to_string(), "PCMU".to_string()]);
    assert_eq!(r.codec.offer, vec!["opus".to_string()]);
    assert_eq!(r.codec.transcode, vec!["PCMA".to_string()]);
    assert_eq!(r.address_family.as_deref(), Some("IP6"));
    assert_eq!(r.received_from, Some(("IP6".into(), "2001:db8::1".into())));
    assert_eq!(r.media_address.as_deref(), Some("2001:db8::6f24:65b"));
    assert!(r.dtls_off);
    assert!(r.supports_load_limit);
    assert_eq!(r.direction, Some(("priv".into(), "pub".into())));
    assert_eq!(r.record_call, Some(RecordCall::No));
    assert_eq!(r.delete_delay, Some(30));
    assert_eq!(r.warnings, vec!["key 'TOS' ignored: not supported by srtpgate".to_string(),]);
}

#[test]
fn answer_delete_query_ping_list_statistics() {
    let answer = Value::dict()
        .with("command", "answer")
        .with("call-id", "c1")
        .with("from-tag", "f1")
        .with("to-tag", "t1")
        .with("sdp", SDP)
        .with("flags", list(&["trust-address"]))
        .with("replace", list(&["origin"]))
        .with("transport-protocol", "RTP/AVP")
        .with("received-from", list(&["IP4", "203.0.113.7"]));
    let r = parse(&answer).unwrap();
    assert_eq!(r.command, Command::Answer);
    assert_eq!(r.to_tag.as_deref(), Some("t1"));
    assert_eq!(r.transport_protocol, Some(TransportProtocol::RtpAvp));
    assert!(r.warnings.is_empty());

    let delete = Value::dict()
        .with("command", "delete")
        .with("call-id", "c1")
        .with("from-tag", "f1")
        .with("delete-delay", 0i64)
        .with("flags", list(&["fatal", "to-tag"]))
        .with("received-from", list(&["IP4", "203.0.113.7"]));
    let r = parse(&delete).unwrap();
    assert_eq!(r.command, Command::Delete);
    assert_eq!(r.delete_delay, Some(0));
    assert!(r.flags.fatal && r.flags.to_tag);

    let r = parse(&Value::dict().with("command", "query").with("call-id", "c1").with("from-tag", "f1")).unwrap();
    assert_eq!(r.command, Command::Query);

    let r = parse(&Value::dict().with("command", "ping")).unwrap();
    assert_eq!(r.command, Command::Ping);
    assert_eq!(r, parse_request(b"d7:command4:pinge").unwrap());

    let r = parse(&Value::dict().with("command", "list").with("limit", "10")).unwrap();
    assert_eq!((r.command, r.limit), (Command::List, Some(10)));
    let r = parse(&Value::dict().with("command", "list").with("offset", 64i64)).unwrap();
    assert_eq!(r.offset, Some(64));
    assert!(err(&Value::dict().with("command", "list").with("offset", -1i64)).contains("offset"));

    let r = parse(&Value::dict().with("command", "statistics")).unwrap();
    assert_eq!(r.command, Command::Statistics);
    assert_eq!(parse(&Value::dict().with("command", "Statistics")).unwrap().command, Command::Statistics);
}

#[test]
fn missing_keys() {
    let offer = Value::dict().with("command", "offer").with("call-id", "c").with("from-tag", "f").with("sdp", SDP);
    assert!(parse(&offer).is_ok());
    let mut o = offer.clone();
    o.remove("call-id");
    assert_eq!(err(&o), "missing key 'call-id'");
    let mut o = offer.clone();
    o.remove("from-tag");
    assert_eq!(err(&o), "missing key 'from-tag'");
    let mut o = offer.clone();
    o.remove("sdp");
    assert_eq!(err(&o), "missing key 'sdp'");
    let answer = offer.clone().with("command", "answer");
    assert_eq!(err(&answer), "missing key 'to-tag'");
    assert_eq!(err(&Value::dict().with("command", "delete")), "missing key 'call-id'");
    assert_eq!(err(&Value::dict().with("command", "query").with("from-tag", "f")), "missing key 'call-id'");
    assert_eq!(err(&Value::dict().with("call-id", "c")), "missing key 'command'");
}

#[test]
fn unknown_commands_and_flags() {
    assert_eq!(err(&Value::dict().with("command", "foo")), "Unrecognized command 'foo'");
    assert_eq!(err(&Value::dict().with("command", "publish")), "Unrecognized command 'publish'");
    assert_eq!(err(&Value::dict().with("command", 3i64)), "key 'command' must be a string");
    assert_eq!(err(&base().with("flags", list(&["xyz"]))), "unknown flag 'xyz'");
    assert_eq!(err(&base().with("flags", list(&["SDES-bogus"]))), "unknown flag 'SDES-bogus'");
    assert_eq!(err(&base().with("flags", list(&["replace-bogus"]))), "unknown flag 'replace-bogus'");
    assert_eq!(err(&base().with("flags", list(&["rtcp-mux-bogus"]))), "unknown flag 'rtcp-mux-bogus'");
    assert_eq!(err(&base().with("flags", list(&["OSRTP-bogus"]))), "unknown flag 'OSRTP-bogus'");
    assert_eq!(err(&base().with("flags", list(&["BUNDLE-bogus"]))), "unknown flag 'BUNDLE-bogus'");
    assert_eq!(err(&base().with("flags", list(&["SDES-no-AES_CM_129"]))), "unknown crypto suite 'AES_CM_129'");
    assert_eq!(err(&base().with("replace", list(&["bogus"]))), "unknown replace option 'bogus'");
    assert_eq!(err(&base().with("SDES", list(&["bogus"]))), "unknown SDES option 'bogus'");
    assert_eq!(
        err(&base().with("SDES", list(&["only-F8_128_HMAC_SHA1_32"]))),
        "unknown crypto suite 'F8_128_HMAC_SHA1_32'"
    );
    assert_eq!(err(&base().with("rtcp-mux", list(&["bogus"]))), "unknown rtcp-mux option 'bogus'");
    assert_eq!(err(&base().with("ICE", "bogus")), "unknown ICE option 'bogus'");
    assert_eq!(err(&base().with("OSRTP", list(&["bogus"]))), "unknown OSRTP option 'bogus'");
    assert_eq!(
        err(&base().with("transport-protocol", "UDP/TLS/RTP/SAVPX")),
        "unsupported transport-protocol 'UDP/TLS/RTP/SAVPX'"
    );
    assert_eq!(err(&base().with("DTLS", "sideways")), "invalid value 'sideways' for 'DTLS'");
    assert_eq!(err(&base().with("transport-protocol", "accept")), "unsupported transport-protocol 'accept'");
    assert_eq!(err(&base().with("media-address", "example.com")), "invalid value 'example.com' for 'media-address'");
    assert_eq!(
        err(&base().with("received-from", list(&["IP6", "192.0.2.1"]))),
        "invalid value 'IP6' for 'received-from'"
    );
    assert_eq!(err(&base().with("address family", "IP5")), "invalid value 'IP5' for 'address family'");
    assert_eq!(
        err(&base().with("direction", list(&["a", "b", "c"]))),
        "key 'direction' must be a list of one or two interface names"
    );
    assert_eq!(err(&base().with("delete-delay", "soon")), "key 'delete-delay' must be an integer");
    assert_eq!(err(&base().with("flags", Value::Int(1))), "key 'flags' must be a list of strings");
    assert_eq!(err(&base().with("call id", "other")), "duplicate key 'call-id'");
    // Long untrusted names are cut in the error text.
    let long = "x".repeat(1000);
    assert_eq!(err(&base().with("flags", list(&[&long]))), format!("unknown flag '{}'", "x".repeat(64)));
}

#[test]
fn ignored_things_warn() {
    let r = parse(
        &Value::dict()
            .with("command", "offer")
            .with("call-id", "c")
            .with("from-tag", "f")
            .with("sdp", SDP)
            .with(
                "flags",
                list(&["always-transcode", "early media", "endpoint-learning-delayed", "T.38-decode", "record-call"]),
            )
            .with("frobnicate", "1")
            .with("ptime", 20i64)
            .with("ptime-reverse", "30")
            .with("sip-message-type", "sip_request"),
    )
    .unwrap();
    assert!(r.flags.always_transcode);
    assert_eq!((r.ptime, r.ptime_reverse), (Some(20), Some(30)));
    assert_eq!(
        r.warnings,
        vec![
            "flag 'early media' ignored: not supported by srtpgate",
            "flag 'endpoint-learning-delayed' ignored: not supported by srtpgate",
            "flag 'T.38-decode' ignored: not supported by srtpgate",
            "unknown key 'frobnicate' ignored",
        ]
    );
    assert_eq!(r.record_call, Some(RecordCall::Yes));
    // Keys (not flags) behind those warnings, for the daemon's counter.
    assert_eq!(r.ignored_keys, vec!["other"]);
}

/// Each key the parser ignores is named once in `ignored_keys`, by its
/// normalized name from the parser's table; unknown keys as `other`.
#[test]
fn ignored_keys_are_named_once() {
    let r = parse(
        &base()
            .with("TOS", 184i64)
            .with("t.38", "decode")
            .with("frobnicate", "1")
            .with("wibble", "2")
            .with("record call", "yes")
            .with("supports", list(&["load limit", "teleportation"]))
            .with("codec", Value::dict().with("frobnicate", list(&["PCMA"])))
            .with("sip-message-type", "sip_request"),
    )
    .unwrap();
    // In the order the keys are processed (sorted by their bytes: "TOS" first).
    assert_eq!(r.ignored_keys, vec!["tos", "codec", "other", "supports", "t.38"]);
    assert!(r.supports_load_limit);
    // Keys that are parsed into fields are not in the list: the daemon
    // decides whether it acts on them.
    let r = parse(
        &base()
            .with("direction", list(&["priv", "pub"]))
            .with("OSRTP", list(&["accept"]))
            .with("delete-delay", 30i64)
            .with("supports", list(&["load limit"])),
    )
    .unwrap();
    assert!(r.ignored_keys.is_empty() && r.warnings.is_empty(), "{:?} {:?}", r.ignored_keys, r.warnings);
}

/// `direction` as rtpengine reads it: one name is the first side's; in
/// `rtpp-flags`, each `direction=X` (or bare `internal`/`external`) names
/// the next side, and a third is ignored with a warning.
#[test]
fn direction_forms() {
    let r = parse(&base().with("direction", list(&["pub"]))).unwrap();
    assert_eq!(r.direction, Some(("pub".into(), String::new())));
    let r = parse(&base().with("direction", list(&[]))).unwrap();
    assert_eq!(r.direction, None);
    let r = parse(&base().with("direction", list(&["priv"])).with("to-interface", "pub")).unwrap();
    assert_eq!(r.direction, Some(("priv".into(), "pub".into())));
    let r = parse(&base().with("to-interface", "pub")).unwrap();
    assert_eq!(r.direction, Some((String::new(), "pub".into())));

    let rtpp = |flags: &str| parse(&base().with("rtpp-flags", flags)).unwrap();
    assert_eq!(rtpp("direction=priv direction=pub").direction, Some(("priv".into(), "pub".into())));
    assert_eq!(rtpp("direction=priv").direction, Some(("priv".into(), String::new())));
    assert_eq!(rtpp("internal external").direction, Some(("internal".into(), "external".into())));
    assert_eq!(rtpp("direction=[priv pub]").direction, Some(("priv".into(), "pub".into())));
    // Kamailio 5.6's `direction=internal direction=internal`, as rtpp-flags.
    let r = rtpp("trust-address direction=internal direction=internal");
    assert_eq!(r.direction, Some(("internal".into(), "internal".into())));
    assert!(r.flags.trust_address && r.warnings.is_empty(), "{:?}", r.warnings);
    let r = rtpp("direction=a direction=b direction=c");
    assert_eq!(r.direction, Some(("a".into(), "b".into())));
    assert_eq!(r.warnings, vec!["'direction=c' in rtpp-flags ignored: both interfaces are already named"]);
    assert_eq!(r.ignored_keys, vec!["direction"]);
    // Outside rtpp-flags, `internal` is no flag rtpengine knows.
    assert_eq!(err(&base().with("flags", list(&["internal"]))), "unknown flag 'internal'");
}

#[test]
fn osrtp_items_are_named_as_documented() {
    let r = parse(&base().with("OSRTP", list(&["offer-RFC", "offer-legacy", "accept-rfc", "Accept-Legacy", "accept"])))
        .unwrap();
    let names: Vec<&str> = r.osrtp.iter().map(|o| o.name()).collect();
    assert_eq!(names, ["offer", "offer-legacy", "accept-RFC", "accept-legacy", "accept"]);
}

#[test]
fn bad_ptime_is_refused() {
    for bad in [Value::from(0i64), Value::from(-20i64), Value::from(5000i64), Value::from("twenty")] {
        assert!(parse(&base().with("ptime", bad.clone())).is_err(), "{bad:?}");
    }
}

#[test]
fn spellings_are_equivalent() {
    for spelling in ["trust-address", "trust address", "trust_address", "Trust-Address", "TRUST ADDRESS"] {
        assert!(parse(&base().with("flags", list(&[spelling]))).unwrap().flags.trust_address, "{spelling}");
    }
    for spelling in ["reject-ICE", "ICE-reject", "reject ice", "ice_reject"] {
        assert!(parse(&base().with("flags", list(&[spelling]))).unwrap().flags.reject_ice, "{spelling}");
    }
    for key in ["record call", "record-call", "record_call", "Record-Call"] {
        assert_eq!(parse(&base().with(key, "on")).unwrap().record_call, Some(RecordCall::Yes), "{key}");
    }
    for value in ["force_relay", "force-relay", "force relay", "FORCE-RELAY"] {
        assert_eq!(parse(&base().with("ice", value)).unwrap().ice, Some(Ice::ForceRelay), "{value}");
    }
    assert_eq!(
        parse(&base().with("transport protocol", "rtp/savpf")).unwrap().transport_protocol,
        Some(TransportProtocol::RtpSavpf)
    );
    // A string where rtpengine also takes a comma-separated list.
    let r = parse(&base().with("flags", "trust-address, strict-source").with("replace", "origin")).unwrap();
    assert!(r.flags.trust_address && r.flags.strict_source && r.replace.origin);
    // Integers as strings and as integers.
    assert_eq!(parse(&base().with("delete delay", 5i64)).unwrap().delete_delay, Some(5));
    assert_eq!(parse(&base().with("delete_delay", "5")).unwrap().delete_delay, Some(5));
    // from-interface/to-interface fill direction.
    let r = parse(&base().with("from-interface", "priv").with("to-interface", "pub")).unwrap();
    assert_eq!(r.direction, Some(("priv".into(), "pub".into())));
    // received-from as a plain address.
    let r = parse(&base().with("received-from", "192.0.2.1")).unwrap();
    assert_eq!(r.received_from, Some(("IP4".into(), "192.0.2.1".into())));
}

#[test]
fn rtpp_flags_string() {
    let v = Value::dict().with("command", "offer").with("call-id", "c").with("from-tag", "f").with("sdp", SDP).with(
        "rtpp-flags",
        "replace-origin replace-session-connection strict-source label=caller OSRTP-accept \
             address-family=IP4 transport-protocol=RTP/SAVP rtcp-mux=[demux] SDES=[no-AES_CM_128_HMAC_SHA1_32 pad] \
             codec=[strip=[G729 G722] offer=[PCMA]]",
    );
    let r = parse(&v).unwrap();
    assert!(r.replace.origin && r.replace.session_connection && r.flags.strict_source);
    assert_eq!(r.label.as_deref(), Some("caller"));
    assert_eq!(r.osrtp, vec![Osrtp::Accept]);
    assert_eq!(r.address_family.as_deref(), Some("IP4"));
    assert_eq!(r.transport_protocol, Some(TransportProtocol::RtpSavp));
    assert_eq!(r.rtcp_mux, vec![RtcpMux::Demux]);
    assert_eq!(r.sdes, vec![Sdes::No("AES_CM_128_HMAC_SHA1_32".into()), Sdes::Pad]);
    assert_eq!(r.codec.strip, vec!["G729".to_string(), "G722".to_string()]);
    assert_eq!(r.codec.offer, vec!["PCMA".to_string()]);
    assert_eq!(err(&v.clone().with("rtpp-flags", "bogus-flag")), "unknown flag 'bogus-flag'");
    assert!(parse(&v.clone().with("rtpp-flags", "codec=[strip=[G729")).is_err());
    assert!(parse(&v.clone().with("rtpp-flags", "a=[[[[[[x]]]]]]")).is_err());
    assert!(parse(&v.with("rtpp-flags", "rtpp-flags=x")).is_err());
}

#[test]
fn datagrams() {
    assert_eq!(split(b"1_2_3 d7:command4:pinge").unwrap(), (&b"1_2_3"[..], &b"d7:command4:pinge"[..]));
    assert_eq!(split(b"abc").unwrap_err().to_string(), "malformed datagram: no space after the cookie");
    assert_eq!(split(b" de").unwrap_err().to_string(), "malformed datagram: empty cookie");
    assert!(split(&[b"x".repeat(65), b" de".to_vec()].concat()).is_err());
    assert!(split(&[b"x".repeat(64), b" de".to_vec()].concat()).is_ok());
    assert!(split(b"a\x01b de").is_err());
    assert!(matches!(split(&vec![b'a'; MAX_DATAGRAM + 1]), Err(NgError::TooLarge(_))));
    assert_eq!(split(b"c ").unwrap(), (&b"c"[..], &b""[..]));
    assert_eq!(parse_request(b"").unwrap_err().to_string(), "malformed bencode at byte 0: unexpected end of input");
    assert_eq!(parse_request(b"le").unwrap_err(), NgError::NotADictionary);
    assert!(parse_request(br#"{"command":"ping"}"#).unwrap_err().to_string().contains("JSON"));
    assert_eq!(
        parse_request(b"d7:command4:ping7:commandi1ee").unwrap_err().to_string(),
        "malformed bencode at byte 16: duplicate dictionary key 'command'"
    );
    assert_eq!(
        parse_request(b"d7:command4:pingex").unwrap_err().to_string(),
        "malformed bencode at byte 17: trailing data after the value"
    );
}

#[test]
fn replies_round_trip() {
    let datagram = request("5323_1", &Value::dict().with("command", "ping"));
    assert_eq!(datagram, b"5323_1 d7:command4:pinge");
    let (cookie, body) = split(&datagram).unwrap();
    assert_eq!(parse_request(body).unwrap().command, Command::Ping);

    let pong = reply(cookie, &Value::dict().with("result", "pong"));
    assert_eq!(pong, b"5323_1 d6:result4:ponge");
    let (c, v) = parse_reply(&pong).unwrap();
    assert_eq!(c, b"5323_1");
    assert_eq!(v.get("result").and_then(Value::as_str), Some("pong"));

    let e = reply(b"7", &error("Unrecognized command 'foo'"));
    assert_eq!(e, b"7 d12:error-reason26:Unrecognized command 'foo'6:result5:errore");
    let (_, v) = parse_reply(&e).unwrap();
    assert_eq!(v, error("Unrecognized command 'foo'"));
    let answer = ok().with("sdp", SDP).with("warning", "x");
    assert_eq!(parse_reply(&reply(b"c", &answer)).unwrap().1.get("sdp").and_then(Value::as_str), Some(SDP));
    assert_eq!(parse_reply(b"c de").unwrap_err().to_string(), "malformed reply: no string 'result'");
    assert_eq!(parse_reply(b"c i1e").unwrap_err(), NgError::NotADictionary);
}

#[test]
fn result_does_not_depend_on_key_order() {
    let body = kamailio_offer_bytes();
    let a = parse_request(&body).unwrap();
    let b = parse_request(&a.raw.to_bytes()).unwrap();
    assert_eq!(a, b);
}

proptest! {
    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        if let Ok((_, body)) = split(&data) {
            let _ = parse_request(body);
        }
        let _ = parse_request(&data);
    }

    #[test]
    fn parse_never_panics_on_plausible_requests(
        cmd in prop_oneof![Just("offer"), Just("answer"), Just("delete"), Just("ping"), Just("query"), Just("x")],
        flags in proptest::collection::vec("[a-zA-Z/_ .:=\\[\\]-]{0,24}", 0..6),
        keys in proptest::collection::vec(("[a-zA-Z _-]{1,12}", "[a-zA-Z0-9/:._ \\[\\]=-]{0,16}"), 0..6),
    ) {
        let mut v = Value::dict().with("command", cmd).with("call-id", "c").with("from-tag", "f").with("to-tag", "t").with("sdp", "v=0");
        v.insert("flags", Value::List(flags.iter().map(|f| Value::from(f.as_str())).collect()));
        for (k, val) in &keys {
            v.insert(k, val.as_str());
        }
        v.insert("rtpp-flags", flags.join(" "));
        if let Ok(r) = parse(&v) {
            let again = parse_request(&r.raw.to_bytes()).unwrap();
            prop_assert_eq!(r, again);
        }
    }
}

/// The fuzz seeds: `bad-*` are refused, the others parse.
#[test]
fn fuzz_seeds_parse_as_named() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/ng_message");
    // The seeds are committed: without them the checkout is broken.
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let data = std::fs::read(&path).unwrap();
        let parsed = split(&data).and_then(|(_, body)| parse_request(body));
        assert_eq!(parsed.is_ok(), !name.starts_with("bad-"), "{name}: {parsed:?}");
    }
}

/// A request of thousands of unknown keys keeps a bounded list of warnings:
/// the reply's `warning` must not be larger than the request (issue 9).
#[test]
fn warnings_are_bounded() {
    let mut v = Value::dict().with("command", "ping");
    for i in 0..2200 {
        v.insert(format!("k{i:05}").as_str(), 1i64);
    }
    let r = parse(&v).unwrap();
    assert_eq!(r.warnings.len(), MAX_WARNINGS);
    assert_eq!(r.warnings_left_out, 2200 - MAX_WARNINGS);
    let w = r.warning().expect("warning");
    assert!(w.len() <= MAX_WARNING_TEXT, "{} bytes", w.len());
    assert!(w.ends_with(&format!("and {} more warnings", 2200 - MAX_WARNINGS)), "{w}");
    // Long warnings are cut by bytes too.
    let long: Vec<String> = (0..10).map(|i| format!("{i}{}", "x".repeat(600))).collect();
    let w = warning_text(&long, 0).expect("text");
    assert!(w.len() <= MAX_WARNING_TEXT, "{} bytes", w.len());
    assert!(w.ends_with("and 7 more warnings"), "{w}");
    assert_eq!(warning_text(&[], 0), None);
    assert_eq!(warning_text(&[], 3).as_deref(), Some("and 3 more warnings"));
}

#[test]
fn webrtc_options() {
    let r = parse(
        &base()
            .with("transport-protocol", "UDP/TLS/RTP/SAVPF")
            .with("DTLS", "passive")
            .with("ICE", "force")
            .with("flags", list(&["generate-mid"])),
    )
    .unwrap();
    let t = r.transport_protocol.unwrap();
    assert_eq!(t, TransportProtocol::UdpTlsRtpSavpf);
    assert!(t.is_dtls() && t.is_secure() && t.is_feedback());
    assert_eq!(r.dtls, Some(Dtls::Passive));
    assert!(!r.dtls_off);
    assert_eq!(r.ice, Some(Ice::Force));
    assert!(r.flags.generate_mid);
    let r = parse(&base().with("DTLS", "active").with("flags", list(&["UDP/TLS/RTP/SAVP"]))).unwrap();
    assert_eq!(r.dtls, Some(Dtls::Active));
    assert_eq!(r.transport_protocol, Some(TransportProtocol::UdpTlsRtpSavp));
    assert!(!TransportProtocol::UdpTlsRtpSavp.is_feedback());
    let r = parse(&base().with("DTLS-reverse", "passive")).unwrap();
    assert_eq!(r.dtls_reverse, Some(Dtls::Passive));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    let r = parse(&base().with("DTLS", "no")).unwrap();
    assert!(r.dtls_off);
    assert_eq!(r.dtls, Some(Dtls::Off));
    // rtpengine's shorthand.
    let r = parse(&base().with("flags", list(&["WebRTC"]))).unwrap();
    assert_eq!(r.transport_protocol, Some(TransportProtocol::UdpTlsRtpSavpf));
    assert_eq!(r.ice, Some(Ice::Force));
    assert_eq!(r.rtcp_mux, vec![RtcpMux::Offer, RtcpMux::Require]);
    assert!(r.flags.generate_mid);
    assert_eq!(r.sdes, vec![Sdes::Off]);
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn bundle_flags_are_read_in_order() {
    let v = base().with("flags", list(&["BUNDLE-offer", "bundle-reject", "BUNDLE-require", "BUNDLE-accept"]));
    let r = parse(&v).expect("parses");
    assert_eq!(r.bundle, vec![Bundle::Offer, Bundle::Reject, Bundle::Require, Bundle::Accept]);
    assert!(r.warnings.iter().any(|w| w.contains("BUNDLE-require")), "{:?}", r.warnings);
}

#[test]
fn supports_load_limit_in_any_spelling() {
    for spelling in ["load limit", "Load-Limit", "load_limit", "LOAD LIMIT"] {
        let r = parse(&base().with("supports", list(&[spelling]))).expect("offer");
        assert!(r.supports_load_limit, "{spelling}");
        assert!(r.warnings.is_empty(), "{spelling}: {:?}", r.warnings);
    }
    let r = parse(&base().with("supports", list(&["load limits"]))).expect("offer");
    assert!(!r.supports_load_limit);
    assert_eq!(r.warnings.len(), 1);
}

#[test]
fn recording_commands_and_their_keys() {
    for (name, command) in [
        ("start recording", Command::StartRecording),
        ("stop recording", Command::StopRecording),
        ("pause recording", Command::PauseRecording),
        ("Start Recording", Command::StartRecording),
    ] {
        let r = parse(&Value::dict().with("command", name).with("call-id", "c")).unwrap();
        assert_eq!(r.command, command, "{name}");
        assert!(r.warnings.is_empty(), "{name}: {:?}", r.warnings);
        assert_eq!(
            err(&Value::dict().with("command", name).with("from-tag", "f")),
            NgError::MissingKey("call-id").to_string(),
            "{name}"
        );
    }
    // Every spelling of rtpengine's file, directory and pattern keys.
    for key in ["recording-file", "recording file", "output-destination", "output-file", "recording-dest"] {
        let r = parse(&base().with(key, "a/b.pcap")).unwrap();
        assert_eq!(r.recording_file.as_deref(), Some("a/b.pcap"), "{key}");
        assert!(r.warnings.is_empty(), "{key}: {:?}", r.warnings);
    }
    for key in ["recording-path", "recording-dir", "output-folder", "output path"] {
        assert_eq!(parse(&base().with(key, "sub")).unwrap().recording_path.as_deref(), Some("sub"), "{key}");
    }
    for key in ["recording-pattern", "output-pattern"] {
        assert_eq!(parse(&base().with(key, "%c")).unwrap().recording_pattern.as_deref(), Some("%c"), "{key}");
    }
    assert_eq!(parse(&base().with("metadata", "a=b|c=d")).unwrap().metadata.as_deref(), Some("a=b|c=d"));
    // `stop recording` pauses with pause=yes/on/true or the `pause` flag.
    let stop = || Value::dict().with("command", "stop recording").with("call-id", "c");
    for v in ["yes", "on", "true"] {
        assert!(parse(&stop().with("pause", v)).unwrap().pause, "{v}");
    }
    assert!(!parse(&stop().with("pause", "no")).unwrap().pause);
    assert!(parse(&stop().with("flags", list(&["pause"]))).unwrap().pause);
    // `record call`: yes/on, no/off, discard; the flags; anything else warns.
    for (v, want) in [("yes", RecordCall::Yes), ("off", RecordCall::No), ("discard", RecordCall::Discard)] {
        assert_eq!(parse(&base().with("record call", v)).unwrap().record_call, Some(want), "{v}");
    }
    let r = parse(&base().with("record-call", "maybe")).unwrap();
    assert_eq!(r.record_call, None);
    assert_eq!(r.warnings, vec!["record-call 'maybe' ignored: not yes, on, no, off or discard".to_string()]);
    let flags = |f: &[&str]| parse(&base().with("flags", list(f))).unwrap().record_call;
    assert_eq!(flags(&["discard-recording"]), Some(RecordCall::Discard));
    assert_eq!(flags(&["discard recording", "record-call"]), Some(RecordCall::Yes));
    assert_eq!(flags(&["record-call", "discard-recording"]), Some(RecordCall::Yes));
}

#[test]
fn subscribe_keys_and_flags() {
    let r = parse(
        &Value::dict()
            .with("command", "subscribe request")
            .with("call-id", "c")
            .with("from-tags", Value::List(vec![Value::from("Tag-A"), Value::from("b")]))
            .with("flags", Value::List(vec![Value::from("from-tags-Tag-C")]))
            .with("set-label", "rec"),
    )
    .expect("parses");
    assert_eq!(r.command, Command::SubscribeRequest);
    let mut tags = r.from_tags.clone();
    tags.sort();
    assert_eq!(tags, ["Tag-A", "Tag-C", "b"], "tags keep their case");
    assert_eq!(r.set_label.as_deref(), Some("rec"));
    assert!(!r.flags.all);
    let r = parse(&Value::dict().with("command", "subscribe request").with("call-id", "c").with("all", "all"))
        .expect("parses");
    assert!(r.flags.all);
    let r = parse(&Value::dict().with("command", "subscribe request").with("call-id", "c").with("all", "flows"))
        .expect("parses");
    assert!(!r.flags.all && r.warning().is_some_and(|w| w.contains("all=flows")), "{:?}", r.warning());
    for (cmd, needs) in [("subscribe answer", "to-tag"), ("unsubscribe", "to-tag")] {
        let e = parse(&Value::dict().with("command", cmd).with("call-id", "c"));
        assert!(matches!(e, Err(NgError::MissingKey(k)) if k == needs), "{cmd}: {e:?}");
    }
}

#[test]
fn media_control_keys_as_kamailio_sends_them() {
    // Kamailio sends every value as a string.
    let r = parse(
        &Value::dict()
            .with("command", "play media")
            .with("call-id", "c")
            .with("from-tag", "a")
            .with("file", "moh/hold.wav")
            .with("repeat-times", "3")
            .with("repeat-duration", "10000")
            .with("start-pos", "800")
            .with("flags", list(&["block-egress"])),
    )
    .expect("parses");
    assert_eq!(r.command, Command::PlayMedia);
    let m = &r.media;
    assert_eq!(m.file.as_deref(), Some("moh/hold.wav"));
    assert_eq!((m.repeat_times, m.repeat_duration, m.start_pos), (Some(3), Some(10000), Some(800)));
    assert!(r.flags.block_egress && r.warning().is_none(), "{:?}", r.warning());
    // blob64 decoded; blob (raw bytes) wins over it.
    let r = parse(&Value::dict().with("command", "play media").with("call-id", "c").with("blob64", "UklGRg=="))
        .expect("parses");
    assert_eq!(r.media.blob.as_deref(), Some(&b"RIFF"[..]));
    let r = parse(
        &Value::dict()
            .with("command", "play media")
            .with("call-id", "c")
            .with("blob64", "UklGRg==")
            .with("blob", Value::Bytes(vec![0xff, 0, 1])),
    )
    .expect("parses");
    assert_eq!(r.media.blob.as_deref(), Some(&[0xff, 0, 1][..]));
    assert!(matches!(
        parse(&Value::dict().with("command", "play media").with("call-id", "c").with("blob64", "*not base64*")),
        Err(NgError::InvalidValue { .. })
    ));
    // play DTMF: a one-character code is a digit, a longer one a number;
    // `pause` as a number is ms between digits.
    for (code, want) in
        [(Value::from("5"), "5"), (Value::from("#"), "#"), (Value::from("11"), "11"), (Value::Int(7), "7")]
    {
        let r = parse(
            &Value::dict()
                .with("command", "play DTMF")
                .with("call-id", "c")
                .with("code", code)
                .with("duration", "300")
                .with("volume", "-10")
                .with("pause", "200"),
        )
        .expect("parses");
        assert_eq!(r.media.code.as_deref(), Some(want));
        assert_eq!((r.media.duration, r.media.volume, r.media.pause), (Some(300), Some(-10), Some(200)));
        assert!(!r.pause, "a number is not stop recording's pause");
    }
    let r = parse(&Value::dict().with("command", "block DTMF").with("call-id", "c").with("DTMF-security", "zero"))
        .expect("parses");
    assert_eq!((r.command, r.media.dtmf_security.as_deref()), (Command::BlockDtmf, Some("zero")));
    for cmd in ["stop media", "block media", "unblock media", "silence media", "unsilence media", "unblock DTMF"] {
        let e = parse(&Value::dict().with("command", cmd));
        assert!(matches!(e, Err(NgError::MissingKey("call-id"))), "{cmd}: {e:?}");
        assert!(parse(&Value::dict().with("command", cmd).with("call-id", "c")).is_ok(), "{cmd}");
    }
    assert!(parse(&Value::dict().with("command", "play media").with("call-id", "c").with("repeat-times", "x")).is_err());
}
