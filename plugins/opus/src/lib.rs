//! A codec plugin on the system's libopus (Debian `libopus0`, BSD-3-Clause,
//! linked dynamically through `opusic-sys`): Opus (RFC 6716, RTP payload
//! RFC 7587: `opus/48000/2`, mono PCM).
//!
//! - **PCM rate**: the RTP clock is always 48000, but libopus codes PCM at
//!   8, 12, 16, 24 or 48 kHz natively. A state is created at the rate of the
//!   other leg's codec (8 kHz beside G.711 or G.729, 16 kHz beside G.722), so
//!   the relay resamples nothing and Opus codes only the band the other leg
//!   has.
//! - **Loss**: `recover` decodes the in-band FEC (LBRR) of the packet after
//!   a loss for the lost frame before it, so a single loss costs no holding
//!   and little quality; the rest of a loss is concealed. A 16 kHz decoder
//!   (beside G.722) conceals by default with libopus 1.6.1's neural PLC
//!   (`srtpgate-opus-plc-sys`: a speech model predicts the lost 10 ms
//!   frames, a vocoder renders them, 5 ms cross-fade into the next audio;
//!   libopus 1.3's own concealment runs unheard to keep the decoder's state
//!   going), within a per-stream budget of neural losses; with
//!   `SRTPGATE_CTL_PLC` = classic, and at the other rates, it is libopus's
//!   own concealment (the system's libopus 1.3 has no neural one).
//! - **Encoder**: VoIP application, voice signal; in-band FEC on when the
//!   receiver's fmtp says `useinbandfec=1`; `maxaveragebitrate` caps the
//!   bit rate; `usedtx=1` enables DTX; `SRTPGATE_CTL_PACKET_LOSS` sets the
//!   expected loss (what FEC is sized for), `SRTPGATE_CTL_COMPLEXITY` and
//!   `SRTPGATE_CTL_BITRATE` the rest. Default complexity: 5 (set by the
//!   relay's `opus_complexity`, see docs/OPERATIONS.md).

use opusic_sys as sys;
use srtpgate_codec::abi::{self, pcm_rate_bit, CodecDesc, PluginTable, StaticCodecs};
use srtpgate_codec::kit::{Codec, Setup};
use srtpgate_opus_plc_sys::stream::{Loss, Stream};
use std::ffi::c_int;

/// The PCM rate of the neural concealment's model.
const NEURAL_RATE: i32 = 16000;

/// Complexity when the relay sets none.
pub const DEFAULT_COMPLEXITY: i32 = 5;

static CODECS: StaticCodecs<1> = StaticCodecs([CodecDesc {
    name: c"opus".as_ptr(),
    clock_rate: 48000,
    channels: 2,
    pcm_channels: 1,
    pcm_rate: 48000,
    pcm_rates: pcm_rate_bit(8000) | pcm_rate_bit(12000) | pcm_rate_bit(16000) | pcm_rate_bit(24000),
    frame_samples: 960,
    // 120 ms at most (RFC 6716 §3.2.5), 1275 bytes a frame.
    max_frame_bytes: 6 * 1275,
    static_pt: -1,
    fmtp: c"minptime=10;useinbandfec=1".as_ptr(),
    flags: abi::CODEC_FEC,
}]);

srtpgate_codec::plugin_table!(static TABLE: c"opus", c"2.0.0", CODECS, make);

/// The plugin's entry point.
#[no_mangle]
pub extern "C" fn srtpgate_codec_plugin_v2() -> *const PluginTable {
    &TABLE.0
}

struct Opus {
    enc: *mut sys::OpusEncoder,
    dec: Dec,
    /// A 16 kHz decoder's neural concealment (None: libopus's own).
    neural: Option<Stream>,
}

/// A decoder (null in an encode-only state) at its PCM rate.
struct Dec {
    ptr: *mut sys::OpusDecoder,
    rate: i32,
}

// SAFETY: libopus states are plain memory owned by this value, used by the
// thread that holds it.
unsafe impl Send for Opus {}

