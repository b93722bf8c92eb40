//! What a load generator's receiver records per packet: delay (one clock,
//! one host), loss, duplicates, reordering and interarrival jitter
//! (RFC 3550 §6.4.1, A.8).

/// Delays in µs, 1 µs resolution up to [`Delays::MAX_US`], then one overflow
/// bucket (exact quantiles where they matter, fixed memory).
#[derive(Clone)]
pub struct Delays {
    counts: Vec<u32>,
    over: u64,
    n: u64,
    sum_us: u64,
    max_us: u64,
}

impl Default for Delays {
    fn default() -> Self {
        Delays::new()
    }
}

impl Delays {
    /// Largest delay kept exactly (1 s).
    pub const MAX_US: usize = 1_000_000;

    /// Empty.
    pub fn new() -> Delays {
        Delays { counts: vec![0; Self::MAX_US + 1], over: 0, n: 0, sum_us: 0, max_us: 0 }
    }

    /// Records one delay.
    pub fn record(&mut self, us: u64) {
        match self.counts.get_mut(us as usize) {
            Some(c) => *c = c.saturating_add(1),
            None => self.over += 1,
        }
        self.n += 1;
        self.sum_us += us;
        self.max_us = self.max_us.max(us);
    }

    /// Adds another set.
    pub fn merge(&mut self, o: &Delays) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a = a.saturating_add(*b);
        }
        self.over += o.over;
        self.n += o.n;
        self.sum_us += o.sum_us;
        self.max_us = self.max_us.max(o.max_us);
    }

    /// Packets recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Mean delay in µs.
    pub fn mean_us(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum_us as f64 / self.n as f64
        }
    }

    /// Largest delay in µs.
    pub fn max_us(&self) -> u64 {
        self.max_us
    }

    /// The delay at quantile `q` (0..=1) in µs: the smallest d with at least
    /// q·n delays ≤ d. Beyond 1 s it returns the maximum.
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q * self.n as f64).ceil() as u64).clamp(1, self.n);
        let mut seen = 0u64;
        for (us, &c) in self.counts.iter().enumerate() {
            seen += c as u64;
            if seen >= rank {
                return Some(us as u64);
            }
        }
        Some(self.max_us)
    }

    /// Counts per bucket of `width_us` up to `max_us` (for histograms/plots).
    pub fn histogram(&self, width_us: usize, max_us: usize) -> Vec<u64> {
        let width = width_us.max(1);
        let mut h = vec![0u64; max_us.min(Self::MAX_US) / width + 1];
        for (us, &c) in self.counts.iter().enumerate().take(max_us.min(Self::MAX_US) + 1) {
            h[us / width] += c as u64;
        }
        h
    }
}

/// The delays of packets by the second (of the measurement window) in which
/// they were sent: how the relay's delay moves over a run (a surge of load,
/// and how fast it recovers). 100 µs buckets up to 1 s.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    seconds: Vec<Vec<u32>>,
}

impl Timeline {
    /// Width of a bucket, µs.
    const WIDTH_US: u64 = 100;
    /// Buckets per second (the last one: 1 s or more).
    const BUCKETS: usize = 10_001;
    /// Most seconds kept (a longer run's tail is not kept).
    const MAX_SECONDS: usize = 3_600;

    /// Records a packet sent `second` s into the window, `us` late.
    pub fn record(&mut self, second: usize, us: u64) {
        if second >= Self::MAX_SECONDS {
            return;
        }
        if self.seconds.len() <= second {
            self.seconds.resize_with(second + 1, Vec::new);
        }
        let h = &mut self.seconds[second];
        if h.is_empty() {
            h.resize(Self::BUCKETS, 0);
        }
        let b = ((us / Self::WIDTH_US) as usize).min(Self::BUCKETS - 1);
        h[b] = h[b].saturating_add(1);
    }

    /// Adds another receiver's.
    pub fn merge(&mut self, o: &Timeline) {
        if self.seconds.len() < o.seconds.len() {
            self.seconds.resize_with(o.seconds.len(), Vec::new);
        }
        for (a, b) in self.seconds.iter_mut().zip(&o.seconds) {
            if b.is_empty() {
                continue;
            }
            if a.is_empty() {
                a.resize(Self::BUCKETS, 0);
            }
            a.iter_mut().zip(b).for_each(|(x, y)| *x = x.saturating_add(*y));
        }
    }

    /// Per second: packets received, and the p50, p99 and largest delay
    /// (µs, to the bucket's upper edge).
    pub fn rows(&self) -> Vec<serde_json::Value> {
        self.seconds
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let n: u64 = h.iter().map(|&c| c as u64).sum();
                let q = |q: f64| {
                    let rank = ((q * n as f64).ceil() as u64).clamp(1, n.max(1));
                    let mut seen = 0u64;
                    h.iter().position(|&c| {
                        seen += c as u64;
                        seen >= rank
                    })
                };
                let edge = |b: Option<usize>| b.filter(|_| n > 0).map(|b| (b as u64 + 1) * Self::WIDTH_US);
                let max = h.iter().rposition(|&c| c > 0);
                serde_json::json!({
                    "second": i, "received": n, "p50_us": edge(q(0.5)), "p99_us": edge(q(0.99)), "max_us": edge(max),
                })
            })
            .collect()
    }
}

