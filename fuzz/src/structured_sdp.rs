//! Structure-aware SDP inputs (`sdp_structured`, and the `sdp` of
//! `ng_structured`).
//!
//! The fuzz input is decoded with `arbitrary` into an [`SdpInput`]: session
//! lines, one to four `m=` sections of audio/video/application with real
//! protocols, payload types, `a=rtpmap`/`a=fmtp`, `a=crypto` built from real
//! suite names with valid and broken inline keys, `a=rtcp`, `a=rtcp-mux`,
//! ICE, DTLS, BUNDLE, `a=mid`, `a=extmap`, directions, and now and then a raw
//! arbitrary line. It is rendered to text ([`SdpInput::render`]), which then
//! goes through the `sdp` target's checks (parse, every rewrite the relay
//! does, re-parse) and through checks that only a known input allows: an SDP
//! without raw lines must parse, to the sections, ports, protocols, formats,
//! directions, `a=rtcp`, `a=rtcp-mux`, addresses and `a=crypto` verdicts it
//! was built from.

use arbitrary::Arbitrary;
use srtp::Suite;
use srtpgate_sdp::{Direction, Sdp};
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Most `m=` sections rendered.
const MAX_SECTIONS: usize = 4;
/// Most payload types of one `m=` line.
const MAX_PAYLOADS: usize = 12;
/// Most attributes of one section (and of the session).
const MAX_ATTRS: usize = 24;
/// Most `a=crypto` lines of one section (the parser's limit is 16).
const MAX_CRYPTO_LINES: usize = 8;

/// A word with no white space or line break: one of a few real ones, or
/// arbitrary text cut to printable ASCII.
#[derive(Arbitrary, Debug, Clone)]
pub enum Word {
    /// One of [`WORDS`].
    Known(u8),
    /// Arbitrary text: printable ASCII kept, at most 32 characters.
    Raw(String),
}

const WORDS: &[&str] = &[
    "-",
    "x",
    "alice",
    "bob",
    "Asterisk",
    "FreeSWITCH",
    "srtpgate",
    "a1b2c3",
    "4ZcD",
    "abcdefghijklmnopqrstuv",
    "F7gI/4XJtuyGYIaAi0XfYZ2V",
    "example.com",
    "0",
    "1",
    "foo=bar",
    "a:b",
    "sendrecv",
];

impl Word {
    /// The word as rendered.
    pub fn text(&self) -> String {
        match self {
            Word::Known(i) => WORDS[*i as usize % WORDS.len()].to_string(),
            Word::Raw(s) => {
                let w: String = s.chars().filter(char::is_ascii_graphic).take(32).collect();
                if w.is_empty() {
                    "x".into()
                } else {
                    w
                }
            }
        }
    }
}

/// A connection address (`IN IP4 …`).
#[derive(Arbitrary, Debug, Clone)]
pub enum Addr {
    /// An IPv4 address.
    V4([u8; 4]),
    /// An IPv6 address.
    V6([u16; 8]),
    /// `0.0.0.0` (hold, in old SDPs).
    Zero,
    /// `IN IP4 <name>`: a host name, no address.
    Fqdn(Word),
    /// An IPv4 address with a multicast TTL (`/127`).
    V4Ttl([u8; 4], u8),
    /// Address type that does not match the address.
    Mismatch([u8; 4]),
}

impl Addr {
    /// The `IN IPx addr` fields, and the address the parser must see.
    fn render(&self) -> (String, Option<IpAddr>) {
        match self {
            Addr::V4(a) => {
                let ip = Ipv4Addr::from(*a);
                (format!("IN IP4 {ip}"), Some(IpAddr::V4(ip)))
            }
            Addr::V6(s) => {
                let ip = Ipv6Addr::from(*s);
                (format!("IN IP6 {ip}"), Some(IpAddr::V6(ip)))
            }
            Addr::Zero => ("IN IP4 0.0.0.0".into(), Some(IpAddr::V4(Ipv4Addr::UNSPECIFIED))),
            Addr::Fqdn(w) => {
                let t = w.text();
                let ip = t.split('/').next().and_then(|a| a.parse::<Ipv4Addr>().ok()).map(IpAddr::V4);
                (format!("IN IP4 {t}"), ip)
            }
            Addr::V4Ttl(a, ttl) => {
                let ip = Ipv4Addr::from(*a);
                (format!("IN IP4 {ip}/{ttl}"), Some(IpAddr::V4(ip)))
            }
            Addr::Mismatch(a) => (format!("IN IP6 {}", Ipv4Addr::from(*a)), None),
        }
    }
}

