//! A sender or receiver that restarts from persisted state (a relay that
//! crashed and came back): no index is ever protected twice under one key
//! (keystream reuse), the rollover counter goes on, replays from before the
//! restart are refused, and key lifetimes keep their use. On the `cpu` and
//! `portable` engines.

use srtp::{Context, CpuEngine, Engine, Error, MasterKey, Policy, PortableEngine, StreamState, Suite};
use std::collections::{HashMap, HashSet};

const SUITE: Suite = Suite::AES_CM_128_HMAC_SHA1_80;
/// SRTP indices reserved ahead of the one asked for.
const SPAN: u64 = 200;
/// SRTCP indices reserved ahead.
const RTCP_SPAN: u32 = 8;
const SSRC: u32 = 0x1234_5678;

fn policy(lifetime: Option<u64>) -> Policy {
    let mut mk = MasterKey::new(SUITE, &[7; 16], &[9; 14]).unwrap();
    if let Some(l) = lifetime {
        mk = mk.with_lifetime(l);
    }
    Policy::new(SUITE, mk)
}

fn rtp(seq: u16, n: u64) -> Vec<u8> {
    let mut body = n.to_be_bytes().to_vec();
    body.resize(160, 0xd5);
    srtpgate_testkit::packets::Rtp::new(SSRC, seq).ts(n as u32 * 160).packet(&body)
}

fn rtcp(n: u32) -> Vec<u8> {
    let mut p = vec![0x80, 200, 0, 6];
    p.extend_from_slice(&SSRC.to_be_bytes());
    p.extend_from_slice(&n.to_be_bytes());
    p.resize(28, 0);
    p
}

/// What the sender persisted ("Redis"): its reservations, written before
/// they are made.
#[derive(Default)]
struct Store {
    /// Highest SRTP index reserved.
    rtp: Option<u64>,
    /// The SRTCP index after the reservation.
    rtcp_end: u32,
}

impl Store {
    fn state(&self) -> StreamState {
        StreamState { ssrc: SSRC, tx: true, rtp: self.rtp, rtcp: Some(self.rtcp_end) }
    }

    /// Persists a larger reservation, then makes it.
    fn renew<E: Engine>(&mut self, ctx: &mut Context<E>, rtp: Option<u64>, rtcp: Option<u32>) {
        if let Some(i) = rtp {
            self.rtp = Some(self.rtp.unwrap_or(0).max(i + SPAN));
        }
        if let Some(i) = rtcp {
            self.rtcp_end = self.rtcp_end.max(i + RTCP_SPAN);
        }
        let end = self.rtcp_end;
        ctx.reserve(SSRC, self.rtp, end.saturating_sub(1)).unwrap();
    }
}

/// The sender's side of the test: protects, renewing its reservation when
/// asked; records every (kind, index) used.
struct Sender<E: Engine> {
    ctx: Context<E>,
    store: Store,
    used: HashSet<(bool, u64)>,
    refused_after_restart: u64,
}

impl<E: Engine> Sender<E> {
    fn protect(&mut self, plain: &[u8], is_rtcp: bool) -> Option<Vec<u8>> {
        let mut out = vec![0u8; plain.len() + srtp::MAX_RTCP_TRAILER_LEN];
        for _ in 0..2 {
            let r =
                if is_rtcp { self.ctx.protect_rtcp(plain, &mut out) } else { self.ctx.protect_rtp(plain, &mut out) };
            match r {
                Ok(n) => {
                    out.truncate(n);
                    let index = if is_rtcp {
                        // E flag and index word before the 10-byte tag.
                        u64::from(u32::from_be_bytes(out[n - 14..n - 10].try_into().unwrap()) & 0x7fff_ffff)
                    } else {
                        (u64::from(self.ctx.roc(SSRC, true).unwrap()) << 16)
                            | u64::from(u16::from_be_bytes([plain[2], plain[3]]))
                    };
                    assert!(self.used.insert((is_rtcp, index)), "index {index} (rtcp {is_rtcp}) protected twice");
                    return Some(out);
                }
                Err(Error::NotReserved { ssrc, index }) => {
                    assert_eq!(ssrc, SSRC);
                    if is_rtcp {
                        self.store.renew(&mut self.ctx, None, Some(index as u32));
                    } else {
                        self.store.renew(&mut self.ctx, Some(index), None);
                    }
                }
                // After a restart: an index the reservation before it may
                // have covered.
                Err(Error::Replayed) => {
                    self.refused_after_restart += 1;
                    return None;
                }
                Err(e) => panic!("protect: {e}"),
            }
        }
        panic!("still not reserved after renewing");
    }
}

