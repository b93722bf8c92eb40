//! Codec negotiation for one media stream: rtpengine's codec options
//! (`strip`, `offer`, `except`, `mask`, `consume`, `accept`, `transcode`,
//! `set`, the `all`/`full` keywords, `always transcode`, `ptime`) applied to
//! the offered formats, and the answer turned into pass-through or into a
//! pair of codecs to transcode between.
//!
//! Sans I/O: formats in, formats and decisions out. A stream whose request
//! has no codec option is left exactly as it was offered and answered
//! (pass-through, no decoding).

use srtpgate_codec::Registry;
use srtpgate_ng::CodecOps;
use srtpgate_sdp::formats::Format;

/// A codec named in an option: `PCMU`, `opus/48000`, `opus/48000/2`,
/// `opus/48000/2/32000/20/useinbandfec=1`, or a payload type number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Encoding name (or the payload type's digits).
    pub name: String,
    /// Clock rate, if given.
    pub clock: Option<u32>,
    /// Channels, if given.
    pub channels: Option<u32>,
    /// Bit rate (bit/s) of the relay's encoder, if given (fourth field).
    pub bitrate: Option<u32>,
    /// Packet time (ms), if given (fifth field).
    pub ptime: Option<u32>,
    /// fmtp, if given (sixth field).
    pub fmtp: Option<String>,
}

impl Spec {
    /// Parses an option's codec; `None` when it is not one.
    pub fn parse(s: &str) -> Option<Spec> {
        let mut it = s.split('/');
        let name = it.next()?.trim();
        if name.is_empty() || name.contains([' ', '\t', '\r', '\n', '\0']) || name.len() > 64 {
            return None;
        }
        let num = |x: Option<&str>| -> Result<Option<u32>, ()> {
            match x.map(str::trim) {
                None | Some("") => Ok(None),
                Some(v) => v.parse().map(Some).map_err(|_| ()),
            }
        };
        let clock = num(it.next()).ok()?;
        let channels = num(it.next()).ok()?;
        let bitrate = num(it.next()).ok()?.filter(|&b| b > 0);
        let ptime = num(it.next()).ok()?;
        let fmtp = it.next().map(str::trim).filter(|f| !f.is_empty() && !f.contains(['\r', '\n', '\0']));
        Some(Spec { name: name.to_string(), clock, channels, bitrate, ptime, fmtp: fmtp.map(str::to_string) })
    }

    /// `all` or `full`.
    pub fn is_all(&self) -> bool {
        self.name.eq_ignore_ascii_case("all") || self.name.eq_ignore_ascii_case("full")
    }

    /// This spec names format `f` (by name, or by payload type number), and
    /// the parameters it gives match.
    pub fn matches(&self, f: &Format) -> bool {
        if let Ok(pt) = self.name.parse::<u8>() {
            return pt == f.pt;
        }
        self.name.eq_ignore_ascii_case(&f.name)
            && self.clock.is_none_or(|c| c == f.clock_rate)
            && self.channels.is_none_or(|c| c == f.channels)
    }
}

/// The options of `list` that parse; the others go to `bad` (once each),
/// for the reply's warning.
fn specs(list: &[String], bad: &mut Vec<String>) -> Vec<Spec> {
    let mut out = Vec::with_capacity(list.len());
    for s in list {
        match Spec::parse(s) {
            Some(x) => out.push(x),
            None if !bad.contains(s) => bad.push(s.clone()),
            None => {}
        }
    }
    out
}

