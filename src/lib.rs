//! vigil: an operator console for supervising an AI agent that runs commands on
//! real machines.
//!
//! Layers, each depending only on the ones listed before it (held true by
//! `tests/layering.rs`, which reads every `crate::`/`super::` path):
//! - plain utilities and data: [`shell`] (the one reader of shell text; every
//!   safety decision reads its AST), [`config`] (the configuration as plain
//!   data with the checks that need nothing else), [`http_date`], [`redact`].
//! - [`policy`]: approval policy — risk, the allow-list, the denylist, prefix
//!   rules, the operator's rules and the gate types. Pure decisions.
//! - [`exec`]: where and how processes run (local, tmux, container, SSH) and
//!   the kernel sandbox.
//! - [`tools`]: the Tool contract, registry, validation, truncation, envelope.
//! - [`event`]: the one typed contract between the agent and its consoles;
//!   every type the console needs from below arrives through it.
//! - [`scripted`]: the scripted OpenAI-compatible model server shared by
//!   `--demo` and the tests.
//! - [`agent`]: the model dialects, the loop, the approval broker, sessions.
//! - [`console`]: the ratatui front end. It reads only [`event`] and
//!   [`config`]; it renders and sends commands and never executes anything.
//! - [`cli`]: the run modes and the wiring that builds the layers from a
//!   configuration (each layer checks its own part at start-up).

pub mod agent;
pub mod cli;
pub mod config;
pub mod console;
pub mod event;
pub mod exec;
pub mod http_date;
pub mod policy;
pub mod redact;
pub mod scripted;
pub mod shell;
pub mod tools;
