//! `run_shell`'s arguments: the `wait` forms and the parse of one call's
//! JSON (the safety metadata checked). Plain data: runs nothing.

use std::time::Duration;
use vigil_policy::call::ToolCall;

use serde_json::Value;

use super::ToolError;
use vigil_protocol::approval::Risk;

/// How `run_shell` waits for its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Block until the command exits.
    Block,
    /// Dispatch and return at once (tmux-backed targets only).
    Detach,
    /// Block up to this long, then kill the command and fail.
    Timeout(Duration),
}

const WAIT_FORMS: &str = "accepted forms: true (wait for exit), false (do not wait; tmux targets only), \
a whole number of seconds such as 30, or a duration string such as \"500ms\", \"30s\", \"10m\", \"1h\"";

/// Parse the `wait` argument: a bool, a whole number of seconds, or a duration
/// string (`"500ms"`, `"30s"`, `"10m"`, `"1h"`). `null` means wait for exit.
pub fn parse_wait(v: &Value) -> Result<Wait, String> {
    match v {
        Value::Null | Value::Bool(true) => Ok(Wait::Block),
        Value::Bool(false) => Ok(Wait::Detach),
        Value::Number(n) => match n.as_u64() {
            Some(0) => Err(format!("wait must be more than 0 seconds; {WAIT_FORMS}")),
            Some(secs) => Ok(Wait::Timeout(Duration::from_secs(secs))),
            None => Err(format!("invalid wait {n}; {WAIT_FORMS}")),
        },
        Value::String(s) => parse_wait_str(s),
        other => Err(format!("invalid wait {other}; {WAIT_FORMS}")),
    }
}

fn parse_wait_str(raw: &str) -> Result<Wait, String> {
    let s = raw.trim().to_ascii_lowercase();
    match s.as_str() {
        "true" => return Ok(Wait::Block),
        "false" => return Ok(Wait::Detach),
        _ => {}
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let bad = || format!("invalid wait \"{raw}\"; {WAIT_FORMS}");
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let d = match unit.trim() {
        "ms" => Duration::from_millis(n),
        "" | "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(bad()),
    };
    if d.is_zero() {
        return Err(format!("wait must be more than 0; {WAIT_FORMS}"));
    }
    Ok(Wait::Timeout(d))
}

/// The parsed, validated arguments.
pub(super) struct Args {
    pub(super) command: String,
    pub(super) wait: Wait,
    pub(super) session: Option<String>,
    pub(super) pane: Option<String>,
}

fn flag(v: &Value, name: &str) -> Result<bool, ToolError> {
    match &v[name] {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        Value::Null => Err(ToolError::InvalidArguments(format!(
            "missing `{name}` (true or false)"
        ))),
        other => Err(ToolError::InvalidArguments(format!(
            "`{name}` must be true or false, got {other}"
        ))),
    }
}

fn opt_str(v: &Value, name: &str) -> Result<Option<String>, ToolError> {
    match &v[name] {
        Value::Null => Ok(None),
        Value::String(s) if s.trim().is_empty() => Ok(None),
        Value::String(s) => Ok(Some(s.clone())),
        other => Err(ToolError::InvalidArguments(format!(
            "`{name}` must be a string, got {other}"
        ))),
    }
}

pub(super) fn parse(call: &ToolCall) -> Result<Args, ToolError> {
    let v = super::object_args(call)?;
    let command = match &v["command"] {
        Value::String(s) if !s.trim().is_empty() => s.clone(),
        Value::String(_) | Value::Null => {
            return Err(ToolError::InvalidArguments(
                "`command` is required and must not be empty".into(),
            ));
        }
        other => {
            return Err(ToolError::InvalidArguments(format!(
                "`command` must be a string, got {other}"
            )));
        }
    };
    let risk = v["risk"].as_str().unwrap_or_default();
    if Risk::parse(risk).is_none() {
        return Err(ToolError::InvalidArguments(format!(
            "`risk` must be \"low\", \"medium\" or \"high\", got {}",
            v["risk"]
        )));
    }
    flag(v, "mutation")?;
    flag(v, "privesc")?;
    match v["why"].as_str() {
        Some(w) if !w.trim().is_empty() => {}
        _ => {
            return Err(ToolError::InvalidArguments(
                "`why` is required: a short reason and risk justification".into(),
            ));
        }
    }
    let wait = parse_wait(&v["wait"]).map_err(ToolError::InvalidArguments)?;
    Ok(Args {
        command,
        wait,
        session: opt_str(v, "session")?,
        pane: opt_str(v, "pane")?,
    })
}
