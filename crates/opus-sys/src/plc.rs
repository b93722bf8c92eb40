//! libopus's neural packet loss concealment for 16 kHz speech that was not
//! decoded by Opus (G.722 here): the LPCNet PLC model predicts the lost
//! frames' features from the history and the FARGAN vocoder synthesises
//! them, continuing the waveform: the model libopus's own SILK decoder
//! conceals with, from this crate's libopus build, weights compiled in.
//!
//! Why libopus's code and not a crate: no Rust crate offers a speech
//! concealment of this kind; libopus runs the same model inside its SILK
//! decoder, but only on what it decoded itself, so its private PLC entry
//! points (`lpcnet_plc_*`) are called here through a small C shim.
//!
//! Cost (measured on the development machine): keeping the history is a
//! copy of each 10 ms frame; the first 10 ms of a loss run the analysis of
//! the buffered history (~0.5 ms), each further 10 ms ~60 µs; looking ahead
//! at the packet after a loss ([`stream::Stream::preview`]) adds ~1 ms to
//! the loss. The state is ~68 kB, allocated once.
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
    fn srtpgate_dplc_begin(s: *mut c_void);
    fn srtpgate_dplc_copy(dst: *mut c_void, src: *const c_void);
    fn srtpgate_dplc_size() -> usize;
    fn srtpgate_dplc_frame() -> i32;
    fn srtpgate_dplc_fec_add(s: *mut c_void, features: *const f32);
    fn srtpgate_dplc_fec_clear(s: *mut c_void);
    fn srtpgate_dplc_features(s: *const c_void, out: *mut f32);
    fn srtpgate_dplc_analyse(s: *mut c_void, pcm: *const i16, out: *mut f32);
    fn srtpgate_dplc_nb_features() -> i32;
    fn srtpgate_dplc_analysis_reset(s: *mut c_void);
    fn srtpgate_dplc_starts(s: *const c_void) -> i32;
    fn srtpgate_dplc_lost_frames(s: *const c_void) -> i32;
    fn srtpgate_dplc_set_lost_frames(s: *mut c_void, n: i32);
}

