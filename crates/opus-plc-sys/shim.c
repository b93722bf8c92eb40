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

/* A frame made from features given through fec_add is still a lost one:
 * libopus restarts its count of lost frames there (which sets how the
 * concealment fades), so the count is carried on as if the model had
 * predicted that frame. */
void srtpgate_dplc_conceal(void *s, short *pcm) {
    LPCNetPLCState *st = (LPCNetPLCState *)s;
    int lost = st->blend ? st->loss_count : 0;
    lpcnet_plc_conceal(st, pcm);
    st->loss_count = lost + 1;
}

/* The state holds no pointer into itself (its model's pointers are to the
 * static weight tables), so a byte copy is a full copy. */
void srtpgate_dplc_copy(void *dst, const void *src) { memcpy(dst, src, sizeof(LPCNetPLCState)); }

size_t srtpgate_dplc_size(void) { return sizeof(LPCNetPLCState); }

/* Samples of one frame at 16 kHz: what update and conceal take and give. */
int srtpgate_dplc_frame(void) { return FRAME_SIZE; }

/* Features for the frames the model would otherwise predict, in the order
 * it predicts them (libopus's DRED path). A NULL does not hold a place: it
 * adds one to a count of predictions made before any features given are
 * used, so NULLs go first. */
void srtpgate_dplc_fec_add(void *s, const float *features) { lpcnet_plc_fec_add((LPCNetPLCState *)s, features); }

void srtpgate_dplc_fec_clear(void *s) { lpcnet_plc_fec_clear((LPCNetPLCState *)s); }

/* The features the last concealed frame was made from. */
void srtpgate_dplc_features(const void *s, float *out) {
    memcpy(out, ((const LPCNetPLCState *)s)->features, NB_FEATURES * sizeof(float));
}

/* One more frame through the state's feature analysis (which a loss's
 * start runs over the history): its features, as the model sees audio. */
void srtpgate_dplc_analyse(void *s, const short *pcm, float *out) {
    LPCNetPLCState *st = (LPCNetPLCState *)s;
    float f[NB_TOTAL_FEATURES];
    lpcnet_compute_single_frame_features(&st->enc, pcm, f, st->arch);
    memcpy(out, f, NB_FEATURES * sizeof(float));
}

int srtpgate_dplc_nb_features(void) { return NB_FEATURES; }

/* The state's feature analysis started afresh. */
void srtpgate_dplc_analysis_reset(void *s) { lpcnet_encoder_init(&((LPCNetPLCState *)s)->enc); }

/* Whether the next conceal starts a loss for the model (it does where audio
 * was given since the last conceal): then it predicts two more features
 * before the first frame it makes. */
int srtpgate_dplc_starts(const void *s) { return ((const LPCNetPLCState *)s)->blend == 0; }

/* The model's count of lost frames (what its fade follows). */
int srtpgate_dplc_lost_frames(const void *s) { return ((const LPCNetPLCState *)s)->loss_count; }

/* Sets the model's count of lost frames (what its fade follows). */
void srtpgate_dplc_set_lost_frames(void *s, int n) { ((LPCNetPLCState *)s)->loss_count = n; }
