//! `run_shell`'s trial in the throwaway view (`approval = "by_effect"`):
//! run the command there, in the directory and with the shell and
//! environment a real run would have, and return its result when the view
//! saw no effect; otherwise say why it must be asked, with the report.
//!
//! A trial never runs anything outside the view: a command that is asked
//! afterwards runs for real only on the operator's word, through
//! `run_shell`'s ordinary execute path. What a clean trial may still hand
//! on to run for real, unasked: a command that only changes a managed
//! pane's shell ([`Trial::InPane`]), and a build whose only effects were
//! outputs git ignores ([`Trial::Outputs`], confined to them).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use vigil_policy::call::ToolCall;

use super::live::LiveOutput;
use super::shell_args::{Wait, parse};
use super::{OutputsRun, ToolContext, ToolOutput, Trial};
use super::{build_command, build_outputs};
use vigil_exec::capture::Retain;
use vigil_exec::preview::{self, PreviewOptions, Run};
use vigil_exec::{ExecutionContext, RunOutcome, TrialShell};
use vigil_policy::denylist::Denylist;
use vigil_protocol::preview::PreviewReport;

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
        state,
    }) = shell.exec.trial_shell(session, pane).await
    else {
        return asks(
            "not tried in the view: the view cannot stand in for this target here (another \
             machine, or a pane not made yet)",
        );
    };
    let in_pane = env.is_some();
    let pane_shell = match state {
        Some(Err(why)) => return asks(format!("not tried in the view: {why}")),
        Some(Ok(p)) => Some(p),
        None => None,
    };
    if let Some(name) = pane_shell
        .as_ref()
        .and_then(|p| expands_withheld(&args.command, &p.replay.withheld))
    {
        return asks(format!(
            "not tried in the view: it expands `${name}`, a variable of the pane that no command \
             of vigil's set, or whose name looks like a secret (kept out of trials)"
        ));
    }
    let script = match &pane_shell {
        Some(p) => vigil_exec::shell_replay::script(p.kind, &p.replay, &args.command),
        None => args.command.clone(),
    };
    // Exit 127 may not mean "not found" in the pane: the replay holds
    // only the functions and aliases vigil's own commands defined there
    // (an rc file's are the operator's), and dash cannot list functions.
    let unknown_127 = in_pane;
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
    // A build run for real after its trial reads what the trial read: in
    // a pane, the pane's shell and its replayed state.
    let real_shell = pane_shell
        .as_ref()
        .map(|_| (PathBuf::from(&program), script.clone()));
    let path = trial_path(env.as_deref());
    let run = Run {
        env,
        retain: Some(&retain),
        on_output: live.as_ref().map(LiveOutput::output_fn),
        shell: Some(program),
        ..Run::default()
    };
    let result = preview::trial(&script, Path::new(&cwd), opts, run)
        .await
        .map(|(mut report, outcome)| {
            report.command = args.command.clone();
            (report, outcome)
        });
    if let Some(live) = &live {
        live.finish(&[]);
    }
    vigil_exec::capture::release_memory();
    match result {
        Err(e) => asks(format!("the view could not run it: {e}")),
        Ok((report, outcome)) => {
            let real = RealRun {
                shell: real_shell,
                path,
            };
            let script = call.command.as_deref().map(|c| &c.script);
            let verdict = judge(&shell, report, &outcome, unknown_127, real, script);
            if let Some(p) = &pane_shell {
                return for_the_pane(verdict, call, &p.replay.exported);
            }
            verdict
        }
    }
}

/// A clean trial in a managed pane: a command that only changes the
/// pane's directory or shell variables runs there for real
/// ([`Trial::InPane`]); one that only changes what later commands there
/// run or see (an alias, an export, an option, `umask`; a variable the
/// pane exports, set or unset) is asked, so that `y` makes it there; one that changes it
/// besides doing more keeps the view's result, and the model is told the
/// pane did not change.
fn for_the_pane(verdict: Trial, call: &ToolCall, exported: &[String]) -> Trial {
    let Trial::Clean(mut output) = verdict else {
        return verdict;
    };
    let Some(read) = call.command.as_deref() else {
        return Trial::Clean(output);
    };
    let script = &read.script;
    use vigil_policy::pane_state::{bare_assignments, quiet_state, state_only};
    let exports = bare_assignments(script)
        .into_iter()
        .find(|n| exported.contains(n));
    if state_only(script) && (!quiet_state(script) || exports.is_some()) {
        for path in &output.spill {
            let _ = std::fs::remove_file(path);
        }
        let what = exports.map_or("an alias, an export, an option or the umask".into(), |n| {
            format!("`{n}`, which the pane exports")
        });
        return asks(format!(
            "tried in the view: it changes {what} in the pane, which later commands there (the \
             operator's own, and those approved) would run with; y makes it there"
        ));
    }
    if state_only(script) {
        for path in &output.spill {
            let _ = std::fs::remove_file(path);
        }
        return Trial::InPane(
            "tried in the view: it only changes the pane's shell (directory, variables, \
             aliases, options)"
                .into(),
        );
    }
    if vigil_policy::pane_state::changes_state(script)
        && let Some(obj) = output.result.as_object_mut()
    {
        obj.insert(
            "pane_unchanged".into(),
            "this ran in a throwaway copy of the pane's shell: its cd/export/alias did not \
             change the pane. Run the state change alone (e.g. `cd DIR`) to make it there"
                .into(),
        );
    }
    Trial::Clean(output)
}

