//! The management page's WebSocket protocol (docs/MANAGEMENT.md): the
//! client's `edit` messages parsed and checked, the rows of the call table,
//! a client's view of them (filter, sort, page), and the coalescing that
//! turns each sample of the relay into `create`/`update`/`remove` messages
//! for the rows of that page only.
//!
//! Kept apart from the daemon so that the parser can be fuzzed and the view
//! and coalescing tested without sockets. Nothing here panics on input.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};

/// Longest client message taken, bytes.
pub const MAX_MESSAGE: usize = 4096;
/// Most rows in one page.
pub const MAX_LIMIT: usize = 500;
/// Rows in a page unless the client says otherwise.
pub const DEFAULT_LIMIT: usize = 50;
/// Longest filter text, characters.
pub const MAX_FILTER: usize = 256;

/// One leg of a call as the table shows it.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct LegRow {
    pub tag: String,
    /// The relay's interface of this leg (its name).
    pub interface: String,
    /// The relay's address for this leg (as advertised in SDP).
    pub local: String,
    /// The endpoint's address (latched, else from its SDP; empty if none).
    pub peer: String,
    pub suite: String,
    pub codec: String,
    pub direction: &'static str,
    pub packets_in: u64,
    pub packets_out: u64,
    /// RTP packets lost before the relay (by sequence numbers).
    pub lost: u64,
    pub dropped: u64,
}

/// One call of the table.
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct CallRow {
    pub call_id: String,
    pub from_tag: String,
    pub to_tag: String,
    pub age_s: u64,
    pub worker: usize,
    pub answered: bool,
    pub legs: Vec<LegRow>,
    pub packets_in: u64,
    pub packets_out: u64,
    /// RTP packets lost before the relay, both legs.
    pub lost: u64,
    /// Packets the relay received and did not relay (every drop reason).
    pub dropped: u64,
    /// Drop reasons with a count above zero.
    pub drops: BTreeMap<&'static str, u64>,
    /// Upper bounds of the delay histogram buckets that hold the median and
    /// the 99th percentile of the call's packets (None: no packet yet).
    pub delay_p50_us: Option<u64>,
    pub delay_p99_us: Option<u64>,
    pub codecs: String,
    pub transcoded: bool,
}

impl CallRow {
    /// Whether `needle` (lower case) is in the Call-ID, a tag or an address.
    fn matches(&self, needle: &str) -> bool {
        let has = |s: &str| s.to_lowercase().contains(needle);
        needle.is_empty()
            || has(&self.call_id)
            || has(&self.from_tag)
            || has(&self.to_tag)
            || self.legs.iter().any(|l| has(&l.local) || has(&l.peer) || has(&l.tag))
    }
}

/// One call quality sample as a call's detail shows it: what an endpoint
/// received over one report interval (or, in [`SsrcQuality::average`],
/// the averages over the samples with a MOS).
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct QualitySample {
    /// MOS, 1.0–5.0 in tenths (None: none, as under the CQ model without a
    /// round trip).
    pub mos: Option<f64>,
    /// End-to-end round trip (both legs), µs (None: not known).
    pub rtt_us: Option<u64>,
    /// Round trip of the relay's leg towards the endpoint, µs (None: not
    /// known).
    pub rtt_leg_us: Option<u64>,
    /// Interarrival jitter, ms.
    pub jitter_ms: u32,
    /// Lost in the interval, percent.
    pub loss_pct: u32,
    /// When it was reported, UNIX s (None on averages).
    pub at: Option<u64>,
}

impl QualitySample {
    /// A sample from the quality book's units: MOS ×10 and round trips with
    /// 0 for none.
    pub fn new(mos_x10: u32, rtt_us: u64, rtt_leg_us: u64, jitter_ms: u32, loss_pct: u32, at: Option<u64>) -> Self {
        QualitySample {
            mos: mos(mos_x10),
            rtt_us: (rtt_us > 0).then_some(rtt_us),
            rtt_leg_us: (rtt_leg_us > 0).then_some(rtt_leg_us),
            jitter_ms,
            loss_pct,
            at,
        }
    }
}

/// A MOS ×10 as the page shows it (0: none).
pub fn mos(mos_x10: u32) -> Option<f64> {
    (mos_x10 > 0).then(|| f64::from(mos_x10) / 10.0)
}

