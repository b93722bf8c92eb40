//! Counters of the relay: per leg, per worker and global, and the histogram
//! of the delay a packet spends in the relay (receive to send).
//!
//! Every counter is a relaxed atomic written by exactly one worker thread
//! (the one that owns the leg's sockets), so the hot path takes no lock and
//! shares no cache line with another writer. Readers (NG `query`,
//! `statistics`, `/metrics`) sum them when asked.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

/// Why a packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// The SRTP/SRTCP tag did not verify.
    AuthFailed,
    /// The index was seen before or is older than the replay window.
    Replayed,
    /// Not an RTP/RTCP packet, or a header that does not parse.
    Malformed,
    /// From an address other than the latched peer.
    UnknownPeer,
    /// The other leg has no address or keys yet (before the answer).
    NoDestination,
    /// No free packet buffer.
    PoolExhausted,
    /// A transcoded stream refused the packet: a payload type it did not
    /// negotiate, a packet older than audio already sent, or a codec that
    /// failed (which ends that stream's transcoding).
    Transcode,
    /// Any other SRTP error (stream limit, MKI) or a send error.
    Other,
    /// Held back by the leg's direction: an operator's hold or mute from the
    /// management page, or NG `block media`.
    Blocked,
    /// An RFC 4733 event of a party whose DTMF is blocked (`block DTMF`).
    DtmfBlocked,
    /// Media towards a party to which the relay plays a prompt or DTMF
    /// (`play media`, `play DTMF`): the prompt takes its place.
    Replaced,
    /// The master key's lifetime is used up (RFC 3711 §9.2): the sender
    /// went on past it, or, towards the endpoint, every key the relay has
    /// for it is used up (the call needs new keys: a re-INVITE).
    KeyExpired,
    /// The index it needs towards the endpoint is not reserved yet (call
    /// state kept across restarts: the reservation is persisted before it
    /// is used, so that a restarted relay never reuses keystream).
    NotReserved,
    /// Older than the delay bound when the worker took it (`--stale-after`,
    /// by the kernel's or the ring's receive time): relayed that late it
    /// would be worse than lost. Only RTP: RTCP, STUN and DTLS are never
    /// stale.
    Stale,
}

impl Drop {
    /// Every reason, in the order of the counters.
    pub const ALL: [Drop; 14] = [
        Drop::AuthFailed,
        Drop::Replayed,
        Drop::Malformed,
        Drop::UnknownPeer,
        Drop::NoDestination,
        Drop::PoolExhausted,
        Drop::Transcode,
        Drop::Other,
        Drop::Blocked,
        Drop::DtmfBlocked,
        Drop::Replaced,
        Drop::KeyExpired,
        Drop::NotReserved,
        Drop::Stale,
    ];

    /// The name used in NG replies and metric labels.
    pub const fn name(self) -> &'static str {
        match self {
            Drop::AuthFailed => "auth_failed",
            Drop::Replayed => "replayed",
            Drop::Malformed => "malformed",
            Drop::UnknownPeer => "unknown_peer",
            Drop::NoDestination => "no_destination",
            Drop::PoolExhausted => "pool_exhausted",
            Drop::Transcode => "transcode",
            Drop::Other => "other",
            Drop::Blocked => "blocked",
            Drop::DtmfBlocked => "dtmf_blocked",
            Drop::Replaced => "replaced",
            Drop::KeyExpired => "key_expired",
            Drop::NotReserved => "not_reserved",
            Drop::Stale => "stale",
        }
    }

    /// The drop reason of an SRTP error.
    pub fn of(e: &srtp::Error) -> Drop {
        match e {
            srtp::Error::AuthFailed => Drop::AuthFailed,
            srtp::Error::Replayed => Drop::Replayed,
            srtp::Error::KeyExpired => Drop::KeyExpired,
            srtp::Error::NotReserved { .. } => Drop::NotReserved,
            srtp::Error::Malformed(_) | srtp::Error::TrailerTooShort | srtp::Error::PacketTooLarge(_) => {
                Drop::Malformed
            }
            _ => Drop::Other,
        }
    }
}

