//! The readable world of a command that runs unasked (a trial in the view,
//! a run in the kernel sandbox): its working tree, the system places, the
//! tool homes and the operator's additions
//! ([`vigil_config::readable::SandboxConfig`]). Nothing else exists for
//! it: the rest of the home folder, `/tmp` and `/run` (but a trial's own),
//! `/var`, `/root`, other users' homes, sockets.
//!
//! Inside the system places and tool homes, every entry its owner made
//! unreadable to others is taken out ([`World::hidden`]): root in a trial
//! reads no more there than an ordinary user. Those entries are found by a
//! walk, remembered with the change time of every folder it listed and
//! walked again when one changed (an entry added, removed or renamed;
//! a new process starts from a fresh walk another kept on disk,
//! [`super::walk_cache`]),
//! bounded ([`MAX_HIDDEN`]: a place with more is left out whole). A file
//! whose mode is narrowed after the walk keeps its earlier answer (it was
//! readable to everyone until then).
//!
//! This module only lists paths; it never reads a file's contents and
//! never applies anything (the view mounts, the sandbox's Landlock rules).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use vigil_config::readable::SandboxConfig;

use super::walk_cache::{Kept as Walked, Stamp};

/// Most entries unreadable to others one place may hold; past it the
/// place is not readable at all.
pub const MAX_HIDDEN: usize = 256;
/// Most entries one walk visits (a place past it is not readable at all).
const MAX_VISITED: usize = 400_000;
/// How deep a tool home is walked (their credential files lie near the
/// top; caches beneath are large).
const HOME_DEPTH: usize = 3;

static CONFIG: OnceLock<SandboxConfig> = OnceLock::new();

/// Use `config` for every later run (set once at start-up; a second call
/// is ignored).
pub fn set_config(config: SandboxConfig) {
    let _ = CONFIG.set(config);
}

/// The `[sandbox]` settings in force (the defaults before [`set_config`]).
pub fn config() -> &'static SandboxConfig {
    CONFIG.get_or_init(SandboxConfig::default)
}

/// The readable world of one command.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct World {
    /// The working tree (canonical).
    pub tree: PathBuf,
    /// Readable places besides the tree (canonical, existing, none inside
    /// another, none inside the tree).
    pub places: Vec<PathBuf>,
    /// Symbolic links among the named places, to make again as links:
    /// `(where, what it says)` (`/bin` → `usr/bin`).
    pub links: Vec<(PathBuf, PathBuf)>,
    /// Entries inside [`World::places`] their owner made unreadable to
    /// others.
    pub hidden: Vec<PathBuf>,
    /// Named places left out, in words (too many hidden entries).
    pub notes: Vec<String>,
}

impl World {
    /// Whether `path` (real, canonical) is readable: beneath the tree or a
    /// place, and not beneath a hidden entry.
    pub fn reads(&self, path: &Path) -> bool {
        let under = |b: &PathBuf| path.starts_with(b);
        (path.starts_with(&self.tree) || self.places.iter().any(under))
            && !self.hidden.iter().any(under)
    }

    /// Whether `path` is an ancestor of a readable place (a folder the
    /// view has only as a way to one).
    pub fn leads_to(&self, path: &Path) -> bool {
        std::iter::once(&self.tree)
            .chain(&self.places)
            .chain(self.links.iter().map(|(l, _)| l))
            .any(|p| p.starts_with(path) && p != path)
    }
}

/// The readable world of a command whose working tree is `tree`
/// (canonical), with the settings in force and `$HOME`.
pub fn world(tree: &Path) -> World {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    world_with(config(), tree, home.as_deref())
}

/// [`world`] with explicit settings and home.
pub fn world_with(config: &SandboxConfig, tree: &Path, home: Option<&Path>) -> World {
    let named = config.places(home);
    let mut w = World {
        tree: tree.to_path_buf(),
        ..World::default()
    };
    let mut places: Vec<(PathBuf, bool)> = Vec::new();
    let mut add = |p: &Path, system: bool, w: &mut World| {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            return;
        };
        if meta.file_type().is_symlink()
            && let Ok(to) = std::fs::read_link(p)
        {
            w.links.push((p.to_path_buf(), to));
        }
        if let Ok(real) = p.canonicalize() {
            places.push((real, system));
        }
    };
    for p in &named.system {
        add(p, true, &mut w);
    }
    for p in &named.homes {
        add(p, false, &mut w);
    }
    places.sort();
    places.dedup_by(|a, b| a.0 == b.0);
    let all: Vec<PathBuf> = places.iter().map(|(p, _)| p.clone()).collect();
    for (place, system) in places {
        let inside_other = all.iter().any(|o| *o != place && place.starts_with(o));
        if inside_other || place.starts_with(tree) || place == Path::new("/") {
            continue;
        }
        match hidden_in(&place, if system { usize::MAX } else { HOME_DEPTH }) {
            Ok(found) => {
                w.hidden.extend(found.iter().cloned());
                w.places.push(place);
            }
            Err(why) => w
                .notes
                .push(format!("{} is not readable: {why}", place.display())),
        }
    }
    w.links.retain(|(l, _)| !l.starts_with(tree));
    w
}

fn stamp(dir: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some((m.ino(), m.ctime(), m.ctime_nsec()))
}

/// Whether a walk (the folders it listed, stamped before listing, and
/// what it found) is still true: no folder changed.
fn still_true(w: &Walked) -> bool {
    w.dirs.iter().all(|(d, s)| stamp(d) == *s)
}

/// The last walk of each (place, depth).
type Walks = HashMap<(PathBuf, usize), std::sync::Arc<Walked>>;

