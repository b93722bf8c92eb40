//! Media port pairs from the configured range: an even RTP port and the odd
//! RTCP port above it (RFC 3550 §11), bound on one of the relay's interfaces.
//!
//! The sockets count against the process's open-file limit, which the HTTP
//! listener and the rest of the daemon share: [`Ports::fd_budget`] caps the
//! files media may take, so that a pair is refused with a clear reason
//! before the kernel runs out of descriptors for everybody.

use socket2::{Domain, Protocol, Socket, Type};
use std::collections::BTreeSet;
use std::io;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// How long after the first resume a resumed call's port pair still taken
/// is tried again ([`Ports::allocate_at`]).
pub const RESUME_BIND_WAIT: Duration = Duration::from_secs(2);

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

/// Why no pair could be had. The text goes into the NG `error-reason`, so
/// it names the real cause and what an operator can do about it.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// The media sockets' share of the open-file limit is used up.
    #[error(
        "open-file limit reached: {pairs} port pairs and {recording} recording files hold the {budget} files \
         set aside for media (RLIMIT_NOFILE {limit}); each relayed stream takes 4; raise the limit \
         (LimitNOFILE= in the systemd unit, `ulimit -n`)"
    )]
    Budget {
        /// Pairs in use.
        pairs: usize,
        /// Files the recorder holds.
        recording: usize,
        /// Files media may hold.
        budget: usize,
        /// The process's open-file limit.
        limit: u64,
    },
    /// The kernel refused a socket: EMFILE (this process's limit) or
    /// ENFILE (the system's, `fs.file-max`).
    #[error("open-file limit reached: {source} (RLIMIT_NOFILE {limit}, {pairs} port pairs in use); raise the limit (LimitNOFILE= in the systemd unit, `ulimit -n`; for ENFILE, sysctl fs.file-max)")]
    OutOfFiles {
        /// The kernel's error.
        source: io::Error,
        /// The process's open-file limit.
        limit: u64,
        /// Pairs in use.
        pairs: usize,
    },
    /// A bind failed for a reason no other port avoids (an address that is
    /// not this host's, a port below 1024 without the privilege, …).
    #[error("cannot bind media port {addr}: {source} (is the interface address one of this host's?)")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The kernel's error.
        source: io::Error,
    },
    /// Every pair of the range is in use here or held by another process.
    #[error("no free media port pair in {min}-{max} on {ip} ({in_use} of {capacity} pairs in use here, the others held by other processes)")]
    RangeExhausted {
        /// Range start.
        min: u16,
        /// Range end.
        max: u16,
        /// The interface.
        ip: IpAddr,
        /// Pairs in use here.
        in_use: usize,
        /// Pairs in the range.
        capacity: usize,
    },
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
    /// Until when a resumed call's pair still taken is tried again: set by
    /// the first resume, [`RESUME_BIND_WAIT`] later, so that ports another
    /// process holds for good cost a resume that long once, not per call.
    resume_grace: Option<std::time::Instant>,
}

/// The port ranges of the relay's interfaces, one [`Ports`] each (two
/// interfaces may hand out the same port number: their sockets bind
/// different addresses), under one open-file budget.
#[derive(Debug)]
pub struct PortSet {
    ranges: Vec<Ports>,
    /// Most files the media sockets may hold (`None`: no cap but the kernel's).
    pub fd_budget: Option<usize>,
    /// Files held under the same budget outside the media sockets (the
    /// recorder's open recordings), counted by their holder: a recorded
    /// call's files leave fewer for new streams.
    pub elsewhere: Arc<AtomicUsize>,
}

impl PortSet {
    /// One range per interface, in the interfaces' order.
    pub fn new(ranges: Vec<Ports>) -> PortSet {
        PortSet { ranges, fd_budget: None, elsewhere: Arc::new(AtomicUsize::new(0)) }
    }

    /// Pairs in every range.
    pub fn capacity(&self) -> usize {
        self.ranges.iter().map(Ports::capacity).sum()
    }

    /// Pairs in use on every interface.
    pub fn in_use(&self) -> usize {
        self.ranges.iter().map(Ports::in_use).sum()
    }

    /// Binds a free pair of `interface`'s range on `ip`.
    pub fn allocate(&mut self, interface: usize, ip: IpAddr) -> Result<PortPair, PortError> {
        self.check_budget()?;
        self.range(interface, ip)?.allocate(ip)
    }

    /// Binds the pair at `port` of `interface`'s range on `ip`.
    pub fn allocate_at(&mut self, interface: usize, ip: IpAddr, port: u16) -> Result<PortPair, PortError> {
        self.check_budget()?;
        self.range(interface, ip)?.allocate_at(ip, port)
    }

