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

use super::types::{AssistantReply, FunctionCall, ToolCall, Usage};

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
}

impl StreamAssembler {
    pub fn new() -> Self {
        Self::default()
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
            return Err(StreamError::Server(error_message(err)));
        }
        if let Some(usage) = value.get("usage").and_then(parse_usage) {
            self.usage = Some(usage);
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
        match function.get("arguments") {
            Some(Value::String(piece)) => entry.arguments.push_str(piece),
            // Some servers send the arguments as a JSON object.
            Some(obj @ Value::Object(_)) if entry.arguments.is_empty() => {
                entry.arguments = obj.to_string();
            }
            _ => {}
        }
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
mod tests {
    use super::*;

    fn run(chunks: &[&str]) -> (Vec<String>, Result<AssistantReply, StreamError>) {
        let mut asm = StreamAssembler::new();
        let mut texts = Vec::new();
        for c in chunks {
            match asm.feed(c) {
                Ok(Some(t)) => texts.push(t),
                Ok(None) => {}
                Err(e) => return (texts, Err(e)),
            }
        }
        (texts, asm.finish())
    }

    fn ok(chunks: &[&str]) -> AssistantReply {
        run(chunks).1.expect("assembles")
    }

    #[test]
    fn text_deltas_are_forwarded_in_order() {
        let (texts, reply) = run(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(texts, vec!["Hel", "lo"]);
        let reply = reply.unwrap();
        assert_eq!(reply.content, "Hello");
        assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
        assert!(reply.tool_calls.is_empty());
    }

    #[test]
    fn tool_call_assembled_by_index_with_argument_pieces() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"run_shell","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"comm"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].id, "a");
        assert_eq!(r.tool_calls[0].kind, "function");
        assert_eq!(r.tool_calls[0].function.name, "run_shell");
        assert_eq!(r.tool_calls[0].function.arguments, r#"{"command":"ls"}"#);
    }

    #[test]
    fn repeated_id_name_type_do_not_duplicate_the_name() {
        let piece = |a: &str| {
            format!(
                r#"{{"choices":[{{"delta":{{"tool_calls":[{{"index":0,"id":"x","type":"function","function":{{"name":"read_file","arguments":{}}}}}]}}}}]}}"#,
                serde_json::to_string(a).unwrap()
            )
        };
        let (a, b, c) = (piece("{\"pa"), piece("th\":1}"), piece(""));
        let r = ok(&[&a, &b, &c, "[DONE]"]);
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].function.name, "read_file");
        assert_eq!(r.tool_calls[0].function.arguments, r#"{"path":1}"#);
    }

    #[test]
    fn explicit_nulls_everywhere_are_tolerated() {
        let r = ok(&[
            r#"{"id":null,"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":null,"function_call":null},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[{"index":0,"id":null,"type":null,"function":{"name":"t","arguments":null}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":null,"function":{"name":null,"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":null},"finish_reason":"tool_calls"}]}"#,
            "[DONE]",
        ]);
        assert_eq!(r.content, "");
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].function.name, "t");
        assert_eq!(r.tool_calls[0].function.arguments, "{}");
        assert!(r.tool_calls[0].id.starts_with("call_"), "generated id");
    }

