//! How often each approval mode asks, over two corpora of shell commands
//! (benches/corpus: tldr-pages' examples, placeholders filled; and an
//! agent-command corpus of the builds, tests, git inspection, searches and
//! edits coding agents run, the edits labelled `# writes`), run in an
//! ordinary git repository with a realistic tree
//! (`benches/corpus/make_tree.sh`), and what the throwaway view costs.
//!
//! Per corpus and execution mode (plain processes, or a managed tmux pane
//! on a private tmux server whose pane starts in the repository), the share
//! of commands asked, run unasked and denied:
//! - `ask` and `auto_low`: the broker's decision (nothing runs);
//! - `by_effect`: the production path, `ToolRegistry` → `run_shell` →
//!   the broker → the trial in the view; an operator who answers every
//!   card with "deny" (so nothing changes the tree but what by_effect runs
//!   for real unasked: builds writing only git-ignored outputs, and in the
//!   pane commands that only change the pane's shell), counting why each
//!   card was asked (the rule, or the first effect the view saw).
//!
//! Commands whose program is not installed here (`installed()` false, or
//! run unasked and exited 127) are counted apart: the headline is the
//! asked share of the others. For the agent corpus also the asked share
//! of its read/build/test commands, and every `# writes` command run
//! unasked (a miss: each must be asked).
//!
//! Overhead (plain mode, tldr corpus; `VIGIL_BENCH_OVERHEAD=0` skips it):
//! for commands the trial let through that vigil itself rates low
//! (read-only programs, safe to run plainly here) and that take under
//! 10 ms plainly, the trial's time against the same command run plainly
//! (`sh -c` in the tree), interleaved; p50 / p99 of both and of the
//! difference.
//!
//! Run with `cargo bench --bench by_effect`. `VIGIL_BENCH_CORPUS`
//! (`tldr`, `agent`, default `both`), `VIGIL_BENCH_MODES` (default
//! `plain,pane`), `VIGIL_BENCH_N` tldr commands (default 1000, evenly
//! spread; `0` for all 4,879; the agent corpus runs whole). Each trial is
//! capped at `VIGIL_BENCH_LIMIT_S` seconds for tldr (default 3: a command
//! still running then is asked, as it would be at the 10 s default a
//! little later) and `VIGIL_BENCH_AGENT_LIMIT_S` for the agent corpus
//! (default 10, the production default: builds take seconds). Each
//! corpus × mode runs in a fresh tree; nothing is left behind (the trees
//! are temporary folders, the tmux servers are killed, their sockets
//! removed).

#[path = "by_effect/corpus.rs"]
mod corpus;
#[path = "by_effect/pane.rs"]
mod pane;
#[path = "by_effect/report.rs"]
mod report;
#[path = "support/stats.rs"]
mod stats;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::sync::mpsc;
use vigil::agent::approval::{ApprovalBroker, Outcome, Policy, TRYING};
use vigil::config::Config;
use vigil::exec::{ExecutionContext, sandbox};
use vigil::policy::rules::PolicyRules;
use vigil::tools::registry::ToolRegistry;
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil_protocol::GateInfo;
use vigil_protocol::approval::{ApprovalDecision, Risk};
use vigil_protocol::{AgentEvent, PreviewOutcome};

