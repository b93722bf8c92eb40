//! SDP offer/answer rewriting for the relay (RFC 8866, RFC 3264) and SDES
//! keys (RFC 4568, in [`crypto`]).
//!
//! # Line-preserving on purpose
//!
//! An [`Sdp`] is the list of its lines, split into the session part and one
//! [`Media`] section per `m=` line; getters interpret lines on demand, and
//! setters replace, insert or remove whole lines. Every line a rewrite does not
//! touch is written back byte for byte and in order. Structured SDP crates
//! parse into a model and re-serialise it, which drops attributes they do not
//! know, reorders lines and normalises spacing; phones and SBCs then see an SDP
//! that differs in ways nobody asked for. Here only what the relay changes
//! changes.
//!
//! Input lines may end in CRLF or a bare LF; output lines always end in CRLF.
//! Tolerated: trailing spaces (kept), empty lines (dropped, e.g. a trailing
//! empty line), `a=` lines before `c=`, a missing `t=` or `s=`. Rejected, with
//! the line number: a line that is not `<letter>=...`, a CR or NUL inside a
//! line, a malformed `m=` line, a first line other than `v=`. Limits: 64 KiB,
//! 2 000 lines, 64 media sections, 16 `a=crypto` per media section.
//!
//! Attribute names are matched ASCII case-insensitively; attribute values are
//! returned trimmed.
//!
//! # Connection addresses
//!
//! `c=` may be at session level, at media level, or both (a media-level `c=`
//! overrides the session one for its section). [`Sdp::set_connection`] and
//! [`Media::set_connection`] each touch one level only;
//! [`Sdp::set_all_connections`] rewrites every `c=` there is and makes sure
//! every media section is covered. [`Sdp::media_connection`] gives the address
//! in effect for one section.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod crypto;
pub mod formats;

/// The `rand` this crate's [`crypto::CryptoAttr::generate`] takes an RNG of.
pub use rand;

use core::fmt;
use std::net::IpAddr;
use zeroize::Zeroize;

/// Largest SDP accepted, in bytes.
pub const MAX_SDP_LEN: usize = 64 * 1024;
/// Most (non-empty) lines accepted.
pub const MAX_LINES: usize = 2000;
/// Most media sections accepted.
pub const MAX_MEDIA: usize = 64;
/// Most `a=crypto` lines accepted in one media section.
pub const MAX_CRYPTO: usize = 16;

