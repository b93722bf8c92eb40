//! The memory layout shared with the kernels (`kernels/srtp.cu`): key slots,
//! packet descriptors, the AES T-table and the batch file of the host
//! emulator. Safe Rust only; every word is a `u32`, stored little-endian (as
//! on x86 and on the GPU).
//!
//! # Key slot ([`KEY_WORDS`] words; slots contiguous in one device array)
//!
//! | words | content |
//! |---|---|
//! | `[0]` | kind: [`KIND_NULL`], [`KIND_AES_CM`], [`KIND_AES_GCM`] ([`KIND_UNSUPPORTED`]: every job fails) |
//! | `[1]` | AES rounds (10/12/14; 0 for NULL) |
//! | `[4..64]` | AES encryption round keys, FIPS-197 `w[i]` (big-endian words) |
//! | `[64..69]`, `[69..74]` | HMAC-SHA1 inner and outer midstates (NULL, AES-CM) |
//! | `[80..84]` | GCM hash key H = E_K(0¹²⁸), 4 big-endian words |
//! | `[96..160]` | GHASH 4-bit table (see [`ghash_table`]) |
//! | rest | reserved, zero |
//!
//! # Descriptor ([`DESC_WORDS`] words per packet)
//!
//! `d[0]` key slot; `d[1]` flags: bit 0 unprotect, bits 8..15 suffix length,
//! bits 16..23 tag length; `d[2]` offset of the packet in the data region
//! (16-byte aligned); `d[3]` packet length; `d[4..8]` enc_start, enc_end,
//! auth_end, tag_start (relative to the packet, as in [`srtp::engine::Job`]);
//! `d[8]` the suffix bytes packed big-endian; `d[9..13]` the IV as 4
//! big-endian words; `d[13]` the outcome written by the device
//! ([`OUTCOME_DONE`], [`OUTCOME_FAILED`]).
//!
//! The host must guarantee `d[0]` < number of slots and `d[2] + d[3]` ≤ the
//! data region: the kernels do not know either size. Everything else the
//! device checks (like [`srtp::engine::Job::is_well_formed`], plus GCM's
//! `tag_start == enc_end && tag_len == 16`, an HMAC tag of at most 20 bytes
//! and a 16-aligned `d[2]`); a malformed descriptor fails untouched.

use srtp::engine::Op;
use srtp::portable::TableAes;
use srtp::sha1mac::HmacSha1;
use srtp::suite::Cipher;
use srtp::SessionKeys;

/// Words per key slot.
pub const KEY_WORDS: usize = 192;
/// Words per packet descriptor.
pub const DESC_WORDS: usize = 16;

/// Key slot word: the kind.
pub const K_KIND: usize = 0;
/// Key slot word: AES rounds.
pub const K_ROUNDS: usize = 1;
/// Key slot words: AES round keys (60 words).
pub const K_ROUND_KEYS: usize = 4;
/// Key slot words: HMAC inner midstate (5 words).
pub const K_HMAC_INNER: usize = 64;
/// Key slot words: HMAC outer midstate (5 words).
pub const K_HMAC_OUTER: usize = 69;
/// Key slot words: GCM hash key H (4 words).
pub const K_GCM_H: usize = 80;
/// Key slot words: GHASH 4-bit table (64 words).
pub const K_GHASH_TABLE: usize = 96;

/// Kind: NULL cipher, HMAC-SHA1.
pub const KIND_NULL: u32 = 0;
/// Kind: AES counter mode (128/192/256), HMAC-SHA1.
pub const KIND_AES_CM: u32 = 1;
/// Kind: AES-GCM (128/256).
pub const KIND_AES_GCM: u32 = 2;
/// Kind of a suite the kernels do not implement (AES-f8): the device fails
/// every job on it. The engine keeps such keys on the CPU instead.
pub const KIND_UNSUPPORTED: u32 = 0xffff_ffff;