/// Call quality of one SSRC in a call's detail: what the endpoint that
/// sends this SSRC received (from its RTCP report blocks, or the relay's
/// own view of the stream towards it when it sends none).
#[derive(Serialize, Clone, Debug, PartialEq, Default)]
pub struct SsrcQuality {
    pub ssrc: u32,
    /// The tag of the leg whose endpoint sends this SSRC (the SSRC of the
    /// last RTP the relay accepted from it; empty: no leg sends it).
    pub tag: String,
    /// The stream it is sent on (the detail's stream `index`).
    pub stream: Option<usize>,
    /// Where the samples come from: `RTCP` or `relay`.
    pub source: &'static str,
    /// Cumulative packets lost, from the last report.
    pub cumulative_loss: u64,
    /// Samples kept over the call (also those thinned out of
    /// `progression`).
    pub samples: u64,
    /// Of those, the ones with a MOS: the averages are over these.
    pub mos_samples: u64,
    /// Averages over the samples with a MOS (`at` None).
    pub average: QualitySample,
    /// The sample with the lowest MOS.
    pub lowest: Option<QualitySample>,
    /// The sample with the highest MOS.
    pub highest: Option<QualitySample>,
    /// The last sample (its jitter and loss are all there is while no
    /// sample has a MOS).
    pub last: Option<QualitySample>,
    /// Every sample kept (in order; past 512, every second one is let go
    /// so that they span the call): `[reported at (UNIX s), MOS or null]`.
    pub progression: Vec<(u64, Option<f64>)>,
}

/// What the table can be sorted by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SortKey {
    #[default]
    Age,
    CallId,
    Packets,
    Lost,
    Dropped,
    DelayP99Us,
}

/// What one client looks at: the rows matching `filter`, sorted, one page.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct View {
    pub filter: String,
    pub sort: SortKey,
    pub desc: bool,
    pub offset: usize,
    pub limit: usize,
}

impl Default for View {
    fn default() -> View {
        View { filter: String::new(), sort: SortKey::Age, desc: false, offset: 0, limit: DEFAULT_LIMIT }
    }
}

impl View {
    /// The rows of this view's page (indices into `rows`, in order) and how
    /// many rows match the filter.
    pub fn page(&self, rows: &[CallRow]) -> (Vec<usize>, usize) {
        let needle = self.filter.to_lowercase();
        let mut idx: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].matches(&needle)).collect();
        let matching = idx.len();
        let key = |r: &CallRow| -> (u64, u64) {
            match self.sort {
                SortKey::Age => (r.age_s, 0),
                SortKey::CallId => (0, 0),
                SortKey::Packets => (r.packets_in, 0),
                SortKey::Lost => (r.lost, 0),
                SortKey::Dropped => (r.dropped, 0),
                SortKey::DelayP99Us => (r.delay_p99_us.map_or(0, |v| v + 1), 0),
            }
        };
        // Ties (and the Call-ID sort) in Call-ID order, so that pages are
        // stable from one sample to the next.
        idx.sort_by(|&a, &b| {
            let (ra, rb) = (&rows[a], &rows[b]);
            let o = key(ra).cmp(&key(rb)).then_with(|| ra.call_id.cmp(&rb.call_id));
            if self.desc {
                o.reverse()
            } else {
                o
            }
        });
        let page: Vec<usize> = idx.into_iter().skip(self.offset).take(self.limit).collect();
        (page, matching)
    }
}

/// A leg's direction as the operator sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Media both ways.
    Sendrecv,
    /// The endpoint sends, gets nothing (on hold).
    Sendonly,
    /// The endpoint gets media, what it sends is not relayed (muted).
    Recvonly,
    /// Neither way.
    Inactive,
}

impl Direction {
    /// Every direction.
    pub const ALL: [Direction; 4] =
        [Direction::Sendrecv, Direction::Sendonly, Direction::Recvonly, Direction::Inactive];

    /// The name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Sendrecv => "sendrecv",
            Direction::Sendonly => "sendonly",
            Direction::Recvonly => "recvonly",
            Direction::Inactive => "inactive",
        }
    }

    /// (what the endpoint sends is dropped, nothing is sent to it).
    pub fn blocks(self) -> (bool, bool) {
        match self {
            Direction::Sendrecv => (false, false),
            Direction::Sendonly => (false, true),
            Direction::Recvonly => (true, false),
            Direction::Inactive => (true, true),
        }
    }

    /// The direction of (muted, held).
    pub fn of(muted: bool, held: bool) -> Direction {
        match (muted, held) {
            (false, false) => Direction::Sendrecv,
            (false, true) => Direction::Sendonly,
            (true, false) => Direction::Recvonly,
            (true, true) => Direction::Inactive,
        }
    }
}

