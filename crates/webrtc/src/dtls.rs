//! DTLS-SRTP for one leg (RFC 5763/5764) over `dimpl`, a sans-IO DTLS 1.2
//! endpoint: datagrams in, datagrams and the SRTP master keys out. The peer's
//! certificate is accepted only when its SHA-256 fingerprint is the one its
//! SDP announced (`a=fingerprint`); there is no PKI.
//!
//! dimpl signs with ECDSA only: a peer whose certificate holds an RSA key
//! fails the handshake (counted, logged by the caller). Browsers use ECDSA.
//! dimpl exports keys for AES_CM_128_HMAC_SHA1_80, AEAD_AES_128_GCM and
//! AEAD_AES_256_GCM (not the _32 profile).

use aws_lc_rs::signature::{EcdsaKeyPair, ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P384_SHA384_ASN1_SIGNING};
use base64::Engine as _;
use dimpl::{Config, Dtls, DtlsCertificate, Output, SrtpProfile};
use srtp::{MasterKey, Policy, Suite};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zeroize::{Zeroize, Zeroizing};

/// Why a leg's DTLS failed; the association is over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DtlsError {
    /// The certificate could not be made or read.
    #[error("DTLS certificate: {0}")]
    Certificate(String),
    /// The peer's certificate does not match its `a=fingerprint`.
    #[error("the peer's certificate does not match its a=fingerprint")]
    FingerprintMismatch,
    /// The SDP announced no fingerprint the relay can check.
    #[error("no a=fingerprint with a hash the relay checks (sha-256)")]
    NoFingerprint,
    /// The handshake failed (dimpl's reason).
    #[error("DTLS handshake failed: {0}")]
    Handshake(String),
    /// The peer closed the association.
    #[error("the peer closed the DTLS association")]
    Closed,
}

/// The relay's certificate and its SDP fingerprint, shared by every leg.
pub struct Identity {
    cert: DtlsCertificate,
    fingerprint: String,
    config: Arc<Config>,
    /// The same without the server's cookie exchange (HelloVerifyRequest).
    config_no_cookie: Arc<Config>,
}

impl Identity {
    /// A fresh self-signed ECDSA P-256 certificate (made at start).
    pub fn generate() -> Result<Identity, DtlsError> {
        let cert = dimpl::certificate::generate_self_signed_certificate()
            .map_err(|e| DtlsError::Certificate(e.to_string()))?;
        Identity::from_der(cert.certificate.clone(), cert.private_key.clone())
    }

    /// A certificate and its PKCS#8 private key, both DER (from the config).
    pub fn from_der(certificate: Vec<u8>, private_key: Vec<u8>) -> Result<Identity, DtlsError> {
        let cert = DtlsCertificate { certificate, private_key };
        let fingerprint = format!("sha-256 {}", cert.fingerprint_str());
        // Retransmissions from 500 ms (RFC 6347 §4.2.4.1 allows less than
        // its 1 s when the path is known): media waits for this handshake.
        let config = |cookie: bool| {
            Config::builder()
                .flight_start_rto(Duration::from_millis(500))
                .flight_retries(6)
                .handshake_timeout(Duration::from_secs(20))
                .use_server_cookie(cookie)
                .build()
                .map(Arc::new)
                .map_err(|e| DtlsError::Certificate(e.to_string()))
        };
        // A bad key must show here: dimpl panics on one at a handshake.
        let p256 = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &cert.private_key).is_ok();
        let p384 = EcdsaKeyPair::from_pkcs8(&ECDSA_P384_SHA384_ASN1_SIGNING, &cert.private_key).is_ok();
        if !p256 && !p384 {
            return Err(DtlsError::Certificate("the private key is not a PKCS#8 ECDSA P-256 or P-384 key".into()));
        }
        Ok(Identity { cert, fingerprint, config: config(true)?, config_no_cookie: config(false)? })
    }

    /// Reads PEM files: a certificate and a PKCS#8 private key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Identity, DtlsError> {
        let cert = pem_block(cert_pem, "CERTIFICATE")?;
        let key = pem_block(key_pem, "PRIVATE KEY")?;
        Identity::from_der(cert, key)
    }

    /// The `a=fingerprint` value: `sha-256 AB:CD:…`.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}

