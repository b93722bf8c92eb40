//! The load generator's browser (`--webrtc`): the caller of every call is a
//! WebRTC endpoint on its group's caller socket: its offer is
//! `UDP/TLS/RTP/SAVPF` with ICE, a fingerprint and rtcp-mux; after the answer
//! it sends a nominating ICE check to the relay's candidate and runs the
//! DTLS-SRTP handshake in the role the relay's `a=setup` leaves it, then
//! sends and receives SRTP with the exported keys like any leg. The NG flags
//! are those a Kamailio WebRTC bridge sends (towards the phone: ICE removed,
//! SDES; towards the browser: ICE forced, DTLS, rtcp-mux, no SDES), plus
//! `ICE-lite=backward`, which makes rtpengine lite towards the browser as
//! srtpgate always is (srtpgate ignores the key with a warning).

use crossbeam_channel::Receiver;
use srtp::{Context, CpuEngine};
use srtpgate_ng::Value;
use srtpgate_sdp::Sdp;
use srtpgate_webrtc::dtls::{DtlsLeg, Fingerprint, Identity, Setup};
use srtpgate_webrtc::{ice::IceCreds, stun};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

/// A datagram the group's receiver passed on (not RTP): where from, bytes.
pub type Signal = (SocketAddr, Vec<u8>);

/// The browser side of one group: its certificate, ICE credentials, the
/// caller socket (a clone) and the STUN/DTLS datagrams the receiver hands on.
pub struct Browser {
    id: Identity,
    creds: IceCreds,
    sock: UdpSocket,
    signals: Receiver<Signal>,
}

/// What a finished connection gives the caller leg.
pub struct Connected {
    /// The relay's address for the caller (its candidate).
    pub relay: SocketAddr,
    /// Protects what the browser sends.
    pub tx: Context<CpuEngine>,
    /// Unprotects what it receives.
    pub rx: Context<CpuEngine>,
}

impl Browser {
    /// A browser on `sock`, fed by `signals`.
    pub fn new(sock: UdpSocket, signals: Receiver<Signal>) -> Result<Browser, String> {
        Ok(Browser { id: Identity::generate().map_err(|e| e.to_string())?, creds: IceCreds::generate(), sock, signals })
    }

    /// The browser's offer (PCMU, as the SDES legs' test payload).
    pub fn offer_sdp(&self, id: u64, ip: IpAddr, port: u16) -> String {
        let fam = if ip.is_ipv6() { "IP6" } else { "IP4" };
        format!(
            "v=0\r\no=- {id} 2 IN {fam} {ip}\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n\
             m=audio {port} UDP/TLS/RTP/SAVPF 0\r\nc=IN {fam} {ip}\r\na=rtcp:9 IN {fam} {ip}\r\n\
             a=candidate:1 1 udp 2122260223 {ip} {port} typ host\r\na=ice-ufrag:{}\r\na=ice-pwd:{}\r\n\
             a=fingerprint:{}\r\na=setup:actpass\r\na=mid:0\r\na=sendrecv\r\na=rtcp-mux\r\n\
             a=rtpmap:0 PCMU/8000\r\n",
            self.creds.ufrag,
            self.creds.pwd,
            self.id.fingerprint()
        )
    }

    /// The offer's NG options: towards the phone.
    pub fn offer_options(v: Value) -> Value {
        let list = |items: &[&str]| Value::List(items.iter().map(|s| Value::from(*s)).collect());
        v.with("ICE", "remove")
            .with("DTLS", "off")
            .with("DTLS-reverse", "passive")
            .with("ICE-lite", "backward")
            .with("transport-protocol", "RTP/SAVP")
            .with("rtcp-mux", list(&["demux"]))
    }

    /// The answer's NG options: towards the browser.
    pub fn answer_options(v: Value) -> Value {
        let list = |items: &[&str]| Value::List(items.iter().map(|s| Value::from(*s)).collect());
        v.with("ICE", "force")
            .with("DTLS", "passive")
            .with("transport-protocol", "UDP/TLS/RTP/SAVPF")
            .with("rtcp-mux", list(&["offer", "require"]))
            .with("SDES", list(&["off"]))
    }

