/*
 * srtp.cu -- the SRTP/SRTCP transform of the GPU engine, one packet per thread.
 *
 * Plain CUDA C, compiled at run time by NVRTC (no host headers). The device
 * functions are also valid C11: kernels/emu_main.c compiles them on the host
 * through the shim kernels/emu.h (SRTP_EMU defined), which is how they are
 * tested bit for bit against the CPU engine (tests/emulator.rs).
 *
 * Memory layout (the ABI shared with src/layout.rs; all words u32, little-endian
 * in memory):
 *   key slot (KEY_WORDS = 192 words):
 *     w[0] kind: 0 NULL + HMAC-SHA1, 1 AES-CM + HMAC-SHA1, 2 AES-GCM (other: unsupported)
 *     w[1] AES rounds (10/12/14; 0 for NULL)
 *     w[4..64]   AES encryption round keys, FIPS-197 w[i] (big-endian words)
 *     w[64..69]  HMAC-SHA1 inner midstate, w[69..74] outer midstate
 *     w[80..84]  GCM hash key H = E_K(0^128), 4 big-endian words
 *     w[96..160] GHASH 4-bit table: entry i (0..15) at w[96 + 4*i .. 96 + 4*i + 4],
 *                the 128-bit value i*H as 4 big-endian words, most significant
 *                word first (Shoup's table as in mbedTLS's HH[i]:HL[i])
 *   descriptor (DESC_WORDS = 16 words):
 *     d[0] key slot; d[1] flags: bit 0 unprotect, bits 8..15 suffix_len, bits 16..23 tag_len
 *     d[2] packet offset in the data region (16-byte aligned); d[3] packet length
 *     d[4] enc_start, d[5] enc_end, d[6] auth_end, d[7] tag_start (relative to the packet)
 *     d[8] suffix bytes, big-endian packed; d[9..13] IV, 4 big-endian words
 *     d[13] outcome (written here): 1 done, 2 authentication failed / malformed
 *
 * Not constant-time: the AES T-table and the GHASH table are indexed by secret
 * state (as in srtp::portable). Tag comparison is constant-time style.
 *
 * Host-side obligations (not checkable here, the kernels do not get the sizes):
 * d[0] < number of key slots, d[2] + d[3] <= size of the data region.
 */

#ifndef SRTP_HAVE_STDINT
typedef unsigned int uint32_t;
typedef unsigned char uint8_t;
typedef unsigned long long uint64_t;
#endif

#ifndef SRTP_EMU
/* Device build (NVRTC). */
#define SRTP_FN static __device__ __forceinline__
#define SRTP_UNROLL _Pragma("unroll")
#define SRTP_LD32(p) (*(const uint32_t*)(p))
#define SRTP_ST32(p, v) (*(uint32_t*)(p) = (v))
/* Code a warp runs together (srtp_hmac_sha1_warp): this lane's part, and the
 * warp's barrier (emu.h runs every lane's part in turn instead). */
#define SRTP_EACH_LANE(l, mine) for (uint32_t l = (mine), l##_once = 0u; l##_once == 0u; l##_once = 1u)
#define SRTP_SYNCWARP() __syncwarp()
#endif

/* ABI constants (must equal src/layout.rs). */
#define SRTP_KEY_WORDS 192u
#define SRTP_DESC_WORDS 16u
#define SRTP_K_KIND 0
#define SRTP_K_ROUNDS 1
#define SRTP_K_RK 4
#define SRTP_K_HMAC_INNER 64
#define SRTP_K_HMAC_OUTER 69
#define SRTP_K_GCM_H 80
#define SRTP_K_GHASH_TABLE 96
#define SRTP_KIND_NULL 0u
#define SRTP_KIND_AES_CM 1u
#define SRTP_KIND_AES_GCM 2u
#define SRTP_OUTCOME_DONE 1u
#define SRTP_OUTCOME_FAILED 2u
/* Words of the replicated T-table in shared memory: 256 entries x 32 banks. */
#define SRTP_TE_WORDS (256u * 32u)

/* A 128-bit value or AES state as 4 big-endian words (w0 = bytes 0..3). */
typedef struct {
    uint32_t w0, w1, w2, w3;
} srtp_u128;

/* The constant parts of AES rounds 0-2 for a run of 256 counter blocks that
 * share bytes 0..14 (see srtp::portable::TableAes::hoist). */
typedef struct {
    uint32_t x15; /* byte 15 of round-0 state with counter byte 15 = 0 */
    uint32_t p0;  /* round-1 column 0 without its Te3 term */
    uint32_t q0, q1, q2, q3; /* round-2 columns without their round-1 column-0 term */
} srtp_hoist;

/* SHA-1 chaining state. */
typedef struct {
    uint32_t a, b, c, d, e;
} srtp_sha1;

/* Rotate right by a constant 1..31 (a funnel shift on the device). */
SRTP_FN uint32_t srtp_rotr(uint32_t x, uint32_t n) {
    return (x >> n) | (x << (32u - n));
}

/* Rotate left by a constant 1..31. */
SRTP_FN uint32_t srtp_rotl(uint32_t x, uint32_t n) {
    return (x << n) | (x >> (32u - n));
}

/* Byte swap (one PRMT): little-endian memory word <-> big-endian value. */
SRTP_FN uint32_t srtp_bswap(uint32_t x) {
    return __byte_perm(x, 0u, 0x0123u);
}

/* T-table access. `te` points at this thread's bank column of the replicated
 * table: te[x * 32] = Te0[x] = (2*S[x], S[x], S[x], 3*S[x]); every lane of a
 * warp reads its own bank, so lookups never conflict. Te1..Te3 are rotations. */
#define SRTP_TE0(x) (te[((uint32_t)(x)) << 5])
#define SRTP_TE1(x) srtp_rotr(SRTP_TE0(x), 8u)
#define SRTP_TE2(x) srtp_rotr(SRTP_TE0(x), 16u)
#define SRTP_TE3(x) srtp_rotr(SRTP_TE0(x), 24u)
#define SRTP_B0(w) ((w) >> 24)
#define SRTP_B1(w) (((w) >> 16) & 0xffu)
#define SRTP_B2(w) (((w) >> 8) & 0xffu)
#define SRTP_B3(w) ((w)&0xffu)

/* One full AES round (SubBytes, ShiftRows, MixColumns, AddRoundKey k[0..4]). */
SRTP_FN srtp_u128 srtp_aes_round(const uint32_t* te, srtp_u128 s, const uint32_t* k) {
    srtp_u128 o;
    o.w0 = SRTP_TE0(SRTP_B0(s.w0)) ^ SRTP_TE1(SRTP_B1(s.w1)) ^ SRTP_TE2(SRTP_B2(s.w2)) ^ SRTP_TE3(SRTP_B3(s.w3)) ^ k[0];
    o.w1 = SRTP_TE0(SRTP_B0(s.w1)) ^ SRTP_TE1(SRTP_B1(s.w2)) ^ SRTP_TE2(SRTP_B2(s.w3)) ^ SRTP_TE3(SRTP_B3(s.w0)) ^ k[1];
    o.w2 = SRTP_TE0(SRTP_B0(s.w2)) ^ SRTP_TE1(SRTP_B1(s.w3)) ^ SRTP_TE2(SRTP_B2(s.w0)) ^ SRTP_TE3(SRTP_B3(s.w1)) ^ k[2];
    o.w3 = SRTP_TE0(SRTP_B0(s.w3)) ^ SRTP_TE1(SRTP_B1(s.w0)) ^ SRTP_TE2(SRTP_B2(s.w1)) ^ SRTP_TE3(SRTP_B3(s.w2)) ^ k[3];
    return o;
}

/* S[x], taken from byte 2 of Te0[x] (no separate S-box table). */
SRTP_FN uint32_t srtp_sbox(const uint32_t* te, uint32_t x) {
    return (SRTP_TE0(x) >> 8) & 0xffu;
}

/* One word of the last round: S-box of the four selected bytes, then the key. */
SRTP_FN uint32_t srtp_final_word(const uint32_t* te, uint32_t a, uint32_t b, uint32_t c, uint32_t d, uint32_t k) {
    return ((srtp_sbox(te, SRTP_B0(a)) << 24) | (srtp_sbox(te, SRTP_B1(b)) << 16) | (srtp_sbox(te, SRTP_B2(c)) << 8) |
            srtp_sbox(te, SRTP_B3(d))) ^
           k;
}

/* AES rounds 3 .. rounds-1 and the final round, from the state after round 2.
 * rk: the round keys (FIPS-197 w[0..]); rounds: 10, 12 or 14. */
SRTP_FN srtp_u128 srtp_aes_finish(const uint32_t* te, const uint32_t* rk, uint32_t rounds, srtp_u128 s) {
    s = srtp_aes_round(te, s, rk + 12);
    s = srtp_aes_round(te, s, rk + 16);
    s = srtp_aes_round(te, s, rk + 20);
    s = srtp_aes_round(te, s, rk + 24);
    s = srtp_aes_round(te, s, rk + 28);
    s = srtp_aes_round(te, s, rk + 32);
    s = srtp_aes_round(te, s, rk + 36);
    if (rounds > 10u) {
        s = srtp_aes_round(te, s, rk + 40);
        s = srtp_aes_round(te, s, rk + 44);
    }
    if (rounds > 12u) {
        s = srtp_aes_round(te, s, rk + 48);
        s = srtp_aes_round(te, s, rk + 52);
    }
    const uint32_t* k = rk + 4u * rounds;
    srtp_u128 o;
    o.w0 = srtp_final_word(te, s.w0, s.w1, s.w2, s.w3, k[0]);
    o.w1 = srtp_final_word(te, s.w1, s.w2, s.w3, s.w0, k[1]);
    o.w2 = srtp_final_word(te, s.w2, s.w3, s.w0, s.w1, k[2]);
    o.w3 = srtp_final_word(te, s.w3, s.w0, s.w1, s.w2, k[3]);
    return o;
}

