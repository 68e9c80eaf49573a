//! The tool registry: holds the tools, lists their definitions in a stable
//! order, and runs one call through the single path every call takes —
//! lookup, repeated-failure suppression, argument parsing and schema
//! validation, the approval gate, execution, the envelope.
//!
//! A call its tool runs without asking is still screened by the approver
//! when it says so ([`Approver::screens`]: deny and ask rules, decide hooks
//! and an unknown program are never skipped by a switch).
//!
//! It never renders and never decides approvals itself: it asks its
//! [`Approver`], with what the tool established about the call and the
//! digest of its full canonical arguments ([`CallFacts`](vigil_protocol::approval::CallFacts)),
//! and hands the approved paths and directory to the execution, which acts
//! nowhere else. It never re-runs a call that has already failed
//! [`ToolRegistry::failure_limit`] times with the same canonical arguments.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::envelope;
use super::failure::FailureClass;
use super::validate;
use super::visibility::DomainPolicy;
use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolStream};
use vigil_policy::call::ToolCall;
use vigil_policy::gate::{Approver, FixedApprover};
use vigil_protocol::approval::{ApprovalDecision, call_digest};

/// The result of running one call through the registry.
#[derive(Debug, Clone)]
pub struct ToolRun {
    /// Exactly what goes back to the model as the tool message.
    pub model_text: String,
    /// The tool's output when it ran and succeeded.
    pub output: Option<ToolOutput>,
    /// The error when it failed (including unknown tools and bad arguments).
    pub error: Option<ToolError>,
    /// The operator's decision, for gated calls.
    pub decision: Option<ApprovalDecision>,
    /// What kind of failure this was (`None` on success).
    pub class: Option<FailureClass>,
    /// Repairs validation made to the arguments (also in the envelope).
    pub notes: Vec<String>,
    /// True when the call was not run because it had failed too often.
    pub suppressed: bool,
}

impl ToolRun {
    pub fn ok(&self) -> bool {
        self.error.is_none() && !self.denied() && !self.suppressed
    }

    pub fn denied(&self) -> bool {
        matches!(
            self.decision,
            Some(ApprovalDecision::Deny | ApprovalDecision::DenyWithReason(_))
        )
    }

