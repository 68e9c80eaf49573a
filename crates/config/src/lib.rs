//! Configuration: defaults, then the config file, then the environment, then
//! the command line (each later source wins).
//!
//! The file is TOML with unknown keys refused, so a typo is a clear error that
//! names the file, the line and the key rather than a silently ignored setting.
//! This module only reads and validates; it starts nothing.

pub mod approval;
pub mod glob;
pub mod hooks;
pub mod mcp;
pub mod model;
pub mod notify;
pub mod readable;
pub mod secrets;
pub mod targets;
pub mod telemetry;
pub mod tools;

pub use mcp::{McpConfig, McpServerConfig};
pub use model::{ApiDialect, ModelConfig, ToolProtocol};
pub use notify::{DesktopMode, NotifyConfig};
pub use targets::{ContainerSettings, EngineSetting, SshSettings};
pub use tools::ToolsConfig;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bad config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("bad setting {key}: {message}")]
    Invalid { key: String, message: String },
}

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub model: ModelConfig,
    pub agent: AgentSettings,
    pub tools: ToolsConfig,
    pub console: ConsoleConfig,
    pub paths: PathsConfig,
    pub tmux: TmuxConfig,
    /// `[mcp.servers.NAME]`: MCP servers whose tools join the registry.
    pub mcp: McpConfig,
    pub sessions: SessionsConfig,
    pub ssh: SshSettings,
    pub container: ContainerSettings,
    /// `[[approval.rules]]`: the policy file.
    pub approval: approval::ApprovalConfig,
    /// `[notify]`: bell, title, desktop notification, command.
    pub notify: NotifyConfig,
    /// `[secrets]`: the secret places, changed both ways.
    pub secrets: secrets::SecretsConfig,
    /// `[sandbox]`: what commands that run unasked may read and see.
    pub sandbox: readable::SandboxConfig,
    /// `[[hooks.decide]]` and `[[hooks.on]]` (docs/hooks.md).
    pub hooks: hooks::HooksConfig,
    /// `[telemetry]`: OpenTelemetry export (docs/audit.md).
    pub telemetry: telemetry::TelemetryConfig,
    /// The file this config was read from (absolute), when it came from one:
    /// a secret place wherever it lies (it may hold the API key).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

/// Whether commands run in a managed tmux pane.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TmuxMode {
    /// Use tmux when it is installed (plain processes otherwise, with a notice).
    #[default]
    Auto,
    /// Always use tmux; starting fails without it.
    On,
    /// Never use tmux: plain processes.
    Off,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TmuxConfig {
    /// "auto", "on" or "off".
    pub mode: TmuxMode,
    /// vigil's private tmux server: a socket name (`tmux -L`), or a path.
    pub socket: String,
    /// The managed session's name (default: `vigil-<agent name>`).
    pub session: Option<String>,
    /// Most managed sessions at once.
    pub max_sessions: usize,
    /// Most managed panes per session (the shared pane included).
    pub max_panes: usize,
    /// Program new panes run (default: tmux's default shell).
    pub shell: Option<String>,
    /// Size of new tmux windows.
    pub width: u16,
    pub height: u16,
    /// Ask the operator before `send-keys` (typed keys run commands).
    pub send_keys_confirm: bool,
}

impl Default for TmuxConfig {
    fn default() -> Self {
        TmuxConfig {
            mode: TmuxMode::Auto,
            socket: "vigil".into(),
            session: None,
            max_sessions: 4,
            max_panes: 8,
            shell: None,
            width: 200,
            height: 50,
            send_keys_confirm: true,
        }
    }
}

/// How long session files are kept.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SessionsConfig {
    /// Sessions older than this many days are deleted at start-up (0: never).
    pub retention_days: u64,
    /// At most this many sessions are kept (the oldest go first).
    pub keep: usize,
}

