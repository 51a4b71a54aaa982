//! libFuzzer entry of the `apply` target (see `crt_fuzz::apply`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::apply(data));