/// A recording action on a call, as NG's `start recording`, `pause
/// recording`, `stop recording`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recording {
    /// Start, or resume a paused recording.
    Start,
    /// Pause.
    Pause,
    /// Stop (the files are completed).
    Stop,
}

/// A media action on a leg, as rtpengine's media-control NG commands with
/// the leg's tag as their `from-tag`: the controls act on what that leg
/// sends, `play-dtmf` plays a digit as if that leg sent it (the other leg
/// hears it), and `play-media` and `stop-media` act on what that leg hears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Media {
    /// `block media`: what the leg sends is not relayed (its DTMF is).
    Block,
    /// `unblock media`.
    Unblock,
    /// `silence media`: what the leg sends is relayed as silence.
    Silence,
    /// `unsilence media`.
    Unsilence,
    /// `block DTMF`: the leg's RFC 4733 events are dropped.
    BlockDtmf,
    /// `unblock DTMF`.
    UnblockDtmf,
    /// `play DTMF`: a digit (`code`) from the leg, played to the other.
    PlayDtmf,
    /// `play media`: a file of the relay's media directory (`file`),
    /// played to the leg.
    PlayMedia,
    /// `stop media`: stops what is played to the leg.
    StopMedia,
}

impl Media {
    /// Every media action.
    pub const ALL: [Media; 9] = [
        Media::Block,
        Media::Unblock,
        Media::Silence,
        Media::Unsilence,
        Media::BlockDtmf,
        Media::UnblockDtmf,
        Media::PlayDtmf,
        Media::PlayMedia,
        Media::StopMedia,
    ];

    /// The name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Media::Block => "block-media",
            Media::Unblock => "unblock-media",
            Media::Silence => "silence-media",
            Media::Unsilence => "unsilence-media",
            Media::BlockDtmf => "block-dtmf",
            Media::UnblockDtmf => "unblock-dtmf",
            Media::PlayDtmf => "play-dtmf",
            Media::PlayMedia => "play-media",
            Media::StopMedia => "stop-media",
        }
    }

    /// The NG command that carries it out.
    pub fn command(self) -> &'static str {
        match self {
            Media::Block => "block media",
            Media::Unblock => "unblock media",
            Media::Silence => "silence media",
            Media::Unsilence => "unsilence media",
            Media::BlockDtmf => "block DTMF",
            Media::UnblockDtmf => "unblock DTMF",
            Media::PlayDtmf => "play DTMF",
            Media::PlayMedia => "play media",
            Media::StopMedia => "stop media",
        }
    }
}

/// The digits `play-dtmf` takes (RFC 4733 events 0–15).
pub const DTMF_CODES: &str = "0123456789*#ABCD";
/// Longest `file` of `play-media`, bytes.
pub const MAX_FILE: usize = 255;

/// What a client asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Its view of the table.
    View(View),
    /// Watch one call (None: stop).
    Detail(Option<String>),
    /// End a call.
    EndCall(String),
    /// Start (or resume), pause or stop a call's recording.
    Record { id: String, what: Recording },
    /// Set a leg's direction.
    LegDirection { id: String, tag: String, direction: Direction },
    /// A media action on a leg: `code` is the digit of
    /// [`Media::PlayDtmf`] (one of [`DTMF_CODES`]), `file` the file of
    /// [`Media::PlayMedia`]; both `None` for the others.
    LegMedia { id: String, tag: String, media: Media, code: Option<String>, file: Option<String> },
    /// Set the log filter.
    LogLevel(String),
    /// Take no new calls (true) or take them again.
    Drain(bool),
}

impl Action {
    /// Whether the action changes the relay (needs write access).
    pub fn writes(&self) -> bool {
        !matches!(self, Action::View(_) | Action::Detail(_))
    }
}

/// A client message, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub reference: Option<u64>,
    pub action: Action,
}

/// Why a client message was refused (its `ref` when one could be read).
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub reference: Option<u64>,
    pub message: String,
}

