//! Audio prompts for `play media` (rtpengine compatible): a WAV file, read
//! from disk by the daemon or sent base64 in the request, made into mono
//! 16-bit PCM at the rate of the encoder that plays it.
//!
//! The file is untrusted input: its header is checked against
//! [`PromptLimits`] before any sample is read (a header may claim 4 GiB),
//! nothing here panics on what the file says, and a data chunk cut short
//! is played as far as it goes. Resampling is done once, offline, with
//! rubato's FFT resampler (a windowed-sinc filter applied by FFT, the
//! crate's choice for fixed-ratio file conversion), its delay removed so
//! that a position in the prompt is the same time in the file.

use hound::{SampleFormat, WavReader};
use rubato::audioadapter_buffers::direct::InterleavedSlice;
use rubato::{Fft, FixedSync, Resampler, WindowFunction};
use std::io::Cursor;
use std::ops::RangeInclusive;

/// Sample rates a file may have and a prompt may be played at, Hz.
const RATES: RangeInclusive<u32> = 1000..=192_000;
/// Channels a file may have (averaged to mono).
const CHANNELS: RangeInclusive<u16> = 1..=8;

/// Limits on what a prompt may be, checked before the PCM is built.
#[derive(Clone, Copy, Debug)]
pub struct PromptLimits {
    /// Longest prompt, seconds (default an hour): bounds the memory and
    /// time one request can make the relay spend.
    pub max_seconds: u32,
    /// Largest file, bytes (default 256 MiB).
    pub max_bytes: usize,
}

impl Default for PromptLimits {
    fn default() -> Self {
        PromptLimits { max_seconds: 3600, max_bytes: 256 << 20 }
    }
}

/// Why a file cannot be a prompt. The messages are sent back in NG replies:
/// none of them quotes the file.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// Not a RIFF/WAVE file, or a malformed one (hound's reason).
    #[error("not a valid WAV file: {0}")]
    NotWav(String),
    /// A WAV of a compressed or companded format (the format tag; for
    /// WAVE_FORMAT_EXTENSIBLE, the tag of its subformat).
    #[error("WAV format {0:#06x} ({name}) is not linear PCM: only 8/16/24/32-bit integer or 32-bit float PCM can be played", name = format_name(*.0))]
    NotPcm(u16),
    /// Linear PCM, but of a sample size, channel count or rate not played.
    #[error("unsupported WAV format: {0}")]
    BadFormat(String),
    /// Longer than [`PromptLimits::max_seconds`].
    #[error("the media lasts {seconds} s, more than the {max} s allowed")]
    TooLong {
        /// Its length, seconds (rounded up).
        seconds: u64,
        /// The limit.
        max: u32,
    },
    /// Larger than [`PromptLimits::max_bytes`].
    #[error("the media is {bytes} bytes, more than the {max} allowed")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// No audio in the data chunk.
    #[error("the WAV file has no audio")]
    Empty,
    /// The rate asked for is out of 1000..=192000 Hz.
    #[error("cannot play media at {0} Hz (1000 to 192000)")]
    Rate(u32),
    /// The resampler failed (not expected with checked rates).
    #[error("resampling failed: {0}")]
    Resample(String),
}

/// Names a WAV format tag for [`PromptError::NotPcm`].
fn format_name(tag: u16) -> &'static str {
    match tag {
        0x0002 => "MS ADPCM",
        0x0003 => "IEEE float",
        0x0006 => "A-law",
        0x0007 => "µ-law",
        0x0011 => "IMA ADPCM",
        0x0031 => "GSM 6.10",
        0x0050 | 0x0055 => "MPEG",
        0x0064 | 0x0065 => "G.726",
        _ => "unknown",
    }
}

/// Mono PCM at one rate.
#[derive(Clone)]
pub struct Prompt {
    pcm: Vec<i16>,
    rate: u32,
    source_rate: u32,
}

impl std::fmt::Debug for Prompt {
    // Not the samples: a prompt may be an hour of them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Prompt({} samples at {} Hz, from {} Hz)", self.pcm.len(), self.rate, self.source_rate)
    }
}

