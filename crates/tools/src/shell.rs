//! `run_shell`: run one shell command on the execution target and return its
//! exit code, stdout and stderr (cut for the model, the exact bytes spilled).
//!
//! The tool validates the model's safety metadata, refuses denylisted
//! commands, and describes itself to the approval gate. It must never run a
//! command except through its [`ExecutionContext`], and never ask the operator
//! itself: approval is the registry's job.

use std::sync::Arc;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::live::LiveOutput;
use super::output_view::{self, StreamView};
use super::truncate::Keep;
use super::{FailureClass, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_exec::capture::{Captured, Retain};
use vigil_exec::{ExecError, ExecutionContext, RunOutcome, RunRequest, humanize};
use vigil_protocol::approval::{GateInfo, Risk};

use super::shell_args::parse;
pub use super::shell_args::{Wait, parse_wait};

/// Settings for [`RunShell`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShellConfig {
    /// Ask the operator before every command.
    pub confirm: bool,
    /// Chars of stdout / stderr the model sees.
    pub stdout_limit: usize,
    pub stderr_limit: usize,
    /// Which part of a long output the model keeps.
    pub keep: Keep,
    /// Commands refused outright (matched after normalising whitespace and
    /// quotes).
    pub denylist: Denylist,
    /// Run every command under the kernel sandbox, approved or not.
    pub always_sandboxed: bool,
}

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            confirm: true,
            stdout_limit: 4000,
            stderr_limit: 4000,
            keep: Keep::HeadTail,
            denylist: Denylist::default(),
            always_sandboxed: false,
        }
    }
}

use vigil_policy::denylist::Denylist;

/// The refusal of a command the denylist names, if it does.
fn denylisted(command: &vigil_shell::Command, denylist: &Denylist) -> Option<ToolError> {
    let entry = denylist.denied_by(command)?;
    Some(ToolError::failed(
        FailureClass::PermissionDenied,
        format!(
            "refused without asking: the command matches the denylist entry `{entry}`; \
             this command is not allowed on this target"
        ),
    ))
}

/// The `run_shell` tool.
pub struct RunShell {
    pub(super) ctx: ExecutionContext,
    pub(super) config: ShellConfig,
}

impl RunShell {
    pub fn new(ctx: ExecutionContext, config: ShellConfig) -> Self {
        RunShell { ctx, config }
    }

    pub fn config(&self) -> &ShellConfig {
        &self.config
    }
}

const DESCRIPTION: &str = "Run a shell command on the execution target with `sh -c` and return \
its exit code, stdout and stderr as JSON. Long output is cut (the start and end are kept) and the \
full text is saved to a file named in the output.

When to use: inspecting or changing the target machine: listing files, checking services, disk, \
processes, logs, running builds and tests, installing packages.

When NOT to use: to read or write a whole file (use read_file / write_file, which handle quoting \
and binary content); to learn the current time (use time); for interactive programs that wait for \
keyboard input (editors, pagers, prompts), which will hang until the timeout.

Disambiguation: run_shell runs one command and returns when it exits (or when `wait` expires); \
wait=false only dispatches the command and needs a tmux-backed target. Every call must state its \
risk, whether it mutates state, whether it escalates privileges, and why; the operator may be \
asked to approve it and may edit or deny it.

