//! The running agents as a fleet: `vigil ps` (every socket in the runtime
//! directory asked for its status as a control client; sockets left by dead
//! agents reported as stale), `vigil stop ID`, and which agent `vigil
//! attach` means (an id, `--last`, or the only one running). Each run mode
//! returns the process's exit code and prints its errors once.
//!
//! It never starts an agent. A stale socket is reported with the command
//! that brings its session back, and removed only when asked (`--prune`)
//! and only while this process holds the session's lock (so never the
//! socket of an agent that is starting or alive but not answering).

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::agent::server::lock::SessionLock;
use crate::cli::headless::exit;
use vigil_client::attach::{self, AttachError, Connection};
use vigil_protocol::OnExit;
use vigil_protocol::runtime;
use vigil_protocol::wire::{AgentInfo, Role};

/// A socket nobody answers on (its agent died).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stale {
    pub id: String,
    pub socket: PathBuf,
    /// Why it counts as stale, in words.
    pub why: String,
}

/// What `vigil ps` found.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Fleet {
    pub agents: Vec<AgentInfo>,
    pub stale: Vec<Stale>,
    /// Stale sockets `--prune` removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pruned: Vec<Stale>,
}

/// Ask every socket in the runtime directory for its agent's status.
pub async fn survey() -> Result<Fleet, AttachError> {
    let dir = runtime::dir()?;
    let mut fleet = Fleet::default();
    for id in runtime::socket_ids(&dir)? {
        let socket = runtime::socket_path(&dir, &id);
        match control(&socket, &id).await {
            Ok(mut conn) => match conn.status().await {
                Ok(info) => fleet.agents.push(info),
                Err(e) => fleet.stale.push(stale(id, socket, &e)),
            },
            Err(e) => fleet.stale.push(stale(id, socket, &e)),
        }
    }
    fleet.agents.sort_by_key(|a| a.started_ms);
    Ok(fleet)
}

/// Remove the stale sockets whose session lock this process can take (the
/// kernel freed it: no agent holds the session), moving them from `stale`
/// to `pruned`; one whose lock is held stays listed, with why. Only a
/// socket is removed, never another kind of file or a symlink's target.
pub fn prune_stale(dir: &Path, fleet: &mut Fleet) {
    for mut s in std::mem::take(&mut fleet.stale) {
        let lock = match SessionLock::acquire(dir, &s.id) {
            Ok(lock) => lock,
            Err(e) => {
                s.why = format!("kept: {e}");
                fleet.stale.push(s);
                continue;
            }
        };
        let is_socket =
            std::fs::symlink_metadata(&s.socket).is_ok_and(|m| m.file_type().is_socket());
        let removed = if is_socket {
            std::fs::remove_file(&s.socket).map_err(|e| e.to_string())
        } else {
            Err("not a socket".to_string())
        };
        lock.release();
        match removed {
            Ok(()) => fleet.pruned.push(s),
            Err(e) => {
                s.why = format!("kept: cannot remove it: {e}");
                fleet.stale.push(s);
            }
        }
    }
}

fn stale(id: String, socket: PathBuf, e: &AttachError) -> Stale {
    Stale {
        id,
        socket,
        why: e.to_string(),
    }
}

async fn control(socket: &std::path::Path, id: &str) -> Result<Connection, AttachError> {
    attach::connect(socket, id, Role::Control, &attach::console_name()).await
}

