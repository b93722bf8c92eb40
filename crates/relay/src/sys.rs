//! Batched UDP system calls: `recvmmsg` with kernel receive timestamps and
//! `sendmmsg`, on Linux; and the open-file limit the media sockets count
//! against.
//!
//! Written by hand on `libc` because neither std nor the socket crates offer
//! `recvmmsg`/`sendmmsg` over caller-owned buffers without allocating per
//! call (`nix`'s wrapper builds its headers per call; `quinn-udp` sends GSO
//! segments to one destination only). This is the only unsafe code of the
//! relay; every block says why it is sound.

use socket2::SockAddr;
use std::io;
use std::mem::{size_of, zeroed};
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Most packets one call receives or sends.
pub const BATCH: usize = 32;

/// Room for one SCM_TIMESTAMPNS control message (a timespec), aligned.
const CMSG_SPACE: usize = 64;

/// One received datagram.
#[derive(Clone, Copy, Debug)]
pub struct Received {
    /// Bytes in the buffer.
    pub len: usize,
    /// The sender.
    pub from: Option<SocketAddr>,
    /// The kernel's receive time (CLOCK_REALTIME, ns), when it gave one.
    pub rx_ns: Option<u64>,
    /// The datagram was larger than the buffer.
    pub truncated: bool,
}

/// Scratch space for `recvmmsg`, reused for every call (no allocation per call).
pub struct RecvScratch {
    hdrs: [libc::mmsghdr; BATCH],
    iovs: [libc::iovec; BATCH],
    addrs: [libc::sockaddr_storage; BATCH],
    cmsgs: [[u64; CMSG_SPACE / 8]; BATCH],
}

// SAFETY: the raw pointers inside are only ever set to point at memory the
// current call borrows, and are not used after the call returns.
unsafe impl Send for RecvScratch {}

impl RecvScratch {
    /// Zeroed scratch space.
    pub fn new() -> Box<RecvScratch> {
        // SAFETY: every field is plain old data for which all-zero bytes are
        // a valid value (null pointers, zero lengths).
        Box::new(unsafe { zeroed() })
    }
}

