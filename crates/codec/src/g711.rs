//! G.711 µ-law and A-law (ITU-T G.711), in-tree, behind the plugin ABI like
//! any other codec ([`TABLE`]), so the relay has one code path for all.
//!
//! Written here rather than taken from a crate: the conversions are a few
//! lines from the standard's definition and no maintained Rust crate offers
//! them with the concealment the relay needs.

use crate::abi::{self, CodecDesc, StaticCodecs};
use crate::kit::{Codec, Setup};
use crate::plc::Plc;

const BIAS: i32 = 0x84;
const CLIP: i32 = 32635;

/// Encodes one 16-bit linear sample as µ-law (G.711 table 2, with the
/// usual 14-bit magnitude and bias of 33 on the 13-bit scale).
pub fn ulaw_encode(sample: i16) -> u8 {
    let mut s = sample as i32;
    let sign = if s < 0 {
        s = -s;
        0x80
    } else {
        0
    };
    s = s.min(CLIP) + BIAS;
    // The segment: the highest set bit of bits 7..14.
    let top = ((s >> 7) & 0xff) as u32;
    let exponent = if top == 0 { 0 } else { (31 - top.leading_zeros()) as i32 };
    let mantissa = (s >> (exponent + 3)) & 0x0f;
    !(sign | (exponent << 4) as u8 | mantissa as u8)
}

/// Decodes one µ-law byte.
pub fn ulaw_decode(code: u8) -> i16 {
    let c = !code;
    let exponent = ((c >> 4) & 7) as i32;
    let mantissa = (c & 0x0f) as i32;
    let magnitude = (((mantissa << 3) + BIAS) << exponent) - BIAS;
    if c & 0x80 != 0 {
        -magnitude as i16
    } else {
        magnitude as i16
    }
}

/// Encodes one 16-bit linear sample as A-law (G.711 table 1; even bits
/// inverted).
pub fn alaw_encode(sample: i16) -> u8 {
    let s = sample as i32 >> 3; // 13-bit
    let (sign, mag) = if s >= 0 { (0x80, s) } else { (0x00, -s - 1) };
    let mag = mag.min(0x0fff);
    let code = if mag < 32 {
        (mag >> 1) as u8
    } else {
        let exponent = 31 - (mag as u32).leading_zeros() - 4; // 1..=7
        let mantissa = (mag >> exponent) & 0x0f;
        ((exponent as u8) << 4) | mantissa as u8
    };
    (sign | code) ^ 0x55
}

/// Decodes one A-law byte.
pub fn alaw_decode(code: u8) -> i16 {
    let c = code ^ 0x55;
    let exponent = ((c >> 4) & 7) as i32;
    let mantissa = (c & 0x0f) as i32;
    let mag = if exponent == 0 { (mantissa << 4) + 8 } else { ((mantissa << 4) + 0x108) << (exponent - 1) };
    if c & 0x80 != 0 {
        mag as i16
    } else {
        -mag as i16
    }
}

/// One G.711 state: the law, and the concealer (G.711 Appendix I).
struct G711 {
    alaw: bool,
    plc: Plc,
}

const fn desc(name: &'static std::ffi::CStr, static_pt: i32) -> CodecDesc {
    CodecDesc {
        name: name.as_ptr(),
        clock_rate: 8000,
        channels: 1,
        pcm_channels: 1,
        pcm_rate: 8000,
        pcm_rates: 0,
        frame_samples: 80,
        max_frame_bytes: 960,
        static_pt,
        fmtp: std::ptr::null(),
        flags: 0,
    }
}

static CODECS: StaticCodecs<2> = StaticCodecs([desc(c"PCMU", 0), desc(c"PCMA", 8)]);

crate::plugin_table!(pub static TABLE: c"g711 (in-tree)", c"2.0.0", CODECS, make);

fn make(s: &Setup<'_>) -> Result<Box<dyn Codec>, i32> {
    if s.codec > 1 || s.pcm_rate != 8000 {
        return Err(abi::ERR_INVALID);
    }
    Ok(Box::new(G711 { alaw: s.codec == 1, plc: Plc::new(8000) }))
}

impl Codec for G711 {
    fn decode(&mut self, input: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        let out = pcm.get_mut(..input.len()).ok_or(abi::ERR_SPACE)?;
        for (o, &c) in out.iter_mut().zip(input) {
            *o = if self.alaw { alaw_decode(c) } else { ulaw_decode(c) };
        }
        self.plc.received(out);
        Ok(input.len())
    }

    fn encode(&mut self, pcm: &[i16], out: &mut [u8]) -> Result<usize, i32> {
        let o = out.get_mut(..pcm.len()).ok_or(abi::ERR_SPACE)?;
        for (b, &x) in o.iter_mut().zip(pcm) {
            *b = if self.alaw { alaw_encode(x) } else { ulaw_encode(x) };
        }
        Ok(pcm.len())
    }

    /// Concealment after G.711 Appendix I ([`Plc`]).
    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32> {
        self.plc.conceal(pcm);
        Ok(pcm.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_code_words() {
        // Silence and full scale, from the standard's tables.
        assert_eq!(ulaw_encode(0), 0xff);
        assert_eq!(ulaw_decode(0xff), 0);
        assert_eq!(ulaw_decode(0x7f), 0);
        assert_eq!(ulaw_encode(i16::MAX), 0x80);
        assert_eq!(ulaw_encode(i16::MIN), 0x00);
        assert_eq!(ulaw_decode(0x80), 32124);
        assert_eq!(ulaw_decode(0x00), -32124);
        assert_eq!(alaw_encode(0), 0xd5);
        assert_eq!(alaw_decode(0xd5), 8);
        assert_eq!(alaw_decode(0x55), -8);
        assert_eq!(alaw_decode(0xaa), 32256);
        assert_eq!(alaw_decode(0x2a), -32256);
        assert_eq!(alaw_encode(i16::MAX), 0xaa);
        assert_eq!(alaw_encode(i16::MIN), 0x2a);
    }

    #[test]
    fn every_code_word_survives_decode_then_encode() {
        for c in 0..=255u8 {
            let u = ulaw_decode(c);
            // 0x7f and 0xff are both zero: they encode to 0xff.
            let want = if c == 0x7f { 0xff } else { c };
            assert_eq!(ulaw_encode(u), want, "µ-law {c:#04x} → {u}");
            assert_eq!(alaw_encode(alaw_decode(c)), c, "A-law {c:#04x}");
        }
    }

    #[test]
    fn quantisation_error_is_within_one_step() {
        for x in (i16::MIN..=i16::MAX).step_by(7) {
            for (enc, dec) in [(ulaw_encode as fn(i16) -> u8, ulaw_decode as fn(u8) -> i16), (alaw_encode, alaw_decode)]
            {
                let y = dec(enc(x)) as i32;
                let x = x as i32;
                // Segment step: 2^(exponent+1)·(2 or 4); the error is under one step.
                let step = ((x.abs().max(32) as u32).next_power_of_two() / 16).max(16) as i32;
                assert!((y - x).abs() <= step, "{x} → {y} (step {step})");
            }
        }
    }
}
