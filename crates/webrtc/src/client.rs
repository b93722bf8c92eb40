//! The browser's end of a WebRTC leg, sans I/O: the client that the load
//! generator (`--webrtc`) and the daemon's tests play against the relay.
//!
//! One [`Client`] is one association with the relay, in the style of
//! quinn-proto or str0m: it owns no socket and reads no clock. The caller
//! writes the browser's SDP with it ([`Client::sdp`]), hands it the relay's
//! SDP ([`Client::learn`]), asks for a nominating ICE check
//! ([`Client::check`]), and then passes every datagram from the relay to
//! [`Client::handle`] and calls [`Client::handle_timeout`] when
//! [`Client::poll_timeout`] is due, sending what [`Client::poll_transmit`]
//! gives and reading [`Client::poll_event`]. An answered check starts the
//! DTLS-SRTP handshake at once, in the role the two `a=setup` attributes
//! leave the browser; it ends in [`Event::Connected`] with the SRTP keys,
//! from which the caller builds its `srtp::Context`s.
//!
//! The browser is the ICE controlling agent with one host candidate and
//! rtcp-mux, as a browser talking to an ICE-lite relay is: it sends the
//! checks, the relay only answers them.

use crate::dtls::{DtlsError, DtlsLeg, Fingerprint, Identity, Setup, SrtpKeys, Step};
use crate::ice::IceCreds;
use crate::stun::{self, StunError};
use crate::{demux, Demux};
use srtpgate_sdp::Sdp;
use std::collections::VecDeque;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long an unanswered check waits before it is sent again, with a fresh
/// transaction ID. Short: on the paths the load generator and the tests use,
/// an answer takes well under a millisecond, and a lost check delays the
/// call by this much.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(200);

/// The PRIORITY a check carries: that of a peer-reflexive candidate of the
/// browser's host (RFC 8445 §7.1.1: type preference 110; local preference
/// 30 and component 1, as Chrome's checks carry).
pub const CHECK_PRIORITY: u32 = 1_845_501_695;

/// How many transaction IDs of one check (its first sending and its
/// retransmissions) are remembered: an answer to an older one is ignored.
const KEPT_TXIDS: usize = 16;

/// Why the client cannot do what was asked. A [`ClientError::Dtls`] ends the
/// association; after the others the state is as it was, and the load
/// generator and the tests stop all the same.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The relay's SDP lacks what the browser needs (which part, in words).
    #[error("the relay's SDP for the browser: {0}")]
    RelaySdp(&'static str),
    /// A check or a handshake was asked for before the relay's SDP was
    /// learnt ([`Client::learn`]).
    #[error("the relay's SDP has not been learnt")]
    NotLearnt,
    /// The relay's `a=setup` and the browser's own leave no DTLS role: the
    /// relay offered `actpass` and the browser wrote no `active` or
    /// `passive` answer, or the relay wrote `holdconn` or nothing.
    #[error("a=setup of the relay ({relay:?}) and of the browser ({local:?}) leave no DTLS role")]
    NoRole {
        /// The relay's `a=setup`, if it had a valid one.
        relay: Option<Setup>,
        /// The browser's, from its last SDP written with [`Client::sdp`].
        local: Option<Setup>,
    },
    /// An answer to one of our checks that does not verify with the
    /// password the check used, or that does not parse. The check stays
    /// under way: a forged answer must not end it.
    #[error("the answer to the ICE check: {0}")]
    Stun(#[from] StunError),
    /// The handshake failed; [`DtlsError::FingerprintMismatch`] when the
    /// relay's certificate is not the one its SDP announced.
    #[error(transparent)]
    Dtls(#[from] DtlsError),
}

/// A datagram for the caller to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    /// Where to: the relay's candidate from its SDP.
    pub destination: SocketAddr,
    /// The datagram.
    pub contents: Vec<u8>,
}

/// What the association did, in the order it happened.
#[derive(Debug)]
pub enum Event {
    /// The relay answered a check with a success that verified with the
    /// check's password: the pair is nominated (the relay now sends to the
    /// browser's address) and the handshake has started.
    IceConnected {
        /// The browser's address as the relay saw it (XOR-MAPPED-ADDRESS).
        mapped: SocketAddr,
    },
    /// The relay refused a check with this error code (401: the
    /// credentials were wrong, 400: missing); the check is not repeated. A
    /// browser would give up here; the tests check that the relay refuses.
    IceRefused {
        /// The STUN error code.
        code: u16,
    },
    /// The handshake finished and the relay's certificate is the one its
    /// SDP announced: the SRTP keys, seen from the browser
    /// ([`SrtpKeys::local_policy`] protects what the browser sends).
    Connected(SrtpKeys),
}

/// One payload type of the browser's audio m-line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Codec {
    /// The payload type.
    pub pt: u8,
    /// The `a=rtpmap` value after the payload type (`PCMU/8000`).
    pub rtpmap: &'static str,
    /// An `a=rtcp-fb` value after the payload type, if the browser offers
    /// one (`transport-cc`).
    pub rtcp_fb: Option<&'static str>,
}