/// What an offer left for its answer, kept with the stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offered {
    /// The offerer's formats the relay takes from it (offered, not
    /// stripped; masked ones included), in its order.
    pub from_offerer: Vec<Format>,
    /// Formats the relay added to the offer (it transcodes to them).
    pub added: Vec<Format>,
    /// `always transcode`.
    pub always: bool,
    /// Packet time of what the relay sends to the answerer, ms.
    pub ptime_to_answerer: Option<u32>,
    /// Packet time of what the relay sends to the offerer, ms.
    pub ptime_to_offerer: Option<u32>,
    /// `set` options: parameters for the codecs the relay encodes.
    pub set: Vec<Spec>,
    /// `transcode` options that give a bit rate (after `set`'s, see
    /// [`Offered::bitrate_for`]).
    pub transcode_bitrates: Vec<Spec>,
    /// The request asked for codec handling (otherwise the answer passes
    /// unchanged).
    pub engaged: bool,
    /// Codecs named by `transcode` that no codec or plugin provides: left
    /// out (as rtpengine does), for the reply's warning.
    pub unsupported: Vec<String>,
    /// Codec options that are not `name/clock/channels/bitrate/ptime/fmtp`
    /// (a number where a number goes): ignored, for the reply's warning.
    pub malformed: Vec<String>,
    /// `transcode-telephone-event`: DTMF is converted between a leg that
    /// sends RFC 4733 events and one that sends tones in the audio.
    pub dtmf_transcode: bool,
}

impl Offered {
    /// The bit rate the options give the relay's encoder of `f`: `set`'s,
    /// else `transcode`'s.
    pub fn bitrate_for(&self, f: &Format) -> Option<u32> {
        self.set.iter().chain(&self.transcode_bitrates).filter(|s| s.matches(f)).find_map(|s| s.bitrate)
    }
}

/// Whether a request asks for any codec handling.
pub fn engaged(ops: &CodecOps, always: bool, ptime: Option<u32>, ptime_reverse: Option<u32>) -> bool {
    always
        || ptime.is_some()
        || ptime_reverse.is_some()
        || [&ops.strip, &ops.offer, &ops.except, &ops.transcode, &ops.mask, &ops.accept, &ops.consume, &ops.set]
            .iter()
            .any(|l| !l.is_empty())
}

