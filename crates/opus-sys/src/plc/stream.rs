//! One decoded stream's neural concealment, beside the codec's own decoder:
//! the stream's audio kept on the model's 10 ms grid, lost time of any
//! length filled from the model, a 5 ms cross-fade from the concealment's
//! continuation into the first audio after a loss, and a budget of neural
//! losses: what a codec's concealment with the model needs besides what
//! is the codec's own (G.722 adds putting its ADPCM decoder back in step;
//! `plugins/spandsp/src/wide.rs`).
//!
//! The start of each loss costs ~0.6 ms of CPU (the model analyses the
//! buffered history), ~1.0 ms with the look-ahead (that analysis once, a
//! preview of the gap, a fresh analysis of ~12 frames, then the
//! concealment), and what is a loss is the sender's to say: a sender
//! that leaves a gap of a few samples before every packet would make each
//! packet cost that. So a stream has a budget of neural losses (a token
//! bucket on the stream's own time: [`BUDGET_BURST`], one more every
//! [`BUDGET_EVERY`] samples, i.e. 10 a second); a loss beyond it is the
//! codec's classic concealment ([`Loss::Classic`]).
//!
//! Use, per decoded stream:
//! - lost time: [`Stream::conceal`]; where it answers [`Loss::Classic`],
//!   the codec fills the audio itself and passes it to [`Stream::keep`];
//! - received audio: [`Stream::received`] (or [`Stream::arrived`], the
//!   codec's own smoothing, then [`Stream::keep`]);
//! - where the packet after a loss is there before the loss's last part
//!   is concealed (a relay fills a gap when that packet arrives):
//!   [`Stream::preview`] that part, decode the packet as it will be
//!   decoded after it, [`Stream::expect`] its audio, then
//!   [`Stream::conceal`] the part (the look-ahead: the model is told the
//!   pitch after the gap).

use super::{NeuralPlc, FEATURES, FRAME, PITCH, VOICING};
use srtpgate_codec::plc::LossBudget;

/// Cross-fade from the concealment into the first audio after a loss
/// (5 ms), and the length of the continuation made for it.
pub const OLA: usize = 80;
/// Longest lost time looked ahead across (40 ms; longer losses conceal
/// without it).
pub const LOOK_MAX: usize = 4 * FRAME;
/// Frames played last (received or concealed) that the look-ahead's
/// analysis starts from (80 ms).
const PLAYED: usize = 8;

/// Neural losses a stream may have at once ...
pub const BUDGET_BURST: u32 = 20;
/// ... and one more each this many samples of its audio (100 ms).
pub const BUDGET_EVERY: usize = 1600;

/// How the current loss is concealed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Loss {
    /// By the model (the stream filled the audio).
    Neural,
    /// By the codec's classic concealment (the budget is spent).
    Classic,
}

/// Where the current 10 ms slot of the grid stands.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Slot {
    /// Received audio is being collected into `frame`.
    Received,
    /// `conc` holds the slot's concealment.
    Concealed,
    /// The slot was concealed and then audio came in its middle: the model
    /// already has the slot, so the rest is played but not kept.
    Rest,
}

/// One stream's neural concealer.
pub struct Stream {
    plc: NeuralPlc,
    /// A copy of `plc` to look ahead with at the end of a loss.
    look: NeuralPlc,
    frame: [i16; FRAME],
    conc: [i16; FRAME],
    pos: usize,
    slot: Slot,
    /// Samples lost in the current loss (0: none).
    missing: usize,
    /// The concealment's continuation past the loss, once made.
    ahead: [i16; OLA],
    ahead_made: bool,
    /// Neural losses left.
    budget: LossBudget,
    /// The current loss is the codec's classic concealment.
    classic: bool,
    /// The last frames played on the grid (a ring; `played_n` in all).
    played: [[i16; FRAME]; PLAYED],
    played_n: usize,
    /// A preview's frames, and the model's features for the two frames
    /// after it (where the preview saw them).
    preview_frames: usize,
    pred: [Option<[f32; FEATURES]>; 2],
    /// Samples of lost time the features queued by expect are for (0:
    /// none queued).
    queued: usize,
    /// The current loss's end was looked ahead across.
    looked: bool,
}

