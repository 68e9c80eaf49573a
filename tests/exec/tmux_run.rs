//! The managed pane end to end on real tmux (private sockets): exact
//! output under bash, dash and zsh, streaming, timeouts, cancel, detach,
//! operator interference, killed panes and servers, the alternate screen.

use super::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use vigil::exec::tmux::TmuxBackend;
use vigil::exec::transport::Local;
use vigil::exec::{Backend, ExecError, OutputFn, RunOutcome, RunRequest};
use vigil_protocol::tool::OutputStream;

fn req(cmd: &str) -> RunRequest {
    RunRequest {
        command: cmd.into(),
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    }
}

async fn run(b: &TmuxBackend<Local>, cmd: &str) -> RunOutcome {
    b.run(req(cmd), None)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

async fn fidelity(shell: &str) {
    let (b, _s) = common::start(shell).await;
    let out = run(&b, "echo hi").await;
    assert_eq!(out.stdout, b"hi\n", "{shell}");
    assert_eq!(out.exit_code, Some(0));
    assert!(out.notes.is_empty(), "{:?}", out.notes);

    // stdout apart from stderr, exit codes.
    let out = run(&b, "echo out; echo err >&2; false").await;
    assert_eq!(
        (out.stdout.as_slice(), out.stderr.as_slice()),
        (&b"out\n"[..], &b"err\n"[..])
    );
    assert_eq!(out.exit_code, Some(1), "{shell}");
    let out = run(&b, "(exit 42)").await;
    assert_eq!(out.exit_code, Some(42), "{shell}");

    // Tabs, trailing spaces, no trailing newline, binary-ish bytes.
    let out = run(&b, r"printf 'a\tb   \n  lead\ttrail  '").await;
    assert_eq!(out.stdout, b"a\tb   \n  lead\ttrail  ", "{shell}");
    let out = run(&b, r"printf '\001\002\377\033[31mred\033[0m\r\n'").await;
    assert_eq!(out.stdout, b"\x01\x02\xff\x1b[31mred\x1b[0m\r\n", "{shell}");

    // State persists in the shared shell.
    run(&b, "cd /tmp && FOO=bar").await;
    let out = run(&b, "pwd; echo $FOO").await;
    assert_eq!(out.stdout, b"/tmp\nbar\n", "{shell}");

    // Multi-line commands and heredocs.
    let out = run(
        &b,
        "for i in 1 2; do\n  echo \"n$i\"\ndone\ncat <<'EOF'\n$HOME \\ `x`\n\tindented\nEOF",
    )
    .await;
    assert_eq!(out.stdout, b"n1\nn2\n$HOME \\ `x`\n\tindented\n", "{shell}");

    // A syntax error is reported, and the shell survives it.
    let out = run(&b, "if then fi fi").await;
    assert!(
        out.exit_code != Some(0) || shell == "zsh",
        "{shell}: {out:?}"
    );
    let out = run(&b, "echo alive").await;
    assert_eq!(out.stdout, b"alive\n", "{shell}");

    // A line imitating a marker does not end the command early.
    let out = run(
        &b,
        r"printf '\033]5379;fake:1;rc;0\007'; printf '\033]5379;x;rc;0\007\n'; sleep 0.3; echo real",
    )
    .await;
    assert!(out.stdout.ends_with(b"real\n"), "{shell}: {out:?}");
    assert_eq!(out.exit_code, Some(0));
}

#[tokio::test]
async fn exact_output_in_bash() {
    fidelity("bash").await;
}

#[tokio::test]
async fn exact_output_in_dash() {
    fidelity("dash").await;
}

#[tokio::test]
async fn exact_output_in_zsh() {
    fidelity("zsh").await;
}

#[tokio::test]
async fn output_far_beyond_history_limit_is_exact() {
    let (b, _s) = common::start("bash").await;
    let out = run(&b, "seq 1 100000; seq 1 3 >&2").await;
    let expected: String = (1..=100_000).map(|i| format!("{i}\n")).collect();
    assert_eq!(out.stdout.len(), expected.len());
    assert!(out.stdout == expected.as_bytes());
    assert_eq!(out.stderr, b"1\n2\n3\n");
}

type Log = Arc<Mutex<Vec<(OutputStream, String, Instant)>>>;

fn recorder() -> (Log, OutputFn) {
    let log: Log = Arc::default();
    let l = log.clone();
    (
        log,
        Arc::new(move |s, t: &str| l.lock().unwrap().push((s, t.to_string(), Instant::now()))),
    )
}

#[tokio::test]
async fn output_streams_live_and_exactly() {
    let (b, _s) = common::start("dash").await;
    let (log, f) = recorder();
    let out = b
        .run(
            req("echo a; echo e1 >&2; sleep 0.6; printf 'b\\tc'"),
            Some(f),
        )
        .await
        .unwrap();
    let done = Instant::now();
    let log = log.lock().unwrap();
    let first = log.first().expect("chunks");
    assert!(
        done - first.2 >= Duration::from_millis(400),
        "first chunk was not live"
    );
    let text = |w| -> String {
        log.iter()
            .filter(|c| c.0 == w)
            .map(|c| c.1.clone())
            .collect()
    };
    assert_eq!(text(OutputStream::Stdout), "a\nb\tc");
    assert_eq!(text(OutputStream::Stderr), "e1\n");
    assert_eq!(out.stdout, b"a\nb\tc");
}

#[tokio::test]
async fn timeout_names_the_limit_sends_ctrl_c_and_the_pane_recovers() {
    let (b, s) = common::start("bash").await;
    let start = Instant::now();
    let mut r = req("echo started; sleep 100");
    r.timeout = Some(Duration::from_millis(700));
    let err = b.run(r, None).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(60));
    match &err {
        ExecError::Timeout { limit, partial } => {
            assert_eq!(*limit, Duration::from_millis(700));
            assert_eq!(partial.stdout, b"started\n");
        }
        other => panic!("expected timeout, got {other:?}"),
    }
    assert!(err.to_string().contains("0.700s"), "{err}");
    let out = run(&b, "echo back").await;
    assert_eq!(out.stdout, b"back\n");
    assert!(
        !s.tmux(&["list-panes", "-a", "-F", "#{pane_current_command}"])
            .contains("sleep")
    );
}

