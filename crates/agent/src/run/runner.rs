//! The agent loop: one task that owns the conversation and takes
//! [`AgentCommand`]s on one channel. Messages are queued while a turn runs,
//! approvals are handed to the broker, a cancel drops the running turn (which
//! stops the stream and kills the running commands), `Retry` re-runs the
//! last failed round, `Compact` shrinks the context on demand, `PaneKeys`
//! (the operator typing into the managed pane) goes to tmux ungated on its
//! own ordered task. What one turn does lives in [`crate::run::turn`].
//!
//! It never renders and never reads the terminal.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::approval::ApprovalBroker;
use crate::model::ChatModel;
use crate::model::discover::{Discovery, ServerModels};
use crate::model::retry::RetryPolicy;
use crate::model::types::{ChatMessage, Role};
use crate::record::restore::Restored;
use crate::record::session::SessionWriter;
use crate::run::context::ContextBudget;
use crate::run::conversation::Conversation;
use crate::run::shared::{Shared, lock};
use crate::run::turn::{continue_turn, run_turn};
use vigil_exec::tmux::TmuxManager;
use vigil_protocol::{AgentCommand, AgentEvent, MirrorTarget, TurnOutcome};
use vigil_tools::ToolRegistry;

/// The system prompt used when the config gives none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are an assistant that operates a real machine \
through tools, supervised live by a human operator who sees every call and must approve \
risky ones. Prefer small, inspectable steps. For run_shell, label risk honestly \
(low/medium/high), say whether the command mutates state or escalates privileges, and \
give a short why. If a call is denied, do not retry it in another form: explain and ask. \
Answer concisely.";

/// The context window assumed when none is configured and the server
/// publishes none.
pub const DEFAULT_CONTEXT_LIMIT: u64 = 32_768;

/// The longest wait for the server's model list at start-up.
const DISCOVERY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Everything the agent needs, built by the binary (or a test).
pub struct AgentSetup {
    /// The model, in whichever dialect.
    pub model: Arc<dyn ChatModel>,
    pub registry: Arc<ToolRegistry>,
    pub broker: Arc<ApprovalBroker>,
    pub system_prompt: String,
    pub max_rounds: u32,
    pub retry: RetryPolicy,
    /// The model's context window, in tokens; None: as the server publishes
    /// it ([`ChatModel::discover`]), else [`DEFAULT_CONTEXT_LIMIT`].
    pub context_limit: Option<u64>,
    pub model_label: String,
    pub target: String,
    pub demo: bool,
    pub mirror: Option<MirrorTarget>,
    /// Where full outputs go when the model sees a cut view.
    pub spill_dir: Option<PathBuf>,
    /// Where the session is recorded (messages; events are recorded by the
    /// channel tee, see [`crate::record::session::tee`]).
    pub session: Option<Arc<SessionWriter>>,
    /// A session read back for resume.
    pub restore: Option<Restored>,
    /// Told to the operator right after the session starts.
    pub notices: Vec<String>,
    /// What the target lacks (e.g. no tmux there), told right after the
    /// session starts as [`AgentEvent::TargetNotice`]s.
    pub target_notices: Vec<String>,
    /// The managed tmux layer, for the operator's key passthrough
    /// ([`AgentCommand::PaneKeys`]); None when commands run as processes.
    pub tmux: Option<Arc<TmuxManager>>,
}

/// Start the agent task.
pub fn spawn_agent(
    setup: AgentSetup,
    events: mpsc::UnboundedSender<AgentEvent>,
    commands: mpsc::UnboundedReceiver<AgentCommand>,
) -> JoinHandle<()> {
    tokio::spawn(run_agent(setup, events, commands))
}

/// A running job: a turn (which ends with `TurnFinished`) or a compaction.
type Job = Pin<Box<dyn Future<Output = Option<TurnOutcome>> + Send>>;