impl Stream {
    /// A concealer with an empty history, or None without memory.
    pub fn new() -> Option<Stream> {
        Some(Stream {
            plc: NeuralPlc::new()?,
            look: NeuralPlc::new()?,
            frame: [0; FRAME],
            conc: [0; FRAME],
            pos: 0,
            slot: Slot::Received,
            missing: 0,
            ahead: [0; OLA],
            ahead_made: false,
            budget: LossBudget::new(BUDGET_BURST, BUDGET_EVERY),
            classic: false,
            played: [[0; FRAME]; PLAYED],
            played_n: 0,
            preview_frames: 0,
            pred: [None; 2],
            queued: 0,
            looked: false,
        })
    }

    /// Neural losses left.
    pub fn budget(&self) -> u32 {
        self.budget.left()
    }

    /// The kind of the loss under way, if one is.
    pub fn loss(&self) -> Option<Loss> {
        (self.missing > 0).then_some(if self.classic { Loss::Classic } else { Loss::Neural })
    }

    /// Lost time: a loss starts here or goes on. With [`Loss::Neural`]
    /// `pcm` is filled; with [`Loss::Classic`] the caller fills it and
    /// passes it to [`Stream::keep`]. An empty `pcm` changes nothing
    /// (None).
    pub fn conceal(&mut self, pcm: &mut [i16]) -> Option<Loss> {
        if pcm.is_empty() {
            return None;
        }
        // A preview not followed by expect is forgotten.
        self.preview_frames = 0;
        self.budget.earn(pcm.len());
        if self.missing == 0 {
            self.ahead_made = false;
            self.classic = !self.budget.take();
            if !self.classic {
                if self.slot == Slot::Received && self.pos > 0 {
                    // The loss starts mid-slot: the slot is concealed whole
                    // (its received part leaves the model's history).
                    self.plc.conceal(&mut self.conc);
                }
                self.slot = Slot::Concealed;
            }
        }
        self.missing += pcm.len();
        if self.classic {
            self.drop_look();
            return Some(Loss::Classic);
        }
        let mut at = 0;
        while at < pcm.len() {
            if self.pos == 0 {
                self.plc.conceal(&mut self.conc);
                self.play(self.conc);
            }
            let n = (FRAME - self.pos).min(pcm.len() - at);
            pcm[at..at + n].copy_from_slice(&self.conc[self.pos..self.pos + n]);
            self.pos = (self.pos + n) % FRAME;
            at += n;
        }
        // A look-ahead is for the lost time it previewed only.
        self.queued = self.queued.saturating_sub(pcm.len());
        if self.queued == 0 {
            self.drop_look();
        }
        Some(Loss::Neural)
    }

    /// Look-ahead, step 1: when the packet after a loss has come, before
    /// the loss's last `gap` samples are concealed. Fills `out` (`gap`
    /// samples and more) with what the model would play from here without
    /// the look-ahead, on a copy, so that the codec can decode the packet
    /// after the gap close to how it will be decoded (only the gap's last
    /// frames then change). The stream itself only runs the model's
    /// analysis of its history, which the concealment would start with:
    /// what it conceals next is unchanged, and the analysis runs once a
    /// loss instead of in the copy and again in the stream.
    /// None where there is no look-ahead: the loss would not be neural
    /// (the budget), or the gap is not whole frames on the model's grid
    /// (then nothing is filled), or it is longer than [`LOOK_MAX`].
    pub fn preview(&mut self, gap: usize, out: &mut [i16]) -> Option<()> {
        self.preview_frames = 0;
        let starts = self.missing == 0;
        if gap == 0 || !gap.is_multiple_of(FRAME) || gap > LOOK_MAX || out.len() < gap || self.pos != 0 {
            return None;
        }
        if (starts && self.budget.left() == 0) || (!starts && self.classic) {
            return None;
        }
        if starts && self.slot != Slot::Received {
            return None;
        }
        // The loss's analysis of the history runs on the stream, once: the
        // copy and the concealment that follows both go on from it.
        self.plc.begin();
        self.look.copy_from(&self.plc);
        let n = gap / FRAME;
        self.preview_frames = n;
        self.pred = [None; 2];
        let mut f = [0i16; FRAME];
        let mut at = 0;
        for r in 0..out.len().div_ceil(FRAME) {
            self.look.conceal(&mut f);
            // The frame made at call r is made from the features of frame
            // r + 2: those of the frames after the gap come at n-2 and n-1.
            if r + 2 >= n && r < n {
                self.pred[r + 2 - n] = Some(self.look.features());
            }
            let k = (out.len() - at).min(FRAME);
            out[at..at + k].copy_from_slice(&f[..k]);
            at += k;
        }
        Some(())
    }

