//! Attaching to an agent process (`cargo bench --bench attach`).
//!
//! 1. Attach to a journal of 10 000 events (a realistic mix: turns with
//!    streamed text, gated tool calls with output, context usage) over the
//!    real socket server (`vigil::agent::server`, the code `vigil __agent`
//!    runs, here in this process): hello until `Live` (read and parsed),
//!    then the console `App` absorbing the events and drawing one frame on a
//!    TestBackend. Baseline in the same run: the same events absorbed from
//!    memory (what an in-process console does). Goal: ≤ 150 ms to the frame.
//! 2. Event latency agent → client: an event handed to the server's pump
//!    until a client thread has read and parsed it from the socket, against
//!    a tokio mpsc to a thread (today's in-process console). p50/p99.
//!    Goal: within 1 ms of in-process at p50.
//! 3. A 2 M-line flood (`seq 1 2000000` through `run_shell`, `--no-tmux`)
//!    in the real release `vigil __agent`, read by 1 and by 3 watch
//!    clients: the agent's VmHWM for each (memory must not grow with
//!    clients), how far the clients fell behind one another (sampled every
//!    16 ms) and when each saw the turn end. See `attach/flood.rs`.
//!
//! `VIGIL_BENCH_N` sets the repetitions of (1) (default 15) and the events
//! of (2) (100 N + 500, default 2 000); `VIGIL_ATTACH_PARTS=attach,latency,flood`
//! picks parts. Temporary folders are removed.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::mpsc;
use vigil::agent::approval::{ApprovalBroker, Policy};
use vigil::agent::server::hub::{self, Hub, Identity};
use vigil::agent::server::journal::Journal;
use vigil::agent::server::{accept, listener};
use vigil::console::app::App;
use vigil_protocol::wire::ServerMsg;
use vigil_protocol::{AgentCommand, AgentEvent};

#[path = "attach/flood.rs"]
mod flood;
#[path = "attach/mix.rs"]
mod mix;
#[path = "support/stats.rs"]
mod stats;

use stats::{ms, pct};

fn reps() -> usize {
    std::env::var("VIGIL_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
}

/// A socket server over a hub; the pump's sender and the socket path.
struct Served {
    hub: Arc<Hub>,
    events: mpsc::UnboundedSender<AgentEvent>,
    socket: std::path::PathBuf,
    _commands: mpsc::UnboundedReceiver<AgentCommand>,
    _dir: tempfile::TempDir,
}

fn serve(rt: &tokio::runtime::Runtime) -> Served {
    let _guard = rt.enter();
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("bench.sock");
    let (broker_tx, _) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(broker_tx, "local".into(), Policy::Ask));
    let (cmd_tx, commands) = mpsc::unbounded_channel();
    let identity = Identity {
        id: "bench".into(),
        model: "bench".into(),
        socket: socket.clone(),
        ..Identity::default()
    };
    let hub = Hub::new(
        identity,
        Journal::default(),
        broker,
        cmd_tx,
        None,
        Default::default(),
    );
    let (events, rx) = mpsc::unbounded_channel();
    rt.spawn(hub::pump(hub.clone(), rx));
    let bound = listener::bind(&socket).expect("bind");
    accept::spawn(hub.clone(), bound.listener);
    Served {
        hub,
        events,
        socket,
        _commands: commands,
        _dir: dir,
    }
}

/// A connected client after its hello: the reader.
fn hello(socket: &std::path::Path, role: &str, last_seq: u64) -> BufReader<UnixStream> {
    let mut s = UnixStream::connect(socket).expect("connect");
    let line = format!(
        "{{\"type\":\"hello\",\"protocol\":1,\"role\":\"{role}\",\"last_seq\":{last_seq},\"name\":\"bench\"}}\n"
    );
    s.write_all(line.as_bytes()).expect("hello");
    BufReader::new(s)
}

fn next_msg(r: &mut BufReader<UnixStream>, line: &mut String) -> Option<ServerMsg> {
    line.clear();
    match r.read_line(line) {
        Ok(0) | Err(_) => None,
        Ok(_) => serde_json::from_str(line).ok(),
    }
}

/// Replay until `Live`: the events read and parsed.
fn replay(socket: &std::path::Path) -> Vec<AgentEvent> {
    let mut r = hello(socket, "console", 0);
    let mut line = String::new();
    let mut events = Vec::new();
    while let Some(msg) = next_msg(&mut r, &mut line) {
        match msg {
            ServerMsg::Event { event, .. } => events.push(event),
            ServerMsg::Live { .. } => break,
            _ => {}
        }
    }
    events
}

/// The App absorbing `events`, then one frame.
fn absorb_and_draw(events: Vec<AgentEvent>) {
    let mut app = App::new(Instant::now());
    for e in events {
        app.on_agent_event(e);
    }
    let mut term = Terminal::new(TestBackend::new(120, 40)).expect("backend");
    term.draw(|f| app.draw(f)).expect("draw");
}

