//! libFuzzer entry of the `selectors` target (see `crt_fuzz::selectors`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::selectors(data));
