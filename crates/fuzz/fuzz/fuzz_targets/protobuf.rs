//! libFuzzer entry of the `protobuf` target (see `crt_fuzz::protobuf`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| crt_fuzz::protobuf(data));
