//! The recorder: a thread that writes what the call table's recording
//! steps ([`RecorderEvent`]) and the workers' copies of recorded packets
//! ([`Tapped`]) make of each recorded call:
//!
//! - `<base>.pcap`: every packet the call's endpoints sent, decrypted (plain
//!   RTP and RTCP, SRTP's tag and index gone), as it reached the relay: from
//!   the address it came from to the relay's local address of its leg, at
//!   the time it arrived, in raw IP or Ethernet framing (rtpengine's `raw`
//!   and `eth`), with checksums that Wireshark accepts;
//! - `<base>.json`: the call's metadata ([`Metadata`]): Call-ID, tags,
//!   streams and legs with addresses, codecs and suites (never a key), the
//!   `metadata` text, start, pauses, resumes, stop, packet counts, errors;
//! - with `--recording-audio single`, `<base>.caller.wav` and
//!   `<base>.callee.wav`: each party's audio decoded (`audio.rs`); with
//!   `mixed`, `<base>.mix.wav`: both summed.
//!
//! Each is written under a hidden temporary name in its final directory
//! and renamed when the recording stops, so that a file with the final name
//! is complete. Completing a recording (the WAVs padded and mixed, the
//! metadata written, the renames) runs on a thread of its own, so that
//! many calls ending at once do not keep the writer from the workers'
//! queues. The workers never wait for either thread: each hands its
//! copies over through its own bounded queue and drops (and counts) what
//! does not fit. A file that cannot be created or written is logged and
//! counted; the call's media goes on.

use super::config::RecordingConfig;
use crate::pcap::{build_udp_frame, CaptureWriter, Endpoint, LINKTYPE_ETHERNET, LINKTYPE_RAW};
use crate::relay::worker::Tapped;
use crossbeam_channel::{Receiver, Sender};
use serde::Serialize;
use srtpgate_calls::recording::Info;
use srtpgate_calls::{CallKey, RecorderEvent};
use srtpgate_codec::Registry;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

mod audio;

/// Copies one worker may have queued for the recorder.
pub const TAP_QUEUE: usize = 8192;

/// How many copies the thread takes from one queue before it looks at the
/// table's steps again.
const BATCH: usize = 1024;

/// How often the thread takes the workers' copies when the table has no
/// step for it: a worker's queue (8192 copies) lasts far longer.
const TICK: Duration = Duration::from_millis(5);

/// What the recorder did, for `/metrics`.
#[derive(Default, Debug)]
pub struct RecorderStats {
    /// Recordings open now.
    pub open: AtomicU64,
    /// Recordings whose files were completed (renamed to their final
    /// names).
    pub finished: AtomicU64,
    /// Recordings discarded (`discard-recording`).
    pub discarded: AtomicU64,
    /// Packets written.
    pub packets: AtomicU64,
    /// Bytes written to pcap files.
    pub bytes: AtomicU64,
    /// Packets of no open, writing recording (they arrived after a pause
    /// or stop), or of a recording whose file failed.
    pub unwritten: AtomicU64,
    /// Files that could not be created, written or renamed.
    pub errors: AtomicU64,
}

/// The recorder thread's handle.
pub struct Recorder {
    events: Option<Sender<RecorderEvent>>,
    join: Option<JoinHandle<()>>,
    /// Its counters.
    pub stats: Arc<RecorderStats>,
}

