//! The Anthropic Messages wire format, pure: mapping vigil's conversation and
//! tool definitions to a request body (system prompt apart, `tool_use` and
//! `tool_result` blocks, consecutive same-role messages merged), and
//! assembling a streamed answer from its event types (`message_start`,
//! `content_block_start`, `content_block_delta` with `text_delta` or
//! `input_json_delta`, `message_delta`, `message_stop`, `error`). No I/O,
//! never panics on what a server sends.

use serde_json::{Value, json};

use super::sse::{StreamError, snippet};
use super::types::{AssistantReply, CallDelta, ChatMessage, FunctionCall, Role, ToolCall, Usage};
use vigil_tools::ToolDefinition;

/// The request body for `POST {base}/messages`.
pub fn request_body(
    model: &str,
    max_tokens: u32,
    messages: &[ChatMessage],
    tools: &[ToolDefinition],
    stream: bool,
) -> Value {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut out: Vec<Value> = Vec::new();
    for m in messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = match m.role {
            Role::User => ("user", vec![text_block(&m.content)]),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content,
                })],
            ),
            _ => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() || m.tool_calls.is_empty() {
                    blocks.push(text_block(&m.content));
                }
                for c in &m.tool_calls {
                    let input = match serde_json::from_str::<Value>(&c.function.arguments) {
                        Ok(v @ Value::Object(_)) => v,
                        _ => json!({ "_raw": c.function.arguments }),
                    };
                    blocks.push(json!({
                        "type": "tool_use", "id": c.id, "name": c.function.name, "input": input,
                    }));
                }
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({ "role": role, "content": blocks })),
        }
    }
    if out.first().is_some_and(|m| m["role"] != "user") {
        out.insert(
            0,
            json!({ "role": "user", "content": [text_block("(continuing)")] }),
        );
    }
    let mut body = json!({
        "model": model,
        "max_tokens": max_tokens,
        "messages": out,
        "stream": stream,
    });
    if !system.is_empty() {
        body["system"] = Value::String(system.join("\n\n"));
    }
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| {
                json!({
                    "name": t.function.name,
                    "description": t.function.description,
                    "input_schema": t.function.parameters,
                })
            })
            .collect();
    }
    body
}

/// Anthropic refuses empty text blocks.
fn text_block(text: &str) -> Value {
    let text = if text.is_empty() { "(empty)" } else { text };
    json!({ "type": "text", "text": text })
}

#[derive(Debug, Default)]
struct Block {
    tool: Option<(String, String)>,
    json: String,
}

/// Assembles one streamed Messages answer.
#[derive(Debug, Default)]
pub struct MessagesAssembler {
    content: String,
    blocks: Vec<(u64, Block)>,
    stop_reason: Option<String>,
    usage: Usage,
    started: bool,
    done: bool,
    /// Tool-call pieces not yet taken ([`Self::take_call_deltas`]).
    deltas: Vec<CallDelta>,
}

impl MessagesAssembler {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The tool-call pieces fed since the last call, in order.
    pub fn take_call_deltas(&mut self) -> Vec<CallDelta> {
        std::mem::take(&mut self.deltas)
    }

    /// A piece of the tool call in block `at` (none for a text block).
    fn call_delta(&mut self, at: usize, piece: &str) {
        let calls_before = self.blocks[..at]
            .iter()
            .filter(|(_, b)| b.tool.is_some())
            .count();
        if let Some((id, name)) = &self.blocks[at].1.tool {
            self.deltas.push(CallDelta {
                index: calls_before,
                id: Some(id.clone()),
                name: name.clone(),
                arguments: piece.to_string(),
            });
        }
    }

