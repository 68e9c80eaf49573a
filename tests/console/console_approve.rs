//! End-to-end: the approve job through the real binary in tmux — deny with
//! a reason the model reads, edit then run, approve a command prefix for the
//! session, and switching the policy.

use super::common;
use super::console_support as support;

use std::time::Duration;

use support::{BASE_CONFIG, Console};

#[test]
fn deny_with_reason_reaches_the_model() {
    let c = Console::start("deny", BASE_CONFIG, "", "");
    c.send("gate-me");
    c.wait("approvals (1)");
    c.wait("vigil: medium");
    c.answer("r");
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
    c.answer("e");
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
    c.answer("a");
    c.wait("this exact command");
    c.keys(&["Enter"]);
    c.wait("TOOL SAID");
    // Approved for the session: the same command runs without asking.
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

/// A scenario of gated shell calls, `(trigger, command)`, whose results the
/// model repeats.
fn gated_scenario(calls: &[(&str, &str)]) -> String {
    let mut scenario = String::from("model = \"e2e\"\nchunk_delay_ms = 0\n");
    for (trigger, command) in calls {
        scenario += &gated(trigger, command);
    }
    scenario += r#"
[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
"#;
    scenario
}

/// Send `trigger` (a `touch ...` call) and approve the prefix `touch` for
/// the session: `a`, Tab to shorten to the first word, Enter.
fn approve_touch_prefix(c: &Console, trigger: &str) {
    c.send(trigger);
    c.wait("approvals (1)");
    c.answer("a");
    c.wait("this exact command");
    c.keys(&["Tab"]);
    c.wait("commands starting with `touch`");
    c.keys(&["Enter"]);
}

#[test]
fn approve_a_prefix_for_the_session() {
    let scenario = gated_scenario(&[
        ("first-stamp", "touch stamp-one"),
        ("second-stamp", "touch stamp-two"),
        ("other-cmd", "mkdir other-dir"),
        ("chained-stamp", "touch stamp-three; touch chained-ran"),
    ]);
    let c = Console::start_scenario("prefix", &scenario, BASE_CONFIG, "", "");
    let exists = |name: &str| {
        let path = c.work().join(name);
        common::eventually(Duration::from_secs(60), || path.exists().then_some(())).is_some()
    };
    let idle = || c.wait_for("the turn to end", |s| s.contains("│ idle"));

    approve_touch_prefix(&c, "first-stamp");
    assert!(exists("stamp-one"), "the approved call ran");
    idle();

    // A later call with that prefix runs without asking (else it would wait
    // for an answer that never comes), and, as it has no fresh decision of
    // the operator, in the kernel sandbox: it cannot write.
    c.send("second-stamp");
    c.wait_for("the covered call's result", |s| {
        assert!(
            !s.contains("approvals (1)"),
            "the prefix rule did not approve the call:\n{s}"
        );
        s.contains("TOOL SAID") && s.contains("stamp-two") && s.contains("ermission denied")
    });
    assert!(
        !c.work().join("stamp-two").exists(),
        "a call approved by a prefix rule wrote outside the sandbox"
    );
    idle();

    // A different command still asks; deny it.
    c.send("other-cmd");
    c.wait("approvals (1)");
    c.answer("n");
    idle();
    assert!(!c.work().join("other-dir").exists());

    // A command chained after the prefix still asks; deny it.
    c.send("chained-stamp");
    c.wait("approvals (1)");
    c.answer("n");
    idle();
    assert!(!c.work().join("stamp-three").exists());
    assert!(!c.work().join("chained-ran").exists());
}

/// Wait until vigil, killed with SIGKILL, is gone (the pane's shell, if it
/// did not exec vigil, reports 128 + 9).
/// Crash: the agent process (its whole group) and the console, SIGKILL.
fn crash(c: &Console) {
    let agents = c.agent_pids();
    assert_eq!(agents.len(), 1, "one agent: {agents:?}");
    // SAFETY: kill(2) on the agent process group and the console this
    // test started.
    unsafe { libc::kill(-agents[0], libc::SIGKILL) };
    assert!(common::gone_within(agents[0], support::WAIT));
    unsafe { libc::kill(c.vigil_pid(), libc::SIGKILL) };
    killed(c);
}

fn killed(c: &Console) {
    let status = c.tmux.wait_exit(&c.session, support::WAIT);
    assert!(
        status == "/9" || status == "137/",
        "vigil exited with {status}"
    );
}

/// Config for the resume test: every gated call asks, so only a restored
/// rule can let one run without the operator.
const ASK_CONFIG: &str = "[agent]\napproval = \"ask\"\n[console]\nbell = false\n";

#[test]
fn session_rules_survive_kill_9_and_resume() {
    let scenario = gated_scenario(&[
        ("first-stamp", "touch stamp-one"),
        ("second-stamp", "touch stamp-two"),
        ("third-stamp", "touch stamp-three"),
        ("exact-log", "echo logged >> exact.log"),
        ("other-cmd", "mkdir other-dir"),
    ]);
    let c = Console::start_scenario("resume", &scenario, ASK_CONFIG, "", "");
    let path = |name: &str| c.work().join(name);
    let logged = || {
        std::fs::read_to_string(path("exact.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let idle = || c.wait_for("the turn to end", |s| s.contains("│ idle"));
    // Whether the call ran (`done` turned true) before any approval was
    // asked for; an unanswered request never lets it run.
    let ran_unasked = |done: &dyn Fn() -> bool| {
        common::eventually(support::WAIT, || {
            if done() {
                Some(true)
            } else if c.screen().contains("approvals (1)") {
                Some(false)
            } else {
                None
            }
        }) == Some(true)
    };

    // Approve the prefix `touch` and the exact (chained) logging command.
    approve_touch_prefix(&c, "first-stamp");
    idle();
    assert!(path("stamp-one").exists(), "the approved call ran");
    c.send("exact-log");
    c.wait("approvals (1)");
    c.answer("a");
    c.wait("this exact command");
    c.keys(&["Enter"]);
    idle();
    assert_eq!(logged(), 1, "the exactly approved call ran");

    // Crash while a third call waits for the operator.
    c.send("other-cmd");
    c.wait("approvals (1)");
    crash(&c);

    // Resume in the console: the rules read back from the log approve
    // nothing until the operator keeps them; then both are back, and
    // nothing more. What they approve has no fresh decision of the operator,
    // so it runs in the kernel sandbox and cannot write.
    c.restart("resume --last");
    c.wait("approve nothing until you keep them: y keep");
    c.keys(&["y"]);
    c.wait("interrupted");
    c.wait("restored session rules approve again");
    c.send("second-stamp");
    assert!(
        ran_unasked(&|| c.screen().contains("cannot touch 'stamp-two'")),
        "the restored prefix rule approved `touch stamp-two`"
    );
    assert!(!path("stamp-two").exists(), "an unasked call wrote");
    idle();
    c.send("exact-log");
    assert!(
        ran_unasked(&|| c.screen().contains("cannot create exact.log")),
        "the restored exact approval ran the logging command again"
    );
    assert_eq!(logged(), 1, "an unasked call wrote");
    idle();
    c.send("other-cmd");
    c.wait("approvals (1)");
    c.answer("n");
    idle();
    assert!(!path("other-dir").exists(), "the denied command ran");

    // Crash the resumed session too; headless resume reads the rules back
    // through the first resume's record and has no operator to ask.
    crash(&c);
    let exec = |prompt: &str, trust: bool| {
        let mut cmd = std::process::Command::new(common::vigil_bin());
        cmd.current_dir(c.work())
            .env("VIGIL_DATA_DIR", c.dir.path().join("data"))
            // `resume --exec` holds the session's lock in the runtime directory.
            .env("VIGIL_RUNTIME_DIR", c.tmux.runtime_dir())
            .env("VIGIL_TMUX_SOCKET", &c.agent_tmux.socket)
            .env("XDG_CONFIG_HOME", c.dir.path().join("xdg"))
            .env_remove("VIGIL_LOG")
            .arg("--config")
            .arg(c.dir.path().join("config.toml"))
            .args(["--base-url", &c.server.base_url(), "--model", "e2e"])
            .args(["resume", "--last", "--exec", prompt, "--json"]);
        if trust {
            cmd.arg("--trust-session-rules");
        }
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .expect("vigil ran");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), stdout)
    };
    // Without the flag, restored rules approve nothing: no operator, exit 3.
    let (code, out) = exec("third-stamp", false);
    assert_eq!(code, Some(3), "{out}");
    // With it, they do, and what they approve runs sandboxed.
    let (code, out) = exec("third-stamp", true);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("cannot touch"), "prefix rule, headless: {out}");
    assert!(
        !path("stamp-three").exists(),
        "an unasked call wrote: {out}"
    );
    let (code, out) = exec("exact-log", true);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("cannot create exact.log"), "{out}");
    assert_eq!(logged(), 1, "exact approval, headless: {out}");
    // A command no rule covers fails closed (exit 3), and nothing ran.
    let (code, out) = exec("other-cmd", true);
    assert_eq!(code, Some(3), "{out}");
    assert!(!path("other-dir").exists());
}

/// Keys act only where the operator looked: a call arriving leaves the
/// keyboard in the message box (typed `yes do it` is a message); `y` in
/// another pane answers nothing and says where approvals are answered; in
/// the approvals pane it approves; afterwards the focus is not the box, so
/// the footer's cancel key never becomes text.
#[test]
fn typed_text_never_answers_and_approval_keys_act_only_in_their_pane() {
    let c = Console::start("focus", BASE_CONFIG, "", "");
    c.send("gate-me");
    c.wait("approvals (1)");
    let screen = c.wait("┏ message");
    assert!(screen.contains("Tab approvals"), "{screen}");
    c.type_text("yes do it");
    c.keys(&["Enter"]);
    c.wait("> yes do it");
    assert!(!c.work().join("gated-ran").exists(), "typed text approved");
    // The conversation pane: `y` answers nothing.
    c.keys(&["Escape"]);
    c.wait("┏ conversation");
    c.keys(&["y"]);
    c.wait("approvals are answered in their pane: Tab moves there");
    assert!(!c.work().join("gated-ran").exists(), "y approved unseen");
    assert!(c.screen().contains("approvals (1)"));
    c.answer("y");
    c.wait("TOOL SAID");
    // The focus left the emptied queue for the conversation, not the box.
    c.wait("┏ conversation");
    c.keys(&["x"]);
    let screen = c.wait_for("the cancel key's answer", |s| {
        s.contains("nothing is running to cancel") || s.contains("cancel the running turn?")
    });
    assert!(screen.contains("type a message · Enter sends"), "{screen}");
    assert!(c.work().join("gated-ran").exists(), "the approved call ran");
}

/// At 40×12 a waiting approval keeps a banner line; `y` answers only once
/// Tab showed its card.
#[test]
fn a_tiny_terminal_shows_the_waiting_approval_and_y_needs_its_card() {
    let c = Console::start("tiny", BASE_CONFIG, "", "");
    let resized = c
        .tmux
        .cmd()
        .args(["resize-window", "-t", &c.session, "-x", "40", "-y", "12"])
        .status()
        .expect("tmux resize-window");
    assert!(resized.success());
    c.wait("┏ message");
    c.send("gate-me");
    c.wait("⚠ 1 approval waiting (Tab shows it)");
    c.keys(&["Escape"]);
    c.wait("┏ conversation");
    c.keys(&["y"]);
    c.wait("approvals are answered in their");
    assert!(!c.work().join("gated-ran").exists(), "y approved unseen");
    c.keys(&["Tab"]);
    c.wait("┏ approvals (1)");
    c.wait("touch gated-ran");
    c.keys(&["y"]);
    let ran = common::eventually(Duration::from_secs(60), || {
        c.work().join("gated-ran").exists().then_some(())
    });
    assert!(ran.is_some(), "y on the shown card approved it");
}

/// A command on the operator's denylist is refused without asking (as
/// config.example.toml says): no approval, nothing ran, the model told.
#[test]
fn a_denylisted_command_is_refused_without_asking() {
    let scenario = gated_scenario(&[("listed-cmd", "touch denied-ran")]);
    let config = format!("{BASE_CONFIG}[tools]\nshell_denylist = [\"touch denied-ran\"]\n");
    let c = Console::start_scenario("denylist", &scenario, &config, "", "");
    c.send("listed-cmd");
    let screen = c.wait_for("the model told of the refusal", |s| {
        s.contains("TOOL SAID") && s.contains("│ idle")
    });
    assert!(!screen.contains("approvals (1)"), "{screen}");
    assert!(
        screen.contains("refused without asking"),
        "the refusal is shown:\n{screen}"
    );
    assert!(
        !c.work().join("denied-ran").exists(),
        "a listed command ran"
    );
    let log = std::fs::read_dir(c.dir.path().join("data/sessions"))
        .expect("sessions")
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("events.jsonl")).ok())
        .collect::<String>();
    assert!(log.contains("refused without asking"), "recorded:\n{log}");
    assert!(!log.contains("approval_requested"), "asked anyway:\n{log}");
}

