//! Writing a codec plugin in Rust: implement [`Codec`] for a state, list the
//! codecs in a [`StaticCodecs`](crate::abi::StaticCodecs), and build the
//! table with [`plugin_table!`](crate::plugin_table). The kit supplies the C
//! functions of the ABI: they check their arguments and the state pointer,
//! catch panics (returning [`ERR_INTERNAL`]), and hand the plugin safe
//! slices of the host's buffers. The in-tree G.711 and every plugin under
//! `plugins/` are built this way.

use crate::abi::{ERR_INTERNAL, ERR_INVALID, ERR_UNSUPPORTED};
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// One codec state (decoder and encoder of one stream).
pub trait Codec: Send {
    /// Decodes one RTP payload into `pcm`; returns the samples written.
    fn decode(&mut self, input: &[u8], pcm: &mut [i16]) -> Result<usize, i32>;
    /// Encodes `pcm` (whole frames) into one payload; returns its bytes.
    fn encode(&mut self, pcm: &[i16], out: &mut [u8]) -> Result<usize, i32>;
    /// Fills `pcm` with concealment for lost audio; returns the samples written.
    fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, i32>;
    /// Rebuilds the lost audio before `next` from its redundancy; by
    /// default, concealment.
    fn recover(&mut self, next: &[u8], pcm: &mut [i16]) -> Result<usize, i32> {
        let _ = next;
        self.conceal(pcm)
    }
    /// Sets a parameter ([`crate::abi::CTL_PACKET_LOSS`], …,
    /// [`crate::abi::CTL_PLC`] for a decoder).
    fn control(&mut self, what: u32, value: i32) -> Result<(), i32> {
        let _ = (what, value);
        Err(ERR_UNSUPPORTED)
    }
}

/// What a state is made with.
#[derive(Clone, Copy, Debug)]
pub struct Setup<'a> {
    /// Index of the codec in the plugin's list.
    pub codec: u32,
    /// The other endpoint's fmtp for this payload type.
    pub fmtp: Option<&'a str>,
    /// PCM rate, Hz.
    pub pcm_rate: u32,
    /// [`crate::abi::USE_DECODE`], [`crate::abi::USE_ENCODE`] bits.
    pub uses: u32,
}