#[tokio::test]
async fn cancel_sends_ctrl_c_and_the_next_command_works() {
    let (b, s) = common::start("zsh").await;
    let fut = b.run(req("sleep 100"), None);
    assert!(
        tokio::time::timeout(Duration::from_millis(400), fut)
            .await
            .is_err()
    );
    let out = run(&b, "echo next").await;
    assert_eq!(out.stdout, b"next\n");
    assert_eq!(out.exit_code, Some(0));
    let cmds = s.tmux(&["list-panes", "-a", "-F", "#{pane_current_command}"]);
    assert!(!cmds.contains("sleep"), "{cmds}");
}

#[tokio::test]
async fn detach_returns_at_once_and_the_pane_shows_the_output() {
    let (b, s) = common::start("bash").await;
    // The command waits for a gate only this test opens, after the run
    // returned: a return that waited for the command could never happen
    // (no clock decides it, however slow the machine).
    let gate = tempfile::tempdir().unwrap();
    let open = gate.path().join("open");
    // The wait runs outside the pane's shell (a loop in the shell itself
    // would leave the shell in the foreground between its sleeps), so the
    // pane is busy with another program for as long as the gate is shut.
    let mut r = req(&format!(
        "timeout 300 sh -c 'until [ -e {} ]; do sleep 0.05; done'; echo detached-$((40 + 2))",
        open.display()
    ));
    r.detach = true;
    let out = tokio::time::timeout(Duration::from_secs(60), b.run(r, None))
        .await
        .expect("a detached run returns while its command still waits")
        .unwrap();
    let msg = out.dispatched.expect("dispatched");
    assert!(msg.contains("capture-pane"), "{msg}");
    let busy = b.run(req("echo x"), None).await.unwrap_err().to_string();
    assert!(
        busy.contains("still running the detached command"),
        "{busy}"
    );
    std::fs::write(&open, "").unwrap();
    // The output itself: the typed line says `detached-$((40 + 2))`, so
    // only the command's output (wrapped or after a prompt) shows 42.
    let capture = ["capture-pane", "-p", "-t", "vigil-test:shared"];
    s.until(
        &capture,
        "the detached command's output in the pane",
        |sc| sc.lines().any(|l| l.contains("detached-42")),
    )
    .await;
    assert_eq!(run(&b, "echo after").await.stdout, b"after\n");
}

#[tokio::test]
async fn operator_typing_between_commands_does_not_break_attribution() {
    let (b, s) = common::start("bash").await;
    run(&b, "true").await;
    let pane = "vigil-test:shared";
    // A half-typed line, a finished command, and copy mode.
    s.tmux(&["send-keys", "-t", pane, "echo operator-ran", "Enter"]);
    s.tmux(&["send-keys", "-t", pane, "-l", "echo half typed"]);
    let out = run(&b, "echo mine").await;
    assert_eq!(out.stdout, b"mine\n");
    s.tmux(&["copy-mode", "-t", pane]);
    let out = run(&b, "echo still-mine").await;
    assert_eq!(out.stdout, b"still-mine\n");
    let screen = s.tmux(&["capture-pane", "-p", "-t", pane]);
    assert!(screen.contains("operator-ran"), "{screen}");
}

