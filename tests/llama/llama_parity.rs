//! One suite, both dialects: every test here runs against the same real
//! llama.cpp server (SmolLM2-135M, greedy) through its
//! `/v1/chat/completions` and its `/v1/messages`, at n_ctx 2048 and 8192
//! (`matrix!`: `NAME::openai_2048`, `NAME::anthropic_8192`, …). What one
//! dialect does, the other must do the same way: cut answers, usage with
//! the cache fields, the published context window, invalid arguments,
//! errors inside the stream, the model's own format errors, the model list,
//! the tool definitions' share of a small window, compaction and streamed
//! tool-call arguments. See `llama_support` for the server and the proxy.

use super::common;
use super::llama_support;

use llama_support::{
    Action, BAD_ARGS, CALL, Case, Dialect, answered, events, exec, notices, of_type, proxy, report,
    session_id,
};
use serde_json::{Value, json};

/// A tool-call block that is not JSON: the server's parser refuses what the
/// model produced ("does not match the expected … format").
const NOT_A_CALL: &str = "<tool_call>\nnot json";

fn chats(proxy: &llama_support::Proxy) -> Vec<Value> {
    proxy.requests().into_iter().filter(Case::is_chat).collect()
}

/// One run (the case's `Dirs`) whose request ends with `marker`: the proxy
/// prefills the answer with `text` and caps it at `max_tokens`.
async fn prefilled(
    case: Case,
    marker: &'static str,
    text: &'static str,
    max_tokens: u64,
) -> Option<(llama_support::Proxy, std::process::Output)> {
    let llama = case.server()?;
    let action = Action::Prefill {
        marker,
        text,
        max_tokens,
    };
    let proxy = proxy(&llama.url, vec![action]).await;
    let prompt = format!("What time is it in UTC? {marker}");
    let out = exec(&case.dirs(""), &proxy.base_url, &[&prompt]).await;
    Some((proxy, out))
}

fn all_ok(proxy: &llama_support::Proxy) {
    assert!(
        proxy.statuses().iter().all(|s| *s == 200),
        "{:?}",
        proxy.statuses()
    );
}

matrix!(
    the_published_window_is_learnt,
    a_cut_answer_exits_7,
    usage_counts_the_cached_prompt,
    invalid_arguments_are_answered_and_stored_as_an_object,
    an_error_event_in_the_stream_is_retried,
    a_model_format_error_is_a_model_error_tried_twice,
    a_model_the_server_does_not_list_is_warned_about,
    an_unreachable_server_is_not_said_to_publish_nothing,
    a_plain_question_fits_with_the_default_tools,
    a_one_tool_task_fits_with_the_default_tools,
    a_big_newest_tool_result_is_cut_and_the_request_kept_verbatim,
    an_unusable_summary_is_retried_once_then_old_turns_are_dropped,
    a_refused_request_compacting_cannot_change_is_not_sent_again,
    tool_call_arguments_stream_as_they_arrive,
);

async fn the_published_window_is_learnt(case: Case) {
    let Some(llama) = case.server() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let out = exec(
        &case.dirs(""),
        &proxy.base_url,
        &["Reply with one word: hello."],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", report(&out));
    let ev = events(&out);
    let told = format!("context window: {} tokens", case.n_ctx);
    assert!(
        notices(&ev).iter().any(|n| n.contains(&told)),
        "{}",
        report(&out)
    );
    let usage = of_type(&ev, "context_usage");
    assert!(!usage.is_empty() && usage.iter().all(|u| u["limit"] == case.n_ctx));
    assert!(!notices(&ev).iter().any(|n| n.contains("does not list")));
    let deltas = of_type(&ev, "assistant_delta");
    assert!(deltas.len() > 1, "streamed in pieces: {}", report(&out));
    let streamed: String = deltas.iter().filter_map(|d| d["text"].as_str()).collect();
    assert_eq!(streamed, of_type(&ev, "assistant_message")[0]["text"]);
    let first = &chats(&proxy)[0];
    assert_eq!(first["max_tokens"], 40);
    if case.dialect == Dialect::OpenAi {
        assert_eq!(first["stream_options"]["include_usage"], true);
    }
}

async fn a_cut_answer_exits_7(case: Case) {
    let Some(llama) = case.server() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let dirs = case.dirs("max_tokens = 5");
    let out = exec(
        &dirs,
        &proxy.base_url,
        &["Write a long story about a dragon."],
    )
    .await;
    assert_eq!(out.status.code(), Some(7), "{}", report(&out));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "turn_failed")[0]["kind"], "answer_cut");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut off"));
    assert_eq!(chats(&proxy)[0]["max_tokens"], 5);
}

