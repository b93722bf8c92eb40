//! The browser-like end of a WebRTC leg that the daemon's tests drive
//! (`mod browser;` in each test file that uses it; each uses part of it).
#![allow(dead_code)]

use srtp::{Context, CpuEngine};
use srtpgate_sdp::Sdp;
use srtpgate_testkit::daemon::{Endpoint, LO, WAIT};
use srtpgate_webrtc::client::{Client, Event, LocalSdp};
use srtpgate_webrtc::dtls::{Identity, Setup, SrtpKeys};
use srtpgate_webrtc::ice::IceCreds;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The browser's end of a WebRTC leg: srtpgate-webrtc's client machine
/// driven over the socket of a test endpoint, which carries the media with
/// the keys the machine ends in.
pub struct Browser {
    /// Its socket and SRTP contexts (once keyed).
    pub media: Endpoint,
    /// srtpgate-webrtc's client machine.
    pub client: Client,
}

impl Browser {
    pub fn new() -> Browser {
        Browser::on(LO)
    }

    /// A browser whose socket is on `ip`.
    pub fn on(ip: IpAddr) -> Browser {
        let mut media = Endpoint::new(ip);
        media.ssrc = 0x5eb5eb;
        let creds = IceCreds { ufrag: "brws".into(), pwd: "browserpassword0123456789".into(), remote: None };
        Browser { media, client: Client::new(Arc::new(Identity::generate().unwrap()), creds) }
    }

    /// The one socket of ICE, DTLS and media.
    pub fn sock(&self) -> &UdpSocket {
        &self.media.rtp
    }

    pub fn port(&self) -> u16 {
        self.media.port()
    }

    /// The relay's address for the browser, from its SDP.
    pub fn relay(&self) -> SocketAddr {
        self.client.relay().expect("the relay's SDP was learnt")
    }

    /// The browser's SDP, as Chrome writes an audio offer:
    /// UDP/TLS/RTP/SAVPF, ICE (a host candidate), fingerprint, `setup`,
    /// rtcp-mux, mid and BUNDLE, rtcp-fb.
    pub fn sdp(&mut self, setup: &str) -> String {
        let setup = Setup::parse(setup).unwrap();
        let ip = self.sock().local_addr().unwrap().ip();
        self.client.sdp(&LocalSdp { session_id: 4611731400430051336, setup, ..LocalSdp::chrome(ip, self.port()) })
    }

    /// Reads what the relay's SDP for the browser says.
    pub fn learn(&mut self, sdp: &Sdp) {
        self.client.learn(sdp).expect("the relay's SDP for the browser");
    }

    /// Sends what the machine has for the relay.
    pub fn flush(&mut self) {
        while let Some(t) = self.client.poll_transmit() {
            self.sock().send_to(&t.contents, t.destination).unwrap();
        }
    }

    /// One ICE check (nominating) under the relay's password; returns the
    /// relay's answer. An answered check starts the handshake.
    pub fn check(&mut self) -> Result<SocketAddr, u16> {
        self.check_with(None)
    }

    /// One ICE check under `pwd` instead, if given. Sent once: the relay's
    /// answers are counted.
    pub fn check_with(&mut self, pwd: Option<&str>) -> Result<SocketAddr, u16> {
        let now = Instant::now();
        match pwd {
            Some(p) => self.client.check_with_password(p, now),
            None => self.client.check(now),
        }
        .expect("a check");
        self.flush();
        self.sock().set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let deadline = Instant::now() + WAIT;
        let mut b = [0u8; 2048];
        while Instant::now() < deadline {
            if let Ok((n, _)) = self.sock().recv_from(&mut b) {
                self.client.handle(&b[..n], Instant::now()).expect("a STUN answer that verifies");
                match self.client.poll_event() {
                    Some(Event::IceConnected { mapped }) => return Ok(mapped),
                    Some(Event::IceRefused { code }) => return Err(code),
                    Some(e) => panic!("{e:?} before the check was answered"),
                    None => {}
                }
            }
        }
        panic!("no answer to an ICE check");
    }

    /// Runs the DTLS handshake the answered check started until keys, in
    /// the role the SDP exchange left the browser (`active`: it sends the
    /// ClientHello), which this checks first.
    pub fn handshake(&mut self, active: bool) -> Result<SrtpKeys, String> {
        let role = if active { Setup::Active } else { Setup::Passive };
        assert_eq!(self.client.dtls_role(), Ok(role), "the browser's DTLS role");
        self.sock().set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let deadline = Instant::now() + WAIT;
        let mut b = [0u8; 2048];
        while Instant::now() < deadline {
            self.flush();
            match self.sock().recv_from(&mut b) {
                Ok((n, _)) => self.client.handle(&b[..n], Instant::now()),
                Err(_) => self.client.handle_timeout(Instant::now()),
            }
            .map_err(|e| e.to_string())?;
            while let Some(e) = self.client.poll_event() {
                if let Event::Connected(keys) = e {
                    self.flush();
                    return Ok(keys);
                }
            }
        }
        Err("no DTLS handshake within the wait".into())
    }

    /// The keys; media starts 50 ms later: the relay's keys reach its
    /// media worker just after its own end of the handshake, and a packet
    /// that overtakes them is dropped (a browser's first audio frame
    /// comes 20 ms after connection at the earliest).
    pub fn keyed(&mut self, k: &SrtpKeys) {
        std::thread::sleep(Duration::from_millis(50));
        let ctx = |p: Result<srtp::Policy, srtp::Error>| Context::new(p.unwrap(), CpuEngine::new()).unwrap();
        self.media.contexts(ctx(k.local_policy()), ctx(k.remote_policy()));
        let relay = self.relay();
        (self.media.relay_rtp, self.media.relay_rtcp, self.media.mux) = (relay, relay, true);
    }

    pub fn send_rtp(&mut self, tag: &str) -> Vec<u8> {
        self.media.send_rtp(tag)
    }

    pub fn recv_rtp(&mut self, what: &str) -> Vec<u8> {
        self.media.recv_rtp(what)
    }
}
