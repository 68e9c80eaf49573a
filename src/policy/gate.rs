//! Approval gate data: what a gated tool call shows the operator and what the
//! operator can answer.
//!
//! The registry asks the [`Approver`] before a gated tool executes; tools only
//! describe themselves through [`GateInfo`]. This module never decides anything:
//! deciding is the approval broker's job (in `agent`) and the operator's.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// A risk level, either the model's own label or the console's estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn parse(s: &str) -> Option<Risk> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Some(Risk::Low),
            "medium" => Some(Risk::Medium),
            "high" => Some(Risk::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// What a gated tool call wants to do, as described by the tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateInfo {
    /// The action in one line (the command, keys, URL, path...).
    pub action: String,
    /// The model's claims, when the tool's schema carries them.
    pub model_risk: Option<Risk>,
    pub mutation: Option<bool>,
    pub privesc: Option<bool>,
    pub why: Option<String>,
    /// The argument an operator's edit replaces (e.g. `command`), if editable.
    pub editable_field: Option<String>,
}

/// One pending approval as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub id: u64,
    pub call_id: String,
    pub tool: String,
    /// Where it will run (local, tmux session, ssh host, container).
    pub target: String,
    pub gate: GateInfo,
    /// vigil's own risk estimate, computed from the action (never the
    /// model's label).
    pub estimate: Risk,
    /// Why vigil rates it as it does (the parse error for a command the
    /// shell parser rejects, the flag not on the allow-list…), shown to the
    /// operator with the request.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub estimate_reason: String,
    /// Decided without the operator (a session rule or the policy): the
    /// `ApprovalResolved` with the decision follows at once, and an answer
    /// to it would find nothing pending.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automatic: bool,
}

/// The operator's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "value", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call once.
    ApproveOnce,
    /// Run it, and approve the same action for the rest of the session.
    ApproveSession,
    /// Run it, and approve for the rest of the session every command that
    /// starts with this prefix at a word boundary and chains nothing (see
    /// [`crate::policy::prefix_rule`]); vigil still asks for commands it
    /// rates high.
    ApprovePrefix(String),
    /// Run an edited action instead (the model is told).
    ApproveEdited(String),
    /// Approved without the operator: by the policy or a rule set earlier,
    /// never by an answer to this request. The text names what decided it
    /// (`policy auto_low`, `session rule "git status"`, `policy rule 3
    /// (config.toml:41)`). Such a call runs in the kernel sandbox.
    ApproveUnasked(String),
    /// Do not run it.
    Deny,
    /// Do not run it; the reason reaches the model.
    DenyWithReason(String),
}

impl ApprovalDecision {
    pub fn is_approved(&self) -> bool {
        matches!(
            self,
            ApprovalDecision::ApproveOnce
                | ApprovalDecision::ApproveSession
                | ApprovalDecision::ApprovePrefix(_)
                | ApprovalDecision::ApproveEdited(_)
                | ApprovalDecision::ApproveUnasked(_)
        )
    }

    /// What decided an unasked approval (`None` for the operator's own
    /// answers and denials).
    pub fn decided_by(&self) -> Option<&str> {
        match self {
            ApprovalDecision::ApproveUnasked(by) => Some(by),
            _ => None,
        }
    }
}

/// Something that can answer approval requests (the agent's broker, a terminal
/// prompt, or a fixed policy).
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decide on a call. `call_id`, `tool` and `target` identify it.
    async fn decide(&self, call_id: &str, tool: &str, gate: &GateInfo) -> ApprovalDecision;
}

/// An approver that answers every request the same way (`--auto-approve`, or
/// fail-closed when no operator is present).
pub struct FixedApprover(pub ApprovalDecision);

#[async_trait]
impl Approver for FixedApprover {
    async fn decide(&self, _call_id: &str, _tool: &str, _gate: &GateInfo) -> ApprovalDecision {
        self.0.clone()
    }
}