/// Features of one 10 ms frame as the model sees it (libopus's
/// NB_FEATURES: 18 cepstral coefficients, then the pitch and the pitch
/// correlation).
pub const FEATURES: usize = 20;
/// Where the pitch is among the features ...
pub const PITCH: usize = 18;
/// ... and the pitch correlation (voicing).
pub const VOICING: usize = 19;

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
        if unsafe { srtpgate_dplc_frame() } != FRAME as i32 || unsafe { srtpgate_dplc_nb_features() } != FEATURES as i32
        {
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

    /// Runs now the analysis of the history that the next
    /// [`NeuralPlc::conceal`] would start a loss with (where it starts one):
    /// that conceal then makes the same samples, and a copy taken after
    /// this (to look ahead) does not repeat the analysis. Frames received
    /// in between continue the analysed history.
    pub fn begin(&mut self) {
        // SAFETY: a live state.
        unsafe { srtpgate_dplc_begin(self.s) }
    }

    /// Features for the next frame the model would otherwise predict (in
    /// the order it predicts them). None lets it predict one frame, but
    /// holds no place: every None counts before any features given are
    /// used, so Nones go first. The model runs two frames ahead of the
    /// audio: the first concealed frame of a loss is made from the third
    /// features it predicts (the first two continue the history; see
    /// [`NeuralPlc::starts`]), each later one from one more.
    pub fn fec_add(&mut self, features: Option<&[f32; FEATURES]>) {
        let p = features.map_or(std::ptr::null(), |f| f.as_ptr());
        // SAFETY: a live state; `p` null or FEATURES floats (copied).
        unsafe { srtpgate_dplc_fec_add(self.s, p) }
    }

    /// The features the last concealed frame was made from (what the model
    /// predicted or was given, 2 frames ahead of the audio).
    pub fn features(&self) -> [f32; FEATURES] {
        let mut out = [0f32; FEATURES];
        // SAFETY: a live state, FEATURES floats out.
        unsafe { srtpgate_dplc_features(self.s, out.as_mut_ptr()) };
        out
    }

    /// Runs one more frame through the state's feature analysis (where a
    /// loss's start left it: after the history) and answers its features.
    /// For a copy that looks ahead: the analysis then no longer follows the
    /// history.
    pub fn analyse(&mut self, frame: &[i16; FRAME]) -> [f32; FEATURES] {
        let mut out = [0f32; FEATURES];
        // SAFETY: a live state, FRAME samples in, FEATURES floats out.
        unsafe { srtpgate_dplc_analyse(self.s, frame.as_ptr(), out.as_mut_ptr()) };
        out
    }

    /// Whether the next [`NeuralPlc::conceal`] starts a loss for the model
    /// (audio was given since the last one): it then predicts two more
    /// features before the first frame it makes.
    pub fn starts(&self) -> bool {
        // SAFETY: a live state.
        unsafe { srtpgate_dplc_starts(self.s) != 0 }
    }

    /// The model's count of lost frames in the current loss (its fade
    /// follows it; frames made from given features count too).
    pub fn lost_frames(&self) -> u32 {
        // SAFETY: a live state.
        unsafe { srtpgate_dplc_lost_frames(self.s) }.max(0) as u32
    }

    /// Sets the model's count of lost frames (0: the next concealed frame is
    /// made at full level).
    pub fn set_lost_frames(&mut self, n: u32) {
        // SAFETY: a live state.
        unsafe { srtpgate_dplc_set_lost_frames(self.s, n.min(1000) as i32) }
    }

    /// Starts the state's feature analysis afresh.
    pub fn analysis_reset(&mut self) {
        // SAFETY: a live state.
        unsafe { srtpgate_dplc_analysis_reset(self.s) }
    }

    /// Forgets features given and not used.
    pub fn fec_clear(&mut self) {
        // SAFETY: a live state.
        unsafe { srtpgate_dplc_fec_clear(self.s) }
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

    #[test]
    fn begin_runs_a_loss_s_analysis_early_and_changes_no_sample() {
        // Two states with the same history; one runs the analysis before
        // each loss (twice: a second begin does nothing), the other leaves
        // it to conceal. Every concealed sample is the same: after a long
        // history (the analysis starts with a gap), after a short one, and
        // with features given after begin (as the look-ahead gives them).
        let (mut p, mut q) = (NeuralPlc::new().expect("state"), NeuralPlc::new().expect("state"));
        let x = voiced(FRAME * 60, 0);
        let feed = |p: &mut NeuralPlc, q: &mut NeuralPlc, from: usize, to: usize| {
            for f in x[from * FRAME..to * FRAME].chunks(FRAME) {
                p.update(f.try_into().unwrap());
                q.update(f.try_into().unwrap());
            }
        };
        let lose = |p: &mut NeuralPlc, q: &mut NeuralPlc, frames: usize, given: Option<[f32; FEATURES]>| {
            q.begin();
            q.begin();
            assert!(q.starts(), "begin does not start the loss");
            if let Some(g) = given {
                for s in [&mut *p, &mut *q] {
                    s.fec_add(None);
                    s.fec_add(Some(&g));
                }
            }
            for _ in 0..frames {
                let (mut a, mut b) = ([0i16; FRAME], [0i16; FRAME]);
                p.conceal(&mut a);
                q.conceal(&mut b);
                assert_eq!(a, b);
                assert!(rms(&a) > 100.0, "voice is concealed");
            }
            assert_eq!(p.features(), q.features());
        };
        feed(&mut p, &mut q, 0, 40);
        lose(&mut p, &mut q, 3, None);
        feed(&mut p, &mut q, 43, 48);
        lose(&mut p, &mut q, 2, None);
        feed(&mut p, &mut q, 50, 55);
        let mut g = p.features();
        g[PITCH] += 0.1;
        lose(&mut p, &mut q, 2, Some(g));
        // And the states go on alike after the losses.
        feed(&mut p, &mut q, 57, 60);
        let (mut a, mut b) = ([0i16; FRAME], [0i16; FRAME]);
        p.conceal(&mut a);
        q.conceal(&mut b);
        assert_eq!(a, b);
    }
}
