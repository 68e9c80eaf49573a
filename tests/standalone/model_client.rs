//! The real `ModelClient` against the real `ScriptedServer` over loopback.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vigil::agent::model::types::{ChatMessage, ToolCall};
use vigil::agent::model::{ModelClient, ModelClientConfig, ModelError};
use vigil::tools::ToolDefinition;
use vigil_scripted::{Scenario, ScriptedServer};

async fn serve(toml: &str) -> ScriptedServer {
    let scenario = Scenario::from_toml_str(toml).expect("scenario");
    ScriptedServer::start(scenario)
        .await
        .expect("server starts")
}

fn client(url: &str) -> ModelClient {
    let mut cfg = ModelClientConfig::new(url, "test-model");
    cfg.request_timeout = Duration::from_secs(5);
    cfg.connect_timeout = Duration::from_secs(2);
    ModelClient::new(cfg).expect("client")
}

fn shell_tool() -> ToolDefinition {
    ToolDefinition::function(
        "run_shell",
        "Run a shell command",
        json!({"type":"object","properties":{"command":{"type":"string"}}}),
    )
}

#[tokio::test]
async fn streamed_text_arrives_incrementally_in_order() {
    let server = serve(
        r#"
        [[rule]]
        when = { role = "user" }
        chunk_delay_ms = 5
        text = "The quick brown fox jumps over the lazy dog. You said: {last_user}"
        "#,
    )
    .await;
    let c = client(&server.base_url());
    let mut pieces: Vec<(String, Instant)> = Vec::new();
    let reply = c
        .complete(&[ChatMessage::user("hi there")], &[], &mut |t: &str| {
            pieces.push((t.to_string(), Instant::now()))
        })
        .await
        .expect("reply");
    assert!(pieces.len() > 3, "several deltas, got {}", pieces.len());
    let joined: String = pieces.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(joined, reply.content);
    assert_eq!(
        reply.content,
        "The quick brown fox jumps over the lazy dog. You said: hi there"
    );
    // Incremental: the deltas did not all arrive at the same instant.
    let spread = pieces.last().unwrap().1 - pieces[0].1;
    assert!(spread >= Duration::from_millis(10), "spread {spread:?}");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert!(reply.tool_calls.is_empty());
}

#[tokio::test]
async fn tool_call_is_assembled_and_tool_result_is_recorded() {
    let server = serve(
        r#"
        usage = true
        [[rule]]
        when = { role = "user" }
        text = "Let me look."
        [[rule.tool_calls]]
        name = "run_shell"
        arguments = { command = "uname -a; df -h / | tail -1", risk = "low", mutation = false }

        [[rule]]
        when = { role = "tool", contains = "Linux" }
        text = "It runs {last_tool}."
        "#,
    )
    .await;
    let c = client(&server.base_url());
    let tools = vec![shell_tool()];
    let mut user = vec![ChatMessage::user("what box is this?")];
    let reply = c
        .complete(&user, &tools, &mut |_: &str| {})
        .await
        .expect("first round");
    assert_eq!(reply.content, "Let me look.");
    assert_eq!(reply.finish_reason.as_deref(), Some("tool_calls"));
    assert!(reply.usage.is_some_and(|u| u.total_tokens > 0));
    let [call]: [ToolCall; 1] = reply.tool_calls.clone().try_into().expect("one call");
    assert!(call.id.starts_with("call_"));
    assert_eq!(call.function.name, "run_shell");
    let args: Value = serde_json::from_str(&call.function.arguments).expect("JSON args");
    assert_eq!(
        args,
        json!({"command":"uname -a; df -h / | tail -1","risk":"low","mutation":false})
    );

    user.push(ChatMessage::assistant(reply.content, reply.tool_calls));
    user.push(ChatMessage::tool(&call.id, "Linux"));
    let reply = c
        .complete(&user, &tools, &mut |_: &str| {})
        .await
        .expect("second round");
    assert_eq!(reply.content, "It runs Linux.");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["stream"], true);
    assert_eq!(reqs[0]["model"], "test-model");
    assert_eq!(reqs[0]["tools"][0]["function"]["name"], "run_shell");
    let msgs = reqs[1]["messages"].as_array().expect("messages");
    assert_eq!(msgs.len(), 3);
    assert_eq!(msgs[1]["tool_calls"][0]["id"], call.id.as_str());
    assert_eq!(msgs[2]["role"], "tool");
    assert_eq!(msgs[2]["tool_call_id"], call.id.as_str());
    assert_eq!(msgs[2]["content"], "Linux");
}