/// After a failed turn, `R` retries: the status bar says running and the
/// cancel key cancels it; "cancelling the turn…" goes with the turn.
#[test]
fn a_retried_turn_is_running_and_cancellable() {
    let scenario = r#"
model = "e2e"
chunk_delay_ms = 0

[[rule]]
when = { role = "user", contains = "fail-me" }
times = 1
status = 400
error_message = "scripted refusal"

[[rule]]
when = { role = "user", contains = "fail-me" }
times = 1
text = "Sleeping now."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "sleep 30"
risk = "low"
mutation = false
privesc = false
why = "e2e retry"

[[rule]]
when = { role = "tool" }
times = 0
text = "TOOL SAID: {last_tool}"
"#;
    let c = Console::start_scenario("retry", scenario, BASE_CONFIG, "", "");
    c.send("fail-me");
    c.wait_for("the failed turn to end", |s| {
        s.contains("turn failed") && s.contains("│ idle")
    });
    c.keys(&["Escape"]);
    c.wait("┏ conversation");
    c.keys(&["R"]);
    c.wait_for("the retried turn running", |s| {
        s.contains("● running") && s.contains("Sleeping now.")
    });
    c.keys(&["x"]);
    c.wait("press x again to cancel");
    c.keys(&["x"]);
    let screen = c.wait_for("the turn cancelled", |s| {
        s.contains("│ idle") && s.contains("cancelled")
    });
    assert!(!screen.contains("nothing is running"), "{screen}");
    assert!(!screen.contains("cancelling the turn"), "{screen}");
}
