//! The registry's side of `approval = "by_effect"`: run a call's trial in
//! the throwaway view ([`Tool::trial`]), return its result when the view
//! saw no effect, otherwise hand the operator's decision back; a trial
//! still running after a moment gets its card at once.
//!
//! It never runs a call outside the view, but for one that the trial found
//! changes nothing except a managed pane's directory or shell variables
//! (`cd`, `X=1`): that runs
//! in the pane, since the view's shell is not the pane's. What is approved
//! afterwards runs through the registry's ordinary path.

use serde_json::json;

use super::envelope;
use super::failure::FailureClass;
use super::registry::{ToolRegistry, ToolRun};
use super::trial_approver::{TrialApprover, TrialVerdict};
use super::{OutputsRun, Tool, ToolContext, ToolError, ToolOutput, ToolStream, Trial};
use vigil_policy::call::ToolCall;
use vigil_policy::gate::{RAN_IN_OUTPUTS, RAN_IN_PANE};
use vigil_protocol::approval::ApprovalDecision;

impl ToolRegistry {
    /// `approval = "by_effect"`: run the call in the throwaway view. No
    /// effect: the view's result is the call's (`Ok`, recorded as such).
    /// Otherwise the operator decides with the trial's report on the card
    /// (`Err`: that decision, handled like any other).
    pub(super) async fn try_in_view(
        &self,
        tool: &dyn Tool,
        call: &ToolCall,
        gate: &vigil_protocol::approval::GateInfo,
        ctx: &ToolContext,
    ) -> Result<ToolRun, ApprovalDecision> {
        let mut facts = call.facts.clone();
        let Some(trials) = self.trials.clone() else {
            let why = "by_effect: no approver takes trials here; nothing was run";
            return Err(ApprovalDecision::DenyWithReason(why.into()));
        };
        let trials = trials.as_ref();
        let trying = ToolContext {
            sandboxed: true,
            asked: false,
            approved_cwd: facts.cwd.clone(),
            ..ctx.clone()
        };
        trying.emit(ToolStream::Started {
            summary: format!("{} (trying in the view)", gate.action),
        });
        let trial = tool.trial(call, &trying);
        tokio::pin!(trial);
        let trial = tokio::select! {
            t = &mut trial => t,
            _ = tokio::time::sleep(CARD_AFTER) => {
                let d = card_during_trial(trials, tool, trial, call, gate, facts, ctx).await;
                trying.emit(ToolStream::Completed);
                return d;
            }
        };
        trying.emit(ToolStream::Completed);
        match trial {
            Trial::Clean(output) => {
                let d = trials.ran_in_view(&ctx.call_id, call, gate, facts).await;
                Ok(viewed_run(output, d))
            }
            Trial::InPane(_) | Trial::Outputs(_) => {
                let real = ForReal::of(trial).expect("a run for real");
                let cwd = facts.cwd.clone();
                let d = trials
                    .runs_for_real(&ctx.call_id, call, gate, facts, real.how())
                    .await;
                Ok(real.run(tool, call, cwd, d, ctx).await)
            }
            Trial::Asks { why, report } => {
                facts.trial = Some(why);
                Err(trials
                    .decide_after_trial(&ctx.call_id, call, gate, facts, report)
                    .await)
            }
        }
    }
}

/// How long a trial runs before its card is shown anyway.
const CARD_AFTER: std::time::Duration = std::time::Duration::from_millis(1500);