#[tokio::test]
async fn tools_are_omitted_when_empty() {
    let server = serve("[[rule]]\ntext = \"ok\"\n").await;
    let c = client(&server.base_url());
    c.complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .expect("reply");
    let reqs = server.requests();
    assert!(reqs[0].get("tools").is_none(), "{}", reqs[0]);
    assert_eq!(reqs[0]["messages"][0]["content"], "x");
}

#[tokio::test]
async fn empty_streamed_body_falls_back_to_non_streaming() {
    let server = serve(EMPTY_THEN_PLAIN).await;
    let c = client(&server.base_url());
    let mut seen = String::new();
    let done = c
        .complete_round(&[ChatMessage::user("x")], &[], &mut |t: &str| {
            seen.push_str(t)
        })
        .await
        .expect("fallback reply");
    assert_fell_back(&done, &seen, &server);
}

#[tokio::test]
async fn empty_body_twice_is_empty_body_error() {
    let server = serve("[[rule]]\nempty_body = true\ntimes = 0\n").await;
    let c = client(&server.base_url());
    let err = c
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .unwrap_err();
    assert_eq!(err, ModelError::EmptyBody);
}

#[tokio::test]
async fn status_500_carries_the_body() {
    let server = serve(
        r#"
        [[rule]]
        status = 500
        error_message = "the scripted model is on fire"
        "#,
    )
    .await;
    let c = client(&server.base_url());
    let err = c
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .unwrap_err();
    match &err {
        ModelError::Status { status, body, .. } => {
            assert_eq!(*status, 500);
            assert!(body.contains("the scripted model is on fire"), "{body}");
        }
        other => panic!("expected Status, got {other:?}"),
    }
    assert!(err.is_transient());
    assert!(err.to_string().contains("500"));
}

#[tokio::test]
async fn status_429_with_retry_after() {
    let server = serve("[[rule]]\nstatus = 429\nretry_after = 2\n").await;
    let c = client(&server.base_url());
    let err = c
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err, ModelError::Status { status: 429, .. }),
        "{err:?}"
    );
    assert_eq!(err.retry_after(), Some(2));
}

#[tokio::test]
async fn cut_stream_is_an_error_not_a_hang_or_success() {
    let server = serve(
        r#"
        [[rule]]
        text = "this answer will never finish properly, sorry about that"
        cut_after_chunks = 3
        "#,
    )
    .await;
    let c = client(&server.base_url());
    let mut seen = 0;
    let started = Instant::now();
    let err = c
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| seen += 1)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(20), "must not hang");
    assert!(matches!(err, ModelError::StreamCut(_)), "{err:?}");
    assert!(err.is_transient());
    assert!(seen >= 1, "text before the cut was forwarded");
}

#[tokio::test]
async fn closed_port_is_connect_error_naming_the_url() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let c = client(&url);
    let err = c
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .unwrap_err();
    match &err {
        ModelError::Connect(msg) => assert!(msg.contains(&url), "{msg}"),
        other => panic!("expected Connect, got {other:?}"),
    }
}

#[tokio::test]
async fn api_key_is_sent_but_never_shown() {
    let server = serve("[[rule]]\nstatus = 401\nerror_message = \"bad key\"\n").await;
    let mut cfg = ModelClientConfig::new(server.base_url(), "m");
    cfg.api_key = Some("sk-very-secret".into());
    let c = ModelClient::new(cfg).unwrap();
    let err = c
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .unwrap_err();
    assert!(!format!("{err} {err:?} {c:?}").contains("sk-very-secret"));
}

#[tokio::test]
async fn no_matching_rule_gets_the_fallback_text() {
    let server = serve("").await;
    let c = client(&server.base_url());
    let reply = c
        .complete(
            &[ChatMessage::user("anyone there?")],
            &[],
            &mut |_: &str| {},
        )
        .await
        .unwrap();
    assert!(reply.content.contains("demo model"));
    assert!(reply.content.contains("anyone there?"));
}

