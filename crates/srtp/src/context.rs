//! SRTP/SRTCP contexts: the per-session state machine, without I/O.
//!
//! Every operation runs in three steps (design.md §2):
//! [`Context::prepare`] (header checks, index estimation, replay pre-check,
//! IV), [`Engine::transform`] on a batch of [`Job`]s built with
//! [`Context::job`], and [`Context::commit`] (tag verdict; only then are the
//! ROC, the replay window and new streams updated). The one-packet methods
//! ([`Context::protect_rtp`] and friends) run the three in a row.

use crate::engine::{Engine, Job, Op, Outcome};
use crate::error::{Error, HeaderError};
use crate::header::{check_padding, RtcpHeader, RtpHeader};
use crate::index::{estimate, roc_of, MAX_SRTCP_INDEX, MAX_SRTP_INDEX};
use crate::kdf::SessionKeys;
use crate::keys::MasterKey;
use crate::replay::{ReplayCheck, ReplayWindow, DEFAULT_WINDOW, MAX_WINDOW};
use crate::suite::{Cipher, Suite};
use rustc_hash::FxHashMap;
use zeroize::Zeroizing;

/// Largest packet accepted, protected or not.
pub const MAX_PACKET_LEN: usize = 65_535;
/// Most bytes protection adds to an SRTP packet (tag + MKI of 128 bytes).
pub const MAX_TRAILER_LEN: usize = 16 + 128;
/// Most bytes protection adds to an SRTCP packet (tag + index word + MKI).
pub const MAX_RTCP_TRAILER_LEN: usize = 16 + 4 + 128;

/// Parameters of a context.
#[derive(Clone, Debug)]
pub struct Policy {
    /// The protection profile.
    pub suite: Suite,
    /// One or more master keys; with several, each needs an MKI of `mki_len` bytes.
    pub keys: Vec<MasterKey>,
    /// Key derivation rate: 0, or a power of two up to 2^24 (RFC 3711 §4.3.1).
    pub kdr: u64,
    /// Replay window in packets (64..=32768; rounded up to a multiple of 64).
    pub replay_window: usize,
    /// Most SSRCs per direction; packets of further SSRCs are refused.
    pub max_streams: usize,
    /// Encrypt SRTP payloads (false = `UNENCRYPTED_SRTP`, RFC 4568 §6.3.2).
    pub encrypt_rtp: bool,
    /// Encrypt SRTCP (false = `UNENCRYPTED_SRTCP`: the E flag is clear).
    pub encrypt_rtcp: bool,
    /// For the AES-192 suites, derive keys as libsrtp before 2.8.0 does
    /// (an AES-256 PRF; cisco/libsrtp#763) instead of as RFC 6188 says.
    /// Off by default; turn on only for peers running such a libsrtp.
    pub libsrtp_aes192_kdf: bool,
}

impl Policy {
    /// A policy with one master key and the defaults (window 128, 1024 streams).
    pub fn new(suite: Suite, key: MasterKey) -> Policy {
        Policy {
            suite,
            keys: vec![key],
            kdr: 0,
            replay_window: DEFAULT_WINDOW,
            max_streams: 1024,
            encrypt_rtp: true,
            encrypt_rtcp: true,
            libsrtp_aes192_kdf: false,
        }
    }

    /// Whether a context can be made of this policy: what
    /// [`Context::new`] refuses, without deriving a key (the control plane
    /// checks a key it agrees before a worker builds the context).
    pub fn check(&self) -> Result<(), Error> {
        let suite = self.suite;
        if self.keys.is_empty() {
            return Err(Error::InvalidPolicy("no master key".into()));
        }
        let mki_len = self.keys[0].mki().len();
        if self.keys.iter().any(|k| k.mki().len() != mki_len) {
            return Err(Error::InvalidPolicy("all master keys need MKIs of one length".into()));
        }
        if self.keys.len() > 1 && mki_len == 0 {
            return Err(Error::InvalidPolicy("several master keys need an MKI each".into()));
        }
        for (i, a) in self.keys.iter().enumerate() {
            if mki_len > 0 && self.keys[..i].iter().any(|b| b.mki() == a.mki()) {
                return Err(Error::InvalidPolicy("two master keys share an MKI".into()));
            }
            if a.key().len() != suite.master_key_len() || a.salt().len() != suite.master_salt_len() {
                return Err(Error::InvalidKey(format!("master key does not fit {suite}")));
            }
        }
        if self.kdr != 0 && (!self.kdr.is_power_of_two() || self.kdr > 1 << 24) {
            return Err(Error::InvalidPolicy(format!(
                "key derivation rate {} is not 0 or a power of two up to 2^24",
                self.kdr
            )));
        }
        if !(64..=MAX_WINDOW).contains(&self.replay_window) {
            return Err(Error::InvalidPolicy(format!(
                "replay window {} outside 64..={MAX_WINDOW}",
                self.replay_window
            )));
        }
        if self.max_streams == 0 {
            return Err(Error::InvalidPolicy("max_streams is 0".into()));
        }
        Ok(())
    }

    /// Derives the session keys of master key `master` as this policy says.
    fn derive(&self, master: &MasterKey, rtcp: bool, r: u64) -> Result<SessionKeys, Error> {
        if self.libsrtp_aes192_kdf && matches!(self.suite.cipher(), Cipher::AesCm(24)) {
            let mut k = SessionKeys::derive_libsrtp_aes192(master.key(), master.salt(), rtcp, r)?;
            k.set_suite(self.suite);
            Ok(k)
        } else {
            SessionKeys::derive(self.suite, master.key(), master.salt(), rtcp, r)
        }
    }
}

/// RTP or RTCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// SRTP.
    Rtp,
    /// SRTCP.
    Rtcp,
}

/// Where a prepared job finds its session keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum KeyRef {
    /// The keys of master key `n`, derived once (kdr = 0).
    Fixed(usize),
    /// A per-stream slot (kdr ≠ 0), valid while its generation matches.
    Stream { ssrc: u32, tx: bool, slot: usize, gen: u64 },
    /// A context-wide scratch slot for a receive SSRC that has no stream yet
    /// (kdr ≠ 0): streams are created only after authentication.
    Scratch { slot: usize, gen: u64 },
}

/// The result of [`Context::prepare`]: everything the job and the commit need.
#[derive(Clone, Copy, Debug)]
pub struct Prepared {
    kind: Kind,
    /// The stream's slot when it existed at prepare time.
    slot: Option<u32>,
    op: Op,
    ssrc: u32,
    index: u64,
    key: usize,
    keys: KeyRef,
    iv: [u8; 16],
    enc: (usize, usize),
    auth_end: usize,
    suffix: [u8; 4],
    suffix_len: usize,
    tag_start: usize,
    tag_len: usize,
    out_len: usize,
    /// Receive side, resumed stream not yet confirmed: if the packet fails
    /// to authenticate, the next rollover counter is worth a try
    /// ([`Context::retry_next_roc`]).
    next_roc: bool,
    /// Receive side, resumed stream not yet confirmed: under the estimated
    /// index the packet was old, so it was taken under the next rollover
    /// counter; if it fails there, it counts as the replay it most likely
    /// is (as it would have without the second rollover).
    old_under_estimate: bool,
}

