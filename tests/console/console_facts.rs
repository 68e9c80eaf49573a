//! End-to-end, the real binary in tmux: the card is the truth. A write
//! through a symlink names its real target and the link; a shell command's
//! card says the directory and target it will run in and that a preview is
//! not proof, and its preview runs there too (the managed pane `cd`'d
//! elsewhere: preview and `y` act in the same directory); `a` on a
//! `write_file` approves that exact write, and a later write of other
//! content with the same summary is asked again.

use super::common;
use super::console_support as support;

use support::{BASE_CONFIG, Console};

const SCENARIO: &str = r#"
model = "e2e"
chunk_delay_ms = 0

[[rule]]
when = { role = "user", contains = "write-a" }
times = 0
text = "Writing."
[[rule.tool_calls]]
name = "write_file"
[rule.tool_calls.arguments]
path = "notes.txt"
content = "one\n"

[[rule]]
when = { role = "user", contains = "write-b" }
times = 0
text = "Writing."
[[rule.tool_calls]]
name = "write_file"
[rule.tool_calls.arguments]
path = "notes.txt"
content = "two\n"

[[rule]]
when = { role = "user", contains = "write-link" }
times = 0
text = "Writing."
[[rule.tool_calls]]
name = "write_file"
[rule.tool_calls.arguments]
path = "link.txt"
content = "curl x | sh\n"

[[rule]]
when = { role = "user", contains = "shell-me" }
times = 0
text = "Running."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "touch ran-here"
risk = "medium"
mutation = true
privesc = false
why = "e2e where"

[[rule]]
when = { role = "user", contains = "go-sub" }
times = 0
text = "Changing directory."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "cd sub"
risk = "medium"
mutation = false
privesc = false
why = "e2e cd"

[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
"#;

#[test]
fn a_symlinked_write_shows_its_real_target_on_the_card() {
    let c = Console::start_scenario("facts-link", SCENARIO, BASE_CONFIG, "", "");
    let outside = c.dir.path().canonicalize().unwrap().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let profile = outside.join("profile");
    std::fs::write(&profile, "export PATH=/usr/bin\n").unwrap();
    let link = c.work().canonicalize().unwrap().join("link.txt");
    std::os::unix::fs::symlink(&profile, &link).unwrap();
    c.send("write-link");
    c.wait("approvals (1)");
    // Zoomed, the card has the whole width: the target and the link on
    // one line.
    c.to_approvals();
    c.keys(&["z"]);
    let want = format!("→ {} (via symlink {})", profile.display(), link.display());
    let screen = c.wait(&want);
    assert!(screen.contains("write link.txt"), "{screen}");
    c.answer("n");
    c.keys(&["Escape"]);
    c.wait("TOOL SAID");
    assert_eq!(
        std::fs::read_to_string(&profile).unwrap(),
        "export PATH=/usr/bin\n"
    );
}

#[test]
fn a_shell_card_says_where_it_runs_and_that_a_preview_is_not_proof() {
    let c = Console::start_scenario("facts-in", SCENARIO, BASE_CONFIG, "", "");
    c.send("shell-me");
    c.wait("approvals (1)");
    c.to_approvals();
    c.keys(&["z"]);
    // The managed pane's current directory: vigil's working directory,
    // where the pane's shell started.
    let work = c.work().canonicalize().unwrap();
    let screen = c.wait(&format!("in: {} on tmux", work.display()));
    assert!(screen.contains("a preview is not proof"), "{screen}");
    c.answer("y");
    c.keys(&["Escape"]);
    c.wait("TOOL SAID");
    assert!(work.join("ran-here").exists(), "y ran where the card said");
}

#[test]
fn a_session_rule_on_a_write_covers_only_that_exact_write() {
    let c = Console::start_scenario("facts-rule", SCENARIO, BASE_CONFIG, "", "");
    let notes = c.work().join("notes.txt");
    c.send("write-a");
    c.wait("approvals (1)");
    c.answer("a");
    c.wait("TOOL SAID");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\n");
    // The same write again: covered by the rule, nobody asked.
    c.send("write-a again");
    c.wait_for("the covered write's result", |s| {
        s.matches("TOOL SAID").count() >= 2 && s.contains("│ idle") && !s.contains("approvals (1)")
    });
    // Same path, same length, same summary, other content: asked again.
    c.send("write-b");
    c.wait("approvals (1)");
    let screen = c.screen();
    assert!(screen.contains("write notes.txt (4 bytes)"), "{screen}");
    c.answer("n");
    c.wait_for("the denial's result", |s| {
        s.matches("TOOL SAID").count() >= 3
    });
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\n");
}

#[test]
fn the_preview_runs_where_y_will_run_after_the_pane_moved() {
    let c = Console::start_scenario("facts-cd", SCENARIO, BASE_CONFIG, "", "");
    let work = c.work().canonicalize().unwrap();
    std::fs::create_dir(work.join("sub")).unwrap();
    // The operator approves a `cd` in the shared pane.
    c.send("go-sub");
    c.wait("approvals (1)");
    c.answer("y");
    c.wait("TOOL SAID");
    c.send("shell-me");
    c.wait("approvals (1)");
    c.to_approvals();
    c.keys(&["z"]);
    let sub = work.join("sub");
    c.wait(&format!("in: {} on tmux", sub.display()));
    c.keys(&["v"]);
    let line = format!("A {}/ran-here (empty)", sub.display());
    let card = c.wait_for("the preview in the pane's directory", |s| s.contains(&line));
    assert!(
        !card.contains(&format!("A {}/ran-here", work.display())),
        "{card}"
    );
    assert!(!sub.join("ran-here").exists(), "the preview leaked");
    c.keys(&["Escape"]);
    // `y` only once the zoom is gone: sent together, Escape and `y` arrive
    // as one Alt-y on a busy machine.
    c.wait_for("the card back in its pane", |s| {
        s.contains("┌ conversation") && s.contains("z zoom")
    });
    c.answer("y");
    let ran = common::eventually(std::time::Duration::from_secs(60), || {
        sub.join("ran-here").exists().then_some(())
    });
    assert!(ran.is_some(), "y ran where the preview did");
    assert!(!work.join("ran-here").exists());
}

#[test]
fn a_command_whose_pane_moved_after_the_card_is_refused_not_run_elsewhere() {
    let c = Console::start_scenario("facts-moved", SCENARIO, BASE_CONFIG, "", "");
    let work = c.work().canonicalize().unwrap();
    std::fs::create_dir(work.join("sub")).unwrap();
    c.send("shell-me");
    c.wait("approvals (1)");
    c.to_approvals();
    c.keys(&["z"]);
    c.wait(&format!("in: {} on tmux", work.display()));
    // Someone moves the shared pane after the card was shown.
    c.agent_tmux
        .tmux(&["send-keys", "-t", "vigil-agent", "cd sub", "Enter"]);
    let moved = common::eventually(std::time::Duration::from_secs(60), || {
        let now =
            c.agent_tmux
                .tmux(&["display", "-p", "-t", "vigil-agent", "#{pane_current_path}"]);
        now.trim().ends_with("/sub").then_some(())
    });
    assert!(moved.is_some(), "the pane moved");
    c.answer("y");
    c.keys(&["Escape"]);
    c.wait("TOOL SAID");
    c.wait("its pane is");
    assert!(!work.join("ran-here").exists());
    assert!(
        !work.join("sub/ran-here").exists(),
        "ran where the card did not say"
    );
}
