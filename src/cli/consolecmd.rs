//! The console run modes: `vigil` (and `--demo`, `resume ID`) starts the
//! session's agent process — or finds it, when `resume` names a session
//! whose agent still runs — and attaches; `vigil attach` attaches to a
//! running one. Either way the console is a client of the agent's socket
//! ([`vigil_client::bridge`]) and leaving is the operator's choice: detach (the
//! agent keeps working) or stop it.
//!
//! It prints its errors once and returns the exit code; it never runs the
//! agent in this process (`vigil exec` does, in [`super::run`]).

use crate::agent::approval::Policy;
use crate::cli::fleetcmd;
use crate::cli::headless::exit;
use crate::config::Config;
use crate::console::{self, ConsoleOptions};
use crate::launch::remote;
use crate::launch::spawn::{AgentArgs, spawn_agent};
use vigil_client::Leaving;
use vigil_client::attach::{self, AttachError, Connection};
use vigil_client::{bridge, fleet};
use vigil_protocol::ApprovalPolicy;
use vigil_protocol::wire::Role;

/// What the demo's console says first.
pub const DEMO_MESSAGE: &str = "Show me what you can do.";

/// How the console was asked to start.
pub struct ConsoleStart<'a> {
    pub config: &'a Config,
    pub args: &'a AgentArgs,
    pub demo: bool,
    pub no_color: bool,
    /// The policy the agent starts with (shown in the status bar).
    pub policy: Policy,
    pub resume: Option<String>,
}

/// `vigil`, `vigil --demo`, `vigil resume ID`: start the agent process (or
/// attach to the session's running one) and run the console on it.
pub async fn run_console(start: ConsoleStart<'_>) -> i32 {
    let Some(mut opts) = options(start.config, start.no_color) else {
        return exit::USAGE;
    };
    if let Some(id) = &start.resume {
        match find_live(id).await {
            Some(Ok(conn)) => {
                eprintln!("vigil: session {id} has a running agent: attaching to it");
                return on_connection(conn, opts, true).await;
            }
            Some(Err(e)) => {
                eprintln!("vigil: {e}");
                return exit::FAILED;
            }
            None => {}
        }
    }
    let data_dir = start.config.data_dir();
    let ready = match spawn_agent(start.args, start.resume.as_deref(), &data_dir).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    let conn = match attach::connect(
        &ready.socket,
        &ready.id,
        Role::Console,
        &attach::console_name(),
    )
    .await
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    // The demo's first message, for a new session only: a resumed one
    // never replays the script over what happened.
    opts.initial_message = (start.demo && start.resume.is_none()).then(|| DEMO_MESSAGE.to_string());
    opts.initial_policy = Some(match start.policy {
        Policy::Ask => ApprovalPolicy::Ask,
        Policy::AutoApproveLow => ApprovalPolicy::AutoApproveLow,
        Policy::ByEffect => ApprovalPolicy::ByEffect,
        _ => ApprovalPolicy::ApproveAll,
    });
    on_connection(conn, opts, true).await
}

/// What `vigil attach` was asked for.
pub struct AttachHow {
    /// A local session id, `user@host[:port]:ID`, or None (`--last`, or
    /// the only agent running).
    pub id: Option<String>,
    pub last: bool,
    pub watch: bool,
    /// How to run vigil on a remote machine.
    pub remote_vigil: String,
}