/// How a build would run for real after its trial: the trial's shell and
/// text in a pane (its replayed state), and the trial's `PATH`.
struct RealRun {
    shell: Option<(PathBuf, String)>,
    path: Option<std::ffi::OsString>,
}

/// The `PATH` a trial runs with: the pane's, else the one every tool
/// process gets.
fn trial_path(
    env: Option<&[(std::ffi::OsString, std::ffi::OsString)]>,
) -> Option<std::ffi::OsString> {
    match env {
        Some(vars) => vars
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.clone()),
        None => vigil_exec::env::current()
            .keeps(std::ffi::OsStr::new("PATH"))
            .then(|| std::env::var_os("PATH"))
            .flatten(),
    }
}

/// The call's result when the view saw no effect, else why it is asked.
fn judge(
    shell: &Host<'_>,
    report: PreviewReport,
    outcome: &RunOutcome,
    unknown_127: bool,
    real: RealRun,
    script: Option<&vigil_shell::Script>,
) -> Trial {
    let reading = read_trial(&report, outcome, unknown_127, script);
    if let Reading::Clean = reading {
        return Trial::Clean((shell.finish)(outcome));
    }
    // The trial's output is not the call's: its spill files go, so the
    // model cannot read them later.
    for c in outcome.captured() {
        if let Some(path) = c.spill {
            let _ = std::fs::remove_file(path);
        }
    }
    match reading {
        Reading::Outputs { set, tree } => {
            let (shell, script) = real.shell.unzip();
            Trial::Outputs(OutputsRun {
                names: set.names(&tree),
                grants: vigil_exec::sandbox::Grants {
                    write_dirs: set.dirs,
                    shell,
                    script,
                    path: real.path,
                },
                missing: set.missing,
            })
        }
        Reading::Asks(why) => Trial::Asks {
            why,
            report: Some(Box::new(report)),
        },
        Reading::Clean => unreachable!("returned above"),
    }
}

/// What by_effect makes of a trial.
enum Reading {
    /// No effect: its result stands.
    Clean,
    /// Only outputs git ignores, of a known build: it runs for real in the
    /// sandbox, writing only beneath them.
    Outputs {
        set: build_outputs::WriteSet,
        tree: PathBuf,
    },
    /// Asked, and why.
    Asks(String),
}

/// by_effect's reading of a trial: the report's effects, what the output
/// shows (a bound reached, a refusal, a secret), and whether it is a known
/// build that changed only its outputs. The one reading the agent and
/// `vigil policy check --preview` ([`by_effect_verdict`]) both give.
fn read_trial(
    report: &PreviewReport,
    outcome: &RunOutcome,
    unknown_127: bool,
    script: Option<&vigil_shell::Script>,
) -> Reading {
    let mut effects = Vec::new();
    if outcome.captured().iter().any(|c| c.capped) {
        let cap = vigil_exec::sandbox::world::config().trial_output_cap();
        effects.push(format!(
            "reaches a bound of the view: output past {} MB (only that much was kept)",
            cap / (1024 * 1024)
        ));
    }
    effects.extend(differences(outcome, unknown_127));
    if let Some(what) = secret_in_output(outcome) {
        effects.push(format!(
            "its output holds what looks like a secret ({what})"
        ));
    }
    let seen = report.effects();
    if effects.is_empty() && seen.is_empty() {
        return Reading::Clean;
    }
    // Only a known build of the sources runs unasked in its outputs: what
    // it leaves there, the operator's tools run later (`build_command`).
    if let (true, Some(tree), Some(script)) = (effects.is_empty(), report.writable.first(), script)
    {
        match build_command::from_sources(script)
            .and_then(|()| build_outputs::write_set(report, tree))
        {
            Ok(set) => {
                return Reading::Outputs {
                    set,
                    tree: tree.clone(),
                };
            }
            Err(why) => tracing::debug!(%why, "not a build inside its outputs"),
        }
    }
    effects.splice(0..0, seen);
    Reading::Asks(format!(
        "tried in the view: {}; y runs it again for real",
        effects.join("; ")
    ))
}

