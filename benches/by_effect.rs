//! How often each approval mode asks, over a public corpus of real shell
//! commands (benches/corpus: tldr-pages' examples, placeholders filled),
//! run in an ordinary git repository with a realistic tree
//! (`benches/corpus/make_tree.sh`), and what the throwaway view costs.
//!
//! Per mode, the share of commands asked, run unasked and denied:
//! - `ask` and `auto_low`: the broker's decision (nothing runs);
//! - `by_effect`: the production path, `ToolRegistry` → `run_shell` →
//!   the broker → the trial in the view; an operator who answers every
//!   card with "deny" (so nothing ever runs outside the view), counting
//!   why each card was asked (the rule, or the first effect the view saw).
//!
//! Overhead: for commands the trial let through that vigil itself rates
//! low (read-only programs, safe to run plainly here) and that take under
//! 10 ms plainly, the trial's time against the same command run plainly
//! (`sh -c` in the tree), interleaved; p50 / p99 of both and of the
//! difference.
//!
//! Run with `cargo bench --bench by_effect`. `VIGIL_BENCH_N` commands
//! (default 1000, evenly spread over the corpus; `0` for all 4,879);
//! every trial is capped at `VIGIL_BENCH_LIMIT_S` seconds (default 3: a
//! command still running then is asked, as it would be at the 10 s
//! default a little later).

#[path = "support/stats.rs"]
mod stats;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc;
use vigil::agent::approval::{ApprovalBroker, Outcome, Policy, TRYING};
use vigil::config::Config;
use vigil::event::{AgentEvent, PreviewOutcome};
use vigil::exec::{ExecutionContext, sandbox};
use vigil::policy::gate::{ApprovalDecision, Risk};
use vigil::policy::rules::PolicyRules;
use vigil::protocol::GateInfo;
use vigil::tools::registry::ToolRegistry;
use vigil::tools::shell::{RunShell, ShellConfig};

use stats::{load, ms, pct};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The corpus, `n` commands evenly spread (all when `n` is 0).
fn corpus(n: usize) -> Vec<String> {
    let text = include_str!("corpus/commands.txt");
    let all: Vec<String> = text.lines().map(str::to_string).collect();
    if n == 0 || n >= all.len() {
        return all;
    }
    (0..n).map(|i| all[i * all.len() / n].clone()).collect()
}

/// The default configuration's broker in `policy`.
fn broker(events: mpsc::UnboundedSender<AgentEvent>, policy: Policy) -> Arc<ApprovalBroker> {
    let config = Config::default();
    vigil::policy::secret_reads::install(config.secret_places());
    let broker = ApprovalBroker::new(events, "local".into(), policy);
    broker.set_rules(PolicyRules::from_config(&config.approval));
    broker.set_can_sandbox(sandbox::available());
    Arc::new(broker)
}

#[derive(Default)]
struct Tally {
    asked: usize,
    unasked: usize,
    denied: usize,
}

impl Tally {
    fn line(&self, mode: &str, n: usize) {
        let share = |k: usize| 100.0 * k as f64 / n.max(1) as f64;
        println!(
            "{mode:<10} asked {:>5.1} % ({:>4})   unasked {:>5.1} % ({:>4})   denied {:>4.1} % ({})",
            share(self.asked),
            self.asked,
            share(self.unasked),
            self.unasked,
            share(self.denied),
            self.denied
        );
    }
}

/// `ask` and `auto_low`: what the broker decides, nothing run.
fn decided(commands: &[String], policy: Policy) -> Tally {
    let (tx, _rx) = mpsc::unbounded_channel();
    let b = broker(tx, policy);
    let mut t = Tally::default();
    for c in commands {
        match b.preview("run_shell", &GateInfo::shell(c)).outcome {
            Outcome::Deny(..) => t.denied += 1,
            Outcome::Unasked(_) | Outcome::Approve(_) => t.unasked += 1,
            Outcome::Ask(_) | Outcome::Trial => t.asked += 1,
        }
    }
    t
}

/// The class of a card's reason: the rule that kept the command out of
/// the view, or the first effect the trial saw.
fn class(why: &str) -> String {
    if let Some(rest) = why.split("(rule `").nth(1) {
        return format!("rule {}", rest.split('`').next().unwrap_or(""));
    }
    let effect = why.trim_start_matches("tried in the view: ");
    let first = effect.split([':', ';', '(']).next().unwrap_or(why).trim();
    if first == "reads outside the readable places" {
        let path = effect.split([':', ';']).nth(1).unwrap_or("").trim();
        let path = path.split(" (and ").next().unwrap_or(path);
        return format!("{first}: {}", area(path));
    }
    first.to_string()
}

