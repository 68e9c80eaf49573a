//! vigil against a real llama.cpp server (llama.cpp's own HTTP server through
//! the xllamacpp wheel, SmolLM2-135M-Instruct, n_ctx 1024, greedy sampling):
//! `vigil exec` end to end for a tool call and the context refusal (compact
//! and succeed; fail naming the numbers), and one console
//! run in tmux (the published window, compaction before a refusal, a cut
//! answer marked). See `llama_support` for the server and the proxy; the
//! only thing the proxy adds is an assistant prefill (or one injected error
//! event): every answer is the server's own. What both dialects must do
//! alike, at n_ctx 2048 and 8192, is in `llama_parity.rs`.

use super::common;
use super::llama_support;

use llama_support::{
    Action, CALL, Dirs, N_CTX, answered, assert_hopelessly_long, assert_refused_then_compacted,
    events, exec, lines, llama, of_type, proxy, report, session_id,
};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_from_the_server_runs_and_its_result_goes_back() {
    let Some(llama) = llama() else { return };
    let action = Action::Prefill {
        marker: "[call-time]",
        text: CALL,
        max_tokens: 1,
    };
    let proxy = proxy(&llama.url, vec![action]).await;
    let dirs = Dirs::new("");
    let out = exec(&dirs, &proxy.base_url, &["What time is it? [call-time]"]).await;
    answered(&out);
    let ev = events(&out);
    let calls = of_type(&ev, "tool_call_requested");
    assert_eq!(calls[0]["name"], "time", "{}", report(&out));
    let done = of_type(&ev, "tool_completed");
    assert_eq!(done[0]["summary"]["ok"], true, "{}", report(&out));
    let requests = proxy.requests();
    let second = requests
        .iter()
        .filter(|r| r["stream"] == true)
        .nth(1)
        .unwrap();
    let sent = second["messages"].as_array().unwrap();
    assert_eq!(sent.last().unwrap()["role"], "tool");
    assert!(
        proxy.statuses().iter().all(|s| *s == 200),
        "{:?}",
        proxy.statuses()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_too_long_even_after_compacting_fails_naming_the_numbers() {
    let Some(llama) = llama() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    let dirs = Dirs::new("context_limit = 32768");
    let prompt = lines("only", 150);
    let out = exec(&dirs, &proxy.base_url, &[&prompt]).await;
    assert_hopelessly_long(&out, N_CTX);
    assert_eq!(proxy.statuses(), vec![400, 400], "refused, refused again");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_request_compacts_and_succeeds() {
    let Some(llama) = llama() else { return };
    let proxy = proxy(&llama.url, vec![]).await;
    // vigil believes in a large window; the server holds 1024 tokens.
    let dirs = Dirs::new("context_limit = 32768");
    let first = format!("{}Reply with one word: noted.", lines("first", 16));
    let out = exec(&dirs, &proxy.base_url, &[&first]).await;
    answered(&out);
    let id = session_id(&events(&out));
    let second = format!("{}Reply with one word: noted.", lines("second", 16));
    let out = exec(&dirs, &proxy.base_url, &["--resume", &id, &second]).await;
    answered(&out);
    assert_refused_then_compacted(&out);
    assert!(proxy.statuses().contains(&400), "{:?}", proxy.statuses());
    assert_eq!(proxy.statuses().last(), Some(&200));
}

/// The console in tmux, as an operator uses it, against the real server
/// with `context_limit` unset: the published window is used, a long
/// session compacts before the server refuses, and an answer cut at
/// `max_tokens` is marked as such.
#[test]
fn the_console_compacts_before_the_server_refuses_and_marks_a_cut_answer() {
    let Some(llama) = llama() else { return };
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let proxy = rt.block_on(proxy(&llama.url, vec![]));
    let dirs = Dirs::new("");
    let work = dirs.dir.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    let launch = format!(
        "cd {work} && env -u NO_COLOR TERM=xterm-256color VIGIL_DATA_DIR={data} \
         VIGIL_TMUX_SOCKET={sock} XDG_CONFIG_HOME={xdg} {bin} --config {cfg} \
         --base-url {url} --model smollm2",
        work = work.display(),
        data = dirs.data().display(),
        sock = dirs.tmux.socket,
        xdg = dirs.dir.path().join("xdg").display(),
        bin = common::vigil_bin().display(),
        cfg = dirs.config().display(),
        url = proxy.base_url,
    );
    let tmux = common::Tmux::new("llama");
    let s = "console";
    tmux.start(s, 140, 50, &launch);
    let wait = Duration::from_secs(120);
    tmux.wait_text(s, &format!("context window: {N_CTX} tokens"), wait);

    // Each message alone fits; both together do not (about 450 tokens
    // each, with the tools and the answer: over 1024).
    // The conversation's requests (not the summary ones: a summary cut at
    // max_tokens is asked for twice).
    let chats = || {
        let requests = proxy.requests();
        let summaries = requests
            .iter()
            .filter(|r| r.to_string().contains("vigil-compaction"));
        requests.len() - summaries.count()
    };
    let say = |text: &str, requests: usize| {
        tmux.type_text(s, text);
        tmux.keys(s, &["Enter"]);
        common::eventually(wait, || (chats() >= requests).then_some(()))
            .unwrap_or_else(|| panic!("{requests} requests: {:?}", proxy.statuses()));
        tmux.wait_text(s, "│ idle", wait)
    };
    let one_line = |tag: &str| {
        format!(
            "{} Reply with one word: noted.",
            lines(tag, 16).replace('\n', " ")
        )
    };
    say(&one_line("first"), 1);
    let screen = say(&one_line("second"), 2);
    assert!(screen.contains("context compacted (summary)"), "{screen}");
    assert!(
        !proxy.statuses().contains(&400),
        "compacted before the server refused: {:?}",
        proxy.statuses()
    );

    say("Write a long story about a dragon and a knight.", 3);
    // The screen may still show the idle status of before the message: wait
    // for the failure after it.
    tmux.wait_for(s, "the cut answer marked", wait, |screen| {
        screen
            .rfind("dragon and a knight.")
            .is_some_and(|at| screen[at..].contains("turn failed: the answer was cut off"))
    });
}
