//! The management page's view of the call table (docs/MANAGEMENT.md): a
//! row per call for its table, and everything kept of one call for its
//! detail view.

use super::control::Control;
use crate::relay::stats;
use serde_json::json;
use srtpgate_calls::interface::Interfaces;
use srtpgate_calls::media::DtmfBlock;
use srtpgate_calls::{Call, Table};
use srtpgate_codec::player::Progress;
use srtpgate_ui::{CallRow, Direction, LegRow, QualitySample, SsrcQuality};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::SystemTime;

/// One row per call, for the page's table.
pub fn rows(t: &Table) -> Vec<CallRow> {
    let now = SystemTime::now();
    let interfaces = &t.settings().interfaces;
    t.calls().map(|(id, c)| row(id, c, now, interfaces)).collect()
}

fn row(call_id: &str, c: &Call, now: SystemTime, interfaces: &Interfaces) -> CallRow {
    let mut row = CallRow {
        call_id: call_id.to_string(),
        from_tag: c.tags[0].clone().unwrap_or_default(),
        to_tag: c.tags[1].clone().unwrap_or_default(),
        age_s: now.duration_since(c.created).map_or(0, |d| d.as_secs()),
        worker: c.worker,
        answered: c.answered,
        ..Default::default()
    };
    let mut hist = stats::Histogram { buckets: vec![0; stats::DELAY_BOUNDS_US.len() + 1] };
    let mut codecs = Vec::new();
    for party in 0..2 {
        let mut leg = LegRow { tag: c.tags[party].clone().unwrap_or_default(), ..Default::default() };
        for (k, st) in c.streams.iter().flatten().enumerate() {
            let d = &st.legs[party];
            let snap = d.stats.snapshot();
            leg.packets_in += snap.packets_in;
            leg.packets_out += snap.packets_out;
            leg.dropped += snap.dropped();
            leg.lost += d.stats.rtp_lost();
            for why in stats::Drop::ALL {
                let n = snap.drops[why as usize];
                if n > 0 {
                    *row.drops.entry(why.name()).or_default() += n;
                }
            }
            for (b, n) in hist.buckets.iter_mut().zip(d.stats.histogram().buckets) {
                *b += n;
            }
            if k == 0 {
                leg.local = SocketAddr::new(d.at.addr.advertised, d.port).to_string();
                leg.interface = interfaces.get(d.at.interface).map_or(String::new(), |i| i.name.clone());
                leg.peer = match d.peer {
                    Some((Some(a), _)) => a.to_string(),
                    _ => String::new(),
                };
                leg.suite = match (&d.endpoint_key, d.srtp) {
                    (Some(k), _) => k.suite.name().to_string(),
                    (None, true) => String::new(),
                    (None, false) => "RTP".into(),
                };
                leg.direction = direction(c, party);
                leg.codec = match &st.transcoding {
                    Some((offerer, l)) => {
                        row.transcoded = true;
                        if party == *offerer {
                            l.offerer.to_string()
                        } else {
                            l.answerer.to_string()
                        }
                    }
                    None => st.offered.from_offerer.first().map(|f| f.to_string()).unwrap_or_default(),
                };
                if !leg.codec.is_empty() && !codecs.contains(&leg.codec) {
                    codecs.push(leg.codec.clone());
                }
            }
        }
        row.packets_in += leg.packets_in;
        row.packets_out += leg.packets_out;
        row.dropped += leg.dropped;
        row.lost += leg.lost;
        if c.tags[party].is_some() || party == 0 {
            row.legs.push(leg);
        }
    }
    row.codecs = codecs.join(" ↔ ");
    row.delay_p50_us = hist.quantile_or_over_us(0.5);
    row.delay_p99_us = hist.quantile_or_over_us(0.99);
    row
}

