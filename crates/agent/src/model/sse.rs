//! Incremental assembly of streamed chat-completion chunks into one
//! [`AssistantReply`].
//!
//! Feed every SSE `data:` payload to [`StreamAssembler::feed`]; it returns the
//! text delta to forward (if any). [`StreamAssembler::finish`] returns the
//! assembled reply. The assembler is pure: it never does I/O, never blocks and
//! never panics on anything a server sends. It tolerates the quirks real
//! OpenAI-compatible servers have: repeated id/name/type in every tool-call
//! chunk, explicit `null`s, missing `index`, the legacy `function_call` field,
//! empty `choices`, usage in a trailing chunk, and a missing `[DONE]`.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::types::{AssistantReply, CallDelta, FunctionCall, ToolCall, Usage};

/// Process-wide counter for tool-call ids the server did not send.
static GENERATED_IDS: AtomicU64 = AtomicU64::new(1);

fn generated_id() -> String {
    format!("call_{}", GENERATED_IDS.fetch_add(1, Ordering::Relaxed))
}

/// Why a stream could not be assembled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// A payload that is not a chat-completion chunk.
    #[error("malformed stream chunk: {0}")]
    Malformed(String),
    /// The server sent an error object inside the stream.
    #[error("the server reported an error mid-stream: {0}")]
    Server(String),
    /// The server sent an error object carrying an HTTP status (`code`)
    /// inside the stream: handled like that status.
    #[error("the server reported HTTP {status} mid-stream: {message}")]
    ServerStatus { status: u16, message: String },
    /// The stream ended without `[DONE]` and without a finish reason.
    #[error("the stream ended before the model finished (no [DONE], no finish_reason)")]
    Truncated,
    /// Not a single chunk arrived.
    #[error("the stream carried no data")]
    Empty,
}

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: Option<String>,
    name: String,
    arguments: String,
    /// Came from the legacy `function_call` field.
    legacy: bool,
}

/// Assembles one streamed reply. Create one per model round.
#[derive(Debug, Default)]
pub struct StreamAssembler {
    content: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    chunks: usize,
    /// Tool-call pieces not yet taken ([`Self::take_call_deltas`]).
    deltas: Vec<CallDelta>,
}