/* Encrypts one block (big-endian words). */
SRTP_FN srtp_u128 srtp_aes_encrypt(const uint32_t* te, const uint32_t* rk, uint32_t rounds, srtp_u128 in) {
    srtp_u128 s;
    s.w0 = in.w0 ^ rk[0];
    s.w1 = in.w1 ^ rk[1];
    s.w2 = in.w2 ^ rk[2];
    s.w3 = in.w3 ^ rk[3];
    s = srtp_aes_round(te, s, rk + 4);
    s = srtp_aes_round(te, s, rk + 8);
    return srtp_aes_finish(te, rk, rounds, s);
}

/* The constant parts of rounds 0-2 for the 256 counter blocks sharing bytes
 * 0..14 with `ctr` (the technique of srtp::portable, Corneliusen 2016). */
SRTP_FN srtp_hoist srtp_aes_hoist(const uint32_t* te, const uint32_t* rk, srtp_u128 ctr) {
    uint32_t s0 = ctr.w0 ^ rk[0];
    uint32_t s1 = ctr.w1 ^ rk[1];
    uint32_t s2 = ctr.w2 ^ rk[2];
    uint32_t s3 = (ctr.w3 & 0xffffff00u) ^ rk[3];
    srtp_hoist h;
    h.x15 = s3 & 0xffu;
    h.p0 = SRTP_TE0(SRTP_B0(s0)) ^ SRTP_TE1(SRTP_B1(s1)) ^ SRTP_TE2(SRTP_B2(s2)) ^ rk[4];
    uint32_t t1 = SRTP_TE0(SRTP_B0(s1)) ^ SRTP_TE1(SRTP_B1(s2)) ^ SRTP_TE2(SRTP_B2(s3)) ^ SRTP_TE3(SRTP_B3(s0)) ^ rk[5];
    uint32_t t2 = SRTP_TE0(SRTP_B0(s2)) ^ SRTP_TE1(SRTP_B1(s3)) ^ SRTP_TE2(SRTP_B2(s0)) ^ SRTP_TE3(SRTP_B3(s1)) ^ rk[6];
    uint32_t t3 = SRTP_TE0(SRTP_B0(s3)) ^ SRTP_TE1(SRTP_B1(s0)) ^ SRTP_TE2(SRTP_B2(s1)) ^ SRTP_TE3(SRTP_B3(s2)) ^ rk[7];
    h.q0 = SRTP_TE1(SRTP_B1(t1)) ^ SRTP_TE2(SRTP_B2(t2)) ^ SRTP_TE3(SRTP_B3(t3)) ^ rk[8];
    h.q1 = SRTP_TE0(SRTP_B0(t1)) ^ SRTP_TE1(SRTP_B1(t2)) ^ SRTP_TE2(SRTP_B2(t3)) ^ rk[9];
    h.q2 = SRTP_TE0(SRTP_B0(t2)) ^ SRTP_TE1(SRTP_B1(t3)) ^ SRTP_TE3(SRTP_B3(t1)) ^ rk[10];
    h.q3 = SRTP_TE0(SRTP_B0(t3)) ^ SRTP_TE2(SRTP_B2(t1)) ^ SRTP_TE3(SRTP_B3(t2)) ^ rk[11];
    return h;
}

/* Keystream block for the counter whose byte 15 is `low`, given the hoisted
 * constants of its run: 1 + 4 lookups for rounds 1-2 instead of 32. */
SRTP_FN srtp_u128 srtp_ctr_block(const uint32_t* te, const uint32_t* rk, uint32_t rounds, srtp_hoist h,
                                 uint32_t low) {
    uint32_t t0 = h.p0 ^ SRTP_TE3(h.x15 ^ low);
    srtp_u128 s;
    s.w0 = h.q0 ^ SRTP_TE0(SRTP_B0(t0));
    s.w1 = h.q1 ^ SRTP_TE3(SRTP_B3(t0));
    s.w2 = h.q2 ^ SRTP_TE2(SRTP_B2(t0));
    s.w3 = h.q3 ^ SRTP_TE1(SRTP_B1(t0));
    return srtp_aes_finish(te, rk, rounds, s);
}

/* XORs keystream word k (big-endian) into up to 4 bytes at p (n bytes, n < 4
 * or unaligned). */
SRTP_FN void srtp_xor_bytes(uint8_t* p, uint32_t k, uint32_t n) {
    SRTP_UNROLL
    for (uint32_t b = 0; b < 4u; b++) {
        if (b < n) {
            p[b] ^= (uint8_t)(k >> (24u - 8u * b));
        }
    }
}

/* XORs one keystream word into the 4 (or fewer, n) bytes at p: one aligned
 * 32-bit access when `aligned` and n >= 4, bytes otherwise. */
SRTP_FN void srtp_xor_word(uint8_t* p, uint32_t k, uint32_t n, int aligned) {
    if (aligned && n >= 4u) {
        SRTP_ST32(p, SRTP_LD32(p) ^ srtp_bswap(k));
    } else {
        srtp_xor_bytes(p, k, n < 4u ? n : 4u);
    }
}

/* Counter mode: XORs len bytes at p with the keystream from counter block ctr.
 * inc32 != 0: GCM's 32-bit increment; else the 128-bit increment of AES-CM.
 * aligned: p is 4-byte aligned (32-bit loads/stores for whole words). */
SRTP_FN void srtp_ctr_xor(const uint32_t* te, const uint32_t* rk, uint32_t rounds, srtp_u128 ctr, uint8_t* p,
                          uint32_t len, int inc32, int aligned) {
    srtp_hoist h = srtp_aes_hoist(te, rk, ctr);
    uint32_t left = len;
    while (left > 0u) {
        /* Bytes 0..14 change only when byte 15 wraps: recompute the constants. */
        if ((ctr.w3 & 0xffu) == 0u && left != len) {
            h = srtp_aes_hoist(te, rk, ctr);
        }
        srtp_u128 k = srtp_ctr_block(te, rk, rounds, h, ctr.w3 & 0xffu);
        uint32_t n = left < 16u ? left : 16u;
        srtp_xor_word(p, k.w0, n, aligned);
        if (n > 4u) {
            srtp_xor_word(p + 4, k.w1, n - 4u, aligned);
        }
        if (n > 8u) {
            srtp_xor_word(p + 8, k.w2, n - 8u, aligned);
        }
        if (n > 12u) {
            srtp_xor_word(p + 12, k.w3, n - 12u, aligned);
        }
        p += n;
        left -= n;
        ctr.w3 += 1u;
        if (!inc32 && ctr.w3 == 0u) {
            ctr.w2 += 1u;
            if (ctr.w2 == 0u) {
                ctr.w1 += 1u;
                if (ctr.w1 == 0u) {
                    ctr.w0 += 1u;
                }
            }
        }
    }
}

/* Big-endian word of the message m = p[0..end) || sfx[0..sfx_len) || 0x80 ||
 * zeros at byte position pos (a multiple of 4). pad80 != 0 adds the SHA-1
 * padding byte 0x80 right after the message; 0 gives GHASH's zero padding.
 * The whole-word case inside p is one aligned 32-bit load (p is 4-aligned). */
SRTP_FN uint32_t srtp_msg_word(const uint8_t* p, uint32_t end, uint32_t sfx, uint32_t sfx_len, uint32_t pos,
                               int pad80) {
    if (pos < end && end - pos >= 4u) {
        return srtp_bswap(SRTP_LD32(p + pos));
    }
    uint32_t w = 0u;
    SRTP_UNROLL
    for (uint32_t b = 0; b < 4u; b++) {
        uint32_t q = pos + b;
        uint32_t v;
        if (q < end) {
            v = p[q];
        } else if (q - end < sfx_len) {
            v = (sfx >> (24u - 8u * (q - end))) & 0xffu;
        } else if (pad80 && q - end == sfx_len) {
            v = 0x80u;
        } else {
            v = 0u;
        }
        w |= v << (24u - 8u * b);
    }
    return w;
}

/* SHA-1's constant of round i. */
SRTP_FN uint32_t srtp_sha1_k(uint32_t i) {
    return i < 20u ? 0x5A827999u : i < 40u ? 0x6ED9EBA1u : i < 60u ? 0x8F1BBCDCu : 0xCA62C1D6u;
}

/* SHA-1's round i on the working variables v, wk = W[i] + K[i]. e + wk does
 * not depend on this round's a: summed first, it leaves one add after the
 * rotate on the chain from round to round (summed left to right it would be
 * four). Both compressions below run their rounds through it. */
SRTP_FN srtp_sha1 srtp_sha1_round(srtp_sha1 v, uint32_t i, uint32_t wk) {
    uint32_t f;
    if (i < 20u) {
        f = (v.b & v.c) | (~v.b & v.d);
    } else if (i < 40u || i >= 60u) {
        f = v.b ^ v.c ^ v.d;
    } else {
        f = (v.b & v.c) | (v.b & v.d) | (v.c & v.d);
    }
    srtp_sha1 o;
    o.a = srtp_rotl(v.a, 5u) + (f + (v.e + wk));
    o.b = v.a;
    o.c = srtp_rotl(v.b, 30u);
    o.d = v.c;
    o.e = v.d;
    return o;
}

/* The chaining value plus the working variables after the rounds. */
SRTP_FN srtp_sha1 srtp_sha1_add(srtp_sha1 st, srtp_sha1 v) {
    st.a += v.a;
    st.b += v.b;
    st.c += v.c;
    st.d += v.d;
    st.e += v.e;
    return st;
}

/* SHA-1 compression of one 64-byte block w[0..16] (big-endian words). The
 * fully unrolled loop keeps w in registers. */