impl Prepared {
    /// Length of the result in the output buffer once committed.
    pub fn out_len(&self) -> usize {
        self.out_len
    }
    /// SSRC of the packet.
    pub fn ssrc(&self) -> u32 {
        self.ssrc
    }
    /// The packet index (48-bit SRTP index or 31-bit SRTCP index).
    pub fn index(&self) -> u64 {
        self.index
    }
    /// SRTP or SRTCP.
    pub fn kind(&self) -> Kind {
        self.kind
    }
    /// Protect or unprotect.
    pub fn op(&self) -> Op {
        self.op
    }
    /// Whether a failed tag check of this packet is worth a second try
    /// under the next rollover counter ([`Context::retry_next_roc`]).
    pub fn next_roc_possible(&self) -> bool {
        self.next_roc
    }
}

/// Session keys as the engine wants them, plus the raw salt the IV needs.
struct Derived<K> {
    keys: K,
    salt: Zeroizing<[u8; 14]>,
}

impl<K> Derived<K> {
    fn new<E: Engine<Keys = K>>(engine: &E, sk: &SessionKeys) -> Result<Derived<K>, Error> {
        let mut salt = Zeroizing::new([0u8; 14]);
        salt[..sk.salt().len()].copy_from_slice(sk.salt());
        Ok(Derived { keys: engine.prepare_keys(sk)?, salt })
    }
}

struct KdrSlot<K> {
    ssrc: u32,
    kind: Kind,
    key: usize,
    r: u64,
    gen: u64,
    derived: Derived<K>,
}

struct Stream<K> {
    ssrc: u32,
    /// Highest SRTP index sent or accepted.
    rtp_highest: Option<u64>,
    /// Indices seen: on the receive side the replay window; on the send side
    /// it refuses to protect an index twice (keystream reuse).
    rtp_window: Option<ReplayWindow>,
    /// Send side: the next SRTCP index.
    rtcp_next: u32,
    /// Receive side only.
    rtcp_window: Option<ReplayWindow>,
    /// Send side: SRTP indices from this one on are not reserved
    /// ([`Context::reserve`]); `u64::MAX` when the context does not reserve.
    rtp_limit: u64,
    /// Send side: SRTCP indices from this one on are not reserved.
    rtcp_limit: u32,
    /// Receive side: the rollover counter was resumed ([`Context::resume`])
    /// and no packet has authenticated since, so it may be one behind the
    /// sender's ([`Context::resume_rx`]).
    roc_unconfirmed: bool,
    /// kdr ≠ 0 only: session keys of the two latest derivation intervals,
    /// slots 0–1 for SRTP and 2–3 for SRTCP. Boxed: most sessions use kdr 0
    /// and the stream entry stays small (it is touched by every packet).
    kdr: Option<Box<[Option<KdrSlot<K>>; 4]>>,
}

impl<K> Stream<K> {
    fn new(rx: bool, window: usize) -> Stream<K> {
        Stream {
            ssrc: 0,
            rtp_highest: None,
            rtp_window: Some(ReplayWindow::new(window)),
            rtcp_next: 0,
            rtcp_window: rx.then(|| ReplayWindow::new(window)),
            rtp_limit: u64::MAX,
            rtcp_limit: u32::MAX,
            roc_unconfirmed: false,
            kdr: None,
        }
    }
}

/// The streams of one direction: a compact SSRC → slot map (8 bytes an
/// entry, so it stays in cache with many streams) and the streams in a vector.
/// `prepare` finds the slot once; `commit` goes straight to it.
struct Streams<K> {
    slots: FxHashMap<u32, u32>,
    list: Vec<Stream<K>>,
}

impl<K> Default for Streams<K> {
    fn default() -> Self {
        Streams { slots: FxHashMap::default(), list: Vec::new() }
    }
}

impl<K> Streams<K> {
    fn len(&self) -> usize {
        self.list.len()
    }
    fn slot_of(&self, ssrc: u32) -> Option<u32> {
        // Nearly every session has one SSRC each way: its entry, which the
        // packet reads anyway, answers without the hash table's lines.
        match self.list.first() {
            Some(s) if s.ssrc == ssrc => Some(0),
            _ => self.slots.get(&ssrc).copied(),
        }
    }
    fn contains_key(&self, ssrc: &u32) -> bool {
        self.slots.contains_key(ssrc)
    }
    fn get(&self, ssrc: &u32) -> Option<&Stream<K>> {
        self.slot_of(*ssrc).map(|i| &self.list[i as usize])
    }
    fn get_mut(&mut self, ssrc: &u32) -> Option<&mut Stream<K>> {
        self.slot_of(*ssrc).map(|i| &mut self.list[i as usize])
    }
    fn at(&self, slot: u32) -> &Stream<K> {
        &self.list[slot as usize]
    }
    /// The stream in `slot` if it is still `ssrc`'s.
    fn at_mut(&mut self, slot: Option<u32>, ssrc: u32) -> Option<&mut Stream<K>> {
        slot.and_then(|i| self.list.get_mut(i as usize)).filter(|s| s.ssrc == ssrc)
    }
    fn get_or_insert(&mut self, ssrc: u32, new: impl FnOnce() -> Stream<K>) -> &mut Stream<K> {
        let i = match self.slots.get(&ssrc) {
            Some(&i) => i,
            None => {
                let i = self.list.len() as u32;
                let mut s = new();
                s.ssrc = ssrc;
                self.list.push(s);
                self.slots.insert(ssrc, i);
                i
            }
        };
        &mut self.list[i as usize]
    }
}

/// One master key and, with kdr 0, its session keys. The session keys are
/// boxed: an engine's expanded keys are large (kilobytes for the CPU
/// engine), and the key set is read by every packet for its use count; a
/// small key set is one cache line to announce ([`Context::prefetch_state`]).
struct KeySet<K> {
    master: MasterKey,
    rtp: Option<Box<Derived<K>>>,
    rtcp: Option<Box<Derived<K>>>,
    srtp_packets: u64,
    srtcp_packets: u64,
}

/// Where one stream of a context stands: what a sender or receiver that
/// restarts needs to go on without using an index twice
/// ([`Context::streams_state`], [`Context::resume`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamState {
    /// The stream's SSRC.
    pub ssrc: u32,
    /// The send side (`true`) or the receive side.
    pub tx: bool,
    /// The highest SRTP index sent or accepted, if any. When persisted for a
    /// sender, the highest index reserved ([`Context::reserve`]).
    pub rtp: Option<u64>,
    /// Send side: the next SRTCP index (when persisted, the reservation's
    /// end); receive side: the highest SRTCP index accepted, if any.
    pub rtcp: Option<u32>,
}

/// Stream counts of a context.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContextStats {
    /// Streams on the send side.
    pub tx_streams: usize,
    /// Streams on the receive side.
    pub rx_streams: usize,
}

const SCRATCH: usize = 4;

/// Session keys of derivation intervals (kdr ≠ 0), newest by `gen`.
type KdrSlots<K, const N: usize> = [Option<KdrSlot<K>>; N];

/// An SRTP session: one or more master keys, and the state of each SSRC seen,
/// separately for the send (protect) and receive (unprotect) directions.
/// Streams are found by a hash lookup, never a scan.
pub struct Context<E: Engine> {
    engine: E,
    suite: Suite,
    keys: Vec<KeySet<E::Keys>>,
    mki_len: usize,
    active: usize,
    kdr: u64,
    window: usize,
    max_streams: usize,
    encrypt_rtp: bool,
    encrypt_rtcp: bool,
    /// Derivation settings, kept for kdr ≠ 0 re-derivation.
    kdf: Policy,
    tx: Streams<E::Keys>,
    rx: Streams<E::Keys>,
    preset_roc: FxHashMap<u32, u32>,
    /// kdr ≠ 0 only (allocated with the context). Boxed: a slot holds a
    /// whole key schedule, and inline they made every context kilobytes,
    /// spreading the fields each packet reads over many cache lines.
    scratch: Option<Box<KdrSlots<E::Keys, SCRATCH>>>,
    gen: u64,
    /// The send side uses only reserved indices ([`Context::reserve`]).
    reserving: bool,
    /// The receive side was resumed after a restart ([`Context::resume_rx`]).
    rx_resumed: bool,
}

