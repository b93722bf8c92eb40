//! What call quality adds to the relay, per unit of work, beside the SRTP
//! work the relay does for the same packet anyway (the reference, measured
//! in the same run):
//!
//! - per RTP packet, in the worker: the interarrival jitter update
//!   (`ArrivalJitter::note` and the µs it publishes), beside one
//!   AES_CM_128_HMAC_SHA1_80 protect of a 172-byte G.711 packet (a relayed
//!   packet takes an unprotect and a protect);
//! - per RTCP report, in the worker: the fixed-size copy for the queue;
//! - per RTCP report, on the control plane: parsing a compound SR with one
//!   report block and an SDES CNAME into a call's book (the sender report
//!   and the block's sample: round trip, jitter, MOS), and, with Homer,
//!   its JSON and HEP3 packet.
//!
//! `cargo bench -p srtpgate-quality`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use srtp::{Context, CpuEngine, MasterKey, Policy, Suite};
use srtpgate_quality::{hep, rtcp, ArrivalJitter, Book, Model, RtcpCopy};
use std::hint::black_box;

/// An SR of `ssrc` answering `about`'s SR `lsr`, one block, SDES CNAME.
fn report(ssrc: u32, about: u32, ntp: u32, lsr: u32) -> Vec<u8> {
    let mut p = vec![0x81, 200, 0, 12];
    for w in [ssrc, ntp, 0x8000_0000, 160_000, 1000, 160_000] {
        p.extend(w.to_be_bytes());
    }
    p.extend(about.to_be_bytes());
    p.extend([3, 0, 0, 12]);
    for w in [71_000, 240, lsr, 6_553] {
        p.extend(w.to_be_bytes());
    }
    p.extend([0x81, 202, 0, 6]);
    p.extend(ssrc.to_be_bytes());
    p.extend([1, 17]);
    p.extend(b"phone@192.0.2.10 ");
    p.extend([0, 0, 0]);
    p
}

fn benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("call_quality");
    g.throughput(Throughput::Elements(1));

    // The reference: the SRTP protect of one G.711 packet.
    let suite = Suite::AES_CM_128_HMAC_SHA1_80;
    let key: Vec<u8> = (0..suite.master_key_len() as u8).collect();
    let salt: Vec<u8> = (0..suite.master_salt_len() as u8).collect();
    let mut ctx = Context::new(Policy::new(suite, MasterKey::new(suite, &key, &salt).unwrap()), CpuEngine::new())
        .expect("context");
    let mut pkt = vec![0x80, 0, 0, 0, 0, 0, 0, 0, 0xde, 0xad, 0xbe, 0xef];
    pkt.extend([0xd5; 160]);
    let mut out = [0u8; 256];
    let mut seq = 0u16;
    g.bench_function("reference_srtp_protect_172", |b| {
        b.iter(|| {
            seq = seq.wrapping_add(1);
            pkt[2..4].copy_from_slice(&seq.to_be_bytes());
            black_box(ctx.protect_rtp(black_box(&pkt), &mut out).expect("protect"));
        })
    });

    // Per RTP packet: the jitter update the worker makes.
    let mut j = ArrivalJitter::default();
    let mut k = 0u64;
    g.bench_function("per_rtp_packet_jitter", |b| {
        b.iter(|| {
            k += 1;
            // 20 ms apart, with a few ms of wobble.
            let arrival = k * 20_000_000 + (k * 7919 % 5) * 1_000_000;
            j.note(0xdead_beef, (k as u32).wrapping_mul(160), 8000, black_box(arrival));
            black_box(j.micros());
        })
    });

    // Per RTCP report, in the worker: the copy for the queue.
    let a = report(0xaaaa, 0xbbbb, 3_900_000_000, 0);
    let from = "192.0.2.10:40001".parse().unwrap();
    g.bench_function("per_report_worker_copy", |b| {
        b.iter(|| black_box(RtcpCopy::new(7, 0, 0, from, 1, black_box(&a))))
    });

    // Per RTCP report, on the control plane: both endpoints report in turn,
    // each answering the other's last SR, so every block has a round trip.
    let mut book = Book::default();
    let mut n = 0u32;
    g.bench_function("per_report_control_plane", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            let (me, other) = if n & 1 == 0 { (0xaaaa, 0xbbbb) } else { (0xbbbb, 0xaaaa) };
            let ntp = 3_900_000_000u32.wrapping_add(n);
            let pkt = report(me, other, ntp, (ntp.wrapping_sub(1) << 16) | 0x8000);
            let now = n as u64 * 2_500_000_000;
            for r in rtcp::reports(black_box(&pkt)) {
                if let Some(si) = &r.sender {
                    book.sender_report(r.ssrc, si, now);
                }
                for blk in &r.blocks {
                    black_box(book.receiver_report(
                        r.ssrc,
                        blk,
                        8000,
                        now + 30_000_000,
                        now / 1_000_000_000,
                        Model::Cq,
                    ));
                }
            }
        })
    });

    // With Homer: the JSON and the HEP3 packet.
    let mut hep_out = Vec::with_capacity(1024);
    g.bench_function("per_report_homer", |b| {
        b.iter(|| {
            let json = rtcp::homer_json(black_box(&a)).expect("json");
            let meta = hep::Meta {
                src: from,
                dst: "198.51.100.1:30001".parse().unwrap(),
                unix_us: 1_800_000_000_000_000,
                capture_id: 2001,
                correlation: "a-call-id@192.0.2.10",
            };
            hep::encode(&mut hep_out, &meta, hep::PROTO_RTCP_JSON, json.as_bytes()).expect("hep");
            black_box(&hep_out);
        })
    });
    g.finish();
}

criterion_group!(quality, benches);
criterion_main!(quality);
