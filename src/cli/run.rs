//! The run modes behind the command line: the console (an agent process and
//! a console attached to it: [`super::consolecmd`]), `attach`, `ps` and
//! `stop` ([`super::fleetcmd`]), a headless `exec` (or `resume --exec`, the
//! agent in this process), the `sessions` list, a single `tool` call and the
//! `policy` commands. Each returns the process's exit code; errors are
//! printed here, once, and never panic.

use crate::agent::approval::Policy;
use crate::agent::assemble;
use crate::agent::assemble::StartOptions;
use crate::agent::record::session::SessionStore;
use crate::cli::args::{Cli, Command, ExecArgs, PolicyAction, ToolAction};
use crate::cli::consolecmd::{AttachHow, ConsoleStart, attach_console, run_console};
use crate::cli::headless::exit;
use crate::cli::{fleetcmd, headless, toolcmd};
use crate::config::{ApprovalMode, Config};
use crate::launch::spawn::AgentArgs;
use vigil_protocol::tool::OnExit;

pub async fn run(cli: Cli, mut config: Config) -> i32 {
    let given = crate::cli::resume::Given::from_cli(&cli);
    let agent_args = AgentArgs::from_cli(&cli);
    let (no_color, auto) = (cli.no_color, cli.auto_approve);
    let console =
        |config, resume, demo| console_start(config, &agent_args, no_color, auto, resume, demo);
    match cli.command {
        None => run_console(console(&config, None, cli.demo)).await,
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
            let mut demo = cli.demo;
            if let Some(id) = &resume {
                match prepare_resume(&mut config, given, id) {
                    Ok(r) => demo = r.demo,
                    Err(code) => return code,
                }
            }
            let exec = ExecArgs {
                prompt,
                json,
                resume,
                trust_session_rules,
            };
            run_exec(&config, demo, cli.auto_approve, exec).await
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
            let resumed = match prepare_resume(&mut config, given, &id) {
                Ok(r) => r,
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
                    run_exec(&config, resumed.demo, cli.auto_approve, exec).await
                }
                None => run_console(console(&config, Some(id), resumed.demo)).await,
            }
        }
        Some(Command::Sessions) => list_sessions(&config),
        Some(Command::Audit { action }) => crate::cli::auditcmd::run(&config, action),
        Some(Command::Attach {
            id,
            last,
            watch,
            remote_vigil,
        }) => {
            let how = AttachHow {
                id,
                last,
                watch,
                remote_vigil,
            };
            attach_console(&config, cli.no_color, how).await
        }
        Some(Command::Ps {
            json,
            target: Some(target),
            remote_vigil,
            ..
        }) => crate::launch::remote::ps_remote(&config, &target, &remote_vigil, json).await,
        Some(Command::Ps { json, prune, .. }) => fleetcmd::ps(json, prune).await,
        Some(Command::Stop {
            id,
            remove_remote,
            keep,
        }) => fleetcmd::stop(&id, remove_remote, keep).await,
        Some(Command::Tool { action }) => run_tool(&config, action, cli.auto_approve).await,
        Some(Command::Policy { action }) => run_policy(&config, cli.auto_approve, action).await,
        Some(Command::Agent { resume }) => {
            // A resumed session starts with its recorded model and target
            // unless the flags passed through say otherwise.
            let (demo, options) = match resume {
                Some(id) => match prepare_resume(&mut config, given, &id) {
                    Ok(r) => (r.demo, r.start_options()),
                    Err(code) => return code,
                },
                None => (cli.demo, StartOptions::default()),
            };
            let policy = startup_policy(&config, demo, cli.auto_approve);
            crate::cli::agentproc::run(&config, demo, policy, options).await
        }
    }
}

/// How the console starts (a new session, or `resume`).
fn console_start<'a>(
    config: &'a Config,
    args: &'a AgentArgs,
    no_color: bool,
    auto_approve: bool,
    resume: Option<String>,
    demo: bool,
) -> ConsoleStart<'a> {
    ConsoleStart {
        config,
        args,
        demo,
        no_color,
        policy: startup_policy(config, demo, auto_approve),
        resume,
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
            ApprovalMode::ByEffect => Policy::ByEffect,
            ApprovalMode::ApproveAll => Policy::ApproveAll,
        }
    }
}

