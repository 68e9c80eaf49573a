//! `run_shell`'s trial in the throwaway view (`approval = "by_effect"`):
//! run the command there, in the directory and with the shell and
//! environment a real run would have, and return its result when the view
//! saw no effect; otherwise say why it must be asked, with the report.
//!
//! A trial never runs anything outside the view: a command that is asked
//! afterwards runs for real only on the operator's word, through
//! `run_shell`'s ordinary execute path.

use std::path::Path;
use std::sync::Arc;
use vigil_policy::call::ToolCall;

use super::live::LiveOutput;
use super::shell_args::{Wait, parse};
use super::{ToolContext, ToolOutput, Trial};
use vigil_exec::capture::Retain;
use vigil_exec::preview::{self, PreviewOptions, PreviewReport, Run};
use vigil_exec::{ExecutionContext, RunOutcome, TrialShell};
use vigil_policy::denylist::Denylist;

/// Words in a trial's stderr that mean the view refused something a real
/// run may be allowed (no capability, read-only places, masks).
const REFUSALS: &[&str] = &[
    "Read-only file system",
    "Operation not permitted",
    "Permission denied",
];

fn asks(why: impl Into<String>) -> Trial {
    Trial::Asks {
        why: why.into(),
        report: None,
    }
}

/// What a trial needs of `run_shell`: where it runs, its denylist, how
/// its output is kept and how a finished run becomes the model's result.
pub(super) struct Host<'a> {
    pub exec: &'a ExecutionContext,
    pub denylist: &'a Denylist,
    pub retain: Retain,
    pub finish: &'a (dyn Fn(&RunOutcome) -> ToolOutput + Sync),
}

/// See the module doc.
pub(super) async fn trial(shell: Host<'_>, call: &ToolCall, ctx: &ToolContext) -> Trial {
    let args = match parse(call) {
        Ok(a) => a,
        Err(e) => return asks(format!("not tried in the view: {e}")),
    };
    let denied = match call.command.as_deref() {
        Some(read) => shell.denylist.denied_by(read).is_some(),
        None => true,
    };
    if denied {
        return asks("not tried in the view: the command is on the denylist");
    }
    if args.wait == Wait::Detach {
        return asks("not tried in the view: a detached command keeps running after the view ends");
    }
    let (session, pane) = (args.session.as_deref(), args.pane.as_deref());
    let Some(TrialShell {
        shell: program,
        env,
    }) = shell.exec.trial_shell(session, pane).await
    else {
        return asks(
            "not tried in the view: the view cannot stand in for this target here (another \
             machine, or a pane not made yet)",
        );
    };
    let in_pane = env.is_some();
    let cwd = match &ctx.approved_cwd {
        Some(dir) => dir.clone(),
        None => match shell.exec.workdir(session, pane).await {
            Some(dir) => dir,
            None => return asks("not tried in the view: where it would run is not known"),
        },
    };
    let mut opts = PreviewOptions::default();
    if let Wait::Timeout(limit) = args.wait {
        opts.time_limit = opts.time_limit.min(limit);
    }
    let live: Option<Arc<LiveOutput>> = ctx.sink().cloned().map(LiveOutput::new);
    // Nobody asked for this run: what it may leave on the disk is bounded.
    let retain = Retain {
        cap: Some(vigil_exec::sandbox::world::config().trial_output_cap()),
        ..shell.retain.clone()
    };
    let run = Run {
        env,
        retain: Some(&retain),
        on_output: live.as_ref().map(LiveOutput::output_fn),
        shell: Some(program),
        ..Run::default()
    };
    let result = preview::trial(&args.command, Path::new(&cwd), opts, run).await;
    if let Some(live) = &live {
        live.finish(&[]);
    }
    vigil_exec::capture::release_memory();
    match result {
        Err(e) => asks(format!("the view could not run it: {e}")),
        Ok((report, outcome)) => judge(&shell, report, &outcome, in_pane),
    }
}

/// The call's result when the view saw no effect, else why it is asked.
fn judge(shell: &Host<'_>, report: PreviewReport, outcome: &RunOutcome, in_pane: bool) -> Trial {
    let mut effects = report.effects();
    if outcome.captured().iter().any(|c| c.capped) {
        let cap = vigil_exec::sandbox::world::config().trial_output_cap();
        effects.push(format!(
            "reaches a bound of the view: output past {} MB (only that much was kept)",
            cap / (1024 * 1024)
        ));
    }
    effects.extend(differences(outcome, in_pane));
    if let Some(what) = secret_in_output(outcome) {
        effects.push(format!(
            "its output holds what looks like a secret ({what})"
        ));
    }
    if effects.is_empty() {
        return Trial::Clean((shell.finish)(outcome));
    }
    // The trial's output is not the call's: its spill files go, so the
    // model cannot read them later.
    for c in outcome.captured() {
        if let Some(path) = c.spill {
            let _ = std::fs::remove_file(path);
        }
    }
    Trial::Asks {
        why: format!(
            "tried in the view: {}; y runs it again for real",
            effects.join("; ")
        ),
        report: Some(Box::new(report)),
    }
}

/// Most bytes of a spill file read for the secret scan.
const SCAN_LIMIT: u64 = 16 * 1024 * 1024;

/// A secret-looking text in the trial's output (both streams, whole: the
/// spill files too, as far as [`SCAN_LIMIT`]).
fn secret_in_output(outcome: &RunOutcome) -> Option<String> {
    use std::io::Read;
    outcome.captured().iter().find_map(|c| {
        let mut text = String::from_utf8_lossy(&c.head).into_owned();
        text.push('\n');
        text.push_str(&String::from_utf8_lossy(&c.tail));
        if let Some(path) = &c.spill
            && let Ok(f) = std::fs::File::open(path)
        {
            let mut all = Vec::new();
            let _ = f.take(SCAN_LIMIT).read_to_end(&mut all);
            text.push('\n');
            text.push_str(&String::from_utf8_lossy(&all));
        }
        vigil_policy::secret_content::find(&text)
    })
}

/// What in the trial's own result says a real run could differ: a
/// program the pane's shell may know (exit 127 in a pane), an operation
/// the view refused.
fn differences(outcome: &RunOutcome, in_pane: bool) -> Vec<String> {
    let mut out = Vec::new();
    if in_pane && outcome.exit_code == Some(127) {
        out.push("no such program in the view (the pane's shell may define it)".into());
    }
    let [_, stderr] = outcome.captured();
    let text = String::from_utf8_lossy(&stderr.head);
    if let Some(line) = text
        .lines()
        .find(|l| REFUSALS.iter().any(|r| l.contains(r)))
    {
        let line: String = line.chars().take(160).collect();
        out.push(format!("the view refused an operation: {line}"));
    }
    out
}
