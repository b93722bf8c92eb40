//! WebRTC legs in the call table: what a side's SDP says of ICE and DTLS,
//! what the relay writes into the SDP it sends to that side, and the
//! running association of each ICE/DTLS side (`WebLeg`), driven by the
//! datagrams the media workers hand over ([`Signal`]) and by a timer.
//!
//! ICE is ICE-lite (RFC 8445 §2.5): the relay answers the peer's checks on
//! its one host candidate and sends media to the address of the check the
//! peer nominated (or its first valid one). DTLS-SRTP (RFC 5763/5764) runs
//! per leg in the role the offer/answer gave; its keys reach the worker in
//! a `Keys` command, media to and from the leg is dropped until then.

use srtpgate_sdp::{Media, Sdp};
use srtpgate_webrtc::dtls::{DtlsLeg, Fingerprint, Identity, Setup, SrtpKeys};
use srtpgate_webrtc::ice::{host_candidate, valid_credential, IceCreds};
use srtpgate_webrtc::stun;
use std::net::SocketAddr;
use std::time::Instant;

/// Counters of the WebRTC legs.
#[derive(Default, Debug, Clone)]
pub struct WebTotals {
    /// STUN Binding requests answered with success.
    pub stun_checks: u64,
    /// STUN requests refused (bad credentials or integrity: answered with
    /// an error when the request deserves one).
    pub stun_refused: u64,
    /// Datagrams that were neither a check nor DTLS of a known leg.
    pub signals_ignored: u64,
    /// DTLS handshakes started, completed and failed.
    pub dtls_started: u64,
    /// See `dtls_started`.
    pub dtls_completed: u64,
    /// See `dtls_started`.
    pub dtls_failed: u64,
    /// Handshakes whose peer certificate did not match its `a=fingerprint`
    /// (also in `dtls_failed`).
    pub fingerprint_mismatch: u64,
}

/// What a side's SDP said of its transport (one media section).
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

/// What the relay puts into the SDP for a side it runs ICE and/or DTLS with.
pub struct LocalTransport<'a> {
    /// The relay's ICE credentials (ICE-lite), if ICE runs on the side.
    pub ice: Option<&'a IceCreds>,
    /// The relay's fingerprint and `a=setup`, if DTLS runs on the side.
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
/// port, protocol and `c=` point at the relay's side `addr`; `mux`: the
/// side multiplexes RTCP (one ICE component).
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

/// The relay's DTLS role towards a side, from what the side said
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

/// What the relay does with a datagram or a timer of a leg.
#[derive(Default)]
pub struct Actions {
    /// Datagrams to send from the leg's port.
    pub send: Vec<(SocketAddr, Vec<u8>)>,
    /// Media to the leg goes to this address from now on.
    pub latch: Option<SocketAddr>,
    /// The handshake finished: the leg's SRTP keys.
    pub keys: Option<SrtpKeys>,
    /// The association failed just now, and why.
    pub failed: Option<String>,
}

/// The running transport of one ICE/DTLS side.
pub struct WebLeg {
    /// The relay's ICE credentials towards the side (ICE-lite).
    pub ice: Option<IceCreds>,
    /// The DTLS association, once the role is known (at the answer).
    pub dtls: Option<DtlsLeg>,
    /// The relay is the DTLS client and has not sent its ClientHello yet
    /// (it waits for the peer's address, from its first valid check).
    pub start_pending: bool,
    /// The address ICE chose (nominated, else the first valid check).
    pub ice_peer: Option<SocketAddr>,
    /// ICE nominated `ice_peer`.
    pub nominated: bool,
    /// Where DTLS datagrams go (the last address one came from).
    pub dtls_peer: Option<SocketAddr>,
    /// The worker holds keys from a finished handshake.
    pub keyed: bool,
    /// The keys agreed (kept, zeroized on drop, for streams bundled into
    /// this transport after the handshake: they get contexts of their own).
    pub keys: Option<SrtpKeys>,
    /// Why the association failed, if it did (a new offer/answer restarts it).
    pub failed: Option<String>,
}

