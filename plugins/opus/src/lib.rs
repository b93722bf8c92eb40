//! A codec plugin on libopus 1.6.1 (BSD-3-Clause, built from source and
//! linked statically from `srtpgate-opus-sys` with its speech models): Opus (RFC
//! 6716, RTP payload RFC 7587: `opus/48000/2`, mono PCM).
//!
//! Why not the system's libopus: Debian's is 1.3.1, which predates
//! libopus's neural decoder features (1.5): the deep packet loss
//! concealment (a speech model predicts lost frames, a vocoder renders
//! them, inside the SILK decoder) and OSCE's LACE (a model that cleans up
//! decoded low-rate SILK speech). On 16 kHz speech sent at 19 kbit/s
//! (libopus's default at that rate) they raised wideband PESQ by 0.24 at
//! 1 % loss and 0.37 at 5 % (docs/BENCHMARKS.md).
//!
//! - **PCM rate**: the RTP clock is always 48000, but libopus codes PCM at
//!   8, 12, 16, 24 or 48 kHz natively. A state is created at the rate of the
//!   other leg's codec (8 kHz beside G.711 or G.729, 16 kHz beside G.722), so
//!   the relay resamples nothing and Opus codes only the band the other leg
//!   has.
//! - **Decoder**: complexity [`DECODER_COMPLEXITY`] (6): LACE and the deep
//!   concealment, which libopus applies to wideband SILK audio (16 kHz
//!   inside the codec, whatever the decoder's PCM rate; the deep
//!   concealment also to CELT-only audio): ~20 µs more a 20 ms frame,
//!   ~0.55 ms a lost frame. A decoder conceals at most 20 losses at once
//!   and one more each 100 ms with the models (what is a loss is the
//!   sender's to say); beyond that a loss is concealed at complexity 0.
//!   `SRTPGATE_CTL_PLC` = classic sets 0 throughout (libopus's classic
//!   concealment, no models).
//! - **Loss**: `conceal` is libopus's concealment; `recover` decodes the
//!   in-band FEC (LBRR) of the packet after a loss for the lost 20 ms
//!   (libopus conceals where the packet has none), so a single loss costs
//!   no holding and little quality.
//! - **Encoder**: VoIP application, voice signal; in-band FEC on when the
//!   receiver's fmtp says `useinbandfec=1`; 32 kbit/s
//!   ([`DEFAULT_BITRATE`]) unless `SRTPGATE_CTL_BITRATE` sets another,
//!   never more than the receiver's `maxaveragebitrate`; `usedtx=1`
//!   enables DTX; `SRTPGATE_CTL_PACKET_LOSS` sets the expected loss (what
//!   FEC is sized for). Complexity 5 unless `SRTPGATE_CTL_COMPLEXITY` sets
//!   another (the relay's `codec_complexity`, see docs/OPERATIONS.md).

use srtpgate_codec::abi::{self, pcm_rate_bit, CodecDesc, PluginTable, StaticCodecs};
use srtpgate_codec::kit::{Codec, Setup};
use srtpgate_codec::plc::LossBudget;
use srtpgate_opus_sys::ffi as sys;
use std::ffi::c_int;