/// A sender crashes after `crash_at` packets and restarts from what it
/// persisted; `lost` packets of the source go by while it is down. The
/// receiver, which did not restart, must authenticate everything sent.
fn sender_restarts<E: Engine + Clone>(engine: E, crash_at: u64, lost: u64, stale: bool) {
    let total = crash_at + lost + 600;
    let start_seq = 0u16.wrapping_sub(300);
    let mut rx = Context::new(policy(None), engine.clone()).unwrap();
    let new_sender = || {
        let mut ctx = Context::new(policy(None), engine.clone()).unwrap();
        ctx.set_reserving(true);
        ctx
    };
    let mut s = Sender { ctx: new_sender(), store: Store::default(), used: HashSet::new(), refused_after_restart: 0 };
    let (mut received, mut reports, mut report_tries) = (0u64, 0u32, 0u32);
    let mut plain = vec![0u8; 400];
    for n in 0..total {
        if n == crash_at {
            // The crash: the context is gone; what was persisted is not.
            s.ctx = new_sender();
            let mut st = s.store.state();
            if stale {
                // The control: where the stream stood when it last reserved,
                // not the reservation.
                st.rtp = st.rtp.map(|r| r - SPAN);
            }
            s.ctx.resume(&st).unwrap();
            // The last packets before the crash come again, with other
            // payloads (a plain-RTP source can be spoofed): none may be
            // protected under an index already used.
            for old in crash_at.saturating_sub(30)..crash_at {
                let mut p = rtp(start_seq.wrapping_add(old as u16), old);
                p[20] ^= 0xff;
                assert!(s.protect(&p, false).is_none(), "old packet {old} protected again");
            }
            s.refused_after_restart = 0;
        }
        if (crash_at..crash_at + lost).contains(&n) {
            continue;
        }
        let p = rtp(start_seq.wrapping_add(n as u16), n);
        if let Some(wire) = s.protect(&p, false) {
            let len = rx.unprotect_rtp(&wire, &mut plain).unwrap_or_else(|e| panic!("packet {n}: {e}"));
            assert_eq!(&plain[..len], &p[..]);
            received += 1;
        }
        if n % 50 == 49 {
            report_tries += 1;
            let r = rtcp(n as u32);
            if let Some(wire) = s.protect(&r, true) {
                let len = rx.unprotect_rtcp(&wire, &mut plain).unwrap_or_else(|e| panic!("report {n}: {e}"));
                assert_eq!(&plain[..len], &r[..]);
                reports += 1;
            }
        }
    }
    // Only packets within the reservation made before the crash are refused
    // after it, and never an SRTCP report (it takes the next index free).
    assert!(s.refused_after_restart <= SPAN, "{} refused", s.refused_after_restart);
    assert_eq!(received + s.refused_after_restart, total - lost);
    assert_eq!(reports, report_tries);
    // The rollover counter went on across the wrap and the restart.
    assert_eq!(rx.roc(SSRC, false), Some(((u64::from(start_seq) + total - 1) >> 16) as u32));
}

#[test]
fn a_sender_restarted_from_its_reservations_never_protects_an_index_twice() {
    for (crash_at, lost) in [(250, 0), (250, 20), (1000, 0), (1000, 20), (1000, 500)] {
        sender_restarts(CpuEngine::new(), crash_at, lost, false);
        sender_restarts(PortableEngine::new(), crash_at, lost, false);
    }
}

/// The control: resumed from where the stream stood instead of from its
/// reservation, the sender protects indices it used before the crash.
#[test]
#[should_panic(expected = "protected twice")]
fn a_sender_restarted_from_a_stale_state_would_reuse_keystream() {
    sender_restarts(CpuEngine::new(), 1000, 0, true);
}

