//! libFuzzer entry of the `crd_schema` target (see `crt_fuzz::crd_schema`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::crd_schema(data));
