//! One direction of a transcoded stream, sans I/O: plain RTP in one codec
//! goes in, plain RTP in another comes out (decrypting and encrypting are
//! the relay's, around this).
//!
//! The decoded audio goes through a FIFO of PCM so that the packet time can
//! change (repacketization): an output packet leaves as soon as the FIFO
//! holds one output frame, so nothing waits longer than the output packet
//! time needs, and with equal packet times nothing waits at all.
//!
//! Timestamps stay true to each leg's clock: an input timestamp maps to the
//! output clock by the ratio of the clock rates, gaps included, so a gap on
//! one leg is the same gap in time on the other. A gap of up to
//! [`MAX_CONCEAL_MS`] is filled with the decoder's concealment and sent as
//! soon as the packet after it arrives (no packet is held waiting for a lost
//! one); a longer one (silence suppression, hold) restarts the FIFO at the
//! new time. A packet that is late (older than what was already sent) is
//! dropped. RFC 4733 events pass with their payload type, timestamp and
//! duration converted.
//!
//! Reordering: a packet that arrives after audio for a later time was taken
//! is dropped, and the stream gets a reorder window, the lateness seen (at
//! most [`MAX_REORDER_MS`]): from then on, a packet that arrives after a
//! gap is held until the missing one comes or until packets that much
//! later have arrived, then the gap is concealed. A packet in order is
//! never held, and a stream that has not reordered has no window, so loss
//! alone never makes anything wait; the window closes again after
//! [`REORDER_QUIET`] packets in order.
//!
//! DTMF between a leg that sends tones in the audio and one that takes RFC
//! 4733 events: with [`Detect`], a detector (a plugin's, see
//! [`crate::dtmf`]) listens to the decoded audio as it arrives, and the
//! encoder takes the audio from the FIFO a fixed delay later (the delay
//! line, 40 ms by default: longer than the detector needs to decide), so a
//! tone is muted from its first sample and sent as events instead: no part
//! of it leaks into the audio before detection. Only directions that
//! detect have the delay. The other way, with `tones_from`, the events the
//! sender sends are played into the audio as tone pairs.

use crate::dtmf::{Detector, ToneGen};
use crate::{CodecError, Instance};
use srtp::header::{check_padding, RtpHeader};
use std::collections::VecDeque;

/// Largest RTP packet the transcoder writes.
pub const MAX_PACKET: usize = 1500;
/// Most packets one input packet can produce.
pub const MAX_OUTPUTS: usize = 32;
/// Longest gap filled with concealment, ms.
pub const MAX_CONCEAL_MS: u32 = 100;
/// Longest input packet, ms of audio.
const MAX_PACKET_MS: u32 = 200;
/// Default delay line of a detecting direction, ms.
pub const DEFAULT_DTMF_DELAY_MS: u32 = 40;
/// How long before the detector's decision a tone is taken to have begun,
/// ms: the longest lag of spandsp's detector measured on every key in
/// 20 ms packets (25–40 ms; `plugins/spandsp/tests/dtmf.rs`).
const DETECT_LEAD_MS: u32 = 40;
/// How long before the detector's decision a tone is taken to have ended,
/// ms (its lag measured 15–30 ms); the audio stays muted to the decision.
const DETECT_TAIL_MS: u32 = 20;
/// Tones waiting to be sent as events (detected within the delay line).
const MAX_TONES: usize = 4;
/// Longest reorder window, ms.
pub const MAX_REORDER_MS: u32 = 60;
/// Packets held at most in a reorder window.
const REORDER_SLOTS: usize = 4;
/// Packets in order after which a reorder window closes.
pub const REORDER_QUIET: u32 = 500;

/// Packets held after a gap while the stream has a reorder window.
struct Held {
    data: Vec<u8>,
    len: [usize; REORDER_SLOTS],
    pos: [i64; REORDER_SLOTS],
    n: usize,
    /// The window, PCM samples (0: none).
    window: i64,
    /// Packets taken in order since the last late one.
    quiet: u32,
}

/// Why a packet was not transcoded.
#[derive(Debug, thiserror::Error)]
pub enum TranscodeError {
    /// Not an RTP packet this transcoder can read.
    #[error("malformed RTP packet")]
    Malformed,
    /// A payload type the leg did not negotiate (or comfort noise, which
    /// the other leg did not).
    #[error("payload type {0} not negotiated for transcoding")]
    PayloadType(u8),
    /// Older than audio already sent.
    #[error("late packet")]
    Late,
    /// The codec failed; the stream's transcoding ends.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The decoded audio does not fit the transcoder's buffers.
    #[error("packet of {0} samples is longer than the transcoder takes")]
    TooLong(usize),
}

impl TranscodeError {
    /// The stream cannot go on transcoding after this error.
    pub fn is_fatal(&self) -> bool {
        matches!(self, TranscodeError::Codec(_))
    }
}

/// The codecs and payload types of one direction.
pub struct Direction {
    /// Decodes what the sending endpoint sends.
    pub decoder: Instance,
    /// Its payload type.
    pub in_pt: u8,
    /// Encodes what the receiving endpoint gets.
    pub encoder: Instance,
    /// Its payload type.
    pub out_pt: u8,
    /// Packet time of the output, ms (`None`: the input's).
    pub out_ptime: Option<u32>,
    /// RFC 4733 events: (input payload type, output payload type).
    pub dtmf: Option<(u8, u8)>,
    /// In-band DTMF to RFC 4733 events (the sender has no
    /// telephone-event, the receiver has).
    pub detect: Option<Detect>,
    /// RFC 4733 events to in-band tones: the input's telephone-event
    /// payload type (the sender has telephone-event, the receiver not).
    pub tones_from: Option<u8>,
}

/// In-band DTMF detection on a direction.
pub struct Detect {
    /// A detector (see [`crate::dtmf::Detector`]) at the PCM rate.
    pub detector: Detector,
    /// The output's telephone-event payload type.
    pub out_pt: u8,
    /// Delay line, ms ([`DEFAULT_DTMF_DELAY_MS`]).
    pub delay_ms: u32,
}

/// A detected tone, in PCM positions.
#[derive(Clone, Copy, Debug)]
struct Tone {
    event: u8,
    /// RFC 4733 volume (−dBm0).
    volume: u8,
    start: i64,
    /// Estimated end, once the detector saw it stop.
    end: Option<i64>,
    /// Muted up to here (the detector's decision).
    mute_end: Option<i64>,
    /// Its first event packet has been sent.
    sent: bool,
}

