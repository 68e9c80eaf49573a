//! `vigil exec`: one task without the console. Assistant text and tool events
//! are printed as lines on stdout (or, with `--json`, every event as one JSON
//! object per line); problems on stderr. A call that needs approval fails
//! closed unless `--auto-approve` was given. The exit code says how the run
//! ended (see [`exit`]).
//!
//! Every text line goes through the console's sanitiser on its way out
//! (`vigil_protocol::terminal::SafeWriter` on stdout, [`clean`] on stderr):
//! no escape sequence, control character or bidi override from the model or
//! a command's output reaches the terminal. `--json` prints the events'
//! JSON unchanged (its strings are escaped JSON, for scripts).
//!
//! It only prints events and answers approvals; it never executes anything
//! itself.

use std::collections::HashMap;
use std::io::Write;

use vigil_protocol::terminal::SafeWriter;
use vigil_protocol::{AgentCommand, AgentEvent, FailureKind, TurnOutcome};

/// Text from the model, a command or a server, safe for the terminal.
pub fn clean(text: &str) -> String {
    vigil_protocol::text::sanitize(text)
}

/// Exit codes of `vigil exec`.
pub mod exit {
    /// The turn completed.
    pub const OK: i32 = 0;
    /// The turn failed for another reason (the model refused the request or
    /// answered nonsense, the agent stopped).
    pub const FAILED: i32 = 1;
    /// Bad command line or configuration.
    pub const USAGE: i32 = 2;
    /// A tool call needed approval and no operator could give it.
    pub const APPROVAL_REQUIRED: i32 = 3;
    /// The run was cancelled.
    pub const CANCELLED: i32 = 4;
    /// The model server could not be reached or kept failing after retries.
    pub const MODEL_UNREACHABLE: i32 = 5;
    /// The turn used all its model rounds (`agent.max_rounds`).
    pub const BUDGET_EXHAUSTED: i32 = 6;
    /// The answer was cut off at the model's token limit (`finish_reason:
    /// "length"`): the text printed is incomplete.
    pub const ANSWER_CUT: i32 = 7;

    /// The text `vigil exec --help` and the README show.
    pub const TABLE: &str = "Exit codes: 0 completed; 1 failed (model refused the request or \
        answered nonsense); 2 usage or configuration error; 3 a tool call needed approval (or \
        was denied) and no operator could give it; 4 cancelled; 5 model server unreachable or \
        kept failing after retries; 6 round budget (agent.max_rounds) exhausted; 7 the answer was cut off at the model's token \
        limit (max_tokens), so the text printed is incomplete.";
}

/// How `vigil exec` prints and decides.
#[derive(Debug, Clone, Copy, Default)]
pub struct DriveOptions {
    /// Approve every gated call (else they fail closed).
    pub auto_approve: bool,
    /// One JSON event per line instead of text.
    pub json: bool,
}

/// Print the events of one turn until it finishes; returns the exit code.
pub async fn drive(
    mut events: tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    commands: tokio::sync::mpsc::UnboundedSender<AgentCommand>,
    prompt: String,
    options: DriveOptions,
    out: &mut (dyn Write + Send),
) -> i32 {
    let mut safe;
    let out: &mut (dyn Write + Send) = if options.json {
        out
    } else {
        safe = SafeWriter::new(out);
        &mut safe
    };
    let auto_approve = options.auto_approve;
    let _ = commands.send(AgentCommand::UserMessage { text: prompt });
    let mut printer = LinePrinter::default();
    let mut failure: Option<FailureKind> = None;
    let mut approval_refused = false;
    let mut interrupted = false;
    loop {
        let sigint = tokio::signal::ctrl_c();
        let event = tokio::select! {
            ev = events.recv() => ev,
            _ = sigint, if !interrupted => {
                interrupted = true;
                eprintln!("vigil: interrupted; cancelling the turn");
                let _ = commands.send(AgentCommand::Cancel);
                continue;
            }
        };
        let Some(event) = event else {
            eprintln!("vigil: the agent stopped unexpectedly");
            return exit::FAILED;
        };
        if options.json
            && let Ok(line) = serde_json::to_string(&event)
        {
            let _ = writeln!(out, "{line}");
        }
        match event {
            AgentEvent::ApprovalRequested { request } => {
                // A call the policy or a session rule decides by itself
                // never asked anyone: say nothing (its run line follows).
                if !options.json && !request.automatic {
                    printer.end_text(out);
                    let _ = writeln!(
                        out,
                        "? approval needed: {} on {}: {}",
                        request.tool, request.target, request.gate.action
                    );
                    if let Some(why) = &request.facts.trial {
                        let _ = writeln!(out, "  why: {why}");
                    }
                }
                // The policy or a rule already decided it; only a call left
                // waiting needs refusing (even with --auto-approve: a policy
                // rule can still say "ask").
                if !request.automatic && !approval_refused {
                    // Fail closed: nobody can answer, so nothing runs. Only
                    // the turn is cancelled (withdrawing the request): no
                    // denial reaches the model, so it cannot go on with
                    // other calls before the cancel lands.
                    approval_refused = true;
                    let hint = if auto_approve {
                        "a policy rule says to ask"
                    } else {
                        "re-run with --auto-approve to allow it"
                    };
                    eprintln!(
                        "vigil: `{}` needs the operator's approval and `vigil exec` has no \
                         operator; nothing was run ({hint}).",
                        clean(&request.tool)
                    );
                    let _ = commands.send(AgentCommand::Cancel);
                }
            }
            AgentEvent::TurnFailed { kind, .. } => failure = Some(kind),
            AgentEvent::SessionRecording { id, .. } => eprintln!("vigil: session {id}"),
            AgentEvent::TurnFinished { outcome } => {
                if !options.json {
                    printer.flush_all(out);
                }
                let _ = out.flush();
                if approval_refused {
                    // However the turn ended (the model may have finished
                    // before the cancel landed), a refused call means 3.
                    return exit::APPROVAL_REQUIRED;
                }
                return match outcome {
                    TurnOutcome::Completed => exit::OK,
                    TurnOutcome::Failed(msg) => {
                        eprintln!("vigil: {}", clean(&msg));
                        match failure {
                            Some(FailureKind::ModelUnreachable) => exit::MODEL_UNREACHABLE,
                            Some(FailureKind::BudgetExhausted) => exit::BUDGET_EXHAUSTED,
                            Some(FailureKind::AnswerCut) => exit::ANSWER_CUT,
                            _ => exit::FAILED,
                        }
                    }
                    TurnOutcome::Cancelled => exit::CANCELLED,
                };
            }
            other if !options.json => printer.print(&other, out),
            _ => {}
        }
        let _ = out.flush();
    }
}

