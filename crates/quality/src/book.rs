//! A call's quality book: per SSRC, what the endpoint sending that SSRC
//! received, sample by sample, as rtpengine keeps it (`ssrc.c`).
//!
//! - A **sender report** from SSRC *s* is remembered (its NTP middle bits
//!   and when the relay saw it) for the round trips of the reports that
//!   answer it.
//! - A **report block** from endpoint *A* about source *B* becomes one
//!   [`Sample`] of *A*'s entry: the loss and jitter *A* reports, the round
//!   trip of the relay's leg towards *A* (the block's LSR/DLSR against
//!   *B*'s SR the relay relayed to *A*), and the end-to-end round trip:
//!   that plus the last round trip measured towards *B*.
//! - An endpoint that sends no reports gets samples from the relay's own
//!   view instead ([`Book::relay_sample`]): what the relay received of the
//!   stream towards it (loss by sequence number, interarrival jitter),
//!   with no round trip.
//!
//! rtpengine's rules, kept where a module reads the result: a sample less
//! than a second after the last one of the same entry is not kept; a MOS
//! needs a round trip under [`Model::Cq`]; samples without a MOS are kept
//! but left out of the averages.

use crate::mos::{self, Model};
use crate::rtcp::{ReportBlock, SenderInfo};
use std::collections::BTreeMap;

/// Most SSRCs one call keeps: a call has a few (audio and video each
/// way); a sender spraying SSRCs cannot grow it, and a `query` reply with
/// all of them stays well inside a datagram.
pub const MAX_SSRCS: usize = 8;
/// Samples kept per SSRC before every second one is let go (the averages
/// keep every sample): at rtpengine's 1 s minimum, over 8 minutes;
/// at a phone's usual 5 s, over 40.
pub const MAX_SAMPLES: usize = 512;
/// Sender reports remembered per SSRC for round trips (rtpengine keeps 10).
const SR_KEPT: usize = 10;

/// One quality sample: what an endpoint received over one report interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    /// MOS ×10 (0: none).
    pub mos: u32,
    /// End-to-end round trip in µs (both legs; 0: not known).
    pub rtt_us: u64,
    /// Round trip of the relay's leg towards the endpoint in µs (0: not known).
    pub rtt_leg_us: u64,
    /// Interarrival jitter in ms.
    pub jitter_ms: u32,
    /// Lost in the interval, percent.
    pub loss_pct: u32,
    /// When it was reported, UNIX s.
    pub reported_at: u64,
}

/// Where an entry's samples come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Source {
    /// The endpoint's RTCP report blocks.
    #[default]
    Rtcp,
    /// The relay's own view of the stream towards an endpoint that sends
    /// no reports.
    Relay,
}

impl Source {
    /// The name in replies.
    pub fn name(self) -> &'static str {
        match self {
            Source::Rtcp => "RTCP",
            Source::Relay => "relay",
        }
    }
}

/// What the endpoint sending one SSRC received.
#[derive(Clone, Debug, Default)]
pub struct SsrcQuality {
    /// Where the samples come from.
    pub source: Source,
    /// Cumulative packets lost, from the last report.
    pub cumulative_loss: u64,
    /// The samples in order (thinned past [`MAX_SAMPLES`]).
    pub samples: Vec<Sample>,
    /// Samples kept in all (also those thinned out).
    pub kept: u64,
    /// Kept samples without a MOS.
    pub no_mos: u64,
    /// Sums over the kept samples with a MOS.
    sum_mos: u64,
    sum_rtt: u64,
    sum_rtt_leg: u64,
    sum_jitter: u64,
    sum_loss: u64,
    /// The sample with the lowest MOS (a MOS of 0 never is).
    pub lowest: Option<Sample>,
    /// The sample with the highest MOS (rtpengine takes the first sample
    /// even without a MOS).
    pub highest: Option<Sample>,
    /// When the last sample was kept (monotonic ns).
    last_ns: Option<u64>,
    /// Round trip of the leg towards the endpoint that reports on this
    /// SSRC, as last measured (µs; 0 none).
    last_rtt_us: u64,
    /// This SSRC's sender reports: NTP middle bits, seen at (monotonic ns).
    srs: [(u32, u64); SR_KEPT],
    sr_next: usize,
}

impl SsrcQuality {
    /// The averages over the samples with a MOS, and their count (at least
    /// 1, as rtpengine divides).
    pub fn average(&self) -> (Sample, u64) {
        let n = self.kept.saturating_sub(self.no_mos).max(1);
        let s = Sample {
            mos: (self.sum_mos / n) as u32,
            rtt_us: self.sum_rtt / n,
            rtt_leg_us: self.sum_rtt_leg / n,
            jitter_ms: (self.sum_jitter / n) as u32,
            loss_pct: (self.sum_loss / n) as u32,
            reported_at: 0,
        };
        (s, n)
    }

