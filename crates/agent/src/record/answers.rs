//! Who answered which approval: the first console's answer is noted (a
//! later one is refused with who it was), and an operator's resolution is
//! stamped with it, both on the way to the session record (`events.jsonl`)
//! and to the consoles, so the record names the console the screen names.
//!
//! It only remembers and stamps; it never decides an approval.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use vigil_protocol::{AgentEvent, Answerer, DecidedBy};

/// The first answerer of each approval of one agent.
#[derive(Debug, Default)]
pub struct AnswerBook {
    first: Mutex<HashMap<u64, Answerer>>,
}

impl AnswerBook {
    fn book(&self) -> MutexGuard<'_, HashMap<u64, Answerer>> {
        self.first.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Who answered approval `id` first, if anyone did.
    pub fn first(&self, id: u64) -> Option<Answerer> {
        self.book().get(&id).cloned()
    }

    /// Note `who` answered approval `id`; Err: who answered it first.
    pub fn note(&self, id: u64, who: Answerer) -> Result<(), Answerer> {
        let mut book = self.book();
        if let Some(first) = book.get(&id) {
            return Err(first.clone());
        }
        book.insert(id, who);
        Ok(())
    }

    /// Name the console on an operator's resolution that does not say yet.
    pub fn stamp(&self, event: &mut AgentEvent) {
        if let AgentEvent::ApprovalResolved {
            id,
            decided_by,
            answered_by,
            ..
        } = event
            && answered_by.is_none()
            && by_operator(decided_by)
        {
            *answered_by = self.book().get(id).cloned();
        }
    }
}

/// Decisions a console's answer makes (not a rule, the policy or a cancel).
fn by_operator(d: &DecidedBy) -> bool {
    matches!(
        d,
        DecidedBy::Operator | DecidedBy::OperatorEdited { .. } | DecidedBy::Denied { .. }
    )
}
