//! `vigil policy check -- CMD…` and `vigil policy replay SESSION`: how the
//! current approval policy (the mode, the `[[approval.rules]]` and the
//! target's sandbox) would decide a command, or every gated call of a
//! recorded session; `check --preview` also previews the command in a
//! throwaway view ([`crate::exec::preview`]). It asks the same broker the agent uses
//! ([`ApprovalBroker::preview`]) and only prints; it never runs a call
//! outside a preview's view and never changes a session.

use std::io::Write;
use std::path::Path;

use tokio::sync::mpsc;

use crate::agent::approval::{ApprovalBroker, Outcome, Policy, Preview};
use crate::config::Config;
use crate::exec::capture::Retain;
use crate::exec::preview::{PreviewOptions, Run};
use crate::policy::rules::PolicyRules;
use crate::shell;
use vigil_protocol::AgentEvent;
use vigil_protocol::approval::{ApprovalDecision, GateInfo};

/// A broker with the config's rules and no operator.
pub fn broker(config: &Config, policy: Policy, can_sandbox: bool) -> ApprovalBroker {
    let (tx, _rx) = mpsc::unbounded_channel();
    let broker = ApprovalBroker::new(tx, "local".into(), policy);
    crate::policy::secret_reads::install(config.secret_places());
    broker.set_rules(PolicyRules::from_config(&config.approval));
    broker.set_denylist(config.tools.shell_denylist.clone());
    broker.set_can_sandbox(can_sandbox);
    broker
}

/// The command line `vigil policy check` reads from its arguments: one
/// argument is the command line itself (`'rm -rf x'`); several are the
/// words of one command, each kept a word (`-- sh -c 'touch x'` is
/// `sh -c 'touch x'`, never `sh -c touch x`).
pub fn command_line(words: &[String]) -> String {
    match words {
        [one] => one.clone(),
        _ => words
            .iter()
            .map(|w| crate::exec::transport::sh_quote(w))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// How the parser reads `command`, in one line.
pub fn parsed_summary(command: &str) -> String {
    let script = shell::parse(command);
    if let Some(why) = script.not_plain_reason() {
        return why;
    }
    let commands: Vec<String> = script
        .commands
        .iter()
        .map(|c| {
            let mut parts = c.assignments.clone();
            parts.extend(c.loose_words().iter().map(|w| format!("[{w}]")));
            parts.join(" ")
        })
        .collect();
    match commands.len() {
        1 => format!("one simple command: {}", commands[0]),
        n => format!("{n} simple commands: {}", commands.join(" ; ")),
    }
}

/// The decision and whether it runs sandboxed, in words.
pub fn describe(outcome: &Outcome, can_sandbox: bool) -> (String, &'static str) {
    match outcome {
        Outcome::Unasked(by) => {
            let by = by.describe(&ApprovalDecision::ApproveOnce);
            if can_sandbox {
                (format!("allow without asking ({by})"), "yes")
            } else {
                let why = format!("ask ({by} would allow it, but this target cannot sandbox)");
                (why, "no")
            }
        }
        Outcome::Approve(_) => ("allow (the operator's blanket approval)".into(), "no"),
        Outcome::Ask(Some(why)) => (format!("ask ({why})"), "no"),
        Outcome::Ask(None) => ("ask".into(), "no"),
        Outcome::Deny(why, _) => (format!("deny ({why})"), "no"),
        Outcome::Trial => (
            "try in the throwaway view first: its result stands when nothing would change, \
             else ask with the trial on the card"
                .into(),
            "view",
        ),
    }
}

/// Print the check of one command.
pub fn check(broker: &ApprovalBroker, can_sandbox: bool, command: &str, out: &mut dyn Write) {
    let Preview {
        assessment,
        outcome,
    } = broker.preview("run_shell", &GateInfo::shell(command));
    let (decision, sandboxed) = describe(&outcome, can_sandbox);
    let _ = writeln!(out, "command:   {command}");
    let _ = writeln!(out, "parsed:    {}", parsed_summary(command));
    let _ = writeln!(
        out,
        "estimate:  {} ({})",
        assessment.risk.as_str(),
        assessment.reason
    );
    let _ = writeln!(out, "decision:  {decision}");
    let _ = writeln!(out, "sandboxed: {sandboxed}");
}

/// Preview `command` in the current directory and print the report;
/// the exit status of `vigil policy check --preview`. The `by effect:`
/// line is by_effect's own reading of this trial
/// ([`crate::tools::by_effect_verdict`]: the report, the output's secrets
/// and bounds, a build in its outputs), as a plain process sees it.
pub async fn preview(command: &str, opts: PreviewOptions, out: &mut dyn Write) -> i32 {
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("vigil: cannot read the current directory: {e}");
            return crate::cli::headless::exit::FAILED;
        }
    };
    // The output as a trial keeps it: whole (to check it), removed after.
    let spill = match tempfile::Builder::new().prefix("vigil-check-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("vigil: cannot make a folder for the output: {e}");
            return crate::cli::headless::exit::FAILED;
        }
    };
    let retain = Retain {
        spill_dir: Some(spill.path().to_path_buf()),
        labels: ["stdout".into(), "stderr".into()],
        window: 4096,
        cap: Some(crate::exec::sandbox::world::config().trial_output_cap()),
    };
    let run = Run {
        retain: Some(&retain),
        ..Run::default()
    };
    // What by_effect asks without a trial (another process, the network,
    // a secret read…), as the agent's broker decides it.
    let scope = crate::policy::secret_reads::Scope::current();
    let not_tried =
        crate::policy::view_eligible::check(&shell::parse(command), false, &scope).err();
    match crate::exec::preview::trial(command, &cwd, opts, run).await {
        Ok((mut report, outcome)) => {
            report.command = command.to_string();
            let verdict = match not_tried {
                Some(e) => Err(e.to_string()),
                None => crate::tools::by_effect_verdict(&report, &outcome, command),
            };
            let verdict = match verdict {
                Ok(what) => format!("{what} (by_effect would not ask)"),
                Err(why) => format!("asks: {why}"),
            };
            let _ = writeln!(out, "by effect: {verdict}");
            let _ = writeln!(out, "\n{}", report.to_text());
            crate::cli::headless::exit::OK
        }
        Err(e) => {
            let _ = writeln!(out, "\npreview:   not made ({e})");
            crate::cli::headless::exit::FAILED
        }
    }
}

