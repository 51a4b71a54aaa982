//! libFuzzer entry of the `watch_lines` target (see `crt_fuzz::watch_lines`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::watch_lines(data));