/// A receiver persists its state every 100 packets, crashes after 450 and
/// restarts from the last state: replays of anything up to that state are
/// refused, and the stream goes on across the wrap.
fn receiver_restarts<E: Engine + Clone>(engine: E) {
    let start_seq = 0u16.wrapping_sub(200);
    let mut tx = Context::new(policy(None), engine.clone()).unwrap();
    let mut rx = Context::new(policy(None), engine.clone()).unwrap();
    let mut wires = HashMap::new();
    let mut persisted = Vec::new();
    let mut plain = vec![0u8; 400];
    let mut out = vec![0u8; 400];
    for n in 0..900u64 {
        if n == 450 {
            rx = Context::new(policy(None), engine.clone()).unwrap();
            for st in &persisted {
                rx.resume(st).unwrap();
            }
            // Every packet up to the persisted state comes again: refused.
            for old in 0..400 {
                let w: &Vec<u8> = &wires[&old];
                assert_eq!(rx.unprotect_rtp(w, &mut plain), Err(Error::Replayed), "old packet {old}");
            }
        }
        let p = rtp(start_seq.wrapping_add(n as u16), n);
        let len = tx.protect_rtp(&p, &mut out).unwrap();
        wires.insert(n, out[..len].to_vec());
        if (450..460).contains(&n) {
            // Lost while the receiver was down.
            continue;
        }
        let got = rx.unprotect_rtp(&out[..len], &mut plain).unwrap_or_else(|e| panic!("packet {n}: {e}"));
        assert_eq!(&plain[..got], &p[..]);
        if n % 100 == 99 {
            persisted = rx.streams_state().into_iter().filter(|s| !s.tx).collect();
            assert_eq!(persisted.len(), 1);
        }
    }
    assert_eq!(rx.roc(SSRC, false), Some(1));
}

#[test]
fn a_receiver_restarted_from_its_state_refuses_old_packets_and_keeps_the_rollover_counter() {
    receiver_restarts(CpuEngine::new());
    receiver_restarts(PortableEngine::new());
}

#[test]
fn a_reserving_sender_protects_only_reserved_indices() {
    let mut ctx = Context::new(policy(None), CpuEngine::new()).unwrap();
    ctx.set_reserving(true);
    let mut out = vec![0u8; 400];
    let p = rtp(1000, 0);
    assert_eq!(ctx.protect_rtp(&p, &mut out), Err(Error::NotReserved { ssrc: SSRC, index: 1000 }));
    assert_eq!(ctx.protect_rtcp(&rtcp(0), &mut out), Err(Error::NotReserved { ssrc: SSRC, index: 0 }));
    ctx.reserve(SSRC, Some(1001), 0).unwrap();
    ctx.protect_rtp(&rtp(1000, 0), &mut out).unwrap();
    ctx.protect_rtp(&rtp(1001, 1), &mut out).unwrap();
    assert_eq!(ctx.protect_rtp(&rtp(1002, 2), &mut out), Err(Error::NotReserved { ssrc: SSRC, index: 1002 }));
    ctx.protect_rtcp(&rtcp(0), &mut out).unwrap();
    assert_eq!(ctx.protect_rtcp(&rtcp(1), &mut out), Err(Error::NotReserved { ssrc: SSRC, index: 1 }));
    // Reservations only grow.
    ctx.reserve(SSRC, Some(10), 0).unwrap();
    assert!(ctx.protect_rtp(&rtp(1002, 2), &mut out).is_err());
    ctx.reserve(SSRC, Some(5000), 3).unwrap();
    ctx.protect_rtp(&rtp(1002, 2), &mut out).unwrap();
    ctx.protect_rtcp(&rtcp(1), &mut out).unwrap();
    // A stream reserved for SRTCP only may send no SRTP yet.
    ctx.reserve(0x99, None, 4).unwrap();
    let other = |seq: u16| {
        let mut p = rtp(seq, 0);
        p[8..12].copy_from_slice(&0x99u32.to_be_bytes());
        p
    };
    assert_eq!(ctx.protect_rtp(&other(40_000), &mut out), Err(Error::NotReserved { ssrc: 0x99, index: 40_000 }));
    ctx.reserve(0x99, Some(40_010), 4).unwrap();
    ctx.protect_rtp(&other(40_000), &mut out).unwrap();
    // Turned off, nothing is held back.
    ctx.set_reserving(false);
    ctx.protect_rtp(&rtp(9000, 3), &mut out).unwrap();
    for k in 2..10 {
        ctx.protect_rtcp(&rtcp(k), &mut out).unwrap();
    }
    // Turned on again, a running stream needs a new reservation.
    ctx.set_reserving(true);
    assert_eq!(ctx.protect_rtp(&rtp(9001, 4), &mut out), Err(Error::NotReserved { ssrc: SSRC, index: 9001 }));
}

