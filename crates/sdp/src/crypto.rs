//! SDES: the `a=crypto` attribute of RFC 4568 (with the suites of RFC 6188 and
//! RFC 7714 §14).
//!
//! ```text
//! a=crypto:<tag> <crypto-suite> <key-params> [<session-param> ...]
//! key-params = key-param *(";" key-param)
//! key-param  = "inline:" <base64 key||salt> ["|" lifetime] ["|" mki-value ":" mki-length]
//! lifetime   = decimal / "2^" decimal
//! ```
//!
//! Key bytes are held in [`Zeroizing`] buffers and never appear in `Debug`
//! output or in error messages. `Display` writes the attribute value (with
//! the key, in standard base64 with padding): that is what goes on the wire.

use base64::Engine as _;
use core::fmt;
use srtp::Suite;
use zeroize::Zeroizing;

/// Most key parameters accepted in one `a=crypto` line.
pub const MAX_KEYS: usize = 16;
/// Most session parameters accepted in one `a=crypto` line.
pub const MAX_SESSION_PARAMS: usize = 16;
/// Largest lifetime accepted, decimal or `2^N` (the SRTP index space, 2^48).
pub const MAX_LIFETIME: u64 = 1 << 48;

/// An error in one `a=crypto` attribute value. Messages never contain key
/// material.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The attribute does not follow the RFC 4568 grammar.
    #[error("malformed a=crypto: {0}")]
    Malformed(&'static str),
    /// The tag is not 1 to 9 decimal digits.
    #[error("malformed a=crypto: the tag must be 1 to 9 decimal digits")]
    BadTag,
    /// A crypto suite this relay does not know. Not malformed: an offer may
    /// list suites the answerer skips.
    #[error("unknown crypto suite {0:?}")]
    UnknownSuite(String),
    /// A key method other than `inline`.
    #[error("unsupported key method {0:?} (only inline is supported)")]
    UnsupportedKeyMethod(String),
    /// The key is not valid base64.
    #[error("malformed a=crypto: the inline key is not valid base64")]
    BadBase64,
    /// The decoded key ∥ salt has the wrong length for the suite.
    #[error("{suite} needs {expected} bytes of master key and salt, the inline key has {got}")]
    KeyLength {
        /// The suite of the attribute.
        suite: Suite,
        /// Master key length plus master salt length of the suite.
        expected: usize,
        /// Decoded length.
        got: usize,
    },
    /// A lifetime that is not decimal or `2^N`, is 0, or exceeds 2^48.
    #[error("bad key lifetime {0:?} (decimal or 2^N, 1 to 2^48)")]
    BadLifetime(String),
    /// A malformed MKI, one whose value does not fit its length, or MKIs that
    /// disagree between the keys of one attribute.
    #[error("bad MKI: {0}")]
    BadMki(String),
    /// More keys than [`MAX_KEYS`].
    #[error("too many keys in one a=crypto (at most {MAX_KEYS})")]
    TooManyKeys,
    /// A malformed known session parameter (KDR, WSH, FEC_ORDER), or more
    /// than [`MAX_SESSION_PARAMS`].
    #[error("bad session parameter {0:?}")]
    BadSessionParam(String),
}

/// One key parameter: master key ∥ master salt, with optional lifetime and MKI.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyParam {
    /// Master key followed by master salt.
    pub key_salt: Zeroizing<Vec<u8>>,
    /// Lifetime in packets.
    pub lifetime: Option<u64>,
    /// MKI: (value, length in bytes); the value is written big-endian in
    /// `length` bytes of each packet.
    pub mki: Option<(u64, u8)>,
}

impl fmt::Debug for KeyParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyParam")
            .field("key_salt", &format_args!("<{} bytes redacted>", self.key_salt.len()))
            .field("lifetime", &self.lifetime)
            .field("mki", &self.mki)
            .finish()
    }
}

impl KeyParam {
    /// The MKI as the bytes carried in packets: the value big-endian in
    /// `length` bytes (empty without an MKI).
    pub fn mki_bytes(&self) -> Vec<u8> {
        let Some((value, len)) = self.mki else {
            return Vec::new();
        };
        let len = len as usize;
        let be = value.to_be_bytes();
        let mut out = vec![0u8; len];
        // The low min(len, 8) bytes of the value go at the end.
        let n = len.min(8);
        if let (Some(dst), Some(src)) = (out.get_mut(len - n..), be.get(8 - n..)) {
            dst.copy_from_slice(src);
        }
        out
    }
}

