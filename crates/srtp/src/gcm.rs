//! GHASH over a split AAD, shared by the engines for the case the `aes-gcm`
//! crate cannot express: SRTCP's AAD is the header followed by the E-flag and
//! index word, which sits after the tag in the packet (RFC 7714 §17).

use ghash::universal_hash::UniversalHash;
use ghash::GHash;

/// Computes GHASH_H(AAD || pad || C || pad || len(AAD) || len(C)) where
/// AAD = `aad || suffix`; `suffix` is at most 16 bytes.
pub fn ghash(h: &GHash, aad: &[u8], suffix: &[u8], ct: &[u8]) -> [u8; 16] {
    debug_assert!(suffix.len() <= 16);
    let mut g = h.clone();
    let full = aad.len() / 16 * 16;
    let mut chunks = aad[..full].chunks_exact(16);
    for block in &mut chunks {
        g.update(&[*ghash::Block::from_slice(block)]);
    }
    // The tail of the AAD and the suffix: at most 15 + 16 bytes.
    let mut tail = [0u8; 32];
    let rest = &aad[full..];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()..rest.len() + suffix.len()].copy_from_slice(suffix);
    g.update_padded(&tail[..rest.len() + suffix.len()]);
    g.update_padded(ct);
    let mut lens = [0u8; 16];
    lens[..8].copy_from_slice(&(((aad.len() + suffix.len()) as u64) * 8).to_be_bytes());
    lens[8..].copy_from_slice(&((ct.len() as u64) * 8).to_be_bytes());
    g.update(&[lens.into()]);
    g.finalize().into()
}

/// The 32-bit counter increment of GCM (NIST SP 800-38D §6.2).
pub fn inc32(block: &mut [u8; 16], by: u32) {
    let c = u32::from_be_bytes([block[12], block[13], block[14], block[15]]).wrapping_add(by);
    block[12..].copy_from_slice(&c.to_be_bytes());
}
