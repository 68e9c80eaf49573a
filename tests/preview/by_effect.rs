//! End to end through the real binary in tmux: `approval = "by_effect"`.
//! A read-only command returns its real output with no card; commands that
//! would change something (a file, a commit, the network, a secret place)
//! wait with the effect named on the card, and nothing of theirs happened.

use super::common;
use super::console_support as support;

use std::process::Command;

use support::Console;

const CONFIG: &str = "[agent]\napproval = \"by_effect\"\n[console]\nbell = false\n";

/// One shell call per trigger; the model repeats every tool result (also
/// for `pane_shell` and `build_outputs`).
pub(super) fn scenario(calls: &[(&str, &str)]) -> String {
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
    c.answer("n");
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
    // Nobody answers: the output reaches the model (the model's echo, not
    // the live tools pane) only if it was not asked. A trial still running
    // after a moment shows a "trying" card meanwhile, which then goes.
    c.wait_for("the read's output reaching the model", |s| {
        s.contains("TOOL SAID") && s.contains("hello-notes-content")
    });
    c.wait_for("no card left", |s| !s.contains("approvals (1)"));

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
    c.answer("n");
    c.wait_for("the fifth denial", |s| {
        s.matches("denied by operator").count() >= 5 && !s.contains("approvals (1)")
    });
    assert!(
        !c.screen().contains("do-not-show"),
        "a secret reached the screen"
    );
}

/// The trial runs where the real run would: a managed pane `cd`'d elsewhere
/// (unasked: a clean trial of a command that only changes the pane's shell
/// runs it in the pane) is followed.
#[test]
fn a_pane_moved_by_cd_is_followed() {
    let scenario = scenario(&[("cd-cmd", "cd sub"), ("read-here", "cat here.txt")]);
    let c = Console::start_scenario("byeffect-cd", &scenario, CONFIG, "", "");
    let work = c.work();
    std::fs::create_dir(work.join("sub")).unwrap();
    std::fs::write(work.join("sub/here.txt"), "inside-sub-content\n").unwrap();
    c.wait("policy: by effect");
    c.send("cd-cmd");
    // A cold first trial may outlast the moment before its card shows;
    // then the operator's `y` runs it in the pane (tests/pane_shell.rs
    // checks the unasked path).
    std::thread::sleep(std::time::Duration::from_secs(3));
    if c.screen().contains("approvals (1)") {
        c.answer("y");
    }
    c.wait_for("the cd to run in the pane", |s| {
        s.contains("$ cd sub") && s.contains("no pending approvals")
    });
    c.send("read-here");
    c.wait_for("the read in sub reaching the model", |s| {
        s.contains("inside-sub-content")
    });
    c.wait_for("no card left", |s| !s.contains("approvals (1)"));
}

#[test]
fn plain_mode_runs_reads_unasked_and_asks_for_writes() {
    let scenario = scenario(&[("read-cmd", "cat notes.txt"), ("touch-cmd", "touch made")]);
    let c = Console::start_scenario("byeffect-plain", &scenario, CONFIG, "--no-tmux", "");
    let work = c.work();
    std::fs::write(work.join("notes.txt"), "plain-notes-content\n").unwrap();
    c.wait("policy: by effect");
    c.send("read-cmd");
    c.wait_for("the read's output reaching the model", |s| {
        s.contains("TOOL SAID") && s.contains("plain-notes-content")
    });
    c.wait_for("no card left", |s| !s.contains("approvals (1)"));
    asked_with(&c, "touch-cmd", "touch made", "changes 1 file", 1);
    assert!(!work.join("made").exists());
}

/// A trial of `script` in `dir` through the real helper.
fn trial(
    script: &str,
    dir: &std::path::Path,
) -> Result<vigil_protocol::preview::PreviewReport, String> {
    vigil::exec::sandbox::set_helper(common::sandbox_helper_bin());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let opts = vigil::exec::preview::PreviewOptions {
        time_limit: std::time::Duration::from_secs(5),
        ..Default::default()
    };
    rt.block_on(vigil::exec::preview::trial(
        script,
        dir,
        opts,
        vigil::exec::preview::Run::default(),
    ))
    .map(|(report, _)| report)
    .map_err(|e| e.to_string())
}

/// The views' control groups present now.
fn view_groups() -> std::collections::BTreeSet<String> {
    ["/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified"]
        .iter()
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("vigil-view-"))
        .collect()
}