/// The fields an `edit` may carry; which ones count depends on `entry`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    #[serde(rename = "type")]
    kind: String,
    #[serde(rename = "ref")]
    reference: Option<u64>,
    entry: Option<String>,
    id: Option<Option<String>>,
    tag: Option<String>,
    action: Option<String>,
    direction: Option<String>,
    media: Option<String>,
    code: Option<String>,
    file: Option<String>,
    log_level: Option<String>,
    drain: Option<bool>,
    filter: Option<String>,
    sort: Option<String>,
    desc: Option<bool>,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// Parses one client message.
pub fn parse(text: &[u8]) -> Result<Request, Refusal> {
    let refuse = |reference: Option<u64>, m: String| Refusal { reference, message: m };
    if text.len() > MAX_MESSAGE {
        return Err(refuse(None, format!("message over {MAX_MESSAGE} bytes")));
    }
    // The ref first, so that a refusal of the rest can carry it.
    // serde's texts quote the offending key or string whole (and list the
    // fields expected): clipped, so that a refusal stays short.
    let value: Value =
        serde_json::from_slice(text).map_err(|e| refuse(None, format!("not JSON: {}", clip_bytes(&e.to_string()))))?;
    let reference = value.get("ref").and_then(Value::as_u64);
    let raw: Raw = serde_json::from_value(value)
        .map_err(|e| refuse(reference, format!("bad message: {}", clip_bytes(&e.to_string()))))?;
    let reference = raw.reference.or(reference);
    let no = |m: &str| refuse(reference, m.to_string());
    if raw.kind != "edit" {
        return Err(refuse(reference, format!("unknown message type '{}' (a client sends 'edit')", clip(&raw.kind))));
    }
    let entry = raw.entry.as_deref().ok_or_else(|| no("missing 'entry'"))?;
    let id = || -> Result<String, Refusal> {
        match &raw.id {
            Some(Some(id)) if !id.is_empty() && id.len() <= 256 => Ok(id.clone()),
            _ => Err(no("missing or bad 'id'")),
        }
    };
    let action = match entry {
        "view" => {
            let mut v = View::default();
            if let Some(f) = &raw.filter {
                if f.chars().count() > MAX_FILTER {
                    return Err(no("filter too long"));
                }
                v.filter = f.clone();
            }
            if let Some(s) = &raw.sort {
                v.sort = serde_json::from_value(Value::String(s.clone()))
                    .map_err(|_| refuse(reference, format!("unknown sort '{}'", clip(s))))?;
            }
            v.desc = raw.desc.unwrap_or(false);
            v.offset = usize::try_from(raw.offset.unwrap_or(0)).map_err(|_| no("bad offset"))?;
            let limit = raw.limit.unwrap_or(DEFAULT_LIMIT as u64);
            if limit == 0 || limit > MAX_LIMIT as u64 {
                return Err(no("limit must be 1 to 500"));
            }
            v.limit = limit as usize;
            Action::View(v)
        }
        "detail" => match &raw.id {
            Some(None) | None => Action::Detail(None),
            Some(Some(_)) => Action::Detail(Some(id()?)),
        },
        "call" => match raw.action.as_deref() {
            Some("end") => Action::EndCall(id()?),
            Some("start-recording") => Action::Record { id: id()?, what: Recording::Start },
            Some("pause-recording") => Action::Record { id: id()?, what: Recording::Pause },
            Some("stop-recording") => Action::Record { id: id()?, what: Recording::Stop },
            Some(a) => return Err(refuse(reference, format!("unknown call action '{}'", clip(a)))),
            None => return Err(no("missing 'action'")),
        },
        "leg" => {
            let tag = || raw.tag.clone().filter(|t| !t.is_empty() && t.len() <= 256).ok_or_else(|| no("missing 'tag'"));
            match (raw.direction.as_deref(), raw.media.as_deref()) {
                (Some(_), Some(_)) => return Err(no("a leg edit sets one of 'direction' or 'media'")),
                (None, None) => return Err(no("missing 'direction' or 'media'")),
                (Some(d), None) => {
                    if raw.code.is_some() || raw.file.is_some() {
                        return Err(no("'code' and 'file' go with 'media'"));
                    }
                    let direction = Direction::ALL
                        .into_iter()
                        .find(|x| x.name() == d)
                        .ok_or_else(|| refuse(reference, format!("unknown direction '{}'", clip(d))))?;
                    Action::LegDirection { id: id()?, tag: tag()?, direction }
                }
                (None, Some(m)) => {
                    let media = Media::ALL
                        .into_iter()
                        .find(|x| x.name() == m)
                        .ok_or_else(|| refuse(reference, format!("unknown media action '{}'", clip(m))))?;
                    let code = match (media, raw.code.as_deref()) {
                        (Media::PlayDtmf, None) => return Err(no("play-dtmf needs a 'code'")),
                        (Media::PlayDtmf, Some(c)) => Some(dtmf_code(c).ok_or_else(|| {
                            refuse(reference, format!("bad code '{}': one of 0-9, *, #, A-D", clip(c)))
                        })?),
                        (_, Some(_)) => return Err(no("'code' goes with play-dtmf only")),
                        (_, None) => None,
                    };
                    let file = match (media, raw.file.as_deref()) {
                        (Media::PlayMedia, None) => return Err(no("play-media needs a 'file'")),
                        (Media::PlayMedia, Some(f)) if f.is_empty() || f.len() > MAX_FILE || f.contains('\0') => {
                            return Err(no("bad 'file': 1 to 255 bytes, no NUL"))
                        }
                        (Media::PlayMedia, Some(f)) => Some(f.to_string()),
                        (_, Some(_)) => return Err(no("'file' goes with play-media only")),
                        (_, None) => None,
                    };
                    Action::LegMedia { id: id()?, tag: tag()?, media, code, file }
                }
            }
        }
        "relay" => match (&raw.log_level, raw.drain) {
            (Some(l), None) if !l.is_empty() && l.len() <= 512 => Action::LogLevel(l.clone()),
            (None, Some(d)) => Action::Drain(d),
            _ => return Err(no("a relay edit sets one of 'log_level' or 'drain'")),
        },
        other => return Err(refuse(reference, format!("unknown entry '{}'", clip(other)))),
    };
    Ok(Request { reference, action })
}

