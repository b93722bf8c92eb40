//! Call quality in the call table: the RTCP the workers copy feeds each
//! call's [`Book`]; legs whose endpoints send no reports are sampled from
//! the relay's own counters; `query` and `delete` replies carry it in
//! rtpengine's layout ([`Table::quality_report`]); a finished call's
//! averages go to the totals.

use crate::call::Call;
use crate::table::{Now, Table};
use srtpgate_ng::Value;
use srtpgate_quality::{rtcp, Book, RtcpCopy, Sample};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// How often a leg without reports is sampled from the relay's counters
/// (a phone's usual RTCP interval).
pub const RELAY_SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// Upper bounds of the finished streams' histograms: MOS ×10, jitter in
/// ms, round trip in ms (a last bucket takes the rest).
pub const MOS_BOUNDS: [u64; 11] = [10, 20, 25, 30, 35, 38, 40, 41, 42, 43, 44];
/// See [`MOS_BOUNDS`].
pub const JITTER_BOUNDS_MS: [u64; 9] = [1, 2, 5, 10, 20, 30, 50, 100, 200];
/// See [`MOS_BOUNDS`].
pub const RTT_BOUNDS_MS: [u64; 9] = [5, 10, 20, 50, 100, 150, 200, 300, 500];

/// A call's quality: its book, and the marks of the relay's own samples.
#[derive(Clone, Debug, Default)]
pub struct CallQuality {
    /// Per SSRC, what its endpoint received.
    pub book: Book,
    /// Per (stream, party): RTP expected and received from that party at
    /// the last relay sample.
    marks: Vec<[(u64, u64); 2]>,
    /// When the relay samples the call next.
    next_sample: Option<Instant>,
}

/// A histogram with fixed bounds (counts per bucket, the last one over).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Buckets {
    /// Counts per bound, then the overflow.
    pub counts: Vec<u64>,
    /// Sum of the values.
    pub sum: u64,
}

impl Buckets {
    fn add(&mut self, bounds: &[u64], v: u64) {
        if self.counts.len() != bounds.len() + 1 {
            self.counts = vec![0; bounds.len() + 1];
        }
        self.counts[bounds.partition_point(|&b| b < v)] += 1;
        self.sum += v;
    }

    /// Values counted.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// Call quality over the relay's life.
#[derive(Clone, Debug, Default)]
pub struct QualityTotals {
    /// MOS samples (every report block that gave one, as rtpengine counts
    /// them for its `mos` statistics), their sum (×10) and the sum of
    /// their squares (×100).
    pub mos_samples: u64,
    /// See `mos_samples`.
    pub mos_sum: u64,
    /// See `mos_samples`.
    pub mos2_sum: u64,
    /// RTCP packets read, and those of calls already gone.
    pub rtcp_read: u64,
    /// See `rtcp_read`.
    pub rtcp_stray: u64,
    /// Samples taken from the relay's own view.
    pub relay_samples: u64,
    /// Finished streams (SSRC entries of ended calls with a MOS): their
    /// average MOS ×10, jitter (ms), round trip (ms).
    pub finished_mos: Buckets,
    /// See `finished_mos`.
    pub finished_jitter_ms: Buckets,
    /// See `finished_mos`.
    pub finished_rtt_ms: Buckets,
}

/// What Homer gets for one RTCP packet.
#[derive(Clone, Debug)]
pub struct HomerRecord {
    /// The call's Call-ID (HEP's correlation ID).
    pub call_id: String,
    /// The endpoint that sent it.
    pub src: SocketAddr,
    /// The relay's address it arrived on.
    pub dst: SocketAddr,
    /// When it arrived, UNIX µs.
    pub unix_us: u64,
    /// rtpengine's JSON of it.
    pub json: String,
}

impl Table {
    /// An RTCP packet an endpoint sent, authenticated by its worker: its
    /// sender reports and report blocks go into the call's book, and with
    /// `homer` it comes back as Homer's record. `None` for a call that is
    /// gone (or nothing for Homer).
    pub fn rtcp_report(&mut self, r: &RtcpCopy, homer: bool) -> Option<HomerRecord> {
        let model = self.cfg.quality?;
        let Some(id) = self.by_key.get(&r.call) else {
            self.totals.quality.rtcp_stray += 1;
            return None;
        };
        let call = self.calls.get_mut(id)?;
        self.totals.quality.rtcp_read += 1;
        let unix = r.rx_ns / 1_000_000_000;
        for report in rtcp::reports(r.bytes()) {
            if let Some(si) = &report.sender {
                call.quality.book.sender_report(report.ssrc, si, r.rx_ns);
            }
            for b in &report.blocks {
                let clock = reported_clock(call, b.ssrc, r.stream as usize);
                let noted = call.quality.book.receiver_report(report.ssrc, b, clock, r.rx_ns, unix, model);
                if let Some(n) = noted.filter(|n| n.sample.mos > 0) {
                    let t = &mut self.totals.quality;
                    t.mos_samples += 1;
                    t.mos_sum += n.sample.mos as u64;
                    t.mos2_sum += (n.sample.mos as u64).pow(2);
                }
            }
        }
        if !homer {
            return None;
        }
        let d = &call.streams.get(r.stream as usize)?.as_ref()?.legs[r.party as usize & 1];
        let port = if d.mux { d.port } else { d.port.wrapping_add(1) };
        Some(HomerRecord {
            call_id: id.clone(),
            src: r.from,
            dst: SocketAddr::new(d.at.addr.local, port),
            unix_us: r.rx_ns / 1000,
            json: rtcp::homer_json(r.bytes())?,
        })
    }

