//! The policy file at work: which `[[approval.rules]]` rule decides a gated
//! call. Rules are tried in order, and a matching `deny` wins over any
//! `allow` or `ask`. For commands, rules read the parsed command
//! ([`vigil_shell`]):
//! - `deny` / `ask` with `command` words match any program the text runs
//!   ([`shell::program_runs`]: chained, piped, substituted, and through
//!   wrappers, `xargs`, `find -exec`, `sh -c` / `eval` text and global
//!   options such as `git -C`) whose words start with them, the program
//!   compared by base name; with `pattern`, any such run whose words
//!   (joined by single spaces) match the glob. A text the parser rejects is
//!   matched on its whitespace-separated words. A command whose programs
//!   cannot all be told ([`PolicyRules::cannot_tell`]) is asked wherever
//!   such a rule could apply, never run unasked. Rules on `run_shell` also
//!   read the text `send-keys` types into a pane (deny and ask only).
//! - `allow` matches only a command the parser fully understands: one plain
//!   simple command whose literal words start with the rule's words and
//!   whose remaining words are allowed for unasked running (the prefix-rule
//!   test, [`prefix_rule::covers_plain`]), or whose literal words match the
//!   `pattern`; never one vigil rates high.
//! - `path` globs match the canonical paths a file tool's call acts on
//!   ([`Call::paths`]: symlinks and `..` resolved before anything is
//!   compared, relative paths against the agent's working directory), never
//!   the words of its summary. In a path glob `*` and `?` never match `/`;
//!   `**` matches any run of characters, `/` included (`notes/**` is every
//!   file below `notes`). A relative glob is anchored at the agent's working
//!   directory when the rules are read, a glob with `..` is refused there,
//!   and the glob's literal leading directories, when they exist, are
//!   resolved on this machine too (a rule on `/var/run/x/*` also covers
//!   `/run/x/*` when `/var/run` is a link). A call that declares no paths (a shell command, an MCP tool)
//!   never matches a path rule: the configuration refuses `path` on any tool
//!   but the file tools and `*`.
//!
//! It decides which rule applies; the broker turns that into a decision.

use std::path::{Component, Path, PathBuf};

use crate::prefix_rule;
use vigil_config::ConfigError;
use vigil_config::approval::{ApprovalConfig, RuleDecision};
use vigil_protocol::approval::{GateInfo, Risk};
use vigil_shell::{self as shell, Script};

/// A rule ready to match.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// 1-based position in the file.
    pub number: usize,
    pub name: Option<String>,
    pub tool: String,
    pub decision: RuleDecision,
    /// Preview the command before asking (`preview = true`).
    pub preview: bool,
    matcher: Matcher,
    /// `file:line`.
    pub origin: String,
}

#[derive(Debug, Clone, PartialEq)]
enum Matcher {
    Command(Vec<String>),
    Pattern(String),
    /// Absolute path globs: the rule as anchored, and with its literal
    /// leading directories resolved when that differs.
    Path(Vec<String>),
}

impl Rule {
    /// How the rule is named to the operator: `policy rule 3 "name"
    /// (config.toml:41)`.
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("policy rule {} \"{n}\" ({})", self.number, self.origin),
            None => format!("policy rule {} ({})", self.number, self.origin),
        }
    }
}

/// The rules of one policy file, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyRules(Vec<Rule>);

/// What the call is, for matching.
pub struct Call<'a> {
    pub tool: &'a str,
    pub gate: &'a GateInfo,
    /// The command read once (its parse and programs), for shell text.
    pub command: Option<&'a shell::Command>,
    pub estimate: Risk,
    /// The canonical paths the call acts on (file tools; empty otherwise).
    pub paths: &'a [String],
    /// The same paths as the model wrote them (absolute, `..` applied
    /// without following symlinks), where they differ: `deny` and `ask`
    /// rules match these too, so a symlink (under a rule's wildcard, or made
    /// after vigil started) cannot carry a call out of a denied tree.
    pub written: &'a [String],
}

