//! The endpoints' RTCP, as phones send it (RFC 3550 §6.4): every interval a
//! compound packet of one sender report, with one report block about the
//! stream the endpoint receives, and an SDES chunk with its CNAME. Written
//! and read here without I/O: the sender thread sends the packet as SRTCP
//! with the leg's context; the receiver reads the SRTCP that arrives and
//! publishes, per leg, what the next report needs ([`Shared`]).

use std::sync::atomic::{
    AtomicU32, AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};

/// Seconds from NTP's era 0 (1900) to the Unix epoch.
const NTP_UNIX_S: u64 = 2_208_988_800;

/// The longest CNAME written (longer ones are cut).
pub const MAX_CNAME: usize = 64;

/// The largest compound [`write_compound`] writes: an SR with one block, and
/// SDES with a CNAME of [`MAX_CNAME`] bytes.
pub const MAX_COMPOUND: usize = 28 + 24 + 8 + (2 + MAX_CNAME + 1).div_ceil(4) * 4;

/// The 64-bit NTP timestamp of a wall-clock time (ns since the Unix epoch).
pub fn ntp(unix_ns: u64) -> u64 {
    let secs = unix_ns / 1_000_000_000 + NTP_UNIX_S;
    let frac = ((unix_ns % 1_000_000_000) << 32) / 1_000_000_000;
    (secs << 32) | frac
}

/// The middle 32 bits of an NTP timestamp: an SR's LSR, and times in
/// 1/65536 s (DLSR, round trips).
pub fn mid(ntp: u64) -> u32 {
    (ntp >> 16) as u32
}

/// What an endpoint has seen of the stream it receives, as its report reads
/// it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reception {
    /// The stream's SSRC.
    pub ssrc: u32,
    /// Extended sequence number of its first packet (cycles counted from 0).
    pub base: u32,
    /// Highest extended sequence number received.
    pub highest: u32,
    /// Packets received (duplicates not counted).
    pub received: u32,
    /// Interarrival jitter (RFC 3550 A.8) in RTP timestamp units.
    pub jitter: u32,
    /// The last SR from the other side: the middle 32 bits of its NTP
    /// timestamp and of the time it arrived.
    pub last_sr: Option<(u32, u32)>,
}

/// One report block (RFC 3550 §6.4.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Block {
    /// The SSRC reported about.
    pub ssrc: u32,
    /// Fraction lost since the last report, in 1/256.
    pub fraction: u8,
    /// Cumulative packets lost (24-bit signed on the wire).
    pub lost: i32,
    /// Extended highest sequence number received.
    pub highest: u32,
    /// Interarrival jitter in RTP timestamp units.
    pub jitter: u32,
    /// Middle 32 bits of the last SR's NTP timestamp (0: none yet).
    pub lsr: u32,
    /// Delay since that SR, in 1/65536 s (0: none yet).
    pub dlsr: u32,
}

impl Block {
    /// The round trip (RFC 3550 §6.4.1, A − LSR − DLSR) in 1/65536 s that the
    /// endpoint this block reports to computes when it arrives at `now_mid`
    /// (its NTP time's middle 32 bits); `None` without an LSR, or for a
    /// negative result (clocks or a stale report).
    pub fn rtt(&self, now_mid: u32) -> Option<u32> {
        if self.lsr == 0 {
            return None;
        }
        let rtt = now_mid.wrapping_sub(self.lsr).wrapping_sub(self.dlsr);
        (rtt < 0x8000_0000).then_some(rtt)
    }

    fn write(&self, o: &mut [u8]) {
        o[0..4].copy_from_slice(&self.ssrc.to_be_bytes());
        o[4] = self.fraction;
        o[5..8].copy_from_slice(&(self.lost as u32).to_be_bytes()[1..]);
        o[8..12].copy_from_slice(&self.highest.to_be_bytes());
        o[12..16].copy_from_slice(&self.jitter.to_be_bytes());
        o[16..20].copy_from_slice(&self.lsr.to_be_bytes());
        o[20..24].copy_from_slice(&self.dlsr.to_be_bytes());
    }