/// Where a path lies, as the readable world's entries name places: `~/X`
/// for the home folder's first level, else the first two levels.
fn area(path: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    if let Some(rest) = path.strip_prefix(&format!("{home}/")) {
        return format!("~/{}", rest.split('/').next().unwrap_or(""));
    }
    if path == home {
        return "~".into();
    }
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).take(2).collect();
    format!("/{}", parts.join("/"))
}

/// `VIGIL_BENCH_WORLD=bare`: the readable world without the tool homes
/// (what each class of command needs them for shows as the places it
/// was asked for).
fn set_world() {
    if std::env::var("VIGIL_BENCH_WORLD").as_deref() == Ok("bare") {
        let config = vigil::config::readable::SandboxConfig {
            readable_remove: vigil::config::readable::TOOL_HOMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            ..Default::default()
        };
        sandbox::world::set_config(config);
        println!("readable world: without the tool homes");
    }
}

/// What the by_effect run saw.
struct Seen {
    tally: Tally,
    classes: BTreeMap<String, usize>,
    /// (command, trial time) of commands run unasked in the view.
    clean: Vec<(String, Duration)>,
    /// The commands asked.
    asked: Vec<String>,
    /// Of those run unasked, how many exited 127 (the program is not installed here:
    /// a real run would have said the same).
    missing: usize,
}