impl Prompt {
    /// Reads a RIFF/WAVE file's bytes (integer PCM 8/16/24/32 bit, or 32-bit
    /// IEEE float; 1..=8 channels, averaged to mono; any rate 1000..=192000 Hz)
    /// and resamples it to `rate` Hz (1000..=192000) with a band-limited
    /// resampler when the rates differ (none when equal: bit-exact copy of a
    /// mono 16-bit file).
    pub fn from_wav(bytes: &[u8], rate: u32, limits: &PromptLimits) -> Result<Prompt, PromptError> {
        if !RATES.contains(&rate) {
            return Err(PromptError::Rate(rate));
        }
        if bytes.len() > limits.max_bytes {
            return Err(PromptError::TooLarge { bytes: bytes.len(), max: limits.max_bytes });
        }
        let mut h = open(bytes)?;
        let max_frames = u64::from(limits.max_seconds) * u64::from(h.rate);
        if h.frames > max_frames {
            let seconds = h.frames.div_ceil(u64::from(h.rate));
            return Err(PromptError::TooLong { seconds, max: limits.max_seconds });
        }
        // No more frames than bytes: the header's claim is bounded by them.
        let frames = usize::try_from(h.frames).unwrap_or(bytes.len());
        let mono = match h.format {
            SampleFormat::Int => {
                // To 16-bit units: 8-bit ×256, 24-bit ÷256, 32-bit ÷65536.
                let scale = 2f32.powi(16 - i32::from(h.bits));
                mix(h.reader.samples::<i32>(), h.channels, frames, |v| v as f32 * scale)?
            }
            // Full scale is ±1; beyond clips, and NaN or ∞ (which would
            // spread over a whole FFT block) is silence.
            SampleFormat::Float => mix(h.reader.samples::<f32>(), h.channels, frames, |v| {
                if v.is_finite() {
                    v.clamp(-1.0, 1.0) * 32768.0
                } else {
                    0.0
                }
            })?,
        };
        if mono.is_empty() {
            return Err(PromptError::Empty);
        }
        let mono = if h.rate == rate { mono } else { resample(&mono, h.rate, rate)? };
        // `as` saturates and makes NaN 0; the clamp says so.
        let pcm = mono.iter().map(|x| x.round().clamp(-32768.0, 32767.0) as i16).collect();
        Ok(Prompt { pcm, rate, source_rate: h.rate })
    }

    /// From PCM already at `rate` (tests, generated tones).
    pub fn from_pcm(pcm: Vec<i16>, rate: u32) -> Prompt {
        Prompt { pcm, rate, source_rate: rate }
    }

    /// The mono samples at [`rate`](Self::rate).
    pub fn samples(&self) -> &[i16] {
        &self.pcm
    }

    /// The rate of the samples, Hz (the encoder's).
    pub fn rate(&self) -> u32 {
        self.rate
    }

    /// The source file's own rate (before resampling).
    pub fn source_rate(&self) -> u32 {
        self.source_rate
    }

    /// Length in milliseconds (rounded down), as rtpengine's `duration` reply.
    pub fn duration_ms(&self) -> u64 {
        self.ms_of_position(self.pcm.len())
    }

    /// Sample position of a time in ms (clamped to the length).
    pub fn position_of_ms(&self, ms: u64) -> usize {
        let pos = ms.saturating_mul(u64::from(self.rate)) / 1000;
        usize::try_from(pos).unwrap_or(usize::MAX).min(self.pcm.len())
    }

    /// Time in ms (rounded down) of a sample position (clamped to the length).
    pub fn ms_of_position(&self, pos: usize) -> u64 {
        let pos = pos.min(self.pcm.len()) as u64;
        // A rate of 0 can only come from `from_pcm`: no division by it.
        pos.saturating_mul(1000) / u64::from(self.rate.max(1))
    }
}

/// Length of a WAV file in ms (rounded down), from its header only: what a
/// `play media` reply says before the prompt is decoded. The same format
/// checks as [`Prompt::from_wav`]; the limits are the caller's to apply.
pub fn wav_duration_ms(bytes: &[u8]) -> Result<u64, PromptError> {
    let h = open(bytes)?;
    Ok(h.frames.saturating_mul(1000) / u64::from(h.rate))
}

/// The sample rate of a WAV file, from its header only (the same checks as
/// [`Prompt::from_wav`]): what the rate of its encoder is chosen by.
pub fn wav_rate(bytes: &[u8]) -> Result<u32, PromptError> {
    Ok(open(bytes)?.rate)
}

/// A WAV file, its header checked, its reader at the first sample.
struct Wav<'a> {
    reader: WavReader<Cursor<&'a [u8]>>,
    format: SampleFormat,
    rate: u32,
    channels: usize,
    bits: u16,
    /// Frames there are: what the header says, but no more than the bytes
    /// after the data chunk's start hold (a file cut short).
    frames: u64,
}

