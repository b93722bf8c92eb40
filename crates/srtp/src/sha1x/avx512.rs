//! 16 lanes of AVX-512: one packet per 32-bit lane of a `zmm` register.

use super::{LaneWords, K, LANES, OUTER_BITS};
use core::arch::x86_64::*;

/// Proof that the CPU has AVX-512F and AVX-512BW.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token(());

impl Token {
    pub(crate) fn detect() -> Option<Token> {
        (is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw")).then_some(Token(()))
    }
}

pub(super) fn compress(_: Token, st: &mut LaneWords, blocks: &[&[u8; 64]; LANES], active: u16) {
    // SAFETY: the token exists only where `Token::detect` found avx512f and avx512bw.
    unsafe { compress_blocks(st, blocks, active) }
}

pub(super) fn outer(_: Token, st: &mut LaneWords, inner: &LaneWords, active: u16) {
    // SAFETY: as in `compress`.
    unsafe { compress_outer(st, inner, active) }
}

#[target_feature(enable = "avx512f,avx512bw")]
fn compress_blocks(st: &mut LaneWords, blocks: &[&[u8; 64]; LANES], active: u16) {
    let swap = _mm512_broadcast_i32x4(_mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3));
    let mut rows = [_mm512_setzero_si512(); 16];
    for (r, b) in rows.iter_mut().zip(blocks) {
        // SAFETY: each block is 64 readable bytes; unaligned load.
        *r = _mm512_shuffle_epi8(unsafe { _mm512_loadu_si512(b.as_ptr().cast()) }, swap);
    }
    update(st, transpose(rows), active);
}

#[target_feature(enable = "avx512f,avx512bw")]
fn compress_outer(st: &mut LaneWords, inner: &LaneWords, active: u16) {
    let z = _mm512_setzero_si512();
    let mut w = [z; 16];
    for (i, w) in w.iter_mut().take(5).enumerate() {
        *w = load(&inner[i]);
    }
    w[5] = _mm512_set1_epi32(0x8000_0000u32 as i32);
    w[15] = _mm512_set1_epi32(OUTER_BITS as i32);
    update(st, w, active);
}

#[target_feature(enable = "avx512f")]
fn load(words: &[u32; LANES]) -> __m512i {
    // SAFETY: 16 u32 are 64 readable bytes.
    unsafe { _mm512_loadu_si512(words.as_ptr().cast()) }
}

/// Runs the 80 rounds over `w` and adds the result into the lanes of `active`.
#[target_feature(enable = "avx512f")]
fn update(st: &mut LaneWords, w: [__m512i; 16], active: u16) {
    let mut s = [_mm512_setzero_si512(); 5];
    for (s, words) in s.iter_mut().zip(st.iter()) {
        *s = load(words);
    }
    let r = rounds(s, w);
    for i in 0..5 {
        // SAFETY: 16 u32 are 64 writable bytes; only the lanes of `active` are written.
        unsafe { _mm512_mask_storeu_epi32(st[i].as_mut_ptr().cast(), active, _mm512_add_epi32(s[i], r[i])) };
    }
}

