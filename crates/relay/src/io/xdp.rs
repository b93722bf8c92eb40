//! The AF_XDP backend: an XDP program on the media interface steers the
//! packets of latched legs into AF_XDP sockets; the worker re-keys each
//! frame where the kernel put it and transmits that frame.
//!
//! - **Program** (`bpf/relay.bpf.c`, built by `build.rs` with clang, loaded
//!   with aya): a hash map from (local address, UDP port) to the leg's
//!   latched peer and owning worker. A frame to a leg, from its latched
//!   peer, is redirected to the owning worker's AF_XDP socket on the queue
//!   it arrived on; everything else (ARP, ICMP, NG, SIP, unlatched legs,
//!   another source, unknown ports) passes to the kernel.
//! - **Kernel path**: every leg keeps its UDP socket, read as in the
//!   [`sockets`](super::sockets) backend: the first packets of a leg (before
//!   latching), re-latching and all policy run there; once the worker
//!   latches a leg it writes the peer into the map and the leg's packets
//!   take the fast path.
//! - **Frames**: the workers' pools are shares of one region, the UMEM
//!   ([`Pool::shares`]). A received frame
//!   becomes the packet's buffer (a view of its UDP payload), is transformed
//!   like any packet, and is sent as a transmit frame: Ethernet, IPv4 or
//!   IPv6 and UDP headers written into its headroom, checksums computed, the
//!   next hop's MAC from the kernel's routing and neighbour tables, read
//!   over rtnetlink by a resolver thread (never by the worker) and cached
//!   per destination (bounded: at the bound an entry is evicted, counted).
//!   No copy by the worker, and per round one `epoll_wait` plus, when the
//!   kernel asks for it, one wake-up `sendto`.
//! - **Queues**: every worker has an AF_XDP socket on every receive queue,
//!   so a leg's packets reach its worker on whichever queue they arrive
//!   (the NIC's hash or the sender's picks it, not the relay). The kernel
//!   lets only one fill ring feed a queue, so the sockets on a queue share
//!   it: queue `q`'s home worker (`q % workers`) fills it from its pool and
//!   reads its completion ring; the others' sockets on `q` only receive
//!   (and one of them transmits, for a worker without a queue of its own).
//!   A frame of one worker's share that another worker received into goes
//!   back to its owner through the pools' exchange once that worker
//!   transmitted it (completion) or dropped it. Each worker transmits on
//!   one socket: the one on its own queue.
//!
//! Where the fast path cannot send a packet (no route out of the XDP
//! interface, the neighbour not resolved yet, a packet larger than the MTU,
//! a full transmit ring, the next hop still being looked up), it leaves by
//! the leg's socket; the kernel then resolves the neighbour for the next
//! ones.

use super::frame::{addr_sum, ip_bytes, parse, write_headers};
use super::legs::Legs;
use super::sockets::SocketsIo;
use super::{Datagram, Io, Round, Wake};
use crate::netlink::{NextHop, Resolver};
use crate::pool::{Buf, Exchange, Pool, Region, XDP_FRAME};
use crate::stats::WorkerStats;
use crate::sys;
use aya::maps::{Array, HashMap as BpfHashMap, Map, MapData, PerCpuArray, XskMap};
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::os::fd::{AsFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use xdpilone::xdp::XdpDesc;
use xdpilone::{DeviceQueue, IfInfo, RingRx, RingTx, Socket, SocketConfig, Umem, UmemConfig, User};

/// Entries of each AF_XDP ring (fill, completion, receive, transmit). The
/// fill ring is the only buffer between the interface and a worker that is
/// late (a socket's receive buffer plays that part on the socket path):
/// 8192 frames are 100 ms of 80 000 packets/s.
const RING: u32 = 8192;

/// Frames of a worker's pool with the AF_XDP backend, at least: the fill
/// ring's share (half the pool, up to `RING`) and as many for frames being
/// re-keyed and in flight (64 MiB of frames per worker).
pub const MIN_FRAMES: usize = 2 * RING as usize;

/// Entries of the program's socket map (`XSK_SLOTS` in `bpf/relay.bpf.c`):
/// one per receive queue and worker. Queues past `XSK_SLOTS / workers`
/// get no sockets (their frames pass, counted).
const XSK_SLOTS: u32 = 4096;

/// A leg's local address, as the program's `legs` map keys it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LegKey {
    addr: [u8; 16],
    port: [u8; 2],
    family: u8,
    pad: u8,
}
// SAFETY: plain bytes, no padding (20 bytes, alignment 1).
unsafe impl aya::Pod for LegKey {}

/// A leg's latched peer (port 0: none) and owning worker.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LegVal {
    peer: [u8; 16],
    peer_port: [u8; 2],
    worker: u16,
}
// SAFETY: plain integers, no padding (20 bytes, alignment 2).
unsafe impl aya::Pod for LegVal {}

fn key_of(addr: SocketAddr) -> LegKey {
    let (a, family) = ip_bytes(addr.ip());
    LegKey { addr: a, port: addr.port().to_be_bytes(), family, pad: 0 }
}

/// Whether this build has the XDP program (clang was there).
pub const BUILT: bool = cfg!(xdp_program);

/// The compiled XDP program, aligned for the ELF parser.
#[cfg(xdp_program)]
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);
#[cfg(xdp_program)]
static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/relay.bpf.o")));

