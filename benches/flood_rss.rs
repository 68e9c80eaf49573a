//! The real binary under an output flood, the way an operator runs it
//! (`cargo bench --bench flood_rss`).
//!
//! The release `vigil` runs in a tmux pane (the console attached, 100×30)
//! against the scripted model server, which asks for `run_shell` of
//! `seq 1 N`: 15 MB (N = 2 000 000) and 169 MB (N = 20 000 000), and 1 GB
//! (N = 111 111 111) when `VIGIL_FLOOD_GB=1`; in the default managed-pane
//! mode and with `--no-tmux`. For each it reports:
//! - peak RSS: the sum of the VmHWM of every vigil process (sampled while it runs) and
//!   VmRSS one second after the turn ended (memory given back);
//! - key→frame latency during the flood: a key typed into the input box
//!   until capture-pane shows it (p50/p99; a capture costs ~4 ms), and the
//!   same probe before the flood (idle: what the probe sees on this machine
//!   at this moment) and while a bare flood runs beside the idle console,
//!   `seq 1 N > file` (tmux mode) or `seq 1 N | cat > file` (plain mode)
//!   (beside: what the flood itself costs the keys; a floor, skipped with
//!   the others by `VIGIL_FLOOD_FLOOR=0`);
//! - wall: Enter to the turn's end on screen, against the same command in a
//!   bare tmux pane of the managed pane's size (tmux mode) or a bare
//!   `sh -c` whose output is read and dropped (plain mode), measured before
//!   and after vigil's run (the ratio is against their mean); in plain mode
//!   also a bare `sh -c` whose output is written to a file (the disk's
//!   share);
//! - the session's `events.jsonl` and spill sizes.
//!
//! `VIGIL_FLOOD_SIZES=2000000,20000000` picks sizes, `VIGIL_FLOOD_MODES=tmux`
//! picks modes, `VIGIL_FLOOD_FLOOR=0` skips the floors (a 1 GB bare pane
//! takes minutes), `VIGIL_FLOOD_REPEAT=N` pools the keys of N runs,
//! `VIGIL_FLOOD_BIN` runs another vigil binary (before/after in the same
//! minutes), `VIGIL_FLOOD_TIMELINE=1` prints the recorded events' times,
//! `VIGIL_FLOOD_SLOW=MS` prints every key slower than MS and when it was sent,
//! and the console's own slow frames (its `vigil::latency` log).
//! The bare pane runs the managed pane's shell (`bash`, rc files) and both
//! are typed into only at their prompt. Every tmux server is private
//! (`-L vigil-flood-…`) and killed at the end; temporary folders are removed.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use vigil_scripted::{Scenario, ScriptedServer};

#[path = "flood/keys.rs"]
mod keys;
#[path = "flood/session_files.rs"]
mod session_files;
use keys::{Watch, beside_keys, beside_script, clear_input, idle_keys, probe_key};
use session_files::{bytes_under, slow_frames, timeline, unix_ms};

/// The binary under test: `VIGIL_FLOOD_BIN` (e.g. a copy of an older
/// build, to compare before and after in the same minutes) or this build's.
fn vigil_bin() -> String {
    std::env::var("VIGIL_FLOOD_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_vigil").to_string())
}
/// The managed pane's size (config `[tmux] width/height`).
const PANE: (u16, u16) = (200, 50);

fn scenario(n: u64) -> String {
    format!(
        r#"
model = "e2e"
chunk_delay_ms = 0

[[rule]]
when = {{ role = "user", contains = "flood" }}
times = 0
text = "Flooding."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "seq 1 {n}"
risk = "low"
mutation = false
privesc = false
why = "bench flood"

[[rule]]
when = {{ role = "tool" }}
times = 0
text = "FLOOD-DONE"
"#
    )
}

const CONFIG: &str = r#"
[tools]
shell_confirm = false

[tmux]
shell = "bash"
width = 200
height = 50
"#;

/// A private tmux server, killed on drop.
struct Tmux(String);