SRTP_FN srtp_sha1 srtp_sha1_compress(srtp_sha1 st, uint32_t* w) {
    srtp_sha1 v = st;
    SRTP_UNROLL
    for (int i = 0; i < 80; i++) {
        uint32_t wi;
        if (i < 16) {
            wi = w[i];
        } else {
            wi = srtp_rotl(w[(i - 3) & 15] ^ w[(i - 8) & 15] ^ w[(i - 14) & 15] ^ w[i & 15], 1u);
            w[i & 15] = wi;
        }
        v = srtp_sha1_round(v, (uint32_t)i, srtp_sha1_k((uint32_t)i) + wi);
    }
    return srtp_sha1_add(st, v);
}

/* Loads a SHA-1 state from 5 key-slot words. */
SRTP_FN srtp_sha1 srtp_sha1_load(const uint32_t* m) {
    srtp_sha1 s;
    s.a = m[0];
    s.b = m[1];
    s.c = m[2];
    s.d = m[3];
    s.e = m[4];
    return s;
}

/* HMAC-SHA1 over pkt[0..auth_end) || suffix from the precomputed midstates
 * (mid[0..5] inner, mid[5..10] outer). The message is read big-endian straight
 * from the packet; the last block(s) (tail, suffix, 0x80, length) are built in
 * registers. Returns the 20-byte MAC as a SHA-1 state. */
SRTP_FN srtp_sha1 srtp_hmac_sha1(const uint32_t* mid, const uint8_t* pkt, uint32_t auth_end, uint32_t sfx,
                                 uint32_t sfx_len) {
    srtp_sha1 st = srtp_sha1_load(mid);
    uint32_t mlen = auth_end + sfx_len;
    /* Blocks after the 64-byte ipad block: message, 0x80, 8-byte length. */
    uint32_t nblk = (mlen + 8u) / 64u + 1u;
    /* Total length in bits, including the ipad block. */
    uint32_t bits_hi = (uint32_t)(((uint64_t)mlen + 64u) >> 29);
    uint32_t bits_lo = (mlen + 64u) << 3;
    uint32_t w[16];
    for (uint32_t k = 0; k < nblk; k++) {
        uint32_t base = k * 64u;
        if (base < auth_end && auth_end - base >= 64u) {
            SRTP_UNROLL
            for (int j = 0; j < 16; j++) {
                w[j] = srtp_bswap(SRTP_LD32(pkt + base + 4u * (uint32_t)j));
            }
        } else {
            SRTP_UNROLL
            for (int j = 0; j < 16; j++) {
                w[j] = srtp_msg_word(pkt, auth_end, sfx, sfx_len, base + 4u * (uint32_t)j, 1);
            }
            if (k + 1u == nblk) {
                w[14] = bits_hi;
                w[15] = bits_lo;
            }
        }
        st = srtp_sha1_compress(st, w);
    }
    /* Outer hash: the inner digest, 0x80, length (64 + 20) * 8 bits. */
    w[0] = st.a;
    w[1] = st.b;
    w[2] = st.c;
    w[3] = st.d;
    w[4] = st.e;
    w[5] = 0x80000000u;
    SRTP_UNROLL
    for (int j = 6; j < 15; j++) {
        w[j] = 0u;
    }
    w[15] = (64u + 20u) * 8u;
    return srtp_sha1_compress(srtp_sha1_load(mid + 5), w);
}

/* Big-endian word j (0..15) of block k of the inner HMAC message after the
 * ipad block (nblk blocks): the packet to auth_end, the suffix, 0x80, zeros,
 * and the length in bits (the ipad block included) in the last block's words
 * 14 and 15. The words srtp_hmac_sha1 compresses, one at a time. */
SRTP_FN uint32_t srtp_hmac_word(const uint8_t* pkt, uint32_t auth_end, uint32_t sfx, uint32_t sfx_len, uint32_t nblk,
                                uint32_t k, uint32_t j) {
    uint32_t mlen = auth_end + sfx_len;
    if (k + 1u == nblk && j >= 14u) {
        return j == 14u ? (uint32_t)(((uint64_t)mlen + 64u) >> 29) : (mlen + 64u) << 3;
    }
    return srtp_msg_word(pkt, auth_end, sfx, sfx_len, 64u * k + 4u * j, 1);
}

/* Word j (0..15) of HMAC's outer block: the inner digest, 0x80, zeros, the
 * length (64 + 20) * 8 bits. */
SRTP_FN uint32_t srtp_hmac_outer_word(srtp_sha1 inner, uint32_t j) {
    return j == 0u ? inner.a
         : j == 1u ? inner.b
         : j == 2u ? inner.c
         : j == 3u ? inner.d
         : j == 4u ? inner.e
         : j == 5u ? 0x80000000u
         : j == 15u ? (64u + 20u) * 8u
                    : 0u;
}

/* Words of one block's schedule in srtp_hmac_sha1_warp's area: its 80 words
 * and one more, so that the lanes expanding blocks side by side write to
 * different shared-memory banks. */
#define SRTP_SHA_STRIDE 81u
/* Blocks one pass of srtp_hmac_sha1_warp takes (a G.711 packet's three). */
#define SRTP_SHA_CHUNK 4u
/* Words of a warp's area. */
#define SRTP_SHA_WORDS (SRTP_SHA_CHUNK * SRTP_SHA_STRIDE)

/* The message schedule of one block: s[0..16], its big-endian words, become
 * s[t] = W[t] + K[t] for t = 0..80 (in place; w in registers). */
SRTP_FN void srtp_sha1_expand(uint32_t* s) {
    uint32_t w[16];
    SRTP_UNROLL
    for (int j = 0; j < 16; j++) {
        w[j] = s[j];
    }
    SRTP_UNROLL
    for (int i = 0; i < 80; i++) {
        uint32_t wi;
        if (i < 16) {
            wi = w[i];
        } else {
            wi = srtp_rotl(w[(i - 3) & 15] ^ w[(i - 8) & 15] ^ w[(i - 14) & 15] ^ w[i & 15], 1u);
            w[i & 15] = wi;
        }
        s[i] = wi + srtp_sha1_k((uint32_t)i);
    }
}

/* SHA-1's 80 rounds over a schedule srtp_sha1_expand made, the chaining value
 * added: srtp_sha1_compress with the schedule done beforehand. Per round the
 * chain keeps the rotate and one add; f and e + s[i] are off it. */
SRTP_FN srtp_sha1 srtp_sha1_rounds(srtp_sha1 st, const uint32_t* s) {
    srtp_sha1 v = st;
    SRTP_UNROLL
    for (int i = 0; i < 80; i++) {
        v = srtp_sha1_round(v, (uint32_t)i, s[i]);
    }
    return srtp_sha1_add(st, v);
}

/* HMAC-SHA1 as srtp_hmac_sha1, by a whole warp, for the warp-per-packet path
 * (one packet's latency). One lane's HMAC ran about 3 600 instructions of
 * straight-line code once, and its warp waited mostly on instruction fetch;
 * here the lanes share what is not SHA-1's serial chain. Up to SRTP_SHA_CHUNK
 * blocks a pass: the lanes build the blocks' message words (one word each,
 * the byte-wise tail included) and expand one block's schedule each, into s
 * (this warp's SRTP_SHA_WORDS words of shared memory); then every lane runs
 * the rounds, which cost the warp what one lane's would, and ends with the
 * MAC. The outer block is one more pass. Every lane of the warp calls it
 * with the same arguments (lane: its own).
 *
 * SRTP_EACH_LANE / SRTP_SYNCWARP: on the device, this lane's part and a warp
 * barrier; in the emulator, every lane's part in turn (tests/emulator.rs
 * checks the result against srtp_hmac_sha1). */
SRTP_FN srtp_sha1 srtp_hmac_sha1_warp(const uint32_t* mid, const uint8_t* pkt, uint32_t auth_end, uint32_t sfx,
                                      uint32_t sfx_len, uint32_t* s, uint32_t lane) {
    uint32_t nblk = (auth_end + sfx_len + 8u) / 64u + 1u;
    srtp_sha1 st = srtp_sha1_load(mid);
    for (uint32_t k0 = 0u;; k0 += SRTP_SHA_CHUNK) {
        int outer = k0 >= nblk;
        uint32_t nb = outer ? 1u : (nblk - k0 < SRTP_SHA_CHUNK ? nblk - k0 : SRTP_SHA_CHUNK);
        SRTP_EACH_LANE(l, lane) {
            for (uint32_t i = l; i < 16u * nb; i += 32u) {
                uint32_t b = i >> 4, j = i & 15u;
                s[b * SRTP_SHA_STRIDE + j] = outer ? srtp_hmac_outer_word(st, j)
                                                   : srtp_hmac_word(pkt, auth_end, sfx, sfx_len, nblk, k0 + b, j);
            }
        }
        SRTP_SYNCWARP();
        SRTP_EACH_LANE(l, lane) {
            if (l < nb) {
                srtp_sha1_expand(s + l * SRTP_SHA_STRIDE);
            }
        }
        SRTP_SYNCWARP();
        if (outer) {
            st = srtp_sha1_load(mid + 5);
        }
        for (uint32_t b = 0u; b < nb; b++) {
            st = srtp_sha1_rounds(st, s + b * SRTP_SHA_STRIDE);
        }
        /* Every lane has read s before the next pass writes it. */
        SRTP_SYNCWARP();
        if (outer) {
            return st;
        }
    }
}

/* Byte i (0..19) of a SHA-1 digest. */
SRTP_FN uint32_t srtp_sha1_byte(srtp_sha1 s, uint32_t i) {
    uint32_t w = i < 4u ? s.a : i < 8u ? s.b : i < 12u ? s.c : i < 16u ? s.d : s.e;
    return (w >> (24u - 8u * (i & 3u))) & 0xffu;
}

/* Byte i (0..15) of a 128-bit value. */
SRTP_FN uint32_t srtp_u128_byte(srtp_u128 s, uint32_t i) {
    uint32_t w = i < 4u ? s.w0 : i < 8u ? s.w1 : i < 12u ? s.w2 : s.w3;
    return (w >> (24u - 8u * (i & 3u))) & 0xffu;
}

