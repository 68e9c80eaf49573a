//! The environment of every process vigil starts for a tool: vigil's own
//! environment minus its key variables and minus names that look like
//! secrets (like Codex's shell environment policy).
//!
//! A name is dropped when it is one of vigil's key variables
//! (`VIGIL_API_KEY`, the variable `[model] api_key_env` names) or matches a
//! pattern (`*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*` and
//! `[tools] env_exclude`, case-insensitive, `*` matching any run of
//! characters); a name listed in `[tools] env_passthrough` is kept on
//! purpose. The policy is installed once at start-up ([`install`]); until
//! then the defaults apply, so a process started early is never given a
//! secret. This module only decides names; it never starts anything and
//! never reads a value except to copy it.

use std::ffi::{OsStr, OsString};
use std::sync::{Arc, RwLock};

use vigil_config::ConfigError;

/// vigil's own key variable; always dropped unless passed through.
pub const VIGIL_KEY_VAR: &str = "VIGIL_API_KEY";

/// Name patterns dropped by default.
pub const DEFAULT_EXCLUDE: &[&str] = &[
    "*KEY*",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_PWD",
    "*CREDENTIAL*",
    "*DATABASE_URL*",
    "*_DSN",
    "*WEBHOOK*",
    "*_AUTH",
    "*AUTH_CONFIG*",
];

/// Why an environment setting is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvPolicyError {
    #[error("`{pattern}` in {key} is not a variable-name pattern: {why}")]
    BadPattern {
        key: &'static str,
        pattern: String,
        why: &'static str,
    },
}

impl EnvPolicyError {
    /// The config key at fault.
    pub fn key(&self) -> &'static str {
        match self {
            EnvPolicyError::BadPattern { key, .. } => key,
        }
    }
}

/// Which variables a tool process gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    /// Exact names always dropped (vigil's key variables), upper-cased.
    keys: Vec<String>,
    /// Upper-cased glob patterns.
    exclude: Vec<String>,
    /// Upper-cased names kept whatever the patterns say.
    passthrough: Vec<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy {
            keys: vec![VIGIL_KEY_VAR.into()],
            exclude: DEFAULT_EXCLUDE.iter().map(|s| s.to_string()).collect(),
            passthrough: Vec::new(),
        }
    }
}

fn check(key: &'static str, pattern: &str) -> Result<String, EnvPolicyError> {
    let bad = |why| EnvPolicyError::BadPattern {
        key,
        pattern: pattern.to_string(),
        why,
    };
    if pattern.trim().is_empty() {
        return Err(bad("it is empty"));
    }
    if pattern.contains('=') || pattern.contains('\0') || pattern.chars().any(char::is_whitespace) {
        return Err(bad("it holds `=`, a NUL or a space"));
    }
    Ok(pattern.to_ascii_uppercase())
}

impl EnvPolicy {
    /// The policy `config` asks for: its key variable and its
    /// `[tools] env_exclude` / `env_passthrough`.
    pub fn from_config(config: &vigil_config::Config) -> Result<EnvPolicy, ConfigError> {
        let keys: Vec<String> = config.model.api_key_env.iter().cloned().collect();
        EnvPolicy::new(
            &keys,
            &config.tools.env_exclude,
            &config.tools.env_passthrough,
        )
        .map_err(|e| ConfigError::Invalid {
            key: e.key().into(),
            message: e.to_string(),
        })
    }

    /// The defaults plus `key_vars` (names of variables holding vigil's
    /// keys), `exclude` patterns and `passthrough` names from the config.
    pub fn new(
        key_vars: &[String],
        exclude: &[String],
        passthrough: &[String],
    ) -> Result<Self, EnvPolicyError> {
        let mut p = EnvPolicy::default();
        for k in key_vars {
            p.keys.push(check("model.api_key_env", k)?);
        }
        for e in exclude {
            p.exclude.push(check("tools.env_exclude", e)?);
        }
        for n in passthrough {
            let n = check("tools.env_passthrough", n)?;
            if n.contains('*') {
                return Err(EnvPolicyError::BadPattern {
                    key: "tools.env_passthrough",
                    pattern: n,
                    why: "passthrough takes exact names, not patterns",
                });
            }
            p.passthrough.push(n);
        }
        Ok(p)
    }

