//! Concealment for G.722 decoded at 16 kHz: libopus's neural PLC (a speech
//! model predicts the lost frames, a vocoder renders them) with the ADPCM
//! decoder put back in step after the loss, or the classic waveform
//! repetition (`srtpgate_codec::plc`).
//!
//! Why the decoder needs putting back in step: G.722 codes each sub-band
//! as the difference from a prediction, with a step size, both adapted
//! from what was decoded so far. After a lost packet the decoder's
//! predictor and step still describe the audio before the loss while the
//! sender's describe the audio at its end, and the next packets decode
//! wrongly for 40–100 ms (measured: 10 dB SNR or less for 60 ms after one
//! lost packet). So the concealment is G.722-encoded from the decoder's
//! state at the loss, as the sender would have encoded it, and those codes
//! are decoded into a shadow of the decoder, which then replaces it when
//! audio comes again. The analysis and synthesis QMF filters delay audio
//! by 22 samples together, so the encoder is given the concealment from 22
//! samples into the loss to 22 samples past it, with the 24 samples before
//! that as its QMF history (with the true lost audio this gets the decoder
//! exactly back in step: `srtpgate-spandsp-sys`'s test).
//!
//! The relay conceals a loss when the packet after it arrives, so the
//! concealment can know where the speech goes: [`Neural::recover`] decodes
//! that packet as it will be decoded (on a copy of the re-sync, from the
//! concealment the model would play) and lets the model make the end of the
//! gap knowing the pitch there (`Stream::preview` and `Stream::expect`).
//! The plugin says so with `SRTPGATE_CODEC_LOOKAHEAD`; nothing waits for it,
//! the packet is there already.
//!
//! The grid, the cross-fade after a loss and the budget of neural losses
//! (beyond it, the classic concealment) are `srtpgate_opus_sys::plc::stream`.

use srtpgate_codec::plc::Plc;
use srtpgate_opus_sys::plc::stream::{Loss, Stream, LOOK_MAX, OLA};
use srtpgate_opus_sys::plc::FRAME;
use srtpgate_spandsp_sys as sys;

/// Samples by which G.722's analysis and synthesis QMF delay audio.
const QMF_DELAY: usize = 22;
/// Samples of the encoder's QMF history.
const QMF_HIST: usize = 24;
const _: () = assert!(QMF_DELAY <= OLA, "the continuation covers the QMF delay");
/// Samples the re-encoder takes at once.
const PEND: usize = 320;

/// How a wideband G.722 decoder conceals.
pub(crate) enum Concealer {
    Classic(Plc),
    Neural(Box<Neural>),
}

pub(crate) struct Neural {
    s: Stream,
    /// The last QMF_HIST samples played (oldest first).
    last: [i16; QMF_HIST],
    /// The ADPCM re-sync of the current loss ...
    rs: Resync,
    /// ... and a copy of it to decode the packet after a loss with before
    /// the loss is concealed.
    peek: Resync,
    /// The classic concealer (beyond the budget), kept with the history it
    /// needs.
    fallback: Plc,
    /// Tests: audio played instead of the model's (the true lost audio).
    #[cfg(test)]
    script: Option<(Vec<i16>, usize)>,
}

/// ADPCM re-sync: an encoder and a shadow decoder that the concealment is
/// G.722-coded through.
struct Resync {
    enc: *mut sys::g722_encode_state_t,
    shadow: *mut sys::g722_decode_state_t,
    /// The re-encoder's QMF history being collected, `lead_n` valid.
    lead: [i16; QMF_HIST],
    lead_n: usize,
    /// Samples waiting to be re-encoded (an even number is encoded at once).
    pend: [i16; PEND],
    pend_n: usize,
}

// SAFETY: the spandsp states are owned by this value and used by the thread
// that holds it.
unsafe impl Send for Neural {}

impl Neural {
    /// The neural concealer with its re-sync states, or None without memory.
    pub(crate) fn new() -> Option<Box<Neural>> {
        let n = Box::new(Neural {
            s: Stream::new()?,
            last: [0; QMF_HIST],
            rs: Resync::new()?,
            peek: Resync::new()?,
            fallback: Plc::new(16000),
            #[cfg(test)]
            script: None,
        });
        Some(n)
    }

