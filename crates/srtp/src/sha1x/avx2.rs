//! 8 lanes of AVX2, run twice per group of 16.

use super::{LaneWords, K, LANES, OUTER_BITS};
use core::arch::x86_64::*;

/// Proof that the CPU has AVX2.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token(());

impl Token {
    pub(crate) fn detect() -> Option<Token> {
        is_x86_feature_detected!("avx2").then_some(Token(()))
    }
}

pub(super) fn compress(_: Token, st: &mut LaneWords, blocks: &[&[u8; 64]; LANES], active: u16) {
    for half in 0..2 {
        let act = (active >> (8 * half)) as u8;
        if act != 0 {
            let b: &[&[u8; 64]; 8] = blocks[8 * half..8 * half + 8].try_into().expect("8 lanes");
            // SAFETY: the token exists only where `Token::detect` found avx2.
            unsafe { compress_blocks(st, half, b, act) }
        }
    }
}

pub(super) fn outer(_: Token, st: &mut LaneWords, inner: &LaneWords, active: u16) {
    for half in 0..2 {
        let act = (active >> (8 * half)) as u8;
        if act != 0 {
            // SAFETY: as in `compress`.
            unsafe { compress_outer(st, half, inner, act) }
        }
    }
}

#[target_feature(enable = "avx2")]
fn compress_blocks(st: &mut LaneWords, half: usize, blocks: &[&[u8; 64]; 8], active: u8) {
    let swap = _mm256_broadcastsi128_si256(_mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3));
    let mut lo = [_mm256_setzero_si256(); 8];
    let mut hi = [_mm256_setzero_si256(); 8];
    for ((lo, hi), b) in lo.iter_mut().zip(hi.iter_mut()).zip(blocks) {
        // SAFETY: each block is 64 readable bytes; unaligned loads.
        unsafe {
            *lo = _mm256_shuffle_epi8(_mm256_loadu_si256(b.as_ptr().cast()), swap);
            *hi = _mm256_shuffle_epi8(_mm256_loadu_si256(b.as_ptr().add(32).cast()), swap);
        }
    }
    let (a, b) = (transpose(lo), transpose(hi));
    let mut w = [_mm256_setzero_si256(); 16];
    w[..8].copy_from_slice(&a);
    w[8..].copy_from_slice(&b);
    update(st, half, w, active);
}

#[target_feature(enable = "avx2")]
fn compress_outer(st: &mut LaneWords, half: usize, inner: &LaneWords, active: u8) {
    let mut w = [_mm256_setzero_si256(); 16];
    for (w, words) in w.iter_mut().zip(inner.iter()) {
        *w = load(&words[8 * half..8 * half + 8]);
    }
    w[5] = _mm256_set1_epi32(0x8000_0000u32 as i32);
    w[15] = _mm256_set1_epi32(OUTER_BITS as i32);
    update(st, half, w, active);
}

#[target_feature(enable = "avx2")]
fn load(words: &[u32]) -> __m256i {
    assert!(words.len() >= 8);
    // SAFETY: 8 u32 are 32 readable bytes (checked above).
    unsafe { _mm256_loadu_si256(words.as_ptr().cast()) }
}

#[target_feature(enable = "avx2")]
fn update(st: &mut LaneWords, half: usize, w: [__m256i; 16], active: u8) {
    let bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    let mask = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(active as i32), bits), bits);
    let mut s = [_mm256_setzero_si256(); 5];
    for (s, words) in s.iter_mut().zip(st.iter()) {
        *s = load(&words[8 * half..8 * half + 8]);
    }
    let r = rounds(s, w);
    for i in 0..5 {
        let dst = &mut st[i][8 * half..8 * half + 8];
        // SAFETY: 8 u32 are 32 writable bytes; only the lanes of `mask` are written.
        unsafe { _mm256_maskstore_epi32(dst.as_mut_ptr().cast(), mask, _mm256_add_epi32(s[i], r[i])) };
    }
}