impl Codec {
    /// Opus as Chrome offers it, with transport-wide congestion control
    /// feedback.
    pub const OPUS: Codec = Codec { pt: 111, rtpmap: "opus/48000/2", rtcp_fb: Some("transport-cc") };
    /// G.711 µ-law, the load generator's test payload.
    pub const PCMU: Codec = Codec { pt: 0, rtpmap: "PCMU/8000", rtcp_fb: None };
    /// G.711 A-law.
    pub const PCMA: Codec = Codec { pt: 8, rtpmap: "PCMA/8000", rtcp_fb: None };
}

/// What varies in the browser's SDP: one BUNDLEd audio m-line,
/// `UDP/TLS/RTP/SAVPF` with a host candidate, ICE credentials, a
/// fingerprint, `a=setup`, `mid` 0 and rtcp-mux. The two users differ in
/// their codecs and in how much of what Chrome writes they copy; both are
/// written by [`LocalSdp::write`] so that they cannot drift apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSdp {
    /// The `o=` line's session ID.
    pub session_id: u64,
    /// The host candidate's address, also in `c=` and `o=` (its family
    /// picks `IP4` or `IP6`).
    pub addr: IpAddr,
    /// The host candidate's port, also the m-line's.
    pub port: u16,
    /// `actpass` in an offer; `active` or `passive` in an answer to the
    /// relay's `actpass`, which makes the browser's DTLS role.
    pub setup: Setup,
    /// The m-line's payload types, in order.
    pub codecs: Vec<Codec>,
    /// Also write what Chrome adds that the relay must tolerate:
    /// `a=msid-semantic`, `a=ice-options:trickle`, `generation 0` on the
    /// candidate, and `a=rtcp:9` with the unspecified address instead of
    /// the candidate's.
    pub chrome_extras: bool,
}

impl LocalSdp {
    /// The load generator's offer: PCMU only (the SDES legs' payload),
    /// `actpass`, nothing beyond what the relay needs.
    pub fn minimal(addr: IpAddr, port: u16) -> LocalSdp {
        LocalSdp { session_id: 0, addr, port, setup: Setup::ActPass, codecs: vec![Codec::PCMU], chrome_extras: false }
    }

    /// An audio offer as Chrome writes one: opus, PCMU and PCMA, with
    /// Chrome's extra attributes.
    pub fn chrome(addr: IpAddr, port: u16) -> LocalSdp {
        LocalSdp {
            codecs: vec![Codec::OPUS, Codec::PCMU, Codec::PCMA],
            chrome_extras: true,
            ..LocalSdp::minimal(addr, port)
        }
    }

    /// The SDP text with the browser's ICE credentials (`creds.ufrag`,
    /// `creds.pwd`) and its `a=fingerprint` value, lines ending in CRLF.
    /// [`Client::sdp`] writes it with the client's own and remembers the
    /// `a=setup`; this is for a caller that writes its offer before it has
    /// a client (the load generator makes one per call once the relay has
    /// answered, which fixes the role without the offer's `actpass`).
    pub fn write(&self, creds: &IceCreds, fingerprint: &str) -> String {
        let (ip, port, id) = (self.addr, self.port, self.session_id);
        let (fam, any) = if ip.is_ipv6() { ("IP6", "::") } else { ("IP4", "0.0.0.0") };
        let pts: Vec<String> = self.codecs.iter().map(|c| c.pt.to_string()).collect();
        let x = self.chrome_extras;
        let mut s = String::with_capacity(640);
        // Writing into a String cannot fail.
        let _ = write!(s, "v=0\r\no=- {id} 2 IN {fam} {ip}\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n");
        if x {
            s.push_str("a=msid-semantic: WMS\r\n");
        }
        let _ = write!(s, "m=audio {port} UDP/TLS/RTP/SAVPF {}\r\nc=IN {fam} {ip}\r\n", pts.join(" "));
        let _ = write!(s, "a=rtcp:9 IN {fam} {}\r\n", if x { any.to_string() } else { ip.to_string() });
        let generation = if x { " generation 0" } else { "" };
        let _ = write!(s, "a=candidate:1 1 udp 2122260223 {ip} {port} typ host{generation}\r\n");
        let _ = write!(s, "a=ice-ufrag:{}\r\na=ice-pwd:{}\r\n", creds.ufrag, creds.pwd);
        if x {
            s.push_str("a=ice-options:trickle\r\n");
        }
        let _ = write!(s, "a=fingerprint:{fingerprint}\r\na=setup:{}\r\n", self.setup.as_str());
        s.push_str("a=mid:0\r\na=sendrecv\r\na=rtcp-mux\r\n");
        for c in &self.codecs {
            let _ = write!(s, "a=rtpmap:{} {}\r\n", c.pt, c.rtpmap);
            if let Some(fb) = c.rtcp_fb {
                let _ = write!(s, "a=rtcp-fb:{} {fb}\r\n", c.pt);
            }
        }
        s
    }
}