/// Applies an offer's codec options to the offered `formats`. Returns the
/// formats for the answerer and what the answer needs. `implicit` are
/// codecs to add as if named by `transcode` (the receiving side's codec of
/// a stream that transcodes already, so that a re-offer keeps it).
pub fn offer(
    formats: &[Format],
    ops: &CodecOps,
    always: bool,
    ptime: (Option<u32>, Option<u32>),
    implicit: &[Format],
    registry: &Registry,
) -> Result<(Vec<Format>, Offered), String> {
    let mut malformed = Vec::new();
    let bad = &mut malformed;
    let strip = specs(&ops.strip, bad);
    let mask: Vec<Spec> = specs(&ops.mask, bad).into_iter().chain(specs(&ops.consume, bad)).collect();
    let keep: Vec<Spec> = specs(&ops.except, bad).into_iter().chain(specs(&ops.offer, bad)).collect();
    let transcode = specs(&ops.transcode, bad);
    let set = specs(&ops.set, bad);
    // `accept` leaves the codec in the offer, so it changes nothing here;
    // parsed so that a malformed one is named too.
    specs(&ops.accept, bad);
    let mut engaged = engaged(ops, always, ptime.0, ptime.1) || !implicit.is_empty();
    let strip_all = strip.iter().any(Spec::is_all);
    let mask_all = mask.iter().any(Spec::is_all);
    // By name (not `all`): a later `transcode` of the same codec adds a
    // transcoded instance instead of restoring it.
    let named = |list: &[Spec], f: &Format| list.iter().any(|s| !s.is_all() && s.matches(f));
    let restored = |f: &Format| keep.iter().any(|s| s.matches(f)) || transcode.iter().any(|s| s.matches(f));
    let mut from_offerer = Vec::new();
    let mut out: Vec<Format> = Vec::new();
    for f in formats {
        if named(&strip, f) || (strip_all && !restored(f)) {
            continue;
        }
        from_offerer.push(f.clone());
        if named(&mask, f) || (mask_all && !restored(f)) {
            continue;
        }
        out.push(f.clone());
    }
    // `offer`: these first, in the order given.
    let mut front = Vec::new();
    for s in specs(&ops.offer, &mut Vec::new()) {
        while let Some(i) = out.iter().position(|f| s.matches(f)) {
            front.push(out.remove(i));
        }
    }
    front.append(&mut out);
    let mut out = front;
    // `transcode` (and the implicit ones): restore an offered codec, or add
    // one the relay can decode and encode.
    let mut added: Vec<Format> = Vec::new();
    let mut unsupported: Vec<String> = Vec::new();
    let wanted = transcode.iter().cloned().chain(implicit.iter().map(|f| Spec {
        name: f.name.clone(),
        clock: Some(f.clock_rate),
        channels: Some(f.channels),
        bitrate: None,
        ptime: None,
        fmtp: f.fmtp.clone(),
    }));
    let mut dtmf_transcode = false;
    for s in wanted {
        if s.name.eq_ignore_ascii_case("telephone-event") {
            dtmf_transcode = true;
            engaged = true;
        }
        if s.is_all() || out.iter().any(|f| s.matches(f)) {
            continue;
        }
        let explicitly_removed = formats.iter().any(|f| s.matches(f) && (named(&strip, f) || named(&mask, f)));
        if let Some(f) = from_offerer.iter().find(|f| s.matches(f)).filter(|_| !explicitly_removed) {
            out.push(f.clone());
            continue;
        }
        if s.name.eq_ignore_ascii_case("telephone-event") {
            // Events the relay makes from tones: one telephone-event for
            // each clock rate of the codecs offered (RFC 4733 §7.1.1).
            let mut clocks: Vec<u32> = Vec::new();
            for f in out.iter().filter(|f| f.is_codec()) {
                if s.clock.is_none_or(|c| c == f.clock_rate) && !clocks.contains(&f.clock_rate) {
                    clocks.push(f.clock_rate);
                }
            }
            for clock in clocks {
                let mut f = Format {
                    pt: 0,
                    name: "telephone-event".into(),
                    clock_rate: clock,
                    channels: 1,
                    fmtp: Some(s.fmtp.clone().unwrap_or_else(|| "0-15".into())),
                    extra: Vec::new(),
                };
                f.pt = free_pt(&f, formats, &out).ok_or("no free RTP payload type for telephone-event")?;
                added.push(f.clone());
                out.push(f);
            }
            continue;
        }
        let Some(mut f) = registry_format(&s, registry) else {
            // A configuration that names a codec whose plugin is not
            // installed must not refuse every call.
            if !unsupported.contains(&s.name) {
                unsupported.push(s.name.clone());
            }
            continue;
        };
        f.pt = free_pt(&f, formats, &out).ok_or("no free RTP payload type for a transcoded codec")?;
        added.push(f.clone());
        out.push(f);
        engaged = true;
    }
    if !out.iter().any(Format::is_codec) && formats.iter().any(Format::is_codec) {
        // rtpengine: stripping every codec leaves the list unchanged.
        return offer(formats, &CodecOps::default(), always, ptime, implicit, registry)
            .map(|(_, o)| (formats.to_vec(), Offered { malformed, ..o }));
    }
    let offered = Offered {
        from_offerer,
        added,
        always,
        ptime_to_answerer: ptime.0,
        ptime_to_offerer: ptime.1,
        set,
        // `transcode` may give the encoder's bit rate too (rtpengine:
        // `codec-transcode-opus/48000/2/24000`).
        transcode_bitrates: transcode.into_iter().filter(|s| s.bitrate.is_some()).collect(),
        engaged,
        unsupported,
        malformed,
        dtmf_transcode,
    };
    Ok((out, offered))
}

