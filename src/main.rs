//! The `vigil` binary: parses the command line, loads the configuration and
//! starts the console, a headless `exec`, or a single `tool` call.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use vigil::agent::approval::Policy;
use vigil::config::{ApprovalMode, Config, Overrides};
use vigil::headless::exit;
use vigil::{app, console, headless, toolcmd};

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
    /// No colours in the console (NO_COLOR=1 does the same).
    #[arg(long, global = true)]
    no_color: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one task headless: print assistant text and tool events as lines.
    Exec {
        /// What to ask the agent.
        prompt: String,
    },
    /// Inspect or call the registered tools directly.
    Tool {
        #[command(subcommand)]
        action: ToolAction,
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
    let cli = Cli::parse();
    let mut config = match Config::load(cli.config.as_deref()) {
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
    });
    let _log_guard = init_logging(&config);
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
        None => run_console(&config, cli.demo, cli.auto_approve, cli.no_color).await,
        Some(Command::Exec { prompt }) => {
            let policy = if cli.auto_approve {
                Policy::ApproveAll
            } else {
                Policy::Ask
            };
            let running = match app::start_agent(&config, cli.demo, policy).await {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("vigil: {e}");
                    return exit::FAILED;
                }
            };
            let mut stdout = std::io::stdout();
            let code = headless::drive(
                running.events,
                running.commands.clone(),
                prompt,
                cli.auto_approve,
                &mut stdout,
            )
            .await;
            let _ = running.commands.send(vigil::event::AgentCommand::Quit);
            code
        }
        Some(Command::Tool { action }) => run_tool(&config, action, cli.auto_approve).await,
    }
}

async fn run_console(config: &Config, demo: bool, auto_approve: bool, no_color: bool) -> i32 {
    let mut opts = match console::ConsoleOptions::from_config(&config.console, no_color) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::USAGE;
        }
    };
    let policy = if auto_approve {
        Policy::ApproveAll
    } else if demo {
        Policy::AutoApproveLow
    } else {
        match config.agent.approval {
            ApprovalMode::Ask => Policy::Ask,
            ApprovalMode::AutoLow => Policy::AutoApproveLow,
            ApprovalMode::ApproveAll => Policy::ApproveAll,
        }
    };
    let running = match app::start_agent(config, demo, policy.clone()).await {
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
    let result = console::run(running.events, running.commands.clone(), opts).await;
    let _ = running.commands.send(vigil::event::AgentCommand::Quit);
    match result {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("vigil: console error: {e}");
            exit::FAILED
        }
    }
}

async fn run_tool(config: &Config, action: ToolAction, auto_approve: bool) -> i32 {
    let exec = vigil::exec::ExecutionContext::local();
    let registry = app::build_registry(config, &exec, toolcmd::approver(auto_approve));
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

/// Log to `<data dir>/vigil.log`; `VIGIL_LOG` sets the filter (default `info`).
fn init_logging(config: &Config) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = config.data_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::never(&dir, "vigil.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = tracing_subscriber::EnvFilter::try_from_env("VIGIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
