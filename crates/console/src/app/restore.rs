//! A resumed session on screen: [`AgentEvent::SessionRestored`] becomes the
//! conversation (the operator's and the assistant's messages as they were
//! shown), the tools pane and the history view (each call with its
//! arguments, status, exit code, duration, truncation and spill files, and
//! the output the model was given), with calls that vigil's stop cut short
//! marked "interrupted".
//!
//! It only turns recorded data into pane state; it reads no file (the
//! viewer reads spill files through [`crate::io`] as for a live call).
//!
//! [`AgentEvent::SessionRestored`]: vigil_protocol::AgentEvent::SessionRestored

use std::collections::HashMap;

use serde_json::Value;

use crate::app::App;
use crate::panes::tools::CallStatus;
use vigil_protocol::{HistoryEntry, OutputStream, ToolRecord, ToolSummary};

/// Prefixed to a restored call's id in the panes.
const EARLIER: &str = "earlier:";

/// Argument fields that say what a call does, most telling first.
const SUMMARY_FIELDS: &[&str] = &["command", "keys", "path", "url", "query", "name", "pane"];

impl App {
    /// Show what a resumed session held.
    pub(crate) fn restore(
        &mut self,
        history: &[HistoryEntry],
        tools: &[ToolRecord],
        interrupted: &[ToolRecord],
    ) {
        let mut results: HashMap<&str, &str> = HashMap::new();
        for entry in history {
            match entry.role.as_str() {
                "user" => self.conversation.turn_started(&entry.text),
                "assistant" => self.conversation.message(&entry.text),
                "tool" => {
                    if let Some(id) = &entry.call_id {
                        results.insert(id.as_str(), entry.text.as_str());
                    }
                }
                _ => {}
            }
        }
        self.conversation.end_round();
        let cut_short = |id: &str| interrupted.iter().any(|r| r.call_id == id);
        for record in tools {
            // Under an id of their own: a model may number the calls of the
            // resumed run from 1 again, and a new call must not take over
            // an old one's entry.
            let id = format!("{EARLIER}{}", record.call_id);
            let status = restored_status(record, cut_short(&record.call_id));
            // An interrupted call's result is only the stub the model got.
            let ran = status != CallStatus::Interrupted;
            let summary = summarize(&record.arguments);
            self.tools.restored(&id, &record.name, &summary, status);
            if let Some(how) = &record.decided {
                self.tools.decided(&id, how);
            }
            if let Some(text) = results.get(record.call_id.as_str()).filter(|_| ran) {
                for (stream, part) in result_output(text) {
                    self.tools.output(&id, stream, &part);
                }
            }
            self.track(&id);
        }
        if !interrupted.is_empty() {
            let calls: Vec<String> = interrupted
                .iter()
                .map(|r| format!("{} {}", r.name, summarize(&r.arguments)))
                .collect();
            self.conversation.notice(&format!(
                "interrupted when the session stopped (outcome unknown, check the machine): {}",
                calls.join("; ")
            ));
        }
    }
}

/// How a recorded call ended, as the tools pane shows it.
fn restored_status(record: &ToolRecord, interrupted: bool) -> CallStatus {
    match &record.summary {
        Some(s) if s.error.as_deref() == Some(ToolSummary::CANCELLED) => CallStatus::Cancelled,
        Some(s) if !s.ok && s.error.as_deref().is_some_and(|e| e.starts_with("denied")) => {
            CallStatus::Denied
        }
        Some(s) => CallStatus::Finished(s.clone()),
        None if interrupted || record.started => CallStatus::Interrupted,
        None => CallStatus::Requested,
    }
}

/// One line for a call's arguments: the field that says what it does, else
/// the arguments as they are.
fn summarize(arguments: &str) -> String {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(arguments) else {
        return arguments.to_string();
    };
    SUMMARY_FIELDS
        .iter()
        .find_map(|k| match map.get(*k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(a)) => Some(
                a.iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => None,
        })
        .unwrap_or_else(|| arguments.to_string())
}

/// The output in a recorded tool result (the envelope the model was
/// given): stdout and stderr of a command, a string result as it is, any
/// other result as indented JSON. Text that is not an envelope is shown
/// as it is.
fn result_output(text: &str) -> Vec<(OutputStream, String)> {
    let Ok(value) = serde_json::from_str::<Value>(text) else {
        return vec![(OutputStream::Stdout, line_ended(text))];
    };
    let result = value.get("result").unwrap_or(&value);
    let mut out = Vec::new();
    match result {
        Value::String(s) => out.push((OutputStream::Stdout, line_ended(s))),
        Value::Object(map) if map.contains_key("stdout") || map.contains_key("stderr") => {
            for (key, stream) in [
                ("stdout", OutputStream::Stdout),
                ("stderr", OutputStream::Stderr),
            ] {
                if let Some(Value::String(s)) = map.get(key)
                    && !s.is_empty()
                {
                    out.push((stream, line_ended(s)));
                }
            }
        }
        other => {
            let pretty = serde_json::to_string_pretty(other).unwrap_or_default();
            out.push((OutputStream::Stdout, line_ended(&pretty)));
        }
    }
    out
}

/// Text closed by a newline, so the next part starts a line of its own.
fn line_ended(s: &str) -> String {
    if s.ends_with('\n') {
        s.to_string()
    } else {
        format!("{s}\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_call_with_an_old_id_gets_its_own_entry() {
        let mut app = App::new(std::time::Instant::now());
        let old = ToolRecord {
            call_id: "call_1".into(),
            name: "run_shell".into(),
            arguments: r#"{"command":"uname -a"}"#.into(),
            started: true,
            summary: None,
            decided: None,
        };
        app.restore(&[], std::slice::from_ref(&old), &[]);
        app.on_agent_event(vigil_protocol::AgentEvent::ToolCallRequested {
            call_id: "call_1".into(),
            name: "write_file".into(),
            arguments: r#"{"path":"/tmp/x"}"#.into(),
        });
        let tools: Vec<_> = app.history.records().map(|r| r.tool.clone()).collect();
        assert_eq!(tools, ["run_shell", "write_file"]);
    }

    #[test]
    fn command_results_split_into_their_streams() {
        let text = r#"{"harness_timestamp":{"source":"harness","unix_millis":1},"result":{"exit_code":1,"stderr":"oops","stdout":"a\nb\n"}}"#;
        assert_eq!(
            result_output(text),
            vec![
                (OutputStream::Stdout, "a\nb\n".to_string()),
                (OutputStream::Stderr, "oops\n".to_string()),
            ]
        );
        let denied = r#"{"result":"Command execution denied by user."}"#;
        assert_eq!(
            result_output(denied)[0].1,
            "Command execution denied by user.\n"
        );
        assert_eq!(result_output("plain")[0].1, "plain\n");
    }

    #[test]
    fn arguments_are_summarised_by_their_telling_field() {
        assert_eq!(
            summarize(r#"{"command":"uname -a","risk":"low"}"#),
            "uname -a"
        );
        assert_eq!(summarize(r#"{"path":"/etc/hosts"}"#), "/etc/hosts");
        assert_eq!(summarize(r#"{"zone":"UTC"}"#), r#"{"zone":"UTC"}"#);
        assert_eq!(summarize("not json"), "not json");
    }
}
