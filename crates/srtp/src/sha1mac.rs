//! HMAC-SHA1 (RFC 2104) from precomputed inner and outer midstates.
//!
//! Written here rather than taken from the `hmac` crate because SRTP needs
//! (a) the inner/outer pad states computed once per session key and zeroized
//! on drop, (b) an input in two pieces (packet bytes, then the ROC) without
//! copying the packet, and (c) the same midstate layout the GPU kernels use.
//! The compression function itself is RustCrypto's `sha1` (SHA-NI when the
//! CPU has it). It is checked against the `hmac` crate in the tests.

use sha1::digest::generic_array::GenericArray;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// SHA-1 initial state.
const H0: [u32; 5] = [0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0];

/// HMAC-SHA1 key schedule: the SHA-1 states after the ipad and opad blocks.
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct HmacSha1 {
    inner: [u32; 5],
    outer: [u32; 5],
}

fn compress1(state: &mut [u32; 5], block: &[u8]) {
    sha1::compress(state, core::slice::from_ref(GenericArray::from_slice(block)));
}

impl HmacSha1 {
    /// Precomputes the midstates of `key` (any length; SRTP uses 20 bytes).
    pub fn new(key: &[u8]) -> HmacSha1 {
        let mut k = [0u8; 64];
        if key.len() > 64 {
            let mut st = H0;
            sha1_full(&mut st, &[key], 0);
            // (a long key is secret: the digest is wiped below)
            for (i, w) in st.iter().enumerate() {
                k[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
            }
            st.zeroize();
        } else {
            k[..key.len()].copy_from_slice(key);
        }
        let mut pad = [0u8; 64];
        let mut inner = H0;
        let mut outer = H0;
        pad.iter_mut().zip(k.iter()).for_each(|(p, k)| *p = k ^ 0x36);
        compress1(&mut inner, &pad);
        pad.iter_mut().zip(k.iter()).for_each(|(p, k)| *p = k ^ 0x5c);
        compress1(&mut outer, &pad);
        pad.zeroize();
        k.zeroize();
        HmacSha1 { inner, outer }
    }

    /// The inner midstate (for engines that upload it elsewhere).
    pub fn inner_state(&self) -> &[u32; 5] {
        &self.inner
    }

    /// The outer midstate.
    pub fn outer_state(&self) -> &[u32; 5] {
        &self.outer
    }

    /// HMAC over the concatenation of `parts`.
    pub fn mac(&self, parts: &[&[u8]]) -> [u8; 20] {
        let mut st = self.inner;
        sha1_full(&mut st, parts, 64);
        let mut block = [0u8; 64];
        for (i, w) in st.iter().enumerate() {
            block[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        block[20] = 0x80;
        // Message length: the opad block plus the 20-byte inner digest.
        block[56..].copy_from_slice(&((64u64 + 20) * 8).to_be_bytes());
        let mut out_st = self.outer;
        compress1(&mut out_st, &block);
        let mut out = [0u8; 20];
        for (i, w) in out_st.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
        out
    }
}

/// Hashes `parts` into `state` and applies the final padding; `prefix_len`
/// bytes were already compressed into `state`.
fn sha1_full(state: &mut [u32; 5], parts: &[&[u8]], prefix_len: u64) {
    let mut buf = [0u8; 128];
    let mut fill = 0usize;
    let mut total = prefix_len;
    for part in parts {
        let mut data = *part;
        total += data.len() as u64;
        if fill > 0 {
            let take = data.len().min(64 - fill);
            buf[fill..fill + take].copy_from_slice(&data[..take]);
            fill += take;
            data = &data[take..];
            if fill < 64 {
                continue;
            }
            compress1(state, &buf[..64]);
        }
        let mut chunks = data.chunks_exact(64);
        for block in &mut chunks {
            compress1(state, block);
        }
        let rest = chunks.remainder();
        buf[..rest.len()].copy_from_slice(rest);
        fill = rest.len();
    }
    buf[fill] = 0x80;
    let end = if fill < 56 { 64 } else { 128 };
    buf[fill + 1..end].fill(0);
    buf[end - 8..end].copy_from_slice(&(total * 8).to_be_bytes());
    compress1(state, &buf[..64]);
    if end == 128 {
        compress1(state, &buf[64..128]);
    }
    // `buf` holds message bytes (public packet bytes on the per-packet path),
    // not key material: no zeroize here. Key-derived states are zeroized by
    // their owners.
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmac::{Hmac, Mac};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn matches_hmac_crate(key in prop::collection::vec(any::<u8>(), 0..100),
                              a in prop::collection::vec(any::<u8>(), 0..300),
                              b in prop::collection::vec(any::<u8>(), 0..70)) {
            let mut reference = Hmac::<sha1::Sha1>::new_from_slice(&key).unwrap();
            reference.update(&a);
            reference.update(&b);
            let expect = reference.finalize().into_bytes();
            prop_assert_eq!(&HmacSha1::new(&key).mac(&[&a, &b])[..], &expect[..]);
        }
    }
}