/// `a=` direction attributes.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Dir {
    /// `a=sendrecv`.
    SendRecv,
    /// `a=sendonly`.
    SendOnly,
    /// `a=recvonly`.
    RecvOnly,
    /// `a=inactive`.
    Inactive,
}

impl Dir {
    fn direction(self) -> Direction {
        match self {
            Dir::SendRecv => Direction::SendRecv,
            Dir::SendOnly => Direction::SendOnly,
            Dir::RecvOnly => Direction::RecvOnly,
            Dir::Inactive => Direction::Inactive,
        }
    }
}

/// A raw line: arbitrary text, written as is (it may break the SDP).
#[derive(Arbitrary, Debug, Clone)]
pub struct RawLine(pub String);

/// The whole SDP.
#[derive(Arbitrary, Debug, Clone)]
pub struct SdpInput {
    /// Line ends: bare LF instead of CRLF.
    pub lf_only: bool,
    /// `o=` username.
    pub origin_user: Word,
    /// `o=` session id and version.
    pub origin_ids: (u32, u32),
    /// `o=` address.
    pub origin_addr: Addr,
    /// `s=` (none: left out, as some phones do).
    pub session_name: Option<Word>,
    /// Session-level `c=`.
    pub session_conn: Option<Addr>,
    /// A `b=AS:` line at session level.
    pub session_bw: Option<u16>,
    /// Whether `t=0 0` is written.
    pub time: bool,
    /// Session-level attributes.
    pub session_attrs: Vec<Attr>,
    /// The first `m=` section.
    pub first: Section,
    /// Up to three more.
    pub more: Vec<Section>,
}

/// One `m=` section.
#[derive(Arbitrary, Debug, Clone)]
pub struct Section {
    /// The media type.
    pub kind: Kind,
    /// The port.
    pub port: Port,
    /// The transport protocol.
    pub proto: Proto,
    /// Payload types (formats).
    pub payloads: Vec<Payload>,
    /// A media-level `c=`.
    pub conn: Option<Addr>,
    /// A `b=TIAS:` line.
    pub bw: Option<u32>,
    /// Attributes.
    pub attrs: Vec<Attr>,
}

/// `m=` media type.
#[derive(Arbitrary, Debug, Clone)]
pub enum Kind {
    /// `audio`.
    Audio,
    /// `video`.
    Video,
    /// `application`.
    Application,
    /// `image` (T.38).
    Image,
    /// Anything else.
    Other(Word),
}

/// `m=` port.
#[derive(Arbitrary, Debug, Clone)]
pub enum Port {
    /// 0: a rejected or disabled section.
    Zero,
    /// A port.
    Port(u16),
    /// `port/count`.
    Count(u16, u8),
}

/// `m=` protocol.
#[derive(Arbitrary, Debug, Clone)]
pub enum Proto {
    /// `RTP/AVP`.
    RtpAvp,
    /// `RTP/SAVP`.
    RtpSavp,
    /// `RTP/SAVPF`.
    RtpSavpf,
    /// `RTP/AVPF`.
    RtpAvpf,
    /// `UDP/TLS/RTP/SAVPF`.
    UdpTlsRtpSavpf,
    /// `UDP/TLS/RTP/SAVP`.
    UdpTlsRtpSavp,
    /// `UDP/DTLS/SCTP` (data channels).
    Sctp,
    /// `udptl` (T.38).
    Udptl,
    /// Lower-case `rtp/savp`.
    LowerSavp,
    /// Anything else.
    Other(Word),
}

