//! The call table driven by sequences of requests (`call_table`).
//!
//! The fuzz input is decoded with `arbitrary` into a list of [`Step`]s on a
//! few calls and tags: offers and answers (also out of order, repeated, from
//! the wrong tag), re-offers that add, remove or reject m-lines, SDES, plain
//! RTP and ICE/DTLS legs with BUNDLE groups, the options that steer them
//! (transport protocol, ICE, DTLS, BUNDLE, SDES, rtcp-mux, transcoding),
//! STUN/DTLS datagrams to the legs, timers, deletes, queries and lists.
//! Each request is a real NG datagram; the table runs on
//! [`srtpgate_calls::sim::SimHost`], which models the workers and checks
//! every command.
//!
//! After every step:
//! - no panic; the table's own invariants hold; the host saw no command
//!   that makes no sense (a stream on ports not bound, configured on a
//!   worker that does not hold it, added twice);
//! - the ports bound are exactly the ports the calls hold;
//! - the reply, without its warnings (which the daemon trims), fits a
//!   datagram;
//! - the relay's sending keys differ between every two legs, and from every
//!   key an endpoint sends with.
//!
//! At the end every call is deleted: no port stays bound, no stream open.

use arbitrary::{Arbitrary, Unstructured};
use base64::Engine as _;
use srtp::Suite;
use srtpgate_calls::interface::{Interfaces, Pair, Spec};
use srtpgate_calls::sim::SimHost;
use srtpgate_calls::{Limits, Now, Settings, Table};
use srtpgate_codec::Registry;
use srtpgate_ng::{Value, MAX_REPLY};
use srtpgate_webrtc::dtls::Identity;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

const FP: &str =
    "sha-256 0A:0B:0C:0D:0E:0F:10:11:12:13:14:15:16:17:18:19:1A:1B:1C:1D:1E:1F:20:21:22:23:24:25:26:27:28:29";

const PROTOS: &[&str] =
    &["RTP/AVP", "RTP/SAVP", "RTP/AVPF", "RTP/SAVPF", "UDP/TLS/RTP/SAVPF", "UDP/TLS/RTP/SAVP", "udptl", "TCP/RTP/AVP"];
const TYPES: &[&str] = &["audio", "video", "image", "application"];
/// Formats with the rtpmap each needs.
const FORMATS: &[(u8, Option<&str>)] = &[
    (0, None),
    (8, None),
    (9, None),
    (18, None),
    (96, Some("opus/48000/2")),
    (97, Some("VP8/90000")),
    (101, Some("telephone-event/8000")),
    (120, Some("PCMA/8000")),
];
const SUITES: &[Suite] = &[
    Suite::AES_CM_128_HMAC_SHA1_80,
    Suite::AES_CM_128_HMAC_SHA1_32,
    Suite::AES_256_CM_HMAC_SHA1_80,
    Suite::AES_192_CM_HMAC_SHA1_32,
    Suite::AEAD_AES_128_GCM,
];
const TRANSPORTS: &[&str] = &["RTP/AVP", "RTP/SAVP", "RTP/SAVPF", "UDP/TLS/RTP/SAVPF", "RTP/AVPF"];
const ICE: &[&str] = &["remove", "force", "default", "optional"];
const DTLS: &[&str] = &["passive", "active", "off"];
const FLAGS: &[&str] = &[
    "BUNDLE-offer",
    "BUNDLE-accept",
    "BUNDLE-reject",
    "BUNDLE-require",
    "rtcp-mux-offer",
    "rtcp-mux-demux",
    "rtcp-mux-reject",
    "rtcp-mux-require",
    "SDES-off",
    "SDES-no-AES_CM_128_HMAC_SHA1_32",
    "SDES-only-AES_CM_128_HMAC_SHA1_80",
    "SDES-unencrypted_srtp",
    "SDES-lifetime",
    "DTLS-reverse-active",
    "always-transcode",
    "media-handover",
    "generate-mid",
    "reject-ICE",
    "SIP-source-address",
    "no-rtcp-attribute",
    "full-rtcp-attribute",
    "replace-origin",
    "replace-session-connection",
    "codec-transcode-PCMA",
    "codec-transcode-PCMU",
    "codec-strip-all",
    "codec-mask-PCMU",
    "codec-offer-PCMA",
    "record-call",
    "discard-recording",
];

