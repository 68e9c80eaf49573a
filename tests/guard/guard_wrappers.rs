//! Rules, hook matchers and the denylist see the program a command runs,
//! however it is wrapped: through the real `vigil exec --json` binary
//! against a scripted model, each wrapper form (and nested ones) × {a
//! `deny` rule, a decide hook's matcher, the denylist} × {`ask`,
//! `auto_low`, `by_effect`, `approve_all`}: denied or asked, never run (a
//! real canary file the command would delete is still there). Each guard ×
//! mode also runs the plain form, and the plain form with no guard under
//! `approve_all` deletes its canary: the harness can see a call run.
//! A command whose program cannot be told (`$CMD`, `eval "$X"`) is asked
//! under every mode where a guard could apply, the card saying why.
//!
//! The pure table (every wrapper form) is in `crates/shell/src/runs_tests.rs`
//! and `crates/policy/src/rules/tests.rs`.

use super::hooks_common;

use hooks_common::{Home, Run, one_command, script};

/// The wrapper forms; `{}` is the canary's path.
const FORMS: &[&str] = &[
    "rm -f {}",
    "env -i A=1 rm -f {}",
    "timeout 5 rm -f {}",
    "nice -n 5 nohup rm -f {}",
    "command rm -f {}",
    "busybox rm -f {}",
    "echo {} | xargs -r rm -f",
    "find {} -maxdepth 0 -exec rm -f {} \\;",
    "sh -c 'rm -f {}'",
    "eval 'rm -f {}'",
    "sudo env timeout 5 sh -c 'xargs rm -f {}' </dev/null",
    "sudo -u root stdbuf -oL rm -f {}",
];

/// The approval modes: config line and extra flags.
const MODES: &[(&str, &str, &[&str])] = &[
    ("ask", "approval = \"ask\"", &[]),
    ("auto_low", "approval = \"auto_low\"", &[]),
    ("by_effect", "approval = \"by_effect\"", &[]),
    ("approve_all", "approval = \"ask\"", &["--auto-approve"]),
];

#[derive(Clone, Copy, Debug)]
enum Guard {
    Rule,
    Hook,
    Denylist,
}

/// The config for `guard` on `rm` under `mode`'s line.
fn config(home: &Home, guard: Guard, mode: &str) -> String {
    let guard = match guard {
        Guard::Rule => "[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"deny\"\n".to_string(),
        Guard::Hook => {
            let hook = script(
                home,
                "no-rm.sh",
                "cat >/dev/null\necho '{\"version\":1,\"decision\":\"deny\",\"reason\":\"no rm\"}'",
            );
            format!(
                "[[hooks.decide]]\nname = \"no-rm\"\ncommand = {hook}\nmatch = {{ command = [\"rm\"] }}\n"
            )
        }
        Guard::Denylist => "[tools]\nshell_denylist = [\"rm\"]\n".to_string(),
    };
    // `[agent]` first: the guard may open another table.
    format!("[agent]\n{mode}\n{guard}")
}

/// What happened to the call: denied (by whom), asked, or run.
fn fate(run: &Run) -> String {
    if let Some(r) = run.of("approval_resolved").first() {
        let d = r["decision"]["decision"].as_str().unwrap_or("");
        if d.starts_with("deny") {
            return format!("denied by {}", r["decided_by"]["by"]);
        }
    }
    if run.code == 3 {
        return "asked".into();
    }
    let text = run
        .of("tool_completed")
        .first()
        .map(|e| e.to_string())
        .unwrap_or_default();
    if text.contains("denylist") {
        return "refused by the denylist".into();
    }
    format!("ran (exit {}): {text}", run.code)
}