/// A payload type with its optional `a=rtpmap` and `a=fmtp`.
#[derive(Arbitrary, Debug, Clone)]
pub struct Payload {
    /// The payload type (taken modulo 128), or a non-numeric format.
    pub pt: Pt,
    /// `a=rtpmap` codec: index into [`CODECS`].
    pub rtpmap: Option<u8>,
    /// `a=fmtp` parameters: index into [`FMTPS`].
    pub fmtp: Option<u8>,
    /// `a=rtcp-fb` for it: index into [`RTCP_FB`].
    pub rtcp_fb: Option<u8>,
}

/// A format of the `m=` line.
#[derive(Arbitrary, Debug, Clone)]
pub enum Pt {
    /// A number (modulo 128).
    Num(u8),
    /// A word (`webrtc-datachannel`, `t38`, …).
    Name(Word),
}

const CODECS: &[&str] = &[
    "PCMU/8000",
    "PCMA/8000",
    "G722/8000",
    "G729/8000",
    "opus/48000/2",
    "telephone-event/8000",
    "telephone-event/48000",
    "CN/8000",
    "iLBC/8000",
    "speex/16000",
    "AMR-WB/16000/1",
    "VP8/90000",
    "H264/90000",
    "L16/44100/2",
    "red/48000/2",
    "X/0",
];
const FMTPS: &[&str] = &[
    "0-16",
    "0-15",
    "minptime=10;useinbandfec=1",
    "annexb=no",
    "mode=30",
    "profile-level-id=42e01f;packetization-mode=1",
    "111/111",
    "maxplaybackrate=16000; stereo=1",
    "",
];
const RTCP_FB: &[&str] = &["nack", "nack pli", "ccm fir", "goog-remb", "transport-cc"];
const EXTMAPS: &[&str] = &[
    "urn:ietf:params:rtp-hdrext:ssrc-audio-level",
    "urn:ietf:params:rtp-hdrext:sdes:mid",
    "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time",
    "urn:ietf:params:rtp-hdrext:toffset",
];

/// An attribute (session or media level).
#[derive(Arbitrary, Debug, Clone)]
pub enum Attr {
    /// `a=crypto`.
    Crypto(Crypto),
    /// `a=rtcp:port [IN IP4 addr]`.
    Rtcp(u16, Option<Addr>),
    /// `a=rtcp-mux`.
    RtcpMux,
    /// `a=rtcp-rsize`.
    RtcpRsize,
    /// `a=ice-ufrag`.
    IceUfrag(Word),
    /// `a=ice-pwd`.
    IcePwd(Word),
    /// `a=ice-options:trickle`.
    IceOptions,
    /// `a=ice-lite`.
    IceLite,
    /// `a=candidate`.
    Candidate(Candidate),
    /// `a=end-of-candidates`.
    EndOfCandidates,
    /// `a=fingerprint:sha-256 …`.
    Fingerprint(bool, [u8; 8]),
    /// `a=setup`.
    Setup(u8),
    /// `a=group:BUNDLE` with these mids.
    Bundle(Vec<u8>),
    /// `a=mid`.
    Mid(u8),
    /// `a=extmap:id[/dir] uri`.
    Extmap(u8, Option<Dir>, u8),
    /// A direction.
    Direction(Dir),
    /// `a=ptime`.
    Ptime(u16),
    /// `a=maxptime`.
    Maxptime(u16),
    /// `a=ssrc:n cname:…`.
    Ssrc(u32, Word),
    /// `a=msid-semantic: WMS`.
    MsidSemantic,
    /// `a=sctp-port`.
    SctpPort(u16),
    /// `a=x-name[:value]`.
    Other(Word, Option<Word>),
    /// An arbitrary line.
    Raw(RawLine),
}

/// An ICE candidate.
#[derive(Arbitrary, Debug, Clone)]
pub struct Candidate {
    /// Foundation.
    pub foundation: u32,
    /// Component (1 or 2 mostly).
    pub component: u8,
    /// UDP or TCP.
    pub tcp: bool,
    /// Priority.
    pub priority: u32,
    /// Address.
    pub addr: Addr,
    /// Port.
    pub port: u16,
    /// Candidate type index: host, srflx, relay, prflx.
    pub typ: u8,
}

