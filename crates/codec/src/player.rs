//! What the relay plays to a party (`play media`, `play DTMF`): a queue of
//! prompts and DTMF digits made into RTP packets one frame at a time, in
//! the party's codec and under an SSRC of the relay's own. Sans-IO: the
//! worker asks for the packets due at its time and protects and sends
//! them; nothing here allocates after [`Player::new`].
//!
//! Timing follows rtpengine's player: the sequence number runs on across
//! everything one party is played (a new prompt continues it), the
//! timestamp advances by one frame per packet and by the wall-clock time
//! of any gap, and the first packet of each prompt or digit has the
//! marker bit. A digit is sent as RFC 4733 events when the party
//! negotiated `telephone-event` at its codec's clock rate (one packet per
//! frame, all with the digit's start timestamp, the end packet sent three
//! times as RFC 4733 §2.5.1.4 advises), else as its tone pair in the codec.

use crate::dtmf::ToneGen;
use crate::prompt::Prompt;
use crate::Instance;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// Most packets [`Player::next`] writes: an RTP header and a payload.
pub const MAX_PLAYED_PACKET: usize = 1500;
/// Items (prompts and digits) one player queues.
pub const MAX_QUEUED: usize = 64;
/// RFC 4733's end packet is sent this many times.
const END_REPEATS: u8 = 3;
/// A worker that fell this far behind (a stall) skips ahead rather than
/// send a burst.
const MAX_BEHIND_NS: u64 = 200_000_000;

/// How the party hears what the relay plays: its codec and payload types.
pub struct Output {
    /// Encodes prompts and tones (`None`: no codec the relay can encode;
    /// only RFC 4733 events can be played).
    pub encoder: Option<Instance>,
    /// The payload type of the encoded audio.
    pub pt: u8,
    /// Its RTP clock rate.
    pub clock_rate: u32,
    /// Packet time, ms.
    pub ptime_ms: u32,
    /// The party's `telephone-event` payload type at `clock_rate`.
    pub event_pt: Option<u8>,
}

/// Where the player stands, shared with the control thread (for `stop
/// media`'s `last-frame-pos` and for `query`).
#[derive(Debug, Default)]
pub struct Progress {
    /// Position of the last prompt frame sent, in samples at the prompt
    /// file's own rate (rtpengine's frame position for a WAV file).
    pub position: AtomicU64,
    /// Packets made.
    pub packets: AtomicU64,
    /// Digits sent.
    pub digits: AtomicU64,
    /// Something is queued or playing.
    pub playing: AtomicBool,
}

/// A prompt to play.
pub struct PromptPlay {
    /// The audio, at the encoder's PCM rate.
    pub prompt: Arc<Prompt>,
    /// The first sample played.
    pub start: usize,
    /// Plays in all (at least 1).
    pub times: u32,
    /// Plays on (repeating) until this many ms have passed, then stops
    /// (with `times`, whichever comes first).
    pub for_ms: Option<u64>,
}

/// A DTMF digit to play.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digit {
    /// RFC 4733 event (0–15).
    pub event: u8,
    /// Length, ms.
    pub duration_ms: u32,
    /// RFC 4733 volume: dB below 0 dBm0 (0–63).
    pub volume: u8,
    /// Quiet after it, ms.
    pub pause_ms: u32,
}

enum Item {
    Prompt { p: PromptPlay, pos: usize, played: u32, elapsed_ms: u64, started: bool },
    Digit { d: Digit, sent: u32, end_left: u8, start_ts: u32, pause_left: u32 },
}

/// Why a play cannot start.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlayError {
    /// No codec to encode the prompt in.
    #[error("no codec of the party's SDP can be encoded by srtpgate")]
    NoEncoder,
    /// The queue is full.
    #[error("{MAX_QUEUED} prompts and digits are queued already")]
    Full,
}

/// One party's player; see the module text.
pub struct Player {
    out: Output,
    ssrc: u32,
    seq: u16,
    ts: u32,
    /// Samples (at the encoder's PCM rate) of one frame.
    frame: usize,
    /// RTP timestamp units of one frame.
    frame_ts: u32,
    frame_ns: u64,
    pcm: Vec<i16>,
    tone: Option<ToneGen>,
    queue: VecDeque<Item>,
    /// When the next packet is due (ns, the worker's clock); 0: at once.
    due_ns: u64,
    /// The end of the last packet sent, for the timestamp of a gap.
    last_end_ns: Option<u64>,
    progress: Arc<Progress>,
}

