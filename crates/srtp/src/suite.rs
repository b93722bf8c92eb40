//! Protection profiles ("crypto suites"), named as in SDES (RFC 4568, 6188, 7714).

use crate::error::Error;
use core::fmt;
use core::str::FromStr;

/// The cipher a suite uses for confidentiality.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cipher {
    /// No encryption (the NULL cipher of RFC 3711 §4.1.3).
    Null,
    /// AES in counter mode (RFC 3711 §4.1.1, RFC 6188), key length in bytes.
    AesCm(usize),
    /// AES in f8 mode (RFC 3711 §4.1.2), 128-bit key.
    AesF8,
    /// AES-GCM AEAD (RFC 7714), key length in bytes.
    AesGcm(usize),
}

/// An SRTP protection profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types)]
pub enum Suite {
    /// AES-128 counter mode, HMAC-SHA1 80-bit tag (RFC 4568).
    AES_CM_128_HMAC_SHA1_80,
    /// AES-128 counter mode, HMAC-SHA1 32-bit SRTP tag, 80-bit SRTCP tag (RFC 4568).
    AES_CM_128_HMAC_SHA1_32,
    /// AES-192 counter mode, 80-bit tag (RFC 6188).
    AES_192_CM_HMAC_SHA1_80,
    /// AES-192 counter mode, 32-bit SRTP tag (RFC 6188).
    AES_192_CM_HMAC_SHA1_32,
    /// AES-256 counter mode, 80-bit tag (RFC 6188).
    AES_256_CM_HMAC_SHA1_80,
    /// AES-256 counter mode, 32-bit SRTP tag (RFC 6188).
    AES_256_CM_HMAC_SHA1_32,
    /// AES-128-GCM, 128-bit tag (RFC 7714).
    AEAD_AES_128_GCM,
    /// AES-256-GCM, 128-bit tag (RFC 7714).
    AEAD_AES_256_GCM,
    /// No encryption, HMAC-SHA1 80-bit tag.
    NULL_HMAC_SHA1_80,
    /// No encryption, HMAC-SHA1 32-bit SRTP tag.
    NULL_HMAC_SHA1_32,
    /// AES-128 f8 mode, HMAC-SHA1 80-bit tag (RFC 4568, RFC 3711 §4.1.2).
    F8_128_HMAC_SHA1_80,
}

impl Suite {
    /// Every suite, in the order the relay offers them.
    pub const ALL: [Suite; 11] = [
        Suite::AES_CM_128_HMAC_SHA1_80,
        Suite::AES_CM_128_HMAC_SHA1_32,
        Suite::AES_192_CM_HMAC_SHA1_80,
        Suite::AES_192_CM_HMAC_SHA1_32,
        Suite::AES_256_CM_HMAC_SHA1_80,
        Suite::AES_256_CM_HMAC_SHA1_32,
        Suite::AEAD_AES_128_GCM,
        Suite::AEAD_AES_256_GCM,
        Suite::NULL_HMAC_SHA1_80,
        Suite::NULL_HMAC_SHA1_32,
        Suite::F8_128_HMAC_SHA1_80,
    ];

