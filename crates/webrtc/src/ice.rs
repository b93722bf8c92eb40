//! ICE-lite credentials and candidates of a relay leg (RFC 8445 §5.3,
//! RFC 8839).

use rand::{Rng, TryRngCore};
use std::net::SocketAddr;

const ICE_CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The relay's `ice-ufrag` and `ice-pwd` for one leg, and the peer's.
/// The browser's end ([`crate::client::Client`]) keeps its own in the same
/// shape, with the relay's as `remote`.
#[derive(Clone, PartialEq, Eq)]
pub struct IceCreds {
    /// The relay's username fragment (8 characters: 48 bits).
    pub ufrag: String,
    /// The relay's password (24 characters: 144 bits, RFC 8445 asks 128).
    pub pwd: String,
    /// The peer's fragment and password from its SDP.
    pub remote: Option<(String, String)>,
}

impl std::fmt::Debug for IceCreds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IceCreds({}, redacted)", self.ufrag)
    }
}

impl IceCreds {
    /// Fresh random credentials.
    pub fn generate() -> IceCreds {
        // rand 0.9's OsRng is fallible; `unwrap_err` panics where the OS has
        // no randomness, as the 0.8 one did: no credentials can be made then.
        let mut rng = rand::rngs::OsRng.unwrap_err();
        let mut pick =
            |n: usize| -> String { (0..n).map(|_| ICE_CHARS[rng.random_range(0..ICE_CHARS.len())] as char).collect() };
        IceCreds { ufrag: pick(8), pwd: pick(24), remote: None }
    }
}

/// Whether an `ice-ufrag`/`ice-pwd` value is made of ICE characters
/// (RFC 8839 §5.4) and of a sane length.
pub fn valid_credential(v: &str, min: usize) -> bool {
    (min..=256).contains(&v.len()) && v.bytes().all(|b| ICE_CHARS.contains(&b))
}

/// The `a=candidate` value of the relay's host candidate for a component
/// (RFC 8839 §5.1): priority by RFC 8445 §5.1.2.1 with type preference 126
/// and local preference 65535.
pub fn host_candidate(foundation: u32, component: u8, addr: SocketAddr) -> String {
    let priority: u32 = (126 << 24) | (65535 << 8) | (256 - component as u32);
    format!("{foundation} {component} UDP {priority} {} {} typ host", addr.ip(), addr.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_random_ice_characters() {
        let a = IceCreds::generate();
        let b = IceCreds::generate();
        assert!(valid_credential(&a.ufrag, 4) && valid_credential(&a.pwd, 22));
        assert_ne!(a.ufrag, b.ufrag);
        assert_ne!(a.pwd, b.pwd);
        assert!(!valid_credential("ab:c", 4));
        assert!(!valid_credential("abc", 4));
        assert!(!format!("{a:?}").contains(&a.pwd));
    }

    #[test]
    fn host_candidate_line() {
        let c = host_candidate(1, 1, "198.18.0.1:30000".parse().unwrap());
        assert_eq!(c, "1 1 UDP 2130706431 198.18.0.1 30000 typ host");
        assert!(host_candidate(1, 2, "[2001:db8::1]:5".parse().unwrap()).contains(" 2130706430 2001:db8::1 5 "));
    }
}
