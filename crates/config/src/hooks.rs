//! `[[hooks.decide]]` and `[[hooks.on]]`: programs or HTTP endpoints the
//! operator's organisation configures. A decide hook sees a gated call
//! before it is decided and answers allow / deny / ask; a lifecycle hook is
//! told that something happened (session start and end, a call finished,
//! an approval waiting, a turn failed). See docs/hooks.md.
//!
//! Plain data with its own checks; it never starts anything. A hook whose
//! failure would allow a call (`on_failure = "allow"`) is refused here: a
//! hook that crashes or hangs must never let a call run.

use serde::Deserialize;

use super::ConfigError;

/// Longest time a hook may run (or an endpoint answer) before it counts as
/// failed (its process group killed).
pub const MAX_TIMEOUT_SECS: u64 = 300;

/// `[hooks]`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HooksConfig {
    pub decide: Vec<toml::Spanned<DecideHookConfig>>,
    pub on: Vec<toml::Spanned<LifecycleHookConfig>>,
    /// `file:line` of each `[[hooks.decide]]` entry, filled in when read.
    #[serde(skip)]
    pub decide_origins: Vec<String>,
}

/// What to run: an argv list (run as is) or one string (run by `sh -c`,
/// as the PreToolUse hooks of other agent CLIs are written).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum HookCommand {
    Argv(Vec<String>),
    Shell(String),
}

impl HookCommand {
    /// The program and its arguments.
    pub fn argv(&self) -> Vec<String> {
        match self {
            HookCommand::Argv(v) => v.clone(),
            HookCommand::Shell(s) => vec!["sh".into(), "-c".into(), s.clone()],
        }
    }

    fn check(&self) -> Result<(), String> {
        let empty = match self {
            HookCommand::Argv(v) => v.first().is_none_or(|p| p.trim().is_empty()),
            HookCommand::Shell(s) => s.trim().is_empty(),
        };
        if empty {
            return Err("`command` must name a program".into());
        }
        Ok(())
    }
}

/// The input and answer form a decide hook speaks.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum HookFormat {
    /// vigil's own versioned JSON (`"version": 1`).
    #[default]
    Vigil,
    /// The PreToolUse hook format of Claude Code (exit 2 blocks; JSON
    /// `hookSpecificOutput.permissionDecision`, or `decision`).
    Pretooluse,
}

/// Which calls a decide hook sees.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HookMatch {
    /// Tool names (empty: every gated tool); `tool = "run_shell"` too.
    #[serde(alias = "tool", deserialize_with = "one_or_many")]
    pub tools: Vec<String>,
    /// Prefix words: a shell command matches when one of its simple
    /// commands starts with these words (empty: every call); one string is
    /// split at spaces (`command = "make test"`).
    #[serde(deserialize_with = "words")]
    pub command: Vec<String>,
}

/// One string or a list of strings.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

fn words<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => s.split_whitespace().map(String::from).collect(),
        OneOrMany::Many(v) => v,
    })
}

/// One `[[hooks.decide]]` entry as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DecideHookConfig {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub command: Option<HookCommand>,
    /// An HTTP(S) endpoint the input is POSTed to.
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub format: HookFormat,
    #[serde(default, rename = "match", alias = "matcher")]
    pub matcher: HookMatch,
    #[serde(default = "default_timeout", alias = "timeout")]
    pub timeout_secs: u64,
    /// What a failure (crash, time-out, nonsense answer) means: "ask"
    /// (default) or "deny". Never "allow".
    #[serde(default = "default_on_failure")]
    pub on_failure: String,
}

/// The tool names a decide hook's `match.tools` may name: vigil's own
/// tools, and the names Claude Code's PreToolUse format gives them. An MCP
/// tool is named `SERVER__TOOL` or `mcp__SERVER__TOOL` for a server of
/// `[mcp]`.
pub const HOOK_TOOL_NAMES: &[&str] = &[
    "run_shell",
    "read_file",
    "write_file",
    "edit",
    "fetch_url",
    "web_search",
    "time",
    "send-keys",
    "capture-pane",
    "tmux-create-session",
    "tmux-kill-session",
    "tmux-create-pane",
    "tmux-kill-pane",
    "request_tools",
    "Bash",
    "Read",
    "Write",
    "Edit",
    "WebFetch",
    "WebSearch",
];

