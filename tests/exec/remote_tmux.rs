//! The managed tmux pane on remote targets, for real: a real sshd on
//! 127.0.0.1 and a real podman container whose image carries this machine's
//! tmux (binary, libraries, loader, terminfo). The same checks run on both:
//! run_shell through the pane, capture-pane, send-keys, files and the
//! console's mirror feed; then what is particular to each (a killed ssh
//! master under the pane, its notice forwarded by every tool's own call).

use super::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::podman::{Container, store, tmux_container};

use serde_json::{Value, json};
use vigil::exec::ExecutionContext;
use vigil::exec::container::{ContainerOptions, ContainerTransport, Engine, EngineChoice};
use vigil::exec::ssh::{SshOptions, SshTransport};
use vigil::exec::tmux::{TmuxBackend, spawn_mirror_feed};
use vigil::exec::transport::Transport;
use vigil::policy::gate::FixedApprover;
use vigil::tools::registry::ToolRun;
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::tmux_capture::CapturePane;
use vigil::tools::tmux_keys::SendKeys;
use vigil::tools::tmux_manage::TmuxManage;
use vigil::tools::{StreamSink, Tool, ToolContext, ToolRegistry, ToolStream};
use vigil_protocol::approval::ApprovalDecision;

fn meta(mut v: Value) -> Value {
    v["risk"] = json!("low");
    v["mutation"] = json!(true);
    v["privesc"] = json!(false);
    v["why"] = json!("test");
    v
}

async fn call(t: &dyn Tool, v: Value) -> Value {
    t.execute(
        &vigil::tools::call_as_sent(t, &meta(v).to_string()),
        &ToolContext::default(),
    )
    .await
    .unwrap_or_else(|e| panic!("{}: {e}", t.name()))
    .result
}

fn shell(ctx: &ExecutionContext) -> RunShell {
    RunShell::new(
        ctx.clone(),
        ShellConfig {
            confirm: false,
            ..Default::default()
        },
    )
}

/// Wait (up to 20 s) until `f` gives a text containing `needle`.
async fn until_text<F, Fut>(what: &str, needle: &str, mut f: F) -> String
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = String>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = f().await;
        if text.contains(needle) {
            return text;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("{what} never showed {needle:?}; last:\n{text}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// run_shell in the pane, the mirror, capture-pane, send-keys and files on
/// a remote managed pane. `tmp` is a writable directory on the target.
pub async fn exercise<T: Transport>(backend: &Arc<TmuxBackend<T>>, tmp: &str) {
    let mgr = backend.manager();
    let ctx = ExecutionContext::from_arc(backend.clone());
    assert!(
        ctx.target().starts_with("tmux vigil-test ("),
        "{}",
        ctx.target()
    );
    let run = shell(&ctx);

    let out = call(&run, json!({"command": "echo out; echo err >&2; (exit 3)"})).await;
    assert_eq!(out["exit_code"], 3, "{out}");
    assert_eq!(out["stdout"], "out\n", "{out}");
    assert_eq!(out["stderr"], "err\n", "{out}");

    // The console's mirror sees the remote pane.
    let mirror = spawn_mirror_feed(&mgr);
    let out = call(&run, json!({"command": "echo mirror-$((6*7))"})).await;
    assert_eq!(out["stdout"], "mirror-42\n", "{out}");
    until_text("the mirror", "mirror-42", || {
        let m = mirror.clone();
        async move { m.borrow().clone() }
    })
    .await;

    let cap = CapturePane::new(mgr.clone());
    let screen = call(&cap, json!({})).await;
    assert!(
        screen.as_str().unwrap_or_default().contains("mirror-42"),
        "{screen}"
    );

    // send-keys types into the remote pane; the next command still runs.
    let keys = SendKeys::new(mgr.clone());
    call(
        &keys,
        json!({"literal_text": "echo typed-$((1+1))", "enter": true}),
    )
    .await;
    until_text("capture-pane", "typed-2", || {
        let cap = &cap;
        async move {
            let v = call(cap, json!({})).await;
            v.as_str().unwrap_or_default().to_string()
        }
    })
    .await;
    let out = call(&run, json!({"command": "echo after-keys"})).await;
    assert_eq!(out["stdout"], "after-keys\n", "{out}");

    // Files go out of band, byte-exact.
    let path = format!("{tmp}/vigil remote tmux {}.bin", std::process::id());
    let bin: Vec<u8> = (0..=255u8).chain(*b"\r\n\0end").collect();
    assert_eq!(ctx.write_file(&path, &bin).await.unwrap(), bin.len() as u64);
    assert_eq!(ctx.read_file(&path).await.unwrap(), bin);
    ctx.remove_file(&path).await.unwrap();
}

// ---- SSH + tmux --------------------------------------------------------

fn sshd() -> common::sshd::Sshd {
    common::sshd::Sshd::start().unwrap_or_else(|why| panic!("cannot start a real sshd: {why}"))
}

async fn ssh(s: &common::sshd::Sshd) -> Arc<SshTransport> {
    let mut o = SshOptions::new(s.target());
    o.identity_file = Some(s.client_key.clone());
    o.options = s.trust_options();
    o.connect_timeout = Duration::from_secs(5);
    Arc::new(
        SshTransport::connect(o)
            .await
            .unwrap_or_else(|e| panic!("ssh connect: {e}")),
    )
}

/// The "remote" tmux server of an ssh test (this machine): killed when the
/// test ends, and again if it comes back meanwhile — a command the backend
/// sent over ssh before the kill (a reconnect after a killed master) can
/// still start it a moment later, as the operator's server would be.
struct SshServer(common::Server);

impl Drop for SshServer {
    fn drop(&mut self) {
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(100));
            common::kill_by_socket(&self.0.socket);
        }
    }
}

