//! The guard around tool calls: the approval gate against evasions (rules,
//! secrets, wrappers, argv keys), approval tokens, decide hooks and what they
//! see, the audit log and its verification, telemetry export and the
//! environment a tool process gets. The agent runs as a child process or
//! in-process with an explicit sandbox answer (`NO_SANDBOX`); nothing here
//! sets process-wide state.
//!
//! Linked as one test binary (`cargo test --locked --test guard`; one file's
//! tests: `cargo test --locked --test guard approval_evasion::`). Each module is a
//! former `tests/NAME.rs`, unchanged but for how it names the shared
//! helpers (`use super::common;`), which are declared once here.

#[path = "../support/agent_proc.rs"]
mod agent_proc;
#[path = "../common/mod.rs"]
mod common;
#[path = "../hooks_common/mod.rs"]
mod hooks_common;
#[path = "../mcp_support/mod.rs"]
mod mcp_support;

mod approval_evasion;
mod approval_token;
mod argv_key;
mod audit_agent;
mod audit_verify;
mod guard_wrappers;
mod hooks_agent;
mod hooks_decide;
mod hooks_every_call;
mod hooks_lifecycle;
mod otel_export;
mod process_secrets;
mod secret_evasion;
mod terminal_output;
mod tool_env;