/// Replay every gated call recorded in `events` (a session's
/// `events.jsonl`) through `broker`; returns (calls, would run unasked).
pub fn replay(
    broker: &ApprovalBroker,
    can_sandbox: bool,
    events: &Path,
    out: &mut dyn Write,
) -> std::io::Result<(usize, usize)> {
    let text = std::fs::read_to_string(events)?;
    let (mut calls, mut unasked) = (0, 0);
    for line in text.lines() {
        let Ok(AgentEvent::ApprovalRequested { request }) = serde_json::from_str(line) else {
            continue;
        };
        calls += 1;
        let preview = broker.preview_call(&request.tool, &request.gate, (*request.facts).clone());
        let (decision, sandboxed) = describe(&preview.outcome, can_sandbox);
        let mark = if sandboxed == "yes" {
            unasked += 1;
            "UNASKED"
        } else {
            "       "
        };
        let _ = writeln!(
            out,
            "{mark} {}: {}\n        → {decision}; estimate {} ({})",
            request.tool,
            request.gate.action,
            preview.assessment.risk.as_str(),
            preview.assessment.reason
        );
    }
    let _ = writeln!(
        out,
        "{calls} gated calls; {unasked} would have run unasked (sandboxed) under the current policy"
    );
    Ok((calls, unasked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_prints_decision_rule_reason_and_sandbox() {
        let text = "[[approval.rules]]\nname = \"logs\"\ncommand = [\"git\", \"log\"]\n\
                    decision = \"allow\"\n";
        let config = Config::from_toml(text, Path::new("p.toml")).unwrap();
        let b = broker(&config, Policy::AutoApproveLow, true);
        let mut out = Vec::new();
        check(&b, true, "git log -3", &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("policy rule 1 \"logs\" (p.toml:1)"), "{s}");
        assert!(s.contains("sandboxed: yes"), "{s}");
        let mut out = Vec::new();
        check(&b, true, "echo 'open", &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("parser rejects it"), "{s}");
        assert!(s.contains("decision:  ask"), "{s}");
        let b = broker(&config, Policy::AutoApproveLow, false);
        let mut out = Vec::new();
        check(&b, false, "ls", &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("cannot sandbox"), "{s}");
        assert!(s.contains("sandboxed: no"), "{s}");
    }
}
