//! A codec plugin built as its own shared library: L16, 16-bit linear PCM in
//! network byte order (RFC 3551 §4.5.11), mono at 8 and 16 kHz. It is the
//! reference for writing plugins against the ABI (`srtpgate_codec::abi`)
//! with the kit (`srtpgate_codec::kit`): one exported entry point, a static
//! table, a state type implementing `Codec`, no allocation per frame.

use srtpgate_codec::abi::{self, CodecDesc, PluginTable, StaticCodecs};
use srtpgate_codec::kit::{Codec, Setup};

const fn desc(rate: u32) -> CodecDesc {
    CodecDesc {
        name: c"L16".as_ptr(),
        clock_rate: rate,
        channels: 1,
        pcm_channels: 1,
        pcm_rate: rate,
        pcm_rates: 0,
        frame_samples: rate / 100,
        max_frame_bytes: rate / 1000 * 2 * 120,
        static_pt: -1,
        fmtp: std::ptr::null(),
        flags: 0,
    }
}

static CODECS: StaticCodecs<2> = StaticCodecs([desc(8000), desc(16000)]);

srtpgate_codec::plugin_table!(static TABLE: c"l16", c"2.0.0", CODECS, make);

/// The plugin's entry point.
#[no_mangle]
pub extern "C" fn srtpgate_codec_plugin_v2() -> *const PluginTable {
    &TABLE.0
}

fn make(s: &Setup<'_>) -> Result<Box<dyn Codec>, i32> {
    match CODECS.0.get(s.codec as usize) {
        Some(d) if d.pcm_rate == s.pcm_rate => Ok(Box::new(L16)),
        _ => Err(abi::ERR_INVALID),
    }
}

/// L16 keeps no state.
struct L16;

impl Codec for L16 {
    fn decode(&mut self, input: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        if !input.len().is_multiple_of(2) {
            return Err(abi::ERR_INVALID);
        }
        let out = pcm.get_mut(..input.len() / 2).ok_or(abi::ERR_SPACE)?;
        for (s, b) in out.iter_mut().zip(input.chunks_exact(2)) {
            *s = i16::from_be_bytes([b[0], b[1]]);
        }
        Ok(out.len())
    }

    fn encode(&mut self, pcm: &[i16], out: &mut [u8]) -> Result<usize, i32> {
        let o = out.get_mut(..2 * pcm.len()).ok_or(abi::ERR_SPACE)?;
        for (b, s) in o.chunks_exact_mut(2).zip(pcm) {
            b.copy_from_slice(&s.to_be_bytes());
        }
        Ok(o.len())
    }

    /// Concealment: silence (L16 carries no model to extrapolate from).
    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32> {
        pcm.fill(0);
        Ok(pcm.len())
    }
}
