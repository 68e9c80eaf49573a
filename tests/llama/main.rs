//! The real llama.cpp server (`tests/llama/serve.py`, from the test
//! virtualenv that `.ci/run` installs): dialect parity, its quirks, and the
//! server's lifecycle.
//!
//! Linked as one test binary (`cargo test --locked --test llama`; one file's
//! tests: `cargo test --locked --test llama llama_parity::`). Each module is a
//! former `tests/NAME.rs`, unchanged but for how it names the shared
//! helpers (`use super::common;`), which are declared once here.

#[path = "../common/mod.rs"]
mod common;
#[path = "../llama_support/mod.rs"]
#[macro_use]
mod llama_support;

mod llama_parity;
mod llama_quirks;
mod llama_server;
