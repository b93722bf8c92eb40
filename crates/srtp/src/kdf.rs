//! Session key derivation with the AES-CM PRF (RFC 3711 §4.3, RFC 6188 §6,
//! RFC 7714 §11), including a key derivation rate other than zero.

use crate::error::Error;
use crate::suite::Suite;
use aes::cipher::consts::U16;
use aes::cipher::{BlockEncrypt, BlockSizeUser, KeyInit};
use zeroize::{Zeroize, ZeroizeOnDrop};

/// Key derivation labels (RFC 3711 §4.3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Label {
    /// SRTP encryption key.
    RtpEncryption = 0,
    /// SRTP authentication key.
    RtpAuth = 1,
    /// SRTP salt.
    RtpSalt = 2,
    /// SRTCP encryption key.
    RtcpEncryption = 3,
    /// SRTCP authentication key.
    RtcpAuth = 4,
    /// SRTCP salt.
    RtcpSalt = 5,
}

/// Writes `out.len()` bytes of PRF output for `label` at derivation index `r`
/// (the packet index divided by the key derivation rate; 0 when the rate is 0).
///
/// `master_salt` is 14 bytes, or 12 for the GCM suites, in which case it is
/// padded on the right with zeros to 112 bits (RFC 7714 §11, as libsrtp does).
pub fn prf(master_key: &[u8], master_salt: &[u8], label: u8, r: u64, out: &mut [u8]) -> Result<(), Error> {
    if master_salt.len() > 14 {
        return Err(Error::InvalidKey(format!("master salt of {} bytes", master_salt.len())));
    }
    // x = (label || r) XOR master_salt, as a 112-bit value; IV = x * 2^16.
    let mut iv = [0u8; 16];
    iv[..master_salt.len()].copy_from_slice(master_salt);
    iv[7] ^= label;
    let r_bytes = r.to_be_bytes();
    for i in 0..6 {
        iv[8 + i] ^= r_bytes[2 + i];
    }
    match master_key.len() {
        16 => prf_with(&aes::Aes128::new_from_slice(master_key).expect("length checked"), iv, out),
        24 => prf_with(&aes::Aes192::new_from_slice(master_key).expect("length checked"), iv, out),
        32 => prf_with(&aes::Aes256::new_from_slice(master_key).expect("length checked"), iv, out),
        n => return Err(Error::InvalidKey(format!("master key of {n} bytes"))),
    }
    iv.zeroize();
    Ok(())
}

fn prf_with<C: BlockEncrypt + BlockSizeUser<BlockSize = U16>>(cipher: &C, iv: [u8; 16], out: &mut [u8]) {
    let base = u128::from_be_bytes(iv);
    for (i, chunk) in out.chunks_mut(16).enumerate() {
        let mut block = aes::Block::from(base.wrapping_add(i as u128).to_be_bytes());
        cipher.encrypt_block(&mut block);
        chunk.copy_from_slice(&block[..chunk.len()]);
        block.zeroize();
    }
}

/// The session keys of one direction (SRTP or SRTCP) of one master key,
/// as raw bytes. Engines turn them into their own precomputed form once.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct SessionKeys {
    #[zeroize(skip)]
    suite: Suite,
    enc: [u8; 32],
    salt: [u8; 14],
    auth: [u8; 20],
}

impl core::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SessionKeys").field("suite", &self.suite).finish_non_exhaustive()
    }
}

