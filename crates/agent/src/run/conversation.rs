//! The in-memory conversation the model is sent, kept so that a model round
//! costs no agent-side work proportional to the history beyond copying its
//! bytes onto the wire:
//! - the messages are shared copy-on-write: a round's request borrows a
//!   [`Snapshot`] in O(1), and appending after the round copies nothing once
//!   that snapshot is gone;
//! - each message is serialised once, when appended, into the wire form the
//!   OpenAI dialect sends ([`Messages::Wire`]);
//! - their size in characters (as [`message_chars`] counts them) is a
//!   running total for the context estimate.
//!
//! The wire form and the size are updated per appended message and rebuilt
//! only after an edit of older messages (projections, compaction, resume).
//!
//! Plain data: it never does I/O, never turns characters into tokens (that
//! is [`crate::run::context::ContextBudget`]'s job) and never writes the session
//! file (that is the caller's).

use std::ops::Deref;
use std::sync::Arc;

use crate::model::types::{ChatMessage, Messages};
use crate::run::context::message_chars;

/// The messages with their wire form, as one round's request sees them.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    messages: Vec<ChatMessage>,
    /// `serde_json` of each message, joined with `,`.
    wire: String,
}

impl Snapshot {
    /// The messages for a request, with their wire form.
    pub fn messages(&self) -> Messages<'_> {
        Messages::Wire {
            messages: &self.messages,
            json: &self.wire,
        }
    }

    fn append_wire(&mut self, message: &ChatMessage) {
        if !self.wire.is_empty() {
            self.wire.push(',');
        }
        self.wire.push_str(&message_json(message));
    }
}

/// One message as the OpenAI dialect sends it (a message of strings and
/// plain enums always serialises).
fn message_json(message: &ChatMessage) -> String {
    serde_json::to_string(message).unwrap_or_default()
}

/// The messages and their running size.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    current: Arc<Snapshot>,
    chars: usize,
}

impl Conversation {
    pub fn new() -> Self {
        Self::default()
    }

    /// Append one message: O(size of the message), unless a snapshot is
    /// still held, in which case everything is copied once.
    pub fn push(&mut self, message: ChatMessage) {
        self.chars += message_chars(&message);
        let current = Arc::make_mut(&mut self.current);
        current.append_wire(&message);
        current.messages.push(message);
    }

    /// The conversation as it is now, shared: O(1), unaffected by later
    /// changes. Drop it before appending again, or the append copies.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.current)
    }

    /// Characters of all messages as sent (the sum of [`message_chars`]).
    pub fn chars(&self) -> usize {
        self.chars
    }

    /// Change older messages in place (shorten, cut, replace); the wire form
    /// and the running size are rebuilt afterwards.
    pub fn edit<R>(&mut self, f: impl FnOnce(&mut Vec<ChatMessage>) -> R) -> R {
        let current = Arc::make_mut(&mut self.current);
        let out = f(&mut current.messages);
        let wire: Vec<String> = current.messages.iter().map(message_json).collect();
        current.wire = wire.join(",");
        self.chars = current.messages.iter().map(message_chars).sum();
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
        &self.current.messages
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::context::{PROJECTED, project_tool_results};

    /// The running size and the wire form match a full recount.
    fn consistent(c: &Conversation) {
        let chars: usize = c.iter().map(message_chars).sum();
        assert_eq!(c.chars(), chars);
        let wire: Vec<String> = c.iter().map(message_json).collect();
        let snap = c.snapshot();
        let Messages::Wire { json, .. } = snap.messages() else {
            panic!("a snapshot carries its wire form")
        };
        assert_eq!(json, wire.join(","));
    }

    #[test]
    fn running_size_and_wire_form_follow_appends_and_edits() {
        let mut c = Conversation::new();
        consistent(&c);
        c.push(ChatMessage::system("sys"));
        consistent(&c);
        c.push(ChatMessage::user("hello \"there\""));
        for i in 0..20 {
            c.push(ChatMessage::tool(format!("call_{i}"), "x".repeat(500 + i)));
        }
        consistent(&c);
        let changed = c.edit(|m| {
            let keep_from = m.len() - 2;
            project_tool_results(m, keep_from)
        });
        assert_eq!(changed, 18);
        assert!(c[2].content.starts_with(PROJECTED));
        consistent(&c);
        c.edit(|m| m.truncate(3));
        assert_eq!(c.len(), 3);
        consistent(&c);
        c.replace(vec![ChatMessage::system("new")]);
        assert_eq!(c.len(), 1);
        consistent(&c);
    }

    #[test]
    fn a_snapshot_is_shared_and_unaffected_by_later_changes() {
        let mut c = Conversation::new();
        c.push(ChatMessage::user("one"));
        let snap = c.snapshot();
        assert!(
            std::ptr::eq(snap.messages().typed().as_ptr(), c.as_ptr()),
            "no copy taken"
        );
        c.push(ChatMessage::user("two"));
        assert_eq!((snap.messages().typed().len(), c.len()), (1, 2));
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
