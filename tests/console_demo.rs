//! The console as a person uses it: the real binary with `--demo` inside a
//! detached tmux session; keys are sent with send-keys and the screen is read
//! with capture-pane.

mod common;

use std::time::Duration;

use common::{Tmux, vigil_bin};

const WAIT: Duration = Duration::from_secs(30);

/// Starts the demo in `tmux`; returns the guard of vigil's own private tmux
/// server (where the agent's managed pane lives).
fn start_demo(tmux: &Tmux, data: &std::path::Path) -> common::Server {
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
    agent_tmux
}

#[test]
fn demo_approve_runs_the_command_and_quit_restores_the_terminal() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("demo-approve");
    let _agent_tmux = start_demo(&tmux, data.path());

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
    tmux.keys("demo", &["y"]);
    let screen = tmux.wait_text("demo", "All done.", WAIT);
    assert!(
        screen.contains("stamp"),
        "approved command output:\n{screen}"
    );
    assert!(screen.contains("no pending approvals"), "{screen}");

    // The operator can keep chatting; the demo model says it is scripted.
    tmux.type_text("demo", "hello there");
    tmux.keys("demo", &["Enter"]);
    tmux.wait_text("demo", "You said: hello there", WAIT);

    // Ctrl-C quits and leaves the alternate screen.
    tmux.keys("demo", &["C-c"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/", "exit status/signal");
    assert_eq!(tmux.display("demo", "#{alternate_on}"), "0");
}

#[test]
fn demo_deny_tells_the_model_and_nothing_runs() {
    let data = tempfile::tempdir().unwrap();
    let tmux = Tmux::new("demo-deny");
    let _agent_tmux = start_demo(&tmux, data.path());
    tmux.wait_text("demo", "approvals (1)", WAIT);
    tmux.keys("demo", &["n"]);
    let screen = tmux.wait_text("demo", "you denied that command", WAIT);
    assert!(screen.contains("denied"), "{screen}");
    assert!(
        !screen.contains("-rw-r--r--"),
        "the denied command did not run:\n{screen}"
    );

    // Typing `q` in the input box types it; outside the box it quits.
    tmux.type_text("demo", "q");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        tmux.display("demo", "#{pane_dead}"),
        "0",
        "q in the input box must not quit"
    );
    tmux.keys("demo", &["BSpace", "Tab"]);
    tmux.keys("demo", &["q"]);
    assert_eq!(tmux.wait_exit("demo", WAIT), "0/", "exit status/signal");
    assert_eq!(tmux.display("demo", "#{alternate_on}"), "0");
}
