//! The attach benchmark's flood: the real release `vigil __agent`
//! (`--no-tmux --auto-approve`) against the scripted model, which asks for
//! `seq 1 2000000` through `run_shell`; 1 and then 3 watch clients read
//! and parse every line, as a console's bridge would. Reports the agent's
//! VmHWM for each run, how far apart the clients were (sampled every
//! 2 ms, in output lines), when each saw the turn end after the first,
//! and how many "not shown" markers each got (it fell behind the output the
//! agent keeps).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use vigil_protocol::AgentEvent;
use vigil_protocol::wire::ServerMsg;
use vigil_scripted::{Scenario, ScriptedServer};

use super::stats::ms;

/// `seq 1 LINES` (`VIGIL_ATTACH_LINES`, default 2 000 000).
fn lines() -> u64 {
    std::env::var("VIGIL_ATTACH_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_000_000)
}

fn scenario(lines: u64) -> Scenario {
    Scenario::from_toml_str(&format!(
        r#"
model = "bench"
record_requests = false
[[rule]]
when = {{ role = "user", contains = "flood" }}
times = 0
tool_calls = [{{ name = "run_shell", arguments = {{ command = "seq 1 {lines}", risk = "low", mutation = false, privesc = false, why = "bench" }} }}]
[[rule]]
when = {{ role = "tool" }}
times = 0
text = "done"
"#
    ))
    .expect("scenario")
}

/// `VmHWM` / `VmRSS` of `pid`, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// What one reading client saw.
#[derive(Default)]
struct Seen {
    /// The newest `seq` output line it has parsed.
    line: AtomicU64,
    markers: AtomicU64,
    /// Nanoseconds after the start when it saw the turn end.
    end_ns: AtomicU64,
}

fn connect(socket: &str, role: &str) -> (UnixStream, BufReader<UnixStream>) {
    let mut s = UnixStream::connect(socket).expect("connect");
    let hello = format!(
        "{{\"type\":\"hello\",\"protocol\":1,\"role\":\"{role}\",\"last_seq\":0,\"name\":\"bench\"}}\n"
    );
    s.write_all(hello.as_bytes()).expect("hello");
    let r = BufReader::new(s.try_clone().expect("clone"));
    (s, r)
}

/// Read and parse until the turn ends.
fn reader(socket: String, seen: Arc<Seen>, start: Instant) {
    let (_s, mut r) = connect(&socket, "watch");
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let Ok(ServerMsg::Event { event, .. }) = serde_json::from_str::<ServerMsg>(&line) else {
            continue;
        };
        match event {
            AgentEvent::ToolOutput { text, .. } => {
                let last = text.trim_end().rsplit('\n').next().unwrap_or("");
                if let Ok(n) = last.parse::<u64>() {
                    seen.line.fetch_max(n, Ordering::Relaxed);
                }
            }
            AgentEvent::ToolInfo { text, .. } if text.contains("not shown") => {
                seen.markers.fetch_add(1, Ordering::Relaxed);
            }
            AgentEvent::TurnFinished { .. } => {
                seen.end_ns
                    .store(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
                return;
            }
            _ => {}
        }
    }
}

/// One flood with `clients` readers.
fn once(rt: &tokio::runtime::Runtime, clients: usize) {
    let lines = lines();
    let server = rt
        .block_on(ScriptedServer::start(scenario(lines)))
        .expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vigil"))
        .env("VIGIL_RUNTIME_DIR", dir.path().join("run"))
        .env("VIGIL_DATA_DIR", dir.path().join("data"))
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("xdg"))
        .args([
            "--no-tmux",
            "--auto-approve",
            "--base-url",
            &server.base_url(),
        ])
        .args(["--model", "bench", "__agent"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("vigil __agent");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut ready)
        .expect("ready line");
    let ready: serde_json::Value = serde_json::from_str(&ready).expect("ready JSON");
    let socket = ready["ready"]["socket"]
        .as_str()
        .expect("socket")
        .to_string();
    let pid = child.id();
    let start = Instant::now();
    let seen: Vec<Arc<Seen>> = (0..clients).map(|_| Arc::new(Seen::default())).collect();
    let threads: Vec<_> = seen
        .iter()
        .map(|s| {
            let (socket, s) = (socket.clone(), s.clone());
            std::thread::spawn(move || reader(socket, s, start))
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let idle_rss = status_kib(pid, "VmRSS:");
    let (mut s, _r) = connect(&socket, "console");
    let ask = "{\"type\":\"command\",\"command\":{\"type\":\"user_message\",\"text\":\"flood\"}}\n";
    s.write_all(ask.as_bytes()).expect("ask");
    let sent = Instant::now();
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (seen, done) = (seen.clone(), done.clone());
        std::thread::spawn(move || {
            let mut spread = Vec::new();
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
                let now: Vec<u64> = seen
                    .iter()
                    .map(|s| s.line.load(Ordering::Relaxed))
                    .collect();
                let (lo, hi) = (now.iter().min().copied(), now.iter().max().copied());
                if let (Some(lo), Some(hi)) = (lo, hi)
                    && hi > 0
                    && hi < lines
                {
                    spread.push(hi - lo);
                }
            }
            spread
        })
    };
    for t in threads {
        let _ = t.join();
    }
    let wall = sent.elapsed();
    done.store(true, Ordering::Relaxed);
    let mut spread = sampler.join().expect("sampler");
    let hwm = status_kib(pid, "VmHWM:");
    let _ = s.write_all(b"{\"type\":\"stop\",\"on_exit\":\"keep\"}\n");
    let _ = child.wait();
    spread.sort_unstable();
    let ends: Vec<u64> = seen
        .iter()
        .map(|s| s.end_ns.load(Ordering::Relaxed))
        .collect();
    let first = ends.iter().min().copied().unwrap_or(0);
    let lags: Vec<String> = ends
        .iter()
        .map(|e| format!("{:.1}", (e - first) as f64 / 1e6))
        .collect();
    let markers: Vec<u64> = seen
        .iter()
        .map(|s| s.markers.load(Ordering::Relaxed))
        .collect();
    let lines_per_ms = lines as f64 / ms(wall).max(1.0);
    let p = |q: usize| spread.get((spread.len() * q / 100).min(spread.len().saturating_sub(1)));
    println!(
        "flood seq 1 {lines}, {clients} watch client(s): agent VmHWM {:.1} MiB (idle RSS {:.1} MiB), \
         turn {:.0} ms",
        hwm as f64 / 1024.0,
        idle_rss as f64 / 1024.0,
        ms(wall)
    );
    if clients > 1 {
        let d = |v: Option<&u64>| v.copied().unwrap_or(0);
        println!(
            "  clients apart (newest line, every 2 ms, {} samples): p50 {} lines, p99 {} lines, \
             max {} lines (≈ {:.1} / {:.1} / {:.1} ms of output)",
            spread.len(),
            d(p(50)),
            d(p(99)),
            d(p(100)),
            d(p(50)) as f64 / lines_per_ms,
            d(p(99)) as f64 / lines_per_ms,
            d(p(100)) as f64 / lines_per_ms
        );
    }
    let last: Vec<u64> = seen
        .iter()
        .map(|s| s.line.load(Ordering::Relaxed))
        .collect();
    println!(
        "  turn end seen after the first client: [{}] ms; \"not shown\" markers: {markers:?}; \
         last line seen: {last:?}",
        lags.join(", ")
    );
}

pub fn run(rt: &tokio::runtime::Runtime) {
    once(rt, 1);
    once(rt, 3);
}