    fn read(p: &[u8]) -> Block {
        // 24-bit two's complement, sign-extended.
        let lost = (u32::from_be_bytes([p[5], p[6], p[7], 0]) as i32) >> 8;
        Block {
            ssrc: be32(p, 0),
            fraction: p[4],
            lost,
            highest: be32(p, 8),
            jitter: be32(p, 12),
            lsr: be32(p, 16),
            dlsr: be32(p, 20),
        }
    }
}

/// A sender's memory between its reports on one stream (RFC 3550 A.3):
/// what was expected and received at the last report, for the fraction lost.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reporter {
    expected_prior: u32,
    received_prior: u32,
}

impl Reporter {
    /// The block about `r` at `now_mid` (NTP middle 32 bits), or `None` when
    /// nothing was received (no block then).
    pub fn block(&mut self, r: &Reception, now_mid: u32) -> Option<Block> {
        if r.received == 0 {
            return None;
        }
        let expected = r.highest.wrapping_sub(r.base).wrapping_add(1);
        let lost = (i64::from(expected) - i64::from(r.received)).clamp(-0x80_0000, 0x7f_ffff) as i32;
        if expected < self.expected_prior || r.received < self.received_prior {
            // Another stream in this leg since the last report.
            *self = Reporter::default();
        }
        let expected_interval = expected - self.expected_prior;
        let received_interval = r.received - self.received_prior;
        self.expected_prior = expected;
        self.received_prior = r.received;
        let lost_interval = i64::from(expected_interval) - i64::from(received_interval);
        let fraction = if expected_interval == 0 || lost_interval <= 0 {
            0
        } else {
            ((lost_interval << 8) / i64::from(expected_interval)).min(255) as u8
        };
        let (lsr, dlsr) = r.last_sr.map_or((0, 0), |(lsr, at)| (lsr, now_mid.wrapping_sub(at)));
        Some(Block { ssrc: r.ssrc, fraction, lost, highest: r.highest, jitter: r.jitter, lsr, dlsr })
    }
}

/// The sender information of an SR.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderInfo {
    /// Wall-clock time of the report as NTP.
    pub ntp: u64,
    /// The same instant on the stream's RTP clock.
    pub rtp_ts: u32,
    /// Packets sent.
    pub packets: u32,
    /// Payload octets sent.
    pub octets: u32,
}

/// Writes the compound packet (SR from `ssrc` with `block`, then SDES with
/// `cname`) into `out`; its length, or 0 when `out` is too short.
pub fn write_compound(out: &mut [u8], ssrc: u32, info: &SenderInfo, block: Option<&Block>, cname: &[u8]) -> usize {
    let cname = &cname[..cname.len().min(MAX_CNAME)];
    let rc = usize::from(block.is_some());
    let sr = 28 + 24 * rc;
    // SSRC, the CNAME item, at least one zero octet (the list's end), to a
    // 32-bit boundary.
    let sdes = 4 + 4 + (2 + cname.len() + 1).div_ceil(4) * 4;
    let total = sr + sdes;
    let Some(out) = out.get_mut(..total) else { return 0 };
    out[0] = 0x80 | rc as u8;
    out[1] = 200;
    out[2..4].copy_from_slice(&((sr / 4 - 1) as u16).to_be_bytes());
    out[4..8].copy_from_slice(&ssrc.to_be_bytes());
    out[8..16].copy_from_slice(&info.ntp.to_be_bytes());
    out[16..20].copy_from_slice(&info.rtp_ts.to_be_bytes());
    out[20..24].copy_from_slice(&info.packets.to_be_bytes());
    out[24..28].copy_from_slice(&info.octets.to_be_bytes());
    if let Some(b) = block {
        b.write(&mut out[28..52]);
    }
    let s = &mut out[sr..];
    s[0] = 0x81;
    s[1] = 202;
    s[2..4].copy_from_slice(&((sdes / 4 - 1) as u16).to_be_bytes());
    s[4..8].copy_from_slice(&ssrc.to_be_bytes());
    s[8] = 1; // CNAME
    s[9] = cname.len() as u8;
    s[10..10 + cname.len()].copy_from_slice(cname);
    s[10 + cname.len()..].fill(0);
    total
}

