//! libFuzzer wrapper for the `validate` target of `tests/fuzzing/targets.rs`.
#![no_main]

#[path = "../../tests/fuzzing/mod.rs"]
mod fuzzing;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::run_named("validate", data));
