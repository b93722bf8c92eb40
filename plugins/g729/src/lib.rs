//! A codec plugin on bcg729 (Debian `libbcg729-0`, GPL-3.0-or-later, linked
//! dynamically): G.729 Annex A, with Annex B (voice activity detection,
//! discontinuous transmission, comfort noise) negotiated by fmtp.
//!
//! This plugin is GPL because bcg729 is. The relay (Apache-2.0 OR MIT)
//! neither links nor needs it: it is a separate shared library that an
//! operator puts in `--codec-plugin-dir` or leaves out.
//!
//! - **Decoding**: a payload is N 10-byte frames, optionally followed by one
//!   2-byte SID frame (RFC 3551 §4.5.6); a SID frame makes comfort noise.
//!   Anything else is refused. Concealment is bcg729's frame erasure.
//! - **Encoding**: Annex B (VAD/DTX) is on unless the receiver's fmtp says
//!   `annexb=no` (RFC 7261: absent means yes). With it on, silent frames
//!   become a SID frame at the end of the packet or are not sent; a packet
//!   with nothing to send is an empty payload, which the relay does not
//!   send. With `annexb=no` every frame is a voice frame.
//!
//! FFI declared by hand from `<bcg729/encoder.h>` and `<decoder.h>`: six
//! functions, no maintained binding on crates.io.

use srtpgate_codec::abi::{self, CodecDesc, PluginTable, StaticCodecs};
use srtpgate_codec::kit::{Codec, Setup};

/// bcg729's functions (also used by the benchmark that calls it directly).
#[allow(non_snake_case, missing_docs)]
pub mod ffi {
    /// Opaque encoder context.
    #[repr(C)]
    pub struct EncoderCtx {
        _p: [u8; 0],
    }
    /// Opaque decoder context.
    #[repr(C)]
    pub struct DecoderCtx {
        _p: [u8; 0],
    }

    #[link(name = "bcg729")]
    extern "C" {
        pub fn initBcg729EncoderChannel(enable_vad: u8) -> *mut EncoderCtx;
        pub fn closeBcg729EncoderChannel(ctx: *mut EncoderCtx);
        pub fn bcg729Encoder(ctx: *mut EncoderCtx, input: *const i16, bits: *mut u8, len: *mut u8);
        pub fn initBcg729DecoderChannel() -> *mut DecoderCtx;
        pub fn closeBcg729DecoderChannel(ctx: *mut DecoderCtx);
        pub fn bcg729Decoder(
            ctx: *mut DecoderCtx,
            bits: *const u8,
            len: u8,
            erasure: u8,
            sid: u8,
            rfc3389: u8,
            out: *mut i16,
        );
    }
}
use ffi::*;

/// Samples of a frame (10 ms).
const FRAME: usize = 80;
/// Bytes of a voice frame.
const VOICE: usize = 10;
/// Bytes of a SID frame.
const SID: usize = 2;

static CODECS: StaticCodecs<1> = StaticCodecs([CodecDesc {
    name: c"G729".as_ptr(),
    clock_rate: 8000,
    channels: 1,
    pcm_channels: 1,
    pcm_rate: 8000,
    pcm_rates: 0,
    frame_samples: FRAME as u32,
    max_frame_bytes: 20 * VOICE as u32,
    static_pt: 18,
    fmtp: std::ptr::null(),
    flags: 0,
}]);

srtpgate_codec::plugin_table!(static TABLE: c"g729 (bcg729)", c"2.0.0", CODECS, make);

/// The plugin's entry point.
#[no_mangle]
pub extern "C" fn srtpgate_codec_plugin_v2() -> *const PluginTable {
    &TABLE.0
}

struct G729 {
    enc: *mut EncoderCtx,
    dec: *mut DecoderCtx,
}

// SAFETY: bcg729 contexts are plain memory owned by this value, used by the
// thread that holds it.
unsafe impl Send for G729 {}

