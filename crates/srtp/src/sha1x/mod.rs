//! Multi-buffer HMAC-SHA1: the MACs of up to [`LANES`] packets at once, one
//! packet per SIMD lane (or per interleaved SHA-NI stream).
//!
//! A single SHA-1 stream is a chain of 80 dependent rounds, and the HMAC of
//! a G.711 packet is four such blocks. The packets of a batch are
//! independent, so their compressions can run side by side. The paths, in
//! the order the engine prefers them (measured: see [`MacPath::ALL`]):
//!
//! | path | lanes | how | needs |
//! |---|---|---|---|
//! | [`MacPath::Avx512`] | 16 | one packet per 32-bit lane of a `zmm`; `vprold` rotates, `vpternlogd` for Ch/Parity/Maj; lanes that finished keep their state through the store mask | AVX-512F, AVX-512BW |
//! | [`MacPath::Avx2`] | 8 (twice per group) | as AVX-512 with shift/or rotates and two-input boolean operations; lanes that finished are left out of the masked store | AVX2 |
//! | [`MacPath::ShaNi`] | 4 streams | the SHA-NI rounds of four packets interleaved, for CPUs where one stream waits on the latency of `sha1rnds4`; also the engine's kernel for groups too small for the wide paths | SHA, SSE4.1 |
//! | [`MacPath::Single`] | 1 | one packet at a time through RustCrypto `sha1` (which uses SHA-NI by itself where present): the code before this module, and the fallback on every machine | — |
//!
//! **Lanes of different lengths.** Every lane has its own block count. A
//! group of lanes runs as many block steps as its longest lane; at each step
//! a lane whose message is done is fed a block of zeros and its state is not
//! written back (the store mask). Full 64-byte blocks are read in place from
//! the packet buffer; only each lane's last one or two blocks (the tail of
//! the packet, the 4-byte ROC, the 0x80 byte and the bit length, counting the
//! 64-byte ipad block before the message) are assembled, in a 128-byte
//! scratch per lane on the stack. The outer hash is one block per lane built
//! from the inner digest in registers (no bytes). No allocation.
//!
//! **Secrets.** The inner and outer midstates, transposed into lane layout,
//! and the inner digests live in [`MacBatch`], which is zeroized when it is
//! dropped; the computed tags are the caller's to wipe. SIMD SHA-1 uses no
//! table lookups and no branch on data: constant time in the key and the
//! message. (Registers spilled by the compiler cannot be wiped from Rust.)
//!
//! **`unsafe`.** Each kernel's `#[target_feature]` functions are private and
//! reached only through its safe `compress`/`outer`, which take the path's
//! `Token`: a token is made only by `Token::detect`, after
//! `is_x86_feature_detected!` found every feature the kernel enables (the
//! `SAFETY` comment at each call says which). Inside, the intrinsics are
//! safe calls; the remaining `unsafe` blocks are unaligned loads and masked
//! stores through pointers, whose comments state the bounds.
//!
//! **Why written here.** No maintained Rust crate does multi-buffer SHA-1
//! (searched docs.rs and public code for multi-buffer / x8 / x16 SHA-1:
//! there are multi-buffer SHA-256 crates such as `tape-sha256`, and the
//! multi-buffer SHA-1 of OpenSSL, ISA-L and the Linux kernel is assembly in
//! C projects); RustCrypto's `sha1` compresses one stream. The kernels
//! follow the public descriptions of those (16x16 / 8x8 transposes of the
//! message words, the SHA-NI round sequence of Intel's reference code) and
//! are checked against the `hmac` crate in the tests of every path.

#![allow(unsafe_code)]

use crate::sha1mac::HmacSha1;
use core::fmt;
use sha1::digest::generic_array::GenericArray;
use zeroize::{Zeroize, ZeroizeOnDrop};

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod shani;

/// Packets per multi-buffer group.
pub const LANES: usize = 16;

/// SHA-1 words of the lanes' states, transposed: `[word][lane]`.
pub(crate) type LaneWords = [[u32; LANES]; 5];

/// The K constants of the four 20-round stages (the SIMD kernels').
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const K: [u32; 4] = [0x5A82_7999, 0x6ED9_EBA1, 0x8F1B_BCDC, 0xCA62_C1D6];

/// Bit length of the outer hash's input: the opad block and the 20-byte digest.
pub(crate) const OUTER_BITS: u32 = (64 + 20) * 8;

static ZERO_BLOCK: [u8; 64] = [0; 64];

/// How the CPU engine computes HMAC-SHA1 over a batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MacPath {
    /// 16 lanes of AVX-512.
    Avx512,
    /// Four SHA-NI streams interleaved.
    ShaNi,
    /// 8 lanes of AVX2.
    Avx2,
    /// One packet at a time (RustCrypto `sha1`); every machine has it.
    Single,
}

