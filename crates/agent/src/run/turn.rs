//! One turn: model rounds (with retries) until the model answers without
//! tool calls or the round budget is spent. The calls of one round run
//! concurrently, each with its own approval and event stream; their results
//! go back to the model in the order the model gave them. Each result is
//! written to the session file the moment its call completes, so a crash
//! loses no completed call.
//!
//! It never renders, and never decides approvals (the registry asks the
//! broker).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::model::retry::complete_with_retries;
use crate::model::types::{ChatMessage, ToolCall};
use crate::run::compact::maybe_compact;
use crate::run::shared::{Shared, lock};
use crate::run::tool_budget::fit;
use vigil_protocol::approval::ApprovalDecision;
use vigil_protocol::{AgentEvent, FailureKind, OutputStream, ToolSummary, TurnOutcome};
use vigil_tools::visibility::Visibility;
use vigil_tools::{ToolContext, ToolDefinition, ToolStream};

use crate::model::{Completion, ModelError};

/// Appended to the result of a call whose arguments were not a JSON object
/// (the registry has already answered with the validation error).
const UNUSABLE_ARGUMENTS: &str = "\n(vigil: these arguments could not be used, so nothing was \
run; the call is kept in the conversation with arguments {}. Send the call again with a JSON \
object as its arguments.)";

/// A turn started by a user message.
pub(crate) async fn run_turn(shared: Arc<Shared>, user: String) -> Option<TurnOutcome> {
    shared.emit(AgentEvent::TurnStarted { user: user.clone() });
    shared.push(ChatMessage::user(user));
    Some(rounds(&shared).await)
}

/// A turn that goes on from the conversation as it is (retry, resume).
pub(crate) async fn continue_turn(shared: Arc<Shared>, reason: String) -> Option<TurnOutcome> {
    shared.emit(AgentEvent::TurnContinued { reason });
    Some(rounds(&shared).await)
}

async fn rounds(shared: &Arc<Shared>) -> TurnOutcome {
    // Lazy tool visibility: hidden domains join only after `request_tools`,
    // and visibility only grows within the turn.
    let visibility = shared.registry.visibility();
    for _round in 0..shared.max_rounds {
        maybe_compact(shared, false).await;
        let done = match ask_fitting(shared, &visibility).await {
            Ok(done) => done,
            Err(e) => return fail(shared, &e),
        };
        if done.fell_back {
            shared.emit(AgentEvent::Notice {
                text: "the server sent an empty streamed answer; vigil asked again without \
                       streaming"
                    .into(),
            });
        }
        let reply = done.reply;
        shared.emit(AgentEvent::AssistantMessage {
            text: reply.content.clone(),
        });
        let calls = reply.tool_calls;
        // Stored (and sent back) in a form every server accepts; run as sent.
        let stored = calls.iter().map(ToolCall::storable).collect();
        shared.push(ChatMessage::assistant(reply.content, stored));
        if !calls.is_empty() {
            run_calls(shared, &calls, &visibility).await;
        }
        emit_usage(shared);
        if calls.is_empty() {
            if reply.finish_reason.as_deref() == Some("length") {
                return cut_off(shared);
            }
            return TurnOutcome::Completed;
        }
    }
    let message = format!(
        "stopped after {} model rounds in one turn (agent.max_rounds); send a message to continue",
        shared.max_rounds
    );
    shared.emit(AgentEvent::TurnFailed {
        kind: FailureKind::BudgetExhausted,
        message: message.clone(),
    });
    TurnOutcome::Failed(message)
}