/// An `a=crypto` line.
#[derive(Arbitrary, Debug, Clone)]
pub struct Crypto {
    /// The tag.
    pub tag: u16,
    /// The suite.
    pub suite: SuiteName,
    /// The key parameters (one, or more with MKIs).
    pub first: Key,
    /// More keys (at most two more are rendered).
    pub more: Vec<Key>,
    /// Session parameters.
    pub params: Vec<SessionParam>,
}

/// A suite name.
#[derive(Arbitrary, Debug, Clone)]
pub enum SuiteName {
    /// `Suite::ALL[i % 11]`.
    Real(u8),
    /// The same, in lower case.
    Lower(u8),
    /// RFC 6188 aliases in the wild (`AES_CM_256_HMAC_SHA1_80`, …).
    Alias(u8),
    /// A name srtpgate does not know.
    Unknown(Word),
}

const ALIASES: &[(&str, Suite)] = &[
    ("AES_CM_192_HMAC_SHA1_80", Suite::AES_192_CM_HMAC_SHA1_80),
    ("AES_CM_192_HMAC_SHA1_32", Suite::AES_192_CM_HMAC_SHA1_32),
    ("AES_CM_256_HMAC_SHA1_80", Suite::AES_256_CM_HMAC_SHA1_80),
    ("AES_CM_256_HMAC_SHA1_32", Suite::AES_256_CM_HMAC_SHA1_32),
];

impl SuiteName {
    /// The name, and the suite it must parse to (`None`: must be refused).
    fn render(&self) -> (String, Option<Suite>) {
        match self {
            SuiteName::Real(i) => {
                let s = Suite::ALL[*i as usize % Suite::ALL.len()];
                (s.name().to_string(), Some(s))
            }
            SuiteName::Lower(i) => {
                let s = Suite::ALL[*i as usize % Suite::ALL.len()];
                (s.name().to_ascii_lowercase(), Some(s))
            }
            SuiteName::Alias(i) => {
                let (n, s) = ALIASES[*i as usize % ALIASES.len()];
                (n.to_string(), Some(s))
            }
            SuiteName::Unknown(w) => {
                let t = w.text();
                let known = t
                    .parse::<Suite>()
                    .ok()
                    .or_else(|| ALIASES.iter().find(|(n, _)| n.eq_ignore_ascii_case(&t)).map(|(_, s)| *s));
                (t, known)
            }
        }
    }
}

/// One key parameter (`inline:KEY[|lifetime][|mki:len]`).
#[derive(Arbitrary, Debug, Clone)]
pub struct Key {
    /// The key bytes' form.
    pub form: KeyForm,
    /// Seed of the key bytes.
    pub seed: u8,
    /// Lifetime.
    pub lifetime: Option<Lifetime>,
    /// MKI `value:length` (length from 1, 2, 4, 128; the value fits).
    pub mki: Option<(u8, u8)>,
}

/// How the key is written.
#[derive(Arbitrary, Debug, Clone)]
pub enum KeyForm {
    /// The suite's length, padded base64.
    Valid,
    /// The suite's length, base64 without padding.
    NoPad,
    /// The suite's length plus this many bytes (1 or more): refused.
    Long(u8),
    /// The suite's length minus 1 to 8 bytes: refused.
    Short(u8),
    /// Characters outside base64: refused.
    NotBase64,
    /// An empty key: refused.
    Empty,
    /// A key method other than `inline`: refused.
    Method(Word),
}

/// A key lifetime.
#[derive(Arbitrary, Debug, Clone)]
pub enum Lifetime {
    /// `2^n` (valid for 1 to 48; 0 too).
    Pow(u8),
    /// A decimal number (valid when 1 to 2^48).
    Dec(u64),
}

/// A session parameter of `a=crypto`.
#[derive(Arbitrary, Debug, Clone)]
pub enum SessionParam {
    /// `KDR=n` (valid up to 24).
    Kdr(u8),
    /// `UNENCRYPTED_SRTP`.
    UnencryptedSrtp,
    /// `UNENCRYPTED_SRTCP`.
    UnencryptedSrtcp,
    /// `UNAUTHENTICATED_SRTP`.
    UnauthenticatedSrtp,
    /// `WSH=n` (valid from 64).
    Wsh(u32),
    /// `FEC_ORDER=FEC_SRTP` (or a bad order).
    FecOrder(bool),
}