/// Bit rate when the relay sets none (`codec-set`/`codec-transcode` with a
/// bit rate, `SRTPGATE_CTL_BITRATE`): 32 kbit/s, as rtpengine's Opus
/// encoder and browsers' WebRTC. libopus's own default depends on the PCM
/// rate (11 kbit/s at 8 kHz, 19 kbit/s at 16 kHz), and at 19 kbit/s the
/// Opus stage costs G.722's wideband speech ~0.07 PESQ (docs/BENCHMARKS.md).
/// The receiver's `maxaveragebitrate` lowers it.
pub const DEFAULT_BITRATE: i32 = 32_000;
/// The bit rates libopus takes.
const BITRATES: std::ops::RangeInclusive<i32> = 6_000..=510_000;
/// Complexity when the relay sets none.
pub const DEFAULT_COMPLEXITY: i32 = 5;
/// A decoder's complexity: 5 and up turn the deep concealment on, 6 adds
/// LACE, 7 NoLACE (decoding at 2.5× LACE's cost for no better score here).
pub const DECODER_COMPLEXITY: i32 = 6;
/// Losses a decoder may conceal with the model at once, and one more each
/// 100 ms of its audio; beyond that a loss is concealed without the models
/// (complexity 0), as G.722's neural concealment is budgeted.
const BUDGET_BURST: u32 = 20;

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
    dec: *mut sys::OpusDecoder,
    rate: i32,
    /// The decoder runs libopus's models (`SRTPGATE_PLC_NEURAL`).
    models: bool,
    /// Losses the models may conceal (see [`LossBudget`]).
    budget: LossBudget,
    /// A loss is under way (concealed since the last decoded packet) ...
    in_loss: bool,
    /// ... without the models, the budget being spent.
    cheap: bool,
    /// The receiver's `maxaveragebitrate`: no bit rate set exceeds it.
    max_bitrate: i32,
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
    let mut o = Opus {
        enc: std::ptr::null_mut(),
        dec: std::ptr::null_mut(),
        rate,
        models: true,
        budget: LossBudget::new(BUDGET_BURST, rate as usize / 10),
        in_loss: false,
        cheap: false,
        max_bitrate: *BITRATES.end(),
    };
    let mut err: c_int = 0;
    if s.decodes() {
        // SAFETY: libopus allocates the state; checked for null and freed by Drop.
        o.dec = unsafe { sys::opus_decoder_create(rate, 1, &mut err) };
        if o.dec.is_null() || err != sys::OPUS_OK {
            return Err(abi::ERR_INTERNAL);
        }
        o.dec_ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, DECODER_COMPLEXITY)?;
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
        // The receiver's maxaveragebitrate (RFC 7587) is a cap.
        if let Some(max) = s.fmtp_param("maxaveragebitrate").and_then(|v| v.parse::<i32>().ok()) {
            o.max_bitrate = max.clamp(*BITRATES.start(), *BITRATES.end());
        }
        o.ctl(sys::OPUS_SET_BITRATE_REQUEST, DEFAULT_BITRATE.min(o.max_bitrate))?;
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

    /// A decoder setting.
    fn dec_ctl(&mut self, request: c_int, value: i32) -> Result<(), i32> {
        if self.dec.is_null() {
            return Err(abi::ERR_UNSUPPORTED);
        }
        // SAFETY: a live decoder; the requests used take one int.
        let r = unsafe { sys::opus_decoder_ctl(self.dec, request, value as c_int) };
        if r == sys::OPUS_OK {
            Ok(())
        } else {
            Err(abi::ERR_INVALID)
        }
    }

    /// Lost time (`samples` of it): where a loss starts and the budget of
    /// model concealments is spent, the decoder runs without its models
    /// until the next packet.
    fn at_loss(&mut self, samples: usize) -> Result<(), i32> {
        if self.dec.is_null() {
            return Err(abi::ERR_INVALID);
        }
        self.budget.earn(samples);
        if !self.in_loss {
            self.in_loss = true;
            if self.models && !self.budget.take() {
                self.dec_ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, 0)?;
                self.cheap = true;
            }
        }
        Ok(())
    }

    /// A packet arrives: the loss (if any) ends, and a decoder that
    /// concealed it without its models gets them back.
    fn end_loss(&mut self) -> Result<(), i32> {
        self.in_loss = false;
        if self.cheap {
            self.cheap = false;
            self.dec_ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, DECODER_COMPLEXITY)?;
        }
        Ok(())
    }

    /// Losses the models may still conceal at once.
    #[cfg(test)]
    fn budget_left(&self) -> u32 {
        self.budget.left()
    }

    /// Decodes `data` (null: concealment) with `fec` into `pcm`, whose
    /// length is a whole number of 2.5 ms.
    fn run_decoder(&mut self, data: Option<&[u8]>, pcm: &mut [i16], fec: bool) -> Result<usize, i32> {
        if self.dec.is_null() {
            return Err(abi::ERR_INVALID);
        }
        let (p, n) = data.map_or((std::ptr::null(), 0), |d| (d.as_ptr(), d.len()));
        let n = i32::try_from(n).map_err(|_| abi::ERR_INVALID)?;
        let cap = i32::try_from(pcm.len()).map_err(|_| abi::ERR_INVALID)?;
        // SAFETY: a live decoder; `pcm` holds `cap` samples (mono).
        let r = unsafe { sys::opus_decode(self.dec, p, n, pcm.as_mut_ptr(), cap, fec as c_int) };
        usize::try_from(r).map_err(|_| if r == sys::OPUS_BUFFER_TOO_SMALL { abi::ERR_SPACE } else { abi::ERR_INVALID })
    }

    /// Samples of 2.5 ms.
    fn quantum(&self) -> usize {
        self.rate as usize / 400
    }
}