/// `vigil attach [ID | user@host[:port]:ID | --last] [--watch]`.
pub async fn attach_console(config: &Config, no_color: bool, how: AttachHow) -> i32 {
    let Some(mut opts) = options(config, no_color) else {
        return exit::USAGE;
    };
    let watch = how.watch;
    match how.id.as_deref().and_then(remote::split_remote) {
        Some(Ok((target, id))) => return attach_remote(config, opts, &target, &id, &how).await,
        Some(Err(e)) => {
            eprintln!("vigil: {e}");
            return exit::USAGE;
        }
        None => {}
    }
    let id = match fleetcmd::choose(how.id, how.last).await {
        Ok(id) => id,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    let role = if watch { Role::Watch } else { Role::Console };
    let connected = match attach::socket_of(&id) {
        Ok(socket) => attach::connect(&socket, &id, role, &attach::console_name()).await,
        Err(e) => Err(e),
    };
    match connected {
        Ok(conn) => {
            opts.watch = watch;
            on_connection(conn, opts, true).await
        }
        Err(e) => {
            eprintln!("vigil: {e}");
            exit::FAILED
        }
    }
}

/// `vigil attach user@host[:port]:ID`: find the agent's socket there
/// (`vigil ps --json` over ssh), forward a private local socket to it
/// through the ControlMaster, attach; the tunnel and the master close
/// when the console leaves.
async fn attach_remote(
    config: &Config,
    mut opts: ConsoleOptions,
    target: &str,
    id: &str,
    how: &AttachHow,
) -> i32 {
    let tunnel = match open_tunnel(config, target, id, &how.remote_vigil).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    let role = if how.watch {
        Role::Watch
    } else {
        Role::Console
    };
    let name = attach::console_name();
    let code = match attach::connect(tunnel.local(), id, role, &name).await {
        Ok(conn) => {
            opts.watch = how.watch;
            on_connection(conn, opts, false).await
        }
        Err(e) => {
            eprintln!("vigil: {e} (on {target})");
            exit::FAILED
        }
    };
    tunnel.close().await;
    code
}

/// A tunnel to the socket of session `id`'s agent on `target`.
async fn open_tunnel(
    config: &Config,
    target: &str,
    id: &str,
    remote_vigil: &str,
) -> Result<remote::Tunnel, remote::RemoteError> {
    let ssh = remote::master(config, target).await?;
    let socket = match remote::fleet(&ssh, target, remote_vigil).await {
        Ok(fleet) => fleet
            .agents
            .into_iter()
            .find(|a| a.id == id)
            .map(|a| a.socket),
        Err(e) => {
            ssh.shutdown().await;
            return Err(e);
        }
    };
    let Some(socket) = socket else {
        ssh.shutdown().await;
        return Err(remote::RemoteError::NoSuchAgent {
            target: target.into(),
            id: id.into(),
        });
    };
    remote::Tunnel::open(ssh, &socket).await
}

/// The console options from `[console]` and `[notify]`, or None after
/// saying why not.
fn options(config: &Config, no_color: bool) -> Option<ConsoleOptions> {
    match ConsoleOptions::from_config(&config.console, no_color) {
        Ok(mut o) => {
            o.apply_notify(&config.notify);
            Some(o)
        }
        Err(e) => {
            eprintln!("vigil: {e}");
            None
        }
    }
}

/// The running agent of session `id`, connected as a console; None when
/// there is none (no socket, or one left by a dead agent: a new agent
/// takes its place).
async fn find_live(id: &str) -> Option<Result<Connection, AttachError>> {
    let socket = match attach::socket_of(id) {
        Ok(s) => s,
        Err(e) => return Some(Err(e)),
    };
    if !socket.exists() {
        return None;
    }
    match attach::connect(&socket, id, Role::Console, &attach::console_name()).await {
        Ok(conn) => Some(Ok(conn)),
        Err(AttachError::NoSuchAgent { .. } | AttachError::Stale { .. }) => None,
        Err(e) => Some(Err(e)),
    }
}

/// Run the console on a welcomed connection, then leave as the operator
/// chose; switching to another agent (the agents overlay) detaches and runs
/// the console again on that agent's connection. `local`: the agent runs
/// here, so the other agents of the runtime directory are its fleet (a
/// remote agent's console has none).
async fn on_connection(mut conn: Connection, mut opts: ConsoleOptions, local: bool) -> i32 {
    loop {
        let id = conn.info.id.clone();
        let (result, how) = one_console(conn, opts.clone(), local).await;
        // Said once, to the agent the console started with.
        opts.initial_message = None;
        opts.initial_policy = None;
        match &how {
            Leaving::Detach => eprintln!(
                "vigil: detached from {id}; the agent keeps working \
                 (`vigil attach {id}` comes back, `vigil stop {id}` ends it)"
            ),
            Leaving::AgentGone => eprintln!(
                "vigil: the agent {id} is gone (stopped, or its connection lost); \
                 `vigil resume {id}` starts its session again"
            ),
            Leaving::Switch(next) if result.is_ok() => {
                match attach::socket_of(next) {
                    Ok(socket) => {
                        match attach::connect(&socket, next, Role::Console, &attach::console_name())
                            .await
                        {
                            Ok(c) => {
                                conn = c;
                                continue;
                            }
                            Err(e) => eprintln!("vigil: cannot switch to {next}: {e}"),
                        }
                    }
                    Err(e) => eprintln!("vigil: cannot switch to {next}: {e}"),
                }
                eprintln!("vigil: detached from {id}; `vigil attach {id}` comes back");
                return exit::FAILED;
            }
            _ => {}
        }
        return match result {
            Ok(()) => exit::OK,
            Err(e) => {
                eprintln!("vigil: console error: {e}");
                exit::FAILED
            }
        };
    }
}

/// One console on one connection: run it (with the fleet of the other
/// agents, unless read-only) and leave the agent as the operator chose.
async fn one_console(
    conn: Connection,
    mut opts: ConsoleOptions,
    local: bool,
) -> (std::io::Result<()>, Leaving) {
    opts.attached = true;
    opts.ask_on_exit = conn.info.leaves_behind.clone();
    // The status bar shows the policy in force from the start (on attach
    // too, where nothing else says it).
    opts.initial_policy = conn.info.policy.or(opts.initial_policy);
    let fleet = (local && !opts.watch).then(|| fleet::start(conn.info.id.clone()));
    opts.fleet = fleet.as_ref().map(|f| f.feed.clone());
    let bridge = bridge::start(conn);
    opts.mirror = bridge.mirror;
    let result = console::run(bridge.events, bridge.commands, opts).await;
    drop(fleet);
    // A console whose terminal failed detaches: nothing is lost.
    let how = result.as_ref().map_or(Leaving::Detach, Clone::clone);
    if let Some(said) = bridge.handle.leave(how.clone()).await {
        eprintln!("vigil: {said}");
    }
    (result.map(|_| ()), how)
}