#[tokio::test]
async fn models_route_and_unknown_route() {
    let server = serve("model = \"scripted-x\"\n").await;
    let http = vigil::tools::http::client_builder()
        .build()
        .expect("a client");
    let models: Value = http
        .get(format!("{}/models", server.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "scripted-x");
    let resp = http
        .get(format!("{}/nope", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/nope")
    );
}

#[tokio::test]
async fn demo_scenario_runs_end_to_end() {
    let server = ScriptedServer::start(Scenario::demo()).await.unwrap();
    let c = client(&server.base_url());
    let mut msgs = vec![ChatMessage::user("Show me what you can do.")];
    let r1 = c
        .complete(&msgs, &[shell_tool()], &mut |_: &str| {})
        .await
        .unwrap();
    assert_eq!(r1.tool_calls[0].function.name, "run_shell");
    let id = r1.tool_calls[0].id.clone();
    msgs.push(ChatMessage::assistant(r1.content, r1.tool_calls));
    msgs.push(ChatMessage::tool(id, "Linux host 5.15"));
    let r2 = c
        .complete(&msgs, &[shell_tool()], &mut |_: &str| {})
        .await
        .unwrap();
    let args: Value = serde_json::from_str(&r2.tool_calls[0].function.arguments).unwrap();
    assert_eq!(args["mutation"], true);
}

#[tokio::test]
async fn silent_server_times_out() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let holder = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let mut cfg = ModelClientConfig::new(format!("http://{addr}/v1"), "m");
    cfg.request_timeout = Duration::from_millis(300);
    let c = ModelClient::new(cfg).unwrap();
    let started = Instant::now();
    let err = c
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .unwrap_err();
    assert_eq!(err, ModelError::Timeout);
    // A hang, not a speed, is what this bound catches.
    assert!(started.elapsed() < Duration::from_secs(20));
    holder.abort();
}

/// The Anthropic dialect takes the same fallback as the OpenAI one: an empty
/// streamed body is retried once without streaming, and says so.
#[tokio::test]
async fn anthropic_empty_streamed_body_falls_back_to_non_streaming() {
    use vigil::agent::model::ChatModel;
    use vigil::agent::model::anthropic::AnthropicClient;
    use vigil::agent::model::types::Messages;
    let server = serve(EMPTY_THEN_PLAIN).await;
    let mut cfg = ModelClientConfig::new(server.base_url(), "test-model");
    cfg.request_timeout = Duration::from_secs(5);
    let c = AnthropicClient::new(cfg, 256).expect("client");
    let mut seen = String::new();
    let done = c
        .complete_round(
            Messages::Typed(&[ChatMessage::user("x")]),
            &[],
            &mut |t: &str| seen.push_str(t),
        )
        .await
        .expect("fallback reply");
    assert_fell_back(&done, &seen, &server);
}

/// An empty streamed body, then a plain answer for the retry.
const EMPTY_THEN_PLAIN: &str = r#"
[[rule]]
empty_body = true
[[rule]]
text = "from the plain answer"
"#;

/// The reply came from one non-streaming retry after one streaming request,
/// and its text reached `on_text` whole.
fn assert_fell_back(done: &vigil::agent::model::Completion, seen: &str, server: &ScriptedServer) {
    assert!(done.fell_back);
    assert_eq!(done.reply.content, "from the plain answer");
    assert_eq!(seen, "from the plain answer");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["stream"], true);
    assert_eq!(reqs[1]["stream"], false);
}

/// A server that reads the request and closes the connection without a word
/// (what a keep-alive connection the server had just closed looks like): the
/// round failed unanswered, which is retried, never a permanent error.
#[tokio::test]
async fn a_connection_closed_without_an_answer_is_transient() {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let closer = tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            drop(s);
        }
    });
    let url = format!("http://{addr}/v1");
    let err = client(&url)
        .complete(&[ChatMessage::user("x")], &[], &mut |_: &str| {})
        .await
        .unwrap_err();
    match &err {
        ModelError::Unanswered(msg) => assert!(msg.contains(&url), "{msg}"),
        other => panic!("expected Unanswered, got {other:?}"),
    }
    assert!(err.is_transient(), "{err}");
    closer.abort();
}