    /// Fills `pcm` with concealment.
    ///
    /// # Safety
    /// `dec` is the live 16 kHz G.722 decoder state this concealer belongs
    /// to (the re-encoding starts from its state at the start of a loss).
    pub(crate) unsafe fn conceal(&mut self, dec: *mut sys::g722_decode_state_t, pcm: &mut [i16]) {
        let first = self.s.loss().is_none();
        match self.s.conceal(pcm) {
            None => {}
            Some(Loss::Classic) => {
                // The classic concealment, kept in the model's history as
                // if received (so that the grid goes on).
                self.fallback.conceal(pcm);
                self.keep(pcm);
            }
            Some(Loss::Neural) => {
                if first {
                    // SAFETY: the caller's.
                    unsafe { self.rs.start(dec, &self.last) };
                }
                #[cfg(test)]
                if let Some((truth, k)) = self.script.as_mut() {
                    pcm.copy_from_slice(&truth[*k..*k + pcm.len()]);
                    *k += pcm.len();
                }
                self.rs.reencode(pcm);
            }
        }
    }

    /// Fills `pcm` with concealment for the lost audio just before `next`
    /// (the payload that arrived after the loss), made knowing `next`: it
    /// is decoded on a copy of the re-sync after the concealment the model
    /// would play without the look-ahead (close to how
    /// [`Neural::before_decode`] will decode it: only the gap's last frames
    /// change), and the model then makes the end of the gap knowing the
    /// pitch there. Where the stream cannot look ahead (see
    /// `Stream::preview`) or `next` is too short to tell, the usual
    /// concealment.
    ///
    /// # Safety
    /// As [`Neural::conceal`].
    pub(crate) unsafe fn recover(&mut self, dec: *mut sys::g722_decode_state_t, next: &[u8], pcm: &mut [i16]) {
        let gap = pcm.len();
        let mut ahead = [0i16; LOOK_MAX + QMF_DELAY];
        #[cfg(not(test))]
        let scripted = false;
        #[cfg(test)]
        let scripted = self.script.is_some();
        // The model is told about the two frames after the gap: the last
        // gap frame needs the second, the one before it the first (so a
        // one-frame gap needs `next` of 20 ms).
        let next_frames = 2 * next.len().min(FRAME) / FRAME;
        let useful = next_frames >= 2 || (next_frames == 1 && gap >= 2 * FRAME);
        if useful && gap <= LOOK_MAX && !scripted && self.s.preview(gap, &mut ahead[..gap + QMF_DELAY]).is_some() {
            let ahead = &ahead[..gap + QMF_DELAY];
            if self.s.loss().is_none() {
                // SAFETY: the caller's.
                unsafe { self.peek.start(dec, &self.last) };
            } else {
                self.peek.copy_from(&self.rs);
            }
            self.peek.reencode(ahead);
            // The packet after the gap (its first 20 ms: two of the model's
            // frames), decoded as it will be.
            let mut y = [0i16; 2 * FRAME];
            let bytes = next.len().min(FRAME);
            // SAFETY: a live state; `bytes` bytes decode to 2 * bytes samples.
            let n = unsafe { sys::g722_decode(self.peek.shadow, y.as_mut_ptr(), next.as_ptr(), bytes as i32) };
            let n = usize::try_from(n).unwrap_or(0).min(y.len());
            self.s.expect(&ahead[..gap], &y[..n]);
        }
        // SAFETY: the caller's.
        unsafe { self.conceal(dec, pcm) };
    }

    /// Before the first packet after a loss is decoded: the concealment's
    /// continuation completes the re-encoding and the decoder is put back
    /// in step (once a loss).
    ///
    /// # Safety
    /// As [`Neural::conceal`].
    pub(crate) unsafe fn before_decode(&mut self, dec: *mut sys::g722_decode_state_t) {
        let Some(ahead) = self.s.continuation() else {
            return;
        };
        #[cfg(test)]
        if let Some((truth, k)) = self.script.as_ref() {
            ahead.copy_from_slice(&truth[*k..*k + OLA]);
        }
        let mut past = [0i16; QMF_DELAY];
        past.copy_from_slice(&ahead[..QMF_DELAY]);
        self.rs.reencode(&past);
        // SAFETY: `dec` per the caller, `shadow` ours: live states of a kind.
        unsafe { sys::srtpgate_g722_decode_copy(dec, self.rs.shadow) };
    }