impl PolicyRules {
    /// What the configuration's checks cannot know: an `allow` rule on a
    /// bare program whose arguments can run any code is refused. The error
    /// names the rule and where it was written.
    pub fn check(config: &ApprovalConfig) -> Result<(), ConfigError> {
        for (i, rule) in config.rules.iter().enumerate() {
            let r = rule.get_ref();
            if let Some(words) = &r.command
                && r.decision == RuleDecision::Allow
                && words.len() == 1
                && prefix_rule::runs_code(&words[0])
            {
                return Err(ConfigError::Invalid {
                    key: format!("approval.rules[{}] ({})", i + 1, config.origin(i)),
                    message: format!(
                        "an allow rule on bare `{}` is refused: its arguments can make it run \
                         any code; allow longer prefixes (e.g. [\"{}\", \"status\"]) instead",
                        words[0], words[0]
                    ),
                });
            }
        }
        Ok(())
    }

    /// The rules, relative path globs anchored at this process's working
    /// directory (where the file tools resolve relative paths too).
    pub fn from_config(config: &ApprovalConfig) -> PolicyRules {
        let base = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        PolicyRules::from_config_at(config, &base)
    }

    /// The rules, relative path globs anchored at `base`.
    pub fn from_config_at(config: &ApprovalConfig, base: &Path) -> PolicyRules {
        let rules = config
            .rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let r = r.get_ref();
                let matcher = match (&r.command, &r.pattern, &r.path) {
                    (Some(words), _, _) => Matcher::Command(words.clone()),
                    (None, Some(p), _) => Matcher::Pattern(p.clone()),
                    (None, None, Some(p)) => Matcher::Path(path_globs(p, base)),
                    (None, None, None) => Matcher::Pattern(String::new()),
                };
                Rule {
                    number: i + 1,
                    name: r.name.clone(),
                    tool: r.tool.clone(),
                    decision: r.decision,
                    preview: r.preview,
                    matcher,
                    origin: config.origin(i),
                }
            })
            .collect();
        PolicyRules(rules)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The rule that decides `call`: the first matching `deny` if any, else
    /// the first matching rule.
    pub fn decide(&self, call: &Call) -> Option<&Rule> {
        let mut matching = self.0.iter().filter(|r| r.matches(call));
        let first = matching.next()?;
        if first.decision == RuleDecision::Deny {
            return Some(first);
        }
        let deny = self
            .0
            .iter()
            .filter(|r| r.decision == RuleDecision::Deny)
            .find(|r| r.matches(call));
        Some(deny.unwrap_or(first))
    }
}

impl PolicyRules {
    /// Whether a `deny` or `ask` rule could apply to a call of `tool` (a
    /// call its tool runs without asking is still screened by them).
    pub fn guards(&self, tool: &str) -> bool {
        self.0
            .iter()
            .any(|r| r.decision != RuleDecision::Allow && tool_applies(&r.tool, r.decision, tool))
    }

    /// Why the call is asked although no rule matched it: it is a command
    /// some of whose programs cannot be told ("cannot tell which program
    /// runs: …"), and a `deny` or `ask` rule on commands could apply to it.
    pub fn cannot_tell(&self, call: &Call) -> Option<String> {
        let command = call.command?;
        let guarded = self.0.iter().any(|r| {
            r.decision != RuleDecision::Allow
                && !matches!(r.matcher, Matcher::Path(_))
                && tool_applies(&r.tool, r.decision, call.tool)
        });
        if !guarded {
            return None;
        }
        crate::blind::blind_spot(command)
    }

    /// Whether a `preview = true` rule matches `call`.
    pub fn wants_preview(&self, call: &Call) -> bool {
        self.0.iter().any(|r| r.preview && r.matches(call))
    }
}

