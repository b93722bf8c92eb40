/*
 * emu_main.c -- runs the device code of srtp.cu on the host, one descriptor at
 * a time, as the GPU would (lane = descriptor index % 32, replicated T-table).
 *
 * Build (C11):  cc -O2 -std=c11 -Wall -Wextra -x c kernels/emu_main.c -o srtp-emu
 * (add -fsanitize=address,undefined to catch any access outside a packet:
 * every packet is run in its own exactly-sized heap buffer).
 *
 * Usage:  srtp-emu IN OUT     transforms the batch file IN, writes OUT
 *         srtp-emu --te0      prints the 256 Te0 words (hex, one per line)
 *         srtp-emu --hmac-warp SEED N
 *                             N random messages: srtp_hmac_sha1_warp (the
 *                             warp's HMAC, its lanes run in turn) against
 *                             srtp_hmac_sha1 (the one-lane HMAC the batch
 *                             runs check against the CPU engine)
 *
 * Batch file (little-endian): "SRTPBAT1", u32 key_words (192), u32 n_keys,
 * u32 n_descs, u32 data_len, keys (n_keys * 192 u32), descs (n_descs * 16
 * u32), data (data_len bytes). OUT has the same format, with the data
 * transformed and the outcome words set.
 *
 * The emulator checks what the kernels leave to the host (d[0] < n_keys,
 * d[2] + d[3] <= data_len); such descriptors get outcome 2 and a warning.
 */
#include "emu.h"
#include "srtp.cu"

/* GF(2^8) multiplication modulo x^8 + x^4 + x^3 + x + 1. */
static uint8_t gmul(uint8_t a, uint8_t b) {
    uint8_t p = 0;
    while (b) {
        if (b & 1) {
            p ^= a;
        }
        a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
        b >>= 1;
    }
    return p;
}

static uint8_t rotl8(uint8_t x, int n) {
    return (uint8_t)((x << n) | (x >> (8 - n)));
}

/* Te0[x] = (2 S[x], S[x], S[x], 3 S[x]) with S computed from its definition
 * (inverse in GF(2^8), then the affine map), as srtp::portable does. */
static void build_te0(uint32_t te0[256]) {
    for (int x = 0; x < 256; x++) {
        uint8_t inv = 1;
        for (int e = 0; e < 254; e++) {
            inv = gmul(inv, (uint8_t)x);
        }
        if (x == 0) {
            inv = 0;
        }
        uint8_t s = (uint8_t)(inv ^ rotl8(inv, 1) ^ rotl8(inv, 2) ^ rotl8(inv, 3) ^ rotl8(inv, 4) ^ 0x63);
        te0[x] = ((uint32_t)gmul(s, 2) << 24) | ((uint32_t)s << 16) | ((uint32_t)s << 8) | gmul(s, 3);
    }
}