/// Parses and checks a WAV header.
fn open(bytes: &[u8]) -> Result<Wav<'_>, PromptError> {
    let parse = || WavReader::new(Cursor::new(bytes)).map_err(|e| wav_error(e, bytes));
    let reader = parse()?;
    let spec = reader.spec();
    let bad = |why: String| Err(PromptError::BadFormat(why));
    if !CHANNELS.contains(&spec.channels) {
        return bad(format!("{} channels (1 to 8)", spec.channels));
    }
    if !RATES.contains(&spec.sample_rate) {
        return bad(format!("{} Hz (1000 to 192000)", spec.sample_rate));
    }
    let fmt = fmt_chunk(bytes);
    // hound keeps the container size to itself: it is the block's share.
    let container = fmt.map_or(spec.bits_per_sample.div_ceil(8), |f| f.block_align / spec.channels);
    match (spec.sample_format, spec.bits_per_sample, container) {
        (SampleFormat::Int, 8, 1) | (SampleFormat::Int, 16, 2) | (SampleFormat::Int, 24, 3 | 4) => {}
        (_, 32, 4) => {}
        (f, bits, size) => return bad(format!("{bits}-bit {f:?} samples in {size}-byte containers")),
    }
    let header_frames = u64::from(reader.duration());
    // hound keeps the data chunk's offset to itself too: its cursor is there.
    let data_at = reader.into_inner().position();
    let frame_bytes = u64::from(container) * u64::from(spec.channels);
    let there = (bytes.len() as u64).saturating_sub(data_at) / frame_bytes.max(1);
    let frames = header_frames.min(there);
    if frames == 0 {
        return Err(PromptError::Empty);
    }
    Ok(Wav {
        reader: parse()?,
        format: spec.sample_format,
        rate: spec.sample_rate,
        channels: usize::from(spec.channels),
        bits: spec.bits_per_sample,
        frames,
    })
}

/// Maps hound's error, naming the format tag where hound only says
/// "unsupported".
fn wav_error(e: hound::Error, bytes: &[u8]) -> PromptError {
    match e {
        hound::Error::Unsupported => match fmt_chunk(bytes) {
            Some(f) if f.tag != 1 && f.tag != 3 => PromptError::NotPcm(f.tag),
            _ => PromptError::NotWav(e.to_string()),
        },
        hound::Error::IoError(_) => PromptError::NotWav("the header is cut short".into()),
        e => PromptError::NotWav(e.to_string()),
    }
}

/// What a WAV's fmt chunk says that hound does not tell.
#[derive(Clone, Copy)]
struct Fmt {
    /// The format tag (of the subformat, for WAVE_FORMAT_EXTENSIBLE).
    tag: u16,
    /// Bytes of one frame, all channels.
    block_align: u16,
}

/// Finds the fmt chunk (before the data chunk, as hound requires).
fn fmt_chunk(bytes: &[u8]) -> Option<Fmt> {
    let u16_at = |i: usize| bytes.get(i..i.checked_add(2)?).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |i: usize| bytes.get(i..i.checked_add(4)?).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    if bytes.get(..4)? != b"RIFF" || bytes.get(8..12)? != b"WAVE" {
        return None;
    }
    let mut at = 12usize;
    loop {
        let body = at.checked_add(8)?;
        match bytes.get(at..at + 4)? {
            b"fmt " => {
                let tag = match u16_at(body)? {
                    // The subformat GUID's first two bytes are its tag.
                    0xfffe => u16_at(body.checked_add(24)?)?,
                    tag => tag,
                };
                return Some(Fmt { tag, block_align: u16_at(body.checked_add(12)?)? });
            }
            b"data" => return None,
            _ => at = body.checked_add(usize::try_from(u32_at(at + 4)?).ok()?)?,
        }
    }
}

/// Averages the channels of up to `frames` frames. A data chunk cut short
/// ends the audio there (an incomplete last frame is dropped).
fn mix<S>(
    samples: impl Iterator<Item = hound::Result<S>>,
    channels: usize,
    frames: usize,
    to_f32: impl Fn(S) -> f32,
) -> Result<Vec<f32>, PromptError> {
    let mut out = Vec::with_capacity(frames);
    let (mut sum, mut n) = (0f32, 0usize);
    for s in samples.take(frames.saturating_mul(channels)) {
        match s {
            Ok(v) => {
                sum += to_f32(v);
                n += 1;
                if n == channels {
                    out.push(sum / channels as f32);
                    (sum, n) = (0.0, 0);
                }
            }
            Err(hound::Error::IoError(_)) => break,
            Err(e) => return Err(PromptError::BadFormat(e.to_string())),
        }
    }
    Ok(out)
}