fn xor_into(dst: &mut [u8], src: &[u8]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d ^= s);
}

impl<E: Engine> Context<E> {
    /// Creates a context, deriving and precomputing the session keys once.
    pub fn new(policy: Policy, engine: E) -> Result<Context<E>, Error> {
        policy.check()?;
        let suite = policy.suite;
        let mki_len = policy.keys[0].mki().len();
        let mut keys = Vec::with_capacity(policy.keys.len());
        let kdf = Policy { keys: Vec::new(), ..policy.clone() };
        for master in policy.keys {
            let (rtp, rtcp) = if policy.kdr == 0 {
                let rtp = kdf.derive(&master, false, 0)?;
                let rtcp = kdf.derive(&master, true, 0)?;
                (Some(Box::new(Derived::new(&engine, &rtp)?)), Some(Box::new(Derived::new(&engine, &rtcp)?)))
            } else {
                (None, None)
            };
            keys.push(KeySet { master, rtp, rtcp, srtp_packets: 0, srtcp_packets: 0 });
        }
        Ok(Context {
            engine,
            suite,
            keys,
            mki_len,
            active: 0,
            kdr: policy.kdr,
            window: policy.replay_window,
            max_streams: policy.max_streams,
            encrypt_rtp: policy.encrypt_rtp,
            encrypt_rtcp: policy.encrypt_rtcp,
            kdf,
            tx: Streams::default(),
            rx: Streams::default(),
            preset_roc: FxHashMap::default(),
            scratch: (policy.kdr != 0).then(Default::default),
            gen: 0,
            reserving: false,
            rx_resumed: false,
        })
    }

    /// The suite of this context.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// The key derivation rate (0: session keys derived once). With one,
    /// preparing a packet may derive keys into a slot that an earlier
    /// packet's job still names, so such jobs must not wait in a batch
    /// while later packets of the context are prepared.
    pub fn key_derivation_rate(&self) -> u64 {
        self.kdr
    }

    /// The engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// Stream counts.
    pub fn stats(&self) -> ContextStats {
        ContextStats { tx_streams: self.tx.len(), rx_streams: self.rx.len() }
    }

    /// Selects the master key (by MKI) used to protect from now on.
    pub fn set_active_mki(&mut self, mki: &[u8]) -> Result<(), Error> {
        self.active = self.keys.iter().position(|k| k.master.mki() == mki).ok_or(Error::UnknownMki)?;
        Ok(())
    }

    /// The rollover counter of `ssrc` on the send (`tx`) or receive side, if
    /// the stream exists.
    pub fn roc(&self, ssrc: u32, tx: bool) -> Option<u32> {
        let map = if tx { &self.tx } else { &self.rx };
        map.get(&ssrc).and_then(|s| s.rtp_highest).map(roc_of)
    }

    /// Sets the rollover counter of `ssrc` on both sides, for an endpoint that
    /// joins a session late (RFC 3711 §3.3.1). An existing stream keeps its
    /// sequence number and restarts its replay window at the new index.
    pub fn set_roc(&mut self, ssrc: u32, roc: u32) {
        for map in [&mut self.tx, &mut self.rx] {
            if let Some(s) = map.get_mut(&ssrc) {
                if let Some(h) = s.rtp_highest {
                    let idx = ((roc as u64) << 16) | (h & 0xffff);
                    s.rtp_highest = Some(idx);
                    if let Some(w) = s.rtp_window.as_mut() {
                        *w = ReplayWindow::new(self.window);
                        w.update(idx);
                    }
                }
            }
        }
        self.preset_roc.insert(ssrc, roc);
    }

    /// From now on, the send side protects only with indices reserved by
    /// [`reserve`](Self::reserve); any other packet fails with
    /// [`Error::NotReserved`]. A sender that must not reuse keystream across
    /// a restart persists each reservation before it makes it, and resumes
    /// from the persisted reservations ([`resume`](Self::resume)).
    pub fn set_reserving(&mut self, on: bool) {
        self.reserving = on;
        for s in self.tx.list.iter_mut() {
            // Streams already running need a reservation to go on, too.
            (s.rtp_limit, s.rtcp_limit) = match on {
                true => (s.rtp_highest.map_or(0, |h| h + 1), s.rtcp_next),
                false => (u64::MAX, u32::MAX),
            };
        }
    }

    /// Whether the send side protects only reserved indices.
    pub fn reserving(&self) -> bool {
        self.reserving
    }

    /// Reserves the send side of `ssrc` up to SRTP index `rtp` (none: no
    /// SRTP index yet) and SRTCP index `rtcp`, both inclusive. Reservations
    /// only grow.
    pub fn reserve(&mut self, ssrc: u32, rtp: Option<u64>, rtcp: u32) -> Result<(), Error> {
        if !self.tx.contains_key(&ssrc) && self.tx.len() >= self.max_streams {
            return Err(Error::TooManyStreams(self.max_streams));
        }
        let (window, reserving) = (self.window, self.reserving);
        let s = self.tx.get_or_insert(ssrc, || {
            let mut s = Stream::new(false, window);
            if reserving {
                (s.rtp_limit, s.rtcp_limit) = (0, 0);
            }
            s
        });
        if reserving {
            if let Some(rtp) = rtp {
                s.rtp_limit = s.rtp_limit.max(rtp.saturating_add(1));
            }
            s.rtcp_limit = s.rtcp_limit.max(rtcp.saturating_add(1));
        }
        Ok(())
    }

    /// The state of every stream, both sides (allocates: for the control
    /// path, not per packet).
    pub fn streams_state(&self) -> Vec<StreamState> {
        let tx = self.tx.list.iter().map(|s| StreamState {
            ssrc: s.ssrc,
            tx: true,
            rtp: s.rtp_highest,
            rtcp: Some(s.rtcp_next),
        });
        let rx = self.rx.list.iter().map(|s| StreamState {
            ssrc: s.ssrc,
            tx: false,
            rtp: s.rtp_highest,
            rtcp: s.rtcp_window.as_ref().and_then(|w| w.highest()).map(|h| h as u32),
        });
        tx.chain(rx).collect()
    }

    /// How many SRTP and SRTCP packets each master key has protected or
    /// accepted, in the policy's order (its lifetime's use).
    pub fn key_uses(&self) -> Vec<(u64, u64)> {
        self.keys.iter().map(|k| (k.srtp_packets, k.srtcp_packets)).collect()
    }

    /// Puts back the use counts of [`key_uses`](Self::key_uses) (each only
    /// grows), so that a restarted context does not take a key past its
    /// lifetime.
    pub fn resume_key_uses(&mut self, uses: &[(u64, u64)]) {
        for (k, &(rtp, rtcp)) in self.keys.iter_mut().zip(uses) {
            k.srtp_packets = k.srtp_packets.max(rtp);
            k.srtcp_packets = k.srtcp_packets.max(rtcp);
        }
    }

