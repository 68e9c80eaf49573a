//! The approver's side of a trial in the throwaway view
//! (`approval = "by_effect"`): the contract between the registry, which
//! runs the trial, and the agent's broker, which records it or asks.
//! Declarations only.

use async_trait::async_trait;
use tokio::sync::oneshot;

use vigil_policy::call::ToolCall;
use vigil_protocol::approval::{ApprovalDecision, CallFacts, GateInfo};
use vigil_protocol::preview::PreviewReport;

/// What a trial found, for a card that appeared while it ran
/// ([`TrialApprover::decide_during_trial`]).
pub enum TrialVerdict {
    /// No effect: the trial's result stands.
    Clean,
    /// It runs for real, unasked: how the record names it
    /// ([`RAN_IN_PANE`](vigil_policy::gate::RAN_IN_PANE),
    /// [`RAN_IN_OUTPUTS`](vigil_policy::gate::RAN_IN_OUTPUTS)).
    ForReal(&'static str),
    /// Asked: why, and the report for the card.
    Asks {
        why: String,
        report: Option<Box<PreviewReport>>,
    },
}

/// The approver's side of a trial (the agent's broker): told the outcome
/// of a trial the approver asked for ([`ApprovalDecision::TryInView`]).
#[async_trait]
pub trait TrialApprover: Send + Sync {
    /// The trial saw no effect: its result stands, nothing else runs.
    /// Returns the decision to record.
    async fn ran_in_view(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
    ) -> ApprovalDecision;

    /// The trial showed the call may run for real unasked (`how`: only
    /// the pane's shell changes, or only outputs git ignores). Returns the
    /// decision to record.
    async fn runs_for_real(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        how: &'static str,
    ) -> ApprovalDecision;

    /// The trial showed effects or could not be made (`facts.trial` says
    /// which): ask the operator, with the trial's report for the card.
    async fn decide_after_trial(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        report: Option<Box<PreviewReport>>,
    ) -> ApprovalDecision;

    /// A trial still runs after a moment: show the card now and decide by
    /// whichever comes first, the operator's answer or the trial's
    /// `verdict` (a clean trial withdraws the card: its result stands, an
    /// [`ApprovalDecision::ApproveUnasked`] is returned; one with effects
    /// fills the card in and keeps waiting).
    async fn decide_during_trial(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        verdict: oneshot::Receiver<TrialVerdict>,
    ) -> ApprovalDecision;
}
