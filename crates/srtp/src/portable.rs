//! The portable engine: AES written here with T-tables, for machines without
//! AES instructions and as the model of the GPU kernel.
//!
//! **Not constant-time.** Table lookups indexed by secret state leak through
//! the cache; use [`crate::CpuEngine`] where an attacker shares the machine.
//!
//! In counter mode only the last byte of the counter block changes from one
//! block to the next (until it wraps, every 256 blocks = 4 KiB of keystream).
//! So after round 0 only one state byte varies, after round 1 one column, and
//! in round 2 each output column has just one varying input byte. The constant
//! parts of rounds 1 and 2 are computed once per 256 blocks and each block then
//! costs 1 + 4 table lookups in rounds 1–2 instead of 32 — the technique of
//! "SRTP AES Optimization Revisited" (Corneliusen, 2016).
//!
//! HMAC-SHA1 and GHASH are shared with the CPU engine (RustCrypto `sha1`,
//! `ghash`): the point of this engine is the AES.

use crate::cpu::f8_masked_key;
use crate::engine::{Engine, Job, Op, Outcome};
use crate::error::Error;
use crate::gcm::{ghash, inc32};
use crate::kdf::SessionKeys;
use crate::sha1mac::HmacSha1;
use crate::suite::Cipher;
use ghash::GHash;
use subtle::ConstantTimeEq;
use zeroize::{Zeroize, ZeroizeOnDrop};

const fn xtime(x: u8) -> u8 {
    (x << 1) ^ if x & 0x80 != 0 { 0x1b } else { 0 }
}

const fn gmul(mut a: u8, mut b: u8) -> u8 {
    let mut p = 0u8;
    while b != 0 {
        if b & 1 != 0 {
            p ^= a;
        }
        a = xtime(a);
        b >>= 1;
    }
    p
}

/// The AES S-box, computed from its definition (inverse in GF(2^8), then the
/// affine map) so that no table is typed in by hand.
const SBOX: [u8; 256] = {
    let mut s = [0u8; 256];
    let mut x = 0usize;
    while x < 256 {
        // x^254 = x^-1 (0 maps to 0).
        let mut inv = 1u8;
        let mut e = 0;
        while e < 254 {
            inv = gmul(inv, x as u8);
            e += 1;
        }
        if x == 0 {
            inv = 0;
        }
        let b = inv;
        s[x] = b ^ b.rotate_left(1) ^ b.rotate_left(2) ^ b.rotate_left(3) ^ b.rotate_left(4) ^ 0x63;
        x += 1;
    }
    s
};

/// Te0[x] = (2·S[x], S[x], S[x], 3·S[x]); Te1..Te3 are its byte rotations.
const TE: [[u32; 256]; 4] = {
    let mut t = [[0u32; 256]; 4];
    let mut x = 0;
    while x < 256 {
        let s = SBOX[x];
        let w = u32::from_be_bytes([gmul(s, 2), s, s, gmul(s, 3)]);
        t[0][x] = w;
        t[1][x] = w.rotate_right(8);
        t[2][x] = w.rotate_right(16);
        t[3][x] = w.rotate_right(24);
        x += 1;
    }
    t
};

/// The AES T-table Te0 (FIPS-197 S-box times the MixColumns column
/// (2, 1, 1, 3)), as big-endian words: the GPU kernels take it from here.
pub fn te0() -> [u32; 256] {
    TE[0]
}

#[inline(always)]
fn b0(w: u32) -> usize {
    (w >> 24) as usize
}
#[inline(always)]
fn b1(w: u32) -> usize {
    ((w >> 16) & 0xff) as usize
}
#[inline(always)]
fn b2(w: u32) -> usize {
    ((w >> 8) & 0xff) as usize
}
#[inline(always)]
fn b3(w: u32) -> usize {
    (w & 0xff) as usize
}