impl Recorder {
    /// Checks that the directory can be written (it is made if missing),
    /// then starts the thread over the workers' queues `taps`, decoding
    /// audio with `codecs`.
    /// `files` counts the files the recorder holds open, for the daemon's
    /// open-file budget.
    pub fn start(
        cfg: &RecordingConfig,
        taps: Vec<Receiver<Tapped>>,
        codecs: Arc<Registry>,
        files: Arc<AtomicUsize>,
    ) -> Result<Recorder, String> {
        let dir = &cfg.dir;
        std::fs::create_dir_all(dir).map_err(|e| format!("recording-dir {}: cannot create: {e}", dir.display()))?;
        let probe = dir.join(format!(".srtpgate-probe-{}", std::process::id()));
        std::fs::write(&probe, b"")
            .and_then(|()| std::fs::remove_file(&probe))
            .map_err(|e| format!("recording-dir {}: cannot write: {e}", dir.display()))?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let stats = Arc::new(RecorderStats::default());
        let outputs = Outputs {
            link: if cfg.eth { LINKTYPE_ETHERNET } else { LINKTYPE_RAW },
            single: cfg.single,
            mixed: cfg.mixed,
        };
        let finisher = Finisher { outputs, stats: stats.clone(), files: files.clone() };
        let (done_tx, done_rx) = crossbeam_channel::unbounded::<Done>();
        let finishing = std::thread::Builder::new()
            .name("recorder-done".into())
            .spawn(move || {
                yield_to_media("recorder-done");
                for d in done_rx {
                    finisher.complete(d.open, d.discard, d.at);
                }
            })
            .map_err(|e| format!("cannot start the recorder's completion thread: {e}"))?;
        let writer = Writer {
            outputs,
            codecs,
            open: HashMap::new(),
            stats: stats.clone(),
            files,
            done: Some(done_tx),
            finishing: Some(finishing),
        };
        let join = std::thread::Builder::new()
            .name("recorder".into())
            .spawn(move || {
                yield_to_media("recorder");
                writer.run(rx, taps)
            })
            .map_err(|e| format!("cannot start the recorder thread: {e}"))?;
        tracing::info!(
            "recording into {} ({} pcap, JSON metadata{}{}, pattern {})",
            dir.display(),
            if cfg.eth { "Ethernet" } else { "raw IP" },
            if cfg.single { ", a WAV per party" } else { "" },
            if cfg.mixed { ", a mixed WAV" } else { "" },
            cfg.pattern
        );
        Ok(Recorder { events: Some(tx), join: Some(join), stats })
    }

    /// Hands the thread one step of the table.
    pub fn send(&self, e: RecorderEvent) {
        if let Some(tx) = &self.events {
            let _ = tx.send(e);
        }
    }
}

