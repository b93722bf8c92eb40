//! In-band DTMF: the host side of a plugin's detector (see
//! [`crate::abi`], `srtpgate_dtmf_detector_v1`) and a tone generator.
//!
//! A detector takes 8 kHz PCM; [`Detector`] decimates PCM of a higher rate
//! that is a multiple of 8 kHz (16, 24, 32, 48 kHz) by averaging each group
//! of samples first. DTMF lies between 697 and 1633 Hz, far below any of
//! these rates' Nyquist frequencies, so that crude low-pass is enough for
//! detection (it is never heard: the detector's input is not sent on).

use crate::abi::{self, DtmfReport};
use crate::{CodecError, Plugin};
use std::ffi::c_void;
use std::sync::Arc;

/// Samples at 8 kHz given to the plugin per call (5 ms): how precisely a
/// change is placed in time.
const CHUNK_8K: usize = 40;
/// Most changes one [`Detector::feed`] reports.
pub const MAX_REPORTS: usize = 16;

/// A change of the detected tone, placed in the PCM that was fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    /// Samples (per channel, at the PCM rate) into the slice given to
    /// [`Detector::feed`] when the detector decided.
    pub at: usize,
    /// RFC 4733 event code (0–15).
    pub event: u8,
    /// The tone began (else it ended).
    pub on: bool,
    /// Its level, dBm0 (when it began).
    pub level: i8,
}

/// A DTMF detector state of a plugin, fed PCM of one stream.
pub struct Detector {
    plugin: Arc<Plugin>,
    state: *mut c_void,
    /// PCM rate / 8000.
    factor: usize,
    /// Decimation: samples summed so far in the current group, and the sum.
    taken: usize,
    sum: i32,
    buf: [i16; CHUNK_8K],
    raw: [DtmfReport; MAX_REPORTS],
    changes: [Change; MAX_REPORTS],
}

// SAFETY: the state is used only by the thread that owns the Detector (the
// ABI allows one thread at a time), and the plugin outlives it (Arc).
unsafe impl Send for Detector {}

impl Detector {
    /// A detector of `plugin` (which has one, see
    /// [`Plugin::dtmf_detector`]) for mono PCM at `pcm_rate`.
    pub fn new(plugin: &Arc<Plugin>, pcm_rate: u32) -> Result<Detector, CodecError> {
        let err = |code| CodecError::Call { codec: "DTMF detector".into(), call: "create", code };
        let t = plugin.dtmf_table().ok_or(err(abi::ERR_UNSUPPORTED))?;
        if pcm_rate == 0 || !pcm_rate.is_multiple_of(abi::DTMF_PCM_RATE) || pcm_rate / abi::DTMF_PCM_RATE > 6 {
            return Err(err(abi::ERR_INVALID));
        }
        let mut code = 0;
        let create = t.create.expect("checked at load");
        // SAFETY: a writable error word, per the ABI.
        let state = unsafe { create(&mut code) };
        if state.is_null() {
            return Err(err(if code < 0 { code } else { abi::ERR_INTERNAL }));
        }
        let none = Change { at: 0, event: 0, on: false, level: 0 };
        Ok(Detector {
            plugin: plugin.clone(),
            state,
            factor: (pcm_rate / abi::DTMF_PCM_RATE) as usize,
            taken: 0,
            sum: 0,
            buf: [0; CHUNK_8K],
            raw: [DtmfReport::default(); MAX_REPORTS],
            changes: [none; MAX_REPORTS],
        })
    }

