//! The conformance suite every engine runs: the RFC vectors (as data files
//! under tests/vectors/) and protocol behaviour through the context, plus a
//! differential test that all engines give identical bytes. The cpu engine
//! runs it once as chosen for this CPU and once forced onto each HMAC path
//! ([`MacPath`]) this CPU has; a path the CPU lacks is skipped with a line
//! on stderr.

use proptest::prelude::*;
use serde_json::Value;
use srtp::engine::{Engine, Job, Op, Outcome};
use srtp::{Context, CpuEngine, Error, Kind, MacPath, MasterKey, Policy, PortableEngine, SessionKeys, Suite};
use srtpgate_testkit::packets::rtp;

fn vectors(name: &str) -> Vec<Value> {
    let path = format!("{}/../../tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str::<Vec<Value>>(&text).expect("vector file is a JSON array")
}

fn hx(v: &Value, field: &str) -> Vec<u8> {
    hex::decode(v[field].as_str().unwrap_or_else(|| panic!("field {field}"))).expect("hex")
}

/// Runs one raw job (keystream / f8 vectors).
fn raw_job<E: Engine>(engine: &E, keys: &SessionKeys, iv: [u8; 16], data: &mut [u8]) {
    let k = engine.prepare_keys(keys).unwrap();
    let n = data.len();
    let mut jobs = [Job {
        keys: &k,
        op: Op::Protect,
        iv,
        buf: data,
        enc_start: 0,
        enc_end: n,
        auth_end: 0,
        suffix: [0; 4],
        suffix_len: 0,
        tag_start: n,
        tag_len: 0,
        outcome: Outcome::Pending,
    }];
    engine.transform(&mut jobs);
    assert_eq!(jobs[0].outcome, Outcome::Done);
}

#[test]
fn rfc_key_derivation() {
    for v in vectors("kdf.json") {
        let (mk, ms) = (hx(&v, "master_key"), hx(&v, "master_salt"));
        let kdr = v["kdr"].as_u64().unwrap();
        let r = v["index"].as_u64().unwrap().checked_div(kdr).unwrap_or(0);
        for out in v["outputs"].as_array().unwrap() {
            let want = hx(out, "hex");
            let mut got = vec![0u8; want.len()];
            srtp::kdf::prf(&mk, &ms, out["label"].as_u64().unwrap() as u8, r, &mut got).unwrap();
            assert_eq!(got, want, "{} label {}", v["source"], out["label"]);
        }
        // And through SessionKeys for the matching AES-CM suite.
        let suite = match mk.len() {
            16 => Suite::AES_CM_128_HMAC_SHA1_80,
            24 => Suite::AES_192_CM_HMAC_SHA1_80,
            _ => Suite::AES_256_CM_HMAC_SHA1_80,
        };
        let sk = SessionKeys::derive(suite, &mk, &ms, false, r).unwrap();
        for out in v["outputs"].as_array().unwrap() {
            let want = hx(out, "hex");
            let got = match out["label"].as_u64().unwrap() {
                0 => sk.enc_key(),
                1 => sk.auth_key(),
                2 => sk.salt(),
                _ => continue,
            };
            assert_eq!(got, &want[..got.len()], "{} via SessionKeys", v["source"]);
        }
    }
}

/// libsrtp before 2.8.0 derives AES-192 keys with an AES-256 PRF; the
/// compatibility mode reproduces the values reported in cisco/libsrtp#763 for
/// the RFC 6188 §7.4 master key, and the RFC mode does not.
#[test]
fn libsrtp_legacy_aes192_kdf() {
    let v = vectors("kdf.json").into_iter().find(|v| v["prf"] == "AES-192").expect("AES-192 vector");
    let (mk, ms) = (hx(&v, "master_key"), hx(&v, "master_salt"));
    let legacy = SessionKeys::derive_libsrtp_aes192(&mk, &ms, false, 0).unwrap();
    assert_eq!(hex::encode(legacy.enc_key()), "7af9f9f2cb705d213cce5fa377b290a0183389701878e7d7");
    assert_eq!(hex::encode(legacy.salt()), "2166ce644b08c8f855708bc2189e");
    let rfc = SessionKeys::derive(Suite::AES_192_CM_HMAC_SHA1_80, &mk, &ms, false, 0).unwrap();
    assert_ne!(rfc.enc_key(), legacy.enc_key());
    // Through a policy: the flag changes the keys of AES-192 contexts only.
    let suite = Suite::AES_192_CM_HMAC_SHA1_80;
    let mut p = Policy::new(suite, MasterKey::new(suite, &mk, &ms).unwrap());
    let mut a = Context::new(p.clone(), CpuEngine::new()).unwrap();
    p.libsrtp_aes192_kdf = true;
    let mut b = Context::new(p, CpuEngine::new()).unwrap();
    let pkt = rtp(1, 1, &[0; 16]);
    let (mut oa, mut ob) = ([0u8; 64], [0u8; 64]);
    let n = a.protect_rtp(&pkt, &mut oa).unwrap();
    b.protect_rtp(&pkt, &mut ob).unwrap();
    assert_ne!(oa[..n], ob[..n]);
}

fn aes_cm_keystream<E: Engine>(engine: &E) {
    for v in vectors("aes_cm.json") {
        let key = hx(&v, "key");
        let suite = match key.len() {
            16 => Suite::AES_CM_128_HMAC_SHA1_80,
            24 => Suite::AES_192_CM_HMAC_SHA1_80,
            _ => Suite::AES_256_CM_HMAC_SHA1_80,
        };
        let keys = SessionKeys::from_raw(suite, &key, &hx(&v, "session_salt"), &[0; 20]).unwrap();
        let iv: [u8; 16] = hx(&v, "iv").try_into().unwrap();
        let blocks = v["segment_length_blocks"].as_u64().unwrap() as usize;
        let mut ks = vec![0u8; blocks * 16];
        raw_job(engine, &keys, iv, &mut ks);
        for seg in v["segments"].as_array().unwrap() {
            let at = seg["block"].as_u64().unwrap() as usize * 16;
            let want = hx(seg, "hex");
            assert_eq!(&ks[at..at + want.len()], &want[..], "{} block {}", v["source"], seg["block"]);
        }
    }
}

fn f8_vector<E: Engine + Clone>(engine: &E) {
    for v in vectors("f8.json") {
        // RFC 3711 B.1 uses a 32-bit salt; the key mask pads it with 0x55,
        // which is what a 14-byte salt of the same bytes followed by 0x55 gives.
        let mut salt = hx(&v, "salt");
        salt.resize(14, 0x55);
        let keys = SessionKeys::from_raw(Suite::F8_128_HMAC_SHA1_80, &hx(&v, "key"), &salt, &[0; 20]).unwrap();
        let mut data = hx(&v, "plaintext");
        raw_job(engine, &keys, hx(&v, "iv").try_into().unwrap(), &mut data);
        assert_eq!(data, hx(&v, "ciphertext"), "{} raw", v["source"]);

        // Through a context: the context builds the IV from the header and ROC.
        let suite = Suite::F8_128_HMAC_SHA1_80;
        let mk = MasterKey::new(suite, &[0; 16], &[0; 14]).unwrap();
        let mut ctx = Context::new(Policy::new(suite, mk), engine.clone()).unwrap();
        ctx.set_session_keys(&keys, &keys).unwrap();
        let hdr = hx(&v, "rtp_header");
        let ssrc = u32::from_be_bytes(hdr[8..12].try_into().unwrap());
        ctx.set_roc(ssrc, v["roc"].as_u64().unwrap() as u32);
        let mut pkt = hdr.clone();
        pkt.extend(hx(&v, "plaintext"));
        let mut out = vec![0u8; pkt.len() + 64];
        let n = ctx.protect_rtp(&pkt, &mut out).unwrap();
        assert_eq!(n, pkt.len() + 10);
        assert_eq!(&out[12..pkt.len()], &hx(&v, "ciphertext")[..], "{} via context", v["source"]);
    }
}

fn gcm_packets<E: Engine + Clone>(engine: &E) {
    for v in vectors("packets.json") {
        let suite: Suite = v["suite"].as_str().unwrap().parse().unwrap();
        let keys = SessionKeys::from_raw(suite, &hx(&v, "session_key"), &hx(&v, "session_salt"), &[]).unwrap();
        let mk = MasterKey::new(suite, &vec![0; suite.master_key_len()], &[0; 12]).unwrap();
        let mut policy = Policy::new(suite, mk);
        let encrypt = v["encrypt"].as_bool().unwrap();
        let rtcp = v["kind"] == "rtcp";
        policy.encrypt_rtp = encrypt;
        policy.encrypt_rtcp = encrypt;
        let mut ctx = Context::new(policy, engine.clone()).unwrap();
        ctx.set_session_keys(&keys, &keys).unwrap();
        let plain = hx(&v, "plaintext");
        let prot = hx(&v, "protected");
        let ssrc_of = |p: &[u8]| {
            let at = if rtcp { 4 } else { 8 };
            u32::from_be_bytes(p[at..at + 4].try_into().unwrap())
        };
        let ssrc = ssrc_of(&prot);
        if rtcp {
            ctx.set_rtcp_index(ssrc, v["srtcp_index"].as_u64().unwrap() as u32).unwrap();
        } else {
            ctx.set_roc(ssrc, v["roc"].as_u64().unwrap() as u32);
        }
        let mut out = vec![0u8; prot.len().max(plain.len()) + 200];
        let src = &v["source"];
        match (v["direction"].as_str().unwrap(), v["expect"].as_str().unwrap()) {
            ("encrypt", "ok") => {
                let kind = if rtcp { Kind::Rtcp } else { Kind::Rtp };
                let n = if kind == Kind::Rtcp {
                    ctx.protect_rtcp(&plain, &mut out)
                } else {
                    ctx.protect_rtp(&plain, &mut out)
                }
                .unwrap_or_else(|e| panic!("{src}: {e}"));
                assert_eq!(&out[..n], &prot[..], "{src}");
            }
            (_, expect) => {
                let r = if rtcp { ctx.unprotect_rtcp(&prot, &mut out) } else { ctx.unprotect_rtp(&prot, &mut out) };
                if expect == "ok" {
                    let n = r.unwrap_or_else(|e| panic!("{src}: {e}"));
                    assert_eq!(&out[..n], &plain[..], "{src}");
                } else {
                    assert_eq!(r, Err(Error::AuthFailed), "{src}");
                }
            }
        }
    }
}

fn rtcp_sr(ssrc: u32, fill: u8) -> Vec<u8> {
    let mut p = vec![0x80, 200, 0, 6];
    p.extend(ssrc.to_be_bytes());
    p.extend([fill; 20]);
    p
}

fn pair<E: Engine + Clone>(engine: &E, suite: Suite, f: impl Fn(&mut Policy)) -> (Context<E>, Context<E>) {
    let key: Vec<u8> = (0..suite.master_key_len() as u8).collect();
    let salt: Vec<u8> = (100..100 + suite.master_salt_len() as u8).collect();
    let mut policy = Policy::new(suite, MasterKey::new(suite, &key, &salt).unwrap());
    f(&mut policy);
    (Context::new(policy.clone(), engine.clone()).unwrap(), Context::new(policy, engine.clone()).unwrap())
}

/// Protocol behaviour that must hold for every engine and suite.
fn behaviour<E: Engine + Clone>(engine: &E) {
    for suite in Suite::ALL {
        let (mut tx, mut rx) = pair(engine, suite, |_| {});
        let mut out = vec![0u8; 2048];
        let mut back = vec![0u8; 2048];
        // Across the sequence wrap: ROC goes 0 -> 1.
        let mut sent = Vec::new();
        for seq in (65530..=65535).chain(0..6) {
            let p = rtp(7, seq, &[seq as u8; 160]);
            let n = tx.protect_rtp(&p, &mut out).unwrap();
            assert_eq!(n, p.len() + suite.srtp_tag_len());
            if suite.cipher() != srtp::suite::Cipher::Null {
                assert_ne!(&out[12..p.len()], &p[12..], "{suite}: payload encrypted");
            }
            sent.push((p, out[..n].to_vec()));
        }
        assert_eq!(tx.roc(7, true), Some(1));
        // Reordered delivery within the window.
        sent.swap(4, 5);
        sent.swap(6, 7);
        for (p, s) in &sent {
            let n = rx.unprotect_rtp(s, &mut back).unwrap_or_else(|e| panic!("{suite}: {e}"));
            assert_eq!(&back[..n], &p[..]);
        }
        assert_eq!(rx.roc(7, false), Some(1));
        // Replay.
        assert_eq!(rx.unprotect_rtp(&sent[3].1, &mut back), Err(Error::Replayed), "{suite}");
        // Protect refuses an index it already used.
        assert_eq!(tx.protect_rtp(&sent[3].0, &mut out), Err(Error::Replayed), "{suite}");
        // Tampering anywhere: header, payload, tag.
        let p = rtp(7, 6, &[1; 40]);
        let n = tx.protect_rtp(&p, &mut out).unwrap();
        for bit in [3 * 8, 20 * 8 + 1, (n - 1) * 8 + 7] {
            let mut bad = out[..n].to_vec();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert_eq!(rx.unprotect_rtp(&bad, &mut back), Err(Error::AuthFailed), "{suite} bit {bit}");
        }
        // ... and the good one still passes afterwards.
        rx.unprotect_rtp(&out[..n], &mut back).unwrap();
        // A forged packet of a new SSRC creates no stream.
        let mut forged = out[..n].to_vec();
        forged[11] ^= 1;
        assert_eq!(rx.unprotect_rtp(&forged, &mut back), Err(Error::AuthFailed));
        assert_eq!(rx.stats().rx_streams, 1);
        // SRTCP both ways, its own index and window.
        for i in 0..5u8 {
            let c = rtcp_sr(7, i);
            let n = tx.protect_rtcp(&c, &mut out).unwrap();
            assert_eq!(n, c.len() + 4 + suite.srtcp_tag_len());
            let mut bad = out[..n].to_vec();
            bad[9] ^= 0x10;
            assert_eq!(rx.unprotect_rtcp(&bad, &mut back), Err(Error::AuthFailed));
            let m = rx.unprotect_rtcp(&out[..n], &mut back).unwrap_or_else(|e| panic!("{suite} rtcp: {e}"));
            assert_eq!(&back[..m], &c[..]);
            assert_eq!(rx.unprotect_rtcp(&out[..n], &mut back), Err(Error::Replayed));
        }
        // Truncated and malformed input: errors, never panics.
        for len in 0..n {
            assert!(rx.unprotect_rtp(&out[..len], &mut back).is_err());
            assert!(rx.unprotect_rtcp(&out[..len], &mut back).is_err());
        }
    }
}

/// Several master keys selected by MKI, and the key lifetime.
fn mki_and_lifetime<E: Engine + Clone>(engine: &E) {
    for suite in [Suite::AES_CM_128_HMAC_SHA1_80, Suite::AEAD_AES_128_GCM] {
        let k = |b: u8, mki: u8| {
            MasterKey::new(suite, &vec![b; suite.master_key_len()], &vec![b; suite.master_salt_len()])
                .unwrap()
                .with_mki(&[0, mki])
                .with_lifetime(3)
        };
        let mut policy = Policy::new(suite, k(1, 1));
        policy.keys.push(k(2, 2));
        let mut tx = Context::new(policy.clone(), engine.clone()).unwrap();
        let mut rx = Context::new(policy, engine.clone()).unwrap();
        let mut out = vec![0u8; 512];
        let mut back = vec![0u8; 512];
        for seq in 0..3 {
            let n = tx.protect_rtp(&rtp(1, seq, &[9; 30]), &mut out).unwrap();
            assert_eq!(n, 12 + 30 + 2 + suite.srtp_tag_len());
            rx.unprotect_rtp(&out[..n], &mut back).unwrap();
        }
        // The first key's lifetime is used up: the next packet rolls over to
        // the second key, by itself, and says so in its MKI.
        let n = tx.protect_rtp(&rtp(1, 3, &[9; 30]), &mut out).unwrap();
        let at = if suite.is_aead() { n - 2 } else { n - suite.srtp_tag_len() - 2 };
        assert_eq!(&out[at..at + 2], &[0, 2]);
        assert_eq!(rx.unprotect_rtp(&out[..n], &mut back).unwrap(), 42);
        let mut forged = out[..n].to_vec();
        forged[at + 1] = 3;
        assert_eq!(rx.unprotect_rtp(&forged, &mut back), Err(Error::UnknownMki));
        // A packet under the first key again: its lifetime is used up on
        // the receiving side too.
        let mut old = Context::new(Policy::new(suite, k(1, 1)), engine.clone()).unwrap();
        let n0 = old.protect_rtp(&rtp(1, 9, &[9; 30]), &mut out).unwrap();
        assert_eq!(rx.unprotect_rtp(&out[..n0], &mut back), Err(Error::KeyExpired));
        // Both keys used up: nothing more is protected.
        for seq in 4..6 {
            tx.protect_rtp(&rtp(1, seq, &[9; 30]), &mut out).unwrap();
        }
        assert_eq!(tx.protect_rtp(&rtp(1, 6, &[9; 30]), &mut out), Err(Error::KeyExpired));
        // The choice can still be made by hand (an MKI the key exchange named).
        assert_eq!(tx.set_active_mki(&[0, 9]), Err(Error::UnknownMki));
    }
}

/// A long stream (past the sequence-number wrap twice, to a rollover
/// counter of 2) under three master keys with short lifetimes and a key
/// derivation rate ≠ 0: the sender moves from key to key by itself
/// (RFC 3711 §9.2), the receiver follows by MKI, SRTCP shares the keys; no
/// packet is lost, none is protected under a key past its lifetime, and no
/// (key, SSRC, index) is used twice.
fn lifetime_rollover_long_stream<E: Engine + Clone>(engine: &E) {
    for suite in [Suite::AES_CM_128_HMAC_SHA1_80, Suite::AEAD_AES_128_GCM] {
        let k = |b: u8| {
            MasterKey::new(suite, &vec![b; suite.master_key_len()], &vec![b ^ 0x5a; suite.master_salt_len()])
                .unwrap()
                .with_mki(&[b])
                .with_lifetime(30_000)
        };
        let mut policy = Policy::new(suite, k(1));
        policy.keys.push(k(2));
        policy.keys.push(k(3));
        policy.kdr = 1 << 10;
        let mut tx = Context::new(policy.clone(), engine.clone()).unwrap();
        let mut rx = Context::new(policy, engine.clone()).unwrap();
        let (mut out, mut back) = (vec![0u8; 512], vec![0u8; 512]);
        let mut seen = std::collections::HashSet::new();
        let mut per_key = [0u32; 4];
        let first = 60_000u32;
        for i in 0..85_000u32 {
            let seq = (first + i) as u16;
            let p = rtp(0x11, seq, &i.to_be_bytes());
            let n = tx.protect_rtp(&p, &mut out).unwrap();
            let mki = out[n - suite.srtp_tag_len() - 1];
            let mki = if suite.is_aead() { out[n - 1] } else { mki };
            per_key[mki as usize] += 1;
            let index = ((first + i) as u64) & 0xffff_ffff_ffff;
            assert!(seen.insert((mki, index)), "key {mki} index {index} used twice");
            let m = rx.unprotect_rtp(&out[..n], &mut back).unwrap();
            assert_eq!(&back[..m], &p[..], "packet {i}");
            if i % 5_000 == 0 {
                let n = tx.protect_rtcp(&rtcp_sr(0x11, 7), &mut out).unwrap();
                rx.unprotect_rtcp(&out[..n], &mut back).unwrap();
            }
        }
        assert_eq!(tx.roc(0x11, true), Some(2), "the stream crossed the wrap twice");
        // SRTP and SRTCP packets count against one lifetime each: 30 000
        // SRTP packets per key.
        assert_eq!(per_key[1..], [30_000, 30_000, 25_000], "{suite}");
    }
}

/// Key derivation rate ≠ 0: keys change every `kdr` packets on both sides.
fn kdr_nonzero<E: Engine + Clone>(engine: &E) {
    for suite in [Suite::AES_CM_128_HMAC_SHA1_80, Suite::AEAD_AES_256_GCM, Suite::F8_128_HMAC_SHA1_80] {
        let (mut tx, mut rx) = pair(engine, suite, |p| p.kdr = 4);
        let (mut tx0, _) = pair(engine, suite, |_| {});
        let mut out = vec![0u8; 512];
        let mut out0 = vec![0u8; 512];
        let mut back = vec![0u8; 512];
        for seq in 0..20u16 {
            let p = rtp(5, seq, &[seq as u8; 50]);
            let n = tx.protect_rtp(&p, &mut out).unwrap();
            tx0.protect_rtp(&p, &mut out0).unwrap();
            // Interval 0 uses the same keys as kdr = 0; later ones differ.
            assert_eq!(out[..n] == out0[..n], seq < 4, "{suite} seq {seq}");
            assert_eq!(rx.unprotect_rtp(&out[..n], &mut back).unwrap(), p.len());
            let c = rtcp_sr(5, seq as u8);
            let n = tx.protect_rtcp(&c, &mut out).unwrap();
            assert_eq!(rx.unprotect_rtcp(&out[..n], &mut back).unwrap(), c.len());
        }
    }
}

/// The batch interface: many contexts, one transform, commits in order.
fn batch<E: Engine + Clone>(engine: &E) {
    let suites = [Suite::AES_CM_128_HMAC_SHA1_80, Suite::AEAD_AES_128_GCM, Suite::AES_256_CM_HMAC_SHA1_32];
    let mut ctxs: Vec<_> = suites.iter().map(|&s| pair(engine, s, |_| {})).collect();
    let pkts: Vec<(usize, Vec<u8>)> =
        (0..30).map(|i| (i % 3, rtp(100 + i as u32 % 2, i as u16, &[i as u8; 100]))).collect();
    let mut bufs: Vec<Vec<u8>> = pkts.iter().map(|_| vec![0u8; 400]).collect();
    let mut preps = Vec::new();
    for ((c, p), b) in pkts.iter().zip(bufs.iter_mut()) {
        preps.push(ctxs[*c].0.prepare(Kind::Rtp, Op::Protect, p, b).unwrap());
    }
    let outcomes: Vec<Outcome> = {
        let mut jobs: Vec<_> = pkts
            .iter()
            .zip(bufs.iter_mut())
            .zip(&preps)
            .map(|(((c, _), b), p)| ctxs[*c].0.job(p, b).unwrap())
            .collect();
        engine.transform(&mut jobs);
        jobs.iter().map(|j| j.outcome).collect()
    };
    for (((c, p), b), (prep, o)) in pkts.iter().zip(&bufs).zip(preps.iter().zip(outcomes)) {
        let n = ctxs[*c].0.commit(prep, o, b).unwrap();
        let mut back = vec![0u8; 400];
        let m = ctxs[*c].1.unprotect_rtp(&b[..n], &mut back).unwrap();
        assert_eq!(&back[..m], &p[..]);
    }
    // A duplicate within one batch: the second commit reports the replay.
    let (ref mut tx, ref mut rx) = ctxs[0];
    let mut out = vec![0u8; 400];
    let n = tx.protect_rtp(&rtp(9, 1, &[1; 10]), &mut out).unwrap();
    let srtp = out[..n].to_vec();
    let (mut b1, mut b2) = (vec![0u8; 400], vec![0u8; 400]);
    let p1 = rx.prepare(Kind::Rtp, Op::Unprotect, &srtp, &mut b1).unwrap();
    let p2 = rx.prepare(Kind::Rtp, Op::Unprotect, &srtp, &mut b2).unwrap();
    let o = {
        let mut jobs = [rx.job(&p1, &mut b1).unwrap(), rx.job(&p2, &mut b2).unwrap()];
        engine.transform(&mut jobs);
        [jobs[0].outcome, jobs[1].outcome]
    };
    assert!(rx.commit(&p1, o[0], &b1).is_ok());
    assert_eq!(rx.commit(&p2, o[1], &b2), Err(Error::Replayed));
    // A forged copy prepared before the authentic packet committed (in a
    // batch behind it, as in asynchronous rounds): a replay too, as when
    // the batches run one after the other, not an authentication failure.
    let n = tx.protect_rtp(&rtp(9, 2, &[2; 10]), &mut out).unwrap();
    let mut forged = out[..n].to_vec();
    forged[n - 1] ^= 1;
    let p1 = rx.prepare(Kind::Rtp, Op::Unprotect, &out[..n], &mut b1).unwrap();
    let p2 = rx.prepare(Kind::Rtp, Op::Unprotect, &forged, &mut b2).unwrap();
    let mut first = [rx.job(&p1, &mut b1).unwrap()];
    engine.transform(&mut first);
    let o1 = first[0].outcome;
    let mut second = [rx.job(&p2, &mut b2).unwrap()];
    engine.transform(&mut second);
    assert_eq!(second[0].outcome, Outcome::AuthFailed);
    let o2 = second[0].outcome;
    assert!(rx.commit(&p1, o1, &b1).is_ok());
    assert_eq!(rx.commit(&p2, o2, &b2), Err(Error::Replayed));
    // A new stream's first packets across the sequence wrap, both prepared
    // before either committed (two batches in flight): the second was
    // prepared at index 0, fails, and is tried at the index it gets now.
    let (mut a1, mut a2) = (vec![0u8; 400], vec![0u8; 400]);
    let n1 = tx.protect_rtp(&rtp(0x77, 65535, &[5; 10]), &mut a1).unwrap();
    let n2 = tx.protect_rtp(&rtp(0x77, 0, &[6; 10]), &mut a2).unwrap();
    let p1 = rx.prepare(Kind::Rtp, Op::Unprotect, &a1[..n1], &mut b1).unwrap();
    let p2 = rx.prepare(Kind::Rtp, Op::Unprotect, &a2[..n2], &mut b2).unwrap();
    assert_eq!(p2.index(), 0, "no stream yet: the wrap is not seen");
    let o = {
        let mut jobs = [rx.job(&p1, &mut b1).unwrap(), rx.job(&p2, &mut b2).unwrap()];
        engine.transform(&mut jobs);
        [jobs[0].outcome, jobs[1].outcome]
    };
    assert!(rx.commit(&p1, o[0], &b1).is_ok());
    assert_eq!(o[1], Outcome::AuthFailed);
    assert_eq!(rx.index_now(&p2), Some(65536));
    let m = rx.retry_at(&p2, 65536, &a2[..n2], &mut b2).expect("authentic at the index it gets now");
    assert_eq!(&b2[12..m], &[6; 10][..]);
    assert_eq!(rx.index_now(&p1), None, "an index that did not move");
    // Forged, of a packet not received: an authentication failure.
    let n = tx.protect_rtp(&rtp(9, 3, &[3; 10]), &mut out).unwrap();
    out[n - 1] ^= 1;
    assert_eq!(rx.unprotect_rtp(&out[..n], &mut b1), Err(Error::AuthFailed));
    // SRTCP before any SRTP of the same SSRC (a phone on hold sends only
    // reports): the stream exists without an RTP index, and SRTP still works.
    let mut out = vec![0u8; 400];
    let n = tx.protect_rtcp(&rtcp_sr(4242, 1), &mut out).unwrap();
    let mut back = vec![0u8; 400];
    rx.unprotect_rtcp(&out[..n], &mut back).unwrap();
    let pkt = rtp(4242, 7, &[3; 50]);
    let n = tx.protect_rtp(&pkt, &mut out).unwrap();
    let m = rx.unprotect_rtp(&out[..n], &mut back).unwrap();
    assert_eq!(&back[..m], &pkt[..]);
    // RTCP of one SSRC protected in one batch: each packet gets its own SRTCP
    // index (a shared one would reuse keystream), and all of them unprotect.
    let sr = rtcp_sr(77, 5);
    let mut bufs = vec![vec![0u8; 400]; 3];
    let preps: Vec<_> = bufs.iter_mut().map(|b| tx.prepare(Kind::Rtcp, Op::Protect, &sr, b).unwrap()).collect();
    let indices: Vec<u64> = preps.iter().map(|p| p.index()).collect();
    assert_eq!(indices, vec![0, 1, 2]);
    let outcomes: Vec<Outcome> = {
        let mut jobs: Vec<_> = bufs.iter_mut().zip(&preps).map(|(b, p)| tx.job(p, b).unwrap()).collect();
        engine.transform(&mut jobs);
        jobs.iter().map(|j| j.outcome).collect()
    };
    for ((b, p), o) in bufs.iter().zip(&preps).zip(outcomes) {
        let n = tx.commit(p, o, b).unwrap();
        let mut back = vec![0u8; 400];
        let m = rx.unprotect_rtcp(&b[..n], &mut back).unwrap();
        assert_eq!(&back[..m], &sr[..]);
    }
}

/// A packet prepared where it lies ([`Context::prepare_in_place`]) comes
/// out as the same bytes as one prepared into a copy, both ways, RTP and
/// RTCP, with an MKI; and where the engine says it keeps a failed packet
/// ([`Engine::keeps_failed`]), a forged one unprotected in place is left as
/// it was, so it can be tried again.
fn in_place<E: Engine + Clone>(engine: &E) {
    for suite in Suite::ALL {
        let with_mki = |p: &mut Policy| p.keys[0] = p.keys[0].clone().with_mki(&[0, 1]);
        // Two senders and two receivers in step: one of each pair works on
        // a copy, the other in place.
        let (mut tx_copy, mut rx_copy) = pair(engine, suite, with_mki);
        let (mut tx_here, mut rx_here) = pair(engine, suite, with_mki);
        for (kind, pkt) in [(Kind::Rtp, rtp(3, 9, &[7; 160])), (Kind::Rtcp, rtcp_sr(3, 8))] {
            let mut copy = vec![0u8; 512];
            let p = tx_copy.prepare(kind, Op::Protect, &pkt, &mut copy).unwrap();
            let o = run_one(engine, &tx_copy, &p, &mut copy);
            let n_copy = tx_copy.commit(&p, o, &copy).unwrap();
            let mut here = pkt.clone();
            here.resize(512, 0xee);
            assert_eq!(
                tx_here.prepare_in_place(kind, Op::Protect, &mut here[..pkt.len() + 1], pkt.len()).map(|_| ()),
                Err(Error::BufferTooSmall(n_copy)),
                "{suite} {kind:?}: no room for the trailer"
            );
            let p = tx_here.prepare_in_place(kind, Op::Protect, &mut here, pkt.len()).unwrap();
            let o = run_one(engine, &tx_here, &p, &mut here);
            let n = tx_here.commit(&p, o, &here).unwrap();
            assert_eq!(&here[..n], &copy[..n_copy], "{suite} {kind:?}: protected in place");
            // Unprotected in place, as into a copy.
            let mut back = vec![0u8; 512];
            let p = rx_copy.prepare(kind, Op::Unprotect, &copy[..n_copy], &mut back).unwrap();
            let o = run_one(engine, &rx_copy, &p, &mut back);
            let m_copy = rx_copy.commit(&p, o, &back).unwrap();
            assert_eq!(&back[..m_copy], &pkt[..]);
            // A forged copy first: it fails, and where the engine keeps it,
            // it is left as it was.
            let mut forged = here.clone();
            forged[20] ^= 0x10;
            let p = rx_here.prepare_in_place(kind, Op::Unprotect, &mut forged, n).unwrap();
            let o = run_one(engine, &rx_here, &p, &mut forged);
            assert_eq!(o, Outcome::AuthFailed, "{suite} {kind:?}: forged");
            if engine.keeps_failed(suite) {
                let mut expect = here.clone();
                expect[20] ^= 0x10;
                assert_eq!(forged, expect, "{suite} {kind:?}: a failed packet kept as it was");
            }
            assert!(rx_here.commit(&p, o, &forged).is_err());
            let p = rx_here.prepare_in_place(kind, Op::Unprotect, &mut here, n).unwrap();
            let o = run_one(engine, &rx_here, &p, &mut here);
            let m = rx_here.commit(&p, o, &here).unwrap();
            assert_eq!(&here[..m], &pkt[..], "{suite} {kind:?}: unprotected in place");
        }
    }
    // The engines here keep a failed packet on the suites they check before
    // decrypting (the CPU engine: not GCM, which aws-lc clears).
    assert!(engine.keeps_failed(Suite::AES_CM_128_HMAC_SHA1_80));
}

/// The transform of one prepared job in `buf`; its outcome.
fn run_one<E: Engine>(engine: &E, ctx: &Context<E>, p: &srtp::Prepared, buf: &mut [u8]) -> Outcome {
    let mut job = [ctx.job(p, buf).unwrap()];
    engine.transform(&mut job);
    job[0].outcome
}

/// Jobs with offsets outside their buffer fail cleanly.
fn bad_jobs<E: Engine>(engine: &E) {
    for suite in Suite::ALL {
        let keys =
            SessionKeys::derive(suite, &vec![3; suite.master_key_len()], &vec![4; suite.master_salt_len()], false, 0)
                .unwrap();
        let k = engine.prepare_keys(&keys).unwrap();
        let mut buf = [0u8; 32];
        let mut jobs = [Job {
            keys: &k,
            op: Op::Unprotect,
            iv: [0; 16],
            buf: &mut buf,
            enc_start: 12,
            enc_end: 40,
            auth_end: 20,
            suffix: [0; 4],
            suffix_len: 4,
            tag_start: 30,
            tag_len: suite.srtp_tag_len(),
            outcome: Outcome::Pending,
        }];
        engine.transform(&mut jobs);
        assert_eq!(jobs[0].outcome, Outcome::AuthFailed);
    }
}

/// The engine a conformance module runs on, or `None` (skipped, said on
/// stderr) where this CPU lacks its HMAC path.
fn on_path(path: MacPath) -> Option<CpuEngine> {
    let e = CpuEngine::with_mac_path(path);
    if e.is_none() {
        eprintln!("skipped: this CPU lacks the {path} MAC path");
    }
    e
}

macro_rules! conformance {
    ($module:ident, $engine:expr) => {
        mod $module {
            use super::*;
            #[test]
            fn rfc_aes_cm_keystream() {
                $engine.map(|e| aes_cm_keystream(&e));
            }
            #[test]
            fn rfc_f8() {
                $engine.map(|e| f8_vector(&e));
            }
            #[test]
            fn rfc7714_packets() {
                $engine.map(|e| gcm_packets(&e));
            }
            #[test]
            fn protocol_behaviour() {
                $engine.map(|e| behaviour(&e));
            }
            #[test]
            fn mki_and_key_lifetime() {
                $engine.map(|e| mki_and_lifetime(&e));
            }
            #[test]
            fn key_lifetime_rollover_on_a_long_stream() {
                $engine.map(|e| lifetime_rollover_long_stream(&e));
            }
            #[test]
            fn key_derivation_rate() {
                $engine.map(|e| kdr_nonzero(&e));
            }
            #[test]
            fn batch_interface() {
                $engine.map(|e| batch(&e));
            }
            #[test]
            fn prepared_in_place() {
                $engine.map(|e| in_place(&e));
            }
            #[test]
            fn malformed_jobs() {
                $engine.map(|e| bad_jobs(&e));
            }
        }
    };
}

conformance!(cpu, Some(CpuEngine::new()));
conformance!(cpu_avx512, on_path(MacPath::Avx512));
conformance!(cpu_shani, on_path(MacPath::ShaNi));
conformance!(cpu_avx2, on_path(MacPath::Avx2));
conformance!(cpu_single, on_path(MacPath::Single));
conformance!(portable, Some(PortableEngine::new()));

fn any_suite() -> impl Strategy<Value = Suite> {
    prop::sample::select(Suite::ALL.to_vec())
}

fn any_rtp() -> impl Strategy<Value = Vec<u8>> {
    (any::<u8>(), 0u8..4, any::<bool>(), 0usize..6, prop::collection::vec(any::<u8>(), 0..1400), any::<[u8; 12]>())
        .prop_map(|(pt, cc, ext, ext_words, payload, fixed)| {
            let mut p = fixed.to_vec();
            p[0] = 0x80 | cc | if ext { 0x10 } else { 0 };
            p[1] = pt;
            for i in 0..cc {
                p.extend([i; 4]);
            }
            if ext {
                p.extend([0xbe, 0xde, 0, ext_words as u8]);
                p.extend(vec![0x11; 4 * ext_words]);
            }
            p.extend(payload);
            p
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// All engines produce identical bytes and decisions on random packets,
    /// keys and indices, and each engine reads what the other wrote.
    #[test]
    fn engines_agree(suite in any_suite(), key in any::<[u8; 32]>(), salt in any::<[u8; 14]>(),
                     roc in any::<u32>(), pkts in prop::collection::vec(any_rtp(), 1..6),
                     kdr in prop::sample::select(vec![0u64, 1, 2, 1 << 16]), flip in any::<Option<(u16, u8)>>()) {
        let mk = MasterKey::new(suite, &key[..suite.master_key_len()], &salt[..suite.master_salt_len()]).unwrap();
        let mut policy = Policy::new(suite, mk);
        policy.kdr = kdr;
        let mut a = Context::new(policy.clone(), CpuEngine::new()).unwrap();
        let mut b = Context::new(policy.clone(), PortableEngine::new()).unwrap();
        let mut ra = Context::new(policy.clone(), CpuEngine::new()).unwrap();
        let mut rb = Context::new(policy, PortableEngine::new()).unwrap();
        let (mut oa, mut ob, mut back) = (vec![0u8; 2000], vec![0u8; 2000], vec![0u8; 2000]);
        for p in &pkts {
            let ssrc = u32::from_be_bytes(p[8..12].try_into().unwrap());
            for c in [&mut a as &mut dyn SetRoc, &mut b, &mut ra, &mut rb] {
                c.roc(ssrc, roc);
            }
            let na = a.protect_rtp(p, &mut oa);
            let nb = b.protect_rtp(p, &mut ob);
            prop_assert_eq!(&na, &nb);
            let Ok(n) = na else { continue };
            prop_assert_eq!(&oa[..n], &ob[..n]);
            let mut wire = oa[..n].to_vec();
            if let Some((pos, bit)) = flip {
                let i = pos as usize % n;
                wire[i] ^= 1 << (bit % 8);
            }
            let ua = ra.unprotect_rtp(&wire, &mut back).map(|m| back[..m].to_vec());
            let ub = rb.unprotect_rtp(&wire, &mut back).map(|m| back[..m].to_vec());
            prop_assert_eq!(&ua, &ub);
            if flip.is_none() {
                prop_assert_eq!(ua.unwrap(), p.clone());
            } else {
                prop_assert!(ua.is_err());
            }
        }
    }
}

/// Object-safe helper so the proptest can set the ROC on contexts of
/// different engine types in one loop.
trait SetRoc {
    fn roc(&mut self, ssrc: u32, roc: u32);
}
impl<E: Engine> SetRoc for Context<E> {
    fn roc(&mut self, ssrc: u32, roc: u32) {
        self.set_roc(ssrc, roc);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    /// SRTCP: engines agree, with and without encryption (the E flag), on
    /// packets long enough to take every GCM AAD path.
    #[test]
    fn engines_agree_rtcp(suite in any_suite(), key in any::<[u8; 32]>(), salt in any::<[u8; 14]>(),
                          encrypt in any::<bool>(), body in prop::collection::vec(any::<u8>(), 0..1200),
                          ssrc in any::<u32>(), flip in any::<Option<(u16, u8)>>()) {
        let mk = MasterKey::new(suite, &key[..suite.master_key_len()], &salt[..suite.master_salt_len()]).unwrap();
        let mut policy = Policy::new(suite, mk);
        policy.encrypt_rtcp = encrypt;
        let mut a = Context::new(policy.clone(), CpuEngine::new()).unwrap();
        let mut b = Context::new(policy.clone(), PortableEngine::new()).unwrap();
        let mut ra = Context::new(policy.clone(), CpuEngine::new()).unwrap();
        let mut rb = Context::new(policy, PortableEngine::new()).unwrap();
        let mut pkt = vec![0x80, 201, 0, 0];
        pkt.extend(ssrc.to_be_bytes());
        pkt.extend(&body);
        let (mut oa, mut ob, mut back) = (vec![0u8; 1400], vec![0u8; 1400], vec![0u8; 1400]);
        let n = a.protect_rtcp(&pkt, &mut oa).unwrap();
        let m = b.protect_rtcp(&pkt, &mut ob).unwrap();
        prop_assert_eq!(&oa[..n], &ob[..m]);
        let mut wire = oa[..n].to_vec();
        if let Some((pos, bit)) = flip {
            let i = pos as usize % n;
            wire[i] ^= 1 << (bit % 8);
        }
        let ua = ra.unprotect_rtcp(&wire, &mut back).map(|m| back[..m].to_vec());
        let ub = rb.unprotect_rtcp(&wire, &mut back).map(|m| back[..m].to_vec());
        prop_assert_eq!(&ua, &ub);
        if flip.is_none() {
            prop_assert_eq!(ua.unwrap(), pkt);
        } else {
            prop_assert!(ua.is_err());
        }
    }
}

/// The portable engine against the cpu engine at the edge lengths (around one
/// AES block and the 4 KiB hoisting boundary) up to the largest payload an
/// SRTP packet can carry, for every AES suite and both directions, with guard
/// bytes around the buffer that neither may touch.
#[test]
fn portable_matches_cpu_at_edge_lengths() {
    let largest = srtp::MAX_PACKET_LEN - 12 - srtp::MAX_TRAILER_LEN;
    let (cpu, portable) = (CpuEngine::new(), PortableEngine::new());
    for suite in Suite::ALL.into_iter().filter(|s| s.cipher() != srtp::suite::Cipher::Null) {
        let sk = SessionKeys::derive(
            suite,
            &vec![0x42; suite.master_key_len()],
            &vec![0x17; suite.master_salt_len()],
            false,
            7,
        )
        .unwrap();
        let (kc, kp) = (cpu.prepare_keys(&sk).unwrap(), portable.prepare_keys(&sk).unwrap());
        for len in [0usize, 1, 15, 16, 17, 4095, 4096, 4097, largest] {
            for op in [Op::Protect, Op::Unprotect] {
                let guard = 32;
                let tag = suite.srtp_tag_len();
                let total = 12 + len + tag;
                let mut iv = [0u8; 16];
                iv[..14].copy_from_slice(&[0x5a; 14]);
                iv[14] = 0xff; // the counter's low bytes wrap inside long payloads
                let mut start: Vec<u8> = (0..total + 2 * guard).map(|i| (i * 7 + 3) as u8).collect();
                if op == Op::Unprotect {
                    // A validly protected packet, so that both engines decrypt.
                    let mut jobs = [job(&kc, Op::Protect, iv, &mut start[guard..guard + total], len, tag)];
                    cpu.transform(&mut jobs);
                }
                let mut bufs = vec![start.clone(), start.clone()];
                let outcomes: Vec<Outcome> = bufs
                    .iter_mut()
                    .enumerate()
                    .map(|(i, b)| {
                        let buf = &mut b[guard..guard + total];
                        if i == 0 {
                            let mut jobs = [job(&kc, op, iv, buf, len, tag)];
                            cpu.transform(&mut jobs);
                            jobs[0].outcome
                        } else {
                            let mut jobs = [job(&kp, op, iv, buf, len, tag)];
                            portable.transform(&mut jobs);
                            jobs[0].outcome
                        }
                    })
                    .collect();
                assert_eq!(outcomes[0], outcomes[1], "{suite} len {len} {op:?}");
                // After a failed tag check the payload is unspecified (aws-lc wipes it).
                if outcomes[0] == Outcome::Done {
                    assert_eq!(bufs[0], bufs[1], "{suite} len {len} {op:?}");
                }
                let untouched = start;
                assert_eq!(outcomes[0], Outcome::Done, "{suite} len {len} {op:?}");
                for b in &bufs {
                    assert_eq!(b[..guard], untouched[..guard], "{suite} len {len}: wrote before the buffer");
                    assert_eq!(b[guard + total..], untouched[guard + total..], "{suite} len {len}: wrote past it");
                }
            }
        }
    }
}

fn job<'a, K>(keys: &'a K, op: Op, iv: [u8; 16], buf: &'a mut [u8], len: usize, tag: usize) -> Job<'a, K> {
    Job {
        keys,
        op,
        iv,
        buf,
        enc_start: 12,
        enc_end: 12 + len,
        auth_end: 12 + len,
        suffix: [0, 0, 0, 1],
        suffix_len: 4,
        tag_start: 12 + len,
        tag_len: tag,
        outcome: Outcome::Pending,
    }
}

/// One job of a random mixed batch: its suite, SRTP or SRTCP layout,
/// payload length, keys, IV and ROC (or SRTCP index word), and for
/// unprotect whether its tag is tampered with (bit `.1` of tag byte `.0`).
#[derive(Clone, Debug)]
struct Spec {
    suite: Suite,
    rtcp: bool,
    len: usize,
    keys: [u8; 66],
    iv: [u8; 16],
    roc: [u8; 4],
    tamper: Option<(usize, u8)>,
}

fn any_spec() -> impl Strategy<Value = Spec> {
    (
        any_suite(),
        any::<bool>(),
        0usize..1500,
        any::<[u8; 32]>(),
        any::<[u8; 34]>(),
        any::<[u8; 16]>(),
        any::<[u8; 4]>(),
    )
        .prop_flat_map(|(suite, rtcp, len, k0, k1, iv, roc)| {
            let mut keys = [0u8; 66];
            keys[..32].copy_from_slice(&k0);
            keys[32..].copy_from_slice(&k1);
            prop::option::weighted(0.3, (any::<usize>(), 0u8..8)).prop_map(move |tamper| Spec {
                suite,
                rtcp,
                len,
                keys,
                iv,
                roc,
                tamper,
            })
        })
}

impl Spec {
    fn session_keys(&self) -> SessionKeys {
        let s = self.suite;
        let (e, rest) = self.keys.split_at(s.session_key_len());
        let (salt, rest) = rest.split_at(s.session_salt_len());
        SessionKeys::from_raw(s, e, salt, &rest[..s.auth_key_len()]).unwrap()
    }

    fn hdr(&self) -> usize {
        if self.rtcp {
            8
        } else {
            12
        }
    }

    fn tag_len(&self) -> usize {
        if self.rtcp {
            self.suite.srtcp_tag_len()
        } else {
            self.suite.srtp_tag_len()
        }
    }

    /// The packet: header and payload, then room for the SRTCP index word and the tag.
    fn packet(&self) -> Vec<u8> {
        let seed = self.keys[0] as usize;
        (0..self.hdr() + self.len + 4 + 16).map(|i| (i * 31 + seed) as u8).collect()
    }

    /// The job over `buf` in the layout the context builds.
    fn job<'a, K>(&self, keys: &'a K, op: Op, buf: &'a mut [u8]) -> Job<'a, K> {
        let enc_start = self.hdr();
        let enc_end = enc_start + self.len;
        // HMAC SRTCP authenticates the index word after the payload; HMAC SRTP
        // the ROC as suffix; GCM SRTCP takes the index word as AAD suffix.
        let (auth_end, suffix_len, tag_start) = match (self.suite.is_aead(), self.rtcp) {
            (false, true) => (enc_end + 4, 0, enc_end + 4),
            (false, false) | (true, true) => (enc_end, 4, enc_end),
            (true, false) => (enc_end, 0, enc_end),
        };
        Job {
            keys,
            op,
            iv: self.iv,
            buf,
            enc_start,
            enc_end,
            auth_end,
            suffix: self.roc,
            suffix_len,
            tag_start,
            tag_len: self.tag_len(),
            outcome: Outcome::Pending,
        }
    }
}

/// Runs `op` over copies of `bufs` as one batch on `engine`; returns the
/// outcomes and the buffers.
fn run_batch<E: Engine>(engine: &E, specs: &[Spec], op: Op, bufs: &[Vec<u8>]) -> (Vec<Outcome>, Vec<Vec<u8>>) {
    let keys: Vec<E::Keys> = specs.iter().map(|s| engine.prepare_keys(&s.session_keys()).unwrap()).collect();
    let mut out = bufs.to_vec();
    let mut jobs: Vec<Job<'_, E::Keys>> =
        specs.iter().zip(&keys).zip(out.iter_mut()).map(|((s, k), b)| s.job(k, op, b)).collect();
    engine.transform(&mut jobs);
    let outcomes = jobs.iter().map(|j| j.outcome).collect();
    drop(jobs);
    (outcomes, out)
}

/// Every HMAC path of the cpu engine against the portable engine on one
/// random batch of mixed suites, SRTP and SRTCP, protect then unprotect with
/// some tags tampered: same outcomes and bytes; a tampered job fails while
/// its neighbours pass, and an HMAC job that fails is left untouched.
fn mixed_batch_on_every_path(specs: &[Spec]) -> Result<(), TestCaseError> {
    let portable = PortableEngine::new();
    let plain: Vec<Vec<u8>> = specs.iter().map(Spec::packet).collect();
    let (po, protected) = run_batch(&portable, specs, Op::Protect, &plain);
    prop_assert!(po.iter().all(|o| *o == Outcome::Done));
    let mut wire = protected.clone();
    for (s, w) in specs.iter().zip(wire.iter_mut()) {
        if let Some((at, bit)) = s.tamper {
            let tag_start = s.job(&(), Op::Unprotect, &mut [0u8; 0][..]).tag_start;
            w[tag_start + at % s.tag_len()] ^= 1 << bit;
        }
    }
    let (uo, opened) = run_batch(&portable, specs, Op::Unprotect, &wire);
    // The engine as chosen for this CPU (wide path, small groups on SHA-NI
    // or one by one), then forced onto each path.
    let engines = std::iter::once(("auto".to_string(), Some(CpuEngine::new())))
        .chain(MacPath::ALL.into_iter().map(|p| (p.to_string(), on_path(p))));
    for (path, cpu) in engines {
        let Some(cpu) = cpu else { continue };
        let (co, cp) = run_batch(&cpu, specs, Op::Protect, &plain);
        prop_assert_eq!(&co, &po, "{} protect outcomes", path);
        prop_assert!(cp == protected, "{} protect bytes", path);
        let (cu, copened) = run_batch(&cpu, specs, Op::Unprotect, &wire);
        prop_assert_eq!(&cu, &uo, "{} unprotect outcomes", path);
        for (i, s) in specs.iter().enumerate() {
            let want = if s.tamper.is_some() { Outcome::AuthFailed } else { Outcome::Done };
            prop_assert_eq!(cu[i], want, "{} job {} ({})", path, i, s.suite);
            match cu[i] {
                Outcome::Done => {
                    prop_assert!(copened[i] == opened[i], "{} job {} bytes", path, i);
                    let end = s.hdr() + s.len;
                    prop_assert!(copened[i][..end] == plain[i][..end], "{} job {} plaintext", path, i);
                }
                _ if !s.suite.is_aead() => {
                    prop_assert!(copened[i] == wire[i], "{} job {}: failed packet changed", path, i)
                }
                _ => {}
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn mixed_batches_agree_on_every_mac_path(specs in prop::collection::vec(any_spec(), 1..40)) {
        mixed_batch_on_every_path(&specs)?;
    }
}
