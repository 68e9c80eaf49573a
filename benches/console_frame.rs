//! Console frame benchmark (`cargo bench --bench console_frame`).
//!
//! 1. Flood: `seq 1 2000000` read from a real child process in 8 KiB chunks,
//!    fed as `ToolOutput` events through the App the way the event loop does
//!    (bounded drain, one frame per 1/60 s at most), with a key injected
//!    every 5 ms; reports key-to-frame latency p50/p99, wall time against the
//!    bare command, and peak RSS (VmHWM).
//! 2. Start to first frame (App + theme + first draw on a TestBackend).
//! 3. One frame with 10 000 and with 20 000 conversation entries (cold and
//!    warm).

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use vigil::console::app::{App, Focus};
use vigil::console::style::theme::Theme;
use vigil_protocol::{AgentEvent, OutputStream, ToolSummary};

const LINES: u64 = 2_000_000;
const MAX_DRAIN: usize = 4096;
/// As in the event loop: stop draining after this long to look at keys.
const DRAIN_BUDGET: Duration = Duration::from_millis(4);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
        })
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn bare_seq() -> Duration {
    let start = Instant::now();
    let mut child = Command::new("seq")
        .arg("1")
        .arg(LINES.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("seq");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 8192];
    while out.read(&mut buf).map(|n| n > 0).unwrap_or(false) {}
    let _ = child.wait();
    start.elapsed()
}

fn flood() {
    let bare = bare_seq();
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("backend");
    let mut app = App::new(Instant::now());
    app.on_agent_event(AgentEvent::ToolStarted {
        call_id: "c1".into(),
        name: "run_shell".into(),
        summary: format!("seq 1 {LINES}"),
    });
    app.set_focus(Focus::Tools);
    let (tx, rx) = mpsc::channel::<AgentEvent>();
    let start = Instant::now();
    let reader = std::thread::spawn(move || {
        let mut child = Command::new("seq")
            .arg("1")
            .arg(LINES.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("seq");
        let mut out = child.stdout.take().expect("stdout");
        let mut buf = vec![0u8; 8192];
        loop {
            match out.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                    let ev = AgentEvent::ToolOutput {
                        call_id: "c1".into(),
                        stream: OutputStream::Stdout,
                        text,
                    };
                    if tx.send(ev).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = child.wait();
        start.elapsed()
    });
    let frame = Duration::from_secs_f64(1.0 / 60.0);
    let key_every = Duration::from_millis(5);
    let mut next_frame = Instant::now();
    let mut next_key = Instant::now() + key_every;
    let mut pending_keys: Vec<Instant> = Vec::new();
    let mut latencies = Vec::new();
    let mut frames = 0u64;
    let mut dirty = true;
    let mut open = true;
    let keys = [KeyCode::PageUp, KeyCode::End];
    let mut k = 0;
    while open || dirty {
        let now = Instant::now();
        // Keys "arrive" on a fixed schedule; every key due is applied at the
        // next look at the keyboard (between two bounded drains).
        while now >= next_key && open {
            pending_keys.push(next_key);
            next_key += key_every;
            app.on_key(KeyEvent::new(keys[k % 2], KeyModifiers::NONE));
            k += 1;
            dirty = true;
        }
        if dirty && now >= next_frame {
            term.draw(|f| app.draw(f)).expect("draw");
            frames += 1;
            let drawn = Instant::now();
            for t in pending_keys.drain(..) {
                latencies.push(drawn.saturating_duration_since(t));
            }
            dirty = false;
            next_frame = now + frame;
        }
        match rx.recv_timeout(Duration::from_millis(1)) {
            Ok(ev) => {
                app.on_agent_event(ev);
                let began = Instant::now();
                for _ in 0..MAX_DRAIN {
                    if began.elapsed() >= DRAIN_BUDGET {
                        break;
                    }
                    match rx.try_recv() {
                        Ok(ev) => app.on_agent_event(ev),
                        Err(_) => break,
                    }
                }
                dirty = true;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if dirty && next_frame > Instant::now() {
                    std::thread::sleep(next_frame - Instant::now());
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                if open {
                    open = false;
                    app.on_agent_event(AgentEvent::ToolCompleted {
                        call_id: "c1".into(),
                        name: "run_shell".into(),
                        summary: ToolSummary {
                            ok: true,
                            exit_code: Some(0),
                            duration_ms: start.elapsed().as_millis() as u64,
                            truncated: true,
                            spill: vec![],
                            seen: Vec::new(),
                            error: None,
                        },
                    });
                    dirty = true;
                    next_frame = Instant::now();
                }
            }
        }
    }
    let wall = start.elapsed();
    let command = reader.join().unwrap_or_default();
    latencies.sort();
    println!("flood: seq 1 {LINES} through App + draw at ≤60 fps, a key every 5 ms");
    println!(
        "  key-to-frame p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} keys, {} frames)",
        percentile(&latencies, 0.5).as_secs_f64() * 1e3,
        percentile(&latencies, 0.99).as_secs_f64() * 1e3,
        latencies.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
        latencies.len(),
        frames
    );
    println!(
        "  command wall {:.0} ms, console caught up at {:.0} ms, bare command {:.0} ms ({:.2}× / {:.2}×)",
        command.as_secs_f64() * 1e3,
        wall.as_secs_f64() * 1e3,
        bare.as_secs_f64() * 1e3,
        command.as_secs_f64() / bare.as_secs_f64().max(1e-9),
        wall.as_secs_f64() / bare.as_secs_f64().max(1e-9)
    );
    println!("  peak RSS (VmHWM) {:.1} MiB", vm_hwm_kib() as f64 / 1024.0);
}

fn first_frame() {
    let mut times = Vec::new();
    for _ in 0..20 {
        let start = Instant::now();
        let mut app = App::new(Instant::now());
        app.set_themes(vec![Theme::default()]);
        let mut term = Terminal::new(TestBackend::new(120, 40)).expect("backend");
        term.draw(|f| app.draw(f)).expect("draw");
        times.push(start.elapsed());
    }
    times.sort();
    println!(
        "start to first frame (App, theme, first draw; TestBackend 120×40): median {:.2} ms",
        percentile(&times, 0.5).as_secs_f64() * 1e3
    );
}

/// One frame with `2 × turns` conversation entries (a user message and a
/// markdown answer per turn): the first (cold) frame and warm ones.
fn many_entries(turns: usize) {
    let mut app = App::new(Instant::now());
    for i in 0..turns {
        app.on_agent_event(AgentEvent::TurnStarted {
            user: format!("question {i}"),
        });
        app.on_agent_event(AgentEvent::AssistantMessage {
            text: format!(
                "Answer {i} with **bold**, `code` and a list:\n- one\n- two\n```\nls -l\n```"
            ),
        });
    }
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("backend");
    let cold = Instant::now();
    term.draw(|f| app.draw(f)).expect("draw");
    let cold = cold.elapsed();
    let mut times = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        term.draw(|f| app.draw(f)).expect("draw");
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "one frame with {} conversation entries ({turns} turns): cold {:.2} ms, warm p50 {:.3} ms, p99 {:.3} ms",
        2 * turns,
        cold.as_secs_f64() * 1e3,
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3
    );
}

fn main() {
    flood();
    first_frame();
    many_entries(5_000);
    many_entries(10_000);
}
