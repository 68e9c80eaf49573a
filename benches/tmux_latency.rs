//! Per-command latency of `run_shell {"command":"true"}` in the managed tmux
//! pane, against two floors measured in the same run:
//! - tmux floor: a bare `tmux send-keys` process typing a marker into a
//!   bash pane, until a control-mode client sees it in `%output`;
//! - process floor: a bare local `sh -c true`.
//!
//! Uses a private tmux socket (never the user's server). Run with
//! `cargo bench --bench tmux_latency` (N with VIGIL_BENCH_N, default 200).

use std::sync::Arc;
use std::time::{Duration, Instant};

use vigil::exec::ExecutionContext;
use vigil::exec::tmux::control::{Control, Event};
use vigil::exec::tmux::{TmuxBackend, TmuxOptions};
use vigil::exec::transport::Local;
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::{Tool, ToolContext};

const SHELL: &str = "env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp TERM=screen PS1='$ ' bash --norc --noprofile";

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p90(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() * 9 / 10]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn tmux(sock: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new("tmux")
        .args(["-L", sock])
        .args(args)
        .env_remove("TMUX")
        .output()
        .expect("tmux runs")
}

struct Kill(String);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = tmux(&self.0, &["kill-server"]);
    }
}

#[tokio::main]
async fn main() {
    let n: usize = std::env::var("VIGIL_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let sock = format!("vigil-bench-{}", std::process::id());
    let _kill = Kill(sock.clone());

    // The managed pane through the run_shell tool.
    let backend = TmuxBackend::start(
        Local,
        TmuxOptions {
            socket: sock.clone(),
            agent_name: "bench".into(),
            shell: Some(SHELL.into()),
            ..Default::default()
        },
    )
    .await
    .expect("tmux backend");
    let tool = RunShell::new(
        ExecutionContext::from_arc(backend.clone()),
        ShellConfig {
            confirm: false,
            ..Default::default()
        },
    );
    let args = r#"{"command":"true","risk":"low","mutation":false,"privesc":false,"why":"bench"}"#;
    let args = vigil::tools::call_as_sent(&tool, args);
    let ctx = ToolContext::default();
    for _ in 0..20 {
        tool.execute(&args, &ctx).await.expect("warm-up");
    }

    // The tmux floor: a second session with the same shell.
    tmux(
        &sock,
        &[
            "new-session",
            "-d",
            "-s",
            "floor",
            "-x",
            "200",
            "-y",
            "50",
            SHELL,
        ],
    );
    let mut attach = tokio::process::Command::new("tmux");
    attach
        .args(["-L", &sock, "-C", "attach", "-t", "=floor"])
        .env_remove("TMUX");
    let (changes, _) = tokio::sync::watch::channel(0u64);
    let control: Arc<Control> = Control::start(attach, changes).await.expect("control");
    control.cmd("display -p ok").await.expect("control ready");
    tokio::time::sleep(Duration::from_millis(300)).await;

    let mut managed = Vec::with_capacity(n);
    let mut floor = Vec::with_capacity(n);
    let mut proc_floor = Vec::with_capacity(n);
    // Interleave the three so load changes hit them alike.
    for i in 0..n {
        let t = Instant::now();
        let out = tool.execute(&args, &ctx).await.expect("run_shell true");
        managed.push(t.elapsed());
        assert_eq!(out.exit_code, Some(0));

        let mut events = control.subscribe();
        let marker = format!("\x1b]5379;floor;{i}\x07");
        let t = Instant::now();
        let status = tokio::process::Command::new("tmux")
            .args(["-L", &sock, "send-keys", "-t", "=floor:", "-l", "--"])
            .arg(format!(" printf '\\033]5379;floor;{i}\\007'\r"))
            .env_remove("TMUX")
            .status()
            .await
            .expect("send-keys");
        assert!(status.success());
        let mut seen = Vec::new();
        'wait: while let Some(ev) = events.recv().await {
            if let Event::Output { data, .. } = ev {
                seen.extend_from_slice(&data);
                if seen.windows(marker.len()).any(|w| w == marker.as_bytes()) {
                    break 'wait;
                }
            }
        }
        floor.push(t.elapsed());

        let t = Instant::now();
        let st = tokio::process::Command::new("sh")
            .args(["-c", "true"])
            .status()
            .await
            .expect("sh");
        proc_floor.push(t.elapsed());
        assert!(st.success());
    }

    let (m, f, p) = (
        median(managed.clone()),
        median(floor.clone()),
        median(proc_floor.clone()),
    );
    println!("managed tmux latency, n = {n} (median / p90, ms)");
    println!(
        "  run_shell true in managed pane : {:7.3} / {:7.3}",
        ms(m),
        ms(p90(managed))
    );
    println!(
        "  tmux floor (send-keys+notice)  : {:7.3} / {:7.3}",
        ms(f),
        ms(p90(floor))
    );
    println!(
        "  process floor (sh -c true)     : {:7.3} / {:7.3}",
        ms(p),
        ms(p90(proc_floor))
    );
    println!(
        "  managed - tmux floor           : {:+7.3} ms",
        ms(m) - ms(f)
    );
    println!(
        "  managed / tmux floor           : {:7.2}x",
        m.as_secs_f64() / f.as_secs_f64()
    );
    println!(
        "  managed / process floor        : {:7.2}x",
        m.as_secs_f64() / p.as_secs_f64()
    );
    println!("  50 ms scrollback poll / managed: {:7.1}x", 50.0 / ms(m));
}
