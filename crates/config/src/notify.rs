//! `[notify]`: how the operator is told that an approval waits — the
//! terminal bell, the terminal title with the count of waiting approvals, a
//! desktop notification by OSC 9 / OSC 777, and a command the agent runs
//! with the request as JSON on stdin (so it works with no console attached).
//!
//! Plain data with its own checks; it never writes to a terminal or starts
//! anything.

use serde::Deserialize;

use super::ConfigError;

/// Longest time a notify command may run before its process group is killed.
pub const MAX_COMMAND_SECS: u64 = 300;

/// Which desktop-notification escape the console writes.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DesktopMode {
    /// Pick by `TERM_PROGRAM` / `TERM` (see `console::terminal::notify`).
    #[default]
    Auto,
    /// `ESC ] 9 ; text BEL` (iTerm2, Windows Terminal, WezTerm).
    Osc9,
    /// `ESC ] 777 ; notify ; title ; body BEL` (rxvt-unicode, foot,
    /// ghostty, WezTerm, VTE terminals built with Fedora's patch).
    Osc777,
    /// No desktop notification.
    Off,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyConfig {
    /// Ring the terminal bell when an approval arrives (`[console] bell =
    /// false` also silences it, as before).
    pub bell: bool,
    /// Show the count of waiting approvals in the terminal title
    /// ("vigil: 2 waiting"); the previous title is restored on exit.
    pub title: bool,
    /// "auto", "osc9", "osc777" or "off".
    pub desktop: DesktopMode,
    /// A program and its arguments the agent runs for each approval that
    /// waits for the operator, with `{"agent", "session", "request"}` as
    /// JSON on stdin. Empty: none.
    pub command: Vec<String>,
    /// Seconds the command may run before its process group is killed.
    pub command_timeout_secs: u64,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            bell: true,
            title: true,
            desktop: DesktopMode::Auto,
            command: Vec::new(),
            command_timeout_secs: 10,
        }
    }
}

impl NotifyConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.command.first().is_some_and(|p| p.trim().is_empty()) {
            return Err(ConfigError::Invalid {
                key: "notify.command".into(),
                message: "the program (first element) must not be empty".into(),
            });
        }
        if self.command_timeout_secs == 0 || self.command_timeout_secs > MAX_COMMAND_SECS {
            return Err(ConfigError::Invalid {
                key: "notify.command_timeout_secs".into(),
                message: format!(
                    "{} is outside 1..={MAX_COMMAND_SECS}",
                    self.command_timeout_secs
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;
    use std::path::Path;

    #[test]
    fn the_section_parses_and_bad_values_are_named() {
        let text = r#"
[notify]
bell = false
desktop = "osc777"
command = ["notify-send", "vigil"]
command_timeout_secs = 5
"#;
        let cfg = Config::from_toml(text, Path::new("t.toml")).expect("parses");
        assert!(!cfg.notify.bell);
        assert!(cfg.notify.title);
        assert_eq!(cfg.notify.desktop, super::DesktopMode::Osc777);
        assert_eq!(cfg.notify.command, ["notify-send", "vigil"]);
        let bad = Config::from_toml("[notify]\ncommand = [\"\"]\n", Path::new("t.toml"));
        assert!(bad.unwrap_err().to_string().contains("notify.command"));
        let bad = Config::from_toml("[notify]\ndesktop = \"osc8\"\n", Path::new("t.toml"));
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("unknown variant `osc8`")
        );
        let bad = Config::from_toml("[notify]\ncommand_timeout_secs = 0\n", Path::new("t.toml"));
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("command_timeout_secs")
        );
    }
}
