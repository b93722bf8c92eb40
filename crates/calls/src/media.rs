//! rtpengine's media-control commands on a call's parties: which parties a
//! request selects, and what `block media`, `silence media`, `block DTMF`
//! and their undoing set (playing is in `play.rs`).
//!
//! Controls are kept as rtpengine keeps them, call-wide and per party
//! (what that party sends); a party's effective controls are both
//! together, written to its legs' counters ([`LegStats::block`],
//! [`LegStats::dtmf`]), which the worker reads for each packet. With two
//! parties, rtpengine's per-flow form (`from-tag` to `to-tag`) is the
//! sending party's control.
//!
//! One choice differs from current rtpengine on purpose: a `from-tag`
//! selects its party for `block media`/`block DTMF` and their undoing
//! without the `directional` flag, as rtpengine did before 2024 and as
//! Kamailio 5.6 expects (its module sends `from-tag` only when the script
//! asks for one party, and never sends `directional`).
//!
//! [`LegStats::block`]: srtpgate_stats::LegStats::block
//! [`LegStats::dtmf`]: srtpgate_stats::LegStats::dtmf

use crate::call::{other, Call};
use crate::table::{Refusal, Table};
use srtpgate_codec::dtmf::SentDigit;
use srtpgate_codec::payload::PayloadKind;
use srtpgate_ng::{Command as Ng, Request, Value};
use srtpgate_stats::{DTMF_DROP, DTMF_PASS, DTMF_REWRITE, MUTED, SILENCED};
use std::sync::atomic::Ordering::Relaxed;

/// What `block DTMF` does to a party's RFC 4733 events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtmfBlock {
    /// Dropped (`DTMF-security=drop`, the default).
    Drop,
    /// Relayed as this event instead (`zero`: 0; `DTMF`: the `digit`).
    Rewrite(u8),
}

/// The controls on what one party (or every party) sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Blocks {
    /// `block media`: its RTP is not relayed (its DTMF is).
    pub media: bool,
    /// `silence media`: its audio is relayed as silence.
    pub silence: bool,
    /// `block DTMF`.
    pub dtmf: Option<DtmfBlock>,
}

impl Blocks {
    fn or(self, o: Blocks) -> Blocks {
        Blocks { media: self.media || o.media, silence: self.silence || o.silence, dtmf: self.dtmf.or(o.dtmf) }
    }
}

/// A call's media controls and what is played to its parties.
#[derive(Default)]
pub struct Controls {
    /// Set call-wide (no party selected, or `all`).
    pub call: Blocks,
    /// Set per party.
    pub party: [Blocks; 2],
    /// What is played to each party.
    pub players: [Option<crate::play::Playing>; 2],
}

impl Controls {
    /// The controls on what `party` sends.
    pub fn effective(&self, party: usize) -> Blocks {
        self.call.or(self.party[party])
    }
}

impl Call {
    /// The bits of party `party`'s legs' [`LegStats::block`] and
    /// [`LegStats::dtmf`]: the management page's hold and mute, and the
    /// signalling's controls.
    ///
    /// [`LegStats::block`]: srtpgate_stats::LegStats::block
    /// [`LegStats::dtmf`]: srtpgate_stats::LegStats::dtmf
    pub fn leg_bits(&self, party: usize) -> (u8, u8) {
        let b = self.controls.effective(party);
        let block = self.block[party] | if b.media { MUTED } else { 0 } | if b.silence { SILENCED } else { 0 };
        let dtmf = match b.dtmf {
            None => DTMF_PASS,
            Some(DtmfBlock::Drop) => DTMF_DROP,
            Some(DtmfBlock::Rewrite(e)) => DTMF_REWRITE | (e & 0x0f),
        };
        (block, dtmf)
    }

    /// Writes every leg's bits (after a control changed).
    pub fn apply_controls(&self) {
        for s in self.streams.iter().flatten() {
            for (p, leg) in s.legs.iter().enumerate() {
                let (block, dtmf) = self.leg_bits(p);
                leg.stats.block.store(block, Relaxed);
                leg.stats.dtmf.store(dtmf, Relaxed);
            }
        }
    }
}

/// The parties a media-control request names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Selection {
    /// The whole call: no party named, or `all`.
    Call,
    /// These parties.
    Parties(Vec<usize>),
}

/// The parties `req` selects in `call`, in rtpengine's order: `all`, then
/// `label`, `address` (the address in a party's SDP), `from-tag`; none of
/// these: the whole call. A `to-tag` or `to-label` (a flow from the
/// selected party) must name the other party.
pub(crate) fn select(call: &Call, req: &Request) -> Result<Selection, Refusal> {
    if req.flags.all {
        return Ok(Selection::Call);
    }
    let party = if let Some(l) = &req.label {
        Some(call.labels.iter().position(|x| x.as_deref() == Some(l)).ok_or("No monologue matching the given label")?)
    } else if let Some(a) = &req.media.address {
        let ip: std::net::IpAddr = a.parse().map_err(|_| "Failed to parse network address")?;
        Some(party_at(call, ip).ok_or("Failed to match address to any tag")?)
    } else if let Some(t) = &req.from_tag {
        Some(call.party_of(t).ok_or("From-tag given, but no such tag exists")?)
    } else {
        None
    };
    let Some(p) = party else { return Ok(Selection::Call) };
    if matches!(req.command, Ng::BlockMedia | Ng::UnblockMedia | Ng::SilenceMedia | Ng::UnsilenceMedia) {
        if let Some(t) = &req.to_tag {
            if call.party_of(t) != Some(other(p)) {
                return Err("Media flow not found (to-tag not found)".into());
            }
        }
        if let Some(l) = &req.set_label {
            if call.labels[other(p)].as_deref() != Some(l.as_str()) {
                return Err("Media flow not found (to-label not found)".into());
            }
        }
    }
    Ok(Selection::Parties(vec![p]))
}

