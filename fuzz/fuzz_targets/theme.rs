//! libFuzzer wrapper for the `theme` target of `tests/fuzzing/targets.rs`.
#![no_main]

#[path = "../../tests/fuzzing/mod.rs"]
mod fuzzing;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::run_named("theme", data));