/// What the relay's SDP for the browser said.
#[derive(Debug, Clone)]
struct Relay {
    addr: SocketAddr,
    fingerprint: Fingerprint,
    setup: Option<Setup>,
}

/// The check under way: its password and the transaction IDs it was sent
/// with.
struct PendingCheck {
    pwd: String,
    txids: VecDeque<[u8; 12]>,
    next: Instant,
}

/// The browser's end of one WebRTC association with the relay (see the
/// module documentation for how a caller drives it).
pub struct Client {
    identity: Arc<Identity>,
    /// The browser's credentials; `remote` holds the relay's once learnt.
    creds: IceCreds,
    announced: Option<String>,
    local_setup: Option<Setup>,
    relay: Option<Relay>,
    check: Option<PendingCheck>,
    dtls: Option<DtlsLeg>,
    connected: bool,
    transmits: VecDeque<Transmit>,
    events: VecDeque<Event>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("creds", &self.creds)
            .field("relay", &self.relay.as_ref().map(|r| r.addr))
            .field("checking", &self.check.is_some())
            .field("dtls", &self.dtls.is_some())
            .field("connected", &self.connected)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client with the browser's certificate (shared: the load generator
    /// uses one for all the calls of a group) and ICE credentials (their
    /// `remote` is ignored: the relay's come from its SDP).
    pub fn new(identity: Arc<Identity>, creds: IceCreds) -> Client {
        Client {
            identity,
            creds: IceCreds { remote: None, ..creds },
            announced: None,
            local_setup: None,
            relay: None,
            check: None,
            dtls: None,
            connected: false,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Puts another `a=fingerprint` value into the browser's SDP than its
    /// certificate's, to play a man in the middle: the relay must refuse
    /// the handshake.
    pub fn announce_fingerprint(&mut self, fingerprint: &str) {
        self.announced = Some(fingerprint.to_string());
    }

    /// The `a=fingerprint` value the browser's SDP carries.
    pub fn fingerprint(&self) -> &str {
        self.announced.as_deref().unwrap_or(self.identity.fingerprint())
    }

    /// The browser's ICE credentials, and the relay's in `remote` once
    /// learnt (for a caller writing more of the SDP, as a BUNDLE group's
    /// further m-lines).
    pub fn creds(&self) -> &IceCreds {
        &self.creds
    }

    /// The browser's SDP ([`LocalSdp::write`] with this client's
    /// credentials and fingerprint). Its `a=setup` is remembered: in an
    /// answer to the relay's `actpass` it is the browser's DTLS role.
    pub fn sdp(&mut self, local: &LocalSdp) -> String {
        self.local_setup = Some(local.setup);
        local.write(&self.creds, self.fingerprint())
    }

    /// Reads the relay's SDP for the browser (offer or answer): its address
    /// (the first m-line's port and connection), ICE credentials,
    /// fingerprint and `a=setup`, each from the first m-line or else the
    /// session level. Learning again replaces them for the checks and the
    /// handshake that follow; a handshake under way goes on.
    pub fn learn(&mut self, sdp: &Sdp) -> Result<(), ClientError> {
        let m = sdp.media().first().ok_or(ClientError::RelaySdp("no m-line"))?;
        let attr = |n: &str| m.attr(n).or_else(|| sdp.session_attr(n)).map(str::trim);
        let ip = sdp.media_connection(0).ok_or(ClientError::RelaySdp("no connection address"))?;
        let (Some(ufrag), Some(pwd)) = (attr("ice-ufrag"), attr("ice-pwd")) else {
            return Err(ClientError::RelaySdp("no ICE credentials"));
        };
        let fingerprint =
            attr("fingerprint").and_then(Fingerprint::parse).ok_or(ClientError::RelaySdp("no a=fingerprint"))?;
        let setup = attr("setup").and_then(Setup::parse);
        self.creds.remote = Some((ufrag.to_string(), pwd.to_string()));
        self.relay = Some(Relay { addr: SocketAddr::new(ip, m.port()), fingerprint, setup });
        Ok(())
    }

    /// The relay's address for the browser, once learnt: where the checks,
    /// the handshake and the media go.
    pub fn relay(&self) -> Option<SocketAddr> {
        self.relay.as_ref().map(|r| r.addr)
    }

    /// The browser's DTLS role, [`Setup::Active`] (it sends the
    /// ClientHello) or [`Setup::Passive`]: the opposite of the relay's
    /// `active` or `passive`, or, where the relay offered `actpass`, what
    /// the browser answered with [`Client::sdp`] (RFC 5763 §5).
    pub fn dtls_role(&self) -> Result<Setup, ClientError> {
        let relay = self.relay.as_ref().ok_or(ClientError::NotLearnt)?;
        match (relay.setup, self.local_setup) {
            (Some(Setup::Active), _) => Ok(Setup::Passive),
            (Some(Setup::Passive), _) => Ok(Setup::Active),
            (Some(Setup::ActPass), Some(s @ (Setup::Active | Setup::Passive))) => Ok(s),
            (relay, local) => Err(ClientError::NoRole { relay, local }),
        }
    }

    /// The handshake finished ([`Event::Connected`] was queued).
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// Queues a nominating check (USE-CANDIDATE, ICE-CONTROLLING) with the
    /// relay's password from its SDP; it is sent again every
    /// [`CHECK_INTERVAL`] from [`Client::handle_timeout`] until answered.
    /// Fails before anything is sent where the SDP exchange leaves no DTLS
    /// role, since the handshake follows the answer at once.
    pub fn check(&mut self, now: Instant) -> Result<(), ClientError> {
        let pwd = self.creds.remote.as_ref().ok_or(ClientError::NotLearnt)?.1.clone();
        self.check_with_password(&pwd, now)
    }

    /// [`Client::check`] with MESSAGE-INTEGRITY under another password
    /// than the relay's, to see it refused ([`Event::IceRefused`]). The
    /// answer is verified with the same password. Replaces a check under
    /// way.
    pub fn check_with_password(&mut self, pwd: &str, now: Instant) -> Result<(), ClientError> {
        self.dtls_role()?;
        self.check = Some(PendingCheck { pwd: pwd.to_string(), txids: VecDeque::new(), next: now });
        self.send_check(now);
        Ok(())
    }

    fn send_check(&mut self, now: Instant) {
        let (Some(relay), Some((ufrag, _)), Some(check)) = (&self.relay, &self.creds.remote, &mut self.check) else {
            return;
        };
        let txid: [u8; 12] = rand::random();
        let mut buf = [0u8; stun::MAX_ANSWER];
        let user = format!("{ufrag}:{}", self.creds.ufrag);
        let n = stun::request(&txid, &user, &check.pwd, CHECK_PRIORITY, true, &mut buf);
        if check.txids.len() == KEPT_TXIDS {
            check.txids.pop_front();
        }
        check.txids.push_back(txid);
        check.next = now + CHECK_INTERVAL;
        self.transmits.push_back(Transmit { destination: relay.addr, contents: buf[..n].to_vec() });
    }

    /// A datagram from the relay. STUN answers to our checks and DTLS
    /// records are taken (RFC 7983); anything else (SRTP, which the caller
    /// unprotects itself, a stale STUN answer, DTLS before the handshake
    /// started: the relay sends it again) is ignored.
    pub fn handle(&mut self, datagram: &[u8], now: Instant) -> Result<(), ClientError> {
        match demux(datagram) {
            Demux::Stun => self.handle_stun(datagram, now),
            Demux::Dtls => match self.dtls.as_mut() {
                Some(leg) => {
                    let step = leg.handle(datagram, now)?;
                    self.absorb(step);
                    Ok(())
                }
                None => Ok(()),
            },
            Demux::Rtp | Demux::Other => Ok(()),
        }
    }

    fn handle_stun(&mut self, datagram: &[u8], now: Instant) -> Result<(), ClientError> {
        let Some(check) = &self.check else { return Ok(()) };
        let Ok((_, txid)) = stun::header(datagram) else { return Ok(()) };
        if !check.txids.contains(&txid) {
            return Ok(());
        }
        let answer = stun::parse_response(datagram, &check.pwd)?;
        self.check = None;
        match answer {
            Ok(mapped) => {
                self.events.push_back(Event::IceConnected { mapped });
                self.start_dtls(now)
            }
            Err(code) => {
                self.events.push_back(Event::IceRefused { code });
                Ok(())
            }
        }
    }

    /// Starts the handshake after the first answered check (a later one
    /// keeps it). The relay's address answered a check under its own
    /// password: as the DTLS server the browser needs no cookie exchange.
    fn start_dtls(&mut self, now: Instant) -> Result<(), ClientError> {
        if self.dtls.is_some() {
            return Ok(());
        }
        let active = self.dtls_role()? == Setup::Active;
        let relay = self.relay.as_ref().ok_or(ClientError::NotLearnt)?;
        let mut leg = DtlsLeg::new(&self.identity, active, relay.fingerprint.clone(), true, now)?;
        let step = leg.start(now)?;
        self.dtls = Some(leg);
        self.absorb(step);
        Ok(())
    }

    fn absorb(&mut self, step: Step) {
        let Some(relay) = self.relay() else { return };
        self.transmits.extend(step.send.into_iter().map(|contents| Transmit { destination: relay, contents }));
        if let Some(keys) = step.keys {
            self.connected = true;
            self.events.push_back(Event::Connected(keys));
        }
    }

    /// Timers: an unanswered check due again is resent, and the handshake
    /// retransmits its flight or gives up past its deadline. Calling it
    /// before [`Client::poll_timeout`] is due does no harm.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), ClientError> {
        if self.check.as_ref().is_some_and(|c| now >= c.next) {
            self.send_check(now);
        }
        if let Some(leg) = self.dtls.as_mut() {
            let step = leg.timeout(now)?;
            self.absorb(step);
        }
        Ok(())
    }

    /// When [`Client::handle_timeout`] should run next, if anything waits
    /// on time.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let check = self.check.as_ref().map(|c| c.next);
        let dtls = self.dtls.as_ref().and_then(DtlsLeg::next_timeout);
        check.into_iter().chain(dtls).min()
    }

