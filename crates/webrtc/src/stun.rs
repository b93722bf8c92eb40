//! STUN Binding for ICE connectivity checks (RFC 5389, RFC 8445 §7.2–7.3):
//! a request checked in place (USERNAME, MESSAGE-INTEGRITY with the
//! short-term password, FINGERPRINT) and the answers written into a
//! caller's buffer.
//!
//! Written here rather than taken from a STUN crate: an ICE-lite relay
//! needs the Binding method only, with short-term credentials, and this
//! parses a datagram where it lies and writes the answer into a fixed
//! buffer, with no allocation; it is checked against RFC 5769's vectors
//! (`tests/vectors/stun.json`) and fuzzed (`fuzz/` target `stun`).

use hmac::{Hmac, Mac};
use sha1::Sha1;
use std::net::{IpAddr, SocketAddr};
use subtle::ConstantTimeEq;

/// The magic cookie (RFC 5389 §6).
pub const MAGIC: u32 = 0x2112_A442;
/// Binding request.
pub const BINDING_REQUEST: u16 = 0x0001;
/// Binding success response.
pub const BINDING_SUCCESS: u16 = 0x0101;
/// Binding error response.
pub const BINDING_ERROR: u16 = 0x0111;

const USERNAME: u16 = 0x0006;
const MESSAGE_INTEGRITY: u16 = 0x0008;
const ERROR_CODE: u16 = 0x0009;
const XOR_MAPPED_ADDRESS: u16 = 0x0020;
const PRIORITY: u16 = 0x0024;
const USE_CANDIDATE: u16 = 0x0025;
const FINGERPRINT: u16 = 0x8028;
const ICE_CONTROLLING: u16 = 0x802A;
const FINGERPRINT_XOR: u32 = 0x5354_554E;

/// The largest message this module writes.
pub const MAX_ANSWER: usize = 128;

/// Why a datagram is not a usable Binding request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StunError {
    /// Not a STUN message (RFC 7983: first byte, cookie, length).
    #[error("not a STUN message")]
    NotStun,
    /// A STUN message whose attributes do not parse.
    #[error("malformed STUN message")]
    Malformed,
    /// A STUN message other than a Binding request.
    #[error("not a Binding request")]
    NotBindingRequest,
    /// FINGERPRINT present and wrong.
    #[error("bad FINGERPRINT")]
    BadFingerprint,
    /// USERNAME or MESSAGE-INTEGRITY missing (answered 400).
    #[error("USERNAME or MESSAGE-INTEGRITY missing")]
    MissingCredentials,
    /// USERNAME not `<our ufrag>:…` (answered 401).
    #[error("unknown USERNAME")]
    UnknownUser,
    /// MESSAGE-INTEGRITY does not verify with our password (answered 401).
    #[error("bad MESSAGE-INTEGRITY")]
    BadIntegrity,
}

impl StunError {
    /// The error response this failure gets (RFC 5389 §10.1.2), if any:
    /// requests that cannot be trusted to be a Binding request get none.
    pub fn answer_code(self) -> Option<(u16, &'static str)> {
        match self {
            StunError::MissingCredentials => Some((400, "Bad Request")),
            StunError::UnknownUser | StunError::BadIntegrity => Some((401, "Unauthorized")),
            _ => None,
        }
    }
}

/// A Binding request that passed the checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Check {
    /// Its transaction ID.
    pub txid: [u8; 12],
    /// USE-CANDIDATE: the controlling agent nominates this pair.
    pub use_candidate: bool,
    /// ICE-CONTROLLING was present.
    pub controlling: bool,
    /// PRIORITY, if present.
    pub priority: Option<u32>,
}

/// Whether a datagram is STUN by RFC 7983's first-byte rule and the magic
/// cookie.
pub fn is_stun(b: &[u8]) -> bool {
    b.len() >= 20 && b[0] < 4 && u32::from_be_bytes([b[4], b[5], b[6], b[7]]) == MAGIC
}

/// The message type and transaction ID of a STUN message whose length
/// field fits the datagram.
pub fn header(b: &[u8]) -> Result<(u16, [u8; 12]), StunError> {
    if !is_stun(b) {
        return Err(StunError::NotStun);
    }
    let len = u16::from_be_bytes([b[2], b[3]]) as usize;
    if !len.is_multiple_of(4) || 20 + len != b.len() {
        return Err(StunError::NotStun);
    }
    let mut txid = [0u8; 12];
    txid.copy_from_slice(&b[8..20]);
    Ok((u16::from_be_bytes([b[0], b[1]]), txid))
}