    fn next(&self, from: SocketAddr, until: Instant) -> Option<Vec<u8>> {
        loop {
            let left = until.checked_duration_since(Instant::now())?;
            match self.signals.recv_timeout(left.min(Duration::from_millis(20))) {
                Ok((f, d)) if f == from => return Some(d),
                Ok(_) => {}
                Err(_) => {
                    if Instant::now() >= until {
                        return None;
                    }
                    return Some(Vec::new());
                }
            }
        }
    }

    /// ICE, then DTLS, with the relay whose answer for the browser is `sdp`.
    pub fn connect(&self, sdp: &str) -> Result<Connected, String> {
        let s = Sdp::parse(sdp).map_err(|e| format!("relay SDP: {e}"))?;
        let m = s.media().first().ok_or("relay SDP without media")?;
        let attr = |n: &str| m.attr(n).or_else(|| s.session_attr(n)).map(str::trim).map(str::to_string);
        let ip = s.media_connection(0).ok_or("relay SDP without address")?;
        let relay = SocketAddr::new(ip, m.port());
        let (ufrag, pwd) = match (attr("ice-ufrag"), attr("ice-pwd")) {
            (Some(u), Some(p)) => (u, p),
            _ => return Err("the relay's SDP for the browser has no ICE credentials".into()),
        };
        let fp = attr("fingerprint").and_then(|f| Fingerprint::parse(&f)).ok_or("no a=fingerprint for the browser")?;
        let active = match attr("setup").and_then(|v| Setup::parse(&v)) {
            Some(Setup::Active) => false,
            Some(Setup::Passive) => true,
            other => return Err(format!("a=setup {other:?} in the relay's answer")),
        };
        // A nominating check, repeated until answered.
        let user = format!("{ufrag}:{}", self.creds.ufrag);

        let deadline = Instant::now() + Duration::from_secs(3);
        let mut answered = false;
        while !answered {
            let mut b = [0u8; stun::MAX_ANSWER];
            let n = stun::request(&rand::random(), &user, &pwd, 1_845_501_695, true, &mut b);
            self.sock.send_to(&b[..n], relay).map_err(|e| e.to_string())?;
            let again = Instant::now() + Duration::from_millis(200);
            while let Some(d) = self.next(relay, again.min(deadline)) {
                if stun::is_stun(&d) {
                    match stun::parse_response(&d, &pwd) {
                        Ok(Ok(_)) => {
                            answered = true;
                            break;
                        }
                        other => return Err(format!("ICE check answered {other:?}")),
                    }
                }
            }
            if !answered && Instant::now() >= deadline {
                return Err("no answer to the ICE check".into());
            }
        }
        // DTLS.
        let now = Instant::now();

        let mut leg = DtlsLeg::new(&self.id, active, fp, true, now).map_err(|e| e.to_string())?;
        let mut out = leg.start(now).map_err(|e| e.to_string())?.send;
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            for d in out.drain(..) {
                self.sock.send_to(&d, relay).map_err(|e| e.to_string())?;
            }
            let Some(d) = self.next(relay, deadline) else { return Err("no DTLS handshake within 3 s".into()) };
            let step = if (20..=63).contains(&d.first().copied().unwrap_or(0)) {
                leg.handle(&d, Instant::now())
            } else {
                leg.timeout(Instant::now())
            }
            .map_err(|e| e.to_string())?;
            out = step.send;
            if let Some(k) = step.keys {
                for d in out.drain(..) {
                    self.sock.send_to(&d, relay).map_err(|e| e.to_string())?;
                }
                let ctx = |p: Result<srtp::Policy, srtp::Error>| {
                    p.and_then(|p| Context::new(p, CpuEngine::new())).map_err(|e| e.to_string())
                };
                return Ok(Connected { relay, tx: ctx(k.local_policy())?, rx: ctx(k.remote_policy())? });
            }
        }
    }
}