async fn row(guard: Guard) {
    let home = Home::new();
    let mut failures = Vec::new();
    for (mode, line, flags) in MODES {
        let cfg = config(&home, guard, line);
        for (i, form) in FORMS.iter().enumerate() {
            let canary = home.file(&format!("canary-{mode}-{i}"));
            std::fs::write(&canary, "keep").unwrap();
            let command = form.replace("{}", &canary.display().to_string());
            let run = home.exec(&cfg, &one_command(&command), flags).await;
            let fate = fate(&run);
            if !canary.exists() || fate.starts_with("ran") {
                failures.push(format!("{guard:?} × {mode} × `{command}`: {fate}"));
            }
            let _ = std::fs::remove_file(&canary);
        }
    }
    assert!(
        failures.is_empty(),
        "ran past the guard:\n{}",
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_rule_sees_every_wrapper_in_every_mode() {
    row(Guard::Rule).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_matcher_sees_every_wrapper_in_every_mode() {
    row(Guard::Hook).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_denylist_sees_every_wrapper_in_every_mode() {
    row(Guard::Denylist).await;
}

/// `command` under approve-all with no guard at all (the controls).
async fn unguarded(home: &Home, command: &str) -> Run {
    home.exec(
        "[agent]\napproval = \"ask\"\n",
        &one_command(command),
        &["--auto-approve"],
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plain_form_runs_when_nothing_guards_it() {
    let home = Home::new();
    let canary = home.file("canary");
    std::fs::write(&canary, "x").unwrap();
    let command = format!("env -i A=1 rm -f {}", canary.display());
    let run = unguarded(&home, &command).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!canary.exists(), "the control ran: {}", fate(&run));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_cannot_be_told_is_asked_with_the_reason() {
    let home = Home::new();
    let allow = script(
        &home,
        "yes.sh",
        "cat >/dev/null\necho '{\"version\":1,\"decision\":\"allow\"}'",
    );
    let allow_hook = format!(
        "[agent]\napproval = \"ask\"\n[[hooks.decide]]\nname = \"yes\"\ncommand = {allow}\n\
         match = {{ command = [\"rm\"] }}\n"
    );
    for guard in [Guard::Rule, Guard::Hook, Guard::Denylist] {
        // The hook here allows what it sees: the unknown program is asked anyway.
        let cfg = match guard {
            Guard::Hook => allow_hook.clone(),
            _ => config(&home, guard, "approval = \"ask\""),
        };
        for command in [
            "X=rm; $X -f /nonexistent-vigil",
            "eval \"$VIGIL_NOPE -f /nonexistent-vigil\"",
            "sh -c \"$VIGIL_NOPE\"",
        ] {
            let run = home
                .exec(&cfg, &one_command(command), &["--auto-approve"])
                .await;
            assert_eq!(run.code, 3, "{guard:?} `{command}`: {}", fate(&run));
            let request = run.request();
            let why = request["facts"]["trial"].as_str().unwrap_or_default();
            assert!(
                why.starts_with("cannot tell which program runs"),
                "{guard:?} `{command}`: {request}"
            );
            assert!(run.of("tool_started").is_empty(), "{guard:?} `{command}`");
        }
    }
    // No guard: approve-all runs it as before.
    let run = home
        .exec(
            "[agent]\napproval = \"ask\"\n",
            &one_command("X=true; $X"),
            &["--auto-approve"],
        )
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The red team's forms (2026-11-29) where `rm` runs out of the guard's
/// sight: under approve-all with a `deny` rule on `rm` each is asked (the
/// card names the blind spot) and the canary stays; with no guard the
/// same form deletes it (the harness sees a run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_guard_cannot_see_is_asked_even_under_approve_all() {
    let home = Home::new();
    let guarded = config(&home, Guard::Rule, "approval = \"ask\"");
    for form in [
        "trap 'rm -f {}' 0",
        "echo ${VIGIL_UNSET:-$(rm -f {})}",
        "awk 'BEGIN{system(\"rm -f {}\")}'",
        "timeout 3 watch -n .5 rm -f {}",
    ] {
        let canary = home.file("blind-canary");
        std::fs::write(&canary, "keep").unwrap();
        let command = form.replace("{}", &canary.display().to_string());
        let run = home
            .exec(&guarded, &one_command(&command), &["--auto-approve"])
            .await;
        assert_eq!(run.code, 3, "`{command}`: {}", fate(&run));
        let why = run.request()["facts"]["trial"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(why.contains("cannot tell which program runs"), "{why}");
        assert!(canary.exists(), "`{command}` ran past the rule");
        // Control: nothing guards it, approve-all runs it.
        let run = unguarded(&home, &command).await;
        assert!(
            !canary.exists(),
            "the control of `{command}` ran: {}",
            fate(&run)
        );
    }
}