fn make(s: &Setup<'_>) -> Result<Box<dyn Codec>, i32> {
    if s.codec != 0 {
        return Err(abi::ERR_INVALID);
    }
    let rate = match s.pcm_rate {
        r @ (8000 | 12000 | 16000 | 24000 | 48000) => r as i32,
        _ => return Err(abi::ERR_INVALID),
    };
    let mut o = Opus { enc: std::ptr::null_mut(), dec: Dec { ptr: std::ptr::null_mut(), rate }, neural: None };
    let mut err: c_int = 0;
    if s.decodes() {
        // SAFETY: libopus allocates the state; checked for null and freed by Drop.
        o.dec.ptr = unsafe { sys::opus_decoder_create(rate, 1, &mut err) };
        if o.dec.ptr.is_null() || err != sys::OPUS_OK {
            return Err(abi::ERR_INTERNAL);
        }
        if rate == NEURAL_RATE {
            // Neural by default; libopus's own where its memory cannot be had.
            o.neural = Stream::new();
        }
    }
    if s.encodes() {
        // SAFETY: as above.
        o.enc = unsafe { sys::opus_encoder_create(rate, 1, sys::OPUS_APPLICATION_VOIP, &mut err) };
        if o.enc.is_null() || err != sys::OPUS_OK {
            return Err(abi::ERR_INTERNAL);
        }
        let flag = |name| s.fmtp_param(name).is_some_and(|v| v == "1");
        o.ctl(sys::OPUS_SET_SIGNAL_REQUEST, sys::OPUS_SIGNAL_VOICE)?;
        o.ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, DEFAULT_COMPLEXITY)?;
        o.ctl(sys::OPUS_SET_INBAND_FEC_REQUEST, flag("useinbandfec") as i32)?;
        o.ctl(sys::OPUS_SET_DTX_REQUEST, flag("usedtx") as i32)?;
        if let Some(max) = s.fmtp_param("maxaveragebitrate").and_then(|v| v.parse::<i32>().ok()) {
            o.ctl(sys::OPUS_SET_BITRATE_REQUEST, max.clamp(6000, 510_000))?;
        }
    }
    Ok(Box::new(o))
}

impl Opus {
    /// An encoder setting.
    fn ctl(&mut self, request: c_int, value: i32) -> Result<(), i32> {
        if self.enc.is_null() {
            return Err(abi::ERR_INVALID);
        }
        // SAFETY: a live encoder; the requests used take one int.
        let r = unsafe { sys::opus_encoder_ctl(self.enc, request, value as c_int) };
        if r == sys::OPUS_OK {
            Ok(())
        } else {
            Err(abi::ERR_INVALID)
        }
    }

    /// `SRTPGATE_CTL_PLC` on a 16 kHz decoder: the concealment kind,
    /// switched between losses (a new neural one starts with an empty
    /// history).
    fn set_plc(&mut self, value: i32) -> Result<(), i32> {
        if self.dec.ptr.is_null() || self.dec.rate != NEURAL_RATE {
            return Err(abi::ERR_UNSUPPORTED);
        }
        match value {
            abi::PLC_CLASSIC => self.neural = None,
            abi::PLC_NEURAL if self.neural.is_none() => self.neural = Some(Stream::new().ok_or(abi::ERR_INTERNAL)?),
            abi::PLC_NEURAL => {}
            _ => return Err(abi::ERR_INVALID),
        }
        Ok(())
    }
}

impl Dec {
    /// Decodes `data` (null: concealment) with `fec` into `pcm`, whose
    /// length is a whole number of 2.5 ms.
    fn run(&mut self, data: Option<&[u8]>, pcm: &mut [i16], fec: bool) -> Result<usize, i32> {
        if self.ptr.is_null() {
            return Err(abi::ERR_INVALID);
        }
        let (p, n) = data.map_or((std::ptr::null(), 0), |d| (d.as_ptr(), d.len()));
        let n = i32::try_from(n).map_err(|_| abi::ERR_INVALID)?;
        let cap = i32::try_from(pcm.len()).map_err(|_| abi::ERR_INVALID)?;
        // SAFETY: a live decoder; `pcm` holds `cap` samples (mono).
        let r = unsafe { sys::opus_decode(self.ptr, p, n, pcm.as_mut_ptr(), cap, fec as c_int) };
        usize::try_from(r).map_err(|_| if r == sys::OPUS_BUFFER_TOO_SMALL { abi::ERR_SPACE } else { abi::ERR_INVALID })
    }

