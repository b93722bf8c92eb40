#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| srtp_fuzz::webrtc::webrtc_datagram(data));