impl StreamAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    /// The tool-call pieces fed since the last call, in order.
    pub fn take_call_deltas(&mut self) -> Vec<CallDelta> {
        std::mem::take(&mut self.deltas)
    }

    /// Whether `[DONE]` has been seen (later payloads are ignored).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Feeds one SSE `data:` payload. Returns the text delta to forward.
    pub fn feed(&mut self, data: &str) -> Result<Option<String>, StreamError> {
        let data = data.trim();
        if self.done || data.is_empty() {
            return Ok(None);
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(None);
        }
        let value: Value = serde_json::from_str(data)
            .map_err(|e| StreamError::Malformed(format!("{e}: {}", snippet(data))))?;
        self.chunks += 1;
        self.feed_value(&value, false)
    }

    /// Feeds an already-parsed chunk, or a whole non-streamed completion when
    /// `whole` is set (its `message` is treated like a single delta).
    fn feed_value(&mut self, value: &Value, whole: bool) -> Result<Option<String>, StreamError> {
        if !value.is_object() {
            return Err(StreamError::Malformed(snippet(&value.to_string())));
        }
        if let Some(err) = value.get("error").filter(|e| !e.is_null()) {
            return Err(StreamError::from_error_value(err));
        }
        if let Some(usage) = value.get("usage").and_then(parse_usage) {
            self.usage = Some(usage);
        }
        if let Some(counted) = value.get("timings").and_then(timings_prompt) {
            // llama.cpp: prompt tokens evaluated plus those reused from its
            // cache; the larger of this and `usage` is the prompt's size.
            let usage = self.usage.get_or_insert_with(Usage::default);
            usage.prompt_tokens = usage.prompt_tokens.max(counted);
        }
        let choice = match value.get("choices").and_then(Value::as_array) {
            Some(choices) => choices
                .iter()
                .find(|c| c.get("index").and_then(Value::as_u64) == Some(0))
                .or_else(|| choices.first()),
            None => None,
        };
        let Some(choice) = choice else {
            return Ok(None);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_string());
        }
        let key = if whole { "message" } else { "delta" };
        let Some(delta) = choice.get(key).filter(|d| d.is_object()) else {
            return Ok(None);
        };
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (pos, call) in calls.iter().enumerate() {
                let index = call.get("index").and_then(Value::as_u64).or(if whole {
                    Some(pos as u64)
                } else {
                    None
                });
                self.apply_call(call, index, false);
            }
        }
        if let Some(fc) = delta.get("function_call").filter(|f| f.is_object()) {
            let wrapped = serde_json::json!({ "function": fc });
            self.apply_call(&wrapped, None, true);
        }
        match delta.get("content").and_then(Value::as_str) {
            Some(text) if !text.is_empty() => {
                self.content.push_str(text);
                Ok(Some(text.to_string()))
            }
            _ => Ok(None),
        }
    }

    fn slot_for(&mut self, index: Option<u64>, id: Option<&str>, legacy: bool) -> usize {
        if legacy {
            if let Some(i) = self.calls.iter().position(|c| c.legacy) {
                return i;
            }
            return self.push(PartialCall {
                legacy: true,
                ..PartialCall::default()
            });
        }
        if let Some(id) = id {
            if let Some(i) = self.calls.iter().position(|c| c.id.as_deref() == Some(id)) {
                return i;
            }
        }
        let by_index = match index {
            Some(ix) => self
                .calls
                .iter()
                .rposition(|c| !c.legacy && c.index == Some(ix)),
            // No index: continue the latest call unless a new id starts one.
            None => self.calls.iter().rposition(|c| !c.legacy),
        };
        match by_index {
            // Same index but a different id: a server that reuses index 0
            // for parallel calls. Start a new call.
            Some(i) if id.is_some() && self.calls[i].id.is_some() => self.push(PartialCall {
                index,
                ..PartialCall::default()
            }),
            Some(i) => i,
            None => self.push(PartialCall {
                index: index.or(Some(0)),
                ..PartialCall::default()
            }),
        }
    }

    fn push(&mut self, call: PartialCall) -> usize {
        self.calls.push(call);
        self.calls.len() - 1
    }

    fn apply_call(&mut self, call: &Value, index: Option<u64>, legacy: bool) {
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let slot = self.slot_for(index, id, legacy);
        let entry = &mut self.calls[slot];
        if entry.id.is_none() {
            entry.id = id.map(str::to_string);
        }
        let Some(function) = call.get("function").filter(|f| f.is_object()) else {
            return;
        };
        if let Some(name) = function.get("name").and_then(Value::as_str) {
            if entry.name.is_empty() || name.starts_with(entry.name.as_str()) {
                // First sight, a repeat, or a cumulative name: keep the longest.
                if name.len() >= entry.name.len() {
                    entry.name = name.to_string();
                }
            } else if !entry.name.ends_with(name) {
                entry.name.push_str(name);
            }
        }
        let before = entry.arguments.len();
        match function.get("arguments") {
            Some(Value::String(piece)) => entry.arguments.push_str(piece),
            // Some servers send the arguments as a JSON object.
            Some(obj @ Value::Object(_)) if entry.arguments.is_empty() => {
                entry.arguments = obj.to_string();
            }
            _ => {}
        }
        let delta = CallDelta {
            index: slot,
            id: entry.id.clone(),
            name: entry.name.clone(),
            arguments: entry.arguments[before..].to_string(),
        };
        self.deltas.push(delta);
    }

    /// Ends the stream and returns the assembled reply.
    ///
    /// Tool calls without an id get a generated `call_<n>`; empty arguments
    /// become `{}`. Fails when nothing arrived, when the stream stopped
    /// without `[DONE]` or a finish reason, or when a call has no name.
    pub fn finish(self) -> Result<AssistantReply, StreamError> {
        if self.chunks == 0 {
            return Err(if self.done {
                StreamError::Malformed("[DONE] without any chunk".into())
            } else {
                StreamError::Empty
            });
        }
        if !self.done && self.finish_reason.is_none() {
            return Err(StreamError::Truncated);
        }
        self.into_reply()
    }

    fn into_reply(self) -> Result<AssistantReply, StreamError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (n, call) in self.calls.into_iter().enumerate() {
            if call.name.trim().is_empty() {
                return Err(StreamError::Malformed(format!(
                    "tool call #{n} has no function name"
                )));
            }
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_string()
            } else {
                call.arguments
            };
            tool_calls.push(ToolCall {
                id: call.id.unwrap_or_else(generated_id),
                kind: "function".into(),
                function: FunctionCall {
                    name: call.name,
                    arguments,
                },
            });
        }
        Ok(AssistantReply {
            content: self.content,
            tool_calls,
            finish_reason: self.finish_reason,
            usage: self.usage,
        })
    }
}

