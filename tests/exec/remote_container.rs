//! Container targets against a real podman (private store, runc, a
//! busybox-static image built locally once): commands, quoting, streaming,
//! timeouts, files, and stopped or missing containers as typed errors (also
//! when the container stops under a running command).

use super::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::podman::{Container, store};
use common::sshd::sleeping;
use vigil::exec::backend::CommandBackend;
use vigil::exec::container::{
    ContainerError, ContainerOptions, ContainerTransport, Engine, EngineChoice,
};
use vigil::exec::transport::sh_quote;
use vigil::exec::{ExecError, ExecutionContext, OutputFn, RunRequest};
use vigil_protocol::tool::OutputStream;

fn container(tag: &str) -> Container {
    Container::start(store(), tag).unwrap_or_else(|why| panic!("cannot start a container: {why}"))
}

fn options(c: &Container, engine: EngineChoice) -> ContainerOptions {
    ContainerOptions {
        name: c.name.clone(),
        engine,
        global_args: store().global_args(),
    }
}

async fn connect(c: &Container) -> ExecutionContext {
    let t = ContainerTransport::connect(options(c, EngineChoice::Auto))
        .await
        .unwrap_or_else(|e| panic!("container connect: {e}"));
    assert_eq!(t.engine(), Engine::Podman);
    ExecutionContext::new(CommandBackend::new(t))
}

fn req(command: &str) -> RunRequest {
    RunRequest {
        command: command.into(),
        timeout: Some(Duration::from_secs(30)),
        ..Default::default()
    }
}

#[tokio::test]
async fn commands_run_with_exit_codes_separate_streams_and_hostile_text() {
    let c = container("run");
    let ctx = connect(&c).await;
    assert_eq!(ctx.target(), format!("podman:{}", c.name));
    let out = ctx
        .run(req("echo out; echo err >&2; exit 3"), None)
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(3));
    assert_eq!(out.stdout, b"out\n");
    assert_eq!(out.stderr, b"err\n");
    // Exit codes the engine itself uses are still the command's own.
    for code in [1, 125, 126, 127] {
        let out = ctx
            .run(req(&format!("echo Error: mine >&2; exit {code}")), None)
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(code));
    }
    let out = ctx.run(req("cat; echo done"), None).await.unwrap();
    assert_eq!(out.stdout, b"done\n");
    for text in [
        "it's",
        "\"double\" and 'single'",
        "$HOME ${PATH} $(id) `id`",
        "line1\nline2\n\ttab",
        "\\back\\slash; echo no | cat &",
    ] {
        let out = ctx
            .run(req(&format!("printf %s {}", sh_quote(text))), None)
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), text, "{text:?}");
    }
}