/// Attributes of a message in order: (type, value, offset of the attribute
/// header). Stops at the first that does not fit.
fn attributes(b: &[u8]) -> impl Iterator<Item = Result<(u16, &[u8], usize), StunError>> {
    let mut at = 20;
    std::iter::from_fn(move || {
        if at >= b.len() {
            return None;
        }
        if at + 4 > b.len() {
            at = b.len();
            return Some(Err(StunError::Malformed));
        }
        let t = u16::from_be_bytes([b[at], b[at + 1]]);
        let l = u16::from_be_bytes([b[at + 2], b[at + 3]]) as usize;
        let start = at + 4;
        let padded = (l + 3) & !3;
        if start + padded > b.len() {
            at = b.len();
            return Some(Err(StunError::Malformed));
        }
        let item = (t, &b[start..start + l], at);
        at = start + padded;
        Some(Ok(item))
    })
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 20] {
    let mut m = <Hmac<Sha1> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

/// MESSAGE-INTEGRITY of `b[..mi_at]` (the header's length as if the message
/// ended after the MESSAGE-INTEGRITY attribute, RFC 5389 §15.4).
fn integrity(b: &[u8], mi_at: usize, key: &[u8]) -> [u8; 20] {
    let len = ((mi_at - 20 + 24) as u16).to_be_bytes();
    hmac(key, &[&b[..2], &len, &b[4..mi_at]])
}

/// FINGERPRINT of `b[..fp_at]` (length as if the message ended after it).
fn fingerprint(b: &[u8], fp_at: usize) -> u32 {
    let len = ((fp_at - 20 + 8) as u16).to_be_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..2]);
    h.update(&len);
    h.update(&b[4..fp_at]);
    h.finalize() ^ FINGERPRINT_XOR
}

/// Checks a Binding request against the relay's credentials for the leg:
/// USERNAME must be `local_ufrag:…` (RFC 8445 §7.3: the receiver's
/// fragment first), MESSAGE-INTEGRITY must verify with `local_pwd`, and a
/// FINGERPRINT, when present, must be right.
pub fn check_request(b: &[u8], local_ufrag: &str, local_pwd: &str) -> Result<Check, StunError> {
    let (ty, txid) = header(b)?;
    if ty != BINDING_REQUEST {
        return Err(StunError::NotBindingRequest);
    }
    let mut username = None;
    let mut mi = None;
    let mut check = Check { txid, use_candidate: false, controlling: false, priority: None };
    for a in attributes(b) {
        let (t, v, at) = a?;
        if mi.is_some() && t != FINGERPRINT {
            // Only FINGERPRINT may follow MESSAGE-INTEGRITY (§15.4).
            continue;
        }
        match t {
            USERNAME => username = Some(v),
            MESSAGE_INTEGRITY => {
                if v.len() != 20 {
                    return Err(StunError::Malformed);
                }
                mi = Some((v, at));
            }
            FINGERPRINT => {
                if v.len() != 4 || at + 8 != b.len() {
                    return Err(StunError::Malformed);
                }
                if u32::from_be_bytes([v[0], v[1], v[2], v[3]]) != fingerprint(b, at) {
                    return Err(StunError::BadFingerprint);
                }
            }
            USE_CANDIDATE => check.use_candidate = true,
            ICE_CONTROLLING => check.controlling = true,
            PRIORITY if v.len() == 4 => check.priority = Some(u32::from_be_bytes([v[0], v[1], v[2], v[3]])),
            _ => {}
        }
    }
    let (Some(user), Some((mac, mi_at))) = (username, mi) else {
        return Err(StunError::MissingCredentials);
    };
    let ours = local_ufrag.as_bytes();
    if user.len() <= ours.len() || &user[..ours.len()] != ours || user[ours.len()] != b':' {
        return Err(StunError::UnknownUser);
    }
    let want = integrity(b, mi_at, local_pwd.as_bytes());
    if !bool::from(want.ct_eq(mac)) {
        return Err(StunError::BadIntegrity);
    }
    Ok(check)
}

