//! A decide hook's side of the contract: which calls it sees (the
//! matcher), the versioned JSON it is given (input v1) and how its answer
//! (answer v1) is read. Pure data and parsing: nothing here starts a
//! process or opens a connection, and nothing here decides how an answer
//! combines with the policy (that is the broker's job, `approval/hooked.rs`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use vigil_config::hooks::HookMatch;
use vigil_protocol::approval::{ApprovalRequest, Risk};
use vigil_shell::Command;

/// The version of the input and answer this vigil speaks.
pub const VERSION: u32 = 1;

/// What a hook answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    Allow,
    Deny,
    Ask,
    /// No opinion (a PreToolUse hook that exits 0 and prints nothing): the
    /// policy decides as if the hook were not there.
    Abstain,
}

impl Answer {
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Allow => "allow",
            Answer::Deny => "deny",
            Answer::Ask => "ask",
            Answer::Abstain => "abstain",
        }
    }
}

/// One hook's verdict on one call, as the broker combines it and the
/// record keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The hook's name and where it is configured (`no-rm (config.toml:12)`).
    pub hook: String,
    pub answer: Answer,
    pub reason: String,
    /// The hook failed (crash, time-out, bad answer): `answer` is its
    /// `on_failure` and `reason` says what went wrong.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

impl Verdict {
    /// One line for the card and the record: `hook `no-rm` (c.toml:3): deny — why`.
    pub fn line(&self) -> String {
        let failed = if self.failed { " (failed)" } else { "" };
        let reason = if self.reason.is_empty() {
            String::new()
        } else {
            format!(" — {}", self.reason)
        };
        format!(
            "hook {}{failed}: {}{reason}",
            self.hook,
            self.answer.as_str()
        )
    }
}

/// The call as a hook reads it (input v1).
#[derive(Debug, Clone, Serialize)]
pub struct Input {
    pub version: u32,
    /// Always "decide" (lifecycle hooks get their own event names).
    pub event: &'static str,
    pub session_id: Option<String>,
    pub call_id: String,
    pub tool: String,
    /// The call's arguments as the model sent them (validated).
    pub arguments: Value,
    /// The action in one line (the command, the path, the URL…).
    pub action: String,
    /// For shell commands: how vigil's shell parser reads the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<ParsedCommand>,
    pub estimate: Estimate,
    /// The model's own claims, when the tool carries them.
    pub model: ModelClaims,
    /// The directory the command will run in, when known.
    pub cwd: Option<String>,
    /// Where it will run (local, a tmux session, an ssh host, a container).
    pub target: String,
}

/// A shell command's parse.
#[derive(Debug, Clone, Serialize)]
pub struct ParsedCommand {
    /// The words of each simple command (quotes removed; expanding pieces
    /// kept as written), in the order the parser found them.
    pub commands: Vec<Vec<String>>,
    /// Nothing but literal simple commands joined by pipes and lists.
    pub plain: bool,
    /// Why the parser rejected the text (then `commands` is empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_error: Option<String>,
    /// Every program the text runs, each with its words (the program by
    /// its base name), looked through wrappers (`env`, `sudo`, `timeout`,
    /// `xargs`, `find -exec`…) and `sh -c` / `eval` text: the same answer
    /// vigil's rules and the denylist use.
    pub runs: Vec<Vec<String>>,
    /// Why some program it runs cannot be told (`$CMD`, `eval "$X"`);
    /// empty when every one is known.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unresolved: Vec<String>,
}

/// vigil's own estimate.
#[derive(Debug, Clone, Serialize)]
pub struct Estimate {
    pub risk: Risk,
    pub reason: String,
}

/// What the model said about the call.
#[derive(Debug, Clone, Serialize)]
pub struct ModelClaims {
    pub risk: Option<Risk>,
    pub mutation: Option<bool>,
    pub privesc: Option<bool>,
    pub why: Option<String>,
}

impl Input {
    /// The input for `request` (its `command` when it runs shell text).
    pub fn of(
        request: &ApprovalRequest,
        command: Option<&Command>,
        arguments: Value,
        session_id: Option<String>,
    ) -> Input {
        let gate = &request.gate;
        Input {
            version: VERSION,
            event: "decide",
            session_id,
            call_id: request.call_id.clone(),
            tool: request.tool.clone(),
            arguments,
            action: gate.action.clone(),
            command: command.map(parsed),
            estimate: Estimate {
                risk: request.estimate,
                reason: request.estimate_reason.clone(),
            },
            model: ModelClaims {
                risk: gate.model_risk,
                mutation: gate.mutation,
                privesc: gate.privesc,
                why: gate.why.clone(),
            },
            cwd: request.facts.cwd.clone(),
            target: request.target.clone(),
        }
    }
}

fn parsed(command: &Command) -> ParsedCommand {
    let script = &command.script;
    ParsedCommand {
        commands: script.commands.iter().map(|c| c.loose_words()).collect(),
        plain: script.is_plain(),
        parse_error: script.error.clone(),
        runs: command.runs.runs.clone(),
        unresolved: command.runs.unresolved.clone(),
    }
}

