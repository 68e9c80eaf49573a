//! vigil: an operator console for supervising an AI agent that runs commands on
//! real machines.
//!
//! Layers, each depending only on the ones listed before it:
//! - [`exec`]: where and how processes run (local, tmux, container, SSH).
//! - [`tools`]: the Tool contract, registry, validation, truncation, envelope.
//! - [`agent`]: model client, agent loop, approvals broker.
//! - [`console`]: the ratatui front end. It renders and sends commands; it never
//!   executes anything itself.
//!
//! [`event`] is the one typed contract between the agent task and the console.
//! [`shell`] is the one reader of shell text (a bottom layer: it imports
//! nothing else from the crate); every safety decision reads its AST.
//! [`scripted`] is the scripted OpenAI-compatible model server shared by `--demo`
//! and the tests.

pub mod agent;
pub mod app;
pub mod config;
pub mod console;
pub mod event;
pub mod exec;
pub mod headless;
pub mod http_date;
pub mod policycmd;
pub mod redact;
pub mod scripted;
pub mod shell;
pub mod toolcmd;
pub mod tools;