/// `vigil ps [--json] [--prune]`.
pub async fn ps(json: bool, prune: bool) -> i32 {
    let mut fleet = match survey().await {
        Ok(f) => f,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    if prune {
        match runtime::dir() {
            Ok(dir) => prune_stale(&dir, &mut fleet),
            Err(e) => {
                eprintln!("vigil: {e}");
                return exit::FAILED;
            }
        }
    }
    if json {
        return print_json(&fleet);
    }
    // Models, targets and reasons come from other processes: sanitised.
    print!(
        "{}",
        vigil_protocol::text::sanitize(&table(&fleet, now_ms()))
    );
    exit::OK
}

/// Print `value` as pretty JSON on stdout (the exit code says whether it
/// could be encoded).
pub fn print_json<T: serde::Serialize + ?Sized>(value: &T) -> i32 {
    match serde_json::to_string_pretty(value) {
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

/// The `vigil ps` table.
pub fn table(fleet: &Fleet, now_ms: u64) -> String {
    let mut out = String::new();
    if fleet.agents.is_empty() {
        out.push_str("no agent is running\n");
    } else {
        out.push_str(&format!(
            "{:<26} {:>7}  {:<22} {:<18} {:<8} {:>9} {:>8} {:>6}\n",
            "ID", "PID", "MODEL", "TARGET", "STATE", "APPROVALS", "CONSOLES", "AGE"
        ));
    }
    for a in &fleet.agents {
        out.push_str(&format!(
            "{:<26} {:>7}  {:<22} {:<18} {:<8} {:>9} {:>8} {:>6}\n",
            a.id,
            a.pid,
            cut(&a.model, 22),
            cut(&a.target, 18),
            a.state.as_str(),
            a.pending_approvals,
            a.consoles,
            age(now_ms.saturating_sub(a.started_ms))
        ));
    }
    for s in &fleet.stale {
        out.push_str(&format!(
            "stale: {} ({}): {}; `vigil resume {}` starts it again \
             (`vigil ps --prune` removes the socket)\n",
            s.id,
            s.socket.display(),
            s.why,
            s.id
        ));
    }
    for s in &fleet.pruned {
        out.push_str(&format!(
            "removed the stale socket of {}; its session is kept: `vigil resume {}`\n",
            s.id, s.id
        ));
    }
    out
}

fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let mut out: String = text.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// `42s`, `7m`, `3h05`, `2d`.
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h{:02}", s / 3600, s / 60 % 60),
        _ => format!("{}d", s / 86_400),
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// `vigil stop ID [--remove-remote | --keep]`.
pub async fn stop(id: &str, remove_remote: bool, keep: bool) -> i32 {
    let socket = match attach::socket_of(id) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("vigil: {e}");
            return exit::FAILED;
        }
    };
    let on_exit = match (remove_remote, keep) {
        (true, _) => OnExit::Remove,
        (false, true) => OnExit::Keep,
        (false, false) => OnExit::Unsaid,
    };
    let stopped = match control(&socket, id).await {
        Ok(mut conn) => conn.stop(on_exit).await,
        Err(e) => Err(e),
    };
    match stopped {
        Ok(reason) => {
            // The reason names a console by what it called itself.
            println!("stopped {id}: {}", vigil_protocol::text::sanitize(&reason));
            exit::OK
        }
        Err(e) => {
            eprintln!("vigil: {e}");
            exit::FAILED
        }
    }
}

/// Which running agent `vigil attach` means: `id`, the newest (`last`),
/// or the only one running.
pub async fn choose(id: Option<String>, last: bool) -> Result<String, String> {
    if let Some(id) = id {
        return Ok(id);
    }
    let fleet = survey().await.map_err(|e| e.to_string())?;
    let newest = fleet.agents.iter().max_by_key(|a| a.started_ms);
    match (last, fleet.agents.len(), newest) {
        (_, 0, _) | (_, _, None) => Err(AttachError::NoneRunning.to_string()),
        (true, _, Some(a)) | (false, 1, Some(a)) => Ok(a.id.clone()),
        (false, n, _) => {
            let ids: Vec<&str> = fleet.agents.iter().map(|a| a.id.as_str()).collect();
            Err(format!(
                "{n} agents are running ({}): say which (`vigil attach ID`) or `vigil attach --last`",
                ids.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_at_a_glance() {
        assert_eq!(age(42_000), "42s");
        assert_eq!(age(7 * 60_000 + 5_000), "7m");
        assert_eq!(age(3 * 3_600_000 + 5 * 60_000), "3h05");
        assert_eq!(age(2 * 86_400_000 + 1), "2d");
    }
}