/// Whether a hook with this matcher sees the call. `tools` names a call
/// by vigil's tool name or by the name the PreToolUse format gives it
/// ([`super::pretooluse::claude_name`]: `Bash` is `run_shell` and the text
/// `send-keys` types). The command words over-match on purpose (the hook
/// then decides): the prefix may start at any word of any program the text
/// runs ([`vigil_shell::program_runs`]: `sudo rm`, `x && rm`, `$(rm …)`,
/// `env rm`, `sh -c 'rm …'`, `git -C . push`), the first word is compared
/// by its last path component (`/bin/rm`), and a text the parser rejects,
/// or one whose programs cannot all be told (`$CMD`, `eval "$X"`), is
/// shown to every command matcher.
pub fn matches(m: &HookMatch, tool: &str, command: Option<&Command>) -> bool {
    if !m.tools.is_empty() && !m.tools.iter().any(|t| names_tool(t, tool)) {
        return false;
    }
    if m.command.is_empty() {
        return true;
    }
    let Some(command) = command else {
        return false;
    };
    if command.script.error.is_some() {
        return true;
    }
    let runs = &command.runs;
    // A program that can run others out of sight (`awk '…system…'`,
    // `watch rm`, `git -c …`) is shown to the hook too: it decides.
    !runs.resolved()
        || vigil_policy::blind::blind_spot(command).is_some()
        || runs
            .runs
            .iter()
            .any(|words| (0..words.len()).any(|i| starts_with(&words[i..], &m.command)))
}

/// Whether the name `written` in a matcher names a call of `tool`.
pub fn names_tool(written: &str, tool: &str) -> bool {
    written == tool
        || super::pretooluse::claude_names(tool)
            .iter()
            .any(|n| n == written)
}

fn starts_with(words: &[String], prefix: &[String]) -> bool {
    if words.len() < prefix.len() || prefix.is_empty() {
        return false;
    }
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    base(&words[0]) == base(&prefix[0]) && words[1..prefix.len()] == prefix[1..]
}

/// Answer v1: `{"version": 1, "decision": "allow"|"deny"|"ask", "reason": "…"}`.
#[derive(Debug, Deserialize)]
struct AnswerV1 {
    version: Option<u32>,
    decision: String,
    #[serde(default)]
    reason: String,
}

/// Read a vigil-format answer (stdout of a command that exited 0, or the
/// body of a 2xx response).
pub fn read_answer(text: &str) -> Result<(Answer, String), String> {
    let a: AnswerV1 = serde_json::from_str(text.trim())
        .map_err(|e| format!("the answer is not answer v1 JSON ({e}): {}", clip(text)))?;
    if let Some(v) = a.version
        && v != VERSION
    {
        return Err(format!(
            "answer version {v}; this vigil reads version {VERSION}"
        ));
    }
    let answer = match a.decision.as_str() {
        "allow" => Answer::Allow,
        "deny" => Answer::Deny,
        "ask" => Answer::Ask,
        other => return Err(format!("unknown decision `{other}` (allow, deny or ask)")),
    };
    Ok((answer, a.reason))
}

/// At most 200 characters of `text`, for error messages.
pub fn clip(text: &str) -> String {
    let t = text.trim();
    let mut s: String = t.chars().take(200).collect();
    if s.len() < t.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_shell::Command;
    fn parse(text: &str) -> std::sync::Arc<Command> {
        Command::read(text)
    }

    fn m(tools: &[&str], command: &[&str]) -> HookMatch {
        HookMatch {
            tools: tools.iter().map(|s| s.to_string()).collect(),
            command: command.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn the_matcher_sees_a_command_wherever_it_hides() {
        let rm = m(&["run_shell"], &["rm"]);
        for text in [
            "rm -rf x",
            "sudo rm x",
            "ls && /bin/rm x",
            "echo $(rm y)",
            "rm 'a",
            "env rm x",
            "timeout 5 rm x",
            "xargs rm",
            "sh -c 'rm x'",
            "eval 'rm -f x'",
            "find . -exec rm {} \\;",
            "sudo env timeout 5 sh -c 'xargs rm'",
            "$CMD x",
            "eval \"$X\"",
        ] {
            assert!(matches(&rm, "run_shell", Some(&*parse(text))), "{text}");
            let bash = m(&["Bash"], &["rm"]);
            assert!(matches(&bash, "send-keys", Some(&*parse(text))), "{text}");
        }
        let push = m(&[], &["git", "push"]);
        assert!(matches(&push, "run_shell", Some(&*parse("git -C . push"))));
        assert!(!matches(&push, "run_shell", Some(&*parse("git log"))));
        for text in ["ls -l", "rmdir x", "git status"] {
            assert!(!matches(&rm, "run_shell", Some(&*parse(text))), "{text}");
        }
        // An unknown git subcommand may be an alias that runs anything: the hook is shown it.
        assert!(matches(&rm, "run_shell", Some(&*parse("git rm-cache"))));
        assert!(!matches(&rm, "write_file", None));
        assert!(matches(&m(&[], &[]), "write_file", None));
        let make = m(&[], &["make", "test"]);
        assert!(matches(&make, "run_shell", Some(&*parse("make test -j2"))));
        // make runs its recipes, out of sight: every make is shown to the hook.
        assert!(matches(&make, "run_shell", Some(&*parse("make install"))));
        let ls = m(&[], &["ls", "-l"]);
        assert!(matches(&ls, "run_shell", Some(&*parse("ls -l -a"))));
        assert!(!matches(&ls, "run_shell", Some(&*parse("ls -a"))));
    }

    #[test]
    fn answers_are_read_strictly() {
        assert_eq!(
            read_answer(r#"{"version":1,"decision":"deny","reason":"no"}"#),
            Ok((Answer::Deny, "no".into()))
        );
        assert_eq!(
            read_answer(r#"{"decision":"allow"}"#),
            Ok((Answer::Allow, "".into()))
        );
        assert!(read_answer(r#"{"version":2,"decision":"allow"}"#).is_err());
        assert!(read_answer(r#"{"decision":"maybe"}"#).is_err());
        assert!(read_answer("yes").is_err());
    }
}