/// Whether an fmtp leaves Annex B on (RFC 7261: absent means yes).
pub fn annexb(fmtp: Option<&str>) -> bool {
    let s = Setup { codec: 0, fmtp, pcm_rate: 8000, uses: abi::USE_ENCODE };
    !s.fmtp_param("annexb").is_some_and(|v| v.eq_ignore_ascii_case("no"))
}

fn make(s: &Setup<'_>) -> Result<Box<dyn Codec>, i32> {
    if s.codec != 0 || s.pcm_rate != 8000 {
        return Err(abi::ERR_INVALID);
    }
    let mut g = G729 { enc: std::ptr::null_mut(), dec: std::ptr::null_mut() };
    // SAFETY: bcg729 allocates each context; null is checked, Drop frees.
    unsafe {
        if s.encodes() {
            g.enc = initBcg729EncoderChannel(annexb(s.fmtp) as u8);
        }
        if s.decodes() {
            g.dec = initBcg729DecoderChannel();
        }
    }
    if (s.encodes() && g.enc.is_null()) || (s.decodes() && g.dec.is_null()) {
        return Err(abi::ERR_INTERNAL);
    }
    Ok(Box::new(g))
}

impl Codec for G729 {
    fn decode(&mut self, input: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        if self.dec.is_null() || input.is_empty() {
            return Err(abi::ERR_INVALID);
        }
        let (voice, rest) = (input.len() / VOICE, input.len() % VOICE);
        if rest != 0 && rest != SID {
            return Err(abi::ERR_INVALID);
        }
        let frames = voice + (rest == SID) as usize;
        if frames * FRAME > pcm.len() {
            return Err(abi::ERR_SPACE);
        }
        for (k, out) in pcm.chunks_exact_mut(FRAME).take(frames).enumerate() {
            let sid = k == voice;
            let (at, len) = (k * VOICE, if sid { SID } else { VOICE });
            // SAFETY: a live context; `len` bytes of input and 80 samples of output.
            unsafe { bcg729Decoder(self.dec, input[at..].as_ptr(), len as u8, 0, sid as u8, 0, out.as_mut_ptr()) };
        }
        Ok(frames * FRAME)
    }

    fn encode(&mut self, pcm: &[i16], out: &mut [u8]) -> Result<usize, i32> {
        if self.enc.is_null() || !pcm.len().is_multiple_of(FRAME) {
            return Err(abi::ERR_INVALID);
        }
        if pcm.len() / FRAME * VOICE > out.len() {
            return Err(abi::ERR_SPACE);
        }
        let mut n = 0;
        let mut sid = false;
        for f in pcm.chunks_exact(FRAME) {
            let mut bits = [0u8; VOICE];
            let mut len = 0u8;
            // SAFETY: a live context; 80 samples in, at most 10 bytes out.
            unsafe { bcg729Encoder(self.enc, f.as_ptr(), bits.as_mut_ptr(), &mut len) };
            let len = len as usize;
            if len == VOICE && sid {
                // A SID frame ends a packet (RFC 3551 §4.5.6): voice after
                // one replaces it.
                n -= SID;
                sid = false;
            }
            if len == VOICE || (len == SID && !sid) {
                out[n..n + len].copy_from_slice(&bits[..len]);
                n += len;
                sid = len == SID;
            }
        }
        Ok(n)
    }

    /// bcg729's frame erasure concealment, a frame at a time; what is not a
    /// whole frame at the end is left to the host (silence).
    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32> {
        if self.dec.is_null() {
            return Err(abi::ERR_INVALID);
        }
        let mut n = 0;
        for out in pcm.chunks_exact_mut(FRAME) {
            // SAFETY: a live context; no input is read for an erased frame.
            unsafe { bcg729Decoder(self.dec, std::ptr::null(), 0, 1, 0, 0, out.as_mut_ptr()) };
            n += FRAME;
        }
        Ok(n)
    }
}

impl Drop for G729 {
    fn drop(&mut self) {
        // SAFETY: contexts made by make(), closed once (null ones skipped).
        unsafe {
            if !self.enc.is_null() {
                closeBcg729EncoderChannel(self.enc);
            }
            if !self.dec.is_null() {
                closeBcg729DecoderChannel(self.dec);
            }
        }
    }
}
