//! The `vigil` binary: parses the command line, loads the configuration and
//! starts the console, a headless `exec`, a `resume`, the `sessions` list, or
//! a single `tool` call.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use vigil::agent::approval::Policy;
use vigil::agent::session::SessionStore;
use vigil::cli::headless::exit;
use vigil::cli::wiring::StartOptions;
use vigil::cli::{headless, toolcmd, wiring};
use vigil::config::{ApprovalMode, Config, Overrides};
use vigil::console;
use vigil::exec::leave::OnExit;

#[derive(Parser, Debug)]
#[command(
    name = "vigil",
    version,
    about = "Supervise an AI agent that runs commands on real machines"
)]
struct Cli {
    /// Config file (default: the platform config dir's vigil/config.toml).
    #[arg(long, global = true, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1.
    #[arg(long, global = true, env = "VIGIL_BASE_URL", value_name = "URL")]
    base_url: Option<String>,
    /// Model name.
    #[arg(long, global = true, env = "VIGIL_MODEL")]
    model: Option<String>,
    /// API key (prefer the environment variable).
    #[arg(long, global = true, env = "VIGIL_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Where sessions, spill files and the log go.
    #[arg(long, global = true, env = "VIGIL_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Use the built-in scripted model (no server, no key needed).
    #[arg(long, global = true)]
    demo: bool,
    /// Approve every gated tool call without asking.
    #[arg(long, global = true)]
    auto_approve: bool,
    /// Run commands in a managed tmux pane (optionally naming its session).
    #[arg(long, global = true, value_name = "SESSION", num_args = 0..=1, conflicts_with = "no_tmux")]
    tmux: Option<Option<String>>,
    /// Run commands as plain local processes, even when tmux is installed.
    #[arg(long, global = true)]
    no_tmux: bool,
    /// vigil's private tmux server (socket name or path).
    #[arg(long, global = true, env = "VIGIL_TMUX_SOCKET", value_name = "NAME")]
    tmux_socket: Option<String>,
    /// More detail in the log file (-v debug, -vv trace); VIGIL_LOG wins.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Run commands on this SSH target (user@host[:port]) instead of here.
    #[arg(
        long,
        global = true,
        value_name = "USER@HOST[:PORT]",
        conflicts_with = "container"
    )]
    ssh: Option<String>,
    /// Run commands inside this running container (podman or docker).
    #[arg(long, global = true, value_name = "NAME")]
    container: Option<String>,
    /// No colours in the console (NO_COLOR=1 does the same).
    #[arg(long, global = true)]
    no_color: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one task headless: print assistant text and tool events as lines.
    #[command(after_help = exit::TABLE)]
    Exec {
        /// What to ask the agent.
        prompt: String,
        /// Print every event as one JSON object per line (the AgentEvent
        /// serde form, tagged by "type").
        #[arg(long)]
        json: bool,
        /// Continue a recorded session (an id from `vigil sessions`, or "last").
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        /// With --resume: let the session rules read from its log approve
        /// (without it they approve nothing: the log is only a file).
        #[arg(long, requires = "resume")]
        trust_session_rules: bool,
    },
    /// Resume a recorded session: its conversation, tool history and standing
    /// approvals. In the console, or headless with --exec.
    #[command(after_help = exit::TABLE)]
    Resume {
        /// The session id (see `vigil sessions`).
        id: Option<String>,
        /// Resume the most recent session.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// Run this prompt headless (like `vigil exec`) instead of the console.
        #[arg(long, value_name = "PROMPT")]
        exec: Option<String>,
        /// With --exec: one JSON event per line.
        #[arg(long, requires = "exec")]
        json: bool,
        /// With --exec: let the session rules read from the log approve
        /// (the console asks the operator instead).
        #[arg(long, requires = "exec")]
        trust_session_rules: bool,
    },
    /// List recorded sessions: id, start time, model, turns, last message.
    Sessions,
    /// Inspect or call the registered tools directly.
    Tool {
        #[command(subcommand)]
        action: ToolAction,
    },
    /// How the approval policy decides: check a command, or replay a session.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
}

