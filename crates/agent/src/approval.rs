//! The approval broker: turns a gated tool call into an
//! [`AgentEvent::ApprovalRequested`], waits for the operator's
//! [`AgentCommand::Approval`](vigil_protocol::AgentCommand::Approval), and hands
//! the decision back to the registry.
//!
//! It keeps the policy file's rules ([`PolicyRules`]), the session's
//! standing approvals ("approve this exact action for the session": a
//! shell command's text; any other call by its action and the digest of
//! its full arguments and resolved paths, [`ApprovalRequest::session_key`],
//! so a rule never covers a call the operator did not see), the session's
//! prefix rules (matched by [`prefix_rule::covers`] on parsed words) and
//! the approval policy. It never executes and never renders.
//!
//! Anything approved without a fresh operator decision (auto_low, a session
//! or prefix rule applied to a later call, a policy-file `allow`) comes back
//! as [`ApprovalDecision::ApproveUnasked`] and runs in the kernel sandbox;
//! where the target cannot sandbox, such a call asks instead and the
//! operator is told why, once. Rules restored from a session log approve
//! nothing until the operator confirms them ([`ApprovalBroker::confirm_restored`]).
//!
//! A prefix rule never approves a command vigil's own estimate rates high
//! (privilege escalation included). An exact standing approval does cover a
//! high-risk command: the operator approved that very text.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

use preview::PreviewDesk;

mod hooked;
mod policy;
pub mod preview;
#[cfg(test)]
mod read_once;
mod screen;
mod session_rules;
mod token;
mod trial;
pub use hooked::combine;
pub use policy::Policy;
pub use token::AnswerRefused;
pub use trial::{NO_VIEW, TRYING};

use vigil_config::approval::RuleDecision;
use vigil_policy::call::ToolCall;
use vigil_policy::gate::Approver;
use vigil_policy::prefix_rule;
use vigil_policy::risk::{Assessment, assess_in};
use vigil_policy::rules::{Call, PolicyRules};
use vigil_policy::secret_reads::Scope;
use vigil_protocol::approval::{
    ApprovalDecision, ApprovalRequest, CallFacts, FileChange, GateInfo, Risk, is_command,
};
use vigil_protocol::preview::PreviewReport;
use vigil_protocol::{AgentEvent, DecidedBy, PreviewOutcome};
use vigil_shell as shell;

/// What the console and `vigil exec` say when auto-approval turns into asking.
pub const NO_SANDBOX: &str = "auto-approval needs the Landlock sandbox, which this target \
lacks: asking instead";

/// Hands approval requests to the operator and waits for answers.
pub struct ApprovalBroker {
    events: mpsc::UnboundedSender<AgentEvent>,
    target: String,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<ApprovalDecision>>>,
    /// (tool, action) pairs approved for the rest of the session.
    standing: Mutex<HashSet<(String, String)>>,
    /// (tool, prefix) rules approved for the rest of the session, with the
    /// prefix's literal words (parsed once, when the rule is made).
    prefixes: Mutex<HashMap<(String, String), Vec<String>>>,
    policy: Mutex<Policy>,
    /// The policy file's rules.
    rules: Mutex<PolicyRules>,
    /// Whether the target can run commands in the kernel sandbox.
    can_sandbox: AtomicBool,
    /// Whether the operator was told that auto-approval asks instead.
    told_no_sandbox: AtomicBool,
    /// Whether the operator was told that `by_effect` asks instead.
    told_no_view: AtomicBool,
    /// Rules read from a session log, waiting for the operator's word.
    held: Mutex<Restored>,
    /// Waiting requests, for previews to read and answer.
    desk: Arc<PreviewDesk>,
    /// `[[hooks.decide]]`, asked before a call is decided (`hooked.rs`).
    hooks: Mutex<Option<Arc<crate::hooks::DecideHooks>>>,
    /// The hooks' answers on calls sent to the view, by call id.
    trial_hooks: Mutex<HashMap<String, Vec<String>>>,
    /// `[tools] shell_denylist`: a command it cannot judge is asked.
    denylist: Mutex<vigil_policy::denylist::Denylist>,
}

/// Session rules restored from a log: `(tool, action)` and `(tool, prefix)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    pub standing: Vec<(String, String)>,
    pub prefixes: Vec<(String, String)>,
}

/// What the broker would do with a call, before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Ask the operator (the text says why, when a rule made it ask).
    Ask(Option<String>),
    /// Approved without the operator; runs sandboxed. Says what decided it.
    Unasked(DecidedBy),
    /// Approved by the operator's blanket choice (`--auto-approve`, "approve
    /// all for N minutes"): runs as an approved call.
    Approve(DecidedBy),
    /// Denied, with the reason for the model and what decided it.
    Deny(String, DecidedBy),
    /// `by_effect`: try it in the throwaway view first.
    Trial,
}

