//! `vigil resume` as a person uses it, the real binary in tmux: a demo
//! session runs two tools (one by itself, one approved), the operator quits,
//! and `vigil resume --last` shows the earlier conversation and both tool
//! calls with their output, says which model and target it used (the ones
//! recorded), opens a call's output in the viewer, and never replays the
//! demo's opening over the old conversation (`next` goes on to the tour). A session whose agent
//! process and console were SIGKILLed mid-call resumes against its recorded model (a scripted
//! server, named only in the first run's environment) with the call
//! marked interrupted.

use super::common;

use std::path::Path;
use std::time::Duration;

use common::{Tmux, vigil_bin};

const WAIT: Duration = Duration::from_secs(30);

fn vigil(data: &Path, args: &str) -> String {
    format!(
        "VIGIL_DATA_DIR={} {} {args}",
        data.display(),
        vigil_bin().display()
    )
}

/// The (one) session's event log.
fn log(data: &Path) -> String {
    let sessions = data.join("sessions");
    let dir = std::fs::read_dir(&sessions)
        .unwrap()
        .flatten()
        .next()
        .expect("one session")
        .path();
    std::fs::read_to_string(dir.join("events.jsonl")).unwrap()
}

/// How many turns the session's log holds.
fn turns(data: &Path) -> usize {
    log(data)
        .lines()
        .filter(|l| l.contains(r#""type":"turn_started""#))
        .count()
}

#[test]
fn resume_shows_the_earlier_conversation_and_tool_calls() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("resume");
    tmux.start("first", 120, 36, &vigil(data.path(), "--demo --no-tmux"));
    tmux.wait_text("first", "approvals (1)", WAIT);
    let _demo_dir = common::demo::DemoDir::take();
    tmux.answer("first", "y");
    tmux.wait_for("first", "the turn to end", WAIT, |s| {
        s.contains("guided tour") && s.contains("│ idle")
    });
    // Leave and stop the agent (q asks: s stops it; C-c would detach).
    // Esc first leaves the message box (q there is a letter).
    tmux.keys("first", &["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys("first", &["q"]);
    tmux.wait_text("first", "leave this console", WAIT);
    tmux.keys("first", &["s"]);
    assert_eq!(tmux.wait_exit("first", WAIT), "0/");
    assert_eq!(turns(data.path()), 1);

    // No --demo, no --no-tmux: the session's record says both.
    tmux.start("again", 120, 36, &vigil(data.path(), "resume --last"));
    let screen = tmux.wait_text("again", "resumed session", WAIT);
    assert!(screen.contains("demo model"), "the demo banner:\n{screen}");
    assert!(
        screen.contains("vigil-demo (scripted) (demo) │ on local"),
        "{screen}"
    );
    assert!(
        log(data.path())
            .contains("resumed with model vigil-demo (scripted) (recorded) on this machine"),
        "the notice says which model and target"
    );
    assert!(screen.contains("All done."), "the conversation:\n{screen}");
    assert!(screen.contains("uname -a"), "the first call:\n{screen}");
    assert!(
        screen.contains("mkdir -p /tmp/vigil-demo"),
        "the second call:\n{screen}"
    );
    assert!(screen.contains("ok exit 0"), "their status:\n{screen}");
    // The demo's first message is not sent again: nothing runs.
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(turns(data.path()), 1, "{}", tmux.screen("again"));
    assert!(tmux.screen("again").contains("│ idle"));

    // The demo continues from there: `next` is the tour, not the opening.
    tmux.type_text("again", "next");
    tmux.keys("again", &["Enter"]);
    tmux.wait_text("again", "Tour 1/8", WAIT);
    tmux.wait_text("again", "approvals (1)", WAIT);
    assert_eq!(turns(data.path()), 2);

    // The history lists the earlier calls; Enter opens one's output. The
    // call arriving left the keyboard in the box: Esc leaves it first.
    tmux.keys("again", &["Escape"]);
    tmux.wait_text("again", "┏ conversation", WAIT);
    tmux.keys("again", &["h"]);
    let list = tmux.wait_text("again", "history · 3 tool calls", WAIT);
    assert!(
        list.contains("uname -a") && list.contains("mkdir -p"),
        "{list}"
    );
    tmux.keys("again", &["Up"]);
    tmux.wait_text("again", "›2", WAIT);
    tmux.keys("again", &["Enter"]);
    let viewer = tmux.wait_text("again", "stamp", WAIT);
    assert!(
        viewer.contains("-rw-"),
        "the mkdir call's output:\n{viewer}"
    );
    tmux.keys("again", &["Escape"]);
    tmux.wait_text("again", "history · 3 tool calls", WAIT);
    tmux.keys("again", &["Up"]);
    tmux.wait_text("again", "›1", WAIT);
    tmux.keys("again", &["Enter"]);
    tmux.wait_text("again", "GNU/Linux", WAIT);

    tmux.keys("again", &["C-c"]);
    assert_eq!(tmux.wait_exit("again", WAIT), "0/");
}

const LONG: &str = r#"
[[rule]]
when = { role = "user", contains = "again" }
text = "A second answer from the recorded model."

[[rule]]
when = { role = "user" }
text = "Running the long one."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "echo started-long; sleep 4; echo finished-long"
risk = "low"
mutation = false
privesc = false
why = "a call the kill interrupts"
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_session_resumes_with_its_model_and_the_interrupted_call_marked() {
    use vigil_scripted::{Scenario, ScriptedServer};
    let server = ScriptedServer::start(Scenario::from_toml_str(LONG).unwrap())
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("resume-killed");
    let first = format!(
        "VIGIL_BASE_URL={} VIGIL_MODEL=test-model {}",
        server.base_url(),
        vigil(data.path(), "--no-tmux --auto-approve")
    );
    tmux.start("first", 120, 36, &first);
    tmux.wait_text("first", "message", WAIT);
    tmux.type_text("first", "run the long one");
    tmux.keys("first", &["Enter"]);
    tmux.wait_text("first", "started-long", WAIT);
    // The whole session dies mid-call: the agent process (and the
    // command in its group) and the console.
    let agents = common::agent_pids(tmux.runtime_dir());
    assert_eq!(agents.len(), 1, "one agent process: {agents:?}");
    // SAFETY: kill(2) on the agent process group this test's vigil started.
    unsafe {
        libc::kill(-agents[0], libc::SIGKILL);
    }
    common::assert_all_gone(&agents, "SIGKILL");
    let pid: i32 = tmux.display("first", "#{pane_pid}").parse().unwrap();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    assert_eq!(comm.trim(), "vigil", "the pane runs vigil itself");
    // SAFETY: kill(2) on the vigil process this test started.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
    tmux.wait_exit("first", WAIT);

    // No model on the command line: the recorded one answers.
    tmux.start("again", 120, 36, &vigil(data.path(), "resume --last"));
    let screen = tmux.wait_text("again", "resumed session", WAIT);
    assert!(screen.contains("test-model │ on local"), "{screen}");
    assert!(screen.contains("> run the long one"), "{screen}");
    assert!(
        screen.contains("interrupted"),
        "the call is marked:\n{screen}"
    );
    assert!(
        screen.contains("interrupted when the session stopped"),
        "{screen}"
    );
    assert!(
        log(data.path()).contains("resumed with model test-model (recorded) on this machine"),
        "the notice says which model and target"
    );
    // The recorded model really answers: a new turn reaches the server.
    tmux.type_text("again", "and again");
    tmux.keys("again", &["Enter"]);
    tmux.wait_text("again", "A second answer from the recorded model.", WAIT);
    tmux.keys("again", &["C-c"]);
    tmux.wait_exit("again", WAIT);
}
