//! `vigil tool list` and `vigil tool call NAME 'JSON'`: one tool through the
//! very same registry path the agent uses (validation, approval, envelope),
//! for operators debugging a tool and for tests.
//!
//! Approval is asked on the terminal; without one it fails closed unless
//! `--auto-approve` was given.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Arc;

use async_trait::async_trait;

use crate::policy::gate::{ApprovalDecision, Approver, FixedApprover, GateInfo};

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
    use crate::tools::mcp::McpState;
    Arc::new(|name: &str, state: McpState, _tools: usize| {
        if !matches!(state, McpState::Starting | McpState::Running) {
            eprintln!("vigil: MCP server {name}: {state}");
        }
    })
}