/// Base64 (RFC 4648, with padding).
pub fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Crypto {
    /// The attribute value, and whether it must parse (`Some(true)`), must
    /// be refused (`Some(false)`), or either.
    fn render(&self) -> (String, Option<bool>) {
        let (suite_name, suite) = self.suite.render();
        // Length of the suite the key is written for (the named one, or the
        // default suite's for an unknown name).
        let ks = suite.unwrap_or(Suite::AES_CM_128_HMAC_SHA1_80);
        let len = ks.master_key_len() + ks.master_salt_len();
        let mut keys = Vec::new();
        // An unknown suite is refused whatever the keys.
        let mut verdict = Some(suite.is_some());
        let all: Vec<&Key> = std::iter::once(&self.first).chain(self.more.iter().take(2)).collect();
        let several = all.len() > 1;
        let mut mkis = Vec::new();
        for k in &all {
            let bytes: Vec<u8> = (0..len as u8 + 8).map(|i| i.wrapping_mul(29).wrapping_add(k.seed)).collect();
            let (text, ok) = match &k.form {
                KeyForm::Valid => (format!("inline:{}", base64(&bytes[..len])), Some(true)),
                KeyForm::NoPad => (format!("inline:{}", base64(&bytes[..len]).trim_end_matches('=')), Some(true)),
                KeyForm::Long(n) => {
                    let n = 1 + *n as usize % 8;
                    (format!("inline:{}", base64(&bytes[..len + n])), Some(false))
                }
                KeyForm::Short(n) => {
                    let n = 1 + *n as usize % 8;
                    (format!("inline:{}", base64(&bytes[..len - n])), Some(false))
                }
                KeyForm::NotBase64 => (format!("inline:{}!*", base64(&bytes[..len - 3])), Some(false)),
                KeyForm::Empty => ("inline:".into(), Some(false)),
                KeyForm::Method(w) => {
                    let m = w.text().replace([':', ';', '|'], "");
                    let m = if m.eq_ignore_ascii_case("inline") || m.is_empty() { "uri".into() } else { m };
                    (format!("{m}:{}", base64(&bytes[..len])), Some(false))
                }
            };
            let mut text = text;
            let mut ok = ok;
            match &k.lifetime {
                None => {}
                Some(Lifetime::Pow(n)) => {
                    let n = n % 64;
                    text.push_str(&format!("|2^{n}"));
                    if n > 48 {
                        ok = ok.and(Some(false));
                    }
                }
                Some(Lifetime::Dec(v)) => {
                    text.push_str(&format!("|{v}"));
                    if *v == 0 || *v > 1 << 48 {
                        ok = ok.and(Some(false));
                    }
                }
            }
            match k.mki {
                Some((v, l)) => {
                    let l = [1u8, 2, 4, 128][l as usize % 4];
                    text.push_str(&format!("|{v}:{l}"));
                    mkis.push(Some((v, l)));
                }
                None => mkis.push(None),
            }
            verdict = match (verdict, ok) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            };
            keys.push(text);
        }
        if several && verdict == Some(true) {
            // Several keys need MKIs of one length and distinct values.
            let first_len = mkis[0].map(|m| m.1);
            let mut seen = Vec::new();
            for m in &mkis {
                match m {
                    Some((v, l)) if Some(*l) == first_len && !seen.contains(v) => seen.push(*v),
                    _ => verdict = Some(false),
                }
            }
        }
        let mut out = format!("{} {suite_name} {}", self.tag, keys.join(";"));
        for p in self.params.iter().take(4) {
            let (t, ok) = match p {
                SessionParam::Kdr(n) => (format!("KDR={n}"), *n <= 24),
                SessionParam::UnencryptedSrtp => ("UNENCRYPTED_SRTP".into(), true),
                SessionParam::UnencryptedSrtcp => ("UNENCRYPTED_SRTCP".into(), true),
                SessionParam::UnauthenticatedSrtp => ("UNAUTHENTICATED_SRTP".into(), true),
                SessionParam::Wsh(n) => (format!("WSH={n}"), *n >= 64),
                SessionParam::FecOrder(good) => {
                    (format!("FEC_ORDER={}", if *good { "FEC_SRTP" } else { "FEC_BOTH" }), *good)
                }
            };
            out.push(' ');
            out.push_str(&t);
            if !ok && verdict == Some(true) {
                verdict = Some(false);
            }
        }
        (out, verdict)
    }
}

