//! The relay's own interarrival jitter of the RTP it receives (RFC 3550
//! §6.4.1 and A.8), for legs whose endpoints send no RTCP.

/// The interarrival jitter estimate of one received stream. Copy, no
/// allocation: it lives in the worker's leg and runs per RTP packet.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArrivalJitter {
    ssrc: u32,
    clock: u32,
    /// Relative transit time of the last packet, in RTP clock units.
    transit: Option<u32>,
    /// The estimate in RTP clock units, scaled by 16 (RFC 3550 A.8).
    j16: u32,
}

impl ArrivalJitter {
    /// Notes a packet of `ssrc` with RTP timestamp `ts` arriving at
    /// `arrival_ns` (any monotonic clock) at `clock` Hz. A new SSRC or clock
    /// rate starts over; a clock of 0 (unknown) is ignored.
    #[inline]
    pub fn note(&mut self, ssrc: u32, ts: u32, clock: u32, arrival_ns: u64) {
        if clock == 0 {
            return;
        }
        if ssrc != self.ssrc || clock != self.clock {
            *self = ArrivalJitter { ssrc, clock, transit: None, j16: 0 };
        }
        // Arrival in RTP clock units; only differences matter, so it wraps.
        let arrival = (arrival_ns as u128 * clock as u128 / 1_000_000_000) as u32;
        let transit = arrival.wrapping_sub(ts);
        if let Some(last) = self.transit {
            let d = transit.wrapping_sub(last) as i32;
            let d = d.unsigned_abs();
            // J += (|D| - J) / 16, with J kept ×16.
            self.j16 = self.j16.saturating_add(d).saturating_sub((self.j16 + 8) >> 4);
        }
        self.transit = Some(transit);
    }

    /// The estimate in RTP clock units (what an RR's jitter field carries).
    pub fn units(&self) -> u32 {
        self.j16 >> 4
    }

    /// The estimate in µs (0 before two packets).
    pub fn micros(&self) -> u64 {
        if self.clock == 0 {
            return 0;
        }
        self.units() as u64 * 1_000_000 / self.clock as u64
    }

    /// The SSRC whose packets it follows.
    pub fn ssrc(&self) -> u32 {
        self.ssrc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evenly_spaced_packets_have_no_jitter() {
        let mut j = ArrivalJitter::default();
        for k in 0..100u64 {
            j.note(5, 1000 + 160 * k as u32, 8000, 7_000_000_000 + k * 20_000_000);
        }
        assert_eq!(j.units(), 0);
    }

    #[test]
    fn alternating_delay_converges_to_its_swing() {
        // Every other packet 10 ms late: |D| = 80 units each time, so J
        // converges to 80 (10 ms at 8 kHz).
        let mut j = ArrivalJitter::default();
        for k in 0..400u64 {
            let late = if k % 2 == 1 { 10_000_000 } else { 0 };
            j.note(5, (160 * k) as u32, 8000, k * 20_000_000 + late);
        }
        assert!((75..=80).contains(&j.units()), "{}", j.units());
        assert!((9_300..=10_000).contains(&j.micros()), "{}", j.micros());
        // A new SSRC starts over.
        j.note(6, 0, 8000, 0);
        assert_eq!(j.units(), 0);
    }

    #[test]
    fn timestamp_and_clock_wraps_are_harmless() {
        let mut j = ArrivalJitter::default();
        for k in 0..100u64 {
            j.note(5, (u32::MAX - 800).wrapping_add((960 * k) as u32), 48_000, u64::MAX / 4 + k * 20_000_000);
        }
        assert!(j.units() <= 1, "{}", j.units());
    }
}
