//! The agent and its tools in-process and over its socket: the loop, its
//! hardening against a hostile model, the socket protocol (and its doc), retry
//! dates, MCP servers, fetch/search/validation of tool calls, and the
//! README's layout. The in-process agents here set no sandbox helper (their
//! sandbox is unavailable, as it was when each file was its own binary).
//!
//! Linked as one test binary (`cargo test --locked --test agent`; one file's
//! tests: `cargo test --locked --test agent agent_hardening::`). Each module is a
//! former `tests/NAME.rs`, unchanged but for how it names the shared
//! helpers (`use super::common;`), which are declared once here.

#[path = "../support/agent_proc.rs"]
mod agent_proc;
#[path = "../common/mod.rs"]
mod common;
#[path = "../support/helper_proc.rs"]
mod helper_proc;
#[path = "../http_support/mod.rs"]
mod http_support;
#[path = "../mcp_support/mod.rs"]
mod mcp_support;

mod agent_hardening;
mod agent_loop;
mod agent_socket;
mod mcp;
mod protocol_doc;
mod readme_layout;
mod retry_after_date;
mod tools_fetch;
mod tools_search;
mod tools_validation;
