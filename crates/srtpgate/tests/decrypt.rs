//! End-to-end tests of `srtpgate sample` and `srtpgate decrypt`, run on the
//! built binary. Captures are read back with `pcap-file` and parsed with
//! `etherparse`, independently of the code under test.

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::{Block, PcapNgReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

const SSRC_A: u32 = 0x2f1d_4c3b;
const SSRC_B: u32 = 0x7c6e_5a48;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_srtpgate")
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("decrypt-tests").join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().expect("run srtpgate")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `sample` and returns the two printed `a=crypto` lines.
fn sample(out: &Path, plain: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["sample", out.to_str().unwrap(), "--plain", plain.to_str().unwrap()];
    args.extend_from_slice(extra);
    let o = run(&args);
    assert!(o.status.success(), "sample {extra:?} failed: {}", stderr(&o));
    let keys: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("a=crypto:"))
        .map(str::to_string)
        .collect();
    assert_eq!(keys.len(), 2, "sample prints one a=crypto line per direction");
    keys
}

/// Runs `decrypt` with the given keys and extra arguments.
fn decrypt(input: &Path, output: &Path, keys: &[String], extra: &[&str]) -> Output {
    let mut args: Vec<&str> = vec!["decrypt"];
    for k in keys {
        args.push("--key");
        args.push(k);
    }
    args.extend_from_slice(extra);
    args.push(input.to_str().unwrap());
    args.push(output.to_str().unwrap());
    run(&args)
}

/// The `total:` line of a decrypt summary.
fn total_line(err: &str) -> String {
    err.lines().find(|l| l.starts_with("total:")).unwrap_or_else(|| panic!("no total line in:\n{err}")).to_string()
}

struct Capture {
    link: u32,
    frames: Vec<(Duration, Vec<u8>)>,
}

/// Reads a pcap or pcapng file with pcap-file.
fn read_capture(path: &Path) -> Capture {
    let bytes = std::fs::read(path).unwrap();
    if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        let mut r = PcapNgReader::new(&bytes[..]).unwrap();
        let mut frames = Vec::new();
        while let Some(b) = r.next_block() {
            if let Block::EnhancedPacket(p) = b.unwrap() {
                // sample writes if_tsresol = 9, so the raw value is nanoseconds.
                frames.push((p.timestamp, p.data.into_owned()));
            }
        }
        let link = u32::from(r.interfaces()[0].linktype);
        Capture { link, frames }
    } else {
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        let link = u32::from(r.header().datalink);
        let mut frames = Vec::new();
        while let Some(p) = r.next_packet() {
            let p = p.unwrap();
            frames.push((p.timestamp, p.data.into_owned()));
        }
        Capture { link, frames }
    }
}

/// Writes frames as a pcap of `link` (microsecond timestamps).
fn write_pcap(path: &Path, link: u32, frames: &[(Duration, Vec<u8>)]) {
    let header = pcap_file::pcap::PcapHeader { datalink: pcap_file::DataLink::from(link), ..Default::default() };
    let mut w = PcapWriter::with_header(std::fs::File::create(path).unwrap(), header).unwrap();
    for (ts, data) in frames {
        w.write_packet(&PcapPacket::new(*ts, data.len() as u32, data)).unwrap();
    }
}

fn slice(link: u32, frame: &[u8]) -> SlicedPacket<'_> {
    match link {
        1 => SlicedPacket::from_ethernet(frame).unwrap(),
        113 => SlicedPacket::from_linux_sll(frame).unwrap(),
        101 => SlicedPacket::from_ip(frame).unwrap(),
        other => panic!("link type {other} not handled by the test"),
    }
}

/// The UDP payload of a frame, after checking the IP and UDP lengths and checksums.
fn udp_payload(link: u32, frame: &[u8]) -> Vec<u8> {
    let p = slice(link, frame);
    let Some(TransportSlice::Udp(udp)) = &p.transport else { panic!("not UDP") };
    let payload = udp.payload();
    let header = udp.to_header();
    assert_eq!(usize::from(header.length), payload.len() + 8, "UDP length");
    let expected = match &p.net {
        Some(NetSlice::Ipv4(ip)) => {
            let h = ip.header().to_header();
            assert_eq!(h.header_checksum, h.calc_header_checksum(), "IPv4 header checksum");
            assert_eq!(usize::from(h.total_len), ip.header().slice().len() + payload.len() + 8, "IPv4 length");
            header.calc_checksum_ipv4(&h, payload).unwrap()
        }
        Some(NetSlice::Ipv6(ip)) => {
            let h = ip.header().to_header();
            assert_eq!(usize::from(h.payload_length), payload.len() + 8, "IPv6 payload length");
            header.calc_checksum_ipv6(&h, payload).unwrap()
        }
        None => panic!("not IP"),
    };
    assert_eq!(header.checksum, expected, "UDP checksum");
    payload.to_vec()
}