/// Resamples a whole prompt from `from` to `to` Hz: round(len·to/from)
/// samples, aligned in time with the input.
fn resample(mono: &[f32], from: u32, to: u32) -> Result<Vec<f32>, PromptError> {
    let err = |e: &dyn std::fmt::Display| PromptError::Resample(e.to_string());
    let (from, to) = (from as usize, to as usize);
    let g = gcd(from, to);
    let (min_in, min_out) = (from / g, to / g);
    // FFT blocks of at least 2048 input and 256 output samples (a cutoff
    // close to Nyquist), and of an even number of the smallest blocks: the
    // filter's delay, removed by process_all, is then a whole number of
    // samples at both rates.
    let m = 1024usize.div_ceil(min_in).max(128usize.div_ceil(min_out));
    let mut r =
        Fft::<f32>::new_custom(from, to, 2 * m * min_in, 1, 1, WindowFunction::BlackmanHarris2, FixedSync::Input)
            .map_err(|e| err(&e))?;
    let input = InterleavedSlice::new(mono, 1, mono.len()).map_err(|e| err(&e))?;
    let mut out = r.process_all(&input, mono.len(), None).map_err(|e| err(&e))?.take_data();
    // process_all gives ceil(len·ratio) in f64: the rounded length exactly.
    out.truncate(((mono.len() as u64 * to as u64 + from as u64 / 2) / from as u64) as usize);
    Ok(out)
}

