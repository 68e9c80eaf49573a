//! Execution targets without the sandbox: the managed tmux pane (runs,
//! tools, flow control, hostile output), remote targets through ssh and
//! containers, faults injected into them, and the `vigil exec` / `vigil
//! sessions` commands. None of these sets the sandbox helper, so in-process
//! runs see the sandbox as unavailable, as they did alone.
//!
//! Linked as one test binary (`cargo test --locked --test exec`; one file's
//! tests: `cargo test --locked --test exec tmux_run::`). Each module is a
//! former `tests/NAME.rs`, unchanged but for how it names the shared
//! helpers (`use super::common;`), which are declared once here.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/console.rs"]
mod console_support;

mod contain_exec;
mod exec_cli;
mod faults;
mod faults_remote;
mod hostile_output;
mod remote_container;
mod remote_ssh;
mod remote_tmux;
mod sessions_cli;
mod tmux_flow_control;
mod tmux_run;
mod tmux_tools;