struct DetState {
    detector: Detector,
    out_pt: u8,
    tones: VecDeque<Tone>,
}

struct GenState {
    in_pt: u8,
    tone: ToneGen,
    /// (timestamp, event) of the event being played.
    current: Option<(u32, u8)>,
    /// The gap after a played tone is silence, not concealment.
    silence_next: bool,
}

/// What fills audio the sender did not send.
#[derive(Clone, Copy)]
enum Fill<'a> {
    /// The decoder's concealment.
    Conceal,
    /// What the decoder rebuilds from this payload's redundancy (the last
    /// piece only; concealment before it).
    Recover(&'a [u8]),
    Silence,
    /// The tone pair being played.
    Tone,
}

/// Counters of one transcoder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Packets decoded.
    pub decoded: u64,
    /// Packets encoded and sent.
    pub encoded: u64,
    /// Samples inserted for lost packets (concealed or recovered).
    pub concealed_samples: u64,
    /// Of those, samples the codec rebuilt from redundancy (FEC).
    pub recovered_samples: u64,
    /// Events (RFC 4733 packets) passed.
    pub events: u64,
    /// Output frames the encoder left untransmitted (DTX).
    pub untransmitted: u64,
    /// In-band DTMF tones detected (and sent as events).
    pub dtmf_detected: u64,
    /// RFC 4733 events played as tones.
    pub dtmf_played: u64,
    /// Packets dropped for arriving after later audio was taken.
    pub late: u64,
    /// Packets that arrived out of order and were put in their place (a
    /// reorder window held the later ones).
    pub reordered: u64,
}

/// RTP input, read with the SRTP core's header parser (padding checked).
struct In<'a> {
    marker: bool,
    pt: u8,
    seq: u16,
    ts: u32,
    ssrc: u32,
    payload: &'a [u8],
}

fn parse(p: &[u8]) -> Option<In<'_>> {
    let h = RtpHeader::parse(p).ok()?;
    check_padding(&h, p).ok()?;
    let end = if h.padding { p.len() - *p.last()? as usize } else { p.len() };
    Some(In {
        marker: h.marker,
        pt: h.payload_type,
        seq: h.seq,
        ts: h.timestamp,
        ssrc: h.ssrc,
        payload: p.get(h.len..end)?,
    })
}

/// One direction of a transcoded stream; see the module text.
///
/// Time inside is counted in samples of the PCM (at the rate both codecs
/// were created with), as a 64-bit position that never wraps: an input
/// timestamp maps to a position, a position to an output timestamp.
pub struct Transcoder {
    d: Direction,
    in_clock: u32,
    out_clock: u32,
    /// PCM samples a second.
    rate: u32,
    channels: usize,
    /// Samples (per channel) of one output packet; 0 until the first input
    /// sets it from the input's packet time.
    out_frame: usize,
    /// Decoded audio not yet encoded, from position `fifo_pos`.
    fifo: Vec<i16>,
    fifo_len: usize,
    fifo_pos: i64,
    started: bool,
    /// Input timestamp ↔ position at the last rebase.
    in_base: u32,
    pos_base: i64,
    /// Output timestamp of position 0.
    out_ts0: u32,
    out_seq: u16,
    ssrc: u32,
    /// Where each source's output numbering goes on (a call resumed after a
    /// restart: its sequence numbers up to these were sent before), by SSRC.
    resume_seq: Vec<(u32, u16)>,
    marker: bool,
    /// Samples (per channel) of the last decoded packet.
    last_in: usize,
    /// Loss percentage last given to the encoder.
    loss_pct: Option<i32>,
    /// Scratch for one decoded packet.
    pcm: Vec<i16>,
    /// Output packets: `MAX_OUTPUTS` slots of `MAX_PACKET` bytes.
    out: Vec<u8>,
    out_lens: [usize; MAX_OUTPUTS],
    n_out: usize,
    counts: Counts,
    /// Samples (per channel) the encoder stays behind the input.
    delay: usize,
    det: Option<Box<DetState>>,
    gen: Option<GenState>,
    held: Held,
}

impl Transcoder {
    /// A transcoder between two codecs whose states have PCM of the same
    /// rate and channel count (see [`crate::common_pcm_rate`]).
    pub fn new(mut d: Direction) -> Result<Transcoder, String> {
        let (i, o) = (d.decoder.info().clone(), d.encoder.info().clone());
        let rate = d.decoder.pcm_rate();
        if rate != d.encoder.pcm_rate() {
            return Err(format!(
                "{}/{} to {}/{}: PCM at {} Hz and {} Hz, and resampling is not supported",
                i.name,
                i.clock_rate,
                o.name,
                o.clock_rate,
                rate,
                d.encoder.pcm_rate()
            ));
        }
        if i.pcm_channels != o.pcm_channels || i.pcm_channels == 0 {
            return Err(format!(
                "{} ({} channels) to {} ({} channels)",
                i.name, i.pcm_channels, o.name, o.pcm_channels
            ));
        }
        let channels = i.pcm_channels as usize;
        if channels != 1 && (d.detect.is_some() || d.tones_from.is_some()) {
            return Err(format!("DTMF tones on {channels}-channel PCM"));
        }
        let delay = d.detect.as_ref().map_or(0, |x| (rate / 1000 * x.delay_ms.min(MAX_CONCEAL_MS)) as usize);
        let per_ms = (rate / 1000).max(1) as usize * channels;
        let longest = per_ms * (MAX_PACKET_MS + MAX_CONCEAL_MS) as usize;
        let out_frame = match d.out_ptime {
            Some(ms) => whole_frames((rate / 1000 * ms.clamp(10, MAX_PACKET_MS)) as usize, d.encoder.frame_samples()),
            None => 0,
        };
        Ok(Transcoder {
            in_clock: i.clock_rate,
            out_clock: o.clock_rate,
            rate,
            channels,
            out_frame,
            fifo: vec![0; 2 * longest + (out_frame + delay) * channels],
            fifo_len: 0,
            fifo_pos: 0,
            started: false,
            in_base: 0,
            pos_base: 0,
            out_ts0: 0,
            out_seq: 0,
            ssrc: 0,
            resume_seq: Vec::new(),
            marker: false,
            last_in: 0,
            loss_pct: None,
            pcm: vec![0; per_ms * MAX_PACKET_MS as usize],
            out: vec![0; MAX_OUTPUTS * MAX_PACKET],
            out_lens: [0; MAX_OUTPUTS],
            n_out: 0,
            counts: Counts::default(),
            delay,
            det: d.detect.take().map(|x| {
                Box::new(DetState { detector: x.detector, out_pt: x.out_pt, tones: VecDeque::with_capacity(MAX_TONES) })
            }),
            held: Held {
                data: vec![0; REORDER_SLOTS * MAX_PACKET],
                len: [0; REORDER_SLOTS],
                pos: [0; REORDER_SLOTS],
                n: 0,
                window: 0,
                quiet: 0,
            },
            gen: d.tones_from.map(|in_pt| GenState {
                in_pt,
                tone: ToneGen::new(rate),
                current: None,
                silence_next: false,
            }),
            d,
        })
    }

