//! SDES keys (RFC 4568): which suites a leg may be offered, the relay's
//! fresh keys with the requested session parameters, whether a key changed,
//! and the policy a worker builds a context from.
//!
//! Keys come from the OS generator; `OsRng.unwrap_err()` panics where the
//! OS has no randomness (rand 0.9 made OsRng fallible), so no key is ever
//! weak.

use crate::command::Keying;
use crate::record;
use rand::{rngs::OsRng, TryRngCore};
use srtp::Suite;
use srtpgate_ng::Sdes;
use srtpgate_sdp::crypto::CryptoAttr;

/// The suites allowed by the configuration and the request's SDES options.
pub(crate) fn allowed_suites(configured: &[Suite], sdes: &[Sdes]) -> Vec<Suite> {
    let only: Vec<Suite> =
        sdes.iter().filter_map(|s| if let Sdes::Only(n) = s { n.parse().ok() } else { None }).collect();
    let no: Vec<Suite> = sdes.iter().filter_map(|s| if let Sdes::No(n) = s { n.parse().ok() } else { None }).collect();
    let base: Vec<Suite> = if only.is_empty() { configured.to_vec() } else { only };
    base.into_iter().filter(|s| !no.contains(s)).collect()
}

/// A fresh relay key of `suite` under crypto tag `tag`.
pub(crate) fn fresh(tag: u32, suite: Suite) -> CryptoAttr {
    CryptoAttr::generate(tag, suite, &mut OsRng.unwrap_err())
}

/// A fresh key in place of `k`: its tag, suite and session parameters.
pub(crate) fn renewed(k: &CryptoAttr) -> CryptoAttr {
    let mut n = fresh(k.tag, k.suite);
    n.session_params = k.session_params.clone();
    n
}

/// Applies the SDES session-parameter options to a generated key.
pub(crate) fn with_params(mut k: CryptoAttr, sdes: &[Sdes]) -> CryptoAttr {
    for o in sdes {
        let p = match o {
            Sdes::UnencryptedSrtp => "UNENCRYPTED_SRTP",
            Sdes::UnencryptedSrtcp => "UNENCRYPTED_SRTCP",
            _ => continue,
        };
        if !k.session_params.iter().any(|x| x == p) {
            k.session_params.push(p.to_string());
        }
    }
    if sdes.contains(&Sdes::Lifetime) {
        for key in &mut k.keys {
            key.lifetime = Some(1 << 31);
        }
    }
    k
}

/// Whether two crypto lines give the same keys and parameters (the tag, a
/// name for the line, does not count: a context is kept across a new tag).
pub(crate) fn same_key(a: &Option<CryptoAttr>, b: &Option<CryptoAttr>) -> bool {
    let material = |c: &CryptoAttr| {
        let keys: Vec<_> = c.keys.iter().map(|k| (k.key_salt.to_vec(), k.lifetime, k.mki)).collect();
        (c.suite, keys, c.session_params.clone())
    };
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => material(x) == material(y),
        _ => false,
    }
}

/// The policy of a key agreed in SDP, checked so that a worker can build
/// its context.
pub(crate) fn keying(k: &CryptoAttr, libsrtp_aes192_kdf: bool) -> Result<Keying, String> {
    let mut p = k.policy().map_err(|e| format!("a=crypto tag {}: {e}", k.tag))?;
    p.libsrtp_aes192_kdf = libsrtp_aes192_kdf;
    p.check().map_err(|e| format!("a=crypto tag {}: {e}", k.tag))?;
    Ok(Keying::new(p))
}

/// The tag of a leg's sending key for its worker (see
/// [`LegSetup::tx_key`](crate::command::LegSetup::tx_key)).
pub(crate) fn key_tag(k: &Option<CryptoAttr>) -> u64 {
    k.as_ref().map_or(0, |k| record::key_tag(&record::key_id(k)))
}
