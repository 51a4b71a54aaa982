//! libFuzzer entry of the `patch` target (see `crt_fuzz::patch`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::patch(data));
