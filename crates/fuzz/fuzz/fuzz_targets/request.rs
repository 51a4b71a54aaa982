//! libFuzzer entry of the `request` target (see `crt_fuzz::request`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::request(data));
