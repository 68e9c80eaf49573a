//! `send-keys`: type into a managed tmux pane (literal text, then tmux key
//! names, then Enter). Typed keys run commands, so every call states its
//! risk and goes through the approval gate like `run_shell`.
//!
//! Also holds the small argument helpers the tmux tools share. This tool
//! must never retarget keys: a missing managed pane is a hard error.

use std::sync::Arc;
use std::time::Duration;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::shell::{Wait, parse_wait};
use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_exec::tmux::{TmuxError, TmuxManager};
use vigil_protocol::approval::{GateInfo, Risk};

/// Longest `delay` a tmux tool accepts.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

pub(crate) fn object(call: &ToolCall) -> Result<&Value, ToolError> {
    super::object_args(call)
}

pub(crate) fn opt_str(v: &Value, name: &str) -> Result<Option<String>, ToolError> {
    match &v[name] {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(ToolError::InvalidArguments(format!(
            "`{name}` must be a string, got {other}"
        ))),
    }
}

pub(crate) fn opt_bool(v: &Value, name: &str, default: bool) -> Result<bool, ToolError> {
    match &v[name] {
        Value::Null => Ok(default),
        Value::Bool(b) => Ok(*b),
        other => Err(ToolError::InvalidArguments(format!(
            "`{name}` must be true or false, got {other}"
        ))),
    }
}

/// `delay`: "500ms", "2s", or a whole number of seconds; at most a minute.
pub(crate) fn parse_delay(v: &Value) -> Result<Option<Duration>, ToolError> {
    if v.is_null() {
        return Ok(None);
    }
    let bad = |why: String| ToolError::InvalidArguments(format!("`delay`: {why}"));
    match parse_wait(v).map_err(bad)? {
        Wait::Timeout(d) if d <= MAX_DELAY => Ok(Some(d)),
        Wait::Timeout(_) => Err(bad("at most 60s".into())),
        _ => Err(bad("use a duration such as \"500ms\" or \"2s\"".into())),
    }
}

/// The safety metadata every mutating tmux tool requires.
pub(crate) fn check_metadata(v: &Value) -> Result<(), ToolError> {
    if v["risk"].as_str().and_then(Risk::parse).is_none() {
        return Err(ToolError::InvalidArguments(format!(
            "`risk` must be \"low\", \"medium\" or \"high\", got {}",
            v["risk"]
        )));
    }
    for f in ["mutation", "privesc"] {
        if !v[f].is_boolean() {
            return Err(ToolError::InvalidArguments(format!(
                "missing `{f}` (true or false)"
            )));
        }
    }
    match v["why"].as_str() {
        Some(w) if !w.trim().is_empty() => Ok(()),
        _ => Err(ToolError::InvalidArguments(
            "`why` is required: a short reason and risk justification".into(),
        )),
    }
}

/// Gate data from the metadata fields.
pub(crate) fn gate_info(action: String, v: &Value) -> GateInfo {
    GateInfo {
        action,
        model_risk: v["risk"].as_str().and_then(Risk::parse),
        mutation: v["mutation"].as_bool(),
        privesc: v["privesc"].as_bool(),
        why: v["why"].as_str().map(str::to_string),
        editable_field: None,
    }
}

/// Schema properties shared by the gated tmux tools.
pub(crate) fn metadata_properties() -> serde_json::Map<String, Value> {
    let v = json!({
        "risk": {"type": "string", "enum": ["low", "medium", "high"],
                 "description": "Your estimate of the action's risk."},
        "mutation": {"type": "boolean",
                     "description": "Whether the action changes system state."},
        "privesc": {"type": "boolean",
                    "description": "Whether it uses privilege escalation (sudo, su, doas)."},
        "why": {"type": "string",
                "description": "Short reason and a justification of the risk label."}
    });
    v.as_object().cloned().unwrap_or_default()
}

pub(crate) fn failed(e: TmuxError) -> ToolError {
    ToolError::ExecutionFailed(e.to_string())
}

/// Where a tmux tool acts: a raw target on vigil's server, or a managed pane.
pub(crate) async fn pane_target(
    tmux: &TmuxManager,
    v: &Value,
) -> Result<Result<String, TmuxError>, ToolError> {
    if let Some(t) = opt_str(v, "target")? {
        return Ok(Ok(t));
    }
    let session = opt_str(v, "session")?;
    let pane = opt_str(v, "pane")?;
    Ok(tmux
        .resolve(session.as_deref(), pane.as_deref())
        .await
        .map(|p| p.id))
}

const DESCRIPTION: &str = "Type into a tmux pane: literal_text first, then the named keys, then \
Enter if requested. Only available with a tmux-backed target.

When to use: answering an interactive prompt (yes/no, a password the operator approved), \
cancelling a stuck or detached command with C-c, quitting a full-screen program (q, :q), \
navigating a menu.

When NOT to use: to run a command and read its result (use run_shell, which returns exact output \
and the exit code); to look at the pane (use capture-pane).

Disambiguation: send-keys only types; it does not wait for anything or return output. Follow it \
with capture-pane to see the effect. A session/pane that does not exist is an error (keys are \
never sent elsewhere). Every call is approved like run_shell, since typed keys run commands.