async fn run_agent(
    setup: AgentSetup,
    events: mpsc::UnboundedSender<AgentEvent>,
    mut commands: mpsc::UnboundedReceiver<AgentCommand>,
) {
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
    let broker = setup.broker.clone();
    let pane_keys = setup
        .tmux
        .clone()
        .map(|tmux| spawn_pane_keys(tmux, events.clone()));
    let context_limit = context_limit(&setup, &events).await;
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

    let mut queue: VecDeque<String> = VecDeque::new();
    let mut job: Option<Job> = None;
    let mut job_is_turn = false;

    loop {
        if job.is_none()
            && let Some(text) = queue.pop_front()
        {
            job = Some(Box::pin(run_turn(shared.clone(), text)));
            job_is_turn = true;
        }
        tokio::select! {
            cmd = commands.recv() => match cmd {
                None | Some(AgentCommand::Quit) => break,
                Some(AgentCommand::UserMessage { text }) => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    if job.is_some() {
                        shared.emit(AgentEvent::Notice {
                            text: "message queued: it is sent when the current turn ends".into(),
                        });
                    }
                    queue.push_back(text);
                }
                Some(AgentCommand::Approval { id, decision, token }) => {
                    if let Err(refused) = broker.answer(id, &token, decision.into()) {
                        let text = match refused {
                            crate::approval::AnswerRefused::NotWaiting(_) => {
                                format!("approval #{id} is no longer pending")
                            }
                            other => other.to_string(),
                        };
                        shared.emit(AgentEvent::Notice { text });
                    }
                }
                Some(AgentCommand::Preview { id }) => {
                    if !crate::approval::preview::start(&broker.desk(), broker.can_sandbox(), id) {
                        shared.emit(AgentEvent::Notice {
                            text: format!("approval #{id} is no longer pending: nothing to preview"),
                        });
                    }
                }
                Some(AgentCommand::PaneKeys { keys }) => match &pane_keys {
                    // The operator types: never gated, never queued behind a turn.
                    Some(tx) => {
                        let _ = tx.send(keys);
                    }
                    None => shared.emit(AgentEvent::Notice {
                        text: "no managed tmux pane to type into: commands run as plain processes".into(),
                    }),
                },
                Some(AgentCommand::RevokeRule { tool, rule, prefix }) => {
                    let what = if prefix { format!("{rule} …") } else { rule.clone() };
                    let text = if broker.revoke(&tool, &rule, prefix) {
                        format!("session rule revoked: {tool} `{what}` asks again")
                    } else {
                        format!("no session rule {tool} `{what}` to revoke")
                    };
                    shared.emit(AgentEvent::Notice { text });
                }
                Some(AgentCommand::SetPolicy { policy }) => {
                    broker.set_policy(crate::approval::Policy::from_choice(policy));
                }
                Some(AgentCommand::RestoredRules { keep }) => {
                    let text = if keep {
                        format!(
                            "restored session rules approve again: {}",
                            vigil_exec::preview::report::plural(broker.confirm_restored(), "rule")
                        )
                    } else {
                        broker.discard_restored();
                        "restored session rules discarded".to_string()
                    };
                    shared.emit(AgentEvent::Notice { text });
                }
                Some(AgentCommand::Cancel) => {
                    if let Some(running) = job.take() {
                        // Dropping the job stops the model stream and kills the
                        // running commands (their guards kill the process groups).
                        drop(running);
                        if job_is_turn {
                            close_dangling_calls(&shared);
                            shared.emit(AgentEvent::TurnFinished { outcome: TurnOutcome::Cancelled });
                        } else {
                            shared.emit(AgentEvent::Notice { text: "compaction cancelled".into() });
                        }
                    }
                }
                Some(AgentCommand::Retry) => {
                    if job.is_some() {
                        shared.emit(AgentEvent::Notice { text: "a turn is running; nothing to retry".into() });
                    } else if shared.last_failed.swap(false, Ordering::SeqCst) {
                        job = Some(Box::pin(continue_turn(shared.clone(), "retrying the last failed model round".into())));
                        job_is_turn = true;
                    } else {
                        shared.emit(AgentEvent::Notice { text: "the last turn did not fail; nothing to retry".into() });
                    }
                }
                Some(AgentCommand::Compact) => {
                    if job.is_some() {
                        shared.emit(AgentEvent::Notice {
                            text: "a turn is running; it compacts by itself near the limit".into(),
                        });
                    } else {
                        let s = shared.clone();
                        job = Some(Box::pin(async move {
                            crate::run::compact::maybe_compact(&s, true).await;
                            None
                        }));
                        job_is_turn = false;
                    }
                }
            },
            outcome = async { match job.as_mut() { Some(t) => t.await, None => std::future::pending().await } } => {
                job = None;
                if let Some(outcome) = outcome {
                    shared.emit(AgentEvent::TurnFinished { outcome });
                }
            }
        }
    }
}