/// [`Outcome`] with vigil's estimate, for `vigil policy check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    pub assessment: Assessment,
    pub outcome: Outcome,
}

impl ApprovalBroker {
    pub fn new(events: mpsc::UnboundedSender<AgentEvent>, target: String, policy: Policy) -> Self {
        ApprovalBroker {
            desk: Arc::new(PreviewDesk::new(events.clone())),
            events,
            target,
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            standing: Mutex::new(HashSet::new()),
            prefixes: Mutex::new(HashMap::new()),
            policy: Mutex::new(policy),
            rules: Mutex::new(PolicyRules::default()),
            can_sandbox: AtomicBool::new(false),
            told_no_sandbox: AtomicBool::new(false),
            told_no_view: AtomicBool::new(false),
            held: Mutex::new(Restored::default()),
            hooks: Mutex::new(None),
            trial_hooks: Mutex::new(HashMap::new()),
            denylist: Mutex::new(Default::default()),
        }
    }

    /// The operator's shell denylist (`run_shell` refuses what it matches;
    /// the broker asks a command whose programs it cannot tell).
    pub fn set_denylist(&self, denylist: Vec<String>) {
        *lock(&self.denylist) = vigil_policy::denylist::Denylist::read(&denylist);
    }

    /// Use the policy file's rules.
    pub fn set_rules(&self, rules: PolicyRules) {
        *lock(&self.rules) = rules;
    }

    /// Whether the target can sandbox (wired once at start-up from
    /// [`vigil_exec::Backend::can_sandbox`]).
    pub fn set_can_sandbox(&self, yes: bool) {
        self.can_sandbox.store(yes, Ordering::Relaxed);
    }

    pub fn set_policy(&self, policy: Policy) {
        *lock(&self.policy) = policy;
    }

    /// The policy in force, as a console shows it.
    pub fn policy_choice(&self) -> vigil_protocol::ApprovalPolicy {
        lock(&self.policy).choice()
    }

    /// Deliver the operator's answer. Returns false when no such request waits
    /// (already answered, or cancelled). An answer from outside the agent
    /// goes through [`ApprovalBroker::answer`], which checks the card's token.
    pub fn resolve(&self, id: u64, decision: ApprovalDecision) -> bool {
        let waiter = lock(&self.pending).remove(&id);
        match waiter {
            Some(tx) => tx.send(decision).is_ok(),
            None => false,
        }
    }

    /// Ids of the requests still waiting.
    pub fn pending_ids(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = lock(&self.pending).keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    fn announce(&self, id: u64, decision: &ApprovalDecision, decided_by: DecidedBy) {
        let previewed = self.desk.forget(id);
        let _ = self.events.send(AgentEvent::ApprovalResolved {
            id,
            decision: decision.clone(),
            decided_by,
            previewed,
            answered_by: None,
        });
    }

    /// Where previews of waiting requests are read and answered.
    pub fn desk(&self) -> Arc<PreviewDesk> {
        self.desk.clone()
    }

    /// Whether the target is this machine with the kernel sandbox (what a
    /// preview needs too).
    pub fn can_sandbox(&self) -> bool {
        self.can_sandbox.load(Ordering::Relaxed)
    }
}

impl ApprovalBroker {
    /// What this broker would do with the call now (nothing is recorded,
    /// nobody is asked).
    pub fn preview(&self, tool: &str, gate: &GateInfo) -> Preview {
        self.preview_call(tool, gate, CallFacts::default())
    }

    /// [`ApprovalBroker::preview`] of a call with what vigil found out
    /// about it (its digest, resolved paths).
    pub fn preview_call(&self, tool: &str, gate: &GateInfo, facts: CallFacts) -> Preview {
        let command = is_command(tool, gate).then(|| shell::Command::read(&gate.action));
        let (request, assessment) = self.request(0, "", tool, gate, command.as_deref(), facts);
        // `run_shell` refuses what the denylist names before anyone is asked.
        let refused = command
            .as_deref()
            .and_then(|c| lock(&self.denylist).denied_by(c).map(str::to_string));
        let outcome = match refused {
            Some(entry) => Outcome::Deny(
                format!("refused by the denylist entry `{entry}`"),
                named("shell_denylist"),
            ),
            None => self.outcome(&request, command.as_deref()),
        };
        Preview {
            assessment,
            outcome,
        }
    }

    /// The request for the operator, and vigil's estimate in it.
    fn request(
        &self,
        id: u64,
        call_id: &str,
        tool: &str,
        gate: &GateInfo,
        command: Option<&shell::Command>,
        facts: CallFacts,
    ) -> (ApprovalRequest, Assessment) {
        let script = command.map(|c| &c.script);
        let a = assessment(tool, gate, script, facts.cwd.as_deref());
        let mut facts = facts;
        if let Some(script) = script.filter(|_| is_command(tool, gate)) {
            facts.prefix_rules = prefix_rule::choices_of(script);
        }
        let request = ApprovalRequest {
            id,
            call_id: call_id.to_string(),
            tool: tool.to_string(),
            target: self.target.clone(),
            gate: gate.clone(),
            estimate: a.risk,
            estimate_reason: a.reason.clone(),
            automatic: false,
            change: None,
            facts: Box::new(facts),
            token: token::new_token(),
        };
        (request, a)
    }