impl Drop for Recorder {
    /// Waits for the thread to complete every recording still open.
    fn drop(&mut self) {
        self.events.take();
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

/// Lowers this thread below the media workers (a worker sharing its core
/// preempts it when packets come), or says why not.
fn yield_to_media(thread: &str) {
    if let Err(e) = crate::relay::sys::yield_to_media(10) {
        tracing::warn!("the {thread} thread keeps its scheduling priority: {e}");
    }
}

/// The metadata file of a recording.
#[derive(Serialize)]
struct Metadata<'a> {
    #[serde(flatten)]
    call: &'a Info,
    /// The pcap's file name (beside this file).
    pcap: String,
    /// `raw` or `eth`.
    format: &'static str,
    started: String,
    stopped: String,
    /// From start to stop (pauses included): the WAVs' length.
    seconds: f64,
    /// Pauses and resumes, in order.
    events: &'a [Event],
    /// Packets and bytes written.
    packets: u64,
    bytes: u64,
    /// The WAVs: each party's, and the mix.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    audio: Vec<AudioFile>,
    /// What went wrong with the files, if anything.
    errors: &'a [String],
}

/// A WAV of a recording.
#[derive(Serialize)]
struct AudioFile {
    file: String,
    /// The m-line, and the party (`None`: the mix).
    stream: usize,
    party: Option<usize>,
    rate: u32,
    seconds: f64,
    /// Packets left out (too late for their place, or not decodable).
    skipped: u64,
}

#[derive(Serialize)]
struct Event {
    event: &'static str,
    at: String,
}

/// One open recording.
struct Open {
    /// Its files' path without extension.
    base: PathBuf,
    /// The pcap (`None` once it failed).
    pcap: Option<CaptureWriter>,
    /// The call, as last told.
    info: Info,
    /// Writing (not paused).
    on: bool,
    started: SystemTime,
    events: Vec<Event>,
    packets: u64,
    bytes: u64,
    errors: Vec<String>,
    /// The IPv4 identification of the next packet.
    ip_id: u16,
    /// Each party's audio of the audio streams: (m-line, party, track).
    tracks: Vec<(usize, usize, audio::Track)>,
    /// Files it holds open (counted in the daemon's open-file budget until
    /// it is completed).
    files: usize,
}

/// What each recording writes: the pcap's link type, a WAV per party, a
/// mixed WAV.
#[derive(Clone, Copy)]
struct Outputs {
    link: u32,
    single: bool,
    mixed: bool,
}

struct Writer {
    outputs: Outputs,
    codecs: Arc<Registry>,
    open: HashMap<CallKey, Open>,
    stats: Arc<RecorderStats>,
    /// Files the recorder holds open, counted in the media sockets'
    /// open-file budget too (`PortSet::elsewhere`).
    files: Arc<AtomicUsize>,
    /// Stopped recordings on their way to the completion thread, and that
    /// thread (joined when the writer ends, after the last is sent).
    done: Option<Sender<Done>>,
    finishing: Option<JoinHandle<()>>,
}

/// A stopped recording for the completion thread.
struct Done {
    open: Open,
    discard: bool,
    at: SystemTime,
}

/// The completion thread's part: what completing a recording needs.
struct Finisher {
    outputs: Outputs,
    stats: Arc<RecorderStats>,
    files: Arc<AtomicUsize>,
}

impl Drop for Writer {
    /// The completion thread finishes what it was given before the writer
    /// is gone.
    fn drop(&mut self) {
        self.done.take();
        if let Some(j) = self.finishing.take() {
            let _ = j.join();
        }
    }
}

impl Writer {
    /// Until the handle is dropped: whatever is ready, the table's steps
    /// always first (a recording's start reaches the thread before the
    /// worker is told to copy, so its first copies find it open), then a
    /// batch of copies from one queue; at the end every recording
    /// completed.
    fn run(mut self, events: Receiver<RecorderEvent>, taps: Vec<Receiver<Tapped>>) {
        loop {
            // The thread waits on the table's steps only, and takes the
            // copies at its own pace: a worker's send never has a sleeping
            // receiver to wake (a lock and a system call per packet).
            let gone = match events.recv_timeout(TICK) {
                Ok(e) => {
                    self.event(e, &taps);
                    false
                }
                Err(e) => e.is_disconnected(),
            };
            loop {
                match events.try_recv() {
                    Ok(e) => self.event(e, &taps),
                    Err(crossbeam_channel::TryRecvError::Empty) => break,
                    Err(crossbeam_channel::TryRecvError::Disconnected) => {
                        self.drain(&taps);
                        let calls: Vec<CallKey> = self.open.keys().copied().collect();
                        for c in calls {
                            self.stop(c, false, SystemTime::now());
                        }
                        return;
                    }
                }
            }
            for tap in &taps {
                for t in tap.try_iter().take(BATCH) {
                    self.packet(t);
                }
            }
            if gone {
                self.drain(&taps);
                let calls: Vec<CallKey> = self.open.keys().copied().collect();
                for c in calls {
                    self.stop(c, false, SystemTime::now());
                }
                return;
            }
        }
    }

    /// Writes every copy queued now. Before a pause or a stop: what the
    /// workers copied before it is written (a worker stops copying when
    /// it is told, after the table decided).
    fn drain(&mut self, taps: &[Receiver<Tapped>]) {
        for tap in taps {
            for t in tap.try_iter().take(TAP_QUEUE) {
                self.packet(t);
            }
        }
    }

    fn event(&mut self, e: RecorderEvent, taps: &[Receiver<Tapped>]) {
        if matches!(e, RecorderEvent::Pause { .. } | RecorderEvent::Stop { .. }) {
            self.drain(taps);
        }
        match e {
            RecorderEvent::Start { call, base, info, at } => self.start(call, base, *info, at),
            RecorderEvent::Pause { call, at } | RecorderEvent::Resume { call, at } => {
                let on = matches!(e, RecorderEvent::Resume { .. });
                if let Some(o) = self.open.get_mut(&call) {
                    o.on = on;
                    o.events.push(Event { event: if on { "resume" } else { "pause" }, at: rfc3339(at) });
                }
            }
            RecorderEvent::Update { call, info } => {
                if let Some(o) = self.open.get_mut(&call) {
                    o.info = *info;
                }
            }
            RecorderEvent::Stop { call, discard } => self.stop(call, discard, SystemTime::now()),
        }
    }

