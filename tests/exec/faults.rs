//! Faults injected against the real binary, and what the operator sees:
//! - the model server answers 500 on every round, or cuts every stream: the
//!   turn fails with a clear message, and the session file keeps every
//!   completed tool call as valid JSON lines;
//! - the terminal is resized 100 times within a second: the console keeps
//!   drawing its panes and still answers;
//! - a 401 whose body echoes the planted API key: the console shows the
//!   error, never the key (screen, session files, log);
//! - vigil's managed tmux server killed, or its managed pane killed, while
//!   a command runs there: the call fails with a clear error in the tools
//!   pane, the console stays up, the next command recreates the pane;
//! - a panic inside a pane's render (the test-only
//!   `VIGIL_TEST_PANIC_RENDER` hook): the terminal is restored, a message
//!   says what happened, vigil exits non-zero, the session resumes.
//!
//! The ssh master killed and the container stopped mid-command are in
//! `tests/faults_remote.rs`; `kill -9` mid-turn then `vigil resume --last
//! --exec` is in `tests/sessions_cli.rs`.

use super::common;
use super::console_support as support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{BASE_CONFIG, Console};
use vigil_scripted::{Scenario, ScriptedServer};

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

/// Resize the console's tmux window to `w`x`h`.
fn resize(c: &Console, w: u16, h: u16) {
    let _ = c
        .tmux
        .cmd()
        .args(["resize-window", "-t", &c.session])
        .args(["-x", &w.to_string(), "-y", &h.to_string()])
        .output();
}

#[test]
fn a_hundred_resizes_in_a_second_leave_a_working_console() {
    let c = Console::start("faults-resize", BASE_CONFIG, "", "");
    c.send("before");
    c.wait("echo: before");
    let started = Instant::now();
    for i in 0..100u16 {
        let (w, h) = (60 + (i * 7) % 80, 15 + (i * 3) % 30);
        resize(&c, w, h);
    }
    let storm = started.elapsed();
    // 100 resizes normally take well under a second; the bound only catches
    // a console that blocks tmux (load on a shared 2-core machine varies).
    assert!(storm < Duration::from_secs(20), "storm took {storm:?}");
    resize(&c, 100, 30);
    // The console redraws at the last size before anything is typed: a
    // capture taken mid-storm (a tiny layout with no message box) must not
    // make `send` press `i` into the box that still has the focus.
    c.wait_for("the console redrawn at 100x30", |s| {
        s.contains("┏ message") && s.lines().next().is_some_and(|l| l.contains("│ idle"))
    });
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

/// vigil started by a parent that blocked SIGWINCH (a signal mask survives
/// exec and tmux; a profiler or a CI runner may leave one) blocks no signal
/// in any of its threads, and follows the terminal's size.
#[test]
fn a_console_started_with_resizes_blocked_still_follows_them() {
    let block = "python3 -c 'import os, signal, sys; \
         signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGWINCH]); \
         os.execv(sys.argv[1], sys.argv[1:])'";
    let c = Console::start("faults-blocked", BASE_CONFIG, "--no-tmux", block);
    c.wait("┏ message");
    let pid = c.vigil_pid();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("threads") {
        let status = std::fs::read_to_string(task.expect("thread").path().join("status"));
        let status = status.expect("thread status");
        let blocked = status.lines().find(|l| l.starts_with("SigBlk:"));
        assert_eq!(blocked, Some("SigBlk:\t0000000000000000"), "{status}");
    }
    resize(&c, 120, 40);
    c.wait_for("the console drawn at 120x40", |s| {
        s.lines().nth(39).is_some_and(|l| l.contains("Enter send"))
    });
}

/// A terminal that shrank and grew back while the console could not draw
/// (stopped here; too busy in the storm above) is back at the size the
/// console last drew at, but the shrink cut rows off: the console paints
/// the whole screen again after a resize, not only what it thinks changed,
/// and the screen ends as it was.
#[test]
fn a_shrink_and_grow_back_unseen_is_painted_whole() {
    let c = Console::start("faults-regrow", BASE_CONFIG, "", "");
    c.send("before");
    c.wait("echo: before");
    let whole = c.wait_for("the whole console", |s| {
        s.contains("┏ message") && s.contains("no pending approvals")
    });
    // The console this test's tmux started, and nothing else.
    let pid = c.vigil_pid();
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    for h in [12, 30] {
        resize(&c, 100, h);
    }
    unsafe { libc::kill(pid, libc::SIGCONT) };
    c.wait_for("the console as it was", |s| s == whole);
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

/// The model's side of the managed-pane faults: `again` and `recover` run
/// short commands (their output is not in their command line), `hang` one
/// that runs until it is killed.
const PANE_SCENARIO: &str = r#"
model = "e2e"
chunk_delay_ms = 0
[[rule]]
when = { role = "user", contains = "again" }
times = 0
[[rule.tool_calls]]
name = "run_shell"
arguments = { command = "printf 'pane-%s\\n' back-42", risk = "low", mutation = false, privesc = false, why = "t" }
[[rule]]
when = { role = "user", contains = "recover" }
times = 0
[[rule.tool_calls]]
name = "run_shell"
arguments = { command = "printf 'pane-%s\\n' recreated-7", risk = "low", mutation = false, privesc = false, why = "t" }
[[rule]]
when = { role = "user", contains = "hang" }
times = 0
[[rule.tool_calls]]
name = "run_shell"
arguments = { command = "timeout 400 sleep 300", risk = "low", mutation = false, privesc = false, why = "t" }
[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
[[rule]]
when = { role = "user" }
times = 0
text = "echo: {last_user}"
"#;

/// `pane_id` of the managed pane running `sleep 300`, once it runs (found
/// among the pane shell's descendants).
fn sleeping_pane(c: &Console) -> String {
    common::eventually(support::WAIT, || {
        c.agent_tmux
            .tmux(&["list-panes", "-a", "-F", "#{pane_id} #{pane_pid}"])
            .lines()
            .find(|l| {
                let pid = l.split(' ').nth(1).and_then(|p| p.parse().ok());
                pid.is_some_and(runs_sleep_300_below)
            })
            .map(|l| l.split(' ').next().unwrap().to_string())
    })
    .expect("the hanging command runs in a managed pane")
}

/// Whether a `sleep 300` runs somewhere below process `root`.
fn runs_sleep_300_below(root: u32) -> bool {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit(')')
            .next()?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == b"sleep\x00300\x00")
        })
        .any(|mut pid| {
            while let Some(p) = parent(pid) {
                if p == root {
                    return true;
                }
                if p <= 1 {
                    break;
                }
                pid = p;
            }
            false
        })
}