/// Why an SDP was refused. `Display` is meant for the NG `error-reason`: it
/// names the problem and the line, never quotes key material.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SdpError {
    /// No non-empty line.
    #[error("empty SDP")]
    Empty,
    /// Over [`MAX_SDP_LEN`] bytes.
    #[error("SDP too large ({0} bytes, at most {MAX_SDP_LEN})")]
    TooLarge(usize),
    /// Over [`MAX_LINES`] lines.
    #[error("SDP has too many lines (at most {MAX_LINES})")]
    TooManyLines,
    /// Over [`MAX_MEDIA`] media sections.
    #[error("SDP has too many media sections (at most {MAX_MEDIA})")]
    TooManyMedia,
    /// Over [`MAX_CRYPTO`] `a=crypto` lines in one media section (numbered from 1).
    #[error("SDP media section {0} has too many a=crypto lines (at most {MAX_CRYPTO})")]
    TooManyCrypto(usize),
    /// The first line is not `v=`.
    #[error("SDP line {0}: the first line must be v=")]
    NoVersion(usize),
    /// A line that is not `<letter>=<text>`.
    #[error("SDP line {line}: {reason}")]
    BadLine {
        /// Line number, from 1, counting empty lines.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A malformed `m=` line.
    #[error("SDP line {line}: bad m= line: {reason}")]
    BadMedia {
        /// Line number, from 1, counting empty lines.
        line: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

/// Media direction attribute (RFC 3264 §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `a=sendrecv`.
    SendRecv,
    /// `a=sendonly`.
    SendOnly,
    /// `a=recvonly`.
    RecvOnly,
    /// `a=inactive`.
    Inactive,
}

impl Direction {
    /// The attribute name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Direction::SendRecv => "sendrecv",
            Direction::SendOnly => "sendonly",
            Direction::RecvOnly => "recvonly",
            Direction::Inactive => "inactive",
        }
    }

    /// The direction seen from the other side (sendonly ↔ recvonly).
    pub const fn reverse(self) -> Direction {
        match self {
            Direction::SendOnly => Direction::RecvOnly,
            Direction::RecvOnly => Direction::SendOnly,
            d => d,
        }
    }

    fn from_attr(name: &str) -> Option<Direction> {
        [Direction::SendRecv, Direction::SendOnly, Direction::RecvOnly, Direction::Inactive]
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed SDP: session lines and media sections, kept as text.
#[derive(Clone, PartialEq, Eq)]
pub struct Sdp {
    session: Vec<String>,
    media: Vec<Media>,
}

/// One media section: its lines, the first being `m=`.
#[derive(Clone, PartialEq, Eq)]
pub struct Media {
    lines: Vec<String>,
}

// ---------------------------------------------------------------- helpers

/// Byte ranges of the whitespace-separated tokens of `s` (space and tab).
fn tokens(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        if c == ' ' || c == '\t' {
            if let Some(st) = start.take() {
                out.push((st, i));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(st) = start {
        out.push((st, s.len()));
    }
    out
}

pub(crate) fn words(s: &str) -> impl Iterator<Item = &str> {
    s.split([' ', '\t']).filter(|w| !w.is_empty())
}

/// Replaces token `idx` of the value part (after `x=`) of `line`.
fn replace_token(line: &mut String, idx: usize, new: &str) -> bool {
    let Some(value) = line.get(2..) else {
        return false;
    };
    let Some(&(s, e)) = tokens(value).get(idx) else {
        return false;
    };
    line.replace_range(s + 2..e + 2, new);
    true
}

fn line_type(line: &str) -> u8 {
    line.as_bytes().first().copied().unwrap_or(0)
}

fn value_of(line: &str, ty: u8) -> Option<&str> {
    let b = line.as_bytes();
    if b.first() == Some(&ty) && b.get(1) == Some(&b'=') {
        line.get(2..)
    } else {
        None
    }
}

/// `(name, value)` of an `a=` line: value "" for a flag; both trimmed.
pub(crate) fn split_attr(line: &str) -> Option<(&str, &str)> {
    let v = value_of(line, b'a')?;
    Some(match v.split_once(':') {
        Some((n, v)) => (n.trim(), v.trim()),
        None => (v.trim(), ""),
    })
}

fn attr_is(line: &str, name: &str) -> bool {
    split_attr(line).is_some_and(|(n, _)| n.eq_ignore_ascii_case(name))
}

fn attr_line(name: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!("a={name}:{v}"),
        None => format!("a={name}"),
    }
}

/// Text the daemon passes to a setter must not break the line structure.
fn safe_text(s: &str) -> bool {
    !s.contains(['\r', '\n', '\0'])
}

fn addr_fields(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(a) => format!("IN IP4 {a}"),
        IpAddr::V6(a) => format!("IN IP6 {a}"),
    }
}

/// `IN IP4 addr[/ttl[/n]]` → the address; None for FQDNs, mismatched address
/// types and anything malformed.
fn parse_addr_fields<'a>(mut w: impl Iterator<Item = &'a str>) -> Option<IpAddr> {
    let (nt, at, addr) = (w.next()?, w.next()?, w.next()?);
    if !nt.eq_ignore_ascii_case("IN") {
        return None;
    }
    let addr = addr.split('/').next()?;
    if at.eq_ignore_ascii_case("IP4") {
        addr.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4)
    } else if at.eq_ignore_ascii_case("IP6") {
        addr.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6)
    } else {
        None
    }
}

fn connection_of(lines: &[String]) -> Option<IpAddr> {
    lines.iter().find_map(|l| value_of(l, b'c')).and_then(|v| parse_addr_fields(words(v)))
}

