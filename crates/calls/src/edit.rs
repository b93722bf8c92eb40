//! The line-preserving SDP edits the relay makes to what it passes on:
//! each m-line pointed at the relay's leg, the session lines after them, and
//! the checks that the result fits a reply.

use srtpgate_ng::Request;
use srtpgate_sdp::crypto::CryptoAttr;
use srtpgate_sdp::{Media, Sdp};
use std::net::IpAddr;

/// Room in a reply datagram for everything beside the SDP (cookie, result,
/// warnings).
pub(crate) const REPLY_ROOM: usize = srtpgate_ng::MAX_WARNING_TEXT + 512;

/// SRTP, keyed by SDES or DTLS.
pub(crate) fn is_secure(proto: &str) -> bool {
    proto.to_ascii_uppercase().contains("SAVP")
}

/// SRTP keyed by DTLS (RFC 5764 §8).
pub(crate) fn is_dtls(proto: &str) -> bool {
    proto.to_ascii_uppercase().starts_with("UDP/TLS/")
}

/// The SDP protocol with the security of `secure`, keeping AVP/AVPF.
pub(crate) fn with_security(proto: &str, secure: bool) -> String {
    let fb = proto.to_ascii_uppercase().ends_with("AVPF");
    match (secure, fb) {
        (true, true) => "RTP/SAVPF",
        (true, false) => "RTP/SAVP",
        (false, true) => "RTP/AVPF",
        (false, false) => "RTP/AVP",
    }
    .to_string()
}

/// The RTP payload types of an m-line.
pub(crate) fn pts_of(m: &Media) -> Vec<u8> {
    m.formats().iter().filter_map(|f| f.parse().ok()).filter(|&p: &u8| p < 128).collect()
}

/// An SDP for a reply must leave room in the datagram for the rest of it.
pub(crate) fn fits_reply(sdp: &str) -> Result<(), String> {
    let most = srtpgate_ng::MAX_REPLY - REPLY_ROOM;
    if sdp.len() > most {
        return Err(format!("rewritten SDP of {} bytes would not fit in a reply datagram (at most {most})", sdp.len()));
    }
    Ok(())
}

/// The relay's address as the SDP of this message carries it: the leg's
/// advertised address, or `media-address` where the request gives one
/// (rtpengine writes it, for this message only, in place of its own).
pub(crate) fn sdp_address(advertised: IpAddr, req: &Request) -> IpAddr {
    req.media_address.as_deref().and_then(|a| a.parse().ok()).unwrap_or(advertised)
}

/// Points an m-line at the relay's leg on `ip`/`port`: port, protocol, `c=`
/// (where the section has its own), the relay's crypto lines, `a=rtcp` and
/// `a=rtcp-mux`; ICE attributes go (written again by the transport edit
/// where the relay runs ICE).
pub(crate) fn point_media(
    m: &mut Media,
    (ip, port): (IpAddr, u16),
    proto: &str,
    keys: &[CryptoAttr],
    mux: bool,
    req: &Request,
) {
    m.set_port(port);
    m.set_proto(proto);
    if m.connection().is_some() {
        m.set_connection(ip);
    }
    m.remove_ice();
    m.remove_crypto();
    for k in keys {
        m.add_crypto(k);
    }
    m.remove_attrs("rtcp");
    if !req.flags.no_rtcp_attribute {
        m.set_rtcp(port + 1, req.flags.full_rtcp_attribute.then_some(ip));
    }
    m.remove_attrs("rtcp-mux");
    if mux {
        m.add_attr("rtcp-mux", None);
    }
}

/// Session-level rewrites: the session `c=` (always, when present, and
/// inserted when a relayed m-line has no `c=`), the origin on request, and
/// ICE attributes.
pub(crate) fn point_session(sdp: &mut Sdp, relay_ip: IpAddr, req: &Request) {
    let uncovered = sdp.media().iter().any(|m: &Media| m.port() != 0 && m.connection().is_none());
    if sdp.connection().is_some() || uncovered {
        sdp.set_connection(relay_ip);
    }
    if req.replace.origin || req.replace.origin_full {
        sdp.set_origin_address(relay_ip);
    }
    if req.replace.sdp_version || req.replace.force_increment_sdp_ver {
        sdp.bump_version();
    }
    for a in ["ice-ufrag", "ice-pwd", "ice-options", "ice-lite"] {
        sdp.remove_session_attrs(a);
    }
}
