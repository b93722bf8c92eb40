//! The production CPU engine, on vetted primitives chosen per suite by
//! measurement (docs/BENCHMARKS.md): RustCrypto `aes` (AES-NI, constant-time
//! bitsliced software otherwise) and HMAC-SHA1 from precomputed midstates for
//! AES-CM/f8, multi-buffer across the batch ([`crate::sha1x`]: AVX-512,
//! AVX2 or interleaved SHA-NI; RustCrypto `sha1` one packet at a time for
//! small groups); aws-lc-rs for AES-GCM, which seals a G.711 packet about 2×
//! faster than the `aes-gcm` crate.
//!
//! A batch runs in phases (`transform` of [`CpuEngine`]): protect jobs are
//! encrypted, then the MACs of up to 16 HMAC jobs are computed together;
//! protect jobs get their tags, unprotect jobs are checked in constant time
//! and only the ones that pass are decrypted (a failed packet is left as it
//! was). GCM, NULL-cipher and malformed jobs run one by one in the same call.
//!
//! AES stays on `aes` 0.8 (AES-NI, eight blocks in flight). `aes` 0.9 has
//! VAES (256- and 512-bit) backends chosen at run time, but they work in
//! chunks of 30 or 64 blocks of one key and encrypt the rest one block at a
//! time; a G.711 payload is 10 blocks under its own key, so on the
//! development machine (Zen 4, VAES) `aes` 0.9 took 68 ns for 10 blocks
//! against 36.5 ns for 0.8 (and 188 ns for 64 blocks: no gain per block even
//! when full). No maintained crate runs CTR with VAES across packets of
//! different keys; AES is not written here.
//!
//! Keys are expanded once per session key: AES round keys, HMAC-SHA1
//! midstates, GCM hash key. The per-packet path does no allocation and no key
//! setup; tags are compared in constant time; all key material is zeroized
//! on drop.

use crate::engine::{Engine, Job, Op, Outcome};
use crate::error::Error;
use crate::gcm::{ghash, inc32};
use crate::kdf::SessionKeys;
use crate::sha1mac::HmacSha1;
use crate::sha1x::{Kernel, MacBatch, MacPath, LANES, MAX_MESSAGE};
use crate::suite::Cipher;
use aes::cipher::consts::U16;
use aes::cipher::{BlockEncrypt, BlockSizeUser, KeyInit};
use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM};
use ghash::GHash;
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

/// Blocks of keystream generated per AES call (lets AES-NI pipeline).
const PAR: usize = 16;

// One per session key, never moved per packet: boxing the big variants would
// only add a pointer chase to every packet.
#[allow(clippy::large_enum_variant)]
enum CpuCipher {
    Null,
    Cm128(aes::Aes128),
    Cm192(aes::Aes192),
    Cm256(aes::Aes256),
    F8 {
        k: aes::Aes128,
        masked: aes::Aes128,
    },
    /// aws-lc for the packet path; AES + GHASH for an SRTCP AAD too long to
    /// gather on the stack (unencrypted SRTCP, RFC 7714 §17).
    Gcm128(Box<(LessSafeKey, aes::Aes128, GHash)>),
    Gcm256(Box<(LessSafeKey, aes::Aes256, GHash)>),
}

/// Session keys expanded for the CPU engine.
pub struct CpuKeys {
    cipher: CpuCipher,
    mac: Option<HmacSha1>,
}

/// The production CPU engine. Holds only its choice of HMAC path; copy and
/// share it freely.
#[derive(Clone, Copy, Debug)]
pub struct CpuEngine {
    mac: Kernel,
    /// Smallest group of HMAC jobs given to `mac`.
    min_lanes: usize,
    /// The kernel of smaller groups of 2 or more (SHA-NI where `mac` is a
    /// wide path and the CPU has it); a group it does not take runs one job
    /// at a time.
    small: Option<Kernel>,
}

impl Default for CpuEngine {
    fn default() -> Self {
        CpuEngine::new()
    }
}

impl CpuEngine {
    /// A new engine on the best HMAC path this CPU has ([`MacPath::best`]);
    /// groups smaller than the path's [`MacPath::min_lanes`] (a batch of one
    /// packet, the last few HMAC jobs of a batch) run one job at a time.
    pub fn new() -> CpuEngine {
        let mac = Kernel::new(MacPath::best()).unwrap_or(Kernel::Single);
        let small = Kernel::new(MacPath::ShaNi).filter(|_| mac.path() != MacPath::ShaNi);
        CpuEngine { mac, min_lanes: mac.path().min_lanes(), small }
    }