/// Descriptor word: key slot.
pub const D_SLOT: usize = 0;
/// Descriptor word: flags.
pub const D_FLAGS: usize = 1;
/// Descriptor word: packet offset in the data region.
pub const D_OFFSET: usize = 2;
/// Descriptor word: packet length.
pub const D_LEN: usize = 3;
/// Descriptor word: start of the encrypted range.
pub const D_ENC_START: usize = 4;
/// Descriptor word: end of the encrypted range.
pub const D_ENC_END: usize = 5;
/// Descriptor word: end of the HMAC-authenticated range.
pub const D_AUTH_END: usize = 6;
/// Descriptor word: tag offset.
pub const D_TAG_START: usize = 7;
/// Descriptor word: the suffix, big-endian.
pub const D_SUFFIX: usize = 8;
/// Descriptor words: the IV (4 words).
pub const D_IV: usize = 9;
/// Descriptor word: the outcome, written by the device.
pub const D_OUTCOME: usize = 13;

/// Flag: unprotect (else protect).
pub const FLAG_UNPROTECT: u32 = 1;
/// Flags: shift of the suffix length.
pub const FLAG_SUFFIX_LEN_SHIFT: u32 = 8;
/// Flags: shift of the tag length.
pub const FLAG_TAG_LEN_SHIFT: u32 = 16;

/// Outcome: not processed.
pub const OUTCOME_PENDING: u32 = 0;
/// Outcome: done (for unprotect, the tag was valid).
pub const OUTCOME_DONE: u32 = 1;
/// Outcome: authentication failed or malformed descriptor.
pub const OUTCOME_FAILED: u32 = 2;

/// Required alignment of a packet's offset in the data region.
pub const PACKET_ALIGN: usize = 16;
/// The replicated T-table's part of either kernel's static shared memory
/// (32 KiB; the warps' SHA-1 areas take the rest, see [`MAX_BLOCK_THREADS`]).
pub const SHARED_TABLE_BYTES: usize = 256 * 32 * 4;

/// The AES T-table Te0: `Te0[x] = (2·S[x], S[x], S[x], 3·S[x])` as a
/// big-endian word. The kernels take these 256 words (`te0_global`) and
/// replicate each into all 32 shared-memory banks.
pub fn te0() -> [u32; 256] {
    srtp::portable::te0()
}

/// `x · x⁻¹`-style right shift by one bit in GCM's reflected bit order, with
/// reduction: multiplies by x in GF(2¹²⁸).
fn gf_shift1(v: u128) -> u128 {
    let carry = v & 1;
    (v >> 1) ^ if carry != 0 { 0xe1u128 << 120 } else { 0 }
}

/// Shoup's 4-bit GHASH table for hash key `h` (16 big-endian bytes).
///
/// Entry `i` (0..16) is the field element `i·H`, where the 4-bit index is read
/// in GCM's bit order (bit 3 of `i` is the coefficient of x⁰): entry 8 is H,
/// entry 4 is H·x, entry 2 is H·x², entry 1 is H·x³, and entry `i ^ j` is
/// `entry(i) ^ entry(j)` (mbedTLS's `HH[i]:HL[i]`). Word order: entry `i`
/// occupies words `4i..4i+4`, the 128-bit value as big-endian words, most
/// significant (bytes 0..3 of the GCM block) first.
pub fn ghash_table(h: &[u8; 16]) -> [u32; 64] {
    let mut e = [0u128; 16];
    e[8] = u128::from_be_bytes(*h);
    e[4] = gf_shift1(e[8]);
    e[2] = gf_shift1(e[4]);
    e[1] = gf_shift1(e[2]);
    for i in [2usize, 4, 8] {
        for j in 1..i {
            e[i + j] = e[i] ^ e[j];
        }
    }
    let mut t = [0u32; 64];
    for (i, v) in e.iter().enumerate() {
        for j in 0..4 {
            t[4 * i + j] = (v >> (96 - 32 * j)) as u32;
        }
    }
    t
}

