//! Approval gate data: what a gated tool call shows the operator and what the
//! operator can answer.
//!
//! The registry asks the [`Approver`] before a gated tool executes; tools only
//! describe themselves through [`GateInfo`]. This module never decides anything:
//! deciding is the approval broker's job (in `agent`) and the operator's.

use async_trait::async_trait;

use super::call::ToolCall;

use vigil_protocol::approval::*;

/// Something that can answer approval requests (the agent's broker, a terminal
/// prompt, or a fixed policy).
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decide on a call. `call_id`, `tool` and `target` identify it.
    async fn decide(&self, call_id: &str, tool: &str, gate: &GateInfo) -> ApprovalDecision;

    /// Decide on a call that changes a file, showing the change (the
    /// broker puts it on the request for the diff card). By default the
    /// change is not looked at.
    async fn decide_change(
        &self,
        call_id: &str,
        tool: &str,
        gate: &GateInfo,
        _change: Option<FileChange>,
    ) -> ApprovalDecision {
        self.decide(call_id, tool, gate).await
    }

    /// Decide on a call as the registry read it once ([`ToolCall`]: its
    /// validated arguments, the command it runs and the programs in it, and
    /// [`CallFacts`]: the digest session rules key on, resolved paths, the
    /// directory). By default only the tool's name is looked at.
    async fn decide_call(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        change: Option<FileChange>,
    ) -> ApprovalDecision {
        self.decide_change(call_id, &call.tool, gate, change).await
    }

    /// Whether an ungated call of `tool` (its tool runs it without asking)
    /// must be screened ([`Approver::screen`]) first. By default none is.
    fn screens(&self, _tool: &str) -> bool {
        false
    }

    /// Screen an ungated call with what no switch skips (deny and ask
    /// rules, decide hooks, a command whose programs cannot be told).
    /// `None`: it runs as its tool would; otherwise a deny or the
    /// operator's answer. `gate` describes the call (it asks nobody by
    /// itself). By default nothing is screened.
    async fn screen(
        &self,
        _call_id: &str,
        _call: &ToolCall,
        _gate: &GateInfo,
    ) -> Option<ApprovalDecision> {
        None
    }
}

/// How a call decided by its trial in the view is named.
pub const RAN_IN_VIEW: &str = "ran in the view: no effects";

/// What the record says of a command that only changes a managed pane's
/// directory or shell variables (`cd`, `X=1`), run for real in the pane
/// after a clean trial.
pub const RAN_IN_PANE: &str =
    "tried in the view: no effects but the pane's shell state; ran in the pane";

/// What the record says of a build or test whose trial changed only
/// outputs git ignores: it ran for real in the kernel sandbox, allowed to
/// write beneath those folders only.
pub const RAN_IN_OUTPUTS: &str = "tried in the view: it changed only outputs git ignores; ran in \
     the sandbox, writing only beneath them";

/// An approver that answers every request the same way (`--auto-approve`, or
/// fail-closed when no operator is present).
pub struct FixedApprover(pub ApprovalDecision);

#[async_trait]
impl Approver for FixedApprover {
    async fn decide(&self, _call_id: &str, _tool: &str, _gate: &GateInfo) -> ApprovalDecision {
        self.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(action: &str, editable: Option<&str>) -> GateInfo {
        GateInfo {
            action: action.into(),
            model_risk: None,
            mutation: None,
            privesc: None,
            why: None,
            editable_field: editable.map(str::to_string),
        }
    }

    #[test]
    fn digests_tell_every_part_apart() {
        let d = call_digest("write_file", r#"{"a":1}"#, &["/x".into()]);
        assert_eq!(d.len(), 64);
        assert_eq!(d, call_digest("write_file", r#"{"a":1}"#, &["/x".into()]));
        // Moving bytes between parts is another call.
        assert_ne!(d, call_digest("write_fil", r#"e{"a":1}"#, &["/x".into()]));
        assert_ne!(d, call_digest("write_file", r#"{"a":1}/x"#, &[]));
        assert_ne!(d, call_digest("write_file", r#"{"a":1}"#, &["/y".into()]));
    }

    #[test]
    fn session_keys_are_the_command_text_or_the_action_with_its_digest() {
        let facts = CallFacts {
            digest: "ab".into(),
            ..Default::default()
        };
        let shell = gate("ls -l", Some("command"));
        assert_eq!(
            session_key("run_shell", &shell, &facts).as_deref(),
            Some("ls -l")
        );
        let write = gate("write /x (1 bytes)", None);
        assert_eq!(
            session_key("write_file", &write, &facts).as_deref(),
            Some("write /x (1 bytes) · exact arguments sha256:ab")
        );
        // No digest: no rule can be made of it.
        assert_eq!(
            session_key("write_file", &write, &CallFacts::default()),
            None
        );
    }
}
