//! The legs of a worker by their local address: the table a backend that
//! parses frames itself (`xdp`, `mem`) finds a received frame's leg in.

use std::net::SocketAddr;

/// The legs' tokens by local address, looked up for every received frame
/// by the backends that parse frames themselves (`xdp`, `mem`). A port
/// names one leg nearly always (the relay gives each leg its own), so IPv4
/// legs are found in a table indexed by port: one entry, whose line a
/// round announces ahead ([`Legs::prefetch`]), where a hash table costs a
/// miss on a bucket that cannot be known before hashing. IPv6 legs go by
/// the hash table, and so does a port that two legs share on different
/// addresses, but for the one added last (until it is removed and the
/// other added again).
pub(crate) struct Legs {
    /// By port: the token + 1 (0: none) and the IPv4 address, in one word.
    by_port: Vec<u64>,
    by_addr: rustc_hash::FxHashMap<SocketAddr, u32>,
}

impl Legs {
    /// An empty table.
    pub fn new() -> Legs {
        Legs { by_port: vec![0; 1 << 16], by_addr: rustc_hash::FxHashMap::default() }
    }

    /// The leg on `local` has token `tok` (replacing another on it).
    pub fn insert(&mut self, local: SocketAddr, tok: u32) {
        let local = key(local);
        // A token is a slot times four: never u32::MAX, so `tok + 1` fits.
        if let (SocketAddr::V4(a), Some(entry)) = (local, tok.checked_add(1)) {
            self.by_port[a.port() as usize] = u64::from(entry) << 32 | u64::from(a.ip().to_bits());
        }
        self.by_addr.insert(local, tok);
    }

    /// The leg on `local` is gone.
    pub fn remove(&mut self, local: SocketAddr) {
        let local = key(local);
        if let Some(tok) = self.by_addr.remove(&local) {
            let e = &mut self.by_port[local.port() as usize];
            if *e >> 32 == u64::from(tok) + 1 {
                *e = 0;
            }
        }
    }

    /// The token of the leg a frame sent to `dst` belongs to.
    pub fn get(&self, dst: SocketAddr) -> Option<u32> {
        if let SocketAddr::V4(a) = dst {
            let e = self.by_port[a.port() as usize];
            if e != 0 && e as u32 == a.ip().to_bits() {
                return Some((e >> 32) as u32 - 1);
            }
        }
        self.by_addr.get(&key(dst)).copied()
    }

    /// Announces the port table's entry for `port` to the cache
    /// ([`srtp::prefetch`]): a step before the frames are parsed.
    pub fn prefetch(&self, port: u16) {
        srtp::prefetch::value(&self.by_port[port as usize]);
    }
}

/// An address as a frame names it: an IPv6 address without the flow label
/// and scope a socket's own address may carry, so that a leg's socket and
/// the frames sent to it give the same key.
fn key(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(a) => SocketAddr::V6(std::net::SocketAddrV6::new(*a.ip(), a.port(), 0, 0)),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The port table and the hash table answer alike: by port and
    /// address, a shared port's earlier leg and IPv6 by the hash table, an
    /// entry gone with its leg and not with another's.
    #[test]
    fn legs_are_found_by_address_whatever_table_holds_them() {
        let a: SocketAddr = "198.18.0.1:4000".parse().unwrap();
        let b: SocketAddr = "198.18.0.2:4000".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:4000".parse().unwrap();
        let mut legs = Legs::new();
        legs.insert(a, 7);
        legs.insert(b, 9);
        legs.insert(v6, 11);
        assert_eq!((legs.get(a), legs.get(b), legs.get(v6)), (Some(7), Some(9), Some(11)));
        assert_eq!(legs.get("198.18.0.3:4000".parse().unwrap()), None, "another address on the port");
        assert_eq!(legs.get("198.18.0.1:4001".parse().unwrap()), None);
        legs.remove(a);
        assert_eq!((legs.get(a), legs.get(b)), (None, Some(9)));
        legs.insert(a, 7);
        legs.remove(b);
        assert_eq!((legs.get(a), legs.get(b), legs.get(v6)), (Some(7), None, Some(11)));
        legs.remove(v6);
        assert_eq!(legs.get(v6), None);
    }

    /// A socket's IPv6 address with a scope finds the frames sent to it.
    #[test]
    fn an_ipv6_scope_does_not_hide_a_leg() {
        let mut legs = Legs::new();
        let local = SocketAddr::V6(std::net::SocketAddrV6::new("fe80::1".parse().unwrap(), 5000, 0, 3));
        legs.insert(local, 8);
        assert_eq!(legs.get("[fe80::1]:5000".parse().unwrap()), Some(8));
        legs.remove("[fe80::1]:5000".parse().unwrap());
        assert_eq!(legs.get(local), None);
    }
}