fn attach_10k(rt: &tokio::runtime::Runtime) {
    let served = serve(rt);
    let events = mix::events(10_000);
    for e in events.iter().cloned() {
        served.hub.record(e);
    }
    let n = reps();
    let (mut live, mut frame, mut base) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let t = Instant::now();
        let got = replay(&served.socket);
        live.push(t.elapsed());
        assert_eq!(
            got.len(),
            served.hub.journal().len(),
            "every entry replayed"
        );
        absorb_and_draw(got);
        frame.push(t.elapsed());
        let t = Instant::now();
        absorb_and_draw(events.clone());
        base.push(t.elapsed());
    }
    for v in [&mut live, &mut frame, &mut base] {
        v.sort();
    }
    let bytes = served.hub.journal().read_after(0, usize::MAX, usize::MAX);
    let size: usize = bytes.lines.iter().map(|l| l.as_str().len()).sum();
    println!(
        "attach to 10 000 events ({:.1} MiB of lines), {n} runs, load {}:",
        size as f64 / (1 << 20) as f64,
        stats::load()
    );
    println!(
        "  socket until Live (read + parsed): p50 {:.1} ms, max {:.1} ms",
        ms(pct(&live, 50)),
        ms(pct(&live, 100))
    );
    println!(
        "  attach to first complete frame: p50 {:.1} ms, max {:.1} ms (goal <= 150 ms)",
        ms(pct(&frame, 50)),
        ms(pct(&frame, 100))
    );
    println!(
        "  in-process baseline (App absorbs the same events + frame): p50 {:.1} ms ({:.2}x)",
        ms(pct(&base, 50)),
        ms(pct(&frame, 50)) / ms(pct(&base, 50)).max(1e-9)
    );
}

/// Nanoseconds since `base`, as a notice's text.
fn stamp(base: Instant) -> AgentEvent {
    AgentEvent::Notice {
        text: base.elapsed().as_nanos().to_string(),
    }
}

fn latency_of(text: &str, base: Instant) -> Option<Duration> {
    let sent: u64 = text.parse().ok()?;
    Some(base.elapsed().saturating_sub(Duration::from_nanos(sent)))
}

fn latency(rt: &tokio::runtime::Runtime) {
    let n = reps() * 100 + 500;
    let base = Instant::now();
    // In process: a tokio mpsc to a thread.
    let (tx, mut rx) = mpsc::unbounded_channel::<AgentEvent>();
    let reader = std::thread::spawn(move || {
        let mut lat = Vec::new();
        while let Some(AgentEvent::Notice { text }) = rx.blocking_recv() {
            lat.extend(latency_of(&text, base));
        }
        lat
    });
    for _ in 0..n {
        let _ = tx.send(stamp(base));
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(tx);
    let mut inproc = reader.join().expect("reader");
    // Through the socket: pump → journal → writer → socket → parsed.
    let served = serve(rt);
    let socket = served.socket.clone();
    let reader = std::thread::spawn(move || {
        let mut r = hello(&socket, "watch", 0);
        let mut line = String::new();
        let mut lat = Vec::new();
        while let Some(msg) = next_msg(&mut r, &mut line) {
            match msg {
                ServerMsg::Event {
                    event: AgentEvent::Notice { text },
                    ..
                } if text == "end" => break,
                ServerMsg::Event {
                    event: AgentEvent::Notice { text },
                    ..
                } => lat.extend(latency_of(&text, base)),
                _ => {}
            }
        }
        lat
    });
    while served.hub.info().consoles == 0 {
        std::thread::sleep(Duration::from_millis(5));
    }
    for _ in 0..n {
        let _ = served.events.send(stamp(base));
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = served
        .events
        .send(AgentEvent::Notice { text: "end".into() });
    let mut socket = reader.join().expect("reader");
    inproc.sort();
    socket.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "event latency, {n} events 1 ms apart, load {}:",
        stats::load()
    );
    println!(
        "  in-process mpsc → thread: p50 {:.0} µs, p99 {:.0} µs",
        us(pct(&inproc, 50)),
        us(pct(&inproc, 99))
    );
    println!(
        "  agent server → socket → parsed: p50 {:.0} µs, p99 {:.0} µs ({} events)",
        us(pct(&socket, 50)),
        us(pct(&socket, 99)),
        socket.len()
    );
    println!(
        "  difference: p50 +{:.0} µs, p99 +{:.0} µs (goal: p50 within 1 ms)",
        us(pct(&socket, 50).saturating_sub(pct(&inproc, 50))),
        us(pct(&socket, 99).saturating_sub(pct(&inproc, 99)))
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let parts = std::env::var("VIGIL_ATTACH_PARTS").unwrap_or_default();
    let wanted = |p: &str| parts.is_empty() || parts.split(',').any(|w| w == p);
    if wanted("attach") {
        attach_10k(&rt);
    }
    if wanted("latency") {
        latency(&rt);
    }
    if wanted("flood") {
        flood::run(&rt);
    }
}