    /// Resumes a stream from a persisted [`StreamState`] after a restart.
    /// Every index up to the state's is taken as used: the send side never
    /// protects with one of them again (nor with an SRTCP index below
    /// `rtcp`), the receive side refuses them as replayed. The index
    /// estimate goes on from the state, so a stream that crossed the
    /// sequence-number wrap meanwhile (less than 2^15 packets) keeps its
    /// rollover counter. On a reserving sender, the stream is reserved up to
    /// the state and no further.
    pub fn resume(&mut self, st: &StreamState) -> Result<(), Error> {
        let map = if st.tx { &mut self.tx } else { &mut self.rx };
        if !map.contains_key(&st.ssrc) && map.len() >= self.max_streams {
            return Err(Error::TooManyStreams(self.max_streams));
        }
        let (window, reserving) = (self.window, self.reserving);
        let s = map.get_or_insert(st.ssrc, || Stream::new(!st.tx, window));
        if let Some(h) = st.rtp {
            if s.rtp_highest.is_none_or(|old| h > old) {
                s.rtp_highest = Some(h);
                s.rtp_window = Some(ReplayWindow::seen_up_to(window, h));
            }
        }
        if st.tx {
            let next = st.rtcp.unwrap_or(0);
            s.rtcp_next = s.rtcp_next.max(next);
            if reserving {
                s.rtp_limit = st.rtp.map_or(0, |h| h.saturating_add(1));
                s.rtcp_limit = next;
            }
        } else {
            s.roc_unconfirmed = true;
            if let Some(h) = st.rtcp {
                if s.rtcp_window.as_ref().and_then(|w| w.highest()).is_none_or(|old| u64::from(h) > old) {
                    s.rtcp_window = Some(ReplayWindow::seen_up_to(window, u64::from(h)));
                }
            }
        }
        Ok(())
    }

    /// Takes the receive side as resumed after a restart, before its kept
    /// streams are [`resume`](Self::resume)d. What was kept of a stream may
    /// be older than the sender's last sequence-number wrap (it is written
    /// when the rollover counter changes, and a crash can fall between the
    /// two), and a stream younger than the first write was not kept at all
    /// and starts at rollover 0: either way the index estimate is one
    /// rollover short and every packet of the stream would fail. So until
    /// a packet of a stream authenticates, a packet that does not is tried
    /// once more under the next rollover counter
    /// ([`retry_next_roc`](Self::retry_next_roc)), and a packet the window
    /// refuses under the estimate is taken under the next one. RFC 3711
    /// §3.3.1 leaves the estimate to the receiver; this one costs a second
    /// tag check on packets that fail, and nothing is accepted that does
    /// not authenticate under its index and pass the replay window (which
    /// starts from what was kept).
    pub fn resume_rx(&mut self) {
        self.rx_resumed = true;
    }

    /// Announces what preparing and committing the next packet in
    /// direction `op` reads of this context's state ([`crate::prefetch`]):
    /// the first stream's entry and the active key set. Reads only the
    /// context itself. For a caller about to prepare a round of packets of
    /// many contexts, before [`prefetch_keys`](Self::prefetch_keys); only a
    /// hint.
    pub fn prefetch_state(&self, op: Op) {
        let streams = if op == Op::Protect { &self.tx } else { &self.rx };
        if let Some(s) = streams.list.first() {
            crate::prefetch::value(s);
        }
        if let Some(ks) = self.keys.get(self.active) {
            crate::prefetch::value(ks);
        }
    }

    /// Announces the session keys of `kind` of the active master key (with
    /// kdr 0; with a key derivation rate, or a packet whose MKI names
    /// another key, nothing useful). Reads the active key set, which
    /// [`prefetch_state`](Self::prefetch_state) announced: called a step
    /// later, for the whole round, its reads find the key sets in the
    /// cache.
    pub fn prefetch_keys(&self, kind: Kind) {
        let Some(ks) = self.keys.get(self.active) else { return };
        let derived = if kind == Kind::Rtp { ks.rtp.as_deref() } else { ks.rtcp.as_deref() };
        if let Some(d) = derived {
            self.engine.prefetch_keys(&d.keys);
            crate::prefetch::value(&*d.salt);
        }
    }

    /// The index a packet whose tag failed would be given if prepared now,
    /// where that differs from the one it was prepared with: another batch
    /// authenticated a packet of its stream in between and moved the
    /// estimate (a new stream's first packets across the sequence wrap,
    /// prepared before any committed). Worth one more try
    /// ([`retry_at`](Self::retry_at)), as the packet would have had, its
    /// batch running after the other.
    pub fn index_now(&self, failed: &Prepared) -> Option<u64> {
        if failed.kind != Kind::Rtp || failed.op != Op::Unprotect {
            return None;
        }
        let s = self.rx.slot_of(failed.ssrc).map(|i| self.rx.at(i))?;
        let h = s.rtp_highest?;
        let now = estimate(roc_of(h), h as u16, failed.index as u16)?;
        (now != failed.index && now <= MAX_SRTP_INDEX).then_some(now)
    }

    /// Unprotects `pkt` (the packet as received) into `out` once more, at
    /// `index` ([`index_now`](Self::index_now)), and commits it.
    pub fn retry_at(&mut self, failed: &Prepared, index: u64, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        if failed.kind != Kind::Rtp || failed.op != Op::Unprotect || pkt.len() > out.len() {
            return Err(Error::AuthFailed);
        }
        self.unprotect_rtp_at(index, pkt, out)
    }

    /// The three steps of one SRTP unprotect at a given index, as a batch of
    /// its own (the second tries above; `out` holds `pkt`).
    fn unprotect_rtp_at(&mut self, index: u64, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        let p = self.prepare_rtp_unprotect_at(pkt, Some(index))?;
        out[..pkt.len()].copy_from_slice(pkt);
        let outcome = {
            let mut job = [self.job(&p, out)?];
            self.engine.transform(&mut job);
            job[0].outcome
        };
        self.commit(&p, outcome, out)
    }

    /// Unprotects `pkt` (an SRTP packet whose [`Prepared`] `failed` did not
    /// authenticate) again under the next rollover counter, the three steps
    /// at once, into `out`; see [`resume_rx`](Self::resume_rx). Returns
    /// [`Error::AuthFailed`] where no second try applies
    /// ([`Prepared::next_roc_possible`]). A rare path (a resumed stream's
    /// first packets), so it runs a batch of its own.
    pub fn retry_next_roc(&mut self, failed: &Prepared, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        if !failed.next_roc || failed.kind != Kind::Rtp || failed.op != Op::Unprotect {
            return Err(Error::AuthFailed);
        }
        let index = failed.index + (1 << 16);
        if index > MAX_SRTP_INDEX {
            return Err(Error::AuthFailed);
        }
        if pkt.len() > out.len() {
            return Err(Error::BufferTooSmall(pkt.len()));
        }
        self.unprotect_rtp_at(index, pkt, out)
    }

    /// Step 1: checks `pkt`, copies it into `out` and returns what
    /// [`job`](Self::job) and [`commit`](Self::commit) need. When protecting,
    /// `out` must have room for the trailer ([`MAX_TRAILER_LEN`] or
    /// [`MAX_RTCP_TRAILER_LEN`] more bytes than the packet is always enough).
    pub fn prepare(&mut self, kind: Kind, op: Op, pkt: &[u8], out: &mut [u8]) -> Result<Prepared, Error> {
        let p = self.prepare_only(kind, op, pkt)?;
        self.check_room(kind, op, pkt.len(), out.len())?;
        out[..pkt.len()].copy_from_slice(pkt);
        self.write_trailer(&p, pkt.len(), out);
        Ok(p)
    }