fn ssrc_of(payload: &[u8]) -> u32 {
    let at = if (192..=223).contains(&payload[1]) { 4 } else { 8 };
    u32::from_be_bytes(payload[at..at + 4].try_into().unwrap())
}

/// Checks that OUT equals PLAIN frame by frame (UDP payloads byte for byte,
/// timestamps, link type), except the frames `keep_encrypted` says stay
/// as in `srtp`.
fn assert_decrypted(out: &Path, plain: &Path, srtp: &Path, keep_encrypted: impl Fn(usize, &[u8]) -> bool) {
    let (o, p, s) = (read_capture(out), read_capture(plain), read_capture(srtp));
    assert_eq!(o.link, s.link, "link type kept");
    assert_eq!(o.frames.len(), s.frames.len(), "every packet copied");
    assert_eq!(p.frames.len(), s.frames.len());
    for (i, ((of, pf), sf)) in o.frames.iter().zip(&p.frames).zip(&s.frames).enumerate() {
        assert_eq!(of.0, sf.0, "timestamp of frame {i}");
        let op = udp_payload(o.link, &of.1);
        let sp = udp_payload(s.link, &sf.1);
        if keep_encrypted(i, &sp) {
            assert_eq!(of.1, sf.1, "frame {i} copied unchanged");
        } else {
            assert_eq!(op, udp_payload(p.link, &pf.1), "UDP payload of frame {i}");
            assert_eq!(of.1, pf.1, "frame {i} equals the plain capture's");
        }
    }
}

const VARIANTS: [(&str, &[&str]); 4] = [
    ("pcap-eth-v4", &[]),
    ("pcapng-eth-v4", &["--format", "pcapng"]),
    ("pcap-eth-v6", &["--ipv6"]),
    ("pcap-sll-v4", &["--link", "sll"]),
];
const SUITES: [&str; 3] = ["AES_CM_128_HMAC_SHA1_80", "AEAD_AES_128_GCM", "AES_256_CM_HMAC_SHA1_32"];

#[test]
fn decrypts_every_variant_and_suite() {
    for (name, args) in VARIANTS {
        for suite in SUITES {
            let d = dir(&format!("matrix-{name}-{suite}"));
            let (s, p, o) = (d.join("srtp"), d.join("plain"), d.join("out.pcap"));
            let mut extra = args.to_vec();
            extra.extend_from_slice(&["--suite", suite]);
            let keys = sample(&s, &p, &extra);
            assert!(keys.iter().all(|k| k.contains(suite)));
            let r = decrypt(&s, &o, &keys, &[]);
            let err = stderr(&r);
            assert!(r.status.success(), "{name} {suite}: {err}");
            let total = total_line(&err);
            assert!(total.contains("auth failures 0"), "{name} {suite}: {err}");
            assert!(total.contains("replays 0"), "{name} {suite}: {err}");
            assert!(total.contains("packets 3012, decrypted 3012"), "{name} {suite}: {err}");
            assert_eq!(err.lines().filter(|l| l.starts_with("ssrc ")).count(), 4, "{err}");
            assert!(err.lines().filter(|l| l.starts_with("ssrc ")).all(|l| l.contains(suite)), "{err}");
            assert_decrypted(&o, &p, &s, |_, _| false);
        }
    }
}

