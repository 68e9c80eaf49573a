//! libFuzzer wrapper for the `anthropic_sse` target of `tests/fuzzing/targets.rs`.
#![no_main]

#[path = "../../tests/fuzzing/mod.rs"]
mod fuzzing;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzzing::run_named("anthropic_sse", data));
