//! End-to-end: the approve job through the real binary in tmux — deny with
//! a reason the model reads, edit then run, approve a command prefix for the
//! session, and switching the policy.

mod common;
#[path = "support/console.rs"]
mod support;

use std::time::Duration;

use support::{BASE_CONFIG, Console};

#[test]
fn deny_with_reason_reaches_the_model() {
    let c = Console::start("deny", BASE_CONFIG, "", "");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.wait("vigil: medium");
    c.keys(&["r"]);
    c.wait("deny with a reason");
    // Approval letters typed here are text, not decisions.
    c.type_text("not on a y friday");
    c.keys(&["Enter"]);
    c.wait_for("the model's reply to the reason", |s| {
        s.contains("TOOL SAID") && s.contains("friday")
    });
    assert!(!c.work().join("gated-ran").exists(), "denied command ran");
}

#[test]
fn edit_runs_the_edited_command() {
    let c = Console::start("edit", BASE_CONFIG, "", "");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.keys(&["e"]);
    c.wait("edit the command");
    c.type_text(" edited-too");
    c.keys(&["Enter"]);
    // The model is told the command was edited, and the edited one ran.
    c.wait_for("the edited command's result", |s| {
        s.contains("TOOL SAID") && s.contains("edited_to")
    });
    assert!(c.work().join("gated-ran").exists());
}

#[test]
fn approve_once_and_session_and_the_policy_menu() {
    let c = Console::start("policy", BASE_CONFIG, "", "");
    c.wait("policy: auto-approve low");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.keys(&["a"]);
    c.wait("this exact command");
    c.keys(&["Enter"]);
    c.wait("TOOL SAID");
    // Approved for the session: the same command runs without asking.
    // Answering returned the focus to the message box.
    c.send("gate-me again");
    c.wait_for("second run without a request", |s| {
        s.matches("TOOL SAID").count() >= 2 && s.contains("│ idle")
    });
    // Deny all from the policy menu.
    c.keys(&["Escape"]);
    c.wait("PgUp/PgDn scroll");
    c.keys(&["p"]);
    c.wait("approval policy");
    c.keys(&["4", "Enter"]);
    c.wait("policy: deny all");
}

/// One gated shell call per user message.
fn gated(trigger: &str, command: &str) -> String {
    format!(
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
why = "e2e prefix"
"#
    )
}

#[test]
fn approve_a_prefix_for_the_session() {
    let mut scenario = String::from("model = \"e2e\"\nchunk_delay_ms = 0\n");
    scenario += &gated("first-stamp", "touch stamp-one");
    scenario += &gated("second-stamp", "touch stamp-two");
    scenario += &gated("other-cmd", "mkdir other-dir");
    scenario += &gated("chained-stamp", "touch stamp-three; touch chained-ran");
    scenario += r#"
[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
"#;
    let c = Console::start_scenario("prefix", &scenario, BASE_CONFIG, "", "");
    let exists = |name: &str| {
        let path = c.work().join(name);
        common::eventually(Duration::from_secs(20), || path.exists().then_some(())).is_some()
    };
    let idle = || c.wait_for("the turn to end", |s| s.contains("│ idle"));

    c.send("first-stamp");
    c.wait("approvals (1)");
    c.keys(&["a"]);
    c.wait("this exact command");
    // Shorten to the first word, then confirm.
    c.keys(&["Tab"]);
    c.wait("commands starting with `touch`");
    c.keys(&["Enter"]);
    assert!(exists("stamp-one"), "the approved call ran");
    idle();

    // A later call with that prefix runs without asking (else it would wait
    // for an answer that never comes).
    c.send("second-stamp");
    assert!(exists("stamp-two"), "the prefix rule approved the call");
    idle();

    // A different command still asks; deny it.
    c.send("other-cmd");
    c.wait("approvals (1)");
    c.keys(&["n"]);
    idle();
    assert!(!c.work().join("other-dir").exists());

    // A command chained after the prefix still asks; deny it.
    c.send("chained-stamp");
    c.wait("approvals (1)");
    c.keys(&["n"]);
    idle();
    assert!(!c.work().join("stamp-three").exists());
    assert!(!c.work().join("chained-ran").exists());
}