/// What a section must parse to.
struct Expect {
    kind: String,
    port: u16,
    proto: String,
    formats: Vec<String>,
    conn: Option<Option<IpAddr>>,
    rtcp_port: Option<u16>,
    rtcp_mux: bool,
    direction: Option<Direction>,
    crypto: Vec<(Option<bool>, Option<Suite>, u16)>,
}

/// Renders attributes into `lines`; false if a raw line was written.
fn render_attrs(attrs: &[Attr], lines: &mut Vec<String>, e: &mut Expect) -> bool {
    let mut clean = true;
    let mut crypto = 0;
    for a in attrs.iter().take(MAX_ATTRS) {
        let line = match a {
            Attr::Crypto(c) => {
                if crypto == MAX_CRYPTO_LINES {
                    continue;
                }
                crypto += 1;
                let (v, verdict) = c.render();
                e.crypto.push((verdict, c.suite.render().1, c.tag));
                format!("a=crypto:{v}")
            }
            Attr::Rtcp(p, addr) => {
                e.rtcp_port.get_or_insert(*p);
                match addr {
                    Some(a) => format!("a=rtcp:{p} {}", a.render().0),
                    None => format!("a=rtcp:{p}"),
                }
            }
            Attr::RtcpMux => {
                e.rtcp_mux = true;
                "a=rtcp-mux".into()
            }
            Attr::RtcpRsize => "a=rtcp-rsize".into(),
            Attr::IceUfrag(w) => format!("a=ice-ufrag:{}", w.text()),
            Attr::IcePwd(w) => format!("a=ice-pwd:{}", w.text()),
            Attr::IceOptions => "a=ice-options:trickle".into(),
            Attr::IceLite => "a=ice-lite".into(),
            Attr::Candidate(c) => {
                let typ = ["host", "srflx", "relay", "prflx"][c.typ as usize % 4];
                let (addr, _) = c.addr.render();
                let ip = addr.rsplit(' ').next().unwrap_or_default().to_string();
                let mut l = format!(
                    "a=candidate:{} {} {} {} {ip} {} typ {typ}",
                    c.foundation,
                    c.component,
                    if c.tcp { "tcp" } else { "udp" },
                    c.priority,
                    c.port
                );
                if typ != "host" {
                    l.push_str(" raddr 192.0.2.1 rport 9");
                }
                if c.tcp {
                    l.push_str(" tcptype passive");
                }
                l
            }
            Attr::EndOfCandidates => "a=end-of-candidates".into(),
            Attr::Fingerprint(sha1, b) => {
                let n = if *sha1 { 20 } else { 32 };
                let hex: Vec<String> = (0..n).map(|i| format!("{:02X}", b[i % 8] ^ i as u8)).collect();
                format!("a=fingerprint:{} {}", if *sha1 { "sha-1" } else { "sha-256" }, hex.join(":"))
            }
            Attr::Setup(r) => format!("a=setup:{}", ["actpass", "active", "passive", "holdconn"][*r as usize % 4]),
            Attr::Bundle(mids) => {
                let mut l = "a=group:BUNDLE".to_string();
                for m in mids.iter().take(6) {
                    let _ = write!(l, " {}", m % 8);
                }
                l
            }
            Attr::Mid(m) => format!("a=mid:{}", m % 8),
            Attr::Extmap(id, dir, uri) => {
                let id = 1 + id % 15;
                let uri = EXTMAPS[*uri as usize % EXTMAPS.len()];
                match dir {
                    Some(d) => format!("a=extmap:{id}/{} {uri}", d.direction().as_str()),
                    None => format!("a=extmap:{id} {uri}"),
                }
            }
            Attr::Direction(d) => {
                e.direction = Some(d.direction());
                format!("a={}", d.direction().as_str())
            }
            Attr::Ptime(p) => format!("a=ptime:{p}"),
            Attr::Maxptime(p) => format!("a=maxptime:{p}"),
            Attr::Ssrc(n, w) => format!("a=ssrc:{n} cname:{}", w.text()),
            Attr::MsidSemantic => "a=msid-semantic: WMS".into(),
            Attr::SctpPort(p) => format!("a=sctp-port:{p}"),
            Attr::Other(n, v) => {
                // `x-`: never one of the attributes the checks look at.
                let n = n.text().replace(':', "");
                match v {
                    Some(v) => format!("a=x-{n}:{}", v.text()),
                    None => format!("a=x-{n}"),
                }
            }
            Attr::Raw(RawLine(s)) => {
                clean = false;
                s.clone()
            }
        };
        lines.push(line);
    }
    clean
}