    /// Counters.
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// The packets the last [`push`](Self::push) produced, in order.
    pub fn outputs(&self) -> impl Iterator<Item = &[u8]> {
        self.out_lens[..self.n_out].iter().enumerate().map(|(k, &n)| &self.out[k * MAX_PACKET..k * MAX_PACKET + n])
    }

    /// Sets an encoder parameter of the output codec (see
    /// [`crate::abi::CTL_PACKET_LOSS`]); false when it has none such.
    pub fn control(&mut self, what: u32, value: i32) -> Result<bool, CodecError> {
        self.d.encoder.control(what, value)
    }

    /// Sets a parameter of the input codec's decoder
    /// ([`crate::abi::CTL_PLC`]); false when it has no such parameter.
    pub fn control_decoder(&mut self, what: u32, value: i32) -> Result<bool, CodecError> {
        self.d.decoder.control(what, value)
    }

    /// Tells the output codec the loss the receiving endpoint reports
    /// (RTCP fraction lost, in 1/256), so that Opus sizes its in-band FEC
    /// for it; the codec is called only when the percentage changes.
    pub fn set_receiver_loss(&mut self, fraction: u8) -> Result<(), CodecError> {
        let pct = (fraction as i32 * 100 + 128) / 256;
        if self.loss_pct != Some(pct) {
            self.loss_pct = Some(pct);
            self.d.encoder.control(crate::abi::CTL_PACKET_LOSS, pct)?;
        }
        Ok(())
    }

    /// The loss last passed to the output codec, percent.
    pub fn receiver_loss(&self) -> Option<i32> {
        self.loss_pct
    }

    /// The output timestamp of input timestamp `ts` (what an RTCP sender
    /// report's RTP time maps to), once the stream has started.
    pub fn map_timestamp(&self, ts: u32) -> Option<u32> {
        self.started.then(|| self.out_ts(self.position(ts)))
    }

    /// Position of input timestamp `ts`.
    fn position(&self, ts: u32) -> i64 {
        let delta = ts.wrapping_sub(self.in_base) as i32 as i64;
        self.pos_base + (delta * self.rate as i64).div_euclid(self.in_clock as i64)
    }

    /// Output timestamp of position `pos`.
    fn out_ts(&self, pos: i64) -> u32 {
        let ticks = (pos as i128 * self.out_clock as i128).div_euclid(self.rate as i128);
        self.out_ts0.wrapping_add(ticks as u32)
    }

    /// Moves the mapping's base to `ts` where that is exact, so the input
    /// delta never grows past the 32-bit range.
    fn rebase(&mut self, ts: u32) {
        let delta = ts.wrapping_sub(self.in_base) as i32 as i64;
        if (delta * self.rate as i64) % self.in_clock as i64 == 0 {
            self.pos_base = self.position(ts);
            self.in_base = ts;
        }
    }

    /// Numbers the output of the sources named (SSRC, next sequence number)
    /// from there on rather than from their first input packet: a transcoder
    /// made anew for a call resumed after a restart goes on past what the
    /// one before sent, whatever the two sides' packet times.
    pub fn continue_sequences(&mut self, next: Vec<(u32, u16)>) {
        self.resume_seq = next;
    }

    /// Takes one plain RTP packet from the sending endpoint; the packets to
    /// send to the other are then in [`outputs`](Self::outputs) (none while
    /// the FIFO fills up to one output frame).
    pub fn push(&mut self, packet: &[u8]) -> Result<(), TranscodeError> {
        self.n_out = 0;
        let p = parse(packet).ok_or(TranscodeError::Malformed)?;
        if !self.started || p.ssrc != self.ssrc {
            // The first packet, or a new source: its time starts the output's.
            if self.started {
                self.release(true)?;
                self.flush()?;
            }
            if !self.started {
                self.out_seq = self.resume_seq.iter().find(|r| r.0 == p.ssrc).map_or(p.seq, |r| r.1);
            }
            self.started = true;
            self.ssrc = p.ssrc;
            self.in_base = p.ts;
            self.pos_base = 0;
            self.out_ts0 = p.ts;
            self.fifo_pos = 0;
            self.fifo_len = 0;
            self.last_in = 0;
        }
        if let Some((in_pt, out_pt)) = self.d.dtmf {
            if p.pt == in_pt {
                return self.event(&p, out_pt);
            }
        }
        if let Some(g) = &self.gen {
            if p.pt == g.in_pt {
                return self.play_event(&p);
            }
        }
        if p.pt != self.d.in_pt {
            return Err(TranscodeError::PayloadType(p.pt));
        }
        if self.held.window == 0 && self.held.n == 0 {
            // No reorder window: every packet is taken as it comes.
            return self.audio(&p);
        }
        if packet.len() > MAX_PACKET {
            return Err(TranscodeError::TooLong(packet.len()));
        }
        let at = self.position(p.ts);
        let gap = at - (self.fifo_pos + self.fifo_len as i64);
        let max_conceal = (self.rate / 1000 * MAX_CONCEAL_MS) as i64;
        let h = &mut self.held;
        if h.window > 0 && gap > 0 && gap <= max_conceal && h.n < REORDER_SLOTS && !h.pos[..h.n].contains(&at) {
            // After a gap, within the window: held for the missing packet.
            let k = h.n;
            h.data[k * MAX_PACKET..k * MAX_PACKET + packet.len()].copy_from_slice(packet);
            h.len[k] = packet.len();
            h.pos[k] = at;
            h.n += 1;
            return self.release(false);
        }
        if self.held.n > 0 {
            if gap == 0 {
                // The missing packet: the held ones follow it.
                self.counts.reordered += 1;
                self.audio(&p)?;
                return self.release(false);
            }
            self.release(true)?;
        }
        self.audio(&p)
    }