impl Player {
    /// A player for `out`, sending as `ssrc` from sequence number `seq`
    /// and timestamp `ts`.
    pub fn new(out: Output, ssrc: u32, seq: u16, ts: u32, progress: Arc<Progress>) -> Player {
        let ptime = out.ptime_ms.clamp(5, 120);
        let rate = out.encoder.as_ref().map_or(out.clock_rate, Instance::pcm_rate);
        let frame = (rate as u64 * ptime as u64 / 1000).max(1) as usize;
        let frame_ts = (out.clock_rate as u64 * ptime as u64 / 1000).max(1) as u32;
        let channels = out.encoder.as_ref().map_or(1, |e| e.info().pcm_channels as usize);
        Player {
            ssrc,
            seq,
            ts,
            frame,
            frame_ts,
            frame_ns: ptime as u64 * 1_000_000,
            pcm: vec![0; frame * channels],
            tone: out.encoder.as_ref().map(|_| ToneGen::new(rate)),
            out,
            queue: VecDeque::with_capacity(MAX_QUEUED),
            due_ns: 0,
            last_end_ns: None,
            progress,
        }
    }

    /// The PCM rate prompts must have.
    pub fn pcm_rate(&self) -> Option<u32> {
        self.out.encoder.as_ref().map(Instance::pcm_rate)
    }

    /// The packet time, ns.
    pub fn frame_ns(&self) -> u64 {
        self.frame_ns
    }

    /// Where the next play of this party continues: SSRC, sequence
    /// number, timestamp (advanced by the time since the last packet, as
    /// at `now_ns`).
    pub fn continuation(&self, now_ns: u64) -> (u32, u16, u32) {
        (self.ssrc, self.seq, self.ts.wrapping_add(self.gap_ts(now_ns)))
    }

    /// Goes on from where `old` (this party's previous player) left off:
    /// its SSRC, sequence number and timestamp.
    pub fn continue_from(&mut self, old: &Player, now_ns: u64) {
        (self.ssrc, self.seq, self.ts) = old.continuation(now_ns);
    }

    /// Plays `p` after what is queued; with `replace`, instead of every
    /// prompt queued or playing (a new `play media`).
    pub fn play(&mut self, p: PromptPlay, replace: bool) -> Result<(), PlayError> {
        if self.out.encoder.is_none() {
            return Err(PlayError::NoEncoder);
        }
        if replace {
            self.queue.retain(|i| matches!(i, Item::Digit { .. }));
        }
        if self.queue.len() >= MAX_QUEUED {
            return Err(PlayError::Full);
        }
        self.queue.push_back(Item::Prompt { p, pos: 0, played: 0, elapsed_ms: 0, started: false });
        self.progress.playing.store(true, Relaxed);
        Ok(())
    }

    /// Plays `d` before any prompt (a prompt playing pauses for it) and
    /// after the digits queued already.
    pub fn dtmf(&mut self, d: Digit) -> Result<(), PlayError> {
        if self.out.event_pt.is_none() && self.out.encoder.is_none() {
            return Err(PlayError::NoEncoder);
        }
        if self.queue.len() >= MAX_QUEUED {
            return Err(PlayError::Full);
        }
        let at = self.queue.iter().position(|i| matches!(i, Item::Prompt { .. })).unwrap_or(self.queue.len());
        self.queue.insert(at, Item::Digit { d, sent: 0, end_left: END_REPEATS, start_ts: 0, pause_left: d.pause_ms });
        self.progress.playing.store(true, Relaxed);
        Ok(())
    }

    /// Drops every prompt (`stop media`); digits go on.
    pub fn stop_prompts(&mut self) {
        self.queue.retain(|i| matches!(i, Item::Digit { .. }));
        self.progress.playing.store(!self.queue.is_empty(), Relaxed);
    }

    /// Nothing left to play.
    pub fn idle(&self) -> bool {
        self.queue.is_empty()
    }

    /// When the next packet is due (ns); `None` when idle.
    pub fn due(&self) -> Option<u64> {
        (!self.queue.is_empty()).then_some(self.due_ns)
    }

