//! A recording's audio: each party's RTP decoded by the codec plugins into
//! a WAV of its own (16-bit mono PCM), and the two mixed into one.
//!
//! Samples are placed by time, not by arrival: a track's first packet sits
//! where it arrived after the recording's start, and every later one where
//! its RTP timestamp puts it after the one before; what no packet covers
//! (loss, a pause, silence suppression, the time before a party spoke) is
//! silence. So a WAV lasts as long as the recording, and the two parties'
//! WAVs line up sample for sample, which is what the mix sums. A packet
//! that comes too late for its place (reordered behind what is written)
//! is left out: the file is written as the call goes, never rewritten.

use crate::relay::worker::Tapped;
use hound::{SampleFormat, WavSpec, WavWriter};
use srtpgate_calls::recording::{CodecInfo as Codec, LegInfo};
use srtpgate_codec::{Instance, Registry};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// Most samples one packet decodes to (120 ms at 48 kHz).
const MAX_FRAME: usize = 5760;

/// One party's audio of one stream, as it is written.
pub(super) struct Track {
    /// Where it is written until complete, and its final name.
    pub part: PathBuf,
    pub path: PathBuf,
    wav: Option<WavWriter<BufWriter<File>>>,
    /// The PCM rate of the file.
    pub rate: u32,
    /// Samples written so far.
    pub written: u64,
    /// Decoders by payload type (made on a type's first packet).
    decoders: Vec<(u8, Option<Instance>)>,
    /// The last packet placed: its SSRC, RTP timestamp, clock rate and the
    /// sample it started at.
    anchor: Option<(u32, u32, u32, u64)>,
    /// Packets left out: too late for their place, or of no codec it can
    /// decode.
    pub skipped: u64,
    /// Its file failed: it is not kept.
    pub failed: bool,
    pcm: Vec<i16>,
}

impl Track {
    /// A track written to `path` (through `part`) at `rate`.
    pub fn create(path: PathBuf, part: PathBuf, rate: u32) -> Result<Track, String> {
        let spec = WavSpec { channels: 1, sample_rate: rate, bits_per_sample: 16, sample_format: SampleFormat::Int };
        let wav = WavWriter::create(&part, spec).map_err(|e| format!("{}: {e}", part.display()))?;
        Ok(Track {
            part,
            path,
            wav: Some(wav),
            rate,
            written: 0,
            decoders: Vec::new(),
            anchor: None,
            skipped: 0,
            failed: false,
            pcm: vec![0; MAX_FRAME],
        })
    }

    /// Places one RTP packet this party sent (`t`, plain), decoded with
    /// the codec its payload type names in `leg`; `start_ns` is when the
    /// recording started. An error is the file's: the track stops.
    pub fn packet(&mut self, t: &Tapped, leg: &LegInfo, codecs: &Registry, start_ns: u64) -> Result<(), String> {
        let Some(wav) = self.wav.as_mut() else { return Ok(()) };
        let Some((pt, ssrc, ts, payload)) = rtp(&t.data) else { return Ok(()) };
        let rate = self.rate;
        let Some(codec) = leg.codecs.iter().find(|c| c.pt == pt) else {
            self.skipped += 1;
            return Ok(());
        };
        let Some(decoder) = decoder(&mut self.decoders, codec, codecs, rate) else {
            // telephone-event, comfort noise, a codec without a plugin.
            self.skipped += 1;
            return Ok(());
        };
        let arrived = (t.at_ns.saturating_sub(start_ns) as u128 * u128::from(rate) / 1_000_000_000) as i64;
        let at = match self.anchor {
            Some((s, ts0, clock, at0)) if s == ssrc => {
                let ticks = i64::from(ts.wrapping_sub(ts0) as i32);
                let by_ts = at0 as i64 + ticks * i64::from(rate) / i64::from(clock.max(1));
                // A timestamp more than 2 s off the packet's arrival (a new
                // base under the same SSRC, a forged one) is placed where it
                // arrived: no jump writes more silence than time passed,
                // and no step back leaves the rest of the call unwritten.
                if (by_ts - arrived).abs() > 2 * i64::from(rate) {
                    arrived
                } else {
                    by_ts
                }
            }
            // A new source is placed where it arrived.
            _ => arrived,
        };
        let n = decoder.decode(payload, &mut self.pcm).map_err(|e| e.to_string());
        let Ok(n) = n else {
            self.skipped += 1;
            return Ok(());
        };
        let at = at.max(0) as u64;
        let late = self.written.saturating_sub(at) as usize;
        if late >= n {
            self.skipped += 1;
            return Ok(());
        }
        for _ in self.written..at {
            wav.write_sample(0i16).map_err(|e| format!("{}: {e}", self.part.display()))?;
        }
        for &s in &self.pcm[late..n] {
            wav.write_sample(s).map_err(|e| format!("{}: {e}", self.part.display()))?;
        }
        self.written = self.written.max(at) + (n - late) as u64;
        self.anchor = Some((ssrc, ts, codec.clock_rate, at));
        Ok(())
    }