    /// The next datagram to send, in order.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// The next event, in order.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BROWSER: &str = "192.0.2.7:40000";
    const RELAY: &str = "198.18.0.1:30000";

    /// The relay's side, in memory, from the crate's relay pieces: checks
    /// answered by `stun`, a `DtlsLeg` started once a check passed.
    struct RelaySide {
        id: Identity,
        ice: IceCreds,
        /// The relay's `a=setup`.
        setup: Setup,
        /// The relay's DTLS role when it offered `actpass`.
        actpass_active: bool,
        /// The fingerprint the browser announced.
        expected: Fingerprint,
        leg: Option<DtlsLeg>,
        keys: Option<SrtpKeys>,
        error: Option<DtlsError>,
        refused: usize,
    }

    impl RelaySide {
        fn new(setup: Setup, browser: &Client) -> RelaySide {
            RelaySide {
                id: Identity::generate().unwrap(),
                ice: IceCreds::generate(),
                setup,
                actpass_active: true,
                expected: Fingerprint::parse(browser.fingerprint()).unwrap(),
                leg: None,
                keys: None,
                error: None,
                refused: 0,
            }
        }

        /// The relay's SDP for the browser, announcing `fingerprint`;
        /// `session_level` puts ICE, fingerprint and setup at session level.
        fn sdp(&self, fingerprint: &str, session_level: bool) -> Sdp {
            let relay: SocketAddr = RELAY.parse().unwrap();
            let attrs = format!(
                "a=ice-ufrag:{}\r\na=ice-pwd:{}\r\na=fingerprint:{fingerprint}\r\na=setup:{}\r\n",
                self.ice.ufrag,
                self.ice.pwd,
                self.setup.as_str()
            );
            let (session, media) = if session_level { (attrs.as_str(), "") } else { ("", attrs.as_str()) };
            let text = format!(
                "v=0\r\no=- 1 2 IN IP4 {ip}\r\ns=-\r\nt=0 0\r\na=ice-lite\r\n{session}\
                 m=audio {port} UDP/TLS/RTP/SAVPF 0\r\nc=IN IP4 {ip}\r\n{media}a=rtcp-mux\r\n\
                 a=candidate:1 1 UDP 2130706431 {ip} {port} typ host\r\n",
                ip = relay.ip(),
                port = relay.port()
            );
            Sdp::parse(&text).unwrap()
        }