    /// Takes held packets that are now in order, or that have waited the
    /// window out (`all`: every one), in order of time.
    fn release(&mut self, all: bool) -> Result<(), TranscodeError> {
        while self.held.n > 0 {
            let h = &self.held;
            let head = self.fifo_pos + self.fifo_len as i64;
            let k = (0..h.n).min_by_key(|&i| h.pos[i]).expect("n > 0");
            let newest = h.pos[..h.n].iter().copied().max().expect("n > 0");
            if !(all || h.pos[k] <= head || newest - head > h.window) {
                break;
            }
            let data = std::mem::take(&mut self.held.data);
            let r = match parse(&data[k * MAX_PACKET..k * MAX_PACKET + self.held.len[k]]) {
                Some(p) => self.audio(&p),
                None => Err(TranscodeError::Malformed),
            };
            self.held.data = data;
            // The last slot moves into this one.
            let h = &mut self.held;
            let last = h.n - 1;
            if k != last {
                h.data.copy_within(last * MAX_PACKET..last * MAX_PACKET + h.len[last], k * MAX_PACKET);
                h.len[k] = h.len[last];
                h.pos[k] = h.pos[last];
            }
            h.n -= 1;
            match r {
                Err(TranscodeError::Late) | Ok(()) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// One audio packet at its time: a gap before it concealed, its audio
    /// decoded into the FIFO, whole frames encoded.
    fn audio(&mut self, p: &In<'_>) -> Result<(), TranscodeError> {
        let at = self.position(p.ts);
        // Position just after the last sample taken so far.
        let gap = at - (self.fifo_pos + self.fifo_len as i64);
        let max_conceal = (self.rate / 1000 * MAX_CONCEAL_MS) as i64;
        if gap < 0 && gap > -(self.rate as i64) {
            // Audio for a time already taken (reordered or duplicated): the
            // stream gets a reorder window as long as the packet was late.
            self.counts.late += 1;
            let late = -gap - self.last_in as i64;
            let most = (self.rate / 1000 * MAX_REORDER_MS) as i64;
            if late > 0 {
                self.held.window = self.held.window.max(late.min(most));
            }
            self.held.quiet = 0;
            return Err(TranscodeError::Late);
        }
        if gap == 0 && self.held.window > 0 {
            self.held.quiet += 1;
            if self.held.quiet >= REORDER_QUIET {
                self.held.window = 0;
            }
        }
        if gap > 0 && gap <= max_conceal {
            // Lost packets: concealment fills their time, and the last lost
            // packet is rebuilt from this one's redundancy where the codec
            // carries some (Opus in-band FEC).
            let gap = gap as usize;
            if self.gen.as_mut().is_some_and(|g| std::mem::take(&mut g.silence_next)) {
                // After a played tone: the sender sent events, not audio.
                self.fill(gap, Fill::Silence)?;
            } else {
                let recover = if self.d.decoder.can_recover() && self.last_in > 0 && self.last_in <= gap {
                    self.last_in
                } else {
                    0
                };
                self.fill(gap - recover, Fill::Conceal)?;
                if recover > 0 {
                    self.fill(recover, Fill::Recover(p.payload))?;
                }
            }
        } else if gap != 0 {
            // A long silence, or a jump back of a second or more (a sender
            // that restarted its clock): start again at its time.
            self.flush()?;
            self.fifo_len = 0;
            self.fifo_pos = at;
        }
        if let Some(g) = self.gen.as_mut() {
            g.silence_next = false;
        }
        let ch = self.channels;
        let n = self.d.decoder.decode(p.payload, &mut self.pcm)?;
        if n == 0 {
            return Ok(());
        }
        self.counts.decoded += 1;
        let samples = n / ch;
        self.last_in = samples;
        if self.out_frame == 0 {
            // The output keeps the input's packet time.
            self.out_frame = whole_frames(samples, self.d.encoder.frame_samples());
        }
        if p.marker {
            self.marker = true;
        }
        let room = (self.fifo.len() / ch).saturating_sub(self.fifo_len);
        if samples > room {
            return Err(TranscodeError::TooLong(samples));
        }
        let at = self.fifo_len * ch;
        self.fifo[at..at + samples * ch].copy_from_slice(&self.pcm[..samples * ch]);
        self.fifo_len += samples;
        self.detect(self.fifo_len - samples)?;
        self.rebase(p.ts);
        self.drain(self.delay)
    }

    /// Feeds the detector the FIFO's samples from index `from` to its end,
    /// and notes the tones it decided on.
    fn detect(&mut self, from: usize) -> Result<(), TranscodeError> {
        let Some(d) = self.det.as_deref_mut() else {
            return Ok(());
        };
        let base = self.fifo_pos + from as i64;
        let per_ms = (self.rate / 1000) as i64;
        // Nothing before the encoder's next sample can be muted any more.
        let floor = self.fifo_pos;
        for c in d.detector.feed(&self.fifo[from..self.fifo_len])? {
            let at = base + c.at as i64;
            if c.on {
                if d.tones.len() == MAX_TONES {
                    d.tones.pop_front();
                }
                let start = (at - DETECT_LEAD_MS as i64 * per_ms).max(floor);
                let volume = (-(c.level as i32)).clamp(0, 63) as u8;
                d.tones.push_back(Tone { event: c.event, volume, start, end: None, mute_end: None, sent: false });
                self.counts.dtmf_detected += 1;
            } else if let Some(t) = d.tones.iter_mut().rev().find(|t| t.end.is_none() && t.event == c.event) {
                t.end = Some((at - DETECT_TAIL_MS as i64 * per_ms).max(t.start).max(floor));
                t.mute_end = Some(at.max(t.start));
            }
        }
        Ok(())
    }

    /// Sends what the delay line holds (before a restart of the stream's
    /// time): tones still on end where the audio does.
    fn flush(&mut self) -> Result<(), TranscodeError> {
        let head = self.fifo_pos + self.fifo_len as i64;
        if let Some(d) = self.det.as_deref_mut() {
            for t in d.tones.iter_mut().filter(|t| t.end.is_none()) {
                t.end = Some(head.max(t.start));
                t.mute_end = Some(head.max(t.start));
            }
        }
        self.drain(0)?;
        if let Some(d) = self.det.as_deref_mut() {
            d.tones.clear();
        }
        Ok(())
    }

    /// An RFC 4733 event to play as a tone pair: the audio from its start
    /// to its duration so far becomes the tone (what is already taken stays).
    fn play_event(&mut self, p: &In<'_>) -> Result<(), TranscodeError> {
        let b = p.payload;
        if b.len() < 4 {
            return Err(TranscodeError::Malformed);
        }
        let (event, volume, duration) = (b[0], b[1] & 0x3f, u16::from_be_bytes([b[2], b[3]]) as i64);
        if event > 15 {
            // Not a DTMF key (RFC 4733 has other events): nothing to play.
            return Ok(());
        }
        let start = self.position(p.ts);
        let rate = self.rate as i64;
        let g = self.gen.as_mut().expect("called with tones_from");
        if g.current != Some((p.ts, event)) {
            g.current = Some((p.ts, event));
            g.tone.start(event, if volume == 0 || volume > 36 { -10.0 } else { -(volume as f32) });
            self.counts.dtmf_played += 1;
            let gap = start - (self.fifo_pos + self.fifo_len as i64);
            if gap > 0 && gap <= (self.rate / 1000 * MAX_CONCEAL_MS) as i64 {
                self.fill(gap as usize, Fill::Silence)?;
            } else if gap > 0 || gap <= -rate {
                self.flush()?;
                self.fifo_len = 0;
                self.fifo_pos = start;
            }
        }
        let end = start + duration * rate / self.in_clock as i64;
        let head = self.fifo_pos + self.fifo_len as i64;
        // A duration that jumps by more than a packet can hold (lost
        // updates) plays the most recent part.
        let most = (self.rate / 1000 * MAX_PACKET_MS) as i64;
        if end - head > most {
            self.flush()?;
            self.fifo_len = 0;
            self.fifo_pos = end - most;
        }
        let head = self.fifo_pos + self.fifo_len as i64;
        if end > head {
            self.fill((end - head) as usize, Fill::Tone)?;
        }
        if let Some(g) = self.gen.as_mut() {
            g.silence_next = true;
        }
        self.counts.events += 1;
        Ok(())
    }

    /// Appends `samples` of audio the sender did not send (see [`Fill`]).
    /// What the codec does not fill is silence.
    fn fill(&mut self, samples: usize, how: Fill<'_>) -> Result<(), TranscodeError> {
        let ch = self.channels;
        let mut left = samples;
        while left > 0 {
            let room = (self.fifo.len() / ch).saturating_sub(self.fifo_len);
            let k = left.min(room).min(self.pcm.len() / ch);
            if k == 0 {
                return Err(TranscodeError::TooLong(samples));
            }
            let at = self.fifo_len * ch;
            let buf = &mut self.fifo[at..at + k * ch];
            let w = match how {
                Fill::Recover(payload) if k == left => self.d.decoder.recover(payload, buf)?,
                Fill::Conceal | Fill::Recover(_) => self.d.decoder.conceal(buf)?,
                Fill::Silence => 0,
                Fill::Tone => {
                    self.gen.as_mut().expect("tones_from").tone.fill(buf);
                    buf.len()
                }
            } / ch;
            buf[w * ch..].fill(0);
            self.fifo_len += k;
            if matches!(how, Fill::Conceal | Fill::Recover(_)) {
                self.counts.concealed_samples += k as u64;
            }
            if matches!(how, Fill::Recover(_)) && k == left && self.d.decoder.recovers_redundancy() {
                self.counts.recovered_samples += w as u64;
            }
            left -= k;
            self.detect(self.fifo_len - k)?;
            self.drain(self.delay)?;
        }
        Ok(())
    }

    /// Encodes every whole output frame in the FIFO that is `delay`
    /// samples behind its end, with the detected tones muted and sent as
    /// events.
    fn drain(&mut self, delay: usize) -> Result<(), TranscodeError> {
        let ch = self.channels;
        let frame = self.out_frame.max(1);
        // Room for an audio packet and three final event packets a frame.
        while self.fifo_len >= frame + delay && self.n_out + 4 < MAX_OUTPUTS {
            if !self.tone_frame(frame)? {
                // The whole frame is a tone sent as events.
                self.marker = true;
                self.fifo.copy_within(frame * ch..self.fifo_len * ch, 0);
                self.fifo_len -= frame;
                self.fifo_pos += frame as i64;
                continue;
            }
            let ts = self.out_ts(self.fifo_pos);
            let slot = self.n_out * MAX_PACKET;
            let out = &mut self.out[slot..slot + MAX_PACKET];
            let n = self.d.encoder.encode(&self.fifo[..frame * ch], &mut out[12..])?;
            if n > 0 {
                write_header(out, self.marker, self.d.out_pt, self.out_seq, ts, self.ssrc);
                self.marker = false;
                self.out_seq = self.out_seq.wrapping_add(1);
                self.out_lens[self.n_out] = 12 + n;
                self.n_out += 1;
                self.counts.encoded += 1;
            } else {
                // Discontinuous transmission: the encoder sends nothing for
                // this silence; the next packet starts a talkspurt.
                self.marker = true;
                self.counts.untransmitted += 1;
            }
            self.fifo.copy_within(frame * ch..self.fifo_len * ch, 0);
            self.fifo_len -= frame;
            self.fifo_pos += frame as i64;
        }
        Ok(())
    }

    /// The detected tones in the next output frame (`frame` samples at the
    /// FIFO's start): mutes them and writes their event packets. Returns
    /// whether the frame's audio is to be sent too (it is not when a tone
    /// covers all of it).
    fn tone_frame(&mut self, frame: usize) -> Result<bool, TranscodeError> {
        let Some(d) = self.det.as_deref() else {
            return Ok(true);
        };
        let (fp, fe) = (self.fifo_pos, self.fifo_pos + frame as i64);
        for t in &d.tones {
            let (a, b) = (t.start.max(fp), t.mute_end.unwrap_or(i64::MAX).min(fe));
            if a < b {
                self.fifo[(a - fp) as usize..(b - fp) as usize].fill(0);
            }
        }
        let out_pt = d.out_pt;
        let mut audio = true;
        while let Some(t) = self.det.as_deref().and_then(|d| d.tones.front().copied()) {
            if t.start >= fe {
                break;
            }
            if t.end.is_some_and(|e| e <= fp) {
                // Ended before this frame (a stream restart): nothing to send.
                self.det.as_deref_mut().map(|d| d.tones.pop_front());
                continue;
            }
            if t.start <= fp && t.end.is_none_or(|e| e >= fe) {
                audio = false;
            }
            let last = t.end.is_some_and(|e| e <= fe);
            let to = t.end.map_or(fe, |e| e.min(fe));
            let ts = self.out_ts(t.start);
            let duration = self.out_ts(to).wrapping_sub(ts).min(u16::MAX as u32) as u16;
            // The final packet goes three times (RFC 4733 §2.5.1.4).
            for k in 0..if last { 3 } else { 1 } {
                let slot = self.n_out * MAX_PACKET;
                let out = &mut self.out[slot..slot + 16];
                write_header(out, !t.sent && k == 0, out_pt, self.out_seq, ts, self.ssrc);
                out[12] = t.event;
                out[13] = (last as u8) << 7 | t.volume;
                out[14..16].copy_from_slice(&duration.to_be_bytes());
                self.out_seq = self.out_seq.wrapping_add(1);
                self.out_lens[self.n_out] = 16;
                self.n_out += 1;
                self.counts.events += 1;
            }
            let d = self.det.as_deref_mut().expect("checked above");
            if last {
                d.tones.pop_front();
            } else {
                if let Some(f) = d.tones.front_mut() {
                    f.sent = true;
                }
                break;
            }
        }
        Ok(audio)
    }

    /// An RFC 4733 event: payload type, timestamp and duration converted.
    fn event(&mut self, p: &In<'_>, out_pt: u8) -> Result<(), TranscodeError> {
        if p.payload.len() < 4 || p.payload.len() + 12 > MAX_PACKET {
            return Err(TranscodeError::Malformed);
        }
        let ts = self.out_ts(self.position(p.ts));
        let out = &mut self.out[..MAX_PACKET];
        let n = p.payload.len();
        out[12..12 + n].copy_from_slice(p.payload);
        // Duration (bytes 2–3 of each 4-byte event block) in the output clock.
        for b in (0..n - 3).step_by(4) {
            let d = u16::from_be_bytes([out[12 + b + 2], out[12 + b + 3]]) as u64;
            let d = (d * self.out_clock as u64 / self.in_clock as u64).min(u16::MAX as u64) as u16;
            out[12 + b + 2..12 + b + 4].copy_from_slice(&d.to_be_bytes());
        }
        write_header(out, p.marker, out_pt, self.out_seq, ts, p.ssrc);
        self.out_seq = self.out_seq.wrapping_add(1);
        self.out_lens[0] = 12 + n;
        self.n_out = 1;
        self.counts.events += 1;
        Ok(())
    }
}

/// Walks a plain RTCP compound packet of a transcoded stream (sans I/O):
/// rewrites each sender report's RTP timestamp into the other leg's clock
/// with `t` (the transcoder of the stream the reports describe, so that the
/// receiver's lip sync and RTT stay right across clock rates), and returns
/// the fraction lost of the first reception report block (what the sender
/// of this RTCP loses of the stream it receives). Malformed packets are
/// left as they are.
pub fn rtcp(pkt: &mut [u8], t: Option<&Transcoder>) -> Option<u8> {
    let mut at = 0;
    let mut lost = None;
    while at + 8 <= pkt.len() {
        let (b0, pt) = (pkt[at], pkt[at + 1]);
        let len = (u16::from_be_bytes([pkt[at + 2], pkt[at + 3]]) as usize + 1) * 4;
        if b0 >> 6 != 2 || at + len > pkt.len() {
            break;
        }
        let blocks = match pt {
            200 if len >= 28 => {
                if let Some(t) = t {
                    let ts = u32::from_be_bytes([pkt[at + 16], pkt[at + 17], pkt[at + 18], pkt[at + 19]]);
                    if let Some(out) = t.map_timestamp(ts) {
                        pkt[at + 16..at + 20].copy_from_slice(&out.to_be_bytes());
                    }
                }
                at + 28
            }
            201 => at + 8,
            _ => at + len,
        };
        if lost.is_none() && (b0 & 0x1f) > 0 && blocks + 24 <= at + len {
            lost = Some(pkt[blocks + 4]);
        }
        at += len;
    }
    lost
}

/// `samples` rounded up to whole codec frames.
fn whole_frames(samples: usize, frame: usize) -> usize {
    let f = frame.max(1);
    samples.div_ceil(f).max(1) * f
}

fn write_header(out: &mut [u8], marker: bool, pt: u8, seq: u16, ts: u32, ssrc: u32) {
    out[0] = 0x80;
    out[1] = (marker as u8) << 7 | (pt & 0x7f);
    out[2..4].copy_from_slice(&seq.to_be_bytes());
    out[4..8].copy_from_slice(&ts.to_be_bytes());
    out[8..12].copy_from_slice(&ssrc.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::g711::{alaw_decode, ulaw_decode, ulaw_encode};
    use crate::Registry;

    fn pcmu_to_pcma(out_ptime: Option<u32>) -> Transcoder {
        let r = Registry::new();
        let (pu, iu) = r.find("PCMU", 8000, 1).unwrap();
        let (pa, ia) = r.find("PCMA", 8000, 1).unwrap();
        Transcoder::new(Direction {
            decoder: pu.instance(iu, None, None).unwrap(),
            in_pt: 0,
            encoder: pa.instance(ia, None, None).unwrap(),
            out_pt: 8,
            out_ptime,
            dtmf: Some((101, 96)),
            detect: None,
            tones_from: None,
        })
        .unwrap()
    }

    fn tone(n: usize, from: usize) -> Vec<i16> {
        (from..from + n)
            .map(|i| (8000.0 * (i as f64 * 2.0 * std::f64::consts::PI * 1000.0 / 8000.0).sin()) as i16)
            .collect()
    }

    /// A µ-law packet of `ms` of tone starting at sample `at`.
    fn packet(seq: u16, at: usize, ms: usize, marker: bool) -> Vec<u8> {
        let mut p = vec![0x80, (marker as u8) << 7, 0, 0, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef];
        p[2..4].copy_from_slice(&seq.to_be_bytes());
        p[4..8].copy_from_slice(&(1000u32 + at as u32).to_be_bytes());
        p.extend(tone(ms * 8, at).into_iter().map(ulaw_encode));
        p
    }

    fn head(p: &[u8]) -> (bool, u8, u16, u32, u32) {
        (
            p[1] & 0x80 != 0,
            p[1] & 0x7f,
            u16::from_be_bytes([p[2], p[3]]),
            u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
            u32::from_be_bytes([p[8], p[9], p[10], p[11]]),
        )
    }

    fn outs(t: &Transcoder) -> Vec<Vec<u8>> {
        t.outputs().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn same_ptime_is_one_packet_out_per_packet_in_with_nothing_held() {
        let mut t = pcmu_to_pcma(None);
        for k in 0..50u16 {
            let p = packet(7 + k, 160 * k as usize, 20, k == 0);
            t.push(&p).unwrap();
            let o = outs(&t);
            assert_eq!(o.len(), 1, "packet {k}");
            assert_eq!(head(&o[0]), (k == 0, 8, 7 + k, 1000 + 160 * k as u32, 0xdeadbeef));
            assert_eq!(o[0].len(), 12 + 160);
            // The A-law audio is the µ-law audio, within both laws' steps.
            for (a, u) in o[0][12..].iter().zip(&p[12..]) {
                let (a, u) = (alaw_decode(*a) as i32, ulaw_decode(*u) as i32);
                assert!((a - u).abs() <= 8 + u.abs() / 16, "{a} vs {u}");
            }
        }
        assert_eq!(t.counts().encoded, 50);
    }

    #[test]
    fn a_lost_packet_is_concealed_and_sent_with_the_next_one() {
        let mut t = pcmu_to_pcma(None);
        t.push(&packet(1, 0, 20, false)).unwrap();
        t.push(&packet(2, 160, 20, false)).unwrap();
        // Packet 3 is lost.
        t.push(&packet(4, 480, 20, false)).unwrap();
        let o = outs(&t);
        assert_eq!(o.len(), 2);
        assert_eq!(head(&o[0]).2..=head(&o[1]).2, 3..=4);
        assert_eq!((head(&o[0]).3, head(&o[1]).3), (1320, 1480));
        assert_eq!(t.counts().concealed_samples, 160);
        // The concealment continues the tone (not silence).
        let energy: i64 = o[0][12..].iter().map(|&c| (alaw_decode(c) as i64).pow(2)).sum();
        assert!(energy / 160 > 1_000_000, "concealment energy {}", energy / 160);
    }

    #[test]
    fn a_late_packet_is_dropped_and_a_long_silence_restarts() {
        let mut t = pcmu_to_pcma(None);
        t.push(&packet(1, 0, 20, false)).unwrap();
        t.push(&packet(2, 160, 20, false)).unwrap();
        assert!(matches!(t.push(&packet(1, 0, 20, false)), Err(TranscodeError::Late)));
        // Two seconds of silence suppression: no concealment, time kept.
        t.push(&packet(3, 16320, 20, true)).unwrap();
        let o = outs(&t);
        assert_eq!(o.len(), 1);
        assert_eq!(head(&o[0]), (true, 8, 3, 1000 + 16320, 0xdeadbeef));
        assert_eq!(t.counts().concealed_samples, 0);
    }

    /// Pushes packets of 20 ms by index (`160 * k`), returning for each the
    /// sequence numbers that came out.
    fn feed(t: &mut Transcoder, order: &[u16]) -> Vec<Vec<u16>> {
        order
            .iter()
            .map(|&k| {
                let _ = t.push(&packet(k, 160 * k as usize, 20, false));
                outs(t).iter().map(|o| head(o).2).collect()
            })
            .collect()
    }

    #[test]
    fn reordering_opens_a_window_that_puts_packets_back_in_order() {
        let mut t = pcmu_to_pcma(None);
        // No window yet: packet 3 after 4 is too late, its time was concealed.
        let got = feed(&mut t, &[0, 1, 2, 4, 3, 5]);
        assert_eq!(got, [vec![0], vec![1], vec![2], vec![3, 4], vec![], vec![5]]);
        assert_eq!((t.counts().late, t.counts().concealed_samples), (1, 160));
        // Now a window of one packet: 11 after 12 is put back in its place,
        // nothing concealed; 12 waited for it, and only after a gap.
        let got = feed(&mut t, &[6, 7, 8, 9, 10, 12, 11, 13]);
        assert_eq!(got, [vec![6], vec![7], vec![8], vec![9], vec![10], vec![], vec![11, 12], vec![13]]);
        assert_eq!((t.counts().reordered, t.counts().concealed_samples), (1, 160));
        // A packet really lost: the one after it waits one packet, then the
        // gap is concealed and both go.
        let got = feed(&mut t, &[14, 16, 17, 18]);
        assert_eq!(got, [vec![14], vec![], vec![15, 16, 17], vec![18]]);
        assert_eq!(t.counts().concealed_samples, 320);
        // A duplicate is dropped, and opens no wider window.
        let got = feed(&mut t, &[18, 19, 21, 22]);
        assert_eq!(got, [vec![], vec![19], vec![], vec![20, 21, 22]]);
        // After REORDER_QUIET packets in order the window closes: a gap is
        // concealed at once again.
        let n = REORDER_QUIET as u16;
        let _ = feed(&mut t, &(23..23 + n).collect::<Vec<_>>());
        let got = feed(&mut t, &[24 + n, 25 + n]);
        assert_eq!(got, [vec![23 + n, 24 + n], vec![25 + n]]);
    }

    #[test]
    fn a_stream_that_never_reorders_never_waits() {
        let mut t = pcmu_to_pcma(None);
        // 5 % loss, no reordering: every packet leaves when it arrives.
        let order: Vec<u16> = (0..400).filter(|k| k % 20 != 7).collect();
        for (k, out) in order.iter().zip(feed(&mut t, &order)) {
            assert_eq!(out.last(), Some(k), "packet {k} left on arrival");
        }
        assert_eq!((t.counts().late, t.counts().reordered), (0, 0));
    }

    #[test]
    fn ptime_changes_repacketize_with_true_timestamps() {
        let mut t = pcmu_to_pcma(Some(40));
        let mut got: Vec<(u16, u32, usize)> = Vec::new();
        let mut at = 0;
        // 20 ms packets, then the sender switches to 30 ms mid-call.
        for (seq, ms) in [20, 20, 20, 20, 30, 30, 30, 30].into_iter().enumerate() {
            t.push(&packet(seq as u16, at, ms, false)).unwrap();
            for o in outs(&t) {
                let h = head(&o);
                got.push((h.2, h.3, o.len() - 12));
            }
            at += ms * 8;
        }
        // 200 ms in: five 40 ms packets, consecutive in sequence and time.
        assert_eq!(got.len(), 5, "{got:?}");
        for (k, &(s, ts, n)) in got.iter().enumerate() {
            assert_eq!((s, ts, n), (got[0].0 + k as u16, 1000 + 320 * k as u32, 320));
        }
    }

    #[test]
    fn events_pass_with_their_payload_type_mapped() {
        let mut t = pcmu_to_pcma(None);
        t.push(&packet(1, 0, 20, false)).unwrap();
        let mut e = vec![0x80, 0x80 | 101, 0, 2, 0, 0, 0x04, 0x88, 0xde, 0xad, 0xbe, 0xef];
        e.extend([5, 0x0a, 0x01, 0x40]);
        t.push(&e).unwrap();
        let o = outs(&t);
        assert_eq!(o.len(), 1);
        assert_eq!(head(&o[0]), (true, 96, 2, 1000 + 160, 0xdeadbeef));
        assert_eq!(&o[0][12..], &[5, 0x0a, 0x01, 0x40]);
        assert_eq!(t.counts().events, 1);
    }

    #[test]
    fn events_to_a_leg_without_telephone_event_are_played_as_tones() {
        let r = Registry::new();
        let (pu, iu) = r.find("PCMU", 8000, 1).unwrap();
        let (pa, ia) = r.find("PCMA", 8000, 1).unwrap();
        let mut t = Transcoder::new(Direction {
            decoder: pu.instance(iu, None, None).unwrap(),
            in_pt: 0,
            encoder: pa.instance(ia, None, None).unwrap(),
            out_pt: 8,
            out_ptime: None,
            dtmf: None,
            detect: None,
            tones_from: Some(101),
        })
        .unwrap();
        let mut audio = vec![0i16; 8 * 400];
        let mut sent = vec![false; audio.len()];
        let mut last_seq = None;
        let mut take = |t: &Transcoder| {
            for o in t.outputs() {
                let (_, pt, seq, ts, _) = head(o);
                assert_eq!(pt, 8, "audio only: the receiver has no telephone-event");
                assert!(last_seq.is_none_or(|s: u16| seq == s.wrapping_add(1)));
                last_seq = Some(seq);
                let at = (ts - 1000) as usize;
                for (i, &c) in o[12..].iter().enumerate() {
                    audio[at + i] = alaw_decode(c);
                    sent[at + i] = true;
                }
            }
        };
        // 100 ms of audio, then the key 5 for 80 ms (events every 20 ms,
        // one update lost, the final one three times), then audio again.
        for k in 0..5 {
            t.push(&packet(k, 160 * k as usize, 20, false)).unwrap();
            take(&t);
        }
        let event = |seq: u16, duration: u16, end: bool| {
            let mut e =
                vec![0x80, ((seq == 5) as u8 * 0x80) | 101, 0, seq as u8, 0, 0, 0x07, 0x08, 0xde, 0xad, 0xbe, 0xef];
            e.extend([5, (end as u8) << 7 | 10, (duration >> 8) as u8, duration as u8]);
            e
        };
        for (seq, duration, end) in [(5, 160, false), (7, 480, false), (8, 640, true), (9, 640, true), (10, 640, true)]
        {
            t.push(&event(seq, duration, end)).unwrap();
            take(&t);
        }
        for k in 11..20u16 {
            t.push(&packet(k, 160 * (k as usize - 2), 20, false)).unwrap();
            take(&t);
        }
        assert_eq!(t.counts().dtmf_played, 1);
        let tone = &audio[800..1440];
        assert!(sent[800..1440].iter().all(|&s| s));
        let (lo, hi) = crate::dtmf::frequencies(5).unwrap();
        assert!(
            crate::dtmf::power_share(tone, 8000, lo as f64) > 0.4
                && crate::dtmf::power_share(tone, 8000, hi as f64) > 0.4
        );
        // Before and after it, the 1 kHz audio; none of the tone.
        assert!(crate::dtmf::power_share(&audio[0..800], 8000, 1000.0) > 0.9);
        assert!(crate::dtmf::power_share(&audio[1440..2400], 8000, lo as f64) < 0.01);
        assert!(crate::dtmf::power_share(&audio[1600..2400], 8000, 1000.0) > 0.9);
    }

    #[test]
    fn rtcp_sender_reports_are_mapped_and_receiver_loss_read() {
        let mut t = pcmu_to_pcma(None);
        // SR (one report block, fraction lost 64/256) + RR (fraction 10).
        let mut sr = vec![0x81, 200, 0, 12, 0xde, 0xad, 0xbe, 0xef];
        sr.extend([0u8; 8]); // NTP
        sr.extend(1480u32.to_be_bytes()); // RTP time
        sr.extend([0u8; 8]); // counts
        sr.extend([1, 2, 3, 4, 64, 0, 0, 1]);
        sr.extend([0u8; 16]);
        let mut rr = vec![0x81, 201, 0, 7, 1, 1, 1, 1, 9, 9, 9, 9, 10];
        rr.extend([0u8; 19]);
        let mut both = [sr.clone(), rr.clone()].concat();
        // Before the stream starts there is no mapping: the time stays.
        assert_eq!(rtcp(&mut both, Some(&t)), Some(64));
        assert_eq!(&both[16..20], &1480u32.to_be_bytes());
        t.push(&packet(1, 0, 20, false)).unwrap();
        let mut both = [sr, rr.clone()].concat();
        assert_eq!(rtcp(&mut both, Some(&t)), Some(64));
        assert_eq!(&both[16..20], &1480u32.to_be_bytes(), "same clock, same origin: the same time");
        let mut rr_only = rr;
        assert_eq!(rtcp(&mut rr_only, None), Some(10));
        // Truncated or not version 2: untouched, no loss read.
        let mut bad = vec![0x41, 201, 0, 7, 0, 0, 0, 0];
        assert_eq!(rtcp(&mut bad, None), None);
        assert_eq!(rtcp(&mut [0x81, 201, 0, 7], None), None);
        // The loss goes to the encoder once per change (G.711 has no such control).
        t.set_receiver_loss(13).unwrap();
        assert_eq!(t.receiver_loss(), Some(5));
    }

    #[test]
    fn foreign_payload_types_and_garbage_are_refused() {
        let mut t = pcmu_to_pcma(None);
        let mut p = packet(1, 0, 20, false);
        p[1] = 13;
        assert!(matches!(t.push(&p), Err(TranscodeError::PayloadType(13))));
        assert!(matches!(t.push(&[0x80, 0, 1]), Err(TranscodeError::Malformed)));
        let mut padded = packet(1, 0, 20, false);
        padded[0] |= 0x20;
        *padded.last_mut().unwrap() = 200;
        assert!(matches!(t.push(&padded), Err(TranscodeError::Malformed)));
        assert!(t.outputs().next().is_none());
    }
}
