//! Fuzz logic of the SDP parser and rewriter (`srtpgate-sdp`).
//!
//! Input: an SDP as UTF-8 (anything else is skipped). `Sdp::parse` must not
//! panic; on `Ok`, the text it writes must parse to the same SDP and write
//! the same text, every `a=crypto` line must parse (or fail) without panic,
//! and the rewrite the relay applies to an offer (every setter) must leave an
//! SDP that parses, with the values the setters put in.

use srtp::Suite;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::rand::{rngs::StdRng, SeedableRng};
use srtpgate_sdp::{Direction, Sdp};
use srtpgate_sdp::{SdpError, MAX_LINES, MAX_SDP_LEN};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The `sdp` target.
pub fn sdp(data: &[u8]) {
    let Ok(text) = core::str::from_utf8(data) else {
        return;
    };
    let Ok(mut sdp) = Sdp::parse(text) else {
        return;
    };
    let out = sdp.to_string();
    let again = Sdp::parse(&out).expect("the output of an accepted SDP does not parse");
    assert_eq!(again, sdp, "re-parse gives other lines");
    assert_eq!(again.to_string(), out, "re-serialisation differs");

    // Getters.
    let _ = (sdp.connection(), sdp.origin_address(), sdp.session_attr("ice-ufrag"), sdp.session_direction());
    for (i, m) in sdp.media().iter().enumerate() {
        let _ = (m.media_type(), m.port(), m.port_count(), m.proto(), m.formats(), m.is_rtp());
        let _ = (m.connection(), m.rtcp(), m.rtcp_mux(), m.direction(), m.attr("rtpmap"), m.has_attr("x"));
        let _ = (sdp.media_connection(i), sdp.media_direction(i));
        for c in m.crypto().into_iter().flatten() {
            // An accepted attribute makes SRTP keys and writes back to itself.
            c.master_keys().expect("an accepted a=crypto makes no master key");
            let back = CryptoAttr::parse(&c.to_string()).expect("a written a=crypto does not parse");
            assert_eq!(back, c, "a=crypto does not round-trip");
            let _ = (c.kdr(), c.unencrypted_srtp(), c.unencrypted_srtcp(), c.unauthenticated_srtp(), c.policy());
        }
    }

    // The offer rewrite: every setter.
    let relay4 = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 1));
    let relay6 = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    let relay = if data.len() % 2 == 0 { relay4 } else { relay6 };
    let mut rng = StdRng::seed_from_u64(data.len() as u64);
    sdp.set_origin_address(relay);
    sdp.bump_version();
    sdp.set_connection(relay);
    for name in ["ice-ufrag", "ice-pwd", "ice-options", "ice-lite", "fingerprint", "setup"] {
        sdp.remove_session_attrs(name);
    }
    let n = sdp.media().len();
    for (i, m) in sdp.media_mut().iter_mut().enumerate() {
        let port = 30000 + 2 * i as u16;
        m.set_connection(relay);
        m.set_port(port);
        m.set_proto(if m.is_rtp() { "RTP/SAVP" } else { "RTP/AVP" });
        m.remove_ice();
        m.remove_attrs("fingerprint");
        m.set_rtcp(port + 1, Some(relay));
        m.set_direction(Direction::SendRecv);
        m.remove_crypto();
        let suite = Suite::ALL[i % Suite::ALL.len()];
        m.add_crypto(&CryptoAttr::generate(1, suite, &mut rng));
        m.add_attr("rtcp-mux", None);
        // The codec rewrite: the formats written back as read (a no-op when
        // some text of theirs could not be written safely).
        let formats = m.payload_formats();
        m.set_payload_formats(&formats);
        assert_eq!(m.payload_formats(), formats, "payload formats change when written back");
        m.set_ptime(Some(20));
        assert_eq!(m.ptime(), Some(20));
    }
    sdp.set_all_connections(relay);
    let text = sdp.to_string();
    let after = match Sdp::parse(&text) {
        Ok(after) => after,
        // The rewrite adds lines: an SDP at the limits may grow past them.
        Err(SdpError::TooLarge(_)) if text.len() > MAX_SDP_LEN => return,
        Err(SdpError::TooManyLines) if sdp.lines().count() > MAX_LINES => return,
        Err(e) => panic!("a rewritten SDP does not parse: {e}"),
    };
    assert_eq!(after, sdp, "the rewritten SDP re-parses to other lines");
    assert_eq!(after.media().len(), n);
    for (i, m) in after.media().iter().enumerate() {
        let port = 30000 + 2 * i as u16;
        assert_eq!(m.port(), port);
        assert_eq!(m.port_count(), None);
        assert_eq!(m.connection(), Some(relay));
        assert_eq!(after.media_connection(i), Some(relay));
        assert_eq!(m.rtcp(), Some((port + 1, Some(relay))));
        assert!(m.rtcp_mux());
        assert_eq!(m.direction(), Some(Direction::SendRecv));
        assert!(!m.has_attr("candidate") && !m.has_attr("ice-ufrag"));
        let c = m.crypto();
        assert_eq!(c.len(), 1);
        let c = c.into_iter().next().and_then(Result::ok).expect("the generated a=crypto does not parse");
        assert_eq!(c.suite, Suite::ALL[i % Suite::ALL.len()]);
    }
}