/// A digit of `play-dtmf` (one of [`DTMF_CODES`]; `a`–`d` taken as
/// `A`–`D`).
fn dtmf_code(c: &str) -> Option<String> {
    let mut chars = c.chars();
    match (chars.next().map(|c| c.to_ascii_uppercase()), chars.next()) {
        (Some(d), None) if DTMF_CODES.contains(d) => Some(d.to_string()),
        _ => None,
    }
}

/// At most 64 characters of a client's text, for an error message.
fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

/// At most 200 bytes of `s`, cut at a character boundary, marked when cut.
fn clip_bytes(s: &str) -> String {
    const MAX: usize = 200;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// `error`, with the `ref` of the client message it answers.
pub fn error(reference: Option<u64>, message: &str) -> String {
    let mut v = json!({"type": "error", "message": message});
    if let Some(r) = reference {
        v["ref"] = json!(r);
    }
    v.to_string()
}

/// `inform` answering a client's `edit` that was done.
pub fn done(reference: Option<u64>, message: &str) -> String {
    let mut v = json!({"type": "inform", "message": message});
    if let Some(r) = reference {
        v["ref"] = json!(r);
    }
    v.to_string()
}

/// `update` of an entry (with its id when there are many).
pub fn update(entry: &str, id: Option<&str>, data: Value) -> String {
    let mut v = json!({"type": "update", "entry": entry, "data": data});
    if let Some(id) = id {
        v["id"] = json!(id);
    }
    v.to_string()
}

/// `remove` of an entry.
pub fn remove(entry: &str, id: &str) -> String {
    json!({"type": "remove", "entry": entry, "id": id}).to_string()
}

/// What one client was last sent of its page: each row's hash, so that a
/// sample sends only what changed.
#[derive(Default, Debug)]
pub struct Coalescer {
    sent: HashMap<String, u64>,
}

impl Coalescer {
    /// The messages that bring the client from what it was sent to `page`:
    /// `remove` for rows that left it, `create` for new ones, `update` for
    /// rows that changed; nothing for rows that did not.
    pub fn diff<'a>(&mut self, page: impl IntoIterator<Item = &'a CallRow>) -> Vec<String> {
        let mut out = Vec::new();
        let mut now: HashMap<String, u64> = HashMap::new();
        let mut changed = Vec::new();
        for row in page {
            let data = serde_json::to_value(row).unwrap_or(Value::Null);
            let text = data.to_string();
            let mut h = std::collections::hash_map::DefaultHasher::new();
            text.hash(&mut h);
            let hash = h.finish();
            match self.sent.get(&row.call_id) {
                Some(&old) if old == hash => {}
                Some(_) => {
                    changed.push(json!({"type":"update","entry":"call","id":row.call_id,"data":data}).to_string())
                }
                None => changed.push(json!({"type":"create","entry":"call","id":row.call_id,"data":data}).to_string()),
            }
            now.insert(row.call_id.clone(), hash);
        }
        let mut gone: Vec<&String> = self.sent.keys().filter(|k| !now.contains_key(*k)).collect();
        gone.sort();
        out.extend(gone.into_iter().map(|id| remove("call", id)));
        out.extend(changed);
        self.sent = now;
        out
    }

    /// Forgets what was sent (the client starts over).
    pub fn clear(&mut self) {
        self.sent.clear();
    }

    /// Rows the client holds.
    pub fn len(&self) -> usize {
        self.sent.len()
    }

    /// Whether the client holds no row.
    pub fn is_empty(&self) -> bool {
        self.sent.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, age: u64, packets: u64) -> CallRow {
        CallRow {
            call_id: id.into(),
            from_tag: format!("{id}-a"),
            age_s: age,
            packets_in: packets,
            legs: vec![LegRow { tag: format!("{id}-a"), local: "198.18.0.1:30000".into(), ..Default::default() }],
            ..Default::default()
        }
    }

    fn kinds(msgs: &[String]) -> Vec<(String, String)> {
        msgs.iter()
            .map(|m| {
                let v: Value = serde_json::from_str(m).unwrap();
                (v["type"].as_str().unwrap().to_string(), v["id"].as_str().unwrap_or("").to_string())
            })
            .collect()
    }

    #[test]
    fn a_view_filters_sorts_and_pages() {
        let rows: Vec<CallRow> = (0..2000).map(|i| row(&format!("call-{i}"), i % 7, i)).collect();
        let v = View { filter: "CALL-1999".into(), ..View::default() };
        let (page, matching) = v.page(&rows);
        assert_eq!((matching, page.len()), (1, 1));
        assert_eq!(rows[page[0]].call_id, "call-1999");
        // By packets, largest first, second page of 50.
        let v = View { sort: SortKey::Packets, desc: true, offset: 50, limit: 50, ..View::default() };
        let (page, matching) = v.page(&rows);
        assert_eq!(matching, 2000);
        let got: Vec<u64> = page.iter().map(|&i| rows[i].packets_in).collect();
        assert_eq!(got, (1900..1950).rev().collect::<Vec<u64>>());
        // Filter on an address reaches every row; a page past the end is empty.
        let v = View { filter: "198.18.0.1".into(), offset: 5000, ..View::default() };
        assert_eq!(v.page(&rows), (vec![], 2000));
        // Equal keys stay in Call-ID order.
        let v = View { sort: SortKey::Age, limit: 3, ..View::default() };
        let (page, _) = v.page(&rows);
        let ids: Vec<&str> = page.iter().map(|&i| rows[i].call_id.as_str()).collect();
        assert_eq!(ids, ["call-0", "call-1001", "call-1008"]);
    }

    #[test]
    fn only_what_changed_on_the_page_is_sent() {
        let mut c = Coalescer::default();
        let a = row("a", 1, 10);
        let b = row("b", 1, 10);
        assert_eq!(kinds(&c.diff([&a, &b])), [("create".into(), "a".into()), ("create".into(), "b".into())]);
        // Nothing changed: nothing sent.
        assert!(c.diff([&a, &b]).is_empty());
        // b changed, a left the page, d entered it.
        let b2 = row("b", 2, 60);
        let d = row("d", 1, 10);
        assert_eq!(
            kinds(&c.diff([&b2, &d])),
            [("remove".into(), "a".into()), ("update".into(), "b".into()), ("create".into(), "d".into())]
        );
        assert_eq!(c.len(), 2);
        let m: Value = serde_json::from_str(&c.diff([&row("b", 3, 61)])[1]).unwrap();
        assert_eq!((m["entry"].as_str(), m["data"]["packets_in"].as_u64()), (Some("call"), Some(61)));
        c.clear();
        assert!(c.is_empty());
    }

    #[test]
    fn edits_are_parsed_and_checked() {
        let p = |s: &str| parse(s.as_bytes());
        assert_eq!(
            p(
                r#"{"type":"edit","ref":1,"entry":"view","filter":"x","sort":"delay_p99_us","desc":true,"offset":50,"limit":25}"#
            ),
            Ok(Request {
                reference: Some(1),
                action: Action::View(View {
                    filter: "x".into(),
                    sort: SortKey::DelayP99Us,
                    desc: true,
                    offset: 50,
                    limit: 25
                })
            })
        );
        assert_eq!(
            p(r#"{"type":"edit","ref":2,"entry":"call","id":"c1","action":"end"}"#).map(|r| r.action),
            Ok(Action::EndCall("c1".into()))
        );
        for (a, what) in [("start", Recording::Start), ("pause", Recording::Pause), ("stop", Recording::Stop)] {
            let m = format!(r#"{{"type":"edit","entry":"call","id":"c1","action":"{a}-recording"}}"#);
            assert_eq!(p(&m).map(|r| r.action), Ok(Action::Record { id: "c1".into(), what }));
        }
        assert!(Action::Record { id: "c1".into(), what: Recording::Pause }.writes());
        assert_eq!(
            p(r#"{"type":"edit","entry":"leg","id":"c1","tag":"t","direction":"inactive"}"#).map(|r| r.action),
            Ok(Action::LegDirection { id: "c1".into(), tag: "t".into(), direction: Direction::Inactive })
        );
        assert_eq!(p(r#"{"type":"edit","entry":"detail","id":null}"#).map(|r| r.action), Ok(Action::Detail(None)));
        assert_eq!(p(r#"{"type":"edit","entry":"relay","drain":true}"#).map(|r| r.action), Ok(Action::Drain(true)));
        assert!(Action::Drain(true).writes() && !Action::Detail(None).writes());
        // Refusals keep the ref when there is one.
        let refused = |s: &str| p(s).unwrap_err();
        assert_eq!(refused(r#"{"type":"edit","ref":7,"entry":"nope"}"#).reference, Some(7));
        assert!(refused(r#"{"type":"edit","ref":7,"entry":"nope"}"#).message.contains("unknown entry"));
        assert_eq!(refused("not json").reference, None);
        assert!(refused(r#"{"type":"update","entry":"view"}"#).message.contains("unknown message type"));
        assert!(refused(r#"{"type":"edit","entry":"view","limit":501}"#).message.contains("limit"));
        assert!(refused(r#"{"type":"edit","entry":"view","limit":0}"#).message.contains("limit"));
        assert!(refused(r#"{"type":"edit","entry":"view","sort":"x"}"#).message.contains("unknown sort"));
        assert!(refused(r#"{"type":"edit","entry":"call","id":"c"}"#).message.contains("action"));
        assert!(refused(r#"{"type":"edit","entry":"call","action":"end"}"#).message.contains("id"));
        assert!(refused(r#"{"type":"edit","entry":"leg","id":"c","tag":"t","direction":"up"}"#)
            .message
            .contains("direction"));
        assert!(refused(r#"{"type":"edit","entry":"relay","drain":true,"log_level":"x"}"#).message.contains("one of"));
        assert!(refused(r#"{"type":"edit","entry":"view","evil":1}"#).message.contains("unknown field"));
        let long = format!(r#"{{"type":"edit","entry":"view","filter":"{}"}}"#, "x".repeat(5000));
        assert!(refused(&long).message.contains("over 4096"));
        let long = format!(r#"{{"type":"edit","entry":"view","filter":"{}"}}"#, "x".repeat(300));
        assert!(refused(&long).message.contains("filter too long"));
    }

    #[test]
    fn leg_media_actions_are_parsed_and_checked() {
        let leg = |rest: &str| {
            parse(format!(r#"{{"type":"edit","ref":5,"entry":"leg","id":"c1","tag":"t",{rest}}}"#).as_bytes())
        };
        let action = |media, code: Option<&str>, file: Option<&str>| Action::LegMedia {
            id: "c1".into(),
            tag: "t".into(),
            media,
            code: code.map(Into::into),
            file: file.map(Into::into),
        };
        for media in Media::ALL {
            let rest = match media {
                Media::PlayDtmf => format!(r#""media":"{}","code":"5""#, media.name()),
                Media::PlayMedia => format!(r#""media":"{}","file":"hold music.wav""#, media.name()),
                _ => format!(r#""media":"{}""#, media.name()),
            };
            let want = match media {
                Media::PlayDtmf => action(media, Some("5"), None),
                Media::PlayMedia => action(media, None, Some("hold music.wav")),
                _ => action(media, None, None),
            };
            assert_eq!(leg(&rest), Ok(Request { reference: Some(5), action: want.clone() }), "{rest}");
            assert!(want.writes());
        }
        for (code, want) in [("0", "0"), ("9", "9"), ("*", "*"), ("#", "#"), ("A", "A"), ("d", "D")] {
            let got = leg(&format!(r#""media":"play-dtmf","code":"{code}""#)).map(|r| r.action);
            assert_eq!(got, Ok(action(Media::PlayDtmf, Some(want), None)));
        }
        let long = "f".repeat(MAX_FILE);
        let got = leg(&format!(r#""media":"play-media","file":"{long}""#)).map(|r| r.action);
        assert_eq!(got, Ok(action(Media::PlayMedia, None, Some(&long))));
        // Refusals, with the ref.
        let refused = |rest: &str, says: &str| {
            let e = leg(rest).unwrap_err();
            assert_eq!(e.reference, Some(5), "{rest}");
            assert!(e.message.contains(says), "{rest}: {}", e.message);
        };
        refused(r#""media":"mute""#, "unknown media action 'mute'");
        refused(r#""media":"block media""#, "unknown media action");
        refused(r#""media":"play-dtmf""#, "needs a 'code'");
        for bad in ["", "E", "10", "55", "+", "٣"] {
            refused(&format!(r#""media":"play-dtmf","code":"{bad}""#), "bad code");
        }
        refused(r#""media":"play-dtmf","code":5"#, "bad message");
        refused(r#""media":"play-media""#, "needs a 'file'");
        refused(r#""media":"play-media","file":"""#, "bad 'file'");
        refused(r#""media":"play-media","file":"a\u0000b""#, "bad 'file'");
        refused(&format!(r#""media":"play-media","file":"{}""#, "f".repeat(MAX_FILE + 1)), "bad 'file'");
        refused(r#""media":"block-media","code":"5""#, "'code' goes with play-dtmf only");
        refused(r#""media":"play-dtmf","code":"5","file":"x""#, "'file' goes with play-media only");
        refused(r#""media":"block-media","direction":"inactive""#, "one of 'direction' or 'media'");
        refused(r#""direction":"inactive","code":"5""#, "go with 'media'");
        refused(r#""volume":3"#, "unknown field");
        let e = parse(br#"{"type":"edit","entry":"leg","id":"c1","tag":"t"}"#).unwrap_err();
        assert!(e.message.contains("missing 'direction' or 'media'"), "{}", e.message);
        let e = parse(br#"{"type":"edit","entry":"leg","id":"c1","media":"stop-media"}"#).unwrap_err();
        assert!(e.message.contains("missing 'tag'"), "{}", e.message);
        let e = parse(br#"{"type":"edit","entry":"leg","tag":"t","media":"stop-media"}"#).unwrap_err();
        assert!(e.message.contains("id"), "{}", e.message);
        // Every name and command is distinct.
        let names: std::collections::HashSet<_> = Media::ALL.iter().map(|m| (m.name(), m.command())).collect();
        assert_eq!(names.len(), Media::ALL.len());
    }

    #[test]
    fn quality_is_sent_in_the_pages_units() {
        let s = QualitySample::new(43, 52_000, 0, 12, 3, Some(1_763_900_000));
        let q = SsrcQuality {
            ssrc: 0x1234_5678,
            tag: "a1".into(),
            stream: Some(1),
            source: "RTCP",
            samples: 2,
            mos_samples: 1,
            average: QualitySample::new(43, 52_000, 0, 12, 3, None),
            lowest: Some(s.clone()),
            highest: Some(s),
            progression: vec![(1_763_899_995, mos(0)), (1_763_900_000, mos(43))],
            ..Default::default()
        };
        let v = serde_json::to_value(&q).unwrap();
        assert_eq!(v["ssrc"], 0x1234_5678);
        assert_eq!(
            v["average"],
            json!({"mos": 4.3, "rtt_us": 52_000, "rtt_leg_us": null, "jitter_ms": 12, "loss_pct": 3, "at": null})
        );
        assert_eq!(v["lowest"]["at"], 1_763_900_000u64);
        assert_eq!(v["progression"], json!([[1_763_899_995u64, null], [1_763_900_000u64, 4.3]]));
        assert_eq!(mos(45), Some(4.5));
    }

    #[test]
    fn directions_round_trip_through_their_blocks() {
        for d in Direction::ALL {
            let (m, h) = d.blocks();
            assert_eq!(Direction::of(m, h), d);
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse_or_are_refused(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600)) {
            let _ = parse(&bytes);
        }
    }
}
