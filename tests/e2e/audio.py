"""G.711 (ITU-T G.711, µ-law and A-law) and a tone detector for the
end-to-end tests: the phones send real audio and check what they decode,
independently of the relay's own codec code."""

import math


def ulaw_encode(x):
    x = max(-32768, min(32767, int(x)))
    sign = 0x80 if x < 0 else 0
    mag = min(-x if x < 0 else x, 32635) + 0x84
    exp = max(0, mag.bit_length() - 8)
    mant = (mag >> (exp + 3)) & 0x0F
    return ~(sign | (exp << 4) | mant) & 0xFF


def ulaw_decode(c):
    c = ~c & 0xFF
    mag = ((((c & 0x0F) << 3) + 0x84) << ((c >> 4) & 7)) - 0x84
    return -mag if c & 0x80 else mag


def alaw_encode(x):
    x = max(-32768, min(32767, int(x)))
    sign = 0x80 if x >= 0 else 0
    mag = min((x if x >= 0 else -x - 1) >> 3, 0xFFF)
    if mag < 32:
        code = mag >> 1
    else:
        exp = mag.bit_length() - 5
        code = (exp << 4) | ((mag >> exp) & 0x0F)
    return (sign | code) ^ 0x55


def alaw_decode(c):
    c ^= 0x55
    exp = (c >> 4) & 7
    mant = c & 0x0F
    mag = (mant << 4) + 8 if exp == 0 else ((mant << 4) + 0x108) << (exp - 1)
    return mag if c & 0x80 else -mag


ENCODE = {0: ulaw_encode, 8: alaw_encode}
DECODE = {0: ulaw_decode, 8: alaw_decode}


def tone(hz, start, count, amplitude=8000.0, rate=8000):
    return [amplitude * math.sin(2 * math.pi * hz * (start + i) / rate) for i in range(count)]


def tone_share(pcm, hz, rate=8000):
    """(fraction of the power at hz, RMS) by the Goertzel algorithm."""
    w = 2 * math.pi * hz / rate
    s1 = s2 = 0.0
    for x in pcm:
        s1, s2 = x + 2 * math.cos(w) * s1 - s2, s1
    power = s1 * s1 + s2 * s2 - 2 * math.cos(w) * s1 * s2
    energy = sum(x * x for x in pcm)
    if not pcm or energy == 0:
        return 0.0, 0.0
    return power / (energy * len(pcm) / 2), math.sqrt(energy / len(pcm))
