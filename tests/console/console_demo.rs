//! The console as a person uses it: the real binary with `--demo` inside a
//! detached tmux session; keys are sent with send-keys and the screen is read
//! with capture-pane.

use super::common;

use std::time::Duration;

use common::demo::DemoDir;
use common::{Tmux, vigil_bin};

const WAIT: Duration = Duration::from_secs(30);

/// Starts the demo in `tmux`; returns the guard of vigil's own private tmux
/// server (where the agent's managed pane lives) and of the demo's folder.
fn start_demo(tmux: &Tmux, data: &std::path::Path) -> (common::Server, DemoDir) {
    let demo_dir = DemoDir::take();
    let agent_tmux = common::Server {
        socket: common::socket(),
    };
    let cmd = format!(
        "VIGIL_DATA_DIR={} VIGIL_TMUX_SOCKET={} {} --demo",
        data.display(),
        agent_tmux.socket,
        vigil_bin().display()
    );
    tmux.start("demo", 120, 36, &cmd);
    (agent_tmux, demo_dir)
}

#[test]
fn demo_approve_runs_the_command_and_quit_restores_the_terminal() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("demo-approve");
    let _agent = start_demo(&tmux, data.path());

    // The harmless command runs by itself (vigil rates it low risk) and its
    // output streams into the tools pane.
    tmux.wait_text("demo", "demo model", WAIT);
    let screen = tmux.wait_text("demo", "approvals (1)", WAIT);
    assert!(screen.contains("Linux"), "harmless output shown:\n{screen}");
    assert!(screen.contains("mkdir -p /tmp/vigil-demo"), "{screen}");
    assert!(
        screen.contains("vigil: medium"),
        "own estimate shown:\n{screen}"
    );
    assert_eq!(tmux.display("demo", "#{alternate_on}"), "1");

    // Approve with `y`: it runs, its output shows, then the final answer.
    tmux.answer("demo", "y");
    let screen = tmux.wait_text("demo", "All done.", WAIT);
    assert!(
        screen.contains("stamp"),
        "approved command output:\n{screen}"
    );
    assert!(screen.contains("no pending approvals"), "{screen}");

    // The operator can keep chatting (the message box is `i` away); the
    // demo model says it is scripted.
    tmux.to_message_box("demo");
    tmux.type_text("demo", "hello there");
    tmux.keys("demo", &["Enter"]);
    tmux.wait_text("demo", "You said: hello there", WAIT);

    // Ctrl-C leaves (detaches: the agent keeps working) and leaves the
    // alternate screen.
    tmux.keys("demo", &["C-c"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/", "exit status/signal");
    assert_eq!(tmux.display("demo", "#{alternate_on}"), "0");
}

#[test]
fn demo_deny_tells_the_model_and_nothing_runs() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("demo-deny");
    let _agent = start_demo(&tmux, data.path());
    tmux.wait_text("demo", "approvals (1)", WAIT);
    tmux.answer("demo", "n");
    let screen = tmux.wait_text("demo", "you denied that command", WAIT);
    assert!(screen.contains("denied"), "{screen}");
    assert!(
        !screen.contains("-rw-r--r--"),
        "the denied command did not run:\n{screen}"
    );

    // Typing `q` in the input box types it; outside the box it asks, and
    // `s` stops the agent.
    tmux.to_message_box("demo");
    tmux.type_text("demo", "q");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        tmux.display("demo", "#{pane_dead}"),
        "0",
        "q in the input box must not quit"
    );
    tmux.keys("demo", &["BSpace", "Tab"]);
    tmux.keys("demo", &["q"]);
    tmux.wait_text("demo", "leave this console", WAIT);
    tmux.keys("demo", &["s"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/", "exit status/signal");
    assert_eq!(tmux.display("demo", "#{alternate_on}"), "0");
}

/// Send `next` from the message box and wait for step `n` of the tour.
fn next_step(tmux: &Tmux, n: u32) -> String {
    tmux.to_message_box("demo");
    tmux.type_text("demo", "next");
    tmux.keys("demo", &["Enter"]);
    tmux.wait_text("demo", &format!("Tour {n}/8"), WAIT)
}

/// Wait for the turn to end with nothing left to decide.
fn settled(tmux: &Tmux) -> String {
    tmux.wait_for("demo", "the step to finish", WAIT, |s| {
        s.contains("│ idle") && s.contains("no pending approvals")
    })
}

#[test]
fn the_demo_tour_reaches_every_operator_job() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("demo-tour");
    let _agent = start_demo(&tmux, data.path());
    tmux.wait_text("demo", "approvals (1)", WAIT);
    tmux.answer("demo", "y");
    tmux.wait_text("demo", "guided tour", WAIT);
    settled(&tmux);

    // 1, 2: a write and an edit are reviewed as a diff, then approved.
    next_step(&tmux, 1);
    // The card's own diff line (the tools pane shows the call's arguments
    // too): a frame caught while the card was still being drawn shows
    // "approvals (1)" before its diff.
    let card = tmux.wait_text("demo", "+workers = 2", WAIT);
    assert!(
        card.contains("approvals (1)"),
        "the new file's card:\n{card}"
    );
    tmux.answer("demo", "y");
    settled(&tmux);
    next_step(&tmux, 2);
    let card = tmux.wait_text("demo", "+workers = 4", WAIT);
    assert!(
        card.contains("approvals (1)"),
        "the edited line's card:\n{card}"
    );
    tmux.answer("demo", "y");
    settled(&tmux);
    let notes = std::fs::read_to_string("/tmp/vigil-demo/notes.txt").unwrap_or_default();
    assert!(notes.contains("workers = 4"), "{notes}");

    // 3, 4: a prefix rule for the session, then a call it covers runs by
    // itself.
    next_step(&tmux, 3);
    tmux.wait_text("demo", "approvals (1)", WAIT);
    tmux.answer("demo", "a");
    tmux.wait_text("demo", "this exact command", WAIT);
    tmux.keys("demo", &["Tab"]);
    tmux.wait_text("demo", "commands starting with `cksum`", WAIT);
    tmux.keys("demo", &["Enter"]);
    settled(&tmux);
    next_step(&tmux, 4);
    let screen = tmux.wait_text("demo", "by session rule `cksum …`", WAIT);
    assert!(!screen.contains("approvals (1)"), "{screen}");
    settled(&tmux);

    // 5: deny with a reason the model reads.
    next_step(&tmux, 5);
    tmux.wait_text("demo", "approvals (1)", WAIT);
    tmux.answer("demo", "r");
    tmux.wait_text("demo", "deny with a reason", WAIT);
    tmux.type_text("demo", "keep the demo files");
    tmux.keys("demo", &["Enter"]);
    settled(&tmux);
    assert!(std::path::Path::new("/tmp/vigil-demo/notes.txt").exists());

    // 6: edit the command before it runs.
    next_step(&tmux, 6);
    tmux.wait_text("demo", "approvals (1)", WAIT);
    tmux.answer("demo", "e");
    tmux.wait_text("demo", "edit the command", WAIT);
    tmux.keys("demo", &["BSpace", "BSpace", "BSpace", "BSpace"]);
    tmux.type_text("demo", "demo");
    tmux.keys("demo", &["Enter"]);
    let screen = settled(&tmux);
    assert!(screen.contains("edited by operator"), "{screen}");
    assert!(
        screen.contains("notes.txt"),
        "the edited command ran:\n{screen}"
    );

    // 7: the full output of a cut command, opened and searched.
    next_step(&tmux, 7);
    settled(&tmux);
    // Esc leaves the message box (sent alone: Esc then h would read as Alt-h).
    tmux.keys("demo", &["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys("demo", &["h"]);
    tmux.wait_text("demo", "history ·", WAIT);
    tmux.keys("demo", &["Enter"]);
    tmux.wait_text("demo", "run_shell-stdout", WAIT);
    tmux.keys("demo", &["/"]);
    tmux.type_text("demo", "123456");
    tmux.keys("demo", &["Enter"]);
    tmux.wait_text("demo", "/123456 1/", WAIT);
    for _ in 0..3 {
        tmux.keys("demo", &["Escape"]);
        std::thread::sleep(Duration::from_millis(300));
    }

    // 8: a runaway command, cancelled with x pressed twice.
    next_step(&tmux, 8);
    tmux.wait_text("demo", "running", WAIT);
    tmux.keys("demo", &["Escape"]);
    std::thread::sleep(Duration::from_millis(300));
    tmux.keys("demo", &["x"]);
    std::thread::sleep(Duration::from_millis(200));
    tmux.keys("demo", &["x"]);
    tmux.wait_text("demo", "cancelled", WAIT);
    tmux.keys("demo", &["q"]);
    tmux.wait_text("demo", "leave this console", WAIT);
    tmux.keys("demo", &["s"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/", "exit status/signal");
}