impl WebLeg {
    /// A side with ICE credentials (or none) and no association yet.
    pub fn new(ice: Option<IceCreds>) -> WebLeg {
        WebLeg {
            ice,
            dtls: None,
            start_pending: false,
            ice_peer: None,
            nominated: false,
            dtls_peer: None,
            keyed: false,
            keys: None,
            failed: None,
        }
    }

    /// Sets up (or keeps) the DTLS association for `expected` in `active`
    /// role: an association with the same fingerprint and role is kept (a
    /// re-INVITE), anything else starts anew. Returns datagrams to send
    /// (a ClientHello when the peer's address is known already).
    pub fn ensure_dtls(
        &mut self,
        id: &Identity,
        expected: Fingerprint,
        active: bool,
        hint: Option<SocketAddr>,
        now: Instant,
        totals: &mut WebTotals,
    ) -> Result<Actions, String> {
        if let Some(d) = &self.dtls {
            if d.expected() == &expected && d.is_active() == active && self.failed.is_none() {
                return Ok(Actions::default());
            }
        }
        let leg = DtlsLeg::new(id, active, expected, self.ice.is_some(), now).map_err(|e| e.to_string())?;
        self.dtls = Some(leg);
        self.failed = None;
        self.start_pending = active;
        totals.dtls_started += 1;
        let mut out = Actions::default();
        if active {
            if let Some(peer) = self.ice_peer.or(self.dtls_peer).or(if self.ice.is_none() { hint } else { None }) {
                self.start(peer, now, totals, &mut out);
            }
        }
        Ok(out)
    }

    fn start(&mut self, peer: SocketAddr, now: Instant, totals: &mut WebTotals, out: &mut Actions) {
        self.start_pending = false;
        self.dtls_peer = Some(peer);
        let r = match self.dtls.as_mut() {
            Some(d) => d.start(now),
            None => return,
        };
        self.apply(r, peer, totals, out);
    }

    fn apply(
        &mut self,
        r: Result<srtpgate_webrtc::dtls::Step, srtpgate_webrtc::dtls::DtlsError>,
        peer: SocketAddr,
        totals: &mut WebTotals,
        out: &mut Actions,
    ) {
        match r {
            Ok(step) => {
                out.send.extend(step.send.into_iter().map(|d| (peer, d)));
                if let Some(k) = step.keys {
                    totals.dtls_completed += 1;
                    out.keys = Some(k);
                    if self.ice.is_none() {
                        // Without ICE the handshake's source is the peer.
                        out.latch = Some(peer);
                    }
                }
            }
            Err(e) => {
                totals.dtls_failed += 1;
                if e == srtpgate_webrtc::dtls::DtlsError::FingerprintMismatch {
                    totals.fingerprint_mismatch += 1;
                }
                self.failed = Some(e.to_string());
                out.failed = Some(e.to_string());
                self.dtls = None;
            }
        }
    }

    /// A STUN or DTLS datagram from `from`.
    pub fn datagram(&mut self, from: SocketAddr, data: &[u8], now: Instant, totals: &mut WebTotals) -> Actions {
        let mut out = Actions::default();
        match srtpgate_webrtc::demux(data) {
            srtpgate_webrtc::Demux::Stun => {
                let Some(ice) = &self.ice else {
                    totals.signals_ignored += 1;
                    return out;
                };
                let mut buf = [0u8; stun::MAX_ANSWER];
                match stun::check_request(data, &ice.ufrag, &ice.pwd) {
                    Ok(check) => {
                        totals.stun_checks += 1;
                        let n = stun::success(&check.txid, from, &ice.pwd, &mut buf);
                        out.send.push((from, buf[..n].to_vec()));
                        // Media follows the nominated pair; before any
                        // nomination, the first valid check.
                        if (check.use_candidate && (!self.nominated || self.ice_peer != Some(from)))
                            || self.ice_peer.is_none()
                        {
                            self.nominated |= check.use_candidate;
                            self.ice_peer = Some(from);
                            out.latch = Some(from);
                        }
                        if self.start_pending {
                            self.start(from, now, totals, &mut out);
                        }
                    }
                    Err(e) => {
                        totals.stun_refused += 1;
                        if let (Some((code, reason)), Ok((_, txid))) = (e.answer_code(), stun::header(data)) {
                            let n = stun::error(&txid, code, reason, &mut buf);
                            out.send.push((from, buf[..n].to_vec()));
                        }
                    }
                }
            }
            srtpgate_webrtc::Demux::Dtls => {
                let Some(d) = self.dtls.as_mut() else {
                    totals.signals_ignored += 1;
                    return out;
                };
                // With ICE, DTLS comes from an address that passed a check.
                if self.ice.is_some() && self.ice_peer.is_none() {
                    totals.signals_ignored += 1;
                    return out;
                }
                self.start_pending = false;
                self.dtls_peer = Some(from);
                let r = d.handle(data, now);
                self.apply(r, from, totals, &mut out);
            }
            _ => totals.signals_ignored += 1,
        }
        out
    }