/// Packet and byte counts of one direction of one leg, with drops.
///
/// Laid out in this order (`repr(C)`, from a cache line's start) for the
/// worker, which touches the counters of thousands of legs and announces a
/// packet's ahead of it: the first line holds what every packet counts, the
/// second its delay and the controls' flags, then the delay histogram and
/// the drops.
#[derive(Default, Debug)]
#[repr(C, align(64))]
pub struct LegStats {
    /// Packets received from the leg's endpoint (before any check).
    pub packets_in: AtomicU64,
    /// Bytes received from the leg's endpoint.
    pub bytes_in: AtomicU64,
    /// Packets sent to the leg's endpoint.
    pub packets_out: AtomicU64,
    /// Bytes sent to the leg's endpoint.
    pub bytes_out: AtomicU64,
    /// Unix time in ms of the last packet received from the endpoint (0 = none).
    pub last_packet_ms: AtomicU64,
    /// RTP packets accepted from the endpoint (authenticated, from its peer).
    pub rtp_received: AtomicU64,
    /// RTP packets the endpoint sent by their sequence numbers (highest −
    /// first + 1): minus `rtp_received`, the packets lost before the relay.
    pub rtp_expected: AtomicU64,
    /// The SSRC and payload type of the last RTP packet accepted from the
    /// endpoint: `ssrc | pt << 32 | 1 << 40` (0: none yet).
    pub rtp_source: AtomicU64,
    /// Packets of this leg whose delay was recorded (those relayed).
    pub delay_count: AtomicU64,
    /// Sum of the added delay of packets received on this leg, in ns.
    pub delay_ns_sum: AtomicU64,
    /// Largest added delay of a packet received on this leg, in ns.
    pub delay_ns_max: AtomicU64,
    /// The relay's interarrival jitter estimate of that RTP (RFC 3550 A.8),
    /// in µs (only with call quality on).
    pub jitter_us: AtomicU64,
    /// RTCP packets received from the endpoint (counted in `packets_in`
    /// too), and their bytes.
    pub rtcp_in: AtomicU64,
    /// See `rtcp_in`.
    pub rtcp_bytes_in: AtomicU64,
    /// Set by the control thread (not a counter): [`MUTED`], [`HELD`],
    /// [`SILENCED`]; the worker reads it for each RTP packet of the leg.
    pub block: AtomicU8,
    /// Set by the control thread (not a counter): what happens to the RFC
    /// 4733 events this leg's endpoint sends ([`DTMF_PASS`],
    /// [`DTMF_DROP`], or [`DTMF_REWRITE`] plus the event sent instead).
    pub dtmf: AtomicU8,
    /// Delay histogram of the packets received on this leg: counts per
    /// [`DELAY_BOUNDS_US`] bucket, then the overflow.
    pub delay_buckets: [AtomicU64; DELAY_BOUNDS_US.len() + 1],
    /// Packets from this leg's endpoint that were dropped, by [`Drop`].
    pub drops: [AtomicU64; Drop::ALL.len()],
}

/// [`LegStats::block`]: RTP from this leg's endpoint is not relayed (a mute
/// from the management page, or `block media`).
pub const MUTED: u8 = 1;
/// [`LegStats::block`]: no RTP is relayed to this leg's endpoint.
pub const HELD: u8 = 2;
/// [`LegStats::block`]: RTP from this leg's endpoint is relayed as its
/// codec's silence (`silence media`).
pub const SILENCED: u8 = 4;

/// [`LegStats::dtmf`]: events relayed as they are.
pub const DTMF_PASS: u8 = 0;
/// [`LegStats::dtmf`]: events dropped (`block DTMF`).
pub const DTMF_DROP: u8 = 1;
/// [`LegStats::dtmf`]: events relayed as another event, `DTMF_REWRITE | e`
/// (`block DTMF` with `DTMF-security=zero` or `DTMF`).
pub const DTMF_REWRITE: u8 = 0x80;

