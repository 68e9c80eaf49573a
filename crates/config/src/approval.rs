//! `[[approval.rules]]`: the operator's policy file, read and validated at
//! start-up. Each rule names a tool (default `run_shell`), what it matches
//! (`command` prefix words, a `pattern` glob on the parsed words, or a `path`
//! glob for file tools) and a `decision` (`allow`, `ask`, `deny`). Errors
//! name the file and the rule's line. Matching, and the checks that need
//! to know what a program does (an `allow` on a bare code runner), are
//! `policy::rules`'s job; this module only reads and checks the data.

use serde::Deserialize;

/// `[approval]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalConfig {
    pub rules: Vec<toml::Spanned<RuleConfig>>,
    /// `file:line` of each rule, filled in when the file is read.
    #[serde(skip)]
    pub origins: Vec<String>,
}

/// One `[[approval.rules]]` entry as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default = "default_tool")]
    pub tool: String,
    /// Prefix words of the command (`["git", "status"]`).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// A glob (`*`, `?`) over the command's words joined by single spaces.
    #[serde(default)]
    pub pattern: Option<String>,
    /// A glob over the canonical path a file tool's call acts on (`*` never
    /// crosses `/`, `**` does; relative: from the agent's directory).
    #[serde(default)]
    pub path: Option<String>,
    pub decision: RuleDecision,
    /// Preview the command's effects in a throwaway view as soon as it
    /// waits for the operator (with `decision = "ask"` only).
    #[serde(default)]
    pub preview: bool,
}

/// The tools whose calls declare the paths they act on (what a `path`
/// rule can match).
pub const PATH_TOOLS: &[&str] = &["write_file", "edit", "read_file"];

fn default_tool() -> String {
    "run_shell".into()
}

/// What a matching rule decides.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RuleDecision {
    Allow,
    Ask,
    Deny,
}

impl RuleDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleDecision::Allow => "allow",
            RuleDecision::Ask => "ask",
            RuleDecision::Deny => "deny",
        }
    }
}

impl ApprovalConfig {
    /// Record where each rule starts (`file:line`) in `text`.
    pub fn locate(&mut self, text: &str, file: &str) {
        self.origins = self
            .rules
            .iter()
            .map(|r| {
                let start = r.span().start.min(text.len());
                let line = text[..start].matches('\n').count() + 1;
                format!("{file}:{line}")
            })
            .collect();
    }

    /// Where rule `i` (0-based) was written.
    pub fn origin(&self, i: usize) -> String {
        self.origins
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("approval.rules[{}]", i + 1))
    }

    /// Check every rule; the error names the rule and where it is.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (i, rule) in self.rules.iter().enumerate() {
            let key = format!("approval.rules[{}] ({})", i + 1, self.origin(i));
            rule.get_ref().check().map_err(|m| (key, m))?;
        }
        Ok(())
    }
}

impl RuleConfig {
    fn check(&self) -> Result<(), String> {
        let set = [
            self.command.is_some(),
            self.pattern.is_some(),
            self.path.is_some(),
        ];
        if set.iter().filter(|s| **s).count() != 1 {
            return Err("set exactly one of `command`, `pattern` or `path`".into());
        }
        if self.tool.trim().is_empty() {
            return Err("`tool` must not be empty".into());
        }
        let shell = self.tool == "run_shell";
        if self.preview && (self.decision != RuleDecision::Ask || !shell) {
            return Err(
                "`preview = true` needs `decision = \"ask\"` on run_shell (a command the operator \
                 decides after seeing its effects)"
                    .into(),
            );
        }
        if let Some(words) = &self.command {
            if !shell {
                return Err("`command` is for run_shell; use `path` for file tools".into());
            }
            if words.is_empty() || words.iter().any(|w| w.is_empty()) {
                return Err("`command` must list one or more non-empty words".into());
            }
        }
        if let Some(p) = &self.pattern
            && p.trim().is_empty()
        {
            return Err("`pattern` must not be empty".into());
        }
        if let Some(p) = &self.path {
            if shell {
                return Err("`path` is for file tools (write_file, edit…), not run_shell".into());
            }
            if !PATH_TOOLS.contains(&self.tool.as_str()) && self.tool != "*" {
                return Err(format!(
                    "`path` is for the file tools ({}) or `*`: `{}` declares no path vigil \
                     can resolve (an MCP tool's arguments are not paths it knows), so a path \
                     rule on it could only match words of its summary; approve its calls \
                     one by one (`a` on one approves exactly those arguments)",
                    PATH_TOOLS.join(", "),
                    self.tool
                ));
            }
            if p.trim().is_empty() {
                return Err("`path` must not be empty".into());
            }
            if p.split('/').any(|part| part == "..") {
                return Err(format!(
                    "`path` {p:?} contains `..`: write the directory it means (paths are \
                     compared after symlinks and `..` are resolved)"
                ));
            }
        }
        Ok(())
    }
}