/// Table-driven AES encryption (128, 192 or 256-bit keys).
#[derive(Clone, Zeroize, ZeroizeOnDrop)]
pub struct TableAes {
    rk: [u32; 60],
    rounds: usize,
}

impl TableAes {
    /// Expands `key` (16, 24 or 32 bytes; FIPS-197 §5.2).
    pub fn new(key: &[u8]) -> Result<TableAes, Error> {
        let nk = key.len() / 4;
        let rounds = match key.len() {
            16 => 10,
            24 => 12,
            32 => 14,
            n => return Err(Error::InvalidKey(format!("AES key of {n} bytes"))),
        };
        let mut rk = [0u32; 60];
        for i in 0..nk {
            rk[i] = u32::from_be_bytes([key[4 * i], key[4 * i + 1], key[4 * i + 2], key[4 * i + 3]]);
        }
        let mut rcon = 1u8;
        for i in nk..4 * (rounds + 1) {
            let mut t = rk[i - 1];
            if i % nk == 0 {
                t = sub_word(t.rotate_left(8)) ^ ((rcon as u32) << 24);
                rcon = xtime(rcon);
            } else if nk > 6 && i % nk == 4 {
                t = sub_word(t);
            }
            rk[i] = rk[i - nk] ^ t;
        }
        Ok(TableAes { rk, rounds })
    }

    /// The expanded encryption key: `4 * (rounds + 1)` big-endian words
    /// (FIPS-197 `w[i]`), and the number of rounds. For engines that upload
    /// the schedule elsewhere (the GPU key table).
    pub fn round_keys(&self) -> (&[u32], usize) {
        (&self.rk[..4 * (self.rounds + 1)], self.rounds)
    }

    #[inline(always)]
    fn round(&self, s: [u32; 4], r: usize) -> [u32; 4] {
        let k = &self.rk[4 * r..4 * r + 4];
        [
            TE[0][b0(s[0])] ^ TE[1][b1(s[1])] ^ TE[2][b2(s[2])] ^ TE[3][b3(s[3])] ^ k[0],
            TE[0][b0(s[1])] ^ TE[1][b1(s[2])] ^ TE[2][b2(s[3])] ^ TE[3][b3(s[0])] ^ k[1],
            TE[0][b0(s[2])] ^ TE[1][b1(s[3])] ^ TE[2][b2(s[0])] ^ TE[3][b3(s[1])] ^ k[2],
            TE[0][b0(s[3])] ^ TE[1][b1(s[0])] ^ TE[2][b2(s[1])] ^ TE[3][b3(s[2])] ^ k[3],
        ]
    }

    /// Rounds 3 to the last, from the state after round 2.
    #[inline(always)]
    fn finish(&self, mut s: [u32; 4]) -> [u8; 16] {
        for r in 3..self.rounds {
            s = self.round(s, r);
        }
        let k = &self.rk[4 * self.rounds..4 * self.rounds + 4];
        let f = |a: u32, b: u32, c: u32, d: u32, k: u32| {
            u32::from_be_bytes([SBOX[b0(a)], SBOX[b1(b)], SBOX[b2(c)], SBOX[b3(d)]]) ^ k
        };
        let o = [
            f(s[0], s[1], s[2], s[3], k[0]),
            f(s[1], s[2], s[3], s[0], k[1]),
            f(s[2], s[3], s[0], s[1], k[2]),
            f(s[3], s[0], s[1], s[2], k[3]),
        ];
        let mut out = [0u8; 16];
        for i in 0..4 {
            out[4 * i..4 * i + 4].copy_from_slice(&o[i].to_be_bytes());
        }
        out
    }

    fn load(block: &[u8; 16], rk: &[u32]) -> [u32; 4] {
        let w =
            |i: usize| u32::from_be_bytes([block[4 * i], block[4 * i + 1], block[4 * i + 2], block[4 * i + 3]]) ^ rk[i];
        [w(0), w(1), w(2), w(3)]
    }