/// No control group made since `before` is left (the helper removes its
/// own when the view ends).
fn no_view_groups_left(before: &std::collections::BTreeSet<String>) {
    // Other tests' views (running beside this one) end within their limits.
    let left = common::eventually(std::time::Duration::from_secs(60), || {
        view_groups().is_subset(before).then_some(())
    });
    assert!(
        left.is_some(),
        "a view's control group was left: {:?}",
        view_groups().difference(before).collect::<Vec<_>>()
    );
}

/// Faults: a fork bomb, a 5 GB write, a process that ignores SIGTERM and a
/// memory bomb are contained in the view and reported (so asked), and
/// nothing of them outlives the trial.
#[test]
fn faults_are_contained_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let before = view_groups();
    let tag = format!("{}.{}", 7, std::process::id());
    let cases = [
        ("f(){ f|f& };f; sleep 1", "process"),
        (
            "head -c 5000000000 /dev/zero > big.bin",
            "fills the view's writable space",
        ),
        (
            &*format!("sh -c 'trap \"\" TERM; exec sleep {tag}' & echo started"),
            "leaves a process running",
        ),
        ("python3 -c 'x = bytearray(3 * 1024**3)'", "memory"),
    ];
    for (script, effect) in cases {
        let report = trial(script, dir.path()).unwrap_or_else(|e| panic!("{script}: {e}"));
        let effects = report.effects().join("; ");
        assert!(effects.contains(effect), "{script}: {effects}");
        assert!(!dir.path().join("big.bin").exists());
    }
    let survivors = common::eventually(std::time::Duration::from_secs(60), || {
        let ps = Command::new("ps").args(["-eo", "args"]).output().unwrap();
        (!String::from_utf8_lossy(&ps.stdout).contains(&tag)).then_some(())
    });
    assert!(survivors.is_some(), "the SIGTERM-ignoring sleep survived");
    no_view_groups_left(&before);
}

/// The view cannot be built (an overlay cannot take a path with a comma):
/// the trial fails with the reason, nothing runs, and the call is asked.
#[test]
fn a_view_that_cannot_start_says_why() {
    // Outside /tmp and home, so the directory itself is a writable root.
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let odd = dir.path().join("a,b");
    std::fs::create_dir(&odd).unwrap();
    let err = trial("touch ran-anyway", &odd).unwrap_err();
    assert!(err.contains("comma"), "{err}");
    assert!(!odd.join("ran-anyway").exists());
}

/// A trial that takes a while shows its card at once ("trying it in the
/// view"); a clean end withdraws the card and its result stands; one with
/// effects fills the card in and waits for the operator.
#[test]
fn a_long_trial_shows_its_card_at_once() {
    let scenario = scenario(&[
        ("slow-read", "sleep 3; cat notes.txt"),
        ("slow-write", "sleep 3; touch late-file"),
    ]);
    let c = Console::start_scenario("byeffect-slow", &scenario, CONFIG, "--no-tmux", "");
    let work = c.work();
    std::fs::write(work.join("notes.txt"), "slow-notes-content\n").unwrap();
    c.wait("policy: by effect");
    c.send("slow-read");
    c.wait_for("the card while the read is tried", |s| {
        s.contains("approvals (1)")
            && s.contains("$ sleep 3; cat notes.txt")
            && s.contains("trying it")
    });
    c.wait_for("the card withdrawn and the read's output", |s| {
        !s.contains("approvals (1)") && s.contains("slow-notes-content") && s.contains("TOOL SAID")
    });
    c.send("slow-write");
    c.wait_for("the card while the write is tried", |s| {
        s.contains("approvals (1)") && s.contains("$ sleep 3; touch late-file")
    });
    c.wait_for("the card filled in with the effect", |s| {
        s.contains("approvals (1)") && s.contains("late-file (empty)")
    });
    c.answer("n");
    c.wait_for("the denial", |s| {
        s.matches("denied by operator").count() >= 1 && !s.contains("approvals (1)")
    });
    assert!(!work.join("late-file").exists());
}