impl Drop for Identity {
    fn drop(&mut self) {
        self.cert.private_key.zeroize();
    }
}

fn pem_block(text: &str, label: &str) -> Result<Vec<u8>, DtlsError> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let start = text.find(&begin).ok_or_else(|| DtlsError::Certificate(format!("no {begin} block")))?;
    let rest = &text[start + begin.len()..];
    let stop = rest.find(&end).ok_or_else(|| DtlsError::Certificate(format!("no {end}")))?;
    let body: String = rest[..stop].chars().filter(|c| !c.is_whitespace()).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| DtlsError::Certificate(format!("bad base64 in the {label} block")))
}

/// A peer's `a=fingerprint`: hash function and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// The hash function, lower case (`sha-256`).
    pub hash: String,
    /// The digest.
    pub digest: Vec<u8>,
}

impl Fingerprint {
    /// Parses `sha-256 AB:CD:…` (RFC 8122 §5); `None` when malformed.
    pub fn parse(v: &str) -> Option<Fingerprint> {
        let (hash, hex) = v.trim().split_once(' ')?;
        let digest = hex
            .trim()
            .split(':')
            .map(|b| if b.len() == 2 { u8::from_str_radix(b, 16).ok() } else { None })
            .collect::<Option<Vec<u8>>>()?;
        if digest.is_empty() || digest.len() > 64 {
            return None;
        }
        Some(Fingerprint { hash: hash.to_ascii_lowercase(), digest })
    }

    fn matches(&self, der: &[u8]) -> bool {
        use subtle::ConstantTimeEq;
        self.hash == "sha-256" && bool::from(dimpl::certificate::calculate_fingerprint(der).ct_eq(&self.digest))
    }
}

/// `a=setup` (RFC 4145).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// `actpass`: either (offers only).
    ActPass,
    /// `active`: sends the ClientHello.
    Active,
    /// `passive`: waits for it.
    Passive,
    /// `holdconn`.
    HoldConn,
}

impl Setup {
    /// Parses the attribute value.
    pub fn parse(v: &str) -> Option<Setup> {
        Some(match v.trim().to_ascii_lowercase().as_str() {
            "actpass" => Setup::ActPass,
            "active" => Setup::Active,
            "passive" => Setup::Passive,
            "holdconn" => Setup::HoldConn,
            _ => return None,
        })
    }

    /// The attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            Setup::ActPass => "actpass",
            Setup::Active => "active",
            Setup::Passive => "passive",
            Setup::HoldConn => "holdconn",
        }
    }
}

/// The SRTP master keys a finished handshake exported (RFC 5764 §4.2),
/// as seen from the relay: `local` protects what it sends, `remote`
/// unprotects what the peer sends. Zeroized on drop.
pub struct SrtpKeys {
    /// The negotiated profile's suite.
    pub suite: Suite,
    pub(crate) local: Zeroizing<Vec<u8>>,
    pub(crate) remote: Zeroizing<Vec<u8>>,
}

impl SrtpKeys {
    fn from_export(material: &[u8], profile: SrtpProfile, active: bool) -> Result<SrtpKeys, DtlsError> {
        let (suite, kl, sl) = match profile {
            SrtpProfile::AES128_CM_SHA1_80 => (Suite::AES_CM_128_HMAC_SHA1_80, 16, 14),
            SrtpProfile::AEAD_AES_128_GCM => (Suite::AEAD_AES_128_GCM, 16, 12),
            SrtpProfile::AEAD_AES_256_GCM => (Suite::AEAD_AES_256_GCM, 32, 12),
            other => return Err(DtlsError::Handshake(format!("SRTP profile {other:?} not supported"))),
        };
        if material.len() < 2 * (kl + sl) {
            return Err(DtlsError::Handshake("short DTLS-SRTP key export".into()));
        }
        let (ck, rest) = material.split_at(kl);
        let (sk, rest) = rest.split_at(kl);
        let (cs, rest) = rest.split_at(sl);
        let ss = &rest[..sl];
        let client = Zeroizing::new([ck, cs].concat());
        let server = Zeroizing::new([sk, ss].concat());
        let (local, remote) = if active { (client, server) } else { (server, client) };
        Ok(SrtpKeys { suite, local, remote })
    }