#[test]
fn other_link_types_and_key_forms() {
    let d = dir("key-forms");
    let (s, p, o) = (d.join("srtp"), d.join("plain"), d.join("out.pcap"));
    let keys = sample(&s, &p, &["--link", "raw", "--seconds", "6"]);
    // inline:… alone, plain base64, and SUITE inline:….
    let inline: Vec<String> = keys.iter().map(|k| k.split_whitespace().last().unwrap().to_string()).collect();
    let bare: Vec<String> = inline.iter().map(|k| k.trim_start_matches("inline:").to_string()).collect();
    let suite_and_key: Vec<String> = keys.iter().map(|k| k.split_once(' ').unwrap().1.to_string()).collect();
    for form in [&inline, &bare, &suite_and_key] {
        let r = decrypt(&s, &o, form, &[]);
        let err = stderr(&r);
        assert!(r.status.success(), "{err}");
        assert!(total_line(&err).contains("auth failures 0"), "{err}");
        assert!(err.lines().filter(|l| l.starts_with("ssrc ")).all(|l| l.contains("AES_CM_128_HMAC_SHA1_80")));
        assert_decrypted(&o, &p, &s, |_, _| false);
    }
    // --suite narrows the search for keys without one.
    let r = decrypt(&s, &o, &inline, &["--suite", "AES_CM_128_HMAC_SHA1_80"]);
    assert!(r.status.success());
    assert_decrypted(&o, &p, &s, |_, _| false);

    // SLL2 and pcapng with IPv6 (no independent parser here: compare files).
    let keys = sample(&s, &p, &["--link", "sll2", "--ipv6", "--format", "pcapng", "--seconds", "6"]);
    let r = decrypt(&s, &o, &keys, &[]);
    let err = stderr(&r);
    assert!(r.status.success() && total_line(&err).contains("auth failures 0"), "{err}");
    let (of, pf) = (read_capture(&o), read_capture(&p));
    assert_eq!(of.link, 276);
    assert_eq!(of.frames, pf.frames);
}

#[test]
fn pcapng_with_microsecond_timestamps() {
    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    use pcap_file::pcapng::PcapNgWriter;
    let d = dir("pcapng-us");
    let (s, p, o, n) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"), d.join("us.pcapng"));
    let keys = sample(&s, &p, &["--seconds", "3", "--link", "sll"]);
    let c = read_capture(&s);
    // No if_tsresol option: timestamps count microseconds (pcapng's default).
    let mut w = PcapNgWriter::new(std::fs::File::create(&n).unwrap()).unwrap();
    let idb = InterfaceDescriptionBlock { linktype: pcap_file::DataLink::from(c.link), snaplen: 0, options: vec![] };
    w.write_pcapng_block(idb).unwrap();
    for (ts, data) in &c.frames {
        // pcap-file writes `timestamp` as a raw count: give it microseconds (+ 123).
        let raw = Duration::from_nanos(ts.as_micros() as u64 + 123);
        let epb = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: raw,
            original_len: data.len() as u32,
            data: data.clone().into(),
            options: vec![],
        };
        w.write_pcapng_block(epb).unwrap();
    }
    drop(w);
    let r = decrypt(&n, &o, &keys, &[]);
    let err = stderr(&r);
    assert!(r.status.success() && total_line(&err).contains("auth failures 0"), "{err}");
    let (out, plain) = (read_capture(&o), read_capture(&p));
    assert_eq!(out.link, 113);
    assert_eq!(out.frames.len(), plain.frames.len());
    for ((ots, of), (pts, pf)) in out.frames.iter().zip(&plain.frames) {
        assert_eq!(*ots, *pts + Duration::from_micros(123), "timestamps scaled from microseconds");
        assert_eq!(of, pf);
    }
}

