//! A codec plugin on spandsp (Debian `libspandsp2`, LGPL-2.1, linked
//! dynamically): G.722 at 64 kbit/s and G.726 at 16, 24, 32 and 40 kbit/s,
//! with spandsp's packet loss concealment (G.711 Appendix I style: pitch
//! found in the history, waveform repeated and faded) on every decoder.
//!
//! - **G.722**: RTP clock 8000 (RFC 3551's historical error, kept by
//!   everyone), PCM at 16 kHz; it can also be created with PCM at 8 kHz,
//!   where spandsp codes the lower sub-band only: a narrowband leg (G.711,
//!   G.729, G.726) is transcoded to and from G.722 with no resampler and no
//!   QMF filter delay.
//! - **G.726**: `G726-16/24/32/40` of RFC 3551 §4.5.4, codewords packed
//!   from the least significant bit (spandsp's `G726_PACKING_RIGHT`; the
//!   `AAL2-G726-*` variants packed MSB first are not offered).
//!
//! spandsp's concealer is tuned to 8 kHz; G.722 at 16 kHz PCM uses by
//! default libopus's neural PLC with the ADPCM decoder put back in step
//! after a loss (`wide`), or with `SRTPGATE_CTL_PLC` = classic the relay's
//! rate-aware waveform repetition (`srtpgate_codec::plc`, the same
//! algorithm as spandsp's with its spans in milliseconds).

mod wide;

use srtpgate_codec::abi::{self, pcm_rate_bit, CodecDesc, PluginTable, StaticCodecs};
use srtpgate_codec::kit::{Codec, Setup};
use srtpgate_codec::plc::Plc;
use srtpgate_spandsp_sys as sys;
use std::ffi::c_int;
use wide::{Concealer, Neural};

/// G.726 bit rates, in descriptor order after G.722.
const G726_BITS: [u32; 4] = [2, 3, 4, 5];

const fn g726(name: &'static std::ffi::CStr, bits: u32) -> CodecDesc {
    CodecDesc {
        name: name.as_ptr(),
        clock_rate: 8000,
        channels: 1,
        pcm_channels: 1,
        pcm_rate: 8000,
        pcm_rates: 0,
        frame_samples: 80,
        max_frame_bytes: 1600 * bits / 8,
        static_pt: -1,
        fmtp: std::ptr::null(),
        flags: 0,
    }
}

static CODECS: StaticCodecs<5> = StaticCodecs([
    CodecDesc {
        name: c"G722".as_ptr(),
        clock_rate: 8000,
        channels: 1,
        pcm_channels: 1,
        pcm_rate: 16000,
        pcm_rates: pcm_rate_bit(8000),
        frame_samples: 160,
        max_frame_bytes: 1600,
        static_pt: 9,
        fmtp: std::ptr::null(),
        // At 16 kHz the neural concealment looks ahead at the packet after
        // a loss (recover); elsewhere recover conceals.
        flags: abi::CODEC_LOOKAHEAD,
    },
    g726(c"G726-16", 2),
    g726(c"G726-24", 3),
    g726(c"G726-32", 4),
    g726(c"G726-40", 5),
]);

srtpgate_codec::plugin_table!(static TABLE: c"spandsp", c"2.0.0", CODECS, make);

/// The plugin's entry point.
#[no_mangle]
pub extern "C" fn srtpgate_codec_plugin_v2() -> *const PluginTable {
    &TABLE.0
}

/// The codec of a state.
enum Kind {
    G722 { enc: *mut sys::g722_encode_state_t, dec: *mut sys::g722_decode_state_t, wide: bool },
    G726 { enc: *mut sys::g726_state_t, dec: *mut sys::g726_state_t, bits: u32 },
}

struct SpanCodec {
    kind: Kind,
    /// spandsp's concealer (8 kHz), or null with `wide_plc`.
    plc: *mut sys::plc_state_t,
    /// G.722 at 16 kHz: its concealer (neural or classic).
    wide_plc: Option<Concealer>,
}

// SAFETY: spandsp states are plain memory owned by this value, used by the
// thread that holds it.
unsafe impl Send for SpanCodec {}

