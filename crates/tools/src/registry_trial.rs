//! The registry's side of `approval = "by_effect"`: run a call's trial in
//! the throwaway view ([`Tool::trial`]), return its result when the view
//! saw no effect, otherwise hand the operator's decision back; a trial
//! still running after a moment gets its card at once.
//!
//! It never runs a call outside the view: what is approved afterwards runs
//! through the registry's ordinary path.

use serde_json::json;

use super::envelope;
use super::registry::{ToolRegistry, ToolRun};
use super::trial_approver::{TrialApprover, TrialVerdict};
use super::{Tool, ToolContext, ToolOutput, ToolStream, Trial};
use vigil_policy::gate::ApprovalDecision;

impl ToolRegistry {
    /// `approval = "by_effect"`: run the call in the throwaway view. No
    /// effect: the view's result is the call's (`Ok`, recorded as such).
    /// Otherwise the operator decides with the trial's report on the card
    /// (`Err`: that decision, handled like any other).
    pub(super) async fn try_in_view(
        &self,
        tool: &dyn Tool,
        arguments: &str,
        gate: &vigil_policy::gate::GateInfo,
        mut facts: vigil_policy::gate::CallFacts,
        ctx: &ToolContext,
    ) -> Result<ToolRun, ApprovalDecision> {
        let name = tool.name();
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
        let trial = tool.trial(arguments, &trying);
        tokio::pin!(trial);
        let trial = tokio::select! {
            t = &mut trial => t,
            _ = tokio::time::sleep(CARD_AFTER) => {
                let d = card_during_trial(trials, trial, name, gate, facts, ctx).await;
                trying.emit(ToolStream::Completed);
                return d;
            }
        };
        trying.emit(ToolStream::Completed);
        match trial {
            Trial::Clean(output) => {
                let d = trials.ran_in_view(&ctx.call_id, name, gate, facts).await;
                Ok(viewed_run(output, d))
            }
            Trial::InPane(why) => {
                let cwd = facts.cwd.clone();
                let d = trials
                    .runs_in_pane(&ctx.call_id, name, gate, facts, &why)
                    .await;
                Ok(pane_run(tool, arguments, cwd, d, ctx).await)
            }
            Trial::Asks { why, report } => {
                facts.trial = Some(why);
                Err(trials
                    .decide_after_trial(&ctx.call_id, name, gate, facts, report)
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
    trial: std::pin::Pin<&mut (impl std::future::Future<Output = Trial> + ?Sized)>,
    name: &str,
    gate: &vigil_policy::gate::GateInfo,
    facts: vigil_policy::gate::CallFacts,
    ctx: &ToolContext,
) -> Result<ToolRun, ApprovalDecision> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let decide = trials.decide_during_trial(&ctx.call_id, name, gate, facts, rx);
    tokio::pin!(decide);
    let mut trial = Some(trial);
    let mut tx = Some(tx);
    let mut clean = None;
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
                    // The card is up already: the operator's `y` runs it
                    // in the pane.
                    Trial::InPane(why) => TrialVerdict::Asks {
                        why: format!("{why}; y runs it in the pane"),
                        report: None,
                    },
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
                    (d, _) => Err(d),
                };
            }
        }
    }
}

/// A command that only changes the pane's shell, after a clean trial: it
/// runs for real in the pane (not in the kernel sandbox, whose shell is
/// not the pane's), in the directory the trial ran in.
async fn pane_run(
    tool: &dyn Tool,
    arguments: &str,
    cwd: Option<String>,
    decision: ApprovalDecision,
    ctx: &ToolContext,
) -> ToolRun {
    let real = ToolContext {
        sandboxed: false,
        asked: false,
        approved_cwd: cwd,
        ..ctx.clone()
    };
    real.emit(ToolStream::Started {
        summary: "(only the pane's shell changes: running it in the pane)".into(),
    });
    let result = tool.execute(arguments, &real).await;
    real.emit(ToolStream::Completed);
    match result {
        Ok(output) => {
            let mut env = envelope::wrap(output.result.clone());
            env["ran_in"] = json!(vigil_policy::gate::RAN_IN_PANE);
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