/// Reads a compound packet: `sr` gets each SR's sender SSRC and NTP
/// timestamp, `block` each report block of SRs and RRs. False when the
/// packet is not RTCP of version 2 or a length runs past its end.
pub fn read(pkt: &[u8], mut sr: impl FnMut(u32, u64), mut block: impl FnMut(Block)) -> bool {
    let mut at = 0;
    while at + 4 <= pkt.len() {
        let b0 = pkt[at];
        let len = (u16::from_be_bytes([pkt[at + 2], pkt[at + 3]]) as usize + 1) * 4;
        if b0 >> 6 != 2 || at + len > pkt.len() {
            return false;
        }
        let p = &pkt[at..at + len];
        let blocks = match p[1] {
            200 if len >= 28 => {
                sr(be32(p, 4), u64::from(be32(p, 8)) << 32 | u64::from(be32(p, 12)));
                Some(28)
            }
            201 if len >= 8 => Some(8),
            _ => None,
        };
        if let Some(first) = blocks {
            for b in (0..(b0 & 0x1f) as usize).map(|i| first + 24 * i).take_while(|b| b + 24 <= len) {
                block(Block::read(&p[b..b + 24]));
            }
        }
        at += len;
    }
    at > 0 && at == pkt.len()
}

/// Whether a datagram on an RTP port is RTCP (RFC 5761 §4: the second
/// octet is an RTCP packet type, 200–207 for the types RTP/AVP uses).
pub fn is_rtcp(pkt: &[u8]) -> bool {
    pkt.len() >= 8 && pkt[0] >> 6 == 2 && (200..=207).contains(&pkt[1])
}

fn be32(p: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([p[at], p[at + 1], p[at + 2], p[at + 3]])
}

/// What the receiver publishes of one leg for the sender's reports, without
/// locks: the counts (received, highest) in one word so that they always
/// belong together; the rest changes seldom or may lag a packet.
#[derive(Debug, Default)]
pub struct Shared {
    /// SSRC << 32 | the first extended sequence number.
    source: AtomicU64,
    /// Received << 32 | the highest extended sequence number.
    counts: AtomicU64,
    jitter: AtomicU32,
    /// LSR << 32 | its arrival (NTP middle 32 bits); 0 for none.
    last_sr: AtomicU64,
}

impl Shared {
    /// A new stream in this leg (a new call): nothing received yet.
    pub fn reset(&self) {
        self.counts.store(0, Release);
        self.last_sr.store(0, Relaxed);
        self.jitter.store(0, Relaxed);
    }

    /// A packet counted: the stream's state after it. `base` is its first
    /// extended sequence number (cycles from 0).
    pub fn packet(&self, ssrc: u32, base: u32, highest: u32, received: u32, jitter: u32) {
        if received == 1 {
            self.source.store(u64::from(ssrc) << 32 | u64::from(base), Relaxed);
        }
        self.jitter.store(jitter, Relaxed);
        self.counts.store(u64::from(received) << 32 | u64::from(highest), Release);
    }

    /// An SR arrived: the middle 32 bits of its NTP timestamp and of the
    /// arrival time.
    pub fn sender_report(&self, lsr: u32, at: u32) {
        self.last_sr.store(u64::from(lsr) << 32 | u64::from(at), Relaxed);
    }

