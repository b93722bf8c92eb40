//! Call recording as the table decides it: which calls record, whether a
//! recording is paused, and where its files go; rtpengine's `start
//! recording`, `stop recording`, `pause recording`, `record call`,
//! `metadata`, and `recording-file`/`-path`/`-pattern`.
//!
//! The table writes nothing. A recording's life is a queue of
//! [`RecorderEvent`]s for the host's writer ([`Table::poll_recorder`]), and
//! the workers are told which calls' packets to copy to it
//! ([`Command::Record`]). The files' names are decided here, so that an
//! offer's or answer's reply can name them (`recordings`) as rtpengine's
//! does.
//!
//! Unlike rtpengine, which opens whatever path a request names, a request
//! names files only below the recording directory: `recording-file`,
//! `recording-path` and `recording-pattern` are relative paths without
//! `..`, and the Call-ID in a file name is escaped so that it cannot add a
//! directory.

use crate::call::{Call, CallKey, Stream};
use crate::command::Command;
use crate::table::{Now, Refusal, Table};
use rand::{rngs::OsRng, RngCore, TryRngCore};
use serde::Serialize;
use srtpgate_ng::{RecordCall, Request, Value};
use srtpgate_sdp::formats::Format;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

/// The file name pattern when neither the configuration nor the request
/// gives one: a directory per day (UTC), then the escaped Call-ID and 16
/// random hex digits (rtpengine's `<call-id>-<random>`).
pub const DEFAULT_PATTERN: &str = "%Y-%m-%d/%c-%r";

/// The most bytes of a call's `metadata`, unless configured.
pub const DEFAULT_MAX_METADATA: usize = 4096;

/// The relay's recording settings.
#[derive(Clone, Debug)]
pub struct RecordingSettings {
    /// Where recordings go (`None`: recording is not configured; requests
    /// for it are answered with a warning, as rtpengine logs them).
    pub dir: Option<PathBuf>,
    /// The file name pattern below `dir` ([`expand`]).
    pub pattern: String,
    /// The most bytes of `metadata`.
    pub max_metadata: usize,
}

impl Default for RecordingSettings {
    fn default() -> RecordingSettings {
        RecordingSettings { dir: None, pattern: DEFAULT_PATTERN.into(), max_metadata: DEFAULT_MAX_METADATA }
    }
}

/// A call's recording, from its start to its stop.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Its files' path below the recording directory, without extension.
    pub base: PathBuf,
    /// Packets are written (false: paused).
    pub on: bool,
}

/// Where a call's next recording goes, as its requests said (kept until
/// the recording stops, as rtpengine keeps them).
#[derive(Clone, Debug, Default)]
pub struct Target {
    /// `recording-file`: the pcap's path (the other files beside it).
    pub file: Option<String>,
    /// `recording-path`: a directory for the files.
    pub path: Option<String>,
    /// `recording-pattern`: the file name pattern.
    pub pattern: Option<String>,
}

/// A recording action of the management page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// Start, or resume.
    Start,
    /// Pause.
    Pause,
    /// Stop.
    Stop,
}

/// One step of a recording, for the host's writer, in the order the table
/// took them.
#[derive(Clone, Debug)]
pub enum RecorderEvent {
    /// Open the files of call `call`: `<base>.pcap` and, when it stops,
    /// `<base>.json` (`base` with the recording directory).
    Start { call: CallKey, base: PathBuf, info: Box<Info>, at: SystemTime },
    /// Write nothing more until [`RecorderEvent::Resume`].
    Pause { call: CallKey, at: SystemTime },
    /// Write again.
    Resume { call: CallKey, at: SystemTime },
    /// The call changed (an offer or answer, new `metadata`).
    Update { call: CallKey, info: Box<Info> },
    /// Close the files (and delete them, when `discard`), at once (the
    /// writer notes the time: a call can end without a request).
    Stop { call: CallKey, discard: bool },
}