impl fmt::Display for KeyParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b64 = Zeroizing::new(base64::engine::general_purpose::STANDARD.encode(self.key_salt.as_slice()));
        write!(f, "inline:{}", b64.as_str())?;
        if let Some(lt) = self.lifetime {
            if lt >= 2 && lt.is_power_of_two() {
                write!(f, "|2^{}", lt.trailing_zeros())?;
            } else {
                write!(f, "|{lt}")?;
            }
        }
        if let Some((v, l)) = self.mki {
            write!(f, "|{v}:{l}")?;
        }
        Ok(())
    }
}

/// A parsed `a=crypto` attribute.
#[derive(Clone, PartialEq, Eq)]
pub struct CryptoAttr {
    /// The tag (1 to 9 digits) that an answer echoes.
    pub tag: u32,
    /// The crypto suite.
    pub suite: Suite,
    /// One or more keys; with more than one, each has an MKI of one length.
    pub keys: Vec<KeyParam>,
    /// Session parameters, verbatim (`KDR=n`, `UNENCRYPTED_SRTP`, `WSH=n`, ...).
    pub session_params: Vec<String>,
}

impl fmt::Debug for CryptoAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let params: Vec<&str> = self
            .session_params
            .iter()
            .map(|p| if has_prefix_ci(p, "FEC_KEY=") { "FEC_KEY=<redacted>" } else { p.as_str() })
            .collect();
        f.debug_struct("CryptoAttr")
            .field("tag", &self.tag)
            .field("suite", &self.suite)
            .field("keys", &self.keys)
            .field("session_params", &params)
            .finish()
    }
}

impl fmt::Display for CryptoAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} ", self.tag, self.suite.name())?;
        for (i, k) in self.keys.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            write!(f, "{k}")?;
        }
        for p in &self.session_params {
            write!(f, " {p}")?;
        }
        Ok(())
    }
}

fn has_prefix_ci(s: &str, prefix: &str) -> bool {
    s.len() >= prefix.len()
        && s.as_bytes().get(..prefix.len()).is_some_and(|p| p.eq_ignore_ascii_case(prefix.as_bytes()))
}