fn make(s: &Setup<'_>) -> Result<Box<dyn Codec>, i32> {
    let (codec, pcm_rate) = (s.codec, s.pcm_rate);
    use std::ptr::null_mut as null;
    // SAFETY: spandsp allocates each state (NULL argument), only for the
    // uses asked for; a null return is checked below and everything made
    // is freed by Drop.
    let kind = unsafe {
        match (codec, pcm_rate) {
            (0, 16000 | 8000) => {
                let opt = if pcm_rate == 8000 { sys::G722_SAMPLE_RATE_8000 } else { 0 };
                Kind::G722 {
                    enc: if s.encodes() { sys::g722_encode_init(null(), 64000, opt) } else { null() },
                    dec: if s.decodes() { sys::g722_decode_init(null(), 64000, opt) } else { null() },
                    wide: pcm_rate == 16000,
                }
            }
            (1..=4, 8000) => {
                let bits = G726_BITS[codec as usize - 1];
                let rate = bits as c_int * 8000;
                let (lin, pack) = (sys::G726_ENCODING_LINEAR, sys::G726_PACKING_RIGHT);
                Kind::G726 {
                    enc: if s.encodes() { sys::g726_init(null(), rate, lin, pack) } else { null() },
                    dec: if s.decodes() { sys::g726_init(null(), rate, lin, pack) } else { null() },
                    bits,
                }
            }
            _ => return Err(abi::ERR_INVALID),
        }
    };
    // SAFETY: as above.
    let wide = matches!(kind, Kind::G722 { wide: true, .. });
    let plc = if s.decodes() && !wide { unsafe { sys::plc_init(null()) } } else { null() };
    let wide_plc = if s.decodes() && wide {
        // Neural by default; classic where its memory cannot be had.
        Some(Neural::new().map_or_else(|| Concealer::Classic(Plc::new(16000)), Concealer::Neural))
    } else {
        None
    };
    let c = SpanCodec { kind, plc, wide_plc };
    let (enc, dec) = c.halves();
    let ok = enc == s.encodes() && dec == s.decodes();
    if ok {
        Ok(Box::new(c))
    } else {
        Err(abi::ERR_INTERNAL)
    }
}

impl SpanCodec {
    /// Whether the encoder and the decoder (with its concealer) exist.
    fn halves(&self) -> (bool, bool) {
        let (enc, dec) = match self.kind {
            Kind::G722 { enc, dec, .. } => (!enc.is_null(), !dec.is_null()),
            Kind::G726 { enc, dec, .. } => (!enc.is_null(), !dec.is_null()),
        };
        (enc, dec && (!self.plc.is_null() || self.wide_plc.is_some()))
    }

    /// Most samples `bytes` decode to (for G.726, with up to one codeword
    /// left over from the previous payload).
    fn samples_for(&self, bytes: usize) -> usize {
        match self.kind {
            Kind::G722 { wide, .. } => bytes * if wide { 2 } else { 1 },
            Kind::G726 { bits, .. } => (bytes * 8 + 7) / bits as usize + 1,
        }
    }
}

fn as_int(n: usize) -> Result<c_int, i32> {
    c_int::try_from(n).map_err(|_| abi::ERR_INVALID)
}

impl Codec for SpanCodec {
    fn decode(&mut self, input: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        if !self.halves().1 {
            return Err(abi::ERR_INVALID);
        }
        if self.samples_for(input.len()) > pcm.len() {
            return Err(abi::ERR_SPACE);
        }
        let len = as_int(input.len())?;
        if input.is_empty() {
            // Nothing to play (an empty payload ends no loss).
            return Ok(0);
        }
        if let (Some(Concealer::Neural(p)), Kind::G722 { dec, .. }) = (self.wide_plc.as_mut(), &self.kind) {
            // After a loss: the decoder back in step with the sender.
            // SAFETY: `dec` is this codec's live decoder (halves() checked).
            unsafe { p.before_decode(*dec) };
        }
        // SAFETY: live states; `pcm` holds every sample the call can write.
        let n = unsafe {
            match self.kind {
                Kind::G722 { dec, .. } => sys::g722_decode(dec, pcm.as_mut_ptr(), input.as_ptr(), len),
                Kind::G726 { dec, .. } => sys::g726_decode(dec, pcm.as_mut_ptr(), input.as_ptr(), len),
            }
        };
        let n = usize::try_from(n).map_err(|_| abi::ERR_INTERNAL)?.min(pcm.len());
        // The concealer keeps the history it extrapolates from, and
        // smooths the step back from concealed to received audio.
        if let Some(c) = self.wide_plc.as_mut() {
            match c {
                Concealer::Neural(p) => p.received(&mut pcm[..n]),
                Concealer::Classic(p) => p.received(&mut pcm[..n]),
            }
        } else {
            // SAFETY: a live state; n samples of `pcm` are written.
            unsafe { sys::plc_rx(self.plc, pcm.as_mut_ptr(), n as c_int) };
        }
        Ok(n)
    }