/// The XDP program attached to the media interface, shared by the workers.
pub struct Program {
    /// Keeps the program, its maps and its link: dropping it detaches the
    /// program (a bpf_link: also when the process dies).
    _ebpf: Mutex<aya::Ebpf>,
    /// The interface's index.
    pub ifindex: u32,
    /// The interface's name.
    pub ifname: String,
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its MTU.
    pub mtu: usize,
    /// Its receive queues.
    pub queues: u32,
    /// `driver` (native) or `generic` XDP.
    pub mode: &'static str,
    /// The media addresses on the interface.
    pub addrs: Vec<IpAddr>,
    legs: OwnedFd,
    /// The per-CPU counters, opened once (read at each `/metrics` scrape).
    counters: Mutex<PerCpuArray<MapData, u64>>,
    // Field order is drop order: sockets no worker took close before the
    // UMEM, and the UMEM before its region.
    /// Each worker's sockets, until its backend takes them.
    sockets: Mutex<Vec<Option<Vec<Queue>>>>,
    _umem: KeptUmem,
    region: Arc<Region>,
    exchange: Arc<Exchange>,
}

fn errno(e: xdpilone::Errno) -> io::Error {
    io::Error::from_raw_os_error(e.get_raw().abs())
}

fn map_err(e: aya::maps::MapError) -> io::Error {
    io::Error::other(e)
}

/// The interface (name, index) that holds `ip`.
fn interface_of(ip: IpAddr) -> Option<(String, u32)> {
    crate::sys::host_addrs().into_iter().find(|a| a.ip == ip).map(|a| (a.name, a.index))
}

/// The device the XDP program attaches to, the media addresses it serves,
/// and the others with why they take the socket path.
#[derive(Debug)]
#[cfg_attr(not(xdp_program), allow(dead_code))]
struct DeviceChoice {
    name: String,
    index: u32,
    served: Vec<IpAddr>,
    passed: Vec<(IpAddr, String)>,
}

/// One program serves one device (its queues, its MAC, its next hops): the
/// device that holds the most media addresses, the first one's on a tie
/// (the default interface comes first). Addresses on other devices relay
/// through their sockets, as every leg does before it latches; loopback
/// ones too (no Ethernet to write). Refused only when no media address is
/// on a device XDP can serve, or one is on no device of this host.
#[cfg_attr(not(xdp_program), allow(dead_code))]
fn choose_device(
    addrs: &[IpAddr],
    device_of: impl Fn(IpAddr) -> Option<(String, u32)>,
) -> Result<DeviceChoice, String> {
    let mut found: Vec<(IpAddr, String, u32)> = Vec::new();
    let mut passed = Vec::new();
    for &ip in addrs {
        let Some((name, index)) = device_of(ip) else {
            return Err(format!("media address {ip} is on no interface of this host"));
        };
        if ip.is_loopback() {
            passed.push((ip, "on loopback, which has no Ethernet to write".to_string()));
        } else {
            found.push((ip, name, index));
        }
    }
    let mut best: Option<(usize, &str, u32)> = None;
    for (_, name, index) in &found {
        let n = found.iter().filter(|f| f.2 == *index).count();
        if best.is_none_or(|b| n > b.0) {
            best = Some((n, name, *index));
        }
    }
    let Some((_, name, index)) = best else {
        let ip = addrs.first().ok_or("no media address")?;
        return Err(format!("media address {ip} is on loopback, which has no Ethernet to write"));
    };
    let name = name.to_string();
    let mut served = Vec::new();
    for (ip, dev, i) in &found {
        if *i == index {
            served.push(*ip);
        } else {
            passed.push((*ip, format!("on {dev}, and the program serves {name}")));
        }
    }
    Ok(DeviceChoice { name, index, served, passed })
}

/// An `ioctl` on an interface with a `struct ifreq` (name, then a 24-byte
/// union); the union's bytes after the call.
fn ifreq(name: &str, req: libc::c_ulong, data: Option<*mut libc::c_void>) -> io::Result<[u8; 24]> {
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        u: [u8; 24],
    }
    let mut r = IfReq { name: [0; 16], u: [0; 24] };
    let n = name.len().min(15);
    r.name[..n].copy_from_slice(&name.as_bytes()[..n]);
    if let Some(ptr) = data {
        r.u[..8].copy_from_slice(&(ptr as usize as u64).to_ne_bytes());
    }
    // SAFETY: a datagram socket for the ioctl, closed below.
    let s = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if s < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an ifreq the size the kernel reads and writes.
    let rc = unsafe { libc::ioctl(s, req as _, &mut r) };
    let e = io::Error::last_os_error();
    // SAFETY: the socket made above.
    unsafe { libc::close(s) };
    if rc < 0 {
        Err(e)
    } else {
        Ok(r.u)
    }
}

/// The interface's receive queues (ETHTOOL_GCHANNELS; 1 if it cannot say).
fn rx_queues(name: &str) -> u32 {
    const ETHTOOL_GCHANNELS: u32 = 0x3c;
    let mut ch = [0u32; 9];
    ch[0] = ETHTOOL_GCHANNELS;
    match ifreq(name, 0x8946, Some(ch.as_mut_ptr() as *mut libc::c_void)) {
        // rx_count (veth and others) or combined_count (most NICs).
        Ok(_) => ch[5].max(ch[8]).max(1),
        Err(_) => 1,
    }
}

impl Program {
    /// Loads the XDP program and attaches it to the interface that holds
    /// the media addresses, for `workers` workers of `frames` frames each
    /// (at least [`MIN_FRAMES`]), and opens their AF_XDP sockets.
    /// `native_only` refuses generic (SKB) XDP, which gains nothing over
    /// the socket path.
    pub fn attach(addrs: &[IpAddr], workers: usize, frames: usize, native_only: bool) -> Result<Arc<Program>, String> {
        #[cfg(not(xdp_program))]
        {
            let _ = (addrs, workers, frames, native_only);
            Err("the XDP program was not built (clang was missing when srtpgate was built)".to_string())
        }
        #[cfg(xdp_program)]
        Program::load(addrs, workers, frames, native_only)
    }

