//! Fuzz logic of the NG control protocol (`srtpgate-ng`).
//!
//! The input is a whole datagram (`COOKIE SPACE BENCODE`); it is also tried
//! as a bare body, so the fuzzer reaches the request parser without having
//! to find a cookie first.

use srtpgate_ng::{bencode, parse_reply, parse_request, reply, split, Value, MAX_COOKIE};

/// The `ng_message` target: `split` and `parse_request` never panic; a parsed
/// request re-encoded (keys sorted) parses to an equal request; any value
/// that decodes re-encodes to bytes that decode to the same value; error
/// texts stay short and make a reply that parses back.
pub fn ng_message(data: &[u8]) {
    check_bencode(data);
    match split(data) {
        Ok((cookie, body)) => {
            assert!(!cookie.is_empty() && cookie.len() <= MAX_COOKIE, "cookie of {} bytes", cookie.len());
            assert!(!cookie.contains(&b' '));
            check_bencode(body);
            check_request(cookie, body);
        }
        Err(e) => check_error(b"fuzz", &e.to_string()),
    }
    check_request(b"raw", data);
}

fn check_bencode(data: &[u8]) {
    let Ok(v) = bencode::decode(data) else {
        return;
    };
    let bytes = v.to_bytes();
    assert_eq!(bytes.len(), data.len(), "canonical bencode changed length on re-encoding");
    let again = bencode::decode(&bytes).expect("re-encoded bencode does not decode");
    assert_eq!(again, v, "decode -> encode -> decode changed the value");
    assert_eq!(again.to_bytes(), bytes, "encoding is not stable");
}

fn check_request(cookie: &[u8], body: &[u8]) {
    match parse_request(body) {
        Ok(req) => {
            assert!(matches!(req.raw, Value::Dict(_)));
            let again = parse_request(&req.raw.to_bytes()).expect("re-encoded request is refused");
            assert_eq!(again, req, "re-encoded request parses differently");
            for w in &req.warnings {
                assert!(w.len() <= 512, "warning of {} bytes", w.len());
            }
        }
        Err(e) => check_error(cookie, &e.to_string()),
    }
}

fn check_error(cookie: &[u8], reason: &str) {
    assert!(!reason.is_empty() && reason.len() <= 512, "error text of {} bytes: {reason:.80}", reason.len());
    let datagram = reply(cookie, &srtpgate_ng::error(reason));
    let (c, v) = parse_reply(&datagram).expect("error reply does not parse");
    assert_eq!(c, cookie);
    assert_eq!(v.get("error-reason").and_then(Value::as_str), Some(reason));
}
