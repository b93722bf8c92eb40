//! `srtpgate loadgen quality`: one transcoded call through a relay (srtpgate
//! or rtpengine, over NG), both endpoints sending real speech at the same
//! time, with packet loss and jitter put on what they send; each endpoint
//! then decodes what it received the way a phone with a jitter buffer
//! would (in RTP time order, gaps concealed by its own decoder), and the
//! audio is written as WAV files for PESQ (`bench/quality/run.py`).
//!
//! It also reports what a listener cannot see: the delay each packet had
//! through the relay (by sequence number, which both relays keep at equal
//! packet times), how many packets were held longer than a packet time,
//! and the RTP clock rate seen on the wire (RTP time over arrival time:
//! a relay that closes timestamp gaps shows a slower clock under loss).

use super::{setup_call, Audio, NgClient, RxLeg, TxMsg};
use crossbeam_channel::unbounded;
use rand::{Rng, SeedableRng};
use srtp::Suite;
use srtpgate_codec::{abi, Instance, Registry};
use srtpgate_sdp::formats::Format;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Options of `srtpgate loadgen quality`.
#[derive(clap::Args, Debug)]
pub struct QualityArgs {
    /// The relay's NG address.
    #[arg(long, default_value = "127.0.0.1:2223")]
    pub ng: SocketAddr,
    /// The caller's only codec.
    #[arg(long)]
    pub codec: String,
    /// The callee's only codec (the relay transcodes).
    #[arg(long = "transcode-to")]
    pub to: String,
    /// Speech: a mono 16-bit WAV at the endpoints' PCM rate.
    #[arg(long)]
    pub speech: PathBuf,
    /// PCM rate of the endpoints' codecs (encode and decode), Hz.
    #[arg(long = "phone-rate", default_value_t = 8000)]
    pub phone_rate: u32,
    /// Packets each endpoint loses on the way to the relay, percent.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Extra delay of each packet on the way to the relay: uniform in 0..=MS.
    #[arg(long, default_value_t = 0)]
    pub jitter: u32,
    /// Seed of the loss and jitter.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Packet time, ms.
    #[arg(long, default_value_t = 20)]
    pub ptime: u32,
    /// Directory for the WAV files and `quality.json`.
    #[arg(long)]
    pub out: PathBuf,
    /// Codec plugins (the endpoints' codecs come from here too).
    #[arg(long = "codec-plugin-dir", env = "SRTPGATE_CODEC_PLUGIN_DIR")]
    pub plugin_dir: Option<PathBuf>,
    /// The endpoints' address.
    #[arg(long, default_value = "127.0.0.1")]
    pub ip: IpAddr,
}

/// One endpoint's codec state at the phone rate.
fn phone(reg: &Registry, f: &Format, rate: u32, uses: u32, fmtp: Option<&str>) -> Result<Instance, String> {
    let (p, i) = reg.find(&f.name, f.clock_rate, f.channels).ok_or_else(|| format!("no codec {f}"))?;
    p.instance_for(i, fmtp, Some(rate), uses).map_err(|e| e.to_string())
}

fn read_wav(path: &Path, rate: u32) -> Result<Vec<i16>, String> {
    let r = hound::WavReader::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let s = r.spec();
    if s.channels != 1 || s.bits_per_sample != 16 || s.sample_rate != rate {
        return Err(format!("{}: {s:?}; want mono 16-bit at {rate} Hz", path.display()));
    }
    r.into_samples::<i16>().collect::<Result<_, _>>().map_err(|e| e.to_string())
}