    /// Pads the track with silence to `samples` (the recording's length).
    pub fn pad_to(&mut self, samples: u64) -> Result<(), String> {
        let Some(wav) = self.wav.as_mut() else { return Ok(()) };
        for _ in self.written..samples {
            wav.write_sample(0i16).map_err(|e| format!("{}: {e}", self.part.display()))?;
        }
        self.written = self.written.max(samples);
        Ok(())
    }

    /// Completes the file (under its hidden name).
    pub fn finish(&mut self) -> Result<(), String> {
        match self.wav.take() {
            Some(w) => w.finalize().map_err(|e| format!("{}: {e}", self.part.display())),
            None => Ok(()),
        }
    }

    /// The track stops writing (its file failed).
    pub fn fail(&mut self) {
        self.wav = None;
        self.failed = true;
    }
}

/// The decoder of `codec` at `rate`, made on first use (`None`: none can
/// be made, remembered).
fn decoder<'a>(
    decoders: &'a mut Vec<(u8, Option<Instance>)>,
    codec: &Codec,
    codecs: &Registry,
    rate: u32,
) -> Option<&'a mut Instance> {
    let i = match decoders.iter().position(|(pt, _)| *pt == codec.pt) {
        Some(i) => i,
        None => {
            // Mono PCM only: the files are mono.
            let made = codecs
                .find(&codec.name, codec.clock_rate, codec.channels)
                .filter(|(p, i)| p.codecs()[*i].pcm_channels == 1)
                .and_then(|(p, i)| p.instance_for(i, None, Some(rate), srtpgate_codec::abi::USE_DECODE).ok());
            decoders.push((codec.pt, made));
            decoders.len() - 1
        }
    };
    decoders[i].1.as_mut()
}

/// The PCM rate a leg's audio is written at: its first decodable codec's
/// own, or with `other` (the other party's leg, for a mix) the rate both
/// codecs take (`None`: none can be decoded, or they share no rate).
pub(super) fn rate_of(leg: &LegInfo, other: Option<&LegInfo>, codecs: &Registry) -> Option<u32> {
    let info = |l: &LegInfo| {
        l.codecs.iter().find_map(|c| {
            let (p, i) = codecs.find(&c.name, c.clock_rate, c.channels)?;
            Some(p.codecs()[i].clone())
        })
    };
    let mine = info(leg)?;
    match other {
        None => Some(mine.pcm_rate),
        Some(o) => srtpgate_codec::common_pcm_rate(&mine, &info(o)?),
    }
}

/// An RTP packet's payload type, SSRC, timestamp and payload (after CSRCs,
/// a header extension and padding); `None` if it is not one.
fn rtp(p: &[u8]) -> Option<(u8, u32, u32, &[u8])> {
    if p.len() < 12 || p[0] >> 6 != 2 {
        return None;
    }
    let pt = p[1] & 0x7f;
    let ts = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
    let ssrc = u32::from_be_bytes([p[8], p[9], p[10], p[11]]);
    let mut head = 12 + 4 * usize::from(p[0] & 0x0f);
    if p[0] & 0x10 != 0 {
        let len = p.get(head + 2..head + 4)?;
        head += 4 + 4 * usize::from(u16::from_be_bytes([len[0], len[1]]));
    }
    let pad = if p[0] & 0x20 != 0 { usize::from(*p.last()?) } else { 0 };
    let end = p.len().checked_sub(pad)?;
    Some((pt, ssrc, ts, p.get(head..end)?))
}