    /// Takes decoded audio: the first audio after a neural loss is
    /// cross-faded from the concealment's continuation, after a classic
    /// one blended by the classic concealer; then kept.
    pub(crate) fn received(&mut self, pcm: &mut [i16]) {
        if pcm.is_empty() {
            return;
        }
        self.s.arrived(pcm);
        self.fallback.received(pcm);
        self.keep(pcm);
    }

    /// Played audio onto the model's grid and into the re-encoder's
    /// history.
    fn keep(&mut self, pcm: &[i16]) {
        self.s.keep(pcm);
        keep_last(&mut self.last, pcm);
    }
}

/// Keeps the last QMF_HIST samples of what was played in `last`.
fn keep_last(last: &mut [i16; QMF_HIST], pcm: &[i16]) {
    if pcm.len() >= QMF_HIST {
        last.copy_from_slice(&pcm[pcm.len() - QMF_HIST..]);
    } else {
        last.copy_within(pcm.len().., 0);
        last[QMF_HIST - pcm.len()..].copy_from_slice(pcm);
    }
}

impl Resync {
    /// The states (spandsp allocates them), or None without memory.
    fn new() -> Option<Resync> {
        // SAFETY: spandsp allocates the states (NULL argument); checked below
        // and freed by Drop.
        let r = unsafe {
            Resync {
                enc: sys::g722_encode_init(std::ptr::null_mut(), 64000, 0),
                shadow: sys::g722_decode_init(std::ptr::null_mut(), 64000, 0),
                lead: [0; QMF_HIST],
                lead_n: 0,
                pend: [0; PEND],
                pend_n: 0,
            }
        };
        (!r.enc.is_null() && !r.shadow.is_null()).then_some(r)
    }

    /// At the start of a loss: the shadow decoder starts from `dec`, the
    /// re-encoder's QMF history from `last` (the last samples played).
    ///
    /// # Safety
    /// `dec` is a live G.722 decoder state.
    unsafe fn start(&mut self, dec: *mut sys::g722_decode_state_t, last: &[i16; QMF_HIST]) {
        // SAFETY: `dec` per the caller, `shadow` ours: live states of a kind.
        unsafe { sys::srtpgate_g722_decode_copy(self.shadow, dec) };
        self.lead[..QMF_HIST - QMF_DELAY].copy_from_slice(&last[QMF_DELAY..]);
        self.lead_n = QMF_HIST - QMF_DELAY;
        self.pend_n = 0;
    }

    /// Makes this a copy of `o` (states and buffers).
    fn copy_from(&mut self, o: &Resync) {
        // SAFETY: live states of a kind, ours.
        unsafe {
            sys::srtpgate_g722_encode_copy(self.enc, o.enc);
            sys::srtpgate_g722_decode_copy(self.shadow, o.shadow);
        }
        self.lead = o.lead;
        self.lead_n = o.lead_n;
        self.pend = o.pend;
        self.pend_n = o.pend_n;
    }

    /// Feeds concealment to the re-encoder: the first samples complete its
    /// QMF history, the rest are G.722-encoded and decoded into the shadow.
    /// At the end of a loss, the first QMF_DELAY samples past it complete
    /// the re-encoding, and the shadow is the decoder's state in step.
    fn reencode(&mut self, mut x: &[i16]) {
        if self.lead_n < QMF_HIST {
            let n = (QMF_HIST - self.lead_n).min(x.len());
            self.lead[self.lead_n..self.lead_n + n].copy_from_slice(&x[..n]);
            self.lead_n += n;
            x = &x[n..];
            if self.lead_n == QMF_HIST {
                // SAFETY: live states; `lead` holds QMF_HIST samples.
                unsafe { sys::srtpgate_g722_encode_from_decode(self.enc, self.shadow, self.lead.as_ptr()) };
            }
        }
        while !x.is_empty() {
            let n = (self.pend.len() - self.pend_n).min(x.len());
            self.pend[self.pend_n..self.pend_n + n].copy_from_slice(&x[..n]);
            self.pend_n += n;
            x = &x[n..];
            let even = self.pend_n & !1;
            if even > 0 {
                let mut codes = [0u8; PEND / 2];
                let mut out = [0i16; PEND];
                // SAFETY: live states; `even` samples in, even/2 bytes out,
                // decoded back to `even` samples.
                unsafe {
                    let b = sys::g722_encode(self.enc, codes.as_mut_ptr(), self.pend.as_ptr(), even as i32);
                    sys::g722_decode(self.shadow, out.as_mut_ptr(), codes.as_ptr(), b);
                }
                self.pend.copy_within(even..self.pend_n, 0);
                self.pend_n -= even;
            }
        }
    }
}

