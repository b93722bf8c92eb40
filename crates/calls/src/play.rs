//! `play media`, `stop media` and `play DTMF`: what the relay plays to a
//! party, in that party's codec and under the relay's key towards it.
//!
//! The table picks the listener's stream and codec, builds the encoder
//! from the codec plugins and asks the host for the prompt's audio at the
//! encoder's rate ([`Resources::prompt`]); the worker that carries the
//! call plays it ([`Command::Play`]). Choices where rtpengine leaves room:
//! a prompt replaces what the other party sends to the listener while it
//! plays (rtpengine's `block egress`, always), `repeat-duration` alone
//! repeats the prompt until that time is up (as rtpengine documents it),
//! `start-pos` and `last-frame-pos` count samples at the file's own rate
//! (rtpengine's frame position of a WAV file), and `play DTMF` needs no
//! `inject DTMF` in the offer: a digit is played from the relay's own
//! SSRC while the other party's audio is held back.

use crate::call::{other, Call};
use crate::command::{Command, PromptSource, Resources};
use crate::media::{select, Selection};
use crate::table::{Refusal, Table};
use rand::RngCore;
use srtpgate_codec::payload::PayloadKind;
use srtpgate_codec::player::{Digit, Output, Player, Progress, PromptPlay};
use srtpgate_codec::{abi, Registry};
use srtpgate_ng::{Command as Ng, Request, Value};
use srtpgate_sdp::formats::Format;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// What is played to one party.
pub struct Playing {
    /// The stream it is played on.
    pub stream: usize,
    /// Where the worker's player stands.
    pub progress: Arc<Progress>,
}

/// Longest `repeat-duration`, ms (a day).
const MAX_REPEAT_MS: i64 = 86_400_000;
/// Longest played digit and pause, ms (rtpengine clamps to 100–5000 ms;
/// more than a minute is refused as a mistake).
const MAX_DIGIT_MS: i64 = 60_000;

/// The RFC 4733 event of a `code`: `0`–`9`, `*`, `#`, `A`–`D`, or its
/// number (0–15).
pub(crate) fn event_code(code: &str) -> Option<u8> {
    match code.parse::<u8>() {
        Ok(n) if n <= 15 && code.len() > 1 || code.len() == 1 && n <= 9 => Some(n),
        _ => {
            let mut c = code.chars();
            match (c.next(), c.next()) {
                (Some(d), None) => srtpgate_codec::dtmf::event_of(d),
                _ => None,
            }
        }
    }
}

impl Table {
    /// `play media`: `{"result":"ok","duration":ms}`.
    pub(crate) fn play_media(&mut self, req: &Request, res: &mut dyn Resources) -> Result<Value, Refusal> {
        let (call_id, parties) = self.players_of(req)?;
        let m = &req.media;
        let (source, what) = match (&m.file, &m.blob, m.db_id) {
            (Some(f), _, _) => (PromptSource::File(f.clone()), "file"),
            (None, Some(b), _) => (PromptSource::Blob(b.clone()), "blob"),
            (None, None, Some(_)) => {
                return Err("Failed to start media playback from database: srtpgate has no media database".into())
            }
            (None, None, None) => return Err("No media file specified".into()),
        };
        let times = match m.repeat_times {
            None => None,
            Some(n) if (0..=i64::from(u32::MAX)).contains(&n) => Some(n as u32),
            Some(n) => return Err(format!("repeat-times {n} is not 0 or more")),
        };
        let for_ms = match m.repeat_duration {
            None => None,
            Some(n) if n <= 0 => None,
            Some(n) if n <= MAX_REPEAT_MS => Some(n as u64),
            Some(n) => return Err(format!("repeat-duration {n} ms is over a day")),
        };
        let start = match m.start_pos {
            None => 0,
            Some(n) if n >= 0 => n as u64,
            Some(n) => return Err(format!("start-pos {n} is negative")),
        };
        let call = self.calls.get(&call_id).ok_or("Unknown call-ID")?;
        let mut plays = Vec::new();
        for &p in &parties {
            let fail = |e: String| format!("Failed to start media playback from {what}: {e}");
            let h = heard(call, p, &self.codecs).map_err(fail)?;
            if h.codec.is_none() {
                return Err(fail("no codec of the party's SDP can be encoded".into()));
            }
            let prompt = res.prompt(&source, &|r| h.rate_for(r)).map_err(fail)?;
            let rate = prompt.rate();
            let out = h.output(Some(rate), self.cfg.codec_complexity).map_err(fail)?;
            let stream = h.stream;
            let first = start.saturating_mul(rate as u64) / prompt.source_rate().max(1) as u64;
            if first >= prompt.samples().len() as u64 && start > 0 {
                return Err(format!(
                    "start-pos {start} is past the end of the media ({} samples at {} Hz)",
                    prompt.samples().len() as u64 * prompt.source_rate() as u64 / rate.max(1) as u64,
                    prompt.source_rate()
                ));
            }
            plays.push((p, stream, out, prompt, first as usize));
        }
        let call = self.calls.get_mut(&call_id).ok_or("Unknown call-ID")?;
        let (key, worker) = (call.key, call.worker);
        let mut duration = None;
        let mut cmds = Vec::new();
        for (p, stream, out, prompt, first) in plays {
            duration.get_or_insert(prompt.duration_ms());
            let progress = Arc::new(Progress::default());
            progress.playing.store(true, Relaxed);
            let player = new_player(out, progress.clone());
            let play = PromptPlay {
                prompt,
                start: first,
                times: times.unwrap_or(if for_ms.is_some() { 0 } else { 1 }),
                for_ms,
            };
            call.controls.players[p] = Some(Playing { stream, progress });
            cmds.push(Command::Play {
                worker,
                call: key,
                stream,
                party: p,
                player: Box::new(player),
                prompt: Some(play),
                digit: None,
            });
        }
        for c in cmds {
            self.command(c);
        }
        tracing::info!(call_id, "play media");
        let mut v = srtpgate_ng::ok();
        if let Some(d) = duration.filter(|&d| d > 0) {
            v.insert("duration", d as i64);
        }
        Ok(v)
    }