/// Sums the WAVs `inputs` (same rate, aligned from their first sample) into
/// `part`, clipped to 16 bits; the samples written.
pub(super) fn mix(inputs: &[&Path], part: &Path, rate: u32) -> Result<u64, String> {
    let mut readers = Vec::new();
    for p in inputs {
        let r = hound::WavReader::open(p).map_err(|e| format!("{}: {e}", p.display()))?;
        readers.push(r.into_samples::<i16>());
    }
    let spec = WavSpec { channels: 1, sample_rate: rate, bits_per_sample: 16, sample_format: SampleFormat::Int };
    let mut w = WavWriter::create(part, spec).map_err(|e| format!("{}: {e}", part.display()))?;
    let mut n = 0u64;
    loop {
        let mut sum = 0i32;
        let mut any = false;
        for r in readers.iter_mut() {
            if let Some(s) = r.next() {
                sum += i32::from(s.map_err(|e| format!("{}: {e}", part.display()))?);
                any = true;
            }
        }
        if !any {
            break;
        }
        w.write_sample(sum.clamp(i16::MIN.into(), i16::MAX.into()) as i16)
            .map_err(|e| format!("{}: {e}", part.display()))?;
        n += 1;
    }
    w.finalize().map_err(|e| format!("{}: {e}", part.display()))?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(pt: u8, seq: u16, ts: u32, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x80, pt];
        p.extend_from_slice(&seq.to_be_bytes());
        p.extend_from_slice(&ts.to_be_bytes());
        p.extend_from_slice(&0x1234u32.to_be_bytes());
        p.extend_from_slice(payload);
        p
    }

    /// A timestamp that jumps far from the packet's arrival (forward or
    /// back) is placed where the packet arrived: a forged or rebased
    /// timestamp writes no more silence than time passed, and does not
    /// leave the rest of the call unwritten.
    #[test]
    fn timestamps_far_from_the_arrival_are_placed_at_the_arrival() {
        let dir = std::env::temp_dir().join(format!("srtpgate-track-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.wav");
        let mut t = Track::create(path.clone(), dir.join(".t.wav.part"), 8000).unwrap();
        let leg = LegInfo {
            interface: String::new(),
            local: "127.0.0.1:4000".parse().unwrap(),
            local_rtcp: "127.0.0.1:4001".parse().unwrap(),
            peer: None,
            protocol: "RTP/AVP".into(),
            suite: None,
            codecs: vec![Codec { pt: 0, name: "PCMU".into(), clock_rate: 8000, channels: 1 }],
        };
        let codecs = Registry::new();
        let start = 1_000_000_000_000u64;
        let at = |ms: u64, ts: u32| Tapped {
            call: 1,
            stream: 0,
            party: 0,
            rtcp: false,
            from: "127.0.0.1:5000".parse().unwrap(),
            at_ns: start + ms * 1_000_000,
            data: crate::relay::worker::Lent::new(packet(0, 1, ts, &[0x80; 160])),
        };
        t.packet(&at(0, 1000), &leg, &codecs, start).unwrap();
        t.packet(&at(20, 1160), &leg, &codecs, start).unwrap();
        assert_eq!(t.written, 320);
        // 2^31 - 1 ticks ahead, 20 ms later: at 40 ms.
        t.packet(&at(40, 1160u32.wrapping_add(0x7fff_ffff)), &leg, &codecs, start).unwrap();
        assert_eq!(t.written, 480, "a jump forward writes what time passed");
        // Far back, 20 ms later: at 60 ms, and the ones after it follow.
        t.packet(&at(60, 5), &leg, &codecs, start).unwrap();
        t.packet(&at(80, 165), &leg, &codecs, start).unwrap();
        assert_eq!((t.written, t.skipped), (800, 0), "a step back is not left out");
        t.finish().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rtp_headers_are_read_past_csrcs_extensions_and_padding() {
        let p = packet(8, 1, 160, &[1, 2, 3]);
        assert_eq!(rtp(&p), Some((8, 0x1234, 160, &[1u8, 2, 3][..])));
        let mut x = p.clone();
        x[0] |= 0x10;
        x.splice(12..12, [0xbe, 0xde, 0, 1, 9, 9, 9, 9]);
        assert_eq!(rtp(&x).map(|r| r.3), Some(&[1u8, 2, 3][..]));
        let mut padded = p.clone();
        padded[0] |= 0x20;
        padded.extend_from_slice(&[0, 2]);
        assert_eq!(rtp(&padded).map(|r| r.3), Some(&[1u8, 2, 3][..]));
        assert_eq!(rtp(&p[..11]), None);
        let mut bad = p;
        bad[0] = 0x8f; // 15 CSRCs that are not there
        assert_eq!(rtp(&bad), None);
    }
}