    #[test]
    fn missing_index_continues_latest_call_or_splits_by_id() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"one","function":{"name":"a","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"two","function":{"name":"b","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].id, "one");
        assert_eq!(r.tool_calls[0].function.arguments, r#"{"x":1}"#);
        assert_eq!(r.tool_calls[1].id, "two");
        assert_eq!(r.tool_calls[1].function.name, "b");
    }

    #[test]
    fn parallel_calls_by_index_and_reused_index_with_new_id() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}},{"index":1,"id":"b","function":{"name":"g","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"g\":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"f\":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"h","arguments":"{}"}}]}}]}"#,
            "[DONE]",
        ]);
        let names: Vec<_> = r
            .tool_calls
            .iter()
            .map(|c| c.function.name.as_str())
            .collect();
        assert_eq!(names, vec!["f", "g", "h"]);
        assert_eq!(r.tool_calls[0].function.arguments, r#"{"f":1}"#);
        assert_eq!(r.tool_calls[1].function.arguments, r#"{"g":1}"#);
        assert_eq!(r.tool_calls[2].id, "c");
    }

    #[test]
    fn name_sent_in_fragments_is_joined() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"run_"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"shell"}}]}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(r.tool_calls[0].function.name, "run_shell");
    }

    #[test]
    fn legacy_function_call_field() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"function_call":{"name":"get_time","arguments":""}}}]}"#,
            r#"{"choices":[{"delta":{"function_call":{"arguments":"{\"tz\":"}}}]}"#,
            r#"{"choices":[{"delta":{"function_call":{"arguments":"\"UTC\"}"}}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"function_call"}]}"#,
        ]);
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.tool_calls[0].function.name, "get_time");
        assert_eq!(r.tool_calls[0].function.arguments, r#"{"tz":"UTC"}"#);
        assert!(r.tool_calls[0].id.starts_with("call_"));
    }

    #[test]
    fn arguments_sent_as_object() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"q","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(r.tool_calls[0].function.arguments, r#"{"a":1}"#);
    }

    #[test]
    fn usage_in_final_chunk_with_empty_choices() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#,
            "[DONE]",
        ]);
        assert_eq!(r.content, "hi");
        let u = r.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (3, 1, 4)
        );
    }

    #[test]
    fn usage_with_null_fields_and_no_choices_key() {
        let r = ok(&[
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
            r#"{"usage":{"prompt_tokens":null,"completion_tokens":2}}"#,
        ]);
        assert_eq!(r.usage.unwrap().completion_tokens, 2);
    }

    #[test]
    fn no_done_is_fine_when_finish_reason_came() {
        let r = ok(&[r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#]);
        assert_eq!(r.content, "x");
    }

    #[test]
    fn stream_cut_without_done_or_finish_reason_is_truncated() {
        let (_, r) = run(&[r#"{"choices":[{"delta":{"content":"x"}}]}"#]);
        assert_eq!(r, Err(StreamError::Truncated));
    }

    #[test]
    fn nothing_at_all_is_empty() {
        assert_eq!(run(&[]).1, Err(StreamError::Empty));
        assert!(matches!(run(&["[DONE]"]).1, Err(StreamError::Malformed(_))));
    }

    #[test]
    fn error_object_in_stream_is_an_error() {
        let (_, r) = run(&[
            r#"{"choices":[{"delta":{"content":"x"}}]}"#,
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
        ]);
        assert_eq!(r, Err(StreamError::Server("overloaded".into())));
        let (_, r) = run(&[r#"{"error":"plain string"}"#]);
        assert_eq!(r, Err(StreamError::Server("plain string".into())));
    }

    #[test]
    fn garbage_payload_is_malformed() {
        assert!(matches!(
            run(&["not json"]).1,
            Err(StreamError::Malformed(_))
        ));
        assert!(matches!(run(&["[1,2]"]).1, Err(StreamError::Malformed(_))));
    }

    #[test]
    fn payloads_after_done_and_blank_payloads_are_ignored() {
        let r = ok(&[
            "",
            r#"{"choices":[{"delta":{"content":"a"}}]}"#,
            "[DONE]",
            "garbage after done",
        ]);
        assert_eq!(r.content, "a");
    }

    #[test]
    fn tool_call_without_name_is_malformed() {
        let (_, r) = run(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
            "[DONE]",
        ]);
        assert!(matches!(r, Err(StreamError::Malformed(m)) if m.contains("no function name")));
    }

    #[test]
    fn only_choice_zero_is_used() {
        let r = ok(&[
            r#"{"choices":[{"index":1,"delta":{"content":"B"}},{"index":0,"delta":{"content":"A"}}]}"#,
            "[DONE]",
        ]);
        assert_eq!(r.content, "A");
    }

    #[test]
    fn non_streamed_completion_parses_calls_by_position() {
        let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"g","arguments":"{\"k\":2}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#;
        let r = parse_completion(body).unwrap();
        assert_eq!(r.content, "");
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[1].function.arguments, r#"{"k":2}"#);
        assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(r.usage.unwrap().total_tokens, 3);
    }

    #[test]
    fn non_streamed_errors() {
        assert_eq!(parse_completion("  "), Err(StreamError::Empty));
        assert!(matches!(
            parse_completion("{}"),
            Err(StreamError::Malformed(_))
        ));
        assert!(matches!(
            parse_completion(r#"{"error":{"message":"bad key"}}"#),
            Err(StreamError::Server(m)) if m == "bad key"
        ));
    }

    #[test]
    fn snippet_cuts_long_text_on_char_boundary() {
        let long = "é".repeat(500);
        let s = snippet(&long);
        assert_eq!(s.chars().count(), 201);
    }
}
