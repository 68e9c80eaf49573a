//! The agent loop: one task that owns the conversation, talks to the model,
//! runs the tools the model asks for, and reports everything as
//! [`AgentEvent`]s. It takes [`AgentCommand`]s on one channel: messages are
//! queued while a turn runs, approvals are handed to the broker, a cancel drops
//! the running turn (which stops the stream and kills the running command).
//!
//! It never renders and never reads the terminal.

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::approval::ApprovalBroker;
use super::client::ModelClient;
use super::types::{ChatMessage, Role};
use crate::event::{
    AgentCommand, AgentEvent, MirrorTarget, OutputStream, ToolSummary, TurnOutcome,
};
use crate::tools::{ApprovalDecision, ToolContext, ToolRegistry, ToolStream};

/// The system prompt used when the config gives none.
pub const DEFAULT_SYSTEM_PROMPT: &str = "You are an assistant that operates a real machine \
through tools, supervised live by a human operator who sees every call and must approve \
risky ones. Prefer small, inspectable steps. For run_shell, label risk honestly \
(low/medium/high), say whether the command mutates state or escalates privileges, and \
give a short why. If a call is denied, do not retry it in another form: explain and ask. \
Answer concisely.";

/// Everything the agent needs, built by the binary (or a test).
pub struct AgentSetup {
    pub client: ModelClient,
    pub registry: Arc<ToolRegistry>,
    pub broker: Arc<ApprovalBroker>,
    pub system_prompt: String,
    pub max_rounds: u32,
    pub model_label: String,
    pub target: String,
    pub demo: bool,
    pub mirror: Option<MirrorTarget>,
    /// Where full outputs go when the model sees a cut view.
    pub spill_dir: Option<PathBuf>,
}

/// Start the agent task.
pub fn spawn_agent(
    setup: AgentSetup,
    events: mpsc::UnboundedSender<AgentEvent>,
    commands: mpsc::UnboundedReceiver<AgentCommand>,
) -> JoinHandle<()> {
    tokio::spawn(run_agent(setup, events, commands))
}

struct Shared {
    client: ModelClient,
    registry: Arc<ToolRegistry>,
    events: mpsc::UnboundedSender<AgentEvent>,
    conversation: Mutex<Vec<ChatMessage>>,
    max_rounds: u32,
    spill_dir: Option<PathBuf>,
}

impl Shared {
    fn emit(&self, event: AgentEvent) {
        // The receiver going away means the console quit; nothing to do.
        let _ = self.events.send(event);
    }

    fn push(&self, message: ChatMessage) {
        lock(&self.conversation).push(message);
    }

    fn snapshot(&self) -> Vec<ChatMessage> {
        lock(&self.conversation).clone()
    }
}

type TurnFuture = Pin<Box<dyn Future<Output = TurnOutcome> + Send>>;

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
    let broker = setup.broker.clone();
    let shared = Arc::new(Shared {
        client: setup.client,
        registry: setup.registry,
        events,
        conversation: Mutex::new(vec![ChatMessage::system(setup.system_prompt)]),
        max_rounds: setup.max_rounds,
        spill_dir: setup.spill_dir,
    });
    let mut queue: VecDeque<String> = VecDeque::new();
    let mut turn: Option<TurnFuture> = None;

    loop {
        if turn.is_none()
            && let Some(text) = queue.pop_front()
        {
            turn = Some(Box::pin(run_turn(shared.clone(), text)));
        }
        tokio::select! {
            cmd = commands.recv() => match cmd {
                None | Some(AgentCommand::Quit) => break,
                Some(AgentCommand::UserMessage { text }) => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    if turn.is_some() {
                        shared.emit(AgentEvent::Notice {
                            text: "message queued: it is sent when the current turn ends".into(),
                        });
                    }
                    queue.push_back(text);
                }
                Some(AgentCommand::Approval { id, decision }) => {
                    if !broker.resolve(id, decision) {
                        shared.emit(AgentEvent::Notice {
                            text: format!("approval #{id} is no longer pending"),
                        });
                    }
                }
                Some(AgentCommand::SetPolicy { policy }) => {
                    broker.set_policy(crate::agent::approval::Policy::from_choice(policy));
                }
                Some(AgentCommand::Cancel) => {
                    if let Some(running) = turn.take() {
                        // Dropping the turn stops the model stream and kills the
                        // running command (its guard kills the process group).
                        drop(running);
                        close_dangling_calls(&shared);
                        shared.emit(AgentEvent::TurnFinished { outcome: TurnOutcome::Cancelled });
                    }
                }
            },
            outcome = async { match turn.as_mut() { Some(t) => t.await, None => std::future::pending().await } } => {
                turn = None;
                shared.emit(AgentEvent::TurnFinished { outcome });
            }
        }
    }
}