Example: {\"keys\": [\"C-c\"], \"risk\": \"low\", \"mutation\": false, \"privesc\": false, \
\"why\": \"Stop the detached build\"}";

/// The `send-keys` tool.
pub struct SendKeys {
    tmux: Arc<TmuxManager>,
    confirm: bool,
}

impl SendKeys {
    pub fn new(tmux: Arc<TmuxManager>) -> Self {
        SendKeys {
            tmux,
            confirm: true,
        }
    }

    /// `false`: run without asking (like `[tools].shell_confirm = false`).
    pub fn with_confirm(mut self, confirm: bool) -> Self {
        self.confirm = confirm;
        self
    }
}

fn keys_of(v: &Value) -> Result<Vec<String>, ToolError> {
    match &v["keys"] {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|k| match k.as_str() {
                Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
                _ => Err(ToolError::InvalidArguments(format!(
                    "`keys` must be tmux key names such as \"C-c\", \"Enter\", \"Up\"; got {k}"
                ))),
            })
            .collect(),
        Value::String(s) => Ok(vec![s.clone()]),
        other => Err(ToolError::InvalidArguments(format!(
            "`keys` must be an array of tmux key names, got {other}"
        ))),
    }
}

/// Why the text a `send-keys` call types may not be the line the pane's
/// shell runs: control characters a terminal acts on (`\r` is Enter, DEL
/// erases, Ctrl-A moves), named keys other than Enter, text left on the
/// line for a later Enter, or an Enter on a line vigil did not see typed.
fn typed_doubt(args: &Value) -> Option<String> {
    let text = args["literal_text"].as_str().unwrap_or_default();
    let keys: Vec<&str> = args["keys"]
        .as_array()
        .map(|k| k.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let is_enter = |k: &&str| matches!(*k, "Enter" | "C-m" | "KPEnter");
    let enter = args["enter"].as_bool() == Some(true) || keys.iter().any(is_enter);
    let why = if text.chars().any(char::is_control) {
        "the text holds control characters a terminal acts on"
    } else if keys.iter().any(|k| !is_enter(k)) {
        "it presses keys vigil does not read as text"
    } else if !text.is_empty() && !enter {
        "the text stays on the pane's line and runs with a later Enter"
    } else if text.is_empty() && enter {
        "it presses Enter on a line vigil did not see typed"
    } else {
        return None;
    };
    Some(format!("what the pane runs is not this text: {why}"))
}

#[async_trait]
impl Tool for SendKeys {
    fn name(&self) -> &str {
        "send-keys"
    }

    fn definition(&self) -> ToolDefinition {
        let mut props = metadata_properties();
        let extra = json!({
            "target": {"type": "string", "description": "Raw tmux target (-t syntax) on vigil's tmux server; default: the managed pane."},
            "session": {"type": "string", "description": "Managed tmux session (default: the shared session)."},
            "pane": {"type": "string", "description": "Managed pane (default: shared)."},
            "keys": {"type": "array", "items": {"type": "string"}, "description": "tmux key names sent after literal_text: \"C-c\", \"C-z\", \"Enter\", \"Up\", \"Down\", \"Escape\"..."},
            "literal_text": {"type": "string", "description": "Text typed literally (tmux send-keys -l), sent first."},
            "enter": {"type": "boolean", "description": "Press Enter after everything else (default false)."},
            "delay": {"type": ["string", "integer"], "description": "Wait this long before sending (\"500ms\", \"2s\"; at most 60s)."}
        });
        if let Some(o) = extra.as_object() {
            props.extend(o.clone());
        }
        ToolDefinition::function(
            "send-keys",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": props,
                "required": ["risk", "mutation", "privesc", "why"],
                "additionalProperties": false
            }),
        )
    }

    /// The text typed into the pane: a shell there reads it as a command.
    fn shell_text<'a>(&self, args: &'a Value) -> Option<&'a str> {
        args["literal_text"].as_str()
    }

    fn shell_text_doubt(&self, args: &Value) -> Option<String> {
        typed_doubt(args)
    }

    fn gate(&self, args: &Value) -> Option<GateInfo> {
        if !self.confirm {
            return None;
        }
        let mut parts = Vec::new();
        if let Some(t) = args["literal_text"].as_str() {
            parts.push(format!("type {t:?}"));
        }
        if let Some(k) = args["keys"].as_array() {
            let names: Vec<&str> = k.iter().filter_map(Value::as_str).collect();
            parts.push(format!("keys {}", names.join(" ")));
        }
        if args["enter"].as_bool() == Some(true) {
            parts.push("Enter".into());
        }
        let place = args["target"]
            .as_str()
            .or(args["pane"].as_str())
            .unwrap_or("shared");
        Some(gate_info(
            format!("send-keys to {place}: {}", parts.join(", ")),
            args,
        ))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        ctx.refuse_unsandboxable(self.name())?;
        let work = async {
            let v = object(call)?;
            check_metadata(v)?;
            let literal = opt_str(v, "literal_text")?;
            let keys = keys_of(v)?;
            let enter = opt_bool(v, "enter", false)?;
            let delay = parse_delay(&v["delay"])?;
            if literal.is_none() && keys.is_empty() && !enter {
                return Err(ToolError::InvalidArguments(
                    "nothing to send: give literal_text, keys, or enter: true".into(),
                ));
            }
            let target = pane_target(&self.tmux, v).await?.map_err(failed)?;
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            self.tmux
                .send_keys(&target, literal.as_deref(), &keys, enter)
                .await
                .map_err(failed)?;
            let mut sent = Vec::new();
            if let Some(l) = &literal {
                sent.push(format!("text {l:?}"));
            }
            if !keys.is_empty() {
                sent.push(format!("keys {}", keys.join(" ")));
            }
            if enter {
                sent.push("Enter".into());
            }
            Ok(ToolOutput::text(format!(
                "sent {} to tmux pane {target}; use capture-pane to see the effect",
                sent.join(", ")
            )))
        };
        ctx.with_target_notices(&*self.tmux, work).await
    }
}
