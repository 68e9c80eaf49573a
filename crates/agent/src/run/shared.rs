//! The state the agent loop shares with the turn it runs and with a
//! compaction: the model, the registry, the conversation, the context
//! budget, the session file and the event channel. It holds data and small
//! accessors only; it never starts a turn or decides anything.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::model::ChatModel;
use crate::model::retry::RetryPolicy;
use crate::model::types::ChatMessage;
use crate::record::session::SessionWriter;
use crate::run::context::ContextBudget;
use crate::run::conversation::Conversation;
use vigil_protocol::AgentEvent;
use vigil_tools::ToolRegistry;

/// State shared by the loop and the running turn.
pub(crate) struct Shared {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) retry: RetryPolicy,
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) events: mpsc::UnboundedSender<AgentEvent>,
    pub(crate) conversation: Mutex<Conversation>,
    pub(crate) context: Mutex<ContextBudget>,
    pub(crate) max_rounds: u32,
    pub(crate) spill_dir: Option<PathBuf>,
    pub(crate) session: Option<Arc<SessionWriter>>,
    /// Results of calls that finished while others of the round still run.
    pub(crate) finished: Mutex<HashMap<String, String>>,
    /// The last turn failed on the model (so `Retry` has something to do).
    pub(crate) last_failed: AtomicBool,
    /// What the operator was last told about shortened tool definitions
    /// (told again only when it changes).
    pub(crate) tools_told: Mutex<Option<String>>,
}

impl Shared {
    pub(crate) fn emit(&self, event: AgentEvent) {
        // The receiver going away means the console quit; nothing to do.
        let _ = self.events.send(event);
    }

    /// Append to the conversation and the session file.
    pub(crate) fn push(&self, message: ChatMessage) {
        self.record(&message);
        lock(&self.conversation).push(message);
    }

    /// Write to the session file only.
    pub(crate) fn record(&self, message: &ChatMessage) {
        if let Some(s) = &self.session {
            s.record_message(message);
        }
    }

    /// The context estimate of the conversation as it is now, in tokens
    /// (from the running size: no walk over the messages).
    pub(crate) fn context_used(&self) -> u64 {
        let chars = lock(&self.conversation).chars();
        lock(&self.context).estimate_chars(chars)
    }
}

/// A poisoned lock still holds usable data: take it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
