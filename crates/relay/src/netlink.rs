//! The kernel's routing and neighbour tables, read over rtnetlink: where a
//! packet to a peer leaves (interface, gateway, source address) and the
//! next hop's link-layer address. The AF_XDP backend writes Ethernet headers
//! itself and learns them here, once per destination and again every few
//! seconds, never per packet.

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST};
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState};
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr as NlAddr};
use std::io;
use std::net::IpAddr;

/// Where the kernel sends a packet to a destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Outgoing interface.
    pub ifindex: u32,
    /// The next hop: the gateway, or the destination itself on a link.
    pub next_hop: IpAddr,
}

/// An rtnetlink socket.
pub struct Netlink {
    sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

fn family(ip: IpAddr) -> AddressFamily {
    if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    }
}

impl Netlink {
    /// Opens a socket on the routing family.
    pub fn open() -> io::Result<Netlink> {
        let mut sock = Socket::new(NETLINK_ROUTE)?;
        sock.bind_auto()?;
        sock.connect(&NlAddr::new(0, 0))?;
        Ok(Netlink { sock, seq: 0, buf: vec![0u8; 64 * 1024] })
    }

    /// Sends one request and collects the messages of its answer.
    fn ask(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<Vec<RouteNetlinkMessage>> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = self.seq;
        let mut req = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        req.finalize();
        let mut out = vec![0u8; req.buffer_len()];
        req.serialize(&mut out);
        self.sock.send(&out, 0)?;
        let mut got = Vec::new();
        loop {
            let n = self.sock.recv(&mut &mut self.buf[..], 0)?;
            let mut off = 0;
            while off < n {
                let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.buf[off..n])
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("rtnetlink: {e}")))?;
                let len = m.header.length as usize;
                if m.header.sequence_number == self.seq {
                    match m.payload {
                        NetlinkPayload::InnerMessage(inner) => got.push(inner),
                        NetlinkPayload::Done(_) => return Ok(got),
                        NetlinkPayload::Error(e) => {
                            return match e.code {
                                Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
                                None => Ok(got),
                            }
                        }
                        _ => {}
                    }
                }
                if len == 0 {
                    break;
                }
                off += len.next_multiple_of(4);
            }
            if flags & NLM_F_DUMP == 0 && !got.is_empty() {
                return Ok(got);
            }
        }
    }

    /// The route the kernel takes to `dst` (RTM_GETROUTE).
    pub fn route(&mut self, dst: IpAddr) -> io::Result<Route> {
        let mut m = RouteMessage::default();
        m.header.address_family = family(dst);
        m.header.destination_prefix_length = if dst.is_ipv4() { 32 } else { 128 };
        m.attributes.push(RouteAttribute::Destination(RouteAddress::from(dst)));
        let answer = self.ask(RouteNetlinkMessage::GetRoute(m), 0)?;
        for msg in answer {
            let RouteNetlinkMessage::NewRoute(r) = msg else { continue };
            let mut ifindex = None;
            let mut gateway = None;
            for a in &r.attributes {
                match a {
                    RouteAttribute::Oif(i) => ifindex = Some(*i),
                    RouteAttribute::Gateway(RouteAddress::Inet(g)) => gateway = Some(IpAddr::V4(*g)),
                    RouteAttribute::Gateway(RouteAddress::Inet6(g)) => gateway = Some(IpAddr::V6(*g)),
                    _ => {}
                }
            }
            if let Some(ifindex) = ifindex {
                return Ok(Route { ifindex, next_hop: gateway.unwrap_or(dst) });
            }
        }
        Err(io::Error::new(io::ErrorKind::NotFound, format!("no route to {dst}")))
    }

    /// The link-layer address of `ip` on interface `ifindex` in the kernel's
    /// neighbour table, if the entry has one and is not failed.
    pub fn neighbour(&mut self, ifindex: u32, ip: IpAddr) -> io::Result<Option<[u8; 6]>> {
        let mut m = NeighbourMessage::default();
        m.header.family = family(ip);
        m.header.ifindex = ifindex;
        let answer = self.ask(RouteNetlinkMessage::GetNeighbour(m), NLM_F_DUMP)?;
        for msg in answer {
            let RouteNetlinkMessage::NewNeighbour(n) = msg else { continue };
            if n.header.ifindex != ifindex
                || matches!(n.header.state, NeighbourState::Failed | NeighbourState::Incomplete)
            {
                continue;
            }
            let mut dst = None;
            let mut lladdr = None;
            for a in &n.attributes {
                match a {
                    NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => dst = Some(IpAddr::V4(*v4)),
                    NeighbourAttribute::Destination(NeighbourAddress::Inet6(v6)) => dst = Some(IpAddr::V6(*v6)),
                    NeighbourAttribute::LinkLayerAddress(l) if l.len() == 6 => {
                        lladdr = Some([l[0], l[1], l[2], l[3], l[4], l[5]])
                    }
                    _ => {}
                }
            }
            if dst == Some(ip) {
                return Ok(lladdr);
            }
        }
        Ok(None)
    }
}

