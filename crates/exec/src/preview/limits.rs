//! How many processes and how much memory a view may use: a control group
//! of its own (cgroup v1 `pids` and `memory` hierarchies, or the unified
//! v2 one) made by the helper before it forks the view, so a fork bomb or
//! a memory bomb in the view meets a wall instead of the machine's limits.
//!
//! Best effort by design: where no hierarchy can be written (an ordinary
//! user without delegation), the view runs without these limits and the
//! report says so ([`Limits::missing`]); the time limit, which kills every
//! process of the view, still holds. The groups are removed when the view
//! has ended. This module only writes under the cgroup file systems.

use std::path::{Path, PathBuf};

/// Most processes (and threads) a view may have.
pub const MAX_TASKS: u64 = 512;
/// Most memory a view's processes may use (their pages; the writable
/// layer has its own size limit).
pub const MAX_MEMORY: u64 = 1024 * 1024 * 1024;

/// The groups the helper put itself (and so the view) in.
#[derive(Debug, Default)]
pub struct Limits {
    made: Vec<Made>,
    /// Limits that could not be set, in words.
    pub missing: Vec<String>,
}

#[derive(Debug)]
struct Made {
    dir: PathBuf,
    /// Where the helper goes back to before the group is removed.
    parent: PathBuf,
    /// The file naming how often the limit refused (`pids.events`,
    /// `memory.failcnt`, `memory.events`).
    events: Option<(&'static str, &'static str)>,
}

/// This process's group path in the hierarchy whose `/proc/self/cgroup`
/// line has `controllers` (`pids`, `memory`; `""` for v2).
fn own_path(controllers: &str) -> Option<String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    text.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, names, path) = (parts.next()?, parts.next()?, parts.next()?);
        names
            .split(',')
            .any(|n| n == controllers)
            .then(|| path.to_string())
    })
}

/// Put this process in a new group under `root` (a mounted hierarchy) with
/// `settings` written, `events` the file telling a refusal.
fn make(
    root: &Path,
    own: &str,
    settings: &[(&str, String)],
    events: Option<(&'static str, &'static str)>,
) -> Result<Made, String> {
    let parent = root.join(own.trim_start_matches('/'));
    remove_stale(&parent);
    let dir = parent.join(format!("vigil-view-{}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let made = Made {
        dir: dir.clone(),
        parent,
        events,
    };
    for (file, value) in settings {
        if let Err(e) = std::fs::write(dir.join(file), value) {
            made.remove();
            return Err(format!("{file}: {e}"));
        }
    }
    if let Err(e) = std::fs::write(dir.join("cgroup.procs"), "0") {
        made.remove();
        return Err(format!("cgroup.procs: {e}"));
    }
    Ok(made)
}

/// Remove the groups of views whose helper is gone (killed before it
/// could remove them itself); a group still holding a process stays.
fn remove_stale(parent: &Path) {
    for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("vigil-view-"))
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill with signal 0 only asks whether the pid exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir(e.path());
        }
    }
}

impl Made {
    fn remove(&self) {
        let _ = std::fs::write(self.parent.join("cgroup.procs"), "0");
        // The view's processes are gone or dying (a stopped view's are
        // killed just before); their last exits may lag, more so on a busy
        // machine. At most 2 s.
        for _ in 0..200 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Whether the limit refused anything.
    fn hit(&self) -> bool {
        let Some((file, key)) = self.events else {
            return false;
        };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap_or_default();
        text.lines().any(|l| {
            let mut w = l.split_whitespace();
            match (w.next(), w.next()) {
                (Some(k), Some(n)) if k == key => n != "0",
                (Some(n), None) if key.is_empty() => n != "0",
                _ => false,
            }
        })
    }
}

/// Enter groups limiting tasks and memory; call in the helper before the
/// view forks.
pub fn enter() -> Limits {
    let mut limits = Limits::default();
    let v1 = Path::new("/sys/fs/cgroup/pids").is_dir();
    let tasks = ("pids.max", MAX_TASKS.to_string());
    if v1 {
        let pids = own_path("pids").map(|own| {
            make(
                Path::new("/sys/fs/cgroup/pids"),
                &own,
                &[tasks],
                Some(("pids.events", "max")),
            )
        });
        limits.take(pids, "processes");
        let memory = own_path("memory").map(|own| {
            let set = [("memory.limit_in_bytes", MAX_MEMORY.to_string())];
            make(
                Path::new("/sys/fs/cgroup/memory"),
                &own,
                &set,
                Some(("memory.failcnt", "")),
            )
        });
        limits.take(memory, "memory");
    } else {
        let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
            .into_iter()
            .map(Path::new)
            .find(|p| p.join("cgroup.controllers").is_file());
        let made = match (root, own_path("")) {
            (Some(root), Some(own)) => Some(make(
                root,
                &own,
                &[tasks, ("memory.max", MAX_MEMORY.to_string())],
                Some(("pids.events", "max")),
            )),
            _ => None,
        };
        limits.take(made, "processes and memory");
    }
    limits
}

impl Limits {
    fn take(&mut self, made: Option<Result<Made, String>>, what: &str) {
        match made {
            Some(Ok(m)) => self.made.push(m),
            Some(Err(e)) => self.missing.push(format!("no {what} limit ({e})")),
            None => self
                .missing
                .push(format!("no {what} limit (no control group)")),
        }
    }

    /// Whether a process or memory limit refused something.
    pub fn hit(&self) -> bool {
        self.made.iter().any(Made::hit)
    }

    /// Leave and remove the groups (after the view has ended).
    pub fn remove(self) {
        for m in self.made.iter().rev() {
            m.remove();
        }
    }
}