/// The format the registry has for `s` (name, clock rate and channels as
/// given, else the codec's first variant).
fn registry_format(s: &Spec, registry: &Registry) -> Option<Format> {
    for p in registry.plugins() {
        for c in p.codecs() {
            let hit = c.name.eq_ignore_ascii_case(&s.name)
                && s.clock.is_none_or(|x| x == c.clock_rate)
                && s.channels.is_none_or(|x| x == c.channels);
            if hit {
                return Some(Format {
                    pt: c.static_pt.unwrap_or(0),
                    name: c.name.clone(),
                    clock_rate: c.clock_rate,
                    channels: c.channels,
                    fmtp: s.fmtp.clone().or_else(|| c.fmtp.clone()),
                    extra: Vec::new(),
                });
            }
        }
    }
    None
}

/// The codec's static payload type when free, else the first free dynamic
/// one (96–127).
fn free_pt(f: &Format, a: &[Format], b: &[Format]) -> Option<u8> {
    let used = |pt: u8| a.iter().chain(b).any(|x| x.pt == pt);
    if let Some(pt) = Format::static_pt(&f.name, f.clock_rate, f.channels) {
        if !used(pt) {
            return Some(pt);
        }
    }
    (96..=127).find(|&pt| !used(pt))
}

/// The codecs a transcoded stream runs between: what each side sends and
/// receives, its DTMF, packet times and encoder settings (kept in Redis
/// with the call).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Transcoding {
    /// The codec the offerer sends and receives.
    pub offerer: Format,
    /// The codec the answerer sends and receives.
    pub answerer: Format,
    /// telephone-event of (offerer, answerer): both when both have it;
    /// with `transcode-telephone-event`, one alone, and the relay converts
    /// between events and tones.
    pub dtmf: (Option<Format>, Option<Format>),
    /// Packet time to the answerer and to the offerer.
    pub ptime: (Option<u32>, Option<u32>),
    /// fmtp for the encoders (offerer side, answerer side).
    pub fmtp: (Option<String>, Option<String>),
    /// Bit rate for the encoders (offerer side, answerer side), where
    /// `set` or `transcode` gave one.
    pub bitrate: (Option<u32>, Option<u32>),
}

/// What an answer decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// The codec is shared: packets pass. `Some`: the formats for the
    /// offerer's answer (the relay's added formats removed).
    Pass(Option<Vec<Format>>),
    /// The relay transcodes; the offerer's answer lists `to_offerer`.
    Transcode { to_offerer: Vec<Format>, transcoding: Box<Transcoding> },
}

