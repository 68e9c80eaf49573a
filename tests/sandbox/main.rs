//! The kernel sandbox through the full binary's helper mode (`vigil
//! __sandbox`), and rule evasions driven through the real agent, which
//! sandboxes unasked calls the same way. Both set the process-wide helper to
//! the full binary; the files that use the small `vigil-sandbox` helper are
//! in `tests/preview/` (the helper is set once per process).
//!
//! Linked as one test binary (`cargo test --locked --test sandbox sandbox::`; one file's
//! tests: `cargo test --locked --test sandbox sandbox:: sandbox::`). Each module is a
//! former `tests/NAME.rs`, unchanged but for how it names the shared
//! helpers (`use super::common;`), which are declared once here.

#[path = "../common/mod.rs"]
mod common;
#[path = "../mcp_support/mod.rs"]
mod mcp_support;

mod rule_evasion;
mod sandbox;
