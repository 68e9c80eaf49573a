//! The integration tests that need nothing but their own module, linked as
//! one test binary (`cargo test --locked --test standalone`; one file's
//! tests: `cargo test --locked --test standalone json_tags::`). Each module
//! is a former `tests/NAME.rs`, unchanged: it sets no process-wide state
//! (environment, current directory, installed secret places), so its tests
//! can share a process with the others. A test file that needs such state,
//! or its own helpers (`tests/common`), stays a binary of its own.

mod approval_gate_props;
mod config_checks;
mod json_tags;
mod model_client;
mod request_tools;
mod tools_edit;
mod tools_preview;
mod tools_shell;