/// Turns events into lines; tool output is printed a whole line at a time.
#[derive(Default)]
struct LinePrinter {
    partial: HashMap<String, String>,
    in_text: bool,
}

impl LinePrinter {
    fn end_text(&mut self, out: &mut (dyn Write + Send)) {
        if self.in_text {
            let _ = writeln!(out);
            self.in_text = false;
        }
    }

    fn print(&mut self, event: &AgentEvent, out: &mut (dyn Write + Send)) {
        match event {
            AgentEvent::AssistantDelta { text } => {
                let _ = write!(out, "{text}");
                self.in_text = !text.is_empty() || self.in_text;
            }
            AgentEvent::AssistantMessage { .. } => self.end_text(out),
            AgentEvent::ToolStarted { name, summary, .. } => {
                self.end_text(out);
                let _ = writeln!(out, "▶ {name}: {summary}");
            }
            AgentEvent::ToolOutput { call_id, text, .. } => {
                let buf = self.partial.entry(call_id.clone()).or_default();
                buf.push_str(text);
                while let Some(pos) = buf.find('\n') {
                    let line: String = buf.drain(..=pos).collect();
                    let _ = writeln!(out, "  │ {}", line.trim_end_matches(['\n', '\r']));
                }
            }
            AgentEvent::ToolInfo { text, .. } => {
                let _ = writeln!(out, "  ℹ {text}");
            }
            AgentEvent::ToolCompleted {
                call_id,
                name,
                summary,
            } => {
                if let Some(rest) = self.partial.remove(call_id)
                    && !rest.is_empty()
                {
                    let _ = writeln!(out, "  │ {rest}");
                }
                let status = match (&summary.error, summary.exit_code) {
                    (Some(err), _) => format!("✗ {name}: {err}"),
                    (None, Some(code)) => format!("✓ {name}: exit {code}"),
                    (None, None) => format!("✓ {name}: done"),
                };
                let cut = if summary.truncated {
                    " (output truncated for the model)"
                } else {
                    ""
                };
                let _ = writeln!(out, "{status} in {} ms{cut}", summary.duration_ms);
            }
            AgentEvent::ApprovalResolved { .. } => {}
            AgentEvent::Notice { text } | AgentEvent::TargetNotice { text } => {
                self.end_text(out);
                let _ = writeln!(out, "· {text}");
            }
            AgentEvent::Error { message } => {
                self.end_text(out);
                eprintln!("vigil: {}", clean(message));
            }
            AgentEvent::McpServerState { name, state, tools } => {
                self.end_text(out);
                let _ = writeln!(out, "· MCP server {name}: {state} ({tools} tools)");
            }
            other => {
                if let Some(text) = other.notice_text() {
                    self.end_text(out);
                    let _ = writeln!(out, "· {text}");
                }
            }
        }
    }

    fn flush_all(&mut self, out: &mut (dyn Write + Send)) {
        self.end_text(out);
        for (_, rest) in self.partial.drain() {
            if !rest.is_empty() {
                let _ = writeln!(out, "  │ {rest}");
            }
        }
    }
}