/// The visible definitions in the form that fits the context window (see
/// [`crate::run::tool_budget`]); what was shortened is logged and told when it
/// changes.
fn fitted_definitions(shared: &Shared, visibility: &Visibility) -> Vec<ToolDefinition> {
    let visible = shared.registry.visible_definitions(visibility);
    let registry = &shared.registry;
    let domain_of = |name: &str| {
        registry
            .get(name)
            .and_then(|t| t.domain())
            .map(str::to_string)
    };
    let (fitted, limit) = {
        let mut budget = lock(&shared.context);
        let fitted = fit(visible, &budget, &domain_of);
        budget.set_tools_chars(fitted.sent_chars);
        (fitted, budget.limit)
    };
    let told = fitted.describe(limit);
    let mut last = lock(&shared.tools_told);
    if *last != told {
        if let Some(text) = &told {
            tracing::info!("{text}");
            shared.emit(AgentEvent::Notice { text: text.clone() });
        }
        *last = told;
    }
    fitted.definitions
}

/// One round's request, with retries. The usage the server reports
/// calibrates the context estimate. A refusal because the request does not
/// fit the server's context teaches the budget the server's numbers,
/// compacts, and asks once more, unless compacting left the request as it
/// was (the same request is never sent again); a second refusal is the
/// round's error.
async fn ask_fitting(
    shared: &Arc<Shared>,
    visibility: &Visibility,
) -> Result<Completion, ModelError> {
    // The refused request and its refusal.
    let mut refused: Option<(String, ModelError)> = None;
    loop {
        let definitions = fitted_definitions(shared, visibility);
        // A shared snapshot, not a copy; dropped with the round's request,
        // before anything is appended again.
        let (messages, chars) = {
            let convo = lock(&shared.conversation);
            (convo.snapshot(), convo.chars())
        };
        let request = request_key(&messages, &definitions);
        if let Some((_, e)) = refused.as_ref().filter(|(key, _)| *key == request) {
            return Err(not_sent_again(e));
        }
        let raw_estimate = lock(&shared.context).raw_chars(chars);
        let emitter = shared.events.clone();
        let emit = move |ev: AgentEvent| {
            let _ = emitter.send(ev);
        };
        let result = complete_with_retries(
            shared.model.as_ref(),
            &shared.retry,
            messages.messages(),
            &definitions,
            &emit,
        )
        .await;
        drop(messages);
        match result {
            Ok(done) => {
                if let Some(usage) = done.reply.usage {
                    lock(&shared.context).calibrate(raw_estimate, usage.prompt_tokens);
                }
                return Ok(done);
            }
            Err(
                e @ ModelError::ContextExceeded {
                    prompt_tokens,
                    context_size,
                    ..
                },
            ) if refused.is_none() => {
                learn_context(shared, raw_estimate, prompt_tokens, context_size);
                shared.emit(AgentEvent::Notice {
                    text: format!(
                        "the model server refused the request as too long for its context \
                         ({}); compacting the conversation and asking once more",
                        sizes(prompt_tokens, context_size)
                    ),
                });
                tracing::warn!("context refused: {e}");
                refused = Some((request, e));
                maybe_compact(shared, true).await;
            }
            Err(ModelError::ContextExceeded {
                prompt_tokens,
                context_size,
                body,
            }) => {
                return Err(ModelError::ContextExceeded {
                    prompt_tokens,
                    context_size,
                    body: format!("{body}; still too long after compacting once"),
                });
            }
            Err(e) => return Err(e),
        }
    }
}

/// What identifies a request: its messages' wire form and its tools.
fn request_key(
    messages: &crate::run::conversation::Snapshot,
    definitions: &[ToolDefinition],
) -> String {
    let tools = serde_json::to_string(definitions).unwrap_or_default();
    let wire = match messages.messages() {
        crate::model::types::Messages::Wire { json, .. } => json.to_string(),
        other => serde_json::to_string(other.typed()).unwrap_or_default(),
    };
    format!("{wire}\u{0}{tools}")
}

/// The refusal again, for a request compacting could not change: it is
/// not sent a second time.
fn not_sent_again(refusal: &ModelError) -> ModelError {
    match refusal {
        ModelError::ContextExceeded {
            prompt_tokens,
            context_size,
            body,
        } => ModelError::ContextExceeded {
            prompt_tokens: *prompt_tokens,
            context_size: *context_size,
            body: format!(
                "{body}; still too long: compacting could not make it smaller, so the same \
                 request was not sent again"
            ),
        },
        other => other.clone(),
    }
}