    /// Feeds one SSE payload; returns the text delta to forward.
    pub fn feed(&mut self, data: &str) -> Result<Option<String>, StreamError> {
        let data = data.trim();
        if data.is_empty() || self.done {
            return Ok(None);
        }
        let v: Value = serde_json::from_str(data)
            .map_err(|e| StreamError::Malformed(format!("{e}: {}", snippet(data))))?;
        match v.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                self.started = true;
                self.read_usage(&v["message"]["usage"]);
            }
            "content_block_start" => {
                let index = v["index"].as_u64().unwrap_or(self.blocks.len() as u64);
                let b = &v["content_block"];
                let mut block = Block::default();
                if b["type"] == "tool_use" {
                    let id = b["id"].as_str().unwrap_or_default().to_string();
                    let name = b["name"].as_str().unwrap_or_default().to_string();
                    block.tool = Some((id, name));
                    self.blocks.push((index, block));
                    self.call_delta(self.blocks.len() - 1, "");
                    return Ok(None);
                } else if let Some(t) = b["text"].as_str().filter(|t| !t.is_empty()) {
                    self.content.push_str(t);
                    self.blocks.push((index, block));
                    return Ok(Some(t.to_string()));
                }
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let index = v["index"].as_u64();
                let d = &v["delta"];
                match d["type"].as_str().unwrap_or_default() {
                    "text_delta" => {
                        let t = d["text"].as_str().unwrap_or_default();
                        if !t.is_empty() {
                            self.content.push_str(t);
                            return Ok(Some(t.to_string()));
                        }
                    }
                    "input_json_delta" => {
                        let piece = d["partial_json"].as_str().unwrap_or_default();
                        let slot = self
                            .blocks
                            .iter()
                            .rposition(|(i, _)| index.is_none_or(|ix| *i == ix));
                        if let Some(at) = slot {
                            self.blocks[at].1.json.push_str(piece);
                            self.call_delta(at, piece);
                        }
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(r) = v["delta"]["stop_reason"].as_str() {
                    self.stop_reason = Some(finish_reason(r));
                }
                self.read_usage(&v["usage"]);
            }
            "message_stop" => self.done = true,
            "error" => return Err(StreamError::from_error_value(&v["error"])),
            _ => {}
        }
        Ok(None)
    }

    fn read_usage(&mut self, u: &Value) {
        if let Some(n) = prompt_tokens(u) {
            self.usage.prompt_tokens = n;
        }
        if let Some(n) = u["output_tokens"].as_u64() {
            self.usage.completion_tokens = n;
        }
        self.usage.total_tokens = self.usage.prompt_tokens + self.usage.completion_tokens;
    }

    /// The assembled reply; a stream without `message_stop` or a stop reason
    /// was cut.
    pub fn finish(self) -> Result<AssistantReply, StreamError> {
        if !self.started {
            return Err(StreamError::Empty);
        }
        if !self.done && self.stop_reason.is_none() {
            return Err(StreamError::Truncated);
        }
        let tool_calls = self
            .blocks
            .into_iter()
            .filter_map(|(_, b)| {
                let (id, name) = b.tool?;
                let arguments = if b.json.trim().is_empty() {
                    "{}".to_string()
                } else {
                    b.json
                };
                Some(ToolCall {
                    id,
                    kind: "function".into(),
                    function: FunctionCall { name, arguments },
                })
            })
            .collect();
        Ok(AssistantReply {
            content: self.content,
            tool_calls,
            finish_reason: self.stop_reason,
            usage: Some(self.usage),
        })
    }
}

/// The prompt's size in a usage object: the uncached input plus what was
/// read from and written to the prompt cache (Anthropic counts them apart;
/// llama.cpp reports its reused prefix as `cache_read_input_tokens`). None
/// when the object carries none of them.
fn prompt_tokens(u: &Value) -> Option<u64> {
    let fields = [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ];
    let counts: Vec<u64> = fields.iter().filter_map(|k| u[*k].as_u64()).collect();
    (!counts.is_empty()).then(|| counts.iter().sum())
}

/// A stop reason in the vocabulary the loop reads (OpenAI's): an answer cut
/// at `max_tokens` is `length`, whichever dialect said so.
fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "max_tokens" => "length".into(),
        other => other.into(),
    }
}

