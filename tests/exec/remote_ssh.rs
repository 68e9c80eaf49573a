//! SSH targets against a real sshd on 127.0.0.1 (started per test with
//! generated keys): commands, quoting, streaming, timeouts, files, a master
//! killed mid-session, and ssh's own failures as typed errors.

use super::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::sshd::{Sshd, sleeping};
use vigil::exec::backend::CommandBackend;
use vigil::exec::ssh::{SshError, SshOptions, SshTransport};
use vigil::exec::transport::{Transport, sh_quote};
use vigil::exec::{ExecError, ExecutionContext, OutputFn, RunRequest};
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::{Tool, ToolContext};
use vigil_protocol::tool::OutputStream;

fn server() -> Sshd {
    Sshd::start().unwrap_or_else(|why| panic!("cannot start a real sshd: {why}"))
}

fn options(s: &Sshd) -> SshOptions {
    let mut o = SshOptions::new(s.target());
    o.identity_file = Some(s.client_key.clone());
    o.options = s.trust_options();
    o.connect_timeout = Duration::from_secs(5);
    o
}

async fn connect(s: &Sshd) -> Arc<SshTransport> {
    Arc::new(
        SshTransport::connect(options(s))
            .await
            .unwrap_or_else(|e| panic!("ssh connect: {e}")),
    )
}

fn ctx(t: &Arc<SshTransport>) -> ExecutionContext {
    ExecutionContext::new(CommandBackend::new(t.clone()))
}

fn req(command: &str) -> RunRequest {
    RunRequest {
        command: command.into(),
        timeout: Some(Duration::from_secs(20)),
        ..Default::default()
    }
}

#[tokio::test]
async fn commands_run_with_exit_codes_and_separate_streams() {
    let s = server();
    let t = connect(&s).await;
    let ctx = ctx(&t);
    assert_eq!(ctx.target(), format!("ssh {}", s.target()));
    let out = ctx
        .run(req("echo out; echo err >&2; exit 3"), None)
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    // A remote command of the user's exiting 255 is its own exit code.
    let out = ctx.run(req("echo mine >&2; exit 255"), None).await.unwrap();
    assert_eq!(out.exit_code, Some(255));
    // The script's stdin is empty, not the tether.
    let out = ctx.run(req("cat; echo done"), None).await.unwrap();
    assert_eq!(out.stdout, b"done\n");
}