/// Recording commands, and the keys they (or an offer or answer) may carry:
/// some fine, some outside the recording directory or over the limits.
const RECORDING_COMMANDS: &[&str] = &["start recording", "stop recording", "pause recording"];
const RECORDING_KEYS: &[(&str, &str)] = &[
    ("metadata", "tenant=7"),
    ("metadata", ""),
    ("metadata", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ("recording-file", "a/b.pcap"),
    ("recording-file", "../x"),
    ("recording-path", "t/7"),
    ("recording-path", "/etc"),
    ("recording-pattern", "%c-%r"),
    ("recording-pattern", "%q"),
    ("pause", "yes"),
    ("record call", "yes"),
    ("record call", "no"),
    ("record call", "discard"),
];

/// Forking commands.
const SUBSCRIBE_COMMANDS: &[&str] = &["subscribe request", "subscribe answer", "unsubscribe"];

/// Media-control commands.
const MEDIA_COMMANDS: &[&str] = &[
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
/// Their keys (a WAV blob is made by the step).
const MEDIA_KEYS: &[(&str, &str)] = &[
    ("code", "5"),
    ("code", "#"),
    ("code", "16"),
    ("duration", "100"),
    ("duration", "-3"),
    ("duration", "999999"),
    ("volume", "-70"),
    ("pause", "10"),
    ("repeat-times", "3"),
    ("repeat-duration", "2000"),
    ("start-pos", "100000"),
    ("start-pos", "-1"),
    ("file", "../x.wav"),
    ("blob64", "aGVsbG8="),
    ("DTMF-security", "zero"),
    ("DTMF-security", "tone"),
    ("DTMF-security", "off"),
    ("label", "l0"),
    ("address", "198.18.5.1"),
    ("address", "nonsense"),
    ("to-tag", "t1"),
];

/// One m-line.
#[derive(Arbitrary, Debug)]
struct Line {
    ty: u8,
    /// 0: rejected (port 0).
    port: u8,
    proto: u8,
    formats: Vec<u8>,
    /// SDES keys: (suite, tag, key bytes seed); tag 0 makes a garbage line.
    crypto: Vec<(u8, u8, u8)>,
    ice: bool,
    fingerprint: bool,
    setup: u8,
    mid: Option<u8>,
    mux: bool,
    bundled: bool,
}

/// What a request asks besides its SDP.
#[derive(Arbitrary, Debug)]
struct Opts {
    transport: Option<u8>,
    ice: Option<u8>,
    dtls: Option<u8>,
    flags: Vec<u8>,
    ptime: Option<u8>,
    to_tag: Option<u8>,
    /// `direction`: two of the relay's interfaces (or an unknown or
    /// obsolete name).
    direction: Option<(u8, u8)>,
    /// Recording keys ([`RECORDING_KEYS`]).
    recording: Vec<u8>,
}

#[derive(Arbitrary, Debug)]
enum Step {
    Offer {
        call: u8,
        from: u8,
        lines: Vec<Line>,
        opts: Opts,
    },
    Answer {
        call: u8,
        from: u8,
        to: u8,
        lines: Vec<Line>,
        opts: Opts,
    },
    Delete {
        call: u8,
    },
    /// `start`/`stop`/`pause recording`, with keys.
    Record {
        call: u8,
        command: u8,
        opts: Opts,
    },
    /// `subscribe request` (every party, one from-tag, a list, or none),
    /// `subscribe answer` with an SDP, or `unsubscribe`; subscribers' tags
    /// `s0`–`s2`, or a party's.
    Subscribe {
        call: u8,
        command: u8,
        to: u8,
        from: u8,
        lines: Vec<Line>,
        opts: Opts,
    },
    /// A media-control command: selected by `all`, a from-tag or none,
    /// with some keys (and a short WAV prompt in `blob64` or not).
    Media {
        call: u8,
        command: u8,
        from: u8,
        keys: Vec<u8>,
        wav_ms: Option<u8>,
    },
    Query {
        call: u8,
    },
    List {
        offset: u8,
        limit: u8,
    },
    /// A datagram to the `nth` ICE/DTLS leg there is.
    Datagram {
        nth: u8,
        first: u8,
        data: Vec<u8>,
    },
    /// An RTCP packet a worker read on a leg of the `nth` call (the
    /// first byte made version 2), after its party's RTP source was seen
    /// as `ssrc` (or not); then the relay's own samples.
    Rtcp {
        nth: u8,
        stream: u8,
        party: u8,
        ssrc: Option<u32>,
        data: Vec<u8>,
    },
    /// Time passes (seconds); timers run.
    Wait {
        secs: u8,
    },
}

fn pick<'a>(list: &[&'a str], i: u8) -> &'a str {
    list[i as usize % list.len()]
}

