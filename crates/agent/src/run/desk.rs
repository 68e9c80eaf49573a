//! The operator's commands that go straight to the approval broker and
//! never touch the conversation: answers, previews, session rules and the
//! approval policy. Each one either does what it was asked or tells the
//! operator, in a Notice, why it could not. It never starts or stops a turn
//! and never decides an approval itself (the operator's answer does).

use vigil_protocol::{AgentEvent, Answer, ApprovalPolicy};

use crate::approval::{AnswerRefused, ApprovalBroker, Policy};
use crate::run::shared::Shared;

/// The operator's answer to approval `id`, with the request's `token`.
pub(crate) fn answer(
    broker: &ApprovalBroker,
    shared: &Shared,
    id: u64,
    decision: Answer,
    token: &str,
) {
    if let Err(refused) = broker.answer(id, token, decision.into()) {
        let text = match refused {
            AnswerRefused::NotWaiting(_) => format!("approval #{id} is no longer pending"),
            other => other.to_string(),
        };
        shared.emit(AgentEvent::Notice { text });
    }
}

/// Preview what the command waiting as approval `id` would do.
pub(crate) fn preview(broker: &ApprovalBroker, shared: &Shared, id: u64) {
    if !crate::approval::preview::start(&broker.desk(), broker.can_sandbox(), id) {
        shared.emit(AgentEvent::Notice {
            text: format!("approval #{id} is no longer pending: nothing to preview"),
        });
    }
}

/// Withdraw a session rule (an exact action, or a word prefix).
pub(crate) fn revoke(
    broker: &ApprovalBroker,
    shared: &Shared,
    tool: &str,
    rule: &str,
    prefix: bool,
) {
    let what = if prefix {
        format!("{rule} …")
    } else {
        rule.to_string()
    };
    let text = if broker.revoke(tool, rule, prefix) {
        format!("session rule revoked: {tool} `{what}` asks again")
    } else {
        format!("no session rule {tool} `{what}` to revoke")
    };
    shared.emit(AgentEvent::Notice { text });
}

/// How gated calls are decided from now on.
pub(crate) fn set_policy(broker: &ApprovalBroker, policy: ApprovalPolicy) {
    broker.set_policy(Policy::from_choice(policy));
}

/// The operator's word on the rules a resume read from the log.
pub(crate) fn restored_rules(broker: &ApprovalBroker, shared: &Shared, keep: bool) {
    let text = if keep {
        format!(
            "restored session rules approve again: {}",
            vigil_protocol::preview::plural(broker.confirm_restored(), "rule")
        )
    } else {
        broker.discard_restored();
        "restored session rules discarded".to_string()
    };
    shared.emit(AgentEvent::Notice { text });
}
