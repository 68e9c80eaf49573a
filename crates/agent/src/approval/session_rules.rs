//! The session's standing approvals and prefix rules: made by the
//! operator's "approve for the session" answers, restored from a session
//! log (held until confirmed), matched against later calls, withdrawn.
//! Data and matching only: it never asks and never runs anything.

use super::{ApprovalBroker, Restored, lock};
use vigil_policy::prefix_rule;
use vigil_protocol::AgentEvent;
use vigil_protocol::DecidedBy;
use vigil_protocol::approval::{ApprovalDecision, ApprovalRequest, Risk, is_command};
use vigil_shell as shell;

impl ApprovalBroker {
    /// Hold rules read from a session log until the operator confirms them.
    pub fn hold_restored(&self, restored: Restored) {
        *lock(&self.held) = restored;
    }

    /// The rules waiting for confirmation.
    pub fn held(&self) -> Restored {
        lock(&self.held).clone()
    }

    /// The operator confirmed the restored rules: they approve from now on.
    /// Returns how many rules took effect.
    pub fn confirm_restored(&self) -> usize {
        let held = std::mem::take(&mut *lock(&self.held));
        for (tool, action) in &held.standing {
            self.add_standing(tool, action);
        }
        for (tool, prefix) in &held.prefixes {
            self.add_prefix(tool, prefix);
        }
        self.announce_rules();
        held.standing.len() + held.prefixes.len()
    }

    /// The operator discarded the restored rules.
    pub fn discard_restored(&self) {
        *lock(&self.held) = Restored::default();
        self.announce_rules();
    }

    /// Approve `(tool, action)` for the rest of the session (restored
    /// standing approvals on resume).
    pub fn add_standing(&self, tool: &str, action: &str) {
        lock(&self.standing).insert((tool.to_string(), action.to_string()));
    }

    /// The `(tool, action)` pairs approved for the session, sorted.
    pub fn standing(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = lock(&self.standing).iter().cloned().collect();
        v.sort();
        v
    }

    /// Approve commands of `tool` that start with `prefix` for the rest of
    /// the session (restored prefix rules on resume). A prefix that could
    /// not be a rule (empty, chaining) is ignored.
    pub fn add_prefix(&self, tool: &str, prefix: &str) {
        if let Ok(words) = prefix_rule::rule_words(prefix) {
            lock(&self.prefixes).insert((tool.to_string(), prefix.to_string()), words);
        }
    }

    /// The `(tool, prefix)` rules approved for the session, sorted.
    pub fn prefixes(&self) -> Vec<(String, String)> {
        let mut v: Vec<_> = lock(&self.prefixes).keys().cloned().collect();
        v.sort();
        v
    }

    /// The standing approval or prefix rule covering this request, if any.
    pub(super) fn covered(
        &self,
        request: &ApprovalRequest,
        command: Option<&shell::Command>,
    ) -> Option<DecidedBy> {
        if let Some(key) = request.session_key() {
            let key = (request.tool.clone(), key);
            if lock(&self.standing).contains(&key) {
                return Some(DecidedBy::SessionRule { rule: key.1 });
            }
        }
        if request.estimate == Risk::High {
            return None;
        }
        let words = prefix_rule::plain_words(&command?.script)?;
        let prefixes = lock(&self.prefixes);
        let mut covering: Vec<&String> = prefixes
            .iter()
            .filter(|((tool, _), rule)| {
                *tool == request.tool && prefix_rule::covers_plain(rule, &words)
            })
            .map(|((_, prefix), _)| prefix)
            .collect();
        covering.sort_unstable();
        covering.first().map(|prefix| DecidedBy::SessionRule {
            rule: format!("{prefix} …"),
        })
    }

    /// Withdraw a session rule (exact action, or word prefix); true when it
    /// was in force. The console is told the rules now in force.
    pub fn revoke(&self, tool: &str, rule: &str, prefix: bool) -> bool {
        let key = (tool.to_string(), rule.to_string());
        let removed = if prefix {
            lock(&self.prefixes).remove(&key).is_some()
        } else {
            lock(&self.standing).remove(&key)
        };
        self.announce_rules();
        removed
    }

    /// Tell the console every rule in force.
    pub(super) fn announce_rules(&self) {
        let _ = self.events.send(AgentEvent::SessionRules {
            exact: self.standing(),
            prefixes: self.prefixes(),
        });
    }

    /// Record the rule an approve-for-the-session decision asks for, and
    /// tell the console when the rules changed.
    pub(super) fn remember(&self, request: &ApprovalRequest, decision: &ApprovalDecision) {
        if matches!(
            decision,
            ApprovalDecision::ApproveSession | ApprovalDecision::ApprovePrefix(_)
        ) {
            let count = || lock(&self.standing).len() + lock(&self.prefixes).len();
            let before = count();
            self.add_rule(request, decision);
            if count() != before {
                self.announce_rules();
            }
        }
    }

    fn add_rule(&self, request: &ApprovalRequest, decision: &ApprovalDecision) {
        let action = &request.gate.action;
        // A call that is not a shell command is keyed on its full arguments
        // (and resolved paths); one without that digest makes no rule.
        let exact = request.session_key().map(|key| (request.tool.clone(), key));
        match decision {
            ApprovalDecision::ApproveSession => {
                if let Some(exact) = exact {
                    lock(&self.standing).insert(exact);
                }
            }
            ApprovalDecision::ApprovePrefix(prefix) if prefix == action => {
                if let Some(exact) = exact {
                    lock(&self.standing).insert(exact);
                }
            }
            ApprovalDecision::ApprovePrefix(prefix)
                if is_command(&request.tool, &request.gate)
                    && prefix_rule::rule_error(prefix, action).is_none() =>
            {
                self.add_prefix(&request.tool, prefix);
            }
            // Not a prefix of this command: the call runs once, no rule.
            _ => {}
        }
    }
}