/// Receive-side state of one RTP stream.
#[derive(Clone, Debug, Default)]
pub struct StreamRx {
    /// Packets received (authenticated, not duplicates).
    pub received: u64,
    /// Packets that arrived a second time.
    pub duplicates: u64,
    /// Packets older than one already received.
    pub reordered: u64,
    highest: Option<u64>,
    /// Extended sequence numbers seen recently (bit i: highest − i).
    window: u128,
    /// RFC 3550 interarrival jitter, in RTP timestamp units (×16 scaled as in A.8).
    jitter16: u64,
    last_transit: Option<i64>,
}

impl StreamRx {
    /// Records a packet with extended sequence number `seq`, RTP timestamp
    /// `ts` and arrival time in RTP timestamp units `arrival`. Returns false
    /// for a duplicate (which updates nothing else).
    pub fn packet(&mut self, seq: u64, ts: u32, arrival: u64) -> bool {
        match self.highest {
            None => {
                self.highest = Some(seq);
                self.window = 1;
            }
            Some(h) if seq > h => {
                let shift = seq - h;
                self.window = if shift >= 128 { 1 } else { (self.window << shift) | 1 };
                self.highest = Some(seq);
            }
            Some(h) => {
                let back = h - seq;
                if back < 128 && self.window & (1u128 << back) != 0 {
                    self.duplicates += 1;
                    return false;
                }
                if back < 128 {
                    self.window |= 1u128 << back;
                }
                self.reordered += 1;
            }
        }
        self.received += 1;
        // RFC 3550 A.8: J += (|D| - J) / 16, kept scaled by 16.
        let transit = arrival as i64 - ts as i64;
        if let Some(last) = self.last_transit {
            let d = (transit - last).unsigned_abs();
            self.jitter16 = self.jitter16 + d - ((self.jitter16 + 8) >> 4);
        }
        self.last_transit = Some(transit);
        true
    }

    /// Interarrival jitter in RTP timestamp units.
    pub fn jitter(&self) -> u64 {
        self.jitter16 >> 4
    }
}

/// Extends a 16-bit sequence number to the one nearest `highest` (RFC 3550
/// A.1). The first packet starts in cycle 1, so a step back stays positive.
pub fn extend_seq(highest: Option<u64>, seq: u16) -> u64 {
    let Some(h) = highest else { return (1 << 16) + seq as u64 };
    let cand = (h & !0xffff) | seq as u64;
    if cand + 0x8000 < h {
        cand + 0x1_0000
    } else if cand > h + 0x8000 && cand >= 0x1_0000 {
        cand - 0x1_0000
    } else {
        cand
    }
}

impl StreamRx {
    /// The highest extended sequence number seen.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_exact_at_one_microsecond() {
        let mut d = Delays::new();
        for us in 1..=100 {
            d.record(us);
        }
        assert_eq!(d.quantile_us(0.5), Some(50));
        assert_eq!(d.quantile_us(0.99), Some(99));
        assert_eq!(d.quantile_us(1.0), Some(100));
        assert_eq!(d.count(), 100);
        assert!((d.mean_us() - 50.5).abs() < 1e-9);
        d.record(5_000_000);
        assert_eq!(d.max_us(), 5_000_000);
        assert_eq!(d.quantile_us(1.0), Some(5_000_000));
        let h = d.histogram(10, 100);
        assert_eq!(h[0], 9);
        assert_eq!(h[10], 1);
        let mut e = Delays::new();
        e.merge(&d);
        e.merge(&d);
        assert_eq!((e.count(), e.max_us()), (202, 5_000_000));
        assert_eq!(Delays::new().quantile_us(0.5), None);
    }

    #[test]
    fn loss_duplicates_reordering() {
        let mut s = StreamRx::default();
        let mut h = None;
        for seq in [1u16, 2, 4, 3, 3, 5] {
            let e = extend_seq(h, seq);
            s.packet(e, seq as u32 * 160, seq as u64 * 160);
            h = s.highest();
        }
        assert_eq!((s.received, s.duplicates, s.reordered), (5, 1, 1));
        assert_eq!(s.jitter(), 0, "perfectly paced packets have no jitter");
    }

    #[test]
    fn sequence_wrap_extends() {
        let a = extend_seq(None, 65_535);
        let b = extend_seq(Some(a), 0);
        assert_eq!(b, a + 1);
        let c = extend_seq(Some(b), 65_534);
        assert_eq!(c, a - 1);
    }

    #[test]
    fn jitter_follows_rfc3550() {
        let mut s = StreamRx::default();
        // Packets 160 timestamp units apart arriving alternately 0 and 80
        // units late: |D| = 80 each time; J converges towards 80.
        for i in 0..2000u64 {
            let late = if i % 2 == 0 { 0 } else { 80 };
            s.packet(i + 1, (i * 160) as u32, i * 160 + late);
        }
        assert!((75..=80).contains(&s.jitter()), "jitter {}", s.jitter());
    }
}
