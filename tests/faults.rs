//! Faults injected against the real binary, and what the operator sees:
//! - the model server answers 500 on every round, or cuts every stream: the
//!   turn fails with a clear message, and the session file keeps every
//!   completed tool call as valid JSON lines;
//! - the terminal is resized 100 times within a second: the console keeps
//!   drawing its panes and still answers;
//! - a 401 whose body echoes the planted API key: the console shows the
//!   error, never the key (screen, session files, log).
//!
//! `kill -9` mid-turn then `vigil resume --last --exec` lives in
//! `tests/sessions_cli.rs`.

mod common;
#[path = "support/console.rs"]
mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{BASE_CONFIG, Console};
use vigil::scripted::{Scenario, ScriptedServer};

const KEY: &str = "sk-planted-faults-93c1d7";

/// Every `events.jsonl` under `data`: each line valid JSON.
fn session_events(data: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let sessions = data.join("sessions");
    for entry in std::fs::read_dir(&sessions)
        .expect("sessions dir")
        .flatten()
    {
        let text = std::fs::read_to_string(entry.path().join("events.jsonl")).unwrap_or_default();
        for line in text.lines() {
            out.push(
                serde_json::from_str(line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}")),
            );
        }
    }
    out
}

fn scan_for_key(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            scan_for_key(&path);
        } else {
            let content = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert!(!content.contains(KEY), "key leaked into {}", path.display());
        }
    }
}

async fn exec_with_failing_model(failure: &str) -> (std::process::Output, tempfile::TempDir) {
    let scenario = format!(
        r#"
[[rule]]
when = {{ role = "user" }}
[[rule.tool_calls]]
name = "run_shell"
arguments = {{ command = "echo tool-done", risk = "low", mutation = false, privesc = false, why = "t" }}
[[rule]]
when = {{ role = "tool" }}
times = 0
text = "one two three four five six"
{failure}
"#
    );
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario).unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg.toml");
    std::fs::write(&cfg, "[model]\nretry_base_ms = 5\n").unwrap();
    let out = tokio::process::Command::new(common::vigil_bin())
        .args(["--no-tmux", "--config"])
        .arg(&cfg)
        .args(["exec", "--json", "--auto-approve", "go"])
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", dir.path())
        .env("VIGIL_API_KEY", KEY)
        .stdin(Stdio::null())
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("vigil finished in time")
        .expect("vigil ran");
    (out, dir)
}

fn check_failed_turn(out: &std::process::Output, data: &Path, what: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(
        out.status.code(),
        Some(0),
        "{what}: the run fails\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("turn_failed"),
        "{what}: operator told:\n{stdout}\n{stderr}"
    );
    let events = session_events(data);
    let completed = events.iter().any(|e| e.to_string().contains("tool-done"));
    assert!(
        completed,
        "{what}: the completed call is recorded: {events:#?}"
    );
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY));
    scan_for_key(data);
}

#[tokio::test(flavor = "multi_thread")]
async fn model_500_on_every_round_fails_the_turn_and_keeps_the_session() {
    let (out, dir) = exec_with_failing_model("status = 500").await;
    check_failed_turn(&out, dir.path(), "500");
}

#[tokio::test(flavor = "multi_thread")]
async fn model_disconnecting_mid_stream_fails_the_turn_and_keeps_the_session() {
    let (out, dir) = exec_with_failing_model("cut_after_chunks = 2").await;
    check_failed_turn(&out, dir.path(), "cut stream");
}

#[test]
fn a_hundred_resizes_in_a_second_leave_a_working_console() {
    let c = Console::start("faults-resize", BASE_CONFIG, "", "");
    c.send("before");
    c.wait("echo: before");
    let started = Instant::now();
    for i in 0..100u16 {
        let (w, h) = (60 + (i * 7) % 80, 15 + (i * 3) % 30);
        let _ = c
            .tmux
            .cmd()
            .args(["resize-window", "-t", &c.session])
            .args(["-x", &w.to_string(), "-y", &h.to_string()])
            .output();
    }
    let storm = started.elapsed();
    // 100 resizes normally take well under a second; the bound only catches
    // a console that blocks tmux (load on a shared 2-core machine varies).
    assert!(storm < Duration::from_secs(20), "storm took {storm:?}");
    let _ = c
        .tmux
        .cmd()
        .args(["resize-window", "-t", &c.session, "-x", "100", "-y", "30"])
        .output();
    c.send("after");
    // Wait for a settled frame that shows both (a capture can land mid-redraw).
    let screen = c.wait_for("the new answer with the history kept", |s| {
        s.contains("echo: after") && s.contains("echo: before")
    });
    assert!(screen.contains("echo: before"), "history kept:\n{screen}");
    assert_eq!(c.tmux.display(&c.session, "#{pane_dead}"), "0");
    let data = c.dir.path().join("data");
    let events = session_events(&data);
    assert!(events.iter().any(|e| e.to_string().contains("echo: after")));
}

#[test]
fn a_401_echoing_the_key_never_shows_it() {
    let scenario = format!(
        "model = \"e2e\"\n[[rule]]\ntimes = 0\nstatus = 401\nerror_message = \"invalid api key {KEY} for this org\"\n"
    );
    let c = Console::start_scenario(
        "faults-401",
        &scenario,
        BASE_CONFIG,
        "",
        &format!("VIGIL_API_KEY={KEY}"),
    );
    c.send("hi");
    let screen = c.wait_for("the error", |s| {
        s.contains("401") || s.contains("invalid api key")
    });
    assert!(!screen.contains(KEY), "key on screen:\n{screen}");
    assert!(!c.screen_ansi().contains(KEY));
    std::thread::sleep(Duration::from_millis(300));
    scan_for_key(c.dir.path());
}