/// The configured context window, else the one the server publishes (told
/// to the operator), else [`DEFAULT_CONTEXT_LIMIT`]. The server is asked
/// either way: a model list without the configured model is warned about.
/// With the window configured the list only serves that warning, so it is
/// asked in the background and the start never waits on it (a silent server
/// cost up to [`DISCOVERY_TIMEOUT`]). A server that cannot be reached gets
/// no notice here (the turn's own error says so).
async fn context_limit(setup: &AgentSetup, events: &mpsc::UnboundedSender<AgentEvent>) -> u64 {
    if let Some(limit) = setup.context_limit {
        let (model, events) = (setup.model.clone(), events.clone());
        tokio::spawn(async move { discover(model.as_ref(), &events).await });
        return limit;
    }
    let Some(found) = discover(setup.model.as_ref(), events).await else {
        return DEFAULT_CONTEXT_LIMIT;
    };
    let say = |text: String| {
        let _ = events.send(AgentEvent::Notice { text });
    };
    say(match found.window {
        Some(n) => format!(
            "context window: {n} tokens, as the model server publishes it ([model] \
             context_limit is unset)"
        ),
        None => format!(
            "the model server publishes no context window; assuming {DEFAULT_CONTEXT_LIMIT} \
             tokens (set [model] context_limit)"
        ),
    });
    found.window.unwrap_or(DEFAULT_CONTEXT_LIMIT)
}

/// Ask the server for its model list (at most [`DISCOVERY_TIMEOUT`]) and warn
/// when it does not list the configured model. `None`: no answer.
async fn discover(
    model: &dyn ChatModel,
    events: &mpsc::UnboundedSender<AgentEvent>,
) -> Option<ServerModels> {
    let found = match tokio::time::timeout(DISCOVERY_TIMEOUT, model.discover()).await {
        Ok(Discovery::Answered(found)) => found,
        Ok(Discovery::Unreachable(why)) => {
            tracing::info!("model list not asked: {why}");
            return None;
        }
        Err(_) => {
            tracing::info!("the model list did not come within {DISCOVERY_TIMEOUT:?}");
            return None;
        }
    };
    let name = model.model_name();
    if found.lacks(name) {
        let text = format!(
            "the model server does not list the model `{name}` (it lists: {}); check [model] \
             model",
            shown_list(&found.listed)
        );
        let _ = events.send(AgentEvent::Notice { text });
    }
    Some(found)
}

/// At most five names, then how many more.
fn shown_list(names: &[String]) -> String {
    let mut shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    let more = names.len().saturating_sub(5);
    let more_text = format!("and {more} more");
    if more > 0 {
        shown.push(&more_text);
    }
    shown.join(", ")
}

/// The operator's keystrokes go to the pane in order, on their own task (the
/// loop never waits on tmux); bursts are sent as one batch. Each accepted
/// batch is reported as [`AgentEvent::OperatorKeys`]. The task ends with the
/// loop (its sender is dropped).
fn spawn_pane_keys(
    tmux: Arc<TmuxManager>,
    events: mpsc::UnboundedSender<AgentEvent>,
) -> mpsc::UnboundedSender<Vec<vigil_protocol::PaneKey>> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<vigil_protocol::PaneKey>>();
    tokio::spawn(async move {
        while let Some(mut keys) = rx.recv().await {
            while let Ok(more) = rx.try_recv() {
                keys.extend(more);
            }
            let event = match tmux.send_operator_keys(&keys).await {
                Ok(()) => AgentEvent::OperatorKeys { keys },
                Err(e) => AgentEvent::Error {
                    message: format!("could not type into the managed pane: {e}"),
                },
            };
            if events.send(event).is_err() {
                break;
            }
        }
    });
    tx
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

/// After a cancel, every tool call the model made must still get an answer,
/// or the next request would be refused by the server.
fn close_dangling_calls(shared: &Shared) {
    let mut convo = lock(&shared.conversation);
    let mut finished = lock(&shared.finished);
    let Some(pos) = convo
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
        finished.clear();
        return;
    };
    let answered: Vec<String> = convo[pos + 1..]
        .iter()
        .filter_map(|m| m.tool_call_id.clone())
        .collect();
    let missing: Vec<String> = convo[pos]
        .tool_calls
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| !answered.contains(id))
        .collect();
    for id in missing {
        // A call that finished before the cancel keeps its real result (it
        // is already in the session file).
        match finished.remove(&id) {
            Some(text) => convo.push(ChatMessage::tool(id, text)),
            None => {
                let name = convo[pos]
                    .tool_calls
                    .iter()
                    .find(|c| c.id == id)
                    .map(|c| c.function.name.clone())
                    .unwrap_or_default();
                let msg = ChatMessage::tool(
                    id.clone(),
                    "Tool error: the operator cancelled this call before it finished.",
                );
                shared.record(&msg);
                convo.push(msg);
                shared.emit(AgentEvent::ToolCancelled { call_id: id, name });
            }
        }
    }
    finished.clear();
}