    /// Encrypts one block.
    pub fn encrypt_block(&self, block: &[u8; 16]) -> [u8; 16] {
        let s = Self::load(block, &self.rk);
        let s = self.round(s, 1);
        let s = self.round(s, 2);
        self.finish(s)
    }

    /// XORs `data` with the counter-mode keystream from `ctr`, advancing the
    /// counter with `step` (which may change bytes 0..15 only when byte 15
    /// wraps to zero: true of the 128-bit increment and of GCM's inc32).
    pub fn ctr_xor(&self, mut ctr: [u8; 16], data: &mut [u8], step: impl Fn(&mut [u8; 16])) {
        let mut hoist = Hoisted::default();
        for (i, chunk) in data.chunks_mut(16).enumerate() {
            if i == 0 || ctr[15] == 0 {
                hoist = self.hoist(&ctr);
            }
            let ks = self.ctr_block(&hoist, ctr[15]);
            for (d, k) in chunk.iter_mut().zip(ks.iter()) {
                *d ^= k;
            }
            step(&mut ctr);
        }
        hoist.zeroize();
    }

    /// The constant parts of rounds 0–2 for the 256 counter blocks that share
    /// bytes 0..15 with `ctr`.
    fn hoist(&self, ctr: &[u8; 16]) -> Hoisted {
        let mut base = *ctr;
        base[15] = 0;
        let s = Self::load(&base, &self.rk);
        let k1 = &self.rk[4..8];
        // Round 1: columns 1..3 do not depend on byte 15; column 0 only through Te3.
        let p0 = TE[0][b0(s[0])] ^ TE[1][b1(s[1])] ^ TE[2][b2(s[2])] ^ k1[0];
        let t1 = TE[0][b0(s[1])] ^ TE[1][b1(s[2])] ^ TE[2][b2(s[3])] ^ TE[3][b3(s[0])] ^ k1[1];
        let t2 = TE[0][b0(s[2])] ^ TE[1][b1(s[3])] ^ TE[2][b2(s[0])] ^ TE[3][b3(s[1])] ^ k1[2];
        let t3 = TE[0][b0(s[3])] ^ TE[1][b1(s[0])] ^ TE[2][b2(s[1])] ^ TE[3][b3(s[2])] ^ k1[3];
        let k2 = &self.rk[8..12];
        // Round 2: each column has one term from the varying column t0.
        Hoisted {
            x15: (s[3] & 0xff) as u8,
            p0,
            q: [
                TE[1][b1(t1)] ^ TE[2][b2(t2)] ^ TE[3][b3(t3)] ^ k2[0],
                TE[0][b0(t1)] ^ TE[1][b1(t2)] ^ TE[2][b2(t3)] ^ k2[1],
                TE[0][b0(t2)] ^ TE[1][b1(t3)] ^ TE[3][b3(t1)] ^ k2[2],
                TE[0][b0(t3)] ^ TE[2][b2(t1)] ^ TE[3][b3(t2)] ^ k2[3],
            ],
        }
    }

    #[inline(always)]
    fn ctr_block(&self, h: &Hoisted, low: u8) -> [u8; 16] {
        let t0 = h.p0 ^ TE[3][(h.x15 ^ low) as usize];
        let s = [h.q[0] ^ TE[0][b0(t0)], h.q[1] ^ TE[3][b3(t0)], h.q[2] ^ TE[2][b2(t0)], h.q[3] ^ TE[1][b1(t0)]];
        self.finish(s)
    }
}

fn sub_word(w: u32) -> u32 {
    let b = w.to_be_bytes();
    u32::from_be_bytes([SBOX[b[0] as usize], SBOX[b[1] as usize], SBOX[b[2] as usize], SBOX[b[3] as usize]])
}

/// Round 0–2 constants for one 256-block run of counters.
#[derive(Default, Zeroize)]
struct Hoisted {
    /// Byte 15 of the counter block XOR the round key, before the counter's low byte.
    x15: u8,
    p0: u32,
    q: [u32; 4],
}

