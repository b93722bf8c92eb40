//! Structure-aware NG requests (`ng_structured`).
//!
//! The fuzz input is decoded with `arbitrary` into an [`NgInput`]: a command
//! from the real NG command names (or arbitrary text), call-id and tags,
//! a `flags` list drawn mostly from the flag vocabulary `srtpgate-ng` parses
//! (generic flags, transport protocols, `SDES-…`, `OSRTP-…`, `replace-…`,
//! `rtcp-mux-…`, `BUNDLE-…`, `codec-…-X`, ignored families) with arbitrary
//! strings mixed in, top-level option keys (`ICE`, `replace`, `DTLS`,
//! `direction`, `received-from`, `ptime`, `codec`, …), an `rtpp-flags`
//! string, and an optional SDP built by [`crate::structured_sdp`]. It is
//! encoded as a real datagram (`COOKIE SPACE BENCODE`) and goes through the
//! `ng_message` target's checks, and through checks the structure allows:
//!
//! - the keywords are written in rtpengine's other spellings (case, ` `/`_`
//!   for `-`); the same request written canonically must parse to the same
//!   [`Request`] (warnings and `raw` aside), or both must be refused with the
//!   same kind of error;
//! - when every item is known-good and the required keys are there, the
//!   request must be accepted, with the command, ids, SDP, generic flags,
//!   `replace`, `BUNDLE`, `OSRTP` and `rtcp-mux` items it was built with;
//!   when an item is known-bad, it must be refused;
//! - an accepted request's SDP goes through the `sdp_structured` checks.

use crate::structured_sdp::{SdpInput, Word};
use arbitrary::Arbitrary;
use srtpgate_ng::{parse_request, split, Request, Value, MAX_DATAGRAM};
use std::collections::HashSet;

const COMMANDS: &[&str] = &[
    "offer",
    "answer",
    "delete",
    "query",
    "list",
    "ping",
    "statistics",
    "start recording",
    "stop recording",
    "pause recording",
    "subscribe request",
    "subscribe answer",
    "unsubscribe",
    "play media",
    "stop media",
    "play DTMF",
    "block media",
    "unblock media",
    "silence media",
    "unsilence media",
    "block DTMF",
    "unblock DTMF",
];
/// Commands rtpengine has and srtpgate refuses.
const OTHER_COMMANDS: &[&str] = &["publish", "connect", "transform", "start forwarding"];

/// Generic flags that set a [`srtpgate_ng::Flags`] field, canonical.
const FIELD_FLAGS: &[&str] = &[
    "trust-address",
    "SIP-source-address",
    "symmetric",
    "asymmetric",
    "strict-source",
    "media-handover",
    "port-latching",
    "no-port-latching",
    "loop-protect",
    "no-rtcp-attribute",
    "full-rtcp-attribute",
    "generate-mid",
    "strip-extmap",
    "fragment",
    "reset",
    "original-sendrecv",
    "directional",
    "unidirectional",
    "fatal",
    "to-tag",
    "debug",
    "debugging",
    "NAT-wait",
    "pierce-NAT",
    "reject-ICE",
    "ICE-reject",
    "trickle-ICE",
    "single-codec",
    "always-transcode",
    "force-transcoding",
    "all",
    "provisional",
    "new-branch",
];

/// Whether the field a [`FIELD_FLAGS`] name sets is set.
fn field_set(req: &Request, canonical: &str) -> bool {
    let f = &req.flags;
    match canonical.to_ascii_lowercase().as_str() {
        "trust-address" => f.trust_address,
        "sip-source-address" => f.sip_source_address,
        "symmetric" => f.symmetric,
        "asymmetric" => f.asymmetric,
        "strict-source" => f.strict_source,
        "media-handover" => f.media_handover,
        "port-latching" => f.port_latching,
        "no-port-latching" => f.no_port_latching,
        "loop-protect" => f.loop_protect,
        "no-rtcp-attribute" => f.no_rtcp_attribute,
        "full-rtcp-attribute" => f.full_rtcp_attribute,
        "generate-mid" => f.generate_mid,
        "strip-extmap" => f.strip_extmap,
        "fragment" => f.fragment,
        "reset" => f.reset,
        "original-sendrecv" => f.original_sendrecv,
        "directional" => f.directional,
        "unidirectional" => f.unidirectional,
        "fatal" => f.fatal,
        "to-tag" => f.to_tag,
        "debug" | "debugging" => f.debug,
        "nat-wait" => f.nat_wait,
        "pierce-nat" => f.pierce_nat,
        "reject-ice" | "ice-reject" => f.reject_ice,
        "trickle-ice" => f.trickle_ice,
        "single-codec" => f.single_codec,
        "always-transcode" | "force-transcoding" => f.always_transcode,
        "all" => f.all,
        "provisional" => f.provisional,
        "new-branch" => f.new_branch,
        _ => true,
    }
}