/// Whether `name` in a matcher can ever name a call, given the `[mcp]`
/// server names.
fn names_a_tool(name: &str, servers: &[String]) -> bool {
    if HOOK_TOOL_NAMES.contains(&name) {
        return true;
    }
    let name = name.strip_prefix("mcp__").unwrap_or(name);
    let Some((server, tool)) = name.split_once("__") else {
        return false;
    };
    let safe = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    !tool.is_empty() && servers.iter().any(|s| s == server || safe(s) == server)
}

/// The lifecycle events a `[[hooks.on]]` entry can be told about.
pub const LIFECYCLE_EVENTS: &[&str] = &[
    "session_start",
    "session_end",
    "call_finished",
    "approval_waiting",
    "turn_failed",
];

/// One `[[hooks.on]]` entry as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LifecycleHookConfig {
    #[serde(default)]
    pub name: Option<String>,
    /// Which events (names from [`LIFECYCLE_EVENTS`]); empty: all.
    #[serde(default, alias = "event", deserialize_with = "one_or_many")]
    pub events: Vec<String>,
    pub command: HookCommand,
    #[serde(default = "default_timeout", alias = "timeout")]
    pub timeout_secs: u64,
}

fn default_timeout() -> u64 {
    10
}

fn default_on_failure() -> String {
    "ask".into()
}

/// What a failed decide hook means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    Ask,
    Deny,
}

impl DecideHookConfig {
    /// The checked `on_failure`.
    pub fn on_failure(&self) -> OnFailure {
        if self.on_failure == "deny" {
            OnFailure::Deny
        } else {
            OnFailure::Ask
        }
    }

    fn check(&self) -> Result<(), String> {
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err("set either `command` or `url`, not both".into()),
            (None, None) => return Err("needs a `command` or a `url`".into()),
            (Some(c), None) => c.check()?,
            (None, Some(url)) => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!("`url` {url} must start with http:// or https://"));
                }
            }
        }
        match self.on_failure.as_str() {
            "ask" | "deny" => {}
            "allow" => {
                return Err(
                    "on_failure = \"allow\" is not accepted: a hook that crashes or \
                            hangs must never let a call run (use \"ask\" or \"deny\")"
                        .into(),
                );
            }
            other => return Err(format!("on_failure `{other}`: use \"ask\" or \"deny\"")),
        }
        check_timeout(self.timeout_secs)
    }
}

fn check_timeout(secs: u64) -> Result<(), String> {
    if secs == 0 || secs > MAX_TIMEOUT_SECS {
        return Err(format!(
            "timeout_secs {secs} is outside 1..={MAX_TIMEOUT_SECS}"
        ));
    }
    Ok(())
}

impl HooksConfig {
    /// Record where each decide hook starts (`file:line`) in `text`.
    pub fn locate(&mut self, text: &str, file: &str) {
        self.decide_origins = self
            .decide
            .iter()
            .map(|h| {
                let start = h.span().start.min(text.len());
                let line = text[..start].matches('\n').count() + 1;
                format!("{file}:{line}")
            })
            .collect();
    }

    /// Where decide hook `i` (0-based) was written.
    pub fn decide_origin(&self, i: usize) -> String {
        self.decide_origins
            .get(i)
            .cloned()
            .unwrap_or_else(|| format!("hooks.decide[{}]", i + 1))
    }