    /// An engine forced onto `path` for every group of HMAC jobs, even a
    /// group of one (for tests and benchmarks); `None` where this CPU lacks
    /// the path. [`MacPath::Single`] is the one-job-at-a-time code.
    pub fn with_mac_path(path: MacPath) -> Option<CpuEngine> {
        let min_lanes = if path == MacPath::Single { usize::MAX } else { 1 };
        Kernel::new(path).map(|mac| CpuEngine { mac, min_lanes, small: None })
    }

    /// The HMAC path this engine runs batches on.
    pub fn mac_path(&self) -> MacPath {
        self.mac.path()
    }
}

fn gcm_parts<C: BlockEncrypt + KeyInit + BlockSizeUser<BlockSize = U16>>(key: &[u8]) -> (C, GHash) {
    let c = C::new_from_slice(key).expect("key length checked by SessionKeys");
    let mut h = aes::Block::default();
    c.encrypt_block(&mut h);
    let g = <GHash as ghash::universal_hash::KeyInit>::new(&h);
    (c, g)
}

fn aead_key(alg: &'static aws_lc_rs::aead::Algorithm, key: &[u8]) -> Result<LessSafeKey, Error> {
    UnboundKey::new(alg, key).map(LessSafeKey::new).map_err(|_| Error::InvalidKey("AES-GCM key rejected".into()))
}

/// The f8 key mask m = salt || 0x5555 (RFC 3711 §4.1.2.2), XORed into the key.
pub(crate) fn f8_masked_key(key: &[u8], salt: &[u8]) -> [u8; 16] {
    let mut m = [0x55u8; 16];
    m[..salt.len()].copy_from_slice(salt);
    let mut out = [0u8; 16];
    for i in 0..16 {
        out[i] = key[i] ^ m[i];
    }
    out
}

impl Engine for CpuEngine {
    type Keys = CpuKeys;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn prepare_keys(&self, keys: &SessionKeys) -> Result<CpuKeys, Error> {
        let k = keys.enc_key();
        let cipher = match keys.suite().cipher() {
            Cipher::Null => CpuCipher::Null,
            Cipher::AesCm(16) => CpuCipher::Cm128(aes::Aes128::new_from_slice(k).expect("16")),
            Cipher::AesCm(24) => CpuCipher::Cm192(aes::Aes192::new_from_slice(k).expect("24")),
            Cipher::AesCm(_) => CpuCipher::Cm256(aes::Aes256::new_from_slice(k).expect("32")),
            Cipher::AesF8 => {
                let mut masked = f8_masked_key(k, keys.salt());
                let c = CpuCipher::F8 {
                    k: aes::Aes128::new_from_slice(k).expect("16"),
                    masked: aes::Aes128::new_from_slice(&masked).expect("16"),
                };
                zeroize::Zeroize::zeroize(&mut masked);
                c
            }
            Cipher::AesGcm(16) => {
                let (c, g) = gcm_parts::<aes::Aes128>(k);
                CpuCipher::Gcm128(Box::new((aead_key(&AES_128_GCM, k)?, c, g)))
            }
            Cipher::AesGcm(_) => {
                let (c, g) = gcm_parts::<aes::Aes256>(k);
                CpuCipher::Gcm256(Box::new((aead_key(&AES_256_GCM, k)?, c, g)))
            }
        };
        let mac = (!keys.suite().is_aead()).then(|| HmacSha1::new(keys.auth_key()));
        Ok(CpuKeys { cipher, mac })
    }

    /// HMAC suites: the tag is checked before the packet is decrypted
    /// (`settle`). Not GCM: aws-lc clears the output of a failed open.
    fn keeps_failed(&self, suite: crate::Suite) -> bool {
        !suite.is_aead()
    }

    /// The cipher's first lines and the HMAC midstates, by address only:
    /// nothing of `keys` is read, so a caller need not wait for it to be in
    /// the cache. The first lines hold the variant and, as `aes` 0.8 lays
    /// out its AES-NI keys (not a promise of its API), the encryption round
    /// keys before the decryption keys CTR never reads; for GCM only the
    /// box's pointer, not aws-lc's key behind it.
    fn prefetch_keys(&self, keys: &CpuKeys) {
        // The variant's tag and 15 round keys (AES-256) at most.
        crate::prefetch::bytes(&keys.cipher, 16 + 15 * 16);
        crate::prefetch::value(&keys.mac);
    }