/// A plain copy of [`LegStats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LegSnapshot {
    /// Packets received.
    pub packets_in: u64,
    /// Bytes received.
    pub bytes_in: u64,
    /// Packets sent.
    pub packets_out: u64,
    /// Bytes sent.
    pub bytes_out: u64,
    /// Drops by reason.
    pub drops: [u64; Drop::ALL.len()],
    /// Packets with a recorded delay.
    pub delay_count: u64,
    /// Sum of added delays (ns).
    pub delay_ns_sum: u64,
    /// Largest added delay (ns).
    pub delay_ns_max: u64,
    /// Unix ms of the last packet (0 = none).
    pub last_packet_ms: u64,
}

impl LegStats {
    /// Counts a received packet (accepted or not).
    #[inline]
    pub fn received(&self, bytes: usize) {
        bump(&self.packets_in, 1);
        bump(&self.bytes_in, bytes as u64);
    }
    /// Notes an accepted packet (authenticated, from the latched peer): only
    /// these keep a call alive, so spraying a port cannot.
    #[inline]
    pub fn accepted(&self, now_ms: u64) {
        self.last_packet_ms.store(now_ms, Relaxed);
    }
    /// Counts a packet sent to the endpoint.
    #[inline]
    pub fn sent(&self, bytes: usize) {
        bump(&self.packets_out, 1);
        bump(&self.bytes_out, bytes as u64);
    }
    /// Counts a dropped packet from the endpoint.
    #[inline]
    pub fn dropped(&self, why: Drop) {
        bump(&self.drops[why as usize], 1);
    }
    /// Records the added delay of a packet received on this leg.
    #[inline]
    pub fn delay(&self, ns: u64) {
        let i = DELAY_BOUNDS_US.partition_point(|&b| b < ns / 1_000);
        bump(&self.delay_buckets[i], 1);
        bump(&self.delay_count, 1);
        bump(&self.delay_ns_sum, ns);
        if ns > self.delay_ns_max.load(Relaxed) {
            self.delay_ns_max.store(ns, Relaxed);
        }
    }
    /// The delay histogram (counts per [`DELAY_BOUNDS_US`] bucket, then the
    /// overflow).
    pub fn histogram(&self) -> Histogram {
        Histogram { buckets: self.delay_buckets.iter().map(|a| a.load(Relaxed)).collect() }
    }
    /// Notes an accepted RTP packet; `expected` is the count its sequence
    /// numbers say was sent.
    #[inline]
    pub fn rtp_seen(&self, expected: u64) {
        bump(&self.rtp_received, 1);
        self.rtp_expected.store(expected, Relaxed);
    }
    /// Counts an RTCP packet received (also counted by [`LegStats::received`]).
    #[inline]
    pub fn rtcp_received(&self, bytes: usize) {
        bump(&self.rtcp_in, 1);
        bump(&self.rtcp_bytes_in, bytes as u64);
    }
    /// Notes the SSRC and payload type of an accepted RTP packet.
    #[inline]
    pub fn rtp_source_seen(&self, ssrc: u32, pt: u8) {
        let v = ssrc as u64 | ((pt & 0x7f) as u64) << 32 | 1 << 40;
        if self.rtp_source.load(Relaxed) != v {
            self.rtp_source.store(v, Relaxed);
        }
    }
    /// The SSRC and payload type of the last RTP accepted from the endpoint.
    pub fn rtp_source(&self) -> Option<(u32, u8)> {
        let v = self.rtp_source.load(Relaxed);
        (v >> 40 == 1).then_some((v as u32, (v >> 32) as u8 & 0x7f))
    }
    /// Publishes the relay's jitter estimate of the endpoint's RTP (µs).
    #[inline]
    pub fn set_jitter_us(&self, us: u64) {
        self.jitter_us.store(us, Relaxed);
    }
    /// RTP packets the endpoint sent by their sequence numbers.
    pub fn rtp_expected(&self) -> u64 {
        self.rtp_expected.load(Relaxed)
    }
    /// RTP packets received from the endpoint (accepted).
    pub fn rtp_packets(&self) -> u64 {
        self.rtp_received.load(Relaxed)
    }
    /// RTP packets lost before the relay (expected, not received).
    pub fn rtp_lost(&self) -> u64 {
        self.rtp_expected.load(Relaxed).saturating_sub(self.rtp_received.load(Relaxed))
    }
    /// What [`LegStats::block`] holds back.
    #[inline]
    pub fn blocked(&self) -> u8 {
        self.block.load(Relaxed)
    }
    /// A copy of the counters.
    pub fn snapshot(&self) -> LegSnapshot {
        LegSnapshot {
            packets_in: self.packets_in.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            packets_out: self.packets_out.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            drops: std::array::from_fn(|i| self.drops[i].load(Relaxed)),
            delay_count: self.delay_count.load(Relaxed),
            delay_ns_sum: self.delay_ns_sum.load(Relaxed),
            delay_ns_max: self.delay_ns_max.load(Relaxed),
            last_packet_ms: self.last_packet_ms.load(Relaxed),
        }
    }
}