/// Parses a whole non-streamed `chat.completion` body with the same
/// tolerance as the stream assembler.
pub fn parse_completion(body: &str) -> Result<AssistantReply, StreamError> {
    if body.trim().is_empty() {
        return Err(StreamError::Empty);
    }
    let value: Value = serde_json::from_str(body)
        .map_err(|e| StreamError::Malformed(format!("{e}: {}", snippet(body))))?;
    let mut asm = StreamAssembler::new();
    asm.feed_value(&value, true)?;
    if value.get("choices").and_then(Value::as_array).is_none() {
        return Err(StreamError::Malformed(format!(
            "no choices in completion: {}",
            snippet(body)
        )));
    }
    asm.into_reply()
}

fn parse_usage(v: &Value) -> Option<Usage> {
    if !v.is_object() {
        return None;
    }
    let field = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        prompt_tokens: field("prompt_tokens"),
        completion_tokens: field("completion_tokens"),
        total_tokens: field("total_tokens"),
    })
}

impl StreamError {
    /// An error object found in a stream (`{"error": …}`): one carrying an
    /// HTTP status in `code` (or `status`) becomes [`StreamError::ServerStatus`].
    pub fn from_error_value(err: &Value) -> StreamError {
        let message = error_message(err);
        let status = ["code", "status"]
            .iter()
            .filter_map(|k| err.get(*k).and_then(Value::as_u64))
            .find(|c| (400..600).contains(c));
        match status {
            Some(status) => StreamError::ServerStatus {
                status: status as u16,
                message,
            },
            None => StreamError::Server(message),
        }
    }

    /// The data of an SSE `event: error`: JSON (`{"error": …}` or the error
    /// object itself) or plain text.
    pub fn from_error_event(data: &str) -> StreamError {
        match serde_json::from_str::<Value>(data) {
            Ok(v) if v.is_object() => {
                let err = v.get("error").filter(|e| !e.is_null()).unwrap_or(&v);
                StreamError::from_error_value(err)
            }
            _ => StreamError::Server(snippet(data)),
        }
    }
}

/// llama.cpp's `timings`: the prompt's size as `prompt_n + cache_n`.
fn timings_prompt(v: &Value) -> Option<u64> {
    let field = |k: &str| v.get(k).and_then(Value::as_u64);
    let evaluated = field("prompt_n")?;
    Some(evaluated + field("cache_n").unwrap_or(0))
}

fn error_message(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message").and_then(Value::as_str) {
            Some(m) => m.to_string(),
            None => snippet(&err.to_string()),
        },
        other => snippet(&other.to_string()),
    }
}

/// At most 200 characters of `s`, for error messages.
pub(crate) fn snippet(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
#[path = "sse_tests.rs"]
mod tests;