    /// Look-ahead, step 2: `gap` as [`Stream::preview`] filled it and
    /// `next`, the audio of the packet after it (its first two frames are
    /// used). A fresh feature analysis runs over the last 80 ms played,
    /// the gap and `next`, and the gap's last two frames are made knowing
    /// where the pitch goes: from the features the model would have
    /// predicted for the two frames after the gap, with their pitch and
    /// voicing taken from `next`'s. (The pitch is what the audio after a
    /// loss tells reliably; its spectral envelope is off while the codec's
    /// decoder is not yet back in step, so the model keeps its own:
    /// BENCHMARKS.) Then [`Stream::conceal`] the gap as usual. Without a
    /// preview just before, nothing changes.
    pub fn expect(&mut self, gap: &[i16], next: &[i16]) {
        let n = self.preview_frames;
        if n == 0 || gap.len() != n * FRAME {
            return;
        }
        self.preview_frames = 0;
        // A fresh analysis over the last frames played, then the gap as
        // previewed: what the model would have seen had nothing been lost.
        // (The model's own analysis runs only at a loss's start, over a
        // history with holes; started afresh it tells the pitch after the
        // gap better: BENCHMARKS.)
        self.look.analysis_reset();
        for k in self.played_n.saturating_sub(PLAYED)..self.played_n {
            let f = self.played[k % PLAYED];
            self.look.analyse(&f);
        }
        for f in gap.chunks_exact(FRAME) {
            self.look.analyse(f.try_into().expect("whole frames"));
        }
        let mut given: [Option<[f32; FEATURES]>; 2] = [None; 2];
        for (j, f) in next.chunks_exact(FRAME).take(2).enumerate() {
            let seen = self.look.analyse(f.try_into().expect("a frame"));
            given[j] = self.pred[j].map(|mut p| {
                p[PITCH] = seen[PITCH];
                p[VOICING] = seen[VOICING];
                p
            });
        }
        // The model's predictions from here until the gap's last frame: two
        // more where a loss starts for it, then one a frame; the last two are
        // for the frames after the gap. Predictions to let be go first (a
        // None holds no place), so the queue ends at the last features given.
        let calls = n + if self.plc.starts() { 2 } else { 0 };
        self.plc.fec_clear();
        let Some(last) = (0..calls).rev().find(|&c| (c + 2).checked_sub(calls).is_some_and(|j| given[j].is_some()))
        else {
            return;
        };
        for c in 0..=last {
            let j = (c + 2).checked_sub(calls);
            self.plc.fec_add(j.and_then(|j| given[j].as_ref()));
        }
        self.queued = n * FRAME;
        self.looked = true;
    }

    /// Forgets a preview and any features queued from it.
    fn drop_look(&mut self) {
        self.preview_frames = 0;
        if self.queued > 0 {
            self.plc.fec_clear();
            self.queued = 0;
        }
    }

    /// The concealment's continuation past a neural loss ([`OLA`] samples,
    /// what the first received audio is cross-faded from): made on the
    /// first call after the loss's last concealment, None before a loss,
    /// after a classic one and on later calls. A caller may change it
    /// before the audio arrives.
    pub fn continuation(&mut self) -> Option<&mut [i16; OLA]> {
        if self.missing == 0 || self.classic || self.ahead_made {
            return None;
        }
        self.ahead_made = true;
        self.look.copy_from(&self.plc);
        if self.looked {
            // The gap's end was made knowing where the audio goes: what
            // continues it into that audio is not faded as a guess is (the
            // model's count of lost frames starts again; measured: +0.015
            // PESQ at 5 % loss, BENCHMARKS).
            self.look.set_lost_frames(0);
        }
        let mut got = 0;
        if self.pos > 0 {
            let n = (FRAME - self.pos).min(OLA);
            self.ahead[..n].copy_from_slice(&self.conc[self.pos..self.pos + n]);
            got = n;
        }
        let mut f = [0i16; FRAME];
        while got < OLA {
            self.look.conceal(&mut f);
            let n = (OLA - got).min(FRAME);
            self.ahead[got..got + n].copy_from_slice(&f[..n]);
            got += n;
        }
        Some(&mut self.ahead)
    }

    /// Received audio, then [`Stream::keep`].
    pub fn received(&mut self, pcm: &mut [i16]) -> Option<Loss> {
        let ended = self.arrived(pcm);
        self.keep(pcm);
        ended
    }

