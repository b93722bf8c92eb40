//! RTP payload formats of an m-line: the payload types with what their
//! `a=rtpmap` and `a=fmtp` lines say (or RFC 3551's static table), read and
//! written as one list so that codec negotiation can reorder, remove and
//! add formats without touching the rest of the section.

use crate::{split_attr, words, Media};
use std::fmt;

/// One payload format of an m-line (serialized for the calls kept in
/// Redis).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Format {
    /// RTP payload type.
    pub pt: u8,
    /// Encoding name as written (`PCMU`, `opus`, `telephone-event`); empty
    /// for a dynamic type without `a=rtpmap`.
    pub name: String,
    /// RTP clock rate, Hz (0 when unknown).
    pub clock_rate: u32,
    /// Channels (1 unless the rtpmap says otherwise).
    pub channels: u32,
    /// The `a=fmtp` parameters, if any.
    pub fmtp: Option<String>,
    /// Other attributes bound to this payload type, as (name, value after
    /// the payload type): `("rtcp-fb", "nack")`.
    pub extra: Vec<(String, String)>,
}

/// RFC 3551 §6 static payload types: name, clock rate, channels.
const STATIC: &[(u8, &str, u32, u32)] = &[
    (0, "PCMU", 8000, 1),
    (3, "GSM", 8000, 1),
    (4, "G723", 8000, 1),
    (5, "DVI4", 8000, 1),
    (6, "DVI4", 16000, 1),
    (7, "LPC", 8000, 1),
    (8, "PCMA", 8000, 1),
    (9, "G722", 8000, 1),
    (10, "L16", 44100, 2),
    (11, "L16", 44100, 1),
    (12, "QCELP", 8000, 1),
    (13, "CN", 8000, 1),
    (14, "MPA", 90000, 1),
    (15, "G728", 8000, 1),
    (16, "DVI4", 11025, 1),
    (17, "DVI4", 22050, 1),
    (18, "G729", 8000, 1),
    (25, "CelB", 90000, 1),
    (26, "JPEG", 90000, 1),
    (28, "nv", 90000, 1),
    (31, "H261", 90000, 1),
    (32, "MPV", 90000, 1),
    (33, "MP2T", 90000, 1),
    (34, "H263", 90000, 1),
];

impl Format {
    /// A format of RFC 3551's static table, or `None`.
    pub fn from_static(pt: u8) -> Option<Format> {
        STATIC.iter().find(|s| s.0 == pt).map(|&(pt, name, clock_rate, channels)| Format {
            pt,
            name: name.to_string(),
            clock_rate,
            channels,
            fmtp: None,
            extra: Vec::new(),
        })
    }

    /// The payload type RFC 3551 gives this codec, if any.
    pub fn static_pt(name: &str, clock_rate: u32, channels: u32) -> Option<u8> {
        STATIC.iter().find(|s| s.1.eq_ignore_ascii_case(name) && s.2 == clock_rate && s.3 == channels).map(|s| s.0)
    }

    /// RFC 4733 events (`telephone-event`).
    pub fn is_dtmf(&self) -> bool {
        self.name.eq_ignore_ascii_case("telephone-event")
    }

    /// Comfort noise (RFC 3389).
    pub fn is_cn(&self) -> bool {
        self.name.eq_ignore_ascii_case("CN")
    }

    /// Audio content (neither events nor comfort noise).
    pub fn is_codec(&self) -> bool {
        !self.is_dtmf() && !self.is_cn() && !self.name.is_empty()
    }

    /// Same codec: name (case-insensitive), clock rate and channels.
    pub fn same_codec(&self, other: &Format) -> bool {
        self.name.eq_ignore_ascii_case(&other.name)
            && self.clock_rate == other.clock_rate
            && self.channels == other.channels
    }

    /// The `a=rtpmap` value: `<pt> <name>/<clock>[/<channels>]`.
    pub fn rtpmap(&self) -> String {
        if self.channels > 1 {
            format!("{} {}/{}/{}", self.pt, self.name, self.clock_rate, self.channels)
        } else {
            format!("{} {}/{}", self.pt, self.name, self.clock_rate)
        }
    }
}

impl fmt::Display for Format {
    /// `name/clock[/channels]`, as rtpengine's codec options write it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.channels > 1 {
            write!(f, "{}/{}/{}", self.name, self.clock_rate, self.channels)
        } else {
            write!(f, "{}/{}", self.name, self.clock_rate)
        }
    }
}

