//! SDES keys that pass through the control plane are zeroized when their
//! buffers are freed, checked by looking (as `crates/srtp/tests/zeroize.rs`
//! does for the SRTP contexts): a full offer, a retransmitted offer, an
//! answer and a delete go through [`handle_datagram`] as raw NG datagrams,
//! then the call table and the reply cache are dropped, and no heap block
//! freed meanwhile may hold a key, as `inline:` base64 text or as raw key or
//! salt bytes.
//!
//! The relay's own keys are only known once its replies are read, so freed
//! blocks cannot be scanned as they are freed, as the srtp test does: the
//! test binary's global allocator is the test kit's [`Quarantine`], which
//! keeps the blocks the armed thread frees until the call is over.
//!
//! `srtpgate` is a binary crate, so [`handle_datagram`] is reachable only
//! from its own unit tests; the allocator therefore serves every unit test
//! of the binary. It passes through to the system allocator, except for
//! the frees of the thread that armed it (the test drives the whole call on
//! its own thread), so other tests running meanwhile are not touched.

use super::cache::ReplyCache;
use super::config::ServeArgs;
use super::{handle_datagram, Shared};
use base64::Engine as _;
use srtpgate_ng::Value;
use srtpgate_testkit::quarantine::{self, Quarantine};
use std::net::SocketAddr;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: Quarantine = Quarantine;

/// The offerer's and the answerer's keys (`inline:` base64 of 16 key and
/// 14 salt bytes), constants so that the test itself makes no heap copy.
const KEY_A: &str = "WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz";
const KEY_B: &str = "d0RmdmcwVF9Ue3JlZG9fa2V5X2IsIHNhbHRfYiEh";
const OFFER_SDP: &str = "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
    m=audio 40000 RTP/SAVP 0\r\n\
    a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz\r\n";
const ANSWER_SDP: &str = "v=0\r\no=- 2 1 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 127.0.0.1\r\nt=0 0\r\n\
    m=audio 40010 RTP/SAVP 0\r\n\
    a=crypto:1 AES_CM_128_HMAC_SHA1_80 inline:d0RmdmcwVF9Ue3JlZG9fa2V5X2IsIHNhbHRfYiEh\r\n";

/// One SDES key as text and as bytes, on the stack.
#[derive(Clone, Copy)]
struct Key {
    text: [u8; 40],
    raw: [u8; 30],
}

impl Key {
    fn new(text: &[u8]) -> Key {
        let mut k = Key { text: [0; 40], raw: [0; 30] };
        k.text.copy_from_slice(text);
        let n = base64::engine::general_purpose::STANDARD.decode_slice(k.text, &mut k.raw).expect("base64 key");
        assert_eq!(n, 30);
        k
    }

    /// The text, the master key and the master salt.
    fn secrets(&self) -> [&[u8]; 3] {
        [&self.text, &self.raw[..16], &self.raw[16..]]
    }
}

/// The relay's key in a reply's SDP, read without a heap copy.
fn relay_key(reply: &Value) -> Key {
    let sdp = reply.get("sdp").and_then(Value::as_str).expect("reply SDP");
    let at = sdp.find("inline:").expect("a=crypto in the reply") + "inline:".len();
    Key::new(sdp.as_bytes().get(at..at + 40).expect("a 40-character key"))
}

fn ask(s: &Shared, cache: &mut ReplyCache, from: SocketAddr, cookie: &str, body: Value) -> Value {
    let dgram = srtpgate_ng::request(cookie, &body);
    drop(body);
    let reply = handle_datagram(&dgram, from, s, cache, Instant::now()).expect("a reply");
    // The datagram is the test's (a client's) copy; it is wiped here so
    // that only the daemon's buffers are judged.
    let mut dgram = dgram;
    zeroize::Zeroize::zeroize(&mut dgram);
    let (_, v) = srtpgate_ng::parse_reply(&reply).expect("reply parses");
    assert_eq!(v.get("result").and_then(Value::as_str), Some("ok"), "{cookie}: {v:?}");
    v
}

#[test]
fn sdes_keys_are_zeroized_through_offer_answer_delete() {
    let _one = quarantine::one_at_a_time();
    // The control: a key left in a plain Vec is found, one in a Zeroizing
    // Vec is not.
    quarantine::arm();
    drop(std::hint::black_box(KEY_A.as_bytes().to_vec()));
    assert_eq!(quarantine::release(&[KEY_A.as_bytes()]).found, 1, "the scan must see a key left in freed memory");
    quarantine::arm();
    drop(std::hint::black_box(zeroize::Zeroizing::new(KEY_A.as_bytes().to_vec())));
    assert_eq!(quarantine::release(&[KEY_A.as_bytes()]).found, 0);

    let (s, mut cache) = super::tests::server(43_900, ServeArgs::default());
    let (a, b) = (SocketAddr::from(([127, 0, 0, 1], 5060)), SocketAddr::from(([127, 0, 0, 1], 5062)));
    let (ka, kb) = (Key::new(KEY_A.as_bytes()), Key::new(KEY_B.as_bytes()));

    quarantine::arm();
    let offer =
        || Value::dict().with("command", "offer").with("call-id", "zc1").with("from-tag", "fa").with("sdp", OFFER_SDP);
    let v = ask(&s, &mut cache, a, "o1", offer());
    let relay_b = relay_key(&v);
    drop(v);
    // A retransmission is answered from the cache.
    drop(ask(&s, &mut cache, a, "o1", offer()));
    let answer = Value::dict()
        .with("command", "answer")
        .with("call-id", "zc1")
        .with("from-tag", "fa")
        .with("to-tag", "tb")
        .with("sdp", ANSWER_SDP);
    let v = ask(&s, &mut cache, b, "a1", answer);
    let relay_a = relay_key(&v);
    drop(v);
    drop(ask(&s, &mut cache, a, "d1", Value::dict().with("command", "delete").with("call-id", "zc1")));
    drop(cache);
    drop(s);

    let mut secrets: Vec<&[u8]> = Vec::new();
    for k in [&ka, &kb, &relay_a, &relay_b] {
        secrets.extend(k.secrets());
    }
    let quarantine::Scan { blocks, found, overflow } = quarantine::release(&secrets);
    assert_eq!(overflow, 0, "the quarantine overflowed");
    assert!(blocks > 100, "the call freed heap blocks ({blocks})");
    assert_eq!(found, 0, "{found} of {blocks} freed heap blocks still held an SDES key");
}