    /// [`prepare`](Self::prepare) of the packet in `buf[..len]` where it
    /// lies: the job then transforms `buf` in place. A relay saves the copy
    /// (a cold buffer's lines) of every packet. Protecting, `buf` needs room
    /// for the trailer after the packet ([`Error::BufferTooSmall`] before
    /// anything else is done). Unprotecting, a packet that fails
    /// is left as it was only where [`keeps_failed`](Self::keeps_failed):
    /// otherwise a caller that may try it again must prepare a copy.
    pub fn prepare_in_place(&mut self, kind: Kind, op: Op, buf: &mut [u8], len: usize) -> Result<Prepared, Error> {
        // The room first: a buffer too small costs no SRTCP index.
        self.check_room(kind, op, len, buf.len())?;
        let p = self.prepare_only(kind, op, &buf[..len])?;
        self.write_trailer(&p, len, buf);
        Ok(p)
    }

    /// Whether this context's engine leaves a packet that fails to
    /// unprotect as it was ([`Engine::keeps_failed`] for its suite).
    pub fn keeps_failed(&self) -> bool {
        self.engine.keeps_failed(self.suite)
    }

    fn prepare_only(&mut self, kind: Kind, op: Op, pkt: &[u8]) -> Result<Prepared, Error> {
        if pkt.len() > MAX_PACKET_LEN {
            return Err(Error::PacketTooLarge(pkt.len()));
        }
        match (kind, op) {
            (Kind::Rtp, Op::Protect) => self.prepare_rtp_protect(pkt),
            (Kind::Rtp, Op::Unprotect) => self.prepare_rtp_unprotect(pkt),
            (Kind::Rtcp, Op::Protect) => self.prepare_rtcp_protect(pkt),
            (Kind::Rtcp, Op::Unprotect) => self.prepare_rtcp_unprotect(pkt),
        }
    }

    /// The buffer a job of a `len`-byte packet runs in must hold the packet
    /// and, protecting, its trailer.
    fn check_room(&self, kind: Kind, op: Op, len: usize, room: usize) -> Result<(), Error> {
        let total = if op == Op::Protect { len + self.trailer_len(kind) } else { len };
        if room < total {
            return Err(Error::BufferTooSmall(total));
        }
        Ok(())
    }

    /// Protecting: the trailer's parts the transform does not write (the
    /// SRTCP index word, the MKI) after the `n`-byte packet in `out`.
    fn write_trailer(&self, p: &Prepared, n: usize, out: &mut [u8]) {
        if p.op == Op::Protect {
            let kind = p.kind;
            let aead = self.suite.is_aead();
            // Trailer layouts: RFC 3711 §3.1/§3.4; RFC 7714 §8, §9 (tag first).
            let (word_at, mki_at) = match (kind, aead) {
                (Kind::Rtp, false) => (None, n),
                (Kind::Rtp, true) => (None, n + 16),
                (Kind::Rtcp, false) => (Some(n), n + 4),
                (Kind::Rtcp, true) => (Some(n + 16), n + 20),
            };
            if let Some(at) = word_at {
                out[at..at + 4].copy_from_slice(&p.suffix_word(self.rtcp_e_flag()));
            }
            let mki = self.keys[p.key].master.mki();
            out[mki_at..mki_at + mki.len()].copy_from_slice(mki);
        }
    }

    /// The SRTCP E flag: set when the packet is encrypted (never for NULL).
    fn rtcp_e_flag(&self) -> bool {
        self.encrypt_rtcp && self.suite.cipher() != Cipher::Null
    }

    /// Sets the SRTCP index the next protected packet of `ssrc` carries
    /// (to resume a sender).
    pub fn set_rtcp_index(&mut self, ssrc: u32, next: u32) -> Result<(), Error> {
        if next > MAX_SRTCP_INDEX {
            return Err(Error::KeyExpired);
        }
        if !self.tx.contains_key(&ssrc) && self.tx.len() >= self.max_streams {
            return Err(Error::TooManyStreams(self.max_streams));
        }
        let window = self.window;
        self.tx.get_or_insert(ssrc, || Stream::new(false, window)).rtcp_next = next;
        Ok(())
    }

    /// Replaces the session keys of the first master key by keys agreed
    /// outside SRTP's key derivation (and by the RFC 7714 test vectors, which
    /// give session keys). Only with a key derivation rate of 0.
    pub fn set_session_keys(&mut self, rtp: &SessionKeys, rtcp: &SessionKeys) -> Result<(), Error> {
        if self.kdr != 0 || rtp.suite() != self.suite || rtcp.suite() != self.suite {
            return Err(Error::InvalidPolicy("session keys need kdr 0 and the context's suite".into()));
        }
        self.keys[0].rtp = Some(Box::new(Derived::new(&self.engine, rtp)?));
        self.keys[0].rtcp = Some(Box::new(Derived::new(&self.engine, rtcp)?));
        Ok(())
    }

    fn trailer_len(&self, kind: Kind) -> usize {
        self.suite.tag_len(kind == Kind::Rtcp) + self.mki_len + if kind == Kind::Rtcp { 4 } else { 0 }
    }

    /// Step 2: the engine job of a prepared packet, over the buffer that was
    /// given to [`prepare`](Self::prepare).
    pub fn job<'a>(&'a self, p: &Prepared, out: &'a mut [u8]) -> Result<Job<'a, E::Keys>, Error> {
        let d = self.resolve(&p.keys, p.kind)?;
        let need = p.out_len.max(p.tag_start + p.tag_len);
        if out.len() < need {
            return Err(Error::BufferTooSmall(need));
        }
        Ok(Job {
            keys: &d.keys,
            op: p.op,
            iv: p.iv,
            buf: out,
            enc_start: p.enc.0,
            enc_end: p.enc.1,
            auth_end: p.auth_end,
            suffix: p.suffix,
            suffix_len: p.suffix_len,
            tag_start: p.tag_start,
            tag_len: p.tag_len,
            outcome: Outcome::Pending,
        })
    }

    /// Step 3: applies the engine's verdict. Returns the length of the result
    /// in `out`. Only an authenticated packet updates the ROC and the replay
    /// window, or creates a stream.
    pub fn commit(&mut self, p: &Prepared, outcome: Outcome, out: &[u8]) -> Result<usize, Error> {
        match outcome {
            Outcome::Done => {}
            Outcome::AuthFailed if p.old_under_estimate => return Err(Error::Replayed),
            // Authenticated in another batch since this one was prepared
            // (a forged or repeated copy of a packet in flight): a replay,
            // as the pre-check says when the batches run one after the
            // other, so that a drop's reason does not depend on batching.
            Outcome::AuthFailed if !p.next_roc && self.seen_since(p) => return Err(Error::Replayed),
            Outcome::AuthFailed => return Err(Error::AuthFailed),
            Outcome::Pending => return Err(Error::InvalidPolicy("commit before transform".into())),
        }
        let tx = p.op == Op::Protect;
        if !tx {
            // Check the plaintext now that it is in the clear.
            match p.kind {
                Kind::Rtp => {
                    let plain = &out[..p.out_len];
                    let hdr = RtpHeader::parse(plain)?;
                    check_padding(&hdr, plain)?;
                }
                // SRTCP checks only the fixed header: the compound structure is
                // the application's business, and endpoints get it wrong.
                Kind::Rtcp => {
                    RtcpHeader::parse_fixed(&out[..p.out_len])?;
                }
            }
        }
        let (window, max) = (self.window, self.max_streams);
        let map = if tx { &mut self.tx } else { &mut self.rx };
        if map.at_mut(p.slot, p.ssrc).is_none() && !map.contains_key(&p.ssrc) && map.len() >= max {
            return Err(Error::TooManyStreams(max));
        }
        let s = match map.at_mut(p.slot, p.ssrc) {
            Some(s) => s,
            None => map.get_or_insert(p.ssrc, || Stream::new(!tx, window)),
        };
        match p.kind {
            Kind::Rtp => {
                if let Some(w) = s.rtp_window.as_mut() {
                    // A duplicate in the same batch passed the pre-check too.
                    if w.check(p.index) == ReplayCheck::Replayed {
                        return Err(Error::Replayed);
                    }
                    w.update(p.index);
                }
                if s.rtp_highest.is_none_or(|h| p.index > h) {
                    s.rtp_highest = Some(p.index);
                }
                if p.op == Op::Unprotect {
                    // Protection counted its use at prepare.
                    self.keys[p.key].srtp_packets += 1;
                    s.roc_unconfirmed = false;
                }
            }
            Kind::Rtcp => {
                if let Some(w) = s.rtcp_window.as_mut() {
                    if w.check(p.index) == ReplayCheck::Replayed {
                        return Err(Error::Replayed);
                    }
                    w.update(p.index);
                } else if p.index as u32 >= s.rtcp_next {
                    s.rtcp_next = p.index as u32 + 1;
                }
                if p.op == Op::Unprotect {
                    self.keys[p.key].srtcp_packets += 1;
                }
            }
        }
        Ok(p.out_len)
    }