    /// Received audio arrives: it counts towards the budget and, where it
    /// ends a neural loss, is cross-faded from the continuation. Answers
    /// the kind of loss it ended (with [`Loss::Classic`] the codec smooths
    /// the step itself). The caller then passes it to [`Stream::keep`].
    pub fn arrived(&mut self, pcm: &mut [i16]) -> Option<Loss> {
        if pcm.is_empty() {
            return None;
        }
        self.budget.earn(pcm.len());
        self.drop_look();
        let ended = self.loss();
        self.looked &= ended.is_some();
        let ended = ended?;
        if ended == Loss::Neural {
            self.continuation();
            let n = OLA.min(pcm.len());
            for (i, x) in pcm[..n].iter_mut().enumerate() {
                let w = (i + 1) as f32 / (n + 1) as f32;
                *x = (self.ahead[i] as f32 * (1.0 - w) + *x as f32 * w).round() as i16;
            }
            self.slot = if self.pos == 0 { Slot::Received } else { Slot::Rest };
        }
        self.missing = 0;
        self.looked = false;
        Some(ended)
    }

    /// A frame played on the grid, for the look-ahead's analysis.
    fn play(&mut self, frame: [i16; FRAME]) {
        self.played[self.played_n % PLAYED] = frame;
        self.played_n += 1;
    }