/// Turns on kernel receive timestamps (SO_TIMESTAMPNS) for a socket.
pub fn enable_timestamps(fd: RawFd) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: a valid option pointer and length for an int option.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            &on as *const libc::c_int as *const libc::c_void,
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Receives up to `bufs.len()` (at most [`BATCH`]) datagrams without blocking
/// into `bufs`, describing each in `out`. Returns how many arrived (0 when
/// none was waiting).
pub fn recv_batch<B: std::ops::DerefMut<Target = [u8]>>(
    fd: RawFd,
    s: &mut RecvScratch,
    bufs: &mut [B],
    out: &mut [Received],
) -> io::Result<usize> {
    let n = bufs.len().min(out.len()).min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    for (i, buf) in bufs.iter_mut().take(n).enumerate() {
        s.iovs[i] = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
        let h = &mut s.hdrs[i];
        h.msg_hdr.msg_name = &mut s.addrs[i] as *mut libc::sockaddr_storage as *mut libc::c_void;
        h.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        h.msg_hdr.msg_iov = &mut s.iovs[i];
        h.msg_hdr.msg_iovlen = 1;
        h.msg_hdr.msg_control = s.cmsgs[i].as_mut_ptr() as *mut libc::c_void;
        h.msg_hdr.msg_controllen = CMSG_SPACE as _;
        h.msg_hdr.msg_flags = 0;
        h.msg_len = 0;
    }
    // SAFETY: the first n headers point at n live iovecs over n buffers of
    // the stated lengths, n address slots and n control buffers, all borrowed
    // mutably for the duration of the call.
    let r =
        unsafe { libc::recvmmsg(fd, s.hdrs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::WouldBlock { Ok(0) } else { Err(e) };
    }
    let got = r as usize;
    for i in 0..got {
        let h = &s.hdrs[i];
        // SAFETY: the kernel filled msg_namelen bytes of a sockaddr_storage.
        let from = unsafe { SockAddr::new(s.addrs[i], h.msg_hdr.msg_namelen) }.as_socket();
        out[i] = Received {
            len: (h.msg_len as usize).min(bufs[i].len()),
            from,
            rx_ns: {
                let mut control = [0u8; CMSG_SPACE];
                for (b, w) in control.chunks_exact_mut(8).zip(s.cmsgs[i].iter()) {
                    b.copy_from_slice(&w.to_ne_bytes());
                }
                control_timestamp_ns(&control[..h.msg_hdr.msg_controllen.min(CMSG_SPACE)])
            },
            truncated: h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0,
        };
    }
    Ok(got)
}

/// The SCM_TIMESTAMPNS time in a buffer of control messages (as the kernel
/// writes them after `recvmsg`), in ns since the epoch. Parsed from the
/// bytes, so any alignment of the buffer will do (an io_uring buffer ring
/// hands them at an offset).
pub fn control_timestamp_ns(mut c: &[u8]) -> Option<u64> {
    const W: usize = std::mem::size_of::<usize>();
    let align = |n: usize| n.div_ceil(W) * W;
    let hdr = std::mem::size_of::<libc::cmsghdr>();
    while c.len() >= hdr {
        let len = usize::from_ne_bytes(c[..W].try_into().ok()?);
        let level = i32::from_ne_bytes(c[W..W + 4].try_into().ok()?);
        let kind = i32::from_ne_bytes(c[W + 4..W + 8].try_into().ok()?);
        if len < hdr || len > c.len() {
            return None;
        }
        if level == libc::SOL_SOCKET && kind == libc::SCM_TIMESTAMPNS && len >= hdr + 16 {
            let d = &c[align(hdr)..];
            let sec = i64::from_ne_bytes(d[..8].try_into().ok()?);
            let nsec = i64::from_ne_bytes(d[8..16].try_into().ok()?);
            return Some((sec as u64).wrapping_mul(1_000_000_000).wrapping_add(nsec as u64));
        }
        c = c.get(align(len)..)?;
    }
    None
}

/// Scratch space for `sendmmsg`.
pub struct SendScratch {
    hdrs: [libc::mmsghdr; BATCH],
    iovs: [libc::iovec; BATCH],
    addrs: [SockAddr; BATCH],
}

// SAFETY: as for RecvScratch: pointers are set per call and not kept.
unsafe impl Send for SendScratch {}

impl SendScratch {
    /// Empty scratch space.
    pub fn new() -> Box<SendScratch> {
        let unspecified = SockAddr::from(SocketAddr::from(([0, 0, 0, 0], 0)));
        Box::new(SendScratch {
            // SAFETY: mmsghdr and iovec are plain old data; all-zero is valid.
            hdrs: unsafe { zeroed() },
            iovs: unsafe { zeroed() },
            addrs: std::array::from_fn(|_| unspecified.clone()),
        })
    }
}

/// Sends each `(bytes, to)` of `msgs` (at most [`BATCH`]) with one system
/// call. Returns how many the kernel took; the caller retries the rest or
/// counts them as dropped.
pub fn send_batch(fd: RawFd, s: &mut SendScratch, msgs: &[(&[u8], SocketAddr)]) -> io::Result<usize> {
    let n = msgs.len().min(BATCH);
    if n == 0 {
        return Ok(0);
    }
    for (i, (bytes, to)) in msgs.iter().take(n).enumerate() {
        s.addrs[i] = SockAddr::from(*to);
        s.iovs[i] = libc::iovec { iov_base: bytes.as_ptr() as *mut libc::c_void, iov_len: bytes.len() };
        let h = &mut s.hdrs[i];
        h.msg_hdr.msg_name = s.addrs[i].as_ptr() as *mut libc::c_void;
        h.msg_hdr.msg_namelen = s.addrs[i].len();
        h.msg_hdr.msg_iov = &mut s.iovs[i];
        h.msg_hdr.msg_iovlen = 1;
        h.msg_hdr.msg_control = std::ptr::null_mut();
        h.msg_hdr.msg_controllen = 0;
        h.msg_hdr.msg_flags = 0;
        h.msg_len = 0;
    }
    // SAFETY: the first n headers point at n live iovecs over the borrowed
    // byte slices (only read by the kernel) and n socket addresses.
    let r = unsafe { libc::sendmmsg(fd, s.hdrs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// CLOCK_MONOTONIC now, ns (the clock of `bpf_ktime_get_ns`).
#[inline]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid pointer to a timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The time now, CLOCK_REALTIME ns since the UNIX epoch (the clock of the
/// kernel's receive timestamps).
#[inline]
pub fn now_ns() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Opens `path` for reading without following a link in its last
/// component (`O_NOFOLLOW`: a link there is an error).
pub fn open_nofollow(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

/// The soft and hard limits on open files (RLIMIT_NOFILE).
pub fn nofile_limit() -> (u64, u64) {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the valid rlimit struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        (lim.rlim_cur, lim.rlim_max)
    } else {
        (u64::MAX, u64::MAX)
    }
}

/// Lifts the soft limit on open files to the hard limit; the limit after.
pub fn raise_nofile_limit() -> u64 {
    let (cur, max) = nofile_limit();
    if cur < max {
        let want = libc::rlimit { rlim_cur: max, rlim_max: max };
        // SAFETY: setrlimit reads the valid rlimit struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } != 0 {
            tracing::warn!("cannot raise the open-file limit above {cur}");
        }
    }
    nofile_limit().0
}

/// Files this process has open now (entries of /proc/self/fd).
pub fn open_files() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/fd")?.count())
}

/// The CPUs this process may run on, in order (empty when they cannot be
/// read).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the call writes at
    // most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if r != 0 {
        return Vec::new();
    }
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to `cpu`.
pub fn pin_to(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::other(format!("CPU {cpu} is beyond the CPU set")));
    }
    // SAFETY: as above; `cpu` is inside the set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes the calling thread yield to the media workers on a shared core:
/// `SCHED_BATCH` (its wake-ups do not preempt a running thread) at nice
/// `nice` (Linux applies both to the thread alone), so that a worker woken
/// by packets runs at once. For helper threads whose work can wait (the
/// recorder).
pub fn yield_to_media(nice: i32) -> std::io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` lives across the call; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &param) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: no pointers; a thread id names that thread alone.
    let tid = unsafe { libc::gettid() };
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn a_thread_that_yields_to_media_is_batch_at_a_lower_priority() {
        std::thread::spawn(|| {
            yield_to_media(10).expect("an unprivileged thread may lower its own priority");
            // SAFETY: no pointers; 0 and the thread id name this thread.
            let (policy, nice) =
                unsafe { (libc::sched_getscheduler(0), libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as u32)) };
            assert_eq!((policy, nice), (libc::SCHED_BATCH, 10));
        })
        .join()
        .expect("the thread");
        // The caller's thread is untouched (SAFETY: no pointers).
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
    }

    #[test]
    fn batch_round_trip_with_timestamps() {
        let a = UdpSocket::bind("127.0.0.1:0").expect("bind");
        let b = UdpSocket::bind("127.0.0.1:0").expect("bind");
        enable_timestamps(b.as_raw_fd()).expect("SO_TIMESTAMPNS");
        let to = b.local_addr().expect("addr");
        let payloads: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 10 + i as usize]).collect();
        let msgs: Vec<(&[u8], SocketAddr)> = payloads.iter().map(|p| (&p[..], to)).collect();
        let mut ss = SendScratch::new();
        let before = now_ns();
        assert_eq!(send_batch(a.as_raw_fd(), &mut ss, &msgs).expect("sendmmsg"), 5);
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut rs = RecvScratch::new();
        let mut bufs: Vec<Vec<u8>> = (0..8).map(|_| vec![0u8; 16]).collect();
        let mut out = [Received { len: 0, from: None, rx_ns: None, truncated: false }; 8];
        let n = recv_batch(b.as_raw_fd(), &mut rs, &mut bufs, &mut out).expect("recvmmsg");
        assert_eq!(n, 5);
        for i in 0..5 {
            let want = (10 + i).min(16);
            assert_eq!(out[i].len, want);
            assert_eq!(&bufs[i][..want], &payloads[i][..want]);
            assert_eq!(out[i].from, Some(a.local_addr().expect("addr")));
            let ts = out[i].rx_ns.expect("kernel timestamp");
            assert!(ts + 1_000_000 >= before && ts <= now_ns(), "timestamp {ts} outside the test");
            assert!(!out[i].truncated);
        }
        // Nothing more waiting: 0, not an error.
        assert_eq!(recv_batch(b.as_raw_fd(), &mut rs, &mut bufs, &mut out).expect("empty"), 0);
        // A datagram larger than the buffer is flagged.
        a.send_to(&[7u8; 40], to).expect("send");
        std::thread::sleep(std::time::Duration::from_millis(10));
        let n = recv_batch(b.as_raw_fd(), &mut rs, &mut bufs[..1], &mut out).expect("recv");
        assert_eq!((n, out[0].len, out[0].truncated), (1, 16, true));
    }

    #[test]
    fn a_thread_is_pinned_to_an_allowed_cpu() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty(), "the process runs on some CPU");
        let last = *cpus.last().expect("one");
        let now = std::thread::spawn(move || {
            pin_to(last).expect("pin");
            allowed_cpus()
        })
        .join()
        .expect("thread");
        assert_eq!(now, vec![last]);
        assert!(pin_to(libc::CPU_SETSIZE as usize).is_err());
    }
}

/// One address of one of this host's network interfaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostAddr {
    /// The interface's name (`eth0`).
    pub name: String,
    /// Its index.
    pub index: u32,
    /// The address.
    pub ip: std::net::IpAddr,
    /// The interface is up.
    pub up: bool,
}

/// Every IPv4 and IPv6 address of this host's interfaces (`getifaddrs`;
/// written here because the few lines of it that the relay needs are all
/// it needs, and both the AF_XDP backend and the configuration's device
/// names read them).
pub fn host_addrs() -> Vec<HostAddr> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list that is freed below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut p = list;
    while !p.is_null() {
        // SAFETY: a node of the list getifaddrs returned.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        if ifa.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points at a sockaddr of its family's size.
        let ip = unsafe {
            match (*ifa.ifa_addr).sa_family as i32 {
                libc::AF_INET => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in);
                    std::net::IpAddr::from(u32::from_be(sa.sin_addr.s_addr).to_be_bytes())
                }
                libc::AF_INET6 => {
                    let sa = &*(ifa.ifa_addr as *const libc::sockaddr_in6);
                    std::net::IpAddr::from(sa.sin6_addr.s6_addr)
                }
                _ => continue,
            }
        };
        // SAFETY: a NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) }.to_string_lossy().into_owned();
        // SAFETY: the same name.
        let index = unsafe { libc::if_nametoindex(ifa.ifa_name) };
        out.push(HostAddr { name, index, ip, up: ifa.ifa_flags & libc::IFF_UP as u32 != 0 });
    }
    // SAFETY: the list from getifaddrs, freed once.
    unsafe { libc::freeifaddrs(list) };
    out
}

/// The media addresses of network device `name`, as rtpengine takes an
/// interface given by device: its IPv4 addresses and its IPv6 ones but
/// link-local, while it is up; `None` when no device has that name.
pub fn device_addrs(name: &str) -> Option<Vec<std::net::IpAddr>> {
    let all: Vec<HostAddr> = host_addrs().into_iter().filter(|a| a.name == name).collect();
    if all.is_empty() {
        // A device without any address is in no list of addresses, and
        // still a device.
        let c = std::ffi::CString::new(name).ok()?;
        // SAFETY: a NUL-terminated name; the call only reads it.
        let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
        return (index != 0).then(Vec::new);
    }
    Some(all.into_iter().filter(HostAddr::serves_media).map(|a| a.ip).collect())
}

/// rtpengine's `any`: the media addresses of every device but loopback.
pub fn any_addrs() -> Vec<std::net::IpAddr> {
    host_addrs().into_iter().filter(|a| a.serves_media() && !a.ip.is_loopback()).map(|a| a.ip).collect()
}

impl HostAddr {
    /// Up, and not an IPv6 link-local address (which needs a scope no SDP
    /// can carry).
    fn serves_media(&self) -> bool {
        self.up && !matches!(self.ip, std::net::IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
    }
}

#[cfg(test)]
mod host_tests {
    #[test]
    fn loopback_device_has_its_address() {
        let lo = super::device_addrs("lo").expect("a loopback device");
        assert!(lo.contains(&std::net::IpAddr::from([127, 0, 0, 1])), "{lo:?}");
        assert_eq!(super::device_addrs("no-such-device0"), None);
    }
}