    /// Retransmissions due by `now`.
    pub fn tick(&mut self, now: Instant, totals: &mut WebTotals) -> Actions {
        let mut out = Actions::default();
        let (Some(d), Some(peer)) = (self.dtls.as_mut(), self.dtls_peer) else { return out };
        if d.next_timeout().is_some_and(|t| t <= now) {
            let r = d.timeout(now);
            self.apply(r, peer, totals, &mut out);
        }
        out
    }

    /// Whether the leg has a handshake in progress (for the timer).
    pub fn in_handshake(&self) -> bool {
        self.dtls.as_ref().is_some_and(|d| !d.is_connected()) && self.dtls_peer.is_some()
    }

    /// A line for logs and the `query` reply.
    pub fn state(&self) -> &'static str {
        match (&self.dtls, &self.failed, self.keyed) {
            (_, Some(_), _) => "failed",
            (_, _, true) => "connected",
            (Some(_), _, _) if self.dtls_peer.is_some() => "handshake",
            (Some(_), _, _) => "waiting",
            (None, _, _) if self.ice_peer.is_some() => "ice-connected",
            (None, _, _) => "ice-waiting",
        }
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

    #[test]
    fn checks_are_answered_and_choose_the_media_peer() {
        let ice = IceCreds::generate();
        let mut leg = WebLeg::new(Some(ice.clone()));
        let mut totals = WebTotals::default();
        let mut req = [0u8; stun::MAX_ANSWER];
        let check = |nominate: bool, req: &mut [u8; stun::MAX_ANSWER]| {
            stun::request(&[1; 12], &format!("{}:peer", ice.ufrag), &ice.pwd, 1, nominate, req)
        };
        let (a, b): (SocketAddr, SocketAddr) = ("198.18.0.5:4000".parse().unwrap(), "198.18.0.6:4000".parse().unwrap());
        let n = check(false, &mut req);
        let act = leg.datagram(a, &req[..n], Instant::now(), &mut totals);
        assert_eq!(act.latch, Some(a), "the first valid check, before any nomination");
        assert_eq!(stun::parse_response(&act.send[0].1, &ice.pwd), Ok(Ok(a)));
        let act = leg.datagram(b, &req[..n], Instant::now(), &mut totals);
        assert_eq!(act.latch, None, "an unnominated check does not move the media");
        let n = check(true, &mut req);
        let act = leg.datagram(b, &req[..n], Instant::now(), &mut totals);
        assert_eq!(act.latch, Some(b), "the nominated pair");
        assert_eq!((totals.stun_checks, totals.stun_refused), (3, 0));
        // DTLS before the leg has an association, and noise: ignored, counted.
        leg.datagram(b, &[22, 254, 253, 0], Instant::now(), &mut totals);
        leg.datagram(b, &[99], Instant::now(), &mut totals);
        assert_eq!(totals.signals_ignored, 2);
        assert_eq!(leg.state(), "ice-connected");
    }
}