impl std::ops::Deref for SshServer {
    type Target = common::Server;
    fn deref(&self) -> &common::Server {
        &self.0
    }
}

async fn ssh_tmux(t: &Arc<SshTransport>) -> (Arc<TmuxBackend<Arc<SshTransport>>>, SshServer) {
    // The "remote" is this machine: its private tmux server is named (and
    // killed on drop) from here.
    let server = SshServer(common::Server {
        socket: common::socket(),
    });
    let backend = TmuxBackend::start(t.clone(), common::options(&server.socket, "sh"))
        .await
        .unwrap_or_else(|e| panic!("remote tmux over ssh: {e}"));
    (backend, server)
}

#[tokio::test(flavor = "multi_thread")]
async fn ssh_tmux_pane_runs_captures_types_and_mirrors() {
    let s = sshd();
    let t = ssh(&s).await;
    let (backend, server) = ssh_tmux(&t).await;
    exercise(&backend, "/tmp").await;
    let sessions = server.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert!(sessions.lines().any(|l| l == "vigil-test"), "{sessions}");
}

/// Run `name` through the registry; the run and the target notices its
/// stream carried.
async fn via_registry(reg: &ToolRegistry, name: &str, args: Value) -> (ToolRun, Vec<String>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let log = seen.clone();
    let sink: StreamSink = Arc::new(move |event| {
        if let ToolStream::TargetNotice(text) = event {
            log.lock().unwrap().push(text);
        }
    });
    let ctx = ToolContext::new(name).with_sink(sink);
    let run = reg
        .execute_with_context(name, &args.to_string(), &ctx)
        .await;
    let notices = seen.lock().unwrap().clone();
    (run, notices)
}

async fn kill_master(t: &SshTransport) {
    let pid = t.master_pid().await.expect("master pid");
    // SAFETY: kill(2) on the master the transport started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    common::eventually(Duration::from_secs(60), || {
        (!t.master_alive()).then_some(())
    })
    .expect("master still answers after SIGKILL");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_master_under_the_pane_is_re_established_with_a_notice() {
    let s = sshd();
    let t = ssh(&s).await;
    let (backend, _server) = ssh_tmux(&t).await;
    let ctx = ExecutionContext::from_arc(backend.clone());
    let run = shell(&ctx);
    let out = call(
        &run,
        json!({"command": "cd /tmp && export KEPT=yes; echo one"}),
    )
    .await;
    assert_eq!(out["stdout"], "one\n", "{out}");
    assert!(ctx.take_notices().is_empty());

    let old = t.master_pid().await;
    kill_master(&t).await;
    // The next command re-establishes the master, re-attaches to the
    // surviving remote session (its shell state kept) and says so.
    let out = call(&run, json!({"command": "echo two $KEPT $(pwd)"})).await;
    assert_eq!(out["stdout"], "two yes /tmp\n", "{out}");
    let notice = out["notice"].as_str().unwrap_or_default();
    assert!(notice.contains("re-established"), "{out}");
    assert!(out.get("notes").is_none(), "session kept: {out}");
    assert_ne!(t.master_pid().await, old);

    // The tmux tools also come back on their own, and each one tells the
    // operator with its own call, not with the next run_shell.
    let mut reg = ToolRegistry::new();
    reg.set_approver(Arc::new(FixedApprover(ApprovalDecision::ApproveOnce)));
    reg.register(CapturePane::new(backend.manager()));
    reg.register(SendKeys::new(backend.manager()));
    for tool in TmuxManage::all(&backend.manager()) {
        reg.register(tool);
    }
    // send-keys types into a session of its own, leaving the shared pane
    // to the commands below.
    let calls = [
        ("capture-pane", json!({})),
        ("tmux-create-session", meta(json!({"session": "notices"}))),
        (
            "send-keys",
            meta(json!({"session": "notices", "literal_text": "echo three", "enter": true})),
        ),
    ];
    for (name, args) in calls {
        kill_master(&t).await;
        let (run, notices) = via_registry(&reg, name, args).await;
        assert!(run.ok(), "{name}: {}", run.model_text);
        assert_eq!(notices.len(), 1, "{name}: {notices:?}");
        assert!(notices[0].contains("re-established"), "{name}: {notices:?}");
        assert!(ctx.take_notices().is_empty(), "{name} left its notice");
        if name == "capture-pane" {
            assert!(run.model_text.contains("two yes"), "{}", run.model_text);
        }
    }

    // Files too.
    kill_master(&t).await;
    // In a folder of the test's own (sshd runs on this machine as this
    // user), removed however the test ends.
    let folder = tempfile::tempdir().unwrap();
    let p = folder.path().join("after").display().to_string();
    ctx.write_file(&p, b"after").await.unwrap();
    assert_eq!(ctx.read_file(&p).await.unwrap(), b"after");
    ctx.remove_file(&p).await.unwrap();
    assert_eq!(ctx.take_notices().len(), 1);
}