/// What a recording's metadata says of its call: never a key.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Info {
    /// The Call-ID.
    #[serde(rename = "call-id")]
    pub call_id: String,
    /// Each party's SIP tag (the first offerer's first).
    pub tags: [Option<String>; 2],
    /// The call's `metadata`.
    pub metadata: Option<String>,
    /// The relayed media streams.
    pub streams: Vec<StreamInfo>,
}

/// One relayed media stream of a recorded call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamInfo {
    /// Its m-line index.
    pub index: usize,
    /// `audio`, `video`, …
    pub media: String,
    /// Transcoded between its two legs.
    pub transcoded: bool,
    /// Each party's leg.
    pub legs: [LegInfo; 2],
}

/// One party's leg of a recorded stream.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LegInfo {
    /// The relay's logical interface.
    pub interface: String,
    /// The relay's RTP address (the destination in the pcap of what this
    /// party sends).
    pub local: SocketAddr,
    /// The relay's RTCP address (the RTP one with rtcp-mux).
    pub local_rtcp: SocketAddr,
    /// The endpoint's RTP address, as its SDP said (what it sends from is
    /// in the pcap).
    pub peer: Option<SocketAddr>,
    /// The SDP protocol.
    pub protocol: String,
    /// The SRTP suite the endpoint sends with (none: plain RTP).
    pub suite: Option<String>,
    /// The codecs of the leg: payload type, name, clock rate, channels.
    pub codecs: Vec<CodecInfo>,
}

/// A codec of a recorded leg.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CodecInfo {
    /// RTP payload type.
    pub pt: u8,
    /// Encoding name.
    pub name: String,
    /// RTP clock rate, Hz.
    pub clock_rate: u32,
    /// Channels.
    pub channels: u32,
}

impl CodecInfo {
    fn of(f: &Format) -> CodecInfo {
        CodecInfo { pt: f.pt, name: f.name.clone(), clock_rate: f.clock_rate, channels: f.channels }
    }
}

impl Table {
    /// The next step for the recorder, in order.
    pub fn poll_recorder(&mut self) -> Option<RecorderEvent> {
        self.recorder.pop_front()
    }

    /// `start recording`: starts the call's recording, or resumes a paused
    /// one.
    pub(crate) fn start_recording(&mut self, req: &Request, now: Now) -> Result<Value, Refusal> {
        let call_id = self.recorded_call(req)?;
        self.note_recording_keys(&call_id, req)?;
        self.start_or_resume(&call_id, now, true)?;
        Ok(srtpgate_ng::ok())
    }

    /// `pause recording`: the files stay open, nothing more is written.
    pub(crate) fn pause_recording(&mut self, req: &Request, now: Now) -> Result<Value, Refusal> {
        let call_id = self.recorded_call(req)?;
        self.note_recording_keys(&call_id, req)?;
        self.pause(&call_id, now);
        Ok(srtpgate_ng::ok())
    }

    /// `stop recording`: closes the files (a later start makes new ones);
    /// with `pause=yes` or the `pause` flag it pauses instead, with the
    /// `discard-recording` flag it also deletes them.
    pub(crate) fn stop_recording(&mut self, req: &Request, now: Now) -> Result<Value, Refusal> {
        let call_id = self.recorded_call(req)?;
        self.note_recording_keys(&call_id, req)?;
        if req.pause {
            self.pause(&call_id, now);
        } else {
            self.stop(&call_id, req.record_call == Some(RecordCall::Discard));
        }
        Ok(srtpgate_ng::ok())
    }