/// Everything the relay keeps about one call, for the page's detail view.
pub fn detail(t: &Table, call_id: &str) -> Option<serde_json::Value> {
    let c = t.call(call_id)?;
    let interfaces = &t.settings().interfaces;
    let model = t.settings().quality;
    let quality_on = model.is_some();
    let row = row(call_id, c, SystemTime::now(), interfaces);
    let mut hist = stats::Histogram { buckets: vec![0; stats::DELAY_BOUNDS_US.len() + 1] };
    let mut streams = Vec::new();
    for (i, st) in c.streams.iter().enumerate() {
        let Some(st) = st else { continue };
        let mut sides = Vec::new();
        for party in 0..2 {
            let d = &st.legs[party];
            let snap = d.stats.snapshot();
            for (b, n) in hist.buckets.iter_mut().zip(d.stats.histogram().buckets) {
                *b += n;
            }
            let drops: serde_json::Map<String, serde_json::Value> =
                stats::Drop::ALL.iter().map(|w| (w.name().to_string(), json!(snap.drops[*w as usize]))).collect();
            sides.push(json!({
                "tag": c.tags[party].clone().unwrap_or_default(),
                "local": SocketAddr::new(d.at.addr.advertised, d.port).to_string(),
                "interface": interfaces.get(d.at.interface).map_or("", |i| i.name.as_str()),
                "peer": match d.peer { Some((Some(a), _)) => a.to_string(), _ => String::new() },
                "protocol": d.proto,
                "suite": d.endpoint_key.as_ref().map_or(if d.srtp { "" } else { "RTP" }, |k| k.suite.name()),
                "rtcp_mux": d.mux,
                "direction": direction(c, party),
                "packets_in": snap.packets_in, "bytes_in": snap.bytes_in,
                "packets_out": snap.packets_out, "bytes_out": snap.bytes_out,
                "rtp_received": d.stats.rtp_received.load(Relaxed),
                "rtp_lost": d.stats.rtp_lost(),
                // The relay's interarrival jitter of the RTP this leg's
                // endpoint sends (only with call quality on).
                "jitter_us": quality_on.then(|| d.stats.jitter_us.load(Relaxed)),
                "drops": drops,
                "delay_avg_us": snap.delay_ns_sum.checked_div(snap.delay_count).unwrap_or(0) / 1000,
                "delay_max_us": snap.delay_ns_max / 1000,
                "last_packet_ms": snap.last_packet_ms,
            }));
        }
        streams.push(json!({"index": i + 1, "type": st.media_type, "sides": sides}));
    }
    let recording = t
        .recording_of(c)
        .map(|(on, pcap)| json!({"state": if on { "recording" } else { "paused" }, "file": pcap.to_string_lossy()}));
    let media: Vec<_> = (0..2).filter(|&p| c.tags[p].is_some() || p == 0).map(|p| media_controls(c, p)).collect();
    Some(json!({
        "call": row,
        "media": media,
        "recording": recording,
        "recordable": t.settings().recording.dir.is_some(),
        "streams": streams,
        "mos_model": model.map(|m| m.name()),
        "quality": quality(c),
        "histogram": {"bounds_us": stats::DELAY_BOUNDS_US, "counts": hist.buckets},
    }))
}

/// The call's quality per SSRC with samples: what the endpoint sending it
/// received, with the leg (and stream) that sends it as the relay saw its
/// RTP, and every kept sample's MOS for the chart.
fn quality(c: &Call) -> Vec<SsrcQuality> {
    let sender = |ssrc: u32| {
        c.streams.iter().enumerate().find_map(|(i, st)| {
            let legs = &st.as_ref()?.legs;
            let party = (0..2).find(|&p| legs[p].stats.rtp_source().is_some_and(|(s, _)| s == ssrc))?;
            Some((c.tags[party].clone().unwrap_or_default(), i + 1))
        })
    };
    let sample = |s: &srtpgate_quality::Sample, at: Option<u64>| {
        QualitySample::new(s.mos, s.rtt_us, s.rtt_leg_us, s.jitter_ms, s.loss_pct, at)
    };
    c.quality
        .book
        .iter()
        .filter(|(_, e)| !e.samples.is_empty())
        .map(|(ssrc, e)| {
            let (avg, _) = e.average();
            let (tag, stream) = sender(ssrc).map_or((String::new(), None), |(t, i)| (t, Some(i)));
            SsrcQuality {
                ssrc,
                tag,
                stream,
                source: e.source.name(),
                cumulative_loss: e.cumulative_loss,
                samples: e.kept,
                mos_samples: e.kept.saturating_sub(e.no_mos),
                average: sample(&avg, None),
                lowest: e.lowest.as_ref().map(|s| sample(s, Some(s.reported_at))),
                highest: e.highest.as_ref().map(|s| sample(s, Some(s.reported_at))),
                last: e.samples.last().map(|s| sample(s, Some(s.reported_at))),
                progression: e.samples.iter().map(|s| (s.reported_at, srtpgate_ui::mos(s.mos))).collect(),
            }
        })
        .collect()
}

/// A party's direction as the page set it (the signalling's `block media`
/// is shown apart, as a media control).
fn direction(c: &Call, party: usize) -> &'static str {
    let b = c.block[party];
    Direction::of(b & stats::MUTED != 0, b & stats::HELD != 0).name()
}

