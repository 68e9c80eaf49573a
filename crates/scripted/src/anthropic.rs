//! The scripted server's Anthropic Messages dialect: reading a Messages
//! request as the chat shape the scenario rules match (tool results become
//! `tool` messages), and writing a [`Planned`] reply as a Messages answer or
//! as its SSE events. Pure functions: no I/O, no timing.

use serde_json::{Value, json};

use super::chunks::{Meta, split_chars, split_text};
use super::scenario::Planned;

/// The request in the chat shape: `{"messages":[{"role","content"}]}`, with
/// `tool_result` blocks as `tool` messages and the system prompt first.
pub fn as_chat_request(body: &Value) -> Value {
    let mut out = Vec::new();
    if let Some(system) = body.get("system").and_then(Value::as_str) {
        out.push(json!({ "role": "system", "content": system }));
    }
    for m in body
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("user");
        match m.get("content") {
            Some(Value::String(text)) => out.push(json!({ "role": role, "content": text })),
            Some(Value::Array(blocks)) => {
                let mut text = String::new();
                for b in blocks {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => text.push_str(b["text"].as_str().unwrap_or_default()),
                        Some("tool_result") => out.push(json!({
                            "role": "tool",
                            "tool_call_id": b["tool_use_id"],
                            "content": result_text(&b["content"]),
                        })),
                        _ => {}
                    }
                }
                if !text.is_empty() || role == "assistant" {
                    out.push(json!({ "role": role, "content": text }));
                }
            }
            _ => {}
        }
    }
    json!({ "model": body["model"], "messages": out })
}

fn result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn stop_reason(plan: &Planned) -> &'static str {
    if plan.tool_calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn input(args: &str) -> Value {
    serde_json::from_str(args).unwrap_or_else(|_| json!({}))
}

/// A whole Messages answer.
pub fn message(meta: &Meta, plan: &Planned, ids: &[String], input_tokens: u64) -> Value {
    let mut content = Vec::new();
    if !plan.text.is_empty() {
        content.push(json!({ "type": "text", "text": plan.text }));
    }
    for ((name, args), id) in plan.tool_calls.iter().zip(ids) {
        content.push(json!({ "type": "tool_use", "id": id, "name": name, "input": input(args) }));
    }
    json!({
        "id": meta.id, "type": "message", "role": "assistant", "model": meta.model,
        "content": content, "stop_reason": stop_reason(plan), "stop_sequence": null,
        "usage": { "input_tokens": input_tokens, "output_tokens": (plan.text.len() as u64).div_ceil(4) },
    })
}

/// The `(event name, data)` pairs of a streamed Messages answer.
pub fn stream_events(
    meta: &Meta,
    plan: &Planned,
    ids: &[String],
    input_tokens: u64,
) -> Vec<(&'static str, String)> {
    let mut out = vec![(
        "message_start",
        json!({ "type": "message_start", "message": {
            "id": meta.id, "type": "message", "role": "assistant", "model": meta.model,
            "content": [], "stop_reason": null,
            "usage": { "input_tokens": input_tokens, "output_tokens": 1 },
        }})
        .to_string(),
    )];
    let mut index = 0;
    if !plan.text.is_empty() {
        out.push((
            "content_block_start",
            json!({ "type": "content_block_start", "index": index,
                    "content_block": { "type": "text", "text": "" } })
            .to_string(),
        ));
        for piece in split_text(&plan.text) {
            out.push((
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index,
                        "delta": { "type": "text_delta", "text": piece } })
                .to_string(),
            ));
        }
        out.push((
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }).to_string(),
        ));
        index += 1;
    }
    for ((name, args), id) in plan.tool_calls.iter().zip(ids) {
        out.push((
            "content_block_start",
            json!({ "type": "content_block_start", "index": index,
                    "content_block": { "type": "tool_use", "id": id, "name": name, "input": {} } })
            .to_string(),
        ));
        for piece in split_chars(args, 12) {
            out.push((
                "content_block_delta",
                json!({ "type": "content_block_delta", "index": index,
                        "delta": { "type": "input_json_delta", "partial_json": piece } })
                .to_string(),
            ));
        }
        out.push((
            "content_block_stop",
            json!({ "type": "content_block_stop", "index": index }).to_string(),
        ));
        index += 1;
    }
    out.push((
        "message_delta",
        json!({ "type": "message_delta",
                "delta": { "stop_reason": stop_reason(plan), "stop_sequence": null },
                "usage": { "output_tokens": (plan.text.len() as u64).div_ceil(4) } })
        .to_string(),
    ));
    out.push((
        "message_stop",
        json!({ "type": "message_stop" }).to_string(),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_results_become_tool_messages() {
        let body = json!({
            "model": "m", "system": "s",
            "messages": [
                { "role": "user", "content": "hi" },
                { "role": "assistant", "content": [{ "type": "tool_use", "id": "t1", "name": "time", "input": {} }] },
                { "role": "user", "content": [{ "type": "tool_result", "tool_use_id": "t1", "content": "12:00" }] },
            ],
        });
        let chat = as_chat_request(&body);
        let msgs = chat["messages"].as_array().unwrap();
        assert_eq!(msgs[0]["role"], "system");
        let last = msgs.last().unwrap();
        assert_eq!(last["role"], "tool");
        assert_eq!(last["content"], "12:00");
    }
}
