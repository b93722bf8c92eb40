/*
 * emu.h -- the shim that compiles the device code of srtp.cu as host C11.
 *
 * Defines the CUDA keywords away and provides portable versions of the
 * intrinsics srtp.cu uses. With SRTP_EMU defined, srtp.cu leaves out its two
 * __global__ kernels (they need shared memory, barriers and atomics); the
 * emulator calls the per-packet function srtp_packet directly.
 *
 * Memory accesses: SRTP_LD32/SRTP_ST32 abort on a misaligned address, as the
 * GPU would fault (misaligned 32-bit global access), instead of silently
 * working as on x86.
 */
#ifndef SRTP_EMU_H
#define SRTP_EMU_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRTP_EMU 1
#define SRTP_HAVE_STDINT 1

#define __device__
#define __forceinline__ inline
#define SRTP_FN static inline
#define SRTP_UNROLL
/* A warp's code (srtp_hmac_sha1_warp): every lane's part in turn, one after
 * the other, so a barrier between parts has nothing left to order. */
#define SRTP_EACH_LANE(l, mine) for (uint32_t l = ((void)(mine), 0u); l < 32u; l++)
#define SRTP_SYNCWARP() ((void)0)

/* PTX prmt (default mode): byte i of the result is byte (s >> 4i) & 7 of y:x,
 * sign-replicated when bit 3 of the selector nibble is set. */
static inline uint32_t __byte_perm(uint32_t x, uint32_t y, uint32_t s) {
    uint64_t v = ((uint64_t)y << 32) | x;
    uint32_t r = 0;
    for (int i = 0; i < 4; i++) {
        uint32_t nib = (s >> (4 * i)) & 0xfu;
        uint32_t b = (uint32_t)(v >> (8 * (nib & 7u))) & 0xffu;
        if (nib & 8u) {
            b = (b & 0x80u) ? 0xffu : 0u;
        }
        r |= b << (8 * i);
    }
    return r;
}

static inline void srtp_emu_check_align(const void* p) {
    if (((uintptr_t)p & 3u) != 0) {
        fprintf(stderr, "srtp-emu: misaligned 32-bit access at %p (would fault on the GPU)\n", p);
        abort();
    }
}

static inline uint32_t srtp_emu_ld32(const uint8_t* p) {
    uint32_t v;
    srtp_emu_check_align(p);
    memcpy(&v, p, 4);
    return v;
}

static inline void srtp_emu_st32(uint8_t* p, uint32_t v) {
    srtp_emu_check_align(p);
    memcpy(p, &v, 4);
}

#define SRTP_LD32(p) srtp_emu_ld32((const uint8_t*)(p))
#define SRTP_ST32(p, v) srtp_emu_st32((uint8_t*)(p), (v))

#endif /* SRTP_EMU_H */