impl Default for SessionsConfig {
    fn default() -> Self {
        SessionsConfig {
            retention_days: 30,
            keep: 200,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct AgentSettings {
    /// The agent's name (used for managed tmux session names).
    pub name: String,
    /// Replaces the built-in system prompt when set.
    pub system_prompt: Option<String>,
    /// Most model rounds one turn may take before it is stopped.
    pub max_rounds: u32,
    /// How gated tool calls are decided when the console starts.
    pub approval: ApprovalMode,
}

/// The approval policy at start-up (the console can change it later).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalMode {
    /// Ask for every gated call.
    #[default]
    Ask,
    /// Approve calls vigil itself rates low risk; ask for the rest.
    AutoLow,
    /// Try every shell command in the throwaway view first; ask only when
    /// the view shows it would change something (docs/preview.md).
    ByEffect,
    /// Approve everything (same as --auto-approve).
    ApproveAll,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            name: "agent".into(),
            system_prompt: None,
            max_rounds: 40,
            approval: ApprovalMode::Ask,
        }
    }
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleConfig {
    /// Most frames drawn per second.
    pub fps: u32,
    /// Ring the terminal bell when an approval arrives.
    pub bell: bool,
    /// Colour theme: a built-in (dark, light, high-contrast) or
    /// `<config dir>/themes/NAME.toml`.
    pub theme: String,
    /// Key binding overrides: action name → key name.
    pub keys: BTreeMap<String, String>,
}

impl Default for ConsoleConfig {
    fn default() -> Self {
        ConsoleConfig {
            fps: 60,
            bell: true,
            theme: "dark".into(),
            keys: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PathsConfig {
    /// Where sessions, spill files and logs go (default: the platform data dir).
    pub data_dir: Option<PathBuf>,
}

/// Values from the environment and the command line; `None` leaves the file's.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub data_dir: Option<PathBuf>,
    /// `Some(None)`: `--tmux`; `Some(Some(name))`: `--tmux NAME`.
    pub tmux: Option<Option<String>>,
    /// `--no-tmux`.
    pub no_tmux: bool,
    /// `VIGIL_TMUX_SOCKET`.
    pub tmux_socket: Option<String>,
}

impl Config {
    /// Parse TOML text; `path` is only used in error messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut cfg: Config = toml::from_str(text).map_err(|e| {
            // Report every mistake in file order, not just serde's first.
            let all = mistakes::all_mistakes(text);
            let message = match all.len() {
                0 => describe_toml_error(text, &e),
                1 => all[0].1.clone(),
                n => {
                    let list: Vec<String> = all.into_iter().map(|(_, m)| m).collect();
                    format!("{n} mistakes:\n  {}", list.join("\n  "))
                }
            };
            ConfigError::Parse {
                path: path.to_path_buf(),
                message,
            }
        })?;
        cfg.approval.locate(text, &path.display().to_string());
        cfg.hooks.locate(text, &path.display().to_string());
        cfg.validate()?;
        Ok(cfg)
    }