    /// Whether a `preview = true` rule matches the call (it is previewed
    /// as soon as it waits).
    fn wants_preview(&self, request: &ApprovalRequest, command: Option<&shell::Command>) -> bool {
        let call = Call {
            tool: &request.tool,
            gate: &request.gate,
            command,
            estimate: request.estimate,
            paths: &request.facts.paths,
            written: &request.facts.written,
        };
        lock(&self.rules).wants_preview(&call)
    }

    fn outcome(&self, request: &ApprovalRequest, command: Option<&shell::Command>) -> Outcome {
        let call = Call {
            tool: &request.tool,
            gate: &request.gate,
            command,
            estimate: request.estimate,
            paths: &request.facts.paths,
            written: &request.facts.written,
        };
        let rules = lock(&self.rules);
        let rule = rules.decide(&call);
        match rule.map(|r| (r.decision, r.label())) {
            Some((RuleDecision::Deny, label)) => {
                let by = DecidedBy::PolicyRule {
                    rule: label.clone(),
                };
                return Outcome::Deny(format!("denied by {label}"), by);
            }
            Some((RuleDecision::Ask, label)) => {
                return Outcome::Ask(Some(format!("{label} says to ask")));
            }
            _ => {}
        }
        if let Some(why) = self.cannot_tell(&rules, &call) {
            return Outcome::Ask(Some(why));
        }
        let policy = lock(&self.policy).clone();
        match policy {
            Policy::ApproveAll => return Outcome::Approve(named("approve all")),
            Policy::ApproveAllUntil(until) if std::time::Instant::now() < until => {
                return Outcome::Approve(named("approve all for a while"));
            }
            _ => {}
        }
        if let Some(rule) = rule {
            return Outcome::Unasked(DecidedBy::PolicyRule { rule: rule.label() });
        }
        if let Some(by) = self.covered(request, command) {
            return Outcome::Unasked(by);
        }
        match policy {
            Policy::DenyAll(reason) => Outcome::Deny(reason, named("deny all")),
            Policy::ByEffect => self.by_effect(request, command),
            Policy::AutoApproveLow if is_low(request) => {
                Outcome::Unasked(named("auto-approve low risk"))
            }
            _ => Outcome::Ask(None),
        }
    }

    /// The decision for an outcome that needs no operator, if any.
    fn automatic(&self, outcome: Outcome) -> Option<(ApprovalDecision, DecidedBy)> {
        match outcome {
            Outcome::Ask(_) | Outcome::Trial => None,
            Outcome::Approve(by) => Some((ApprovalDecision::ApproveOnce, by)),
            Outcome::Deny(reason, by) => Some((ApprovalDecision::DenyWithReason(reason), by)),
            Outcome::Unasked(by) if self.can_sandbox.load(Ordering::Relaxed) => {
                let what = by.describe(&ApprovalDecision::ApproveOnce);
                Some((ApprovalDecision::ApproveUnasked(what), by))
            }
            Outcome::Unasked(_) => {
                self.tell_once(&self.told_no_sandbox, NO_SANDBOX);
                None
            }
        }
    }
}

#[async_trait]
impl Approver for ApprovalBroker {
    async fn decide(&self, call_id: &str, tool: &str, gate: &GateInfo) -> ApprovalDecision {
        self.decide_change(call_id, tool, gate, None).await
    }

    async fn decide_change(
        &self,
        call_id: &str,
        tool: &str,
        gate: &GateInfo,
        change: Option<FileChange>,
    ) -> ApprovalDecision {
        let text = is_command(tool, gate).then_some(gate.action.as_str());
        let call = ToolCall::read(tool, serde_json::json!({}), text);
        self.decide_call(call_id, &call, gate, change).await
    }

    async fn decide_call(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
        change: Option<FileChange>,
    ) -> ApprovalDecision {
        let tool = call.tool.as_str();
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let command = call.command.as_deref();
        let facts = call.facts.clone();
        let (mut request, _) = self.request(id, call_id, tool, gate, command, facts);
        let outcome = self.outcome(&request, command);
        let outcome = self
            .hooked(&mut request, command, outcome, &call.args)
            .await;
        match &outcome {
            Outcome::Trial => return ApprovalDecision::TryInView,
            Outcome::Ask(Some(why)) => request.facts.trial = Some(why.clone()),
            _ => {}
        }
        let automatic = self.automatic(outcome);
        let request = ApprovalRequest {
            automatic: automatic.is_some(),
            change,
            ..request
        };
        if let Some((decision, decided_by)) = automatic {
            self.show(&request);
            self.announce(id, &decision, decided_by);
            return decision;
        }
        let preview = is_command(tool, gate) && self.wants_preview(&request, command);
        self.ask(request, preview, None).await
    }