#[tokio::test]
async fn output_streams_and_a_timeout_kills_the_command_inside() {
    let c = container("stream");
    let ctx = connect(&c).await;
    let seen: Arc<Mutex<Vec<(OutputStream, String, Instant)>>> = Arc::default();
    let log = seen.clone();
    let f: OutputFn = Arc::new(move |which, text: &str| {
        log.lock()
            .unwrap()
            .push((which, text.to_string(), Instant::now()));
    });
    let out = ctx
        .run(req("echo first; sleep 1; echo second >&2"), Some(f))
        .await
        .unwrap();
    let ended = Instant::now();
    assert_eq!(out.stderr, b"second\n");
    {
        let seen = seen.lock().unwrap();
        let first = seen
            .iter()
            .find(|(w, t, _)| *w == OutputStream::Stdout && t.contains("first"))
            .expect("first chunk");
        assert!(ended.duration_since(first.2) > Duration::from_millis(700));
    }

    let marker = "32.7182";
    let err = ctx
        .run(
            RunRequest {
                command: format!("echo started; sleep {marker}"),
                timeout: Some(Duration::from_millis(2500)),
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
        "sleep survived in the container: {:?}",
        sleeping(marker)
    );
}

#[tokio::test]
async fn files_round_trip_byte_exact() {
    let c = container("files");
    let ctx = connect(&c).await;
    let dir = "/tmp/a dir with spaces";
    assert_eq!(
        ctx.run(req(&format!("mkdir -p {}", sh_quote(dir))), None)
            .await
            .unwrap()
            .exit_code,
        Some(0)
    );
    let p = format!("{dir}/it's $file `x`.bin");
    let mut bin: Vec<u8> = (0..=255u8).collect();
    bin.extend_from_slice(b"\r\n\0tail without newline");
    assert_eq!(ctx.write_file(&p, &bin).await.unwrap(), bin.len() as u64);
    assert_eq!(ctx.read_file(&p).await.unwrap(), bin);
    ctx.write_file(&p, b"short").await.unwrap();
    assert_eq!(ctx.read_file(&p).await.unwrap(), b"short");
    let big: Vec<u8> = (0..2_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    ctx.write_file(&p, &big).await.unwrap();
    assert_eq!(ctx.read_file(&p).await.unwrap(), big);
    let e = ctx.read_file("/tmp/missing").await.unwrap_err();
    assert!(matches!(e, ExecError::NotFound(_)), "{e:?}");
    let e = ctx.write_file("/no/such/dir/f", b"x").await.unwrap_err();
    assert!(e.to_string().contains("parent directory"), "{e}");
}

#[tokio::test]
async fn a_stopped_container_is_a_clear_error() {
    let c = container("stop");
    let ctx = connect(&c).await;
    assert_eq!(ctx.run(req("true"), None).await.unwrap().exit_code, Some(0));
    c.stop().unwrap();
    // Mid-session: the exec failure is named, not passed off as exit 125.
    let e = ctx.run(req("true"), None).await.unwrap_err();
    assert!(e.to_string().contains("is not running"), "{e}");
    let e = ctx.read_file("/etc/passwd").await.unwrap_err();
    assert!(e.to_string().contains("is not running"), "{e}");
    // At start.
    let e = ContainerTransport::connect(options(&c, EngineChoice::Auto))
        .await
        .err()
        .unwrap();
    assert!(matches!(e, ContainerError::NotRunning { .. }), "{e:?}");
    assert!(e.to_string().contains(&c.name), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_container_stopped_under_a_command_is_named_but_a_self_killed_command_is_not() {
    let c = container("midstop");
    let ctx = connect(&c).await;
    // Dying of a signal by itself in a running container is the command's
    // own outcome: the exit code stands.
    for (cmd, code) in [("kill -9 $$", 137), ("kill -TERM $$", 143)] {
        let out = ctx
            .run(req(&format!("sh -c {}", sh_quote(cmd))), None)
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert_eq!(out.exit_code, Some(code), "{cmd}");
    }
    // The container stopping under a command is named as such.
    let marker = "41.2718";
    let running = ctx.clone();
    let call = tokio::spawn(async move {
        let req = RunRequest {
            command: format!("sleep {marker}"),
            timeout: Some(Duration::from_secs(600)),
            ..Default::default()
        };
        running.run(req, None).await
    });
    common::eventually(Duration::from_secs(60), || {
        (!sleeping(marker).is_empty()).then_some(())
    })
    .expect("the sleep starts in the container");
    c.stop().unwrap();
    let e = call.await.unwrap().unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "container `{}` stopped while the command ran",
            c.name
        )) && e.contains("whether the command finished is unknown"),
        "{e}"
    );
}

#[tokio::test]
async fn a_missing_container_or_engine_is_a_clear_error() {
    let opts = ContainerOptions {
        name: "vigil-no-such-container".into(),
        engine: EngineChoice::Only(Engine::Podman),
        global_args: store().global_args(),
    };
    let e = ContainerTransport::connect(opts.clone())
        .await
        .err()
        .unwrap();
    assert!(matches!(e, ContainerError::Missing { .. }), "{e:?}");
    assert!(e.to_string().contains("vigil-no-such-container"), "{e}");
    let e = ContainerTransport::connect(ContainerOptions {
        engine: EngineChoice::Auto,
        ..opts
    })
    .await
    .err()
    .unwrap();
    assert!(matches!(e, ContainerError::Missing { .. }), "{e:?}");
}

/// The real binary with `--container`: the approval names the container
/// and the command runs inside it.
#[tokio::test(flavor = "multi_thread")]
async fn the_binary_runs_in_the_container_and_names_it_in_approvals() {
    use vigil_scripted::{Scenario, ScriptedServer};
    let c = container("cli");
    let dir = tempfile::tempdir().unwrap();
    let scenario = r#"
[[rule]]
when = { role = "user", contains = "look" }
text = "Looking."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "cat /etc/passwd; touch /tmp/made-inside"
risk = "low"
mutation = true
privesc = false
why = "test"

[[rule]]
when = { role = "tool" }
text = "Finished."
"#
    .to_string();
    let config = dir.path().join("config.toml");
    let args: Vec<String> = store()
        .global_args()
        .iter()
        .map(|a| format!("{a:?}"))
        .collect();
    std::fs::write(
        &config,
        format!(
            "[container]\nengine = \"podman\"\nengine_args = [{}]\n",
            args.join(", ")
        ),
    )
    .unwrap();
    let run = |extra: &'static [&'static str]| {
        let mut cmd = tokio::process::Command::new(common::vigil_bin());
        cmd.arg("--config")
            .arg(&config)
            .args(["exec", "look around", "--container", &c.name])
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
    assert!(
        stdout.contains(&format!("approval needed: run_shell on podman:{}:", c.name)),
        "{stdout}"
    );
    let out = run(&["--auto-approve"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The container's passwd (busybox image), not this machine's.
    assert!(stdout.contains("root:x:0:0:root:/root:/bin/sh"), "{stdout}");
    let ctx = connect(&c).await;
    let out = ctx
        .run(req("test -e /tmp/made-inside"), None)
        .await
        .unwrap();
    assert_eq!(out.exit_code, Some(0));

    c.stop().unwrap();
    let out = run(&["--auto-approve"]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0));
    assert!(stderr.contains("is not running"), "{stderr}");
}
