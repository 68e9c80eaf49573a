//! `vigil tool list` and `vigil tool call NAME 'JSON'`: one tool through the
//! very same registry path the agent uses (validation, approval, envelope),
//! for operators debugging a tool and for tests.
//!
//! Approval is asked on the terminal; without one it fails closed unless
//! `--auto-approve` was given.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use async_trait::async_trait;

use crate::policy::gate::{Approver, FixedApprover};
use vigil_protocol::approval::{ApprovalDecision, GateInfo};

/// Asks on the controlling terminal: `Run: <action> [y/N]`.
pub struct TerminalApprover;

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, _call_id: &str, tool: &str, gate: &GateInfo) -> ApprovalDecision {
        let prompt = format!(
            "{tool} wants to run: {}\n  risk {} · mutation {} · privesc {} · why: {}\nRun it? [y/N] ",
            gate.action,
            gate.model_risk.map(|r| r.as_str()).unwrap_or("?"),
            fmt_flag(gate.mutation),
            fmt_flag(gate.privesc),
            gate.why.as_deref().unwrap_or("-"),
        );
        let answer = tokio::task::spawn_blocking(move || {
            let mut err = std::io::stderr();
            let _ = err.write_all(prompt.as_bytes());
            let _ = err.flush();
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            line
        })
        .await
        .unwrap_or_default();
        if matches!(answer.trim(), "y" | "Y" | "yes") {
            ApprovalDecision::ApproveOnce
        } else {
            ApprovalDecision::Deny
        }
    }
}

fn fmt_flag(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "yes",
        Some(false) => "no",
        None => "?",
    }
}

/// The approver for `tool call`.
pub fn approver(auto_approve: bool) -> Arc<dyn Approver> {
    if auto_approve {
        Arc::new(FixedApprover(ApprovalDecision::ApproveOnce))
    } else if std::io::stdin().is_terminal() {
        Arc::new(TerminalApprover)
    } else {
        Arc::new(FixedApprover(ApprovalDecision::DenyWithReason(
            "this call needs approval and there is no terminal to ask on; pass --auto-approve"
                .into(),
        )))
    }
}

/// MCP servers that fail, crash or time out are reported on stderr.
pub fn mcp_state_to_stderr() -> crate::tools::mcp::StateSink {
    use vigil_protocol::tool::McpState;
    Arc::new(|name: &str, state: McpState, _tools: usize| {
        if !matches!(state, McpState::Starting | McpState::Running) {
            eprintln!("vigil: MCP server {name}: {state}");
        }
    })
}

/// `vigil tool list` for a person: one block per tool with the first
/// sentence of its description and its arguments (`*` = required); the
/// full JSON schema is `vigil tool list --json`.
pub fn listing(defs: &[crate::tools::ToolDefinition]) -> String {
    let width = defs
        .iter()
        .map(|d| d.function.name.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for d in defs {
        let f = &d.function;
        out.push_str(&format!(
            "{:width$}  {}\n",
            f.name,
            first_sentence(&f.description)
        ));
        let required: Vec<&str> = f.parameters["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        let args: Vec<String> = f.parameters["properties"]
            .as_object()
            .map(|p| {
                p.keys()
                    .map(|k| {
                        let star = if required.contains(&k.as_str()) {
                            "*"
                        } else {
                            ""
                        };
                        format!("{k}{star}")
                    })
                    .collect()
            })
            .unwrap_or_default();
        if !args.is_empty() {
            out.push_str(&format!("{:width$}  args: {}\n", "", args.join(", ")));
        }
    }
    out.push_str(&format!(
        "\n{} tools · * required · full schemas: vigil tool list --json\n",
        defs.len()
    ));
    out
}

/// Up to the first `. ` or newline, at most 100 characters.
fn first_sentence(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let end = line.find(". ").map(|i| i + 1).unwrap_or(line.len());
    let s = &line[..end];
    match s.char_indices().nth(100) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolDefinition;
    use serde_json::json;

    #[test]
    fn the_listing_is_one_line_per_tool_with_its_arguments() {
        let defs = vec![
            ToolDefinition::function(
                "read_file",
                "Read a text file. Long files are cut.\nMore detail here.",
                json!({"type": "object", "properties": {"path": {}, "offset": {}}, "required": ["path"]}),
            ),
            ToolDefinition::function("time", "The time now", json!({"type": "object"})),
        ];
        assert_eq!(
            listing(&defs),
            "read_file  Read a text file.\n           args: offset, path*\ntime       The time now\n\n2 tools · * required · full schemas: vigil tool list --json\n"
        );
    }
}