/* The GHASH reduction constant for the 4 bits shifted out, pre-shifted into the
 * top word: the standard 16-entry table (0x0000, 0x1c20, 0x3840, ... 0xb5e0)
 * << 16, computed as the XOR of its 4 basis entries (branch-free, no local
 * array). */
SRTP_FN uint32_t srtp_gf_rem(uint32_t r) {
    return ((0u - (r & 1u)) & 0x1c200000u) ^ ((0u - ((r >> 1) & 1u)) & 0x38400000u) ^
           ((0u - ((r >> 2) & 1u)) & 0x70800000u) ^ ((0u - ((r >> 3) & 1u)) & 0xe1000000u);
}

/* One nibble step of Shoup's 4-bit multiplication: z = z * x^4 (a right shift
 * by 4 in GCM's bit order, with reduction), then z ^= table[nib]. */
SRTP_FN srtp_u128 srtp_gf_step(const uint32_t* tab, srtp_u128 z, uint32_t nib) {
    uint32_t r = z.w3 & 0xfu;
    z.w3 = (z.w3 >> 4) | (z.w2 << 28);
    z.w2 = (z.w2 >> 4) | (z.w1 << 28);
    z.w1 = (z.w1 >> 4) | (z.w0 << 28);
    z.w0 = (z.w0 >> 4) ^ srtp_gf_rem(r);
    const uint32_t* t = tab + 4u * nib;
    z.w0 ^= t[0];
    z.w1 ^= t[1];
    z.w2 ^= t[2];
    z.w3 ^= t[3];
    return z;
}

/* Nibbles of one word, least significant first (= bytes last to first, low
 * nibble before high nibble, as Shoup's method consumes them). */
SRTP_FN srtp_u128 srtp_gf_word(const uint32_t* tab, srtp_u128 z, uint32_t w) {
    SRTP_UNROLL
    for (uint32_t s = 0; s < 32u; s += 4u) {
        z = srtp_gf_step(tab, z, (w >> s) & 0xfu);
    }
    return z;
}

/* x * H in GF(2^128) with the 4-bit table of H (key slot w[96..160]). */
SRTP_FN srtp_u128 srtp_gf_mul(const uint32_t* tab, srtp_u128 x) {
    srtp_u128 z;
    z.w0 = 0u;
    z.w1 = 0u;
    z.w2 = 0u;
    z.w3 = 0u;
    z = srtp_gf_word(tab, z, x.w3);
    z = srtp_gf_word(tab, z, x.w2);
    z = srtp_gf_word(tab, z, x.w1);
    z = srtp_gf_word(tab, z, x.w0);
    return z;
}

/* One GHASH block step: y = (y ^ b) * H. */
SRTP_FN srtp_u128 srtp_ghash_block(const uint32_t* tab, srtp_u128 y, uint32_t b0, uint32_t b1, uint32_t b2,
                                   uint32_t b3) {
    y.w0 ^= b0;
    y.w1 ^= b1;
    y.w2 ^= b2;
    y.w3 ^= b3;
    return srtp_gf_mul(tab, y);
}

/* GHASH_H(A || pad || C || pad || [len(A)]64 || [len(C)]64) with
 * A = pkt[0..enc_start) || suffix and C = pkt[enc_start..enc_end).
 * aligned: enc_start is a multiple of 4 (whole-word loads for C). */
SRTP_FN srtp_u128 srtp_ghash_packet(const uint32_t* tab, const uint8_t* pkt, uint32_t enc_start, uint32_t enc_end,
                                    uint32_t sfx, uint32_t sfx_len, int aligned) {
    srtp_u128 y;
    y.w0 = 0u;
    y.w1 = 0u;
    y.w2 = 0u;
    y.w3 = 0u;
    uint32_t alen = enc_start + sfx_len;
    for (uint32_t pos = 0; pos < alen; pos += 16u) {
        y = srtp_ghash_block(tab, y, srtp_msg_word(pkt, enc_start, sfx, sfx_len, pos, 0),
                             srtp_msg_word(pkt, enc_start, sfx, sfx_len, pos + 4u, 0),
                             srtp_msg_word(pkt, enc_start, sfx, sfx_len, pos + 8u, 0),
                             srtp_msg_word(pkt, enc_start, sfx, sfx_len, pos + 12u, 0));
    }
    const uint8_t* c = pkt + enc_start;
    uint32_t clen = enc_end - enc_start;
    for (uint32_t pos = 0; pos < clen; pos += 16u) {
        uint32_t w[4];
        SRTP_UNROLL
        for (int j = 0; j < 4; j++) {
            uint32_t q = pos + 4u * (uint32_t)j;
            if (aligned) {
                w[j] = srtp_msg_word(c, clen, 0u, 0u, q, 0);
            } else {
                /* Unaligned ciphertext: bytes only. */
                uint32_t v = 0u;
                SRTP_UNROLL
                for (uint32_t b = 0; b < 4u; b++) {
                    if (q + b < clen) {
                        v |= (uint32_t)c[q + b] << (24u - 8u * b);
                    }
                }
                w[j] = v;
            }
        }
        y = srtp_ghash_block(tab, y, w[0], w[1], w[2], w[3]);
    }
    return srtp_ghash_block(tab, y, (uint32_t)((uint64_t)alen >> 29), alen << 3, (uint32_t)((uint64_t)clen >> 29),
                            clen << 3);
}

/* Checks a descriptor exactly like srtp::engine::Job::is_well_formed, plus the
 * kind's own rules (GCM: tag right after the ciphertext, 16 bytes; HMAC: tag at
 * most 20 bytes; AES: a valid round count) and the ABI's 16-byte alignment of
 * the packet offset. */
SRTP_FN int srtp_well_formed(uint32_t kind, uint32_t rounds, uint32_t off, uint32_t len, uint32_t es, uint32_t ee,
                             uint32_t ae, uint32_t ts, uint32_t tag_len, uint32_t sfx_len) {
    int ok = (off & 15u) == 0u && es <= ee && ee <= len && ae <= len && ts <= len && tag_len <= len - ts &&
             sfx_len <= 4u;
    int aes_ok = rounds == 10u || rounds == 12u || rounds == 14u;
    if (kind == SRTP_KIND_AES_GCM) {
        ok = ok && aes_ok && ts == ee && tag_len == 16u;
    } else if (kind == SRTP_KIND_AES_CM) {
        ok = ok && aes_ok && tag_len <= 20u;
    } else if (kind == SRTP_KIND_NULL) {
        ok = ok && tag_len <= 20u;
    } else {
        ok = 0;
    }
    return ok;
}

/* The whole transform of one descriptor, in place in the data region.
 *   keys: the key slot array; desc: this packet's 16 descriptor words (the
 *   outcome is written to desc[13]); data: the data region base (16-aligned);
 *   te: this thread's column of the replicated T-table (shared memory + lane).
 * Unprotect verifies the tag (constant-time style) before decrypting, and on
 * failure leaves the packet untouched; protect encrypts, then authenticates.
 * Only bytes in [d[2], d[2] + d[3]) are read or written, and nothing at all
 * for a malformed descriptor. */
__device__ void srtp_packet(const uint32_t* keys, uint32_t* desc, uint8_t* data, const uint32_t* te) {
    uint32_t slot = desc[0], flags = desc[1], off = desc[2], len = desc[3];
    uint32_t es = desc[4], ee = desc[5], ae = desc[6], ts = desc[7], sfx = desc[8];
    srtp_u128 iv;
    iv.w0 = desc[9];
    iv.w1 = desc[10];
    iv.w2 = desc[11];
    iv.w3 = desc[12];
    int unprotect = (flags & 1u) != 0u;
    uint32_t sfx_len = (flags >> 8) & 0xffu;
    uint32_t tag_len = (flags >> 16) & 0xffu;
    const uint32_t* key = keys + (uint64_t)slot * SRTP_KEY_WORDS;
    uint32_t kind = key[SRTP_K_KIND];
    uint32_t rounds = key[SRTP_K_ROUNDS];
    if (!srtp_well_formed(kind, rounds, off, len, es, ee, ae, ts, tag_len, sfx_len)) {
        desc[13] = SRTP_OUTCOME_FAILED;
        return;
    }
    uint8_t* pkt = data + off;
    const uint32_t* rk = key + SRTP_K_RK;
    int aligned = (es & 3u) == 0u;

    if (kind == SRTP_KIND_AES_GCM) {
        const uint32_t* tab = key + SRTP_K_GHASH_TABLE;
        srtp_u128 j0 = iv;
        j0.w3 = 1u;
        srtp_u128 mask = srtp_aes_encrypt(te, rk, rounds, j0);
        if (unprotect) {
            srtp_u128 y = srtp_ghash_packet(tab, pkt, es, ee, sfx, sfx_len, aligned);
            uint32_t diff = 0u;
            SRTP_UNROLL
            for (uint32_t i = 0; i < 16u; i++) {
                diff |= (srtp_u128_byte(y, i) ^ srtp_u128_byte(mask, i)) ^ pkt[ts + i];
            }
            if (diff != 0u) {
                desc[13] = SRTP_OUTCOME_FAILED;
                return;
            }
        }
        srtp_u128 ctr = iv;
        ctr.w3 = 2u;
        srtp_ctr_xor(te, rk, rounds, ctr, pkt + es, ee - es, 1, aligned);
        if (!unprotect) {
            srtp_u128 y = srtp_ghash_packet(tab, pkt, es, ee, sfx, sfx_len, aligned);
            SRTP_UNROLL
            for (uint32_t i = 0; i < 16u; i++) {
                pkt[ts + i] = (uint8_t)(srtp_u128_byte(y, i) ^ srtp_u128_byte(mask, i));
            }
        }
        desc[13] = SRTP_OUTCOME_DONE;
        return;
    }

    const uint32_t* mid = key + SRTP_K_HMAC_INNER;
    if (unprotect) {
        srtp_sha1 mac = srtp_hmac_sha1(mid, pkt, ae, sfx, sfx_len);
        uint32_t diff = 0u;
        SRTP_UNROLL
        for (uint32_t i = 0; i < 20u; i++) {
            if (i < tag_len) {
                diff |= srtp_sha1_byte(mac, i) ^ pkt[ts + i];
            }
        }
        if (diff != 0u) {
            desc[13] = SRTP_OUTCOME_FAILED;
            return;
        }
    }
    if (kind == SRTP_KIND_AES_CM) {
        srtp_ctr_xor(te, rk, rounds, iv, pkt + es, ee - es, 0, aligned);
    }
    if (!unprotect) {
        srtp_sha1 mac = srtp_hmac_sha1(mid, pkt, ae, sfx, sfx_len);
        SRTP_UNROLL
        for (uint32_t i = 0; i < 20u; i++) {
            if (i < tag_len) {
                pkt[ts + i] = (uint8_t)srtp_sha1_byte(mac, i);
            }
        }
    }
    desc[13] = SRTP_OUTCOME_DONE;
}

