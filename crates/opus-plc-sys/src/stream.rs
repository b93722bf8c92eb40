//! One decoded stream's neural concealment, beside the codec's own decoder:
//! the stream's audio kept on the model's 10 ms grid, lost time of any
//! length filled from the model, a 5 ms cross-fade from the concealment's
//! continuation into the first audio after a loss, and a budget of neural
//! losses: what a codec's concealment with the model needs besides what
//! is the codec's own (G.722 adds putting its ADPCM decoder back in step;
//! `plugins/spandsp/src/wide.rs`).
//!
//! The start of each loss costs ~0.6 ms of CPU (the model analyses the
//! buffered history), and what is a loss is the sender's to say: a sender
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
//!   codec's own smoothing, then [`Stream::keep`]).

use crate::{NeuralPlc, FRAME};
use srtpgate_codec::plc::LossBudget;

/// Cross-fade from the concealment into the first audio after a loss
/// (5 ms), and the length of the continuation made for it.
pub const OLA: usize = 80;
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
            return Some(Loss::Classic);
        }
        let mut at = 0;
        while at < pcm.len() {
            if self.pos == 0 {
                self.plc.conceal(&mut self.conc);
            }
            let n = (FRAME - self.pos).min(pcm.len() - at);
            pcm[at..at + n].copy_from_slice(&self.conc[self.pos..self.pos + n]);
            self.pos = (self.pos + n) % FRAME;
            at += n;
        }
        Some(Loss::Neural)
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
        let ended = self.loss()?;
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
        Some(ended)
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
    use crate::tests::voiced;

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
}