#[tokio::test]
async fn a_killed_pane_fails_the_command_and_is_recreated() {
    let (b, s) = common::start("bash").await;
    run(&b, "cd /tmp").await;
    let b2 = b.clone();
    let task = tokio::spawn(async move { b2.run(req("sleep 300"), None).await });
    let fg = [
        "display",
        "-p",
        "-t",
        "vigil-test:shared",
        "#{pane_current_command}",
    ];
    s.until(&fg, "the sleep", |c| c.trim() == "sleep").await;
    // A second window keeps the session alive while the pane dies.
    s.tmux(&["new-window", "-d", "-t", "vigil-test:"]);
    s.tmux(&["kill-pane", "-t", "vigil-test:shared"]);
    let err = tokio::time::timeout(Duration::from_secs(60), task)
        .await
        .expect("fails promptly")
        .unwrap()
        .unwrap_err()
        .to_string();
    assert!(err.contains("killed") && err.contains("lost"), "{err}");
    let out = run(&b, "pwd").await;
    assert_ne!(out.stdout, b"/tmp\n");
    assert!(
        out.notes.iter().any(|n| n.contains("recreated")),
        "{:?}",
        out.notes
    );
}

#[tokio::test]
async fn a_killed_server_is_recreated_and_the_model_is_told() {
    let (b, s) = common::start("dash").await;
    run(&b, "true").await;
    s.tmux(&["kill-server"]);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let out = run(&b, "echo again").await;
    assert_eq!(out.stdout, b"again\n");
    assert!(
        out.notes.iter().any(|n| n.contains("lost")),
        "{:?}",
        out.notes
    );
    let out = run(&b, "echo quiet").await;
    assert!(out.notes.is_empty());
}

#[tokio::test]
async fn the_alternate_screen_is_reported_not_mistaken_for_output() {
    let (b, s) = common::start("bash").await;
    let out = run(&b, r"printf '\033[?1049hFULLSCREEN'").await;
    assert!(
        out.notes.iter().any(|n| n.contains("alternate screen")),
        "{:?}",
        out.notes
    );
    let err = b.run(req("echo x"), None).await.unwrap_err().to_string();
    assert!(err.contains("alternate screen"), "{err}");
    s.tmux(&[
        "send-keys",
        "-t",
        "vigil-test:shared",
        "printf '\\033[?1049l'",
        "Enter",
    ]);
    let alt = [
        "display",
        "-p",
        "-t",
        "vigil-test:shared",
        "#{alternate_on} #{pane_current_command}",
    ];
    s.until(&alt, "the shell on the normal screen", |a| {
        a.trim() == "0 bash"
    })
    .await;
    assert_eq!(run(&b, "echo ok").await.stdout, b"ok\n");
}

#[tokio::test]
async fn guardrails_refuse_before_typing() {
    let (b, _s) = common::start("bash").await;
    for cmd in ["set -e", "exit", "exec bash", "tmux kill-server"] {
        let err = b.run(req(cmd), None).await.unwrap_err();
        assert!(matches!(err, ExecError::Failed(_)), "{cmd}");
        assert!(err.to_string().starts_with("refused"), "{cmd}: {err}");
    }
    assert_eq!(run(&b, "bash -c 'set -e; echo ok'").await.stdout, b"ok\n");
}

#[tokio::test]
async fn files_are_byte_exact_and_target_and_mirror_are_reported() {
    let (b, s) = common::start("bash").await;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.bin");
    let bin: Vec<u8> = (0..=255).chain(b"  \t\n".iter().copied()).collect();
    b.write_file(p.to_str().unwrap(), &bin).await.unwrap();
    assert_eq!(b.read_file(p.to_str().unwrap()).await.unwrap(), bin);
    assert_eq!(b.target(), "tmux vigil-test");
    assert!(b.supports_detach());
    let m = b.mirror().unwrap();
    assert_eq!(m.server_args, vec!["-L".to_string(), s.socket.clone()]);
    assert!(m.pane.starts_with('%'));
    run(&b, "echo mirrored-text").await;
    let snap = vigil::exec::tmux::capture_for_mirror(&m).await;
    assert!(snap.contains("mirrored-text"), "{snap}");
    assert!(
        b.startup_notice()
            .contains(&format!("tmux -L {} attach -t vigil-test", s.socket))
    );
}

