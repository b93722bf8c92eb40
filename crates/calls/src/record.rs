//! What is kept of a call for a restart or a takeover, and how: the
//! records of its signalling state ([`CallRecord`]), sealed under the
//! operator's key ([`Sealer`]), and the names and values of the fields that
//! say where each SRTP stream's index stands ([`index_field`],
//! [`index_value`]) under which key ([`key_id`]). The daemon's Redis store
//! (`serve/redis_store.rs`) writes and reads them; nothing here does I/O.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use zeroize::Zeroizing;

/// A call's signalling state as kept (no `Debug`: it holds keys).
#[derive(Serialize, Deserialize)]
pub struct CallRecord {
    /// Call-ID.
    pub id: String,
    /// Unix time it was created.
    pub created: u64,
    /// From- and to-tag.
    pub tags: [Option<String>; 2],
    /// An answer was seen.
    pub answered: bool,
    /// The party of the last offer.
    pub offerer: usize,
    /// Hold/mute bits of each party.
    pub block: [u8; 2],
    /// The m-lines (None: not relayed).
    pub streams: Vec<Option<StreamRecord>>,
}

/// What is read back of a kept call.
pub struct Loaded {
    /// The signalling state.
    pub record: CallRecord,
    /// Field → value of its index fields (see [`index_field`]), opened
    /// (values that do not open under the key are left out).
    pub indexes: HashMap<String, String>,
}

/// One m-line.
#[derive(Serialize, Deserialize)]
pub struct StreamRecord {
    /// audio, video, …
    pub media_type: String,
    /// Rejected in the answer.
    pub rejected: bool,
    /// rtcp-mux was offered to the answerer.
    pub mux_offered: bool,
    /// Both legs (kept under the name `sides`, which earlier records use).
    #[serde(rename = "sides")]
    pub legs: [LegRecord; 2],
    /// The codecs transcoded between, and the party that offered them
    /// (absent: the stream passes packets).
    #[serde(default)]
    pub transcoding: Option<(usize, crate::negotiate::Transcoding)>,
}

/// One leg of an m-line. Keys are `a=crypto` values, zeroized on drop.
#[derive(Serialize, Deserialize)]
pub struct LegRecord {
    /// The relay's local address of this leg.
    pub ip: IpAddr,
    /// The name of its interface (absent in records written before
    /// interfaces had names: the interface holding `ip` is taken).
    #[serde(default)]
    pub interface: Option<String>,
    /// The relay's RTP port (RTCP is the next).
    pub port: u16,
    /// The endpoint speaks SRTP.
    pub srtp: bool,
    /// The SDP protocol.
    pub proto: String,
    /// rtcp-mux.
    pub mux: bool,
    /// The endpoint's RTP and RTCP addresses from its SDP.
    pub peer: Option<(Option<SocketAddr>, Option<SocketAddr>)>,
    /// What the party offered.
    pub offered: Vec<String>,
    /// The key the endpoint sends with.
    pub endpoint_key: Option<String>,
    /// The keys the relay offered it.
    pub relay_keys: Vec<String>,
    /// The relay's key towards it.
    pub relay_key: Option<String>,
    /// Payload types of its m-line.
    pub pts: Vec<u8>,
    /// Its ICE and DTLS-SRTP state (absent: an SDES or plain leg).
    #[serde(default)]
    pub web: Option<WebRecord>,
}

impl Drop for LegRecord {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.offered.zeroize();
        self.endpoint_key.zeroize();
        self.relay_keys.zeroize();
        self.relay_key.zeroize();
    }
}

/// What is kept of a WebRTC leg (ICE-lite, DTLS-SRTP, BUNDLE), so that its
/// media goes on after a restart without a new handshake: the credentials
/// the browser checks consent with, the pair ICE chose, the keys the
/// handshake exported. Keys and the ICE password are zeroized on drop.
#[derive(Serialize, Deserialize, Default)]
pub struct WebRecord {
    /// Its keys come from DTLS.
    pub dtls: bool,
    /// The relay runs ICE-lite on it.
    pub ice_on: bool,
    /// The relay's ICE username fragment and password on it.
    pub ice: Option<(String, String)>,
    /// The peer's, from its SDP.
    pub peer_ice: Option<(String, String)>,
    /// The peer's `a=fingerprint`.
    pub fingerprint: Option<String>,
    /// The peer's `a=setup`.
    pub setup: Option<String>,
    /// The peer's `a=mid`.
    pub mid: Option<String>,
    /// The `a=setup` the relay offered it.
    pub setup_offered: Option<String>,
    /// BUNDLE: the m-line whose transport it shares.
    pub bundle: Option<usize>,
    /// The relay offered it the m-lines as one group.
    pub bundle_offered: bool,
    /// A bundled leg got keys from its group's handshake.
    pub bundle_keyed: bool,
    /// The mid header extension's id.
    pub mid_ext: Option<u8>,
    /// The address ICE chose (the media peer), and whether it nominated it.
    pub ice_peer: Option<SocketAddr>,
    /// See `ice_peer`.
    pub nominated: bool,
    /// Where DTLS datagrams went.
    pub dtls_peer: Option<SocketAddr>,
    /// The relay was the DTLS client.
    pub active: bool,
    /// The exported keys: suite, then the relay's and the peer's master key
    /// and salt, hex (absent: no handshake finished).
    pub keys: Option<(String, String, String)>,
}

impl Drop for WebRecord {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.ice.zeroize();
        self.peer_ice.zeroize();
        if let Some((_, a, b)) = self.keys.as_mut() {
            a.zeroize();
            b.zeroize();
        }
    }
}

