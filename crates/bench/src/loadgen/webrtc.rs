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
use srtpgate_webrtc::client::{Client, Event, LocalSdp};
use srtpgate_webrtc::dtls::Identity;
use srtpgate_webrtc::ice::IceCreds;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A datagram the group's receiver passed on (not RTP): where from, bytes.
pub type Signal = (SocketAddr, Vec<u8>);

/// How long the ICE check, and then the handshake, may take.
const PHASE: Duration = Duration::from_secs(3);

/// The browser side of one group: its certificate, ICE credentials, the
/// caller socket (a clone) and the STUN/DTLS datagrams the receiver hands on.
/// Each call's association is an srtpgate-webrtc client machine that
/// [`Browser::connect`] drives.
pub struct Browser {
    id: Arc<Identity>,
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
        let id = Identity::generate().map_err(|e| e.to_string())?;
        Ok(Browser { id: Arc::new(id), creds: IceCreds::generate(), sock, signals })
    }

    /// The browser's offer (PCMU, as the SDES legs' test payload). Written
    /// before the call's machine exists: the relay's answer fixes the DTLS
    /// role without it.
    pub fn offer_sdp(&self, id: u64, ip: IpAddr, port: u16) -> String {
        LocalSdp { session_id: id, ..LocalSdp::minimal(ip, port) }.write(&self.creds, self.id.fingerprint())
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

    /// The next datagram from `from` before `until`: empty after 20 ms
    /// without one (the machine's timers run then), `None` once `until`
    /// passed.
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

    fn send(&self, c: &mut Client) -> Result<(), String> {
        while let Some(t) = c.poll_transmit() {
            self.sock.send_to(&t.contents, t.destination).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// ICE, then DTLS, with the relay whose answer for the browser is
    /// `sdp`: a nominating check, repeated until answered (3 s), then the
    /// handshake in the role the relay's `a=setup` leaves (3 s more).
    pub fn connect(&self, sdp: &str) -> Result<Connected, String> {
        let s = Sdp::parse(sdp).map_err(|e| format!("relay SDP: {e}"))?;
        let mut c = Client::new(self.id.clone(), self.creds.clone());
        c.learn(&s).map_err(|e| e.to_string())?;
        let relay = c.relay().ok_or("the relay's SDP gave no address")?;
        c.check(Instant::now()).map_err(|e| e.to_string())?;
        let mut deadline = Instant::now() + PHASE;
        let mut checked = false;
        loop {
            self.send(&mut c)?;
            while let Some(e) = c.poll_event() {
                match e {
                    Event::IceConnected { .. } => {
                        checked = true;
                        deadline = Instant::now() + PHASE;
                    }
                    Event::IceRefused { code } => return Err(format!("ICE check answered {code}")),
                    Event::Connected(k) => {
                        self.send(&mut c)?;
                        let ctx = |p: Result<srtp::Policy, srtp::Error>| {
                            p.and_then(|p| Context::new(p, CpuEngine::new())).map_err(|e| e.to_string())
                        };
                        return Ok(Connected { relay, tx: ctx(k.local_policy())?, rx: ctx(k.remote_policy())? });
                    }
                }
            }
            let Some(d) = self.next(relay, deadline) else {
                return Err(if checked { "no DTLS handshake within 3 s" } else { "no answer to the ICE check" }.into());
            };
            let now = Instant::now();
            if !d.is_empty() {
                c.handle(&d, now).map_err(|e| e.to_string())?;
            }
            if d.is_empty() || c.poll_timeout().is_some_and(|t| t <= now) {
                c.handle_timeout(now).map_err(|e| e.to_string())?;
            }
        }
    }
}