// ---- Container + tmux --------------------------------------------------

async fn podman(c: &Container) -> Arc<ContainerTransport> {
    let t = ContainerTransport::connect(ContainerOptions {
        name: c.name.clone(),
        engine: EngineChoice::Only(Engine::Podman),
        global_args: store().global_args(),
    })
    .await
    .unwrap_or_else(|e| panic!("container connect: {e}"));
    Arc::new(t)
}

#[tokio::test(flavor = "multi_thread")]
async fn container_tmux_pane_runs_captures_types_and_mirrors() {
    let c = tmux_container("tmux");
    let t = podman(&c).await;
    // The tmux server lives inside the container (gone with it).
    let socket = common::socket();
    let backend = TmuxBackend::start(t.clone(), common::options(&socket, "sh"))
        .await
        .unwrap_or_else(|e| panic!("tmux inside the container: {e}"));
    assert!(backend.manager().transport().label().starts_with("podman:"));
    exercise(&backend, "/tmp").await;
    // It really is the container's tmux server, not one on this machine.
    let here = common::Server {
        socket: socket.clone(),
    };
    assert_eq!(here.tmux(&["list-sessions"]), "");
    let inside = ExecutionContext::new(vigil::exec::backend::CommandBackend::new(t));
    let out = inside
        .run(
            vigil::exec::RunRequest {
                command: format!("tmux -L {socket} list-sessions -F '#{{session_name}}'"),
                timeout: Some(Duration::from_secs(20)),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "vigil-test\n");
}

/// Keys typed into the shared pane (the one run_shell uses), then file
/// operations — `remove_file` runs `rm` in that pane — with or without a
/// dead master in between: each completes.
async fn keys_into_the_shared_pane_then_files(kill: bool) {
    let s = sshd();
    let t = ssh(&s).await;
    let (backend, _server) = ssh_tmux(&t).await;
    let ctx = ExecutionContext::from_arc(backend.clone());
    let run = shell(&ctx);
    let out = call(&run, json!({"command": "echo one"})).await;
    assert_eq!(out["stdout"], "one\n", "{out}");

    let mut reg = ToolRegistry::new();
    reg.set_approver(Arc::new(FixedApprover(ApprovalDecision::ApproveOnce)));
    reg.register(SendKeys::new(backend.manager()));
    if kill {
        kill_master(&t).await;
    }
    let (r, _) = via_registry(
        &reg,
        "send-keys",
        meta(json!({"literal_text": "echo three", "enter": true})),
    )
    .await;
    assert!(r.ok(), "{}", r.model_text);

    if kill {
        kill_master(&t).await;
    }
    let p = format!("/tmp/vigil-keys-{kill}-{}", std::process::id());
    let files = async {
        ctx.write_file(&p, b"after").await.unwrap();
        assert_eq!(ctx.read_file(&p).await.unwrap(), b"after");
        ctx.remove_file(&p).await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(120), files)
        .await
        .expect("file operations hung after keys into the shared pane");
    assert!(!std::path::Path::new(&p).exists());
    let out = call(&run, json!({"command": "echo four"})).await;
    assert_eq!(out["stdout"], "four\n", "{out}");
}

/// (Once intermittent under load: a re-attached control client's first
/// lines could run before its attach; see `Control::start`.)
#[tokio::test(flavor = "multi_thread")]
async fn keys_into_the_shared_pane_then_a_dead_master_leave_files_working() {
    keys_into_the_shared_pane_then_files(true).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_into_the_shared_pane_leave_files_working() {
    keys_into_the_shared_pane_then_files(false).await;
}