/// Strips an ASCII case-insensitive prefix.
fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    if has_prefix_ci(s, prefix) {
        s.get(prefix.len()..)
    } else {
        None
    }
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Suite names used by deployed software for the RFC 6188 suites (FreeSWITCH,
/// older Linphone, some SBCs write the key size after `AES_CM`).
fn parse_suite(name: &str) -> Result<Suite, CryptoError> {
    if let Ok(s) = name.parse::<Suite>() {
        return Ok(s);
    }
    let alias = match name.to_ascii_uppercase().as_str() {
        "AES_CM_192_HMAC_SHA1_80" => Some(Suite::AES_192_CM_HMAC_SHA1_80),
        "AES_CM_192_HMAC_SHA1_32" => Some(Suite::AES_192_CM_HMAC_SHA1_32),
        "AES_CM_256_HMAC_SHA1_80" => Some(Suite::AES_256_CM_HMAC_SHA1_80),
        "AES_CM_256_HMAC_SHA1_32" => Some(Suite::AES_256_CM_HMAC_SHA1_32),
        _ => None,
    };
    alias.ok_or_else(|| CryptoError::UnknownSuite(name.chars().take(64).collect()))
}

fn parse_lifetime(s: &str) -> Result<u64, CryptoError> {
    let bad = || CryptoError::BadLifetime(s.chars().take(32).collect());
    let v = if let Some(exp) = s.strip_prefix("2^") {
        if !all_digits(exp) || exp.len() > 2 {
            return Err(bad());
        }
        let n: u32 = exp.parse().map_err(|_| bad())?;
        if n > 48 {
            return Err(bad());
        }
        1u64 << n
    } else {
        if !all_digits(s) || s.len() > 20 {
            return Err(bad());
        }
        s.parse::<u64>().map_err(|_| bad())?
    };
    if v == 0 || v > MAX_LIFETIME {
        return Err(bad());
    }
    Ok(v)
}

fn parse_mki(s: &str) -> Result<(u64, u8), CryptoError> {
    let shown = || s.chars().take(32).collect::<String>();
    let (v, l) = s.split_once(':').ok_or_else(|| CryptoError::BadMki(format!("{:?} is not value:length", shown())))?;
    if !all_digits(v) || !all_digits(l) || l.len() > 3 || v.len() > 20 {
        return Err(CryptoError::BadMki(format!("{:?} is not value:length", shown())));
    }
    let len: u8 = l
        .parse::<u16>()
        .ok()
        .filter(|n| (1..=128).contains(n))
        .and_then(|n| u8::try_from(n).ok())
        .ok_or_else(|| CryptoError::BadMki(format!("length {l} is not 1 to 128")))?;
    let value: u64 = v.parse().map_err(|_| CryptoError::BadMki(format!("value {v} is too large")))?;
    if len < 8 && value >> (8 * u32::from(len)) != 0 {
        return Err(CryptoError::BadMki(format!("value {value} does not fit in {len} bytes")));
    }
    Ok((value, len))
}

fn parse_key_param(suite: Suite, s: &str) -> Result<KeyParam, CryptoError> {
    let (method, info) = s.split_once(':').ok_or(CryptoError::Malformed("a key parameter has no key method"))?;
    if !method.eq_ignore_ascii_case("inline") {
        return Err(CryptoError::UnsupportedKeyMethod(method.chars().take(32).collect()));
    }
    let mut parts = info.split('|');
    let b64 = parts.next().unwrap_or_default();
    if b64.is_empty() {
        return Err(CryptoError::BadBase64);
    }
    let engine = &base64::engine::general_purpose::STANDARD;
    let raw = match engine.decode(b64) {
        Ok(v) => Zeroizing::new(v),
        Err(_) => Zeroizing::new(
            base64::engine::general_purpose::STANDARD_NO_PAD.decode(b64).map_err(|_| CryptoError::BadBase64)?,
        ),
    };
    let expected = suite.master_key_len() + suite.master_salt_len();
    if raw.len() != expected {
        return Err(CryptoError::KeyLength { suite, expected, got: raw.len() });
    }
    let mut lifetime = None;
    let mut mki = None;
    for part in parts {
        if part.contains(':') {
            if mki.is_some() {
                return Err(CryptoError::BadMki("more than one MKI in a key".into()));
            }
            mki = Some(parse_mki(part)?);
        } else {
            if lifetime.is_some() || mki.is_some() {
                return Err(CryptoError::BadLifetime(part.chars().take(32).collect()));
            }
            lifetime = Some(parse_lifetime(part)?);
        }
    }
    Ok(KeyParam { key_salt: raw, lifetime, mki })
}

fn check_session_param(p: &str) -> Result<(), CryptoError> {
    let bad = || CryptoError::BadSessionParam(p.chars().take(32).collect());
    if let Some(v) = strip_prefix_ci(p, "KDR=") {
        if !all_digits(v) || v.len() > 2 || v.parse::<u8>().map_or(true, |n| n > 24) {
            return Err(bad());
        }
    } else if let Some(v) = strip_prefix_ci(p, "WSH=") {
        if !all_digits(v) || v.len() > 10 || v.parse::<u32>().map_or(true, |n| n < 64) {
            return Err(bad());
        }
    } else if let Some(v) = strip_prefix_ci(p, "FEC_ORDER=") {
        if !v.eq_ignore_ascii_case("FEC_SRTP") && !v.eq_ignore_ascii_case("SRTP_FEC") {
            return Err(bad());
        }
    }
    Ok(())
}

fn is_wsp(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl CryptoAttr {
    /// Parses the value of an `a=crypto:` attribute (the text after the
    /// colon). Surrounding whitespace is ignored.
    pub fn parse(value: &str) -> Result<CryptoAttr, CryptoError> {
        let mut it = value.split(is_wsp).filter(|t| !t.is_empty());
        let tag = it.next().ok_or(CryptoError::Malformed("empty attribute"))?;
        if !all_digits(tag) || tag.len() > 9 {
            return Err(CryptoError::BadTag);
        }
        let tag: u32 = tag.parse().map_err(|_| CryptoError::BadTag)?;
        let suite = parse_suite(it.next().ok_or(CryptoError::Malformed("no crypto suite"))?)?;
        let key_params = it.next().ok_or(CryptoError::Malformed("no key parameters"))?;
        let mut keys = Vec::new();
        for kp in key_params.split(';') {
            if keys.len() == MAX_KEYS {
                return Err(CryptoError::TooManyKeys);
            }
            keys.push(parse_key_param(suite, kp)?);
        }
        if keys.len() > 1 {
            let len = keys.first().and_then(|k| k.mki).map(|m| m.1);
            let mut seen = Vec::with_capacity(keys.len());
            for k in &keys {
                let Some((v, l)) = k.mki else {
                    return Err(CryptoError::BadMki("every key needs an MKI when there are several".into()));
                };
                if Some(l) != len {
                    return Err(CryptoError::BadMki("the keys' MKI lengths differ".into()));
                }
                if seen.contains(&v) {
                    return Err(CryptoError::BadMki(format!("MKI value {v} is used twice")));
                }
                seen.push(v);
            }
        }
        let mut session_params = Vec::new();
        for p in it {
            if session_params.len() == MAX_SESSION_PARAMS {
                return Err(CryptoError::BadSessionParam("too many session parameters".into()));
            }
            check_session_param(p)?;
            session_params.push(p.to_string());
        }
        Ok(CryptoAttr { tag, suite, keys, session_params })
    }

    /// A fresh attribute with one random master key and salt of the suite's
    /// lengths, no lifetime, no MKI and no session parameters.
    pub fn generate(tag: u32, suite: Suite, rng: &mut impl rand::CryptoRng) -> CryptoAttr {
        let mut key_salt = Zeroizing::new(vec![0u8; suite.master_key_len() + suite.master_salt_len()]);
        rng.fill_bytes(&mut key_salt);
        CryptoAttr {
            tag,
            suite,
            keys: vec![KeyParam { key_salt, lifetime: None, mki: None }],
            session_params: Vec::new(),
        }
    }

    /// The master keys for the SRTP library, with MKI bytes and lifetime.
    pub fn master_keys(&self) -> Result<Vec<srtp::MasterKey>, srtp::Error> {
        let kl = self.suite.master_key_len();
        self.keys
            .iter()
            .map(|k| {
                let (key, salt) = k
                    .key_salt
                    .split_at_checked(kl)
                    .ok_or_else(|| srtp::Error::InvalidKey(format!("{} needs a {kl}-byte master key", self.suite)))?;
                let mut mk = srtp::MasterKey::new(self.suite, key, salt)?;
                if k.mki.is_some() {
                    mk = mk.with_mki(&k.mki_bytes());
                }
                if let Some(lt) = k.lifetime {
                    mk = mk.with_lifetime(lt);
                }
                Ok(mk)
            })
            .collect()
    }

    /// An SRTP policy for these keys: suite, keys, key derivation rate and
    /// the UNENCRYPTED_SRTP/SRTCP flags (other fields at their defaults).
    /// `UNAUTHENTICATED_SRTP` is refused: the SRTP library always authenticates.
    pub fn policy(&self) -> Result<srtp::Policy, srtp::Error> {
        if self.unauthenticated_srtp() {
            return Err(srtp::Error::InvalidPolicy("UNAUTHENTICATED_SRTP is not supported".into()));
        }
        let mut keys = self.master_keys()?.into_iter();
        let first = keys.next().ok_or_else(|| srtp::Error::InvalidPolicy("no master key".into()))?;
        let mut p = srtp::Policy::new(self.suite, first);
        p.keys.extend(keys);
        p.kdr = self.kdr().map_or(0, |n| 1u64 << n);
        p.encrypt_rtp = !self.unencrypted_srtp();
        p.encrypt_rtcp = !self.unencrypted_srtcp();
        Ok(p)
    }

    fn has_flag(&self, flag: &str) -> bool {
        self.session_params.iter().any(|p| p.eq_ignore_ascii_case(flag))
    }

    /// `UNENCRYPTED_SRTP` is present (RFC 4568 §6.3.2).
    pub fn unencrypted_srtp(&self) -> bool {
        self.has_flag("UNENCRYPTED_SRTP")
    }

    /// `UNENCRYPTED_SRTCP` is present (RFC 4568 §6.3.2).
    pub fn unencrypted_srtcp(&self) -> bool {
        self.has_flag("UNENCRYPTED_SRTCP")
    }

    /// `UNAUTHENTICATED_SRTP` is present (RFC 4568 §6.3.3).
    pub fn unauthenticated_srtp(&self) -> bool {
        self.has_flag("UNAUTHENTICATED_SRTP")
    }

    /// The key derivation rate exponent of a `KDR=n` parameter (rate 2^n,
    /// n in 0..=24; RFC 4568 §6.3.1), if present and valid.
    pub fn kdr(&self) -> Option<u8> {
        self.session_params
            .iter()
            .find_map(|p| strip_prefix_ci(p, "KDR="))
            .filter(|v| all_digits(v) && v.len() <= 2)
            .and_then(|v| v.parse::<u8>().ok())
            .filter(|n| *n <= 24)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const RFC_KEY: &str = "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR";

    #[test]
    fn rfc4568_examples() {
        let c = CryptoAttr::parse(&format!("1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}|2^20|1:32")).unwrap();
        assert_eq!(c.tag, 1);
        assert_eq!(c.suite, Suite::AES_CM_128_HMAC_SHA1_80);
        assert_eq!(c.keys.len(), 1);
        assert_eq!(c.keys[0].key_salt.len(), 30);
        assert_eq!(c.keys[0].lifetime, Some(1 << 20));
        assert_eq!(c.keys[0].mki, Some((1, 32)));
        let mk = c.master_keys().unwrap();
        assert_eq!(mk[0].mki().len(), 32);
        assert_eq!(mk[0].mki()[31], 1);

        let c = CryptoAttr::parse(
            "1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz|2^20|1:4 FEC_ORDER=FEC_SRTP",
        )
        .unwrap();
        assert_eq!(c.session_params, vec!["FEC_ORDER=FEC_SRTP".to_string()]);
        assert_eq!(c.keys[0].mki_bytes(), vec![0, 0, 0, 1]);

        // §9.1 example with two keys.
        let c = CryptoAttr::parse(&format!(
            "1 AES_CM_128_HMAC_SHA1_32 inline:{RFC_KEY}|2^20|1:4;inline:QUJjZGVmMTIzNDU2Nzg5QUJDREUwMTIzNDU2Nzg5|2^20|2:4"
        ))
        .unwrap();
        assert_eq!(c.keys.len(), 2);
        assert_eq!(c.keys[1].mki, Some((2, 4)));
        assert_eq!(c.master_keys().unwrap().len(), 2);
        assert_eq!(c.policy().unwrap().keys.len(), 2);

        let c = CryptoAttr::parse(concat!(
            "2 F8_128_HMAC_SHA1_80 inline:MTIzNDU2Nzg5QUJDREUwMTIzNDU2Nzg5QUJjZGVm|2^20|1:4;",
            "inline:QUJjZGVmMTIzNDU2Nzg5QUJDREUwMTIzNDU2Nzg5|2^20|2:4 FEC_ORDER=FEC_SRTP"
        ))
        .unwrap();
        assert_eq!(c.tag, 2);
        assert_eq!(c.suite, Suite::F8_128_HMAC_SHA1_80);
    }

    #[test]
    fn lifetime_and_mki_variants() {
        let p = |s: &str| CryptoAttr::parse(&format!("5 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}{s}"));
        assert_eq!(p("").unwrap().keys[0].lifetime, None);
        assert_eq!(p("|2^31").unwrap().keys[0].lifetime, Some(1 << 31));
        assert_eq!(p("|1000").unwrap().keys[0].lifetime, Some(1000));
        assert_eq!(p("|2^48").unwrap().keys[0].lifetime, Some(1 << 48));
        assert!(matches!(p("|2^49"), Err(CryptoError::BadLifetime(_))));
        assert!(matches!(p("|0"), Err(CryptoError::BadLifetime(_))));
        assert!(matches!(p("|2^x"), Err(CryptoError::BadLifetime(_))));
        assert!(matches!(p("|99999999999999999999999"), Err(CryptoError::BadLifetime(_))));
        assert_eq!(p("|3:2").unwrap().keys[0].mki, Some((3, 2)));
        assert_eq!(p("|3:2").unwrap().keys[0].lifetime, None);
        assert_eq!(p("|2^10|255:1").unwrap().keys[0].mki, Some((255, 1)));
        assert!(matches!(p("|256:1"), Err(CryptoError::BadMki(_))));
        assert!(matches!(p("|1:0"), Err(CryptoError::BadMki(_))));
        assert!(matches!(p("|1:129"), Err(CryptoError::BadMki(_))));
        assert_eq!(p("|1:128").unwrap().keys[0].mki_bytes().len(), 128);
        assert!(matches!(p("|1:4|2^10"), Err(CryptoError::BadLifetime(_))));
        assert!(matches!(p("|2^10|2^10"), Err(CryptoError::BadLifetime(_))));
        assert!(matches!(p("|1:4|2:4"), Err(CryptoError::BadMki(_))));
        let mk = p("|2^10|258:2").unwrap().master_keys().unwrap();
        assert_eq!(mk[0].mki(), &[1, 2]);
        // Two keys: each needs an MKI of the same length, distinct values.
        let two = |a: &str, b: &str| {
            CryptoAttr::parse(&format!("1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}{a};inline:{RFC_KEY}{b}"))
        };
        assert!(two("|1:4", "|2:4").is_ok());
        assert!(matches!(two("", "|2:4"), Err(CryptoError::BadMki(_))));
        assert!(matches!(two("|1:4", "|2:2"), Err(CryptoError::BadMki(_))));
        assert!(matches!(two("|1:4", "|1:4"), Err(CryptoError::BadMki(_))));
    }

    #[test]
    fn errors() {
        let p = CryptoAttr::parse;
        assert!(matches!(
            p("1 AES_CM_128_HMAC_SHA1_80 inline:AAAA"),
            Err(CryptoError::KeyLength { expected: 30, got: 3, .. })
        ));
        // A 30-byte key for a 256-bit suite.
        assert!(matches!(
            p(&format!("1 AES_256_CM_HMAC_SHA1_80 inline:{RFC_KEY}")),
            Err(CryptoError::KeyLength { expected: 46, got: 30, .. })
        ));
        assert_eq!(p("1 AES_CM_128_HMAC_SHA1_80 inline:!!!!notbase64"), Err(CryptoError::BadBase64));
        assert_eq!(p("1 AES_CM_128_HMAC_SHA1_80 inline:"), Err(CryptoError::BadBase64));
        assert_eq!(p(&format!("1234567890 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}")), Err(CryptoError::BadTag));
        assert_eq!(p(&format!("x AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}")), Err(CryptoError::BadTag));
        assert_eq!(p(&format!("-1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}")), Err(CryptoError::BadTag));
        assert!(p(&format!("123456789 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}")).is_ok());
        assert_eq!(
            p(&format!("1 AES_CM_129_HMAC_SHA1_80 inline:{RFC_KEY}")),
            Err(CryptoError::UnknownSuite("AES_CM_129_HMAC_SHA1_80".into()))
        );
        // An unknown suite wins over a key that would not fit any suite.
        assert!(matches!(p("1 SOME_FUTURE_SUITE inline:AAAA"), Err(CryptoError::UnknownSuite(_))));
        assert!(matches!(p("1 AES_CM_128_HMAC_SHA1_80 uri:http://x"), Err(CryptoError::UnsupportedKeyMethod(_))));
        assert!(matches!(p("1 AES_CM_128_HMAC_SHA1_80"), Err(CryptoError::Malformed(_))));
        assert!(matches!(p(""), Err(CryptoError::Malformed(_))));
        assert!(matches!(p("1 AES_CM_128_HMAC_SHA1_80 nocolon"), Err(CryptoError::Malformed(_))));
        assert!(matches!(
            p(&format!("1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY} KDR=25")),
            Err(CryptoError::BadSessionParam(_))
        ));
        assert!(matches!(
            p(&format!("1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY} WSH=32")),
            Err(CryptoError::BadSessionParam(_))
        ));
        let many = vec![format!("inline:{RFC_KEY}|1:1"); 17].join(";");
        assert_eq!(p(&format!("1 AES_CM_128_HMAC_SHA1_80 {many}")), Err(CryptoError::TooManyKeys));
        // Messages never contain the key.
        let e = p(&format!("1 AES_256_CM_HMAC_SHA1_80 inline:{RFC_KEY}")).unwrap_err();
        assert!(!e.to_string().contains(RFC_KEY));
        assert_eq!(
            e.to_string(),
            "AES_256_CM_HMAC_SHA1_80 needs 46 bytes of master key and salt, the inline key has 30"
        );
    }

    #[test]
    fn session_params() {
        let c = CryptoAttr::parse(&format!(
            "1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY} KDR=10 UNENCRYPTED_SRTCP UNENCRYPTED_SRTP UNAUTHENTICATED_SRTP WSH=128"
        ))
        .unwrap();
        assert_eq!(c.kdr(), Some(10));
        assert!(c.unencrypted_srtp() && c.unencrypted_srtcp() && c.unauthenticated_srtp());
        assert!(c.policy().is_err());
        let c =
            CryptoAttr::parse(&format!("1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY} KDR=3 UNENCRYPTED_SRTP")).unwrap();
        let p = c.policy().unwrap();
        assert_eq!(p.kdr, 8);
        assert!(!p.encrypt_rtp && p.encrypt_rtcp);
        let c = CryptoAttr::parse(&format!("1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}")).unwrap();
        assert_eq!(c.kdr(), None);
        assert!(!c.unencrypted_srtp() && !c.unencrypted_srtcp() && !c.unauthenticated_srtp());
    }

    #[test]
    fn generate_display_parse_every_suite() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for (i, suite) in Suite::ALL.into_iter().enumerate() {
            let c = CryptoAttr::generate(i as u32 + 1, suite, &mut rng);
            assert_eq!(c.keys[0].key_salt.len(), suite.master_key_len() + suite.master_salt_len());
            let text = c.to_string();
            assert!(text.starts_with(&format!("{} {} inline:", i + 1, suite.name())), "{text}");
            let back = CryptoAttr::parse(&text).unwrap();
            assert_eq!(back, c);
            let mk = back.master_keys().unwrap();
            assert_eq!(mk[0].key(), &c.keys[0].key_salt[..suite.master_key_len()]);
            assert_eq!(mk[0].salt(), &c.keys[0].key_salt[suite.master_key_len()..]);
            assert!(c.policy().is_ok());
        }
        // GCM and AES-192 lengths (RFC 7714 §14, RFC 6188).
        assert_eq!(CryptoAttr::generate(1, Suite::AEAD_AES_128_GCM, &mut rng).keys[0].key_salt.len(), 28);
        assert_eq!(CryptoAttr::generate(1, Suite::AEAD_AES_256_GCM, &mut rng).keys[0].key_salt.len(), 44);
        assert_eq!(CryptoAttr::generate(1, Suite::AES_192_CM_HMAC_SHA1_80, &mut rng).keys[0].key_salt.len(), 38);
    }

    #[test]
    fn display_with_lifetime_mki_params() {
        let text = format!("7 AES_CM_128_HMAC_SHA1_32 inline:{RFC_KEY}|2^31|1:4;inline:{RFC_KEY}|1000|2:4 KDR=1");
        let c = CryptoAttr::parse(&text).unwrap();
        assert_eq!(c.to_string(), text);
        // Unpadded base64 is accepted, written back padded.
        let c = CryptoAttr::parse("1 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw").unwrap();
        assert_eq!(c.to_string(), "1 AEAD_AES_128_GCM inline:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGw==");
        // Aliases of the RFC 6188 suites.
        let k = base64::engine::general_purpose::STANDARD.encode([0u8; 46]);
        assert_eq!(
            CryptoAttr::parse(&format!("1 AES_CM_256_HMAC_SHA1_80 inline:{k}")).unwrap().suite,
            Suite::AES_256_CM_HMAC_SHA1_80
        );
    }

    #[test]
    fn debug_hides_keys() {
        let c =
            CryptoAttr::parse(&format!("1 AES_CM_128_HMAC_SHA1_80 inline:{RFC_KEY}|2^20|1:4 FEC_KEY=inline:{RFC_KEY}"))
                .unwrap();
        let d = format!("{c:?}");
        assert!(!d.contains(RFC_KEY) && !d.contains("61, 45"), "{d}");
        assert!(d.contains("redacted"));
        let raw = format!("{:?}", c.keys[0].key_salt.as_slice());
        assert!(!d.contains(&raw[1..raw.len() - 1]));
    }
}
