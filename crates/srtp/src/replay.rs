//! Replay protection over the full packet index (RFC 3711 §3.3.2).
//!
//! A fixed bitmap used as a ring: the bit of index `i` lives at `i mod W`.
//! Checking is read-only and happens before decryption; [`ReplayWindow::update`]
//! runs only after the packet authenticated.

/// Default window size in packets (RFC 3711 requires at least 64).
pub const DEFAULT_WINDOW: usize = 128;
/// Largest supported window.
pub const MAX_WINDOW: usize = 32_768;

/// Sliding replay window over 64-bit indices.
#[derive(Clone, Debug)]
pub struct ReplayWindow {
    bits: Bits,
    /// Highest index accepted so far; `None` before the first packet.
    highest: Option<u64>,
}

/// The window's answer for one index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayCheck {
    /// Not seen and inside or ahead of the window.
    Fresh,
    /// Seen before, or older than the window.
    Replayed,
}

/// Bitmap storage: inline for windows up to 256 packets (no pointer to chase
/// per packet), on the heap for larger ones.
#[derive(Clone, Debug)]
enum Bits {
    Inline { words: [u64; 4], len: u8 },
    Heap(Box<[u64]>),
}

impl core::ops::Deref for Bits {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match self {
            Bits::Inline { words, len } => &words[..*len as usize],
            Bits::Heap(b) => b,
        }
    }
}

impl core::ops::DerefMut for Bits {
    fn deref_mut(&mut self) -> &mut [u64] {
        match self {
            Bits::Inline { words, len } => &mut words[..*len as usize],
            Bits::Heap(b) => b,
        }
    }
}

impl ReplayWindow {
    /// A window of `size` packets, rounded up to a multiple of 64
    /// (clamped to 64..=[`MAX_WINDOW`]).
    pub fn new(size: usize) -> ReplayWindow {
        let words = size.clamp(64, MAX_WINDOW).div_ceil(64);
        let bits = if words <= 4 {
            Bits::Inline { words: [0; 4], len: words as u8 }
        } else {
            Bits::Heap(vec![0u64; words].into_boxed_slice())
        };
        ReplayWindow { bits, highest: None }
    }

    /// A window of `size` packets that has seen every index up to and
    /// including `highest`: what a receiver or sender resumed after a
    /// restart knows, since any of those may have been used before it.
    pub fn seen_up_to(size: usize, highest: u64) -> ReplayWindow {
        let mut w = ReplayWindow::new(size);
        w.bits.iter_mut().for_each(|b| *b = u64::MAX);
        w.highest = Some(highest);
        w
    }

    /// Window size in packets.
    pub fn size(&self) -> u64 {
        self.bits.len() as u64 * 64
    }

    /// Highest accepted index.
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    fn bit(&self, index: u64) -> (usize, u64) {
        let pos = index % self.size();
        ((pos / 64) as usize, 1u64 << (pos % 64))
    }

    /// Checks `index` without changing the window.
    pub fn check(&self, index: u64) -> ReplayCheck {
        let Some(highest) = self.highest else {
            return ReplayCheck::Fresh;
        };
        if index > highest {
            return ReplayCheck::Fresh;
        }
        if highest - index >= self.size() {
            return ReplayCheck::Replayed;
        }
        let (word, mask) = self.bit(index);
        if self.bits[word] & mask != 0 {
            ReplayCheck::Replayed
        } else {
            ReplayCheck::Fresh
        }
    }

    /// Marks `index` as received. Call only after the packet authenticated and
    /// [`check`](Self::check) said [`ReplayCheck::Fresh`].
    pub fn update(&mut self, index: u64) {
        match self.highest {
            Some(highest) if index <= highest => {}
            Some(highest) => {
                // Clear the slots of the indices skipped over.
                let advance = index - highest;
                if advance >= self.size() {
                    self.bits.iter_mut().for_each(|w| *w = 0);
                } else {
                    self.clear_range(highest + 1, advance);
                }
                self.highest = Some(index);
            }
            None => self.highest = Some(index),
        }
        let (word, mask) = self.bit(index);
        self.bits[word] |= mask;
    }

    /// Clears `count` (< size) consecutive slots starting at index `from`.
    fn clear_range(&mut self, from: u64, count: u64) {
        let size = self.size();
        let mut pos = from % size;
        let mut left = count;
        while left > 0 {
            let word = (pos / 64) as usize;
            let bit = pos % 64;
            let n = left.min(64 - bit);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << bit };
            self.bits[word] &= !mask;
            left -= n;
            pos = (pos + n) % size;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn basic() {
        let mut w = ReplayWindow::new(128);
        assert_eq!(w.check(5), ReplayCheck::Fresh);
        w.update(5);
        assert_eq!(w.check(5), ReplayCheck::Replayed);
        assert_eq!(w.check(4), ReplayCheck::Fresh);
        w.update(200);
        assert_eq!(w.check(72), ReplayCheck::Replayed); // 200 - 72 = 128: outside
        assert_eq!(w.check(73), ReplayCheck::Fresh);
        assert_eq!(w.check(5), ReplayCheck::Replayed);
        w.update(73);
        assert_eq!(w.check(73), ReplayCheck::Replayed);
        // A large jump clears everything.
        w.update(1 << 40);
        assert_eq!(w.check((1 << 40) - 1), ReplayCheck::Fresh);
    }

    /// Reference model: a set of seen indices and the highest.
    fn model_check(seen: &std::collections::BTreeSet<u64>, size: u64, i: u64) -> ReplayCheck {
        match seen.iter().next_back() {
            None => ReplayCheck::Fresh,
            Some(&h) if i > h => ReplayCheck::Fresh,
            Some(&h) if h - i >= size => ReplayCheck::Replayed,
            _ if seen.contains(&i) => ReplayCheck::Replayed,
            _ => ReplayCheck::Fresh,
        }
    }

    proptest! {
        #[test]
        fn matches_model(size in prop::sample::select(vec![64usize, 128, 192, 1024, 32768]),
                         steps in prop::collection::vec((0u64..3, 0u64..40_000), 1..300)) {
            let mut w = ReplayWindow::new(size);
            let mut seen = std::collections::BTreeSet::new();
            let mut cur = 1_000_000u64;
            for (kind, d) in steps {
                // Mostly forward, sometimes backward, sometimes far.
                let i = match kind { 0 => cur + d % 300, 1 => cur.saturating_sub(d), _ => cur + d };
                let expect = model_check(&seen, w.size(), i);
                prop_assert_eq!(w.check(i), expect);
                if expect == ReplayCheck::Fresh {
                    w.update(i);
                    seen.insert(i);
                    cur = cur.max(i);
                }
            }
        }
    }
}