/// Flags accepted with a warning (or with effects not checked here).
const OTHER_FLAGS: &[&str] = &[
    "record-call",
    "pad-crypto",
    "WebRTC",
    "allow-asymmetric-codecs",
    "allow-no-codec-media",
    "allow-empty-codec-media",
    "allow-transcoding",
    "asymmetric-codecs",
    "symmetric-codecs",
    "reorder-codecs",
    "audio-player",
    "no-audio-player",
    "bidirectional",
    "block-DTMF",
    "block-egress",
    "block-short-packets",
    "detect-DTMF",
    "discard-recording",
    "early-media",
    "egress",
    "exclude-recording",
    "skip-recording-database",
    "generate-RTCP",
    "inactive",
    "inject-DTMF",
    "mirror-RTCP",
    "RTCP-mirror",
    "mixed",
    "passthrough",
    "no-passthrough",
    "no-tls-id",
    "no-jitter-buffer",
    "no-redis-update",
    "recording-VSC",
    "recording-announcement",
    "recrypt",
    "SIPREC",
    "static-codecs",
    "reuse-codecs",
    "no-codec-renegotiation",
];

const TRANSPORTS: &[&str] = &["RTP/AVP", "RTP/SAVP", "RTP/AVPF", "RTP/SAVPF", "UDP/TLS/RTP/SAVP", "UDP/TLS/RTP/SAVPF"];
const SUITES: &[&str] = &[
    "AES_CM_128_HMAC_SHA1_80",
    "AES_CM_128_HMAC_SHA1_32",
    "AES_192_CM_HMAC_SHA1_80",
    "AES_256_CM_HMAC_SHA1_32",
    "AEAD_AES_128_GCM",
    "AEAD_AES_256_GCM",
    "NULL_HMAC_SHA1_80",
    "F8_128_HMAC_SHA1_80",
];
/// Known to rtpengine, not implemented: fine in `no-`, refused in `only-`.
const UNIMPLEMENTED_SUITE: &str = "F8_128_HMAC_SHA1_32";
const SDES_WORDS: &[&str] = &[
    "off",
    "no",
    "disable",
    "disabled",
    "unencrypted_srtp",
    "unencrypted_srtcp",
    "unauthenticated_srtp",
    "encrypted_srtp",
    "encrypted_srtcp",
    "authenticated_srtp",
    "lifetime",
    "pad",
    "static",
    "prefer",
    "priority",
    "nonew",
];
const OSRTP: &[&str] = &["offer", "offer-RFC", "offer-legacy", "accept-RFC", "accept-legacy", "accept"];
const REPLACE: &[&str] = &[
    "origin",
    "origin-full",
    "session-connection",
    "SDP-version",
    "username",
    "session-name",
    "zero-address",
    "force-increment-sdp-ver",
];
const RTCP_MUX: &[&str] = &["offer", "require", "demux", "accept", "reject"];
const BUNDLE: &[&str] = &["accept", "offer", "reject", "require", "strict"];
const ICE: &[&str] = &["remove", "force", "default", "force-relay", "optional"];
const DTLS: &[&str] = &["off", "no", "disable", "disabled", "passive", "active"];
const CODEC_PREFIXES: &[&str] = &[
    "codec-strip-",
    "codec-offer-",
    "codec-except-",
    "codec-ignore-",
    "codec-transcode-",
    "transcode-",
    "codec-mask-",
    "codec-accept-",
    "codec-consume-",
    "codec-set-",
];
const CODEC_OPS: &[&str] = &["strip", "offer", "except", "ignore", "transcode", "mask", "accept", "consume", "set"];
const CODECS: &[&str] =
    &["PCMA", "PCMU", "G722", "opus", "opus/48000/2", "telephone-event", "all", "full", "AMR-WB", "G729/8000"];
const IGNORED_PREFIXES: &[&str] =
    &["endpoint-learning-", "from-tags-", "sdp-attr-add-", "sdp-attr-remove-", "sdp-attr-substitute-", "T38-", "T.38-"];
const LEARNING: &[&str] = &["off", "immediate", "delayed", "heuristic"];
const IGNORED_KEYS: &[&str] = &[
    "trigger",
    "alias-key",
    "audio-player",
    "BUNDLE",
    "DTLS-fingerprint",
    "DTMF-delay",
    "endpoint-learning",
    "extmap",
    "frequency",
    "ICE-lite",
    "media-echo",
    "metadata",
    "output-destination",
    "recording-file",
    "sdp-attr",
    "T.38",
    "TOS",
    "trigger-end-digits",
    "frequencies",
    "vsc-start-rec",
    "xmlrpc-callback",
];
const SILENT_KEYS: &[&str] = &["sip-message-type", "SIP-code", "sip-response-code", "instance"];
const INTERFACES: &[&str] = &["pub", "priv", "internal", "external", "lo"];
const IDS: &[&str] = &["a84b4c76e66710@pc33.atlanta.example.com", "1928301774", "314159", "z9hG4bK776asdhds", "x"];