/// What a context refusal teaches: the server's window bounds the limit,
/// and its prompt count calibrates the estimate.
fn learn_context(shared: &Shared, raw: u64, prompt: Option<u64>, size: Option<u64>) {
    let mut budget = lock(&shared.context);
    if let Some(size) = size {
        budget.limit = budget.limit.min(size.max(1));
    }
    if let Some(prompt) = prompt {
        budget.calibrate(raw, prompt);
    }
}

fn sizes(prompt: Option<u64>, size: Option<u64>) -> String {
    match (prompt, size) {
        (Some(p), Some(n)) => format!("{p} tokens asked, {n} available"),
        _ => "no sizes given".into(),
    }
}

/// A text answer that stopped at the token limit: kept, but the turn did
/// not complete.
fn cut_off(shared: &Shared) -> TurnOutcome {
    let message = "the answer was cut off: the model reached its token limit (finish_reason \
                   \"length\"; see [model] max_tokens) before it finished; send a message to \
                   let it continue"
        .to_string();
    shared.emit(AgentEvent::TurnFailed {
        kind: FailureKind::AnswerCut,
        message: message.clone(),
    });
    TurnOutcome::Failed(message)
}

fn fail(shared: &Shared, e: &ModelError) -> TurnOutcome {
    let kind = if e.is_transient() {
        FailureKind::ModelUnreachable
    } else {
        FailureKind::ModelError
    };
    let message = format!("model request failed: {e}");
    shared.last_failed.store(true, Ordering::SeqCst);
    shared.emit(AgentEvent::TurnFailed {
        kind,
        message: message.clone(),
    });
    TurnOutcome::Failed(message)
}

fn emit_usage(shared: &Shared) {
    let used = shared.context_used();
    let limit = lock(&shared.context).limit;
    shared.emit(AgentEvent::ContextUsage { used, limit });
}

/// Run a round's calls concurrently; push their results in the model's order.
async fn run_calls(shared: &Arc<Shared>, calls: &[ToolCall], visibility: &Visibility) {
    for call in calls {
        shared.emit(AgentEvent::ToolCallRequested {
            call_id: call.id.clone(),
            name: call.function.name.clone(),
            arguments: call.function.arguments.clone(),
        });
    }
    let texts = futures::future::join_all(calls.iter().map(|call| async move {
        let mut text = run_call(
            shared,
            &call.id,
            &call.function.name,
            &call.function.arguments,
            visibility,
        )
        .await;
        if !call.arguments_are_object() {
            text.push_str(UNUSABLE_ARGUMENTS);
        }
        // Durable the moment it completes, whatever the other calls do.
        shared.record(&ChatMessage::tool(call.id.clone(), text.clone()));
        lock(&shared.finished).insert(call.id.clone(), text.clone());
        text
    }))
    .await;
    let mut convo = lock(&shared.conversation);
    let mut finished = lock(&shared.finished);
    for (call, text) in calls.iter().zip(texts) {
        finished.remove(&call.id);
        convo.push(ChatMessage::tool(call.id.clone(), text));
    }
}

/// Run one tool call through the registry, reporting it live; returns the text
/// for the model.
async fn run_call(
    shared: &Arc<Shared>,
    call_id: &str,
    name: &str,
    arguments: &str,
    visibility: &Visibility,
) -> String {
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
            ToolStream::TargetNotice(text) => AgentEvent::TargetNotice { text },
            ToolStream::Completed => return,
        };
        let _ = events.send(event);
    });
    let mut ctx = ToolContext::new(call_id)
        .with_sink(sink)
        .with_visibility(visibility.clone());
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
            seen: output.map(|o| o.seen.clone()).unwrap_or_default(),
            error,
        },
    });
    run.model_text
}
