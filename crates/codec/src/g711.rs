//! G.711 µ-law and A-law (ITU-T G.711), in-tree, behind the plugin ABI like
//! any other codec ([`TABLE`]), so the relay has one code path for all.
//!
//! Written here rather than taken from a crate: the conversions are a few
//! lines from the standard's definition and no maintained Rust crate offers
//! them with the concealment the relay needs.

use crate::abi::{self, CodecDesc, PluginTable, StaticCodecs, StaticTable};
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

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

/// Samples of decoded signal kept for concealment (60 ms).
const HISTORY: usize = 480;

/// One G.711 state: the law, and the last decoded samples for concealment.
struct State {
    alaw: bool,
    history: [i16; HISTORY],
    len: usize,
    /// Concealed samples since the last good frame.
    concealed: usize,
    pos: usize,
}

static CODECS: StaticCodecs<2> = StaticCodecs([
    CodecDesc {
        name: c"PCMU".as_ptr(),
        clock_rate: 8000,
        channels: 1,
        frame_samples: 80,
        max_frame_bytes: 960,
        static_pt: 0,
        fmtp: std::ptr::null(),
    },
    CodecDesc {
        name: c"PCMA".as_ptr(),
        clock_rate: 8000,
        channels: 1,
        frame_samples: 80,
        max_frame_bytes: 960,
        static_pt: 8,
        fmtp: std::ptr::null(),
    },
]);

/// The in-tree plugin's table.
pub static TABLE: StaticTable = StaticTable(PluginTable {
    abi_version: abi::ABI_VERSION,
    struct_size: std::mem::size_of::<PluginTable>() as u32,
    plugin_name: c"g711 (in-tree)".as_ptr(),
    plugin_version: c"1.0.0".as_ptr(),
    n_codecs: 2,
    codecs: &CODECS.0 as *const [CodecDesc; 2] as *const CodecDesc,
    create: Some(create),
    decode: Some(decode),
    encode: Some(encode),
    conceal: Some(conceal),
    destroy: Some(destroy),
});

fn guarded(f: impl FnOnce() -> i32) -> i32 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(abi::ERR_INTERNAL)
}

unsafe extern "C" fn create(codec: u32, _fmtp: *const c_char, error: *mut i32) -> *mut c_void {
    if codec > 1 {
        if !error.is_null() {
            // SAFETY: the caller passes a writable word or null.
            unsafe { *error = abi::ERR_INVALID };
        }
        return std::ptr::null_mut();
    }
    let s = Box::new(State { alaw: codec == 1, history: [0; HISTORY], len: 0, concealed: 0, pos: 0 });
    Box::into_raw(s) as *mut c_void
}

unsafe extern "C" fn decode(state: *mut c_void, input: *const u8, in_len: usize, pcm: *mut i16, cap: usize) -> i32 {
    guarded(|| {
        if state.is_null() || (in_len > 0 && (input.is_null() || pcm.is_null())) {
            return abi::ERR_INVALID;
        }
        if cap < in_len {
            return abi::ERR_SPACE;
        }
        // SAFETY: a state made by `create`, used by one thread at a time.
        let s = unsafe { &mut *(state as *mut State) };
        // SAFETY: the caller passes in_len readable bytes and cap writable samples.
        let (inp, out) =
            unsafe { (std::slice::from_raw_parts(input, in_len), std::slice::from_raw_parts_mut(pcm, in_len)) };
        for (o, &c) in out.iter_mut().zip(inp) {
            *o = if s.alaw { alaw_decode(c) } else { ulaw_decode(c) };
        }
        let keep = in_len.min(HISTORY);
        s.history[..keep].copy_from_slice(&out[in_len - keep..]);
        s.len = keep;
        s.concealed = 0;
        s.pos = 0;
        in_len as i32
    })
}

unsafe extern "C" fn encode(state: *mut c_void, pcm: *const i16, samples: usize, out: *mut u8, cap: usize) -> i32 {
    guarded(|| {
        if state.is_null() || (samples > 0 && (pcm.is_null() || out.is_null())) {
            return abi::ERR_INVALID;
        }
        if cap < samples {
            return abi::ERR_SPACE;
        }
        // SAFETY: as in decode.
        let s = unsafe { &*(state as *const State) };
        // SAFETY: the caller passes `samples` readable samples and cap writable bytes.
        let (inp, o) =
            unsafe { (std::slice::from_raw_parts(pcm, samples), std::slice::from_raw_parts_mut(out, samples)) };
        for (b, &x) in o.iter_mut().zip(inp) {
            *b = if s.alaw { alaw_encode(x) } else { ulaw_encode(x) };
        }
        samples as i32
    })
}

/// Concealment: the last decoded pitch-length-free waveform repeated, faded
/// linearly to silence over 60 ms of loss (a simple form of G.711 Appendix I's
/// waveform substitution).
unsafe extern "C" fn conceal(state: *mut c_void, pcm: *mut i16, samples: usize) -> i32 {
    guarded(|| {
        if state.is_null() || (samples > 0 && pcm.is_null()) {
            return abi::ERR_INVALID;
        }
        // SAFETY: as in decode.
        let s = unsafe { &mut *(state as *mut State) };
        // SAFETY: the caller passes `samples` writable samples.
        let out = unsafe { std::slice::from_raw_parts_mut(pcm, samples) };
        for o in out.iter_mut() {
            let left = HISTORY.saturating_sub(s.concealed) as i32;
            *o = if s.len == 0 || left == 0 {
                0
            } else {
                let v = s.history[s.pos % s.len] as i32 * left / HISTORY as i32;
                s.pos += 1;
                v as i16
            };
            s.concealed += 1;
        }
        samples as i32
    })
}

unsafe extern "C" fn destroy(state: *mut c_void) {
    if !state.is_null() {
        // SAFETY: made by Box::into_raw in `create`, destroyed once.
        drop(unsafe { Box::from_raw(state as *mut State) });
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