/// Replaces the first `c=` of `lines` and removes the others; false if none.
fn replace_connection(lines: &mut Vec<String>, addr: IpAddr) -> bool {
    let Some(first) = lines.iter().position(|l| value_of(l, b'c').is_some()) else {
        return false;
    };
    let new = format!("c={}", addr_fields(addr));
    remove_lines(lines, |i, l| i > first && value_of(l, b'c').is_some());
    if let Some(l) = lines.get_mut(first) {
        *l = new;
    }
    true
}

/// Removes the lines `pred` selects, zeroizing them (they may hold keys).
fn remove_lines(lines: &mut Vec<String>, mut pred: impl FnMut(usize, &str) -> bool) {
    let mut i = 0;
    lines.retain_mut(|l| {
        let remove = pred(i, l);
        i += 1;
        if remove {
            l.zeroize();
        }
        !remove
    });
}

/// A line for `Debug`: key material of `a=crypto`, `k=` and `a=key-mgmt`
/// replaced.
fn redacted(line: &str) -> String {
    if let Some((n, v)) = split_attr(line) {
        if n.eq_ignore_ascii_case("crypto") {
            let mut w = words(v);
            let tag = w.next().unwrap_or_default();
            let suite = w.next().unwrap_or_default();
            return format!("a=crypto:{tag} {suite} <redacted>");
        }
        if n.eq_ignore_ascii_case("key-mgmt") {
            return "a=key-mgmt:<redacted>".into();
        }
    }
    if value_of(line, b'k').is_some() {
        return "k=<redacted>".into();
    }
    line.to_string()
}

/// Checks an `m=` line: `m=<media> <port>[/<count>] <proto> [<fmt> ...]`.
fn check_m_line(line: &str) -> Result<(), &'static str> {
    let mut w = words(line.get(2..).unwrap_or_default());
    w.next().ok_or("no media type")?;
    let port = w.next().ok_or("no port")?;
    let (p, n) = match port.split_once('/') {
        Some((p, n)) => (p, Some(n)),
        None => (port, None),
    };
    parse_u16(p).ok_or("the port is not a number 0 to 65535")?;
    if let Some(n) = n {
        parse_u16(n).ok_or("the port count is not a number 0 to 65535")?;
    }
    w.next().ok_or("no transport protocol")?;
    Ok(())
}