/// The party whose SDP named address `ip` for its first stream.
fn party_at(call: &Call, ip: std::net::IpAddr) -> Option<usize> {
    let s = call.streams.iter().flatten().next()?;
    (0..2).find(|&p| s.legs[p].peer.and_then(|(rtp, _)| rtp).is_some_and(|a| a.ip() == ip))
}

impl Table {
    /// `block media`, `unblock media`, `silence media`, `unsilence media`,
    /// `block DTMF`, `unblock DTMF`: `{"result":"ok"}`.
    pub(crate) fn media_control(&mut self, req: &Request) -> Result<Value, Refusal> {
        let call_id = req.call_id.as_deref().ok_or("No call-id in message")?;
        let call = self.calls.get_mut(call_id).ok_or("Unknown call-ID")?;
        let sel = select(call, req)?;
        let dtmf_mode = match req.command {
            Ng::BlockDtmf => Some(dtmf_mode(req, &mut self.notes)?),
            _ => None,
        };
        let on = matches!(req.command, Ng::BlockMedia | Ng::SilenceMedia | Ng::BlockDtmf);
        let set = |b: &mut Blocks| match req.command {
            Ng::BlockMedia | Ng::UnblockMedia => b.media = on,
            Ng::SilenceMedia | Ng::UnsilenceMedia => b.silence = on,
            _ => b.dtmf = dtmf_mode.filter(|_| on).flatten(),
        };
        let c = &mut call.controls;
        match &sel {
            Selection::Call => {
                set(&mut c.call);
                // Undone call-wide with `all`: every party's too, as rtpengine.
                if !on && req.flags.all {
                    c.party.iter_mut().for_each(set);
                }
            }
            Selection::Parties(ps) => ps.iter().for_each(|&p| set(&mut c.party[p])),
        }
        call.apply_controls();
        if req.command == Ng::SilenceMedia {
            let parties = match sel {
                Selection::Call => vec![0, 1],
                Selection::Parties(ps) => ps,
            };
            self.notes.extend(unsilenceable(call, &parties));
        }
        tracing::info!(call_id, command = req.command.name(), "media control");
        Ok(srtpgate_ng::ok())
    }
}

/// `block DTMF`'s mode (`None`: `off`).
fn dtmf_mode(req: &Request, notes: &mut Vec<String>) -> Result<Option<DtmfBlock>, Refusal> {
    let Some(mode) = req.media.dtmf_security.as_deref() else { return Ok(Some(DtmfBlock::Drop)) };
    Ok(match mode.to_ascii_lowercase().as_str() {
        "drop" => Some(DtmfBlock::Drop),
        "off" => None,
        "zero" => Some(DtmfBlock::Rewrite(0)),
        "dtmf" => {
            let digit = match req.media.code.as_deref() {
                None => 0,
                Some(c) => crate::play::event_code(c).ok_or("Out of range 'code' specified")?,
            };
            Some(DtmfBlock::Rewrite(digit))
        }
        m @ ("silence" | "tone" | "random") => {
            notes.push(format!(
                "DTMF-security={m} taken as drop: srtpgate drops the events and does not replace them with audio"
            ));
            Some(DtmfBlock::Drop)
        }
        m => {
            notes.push(format!("DTMF-security={} ignored: not a mode srtpgate knows; events dropped", clip(m)));
            Some(DtmfBlock::Drop)
        }
    })
}

/// Warnings for the audio codecs of these parties that `silence media`
/// passes unchanged.
fn unsilenceable(call: &Call, parties: &[usize]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in call.streams.iter().flatten().filter(|s| s.media_type == "audio") {
        for &p in parties {
            for f in s.sdp_formats(p) {
                let k = PayloadKind::of(&f.name);
                if k == PayloadKind::Other && !names.contains(&f.name) {
                    names.push(f.name.clone());
                }
            }
        }
    }
    if names.is_empty() {
        return Vec::new();
    }
    vec![format!("silence media: {} passes unchanged (srtpgate silences PCMU, PCMA, G722 and opus)", names.join(", "))]
}

fn clip(s: &str) -> String {
    s.chars().take(32).collect()
}

impl Table {
    /// The DTMF log's record of `d` at `unix_s`: rtpengine's
    /// `dtmf-log-dest` JSON, its fields in rtpengine's order (strings
    /// escaped, which rtpengine does not do); `None` for a call that is gone.
    pub fn dtmf_record(&self, d: &SentDigit, unix_s: u64) -> Option<String> {
        let id = self.by_key.get(&d.call)?;
        let call = self.calls.get(id)?;
        let clock = call
            .streams
            .get(d.stream)
            .and_then(Option::as_ref)
            .and_then(|s| s.sdp_formats(d.party).find(|f| f.pt == d.pt).map(|f| f.clock_rate))
            .filter(|&c| c > 0)
            .unwrap_or(8000);
        let s = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into());
        let tags: Vec<String> = call.tags.iter().flatten().map(|t| s(t)).collect();
        Some(format!(
            "{{\"callid\":{},\"source_tag\":{},\"source_label\":{},\"tags\":[{}],\"type\":\"DTMF\",\"timestamp\":{unix_s},\
             \"source_ip\":{},\"event\":{},\"duration\":{},\"volume\":{}}}",
            s(id),
            s(call.tags[d.party].as_deref().unwrap_or("")),
            s(call.labels[d.party].as_deref().unwrap_or("")),
            tags.join(","),
            s(&d.from.ip().to_string()),
            d.event,
            d.duration as u64 * 1000 / clock as u64,
            d.volume,
        ))
    }
}
