//! What the relay may do to an RTP payload without decoding it: tell an
//! RFC 4733 event from audio by its payload type, and replace audio with
//! its codec's silence (`silence media`).
//!
//! Only codecs whose silence can be written without an encoder's state
//! are silenced in place: the sample codecs (G.711 as one byte per
//! sample, G.722 as one byte per two samples, as rtpengine does) and Opus
//! (a CELT frame that decodes to silence, repeated for the packet's
//! duration). Other codecs' packets pass unchanged; the control plane
//! says so in its reply.

/// What a payload type carries, as the relay needs to know it per packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PayloadKind {
    /// A codec the relay knows nothing of, or no payload type.
    #[default]
    Other,
    /// RFC 4733 `telephone-event`.
    Event,
    /// RFC 3389 comfort noise.
    ComfortNoise,
    /// A sample codec whose silence is this byte repeated (PCMU `0xff`,
    /// PCMA `0xd5`, G.722 `0xfa`).
    Fill(u8),
    /// Opus (RFC 7587).
    Opus,
}

impl PayloadKind {
    /// The kind of an `a=rtpmap` encoding name (case-insensitive).
    pub fn of(name: &str) -> PayloadKind {
        match name.to_ascii_uppercase().as_str() {
            "TELEPHONE-EVENT" => PayloadKind::Event,
            "CN" => PayloadKind::ComfortNoise,
            "PCMU" => PayloadKind::Fill(0xff),
            "PCMA" => PayloadKind::Fill(0xd5),
            "G722" => PayloadKind::Fill(0xfa),
            "OPUS" => PayloadKind::Opus,
            _ => PayloadKind::Other,
        }
    }

    /// Whether [`silence`] can silence this kind.
    pub fn silenceable(self) -> bool {
        matches!(self, PayloadKind::Fill(_) | PayloadKind::Opus)
    }
}

/// A kind and an RTP clock rate for each of the 128 payload types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PayloadKinds {
    kinds: [PayloadKind; 128],
    /// Hz; 0 where not known.
    clocks: [u32; 128],
}

impl Default for PayloadKinds {
    fn default() -> PayloadKinds {
        PayloadKinds { kinds: [PayloadKind::Other; 128], clocks: [0; 128] }
    }
}

impl PayloadKinds {
    /// The kinds and clock rates of these (payload type, encoding name,
    /// clock rate) formats; others are [`PayloadKind::Other`] at 0 Hz.
    pub fn from_formats<'a>(pts: impl IntoIterator<Item = (u8, &'a str, u32)>) -> PayloadKinds {
        let mut k = PayloadKinds::default();
        for (pt, name, clock) in pts {
            if let Some(slot) = k.kinds.get_mut(pt as usize) {
                *slot = PayloadKind::of(name);
                k.clocks[pt as usize] = clock;
            }
        }
        k
    }

    /// The kind of payload type `pt` (the 7 low bits).
    #[inline]
    pub fn get(&self, pt: u8) -> PayloadKind {
        self.kinds[(pt & 0x7f) as usize]
    }

    /// The RTP clock rate of payload type `pt` in Hz (0: not known).
    #[inline]
    pub fn clock(&self, pt: u8) -> u32 {
        self.clocks[(pt & 0x7f) as usize]
    }

    /// The payload types of kind `kind`.
    pub fn of_kind(&self, kind: PayloadKind) -> impl Iterator<Item = u8> + '_ {
        (0..128u8).filter(move |&pt| self.kinds[pt as usize] == kind)
    }
}

/// A 20 ms CELT-only fullband Opus frame that decodes to silence (the
/// frame WebRTC stacks send when muted): its TOC byte, then the frame.
const OPUS_SILENT_FRAME: [u8; 2] = [0xff, 0xfe];
/// TOC of one 20 ms CELT fullband mono frame (config 31, code 0).
const OPUS_TOC_20MS: u8 = 31 << 3;

/// Samples at 48 kHz of an Opus packet (RFC 6716 §3.1), or `None` when
/// its TOC or frame count byte is malformed.
pub fn opus_samples(packet: &[u8]) -> Option<u32> {
    let toc = *packet.first()?;
    let config = toc >> 3;
    // Frame length in 48 kHz samples by configuration (SILK, hybrid, CELT).
    let per_frame: u32 = match config {
        0..=11 => [480, 960, 1920, 2880][(config % 4) as usize],
        12..=15 => [480, 960][(config % 2) as usize],
        _ => [120, 240, 480, 960][(config % 4) as usize],
    };
    let frames = match toc & 3 {
        0 => 1,
        1 | 2 => 2,
        _ => (*packet.get(1)? & 0x3f) as u32,
    };
    let n = per_frame * frames;
    // RFC 6716: a packet holds at most 120 ms.
    (frames > 0 && n <= 5760).then_some(n)
}

