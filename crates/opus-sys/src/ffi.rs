//! libopus's public C API, as far as srtpgate calls it (`opus.h`,
//! `opus_defines.h`): encoders and decoders, their controls, packet
//! inspection. Written out here rather than generated: the Opus plugin uses
//! a dozen entry points of an API that libopus keeps stable, and bindgen
//! would make every build need libclang.
use std::ffi::{c_char, c_int, c_uchar};

/// An encoder's state (opaque; `opus_encoder_create` allocates it).
#[repr(C)]
pub struct OpusEncoder {
    _opaque: [u8; 0],
}

/// A decoder's state (opaque; `opus_decoder_create` allocates it).
#[repr(C)]
pub struct OpusDecoder {
    _opaque: [u8; 0],
}

pub const OPUS_OK: c_int = 0;
pub const OPUS_BAD_ARG: c_int = -1;
pub const OPUS_BUFFER_TOO_SMALL: c_int = -2;
pub const OPUS_INTERNAL_ERROR: c_int = -3;
pub const OPUS_INVALID_PACKET: c_int = -4;

pub const OPUS_APPLICATION_VOIP: c_int = 2048;
pub const OPUS_SIGNAL_VOICE: c_int = 3001;

pub const OPUS_SET_BITRATE_REQUEST: c_int = 4002;
pub const OPUS_SET_COMPLEXITY_REQUEST: c_int = 4010;
pub const OPUS_GET_COMPLEXITY_REQUEST: c_int = 4011;
pub const OPUS_SET_INBAND_FEC_REQUEST: c_int = 4012;
pub const OPUS_SET_PACKET_LOSS_PERC_REQUEST: c_int = 4014;
pub const OPUS_SET_DTX_REQUEST: c_int = 4016;
pub const OPUS_SET_SIGNAL_REQUEST: c_int = 4024;

extern "C" {
    pub fn opus_get_version_string() -> *const c_char;

    pub fn opus_encoder_create(fs: i32, channels: c_int, application: c_int, error: *mut c_int) -> *mut OpusEncoder;
    pub fn opus_encode(
        st: *mut OpusEncoder,
        pcm: *const i16,
        frame_size: c_int,
        data: *mut c_uchar,
        max_data_bytes: i32,
    ) -> i32;
    pub fn opus_encoder_ctl(st: *mut OpusEncoder, request: c_int, ...) -> c_int;
    pub fn opus_encoder_destroy(st: *mut OpusEncoder);

    pub fn opus_decoder_create(fs: i32, channels: c_int, error: *mut c_int) -> *mut OpusDecoder;
    pub fn opus_decode(
        st: *mut OpusDecoder,
        data: *const c_uchar,
        len: i32,
        pcm: *mut i16,
        frame_size: c_int,
        decode_fec: c_int,
    ) -> c_int;
    pub fn opus_decoder_ctl(st: *mut OpusDecoder, request: c_int, ...) -> c_int;
    pub fn opus_decoder_destroy(st: *mut OpusDecoder);

    pub fn opus_packet_get_nb_samples(packet: *const c_uchar, len: i32, fs: i32) -> c_int;
    pub fn opus_packet_get_samples_per_frame(data: *const c_uchar, fs: i32) -> c_int;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_libopus_1_6_1() {
        // SAFETY: libopus returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(opus_get_version_string()) };
        assert_eq!(v.to_str().unwrap(), "libopus 1.6.1");
    }

    #[test]
    fn a_voice_frame_goes_through_the_codec() {
        let mut err = 0;
        // SAFETY: the states are created, used and destroyed here; the
        // buffers are as long as the lengths passed.
        unsafe {
            let enc = opus_encoder_create(16000, 1, OPUS_APPLICATION_VOIP, &mut err);
            assert_eq!(err, OPUS_OK);
            let dec = opus_decoder_create(16000, 1, &mut err);
            assert_eq!(err, OPUS_OK);
            assert_eq!(opus_encoder_ctl(enc, OPUS_SET_COMPLEXITY_REQUEST, 9 as c_int), OPUS_OK);
            let mut complexity: c_int = 0;
            assert_eq!(opus_encoder_ctl(enc, OPUS_GET_COMPLEXITY_REQUEST, &mut complexity as *mut c_int), OPUS_OK);
            assert_eq!(complexity, 9);
            let pcm: Vec<i16> = (0..320).map(|i| ((i as f32 * 0.1).sin() * 8000.0) as i16).collect();
            let mut packet = [0u8; 400];
            let mut out = [0i16; 320];
            let mut energy = 0f64;
            for _ in 0..10 {
                let n = opus_encode(enc, pcm.as_ptr(), 320, packet.as_mut_ptr(), packet.len() as i32);
                assert!(n > 0, "opus_encode: {n}");
                assert_eq!(opus_packet_get_nb_samples(packet.as_ptr(), n, 16000), 320);
                let m = opus_decode(dec, packet.as_ptr(), n, out.as_mut_ptr(), 320, 0);
                assert_eq!(m, 320);
                energy = out.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
            }
            assert!(energy > 1e8, "decoded audio is near silence: {energy}");
            opus_encoder_destroy(enc);
            opus_decoder_destroy(dec);
        }
    }
}
