//! A WebRTC leg's transport as the SDP carries it: what a party's SDP says
//! of ICE, DTLS and BUNDLE ([`PeerTransport`], [`bundle_of`],
//! [`mid_extmap`]), what the relay writes into the SDP it sends to that party
//! ([`write_local`], [`strip_dtls`], [`strip_session`], [`write_bundle`],
//! [`add_mid_extmap`]), and the DTLS role the relay takes ([`relay_active`]).
//! Line-preserving edits on `srtpgate_sdp`'s document; nothing here runs a
//! handshake ([`crate::web_leg`] does).

use srtpgate_sdp::{Media, Sdp};
use srtpgate_webrtc::dtls::{Fingerprint, Setup};
use srtpgate_webrtc::ice::{host_candidate, valid_credential, IceCreds};
use std::net::SocketAddr;

/// What a party's SDP said of its transport (one media section).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerTransport {
    /// `ice-ufrag` and `ice-pwd`.
    pub ice: Option<(String, String)>,
    /// `a=fingerprint` (media level, else session level).
    pub fingerprint: Option<Fingerprint>,
    /// `a=setup`.
    pub setup: Option<Setup>,
    /// `a=mid`.
    pub mid: Option<String>,
}

fn attr(sdp: &Sdp, m: &Media, name: &str) -> Option<String> {
    m.attr(name).or_else(|| sdp.session_attr(name)).map(|v| v.trim().to_string())
}

impl PeerTransport {
    /// Reads media section `i` (media-level attributes first, then the
    /// session's). Malformed values count as absent.
    pub fn read(sdp: &Sdp, i: usize) -> PeerTransport {
        let m = &sdp.media()[i];
        let ice = match (attr(sdp, m, "ice-ufrag"), attr(sdp, m, "ice-pwd")) {
            (Some(u), Some(p)) if valid_credential(&u, 4) && valid_credential(&p, 22) => Some((u, p)),
            _ => None,
        };
        let fingerprint = m
            .attrs("fingerprint")
            .chain(sdp.session_lines().iter().filter_map(|l| l.strip_prefix("a=fingerprint:")))
            .filter_map(Fingerprint::parse)
            .find(|f| f.hash == "sha-256");
        let setup = attr(sdp, m, "setup").and_then(|v| Setup::parse(&v));
        let mid = m.attr("mid").map(|v| v.trim().to_string());
        PeerTransport { ice, fingerprint, setup, mid }
    }
}

/// What the relay puts into the SDP for a leg it runs ICE and/or DTLS with.
pub struct LocalTransport<'a> {
    /// The relay's ICE credentials (ICE-lite), if ICE runs on the leg.
    pub ice: Option<&'a IceCreds>,
    /// The relay's fingerprint and `a=setup`, if DTLS runs on the leg.
    pub dtls: Option<(&'a str, Setup)>,
    /// `a=mid` to add when the section has none (`generate-mid`).
    pub mid: Option<String>,
}

/// Removes what the previous hop said of DTLS from a media section (ICE
/// attributes go in `rewrite_media`).
pub fn strip_dtls(m: &mut Media) {
    m.remove_attrs("bundle-only");
    m.remove_attrs("fingerprint");
    m.remove_attrs("setup");
    m.remove_attrs("tls-id");
}

/// Session-level attributes of DTLS and BUNDLE that no longer hold once the
/// relay terminates each leg's transport (the relay writes its own BUNDLE
/// group where it bundles).
pub fn strip_session(sdp: &mut Sdp) {
    for a in ["fingerprint", "setup", "tls-id"] {
        sdp.remove_session_attrs(a);
    }
    sdp.remove_session_lines(|l| bundle_group(l).is_some());
}

/// The mids of an `a=group:BUNDLE` line.
fn bundle_group(line: &str) -> Option<Vec<&str>> {
    let rest = line.strip_prefix("a=group:")?;
    let mut words = rest.split_ascii_whitespace();
    words.next().filter(|s| s.eq_ignore_ascii_case("BUNDLE"))?;
    Some(words.collect())
}

/// The BUNDLE groups of an SDP (RFC 8843) as media-section indexes: for
/// each media section, the section whose transport it shares (itself for
/// the group's owner, the first section of the group's mid list that has a
/// port: the offerer-tagged one), or `None` when it is in no group. A
/// section with port 0 is in the group only when it says `a=bundle-only`.
pub fn bundle_of(sdp: &Sdp) -> Vec<Option<usize>> {
    let media = sdp.media();
    let mut out = vec![None; media.len()];
    for line in sdp.session_lines() {
        let Some(mids) = bundle_group(line) else { continue };
        let index = |mid: &str| media.iter().position(|m| m.attr("mid").map(str::trim) == Some(mid));
        let Some(owner) = mids.iter().filter_map(|m| index(m)).find(|&i| media[i].port() != 0) else { continue };
        for i in mids.iter().filter_map(|m| index(m)) {
            if out[i].is_none() && (media[i].port() != 0 || media[i].has_attr("bundle-only")) {
                out[i] = Some(owner);
            }
        }
    }
    out
}

