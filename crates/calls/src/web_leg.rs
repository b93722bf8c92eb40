//! The running association of one ICE/DTLS leg ([`WebLeg`]), driven by
//! the datagrams the media workers hand over and by a timer, returning what
//! the relay must do ([`Actions`]: datagrams to send, the address media goes
//! to, the keys a handshake exported).
//!
//! ICE is ICE-lite (RFC 8445 §2.5): the relay answers the peer's checks on
//! its one host candidate and sends media to the address of the check the
//! peer nominated (or its first valid one). DTLS-SRTP (RFC 5763/5764) runs
//! per leg in the role the offer/answer gave; its keys reach the worker in
//! a `Keys` command, media to and from the leg is dropped until then.

use srtpgate_webrtc::dtls::{DtlsLeg, Fingerprint, Identity, SrtpKeys};
use srtpgate_webrtc::ice::IceCreds;
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

/// The running transport of one ICE/DTLS leg.
pub struct WebLeg {
    /// The relay's ICE credentials towards the leg (ICE-lite).
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
    /// A leg with ICE credentials (or none) and no association yet.
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

    /// The DTLS association for `expected` in `active` role, made when this
    /// leg's (if any) cannot be kept: an association with the same
    /// fingerprint and role is kept (a re-INVITE), anything else starts
    /// anew. `None`: keep the running one. Changes nothing, so that an
    /// answer refused later leaves the leg as it was.
    pub fn prepare_dtls(
        leg: Option<&WebLeg>,
        id: &Identity,
        expected: &Fingerprint,
        active: bool,
        with_ice: bool,
        now: Instant,
    ) -> Result<Option<DtlsLeg>, String> {
        if let Some(l) = leg {
            if let Some(d) = &l.dtls {
                if d.expected() == expected && d.is_active() == active && l.failed.is_none() {
                    return Ok(None);
                }
            }
        }
        DtlsLeg::new(id, active, expected.clone(), with_ice, now).map(Some).map_err(|e| e.to_string())
    }

    /// Runs a new association ([`WebLeg::prepare_dtls`]). Returns datagrams
    /// to send (a ClientHello when the peer's address is known already;
    /// `hint`: the peer's SDP address, used without ICE).
    pub fn install_dtls(
        &mut self,
        leg: DtlsLeg,
        hint: Option<SocketAddr>,
        now: Instant,
        totals: &mut WebTotals,
    ) -> Actions {
        let active = leg.is_active();
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
        out
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