fn sdp(lines: &[Line]) -> String {
    let mut s = String::from("v=0\r\no=- 1 1 IN IP4 198.18.5.1\r\ns=-\r\nc=IN IP4 198.18.5.1\r\nt=0 0\r\n");
    let group: Vec<String> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.bundled)
        .map(|(i, l)| l.mid.unwrap_or(i as u8).to_string())
        .collect();
    if !group.is_empty() {
        s.push_str(&format!("a=group:BUNDLE {}\r\n", group.join(" ")));
    }
    for (i, l) in lines.iter().take(6).enumerate() {
        let port = if l.port == 0 { 0 } else { 2000 + 2 * l.port as u16 };
        let fmts: Vec<(u8, Option<&str>)> =
            l.formats.iter().take(4).map(|f| FORMATS[*f as usize % FORMATS.len()]).collect();
        let list = if fmts.is_empty() {
            "0".to_string()
        } else {
            fmts.iter().map(|f| f.0.to_string()).collect::<Vec<_>>().join(" ")
        };
        s.push_str(&format!("m={} {port} {} {list}\r\n", pick(TYPES, l.ty), pick(PROTOS, l.proto)));
        for (pt, map) in &fmts {
            if let Some(m) = map {
                s.push_str(&format!("a=rtpmap:{pt} {m}\r\n"));
            }
        }
        for (suite, tag, seed) in l.crypto.iter().take(3) {
            if *tag == 0 {
                s.push_str("a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:short\r\n");
                continue;
            }
            let suite = SUITES[*suite as usize % SUITES.len()];
            let len = suite.master_key_len() + suite.master_salt_len();
            let key: Vec<u8> = (0..len).map(|k| seed.wrapping_add(k as u8).wrapping_mul(31)).collect();
            let b64 = base64::engine::general_purpose::STANDARD.encode(key);
            s.push_str(&format!("a=crypto:{tag} {suite} inline:{b64}\r\n"));
        }
        if l.ice {
            s.push_str(&format!("a=ice-ufrag:u{i}\r\na=ice-pwd:0123456789012345678901\r\n"));
        }
        if l.fingerprint {
            s.push_str(&format!("a=fingerprint:{FP}\r\n"));
        }
        match l.setup % 4 {
            1 => s.push_str("a=setup:actpass\r\n"),
            2 => s.push_str("a=setup:active\r\n"),
            3 => s.push_str("a=setup:passive\r\n"),
            _ => {}
        }
        if let Some(m) = l.mid {
            s.push_str(&format!("a=mid:{m}\r\n"));
        }
        if l.mux {
            s.push_str("a=rtcp-mux\r\n");
        }
    }
    s
}