    /// `servers`: the `[mcp]` server names (an MCP tool a matcher names
    /// must belong to one).
    pub(super) fn validate(&self, servers: &[String]) -> Result<(), ConfigError> {
        for (i, hook) in self.decide.iter().enumerate() {
            let hook = hook.get_ref();
            let unknown = hook
                .matcher
                .tools
                .iter()
                .find(|t| !names_a_tool(t, servers));
            let checked = match unknown {
                Some(t) => Err(format!(
                    "match.tools names `{t}`, which is no tool vigil has, so the hook would never \
                     see a call (vigil's tools and their PreToolUse names: {}; an MCP tool: \
                     SERVER__TOOL or mcp__SERVER__TOOL for a server of [mcp])",
                    HOOK_TOOL_NAMES.join(", ")
                )),
                None => hook.check(),
            };
            checked.map_err(|message| ConfigError::Invalid {
                key: format!("hooks.decide[{}] ({})", i + 1, self.decide_origin(i)),
                message,
            })?;
        }
        for (i, hook) in self.on.iter().enumerate() {
            let hook = hook.get_ref();
            let bad = hook
                .events
                .iter()
                .find(|e| !LIFECYCLE_EVENTS.contains(&e.as_str()));
            let checked = match bad {
                Some(e) => Err(format!(
                    "unknown event `{e}` (known: {})",
                    LIFECYCLE_EVENTS.join(", ")
                )),
                None => hook
                    .command
                    .check()
                    .and_then(|()| check_timeout(hook.timeout_secs)),
            };
            checked.map_err(|message| ConfigError::Invalid {
                key: format!("hooks.on[{}]", i + 1),
                message,
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;
    use std::path::Path;

    fn parse(text: &str) -> Result<Config, String> {
        Config::from_toml(text, Path::new("t.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn hooks_parse_with_their_lines_and_mistakes_are_named() {
        let cfg = parse(
            "[[hooks.decide]]\nname = \"no-rm\"\ncommand = [\"/bin/guard\"]\n\
             match = { tools = [\"run_shell\"], command = [\"rm\"] }\n\n\
             [[hooks.decide]]\nurl = \"http://127.0.0.1:9/decide\"\nformat = \"pretooluse\"\n\
             on_failure = \"deny\"\n\n[[hooks.on]]\nevents = [\"session_start\"]\n\
             command = \"echo hi\"\n",
        )
        .expect("parses");
        assert_eq!(cfg.hooks.decide.len(), 2);
        assert_eq!(cfg.hooks.decide_origin(1), "t.toml:6");
        let first = cfg.hooks.decide[0].get_ref();
        assert_eq!(first.matcher.command, ["rm"]);
        assert_eq!(first.on_failure(), super::OnFailure::Ask);
        assert_eq!(
            cfg.hooks.decide[1].get_ref().on_failure(),
            super::OnFailure::Deny
        );
        assert_eq!(
            cfg.hooks.on[0].get_ref().command.argv(),
            ["sh", "-c", "echo hi"]
        );

        let allow = parse("[[hooks.decide]]\ncommand = \"x\"\non_failure = \"allow\"\n");
        let allow = allow.unwrap_err();
        assert!(allow.contains("hooks.decide[1] (t.toml:1)"), "{allow}");
        assert!(allow.contains("never let a call run"), "{allow}");
        let both = parse("[[hooks.decide]]\ncommand = \"x\"\nurl = \"http://h/\"\n");
        assert!(both.unwrap_err().contains("not both"));
        let none = parse("[[hooks.decide]]\nname = \"x\"\n");
        assert!(none.unwrap_err().contains("needs a `command` or a `url`"));
        let event = parse("[[hooks.on]]\nevents = [\"boot\"]\ncommand = \"x\"\n");
        assert!(event.unwrap_err().contains("unknown event `boot`"));
        let typo = parse("[[hooks.decide]]\ncommand = \"x\"\nmatch = { tools = [\"Bsh\"] }\n");
        let typo = typo.unwrap_err();
        assert!(
            typo.contains("hooks.decide[1] (t.toml:1)") && typo.contains("`Bsh`"),
            "{typo}"
        );
        let mcp = "[mcp.servers.fs]\ncommand = \"x\"\n[[hooks.decide]]\ncommand = \"x\"\n";
        for ok in [
            "Bash",
            "send-keys",
            "read_file",
            "mcp__fs__write",
            "fs__write",
        ] {
            let text = format!("{mcp}match = {{ tools = [\"{ok}\"] }}\n");
            assert!(parse(&text).is_ok(), "{ok}: {:?}", parse(&text));
        }
        let text = format!("{mcp}match = {{ tools = [\"mcp__other__write\"] }}\n");
        assert!(parse(&text).is_err());
        let slow = parse("[[hooks.decide]]\ncommand = \"x\"\ntimeout_secs = 0\n");
        assert!(slow.unwrap_err().contains("timeout_secs 0"));

        // The short forms: `timeout`, one tool, the words in one string, one event.
        let short = parse(
            "[[hooks.decide]]\ncommand = \"x\"\ntimeout = 3\n\
             match = { tool = \"run_shell\", command = \"make test\" }\n\
             [[hooks.on]]\nevent = \"turn_failed\"\ncommand = \"y\"\ntimeout = 4\n",
        )
        .expect("parses");
        let d = short.hooks.decide[0].get_ref();
        assert_eq!(
            (d.timeout_secs, d.matcher.tools.clone()),
            (3, vec!["run_shell".to_string()])
        );
        assert_eq!(d.matcher.command, ["make", "test"]);
        let on = short.hooks.on[0].get_ref();
        assert_eq!(
            (on.events.clone(), on.timeout_secs),
            (vec!["turn_failed".to_string()], 4)
        );
    }
}