#ifndef SRTP_EMU

/*
 * The device side of a batch (both modes).
 *
 * The host describes each packet with a wire descriptor (SRTP_WIRE_WORDS = 12
 * words, 48 bytes; src/layout.rs `wire`):
 *   w[0] key slot; w[1] flags (as d[1] above); w[2], w[3] the device address
 *   of the packet's first byte (low, high word; any alignment); w[4] length;
 *   w[5] enc_start | enc_end << 16; w[6] auth_end | tag_start << 16;
 *   w[7] suffix (big-endian packed); w[8..12] the IV (4 big-endian words).
 * The outcome of packet i goes to outcomes[i] (a word array of its own, so
 * that descriptors are only read and outcomes are one coalesced store).
 *
 * The packet address is where the packet already lies: the relay's buffer
 * pool or the AF_XDP UMEM, registered with CUDA and mapped into the device's
 * address space (zero-copy: the host moves no packet byte), or device memory.
 * A warp takes up to 32 consecutive descriptors (as many as spread the batch
 * over every warp of the grid: one each for small batches). It copies its packets into a
 * scratch slot per thread (device memory, 16-aligned) with coalesced loads —
 * every load instruction reads 128 contiguous bytes of one packet, eight
 * packets in flight — then each thread transforms its packet in its slot
 * (srtp_packet, as the emulator tests it), and the warp writes the packets
 * whose transform succeeded back to their addresses, byte-exact at the edges
 * (a packet's neighbours in host memory are never written).
 *
 * Warp w of the grid is warp w / gridDim.x of block w % gridDim.x: a small
 * batch spreads over every multiprocessor instead of filling one block.
 */
#define SRTP_WIRE_WORDS 12u
/* Bytes of one thread's scratch slot: the largest packet the GPU takes
 * (longer ones run on the CPU; the device fails them if sent). */
#define SRTP_SLOT_BYTES 2304u
#define SRTP_SLOT_WORDS (SRTP_SLOT_BYTES / 4u)
#define SRTP_FULL 0xffffffffu
/* Packets whose staging loads are in flight together. */
#define SRTP_GROUP 8u
/* Packets per warp up to which the whole warp transforms each packet in turn
 * (srtp_packet_warp) rather than one lane each (srtp_packet). */
#define SRTP_WARP_FEW 4u
/* Warps per block that the kernels' shared SHA-1 schedule areas serve
 * (srtp_hmac_sha1_warp): blockDim.x is at most 32 * SRTP_SHA_WARPS
 * (src/layout.rs MAX_BLOCK_THREADS). */
#define SRTP_SHA_WARPS 8u

/* Fills the block's shared replicated table: word x*32 + l = Te0[x] for every
 * bank l. 32 KiB, static shared memory. */
static __device__ __forceinline__ void srtp_load_table(uint32_t* te_sh, const uint32_t* te0_global) {
    for (uint32_t i = threadIdx.x; i < SRTP_TE_WORDS; i += blockDim.x) {
        te_sh[i] = te0_global[i >> 5];
    }
}

/* Copies words [from, nout) of a packet (r = address & 3, s its first
 * word-aligned word, nsrc source words) to dst, 32 words per step. */
static __device__ __forceinline__ void srtp_copy_in_tail(uint32_t lane, const uint32_t* s, uint32_t r, uint32_t nsrc,
                                                         uint32_t nout, uint32_t from, uint32_t* dst) {
    for (uint32_t k = from; k < nout; k += 32u) {
        uint32_t j = k + lane;
        uint32_t lo = j < nsrc ? s[j] : 0u;
        uint32_t hi = __shfl_down_sync(SRTP_FULL, lo, 1);
        if (lane == 31u) {
            hi = j + 1u < nsrc ? s[j + 1u] : 0u;
        }
        uint32_t v = r ? __funnelshift_r(lo, hi, 8u * r) : lo;
        if (j < nout) {
            dst[j] = v;
        }
    }
}

/* Stages the warp's packets 0..m (lane j holds packet j's address and
 * length; a length over the slot stages nothing) into slots + j * SLOT_WORDS. */
static __device__ __forceinline__ void srtp_stage_in(uint32_t lane, uint32_t m, uint64_t addr, uint32_t len,
                                                     uint32_t* slots) {
    for (uint32_t g = 0; g < m; g += SRTP_GROUP) {
        uint32_t lo[SRTP_GROUP][2];
#pragma unroll
        for (uint32_t q = 0; q < SRTP_GROUP; q++) {
            uint32_t j = g + q;
            uint64_t a = __shfl_sync(SRTP_FULL, addr, j & 31u);
            uint32_t l = __shfl_sync(SRTP_FULL, len, j & 31u);
            if (j >= m || l > SRTP_SLOT_BYTES) {
                l = 0u;
            }
            uint32_t r = (uint32_t)a & 3u;
            const uint32_t* s = (const uint32_t*)(a - r);
            uint32_t nsrc = l ? (r + l + 3u) >> 2 : 0u;
            lo[q][0] = lane < nsrc ? s[lane] : 0u;
            lo[q][1] = lane + 32u < nsrc ? s[lane + 32u] : 0u;
        }
#pragma unroll
        for (uint32_t q = 0; q < SRTP_GROUP; q++) {
            uint32_t j = g + q;
            uint64_t a = __shfl_sync(SRTP_FULL, addr, j & 31u);
            uint32_t l = __shfl_sync(SRTP_FULL, len, j & 31u);
            if (j >= m || l > SRTP_SLOT_BYTES) {
                l = 0u;
            }
            uint32_t r = (uint32_t)a & 3u;
            const uint32_t* s = (const uint32_t*)(a - r);
            uint32_t nsrc = l ? (r + l + 3u) >> 2 : 0u;
            uint32_t nout = (l + 3u) >> 2;
            uint32_t* dst = slots + (j & 31u) * SRTP_SLOT_WORDS;
            /* Word lane + 32 of the source, for lane 31 of the first step. */
            uint32_t w32 = __shfl_sync(SRTP_FULL, lo[q][1], 0);
#pragma unroll
            for (uint32_t h = 0; h < 2u; h++) {
                uint32_t hi = __shfl_down_sync(SRTP_FULL, lo[q][h], 1);
                if (lane == 31u) {
                    hi = h == 0u ? w32 : (64u < nsrc ? s[64] : 0u);
                }
                uint32_t v = r ? __funnelshift_r(lo[q][h], hi, 8u * r) : lo[q][h];
                if (32u * h + lane < nout) {
                    dst[32u * h + lane] = v;
                }
            }
            if (nout > 64u) {
                srtp_copy_in_tail(lane, s, r, nsrc, nout, 64u, dst);
            }
        }
    }
    __syncwarp();
}

/* Writes packet bytes b[0..len) from the 16-aligned slot S back to address a,
 * the warp together: whole words inside the packet, single bytes at its edges. */
static __device__ __forceinline__ void srtp_copy_out(uint32_t lane, uint64_t a, uint32_t len, const uint32_t* S) {
    uint32_t r = (uint32_t)a & 3u;
    uint32_t* h = (uint32_t*)(a - r);
    uint32_t nh = (r + len + 3u) >> 2; /* host words touched */
    uint32_t nout = (len + 3u) >> 2;
    for (uint32_t k0 = 0; k0 < nh; k0 += 32u) {
        uint32_t k = k0 + lane;
        if (k < nh) {
            uint32_t cur = k < nout ? S[k] : 0u;
            uint32_t v = cur;
            if (r) {
                uint32_t prev = k ? S[k - 1u] : 0u;
                v = __funnelshift_r(prev, cur, 8u * (4u - r));
            }
            /* Bytes of this host word inside the packet: [first, last]. */
            uint32_t first = k == 0u ? r : 0u;
            uint32_t end = r + len - 4u * k; /* bytes of the packet from this word on */
            uint32_t last = end >= 4u ? 3u : end - 1u;
            if (first == 0u && last == 3u) {
                h[k] = v;
            } else {
                uint8_t* hb = (uint8_t*)(h + k);
                for (uint32_t b = first; b <= last; b++) {
                    hb[b] = (uint8_t)(v >> (8u * b));
                }
            }
        }
    }
}

static __device__ __forceinline__ uint4 srtp_zero4(void) {
    uint4 z;
    z.x = z.y = z.z = z.w = 0u;
    return z;
}

/* ctr + k: GCM's 32-bit increment (inc32) or AES-CM's 128-bit one. */
static __device__ __forceinline__ srtp_u128 srtp_ctr_add(srtp_u128 ctr, uint32_t k, int inc32) {
    uint32_t w3 = ctr.w3 + k;
    if (!inc32 && w3 < k) {
        ctr.w2 += 1u;
        if (ctr.w2 == 0u) {
            ctr.w1 += 1u;
            if (ctr.w1 == 0u) {
                ctr.w0 += 1u;
            }
        }
    }
    ctr.w3 = w3;
    return ctr;
}