    #[cfg(xdp_program)]
    fn load(addrs: &[IpAddr], workers: usize, frames: usize, native_only: bool) -> Result<Arc<Program>, String> {
        use aya::programs::{Xdp, XdpMode};
        let choice = choose_device(addrs, interface_of)?;
        let (ifname, ifindex) = (choice.name.clone(), choice.index);
        let served = choice.served.clone();
        for (ip, why) in &choice.passed {
            tracing::warn!("xdp: media address {ip} is {why}; its legs relay through the socket path");
        }
        let hw = ifreq(&ifname, libc::SIOCGIFHWADDR, None).map_err(|e| format!("{ifname}: MAC address: {e}"))?;
        if u16::from_ne_bytes([hw[0], hw[1]]) != libc::ARPHRD_ETHER {
            return Err(format!("{ifname} is not an Ethernet interface"));
        }
        let mac = [hw[2], hw[3], hw[4], hw[5], hw[6], hw[7]];
        let mtu = ifreq(&ifname, libc::SIOCGIFMTU, None)
            .map(|u| i32::from_ne_bytes([u[0], u[1], u[2], u[3]]) as usize)
            .map_err(|e| format!("{ifname}: MTU: {e}"))?;
        let queues = rx_queues(&ifname).min(256);
        let privilege = |e: &dyn std::error::Error| {
            let mut text = e.to_string();
            let mut src = e.source();
            while let Some(s) = src {
                text = format!("{text}: {s}");
                src = s.source();
            }
            if text.contains("os error 1)") || text.contains("os error 13)") {
                text.push_str(" (loading and attaching XDP needs root: CAP_BPF, CAP_NET_ADMIN and CAP_NET_RAW)");
            }
            text
        };
        let mut ebpf = aya::Ebpf::load(&OBJECT.0).map_err(|e| privilege(&e))?;
        let prog: &mut Xdp = ebpf
            .program_mut("srtpgate_xdp")
            .ok_or("the XDP object has no srtpgate_xdp program")?
            .try_into()
            .map_err(|e| format!("srtpgate_xdp: {e}"))?;
        prog.load().map_err(|e| privilege(&e))?;
        let mode = match prog.attach_to_if_index(ifindex, XdpMode::Driver) {
            Ok(_) => "driver",
            Err(e) if native_only => return Err(format!("{ifname} has no native XDP: {e}")),
            Err(e) => {
                tracing::warn!("{ifname} has no native XDP ({e}); generic XDP is used");
                prog.attach_to_if_index(ifindex, XdpMode::Skb).map_err(|e| privilege(&e))?;
                "generic"
            }
        };
        let fd = |name: &str| -> Result<OwnedFd, String> {
            let m = ebpf.map(name).ok_or_else(|| format!("the XDP object has no map {name}"))?;
            let data = match m {
                Map::HashMap(d) | Map::Array(d) | Map::XskMap(d) | Map::PerCpuArray(d) => d,
                _ => return Err(format!("map {name} has an unexpected type")),
            };
            data.fd().as_fd().try_clone_to_owned().map_err(|e| format!("map {name}: {e}"))
        };
        let (legs, stride, xsks, counters) = (fd("legs")?, fd("workers")?, fd("xsks")?, fd("counters")?);
        let counters = MapData::from_fd(counters)
            .and_then(|d| PerCpuArray::try_from(Map::PerCpuArray(d)))
            .map_err(|e| format!("map counters: {e}"))?;
        let workers = workers.max(1) as u32;
        let mut stride: Array<_, u32> = MapData::from_fd(stride)
            .and_then(|d| Array::try_from(Map::Array(d)))
            .map_err(|e| format!("map workers: {e}"))?;
        stride.set(0, workers, 0).map_err(|e| format!("map workers: {e}"))?;
        let mut xsks: XskMap<_> = MapData::from_fd(xsks)
            .and_then(|d| XskMap::try_from(Map::XskMap(d)))
            .map_err(|e| format!("map xsks: {e}"))?;
        let (region, exchange) = Pool::shares(workers as usize, frames.max(MIN_FRAMES)).map_err(|e| {
            format!("{} MiB of AF_XDP frames: {e}", (workers as usize * frames.max(MIN_FRAMES) * XDP_FRAME) >> 20)
        })?;
        let served_queues = queues.min(XSK_SLOTS / workers).max(1);
        let (umem, sockets) = open_sockets(ifindex, &ifname, served_queues, workers, &region, &mut xsks)?;
        tracing::info!(
            "xdp: program attached to {ifname} ({mode} mode) for {}, {queues} receive queue(s), {workers} worker(s), \
             each with an AF_XDP socket on every queue",
            choice.served.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
        );
        if served_queues < queues {
            tracing::warn!(
                "xdp: {ifname} has {queues} receive queues and {workers} workers: queues {served_queues}..{} get no \
                 AF_XDP sockets ({XSK_SLOTS} at most); their frames take the kernel path",
                queues - 1
            );
        }
        Ok(Arc::new(Program {
            _ebpf: Mutex::new(ebpf),
            ifindex,
            ifname,
            mac,
            mtu,
            queues,
            mode,
            addrs: served,
            legs,
            counters: Mutex::new(counters),
            sockets: Mutex::new(sockets.into_iter().map(Some).collect()),
            _umem: KeptUmem(umem),
            region,
            exchange,
        }))
    }