/// 8x8 transpose of 32-bit words: row `l` (lane `l`'s eight words) to
/// column vectors.
#[target_feature(enable = "avx2")]
fn transpose(r: [__m256i; 8]) -> [__m256i; 8] {
    let mut t = [_mm256_setzero_si256(); 8];
    for p in 0..4 {
        t[2 * p] = _mm256_unpacklo_epi32(r[2 * p], r[2 * p + 1]);
        t[2 * p + 1] = _mm256_unpackhi_epi32(r[2 * p], r[2 * p + 1]);
    }
    // u[4g + m], 128-bit half h, holds word 4h + m of rows 4g..4g+3.
    let mut u = [_mm256_setzero_si256(); 8];
    for g in 0..2 {
        u[4 * g] = _mm256_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm256_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm256_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm256_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    let mut c = [_mm256_setzero_si256(); 8];
    for m in 0..4 {
        c[m] = _mm256_permute2x128_si256::<0x20>(u[m], u[4 + m]);
        c[4 + m] = _mm256_permute2x128_si256::<0x31>(u[m], u[4 + m]);
    }
    c
}

macro_rules! rol {
    ($x:expr, $n:literal) => {
        _mm256_or_si256(_mm256_slli_epi32::<$n>($x), _mm256_srli_epi32::<{ 32 - $n }>($x))
    };
}

/// Ch, Parity and Maj on lanes.
macro_rules! f {
    (ch, $b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256(_mm256_and_si256(_mm256_xor_si256($c, $d), $b), $d)
    };
    (parity, $b:expr, $c:expr, $d:expr) => {
        _mm256_xor_si256(_mm256_xor_si256($b, $c), $d)
    };
    (maj, $b:expr, $c:expr, $d:expr) => {
        _mm256_or_si256(_mm256_and_si256($b, $c), _mm256_and_si256($d, _mm256_or_si256($b, $c)))
    };
}

/// One round; see the AVX-512 kernel for the naming.
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $w:ident, $t:literal, $f:ident) => {
        if $t >= 16 {
            let x = _mm256_xor_si256(
                _mm256_xor_si256($w[($t + 13) & 15], $w[($t + 8) & 15]),
                _mm256_xor_si256($w[($t + 2) & 15], $w[$t & 15]),
            );
            $w[$t & 15] = rol!(x, 1);
        }
        let k = _mm256_set1_epi32(K[$t / 20] as i32);
        let f = f!($f, $b, $c, $d);
        $e = _mm256_add_epi32(_mm256_add_epi32($e, _mm256_add_epi32($w[$t & 15], k)), f);
        $e = _mm256_add_epi32($e, rol!($a, 5));
        $b = rol!($b, 30);
    };
}

macro_rules! five {
    ($s:ident, $w:ident, $f:ident, $t0:literal, $t1:literal, $t2:literal, $t3:literal, $t4:literal) => {
        let [mut a, mut b, mut c, mut d, mut e] = $s;
        round!(a, b, c, d, e, $w, $t0, $f);
        round!(e, a, b, c, d, $w, $t1, $f);
        round!(d, e, a, b, c, $w, $t2, $f);
        round!(c, d, e, a, b, $w, $t3, $f);
        round!(b, c, d, e, a, $w, $t4, $f);
        $s = [a, b, c, d, e];
    };
}

#[target_feature(enable = "avx2")]
fn rounds(s: [__m256i; 5], mut w: [__m256i; 16]) -> [__m256i; 5] {
    let mut s = s;
    five!(s, w, ch, 0, 1, 2, 3, 4);
    five!(s, w, ch, 5, 6, 7, 8, 9);
    five!(s, w, ch, 10, 11, 12, 13, 14);
    five!(s, w, ch, 15, 16, 17, 18, 19);
    five!(s, w, parity, 20, 21, 22, 23, 24);
    five!(s, w, parity, 25, 26, 27, 28, 29);
    five!(s, w, parity, 30, 31, 32, 33, 34);
    five!(s, w, parity, 35, 36, 37, 38, 39);
    five!(s, w, maj, 40, 41, 42, 43, 44);
    five!(s, w, maj, 45, 46, 47, 48, 49);
    five!(s, w, maj, 50, 51, 52, 53, 54);
    five!(s, w, maj, 55, 56, 57, 58, 59);
    five!(s, w, parity, 60, 61, 62, 63, 64);
    five!(s, w, parity, 65, 66, 67, 68, 69);
    five!(s, w, parity, 70, 71, 72, 73, 74);
    five!(s, w, parity, 75, 76, 77, 78, 79);
    s
}
