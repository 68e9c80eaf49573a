//! End-to-end: the approve job through the real binary in tmux — deny with
//! a reason the model reads, edit then run, and switching the policy.

mod common;
#[path = "support/console.rs"]
mod support;

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