    /// What the console's timeline shows for this call's result.
    pub fn timeline(&self) -> String {
        match &self.output {
            Some(o) => o.timeline.clone().unwrap_or_else(|| match &o.result {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
            None => self.model_text.clone(),
        }
    }

    pub(super) fn failed(error: ToolError) -> Self {
        let class = error.class();
        ToolRun {
            model_text: error_text(&error, class),
            output: None,
            error: Some(error),
            decision: None,
            class: Some(class),
            notes: Vec::new(),
            suppressed: false,
        }
    }

    fn failed_as(error: ToolError, class: FailureClass) -> Self {
        let mut run = ToolRun::failed(error);
        run.class = Some(class);
        if let Some(e) = &run.error {
            run.model_text = error_text(e, class);
        }
        run
    }
}

/// `Tool error: <error>` plus the class and its retry hint.
fn error_text(error: &ToolError, class: FailureClass) -> String {
    format!("Tool error: {error}\n[class: {class}] {}", class.hint())
}

/// The message a denied call returns to the model.
pub const DENIED: &str = "Command execution denied by user.";

/// How many failures of one exact call are allowed before it is suppressed.
pub const DEFAULT_FAILURE_LIMIT: u32 = 2;

/// Most distinct failing calls remembered (older ones below the limit are
/// forgotten first).
const FAILURE_MEMORY: usize = 1024;

/// Failure counts per (tool, canonical arguments).
#[derive(Default)]
struct Failures {
    counts: HashMap<(String, String), (u32, FailureClass)>,
}

/// Holds every registered tool.
pub struct ToolRegistry {
    tools: Vec<Box<dyn Tool>>,
    pub(super) approver: Arc<dyn Approver>,
    /// Who hears of trials (`approval = "by_effect"`): the broker.
    pub(super) trials: Option<Arc<dyn super::trial_approver::TrialApprover>>,
    failure_limit: u32,
    failures: Mutex<Failures>,
    domain_policy: DomainPolicy,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolRegistry {
    /// An empty registry whose gated calls are denied (fail closed) until an
    /// approver is set.
    pub fn new() -> Self {
        ToolRegistry {
            tools: Vec::new(),
            approver: Arc::new(FixedApprover(ApprovalDecision::DenyWithReason(
                "no operator is available to approve this call".into(),
            ))),
            trials: None,
            failure_limit: DEFAULT_FAILURE_LIMIT,
            failures: Mutex::default(),
            domain_policy: DomainPolicy::default(),
        }
    }

    /// The approver that hears of trials in the view (the broker, which
    /// answers [`ApprovalDecision::TryInView`]).
    pub fn set_trial_approver(&mut self, trials: Arc<dyn super::trial_approver::TrialApprover>) {
        self.trials = Some(trials);
    }

    pub fn set_approver(&mut self, approver: Arc<dyn Approver>) {
        self.approver = approver;
    }

    /// Failures of one exact call before it is suppressed (at least 1).
    pub fn set_failure_limit(&mut self, limit: u32) {
        self.failure_limit = limit.max(1);
    }

    pub fn failure_limit(&self) -> u32 {
        self.failure_limit
    }

    /// Which tool domains are hidden or blocked (see [`super::visibility`]).
    pub fn set_domain_policy(&mut self, policy: DomainPolicy) {
        self.domain_policy = policy;
    }

    pub fn domain_policy(&self) -> &DomainPolicy {
        &self.domain_policy
    }

    /// Forget every recorded failure (e.g. for a new session).
    pub fn clear_failures(&self) {
        if let Ok(mut f) = self.failures.lock() {
            f.counts.clear();
        }
    }

    /// Add a tool. A tool with the same name replaces the earlier one.
    pub fn register(&mut self, tool: impl Tool + 'static) {
        self.register_boxed(Box::new(tool));
    }

    pub fn register_boxed(&mut self, tool: Box<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.iter().map(|t| t.name().to_string()).collect();
        names.sort();
        names
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.iter().find(|t| t.name() == name).map(|t| &**t)
    }

    /// Definitions sorted by name, so the prompt prefix stays stable.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let mut defs: Vec<ToolDefinition> = self.tools.iter().map(|t| t.definition()).collect();
        defs.sort_by(|a, b| a.function.name.cmp(&b.function.name));
        defs
    }

    /// Run a call without a stream sink.
    pub async fn execute(&self, name: &str, arguments: &str) -> ToolRun {
        self.execute_with_context(name, arguments, &ToolContext::default())
            .await
    }

    /// Run a call: read it once ([`ToolRegistry::read`]: the tool, the
    /// arguments parsed and validated, the shell text it runs parsed),
    /// refuse it when the same call already failed too often, ask the
    /// approver when the tool is gated, execute, and wrap the result in the
    /// envelope. Failures are counted per (tool, canonical arguments).
    pub async fn execute_with_context(
        &self,
        name: &str,
        arguments: &str,
        ctx: &ToolContext,
    ) -> ToolRun {
        let read = self.read(name, arguments, ctx);
        let canonical = match &read {
            Ok(r) => r.call.canonical.clone(),
            Err((canonical, _)) => canonical.clone(),
        };
        let key = (name.to_string(), canonical);
        if let Some(run) = self.suppressed(&key) {
            return run;
        }
        let run = match read {
            Ok(read) => self.run_read(read, ctx).await,
            Err((_, run)) => *run,
        };
        if let Some(class) = run.class.filter(|_| run.error.is_some()) {
            self.record_failure(key, class);
        }
        run
    }

    /// The call read once: its tool, its arguments parsed from the text
    /// and validated (with repairs, so `1.0` and `1` are the same call),
    /// their canonical text and the shell text it runs, parsed. A call
    /// that cannot be read: its canonical text (the parsed arguments, else
    /// the text as sent) and the failed run.
    fn read<'a>(
        &'a self,
        name: &str,
        arguments: &str,
        ctx: &ToolContext,
    ) -> Result<Read<'a>, (String, Box<ToolRun>)> {
        let raw = match arguments.trim() {
            "" => "{}",
            trimmed => trimmed,
        };
        let parsed: Result<Value, _> = serde_json::from_str(raw);
        let canonical = match &parsed {
            Ok(v) => vigil_policy::call::canonical(v),
            Err(_) => raw.to_string(),
        };
        let fail = |run: ToolRun| Err((canonical.clone(), Box::new(run)));
        let Some(tool) = self.get(name) else {
            return fail(ToolRun::failed_as(
                ToolError::InvalidArguments(format!(
                    "unknown tool `{name}`; available tools: {}",
                    self.names().join(", ")
                )),
                FailureClass::UnknownTool,
            ));
        };
        if let (Some(domain), Some(v)) = (tool.domain(), ctx.visibility())
            && !v.is_visible(Some(domain))
        {
            return fail(ToolRun::failed_as(
                ToolError::InvalidArguments(hidden_message(name, domain, &self.domain_policy)),
                FailureClass::UnknownTool,
            ));
        }
        let parsed = match parsed {
            Ok(v @ Value::Object(_)) => v,
            Ok(other) => {
                return fail(ToolRun::failed(ToolError::InvalidArguments(format!(
                    "arguments must be a JSON object, got {}",
                    json_kind(&other)
                ))));
            }
            Err(e) => {
                return fail(ToolRun::failed(ToolError::InvalidArguments(format!(
                    "arguments are not valid JSON: {e}"
                ))));
            }
        };
        match validate::validate(&tool.definition(), parsed) {
            Ok(validate::Validated { args, notes }) => {
                let call = ToolCall::read(name, args.clone(), tool.shell_text(&args))
                    .with_doubt(tool.shell_text_doubt(&args));
                Ok(Read { tool, call, notes })
            }
            Err(message) => fail(ToolRun::failed(ToolError::InvalidArguments(message))),
        }
    }