impl Drop for Resync {
    fn drop(&mut self) {
        // SAFETY: made by new(), freed once (null ones skipped).
        unsafe {
            if !self.enc.is_null() {
                sys::g722_encode_free(self.enc);
            }
            if !self.shadow.is_null() {
                sys::g722_decode_free(self.shadow);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use srtpgate_opus_sys::plc::stream::BUDGET_BURST;

    /// A voiced 16 kHz signal whose pitch and level move.
    fn vowel(n: usize) -> Vec<i16> {
        (0..n)
            .map(|i| {
                let t = i as f64 / 16000.0;
                let phase = 2.0 * std::f64::consts::PI * (120.0 * t - 25.0 / 2.3 * ((t * 2.3).cos() - 1.0));
                let x: f64 = (1..25).map(|h| (phase * h as f64).sin() / (h as f64).powf(0.9)).sum();
                (3500.0 * x * (0.7 + 0.3 * (t * 5.0).sin())) as i16
            })
            .collect()
    }

    #[test]
    fn re_encoding_the_lost_audio_puts_the_decoder_back_in_step() {
        // Packet 10 of 20 ms lost. With the true lost audio in place of the
        // concealment, fed in uneven pieces, the re-sync must bring the
        // decoder exactly back to the sender's state: what it decodes next
        // equals what a decoder that lost nothing decodes. Without it the
        // decoder is off for tens of milliseconds.
        let x = vowel(320 * 16);
        // SAFETY: states made and freed here; buffers sized for the calls.
        unsafe {
            let e = sys::g722_encode_init(std::ptr::null_mut(), 64000, 0);
            let mut wire = vec![0u8; x.len() / 2];
            sys::g722_encode(e, wire.as_mut_ptr(), x.as_ptr(), x.len() as i32);
            sys::g722_encode_free(e);
            let new = || sys::g722_decode_init(std::ptr::null_mut(), 64000, 0);
            let (all, kept, synced) = (new(), new(), new());
            let mut n = Neural::new().expect("state");
            let mut out = [vec![0i16; x.len()], vec![0i16; x.len()], vec![0i16; x.len()]];
            for k in 0..16 {
                let (p, r) = (wire[k * 160..].as_ptr(), k * 320..(k + 1) * 320);
                sys::g722_decode(all, out[0][r.clone()].as_mut_ptr(), p, 160);
                if k == 10 {
                    n.rs.start(synced, &n.last);
                    for piece in out[0][r.clone()].chunks(77) {
                        n.rs.reencode(piece);
                    }
                    continue;
                }
                if k == 11 {
                    let past: Vec<i16> = out[0][r.start..r.start + QMF_DELAY].to_vec();
                    n.rs.reencode(&past);
                    sys::srtpgate_g722_decode_copy(synced, n.rs.shadow);
                }
                sys::g722_decode(kept, out[1][r.clone()].as_mut_ptr(), p, 160);
                sys::g722_decode(synced, out[2][r.clone()].as_mut_ptr(), p, 160);
                keep_last(&mut n.last, &out[2][r]);
            }
            let after = 320 * 11..320 * 14;
            let snr = |y: &[i16]| {
                let s: f64 = after.clone().map(|i| (out[0][i] as f64).powi(2)).sum();
                let e: f64 = after.clone().map(|i| (out[0][i] as f64 - y[i] as f64).powi(2)).sum();
                10.0 * (s / e.max(1.0)).log10()
            };
            let (s_kept, s_synced) = (snr(&out[1]), snr(&out[2]));
            assert!(
                s_synced > 40.0 && s_kept < 20.0,
                "60 ms after the loss: SNR {s_synced:.1} dB re-synced, {s_kept:.1} dB kept"
            );
            for d in [all, kept, synced] {
                sys::g722_decode_free(d);
            }
        }
    }

    /// `n` packets of 20 ms of `x`, G.722-coded, and what a decoder that
    /// loses none of them plays.
    fn coded(x: &[i16]) -> (Vec<u8>, Vec<i16>) {
        // SAFETY: states made and freed here; buffers sized for the calls.
        unsafe {
            let e = sys::g722_encode_init(std::ptr::null_mut(), 64000, 0);
            let mut wire = vec![0u8; x.len() / 2];
            sys::g722_encode(e, wire.as_mut_ptr(), x.as_ptr(), x.len() as i32);
            sys::g722_encode_free(e);
            let d = sys::g722_decode_init(std::ptr::null_mut(), 64000, 0);
            let mut all = vec![0i16; x.len()];
            sys::g722_decode(d, all.as_mut_ptr(), wire.as_ptr(), wire.len() as i32);
            sys::g722_decode_free(d);
            (wire, all)
        }
    }

    #[test]
    fn the_plugin_path_with_the_true_audio_plays_what_nothing_lost_plays() {
        // conceal (in two pieces), before_decode and received as the plugin
        // calls them, with the true lost audio in place of the model's: the
        // re-sync (offsets, history, continuation) must put the decoder
        // exactly back in step, and the cross-fade then changes nothing.
        let (wire, all) = coded(&vowel(320 * 16));
        let mut n = Neural::new().expect("state");
        n.script = Some((all.clone(), 320 * 10));
        let mut out = Vec::new();
        // SAFETY: a decoder made and freed here; buffers sized for the calls.
        unsafe {
            let d = sys::g722_decode_init(std::ptr::null_mut(), 64000, 0);
            let mut pcm = [0i16; 320];
            for k in 0..16 {
                if k == 10 {
                    n.conceal(d, &mut pcm[..100]);
                    n.conceal(d, &mut pcm[100..]);
                } else {
                    n.before_decode(d);
                    sys::g722_decode(d, pcm.as_mut_ptr(), wire[k * 160..].as_ptr(), 160);
                    n.received(&mut pcm);
                }
                out.extend_from_slice(&pcm);
            }
            sys::g722_decode_free(d);
        }
        let r = 320 * 10..320 * 14;
        let s: f64 = r.clone().map(|i| (all[i] as f64).powi(2)).sum();
        let e: f64 = r.map(|i| (all[i] as f64 - out[i] as f64).powi(2)).sum();
        let snr = 10.0 * (s / e.max(1.0)).log10();
        assert!(snr > 40.0, "the loss and 60 ms after it: SNR {snr:.1} dB");
    }

    #[test]
    fn a_sender_that_makes_every_packet_a_loss_gets_the_classic_concealment_beyond_its_budget() {
        // A gap of 2 samples before each 20 ms packet: 20 neural losses at
        // once, then one each 100 ms of the stream's audio; the others are
        // concealed the classic way, and every call still gives the samples
        // asked for. Two seconds without loss fill the budget again.
        let (wire, _) = coded(&vowel(320 * 200));
        let mut n = Neural::new().expect("state");
        let (mut neural, mut classic) = (0, 0);
        // SAFETY: a decoder made and freed here; buffers sized for the calls.
        unsafe {
            let d = sys::g722_decode_init(std::ptr::null_mut(), 64000, 0);
            let mut pcm = [0i16; 322];
            for k in 0..200 {
                if k < 100 {
                    n.conceal(d, &mut pcm[..2]);
                    if n.s.loss() == Some(Loss::Classic) {
                        classic += 1;
                    } else {
                        neural += 1;
                    }
                }
                n.before_decode(d);
                sys::g722_decode(d, pcm.as_mut_ptr(), wire[k * 160..].as_ptr(), 160);
                n.received(&mut pcm[..320]);
            }
            sys::g722_decode_free(d);
        }
        // 100 losses over 100 × 20 ms: 20 at once and one each 100 ms (~20).
        assert!((38..=42).contains(&neural), "{neural} neural, {classic} classic");
        assert_eq!(neural + classic, 100);
        assert_eq!(n.s.budget(), BUDGET_BURST, "2 s without loss fill it again");
    }
}