    /// After an offer or answer: its recording keys and `record call`, the
    /// writer told what changed, and the reply's `recordings`. A recording
    /// key it cannot take is a warning: the call itself went through.
    pub(crate) fn record_after_offer_answer(&mut self, req: &Request, now: Now, reply: &mut Value) {
        let Some(call_id) = req.call_id.clone() else { return };
        if let Err(e) = self.note_recording_keys(&call_id, req) {
            self.notes.push(e);
        }
        let started = match req.record_call {
            Some(RecordCall::Yes) => self.start_or_resume(&call_id, now, false),
            Some(RecordCall::No) => Ok(self.stop(&call_id, false)),
            Some(RecordCall::Discard) => Ok(self.stop(&call_id, true)),
            None => Ok(false),
        };
        let started = started.unwrap_or_else(|e| {
            self.notes.push(e);
            false
        });
        let Some(call) = self.calls.get(&call_id) else { return };
        let Some(on) = call.recording.as_ref().map(|r| r.on) else { return };
        let (worker, key) = (call.worker, call.key);
        if !started {
            // The streams or the metadata may have changed: the writer
            // learns the call anew, and new streams are tapped too.
            let info = Box::new(self.recording_info(call));
            self.recorder.push_back(RecorderEvent::Update { call: key, info });
            if on {
                self.command(Command::Record { worker, call: key, on: true });
            }
        }
        if let (Some(dir), Some(r)) = (&self.cfg.recording.dir, &self.calls[&call_id].recording) {
            let pcap = file_of(&dir.join(&r.base), "pcap");
            reply.insert("recordings", vec![Value::from(pcap.to_string_lossy().into_owned())]);
        }
    }

    /// A recording action from the management page: start (or resume),
    /// pause or stop the call's recording, as the NG commands do; what was
    /// done, for the page and the log.
    pub fn operator_recording(&mut self, call_id: &str, what: Operator, now: Now) -> Result<String, String> {
        if !self.calls.contains_key(call_id) {
            return Err(format!("no call '{call_id}'"));
        }
        self.notes.clear();
        match what {
            Operator::Start => {
                self.start_or_resume(call_id, now, true)?;
                if let Some(note) = self.notes.pop() {
                    return Err(note);
                }
            }
            Operator::Pause => self.pause(call_id, now),
            Operator::Stop => {
                self.stop(call_id, false);
            }
        }
        Ok(match self.calls[call_id].recording.as_ref().map(|r| r.on) {
            Some(true) => format!("call '{call_id}' is recording"),
            Some(false) => format!("call '{call_id}''s recording is paused"),
            None => format!("call '{call_id}' is not recording"),
        })
    }

    /// Whether `call` records now (`Some(false)`: paused), and where.
    pub fn recording_of(&self, call: &Call) -> Option<(bool, PathBuf)> {
        let r = call.recording.as_ref()?;
        let dir = self.cfg.recording.dir.as_deref().unwrap_or(Path::new(""));
        Some((r.on, file_of(&dir.join(&r.base), "pcap")))
    }

    /// The recording part of a `query` reply: rtpengine's `recording` while
    /// the call has a recording (`call recording` 0 while paused), and the
    /// call's `metadata`.
    pub(crate) fn recording_report(&self, call: &Call, reply: &mut Value) {
        if let Some(r) = &call.recording {
            reply.insert("recording", Value::dict().with("call recording", u64::from(r.on)).with("forwarding", 0u64));
        }
        if let Some(m) = &call.metadata {
            reply.insert("metadata", m.as_str());
        }
    }

    /// The call's recording stopped and its files deleted (a `delete` with
    /// `discard-recording`).
    pub(crate) fn discard_recording(&mut self, call_id: &str) {
        self.stop(call_id, true);
    }

    /// A call that ends while recording: its files are closed.
    pub(crate) fn stop_recording_of_removed(&mut self, call: &Call) {
        if call.recording.is_some() {
            self.recorder.push_back(RecorderEvent::Stop { call: call.key, discard: false });
        }
    }

    /// The Call-ID of a recording command's call, which must exist.
    fn recorded_call(&self, req: &Request) -> Result<String, Refusal> {
        let call_id = req.call_id.clone().ok_or("missing key 'call-id'")?;
        if !self.calls.contains_key(&call_id) {
            return Err(format!("Unknown call-id '{call_id}'"));
        }
        Ok(call_id)
    }