    /// The deterministic answer for a call that failed too often, if it did.
    fn suppressed(&self, key: &(String, String)) -> Option<ToolRun> {
        let failures = self.failures.lock().ok()?;
        let (count, last) = *failures.counts.get(key)?;
        if count < self.failure_limit {
            return None;
        }
        let error = ToolError::failed(
            FailureClass::Suppressed,
            format!(
                "this exact `{}` call has already failed {} times with the same arguments \
                 (last failure class: {last}); it was not run again. {}",
                key.0,
                self.failure_limit,
                last.hint()
            ),
        );
        let mut run = ToolRun::failed(error);
        run.suppressed = true;
        Some(run)
    }

    fn record_failure(&self, key: (String, String), class: FailureClass) {
        let Ok(mut failures) = self.failures.lock() else {
            return;
        };
        if failures.counts.len() >= FAILURE_MEMORY && !failures.counts.contains_key(&key) {
            let limit = self.failure_limit;
            failures.counts.retain(|_, (n, _)| *n >= limit);
            if failures.counts.len() >= FAILURE_MEMORY {
                return;
            }
        }
        let entry = failures.counts.entry(key).or_insert((0, class));
        entry.0 = entry.0.saturating_add(1);
        entry.1 = class;
    }

    /// Run a call that was read: refusal, screening or the gate (the
    /// approver reads the same [`ToolCall`]), a trial, then execution of
    /// that value (or of the operator's edit, read in its turn).
    async fn run_read(&self, read: Read<'_>, ctx: &ToolContext) -> ToolRun {
        let Read {
            tool,
            mut call,
            notes,
        } = read;
        let name = tool.name();
        // Refused by the operator's own rules: nobody is asked.
        if let Some(refused) = tool.refusal(&call) {
            return ToolRun::failed(refused);
        }
        let mut decision = None;
        let mut gate = tool.gate(&call.args);
        let screens = gate.is_none() && self.approver.screens(name);
        if gate.is_some() || screens {
            call.facts = tool.facts(&call.args).await;
            call.facts.digest = call_digest(name, &call.canonical, &call.facts.paths);
        }
        let mut screened = None;
        if screens {
            // No switch skips the deny rules, the hooks nor an unknown program.
            let described = describe(tool, &call.args);
            screened = self.approver.screen(&ctx.call_id, &call, &described).await;
            if screened.is_some() {
                gate = Some(described);
            }
        }
        let mut approved_paths = None;
        let mut approved_cwd = None;
        let mut edited_call = None;
        if let Some(gate) = &gate {
            let change = tool.preview(&call.args).await;
            approved_paths = Some(call.facts.paths.clone());
            approved_cwd = call.facts.cwd.clone();
            let d = match screened.take() {
                Some(d) => d,
                None => {
                    self.approver
                        .decide_call(&ctx.call_id, &call, gate, change)
                        .await
                }
            };
            let d = match d {
                ApprovalDecision::TryInView => {
                    match self.try_in_view(tool, &call, gate, ctx).await {
                        Ok(run) => return run,
                        Err(d) => d,
                    }
                }
                d => d,
            };
            match &d {
                ApprovalDecision::Deny => {
                    return denied_run(DENIED.to_string(), d);
                }
                ApprovalDecision::DenyWithReason(reason) => {
                    let text = format!("Command execution denied by user. Reason: {reason}");
                    return denied_run(text, d);
                }
                ApprovalDecision::ApproveEdited(new_action) => {
                    // An edit that cannot be applied must not turn into an
                    // approval of the unedited call: nothing runs.
                    let Some(field) = &gate.editable_field else {
                        let text = "Command execution denied by user: the operator's edit \
                                    cannot be applied to this kind of call, so nothing was run."
                            .to_string();
                        return denied_run(text, ApprovalDecision::Deny);
                    };
                    edited_call = Some(edited(tool, &call, field, new_action));
                }
                ApprovalDecision::ApproveOnce
                | ApprovalDecision::ApproveSession
                | ApprovalDecision::ApprovePrefix(_)
                | ApprovalDecision::ApproveUnasked(_) => {}
                // Asked again after a trial, the broker never answers this.
                ApprovalDecision::TryInView => {
                    let text = "the approval asked for a second trial; nothing was run".into();
                    return denied_run(text, ApprovalDecision::Deny);
                }
            }
            decision = Some(d);
        }
        let args = &call.args;
        let effective = edited_call.as_ref().unwrap_or(&call);

        let summary = match (&gate, &decision) {
            (Some(_), Some(ApprovalDecision::ApproveEdited(cmd))) => cmd.clone(),
            (Some(g), _) => g.action.clone(),
            (None, _) => tool.summary(args).unwrap_or_else(|| summarize_args(args)),
        };
        // Approved without a fresh operator decision: it runs sandboxed.
        // A gated call acts only on the paths its approval named; approved
        // by the operator for this very call, it was asked.
        let unasked = matches!(decision, Some(ApprovalDecision::ApproveUnasked(_)));
        let bound;
        let ctx = if gate.is_some() {
            bound = ToolContext {
                sandboxed: ctx.sandboxed || unasked,
                asked: decision.is_some() && !unasked,
                approved_paths,
                approved_cwd,
                ..ctx.clone()
            };
            &bound
        } else {
            bound = ToolContext {
                ungated: true,
                ..ctx.clone()
            };
            &bound
        };
        ctx.emit(ToolStream::Started { summary });
        let result = tool.execute(effective, ctx).await;
        ctx.emit(ToolStream::Completed);
        match result {
            Ok(output) => {
                let mut env = envelope::wrap(output.result.clone());
                if let Some(ApprovalDecision::ApproveEdited(cmd)) = &decision {
                    env["operator"] = json!({
                        "note": "the operator edited this call before approving it",
                        "edited_to": cmd,
                    });
                }
                if !notes.is_empty() {
                    env["notes"] = json!(notes);
                }
                ToolRun {
                    model_text: env.to_string(),
                    output: Some(output),
                    error: None,
                    decision,
                    class: None,
                    notes,
                    suppressed: false,
                }
            }
            Err(e) => {
                let mut run = ToolRun::failed(e);
                run.decision = decision;
                run.notes = notes;
                run
            }
        }
    }
}

