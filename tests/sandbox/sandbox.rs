//! The kernel sandbox on this kernel (real Landlock, seccomp, process
//! groups): what a sandboxed command cannot do, that read-only output is
//! exact, that nothing it starts (background jobs, `setsid`, double forks)
//! outlives the call, its timeout or its cancel, and that `run_shell`
//! runs a call sandboxed when its context says it was not asked for.

use super::common;

use std::io::ErrorKind;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use vigil::exec::backend::CommandBackend;
use vigil::exec::transport::Transport;
use vigil::exec::{Backend, ExecError, ExecutionContext, RunOutcome, RunRequest, sandbox};

/// These tests use the helper mode of the full binary (`vigil __sandbox`,
/// the fallback when `vigil-sandbox` is missing); the tmux tests and the
/// real binary use `vigil-sandbox`.
fn setup() -> ExecutionContext {
    sandbox::set_helper(common::vigil_bin());
    ExecutionContext::local()
}

fn req(cmd: &str, sandboxed: bool) -> RunRequest {
    RunRequest {
        command: cmd.into(),
        timeout: Some(Duration::from_secs(20)),
        sandbox: sandboxed,
        ..Default::default()
    }
}

async fn boxed(ctx: &ExecutionContext, cmd: &str) -> RunOutcome {
    ctx.run(req(cmd, true), None)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn pids(out: &[u8]) -> Vec<i32> {
    text(out)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}

#[tokio::test]
async fn the_probe_finds_landlock_here() {
    let ctx = setup();
    assert_eq!(sandbox::probe(), Ok(()));
    assert!(ctx.can_sandbox());
    assert!(sandbox::confine::kernel_abi() >= 4);
}

#[tokio::test]
async fn writes_unlinks_and_mkdirs_fail_inside() {
    let ctx = setup();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    std::fs::write(dir.path().join("keep"), "original").unwrap();
    let script = format!(
        "echo new > {d}/new; echo w=$?; echo x >> {d}/keep; echo a=$?; rm -f {d}/keep; echo r=$?; \
         mkdir {d}/sub; echo m=$?; mv {d}/keep {d}/moved; echo v=$?; ln -s /etc {d}/link; echo l=$?; \
         echo ok > /dev/null; echo n=$?"
    );
    let out = boxed(&ctx, &script).await;
    let said = text(&out.stdout);
    for step in ["w", "a", "r", "m", "v", "l"] {
        assert!(
            !said.contains(&format!("{step}=0")),
            "{step} succeeded: {said}"
        );
    }
    assert!(said.contains("n=0"), "/dev/null must stay writable: {said}");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["keep"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("keep")).unwrap(),
        "original"
    );
    // The same script unsandboxed does write: the test can fail.
    let plain = ctx.run(req(&script, false), None).await.unwrap();
    assert!(text(&plain.stdout).contains("w=0"));
}

#[tokio::test]
async fn network_connects_fail_inside() {
    let ctx = setup();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tp, up) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let script = format!(
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{tp}' 2>/dev/null; echo t=$?; \
         bash -c 'echo hi > /dev/udp/127.0.0.1/{up}' 2>/dev/null; echo u=$?"
    );
    let out = boxed(&ctx, &script).await;
    let said = text(&out.stdout);
    assert!(said.contains("t=1") && said.contains("u=1"), "{said}");
    assert_eq!(tcp.accept().unwrap_err().kind(), ErrorKind::WouldBlock);
    let mut buf = [0u8; 16];
    assert_eq!(
        udp.recv(&mut buf).unwrap_err().kind(),
        ErrorKind::WouldBlock
    );
    // Unsandboxed, the same connect reaches the listener.
    let plain = ctx.run(req(&script, false), None).await.unwrap();
    assert!(text(&plain.stdout).contains("t=0"), "{plain:?}");
}