async fn run_policy(config: &Config, auto_approve: bool, action: PolicyAction) -> i32 {
    use crate::cli::policycmd;
    let policy = startup_policy(config, false, auto_approve);
    let can_sandbox = crate::exec::ExecutionContext::local().can_sandbox();
    let broker = policycmd::broker(config, policy, can_sandbox);
    // The command, its parse, a preview's output and a replayed session's
    // text are foreign text: sanitised on the way to the terminal.
    let mut out = vigil_protocol::terminal::SafeWriter::new(std::io::stdout());
    match action {
        PolicyAction::Check {
            command,
            preview,
            time_limit,
            size_limit,
        } => {
            let command = policycmd::command_line(&command);
            policycmd::check(&broker, can_sandbox, &command, &mut out);
            if let Some(note) = crate::agent::assemble::hooks::hooks_note(config, &command) {
                let _ = std::io::Write::write_fmt(&mut out, format_args!("{note}\n"));
            }
            if !preview {
                return exit::OK;
            }
            crate::exec::sandbox::set_secret_places(config.secret_places());
            crate::exec::sandbox::world::set_config(config.sandbox.clone());
            let opts = crate::exec::preview::PreviewOptions {
                time_limit: std::time::Duration::from_secs(time_limit),
                size_limit: size_limit * 1024 * 1024,
            };
            policycmd::preview(&command, opts, &mut out).await
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

/// "last" → the newest session id; an id → itself when it exists.
fn resolve_session(config: &Config, wanted: &str) -> Result<String, i32> {
    let store = SessionStore::new(&config.data_dir());
    let found = if wanted == "last" {
        store.latest()
    } else if store.dir_of(wanted).join("meta.json").exists() {
        Ok(wanted.to_string())
    } else {
        Err(crate::agent::record::session::SessionError::NotFound(
            wanted.to_string(),
        ))
    };
    found.map_err(|e| {
        eprintln!("vigil: {e}");
        exit::USAGE
    })
}

/// Start session `id` the way it was recorded (unless `given` says
/// otherwise), saying on stderr which model and target it uses.
fn prepare_resume(
    config: &mut Config,
    given: crate::cli::resume::Given,
    id: &str,
) -> Result<crate::cli::resume::Resumed, i32> {
    let resumed = crate::cli::resume::prepare(config, given, id).map_err(|e| {
        eprintln!("vigil: {e}");
        exit::USAGE
    })?;
    eprintln!("vigil: {}", resumed.notice);
    Ok(resumed)
}

async fn run_exec(config: &Config, demo: bool, auto_approve: bool, args: ExecArgs) -> i32 {
    let ExecArgs {
        prompt,
        json,
        resume,
        trust_session_rules,
    } = args;
    // A resumed session is held as an agent process holds it, so `resume
    // --exec` never writes into a session another agent is recording.
    let lock = match resume.as_deref().map(hold_session).transpose() {
        Ok(lock) => lock,
        Err(code) => return code,
    };
    // The demo runs its low-risk calls by itself here too, as in the console.
    let policy = startup_policy(config, demo, auto_approve);
    let opts = StartOptions {
        resume,
        trust_session_rules,
        ..Default::default()
    };
    let Some(mut running) = start_or_say(config, demo, policy, opts).await else {
        return exit::FAILED;
    };
    let held = running.broker.held();
    let n = held.standing.len() + held.prefixes.len();
    if n > 0 {
        eprintln!(
            "vigil: {} in the log approve nothing in this run \
             (pass --trust-session-rules to let them)",
            vigil_protocol::preview::plural(n, "session rule")
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
    let _ = running.commands.send(vigil_protocol::AgentCommand::Quit);
    // The agent ends (and its `session_end` hooks run) before vigil does.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(15), &mut running.task).await;
    // Headless: remote managed sessions are kept (nothing is lost; the
    // line says how to reach them), local ones it created go, and the
    // connection is closed.
    if let Some(said) = running.leave.finish(OnExit::Unsaid).await {
        eprintln!("vigil: {said}");
    }
    if let Some(lock) = lock {
        lock.release();
    }
    code
}

/// Take session `id`'s lock in the runtime directory, or say who holds it.
fn hold_session(id: &str) -> Result<crate::agent::server::lock::SessionLock, i32> {
    let dir = vigil_protocol::runtime::dir().map_err(|e| {
        eprintln!("vigil: {e}");
        exit::FAILED
    })?;
    crate::agent::server::lock::SessionLock::acquire(&dir, id).map_err(|e| {
        eprintln!("vigil: {e}");
        exit::FAILED
    })
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
            // Ids, models and messages come from files anyone with the
            // data directory can write: sanitised like the console's.
            let clean = vigil_protocol::text::sanitize;
            for s in list {
                let started = crate::tools::time::UtcTime::from_unix_millis(s.started_ms as i64);
                let last: String = clean(&s.last_message.replace('\n', " "))
                    .chars()
                    .take(60)
                    .collect();
                println!(
                    "{:<24} {:<20} {:<24} {:>5}  {}",
                    clean(&s.id),
                    format!("{} {}", started.date(), started.time()),
                    clean(&s.model),
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

async fn run_tool(config: &Config, action: ToolAction, auto_approve: bool) -> i32 {
    let target = match assemble::build_exec(config).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    let registry = assemble::build_registry_async(
        config,
        &target.exec,
        target.tmux.as_ref(),
        toolcmd::approver(auto_approve),
        Some(toolcmd::mcp_state_to_stderr()),
    )
    .await;
    match action {
        ToolAction::List { json: false } => {
            print!("{}", toolcmd::listing(&registry.definitions()));
            exit::OK
        }
        ToolAction::List { json: true } => fleetcmd::print_json(&registry.definitions()),
        ToolAction::Call { name, arguments } => {
            let dir = config.data_dir().join("spill");
            let ctx = crate::tools::ToolContext::new("cli").with_spill_dir(dir);
            let run = registry.execute_with_context(&name, &arguments, &ctx).await;
            // On a terminal, the command's output is sanitised like the
            // console's; piped, scripts get the envelope as it is.
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                println!("{}", vigil_protocol::text::sanitize(&run.model_text));
            } else {
                println!("{}", run.model_text);
            }
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

/// Start the agent, or say on stderr why it could not start.
async fn start_or_say(
    config: &Config,
    demo: bool,
    policy: Policy,
    options: StartOptions,
) -> Option<assemble::Running> {
    match assemble::start_agent_with(config, demo, policy, options).await {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("vigil: {e}");
            None
        }
    }
}