// One per session key, never moved per packet (see `CpuCipher`).
#[allow(clippy::large_enum_variant)]
enum PortableCipher {
    Null,
    Cm(TableAes),
    F8 { k: TableAes, masked: TableAes },
    Gcm { aes: TableAes, h: GHash },
}

/// Session keys expanded for the portable engine.
pub struct PortableKeys {
    cipher: PortableCipher,
    mac: Option<HmacSha1>,
}

/// The portable table-AES engine. Not constant-time (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct PortableEngine;

impl PortableEngine {
    /// A new engine.
    pub fn new() -> PortableEngine {
        PortableEngine
    }
}

fn add128(b: &mut [u8; 16]) {
    *b = u128::from_be_bytes(*b).wrapping_add(1).to_be_bytes();
}

impl Engine for PortableEngine {
    type Keys = PortableKeys;

    fn name(&self) -> &'static str {
        "portable"
    }

    fn prepare_keys(&self, keys: &SessionKeys) -> Result<PortableKeys, Error> {
        let k = keys.enc_key();
        let cipher = match keys.suite().cipher() {
            Cipher::Null => PortableCipher::Null,
            Cipher::AesCm(_) => PortableCipher::Cm(TableAes::new(k)?),
            Cipher::AesF8 => {
                let mut masked = f8_masked_key(k, keys.salt());
                let c = PortableCipher::F8 { k: TableAes::new(k)?, masked: TableAes::new(&masked)? };
                masked.zeroize();
                c
            }
            Cipher::AesGcm(_) => {
                let aes = TableAes::new(k)?;
                let h = aes.encrypt_block(&[0u8; 16]);
                let h = <GHash as ghash::universal_hash::KeyInit>::new(&h.into());
                PortableCipher::Gcm { aes, h }
            }
        };
        let mac = (!keys.suite().is_aead()).then(|| HmacSha1::new(keys.auth_key()));
        Ok(PortableKeys { cipher, mac })
    }

    /// Every suite: HMAC and GHASH tags are checked before decrypting.
    fn keeps_failed(&self, _suite: crate::Suite) -> bool {
        true
    }

    fn transform(&self, jobs: &mut [Job<'_, PortableKeys>]) {
        for job in jobs {
            job.outcome = if job.is_well_formed() { run(job) } else { Outcome::AuthFailed };
        }
    }
}

fn run(job: &mut Job<'_, PortableKeys>) -> Outcome {
    let keys = job.keys;
    if let PortableCipher::Gcm { aes, h } = &keys.cipher {
        return gcm(job, aes, h);
    }
    let mac = keys.mac.as_ref().expect("HMAC suites have a MAC key");
    if job.op == Op::Unprotect {
        let tag = mac.mac(&[&job.buf[..job.auth_end], job.suffix()]);
        if !bool::from(tag[..job.tag_len].ct_eq(&job.buf[job.tag_start..job.tag_start + job.tag_len])) {
            return Outcome::AuthFailed;
        }
    }
    let data = &mut job.buf[job.enc_start..job.enc_end];
    match &keys.cipher {
        PortableCipher::Null | PortableCipher::Gcm { .. } => {}
        PortableCipher::Cm(aes) => aes.ctr_xor(job.iv, data, add128),
        PortableCipher::F8 { k, masked } => {
            let iv2 = masked.encrypt_block(&job.iv);
            let mut s = [0u8; 16];
            for (j, chunk) in data.chunks_mut(16).enumerate() {
                let jb = (j as u128).to_be_bytes();
                for i in 0..16 {
                    s[i] ^= iv2[i] ^ jb[i];
                }
                s = k.encrypt_block(&s);
                chunk.iter_mut().zip(s.iter()).for_each(|(d, k)| *d ^= k);
            }
        }
    }
    if job.op == Op::Protect {
        let tag = mac.mac(&[&job.buf[..job.auth_end], job.suffix()]);
        job.buf[job.tag_start..job.tag_start + job.tag_len].copy_from_slice(&tag[..job.tag_len]);
    }
    Outcome::Done
}