/// Parses a whole (non-streamed) Messages answer.
pub fn parse_message(body: &str) -> Result<AssistantReply, StreamError> {
    if body.trim().is_empty() {
        return Err(StreamError::Empty);
    }
    let v: Value = serde_json::from_str(body)
        .map_err(|e| StreamError::Malformed(format!("{e}: {}", snippet(body))))?;
    if v["type"] == "error" {
        let msg = v["error"]["message"].as_str().unwrap_or("unknown error");
        return Err(StreamError::Server(msg.to_string()));
    }
    let Some(blocks) = v["content"].as_array() else {
        return Err(StreamError::Malformed(format!(
            "no content in message: {}",
            snippet(body)
        )));
    };
    let mut content = String::new();
    let mut tool_calls = Vec::new();
    for b in blocks {
        match b["type"].as_str().unwrap_or_default() {
            "text" => content.push_str(b["text"].as_str().unwrap_or_default()),
            "tool_use" => tool_calls.push(ToolCall {
                id: b["id"].as_str().unwrap_or_default().to_string(),
                kind: "function".into(),
                function: FunctionCall {
                    name: b["name"].as_str().unwrap_or_default().to_string(),
                    arguments: b["input"].to_string(),
                },
            }),
            _ => {}
        }
    }
    let u = &v["usage"];
    let prompt = prompt_tokens(u).unwrap_or(0);
    let completion = u["output_tokens"].as_u64().unwrap_or(0);
    Ok(AssistantReply {
        content,
        tool_calls,
        finish_reason: v["stop_reason"].as_str().map(finish_reason),
        usage: Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_maps_system_tool_use_and_merged_tool_results() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "time".into(),
                arguments: r#"{"format":"iso"}"#.into(),
            },
        };
        let msgs = vec![
            ChatMessage::system("sys"),
            ChatMessage::user("hi"),
            ChatMessage::assistant("", vec![call("a"), call("b")]),
            ChatMessage::tool("a", "A"),
            ChatMessage::tool("b", "B"),
        ];
        let tools = vec![ToolDefinition::function(
            "time",
            "d",
            json!({"type":"object"}),
        )];
        let b = request_body("m", 100, &msgs, &tools, true);
        assert_eq!(b["system"], "sys");
        let m = b["messages"].as_array().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[1]["content"][0]["type"], "tool_use");
        assert_eq!(m[1]["content"][0]["input"]["format"], "iso");
        assert_eq!(m[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(m[2]["content"][1]["tool_use_id"], "b");
        assert_eq!(b["tools"][0]["input_schema"]["type"], "object");
    }

    #[test]
    fn stream_assembles_text_and_tool_use() {
        let mut a = MessagesAssembler::new();
        let events = [
            r#"{"type":"message_start","message":{"usage":{"input_tokens":12}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"there"}}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"tu1","name":"time","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"format\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"iso\"}"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}"#,
            r#"{"type":"message_stop"}"#,
        ];
        let mut text = String::new();
        for e in events {
            if let Some(t) = a.feed(e).unwrap() {
                text.push_str(&t);
            }
        }
        assert_eq!(text, "Hi there");
        let pieces: Vec<String> = a
            .take_call_deltas()
            .into_iter()
            .map(|d| d.arguments)
            .collect();
        assert_eq!(pieces, ["", "{\"format\":", "\"iso\"}"]);
        let r = a.finish().unwrap();
        assert_eq!(r.tool_calls[0].id, "tu1");
        assert_eq!(r.tool_calls[0].function.arguments, r#"{"format":"iso"}"#);
        assert_eq!(r.usage.unwrap().prompt_tokens, 12);
    }

    #[test]
    fn a_cut_answer_is_length_and_cached_input_counts() {
        let mut a = MessagesAssembler::new();
        for e in [
            r#"{"type":"message_start","message":{"usage":{"cache_read_input_tokens":900,"cache_creation_input_tokens":40,"input_tokens":6,"output_tokens":0}}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Once"}}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":5}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            a.feed(e).unwrap();
        }
        let r = a.finish().unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        let usage = r.usage.unwrap();
        assert_eq!((usage.prompt_tokens, usage.completion_tokens), (946, 5));
        let whole = r#"{"content":[{"type":"text","text":"x"}],"stop_reason":"max_tokens","usage":{"cache_read_input_tokens":11,"input_tokens":1,"output_tokens":5}}"#;
        let r = parse_message(whole).unwrap();
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(r.usage.unwrap().prompt_tokens, 12);
    }

    #[test]
    fn cut_and_error_streams() {
        let mut a = MessagesAssembler::new();
        a.feed(r#"{"type":"message_start","message":{}}"#).unwrap();
        assert_eq!(a.finish(), Err(StreamError::Truncated));
        let mut a = MessagesAssembler::new();
        let e = a.feed(r#"{"type":"error","error":{"type":"overloaded_error","message":"busy"}}"#);
        assert_eq!(e, Err(StreamError::Server("busy".into())));
        assert_eq!(MessagesAssembler::new().finish(), Err(StreamError::Empty));
    }
}