Example: {\"command\": \"df -h /var\", \"risk\": \"low\", \"mutation\": false, \"privesc\": false, \
\"why\": \"Check free space before rotating logs\", \"wait\": \"30s\"}";

#[async_trait]
impl Tool for RunShell {
    fn name(&self) -> &str {
        "run_shell"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "run_shell",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "Shell command, run with sh -c on the target."
                    },
                    "risk": {
                        "type": "string",
                        "enum": ["low", "medium", "high"],
                        "description": "Your estimate of the command's risk."
                    },
                    "mutation": {
                        "type": "boolean",
                        "description": "Whether the command changes system state (files, services, packages, config)."
                    },
                    "privesc": {
                        "type": "boolean",
                        "description": "Whether the command uses privilege escalation (sudo, su, doas, setuid helpers)."
                    },
                    "why": {
                        "type": "string",
                        "description": "Short reason for running it and a justification of the risk label."
                    },
                    "session": {
                        "type": "string",
                        "description": "Managed tmux session to run in (tmux-backed targets only; default: the shared session)."
                    },
                    "pane": {
                        "type": "string",
                        "description": "Managed tmux pane to run in (tmux-backed targets only; default: the shared pane)."
                    },
                    "wait": {
                        "type": ["boolean", "string", "integer"],
                        "description": "true (default): wait for exit. false: dispatch and return at once (tmux targets only). A duration such as \"500ms\", \"30s\", \"10m\", \"1h\" or a whole number of seconds: wait up to that long, then kill the command and report a timeout."
                    }
                },
                "required": ["command", "risk", "mutation", "privesc", "why"],
                "additionalProperties": false,
                "examples": [{"command": "df -h /var", "risk": "low", "mutation": false,
                              "privesc": false, "why": "Check free space before rotating logs",
                              "wait": "30s"}]
            }),
        )
    }

    fn shell_text<'a>(&self, args: &'a Value) -> Option<&'a str> {
        args["command"].as_str()
    }

    fn refusal(&self, call: &ToolCall) -> Option<ToolError> {
        denylisted(call.command.as_deref()?, &self.config.denylist)
    }

    fn gate(&self, args: &Value) -> Option<GateInfo> {
        if !self.config.confirm {
            return None;
        }
        Some(GateInfo {
            action: args["command"].as_str().unwrap_or_default().to_string(),
            model_risk: args["risk"].as_str().and_then(Risk::parse),
            mutation: args["mutation"].as_bool(),
            privesc: args["privesc"].as_bool(),
            why: args["why"].as_str().map(str::to_string),
            editable_field: Some("command".into()),
        })
    }

    /// Where the command will run: the card's `in:` line, and the
    /// directory its preview runs in.
    async fn facts(&self, args: &Value) -> vigil_protocol::approval::CallFacts {
        let cwd = self
            .ctx
            .workdir(args["session"].as_str(), args["pane"].as_str())
            .await;
        vigil_protocol::approval::CallFacts {
            cwd,
            in_pane: self.ctx.mirror().is_some(),
            ..Default::default()
        }
    }

    async fn trial(&self, call: &ToolCall, ctx: &ToolContext) -> super::Trial {
        let finish = |outcome: &RunOutcome| self.finish(outcome, ctx, &[]);
        let host = super::shell_trial::Host {
            exec: &self.ctx,
            denylist: &self.config.denylist,
            retain: self.retain(ctx),
            finish: &finish,
        };
        super::shell_trial::trial(host, call, ctx).await
    }

    fn summary(&self, args: &Value) -> Option<String> {
        args["command"].as_str().map(str::to_string)
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = parse(call)?;
        let read = match &call.command {
            Some(read) if read.text == args.command => read.clone(),
            _ => vigil_shell::Command::read(&args.command),
        };
        // Again here: an edited command is checked as it will run.
        if let Some(refused) = denylisted(&read, &self.config.denylist) {
            return Err(refused);
        }
        if let Some(want) = &ctx.approved_cwd
            && let Some(now) = self
                .ctx
                .workdir(args.session.as_deref(), args.pane.as_deref())
                .await
            && &now != want
        {
            return Err(ToolError::failed(
                FailureClass::PermissionDenied,
                format!(
                    "refused: the approval said this command runs in {want}, but its pane is \
                     now in {now}; nothing ran (ask again from the directory you mean)"
                ),
            ));
        }
        let live: Option<Arc<LiveOutput>> = ctx.sink().cloned().map(LiveOutput::new);
        let on_output = live.as_ref().map(LiveOutput::output_fn);
        let req = RunRequest {
            command: args.command,
            timeout: match args.wait {
                Wait::Timeout(d) => Some(d),
                _ => None,
            },
            detach: args.wait == Wait::Detach,
            session: args.session,
            pane: args.pane,
            sandbox: ctx.sandboxed || self.config.always_sandboxed,
            // Only a run sandboxed for its caller's sake gets the caller's
            // grants (a build's outputs after its trial).
            grants: match ctx.sandboxed {
                true => ctx.grants.clone(),
                false => Default::default(),
            },
            retain: Some(self.retain(ctx)),
            read: Some(read),
        };
        let result = self.ctx.run(req, on_output).await;
        if let Some(live) = &live {
            let tail = match &result {
                Ok(o) => tail_of(o),
                Err(ExecError::Timeout { partial, .. }) => tail_of(partial),
                Err(_) => Vec::new(),
            };
            live.finish(&tail);
        }
        vigil_exec::capture::release_memory();
        // Transport notices (e.g. a re-established SSH connection) travel
        // with the result so the model and the operator see them.
        let notices = ctx.forward_target_notices(&self.ctx);
        match result {
            Ok(outcome) => {
                if let Some(dispatched) = outcome.dispatched {
                    return Ok(ToolOutput::text(dispatched));
                }
                if ctx.sandboxed && !ctx.asked {
                    withhold_secrets(&outcome)?;
                }
                Ok(self.finish(&outcome, ctx, &notices))
            }
            Err(ExecError::Timeout { limit, partial }) => {
                if ctx.sandboxed && !ctx.asked {
                    withhold_secrets(&partial)?;
                }
                let out = self.render(partial.captured(), ctx);
                Err(ToolError::failed(
                    FailureClass::Timeout,
                    format!(
                        "command timed out after {} and was killed; partial output: stdout: {} stderr: {}",
                        humanize(limit),
                        out.result["stdout"],
                        out.result["stderr"],
                    ),
                ))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// A run nobody asked for (a rule, auto_low, a build after its trial)
/// whose output looks like it holds a secret: the model gets none of it
/// (its spill files go too); the operator saw it live. Found by an
/// attacker: `cat .git/config` under a `cat` rule handed a token in the
/// remote's URL to the model, and a build's real run printed what its
/// trial had not.
fn withhold_secrets(outcome: &RunOutcome) -> Result<(), ToolError> {
    let Some(what) = super::shell_trial::secret_in_kept(outcome) else {
        return Ok(());
    };
    for c in outcome.captured() {
        if let Some(path) = c.spill {
            let _ = std::fs::remove_file(path);
        }
    }
    Err(ToolError::failed(
        FailureClass::PermissionDenied,
        format!(
            "the command ran (unasked, sandboxed), but its output was withheld: it holds what \
             looks like a secret ({what}). Nothing of it reached you; ask the operator, saying \
             why you need it, or run a command whose output leaves the secret out"
        ),
    ))
}

/// The end of a run's stdout as it was kept (for the live view's last lines).
fn tail_of(o: &RunOutcome) -> Vec<u8> {
    match &o.captured {
        Some(c) if !c[0].tail.is_empty() => c[0].tail.clone(),
        Some(c) => c[0].head.clone(),
        None => o.stdout.clone(),
    }
}

impl RunShell {
    /// The result of a finished run, as the model gets it.
    pub(super) fn finish(
        &self,
        outcome: &RunOutcome,
        ctx: &ToolContext,
        notices: &[String],
    ) -> ToolOutput {
        let mut out = self.render(outcome.captured(), ctx);
        out.result["exit_code"] = json!(outcome.exit_code);
        if !outcome.notes.is_empty() {
            out.result["notes"] = json!(outcome.notes);
        }
        if !notices.is_empty() {
            out.result["notice"] = json!(notices.join("; "));
        }
        out.exit_code = outcome.exit_code;
        out
    }

    /// What the command's output keeps in memory: windows big enough for
    /// the model's view; the rest streams to the spill folder.
    pub(super) fn retain(&self, ctx: &ToolContext) -> Retain {
        let limit = self.config.stdout_limit.max(self.config.stderr_limit);
        Retain {
            spill_dir: ctx.spill_dir.clone(),
            labels: ["run_shell-stdout".into(), "run_shell-stderr".into()],
            window: output_view::window_for(limit),
            cap: None,
        }
    }

    /// Cut stdout and stderr for the model (lossy UTF-8); the exact bytes
    /// are in the spill files the trailers name.
    fn render(&self, [stdout, stderr]: [Captured; 2], ctx: &ToolContext) -> ToolOutput {
        let dir = ctx.spill_dir.as_deref();
        let keep = self.config.keep;
        let out = output_view::view(
            &stdout,
            self.config.stdout_limit,
            keep,
            dir,
            "run_shell-stdout",
        );
        let err = output_view::view(
            &stderr,
            self.config.stderr_limit,
            keep,
            dir,
            "run_shell-stderr",
        );
        let mut result = json!({
            "exit_code": null,
            "stdout": out.cut.text,
            "stderr": err.cut.text,
        });
        if out.lossy || err.lossy {
            result["note"] =
                json!("the output was not valid UTF-8; invalid bytes were replaced with U+FFFD");
        }
        let errors: Vec<&str> = [&out, &err]
            .iter()
            .filter_map(|v: &&StreamView| v.spill_error.as_deref())
            .collect();
        if !errors.is_empty() {
            result["spill_error"] = json!(errors.join("; "));
        }
        ToolOutput {
            result,
            exit_code: None,
            truncated: out.cut.removed > 0 || err.cut.removed > 0,
            seen: [
                (&out.spill, self.config.stdout_limit),
                (&err.spill, self.config.stderr_limit),
            ]
            .into_iter()
            .filter(|(spill, _)| spill.is_some())
            .map(|(_, limit)| super::truncate::model_saw(limit, keep))
            .collect(),
            spill: out.spill.into_iter().chain(err.spill).collect(),
            timeline: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn secs(n: u64) -> Wait {
        Wait::Timeout(Duration::from_secs(n))
    }

    #[test]
    fn wait_accepts_every_documented_form() {
        assert_eq!(parse_wait(&Value::Null), Ok(Wait::Block));
        assert_eq!(parse_wait(&json!(true)), Ok(Wait::Block));
        assert_eq!(parse_wait(&json!(false)), Ok(Wait::Detach));
        assert_eq!(parse_wait(&json!(500)), Ok(secs(500)));
        assert_eq!(parse_wait(&json!("30s")), Ok(secs(30)));
        assert_eq!(parse_wait(&json!("10m")), Ok(secs(600)));
        assert_eq!(parse_wait(&json!("1h")), Ok(secs(3600)));
        assert_eq!(parse_wait(&json!(" 45 ")), Ok(secs(45)));
        assert_eq!(parse_wait(&json!("false")), Ok(Wait::Detach));
        assert_eq!(
            parse_wait(&json!("500ms")),
            Ok(Wait::Timeout(Duration::from_millis(500)))
        );
    }

    #[test]
    fn invalid_waits_name_the_accepted_forms() {
        for bad in [
            json!("soon"),
            json!("10x"),
            json!("1.5s"),
            json!("-3s"),
            json!(-1),
            json!(2.5),
            json!(0),
            json!("0s"),
            json!([1]),
        ] {
            let e = parse_wait(&bad).unwrap_err();
            assert!(e.contains("accepted forms"), "{bad}: {e}");
            assert!(e.contains("\"30s\""), "{bad}: {e}");
        }
    }

    #[test]
    fn gate_carries_the_model_claims_only_when_confirming() {
        let args = json!({"command": "ls", "risk": "high", "mutation": true,
                          "privesc": false, "why": "look"});
        let ctx = ExecutionContext::local();
        let t = RunShell::new(ctx.clone(), ShellConfig::default());
        let g = t.gate(&args).expect("gated");
        assert_eq!(g.action, "ls");
        assert_eq!(g.model_risk, Some(Risk::High));
        assert_eq!(g.mutation, Some(true));
        assert_eq!(g.privesc, Some(false));
        assert_eq!(g.why.as_deref(), Some("look"));
        assert_eq!(g.editable_field.as_deref(), Some("command"));
        let quiet = RunShell::new(
            ctx,
            ShellConfig {
                confirm: false,
                ..Default::default()
            },
        );
        assert!(quiet.gate(&args).is_none());
    }

    #[test]
    fn definition_requires_the_safety_metadata() {
        let t = RunShell::new(ExecutionContext::local(), ShellConfig::default());
        let d = t.definition();
        assert_eq!(d.function.name, "run_shell");
        let p = &d.function.parameters;
        assert_eq!(
            p["required"],
            json!(["command", "risk", "mutation", "privesc", "why"])
        );
        for (name, prop) in p["properties"].as_object().unwrap() {
            assert!(
                prop["type"].is_string() || prop["type"].is_array(),
                "{name}"
            );
            assert!(
                prop["description"].as_str().is_some_and(|s| !s.is_empty()),
                "{name}"
            );
        }
        for section in [
            "When to use:",
            "When NOT to use:",
            "Disambiguation:",
            "Example:",
        ] {
            assert!(d.function.description.contains(section), "{section}");
        }
    }

    #[test]
    fn missing_metadata_is_rejected_before_running() {
        let base = json!({"command": "ls", "risk": "low", "mutation": false,
                          "privesc": false, "why": "look"});
        assert!(parse(&crate::test_call(&base.to_string())).is_ok());
        for (field, bad) in [
            ("command", json!("  ")),
            ("risk", json!("extreme")),
            ("risk", Value::Null),
            ("mutation", json!("maybe")),
            ("privesc", Value::Null),
            ("why", json!("")),
            ("wait", json!("forever")),
            ("session", json!(3)),
        ] {
            let mut v = base.clone();
            v[field] = bad;
            match parse(&crate::test_call(&v.to_string())) {
                Err(ToolError::InvalidArguments(m)) => assert!(m.contains(field), "{m}"),
                _ => panic!("{field} should be rejected"),
            }
        }
    }
}