use corpus::{Cmd, Corpus};
use stats::{load, ms, pct};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
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
fn decided(commands: &[Cmd], policy: Policy) -> Tally {
    let (tx, _rx) = mpsc::unbounded_channel();
    let b = broker(tx, policy);
    let mut t = Tally::default();
    for c in commands {
        match b.preview("run_shell", &GateInfo::shell(&c.text)).outcome {
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

/// What by_effect did with one command.
enum Verdict {
    /// Asked: the class of its card, and the card's reason.
    Asked(String, String),
    /// Run unasked; its exit code.
    Unasked(Option<i32>),
    Denied,
}

/// What the by_effect run saw.
struct Seen {
    tally: Tally,
    /// Per command, in corpus order.
    verdicts: Vec<Verdict>,
    /// (command, trial time) of commands run unasked in the view.
    clean: Vec<(String, Duration)>,
}

async fn by_effect(
    commands: &[Cmd],
    limit_s: u64,
    context: ExecutionContext,
    pane: Option<&pane::Pane>,
) -> Seen {
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
    registry.register(RunShell::new(context, config));
    registry.set_approver(b.clone());
    registry.set_trial_approver(b.clone());
    let mut seen = Seen {
        tally: Tally::default(),
        verdicts: Vec::new(),
        clean: Vec::new(),
    };
    for (i, cmd) in commands.iter().enumerate() {
        let c = &cmd.text;
        let args = json!({
            "command": c, "risk": "medium", "mutation": true, "privesc": false,
            "why": "benchmark", "wait": format!("{limit_s}s"),
        });
        let before = reasons.lock().unwrap().len();
        let start = Instant::now();
        let run = registry.execute("run_shell", &args.to_string()).await;
        let took = start.elapsed();
        let asked = reasons.lock().unwrap().get(before).cloned();
        let verdict = match (&run.decision, asked) {
            (_, Some(why)) => {
                seen.tally.asked += 1;
                Verdict::Asked(class(&why), why)
            }
            (Some(ApprovalDecision::ApproveUnasked(_)), None) => {
                seen.tally.unasked += 1;
                seen.clean.push((c.clone(), took));
                // A command that only changes the pane's shell ran in the
                // pane: put the pane back in the repository.
                if let Some(pane) = pane
                    && vigil::policy::pane_state::changes_state(&vigil::shell::parse(c))
                {
                    pane.reset().await;
                }
                Verdict::Unasked(run.output.as_ref().and_then(|o| o.exit_code))
            }
            _ => {
                seen.tally.denied += 1;
                Verdict::Denied
            }
        };
        seen.verdicts.push(verdict);
        if (i + 1) % 100 == 0 {
            eprintln!("  {} / {} tried (load {})", i + 1, commands.len(), load());
        }
    }
    seen
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

/// Where the commands run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Plain processes (`ExecutionContext::local()`).
    Plain,
    /// A managed tmux pane on a private server.
    Pane,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Pane => "pane",
        }
    }

    /// `VIGIL_BENCH_MODES=plain,pane` (default both).
    fn selected() -> Vec<Mode> {
        let text = std::env::var("VIGIL_BENCH_MODES").unwrap_or_else(|_| "plain,pane".into());
        text.split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(|m| match m {
                "plain" => Mode::Plain,
                "pane" => Mode::Pane,
                other => panic!("VIGIL_BENCH_MODES: {other}: expected plain or pane"),
            })
            .collect()
    }
}

/// A fresh tree for one corpus × mode; for the agent corpus with work in
/// progress (an edited `notes.txt`), as an agent's tree has, so `git
/// commit -a`, `git stash` and `git restore` would change something.
fn make_tree(dir: &Path, corpus: Corpus) -> PathBuf {
    let repo = dir.join("repo");
    let made = std::process::Command::new("sh")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/corpus/make_tree.sh"
        ))
        .arg(&repo)
        .output()
        .expect("make_tree.sh");
    assert!(made.status.success(), "{made:?}");
    if corpus == Corpus::Agent {
        let notes = repo.join("notes.txt");
        let mut text = std::fs::read_to_string(&notes).expect("notes.txt");
        text.push_str("TODO: agent edit in progress\n");
        std::fs::write(&notes, text).expect("notes.txt");
    }
    repo.canonicalize().expect("repo")
}

fn main() {
    let bin = Path::new(env!("CARGO_BIN_EXE_vigil-sandbox"));
    sandbox::set_helper(bin);
    let n = env_num("VIGIL_BENCH_N", 1000) as usize;
    let tldr_limit = env_num("VIGIL_BENCH_LIMIT_S", 3);
    let agent_limit = env_num("VIGIL_BENCH_AGENT_LIMIT_S", 10);
    set_world();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let away = std::env::temp_dir();
    let mut rows = Vec::new();
    for corpus in Corpus::selected() {
        let commands = corpus.commands(n);
        let limit_s = match corpus {
            Corpus::Tldr => tldr_limit,
            Corpus::Agent => agent_limit,
        };
        println!(
            "\n=== corpus {}: {} commands ({} labelled `# writes`), trials capped at {limit_s} s (load {})",
            corpus.name(),
            commands.len(),
            commands.iter().filter(|c| c.writes).count(),
            load()
        );
        decided(&commands, Policy::Ask).line("ask", commands.len());
        decided(&commands, Policy::AutoApproveLow).line("auto_low", commands.len());
        for mode in Mode::selected() {
            let tree = tempfile::tempdir().expect("tempdir");
            let repo = make_tree(tree.path(), corpus);
            std::env::set_current_dir(&repo).expect("cd into the tree");
            println!(
                "--- {} × {}: a {}-entry git tree (load {})",
                corpus.name(),
                mode.name(),
                std::fs::read_dir(&repo).map(|d| d.count()).unwrap_or(0),
                load()
            );
            let started = Instant::now();
            let seen = rt.block_on(async {
                match mode {
                    Mode::Plain => {
                        by_effect(&commands, limit_s, ExecutionContext::local(), None).await
                    }
                    Mode::Pane => {
                        let pane = pane::Pane::start(&repo, corpus.name()).await;
                        let context = pane.context.clone();
                        let seen = by_effect(&commands, limit_s, context, Some(&pane)).await;
                        drop(pane);
                        seen
                    }
                }
            });
            println!(
                "  ({:.0} s for {} commands, load {})",
                started.elapsed().as_secs_f64(),
                commands.len(),
                load()
            );
            rows.push(report::report(corpus, mode, &commands, &seen));
            if corpus == Corpus::Tldr
                && mode == Mode::Plain
                && std::env::var("VIGIL_BENCH_OVERHEAD").as_deref() != Ok("0")
            {
                rt.block_on(overhead(&seen.clean));
            }
            std::env::set_current_dir(&away).expect("leave the tree");
            drop(tree);
        }
    }
    println!(
        "\n| corpus | mode | asked of installed | asked of all | not installed | agent: read/build/test asked | agent: `# writes` missed | top classes still asked |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for row in rows {
        println!("{row}");
    }
}