    fn encode(&mut self, pcm: &[i16], out: &mut [u8]) -> Result<usize, i32> {
        if !self.halves().0 {
            return Err(abi::ERR_INVALID);
        }
        let need = match self.kind {
            Kind::G722 { wide: true, .. } if !pcm.len().is_multiple_of(2) => return Err(abi::ERR_INVALID),
            Kind::G722 { wide, .. } => pcm.len() / if wide { 2 } else { 1 },
            Kind::G726 { bits, .. } => (pcm.len() * bits as usize).div_ceil(8),
        };
        if need > out.len() {
            return Err(abi::ERR_SPACE);
        }
        let len = as_int(pcm.len())?;
        // SAFETY: live states; `out` holds every byte the call can write.
        let n = unsafe {
            match self.kind {
                Kind::G722 { enc, .. } => sys::g722_encode(enc, out.as_mut_ptr(), pcm.as_ptr(), len),
                Kind::G726 { enc, .. } => sys::g726_encode(enc, out.as_mut_ptr(), pcm.as_ptr(), len),
            }
        };
        usize::try_from(n).map_err(|_| abi::ERR_INTERNAL)
    }

    fn control(&mut self, what: u32, value: i32) -> Result<(), i32> {
        match what {
            abi::CTL_PLC => self.set_plc(value),
            _ => Err(abi::ERR_UNSUPPORTED),
        }
    }

    fn recover(&mut self, next: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        if !self.halves().1 {
            return Err(abi::ERR_INVALID);
        }
        if let (Some(Concealer::Neural(p)), Kind::G722 { dec, .. }) = (self.wide_plc.as_mut(), &self.kind) {
            // The neural concealment looks ahead at `next`.
            // SAFETY: `dec` is this codec's live decoder (halves() checked).
            unsafe { p.recover(*dec, next, pcm) };
            return Ok(pcm.len());
        }
        self.conceal(pcm)
    }

    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32> {
        if !self.halves().1 {
            return Err(abi::ERR_INVALID);
        }
        match (self.wide_plc.as_mut(), &self.kind) {
            (Some(Concealer::Neural(p)), Kind::G722 { dec, .. }) => {
                // SAFETY: `dec` is this codec's live decoder (halves() checked).
                unsafe { p.conceal(*dec, pcm) };
                return Ok(pcm.len());
            }
            (Some(Concealer::Classic(p)), _) => {
                p.conceal(pcm);
                return Ok(pcm.len());
            }
            _ => {}
        }
        let len = as_int(pcm.len())?;
        // SAFETY: a live state; `pcm` holds `len` samples.
        let n = unsafe { sys::plc_fillin(self.plc, pcm.as_mut_ptr(), len) };
        Ok(usize::try_from(n).map_err(|_| abi::ERR_INTERNAL)?.min(pcm.len()))
    }
}

impl SpanCodec {
    /// `SRTPGATE_CTL_PLC` on a 16 kHz G.722 decoder: the concealment kind,
    /// switched between losses (a new one starts with an empty history).
    fn set_plc(&mut self, value: i32) -> Result<(), i32> {
        let Some(c) = self.wide_plc.as_mut() else {
            return Err(abi::ERR_UNSUPPORTED);
        };
        match (value, &*c) {
            (abi::PLC_NEURAL, Concealer::Neural(_)) | (abi::PLC_CLASSIC, Concealer::Classic(_)) => Ok(()),
            (abi::PLC_NEURAL, Concealer::Classic(_)) => {
                *c = Concealer::Neural(Neural::new().ok_or(abi::ERR_INTERNAL)?);
                Ok(())
            }
            (abi::PLC_CLASSIC, Concealer::Neural(_)) => {
                *c = Concealer::Classic(Plc::new(16000));
                Ok(())
            }
            _ => Err(abi::ERR_INVALID),
        }
    }
}