#[test]
fn a_restarted_context_keeps_its_keys_lifetime_use() {
    let mut a = Context::new(policy(Some(100)), CpuEngine::new()).unwrap();
    let mut out = vec![0u8; 400];
    for n in 0..60u64 {
        a.protect_rtp(&rtp(n as u16, n), &mut out).unwrap();
    }
    let uses = a.key_uses();
    assert_eq!(uses, vec![(60, 0)]);
    let mut b = Context::new(policy(Some(100)), CpuEngine::new()).unwrap();
    b.resume_key_uses(&uses);
    b.resume(&StreamState { ssrc: SSRC, tx: true, rtp: Some(59), rtcp: Some(0) }).unwrap();
    for n in 60..100u64 {
        b.protect_rtp(&rtp(n as u16, n), &mut out).unwrap();
    }
    assert_eq!(b.protect_rtp(&rtp(100, 100), &mut out), Err(Error::KeyExpired));
}

/// What a relay's receive side kept before it crashed: nothing (the stream
/// was younger than the first write), or a state from before the sender's
/// last sequence-number wrap (the crash fell between the wrap and the
/// write).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kept {
    Nothing,
    Before(u64),
}

/// A sender starts at `start_seq`; the receiver crashes after packet
/// `crash_at` and resumes from `kept`. Every packet after the restart
/// opens, once the receive side is taken as resumed
/// ([`Context::resume_rx`]); replays of what was kept are refused, and a
/// forged packet changes nothing.
fn receiver_resumes_behind_a_wrap<E: Engine + Clone>(engine: E, start_seq: u16, crash_at: u64, kept: Kept) {
    let what = format!("start {start_seq}, crash after {crash_at}, kept {kept:?}");
    let mut tx = Context::new(policy(None), engine.clone()).unwrap();
    let mut rx = Context::new(policy(None), engine.clone()).unwrap();
    let mut wires = Vec::new();
    let (mut plain, mut out) = (vec![0u8; 400], vec![0u8; 400]);
    let mut state = Vec::new();
    for n in 0..crash_at + 300 {
        let p = rtp(start_seq.wrapping_add(n as u16), n);
        let len = tx.protect_rtp(&p, &mut out).unwrap();
        wires.push(out[..len].to_vec());
        if Kept::Before(n) == kept {
            state = rx.streams_state();
        }
        if n == crash_at {
            rx = Context::new(policy(None), engine.clone()).unwrap();
            rx.resume_rx();
            for st in &state {
                rx.resume(st).unwrap();
            }
            if let Kept::Before(k) = kept {
                // What was kept (up to the packet before `k`) comes again:
                // refused.
                for old in k.saturating_sub(50)..k {
                    let got = rx.unprotect_rtp(&wires[old as usize], &mut plain);
                    assert!(got.is_err(), "{what}: old packet {old} accepted");
                }
            }
            // A forged packet (a good one with its tag broken) is refused
            // under both rollover counters and moves nothing (where it is
            // old under the kept state, it counts as a replay).
            let mut forged = wires[n as usize].clone();
            let at = forged.len() - 1;
            forged[at] ^= 1;
            let got = rx.unprotect_rtp(&forged, &mut plain);
            assert!(matches!(got, Err(Error::AuthFailed | Error::Replayed)), "{what}: forged packet: {got:?}");
        }
        if n + 1 < crash_at || n >= crash_at {
            let got = rx.unprotect_rtp(&out[..len], &mut plain).unwrap_or_else(|e| panic!("{what}: packet {n}: {e}"));
            assert_eq!(&plain[..got], &p[..], "{what}");
        }
    }
    let last = u64::from(start_seq) + crash_at + 299;
    assert_eq!(rx.roc(SSRC, false), Some((last >> 16) as u32), "{what}");
    // Confirmed: a replay of the first packets after the restart is refused.
    let got = rx.unprotect_rtp(&wires[crash_at as usize], &mut plain);
    assert_eq!(got, Err(Error::Replayed), "{what}");
}

