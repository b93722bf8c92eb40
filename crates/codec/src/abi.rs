//! The codec plugin ABI, version 2: what a plugin (a shared library, in any
//! language) exports and what the relay calls. Plain C layout.
//!
//! A plugin exports one function, [`ENTRY_SYMBOL`]
//! (`srtpgate_codec_plugin_v2`), returning a pointer to a static
//! [`PluginTable`]. The host checks `abi_version` and `struct_size` before
//! it reads anything else, so the table can grow at its end in later versions.
//!
//! ```c
//! enum { /* bits of srtpgate_codec_desc.pcm_rates */
//!     SRTPGATE_PCM_8000 = 1, SRTPGATE_PCM_12000 = 2, SRTPGATE_PCM_16000 = 4,
//!     SRTPGATE_PCM_24000 = 8, SRTPGATE_PCM_32000 = 16, SRTPGATE_PCM_48000 = 32,
//! };
//! enum { /* uses: what a state is made for */
//!     SRTPGATE_USE_DECODE = 1, SRTPGATE_USE_ENCODE = 2,
//! };
//! enum { /* controls */
//!     SRTPGATE_CTL_PACKET_LOSS = 1, /* expected loss on the path to the receiver, percent 0..100 */
//!     SRTPGATE_CTL_COMPLEXITY = 2,  /* encoder complexity, codec-specific (Opus 0..10) */
//!     SRTPGATE_CTL_BITRATE = 3,     /* target bit rate, bit/s */
//!     SRTPGATE_CTL_PLC = 4,         /* decoder concealment: SRTPGATE_PLC_* */
//! };
//! enum { SRTPGATE_PLC_CLASSIC = 0, SRTPGATE_PLC_NEURAL = 1 };
//!
//! typedef struct {
//!     const char *name;          /* rtpmap encoding name, e.g. "G722" (NUL-terminated) */
//!     uint32_t clock_rate;       /* RTP clock rate, Hz (G.722: 8000) */
//!     uint32_t channels;         /* rtpmap channels (Opus: 2, whatever it carries) */
//!     uint32_t pcm_channels;     /* channels of its PCM, interleaved (1: mono) */
//!     uint32_t pcm_rate;         /* sample rate of its PCM, Hz (G.722: 16000) */
//!     uint32_t pcm_rates;        /* SRTPGATE_PCM_* bits: other PCM rates create() takes, or 0 */
//!     uint32_t frame_samples;    /* samples per channel of one frame at pcm_rate */
//!     uint32_t max_frame_bytes;  /* largest encoded frame */
//!     int32_t  static_pt;        /* static RTP payload type, or -1 */
//!     const char *fmtp;          /* a=fmtp parameters it offers, or NULL */
//!     uint32_t flags;            /* SRTPGATE_CODEC_FEC: recover() decodes in-band redundancy;
//!                                   SRTPGATE_CODEC_LOOKAHEAD: recover() conceals knowing next */
//! } srtpgate_codec_desc;
//!
//! typedef struct {
//!     uint32_t abi_version;      /* 2 */
//!     uint32_t struct_size;      /* sizeof(srtpgate_codec_plugin) */
//!     const char *plugin_name;
//!     const char *plugin_version;
//!     uint32_t n_codecs;
//!     const srtpgate_codec_desc *codecs;
//!     void   *(*create)(uint32_t codec, const char *fmtp, uint32_t pcm_rate, uint32_t uses, int32_t *error);
//!     int32_t (*decode)(void *state, const uint8_t *in, size_t in_len, int16_t *pcm, size_t pcm_cap);
//!     int32_t (*encode)(void *state, const int16_t *pcm, size_t samples, uint8_t *out, size_t out_cap);
//!     int32_t (*conceal)(void *state, int16_t *pcm, size_t samples);
//!     void    (*destroy)(void *state);
//!     /* optional (NULL: not offered) */
//!     int32_t (*recover)(void *state, const uint8_t *next, size_t next_len, int16_t *pcm, size_t samples);
//!     int32_t (*control)(void *state, uint32_t what, int32_t value);
//! } srtpgate_codec_plugin;
//!
//! const srtpgate_codec_plugin *srtpgate_codec_plugin_v2(void);
//! ```
//!
//! Rules:
//! - The caller owns every buffer; the plugin allocates only in `create`
//!   and `control`, never per frame. `state` is used by one thread at a time.
//! - `create` makes a state for `uses` (decoding, encoding or both: a
//!   plugin need not allocate the half that is not used), with PCM at
//!   `pcm_rate` (the descriptor's `pcm_rate`, or one of its `pcm_rates`);
//!   `fmtp` is the a=fmtp for this payload type of the endpoint on the
//!   other end (for an encoder: what the receiver declared), or NULL.
//! - `decode` takes one RTP payload (all the frames in it) and returns the
//!   PCM samples written (all channels); `encode` takes a whole number of
//!   frames and returns the bytes of one RTP payload; `conceal` writes
//!   `samples` of concealment for lost audio and returns the count written.
//! - `recover` rebuilds the lost audio just before `next` (the payload that
//!   arrived after a loss) from the redundancy in it (Opus in-band FEC), or
//!   conceals where `next` carries none; it returns the samples written.
//!   With `SRTPGATE_CODEC_LOOKAHEAD` instead, `recover` conceals the lost
//!   audio with `next` in view (where the speech goes after the gap); the
//!   host calls it for the last packet's worth of a gap either way, and
//!   counts only what an FEC codec rebuilds as recovered.
//! - `control` sets a parameter (`SRTPGATE_CTL_*`: the encoder's, or with
//!   `SRTPGATE_CTL_PLC` the decoder's concealment); 0 on success,
//!   [`ERR_UNSUPPORTED`] for a control the codec does not have.
//! - A negative return is an error ([`ERR_INVALID`], [`ERR_SPACE`],
//!   [`ERR_INTERNAL`], [`ERR_UNSUPPORTED`]); an error from decode, encode,
//!   conceal or recover ends that call's transcoding, never the relay.
//! - A plugin must not unwind across these functions (a Rust plugin catches
//!   panics and returns [`ERR_INTERNAL`]; [`crate::kit`] does this).
//!
//! Version 1 (no PCM rate, no recover or control) is no longer loaded: the
//! host names the version it found.
//!
//! ## DTMF detector (optional)
//!
//! A plugin may also export `srtpgate_dtmf_detector_v1`, a detector of
//! in-band DTMF on 8 kHz PCM (the relay decimates PCM of higher rates to 8
//! kHz before it calls it):
//!
//! ```c
//! typedef struct {
//!     uint32_t offset;   /* samples of this call's input taken when the change was decided */
//!     uint8_t  event;    /* RFC 4733 event code: 0-9, 10 '*', 11 '#', 12-15 'A'-'D' */
//!     uint8_t  on;       /* 1: the tone began; 0: it ended */
//!     int8_t   level;    /* level of the tone pair, dBm0 (on only) */
//!     uint8_t  reserved;
//! } srtpgate_dtmf_report;
//!
//! typedef struct {
//!     uint32_t abi_version;      /* 1 */
//!     uint32_t struct_size;      /* sizeof(srtpgate_dtmf_detector) */
//!     const char *name;          /* e.g. "spandsp dtmf_rx" */
//!     void   *(*create)(int32_t *error);
//!     /* returns the reports written (at most max), or a negative error */
//!     int32_t (*detect)(void *state, const int16_t *pcm, size_t samples,
//!                       srtpgate_dtmf_report *reports, size_t max);
//!     void    (*destroy)(void *state);
//! } srtpgate_dtmf_detector;
//!
//! const srtpgate_dtmf_detector *srtpgate_dtmf_detector_v1(void);
//! ```
//!
//! The same rules hold: caller-owned buffers, no allocation in `detect`,
//! one thread at a time per state, no unwinding.