    /// Samples of 2.5 ms.
    fn quantum(&self) -> usize {
        self.rate as usize / 400
    }

    /// libopus's concealment into `pcm`, in steps of at most 20 ms; what is
    /// not a whole 2.5 ms at the end is not written.
    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32> {
        let q = self.quantum();
        let whole = pcm.len() / q * q;
        let mut at = 0;
        while at < whole {
            let k = (whole - at).min(8 * q);
            at += self.run(None, &mut pcm[at..at + k], false)?;
        }
        Ok(at)
    }

    /// libopus's concealment for `samples`, played by no one: the
    /// decoder's state goes on through the loss (the neural concealment
    /// plays instead), so that it decodes the next packet as after a loss.
    fn advance(&mut self, samples: usize) -> Result<(), i32> {
        let mut scratch = [0i16; 960];
        let q = self.quantum();
        let mut left = samples / q * q;
        while left > 0 {
            let k = left.min(scratch.len() / q * q);
            self.conceal(&mut scratch[..k])?;
            left -= k;
        }
        Ok(())
    }

    /// Samples of `packet`'s frame whose in-band FEC (LBRR) it carries for
    /// the frame before it, or 0 where it carries none.
    fn fec_samples(&self, packet: &[u8]) -> usize {
        if !has_lbrr(packet) {
            return 0;
        }
        // SAFETY: reads the packet's TOC byte (has_lbrr: not empty).
        let n = unsafe { sys::opus_packet_get_samples_per_frame(packet.as_ptr(), self.rate) };
        usize::try_from(n).unwrap_or(0)
    }
}