    /// Whether the receiving stream's window now holds `p`'s index.
    fn seen_since(&self, p: &Prepared) -> bool {
        if p.op != Op::Unprotect {
            return false;
        }
        let Some(s) = self.rx.slot_of(p.ssrc).map(|i| self.rx.at(i)) else { return false };
        let w = match p.kind {
            Kind::Rtp => s.rtp_window.as_ref(),
            Kind::Rtcp => s.rtcp_window.as_ref(),
        };
        w.is_some_and(|w| w.check(p.index) == ReplayCheck::Replayed)
    }

    /// Protects one RTP packet into `out`; returns the SRTP packet's length.
    pub fn protect_rtp(&mut self, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        self.one(Kind::Rtp, Op::Protect, pkt, out)
    }
    /// Unprotects one SRTP packet into `out`; returns the RTP packet's length.
    pub fn unprotect_rtp(&mut self, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        self.one(Kind::Rtp, Op::Unprotect, pkt, out)
    }
    /// Protects one (compound) RTCP packet into `out`.
    pub fn protect_rtcp(&mut self, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        self.one(Kind::Rtcp, Op::Protect, pkt, out)
    }
    /// Unprotects one SRTCP packet into `out`.
    pub fn unprotect_rtcp(&mut self, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        self.one(Kind::Rtcp, Op::Unprotect, pkt, out)
    }

    fn one(&mut self, kind: Kind, op: Op, pkt: &[u8], out: &mut [u8]) -> Result<usize, Error> {
        let p = self.prepare(kind, op, pkt, out)?;
        let outcome = {
            let mut job = [self.job(&p, out)?];
            self.engine.transform(&mut job);
            job[0].outcome
        };
        match self.commit(&p, outcome, out) {
            Err(Error::AuthFailed) if p.next_roc => self.retry_next_roc(&p, pkt, out),
            r => r,
        }
    }

    /// The master key to protect the next packet with, its use counted
    /// now (at prepare, so that a batch cannot overrun the lifetime; a
    /// packet whose protection fails later still counts): the active key,
    /// or, once its lifetime is used up, the next master key in the
    /// policy's order that has lifetime left for SRTP and SRTCP alike, which
    /// becomes the active one (the MKI of each packet tells the receiver;
    /// RFC 3711 §9.2). `KeyExpired` when none has.
    fn protect_key(&mut self, kind: Kind) -> Result<usize, Error> {
        let n = self.keys.len();
        let key = (0..n)
            .map(|step| (self.active + step) % n)
            .find(|&k| {
                if k == self.active {
                    self.check_lifetime(k, kind).is_ok()
                } else {
                    self.check_lifetime(k, Kind::Rtp).is_ok() && self.check_lifetime(k, Kind::Rtcp).is_ok()
                }
            })
            .ok_or(Error::KeyExpired)?;
        self.active = key;
        match kind {
            Kind::Rtp => self.keys[key].srtp_packets += 1,
            Kind::Rtcp => self.keys[key].srtcp_packets += 1,
        }
        Ok(key)
    }

    fn check_lifetime(&self, key: usize, kind: Kind) -> Result<(), Error> {
        let ks = &self.keys[key];
        let (count, max) = match kind {
            Kind::Rtp => (ks.srtp_packets, 1u64 << 48),
            Kind::Rtcp => (ks.srtcp_packets, 1u64 << 31),
        };
        if count >= ks.master.lifetime().unwrap_or(u64::MAX).min(max) {
            return Err(Error::KeyExpired);
        }
        Ok(())
    }

    /// The master key named by the packet's MKI (or the only/active one).
    fn mki_key(&self, pkt: &[u8], kind: Kind) -> Result<usize, Error> {
        if self.mki_len == 0 {
            return Ok(self.active);
        }
        let tag = self.suite.tag_len(kind == Kind::Rtcp);
        // Before the tag (RFC 3711), or last (RFC 7714).
        let at = if self.suite.is_aead() { pkt.len() - self.mki_len } else { pkt.len() - tag - self.mki_len };
        let mki = &pkt[at..at + self.mki_len];
        self.keys.iter().position(|k| k.master.mki() == mki).ok_or(Error::UnknownMki)
    }

    fn resolve(&self, key: &KeyRef, kind: Kind) -> Result<&Derived<E::Keys>, Error> {
        let stale = || Error::InvalidPolicy("session keys were re-derived within the batch; prepare again".into());
        match *key {
            KeyRef::Fixed(k) => {
                let ks = &self.keys[k];
                Ok(if kind == Kind::Rtp { ks.rtp.as_deref() } else { ks.rtcp.as_deref() }.expect("kdr = 0 keys"))
            }
            KeyRef::Stream { ssrc, tx, slot, gen } => {
                let map = if tx { &self.tx } else { &self.rx };
                match map.get(&ssrc).and_then(|s| s.kdr.as_ref()).and_then(|k| k[slot].as_ref()) {
                    Some(s) if s.gen == gen => Ok(&s.derived),
                    _ => Err(stale()),
                }
            }
            KeyRef::Scratch { slot, gen } => match self.scratch.as_ref().and_then(|s| s[slot].as_ref()) {
                Some(s) if s.gen == gen => Ok(&s.derived),
                _ => Err(stale()),
            },
        }
    }

