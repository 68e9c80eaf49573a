//! Per-command latency of `run("true")` on each target against the
//! transport's floor, measured in the same run, interleaved:
//! local (`sh -c true`), ssh through the ControlMaster and ssh + the managed
//! tmux pane on the remote (bare `ssh -S socket host true`), and a podman
//! container without and with tmux inside (bare `podman exec box true`).
//! Real sshd, podman and tmux, as in the tests.
//!
//! `cargo bench --bench remote_latency` (N per target: VIGIL_BENCH_N, default 30).

#[path = "../tests/common/podman.rs"]
mod podman;
#[path = "../tests/common/sshd.rs"]
mod sshd;

use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::Command;
use vigil::exec::backend::CommandBackend;
use vigil::exec::container::{ContainerOptions, ContainerTransport, Engine, EngineChoice};
use vigil::exec::ssh::{SshOptions, SshTransport};
use vigil::exec::tmux::{TmuxBackend, TmuxOptions};
use vigil::exec::transport::Transport;
use vigil::exec::{ExecutionContext, RunRequest};

/// The managed pane over `transport`, on a private server named `socket`
/// (a clean `sh` in the pane, as in the tests).
async fn tmux_ctx<T: Transport>(transport: T, socket: &str) -> ExecutionContext {
    let opts = TmuxOptions {
        socket: socket.to_string(),
        agent_name: "bench".into(),
        shell: Some(
            "env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TERM=screen PS1='$ ' sh".into(),
        ),
        ..Default::default()
    };
    let backend = TmuxBackend::start(transport, opts)
        .await
        .unwrap_or_else(|e| panic!("managed tmux on the target: {e}"));
    ExecutionContext::from_arc(backend)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

async fn time_run(ctx: &ExecutionContext) -> Duration {
    let start = Instant::now();
    let out = ctx
        .run(
            RunRequest {
                command: "true".into(),
                timeout: Some(Duration::from_secs(30)),
                ..Default::default()
            },
            None,
        )
        .await
        .expect("run true");
    assert_eq!(out.exit_code, Some(0));
    start.elapsed()
}

async fn time_floor(mut cmd: Command) -> Duration {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let out = cmd.output().await.expect("floor command");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    start.elapsed()
}

/// Interleave target and floor `n` times; medians of each.
async fn measure(
    n: usize,
    ctx: &ExecutionContext,
    floor: impl Fn() -> Command,
) -> (Duration, Duration) {
    // Warm up both paths once.
    time_run(ctx).await;
    time_floor(floor()).await;
    let (mut t, mut f) = (Vec::new(), Vec::new());
    for _ in 0..n {
        f.push(time_floor(floor()).await);
        t.push(time_run(ctx).await);
    }
    (median(t), median(f))
}

fn report(name: &str, floor_name: &str, (t, f): (Duration, Duration)) {
    let over = t.as_secs_f64() - f.as_secs_f64();
    let allowed = (f.as_secs_f64() * 0.10).max(0.005);
    println!(
        "{name:<10} run(true) median {:>8.2} ms | floor ({floor_name}) {:>8.2} ms | over {:>+7.2} ms ({:>+5.1}%) | {}",
        t.as_secs_f64() * 1e3,
        f.as_secs_f64() * 1e3,
        over * 1e3,
        over / f.as_secs_f64() * 100.0,
        if over <= allowed {
            "within target"
        } else {
            "OVER TARGET"
        }
    );
}

fn main() {
    let n: usize = std::env::var("VIGIL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!("remote_latency: N={n}, loadavg {}", load.trim());

        let local = ExecutionContext::local();
        let r = measure(n, &local, || {
            let mut c = Command::new("sh");
            c.args(["-c", "true"]);
            c
        })
        .await;
        report("local", "sh -c true", r);

        let s = sshd::Sshd::start().unwrap_or_else(|e| panic!("sshd: {e}"));
        let mut o = SshOptions::new(s.target());
        o.identity_file = Some(s.client_key.clone());
        o.options = s.trust_options();
        let t = std::sync::Arc::new(SshTransport::connect(o).await.expect("ssh connect"));
        let ctx = ExecutionContext::new(CommandBackend::new(t.clone()));
        let r = measure(n, &ctx, || {
            let mut c = t.client();
            c.arg("true");
            c
        })
        .await;
        report("ssh", "ssh -S sock host true", r);
        drop(ctx);
        // The "remote" is this machine: its tmux server is killed from here.
        let socket = format!("vigil-bench-{}", std::process::id());
        let ctx = tmux_ctx(t.clone(), &socket).await;
        let r = measure(n, &ctx, || {
            let mut c = t.client();
            c.arg("true");
            c
        })
        .await;
        report("ssh+tmux", "ssh -S sock host true", r);
        drop(ctx);
        let _ = std::process::Command::new("tmux")
            .args(["-L", &socket, "kill-server"])
            .output();
        t.shutdown().await;

        let store = podman::Store::open().unwrap_or_else(|e| panic!("podman: {e}"));
        let image = store.tmux_image().unwrap_or_else(|e| panic!("{e}"));
        for (name, image, tmux) in [
            ("container", podman::IMAGE, false),
            ("ctr+tmux", image, true),
        ] {
            let c = podman::Container::start_image(&store, "bench", image)
                .unwrap_or_else(|e| panic!("{e}"));
            let transport = ContainerTransport::connect(ContainerOptions {
                name: c.name.clone(),
                engine: EngineChoice::Only(Engine::Podman),
                global_args: store.global_args(),
            })
            .await
            .expect("container");
            let ctx = if tmux {
                // The tmux server lives inside the container (gone with it).
                tmux_ctx(transport, "vigil-bench").await
            } else {
                ExecutionContext::new(CommandBackend::new(transport))
            };
            let r = measure(n, &ctx, || {
                let mut cmd = Command::new("podman");
                cmd.args(store.global_args())
                    .args(["exec", &c.name, "true"]);
                cmd
            })
            .await;
            report(name, "podman exec box true", r);
        }
    });
}