impl Tmux {
    fn new(tag: &str) -> Tmux {
        Tmux(format!("vigil-flood-{tag}-{}", std::process::id()))
    }
    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.0, "-f", "/dev/null"])
            .args(args)
            .env_remove("TMUX")
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
    fn screen(&self, target: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", target])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.run(&["kill-server"]);
    }
}

fn status_kib(pid: i32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

fn children(pid: i32) -> Vec<i32> {
    let path = format!("/proc/{pid}/task/{pid}/children");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// Every process under `root` (itself included) running the vigil binary.
fn vigil_pids(root: i32) -> Vec<i32> {
    let bin = Path::new(&vigil_bin())
        .canonicalize()
        .expect("vigil binary");
    let mut todo = vec![root];
    let mut found = Vec::new();
    while let Some(pid) = todo.pop() {
        if std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| e == bin) {
            found.push(pid);
        }
        todo.extend(children(pid));
    }
    found
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn wait_screen(t: &Tmux, target: &str, what: &str, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if t.screen(target).contains(what) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

struct Figures {
    /// The sum over every vigil process of its VmHWM.
    hwm_kib: u64,
    processes: usize,
    after_kib: u64,
    keys: Vec<Duration>,
    /// Key→frame before the flood, same method.
    idle: Vec<Duration>,
    /// Key→frame while a bare flood runs beside the idle console.
    beside: Vec<Duration>,
    wall: Duration,
    events: u64,
    spill: u64,
    /// Recorded events, ms after Enter.
    timeline: Vec<(i64, String)>,
}

/// One flood through the real binary.
fn through_vigil(tmux_mode: bool, url: &str, n: u64) -> Figures {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, CONFIG).expect("config");
    let data = dir.path().join("data");
    let outer = Tmux::new("console");
    let inner = Tmux::new("agent");
    let launch = format!(
        "cd {work} && env TERM=xterm-256color VIGIL_DATA_DIR={data} VIGIL_TMUX_SOCKET={sock} \
         VIGIL_RUNTIME_DIR={rt} XDG_CONFIG_HOME={xdg} {log}{vigil} --config {cfg} --base-url {url} --model e2e {extra}",
        work = dir.path().display(),
        data = data.display(),
        sock = inner.0,
        xdg = dir.path().join("xdg").display(),
        rt = dir.path().join("rt").display(),
        vigil = vigil_bin(),
        cfg = cfg.display(),
        extra = if tmux_mode { "" } else { "--no-tmux" },
        // With VIGIL_FLOOD_SLOW the console logs its own slow frames.
        log = if slow_ms().is_some() {
            "VIGIL_LOG=vigil::latency=debug "
        } else {
            ""
        },
    );
    outer.run(&[
        "new-session",
        "-d",
        "-s",
        "c",
        "-x",
        "100",
        "-y",
        "30",
        &launch,
    ]);
    assert!(
        wait_screen(&outer, "c", "e2e", Duration::from_secs(30)),
        "vigil did not start:\n{}",
        outer.screen("c")
    );
    let pane: i32 = outer
        .run(&["display", "-p", "-t", "c", "#{pane_pid}"])
        .trim()
        .parse()
        .expect("pane pid");
    // Let the managed pane's shell reach its prompt before the flood (its
    // rc files run first, as in the bare pane).
    if tmux_mode {
        let panes = inner.run(&["list-panes", "-a", "-F", "#{pane_id}"]);
        let first = panes.lines().next().unwrap_or("").to_string();
        if !wait_prompt(&inner, &first) {
            println!("      (the managed pane {first:?} showed no prompt in 60 s)");
        }
    } else {
        std::thread::sleep(Duration::from_millis(500));
    }
    let idle = idle_keys(&outer);
    let beside = if floors_on() {
        beside_keys(&outer, n, !tmux_mode)
    } else {
        Vec::new()
    };
    outer.run(&["send-keys", "-t", "c", "-l", "flood"]);
    let start = Instant::now();
    let enter_ms = unix_ms();
    outer.run(&["send-keys", "-t", "c", "Enter"]);
    let (keys, wall, mut hwm) = probe_until_done(&outer, pane, start);
    std::thread::sleep(Duration::from_secs(1));
    if slow_ms().is_some() {
        match slow_frames(&data, enter_ms) {
            None => println!("      (the console wrote no log)"),
            Some(frames) => {
                for (at, fields) in frames {
                    println!("      console slow frame {at} ms after Enter: {fields}");
                }
            }
        }
    }
    let pids = vigil_pids(pane);
    sample_hwm(&mut hwm, &pids);
    let after_kib = pids.iter().map(|&p| status_kib(p, "VmRSS:")).sum();
    // The console and the agent process it started (which outlives a
    // closed terminal by design): both are ours, found under the pane.
    for &p in &pids {
        // SAFETY: SIGTERM to a vigil process this run started.
        unsafe { libc::kill(p, libc::SIGTERM) };
    }
    Figures {
        hwm_kib: hwm.values().sum(),
        processes: hwm.len(),
        after_kib,
        keys,
        idle,
        beside,
        wall,
        events: bytes_under(&data, "events.jsonl"),
        spill: bytes_under(&data, "spill"),
        timeline: timeline(&data, enter_ms),
    }
}

/// Peak VmHWM seen per vigil process.
type Peaks = std::collections::HashMap<i32, u64>;

fn sample_hwm(peaks: &mut Peaks, pids: &[i32]) {
    for &p in pids {
        let kib = status_kib(p, "VmHWM:");
        let peak = peaks.entry(p).or_default();
        *peak = (*peak).max(kib);
    }
}

/// Type a key into the input box every ~30 ms until the turn's end shows;
/// returns the key→frame latencies, the wall time and the peak VmHWM seen.
fn probe_until_done(t: &Tmux, pane: i32, start: Instant) -> (Vec<Duration>, Duration, Peaks) {
    let mut keys = Vec::new();
    let mut hwm = Peaks::new();
    let mut typed = 0usize;
    let limit = Duration::from_secs(600);
    let mut watch = Watch { start, done: None };
    loop {
        sample_hwm(&mut hwm, &vigil_pids(pane));
        let screen = watch.look(t);
        if let Some(wall) = watch.done {
            return (keys, wall, hwm);
        }
        assert!(start.elapsed() < limit, "the flood never ended:\n{screen}");
        if typed >= 40 {
            // Keep the input line short: clear it and wait for that.
            clear_input(t, typed);
            typed = 0;
            continue;
        }
        typed += 1;
        let sent = start.elapsed();
        if let Some(d) = probe_key(t, typed, &mut watch) {
            if slow_ms().is_some_and(|slow| d.as_millis() >= slow) {
                println!(
                    "      slow key: sent {:.0} ms after Enter, shown {:.1} ms later",
                    ms(sent),
                    ms(d)
                );
            }
            keys.push(d);
        }
        watch.pause(t, Duration::from_millis(30));
    }
}

/// `VIGIL_FLOOD_SLOW=MS`: report keys slower than MS (and the console's
/// own slow frames).
fn slow_ms() -> Option<u128> {
    let v = std::env::var("VIGIL_FLOOD_SLOW").ok()?;
    Some(v.parse().unwrap_or(50))
}

/// Wait (up to 60 s) until the pane's last non-blank line ends like a
/// shell prompt (`$`, `#`, `%` or `>`): its rc files have run.
fn wait_prompt(t: &Tmux, target: &str) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(60) {
        let screen = t.screen(target);
        let last = screen.lines().rev().find(|l| !l.trim().is_empty());
        if last.is_some_and(|l| l.trim_end().ends_with(['$', '#', '%', '>'])) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// The same command typed into a bare pane of the managed pane's size,
/// running the same shell the managed pane runs (`bash` with the user's rc
/// files, this process's environment), once it shows its prompt.
fn bare_pane(n: u64) -> Duration {
    let t = Tmux::new("bare");
    let (w, h) = (PANE.0.to_string(), PANE.1.to_string());
    t.run(&["new-session", "-d", "-s", "b", "-x", &w, "-y", &h, "bash"]);
    assert!(
        wait_prompt(&t, "b"),
        "bash showed no prompt in 60 s (an rc file waiting on a lock, e.g. a stale \
         ~/.pyenv/shims/.pyenv-shim?):\n{}",
        t.screen("b")
    );
    let line = format!("seq 1 {n}; tmux -L {} wait-for -S flood-done", t.0);
    t.run(&["send-keys", "-t", "b", "-l", &line]);
    let start = Instant::now();
    t.run(&["send-keys", "-t", "b", "Enter"]);
    t.run(&["wait-for", "flood-done"]);
    start.elapsed()
}

/// The same command as a bare `sh -c`, its output read and dropped.
fn bare_sh(n: u64) -> Duration {
    bare_sh_into(n, &mut std::io::sink())
}

/// The same command as a bare `sh -c`, its output read and written to a
/// file (what any spill costs: the disk's share of vigil's wall).
fn bare_sh_to_file(n: u64) -> Duration {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut file = std::fs::File::create(dir.path().join("out")).expect("file");
    bare_sh_into(n, &mut file)
}

fn bare_sh_into(n: u64, sink: &mut dyn std::io::Write) -> Duration {
    let start = Instant::now();
    let mut child = Command::new("sh")
        .args(["-c", &format!("seq 1 {n}")])
        .stdout(Stdio::piped())
        .spawn()
        .expect("sh");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; 64 * 1024];
    while let Ok(k @ 1..) = out.read(&mut buf) {
        sink.write_all(&buf[..k]).expect("write");
    }
    let _ = child.wait();
    start.elapsed()
}

/// `VIGIL_FLOOD_REPEAT=N`: run vigil N times per size and mode (a p99 of
/// the ~10 keys one 169 MB run probes is its maximum).
fn repeat() -> usize {
    std::env::var("VIGIL_FLOOD_REPEAT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1usize)
        .max(1)
}

/// Several runs as one: keys pooled, the median wall, the worst memory.
fn pooled(runs: impl Iterator<Item = Figures>) -> Figures {
    let mut runs: Vec<Figures> = runs.collect();
    runs.sort_by_key(|f| f.wall);
    let mid = runs.len() / 2;
    let keys = runs.iter().flat_map(|f| f.keys.clone()).collect();
    let idle = runs.iter().flat_map(|f| f.idle.clone()).collect();
    let beside = runs.iter().flat_map(|f| f.beside.clone()).collect();
    let worst = |g: fn(&Figures) -> u64| runs.iter().map(g).max().unwrap_or(0);
    let (hwm_kib, after_kib) = (worst(|f| f.hwm_kib), worst(|f| f.after_kib));
    let (events, spill) = (worst(|f| f.events), worst(|f| f.spill));
    let median = runs.swap_remove(mid);
    Figures {
        hwm_kib,
        after_kib,
        keys,
        idle,
        beside,
        events,
        spill,
        ..median
    }
}

/// `VIGIL_FLOOD_FLOOR=0` skips the floors.
fn floors_on() -> bool {
    std::env::var("VIGIL_FLOOD_FLOOR").map_or(true, |v| v != "0")
}

fn sizes() -> Vec<u64> {
    if let Ok(list) = std::env::var("VIGIL_FLOOD_SIZES") {
        return list
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
    }
    let mut v = vec![2_000_000, 20_000_000];
    if std::env::var("VIGIL_FLOOD_GB").is_ok_and(|v| v == "1") {
        v.push(111_111_111);
    }
    v
}

fn modes() -> Vec<bool> {
    match std::env::var("VIGIL_FLOOD_MODES").as_deref() {
        Ok("tmux") => vec![true],
        Ok("plain") => vec![false],
        _ => vec![true, false],
    }
}

fn seq_bytes(n: u64) -> u64 {
    let mut total = 0;
    let mut lo = 1u64;
    let mut digits = 1;
    while lo <= n {
        let hi = (lo * 10 - 1).min(n);
        total += (hi - lo + 1) * (digits + 1);
        lo *= 10;
        digits += 1;
    }
    total
}

/// p50 and p99 of `d`, in ms.
fn p50_p99(d: &[Duration]) -> (f64, f64) {
    let mut d = d.to_vec();
    d.sort();
    (ms(percentile(&d, 0.5)), ms(percentile(&d, 0.99)))
}

/// `floors`: the bare run before and after vigil's; the ratio is against
/// their mean (zero: not measured). `to_file`: plain mode's bare `sh -c`
/// whose output is written to a file.
fn report(
    n: u64,
    tmux_mode: bool,
    f: &Figures,
    floors: (Duration, Duration),
    to_file: Option<Duration>,
) {
    let (k50, k99) = p50_p99(&f.keys);
    let (i50, i99) = p50_p99(&f.idle);
    let floor = (floors.0 + floors.1) / 2;
    let ratio = if floor.is_zero() {
        "not measured".to_string()
    } else {
        format!("{:.2}×", f.wall.as_secs_f64() / floor.as_secs_f64())
    };
    let mode = if tmux_mode { "tmux " } else { "plain" };
    let floor_name = if tmux_mode { "bare pane" } else { "bare sh -c" };
    println!(
        "{mode} seq 1 {n} ({:.0} MB): peak RSS {:.1} MiB ({} vigil process(es)), after {:.1} MiB | key→frame p50 {k50:.1} ms \
         p99 {k99:.1} ms ({} keys; idle p50 {i50:.1} ms p99 {i99:.1} ms) | wall {:.2} s vs {floor_name} \
         {:.2} s ({:.2} s before, {:.2} s after) = {ratio} | events.jsonl {} B, spill {:.0} MB",
        seq_bytes(n) as f64 / 1e6,
        f.hwm_kib as f64 / 1024.0,
        f.processes,
        f.after_kib as f64 / 1024.0,
        f.keys.len(),
        f.wall.as_secs_f64(),
        floor.as_secs_f64(),
        floors.0.as_secs_f64(),
        floors.1.as_secs_f64(),
        f.events,
        f.spill as f64 / 1e6,
    );
    if std::env::var("VIGIL_FLOOD_TIMELINE").is_ok_and(|v| v == "1") {
        let steps: Vec<String> = f
            .timeline
            .iter()
            .map(|(at, k)| format!("{at} {k}"))
            .collect();
        println!("      timeline (ms after Enter): {}", steps.join(", "));
    }
    if !f.beside.is_empty() {
        let (b50, b99) = p50_p99(&f.beside);
        println!(
            "      key→frame beside a bare `{}` (vigil idle): p50 {b50:.1} ms p99 {b99:.1} ms ({} keys)",
            beside_script(n, !tmux_mode, std::path::Path::new("file")).replace("'", ""),
            f.beside.len()
        );
    }
    if let Some(d) = to_file {
        println!(
            "      wall {:.2} s vs bare sh -c writing its output to a file {:.2} s = {:.2}×",
            f.wall.as_secs_f64(),
            d.as_secs_f64(),
            f.wall.as_secs_f64() / d.as_secs_f64()
        );
    }
}

fn main() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for n in sizes() {
        let scenario = Scenario::from_toml_str(&scenario(n)).expect("scenario");
        let server = rt
            .block_on(ScriptedServer::start(scenario))
            .expect("server");
        for tmux_mode in modes() {
            // VIGIL_FLOOD_FLOOR=0 skips the floors (a 1 GB bare pane
            // takes minutes).
            let floors = floors_on();
            let bare = || match (floors, tmux_mode) {
                (false, _) => Duration::ZERO,
                (true, true) => bare_pane(n),
                (true, false) => bare_sh(n),
            };
            let before = bare();
            let f = pooled((0..repeat()).map(|_| through_vigil(tmux_mode, &server.base_url(), n)));
            let after = bare();
            let to_file = (floors && !tmux_mode).then(|| bare_sh_to_file(n));
            report(n, tmux_mode, &f, (before, after), to_file);
        }
        drop(server);
    }
}