impl LegSnapshot {
    /// Adds another snapshot into this one.
    pub fn add(&mut self, o: &LegSnapshot) {
        self.packets_in += o.packets_in;
        self.bytes_in += o.bytes_in;
        self.packets_out += o.packets_out;
        self.bytes_out += o.bytes_out;
        for (d, s) in self.drops.iter_mut().zip(o.drops) {
            *d += s;
        }
        self.delay_count += o.delay_count;
        self.delay_ns_sum += o.delay_ns_sum;
        self.delay_ns_max = self.delay_ns_max.max(o.delay_ns_max);
        self.last_packet_ms = self.last_packet_ms.max(o.last_packet_ms);
    }
    /// Total drops.
    pub fn dropped(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// A single-writer increment: the owning worker is the only writer, so a
/// load and a store are enough (no locked read-modify-write on the hot path).
#[inline]
fn bump(a: &AtomicU64, n: u64) {
    a.store(a.load(Relaxed).wrapping_add(n), Relaxed);
}

/// Upper bounds (inclusive, in µs) of the delay histogram's buckets; a last
/// bucket takes everything above.
pub const DELAY_BOUNDS_US: [u64; 20] =
    [5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 750, 1_000, 2_000, 3_000, 5_000, 10_000, 20_000, 50_000, 100_000];

/// A delay above the histogram's last bound (100 ms), in µs.
pub const OVER_US: u64 = DELAY_BOUNDS_US[DELAY_BOUNDS_US.len() - 1] + 1;

/// Counters of one worker thread, written only by it.
#[derive(Debug)]
pub struct WorkerStats {
    /// Everything received and dropped on this worker's legs, including
    /// legs already deleted.
    pub total: LegStats,
    /// Packets received on a media port that has no call any more.
    pub stray: AtomicU64,
    /// STUN and DTLS datagrams of ICE/DTLS legs handed to the control
    /// thread, and those dropped (its queue full, or not forwardable).
    pub signals: AtomicU64,
    /// See `signals`.
    pub signals_dropped: AtomicU64,
    /// Packets of recorded calls copied to the recorder, and those whose
    /// copy was dropped (its queue or the worker's buffers full): the
    /// packet itself was relayed all the same.
    pub recorded: AtomicU64,
    /// See `recorded`.
    pub recorded_dropped: AtomicU64,
    /// RFC 4733 digits (end packets) seen from endpoints and reported to
    /// the DTMF log, and those not reported (its queue full).
    pub dtmf_events: AtomicU64,
    /// See `dtmf_events`.
    pub dtmf_events_dropped: AtomicU64,
    /// Packets the relay played to endpoints (`play media`, `play DTMF`).
    pub played: AtomicU64,
    /// Packets relayed as silence (`silence media`).
    pub silenced: AtomicU64,
    /// Authenticated RTCP packets copied to the call-quality reader, and
    /// those not copied (its queue full).
    pub rtcp_reports: AtomicU64,
    /// See `rtcp_reports`.
    pub rtcp_reports_dropped: AtomicU64,
    /// Delay histogram: counts per [`DELAY_BOUNDS_US`] bucket, then the overflow.
    pub delay_buckets: [AtomicU64; DELAY_BOUNDS_US.len() + 1],
    /// Receive system calls and the packets they returned (the batching factor).
    pub recv_calls: AtomicU64,
    /// Send system calls and the packets they sent.
    pub send_calls: AtomicU64,
    /// Crypto batches handed to the engine.
    pub batches: AtomicU64,
    /// Packets in those batches.
    pub batch_packets: AtomicU64,
    /// Of those batches, the ones the engine's lane held while the worker
    /// went on (asynchronous rounds; the rest ran before the worker went on).
    pub lane_batches: AtomicU64,
    /// Times the worker had to wait for its lane: its rounds in flight were
    /// as many as the lane holds, or a command had to wait for them.
    pub lane_waits: AtomicU64,
    /// Batches the lane lost (a device error): their packets were dropped.
    pub engine_errors: AtomicU64,
    /// Packet buffers in the worker's pool, and how many are free now.
    pub pool_size: AtomicU64,
    /// Free buffers (sampled once per loop).
    pub pool_free: AtomicU64,
    /// Legs (sides of a media stream) this worker owns.
    pub legs: AtomicU64,
    /// System calls of the worker's I/O (waits, receives, sends, submits).
    pub syscalls: AtomicU64,
    /// Sends the kernel refused after taking them (io_uring reports these
    /// in the send's completion).
    pub send_failed: AtomicU64,
    /// Transcoding, [`TRANSCODE_COUNTERS`] in order: packets decoded,
    /// packets encoded, samples inserted for lost packets, streams whose
    /// codec failed (their transcoding ended), of the inserted samples those
    /// decoded from the next packet's in-band FEC, frames the encoder left
    /// untransmitted (DTX), in-band DTMF tones detected (sent as RFC 4733
    /// events), RFC 4733 events played as tones, packets dropped as too late
    /// (after later audio was taken), and packets put back in order by a
    /// reorder window.
    pub transcode: [AtomicU64; TRANSCODE_COUNTERS.len()],
    /// The kernel's drop counters of this worker's AF_XDP sockets (sampled
    /// once a second): [`XDP_SOCKET_DROPS`] in order.
    pub xdp_socket_drops: [AtomicU64; 4],
    /// Next hops the AF_XDP backend's bounded cache evicted to make room.
    pub xdp_hops_evicted: AtomicU64,
    /// Nanoseconds the worker spent on commands and rounds rather than
    /// waiting for packets (its load: the `max-load` limit reads it).
    pub busy_ns: AtomicU64,
    /// Nanoseconds spent in each [`Stage`] of the rounds that had packets
    /// (the stages' cost per packet: divide by the packets relayed).
    pub stage_ns: [AtomicU64; Stage::ALL.len()],
}

/// The parts of a worker's round, timed per round (never per packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The I/O backend's wait and delivery (rounds that delivered packets).
    Io,
    /// Receive: each datagram to its stream and kind; stale ones dropped.
    Receive,
    /// Unprotect without the crypto: checks, preparation, commit, route.
    Unprotect,
    /// The codecs of transcoded streams.
    Transcode,
    /// The engine's transforms, both directions.
    Crypto,
    /// Protect without the crypto: controls, destination, preparation, commit.
    Protect,
    /// Send: handing the packets to the backend.
    Send,
    /// Release: each packet's fate counted, its buffers back to the pool.
    Release,
}

impl Stage {
    /// Every stage, in the order of the counters.
    pub const ALL: [Stage; 8] = [
        Stage::Io,
        Stage::Receive,
        Stage::Unprotect,
        Stage::Transcode,
        Stage::Crypto,
        Stage::Protect,
        Stage::Send,
        Stage::Release,
    ];