/// 16x16 transpose of 32-bit words: row `l` (lane `l`'s block) to column
/// vectors, `out[t]` holding word `t` of every lane.
#[target_feature(enable = "avx512f")]
fn transpose(r: [__m512i; 16]) -> [__m512i; 16] {
    // Pairs of rows, interleaved by word within each 128-bit part.
    let mut t = [_mm512_setzero_si512(); 16];
    for p in 0..8 {
        t[2 * p] = _mm512_unpacklo_epi32(r[2 * p], r[2 * p + 1]);
        t[2 * p + 1] = _mm512_unpackhi_epi32(r[2 * p], r[2 * p + 1]);
    }
    // Quads: u[4g + m], 128-bit part k, holds word 4k + m of rows 4g..4g+3.
    let mut u = [_mm512_setzero_si512(); 16];
    for g in 0..4 {
        u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
        u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
        u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    // A 4x4 transpose of 128-bit parts across the four quads.
    let mut c = [_mm512_setzero_si512(); 16];
    for m in 0..4 {
        let v0 = _mm512_shuffle_i32x4::<0x44>(u[m], u[4 + m]);
        let v1 = _mm512_shuffle_i32x4::<0xEE>(u[m], u[4 + m]);
        let v2 = _mm512_shuffle_i32x4::<0x44>(u[8 + m], u[12 + m]);
        let v3 = _mm512_shuffle_i32x4::<0xEE>(u[8 + m], u[12 + m]);
        c[m] = _mm512_shuffle_i32x4::<0x88>(v0, v2);
        c[4 + m] = _mm512_shuffle_i32x4::<0xDD>(v0, v2);
        c[8 + m] = _mm512_shuffle_i32x4::<0x88>(v1, v3);
        c[12 + m] = _mm512_shuffle_i32x4::<0xDD>(v1, v3);
    }
    c
}

/// One SHA-1 round on lanes: `$e` becomes the new `a`, `$b` is rotated; the
/// callers rotate the names instead of moving values. `$f` is the
/// `vpternlogd` truth table of the round's boolean function.
macro_rules! round {
    ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $w:ident, $t:literal, $f:literal) => {
        if $t >= 16 {
            let x = _mm512_ternarylogic_epi32::<0x96>($w[($t + 13) & 15], $w[($t + 8) & 15], $w[($t + 2) & 15]);
            $w[$t & 15] = _mm512_rol_epi32::<1>(_mm512_xor_si512(x, $w[$t & 15]));
        }
        let k = _mm512_set1_epi32(K[$t / 20] as i32);
        let f = _mm512_ternarylogic_epi32::<$f>($b, $c, $d);
        $e = _mm512_add_epi32(_mm512_add_epi32($e, _mm512_add_epi32($w[$t & 15], k)), f);
        $e = _mm512_add_epi32($e, _mm512_rol_epi32::<5>($a));
        $b = _mm512_rol_epi32::<30>($b);
    };
}

/// Five rounds, after which the names are back in place.
macro_rules! five {
    ($s:ident, $w:ident, $f:literal, $t0:literal, $t1:literal, $t2:literal, $t3:literal, $t4:literal) => {
        let [mut a, mut b, mut c, mut d, mut e] = $s;
        round!(a, b, c, d, e, $w, $t0, $f);
        round!(e, a, b, c, d, $w, $t1, $f);
        round!(d, e, a, b, c, $w, $t2, $f);
        round!(c, d, e, a, b, $w, $t3, $f);
        round!(b, c, d, e, a, $w, $t4, $f);
        $s = [a, b, c, d, e];
    };
}

/// The 80 rounds; returns the working variables (not yet added to the state).
#[target_feature(enable = "avx512f")]
fn rounds(s: [__m512i; 5], mut w: [__m512i; 16]) -> [__m512i; 5] {
    let mut s = s;
    // Ch (0xCA), Parity (0x96), Maj (0xE8), Parity.
    five!(s, w, 0xCA, 0, 1, 2, 3, 4);
    five!(s, w, 0xCA, 5, 6, 7, 8, 9);
    five!(s, w, 0xCA, 10, 11, 12, 13, 14);
    five!(s, w, 0xCA, 15, 16, 17, 18, 19);
    five!(s, w, 0x96, 20, 21, 22, 23, 24);
    five!(s, w, 0x96, 25, 26, 27, 28, 29);
    five!(s, w, 0x96, 30, 31, 32, 33, 34);
    five!(s, w, 0x96, 35, 36, 37, 38, 39);
    five!(s, w, 0xE8, 40, 41, 42, 43, 44);
    five!(s, w, 0xE8, 45, 46, 47, 48, 49);
    five!(s, w, 0xE8, 50, 51, 52, 53, 54);
    five!(s, w, 0xE8, 55, 56, 57, 58, 59);
    five!(s, w, 0x96, 60, 61, 62, 63, 64);
    five!(s, w, 0x96, 65, 66, 67, 68, 69);
    five!(s, w, 0x96, 70, 71, 72, 73, 74);
    five!(s, w, 0x96, 75, 76, 77, 78, 79);
    s
}