    /// Worker `worker`'s share of the frames (its packet buffers).
    pub fn pool(&self, worker: usize) -> Pool {
        Pool::share(&self.region, &self.exchange, worker)
    }

    fn map(&self, fd: &OwnedFd) -> io::Result<MapData> {
        MapData::from_fd(fd.try_clone()?).map_err(map_err)
    }

    /// Frames the program redirected, and passed to the kernel because they
    /// came from another source than the latched one (or the leg had not
    /// latched), or arrived on a queue where the owning worker has no socket.
    pub fn counters(&self) -> io::Result<[u64; 3]> {
        let map = self.counters.lock().map_err(|_| io::Error::other("xdp counters lock poisoned"))?;
        let mut out = [0u64; 3];
        for (i, o) in out.iter_mut().enumerate() {
            *o = map.get(&(i as u32), 0).map_err(map_err)?.iter().sum();
        }
        Ok(out)
    }
}

/// The UMEM's registration, kept open for the sockets' life (its socket
/// holds it) and never used after start.
struct KeptUmem(#[allow(dead_code)] Umem);

// SAFETY: `Umem` is not `Send`/`Sync` only for the region pointer it keeps;
// the program never touches the UMEM after start (the region's frames are
// the pools'), it only keeps it open until it drops it.
unsafe impl Send for KeptUmem {}
// SAFETY: as for `Send`: no method of it is called through `&KeptUmem`.
unsafe impl Sync for KeptUmem {}

/// A worker's AF_XDP socket on one receive queue.
struct Queue {
    /// The queue's fill and completion rings: on its home worker's socket
    /// only (the others' sockets on the queue share them).
    device: Option<DeviceQueue>,
    rx: RingRx,
    /// On the one socket each worker transmits on.
    tx: Option<RingTx>,
    /// The bound socket (its rings hold its descriptor too).
    user: User,
}

/// The UMEM over `region` and every worker's AF_XDP socket on each of the
/// first `queues` receive queues of `ifname`, each put in `xsks` at
/// `queue * workers + worker`. The socket on queue `q` of its home worker
/// (`q % workers`) holds the queue's fill and completion rings and is bound
/// first; the other workers' sockets on `q` bind to it and share them
/// (the kernel lets one fill ring feed a queue). Worker `w` transmits on
/// its socket on queue `w % queues`: its own queue where it has one. A
/// home socket that cannot be made stops the start; another worker's
/// socket that cannot be made is left out with a warning (its frames on
/// that queue pass to the kernel, counted as `passed_queue`).
#[cfg(xdp_program)]
fn open_sockets(
    ifindex: u32,
    ifname: &str,
    queues: u32,
    workers: u32,
    region: &Arc<Region>,
    xsks: &mut XskMap<MapData>,
) -> Result<(Umem, Vec<Vec<Queue>>), String> {
    let cfg = UmemConfig { fill_size: RING, complete_size: RING, frame_size: XDP_FRAME as u32, headroom: 0, flags: 0 };
    let area = region.bytes();
    // SAFETY: the region is page-aligned and mapped while the program
    // holds it, which it does longer than the UMEM (field order).
    let umem = unsafe { Umem::new(cfg, area) }.map_err(|e| format!("AF_XDP UMEM: {}", errno(e)))?;
    let mut all: Vec<Vec<Queue>> = (0..workers).map(|_| Vec::new()).collect();
    // Only the UMEM's own socket names bind flags: the kernel refuses them
    // on a socket that shares the UMEM (it takes them from the UMEM's).
    let rings = |tx: bool, first: bool| SocketConfig {
        rx_size: NonZeroU32::new(RING),
        tx_size: if tx { NonZeroU32::new(RING) } else { None },
        bind_flags: if first { SocketConfig::XDP_BIND_NEED_WAKEUP } else { 0 },
    };
    let made = |user: User, device: Option<DeviceQueue>, tx: bool| -> Result<Queue, xdpilone::Errno> {
        let rx = user.map_rx()?;
        let tx = if tx { Some(user.map_tx()?) } else { None };
        Ok(Queue { device, rx, tx, user })
    };
    for q in 0..queues {
        let home = q % workers;
        let mut info = IfInfo::invalid();
        info.from_ifindex(ifindex).map_err(|e| format!("{ifname}: {}", errno(e)))?;
        info.set_queue(q);
        let at = |e: xdpilone::Errno| format!("AF_XDP socket on {ifname} queue {q}: {}", errno(e));
        let sock = if q == 0 { Socket::with_shared(&info, &umem) } else { Socket::new(&info) }.map_err(at)?;
        let device = umem.fq_cq(&sock).map_err(at)?;
        let user = umem.rx_tx(&sock, &rings(home % queues == q, q == 0)).map_err(at)?;
        umem.bind(&user).map_err(at)?;
        xsks.set(q * workers + home, user.as_raw_fd(), 0).map_err(|e| format!("map xsks: {e}"))?;
        for w in (0..workers).filter(|&w| w != home) {
            let tx = w % queues == q;
            let guest = Socket::new(&info)
                .and_then(|s| umem.rx_tx(&s, &rings(tx, false)))
                .and_then(|user| device.bind(&user).map(|()| user))
                .and_then(|user| made(user, None, tx));
            match guest {
                Ok(g) => {
                    xsks.set(q * workers + w, g.user.as_raw_fd(), 0).map_err(|e| format!("map xsks: {e}"))?;
                    all[w as usize].push(g);
                }
                Err(e) => tracing::warn!(
                    "xdp: worker {w} has no AF_XDP socket on {ifname} queue {q} ({}); its legs' frames arriving \
                     there take the kernel path",
                    errno(e)
                ),
            }
        }
        all[home as usize].push(made(user, Some(device), home % queues == q).map_err(at)?);
    }
    Ok((umem, all))
}

/// A destination's next-hop MAC as the resolver last said ([`None`]: not
/// through the XDP interface, or not resolved yet), until when that holds,
/// and whether the resolver has been asked again.
#[derive(Clone, Copy)]
struct Hop {
    mac: Option<[u8; 6]>,
    until_ns: u64,
    asked: bool,
}

/// Destinations whose next hop a worker keeps: a relay with more peers
/// than this evicts entries (counted) and asks again when they send.
const MAX_HOPS: usize = 16_384;
/// How long a next hop is taken as known.
const KNOWN_NS: u64 = 5_000_000_000;
/// How soon an unresolved neighbour is asked about again.
const UNKNOWN_NS: u64 = 200_000_000;

/// The MAC a leg's packets were last sent to, and for which destination.
#[derive(Clone, Copy)]
struct LegHop {
    to: SocketAddr,
    mac: [u8; 6],
    /// The UDP pseudo-header's address words, summed (see [`addr_sum`]).
    addr_sum: u64,
    until_ns: u64,
}

/// The AF_XDP backend of one worker.
pub struct XdpIo {
    /// The worker's sockets, one per receive queue.
    queues: Vec<Queue>,
    /// The one of `queues` that transmits (none: every packet leaves by
    /// its leg's socket).
    tx: Option<usize>,
    inner: SocketsIo,
    prog: Arc<Program>,
    worker: u16,
    legs: BpfHashMap<MapData, LegKey, LegVal>,
    /// A leg socket's local address, by token, where it is on the XDP
    /// interface.
    locals: Vec<Option<SocketAddr>>,
    /// The legs' tokens, looked up for every received frame.
    leg_tokens: Legs,
    /// Per token: the last destination's next-hop MAC (no hashing per packet).
    leg_hops: Vec<Option<LegHop>>,
    /// Destination → next hop's MAC through the XDP interface (5 s; 0.2 s
    /// while unresolved), at most [`MAX_HOPS`].
    hops: HashMap<IpAddr, Hop>,
    /// Looks up what `hops` misses, on its own thread.
    resolver: Resolver,
    pitch: u64,
    fill_target: u32,
    /// Transmit descriptors of this round, committed in [`Io::flush`].
    staged: Vec<XdpDesc>,
    ip_id: u16,
    now_ns: u64,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC at `now_ns`: turns the
    /// program's receive times into the worker's clock.
    mono_to_real: u64,
    /// When the sockets' drop counters are read next.
    sample_ns: u64,
    stats: Arc<WorkerStats>,
}

impl XdpIo {
    /// The backend of worker `worker`, whose packet buffers are `pool`
    /// (its share of the program's frames, [`Program::pool`]): takes the
    /// worker's AF_XDP sockets from the program.
    pub fn new(prog: Arc<Program>, worker: usize, pool: &Pool, stats: Arc<WorkerStats>) -> io::Result<XdpIo> {
        let mut inner = SocketsIo::new(stats.clone())?;
        let legs = BpfHashMap::try_from(Map::HashMap(prog.map(&prog.legs)?)).map_err(map_err)?;
        let queues = prog
            .sockets
            .lock()
            .map_err(|_| io::Error::other("xdp sockets lock poisoned"))?
            .get_mut(worker)
            .and_then(Option::take)
            .ok_or_else(|| io::Error::other(format!("xdp: no AF_XDP sockets for worker {worker}")))?;
        for q in &queues {
            inner.watch(q.user.as_raw_fd())?;
        }
        let homes = queues.iter().filter(|q| q.device.is_some()).count();
        let fill_target = if homes == 0 { 0 } else { RING.min((pool.size() / (2 * homes)) as u32) };
        Ok(XdpIo {
            tx: queues.iter().position(|q| q.tx.is_some()),
            queues,
            inner,
            worker: worker as u16,
            legs,
            locals: Vec::new(),
            leg_tokens: Legs::new(),
            leg_hops: Vec::new(),
            hops: HashMap::new(),
            resolver: Resolver::start(prog.ifindex, format!("xdp-resolver-{worker}"))?,
            pitch: pool.pitch() as u64,
            fill_target,
            staged: Vec::with_capacity(RING as usize),
            ip_id: 0,
            now_ns: sys::now_ns(),
            mono_to_real: 0,
            sample_ns: 0,
            stats,
            prog,
        })
    }

    /// Frames the kernel finished sending go back to their pools: this
    /// worker's, or (through the exchange) another's, whose frame one of
    /// the queue's sockets sent; then the frames others gave back return.
    fn reap(&mut self, pool: &mut Pool) {
        for q in &mut self.queues {
            let Some(device) = q.device.as_mut() else { continue };
            if device.available() == 0 {
                continue;
            }
            let mut c = device.complete(RING);
            while let Some(addr) = c.read() {
                pool.put_frame((addr / self.pitch) as u32);
            }
            c.release();
        }
        pool.reclaim();
    }

    /// Tops up the fill rings of the worker's own queues from the pool.
    fn refill(&mut self, pool: &mut Pool) {
        for q in &mut self.queues {
            let Some(device) = q.device.as_mut() else { continue };
            let want = self.fill_target.saturating_sub(device.pending());
            if want == 0 {
                continue;
            }
            let pitch = self.pitch;
            // One frame per reserved slot, never one more (`insert` with an
            // iterator pulls an item before it finds the ring full, and that
            // frame would be lost); reserve again while a reservation comes
            // back short (see `flush`).
            let mut n = 0;
            while n < want {
                let mut w = device.fill(want - n);
                let mut k = 0;
                while k < w.capacity() {
                    let Some(b) = pool.take() else { break };
                    w.insert_once(u64::from(Pool::release(b)) * pitch);
                    k += 1;
                }
                w.commit();
                if k == 0 {
                    break;
                }
                n += k;
            }
            if n > 0 && device.needs_wakeup() {
                device.wake();
                self.stats.syscall();
            }
        }
    }

    /// A received frame into a datagram (its UDP payload, in place).
    fn frame_in(&mut self, desc: XdpDesc, pool: &mut Pool, out: &mut Vec<Datagram>) {
        let frame = (desc.addr / self.pitch) as u32;
        let off = (desc.addr % self.pitch) as usize;
        let Some(mut buf) = pool.frame_buf(frame, off) else {
            tracing::debug!("xdp: a frame outside the UMEM ({})", desc.addr);
            return;
        };
        let parsed = parse(&buf[..(desc.len as usize).min(buf.len())]);
        let tok = parsed.and_then(|(_, _, _, dst)| self.leg_tokens.get(dst));
        let rx_ns = take_rx_meta(&mut buf).map(|mono| mono.wrapping_add(self.mono_to_real)).unwrap_or(self.now_ns);
        match (parsed, tok) {
            (Some((hdr, len, from, _)), Some(tok)) if buf.advance(hdr) => {
                out.push(Datagram { buf, len, tok, from: Some(from), rx_ns: Some(rx_ns), truncated: false });
            }
            _ => {
                // A leg removed while its frame was in flight.
                self.stats.stray();
                pool.put(buf);
            }
        }
    }

    /// Copies the kernel's drop counters of the AF_XDP sockets into the
    /// worker's counters, once a second.
    fn sample(&mut self) {
        if self.now_ns < self.sample_ns {
            return;
        }
        self.sample_ns = self.now_ns + 1_000_000_000;
        let mut sum = [0u64; 4];
        for q in &self.queues {
            if let Ok(st) = q.user.statistics_v2() {
                for (s, v) in sum.iter_mut().zip([
                    st.rx_dropped,
                    st.rx_ring_full,
                    st.rx_fill_ring_empty_descs,
                    st.tx_invalid_descs,
                ]) {
                    *s += v;
                }
            }
            self.stats.syscall();
        }
        for (a, v) in self.stats.xdp_socket_drops.iter().zip(sum) {
            a.store(v, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The next hop's MAC toward `to` for the leg of `tok`, when it leaves
    /// by the XDP interface: from the leg's own cache, else the per
    /// destination cache, which the resolver thread fills (asked here, read
    /// on a later call: the worker never waits for rtnetlink). An entry past
    /// its time is still used while the resolver is asked again.
    /// Also returns the sum of the pseudo-header's addresses, kept with it.
    fn next_hop(&mut self, tok: u32, from: SocketAddr, to: SocketAddr) -> Option<([u8; 6], u64)> {
        if let Some(Some(h)) = self.leg_hops.get(tok as usize) {
            if h.to == to && h.until_ns > self.now_ns {
                return Some((h.mac, h.addr_sum));
            }
        }
        let now = self.now_ns;
        for (dst, hop) in self.resolver.answers() {
            let (mac, ttl) = match hop {
                NextHop::Mac(mac) => (Some(mac), KNOWN_NS),
                // Asked again soon: the kernel resolves it as this
                // destination's packets leave by the socket.
                NextHop::Unresolved => (None, UNKNOWN_NS),
                NextHop::Elsewhere => (None, KNOWN_NS),
            };
            keep_hop(&mut self.hops, &self.stats, dst, Hop { mac, until_ns: now + ttl, asked: false });
        }
        let ip = to.ip();
        let mac = match self.hops.get_mut(&ip) {
            Some(h) => {
                if h.until_ns <= now && !h.asked {
                    h.asked = self.resolver.ask(ip);
                }
                h.mac
            }
            None => {
                // Asked once; until the answer, the packets leave by the socket.
                if self.resolver.ask(ip) {
                    keep_hop(
                        &mut self.hops,
                        &self.stats,
                        ip,
                        Hop { mac: None, until_ns: now + UNKNOWN_NS, asked: true },
                    );
                }
                None
            }
        }?;
        let i = tok as usize;
        if self.leg_hops.len() <= i {
            self.leg_hops.resize(i + 1, None);
        }
        let sum = addr_sum(from.ip(), to.ip());
        self.leg_hops[i] = Some(LegHop { to, mac, addr_sum: sum, until_ns: now + KNOWN_NS });
        Some((mac, sum))
    }
}

/// Puts `dst`'s next hop in `hops`, making room at [`MAX_HOPS`] by evicting
/// an entry (any: a peer evicted is asked about again when it sends),
/// counted in `stats`.
fn keep_hop(hops: &mut HashMap<IpAddr, Hop>, stats: &WorkerStats, dst: IpAddr, hop: Hop) {
    if !hops.contains_key(&dst) && hops.len() >= MAX_HOPS {
        if let Some(old) = hops.keys().next().copied() {
            hops.remove(&old);
            stats.xdp_hop_evicted();
        }
    }
    hops.insert(dst, hop);
}

impl Io for XdpIo {
    fn name(&self) -> &'static str {
        "xdp"
    }

    fn waker(&self) -> Arc<dyn Wake> {
        self.inner.waker()
    }

    fn add(&mut self, tok: u32, fd: RawFd) -> io::Result<()> {
        self.inner.add(tok, fd)?;
        // SAFETY: the worker's socket, open for this call.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let local = socket2::SockRef::from(&borrowed).local_addr()?.as_socket();
        let Some(local) = local.filter(|l| self.prog.addrs.contains(&l.ip())) else { return Ok(()) };
        let i = tok as usize;
        if self.locals.len() <= i {
            self.locals.resize(i + 1, None);
        }
        // A leg the map cannot take (full) keeps the socket path only.
        let unlatched = LegVal { worker: self.worker, ..LegVal::default() };
        if let Err(e) = self.legs.insert(key_of(local), unlatched, 0) {
            tracing::warn!("xdp: {local} stays on the socket path: the program's leg map refused it ({e})");
            return Ok(());
        }
        self.locals[i] = Some(local);
        self.leg_tokens.insert(local, tok);
        Ok(())
    }

    fn remove(&mut self, tok: u32, fd: RawFd) {
        self.inner.remove(tok, fd);
        if let Some(local) = self.locals.get_mut(tok as usize).and_then(Option::take) {
            self.leg_tokens.remove(local);
            let _ = self.legs.remove(&key_of(local));
        }
        if let Some(h) = self.leg_hops.get_mut(tok as usize) {
            *h = None;
        }
    }

    fn latch(&mut self, tok: u32, peer: Option<SocketAddr>) {
        let Some(Some(local)) = self.locals.get(tok as usize).copied() else { return };
        let mut v = LegVal { worker: self.worker, ..LegVal::default() };
        if let Some(p) = peer.filter(|p| p.is_ipv4() == local.is_ipv4()) {
            v.peer = ip_bytes(p.ip()).0;
            v.peer_port = p.port().to_be_bytes();
        }
        self.stats.syscall();
        if let Err(e) = self.legs.insert(key_of(local), v, 0) {
            tracing::warn!("xdp: cannot update the leg of {local}: {e}");
        }
    }

    fn wait(&mut self, idle: std::time::Duration, room: usize, pool: &mut Pool, out: &mut Vec<Datagram>) -> Round {
        self.reap(pool);
        self.refill(pool);
        let waiting = self.queues.iter().any(|q| q.rx.available() > 0);
        let idle = if waiting { std::time::Duration::ZERO } else { idle };
        let mut round = self.inner.wait(idle, room, pool, out);
        self.now_ns = sys::now_ns();
        self.mono_to_real = self.now_ns.wrapping_sub(sys::monotonic_ns());
        for qi in 0..self.queues.len() {
            let want = room.saturating_sub(out.len()) as u32;
            if want == 0 {
                break;
            }
            let mut descs = [XdpDesc { addr: 0, len: 0, options: 0 }; 256];
            let mut n = 0;
            {
                let q = &mut self.queues[qi];
                let mut r = q.rx.receive(want.min(256));
                while let Some(d) = r.read() {
                    descs[n] = d;
                    n += 1;
                }
                r.release();
            }
            for d in &descs[..n] {
                self.frame_in(*d, pool, out);
            }
        }
        round.more |= self.queues.iter().any(|q| q.rx.available() > 0);
        self.refill(pool);
        self.sample();
        round
    }

    fn send(&mut self, tok: u32, fd: RawFd, msgs: &[(&[u8], SocketAddr)]) -> usize {
        self.inner.send(tok, fd, msgs)
    }

    fn frames(&self) -> bool {
        !self.queues.is_empty()
    }

    fn transmit(&mut self, tok: u32, mut buf: Buf, len: usize, to: SocketAddr) -> Result<(), Buf> {
        let Some(Some(from)) = self.locals.get(tok as usize).copied() else { return Err(buf) };
        let Some(tx) = self.tx.and_then(|i| self.queues[i].tx.as_ref()) else { return Err(buf) };
        if from.is_ipv4() != to.is_ipv4() {
            return Err(buf);
        }
        let l3 = if from.is_ipv4() { 20 } else { 40 };
        let hdr = 14 + l3 + 8;
        if l3 + 8 + len > self.prog.mtu || tx.pending() as usize + self.staged.len() >= RING as usize {
            return Err(buf);
        }
        let Some((mac, sum)) = self.next_hop(tok, from, to) else { return Err(buf) };
        self.ip_id = self.ip_id.wrapping_add(1);
        let (src_mac, id) = (self.prog.mac, self.ip_id);
        let Some(f) = buf.with_front(hdr) else { return Err(buf) };
        if f.len() < hdr + len {
            return Err(buf);
        }
        write_headers(f, mac, src_mac, from, to, sum, len, id);
        let addr = u64::from(buf.frame()) * self.pitch + (buf.offset() - hdr) as u64;
        Pool::release(buf);
        self.staged.push(XdpDesc { addr, len: (hdr + len) as u32, options: 0 });
        Ok(())
    }

    fn flush(&mut self, pool: &mut Pool) {
        if self.staged.is_empty() {
            return;
        }
        let Some(q) = self.tx.and_then(|i| self.queues[i].tx.as_mut()) else { return };
        // A reservation may come back short while the ring has room (it
        // reads the kernel's consumer index only when its cached view is
        // empty): reserve again until all are in or the ring is full.
        let mut n = 0u32;
        while (n as usize) < self.staged.len() {
            let mut w = q.transmit((self.staged.len() - n as usize) as u32);
            let k = w.insert(self.staged[n as usize..].iter().copied());
            w.commit();
            if k == 0 {
                break;
            }
            n += k;
        }
        // Room was checked for each frame; any not taken is lost, counted.
        for d in self.staged.drain(n as usize..) {
            pool.put_frame((d.addr / self.pitch) as u32);
            self.stats.send_failed();
        }
        self.staged.clear();
        // In copy mode (veth, drivers without zero-copy) each `sendto`
        // sends at most 32 frames and says EAGAIN while more wait: kick
        // until the kernel took the round's frames.
        for _ in 0..RING / 16 {
            if q.pending() == 0 || !q.needs_wakeup() {
                break;
            }
            // SAFETY: a zero-length send on the AF_XDP socket the ring belongs to.
            let r =
                unsafe { libc::sendto(q.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
            self.stats.syscall();
            if r < 0 {
                let e = io::Error::last_os_error().raw_os_error();
                if e != Some(libc::EAGAIN) {
                    break;
                }
            }
        }
        self.stats.send_call();
    }
}

/// The receive time (CLOCK_MONOTONIC ns) the XDP program put in front of a
/// frame (`struct rx_meta` in `bpf/relay.bpf.c`), cleared as it is read so
/// that a reused frame never shows a leftover one; `None` without it.
fn take_rx_meta(buf: &mut Buf) -> Option<u64> {
    const MAGIC: u32 = 0x5352_4754;
    let front = buf.with_front(16)?;
    let magic = u32::from_ne_bytes(front[12..16].try_into().expect("4 bytes"));
    if magic != MAGIC {
        return None;
    }
    front[12..16].fill(0);
    Some(u64::from_ne_bytes(front[..8].try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The program's receive time is read once: the worker clears it, so a
    /// frame that comes back without one never shows the last packet's.
    #[test]
    fn a_frames_receive_time_is_read_once() {
        let mut pool = Pool::with_headroom(4);
        let mut buf = pool.take().expect("a frame");
        assert_eq!(take_rx_meta(&mut buf), None, "a fresh frame has no time");
        let front = buf.with_front(16).expect("headroom");
        front[..8].copy_from_slice(&123_456_789u64.to_ne_bytes());
        front[12..16].copy_from_slice(&0x5352_4754u32.to_ne_bytes());
        assert_eq!(take_rx_meta(&mut buf), Some(123_456_789));
        assert_eq!(take_rx_meta(&mut buf), None, "cleared as read");
        pool.put(buf);
    }

    /// Two networks on two devices: the program serves the device with
    /// more media addresses (the first one's on a tie); the rest, loopback
    /// included, are named with why they take the socket path.
    #[test]
    fn one_device_is_served_and_the_others_are_named() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let device_of = |a: IpAddr| match a.to_string().as_str() {
            "198.18.1.1" => Some(("priv0".to_string(), 2)),
            "198.18.2.1" | "2001:db8::1" => Some(("pub0".to_string(), 3)),
            "127.0.0.1" => Some(("lo".to_string(), 1)),
            _ => None,
        };
        let c = choose_device(&[ip("198.18.1.1"), ip("198.18.2.1"), ip("2001:db8::1")], device_of).unwrap();
        assert_eq!((c.name.as_str(), c.index), ("pub0", 3));
        assert_eq!(c.served, [ip("198.18.2.1"), ip("2001:db8::1")]);
        assert_eq!(c.passed.len(), 1);
        assert_eq!(c.passed[0].0, ip("198.18.1.1"));
        assert!(c.passed[0].1.contains("on priv0, and the program serves pub0"), "{:?}", c.passed);

        let c = choose_device(&[ip("198.18.1.1"), ip("198.18.2.1"), ip("127.0.0.1")], device_of).unwrap();
        assert_eq!(c.name, "priv0", "a tie goes to the first (default) interface's device");
        assert!(c.passed.iter().any(|(a, why)| *a == ip("127.0.0.1") && why.contains("loopback")));

        let e = choose_device(&[ip("127.0.0.1")], device_of).unwrap_err();
        assert!(e.contains("loopback"), "{e}");
        let e = choose_device(&[ip("198.18.1.1"), ip("192.0.2.9")], device_of).unwrap_err();
        assert!(e.contains("192.0.2.9 is on no interface"), "{e}");
    }

    /// However many peers send, the next-hop cache stays at its bound, and
    /// each entry it gives up is counted.
    #[test]
    fn next_hops_are_bounded_and_evictions_counted() {
        let stats = WorkerStats::new();
        let mut hops = HashMap::new();
        let hop = Hop { mac: Some([2; 6]), until_ns: 1, asked: false };
        for i in 0..MAX_HOPS as u32 + 10 {
            keep_hop(&mut hops, &stats, IpAddr::from(std::net::Ipv4Addr::from(0xc612_0000 + i)), hop);
        }
        assert_eq!(hops.len(), MAX_HOPS);
        assert_eq!(stats.xdp_hops_evicted.load(std::sync::atomic::Ordering::Relaxed), 10);
        // An entry already there is replaced, not counted.
        let known = *hops.keys().next().expect("one");
        keep_hop(&mut hops, &stats, known, hop);
        assert_eq!(stats.xdp_hops_evicted.load(std::sync::atomic::Ordering::Relaxed), 10);
    }

    #[test]
    fn keys_match_the_program_layout() {
        assert_eq!(std::mem::size_of::<LegKey>(), 20);
        assert_eq!(std::mem::size_of::<LegVal>(), 20);
        let k = key_of("198.18.0.2:30000".parse().expect("addr"));
        assert_eq!((&k.addr[..4], k.port, k.family), (&[198u8, 18, 0, 2][..], [0x75, 0x30], 4));
    }
}