/// The second run of a session sends the first run's prompt again: the
/// server reads most of it from its cache (Messages: `cache_read_input_tokens`,
/// apart from `input_tokens`). The count must still be the whole prompt.
async fn usage_counts_the_cached_prompt(case: Case) {
    let Some(llama) = case.server() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let dirs = case.dirs("max_tokens = 8");
    let used = |out: &std::process::Output| {
        of_type(&events(out), "context_usage")
            .last()
            .map(|u| u["used"].as_u64().unwrap())
            .unwrap_or_else(|| panic!("no context usage: {}", report(out)))
    };
    let first = exec(&dirs, &proxy.base_url, &["Reply with one word: hello."]).await;
    answered(&first);
    let id = session_id(&events(&first));
    let args = ["--resume", id.as_str(), "Reply with one word: again."];
    let second = exec(&dirs, &proxy.base_url, &args).await;
    answered(&second);
    assert!(
        used(&second) > used(&first),
        "a longer conversation counts more tokens: {} then {}",
        used(&first),
        used(&second)
    );
    // The system prompt alone is more than 20 tokens.
    assert!(used(&first) > 40, "{}", report(&first));
}

async fn invalid_arguments_are_answered_and_stored_as_an_object(case: Case) {
    let Some(llama) = case.server() else { return };
    let action = Action::Prefill {
        marker: "[bad-args]",
        text: BAD_ARGS,
        max_tokens: 3,
    };
    let proxy = proxy(&llama.url, vec![action]).await;
    let dirs = case.dirs("");
    let out = exec(
        &dirs,
        &proxy.base_url,
        &["What time is it in UTC? [bad-args]"],
    )
    .await;
    answered(&out);
    let ev = events(&out);
    let raw = of_type(&ev, "tool_call_requested")[0]["arguments"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(serde_json::from_str::<Value>(&raw).is_err(), "{raw:?}");
    let done = of_type(&ev, "tool_completed");
    assert_eq!(done[0]["summary"]["ok"], false, "{}", report(&out));
    let next = chats(&proxy)[1].to_string();
    assert!(next.contains("arguments {}"), "{next}");
    assert!(!next.contains(&raw.replace('"', "\\\"")), "{next}");
    all_ok(&proxy);
    let id = session_id(&ev);
    let out = exec(&dirs, &proxy.base_url, &["--resume", &id, "Reply: thanks."]).await;
    answered(&out);
    all_ok(&proxy);
}

async fn an_error_event_in_the_stream_is_retried(case: Case) {
    let Some(llama) = case.server() else { return };
    let action = Action::StreamError {
        marker: "[flaky]",
        after: 2,
    };
    let proxy = proxy(&llama.url, vec![action]).await;
    let out = exec(
        &case.dirs(""),
        &proxy.base_url,
        &["Reply with one word: yes. [flaky]"],
    )
    .await;
    answered(&out);
    let ev = events(&out);
    let retries = of_type(&ev, "retry_scheduled");
    assert_eq!(retries.len(), 1, "{}", report(&out));
    assert!(
        retries[0]["error"].as_str().unwrap().contains("HTTP 500"),
        "{}",
        report(&out)
    );
}

/// llama.cpp's in-stream "does not match the expected … format" repeats
/// at temperature 0: a model error (exit 1), tried once more at most, the
/// server's message shown, never "unreachable".
async fn a_model_format_error_is_a_model_error_tried_twice(case: Case) {
    let Some((proxy, out)) = prefilled(case, "[garbled]", NOT_A_CALL, 8).await else {
        return;
    };
    assert_eq!(out.status.code(), Some(1), "{}", report(&out));
    let ev = events(&out);
    assert_eq!(of_type(&ev, "turn_failed")[0]["kind"], "model_error");
    assert_eq!(of_type(&ev, "retry_scheduled").len(), 1, "{}", report(&out));
    assert_eq!(chats(&proxy).len(), 2, "{}", report(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("does not match the expected"),
        "{}",
        report(&out)
    );
    assert!(!stderr.contains("cannot reach"), "{}", report(&out));
}

async fn a_model_the_server_does_not_list_is_warned_about(case: Case) {
    let Some(llama) = case.server() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let dirs = case.dirs("max_tokens = 4");
    let bin = common::vigil_bin();
    let out = tokio::process::Command::new(bin)
        .arg("--config")
        .arg(dirs.config())
        .args(["exec", "--json", "Reply: hi."])
        .env("VIGIL_BASE_URL", &proxy.base_url)
        .env("VIGIL_MODEL", "no-such-model")
        .env("VIGIL_DATA_DIR", dirs.data())
        .env("VIGIL_TMUX_SOCKET", &dirs.tmux.socket)
        .env_remove("VIGIL_API_KEY")
        .output()
        .await
        .expect("vigil ran");
    let ev = events(&out);
    let warned: Vec<String> = notices(&ev)
        .into_iter()
        .filter(|n| n.contains("does not list the model `no-such-model`"))
        .collect();
    assert_eq!(warned.len(), 1, "{}", report(&out));
    assert!(warned[0].contains("smollm2"), "{warned:?}");
}

/// Nothing listens: the run fails as unreachable (exit 5) and says nothing
/// about a context window it could not ask for.
async fn an_unreachable_server_is_not_said_to_publish_nothing(case: Case) {
    let dirs = case.dirs("");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", closed.local_addr().expect("addr"));
    drop(closed);
    let out = exec(&dirs, &url, &["Reply: hi."]).await;
    assert_eq!(out.status.code(), Some(5), "{}", report(&out));
    let ev = events(&out);
    assert!(
        !notices(&ev).iter().any(|n| n.contains("context window")),
        "{}",
        report(&out)
    );
    assert_eq!(of_type(&ev, "turn_failed")[0]["kind"], "model_unreachable");
}

/// What the default configuration offers is told to fit: the definitions
/// went shorter than written, and the run says so.
fn told_shortened(out: &std::process::Output) {
    let ev = events(out);
    let told: Vec<String> = notices(&ev)
        .into_iter()
        .filter(|n| n.starts_with("tool definitions sent"))
        .collect();
    assert_eq!(told.len(), 1, "{}", report(out));
}

/// Every default tool, the default system prompt: a plain question is
/// answered at 2048 tokens as at 8192, without a refusal.
async fn a_plain_question_fits_with_the_default_tools(case: Case) {
    let Some(llama) = case.server() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let dirs = case.default_dirs("");
    let out = exec(&dirs, &proxy.base_url, &["Reply with one word: hello."]).await;
    answered(&out);
    told_shortened(&out);
    all_ok(&proxy);
    let tools = chats(&proxy)[0]["tools"].as_array().map_or(0, Vec::len);
    assert!(tools >= 8, "the core tools are offered: {tools}");
}

/// Every default tool: the model calls `time`, it runs, and its result goes
/// back in a request the server takes.
async fn a_one_tool_task_fits_with_the_default_tools(case: Case) {
    let Some(llama) = case.server() else { return };
    let action = Action::Prefill {
        marker: "[call-time]",
        text: CALL,
        max_tokens: 1,
    };
    let proxy = proxy(&llama.url, vec![action]).await;
    let dirs = case.default_dirs("");
    let out = exec(&dirs, &proxy.base_url, &["What time is it? [call-time]"]).await;
    answered(&out);
    told_shortened(&out);
    let ev = events(&out);
    assert_eq!(
        of_type(&ev, "tool_call_requested")[0]["name"],
        "time",
        "{}",
        report(&out)
    );
    assert_eq!(
        of_type(&ev, "tool_completed")[0]["summary"]["ok"],
        true,
        "{}",
        report(&out)
    );
    let requests = chats(&proxy);
    assert!(requests.len() >= 2, "{}", report(&out));
    assert!(requests[1].to_string().contains("tool"), "{}", requests[1]);
    all_ok(&proxy);
}

/// Numbered lines of prose, about `tokens` tokens in all (18 a line).
fn notes(tag: &str, tokens: u64) -> String {
    llama_support::lines(tag, (tokens / 18) as usize)
}

/// A turn whose request is long and whose one tool result (the shared
/// pane's text, about 2 KB) is too big for what is left of the window: the
/// result is cut to its head and tail (the full text in a spill file it
/// names), the request goes on verbatim, and the server never refuses.
async fn a_big_newest_tool_result_is_cut_and_the_request_kept_verbatim(case: Case) {
    let Some(llama) = case.server() else { return };
    let dirs = case.default_dirs("");
    let big = dirs.dir.path().join("big.txt");
    let body: String = (1..=120)
        .map(|i| format!("line {i}: status ok, nothing to report\n"))
        .collect();
    std::fs::write(&big, &body).expect("big file");
    // The shared pane shows the file: `capture-pane` (no arguments) reads it.
    // Two rounds: the call, then the request after the cut (what is
    // checked). A third would only replay the tiny model's repeated call
    // behind a compacted, uncached prefix.
    let mut config = std::fs::read_to_string(dirs.config())
        .expect("config")
        .replace("max_rounds = 3", "max_rounds = 2");
    assert!(config.contains("max_rounds = 2"), "{config}");
    config.push_str(&format!(
        "[tmux]\nshell = \"sh -c 'cat {}; exec sh'\"\nheight = 60\n",
        big.display()
    ));
    std::fs::write(dirs.config(), config).expect("config");
    let action = Action::Prefill {
        marker: "[capture]",
        text: "<tool_call>\n{\"name\": \"capture-pane\", \"arguments\": {}}\n</tool_call>",
        max_tokens: 1,
    };
    let proxy = proxy(&llama.url, vec![action]).await;
    let request_tokens = if case.n_ctx <= 2048 { 200 } else { 4500 };
    let request = format!(
        "{}What does the pane show? [capture]",
        notes("request", request_tokens)
    );
    let out = exec(&dirs, &proxy.base_url, &[&request]).await;
    // What is checked is the request sent after the cut: the tiny model may
    // then call the tool again until the round limit (exit 6) instead of
    // answering, depending on how much of the file the pane showed yet.
    assert!(
        matches!(out.status.code(), Some(0 | 6 | 7)),
        "{}",
        report(&out)
    );
    let ev = events(&out);
    let done = of_type(&ev, "tool_completed");
    assert_eq!(done[0]["summary"]["ok"], true, "{}", report(&out));
    let compacted = of_type(&ev, "context_compacted");
    assert!(
        compacted
            .iter()
            .any(|c| c["method"] == "newest tool result shortened"),
        "{}",
        report(&out)
    );
    all_ok(&proxy);
    let after = chats(&proxy).last().cloned().expect("a request");
    let sent = after["messages"].to_string();
    assert!(sent.contains("saved to"), "the spill file is named: {sent}");
    let verbatim = serde_json::to_string(&request).unwrap();
    assert!(
        sent.contains(&verbatim[1..verbatim.len() - 1]),
        "the request is verbatim"
    );
}

/// The tiny model's summary runs into `max_tokens`: it is rejected, asked
/// once more, rejected again, and the oldest turns are dropped with a
/// marker; the turn's own request is sent as written. (At 8192 the first
/// estimate of this prose is low, so the server may refuse once first.)
async fn an_unusable_summary_is_retried_once_then_old_turns_are_dropped(case: Case) {
    let Some(llama) = case.server() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let dirs = case.dirs("max_tokens = 6");
    let first = format!(
        "{}Reply with one word: noted.",
        notes("first", case.n_ctx / 2)
    );
    let out = exec(&dirs, &proxy.base_url, &[&first]).await;
    answered(&out);
    let id = session_id(&events(&out));
    let second = format!(
        "{}Reply with one word: noted.",
        notes("second", case.n_ctx / 2)
    );
    let out = exec(&dirs, &proxy.base_url, &["--resume", &id, &second]).await;
    answered(&out);
    let ev = events(&out);
    assert_eq!(
        of_type(&ev, "context_compacted")[0]["method"],
        "dropped",
        "{}",
        report(&out)
    );
    let requests = proxy.requests();
    let summaries = requests
        .iter()
        .filter(|r| r.to_string().contains("vigil-compaction"))
        .count();
    assert_eq!(summaries, 2, "asked twice");
    let last = requests.last().unwrap().to_string();
    assert!(last.contains("older messages were dropped"), "{last}");
    assert!(last.contains("second note 1:") && !last.contains("first note 1:"));
    // Compacted before the server refused, or after one refusal.
    assert_eq!(
        proxy.statuses().last(),
        Some(&200),
        "{:?}",
        proxy.statuses()
    );
}

/// A request longer than the whole window, with nothing older to compact:
/// refused once, and the same request is not sent again.
async fn a_refused_request_compacting_cannot_change_is_not_sent_again(case: Case) {
    let Some(llama) = case.server() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let out = exec(
        &case.dirs(""),
        &proxy.base_url,
        &[&notes("only", case.n_ctx * 5 / 4)],
    )
    .await;
    llama_support::assert_hopelessly_long(&out, case.n_ctx);
    assert_eq!(proxy.statuses(), [400], "{}", report(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not sent again"));
}

/// The model writes a call's arguments over several tokens: `--json` shows
/// each piece as it arrives (`tool_call_delta`), before the call is
/// requested whole, and the pieces add up to the call's arguments.
async fn tool_call_arguments_stream_as_they_arrive(case: Case) {
    let Some((_proxy, out)) = prefilled(case, "[bad-args]", BAD_ARGS, 3).await else {
        return;
    };
    answered(&out);
    let ev = events(&out);
    let requested = ev
        .iter()
        .position(|e| e["type"] == "tool_call_requested")
        .unwrap_or_else(|| panic!("no call: {}", report(&out)));
    let deltas: Vec<&Value> = ev[..requested]
        .iter()
        .filter(|e| e["type"] == "tool_call_delta")
        .collect();
    let pieces = deltas
        .iter()
        .filter(|d| !d["arguments"].as_str().unwrap_or("").is_empty())
        .count();
    assert!(pieces >= 2, "in pieces: {}", report(&out));
    let joined: String = deltas
        .iter()
        .filter_map(|d| d["arguments"].as_str())
        .collect();
    assert_eq!(
        json!(joined),
        ev[requested]["arguments"],
        "{}",
        report(&out)
    );
    assert!(
        deltas
            .iter()
            .all(|d| d["name"] == "time" && d["index"] == 0)
    );
}