    /// Media from the other party towards this one is replaced now: a
    /// prompt, a tone or an event is being played (not a digit's pause).
    pub fn replacing(&self) -> bool {
        match self.queue.front() {
            Some(Item::Digit { end_left: 0, .. }) => false,
            Some(_) => true,
            None => false,
        }
    }

    fn gap_ts(&self, now_ns: u64) -> u32 {
        match self.last_end_ns {
            Some(end) if now_ns > end => ((now_ns - end) as u128 * self.out.clock_rate as u128 / 1_000_000_000) as u32,
            _ => 0,
        }
    }

    /// The packet due at `now_ns`, written into `buf`: its length, or
    /// `None` when nothing is due (or a codec failed: that prompt ends).
    pub fn next(&mut self, now_ns: u64, buf: &mut [u8]) -> Option<usize> {
        loop {
            let front = self.queue.front()?;
            if self.due_ns > now_ns {
                return None;
            }
            if self.due_ns == 0 || now_ns - self.due_ns > MAX_BEHIND_NS {
                // The first packet, or after a stall: time restarts now,
                // and the timestamp moves on by the time that passed.
                self.ts = self.ts.wrapping_add(self.gap_ts(now_ns));
                self.due_ns = now_ns;
            }
            let finished = match front {
                Item::Prompt { .. } => self.prompt_packet(buf),
                Item::Digit { .. } => self.digit_packet(buf),
            };
            match finished {
                Step::Packet(n) => {
                    self.progress.packets.fetch_add(1, Relaxed);
                    return Some(n);
                }
                Step::Quiet => return None,
                Step::Done => {
                    self.queue.pop_front();
                    if self.queue.is_empty() {
                        // The next play starts its own clock (the
                        // timestamp moving on by the time between).
                        self.due_ns = 0;
                        self.progress.playing.store(false, Relaxed);
                    }
                }
            }
        }
    }