/// A trial still running after [`CARD_AFTER`]: the card appears now
/// and the broker decides by the operator's answer or the trial's end,
/// whichever is first. A clean end returns the trial's result; an
/// answer first ends the trial (dropping it ends the view).
async fn card_during_trial(
    trials: &dyn TrialApprover,
    tool: &dyn Tool,
    trial: std::pin::Pin<&mut (impl std::future::Future<Output = Trial> + ?Sized)>,
    call: &ToolCall,
    gate: &vigil_protocol::approval::GateInfo,
    facts: vigil_protocol::approval::CallFacts,
    ctx: &ToolContext,
) -> Result<ToolRun, ApprovalDecision> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let facts_cwd = facts.cwd.clone();
    let decide = trials.decide_during_trial(&ctx.call_id, call, gate, facts, rx);
    tokio::pin!(decide);
    let mut trial = Some(trial);
    let mut tx = Some(tx);
    let mut clean = None;
    let mut real = None;
    loop {
        tokio::select! {
            done = async { trial.as_mut().expect("guarded").as_mut().await }, if trial.is_some() => {
                trial = None;
                let verdict = match done {
                    Trial::Clean(output) => {
                        clean = Some(output);
                        TrialVerdict::Clean
                    }
                    Trial::Asks { why, report } => TrialVerdict::Asks { why, report },
                    // Like a clean trial: the card is withdrawn and the
                    // command runs for real (in the pane, or confined to
                    // its outputs).
                    done @ (Trial::InPane(_) | Trial::Outputs(_)) => {
                        let r = ForReal::of(done).expect("a run for real");
                        let verdict = TrialVerdict::ForReal(r.how());
                        real = Some(r);
                        verdict
                    }
                };
                if let Some(tx) = tx.take() {
                    let _ = tx.send(verdict);
                }
            }
            d = &mut decide => {
                return match (d, clean) {
                    (d @ ApprovalDecision::ApproveUnasked(_), Some(output)) => {
                        Ok(viewed_run(output, d))
                    }
                    (d @ ApprovalDecision::ApproveUnasked(_), None) if real.is_some() => {
                        let real = real.expect("checked");
                        Ok(real.run(tool, call, facts_cwd.clone(), d, ctx).await)
                    }
                    (d, _) => Err(d),
                };
            }
        }
    }
}

/// A call that runs for real, unasked, after its trial: a command that
/// only changes the pane's shell runs in the pane (not in the kernel
/// sandbox, whose shell is not the pane's); a build that changed only
/// outputs git ignores runs in the kernel sandbox, writing only beneath
/// them. Both in the directory the trial ran in.
enum ForReal {
    InPane,
    Outputs(OutputsRun),
}

impl ForReal {
    fn of(trial: Trial) -> Option<Self> {
        match trial {
            Trial::InPane(_) => Some(ForReal::InPane),
            Trial::Outputs(run) => Some(ForReal::Outputs(run)),
            _ => None,
        }
    }

    /// How the record names it.
    fn how(&self) -> &'static str {
        match self {
            ForReal::InPane => RAN_IN_PANE,
            ForReal::Outputs(_) => RAN_IN_OUTPUTS,
        }
    }

    async fn run(
        self,
        tool: &dyn Tool,
        call: &ToolCall,
        cwd: Option<String>,
        decision: ApprovalDecision,
        ctx: &ToolContext,
    ) -> ToolRun {
        let (real, summary) = match &self {
            ForReal::InPane => (
                ToolContext {
                    sandboxed: false,
                    asked: false,
                    approved_cwd: cwd,
                    ..ctx.clone()
                },
                "(only the pane's shell changes: running it in the pane)".to_string(),
            ),
            ForReal::Outputs(run) => (
                ToolContext {
                    sandboxed: true,
                    asked: false,
                    approved_cwd: cwd,
                    grants: run.grants.clone(),
                    ..ctx.clone()
                },
                format!(
                    "(it changed only outputs git ignores: running it in the sandbox, writing \
                     only beneath {})",
                    run.names
                ),
            ),
        };
        real.emit(ToolStream::Started { summary });
        let made = match &self {
            ForReal::Outputs(run) => run.make_missing(),
            ForReal::InPane => Ok(()),
        };
        let result = match made {
            Ok(()) => tool.execute(call, &real).await,
            Err(why) => Err(ToolError::failed(FailureClass::PermissionDenied, why)),
        };
        real.emit(ToolStream::Completed);
        match result {
            Ok(output) => {
                let mut env = envelope::wrap(output.result.clone());
                env["ran_in"] = json!(self.how());
                ToolRun {
                    model_text: env.to_string(),
                    output: Some(output),
                    error: None,
                    decision: Some(decision),
                    class: None,
                    notes: Vec::new(),
                    suppressed: false,
                }
            }
            Err(e) => {
                let mut run = ToolRun::failed(e);
                run.decision = Some(decision);
                run
            }
        }
    }
}

/// The run of a call whose trial saw no effect: the trial's result.
fn viewed_run(output: ToolOutput, decision: ApprovalDecision) -> ToolRun {
    let mut env = envelope::wrap(output.result.clone());
    env["ran_in"] = json!(vigil_policy::gate::RAN_IN_VIEW);
    ToolRun {
        model_text: env.to_string(),
        output: Some(output),
        error: None,
        decision: Some(decision),
        class: None,
        notes: Vec::new(),
        suppressed: false,
    }
}