#[tokio::test]
async fn the_operator_sees_output_in_the_pane_while_it_runs() {
    let (b, s) = common::start("bash").await;
    // The command waits for the test: its first line must be on the
    // screen while it still runs.
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let cmd = format!(
        "echo live-line; while [ ! -e {} ]; do sleep 0.05; done; echo end",
        go.display()
    );
    let b2 = b.clone();
    let task = tokio::spawn(async move { b2.run(req(&cmd), None).await });
    let capture = ["capture-pane", "-p", "-t", "vigil-test:shared"];
    s.until(&capture, "live-line on the screen", |sc| {
        sc.lines().any(|l| l == "live-line")
    })
    .await;
    assert!(
        !task.is_finished(),
        "the command ended before the test let it"
    );
    std::fs::write(&go, "").unwrap();
    let out = task.await.unwrap().unwrap();
    assert_eq!(out.stdout, b"live-line\nend\n");
    // Shown once, not again by the wrapper at the end.
    let screen = s.tmux(&["capture-pane", "-p", "-t", "vigil-test:shared"]);
    assert_eq!(
        screen.lines().filter(|l| *l == "live-line").count(),
        1,
        "{screen}"
    );
    // Short commands are shown by the wrapper itself.
    run(&b, "echo short-one").await;
    let screen = s.tmux(&["capture-pane", "-p", "-t", "vigil-test:shared"]);
    assert!(screen.lines().any(|l| l == "short-one"), "{screen}");
    // The pane shows the command, not the script line vigil typed; control
    // characters in it are not passed to the terminal.
    run(&b, "printf 'x\\n' # \u{1b}]0;evil\u{7} tail").await;
    let screen = s.tmux(&["capture-pane", "-p", "-t", "vigil-test:shared"]);
    assert!(screen.lines().any(|l| l == "$ echo short-one"), "{screen}");
    assert!(
        screen.contains("$ printf 'x\\n' # ]0;evil tail"),
        "{screen}"
    );
    // vigil waits for the prompt before typing and its probe erases its own
    // line; only a line typed before a slow shell's first prompt can stay.
    assert!(screen.matches(". /tmp/vigil-").count() <= 1, "{screen}");
}

/// A command line the shell discards (here a DEBUG trap under `extdebug`
/// skips, once, the line that sources a command's wrapper, as an interrupt
/// that arrives with the line can) never starts: the call ends with a clear
/// error instead of waiting forever, the command did not run and cannot run
/// late (vigil claimed its start and removed its files), and the pane stays
/// usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_line_the_shell_discards_fails_clearly_and_never_runs_late() {
    let (b, _s) = common::start("bash").await;
    let dir = tempfile::tempdir().unwrap();
    let (mark, once) = (dir.path().join("ran"), dir.path().join("skip-once"));
    std::fs::write(&once, "").unwrap();
    let skip = format!(
        r#"shopt -s extdebug; trap 'case $BASH_COMMAND in ". "*) ! {{ grep -q __vigil_rc "${{BASH_COMMAND#. }}" 2>/dev/null && rm {} 2>/dev/null; }};; esac' DEBUG"#,
        once.display()
    );
    run(&b, &skip).await;
    let started = Instant::now();
    let mut touch = req(&format!("touch {}", mark.display()));
    touch.timeout = Some(Duration::from_secs(120));
    let err = b
        .run(touch, None)
        .await
        .expect_err("the discarded line cannot succeed");
    assert!(err.to_string().contains("never started"), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(100),
        "it did not wait forever"
    );
    assert!(!once.exists(), "the line was skipped by the trap");
    let out = run(&b, "trap - DEBUG; shopt -u extdebug; echo back").await;
    assert_eq!(out.stdout, b"back\n");
    assert!(!mark.exists(), "the command never ran");
    // The claim leaves the operator's noclobber as it was, off or on.
    let noclobber = "case $- in *C*) echo on;; *) echo off;; esac";
    assert_eq!(run(&b, noclobber).await.stdout, b"off\n");
    run(&b, "set -C").await;
    assert_eq!(run(&b, noclobber).await.stdout, b"on\n");
}

/// A shell still reading its rc files (slow on a loaded machine; here a
/// `sleep` in the rc) is waited for, not interrupted: the first command
/// runs after the whole rc, which Ctrl-C would have cut short.
#[tokio::test]
async fn a_shell_still_reading_its_rc_files_is_waited_for_not_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let rc = dir.path().join("rc");
    std::fs::write(&rc, "sleep 8\nRC_DONE=all-of-it\n").unwrap();
    let shell = format!("bash --noprofile --rcfile {}", rc.display());
    let (b, _s) = common::start(&shell).await;
    let out = run(&b, "echo \"rc: $RC_DONE\"").await;
    assert_eq!(out.stdout, b"rc: all-of-it\n");
}