    /// Takes a request's `metadata` and file keys for the call, checked.
    fn note_recording_keys(&mut self, call_id: &str, req: &Request) -> Result<(), Refusal> {
        let max = self.cfg.recording.max_metadata;
        if let Some(m) = &req.metadata {
            if m.len() > max {
                return Err(format!("metadata of {} bytes is over the limit of {max} (max-metadata-length)", m.len()));
            }
        }
        for (key, v) in [("recording-file", &req.recording_file), ("recording-path", &req.recording_path)] {
            if let Some(v) = v {
                below(key, v)?;
            }
        }
        if let Some(p) = &req.recording_pattern {
            check_pattern(p).map_err(|e| format!("recording-pattern '{}': {e}", clip(p)))?;
        }
        let Some(call) = self.calls.get_mut(call_id) else { return Ok(()) };
        // rtpengine: an empty value leaves the metadata as it was.
        if let Some(m) = req.metadata.as_ref().filter(|m| !m.is_empty()) {
            call.metadata = Some(m.clone());
        }
        let t = &mut call.recording_target;
        for (field, v) in [
            (&mut t.file, &req.recording_file),
            (&mut t.path, &req.recording_path),
            (&mut t.pattern, &req.recording_pattern),
        ] {
            if v.is_some() {
                field.clone_from(v);
            }
        }
        Ok(())
    }

    /// Starts the call's recording; a paused one is resumed only when
    /// `resume` (`start recording` does, `record call` does not, as in
    /// rtpengine). Whether a recording started.
    fn start_or_resume(&mut self, call_id: &str, now: Now, resume: bool) -> Result<bool, Refusal> {
        let Some(dir) = self.cfg.recording.dir.clone() else {
            self.notes
                .push("call recording requested, but no recording directory is configured (recording-dir)".into());
            return Ok(false);
        };
        let pattern = self.cfg.recording.pattern.clone();
        let Some(call) = self.calls.get_mut(call_id) else { return Ok(false) };
        let (worker, key) = (call.worker, call.key);
        match call.recording.as_mut() {
            Some(r) if r.on || !resume => return Ok(false),
            Some(r) => {
                r.on = true;
                self.recorder.push_back(RecorderEvent::Resume { call: key, at: now.wall });
                self.command(Command::Record { worker, call: key, on: true });
                return Ok(false);
            }
            None => {}
        }
        let base = file_base(call_id, &call.recording_target, &pattern, now.wall)?;
        call.recording = Some(Recording { base: base.clone(), on: true });
        let info = Box::new(self.recording_info(&self.calls[call_id]));
        self.recorder.push_back(RecorderEvent::Start { call: key, base: dir.join(base), info, at: now.wall });
        self.command(Command::Record { worker, call: key, on: true });
        self.totals.recordings_started += 1;
        tracing::info!(call_id, "recording started");
        Ok(true)
    }

    fn pause(&mut self, call_id: &str, now: Now) {
        let Some(call) = self.calls.get_mut(call_id) else { return };
        let (worker, key) = (call.worker, call.key);
        if let Some(r) = call.recording.as_mut().filter(|r| r.on) {
            r.on = false;
            self.recorder.push_back(RecorderEvent::Pause { call: key, at: now.wall });
            self.command(Command::Record { worker, call: key, on: false });
        }
    }

    /// Stops the call's recording (its files closed, or deleted when
    /// `discard`); the next recording's targets are forgotten. Always
    /// `false` (no recording started), for [`Self::record_after_offer_answer`].
    fn stop(&mut self, call_id: &str, discard: bool) -> bool {
        let Some(call) = self.calls.get_mut(call_id) else { return false };
        let (worker, key) = (call.worker, call.key);
        if call.recording.take().is_some() {
            call.recording_target = Target::default();
            self.recorder.push_back(RecorderEvent::Stop { call: key, discard });
            self.command(Command::Record { worker, call: key, on: false });
            tracing::info!(call_id, discard, "recording stopped");
        }
        false
    }

