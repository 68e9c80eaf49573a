//! Tests of the stream assembler: the quirks real servers have.
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
fn an_error_with_a_status_code_is_that_status() {
    let (_, r) = run(&[
        r#"{"choices":[{"delta":{"content":"x"}}]}"#,
        r#"{"error":{"code":500,"message":"slot failed","type":"server_error"}}"#,
    ]);
    assert_eq!(
        r,
        Err(StreamError::ServerStatus {
            status: 500,
            message: "slot failed".into()
        })
    );
    assert_eq!(
        StreamError::from_error_event(r#"{"code":503,"message":"busy"}"#),
        StreamError::ServerStatus {
            status: 503,
            message: "busy".into()
        }
    );
    assert_eq!(
        StreamError::from_error_event("plain"),
        StreamError::Server("plain".into())
    );
}

#[test]
fn llama_cpp_timings_count_the_cached_prompt() {
    let r = ok(&[
        r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}],"timings":{"prompt_n":10,"cache_n":90,"predicted_n":1}}"#,
        "[DONE]",
    ]);
    assert_eq!(r.usage.unwrap().prompt_tokens, 100);
    let r = ok(&[
        r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":1},"timings":{"prompt_n":2,"cache_n":38}}"#,
    ]);
    assert_eq!(r.usage.unwrap().prompt_tokens, 40);
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