    /// The name used in metric labels.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Io => "io",
            Stage::Receive => "receive",
            Stage::Unprotect => "unprotect",
            Stage::Transcode => "transcode",
            Stage::Crypto => "crypto",
            Stage::Protect => "protect",
            Stage::Send => "send",
            Stage::Release => "release",
        }
    }
}

/// What a transcoding counter counts: the index of
/// [`WorkerStats::transcode`] and of [`TRANSCODE_COUNTERS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transcoded {
    /// Packets decoded.
    Decoded = 0,
    /// Packets encoded.
    Encoded = 1,
    /// Samples inserted for lost packets.
    Concealed = 2,
    /// Streams whose codec failed (their transcoding ended).
    CodecFailed = 3,
    /// Inserted samples decoded from the next packet's in-band FEC.
    FecDecoded = 4,
    /// Frames the encoder left untransmitted (DTX).
    Untransmitted = 5,
    /// In-band DTMF tones detected (sent as RFC 4733 events).
    DtmfDetected = 6,
    /// RFC 4733 events played as tones.
    DtmfPlayed = 7,
    /// Packets dropped as too late (after later audio was taken).
    Late = 8,
    /// Packets put back in order by a reorder window.
    Reordered = 9,
}

impl Transcoded {
    /// Every counter, in index order.
    pub const ALL: [Transcoded; 10] = [
        Transcoded::Decoded,
        Transcoded::Encoded,
        Transcoded::Concealed,
        Transcoded::CodecFailed,
        Transcoded::FecDecoded,
        Transcoded::Untransmitted,
        Transcoded::DtmfDetected,
        Transcoded::DtmfPlayed,
        Transcoded::Late,
        Transcoded::Reordered,
    ];
}

