//! The agent processes' logs in the data folder (`agent-<pid>.log`, and
//! `agent-starting-<pid>.log` for one that never said it was ready): each
//! spawn leaves one, so old ones are pruned when the next agent starts.
//!
//! A log is removed only when no agent process with its pid is alive and it
//! is either older than [`MAX_AGE`] or beyond the newest [`KEEP`] such logs.
//! It never touches another file, and never the log of a live agent.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Logs of agents that are gone are kept this long...
pub const MAX_AGE: Duration = Duration::from_secs(7 * 86_400);
/// ...and at most this many of them, the newest.
pub const KEEP: usize = 20;

/// The pid an agent log is named after.
fn pid_of(name: &str) -> Option<u32> {
    let rest = name.strip_suffix(".log")?.strip_prefix("agent-")?;
    rest.strip_prefix("starting-").unwrap_or(rest).parse().ok()
}

/// Whether `pid` is a running vigil agent process.
fn agent_alive(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| c.split(|&b| b == 0).any(|arg| arg == b"__agent"))
}

/// Remove the logs of gone agents in `dir` that are older than `MAX_AGE`
/// at `now` or beyond the newest `KEEP`. Returns what was removed.
pub fn prune(dir: &Path, now: SystemTime, alive: impl Fn(u32) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut gone: Vec<(SystemTime, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let pid = pid_of(e.file_name().to_str()?)?;
            let modified = e.metadata().ok()?.modified().ok()?;
            (!alive(pid)).then(|| (modified, e.path()))
        })
        .collect();
    gone.sort_by_key(|g| std::cmp::Reverse(g.0));
    let mut removed = Vec::new();
    for (i, (modified, path)) in gone.into_iter().enumerate() {
        let old = now.duration_since(modified).unwrap_or_default() > MAX_AGE;
        if (old || i >= KEEP) && std::fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// [`prune`] for real: now, with live agents found in `/proc`.
pub fn prune_now(dir: &Path) {
    let removed = prune(dir, SystemTime::now(), agent_alive);
    if !removed.is_empty() {
        tracing::info!(
            "removed {} old agent logs from {}",
            removed.len(),
            dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(dir: &Path, name: &str, age: Duration) -> PathBuf {
        let p = dir.join(name);
        let f = std::fs::File::create(&p).unwrap();
        f.set_modified(SystemTime::now() - age).unwrap();
        p
    }

    #[test]
    fn names_give_their_pid_and_nothing_else_matches() {
        assert_eq!(pid_of("agent-42.log"), Some(42));
        assert_eq!(pid_of("agent-starting-7.log"), Some(7));
        for other in [
            "vigil.log",
            "agent-x.log",
            "agent-42.log.1",
            "agent-.log",
            "my-agent-4.log",
        ] {
            assert_eq!(pid_of(other), None, "{other}");
        }
    }

    #[test]
    fn old_and_surplus_logs_of_gone_agents_go_live_ones_and_other_files_stay() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let hour = Duration::from_secs(3600);
        let old_gone = log(d, "agent-10.log", MAX_AGE + hour);
        let old_live = log(d, "agent-11.log", MAX_AGE + hour);
        let old_other = log(d, "vigil.log", MAX_AGE + hour);
        let recent: Vec<PathBuf> = (0..KEEP + 3)
            .map(|i| {
                log(
                    d,
                    &format!("agent-starting-{}.log", 100 + i),
                    hour * i as u32,
                )
            })
            .collect();
        let alive = |pid: u32| pid == 11;
        let removed = prune(d, SystemTime::now(), alive);
        assert!(!old_gone.exists());
        assert!(old_live.exists(), "a live agent's log is never removed");
        assert!(old_other.exists(), "only agent logs are pruned");
        // The newest KEEP recent ones stay, the 3 oldest go.
        for (i, p) in recent.iter().enumerate() {
            assert_eq!(p.exists(), i < KEEP, "{}", p.display());
        }
        assert_eq!(removed.len(), 4);
    }

    #[test]
    fn this_process_is_not_an_agent_and_a_missing_folder_is_nothing_to_do() {
        assert!(!agent_alive(std::process::id()));
        assert!(
            prune(Path::new("/nonexistent/vigil"), SystemTime::now(), |_| {
                false
            })
            .is_empty()
        );
    }
}