fn with_opts(mut v: Value, o: &Opts) -> Value {
    if let Some(t) = o.transport {
        v.insert("transport-protocol", pick(TRANSPORTS, t));
    }
    if let Some(i) = o.ice {
        v.insert("ICE", pick(ICE, i));
    }
    if let Some(d) = o.dtls {
        v.insert("DTLS", pick(DTLS, d));
    }
    if let Some(p) = o.ptime {
        v.insert("ptime", 10 + (p % 6) as i64 * 10);
    }
    if let Some(t) = o.to_tag {
        v.insert("to-tag", format!("t{}", t % 3));
    }
    if let Some((a, b)) = o.direction {
        v.insert("direction", vec![Value::from(pick(INTERFACES, a)), Value::from(pick(INTERFACES, b))]);
    }
    for k in o.recording.iter().take(3) {
        let (key, value) = RECORDING_KEYS[*k as usize % RECORDING_KEYS.len()];
        v.insert(key, value);
    }
    let flags: Vec<Value> = o.flags.iter().take(6).map(|f| Value::from(pick(FLAGS, *f))).collect();
    if !flags.is_empty() {
        v.insert("flags", flags);
    }
    v.insert("received-from", vec![Value::from("IP4"), Value::from("198.18.5.9")]);
    v
}

fn identity() -> Arc<Identity> {
    static ID: OnceLock<Arc<Identity>> = OnceLock::new();
    ID.get_or_init(|| Arc::new(Identity::generate().expect("a DTLS identity"))).clone()
}

/// Names a request's `direction` may carry: the relay's two interfaces,
/// none, an unknown one and rtpengine's obsolete family names.
const INTERFACES: &[&str] = &["priv", "pub", "", "dmz", "internal", "external"];

fn settings() -> Settings {
    let specs: Vec<Spec> = ["priv/198.18.0.1", "priv/2001:db8::1", "pub/198.18.1.1!203.0.113.1"]
        .iter()
        .map(|s| Spec::parse(s).expect("spec"))
        .collect();
    Settings {
        interfaces: Interfaces::new(&specs, &[]).expect("interfaces"),
        limits: Limits {
            max_id_length: 64,
            max_sdp_length: 8192,
            max_media: 6,
            max_sessions_without_media: 2,
            max_sessions: 3,
            max_load: None,
            max_bandwidth: None,
            min_free_files: None,
        },
        sdes_suites: vec![Suite::AES_CM_128_HMAC_SHA1_80, Suite::AES_CM_128_HMAC_SHA1_32],
        libsrtp_aes192_kdf: false,
        codec_complexity: None,
        plc: 0,
        dtmf_delay_ms: 0,
        workers: 2,
        transcode_workers: 1,
        timeout: Duration::from_secs(30),
        final_timeout: Some(Duration::from_secs(200)),
        quality: Some(Default::default()),
        recording: srtpgate_calls::RecordingSettings {
            dir: Some("/rec".into()),
            max_metadata: 64,
            ..Default::default()
        },
    }
}