/// The names of [`WorkerStats::transcode`], in [`Transcoded`] order.
pub const TRANSCODE_COUNTERS: [&str; 10] = [
    "decoded_packets",
    "encoded_packets",
    "concealed_samples",
    "codec_failures",
    "fec_decoded_samples",
    "untransmitted_frames",
    "dtmf_detected",
    "dtmf_played",
    "late_packets",
    "reordered_packets",
];

/// The reasons of [`WorkerStats::xdp_socket_drops`]: frames dropped on
/// receive (no room), the receive ring full, the fill ring empty, invalid
/// transmit descriptors.
pub const XDP_SOCKET_DROPS: [&str; 4] = ["rx_dropped", "rx_ring_full", "fill_ring_empty", "tx_invalid"];

impl WorkerStats {
    /// New zeroed counters.
    pub fn new() -> WorkerStats {
        WorkerStats {
            total: LegStats::default(),
            stray: AtomicU64::new(0),
            signals: AtomicU64::new(0),
            signals_dropped: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
            recorded_dropped: AtomicU64::new(0),
            dtmf_events: AtomicU64::new(0),
            dtmf_events_dropped: AtomicU64::new(0),
            played: AtomicU64::new(0),
            silenced: AtomicU64::new(0),
            rtcp_reports: AtomicU64::new(0),
            rtcp_reports_dropped: AtomicU64::new(0),
            delay_buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            recv_calls: AtomicU64::new(0),
            send_calls: AtomicU64::new(0),
            batches: AtomicU64::new(0),
            batch_packets: AtomicU64::new(0),
            lane_batches: AtomicU64::new(0),
            lane_waits: AtomicU64::new(0),
            engine_errors: AtomicU64::new(0),
            pool_size: AtomicU64::new(0),
            pool_free: AtomicU64::new(0),
            legs: AtomicU64::new(0),
            syscalls: AtomicU64::new(0),
            send_failed: AtomicU64::new(0),
            transcode: std::array::from_fn(|_| AtomicU64::new(0)),
            xdp_socket_drops: std::array::from_fn(|_| AtomicU64::new(0)),
            xdp_hops_evicted: AtomicU64::new(0),
            busy_ns: AtomicU64::new(0),
            stage_ns: Default::default(),
        }
    }