    /// Feeds mono PCM; returns the changes the detector decided in it, in
    /// order (at most [`MAX_REPORTS`]; more in one call are dropped, which
    /// takes a second of tones toggling every 30 ms).
    pub fn feed(&mut self, pcm: &[i16]) -> Result<&[Change], CodecError> {
        let detect = self.plugin.dtmf_table().and_then(|t| t.detect).expect("checked at load");
        let mut n_changes = 0;
        let mut i = 0;
        while i < pcm.len() {
            // Decimate up to one chunk.
            let mut n = 0;
            while i < pcm.len() && n < CHUNK_8K {
                self.sum += pcm[i] as i32;
                self.taken += 1;
                i += 1;
                if self.taken == self.factor {
                    self.buf[n] = (self.sum / self.factor as i32) as i16;
                    n += 1;
                    self.taken = 0;
                    self.sum = 0;
                }
            }
            if n == 0 {
                continue;
            }
            // SAFETY: a live state, `n` samples, room for MAX_REPORTS reports.
            let r = unsafe { detect(self.state, self.buf.as_ptr(), n, self.raw.as_mut_ptr(), MAX_REPORTS) };
            let got = usize::try_from(r).map_err(|_| CodecError::Call {
                codec: "DTMF detector".into(),
                call: "detect",
                code: r,
            })?;
            for rep in &self.raw[..got.min(MAX_REPORTS)] {
                if n_changes == MAX_REPORTS || rep.event > 15 {
                    continue;
                }
                // Input samples consumed when the detector decided.
                let back = (n - (rep.offset as usize).min(n)) * self.factor;
                self.changes[n_changes] =
                    Change { at: i.saturating_sub(back), event: rep.event, on: rep.on != 0, level: rep.level };
                n_changes += 1;
            }
        }
        Ok(&self.changes[..n_changes])
    }
}

impl Drop for Detector {
    fn drop(&mut self) {
        if let Some(f) = self.plugin.dtmf_table().and_then(|t| t.destroy) {
            // SAFETY: made by this plugin's create, destroyed once.
            unsafe { f(self.state) };
        }
    }
}

/// The share of the power of `pcm` (mono, at `rate` Hz) that lies at `hz`
/// (Goertzel): 1 for a pure tone of that frequency, near 0 without it. How
/// the tests and tools check which tone a stretch of audio carries.
pub fn power_share(pcm: &[i16], rate: u32, hz: f64) -> f64 {
    let w = 2.0 * std::f64::consts::PI * hz / rate as f64;
    let (mut s1, mut s2) = (0.0f64, 0.0f64);
    for &x in pcm {
        let s0 = x as f64 + 2.0 * w.cos() * s1 - s2;
        s2 = s1;
        s1 = s0;
    }
    let p = s1 * s1 + s2 * s2 - 2.0 * w.cos() * s1 * s2;
    let total: f64 = pcm.iter().map(|&x| (x as f64).powi(2)).sum();
    2.0 * p / (pcm.len().max(1) as f64 * total.max(1.0))
}

/// The (low, high) frequencies of RFC 4733 event `event` (0–15), Hz.
pub fn frequencies(event: u8) -> Option<(f32, f32)> {
    const LOW: [f32; 4] = [697.0, 770.0, 852.0, 941.0];
    const HIGH: [f32; 4] = [1209.0, 1336.0, 1477.0, 1633.0];
    // (row, column) of each event on the keypad.
    let (r, c) = match event {
        0 => (3, 1),
        1..=9 => ((event - 1) / 3, (event - 1) % 3),
        10 => (3, 0),
        11 => (3, 2),
        12..=15 => (event - 12, 3),
        _ => return None,
    };
    Some((LOW[r as usize], HIGH[c as usize]))
}

/// The event code of a keypad character (`0`–`9`, `*`, `#`, `A`–`D`).
pub fn event_of(digit: char) -> Option<u8> {
    match digit.to_ascii_uppercase() {
        d @ '0'..='9' => Some(d as u8 - b'0'),
        '*' => Some(10),
        '#' => Some(11),
        d @ 'A'..='D' => Some(d as u8 - b'A' + 12),
        _ => None,
    }
}

/// A digit an endpoint sent (the first RFC 4733 end packet of an event),
/// as a worker reports it for the DTMF log and the call table writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentDigit {
    /// The call (the data plane's key).
    pub call: u64,
    /// Its media stream.
    pub stream: usize,
    /// The party that sent it.
    pub party: usize,
    /// RFC 4733 event code (0–15 the keypad).
    pub event: u8,
    /// RFC 4733 volume (dB below 0 dBm0).
    pub volume: u8,
    /// Duration in RTP timestamp units.
    pub duration: u16,
    /// Its payload type (the control thread finds its clock rate).
    pub pt: u8,
    /// The endpoint's address.
    pub from: std::net::SocketAddr,
}