    fn policy(&self, key_salt: &[u8]) -> Result<Policy, srtp::Error> {
        let kl = self.suite.master_key_len();
        Ok(Policy::new(self.suite, MasterKey::new(self.suite, &key_salt[..kl], &key_salt[kl..])?))
    }

    /// The policy that protects what the relay sends to the peer.
    pub fn local_policy(&self) -> Result<Policy, srtp::Error> {
        self.policy(&self.local)
    }

    /// The policy that unprotects what the peer sends.
    pub fn remote_policy(&self) -> Result<Policy, srtp::Error> {
        self.policy(&self.remote)
    }

    /// The master key and salt that protect what the relay sends, and
    /// those of what the peer sends (kept, sealed, for a restart).
    pub fn parts(&self) -> (&[u8], &[u8]) {
        (&self.local, &self.remote)
    }

    /// Keys kept for a restart ([`SrtpKeys::parts`]), checked against the
    /// suite's key and salt lengths.
    pub fn from_parts(suite: Suite, local: &[u8], remote: &[u8]) -> Result<SrtpKeys, String> {
        let want = suite.master_key_len() + suite.master_salt_len();
        if local.len() != want || remote.len() != want {
            return Err(format!(
                "{suite:?}: kept DTLS-SRTP keys of {} and {} bytes, not {want}",
                local.len(),
                remote.len()
            ));
        }
        Ok(SrtpKeys { suite, local: Zeroizing::new(local.to_vec()), remote: Zeroizing::new(remote.to_vec()) })
    }
}

/// `sha-256 AB:CD:…`, as [`Fingerprint::parse`] reads it.
impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex: Vec<String> = self.digest.iter().map(|b| format!("{b:02X}")).collect();
        write!(f, "{} {}", self.hash, hex.join(":"))
    }
}

impl std::fmt::Debug for SrtpKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SrtpKeys({:?}, redacted)", self.suite)
    }
}

/// One leg's DTLS association.
pub struct DtlsLeg {
    dtls: Dtls,
    expected: Fingerprint,
    active: bool,
    cert_ok: bool,
    connected: bool,
    timeout: Option<Instant>,
    buf: Vec<u8>,
}

/// What one step of a leg produced.
#[derive(Debug, Default)]
pub struct Step {
    /// Datagrams to send to the peer.
    pub send: Vec<Vec<u8>>,
    /// The handshake finished just now: the SRTP keys.
    pub keys: Option<SrtpKeys>,
}

impl DtlsLeg {
    /// A leg in the relay's `active` (client) or passive (server) role,
    /// accepting only a peer certificate with `expected` fingerprint. As
    /// the server it answers a first ClientHello with a cookie exchange
    /// (RFC 6347 §4.2.1: no amplification towards a forged source) unless
    /// `verified_source`: the peer's address already passed an ICE check
    /// with the leg's password, which proves it as well, one round trip
    /// sooner.
    pub fn new(
        id: &Identity,
        active: bool,
        expected: Fingerprint,
        verified_source: bool,
        now: Instant,
    ) -> Result<DtlsLeg, DtlsError> {
        if expected.hash != "sha-256" {
            return Err(DtlsError::NoFingerprint);
        }
        let config = if verified_source { &id.config_no_cookie } else { &id.config };
        let mut dtls = Dtls::new_12(config.clone(), id.cert.clone(), now);
        if active {
            dtls.set_active(true);
        }
        Ok(DtlsLeg { dtls, expected, active, cert_ok: false, connected: false, timeout: None, buf: vec![0u8; 2048] })
    }

    /// The relay sends the ClientHello (active role).
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// The handshake finished and the peer's certificate matched.
    pub fn is_connected(&self) -> bool {
        self.connected
    }