/* Counter mode by the whole warp: lane l XORs keystream blocks l, l + 32, ...
 * into the 16 bytes each covers (disjoint, so no lane writes another's
 * bytes). The same bytes as srtp_ctr_xor, in one block's time instead of
 * len / 16 blocks' for one thread. Ends with the warp's writes visible to
 * every lane. */
static __device__ __forceinline__ void srtp_ctr_xor_warp(const uint32_t* te, const uint32_t* rk, uint32_t rounds,
                                                         srtp_u128 ctr, uint8_t* p, uint32_t len, int inc32,
                                                         int aligned, uint32_t lane) {
    uint32_t nblk = (len + 15u) >> 4;
    for (uint32_t k = lane; k < nblk; k += 32u) {
        srtp_u128 ks = srtp_aes_encrypt(te, rk, rounds, srtp_ctr_add(ctr, k, inc32));
        uint32_t n = len - 16u * k < 16u ? len - 16u * k : 16u;
        uint8_t* q = p + 16u * k;
        srtp_xor_word(q, ks.w0, n, aligned);
        if (n > 4u) {
            srtp_xor_word(q + 4, ks.w1, n - 4u, aligned);
        }
        if (n > 8u) {
            srtp_xor_word(q + 8, ks.w2, n - 8u, aligned);
        }
        if (n > 12u) {
            srtp_xor_word(q + 12, ks.w3, n - 12u, aligned);
        }
    }
    __syncwarp();
}

/* The transform of one packet by a whole warp, for batches small enough that
 * every warp has a few packets (srtp_warp_batch): the keystream blocks spread
 * over the lanes, the MAC's serial chain run by every lane together (GCM's
 * GHASH on lane 0). The same bytes and outcome as srtp_packet
 * (d: the 16 descriptor words, in every lane; pkt: the packet's 16-aligned
 * scratch slot). Unprotect checks the tag before any byte is decrypted. */
static __device__ __forceinline__ uint32_t srtp_packet_warp(const uint32_t* keys, const uint32_t* d, uint8_t* pkt,
                                                            const uint32_t* te, uint32_t* sha, uint32_t lane) {
    uint32_t flags = d[1], len = d[3];
    uint32_t es = d[4], ee = d[5], ae = d[6], ts = d[7], sfx = d[8];
    srtp_u128 iv;
    iv.w0 = d[9];
    iv.w1 = d[10];
    iv.w2 = d[11];
    iv.w3 = d[12];
    int unprotect = (flags & 1u) != 0u;
    uint32_t sfx_len = (flags >> 8) & 0xffu;
    uint32_t tag_len = (flags >> 16) & 0xffu;
    const uint32_t* key = keys + (uint64_t)d[0] * SRTP_KEY_WORDS;
    uint32_t kind = key[SRTP_K_KIND];
    uint32_t rounds = key[SRTP_K_ROUNDS];
    if (!srtp_well_formed(kind, rounds, 0u, len, es, ee, ae, ts, tag_len, sfx_len)) {
        return SRTP_OUTCOME_FAILED;
    }
    const uint32_t* rk = key + SRTP_K_RK;
    int aligned = (es & 3u) == 0u;
    uint32_t ok = 1u;

    if (kind == SRTP_KIND_AES_GCM) {
        const uint32_t* tab = key + SRTP_K_GHASH_TABLE;
        srtp_u128 mask;
        mask.w0 = mask.w1 = mask.w2 = mask.w3 = 0u;
        if (lane == 0u) {
            srtp_u128 j0 = iv;
            j0.w3 = 1u;
            mask = srtp_aes_encrypt(te, rk, rounds, j0);
            if (unprotect) {
                srtp_u128 y = srtp_ghash_packet(tab, pkt, es, ee, sfx, sfx_len, aligned);
                uint32_t diff = 0u;
                SRTP_UNROLL
                for (uint32_t i = 0; i < 16u; i++) {
                    diff |= (srtp_u128_byte(y, i) ^ srtp_u128_byte(mask, i)) ^ pkt[ts + i];
                }
                ok = diff == 0u;
            }
        }
        if (__shfl_sync(SRTP_FULL, ok, 0) == 0u) {
            return SRTP_OUTCOME_FAILED;
        }
        srtp_u128 ctr = iv;
        ctr.w3 = 2u;
        srtp_ctr_xor_warp(te, rk, rounds, ctr, pkt + es, ee - es, 1, aligned, lane);
        if (!unprotect && lane == 0u) {
            srtp_u128 y = srtp_ghash_packet(tab, pkt, es, ee, sfx, sfx_len, aligned);
            SRTP_UNROLL
            for (uint32_t i = 0; i < 16u; i++) {
                pkt[ts + i] = (uint8_t)(srtp_u128_byte(y, i) ^ srtp_u128_byte(mask, i));
            }
        }
        __syncwarp();
        return SRTP_OUTCOME_DONE;
    }

    /* Protect encrypts, then authenticates; unprotect authenticates, then
     * decrypts. As the two steps of a loop, the keystream and the MAC are each
     * in the code once: instruction fetch, not arithmetic, bounds this path
     * (one warp alone on its scheduler). Every lane ends srtp_hmac_sha1_warp
     * with the MAC: lane i compares or writes the tag's byte i (tag_len <=
     * 20), and the warp's vote decides, with no exit before every byte is
     * compared. */
    const uint32_t* mid = key + SRTP_K_HMAC_INNER;
    for (uint32_t step = 0u; step < 2u; step++) {
        if ((step == 0u) == (unprotect != 0)) {
            srtp_sha1 mac = srtp_hmac_sha1_warp(mid, pkt, ae, sfx, sfx_len, sha, lane);
            if (unprotect) {
                uint32_t diff = lane < tag_len ? srtp_sha1_byte(mac, lane) ^ pkt[ts + lane] : 0u;
                if (__any_sync(SRTP_FULL, diff != 0u)) {
                    return SRTP_OUTCOME_FAILED;
                }
            } else if (lane < tag_len) {
                pkt[ts + lane] = (uint8_t)srtp_sha1_byte(mac, lane);
            }
        } else if (kind == SRTP_KIND_AES_CM) {
            srtp_ctr_xor_warp(te, rk, rounds, iv, pkt + es, ee - es, 0, aligned, lane);
        }
    }
    __syncwarp();
    return SRTP_OUTCOME_DONE;
}

/* The SM's cycle counter (the stage stamps of one batch all come from block
 * 0's SM). */
static __device__ __forceinline__ uint64_t srtp_clock(void) {
    return (uint64_t)clock64();
}

/* Stage stamps of a batch (the persistent kernel's trace, srtp_persistent):
 * SM cycles of block 0 when the batch was taken, and when the warp holding
 * its first descriptor had read the descriptors, staged the packets,
 * transformed them and written them back; %globaltimer when the batch was
 * taken and when its last block finished; its number and packet count. */
#define SRTP_TR_TAKEN 0
#define SRTP_TR_READ 1
#define SRTP_TR_STAGED 2
#define SRTP_TR_DONE 3
#define SRTP_TR_WRITTEN 4
#define SRTP_TR_T_TAKEN 5
#define SRTP_TR_T_FINISHED 6
#define SRTP_TR_ID 7
#define SRTP_TR_WORDS 8u
#define SRTP_TR_ENTRIES 256u

/* The descriptor srtp_packet takes from a wire descriptor's 12 words x, for
 * the packet staged at the start of its slot (d[2] = 0). */
static __device__ __forceinline__ void srtp_unwire(uint32_t* d, const uint32_t* x) {
    d[0] = x[0];
    d[1] = x[1];
    d[2] = 0u;
    d[3] = x[4];
    d[4] = x[5] & 0xffffu;
    d[5] = x[5] >> 16;
    d[6] = x[6] & 0xffffu;
    d[7] = x[6] >> 16;
    d[8] = x[7];
    d[9] = x[8];
    d[10] = x[9];
    d[11] = x[10];
    d[12] = x[11];
    d[13] = SRTP_OUTCOME_FAILED;
}

/* One packet on this warp (per = 1). Lanes 0..11 read the 12 descriptor
 * words in one load, unless the warp has them already (pre: lane k's word k,
 * read by the resident kernel's block 0 when it took the batch); every lane
 * then holds them all. Its own code rather than srtp_warp_batch's with one
 * packet: a single warp on its scheduler waits on instruction fetch, and the
 * general path's descriptor gather and staging run about 1 us longer. */
static __device__ __forceinline__ void srtp_warp_one(const uint32_t* keys, const uint32_t* wire, uint32_t* outcomes,
                                                     uint32_t i, uint32_t* slots, const uint32_t* te, uint32_t* sha,
                                                     long long rd, long long wd, uint64_t* stamp, int have_pre,
                                                     uint32_t pre) {
    uint32_t lane = threadIdx.x & 31u;
    uint32_t w = have_pre ? pre : lane < SRTP_WIRE_WORDS ? wire[(uint64_t)i * SRTP_WIRE_WORDS + lane] : 0u;
    uint32_t x[SRTP_WIRE_WORDS];
    SRTP_UNROLL
    for (uint32_t k = 0; k < SRTP_WIRE_WORDS; k++) {
        x[k] = __shfl_sync(SRTP_FULL, w, k);
    }
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_READ] = srtp_clock();
    }
    uint64_t addr = (uint64_t)x[2] | ((uint64_t)x[3] << 32);
    uint32_t len = x[4];
    srtp_stage_in(lane, 1u, addr + (uint64_t)rd, len, slots);
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_STAGED] = srtp_clock();
    }
    uint32_t outcome = SRTP_OUTCOME_FAILED;
    if (len <= SRTP_SLOT_BYTES) {
        uint32_t d[SRTP_DESC_WORDS];
        srtp_unwire(d, x);
        outcome = srtp_packet_warp(keys, d, (uint8_t*)slots, te, sha, lane);
    }
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_DONE] = srtp_clock();
    }
    if (outcome == SRTP_OUTCOME_DONE) {
        srtp_copy_out(lane, addr + (uint64_t)wd, len, slots);
    }
    if (lane == 0u) {
        outcomes[i] = outcome;
    }
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_WRITTEN] = srtp_clock();
    }
}