async fn by_effect(commands: &[String], limit_s: u64) -> Seen {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let b = broker(tx, Policy::ByEffect);
    // The operator: every card is denied once it says why it is asked
    // (a card shown while its trial still runs is left alone until the
    // trial fills it in, or withdraws it); the reason is kept.
    let reasons: Arc<Mutex<Vec<String>>> = Arc::default();
    let (answerer, seen) = (b.clone(), reasons.clone());
    tokio::spawn(async move {
        let mut trying = std::collections::HashSet::new();
        while let Some(ev) = rx.recv().await {
            let (id, why) = match ev {
                AgentEvent::ApprovalRequested { request } if !request.automatic => {
                    let why = request
                        .facts
                        .trial
                        .clone()
                        .unwrap_or_else(|| "asked".into());
                    if why == TRYING {
                        trying.insert(request.id);
                        continue;
                    }
                    (request.id, why)
                }
                // Only a card shown while its trial ran waits for this.
                AgentEvent::PreviewReady {
                    id,
                    outcome: PreviewOutcome::Report { report },
                } if trying.remove(&id) => (
                    id,
                    format!("tried in the view: {}", report.effects().join("; ")),
                ),
                _ => continue,
            };
            seen.lock().unwrap().push(why);
            for _ in 0..1000 {
                if answerer.resolve(id, ApprovalDecision::Deny) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let mut registry = ToolRegistry::new();
    let config = ShellConfig {
        denylist: vigil::policy::denylist::Denylist::read(&Config::default().tools.shell_denylist),
        ..ShellConfig::default()
    };
    registry.register(RunShell::new(ExecutionContext::local(), config));
    registry.set_approver(b.clone());
    registry.set_trial_approver(b.clone());
    let mut seen = Seen {
        tally: Tally::default(),
        classes: BTreeMap::new(),
        clean: Vec::new(),
        asked: Vec::new(),
        missing: 0,
    };
    for (i, c) in commands.iter().enumerate() {
        let args = json!({
            "command": c, "risk": "medium", "mutation": true, "privesc": false,
            "why": "benchmark", "wait": format!("{limit_s}s"),
        });
        let before = reasons.lock().unwrap().len();
        let start = Instant::now();
        let run = registry.execute("run_shell", &args.to_string()).await;
        let took = start.elapsed();
        let asked = reasons.lock().unwrap().get(before).cloned();
        match (&run.decision, asked) {
            (_, Some(why)) => {
                seen.tally.asked += 1;
                seen.asked.push(c.clone());
                *seen.classes.entry(class(&why)).or_default() += 1;
            }
            (Some(ApprovalDecision::ApproveUnasked(_)), None) => {
                seen.tally.unasked += 1;
                seen.clean.push((c.clone(), took));
                if run.output.as_ref().and_then(|o| o.exit_code) == Some(127) {
                    seen.missing += 1;
                }
            }
            _ => seen.tally.denied += 1,
        }
        if (i + 1) % 100 == 0 {
            eprintln!("  {} / {} tried (load {})", i + 1, commands.len(), load());
        }
    }
    seen
}

/// Whether the program `command` runs (the first word, after `sudo` and
/// its options) is installed on this machine.
fn installed(command: &str) -> bool {
    let script = vigil::shell::parse(command);
    let Some(first) = script.commands.first() else {
        return false;
    };
    let words = first.loose_words();
    let mut it = words
        .iter()
        .skip_while(|w| *w == "sudo" || w.starts_with('-'));
    let Some(program) = it.next() else {
        return false;
    };
    if program.contains('/') {
        return Path::new(program).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

/// `command` run plainly in the tree.
async fn plain(command: &str) -> Duration {
    let start = Instant::now();
    let _ = tokio::process::Command::new("sh")
        .args(["-c", command])
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .output()
        .await;
    start.elapsed()
}

/// The trial again, alone, for the overhead figures.
async fn trial(command: &str) -> Duration {
    let start = Instant::now();
    let cwd = std::env::current_dir().expect("cwd");
    let opts = vigil::exec::preview::PreviewOptions::default();
    let run = vigil::exec::preview::Run::default();
    let _ = vigil::exec::preview::trial(command, &cwd, opts, run).await;
    start.elapsed()
}

/// Quick read-only commands of the kind an agent runs most, measured
/// besides the corpus's own low-rated ones (20 rounds each).
const TYPICAL: &[&str] = &[
    "ls -la",
    "cat README.md",
    "git status --short",
    "git log --oneline -5",
    "wc -l src/main.rs",
    "grep -n fn src/main.rs",
    "head -5 notes.txt",
    "find src -name '*.rs'",
];

async fn overhead(clean: &[(String, Duration)]) {
    let (tx, _rx) = mpsc::unbounded_channel();
    let b = broker(tx, Policy::AutoApproveLow);
    let mut low: Vec<&str> = clean
        .iter()
        .map(|(c, _)| c.as_str())
        .filter(|c| b.preview("run_shell", &GateInfo::shell(c)).assessment.risk == Risk::Low)
        .collect();
    let from_corpus = low.len();
    for _ in 0..20 {
        low.extend_from_slice(TYPICAL);
    }
    println!(
        "overhead: {from_corpus} low-rated corpus commands run unasked, plus {} typical ones × 20",
        TYPICAL.len()
    );
    let (mut p, mut t, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for (i, c) in low.iter().enumerate() {
        let (bare, viewed) = if i % 2 == 0 {
            let bare = plain(c).await;
            (bare, trial(c).await)
        } else {
            let viewed = trial(c).await;
            (plain(c).await, viewed)
        };
        if bare < Duration::from_millis(10) {
            p.push(bare);
            t.push(viewed);
            d.push(viewed.saturating_sub(bare));
        }
    }
    if p.is_empty() {
        println!("overhead: no low-rated command under 10 ms ran unasked");
        return;
    }
    for v in [&mut p, &mut t, &mut d] {
        v.sort();
    }
    println!(
        "overhead over {} low-rated commands taking < 10 ms plainly:\n  plain p50 {:.1} ms p99 {:.1} ms · \
         in the view p50 {:.1} ms p99 {:.1} ms · difference p50 {:.1} ms p99 {:.1} ms",
        p.len(),
        ms(pct(&p, 50)),
        ms(pct(&p, 99)),
        ms(pct(&t, 50)),
        ms(pct(&t, 99)),
        ms(pct(&d, 50)),
        ms(pct(&d, 99)),
    );
}

fn main() {
    let bin = Path::new(env!("CARGO_BIN_EXE_vigil-sandbox"));
    sandbox::set_helper(bin);
    let n = env_num("VIGIL_BENCH_N", 1000) as usize;
    let limit_s = env_num("VIGIL_BENCH_LIMIT_S", 3);
    let commands = corpus(n);
    let tree = tempfile::tempdir().expect("tempdir");
    let repo = tree.path().join("repo");
    let made = std::process::Command::new("sh")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/corpus/make_tree.sh"
        ))
        .arg(&repo)
        .output()
        .expect("make_tree.sh");
    assert!(made.status.success(), "{made:?}");
    std::env::set_current_dir(&repo).expect("cd into the tree");
    println!(
        "by_effect bench: {} commands of the tldr corpus in a {}-file git tree (load {})",
        commands.len(),
        std::fs::read_dir(&repo).map(|d| d.count()).unwrap_or(0),
        load()
    );
    decided(&commands, Policy::Ask).line("ask", commands.len());
    decided(&commands, Policy::AutoApproveLow).line("auto_low", commands.len());
    set_world();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let started = Instant::now();
    let seen = rt.block_on(by_effect(&commands, limit_s));
    seen.tally.line("by_effect", commands.len());
    let here = commands.iter().filter(|c| installed(c)).count();
    let asked_here = seen.asked.iter().filter(|c| installed(c)).count();
    println!(
        "  of the {here} commands whose program is installed here: asked {:.1} % ({asked_here})",
        100.0 * asked_here as f64 / here.max(1) as f64,
    );
    println!(
        "  ({:.0} s for {} trials; {} of the unasked exited 127: the program is not installed here)",
        started.elapsed().as_secs_f64(),
        commands.len(),
        seen.missing
    );
    let mut classes: Vec<(&String, &usize)> = seen.classes.iter().collect();
    classes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    println!("still asked under by_effect, by class:");
    for (class, count) in classes.iter().take(24) {
        println!("  {count:>5}  {class}");
    }
    rt.block_on(overhead(&seen.clean));
}