    /// rtpengine reports an SSRC only once it has samples with a lowest
    /// and a highest MOS.
    pub fn reportable(&self) -> bool {
        !self.samples.is_empty() && self.lowest.is_some() && self.highest.is_some()
    }

    /// About ten samples across the call, as rtpengine's `MOS progression`:
    /// the interval in s, then the first sample at or after each step.
    pub fn progression(&self) -> (u64, Vec<Sample>) {
        let (Some(first), Some(last)) = (self.samples.first(), self.samples.last()) else { return (0, Vec::new()) };
        let interval = last.reported_at.saturating_sub(first.reported_at) / 10;
        let mut next = first.reported_at;
        let mut out = Vec::new();
        for s in &self.samples {
            if s.reported_at < next {
                continue;
            }
            next += interval;
            out.push(*s);
        }
        (interval, out)
    }

    /// Keeps a sample unless the last one was less than a second before.
    fn keep(&mut self, s: Sample, now_ns: u64) -> bool {
        if self.last_ns.is_some_and(|t| now_ns.saturating_sub(t) < 1_000_000_000) {
            return false;
        }
        self.last_ns = Some(now_ns);
        if self.samples.len() >= MAX_SAMPLES {
            // Every second one goes: the progression stays spread over the
            // whole call.
            let mut i = 0;
            self.samples.retain(|_| {
                i += 1;
                i % 2 == 1
            });
        }
        self.samples.push(s);
        self.kept += 1;
        if s.mos > 0 && self.lowest.is_none_or(|l| s.mos < l.mos) {
            self.lowest = Some(s);
        }
        if self.highest.is_none_or(|h| s.mos > h.mos) {
            self.highest = Some(s);
        }
        if s.mos == 0 {
            self.no_mos += 1;
        } else {
            self.sum_mos += s.mos as u64;
            self.sum_rtt += s.rtt_us;
            self.sum_rtt_leg += s.rtt_leg_us;
            self.sum_jitter += s.jitter_ms as u64;
            self.sum_loss += s.loss_pct as u64;
        }
        true
    }
}

/// The quality of one call, per SSRC.
#[derive(Clone, Debug, Default)]
pub struct Book {
    ssrcs: BTreeMap<u32, SsrcQuality>,
}

/// What one report block made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Noted {
    /// The sample (also when it was not kept).
    pub sample: Sample,
    /// Kept (not within a second of the last one).
    pub kept: bool,
}

impl Book {
    /// The entry of `ssrc`, made when there is room.
    fn entry(&mut self, ssrc: u32) -> Option<&mut SsrcQuality> {
        if !self.ssrcs.contains_key(&ssrc) && self.ssrcs.len() >= MAX_SSRCS {
            return None;
        }
        Some(self.ssrcs.entry(ssrc).or_default())
    }

    /// A sender report of `ssrc`, seen at `now_ns`.
    pub fn sender_report(&mut self, ssrc: u32, sr: &SenderInfo, now_ns: u64) {
        if let Some(e) = self.entry(ssrc) {
            e.srs[e.sr_next % SR_KEPT] = (sr.ntp_middle(), now_ns);
            e.sr_next = e.sr_next.wrapping_add(1);
        }
    }

    /// A report block `b` from endpoint `from`, seen at `now_ns` (`unix`
    /// s). `clock` is the RTP clock rate of the source reported on (its
    /// jitter is in it); a block whose clock is not known is not used, as
    /// rtpengine discards it.
    pub fn receiver_report(
        &mut self,
        from: u32,
        b: &ReportBlock,
        clock: u32,
        now_ns: u64,
        unix: u64,
        model: Model,
    ) -> Option<Noted> {
        let rtt_leg = self.leg_rtt(b, now_ns);
        if clock == 0 {
            return None;
        }
        let jitter_ms = (b.jitter as u64 * 1000 / clock as u64).min(u32::MAX as u64) as u32;
        let reporter = self.entry(from)?;
        if reporter.source == Source::Relay {
            // The endpoint reports after all: its reports replace the
            // relay's view.
            *reporter = SsrcQuality { srs: reporter.srs, sr_next: reporter.sr_next, ..SsrcQuality::default() };
        }
        let rtt = if reporter.last_rtt_us > 0 { rtt_leg + reporter.last_rtt_us } else { 0 };
        let loss_pct = b.fraction_lost as u32 * 100 / 256;
        let sample = Sample {
            mos: mos::mos(model, rtt, jitter_ms, loss_pct),
            rtt_us: rtt,
            rtt_leg_us: rtt_leg,
            jitter_ms,
            loss_pct,
            reported_at: unix,
        };
        reporter.cumulative_loss = b.cumulative_lost as u64;
        let kept = reporter.keep(sample, now_ns);
        Some(Noted { sample, kept })
    }

