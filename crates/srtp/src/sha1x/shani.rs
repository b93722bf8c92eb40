//! SHA-NI with up to four packets interleaved. One stream waits on the
//! latency of `sha1rnds4`; four independent streams keep it busy.

use super::{LaneWords, LANES, OUTER_BITS};
use core::arch::x86_64::*;

/// Streams interleaved.
const STREAMS: usize = 4;

/// Proof that the CPU has the SHA extensions and SSE4.1.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Token(());

impl Token {
    pub(crate) fn detect() -> Option<Token> {
        (is_x86_feature_detected!("sha") && is_x86_feature_detected!("sse4.1") && is_x86_feature_detected!("ssse3"))
            .then_some(Token(()))
    }
}

/// A message source for one stream: a block of bytes, or the outer hash's
/// block built from an inner digest.
#[derive(Clone, Copy)]
enum Msg<'a> {
    Block(&'a [u8; 64]),
    Digest,
}

pub(super) fn compress(_: Token, st: &mut LaneWords, blocks: &[&[u8; 64]; LANES], active: u16) {
    each_group(active, |lanes| {
        let mut msgs = [Msg::Digest; STREAMS];
        for (m, &l) in msgs.iter_mut().zip(lanes) {
            *m = Msg::Block(blocks[l]);
        }
        // SAFETY: the token exists only where `Token::detect` found sha, sse4.1 and ssse3.
        unsafe { run(st, None, lanes, &msgs) }
    });
}

pub(super) fn outer(_: Token, st: &mut LaneWords, inner: &LaneWords, active: u16) {
    each_group(active, |lanes| {
        // SAFETY: as in `compress`.
        unsafe { run(st, Some(inner), lanes, &[Msg::Digest; STREAMS]) }
    });
}

/// Calls `f` with the active lanes, up to four at a time.
fn each_group(active: u16, mut f: impl FnMut(&[usize])) {
    let mut lanes = [0usize; STREAMS];
    let mut n = 0;
    for l in 0..LANES {
        if active & (1 << l) != 0 {
            lanes[n] = l;
            n += 1;
            if n == STREAMS {
                f(&lanes);
                n = 0;
            }
        }
    }
    if n > 0 {
        f(&lanes[..n]);
    }
}

/// Compresses one block in each lane of `lanes` (1 to 4).
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn run(st: &mut LaneWords, inner: Option<&LaneWords>, lanes: &[usize], msgs: &[Msg<'_>; STREAMS]) {
    match lanes.len() {
        1 => streams::<1>(st, inner, lanes, msgs),
        2 => streams::<2>(st, inner, lanes, msgs),
        3 => streams::<3>(st, inner, lanes, msgs),
        _ => streams::<4>(st, inner, lanes, msgs),
    }
}

#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn streams<const N: usize>(st: &mut LaneWords, inner: Option<&LaneWords>, lanes: &[usize], msgs: &[Msg<'_>; STREAMS]) {
    let swap = _mm_set_epi64x(0x0001_0203_0405_0607, 0x0809_0a0b_0c0d_0e0f);
    let z = _mm_setzero_si128();
    let mut abcd = [z; N];
    let mut e = [z; N];
    let mut w = [[z; 4]; N];
    for s in 0..N {
        let l = lanes[s];
        let word = |i: usize| st[i][l] as i32;
        abcd[s] = _mm_set_epi32(word(0), word(1), word(2), word(3));
        e[s] = _mm_set_epi32(word(4), 0, 0, 0);
        match (msgs[s], inner) {
            (Msg::Block(b), _) => {
                for (i, w) in w[s].iter_mut().enumerate() {
                    // SAFETY: the block is 64 readable bytes; unaligned load.
                    *w = _mm_shuffle_epi8(unsafe { _mm_loadu_si128(b.as_ptr().add(16 * i).cast()) }, swap);
                }
            }
            (Msg::Digest, Some(d)) => {
                let dig = |i: usize| d[i][l] as i32;
                w[s] = [
                    _mm_set_epi32(dig(0), dig(1), dig(2), dig(3)),
                    _mm_set_epi32(dig(4), 0x8000_0000u32 as i32, 0, 0),
                    z,
                    _mm_set_epi32(0, 0, 0, OUTER_BITS as i32),
                ];
            }
            (Msg::Digest, None) => unreachable!("a digest block needs the inner states"),
        }
    }
    rounds::<N>(&mut abcd, &mut e, w);
    for s in 0..N {
        let l = lanes[s];
        st[0][l] = _mm_extract_epi32::<3>(abcd[s]) as u32;
        st[1][l] = _mm_extract_epi32::<2>(abcd[s]) as u32;
        st[2][l] = _mm_extract_epi32::<1>(abcd[s]) as u32;
        st[3][l] = _mm_extract_epi32::<0>(abcd[s]) as u32;
        st[4][l] = _mm_extract_epi32::<3>(e[s]) as u32;
    }
}