/// Whether an Opus packet carries in-band FEC (SILK's LBRR) for the frame
/// before it. libopus 1.5 has this as `opus_packet_has_lbrr`; the system's
/// libopus 1.3 does not, so it is done here the same way: in a SILK or
/// hybrid packet the first frame's range-coded bits start with one voice
/// activity flag per 20 ms SILK frame and then the LBRR flag (per channel),
/// each coded with probability 1/2, i.e. as the top bits of its first byte.
fn has_lbrr(packet: &[u8]) -> bool {
    let Some(&toc) = packet.first() else {
        return false;
    };
    let Ok(len) = i32::try_from(packet.len()) else {
        return false;
    };
    if toc & 0x80 != 0 {
        // CELT only: no SILK layer.
        return false;
    }
    // SAFETY: reads the TOC byte of a non-empty packet.
    let frame = unsafe { sys::opus_packet_get_samples_per_frame(packet.as_ptr(), 48000) };
    let silk_frames = if frame > 960 { frame / 960 } else { 1 };
    let mut frames = [std::ptr::null::<u8>(); 48];
    let mut sizes = [0i16; 48];
    // SAFETY: `len` bytes readable; 48 entries is the most libopus writes.
    let n = unsafe {
        sys::opus_packet_parse(
            packet.as_ptr(),
            len,
            std::ptr::null_mut(),
            frames.as_mut_ptr(),
            sizes.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    if n <= 0 || sizes[0] <= 0 || frames[0].is_null() {
        return false;
    }
    // SAFETY: libopus points frames[0] into `packet`, sizes[0] > 0 bytes.
    let first = unsafe { *frames[0] };
    let mut lbrr = (first >> (7 - silk_frames)) & 1;
    if toc & 0x04 != 0 {
        lbrr |= (first >> (6 - 2 * silk_frames)) & 1;
    }
    lbrr != 0
}

impl Codec for Opus {
    fn decode(&mut self, input: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        if input.is_empty() {
            return Err(abi::ERR_INVALID);
        }
        let len = i32::try_from(input.len()).map_err(|_| abi::ERR_INVALID)?;
        // SAFETY: reads `len` bytes of the packet's TOC and frame counts.
        let n = unsafe { sys::opus_packet_get_nb_samples(input.as_ptr(), len, self.dec.rate) };
        let n = usize::try_from(n).map_err(|_| abi::ERR_INVALID)?;
        if n > pcm.len() {
            return Err(abi::ERR_SPACE);
        }
        let n = self.dec.run(Some(input), &mut pcm[..n], false)?;
        if let Some(s) = self.neural.as_mut() {
            // After a neural loss: cross-faded from its continuation.
            s.received(&mut pcm[..n]);
        }
        Ok(n)
    }

    fn encode(&mut self, pcm: &[i16], out: &mut [u8]) -> Result<usize, i32> {
        if self.enc.is_null() {
            return Err(abi::ERR_INVALID);
        }
        let frame = i32::try_from(pcm.len()).map_err(|_| abi::ERR_INVALID)?;
        let cap = i32::try_from(out.len().min(1275 * 6)).map_err(|_| abi::ERR_INVALID)?;
        // SAFETY: a live encoder; `pcm` holds `frame` samples and `out` `cap` bytes.
        let r = unsafe { sys::opus_encode(self.enc, pcm.as_ptr(), frame, out.as_mut_ptr(), cap) };
        usize::try_from(r).map_err(|_| if r == sys::OPUS_BUFFER_TOO_SMALL { abi::ERR_SPACE } else { abi::ERR_INVALID })
    }

    /// At 16 kHz the neural concealment (libopus's own runs unheard to keep
    /// the decoder's state going), or libopus's beyond the stream's budget
    /// of neural losses; otherwise libopus's, where what is not a whole
    /// 2.5 ms at the end is left to the host (silence).
    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32> {
        if self.dec.ptr.is_null() {
            return Err(abi::ERR_INVALID);
        }
        let Some(s) = self.neural.as_mut() else {
            return self.dec.conceal(pcm);
        };
        match s.conceal(pcm) {
            None => Ok(0),
            Some(Loss::Neural) => {
                self.dec.advance(pcm.len())?;
                Ok(pcm.len())
            }
            Some(Loss::Classic) => {
                let n = self.dec.conceal(pcm)?;
                pcm[n..].fill(0);
                s.keep(pcm);
                Ok(pcm.len())
            }
        }
    }

    /// The lost audio before `next`: concealment up to the last frame (of
    /// `next`'s frame size, which its FEC covers), then that frame decoded
    /// from `next`'s in-band FEC. At 16 kHz a packet without FEC leaves the
    /// whole of it to the neural concealment (libopus would conceal the
    /// last frame its own way).
    fn recover(&mut self, next: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        if self.dec.ptr.is_null() {
            return Err(abi::ERR_INVALID);
        }
        let q = self.dec.quantum();
        let whole = pcm.len() / q * q;
        if self.neural.is_some() {
            let fec = self.dec.fec_samples(next).min(whole);
            let split = pcm.len() - fec;
            let mut at = self.conceal(&mut pcm[..split])?;
            if fec > 0 && at == split {
                at += self.dec.run(Some(next), &mut pcm[split..], true)?;
                if let Some(s) = self.neural.as_mut() {
                    s.received(&mut pcm[split..at]);
                }
            }
            return Ok(at);
        }
        // SAFETY: reads the packet's TOC byte (a non-empty packet).
        let frame = if next.is_empty() {
            0
        } else {
            unsafe { sys::opus_packet_get_samples_per_frame(next.as_ptr(), self.dec.rate) }
        };
        let fec = whole.min(usize::try_from(frame).unwrap_or(0));
        let mut at = self.dec.conceal(&mut pcm[..whole - fec])?;
        if next.is_empty() || at < whole - fec {
            return Ok(at);
        }
        at += self.dec.run(Some(next), &mut pcm[at..at + fec], true)?;
        Ok(at)
    }

    fn control(&mut self, what: u32, value: i32) -> Result<(), i32> {
        match what {
            abi::CTL_PACKET_LOSS => self.ctl(sys::OPUS_SET_PACKET_LOSS_PERC_REQUEST, value.clamp(0, 100)),
            abi::CTL_COMPLEXITY => self.ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, value.clamp(0, 10)),
            abi::CTL_BITRATE => self.ctl(sys::OPUS_SET_BITRATE_REQUEST, value.clamp(6000, 510_000)),
            abi::CTL_PLC => self.set_plc(value),
            _ => Err(abi::ERR_UNSUPPORTED),
        }
    }
}

impl Drop for Opus {
    fn drop(&mut self) {
        // SAFETY: states made by make(), freed once (null ones skipped).
        unsafe {
            if !self.enc.is_null() {
                sys::opus_encoder_destroy(self.enc);
            }
            if !self.dec.ptr.is_null() {
                sys::opus_decoder_destroy(self.dec.ptr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voice(n: usize) -> Vec<i16> {
        (0..n)
            .map(|i| {
                let t = i as f64 / 16000.0;
                let env = 0.6 + 0.4 * (2.0 * std::f64::consts::PI * 3.0 * t).sin();
                let x: f64 = (1..8).map(|h| (2.0 * std::f64::consts::PI * 150.0 * h as f64 * t).sin() / h as f64).sum();
                (5000.0 * env * x) as i16
            })
            .collect()
    }

    #[test]
    fn lbrr_is_found_exactly_where_libopus_decodes_fec() {
        // libopus 1.3 asked for FEC from a packet without it conceals
        // instead: for each packet, a decoder that recovers the frame
        // before it from it plays something else than one that conceals
        // that frame exactly when has_lbrr says the packet carries FEC.
        for (fec, bitrate, ms) in [(1, 32000, 20), (1, 32000, 40), (1, 12000, 20), (0, 32000, 20), (1, 64000, 60)] {
            let mut err = 0;
            // SAFETY: states made and freed here; buffers sized for the calls.
            unsafe {
                let enc = sys::opus_encoder_create(16000, 1, sys::OPUS_APPLICATION_VOIP, &mut err);
                sys::opus_encoder_ctl(enc, sys::OPUS_SET_INBAND_FEC_REQUEST, fec);
                sys::opus_encoder_ctl(enc, sys::OPUS_SET_PACKET_LOSS_PERC_REQUEST, 20);
                sys::opus_encoder_ctl(enc, sys::OPUS_SET_BITRATE_REQUEST, bitrate);
                let frame = 16 * ms;
                let x = voice(frame * 25);
                let (mut with, mut without) = (0, 0);
                for (k, f) in x.chunks_exact(frame).enumerate() {
                    let mut wire = [0u8; 1500];
                    let n = sys::opus_encode(enc, f.as_ptr(), frame as i32, wire.as_mut_ptr(), 1500);
                    assert!(n > 0);
                    let pk = &wire[..n as usize];
                    if k < 2 {
                        continue;
                    }
                    let mut mk = || sys::opus_decoder_create(16000, 1, &mut err);
                    let (a, b) = (mk(), mk());
                    let (mut pa, mut pb) = (vec![0i16; frame], vec![0i16; frame]);
                    sys::opus_decode(a, std::ptr::null(), 0, pa.as_mut_ptr(), frame as i32, 0);
                    sys::opus_decode(b, pk.as_ptr(), pk.len() as i32, pb.as_mut_ptr(), frame as i32, 1);
                    let differs = pa != pb;
                    assert_eq!(has_lbrr(pk), differs, "packet {k}, fec {fec}, {bitrate} bit/s, {ms} ms");
                    if differs {
                        with += 1;
                    } else {
                        without += 1;
                    }
                    sys::opus_decoder_destroy(a);
                    sys::opus_decoder_destroy(b);
                }
                sys::opus_encoder_destroy(enc);
                eprintln!("fec {fec} {bitrate} bit/s {ms} ms: {with} with FEC, {without} without");
                if fec == 0 {
                    assert_eq!(with, 0);
                }
            }
        }
        assert!(!has_lbrr(&[]) && !has_lbrr(&[0x80, 0xff]) && !has_lbrr(&[0x03]));
    }
}
