//! End-to-end: the agent outlives its console. The real binary in tmux:
//! a console killed with SIGKILL while a command runs leaves the agent
//! working (`vigil ps` shows it) and `vigil attach --last` shows the output,
//! what arrived meanwhile and the end; two consoles on one agent, the
//! second approves and the first says who; a watcher cannot approve;
//! `vigil ps` and `vigil stop`; `q` → detach keeps the agent, `q` → stop
//! ends it. Every agent a test starts is stopped when its tmux server goes
//! (`common::Tmux`).

use super::common;
use super::console_support as support;

use std::time::Duration;

use support::{BASE_CONFIG, Console};

/// A command that prints for a few seconds, a gated one, echoes.
const SCENARIO: &str = r#"
model = "e2e"
chunk_delay_ms = 0

[[rule]]
when = { role = "user", contains = "long-run" }
times = 0
text = "Running for a while."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "echo tick-1; sleep 1; echo tick-2; sleep 1; echo tick-3; sleep 1; echo tick-4; sleep 1; echo tick-5; sleep 1; echo long-done"
risk = "low"
mutation = false
privesc = false
why = "e2e long"

[[rule]]
when = { role = "user", contains = "gate-me" }
times = 0
text = "I will run a gated command."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "touch gated-ran && echo gated-output"
risk = "medium"
mutation = true
privesc = false
why = "e2e gate"