    /// Marks a pair of `interface` free.
    pub fn release(&mut self, interface: usize, port: u16) {
        if let Some(r) = self.ranges.get_mut(interface) {
            r.release(port);
        }
    }

    /// Files left under the budget: what the media sockets and the files
    /// held elsewhere leave (`None`: no budget).
    pub fn free_files(&self) -> Option<usize> {
        let used = 2 * self.in_use() + self.elsewhere.load(Relaxed);
        self.fd_budget.map(|b| b.saturating_sub(used))
    }

    fn check_budget(&self) -> Result<(), PortError> {
        let (pairs, recording) = (self.in_use(), self.elsewhere.load(Relaxed));
        match self.fd_budget {
            Some(budget) if 2 * (pairs + 1) + recording > budget => {
                Err(PortError::Budget { pairs, recording, budget, limit: crate::sys::nofile_limit().0 })
            }
            _ => Ok(()),
        }
    }

    fn range(&mut self, interface: usize, ip: IpAddr) -> Result<&mut Ports, PortError> {
        self.ranges.get_mut(interface).ok_or_else(|| PortError::Bind {
            addr: SocketAddr::new(ip, 0),
            source: io::Error::new(io::ErrorKind::NotFound, "no such interface"),
        })
    }
}

impl Ports {
    /// A range `min..=max`; the first pair starts at the first even port.
    pub fn new(min: u16, max: u16) -> Result<Ports, String> {
        let first = min + (min & 1);
        if max < first.saturating_add(1) || min == 0 {
            return Err(format!("port range {min}-{max} holds no RTP/RTCP pair (need an even port and the next one)"));
        }
        Ok(Ports { min: first, max, next: first, used: BTreeSet::new(), socket_buffer: 0, resume_grace: None })
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
    pub fn allocate(&mut self, ip: IpAddr) -> Result<PortPair, PortError> {
        for _ in 0..self.capacity() {
            let port = self.next;
            // In u32: with port-max 65535 the next pair would overflow u16.
            self.next = if port as u32 + 3 > self.max as u32 { self.min } else { port + 2 };
            if self.used.contains(&port) {
                continue;
            }
            let rtp = match self.bind(SocketAddr::new(ip, port)) {
                Ok(s) => s,
                Err(e) => {
                    self.check_bind(e, SocketAddr::new(ip, port))?;
                    continue;
                }
            };
            let rtcp = match self.bind(SocketAddr::new(ip, port + 1)) {
                Ok(s) => s,
                Err(e) => {
                    self.check_bind(e, SocketAddr::new(ip, port + 1))?;
                    continue;
                }
            };
            self.used.insert(port);
            return Ok(PortPair { rtp, rtcp, port });
        }
        Err(PortError::RangeExhausted {
            min: self.min,
            max: self.max,
            ip,
            in_use: self.used.len(),
            capacity: self.capacity(),
        })
    }

    /// Binds the pair at `port` on `ip` (a call resumed after a restart
    /// keeps its ports), waiting up to [`RESUME_BIND_WAIT`] for a pair
    /// still taken.
    pub fn allocate_at(&mut self, ip: IpAddr, port: u16) -> Result<PortPair, PortError> {
        if !port.is_multiple_of(2) || port < self.min || port >= self.max || self.used.contains(&port) {
            return Err(PortError::Bind {
                addr: SocketAddr::new(ip, port),
                source: io::Error::new(io::ErrorKind::AddrInUse, "not a free pair of the range"),
            });
        }
        // The process before this one may have held the pair a moment ago:
        // after a crash the kernel closes a process's io_uring sockets in
        // the background, after the process is gone, so a port still taken
        // is tried again for a short while (this runs at start, before any
        // media flows).
        let deadline = *self.resume_grace.get_or_insert_with(|| std::time::Instant::now() + RESUME_BIND_WAIT);
        loop {
            let bind = |addr| self.bind(addr).map_err(|source| PortError::Bind { addr, source });
            let pair = bind(SocketAddr::new(ip, port)).and_then(|rtp| Ok((rtp, bind(SocketAddr::new(ip, port + 1))?)));
            match pair {
                Ok((rtp, rtcp)) => {
                    self.used.insert(port);
                    return Ok(PortPair { rtp, rtcp, port });
                }
                Err(PortError::Bind { source, .. })
                    if source.raw_os_error() == Some(libc::EADDRINUSE) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// A port another process holds lets the search go on; any other bind
    /// error ends it with its real cause (no other port would avoid it).
    fn check_bind(&self, e: io::Error, addr: SocketAddr) -> Result<(), PortError> {
        match e.raw_os_error() {
            Some(libc::EADDRINUSE) => Ok(()),
            Some(libc::EMFILE) | Some(libc::ENFILE) => {
                Err(PortError::OutOfFiles { source: e, limit: crate::sys::nofile_limit().0, pairs: self.used.len() })
            }
            _ => Err(PortError::Bind { addr, source: e }),
        }
    }

    /// Marks a pair free (its sockets are closed by their owner).
    pub fn release(&mut self, port: u16) {
        self.used.remove(&port);
    }

    /// A non-blocking UDP socket bound to `addr`; the error as the kernel
    /// gave it (its errno tells a taken port from a lack of files).
    fn bind(&self, addr: SocketAddr) -> io::Result<UdpSocket> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resumed_pair_still_held_a_moment_is_bound_once_free() {
        let mut p = Ports::new(41_101, 41_110).expect("range");
        let ip: IpAddr = "127.0.0.1".parse().expect("ip");
        // The pair as a crashed process's sockets, closed a moment later.
        let held = UdpSocket::bind((ip, 41_105)).expect("hold the RTCP port");
        let freed = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(150));
            drop(held);
        });
        let pair = p.allocate_at(ip, 41_104).expect("bound once the old socket closed");
        freed.join().expect("closer");
        assert_eq!((pair.port, pair.rtcp.local_addr().expect("addr").port()), (41_104, 41_105));
        assert!(p.allocate_at(ip, 41_104).is_err(), "a pair in use here is refused at once");
    }

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
        let e = p.allocate(ip).expect_err("range used up");
        assert!(matches!(e, PortError::RangeExhausted { .. }), "{e}");
        assert!(e.to_string().contains("no free media port pair"), "{e}");
    }