    fn screens(&self, tool: &str) -> bool {
        ApprovalBroker::screens(self, tool)
    }

    async fn screen(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
    ) -> Option<ApprovalDecision> {
        ApprovalBroker::screen(self, call_id, call, gate).await
    }
}

impl ApprovalBroker {
    /// Show the card of `request`, which waits for the operator. It is on
    /// the desk and in the queue before anyone sees it, so an answer sent
    /// the moment the card arrives finds it waiting.
    fn open(&self, request: &ApprovalRequest) -> oneshot::Receiver<ApprovalDecision> {
        let (tx, rx) = oneshot::channel();
        self.desk.wait(request.clone());
        lock(&self.pending).insert(request.id, tx);
        self.show(request);
        rx
    }

    /// Show the card of `request` (one decided without the operator, or
    /// one [`ApprovalBroker::open`] already queued).
    fn show(&self, request: &ApprovalRequest) {
        let _ = self.events.send(AgentEvent::ApprovalRequested {
            request: request.clone(),
        });
    }

    /// Put `request` to the operator and wait. The card gets `report` at
    /// once (a trial's), or a preview is started when a rule wants one.
    async fn ask(
        &self,
        request: ApprovalRequest,
        preview: bool,
        report: Option<Box<PreviewReport>>,
    ) -> ApprovalDecision {
        let id = request.id;
        let rx = self.open(&request);
        if let Some(report) = report {
            self.desk.deliver(id, PreviewOutcome::Report { report });
        } else if preview {
            crate::approval::preview::start(&self.desk, self.can_sandbox(), id);
        }
        // If the waiting future is dropped (the turn was cancelled), take the
        // request out of the queue so the operator's later key does nothing.
        let guard = PendingGuard { broker: self, id };
        let decision = rx
            .await
            .unwrap_or(ApprovalDecision::DenyWithReason(WITHDRAWN.into()));
        std::mem::forget(guard);
        self.remember(&request, &decision);
        self.announce(id, &decision, operator_record(&request, &decision));
        decision
    }
}

/// A policy decision, named.
fn named(name: &str) -> DecidedBy {
    DecidedBy::Policy { name: name.into() }
}

/// The record of an operator's answer: an edit keeps what the model asked
/// for, a denial its reason.
fn operator_record(request: &ApprovalRequest, decision: &ApprovalDecision) -> DecidedBy {
    match decision {
        ApprovalDecision::ApproveEdited(_) => DecidedBy::OperatorEdited {
            from: request.gate.action.clone(),
        },
        ApprovalDecision::DenyWithReason(reason) if reason == WITHDRAWN => DecidedBy::Cancelled,
        ApprovalDecision::DenyWithReason(reason) => DecidedBy::Denied {
            reason: reason.clone(),
        },
        _ => DecidedBy::Operator,
    }
}

/// The answer when the waiting request's sender vanished.
const WITHDRAWN: &str = "the approval request was withdrawn";

/// vigil's own estimate for a gated call: commands are assessed from their
/// parsed text, from the directory the command will run in (`cwd`, the
/// card's `in:`; else this process's); anything else that needs approval
/// counts as medium.
fn assessment(
    tool: &str,
    gate: &GateInfo,
    script: Option<&shell::Script>,
    cwd: Option<&str>,
) -> Assessment {
    let own = match script {
        Some(script) if is_command(tool, gate) => {
            let mut scope = Scope::current();
            if let Some(dir) = cwd {
                scope.cwd = Some(std::path::PathBuf::from(dir));
            }
            assess_in(script, &scope)
        }
        _ => Assessment {
            risk: Risk::Medium,
            reason: "not a shell command".into(),
        },
    };
    if gate.privesc == Some(true) {
        return Assessment {
            risk: Risk::High,
            reason: "the model says it escalates privileges".into(),
        };
    }
    own
}

fn is_low(request: &ApprovalRequest) -> bool {
    request.estimate == Risk::Low
        && request.gate.model_risk.is_none_or(|r| r == Risk::Low)
        && request.gate.privesc != Some(true)
}

struct PendingGuard<'a> {
    broker: &'a ApprovalBroker,
    id: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if lock(&self.broker.pending).remove(&self.id).is_some() {
            self.broker.announce(
                self.id,
                &ApprovalDecision::DenyWithReason("cancelled".into()),
                DecidedBy::Cancelled,
            );
        }
    }
}

/// Lock a mutex, recovering the data if a holder panicked.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests;