/// Decides from the answerer's formats how the stream is relayed.
pub fn answer(o: &Offered, answer: &[Format], registry: &Registry) -> Result<Plan, String> {
    if !o.engaged {
        return Ok(Plan::Pass(None));
    }
    let Some(b) = answer.iter().find(|f| f.is_codec()) else {
        return Ok(Plan::Pass(None));
    };
    let offered_codec = o.from_offerer.iter().any(|f| f.same_codec(b) && f.pt == b.pt);
    // One leg has telephone-event and the other not: the audio is decoded
    // for the tones in it, even when the codec is shared.
    let te = |list: &[Format], clock: u32| list.iter().find(|f| f.is_dtmf() && f.clock_rate == clock).cloned();
    let dtmf_convert = o.dtmf_transcode
        && o.from_offerer.iter().any(|f| f.same_codec(b))
        && o.from_offerer
            .iter()
            .find(|f| f.same_codec(b))
            .is_some_and(|a| te(&o.from_offerer, a.clock_rate).is_some() != te(answer, b.clock_rate).is_some());
    let forced = o.always || o.ptime_to_answerer.is_some() || o.ptime_to_offerer.is_some() || dtmf_convert;
    let can = |f: &Format| registry.find(&f.name, f.clock_rate, f.channels).is_some();
    if offered_codec && !(forced && can(b)) {
        // Pass-through: the offerer hears only what it offered.
        let keep: Vec<Format> =
            answer.iter().filter(|f| o.from_offerer.iter().any(|x| x.pt == f.pt && x.same_codec(f))).cloned().collect();
        return Ok(Plan::Pass(Some(if keep.is_empty() { answer.to_vec() } else { keep })));
    }
    if !can(b) {
        return Err(format!("the answer's codec {b} cannot be transcoded"));
    }
    // The offerer's codec: its first one the relay decodes and encodes, and
    // that works at a PCM rate the answer's codec works at too (so nothing
    // is resampled: G.722 and Opus run at 8 kHz beside G.711).
    let info = |f: &Format| registry.find(&f.name, f.clock_rate, f.channels).map(|(p, i)| p.codecs()[i].clone());
    let bi = info(b).ok_or_else(|| format!("the answer's codec {b} cannot be transcoded"))?;
    let a = o
        .from_offerer
        .iter()
        .find(|f| {
            f.is_codec()
                && info(f).is_some_and(|ai| {
                    ai.pcm_channels == bi.pcm_channels && srtpgate_codec::common_pcm_rate(&ai, &bi).is_some()
                })
        })
        .cloned()
        .ok_or_else(|| format!("no codec of the offer can be transcoded to the answer's {b}"))?;
    let (te_a, te_b) = (te(&o.from_offerer, a.clock_rate), te(answer, b.clock_rate));
    let dtmf = if o.dtmf_transcode || (te_a.is_some() && te_b.is_some()) { (te_a, te_b) } else { (None, None) };
    let mut to_offerer = vec![a.clone()];
    to_offerer.extend(dtmf.0.clone());
    let fmtp_for = |f: &Format| {
        o.set.iter().find(|s| s.matches(f) && s.fmtp.is_some()).and_then(|s| s.fmtp.clone()).or_else(|| f.fmtp.clone())
    };
    let transcoding = Transcoding {
        fmtp: (fmtp_for(&a), fmtp_for(b)),
        bitrate: (o.bitrate_for(&a), o.bitrate_for(b)),
        offerer: a,
        answerer: b.clone(),
        dtmf,
        ptime: (o.ptime_to_answerer, o.ptime_to_offerer),
    };
    Ok(Plan::Transcode { to_offerer, transcoding: Box::new(transcoding) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pt: u8, name: &str, clock: u32) -> Format {
        Format { pt, name: name.into(), clock_rate: clock, channels: 1, fmtp: None, extra: Vec::new() }
    }

    fn ops(k: &str, v: &[&str]) -> CodecOps {
        let mut o = CodecOps::default();
        let l: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        match k {
            "strip" => o.strip = l,
            "offer" => o.offer = l,
            "except" => o.except = l,
            "transcode" => o.transcode = l,
            "mask" => o.mask = l,
            "accept" => o.accept = l,
            _ => unreachable!(),
        }
        o
    }

    fn names(v: &[Format]) -> Vec<String> {
        v.iter().map(|f| format!("{}:{}", f.pt, f.name)).collect()
    }

    fn pcmu_te() -> Vec<Format> {
        vec![f(0, "PCMU", 8000), f(101, "telephone-event", 8000)]
    }

    #[test]
    fn spec_parsing() {
        let s = Spec::parse("opus/48000/2/32000/20/useinbandfec=1").unwrap();
        assert_eq!((s.name.as_str(), s.clock, s.channels, s.ptime), ("opus", Some(48000), Some(2), Some(20)));
        assert_eq!(s.bitrate, Some(32000));
        assert_eq!(Spec::parse("opus/48000/2/0").unwrap().bitrate, None);
        assert!(Spec::parse("opus/48000/2/fast").is_none());
        assert_eq!(s.fmtp.as_deref(), Some("useinbandfec=1"));
        assert!(Spec::parse("PCMU/eight").is_none());
        assert!(Spec::parse("").is_none());
        assert!(Spec::parse("8").unwrap().matches(&f(8, "PCMA", 8000)));
        assert!(Spec::parse("pcma/8000").unwrap().matches(&f(8, "PCMA", 8000)));
        assert!(!Spec::parse("PCMA/16000").unwrap().matches(&f(8, "PCMA", 8000)));
    }

    #[test]
    fn no_options_pass_everything_unchanged() {
        let r = Registry::new();
        let (out, o) = offer(&pcmu_te(), &CodecOps::default(), false, (None, None), &[], &r).unwrap();
        assert_eq!(out, pcmu_te());
        assert!(!o.engaged);
        assert_eq!(answer(&o, &[f(8, "PCMA", 8000)], &r).unwrap(), Plan::Pass(None));
    }

    #[test]
    fn strip_offer_except() {
        let r = Registry::new();
        let a = vec![f(0, "PCMU", 8000), f(8, "PCMA", 8000), f(9, "G722", 8000), f(101, "telephone-event", 8000)];
        let (out, _) = offer(&a, &ops("strip", &["PCMA"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["0:PCMU", "9:G722", "101:telephone-event"]);
        let mut o = ops("strip", &["all"]);
        o.except = vec!["G722".into(), "telephone-event".into()];
        let (out, _) = offer(&a, &o, false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["9:G722", "101:telephone-event"]);
        let (out, _) = offer(&a, &ops("offer", &["G722", "PCMA"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["9:G722", "8:PCMA", "0:PCMU", "101:telephone-event"]);
        // Stripping everything leaves the list as it was.
        let (out, _) = offer(&a, &ops("strip", &["all"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(out, a);
    }

    #[test]
    fn transcode_adds_and_mask_hides_the_offerers_codec() {
        let r = Registry::new();
        let (out, o) = offer(&pcmu_te(), &ops("transcode", &["PCMA"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["0:PCMU", "101:telephone-event", "8:PCMA"]);
        assert_eq!(names(&o.added), ["8:PCMA"]);
        let mut m = ops("transcode", &["PCMA"]);
        m.mask = vec!["PCMU".into()];
        let (out, o) = offer(&pcmu_te(), &m, false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["101:telephone-event", "8:PCMA"]);
        assert_eq!(names(&o.from_offerer), ["0:PCMU", "101:telephone-event"]);
        // The answerer takes the added codec: transcoding, DTMF mapped.
        let plan = answer(&o, &[f(8, "PCMA", 8000), f(100, "telephone-event", 8000)], &r).unwrap();
        let Plan::Transcode { to_offerer, transcoding: leg } = plan else { panic!("{plan:?}") };
        assert_eq!(names(&to_offerer), ["0:PCMU", "101:telephone-event"]);
        assert_eq!((leg.offerer.pt, leg.answerer.pt), (0, 8));
        assert_eq!((leg.dtmf.0.map(|a| a.pt), leg.dtmf.1.map(|b| b.pt)), (Some(101), Some(100)));
        // A codec no plugin provides is left out, and named for the reply.
        let (out, o) = offer(&pcmu_te(), &ops("transcode", &["AMR-WB", "PCMA"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["0:PCMU", "101:telephone-event", "8:PCMA"]);
        assert_eq!(o.unsupported, ["AMR-WB"]);
    }

    #[test]
    fn malformed_codec_options_are_named_for_the_warning_and_the_rest_apply() {
        let r = Registry::new();
        let mut m = ops("transcode", &["PCMA/8000/1/fast", "PCMA"]);
        m.set = vec!["PCMA/8000/1/fast".into(), "PCMA/eight".into()];
        m.strip = vec!["".into()];
        let (out, o) = offer(&pcmu_te(), &m, false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["0:PCMU", "101:telephone-event", "8:PCMA"]);
        assert_eq!(o.malformed, ["", "PCMA/8000/1/fast", "PCMA/eight"]);
        // Also when stripping everything leaves the offer as it was.
        let (_, o) = offer(&pcmu_te(), &ops("strip", &["all", "PCMU/x"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(o.malformed, ["PCMU/x"]);
        let (_, o) = offer(&pcmu_te(), &ops("transcode", &["PCMA"]), false, (None, None), &[], &r).unwrap();
        assert!(o.malformed.is_empty());
    }

    #[test]
    fn a_bit_rate_from_transcode_or_set_reaches_the_encoder_set_first() {
        let r = Registry::new();
        let (_, o) =
            offer(&pcmu_te(), &ops("transcode", &["PCMA/8000/1/48000"]), false, (None, None), &[], &r).unwrap();
        let Plan::Transcode { transcoding: leg, .. } = answer(&o, &[f(8, "PCMA", 8000)], &r).unwrap() else { panic!() };
        // The encoder towards the answerer (PCMA) gets it; towards the offerer none.
        assert_eq!(leg.bitrate, (None, Some(48000)));
        let mut m = ops("transcode", &["PCMA/8000/1/48000"]);
        m.set = vec!["PCMA/8000/1/56000".into(), "PCMU//1/40000".into()];
        let (_, o) = offer(&pcmu_te(), &m, false, (None, None), &[], &r).unwrap();
        let Plan::Transcode { transcoding: leg, .. } = answer(&o, &[f(8, "PCMA", 8000)], &r).unwrap() else { panic!() };
        assert_eq!(leg.bitrate, (Some(40000), Some(56000)));
        // Without one, the codec's own.
        let (_, o) = offer(&pcmu_te(), &ops("transcode", &["PCMA"]), false, (None, None), &[], &r).unwrap();
        let Plan::Transcode { transcoding: leg, .. } = answer(&o, &[f(8, "PCMA", 8000)], &r).unwrap() else { panic!() };
        assert_eq!(leg.bitrate, (None, None));
    }

    #[test]
    fn an_answer_with_the_offerers_codec_passes_without_the_added_ones() {
        let r = Registry::new();
        let (_, o) = offer(&pcmu_te(), &ops("transcode", &["PCMA"]), false, (None, None), &[], &r).unwrap();
        let plan = answer(&o, &[f(0, "PCMU", 8000), f(8, "PCMA", 8000), f(101, "telephone-event", 8000)], &r);
        assert_eq!(plan.unwrap(), Plan::Pass(Some(pcmu_te())));
    }

    #[test]
    fn transcode_telephone_event_converts_dtmf_between_tones_and_events() {
        let r = Registry::new();
        // The offerer has no telephone-event: the relay offers one per
        // clock rate and detects the offerer's tones.
        let a = vec![f(8, "PCMA", 8000)];
        let (out, o) = offer(&a, &ops("transcode", &["telephone-event"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(names(&out), ["8:PCMA", "96:telephone-event"]);
        assert_eq!(out[1].fmtp.as_deref(), Some("0-15"));
        assert!(o.dtmf_transcode && o.engaged && o.unsupported.is_empty());
        // The answerer takes it with the same codec: transcoded anyway (the
        // tones are in the audio), the offerer's answer without events.
        let plan = answer(&o, &[f(8, "PCMA", 8000), f(96, "telephone-event", 8000)], &r).unwrap();
        let Plan::Transcode { to_offerer, transcoding: leg } = plan else { panic!("{plan:?}") };
        assert_eq!(names(&to_offerer), ["8:PCMA"]);
        assert_eq!((leg.offerer.pt, leg.answerer.pt), (8, 8));
        assert_eq!((leg.dtmf.0.as_ref().map(|x| x.pt), leg.dtmf.1.as_ref().map(|x| x.pt)), (None, Some(96)));
        // An answerer without it: nothing to convert, the codec passes.
        assert!(matches!(answer(&o, &[f(8, "PCMA", 8000)], &r).unwrap(), Plan::Pass(_)));
        // The offerer has it and the answerer not: the relay plays the
        // offerer's events as tones and detects the answerer's.
        let (out, o) =
            offer(&pcmu_te(), &ops("transcode", &["telephone-event"]), false, (None, None), &[], &r).unwrap();
        assert_eq!(out, pcmu_te());
        let Plan::Transcode { to_offerer, transcoding: leg } = answer(&o, &[f(0, "PCMU", 8000)], &r).unwrap() else {
            panic!()
        };
        assert_eq!(names(&to_offerer), ["0:PCMU", "101:telephone-event"]);
        assert_eq!((leg.dtmf.0.as_ref().map(|x| x.pt), leg.dtmf.1.as_ref().map(|x| x.pt)), (Some(101), None));
        // Both have it: events pass as before, the codec too.
        let plan = answer(&o, &[f(0, "PCMU", 8000), f(101, "telephone-event", 8000)], &r).unwrap();
        assert!(matches!(plan, Plan::Pass(_)), "{plan:?}");
        // Without the option an answer lacking telephone-event converts nothing.
        let (_, o) = offer(&pcmu_te(), &ops("transcode", &["PCMA"]), false, (None, None), &[], &r).unwrap();
        let Plan::Transcode { transcoding: leg, .. } = answer(&o, &[f(8, "PCMA", 8000)], &r).unwrap() else { panic!() };
        assert_eq!(leg.dtmf, (None, None));
    }

    #[test]
    fn always_transcode_and_ptime_force_the_codec_path() {
        let r = Registry::new();
        let (_, o) = offer(&pcmu_te(), &CodecOps::default(), true, (None, None), &[], &r).unwrap();
        let Plan::Transcode { transcoding: leg, .. } = answer(&o, &[f(0, "PCMU", 8000)], &r).unwrap() else { panic!() };
        assert_eq!((leg.offerer.name.as_str(), leg.answerer.name.as_str()), ("PCMU", "PCMU"));
        let (_, o) = offer(&pcmu_te(), &CodecOps::default(), false, (Some(40), None), &[], &r).unwrap();
        let Plan::Transcode { transcoding: leg, .. } = answer(&o, &[f(0, "PCMU", 8000)], &r).unwrap() else { panic!() };
        assert_eq!(leg.ptime, (Some(40), None));
    }

    #[test]
    fn a_reoffer_keeps_the_receivers_codec() {
        // The callee (PCMA) re-offers; the caller only has PCMU, which the
        // stream already transcodes to: it stays in the offer to the caller.
        let r = Registry::new();
        let b = vec![f(8, "PCMA", 8000)];
        let (out, o) = offer(&b, &CodecOps::default(), false, (None, None), &[f(0, "PCMU", 8000)], &r).unwrap();
        assert_eq!(names(&out), ["8:PCMA", "0:PCMU"]);
        assert!(o.engaged);
        let Plan::Transcode { to_offerer, .. } = answer(&o, &[f(0, "PCMU", 8000)], &r).unwrap() else { panic!() };
        assert_eq!(names(&to_offerer), ["8:PCMA"]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// Any strings as codec options (the NG layer passes them as sent):
        /// the offer never panics, and each option either parses or is
        /// named in `malformed`, once.
        #[test]
        fn any_codec_options_parse_or_are_named(
            opts in proptest::collection::vec("[A-Za-z0-9/=; .-]{0,24}|(PCM[AU]|opus|G722)(/[0-9a-z]{0,6}){0,6}", 0..6),
            which in 0usize..8,
        ) {
            let r = Registry::new();
            let mut m = CodecOps::default();
            let lists = [&mut m.strip, &mut m.offer, &mut m.except, &mut m.transcode, &mut m.mask, &mut m.accept, &mut m.consume, &mut m.set];
            *lists.into_iter().nth(which).expect("list") = opts.clone();
            if let Ok((_, o)) = offer(&pcmu_te(), &m, false, (None, None), &[], &r) {
                for x in &opts {
                    let named = o.malformed.iter().filter(|b| *b == x).count();
                    proptest::prop_assert_eq!(named, usize::from(Spec::parse(x).is_none()), "{:?}", x);
                }
            }
        }
    }
}
