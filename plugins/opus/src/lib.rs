//! A codec plugin on libopus 1.6.1 (BSD-3-Clause, built from source and
//! linked statically by `opusic-sys` with its speech models): Opus (RFC
//! 6716, RTP payload RFC 7587: `opus/48000/2`, mono PCM).
//!
//! Why not the system's libopus: Debian's is 1.3.1, which predates
//! libopus's neural decoder features (1.5): the deep packet loss
//! concealment (a speech model predicts lost frames, a vocoder renders
//! them, inside the SILK decoder) and OSCE's LACE (a model that cleans up
//! decoded low-rate SILK speech). At 16 kHz and the ~18 kbit/s endpoints
//! send, they raise wideband PESQ by 0.3 at 1 % and 5 % loss
//! (docs/BENCHMARKS.md).
//!
//! - **PCM rate**: the RTP clock is always 48000, but libopus codes PCM at
//!   8, 12, 16, 24 or 48 kHz natively. A state is created at the rate of the
//!   other leg's codec (8 kHz beside G.711 or G.729, 16 kHz beside G.722), so
//!   the relay resamples nothing and Opus codes only the band the other leg
//!   has.
//! - **Decoder**: complexity [`DECODER_COMPLEXITY`] (6): LACE on SILK
//!   frames and the deep concealment, which libopus applies where the PCM
//!   rate is 16 kHz (~20 µs more a 20 ms frame, ~0.55 ms a lost frame);
//!   `SRTPGATE_CTL_PLC` = classic sets 0 (libopus's classic concealment, no
//!   models).
//! - **Loss**: `conceal` is libopus's concealment; `recover` decodes the
//!   in-band FEC (LBRR) of the packet after a loss for the lost 20 ms
//!   (libopus conceals where the packet has none), so a single loss costs
//!   no holding and little quality.
//! - **Encoder**: VoIP application, voice signal; in-band FEC on when the
//!   receiver's fmtp says `useinbandfec=1`; `maxaveragebitrate` caps the
//!   bit rate; `usedtx=1` enables DTX; `SRTPGATE_CTL_PACKET_LOSS` sets the
//!   expected loss (what FEC is sized for), `SRTPGATE_CTL_COMPLEXITY` and
//!   `SRTPGATE_CTL_BITRATE` the rest. Default complexity: 5 (set by the
//!   relay's `opus_complexity`, see docs/OPERATIONS.md).

use opusic_sys as sys;
use srtpgate_codec::abi::{self, pcm_rate_bit, CodecDesc, PluginTable, StaticCodecs};
use srtpgate_codec::kit::{Codec, Setup};
use std::ffi::c_int;

/// Complexity when the relay sets none.
pub const DEFAULT_COMPLEXITY: i32 = 5;
/// A decoder's complexity: 5 and up turn the deep concealment on, 6 adds
/// LACE, 7 NoLACE (~5× LACE's cost for no better score here).
pub const DECODER_COMPLEXITY: i32 = 6;

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
    let mut o = Opus { enc: std::ptr::null_mut(), dec: std::ptr::null_mut(), rate };
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
        self.run_decoder(Some(input), &mut pcm[..n], false)
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
        let q = self.quantum();
        let whole = pcm.len() / q * q;
        // SAFETY: reads the packet's TOC byte (a non-empty packet).
        let frame = if next.is_empty() {
            0
        } else {
            unsafe { sys::opus_packet_get_samples_per_frame(next.as_ptr(), self.rate) }
        };
        let fec = whole.min(usize::try_from(frame).unwrap_or(0));
        let mut at = self.conceal(&mut pcm[..whole - fec])?;
        if next.is_empty() || at < whole - fec {
            return Ok(at);
        }
        at += self.run_decoder(Some(next), &mut pcm[at..at + fec], true)?;
        Ok(at)
    }

    fn control(&mut self, what: u32, value: i32) -> Result<(), i32> {
        match what {
            abi::CTL_PACKET_LOSS => self.ctl(sys::OPUS_SET_PACKET_LOSS_PERC_REQUEST, value.clamp(0, 100)),
            abi::CTL_COMPLEXITY => self.ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, value.clamp(0, 10)),
            abi::CTL_BITRATE => self.ctl(sys::OPUS_SET_BITRATE_REQUEST, value.clamp(6000, 510_000)),
            abi::CTL_PLC => match value {
                abi::PLC_NEURAL => self.dec_ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, DECODER_COMPLEXITY),
                abi::PLC_CLASSIC => self.dec_ctl(sys::OPUS_SET_COMPLEXITY_REQUEST, 0),
                _ => Err(abi::ERR_INVALID),
            },
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