use std::ffi::{c_char, c_void};

/// The ABI version this host speaks.
pub const ABI_VERSION: u32 = 2;

/// The symbol a plugin exports.
pub const ENTRY_SYMBOL: &[u8] = b"srtpgate_codec_plugin_v2\0";
/// The symbol of version 1 plugins (refused with a clear error).
pub const ENTRY_SYMBOL_V1: &[u8] = b"srtpgate_codec_plugin_v1\0";

/// Bad input (a malformed frame, an unsupported fmtp or PCM rate).
pub const ERR_INVALID: i32 = -1;
/// The output buffer is too small.
pub const ERR_SPACE: i32 = -2;
/// The plugin failed (or caught a panic).
pub const ERR_INTERNAL: i32 = -3;
/// A control the codec does not have.
pub const ERR_UNSUPPORTED: i32 = -4;

/// The PCM rates of the `pcm_rates` bits, bit 0 first.
pub const PCM_RATES: [u32; 6] = [8000, 12000, 16000, 24000, 32000, 48000];

/// The `pcm_rates` bit of `rate` (0 when it has none).
pub const fn pcm_rate_bit(rate: u32) -> u32 {
    let mut i = 0;
    while i < PCM_RATES.len() {
        if PCM_RATES[i] == rate {
            return 1 << i;
        }
        i += 1;
    }
    0
}

