//! Refusals the scripted server plays to stand in for real servers' quirks
//! (each off unless the scenario asks): llama.cpp's context size
//! (`exceed_context_size_error` with `n_prompt_tokens` and `n_ctx`), its
//! HTTP 500 for a history holding tool-call arguments that are not JSON,
//! and servers that refuse `stream_options`. The error bodies are the ones
//! those servers send.
//!
//! Pure: it looks at a request and says whether and how to refuse it; it
//! never does I/O.

use serde_json::{Value, json};

use super::scenario::Scenario;

/// A refusal: the HTTP status and the JSON error body.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub status: u16,
    pub body: Value,
}

/// The prompt size the scripted server counts: request bytes / 4.
pub fn prompt_tokens(body_len: usize) -> u64 {
    (body_len as u64).div_ceil(4)
}

/// How the scenario refuses this chat request, if it does.
pub fn refusal(scenario: &Scenario, request: &Value, body_len: usize) -> Option<Refusal> {
    if scenario.reject_stream_options && request.get("stream_options").is_some() {
        return Some(Refusal {
            status: 400,
            body: json!({"error": {"code": 400, "type": "invalid_request_error",
                "message": "Unrecognized request argument supplied: stream_options"}}),
        });
    }
    if scenario.strict_tool_arguments
        && let Some(bad) = unparsable_arguments(request)
    {
        return Some(Refusal {
            status: 500,
            body: json!({"error": {"code": 500, "type": "server_error",
                "message": format!("Failed to parse tool call arguments as JSON: {bad}")}}),
        });
    }
    let n_ctx = scenario.n_ctx?;
    let asked = prompt_tokens(body_len);
    (asked > n_ctx).then(|| Refusal {
        status: 400,
        body: json!({"error": {"code": 400, "type": "exceed_context_size_error",
            "message": format!("request ({asked} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"),
            "n_prompt_tokens": asked, "n_ctx": n_ctx}}),
    })
}

/// The first tool-call arguments in the history that are not JSON.
fn unparsable_arguments(request: &Value) -> Option<String> {
    let messages = request.get("messages")?.as_array()?;
    messages
        .iter()
        .filter_map(|m| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c.pointer("/function/arguments").and_then(Value::as_str))
        .find(|a| !a.trim().is_empty() && serde_json::from_str::<Value>(a).is_err())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::from_toml_str(text).unwrap()
    }

    #[test]
    fn each_quirk_refuses_only_when_asked() {
        let plain = scenario("");
        let req = json!({"messages": [{"role": "assistant", "content": "",
            "tool_calls": [{"function": {"name": "t", "arguments": "UTC\"}"}}]}],
            "stream_options": {"include_usage": true}});
        assert_eq!(refusal(&plain, &req, 1_000_000), None);
        let strict = scenario("strict_tool_arguments = true");
        assert_eq!(refusal(&strict, &req, 10).unwrap().status, 500);
        let picky = scenario("reject_stream_options = true");
        assert_eq!(refusal(&picky, &req, 10).unwrap().status, 400);
        let small = scenario("n_ctx = 100");
        assert_eq!(refusal(&small, &json!({}), 400), None);
        let r = refusal(&small, &json!({}), 401).unwrap();
        assert_eq!(r.body["error"]["n_prompt_tokens"], 101);
        assert_eq!(r.body["error"]["type"], "exceed_context_size_error");
    }
}