    fn header(&mut self, buf: &mut [u8], marker: bool, pt: u8, ts: u32) -> Option<usize> {
        let h = buf.get_mut(..12)?;
        h[0] = 0x80;
        h[1] = (marker as u8) << 7 | (pt & 0x7f);
        h[2..4].copy_from_slice(&self.seq.to_be_bytes());
        h[4..8].copy_from_slice(&ts.to_be_bytes());
        h[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
        self.seq = self.seq.wrapping_add(1);
        Some(12)
    }

    /// One frame of the front prompt: encoded, stamped, the clock moved.
    fn prompt_packet(&mut self, buf: &mut [u8]) -> Step {
        let Some(Item::Prompt { p, pos, played, elapsed_ms, started }) = self.queue.front_mut() else {
            return Step::Done;
        };
        let samples = p.prompt.samples();
        if !*started {
            *pos = p.start.min(samples.len());
        }
        let limit_hit = p.for_ms.is_some_and(|max| *elapsed_ms >= max);
        if *pos >= samples.len() || limit_hit {
            *played += 1;
            let again = !limit_hit && (*played < p.times.max(1) || (p.for_ms.is_some() && p.times == 0));
            if !again || samples.is_empty() {
                return Step::Done;
            }
            *pos = 0;
        }
        let marker = !*started;
        *started = true;
        let n = self.frame.min(samples.len() - *pos);
        let channels = self.pcm.len() / self.frame;
        // Mono prompt into the encoder's channels; the last frame padded.
        for (i, f) in self.pcm.chunks_exact_mut(channels).enumerate() {
            f.fill(if i < n { samples[*pos + i] } else { 0 });
        }
        let rate = p.prompt.rate().max(1) as u64;
        let file_pos = *pos as u64 * p.prompt.source_rate() as u64 / rate;
        *pos += n;
        *elapsed_ms += self.frame_ns / 1_000_000;
        self.progress.position.store(file_pos, Relaxed);
        let Some(enc) = self.out.encoder.as_mut() else { return Step::Done };
        let (head, body) = buf.split_at_mut(12.min(buf.len()));
        let Ok(len) = enc.encode(&self.pcm, body) else {
            return Step::Done;
        };
        let (pt, ts) = (self.out.pt, self.ts);
        if self.header(head, marker, pt, ts).is_none() {
            return Step::Done;
        }
        self.advance(self.frame_ts);
        Step::Packet(12 + len)
    }

    /// One packet of the front digit: an event packet, its end (three
    /// times), a frame of its tone, or of the pause after it.
    fn digit_packet(&mut self, buf: &mut [u8]) -> Step {
        let frame_ts = self.frame_ts;
        let frame_ms = (self.frame_ns / 1_000_000) as u32;
        let event_pt = self.out.event_pt;
        let Some(Item::Digit { d, sent, end_left, start_ts, pause_left }) = self.queue.front_mut() else {
            return Step::Done;
        };
        let d = *d;
        // Frames the digit lasts: its duration rounded up to whole frames.
        let frames = d.duration_ms.div_ceil(frame_ms.max(1)).max(1);
        if *end_left == 0 {
            // The pause: nothing sent (events) or silence (tones); time runs.
            if *pause_left == 0 {
                return Step::Done;
            }
            *pause_left = pause_left.saturating_sub(frame_ms);
            if event_pt.is_some() {
                self.advance(frame_ts);
                return Step::Quiet;
            }
            return self.tone_frame(buf, None, false);
        }
        match event_pt {
            Some(pt) => {
                if *sent == 0 && *end_left == END_REPEATS {
                    *start_ts = self.ts;
                }
                let first = *sent == 0 && *end_left == END_REPEATS;
                let end = *sent + 1 >= frames;
                let ts = *start_ts;
                let duration = ((*sent + 1).min(frames) * frame_ts).min(0xffff) as u16;
                if end {
                    *end_left -= 1;
                } else {
                    *sent += 1;
                }
                let end_left = *end_left;
                let Some(body) = buf.get_mut(12..16) else { return Step::Done };
                body[0] = d.event;
                body[1] = (end as u8) << 7 | d.volume.min(63);
                body[2..4].copy_from_slice(&duration.to_be_bytes());
                if self.header(buf, first, pt, ts).is_none() {
                    return Step::Done;
                }
                if !end {
                    self.due_ns += self.frame_ns;
                } else if end_left == 0 {
                    // The last of the three end packets: the digit's time
                    // has passed, the next packet is a frame later.
                    self.progress.digits.fetch_add(1, Relaxed);
                    self.ts = ts.wrapping_add(frames * frame_ts);
                    self.due_ns += self.frame_ns;
                    self.last_end_ns = Some(self.due_ns);
                }
                // (The first two end packets go at once: the due time stays.)
                Step::Packet(16)
            }
            None => {
                let marker = *sent == 0;
                *sent += 1;
                if *sent >= frames {
                    *end_left = 0;
                    self.progress.digits.fetch_add(1, Relaxed);
                }
                self.tone_frame(buf, Some(d), marker)
            }
        }
    }

    /// A frame of `d`'s tone (or of silence) in the codec.
    fn tone_frame(&mut self, buf: &mut [u8], d: Option<Digit>, marker: bool) -> Step {
        let (Some(enc), Some(tone)) = (self.out.encoder.as_mut(), self.tone.as_mut()) else {
            return Step::Done;
        };
        let channels = self.pcm.len() / self.frame;
        match d {
            Some(d) => tone.start(d.event, -(d.volume as f32)),
            None => tone.stop(),
        }
        let mono = &mut self.pcm[..self.frame];
        tone.fill(mono);
        if channels > 1 {
            for i in (0..self.frame).rev() {
                let v = self.pcm[i];
                self.pcm[i * channels..(i + 1) * channels].fill(v);
            }
        }
        let (head, body) = buf.split_at_mut(12.min(buf.len()));
        let Ok(len) = enc.encode(&self.pcm, body) else { return Step::Done };
        let (pt, ts) = (self.out.pt, self.ts);
        if self.header(head, marker, pt, ts).is_none() {
            return Step::Done;
        }
        self.advance(self.frame_ts);
        Step::Packet(12 + len)
    }

    /// After an audio frame (or a digit's last event packet): the
    /// timestamp moves by `ts`, the next packet is a frame later.
    fn advance(&mut self, ts: u32) {
        if ts == 0 {
            return;
        }
        self.ts = self.ts.wrapping_add(ts);
        self.due_ns += self.frame_ns;
        self.last_end_ns = Some(self.due_ns);
    }
}

enum Step {
    Packet(usize),
    /// Nothing to send for this frame (a pause between events).
    Quiet,
    Done,
}
