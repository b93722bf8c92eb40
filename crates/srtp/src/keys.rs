//! Master keys and the SDES inline key syntax (RFC 4568 §6.1).

use crate::error::Error;
use crate::suite::Suite;
use base64::Engine as _;
use zeroize::Zeroizing;

/// A master key with its salt, optional MKI and lifetime.
#[derive(Clone)]
pub struct MasterKey {
    key: Zeroizing<Vec<u8>>,
    salt: Zeroizing<Vec<u8>>,
    mki: Vec<u8>,
    lifetime: Option<u64>,
}

impl core::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MasterKey").field("mki", &self.mki).field("lifetime", &self.lifetime).finish_non_exhaustive()
    }
}

impl MasterKey {
    /// A master key of the suite's lengths, without MKI or lifetime.
    pub fn new(suite: Suite, key: &[u8], salt: &[u8]) -> Result<MasterKey, Error> {
        if key.len() != suite.master_key_len() || salt.len() != suite.master_salt_len() {
            return Err(Error::InvalidKey(format!(
                "{suite} needs a {}-byte master key and a {}-byte salt, got {} and {}",
                suite.master_key_len(),
                suite.master_salt_len(),
                key.len(),
                salt.len()
            )));
        }
        Ok(MasterKey {
            key: Zeroizing::new(key.to_vec()),
            salt: Zeroizing::new(salt.to_vec()),
            mki: Vec::new(),
            lifetime: None,
        })
    }

    /// Sets the MKI carried in packets protected with this key.
    pub fn with_mki(mut self, mki: &[u8]) -> MasterKey {
        self.mki = mki.to_vec();
        self
    }

    /// Sets the lifetime in packets.
    pub fn with_lifetime(mut self, packets: u64) -> MasterKey {
        self.lifetime = Some(packets);
        self
    }

    /// Parses an SDES inline key parameter: `[inline:]BASE64[|LIFETIME][|MKI:LEN]`,
    /// where BASE64 is master key ∥ master salt, LIFETIME is decimal or `2^N`,
    /// and the MKI is a decimal value written in LEN bytes.
    pub fn from_sdes(suite: Suite, param: &str) -> Result<MasterKey, Error> {
        let param = param.trim();
        let param = param.strip_prefix("inline:").unwrap_or(param);
        let mut parts = param.split('|');
        let b64 = parts.next().unwrap_or_default();
        let raw = Zeroizing::new(
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(b64))
                .map_err(|e| Error::InvalidKey(format!("bad base64 key: {e}")))?,
        );
        let kl = suite.master_key_len();
        if raw.len() != kl + suite.master_salt_len() {
            return Err(Error::InvalidKey(format!(
                "{suite} needs {} bytes of key and salt, the inline key has {}",
                kl + suite.master_salt_len(),
                raw.len()
            )));
        }
        let mut key = MasterKey::new(suite, &raw[..kl], &raw[kl..])?;
        for part in parts {
            if let Some((value, len)) = part.split_once(':') {
                let value: u64 = value.parse().map_err(|_| Error::InvalidKey(format!("bad MKI value {value:?}")))?;
                let len: usize = len.parse().map_err(|_| Error::InvalidKey(format!("bad MKI length {len:?}")))?;
                if !(1..=128).contains(&len) {
                    return Err(Error::InvalidKey(format!("MKI length {len} outside 1..=128")));
                }
                if len < 8 && value >> (8 * len) != 0 {
                    return Err(Error::InvalidKey(format!("MKI value {value} does not fit {len} bytes")));
                }
                let mut mki = vec![0u8; len];
                let be = value.to_be_bytes();
                let n = len.min(8);
                mki[len - n..].copy_from_slice(&be[8 - n..]);
                key.mki = mki;
            } else {
                key.lifetime = Some(parse_lifetime(part)?);
            }
        }
        Ok(key)
    }

    /// The master key bytes.
    pub fn key(&self) -> &[u8] {
        &self.key
    }
    /// The master salt bytes.
    pub fn salt(&self) -> &[u8] {
        &self.salt
    }
    /// The MKI (empty when none).
    pub fn mki(&self) -> &[u8] {
        &self.mki
    }
    /// The lifetime in packets, if one was given.
    pub fn lifetime(&self) -> Option<u64> {
        self.lifetime
    }
}

fn parse_lifetime(s: &str) -> Result<u64, Error> {
    let bad = || Error::InvalidKey(format!("bad key lifetime {s:?}"));
    if let Some(exp) = s.strip_prefix("2^") {
        let exp: u32 = exp.parse().map_err(|_| bad())?;
        if exp > 63 {
            return Err(bad());
        }
        Ok(1u64 << exp)
    } else {
        s.parse().map_err(|_| bad())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc4568_example() {
        let k = MasterKey::from_sdes(
            Suite::AES_CM_128_HMAC_SHA1_80,
            "inline:PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^20|1:4",
        )
        .unwrap();
        assert_eq!(k.lifetime(), Some(1 << 20));
        assert_eq!(k.mki(), &[0, 0, 0, 1]);
        assert_eq!(k.key().len(), 16);
        assert_eq!(k.salt().len(), 14);
    }

    #[test]
    fn rejects_bad_keys() {
        let s = Suite::AES_CM_128_HMAC_SHA1_80;
        assert!(MasterKey::from_sdes(s, "inline:!!!").is_err());
        assert!(MasterKey::from_sdes(s, "inline:AAAA").is_err());
        assert!(MasterKey::from_sdes(s, "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|2^99").is_err());
        assert!(MasterKey::from_sdes(s, "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|300:1").is_err());
        assert!(MasterKey::from_sdes(s, "PS1uQCVeeCFCanVmcjkpPywjNWhcYD0mXXtxaVBR|1:0").is_err());
    }
}
