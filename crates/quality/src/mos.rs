//! The MOS of a stream from its loss, jitter and round-trip time: the
//! E-model of ITU-T G.107 reduced for VoIP as rtpengine does (`mos_calc` in
//! its `ssrc.c`, after PingPlotter's simplification), so that a MOS from
//! srtpgate and one from rtpengine mean the same.

/// Which MOS (rtpengine's `--mos`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Model {
    /// Conversational quality: needs the round-trip time; without one
    /// there is no MOS (rtpengine's default).
    #[default]
    Cq,
    /// Listening quality: the round-trip time is left out. (rtpengine's
    /// `--mos=LQ` clears a local copy of it but still adds it; srtpgate
    /// leaves it out as the option says.)
    Lq,
}

impl Model {
    /// rtpengine's name.
    pub fn name(self) -> &'static str {
        match self {
            Model::Cq => "CQ",
            Model::Lq => "LQ",
        }
    }
}

/// The MOS ×10 (10 to 44; 0: none) of a stream with `rtt_us` round-trip
/// time (both legs), `jitter_ms` and `loss_pct` percent lost.
pub fn mos(model: Model, rtt_us: u64, jitter_ms: u32, loss_pct: u32) -> u32 {
    let rtt_us = match model {
        Model::Cq if rtt_us == 0 => return 0,
        Model::Cq => rtt_us,
        Model::Lq => 0,
    };
    // The effective latency in ms: the one-way delay counted twice for
    // jitter (buffering), plus 10 ms of codec delay.
    let eff = (rtt_us / 1000).saturating_add(jitter_ms as u64 * 2).saturating_add(10) as f64;
    let mut r = if eff < 160.0 { 93.2 - eff / 40.0 } else { 93.2 - (eff - 120.0) / 10.0 };
    r -= loss_pct as f64 * 2.5;
    let m = if r < 0.0 { 10 } else { ((1.0 + 0.035 * r + 0.000007 * r * (r - 60.0) * (100.0 - r)) * 10.0) as i64 };
    if m < 10 {
        0
    } else {
        m as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_rtpengine_gives() {
        // A clean LAN call: 1 ms round trip, no jitter, no loss: 4.4.
        assert_eq!(mos(Model::Cq, 1_000, 0, 0), 44);
        // Without a round trip, CQ gives none and LQ one.
        assert_eq!(mos(Model::Cq, 0, 0, 0), 0);
        assert_eq!(mos(Model::Lq, 0, 0, 0), 44);
        // 5 % loss and 30 ms jitter: 3.9 (clearly lower).
        assert_eq!(mos(Model::Cq, 1_000, 30, 5), 39);
        // 300 ms round trip: past the 160 ms knee.
        assert_eq!(mos(Model::Cq, 300_000, 0, 0), 37);
        // Heavy loss floors at 1.0.
        assert_eq!(mos(Model::Cq, 1_000, 0, 50), 10);
        // Anything goes in, 0 or 10..=44 out.
        for rtt in [1, 999, 50_000, 10_000_000, u64::MAX] {
            for j in [0, 5, 100, u32::MAX] {
                for l in [0, 1, 10, 100, u32::MAX] {
                    let m = mos(Model::Cq, rtt, j, l);
                    assert!(m == 0 || (10..=44).contains(&m), "{rtt} {j} {l}: {m}");
                }
            }
        }
    }
}
