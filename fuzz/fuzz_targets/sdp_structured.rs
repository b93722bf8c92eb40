#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| srtp_fuzz::structured_sdp::sdp_structured(data));