impl MacPath {
    /// Every path, best first, as measured on the development machine (AMD
    /// EPYC, Zen 4, which has all four) with `cargo bench --bench srtp --
    /// mac16`, HMACs of 172-byte packets + ROC (4 SHA-1 blocks each), ns per
    /// HMAC in a group of 16 / of 4: AVX-512 52 / 174, AVX2 84 / 167, SHA-NI
    /// interleaved 98 / 117, single 141 / 150 (four bare `sha1::compress`
    /// calls: 113). Zen 4's `sha1rnds4` is limited by throughput, not latency,
    /// so interleaving SHA-NI streams gains little there; AVX-512 wins from 6
    /// packets, SHA-NI from 2.
    pub const ALL: [MacPath; 4] = [MacPath::Avx512, MacPath::Avx2, MacPath::ShaNi, MacPath::Single];

    /// The name used on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            MacPath::Avx512 => "avx512",
            MacPath::ShaNi => "shani",
            MacPath::Avx2 => "avx2",
            MacPath::Single => "single",
        }
    }

    /// Whether this CPU can run the path.
    pub fn is_supported(self) -> bool {
        Kernel::new(self).is_some()
    }

    /// The paths this CPU can run, best first.
    pub fn supported() -> impl Iterator<Item = MacPath> {
        MacPath::ALL.into_iter().filter(|p| p.is_supported())
    }

    /// The best path this CPU can run.
    pub fn best() -> MacPath {
        MacPath::supported().next().unwrap_or(MacPath::Single)
    }

    /// Fewest HMAC jobs for which a multi-buffer pass on this path beats
    /// computing them one by one (measured as in [`MacPath::ALL`]); the CPU
    /// engine runs a smaller group on SHA-NI (from 2 jobs, where present) or
    /// one job at a time.
    pub fn min_lanes(self) -> usize {
        match self {
            MacPath::Avx512 | MacPath::Avx2 => 6,
            MacPath::ShaNi => 2,
            MacPath::Single => usize::MAX,
        }
    }
}

impl fmt::Display for MacPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::str::FromStr for MacPath {
    type Err = String;
    fn from_str(s: &str) -> Result<MacPath, String> {
        MacPath::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown MAC path {s:?} (avx512, shani, avx2, single)"))
    }
}

/// A path together with the proof that this CPU has its instructions.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kernel {
    #[cfg(target_arch = "x86_64")]
    Avx512(avx512::Token),
    #[cfg(target_arch = "x86_64")]
    ShaNi(shani::Token),
    #[cfg(target_arch = "x86_64")]
    Avx2(avx2::Token),
    Single,
}

impl Kernel {
    /// The kernel of `path`, if this CPU has what it needs.
    pub(crate) fn new(path: MacPath) -> Option<Kernel> {
        match path {
            #[cfg(target_arch = "x86_64")]
            MacPath::Avx512 => avx512::Token::detect().map(Kernel::Avx512),
            #[cfg(target_arch = "x86_64")]
            MacPath::ShaNi => shani::Token::detect().map(Kernel::ShaNi),
            #[cfg(target_arch = "x86_64")]
            MacPath::Avx2 => avx2::Token::detect().map(Kernel::Avx2),
            MacPath::Single => Some(Kernel::Single),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }

    /// The path this kernel runs.
    pub(crate) fn path(self) -> MacPath {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512(_) => MacPath::Avx512,
            #[cfg(target_arch = "x86_64")]
            Kernel::ShaNi(_) => MacPath::ShaNi,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(_) => MacPath::Avx2,
            Kernel::Single => MacPath::Single,
        }
    }

    /// One block step: each lane whose bit is set in `active` absorbs its
    /// block; the others keep their state.
    fn compress(self, st: &mut LaneWords, blocks: &[&[u8; 64]; LANES], active: u16) {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512(t) => avx512::compress(t, st, blocks, active),
            #[cfg(target_arch = "x86_64")]
            Kernel::ShaNi(t) => shani::compress(t, st, blocks, active),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(t) => avx2::compress(t, st, blocks, active),
            Kernel::Single => single_compress(st, blocks, active),
        }
    }

    /// The outer hash: `st` (the outer midstates) absorbs, in the lanes of
    /// `active`, the padded block holding the digest `inner`.
    fn outer(self, st: &mut LaneWords, inner: &LaneWords, active: u16) {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512(t) => avx512::outer(t, st, inner, active),
            #[cfg(target_arch = "x86_64")]
            Kernel::ShaNi(t) => shani::outer(t, st, inner, active),
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2(t) => avx2::outer(t, st, inner, active),
            Kernel::Single => single_outer(st, inner, active),
        }
    }
}