/// A short, one-way name of DTLS-SRTP keys for the index fields, as
/// [`key_id`] for SDES: the relay's sending key (`local`) or the peer's.
pub fn dtls_key_id(keys: &srtpgate_webrtc::dtls::SrtpKeys, local: bool) -> String {
    let (l, r) = keys.parts();
    let mut text = Zeroizing::new(format!("srtpgate index key\0dtls\0{}\0", keys.suite).into_bytes());
    text.extend_from_slice(if local { l } else { r });
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, &text);
    hex::encode(&d.as_ref()[..6])
}

/// Seals and opens records (AES-256-GCM, a random 96-bit nonce each).
pub struct Sealer(LessSafeKey);

impl Sealer {
    /// A sealer under `key`.
    pub fn new(key: &[u8; 32]) -> Sealer {
        Sealer(LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte AES-256 key")))
    }

    /// `nonce ‖ ciphertext ‖ tag` of `plain`, bound to `name`.
    pub fn seal(&self, name: &str, plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce).expect("system randomness");
        let mut out = Vec::with_capacity(NONCE_LEN + plain.len() + 16);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(plain);
        let mut body = out.split_off(NONCE_LEN);
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(name.as_bytes()), &mut body)
            .expect("AES-GCM seal");
        out.extend_from_slice(&body);
        out
    }

    /// The plain text of a sealed record of `name`.
    pub fn open(&self, name: &str, sealed: &[u8]) -> Result<Zeroizing<Vec<u8>>, String> {
        if sealed.len() < NONCE_LEN + 16 {
            return Err("record too short".into());
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| "bad nonce")?;
        let mut body = Zeroizing::new(body.to_vec());
        let n = self
            .0
            .open_in_place(nonce, Aad::from(name.as_bytes()), &mut body)
            .map_err(|_| "does not open under redis_key_file's key (another key, or altered)")?
            .len();
        body.truncate(n);
        Ok(body)
    }
}

/// A short, one-way name of an SDES key, for the index fields: which key
/// an index was reserved under (the first 6 bytes of SHA-256 over a label
/// and the key's `a=crypto` value, as 12 hex digits). The key cannot be
/// had from it.
pub fn key_id(crypto: &srtpgate_sdp::crypto::CryptoAttr) -> String {
    let text = Zeroizing::new(format!("srtpgate index key\0{crypto}"));
    let d = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, text.as_bytes());
    hex::encode(&d.as_ref()[..6])
}

/// [`key_id`] as a number (0 for none), for the workers.
pub fn key_tag(id: &str) -> u64 {
    u64::from_str_radix(id, 16).unwrap_or(0)
}

/// The field of one stream's index in a call's hash: m-line, party,
/// direction (`t`: the relay sends, `r`: it receives), key, SSRC.
pub fn index_field(stream: usize, party: usize, tx: bool, key: &str, ssrc: u32) -> String {
    format!("{stream}.{party}.{}.{key}.{ssrc:08x}", if tx { 't' } else { 'r' })
}

/// The field of a context's master key use.
pub fn uses_field(stream: usize, party: usize, tx: bool, key: &str) -> String {
    format!("{stream}.{party}.{}.{key}.uses", if tx { 't' } else { 'r' })
}

/// `rtp rtcp` of an index field (`-` for none).
pub fn index_value(rtp: Option<u64>, rtcp: Option<u32>) -> String {
    let f = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    format!("{} {}", f(rtp.map(|v| v.to_string())), f(rtcp.map(|v| v.to_string())))
}

/// Parses [`index_value`].
pub fn parse_index(v: &str) -> Option<(Option<u64>, Option<u32>)> {
    let (a, b) = v.split_once(' ')?;
    let rtp = if a == "-" { None } else { Some(a.parse().ok()?) };
    let rtcp = if b == "-" { None } else { Some(b.parse().ok()?) };
    Some((rtp, rtcp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_record_opens_only_under_its_key_and_name() {
        let s = Sealer::new(&[7; 32]);
        let sealed = s.seal("ns:call:a", b"inline:secret");
        assert!(!sealed.windows(6).any(|w| w == b"secret"));
        assert_eq!(&s.open("ns:call:a", &sealed).unwrap()[..], b"inline:secret");
        assert!(s.open("ns:call:b", &sealed).is_err(), "moved to another call");
        assert!(Sealer::new(&[8; 32]).open("ns:call:a", &sealed).is_err(), "another key");
        let mut bad = sealed.clone();
        bad[20] ^= 1;
        assert!(s.open("ns:call:a", &bad).is_err(), "altered");
        assert!(s.open("ns:call:a", &sealed[..10]).is_err(), "short");
        assert_ne!(s.seal("ns:call:a", b"x"), s.seal("ns:call:a", b"x"), "a fresh nonce each time");
    }

    #[test]
    fn index_values_round_trip() {
        for (a, b) in [(None, None), (Some(1u64 << 40), Some(7u32)), (Some(0), None)] {
            assert_eq!(parse_index(&index_value(a, b)), Some((a, b)));
        }
        assert_eq!(parse_index("x 1"), None);
        assert_eq!(parse_index("1"), None);
        let k = srtpgate_sdp::crypto::CryptoAttr::parse(
            "1 AES_CM_128_HMAC_SHA1_80 inline:WVNfX19zZW1jdGwgKCkgewkyMjA7fQp9CnVubGVz",
        )
        .expect("crypto");
        assert_eq!(key_id(&k).len(), 12);
        assert_ne!(key_tag(&key_id(&k)), 0);
    }
}
