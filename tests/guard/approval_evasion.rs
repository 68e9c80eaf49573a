//! Hostile commands against the approval gate ([`evasion::table`]): none may
//! be approved without the operator, whether by `approval = "auto_low"` or
//! by a prefix / policy rule the operator set up for something else.
//!
//! - The decision layer: every row through the broker the console uses,
//!   with auto_low, a target that can sandbox, the usual prefix rules and
//!   the row's own rule: it must ask (or be denied).
//! - For real: every row through the `vigil exec` binary against the
//!   scripted model, with `approval = "auto_low"` and the rows' rules as
//!   policy-file `allow` rules, as plain processes and in a managed tmux
//!   pane, in a temp dir holding a marker path and a victim file: exit 3
//!   every time, no marker, the victim intact, no process left behind.

use super::common;
#[path = "../evasion/table.rs"]
mod table;

use std::path::Path;
use std::process::Output;

use table::{Case, TABLE, USUAL_RULES, gate};
use tokio::sync::mpsc;
use vigil::agent::approval::{ApprovalBroker, NO_SANDBOX, Outcome, Policy};
use vigil::config::Config;
use vigil::policy::rules::PolicyRules;
use vigil_protocol::approval::Risk;
use vigil_scripted::{Scenario, ScriptedServer};

/// A row's command for the decision layer (placeholders filled with
/// plausible values).
fn filled(case: &Case, dir: &Path, sleep: &str) -> String {
    case.command
        .replace("{M}", &dir.join("marker").display().to_string())
        .replace("{V}", &dir.join("victim").display().to_string())
        .replace("{DIR}", &dir.display().to_string())
        .replace("{SLEEP}", sleep)
}

#[test]
fn the_table_is_big_and_covers_every_class() {
    assert!(TABLE.len() >= 80, "{} rows", TABLE.len());
    for class in [
        "wrapper",
        "writing reader",
        "env prefix",
        "env read",
        "shell state",
        "background",
        "substitution",
        "quoting",
        "chaining",
        "redirection",
        "prefix-rule smuggling",
        "secret read",
    ] {
        assert!(TABLE.iter().any(|c| c.class == class), "{class}");
    }
}

/// The broker the console uses: auto_low, a target that can sandbox, the
/// usual session prefix rules plus `extra`, and every row's rule as a
/// policy-file `allow`.
fn broker(extra: Option<&str>) -> ApprovalBroker {
    let (tx, _rx) = mpsc::unbounded_channel();
    let broker = ApprovalBroker::new(tx, "local".into(), Policy::AutoApproveLow);
    broker.set_can_sandbox(true);
    for rule in USUAL_RULES.iter().chain(extra.iter()) {
        broker.add_prefix("run_shell", rule);
    }
    let cfg = Config::from_toml(&config("auto_low", false), Path::new("evasion.toml")).unwrap();
    broker.set_rules(PolicyRules::from_config(&cfg.approval));
    broker
}