    /// What the next report says.
    pub fn read(&self) -> Reception {
        let counts = self.counts.load(Acquire);
        let source = self.source.load(Relaxed);
        let sr = self.last_sr.load(Relaxed);
        Reception {
            ssrc: (source >> 32) as u32,
            base: source as u32,
            highest: counts as u32,
            received: (counts >> 32) as u32,
            jitter: self.jitter.load(Relaxed),
            last_sr: (sr != 0).then_some(((sr >> 32) as u32, sr as u32)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loadgen::account::{extend_seq, StreamRx};

    /// The endpoint's receive path, as the loadgen's receiver runs it:
    /// packets of `seqs` (RTP timestamps 160 apart at 8 kHz) arriving at
    /// `arrive(i)` ns, published into a [`Shared`].
    fn receive(shared: &Shared, st: &mut StreamRx, seqs: &[u16], arrive: impl Fn(usize) -> u64) {
        for (i, &seq) in seqs.iter().enumerate() {
            let ext = extend_seq(st.highest(), seq);
            let ts = u32::from(seq).wrapping_mul(160).wrapping_add(1000);
            if st.packet(ext, ts, arrive(i) * 8000 / 1_000_000_000) {
                let base = if st.received == 1 { (ext - 0x1_0000) as u32 } else { 0 };
                let hi = (st.highest().expect("a packet") - 0x1_0000) as u32;
                shared.packet(0xabcd, base, hi, st.received as u32, st.jitter() as u32);
            }
        }
    }

    #[test]
    fn ntp_of_the_wall_clock() {
        // 2024-01-01T00:00:00.5Z: 1 704 067 200 s after 1970.
        let t = ntp(1_704_067_200_500_000_000);
        assert_eq!(t >> 32, 1_704_067_200 + 2_208_988_800);
        assert_eq!(t as u32, 0x8000_0000, "half a second");
        assert_eq!(mid(t), ((t >> 32) as u32) << 16 | 0x8000);
    }

    #[test]
    fn blocks_count_loss_per_interval_and_in_total() {
        let shared = Shared::default();
        let mut st = StreamRx::default();
        let mut rep = Reporter::default();
        // Nothing received: no block.
        assert_eq!(rep.block(&shared.read(), 0), None);
        // 65 530 … 65 535, 0 … 9 with 65 533 and 2, 3 lost: 16 expected, 13 received.
        let seqs: Vec<u16> = (65_530u16..=65_535).chain(0..=9).filter(|s| ![65_533, 2, 3].contains(s)).collect();
        receive(&shared, &mut st, &seqs, |i| i as u64 * 20_000_000);
        let b = rep.block(&shared.read(), 0).expect("a block");
        assert_eq!(b.ssrc, 0xabcd);
        assert_eq!(b.highest, 0x1_0009, "one cycle, highest 9");
        assert_eq!(b.lost, 3);
        assert_eq!(b.fraction, (3 * 256 / 16) as u8);
        assert_eq!((b.lsr, b.dlsr), (0, 0), "no SR received yet");
        // Ten more, none lost: this interval lost nothing, the total stays 3.
        let more: Vec<u16> = (10..20).collect();
        receive(&shared, &mut st, &more, |i| (16 + i) as u64 * 20_000_000);
        let b = rep.block(&shared.read(), 0).expect("a block");
        assert_eq!((b.fraction, b.lost, b.highest), (0, 3, 0x1_0013));
        // A duplicate is not counted.
        receive(&shared, &mut st, &[19], |_| 0);
        assert_eq!(shared.read().received, 23);
        // Half of the next ten lost.
        let half: Vec<u16> = (20..30).filter(|s| s % 2 == 0).collect();
        receive(&shared, &mut st, &half, |i| (26 + 2 * i) as u64 * 20_000_000);
        let b = rep.block(&shared.read(), 0).expect("a block");
        assert_eq!((b.fraction, b.lost), ((4 * 256 / 9) as u8, 7), "4 of 9 lost since: the highest is 28");
        // Written and read back as the wire has it, negative loss too.
        let neg = Block { lost: -5, ..b };
        let mut buf = [0u8; MAX_COMPOUND];
        let n = write_compound(&mut buf, 1, &SenderInfo::default(), Some(&neg), b"x");
        let mut got = Vec::new();
        assert!(read(&buf[..n], |_, _| {}, |b| got.push(b)));
        assert_eq!(got, vec![neg]);
    }

    #[test]
    fn jitter_is_rfc3550_a8_at_the_codec_clock() {
        let shared = Shared::default();
        let mut st = StreamRx::default();
        // 20 ms packets arriving alternately on time and 10 ms late (80
        // units at 8 kHz): |D| = 80 each time, J tends to 80.
        let seqs: Vec<u16> = (0..2000).collect();
        receive(&shared, &mut st, &seqs, |i| i as u64 * 20_000_000 + if i % 2 == 1 { 10_000_000 } else { 0 });
        let b = Reporter::default().block(&shared.read(), 0).expect("a block");
        assert!((75..=80).contains(&b.jitter), "jitter {}", b.jitter);
        // Evenly paced: none.
        let (shared, mut st) = (Shared::default(), StreamRx::default());
        receive(&shared, &mut st, &seqs, |i| i as u64 * 20_000_000 + 3_000_000);
        assert_eq!(Reporter::default().block(&shared.read(), 0).expect("a block").jitter, 0);
    }

    #[test]
    fn lsr_and_dlsr_give_the_round_trip() {
        // A sends an SR at NTP time t0; B receives it 3 ms later, reports
        // 0.5 s after that; A reads the report 3 ms later: 6 ms round trip.
        let unix0 = 1_704_067_200_123_456_789u64;
        let t0 = ntp(unix0);
        let mut buf = [0u8; MAX_COMPOUND];
        let info = SenderInfo { ntp: t0, rtp_ts: 4321, packets: 50, octets: 8000 };
        let n = write_compound(&mut buf, 0xa, &info, None, b"a@127.0.0.1");
        assert_eq!(n, 28 + 8 + 16, "SR without blocks, SDES padded to 32 bits");
        assert_eq!(buf[0], 0x80, "no report block before anything was received");
        // B reads it.
        let b_shared = Shared::default();
        let arrive = mid(ntp(unix0 + 3_000_000));
        let mut srs = Vec::new();
        assert!(read(&buf[..n], |ssrc, t| srs.push((ssrc, t)), |_| panic!("no block")));
        assert_eq!(srs, vec![(0xa, t0)]);
        b_shared.sender_report(mid(t0), arrive);
        let mut b_st = StreamRx::default();
        receive(&b_shared, &mut b_st, &[7, 8], |i| i as u64);
        // B reports 0.5 s after the SR arrived.
        let b_now = mid(ntp(unix0 + 503_000_000));
        let block = Reporter::default().block(&b_shared.read(), b_now).expect("a block");
        assert_eq!(block.lsr, mid(t0));
        assert!(block.dlsr.abs_diff(32_768) <= 1, "0.5 s in 1/65536 s: {}", block.dlsr);
        // A gets it 3 ms later.
        let rtt = block.rtt(mid(ntp(unix0 + 506_000_000))).expect("a round trip");
        let ms = rtt as f64 * 1000.0 / 65_536.0;
        assert!((ms - 6.0).abs() < 0.1, "round trip {ms} ms");
        assert_eq!(Block { lsr: 0, ..block }.rtt(b_now), None, "0/0 before any SR");
        // A reset (a new call in the leg) forgets the SR and the counts.
        b_shared.reset();
        assert_eq!(b_shared.read().last_sr, None);
        assert_eq!(Reporter::default().block(&b_shared.read(), b_now), None);
    }

    #[test]
    fn compound_layout_is_rfc3550() {
        let block = Block {
            ssrc: 0xb,
            fraction: 25,
            lost: 70_000,
            highest: 0x2_0005,
            jitter: 9,
            lsr: 0x1234_5678,
            dlsr: 65_536,
        };
        let info = SenderInfo { ntp: 0x0102_0304_0506_0708, rtp_ts: 0x0a0b_0c0d, packets: 3, octets: 480 };
        let mut buf = [0u8; MAX_COMPOUND + 8];
        let cname = b"0000000a@127.0.0.1";
        let n = write_compound(&mut buf, 0xa, &info, Some(&block), cname);
        // SR: 2 + 5 + 6 words; SDES: 1 + 1 + ceil((2 + 18 + 1) / 4) words.
        assert_eq!(n, 52 + 8 + 24);
        assert_eq!(&buf[..4], &[0x81, 200, 0, 12]);
        assert_eq!(&buf[8..16], &info.ntp.to_be_bytes());
        assert_eq!(&buf[16..28], &[0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 3, 0, 0, 1, 0xe0]);
        assert_eq!(&buf[28..36], &[0, 0, 0, 0xb, 25, 0x01, 0x11, 0x70]);
        assert_eq!(&buf[52..56], &[0x81, 202, 0, 7]);
        assert_eq!(&buf[60..62], &[1, 18]);
        assert_eq!(&buf[62..80], cname);
        assert!(buf[80..84].iter().all(|&b| b == 0), "end of the item list and padding");
        assert!(is_rtcp(&buf[..n]) && !is_rtcp(&[0x80, 0, 0, 0, 0, 0, 0, 0]));
        // A length past the end is refused; too small a buffer writes nothing.
        assert!(!read(&buf[..n - 4], |_, _| {}, |_| {}));
        assert_eq!(write_compound(&mut buf[..40], 0xa, &info, Some(&block), cname), 0);
        // The longest CNAME fits MAX_COMPOUND.
        let long = [b'c'; 200];
        let n = write_compound(&mut buf, 0xa, &info, Some(&block), &long);
        assert_eq!(n, MAX_COMPOUND);
    }
}