/// The reduction constants of the 4-bit method, pre-shifted into the top word
/// (mbedTLS's `last4[r] << 48`, as the kernel's `srtp_gf_rem`).
fn gf_rem(r: u128) -> u128 {
    const LAST4: [u16; 16] = [
        0x0000, 0x1c20, 0x3840, 0x2460, 0x7080, 0x6ca0, 0x48c0, 0x54e0, 0xe100, 0xfd20, 0xd940, 0xc560, 0x9180, 0x8da0,
        0xa9c0, 0xb5e0,
    ];
    (LAST4[r as usize] as u128) << 112
}

/// `x · H` with the 4-bit table of H, exactly as the kernel computes it: the
/// 32 nibbles of `x` from the last byte to the first, low nibble first; each
/// step shifts the accumulator by 4 bits (with reduction) and adds a table
/// entry. A reference model of `srtp_gf_mul` (not constant-time).
pub fn ghash_mul_4bit(table: &[u32; 64], x: &[u8; 16]) -> [u8; 16] {
    let entry = |i: usize| {
        (table[4 * i] as u128) << 96
            | (table[4 * i + 1] as u128) << 64
            | (table[4 * i + 2] as u128) << 32
            | table[4 * i + 3] as u128
    };
    let xv = u128::from_be_bytes(*x);
    let mut z = 0u128;
    for k in 0..32 {
        let nib = ((xv >> (4 * k)) & 0xf) as usize;
        z = (z >> 4) ^ gf_rem(z & 0xf) ^ entry(nib);
    }
    z.to_be_bytes()
}

/// The key slot of `keys`: kind, round keys, HMAC midstates or GCM hash key
/// and table. AES-f8 is not implemented by the kernels: its slot has kind
/// [`KIND_UNSUPPORTED`] and no key material. The result holds key material:
/// the caller should wipe it after the upload.
pub fn key_slot(keys: &SessionKeys) -> [u32; KEY_WORDS] {
    let mut w = [0u32; KEY_WORDS];
    let put_aes = |w: &mut [u32; KEY_WORDS]| -> Option<TableAes> {
        let aes = TableAes::new(keys.enc_key()).ok()?;
        let (rk, rounds) = aes.round_keys();
        w[K_ROUNDS] = rounds as u32;
        w[K_ROUND_KEYS..K_ROUND_KEYS + rk.len()].copy_from_slice(rk);
        Some(aes)
    };
    let put_mac = |w: &mut [u32; KEY_WORDS]| {
        let mac = HmacSha1::new(keys.auth_key());
        w[K_HMAC_INNER..K_HMAC_INNER + 5].copy_from_slice(mac.inner_state());
        w[K_HMAC_OUTER..K_HMAC_OUTER + 5].copy_from_slice(mac.outer_state());
    };
    match keys.suite().cipher() {
        Cipher::Null => {
            w[K_KIND] = KIND_NULL;
            put_mac(&mut w);
        }
        Cipher::AesCm(_) => {
            w[K_KIND] = KIND_AES_CM;
            if put_aes(&mut w).is_none() {
                return unsupported();
            }
            put_mac(&mut w);
        }
        Cipher::AesGcm(_) => {
            w[K_KIND] = KIND_AES_GCM;
            let Some(aes) = put_aes(&mut w) else {
                return unsupported();
            };
            let h = aes.encrypt_block(&[0u8; 16]);
            for j in 0..4 {
                w[K_GCM_H + j] = u32::from_be_bytes([h[4 * j], h[4 * j + 1], h[4 * j + 2], h[4 * j + 3]]);
            }
            w[K_GHASH_TABLE..K_GHASH_TABLE + 64].copy_from_slice(&ghash_table(&h));
        }
        Cipher::AesF8 => return unsupported(),
    }
    w
}

fn unsupported() -> [u32; KEY_WORDS] {
    let mut w = [0u32; KEY_WORDS];
    w[K_KIND] = KIND_UNSUPPORTED;
    w
}

/// A descriptor that every kernel rejects without reading the packet (its
/// enc_start lies after its enc_end).
fn malformed(slot: u32, offset: u32) -> [u32; DESC_WORDS] {
    let mut d = [0u32; DESC_WORDS];
    d[D_SLOT] = slot;
    d[D_OFFSET] = offset;
    d[D_ENC_START] = 1;
    d
}