/// The target.
pub fn call_table(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(steps) = Vec::<Step>::arbitrary(&mut u) else { return };
    let start = Instant::now();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let mut now = Now { mono: start, wall };
    let mut table = Table::new(settings(), Arc::new(Registry::new()), identity(), now);
    // 12 port pairs: a few calls fill the range.
    let mut host = SimHost::new(2, 40_000, 40_022);
    for (n, step) in steps.iter().take(24).enumerate() {
        let body = match step {
            Step::Offer { call, from, lines, opts } => Some(with_opts(
                Value::dict()
                    .with("command", "offer")
                    .with("call-id", format!("c{}", call % 3))
                    .with("from-tag", format!("t{}", from % 3))
                    .with("sdp", sdp(lines)),
                opts,
            )),
            Step::Answer { call, from, to, lines, opts } => Some(with_opts(
                Value::dict()
                    .with("command", "answer")
                    .with("call-id", format!("c{}", call % 3))
                    .with("from-tag", format!("t{}", from % 3))
                    .with("to-tag", format!("t{}", to % 3))
                    .with("sdp", sdp(lines)),
                opts,
            )),
            Step::Delete { call } => {
                Some(Value::dict().with("command", "delete").with("call-id", format!("c{}", call % 3)))
            }
            Step::Record { call, command, opts } => Some(with_opts(
                Value::dict()
                    .with("command", pick(RECORDING_COMMANDS, *command))
                    .with("call-id", format!("c{}", call % 3)),
                opts,
            )),
            Step::Subscribe { call, command, to, from, lines, opts } => {
                let to = if to % 4 == 3 { format!("t{}", to % 3) } else { format!("s{}", to % 3) };
                let mut v = Value::dict()
                    .with("command", pick(SUBSCRIBE_COMMANDS, *command))
                    .with("call-id", format!("c{}", call % 3))
                    .with("to-tag", to)
                    .with("sdp", sdp(lines));
                match from % 4 {
                    0 => v.insert("all", "all"),
                    1 => v.insert("from-tag", format!("t{}", from % 3)),
                    2 => v.insert(
                        "from-tags",
                        Value::List(vec![Value::from("t0"), Value::from(format!("t{}", from % 3))]),
                    ),
                    _ => {}
                }
                Some(with_opts(v, opts))
            }
            Step::Media { call, command, from, keys, wav_ms } => {
                let mut v = Value::dict()
                    .with("command", pick(MEDIA_COMMANDS, *command))
                    .with("call-id", format!("c{}", call % 3));
                match from % 4 {
                    0 => v.insert("flags", Value::List(vec![Value::from("all")])),
                    1 | 2 => v.insert("from-tag", format!("t{}", from % 3)),
                    _ => {}
                }
                for k in keys.iter().take(4) {
                    let (k, val) = MEDIA_KEYS[*k as usize % MEDIA_KEYS.len()];
                    v.insert(k, val);
                }
                if let Some(ms) = wav_ms {
                    v.insert("blob64", base64::engine::general_purpose::STANDARD.encode(wav(*ms)));
                }
                Some(v)
            }
            Step::Query { call } => {
                Some(Value::dict().with("command", "query").with("call-id", format!("c{}", call % 3)))
            }
            Step::List { offset, limit } => Some(
                Value::dict()
                    .with("command", "list")
                    .with("offset", *offset as i64 % 4)
                    .with("limit", *limit as i64 % 4),
            ),
            Step::Datagram { nth, first, data } => {
                let legs: Vec<_> = table
                    .calls()
                    .flat_map(|(_, c)| {
                        let key = c.key;
                        c.streams.iter().enumerate().flat_map(move |(i, s)| {
                            s.iter().flat_map(move |s| {
                                (0..2).filter(|p| s.legs[*p].dtls || s.legs[*p].ice_on).map(move |p| (key, i, p))
                            })
                        })
                    })
                    .collect();
                if let Some(&(call, stream, party)) = legs.get(*nth as usize % legs.len().max(1)) {
                    // STUN (0–3) or DTLS (20–63) by the first byte.
                    let mut d = data.clone();
                    d.insert(0, if first % 2 == 0 { first % 4 } else { 20 + first % 44 });
                    let from = "198.18.5.9:2000".parse().expect("addr");
                    table.signal(srtpgate_calls::Signal { call, stream, party, from, data: &d }, now);
                }
                None
            }
            Step::Rtcp { nth, stream, party, ssrc, data } => {
                let calls: Vec<_> = table.calls().map(|(_, c)| c).collect();
                if let Some(c) = calls.get(*nth as usize % calls.len().max(1)) {
                    let (key, stream, party) = (c.key, *stream as usize % 4, *party as usize % 2);
                    if let (Some(ssrc), Some(Some(s))) = (ssrc, c.streams.get(stream)) {
                        s.legs[party].stats.rtp_source_seen(*ssrc, 0);
                    }
                    let mut d = data.clone();
                    if let Some(b) = d.first_mut() {
                        *b = 0x80 | (*b & 0x3f);
                    }
                    let from = "198.18.5.9:2001".parse().expect("addr");
                    let rx_ns = now.unix_ms() * 1_000_000;
                    let copy = srtpgate_quality::RtcpCopy::new(key, stream as u16, party as u8, from, rx_ns, &d);
                    let _ = table.rtcp_report(&copy, party == 1);
                    table.sample_quality(now);
                }
                None
            }
            Step::Wait { secs } => {
                let d = Duration::from_secs(*secs as u64);
                now = Now { mono: now.mono + d, wall: now.wall + d };
                table.web_tick(now);
                table.expire(now, &mut host);
                table.sample_quality(now);
                None
            }
        };
        if let Some(body) = body {
            let dgram = srtpgate_ng::request(&format!("k{n}"), &body);
            let (_, b) = srtpgate_ng::split(&dgram).expect("a request we built splits");
            if let Ok(req) = srtpgate_ng::parse_request(b) {
                let mut reply = table.handle(&req, now, &mut host);
                reply.remove("warning");
                let out = srtpgate_ng::reply(b"cookie", &reply);
                assert!(out.len() <= MAX_REPLY, "a reply of {} bytes", out.len());
            }
        }
        host.drain(&mut table);
        check(&table, &host);
    }
    let ids: Vec<String> = table.calls().map(|(id, _)| id.to_string()).collect();
    for id in ids {
        let body = Value::dict().with("command", "delete").with("call-id", id);
        let dgram = srtpgate_ng::request("end", &body);
        let (_, b) = srtpgate_ng::split(&dgram).expect("split");
        table.handle(&srtpgate_ng::parse_request(b).expect("delete parses"), now, &mut host);
    }
    host.drain(&mut table);
    check(&table, &host);
    assert!(host.bound.is_empty(), "ports left bound: {:?}", host.bound);
    assert!(host.streams.is_empty() && host.legs.is_empty(), "streams left open: {:?}", host.streams.keys());
    assert!(host.recordings.is_empty() && host.tapped.is_empty(), "recordings left open: {:?}", host.recordings);
    assert!(host.forks.is_empty(), "forks left: {:?}", host.forks.keys());
}