/// A small writer of STUN messages into a fixed buffer.
struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl<'a> Writer<'a> {
    fn new(out: &'a mut [u8], ty: u16, txid: &[u8; 12]) -> Writer<'a> {
        out[..2].copy_from_slice(&ty.to_be_bytes());
        out[2..4].copy_from_slice(&[0, 0]);
        out[4..8].copy_from_slice(&MAGIC.to_be_bytes());
        out[8..20].copy_from_slice(txid);
        Writer { out, len: 20 }
    }

    fn attr(&mut self, t: u16, v: &[u8]) {
        let at = self.len;
        self.out[at..at + 2].copy_from_slice(&t.to_be_bytes());
        self.out[at + 2..at + 4].copy_from_slice(&(v.len() as u16).to_be_bytes());
        self.out[at + 4..at + 4 + v.len()].copy_from_slice(v);
        let padded = (v.len() + 3) & !3;
        self.out[at + 4 + v.len()..at + 4 + padded].fill(0);
        self.len = at + 4 + padded;
        let body = (self.len - 20) as u16;
        self.out[2..4].copy_from_slice(&body.to_be_bytes());
    }

    fn integrity(&mut self, key: &[u8]) {
        let at = self.len;
        let mac = integrity(self.out, at, key);
        self.attr(MESSAGE_INTEGRITY, &mac);
    }

    fn fingerprint(mut self) -> usize {
        let at = self.len;
        let fp = fingerprint(self.out, at);
        self.attr(FINGERPRINT, &fp.to_be_bytes());
        self.len
    }
}

fn xor_address(from: SocketAddr, txid: &[u8; 12], v: &mut [u8; 20]) -> usize {
    let cookie = MAGIC.to_be_bytes();
    let port = from.port() ^ (MAGIC >> 16) as u16;
    v[0] = 0;
    v[2..4].copy_from_slice(&port.to_be_bytes());
    match from.ip() {
        IpAddr::V4(ip) => {
            v[1] = 1;
            for (i, o) in ip.octets().iter().enumerate() {
                v[4 + i] = o ^ cookie[i];
            }
            8
        }
        IpAddr::V6(ip) => {
            v[1] = 2;
            let mut mask = [0u8; 16];
            mask[..4].copy_from_slice(&cookie);
            mask[4..].copy_from_slice(txid);
            for (i, o) in ip.octets().iter().enumerate() {
                v[4 + i] = o ^ mask[i];
            }
            20
        }
    }
}

/// Writes the Binding success response to `check` from `from`:
/// XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY with `local_pwd`, FINGERPRINT.
/// Returns its length (at most [`MAX_ANSWER`]).
pub fn success(txid: &[u8; 12], from: SocketAddr, local_pwd: &str, out: &mut [u8; MAX_ANSWER]) -> usize {
    let mut w = Writer::new(out, BINDING_SUCCESS, txid);
    let mut v = [0u8; 20];
    let n = xor_address(from, txid, &mut v);
    w.attr(XOR_MAPPED_ADDRESS, &v[..n]);
    w.integrity(local_pwd.as_bytes());
    w.fingerprint()
}

/// Writes a Binding error response (ERROR-CODE, FINGERPRINT; no integrity:
/// the request's credentials were not trusted). Returns its length.
pub fn error(txid: &[u8; 12], code: u16, reason: &str, out: &mut [u8; MAX_ANSWER]) -> usize {
    let mut w = Writer::new(out, BINDING_ERROR, txid);
    let mut v = [0u8; 64];
    let r = &reason.as_bytes()[..reason.len().min(60)];
    v[2] = (code / 100) as u8;
    v[3] = (code % 100) as u8;
    v[4..4 + r.len()].copy_from_slice(r);
    w.attr(ERROR_CODE, &v[..4 + r.len()]);
    w.fingerprint()
}

/// The client side (the load generator and tests play the browser):
/// writes a Binding request with USERNAME `remote_ufrag:local_ufrag`,
/// PRIORITY, ICE-CONTROLLING, USE-CANDIDATE when nominating,
/// MESSAGE-INTEGRITY with the remote password and FINGERPRINT.
pub fn request(
    txid: &[u8; 12],
    username: &str,
    remote_pwd: &str,
    priority: u32,
    nominate: bool,
    out: &mut [u8; MAX_ANSWER],
) -> usize {
    let mut w = Writer::new(out, BINDING_REQUEST, txid);
    w.attr(USERNAME, &username.as_bytes()[..username.len().min(64)]);
    w.attr(PRIORITY, &priority.to_be_bytes());
    w.attr(ICE_CONTROLLING, &[0x5a; 8]);
    if nominate {
        w.attr(USE_CANDIDATE, &[]);
    }
    w.integrity(remote_pwd.as_bytes());
    w.fingerprint()
}

/// What a Binding response says (the client side): the mapped address of
/// a success that verifies with `pwd`, or the error code.
pub fn parse_response(b: &[u8], pwd: &str) -> Result<Result<SocketAddr, u16>, StunError> {
    let (ty, txid) = header(b)?;
    let mut mapped = None;
    let mut code = None;
    let mut verified = false;
    for a in attributes(b) {
        let (t, v, at) = a?;
        match t {
            XOR_MAPPED_ADDRESS if v.len() >= 8 => {
                let port = u16::from_be_bytes([v[2], v[3]]) ^ (MAGIC >> 16) as u16;
                let cookie = MAGIC.to_be_bytes();
                mapped = match (v[1], v.len()) {
                    (1, 8) => {
                        let o: [u8; 4] = std::array::from_fn(|i| v[4 + i] ^ cookie[i]);
                        Some(SocketAddr::from((o, port)))
                    }
                    (2, 20) => {
                        let mut mask = [0u8; 16];
                        mask[..4].copy_from_slice(&cookie);
                        mask[4..].copy_from_slice(&txid);
                        let o: [u8; 16] = std::array::from_fn(|i| v[4 + i] ^ mask[i]);
                        Some(SocketAddr::from((o, port)))
                    }
                    _ => return Err(StunError::Malformed),
                };
            }
            ERROR_CODE if v.len() >= 4 => code = Some(v[2] as u16 % 8 * 100 + v[3] as u16 % 100),
            MESSAGE_INTEGRITY if v.len() == 20 => {
                verified = bool::from(integrity(b, at, pwd.as_bytes()).ct_eq(v));
            }
            _ => {}
        }
    }
    match ty {
        BINDING_SUCCESS if verified => mapped.map(Ok).ok_or(StunError::Malformed),
        BINDING_SUCCESS => Err(StunError::BadIntegrity),
        BINDING_ERROR => Ok(Err(code.unwrap_or(0))),
        _ => Err(StunError::NotBindingRequest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vectors() -> serde_json::Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/vectors/stun.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn bytes(v: &serde_json::Value, k: &str) -> Vec<u8> {
        hex::decode(v[k].as_str().unwrap()).unwrap()
    }

    #[test]
    fn rfc5769_request_checks_and_tampering_is_caught() {
        let v = vectors();
        let req = bytes(&v["request"], "message");
        let pwd = v["request"]["password"].as_str().unwrap();
        let c = check_request(&req, "evtj", pwd).unwrap();
        assert_eq!(hex::encode(c.txid), "b7e7a701bc34d686fa87dfae");
        assert_eq!(c.priority, Some(0x6e0001ff));
        assert!(!c.controlling && !c.use_candidate);
        assert_eq!(check_request(&req, "h6vY", pwd), Err(StunError::UnknownUser));
        assert_eq!(check_request(&req, "evtj", "wrong"), Err(StunError::BadIntegrity));
        // Any byte changed before the FINGERPRINT attribute breaks it (a
        // changed attribute type there makes it an unknown attribute,
        // which is ignored: FINGERPRINT is optional).
        for i in 0..req.len() - 8 {
            let mut t = req.clone();
            t[i] ^= 1;
            assert!(check_request(&t, "evtj", pwd).is_err(), "byte {i}");
        }
        // Truncations never panic and never pass.
        for n in 0..req.len() {
            assert!(check_request(&req[..n], "evtj", pwd).is_err());
        }
    }

    #[test]
    fn rfc5769_responses_parse_to_their_addresses() {
        let v = vectors();
        for k in ["response_ipv4", "response_ipv6"] {
            let msg = bytes(&v[k], "message");
            let pwd = v[k]["password"].as_str().unwrap();
            let want: SocketAddr = v[k]["mapped"].as_str().unwrap().parse().unwrap();
            assert_eq!(parse_response(&msg, pwd), Ok(Ok(want)), "{k}");
            assert_eq!(parse_response(&msg, "other"), Err(StunError::BadIntegrity), "{k}");
        }
    }

    #[test]
    fn our_answers_have_the_vectors_integrity_and_fingerprint() {
        // The RFC's IPv4 response, rebuilt without its SOFTWARE attribute,
        // must verify; and our success answers parse back.
        let v = vectors();
        let pwd = v["response_ipv4"]["password"].as_str().unwrap();
        let txid: [u8; 12] = hex::decode("b7e7a701bc34d686fa87dfae").unwrap().try_into().unwrap();
        for from in ["192.0.2.1:32853", "[2001:db8:1234:5678:11:2233:4455:6677]:32853"] {
            let from: SocketAddr = from.parse().unwrap();
            let mut out = [0u8; MAX_ANSWER];
            let n = success(&txid, from, pwd, &mut out);
            assert_eq!(parse_response(&out[..n], pwd), Ok(Ok(from)));
        }
        let mut out = [0u8; MAX_ANSWER];
        let n = error(&txid, 401, "Unauthorized", &mut out);
        assert_eq!(parse_response(&out[..n], pwd), Ok(Err(401)));
    }

    #[test]
    fn client_requests_check_on_the_relay_side() {
        let txid = [7u8; 12];
        let mut out = [0u8; MAX_ANSWER];
        let n = request(&txid, "relayufr:peer", "relaypassword0123456789", 1234, true, &mut out);
        let c = check_request(&out[..n], "relayufr", "relaypassword0123456789").unwrap();
        assert!(c.use_candidate && c.controlling);
        assert_eq!(c.priority, Some(1234));
        assert_eq!(check_request(&out[..n], "relayufx", "relaypassword0123456789"), Err(StunError::UnknownUser));
        assert_eq!(check_request(&out[..n], "relayufr", "x").unwrap_err().answer_code(), Some((401, "Unauthorized")));
    }
}