#[tokio::test]
async fn hostile_strings_are_quoted_exactly_once() {
    let s = server();
    let t = connect(&s).await;
    let ctx = ctx(&t);
    for text in [
        "it's",
        "\"double\" and 'single'",
        "$HOME ${PATH} $(id) `id`",
        "line1\nline2\n\ttab",
        "\\back\\slash; rm -rf /nonexistent && echo no | cat &",
        "*?[a-z]{1,2}~#!",
    ] {
        let out = ctx
            .run(req(&format!("printf %s {}", sh_quote(text))), None)
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), text, "{text:?}");
    }
    // Shell syntax in the script itself reaches the remote sh intact.
    let out = ctx
        .run(
            req("x='a b'; echo \"$x\" `echo bt` $(echo ds)\necho second"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(out.stdout, b"a b bt ds\nsecond\n");
}

#[tokio::test]
async fn output_streams_while_the_command_runs() {
    let s = server();
    let t = connect(&s).await;
    let seen: Arc<Mutex<Vec<(OutputStream, String, Instant)>>> = Arc::default();
    let log = seen.clone();
    let f: OutputFn = Arc::new(move |which, text: &str| {
        log.lock()
            .unwrap()
            .push((which, text.to_string(), Instant::now()));
    });
    let started = Instant::now();
    let out = ctx(&t)
        .run(req("echo first; sleep 1; echo second >&2"), Some(f))
        .await
        .unwrap();
    let ended = Instant::now();
    let seen = seen.lock().unwrap();
    let first = seen
        .iter()
        .find(|(w, t, _)| *w == OutputStream::Stdout && t.contains("first"))
        .expect("first chunk");
    assert!(
        ended.duration_since(first.2) > Duration::from_millis(700),
        "`first` arrived only at the end ({:?} after start)",
        first.2 - started
    );
    assert!(
        seen.iter()
            .any(|(w, t, _)| *w == OutputStream::Stderr && t.contains("second"))
    );
    assert_eq!(out.stderr, b"second\n");
}

#[tokio::test]
async fn a_timeout_kills_the_remote_command() {
    let s = server();
    let t = connect(&s).await;
    let marker = "31.4159";
    let err = ctx(&t)
        .run(
            RunRequest {
                command: format!("echo started; sleep {marker}"),
                timeout: Some(Duration::from_millis(1500)),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    match err {
        ExecError::Timeout { partial, .. } => assert_eq!(partial.stdout, b"started\n"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    let gone = common::eventually(Duration::from_secs(60), || {
        sleeping(marker).is_empty().then_some(())
    });
    assert!(
        gone.is_some(),
        "remote sleep survived: {:?}",
        sleeping(marker)
    );
}

#[tokio::test]
async fn files_round_trip_byte_exact() {
    let s = server();
    let t = connect(&s).await;
    let ctx = ctx(&t);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a dir with spaces/it's $file `x`.bin");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let p = path.to_str().unwrap();
    let mut bin: Vec<u8> = (0..=255u8).collect();
    bin.extend_from_slice(b"\r\n\0tail without newline");
    assert_eq!(ctx.write_file(p, &bin).await.unwrap(), bin.len() as u64);
    assert_eq!(std::fs::read(&path).unwrap(), bin);
    assert_eq!(ctx.read_file(p).await.unwrap(), bin);
    ctx.write_file(p, b"short").await.unwrap();
    assert_eq!(ctx.read_file(p).await.unwrap(), b"short");
    let big: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    ctx.write_file(p, &big).await.unwrap();
    assert_eq!(ctx.read_file(p).await.unwrap(), big);
    let missing = dir.path().join("missing");
    let e = ctx.read_file(missing.to_str().unwrap()).await.unwrap_err();
    assert!(matches!(e, ExecError::NotFound(_)), "{e:?}");
    let e = ctx
        .write_file(&format!("{}/no/such/f", dir.path().display()), b"x")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("parent directory"), "{e}");
}

#[tokio::test]
async fn a_dead_master_is_re_established_with_a_notice() {
    let s = server();
    let t = connect(&s).await;
    let ctx = ctx(&t);
    assert_eq!(
        ctx.run(req("echo one"), None).await.unwrap().stdout,
        b"one\n"
    );
    assert!(ctx.take_notices().is_empty());
    let pid = t.master_pid().await.expect("master pid");
    // SAFETY: kill(2) on the master we started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    common::eventually(Duration::from_secs(60), || {
        (!t.master_alive()).then_some(())
    })
    .expect("master still answers after SIGKILL");
    let out = ctx.run(req("echo two"), None).await.unwrap();
    assert_eq!(out.stdout, b"two\n");
    let notices = ctx.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("re-established"), "{notices:?}");
    let new_pid = t.master_pid().await.expect("new master");
    assert_ne!(new_pid, pid);
    // Through run_shell, the notice travels with the tool result.
    let pid = t.master_pid().await.expect("master pid");
    // SAFETY: kill(2) on the master we started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    common::eventually(Duration::from_secs(60), || {
        (!t.master_alive()).then_some(())
    })
    .expect("master still answers after SIGKILL");
    let tool = RunShell::new(
        ctx.clone(),
        ShellConfig {
            confirm: false,
            ..Default::default()
        },
    );
    let args = serde_json::json!({"command": "echo three", "risk": "low",
        "mutation": false, "privesc": false, "why": "test"});
    let out = tool
        .execute(
            &vigil::tools::call_as_sent(&tool, &args.to_string()),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.result["stdout"], "three\n");
    let notice = out.result["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("re-established"), "{}", out.result);
    // Files keep working on the new master.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f");
    ctx.write_file(p.to_str().unwrap(), b"after").await.unwrap();
    assert_eq!(ctx.read_file(p.to_str().unwrap()).await.unwrap(), b"after");
}