/// The RTP header extension that carries an m-line's mid (RFC 8843 §15).
pub const MID_URI: &str = "urn:ietf:params:rtp-hdrext:sdes:mid";

/// The `a=extmap` id an m-line gives the mid extension, if one in the
/// one-byte range (1–14).
pub fn mid_extmap(m: &Media) -> Option<u8> {
    m.attrs("extmap").find_map(|v| {
        let mut w = v.split_ascii_whitespace();
        let id = w.next()?.split('/').next()?.parse::<u8>().ok()?;
        (w.next()? == MID_URI && (1..=14).contains(&id)).then_some(id)
    })
}

/// Adds `a=extmap:ID` for the mid extension to an m-line: `want` if it is
/// free there, else the lowest free one-byte id; returns the id (`None`:
/// all 14 are taken).
pub fn add_mid_extmap(m: &mut Media, want: Option<u8>) -> Option<u8> {
    if let Some(id) = mid_extmap(m) {
        return Some(id);
    }
    let used: Vec<u8> = m.attrs("extmap").filter_map(|v| v.split(['/', ' ']).next()?.parse().ok()).collect();
    let id = want.filter(|w| !used.contains(w)).or_else(|| (1..=14).find(|i| !used.contains(i)))?;
    m.add_attr("extmap", Some(&format!("{id} {MID_URI}")));
    Some(id)
}

/// Writes `a=group:BUNDLE` with the given mids (none: nothing).
pub fn write_bundle(sdp: &mut Sdp, mids: &[String]) {
    if !mids.is_empty() {
        sdp.add_session_attr("group", Some(&format!("BUNDLE {}", mids.join(" "))));
    }
}

/// Writes the relay's transport attributes into a media section whose
/// port, protocol and `c=` point at the relay's leg `addr`; `mux`: the
/// party multiplexes RTCP (one ICE component).
pub fn write_local(m: &mut Media, t: &LocalTransport<'_>, addr: SocketAddr, mux: bool) {
    if let Some(mid) = &t.mid {
        if !m.has_attr("mid") {
            m.add_attr("mid", Some(mid));
        }
    }
    if let Some(ice) = t.ice {
        m.add_attr("ice-ufrag", Some(&ice.ufrag));
        m.add_attr("ice-pwd", Some(&ice.pwd));
        m.add_attr("candidate", Some(&host_candidate(1, 1, addr)));
        if !mux {
            let rtcp = SocketAddr::new(addr.ip(), addr.port().wrapping_add(1));
            m.add_attr("candidate", Some(&host_candidate(1, 2, rtcp)));
        }
        m.add_attr("end-of-candidates", None);
    }
    if let Some((fp, setup)) = t.dtls {
        m.add_attr("fingerprint", Some(fp));
        m.add_attr("setup", Some(setup.as_str()));
    }
}