/// What the rendered SDP must parse to (when it has no raw line).
pub struct Rendered {
    /// The SDP text.
    pub text: String,
    clean: bool,
    session_conn: Option<Option<IpAddr>>,
    media: Vec<Expect>,
}

impl SdpInput {
    /// Renders the SDP, with what it must parse to.
    pub fn render(&self) -> Rendered {
        let mut lines = vec!["v=0".to_string()];
        let (o, _) = self.origin_addr.render();
        lines.push(format!("o={} {} {} {o}", self.origin_user.text(), self.origin_ids.0, self.origin_ids.1));
        if let Some(s) = &self.session_name {
            lines.push(format!("s={}", s.text()));
        }
        let mut session_conn = None;
        if let Some(c) = &self.session_conn {
            let (t, ip) = c.render();
            lines.push(format!("c={t}"));
            session_conn = Some(ip);
        }
        if let Some(b) = self.session_bw {
            lines.push(format!("b=AS:{b}"));
        }
        if self.time {
            lines.push("t=0 0".into());
        }
        let mut scratch = Expect {
            kind: String::new(),
            port: 0,
            proto: String::new(),
            formats: Vec::new(),
            conn: None,
            rtcp_port: None,
            rtcp_mux: false,
            direction: None,
            crypto: Vec::new(),
        };
        let mut clean = render_attrs(&self.session_attrs, &mut lines, &mut scratch);
        let mut media = Vec::new();
        for s in std::iter::once(&self.first).chain(self.more.iter()).take(MAX_SECTIONS) {
            let kind = match &s.kind {
                Kind::Audio => "audio".to_string(),
                Kind::Video => "video".into(),
                Kind::Application => "application".into(),
                Kind::Image => "image".into(),
                Kind::Other(w) => w.text(),
            };
            let (port, port_text) = match s.port {
                Port::Zero => (0, "0".to_string()),
                Port::Port(p) => (p, p.to_string()),
                Port::Count(p, n) => (p, format!("{p}/{n}")),
            };
            let proto = match &s.proto {
                Proto::RtpAvp => "RTP/AVP".to_string(),
                Proto::RtpSavp => "RTP/SAVP".into(),
                Proto::RtpSavpf => "RTP/SAVPF".into(),
                Proto::RtpAvpf => "RTP/AVPF".into(),
                Proto::UdpTlsRtpSavpf => "UDP/TLS/RTP/SAVPF".into(),
                Proto::UdpTlsRtpSavp => "UDP/TLS/RTP/SAVP".into(),
                Proto::Sctp => "UDP/DTLS/SCTP".into(),
                Proto::Udptl => "udptl".into(),
                Proto::LowerSavp => "rtp/savp".into(),
                Proto::Other(w) => w.text(),
            };
            let mut formats = Vec::new();
            let mut pt_lines = Vec::new();
            for p in s.payloads.iter().take(MAX_PAYLOADS) {
                let f = match &p.pt {
                    Pt::Num(n) => (n % 128).to_string(),
                    Pt::Name(w) => w.text(),
                };
                if let Some(c) = p.rtpmap {
                    pt_lines.push(format!("a=rtpmap:{f} {}", CODECS[c as usize % CODECS.len()]));
                }
                if let Some(x) = p.fmtp {
                    pt_lines.push(format!("a=fmtp:{f} {}", FMTPS[x as usize % FMTPS.len()]));
                }
                if let Some(x) = p.rtcp_fb {
                    pt_lines.push(format!("a=rtcp-fb:{f} {}", RTCP_FB[x as usize % RTCP_FB.len()]));
                }
                formats.push(f);
            }
            let mut m_line = format!("m={kind} {port_text} {proto}");
            for f in &formats {
                m_line.push(' ');
                m_line.push_str(f);
            }
            lines.push(m_line);
            let mut e = Expect {
                kind,
                port,
                proto,
                formats,
                conn: None,
                rtcp_port: None,
                rtcp_mux: false,
                direction: None,
                crypto: Vec::new(),
            };
            if let Some(c) = &s.conn {
                let (t, ip) = c.render();
                lines.push(format!("c={t}"));
                e.conn = Some(ip);
            }
            if let Some(b) = s.bw {
                lines.push(format!("b=TIAS:{b}"));
            }
            lines.extend(pt_lines);
            clean &= render_attrs(&s.attrs, &mut lines, &mut e);
            media.push(e);
        }
        let eol = if self.lf_only { "\n" } else { "\r\n" };
        let mut text = lines.join(eol);
        text.push_str(eol);
        Rendered { text, clean, session_conn, media }
    }
}