/// The descriptor of one job (the fields of [`srtp::engine::Job`]), its key
/// `slot`, and where its bytes lie in the data region: `offset` (a multiple
/// of [`PACKET_ALIGN`]) and `len` (the job's buffer length). A field that
/// does not fit its word (or byte) gives a descriptor that the device
/// rejects, never one that means something else.
#[allow(clippy::too_many_arguments)]
pub fn descriptor(
    slot: u32,
    op: Op,
    iv: [u8; 16],
    enc_start: usize,
    enc_end: usize,
    auth_end: usize,
    suffix: [u8; 4],
    suffix_len: usize,
    tag_start: usize,
    tag_len: usize,
    offset: u32,
    len: u32,
) -> [u32; DESC_WORDS] {
    let fit = |v: usize| u32::try_from(v).ok();
    let (Some(es), Some(ee), Some(ae), Some(ts)) = (fit(enc_start), fit(enc_end), fit(auth_end), fit(tag_start)) else {
        return malformed(slot, offset);
    };
    if suffix_len > 0xff || tag_len > 0xff {
        return malformed(slot, offset);
    }
    let mut d = [0u32; DESC_WORDS];
    d[D_SLOT] = slot;
    d[D_FLAGS] = u32::from(op == Op::Unprotect)
        | (suffix_len as u32) << FLAG_SUFFIX_LEN_SHIFT
        | (tag_len as u32) << FLAG_TAG_LEN_SHIFT;
    d[D_OFFSET] = offset;
    d[D_LEN] = len;
    d[D_ENC_START] = es;
    d[D_ENC_END] = ee;
    d[D_AUTH_END] = ae;
    d[D_TAG_START] = ts;
    d[D_SUFFIX] = u32::from_be_bytes(suffix);
    d[D_IV..D_IV + 4].copy_from_slice(&iv_words(&iv));
    d
}

/// Words of a wire descriptor: what the host sends the device per packet
/// (48 bytes; `kernels/srtp.cu` turns it into the 16-word descriptor above).
///
/// `w[0]` key slot; `w[1]` flags (as [`D_FLAGS`]); `w[2]`, `w[3]` the device
/// address of the packet's first byte (low, high word; any alignment: a
/// registered buffer-pool frame, an AF_XDP payload, or staged memory);
/// `w[4]` length; `w[5]` enc_start | enc_end << 16; `w[6]` auth_end |
/// tag_start << 16; `w[7]` the suffix; `w[8..12]` the IV. The outcome goes
/// to a word array of its own.
pub const WIRE_WORDS: usize = 12;

/// Bytes of a thread's scratch slot on the device: the longest packet the
/// kernels take (longer ones run on the CPU).
pub const SLOT_BYTES: usize = 2304;

/// Most threads a block of the kernels may have: their shared memory holds a
/// SHA-1 schedule area for each of up to 8 warps (`SRTP_SHA_WARPS`).
pub const MAX_BLOCK_THREADS: u32 = 256;

/// The wire descriptor of one job at device address `addr` (see
/// [`WIRE_WORDS`]); a field that does not fit gives a descriptor the device
/// rejects without touching memory (length 0, enc_start after enc_end).
#[allow(clippy::too_many_arguments)]
pub fn wire(
    slot: u32,
    op: Op,
    iv: [u8; 16],
    enc_start: usize,
    enc_end: usize,
    auth_end: usize,
    suffix: [u8; 4],
    suffix_len: usize,
    tag_start: usize,
    tag_len: usize,
    addr: u64,
    len: usize,
) -> [u32; WIRE_WORDS] {
    let mut w = [0u32; WIRE_WORDS];
    w[0] = slot;
    let fits = len <= SLOT_BYTES
        && enc_start <= 0xffff
        && enc_end <= 0xffff
        && auth_end <= 0xffff
        && tag_start <= 0xffff
        && suffix_len <= 0xff
        && tag_len <= 0xff;
    if !fits {
        w[5] = 1;
        return w;
    }
    w[1] = u32::from(op == Op::Unprotect)
        | (suffix_len as u32) << FLAG_SUFFIX_LEN_SHIFT
        | (tag_len as u32) << FLAG_TAG_LEN_SHIFT;
    w[2] = addr as u32;
    w[3] = (addr >> 32) as u32;
    w[4] = len as u32;
    w[5] = enc_start as u32 | (enc_end as u32) << 16;
    w[6] = auth_end as u32 | (tag_start as u32) << 16;
    w[7] = u32::from_be_bytes(suffix);
    w[8..12].copy_from_slice(&iv_words(&iv));
    w
}