        fn active(&self) -> bool {
            match self.setup {
                Setup::Active => true,
                Setup::Passive => false,
                _ => self.actpass_active,
            }
        }

        /// A datagram from the browser; the relay's answers.
        fn handle(&mut self, d: &[u8], from: SocketAddr, now: Instant) -> Vec<Vec<u8>> {
            let mut out = Vec::new();
            let mut buf = [0u8; stun::MAX_ANSWER];
            match demux(d) {
                Demux::Stun => match stun::check_request(d, &self.ice.ufrag, &self.ice.pwd) {
                    Ok(check) => {
                        assert!(check.use_candidate && check.controlling);
                        assert_eq!(check.priority, Some(CHECK_PRIORITY));
                        let n = stun::success(&check.txid, from, &self.ice.pwd, &mut buf);
                        out.push(buf[..n].to_vec());
                        if self.leg.is_none() {
                            let mut leg =
                                DtlsLeg::new(&self.id, self.active(), self.expected.clone(), true, now).unwrap();
                            out.extend(leg.start(now).unwrap().send);
                            self.leg = Some(leg);
                        }
                    }
                    Err(e) => {
                        self.refused += 1;
                        let (_, txid) = stun::header(d).unwrap();
                        let (code, reason) = e.answer_code().expect("an answerable refusal");
                        let n = stun::error(&txid, code, reason, &mut buf);
                        out.push(buf[..n].to_vec());
                    }
                },
                Demux::Dtls => {
                    let Some(leg) = self.leg.as_mut() else { return out };
                    match leg.handle(d, now) {
                        Ok(step) => {
                            out.extend(step.send);
                            self.keys = self.keys.take().or(step.keys);
                        }
                        Err(e) => self.error = Some(e),
                    }
                }
                other => panic!("the browser sent {other:?}"),
            }
            out
        }
    }