/// `uses` bit: the state decodes.
pub const USE_DECODE: u32 = 1;
/// `uses` bit: the state encodes.
pub const USE_ENCODE: u32 = 2;

/// Control: expected packet loss on the path to the receiver, percent.
pub const CTL_PACKET_LOSS: u32 = 1;
/// Control: encoder complexity (codec-specific; Opus 0–10).
pub const CTL_COMPLEXITY: u32 = 2;
/// Control: target bit rate, bit/s.
pub const CTL_BITRATE: u32 = 3;
/// Control of a decoder: how it conceals lost audio ([`PLC_CLASSIC`],
/// [`PLC_NEURAL`]), and with it whether speech models run on received
/// audio too (Opus: LACE). A codec with one kind only answers
/// [`ERR_UNSUPPORTED`].
pub const CTL_PLC: u32 = 4;
/// [`CTL_PLC`]: waveform repetition (G.711 Appendix I style) or the
/// codec's own concealment.
pub const PLC_CLASSIC: i32 = 0;
/// [`CTL_PLC`]: a speech model predicts the lost audio (libopus's neural
/// PLC), where the plugin has one.
pub const PLC_NEURAL: i32 = 1;

/// One codec a plugin offers.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CodecDesc {
    /// rtpmap encoding name, NUL-terminated.
    pub name: *const c_char,
    /// RTP clock rate, Hz.
    pub clock_rate: u32,
    /// rtpmap channel count.
    pub channels: u32,
    /// Channels of its PCM (interleaved).
    pub pcm_channels: u32,
    /// Sample rate of the PCM, Hz.
    pub pcm_rate: u32,
    /// Other PCM rates `create` takes ([`pcm_rate_bit`] bits).
    pub pcm_rates: u32,
    /// Samples per channel of one frame at `pcm_rate`.
    pub frame_samples: u32,
    /// Largest encoded frame, bytes.
    pub max_frame_bytes: u32,
    /// Static RTP payload type, or -1.
    pub static_pt: i32,
    /// fmtp it offers, or null.
    pub fmtp: *const c_char,
    /// [`CODEC_FEC`] and later flags.
    pub flags: u32,
}

/// Descriptor flag: `recover` decodes in-band redundancy (FEC) of the next
/// packet; without it (or [`CODEC_LOOKAHEAD`]) the host conceals instead of
/// calling `recover`.
pub const CODEC_FEC: u32 = 1;
/// Descriptor flag: `recover` conceals the lost audio knowing the next
/// packet (no redundancy: what it writes is concealment, not recovered).
pub const CODEC_LOOKAHEAD: u32 = 2;

/// `create`: a state for codec `codec` with the peer's `fmtp` (may be null),
/// PCM at `pcm_rate`, for `uses` ([`USE_DECODE`], [`USE_ENCODE`]); null and
/// `*error` set on failure.
pub type CreateFn =
    unsafe extern "C" fn(codec: u32, fmtp: *const c_char, pcm_rate: u32, uses: u32, error: *mut i32) -> *mut c_void;
/// `decode`: one payload to PCM.
pub type DecodeFn =
    unsafe extern "C" fn(state: *mut c_void, input: *const u8, in_len: usize, pcm: *mut i16, pcm_cap: usize) -> i32;
/// `encode`: PCM to one payload.
pub type EncodeFn =
    unsafe extern "C" fn(state: *mut c_void, pcm: *const i16, samples: usize, out: *mut u8, out_cap: usize) -> i32;