/// The relay's DTLS role towards a leg, from what the leg said
/// (`a=setup` of its offer or answer) and the `DTLS` option: returns
/// whether the relay is the client (active).
pub fn relay_active(peer: Option<Setup>, option: Option<srtpgate_ng::Dtls>) -> bool {
    match peer {
        Some(Setup::Active) => false,
        Some(Setup::Passive) => true,
        // actpass (or nothing): the relay chooses; passive unless told, so
        // that it never sends a ClientHello before the peer can hear it.
        _ => option == Some(srtpgate_ng::Dtls::Active),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use srtpgate_ng::Dtls;

    const FP: &str =
        "sha-256 0A:0B:0C:0D:0E:0F:10:11:12:13:14:15:16:17:18:19:1A:1B:1C:1D:1E:1F:20:21:22:23:24:25:26:27:28:29";

    fn sdp(session: &str, media: &str) -> Sdp {
        let text = format!(
            "v=0\r\no=- 1 1 IN IP4 198.18.0.9\r\ns=-\r\nt=0 0\r\n{session}m=audio 5000 UDP/TLS/RTP/SAVPF 0\r\n\
             c=IN IP4 198.18.0.9\r\n{media}a=rtpmap:0 PCMU/8000\r\n"
        );
        Sdp::parse(&text).expect("sdp")
    }

    #[test]
    fn bundle_groups_name_their_owner_and_members() {
        let m = |kind: &str, port: u16, mid: &str, extra: &str| {
            format!("m={kind} {port} UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 198.18.0.9\r\na=mid:{mid}\r\n{extra}")
        };
        let text = |group: &str, media: &[String]| {
            format!("v=0\r\no=- 1 1 IN IP4 198.18.0.9\r\ns=-\r\nt=0 0\r\n{group}{}", media.concat())
        };
        // The owner is the first mid of the group with a port, not the
        // first m-line; a bundle-only section with port 0 is a member, a
        // rejected one (port 0, not bundle-only) and one outside the group
        // are not.
        let s = Sdp::parse(&text(
            "a=group:BUNDLE v a x\r\n",
            &[
                m("audio", 5000, "a", ""),
                m("video", 0, "v", "a=bundle-only\r\n"),
                m("video", 0, "x", ""),
                m("audio", 6000, "solo", ""),
            ],
        ))
        .unwrap();
        assert_eq!(bundle_of(&s), vec![Some(0), Some(0), None, None]);
        // A group whose mids have no port at all, and mids that name no
        // section, bundle nothing.
        let s = Sdp::parse(&text("a=group:BUNDLE q r\r\na=group:LS a\r\n", &[m("audio", 0, "q", "")])).unwrap();
        assert_eq!(bundle_of(&s), vec![None]);
        // Towards another hop BUNDLE groups go, other groups stay.
        let mut s = Sdp::parse(&text("a=group:BUNDLE a\r\na=group:LS a\r\n", &[m("audio", 5000, "a", "")])).unwrap();
        strip_session(&mut s);
        assert_eq!(s.session_attr("group"), Some("LS a"));
        write_bundle(&mut s, &["a".into()]);
        assert!(s.to_string().contains("a=group:BUNDLE a\r\n"));
        // The mid extension: read (one-byte ids only), added on a free id.
        let mut s = Sdp::parse(&text(
            "",
            &[
                m("audio", 5000, "a", "a=extmap:1 urn:x\r\na=extmap:2/sendonly urn:y\r\n"),
                m("video", 5000, "v", "a=extmap:15 urn:ietf:params:rtp-hdrext:sdes:mid\r\n"),
            ],
        ))
        .unwrap();
        assert_eq!(mid_extmap(&s.media()[0]), None);
        assert_eq!(mid_extmap(&s.media()[1]), None, "id 15 is not a one-byte id");
        assert_eq!(add_mid_extmap(&mut s.media_mut()[0], Some(2)), Some(3), "2 is taken");
        assert_eq!(mid_extmap(&s.media()[0]), Some(3));
        assert_eq!(add_mid_extmap(&mut s.media_mut()[0], Some(9)), Some(3), "already there");
    }

    #[test]
    fn transport_attributes_are_read_at_media_then_session_level() {
        // Firefox puts the fingerprint and ICE credentials at session level.
        let s = sdp(
            &format!("a=fingerprint:{FP}\r\na=ice-ufrag:ffx1\r\na=ice-pwd:0123456789012345678901\r\n"),
            "a=setup:actpass\r\na=mid:audio0\r\n",
        );
        let t = PeerTransport::read(&s, 0);
        assert_eq!(t.ice, Some(("ffx1".into(), "0123456789012345678901".into())));
        assert_eq!(t.fingerprint.as_ref().map(|f| f.digest.len()), Some(32));
        assert_eq!(t.setup, Some(Setup::ActPass));
        assert_eq!(t.mid.as_deref(), Some("audio0"));
        // Media level wins; a short password, another hash and a bad setup
        // count as absent.
        let s = sdp(
            &format!("a=fingerprint:{FP}\r\n"),
            "a=fingerprint:sha-1 00:11\r\na=ice-ufrag:u1\r\na=ice-pwd:short\r\na=setup:sideways\r\n",
        );
        let t = PeerTransport::read(&s, 0);
        assert_eq!(t.ice, None);
        assert!(t.fingerprint.is_some(), "the session's sha-256 one is taken over the media's sha-1");
        assert_eq!(t.setup, None);
    }

    #[test]
    fn the_relay_takes_the_role_the_peer_leaves() {
        assert!(!relay_active(Some(Setup::Active), Some(Dtls::Active)), "the peer's active wins");
        assert!(relay_active(Some(Setup::Passive), None));
        assert!(!relay_active(Some(Setup::ActPass), None), "passive by default");
        assert!(!relay_active(None, Some(Dtls::Passive)));
        assert!(relay_active(Some(Setup::ActPass), Some(Dtls::Active)));
    }

    #[test]
    fn local_attributes_name_the_relay() {
        let mut s = sdp("", &format!("a=fingerprint:{FP}\r\na=setup:actpass\r\na=tls-id:x\r\n"));
        let ice = IceCreds::generate();
        let m = &mut s.media_mut()[0];
        strip_dtls(m);
        assert!(m.attr("fingerprint").is_none() && m.attr("setup").is_none() && m.attr("tls-id").is_none());
        let t =
            LocalTransport { ice: Some(&ice), dtls: Some(("sha-256 AA:BB", Setup::Passive)), mid: Some("1".into()) };
        write_local(m, &t, "198.18.0.2:30000".parse().unwrap(), false);
        let cands: Vec<&str> = m.attrs("candidate").collect();
        assert_eq!(
            cands,
            ["1 1 UDP 2130706431 198.18.0.2 30000 typ host", "1 2 UDP 2130706430 198.18.0.2 30001 typ host"]
        );
        assert_eq!(m.attr("ice-ufrag"), Some(ice.ufrag.as_str()));
        assert_eq!(m.attr("setup"), Some("passive"));
        assert_eq!(m.attr("mid"), Some("1"));
        assert!(m.has_attr("end-of-candidates"));
    }
}