    fn client() -> Client {
        Client::new(Arc::new(Identity::generate().unwrap()), IceCreds::generate())
    }

    /// Moves datagrams both ways, 10 ms apart, until the client has keys
    /// and the relay too, or one fails, or a second passes. Returns the
    /// client's events and the first error.
    fn run(c: &mut Client, relay: &mut RelaySide, mut now: Instant) -> (Vec<Event>, Option<ClientError>) {
        let browser: SocketAddr = BROWSER.parse().unwrap();
        let mut events = Vec::new();
        for _ in 0..100 {
            now += Duration::from_millis(10);
            let mut answers = Vec::new();
            while let Some(t) = c.poll_transmit() {
                assert_eq!(t.destination, RELAY.parse().unwrap());
                answers.extend(relay.handle(&t.contents, browser, now));
            }
            for d in answers {
                if let Err(e) = c.handle(&d, now) {
                    return (events, Some(e));
                }
            }
            if c.poll_timeout().is_some_and(|t| t <= now) {
                if let Err(e) = c.handle_timeout(now) {
                    return (events, Some(e));
                }
            }
            events.extend(std::iter::from_fn(|| c.poll_event()));
            if (c.is_connected() && relay.keys.is_some() && c.transmits.is_empty()) || relay.error.is_some() {
                break;
            }
        }
        (events, None)
    }

    fn local() -> LocalSdp {
        let b: SocketAddr = BROWSER.parse().unwrap();
        LocalSdp::minimal(b.ip(), b.port())
    }

    fn keys(events: Vec<Event>) -> SrtpKeys {
        events
            .into_iter()
            .find_map(|e| match e {
                Event::Connected(k) => Some(k),
                _ => None,
            })
            .expect("keys")
    }

    #[test]
    fn a_check_and_a_handshake_give_both_ends_mirrored_keys_in_either_role() {
        for (relay_setup, ours, want) in [
            (Setup::Passive, Setup::ActPass, Setup::Active),
            (Setup::Active, Setup::ActPass, Setup::Passive),
            (Setup::ActPass, Setup::Passive, Setup::Passive),
            (Setup::ActPass, Setup::Active, Setup::Active),
        ] {
            let mut c = client();
            let mut relay = RelaySide::new(relay_setup, &c);
            relay.actpass_active = ours == Setup::Passive;
            let _ = c.sdp(&LocalSdp { setup: ours, ..local() });
            c.learn(&relay.sdp(relay.id.fingerprint(), relay_setup == Setup::Active)).unwrap();
            assert_eq!(c.relay(), Some(RELAY.parse().unwrap()));
            assert_eq!(c.dtls_role(), Ok(want), "relay {relay_setup:?}, browser {ours:?}");
            let now = Instant::now();
            c.check(now).unwrap();
            let (events, err) = run(&mut c, &mut relay, now);
            assert_eq!(err, None);
            assert!(
                matches!(events.first(), Some(Event::IceConnected { mapped }) if *mapped == BROWSER.parse().unwrap()),
                "{events:?}"
            );
            let k = keys(events);
            let r = relay.keys.take().expect("the relay's keys");
            assert!(c.is_connected());
            assert_eq!(k.suite, r.suite);
            assert_eq!(*k.local, *r.remote, "what the browser sends, the relay unprotects");
            assert_eq!(*k.remote, *r.local);
            assert_ne!(*k.local, *k.remote);
        }
    }

    #[test]
    fn a_relay_certificate_other_than_the_one_its_sdp_announced_is_refused() {
        for relay_setup in [Setup::Passive, Setup::Active] {
            let mut c = client();
            let mut relay = RelaySide::new(relay_setup, &c);
            let other = Identity::generate().unwrap();
            c.learn(&relay.sdp(other.fingerprint(), false)).unwrap();
            let now = Instant::now();
            c.check(now).unwrap();
            let (events, err) = run(&mut c, &mut relay, now);
            assert_eq!(err, Some(ClientError::Dtls(DtlsError::FingerprintMismatch)), "relay {relay_setup:?}");
            assert!(!c.is_connected());
            assert!(!events.iter().any(|e| matches!(e, Event::Connected(_))));
        }
    }