/// Greatest common divisor: rates share blocks of `rate / gcd` samples.
fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use hound::{WavSpec, WavWriter};
    use std::f64::consts::PI;

    /// A WAV of `frames` frames: `f(t, channel)` in -1..1, written as `bits`
    /// (32 and `float`: IEEE float).
    fn wav(rate: u32, channels: u16, bits: u16, float: bool, frames: usize, f: impl Fn(f64, u16) -> f64) -> Vec<u8> {
        let sample_format = if float { SampleFormat::Float } else { SampleFormat::Int };
        let spec = WavSpec { channels, sample_rate: rate, bits_per_sample: bits, sample_format };
        let mut out = Cursor::new(Vec::new());
        let mut w = WavWriter::new(&mut out, spec).unwrap();
        for i in 0..frames {
            for c in 0..channels {
                let x = f(i as f64 / f64::from(rate), c);
                if float {
                    w.write_sample(x as f32).unwrap();
                } else {
                    w.write_sample((x * f64::from((1u32 << (bits - 1)) - 1)).round() as i32).unwrap();
                }
            }
        }
        w.finalize().unwrap();
        out.into_inner()
    }

    /// 1 kHz at half scale, starting at a quarter period (not at a crossing).
    fn tone(t: f64, _: u16) -> f64 {
        0.5 * (2.0 * PI * 1000.0 * t + PI / 4.0).sin()
    }

    /// Goertzel power of `freq` in `x`.
    fn power(x: &[i16], rate: u32, freq: f64) -> f64 {
        let k = 2.0 * (2.0 * PI * freq / f64::from(rate)).cos();
        let (mut s1, mut s2) = (0.0, 0.0);
        for &v in x {
            (s1, s2) = (f64::from(v) + k * s1 - s2, s1);
        }
        s1 * s1 + s2 * s2 - k * s1 * s2
    }

    fn rms(x: &[i16]) -> f64 {
        (x.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>() / x.len() as f64).sqrt()
    }

    /// Time (s) of the first downward zero crossing after 5 ms, interpolated.
    fn crossing(x: &[i16], rate: u32) -> f64 {
        let from = rate as usize / 200;
        let i = (from..x.len() - 1).find(|&i| x[i] > 0 && x[i + 1] <= 0).expect("a crossing");
        let (a, b) = (f64::from(x[i]), f64::from(x[i + 1]));
        (i as f64 + a / (a - b)) / f64::from(rate)
    }

    #[test]
    fn prompt_mono_16_bit_at_its_rate_is_bit_exact() {
        let bytes = wav(8000, 1, 16, false, 8004, |t, _| 0.9 * (t * 1234.5).sin());
        let src: Vec<i16> = WavReader::new(Cursor::new(&bytes[..])).unwrap().samples().map(Result::unwrap).collect();
        let p = Prompt::from_wav(&bytes, 8000, &PromptLimits::default()).unwrap();
        assert_eq!(p.samples(), &src[..]);
        assert_eq!((p.rate(), p.source_rate(), p.duration_ms()), (8000, 8000, 1000));
        assert_eq!(wav_duration_ms(&bytes).unwrap(), 1000);
        assert_eq!((p.position_of_ms(500), p.position_of_ms(5000), p.ms_of_position(7999)), (4000, 8004, 999));
    }

    #[test]
    fn prompt_resampled_tone_keeps_pitch_level_and_timing() {
        let bytes = wav(44100, 2, 16, false, 44100, tone);
        let input = Prompt::from_wav(&bytes, 44100, &PromptLimits::default()).unwrap();
        for rate in [8000, 48000] {
            let p = Prompt::from_wav(&bytes, rate, &PromptLimits::default()).unwrap();
            assert_eq!((p.rate(), p.source_rate()), (rate, 44100));
            assert_eq!(p.samples().len(), rate as usize, "one second");
            let x = p.samples();
            let mid = &x[x.len() / 10..x.len() * 9 / 10];
            let at_1k = power(mid, rate, 1000.0);
            for other in [500.0, 1500.0, 2000.0, 3000.0, 3900.0] {
                assert!(at_1k > 1e4 * power(mid, rate, other), "{rate} Hz: 1 kHz vs {other} Hz");
            }
            let db = 20.0 * (rms(mid) / rms(input.samples())).log10();
            assert!(db.abs() < 1.0, "{rate} Hz: level {db:.2} dB");
            let lag = crossing(x, rate) - crossing(input.samples(), 44100);
            assert!(lag.abs() < 50e-6, "{rate} Hz: {:.1} µs late", lag * 1e6);
        }
    }

    #[test]
    fn prompt_sample_formats_decode_to_the_same_tone() {
        let limits = PromptLimits::default();
        let reference = Prompt::from_wav(&wav(16000, 1, 16, false, 1600, tone), 16000, &limits).unwrap();
        let cases = [(8, false, 130), (24, false, 1), (32, false, 1), (32, true, 1)];
        for (bits, float, tolerance) in cases {
            // Stereo, both channels the tone: the average is the tone.
            let p = Prompt::from_wav(&wav(16000, 2, bits, float, 1600, tone), 16000, &limits).unwrap();
            assert_eq!(p.samples().len(), 1600);
            let worst = p.samples().iter().zip(reference.samples()).map(|(a, b)| a.abs_diff(*b)).max();
            assert!(worst <= Some(tolerance), "{bits} bits (float {float}): off by {worst:?}");
        }
        // Channels are averaged, not the first one taken.
        let half = wav(16000, 2, 16, false, 1600, |t, c| if c == 0 { tone(t, c) } else { 0.0 });
        let p = Prompt::from_wav(&half, 16000, &limits).unwrap();
        let db = 20.0 * (rms(p.samples()) / rms(reference.samples())).log10();
        assert!((db + 6.02).abs() < 0.1, "one silent channel of two: {db:.2} dB");
        // 24-bit samples in 4-byte containers.
        let spec = WavSpec { channels: 1, sample_rate: 16000, bits_per_sample: 24, sample_format: SampleFormat::Int };
        let mut out = Cursor::new(Vec::new());
        let mut w = WavWriter::new_with_spec_ex(&mut out, hound::WavSpecEx { spec, bytes_per_sample: 4 }).unwrap();
        for i in 0..1600 {
            w.write_sample((tone(f64::from(i) / 16000.0, 0) * 8_388_607.0).round() as i32).unwrap();
        }
        w.finalize().unwrap();
        let bytes = out.into_inner();
        let p = Prompt::from_wav(&bytes, 16000, &limits).unwrap();
        assert!(p.samples().iter().zip(reference.samples()).all(|(a, b)| a.abs_diff(*b) <= 1));
        assert_eq!(wav_duration_ms(&bytes).unwrap(), 100);
    }

    /// A header by hand: `fmt` is the fmt chunk's body.
    fn raw_wav(fmt: &[u8], data: &[u8]) -> Vec<u8> {
        let mut b = b"RIFF\0\0\0\0WAVEfmt ".to_vec();
        b.extend_from_slice(&(fmt.len() as u32).to_le_bytes());
        b.extend_from_slice(fmt);
        b.extend_from_slice(b"data");
        b.extend_from_slice(&(data.len() as u32).to_le_bytes());
        b.extend_from_slice(data);
        let riff = (b.len() - 8) as u32;
        b[4..8].copy_from_slice(&riff.to_le_bytes());
        b
    }

    #[test]
    fn prompt_errors_are_reported_not_panicked() {
        use PromptError as E;
        let ok = PromptLimits::default();
        let check = |bytes: &[u8], limits: &PromptLimits| Prompt::from_wav(bytes, 8000, limits).unwrap_err();
        assert!(matches!(check(b"", &ok), E::NotWav(_)));
        let random: Vec<u8> = (0..1000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let e = check(&random, &ok);
        assert!(matches!(e, E::NotWav(_)) && e.to_string().contains("RIFF"), "{e}");
        // A-law, as a plain tag and as WAVE_FORMAT_EXTENSIBLE's subformat.
        let alaw = raw_wav(&[6, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x40, 0x1f, 0, 0, 1, 0, 8, 0, 0, 0], &[0xd5; 80]);
        let e = check(&alaw, &ok);
        assert!(matches!(e, E::NotPcm(6)) && e.to_string().contains("A-law"), "{e}");
        assert!(matches!(wav_duration_ms(&alaw), Err(E::NotPcm(6))));
        let mut ext = vec![0xfe, 0xff, 1, 0, 0x40, 0x1f, 0, 0, 0x40, 0x1f, 0, 0, 1, 0, 8, 0, 22, 0, 8, 0, 4, 0, 0, 0];
        ext.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71]);
        assert!(matches!(check(&raw_wav(&ext, &[0xff; 80]), &ok), E::NotPcm(7)));
        assert!(matches!(check(&wav(8000, 1, 16, false, 0, tone), &ok), E::Empty));
        assert!(matches!(wav_duration_ms(&wav(8000, 1, 16, false, 0, tone)), Err(E::Empty)));
        let e = check(&wav(8000, 9, 16, false, 100, tone), &ok);
        assert!(matches!(e, E::BadFormat(_)) && e.to_string().contains("9 channels"), "{e}");
        assert!(matches!(check(&wav(500, 1, 16, false, 100, tone), &ok), E::BadFormat(_)));
        let two_s = wav(8000, 1, 16, false, 16000, tone);
        let e = check(&two_s, &PromptLimits { max_seconds: 1, ..ok });
        assert!(matches!(e, E::TooLong { seconds: 2, max: 1 }), "{e}");
        let e = check(&two_s, &PromptLimits { max_bytes: 1000, ..ok });
        assert!(matches!(e, E::TooLarge { bytes: 32044, max: 1000 }), "{e}");
        for rate in [0, 999, 192_001] {
            assert!(matches!(Prompt::from_wav(&two_s, rate, &ok), Err(E::Rate(r)) if r == rate));
        }
        // A header that claims 2 GiB of data (as streaming writers leave
        // it) is bounded by the bytes there.
        let mut huge = wav(8000, 1, 16, false, 800, tone);
        huge[40..44].copy_from_slice(&0x7fff_f000u32.to_le_bytes());
        assert_eq!(wav_duration_ms(&huge).unwrap(), 100);
        assert_eq!(Prompt::from_wav(&huge, 8000, &ok).unwrap().samples().len(), 800);
    }

    #[test]
    fn prompt_truncated_and_corrupted_files_never_panic() {
        let bytes = wav(16000, 2, 16, false, 200, tone);
        let limits = PromptLimits::default();
        for len in 0..=bytes.len() {
            let cut = &bytes[..len];
            let p = Prompt::from_wav(cut, 8000, &limits);
            let d = wav_duration_ms(cut);
            // Cut inside the data: what is there plays.
            let frames = len.saturating_sub(44) / 4;
            if frames > 0 {
                let p = p.unwrap();
                assert!(p.samples().len().abs_diff(frames / 2) <= 1, "{len} bytes: {p:?}");
                assert_eq!(d.unwrap(), frames as u64 * 1000 / 16000);
            } else {
                assert!(p.is_err() && d.is_err(), "{len} bytes");
            }
        }
        let mut seed = 1u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (seed >> 8) as usize
        };
        for i in 0..3000 {
            let mut b = bytes.clone();
            // Mostly in the header, where the lengths and formats are.
            for _ in 0..1 + i % 3 {
                let at = if i % 4 == 0 { next() % b.len() } else { next() % 48 };
                b[at] ^= 1 << (next() % 8);
            }
            let _ = Prompt::from_wav(&b, 8000, &limits);
            let _ = wav_duration_ms(&b);
        }
    }
}
