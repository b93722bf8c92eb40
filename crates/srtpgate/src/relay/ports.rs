//! Media port pairs from the configured range: an even RTP port and the odd
//! RTCP port above it (RFC 3550 §11), bound on one of the relay's interfaces.

use socket2::{Domain, Protocol, Socket, Type};
use std::collections::BTreeSet;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};

/// A bound RTP/RTCP socket pair.
#[derive(Debug)]
pub struct PortPair {
    /// The RTP socket (even port).
    pub rtp: UdpSocket,
    /// The RTCP socket (RTP port + 1).
    pub rtcp: UdpSocket,
    /// The RTP port.
    pub port: u16,
}

/// Hands out port pairs round-robin, so that a port just freed is not reused
/// at once (late packets of the old call would reach the new one).
#[derive(Debug)]
pub struct Ports {
    min: u16,
    max: u16,
    next: u16,
    used: BTreeSet<u16>,
    /// Socket receive/send buffer size in bytes (0 = the system default).
    pub socket_buffer: usize,
}

impl Ports {
    /// A range `min..=max`; the first pair starts at the first even port.
    pub fn new(min: u16, max: u16) -> Result<Ports, String> {
        let first = min + (min & 1);
        if max < first.saturating_add(1) || min == 0 {
            return Err(format!("port range {min}-{max} holds no RTP/RTCP pair (need an even port and the next one)"));
        }
        Ok(Ports { min: first, max, next: first, used: BTreeSet::new(), socket_buffer: 0 })
    }

    /// Pairs in the range.
    pub fn capacity(&self) -> usize {
        (self.max as usize + 1 - self.min as usize) / 2
    }

    /// Pairs in use.
    pub fn in_use(&self) -> usize {
        self.used.len()
    }

    /// Binds a free pair on `ip`. Ports another process holds are skipped.
    pub fn allocate(&mut self, ip: IpAddr) -> io::Result<PortPair> {
        for _ in 0..self.capacity() {
            let port = self.next;
            // In u32: with port-max 65535 the next pair would overflow u16.
            self.next = if port as u32 + 3 > self.max as u32 { self.min } else { port + 2 };
            if self.used.contains(&port) {
                continue;
            }
            let rtp = match self.bind(SocketAddr::new(ip, port)) {
                Ok(s) => s,
                Err(e) if out_of_files(&e) => return Err(e),
                Err(_) => continue,
            };
            let rtcp = match self.bind(SocketAddr::new(ip, port + 1)) {
                Ok(s) => s,
                Err(e) if out_of_files(&e) => return Err(e),
                Err(_) => continue,
            };
            self.used.insert(port);
            return Ok(PortPair { rtp, rtcp, port });
        }
        Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("no free media port pair in {}-{} on {ip}", self.min, self.max),
        ))
    }

    /// Marks a pair free (its sockets are closed by their owner).
    pub fn release(&mut self, port: u16) {
        self.used.remove(&port);
    }

    fn bind(&self, addr: SocketAddr) -> io::Result<UdpSocket> {
        self.bind_socket(addr).map_err(|e| {
            if out_of_files(&e) {
                io::Error::new(
                    e.kind(),
                    format!("open-file limit reached ({e}): each call leg holds 2 sockets; raise `ulimit -n`"),
                )
            } else {
                e
            }
        })
    }

    fn bind_socket(&self, addr: SocketAddr) -> io::Result<UdpSocket> {
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        if addr.is_ipv6() {
            s.set_only_v6(true)?;
        }
        if self.socket_buffer > 0 {
            // Best effort: the kernel caps these at net.core.[rw]mem_max.
            let _ = s.set_recv_buffer_size(self.socket_buffer);
            let _ = s.set_send_buffer_size(self.socket_buffer);
        }
        s.set_nonblocking(true)?;
        s.bind(&addr.into())?;
        Ok(s.into())
    }
}

/// EMFILE or ENFILE: no port is free of that, so stop looking.
fn out_of_files(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_even_odd_and_reused_last() {
        let mut p = Ports::new(41_001, 41_006).expect("range");
        assert_eq!(p.capacity(), 2);
        let ip: IpAddr = "127.0.0.1".parse().expect("ip");
        let a = p.allocate(ip).expect("first pair");
        assert_eq!(a.port % 2, 0);
        assert_eq!(a.rtcp.local_addr().expect("addr").port(), a.port + 1);
        let b = p.allocate(ip).expect("second pair");
        assert_ne!(a.port, b.port);
        assert!(p.allocate(ip).is_err(), "a third pair from a range of two");
        let freed = a.port;
        drop(a);
        p.release(freed);
        let c = p.allocate(ip).expect("freed pair");
        assert_eq!(c.port, freed);
        assert_eq!(p.in_use(), 2);
        assert!(Ports::new(41_001, 41_002).is_err());
    }

    #[test]
    fn range_ending_at_65535_wraps_without_overflow() {
        let mut p = Ports::new(65_532, 65_535).expect("range");
        let ip: IpAddr = "127.0.0.1".parse().expect("ip");
        let pairs: Vec<_> = (0..2).filter_map(|_| p.allocate(ip).ok()).collect();
        for pair in &pairs {
            assert!(pair.port >= 65_532 && pair.port % 2 == 0, "port {} outside the range", pair.port);
        }
        assert!(p.allocate(ip).is_err(), "a range of two pairs gave a third");
    }
}