    /// Records one packet's added delay.
    #[inline]
    pub fn delay(&self, ns: u64) {
        let us = ns / 1_000;
        let i = DELAY_BOUNDS_US.partition_point(|&b| b < us);
        bump(&self.delay_buckets[i], 1);
        self.total.delay(ns);
    }

    /// Counts a receive call that returned `n` packets.
    #[inline]
    pub fn recv_call(&self) {
        bump(&self.recv_calls, 1);
    }

    /// Counts a send call.
    #[inline]
    pub fn send_call(&self) {
        bump(&self.send_calls, 1);
    }

    /// Counts an engine batch of `n` packets.
    #[inline]
    pub fn batch(&self, n: usize) {
        bump(&self.batches, 1);
        bump(&self.batch_packets, n as u64);
    }

    /// Counts a batch the engine's lane held while the worker went on.
    #[inline]
    pub fn lane_batch(&self) {
        bump(&self.lane_batches, 1);
    }

    /// Counts a wait for the engine's lane.
    #[inline]
    pub fn lane_wait(&self) {
        bump(&self.lane_waits, 1);
    }

    /// Counts a batch the engine's lane lost.
    pub fn engine_error(&self) {
        bump(&self.engine_errors, 1);
    }

    /// Counts a packet for a port without a call.
    #[inline]
    pub fn stray(&self) {
        bump(&self.stray, 1);
    }

    /// Counts a system call of the I/O backend.
    #[inline]
    pub fn syscall(&self) {
        bump(&self.syscalls, 1);
    }

    /// Counts a next hop evicted from the AF_XDP backend's cache.
    pub fn xdp_hop_evicted(&self) {
        bump(&self.xdp_hops_evicted, 1);
    }

    /// Counts a send that failed in the kernel after it was queued.
    pub fn send_failed(&self) {
        bump(&self.send_failed, 1);
    }

    /// Adds `n` to a transcoding counter.
    #[inline]
    pub fn transcoded(&self, what: Transcoded, n: u64) {
        if n != 0 {
            bump(&self.transcode[what as usize], n);
        }
    }

    /// Counts a STUN or DTLS datagram handed to the control thread
    /// (`forwarded`), or dropped.
    #[inline]
    pub fn signal(&self, forwarded: bool) {
        bump(if forwarded { &self.signals } else { &self.signals_dropped }, 1);
    }

    /// An RTCP packet copied to the call-quality reader (`copied`), or not.
    #[inline]
    pub fn rtcp_report(&self, copied: bool) {
        bump(if copied { &self.rtcp_reports } else { &self.rtcp_reports_dropped }, 1);
    }

    /// A packet of a recorded call copied to the recorder (`copied`), or
    /// not.
    #[inline]
    pub fn recorded(&self, copied: bool) {
        bump(if copied { &self.recorded } else { &self.recorded_dropped }, 1);
    }

    /// A digit reported to the DTMF log (`reported`), or not (its queue full).
    #[inline]
    pub fn dtmf_event(&self, reported: bool) {
        bump(if reported { &self.dtmf_events } else { &self.dtmf_events_dropped }, 1);
    }
}

impl Default for WorkerStats {
    fn default() -> Self {
        WorkerStats::new()
    }
}

/// The delay histogram summed over workers.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Counts per bucket ([`DELAY_BOUNDS_US`], then the overflow).
    pub buckets: Vec<u64>,
}

