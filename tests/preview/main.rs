//! Previews and by-effect decisions: a command tried in the view before it
//! is asked, what the view shows and hides, and sandboxed runs in the managed
//! pane. Every file here sets the process-wide sandbox helper to the small
//! `vigil-sandbox` binary before its first sandboxed run.
//!
//! Linked as one test binary (`cargo test --locked --test preview`; one file's
//! tests: `cargo test --locked --test preview by_effect::`). Each module is a
//! former `tests/NAME.rs`, unchanged but for how it names the shared
//! helpers (`use super::common;`), which are declared once here.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/console.rs"]
mod console_support;

mod build_outputs;
mod by_effect;
mod pane_shell;
mod preview_honesty;
mod preview_view;
mod sandbox_tmux;
