//! The two transcoders of a transcoded stream, built from the codecs the
//! answer agreed: decoder and encoder instances from the codec plugins at
//! one PCM rate, DTMF passed, detected or played, and the encoder settings
//! the request and the configuration give.

use crate::negotiate::Transcoding;
use srtpgate_codec::transcode::{Detect, Direction, Transcoder};
use srtpgate_codec::{abi, Registry};
use srtpgate_sdp::formats::Format;

/// The two transcoders of a stream: (offerer to answerer, answerer to
/// offerer).
pub(crate) fn transcoders(
    t: &Transcoding,
    codecs: &Registry,
    complexity: Option<u8>,
    plc: i32,
    dtmf_delay_ms: u32,
) -> Result<(Box<Transcoder>, Box<Transcoder>), String> {
    let find = |f: &Format| codecs.find(&f.name, f.clock_rate, f.channels).ok_or_else(|| format!("no codec for {f}"));
    let (a, b) = (find(&t.offerer)?, find(&t.answerer)?);
    // Both legs' codecs work at one PCM rate, so nothing is resampled.
    let rate = srtpgate_codec::common_pcm_rate(&a.0.codecs()[a.1], &b.0.codecs()[b.1])
        .ok_or_else(|| format!("{} and {} share no PCM rate", t.offerer, t.answerer))?;
    let instance = |(p, i): &(std::sync::Arc<srtpgate_codec::Plugin>, usize), fmtp: &Option<String>, uses| {
        p.instance_for(*i, fmtp.as_deref(), Some(rate), uses).map_err(|e| e.to_string())
    };
    // One direction: decode `from` (its own fmtp), encode `to` (with the
    // fmtp `set` chose and the bit rate of `set`/`transcode`); DTMF from the sender's telephone-event `te.0` to
    // the receiver's `te.1`: passed, detected in the audio, or played.
    let direction = |from: (&Format, &_),
                     to: (&Format, &_),
                     fmtp: &Option<String>,
                     bitrate: Option<u32>,
                     ptime,
                     te: (Option<u8>, Option<u8>)| {
        let detect = match (te, codecs.dtmf_detector()) {
            ((None, Some(out_pt)), Some(p)) => Some(Detect {
                detector: srtpgate_codec::dtmf::Detector::new(p, rate).map_err(|e| e.to_string())?,
                out_pt,
                delay_ms: dtmf_delay_ms,
            }),
            ((None, Some(_)), None) => {
                tracing::warn!("no DTMF detector loaded (the spandsp plugin has one): in-band tones pass as audio");
                None
            }
            _ => None,
        };
        let mut t = Transcoder::new(Direction {
            decoder: instance(from.1, &from.0.fmtp, abi::USE_DECODE)?,
            in_pt: from.0.pt,
            encoder: instance(to.1, fmtp, abi::USE_ENCODE)?,
            out_pt: to.0.pt,
            out_ptime: ptime,
            dtmf: te.0.zip(te.1),
            detect,
            tones_from: if te.1.is_none() { te.0 } else { None },
        })?;
        // Codecs without these controls ignore them.
        if let Some(c) = complexity {
            t.control(abi::CTL_COMPLEXITY, c as i32).map_err(|e| e.to_string())?;
        }
        if let Some(b) = bitrate {
            t.control(abi::CTL_BITRATE, b.min(i32::MAX as u32) as i32).map_err(|e| e.to_string())?;
        }
        // Likewise decoders with one kind of concealment; a decoder that
        // cannot switch keeps its own (the call goes on).
        if let Err(e) = t.control_decoder(abi::CTL_PLC, plc) {
            tracing::warn!("decoder concealment not set: {e}");
        }
        Ok::<_, String>(t)
    };
    let (te_o, te_a) = (t.dtmf.0.as_ref().map(|f| f.pt), t.dtmf.1.as_ref().map(|f| f.pt));
    let (o, n) = ((&t.offerer, &a), (&t.answerer, &b));
    let to_answerer = direction(o, n, &t.fmtp.1, t.bitrate.1, t.ptime.0, (te_o, te_a))?;
    let to_offerer = direction(n, o, &t.fmtp.0, t.bitrate.0, t.ptime.1, (te_a, te_o))?;
    Ok((Box::new(to_answerer), Box::new(to_offerer)))
}