/// `<pt> <rest>` of an attribute value bound to a payload type.
fn pt_of(value: &str) -> Option<(u8, &str)> {
    let (pt, rest) = value.split_once([' ', '\t']).unwrap_or((value, ""));
    Some((pt.trim().parse().ok()?, rest.trim()))
}

/// `name/clock[/channels]` of an rtpmap.
fn parse_rtpmap(s: &str) -> Option<(String, u32, u32)> {
    let mut it = s.split('/');
    let name = it.next()?.trim();
    let clock = it.next()?.trim().parse().ok()?;
    let channels = match it.next() {
        Some(c) => c.trim().parse().ok().filter(|&c| c > 0)?,
        None => 1,
    };
    if name.is_empty() || it.next().is_some() {
        return None;
    }
    Some((name.to_string(), clock, channels))
}

/// Attributes that belong to one payload type and move with it.
fn bound_to_pt(name: &str) -> bool {
    ["rtpmap", "fmtp", "rtcp-fb"].iter().any(|n| n.eq_ignore_ascii_case(name))
}

impl Media {
    /// The payload formats of an RTP m-line, in m-line order. Tokens that
    /// are not payload types (0–127) are left out.
    pub fn payload_formats(&self) -> Vec<Format> {
        let mut out: Vec<Format> = Vec::new();
        for tok in self.formats() {
            let Ok(pt) = tok.parse::<u8>() else { continue };
            if pt > 127 || out.iter().any(|f| f.pt == pt) {
                continue;
            }
            out.push(Format::from_static(pt).unwrap_or(Format {
                pt,
                name: String::new(),
                clock_rate: 0,
                channels: 1,
                fmtp: None,
                extra: Vec::new(),
            }));
        }
        for line in &self.lines {
            let Some((name, value)) = split_attr(line) else { continue };
            if !bound_to_pt(name) {
                continue;
            }
            let Some((pt, rest)) = pt_of(value) else { continue };
            let Some(f) = out.iter_mut().find(|f| f.pt == pt) else { continue };
            if name.eq_ignore_ascii_case("rtpmap") {
                if let Some((n, c, ch)) = parse_rtpmap(rest) {
                    (f.name, f.clock_rate, f.channels) = (n, c, ch);
                }
            } else if name.eq_ignore_ascii_case("fmtp") {
                if f.fmtp.is_none() && !rest.is_empty() {
                    f.fmtp = Some(rest.to_string());
                }
            } else {
                f.extra.push((name.to_string(), rest.to_string()));
            }
        }
        out
    }

    /// Rewrites the m-line's format list and the `a=rtpmap`, `a=fmtp` and
    /// `a=rtcp-fb` lines to `formats`, in that order (an rtpmap for every
    /// format, static ones too). Lines of other payload types go; the rest
    /// of the section stays. No-op for a format with text that would break
    /// the SDP.
    pub fn set_payload_formats(&mut self, formats: &[Format]) {
        let safe = |s: &str| !s.contains(['\r', '\n', '\0']);
        if !formats.iter().all(|f| {
            safe(&f.name)
                && !f.name.contains([' ', '\t', '/'])
                && f.fmtp.iter().all(|p| safe(p))
                && f.extra.iter().all(|(n, v)| safe(n) && safe(v) && !n.contains(':'))
        }) {
            return;
        }
        let Some(m) = self.lines.first() else { return };
        let head: Vec<&str> = words(m.get(2..).unwrap_or_default()).take(3).collect();
        let mut mline = format!("m={}", head.join(" "));
        for f in formats {
            mline.push_str(&format!(" {}", f.pt));
        }
        let is_bound = |l: &str| split_attr(l).is_some_and(|(n, v)| bound_to_pt(n) && !v.starts_with('*'));
        let at = self.lines.iter().position(|l| is_bound(l));
        self.lines.retain(|l| !is_bound(l));
        self.lines[0] = mline;
        // Where the first bound line was, else after m=, i=, c= and b=.
        let at = at.unwrap_or_else(|| self.lines.iter().position(|l| l.starts_with("a=")).unwrap_or(self.lines.len()));
        let mut new: Vec<String> = Vec::new();
        for f in formats {
            if !f.name.is_empty() {
                new.push(format!("a=rtpmap:{}", f.rtpmap()));
            }
            if let Some(p) = &f.fmtp {
                new.push(format!("a=fmtp:{} {p}", f.pt));
            }
            for (n, v) in &f.extra {
                new.push(format!("a={n}:{} {v}", f.pt));
            }
        }
        let at = at.min(self.lines.len());
        self.lines.splice(at..at, new);
    }