/// A WAV of `ms` ms of a 440 Hz tone at 8 kHz.
fn wav(ms: u8) -> Vec<u8> {
    let n = ms as u32 * 8;
    let mut b = Vec::with_capacity(44 + 2 * n as usize);
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36 + 2 * n).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&[1, 0, 1, 0]);
    b.extend_from_slice(&8000u32.to_le_bytes());
    b.extend_from_slice(&16000u32.to_le_bytes());
    b.extend_from_slice(&[2, 0, 16, 0]);
    b.extend_from_slice(b"data");
    b.extend_from_slice(&(2 * n).to_le_bytes());
    for i in 0..n {
        let v = ((i as f32 * 440.0 * std::f32::consts::TAU / 8000.0).sin() * 8000.0) as i16;
        b.extend_from_slice(&v.to_le_bytes());
    }
    b
}

fn check(table: &Table, host: &SimHost) {
    table.check_invariants().expect("table invariants");
    assert!(host.faults.is_empty(), "{:?}", host.faults);
    // A call's recording as the table, the recorder and the workers see it:
    // writing, its worker copies its packets; paused, nothing is copied.
    for (id, c) in table.calls() {
        let on = c.recording.as_ref().map(|r| r.on);
        assert_eq!(host.recordings.get(&c.key).copied(), on, "call {id}: the recorder's view of its recording");
        let tapped = host.tapped.get(&c.key);
        assert_eq!(tapped.is_some(), on == Some(true), "call {id}: copies while it records, none otherwise");
        assert!(tapped.is_none_or(|&w| w == c.worker), "call {id}: copied on another worker than its own");
        if let Some(r) = &c.recording {
            assert!(
                r.base.is_relative() && r.base.components().all(|p| matches!(p, std::path::Component::Normal(_))),
                "call {id}: a recording at {}",
                r.base.display()
            );
        }
    }
    let held: BTreeSet<Pair> = table
        .calls()
        .flat_map(|(_, c)| {
            let legs = c.streams.iter().flatten().flat_map(|s| s.legs.iter().map(|l| l.pair()));
            legs.chain(c.subscriptions.iter().flat_map(|s| s.forks.iter().map(|f| f.leg.pair())))
        })
        .collect();
    assert_eq!(held, host.bound, "ports the calls hold vs ports bound");
    // Every leg on an address of its interface; a party's legs on one.
    let interfaces = &table.settings().interfaces;
    for (id, c) in table.calls() {
        for party in 0..2 {
            let legs: Vec<_> = c.streams.iter().flatten().map(|s| s.legs[party].at).collect();
            for at in &legs {
                let i = interfaces.get(at.interface).expect("a leg's interface exists");
                assert!(i.addrs.contains(&at.addr), "call {id}: {at:?} is no address of '{}'", i.name);
                assert_eq!(at.interface, legs[0].interface, "call {id}: party {party}'s legs on two interfaces");
            }
        }
    }
    // The relay's sending keys: one per leg, never an endpoint's.
    let mut relay: HashMap<&Vec<u8>, (u64, usize, usize)> = HashMap::new();
    let endpoint: BTreeSet<&Vec<u8>> = host.legs.values().filter_map(|l| l.rx.as_ref()).collect();
    for (k, leg) in &host.legs {
        let Some(tx) = &leg.tx else { continue };
        // The streams of one BUNDLE group share their transport's DTLS
        // keys (each with a context of its own); no two other legs do.
        if let Some(other) = relay.insert(tx, *k) {
            assert!((other.0, other.2) == (k.0, k.2), "legs {other:?} and {k:?} send with one key");
        }
        assert!(!endpoint.contains(tx), "leg {k:?} sends with an endpoint's key");
    }
    // Subscribers: each fork on its call's worker, copying once answered,
    // under a key of its own (never one of the call's).
    for (id, c) in table.calls() {
        for s in &c.subscriptions {
            for f in &s.forks {
                let h = host.forks.get(&f.key).unwrap_or_else(|| panic!("call {id}: fork #{} not held", f.key));
                assert_eq!((h.worker, h.call), (c.worker, c.key), "call {id}: fork #{} elsewhere", f.key);
                assert_eq!(
                    h.sends.is_some(),
                    s.answered && !f.rejected && f.leg.peer.is_some(),
                    "call {id}: fork #{}",
                    f.key
                );
                if let Some(k) = h.sends.as_ref().filter(|k| !k.is_empty()) {
                    assert!(
                        !relay.contains_key(k) && !endpoint.contains(k),
                        "call {id}: a fork sends with a call's key"
                    );
                }
            }
        }
    }
    // Media controls: every leg's bits are its party's, and a party is
    // played to on a stream of its call.
    for (id, c) in table.calls() {
        for s in c.streams.iter().flatten() {
            for (p, leg) in s.legs.iter().enumerate() {
                let bits = (leg.stats.block.load(Relaxed), leg.stats.dtmf.load(Relaxed));
                assert_eq!(bits, c.leg_bits(p), "call {id}: party {p}'s leg bits");
            }
        }
        for pl in c.controls.players.iter().flatten() {
            assert!(c.streams.get(pl.stream).is_some_and(Option::is_some), "call {id}: played on a stream it lacks");
        }
    }
    let forks: usize = table.calls().map(|(_, c)| c.subscriptions.iter().map(|s| s.forks.len()).sum::<usize>()).sum();
    assert_eq!(forks, host.forks.len(), "forks the table has vs forks the workers hold");
}