    #[test]
    fn a_browser_announcing_another_certificate_is_refused_by_the_relay() {
        let mut c = client();
        let other = Identity::generate().unwrap();
        c.announce_fingerprint(other.fingerprint());
        assert_eq!(c.fingerprint(), other.fingerprint());
        assert!(c.sdp(&local()).contains(&format!("\r\na=fingerprint:{}\r\n", other.fingerprint())));
        let mut relay = RelaySide::new(Setup::Passive, &c);
        c.learn(&relay.sdp(relay.id.fingerprint(), false)).unwrap();
        let now = Instant::now();
        c.check(now).unwrap();
        let (events, _) = run(&mut c, &mut relay, now);
        assert_eq!(relay.error, Some(DtlsError::FingerprintMismatch));
        assert!(relay.keys.is_none() && !c.is_connected(), "{events:?}");
    }

    #[test]
    fn a_check_under_a_wrong_password_is_refused_and_the_right_one_then_passes() {
        let mut c = client();
        let mut relay = RelaySide::new(Setup::Passive, &c);
        c.learn(&relay.sdp(relay.id.fingerprint(), false)).unwrap();
        let now = Instant::now();
        c.check_with_password("not-the-relays-password-at-all", now).unwrap();
        let (events, err) = run(&mut c, &mut relay, now);
        assert_eq!(err, None);
        assert!(matches!(events[..], [Event::IceRefused { code: 401 }]), "{events:?}");
        assert_eq!(relay.refused, 1, "a refused check is not sent again");
        assert!(relay.leg.is_none() && c.poll_timeout().is_none());
        c.check(now).unwrap();
        let (events, err) = run(&mut c, &mut relay, now);
        assert_eq!(err, None);
        assert_eq!(relay.refused, 1);
        let _ = keys(events);
        assert!(relay.keys.is_some());
    }

    #[test]
    fn an_unanswered_check_is_sent_again_and_only_verified_answers_to_it_count() {
        let mut c = client();
        let relay = RelaySide::new(Setup::Passive, &c);
        c.learn(&relay.sdp(relay.id.fingerprint(), false)).unwrap();
        let t0 = Instant::now();
        c.check(t0).unwrap();
        let first = c.poll_transmit().unwrap();
        assert_eq!(c.poll_transmit(), None);
        assert_eq!(c.poll_timeout(), Some(t0 + CHECK_INTERVAL));
        c.handle_timeout(t0 + CHECK_INTERVAL / 2).unwrap();
        assert_eq!(c.poll_transmit(), None, "not due yet");
        let t1 = t0 + CHECK_INTERVAL;
        c.handle_timeout(t1).unwrap();
        let second = c.poll_transmit().unwrap();
        assert_ne!(first.contents[8..20], second.contents[8..20], "a fresh transaction ID");
        assert_eq!(c.poll_timeout(), Some(t1 + CHECK_INTERVAL));
        let browser: SocketAddr = BROWSER.parse().unwrap();
        let check = stun::check_request(&first.contents, &relay.ice.ufrag, &relay.ice.pwd).unwrap();
        let mut buf = [0u8; stun::MAX_ANSWER];
        // An answer to a transaction the client never started is ignored;
        // one that does not verify under the relay's password is an error.
        let n = stun::success(&[9; 12], browser, &relay.ice.pwd, &mut buf);
        c.handle(&buf[..n], t1).unwrap();
        let n = stun::success(&check.txid, browser, "another-password-entirely", &mut buf);
        assert_eq!(c.handle(&buf[..n], t1), Err(ClientError::Stun(StunError::BadIntegrity)));
        assert!(c.poll_event().is_none());
        // The first transaction's answer still counts: the ClientHello
        // follows (the relay is passive).
        let n = stun::success(&check.txid, browser, &relay.ice.pwd, &mut buf);
        c.handle(&buf[..n], t1).unwrap();
        assert!(matches!(c.poll_event(), Some(Event::IceConnected { mapped }) if mapped == browser));
        let hello = c.poll_transmit().unwrap();
        assert_eq!((demux(&hello.contents), hello.destination), (Demux::Dtls, RELAY.parse().unwrap()));
        assert!(c.poll_timeout().is_some_and(|t| t > t1), "the handshake's retransmission timer");
        // SRTP and stray answers are not the client's business.
        c.handle(&[0x80, 0, 0, 1], t1).unwrap();
        c.handle(&buf[..n], t1).unwrap();
        assert!(c.poll_event().is_none() && c.poll_transmit().is_none());
    }

