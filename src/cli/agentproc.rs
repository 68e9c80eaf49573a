//! `vigil __agent`: the agent as its own process, which consoles attach to
//! over its Unix socket (see `docs/protocol.md`).
//!
//! It starts the agent with the same wiring as the console, takes the
//! session lock, binds `<runtime dir>/<id>.sock`, prints ONE line on stdout
//! (`{"ready":{…}}` or `{"error":"…"}`) and closes stdout, then serves until
//! a client sends `Stop` (or `Quit`), SIGTERM arrives or the agent ends.
//! Consoles coming and going do not end it; SIGHUP and SIGPIPE are ignored.
//! On the way out it runs `leave.finish`, removes its socket and lock, then
//! says `Bye` to every client: a client told `Bye` (`vigil stop` returning)
//! finds the session free to resume. It never draws anything.

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agent::approval::Policy;
use crate::agent::assemble::{self, Running, StartError, StartOptions};
use crate::agent::server::accept;
use crate::agent::server::hub::{self, Hub, Identity, StopRequest, now_ms};
use crate::agent::server::journal::Journal;
use crate::agent::server::listener::{self, BindError};
use crate::agent::server::lock::{LockError, SessionLock};
use crate::cli::headless::exit;
use crate::config::Config;
use vigil_protocol::runtime::{self, RuntimeError};
use vigil_protocol::{AgentCommand, OnExit};

/// How long the agent may take to start its session.
const START_WAIT: Duration = Duration::from_secs(30);
/// How long the clients get to read their `Bye`.
const BYE_WAIT: Duration = Duration::from_secs(3);

/// Why the agent process could not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentProcError {
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Bind(#[from] BindError),
    #[error("the agent did not start its session within {} s", START_WAIT.as_secs())]
    NoSession,
}

/// An agent process ready to serve.
struct Serving {
    hub: Arc<Hub>,
    running: Running,
    lock: SessionLock,
    socket: PathBuf,
}

/// Run the agent process; returns the exit code.
pub async fn run(config: &Config, demo: bool, policy: Policy, options: StartOptions) -> i32 {
    ignore_hangup();
    let serving = match start(config, demo, policy, options).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("vigil: {e}");
            say(&serde_json::json!({ "error": e.to_string() }));
            return exit::FAILED;
        }
    };
    let id = serving.hub.identity().id;
    say(&serde_json::json!({
        "ready": { "id": id, "socket": serving.socket, "pid": std::process::id() }
    }));
    tracing::info!("agent {id} listening on {}", serving.socket.display());
    serve(serving).await
}

/// Start the agent, take the lock, bind the socket.
async fn start(
    config: &Config,
    demo: bool,
    policy: Policy,
    options: StartOptions,
) -> Result<Serving, AgentProcError> {
    let dir = runtime::dir()?;
    // A resumed session's lock is taken before anything is started, so a
    // second agent never opens the session at all.
    let early = match &options.resume {
        Some(id) => Some(SessionLock::acquire(&dir, id)?),
        None => None,
    };
    let mut running = assemble::start_agent_with(config, demo, policy, options).await?;
    let id = running
        .session_id
        .clone()
        .unwrap_or_else(|| format!("agent-{}-{}", std::process::id(), now_ms()));
    let lock = match early {
        Some(l) => l,
        None => SessionLock::acquire(&dir, &id)?,
    };
    let socket = runtime::socket_path(&dir, &id);
    let identity = Identity {
        id,
        socket: socket.clone(),
        started_ms: now_ms(),
        leaves_behind: running.leave.question(),
        ..Identity::default()
    };
    let hub = Hub::new(
        identity,
        Journal::default(),
        running.broker.clone(),
        running.commands.clone(),
        running.mirror.clone(),
        running.answers.clone(),
    );
    let (_, events) = tokio::sync::mpsc::unbounded_channel();
    let events = std::mem::replace(&mut running.events, events);
    tokio::spawn(hub::pump(hub.clone(), events));
    let mut newest = hub.newest();
    let started = newest.wait_for(|_| hub.identity().session_started);
    if !matches!(tokio::time::timeout(START_WAIT, started).await, Ok(Ok(_))) {
        return Err(AgentProcError::NoSession);
    }
    drop(newest);
    let bound = listener::bind(&socket)?;
    if bound.removed_stale {
        tracing::warn!(
            "removed a stale socket left by a dead agent: {}",
            socket.display()
        );
        eprintln!(
            "vigil: removed a stale socket left by a dead agent: {}",
            socket.display()
        );
    }
    accept::spawn(hub.clone(), bound.listener);
    Ok(Serving {
        hub,
        running,
        lock,
        socket,
    })
}

/// Serve until asked to stop, then leave cleanly.
async fn serve(serving: Serving) -> i32 {
    let Serving {
        hub,
        mut running,
        lock,
        socket,
    } = serving;
    let mut stop = hub.stop_requested();
    let mut agent_ended = false;
    let request = tokio::select! {
        r = stop.wait_for(|s| s.is_some()) => r.ok().and_then(|s| s.clone()),
        _ = &mut running.task => {
            agent_ended = true;
            None
        }
        _ = terminated() => Some(StopRequest { on_exit: OnExit::Unsaid, by: "SIGTERM".into() }),
    };
    drop(stop);
    let (on_exit, why) = match request {
        Some(r) => (r.on_exit, format!("the agent was stopped by {}", r.by)),
        None => (OnExit::Unsaid, "the agent ended".to_string()),
    };
    tracing::info!("{why}");
    let _ = running.commands.send(AgentCommand::Quit);
    if !agent_ended
        && tokio::time::timeout(Duration::from_secs(10), &mut running.task)
            .await
            .is_err()
    {
        running.task.abort();
    }
    let said = running.leave.finish(on_exit).await;
    settle(&hub).await;
    let reason = match said {
        Some(said) => format!("{why}; {said}"),
        None => why,
    };
    // The session is let go before anyone is told it ended, so `vigil stop`
    // followed at once by `vigil resume` never finds it still held.
    let _ = std::fs::remove_file(&socket);
    lock.release();
    hub.close(reason);
    hub.connections_gone(BYE_WAIT).await;
    exit::OK
}

/// Wait until the last events of the agent are journaled (no new one for
/// 50 ms, at most 1 s).
async fn settle(hub: &Hub) {
    let mut newest = hub.newest();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(1);
    while tokio::time::Instant::now() < deadline {
        let quiet = tokio::time::timeout(Duration::from_millis(50), newest.changed()).await;
        if quiet.is_err() {
            return;
        }
    }
}

/// SIGTERM (never, when it cannot be watched).
async fn terminated() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending().await,
    }
}

/// A closed terminal or a gone reader must not end the agent.
fn ignore_hangup() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGHUP, libc::SIG_IGN);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Print the one stdout line, then point stdout at /dev/null (the spawner
/// stops reading; later prints must go nowhere, not fail).
fn say(value: &serde_json::Value) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: dup2 onto fd 1 with a descriptor we own.
        unsafe { libc::dup2(null.as_raw_fd(), 1) };
    }
}