/// A wire descriptor the device fails without reading or writing anything
/// (a job the CPU runs instead).
pub fn wire_skip() -> [u32; WIRE_WORDS] {
    let mut w = [0u32; WIRE_WORDS];
    w[5] = 1;
    w
}

/// The IV as the kernels take it: 4 big-endian words.
fn iv_words(iv: &[u8; 16]) -> [u32; 4] {
    core::array::from_fn(|j| u32::from_be_bytes([iv[4 * j], iv[4 * j + 1], iv[4 * j + 2], iv[4 * j + 3]]))
}

/// The job outcome a descriptor's outcome word stands for.
pub fn outcome(word: u32) -> srtp::engine::Outcome {
    match word {
        OUTCOME_DONE => srtp::engine::Outcome::Done,
        OUTCOME_FAILED => srtp::engine::Outcome::AuthFailed,
        _ => srtp::engine::Outcome::Pending,
    }
}

/// Magic of the emulator's batch file.
pub const BATCH_MAGIC: &[u8; 8] = b"SRTPBAT1";

/// A batch as the emulator reads and writes it: key slots, descriptors and
/// the data region.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch {
    /// Key slots, `KEY_WORDS` words each.
    pub keys: Vec<u32>,
    /// Descriptors, `DESC_WORDS` words each.
    pub descs: Vec<u32>,
    /// The data region.
    pub data: Vec<u8>,
}

/// Serializes a batch: magic, u32 key_words, n_keys, n_descs, data_len, then
/// keys, descriptors and data (all little-endian).
pub fn write_batch(b: &Batch) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + 4 * (b.keys.len() + b.descs.len()) + b.data.len());
    out.extend_from_slice(BATCH_MAGIC);
    for v in [KEY_WORDS, b.keys.len() / KEY_WORDS, b.descs.len() / DESC_WORDS, b.data.len()] {
        out.extend_from_slice(&(v as u32).to_le_bytes());
    }
    for w in b.keys.iter().chain(&b.descs) {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&b.data);
    out
}

