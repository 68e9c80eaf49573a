//! `vigil resume` as a person uses it, the real binary in tmux: a demo
//! session runs two tools (one by itself, one approved), the operator quits,
//! and `vigil resume --last` shows the earlier conversation and both tool
//! calls with their output, says which model and target it used (the ones
//! recorded), opens a call's output in the viewer, and never replays the
//! demo's first message over the old conversation.

mod common;

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
    tmux.keys("first", &["y"]);
    tmux.wait_for("first", "the turn to end", WAIT, |s| {
        s.contains("guided tour") && s.contains("│ idle")
    });
    tmux.keys("first", &["C-c"]);
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

    // The history lists both calls; Enter opens one's output.
    tmux.keys("again", &["Escape"]);
    std::thread::sleep(Duration::from_millis(100));
    tmux.keys("again", &["h"]);
    let list = tmux.wait_text("again", "history · 2 tool calls", WAIT);
    assert!(
        list.contains("uname -a") && list.contains("mkdir -p"),
        "{list}"
    );
    tmux.keys("again", &["Enter"]);
    let viewer = tmux.wait_text("again", "stamp", WAIT);
    assert!(
        viewer.contains("-rw-"),
        "the mkdir call's output:\n{viewer}"
    );
    tmux.keys("again", &["Escape"]);
    tmux.wait_text("again", "history · 2 tool calls", WAIT);
    tmux.keys("again", &["Up"]);
    tmux.wait_text("again", "›1", WAIT);
    tmux.keys("again", &["Enter"]);
    tmux.wait_text("again", "GNU/Linux", WAIT);

    tmux.keys("again", &["C-c"]);
    assert_eq!(tmux.wait_exit("again", WAIT), "0/");
}
