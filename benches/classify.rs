//! Classification time per command (`cargo bench --bench classify`): 1 000
//! mixed commands (everyday agent commands and the hostile table of
//! `tests/guard/approval_evasion.rs`), each timed alone, in three forms measured
//! in the same run, interleaved so load hits all alike:
//!
//! - **baseline**: a whitespace split of the text into words (the least any
//!   reader of the command does);
//! - **classify**: `shell::parse` + `risk::assess` (vigil's estimate);
//! - **decide**: the broker's whole decision as the console makes it
//!   (`ApprovalBroker::preview`, auto_low, 11 session prefix rules, a
//!   6-rule policy file).
//!
//! Prints p50 / p99 / max per form and the ratios to the baseline. Goal:
//! decide p99 ≤ 50 µs. `VIGIL_BENCH_ROUNDS` (default 5) passes over the
//! 1 000 commands. Figures go in BENCHMARKS.md.

#[path = "../tests/evasion/table.rs"]
#[allow(dead_code)]
mod table;

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use table::gate;
use tokio::sync::mpsc;
use vigil::agent::approval::{ApprovalBroker, Policy};
use vigil::config::Config;
use vigil::policy::rules::PolicyRules;
use vigil_protocol::approval::{GateInfo, Risk};

/// Commands an agent runs every day (some low, most not).
const EVERYDAY: &[&str] = &[
    "ls -la",
    "ls -la /var/log",
    "cat Cargo.toml",
    "git status",
    "git log --oneline -20",
    "git diff --stat HEAD~3",
    "grep -rn 'fn main' src/",
    "head -n 50 src/main.rs",
    "tail -n 100 /var/log/syslog",
    "wc -l src/*.rs",
    "cargo build --release 2>&1 | tail -20",
    "cargo test --locked --lib shell::tests",
    "ps aux | grep nginx | grep -v grep",
    "df -h",
    "du -sh /var/lib/docker",
    "systemctl status nginx --no-pager",
    "journalctl -u nginx --since '1 hour ago' --no-pager | tail -50",
    "find . -name '*.rs' -newer Cargo.toml",
    "cat /etc/os-release",
    "uname -a",
    "echo hello world",
    "pwd",
    "id",
    "free -m",
    "docker ps --format '{{.Names}}'",
    "kubectl get pods -n default -o wide",
    "curl -s http://127.0.0.1:8080/health",
    "sed -n '1,40p' src/lib.rs",
    "sort -u names.txt | head",
    "cd /srv/app && git pull --ff-only && make -j2",
    "for f in *.log; do gzip \"$f\"; done",
    "if [ -f /etc/nginx/nginx.conf ]; then nginx -t; fi",
    "tar -czf backup.tgz /etc/nginx",
    "rm -rf target/debug/incremental",
    "apt-get install -y ripgrep",
    "python3 -c 'import sys; print(sys.version)'",
    "cat <<'EOF' > notes.txt\nline one\nline two\nEOF",
    "git log --format='%h %an %s' --since=2.weeks | head -30",
    "stat -c '%s %n' Cargo.lock",
    "diff -u a.txt b.txt",
];

/// 1 000 commands: the everyday ones and the hostile table, interleaved,
/// with a path of varying length appended to every third.
fn commands() -> Vec<String> {
    let dir = Path::new("/tmp/vigil-bench");
    let hostile = table::TABLE.iter().map(|c| {
        c.command
            .replace("{M}", &dir.join("marker").display().to_string())
            .replace("{V}", &dir.join("victim").display().to_string())
            .replace("{DIR}", &dir.display().to_string())
            .replace("{SLEEP}", "9.5")
    });
    let everyday = EVERYDAY.iter().map(|s| s.to_string());
    let pool: Vec<String> = everyday.chain(hostile).collect();
    (0..1000)
        .map(|i| {
            let base = &pool[(i * 7919) % pool.len()];
            if i % 3 == 0 {
                format!("{base} /srv/{}", "d/".repeat(i % 17))
            } else {
                base.clone()
            }
        })
        .collect()
}

fn broker() -> ApprovalBroker {
    let (tx, rx) = mpsc::unbounded_channel();
    std::mem::forget(rx); // keep the channel open; previews send nothing
    let broker = ApprovalBroker::new(tx, "local".into(), Policy::AutoApproveLow);
    broker.set_can_sandbox(true);
    for rule in table::USUAL_RULES {
        broker.add_prefix("run_shell", rule);
    }
    let policy = "[[approval.rules]]\ncommand = [\"cargo\", \"test\"]\ndecision = \"allow\"\n\
                  [[approval.rules]]\ncommand = [\"systemctl\", \"status\"]\ndecision = \"allow\"\n\
                  [[approval.rules]]\npattern = \"kubectl get *\"\ndecision = \"allow\"\n\
                  [[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"ask\"\n\
                  [[approval.rules]]\ncommand = [\"curl\"]\ndecision = \"deny\"\n\
                  [[approval.rules]]\npattern = \"*--force*\"\ndecision = \"deny\"\n";
    let cfg = Config::from_toml(policy, Path::new("bench.toml")).expect("bench policy");
    broker.set_rules(PolicyRules::from_config(&cfg.approval));
    broker
}

fn time(f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    start.elapsed()
}

/// `(p50, p99, max)` of the samples.
fn quantiles(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort_unstable();
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99), v[v.len() - 1])
}

fn us(d: Duration) -> String {
    format!("{:.2} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    let rounds: usize = std::env::var("VIGIL_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let commands = commands();
    let gates: Vec<GateInfo> = commands.iter().map(|c| gate(c)).collect();
    let broker = broker();
    let (mut split, mut classify, mut decide) = (Vec::new(), Vec::new(), Vec::new());
    let mut low = 0;
    for round in 0..=rounds {
        for (command, gate) in commands.iter().zip(&gates) {
            let a = time(|| {
                black_box(black_box(command).split_whitespace().collect::<Vec<_>>());
            });
            let b = time(|| {
                let script = vigil::shell::parse(black_box(command));
                black_box(vigil::policy::risk::assess(&script));
            });
            let c = time(|| {
                black_box(broker.preview("run_shell", black_box(gate)));
            });
            if round == 0 {
                // Warm-up pass: not counted.
                low += usize::from(vigil::policy::risk::assess_command(command) == Risk::Low);
                continue;
            }
            split.push(a);
            classify.push(b);
            decide.push(c);
        }
    }
    println!(
        "{} commands ({low} rated low) × {rounds} rounds, each timed alone",
        commands.len()
    );
    let (b50, b99, bmax) = quantiles(split);
    println!(
        "{:<9} {:>11} {:>11} {:>11} {:>9} {:>9}",
        "form", "p50", "p99", "max", "p50/base", "p99/base"
    );
    println!(
        "{:<9} {:>11} {:>11} {:>11} {:>9} {:>9}",
        "baseline",
        us(b50),
        us(b99),
        us(bmax),
        "1.0×",
        "1.0×"
    );
    for (name, samples) in [("classify", classify), ("decide", decide)] {
        let (p50, p99, max) = quantiles(samples);
        println!(
            "{:<9} {:>11} {:>11} {:>11} {:>8.1}× {:>8.1}×",
            name,
            us(p50),
            us(p99),
            us(max),
            p50.as_secs_f64() / b50.as_secs_f64(),
            p99.as_secs_f64() / b99.as_secs_f64()
        );
    }
}