    /// `a=ptime` in milliseconds.
    pub fn ptime(&self) -> Option<u32> {
        self.attr("ptime").and_then(|v| v.trim().parse().ok())
    }

    /// Replaces `a=ptime` (or removes it with `None`).
    pub fn set_ptime(&mut self, ms: Option<u32>) {
        self.remove_attrs("ptime");
        if let Some(ms) = ms {
            self.add_attr("ptime", Some(&ms.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sdp;

    const OFFER: &str = "v=0\r\no=- 1 1 IN IP4 192.0.2.1\r\ns=-\r\nc=IN IP4 192.0.2.1\r\nt=0 0\r\n\
        m=audio 4000 RTP/SAVP 96 0 8 101\r\na=rtpmap:96 opus/48000/2\r\na=fmtp:96 useinbandfec=1\r\n\
        a=rtcp-fb:96 nack\r\na=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\na=ptime:20\r\na=sendrecv\r\n";

    #[test]
    fn formats_read_from_rtpmap_fmtp_and_the_static_table() {
        let sdp = Sdp::parse(OFFER).unwrap();
        let f = sdp.media()[0].payload_formats();
        assert_eq!(f.len(), 4);
        assert_eq!((f[0].pt, f[0].name.as_str(), f[0].clock_rate, f[0].channels), (96, "opus", 48000, 2));
        assert_eq!(f[0].fmtp.as_deref(), Some("useinbandfec=1"));
        assert_eq!(f[0].extra, vec![("rtcp-fb".to_string(), "nack".to_string())]);
        assert_eq!((f[1].name.as_str(), f[1].clock_rate), ("PCMU", 8000));
        assert_eq!(f[2].name, "PCMA");
        assert!(f[3].is_dtmf() && !f[3].is_codec());
        assert_eq!(f[3].fmtp.as_deref(), Some("0-16"));
        assert_eq!(sdp.media()[0].ptime(), Some(20));
    }

    #[test]
    fn rewriting_formats_reorders_and_drops_their_lines() {
        let mut sdp = Sdp::parse(OFFER).unwrap();
        let f = sdp.media()[0].payload_formats();
        let m = &mut sdp.media_mut()[0];
        m.set_payload_formats(&[f[2].clone(), f[0].clone(), f[3].clone()]);
        m.set_ptime(Some(40));
        let text = sdp.to_string();
        assert!(text.contains("m=audio 4000 RTP/SAVP 8 96 101\r\n"), "{text}");
        assert!(text.contains(
            "a=rtpmap:8 PCMA/8000\r\na=rtpmap:96 opus/48000/2\r\na=fmtp:96 useinbandfec=1\r\na=rtcp-fb:96 nack\r\n\
             a=rtpmap:101 telephone-event/8000\r\na=fmtp:101 0-16\r\n"
        ));
        assert!(!text.contains("PCMU") && text.contains("a=ptime:40") && !text.contains("a=ptime:20"));
        assert!(text.contains("a=sendrecv"));
        // What was written reads back the same.
        let again = Sdp::parse(&text).unwrap();
        assert_eq!(again.media()[0].payload_formats(), vec![f[2].clone(), f[0].clone(), f[3].clone()]);
    }

    #[test]
    fn unsafe_text_changes_nothing() {
        let mut sdp = Sdp::parse(OFFER).unwrap();
        let before = sdp.to_string();
        let mut f = sdp.media()[0].payload_formats();
        f[0].fmtp = Some("x\r\na=evil".into());
        sdp.media_mut()[0].set_payload_formats(&f);
        assert_eq!(sdp.to_string(), before);
    }

    #[test]
    fn static_table() {
        assert_eq!(Format::static_pt("pcma", 8000, 1), Some(8));
        assert_eq!(Format::static_pt("opus", 48000, 2), None);
        assert_eq!(Format::from_static(9).unwrap().to_string(), "G722/8000");
    }
}
