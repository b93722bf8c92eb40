//! Fuzz logic of a WebRTC leg's datagrams (`srtpgate-webrtc`): what an
//! ICE/DTLS leg's port hands to the control thread.
//!
//! The input is one datagram. The STUN check never panics, and a request it
//! accepts gets a success answer that the client side parses back to the
//! sender's address; an error answer, when due, parses as that error. The
//! same bytes fed to a fresh DTLS server leg never panic (dimpl's parser on
//! the relay's path), and no keys come of them.

use srtpgate_webrtc::dtls::{DtlsLeg, Fingerprint, Identity};
use srtpgate_webrtc::stun;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Instant;

const UFRAG: &str = "relayufr";
const PWD: &str = "relaypassword0123456789x";

fn identity() -> &'static Identity {
    static ID: OnceLock<Identity> = OnceLock::new();
    ID.get_or_init(|| Identity::generate().expect("certificate"))
}

/// The `webrtc_datagram` target.
pub fn webrtc_datagram(data: &[u8]) {
    let from: SocketAddr = "198.18.0.7:40000".parse().unwrap();
    let mut out = [0u8; stun::MAX_ANSWER];
    match stun::check_request(data, UFRAG, PWD) {
        Ok(check) => {
            let n = stun::success(&check.txid, from, PWD, &mut out);
            assert_eq!(stun::parse_response(&out[..n], PWD), Ok(Ok(from)));
        }
        Err(e) => {
            if let (Some((code, reason)), Ok((_, txid))) = (e.answer_code(), stun::header(data)) {
                let n = stun::error(&txid, code, reason, &mut out);
                assert_eq!(stun::parse_response(&out[..n], PWD), Ok(Err(code)));
            }
        }
    }
    let _ = stun::parse_response(data, PWD);
    let fp = Fingerprint::parse(
        "sha-256 00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF",
    )
    .expect("fingerprint");
    let mut leg = DtlsLeg::new(identity(), false, fp, false, Instant::now()).expect("leg");
    if let Ok(step) = leg.handle(data, Instant::now()) {
        assert!(step.keys.is_none(), "keys from one datagram");
    }
}
