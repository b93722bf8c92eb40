//! FFI declarations for the parts of spandsp 0.0.6 (Debian
//! `libspandsp-dev`, LGPL-2.1, linked dynamically) that srtpgate uses.
//!
//! Written here rather than taken from crates.io: no maintained binding of
//! spandsp exists there, and the few functions needed are declared by hand
//! from `<spandsp/g722.h>`, `<g726.h>`, `<plc.h>` and `<dtmf.h>` (bindgen
//! would pull in libtiff's headers through `spandsp.h`). Every state is
//! opaque and allocated by spandsp (`*_init(NULL, …)`), freed with `*_free`.
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

/// Opaque G.722 encoder state.
#[repr(C)]
pub struct g722_encode_state_t {
    _p: [u8; 0],
}
/// Opaque G.722 decoder state.
#[repr(C)]
pub struct g722_decode_state_t {
    _p: [u8; 0],
}
/// Opaque G.726 state (one direction).
#[repr(C)]
pub struct g726_state_t {
    _p: [u8; 0],
}
/// Opaque packet loss concealer (G.711 Appendix I style, 8 kHz).
#[repr(C)]
pub struct plc_state_t {
    _p: [u8; 0],
}
/// Opaque DTMF receiver.
#[repr(C)]
pub struct dtmf_rx_state_t {
    _p: [u8; 0],
}

/// `g722_*_init` option: PCM at 8 kHz (the lower sub-band only).
pub const G722_SAMPLE_RATE_8000: c_int = 0x0001;
/// `g722_*_init` option: packed codewords (not used by RTP).
pub const G722_PACKED: c_int = 0x0002;

/// G.726 interworking with 16-bit linear PCM.
pub const G726_ENCODING_LINEAR: c_int = 0;
/// G.726 codewords packed MSB first (ITU-T I.366.2 / AAL2).
pub const G726_PACKING_LEFT: c_int = 1;
/// G.726 codewords packed LSB first (RFC 3551 §4.5.4, RTP's `G726-xx`).
pub const G726_PACKING_RIGHT: c_int = 2;

/// Digits callback of `dtmf_rx_init` (unused: digits are polled).
pub type digits_rx_callback_t = Option<unsafe extern "C" fn(user: *mut c_void, digits: *const c_char, len: c_int)>;
/// Real-time callback: `code` is the digit's ASCII value on start, 0 on end.
pub type tone_report_func_t = Option<unsafe extern "C" fn(user: *mut c_void, code: c_int, level: c_int, delay: c_int)>;

extern "C" {
    pub fn g722_encode_init(s: *mut g722_encode_state_t, rate: c_int, options: c_int) -> *mut g722_encode_state_t;
    pub fn g722_encode_free(s: *mut g722_encode_state_t) -> c_int;
    pub fn g722_encode(s: *mut g722_encode_state_t, g722_data: *mut u8, amp: *const i16, len: c_int) -> c_int;
    pub fn g722_decode_init(s: *mut g722_decode_state_t, rate: c_int, options: c_int) -> *mut g722_decode_state_t;
    pub fn g722_decode_free(s: *mut g722_decode_state_t) -> c_int;
    pub fn g722_decode(s: *mut g722_decode_state_t, amp: *mut i16, g722_data: *const u8, len: c_int) -> c_int;

    pub fn g726_init(s: *mut g726_state_t, bit_rate: c_int, ext_coding: c_int, packing: c_int) -> *mut g726_state_t;
    pub fn g726_free(s: *mut g726_state_t) -> c_int;
    pub fn g726_decode(s: *mut g726_state_t, amp: *mut i16, g726_data: *const u8, g726_bytes: c_int) -> c_int;
    pub fn g726_encode(s: *mut g726_state_t, g726_data: *mut u8, amp: *const i16, len: c_int) -> c_int;

    pub fn plc_init(s: *mut plc_state_t) -> *mut plc_state_t;
    pub fn plc_free(s: *mut plc_state_t) -> c_int;
    pub fn plc_rx(s: *mut plc_state_t, amp: *mut i16, len: c_int) -> c_int;
    pub fn plc_fillin(s: *mut plc_state_t, amp: *mut i16, len: c_int) -> c_int;

    pub fn dtmf_rx_init(
        s: *mut dtmf_rx_state_t,
        callback: digits_rx_callback_t,
        user_data: *mut c_void,
    ) -> *mut dtmf_rx_state_t;
    pub fn dtmf_rx_free(s: *mut dtmf_rx_state_t) -> c_int;
    pub fn dtmf_rx_set_realtime_callback(s: *mut dtmf_rx_state_t, callback: tone_report_func_t, user_data: *mut c_void);
    pub fn dtmf_rx_parms(
        s: *mut dtmf_rx_state_t,
        filter_dialtone: c_int,
        twist: c_int,
        reverse_twist: c_int,
        threshold: c_int,
    );
    pub fn dtmf_rx(s: *mut dtmf_rx_state_t, amp: *const i16, samples: c_int) -> c_int;
    pub fn dtmf_rx_fillin(s: *mut dtmf_rx_state_t, samples: c_int) -> c_int;
    pub fn dtmf_rx_status(s: *mut dtmf_rx_state_t) -> c_int;
    pub fn dtmf_rx_get(s: *mut dtmf_rx_state_t, digits: *mut c_char, max: c_int) -> usize;
}