/* Runs the descriptors [base, base + per) ∩ [0, n) on this warp (per <= 32);
 * have_pre, pre: descriptor base's words already read (srtp_warp_one). */
static __device__ __forceinline__ void srtp_warp_batch(const uint32_t* keys, const uint32_t* wire,
                                                       uint32_t* outcomes, uint32_t n, uint32_t base,
                                                       uint32_t per, uint32_t* slots, const uint32_t* te,
                                                       uint32_t* sha, long long rd, long long wd, uint64_t* stamp,
                                                       int have_pre, uint32_t pre) {
    if (per == 1u) {
        srtp_warp_one(keys, wire, outcomes, base, slots, te, sha, rd, wd, stamp, have_pre, pre);
        return;
    }
    uint32_t lane = threadIdx.x & 31u;
    uint32_t m = n - base < per ? n - base : per;
    uint32_t i = base + lane;
    /* The warp's descriptors: 32 x 48 bytes read as 96 16-byte words, three
     * coalesced loads; lane j then gathers words 3j..3j+3 by shuffles. */
    const uint4* w4 = (const uint4*)(wire + (uint64_t)base * SRTP_WIRE_WORDS);
    uint4 rq[3];
#pragma unroll
    for (uint32_t q = 0; q < 3u; q++) {
        uint32_t idx = lane + 32u * q;
        rq[q] = idx < 3u * m ? w4[idx] : srtp_zero4();
    }
    uint4 mine[3];
#pragma unroll
    for (uint32_t k = 0; k < 3u; k++) {
        uint32_t idx = 3u * lane + k;
        uint32_t src = idx & 31u, reg = idx >> 5;
        uint4 got = srtp_zero4();
#pragma unroll
        for (uint32_t q = 0; q < 3u; q++) {
            uint4 v;
            v.x = __shfl_sync(SRTP_FULL, rq[q].x, src);
            v.y = __shfl_sync(SRTP_FULL, rq[q].y, src);
            v.z = __shfl_sync(SRTP_FULL, rq[q].z, src);
            v.w = __shfl_sync(SRTP_FULL, rq[q].w, src);
            if (reg == q) {
                got = v;
            }
        }
        mine[k] = got;
    }
    uint64_t addr = (uint64_t)mine[0].z | ((uint64_t)mine[0].w << 32);
    uint32_t len = lane < m ? mine[1].x : 0u;
    uint32_t* slot = slots + lane * SRTP_SLOT_WORDS;
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_READ] = srtp_clock();
    }
    srtp_stage_in(lane, m, addr + (uint64_t)rd, len, slots);
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_STAGED] = srtp_clock();
    }
    uint32_t outcome = SRTP_OUTCOME_FAILED;
    uint32_t x[SRTP_WIRE_WORDS] = {mine[0].x, mine[0].y, mine[0].z, mine[0].w, mine[1].x, mine[1].y,
                                   mine[1].z, mine[1].w, mine[2].x, mine[2].y, mine[2].z, mine[2].w};
    if (per <= SRTP_WARP_FEW) {
        /* A few packets a warp: the whole warp transforms each in turn. On an
         * H200 one packet takes the warp 5.2-5.4 us and one lane about 23 us
         * (docs/BENCHMARKS.md), so up to four in turn still end sooner than
         * side by side on a lane each. */
        for (uint32_t j = 0; j < m; j++) {
            uint32_t y[SRTP_WIRE_WORDS];
            SRTP_UNROLL
            for (uint32_t k = 0; k < SRTP_WIRE_WORDS; k++) {
                y[k] = __shfl_sync(SRTP_FULL, x[k], j);
            }
            uint32_t oj = SRTP_OUTCOME_FAILED;
            if (y[4] <= SRTP_SLOT_BYTES) {
                uint32_t d[SRTP_DESC_WORDS];
                srtp_unwire(d, y);
                oj = srtp_packet_warp(keys, d, (uint8_t*)(slots + j * SRTP_SLOT_WORDS), te, sha, lane);
            }
            if (lane == j) {
                outcome = oj;
            }
        }
    } else if (lane < m && len <= SRTP_SLOT_BYTES) {
        uint32_t d[SRTP_DESC_WORDS];
        srtp_unwire(d, x);
        srtp_packet(keys, d, (uint8_t*)slot, te);
        outcome = d[13];
    }
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_DONE] = srtp_clock();
    }
    __syncwarp();
    for (uint32_t j = 0; j < m; j++) {
        uint32_t oj = __shfl_sync(SRTP_FULL, outcome, j);
        uint64_t aj = __shfl_sync(SRTP_FULL, addr, j);
        uint32_t lj = __shfl_sync(SRTP_FULL, len, j);
        if (oj == SRTP_OUTCOME_DONE) {
            srtp_copy_out(lane, aj + (uint64_t)wd, lj, slots + j * SRTP_SLOT_WORDS);
        }
    }
    if (lane < m) {
        outcomes[i] = outcome;
    }
    if (stamp && lane == 0u) {
        stamp[SRTP_TR_WRITTEN] = srtp_clock();
    }
}

/* Packets per warp for a batch of n: as few as spread the batch over every
 * warp of the grid (one packet per warp for small batches: each packet's
 * serial work then runs beside the others on its own scheduler, and lanes'
 * scratch accesses do not contend), at most 32. */
static __device__ __forceinline__ uint32_t srtp_per_warp(uint32_t n) {
    uint32_t warps = gridDim.x * (blockDim.x >> 5);
    uint32_t per = (n + warps - 1u) / warps;
    return per < 1u ? 1u : (per > 32u ? 32u : per);
}

/* This thread's warp's 32 scratch slots. */
static __device__ __forceinline__ uint32_t* srtp_warp_slots(uint32_t* scratch) {
    uint64_t warp = ((uint64_t)blockIdx.x * blockDim.x + (threadIdx.x & ~31u));
    return scratch + warp * SRTP_SLOT_WORDS;
}

/* One launch per batch: wire descriptors 0..n, any grid, blockDim.x a
 * multiple of 32 up to 32 * SRTP_SHA_WARPS. scratch: gridDim.x * blockDim.x
 * slots. Static shared memory: 42 KiB (the T-table's 32, the warps' SHA-1
 * areas). read_delta: packets are read at their address plus this (a
 * device copy of the registered memory the host moved there by DMA);
 * write_delta: results are written at their address plus this (the device
 * copy, which the host then moves back by DMA); 0 reads or writes them where
 * they are. */
extern "C" __global__ void srtp_gather(const uint32_t* keys, const uint32_t* wire, uint32_t* outcomes, uint32_t n,
                                       const uint32_t* te0_global, uint32_t* scratch, long long read_delta,
                                       long long write_delta) {
    __shared__ uint32_t te_sh[SRTP_TE_WORDS];
    __shared__ uint32_t sha_sh[SRTP_SHA_WARPS * SRTP_SHA_WORDS];
    srtp_load_table(te_sh, te0_global);
    __syncthreads();
    const uint32_t* te = te_sh + (threadIdx.x & 31u);
    uint32_t* sha = sha_sh + (threadIdx.x >> 5) * SRTP_SHA_WORDS;
    uint32_t* slots = srtp_warp_slots(scratch);
    uint32_t warps = gridDim.x * (blockDim.x >> 5);
    uint32_t gw = blockIdx.x + gridDim.x * (threadIdx.x >> 5);
    uint32_t per = srtp_per_warp(n);
    for (uint32_t base = per * gw; base < n; base += per * warps) {
        srtp_warp_batch(keys, wire, outcomes, n, base, per, slots, te, sha, read_delta, write_delta, (uint64_t*)0, 0,
                        0u);
    }
}