    /// What the recording's metadata says of `call`.
    pub(crate) fn recording_info(&self, call: &Call) -> Info {
        let call_id = self.by_key.get(&call.key).cloned().unwrap_or_default();
        let streams = call
            .streams
            .iter()
            .enumerate()
            .filter_map(|(index, s)| Some((index, s.as_ref()?)))
            .map(|(index, s)| StreamInfo {
                index,
                media: s.media_type.clone(),
                transcoded: s.transcoding.is_some(),
                legs: [0, 1].map(|p| self.leg_info(s, p)),
            })
            .collect();
        Info { call_id, tags: call.tags.clone(), metadata: call.metadata.clone(), streams }
    }

    fn leg_info(&self, s: &Stream, party: usize) -> LegInfo {
        let d = &s.legs[party];
        let local = SocketAddr::new(d.at.addr.local, d.port);
        let local_rtcp = if d.mux { local } else { SocketAddr::new(d.at.addr.local, d.port.wrapping_add(1)) };
        let codecs = s.party_formats(party).iter().map(CodecInfo::of).collect();
        LegInfo {
            interface: self.cfg.interfaces.get(d.at.interface).map_or(String::new(), |i| i.name.clone()),
            local,
            local_rtcp,
            peer: d.peer.and_then(|(rtp, _)| rtp),
            protocol: d.proto.clone(),
            suite: d.endpoint_key.as_ref().map(|k| k.suite.name().to_string()),
            codecs,
        }
    }
}

/// The files' path below the recording directory, without extension:
/// `recording-file` (its `.pcap` cut), else `recording-path` joined with
/// the pattern's expansion.
fn file_base(call_id: &str, t: &Target, pattern: &str, now: SystemTime) -> Result<PathBuf, Refusal> {
    if let Some(f) = &t.file {
        return below("recording-file", f.strip_suffix(".pcap").unwrap_or(f));
    }
    let mut random = [0u8; 8];
    OsRng.unwrap_err().fill_bytes(&mut random);
    let name = expand(t.pattern.as_deref().unwrap_or(pattern), call_id, &hex::encode(random), now)
        .map_err(|e| format!("recording-pattern: {e}"))?;
    let dir = match &t.path {
        Some(p) => below("recording-path", p)?,
        None => PathBuf::new(),
    };
    below("recording-pattern", &dir.join(name).to_string_lossy())
}

/// A recording's file: its base path and `.ext` (appended: a base may
/// hold dots, as a Call-ID does).
pub fn file_of(base: &Path, ext: &str) -> PathBuf {
    let mut s = base.as_os_str().to_os_string();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// `v` as a path below the recording directory: relative, without `..`,
/// and not empty.
pub fn below(key: &str, v: &str) -> Result<PathBuf, Refusal> {
    let p = Path::new(v);
    let fine = !v.is_empty()
        && !v.contains('\0')
        && v.len() <= 1024
        && p.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.components().any(|c| matches!(c, Component::Normal(_)));
    if fine {
        Ok(p.components().filter(|c| matches!(c, Component::Normal(_))).collect())
    } else {
        Err(format!("{key} '{}' is not a relative path below the recording directory", clip(v)))
    }
}

/// A file name pattern's expansion: `%c` the Call-ID (escaped: letters,
/// digits and `-._+=@` kept, every other byte `%XX`, so it names one file),
/// `%r` the random part, `%Y %m %d %H %M %S` the start time (UTC), `%%` a
/// `%`.
pub fn expand(pattern: &str, call_id: &str, random: &str, now: SystemTime) -> Result<String, String> {
    let t = time::OffsetDateTime::from(now);
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('c') => out.push_str(&escape(call_id)),
            Some('r') => out.push_str(random),
            Some('Y') => out.push_str(&format!("{:04}", t.year())),
            Some('m') => out.push_str(&format!("{:02}", u8::from(t.month()))),
            Some('d') => out.push_str(&format!("{:02}", t.day())),
            Some('H') => out.push_str(&format!("{:02}", t.hour())),
            Some('M') => out.push_str(&format!("{:02}", t.minute())),
            Some('S') => out.push_str(&format!("{:02}", t.second())),
            Some('%') => out.push('%'),
            Some(x) => return Err(format!("unknown format '%{x}' (known: %c %r %Y %m %d %H %M %S %%)")),
            None => return Err("a '%' at the end".into()),
        }
    }
    Ok(out)
}

