//! `[ssh]` and `[container]`: where commands run when not on this machine.
//! Settings only: nothing here connects to a host or an engine.

use std::path::PathBuf;

use serde::Deserialize;

/// Run commands on a remote machine over SSH (`--ssh` overrides `target`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SshSettings {
    /// `user@host[:port]`; unset: not an SSH target.
    pub target: Option<String>,
    /// Private key to use (`ssh -i`, with `IdentitiesOnly=yes`).
    pub identity_file: Option<PathBuf>,
    /// Extra ssh options, each `Key=Value` (passed as `-o`).
    pub options: Vec<String>,
    /// Seconds to wait for the connection.
    pub connect_timeout_secs: u64,
}

impl Default for SshSettings {
    fn default() -> Self {
        SshSettings {
            target: None,
            identity_file: None,
            options: Vec::new(),
            connect_timeout_secs: 10,
        }
    }
}

/// Which container engine runs `exec`.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EngineSetting {
    /// podman or docker, whichever answers and knows the container.
    #[default]
    Auto,
    Docker,
    Podman,
}

/// Run commands inside a running container (`--container` overrides `name`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ContainerSettings {
    /// The container's name or id; unset: not a container target.
    pub name: Option<String>,
    pub engine: EngineSetting,
    /// Global engine arguments before `exec` (e.g. `["--root", "/srv/store"]`).
    pub engine_args: Vec<String>,
}