    fn start(&mut self, call: CallKey, base: PathBuf, info: Info, at: SystemTime) {
        let part = part_of(&base, "pcap");
        let made = base
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .map_err(|e| format!("{}: cannot create the directory: {e}", base.display()))
            .and_then(|()| CaptureWriter::pcap(&part, self.outputs.link, 65535, false));
        let mut errors = Vec::new();
        let pcap = match made {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::error!(call_id = info.call_id.as_str(), "recording not written: {e}");
                self.stats.errors.fetch_add(1, Relaxed);
                errors.push(e);
                None
            }
        };
        tracing::info!(call_id = info.call_id.as_str(), "recording to {}.pcap", base.display());
        let tracks =
            if self.outputs.single || self.outputs.mixed { self.tracks(&base, &info, &mut errors) } else { Vec::new() };
        self.stats.open.fetch_add(1, Relaxed);
        let files = usize::from(pcap.is_some()) + tracks.len();
        self.files.fetch_add(files, Relaxed);
        let open = Open {
            base,
            pcap,
            info,
            on: true,
            started: at,
            events: Vec::new(),
            packets: 0,
            bytes: 0,
            errors,
            ip_id: 0,
            tracks,
            files,
        };
        if let Some(old) = self.open.insert(call, open) {
            // Not from the table (it stops a recording before it starts
            // another): completed all the same.
            self.hand_over(old, false, SystemTime::now());
        }
    }

    /// The audio tracks of a new recording: each party's of each audio
    /// stream, at a rate both parties' codecs take when they are mixed.
    fn tracks(&self, base: &Path, info: &Info, errors: &mut Vec<String>) -> Vec<(usize, usize, audio::Track)> {
        let mut out = Vec::new();
        for s in info.streams.iter().filter(|s| s.media == "audio") {
            for party in 0..2 {
                let other = self.outputs.mixed.then(|| &s.legs[1 - party]);
                let Some(rate) = audio::rate_of(&s.legs[party], other, &self.codecs) else {
                    errors.push(format!(
                        "stream {}: no audio of party {party}: no codec it can decode{}",
                        s.index,
                        if other.is_some() { " at a rate the other party's takes too" } else { "" }
                    ));
                    continue;
                };
                let path = wav_path(base, s.index, Some(party));
                match audio::Track::create(path.clone(), part_of(&path.with_extension(""), "wav"), rate) {
                    Ok(t) => out.push((s.index, party, t)),
                    Err(e) => {
                        self.stats.errors.fetch_add(1, Relaxed);
                        errors.push(e);
                    }
                }
            }
        }
        out
    }

    fn packet(&mut self, t: Tapped) {
        let Some(o) = self.open.get_mut(&t.call).filter(|o| o.on) else {
            self.stats.unwritten.fetch_add(1, Relaxed);
            return;
        };
        if !t.rtcp {
            let start_ns = o.started.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            let leg = o.info.streams.iter().find(|s| s.index == t.stream).and_then(|s| s.legs.get(t.party));
            let track = o.tracks.iter_mut().find(|(s, p, _)| (*s, *p) == (t.stream, t.party));
            if let (Some(leg), Some((_, _, track))) = (leg, track) {
                if let Err(e) = track.packet(&t, leg, &self.codecs, start_ns) {
                    tracing::error!(call_id = o.info.call_id.as_str(), "recording's audio stopped: {e}");
                    self.stats.errors.fetch_add(1, Relaxed);
                    o.errors.push(e);
                    track.fail();
                }
            }
        }
        let local = o.info.streams.iter().find(|s| s.index == t.stream).and_then(|s| s.legs.get(t.party));
        let (Some(local), Some(pcap)) = (local, o.pcap.as_mut()) else {
            self.stats.unwritten.fetch_add(1, Relaxed);
            return;
        };
        let to = if t.rtcp { local.local_rtcp } else { local.local };
        // An IPv4 peer of an IPv6 socket arrives as a mapped address.
        let from = std::net::SocketAddr::new(t.from.ip().to_canonical(), t.from.port());
        let (src, dst) = (Endpoint { addr: from, mac: [0; 6] }, Endpoint { addr: to, mac: [0; 6] });
        o.ip_id = o.ip_id.wrapping_add(1);
        let Ok(frame) = build_udp_frame(self.outputs.link, &src, &dst, o.ip_id, false, &t.data) else {
            // Not one to frame (an address of the other family): this
            // packet only is left out.
            self.stats.unwritten.fetch_add(1, Relaxed);
            return;
        };
        let written = pcap.write(Duration::from_nanos(t.at_ns), frame.len() as u32, &frame).map(|()| frame.len());
        match written {
            Ok(n) => {
                o.packets += 1;
                o.bytes += n as u64;
                self.stats.packets.fetch_add(1, Relaxed);
                self.stats.bytes.fetch_add(n as u64, Relaxed);
            }
            Err(e) => {
                // A full disk, most likely: the rest of the call is not
                // written, the call itself goes on.
                // The file is not kept: no half-written pcap under a final
                // name (the JSON says what happened).
                tracing::error!(call_id = o.info.call_id.as_str(), "recording stopped writing: {e}");
                self.stats.errors.fetch_add(1, Relaxed);
                o.errors.push(e);
                o.pcap = None;
                let _ = std::fs::remove_file(part_of(&o.base, "pcap"));
            }
        }
    }