// Ours, in g722_state.c (compiled by build.rs against spandsp's private
// header, so that they match the installed library's layout).
extern "C" {
    /// Makes `dst` a copy of `src`.
    pub fn srtpgate_g722_decode_copy(dst: *mut g722_decode_state_t, src: *const g722_decode_state_t);
    /// Sets the encoder's sub-band ADPCM state from the decoder's and its QMF
    /// history from `hist` (the 24 samples of 16 kHz audio before what it
    /// encodes next, oldest first).
    pub fn srtpgate_g722_encode_from_decode(
        e: *mut g722_encode_state_t,
        d: *const g722_decode_state_t,
        hist: *const i16,
    );
    /// Makes `dst` a copy of `src`.
    pub fn srtpgate_g722_encode_copy(dst: *mut g722_encode_state_t, src: *const g722_encode_state_t);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g722_round_trip_keeps_a_tone() {
        // SAFETY: states made and freed here; buffers sized for the calls.
        unsafe {
            let e = g722_encode_init(std::ptr::null_mut(), 64000, 0);
            let d = g722_decode_init(std::ptr::null_mut(), 64000, 0);
            assert!(!e.is_null() && !d.is_null());
            let pcm: Vec<i16> = (0..3200)
                .map(|i| (8000.0 * (i as f64 * 2.0 * std::f64::consts::PI * 1000.0 / 16000.0).sin()) as i16)
                .collect();
            let mut wire = vec![0u8; 1600];
            assert_eq!(
                g722_encode(e, wire.as_mut_ptr(), pcm.as_ptr(), 3200),
                1600,
                "64 kbit/s: a byte per two samples"
            );
            let mut back = vec![0i16; 3200];
            assert_eq!(g722_decode(d, back.as_mut_ptr(), wire.as_ptr(), 1600), 3200);
            let energy = |x: &[i16]| x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / x.len() as f64;
            let (a, b) = (energy(&pcm[1600..]), energy(&back[1600..]));
            assert!((b / a - 1.0).abs() < 0.2, "energy {a} → {b}");
            g722_encode_free(e);
            g722_decode_free(d);
        }
    }

    #[test]
    fn a_decoder_fed_the_lost_audio_through_the_encoder_gets_back_in_step() {
        // Packet 10 of 20 ms is lost. Decoder `skip` just goes on; `sync`
        // has its state re-encoded from the audio of the lost packet (here
        // the true audio, as decoded with nothing lost, aligned by the
        // QMF's 24 samples), as the plugin does with its concealment. What
        // each decodes after the loss is compared with the decoding of the
        // whole stream.
        // SAFETY: states made and freed here; buffers sized for the calls.
        unsafe {
            let n = 320 * 20;
            let pcm: Vec<i16> = (0..n)
                .map(|i| {
                    let t = i as f64 / 16000.0;
                    let f0 = 120.0 + 30.0 * (t * 3.0).sin();
                    let x: f64 =
                        (1..12).map(|h| (2.0 * std::f64::consts::PI * f0 * h as f64 * t).sin() / h as f64).sum();
                    (6000.0 * x * (0.6 + 0.4 * (t * 7.0).sin())) as i16
                })
                .collect();
            let e = g722_encode_init(std::ptr::null_mut(), 64000, 0);
            let mut wire = vec![0u8; n / 2];
            g722_encode(e, wire.as_mut_ptr(), pcm.as_ptr(), n as c_int);
            let (all, skip, sync, scratch) = (
                g722_decode_init(std::ptr::null_mut(), 64000, 0),
                g722_decode_init(std::ptr::null_mut(), 64000, 0),
                g722_decode_init(std::ptr::null_mut(), 64000, 0),
                g722_decode_init(std::ptr::null_mut(), 64000, 0),
            );
            let mut out = [vec![0i16; n], vec![0i16; n], vec![0i16; n]];
            for k in 0..20 {
                let (p, s) = (&wire[k * 160..(k + 1) * 160], k * 320..(k + 1) * 320);
                g722_decode(all, out[0][s.clone()].as_mut_ptr(), p.as_ptr(), 160);
                if k == 10 {
                    continue;
                }
                if k == 11 {
                    // The lost 20 ms, re-encoded from `sync`'s state at the
                    // loss. Analysis and synthesis QMF together delay the
                    // audio by 22 samples, so the encoder is given the
                    // output from 22 samples into the loss to 22 into the
                    // next packet, with the 24 before that as its history.
                    let truth = &out[0][320 * 10 - 2..320 * 11 + 22];
                    srtpgate_g722_encode_from_decode(e, sync, truth.as_ptr());
                    let mut codes = [0u8; 160];
                    g722_encode(e, codes.as_mut_ptr(), truth[24..].as_ptr(), 320);
                    srtpgate_g722_decode_copy(scratch, sync);
                    let mut junk = [0i16; 320];
                    g722_decode(scratch, junk.as_mut_ptr(), codes.as_ptr(), 160);
                    srtpgate_g722_decode_copy(sync, scratch);
                }
                g722_decode(skip, out[1][s.clone()].as_mut_ptr(), p.as_ptr(), 160);
                g722_decode(sync, out[2][s].as_mut_ptr(), p.as_ptr(), 160);
            }
            let err = |x: &[i16]| -> f64 {
                (320 * 11..320 * 15).map(|i| (x[i] as f64 - out[0][i] as f64).powi(2)).sum::<f64>()
            };
            let sig: f64 = (320 * 11..320 * 15).map(|i| (out[0][i] as f64).powi(2)).sum();
            let (e_skip, e_sync) = (err(&out[1]), err(&out[2]));
            let db = |e: f64| 10.0 * (sig / e.max(1.0)).log10();
            assert!(
                db(e_sync) > 40.0 && db(e_skip) < 20.0,
                "80 ms after the loss: SNR {:.1} dB re-synced, {:.1} dB not",
                db(e_sync),
                db(e_skip)
            );
            for s in [all, skip, sync, scratch] {
                g722_decode_free(s);
            }
            g722_encode_free(e);
        }
    }
}