/// Run one command, fault the managed pane while a second one runs
/// (`inject`), then run another. What the operator sees: the faulted call
/// ends in the tools pane with "failed: execution failed: the pane was
/// killed while the command ran in pane … was lost; the next command
/// recreates it", the console keeps answering (the model's reply to the
/// failure arrives), and the next command runs in a recreated pane. Nothing recorded is lost: every session line is valid
/// JSON and both completed calls and the failed one are in it.
fn managed_pane_fault(tag: &str, inject: impl Fn(&Console, &str)) {
    let c = Console::start_scenario(tag, PANE_SCENARIO, BASE_CONFIG, "", "");
    c.send("again");
    c.wait("TOOL SAID");
    // A wrapper is never low: the operator approves it, so it runs in the
    // pane's shell (what runs unasked runs sandboxed outside the pane).
    c.send("hang");
    c.wait("approvals (1)");
    c.answer("y");
    let pane = sleeping_pane(&c);
    let killed = c
        .agent_tmux
        .tmux(&["display", "-p", "-t", &pane, "#{pane_id} #{pane_pid}"])
        .trim()
        .to_string();
    inject(&c, &pane);
    let screen = c.wait_for("the call failing with a clear error", |s| {
        s.contains("failed: execution failed: the")
            && (s.contains("killed") || s.contains("went away"))
    });
    assert_eq!(c.tmux.display(&c.session, "#{pane_dead}"), "0", "{screen}");
    // The model's reply to the failure names it too.
    c.wait_for("the model told", |s| s.matches("TOOL SAID").count() >= 2);
    c.send("recover");
    // The model's answer to the call: the call is over and recorded (its
    // output shows live before the result is written).
    c.wait_for("the recovered call's answer", |s| {
        s.contains("TOOL SAID") && s.matches("pane-recreated-7").count() >= 2
    });
    // A new server reuses pane ids: the shell's pid tells panes apart.
    let panes = c
        .agent_tmux
        .tmux(&["list-panes", "-a", "-F", "#{pane_id} #{pane_pid}"]);
    assert!(
        !panes.trim().is_empty() && !panes.lines().any(|p| p == killed),
        "a new managed pane: {panes:?} (killed {killed})"
    );
    let data = c.dir.path().join("data");
    // The session file is written beside the console's stream, not before
    // it: read it until the recovered call is in it (or the wait ends).
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut events = session_events(&data);
    while Instant::now() < deadline
        && !events
            .iter()
            .any(|e| e.to_string().contains("pane-recreated-7"))
    {
        std::thread::sleep(Duration::from_millis(100));
        events = session_events(&data);
    }
    let text: Vec<String> = events.iter().map(Value::to_string).collect();
    for done in ["pane-back-42", "pane-recreated-7"] {
        assert!(
            text.iter().any(|t| t.contains(done)),
            "completed call {done} recorded: {events:#?}"
        );
    }
    assert!(
        text.iter().any(|t| t.contains("timeout 400 sleep 300")),
        "the faulted call is recorded: {events:#?}"
    );
}

#[test]
fn the_managed_tmux_server_killed_mid_command_fails_the_call_and_recovers() {
    managed_pane_fault("faults-kill-server", |c, _| {
        c.agent_tmux.tmux(&["kill-server"]);
    });
}