impl Setup<'_> {
    /// The state decodes.
    pub fn decodes(&self) -> bool {
        self.uses & crate::abi::USE_DECODE != 0
    }
    /// The state encodes.
    pub fn encodes(&self) -> bool {
        self.uses & crate::abi::USE_ENCODE != 0
    }
    /// The value of fmtp parameter `name` (case-insensitive), if given.
    pub fn fmtp_param(&self, name: &str) -> Option<&str> {
        self.fmtp?.split(';').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Makes a state.
pub type Factory = fn(setup: &Setup<'_>) -> Result<Box<dyn Codec>, i32>;

/// What a state pointer points at; `magic` refuses a foreign pointer.
struct Handle {
    magic: u64,
    codec: Box<dyn Codec>,
}

const MAGIC: u64 = 0x7372_7470_6761_7465;

fn guarded(f: impl FnOnce() -> i32) -> i32 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(ERR_INTERNAL)
}

fn count(r: Result<usize, i32>) -> i32 {
    match r {
        Ok(n) => i32::try_from(n).unwrap_or(ERR_INTERNAL),
        Err(e) => e.min(-1),
    }
}

/// The state behind `state`, or None for a null or foreign pointer.
///
/// # Safety
/// `state` is null or was returned by [`create`] and not yet destroyed.
unsafe fn handle<'a>(state: *mut c_void) -> Option<&'a mut Handle> {
    if state.is_null() {
        return None;
    }
    // SAFETY: per the contract, a live Handle used by one thread at a time.
    let h = unsafe { &mut *(state as *mut Handle) };
    (h.magic == MAGIC).then_some(h)
}

/// A slice of the host's buffer (empty when `len` is 0, whatever `p` is).
///
/// # Safety
/// `p` is valid for `len` elements when `len > 0`.
unsafe fn slice<'a, T>(p: *const T, len: usize) -> Option<&'a [T]> {
    if len == 0 {
        return Some(&[]);
    }
    // SAFETY: per the contract.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, len) })
}

/// As [`slice`], writable.
///
/// # Safety
/// As [`slice`], and nothing else refers to the buffer.
unsafe fn slice_mut<'a, T>(p: *mut T, len: usize) -> Option<&'a mut [T]> {
    if len == 0 {
        return Some(&mut []);
    }
    // SAFETY: per the contract.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// `create` through a [`Factory`].
///
/// # Safety
/// `fmtp` is null or NUL-terminated; `error` is null or writable.
pub unsafe fn create(
    factory: Factory,
    codec: u32,
    fmtp: *const c_char,
    pcm_rate: u32,
    uses: u32,
    error: *mut i32,
) -> *mut c_void {
    let mut code = 0;
    let made = catch_unwind(AssertUnwindSafe(|| {
        let fmtp = if fmtp.is_null() {
            None
        } else {
            // SAFETY: per the contract.
            Some(unsafe { CStr::from_ptr(fmtp) }.to_str().map_err(|_| ERR_INVALID)?)
        };
        if uses == 0 || uses & !(crate::abi::USE_DECODE | crate::abi::USE_ENCODE) != 0 {
            return Err(ERR_INVALID);
        }
        factory(&Setup { codec, fmtp, pcm_rate, uses })
    }));
    let state = match made {
        Ok(Ok(codec)) => Box::into_raw(Box::new(Handle { magic: MAGIC, codec })) as *mut c_void,
        Ok(Err(e)) => {
            code = e.min(-1);
            std::ptr::null_mut()
        }
        Err(_) => {
            code = ERR_INTERNAL;
            std::ptr::null_mut()
        }
    };
    if state.is_null() && !error.is_null() {
        // SAFETY: per the contract.
        unsafe { *error = code };
    }
    state
}

/// The ABI's `decode`.
///
/// # Safety
/// The ABI's contract.
pub unsafe extern "C" fn decode(state: *mut c_void, input: *const u8, in_len: usize, pcm: *mut i16, cap: usize) -> i32 {
    guarded(|| {
        // SAFETY: the ABI's contract.
        match unsafe { (handle(state), slice(input, in_len), slice_mut(pcm, cap)) } {
            (Some(h), Some(i), Some(o)) => count(h.codec.decode(i, o)),
            _ => ERR_INVALID,
        }
    })
}

/// The ABI's `encode`.
///
/// # Safety
/// The ABI's contract.
pub unsafe extern "C" fn encode(state: *mut c_void, pcm: *const i16, samples: usize, out: *mut u8, cap: usize) -> i32 {
    guarded(|| {
        // SAFETY: the ABI's contract.
        match unsafe { (handle(state), slice(pcm, samples), slice_mut(out, cap)) } {
            (Some(h), Some(i), Some(o)) => count(h.codec.encode(i, o)),
            _ => ERR_INVALID,
        }
    })
}

/// The ABI's `conceal`.
///
/// # Safety
/// The ABI's contract.
pub unsafe extern "C" fn conceal(state: *mut c_void, pcm: *mut i16, samples: usize) -> i32 {
    guarded(|| {
        // SAFETY: the ABI's contract.
        match unsafe { (handle(state), slice_mut(pcm, samples)) } {
            (Some(h), Some(o)) => count(h.codec.conceal(o)),
            _ => ERR_INVALID,
        }
    })
}

/// The ABI's `recover`.
///
/// # Safety
/// The ABI's contract.
pub unsafe extern "C" fn recover(
    state: *mut c_void,
    next: *const u8,
    next_len: usize,
    pcm: *mut i16,
    samples: usize,
) -> i32 {
    guarded(|| {
        // SAFETY: the ABI's contract.
        match unsafe { (handle(state), slice(next, next_len), slice_mut(pcm, samples)) } {
            (Some(h), Some(i), Some(o)) => count(h.codec.recover(i, o)),
            _ => ERR_INVALID,
        }
    })
}

/// The ABI's `control`.
///
/// # Safety
/// The ABI's contract.
pub unsafe extern "C" fn control(state: *mut c_void, what: u32, value: i32) -> i32 {
    guarded(|| {
        // SAFETY: the ABI's contract.
        match unsafe { handle(state) } {
            Some(h) => h.codec.control(what, value).map_or_else(|e| e.min(-1), |()| 0),
            None => ERR_INVALID,
        }
    })
}

/// The ABI's `destroy`.
///
/// # Safety
/// The ABI's contract: a state from [`create`], destroyed once.
pub unsafe extern "C" fn destroy(state: *mut c_void) {
    // SAFETY: the ABI's contract.
    if unsafe { handle(state) }.is_some() {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: made by Box::into_raw in `create`, destroyed once.
            let mut h = unsafe { Box::from_raw(state as *mut Handle) };
            h.magic = 0;
            drop(h);
        }));
    }
}

/// Builds a plugin's [`StaticTable`](crate::abi::StaticTable) from its name
/// and version (C string literals), its codecs (a `static`
/// [`StaticCodecs`](crate::abi::StaticCodecs)) and its [`Factory`]:
///
/// ```text
/// static CODECS: StaticCodecs<1> = StaticCodecs([/* … */]);
/// srtpgate_codec::plugin_table!(static TABLE: c"l16", c"1.0.0", CODECS, make);
/// #[no_mangle]
/// pub extern "C" fn srtpgate_codec_plugin_v2() -> *const PluginTable { &TABLE.0 }
/// ```
#[macro_export]
macro_rules! plugin_table {
    ($vis:vis static $table:ident: $name:expr, $version:expr, $codecs:ident, $factory:path) => {
        $vis static $table: $crate::abi::StaticTable = $crate::abi::StaticTable($crate::abi::PluginTable {
            abi_version: $crate::abi::ABI_VERSION,
            struct_size: ::std::mem::size_of::<$crate::abi::PluginTable>() as u32,
            plugin_name: $name.as_ptr(),
            plugin_version: $version.as_ptr(),
            n_codecs: $codecs.0.len() as u32,
            codecs: $codecs.0.as_ptr(),
            create: Some({
                unsafe extern "C" fn create(
                    codec: u32,
                    fmtp: *const ::std::ffi::c_char,
                    pcm_rate: u32,
                    uses: u32,
                    error: *mut i32,
                ) -> *mut ::std::ffi::c_void {
                    // SAFETY: the ABI's contract, passed on.
                    unsafe { $crate::kit::create($factory, codec, fmtp, pcm_rate, uses, error) }
                }
                create
            }),
            decode: Some($crate::kit::decode),
            encode: Some($crate::kit::encode),
            conceal: Some($crate::kit::conceal),
            destroy: Some($crate::kit::destroy),
            recover: Some($crate::kit::recover),
            control: Some($crate::kit::control),
        });
    };
}