    /// Runs the batch in phases. HMAC jobs (AES-CM and f8) are gathered in
    /// groups of [`LANES`]: a protect job is encrypted when it is met; each
    /// full group (and the last one) then gets its MACs in one multi-buffer
    /// pass, after which protect jobs get their tags and unprotect jobs are
    /// checked in constant time and only then decrypted. GCM, NULL-cipher and
    /// malformed jobs are done one by one as they are met.
    #[inline]
    fn transform(&self, jobs: &mut [Job<'_, CpuKeys>]) {
        // A batch too small for any kernel (one packet alone, above all):
        // the one-job-at-a-time loop, small enough to be inlined where a
        // context protects or unprotects one packet; the phases are a
        // function of their own.
        if jobs.len() < self.small.map_or(self.min_lanes, |k| k.path().min_lanes().min(self.min_lanes)) {
            for job in jobs {
                job.outcome = if job.is_well_formed() { run(job) } else { Outcome::AuthFailed };
            }
            return;
        }
        self.transform_batch(jobs);
    }
}

impl CpuEngine {
    /// [`Engine::transform`] of a batch large enough for a multi-buffer
    /// kernel.
    #[inline(never)]
    fn transform_batch(&self, jobs: &mut [Job<'_, CpuKeys>]) {
        let mut group = [0usize; LANES];
        let mut n = 0;
        for i in 0..jobs.len() {
            let job = &mut jobs[i];
            if !job.is_well_formed() {
                job.outcome = Outcome::AuthFailed;
            } else if !is_batched(job) {
                job.outcome = run(job);
            } else {
                if job.op == Op::Protect {
                    crypt(job);
                }
                group[n] = i;
                n += 1;
                if n == LANES {
                    self.finish_group(jobs, &group);
                    n = 0;
                }
            }
        }
        self.finish_group(jobs, &group[..n]);
    }
}

/// Whether `job` takes the multi-buffer HMAC path: AES-CM and f8 with HMAC.
fn is_batched(job: &Job<'_, CpuKeys>) -> bool {
    let cipher = matches!(
        job.keys.cipher,
        CpuCipher::Cm128(_) | CpuCipher::Cm192(_) | CpuCipher::Cm256(_) | CpuCipher::F8 { .. }
    );
    cipher && job.keys.mac.is_some() && job.auth_end <= MAX_MESSAGE && job.tag_len <= 20
}

impl CpuEngine {
    /// The MAC phase of a group of HMAC jobs (protect jobs already
    /// encrypted): tags for protect, check then decrypt for unprotect. A
    /// group too small to fill the lanes profitably runs on the small-group
    /// kernel or one job at a time.
    fn finish_group(&self, jobs: &mut [Job<'_, CpuKeys>], group: &[usize]) {
        let kernel = match self.small {
            _ if group.len() >= self.min_lanes => Some(self.mac),
            Some(k) if group.len() >= k.path().min_lanes() => Some(k),
            _ => None,
        };
        let Some(kernel) = kernel else {
            for &i in group {
                let job = &mut jobs[i];
                let tag = mac_of(job).mac(&[&job.buf[..job.auth_end], job.suffix()]);
                job.outcome = settle(job, &tag);
            }
            return;
        };
        let mut tags = [[0u8; 20]; LANES];
        {
            let mut batch = MacBatch::new();
            for &i in group {
                let job = &jobs[i];
                batch.push(mac_of(job), &job.buf[..job.auth_end], job.suffix());
            }
            batch.run(kernel, &mut tags);
        }
        for (&i, tag) in group.iter().zip(&tags) {
            let job = &mut jobs[i];
            job.outcome = settle(job, tag);
        }
        tags.zeroize();
    }
}

fn mac_of<'k>(job: &Job<'k, CpuKeys>) -> &'k HmacSha1 {
    job.keys.mac.as_ref().expect("HMAC suites have a MAC key")
}

/// Given the HMAC of a job's authenticated bytes: writes the tag (protect,
/// already encrypted), or compares it in constant time and decrypts only if
/// it matches (unprotect; a failed packet is left as it was).
fn settle(job: &mut Job<'_, CpuKeys>, tag: &[u8; 20]) -> Outcome {
    let range = job.tag_start..job.tag_start + job.tag_len;
    match job.op {
        Op::Protect => {
            job.buf[range].copy_from_slice(&tag[..job.tag_len]);
            Outcome::Done
        }
        Op::Unprotect => {
            if !bool::from(tag[..job.tag_len].ct_eq(&job.buf[range])) {
                return Outcome::AuthFailed;
            }
            crypt(job);
            Outcome::Done
        }
    }
}

/// En- or decrypts the job's encrypted range (AES-CM, f8; NULL does nothing).
fn crypt(job: &mut Job<'_, CpuKeys>) {
    let (iv, range) = (job.iv, job.enc_start..job.enc_end);
    match &job.keys.cipher {
        CpuCipher::Null => {}
        CpuCipher::Cm128(c) => ctr128(c, iv, &mut job.buf[range]),
        CpuCipher::Cm192(c) => ctr128(c, iv, &mut job.buf[range]),
        CpuCipher::Cm256(c) => ctr128(c, iv, &mut job.buf[range]),
        CpuCipher::F8 { k, masked } => f8(k, masked, iv, &mut job.buf[range]),
        CpuCipher::Gcm128(_) | CpuCipher::Gcm256(_) => unreachable!("GCM jobs take `gcm`"),
    }
}

/// One job alone (every suite): the path of a batch too small to group.
fn run(job: &mut Job<'_, CpuKeys>) -> Outcome {
    let keys = job.keys;
    match &keys.cipher {
        CpuCipher::Gcm128(g) => return gcm(job, &g.0, &g.1, &g.2),
        CpuCipher::Gcm256(g) => return gcm(job, &g.0, &g.1, &g.2),
        _ => {}
    }
    if job.op == Op::Protect {
        crypt(job);
    }
    let tag = mac_of(job).mac(&[&job.buf[..job.auth_end], job.suffix()]);
    settle(job, &tag)
}

/// XORs `data` with the AES counter-mode keystream starting at counter block
/// `iv` (128-bit big-endian increment, RFC 3711 §4.1.1).
pub(crate) fn ctr128<C: BlockEncrypt + BlockSizeUser<BlockSize = U16>>(cipher: &C, iv: [u8; 16], data: &mut [u8]) {
    let base = u128::from_be_bytes(iv);
    ctr_with(cipher, data, |i| base.wrapping_add(i as u128).to_be_bytes());
}

/// Counter mode with GCM's 32-bit increment (NIST SP 800-38D §6.2).
fn ctr32<C: BlockEncrypt + BlockSizeUser<BlockSize = U16>>(cipher: &C, iv: [u8; 16], data: &mut [u8]) {
    let low = u32::from_be_bytes([iv[12], iv[13], iv[14], iv[15]]);
    ctr_with(cipher, data, |i| {
        let mut b = iv;
        b[12..].copy_from_slice(&low.wrapping_add(i).to_be_bytes());
        b
    });
}

fn ctr_with<C: BlockEncrypt + BlockSizeUser<BlockSize = U16>>(
    cipher: &C,
    data: &mut [u8],
    counter: impl Fn(u32) -> [u8; 16],
) {
    let mut blocks = [aes::Block::default(); PAR];
    let mut i = 0u32;
    for chunk in data.chunks_mut(PAR * 16) {
        let n = chunk.len().div_ceil(16);
        for b in blocks[..n].iter_mut() {
            *b = counter(i).into();
            i = i.wrapping_add(1);
        }
        cipher.encrypt_blocks(&mut blocks[..n]);
        xor_keystream(chunk, &blocks[..n]);
    }
}

/// XORs whole 16-byte words at a time (the byte loop only for the tail).
pub(crate) fn xor_keystream(data: &mut [u8], blocks: &[aes::Block]) {
    for (d, k) in data.chunks_mut(16).zip(blocks) {
        if let Ok(d16) = <&mut [u8; 16]>::try_from(&mut *d) {
            let x = u128::from_ne_bytes(*d16) ^ u128::from_ne_bytes((*k).into());
            *d16 = x.to_ne_bytes();
        } else {
            d.iter_mut().zip(k.iter()).for_each(|(d, k)| *d ^= k);
        }
    }
}

/// AES-f8 (RFC 3711 §4.1.2.2): IV' = E(k XOR m, IV); S(j) = E(k, IV' XOR j XOR S(j-1)).
pub(crate) fn f8(k: &aes::Aes128, masked: &aes::Aes128, iv: [u8; 16], data: &mut [u8]) {
    let mut iv2 = aes::Block::from(iv);
    masked.encrypt_block(&mut iv2);
    let mut s = aes::Block::default();
    for (j, chunk) in data.chunks_mut(16).enumerate() {
        let jb = (j as u128).to_be_bytes();
        for i in 0..16 {
            s[i] ^= iv2[i] ^ jb[i];
        }
        k.encrypt_block(&mut s);
        for (d, k) in chunk.iter_mut().zip(s.iter()) {
            *d ^= k;
        }
    }
}

/// Largest AAD gathered on the stack for aws-lc (header + SRTCP index word).
const MAX_STACK_AAD: usize = 128;

/// `head || suffix` in a stack buffer (`head.len() + suffix.len() <= MAX_STACK_AAD`).
fn gather_aad(head: &[u8], suffix: &[u8]) -> [u8; MAX_STACK_AAD] {
    let mut buf = [0u8; MAX_STACK_AAD];
    buf[..head.len()].copy_from_slice(head);
    buf[head.len()..head.len() + suffix.len()].copy_from_slice(suffix);
    buf
}

fn gcm<C: BlockEncrypt + BlockSizeUser<BlockSize = U16>>(
    job: &mut Job<'_, CpuKeys>,
    aead: &LessSafeKey,
    cipher: &C,
    h: &GHash,
) -> Outcome {
    // RFC 7714: the tag follows the ciphertext directly, for SRTP and SRTCP.
    if job.tag_start != job.enc_end || job.tag_len != 16 {
        return Outcome::AuthFailed;
    }
    let nonce: [u8; 12] = job.iv[..12].try_into().expect("12 bytes");
    let suffix_len = job.suffix_len;
    let (head, rest) = job.buf.split_at_mut(job.enc_start);
    if head.len() + suffix_len <= MAX_STACK_AAD {
        // SRTP (no suffix) hands the header to aws-lc in place; only SRTCP's
        // AAD is gathered, so the SRTP path neither fills nor clears a buffer.
        let aad_buf: [u8; MAX_STACK_AAD];
        let aad: &[u8] = if suffix_len == 0 {
            head
        } else {
            aad_buf = gather_aad(head, &job.suffix[..suffix_len]);
            &aad_buf[..head.len() + suffix_len]
        };
        let n = Nonce::assume_unique_for_key(nonce);
        let data_len = job.enc_end - job.enc_start;
        return match job.op {
            Op::Protect => {
                let (data, tail) = rest.split_at_mut(data_len);
                match aead.seal_in_place_separate_tag(n, Aad::from(aad), data) {
                    Ok(tag) => {
                        tail[..16].copy_from_slice(tag.as_ref());
                        Outcome::Done
                    }
                    Err(_) => Outcome::AuthFailed,
                }
            }
            Op::Unprotect => match aead.open_in_place(n, Aad::from(aad), &mut rest[..data_len + 16]) {
                Ok(_) => Outcome::Done,
                Err(_) => Outcome::AuthFailed,
            },
        };
    }
    // A long AAD with a suffix: GHASH over the two pieces without copying.
    let (data, tail) = rest.split_at_mut(job.enc_end - job.enc_start);
    let tag = &mut tail[..16];
    let mut j0 = [0u8; 16];
    j0[..12].copy_from_slice(&nonce);
    j0[15] = 1;
    let mut mask = aes::Block::from(j0);
    cipher.encrypt_block(&mut mask);
    let suffix = &job.suffix[..suffix_len];
    let mut ctr = j0;
    inc32(&mut ctr, 1);
    if job.op == Op::Unprotect {
        let mut expect = ghash(h, head, suffix, data);
        expect.iter_mut().zip(mask.iter()).for_each(|(e, m)| *e ^= m);
        if !bool::from(expect.ct_eq(tag)) {
            return Outcome::AuthFailed;
        }
    }
    ctr32(cipher, ctr, data);
    if job.op == Op::Protect {
        let mut t = ghash(h, head, suffix, data);
        t.iter_mut().zip(mask.iter()).for_each(|(e, m)| *e ^= m);
        tag.copy_from_slice(&t);
    }
    Outcome::Done
}