/// The media controls on what party `party` sends (set for it or for the
/// whole call: `call_wide` names the latter, which the party's own undoing
/// leaves in place) and what is played to it.
fn media_controls(c: &Call, party: usize) -> serde_json::Value {
    let ctl = &c.controls;
    let on = ctl.effective(party);
    let call_wide: Vec<&str> =
        [("blocked", ctl.call.media), ("silenced", ctl.call.silence), ("dtmf_blocked", ctl.call.dtmf.is_some())]
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect();
    let player = ctl.players[party].as_ref().map(|p| &*p.progress);
    let count = |f: fn(&Progress) -> u64| player.map_or(0, f);
    json!({
        "tag": c.tags[party].clone().unwrap_or_default(),
        "blocked": on.media,
        "silenced": on.silence,
        "dtmf_blocked": on.dtmf.is_some(),
        // `DTMF-security=zero` or `DTMF`: the event relayed instead.
        "dtmf_as": match on.dtmf {
            Some(DtmfBlock::Rewrite(e)) => srtpgate_ui::DTMF_CODES.chars().nth(e as usize).map(String::from),
            _ => None,
        },
        "call_wide": call_wide,
        "playing": player.is_some_and(|p| p.playing.load(Relaxed)),
        "played_packets": count(|p| p.packets.load(Relaxed)),
        "played_digits": count(|p| p.digits.load(Relaxed)),
    })
}

/// The workers' counters, whether each runs, and whether it carries the
/// transcoded calls.
pub fn workers(c: &Control) -> Vec<(Arc<stats::WorkerStats>, bool, bool)> {
    let w = c.plane.workers();
    let n = w.len();
    let tc = c.table.settings().transcode_workers.min(n);
    w.into_iter().enumerate().map(|(i, (st, alive))| (st, alive, i >= n - tc)).collect()
}

#[cfg(test)]
mod tests {
    use srtpgate_calls::table::Now;
    use std::time::{Instant, SystemTime};

    #[test]
    fn the_detail_shows_each_ssrcs_quality_and_each_legs_jitter() {
        use srtpgate_testkit::daemon::padded_sdp;
        use srtpgate_testkit::ng::{answer, offer};
        let (s, _) = crate::serve::tests::server(44_100, super::super::config::ServeArgs::default());
        let mut c = s.control.lock().expect("lock");
        for r in [offer("c", "a", &padded_sdp(1, 40_000, 0)), answer("c", "a", "b", &padded_sdp(1, 40_100, 0))] {
            let req = srtpgate_ng::parse_request(&r.to_bytes()).expect("parses");
            assert_eq!(c.handle(&req).get("result").and_then(srtpgate_ng::Value::as_str), Some("ok"));
        }
        {
            // a sends SSRC 0xaaaa, b 0xbbbb; of b's 100 packets the relay
            // got 95, with a jitter of 12.4 ms: what a received.
            let st = c.table.call("c").expect("call").streams[0].as_ref().expect("stream");
            st.legs[0].stats.rtp_source_seen(0xaaaa, 0);
            st.legs[1].stats.rtp_source_seen(0xbbbb, 0);
            for _ in 0..95 {
                st.legs[1].stats.rtp_seen(100);
            }
            st.legs[1].stats.set_jitter_us(12_400);
        }
        c.table.sample_quality(Now { mono: Instant::now(), wall: SystemTime::now() });
        let d = super::detail(&c.table, "c").expect("detail");
        assert_eq!(d["mos_model"], "CQ");
        let sides = &d["streams"][0]["sides"];
        assert_eq!((sides[0]["jitter_us"].as_u64(), sides[1]["jitter_us"].as_u64()), (Some(0), Some(12_400)));
        // Only a's SSRC has a sample: a sent nothing b could have missed.
        let q = d["quality"].as_array().expect("quality");
        assert_eq!(q.len(), 1, "{q:?}");
        let a = &q[0];
        assert_eq!((a["ssrc"].as_u64(), a["tag"].as_str(), a["stream"].as_u64()), (Some(0xaaaa), Some("a"), Some(1)));
        assert_eq!(
            (a["source"].as_str(), a["samples"].as_u64(), a["cumulative_loss"].as_u64()),
            (Some("relay"), Some(1), Some(5))
        );
        assert_eq!((a["average"]["loss_pct"].as_u64(), a["average"]["jitter_ms"].as_u64()), (Some(5), Some(12)));
        let mos = a["average"]["mos"].as_f64().expect("a MOS (the relay's view needs no round trip)");
        assert!((1.0..=4.5).contains(&mos), "{mos}");
        assert_eq!(a["lowest"]["mos"].as_f64(), Some(mos));
        assert!(a["lowest"]["at"].as_u64().is_some_and(|t| t > 1_700_000_000));
        assert_eq!(a["last"], a["lowest"]);
        assert_eq!(a["progression"].as_array().map(Vec::len), Some(1));
        assert_eq!(a["progression"][0][1].as_f64(), Some(mos));
    }
}
