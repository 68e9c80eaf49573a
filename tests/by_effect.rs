//! End to end through the real binary in tmux: `approval = "by_effect"`.
//! A read-only command returns its real output with no card; commands that
//! would change something (a file, a commit, the network, a secret place)
//! wait with the effect named on the card, and nothing of theirs happened.

mod common;
#[path = "support/console.rs"]
mod support;

use std::process::Command;

use support::Console;

const CONFIG: &str = "[agent]\napproval = \"by_effect\"\n[console]\nbell = false\n";

/// One shell call per trigger; the model repeats every tool result.
fn scenario(calls: &[(&str, &str)]) -> String {
    let mut s = String::from("model = \"e2e\"\nchunk_delay_ms = 0\n");
    for (trigger, command) in calls {
        s += &format!(
            r#"
[[rule]]
when = {{ role = "user", contains = "{trigger}" }}
times = 0
text = "Running {trigger}."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "{command}"
risk = "medium"
mutation = true
privesc = false
why = "by effect e2e"
"#
        );
    }
    s += r#"
[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
"#;
    s
}

fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@e"])
        .args(args)
        .current_dir(dir)
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

/// Send `trigger`, wait for the card of `command` naming `effect`, deny
/// it, and wait until the tools pane records the `nth` denial (a screen
/// only this denial can make).
fn asked_with(c: &Console, trigger: &str, command: &str, effect: &str, nth: usize) {
    c.send(trigger);
    let card = c.wait_for(&format!("the card of {trigger} naming {effect}"), |s| {
        s.contains("approvals (1)") && s.contains(&format!("$ {command}")) && s.contains(effect)
    });
    assert!(card.contains("asked: tried in the view"), "{card}");
    c.keys(&["n"]);
    c.wait_for(
        &format!("denial {nth} ({trigger}) in the tools pane"),
        |s| s.matches("denied by operator").count() >= nth && !s.contains("approvals (1)"),
    );
}

#[test]
fn only_what_would_change_something_is_asked() {
    let scenario = scenario(&[
        ("read-cmd", "cat notes.txt"),
        ("touch-cmd", "touch made-by-touch"),
        ("sed-cmd", "sed -i s/hello/bye/ notes.txt"),
        (
            "commit-cmd",
            "git -c user.name=a -c user.email=a@b commit -qam change",
        ),
        ("curl-cmd", "curl -s http://127.0.0.1:9/"),
        ("secret-cmd", "cat .env"),
    ]);
    let c = Console::start_scenario("byeffect", &scenario, CONFIG, "", "");
    let work = c.work();
    std::fs::write(work.join("notes.txt"), "hello-notes-content\n").unwrap();
    std::fs::write(work.join(".env"), "API_TOKEN=do-not-show\n").unwrap();
    git(&work, &["init", "-q"]);
    git(&work, &["add", "notes.txt"]);
    git(&work, &["commit", "-qm", "init"]);
    std::fs::write(work.join("notes.txt"), "hello-notes-content\nmore\n").unwrap();
    let head = || {
        let out = Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(&work)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let before = head();
    c.wait("policy: by effect");

    // Read-only: its real output, no card, recorded as run in the view.
    c.send("read-cmd");
    c.wait_for("the read's output reaching the model", |s| {
        assert!(
            !s.contains("approvals (1)"),
            "a read-only command was asked:\n{s}"
        );
        s.contains("TOOL SAID") && s.contains("hello-notes-content")
    });

    asked_with(&c, "touch-cmd", "touch made-by-touch", "changes 1 file", 1);
    assert!(
        !work.join("made-by-touch").exists(),
        "the trial's touch escaped"
    );
    asked_with(&c, "sed-cmd", "sed -i", "M ", 2);
    let notes = std::fs::read_to_string(work.join("notes.txt")).unwrap();
    assert!(notes.contains("hello"), "the trial's sed escaped: {notes}");
    asked_with(&c, "commit-cmd", "git -c", "changes", 3);
    assert_eq!(head(), before, "the trial's commit escaped");
    asked_with(&c, "curl-cmd", "curl -s", "tries the network", 4);
    c.send("secret-cmd");
    let card = c.wait_for("the secret read's card", |s| {
        s.contains("approvals (1)") && s.contains("$ cat .env")
    });
    assert!(card.contains("`secret`"), "{card}");
    c.keys(&["n"]);
    c.wait_for("the fifth denial", |s| {
        s.matches("denied by operator").count() >= 5 && !s.contains("approvals (1)")
    });
    assert!(
        !c.screen().contains("do-not-show"),
        "a secret reached the screen"
    );
}

/// The trial runs where the real run would: a managed pane `cd`'d elsewhere
/// (on the operator's word: `cd` changes the pane's shell, so it is asked)
/// is followed. In plain mode, the same read runs unasked too.
#[test]
fn a_pane_moved_by_cd_is_followed() {
    let scenario = scenario(&[("cd-cmd", "cd sub"), ("read-here", "cat here.txt")]);
    let c = Console::start_scenario("byeffect-cd", &scenario, CONFIG, "", "");
    let work = c.work();
    std::fs::create_dir(work.join("sub")).unwrap();
    std::fs::write(work.join("sub/here.txt"), "inside-sub-content\n").unwrap();
    c.wait("policy: by effect");
    c.send("cd-cmd");
    let card = c.wait_for("the cd card", |s| {
        s.contains("approvals (1)") && s.contains("$ cd sub")
    });
    assert!(card.contains("`shell-state`"), "{card}");
    c.keys(&["y"]);
    c.wait_for("the cd to run", |s| {
        s.matches("TOOL SAID").count() >= 1 && !s.contains("approvals (1)")
    });
    c.send("read-here");
    c.wait_for("the read in sub", |s| {
        assert!(!s.contains("approvals (1)"), "the read was asked:\n{s}");
        s.contains("inside-sub-content")
    });
}

#[test]
fn plain_mode_runs_reads_unasked_and_asks_for_writes() {
    let scenario = scenario(&[("read-cmd", "cat notes.txt"), ("touch-cmd", "touch made")]);
    let c = Console::start_scenario("byeffect-plain", &scenario, CONFIG, "--no-tmux", "");
    let work = c.work();
    std::fs::write(work.join("notes.txt"), "plain-notes-content\n").unwrap();
    c.wait("policy: by effect");
    c.send("read-cmd");
    c.wait_for("the read's output", |s| {
        assert!(!s.contains("approvals (1)"), "the read was asked:\n{s}");
        s.contains("plain-notes-content")
    });
    asked_with(&c, "touch-cmd", "touch made", "changes 1 file", 1);
    assert!(!work.join("made").exists());
}