fn write_wav(path: &Path, rate: u32, pcm: &[i16]) -> Result<(), String> {
    let spec =
        hound::WavSpec { channels: 1, sample_rate: rate, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
    let mut w = hound::WavWriter::create(path, spec).map_err(|e| format!("{}: {e}", path.display()))?;
    for &s in pcm {
        w.write_sample(s).map_err(|e| e.to_string())?;
    }
    w.finalize().map_err(|e| e.to_string())
}

/// A packet an endpoint received: arrival (ns since the start), sequence
/// number, RTP time, payload type, payload.
struct Got {
    at: u64,
    seq: u16,
    ts: u32,
    pt: u8,
    payload: Vec<u8>,
}

/// What a phone plays from the packets it received: in RTP time order,
/// each packet's audio at its time, gaps filled by its decoder's
/// concealment (up to 200 ms, silence beyond), late duplicates dropped.
fn play(got: &[Got], pt: u8, clock: u32, dec: &mut Instance) -> Vec<i16> {
    let rate = dec.pcm_rate() as i64;
    let mut pk: Vec<&Got> = got.iter().filter(|g| g.pt == pt).collect();
    let Some(first) = pk.first().map(|g| g.ts) else { return Vec::new() };
    pk.sort_by_key(|g| g.ts.wrapping_sub(first) as i32);
    let mut out: Vec<i16> = Vec::new();
    let mut buf = vec![0i16; rate as usize];
    for g in pk {
        let pos = (g.ts.wrapping_sub(first) as i32 as i64 * rate / clock as i64).max(0) as usize;
        if pos < out.len() {
            continue;
        }
        let gap = pos - out.len();
        if gap > 0 {
            let at = out.len();
            out.resize(pos, 0);
            if gap <= rate as usize / 5 {
                let _ = dec.conceal(&mut out[at..]);
            }
        }
        if let Ok(n) = dec.decode(&g.payload, &mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
    }
    out
}

/// Percentile `q` of sorted values.
fn pct(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Runs `srtpgate loadgen quality`.
pub fn run(args: QualityArgs) -> Result<(), String> {
    let mut reg = Registry::new();
    if let Some(dir) = &args.plugin_dir {
        for e in reg.load_dir(dir).map_err(|e| e.to_string())? {
            eprintln!("loadgen: codec plugin not loaded: {e}");
        }
    }
    let mut audio = Audio::new(&reg, &args.codec, Some(&args.to), args.ptime)?;
    // The phones do not use G.729 Annex B (so neither relay sends them DTX,
    // and every packet time carries a packet): they say so in their SDP.
    for f in audio.codecs.iter_mut().filter(|f| f.name.eq_ignore_ascii_case("G729")) {
        f.fmtp = Some("annexb=no".into());
    }
    let speech = read_wav(&args.speech, args.phone_rate)?;
    let socks = [UdpSocket::bind((args.ip, 0)), UdpSocket::bind((args.ip, 0))];
    let [Ok(s0), Ok(s1)] = socks else { return Err("cannot bind the endpoints' sockets".into()) };
    let socks = [s0, s1];
    let ports: Vec<u16> = socks.iter().map(|s| s.local_addr().map(|a| a.port()).unwrap_or(0)).collect();
    let mut ng = NgClient::new(args.ng)?;
    let (tx, tx_rx) = unbounded();
    let (rx, rx_rx) = unbounded::<RxLeg>();
    let call_id = format!("quality-{}-{}", std::process::id(), args.seed);
    setup_call(
        &mut ng,
        &call_id,
        0,
        0,
        args.ip,
        &ports,
        &[],
        Suite::AES_CM_128_HMAC_SHA1_80,
        (&tx, &rx, None),
        Some(&audio),
        false,
        None,
    )?;
    let mut txl: Vec<Box<super::TxLeg>> = Vec::new();
    while let Ok(TxMsg::Add(l)) = tx_rx.try_recv() {
        txl.push(l);
    }
    let mut rxl: Vec<RxLeg> = rx_rx.try_iter().collect();
    txl.sort_by_key(|l| l.leg);
    rxl.sort_by_key(|l| l.leg);
    if txl.len() != 2 || rxl.len() != 2 {
        return Err("call set-up gave no legs".into());
    }
    // Each endpoint's codec: what it offered (caller) or was offered (callee).
    let pts = [txl[0].pt, txl[1].pt];
    let fmt = |side: usize| -> Format {
        let mut f = audio.codecs[side].clone();
        f.pt = pts[side];
        f
    };
    let rate = args.phone_rate;
    let frame = (rate * args.ptime / 1000) as usize;
    let n = speech.len() / frame;
    let mut frames: Vec<Vec<Vec<u8>>> = Vec::new();
    for side in 0..2 {
        let f = fmt(side);
        // The endpoints' encoders: Opus with FEC sized for the loss put on
        // the path, G.729 without Annex B; the same for both relays.
        let fmtp = match f.name.to_ascii_lowercase().as_str() {
            "opus" => Some("useinbandfec=1"),
            "g729" => Some("annexb=no"),
            _ => None,
        };
        let mut enc = phone(&reg, &f, rate, abi::USE_ENCODE, fmtp)?;
        let _ = enc.control(abi::CTL_PACKET_LOSS, args.loss.ceil() as i32);
        let mut out = vec![0u8; 4000];
        let mut list = Vec::with_capacity(n);
        for k in 0..n {
            let m = enc.encode(&speech[k * frame..(k + 1) * frame], &mut out).map_err(|e| e.to_string())?;
            list.push(out[..m].to_vec());
        }
        frames.push(list);
    }
    // The schedule: every packet of both endpoints, minus the lost ones,
    // each at its time plus its jitter.
    let mut rng = rand::rngs::StdRng::seed_from_u64(args.seed);
    let period = args.ptime as u64 * 1_000_000;
    let mut plan: Vec<(u64, usize, usize)> = Vec::new();
    let mut lost = [0u64; 2];
    let mut lost_at: [Vec<usize>; 2] = [Vec::new(), Vec::new()];
    for k in 0..n {
        for (side, lost) in lost.iter_mut().enumerate() {
            if rng.random::<f64>() * 100.0 < args.loss {
                *lost += 1;
                lost_at[side].push(k);
                continue;
            }
            let j = if args.jitter > 0 { rng.random_range(0..=args.jitter as u64 * 1_000_000) } else { 0 };
            plan.push((k as u64 * period + j, side, k));
        }
    }
    plan.sort();
    for s in &socks {
        s.set_nonblocking(true).map_err(|e| e.to_string())?;
    }
    let clocks = [fmt(0).clock_rate, fmt(1).clock_rate];
    let ts0 = [rand::random::<u32>(), rand::random::<u32>()];
    let seq0 = [rand::random::<u16>() & 0x7fff, rand::random::<u16>() & 0x7fff];
    let mut sent_at = vec![vec![0u64; n]; 2];
    let mut got: [Vec<Got>; 2] = [Vec::new(), Vec::new()];
    let mut plain = vec![0u8; 1500];
    let mut wire = vec![0u8; 1600];
    let mut buf = vec![0u8; 2048];
    let start = Instant::now();
    let now = || start.elapsed().as_nanos() as u64;
    let end = plan.last().map_or(0, |p| p.0) + 500_000_000;
    let mut next = 0;
    while now() < end {
        while next < plan.len() && plan[next].0 <= now() {
            let (_, side, k) = plan[next];
            next += 1;
            let l = &mut txl[side];
            let f = &frames[side][k];
            let ts = ts0[side].wrapping_add((k as u64 * clocks[side] as u64 * args.ptime as u64 / 1000) as u32);
            plain[0] = 0x80;
            plain[1] = l.pt;
            plain[2..4].copy_from_slice(&seq0[side].wrapping_add(k as u16).to_be_bytes());
            plain[4..8].copy_from_slice(&ts.to_be_bytes());
            plain[8..12].copy_from_slice(&l.ssrc.to_be_bytes());
            plain[12..12 + f.len()].copy_from_slice(f);
            if let Ok(m) = l.ctx.protect_rtp(&plain[..12 + f.len()], &mut wire) {
                sent_at[side][k] = now();
                let _ = socks[side].send_to(&wire[..m], l.to);
            }
        }
        let mut idle = true;
        for side in 0..2 {
            while let Ok((m, _)) = socks[side].recv_from(&mut buf) {
                idle = false;
                if m < 12 || (192..=223).contains(&buf[1]) {
                    continue;
                }
                let mut p = vec![0u8; m];
                if let Ok(len) = rxl[side].ctx.unprotect_rtp(&buf[..m], &mut p) {
                    p.truncate(len);
                    got[side].push(Got {
                        at: now(),
                        seq: u16::from_be_bytes([p[2], p[3]]),
                        ts: u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
                        pt: p[1] & 0x7f,
                        payload: p[12..].to_vec(),
                    });
                }
            }
        }
        if idle {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    super::delete(&mut ng, &call_id);
    std::fs::create_dir_all(&args.out).map_err(|e| format!("{}: {e}", args.out.display()))?;
    let mut report = serde_json::Map::new();
    for (side, name) in [(1usize, "callee"), (0, "caller")] {
        let f = fmt(side);
        let mut dec = phone(&reg, &f, rate, abi::USE_DECODE, None)?;
        let pcm = play(&got[side], f.pt, f.clock_rate, &mut dec);
        let file = args.out.join(format!("heard-by-{name}.wav"));
        write_wav(&file, rate, &pcm)?;
        // Delay through the relay, by sequence number (the other side sent it).
        let other = 1 - side;
        let mut delays: Vec<f64> = got[side]
            .iter()
            .filter(|g| g.pt == f.pt)
            .filter_map(|g| {
                let k = g.seq.wrapping_sub(seq0[other]) as usize;
                let s = *sent_at[other].get(k)?;
                (s > 0 && g.at >= s).then(|| (g.at - s) as f64 / 1e6)
            })
            .collect();
        delays.sort_by(f64::total_cmp);
        let held = delays.iter().filter(|&&d| d > args.ptime as f64).count();
        // The RTP clock seen on the wire: RTP time over arrival time.
        let audio_pk: Vec<&Got> = got[side].iter().filter(|g| g.pt == f.pt).collect();
        let wire_clock = match (audio_pk.first(), audio_pk.last()) {
            (Some(a), Some(b)) if b.at > a.at + 1_000_000_000 => {
                b.ts.wrapping_sub(a.ts) as f64 / ((b.at - a.at) as f64 / 1e9)
            }
            _ => f64::NAN,
        };
        report.insert(
            name.to_string(),
            serde_json::json!({
                "codec": f.to_string(),
                "wav": file.file_name().map(|f| f.to_string_lossy().into_owned()),
                "samples": pcm.len(),
                "sent_by_other": n as u64 - lost[other],
                "lost_before_relay": lost[other],
                "lost_packets": lost_at[other],
                "received": got[side].len(),
                "delay_ms_p50": pct(&delays, 0.5),
                "delay_ms_p99": pct(&delays, 0.99),
                "delay_ms_max": pct(&delays, 1.0),
                "held_over_ptime": held,
                "wire_clock_hz": wire_clock,
                "codec_clock_hz": f.clock_rate,
            }),
        );
    }
    let out = serde_json::json!({
        "ng": args.ng.to_string(), "caller": args.codec, "callee": args.to, "loss_pct": args.loss,
        "jitter_ms": args.jitter, "seed": args.seed, "phone_rate": rate, "packets_per_side": n,
        "sides": report,
    });
    let text = serde_json::to_string_pretty(&out).map_err(|e| e.to_string())?;
    std::fs::write(args.out.join("quality.json"), &text).map_err(|e| e.to_string())?;
    println!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pcmu(reg: &Registry) -> Instance {
        let (p, i) = reg.find("PCMU", 8000, 1).expect("PCMU");
        p.instance(i, None, None).expect("state")
    }

    #[test]
    fn a_phone_plays_packets_in_rtp_time_with_gaps_concealed() {
        let reg = Registry::new();
        let tone: Vec<u8> =
            (0..160).map(|i| srtpgate_codec::g711::ulaw_encode((8000.0 * (i as f64 * 0.785).sin()) as i16)).collect();
        let pk = |seq: u16, ts: u32| Got { at: 0, seq, ts, pt: 0, payload: tone.clone() };
        // Out of order, a duplicate, packet 3 lost, and a foreign payload type.
        let mut got = vec![pk(0, 1000), pk(2, 1320), pk(1, 1160), pk(2, 1320), pk(4, 1640)];
        got.push(Got { at: 0, seq: 9, ts: 1000, pt: 101, payload: vec![1, 2, 3, 4] });
        let out = play(&got, 0, 8000, &mut pcmu(&reg));
        assert_eq!(out.len(), 5 * 160, "packets at their times, the gap filled");
        // The concealed 20 ms continue the signal (not silence).
        assert!(out[480..640].iter().any(|&s| s.abs() > 1000));
        // A gap over 200 ms is silence.
        let out = play(&[pk(0, 0), pk(1, 160 + 8000)], 0, 8000, &mut pcmu(&reg));
        assert_eq!(out.len(), 320 + 8000);
        assert!(out[1000..8000].iter().all(|&s| s == 0));
        assert!(play(&[], 0, 8000, &mut pcmu(&reg)).is_empty());
        assert_eq!(pct(&[1.0, 2.0, 3.0], 0.5), 2.0);
    }

    #[test]
    fn speech_files_of_another_format_are_refused_with_the_reason() {
        let dir = std::env::temp_dir().join(format!("srtpgate-quality-wav-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let f = dir.join("s16k.wav");
        write_wav(&f, 16000, &[1, -1, 2]).expect("write");
        assert_eq!(read_wav(&f, 16000).expect("read"), [1, -1, 2]);
        let e = read_wav(&f, 8000).expect_err("wrong rate");
        assert!(e.contains("want mono 16-bit at 8000 Hz") && e.contains("s16k.wav"), "{e}");
        let e = read_wav(&dir.join("missing.wav"), 8000).expect_err("missing");
        assert!(e.contains("missing.wav"), "{e}");
        std::fs::write(dir.join("junk.wav"), b"not a wav").expect("write");
        assert!(read_wav(&dir.join("junk.wav"), 8000).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
