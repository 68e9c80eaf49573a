//! Sandboxed runs for a managed tmux pane on real tmux: exact output in the
//! pane's directory, state left in the shared shell (functions, aliases,
//! `PATH`, traps, `PROMPT_COMMAND`, `LD_PRELOAD`) cannot hijack them, the
//! tmux socket is out of reach, background children, timeouts and cancels
//! leave nothing behind, and `run_shell` sandboxes a call its context says
//! nobody was asked for.

use super::common;

use std::time::Duration;

use vigil::exec::tmux::TmuxBackend;
use vigil::exec::transport::Local;
use vigil::exec::{Backend, ExecError, ExecutionContext, RunOutcome, RunRequest, sandbox};

fn req(cmd: &str, sandboxed: bool) -> RunRequest {
    RunRequest {
        command: cmd.into(),
        timeout: Some(Duration::from_secs(20)),
        sandbox: sandboxed,
        ..Default::default()
    }
}

async fn run(b: &TmuxBackend<Local>, cmd: &str, sandboxed: bool) -> RunOutcome {
    b.run(req(cmd, sandboxed), None)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

async fn start() -> (std::sync::Arc<TmuxBackend<Local>>, common::Server) {
    sandbox::set_helper(common::sandbox_helper_bin());
    common::start("bash").await
}

#[tokio::test(flavor = "multi_thread")]
async fn output_is_exact_and_runs_in_the_panes_directory() {
    let (b, _s) = start().await;
    assert!(b.can_sandbox());
    run(&b, "cd /usr/share", false).await;
    let cmd = "pwd; ls -la | head -20; echo err >&2; (exit 3)";
    let plain = run(&b, cmd, false).await;
    let boxed = run(&b, cmd, true).await;
    assert!(boxed.stdout.starts_with(b"/usr/share\n"), "{boxed:?}");
    assert_eq!(boxed.stdout, plain.stdout);
    assert_eq!(boxed.stderr, plain.stderr);
    assert_eq!((boxed.exit_code, plain.exit_code), (Some(3), Some(3)));
    // The pane shows the sandboxed run too.
    let screen = b.manager().capture_mirror().await.unwrap();
    assert!(screen.contains("[vigil: sandboxed] $ pwd"), "{screen}");
}

#[tokio::test(flavor = "multi_thread")]
async fn shell_state_does_not_hijack_a_sandboxed_run() {
    // The folder outlives the pane: the poisoned prompt touches a file in
    // it after every command, also after the test's last one.
    let dir = tempfile::tempdir().unwrap();
    let (b, _s) = start().await;
    let d = dir.path().display().to_string();
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    for prog in ["ls", "env", "sh", "vigil", "vigil-sandbox"] {
        let p = dir.path().join("bin").join(prog);
        std::fs::write(&p, format!("#!/bin/sh\ntouch {d}/path-{prog}\n")).unwrap();
        let exec = std::os::unix::fs::PermissionsExt::from_mode(0o755);
        std::fs::set_permissions(&p, exec).unwrap();
    }
    let vigil = common::sandbox_helper_bin().display().to_string();
    let poison = format!(
        "export PATH={d}/bin:$PATH; ls() {{ touch {d}/fn-ls; }}; alias ls='touch {d}/alias-ls'; \
         function {vigil} {{ touch {d}/fn-vigil; }}; export -f ls; \
         export LD_PRELOAD={d}/missing.so BASH_ENV={d}/rc ENV={d}/rc; \
         echo 'touch {d}/bash-env' > {d}/rc; \
         PROMPT_COMMAND='touch {d}/prompt'; trap 'touch {d}/debug' DEBUG"
    );
    run(&b, &poison, false).await;
    // Whatever the poisoned prompt did after that command is not ours.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let clean = || {
        for e in std::fs::read_dir(dir.path()).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() && e.file_name() != "rc" {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
    };
    clean();
    let out = run(&b, "ls /usr; env | grep -c . ; sh -c 'echo inner'", true).await;
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("bin\n") && said.contains("inner\n"),
        "{out:?}"
    );
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "rc" && n != "bin")
        .collect();
    assert!(left.is_empty(), "the shell's state ran code: {left:?}");
    // The poison is real: an unsandboxed `ls` in that shell is hijacked.
    run(&b, "ls", false).await;
    assert!(dir.path().join("alias-ls").exists() || dir.path().join("fn-ls").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_tmux_socket_is_out_of_reach() {
    let (b, s) = start().await;
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let pane = b.mirror().unwrap().pane;
    let cmd = format!(
        "tmux -L {} send-keys -t '{pane}' 'touch {}' Enter; echo rc=$?",
        s.socket,
        marker.display()
    );
    let out = run(&b, &cmd, true).await;
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("rc=0"),
        "{out:?}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!marker.exists(), "a sandboxed command typed into the pane");
    // Unsandboxed, the same keys do arrive (the test can fail).
    run(&b, &cmd, false).await;
    let arrived = common::eventually(Duration::from_secs(60), || marker.exists().then_some(()));
    assert!(arrived.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn timeouts_end_everything_and_the_pane_stays_usable() {
    let (b, _s) = start().await;
    let mut r = req("sleep 100 & echo $!; sleep 100", true);
    r.timeout = Some(Duration::from_millis(700));
    let err = b.run(r, None).await.unwrap_err();
    let ExecError::Timeout { partial, .. } = err else {
        panic!("expected a timeout, got {err:?}");
    };
    let pid: i32 = String::from_utf8_lossy(&partial.stdout)
        .trim()
        .parse()
        .unwrap();
    let gone = common::eventually(Duration::from_secs(60), || {
        (!common::alive(pid)).then_some(())
    });
    assert!(gone.is_some(), "the background sleep survived");
    assert_eq!(run(&b, "echo after", false).await.stdout, b"after\n");
    assert_eq!(run(&b, "echo boxed", true).await.stdout, b"boxed\n");

    let mut detach = req("sleep 1", true);
    detach.detach = true;
    let err = b.run(detach, None).await.unwrap_err();
    assert!(matches!(err, ExecError::NotSupported(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn background_children_do_not_outlive_a_pane_run() {
    let (b, _s) = start().await;
    let out = run(
        &b,
        "sleep 100 & echo $!; sh -c 'sleep 100 & echo $!'; (trap '' HUP TERM; sleep 100) & echo $!",
        true,
    )
    .await;
    let started: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(started.len(), 3, "{out:?}");
    common::assert_all_gone(&started, "the pane run");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_pane_run_leaves_nothing_and_the_pane_stays_usable() {
    let (b, _s) = start().await;
    let mut r = req("sleep 100 & echo $!; echo $$; sleep 100", true);
    r.timeout = Some(Duration::from_secs(60));
    let started = common::cancel_after_pids(b.as_ref(), r, 2).await;
    assert_eq!(started.len(), 2, "{started:?}");
    common::assert_all_gone(&started, "the cancel");
    assert_eq!(run(&b, "echo boxed", true).await.stdout, b"boxed\n");
    assert_eq!(run(&b, "echo after", false).await.stdout, b"after\n");
}

#[tokio::test(flavor = "multi_thread")]
async fn run_shell_sandboxes_unasked_calls_in_a_pane() {
    let (b, _s) = start().await;
    common::run_shell_sandboxes_only_unasked_calls(ExecutionContext::from_arc(b.clone())).await;
    // The unasked call showed on the pane as a sandboxed run.
    let screen = b.manager().capture_mirror().await.unwrap();
    assert!(screen.contains("[vigil: sandboxed] $ touch"), "{screen}");
}

/// Issue 25, item 7: a contained run's output is shown on the shared pane
/// as inert text. The class: any terminal control (OSC title, the
/// alternate screen, SGR hidden text, a cursor jump, a bell, C1 CSI)
/// printed by a sandboxed command reaches the pane as visible characters;
/// the model's copy is unchanged; the operator's own commands are not
/// touched.
#[tokio::test(flavor = "multi_thread")]
async fn a_contained_runs_escapes_reach_the_pane_as_inert_text() {
    let (b, s) = start().await;
    let pane = b.mirror().unwrap().pane;
    let fmt = |f: &str| {
        s.tmux(&["display", "-p", "-t", &pane, f])
            .trim()
            .to_string()
    };
    let title = fmt("#{pane_title}");
    let hostile = r"printf '\033]2;PWNED\033\\\033[?1049h\033[8m\033[2J\033[H\007\302\233H'; echo; echo visible";
    let out = run(&b, hostile, true).await;
    assert!(
        out.stdout.starts_with(b"\x1b]2;PWNED\x1b\\\x1b[?1049h"),
        "the model's copy is the raw output: {out:?}"
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fmt("#{pane_title}"), title, "the title was set");
    assert_eq!(fmt("#{alternate_on}"), "0", "the screen was switched");
    let screen = s.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(screen.contains("^[]2;PWNED^[\\^[[?1049h^[[8m"), "{screen}");
    assert!(
        screen.contains("M-^[H") && screen.contains("\nvisible"),
        "{screen}"
    );
    // Text after the run is still shown (not hidden by SGR 8).
    let after = run(&b, "echo after-run", false).await;
    assert_eq!(after.stdout, b"after-run\n");
    let screen = s.tmux(&["capture-pane", "-p", "-t", &pane]);
    assert!(screen.contains("after-run"), "{screen}");
    // The operator's (unsandboxed) commands are untouched: the same
    // printf in the shell itself does set the title.
    run(&b, r"printf '\033]2;OPERATOR\033\\'", false).await;
    let set = common::eventually(Duration::from_secs(60), || {
        (fmt("#{pane_title}") == "OPERATOR").then_some(())
    });
    assert!(set.is_some(), "the operator's own escape was altered");
}