/// What [`Resolver`] found for a destination: where a packet to it leaves
/// by the interface asked about, its next hop's link-layer address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextHop {
    /// Through the interface, to this MAC.
    Mac([u8; 6]),
    /// Through the interface, but the next hop's MAC is not known yet (the
    /// kernel resolves it when a packet leaves by a socket).
    Unresolved,
    /// Not through the interface (or no route).
    Elsewhere,
}

/// Route and neighbour lookups for one interface, on a thread of their
/// own: a media worker asks ([`Resolver::ask`], never blocking) and reads
/// the answers on a later round ([`Resolver::answers`]), so that an
/// rtnetlink round trip (and a neighbour table dump) never holds up a
/// round of packets.
pub struct Resolver {
    asks: crossbeam_channel::Sender<IpAddr>,
    answers: crossbeam_channel::Receiver<(IpAddr, NextHop)>,
}

/// Lookups waiting for the resolver thread; beyond it a worker's asks are
/// refused (and asked again on a later packet).
const RESOLVER_QUEUE: usize = 256;

impl Resolver {
    /// Opens the rtnetlink socket (its failure is the caller's, at start)
    /// and starts the thread, named `name`, which ends when the resolver
    /// is dropped.
    pub fn start(ifindex: u32, name: String) -> io::Result<Resolver> {
        let mut nl = Netlink::open()?;
        let (asks, asked) = crossbeam_channel::bounded::<IpAddr>(RESOLVER_QUEUE);
        let (answer, answers) = crossbeam_channel::bounded(RESOLVER_QUEUE);
        std::thread::Builder::new().name(name).spawn(move || {
            for dst in asked {
                let hop = match nl.route(dst) {
                    Ok(r) if r.ifindex == ifindex => match nl.neighbour(ifindex, r.next_hop) {
                        Ok(Some(mac)) => NextHop::Mac(mac),
                        _ => NextHop::Unresolved,
                    },
                    _ => NextHop::Elsewhere,
                };
                if answer.send((dst, hop)).is_err() {
                    return;
                }
            }
        })?;
        Ok(Resolver { asks, answers })
    }

    /// Asks for `dst`'s next hop; false when the queue is full.
    pub fn ask(&self, dst: IpAddr) -> bool {
        self.asks.try_send(dst).is_ok()
    }

    /// The answers that have come.
    pub fn answers(&self) -> crossbeam_channel::TryIter<'_, (IpAddr, NextHop)> {
        self.answers.try_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_route() {
        let mut nl = match Netlink::open() {
            Ok(nl) => nl,
            Err(e) => {
                srtpgate_testkit::skip("rtnetlink", "loopback_route", format!("no rtnetlink socket here ({e})"));
                return;
            }
        };
        let r = nl.route("127.0.0.1".parse().expect("addr")).expect("a route to loopback");
        assert_eq!(r.next_hop, "127.0.0.1".parse::<IpAddr>().expect("addr"));
        // SAFETY: a NUL-terminated interface name.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert_eq!(r.ifindex, lo);
        // Loopback has no neighbour entries with a link-layer address.
        assert_eq!(nl.neighbour(lo, "127.0.0.1".parse().expect("addr")).expect("dump"), None);
    }

    /// The resolver answers off the caller's thread: loopback leaves by
    /// `lo` without a link-layer address, and by no other interface.
    #[test]
    fn resolver_answers_later() {
        // SAFETY: a NUL-terminated interface name.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        let r = match Resolver::start(lo, "resolver-test".into()) {
            Ok(r) => r,
            Err(e) => {
                srtpgate_testkit::skip("rtnetlink", "resolver_answers_later", format!("no rtnetlink socket ({e})"));
                return;
            }
        };
        let other = Resolver::start(lo + 1000, "resolver-test".into()).expect("a second socket");
        let ip: IpAddr = "127.0.0.1".parse().expect("addr");
        assert!(r.ask(ip) && other.ask(ip));
        let wait = |r: &Resolver| {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                if let Some(a) = r.answers().next() {
                    return a;
                }
                assert!(std::time::Instant::now() < deadline, "no answer");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        };
        assert_eq!(wait(&r), (ip, NextHop::Unresolved));
        assert_eq!(wait(&other), (ip, NextHop::Elsewhere));
    }
}