    /// Picks the session keys for a packet at `index`; with kdr ≠ 0 derives
    /// them when the derivation interval `index / kdr` has no keys yet.
    fn key_ref(&mut self, kind: Kind, tx: bool, ssrc: u32, key: usize, index: u64) -> Result<KeyRef, Error> {
        if self.kdr == 0 {
            return Ok(KeyRef::Fixed(key));
        }
        let r = index / self.kdr;
        let base = if kind == Kind::Rtcp { 2 } else { 0 };
        let matches = |s: &Option<KdrSlot<E::Keys>>| {
            s.as_ref().is_some_and(|s| s.ssrc == ssrc && s.kind == kind && s.key == key && s.r == r)
        };
        let map = if tx { &self.tx } else { &self.rx };
        let has_stream = map.contains_key(&ssrc);
        if let Some(k) = map.get(&ssrc).and_then(|s| s.kdr.as_ref()) {
            if let Some(slot) = (base..base + 2).find(|&i| matches(&k[i])) {
                return Ok(KeyRef::Stream { ssrc, tx, slot, gen: k[slot].as_ref().expect("found").gen });
            }
        } else if let (false, Some(scratch)) = (tx, self.scratch.as_deref()) {
            if let Some(slot) = (0..SCRATCH).find(|&i| matches(&scratch[i])) {
                return Ok(KeyRef::Scratch { slot, gen: scratch[slot].as_ref().expect("found").gen });
            }
        }
        let sk = self.kdf.derive(&self.keys[key].master, kind == Kind::Rtcp, r)?;
        let derived = Derived::new(&self.engine, &sk)?;
        self.gen += 1;
        let new = KdrSlot { ssrc, kind, key, r, gen: self.gen, derived };
        let oldest = |slots: &[Option<KdrSlot<E::Keys>>]| {
            (0..slots.len()).min_by_key(|&i| slots[i].as_ref().map_or(0, |s| s.gen)).expect("non-empty")
        };
        if let (false, false, Some(scratch)) = (tx, has_stream, self.scratch.as_deref_mut()) {
            let slot = oldest(scratch);
            scratch[slot] = Some(new);
            return Ok(KeyRef::Scratch { slot, gen: self.gen });
        }
        let (window, max) = (self.window, self.max_streams);
        let map = if tx { &mut self.tx } else { &mut self.rx };
        if !map.contains_key(&ssrc) && map.len() >= max {
            return Err(Error::TooManyStreams(max));
        }
        // The send side owns its streams: creating one here is not input-driven.
        let s = map.get_or_insert(ssrc, || Stream::new(!tx, window));
        let k = s.kdr.get_or_insert_with(Default::default);
        let slot = base + oldest(&k[base..base + 2]);
        k[slot] = Some(new);
        Ok(KeyRef::Stream { ssrc, tx, slot, gen: self.gen })
    }

    fn salt(&self, key: &KeyRef, kind: Kind) -> Result<[u8; 14], Error> {
        Ok(*self.resolve(key, kind)?.salt)
    }

    fn prepare_rtp_protect(&mut self, pkt: &[u8]) -> Result<Prepared, Error> {
        let hdr = RtpHeader::parse(pkt)?;
        check_padding(&hdr, pkt)?;
        let slot = self.tx.slot_of(hdr.ssrc);
        let stream = slot.map(|i| self.tx.at(i));
        let index = match stream.and_then(|s| s.rtp_highest) {
            Some(h) => estimate(roc_of(h), h as u16, hdr.seq).ok_or(Error::Replayed)?,
            None => ((self.preset_roc.get(&hdr.ssrc).copied().unwrap_or(0) as u64) << 16) | hdr.seq as u64,
        };
        if stream.and_then(|s| s.rtp_window.as_ref()).is_some_and(|w| w.check(index) == ReplayCheck::Replayed) {
            return Err(Error::Replayed);
        }
        if index > MAX_SRTP_INDEX {
            return Err(Error::KeyExpired);
        }
        let reserved = match stream {
            Some(s) => index < s.rtp_limit,
            None => !self.reserving,
        };
        if !reserved {
            return Err(Error::NotReserved { ssrc: hdr.ssrc, index });
        }
        let key = self.protect_key(Kind::Rtp)?;
        let keys = self.key_ref(Kind::Rtp, true, hdr.ssrc, key, index)?;
        let n = pkt.len();
        let tag_len = self.suite.srtp_tag_len();
        let iv = self.rtp_iv(&keys, &hdr, pkt, index)?;
        let enc = if self.encrypt_rtp { (hdr.len, n) } else { (n, n) };
        let aead = self.suite.is_aead();
        Ok(Prepared {
            slot,
            kind: Kind::Rtp,
            op: Op::Protect,
            ssrc: hdr.ssrc,
            index,
            key,
            keys,
            iv,
            enc,
            auth_end: n,
            suffix: roc_of(index).to_be_bytes(),
            suffix_len: if aead { 0 } else { 4 },
            tag_start: if aead { n } else { n + self.mki_len },
            tag_len,
            out_len: n + tag_len + self.mki_len,
            next_roc: false,
            old_under_estimate: false,
        })
    }

    fn prepare_rtp_unprotect(&mut self, pkt: &[u8]) -> Result<Prepared, Error> {
        self.prepare_rtp_unprotect_at(pkt, None)
    }

    /// Prepares an SRTP packet for unprotection, at the estimated index or,
    /// for a second try ([`Context::retry_next_roc`]), at `at`.
    fn prepare_rtp_unprotect_at(&mut self, pkt: &[u8], at: Option<u64>) -> Result<Prepared, Error> {
        let tag_len = self.suite.srtp_tag_len();
        let trailer = tag_len + self.mki_len;
        if pkt.len() < 12 + trailer {
            return Err(if pkt.len() < 12 { HeaderError::TooShort(pkt.len()).into() } else { Error::TrailerTooShort });
        }
        let n = pkt.len() - trailer;
        let hdr = RtpHeader::parse(&pkt[..n])?;
        let key = self.mki_key(pkt, Kind::Rtp)?;
        let slot = self.rx.slot_of(hdr.ssrc);
        // A second try is worth it only where a tag tells the two apart.
        let may_retry = at.is_none() && tag_len > 0;
        // A stream may exist with no SRTP packet yet (its SRTCP came first, as
        // from a phone on hold): then the index starts like a new stream's.
        let stream = slot.map(|i| self.rx.at(i));
        let (index, next_roc, old_under_estimate) = match stream.and_then(|s| Some((s, s.rtp_highest?))) {
            Some((s, h)) => {
                let replayed = |i: u64| s.rtp_window.as_ref().is_some_and(|w| w.check(i) == ReplayCheck::Replayed);
                let estimated = match at {
                    Some(i) => i,
                    None => estimate(roc_of(h), h as u16, hdr.seq).ok_or(Error::Replayed)?,
                };
                match (replayed(estimated), s.roc_unconfirmed && may_retry) {
                    (false, unconfirmed) => (estimated, unconfirmed, false),
                    // What was kept may be a rollover behind: under the
                    // estimate the packet is old, under the next rollover
                    // it may be new (and must authenticate there).
                    (true, true) if !replayed(estimated + (1 << 16)) => (estimated + (1 << 16), false, true),
                    (true, _) => return Err(Error::Replayed),
                }
            }
            None => match at {
                Some(i) => (i, false, false),
                None => (
                    ((self.preset_roc.get(&hdr.ssrc).copied().unwrap_or(0) as u64) << 16) | hdr.seq as u64,
                    may_retry && self.rx_resumed,
                    false,
                ),
            },
        };
        if index > MAX_SRTP_INDEX {
            return Err(Error::Replayed);
        }
        self.check_lifetime(key, Kind::Rtp)?;
        let keys = self.key_ref(Kind::Rtp, false, hdr.ssrc, key, index)?;
        let iv = self.rtp_iv(&keys, &hdr, pkt, index)?;
        let aead = self.suite.is_aead();
        Ok(Prepared {
            slot,
            kind: Kind::Rtp,
            op: Op::Unprotect,
            ssrc: hdr.ssrc,
            index,
            key,
            keys,
            iv,
            enc: if self.encrypt_rtp { (hdr.len, n) } else { (n, n) },
            auth_end: n,
            suffix: roc_of(index).to_be_bytes(),
            suffix_len: if aead { 0 } else { 4 },
            tag_start: if aead { n } else { n + self.mki_len },
            tag_len,
            out_len: n,
            next_roc,
            old_under_estimate,
        })
    }