/// by_effect's verdict on a trial of `command` in a plain process, in
/// words (`vigil policy check --preview`): `Ok` when it would not ask
/// (what happens instead), `Err` with why it asks.
pub fn by_effect_verdict(
    report: &PreviewReport,
    outcome: &RunOutcome,
    command: &str,
) -> Result<String, String> {
    let script = vigil_shell::parse(command);
    match read_trial(report, outcome, false, Some(&script)) {
        Reading::Clean => Ok("no effects: its result stands, unasked".into()),
        Reading::Outputs { set, tree } => Ok(format!(
            "it changed only outputs git ignores: it runs again for real in the sandbox, writing \
             only beneath {}",
            set.names(&tree)
        )),
        Reading::Asks(why) => Err(why),
    }
}

/// The secret scan reads a spill file this much at a time…
const SCAN_CHUNK: u64 = 4 * 1024 * 1024;
/// …keeping this much of the chunk before, so a line cut at a chunk's end
/// is seen whole.
const SCAN_OVERLAP: usize = 64 * 1024;

/// A secret-looking text in the trial's output (both streams, whole: the
/// spill files too, to their end, a chunk at a time). Output that was not
/// kept (no spill folder, a spill that failed) is itself the answer: what
/// was not checked is asked.
fn secret_in_output(outcome: &RunOutcome) -> Option<String> {
    outcome.captured().iter().find_map(|c| {
        secret_in_capture(c).or_else(|| {
            let kept = (c.head.len() + c.tail.len()) as u64;
            let unchecked = |why: String| Some(format!("output that could not be checked: {why}"));
            match (&c.spill, &c.spill_error) {
                _ if kept >= c.total => None,
                (Some(_), None) => None,
                (_, Some(why)) => unchecked(why.clone()),
                (None, None) => unchecked(format!("{} bytes were not kept", c.total - kept)),
            }
        })
    })
}

/// A secret-looking text in what a real run kept (the windows the model
/// sees and the spill file it may read later): for a run nobody asked for,
/// whose output no trial saw (the machine's files can differ from the
/// view's). What was not kept, the model cannot read either.
pub(crate) fn secret_in_kept(outcome: &RunOutcome) -> Option<String> {
    outcome.captured().iter().find_map(secret_in_capture)
}

/// One stream: its windows, then its spill file to the end (one that
/// cannot be read back counts as holding a secret).
fn secret_in_capture(c: &vigil_exec::capture::Captured) -> Option<String> {
    let mut text = String::from_utf8_lossy(&c.head).into_owned();
    text.push('\n');
    text.push_str(&String::from_utf8_lossy(&c.tail));
    vigil_policy::secret_content::find(&text).or_else(|| {
        let path = c.spill.as_ref()?;
        secret_in_file(path).unwrap_or_else(|e| {
            Some(format!(
                "output that could not be read back to check: {}: {e}",
                path.display()
            ))
        })
    })
}

/// [`secret_content::find`](vigil_policy::secret_content::find) over a
/// whole file of any length, in bounded memory.
pub(crate) fn secret_in_file(path: &Path) -> std::io::Result<Option<String>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let mut buf = Vec::new();
    loop {
        let keep_from = buf.len().saturating_sub(SCAN_OVERLAP);
        buf.drain(..keep_from);
        let before = buf.len();
        (&mut file).take(SCAN_CHUNK).read_to_end(&mut buf)?;
        if buf.len() == before {
            return Ok(None);
        }
        if let Some(what) = vigil_policy::secret_content::find(&String::from_utf8_lossy(&buf)) {
            return Ok(Some(what));
        }
    }
}

/// The first of `withheld` that `command` expands (`$NAME`, `${NAME…}`).
fn expands_withheld<'a>(command: &str, withheld: &'a [String]) -> Option<&'a str> {
    withheld.iter().map(String::as_str).find(|name| {
        [format!("${name}"), format!("${{{name}")]
            .iter()
            .any(|pat| {
                command.match_indices(pat.as_str()).any(|(at, _)| {
                    let next = command[at + pat.len()..].chars().next();
                    !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                        || pat.starts_with("${")
                })
            })
    })
}

/// What in the trial's own result says a real run could differ: a
/// program the pane's shell may know (exit 127 in a pane whose functions
/// vigil could not replay), an operation the view refused.
fn differences(outcome: &RunOutcome, unknown_127: bool) -> Vec<String> {
    let mut out = Vec::new();
    if unknown_127 && outcome.exit_code == Some(127) {
        out.push("no such program in the view (the pane's shell may define it)".into());
    }
    let [_, stderr] = outcome.captured();
    let text = String::from_utf8_lossy(&stderr.head);
    if text.contains(vigil_exec::shell_replay::REPLAY_FAILED) {
        out.push("the pane's shell state could not be replayed in the view".into());
    }
    if let Some(line) = text
        .lines()
        .find(|l| REFUSALS.iter().any(|r| l.contains(r)))
    {
        let line: String = line.chars().take(160).collect();
        out.push(format!("the view refused an operation: {line}"));
    }
    out
}
