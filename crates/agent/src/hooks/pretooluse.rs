//! The second form a decide hook may speak: Claude Code's PreToolUse hook
//! format, so guardrail scripts and servers written for it work unchanged.
//! The input is `{session_id, transcript_path, cwd, hook_event_name:
//! "PreToolUse", tool_name, tool_input, tool_use_id, permission_mode}` with
//! vigil's tools given the names that CLI uses ([`claude_name`]:
//! `run_shell` and the text `send-keys` types are `Bash`, an MCP tool is
//! `mcp__SERVER__TOOL`);
//! the answer is exit code 2 with a reason on stderr (block), or JSON on
//! stdout: `hookSpecificOutput.permissionDecision` (allow, deny, ask) with
//! `permissionDecisionReason`, or the older `decision` (approve, block)
//! with `reason`; `continue: false` blocks too.
//!
//! Pure translation: nothing here runs the hook.

use serde_json::{Value, json};

use super::decide::{Answer, Input, clip};

/// The PreToolUse input for a call (`transcript` is the session's
/// `messages.jsonl`, in vigil's format, when recorded).
pub fn input(call: &Input, transcript: Option<String>) -> Value {
    let (name, tool_input) = tool(call);
    json!({
        "session_id": call.session_id.clone().unwrap_or_default(),
        "transcript_path": transcript.unwrap_or_default(),
        "cwd": call.cwd.clone().unwrap_or_default(),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": name,
        "tool_input": tool_input,
        "tool_use_id": call.call_id,
    })
}

/// vigil's tool as that CLI names it, and its input in that CLI's shape.
fn tool(call: &Input) -> (String, Value) {
    let arg = |k: &str| call.arguments.get(k).cloned().unwrap_or(Value::Null);
    let name = claude_name(&call.tool, &call.arguments);
    let input = match name.as_str() {
        "Bash" if call.tool == "send-keys" => {
            json!({"command": arg("literal_text"), "description": call.model.why})
        }
        "Bash" => json!({"command": call.action, "description": call.model.why}),
        "Write" => json!({"file_path": arg("path"), "content": arg("content")}),
        "Edit" | "Read" => with_path(&call.arguments),
        _ => call.arguments.clone(),
    };
    (name, input)
}

/// The name that CLI gives a call of vigil's `tool` with `arguments`:
/// `run_shell` and the text `send-keys` types are `Bash`, `write_file`
/// `Write`, `edit` `Edit` (`Read` when it only views), `read_file` `Read`,
/// `fetch_url` `WebFetch`, `web_search` `WebSearch`, an MCP tool
/// `SERVER__TOOL` is `mcp__SERVER__TOOL`; any other keeps its name.
pub fn claude_name(tool: &str, arguments: &Value) -> String {
    let text = arguments.get("literal_text").and_then(Value::as_str);
    let view = arguments.get("command").and_then(Value::as_str) == Some("view");
    match tool {
        "send-keys" if text.is_some() => "Bash".into(),
        "edit" if view => "Read".into(),
        _ => claude_names(tool)
            .into_iter()
            .next()
            .unwrap_or_else(|| tool.to_string()),
    }
}

/// Every name that CLI may give a call of `tool` (empty: only its own).
pub fn claude_names(tool: &str) -> Vec<String> {
    let names: &[&str] = match tool {
        "run_shell" | "send-keys" => &["Bash"],
        "write_file" => &["Write"],
        "edit" => &["Edit", "Read"],
        "read_file" => &["Read"],
        "fetch_url" => &["WebFetch"],
        "web_search" => &["WebSearch"],
        t if t.contains("__") => return vec![format!("mcp__{t}")],
        _ => &[],
    };
    names.iter().map(|n| n.to_string()).collect()
}

/// The arguments with `path` also given as `file_path`.
fn with_path(args: &Value) -> Value {
    let mut v = args.clone();
    if let (Some(obj), Some(p)) = (v.as_object_mut(), args.get("path")) {
        obj.insert("file_path".into(), p.clone());
    }
    v
}

/// Read a command hook's answer: its exit code, stdout and stderr.
/// Exit 0 with nothing printed is no opinion; exit 2 blocks; any other
/// exit code is a failure (the hook's `on_failure` applies).
pub fn read_exit(
    code: Option<i32>,
    stdout: &str,
    stderr: &str,
) -> Result<(Answer, String), String> {
    match code {
        Some(0) if stdout.trim().is_empty() => Ok((Answer::Abstain, String::new())),
        Some(0) => read_json(stdout),
        Some(2) => Ok((Answer::Deny, stderr.trim().to_string())),
        Some(c) => Err(format!("exited with code {c}: {}", clip(stderr))),
        None => Err("killed by a signal".into()),
    }
}

/// Read a JSON answer (a command's stdout, an endpoint's body).
pub fn read_json(text: &str) -> Result<(Answer, String), String> {
    if text.trim().is_empty() {
        return Ok((Answer::Abstain, String::new()));
    }
    let v: Value = serde_json::from_str(text.trim())
        .map_err(|e| format!("the answer is not PreToolUse JSON ({e}): {}", clip(text)))?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    if v.get("continue") == Some(&Value::Bool(false)) {
        return Ok((Answer::Deny, s(&v, "stopReason")));
    }
    if let Some(out) = v.get("hookSpecificOutput") {
        let reason = s(out, "permissionDecisionReason");
        return match s(out, "permissionDecision").as_str() {
            "allow" => Ok((Answer::Allow, reason)),
            "deny" => Ok((Answer::Deny, reason)),
            "ask" => Ok((Answer::Ask, reason)),
            "" => Ok((Answer::Abstain, reason)),
            other => Err(format!("unknown permissionDecision `{other}`")),
        };
    }
    match s(&v, "decision").as_str() {
        "approve" => Ok((Answer::Allow, s(&v, "reason"))),
        "block" => Ok((Answer::Deny, s(&v, "reason"))),
        "" => Ok((Answer::Abstain, String::new())),
        other => Err(format!("unknown decision `{other}` (approve or block)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_answer_form_is_read() {
        assert_eq!(
            read_exit(Some(2), "", "no rm\n"),
            Ok((Answer::Deny, "no rm".into()))
        );
        assert_eq!(read_exit(Some(0), "", ""), Ok((Answer::Abstain, "".into())));
        assert!(read_exit(Some(1), "", "boom").is_err());
        assert!(read_exit(None, "", "").is_err());
        let new = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check"}}"#;
        assert_eq!(
            read_exit(Some(0), new, ""),
            Ok((Answer::Ask, "check".into()))
        );
        let old = r#"{"decision":"block","reason":"nope"}"#;
        assert_eq!(read_json(old), Ok((Answer::Deny, "nope".into())));
        assert_eq!(
            read_json(r#"{"decision":"approve"}"#).unwrap().0,
            Answer::Allow
        );
        assert_eq!(
            read_json(r#"{"continue":false,"stopReason":"halt"}"#)
                .unwrap()
                .0,
            Answer::Deny
        );
        assert!(read_json("not json").is_err());
    }
}