#[tokio::test]
async fn shutdown_and_drop_close_the_master() {
    let s = server();
    let t = connect(&s).await;
    let pid = t.master_pid().await.expect("master pid");
    let socket = t.socket().to_path_buf();
    t.shutdown().await;
    assert!(!socket.exists());
    assert!(
        common::eventually(Duration::from_secs(60), || {
            (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
        })
        .is_some(),
        "master {pid} still running after shutdown"
    );
    let e = t.prepare().await.unwrap_err();
    assert!(e.to_string().contains("closed"), "{e}");

    let t = SshTransport::connect(options(&s)).await.unwrap();
    let pid = t.master_pid().await.expect("master pid");
    drop(t);
    assert!(
        common::eventually(Duration::from_secs(60), || {
            (!std::path::Path::new(&format!("/proc/{pid}")).exists()).then_some(())
        })
        .is_some(),
        "master {pid} still running after drop"
    );
}

#[tokio::test]
async fn a_wrong_key_is_an_auth_error() {
    let s = server();
    let mut o = options(&s);
    o.identity_file = Some(s.stranger_key().unwrap());
    let e = SshTransport::connect(o).await.err().expect("must fail");
    assert!(matches!(e, SshError::Auth { .. }), "{e:?}");
    assert!(e.to_string().contains("authentication failed"), "{e}");
}

#[tokio::test]
async fn an_unknown_host_key_is_a_host_key_error() {
    let s = server();
    let mut o = options(&s);
    let empty = s.dir.path().join("empty_known_hosts");
    std::fs::write(&empty, "").unwrap();
    o.options = vec![
        format!("UserKnownHostsFile={}", empty.display()),
        "StrictHostKeyChecking=yes".into(),
    ];
    let e = SshTransport::connect(o).await.err().expect("must fail");
    assert!(matches!(e, SshError::HostKey { .. }), "{e:?}");
    assert!(e.to_string().contains("known_hosts"), "{e}");
}

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let s = server();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut o = options(&s);
    o.target = format!("{}@127.0.0.1:{port}", s.user);
    let e = SshTransport::connect(o).await.err().expect("must fail");
    assert!(matches!(e, SshError::Unreachable { .. }), "{e:?}");
}

/// The real binary with `--ssh`: the approval names the target and the
/// command runs there.
#[tokio::test(flavor = "multi_thread")]
async fn the_binary_runs_on_the_ssh_target_and_names_it_in_approvals() {
    use vigil_scripted::{Scenario, ScriptedServer};
    let s = server();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("made over ssh");
    let scenario = format!(
        r#"
[[rule]]
when = {{ role = "user", contains = "touch" }}
text = "Touching."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "touch '{}'; echo remote-ok"
risk = "low"
mutation = true
privesc = false
why = "test"

[[rule]]
when = {{ role = "tool" }}
text = "Finished."
"#,
        marker.display()
    );
    let config = dir.path().join("config.toml");
    std::fs::write(&config, s.config_toml(&s.client_key)).unwrap();
    let target = s.target();
    // The "remote" is this machine, so the remote managed tmux server can be
    // named (and cleaned up) from here.
    let remote_tmux = common::Server {
        socket: common::socket(),
    };
    let run = |extra: &'static [&'static str]| {
        let mut cmd = tokio::process::Command::new(common::vigil_bin());
        cmd.env("VIGIL_TMUX_SOCKET", &remote_tmux.socket);
        cmd.arg("--config")
            .arg(&config)
            .args(["exec", "please touch it", "--ssh", &target])
            .args(extra)
            .env("VIGIL_MODEL", "test")
            .env("VIGIL_DATA_DIR", dir.path())
            .env_remove("VIGIL_API_KEY")
            .stdin(std::process::Stdio::null());
        // A fresh model server per run: scripted rules answer once.
        let scenario = scenario.clone();
        async move {
            let server = ScriptedServer::start(Scenario::from_toml_str(&scenario).unwrap())
                .await
                .unwrap();
            cmd.env("VIGIL_BASE_URL", server.base_url());
            tokio::time::timeout(Duration::from_secs(60), cmd.output())
                .await
                .expect("vigil finished in time")
                .expect("vigil ran")
        }
    };
    let out = run(&[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The remote has tmux, so the managed pane runs there, over ssh.
    assert!(
        stdout.contains(&format!(
            "approval needed: run_shell on tmux vigil-agent (ssh {target}):"
        )),
        "{stdout}"
    );
    assert!(!marker.exists(), "ran without approval");
    let out = run(&["--auto-approve"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("remote-ok"), "{stdout}");
    assert!(marker.exists());
    // Headless keeps the remote managed session and says how to reach it.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("kept the managed tmux sessions vigil-agent on ssh"),
        "{stderr}"
    );
    // The managed session lives on the remote's private tmux server.
    let sessions = remote_tmux.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert!(sessions.lines().any(|l| l == "vigil-agent"), "{sessions}");

    // With --no-tmux it is plain ssh.
    std::fs::remove_file(&marker).unwrap();
    let out = run(&["--auto-approve", "--no-tmux"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(!stdout.contains("tmux session"), "{stdout}");
    assert!(stdout.contains("remote-ok") && marker.exists(), "{stdout}");

    // A wrong key fails at start with the typed reason.
    std::fs::write(&config, s.config_toml(&s.stranger_key().unwrap())).unwrap();
    let out = run(&["--auto-approve"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("authentication failed"), "{stderr}");
}
