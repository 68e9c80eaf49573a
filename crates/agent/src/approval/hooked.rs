//! How the answers of `[[hooks.decide]]` hooks combine with what the
//! policy file and the approval mode decided ([`combine`], table-tested),
//! and the broker's step that asks them ([`ApprovalBroker::hooked`]).
//!
//! The order (docs/hooks.md): the denylist and deny rules come first and
//! the hooks are not asked; then the hooks, in file order, the first deny
//! ending it. A hook's deny wins over everything; a hook's ask makes the
//! call wait for the operator whatever the mode; a hook's allow only
//! stands in for the operator's "ask" (the call then runs unasked, in the
//! kernel sandbox, exactly like a policy-file `allow`), and never skips an
//! `ask` rule, the throwaway view of `by_effect`, nor the sandbox (no
//! sandbox: it asks; an MCP tool, `fetch_url`, `send-keys` and a write
//! outside the working tree have none, [`super::screen::sandboxable`]). It never runs a hook itself (that is
//! [`crate::hooks`]) and never renders.

use super::{ApprovalBroker, Outcome, lock};
use crate::hooks::DecideHooks;
use crate::hooks::decide::{Answer, Verdict};
use vigil_protocol::DecidedBy;
use vigil_protocol::approval::ApprovalRequest;
use vigil_shell as shell;

impl ApprovalBroker {
    /// Ask the decide hooks (from now on, for every call).
    pub fn set_hooks(&self, hooks: DecideHooks) {
        *lock(&self.hooks) = Some(std::sync::Arc::new(hooks));
    }

    /// `outcome` after the decide hooks that take the call answered; their
    /// verdicts are noted on the request (the card and the record show
    /// them).
    pub(super) async fn hooked(
        &self,
        request: &mut ApprovalRequest,
        command: Option<&shell::Command>,
        outcome: Outcome,
        arguments: &serde_json::Value,
    ) -> Outcome {
        if matches!(outcome, Outcome::Deny(..)) {
            return outcome;
        }
        let Some(hooks) = lock(&self.hooks).clone() else {
            return outcome;
        };
        let verdicts = hooks.consult(request, command, arguments.clone()).await;
        request.facts.hooks = verdicts.iter().map(Verdict::line).collect();
        let outcome = combine(outcome, &verdicts, super::screen::sandboxable(request));
        if outcome == Outcome::Trial && !request.facts.hooks.is_empty() {
            // The trial's own request (announced later) shows them too.
            lock(&self.trial_hooks).insert(request.call_id.clone(), request.facts.hooks.clone());
        }
        outcome
    }

    /// What the hooks answered about a call that went to the view, once.
    pub(super) fn take_trial_hooks(&self, call_id: &str) -> Vec<String> {
        lock(&self.trial_hooks).remove(call_id).unwrap_or_default()
    }
}

/// The outcome once the hooks' `verdicts` are in (see the module docs).
/// `sandboxable`: the call has a sandbox to run in unasked; without one a
/// hook's allow leaves it asked.
pub fn combine(outcome: Outcome, verdicts: &[Verdict], sandboxable: bool) -> Outcome {
    if matches!(outcome, Outcome::Deny(..)) {
        return outcome;
    }
    let by = |v: &Verdict| DecidedBy::Hook {
        hook: v.hook.clone(),
        reason: v.reason.clone(),
    };
    if let Some(v) = verdicts.iter().find(|v| v.answer == Answer::Deny) {
        let reason = match v.reason.is_empty() {
            true => format!("denied by hook {}", v.hook),
            false => format!("denied by hook {}: {}", v.hook, v.reason),
        };
        return Outcome::Deny(reason, by(v));
    }
    if let Some(v) = verdicts.iter().find(|v| v.answer == Answer::Ask) {
        return Outcome::Ask(Some(format!("{} says to ask", v.line())));
    }
    match (outcome, verdicts.iter().find(|v| v.answer == Answer::Allow)) {
        (Outcome::Ask(None), Some(v)) if sandboxable => Outcome::Unasked(by(v)),
        (Outcome::Ask(None), Some(v)) => Outcome::Ask(Some(format!(
            "{}; but this call has no sandbox to run in unasked, so it is asked",
            v.line()
        ))),
        (outcome, _) => outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(answer: Answer) -> Verdict {
        Verdict {
            hook: "`h` (c.toml:1)".into(),
            answer,
            reason: "r".into(),
            failed: false,
        }
    }

    fn rule() -> DecidedBy {
        DecidedBy::PolicyRule {
            rule: "policy rule 1 (c.toml:9)".into(),
        }
    }

    #[test]
    fn a_deny_anywhere_wins_and_an_allow_never_skips_a_rule_or_the_view() {
        use Answer::*;
        let hook = DecidedBy::Hook {
            hook: "`h` (c.toml:1)".into(),
            reason: "r".into(),
        };
        let deny_rule = Outcome::Deny("denied by rule".into(), rule());
        let ask_rule = Outcome::Ask(Some("policy rule 2 says to ask".into()));
        let table: Vec<(Outcome, Vec<Answer>, Outcome)> = vec![
            // A deny rule stands whatever the hooks say.
            (deny_rule.clone(), vec![Allow], deny_rule.clone()),
            // A hook's deny wins over an allow rule, a session rule, approve-all.
            (
                Outcome::Unasked(rule()),
                vec![Deny],
                Outcome::Deny("denied by hook `h` (c.toml:1): r".into(), hook.clone()),
            ),
            (
                Outcome::Approve(rule()),
                vec![Allow, Deny],
                Outcome::Deny("denied by hook `h` (c.toml:1): r".into(), hook.clone()),
            ),
            // A hook's ask makes it wait even under approve-all.
            (
                Outcome::Approve(rule()),
                vec![Ask],
                Outcome::Ask(Some("hook `h` (c.toml:1): ask — r says to ask".into())),
            ),
            // An allow never skips an ask rule nor by_effect's trial.
            (ask_rule.clone(), vec![Allow], ask_rule.clone()),
            (Outcome::Trial, vec![Allow], Outcome::Trial),
            // An allow stands in for the mode's plain ask: unasked (sandboxed).
            (
                Outcome::Ask(None),
                vec![Allow],
                Outcome::Unasked(hook.clone()),
            ),
            (Outcome::Ask(None), vec![Abstain], Outcome::Ask(None)),
            (Outcome::Ask(None), vec![], Outcome::Ask(None)),
            (
                Outcome::Unasked(rule()),
                vec![Allow],
                Outcome::Unasked(rule()),
            ),
        ];
        for (before, answers, after) in table {
            let verdicts: Vec<Verdict> = answers.into_iter().map(v).collect();
            assert_eq!(
                combine(before.clone(), &verdicts, true),
                after,
                "{before:?} + {verdicts:?}"
            );
        }
        // No sandbox (MCP, fetch_url, a write outside the tree): an allow asks.
        let asked = combine(Outcome::Ask(None), &[v(Allow)], false);
        assert!(
            matches!(&asked, Outcome::Ask(Some(why)) if why.contains("no sandbox")),
            "{asked:?}"
        );
    }
}