static uint32_t rd32(const uint8_t* p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void wr32(uint8_t* p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static int die(const char* msg) {
    fprintf(stderr, "srtp-emu: %s\n", msg);
    return 1;
}

static uint64_t xorshift(uint64_t* x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* --hmac-warp: every message length from 0 to 600 bytes (the block edges of
 * one to ten blocks, two passes of SRTP_SHA_CHUNK and the start of a third),
 * then random ones up to a slot's 2 304; suffixes of 0 to 4 bytes; random
 * midstates. Each message lies in its own exactly-sized heap buffer (the
 * sanitizers catch a read past it), and the schedule area holds another
 * pattern before each (a word the warp failed to write would show). */
static int hmac_warp_check(uint64_t seed, uint32_t n) {
    static uint32_t s[SRTP_SHA_WORDS];
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1u;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t mid[10];
        for (int k = 0; k < 10; k++) {
            mid[k] = (uint32_t)xorshift(&x);
        }
        uint32_t len = i <= 600u ? i : (uint32_t)(xorshift(&x) % 2305u);
        uint32_t sfx_len = (uint32_t)(xorshift(&x) % 5u);
        uint32_t sfx = (uint32_t)xorshift(&x);
        uint8_t* pkt = malloc(len ? len : 1);
        if (!pkt) {
            return die("out of memory");
        }
        for (uint32_t b = 0; b < len; b++) {
            pkt[b] = (uint8_t)xorshift(&x);
        }
        for (uint32_t k = 0; k < SRTP_SHA_WORDS; k++) {
            s[k] = (uint32_t)xorshift(&x);
        }
        srtp_sha1 want = srtp_hmac_sha1(mid, pkt, len, sfx, sfx_len);
        srtp_sha1 got = srtp_hmac_sha1_warp(mid, pkt, len, sfx, sfx_len, s, 0u);
        free(pkt);
        if (got.a != want.a || got.b != want.b || got.c != want.c || got.d != want.d || got.e != want.e) {
            fprintf(stderr, "srtp-emu: hmac-warp differs: message %u, %u bytes, suffix %u bytes\n", i, len, sfx_len);
            return 1;
        }
    }
    printf("%u messages, the same MAC\n", n);
    return 0;
}

int main(int argc, char** argv) {
    static uint32_t te0[256];
    build_te0(te0);
    if (argc == 2 && strcmp(argv[1], "--te0") == 0) {
        for (int i = 0; i < 256; i++) {
            printf("%08x\n", te0[i]);
        }
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "--hmac-warp") == 0) {
        return hmac_warp_check(strtoull(argv[2], 0, 10), (uint32_t)strtoul(argv[3], 0, 10));
    }
    if (argc != 3) {
        return die("usage: srtp-emu IN OUT | srtp-emu --te0 | srtp-emu --hmac-warp SEED N");
    }
    FILE* f = fopen(argv[1], "rb");
    if (!f) {
        return die("cannot open input");
    }
    uint8_t hdr[24];
    if (fread(hdr, 1, 24, f) != 24 || memcmp(hdr, "SRTPBAT1", 8) != 0) {
        return die("not a batch file");
    }
    uint32_t key_words = rd32(hdr + 8), n_keys = rd32(hdr + 12), n_descs = rd32(hdr + 16), data_len = rd32(hdr + 20);
    if (key_words != SRTP_KEY_WORDS) {
        return die("key_words is not 192");
    }
    size_t kw = (size_t)n_keys * SRTP_KEY_WORDS, dw = (size_t)n_descs * SRTP_DESC_WORDS;
    uint32_t* keys = calloc(kw + 1, 4);
    uint32_t* descs = calloc(dw + 1, 4);
    uint8_t* raw = malloc(4 * (kw > dw ? kw : dw) + 4);
    uint8_t* data = aligned_alloc(16, ((size_t)data_len + 16) / 16 * 16);
    if (!keys || !descs || !raw || !data) {
        return die("out of memory");
    }
    if (fread(raw, 4, kw, f) != kw) {
        return die("short keys");
    }
    for (size_t i = 0; i < kw; i++) {
        keys[i] = rd32(raw + 4 * i);
    }
    if (fread(raw, 4, dw, f) != dw) {
        return die("short descriptors");
    }
    for (size_t i = 0; i < dw; i++) {
        descs[i] = rd32(raw + 4 * i);
    }
    if (fread(data, 1, data_len, f) != data_len) {
        return die("short data");
    }
    fclose(f);

    /* The replicated table, as srtp_launch builds it in shared memory. */
    static uint32_t te_sh[SRTP_TE_WORDS];
    for (uint32_t i = 0; i < SRTP_TE_WORDS; i++) {
        te_sh[i] = te0[i >> 5];
    }

    for (uint32_t i = 0; i < n_descs; i++) {
        uint32_t* d = descs + (size_t)i * SRTP_DESC_WORDS;
        uint32_t off = d[2], len = d[3];
        if (d[0] >= n_keys || (uint64_t)off + len > data_len) {
            fprintf(stderr, "srtp-emu: descriptor %u outside the keys or data region (host must not send it)\n", i);
            d[13] = SRTP_OUTCOME_FAILED;
            continue;
        }
        /* The packet in its own exact-size buffer (sanitizers catch any access
         * outside it); `base` is its address minus the offset, so that
         * base + d[2] is the packet, as data + d[2] is on the device. */
        uint8_t* exact = malloc(len ? len : 1);
        if (!exact) {
            return die("out of memory");
        }
        memcpy(exact, data + off, len);
        /* malloc is 16-aligned on the platforms we run on; keep the check. */
        if (((uintptr_t)exact & 15u) != 0) {
            return die("malloc result not 16-aligned");
        }
        uint8_t* base = (uint8_t*)((uintptr_t)exact - off);
        srtp_packet(keys, d, base, te_sh + (i % 32u));
        memcpy(data + off, exact, len);
        free(exact);
    }

    f = fopen(argv[2], "wb");
    if (!f) {
        return die("cannot open output");
    }
    fwrite(hdr, 1, 24, f);
    for (size_t i = 0; i < kw; i++) {
        wr32(raw + 4 * i, keys[i]);
    }
    fwrite(raw, 4, kw, f);
    for (size_t i = 0; i < dw; i++) {
        wr32(raw + 4 * i, descs[i]);
    }
    fwrite(raw, 4, dw, f);
    fwrite(data, 1, data_len, f);
    if (fclose(f) != 0) {
        return die("write failed");
    }
    free(keys);
    free(descs);
    free(raw);
    free(data);
    return 0;
}
