/* Operations on G.722 states that spandsp's API does not offer, done
 * here against its private layout (<spandsp/private/g722.h>, shipped by
 * libspandsp-dev for this use) so that they always match the installed
 * library. */
#include <string.h>
#include <stdint.h>
#include <spandsp.h>
#include <spandsp/private/g722.h>

/* A decoder state made a copy of another. */
void srtpgate_g722_decode_copy(g722_decode_state_t *dst, const g722_decode_state_t *src)
{
    memcpy(dst, src, sizeof(*dst));
}

/* The encoder continues from the decoder's sub-band ADPCM state, its QMF
 * analysis history set to `hist` (24 samples of 16 kHz audio, oldest
 * first): encoding what follows `hist` then updates the sub-band state as
 * the sender's encoder would have, had it been given that audio. */
void srtpgate_g722_encode_from_decode(g722_encode_state_t *e, const g722_decode_state_t *d, const int16_t hist[24])
{
    int i;

    memcpy(e->band, d->band, sizeof(e->band));
    for (i = 0;  i < 12;  i++)
    {
        e->x[i] = hist[2*i];
        e->y[i] = hist[2*i + 1];
    }
    e->ptr = 0;
    e->in_buffer = 0;
    e->in_bits = 0;
    e->out_buffer = 0;
    e->out_bits = 0;
}

/* An encoder state made a copy of another. */
void srtpgate_g722_encode_copy(g722_encode_state_t *dst, const g722_encode_state_t *src)
{
    memcpy(dst, src, sizeof(*dst));
}
