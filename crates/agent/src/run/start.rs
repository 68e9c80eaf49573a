//! The start of a session, in order: the console is told what runs
//! ([`AgentEvent::SessionStarted`], notices, where it is recorded), the key
//! passthrough is started, the context window is settled
//! ([`crate::run::window`]), the shared state is built and the conversation
//! begins (the system prompt, or a resumed session read back).
//!
//! It never starts a turn and never waits on anything but the context
//! window's bounded ask.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use crate::model::types::{ChatMessage, Role};
use crate::record::restore::Restored;
use crate::run::agent_loop::AgentLoop;
use crate::run::context::ContextBudget;
use crate::run::conversation::Conversation;
use crate::run::pane_keys::spawn_pane_keys;
use crate::run::runner::AgentSetup;
use crate::run::shared::{Shared, lock};
use crate::run::window;
use vigil_protocol::AgentEvent;

/// Everything the start-up does; the loop that takes over after it.
pub(crate) async fn start(
    setup: AgentSetup,
    events: mpsc::UnboundedSender<AgentEvent>,
) -> AgentLoop {
    announce(&setup, &events);
    let broker = setup.broker.clone();
    let pane_keys = setup
        .tmux
        .clone()
        .map(|tmux| spawn_pane_keys(tmux, events.clone()));
    let context_limit = window::context_limit(
        &setup.model,
        setup.context_limit,
        setup.model_cache.as_ref(),
        &events,
    )
    .await;
    let definitions = setup.registry.definitions();
    let tools_chars = serde_json::to_string(&definitions).map_or(0, |s| s.len());
    let shared = Arc::new(Shared {
        model: setup.model,
        retry: setup.retry,
        registry: setup.registry,
        events,
        conversation: Mutex::new(Conversation::new()),
        context: Mutex::new(ContextBudget::new(context_limit, tools_chars)),
        max_rounds: setup.max_rounds,
        spill_dir: setup.spill_dir,
        session: setup.session,
        finished: Mutex::new(HashMap::new()),
        last_failed: AtomicBool::new(false),
        tools_told: Mutex::new(None),
    });
    let system = ChatMessage::system(setup.system_prompt);
    match setup.restore {
        Some(restored) => restore(&shared, system, restored),
        None => shared.push(system),
    }
    AgentLoop::new(shared, broker, pane_keys)
}

/// Tell the console what runs: the session, the notices, the recording.
fn announce(setup: &AgentSetup, events: &mpsc::UnboundedSender<AgentEvent>) {
    let _ = events.send(AgentEvent::SessionStarted {
        model: setup.model_label.clone(),
        target: setup.target.clone(),
        demo: setup.demo,
        mirror: setup.mirror.clone(),
        tools: setup.registry.names(),
    });
    for text in &setup.notices {
        let _ = events.send(AgentEvent::Notice { text: text.clone() });
    }
    for text in &setup.target_notices {
        let _ = events.send(AgentEvent::TargetNotice { text: text.clone() });
    }
    if let Some(s) = &setup.session {
        let _ = events.send(AgentEvent::SessionRecording {
            id: s.id().to_string(),
            dir: s.dir().to_path_buf(),
        });
    }
}

/// Load a resumed session into the conversation and tell the console.
fn restore(shared: &Shared, system: ChatMessage, restored: Restored) {
    let mut messages = restored.messages.clone();
    // A session recorded before calls were stored in a form every server
    // accepts may hold unusable arguments: send them as `{}`.
    for m in messages.iter_mut() {
        for call in m.tool_calls.iter_mut() {
            *call = call.storable();
        }
    }
    match messages.first() {
        Some(m) if m.role == Role::System => messages[0] = system,
        _ => messages.insert(0, system),
    }
    for stub in &restored.stubs {
        shared.record(stub);
    }
    lock(&shared.conversation).replace(messages);
    shared.emit(restored.event());
    for call in &restored.interrupted {
        shared.emit(AgentEvent::Notice {
            text: format!(
                "interrupted call {} ({} {}) {}; the model is told its outcome is unknown",
                call.call_id,
                call.name,
                call.arguments,
                if call.started {
                    "was running when the session stopped"
                } else {
                    "had not started when the session stopped"
                }
            ),
        });
    }
}