    /// Samples, from the relay's own counters, every leg whose endpoint has
    /// sent RTP but no reports, once per [`RELAY_SAMPLE_EVERY`] per call:
    /// what the relay received of the stream towards that endpoint (loss
    /// by sequence number, interarrival jitter) stands for what the
    /// endpoint received.
    pub fn sample_quality(&mut self, now: Now) {
        if self.cfg.quality.is_none() {
            return;
        }
        let unix = now.unix_ms() / 1000;
        // The workers' clock (UNIX ns), for the one-second rule.
        let now_ns = now.unix_ms() * 1_000_000;
        for call in self.calls.values_mut() {
            let q = &mut call.quality;
            match q.next_sample {
                Some(t) if t > now.mono => continue,
                _ => q.next_sample = Some(now.mono + RELAY_SAMPLE_EVERY),
            }
            q.marks.resize(call.streams.len(), [(0, 0); 2]);
            for (i, s) in call.streams.iter().enumerate() {
                let Some(s) = s else { continue };
                for listener in 0..2 {
                    let talker = &s.legs[1 - listener].stats;
                    let (expected, received) = (talker.rtp_expected(), talker.rtp_packets());
                    let (e0, r0) = std::mem::replace(&mut q.marks[i][1 - listener], (expected, received));
                    let Some((ssrc, _)) = s.legs[listener].stats.rtp_source() else { continue };
                    let sent = expected.saturating_sub(e0);
                    if sent == 0 {
                        continue;
                    }
                    let lost = sent.saturating_sub(received.saturating_sub(r0));
                    let loss_pct = (lost * 100 / sent) as u32;
                    let jitter_ms = (talker.jitter_us.load(std::sync::atomic::Ordering::Relaxed) / 1000) as u32;
                    if let Some(n) = q.book.relay_sample(ssrc, loss_pct, jitter_ms, talker.rtp_lost(), now_ns, unix) {
                        self.totals.quality.relay_samples += n.kept as u64;
                    }
                }
            }
        }
    }

    /// A call's averages into the finished streams' histograms (when it
    /// ends).
    pub(crate) fn finish_quality(&mut self, call: &Call) {
        for (_, e) in call.quality.book.iter().filter(|(_, e)| e.reportable()) {
            let (avg, _) = e.average();
            if avg.mos == 0 {
                continue;
            }
            let t = &mut self.totals.quality;
            t.finished_mos.add(&MOS_BOUNDS, avg.mos as u64);
            t.finished_jitter_ms.add(&JITTER_BOUNDS_MS, avg.jitter_ms as u64);
            if avg.rtt_us > 0 {
                t.finished_rtt_ms.add(&RTT_BOUNDS_MS, avg.rtt_us / 1000);
            }
        }
    }

    /// rtpengine's `SSRC` dictionary of a call: per SSRC with samples (the
    /// endpoint sending it is what it received), `cumulative loss`,
    /// `average MOS`, `lowest MOS`, `highest MOS`, `MOS progression`.
    /// srtpgate adds `source` (`RTCP` or `relay`).
    pub(crate) fn quality_report(call: &Call) -> Value {
        let mut out = Value::dict();
        for (ssrc, e) in call.quality.book.iter().filter(|(_, e)| e.reportable()) {
            let (avg, n) = e.average();
            let mut ent = Value::dict()
                .with("cumulative loss", e.cumulative_loss)
                .with("average MOS", mos_entry(&avg, None).with("samples", n));
            if let Some(l) = &e.lowest {
                ent.insert("lowest MOS", mos_entry(l, Some(l.reported_at)));
            }
            if let Some(h) = &e.highest {
                ent.insert("highest MOS", mos_entry(h, Some(h.reported_at)));
            }
            let (interval, entries) = e.progression();
            ent.insert(
                "MOS progression",
                Value::dict()
                    .with("interval", interval)
                    .with("entries", entries.iter().map(|s| mos_entry(s, Some(s.reported_at))).collect::<Vec<_>>()),
            );
            ent.insert("source", e.source.name());
            out.insert(&ssrc.to_string(), ent);
        }
        out
    }
}

/// One sample's keys as rtpengine writes them (`reported at` where the
/// sample has a time).
fn mos_entry(s: &Sample, at: Option<u64>) -> Value {
    let mut v = Value::dict()
        .with("MOS", s.mos)
        .with("round-trip time", s.rtt_us)
        .with("round-trip time leg", s.rtt_leg_us)
        .with("jitter", s.jitter_ms)
        .with("packet loss", s.loss_pct);
    if let Some(at) = at {
        v.insert("reported at", at);
    }
    v
}

/// The RTP clock rate in which a reporter on stream `stream` measures the
/// jitter of source `ssrc`: the clock of the payload
/// type the relay last received from that source, on the codec the
/// reporter receives (the other side's when the stream transcodes); 0
/// when the source is not one the relay relays (it then has no use).
fn reported_clock(call: &Call, ssrc: u32, stream: usize) -> u32 {
    let streams = call.streams.iter().enumerate().filter_map(|(i, s)| Some((i, s.as_ref()?)));
    // The reporter's own stream first: a bundled transport reports on all.
    let mut order: Vec<_> = streams.collect();
    order.sort_by_key(|(i, _)| *i != stream);
    for (_, s) in order {
        for talker in 0..2 {
            let Some((src, pt)) = s.legs[talker].stats.rtp_source() else { continue };
            if src != ssrc {
                continue;
            }
            let listener = 1 - talker;
            if let Some((offerer, leg)) = &s.transcoding {
                let heard = if *offerer == listener { &leg.offerer } else { &leg.answerer };
                return heard.clock_rate;
            }
            return s.sdp_formats(talker).find(|f| f.pt == pt).map_or(0, |f| f.clock_rate);
        }
    }
    0
}
