//! The broker's side of `approval = "by_effect"`: which shell commands are
//! tried in the throwaway view ([`ApprovalBroker::by_effect`]), the record
//! of a clean trial, and the card of a trial that is asked: after it ended
//! (its report on the card at once) or, for a trial still running after a
//! moment, at once, filled in or withdrawn when the trial ends.
//!
//! It never runs a trial itself (the registry does, through the tool) and
//! never renders.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::oneshot;

use super::{ApprovalBroker, Outcome, PendingGuard, WITHDRAWN, lock, named, operator_record};
use vigil_policy::call::ToolCall;
use vigil_policy::gate::RAN_IN_VIEW;
use vigil_policy::secret_reads::Scope;
use vigil_policy::view_eligible;
use vigil_protocol::approval::{ApprovalDecision, ApprovalRequest, CallFacts, GateInfo};
use vigil_protocol::preview::PreviewReport;
use vigil_protocol::{AgentEvent, PreviewOutcome};
use vigil_shell as shell;
use vigil_tools::{TrialApprover, TrialVerdict};

/// What the operator is told, once, when `by_effect` cannot try commands.
pub const NO_VIEW: &str = "by effect: this target cannot run the throwaway view (it needs this \
machine's kernel with user namespaces and overlayfs): every command is asked";

/// The card of a trial that still runs.
pub const TRYING: &str = "trying it in the view (still running); the card fills in, or goes \
away if nothing would change";

impl ApprovalBroker {
    /// `by_effect`: a shell command the view can run is tried there;
    /// anything else is asked, saying why.
    pub(super) fn by_effect(
        &self,
        request: &ApprovalRequest,
        command: Option<&shell::Command>,
    ) -> Outcome {
        let Some(command) = command.filter(|_| request.tool == "run_shell") else {
            return Outcome::Ask(None);
        };
        if !self.can_sandbox() {
            self.tell_once(&self.told_no_view, NO_VIEW);
            return Outcome::Ask(Some(NO_VIEW.into()));
        }
        let mut scope = Scope::current();
        if let Some(dir) = &request.facts.cwd {
            scope.cwd = Some(std::path::PathBuf::from(dir));
        }
        match view_eligible::check(&command.script, request.facts.in_pane, &scope) {
            Ok(()) => Outcome::Trial,
            Err(e) => Outcome::Ask(Some(e.to_string())),
        }
    }

    /// Send `text` to the operator the first time only.
    pub(super) fn tell_once(&self, told: &AtomicBool, text: &str) {
        if !told.swap(true, Ordering::Relaxed) {
            let _ = self.events.send(AgentEvent::Notice { text: text.into() });
        }
    }

    /// A request for the call; shown at once when `automatic` (nobody is
    /// asked), else by [`ApprovalBroker::open`] once it waits.
    fn announced(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        automatic: bool,
    ) -> ApprovalRequest {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let command = call.command.as_deref();
        let (mut request, _) = self.request(id, call_id, &call.tool, gate, command, facts);
        request.facts.hooks = self.take_trial_hooks(call_id);
        let request = ApprovalRequest {
            automatic,
            ..request
        };
        if automatic {
            self.show(&request);
        }
        request
    }

    /// Record a clean trial: its result stands, nobody was asked.
    pub(super) fn record_trial(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
    ) -> ApprovalDecision {
        let request = self.announced(call_id, call, gate, facts, true);
        let decision = ran_in_view();
        self.announce(request.id, &decision, named(RAN_IN_VIEW));
        decision
    }

    /// Ask after a trial, its report on the card at once.
    pub(super) async fn ask_after_trial(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        report: Option<Box<PreviewReport>>,
    ) -> ApprovalDecision {
        let request = self.announced(call_id, call, gate, facts, false);
        self.ask(request, false, report).await
    }

    /// The card of a trial still running: shown now; the operator's answer
    /// or the trial's verdict decides, whichever comes first.
    pub(super) async fn ask_during_trial(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        mut facts: CallFacts,
        verdict: oneshot::Receiver<TrialVerdict>,
    ) -> ApprovalDecision {
        facts.trial = Some(TRYING.into());
        let request = self.announced(call_id, call, gate, facts, false);
        let id = request.id;
        let mut rx = self.open(&request);
        let guard = PendingGuard { broker: self, id };
        let mut verdict = Some(verdict);
        let answer = loop {
            tokio::select! {
                answer = &mut rx => break answer,
                found = async { verdict.as_mut().expect("guarded").await }, if verdict.is_some() => {
                    verdict = None;
                    match found {
                        // Withdrawn unless the operator answered meanwhile.
                        Ok(v @ (TrialVerdict::Clean | TrialVerdict::ForReal(_)))
                            if lock(&self.pending).remove(&id).is_some() =>
                        {
                            std::mem::forget(guard);
                            let how = match v {
                                TrialVerdict::ForReal(how) => how,
                                _ => RAN_IN_VIEW,
                            };
                            let decision =
                                ApprovalDecision::ApproveUnasked(format!("by policy: {how}"));
                            self.announce(id, &decision, named(how));
                            return decision;
                        }
                        Ok(TrialVerdict::Asks { report: Some(report), .. }) => {
                            self.desk.deliver(id, PreviewOutcome::Report { report });
                        }
                        _ => {}
                    }
                }
            }
        };
        std::mem::forget(guard);
        let decision = answer.unwrap_or(ApprovalDecision::DenyWithReason(WITHDRAWN.into()));
        self.remember(&request, &decision);
        self.announce(id, &decision, operator_record(&request, &decision));
        decision
    }
}

#[async_trait::async_trait]
impl TrialApprover for ApprovalBroker {
    async fn ran_in_view(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
    ) -> ApprovalDecision {
        self.record_trial(call_id, call, gate, facts)
    }

    async fn runs_for_real(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        how: &'static str,
    ) -> ApprovalDecision {
        let request = self.announced(call_id, call, gate, facts, true);
        let decision = ApprovalDecision::ApproveUnasked(format!("by policy: {how}"));
        self.announce(request.id, &decision, named(how));
        decision
    }

    async fn decide_after_trial(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        report: Option<Box<PreviewReport>>,
    ) -> ApprovalDecision {
        self.ask_after_trial(call_id, call, gate, facts, report)
            .await
    }

    async fn decide_during_trial(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        facts: CallFacts,
        verdict: tokio::sync::oneshot::Receiver<TrialVerdict>,
    ) -> ApprovalDecision {
        self.ask_during_trial(call_id, call, gate, facts, verdict)
            .await
    }
}

/// The decision of a clean trial.
fn ran_in_view() -> ApprovalDecision {
    ApprovalDecision::ApproveUnasked(format!("by policy: {RAN_IN_VIEW}"))
}