    /// The SDES name of the suite.
    pub const fn name(self) -> &'static str {
        match self {
            Suite::AES_CM_128_HMAC_SHA1_80 => "AES_CM_128_HMAC_SHA1_80",
            Suite::AES_CM_128_HMAC_SHA1_32 => "AES_CM_128_HMAC_SHA1_32",
            Suite::AES_192_CM_HMAC_SHA1_80 => "AES_192_CM_HMAC_SHA1_80",
            Suite::AES_192_CM_HMAC_SHA1_32 => "AES_192_CM_HMAC_SHA1_32",
            Suite::AES_256_CM_HMAC_SHA1_80 => "AES_256_CM_HMAC_SHA1_80",
            Suite::AES_256_CM_HMAC_SHA1_32 => "AES_256_CM_HMAC_SHA1_32",
            Suite::AEAD_AES_128_GCM => "AEAD_AES_128_GCM",
            Suite::AEAD_AES_256_GCM => "AEAD_AES_256_GCM",
            Suite::NULL_HMAC_SHA1_80 => "NULL_HMAC_SHA1_80",
            Suite::NULL_HMAC_SHA1_32 => "NULL_HMAC_SHA1_32",
            Suite::F8_128_HMAC_SHA1_80 => "F8_128_HMAC_SHA1_80",
        }
    }

    /// The confidentiality transform.
    pub const fn cipher(self) -> Cipher {
        match self {
            Suite::AES_CM_128_HMAC_SHA1_80 | Suite::AES_CM_128_HMAC_SHA1_32 => Cipher::AesCm(16),
            Suite::AES_192_CM_HMAC_SHA1_80 | Suite::AES_192_CM_HMAC_SHA1_32 => Cipher::AesCm(24),
            Suite::AES_256_CM_HMAC_SHA1_80 | Suite::AES_256_CM_HMAC_SHA1_32 => Cipher::AesCm(32),
            Suite::AEAD_AES_128_GCM => Cipher::AesGcm(16),
            Suite::AEAD_AES_256_GCM => Cipher::AesGcm(32),
            Suite::NULL_HMAC_SHA1_80 | Suite::NULL_HMAC_SHA1_32 => Cipher::Null,
            Suite::F8_128_HMAC_SHA1_80 => Cipher::AesF8,
        }
    }

    /// True for the AEAD (GCM) suites, which carry no HMAC.
    pub const fn is_aead(self) -> bool {
        matches!(self.cipher(), Cipher::AesGcm(_))
    }

    /// Master key length in bytes.
    pub const fn master_key_len(self) -> usize {
        match self.cipher() {
            Cipher::AesCm(n) | Cipher::AesGcm(n) => n,
            Cipher::Null | Cipher::AesF8 => 16,
        }
    }

    /// Master salt length in bytes (112 bits, or 96 bits for GCM).
    pub const fn master_salt_len(self) -> usize {
        if self.is_aead() {
            12
        } else {
            14
        }
    }

    /// Session encryption key length in bytes (equal to the master key's).
    pub const fn session_key_len(self) -> usize {
        self.master_key_len()
    }

    /// Session salt length in bytes.
    pub const fn session_salt_len(self) -> usize {
        self.master_salt_len()
    }

    /// Session authentication key length in bytes (0 for AEAD suites).
    pub const fn auth_key_len(self) -> usize {
        if self.is_aead() {
            0
        } else {
            20
        }
    }

    /// Length of the SRTP authentication tag in bytes.
    pub const fn srtp_tag_len(self) -> usize {
        match self {
            Suite::AES_CM_128_HMAC_SHA1_32
            | Suite::AES_192_CM_HMAC_SHA1_32
            | Suite::AES_256_CM_HMAC_SHA1_32
            | Suite::NULL_HMAC_SHA1_32 => 4,
            Suite::AEAD_AES_128_GCM | Suite::AEAD_AES_256_GCM => 16,
            _ => 10,
        }
    }

    /// Length of the SRTCP authentication tag in bytes: the `_32` suites use
    /// an 80-bit tag for SRTCP (RFC 4568 §6.2).
    pub const fn srtcp_tag_len(self) -> usize {
        if self.is_aead() {
            16
        } else {
            10
        }
    }

    /// Tag length for SRTP (`rtcp == false`) or SRTCP.
    pub const fn tag_len(self, rtcp: bool) -> usize {
        if rtcp {
            self.srtcp_tag_len()
        } else {
            self.srtp_tag_len()
        }
    }

    /// Key length of the AES-CM PRF used for key derivation.
    pub const fn prf_key_len(self) -> usize {
        self.master_key_len()
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Suite {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Suite::ALL
            .iter()
            .copied()
            .find(|suite| suite.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| Error::UnknownSuite(s.chars().take(64).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for suite in Suite::ALL {
            assert_eq!(suite.name().parse::<Suite>().unwrap(), suite);
        }
        assert!("AES_CM_129_HMAC_SHA1_80".parse::<Suite>().is_err());
    }

    #[test]
    fn short_tag_suites_use_long_srtcp_tag() {
        assert_eq!(Suite::AES_CM_128_HMAC_SHA1_32.srtp_tag_len(), 4);
        assert_eq!(Suite::AES_CM_128_HMAC_SHA1_32.srtcp_tag_len(), 10);
        assert_eq!(Suite::AEAD_AES_256_GCM.master_salt_len(), 12);
        assert_eq!(Suite::AES_192_CM_HMAC_SHA1_80.master_key_len(), 24);
    }
}