/// A DTMF tone pair at one PCM rate, phase-continuous across calls.
///
/// Written here, not taken from spandsp's `dtmf_tx`: it is two sine waves,
/// and the relay must generate tones without loading a plugin.
#[derive(Clone, Debug)]
pub struct ToneGen {
    rate: f32,
    event: Option<u8>,
    phase: [f32; 2],
    amp: f32,
}

impl ToneGen {
    /// A generator for PCM at `rate` Hz.
    pub fn new(rate: u32) -> ToneGen {
        ToneGen { rate: rate as f32, event: None, phase: [0.0; 2], amp: 0.0 }
    }

    /// Starts event `event` at `dbm0` per tone (RFC 4733 volume is its
    /// negative); the phase restarts when the event changes.
    pub fn start(&mut self, event: u8, dbm0: f32) {
        if self.event != Some(event) {
            self.phase = [0.0; 2];
        }
        self.event = Some(event);
        // A full-scale 16-bit sine is +3.17 dBm0 (G.711 µ-law).
        const FULL_SCALE_DBM0: f32 = 3.17;
        self.amp = 32767.0 * 10f32.powf((dbm0 - FULL_SCALE_DBM0) / 20.0);
    }

    /// Stops the tone: silence from now on.
    pub fn stop(&mut self) {
        self.event = None;
    }

    /// Writes the tone into `pcm` (mono); silence when no event is set.
    pub fn fill(&mut self, pcm: &mut [i16]) {
        let Some((lo, hi)) = self.event.and_then(frequencies) else {
            pcm.fill(0);
            return;
        };
        let tau = std::f32::consts::TAU;
        let step = [tau * lo / self.rate, tau * hi / self.rate];
        for s in pcm {
            let v = self.amp * (self.phase[0].sin() + self.phase[1].sin());
            *s = v.clamp(-32768.0, 32767.0) as i16;
            for (p, d) in self.phase.iter_mut().zip(step) {
                *p += d;
                if *p >= tau {
                    *p -= tau;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keypad_maps_to_rfc4733_events() {
        assert_eq!(event_of('0'), Some(0));
        assert_eq!(event_of('9'), Some(9));
        assert_eq!(event_of('*'), Some(10));
        assert_eq!(event_of('#'), Some(11));
        assert_eq!(event_of('d'), Some(15));
        assert_eq!(event_of('x'), None);
        assert_eq!(frequencies(1), Some((697.0, 1209.0)));
        assert_eq!(frequencies(0), Some((941.0, 1336.0)));
        assert_eq!(frequencies(11), Some((941.0, 1477.0)));
        assert_eq!(frequencies(15), Some((941.0, 1633.0)));
        assert_eq!(frequencies(16), None);
    }

    #[test]
    fn generator_writes_the_two_tones_continuously() {
        for rate in [8000u32, 16000, 48000] {
            let mut g = ToneGen::new(rate);
            g.start(5, -10.0);
            let mut x = vec![0i16; rate as usize / 10];
            // In pieces: the phase carries over.
            let (a, b) = x.split_at_mut(rate as usize / 50 + 3);
            g.fill(a);
            g.fill(b);
            let (lo, hi) = frequencies(5).unwrap();
            let (p_lo, p_hi) = (power_share(&x, rate, lo as f64), power_share(&x, rate, hi as f64));
            assert!(p_lo > 0.4 && p_hi > 0.4, "{rate} Hz: {p_lo} {p_hi}");
            assert!(power_share(&x, rate, 1000.0) < 0.01);
            // -10 dBm0 per tone: peak of each near 7200.
            let peak = x.iter().map(|v| v.unsigned_abs()).max().unwrap();
            assert!((12_000..=15_000).contains(&peak), "peak {peak}");
        }
        let mut g = ToneGen::new(8000);
        let mut x = [1i16; 80];
        g.fill(&mut x);
        assert!(x.iter().all(|&v| v == 0), "no event, silence");
    }
}