static WALKS: OnceLock<Mutex<Walks>> = OnceLock::new();

/// The entries of `place` unreadable to others: from the last walk while
/// none of its folders changed (this process's, else a fresh one kept on
/// disk by another, [`super::walk_cache`]), else from a new one.
fn hidden_in(place: &Path, depth: usize) -> Result<Vec<PathBuf>, String> {
    let walks = WALKS.get_or_init(Default::default);
    let key = (place.to_path_buf(), depth);
    let last = walks.lock().ok().and_then(|all| all.get(&key).cloned());
    if let Some(w) = last.filter(|w| still_true(w)) {
        return w.found.clone();
    }
    let kept = super::walk_cache::load(place, depth).filter(still_true);
    let w = std::sync::Arc::new(kept.unwrap_or_else(|| {
        let w = walk(place, depth);
        super::walk_cache::store(place, depth, &w);
        w
    }));
    if let Ok(mut all) = walks.lock() {
        all.insert(key, w.clone());
    }
    w.found.clone()
}

/// Whether others may read a file (or list and enter a folder) of this
/// mode. Symbolic links are judged by where they lead, elsewhere.
fn open_to_others(mode: u32, dir: bool) -> bool {
    if dir {
        mode & 0o005 == 0o005
    } else {
        mode & 0o004 != 0
    }
}

/// Walk `place` (not following links, staying on its file system) for
/// entries unreadable to others; such a folder is listed, not entered.
fn walk(place: &Path, depth: usize) -> Walked {
    let mut w = Walked {
        dirs: Vec::new(),
        found: Ok(Vec::new()),
    };
    w.found = walk_into(place, depth, &mut w.dirs);
    w
}

fn walk_into(
    place: &Path,
    depth: usize,
    dirs: &mut Vec<(PathBuf, Option<Stamp>)>,
) -> Result<Vec<PathBuf>, String> {
    use std::os::unix::fs::MetadataExt;
    dirs.push((place.to_path_buf(), stamp(place)));
    let meta = std::fs::symlink_metadata(place).map_err(|e| e.to_string())?;
    if !open_to_others(meta.mode(), meta.is_dir()) {
        return Err("others may not read it".into());
    }
    if !meta.is_dir() {
        return Ok(Vec::new());
    }
    let dev = meta.dev();
    let mut found = Vec::new();
    let mut visited = 0usize;
    let mut stack = vec![(place.to_path_buf(), 0usize)];
    while let Some((dir, d)) = stack.pop() {
        if d > 0 {
            dirs.push((dir.clone(), stamp(&dir)));
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > MAX_VISITED {
                return Err(format!("more than {MAX_VISITED} entries to check"));
            }
            let Ok(m) = entry.metadata() else { continue };
            if m.file_type().is_symlink() {
                continue;
            }
            if !open_to_others(m.mode(), m.is_dir()) {
                found.push(entry.path());
                if found.len() > MAX_HIDDEN {
                    return Err(format!(
                        "more than {MAX_HIDDEN} entries unreadable to others"
                    ));
                }
            } else if m.is_dir() && d + 1 < depth && m.dev() == dev {
                stack.push((entry.path(), d + 1));
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path, m: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }

    #[test]
    fn entries_closed_to_others_are_hidden_and_not_entered() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(t.join("etc/private/deeper")).unwrap();
        std::fs::create_dir_all(t.join("etc/open")).unwrap();
        for f in ["etc/open/conf", "etc/open/key", "etc/private/deeper/x"] {
            std::fs::write(t.join(f), "x").unwrap();
        }
        mode(&t.join("etc/open/key"), 0o600);
        mode(&t.join("etc/private"), 0o700);
        let found = walk(&t.join("etc"), usize::MAX).found.unwrap();
        assert_eq!(found, [t.join("etc/open/key"), t.join("etc/private")]);
        // Depth 1: only the first level is looked at.
        let shallow = walk(&t.join("etc"), 1).found.unwrap();
        assert_eq!(shallow, [t.join("etc/private")]);
    }

    #[test]
    fn the_world_is_the_tree_the_places_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().canonicalize().unwrap();
        let home = t.join("home");
        for d in ["home/.cargo/bin", "home/.config/gh", "home/proj", "sys"] {
            std::fs::create_dir_all(t.join(d)).unwrap();
        }
        std::fs::write(home.join(".cargo/credentials.toml"), "token").unwrap();
        mode(&home.join(".cargo/credentials.toml"), 0o600);
        std::os::unix::fs::symlink("sys", t.join("link")).unwrap();
        let config = SandboxConfig {
            readable_add: vec![t.join("link").display().to_string()],
            ..SandboxConfig::default()
        };
        let w = world_with(&config, &home.join("proj"), Some(&home));
        assert!(w.reads(&home.join("proj/src/main.rs")));
        assert!(w.reads(&home.join(".cargo/bin/cargo")));
        assert!(!w.reads(&home.join(".cargo/credentials.toml")));
        assert!(!w.reads(&home.join(".config/gh/hosts.yml")));
        assert!(!w.reads(&home.join(".bash_history")));
        assert!(w.reads(Path::new("/usr/bin/env")));
        assert!(!w.reads(Path::new("/var/lib/dpkg/status")));
        assert!(!w.reads(Path::new("/tmp/krb5cc_0")));
        assert!(w.reads(&t.join("sys")));
        assert!(w.links.contains(&(t.join("link"), PathBuf::from("sys"))));
        assert!(w.leads_to(&home));
        assert!(!w.leads_to(&home.join(".config")));
    }
}