    #[test]
    fn the_relays_sdp_is_read_at_media_or_session_level_and_gaps_are_errors() {
        let mut c = client();
        let relay = RelaySide::new(Setup::ActPass, &c);
        let now = Instant::now();
        assert_eq!(c.check(now), Err(ClientError::NotLearnt));
        assert_eq!(c.dtls_role(), Err(ClientError::NotLearnt));
        c.learn(&relay.sdp(relay.id.fingerprint(), true)).unwrap();
        assert_eq!(c.creds().remote, Some((relay.ice.ufrag.clone(), relay.ice.pwd.clone())));
        assert_eq!(c.relay(), Some(RELAY.parse().unwrap()));
        // The relay offered actpass: the browser's answer decides.
        let no_role = |local| ClientError::NoRole { relay: Some(Setup::ActPass), local };
        assert_eq!(c.dtls_role(), Err(no_role(None)));
        assert_eq!(c.check(now), Err(no_role(None)));
        assert_eq!(c.poll_transmit(), None, "nothing sent without a role");
        let _ = c.sdp(&local());
        assert_eq!(c.dtls_role(), Err(no_role(Some(Setup::ActPass))));
        let _ = c.sdp(&LocalSdp { setup: Setup::Passive, ..local() });
        assert_eq!(c.dtls_role(), Ok(Setup::Passive));
        let text = relay.sdp(relay.id.fingerprint(), false).to_string();
        for (line, why) in [
            ("a=ice-pwd:", "no ICE credentials"),
            ("a=fingerprint:", "no a=fingerprint"),
            ("c=", "no connection address"),
        ] {
            let cut: String = text.lines().filter(|l| !l.starts_with(line)).map(|l| format!("{l}\r\n")).collect();
            assert_eq!(client().learn(&Sdp::parse(&cut).unwrap()), Err(ClientError::RelaySdp(why)), "{line}");
        }
        let bare = Sdp::parse("v=0\r\no=- 1 2 IN IP4 198.18.0.1\r\ns=-\r\nt=0 0\r\n").unwrap();
        assert_eq!(client().learn(&bare), Err(ClientError::RelaySdp("no m-line")));
        let holdconn = text.replace("a=setup:actpass", "a=setup:holdconn");
        let mut c = client();
        c.learn(&Sdp::parse(&holdconn).unwrap()).unwrap();
        assert!(matches!(c.dtls_role(), Err(ClientError::NoRole { relay: Some(Setup::HoldConn), .. })));
    }

    #[test]
    fn the_two_offers_keep_the_bytes_their_users_sent() {
        let creds = IceCreds { ufrag: "brws".into(), pwd: "browserpassword0123456789".into(), remote: None };
        let fp = "sha-256 0A:0B";
        // The daemon's tests: Chrome's audio offer.
        let chrome = LocalSdp {
            session_id: 4611731400430051336,
            setup: Setup::Passive,
            ..LocalSdp::chrome("127.0.0.1".parse().unwrap(), 5004)
        };
        let want = [
            "v=0",
            "o=- 4611731400430051336 2 IN IP4 127.0.0.1",
            "s=-",
            "t=0 0",
            "a=group:BUNDLE 0",
            "a=msid-semantic: WMS",
            "m=audio 5004 UDP/TLS/RTP/SAVPF 111 0 8",
            "c=IN IP4 127.0.0.1",
            "a=rtcp:9 IN IP4 0.0.0.0",
            "a=candidate:1 1 udp 2122260223 127.0.0.1 5004 typ host generation 0",
            "a=ice-ufrag:brws",
            "a=ice-pwd:browserpassword0123456789",
            "a=ice-options:trickle",
            "a=fingerprint:sha-256 0A:0B",
            "a=setup:passive",
            "a=mid:0",
            "a=sendrecv",
            "a=rtcp-mux",
            "a=rtpmap:111 opus/48000/2",
            "a=rtcp-fb:111 transport-cc",
            "a=rtpmap:0 PCMU/8000",
            "a=rtpmap:8 PCMA/8000",
            "",
        ]
        .join("\r\n");
        assert_eq!(chrome.write(&creds, fp), want);
        // The load generator's, in both families.
        for ip in ["198.18.0.1", "2001:db8::1"] {
            let ip: IpAddr = ip.parse().unwrap();
            let fam = if ip.is_ipv6() { "IP6" } else { "IP4" };
            let want = format!(
                "v=0\r\no=- 6 2 IN {fam} {ip}\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n\
                 m=audio 7000 UDP/TLS/RTP/SAVPF 0\r\nc=IN {fam} {ip}\r\na=rtcp:9 IN {fam} {ip}\r\n\
                 a=candidate:1 1 udp 2122260223 {ip} 7000 typ host\r\na=ice-ufrag:brws\r\n\
                 a=ice-pwd:browserpassword0123456789\r\na=fingerprint:{fp}\r\na=setup:actpass\r\na=mid:0\r\n\
                 a=sendrecv\r\na=rtcp-mux\r\na=rtpmap:0 PCMU/8000\r\n"
            );
            assert_eq!(LocalSdp { session_id: 6, ..LocalSdp::minimal(ip, 7000) }.write(&creds, fp), want);
        }
        // And a client writes it with its own credentials and fingerprint.
        let mut c = Client::new(Arc::new(Identity::generate().unwrap()), creds.clone());
        assert_eq!(c.sdp(&chrome), chrome.write(&creds, c.fingerprint()));
        assert!(Sdp::parse(&c.sdp(&chrome)).is_ok());
    }
}
