//! What no switch skips. A call its tool runs without asking (`[tools]
//! shell_confirm = false`, `read_file`, `edit`'s view, `capture-pane`, an
//! ungated `fetch_url`…) still meets the policy file's `deny` and `ask`
//! rules, the decide hooks whose matcher names it, and, for a command
//! whose programs cannot all be told, an ask ([`ApprovalBroker::screen`]).
//! A gated call meets the same through [`ApprovalBroker::outcome`]
//! ([`ApprovalBroker::cannot_tell`] is shared).
//!
//! It also says which text is a command: a `run_shell` command, and the
//! text `send-keys` types into a pane (the registry reads both once, into
//! [`ToolCall::command`]); and whether a call
//! has a sandbox to run in unasked ([`sandboxable`]). It never runs a call
//! and never renders.

use super::{ApprovalBroker, Outcome, lock};
use vigil_config::approval::RuleDecision;
use vigil_policy::call::ToolCall;
use vigil_policy::rules::{Call, PolicyRules};
use vigil_protocol::DecidedBy;
use vigil_protocol::approval::{ApprovalDecision, ApprovalRequest, GateInfo};
use vigil_shell::Command;

/// Whether a call approved without the operator has a sandbox to run in:
/// a shell command (the kernel sandbox), a write or edit inside vigil's
/// working tree. An MCP tool, `fetch_url`, `send-keys` and a write outside
/// the tree have none, so nothing but the operator lets them run unasked.
pub(super) fn sandboxable(request: &ApprovalRequest) -> bool {
    match request.tool.as_str() {
        "run_shell" => true,
        "write_file" | "edit" => {
            let Ok(tree) = std::env::current_dir() else {
                return false;
            };
            let paths = &request.facts.paths;
            !paths.is_empty()
                && paths
                    .iter()
                    .all(|p| std::path::Path::new(p).starts_with(&tree))
        }
        _ => false,
    }
}

impl ApprovalBroker {
    /// Why a command must be asked although no rule decided it: some
    /// program it runs cannot be told, and a deny or ask rule, the
    /// denylist or a decide hook's command matcher could have applied.
    pub(super) fn cannot_tell(&self, rules: &PolicyRules, call: &Call) -> Option<String> {
        let command = call.command?;
        if let Some(why) = rules.cannot_tell(call) {
            return Some(why);
        }
        if let Some(why) = lock(&self.denylist).unresolved(command) {
            return Some(why);
        }
        let hooks = lock(&self.hooks).clone()?;
        if !hooks.guards_commands(call.tool) {
            return None;
        }
        command.runs.why_unknown()
    }

    /// Whether an ungated call of `tool` must be screened: a deny or ask
    /// rule, a hook, or the denylist could apply to it.
    pub fn screens(&self, tool: &str) -> bool {
        let command = matches!(tool, "run_shell" | "send-keys");
        (command && !lock(&self.denylist).is_empty())
            || lock(&self.rules).guards(tool)
            || lock(&self.hooks)
                .as_ref()
                .is_some_and(|h| h.sees_tool(tool))
    }

    /// An ungated call, screened: `None` runs it as its tool would;
    /// otherwise a deny (a rule, a hook) or the operator's answer (an ask
    /// rule, a hook's ask, a command whose programs cannot be told). A
    /// hook's allow changes nothing here: the call was to run anyway.
    pub async fn screen(
        &self,
        call_id: &str,
        call: &ToolCall,
        gate: &GateInfo,
    ) -> Option<ApprovalDecision> {
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let command = call.command.as_deref();
        let facts = call.facts.clone();
        let (mut request, _) = self.request(id, call_id, &call.tool, gate, command, facts);
        let outcome = self.screen_outcome(&request, command);
        let outcome = self
            .hooked(&mut request, command, outcome, &call.args)
            .await;
        let automatic = match outcome {
            Outcome::Deny(reason, by) => Some((ApprovalDecision::DenyWithReason(reason), by)),
            Outcome::Ask(Some(why)) => {
                request.facts.trial = Some(why);
                None
            }
            _ => return None,
        };
        let request = ApprovalRequest {
            automatic: automatic.is_some(),
            ..request
        };
        if let Some((decision, by)) = automatic {
            self.show(&request);
            self.announce(id, &decision, by);
            return Some(decision);
        }
        Some(self.ask(request, false, None).await)
    }

    /// The rules' word on an ungated call: deny, ask, or (as the tool
    /// would) run, which the hooks may still turn into a deny or an ask.
    fn screen_outcome(&self, request: &ApprovalRequest, command: Option<&Command>) -> Outcome {
        let call = Call {
            tool: &request.tool,
            gate: &request.gate,
            command,
            estimate: request.estimate,
            paths: &request.facts.paths,
            written: &request.facts.written,
        };
        let rules = lock(&self.rules);
        match rules.decide(&call).map(|r| (r.decision, r.label())) {
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
        match self.cannot_tell(&rules, &call) {
            Some(why) => Outcome::Ask(Some(why)),
            None => Outcome::Approve(DecidedBy::Policy {
                name: "not gated".into(),
            }),
        }
    }
}