fn parse_u16(s: &str) -> Option<u16> {
    if s.is_empty() || s.len() > 5 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

// ---------------------------------------------------------------- Sdp

impl Sdp {
    /// Parses an SDP. See the crate documentation for what is tolerated.
    pub fn parse(text: &str) -> Result<Sdp, SdpError> {
        if text.len() > MAX_SDP_LEN {
            return Err(SdpError::TooLarge(text.len()));
        }
        let mut session: Vec<String> = Vec::new();
        let mut media: Vec<Media> = Vec::new();
        let mut count = 0usize;
        for (i, raw) in text.split('\n').enumerate() {
            let lineno = i + 1;
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            if line.trim().is_empty() {
                continue;
            }
            count += 1;
            if count > MAX_LINES {
                return Err(SdpError::TooManyLines);
            }
            let b = line.as_bytes();
            if !b.first().is_some_and(u8::is_ascii_alphabetic) || b.get(1) != Some(&b'=') {
                return Err(SdpError::BadLine { line: lineno, reason: "not of the form x=value" });
            }
            if line.contains(['\r', '\0']) {
                return Err(SdpError::BadLine { line: lineno, reason: "CR or NUL inside the line" });
            }
            if count == 1 && b.first() != Some(&b'v') {
                return Err(SdpError::NoVersion(lineno));
            }
            if b.first() == Some(&b'm') {
                check_m_line(line).map_err(|reason| SdpError::BadMedia { line: lineno, reason })?;
                if media.len() == MAX_MEDIA {
                    return Err(SdpError::TooManyMedia);
                }
                media.push(Media { lines: vec![line.to_string()] });
            } else if let Some(m) = media.last_mut() {
                m.lines.push(line.to_string());
            } else {
                session.push(line.to_string());
            }
        }
        if count == 0 {
            return Err(SdpError::Empty);
        }
        for (i, m) in media.iter().enumerate() {
            if m.attrs("crypto").count() > MAX_CRYPTO {
                return Err(SdpError::TooManyCrypto(i + 1));
            }
        }
        Ok(Sdp { session, media })
    }

    /// The session-level lines (before the first `m=`), without line ends.
    pub fn session_lines(&self) -> &[String] {
        &self.session
    }

    /// Every line, session then media, without line ends.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        self.session.iter().chain(self.media.iter().flat_map(|m| m.lines.iter())).map(String::as_str)
    }

    /// The session-level `c=` address (`/ttl` ignored); None if absent or
    /// not an IPv4/IPv6 literal.
    pub fn connection(&self) -> Option<IpAddr> {
        connection_of(&self.session)
    }

    /// Sets the session-level `c=`: replaces the first one (removing any
    /// further session-level `c=`), or inserts one after the session's
    /// `v= o= s= i= u= e= p=` lines. Media-level `c=` lines are not touched:
    /// see [`Sdp::set_all_connections`].
    pub fn set_connection(&mut self, addr: IpAddr) {
        if replace_connection(&mut self.session, addr) {
            return;
        }
        let at = self.session.iter().rposition(|l| b"vosiuep".contains(&line_type(l))).map_or(0, |i| i + 1);
        let at = at.min(self.session.len());
        self.session.insert(at, format!("c={}", addr_fields(addr)));
    }

    /// Points every connection at `addr`: each media-level `c=` is replaced;
    /// the session-level `c=` is replaced if present, or inserted if some
    /// media section has no `c=` of its own (or there is no media section).
    pub fn set_all_connections(&mut self, addr: IpAddr) {
        let mut uncovered = self.media.is_empty();
        for m in &mut self.media {
            if !replace_connection(&mut m.lines, addr) {
                uncovered = true;
            }
        }
        if uncovered || self.session.iter().any(|l| value_of(l, b'c').is_some()) {
            self.set_connection(addr);
        }
    }

    /// The address in effect for media section `idx`: its own `c=`, else
    /// the session's. A media `c=` that does not parse (FQDN) gives None,
    /// not the session address.
    pub fn media_connection(&self, idx: usize) -> Option<IpAddr> {
        let m = self.media.get(idx)?;
        if m.lines.iter().any(|l| value_of(l, b'c').is_some()) {
            m.connection()
        } else {
            self.connection()
        }
    }

    fn origin_line(&self) -> Option<usize> {
        self.session.iter().position(|l| value_of(l, b'o').is_some())
    }

    /// The address of the `o=` line (if an IPv4/IPv6 literal).
    pub fn origin_address(&self) -> Option<IpAddr> {
        let v = value_of(self.session.get(self.origin_line()?)?, b'o')?;
        let w: Vec<&str> = words(v).collect();
        let rest = w.get(w.len().checked_sub(3)?..)?;
        parse_addr_fields(rest.iter().copied())
    }

    /// Sets nettype/addrtype/address of `o=`, keeping username, sess-id and
    /// sess-version. No-op without an `o=` line of at least 6 fields.
    pub fn set_origin_address(&mut self, addr: IpAddr) {
        let Some(i) = self.origin_line() else {
            return;
        };
        let Some(line) = self.session.get_mut(i) else {
            return;
        };
        let t = tokens(line.get(2..).unwrap_or_default());
        if t.len() < 6 {
            return;
        }
        let (Some(&(s, _)), Some(&(_, e))) = (t.get(t.len() - 3), t.last()) else {
            return;
        };
        line.replace_range(s + 2..e + 2, &addr_fields(addr));
    }

    /// Adds one to the `o=` sess-version (saturating). No-op without an `o=`
    /// line of at least 6 fields or with a non-numeric version.
    pub fn bump_version(&mut self) {
        let Some(i) = self.origin_line() else {
            return;
        };
        let Some(line) = self.session.get_mut(i) else {
            return;
        };
        let value = line.get(2..).unwrap_or_default();
        let t = tokens(value);
        if t.len() < 6 {
            return;
        }
        let idx = t.len() - 4;
        let Some(v) = t.get(idx).and_then(|&(s, e)| value.get(s..e)) else {
            return;
        };
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
            return;
        }
        let n = v.parse::<u64>().unwrap_or(u64::MAX).saturating_add(1);
        replace_token(line, idx, &n.to_string());
    }

    /// The media sections.
    pub fn media(&self) -> &[Media] {
        &self.media
    }

    /// The media sections, to rewrite.
    pub fn media_mut(&mut self) -> &mut [Media] {
        &mut self.media
    }

    /// The first session-level `a=name[:value]`: Some("") for a flag.
    pub fn session_attr(&self, name: &str) -> Option<&str> {
        self.session.iter().filter_map(|l| split_attr(l)).find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// Removes the session-level lines `pred` picks (whole lines, as
    /// [`Sdp::session_lines`] gives them).
    pub fn remove_session_lines(&mut self, mut pred: impl FnMut(&str) -> bool) {
        remove_lines(&mut self.session, |_, l| pred(l));
    }

    /// Removes every session-level `a=name` line.
    pub fn remove_session_attrs(&mut self, name: &str) {
        remove_lines(&mut self.session, |_, l| attr_is(l, name));
    }

    /// Appends a session-level `a=name[:value]` after the last session line.
    /// No-op if `name` is empty or either contains CR, LF or NUL.
    pub fn add_session_attr(&mut self, name: &str, value: Option<&str>) {
        if name.is_empty() || !safe_text(name) || !value.into_iter().all(safe_text) {
            return;
        }
        self.session.push(attr_line(name, value));
    }

    /// The session-level direction attribute (the last one), if any.
    pub fn session_direction(&self) -> Option<Direction> {
        self.session.iter().filter_map(|l| split_attr(l)).filter_map(|(n, _)| Direction::from_attr(n)).next_back()
    }

    /// The direction in effect for media section `idx`: its own, else the
    /// session's, else sendrecv (RFC 3264 §5.1).
    pub fn media_direction(&self, idx: usize) -> Direction {
        self.media
            .get(idx)
            .and_then(Media::direction)
            .or_else(|| self.session_direction())
            .unwrap_or(Direction::SendRecv)
    }
}