impl Rule {
    fn matches(&self, call: &Call) -> bool {
        if !tool_applies(&self.tool, self.decision, call.tool) {
            return false;
        }
        match (&self.matcher, call.command) {
            (Matcher::Path(globs), _) => {
                // An allow needs the real path; a deny or ask takes either.
                let written = match self.decision {
                    RuleDecision::Allow => &[][..],
                    _ => call.written,
                };
                call.paths
                    .iter()
                    .chain(written)
                    .any(|p| globs.iter().any(|g| path_glob_match(g, p)))
            }
            (_, None) => false,
            (m, Some(command)) if self.decision == RuleDecision::Allow => {
                call.estimate != Risk::High && allow_matches(m, &command.script)
            }
            (m, Some(command)) => command.runs.runs.iter().any(|words| match m {
                Matcher::Command(rule) => starts_with(words, rule),
                Matcher::Pattern(glob) => glob_match(glob, &words.join(" ")),
                Matcher::Path(_) => false,
            }),
        }
    }
}

fn allow_matches(m: &Matcher, script: &Script) -> bool {
    if script.single().is_none() {
        return false;
    }
    match m {
        Matcher::Command(rule) => {
            prefix_rule::plain_words(script).is_some_and(|w| prefix_rule::covers_plain(rule, &w))
        }
        Matcher::Pattern(glob) => {
            prefix_rule::plain_words(script).is_some_and(|w| glob_match(glob, &w.join(" ")))
        }
        Matcher::Path(_) => false,
    }
}

/// Whether a rule on `rule_tool` reads a call of `tool`: the same tool,
/// `*`, or `run_shell` for the text `send-keys` types (not for `allow`:
/// a pane's keys never run unasked).
fn tool_applies(rule_tool: &str, decision: RuleDecision, tool: &str) -> bool {
    rule_tool == tool
        || rule_tool == "*"
        || (rule_tool == "run_shell" && tool == "send-keys" && decision != RuleDecision::Allow)
}

fn starts_with(words: &[String], rule: &[String]) -> bool {
    words.len() >= rule.len() && words.iter().zip(rule).all(|(w, r)| w == r)
}

/// A path rule's glob made absolute: anchored at `base` when relative,
/// `.` components dropped; then the same glob with its literal leading
/// directories (those before the first wildcard) resolved on this machine
/// when they exist and that differs. (`..` is refused when the configuration is read.)
fn path_globs(glob: &str, base: &Path) -> Vec<String> {
    let glob = glob.trim();
    let joined = if glob.starts_with('/') {
        PathBuf::from(glob)
    } else {
        base.join(glob)
    };
    let mut literal = PathBuf::from("/");
    let mut rest: Vec<String> = Vec::new();
    for c in joined.components() {
        let Component::Normal(name) = c else { continue };
        let name = name.to_string_lossy().into_owned();
        if rest.is_empty() && !name.contains(['*', '?']) {
            literal.push(&name);
        } else {
            rest.push(name);
        }
    }
    let join = |dir: &Path| {
        let mut g = dir.to_string_lossy().into_owned();
        for part in &rest {
            if !g.ends_with('/') {
                g.push('/');
            }
            g.push_str(part);
        }
        g
    };
    let mut globs = vec![join(&literal)];
    if let Ok(real) = std::fs::canonicalize(&literal)
        && real != literal
    {
        globs.push(join(&real));
    }
    globs
}

/// A path glob against a canonical path ([`vigil_config::glob`]: `*` and
/// `?` stop at `/`, `**` does not).
pub fn path_glob_match(glob: &str, path: &str) -> bool {
    vigil_config::glob::glob_matches(glob, path, true)
}

/// A command pattern against a command line ([`vigil_config::glob`]: `*`
/// matches any run, `/` included).
pub fn glob_match(glob: &str, text: &str) -> bool {
    vigil_config::glob::glob_matches(glob, text, false)
}

#[cfg(test)]
mod tests;