    /// Running out of files is told apart from a taken port, keeps the
    /// kernel's error, and names the limit (issue 9: it was reported as a
    /// full port range).
    #[test]
    fn out_of_files_names_the_limit() {
        let p = Ports::new(41_101, 41_110).expect("range");
        for errno in [libc::EMFILE, libc::ENFILE] {
            let e = p
                .check_bind(io::Error::from_raw_os_error(errno), "127.0.0.1:41102".parse().expect("addr"))
                .expect_err("out of files");
            let PortError::OutOfFiles { source, .. } = &e else { panic!("{e:?}") };
            assert_eq!(source.raw_os_error(), Some(errno));
            assert!(e.to_string().contains("RLIMIT_NOFILE"), "{e}");
        }
        let any: SocketAddr = "127.0.0.1:41102".parse().expect("addr");
        assert!(p.check_bind(io::Error::from_raw_os_error(libc::EADDRINUSE), any).is_ok(), "a taken port is skipped");
        // An address that is not this host's ends the search with its cause.
        let e =
            Ports::new(41_121, 41_130).expect("range").allocate("192.0.2.1".parse().expect("ip")).expect_err("foreign");
        assert!(matches!(e, PortError::Bind { .. }) && e.to_string().contains("192.0.2.1:4112"), "{e}");
        // The budget, shared by the interfaces: two pairs (four files),
        // then a clear refusal on either.
        let mut set = PortSet::new(vec![p, Ports::new(41_101, 41_110).expect("range")]);
        set.fd_budget = Some(5);
        let ip: IpAddr = "127.0.0.1".parse().expect("ip");
        let _a = set.allocate(0, ip).expect("first pair");
        let _b = set.allocate(1, "127.0.0.2".parse().expect("ip")).expect("second pair, same range, other address");
        assert_eq!(_a.port, _b.port, "each interface counts its own ports");
        for k in 0..2 {
            let e = set.allocate(k, ip).expect_err("over the budget");
            assert!(matches!(e, PortError::Budget { pairs: 2, budget: 5, .. }), "{e}");
            assert!(
                e.to_string().starts_with("open-file limit reached: 2 port pairs and 0 recording files hold the 5"),
                "{e}"
            );
        }
        assert_eq!((set.in_use(), set.capacity()), (2, 8));
        set.release(1, _b.port);
        assert_eq!((set.in_use(), set.free_files()), (1, Some(3)));
        // Files the recorder holds count too: one left, no room for a pair.
        set.elsewhere.store(2, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(set.free_files(), Some(1));
        let e = set.allocate(1, ip).expect_err("the recorder's files leave no room");
        assert!(matches!(e, PortError::Budget { pairs: 1, recording: 2, .. }), "{e}");
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
