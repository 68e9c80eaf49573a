//! Start-up: reading the configuration file with every mistake reported at
//! once ([`configload`]) and the checks each layer makes on its own part of
//! it ([`check_config`]). It never starts anything.

pub mod configload;

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