#[tokio::test]
async fn signals_to_outside_processes_fail() {
    let ctx = setup();
    let mut victim = std::process::Command::new("sleep")
        .arg("30")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = victim.id();
    let out = boxed(
        &ctx,
        &format!("kill -TERM {pid}; echo k=$?; kill -0 {pid}; echo z=$?"),
    )
    .await;
    let said = text(&out.stdout);
    assert!(said.contains("k=1") && said.contains("z=1"), "{said}");
    assert!(common::alive(pid as i32), "the process outside was killed");
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[tokio::test]
async fn read_only_output_is_exact() {
    let ctx = setup();
    for cmd in [
        "ls -la /usr/bin | head -50",
        "cat /etc/os-release; ls -ln /etc | tail -20",
        "printf 'a\\tb\\001\\377\\n'; echo err >&2; exit 7",
        "find /usr/share/doc -maxdepth 1 | sort | head -30; wc -c /etc/passwd",
    ] {
        let plain = ctx.run(req(cmd, false), None).await.unwrap();
        let sandboxed = boxed(&ctx, cmd).await;
        assert_eq!(sandboxed.stdout, plain.stdout, "{cmd}");
        assert_eq!(sandboxed.stderr, plain.stderr, "{cmd}");
        assert_eq!(sandboxed.exit_code, plain.exit_code, "{cmd}");
    }
    // Killed by a signal reads the same too.
    assert_eq!(boxed(&ctx, "kill -9 $$").await.exit_code, None);
}

#[tokio::test]
async fn device_files_are_not_read_but_the_harmless_few() {
    let ctx = setup();
    // Opening /dev/ptmx allocates a pseudo-terminal: an act, not a read.
    // The same device through another path resolves to the same file.
    for cmd in ["head -c 0 /dev/ptmx", "head -c 0 /proc/self/root/dev/ptmx"] {
        let plain = ctx.run(req(cmd, false), None).await.unwrap();
        let out = boxed(&ctx, cmd).await;
        assert_ne!(out.exit_code, Some(0), "{cmd}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains("Permission denied"),
            "{cmd}: {}",
            text(&out.stderr)
        );
        // Outside the sandbox the same open works: the sandbox refused it.
        assert_eq!(plain.exit_code, Some(0), "{cmd}: {}", text(&plain.stderr));
    }
    let ok = boxed(
        &ctx,
        "head -c 5 /dev/urandom | wc -c; head -c 3 /dev/zero | od -An -tx1; cat /dev/null; \
         ls /dev > /dev/null && echo listed; cat /etc/hostname > /dev/null && echo read",
    )
    .await;
    assert_eq!(ok.exit_code, Some(0), "{}", text(&ok.stderr));
    assert_eq!(text(&ok.stdout), "5\n 00 00 00\nlisted\nread\n");
}

#[tokio::test]
async fn nothing_outlives_the_call() {
    let ctx = setup();
    let start = Instant::now();
    let out = boxed(
        &ctx,
        "sleep 100 & echo $!; setsid sleep 100 & echo $!; sh -c 'sleep 100 & echo $!'; \
         nohup sleep 100 >/dev/null 2>&1 & echo $!; (trap '' HUP TERM; sleep 100) & echo $!",
    )
    .await;
    let started = pids(&out.stdout);
    assert_eq!(started.len(), 5, "{out:?}");
    assert!(start.elapsed() < Duration::from_secs(60));
    for pid in started {
        assert!(!common::alive(pid), "pid {pid} outlived the call: {out:?}");
    }
}

#[tokio::test]
async fn a_cancelled_call_leaves_nothing_running() {
    let ctx = setup();
    let mut r = req(
        "sleep 100 & echo $!; sh -c 'sleep 100 & echo $!'; echo $$; sleep 100",
        true,
    );
    r.timeout = Some(Duration::from_secs(60));
    let started = common::cancel_after_pids(ctx.backend(), r, 3).await;
    assert_eq!(started.len(), 3, "{started:?}");
    common::assert_all_gone(&started, "the cancel");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_sandbox() {
    let ctx = setup();
    let mut r = req(
        "sleep 100 & echo $!; sh -c 'sleep 100 & echo $!'; sleep 100",
        true,
    );
    r.timeout = Some(Duration::from_millis(700));
    let err = ctx.run(r, None).await.unwrap_err();
    let ExecError::Timeout { partial, .. } = err else {
        panic!("expected a timeout, got {err:?}");
    };
    let started = pids(&partial.stdout);
    assert_eq!(started.len(), 2, "{partial:?}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for pid in started {
        assert!(!common::alive(pid), "pid {pid} survived the timeout");
    }
}

#[tokio::test]
async fn the_environment_is_clean_and_path_fixed() {
    let ctx = setup();
    let out = boxed(&ctx, "env | sort").await;
    let env = text(&out.stdout);
    assert!(env.contains("PATH=/usr/local/sbin:"), "{env}");
    for name in env.lines().filter_map(|l| l.split('=').next()) {
        assert!(
            [
                "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR", "COLUMNS",
                "LINES", "NO_COLOR", "SHELL", "PATH", "PWD", "SHLVL", "_", "OLDPWD"
            ]
            .contains(&name)
                || name.starts_with("LC_"),
            "{name} leaked into the sandbox: {env}"
        );
    }
}

/// A real `sh -c` transport that says it is another machine.
struct Elsewhere;
impl Transport for Elsewhere {
    fn label(&self) -> String {
        "elsewhere".into()
    }
    fn shell(&self, script: &str, _stdin: bool) -> tokio::process::Command {
        let mut c = tokio::process::Command::new("sh");
        c.arg("-c").arg(script);
        c
    }
}

#[tokio::test]
async fn a_target_that_cannot_enforce_it_refuses() {
    setup();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let b = CommandBackend::new(Elsewhere);
    assert!(!b.can_sandbox());
    let err = b
        .run(req(&format!("touch {}", marker.display()), true), None)
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::NotSupported(_)), "{err:?}");
    assert!(err.to_string().contains("elsewhere"), "{err}");
    assert!(!marker.exists(), "a refused run must not run at all");
}

#[tokio::test]
async fn run_shell_sandboxes_calls_nobody_was_asked_for() {
    common::run_shell_sandboxes_only_unasked_calls(setup()).await;
}

#[test]
fn the_small_helper_runs_nothing_but_the_helper() {
    let out = std::process::Command::new(common::sandbox_helper_bin())
        .args(["sh", "-c", "echo ran"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let out = std::process::Command::new(common::sandbox_helper_bin())
        .args([sandbox::helper::MODE, "--probe"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}
