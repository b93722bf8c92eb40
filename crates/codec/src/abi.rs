//! The codec plugin ABI, version 1: what a plugin (a shared library, in any
//! language) exports and what the relay calls. Plain C layout.
//!
//! A plugin exports one function, [`ENTRY_SYMBOL`]
//! (`srtpgate_codec_plugin_v1`), returning a pointer to a static
//! [`PluginTable`]. The host checks `abi_version` and `struct_size` before
//! it reads anything else, so the table can grow at its end in later versions.
//!
//! ```c
//! typedef struct {
//!     const char *name;          /* rtpmap encoding name, e.g. "PCMU" (NUL-terminated) */
//!     uint32_t clock_rate;       /* RTP clock rate, Hz */
//!     uint32_t channels;         /* 1 for mono */
//!     uint32_t frame_samples;    /* samples per channel of one frame (the packetisation unit) */
//!     uint32_t max_frame_bytes;  /* largest encoded frame */
//!     int32_t  static_pt;        /* static RTP payload type, or -1 */
//!     const char *fmtp;          /* default a=fmtp parameters, or NULL */
//! } srtpgate_codec_desc;
//!
//! typedef struct {
//!     uint32_t abi_version;      /* 1 */
//!     uint32_t struct_size;      /* sizeof(srtpgate_codec_plugin) */
//!     const char *plugin_name;
//!     const char *plugin_version;
//!     uint32_t n_codecs;
//!     const srtpgate_codec_desc *codecs;
//!     void   *(*create)(uint32_t codec, const char *fmtp, int32_t *error);
//!     int32_t (*decode)(void *state, const uint8_t *in, size_t in_len, int16_t *pcm, size_t pcm_cap);
//!     int32_t (*encode)(void *state, const int16_t *pcm, size_t samples, uint8_t *out, size_t out_cap);
//!     int32_t (*conceal)(void *state, int16_t *pcm, size_t samples);
//!     void    (*destroy)(void *state);
//! } srtpgate_codec_plugin;
//!
//! const srtpgate_codec_plugin *srtpgate_codec_plugin_v1(void);
//! ```
//!
//! Rules: the caller owns every buffer (the plugin allocates only in
//! `create`, never per frame); `decode` returns the PCM samples written (all
//! channels), `encode` the bytes written, `conceal` the samples of
//! concealment written for a lost frame; a negative return is an error
//! ([`ERR_INVALID`], [`ERR_SPACE`], [`ERR_INTERNAL`]) and ends that call's
//! transcoding, never the relay. A plugin must not unwind across these
//! functions (a Rust plugin catches panics and returns [`ERR_INTERNAL`]).
//! `state` is used by one thread at a time.

use std::ffi::{c_char, c_void};

/// The ABI version this host speaks.
pub const ABI_VERSION: u32 = 1;

/// The symbol a plugin exports.
pub const ENTRY_SYMBOL: &[u8] = b"srtpgate_codec_plugin_v1\0";

/// Bad input (a malformed frame, an unsupported fmtp).
pub const ERR_INVALID: i32 = -1;
/// The output buffer is too small.
pub const ERR_SPACE: i32 = -2;
/// The plugin failed (or caught a panic).
pub const ERR_INTERNAL: i32 = -3;

/// One codec a plugin offers.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CodecDesc {
    /// rtpmap encoding name, NUL-terminated.
    pub name: *const c_char,
    /// RTP clock rate, Hz.
    pub clock_rate: u32,
    /// Channels.
    pub channels: u32,
    /// Samples per channel of one frame.
    pub frame_samples: u32,
    /// Largest encoded frame, bytes.
    pub max_frame_bytes: u32,
    /// Static RTP payload type, or -1.
    pub static_pt: i32,
    /// Default fmtp, or null.
    pub fmtp: *const c_char,
}

/// `create`: a state for codec `codec` with `fmtp` (may be null); null and
/// `*error` set on failure.
pub type CreateFn = unsafe extern "C" fn(codec: u32, fmtp: *const c_char, error: *mut i32) -> *mut c_void;
/// `decode`: one frame to PCM.
pub type DecodeFn =
    unsafe extern "C" fn(state: *mut c_void, input: *const u8, in_len: usize, pcm: *mut i16, pcm_cap: usize) -> i32;
/// `encode`: PCM to one frame.
pub type EncodeFn =
    unsafe extern "C" fn(state: *mut c_void, pcm: *const i16, samples: usize, out: *mut u8, out_cap: usize) -> i32;
/// `conceal`: PCM for a lost frame.
pub type ConcealFn = unsafe extern "C" fn(state: *mut c_void, pcm: *mut i16, samples: usize) -> i32;
/// `destroy`: frees a state.
pub type DestroyFn = unsafe extern "C" fn(state: *mut c_void);

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