#[derive(Subcommand, Debug)]
enum PolicyAction {
    /// Print the decision for a command, the rule that made it, how the
    /// parser reads it and whether it would run sandboxed:
    /// `vigil policy check -- git status -s`.
    Check {
        /// The command (several words are joined with spaces).
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Run every gated call of a recorded session through the current
    /// policy and print what would have run unasked.
    Replay {
        /// The session id (see `vigil sessions`), or "last".
        session: String,
    },
}

#[derive(Subcommand, Debug)]
enum ToolAction {
    /// Print every registered tool with its full definition.
    List,
    /// Run one tool through validation, approval and the envelope.
    Call {
        name: String,
        /// The arguments as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
    },
}

fn main() -> ExitCode {
    // The sandbox helper runs before anything else: one thread, no runtime.
    if let Some(code) = vigil::exec::sandbox::helper::main_if_requested() {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    let cli = Cli::parse();
    let loaded =
        Config::load(cli.config.as_deref()).and_then(|c| vigil::cli::check_config(&c).map(|()| c));
    let mut config = match loaded {
        Ok(c) => c,
        Err(e) => {
            eprintln!("vigil: {e}");
            return ExitCode::from(exit::USAGE as u8);
        }
    };
    config.apply(Overrides {
        base_url: cli.base_url.clone(),
        model: cli.model.clone(),
        api_key: cli.api_key.clone(),
        data_dir: cli.data_dir.clone(),
        tmux: cli.tmux.clone(),
        no_tmux: cli.no_tmux,
        tmux_socket: cli.tmux_socket.clone(),
    });
    // A target on the command line replaces the file's (either kind).
    if let Some(target) = cli.ssh.clone() {
        config.ssh.target = Some(target);
        config.container.name = None;
    }
    if let Some(name) = cli.container.clone() {
        config.container.name = Some(name);
        config.ssh.target = None;
    }
    vigil::redact::set_global(vigil::redact::Redactor::new(config.api_key()));
    let _log_guard = init_logging(&config, cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("vigil: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cli, config));
    // Do not wait for blocking reads (stdin) that may still be parked.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    ExitCode::from(code.clamp(0, 255) as u8)
}

async fn run(cli: Cli, config: Config) -> i32 {
    match cli.command {
        None => run_console(&config, cli.demo, cli.auto_approve, cli.no_color, None).await,
        Some(Command::Exec {
            prompt,
            json,
            resume,
            trust_session_rules,
        }) => {
            let resume = match resume.map(|id| resolve_session(&config, &id)).transpose() {
                Ok(r) => r,
                Err(code) => return code,
            };
            let exec = ExecArgs {
                prompt,
                json,
                resume,
                trust_session_rules,
            };
            run_exec(&config, cli.demo, cli.auto_approve, exec).await
        }
        Some(Command::Resume {
            id,
            last,
            exec,
            json,
            trust_session_rules,
        }) => {
            let wanted = match (id, last) {
                (Some(id), _) => id,
                (None, true) => "last".to_string(),
                (None, false) => {
                    eprintln!(
                        "vigil: say which session: `vigil resume ID` or `vigil resume --last`"
                    );
                    return exit::USAGE;
                }
            };
            let id = match resolve_session(&config, &wanted) {
                Ok(id) => id,
                Err(code) => return code,
            };
            match exec {
                Some(prompt) => {
                    let exec = ExecArgs {
                        prompt,
                        json,
                        resume: Some(id),
                        trust_session_rules,
                    };
                    run_exec(&config, cli.demo, cli.auto_approve, exec).await
                }
                None => {
                    run_console(&config, cli.demo, cli.auto_approve, cli.no_color, Some(id)).await
                }
            }
        }
        Some(Command::Sessions) => list_sessions(&config),
        Some(Command::Tool { action }) => run_tool(&config, action, cli.auto_approve).await,
        Some(Command::Policy { action }) => run_policy(&config, cli.auto_approve, action),
    }
}

/// The approval policy at start-up: `--auto-approve`, else the demo's
/// auto_low, else `[agent] approval`.
fn startup_policy(config: &Config, demo: bool, auto_approve: bool) -> Policy {
    if auto_approve {
        Policy::ApproveAll
    } else if demo {
        Policy::AutoApproveLow
    } else {
        match config.agent.approval {
            ApprovalMode::Ask => Policy::Ask,
            ApprovalMode::AutoLow => Policy::AutoApproveLow,
            ApprovalMode::ApproveAll => Policy::ApproveAll,
        }
    }
}

fn run_policy(config: &Config, auto_approve: bool, action: PolicyAction) -> i32 {
    use vigil::cli::policycmd;
    let policy = startup_policy(config, false, auto_approve);
    let can_sandbox = vigil::exec::ExecutionContext::local().can_sandbox();
    let broker = policycmd::broker(config, policy, can_sandbox);
    let mut out = std::io::stdout();
    match action {
        PolicyAction::Check { command } => {
            policycmd::check(&broker, can_sandbox, &command.join(" "), &mut out);
            exit::OK
        }
        PolicyAction::Replay { session } => {
            let id = match resolve_session(config, &session) {
                Ok(id) => id,
                Err(code) => return code,
            };
            let events = SessionStore::new(&config.data_dir())
                .dir_of(&id)
                .join("events.jsonl");
            match policycmd::replay(&broker, can_sandbox, &events, &mut out) {
                Ok(_) => exit::OK,
                Err(e) => {
                    eprintln!("vigil: cannot read {}: {e}", events.display());
                    exit::FAILED
                }
            }
        }
    }
}

/// What `vigil exec` (or `resume --exec`) runs.
struct ExecArgs {
    prompt: String,
    json: bool,
    resume: Option<String>,
    trust_session_rules: bool,
}

/// "last" → the newest session id; an id → itself when it exists.
fn resolve_session(config: &Config, wanted: &str) -> Result<String, i32> {
    let store = SessionStore::new(&config.data_dir());
    let found = if wanted == "last" {
        store.latest()
    } else if store.dir_of(wanted).join("meta.json").exists() {
        Ok(wanted.to_string())
    } else {
        Err(vigil::agent::session::SessionError::NotFound(
            wanted.to_string(),
        ))
    };
    found.map_err(|e| {
        eprintln!("vigil: {e}");
        exit::USAGE
    })
}

async fn run_exec(config: &Config, demo: bool, auto_approve: bool, args: ExecArgs) -> i32 {
    let ExecArgs {
        prompt,
        json,
        resume,
        trust_session_rules,
    } = args;
    let policy = startup_policy(config, false, auto_approve);
    let running = match wiring::start_agent_with(
        config,
        demo,
        policy,
        StartOptions {
            resume,
            trust_session_rules,
            ..Default::default()
        },
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    let held = running.broker.held();
    let n = held.standing.len() + held.prefixes.len();
    if n > 0 {
        eprintln!(
            "vigil: {n} session rules in the log approve nothing in this run \
             (pass --trust-session-rules to let them)"
        );
    }
    let mut stdout = std::io::stdout();
    let options = headless::DriveOptions { auto_approve, json };
    let code = headless::drive(
        running.events,
        running.commands.clone(),
        prompt,
        options,
        &mut stdout,
    )
    .await;
    let _ = running.commands.send(vigil::event::AgentCommand::Quit);
    // Headless: remote managed sessions are kept (nothing is lost; the
    // line says how to reach them), and the connection is closed.
    if let Some(said) = running.leave.finish(OnExit::Keep).await {
        eprintln!("vigil: {said}");
    }
    code
}

fn list_sessions(config: &Config) -> i32 {
    let store = SessionStore::new(&config.data_dir());
    match store.list() {
        Ok(list) if list.is_empty() => {
            println!("no sessions in {}", store.root().display());
            exit::OK
        }
        Ok(list) => {
            println!(
                "{:<24} {:<20} {:<24} {:>5}  LAST MESSAGE",
                "ID", "STARTED (UTC)", "MODEL", "TURNS"
            );
            for s in list {
                let started = vigil::tools::time::UtcTime::from_unix_millis(s.started_ms as i64);
                let last: String = s.last_message.replace('\n', " ").chars().take(60).collect();
                println!(
                    "{:<24} {:<20} {:<24} {:>5}  {}",
                    s.id,
                    format!("{} {}", started.date(), started.time()),
                    s.model,
                    s.turns,
                    last
                );
            }
            exit::OK
        }
        Err(e) => {
            eprintln!("vigil: {e}");
            exit::FAILED
        }
    }
}

async fn run_console(
    config: &Config,
    demo: bool,
    auto_approve: bool,
    no_color: bool,
    resume: Option<String>,
) -> i32 {
    let mut opts = match console::ConsoleOptions::from_config(&config.console, no_color) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::USAGE;
        }
    };
    let policy = startup_policy(config, demo, auto_approve);
    let running = match wiring::start_agent_with(
        config,
        demo,
        policy.clone(),
        StartOptions {
            resume,
            ..Default::default()
        },
    )
    .await
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    opts.initial_message = demo.then(|| "Show me what you can do.".to_string());
    opts.initial_policy = Some(match policy {
        Policy::Ask => vigil::event::ApprovalPolicy::Ask,
        Policy::AutoApproveLow => vigil::event::ApprovalPolicy::AutoApproveLow,
        _ => vigil::event::ApprovalPolicy::ApproveAll,
    });
    opts.mirror = running.mirror.clone();
    opts.ask_on_exit = running.leave.question();
    let result = console::run(running.events, running.commands.clone(), opts).await;
    let _ = running.commands.send(vigil::event::AgentCommand::Quit);
    let choice = result.as_ref().map_or(OnExit::Keep, |c| *c);
    if let Some(said) = running.leave.finish(choice).await {
        eprintln!("vigil: {said}");
    }
    match result {
        Ok(_) => exit::OK,
        Err(e) => {
            eprintln!("vigil: console error: {e}");
            exit::FAILED
        }
    }
}

async fn run_tool(config: &Config, action: ToolAction, auto_approve: bool) -> i32 {
    let target = match wiring::build_exec(config).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    let registry = wiring::build_registry_async(
        config,
        &target.exec,
        target.tmux.as_ref(),
        toolcmd::approver(auto_approve),
        Some(toolcmd::mcp_state_to_stderr()),
    )
    .await;
    match action {
        ToolAction::List => {
            let defs = registry.definitions();
            match serde_json::to_string_pretty(&defs) {
                Ok(text) => {
                    println!("{text}");
                    exit::OK
                }
                Err(e) => {
                    eprintln!("vigil: {e}");
                    exit::FAILED
                }
            }
        }
        ToolAction::Call { name, arguments } => {
            let dir = config.data_dir().join("spill");
            let ctx = vigil::tools::ToolContext::new("cli").with_spill_dir(dir);
            let run = registry.execute_with_context(&name, &arguments, &ctx).await;
            println!("{}", run.model_text);
            if run.denied() {
                exit::APPROVAL_REQUIRED
            } else if run.ok() {
                exit::OK
            } else {
                exit::FAILED
            }
        }
    }
}

/// Log to `<data dir>/vigil.log`; `VIGIL_LOG` sets the filter, else `-v`
/// (debug) / `-vv` (trace), else `info`. Every line passes the redactor.
fn init_logging(
    config: &Config,
    verbose: u8,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = config.data_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::never(&dir, "vigil.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("VIGIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || vigil::redact::RedactingWriter::new(writer.clone()))
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
