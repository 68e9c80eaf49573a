//! The fixes the real llama.cpp server showed (see `llama_server.rs`),
//! each proven fast and deterministically against the scripted server
//! playing that server's quirks: `vigil exec` end to end.

use super::llama_support;

use llama_support::{
    Dirs, assert_hopelessly_long, assert_refused_then_compacted, assert_sent_as_empty_object,
    events, exec, notices, of_type, report, session_id,
};
use serde_json::Value;
use vigil_scripted::{Scenario, ScriptedServer};

async fn serve(toml: &str) -> ScriptedServer {
    ScriptedServer::start(Scenario::from_toml_str(toml).expect("scenario"))
        .await
        .expect("server")
}

/// The chat requests the server got (not the summary ones).
fn chats(server: &ScriptedServer) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| !r.to_string().contains("vigil-compaction"))
        .collect()
}

const SUMMARY_RULE: &str = r#"
[[rule]]
when = { contains = "vigil-compaction" }
times = 0
text = "Summary: the operator sent notes."
"#;

#[tokio::test(flavor = "multi_thread")]
async fn unusable_arguments_are_answered_stored_as_an_object_and_resume_works() {
    let server = serve(
        r#"
        strict_tool_arguments = true
        [[rule]]
        when = { role = "user", contains = "clock" }
        [[rule.tool_calls]]
        name = "time"
        raw_arguments = 'UTC"}'
        [[rule]]
        when = { role = "tool" }
        text = "Noted: {last_tool}"
        [[rule]]
        when = { role = "user", contains = "again" }
        text = "Fine."
        "#,
    )
    .await;
    let dirs = Dirs::new("");
    let out = exec(&dirs, &server.base_url(), &["clock"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    let ev = events(&out);
    assert_eq!(
        of_type(&ev, "tool_call_requested")[0]["arguments"],
        "UTC\"}"
    );
    let requests = chats(&server);
    assert_sent_as_empty_object(&requests[1]);

    let out = exec(
        &dirs,
        &server.base_url(),
        &["--resume", &session_id(&ev), "again"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    assert_eq!(
        of_type(&events(&out), "assistant_message")[0]["text"],
        "Fine."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_and_max_tokens_are_asked_for_and_a_refusing_server_is_asked_without() {
    let server = serve("usage = true\nreject_stream_options = true").await;
    let dirs = Dirs::new("context_limit = 4096");
    let out = exec(&dirs, &server.base_url(), &["hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    let requests = chats(&server);
    assert_eq!(requests.len(), 2, "refused once, then asked without");
    assert_eq!(requests[0]["stream_options"]["include_usage"], true);
    assert!(requests[1].get("stream_options").is_none());
    assert!(requests.iter().all(|r| r["max_tokens"] == 40));
    // The reported usage (the server counts every byte of the request /
    // 4) calibrates the estimate upwards; without usage it stays chars / 4.
    let used = |out: &std::process::Output| {
        of_type(&events(out), "context_usage")[0]["used"]
            .as_u64()
            .unwrap()
    };
    let silent = serve("").await;
    let uncalibrated = exec(
        &Dirs::new("context_limit = 4096"),
        &silent.base_url(),
        &["hi"],
    )
    .await;
    assert!(
        used(&out) > used(&uncalibrated),
        "{} vs {}",
        used(&out),
        used(&uncalibrated)
    );
}

/// Two runs of the same session, each sending `chars` of notes.
async fn two_long_runs(
    server: &ScriptedServer,
    dirs: &Dirs,
    chars: usize,
) -> (std::process::Output, std::process::Output) {
    let notes = |tag: &str| format!("{tag}: {}", "lorem ipsum dolor ".repeat(chars / 18));
    let first = exec(dirs, &server.base_url(), &[&notes("first")]).await;
    assert_eq!(first.status.code(), Some(0), "{}", report(&first));
    let id = session_id(&events(&first));
    let second = exec(
        dirs,
        &server.base_url(),
        &["--resume", &id, &notes("second")],
    )
    .await;
    (first, second)
}

#[tokio::test(flavor = "multi_thread")]
async fn with_context_limit_unset_the_published_window_makes_it_compact_before_a_refusal() {
    let server = serve(&format!("n_ctx = 3000\nusage = true\n{SUMMARY_RULE}")).await;
    let dirs = Dirs::new("");
    let (first, second) = two_long_runs(&server, &dirs, 6000).await;
    assert!(
        notices(&events(&first))
            .iter()
            .any(|n| n.contains("context window: 3000 tokens")),
        "{}",
        report(&first)
    );
    assert_eq!(second.status.code(), Some(0), "{}", report(&second));
    let ev = events(&second);
    assert_eq!(of_type(&ev, "context_compacted")[0]["method"], "summary");
    assert!(
        !notices(&ev).iter().any(|n| n.contains("refused")),
        "compacted before the server refused: {}",
        report(&second)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_request_compacts_and_succeeds_and_a_hopeless_one_names_the_numbers() {
    let server = serve(&format!("n_ctx = 3000\n{SUMMARY_RULE}")).await;
    // vigil believes in a window far larger than the server's.
    let dirs = Dirs::new("context_limit = 100000");
    let (_, second) = two_long_runs(&server, &dirs, 6000).await;
    assert_eq!(second.status.code(), Some(0), "{}", report(&second));
    assert_refused_then_compacted(&second);

    let huge = "lorem ipsum ".repeat(2000);
    let out = exec(
        &Dirs::new("context_limit = 100000"),
        &server.base_url(),
        &[&huge],
    )
    .await;
    assert_hopelessly_long(&out, 3000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_length_cut_answer_exits_7_with_a_notice() {
    let server = serve(
        r#"
        [[rule]]
        text = "Once upon a time there"
        finish_reason = "length"
        "#,
    )
    .await;
    let out = exec(&Dirs::new(""), &server.base_url(), &["tell a story"]).await;
    assert_eq!(out.status.code(), Some(7), "{}", report(&out));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "turn_failed")[0]["kind"], "answer_cut");
    assert!(String::from_utf8_lossy(&out.stderr).contains("the answer was cut off"));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_event_in_a_200_stream_is_retried_like_its_status() {
    let server = serve(
        r#"
        [[rule]]
        text = "half an answer"
        stream_error = 503
        [[rule]]
        text = "a whole answer"
        "#,
    )
    .await;
    let out = exec(&Dirs::new(""), &server.base_url(), &["hi"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    let ev = events(&out);
    let retry = of_type(&ev, "retry_scheduled");
    assert!(
        retry[0]["error"].as_str().unwrap().contains("HTTP 503"),
        "{}",
        report(&out)
    );
    assert_eq!(of_type(&ev, "assistant_discarded").len(), 1);
    assert_eq!(
        of_type(&ev, "assistant_message")[0]["text"],
        "a whole answer"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn json_tags_a_block_without_its_close_tag_runs_and_is_no_cut_off() {
    let server = serve(
        r#"
        [[rule]]
        when = { role = "user", contains = "what time" }
        text = '<json>{"tool_name": "time", "tool_input": {}}'
        [[rule]]
        when = { role = "user", contains = "tool_output" }
        text = "<json> It is time."
        "#,
    )
    .await;
    let dirs = Dirs::new("tool_protocol = \"json-tags\"");
    let out = exec(&dirs, &server.base_url(), &["what time is it"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "tool_call_requested")[0]["name"], "time");
    assert!(
        !server
            .requests()
            .iter()
            .any(|r| r.to_string().contains("was cut off"))
    );
    // A reply that merely starts with the tag is shown as it streams.
    let shown: String = of_type(&ev, "assistant_delta")
        .iter()
        .filter_map(|d| d["text"].as_str())
        .collect();
    assert!(shown.contains("It is time."), "{shown:?}");
}