/// What the masks cannot know by name is caught by what the trial saw:
/// a key under an ordinary name and a password in git's config (the
/// output's shape), a folder opened to everyone (its mode), a write to an
/// outside file through `/proc/self/fd` (resolved to the file), a key
/// after tens of MB of output (the whole spill is read). A plain
/// read still runs unasked (the control).
#[test]
fn what_no_mask_names_is_caught_by_what_the_trial_saw() {
    use vigil::tools::shell::{RunShell, ShellConfig};
    use vigil::tools::{Tool, ToolContext, Trial};
    vigil::exec::sandbox::set_helper(common::sandbox_helper_bin());
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    git(work, &["init", "-q"]);
    git(
        work,
        &[
            "remote",
            "add",
            "origin",
            "https://bob:s3cr3t-pw@example.com/x.git",
        ],
    );
    std::fs::write(work.join("README"), "plain words\n").unwrap();
    std::fs::write(
        work.join("deploy_backup"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let target = outside.path().join("f");
    std::fs::write(&target, "keep\n").unwrap();
    let shell = RunShell::new(
        vigil::exec::ExecutionContext::local(),
        ShellConfig::default(),
    );
    let spills = tempfile::tempdir().unwrap();
    let mut ctx = ToolContext::new("t").with_spill_dir(spills.path().to_path_buf());
    ctx.approved_cwd = Some(work.display().to_string());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let trial = |command: &str| {
        let args = serde_json::json!({
            "command": command, "risk": "low", "mutation": false, "privesc": false, "why": "t",
        });
        rt.block_on(shell.trial(&vigil::tools::call_as_sent(&shell, &args.to_string()), &ctx))
    };
    // A file the view may read but not write (/etc is readable):
    // reopened for writing through its descriptor's /proc link.
    let reopen = "exec 3</etc/hostname; echo changed > /proc/self/fd/3".to_string();
    // A file of the machine outside the readable world: it does not
    // exist in the view, and the read is an effect.
    let read_outside = format!("cat {}", target.display());
    // An abstract unix socket outside the view (a listener of this test):
    // the trial's connect is refused and named.
    use std::os::linux::net::SocketAddrExt;
    let listener = std::os::unix::net::UnixListener::bind_addr(
        &std::os::unix::net::SocketAddr::from_abstract_name(format!(
            "vigil-abs-{}",
            std::process::id()
        ))
        .unwrap(),
    )
    .unwrap();
    listener.set_nonblocking(true).unwrap();
    let abstract_connect = format!(
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0vigil-abs-{}\")'",
        std::process::id()
    );
    for (command, effect) in [
        (abstract_connect.as_str(), "tries the network"),
        ("cat deploy_backup", "a private key block"),
        // Past what the scan once read of a spill file (16 MB), and
        // neither in the head nor in the tail the model sees: the scan
        // reads to the end, also within one line longer than its chunk.
        (
            "head -c 17000000 /dev/zero | tr '\\0' a; echo; cat deploy_backup; seq 100000",
            "a private key block",
        ),
        (
            "head -c 21000000 /dev/zero | tr '\\0' a; cat deploy_backup; seq 100000",
            "a private key block",
        ),
        ("git remote -v", "a password in a URL"),
        ("chmod 0777 .git/hooks", "mode 755 → 777"),
        (reopen.as_str(), "writes outside the view's writable places"),
        (read_outside.as_str(), "reads outside the readable places"),
    ] {
        match trial(command) {
            Trial::Asks { why, .. } => assert!(why.contains(effect), "{command}: {why}"),
            Trial::Clean(out) => panic!("{command} ran unasked: {:?}", out.result),
            Trial::InPane(why) => panic!("{command} ran in the pane unasked: {why}"),
            Trial::Outputs(run) => panic!("{command} ran in its outputs unasked: {}", run.names),
        }
    }
    // Without a spill folder the middle of a long output is not kept: not
    // checked, so asked.
    let mut unkept = ToolContext::new("t");
    unkept.approved_cwd = ctx.approved_cwd.clone();
    let args = serde_json::json!({
        "command": "head -c 300000 /dev/zero | tr '\\0' a; echo; seq 100000",
        "risk": "low", "mutation": false, "privesc": false, "why": "t",
    });
    match rt.block_on(shell.trial(
        &vigil::tools::call_as_sent(&shell, &args.to_string()),
        &unkept,
    )) {
        Trial::Asks { why, .. } => assert!(why.contains("could not be checked"), "{why}"),
        _ => panic!("a long output nobody kept ran unasked"),
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
    assert!(
        listener.accept().is_err(),
        "the abstract socket was reached"
    );
    assert!(
        matches!(trial("cat README"), Trial::Clean(_)),
        "the control"
    );
}
