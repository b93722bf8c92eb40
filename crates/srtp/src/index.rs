//! Packet index estimation (RFC 3711 §3.3.1 and Appendix A).

/// Largest valid SRTP packet index (48 bits).
pub const MAX_SRTP_INDEX: u64 = (1 << 48) - 1;
/// Largest valid SRTCP index (31 bits).
pub const MAX_SRTCP_INDEX: u32 = (1 << 31) - 1;

/// Estimates the 48-bit index of a packet with sequence number `seq`, given
/// the rollover counter `roc` and the highest sequence number `s_l` seen on
/// the stream. Returns `None` when the estimate falls before index 0 or past
/// 2^48 (the packet cannot be valid).
pub fn estimate(roc: u32, s_l: u16, seq: u16) -> Option<u64> {
    let v: i64 = if s_l < 0x8000 {
        if seq > s_l && seq - s_l > 0x8000 {
            roc as i64 - 1
        } else {
            roc as i64
        }
    } else if s_l - 0x8000 > seq {
        roc as i64 + 1
    } else {
        roc as i64
    };
    if !(0..=u32::MAX as i64).contains(&v) {
        return None;
    }
    Some(((v as u64) << 16) | seq as u64)
}

/// The rollover counter of an index.
pub const fn roc_of(index: u64) -> u32 {
    (index >> 16) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn wrap_forward_and_back() {
        assert_eq!(estimate(0, 65535, 0), Some(1 << 16));
        assert_eq!(estimate(1, 0, 65535), Some(65535));
        assert_eq!(estimate(0, 10, 65535), None);
        assert_eq!(estimate(0, 100, 50), Some(50));
        assert_eq!(estimate(u32::MAX, 65000, 10), None);
    }

    proptest! {
        /// Any packet within 2^15 of the highest index is estimated exactly.
        #[test]
        fn exact_within_half_range(highest in 0u64..(1u64 << 40), delta in -32767i64..32767) {
            let target = highest as i64 + delta;
            prop_assume!(target >= 0);
            let target = target as u64;
            let est = estimate(roc_of(highest), highest as u16, target as u16);
            prop_assert_eq!(est, Some(target));
        }
    }
}
