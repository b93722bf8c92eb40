//! A codec plugin built as its own shared library: L16, 16-bit linear PCM in
//! network byte order (RFC 3551 §4.5.11), mono at 8 and 16 kHz. It is the
//! reference for writing plugins against the ABI (`srtpgate_codec::abi`):
//! one exported entry point, a static table, no allocation per frame, no
//! unwinding across the boundary.

use srtpgate_codec::abi::{self, CodecDesc, PluginTable, StaticCodecs, StaticTable};
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};

static CODECS: StaticCodecs<2> = StaticCodecs([
    CodecDesc {
        name: c"L16".as_ptr(),
        clock_rate: 8000,
        channels: 1,
        frame_samples: 80,
        max_frame_bytes: 1920,
        static_pt: -1,
        fmtp: std::ptr::null(),
    },
    CodecDesc {
        name: c"L16".as_ptr(),
        clock_rate: 16000,
        channels: 1,
        frame_samples: 160,
        max_frame_bytes: 3840,
        static_pt: -1,
        fmtp: std::ptr::null(),
    },
]);

static TABLE: StaticTable = StaticTable(PluginTable {
    abi_version: abi::ABI_VERSION,
    struct_size: std::mem::size_of::<PluginTable>() as u32,
    plugin_name: c"l16".as_ptr(),
    plugin_version: c"1.0.0".as_ptr(),
    n_codecs: 2,
    codecs: &CODECS.0 as *const [CodecDesc; 2] as *const CodecDesc,
    create: Some(create),
    decode: Some(decode),
    encode: Some(encode),
    conceal: Some(conceal),
    destroy: Some(destroy),
});

/// The plugin's entry point.
#[no_mangle]
pub extern "C" fn srtpgate_codec_plugin_v1() -> *const PluginTable {
    &TABLE.0
}

/// A state: the codec, and a marker so that a foreign pointer is refused.
struct State {
    magic: u32,
}

const MAGIC: u32 = 0x4c31_3621;

fn guarded(f: impl FnOnce() -> i32) -> i32 {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(abi::ERR_INTERNAL)
}

unsafe extern "C" fn create(codec: u32, _fmtp: *const c_char, error: *mut i32) -> *mut c_void {
    if codec > 1 {
        if !error.is_null() {
            // SAFETY: the host passes a writable word or null.
            unsafe { *error = abi::ERR_INVALID };
        }
        return std::ptr::null_mut();
    }
    Box::into_raw(Box::new(State { magic: MAGIC })) as *mut c_void
}

fn valid(state: *mut c_void) -> bool {
    // SAFETY: a state made by `create` (the host passes nothing else).
    !state.is_null() && unsafe { (*(state as *const State)).magic } == MAGIC
}

unsafe extern "C" fn decode(state: *mut c_void, input: *const u8, in_len: usize, pcm: *mut i16, cap: usize) -> i32 {
    guarded(|| {
        if !valid(state) || in_len % 2 != 0 || (in_len > 0 && (input.is_null() || pcm.is_null())) {
            return abi::ERR_INVALID;
        }
        let n = in_len / 2;
        if cap < n {
            return abi::ERR_SPACE;
        }
        // SAFETY: the host passes in_len readable bytes and cap ≥ n writable samples.
        let (i, o) = unsafe { (std::slice::from_raw_parts(input, in_len), std::slice::from_raw_parts_mut(pcm, n)) };
        for (s, b) in o.iter_mut().zip(i.chunks_exact(2)) {
            *s = i16::from_be_bytes([b[0], b[1]]);
        }
        n as i32
    })
}

unsafe extern "C" fn encode(state: *mut c_void, pcm: *const i16, samples: usize, out: *mut u8, cap: usize) -> i32 {
    guarded(|| {
        if !valid(state) || (samples > 0 && (pcm.is_null() || out.is_null())) {
            return abi::ERR_INVALID;
        }
        if cap < 2 * samples {
            return abi::ERR_SPACE;
        }
        // SAFETY: the host passes `samples` readable samples and cap ≥ 2·samples bytes.
        let (i, o) =
            unsafe { (std::slice::from_raw_parts(pcm, samples), std::slice::from_raw_parts_mut(out, 2 * samples)) };
        for (b, s) in o.chunks_exact_mut(2).zip(i) {
            b.copy_from_slice(&s.to_be_bytes());
        }
        (2 * samples) as i32
    })
}

/// Concealment: silence (L16 carries no model to extrapolate from).
unsafe extern "C" fn conceal(state: *mut c_void, pcm: *mut i16, samples: usize) -> i32 {
    guarded(|| {
        if !valid(state) || (samples > 0 && pcm.is_null()) {
            return abi::ERR_INVALID;
        }
        // SAFETY: the host passes `samples` writable samples.
        unsafe { std::slice::from_raw_parts_mut(pcm, samples) }.fill(0);
        samples as i32
    })
}

unsafe extern "C" fn destroy(state: *mut c_void) {
    if valid(state) {
        // SAFETY: made by Box::into_raw in `create`, destroyed once.
        drop(unsafe { Box::from_raw(state as *mut State) });
    }
}
