//! The run modes and their wiring: building the registry, the execution
//! context, the model and the agent from a [`Config`] ([`wiring`]), the
//! headless `vigil exec` ([`headless`]), `vigil tool` ([`toolcmd`]) and
//! `vigil policy` ([`policycmd`]), how `vigil resume` starts a recorded
//! session ([`resume`]), the agent as its own process
//! (`vigil __agent`, [`agentproc`]; [`agentlogs`] prunes their logs), the console as a client of an agent
//! process ([`consolecmd`]: [`spawn`] starts the process, [`attach`] and
//! [`bridge`] talk to its socket, [`fleet`] feeds it the other agents and
//! their waiting calls; [`fleetcmd`] is `ps`, `stop` and which agent
//! `attach` means), and the start-up check that lets each layer
//! validate its own part of the configuration ([`check_config`]; [`configload`]
//! reports every mistake of a file at once). It sits on
//! top of every layer and is the only place that knows them all; nothing
//! below imports it.

pub mod agentlogs;
pub mod agentproc;
pub mod args;
pub mod attach;
pub mod auditcmd;
pub mod bridge;
pub mod configload;
pub mod consolecmd;
pub mod fleet;
pub mod fleetcmd;
pub mod headless;
pub mod hookwiring;
pub mod policycmd;
pub mod remote;
pub mod resume;
pub mod run;
pub mod spawn;
pub mod toolcmd;
pub mod wiring;

use crate::config::{Config, ConfigError};

/// The checks each layer makes on its own part of a loaded configuration,
/// at start-up: the tool environment policy (exec), the approval rules that
/// need to know what a program does (policy) and the key bindings
/// (console). The configuration's own checks ran when it was read.
pub fn check_config(config: &Config) -> Result<(), ConfigError> {
    crate::exec::env::EnvPolicy::from_config(config)?;
    crate::policy::rules::PolicyRules::check(&config.approval)?;
    if let Err(e) = crate::console::keys::Keymap::from_config(&config.console.keys) {
        return Err(ConfigError::Invalid {
            key: format!("console.keys.{}", e.action),
            message: e.message,
        });
    }
    Ok(())
}