/// Index into a table.
fn pick(t: &[&'static str], i: u8) -> &'static str {
    t[i as usize % t.len()]
}

/// A keyword spelling: bits 0–1 pick the separator for `-` (`-`, ` `, `_`,
/// `-`), bit 2 upper case, bit 3 lower case, bit 4 the first letter upper.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub struct Spell(u8);

impl Spell {
    /// `s` respelled (`canonical`: as written in the tables). `no_space`:
    /// never ` ` (inside `rtpp-flags`, where a space splits tokens).
    fn apply(self, s: &str, canonical: bool, no_space: bool) -> String {
        if canonical {
            return s.to_string();
        }
        let sep = match self.0 & 3 {
            1 if !no_space => ' ',
            2 | 1 => '_',
            _ => '-',
        };
        let mut out: String = s.chars().map(|c| if c == '-' { sep } else { c }).collect();
        if self.0 & 4 != 0 {
            out = out.to_ascii_uppercase();
        } else if self.0 & 8 != 0 {
            out = out.to_ascii_lowercase();
        }
        if self.0 & 16 != 0 {
            if let Some(c) = out.get_mut(..1) {
                c.make_ascii_uppercase();
            }
        }
        out
    }
}

/// Arbitrary text for an item (never checked for validity).
#[derive(Arbitrary, Debug, Clone)]
pub struct Text(pub String);

/// An item of the `flags` list (or a bare token of `rtpp-flags`).
#[derive(Arbitrary, Debug, Clone)]
pub enum Flag {
    /// A flag setting a [`srtpgate_ng::Flags`] field.
    Field(u8, Spell),
    /// Another known flag.
    Other(u8, Spell),
    /// A transport protocol.
    Transport(u8, Spell),
    /// `SDES-…`.
    Sdes(SdesItem, Spell),
    /// `OSRTP-…` (the bool: a bad item).
    Osrtp(u8, bool, Spell),
    /// `replace-…`.
    Replace(u8, bool, Spell),
    /// `rtcp-mux-…`.
    RtcpMux(u8, bool, Spell),
    /// `BUNDLE-…`.
    Bundle(u8, bool, Spell),
    /// `codec-…-CODEC`.
    Codec(u8, u8, Spell),
    /// An ignored family (`endpoint-learning-…`, `T38-…`, …); the bool: a bad
    /// `endpoint-learning` item.
    Ignored(u8, u8, bool, Spell),
    /// Arbitrary text.
    Raw(Text),
}

/// An `SDES` item.
#[derive(Arbitrary, Debug, Clone)]
pub enum SdesItem {
    /// A plain word (`off`, `pad`, …).
    Word(u8),
    /// `no-SUITE` (none: the unimplemented suite, still fine).
    No(Option<u8>),
    /// `only-SUITE` (none: the unimplemented suite, refused).
    Only(Option<u8>),
    /// `order:A;B`.
    Order(Vec<u8>),
    /// `offerer_pref:A;B`.
    OffererPref(Vec<u8>),
    /// An unknown word: refused.
    Bad,
    /// `no-` an unknown suite: refused.
    BadSuite,
}

/// The verdict an item forces: `Some(true)` fine, `Some(false)` refused,
/// `None` unknown.
type Verdict = Option<bool>;

fn suites(list: &[u8]) -> String {
    let names: Vec<&str> =
        list.iter().take(4).map(|i| if *i == 255 { "AES_CM_128_HMAC_SHA" } else { pick(SUITES, *i) }).collect();
    names.join(";")
}

impl SdesItem {
    /// The item: a spelled keyword part and an unspelled rest.
    fn parts(&self) -> (&'static str, String, Verdict) {
        match self {
            SdesItem::Word(i) => (pick(SDES_WORDS, *i), String::new(), Some(true)),
            SdesItem::No(s) => ("no-", s.map_or(UNIMPLEMENTED_SUITE, |i| pick(SUITES, i)).into(), Some(true)),
            SdesItem::Only(None) => ("only-", UNIMPLEMENTED_SUITE.into(), Some(false)),
            SdesItem::Only(Some(i)) => ("only-", pick(SUITES, *i).into(), Some(true)),
            SdesItem::Order(l) => ("order:", suites(l), Some(true)),
            SdesItem::OffererPref(l) => ("offerer_pref:", suites(l), Some(true)),
            SdesItem::Bad => ("sometimes", String::new(), Some(false)),
            SdesItem::BadSuite => ("no-", "AES_CM_129_HMAC_SHA1_80".into(), Some(false)),
        }
    }

    fn render(&self, spell: Spell, canonical: bool, no_space: bool) -> (String, Verdict) {
        let (kw, rest, v) = self.parts();
        (format!("{}{rest}", spell.apply(kw, canonical, no_space)), v)
    }
}

/// One of `table`, or (`bad`) a word that is none of them; and whether it
/// is fine.
fn option(table: &[&'static str], i: u8, bad: bool) -> (&'static str, bool) {
    if bad {
        ("bogus", false)
    } else {
        (table[i as usize % table.len()], true)
    }
}

impl Flag {
    /// The flag text and its verdict. `canonical`: the tables' spelling.
    fn render(&self, canonical: bool, no_space: bool) -> (String, Verdict) {
        let sp = |s: &Spell, t: &str| s.apply(t, canonical, no_space);
        match self {
            Flag::Field(i, s) => (sp(s, pick(FIELD_FLAGS, *i)), Some(true)),
            Flag::Other(i, s) => (sp(s, pick(OTHER_FLAGS, *i)), Some(true)),
            Flag::Transport(i, s) => (sp(s, pick(TRANSPORTS, *i)), Some(true)),
            Flag::Sdes(item, s) => {
                let (t, v) = item.render(*s, canonical, no_space);
                (format!("{}{t}", sp(s, "SDES-")), v)
            }
            Flag::Osrtp(i, bad, s) => {
                let (o, v) = option(OSRTP, *i, *bad);
                (sp(s, &format!("OSRTP-{o}")), Some(v))
            }
            Flag::Replace(i, bad, s) => {
                let (o, v) = option(REPLACE, *i, *bad);
                (sp(s, &format!("replace-{o}")), Some(v))
            }
            Flag::RtcpMux(i, bad, s) => {
                let (o, v) = option(RTCP_MUX, *i, *bad);
                (sp(s, &format!("rtcp-mux-{o}")), Some(v))
            }
            Flag::Bundle(i, bad, s) => {
                let (o, v) = option(BUNDLE, *i, *bad);
                (sp(s, &format!("BUNDLE-{o}")), Some(v))
            }
            Flag::Codec(p, c, s) => (format!("{}{}", sp(s, pick(CODEC_PREFIXES, *p)), pick(CODECS, *c)), Some(true)),
            Flag::Ignored(p, x, bad, s) => {
                let prefix = pick(IGNORED_PREFIXES, *p);
                if prefix == "endpoint-learning-" {
                    let (o, v) = option(LEARNING, *x, *bad);
                    (sp(s, &format!("{prefix}{o}")), Some(v))
                } else {
                    (format!("{}{}", sp(s, prefix), pick(IDS, *x)), Some(true))
                }
            }
            Flag::Raw(Text(t)) => (t.clone(), None),
        }
    }
}

/// An optional top-level key.
#[derive(Arbitrary, Debug, Clone)]
pub enum Key {
    /// `transport-protocol` (the bool: `accept`, refused).
    TransportProtocol(u8, bool, Spell),
    /// `replace` list.
    Replace(Vec<(u8, bool)>, Spell),
    /// `rtcp-mux` list.
    RtcpMux(Vec<(u8, bool)>, Spell),
    /// `SDES` list.
    Sdes(Vec<SdesItem>, Spell),
    /// `OSRTP` list.
    Osrtp(Vec<(u8, bool)>, Spell),
    /// `ICE`.
    Ice(u8, bool, Spell),
    /// `DTLS`.
    Dtls(u8, bool, Spell),
    /// `DTLS-reverse`.
    DtlsReverse(u8, bool, Spell),
    /// `direction` with this many names (up to 2: fine).
    Direction(Vec<u8>),
    /// `from-interface`.
    FromInterface(u8),
    /// `to-interface`.
    ToInterface(u8),
    /// `record call`: yes/on/no/off/discard, or a value it ignores.
    RecordCall(u8, bool, Spell),
    /// `received-from`: `[family, address]` (family right or wrong) or the
    /// bare address; or a bad address.
    ReceivedFrom(ReceivedFrom),
    /// `media-address` (the bool: a bad one).
    MediaAddress([u8; 4], bool),
    /// `address family` (`IP4`, `ip6`, or bad).
    AddressFamily(u8),
    /// `delete-delay` as an integer or its decimal string (or bad text).
    DeleteDelay(i64, u8),
    /// `ptime` / `ptime-reverse` (valid: 1 to 1000).
    Ptime(bool, i64, bool),
    /// `label`.
    Label(Word),
    /// `limit` (valid: > 0).
    Limit(i64),
    /// `offset` (valid: ≥ 0).
    Offset(i64),
    /// `codec` dictionary: operation → codecs.
    Codec(Vec<(u8, Vec<u8>)>, Spell),
    /// `supports` (`load limit` or others).
    Supports(Vec<bool>),
    /// A key rtpengine knows and srtpgate ignores.
    Ignored(u8),
    /// An informational key.
    Silent(u8),
    /// An unknown key (`x-…`): warned.
    Unknown(Word),
    /// Arbitrary key and value.
    Raw(Text, RawValue),
}

/// `received-from` forms.
#[derive(Arbitrary, Debug, Clone)]
pub enum ReceivedFrom {
    /// `["IP4", a]`.
    Pair4([u8; 4]),
    /// `["IP6", a]`.
    Pair6([u16; 8]),
    /// `["IP6", ipv4]`: refused.
    WrongFamily([u8; 4]),
    /// A bare address.
    Bare([u8; 4]),
    /// Not an address: refused.
    Bad(Word),
}

/// An arbitrary bencode value (shallow).
#[derive(Arbitrary, Debug, Clone)]
pub enum RawValue {
    /// An integer.
    Int(i64),
    /// Bytes.
    Bytes(Vec<u8>),
    /// A list of strings.
    List(Vec<String>),
    /// A dictionary of strings.
    Dict(Vec<(String, String)>),
}

impl RawValue {
    fn value(&self) -> Value {
        match self {
            RawValue::Int(n) => Value::Int(*n),
            RawValue::Bytes(b) => Value::Bytes(b.clone()),
            RawValue::List(l) => Value::List(l.iter().map(|s| Value::from(s.as_str())).collect()),
            RawValue::Dict(d) => {
                let mut v = Value::dict();
                for (k, x) in d {
                    v.insert(k, x.as_str());
                }
                v
            }
        }
    }
}

/// Values for keys that take a list of strings.
fn list(items: Vec<String>) -> Value {
    Value::List(items.into_iter().map(Value::from).collect())
}

fn all(vs: impl IntoIterator<Item = Verdict>) -> Verdict {
    let mut out = Some(true);
    for v in vs {
        out = match (out, v) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        };
    }
    out
}

impl Key {
    /// The key name (canonical), its value and verdict.
    fn render(&self, canonical: bool, no_space: bool) -> (String, Value, Verdict) {
        let sp = |s: &Spell, t: &str| s.apply(t, canonical, no_space);
        let opts = |table: &[&'static str], items: &[(u8, bool)], s: &Spell| {
            let mut v = Vec::new();
            let mut out = Vec::new();
            for (i, bad) in items.iter().take(6) {
                let (o, ok) = option(table, *i, *bad);
                out.push(sp(s, o));
                v.push(Some(ok));
            }
            (list(out), all(v))
        };
        match self {
            Key::TransportProtocol(i, bad, s) => {
                if *bad {
                    ("transport-protocol".into(), Value::from("accept"), Some(false))
                } else {
                    ("transport-protocol".into(), Value::from(sp(s, pick(TRANSPORTS, *i))), Some(true))
                }
            }
            Key::Replace(items, s) => {
                let (v, ok) = opts(REPLACE, items, s);
                ("replace".into(), v, ok)
            }
            Key::RtcpMux(items, s) => {
                let (v, ok) = opts(RTCP_MUX, items, s);
                ("rtcp-mux".into(), v, ok)
            }
            Key::Osrtp(items, s) => {
                let (v, ok) = opts(OSRTP, items, s);
                ("OSRTP".into(), v, ok)
            }
            Key::Sdes(items, s) => {
                let (texts, vs): (Vec<String>, Vec<Verdict>) =
                    items.iter().take(6).map(|i| i.render(*s, canonical, no_space)).unzip();
                ("SDES".into(), list(texts), all(vs))
            }
            Key::Ice(i, bad, s) => {
                let (o, ok) = option(ICE, *i, *bad);
                ("ICE".into(), Value::from(sp(s, o)), Some(ok))
            }
            Key::Dtls(i, bad, s) => {
                let (o, ok) = option(DTLS, *i, *bad);
                ("DTLS".into(), Value::from(sp(s, o)), Some(ok))
            }
            Key::DtlsReverse(i, bad, s) => {
                let (o, ok) = option(DTLS, *i, *bad);
                ("DTLS-reverse".into(), Value::from(sp(s, o)), Some(ok))
            }
            Key::Direction(names) => {
                let names: Vec<String> = names.iter().take(3).map(|i| pick(INTERFACES, *i).to_string()).collect();
                // None (no key's worth), one (the first side's alone, as
                // rtpengine takes it) or two names; a third is refused.
                let ok = names.len() <= 2;
                ("direction".into(), list(names), Some(ok))
            }
            Key::FromInterface(i) => ("from-interface".into(), Value::from(pick(INTERFACES, *i)), Some(true)),
            Key::ToInterface(i) => ("to-interface".into(), Value::from(pick(INTERFACES, *i)), Some(true)),
            Key::RecordCall(i, bad, s) => {
                // A value it does not know is ignored with a warning, as
                // rtpengine ignores it with a log line.
                if *bad {
                    ("record-call".into(), Value::from("maybe"), Some(true))
                } else {
                    let v = pick(&["yes", "on", "no", "off", "discard"], *i);
                    ("record-call".into(), Value::from(sp(s, v)), Some(true))
                }
            }
            Key::ReceivedFrom(r) => {
                let (v, ok) = match r {
                    ReceivedFrom::Pair4(a) => {
                        (list(vec!["IP4".into(), std::net::Ipv4Addr::from(*a).to_string()]), true)
                    }
                    ReceivedFrom::Pair6(a) => {
                        (list(vec!["ip6".into(), std::net::Ipv6Addr::from(*a).to_string()]), true)
                    }
                    ReceivedFrom::WrongFamily(a) => {
                        (list(vec!["IP6".into(), std::net::Ipv4Addr::from(*a).to_string()]), false)
                    }
                    ReceivedFrom::Bare(a) => (Value::from(std::net::Ipv4Addr::from(*a).to_string()), true),
                    ReceivedFrom::Bad(w) => {
                        let t = w.text();
                        let ok = t.parse::<std::net::IpAddr>().is_ok();
                        (Value::from(t), ok)
                    }
                };
                ("received-from".into(), v, Some(ok))
            }
            Key::MediaAddress(a, bad) => {
                let t = std::net::Ipv4Addr::from(*a).to_string();
                if *bad {
                    ("media-address".into(), Value::from(format!("{t}.1")), Some(false))
                } else {
                    ("media-address".into(), Value::from(t), Some(true))
                }
            }
            Key::AddressFamily(i) => {
                let f = pick(&["IP4", "ip6", "IPX"], *i);
                ("address-family".into(), Value::from(f), Some(f != "IPX"))
            }
            Key::DeleteDelay(n, form) => match form % 3 {
                0 => ("delete-delay".into(), Value::Int(*n), Some(true)),
                1 => ("delete-delay".into(), Value::from(n.to_string()), Some(true)),
                _ => ("delete-delay".into(), Value::from(format!("{n}s")), Some(false)),
            },
            Key::Ptime(reverse, n, text) => {
                let name = if *reverse { "ptime-reverse" } else { "ptime" };
                let v = if *text { Value::from(n.to_string()) } else { Value::Int(*n) };
                (name.into(), v, Some((1..=1000).contains(n)))
            }
            Key::Label(w) => ("label".into(), Value::from(w.text()), Some(true)),
            Key::Limit(n) => ("limit".into(), Value::Int(*n), Some(*n > 0)),
            Key::Offset(n) => ("offset".into(), Value::Int(*n), Some(*n >= 0)),
            Key::Codec(ops, s) => {
                let mut d = Value::dict();
                let mut seen = HashSet::new();
                for (op, codecs) in ops.iter().take(4) {
                    let op = pick(CODEC_OPS, *op);
                    if !seen.insert(op) {
                        continue;
                    }
                    let codecs: Vec<String> = codecs.iter().take(4).map(|c| pick(CODECS, *c).to_string()).collect();
                    d.insert(&sp(s, op), list(codecs));
                }
                ("codec".into(), d, Some(true))
            }
            Key::Supports(items) => {
                // `load limit` is matched as written (not respelled).
                let items = items.iter().take(3).map(|l| if *l { "load limit" } else { "x-feature" }.to_string());
                ("supports".into(), list(items.collect()), Some(true))
            }
            Key::Ignored(i) => (pick(IGNORED_KEYS, *i).into(), Value::from("x"), Some(true)),
            Key::Silent(i) => (pick(SILENT_KEYS, *i).into(), Value::from("200"), Some(true)),
            Key::Unknown(w) => (format!("x-{}", w.text()), Value::from("1"), Some(true)),
            Key::Raw(Text(k), v) => (k.clone(), v.value(), None),
        }
    }

    /// As an `rtpp-flags` token (`key=value`, `key=[a b]`), for keys whose
    /// values have no space.
    fn rtpp(&self, canonical: bool) -> Option<(String, Verdict)> {
        let (name, v, ok) = match self {
            Key::Raw(..) | Key::Codec(..) | Key::Supports(..) | Key::Unknown(_) | Key::Label(_) => return None,
            Key::Ignored(..) | Key::Silent(..) | Key::RecordCall(..) => return None,
            k => k.render(canonical, true),
        };
        let text = |v: &Value| v.as_str().map(str::to_string).or_else(|| v.as_int().map(|n| n.to_string()));
        let value = match &v {
            Value::List(items) => {
                let items: Option<Vec<String>> = items.iter().map(text).collect();
                format!("[{}]", items?.join(" "))
            }
            v => text(v)?,
        };
        if value.contains([' ', '=', '[', ']']) && !matches!(v, Value::List(_)) {
            return None;
        }
        Some((format!("{name}={value}"), ok))
    }
}

/// The structured request.
#[derive(Arbitrary, Debug, Clone)]
pub struct NgInput {
    /// The cookie: a fixed one, or printable text.
    pub cookie: Option<Word>,
    /// The command.
    pub command: CommandName,
    /// Spelling of the top-level key names (the same in both renders).
    pub key_spell: Spell,
    /// `call-id`.
    pub call_id: Option<Id>,
    /// `from-tag`.
    pub from_tag: Option<Id>,
    /// `to-tag`.
    pub to_tag: Option<Id>,
    /// `via-branch`.
    pub via_branch: Option<Id>,
    /// `flags` (none: no key).
    pub flags: Option<Vec<Flag>>,
    /// `flags` as one comma-separated string instead of a list.
    pub flags_as_string: bool,
    /// Further keys.
    pub keys: Vec<Key>,
    /// `rtpp-flags`: bare flags and keys.
    pub rtpp: Option<(Vec<Flag>, Vec<Key>)>,
    /// The SDP.
    pub sdp: Option<SdpInput>,
}

/// The `command`.
#[derive(Arbitrary, Debug, Clone)]
pub enum CommandName {
    /// One srtpgate implements (case respelled).
    Known(u8, Spell),
    /// One rtpengine has and srtpgate refuses.
    Refused(u8),
    /// Arbitrary text.
    Raw(Text),
    /// Not a string: refused.
    Int(i64),
}

/// A call-id or tag.
#[derive(Arbitrary, Debug, Clone)]
pub enum Id {
    /// One of a few real ones.
    Known(u8),
    /// Arbitrary text.
    Raw(Text),
}

impl Id {
    fn text(&self) -> String {
        match self {
            Id::Known(i) => pick(IDS, *i).to_string(),
            Id::Raw(Text(t)) => t.clone(),
        }
    }
}

/// A rendered request.
struct Built {
    datagram: Vec<u8>,
    body: Vec<u8>,
    verdict: Verdict,
    sdp: Option<String>,
}

impl NgInput {
    /// Whether a raw key or raw `rtpp-flags` token may set any key.
    fn has_raw(&self) -> bool {
        self.keys.iter().take(16).any(|k| matches!(k, Key::Raw(..)))
            || self.rtpp.as_ref().is_some_and(|(f, _)| f.iter().take(12).any(|f| matches!(f, Flag::Raw(_))))
    }

    fn build(&self, canonical: bool) -> Built {
        let ks = |k: &str| self.key_spell.apply(k, false, false);
        let mut dict = Value::dict();
        let mut seen: HashSet<String> = HashSet::new();
        let mut verdicts: Vec<Verdict> = Vec::new();
        // Inserts a key unless one of its spelling is there (duplicates that
        // disagree are refused; that is ng_message's business).
        let mut put = |dict: &mut Value, name: &str, v: Value, ok: Verdict, verdicts: &mut Vec<Verdict>| {
            let norm: String =
                name.chars().map(|c| if c == ' ' || c == '_' { '-' } else { c.to_ascii_lowercase() }).collect();
            if seen.insert(norm) {
                dict.insert(name, v);
                verdicts.push(ok);
            }
        };
        let command = match &self.command {
            CommandName::Known(i, s) => {
                let c = pick(COMMANDS, *i);
                let c = if canonical { c.to_string() } else { s.apply(c, false, false) };
                (Value::from(c), Some(true))
            }
            CommandName::Refused(i) => (Value::from(pick(OTHER_COMMANDS, *i)), Some(false)),
            CommandName::Raw(Text(t)) => (Value::from(t.as_str()), None),
            CommandName::Int(n) => (Value::Int(*n), Some(false)),
        };
        put(&mut dict, &ks("command"), command.0, command.1, &mut verdicts);
        let known = match &self.command {
            CommandName::Known(i, _) => Some(pick(COMMANDS, *i)),
            _ => None,
        };
        let ids = [
            ("call-id", &self.call_id),
            ("from-tag", &self.from_tag),
            ("to-tag", &self.to_tag),
            ("via-branch", &self.via_branch),
        ];
        for (name, id) in ids {
            if let Some(id) = id {
                put(&mut dict, &ks(name), Value::from(id.text()), Some(true), &mut verdicts);
            }
        }
        let sdp = self.sdp.as_ref().map(|s| s.render().text);
        if let Some(s) = &sdp {
            put(&mut dict, &ks("sdp"), Value::from(s.as_str()), Some(true), &mut verdicts);
        }
        // Required keys (a raw key or rtpp-flags token may supply one).
        let missing = if self.has_raw() { None } else { Some(false) };
        let needs: &[&str] = match known {
            Some("offer") => &["call-id", "from-tag", "sdp"],
            Some("answer") => &["call-id", "from-tag", "to-tag", "sdp"],
            Some(
                "delete" | "query" | "start recording" | "stop recording" | "pause recording" | "subscribe request"
                | "play media" | "stop media" | "play DTMF" | "block media" | "unblock media" | "silence media"
                | "unsilence media" | "block DTMF" | "unblock DTMF",
            ) => &["call-id"],
            Some("subscribe answer") => &["call-id", "to-tag", "sdp"],
            Some("unsubscribe") => &["call-id", "to-tag"],
            _ => &[],
        };
        for n in needs {
            let present = match *n {
                "call-id" => self.call_id.is_some(),
                "from-tag" => self.from_tag.is_some(),
                "to-tag" => self.to_tag.is_some(),
                _ => sdp.is_some(),
            };
            if !present {
                verdicts.push(missing);
            }
        }
        if let Some(flags) = &self.flags {
            let (texts, vs): (Vec<String>, Vec<Verdict>) =
                flags.iter().take(24).map(|f| f.render(canonical, false)).unzip();
            let v = if self.flags_as_string { Value::from(texts.join(",")) } else { list(texts) };
            // Commas split a string of flags: the verdicts hold for the list.
            let ok =
                if self.flags_as_string && flags.iter().any(|f| matches!(f, Flag::Raw(_))) { None } else { all(vs) };
            put(&mut dict, &ks("flags"), v, ok, &mut verdicts);
        }
        if let Some((flags, keys)) = &self.rtpp {
            let mut tokens = Vec::new();
            let mut vs = Vec::new();
            for f in flags.iter().take(12) {
                let (t, v) = f.render(canonical, true);
                if t.trim().is_empty() {
                    continue;
                }
                // A raw token may hold spaces, brackets or `=`: no verdict.
                vs.push(v);
                tokens.push(t);
            }
            for k in keys.iter().take(6) {
                if let Some((t, v)) = k.rtpp(canonical) {
                    tokens.push(t);
                    vs.push(v);
                }
            }
            put(&mut dict, &ks("rtpp-flags"), Value::from(tokens.join(" ")), all(vs), &mut verdicts);
        }
        for k in self.keys.iter().take(16) {
            let (name, v, ok) = k.render(canonical, false);
            let name = if matches!(k, Key::Raw(..) | Key::Unknown(_)) { name } else { ks(&name) };
            put(&mut dict, &name, v, ok, &mut verdicts);
        }
        let body = dict.to_bytes();
        let cookie = self.cookie.as_ref().map_or_else(|| "5323_1".to_string(), |w| w.text());
        let mut datagram = cookie.into_bytes();
        datagram.push(b' ');
        datagram.extend_from_slice(&body);
        let mut verdict = all(verdicts);
        if body.len() > MAX_DATAGRAM {
            verdict = None;
        }
        Built { datagram, body, verdict, sdp }
    }
}

/// A request without what spelling may change (warnings echo the text).
fn comparable(r: &Request) -> Request {
    let mut r = r.clone();
    r.raw = Value::dict();
    r.warnings.clear();
    r.warnings_left_out = 0;
    r
}

/// The `ng_structured` target.
pub fn ng_structured(data: &[u8]) {
    let Ok(input) = arbitrary::Unstructured::new(data).arbitrary::<NgInput>() else {
        return;
    };
    let built = input.build(false);
    // The ng_message checks on the datagram as sent.
    crate::ng::ng_message(&built.datagram);
    let (_, body) = split(&built.datagram).expect("a built datagram does not split");
    assert_eq!(body, &built.body[..]);
    let got = parse_request(&built.body);

    // The same request in the tables' spelling.
    let canonical = input.build(true);
    let want = parse_request(&canonical.body);
    match (&got, &want) {
        (Ok(a), Ok(b)) => assert_eq!(comparable(a), comparable(b), "respelled request parses differently"),
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(a),
            std::mem::discriminant(b),
            "respelled request refused differently: {a} / {b}"
        ),
        (a, b) => panic!("respelled request: {a:?}\ncanonical: {b:?}"),
    }

    match (built.verdict, &got) {
        (Some(true), Err(e)) => panic!("a request of known-good items is refused: {e}"),
        (Some(false), Ok(_)) => panic!("a request with a known-bad item is accepted"),
        _ => {}
    }
    let Ok(req) = got else {
        return;
    };
    if let CommandName::Known(i, _) = &input.command {
        assert_eq!(req.command.name(), pick(COMMANDS, *i));
    }
    // A raw `rtpp-flags` token may set the ids (`call-id=…`).
    let raw_rtpp = input.rtpp.as_ref().is_some_and(|(f, _)| f.iter().take(12).any(|f| matches!(f, Flag::Raw(_))));
    let ids = [
        (&req.call_id, &input.call_id),
        (&req.from_tag, &input.from_tag),
        (&req.to_tag, &input.to_tag),
        (&req.via_branch, &input.via_branch),
    ];
    for (got, sent) in ids.into_iter().filter(|_| !raw_rtpp) {
        if let Some(sent) = sent {
            assert_eq!(got.as_deref(), Some(sent.text().as_str()));
        }
    }
    if !input.has_raw() {
        assert_eq!(req.sdp, built.sdp);
    }
    for f in input.flags.iter().flatten().take(24) {
        match f {
            Flag::Field(i, _) => {
                let name = pick(FIELD_FLAGS, *i);
                assert!(field_set(&req, name), "flag {name} did not set its field");
            }
            Flag::Replace(_, true, _)
            | Flag::Bundle(_, true, _)
            | Flag::Osrtp(_, true, _)
            | Flag::RtcpMux(_, true, _) => {}
            Flag::Replace(i, false, _) => {
                let r = req.replace;
                let set = [
                    r.origin,
                    r.origin_full,
                    r.session_connection,
                    r.sdp_version,
                    r.username,
                    r.session_name,
                    r.zero_address,
                    r.force_increment_sdp_ver,
                ];
                assert!(set[*i as usize % REPLACE.len()], "replace-{} not set", pick(REPLACE, *i));
            }
            Flag::Bundle(i, false, _) => {
                use srtpgate_ng::Bundle as B;
                let b = [B::Accept, B::Offer, B::Reject, B::Require, B::Strict][*i as usize % BUNDLE.len()];
                assert!(req.bundle.contains(&b), "BUNDLE-{} not recorded", pick(BUNDLE, *i));
            }
            Flag::Osrtp(i, false, _) => {
                use srtpgate_ng::Osrtp as O;
                let o = [O::Offer, O::Offer, O::OfferLegacy, O::AcceptRfc, O::AcceptLegacy, O::Accept]
                    [*i as usize % OSRTP.len()];
                assert!(req.osrtp.contains(&o), "OSRTP-{} not recorded", pick(OSRTP, *i));
            }
            Flag::RtcpMux(i, false, _) => {
                use srtpgate_ng::RtcpMux as M;
                let m = [M::Offer, M::Require, M::Demux, M::Accept, M::Reject][*i as usize % RTCP_MUX.len()];
                assert!(req.rtcp_mux.contains(&m), "rtcp-mux-{} not recorded", pick(RTCP_MUX, *i));
            }
            _ => {}
        }
    }
    // The relay parses the SDP next: the structured SDP checks.
    if let Some(s) = &input.sdp {
        let r = s.render();
        r.check_parse();
        crate::sdp::sdp(r.text.as_bytes());
    }
}
