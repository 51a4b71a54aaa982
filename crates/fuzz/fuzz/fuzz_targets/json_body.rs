//! libFuzzer entry of the `json_body` target (see `crt_fuzz::json_body`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::json_body(data));