    /// Audio played outside a neural loss (received, or the classic
    /// concealment) onto the grid: whole received slots go to the model's
    /// history.
    pub fn keep(&mut self, pcm: &[i16]) {
        let mut at = 0;
        while at < pcm.len() {
            let n = (FRAME - self.pos).min(pcm.len() - at);
            if self.slot == Slot::Received {
                self.frame[self.pos..self.pos + n].copy_from_slice(&pcm[at..at + n]);
            }
            self.pos += n;
            at += n;
            if self.pos == FRAME {
                if self.slot == Slot::Received {
                    self.plc.update(&self.frame);
                    self.play(self.frame);
                }
                self.pos = 0;
                self.slot = Slot::Received;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plc::tests::voiced;

    fn vowel(n: usize) -> Vec<i16> {
        voiced(n, 0)
    }

    #[test]
    fn losses_of_any_length_keep_the_grid_and_the_budget_caps_neural_ones() {
        // 20 ms packets with a gap of 7 samples before each: every packet
        // ends a loss. The first BUDGET_BURST losses are neural (filled),
        // then about one each 100 ms; the rest are left to the codec.
        let x = vowel(320 * 121);
        let mut s = Stream::new().expect("state");
        s.received(&mut x[..320].to_vec());
        let (mut neural, mut classic) = (0, 0);
        for p in x[320..].chunks(320) {
            let mut gap = [0i16; 7];
            match s.conceal(&mut gap) {
                Some(Loss::Neural) => {
                    neural += 1;
                    assert!(gap.iter().any(|&v| v != 0), "the model fills the gap");
                }
                Some(Loss::Classic) => {
                    classic += 1;
                    s.keep(&gap);
                }
                None => unreachable!("a gap of 7 samples"),
            }
            let mut pcm = p.to_vec();
            let kind = s.loss();
            assert_eq!(s.received(&mut pcm), kind);
            assert_eq!(s.loss(), None);
        }
        assert_eq!(neural + classic, 120);
        // 20 at once and one each 100 ms of the 120 × 20.4 ms (~24).
        assert!((42..=46).contains(&neural), "{neural} neural, {classic} classic");
        assert_eq!(s.conceal(&mut []), None);
    }

    #[test]
    fn the_first_audio_after_a_loss_is_cross_faded_from_the_continuation() {
        let x = vowel(160 * 30);
        let mut s = Stream::new().expect("state");
        let mut a = x[..160 * 20].to_vec();
        s.received(&mut a);
        let mut lost = [0i16; 200];
        assert_eq!(s.conceal(&mut lost), Some(Loss::Neural));
        let ahead = *s.continuation().expect("made once");
        assert!(s.continuation().is_none());
        let mut next = x[160 * 20 + 200..160 * 22].to_vec();
        let orig = next.clone();
        assert_eq!(s.received(&mut next), Some(Loss::Neural));
        // The first sample is mostly the continuation, the 80th mostly the
        // audio, and nothing after the fade is changed.
        let w0 = 1.0 / 81.0;
        assert_eq!(next[0], (ahead[0] as f32 * (1.0 - w0) + orig[0] as f32 * w0).round() as i16);
        assert_eq!(next[OLA..], orig[OLA..]);
        // No loss now: audio passes unchanged.
        let mut more = x[160 * 22..160 * 23].to_vec();
        assert_eq!(s.received(&mut more), None);
        assert_eq!(more, x[160 * 22..160 * 23]);
    }

    /// Feeds `s` received 10 ms frames of `x` from frame `from` to `to`.
    fn feed(s: &mut Stream, x: &[i16], from: usize, to: usize) {
        for k in from..to {
            let mut f = x[k * FRAME..(k + 1) * FRAME].to_vec();
            s.received(&mut f);
        }
    }

    #[test]
    fn a_preview_changes_nothing() {
        // What the stream conceals after a preview (not followed by expect)
        // is what it conceals without one, and the preview is that.
        let x = vowel(FRAME * 30);
        let (mut a, mut b) = (Stream::new().expect("state"), Stream::new().expect("state"));
        feed(&mut a, &x, 0, 20);
        feed(&mut b, &x, 0, 20);
        let mut seen = [0i16; 2 * FRAME + 22];
        assert_eq!(b.preview(2 * FRAME, &mut seen), Some(()));
        let (mut ya, mut yb) = ([0i16; 2 * FRAME], [0i16; 2 * FRAME]);
        a.conceal(&mut ya);
        b.conceal(&mut yb);
        assert_eq!(ya, yb);
        assert_eq!(seen[..2 * FRAME], ya);
        // Gaps off the grid, or too long, are not looked ahead across.
        let mut c = Stream::new().expect("state");
        feed(&mut c, &x, 0, 20);
        assert_eq!(c.preview(FRAME + 7, &mut seen), None);
        assert_eq!(c.preview(LOOK_MAX + FRAME, &mut [0; LOOK_MAX + FRAME]), None);
        c.keep(&x[20 * FRAME..20 * FRAME + 7]);
        assert_eq!(c.preview(FRAME, &mut seen), None, "mid-frame");
    }

    /// Features of two frames (where there are some).
    type Two = [Option<[f32; FEATURES]>; 2];

    /// A stream after 20 received frames of a vowel and `before` samples
    /// concealed; `tail` more samples received first, if any.
    fn stream_at(before: usize, tail: usize) -> Stream {
        let x = vowel(FRAME * 30);
        let mut s = Stream::new().expect("state");
        feed(&mut s, &x, 0, 20);
        let mut f = vec![0i16; before];
        s.conceal(&mut f);
        if tail > 0 {
            s.received(&mut x[20 * FRAME..20 * FRAME + tail].to_vec());
        }
        s
    }

    /// Looks ahead across `look` frames of lost time with `next` and
    /// conceals them: the features the frames that end the gap were made
    /// from (the last two), the model's own for them (from the preview),
    /// and `next`'s as the look-ahead's analysis sees them.
    fn looked(s: &mut Stream, look: usize, next: &[i16]) -> (Two, Two, Two) {
        let mut seen = vec![0i16; look * FRAME + 22];
        assert_eq!(s.preview(look * FRAME, &mut seen), Some(()));
        let pred = s.pred;
        // What the analysis makes of `next` after the frames played and the
        // gap, independently of the stream.
        let mut a = NeuralPlc::new().expect("state");
        a.analysis_reset();
        let played: Vec<i16> =
            (s.played_n.saturating_sub(PLAYED)..s.played_n).flat_map(|k| s.played[k % PLAYED]).collect();
        for fr in played.chunks(FRAME).chain(seen[..look * FRAME].chunks(FRAME)) {
            a.analyse(fr.try_into().expect("frame"));
        }
        let mut an: Two = [None; 2];
        for (j, fr) in next.chunks_exact(FRAME).take(2).enumerate() {
            an[j] = Some(a.analyse(fr.try_into().expect("frame")));
        }
        s.expect(&seen[..look * FRAME], next);
        let mut made: Two = [None; 2];
        let mut f = [0i16; FRAME];
        for k in 0..look {
            s.conceal(&mut f);
            if k + 2 >= look {
                made[k + 2 - look] = Some(s.plc.features());
            }
        }
        (made, pred, an)
    }

    /// A next packet's audio (a vowel with a tremolo, not the history's).
    fn next_audio() -> Vec<i16> {
        crate::plc::tests::voiced(2 * FRAME, 0)
            .iter()
            .enumerate()
            .map(|(i, &v)| ((v as f64) * (i as f64 * 0.37).sin()) as i16)
            .collect()
    }

    #[test]
    fn the_gap_s_last_frames_are_made_with_the_pitch_of_the_audio_after_it() {
        // Losses of 10, 20 and 30 ms at their start, the second half of one
        // of 40 ms, and one that starts right after a loss that ended
        // mid-frame (where the model does not see a loss start): the two
        // frames before the audio comes back are made from the model's own
        // features with the pitch and voicing of the next packet's two
        // frames (the model runs two frames ahead of the audio).
        let next = next_audio();
        for (name, mut s, look) in [
            ("10 ms", stream_at(0, 0), 1),
            ("20 ms", stream_at(0, 0), 2),
            ("30 ms", stream_at(0, 0), 3),
            ("last 20 of 40 ms", stream_at(2 * FRAME, 0), 2),
            ("after a loss that ended mid-frame", stream_at(FRAME + 60, FRAME - 60), 2),
        ] {
            let (made, pred, an) = looked(&mut s, look, &next);
            for j in 0..2 {
                let (Some(m), Some(p), Some(a)) = (made[j], pred[j], an[j]) else {
                    assert!(look == 1 && j == 0, "{name}: frame {j} seen");
                    continue;
                };
                assert_eq!(m[PITCH], a[PITCH], "{name}: frame {j}'s pitch is the next audio's");
                assert_eq!(m[VOICING], a[VOICING], "{name}");
                assert_eq!(m[..PITCH], p[..PITCH], "{name}: frame {j}'s envelope is the model's");
                assert_ne!(a[PITCH], p[PITCH], "{name}: the test tells the two apart");
            }
        }
    }

    #[test]
    fn a_next_packet_of_one_frame_steers_only_the_frame_it_can() {
        // 10 ms after a 20 ms gap: the frame before the last is made with its
        // pitch, the last from the model's prediction; nothing is left
        // queued for the cross-fade's continuation, the model counts both
        // frames as lost, and the continuation starts at full level.
        let next = next_audio();
        let mut s = stream_at(0, 0);
        let (made, pred, an) = looked(&mut s, 2, &next[..FRAME]);
        assert_eq!(made[0].expect("made")[PITCH], an[0].expect("seen")[PITCH]);
        assert!(an[1].is_none() && pred[1].is_some());
        // Nothing queued is left: a copy that forgets its queue continues
        // exactly as the stream's model does.
        let (mut c1, mut c2) = (NeuralPlc::new().expect("state"), NeuralPlc::new().expect("state"));
        c1.copy_from(&s.plc);
        c2.copy_from(&s.plc);
        c2.fec_clear();
        let (mut f1, mut f2) = ([0i16; FRAME], [0i16; FRAME]);
        c1.conceal(&mut f1);
        c2.conceal(&mut f2);
        assert_eq!(f1, f2);
        // And the model's fade goes on as without the look-ahead.
        let mut alone = stream_at(0, 0);
        let mut f = [0i16; 2 * FRAME];
        alone.conceal(&mut f);
        assert_eq!(s.plc.lost_frames(), 2);
        assert_eq!(s.plc.lost_frames(), alone.plc.lost_frames());
        // What continues a looked-ahead gap into the next audio is made at a
        // loss's first level; without the look-ahead it fades on.
        assert!(s.continuation().is_some() && alone.continuation().is_some());
        assert_eq!((s.look.lost_frames(), alone.look.lost_frames()), (1, 3));
    }

    #[test]
    fn features_queued_for_one_concealment_never_reach_a_later_loss() {
        // A preview and its features, then audio instead of the concealment:
        // the next loss conceals exactly as a stream whose preview was not
        // followed by expect (the preview ran the model's analysis of the
        // history early, which a later loss goes on from; the features
        // queued leave nothing).
        let next = next_audio();
        let x = vowel(FRAME * 30);
        let (mut a, mut b) = (stream_at(0, 0), stream_at(0, 0));
        let mut seen = [0i16; 2 * FRAME + 22];
        a.preview(2 * FRAME, &mut seen).expect("preview");
        b.preview(2 * FRAME, &mut seen).expect("preview");
        b.expect(&seen[..2 * FRAME], &next);
        for s in [&mut a, &mut b] {
            s.received(&mut x[22 * FRAME..23 * FRAME].to_vec());
        }
        let (mut ya, mut yb) = ([0i16; 2 * FRAME], [0i16; 2 * FRAME]);
        a.conceal(&mut ya);
        b.conceal(&mut yb);
        assert_eq!(ya, yb);
    }
}