    /// The fingerprint this leg checks.
    pub fn expected(&self) -> &Fingerprint {
        &self.expected
    }

    /// When [`DtlsLeg::timeout`] should run next.
    pub fn next_timeout(&self) -> Option<Instant> {
        if self.connected {
            None
        } else {
            self.timeout
        }
    }

    /// Starts the handshake (sends the ClientHello in the active role).
    pub fn start(&mut self, now: Instant) -> Result<Step, DtlsError> {
        self.timeout(now)
    }

    /// A datagram from the peer (RFC 7983: first byte 20–63).
    pub fn handle(&mut self, datagram: &[u8], now: Instant) -> Result<Step, DtlsError> {
        self.dtls.handle_timeout(now).map_err(|e| DtlsError::Handshake(e.to_string()))?;
        self.dtls.handle_packet(datagram).map_err(|e| DtlsError::Handshake(e.to_string()))?;
        self.drain()
    }

    /// Retransmissions and the handshake deadline.
    pub fn timeout(&mut self, now: Instant) -> Result<Step, DtlsError> {
        self.dtls.handle_timeout(now).map_err(|e| DtlsError::Handshake(e.to_string()))?;
        self.drain()
    }

    fn drain(&mut self) -> Result<Step, DtlsError> {
        let mut step = Step::default();
        let mut material = None;
        loop {
            match self.dtls.poll_output(&mut self.buf) {
                Output::Packet(p) => step.send.push(p.to_vec()),
                Output::BufferTooSmall { needed } => self.buf.resize(needed.min(1 << 16), 0),
                Output::Timeout(t) => {
                    self.timeout = Some(t);
                    break;
                }
                Output::PeerCert(der) => {
                    if !self.expected.matches(der) {
                        return Err(DtlsError::FingerprintMismatch);
                    }
                    self.cert_ok = true;
                }
                Output::KeyingMaterial(m, profile) => {
                    material = Some(SrtpKeys::from_export(&m, profile, self.active)?);
                }
                Output::Connected => {}
                Output::CloseNotify => return Err(DtlsError::Closed),
                _ => {}
            }
        }
        if let Some(k) = material {
            if !self.cert_ok {
                // Keys without a checked certificate are never used.
                return Err(DtlsError::FingerprintMismatch);
            }
            self.connected = true;
            step.keys = Some(k);
        }
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(id: &Identity) -> Fingerprint {
        Fingerprint::parse(id.fingerprint()).unwrap()
    }

    /// Runs two legs against each other until both have keys.
    fn pair(a: &mut DtlsLeg, b: &mut DtlsLeg) -> Result<(SrtpKeys, SrtpKeys), DtlsError> {
        let mut now = Instant::now();
        let mut to_b = a.start(now)?.send;
        let mut to_a = b.start(now)?.send;
        let (mut ka, mut kb) = (None, None);
        for _ in 0..50 {
            now += Duration::from_millis(10);
            let mut next_b = Vec::new();
            for d in to_a.drain(..) {
                let s = a.handle(&d, now)?;
                next_b.extend(s.send);
                ka = ka.or(s.keys);
            }
            let mut next_a = Vec::new();
            for d in to_b.drain(..).chain(next_b) {
                let s = b.handle(&d, now)?;
                next_a.extend(s.send);
                kb = kb.or(s.keys);
            }
            to_a = next_a;
            if let (Some(_), Some(_)) = (&ka, &kb) {
                break;
            }
        }
        Ok((ka.expect("client keys"), kb.expect("server keys")))
    }

    #[test]
    fn two_legs_agree_on_mirrored_keys() {
        let (ia, ib) = (Identity::generate().unwrap(), Identity::generate().unwrap());
        let now = Instant::now();
        let mut a = DtlsLeg::new(&ia, true, fp(&ib), false, now).unwrap();
        let mut b = DtlsLeg::new(&ib, false, fp(&ia), true, now).unwrap();
        let (ka, kb) = pair(&mut a, &mut b).unwrap();
        assert!(a.is_connected() && b.is_connected());
        assert_eq!(ka.suite, kb.suite);
        assert_eq!(*ka.local, *kb.remote);
        assert_eq!(*ka.remote, *kb.local);
        assert_ne!(*ka.local, *ka.remote);
        // The policies build, and what one protects the other unprotects.
        let mut tx = srtp::Context::new(ka.local_policy().unwrap(), srtp::CpuEngine::new()).unwrap();
        let mut rx = srtp::Context::new(kb.remote_policy().unwrap(), srtp::CpuEngine::new()).unwrap();
        let pkt = [0x80u8, 0, 0, 1, 0, 0, 0, 160, 0, 0, 0, 9, 1, 2, 3, 4];
        let mut out = [0u8; 64];
        let n = tx.protect_rtp(&pkt, &mut out).unwrap();
        let mut back = [0u8; 64];
        let m = rx.unprotect_rtp(&out[..n], &mut back).unwrap();
        assert_eq!(&back[..m], &pkt);
    }

    #[test]
    fn the_cookie_exchange_of_an_unverified_source_also_completes() {
        let (ia, ib) = (Identity::generate().unwrap(), Identity::generate().unwrap());
        let now = Instant::now();
        let mut a = DtlsLeg::new(&ia, true, fp(&ib), false, now).unwrap();
        let mut b = DtlsLeg::new(&ib, false, fp(&ia), false, now).unwrap();
        let (ka, kb) = pair(&mut a, &mut b).unwrap();
        assert_eq!(*ka.local, *kb.remote);
    }

    #[test]
    fn a_certificate_that_is_not_the_announced_one_is_refused() {
        let (ia, ib, other) =
            (Identity::generate().unwrap(), Identity::generate().unwrap(), Identity::generate().unwrap());
        let now = Instant::now();
        let mut a = DtlsLeg::new(&ia, true, fp(&other), false, now).unwrap();
        let mut b = DtlsLeg::new(&ib, false, fp(&ia), true, now).unwrap();
        assert_eq!(pair(&mut a, &mut b).err(), Some(DtlsError::FingerprintMismatch));
        assert!(!a.is_connected());
    }

    #[test]
    fn fingerprints_and_setup_parse() {
        let f = Fingerprint::parse("SHA-256 0A:ff:10").unwrap();
        assert_eq!((f.hash.as_str(), f.digest.as_slice()), ("sha-256", &[0x0a, 0xff, 0x10][..]));
        for bad in ["", "sha-256", "sha-256 0A:f", "sha-256 0A::10", "sha-256 zz", "sha-256 0A:FF:"] {
            assert_eq!(Fingerprint::parse(bad), None, "{bad}");
        }
        assert_eq!(Setup::parse(" ActPass"), Some(Setup::ActPass));
        assert_eq!(Setup::parse("x"), None);
        let id = Identity::generate().unwrap();
        assert!(id.fingerprint().starts_with("sha-256 ") && id.fingerprint().len() == 8 + 95);
        // A leg never checks a hash it cannot compute.
        let sha1 = Fingerprint { hash: "sha-1".into(), digest: vec![0; 20] };
        assert!(matches!(DtlsLeg::new(&id, false, sha1, false, Instant::now()), Err(DtlsError::NoFingerprint)));
    }

    #[test]
    fn certificates_from_pem_and_bad_ones_refused() {
        let id = Identity::generate().unwrap();
        let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
        let cert = format!("-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n", b64(&id.cert.certificate));
        let key = format!("-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n", b64(&id.cert.private_key));
        let back = Identity::from_pem(&cert, &key).unwrap();
        assert_eq!(back.fingerprint(), id.fingerprint());
        assert!(matches!(Identity::from_pem("junk", &key), Err(DtlsError::Certificate(_))));
        let bad_key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----";
        assert!(matches!(Identity::from_pem(&cert, bad_key), Err(DtlsError::Certificate(_))));
        let bad_b64 = "-----BEGIN PRIVATE KEY-----\n*\n-----END PRIVATE KEY-----";
        assert!(matches!(Identity::from_pem(&cert, bad_b64), Err(DtlsError::Certificate(_))));
    }
}
