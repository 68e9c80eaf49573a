//! The entry points, one file a command: the arguments ([`args`]) and the
//! run modes they choose ([`run`]: the console, `exec`, `tool`, `policy`,
//! `sessions`), the console as a client of an agent process
//! ([`consolecmd`]), the agent process itself (`vigil __agent`,
//! [`agentproc`]), `ps`/`stop`/`attach` ([`fleetcmd`]), headless `vigil
//! exec` ([`headless`]), `vigil tool` ([`toolcmd`]), `vigil policy`
//! ([`policycmd`]) and how `vigil resume` starts a recorded session
//! ([`resume`]).
//!
//! What they share lives beside them: building the layers from a
//! configuration is `vigil_agent::assemble`; starting and reaching agent
//! processes is [`crate::launch`]; loading and checking the configuration
//! is [`crate::startup`]; the socket client is `vigil_client`.

pub mod agentproc;
pub mod args;
pub mod auditcmd;
pub mod consolecmd;
pub mod fleetcmd;
pub mod headless;
pub mod policycmd;
pub mod resume;
pub mod run;
pub mod toolcmd;