    /// Whether a variable of this name reaches tool processes.
    pub fn keeps(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            // A name that is not UTF-8 cannot be vetted: drop it.
            return false;
        };
        let upper = name.to_ascii_uppercase();
        if self.passthrough.contains(&upper) {
            return true;
        }
        !self.keys.contains(&upper) && !self.exclude.iter().any(|p| glob(p, &upper))
    }

    /// The variables of `vars` that are kept.
    pub fn filter(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(k, _)| self.keeps(k)).collect()
    }

    /// Give `cmd` vigil's environment as filtered by this policy (and
    /// nothing inherited). Variables set on `cmd` before are dropped too:
    /// set deliberate ones after this call.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        cmd.env_clear().envs(self.filter(std::env::vars_os()));
    }
}

/// A name glob ([`vigil_config::glob`]: `*` any run, `?` one character).
fn glob(pattern: &str, name: &str) -> bool {
    vigil_config::glob::glob_matches(pattern, name, true)
}

static CURRENT: RwLock<Option<Arc<EnvPolicy>>> = RwLock::new(None);

/// Make `policy` the one every later tool process gets.
pub fn install(policy: EnvPolicy) {
    let mut slot = CURRENT.write().unwrap_or_else(|p| p.into_inner());
    *slot = Some(Arc::new(policy));
}

/// The installed policy (the defaults before [`install`]).
pub fn current() -> Arc<EnvPolicy> {
    let slot = CURRENT.read().unwrap_or_else(|p| p.into_inner());
    slot.clone().unwrap_or_default()
}

/// Give a tool process the filtered environment ([`EnvPolicy::apply`]).
pub fn apply_tool_env(cmd: &mut std::process::Command) {
    current().apply(cmd);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keeps(p: &EnvPolicy, name: &str) -> bool {
        p.keeps(OsStr::new(name))
    }

    #[test]
    fn defaults_drop_keys_and_secret_looking_names() {
        let p = EnvPolicy::default();
        for name in [
            "VIGIL_API_KEY",
            "OPENAI_API_KEY",
            "aws_secret_access_key",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "KEY",
            "my_Secret",
        ] {
            assert!(!keeps(&p, name), "{name} kept");
        }
        for name in ["PATH", "HOME", "LANG", "TERM", "SSH_AUTH_SOCK", "KE_Y"] {
            assert!(keeps(&p, name), "{name} dropped");
        }
    }

    #[test]
    fn config_adds_keys_patterns_and_passthrough() {
        let p = EnvPolicy::new(
            &["LLM_CRED".into()],
            &["AWS_*".into(), "*_URL".into()],
            &["CI_JOB_TOKEN".into()],
        )
        .unwrap();
        assert!(!keeps(&p, "LLM_CRED"));
        assert!(!keeps(&p, "aws_region"));
        assert!(!keeps(&p, "DATABASE_URL"));
        assert!(keeps(&p, "URL_BASE"));
        assert!(keeps(&p, "CI_JOB_TOKEN"));
        assert!(keeps(&p, "ci_job_token"));
        assert!(!keeps(&p, "OTHER_TOKEN"));
    }

    #[test]
    fn bad_patterns_are_named() {
        let e = EnvPolicy::new(&[], &["A B".into()], &[]).unwrap_err();
        assert!(e.to_string().contains("tools.env_exclude"), "{e}");
        let e = EnvPolicy::new(&[], &[], &["*TOKEN".into()]).unwrap_err();
        assert!(e.to_string().contains("exact names"), "{e}");
        assert!(EnvPolicy::new(&[], &["".into()], &[]).is_err());
    }

    #[test]
    fn globs_match_anywhere_star_allows() {
        assert!(glob("*KEY*", "KEY"));
        assert!(glob("*KEY*", "A_KEY_B"));
        assert!(glob("AWS_*", "AWS_"));
        assert!(!glob("AWS_*", "XAWS_"));
        assert!(glob("A*B*C", "AXXBYYC"));
        assert!(!glob("A*B*C", "AC"));
        assert!(!glob("AB*BA", "ABA"));
        assert!(glob("EXACT", "EXACT"));
        assert!(!glob("EXACT", "EXACTLY"));
    }
}