#[test]
fn the_managed_pane_killed_mid_command_fails_the_call_and_recovers() {
    managed_pane_fault("faults-kill-pane", |c, pane| {
        // Another window keeps the session and server alive: only the pane
        // dies, as when the operator closes it.
        let session = c
            .agent_tmux
            .tmux(&["display", "-p", "-t", pane, "#{session_name}"]);
        c.agent_tmux
            .tmux(&["new-window", "-d", "-t", &format!("{}:", session.trim())]);
        c.agent_tmux.tmux(&["kill-pane", "-t", pane]);
    });
}

/// A panic inside the conversation pane's render, injected once the
/// operator's message contains the trigger. What the operator sees: the
/// normal screen back (no alternate screen; typed text echoes, so raw mode
/// is off), the panic and a line saying the session is kept and how to
/// resume it, and a non-zero exit without a hang. Nothing recorded is lost:
/// every session line is valid JSON, the completed call is in it, the agent
/// outlived its console (it still holds the session), and once `vigil stop`
/// has returned, `vigil resume --last` continues the session at once with
/// that call restored.
#[test]
fn a_panic_in_a_render_restores_the_terminal_and_keeps_the_session() {
    // After vigil exits, the pane's shell prints its status and runs `cat`
    // on the same terminal, in whatever mode vigil left it.
    let c = Console::start_scenario(
        "faults-panic",
        PANE_SCENARIO,
        BASE_CONFIG,
        "; echo \"vigil-exit=$?\"; exec cat",
        "VIGIL_TEST_PANIC_RENDER=kaboom-7 RUST_BACKTRACE=0",
    );
    c.send("again");
    c.wait("TOOL SAID");
    assert_eq!(c.tmux.display(&c.session, "#{alternate_on}"), "1");
    c.send("kaboom-7");
    let screen = c.wait("vigil-exit=");
    let code = screen
        .split("vigil-exit=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    assert!(code != "0" && !code.is_empty(), "exit {code}:\n{screen}");
    // The panic and the note stay on screen, above what follows them (a
    // second "leave alternate screen" would send the cursor back up).
    let at = |t: &str| {
        screen
            .find(t)
            .unwrap_or_else(|| panic!("{t:?} in:\n{screen}"))
    };
    assert!(at("panicked at") < at("injected fault"));
    assert!(at("injected fault") < at("vigil-exit="), "{screen}");
    let joined = screen.replace('\n', "");
    assert!(
        joined.contains("`vigil resume --last` continues it"),
        "{screen}"
    );
    assert_eq!(c.tmux.display(&c.session, "#{alternate_on}"), "0");
    // Cooked mode with echo: the terminal echoes the line, then cat
    // prints it back: twice. In raw mode it would show once.
    // vigil is gone: the line goes to the terminal as typed.
    c.type_text("typed-after-crash");
    c.keys(&["Enter"]);
    let screen = c.wait_for("the typed line echoed and printed", |s| {
        s.matches("typed-after-crash").count() >= 2
    });
    assert_eq!(
        screen.matches("typed-after-crash").count(),
        2,
        "echo on, canonical mode:\n{screen}"
    );

    let data = c.dir.path().join("data");
    let events = session_events(&data);
    assert!(
        events
            .iter()
            .any(|e| e.to_string().contains("pane-back-42")),
        "the completed call is recorded: {events:#?}"
    );
    // The note's promise, in its order: the agent kept working (it still
    // holds the session), and once it is stopped the session resumes.
    let id = std::fs::read_dir(data.join("sessions"))
        .unwrap()
        .flatten()
        .next()
        .expect("one session")
        .file_name();
    let id = id.to_str().unwrap();
    let stop = std::process::Command::new(common::vigil_bin())
        .args(["stop", id])
        .env("VIGIL_DATA_DIR", &data)
        .env("VIGIL_RUNTIME_DIR", c.tmux.runtime_dir())
        .stdin(Stdio::null())
        .output()
        .expect("vigil stop runs");
    assert!(
        stop.status.success(),
        "the agent outlived its console and stops: {}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let cfg = c.dir.path().join("config.toml");
    let out = std::process::Command::new(common::vigil_bin())
        .args(["--no-tmux", "--config"])
        .arg(&cfg)
        .args(["--base-url", &c.server.base_url(), "--model", "e2e"])
        .args(["resume", "--last", "--exec", "after", "--json"])
        .env("VIGIL_DATA_DIR", &data)
        // `resume --exec` holds the session's lock in the runtime directory.
        .env("VIGIL_RUNTIME_DIR", c.tmux.runtime_dir())
        .env_remove("VIGIL_TEST_PANIC_RENDER")
        .stdin(Stdio::null())
        .output()
        .expect("vigil resume runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let restored: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "session_restored")
        .expect("session_restored");
    let tools = restored["tools"].as_array().expect("tools");
    assert!(
        tools.iter().any(|t| t["summary"]["ok"] == true),
        "the completed call is restored: {restored:#}"
    );
    assert!(stdout.contains("echo: after"), "{stdout}");
}