    fn prepare_rtcp_protect(&mut self, pkt: &[u8]) -> Result<Prepared, Error> {
        let hdr = RtcpHeader::parse_fixed(pkt)?;
        // The sender picks SRTCP indices, so the stream exists from the first
        // packet, and an index is taken here, at prepare: two packets of one
        // batch must never get the same one (keystream reuse). An index whose
        // packet later fails is skipped, which SRTCP allows.
        if !self.tx.contains_key(&hdr.ssrc) && self.tx.len() >= self.max_streams {
            return Err(Error::TooManyStreams(self.max_streams));
        }
        if self.reserving && !self.tx.contains_key(&hdr.ssrc) {
            return Err(Error::NotReserved { ssrc: hdr.ssrc, index: 0 });
        }
        let window = self.window;
        let st = self.tx.get_or_insert(hdr.ssrc, || Stream::new(false, window));
        let (next, limit) = (st.rtcp_next, st.rtcp_limit);
        let slot = self.tx.slot_of(hdr.ssrc);
        if next > MAX_SRTCP_INDEX {
            return Err(Error::KeyExpired);
        }
        if next >= limit {
            return Err(Error::NotReserved { ssrc: hdr.ssrc, index: u64::from(next) });
        }
        let key = self.protect_key(Kind::Rtcp)?;
        let keys = self.key_ref(Kind::Rtcp, true, hdr.ssrc, key, next as u64)?;
        let e = self.rtcp_e_flag();
        let iv = self.rtcp_iv(&keys, pkt, hdr.ssrc, next, e)?;
        let n = pkt.len();
        let tag_len = self.suite.srtcp_tag_len();
        let aead = self.suite.is_aead();
        let word = next | if e { 0x8000_0000 } else { 0 };
        if let Some(st) = self.tx.at_mut(slot, hdr.ssrc) {
            st.rtcp_next = next + 1;
        }
        Ok(Prepared {
            slot,
            kind: Kind::Rtcp,
            op: Op::Protect,
            ssrc: hdr.ssrc,
            index: next as u64,
            key,
            keys,
            iv,
            enc: if e { (8, n) } else { (n, n) },
            auth_end: n + 4,
            suffix: word.to_be_bytes(),
            suffix_len: if aead { 4 } else { 0 },
            tag_start: if aead { n } else { n + 4 + self.mki_len },
            tag_len,
            out_len: n + self.trailer_len(Kind::Rtcp),
            next_roc: false,
            old_under_estimate: false,
        })
    }

    fn prepare_rtcp_unprotect(&mut self, pkt: &[u8]) -> Result<Prepared, Error> {
        let tag_len = self.suite.srtcp_tag_len();
        let trailer = tag_len + 4 + self.mki_len;
        if pkt.len() < 8 + trailer {
            return Err(if pkt.len() < 8 { HeaderError::TooShort(pkt.len()).into() } else { Error::TrailerTooShort });
        }
        let hdr = RtcpHeader::parse_fixed(pkt)?;
        let aead = self.suite.is_aead();
        let n = pkt.len() - trailer;
        let word_at = if aead { n + tag_len } else { n };
        let word = u32::from_be_bytes([pkt[word_at], pkt[word_at + 1], pkt[word_at + 2], pkt[word_at + 3]]);
        let e = word & 0x8000_0000 != 0;
        let index = word & MAX_SRTCP_INDEX;
        let key = self.mki_key(pkt, Kind::Rtcp)?;
        let slot = self.rx.slot_of(hdr.ssrc);
        if let Some(w) = slot.and_then(|i| self.rx.at(i).rtcp_window.as_ref()) {
            if w.check(index as u64) == ReplayCheck::Replayed {
                return Err(Error::Replayed);
            }
        }
        self.check_lifetime(key, Kind::Rtcp)?;
        let keys = self.key_ref(Kind::Rtcp, false, hdr.ssrc, key, index as u64)?;
        let iv = self.rtcp_iv(&keys, pkt, hdr.ssrc, index, e)?;
        Ok(Prepared {
            slot,
            kind: Kind::Rtcp,
            op: Op::Unprotect,
            ssrc: hdr.ssrc,
            index: index as u64,
            key,
            keys,
            iv,
            enc: if e { (8, n) } else { (n, n) },
            auth_end: n + 4,
            suffix: word.to_be_bytes(),
            suffix_len: if aead { 4 } else { 0 },
            tag_start: if aead { n } else { n + 4 + self.mki_len },
            tag_len,
            out_len: n,
            next_roc: false,
            old_under_estimate: false,
        })
    }

    fn rtp_iv(&self, keys: &KeyRef, hdr: &RtpHeader, pkt: &[u8], index: u64) -> Result<[u8; 16], Error> {
        let salt = self.salt(keys, Kind::Rtp)?;
        let mut iv = [0u8; 16];
        match self.suite.cipher() {
            // IV = salt·2^16 ⊕ SSRC·2^64 ⊕ index·2^16 (RFC 3711 §4.1.1).
            Cipher::AesCm(_) | Cipher::Null => {
                iv[..14].copy_from_slice(&salt);
                xor_into(&mut iv[4..8], &hdr.ssrc.to_be_bytes());
                xor_into(&mut iv[8..14], &index.to_be_bytes()[2..]);
            }
            // IV = 0x00 ∥ M ∥ PT ∥ SEQ ∥ TS ∥ SSRC ∥ ROC (RFC 3711 §4.1.2.2).
            Cipher::AesF8 => {
                iv[1..12].copy_from_slice(&pkt[1..12]);
                iv[12..].copy_from_slice(&roc_of(index).to_be_bytes());
            }
            // IV = (0x0000 ∥ SSRC ∥ ROC ∥ SEQ) ⊕ salt (RFC 7714 §8.1).
            Cipher::AesGcm(_) => {
                iv[2..6].copy_from_slice(&hdr.ssrc.to_be_bytes());
                iv[6..12].copy_from_slice(&index.to_be_bytes()[2..]);
                xor_into(&mut iv[..12], &salt[..12]);
            }
        }
        Ok(iv)
    }

    fn rtcp_iv(&self, keys: &KeyRef, pkt: &[u8], ssrc: u32, index: u32, e: bool) -> Result<[u8; 16], Error> {
        let salt = self.salt(keys, Kind::Rtcp)?;
        let mut iv = [0u8; 16];
        match self.suite.cipher() {
            Cipher::AesCm(_) | Cipher::Null => {
                iv[..14].copy_from_slice(&salt);
                xor_into(&mut iv[4..8], &ssrc.to_be_bytes());
                xor_into(&mut iv[10..14], &index.to_be_bytes());
            }
            // IV = 0 (32 bits) ∥ E ∥ SRTCP index ∥ V ∥ P ∥ RC ∥ PT ∥ length ∥ SSRC.
            Cipher::AesF8 => {
                let word = index | if e { 0x8000_0000 } else { 0 };
                iv[4..8].copy_from_slice(&word.to_be_bytes());
                iv[8..16].copy_from_slice(&pkt[..8]);
            }
            // IV = (0x0000 ∥ SSRC ∥ 0x0000 ∥ 0 ∥ index) ⊕ salt (RFC 7714 §9.1).
            Cipher::AesGcm(_) => {
                iv[2..6].copy_from_slice(&ssrc.to_be_bytes());
                iv[8..12].copy_from_slice(&index.to_be_bytes());
                xor_into(&mut iv[..12], &salt[..12]);
            }
        }
        Ok(iv)
    }
}

impl Prepared {
    fn suffix_word(&self, e: bool) -> [u8; 4] {
        ((self.index as u32) | if e { 0x8000_0000 } else { 0 }).to_be_bytes()
    }
}