fn lanes_of(active: u16) -> impl Iterator<Item = usize> {
    (0..LANES).filter(move |l| active & (1 << l) != 0)
}

fn single_compress(st: &mut LaneWords, blocks: &[&[u8; 64]; LANES], active: u16) {
    for l in lanes_of(active) {
        let mut s = [st[0][l], st[1][l], st[2][l], st[3][l], st[4][l]];
        sha1::compress(&mut s, core::slice::from_ref(GenericArray::from_slice(blocks[l])));
        for (w, v) in st.iter_mut().zip(s) {
            w[l] = v;
        }
        s.zeroize();
    }
}

fn single_outer(st: &mut LaneWords, inner: &LaneWords, active: u16) {
    let mut block = [0u8; 64];
    for l in lanes_of(active) {
        for (i, w) in inner.iter().enumerate() {
            block[4 * i..4 * i + 4].copy_from_slice(&w[l].to_be_bytes());
        }
        block[20] = 0x80;
        block[60..].copy_from_slice(&OUTER_BITS.to_be_bytes());
        let mut blocks = [&ZERO_BLOCK; LANES];
        blocks[l] = &block;
        single_compress(st, &blocks, 1 << l);
    }
    block.zeroize();
}

/// Up to [`LANES`] HMAC-SHA1 computations gathered for one multi-buffer
/// pass. Lives on the stack (about 2.8 KiB); the key-derived states are
/// zeroized on drop.
pub struct MacBatch<'a> {
    n: usize,
    /// The part of each message read in place, whole blocks only.
    msg: [&'a [u8]; LANES],
    /// Blocks of each lane read from `msg`.
    full: [u16; LANES],
    /// Blocks of each lane in all (`full` + 1 or 2 from `tail`).
    total: [u16; LANES],
    /// Each lane's last blocks: message tail, suffix, padding, length.
    tail: [[u8; 128]; LANES],
    /// The inner midstates, then the inner digests.
    inner: Secret,
    /// The outer midstates, then the tags.
    outer: Secret,
}

#[derive(Default, Zeroize, ZeroizeOnDrop)]
struct Secret(LaneWords);

/// Longest message [`MacBatch::push`] takes (block counts are 16-bit).
pub const MAX_MESSAGE: usize = 64 * 65_000;

impl Default for MacBatch<'_> {
    fn default() -> Self {
        MacBatch::new()
    }
}

