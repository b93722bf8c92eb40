//! Software prefetch: asks the processor to start loading memory that a
//! later step of a batch will read, so that the cache misses of many
//! packets overlap instead of each packet waiting for its own.
//!
//! A relay worker's round touches the state of a different call with almost
//! every packet (thousands of legs, each visited every 20 ms), and that
//! state has left the cache between two visits. Run one packet after the
//! other, every miss is paid in full; announced a stage ahead for the whole
//! round, they are in flight together (as DPDK's and VPP's packet loops do).
//! A prefetch is only a hint: it never faults, changes nothing a program
//! can observe but time, and on targets without one here it does nothing.

/// Bytes of one cache line on the targets this runs on.
pub const LINE: usize = 64;

/// Most lines one call announces: a hint for more than this is a sign of
/// prefetching a whole large value where only a few fields are read.
const MAX_LINES: usize = 16;

/// Announces the first `bytes` bytes of `value` (at most its size, at most
/// [`MAX_LINES`] lines).
#[inline(always)]
pub fn bytes<T: ?Sized>(value: &T, bytes: usize) {
    let start = (value as *const T).cast::<u8>();
    let len = bytes.min(size_of_val(value));
    let first = start as usize & !(LINE - 1);
    let end = start as usize + len;
    let mut at = first;
    let mut n = 0;
    while at < end && n < MAX_LINES {
        line(at as *const u8);
        at += LINE;
        n += 1;
    }
}

/// Announces the whole of `value` (at most [`MAX_LINES`] lines).
#[inline(always)]
pub fn value<T: ?Sized>(value: &T) {
    bytes(value, usize::MAX);
}

/// Announces the cache line holding `at`.
#[inline(always)]
pub fn line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 reads nothing a program can observe and never
    // faults, whatever the address (Intel SDM, "PREFETCHh"); SSE, which
    // the intrinsic needs, is part of every x86-64 processor.
    #[allow(unsafe_code)]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(at.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_value_and_length_is_only_a_hint() {
        let v = [7u8; 1000];
        bytes(&v, 0);
        bytes(&v, 10_000);
        value(&v[..]);
        value(&());
        line(std::ptr::null());
        line(usize::MAX as *const u8);
        assert_eq!(v, [7u8; 1000]);
    }
}