    /// `stop media`: `{"result":"ok","last-frame-pos":N}`.
    pub(crate) fn stop_media(&mut self, req: &Request) -> Result<Value, Refusal> {
        let (call_id, parties) = self.players_of(req)?;
        let call = self.calls.get(&call_id).ok_or("Unknown call-ID")?;
        let (key, worker) = (call.key, call.worker);
        let mut last = 0;
        let mut cmds = Vec::new();
        for p in parties {
            let pl = call.controls.players[p].as_ref().ok_or("Not currently playing media")?;
            last = pl.progress.position.load(Relaxed);
            cmds.push(Command::StopPlay { worker, call: key, stream: pl.stream, party: p });
        }
        for c in cmds {
            self.command(c);
        }
        Ok(srtpgate_ng::ok().with("last-frame-pos", last as i64))
    }

    /// `play DTMF`: `{"result":"ok"}`. The selected party is the one the
    /// digit comes from; it is played to the other.
    pub(crate) fn play_dtmf(&mut self, req: &Request) -> Result<Value, Refusal> {
        let (call_id, parties) = self.players_of(req)?;
        let m = &req.media;
        let event = m.code.as_deref().and_then(event_code).ok_or("Out of range 'code' specified")?;
        let ms = |v: Option<i64>, default: i64, what: &str, notes: &mut Vec<String>| -> Result<u32, Refusal> {
            match v.filter(|&n| n != 0).unwrap_or(default) {
                n if !(0..=MAX_DIGIT_MS).contains(&n) => {
                    Err(format!("{what} {n} ms is out of range (1 to {MAX_DIGIT_MS})"))
                }
                n if !(100..=5000).contains(&n) => {
                    notes.push(format!("{what} {n} ms clamped to 100..5000 ms, as rtpengine"));
                    Ok(n.clamp(100, 5000) as u32)
                }
                n => Ok(n as u32),
            }
        };
        let duration_ms = ms(m.duration, 250, "duration", &mut self.notes)?;
        let pause_ms = ms(m.pause, 100, "pause", &mut self.notes)?;
        // rtpengine documents -8 dB as the default; volume is dB below the
        // loudest, either sign.
        let volume = m.volume.map_or(8, |v| v.unsigned_abs().min(63)) as u8;
        let digit = Digit { event, duration_ms, volume, pause_ms };
        let call = self.calls.get(&call_id).ok_or("Unknown call-ID")?;
        let mut sinks = Vec::new();
        for &p in &parties {
            let sink = other(p);
            if call.tags[sink].is_none() {
                return Err("There is no sink media capable of DTMF playback".into());
            }
            let no_sink = |_| "There is no sink media capable of DTMF playback".to_string();
            let h = heard(call, sink, &self.codecs).map_err(no_sink)?;
            // Tones are speech-band: the codec's lowest rate from 8 kHz.
            let rate = h.codec.as_ref().map(|_| h.rate_for(8000));
            let out = h.output(rate, self.cfg.codec_complexity).map_err(no_sink)?;
            let stream = h.stream;
            if out.event_pt.is_none() && out.encoder.is_none() {
                return Err("There is no sink media capable of DTMF playback".into());
            }
            sinks.push((sink, stream, out));
        }
        let call = self.calls.get_mut(&call_id).ok_or("Unknown call-ID")?;
        let (key, worker) = (call.key, call.worker);
        let mut cmds = Vec::new();
        for (sink, stream, out) in sinks {
            let progress = match &call.controls.players[sink] {
                Some(pl) if pl.stream == stream => pl.progress.clone(),
                _ => Arc::new(Progress::default()),
            };
            let player = new_player(out, progress.clone());
            if call.controls.players[sink].as_ref().is_none_or(|pl| pl.stream != stream) {
                call.controls.players[sink] = Some(Playing { stream, progress });
            }
            cmds.push(Command::Play {
                worker,
                call: key,
                stream,
                party: sink,
                player: Box::new(player),
                prompt: None,
                digit: Some(digit),
            });
        }
        for c in cmds {
            self.command(c);
        }
        tracing::info!(call_id, event, "play DTMF");
        Ok(srtpgate_ng::ok())
    }