    /// The round trip of the leg towards the endpoint that sent `b` (µs; 0
    /// when it cannot be told): now, less when the SR it answers passed the
    /// relay, less the delay the endpoint says it held it. Kept on the
    /// source's entry, where the source's own reports find it as the other
    /// leg's.
    fn leg_rtt(&mut self, b: &ReportBlock, now_ns: u64) -> u64 {
        if b.lsr == 0 || b.dlsr == 0 {
            return 0;
        }
        let Some(source) = self.ssrcs.get_mut(&b.ssrc) else { return 0 };
        let n = source.sr_next.min(SR_KEPT);
        let found = (0..n)
            .map(|k| source.srs[(source.sr_next + SR_KEPT - 1 - k) % SR_KEPT])
            .find(|&(middle, _)| middle == b.lsr);
        let Some((_, seen_ns)) = found else { return 0 };
        let held_us = b.dlsr as i128 * 1_000_000 / 65_536;
        let rtt = (now_ns as i128 - seen_ns as i128) / 1000 - held_us;
        if rtt <= 0 || rtt > 10_000_000 {
            return 0;
        }
        source.last_rtt_us = rtt as u64;
        rtt as u64
    }

    /// A sample from the relay's own view for the endpoint sending `ssrc`
    /// when it sends no reports: `loss_pct` and `jitter_ms` of the stream
    /// the relay sends it, as the relay received that stream, and
    /// `cumulative` packets lost of it. No round trip, so the MOS is the
    /// listening one whatever the model. Not used once the endpoint
    /// reported.
    pub fn relay_sample(
        &mut self,
        ssrc: u32,
        loss_pct: u32,
        jitter_ms: u32,
        cumulative: u64,
        now_ns: u64,
        unix: u64,
    ) -> Option<Noted> {
        let e = self.entry(ssrc)?;
        if e.source == Source::Rtcp && e.kept > 0 {
            return None;
        }
        e.source = Source::Relay;
        let sample = Sample {
            mos: mos::mos(Model::Lq, 0, jitter_ms, loss_pct),
            rtt_us: 0,
            rtt_leg_us: 0,
            jitter_ms,
            loss_pct,
            reported_at: unix,
        };
        e.cumulative_loss = cumulative;
        let kept = e.keep(sample, now_ns);
        Some(Noted { sample, kept })
    }

    /// The entry of `ssrc`.
    pub fn get(&self, ssrc: u32) -> Option<&SsrcQuality> {
        self.ssrcs.get(&ssrc)
    }