[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"

[[rule]]
when = { role = "user" }
times = 0
text = "echo: {last_user}"
"#;

const WAIT: Duration = Duration::from_secs(30);

fn start(tag: &str) -> Console {
    Console::start_scenario(tag, SCENARIO, BASE_CONFIG, "", "")
}

/// Leave the message box (Esc), apart from the next key: Esc and a key
/// sent together read as Alt-key.
fn leave_box(c: &Console) {
    c.keys(&["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn a_killed_console_loses_nothing_and_attach_shows_what_came_meanwhile() {
    let c = start("attach-kill");
    c.send("long-run");
    c.wait("tick-1");
    let console = c.vigil_pid();
    // SAFETY: kill(2) on the console process this test started.
    unsafe { libc::kill(console, libc::SIGKILL) };
    assert!(common::gone_within(console, WAIT), "the console survived");
    // The agent is still there, working.
    assert_eq!(c.live_ids().len(), 1, "vigil ps lists the agent");
    assert_eq!(c.agent_pids().len(), 1);
    std::thread::sleep(Duration::from_secs(2));
    c.restart("attach --last");
    let screen = c.tmux.wait_for(&c.session, "the command's end", WAIT, |s| {
        s.contains("long-done") && s.contains("TOOL SAID")
    });
    for tick in ["tick-1", "tick-3", "tick-5"] {
        assert!(screen.contains(tick), "{tick} missing:\n{screen}");
    }
    assert!(
        screen.contains("long-run"),
        "the conversation is back:\n{screen}"
    );
}

#[test]
fn two_consoles_the_second_approves_and_the_first_says_who() {
    let c = start("attach-two");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.open("second", "attach --last");
    c.tmux.wait_text("second", "approvals (1)", WAIT);
    c.tmux.answer("second", "y");
    // Both show the result (the model's answer to it: the command's text
    // is on screen from the start); the first says which console answered.
    c.tmux.wait_text("second", "TOOL SAID", WAIT);
    c.wait("TOOL SAID");
    // Wide enough for the whole status line of the call.
    let resized = c
        .tmux
        .cmd()
        .args(["resize-window", "-t", &c.session, "-x", "220", "-y", "30"])
        .status()
        .expect("tmux resize-window");
    assert!(resized.success());
    let screen = c.wait_for("who answered", |s| s.contains("at console 2"));
    assert!(screen.contains("approved by operator"), "{screen}");
    assert!(c.work().join("gated-ran").exists(), "the approved call ran");
    // The record names the console as the screen does, and holds no
    // streamed deltas (the whole message is there).
    let sessions = c.dir.path().join("data/sessions");
    let record = common::eventually(WAIT, || {
        let dir = std::fs::read_dir(&sessions).ok()?.flatten().next()?.path();
        std::fs::read_to_string(dir.join("events.jsonl")).ok()
    })
    .expect("events.jsonl");
    let resolved = record
        .lines()
        .find(|l| l.contains("\"approval_resolved\""))
        .expect("the decision is recorded");
    assert!(
        resolved.contains("\"answered_by\":{\"console\":{\"id\":2"),
        "{resolved}"
    );
    assert!(!record.contains("assistant_delta"), "{record}");
    assert!(record.contains("I will run a gated command."), "{record}");
}

/// A console attached while a call waits keeps the keyboard in its
/// message box: `go` + Enter is a message, never a key of the queue.
#[test]
fn attaching_while_a_call_waits_leaves_the_keyboard_in_the_box() {
    let c = start("attach-focus");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.open("second", "attach --last");
    c.tmux.wait_text("second", "approvals (1)", WAIT);
    let screen = c.tmux.wait_text("second", "┏ message", WAIT);
    assert!(!screen.contains("┏ approvals"), "{screen}");
    c.tmux.type_text("second", "yes go");
    c.tmux.keys("second", &["Enter"]);
    c.tmux.wait_text("second", "> yes go", WAIT);
    let screen = c.tmux.screen("second");
    assert!(!screen.contains("no preview to open"), "{screen}");
    assert!(screen.contains("approvals (1)"), "{screen}");
    assert!(!c.work().join("gated-ran").exists(), "typed text approved");
}

#[test]
fn a_watcher_cannot_approve_and_is_told() {
    let c = start("attach-watch");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.open("watch", "attach --last --watch");
    c.tmux.wait_text("watch", "watching: read-only", WAIT);
    c.tmux.wait_text("watch", "approvals (1)", WAIT);
    c.tmux.keys("watch", &["y"]);
    c.tmux
        .wait_text("watch", "this console cannot approve, type or send", WAIT);
    std::thread::sleep(Duration::from_millis(800));
    assert!(!c.work().join("gated-ran").exists(), "a watcher approved");
    c.wait("approvals (1)");
    // The operator's console still can; the watcher sees it happen.
    c.answer("y");
    c.tmux.wait_text("watch", "TOOL SAID", WAIT);
}

#[test]
fn ps_lists_the_agent_and_stop_ends_it() {
    let c = start("attach-ps");
    let ids = c.live_ids();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let (code, table, _) = c.run(&["ps"]);
    assert_eq!(code, Some(0));
    assert!(table.contains(&ids[0]) && table.contains("e2e"), "{table}");
    assert!(table.contains("idle"), "{table}");
    let pids = c.agent_pids();
    let (code, out, err) = c.run(&["stop", &ids[0]]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("stopped"), "{out}");
    common::assert_all_gone(&pids, "vigil stop");
    let socket = c.tmux.runtime_dir().join(format!("{}.sock", ids[0]));
    assert!(!socket.exists(), "the socket is left");
    c.wait("the agent is gone");
    // Stopping what is not there says so.
    let (code, _, err) = c.run(&["stop", &ids[0]]);
    assert_ne!(code, Some(0));
    assert!(err.contains("no agent is running"), "{err}");
}

#[test]
fn q_then_detach_keeps_the_agent_and_q_then_stop_ends_it() {
    let c = start("attach-q");
    c.send("long-run");
    c.wait("tick-1");
    leave_box(&c);
    c.keys(&["q"]);
    c.wait("1 command running");
    c.keys(&["d"]);
    c.tmux.wait_exit(&c.session, WAIT);
    assert_eq!(c.live_ids().len(), 1, "detach stopped the agent");
    let pids = c.agent_pids();

    c.restart("attach --last");
    c.wait("long-run");
    leave_box(&c);
    c.keys(&["q"]);
    c.wait("leave this console");
    c.keys(&["s"]);
    c.tmux.wait_exit(&c.session, WAIT);
    common::assert_all_gone(&pids, "stop from the q question");
    assert!(c.live_ids().is_empty());
}

#[test]
fn resume_of_a_live_session_attaches_instead_of_starting_a_second_agent() {
    let c = start("attach-resume");
    c.send("hello-one");
    c.wait("echo: hello-one");
    let pids = c.agent_pids();
    c.keys(&["C-c"]);
    c.tmux.wait_exit(&c.session, WAIT);
    c.restart("resume --last");
    c.wait("echo: hello-one");
    assert_eq!(c.agent_pids(), pids, "a second agent was started");
}

#[test]
fn a_dead_agent_leaves_a_stale_socket_that_is_named_with_the_way_back() {
    let c = start("attach-stale");
    let ids = c.live_ids();
    let pids = c.agent_pids();
    // SAFETY: kill(2) on the agent process group this test's vigil started.
    unsafe { libc::kill(-pids[0], libc::SIGKILL) };
    common::assert_all_gone(&pids, "SIGKILL");
    // The console stays readable and says the connection is gone.
    c.wait("agent connection lost");
    let (code, out, err) = c.run(&["ps"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("stale") && out.contains(&ids[0]), "{out}");
    assert!(out.contains(&format!("vigil resume {}", ids[0])), "{out}");
    let (code, _, err) = c.run(&["attach", &ids[0]]);
    assert_ne!(code, Some(0));
    assert!(err.contains("is gone"), "{err}");
    assert!(err.contains(&format!("vigil resume {}", ids[0])), "{err}");
    // Resuming it starts a new agent on the same session.
    leave_box(&c);
    c.keys(&["q"]);
    c.tmux.wait_exit(&c.session, WAIT);
    c.restart(&format!("resume {}", ids[0]));
    // The old screen may still show the model's name while the new agent
    // starts: wait for the agent itself.
    c.wait("resumed session");
    let start = std::time::Instant::now();
    while c.live_ids() != ids && start.elapsed() < WAIT {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(c.live_ids(), ids);
}

#[test]
fn an_agent_that_cannot_start_says_why_and_where_its_log_is() {
    let c = start("attach-fail");
    let (code, out, err) = c.run(&["--ssh", "nobody@127.0.0.1:1"]);
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("the agent could not start"), "{err}");
    let log = err
        .split("its log: ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("no log named: {err}"));
    assert!(std::path::Path::new(log).exists(), "{log}");
    assert!(log.contains("/data/agent-"), "{log}");
}

/// The names in a temporary folder.
fn names(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The sessions on vigil's private tmux server (empty: no server).
fn sessions(c: &Console) -> String {
    c.agent_tmux
        .tmux(&["list-sessions", "-F", "#{session_name}"])
        .trim()
        .to_string()
}

/// Wait until vigil's private tmux server has no session and `tmp` is empty.
fn nothing_left(c: &Console, tmp: &std::path::Path) {
    let left = common::eventually(WAIT, || {
        (sessions(c).is_empty() && names(tmp).is_empty()).then_some(())
    });
    assert!(
        left.is_some(),
        "left behind: sessions {:?}, files {:?}",
        sessions(c),
        names(tmp)
    );
}

/// Stop means stopped: `vigil stop` leaves no tmux session (so no private
/// server, no pane shell) and nothing in `$TMPDIR` (the lock folder, the
/// command folder); the console whose agent was stopped elsewhere says the
/// agent is gone, never that it keeps working.
#[test]
fn stop_leaves_no_tmux_session_nor_temporary_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let env = format!("TMPDIR={}", tmp.path().display());
    let c = Console::start_scenario("attach-clean", SCENARIO, BASE_CONFIG, "", &env);
    c.send("hello-clean");
    c.wait("echo: hello-clean");
    let running = names(tmp.path());
    let command_dir = format!("vigil-{}-", c.agent_tmux.socket);
    assert!(
        running.iter().any(|n| n.starts_with("vigil-locks-"))
            && running.iter().any(|n| n.starts_with(&command_dir)),
        "vigil's folders are in $TMPDIR: {running:?}"
    );
    assert!(!sessions(&c).is_empty(), "the managed session runs");
    let ids = c.live_ids();
    let pids = c.agent_pids();
    let (code, out, err) = c.run(&["stop", &ids[0]]);
    assert_eq!(code, Some(0), "{out}{err}");
    common::assert_all_gone(&pids, "vigil stop");
    nothing_left(&c, tmp.path());
    c.wait("no agent on the other end any more");
    c.keys(&["Escape"]);
    c.wait("┏ conversation");
    c.keys(&["q"]);
    c.tmux.wait_exit(&c.session, WAIT);
    let out = c
        .tmux
        .cmd()
        .args(["capture-pane", "-p", "-J", "-S", "-100", "-t", &c.session])
        .output()
        .expect("capture");
    let said = String::from_utf8_lossy(&out.stdout).replace('\n', "");
    assert!(
        said.contains(&format!("the agent {} is gone", ids[0])),
        "{said}"
    );
    assert!(!said.contains("keeps working"), "{said}");
}

/// An agent killed with SIGKILL cannot clean up; the next agent on the
/// same tmux socket removes what it left (its command folder, its lock),
/// and takes its session with it when it stops.
#[test]
fn what_a_killed_agent_left_goes_with_the_next_start() {
    let tmp = tempfile::tempdir().unwrap();
    let env = format!("TMPDIR={}", tmp.path().display());
    let c = Console::start_scenario("attach-kill9", SCENARIO, BASE_CONFIG, "", &env);
    c.wait("┏ message");
    let before = names(tmp.path());
    let pids = c.agent_pids();
    // SAFETY: kill(2) on the agent process group this test's vigil started.
    unsafe { libc::kill(-pids[0], libc::SIGKILL) };
    common::assert_all_gone(&pids, "SIGKILL");
    c.restart("");
    c.wait("┏ message");
    let after = common::eventually(WAIT, || {
        let now = names(tmp.path());
        before
            .iter()
            .all(|n| n.starts_with("vigil-locks-") || !now.contains(n))
            .then_some(now)
    });
    assert!(
        after.is_some(),
        "the killed agent's folder stayed: {before:?}"
    );
    // Stop: nothing of either agent is left.
    c.keys(&["Escape"]);
    c.wait("┏ conversation");
    c.keys(&["q"]);
    c.wait("leave this console");
    c.keys(&["s"]);
    c.tmux.wait_exit(&c.session, WAIT);
    nothing_left(&c, tmp.path());
}

/// A console attached to a running agent shows what the first one did from
/// the start: the policy in the status bar, and the managed pane in the
/// mirror (its latest capture, not a wait for the next output).
#[test]
fn attach_shows_the_policy_and_the_pane_at_once() {
    let c = start("attach-shows");
    c.send("hello-shows");
    c.wait("echo: hello-shows");
    let first = c.wait_for("the pane in the mirror", |s| {
        !s.contains("waiting for the first capture") && s.contains("policy: auto-approve low")
    });
    assert!(first.contains("┌ mirror"), "{first}");
    c.keys(&["C-d"]);
    c.tmux.wait_exit(&c.session, WAIT);
    c.open("again", "attach --last");
    let screen = c.tmux.wait_text("again", "echo: hello-shows", WAIT);
    assert!(screen.contains("policy: auto-approve low"), "{screen}");
    let mirror = c
        .tmux
        .wait_for("again", "the pane in the mirror", WAIT, |s| {
            !s.contains("waiting for the first capture")
        });
    assert!(mirror.contains("┌ mirror"), "{mirror}");
}
