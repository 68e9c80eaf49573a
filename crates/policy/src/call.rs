//! One tool call, read once: [`ToolCall`] holds the validated arguments,
//! their canonical text (what failure counting and digests key on), the
//! shell text the call runs read into a [`vigil_shell::Command`] (its parse
//! and the programs it runs) and the facts its tool established. The
//! registry makes it; the denylist, the policy file's rules, the decide
//! hooks, the approval broker, the trial, the tool's `execute` and the tmux
//! guard all read this value, so every reader sees the same command and
//! nothing parses the call again.
//!
//! It never decides and never runs anything.

use std::sync::Arc;

use serde_json::Value;
use vigil_shell::{Command, Script};

use vigil_protocol::approval::CallFacts;

/// A tool call as every decision reads it.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The tool's name.
    pub tool: String,
    /// The arguments after validation (and its repairs).
    pub args: Value,
    /// [`canonical`] of [`ToolCall::args`].
    pub canonical: String,
    /// The shell text the call runs, read: a `run_shell` command, the text
    /// `send-keys` types into a shell.
    pub command: Option<Arc<Command>>,
    /// What the tool found out about the call (digest, resolved paths, the
    /// directory); filled in by the registry before anything decides.
    pub facts: CallFacts,
}

impl ToolCall {
    /// A call of `tool` with validated `args`; `shell_text` is the text the
    /// call runs in a shell, if any (read here, once).
    pub fn read(tool: &str, args: Value, shell_text: Option<&str>) -> ToolCall {
        ToolCall {
            tool: tool.to_string(),
            canonical: canonical(&args),
            command: shell_text.map(Command::read),
            args,
            facts: CallFacts::default(),
        }
    }

    /// The call with `doubt` (why its shell text is not the line a shell
    /// will run) among its command's unresolved programs: every guard then
    /// treats it as it treats a program it cannot tell. A call with no
    /// shell text gets an empty one to carry the doubt.
    pub fn with_doubt(mut self, doubt: Option<String>) -> ToolCall {
        let Some(doubt) = doubt else {
            return self;
        };
        let mut command = self.command.take().unwrap_or_else(|| Command::read(""));
        Arc::make_mut(&mut command).runs.unresolved.push(doubt);
        self.command = Some(command);
        self
    }

    /// The parse of the call's shell text.
    pub fn script(&self) -> Option<&Script> {
        self.command.as_deref().map(|c| &c.script)
    }

    /// The arguments as the tool's own type (no text is parsed: the value
    /// was read once).
    pub fn args_as<T: serde::de::DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        T::deserialize(&self.args)
    }
}

/// `v` written with sorted keys at every level and no spaces, so
/// `{"a":1,"b":2}` and `{ "b": 2, "a": 1 }` are the same call.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(e, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_sorts_keys_at_every_level() {
        let v = json!({"b": {"y": 1, "x": [{"d": 1, "c": 2}]}, "a": "s"});
        assert_eq!(
            canonical(&v),
            r#"{"a":"s","b":{"x":[{"c":2,"d":1}],"y":1}}"#
        );
    }

    #[test]
    fn a_call_reads_its_shell_text_once_and_its_arguments_without_text() {
        let before = vigil_shell::parses();
        let call = ToolCall::read(
            "run_shell",
            json!({"command": "env rm x"}),
            Some("env rm x"),
        );
        assert_eq!(vigil_shell::parses() - before, 1);
        let c = call.command.as_deref().expect("read");
        assert_eq!(c.runs.programs(), vec!["env", "rm"]);
        #[derive(serde::Deserialize)]
        struct A {
            command: String,
        }
        assert_eq!(call.args_as::<A>().expect("typed").command, "env rm x");
    }
}