/// Checks a pattern: it expands, and what it makes is a path below the
/// recording directory.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    let sample = expand(pattern, "call-id", "0123456789abcdef", SystemTime::UNIX_EPOCH)?;
    below("pattern", &sample).map(|_| ())
}

/// The Call-ID as one file name component, of at most 120 bytes (a file
/// name has 255, and the random part and suffixes follow it).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if out.len() > 117 {
            break;
        }
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'+' | b'=' | b'@' => out.push(b as char),
            // A dot is kept except first, so that no name is `.`, `..` or hidden.
            b'.' if !out.is_empty() => out.push('.'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Cuts untrusted text for errors.
fn clip(s: &str) -> String {
    s.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn paths_stay_below_the_directory() {
        assert_eq!(below("f", "a/b.pcap").unwrap(), PathBuf::from("a/b.pcap"));
        assert_eq!(below("f", "./a//b").unwrap(), PathBuf::from("a/b"));
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a/..", ".", "a\0b"] {
            let e = below("recording-file", bad).unwrap_err();
            assert!(e.contains("not a relative path below the recording directory"), "{bad:?}: {e}");
        }
        assert!(below("f", &"a".repeat(1025)).is_err());
    }

    #[test]
    fn patterns_expand_and_the_call_id_is_one_component() {
        // 2026-11-27 13:45:06 UTC.
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_787_106);
        assert_eq!(
            expand("%Y-%m-%d/%H%M%S-%c-%r%%", "abc@host", "00ff", t).unwrap(),
            "2026-11-27/134506-abc@host-00ff%"
        );
        assert_eq!(expand("%c", "../../etc/passwd", "", t).unwrap(), "%2E.%2F..%2Fetc%2Fpasswd");
        assert_eq!(expand("%c", ".hidden", "", t).unwrap(), "%2Ehidden");
        assert!(expand("%c", &"/".repeat(250), "", t).unwrap().len() <= 120);
        assert_eq!(file_of(Path::new("d/abc@10.0.0.5-00ff"), "pcap"), PathBuf::from("d/abc@10.0.0.5-00ff.pcap"));
        assert!(expand("%q", "c", "", t).unwrap_err().contains("unknown format '%q'"));
        assert!(expand("x%", "c", "", t).is_err());
        assert!(check_pattern(DEFAULT_PATTERN).is_ok());
        assert!(check_pattern("/abs/%c").is_err());
        assert!(check_pattern("../%c").is_err());
        let base = file_base("c/1", &Target::default(), DEFAULT_PATTERN, t).unwrap();
        let name = base.to_string_lossy();
        assert!(name.starts_with("2026-11-27/c%2F1-") && name.len() == "2026-11-27/c%2F1-".len() + 16, "{name}");
        let file = Target { file: Some("x/y.pcap".into()), ..Target::default() };
        assert_eq!(file_base("c", &file, DEFAULT_PATTERN, t).unwrap(), PathBuf::from("x/y"));
        let dotted = Target { file: Some("x/rec.2026".into()), ..Target::default() };
        assert_eq!(file_base("c", &dotted, DEFAULT_PATTERN, t).unwrap(), PathBuf::from("x/rec.2026"));
        let path = Target { path: Some("tenant-1".into()), pattern: Some("%c".into()), ..Target::default() };
        assert_eq!(file_base("c", &path, DEFAULT_PATTERN, t).unwrap(), PathBuf::from("tenant-1/c"));
    }
}