impl Rendered {
    /// Checks the parse against what was rendered (only for an SDP without
    /// raw lines; with them, only that nothing panics).
    pub fn check_parse(&self) {
        let parsed = Sdp::parse(&self.text);
        if !self.clean {
            return;
        }
        let sdp = match parsed {
            Ok(s) => s,
            Err(e) => panic!("a well-formed SDP is refused: {e}\n{}", self.text),
        };
        assert_eq!(sdp.media().len(), self.media.len(), "number of m= sections");
        if let Some(ip) = self.session_conn {
            assert_eq!(sdp.connection(), ip, "session c=");
        }
        for (i, (m, e)) in sdp.media().iter().zip(&self.media).enumerate() {
            assert_eq!(m.media_type(), e.kind, "m= media type of section {i}");
            assert_eq!(m.port(), e.port, "m= port of section {i}");
            assert_eq!(m.proto(), e.proto, "m= proto of section {i}");
            assert_eq!(m.formats(), e.formats, "m= formats of section {i}");
            if let Some(ip) = e.conn {
                assert_eq!(m.connection(), ip, "c= of section {i}");
                assert_eq!(sdp.media_connection(i), ip, "connection in effect for section {i}");
            } else if let Some(ip) = self.session_conn {
                assert_eq!(m.connection(), None);
                assert_eq!(sdp.media_connection(i), ip, "session c= in effect for section {i}");
            }
            assert_eq!(m.rtcp().map(|r| r.0), e.rtcp_port, "a=rtcp port of section {i}");
            assert_eq!(m.rtcp_mux(), e.rtcp_mux, "a=rtcp-mux of section {i}");
            assert_eq!(m.direction(), e.direction, "direction of section {i}");
            let crypto = m.crypto();
            assert_eq!(crypto.len(), e.crypto.len(), "a=crypto lines of section {i}");
            for (j, (c, (verdict, suite, tag))) in crypto.iter().zip(&e.crypto).enumerate() {
                match (verdict, c) {
                    (Some(true), Ok(c)) => {
                        assert_eq!(Some(c.suite), *suite, "suite of a=crypto {j} of section {i}");
                        assert_eq!(c.tag, u32::from(*tag));
                        let keys = c.master_keys().expect("an accepted a=crypto makes no master key");
                        assert_eq!(keys.len(), c.keys.len());
                    }
                    (Some(true), Err(err)) => {
                        panic!("valid a=crypto {j} of section {i} refused: {err}\n{}", self.text)
                    }
                    (Some(false), Ok(_)) => panic!("invalid a=crypto {j} of section {i} accepted\n{}", self.text),
                    _ => {}
                }
            }
        }
    }
}

/// The `sdp_structured` target: the input decoded as an [`SdpInput`],
/// rendered, checked against its structure, then through the `sdp` target.
pub fn sdp_structured(data: &[u8]) {
    let Ok(input) = arbitrary::Unstructured::new(data).arbitrary::<SdpInput>() else {
        return;
    };
    let r = input.render();
    r.check_parse();
    crate::sdp::sdp(r.text.as_bytes());
}
