//! The console end to end: the real `vigil` binary in a private tmux
//! server (keys sent, the screen read), against a scripted model, on this
//! machine and through ssh. Everything runs in child processes, so the tests
//! share this process freely.
//!
//! Linked as one test binary (`cargo test --locked --test console`; one file's
//! tests: `cargo test --locked --test console console_approve::`). Each module is a
//! former `tests/NAME.rs`, unchanged but for how it names the shared
//! helpers (`use super::common;`), which are declared once here.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/console.rs"]
mod console_support;

mod console_approve;
mod console_attach;
mod console_attach_ssh;
mod console_demo;
mod console_diff;
mod console_facts;
mod console_fleet;
mod console_mirror;
mod console_notify;
mod console_preview;
mod console_resume;
mod console_views;
mod remote_console;