/// Parses a batch file written by [`write_batch`] or the emulator.
pub fn read_batch(bytes: &[u8]) -> Result<Batch, String> {
    if bytes.len() < 24 || &bytes[..8] != BATCH_MAGIC {
        return Err("not a batch file".into());
    }
    let word = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]) as usize;
    let (key_words, n_keys, n_descs, data_len) = (word(8), word(12), word(16), word(20));
    if key_words != KEY_WORDS {
        return Err(format!("key_words {key_words}, expected {KEY_WORDS}"));
    }
    let kw = n_keys * KEY_WORDS;
    let dw = n_descs * DESC_WORDS;
    let need = 24 + 4 * (kw + dw) + data_len;
    if bytes.len() != need {
        return Err(format!("batch file of {} bytes, header says {need}", bytes.len()));
    }
    let words = |from: usize, n: usize| (0..n).map(|i| word(from + 4 * i) as u32).collect::<Vec<u32>>();
    Ok(Batch { keys: words(24, kw), descs: words(24 + 4 * kw, dw), data: bytes[24 + 4 * (kw + dw)..].to_vec() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ghash::universal_hash::{KeyInit, UniversalHash};

    fn bytes(seed: u64) -> [u8; 16] {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        core::array::from_fn(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
    }

    /// GHASH through the 4-bit table equals the `ghash` crate, over many keys
    /// and messages of 1..5 blocks (including the all-zero and all-one edges).
    #[test]
    fn table_ghash_matches_ghash_crate() {
        for seed in 0..200u64 {
            let h = match seed {
                0 => [0u8; 16],
                1 => [0xffu8; 16],
                _ => bytes(seed),
            };
            let table = ghash_table(&h);
            let blocks: Vec<[u8; 16]> = (0..1 + seed % 5).map(|i| bytes(seed * 31 + i + 7)).collect();
            let mut y = [0u8; 16];
            for b in &blocks {
                let x: [u8; 16] = core::array::from_fn(|i| y[i] ^ b[i]);
                y = ghash_mul_4bit(&table, &x);
            }
            let mut g = ghash::GHash::new(&h.into());
            for b in &blocks {
                g.update(&[(*b).into()]);
            }
            let want: [u8; 16] = g.finalize().into();
            assert_eq!(y, want, "seed {seed}");
        }
    }

    #[test]
    fn te0_known_values() {
        let t = te0();
        assert_eq!(t[0], 0xc66363a5);
        assert_eq!(t[1], 0xf87c7c84);
        assert_eq!(t[0xff], 0x2c16163a);
    }

    #[test]
    fn batch_roundtrip() {
        let b =
            Batch { keys: vec![7; KEY_WORDS * 2], descs: (0..DESC_WORDS as u32 * 3).collect(), data: vec![1, 2, 3] };
        assert_eq!(read_batch(&write_batch(&b)).unwrap(), b);
        assert!(read_batch(&write_batch(&b)[..30]).is_err());
    }

    #[test]
    fn descriptor_fields() {
        let iv: [u8; 16] = core::array::from_fn(|i| i as u8);
        let d = descriptor(3, Op::Unprotect, iv, 12, 100, 100, [1, 2, 3, 4], 4, 100, 10, 64, 110);
        assert_eq!(d[D_SLOT], 3);
        assert_eq!(d[D_FLAGS], 1 | 4 << 8 | 10 << 16);
        assert_eq!(d[D_SUFFIX], 0x01020304);
        assert_eq!(d[D_IV], 0x00010203);
        assert_eq!(d[D_IV + 3], 0x0c0d0e0f);
        assert_eq!(&d[D_OFFSET..D_SUFFIX], &[64, 110, 12, 100, 100, 100]);
        let bad = descriptor(0, Op::Protect, iv, 0, 0, 0, [0; 4], 300, 0, 0, 0, 0);
        assert!(bad[D_ENC_START] > bad[D_ENC_END]);
    }

    #[test]
    fn wire_fields() {
        let iv: [u8; 16] = core::array::from_fn(|i| i as u8);
        let w = wire(3, Op::Unprotect, iv, 12, 100, 100, [1, 2, 3, 4], 4, 100, 10, 0x1_2345_6789, 110);
        assert_eq!(w[0], 3);
        assert_eq!(w[1], 1 | 4 << 8 | 10 << 16);
        assert_eq!((w[2], w[3]), (0x2345_6789, 1));
        assert_eq!(w[4], 110);
        assert_eq!(w[5], 12 | 100 << 16);
        assert_eq!(w[6], 100 | 100 << 16);
        assert_eq!(w[7], 0x01020304);
        assert_eq!((w[8], w[11]), (0x00010203, 0x0c0d0e0f));
        // Too long for a slot, or a field over 16 bits: enc_start > enc_end, length 0.
        for bad in [
            wire(0, Op::Protect, iv, 0, 0, 0, [0; 4], 0, 0, 0, 0, SLOT_BYTES + 1),
            wire(0, Op::Protect, iv, 0, 0x10000, 0, [0; 4], 0, 0, 0, 0, 10),
            wire_skip(),
        ] {
            assert_eq!(bad[4], 0);
            assert!(bad[5] & 0xffff > bad[5] >> 16);
        }
    }
}