    fn stop(&mut self, call: CallKey, discard: bool, at: SystemTime) {
        if let Some(open) = self.open.remove(&call) {
            self.hand_over(open, discard, at);
        }
    }

    /// Hands a stopped recording to the completion thread.
    fn hand_over(&self, open: Open, discard: bool, at: SystemTime) {
        if let Some(tx) = &self.done {
            let _ = tx.send(Done { open, discard, at });
        }
    }
}

impl Finisher {
    /// Completes the audio of a recording stopped at `at`: each party's
    /// track padded to the recording's length, each stream's two mixed,
    /// the files renamed (the parties' only with `single`); the files made
    /// and what failed.
    fn complete_audio(
        &self,
        o: &Open,
        tracks: &mut [(usize, usize, audio::Track)],
        at: SystemTime,
    ) -> (Vec<AudioFile>, Vec<String>) {
        let (mut files, mut errors) = (Vec::new(), Vec::new());
        let secs = at.duration_since(o.started).unwrap_or_default().as_secs_f64();
        for (_, _, t) in tracks.iter_mut() {
            if let Err(e) = t.pad_to((secs * f64::from(t.rate)) as u64).and_then(|()| t.finish()) {
                errors.push(e);
                t.fail();
            }
        }
        if self.outputs.mixed {
            let mut streams: Vec<usize> = tracks.iter().map(|t| t.0).collect();
            streams.dedup();
            for s in streams {
                let legs: Vec<&audio::Track> =
                    tracks.iter().filter(|t| t.0 == s && !t.2.failed).map(|t| &t.2).collect();
                let [a, b] = legs[..] else {
                    errors.push(format!("stream {s}: no mix: not both parties' audio"));
                    continue;
                };
                if a.rate != b.rate {
                    errors.push(format!("stream {s}: no mix: the parties' audio is at {} and {} Hz", a.rate, b.rate));
                    continue;
                }
                let path = wav_path(&o.base, s, None);
                let part = part_of(&path.with_extension(""), "wav");
                let made = audio::mix(&[&a.part, &b.part], &part, a.rate).and_then(|n| {
                    std::fs::rename(&part, &path).map(|()| n).map_err(|e| format!("{}: {e}", part.display()))
                });
                match made {
                    Ok(n) => files.push(AudioFile {
                        file: file_name(&path),
                        stream: s,
                        party: None,
                        rate: a.rate,
                        seconds: n as f64 / f64::from(a.rate),
                        skipped: 0,
                    }),
                    Err(e) => {
                        let _ = std::fs::remove_file(&part);
                        errors.push(e);
                    }
                }
            }
        }
        for (s, p, t) in tracks.iter() {
            if !self.outputs.single || t.failed {
                let _ = std::fs::remove_file(&t.part);
                continue;
            }
            match std::fs::rename(&t.part, &t.path) {
                Ok(()) => files.push(AudioFile {
                    file: file_name(&t.path),
                    stream: *s,
                    party: Some(*p),
                    rate: t.rate,
                    seconds: t.written as f64 / f64::from(t.rate),
                    skipped: t.skipped,
                }),
                Err(e) => errors.push(format!("{}: {e}", t.part.display())),
            }
        }
        (files, errors)
    }