fn gcm(job: &mut Job<'_, PortableKeys>, aes: &TableAes, h: &GHash) -> Outcome {
    if job.tag_start < job.enc_end || job.tag_len != 16 {
        return Outcome::AuthFailed;
    }
    let mut j0 = [0u8; 16];
    j0[..12].copy_from_slice(&job.iv[..12]);
    j0[15] = 1;
    let mut mask = aes.encrypt_block(&j0);
    let (head, rest) = job.buf.split_at_mut(job.enc_start);
    let (data, tail) = rest.split_at_mut(job.enc_end - job.enc_start);
    let tag_off = job.tag_start - job.enc_end;
    let tag = &mut tail[tag_off..tag_off + 16];
    let suffix = &job.suffix[..job.suffix_len];
    if job.op == Op::Unprotect {
        let mut expect = ghash(h, head, suffix, data);
        expect.iter_mut().zip(mask.iter()).for_each(|(e, m)| *e ^= m);
        if !bool::from(expect.ct_eq(tag)) {
            return Outcome::AuthFailed;
        }
    }
    let mut ctr = j0;
    inc32(&mut ctr, 1);
    aes.ctr_xor(ctr, data, |b| inc32(b, 1));
    if job.op == Op::Protect {
        let mut t = ghash(h, head, suffix, data);
        t.iter_mut().zip(mask.iter()).for_each(|(e, m)| *e ^= m);
        tag.copy_from_slice(&t);
    }
    mask.zeroize();
    Outcome::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes::cipher::{BlockEncrypt, KeyInit};

    #[test]
    fn sbox_known_values() {
        assert_eq!(SBOX[0], 0x63);
        assert_eq!(SBOX[1], 0x7c);
        assert_eq!(SBOX[0x53], 0xed);
        assert_eq!(SBOX[0xff], 0x16);
    }

    #[test]
    fn block_matches_aes_crate() {
        for len in [16, 24, 32] {
            let key: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            let t = TableAes::new(&key).unwrap();
            for seed in 0..50u8 {
                let block: [u8; 16] = core::array::from_fn(|i| seed.wrapping_mul(i as u8 + 3));
                let mut b = aes::Block::from(block);
                match len {
                    16 => aes::Aes128::new_from_slice(&key).unwrap().encrypt_block(&mut b),
                    24 => aes::Aes192::new_from_slice(&key).unwrap().encrypt_block(&mut b),
                    _ => aes::Aes256::new_from_slice(&key).unwrap().encrypt_block(&mut b),
                }
                assert_eq!(t.encrypt_block(&block), <[u8; 16]>::from(b));
            }
        }
    }

    /// Hoisted counter mode equals plain block-by-block counter mode at every
    /// length around the 4 KiB boundary and for counters that wrap byte 15 and
    /// byte 14 mid-stream; nothing past the buffer is touched.
    #[test]
    fn ctr_matches_aes_crate_at_edge_lengths() {
        let key = [7u8; 16];
        let t = TableAes::new(&key).unwrap();
        let c = aes::Aes128::new_from_slice(&key).unwrap();
        for start_low in [0u16, 1, 0xf0, 0xfffe] {
            for len in [0usize, 1, 15, 16, 17, 4095, 4096, 4097, 1500 - 12 - 10, 8192 + 3] {
                let mut iv = [0x3cu8; 16];
                iv[14..].copy_from_slice(&start_low.to_be_bytes());
                let mut buf = vec![0xa5u8; len + 32];
                let mut want = buf.clone();
                t.ctr_xor(iv, &mut buf[16..16 + len], add128);
                crate::cpu::ctr128(&c, iv, &mut want[16..16 + len]);
                assert_eq!(buf, want, "len {len} start {start_low:#x}");
                assert!(buf[..16].iter().chain(&buf[16 + len..]).all(|&b| b == 0xa5));
            }
        }
    }
}