/// `conceal`: PCM for lost audio.
pub type ConcealFn = unsafe extern "C" fn(state: *mut c_void, pcm: *mut i16, samples: usize) -> i32;
/// `destroy`: frees a state.
pub type DestroyFn = unsafe extern "C" fn(state: *mut c_void);
/// `recover`: PCM for the lost audio before `next`, from its redundancy.
pub type RecoverFn =
    unsafe extern "C" fn(state: *mut c_void, next: *const u8, next_len: usize, pcm: *mut i16, samples: usize) -> i32;
/// `control`: sets an encoder parameter.
pub type ControlFn = unsafe extern "C" fn(state: *mut c_void, what: u32, value: i32) -> i32;

/// The table a plugin exports.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PluginTable {
    /// [`ABI_VERSION`].
    pub abi_version: u32,
    /// `size_of::<PluginTable>()` as the plugin was built.
    pub struct_size: u32,
    /// Plugin name, NUL-terminated.
    pub plugin_name: *const c_char,
    /// Plugin version, NUL-terminated.
    pub plugin_version: *const c_char,
    /// Number of codecs.
    pub n_codecs: u32,
    /// The codecs.
    pub codecs: *const CodecDesc,
    /// See [`CreateFn`].
    pub create: Option<CreateFn>,
    /// See [`DecodeFn`].
    pub decode: Option<DecodeFn>,
    /// See [`EncodeFn`].
    pub encode: Option<EncodeFn>,
    /// See [`ConcealFn`].
    pub conceal: Option<ConcealFn>,
    /// See [`DestroyFn`].
    pub destroy: Option<DestroyFn>,
    /// See [`RecoverFn`] (optional).
    pub recover: Option<RecoverFn>,
    /// See [`ControlFn`] (optional).
    pub control: Option<ControlFn>,
}

/// A table in static memory can be shared (it holds only pointers to
/// static, immutable data and functions).
#[repr(transparent)]
pub struct StaticTable(pub PluginTable);
// SAFETY: the table and everything it points to are immutable statics.
unsafe impl Sync for StaticTable {}

/// A descriptor list in static memory.
#[repr(transparent)]
pub struct StaticCodecs<const N: usize>(pub [CodecDesc; N]);
// SAFETY: as for StaticTable.
unsafe impl<const N: usize> Sync for StaticCodecs<N> {}

/// Version of the DTMF detector table.
pub const DTMF_ABI_VERSION: u32 = 1;

/// The symbol of a plugin's DTMF detector (optional).
pub const DTMF_ENTRY_SYMBOL: &[u8] = b"srtpgate_dtmf_detector_v1\0";

/// PCM rate a DTMF detector takes, Hz.
pub const DTMF_PCM_RATE: u32 = 8000;

/// A change of the detected tone.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DtmfReport {
    /// Samples of the call's input taken when the change was decided.
    pub offset: u32,
    /// RFC 4733 event code (0–15).
    pub event: u8,
    /// 1: the tone began; 0: it ended.
    pub on: u8,
    /// Level of the tone pair, dBm0 (when it began).
    pub level: i8,
    /// Zero.
    pub reserved: u8,
}

/// `create`: a detector state; null and `*error` set on failure.
pub type DtmfCreateFn = unsafe extern "C" fn(error: *mut i32) -> *mut c_void;
/// `detect`: takes 8 kHz PCM, writes the changes it decided.
pub type DtmfDetectFn = unsafe extern "C" fn(
    state: *mut c_void,
    pcm: *const i16,
    samples: usize,
    reports: *mut DtmfReport,
    max: usize,
) -> i32;

/// The DTMF detector table a plugin may export.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DtmfTable {
    /// [`DTMF_ABI_VERSION`].
    pub abi_version: u32,
    /// `size_of::<DtmfTable>()` as the plugin was built.
    pub struct_size: u32,
    /// Detector name, NUL-terminated.
    pub name: *const c_char,
    /// See [`DtmfCreateFn`].
    pub create: Option<DtmfCreateFn>,
    /// See [`DtmfDetectFn`].
    pub detect: Option<DtmfDetectFn>,
    /// Frees a state.
    pub destroy: Option<DestroyFn>,
}

/// A detector table in static memory.
#[repr(transparent)]
pub struct StaticDtmfTable(pub DtmfTable);
// SAFETY: as for StaticTable.
unsafe impl Sync for StaticDtmfTable {}
