//! What a command that runs unasked may read and see: the readable places
//! of the trial view and the kernel sandbox, and the environment variables
//! they get (`[sandbox]` in the config file).
//!
//! Both are allow-lists. The readable world is the command's working tree,
//! the system's program and library places ([`SYSTEM_PLACES`]), the parts
//! of `/etc` every user may read, and a short list of per-tool homes
//! ([`TOOL_HOMES`]: what builds and tools read, never a credential file,
//! which stays a secret place). `readable_add` widens it (the operator's
//! grant), `readable_remove` narrows it. The environment is
//! [`ENV_ALLOW`] plus `env_add`; nothing else is passed.
//!
//! This module only names places and names; it never opens a file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The system's program and library places (and the read-only kernel
/// facts builds ask for: the CPU list). Not `/sys/fs/cgroup` (cargo and
/// node read their limits there): over it the view sets its own bounds,
/// and a fork bomb run as an ordinary user went unbounded with it readable.
pub const SYSTEM_PLACES: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/sys/devices/system/cpu",
];

/// Per-tool homes builds and tools read (their credential files are
/// secret places and stay masked inside them).
pub const TOOL_HOMES: &[&str] = &[
    "~/.gitconfig",
    "~/.config/git",
    "~/.cargo",
    "~/.rustup",
    "~/.pyenv",
    "~/.nvm",
    "~/.local/bin",
    "~/.local/lib",
    "~/go/pkg/mod",
    "~/.m2/repository",
];

/// The variables a trial and a sandboxed command get (and `LC_*`).
pub const ENV_ALLOW: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "COLUMNS", "LINES",
    "NO_COLOR", "SHELL",
];

/// The default cap on a trial's output kept on disk.
pub const DEFAULT_TRIAL_OUTPUT_CAP_MB: u64 = 64;

/// `[sandbox]`: the readable places and the environment of commands that
/// run unasked (trials, the kernel sandbox).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// Places added to the readable world (absolute or `~/…`).
    pub readable_add: Vec<String>,
    /// Entries of the default lists taken out (as written there).
    pub readable_remove: Vec<String>,
    /// Variable names added to the environment's allow-list.
    pub env_add: Vec<String>,
    /// Most megabytes of a trial's output kept; past it the trial is asked.
    pub trial_output_cap_mb: Option<u64>,
}

impl SandboxConfig {
    /// What is wrong with the section, in words (`None`: nothing).
    pub fn validate(&self) -> Result<(), String> {
        for p in self.readable_add.iter().chain(&self.readable_remove) {
            if !(p.starts_with('/') || p.starts_with("~/")) {
                return Err(format!(
                    "`{p}` is not a place: write an absolute path or one starting with ~/"
                ));
            }
            if p.split('/').any(|c| c == "..") {
                return Err(format!("`{p}` holds `..`"));
            }
        }
        for n in &self.env_add {
            let ok = !n.is_empty()
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(format!("`{n}` in env_add is not a variable name"));
            }
        }
        if self.trial_output_cap_mb == Some(0) {
            return Err("trial_output_cap_mb must be more than 0".into());
        }
        Ok(())
    }

    /// The readable places this section names, with `~` as `home`
    /// (system places first, then tool homes, then the additions); an
    /// entry under `~` is dropped when there is no home.
    pub fn places(&self, home: Option<&Path>) -> ReadablePlaces {
        let kept = |p: &&&str| !self.readable_remove.iter().any(|r| r == **p);
        let expand = |p: &str| -> Option<PathBuf> {
            match p.strip_prefix("~/") {
                Some(rest) => home.map(|h| h.join(rest)),
                None => Some(PathBuf::from(p)),
            }
        };
        let system = SYSTEM_PLACES
            .iter()
            .filter(kept)
            .filter_map(|p| expand(p))
            .collect();
        let mut homes: Vec<PathBuf> = TOOL_HOMES
            .iter()
            .filter(kept)
            .filter_map(|p| expand(p))
            .collect();
        homes.extend(self.readable_add.iter().filter_map(|p| expand(p)));
        ReadablePlaces { system, homes }
    }

    /// The cap on a trial's output, in bytes.
    pub fn trial_output_cap(&self) -> u64 {
        self.trial_output_cap_mb
            .unwrap_or(DEFAULT_TRIAL_OUTPUT_CAP_MB)
            .saturating_mul(1024 * 1024)
    }

    /// Whether a variable of this name is passed.
    pub fn env_allowed(&self, name: &str) -> bool {
        ENV_ALLOW.contains(&name)
            || name.starts_with("LC_")
            || self.env_add.iter().any(|n| n == name)
    }
}

/// The readable places besides a command's working tree (not yet checked
/// for existence: a place that does not exist is skipped by the user).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadablePlaces {
    /// System places: given whole, but entries their owner made unreadable
    /// to others.
    pub system: Vec<PathBuf>,
    /// Tool homes and the operator's additions.
    pub homes: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_expand_home_and_follow_add_and_remove() {
        let c = SandboxConfig {
            readable_add: vec!["/opt/tools".into(), "~/.cache/ccache".into()],
            readable_remove: vec!["~/.pyenv".into(), "/lib32".into()],
            ..SandboxConfig::default()
        };
        let p = c.places(Some(Path::new("/home/u")));
        assert!(p.system.contains(&PathBuf::from("/usr")));
        assert!(!p.system.contains(&PathBuf::from("/lib32")));
        assert!(p.homes.contains(&PathBuf::from("/home/u/.cargo")));
        assert!(!p.homes.contains(&PathBuf::from("/home/u/.pyenv")));
        assert!(p.homes.contains(&PathBuf::from("/opt/tools")));
        assert!(p.homes.contains(&PathBuf::from("/home/u/.cache/ccache")));
        let none = c.places(None);
        assert!(none.homes.iter().all(|h| !h.starts_with("/home")));
    }

    #[test]
    fn bad_entries_are_named() {
        let bad = |c: SandboxConfig| c.validate().unwrap_err();
        let e = bad(SandboxConfig {
            readable_add: vec!["relative".into()],
            ..Default::default()
        });
        assert!(e.contains("relative"), "{e}");
        let e = bad(SandboxConfig {
            env_add: vec!["A B".into()],
            ..Default::default()
        });
        assert!(e.contains("A B"), "{e}");
        assert!(
            SandboxConfig {
                trial_output_cap_mb: Some(0),
                ..Default::default()
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn the_environment_is_an_allow_list() {
        let c = SandboxConfig {
            env_add: vec!["CARGO_HOME".into()],
            ..Default::default()
        };
        for ok in ["PATH", "HOME", "LC_ALL", "CARGO_HOME"] {
            assert!(c.env_allowed(ok), "{ok}");
        }
        for no in [
            "SSHPASS",
            "AWS_SECRET_ACCESS_KEY",
            "LD_PRELOAD",
            "BASH_ENV",
            "cargo_home",
        ] {
            assert!(!c.env_allowed(no), "{no}");
        }
    }
}