impl Codec for Opus {
    fn decode(&mut self, input: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        if input.is_empty() {
            return Err(abi::ERR_INVALID);
        }
        let len = i32::try_from(input.len()).map_err(|_| abi::ERR_INVALID)?;
        // SAFETY: reads `len` bytes of the packet's TOC and frame counts.
        let n = unsafe { sys::opus_packet_get_nb_samples(input.as_ptr(), len, self.rate) };
        let n = usize::try_from(n).map_err(|_| abi::ERR_INVALID)?;
        if n > pcm.len() {
            return Err(abi::ERR_SPACE);
        }
        self.end_loss()?;
        let n = self.run_decoder(Some(input), &mut pcm[..n], false)?;
        self.budget.earn(n);
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

    /// libopus's concealment, in steps of at most 20 ms; what is not a
    /// whole 2.5 ms at the end is left to the host (silence).
    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32> {
        self.at_loss(pcm.len())?;
        let q = self.quantum();
        let whole = pcm.len() / q * q;
        let mut at = 0;
        while at < whole {
            let k = (whole - at).min(8 * q);
            at += self.run_decoder(None, &mut pcm[at..at + k], false)?;
        }
        Ok(at)
    }

    /// The lost audio before `next`: concealment up to the last frame (of
    /// `next`'s frame size, which its FEC covers), then that frame decoded
    /// from `next`'s in-band FEC.
    fn recover(&mut self, next: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        self.at_loss(0)?;
        let q = self.quantum();
        let whole = pcm.len() / q * q;
        // SAFETY: reads the packet's TOC byte (a non-empty packet).
        let frame = if next.is_empty() {
            0
        } else {
            unsafe { sys::opus_packet_get_samples_per_frame(next.as_ptr(), self.rate) }
        };
        let fec = whole.min(usize::try_from(frame).unwrap_or(0));
        let at = self.conceal(&mut pcm[..whole - fec])?;
        if next.is_empty() || at < whole - fec {
            return Ok(at);
        }
        let n = self.run_decoder(Some(next), &mut pcm[at..at + fec], true)?;
        self.budget.earn(n);
        Ok(at + n)
    }

    fn control(&mut self, what: u32, value: i32) -> Result<(), i32> {
        match what {
            abi::CTL_PACKET_LOSS => self.ctl(sys::OPUS_SET_PACKET_LOSS_PERC_REQUEST, value.clamp(0, 100)),
            abi::CTL_COMPLEXITY => self.ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, value.clamp(0, 10)),
            abi::CTL_BITRATE => {
                self.ctl(sys::OPUS_SET_BITRATE_REQUEST, value.clamp(*BITRATES.start(), self.max_bitrate))
            }
            abi::CTL_PLC => {
                let models = match value {
                    abi::PLC_NEURAL => true,
                    abi::PLC_CLASSIC => false,
                    _ => return Err(abi::ERR_INVALID),
                };
                self.dec_ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, if models { DECODER_COMPLEXITY } else { 0 })?;
                self.models = models;
                self.cheap = false;
                Ok(())
            }
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
            if !self.dec.is_null() {
                sys::opus_decoder_destroy(self.dec);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_that_makes_every_packet_a_loss_gets_the_models_within_the_budget_only() {
        // A gap of 2.5 ms before each 20 ms packet at 16 kHz: the first 20
        // losses are concealed with the models, then one each 100 ms of
        // audio; the others at complexity 0, and every packet after a loss
        // is decoded with the models again. Two seconds without loss fill
        // the budget again.
        let mut err = 0;
        // SAFETY: states made here and freed by Drop; buffers sized for the calls.
        let mut o = unsafe {
            let enc = sys::opus_encoder_create(16000, 1, sys::OPUS_APPLICATION_VOIP, &mut err);
            let dec = sys::opus_decoder_create(16000, 1, &mut err);
            Opus {
                enc,
                dec,
                rate: 16000,
                models: true,
                budget: LossBudget::new(BUDGET_BURST, 1600),
                in_loss: false,
                cheap: false,
                max_bitrate: *BITRATES.end(),
            }
        };
        o.dec_ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, DECODER_COMPLEXITY).expect("complexity");
        let x: Vec<i16> = (0..320).map(|i| ((i as f64 * 0.07).sin() * 8000.0) as i16).collect();
        let mut wire = [0u8; 400];
        let n = o.encode(&x, &mut wire).expect("encode");
        let packet = wire[..n].to_vec();
        let complexity = |o: &Opus| {
            let mut c: i32 = -1;
            // SAFETY: a live decoder; the request writes one int.
            unsafe { sys::opus_decoder_ctl(o.dec, sys::OPUS_GET_COMPLEXITY_REQUEST, &mut c as *mut i32) };
            c
        };
        let (mut models, mut cheap) = (0, 0);
        let mut pcm = [0i16; 960];
        for k in 0..200 {
            if k < 100 {
                assert_eq!(o.conceal(&mut pcm[..40]).expect("conceal"), 40);
                if complexity(&o) == DECODER_COMPLEXITY {
                    models += 1;
                } else {
                    assert_eq!(complexity(&o), 0);
                    cheap += 1;
                }
            }
            assert_eq!(o.decode(&packet, &mut pcm).expect("decode"), 320);
            assert_eq!(complexity(&o), DECODER_COMPLEXITY, "packets decode with the models");
        }
        // 100 losses over 100 × 22.5 ms: 20 at once and one each 100 ms (~22).
        assert!((40..=44).contains(&models), "{models} with the models, {cheap} without");
        assert_eq!(o.budget_left(), BUDGET_BURST);
        // With the classic concealment asked for, nothing is switched.
        o.control(abi::CTL_PLC, abi::PLC_CLASSIC).expect("classic");
        o.conceal(&mut pcm[..40]).expect("conceal");
        o.decode(&packet, &mut pcm).expect("decode");
        assert_eq!(complexity(&o), 0);
    }
}