/// After a cancel, every tool call the model made must still get an answer,
/// or the next request would be refused by the server.
fn close_dangling_calls(shared: &Shared) {
    let mut convo = lock(&shared.conversation);
    let Some(pos) = convo
        .iter()
        .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
    else {
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
        convo.push(ChatMessage::tool(
            id,
            "Tool error: the operator cancelled this call before it finished.",
        ));
    }
}

async fn run_turn(shared: Arc<Shared>, user: String) -> TurnOutcome {
    shared.emit(AgentEvent::TurnStarted { user: user.clone() });
    shared.push(ChatMessage::user(user));
    let definitions = shared.registry.definitions();

    for _round in 0..shared.max_rounds {
        let messages = shared.snapshot();
        let events = shared.events.clone();
        let mut on_text = move |t: &str| {
            let _ = events.send(AgentEvent::AssistantDelta {
                text: t.to_string(),
            });
        };
        let reply = match shared
            .client
            .complete(&messages, &definitions, &mut on_text)
            .await
        {
            Ok(reply) => reply,
            Err(e) => {
                let message = format!("model request failed: {e}");
                shared.emit(AgentEvent::Error {
                    message: message.clone(),
                });
                return TurnOutcome::Failed(message);
            }
        };
        shared.emit(AgentEvent::AssistantMessage {
            text: reply.content.clone(),
        });
        let calls = reply.tool_calls.clone();
        shared.push(ChatMessage::assistant(reply.content, reply.tool_calls));
        if calls.is_empty() {
            return TurnOutcome::Completed;
        }
        for call in calls {
            let text = run_call(
                &shared,
                &call.id,
                &call.function.name,
                &call.function.arguments,
            )
            .await;
            shared.push(ChatMessage::tool(call.id, text));
        }
    }
    let message = format!(
        "stopped after {} model rounds in one turn (agent.max_rounds); send a message to continue",
        shared.max_rounds
    );
    shared.emit(AgentEvent::Error {
        message: message.clone(),
    });
    TurnOutcome::Failed(message)
}

/// Run one tool call through the registry, reporting it live; returns the text
/// for the model.
async fn run_call(shared: &Arc<Shared>, call_id: &str, name: &str, arguments: &str) -> String {
    shared.emit(AgentEvent::ToolCallRequested {
        call_id: call_id.to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    });
    let events = shared.events.clone();
    let id = call_id.to_string();
    let tool_name = name.to_string();
    // Duration counts from the moment the tool starts, not from the request
    // (an approval may wait for minutes).
    let started: Arc<Mutex<Option<Instant>>> = Arc::default();
    let started_in_sink = started.clone();
    let sink = Arc::new(move |ev: ToolStream| {
        let event = match ev {
            ToolStream::Started { summary } => {
                *lock(&started_in_sink) = Some(Instant::now());
                AgentEvent::ToolStarted {
                    call_id: id.clone(),
                    name: tool_name.clone(),
                    summary,
                }
            }
            ToolStream::Stdout(text) => AgentEvent::ToolOutput {
                call_id: id.clone(),
                stream: OutputStream::Stdout,
                text,
            },
            ToolStream::Stderr(text) => AgentEvent::ToolOutput {
                call_id: id.clone(),
                stream: OutputStream::Stderr,
                text,
            },
            ToolStream::Info(text) => AgentEvent::ToolInfo {
                call_id: id.clone(),
                text,
            },
            ToolStream::Completed => return,
        };
        let _ = events.send(event);
    });
    let mut ctx = ToolContext::new(call_id).with_sink(sink);
    if let Some(dir) = &shared.spill_dir {
        ctx = ctx.with_spill_dir(dir.clone());
    }
    let run = shared
        .registry
        .execute_with_context(name, arguments, &ctx)
        .await;
    let duration_ms = lock(&started)
        .map(|t| t.elapsed().as_millis() as u64)
        .unwrap_or(0);
    let output = run.output.as_ref();
    let error = match &run.decision {
        Some(ApprovalDecision::Deny) => Some("denied by the operator".to_string()),
        Some(ApprovalDecision::DenyWithReason(reason)) => Some(format!("denied: {reason}")),
        _ => run.error.as_ref().map(|e| e.to_string()),
    };
    shared.emit(AgentEvent::ToolCompleted {
        call_id: call_id.to_string(),
        name: name.to_string(),
        summary: ToolSummary {
            ok: run.ok(),
            exit_code: output.and_then(|o| o.exit_code),
            duration_ms,
            truncated: output.is_some_and(|o| o.truncated),
            spill: output.map(|o| o.spill.clone()).unwrap_or_default(),
            error,
        },
    });
    run.model_text
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