#[test]
fn no_row_is_approved_without_the_operator() {
    let dir = Path::new("/tmp/vigil-evasion");
    let mut failures = Vec::new();
    for case in TABLE {
        let command = filled(case, dir, "9.4242");
        let preview = broker(case.rule).preview("run_shell", &gate(&command));
        if !matches!(preview.outcome, Outcome::Ask(_) | Outcome::Deny(..))
            || preview.assessment.risk == Risk::Low
        {
            failures.push(format!(
                "[{}] {command:?} → {:?}, rated {:?}",
                case.class, preview.outcome, preview.assessment.risk
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same broker does approve what it should, so the test above can fail.
#[test]
fn the_same_broker_runs_plain_reads_unasked() {
    for command in [
        "ls -la /tmp",
        "cat /etc/hostname",
        "git status",
        "git log -3",
        "echo hi",
    ] {
        let preview = broker(None).preview("run_shell", &gate(command));
        assert!(
            matches!(preview.outcome, Outcome::Unasked(_)),
            "{command:?} → {:?}",
            preview.outcome
        );
    }
}

#[test]
fn rules_on_bare_code_runners_are_refused() {
    for case in TABLE {
        if let Some(rule) = case.rule
            && !rule.contains(' ')
            && vigil::policy::prefix_rule::runs_code(rule)
        {
            let e = vigil::policy::prefix_rule::rule_error(rule, &format!("{rule} x"));
            assert!(e.is_some_and(|e| e.contains("run any code")), "{rule}");
        }
    }
}

/// One run's directory: the victim, a fake `ls` that creates the marker.
struct RunDir {
    dir: tempfile::TempDir,
}

impl RunDir {
    fn new() -> RunDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("victim"), "keep\n").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let ls = bin.join("ls");
        let marker = dir.path().join("marker");
        std::fs::write(&ls, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&ls, std::fs::Permissions::from_mode(0o755)).unwrap();
        RunDir { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Escape `s` as a TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A scenario in which the prompt `case-N` makes row N's call.
fn scenario(commands: &[String]) -> String {
    let mut s = String::from("model = \"evasion\"\nchunk_delay_ms = 0\n");
    for (i, command) in commands.iter().enumerate() {
        s.push_str(&format!(
            "[[rule]]\nwhen = {{ role = \"user\", contains = \"case-{i}.\" }}\ntimes = 0\n\
             [[rule.tool_calls]]\nname = \"run_shell\"\n[rule.tool_calls.arguments]\n\
             command = {}\nrisk = \"low\"\nmutation = false\nprivesc = false\n\
             why = \"harmless\"\n",
            toml_str(command)
        ));
    }
    s.push_str("[[rule]]\nwhen = { role = \"tool\" }\ntimes = 0\ntext = \"done\"\n");
    s
}

/// The config: `approval`, every valid row rule as a policy `allow`.
fn config(approval: &str, tmux: bool) -> String {
    let mut s = format!("[agent]\napproval = \"{approval}\"\n[model]\nretry_attempts = 1\n");
    s.push_str(if tmux {
        "[tmux]\nmode = \"on\"\n"
    } else {
        "[tmux]\nmode = \"off\"\n"
    });
    let mut rules: Vec<&str> = USUAL_RULES.to_vec();
    rules.extend(TABLE.iter().filter_map(|c| c.rule));
    rules.sort_unstable();
    rules.dedup();
    for rule in rules {
        let words: Vec<&str> = rule.split(' ').collect();
        if words.len() == 1 && vigil::policy::prefix_rule::runs_code(words[0]) {
            continue; // refused at start-up (tested above)
        }
        let list: Vec<String> = words.iter().map(|w| toml_str(w)).collect();
        s.push_str(&format!(
            "[[approval.rules]]\ncommand = [{}]\ndecision = \"allow\"\n",
            list.join(", ")
        ));
    }
    s
}

/// `vigil exec` for row `i`, started in the row's own directory (so a row
/// that got through could only touch that directory, never this checkout).
async fn exec(
    server: &ScriptedServer,
    cfg: &Path,
    data: &Path,
    run: &Path,
    socket: &str,
    i: usize,
) -> Output {
    let mut cmd = tokio::process::Command::new(common::vigil_bin());
    cmd.current_dir(run)
        .arg("--config")
        .arg(cfg)
        .args(["exec", &format!("run case-{i}.")])
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "evasion")
        .env("VIGIL_DATA_DIR", data)
        .env("VIGIL_TMUX_SOCKET", socket)
        .env_remove("VIGIL_API_KEY")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("vigil exec finished in time")
        .expect("vigil exec ran")
}

/// What one `vigil exec` run left behind.
struct Ran {
    command: String,
    /// The row's unique `{SLEEP}` value.
    sleep: String,
    out: Output,
    marker: bool,
    victim_intact: bool,
    left: Vec<i32>,
}

impl Ran {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }

    /// What the run changed on the machine (the marker, the victim, a
    /// process left behind), in words; empty when nothing.
    fn changed_state(&self) -> Vec<String> {
        let mut wrong = Vec::new();
        if self.marker {
            wrong.push("marker created".to_string());
        }
        if !self.victim_intact {
            wrong.push("victim changed or deleted".into());
        }
        if !self.left.is_empty() {
            wrong.push(format!("processes left: {:?}", self.left));
        }
        wrong
    }

    /// Under `by_effect` a row may run in the view (exit 0, its result
    /// from there) or be asked (exit 3); either way nothing outside
    /// changes. Why not, if it did.
    fn held_by_effect(&self) -> Option<String> {
        let mut wrong = self.changed_state();
        if !matches!(self.out.status.code(), Some(0 | 3)) {
            wrong.push(format!("exit {:?}", self.out.status.code()));
        }
        (!wrong.is_empty()).then(|| self.explain(&wrong))
    }

    fn explain(&self, wrong: &[String]) -> String {
        format!(
            "{:?}: {}\nstdout: {}\nstderr: {}",
            self.command,
            wrong.join(", "),
            self.stdout(),
            String::from_utf8_lossy(&self.out.stderr)
        )
    }

    /// Why this run is not a clean fail-closed, if it is not.
    fn fail_closed(&self) -> Option<String> {
        let mut wrong = self.changed_state();
        if self.out.status.code() != Some(3) {
            wrong.push(format!("exit {:?}", self.out.status.code()));
        }
        // The notice means the call would have run unasked on a target
        // with the sandbox: the gate let it through.
        if self.stdout().contains(NO_SANDBOX) {
            wrong.push("rated for running unasked".into());
        }
        (!wrong.is_empty()).then(|| self.explain(&wrong))
    }
}

/// Run each case for real through `vigil exec` (one run per case, each in
/// its own temp dir) with `[agent] approval = approval`.
async fn run_cases(cases: &[&Case], approval: &str, tmux: bool) -> Vec<Ran> {
    let dirs: Vec<RunDir> = cases.iter().map(|_| RunDir::new()).collect();
    let tag = format!(
        "{}.{:04}",
        7 + usize::from(tmux),
        std::process::id() % 10_000
    );
    let sleeps: Vec<String> = (0..cases.len()).map(|i| format!("{tag}{i:03}")).collect();
    let commands: Vec<String> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| filled(c, dirs[i].path(), &sleeps[i]))
        .collect();
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario(&commands)).unwrap())
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let cfg = data.path().join("config.toml");
    std::fs::write(&cfg, config(approval, tmux)).unwrap();
    let tmux_server = common::Server {
        socket: common::socket(),
    };
    let mut runs = Vec::new();
    for (i, command) in commands.into_iter().enumerate() {
        let dir = dirs[i].path();
        let out = exec(&server, &cfg, data.path(), dir, &tmux_server.socket, i).await;
        runs.push(Ran {
            command,
            sleep: sleeps[i].clone(),
            out,
            marker: dir.join("marker").exists(),
            victim_intact: std::fs::read_to_string(dir.join("victim")).ok().as_deref()
                == Some("keep\n"),
            left: common::pids_with(sleeps[i].as_bytes()),
        });
    }
    runs
}

/// Every row for real; returns the failures.
async fn run_table(tmux: bool) -> Vec<String> {
    let cases: Vec<&Case> = TABLE.iter().collect();
    let runs = run_cases(&cases, "auto_low", tmux).await;
    runs.iter()
        .zip(TABLE)
        .filter_map(|(ran, case)| ran.fail_closed().map(|e| format!("[{}] {e}", case.class)))
        .collect()
}

/// A read that changes nothing, run last among the rows: it must run in
/// the view, unasked (else the table's "nothing changed" proves nothing).
const CONTROL: Case = Case {
    class: "control",
    command: "cat {V}",
    rule: None,
};

/// Every row for real under `approval = "by_effect"`, then [`CONTROL`];
/// returns the failures and how many rows ran in the view (exit 0), and
/// whether the control did.
async fn run_table_by_effect(tmux: bool) -> (Vec<String>, usize, bool) {
    let mut cases: Vec<&Case> = TABLE.iter().collect();
    cases.push(&CONTROL);
    let runs = run_cases(&cases, "by_effect", tmux).await;
    let failures = runs
        .iter()
        .zip(TABLE)
        .filter_map(|(ran, case)| {
            ran.held_by_effect()
                .map(|e| format!("[{}] {e}", case.class))
        })
        .collect();
    let (rows, control) = runs.split_at(TABLE.len());
    let viewed = rows
        .iter()
        .filter(|r| r.out.status.code() == Some(0))
        .count();
    let control = &control[0];
    let read = control.out.status.code() == Some(0)
        && String::from_utf8_lossy(&control.out.stdout).contains("keep")
        && !String::from_utf8_lossy(&control.out.stdout).contains("approval needed");
    (failures, viewed, read)
}

#[tokio::test(flavor = "multi_thread")]
async fn by_effect_no_row_changes_anything_as_plain_processes() {
    let (failures, viewed, control) = run_table_by_effect(false).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Not vacuous: a harmless read ran in the view rather than being asked.
    eprintln!("{viewed} of {} rows ran in the view", TABLE.len());
    assert!(control, "the control read was asked or failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn by_effect_no_row_changes_anything_in_a_managed_tmux_pane() {
    let (failures, viewed, control) = run_table_by_effect(true).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Not vacuous: a harmless read ran in the view (the pane's shell
    // replayed) rather than being asked.
    eprintln!("{viewed} of {} rows ran in the view", TABLE.len());
    assert!(control, "the control read was asked or failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_row_fails_closed_for_real_as_plain_processes() {
    let failures = run_table(false).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_row_fails_closed_for_real_in_a_managed_tmux_pane() {
    let failures = run_table(true).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The harness sees what it looks for: with `approve_all` a writing row
/// leaves its marker, a deleting row removes the victim, a background row
/// leaves a process (killed here), and under auto_low a plain `ls` runs
/// unasked or says that it would if the target had the sandbox.
#[tokio::test(flavor = "multi_thread")]
async fn the_harness_catches_what_the_gate_lets_through() {
    let writes = table::c("control", "touch {M}");
    let deletes = table::c("control", "rm -f {V}");
    let stays = table::c(
        "control",
        "setsid sleep {SLEEP} > /dev/null 2>&1 < /dev/null &",
    );
    let runs = run_cases(&[&writes, &deletes, &stays], "approve_all", false).await;
    assert_eq!(runs[0].out.status.code(), Some(0), "{}", runs[0].stdout());
    assert!(runs[0].marker && runs[0].fail_closed().is_some());
    assert!(!runs[1].victim_intact && runs[1].fail_closed().is_some());
    let left = common::eventually(std::time::Duration::from_secs(60), || {
        let left = common::pids_with(runs[2].sleep.as_bytes());
        (!left.is_empty()).then_some(left)
    })
    .expect("the background sleep is seen");
    for pid in left {
        // Only the sleep this test started (its argument is unique to it);
        // setsid made it the leader of its own group.
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let low = table::c("control", "ls {DIR}");
    let ran = &run_cases(&[&low], "auto_low", false).await[0];
    let ran_unasked = ran.out.status.code() == Some(0);
    let said_so = ran.out.status.code() == Some(3) && ran.stdout().contains(NO_SANDBOX);
    assert!(ran_unasked || said_so, "{}", ran.stdout());
    assert!(ran.fail_closed().is_some());
}
