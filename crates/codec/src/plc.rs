//! Packet loss concealment for waveform codecs (G.711, G.722, G.726, L16),
//! after ITU-T G.711 Appendix I: the pitch period of the last received
//! audio is found, the last period is repeated (its ends blended so the
//! repetition has no click), faded by 20 % per 10 ms after the first 10 ms
//! and silent after 60 ms; when audio arrives again its start is blended
//! with the continued concealment.
//!
//! Written here rather than taken from a crate: no maintained Rust crate
//! offers it, and spandsp's version (in the spandsp plugin) is tuned to 8
//! kHz only. Pitch range, spans and fades here are in milliseconds, so the
//! same code conceals 8 kHz and 16 kHz audio. No allocation after `new`.

/// Shortest pitch period searched, ms (200 Hz).
const PITCH_MIN_MS: u32 = 5;
/// Longest pitch period searched, ms (66 Hz).
const PITCH_MAX_MS: u32 = 15;
/// Audio compared when searching the pitch, ms.
const CORR_MS: u32 = 20;
/// Full level for this long, then fading, ms.
const HOLD_MS: u32 = 10;
/// Silence after this much loss, ms.
const SILENT_MS: u32 = 60;

/// A stream's budget of costly (model-based) concealments: a token bucket
/// on the stream's own time. What is a loss is the sender's to say (a gap
/// of a few samples in its timestamps is one), and a concealment by a
/// speech model costs ~0.6 ms at the start of each loss, so a sender that
/// leaves a tiny gap before every packet would make every packet cost that;
/// beyond the budget a codec conceals the cheap way.
#[derive(Clone, Debug)]
pub struct LossBudget {
    tokens: u32,
    burst: u32,
    credit: usize,
    every: usize,
}

impl LossBudget {
    /// `burst` losses at once, and one more each `every` samples of the
    /// stream (at least one sample).
    pub fn new(burst: u32, every: usize) -> LossBudget {
        LossBudget { tokens: burst, burst, credit: 0, every: every.max(1) }
    }

    /// Samples of the stream (received or concealed) have passed.
    pub fn earn(&mut self, samples: usize) {
        self.credit += samples;
        while self.credit >= self.every {
            self.credit -= self.every;
            self.tokens = (self.tokens + 1).min(self.burst);
        }
    }

    /// A loss starts: true (and one token used) if it may be concealed the
    /// costly way.
    pub fn take(&mut self) -> bool {
        let ok = self.tokens > 0;
        self.tokens -= ok as u32;
        ok
    }

    /// Losses left now.
    pub fn left(&self) -> u32 {
        self.tokens
    }
}

/// The concealer of one stream.
#[derive(Clone)]
pub struct Plc {
    rate: u32,
    pitch_min: usize,
    pitch_max: usize,
    corr: usize,
    /// The last received samples (oldest first), `hist_len` of them valid
    /// at the end.
    hist: Vec<f32>,
    hist_len: usize,
    /// One pitch period of concealment, its wrap blended.
    period: Vec<f32>,
    pitch: usize,
    /// Position in `period` of the next concealed sample.
    at: usize,
    /// Samples concealed in the current loss (0: none).
    missing: usize,
}

impl Plc {
    /// A concealer for audio at `rate` Hz.
    pub fn new(rate: u32) -> Plc {
        let ms = |m: u32| (rate as usize * m as usize / 1000).max(1);
        let (pitch_max, corr) = (ms(PITCH_MAX_MS), ms(CORR_MS));
        let len = corr + pitch_max + pitch_max / 4 + 1;
        Plc {
            rate,
            pitch_min: ms(PITCH_MIN_MS),
            pitch_max,
            corr,
            hist: vec![0.0; len],
            hist_len: 0,
            period: vec![0.0; pitch_max],
            pitch: pitch_max,
            at: 0,
            missing: 0,
        }
    }

    /// Takes received audio (after decoding): keeps it as history and, right
    /// after a loss, blends its start with the continued concealment.
    pub fn received(&mut self, pcm: &mut [i16]) {
        if self.missing > 0 {
            // Blend over a quarter period, longer the longer the loss was.
            let extra = self.missing / (self.rate as usize / 100).max(1);
            let ola = (self.pitch / 4 + extra * self.rate as usize / 2500).min(pcm.len()).max(1);
            let g0 = self.gain(self.missing);
            for (i, x) in pcm.iter_mut().take(ola).enumerate() {
                let w = (i + 1) as f32 / (ola + 1) as f32;
                let synth = self.period[self.at] * g0;
                self.at = (self.at + 1) % self.pitch;
                *x = (synth * (1.0 - w) + *x as f32 * w).round().clamp(-32768.0, 32767.0) as i16;
            }
            self.missing = 0;
        }
        let n = self.hist.len();
        if pcm.len() >= n {
            for (h, &x) in self.hist.iter_mut().zip(&pcm[pcm.len() - n..]) {
                *h = x as f32;
            }
        } else {
            self.hist.copy_within(pcm.len().., 0);
            for (h, &x) in self.hist[n - pcm.len()..].iter_mut().zip(pcm.iter()) {
                *h = x as f32;
            }
        }
        self.hist_len = (self.hist_len + pcm.len()).min(n);
    }