impl<'a> MacBatch<'a> {
    /// An empty group.
    pub fn new() -> MacBatch<'a> {
        MacBatch {
            n: 0,
            msg: [&[]; LANES],
            full: [0; LANES],
            total: [0; LANES],
            tail: [[0; 128]; LANES],
            inner: Secret::default(),
            outer: Secret::default(),
        }
    }

    /// Lanes in use.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether no lane is in use.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Adds the HMAC of `msg || suffix` under `key`; returns its lane. The
    /// group must not be full, `suffix` at most 8 bytes, `msg` at most
    /// [`MAX_MESSAGE`] bytes.
    pub fn push(&mut self, key: &HmacSha1, msg: &'a [u8], suffix: &[u8]) -> usize {
        assert!(self.n < LANES && suffix.len() <= 8 && msg.len() <= MAX_MESSAGE);
        let l = self.n;
        self.n += 1;
        let full = msg.len() / 64;
        let (body, rest) = msg.split_at(full * 64);
        let t = &mut self.tail[l];
        t[..rest.len()].copy_from_slice(rest);
        let mut fill = rest.len();
        t[fill..fill + suffix.len()].copy_from_slice(suffix);
        fill += suffix.len();
        t[fill] = 0x80;
        let end = if fill < 56 { 64 } else { 128 };
        t[fill + 1..end - 8].fill(0);
        // The ipad block was hashed before the message.
        let bits = (64 + msg.len() as u64 + suffix.len() as u64) * 8;
        t[end - 8..end].copy_from_slice(&bits.to_be_bytes());
        self.msg[l] = body;
        self.full[l] = full as u16;
        self.total[l] = (full + end / 64) as u16;
        for (i, (a, b)) in key.inner_state().iter().zip(key.outer_state()).enumerate() {
            self.inner.0[i][l] = *a;
            self.outer.0[i][l] = *b;
        }
        l
    }

    /// Block `b` of lane `lane`: in place in the message, or from the tail.
    fn block<'s>(
        msg: &[&'s [u8]; LANES],
        full: &[u16; LANES],
        tail: &'s [[u8; 128]; LANES],
        lane: usize,
        b: usize,
    ) -> &'s [u8; 64] {
        let full = full[lane] as usize;
        let bytes = if b < full { &msg[lane][64 * b..64 * b + 64] } else { &tail[lane][64 * (b - full)..][..64] };
        bytes.try_into().expect("64 bytes")
    }

    /// Computes every lane's tag into `tags[lane]` on `path`; `None` (and
    /// nothing computed) where this CPU lacks the path.
    pub fn compute(&mut self, path: MacPath, tags: &mut [[u8; 20]; LANES]) -> Option<()> {
        self.run(Kernel::new(path)?, tags);
        Some(())
    }

    /// Computes every lane's tag into `tags[lane]`.
    pub(crate) fn run(&mut self, kernel: Kernel, tags: &mut [[u8; 20]; LANES]) {
        let n = self.n;
        let steps = self.total[..n].iter().copied().max().unwrap_or(0) as usize;
        for b in 0..steps {
            let mut blocks = [&ZERO_BLOCK; LANES];
            let mut active = 0u16;
            for (l, block) in blocks.iter_mut().enumerate().take(n) {
                if b < self.total[l] as usize {
                    *block = Self::block(&self.msg, &self.full, &self.tail, l, b);
                    active |= 1 << l;
                }
            }
            kernel.compress(&mut self.inner.0, &blocks, active);
        }
        let all = if n == LANES { u16::MAX } else { (1u16 << n) - 1 };
        kernel.outer(&mut self.outer.0, &self.inner.0, all);
        for (l, tag) in tags[..n].iter_mut().enumerate() {
            for (i, w) in self.outer.0.iter().enumerate() {
                tag[4 * i..4 * i + 4].copy_from_slice(&w[l].to_be_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hmac::{Hmac, Mac};
    use proptest::prelude::*;

    fn reference(key: &[u8], msg: &[u8], suffix: &[u8]) -> [u8; 20] {
        let mut h = Hmac::<sha1::Sha1>::new_from_slice(key).unwrap();
        h.update(msg);
        h.update(suffix);
        h.finalize().into_bytes().into()
    }

    type Case = (Vec<u8>, Vec<u8>, bool);

    fn cases() -> impl Strategy<Value = Vec<Case>> {
        prop::collection::vec(
            (prop::collection::vec(any::<u8>(), 0..80), prop::collection::vec(any::<u8>(), 0..1500), any::<bool>()),
            1..40,
        )
    }

    /// Runs `cases` through `path` in groups of [`LANES`] and compares each
    /// tag with the `hmac` crate's.
    fn check(path: MacPath, cases: &[Case]) -> Result<(), TestCaseError> {
        let Some(kernel) = Kernel::new(path) else {
            eprintln!("skipped: this CPU lacks the {path} MAC path");
            return Ok(());
        };
        let keys: Vec<HmacSha1> = cases.iter().map(|(k, _, _)| HmacSha1::new(k)).collect();
        let suffix = [0xde, 0xad, 0xbe, 0xef];
        for (group, keys) in cases.chunks(LANES).zip(keys.chunks(LANES)) {
            let mut batch = MacBatch::new();
            let mut tags = [[0u8; 20]; LANES];
            for ((_, msg, with), key) in group.iter().zip(keys) {
                batch.push(key, msg, if *with { &suffix } else { &[] });
            }
            batch.run(kernel, &mut tags);
            for ((key, msg, with), tag) in group.iter().zip(&tags) {
                let want = reference(key, msg, if *with { &suffix } else { &[] });
                prop_assert_eq!(tag, &want, "{} bytes, suffix {}", msg.len(), with);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn avx512_matches_hmac_crate(cases in cases()) { check(MacPath::Avx512, &cases)?; }
        #[test]
        fn shani_matches_hmac_crate(cases in cases()) { check(MacPath::ShaNi, &cases)?; }
        #[test]
        fn avx2_matches_hmac_crate(cases in cases()) { check(MacPath::Avx2, &cases)?; }
        #[test]
        fn single_matches_hmac_crate(cases in cases()) { check(MacPath::Single, &cases)?; }
    }

    /// Every tail length around the one-block / two-block boundary, in one
    /// group with lanes of different lengths side by side.
    #[test]
    fn padding_boundaries_in_one_group() {
        for path in MacPath::supported() {
            let kernel = Kernel::new(path).unwrap();
            for base in [0usize, 40, 50, 56, 64, 120] {
                let key = HmacSha1::new(b"key");
                let msgs: Vec<Vec<u8>> = (0..LANES).map(|i| vec![i as u8; base + i]).collect();
                let mut batch = MacBatch::new();
                for m in &msgs {
                    batch.push(&key, m, &[1, 2, 3, 4]);
                }
                let mut tags = [[0u8; 20]; LANES];
                batch.run(kernel, &mut tags);
                for (m, t) in msgs.iter().zip(&tags) {
                    assert_eq!(t, &reference(b"key", m, &[1, 2, 3, 4]), "{path} {} bytes", m.len());
                }
            }
        }
    }
}