/// Writes `kind`'s silence over `payload` (the RTP payload, padding not
/// included) and returns its new length: the same for sample codecs, the
/// length of the silent Opus packet of the same duration (which is never
/// longer than the packet it replaces, unless that was a 1- or 2-byte DTX
/// frame, which is kept). `None`: not silenced (another kind, or an Opus
/// packet whose duration is not whole 20 ms frames and not 10 ms or less).
pub fn silence(kind: PayloadKind, payload: &mut [u8]) -> Option<usize> {
    match kind {
        PayloadKind::Fill(b) => {
            payload.fill(b);
            Some(payload.len())
        }
        PayloadKind::Opus => {
            let samples = opus_samples(payload)?;
            let frames = (samples / 960) as usize;
            let silent = match (samples % 960, frames) {
                // One frame: config 28..=31 by its length (2.5 to 20 ms).
                (0, 1) => [OPUS_TOC_20MS].len() + OPUS_SILENT_FRAME.len(),
                (0, _) => 2 + frames * OPUS_SILENT_FRAME.len(),
                (120 | 240 | 480, 0) => 1 + OPUS_SILENT_FRAME.len(),
                _ => return None,
            };
            if silent > payload.len() {
                return None;
            }
            match (samples % 960, frames) {
                (0, 1) => payload[0] = OPUS_TOC_20MS,
                (0, _) => {
                    // Code 3, constant bit rate: `frames` frames of equal size.
                    payload[0] = OPUS_TOC_20MS | 3;
                    payload[1] = frames as u8;
                }
                (short, _) => {
                    // CELT fullband configs 28, 29, 30: 2.5, 5, 10 ms.
                    let config = 28 + short.trailing_zeros() as u8 - 3;
                    payload[0] = config << 3;
                }
            }
            let head = silent - frames.max(1) * OPUS_SILENT_FRAME.len();
            for f in payload[head..silent].chunks_exact_mut(2) {
                f.copy_from_slice(&OPUS_SILENT_FRAME);
            }
            Some(silent)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name() {
        let k = PayloadKinds::from_formats([
            (0, "PCMU", 8000),
            (8, "pcma", 8000),
            (101, "telephone-event", 8000),
            (111, "opus", 48000),
            (13, "CN", 8000),
        ]);
        assert_eq!(k.get(0), PayloadKind::Fill(0xff));
        assert_eq!(k.get(8), PayloadKind::Fill(0xd5));
        assert_eq!(k.get(101), PayloadKind::Event);
        assert_eq!(k.get(101 | 0x80), PayloadKind::Event);
        assert_eq!(k.get(111), PayloadKind::Opus);
        assert_eq!(k.get(13), PayloadKind::ComfortNoise);
        assert_eq!(k.get(9), PayloadKind::Other);
        assert_eq!(k.of_kind(PayloadKind::Event).collect::<Vec<_>>(), vec![101]);
        assert_eq!((k.clock(111), k.clock(0), k.clock(9)), (48_000, 8000, 0));
    }

    #[test]
    fn opus_durations() {
        // 20 ms CELT FB, 60 ms SILK WB (code 0), two 10 ms frames, code 3 × 3 of 20 ms.
        assert_eq!(opus_samples(&[31 << 3, 1, 2]), Some(960));
        assert_eq!(opus_samples(&[7 << 3, 1]), Some(2880));
        assert_eq!(opus_samples(&[(30 << 3) | 1, 1, 1]), Some(960));
        assert_eq!(opus_samples(&[(31 << 3) | 3, 3, 0]), Some(2880));
        // Code 3 with no frames, or over 120 ms: malformed.
        assert_eq!(opus_samples(&[(31 << 3) | 3, 0]), None);
        assert_eq!(opus_samples(&[(3 << 3) | 3, 3]), None);
        assert_eq!(opus_samples(&[]), None);
    }

    #[test]
    fn sample_codecs_are_filled() {
        let mut p = [1u8; 160];
        assert_eq!(silence(PayloadKind::Fill(0xd5), &mut p), Some(160));
        assert!(p.iter().all(|&b| b == 0xd5));
        assert_eq!(silence(PayloadKind::Other, &mut p), None);
        assert_eq!(silence(PayloadKind::Event, &mut p), None);
    }

    #[test]
    fn opus_silence_keeps_the_duration() {
        for (mut pkt, samples) in [
            (vec![31 << 3; 80], 960),
            (vec![7 << 3; 120], 2880),
            (vec![(31 << 3) | 3, 2, 0, 0, 0, 0, 0, 0], 1920),
            (vec![30 << 3; 40], 480),
        ] {
            let n = silence(PayloadKind::Opus, &mut pkt).expect("silenced");
            assert_eq!(opus_samples(&pkt[..n]), Some(samples), "{:?}", &pkt[..n]);
            assert!(pkt[..n].ends_with(&OPUS_SILENT_FRAME));
        }
        // A 2-byte DTX packet stays as it is.
        let mut dtx = [31 << 3, 0];
        assert_eq!(silence(PayloadKind::Opus, &mut dtx), None);
    }
}
