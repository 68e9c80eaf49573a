//! vigil: an operator console for supervising an AI agent that runs commands on
//! real machines.
//!
//! The layers are the crates of this workspace; each depends only on the ones
//! listed before it, and the compiler keeps it so (a crate cannot name one it
//! does not depend on):
//! - [`vigil_protocol`] (`crates/protocol`): the contract between the agent and its
//!   consoles. It owns every type that crosses the socket, the line framing
//!   and the client a front end uses.
//! - [`shell`] (the one reader of shell text; every safety decision reads its
//!   AST), [`config`] (the configuration as plain data).
//! - [`policy`]: approval policy — risk, the allow-list, the denylist, prefix
//!   rules, the operator's rules. Pure decisions.
//! - [`exec`]: where and how processes run (local, tmux, container, SSH), the
//!   kernel sandbox and the throwaway view.
//! - [`tools`]: the Tool contract, registry, validation, truncation, envelope.
//! - [`agent`]: the model dialects, the loop, the approval broker, sessions,
//!   the agent process's socket server.
//! - [`console`]: the ratatui front end, a client of the protocol; it renders
//!   and sends commands and never executes anything.
//! - this crate: the entry points ([`cli`], one file a command), starting
//!   and reaching agent processes ([`launch`]) and loading and checking the
//!   configuration ([`startup`]). Building the layers from a configuration
//!   is `agent::assemble`.
//!
//! The layers are re-exported here under their short names so the binaries,
//! the integration tests and the benches name one crate. The protocol is
//! not among them: every type that crosses the socket is named from
//! `vigil_protocol` itself, wherever it is used.

pub use vigil_agent as agent;
pub use vigil_config as config;
pub use vigil_console as console;
pub use vigil_exec as exec;
pub use vigil_policy as policy;
pub use vigil_shell as shell;
pub use vigil_tools as tools;

pub mod cli;
pub mod launch;
pub mod startup;