    /// Closes a recording's files: renamed to their final names, or
    /// deleted when `discard`.
    fn complete(&self, o: Open, discard: bool, at: SystemTime) {
        let files = o.files;
        self.close(o, discard, at);
        self.files.fetch_sub(files, Relaxed);
    }

    /// [`Finisher::complete`]'s work, the files closed once it returns.
    fn close(&self, mut o: Open, discard: bool, at: SystemTime) {
        self.stats.open.fetch_sub(1, Relaxed);
        let call_id = o.info.call_id.clone();
        let pcap_part = part_of(&o.base, "pcap");
        let pcap_done = o.pcap.take().map(CaptureWriter::finish);
        let mut tracks = std::mem::take(&mut o.tracks);
        if discard {
            let _ = std::fs::remove_file(&pcap_part);
            for (_, _, t) in &mut tracks {
                let _ = t.finish();
                let _ = std::fs::remove_file(&t.part);
            }
            self.stats.discarded.fetch_add(1, Relaxed);
            tracing::info!(call_id, "recording discarded");
            return;
        }
        let pcap = srtpgate_calls::recording::file_of(&o.base, "pcap");
        match pcap_done {
            Some(Err(e)) => o.errors.push(e),
            Some(Ok(())) => {
                if let Err(e) = std::fs::rename(&pcap_part, &pcap) {
                    o.errors.push(format!("{}: cannot rename: {e}", pcap_part.display()));
                }
            }
            None => {}
        }
        let (audio, audio_errors) = self.complete_audio(&o, &mut tracks, at);
        o.errors.extend(audio_errors);
        let meta = Metadata {
            call: &o.info,
            pcap: pcap.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned()),
            format: if self.outputs.link == LINKTYPE_ETHERNET { "eth" } else { "raw" },
            started: rfc3339(o.started),
            stopped: rfc3339(at),
            seconds: at.duration_since(o.started).unwrap_or_default().as_secs_f64(),
            events: &o.events,
            packets: o.packets,
            bytes: o.bytes,
            audio,
            errors: &o.errors,
        };
        let json_part = part_of(&o.base, "json");
        let json = srtpgate_calls::recording::file_of(&o.base, "json");
        let written = serde_json::to_vec_pretty(&meta)
            .map_err(|e| e.to_string())
            .and_then(|b| std::fs::write(&json_part, b).map_err(|e| format!("{}: {e}", json_part.display())))
            .and_then(|()| std::fs::rename(&json_part, &json).map_err(|e| format!("{}: {e}", json.display())));
        if let Err(e) = written {
            o.errors.push(e);
        }
        if o.errors.is_empty() {
            self.stats.finished.fetch_add(1, Relaxed);
            tracing::info!(call_id, packets = o.packets, "recording completed: {}", pcap.display());
        } else {
            self.stats.errors.fetch_add(1, Relaxed);
            tracing::error!(call_id, "recording completed with errors: {}", o.errors.join("; "));
        }
    }
}

/// A file's name, for the metadata.
fn file_name(p: &Path) -> String {
    p.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned())
}

/// A WAV's path: `<base>.caller.wav`, `.callee.wav` or `.mix.wav` (the
/// party), `.s<N>` before it for a stream other than the first.
fn wav_path(base: &Path, stream: usize, party: Option<usize>) -> PathBuf {
    let name = base.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let s = if stream > 0 { format!(".s{stream}") } else { String::new() };
    let who = match party {
        Some(0) => "caller",
        Some(_) => "callee",
        None => "mix",
    };
    base.with_file_name(format!("{name}{s}.{who}.wav"))
}

/// The hidden name a file is written under until it is complete:
/// `.<name>.<ext>.part` beside it.
fn part_of(base: &Path, ext: &str) -> PathBuf {
    let name = base.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    base.with_file_name(format!(".{name}.{ext}.part"))
}

/// RFC 3339, UTC, milliseconds.
fn rfc3339(t: SystemTime) -> String {
    let t = time::OffsetDateTime::from(t);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}