    /// Load from an explicit path (which must exist), else from the platform
    /// config dir when a `config.toml` is there, else defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        let path = match explicit {
            Some(p) => p.to_path_buf(),
            None => match default_config_path() {
                Some(p) if p.exists() => p,
                _ => return Ok(Config::default()),
            },
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let mut cfg = Config::from_toml(&text, &path)?;
        cfg.source = Some(real(&path));
        Ok(cfg)
    }

    /// Apply environment / command-line values.
    pub fn apply(&mut self, o: Overrides) {
        if let Some(v) = o.base_url {
            self.model.base_url = v;
        }
        if let Some(v) = o.model {
            self.model.model = v;
        }
        if let Some(v) = o.api_key {
            self.model.api_key = Some(v);
        }
        if let Some(v) = o.data_dir {
            self.paths.data_dir = Some(v);
        }
        if let Some(session) = o.tmux {
            self.tmux.mode = TmuxMode::On;
            if session.is_some() {
                self.tmux.session = session;
            }
        }
        if o.no_tmux {
            self.tmux.mode = TmuxMode::Off;
        }
        if let Some(socket) = o.tmux_socket {
            self.tmux.socket = socket;
        }
    }

    /// The API key: explicit value, else the variable named by `api_key_env`.
    pub fn api_key(&self) -> Option<String> {
        let key = self.model.api_key.clone().or_else(|| {
            self.model
                .api_key_env
                .as_ref()
                .and_then(|name| std::env::var(name).ok())
        });
        key.filter(|k| !k.trim().is_empty())
    }

    /// The directory for sessions, spill files and logs.
    pub fn data_dir(&self) -> PathBuf {
        if let Some(d) = &self.paths.data_dir {
            return d.clone();
        }
        directories::ProjectDirs::from("", "", "vigil")
            .map(|p| p.data_dir().to_path_buf())
            .unwrap_or_else(|| std::env::temp_dir().join("vigil"))
    }

    /// The secret places in force: the list with `[secrets]` applied, plus
    /// vigil's own config and data directories and the config file it was
    /// read from (`--config` anywhere counts); the data directory's spill
    /// folders stay readable (the model is pointed to them).
    pub fn secret_places(&self) -> secrets::SecretPlaces {
        let home = std::env::var_os("HOME").map(|h| real(Path::new(&h)));
        let data = real(&self.data_dir());
        let mut own = vec![data.clone()];
        own.extend(default_config_path().and_then(|p| p.parent().map(real)));
        own.extend(self.source.clone());
        secrets::SecretPlaces::new(&self.secrets, home.as_deref(), &own)
            .with_homes(&self.secrets, &secrets::account_homes())
            .with_spill_folders_of(&data)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.notify.validate()?;
        let servers: Vec<String> = self.mcp.servers.keys().cloned().collect();
        self.hooks.validate(&servers)?;
        self.telemetry.validate()?;
        self.sandbox
            .validate()
            .map_err(|message| ConfigError::Invalid {
                key: "sandbox".into(),
                message,
            })?;
        self.secrets
            .validate()
            .map_err(|message| ConfigError::Invalid {
                key: "secrets".into(),
                message,
            })?;
        if let Some(message) = self
            .tools
            .fetch_unasked_hosts
            .iter()
            .find_map(|h| host_entry_error(h))
        {
            return Err(ConfigError::Invalid {
                key: "tools.fetch_unasked_hosts".into(),
                message,
            });
        }
        let url = self.model.base_url.trim();
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ConfigError::Invalid {
                key: "model.base_url".into(),
                message: format!("`{url}` must start with http:// or https://"),
            });
        }
        if self.model.model.trim().is_empty() {
            return Err(ConfigError::Invalid {
                key: "model.model".into(),
                message: "must not be empty".into(),
            });
        }
        if let Some(limit) = self.model.context_limit
            && limit < 512
        {
            return Err(ConfigError::Invalid {
                key: "model.context_limit".into(),
                message: format!("{limit} is below the minimum of 512 tokens"),
            });
        }
        if self.model.retry_attempts == 0 {
            return Err(ConfigError::Invalid {
                key: "model.retry_attempts".into(),
                message: "must be at least 1".into(),
            });
        }
        if self.agent.max_rounds == 0 {
            return Err(ConfigError::Invalid {
                key: "agent.max_rounds".into(),
                message: "must be at least 1".into(),
            });
        }
        if self.tmux.max_sessions == 0 || self.tmux.max_panes == 0 {
            return Err(ConfigError::Invalid {
                key: "tmux.max_sessions / tmux.max_panes".into(),
                message: "must be at least 1".into(),
            });
        }
        if self.tmux.socket.trim().is_empty() {
            return Err(ConfigError::Invalid {
                key: "tmux.socket".into(),
                message: "must not be empty".into(),
            });
        }
        if self.ssh.target.is_some() && self.container.name.is_some() {
            return Err(ConfigError::Invalid {
                key: "ssh.target".into(),
                message: "set either ssh.target or container.name, not both".into(),
            });
        }
        if self.ssh.connect_timeout_secs == 0 {
            return Err(ConfigError::Invalid {
                key: "ssh.connect_timeout_secs".into(),
                message: "must be at least 1".into(),
            });
        }
        if !(1..=240).contains(&self.console.fps) {
            return Err(ConfigError::Invalid {
                key: "console.fps".into(),
                message: format!("{} is outside 1..=240", self.console.fps),
            });
        }
        self.approval
            .validate()
            .map_err(|(key, message)| ConfigError::Invalid { key, message })?;
        self.mcp
            .validate()
            .map_err(|(key, message)| ConfigError::Invalid { key, message })?;
        if self.console.theme.trim().is_empty() {
            return Err(ConfigError::Invalid {
                key: "console.theme".into(),
                message: "must name a theme (dark, light, high-contrast or your own)".into(),
            });
        }
        Ok(())
    }
}

/// Why a `fetch_unasked_hosts` entry is unusable, if it is.
fn host_entry_error(entry: &str) -> Option<String> {
    let e = entry.trim();
    let bare = e.strip_prefix("*.").unwrap_or(e);
    if bare.is_empty() || bare.contains(['/', ':', '@', '*', ' ', '?', '#']) {
        return Some(format!(
            "`{entry}` is not a host name: give `docs.rs` for that host or `*.rust-lang.org` for \
             its subdomains (no scheme, port or path)"
        ));
    }
    None
}

/// `p` made absolute against the working directory (without touching it).
fn absolute(p: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|cwd| cwd.join(p))
        .unwrap_or_else(|_| p.to_path_buf())
}

/// `p` with its symlinks resolved when it exists, else made absolute.
fn real(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| absolute(p))
}

/// `<platform config dir>/config.toml`.
pub fn default_config_path() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "vigil").map(|p| p.config_dir().join("config.toml"))
}

/// Turn a toml error into "line L, column C: message" on one line.
fn describe_toml_error(text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before
                .rsplit('\n')
                .next()
                .map(|l| l.chars().count())
                .unwrap_or(0)
                + 1;
            format!("line {line}, column {col}: {message}")
        }
        None => message,
    }
}

mod mistakes;

#[cfg(test)]
mod tests;