/// Rounds 4g..4g+3 of every stream, with the message schedule of Intel's
/// SHA-NI reference sequence: `sha1nexte` folds E into the next words,
/// `sha1msg1`/`xor`/`sha1msg2` expand the schedule four words at a time.
macro_rules! group {
    ($abcd:ident, $e:ident, $w:ident, $n:ident, $g:literal) => {
        for s in 0..$n {
            let cur = $g % 2;
            if $g == 0 {
                $e[0][s] = _mm_add_epi32($e[0][s], $w[s][0]);
            } else {
                $e[cur][s] = _mm_sha1nexte_epu32($e[cur][s], $w[s][$g % 4]);
            }
            $e[1 - cur][s] = $abcd[s];
            if $g >= 3 && $g <= 18 {
                $w[s][($g + 1) % 4] = _mm_sha1msg2_epu32($w[s][($g + 1) % 4], $w[s][$g % 4]);
            }
            $abcd[s] = _mm_sha1rnds4_epu32::<{ $g / 5 }>($abcd[s], $e[cur][s]);
            if $g >= 1 && $g <= 16 {
                $w[s][($g + 3) % 4] = _mm_sha1msg1_epu32($w[s][($g + 3) % 4], $w[s][$g % 4]);
            }
            if $g >= 2 && $g <= 17 {
                $w[s][($g + 2) % 4] = _mm_xor_si128($w[s][($g + 2) % 4], $w[s][$g % 4]);
            }
        }
    };
}

/// One block in each of `N` streams; `abcd` and `e` are updated in place.
#[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
fn rounds<const N: usize>(abcd: &mut [__m128i; N], e0: &mut [__m128i; N], mut w: [[__m128i; 4]; N]) {
    let (abcd_save, e_save) = (*abcd, *e0);
    let mut e = [*e0, [_mm_setzero_si128(); N]];
    group!(abcd, e, w, N, 0);
    group!(abcd, e, w, N, 1);
    group!(abcd, e, w, N, 2);
    group!(abcd, e, w, N, 3);
    group!(abcd, e, w, N, 4);
    group!(abcd, e, w, N, 5);
    group!(abcd, e, w, N, 6);
    group!(abcd, e, w, N, 7);
    group!(abcd, e, w, N, 8);
    group!(abcd, e, w, N, 9);
    group!(abcd, e, w, N, 10);
    group!(abcd, e, w, N, 11);
    group!(abcd, e, w, N, 12);
    group!(abcd, e, w, N, 13);
    group!(abcd, e, w, N, 14);
    group!(abcd, e, w, N, 15);
    group!(abcd, e, w, N, 16);
    group!(abcd, e, w, N, 17);
    group!(abcd, e, w, N, 18);
    group!(abcd, e, w, N, 19);
    for s in 0..N {
        e0[s] = _mm_sha1nexte_epu32(e[0][s], e_save[s]);
        abcd[s] = _mm_add_epi32(abcd[s], abcd_save[s]);
    }
}