impl Histogram {
    /// Sums the workers' histograms.
    pub fn of(workers: &[std::sync::Arc<WorkerStats>]) -> Histogram {
        let mut buckets = vec![0u64; DELAY_BOUNDS_US.len() + 1];
        for w in workers {
            for (b, a) in buckets.iter_mut().zip(&w.delay_buckets) {
                *b += a.load(Relaxed);
            }
        }
        Histogram { buckets }
    }

    /// Packets counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The upper bound (µs) of the bucket holding quantile `q` (0..=1): the
    /// quantile is at most this. `None` when empty or in the overflow bucket.
    pub fn quantile_us(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return DELAY_BOUNDS_US.get(i).copied();
            }
        }
        None
    }

    /// As [`quantile_us`](Self::quantile_us), but a quantile in the
    /// overflow bucket is [`OVER_US`] (None only without packets).
    pub fn quantile_or_over_us(&self, q: f64) -> Option<u64> {
        (self.count() > 0).then(|| self.quantile_us(q).unwrap_or(OVER_US))
    }

    /// Writes the histogram in the Prometheus text format (seconds).
    pub fn write_prometheus(&self, out: &mut String, name: &str, sum_ns: u64) {
        let mut cum = 0;
        for (i, c) in self.buckets.iter().enumerate() {
            cum += c;
            match DELAY_BOUNDS_US.get(i) {
                Some(b) => {
                    let _ = writeln!(out, "{name}_bucket{{le=\"{}\"}} {cum}", *b as f64 / 1e6);
                }
                None => {
                    let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cum}");
                }
            }
        }
        let _ = writeln!(out, "{name}_sum {}", sum_ns as f64 / 1e9);
        let _ = writeln!(out, "{name}_count {cum}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn transcoding_counters_are_named_in_index_order() {
        for (i, t) in super::Transcoded::ALL.iter().enumerate() {
            assert_eq!(*t as usize, i);
        }
        assert_eq!(super::Transcoded::ALL.len(), super::TRANSCODE_COUNTERS.len());
    }

    use super::*;
    use std::sync::Arc;

    #[test]
    fn histogram_quantiles_and_buckets() {
        let w = Arc::new(WorkerStats::new());
        for _ in 0..90 {
            w.delay(4_000); // 4 µs -> bucket le 5
        }
        for _ in 0..9 {
            w.delay(40_000); // 40 µs -> le 50
        }
        w.delay(2_000_000_000); // 2 s -> overflow
        let h = Histogram::of(std::slice::from_ref(&w));
        assert_eq!(h.count(), 100);
        assert_eq!(h.quantile_us(0.5), Some(5));
        assert_eq!(h.quantile_us(0.95), Some(50));
        assert_eq!(h.quantile_us(1.0), None);
        let mut s = String::new();
        h.write_prometheus(&mut s, "d", w.total.snapshot().delay_ns_sum);
        assert!(s.contains("d_bucket{le=\"0.000005\"} 90"), "{s}");
        assert!(s.contains("d_bucket{le=\"0.00005\"} 99"), "{s}");
        assert!(s.contains("d_bucket{le=\"+Inf\"} 100"), "{s}");
        assert!(s.contains("d_count 100"));
        assert_eq!(w.total.snapshot().delay_ns_max, 2_000_000_000);
    }

    #[test]
    fn leg_counters_add_up() {
        let l = LegStats::default();
        l.received(100);
        l.accepted(5);
        l.received(50);
        l.accepted(9);
        l.sent(60);
        l.dropped(Drop::Replayed);
        let mut s = l.snapshot();
        assert_eq!((s.packets_in, s.bytes_in, s.packets_out, s.bytes_out), (2, 150, 1, 60));
        assert_eq!(s.drops[Drop::Replayed as usize], 1);
        assert_eq!(s.last_packet_ms, 9);
        let t = s;
        s.add(&t);
        assert_eq!((s.packets_in, s.dropped()), (4, 2));
        assert_eq!(Drop::of(&srtp::Error::AuthFailed), Drop::AuthFailed);
    }
}