    /// The call and the parties a play command selects (`all`: every party
    /// with a tag); none selected is an error, as in rtpengine.
    fn players_of(&self, req: &Request) -> Result<(String, Vec<usize>), Refusal> {
        let call_id = req.call_id.as_deref().ok_or("No call-id in message")?;
        let call = self.calls.get(call_id).ok_or("Unknown call-ID")?;
        let parties = match select(call, req)? {
            Selection::Call if req.flags.all => (0..2).filter(|&p| call.tags[p].is_some()).collect(),
            Selection::Call => return Err("No participant party specified".into()),
            Selection::Parties(ps) => ps,
        };
        if req.command == Ng::PlayMedia && parties.iter().any(|&p| call.tags[p].is_none()) {
            return Err("No participant party specified".into());
        }
        Ok((call_id.to_owned(), parties))
    }
}

/// A player for `out` from a random SSRC, sequence number and timestamp
/// (the worker continues the listener's earlier player instead, if any).
fn new_player(out: Output, progress: Arc<Progress>) -> Player {
    let mut rng = rand::rng();
    Player::new(out, rng.next_u32(), rng.next_u32() as u16, rng.next_u32(), progress)
}

/// What a party is played in: the stream (its first audio stream that is
/// not rejected), the first codec of its SDP the relay encodes (with its
/// plugin), and its `telephone-event` at that codec's clock rate.
struct Heard {
    stream: usize,
    codec: Option<(Arc<srtpgate_codec::Plugin>, usize, Format)>,
    event_pt: Option<u8>,
}

fn heard(call: &Call, party: usize, codecs: &Registry) -> Result<Heard, String> {
    let (stream, s) = call
        .streams
        .iter()
        .enumerate()
        .find_map(|(i, s)| s.as_ref().filter(|s| s.media_type == "audio" && !s.rejected).map(|s| (i, s)))
        .ok_or("No suitable SDP section for media playback")?;
    // What this party receives: on a transcoded stream its own codec
    // first, else any of its SDP's (it accepted every one).
    let formats: Vec<&Format> = s.sdp_formats(party).collect();
    let codec = formats.iter().find_map(|f| {
        if matches!(PayloadKind::of(&f.name), PayloadKind::Event | PayloadKind::ComfortNoise) {
            return None;
        }
        codecs.find(&f.name, f.clock_rate, f.channels).map(|(p, i)| (p, i, (*f).clone()))
    });
    let clock_rate = codec.as_ref().map_or(8000, |c| c.2.clock_rate);
    let event_pt = formats
        .iter()
        .find(|f| PayloadKind::of(&f.name) == PayloadKind::Event && f.clock_rate == clock_rate)
        .map(|f| f.pt);
    Ok(Heard { stream, codec, event_pt })
}

impl Heard {
    /// The PCM rate to encode audio of `rate` Hz at: the lowest the codec
    /// takes that keeps it (a 16 kHz prompt in Opus is encoded from 16 kHz,
    /// not resampled to 48 kHz first), else its highest.
    fn rate_for(&self, rate: u32) -> u32 {
        let Some((p, i, _)) = &self.codec else { return rate };
        let info = &p.codecs()[*i];
        let rates = info.pcm_rate_list();
        rates.iter().rev().copied().find(|&r| r >= rate).or(rates.first().copied()).unwrap_or(info.pcm_rate)
    }

    /// How the party is played to, its encoder at `rate` (with the
    /// operator's encoder complexity, as transcoding's).
    fn output(&self, rate: Option<u32>, complexity: Option<u8>) -> Result<Output, String> {
        let encoder = match &self.codec {
            Some((plugin, i, f)) => {
                let mut e =
                    plugin.instance_for(*i, f.fmtp.as_deref(), rate, abi::USE_ENCODE).map_err(|e| e.to_string())?;
                if let Some(c) = complexity {
                    e.control(abi::CTL_COMPLEXITY, c as i32).map_err(|e| e.to_string())?;
                }
                Some(e)
            }
            None => None,
        };
        let format = self.codec.as_ref().map(|c| &c.2);
        // A sample codec (G.711, G.722) takes any length: 20 ms, as phones
        // send it; another its own frame (Opus 20 ms, G.729 10 ms).
        let frame_ms =
            encoder.as_ref().map_or(20, |e| (e.frame_samples() as u64 * 1000 / e.pcm_rate().max(1) as u64) as u32);
        let sample_codec = format.is_some_and(|f| matches!(PayloadKind::of(&f.name), PayloadKind::Fill(_)));
        let ptime_ms = if sample_codec || !(10..=60).contains(&frame_ms) { 20 } else { frame_ms };
        Ok(Output {
            encoder,
            pt: format.map_or(0, |f| f.pt),
            clock_rate: format.map_or(8000, |f| f.clock_rate),
            ptime_ms,
            event_pt: self.event_pt,
        })
    }
}
