//! Replies kept for retransmitted NG requests.
//!
//! The modules resend a request when its reply is late, and an offer must
//! not run twice (it would bind new ports and keys), so the reply of each
//! request is kept and sent again for a request with the same cookie from
//! the same sender. Keyed by (sender, cookie): another sender reusing a
//! cookie must not be handed the first one's reply, which carries SDP and
//! keys. Bounded in bytes and in age, whatever the senders do. The replies
//! are zeroized when they leave (age, bound, replacement, or the cache
//! dropped), for those keys.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use zeroize::Zeroizing;

/// What one entry costs beside its reply and cookie: the address twice, the
/// map's slot (at its load factor, doubled while it grows), the queue's
/// slot, and the three allocations' headers and rounding; measured against
/// resident memory with small replies, rounded up.
const ENTRY_OVERHEAD: usize = 448;

type Key = (SocketAddr, Vec<u8>);

/// The cache. Entries leave in the order they came (oldest first), when
/// they pass their age or when the bytes are over the bound.
pub struct ReplyCache {
    map: HashMap<Key, (u64, Zeroizing<Vec<u8>>)>,
    /// (key, insertion number, time) in insertion order; a key inserted
    /// again leaves a stale slot, skipped by its number.
    order: VecDeque<(Key, u64, Instant)>,
    bytes: usize,
    next: u64,
    max_bytes: usize,
    ttl: Duration,
}

impl ReplyCache {
    /// A cache of at most `max_bytes` whose entries live `ttl`.
    pub fn new(max_bytes: usize, ttl: Duration) -> ReplyCache {
        ReplyCache { map: HashMap::new(), order: VecDeque::new(), bytes: 0, next: 0, max_bytes, ttl }
    }

    fn cost(key: &Key, reply: &[u8]) -> usize {
        // The key is held twice: in the map and in the queue.
        reply.len() + 2 * key.1.len() + ENTRY_OVERHEAD
    }

    /// The reply kept for `cookie` from `from`, if it is younger than the age.
    pub fn get(&mut self, from: SocketAddr, cookie: &[u8], now: Instant) -> Option<&[u8]> {
        self.expire(now);
        self.map.get(&(from, cookie.to_vec())).map(|(_, r)| r.as_slice())
    }

    /// Keeps `reply`; older entries go to make room. A reply larger than the
    /// whole bound is not kept.
    pub fn insert(&mut self, from: SocketAddr, cookie: &[u8], reply: &[u8], now: Instant) {
        self.expire(now);
        let key = (from, cookie.to_vec());
        let cost = Self::cost(&key, reply);
        if cost > self.max_bytes {
            return;
        }
        let n = self.next;
        self.next += 1;
        if let Some((_, old)) = self.map.insert(key.clone(), (n, Zeroizing::new(reply.to_vec()))) {
            self.bytes -= Self::cost(&key, &old);
        }
        self.bytes += cost;
        self.order.push_back((key, n, now));
        while self.bytes > self.max_bytes {
            if !self.pop_oldest() {
                break;
            }
        }
    }

    /// Drops entries older than the age; gives back the table's room once
    /// a burst has passed (a map never shrinks by itself).
    fn expire(&mut self, now: Instant) {
        let mut dropped = false;
        while self.order.front().is_some_and(|(_, _, at)| now.duration_since(*at) >= self.ttl) {
            self.pop_oldest();
            dropped = true;
        }
        if dropped && self.map.capacity() > 4 * self.map.len() + 1024 {
            self.map.shrink_to(2 * self.map.len());
            self.order.shrink_to(2 * self.order.len());
        }
    }

    /// Removes the oldest queue slot and, when it is current, its entry.
    fn pop_oldest(&mut self) -> bool {
        let Some((key, n, _)) = self.order.pop_front() else { return false };
        if self.map.get(&key).is_some_and(|(m, _)| *m == n) {
            if let Some((_, r)) = self.map.remove(&key) {
                self.bytes -= Self::cost(&key, &r);
            }
        }
        true
    }

    /// Bytes held (as counted against the bound).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(p: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], p))
    }

    /// Another sender reusing a cookie gets nothing from the first sender's
    /// reply (issue 9: it was handed the offer's SDP and keys).
    #[test]
    fn keyed_by_sender_and_cookie() {
        let t = Instant::now();
        let mut c = ReplyCache::new(1 << 20, Duration::from_secs(30));
        c.insert(addr(1), b"c1", b"reply with a=crypto", t);
        assert_eq!(c.get(addr(1), b"c1", t), Some(&b"reply with a=crypto"[..]));
        assert_eq!(c.get(addr(2), b"c1", t), None);
        assert_eq!(c.get(addr(1), b"c2", t), None);
    }

    /// Entries leave after their age, and the bytes stay under the bound
    /// whatever is inserted (issue 9: 5 000 re-offers held 225 MB).
    #[test]
    fn bounded_in_age_and_bytes() {
        let t = Instant::now();
        let mut c = ReplyCache::new(1 << 20, Duration::from_secs(30));
        c.insert(addr(1), b"old", b"x", t);
        assert!(c.get(addr(1), b"old", t + Duration::from_secs(29)).is_some());
        assert!(c.get(addr(1), b"old", t + Duration::from_secs(30)).is_none());
        assert_eq!((c.len(), c.bytes()), (0, 0));
        let big = vec![b'r'; 57_000];
        for i in 0..5_000u32 {
            c.insert(addr(1), format!("cookie-{i}").as_bytes(), &big, t);
            assert!(c.bytes() <= 1 << 20, "{} bytes after {i}", c.bytes());
        }
        assert!(c.len() >= 17 && c.len() <= 18, "{} entries", c.len());
        // Bursts of small replies count their overhead too.
        let mut c2 = ReplyCache::new(1 << 20, Duration::from_secs(30));
        for i in 0..100_000u32 {
            c2.insert(addr(1), format!("c{i}").as_bytes(), b"d6:result2:oke", t);
        }
        assert!(c2.bytes() <= 1 << 20 && c2.len() < (1 << 20) / ENTRY_OVERHEAD, "{} entries", c2.len());
        assert!(c.get(addr(1), b"cookie-4999", t).is_some(), "the newest stays");
        assert!(c.get(addr(1), b"cookie-0", t).is_none(), "the oldest went");
        // The same key again replaces its entry and its bytes.
        let before = c.bytes();
        c.insert(addr(1), b"cookie-4999", &big, t);
        assert_eq!(c.bytes(), before);
        // A reply larger than the whole bound is not kept.
        let mut small = ReplyCache::new(1000, Duration::from_secs(30));
        small.insert(addr(1), b"c", &[0; 2000], t);
        assert_eq!(small.len(), 0);
    }
}
