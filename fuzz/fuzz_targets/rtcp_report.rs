#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| srtp_fuzz::rtcp_report(data));