/* %globaltimer in nanoseconds. */
static __device__ __forceinline__ uint64_t srtp_globaltimer(void) {
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Orders this thread's accesses before and after it for every observer, the
 * host included (acquire and release at system scope; lighter than
 * __threadfence_system's sequentially consistent fence, which the protocol
 * does not need). */
static __device__ __forceinline__ void srtp_fence_sys(void) {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/* Control words of the persistent kernel (mapped pinned host memory), read
 * by the device in one 64-byte load per poll (one PCIe round trip). */
#define SRTP_CTL_STOP 2
#define SRTP_CTL_DONE 3
#define SRTP_CTL_EXITED 4
/* Batch seq is rung when the 64-bit word SRTP_CTL_SLOTS / 2 + seq % SRTP_RUNG
 * (of the control words read as 64-bit words) holds seq's low 16 bits in bits
 * 48..63, its descriptor count in bits 0..23 and its first descriptor (and
 * outcome word) in bits 24..47: one word the host writes in one store, so the
 * device never sees a count without its batch. Up to SRTP_RUNG batches rung
 * at once. */
#define SRTP_CTL_SLOTS 8
#define SRTP_RUNG 4u
/* The control words a poll reads, as 64-bit words (words 0..15: up to the
 * last slot). */
#define SRTP_CTL_POLL64 8u
/* The device counter: bits 0..15 blocks that finished the current batch (or,
 * once exiting, blocks that exited); bits 16..30 blocks that started it; bit 31
 * the grid decided to exit. Zero when no batch is in progress. */
#define SRTP_CNT_STARTED 0x10000u
#define SRTP_CNT_EXIT 0x80000000u
/* Words of the counter buffer before the trace: the counter, then the relay
 * words (see below). */
#define SRTP_CNT_WORDS 8u

/* The resident kernel. ctl, wire descriptors and outcomes in mapped pinned
 * host memory, counter (and after SRTP_CNT_WORDS words, the trace:
 * SRTP_TR_ENTRIES entries of SRTP_TR_WORDS, batch seq in entry seq %
 * SRTP_TR_ENTRIES) in device memory, zero at launch. Protocol (each of the
 * engine's lanes runs its own kernel; up to SRTP_RUNG batches rung at once):
 *   host: write batch seq's descriptors, then its slot word (above); batch
 *   seq is done once ctl[3] reaches it. The host rings seq only once seq -
 *   SRTP_RUNG is done (its slot is free again).
 *   At launch ctl[3] is the last batch done, and the kernel takes the batches
 *   rung after it, in order.
 *   device: block 0 takes the next batch (ctl[3] + 1) once its slot shows it
 *   rung and the one before is done by every block; every block takes its
 *   warps' share of every batch; the last block to finish resets the counter
 *   and writes ctl[3] = seq.
 * Exit (ctl[2] != 0, or no batch for idle_ns): all-or-nothing per batch: a
 * block may set the exit bit only while no batch is in progress (counter == 0,
 * by CAS), and a block that sees a new batch registers as started first; a
 * block that finds the exit bit set exits without touching the batch. So a
 * batch is either processed by all blocks or by none; in the latter case
 * ctl[3] stays below it once ctl[4] == 1, and the host relaunches (the new
 * kernel starts from ctl[3] and picks the batch up). The last block to exit
 * resets the counter and writes ctl[4] = 1. Needs gridDim.x < 32768 and all
 * blocks co-resident (the engine's lanes together use at most one block per
 * SM). */
extern "C" __global__ void srtp_persistent(const uint32_t* keys, volatile uint32_t* ctl, const uint32_t* wire,
                                           uint32_t* outcomes, uint32_t* counter, const uint32_t* te0_global,
                                           unsigned long long idle_ns, uint32_t* scratch) {
    __shared__ uint32_t te_sh[SRTP_TE_WORDS];
    __shared__ uint32_t sha_sh[SRTP_SHA_WARPS * SRTP_SHA_WORDS];
    __shared__ uint32_t s_cmd, s_seq, s_n, s_off;
    srtp_load_table(te_sh, te0_global);
    const uint32_t* te = te_sh + (threadIdx.x & 31u);
    uint32_t* sha = sha_sh + (threadIdx.x >> 5) * SRTP_SHA_WORDS;
    uint32_t* slots = srtp_warp_slots(scratch);
    volatile uint32_t* vcounter = counter;
    /* Written by block 0 (relay[0] = the batch taken, relay[1] its count,
     * relay[2] = stop, relay[3] its first index) and by the last block of a
     * batch (relay[4] = the last batch done); the host sets relay[0] and
     * relay[4] to the last completed batch before each launch. */
    volatile uint32_t* relay = counter + 1;
    volatile uint64_t* vctl64 = (volatile uint64_t*)ctl;
    uint64_t* trace = (uint64_t*)(counter + SRTP_CNT_WORDS);
    uint32_t last = 0u;
    if (threadIdx.x == 0u) {
        last = ctl[SRTP_CTL_DONE];
    }
    for (;;) {
        /* Block 0's warp 0, when it takes a batch of one packet a warp,
         * reads the batch's first descriptor right after its acquire (lane k
         * word k), which its own warp runs (srtp_warp_one): that PCIe round
         * trip then overlaps the take's steps in device memory (the trace,
         * the relay words, the registration and the block's barrier). */
        int took = 0, have_pre = 0;
        uint32_t pre = 0u;
        /* Warp 0 waits for the next batch (lane 0 registers the block; the
         * others help block 0 read the control words in one load, and take
         * part in its acquire and its read of the first descriptor). */
        if (threadIdx.x < 32u) {
            uint32_t lane = threadIdx.x;
            uint64_t idle_since = srtp_globaltimer();
            uint32_t ns = 32u;
            uint32_t cmd = 0u; /* 0: process s_seq; 1: exit */
            for (;;) {
                /* Only block 0 polls the host's control words (each read is a
                 * PCIe round trip); it relays them through device memory,
                 * which the other blocks poll cheaply. The next batch is
                 * taken once the one before is done by every block: a block
                 * never starts a batch while another still counts itself in
                 * the one before. */
                if (blockIdx.x == 0u) {
                    uint64_t q = lane < SRTP_CTL_POLL64 ? vctl64[lane] : 0ull;
                    uint32_t stop = (uint32_t)__shfl_sync(SRTP_FULL, q, SRTP_CTL_STOP / 2);
                    uint32_t cur = 0u, fin = 0u;
                    if (lane == 0u) {
                        cur = relay[0];
                        fin = relay[4];
                    }
                    cur = __shfl_sync(SRTP_FULL, cur, 0);
                    fin = __shfl_sync(SRTP_FULL, fin, 0);
                    uint32_t next = cur + 1u;
                    uint64_t slot = __shfl_sync(SRTP_FULL, q, SRTP_CTL_SLOTS / 2 + next % SRTP_RUNG);
                    if (fin == cur && (uint32_t)(slot >> 48) == (next & 0xffffu)) {
                        /* Acquire (the whole warp: it reads a descriptor
                         * next): the host wrote the descriptors before the
                         * slot. */
                        srtp_fence_sys();
                        uint32_t count = (uint32_t)slot & 0xffffffu, first = (uint32_t)(slot >> 24) & 0xffffffu;
                        took = 1;
                        if (count != 0u && count <= gridDim.x * (blockDim.x >> 5)) {
                            have_pre = 1;
                            pre = lane < SRTP_WIRE_WORDS ? wire[(size_t)first * SRTP_WIRE_WORDS + lane] : 0u;
                        }
                        if (lane == 0u) {
                            uint64_t* tr = trace + (uint64_t)(next % SRTP_TR_ENTRIES) * SRTP_TR_WORDS;
                            tr[SRTP_TR_TAKEN] = srtp_clock();
                            tr[SRTP_TR_T_TAKEN] = srtp_globaltimer();
                            relay[1] = count;
                            relay[3] = first;
                            __threadfence();
                            relay[0] = next;
                            /* Block 0 joins the batch it took from what it
                             * has, without reading it back. */
                            s_n = count;
                            s_off = first;
                        }
                    }
                    if (lane == 0u && stop != 0u) {
                        relay[2] = 1u;
                    }
                }
                uint32_t brk = 0u;
                if (lane == 0u) {
                    /* Block 0 takes every batch itself: the one it took in
                     * this poll follows the last it ran. */
                    uint32_t seq = blockIdx.x == 0u ? last + (uint32_t)took : relay[0];
                    if (seq != last) {
                        uint32_t old = atomicAdd(counter, SRTP_CNT_STARTED);
                        if (old & SRTP_CNT_EXIT) {
                            cmd = 1u;
                        } else {
                            if (blockIdx.x != 0u) {
                                /* Acquire (device scope is enough: block 0
                                 * took the batch after a system-scope
                                 * acquire, and relay[0] carries that order
                                 * here). */
                                __threadfence();
                                s_n = relay[1];
                                s_off = relay[3];
                            }
                            s_seq = seq;
                            last = seq;
                        }
                        brk = 1u;
                    } else {
                        int want_exit = relay[2] != 0u || srtp_globaltimer() - idle_since > idle_ns;
                        if (want_exit || (*vcounter & SRTP_CNT_EXIT)) {
                            uint32_t old = atomicCAS(counter, 0u, SRTP_CNT_EXIT);
                            if (old == 0u || (old & SRTP_CNT_EXIT)) {
                                cmd = 1u;
                                brk = 1u;
                            }
                            /* Else a batch is in progress: join it. */
                        }
                    }
                }
                if (__shfl_sync(SRTP_FULL, brk, 0) != 0u) {
                    break;
                }
                __nanosleep(ns);
                if (ns < 256u) {
                    ns *= 2u;
                }
            }
            if (lane == 0u) {
                s_cmd = cmd;
            }
        }
        __syncthreads();
        if (s_cmd != 0u) {
            break;
        }
        uint32_t n = s_n;
        uint32_t seq = s_seq;
        uint64_t* tr = trace + (uint64_t)(seq % SRTP_TR_ENTRIES) * SRTP_TR_WORDS;
        const uint32_t* bwire = wire + (size_t)s_off * SRTP_WIRE_WORDS;
        uint32_t* bout = outcomes + s_off;
        uint32_t warps = gridDim.x * (blockDim.x >> 5);
        uint32_t gw = blockIdx.x + gridDim.x * (threadIdx.x >> 5);
        uint32_t per = srtp_per_warp(n);
        for (uint32_t base = per * gw; base < n; base += per * warps) {
            srtp_warp_batch(keys, bwire, bout, n, base, per, slots, te, sha, 0, 0, base == 0u ? tr : (uint64_t*)0,
                            have_pre && base == 0u, pre);
        }
        /* Release this thread's results (host memory) before the block
         * counts itself done. */
        srtp_fence_sys();
        __syncthreads();
        if (threadIdx.x == 0u) {
            uint32_t old = atomicAdd(counter, 1u);
            if ((old & 0xffffu) == gridDim.x - 1u) {
                atomicExch(counter, 0u);
                tr[SRTP_TR_T_FINISHED] = srtp_globaltimer();
                tr[SRTP_TR_ID] = ((uint64_t)seq << 32) | n;
                /* Every block's results (seen through the counter) before
                 * the completion the host reads. */
                srtp_fence_sys();
                relay[4] = seq;
                ctl[SRTP_CTL_DONE] = seq;
            }
        }
        /* s_cmd/s_seq/s_n are rewritten by thread 0 only after this barrier. */
        __syncthreads();
    }
    if (threadIdx.x == 0u) {
        uint32_t old = atomicAdd(counter, 1u);
        if ((old & 0xffffu) == gridDim.x - 1u) {
            atomicExch(counter, 0u);
            __threadfence_system();
            ctl[SRTP_CTL_EXITED] = 1u;
        }
    }
}

#endif /* !SRTP_EMU */
