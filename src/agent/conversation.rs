//! The in-memory conversation the model is sent, kept so that a model round
//! costs no agent-side work proportional to the history beyond serialising
//! the request: the messages are shared copy-on-write (a round's request
//! borrows a snapshot in O(1), and appending after the round copies
//! nothing once that snapshot is gone), and their size in characters (as
//! [`message_chars`] counts them) is kept as a running total, updated per
//! appended message and recomputed only after an edit of older messages
//! (projections, compaction, resume).
//!
//! Plain data: it never does I/O, never turns characters into tokens (that
//! is [`super::context::ContextBudget`]'s job) and never writes the session
//! file (that is the caller's).

use std::ops::Deref;
use std::sync::Arc;

use super::context::message_chars;
use super::types::ChatMessage;

/// The messages and their running size.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    messages: Arc<Vec<ChatMessage>>,
    chars: usize,
}

impl Conversation {
    pub fn new() -> Self {
        Self::default()
    }

    /// Append one message (O(1) unless a snapshot is still held, in which
    /// case the messages are copied once).
    pub fn push(&mut self, message: ChatMessage) {
        self.chars += message_chars(&message);
        Arc::make_mut(&mut self.messages).push(message);
    }

    /// The messages as they are now, shared: O(1), unaffected by later
    /// changes. Drop it before appending again, or the append copies.
    pub fn snapshot(&self) -> Arc<Vec<ChatMessage>> {
        Arc::clone(&self.messages)
    }

    /// Characters of all messages as sent (the sum of [`message_chars`]).
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// Change older messages in place (shorten, cut, replace); the running
    /// size is recomputed afterwards.
    pub fn edit<R>(&mut self, f: impl FnOnce(&mut Vec<ChatMessage>) -> R) -> R {
        let out = f(Arc::make_mut(&mut self.messages));
        self.chars = self.messages.iter().map(message_chars).sum();
        out
    }

    /// Replace every message (resume).
    pub fn replace(&mut self, messages: Vec<ChatMessage>) {
        self.edit(|m| *m = messages);
    }
}

impl Deref for Conversation {
    type Target = [ChatMessage];

    fn deref(&self) -> &[ChatMessage] {
        &self.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::context::{PROJECTED, project_tool_results};

    fn total(m: &[ChatMessage]) -> usize {
        m.iter().map(message_chars).sum()
    }

    #[test]
    fn running_size_matches_a_full_count_after_appends_and_edits() {
        let mut c = Conversation::new();
        c.push(ChatMessage::system("sys"));
        c.push(ChatMessage::user("hello"));
        for i in 0..20 {
            c.push(ChatMessage::tool(format!("call_{i}"), "x".repeat(500 + i)));
        }
        assert_eq!(c.chars(), total(&c));
        let changed = c.edit(|m| {
            let keep_from = m.len() - 2;
            project_tool_results(m, keep_from)
        });
        assert_eq!(changed, 18);
        assert!(c[2].content.starts_with(PROJECTED));
        assert_eq!(c.chars(), total(&c));
        c.edit(|m| m.truncate(3));
        assert_eq!((c.len(), c.chars()), (3, total(&c)));
        c.replace(vec![ChatMessage::system("new")]);
        assert_eq!((c.len(), c.chars()), (1, total(&c)));
    }

    #[test]
    fn a_snapshot_is_shared_and_unaffected_by_later_changes() {
        let mut c = Conversation::new();
        c.push(ChatMessage::user("one"));
        let snap = c.snapshot();
        assert!(std::ptr::eq(snap.as_ptr(), c.as_ptr()), "no copy taken");
        c.push(ChatMessage::user("two"));
        assert_eq!((snap.len(), c.len()), (1, 2));
        drop(snap);
        let ptr = c.as_ptr();
        let snap = c.snapshot();
        drop(snap);
        c.edit(|m| m[0].content.push('!'));
        assert!(
            std::ptr::eq(ptr, c.as_ptr()),
            "no copy once the snapshot is gone"
        );
        assert_eq!(c[0].content, "one!");
    }
}