#[test]
fn ssrc_selects_one_direction() {
    let d = dir("ssrc");
    let (s, p, o) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"));
    let keys = sample(&s, &p, &["--seconds", "8"]);
    for (arg, kept) in [(format!("0x{SSRC_A:08x}"), SSRC_B), (SSRC_B.to_string(), SSRC_A)] {
        let r = decrypt(&s, &o, &keys, &["--ssrc", &arg]);
        let err = stderr(&r);
        assert!(r.status.success(), "{err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("ssrc ")).collect();
        assert_eq!(lines.len(), 2, "{err}");
        assert!(lines.iter().all(|l| !l.contains(&format!("{kept:08x}"))), "{err}");
        assert_decrypted(&o, &p, &s, |_, payload| ssrc_of(payload) == kept);
    }
}

#[test]
fn wrong_key_decrypts_nothing() {
    let d = dir("wrong-key");
    let (s, p, o) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"));
    sample(&s, &p, &["--seconds", "6"]);
    // 30 zero bytes: a well-formed AES_CM_128 key that is not the call's.
    let wrong = vec!["inline:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_string()];
    let r = decrypt(&s, &o, &wrong, &[]);
    let err = stderr(&r);
    assert!(r.status.success(), "{err}");
    assert!(err.contains("no key matched any flow"), "{err}");
    assert!(total_line(&err).contains("decrypted 0"), "{err}");
    assert_eq!(read_capture(&o).frames, read_capture(&s).frames, "output is a copy of the input");
    // One right key: only its direction is decrypted.
    let keys = sample(&s, &p, &["--seconds", "6"]);
    let r = decrypt(&s, &o, &[wrong[0].clone(), keys[1].clone()], &[]);
    assert!(r.status.success());
    assert_decrypted(&o, &p, &s, |_, payload| ssrc_of(payload) == SSRC_A);
}

#[test]
fn tampered_packet_counts_one_auth_failure() {
    let d = dir("tampered");
    let (s, p, o, t) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"), d.join("tampered.pcap"));
    let keys = sample(&s, &p, &["--seconds", "6"]);
    let mut cap = read_capture(&s);
    // Flip one bit in the payload of frame 100 (inside the encrypted media).
    let victim = 100;
    let len = cap.frames[victim].1.len();
    cap.frames[victim].1[len - 20] ^= 0x01;
    // The UDP checksum is now wrong in the input; fix it so that only SRTP
    // can notice (etherparse checks it when reading back).
    let fixed = fix_udp_checksum_v4_eth(&cap.frames[victim].1);
    cap.frames[victim].1 = fixed;
    write_pcap(&t, cap.link, &cap.frames);

    let r = decrypt(&t, &o, &keys, &[]);
    let err = stderr(&r);
    assert!(r.status.success(), "{err}");
    let total = total_line(&err);
    assert!(total.contains("auth failures 1,"), "{err}");
    assert!(total.contains(&format!("packets {}, decrypted {},", cap.frames.len(), cap.frames.len() - 1)), "{err}");
    assert_decrypted(&o, &p, &t, |i, _| i == victim);
}

#[test]
fn capture_starting_after_the_rollover_still_decrypts() {
    let d = dir("late-start");
    let (s, p, o) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"));
    let (ls, lp) = (d.join("late.pcap"), d.join("late-plain.pcap"));
    let keys = sample(&s, &p, &["--seconds", "6"]);
    for (from, to) in [(&s, &ls), (&p, &lp)] {
        let c = read_capture(from);
        write_pcap(to, c.link, &c.frames[200..]);
    }
    let r = decrypt(&ls, &o, &keys, &[]);
    let err = stderr(&r);
    assert!(r.status.success(), "{err}");
    assert!(total_line(&err).contains("auth failures 0"), "{err}");
    assert_eq!(err.matches("initial ROC 1").count(), 2, "{err}");
    assert_decrypted(&o, &lp, &ls, |_, _| false);
}

/// Recomputes the IPv4 header and UDP checksums of an Ethernet/IPv4/UDP frame.
fn fix_udp_checksum_v4_eth(frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    let ip = 14;
    let ihl = usize::from(f[ip] & 0x0f) * 4;
    f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let sum = checksum(&[&f[ip..ip + ihl]]);
    f[ip + 10..ip + 12].copy_from_slice(&sum.to_be_bytes());
    let u = ip + ihl;
    let udp_len = u16::from_be_bytes([f[u + 4], f[u + 5]]);
    f[u + 6..u + 8].copy_from_slice(&[0, 0]);
    let mut pseudo = Vec::new();
    pseudo.extend_from_slice(&f[ip + 12..ip + 20]);
    pseudo.extend_from_slice(&[0, 17]);
    pseudo.extend_from_slice(&udp_len.to_be_bytes());
    let mut sum = checksum(&[&pseudo, &f[u..u + usize::from(udp_len)]]);
    if sum == 0 {
        sum = 0xffff;
    }
    f[u + 6..u + 8].copy_from_slice(&sum.to_be_bytes());
    f
}

fn checksum(parts: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    let bytes: Vec<u8> = parts.concat();
    for c in bytes.chunks(2) {
        let w = if c.len() == 2 { u16::from_be_bytes([c[0], c[1]]) } else { u16::from(c[0]) << 8 };
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[test]
fn other_traffic_is_copied_and_counted() {
    let d = dir("mixed");
    let (s, p, o, m) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"), d.join("mixed.pcap"));
    let keys = sample(&s, &p, &["--seconds", "6"]);
    let c = read_capture(&s);
    let plain = read_capture(&p);
    let first = c.frames[10].clone();
    let ts = first.0;
    let mut frames = Vec::new();
    let mut plain_frames = Vec::new();
    // An ARP frame.
    let mut arp = vec![0xff; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 0x0a, 0x08, 0x06]);
    arp.extend_from_slice(&[0; 28]);
    // A UDP datagram that is not RTP ("hello"), built from an SRTP frame.
    let mut dns = first.1[..42].to_vec();
    dns.extend_from_slice(b"hello");
    dns[14 + 2..14 + 4].copy_from_slice(&(20u16 + 8 + 5).to_be_bytes());
    dns[34 + 4..34 + 6].copy_from_slice(&13u16.to_be_bytes());
    let dns = fix_udp_checksum_v4_eth(&dns);
    // An IPv4 fragment (MF set) of an SRTP packet.
    let mut frag = first.1.clone();
    frag[14 + 6] |= 0x20;
    let frag = fix_udp_checksum_v4_eth(&frag);
    // The same SRTP packet again inside an 802.1Q tag: a duplicate, so a replay.
    let mut vlan = first.1[..12].to_vec();
    vlan.extend_from_slice(&[0x81, 0x00, 0x00, 0x64]);
    vlan.extend_from_slice(&first.1[12..]);
    for (i, (f, pf)) in c.frames.iter().zip(&plain.frames).enumerate() {
        frames.push(f.clone());
        plain_frames.push(pf.clone());
        if i == 20 {
            for extra in [&arp, &dns, &frag, &vlan] {
                frames.push((ts, extra.clone()));
                plain_frames.push((ts, extra.clone()));
            }
        }
    }
    write_pcap(&m, c.link, &frames);
    let r = decrypt(&m, &o, &keys, &[]);
    let err = stderr(&r);
    assert!(r.status.success(), "{err}");
    let total = total_line(&err);
    assert!(total.contains("replays 1,") && total.contains("auth failures 0"), "{err}");
    let skipped = err.lines().find(|l| l.starts_with("skipped:")).unwrap();
    for want in ["1 UDP not RTP/RTCP", "1 not IP", "1 IP fragments"] {
        assert!(skipped.contains(want), "{want}: {err}");
    }
    let out = read_capture(&o);
    assert_eq!(out.frames.len(), frames.len());
    for (i, (of, pf)) in out.frames.iter().zip(&plain_frames).enumerate() {
        if (21..25).contains(&i) {
            assert_eq!(of.1, frames[i].1, "extra frame {i} copied unchanged");
        } else {
            assert_eq!(of.1, pf.1, "frame {i}");
        }
    }
}

/// Asserts that a run ended cleanly: success, or exit 2 with an `srtpgate:` message; never a panic.
fn assert_clean(o: &Output, what: &str) {
    let err = stderr(o);
    assert!(!err.contains("panicked"), "{what}: panic: {err}");
    match o.status.code() {
        Some(0) => {}
        Some(2) => assert!(err.starts_with("srtpgate: ") && err.len() > 20, "{what}: unclear message: {err}"),
        other => panic!("{what}: exit {other:?}: {err}"),
    }
}

#[test]
fn truncated_and_garbage_inputs_fail_cleanly() {
    let d = dir("garbage");
    let (s, p, o, bad) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"), d.join("bad"));
    let keys = sample(&s, &p, &["--seconds", "2"]);
    let (sn, pn) = (d.join("srtp.pcapng"), d.join("plain.pcapng"));
    sample(&sn, &pn, &["--seconds", "2", "--format", "pcapng", "--ipv6"]);

    for (content, want) in [
        (&b""[..], "empty"),
        (&b"hello, world"[..], "not a pcap or pcapng file"),
        (&b"\xd4\xc3\xb2"[..], "too short"),
        (&b"\xd4\xc3\xb2\xa1\x02\x00"[..], "bad file header"),
        (&b"\x0a\x0d\x0d\x0a\x1c\x00\x00\x00"[..], "bad file header"),
    ] {
        std::fs::write(&bad, content).unwrap();
        let r = decrypt(&bad, &o, &keys, &[]);
        assert_eq!(r.status.code(), Some(2), "{content:?}");
        assert!(stderr(&r).contains(want), "{content:?}: {}", stderr(&r));
        assert_clean(&r, "garbage");
    }
    let r = decrypt(&d.join("missing.pcap"), &o, &keys, &[]);
    assert_eq!(r.status.code(), Some(2));
    assert!(stderr(&r).contains("cannot open"), "{}", stderr(&r));

    // A cut inside a record is an error naming the file; a cut between
    // records is a shorter capture.
    for source in [&s, &sn] {
        let full = std::fs::read(source).unwrap();
        let mut lengths: Vec<usize> = (0..200).collect();
        lengths.extend((200..full.len()).step_by(331));
        for len in lengths {
            std::fs::write(&bad, &full[..len]).unwrap();
            let r = decrypt(&bad, &o, &keys, &[]);
            assert_clean(&r, &format!("{} cut at {len}", source.display()));
            if r.status.code() == Some(2) {
                assert!(stderr(&r).contains(bad.to_str().unwrap()), "{}", stderr(&r));
            }
        }
        // Deterministic byte corruption.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for round in 0..150 {
            let mut data = full.clone();
            for _ in 0..(1 + round % 4) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let at = if round % 2 == 0 { (x as usize) % 256.min(data.len()) } else { (x as usize) % data.len() };
                data[at] = (x >> 32) as u8;
            }
            std::fs::write(&bad, &data).unwrap();
            let r = decrypt(&bad, &o, &keys, &[]);
            assert_clean(&r, &format!("{} corrupted, round {round}", source.display()));
        }
    }
}

#[test]
fn invalid_arguments_exit_2() {
    let d = dir("args");
    let (s, p, o) = (d.join("srtp.pcap"), d.join("plain.pcap"), d.join("out.pcap"));
    let keys = sample(&s, &p, &["--seconds", "1"]);
    let cases: [(&[&str], &str); 8] = [
        (&["--key", "inline:not base64!!"], "--key #1"),
        (&["--key", "inline:AAAA"], "fits no crypto suite"),
        (&["--key", "a=crypto:1 AES_CM_999 inline:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "unknown crypto suite"),
        (&["--key", "a=crypto:x AES_CM_128_HMAC_SHA1_80 inline:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"], "tag"),
        (&["--key", "inline:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "--suite", "AEAD_AES_128_GCM"], "--key #1"),
        (&["--key", &keys[0], "--suite", "AEAD_AES_128_GCM"], "--suite"),
        (&["--key", &keys[0], "--ssrc", "0xnope"], "SSRC"),
        (&["--key", &keys[0], "--suite", "ROT13"], "unknown crypto suite"),
    ];
    for (args, want) in cases {
        let mut all = vec!["decrypt"];
        all.extend_from_slice(args);
        all.extend_from_slice(&[s.to_str().unwrap(), o.to_str().unwrap()]);
        let r = run(&all);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {}", stderr(&r));
        assert!(stderr(&r).contains(want), "{args:?}: {}", stderr(&r));
        assert!(!stderr(&r).contains("panicked"));
    }
    // No --key at all.
    let r = run(&["decrypt", s.to_str().unwrap(), o.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2));
}

#[test]
fn sample_is_deterministic() {
    let d = dir("deterministic");
    let (a, b, pa, pb) = (d.join("a.pcap"), d.join("b.pcap"), d.join("pa.pcap"), d.join("pb.pcap"));
    let ka = sample(&a, &pa, &["--seconds", "3"]);
    let kb = sample(&b, &pb, &["--seconds", "3"]);
    assert_eq!(ka, kb);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(std::fs::read(&pa).unwrap(), std::fs::read(&pb).unwrap());
    // The plain capture holds G.711 µ-law RTP with sequence numbers that wrap.
    let c = read_capture(&pa);
    let seqs: Vec<u16> = c
        .frames
        .iter()
        .map(|(_, f)| udp_payload(c.link, f))
        .filter(|p| p[1] & 0x7f == 0 && ssrc_of(p) == SSRC_A)
        .map(|p| {
            assert_eq!(p.len(), 12 + 160);
            u16::from_be_bytes([p[2], p[3]])
        })
        .collect();
    assert_eq!(seqs.len(), 150);
    assert_eq!(seqs[0], 65500);
    assert!(seqs.contains(&0));
}
