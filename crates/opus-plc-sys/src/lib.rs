//! libopus's neural packet loss concealment for 16 kHz speech that was not
//! decoded by Opus (G.722 here): the LPCNet PLC model predicts the lost
//! frames' features from the history and the FARGAN vocoder synthesises
//! them, continuing the waveform. Built from the libopus 1.6.1 sources in
//! `opus/` (BSD-3-Clause, `opus/COPYING`), weights compiled in.
//!
//! Why libopus's code and not a crate: no Rust crate offers a speech
//! concealment of this kind; libopus runs the same model inside its SILK
//! decoder, but only on what it decoded itself, so its private PLC entry
//! points (`lpcnet_plc_*`) are called here through a small C shim.
//!
//! Cost (measured on the development machine): keeping the history is a
//! copy of each 10 ms frame; the first 10 ms of a loss run the analysis of
//! the buffered history (~0.5 ms), each further 10 ms ~60 µs. The state is
//! ~68 kB, allocated once.
//!
//! [`stream::Stream`] is the part the codecs share: a stream's audio on the
//! model's grid, losses of any length, the cross-fade after a loss and a
//! budget of neural losses.

use std::ffi::c_void;

pub mod stream;

/// Samples in one frame: 10 ms at 16 kHz.
pub const FRAME: usize = 160;

extern "C" {
    fn srtpgate_dplc_new() -> *mut c_void;
    fn srtpgate_dplc_free(s: *mut c_void);
    fn srtpgate_dplc_update(s: *mut c_void, pcm: *mut i16);
    fn srtpgate_dplc_conceal(s: *mut c_void, pcm: *mut i16);
    fn srtpgate_dplc_copy(dst: *mut c_void, src: *const c_void);
    fn srtpgate_dplc_size() -> usize;
    fn srtpgate_dplc_frame() -> i32;
}

/// One stream's concealer.
pub struct NeuralPlc {
    s: *mut c_void,
}

// SAFETY: the state is plain memory owned by this value; libopus keeps no
// thread-local or global mutable state for it.
unsafe impl Send for NeuralPlc {}

impl NeuralPlc {
    /// A concealer with an empty history, or None when the memory cannot be
    /// had (or the library's frame is not [`FRAME`]).
    pub fn new() -> Option<NeuralPlc> {
        // SAFETY: a constant; the frame this wrapper's arrays are sized for.
        if unsafe { srtpgate_dplc_frame() } != FRAME as i32 {
            return None;
        }
        // SAFETY: returns a fresh state or null.
        let s = unsafe { srtpgate_dplc_new() };
        (!s.is_null()).then_some(NeuralPlc { s })
    }

    /// Bytes of one state.
    pub fn state_size() -> usize {
        // SAFETY: a constant.
        unsafe { srtpgate_dplc_size() }
    }

    /// Takes one received (decoded) frame into the history.
    pub fn update(&mut self, frame: &[i16; FRAME]) {
        let mut f = *frame;
        // SAFETY: a live state and FRAME samples (libopus only reads them).
        unsafe { srtpgate_dplc_update(self.s, f.as_mut_ptr()) }
    }

    /// Writes one frame of concealment, continuing the history (which then
    /// holds it, so that the next call continues from it).
    pub fn conceal(&mut self, out: &mut [i16; FRAME]) {
        // SAFETY: a live state and room for FRAME samples.
        unsafe { srtpgate_dplc_conceal(self.s, out.as_mut_ptr()) }
    }

    /// Makes this state a copy of `other` (to look ahead without changing
    /// `other`).
    pub fn copy_from(&mut self, other: &NeuralPlc) {
        // SAFETY: two live states of the same size.
        unsafe { srtpgate_dplc_copy(self.s, other.s) }
    }
}

impl Drop for NeuralPlc {
    fn drop(&mut self) {
        // SAFETY: made by srtpgate_dplc_new, freed once.
        unsafe { srtpgate_dplc_free(self.s) }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn voiced(n: usize, from: usize) -> Vec<i16> {
        // A 140 Hz vowel-like tone with harmonics, at 16 kHz.
        (from..from + n)
            .map(|i| {
                let t = i as f64 / 16000.0;
                let x: f64 = (1..8).map(|h| (2.0 * std::f64::consts::PI * 140.0 * h as f64 * t).sin() / h as f64).sum();
                (5000.0 * x) as i16
            })
            .collect()
    }

    fn rms(x: &[i16]) -> f64 {
        (x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
    }

    #[test]
    fn a_lost_frame_of_voice_is_continued_at_its_level_and_a_copy_repeats_it() {
        let mut p = NeuralPlc::new().expect("state");
        assert!(NeuralPlc::state_size() > 10_000);
        let x = voiced(FRAME * 40, 0);
        for f in x.chunks(FRAME) {
            p.update(f.try_into().unwrap());
        }
        let mut look = NeuralPlc::new().unwrap();
        look.copy_from(&p);
        let (mut a, mut b) = ([0i16; FRAME], [0i16; FRAME]);
        p.conceal(&mut a);
        look.conceal(&mut b);
        // The copy conceals exactly as the original.
        assert_eq!(a, b);
        // Voice continues, near the history's level (not silence, not a burst).
        let (r, h) = (rms(&a), rms(&x[x.len() - FRAME..]));
        assert!(r > 0.3 * h && r < 2.0 * h, "concealment rms {r:.0} against {h:.0}");
        // Its first samples join the last received one without a jump.
        let last = *x.last().unwrap() as i32;
        assert!((a[0] as i32 - last).abs() < 3000, "{} after {last}", a[0]);
    }
}