    /// Level of concealment sample number `k` of a loss.
    fn gain(&self, k: usize) -> f32 {
        let ms = k as f32 * 1000.0 / self.rate as f32;
        if ms < HOLD_MS as f32 {
            1.0
        } else {
            (1.0 - (ms - HOLD_MS as f32) / (SILENT_MS - HOLD_MS) as f32).max(0.0)
        }
    }

    /// Fills `pcm` with concealment for lost audio.
    pub fn conceal(&mut self, pcm: &mut [i16]) {
        if self.missing == 0 {
            self.start();
        }
        for x in pcm.iter_mut() {
            let g = self.gain(self.missing);
            *x = if g == 0.0 || self.hist_len == 0 {
                0
            } else {
                let v = self.period[self.at] * g;
                self.at = (self.at + 1) % self.pitch;
                v.round().clamp(-32768.0, 32767.0) as i16
            };
            self.missing += 1;
        }
    }

    /// At the start of a loss: the pitch (the lag of least mean absolute
    /// difference over the last `corr` samples) and one period, its end
    /// blended into what preceded its start so that it repeats smoothly.
    fn start(&mut self) {
        let h = &self.hist;
        let n = h.len();
        let mut best = (f32::MAX, self.pitch_max);
        for p in self.pitch_min..=self.pitch_max {
            let d: f32 = (n - self.corr..n).map(|i| (h[i] - h[i - p]).abs()).sum();
            if d < best.0 {
                best = (d, p);
            }
        }
        let p = best.1;
        self.pitch = p;
        self.period[..p].copy_from_slice(&h[n - p..]);
        let ola = (p / 4).max(1);
        for i in 0..ola {
            let w = (i + 1) as f32 / (ola + 1) as f32;
            let before = h[n - p - ola + i];
            self.period[p - ola + i] = self.period[p - ola + i] * (1.0 - w) + before * w;
        }
        self.at = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voice(rate: u32, n: usize, from: usize, f0: f64) -> Vec<i16> {
        (from..from + n)
            .map(|i| {
                let t = i as f64 / rate as f64;
                let x: f64 = (1..6).map(|h| (2.0 * std::f64::consts::PI * f0 * h as f64 * t).sin() / h as f64).sum();
                (6000.0 * x) as i16
            })
            .collect()
    }

    fn snr(a: &[i16], b: &[i16]) -> f64 {
        let s: f64 = a.iter().map(|&x| (x as f64).powi(2)).sum();
        let e: f64 = a.iter().zip(b).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
        10.0 * (s / e.max(1.0)).log10()
    }

    #[test]
    fn a_lost_frame_of_voiced_audio_is_continued_in_phase() {
        for (rate, f0) in [(8000u32, 110.0), (16000, 110.0), (8000, 180.0), (16000, 95.0)] {
            let mut plc = Plc::new(rate);
            let frame = rate as usize / 50;
            for k in 0..5 {
                plc.received(&mut voice(rate, frame, k * frame, f0));
            }
            let mut lost = vec![0i16; frame / 2];
            plc.conceal(&mut lost);
            // The first 10 ms continue the periodic signal closely.
            let truth = voice(rate, frame / 2, 5 * frame, f0);
            let s = snr(&truth, &lost);
            assert!(s > 10.0, "{rate} Hz, f0 {f0}: SNR {s:.1} dB");
        }
    }

    #[test]
    fn the_loss_budget_gives_a_burst_then_one_per_period() {
        let mut b = LossBudget::new(3, 100);
        assert!(b.take() && b.take() && b.take());
        assert!(!b.take(), "the burst is spent");
        b.earn(99);
        assert!(!b.take());
        b.earn(1);
        assert!(b.take(), "one more after 100 samples");
        b.earn(10_000);
        assert_eq!(b.left(), 3, "never more than the burst");
    }

    #[test]
    fn concealment_fades_to_silence_and_recovery_is_smooth() {
        let rate = 8000;
        let mut plc = Plc::new(rate);
        plc.received(&mut voice(rate, 480, 0, 120.0));
        let mut lost = vec![0i16; 560];
        plc.conceal(&mut lost);
        let rms = |x: &[i16]| (x.iter().map(|&v| (v as f64).powi(2)).sum::<f64>() / x.len() as f64).sqrt();
        assert!(rms(&lost[..80]) > 2000.0, "full level for 10 ms");
        assert!(rms(&lost[320..400]) < rms(&lost[..80]) / 2.0, "fading");
        assert!(lost[480..].iter().all(|&v| v == 0), "silent after 60 ms");
        // Audio after a short loss: no jump at the first sample.
        let mut plc = Plc::new(rate);
        plc.received(&mut voice(rate, 480, 0, 120.0));
        let mut lost = vec![0i16; 160];
        plc.conceal(&mut lost);
        let mut back = voice(rate, 160, 640, 120.0);
        let raw0 = back[0];
        plc.received(&mut back);
        let step = (back[0] as i32 - lost[159] as i32).abs();
        assert!(step < 3000, "first sample {} after {} (unblended {raw0})", back[0], lost[159]);
        // Concealment with no history is silence.
        let mut fresh = Plc::new(16000);
        let mut out = [1i16; 100];
        fresh.conceal(&mut out);
        assert!(out.iter().all(|&v| v == 0));
    }
}