/// A call read by [`ToolRegistry::read`].
struct Read<'a> {
    tool: &'a dyn Tool,
    call: ToolCall,
    /// Repairs validation made to the arguments.
    notes: Vec<String>,
}

/// The call the operator's edit makes of `call` (its `field` set to
/// `new_action`), read in its turn; the approval's facts stay.
fn edited(tool: &dyn Tool, call: &ToolCall, field: &str, new_action: &str) -> ToolCall {
    let mut args = call.args.clone();
    args[field] = Value::String(new_action.to_string());
    let mut edited = ToolCall::read(tool.name(), args.clone(), tool.shell_text(&args));
    edited.facts = call.facts.clone();
    edited
}

/// How an ungated call is shown when it is screened: the command of a
/// `run_shell` call (editable, as its gate would be), else its summary.
fn describe(tool: &dyn Tool, args: &Value) -> vigil_protocol::approval::GateInfo {
    let action = tool.summary(args).unwrap_or_else(|| summarize_args(args));
    let command = tool.name() == "run_shell";
    vigil_protocol::approval::GateInfo {
        action,
        model_risk: args["risk"]
            .as_str()
            .and_then(vigil_protocol::approval::Risk::parse),
        mutation: args["mutation"].as_bool(),
        privesc: args["privesc"].as_bool(),
        why: args["why"].as_str().map(str::to_string),
        editable_field: command.then(|| "command".to_string()),
    }
}

/// Why a call to a tool of a hidden or blocked domain did not run.
fn hidden_message(name: &str, domain: &str, policy: &DomainPolicy) -> String {
    match policy.blocked.get(domain) {
        Some(why) => format!("`{name}` belongs to the blocked domain `{domain}` ({why})"),
        None => format!(
            "`{name}` belongs to the hidden domain `{domain}`; call request_tools with \
             {{\"domains\": [\"{domain}\"], \"reason\": \"...\"}} first"
        ),
    }
}

fn denied_run(text: String, decision: ApprovalDecision) -> ToolRun {
    ToolRun {
        model_text: envelope::wrap(Value::String(text)).to_string(),
        output: None,
        error: None,
        decision: Some(decision),
        class: Some(FailureClass::Denied),
        notes: Vec::new(),
        suppressed: false,
    }
}

/// One line describing a call's arguments, for timelines.
pub fn summarize_args(args: &Value) -> String {
    let text = match args {
        Value::Object(map) if map.len() == 1 => match map.values().next() {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        Value::Object(map) if map.is_empty() => String::new(),
        other => other.to_string(),
    };
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    super::truncate::cut(&one_line, 160, super::truncate::Keep::Head).text
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