impl Drop for SpanCodec {
    fn drop(&mut self) {
        // SAFETY: states made by make(), freed once (null ones skipped).
        unsafe {
            match self.kind {
                Kind::G722 { enc, dec, .. } => {
                    if !enc.is_null() {
                        sys::g722_encode_free(enc);
                    }
                    if !dec.is_null() {
                        sys::g722_decode_free(dec);
                    }
                }
                Kind::G726 { enc, dec, .. } => {
                    for s in [enc, dec] {
                        if !s.is_null() {
                            sys::g726_free(s);
                        }
                    }
                }
            }
            if !self.plc.is_null() {
                sys::plc_free(self.plc);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// DTMF detector: spandsp's dtmf_rx (Goertzel filters on 102-sample blocks; a
// change is declared when two blocks agree), reporting through its
// real-time callback each start and end of a tone pair.

use abi::{DtmfReport, DtmfTable, StaticDtmfTable};
use std::ffi::c_void;

const MAX_PENDING: usize = 8;

struct Dtmf {
    rx: *mut sys::dtmf_rx_state_t,
    /// The event being received.
    current: Option<u8>,
    /// Changes reported by the callback during one `detect`.
    pending: [DtmfReport; MAX_PENDING],
    n: usize,
}

/// The RFC 4733 event code of a spandsp digit character.
fn event_code(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'*' => Some(10),
        b'#' => Some(11),
        b'A'..=b'D' => Some(c - b'A' + 12),
        _ => None,
    }
}

impl Dtmf {
    fn push(&mut self, event: u8, on: bool, level: i32) {
        if self.n < MAX_PENDING {
            self.pending[self.n] =
                DtmfReport { offset: 0, event, on: on as u8, level: level.clamp(-99, 0) as i8, reserved: 0 };
            self.n += 1;
        }
    }
}

/// spandsp's real-time callback: `code` is the digit now received (0: none).
unsafe extern "C" fn on_tone(user: *mut c_void, code: c_int, level: c_int, _delay: c_int) {
    // SAFETY: `user` is the Dtmf that owns the receiver, alive during dtmf_rx.
    let d = unsafe { &mut *(user as *mut Dtmf) };
    let new = u8::try_from(code).ok().and_then(event_code);
    if new == d.current {
        return;
    }
    if let Some(old) = d.current {
        d.push(old, false, 0);
    }
    if let Some(e) = new {
        d.push(e, true, level);
    }
    d.current = new;
}

unsafe extern "C" fn dtmf_create(error: *mut i32) -> *mut c_void {
    let set = |code| {
        if !error.is_null() {
            // SAFETY: a writable error word, per the ABI.
            unsafe { *error = code };
        }
    };
    let mut d = Box::new(Dtmf { rx: std::ptr::null_mut(), current: None, pending: Default::default(), n: 0 });
    // SAFETY: spandsp allocates the receiver; the callback's user pointer is
    // the boxed Dtmf, which does not move and outlives the receiver.
    unsafe {
        d.rx = sys::dtmf_rx_init(std::ptr::null_mut(), None, std::ptr::null_mut());
        if d.rx.is_null() {
            set(abi::ERR_INTERNAL);
            return std::ptr::null_mut();
        }
        let user = &mut *d as *mut Dtmf as *mut c_void;
        sys::dtmf_rx_set_realtime_callback(d.rx, Some(on_tone), user);
    }
    Box::into_raw(d) as *mut c_void
}

unsafe extern "C" fn dtmf_detect(
    state: *mut c_void,
    pcm: *const i16,
    samples: usize,
    reports: *mut DtmfReport,
    max: usize,
) -> i32 {
    if state.is_null() || (pcm.is_null() && samples > 0) || (reports.is_null() && max > 0) {
        return abi::ERR_INVALID;
    }
    let Ok(len) = c_int::try_from(samples) else {
        return abi::ERR_INVALID;
    };
    // SAFETY: a state made by dtmf_create, used by one thread.
    let d = unsafe { &mut *(state as *mut Dtmf) };
    d.n = 0;
    if samples > 0 {
        // SAFETY: a live receiver; `pcm` holds `samples` samples.
        unsafe { sys::dtmf_rx(d.rx, pcm, len) };
    }
    let n = d.n.min(max);
    for (k, r) in d.pending[..n].iter().enumerate() {
        // SAFETY: `reports` has room for `max` reports.
        unsafe { *reports.add(k) = DtmfReport { offset: samples as u32, ..*r } };
    }
    n as i32
}

unsafe extern "C" fn dtmf_destroy(state: *mut c_void) {
    if state.is_null() {
        return;
    }
    // SAFETY: made by dtmf_create (Box::into_raw), destroyed once.
    let d = unsafe { Box::from_raw(state as *mut Dtmf) };
    // SAFETY: the receiver made in dtmf_create.
    unsafe { sys::dtmf_rx_free(d.rx) };
}

static DTMF: StaticDtmfTable = StaticDtmfTable(DtmfTable {
    abi_version: abi::DTMF_ABI_VERSION,
    struct_size: std::mem::size_of::<DtmfTable>() as u32,
    name: c"spandsp dtmf_rx".as_ptr(),
    create: Some(dtmf_create),
    detect: Some(dtmf_detect),
    destroy: Some(dtmf_destroy),
});

/// The plugin's DTMF detector.
#[no_mangle]
pub extern "C" fn srtpgate_dtmf_detector_v1() -> *const DtmfTable {
    &DTMF.0
}