#[test]
fn a_receiver_resumed_from_before_the_last_wrap_takes_the_next_rollover() {
    let near_wrap = 0u16.wrapping_sub(100);
    for engine in [0, 1] {
        let run = |start, crash, kept| match engine {
            0 => receiver_resumes_behind_a_wrap(CpuEngine::new(), start, crash, kept),
            _ => receiver_resumes_behind_a_wrap(PortableEngine::new(), start, crash, kept),
        };
        // Nothing kept: the stream wrapped 50 packets before the crash.
        run(near_wrap, 150, Kept::Nothing);
        // Nothing kept, no wrap: rollover 0 as ever.
        run(1000, 150, Kept::Nothing);
        // Kept at sequence 65 500 (the estimate bridges the wrap by itself).
        run(near_wrap, 150, Kept::Before(64));
        // Kept at sequence 30 000, the stream then ran past 2^16 + 29 000:
        // the estimate under the kept state is an old index.
        run(30_000 - 500, 65_000, Kept::Before(500));
        // Kept at sequence 20 000, now past the wrap at 19 000.
        run(19_000, 60_000, Kept::Before(1000));
    }
}

/// A receive side not taken as resumed does not try the next rollover
/// counter: a stream it meets after the sender's wrap does not open (the
/// case [`Context::resume_rx`] is for).
#[test]
fn without_resume_rx_a_stream_met_after_its_wrap_does_not_open() {
    let mut tx = Context::new(policy(None), CpuEngine::new()).unwrap();
    let mut rx = Context::new(policy(None), CpuEngine::new()).unwrap();
    let (mut plain, mut out) = (vec![0u8; 400], vec![0u8; 400]);
    let mut last = Err(Error::AuthFailed);
    for n in 0..200u64 {
        let len = tx.protect_rtp(&rtp(0u16.wrapping_sub(100).wrapping_add(n as u16), n), &mut out).unwrap();
        if n >= 150 {
            last = rx.unprotect_rtp(&out[..len], &mut plain);
            assert_eq!(last, Err(Error::AuthFailed), "packet {n}");
        }
    }
    assert!(last.is_err());
}

/// The batch path: a prepared packet that fails says whether the next
/// rollover is worth a try, and [`Context::retry_next_roc`] opens it.
#[test]
fn the_batch_path_retries_under_the_next_rollover() {
    let mut tx = Context::new(policy(None), CpuEngine::new()).unwrap();
    let mut rx = Context::new(policy(None), CpuEngine::new()).unwrap();
    rx.resume_rx();
    let mut out = vec![0u8; 400];
    let mut wire = Vec::new();
    for n in 0..110u64 {
        let len = tx.protect_rtp(&rtp(0u16.wrapping_sub(100).wrapping_add(n as u16), n), &mut out).unwrap();
        wire = out[..len].to_vec();
    }
    let mut buf = vec![0u8; 400];
    let p = rx.prepare(srtp::Kind::Rtp, srtp::Op::Unprotect, &wire, &mut buf).unwrap();
    assert!(p.next_roc_possible());
    let outcome = {
        let mut job = [rx.job(&p, &mut buf).unwrap()];
        rx.engine().transform(&mut job);
        job[0].outcome
    };
    assert_eq!(rx.commit(&p, outcome, &buf), Err(Error::AuthFailed));
    let n = rx.retry_next_roc(&p, &wire, &mut buf).unwrap();
    assert_eq!(u16::from_be_bytes([buf[2], buf[3]]), 9);
    assert_eq!(n, 12 + 160);
    assert_eq!(rx.roc(SSRC, false), Some(1));
    // Confirmed now: the next packet is not offered a second try.
    let len = tx.protect_rtp(&rtp(10, 110), &mut out).unwrap();
    let p = rx.prepare(srtp::Kind::Rtp, srtp::Op::Unprotect, &out[..len], &mut buf).unwrap();
    assert!(!p.next_roc_possible());
    assert_eq!(rx.retry_next_roc(&p, &out[..len], &mut buf), Err(Error::AuthFailed));
}
