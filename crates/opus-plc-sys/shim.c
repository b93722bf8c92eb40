/* The few entry points of libopus's neural PLC that srtpgate calls, with
 * the state's size known here (it is private to libopus). */
#include <stdlib.h>
#include <string.h>
#include "lpcnet.h"
#include "lpcnet_private.h"

void *srtpgate_dplc_new(void) {
    LPCNetPLCState *s = malloc(sizeof *s);
    if (s == NULL) return NULL;
    if (lpcnet_plc_init(s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void srtpgate_dplc_free(void *s) { free(s); }

void srtpgate_dplc_update(void *s, short *pcm) { lpcnet_plc_update((LPCNetPLCState *)s, pcm); }

void srtpgate_dplc_conceal(void *s, short *pcm) { lpcnet_plc_conceal((LPCNetPLCState *)s, pcm); }

/* The state holds no pointer into itself (its model's pointers are to the
 * static weight tables), so a byte copy is a full copy. */
void srtpgate_dplc_copy(void *dst, const void *src) { memcpy(dst, src, sizeof(LPCNetPLCState)); }

size_t srtpgate_dplc_size(void) { return sizeof(LPCNetPLCState); }

/* Samples of one frame at 16 kHz: what update and conceal take and give. */
int srtpgate_dplc_frame(void) { return FRAME_SIZE; }
