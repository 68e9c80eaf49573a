//! The view's bounds that hold for every user, with or without control
//! groups ([`super::limits`] adds those where they can be made):
//!
//! - resource limits set in the command's process before it starts (they
//!   pass to everything it starts), as backstops: at most twice
//!   [`MAX_TASKS`] processes of its user (held for an ordinary
//!   user, whose view is a user namespace of its own; the kernel exempts
//!   root), no core files, [`MAX_CPU_SECONDS`] of CPU time (no per-process
//!   memory limit: thread stacks count against one, and a refused
//!   allocation would end the command quietly before the watchdog could
//!   name the bound);
//! - a watchdog thread in PID 1 that adds up every view process's
//!   resident memory and threads each [`PERIOD`] and ends the whole view
//!   (`kill(-1)` in its PID namespace) past [`MAX_MEMORY`] or
//!   [`MAX_TASKS`]: the bound named in the report.
//!
//! It must only run in the view's PID 1 (where `-1` is the view).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::limits::{MAX_MEMORY, MAX_TASKS};

/// How often the watchdog looks.
pub const PERIOD: Duration = Duration::from_millis(25);
/// CPU seconds a process may use (the view's wall-clock limit stops it
/// sooner in practice).
const MAX_CPU_SECONDS: u64 = 120;

fn set(resource: libc::__rlimit_resource_t, value: u64) -> std::io::Result<()> {
    let lim = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: setrlimit reads one struct.
    if unsafe { libc::setrlimit(resource, &lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Set the resource limits on the calling process (the command's, before
/// its exec). Allocates nothing.
pub fn apply_rlimits() -> std::io::Result<()> {
    // A backstop at twice the bound: the watchdog ends the view at the
    // bound itself and names it (a refused fork alone would end quietly,
    // and the trial would look clean).
    set(libc::RLIMIT_NPROC, 2 * MAX_TASKS)?;
    set(libc::RLIMIT_CORE, 0)?;
    set(libc::RLIMIT_CPU, MAX_CPU_SECONDS)
}

/// The running watchdog (see the module doc).
pub struct Watchdog {
    stop: Arc<AtomicBool>,
    hit: mpsc::Receiver<Option<String>>,
}

impl Watchdog {
    /// Start watching the view's processes.
    pub fn start() -> Watchdog {
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, hit) = mpsc::channel();
        let flag = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("view-bounds".into())
            .spawn(move || {
                let _ = tx.send(watch(&flag));
            });
        if spawned.is_err() {
            // Without the thread the control groups and limits above hold.
            stop.store(true, Ordering::Relaxed);
        }
        Watchdog { stop, hit }
    }

    /// Stop it; the bound it enforced, if any.
    pub fn stop(self) -> Option<String> {
        self.stop.store(true, Ordering::Relaxed);
        self.hit.recv_timeout(Duration::from_secs(2)).ok().flatten()
    }
}

fn watch(stop: &AtomicBool) -> Option<String> {
    while !stop.load(Ordering::Relaxed) {
        let (memory, tasks) = usage();
        let hit = if memory > MAX_MEMORY {
            Some(format!("memory past {} MB", MAX_MEMORY / (1024 * 1024)))
        } else if tasks > MAX_TASKS {
            Some(format!("more than {MAX_TASKS} processes and threads"))
        } else {
            None
        };
        if hit.is_some() {
            // SAFETY: in the view's PID namespace, -1 means every process
            // but PID 1.
            unsafe { libc::kill(-1, libc::SIGKILL) };
            return hit;
        }
        std::thread::sleep(PERIOD);
    }
    None
}

/// Resident bytes and threads of every process of the view but PID 1.
fn usage() -> (u64, u64) {
    // SAFETY: sysconf takes an integer.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    let (mut memory, mut tasks) = (0u64, 0u64);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if pid == 1 {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command's name: state is field 3; threads 20,
        // resident pages 24.
        let rest: Vec<&str> = stat
            .rsplit_once(") ")
            .map(|(_, r)| r.split(' ').collect())
            .unwrap_or_default();
        let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
        tasks += field(20).unwrap_or(1);
        memory += field(24).unwrap_or(0) * page;
    }
    (memory, tasks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_reads_this_machines_processes() {
        let (memory, tasks) = usage();
        assert!(memory > 0 && tasks > 0, "{memory} {tasks}");
    }
}
