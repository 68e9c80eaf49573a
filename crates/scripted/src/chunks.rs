//! The JSON the scripted model sends: `chat.completion.chunk` payloads for a
//! stream and a `chat.completion` for a plain answer, built from a
//! [`Planned`] reply. Pure functions: no I/O, no timing.

use serde_json::{Value, json};

use super::scenario::Planned;

/// Identity of one completion: shared by all its chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    pub id: String,
    pub model: String,
    pub created: u64,
}

/// Invented token counts for the optional usage report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeUsage {
    pub prompt: u64,
    pub completion: u64,
}

impl FakeUsage {
    /// Roughly four characters per token.
    pub fn estimate(request_len: usize, plan: &Planned) -> FakeUsage {
        let out: usize = plan.text.len()
            + plan
                .tool_calls
                .iter()
                .map(|(n, a)| n.len() + a.len())
                .sum::<usize>();
        FakeUsage {
            prompt: (request_len as u64).div_ceil(4),
            completion: (out as u64).div_ceil(4),
        }
    }

    fn json(self) -> Value {
        json!({
            "prompt_tokens": self.prompt,
            "completion_tokens": self.completion,
            "total_tokens": self.prompt + self.completion,
        })
    }
}

fn finish_reason(plan: &Planned) -> &str {
    if let Some(reason) = &plan.finish_reason {
        reason
    } else if plan.tool_calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

fn chunk(meta: &Meta, delta: Value, finish: Option<&str>) -> String {
    json!({
        "id": meta.id,
        "object": "chat.completion.chunk",
        "created": meta.created,
        "model": meta.model,
        "choices": [{ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish }],
    })
    .to_string()
}

/// Splits text into small deltas of about two words each (whitespace kept).
pub fn split_text(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut words = 0;
    for piece in text.split_inclusive(char::is_whitespace) {
        cur.push_str(piece);
        if !piece.trim().is_empty() {
            words += 1;
        }
        if words >= 2 && piece.ends_with(char::is_whitespace) {
            out.push(std::mem::take(&mut cur));
            words = 0;
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Splits a string into pieces of at most `n` characters.
pub fn split_chars(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    chars.chunks(n.max(1)).map(|c| c.iter().collect()).collect()
}

/// The `data:` payloads of a streamed answer, without the final `[DONE]`:
/// role, text deltas, each tool call (header chunk with id/type/name and
/// empty arguments, then argument pieces), the finish chunk, and a usage
/// chunk (empty `choices`) when `usage` is set.
pub fn stream_payloads(
    meta: &Meta,
    plan: &Planned,
    call_ids: &[String],
    usage: Option<FakeUsage>,
) -> Vec<String> {
    let mut out = vec![chunk(
        meta,
        json!({ "role": "assistant", "content": "" }),
        None,
    )];
    for piece in split_text(&plan.text) {
        out.push(chunk(meta, json!({ "content": piece }), None));
    }
    for (index, ((name, args), id)) in plan.tool_calls.iter().zip(call_ids).enumerate() {
        out.push(chunk(
            meta,
            json!({ "tool_calls": [{
                "index": index, "id": id, "type": "function",
                "function": { "name": name, "arguments": "" },
            }]}),
            None,
        ));
        for piece in split_chars(args, 12) {
            out.push(chunk(
                meta,
                json!({ "tool_calls": [{ "index": index, "function": { "arguments": piece } }] }),
                None,
            ));
        }
    }
    out.push(chunk(meta, json!({}), Some(finish_reason(plan))));
    if let Some(u) = usage {
        out.push(
            json!({
                "id": meta.id,
                "object": "chat.completion.chunk",
                "created": meta.created,
                "model": meta.model,
                "choices": [],
                "usage": u.json(),
            })
            .to_string(),
        );
    }
    out
}

/// A whole non-streamed `chat.completion`.
pub fn completion(
    meta: &Meta,
    plan: &Planned,
    call_ids: &[String],
    usage: Option<FakeUsage>,
) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if plan.text.is_empty() { Value::Null } else { Value::String(plan.text.clone()) },
    });
    if !plan.tool_calls.is_empty() {
        message["tool_calls"] = plan
            .tool_calls
            .iter()
            .zip(call_ids)
            .map(|((name, args), id)| {
                json!({ "id": id, "type": "function", "function": { "name": name, "arguments": args } })
            })
            .collect();
    }
    let mut body = json!({
        "id": meta.id,
        "object": "chat.completion",
        "created": meta.created,
        "model": meta.model,
        "choices": [{ "index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(plan) }],
    });
    if let Some(u) = usage {
        body["usage"] = u.json();
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str, calls: &[(&str, &str)]) -> Planned {
        Planned {
            text: text.into(),
            tool_calls: calls
                .iter()
                .map(|(n, a)| (n.to_string(), a.to_string()))
                .collect(),
            chunk_delay_ms: 0,
            status: None,
            error_message: None,
            retry_after: None,
            retry_after_date: None,
            empty_body: false,
            cut_after_chunks: None,
            finish_reason: None,
            stream_error: None,
        }
    }

    fn meta() -> Meta {
        Meta {
            id: "chatcmpl-1".into(),
            model: "m".into(),
            created: 1,
        }
    }

    #[test]
    fn split_text_keeps_everything_in_small_pieces() {
        let t = "one two three four five\nsix";
        let parts = split_text(t);
        assert!(parts.len() >= 3);
        assert_eq!(parts.concat(), t);
        assert!(split_text("").is_empty());
        assert_eq!(split_chars("héllo", 2), vec!["hé", "ll", "o"]);
    }

    #[test]
    fn stream_has_role_text_calls_finish_and_usage() {
        let p = plan(
            "a b c d",
            &[("run_shell", r#"{"command":"uname -a; df -h"}"#)],
        );
        let ids = vec!["call_7".to_string()];
        let payloads = stream_payloads(
            &meta(),
            &p,
            &ids,
            Some(FakeUsage {
                prompt: 2,
                completion: 3,
            }),
        );
        let v: Vec<Value> = payloads
            .iter()
            .map(|s| serde_json::from_str(s).unwrap())
            .collect();
        assert_eq!(v[0]["choices"][0]["delta"]["role"], "assistant");
        let header = v
            .iter()
            .find(|c| c["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_7")
            .unwrap();
        assert_eq!(
            header["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"],
            ""
        );
        let args: String = v
            .iter()
            .filter_map(|c| {
                c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"].as_str()
            })
            .collect();
        assert_eq!(args, r#"{"command":"uname -a; df -h"}"#);
        let n = v.len();
        assert_eq!(v[n - 2]["choices"][0]["finish_reason"], "tool_calls");
        assert_eq!(v[n - 1]["usage"]["total_tokens"], 5);
    }

    #[test]
    fn completion_uses_null_content_with_calls() {
        let p = plan("", &[("f", "{}")]);
        let c = completion(&meta(), &p, &["call_1".into()], None);
        assert!(c["choices"][0]["message"]["content"].is_null());
        assert_eq!(c["choices"][0]["message"]["tool_calls"][0]["id"], "call_1");
        assert!(c.get("usage").is_none());
        let c = completion(&meta(), &plan("hi", &[]), &[], None);
        assert_eq!(c["choices"][0]["finish_reason"], "stop");
        assert_eq!(c["choices"][0]["message"]["content"], "hi");
    }
}
