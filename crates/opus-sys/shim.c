/* The few entry points of libopus's neural PLC that srtpgate calls, with
 * the state's size known here (it is private to libopus). libopus's
 * lpcnet_plc.c is compiled as part of this file (build.rs leaves it out of
 * its own list) so that srtpgate_dplc_begin can call its static helpers;
 * the vendored file itself stays unchanged. */
#include <stdlib.h>
#include <string.h>
#include "lpcnet.h"
#include "lpcnet_private.h"
#include "lpcnet_plc.c"

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

/* The model's analysis of the history that a loss's first conceal starts
 * with (lpcnet_plc_conceal's first block up to its first prediction, the
 * same steps in the same order), run now: the conceal that follows finds
 * every frame analysed and goes on exactly as it would have (the same state,
 * the same samples). So a look-ahead that copies the state after this runs
 * the analysis once a loss, not once in the copy and again in the stream.
 * Nothing where a loss is under way (the analysis ran at its start). */
void srtpgate_dplc_begin(void *s) {
    LPCNetPLCState *st = (LPCNetPLCState *)s;
    int i, count = 0;
    if (st->blend != 0) return;
    st->plc_net = st->plc_bak[0];
    while (st->analysis_pos + FRAME_SIZE <= PLC_BUF_SIZE) {
        float x[FRAME_SIZE];
        float plc_features[2*NB_BANDS+NB_FEATURES+1];
        for (i = 0; i < FRAME_SIZE; i++) x[i] = 32768.f*st->pcm[st->analysis_pos+i];
        burg_cepstral_analysis(plc_features, x);
        lpcnet_compute_single_frame_features_float(&st->enc, x, st->features, st->arch);
        if ((!st->analysis_gap || count > 0) && st->analysis_pos >= st->predict_pos) {
            queue_features(st, st->features);
            OPUS_COPY(&plc_features[2*NB_BANDS], st->features, NB_FEATURES);
            plc_features[2*NB_BANDS+NB_FEATURES] = 1;
            st->plc_bak[0] = st->plc_bak[1];
            st->plc_bak[1] = st->plc_net;
            compute_plc_pred(st, st->features, plc_features);
        }
        st->analysis_pos += FRAME_SIZE;
        count++;
    }
    /* lpcnet_plc_conceal starts its block again with plc_net = plc_bak[0]
     * (and its loop then has nothing left to do); plc_bak[0] is set anew
     * right after that, before it is read. */
    st->plc_bak[0] = st->plc_net;
    /* Frames received before the conceal continue the analysed history. */
    if (count > 0) st->analysis_gap = 0;
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