/// `value`'s `Display` text in a string allocated at its final length: a
/// string that grows frees its earlier blocks as they were, and in an SDP
/// or an `a=crypto` value those hold keys. Measured by a first pass that
/// only counts.
fn exact_text(value: &impl fmt::Display) -> zeroize::Zeroizing<String> {
    struct Count(usize);
    impl fmt::Write for Count {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0 += s.len();
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = fmt::write(&mut count, format_args!("{value}"));
    let mut out = zeroize::Zeroizing::new(String::with_capacity(count.0));
    let _ = fmt::write(&mut *out, format_args!("{value}"));
    out
}

impl Sdp {
    /// The SDP text (as `Display` writes it) in a string that never grew, so
    /// no freed block keeps a copy of its keys, and that is zeroized when
    /// dropped. Take the `String` out (`std::mem::take`) to hand it on
    /// whole, e.g. into an NG reply whose values wipe themselves.
    pub fn text(&self) -> zeroize::Zeroizing<String> {
        exact_text(self)
    }
}

impl fmt::Display for Sdp {
    /// The SDP text, every line ending in CRLF. [`Sdp::text`] builds it
    /// without leaving copies of keys in freed memory.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for l in self.lines() {
            f.write_str(l)?;
            f.write_str("\r\n")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Sdp {
    /// The lines, with key material redacted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sdp")
            .field("session", &self.session.iter().map(|l| redacted(l)).collect::<Vec<_>>())
            .field("media", &self.media)
            .finish()
    }
}

impl core::str::FromStr for Sdp {
    type Err = SdpError;
    fn from_str(s: &str) -> Result<Sdp, SdpError> {
        Sdp::parse(s)
    }
}

impl Drop for Sdp {
    fn drop(&mut self) {
        // a=crypto belongs in media sections, but key material may be anywhere.
        self.session.iter_mut().for_each(Zeroize::zeroize);
    }
}

// ---------------------------------------------------------------- Media

impl Media {
    /// The section's lines, `m=` first, without line ends.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    fn m_value(&self) -> &str {
        self.lines.first().and_then(|l| l.get(2..)).unwrap_or_default()
    }

    fn m_word(&self, i: usize) -> &str {
        words(self.m_value()).nth(i).unwrap_or_default()
    }

    /// Media type: "audio", "video", "image", "application", ...
    pub fn media_type(&self) -> &str {
        self.m_word(0)
    }

    /// The port of the `m=` line (0 for a rejected or disabled stream).
    pub fn port(&self) -> u16 {
        let p = self.m_word(1);
        parse_u16(p.split('/').next().unwrap_or_default()).unwrap_or(0)
    }

    /// The `/count` of `m=audio 5000/2 ...`, if any.
    pub fn port_count(&self) -> Option<u16> {
        self.m_word(1).split_once('/').and_then(|(_, n)| parse_u16(n))
    }

    /// Transport protocol: "RTP/AVP", "RTP/SAVP", "UDP/TLS/RTP/SAVPF", "udptl", ...
    pub fn proto(&self) -> &str {
        self.m_word(2)
    }

    /// The format list (payload types for RTP).
    pub fn formats(&self) -> Vec<&str> {
        words(self.m_value()).skip(3).collect()
    }

    /// True for RTP/AVP, RTP/SAVP, RTP/AVPF, RTP/SAVPF and the DTLS-SRTP
    /// UDP/TLS/RTP/SAVP and UDP/TLS/RTP/SAVPF (any case).
    pub fn is_rtp(&self) -> bool {
        ["RTP/AVP", "RTP/SAVP", "RTP/AVPF", "RTP/SAVPF", "UDP/TLS/RTP/SAVP", "UDP/TLS/RTP/SAVPF"]
            .iter()
            .any(|p| p.eq_ignore_ascii_case(self.proto()))
    }

    /// Sets the port of the `m=` line, dropping any `/count`.
    pub fn set_port(&mut self, port: u16) {
        if let Some(l) = self.lines.first_mut() {
            replace_token(l, 1, &port.to_string());
        }
    }

    /// Sets the transport protocol. No-op if `proto` is empty or contains
    /// whitespace, CR, LF or NUL.
    pub fn set_proto(&mut self, proto: &str) {
        if proto.is_empty() || proto.contains([' ', '\t', '\r', '\n', '\0']) {
            return;
        }
        if let Some(l) = self.lines.first_mut() {
            replace_token(l, 2, proto);
        }
    }

    /// The media-level `c=` address (first one; `/ttl` ignored).
    pub fn connection(&self) -> Option<IpAddr> {
        connection_of(&self.lines)
    }

    /// Replaces the media-level `c=` (removing further ones), or inserts one
    /// after `m=` and any `i=` lines.
    pub fn set_connection(&mut self, addr: IpAddr) {
        if replace_connection(&mut self.lines, addr) {
            return;
        }
        let at = self.lines.iter().rposition(|l| line_type(l) == b'i').map_or(1, |i| i + 1).max(1);
        let at = at.min(self.lines.len());
        self.lines.insert(at, format!("c={}", addr_fields(addr)));
    }

    /// The first `a=name[:value]`: Some("") for a flag attribute.
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.lines.iter().filter_map(|l| split_attr(l)).find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// The values of every `a=name[:value]`, in order.
    pub fn attrs<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.lines
            .iter()
            .filter_map(|l| split_attr(l))
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// True if there is an `a=name` line.
    pub fn has_attr(&self, name: &str) -> bool {
        self.attr(name).is_some()
    }

    /// Removes every `a=name` line.
    pub fn remove_attrs(&mut self, name: &str) {
        remove_lines(&mut self.lines, |_, l| attr_is(l, name));
    }

    /// Appends `a=name[:value]` after the last line of the section. No-op if
    /// `name` is empty or either contains CR, LF or NUL.
    pub fn add_attr(&mut self, name: &str, value: Option<&str>) {
        if name.is_empty() || !safe_text(name) || !value.into_iter().all(safe_text) {
            return;
        }
        self.lines.push(attr_line(name, value));
    }

    /// `a=rtcp:port [IN IP4|IP6 addr]` (RFC 3605): the port, and the address
    /// if present and a literal.
    pub fn rtcp(&self) -> Option<(u16, Option<IpAddr>)> {
        let v = self.attr("rtcp")?;
        let mut w = words(v);
        let port = parse_u16(w.next()?)?;
        Some((port, parse_addr_fields(w)))
    }

    /// Replaces the first `a=rtcp` (removing further ones) or appends one.
    pub fn set_rtcp(&mut self, port: u16, addr: Option<IpAddr>) {
        let line = match addr {
            Some(a) => format!("a=rtcp:{port} {}", addr_fields(a)),
            None => format!("a=rtcp:{port}"),
        };
        match self.lines.iter().position(|l| attr_is(l, "rtcp")) {
            Some(i) => {
                if let Some(l) = self.lines.get_mut(i) {
                    *l = line;
                }
                remove_lines(&mut self.lines, |j, l| j > i && attr_is(l, "rtcp"));
            }
            None => self.lines.push(line),
        }
    }

    /// `a=rtcp-mux` is present (RFC 5761).
    pub fn rtcp_mux(&self) -> bool {
        self.has_attr("rtcp-mux")
    }

    /// The media-level direction attribute (the last one), if any.
    pub fn direction(&self) -> Option<Direction> {
        self.lines.iter().filter_map(|l| split_attr(l)).filter_map(|(n, _)| Direction::from_attr(n)).next_back()
    }

    /// Replaces every direction attribute with one `a=<dir>`, at the place of
    /// the first one (or appended).
    pub fn set_direction(&mut self, dir: Direction) {
        let is_dir = |l: &str| split_attr(l).is_some_and(|(n, _)| Direction::from_attr(n).is_some());
        let at = self.lines.iter().position(|l| is_dir(l));
        remove_lines(&mut self.lines, |_, l| is_dir(l));
        let line = format!("a={}", dir.as_str());
        match at {
            Some(i) => self.lines.insert(i.min(self.lines.len()), line),
            None => self.lines.push(line),
        }
    }

    /// Every `a=crypto` line parsed, in order; a line with an unknown suite
    /// or a malformed one is an `Err` of its own.
    pub fn crypto(&self) -> Vec<Result<crypto::CryptoAttr, crypto::CryptoError>> {
        self.attrs("crypto").map(crypto::CryptoAttr::parse).collect()
    }

    /// Removes every `a=crypto` line.
    pub fn remove_crypto(&mut self) {
        self.remove_attrs("crypto");
    }

    /// Appends `a=crypto:<attr>` after the last line of the section. (More
    /// than [`MAX_CRYPTO`] would make the SDP refused by [`Sdp::parse`].)
    pub fn add_crypto(&mut self, c: &crypto::CryptoAttr) {
        // Built at its final size (`exact_text`): the key must not be left
        // behind in a block freed as the line grows.
        let mut line = exact_text(&format_args!("a=crypto:{c}"));
        if safe_text(line.get("a=crypto:".len()..).unwrap_or_default()) {
            self.lines.push(std::mem::take(&mut *line));
        }
    }

    /// Removes the ICE attributes: ice-ufrag, ice-pwd, ice-options,
    /// candidate, remote-candidates, end-of-candidates, ice-lite,
    /// ice-mismatch.
    pub fn remove_ice(&mut self) {
        const ICE: [&str; 8] = [
            "ice-ufrag",
            "ice-pwd",
            "ice-options",
            "candidate",
            "remote-candidates",
            "end-of-candidates",
            "ice-lite",
            "ice-mismatch",
        ];
        remove_lines(&mut self.lines, |_, l| {
            split_attr(l).is_some_and(|(n, _)| ICE.iter().any(|x| x.eq_ignore_ascii_case(n)))
        });
    }
}

impl fmt::Debug for Media {
    /// The lines, with key material redacted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Media").field("lines", &self.lines.iter().map(|l| redacted(l)).collect::<Vec<_>>()).finish()
    }
}

impl Drop for Media {
    fn drop(&mut self) {
        // The a=crypto lines hold keys.
        self.lines.iter_mut().for_each(Zeroize::zeroize);
    }
}

#[cfg(test)]
mod tests;