    /// Every entry, by SSRC.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &SsrcQuality)> {
        self.ssrcs.iter().map(|(s, q)| (*s, q))
    }

    /// The endpoint sending `ssrc` has reported (or was sampled) at all.
    pub fn has_samples(&self, ssrc: u32) -> bool {
        self.ssrcs.get(&ssrc).is_some_and(|e| e.kept > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: u32 = 0xaaaa;
    const B: u32 = 0xbbbb;
    const S: u64 = 1_000_000_000;

    fn sr(ntp_msw: u32) -> SenderInfo {
        SenderInfo { ntp_msw, ntp_lsw: 0, rtp_ts: 0, packets: 0, octets: 0 }
    }

    /// A block about `about`; `dlsr` in 1/65536 s (1024 = 15.625 ms).
    fn block(about: u32, lsr: u32, dlsr: u32, fraction: u8, jitter: u32) -> ReportBlock {
        ReportBlock { ssrc: about, fraction_lost: fraction, cumulative_lost: 7, highest_seq: 0, jitter, lsr, dlsr }
    }

    #[test]
    fn round_trips_of_both_legs_add_up_and_give_a_mos() {
        let mut q = Book::default();
        // B's SR passes at 10 s; A answers it 45.625 ms later having held
        // it 15.625 ms: A's leg is 30 ms.
        q.sender_report(B, &sr(100), 10 * S);
        let n =
            q.receiver_report(A, &block(B, 100 << 16, 1024, 0, 0), 8000, 10 * S + 45_625_000, 1, Model::Cq).unwrap();
        assert_eq!((n.sample.rtt_leg_us, n.sample.rtt_us, n.sample.mos), (30_000, 0, 0), "no MOS before B's leg");
        // A's SR at 11 s; B answers 27.8125 ms later having held it 7.8125
        // ms: B's leg is 20 ms, end to end 50 ms.
        q.sender_report(A, &sr(200), 11 * S);
        let n =
            q.receiver_report(B, &block(A, 200 << 16, 512, 0, 80), 8000, 11 * S + 27_812_500, 2, Model::Cq).unwrap();
        assert_eq!((n.sample.rtt_leg_us, n.sample.rtt_us, n.sample.jitter_ms), (20_000, 50_000, 10));
        assert_eq!(n.sample.mos, mos::mos(Model::Cq, 50_000, 10, 0));
        // A's next block: 30 + 20 ms.
        q.sender_report(B, &sr(300), 12 * S);
        let n =
            q.receiver_report(A, &block(B, 300 << 16, 1024, 64, 0), 8000, 12 * S + 45_625_000, 3, Model::Cq).unwrap();
        assert_eq!((n.sample.rtt_us, n.sample.loss_pct), (50_000, 25));
        let a = q.get(A).unwrap();
        assert!(a.reportable());
        assert_eq!((a.kept, a.no_mos, a.cumulative_loss), (2, 1, 7));
        let (avg, samples) = a.average();
        assert_eq!((avg.mos, samples), (n.sample.mos, 1));
        assert_eq!(a.lowest.unwrap().mos, n.sample.mos);
        // rtpengine's highest is the first sample, MOS 0, until a higher.
        assert_eq!(a.highest.unwrap().mos, n.sample.mos);
    }

    #[test]
    fn a_report_within_a_second_is_not_kept_and_bad_round_trips_are_none() {
        let mut q = Book::default();
        q.sender_report(B, &sr(1), 5 * S);
        assert!(
            q.receiver_report(A, &block(B, 1 << 16, 64, 0, 0), 8000, 5 * S + 2_000_000, 1, Model::Lq).unwrap().kept
        );
        let n = q.receiver_report(A, &block(B, 1 << 16, 64, 0, 0), 8000, 5 * S + 900_000_000, 1, Model::Lq).unwrap();
        assert!(!n.kept);
        // An LSR the relay never saw, no DLSR, or a DLSR longer than the
        // wait: no round trip.
        assert_eq!(
            q.receiver_report(A, &block(B, 9 << 16, 64, 0, 0), 8000, 7 * S, 1, Model::Lq).unwrap().sample.rtt_leg_us,
            0
        );
        assert_eq!(
            q.receiver_report(A, &block(B, 1 << 16, 0, 0, 0), 8000, 9 * S, 1, Model::Lq).unwrap().sample.rtt_leg_us,
            0
        );
        q.sender_report(B, &sr(2), 20 * S);
        assert_eq!(
            q.receiver_report(A, &block(B, 2 << 16, 32_768, 0, 0), 8000, 20 * S + 10, 1, Model::Lq)
                .unwrap()
                .sample
                .rtt_leg_us,
            0
        );
        // Unknown clock: discarded.
        assert_eq!(q.receiver_report(A, &block(B, 0, 0, 0, 0), 0, 30 * S, 1, Model::Lq), None);
    }

    #[test]
    fn the_relay_view_stands_in_until_the_endpoint_reports() {
        let mut q = Book::default();
        assert!(q.relay_sample(A, 5, 30, 12, S, 1).unwrap().kept);
        let a = q.get(A).unwrap();
        assert_eq!((a.source, a.cumulative_loss, a.lowest.unwrap().mos), (Source::Relay, 12, 39));
        q.receiver_report(A, &block(B, 0, 0, 0, 0), 8000, 3 * S, 2, Model::Lq).unwrap();
        let a = q.get(A).unwrap();
        assert_eq!((a.source, a.kept), (Source::Rtcp, 1));
        assert_eq!(q.relay_sample(A, 0, 0, 0, 5 * S, 3), None);
    }

    #[test]
    fn progression_and_thinning() {
        let mut e = SsrcQuality::default();
        for k in 0..(MAX_SAMPLES as u64 + 10) {
            let s = Sample { mos: 40, reported_at: 1000 + k * 5, ..Sample::default() };
            assert!(e.keep(s, k * 5 * S));
        }
        assert!(e.samples.len() <= MAX_SAMPLES);
        assert_eq!(e.kept, MAX_SAMPLES as u64 + 10);
        assert_eq!(e.samples[0].reported_at, 1000);
        let (interval, entries) = e.progression();
        let span = e.samples.last().unwrap().reported_at - 1000;
        assert_eq!(interval, span / 10);
        assert!((10..=11).contains(&entries.len()), "{}", entries.len());
        assert!(entries.windows(2).all(|w| w[1].reported_at - w[0].reported_at >= interval));
    }

    #[test]
    fn a_call_holds_a_bounded_number_of_ssrcs() {
        let mut q = Book::default();
        for s in 0..100u32 {
            q.sender_report(s, &sr(s), S);
        }
        assert_eq!(q.iter().count(), MAX_SSRCS);
    }
}