impl SessionKeys {
    /// Derives the session keys as libsrtp before 2.8.0 does for the AES-192
    /// suites: with an AES-256 PRF keyed by master key ∥ salt[0..8] and the
    /// salt's last 6 bytes, zero-padded, as its salt (cisco/libsrtp#763; RFC
    /// 6188 says AES-192). Only for interworking with such endpoints; for any
    /// other suite this is [`derive`](Self::derive).
    pub fn derive_libsrtp_aes192(
        master_key: &[u8],
        master_salt: &[u8],
        rtcp: bool,
        r: u64,
    ) -> Result<SessionKeys, Error> {
        let suite = Suite::AES_192_CM_HMAC_SHA1_80;
        if master_key.len() != 24 || master_salt.len() != 14 {
            return Err(Error::InvalidKey("AES-192 needs a 24-byte key and a 14-byte salt".into()));
        }
        let mut key = zeroize::Zeroizing::new([0u8; 32]);
        key[..24].copy_from_slice(master_key);
        key[24..].copy_from_slice(&master_salt[..8]);
        let mut salt = zeroize::Zeroizing::new([0u8; 14]);
        salt[..6].copy_from_slice(&master_salt[8..]);
        let base = if rtcp { 3 } else { 0 };
        let mut keys = SessionKeys { suite, enc: [0; 32], salt: [0; 14], auth: [0; 20] };
        prf(&key[..], &salt[..], base, r, &mut keys.enc[..24])?;
        prf(&key[..], &salt[..], base + 1, r, &mut keys.auth)?;
        prf(&key[..], &salt[..], base + 2, r, &mut keys.salt)?;
        Ok(keys)
    }

    /// Derives the SRTP (`rtcp == false`) or SRTCP session keys at
    /// derivation index `r`.
    pub fn derive(
        suite: Suite,
        master_key: &[u8],
        master_salt: &[u8],
        rtcp: bool,
        r: u64,
    ) -> Result<SessionKeys, Error> {
        if master_key.len() != suite.master_key_len() || master_salt.len() != suite.master_salt_len() {
            return Err(Error::InvalidKey(format!(
                "{suite} needs a {}-byte key and a {}-byte salt",
                suite.master_key_len(),
                suite.master_salt_len()
            )));
        }
        let base = if rtcp { 3 } else { 0 };
        let mut keys = SessionKeys { suite, enc: [0; 32], salt: [0; 14], auth: [0; 20] };
        let (kl, sl, al) = (suite.session_key_len(), suite.session_salt_len(), suite.auth_key_len());
        // The NULL cipher derives no encryption key or salt that it could use,
        // but deriving them costs nothing and keeps one code path.
        prf(master_key, master_salt, base, r, &mut keys.enc[..kl])?;
        prf(master_key, master_salt, base + 1, r, &mut keys.auth[..al])?;
        prf(master_key, master_salt, base + 2, r, &mut keys.salt[..sl])?;
        Ok(keys)
    }

    /// Session keys given directly (test vectors, or keys negotiated outside SRTP).
    pub fn from_raw(suite: Suite, enc: &[u8], salt: &[u8], auth: &[u8]) -> Result<SessionKeys, Error> {
        if enc.len() != suite.session_key_len()
            || salt.len() != suite.session_salt_len()
            || auth.len() != suite.auth_key_len()
        {
            return Err(Error::InvalidKey(format!("session key lengths do not fit {suite}")));
        }
        let mut keys = SessionKeys { suite, enc: [0; 32], salt: [0; 14], auth: [0; 20] };
        keys.enc[..enc.len()].copy_from_slice(enc);
        keys.salt[..salt.len()].copy_from_slice(salt);
        keys.auth[..auth.len()].copy_from_slice(auth);
        Ok(keys)
    }

    pub(crate) fn set_suite(&mut self, suite: Suite) {
        self.suite = suite;
    }

    /// The suite these keys belong to.
    pub fn suite(&self) -> Suite {
        self.suite
    }
    /// Session encryption key.
    pub fn enc_key(&self) -> &[u8] {
        &self.enc[..self.suite.session_key_len()]
    }
    /// Session salt (14 bytes, 12 for GCM).
    pub fn salt(&self) -> &[u8] {
        &self.salt[..self.suite.session_salt_len()]
    }
    /// Session authentication key (empty for GCM).
    pub fn auth_key(&self) -> &[u8] {
        &self.auth[..self.suite.auth_key_len()]
    }
}
