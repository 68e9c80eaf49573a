//! The walks behind "a recursive reader given a folder that holds a secret
//! place" ([`super::secret_reads`]), kept off the decision path.
//!
//! A folder's walk (up to [`WALK_LIMIT`] entries, symlinks not followed but
//! their targets checked) is remembered for the process with the identity and
//! change time of every folder it listed: an entry added, removed or renamed
//! changes its folder's time. A decision reads the last walk of a folder:
//!
//! - a walk of at most [`CHECK_NOW_DIRS`] folders is checked against those
//!   times at once (a `stat` each) and walked again if one changed;
//! - a larger one is used as it is, and when it was last checked more than
//!   [`RECHECK_AFTER`] ago a background thread checks it (and walks again
//!   if a folder changed), so the next decision reads the fresh result;
//! - a folder never walked is walked at once up to [`SYNC_LIMIT`] entries
//!   for the whole command; a folder that is larger is walked in the
//!   background and is *unknown* until then (the estimate is then medium,
//!   never low).
//!
//! So a decision lists at most [`SYNC_LIMIT`] entries and stats at most
//! [`CHECK_NOW_DIRS`] folders per folder named, whatever the tree holds. A
//! secret name added to a large tree less than [`RECHECK_AFTER`] before a
//! decision may be missed by the estimate; a command that then runs unasked
//! still runs in the sandbox, whose masks are found when it starts.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::resolve::resolve_local;
use vigil_config::secrets::{SecretPlaces, glob_name};

/// Most directory entries one walk looks at (more: the tree is too big to
/// tell).
pub const WALK_LIMIT: usize = 10_000;
/// Most entries listed on the decision path for one command text (every
/// folder never walked before, together).
pub const SYNC_LIMIT: usize = 300;
/// A remembered walk of at most this many folders is checked on the
/// decision path.
pub const CHECK_NOW_DIRS: usize = 48;
/// A larger remembered walk is checked again in the background when its
/// last check is older than this.
pub const RECHECK_AFTER: Duration = Duration::from_millis(500);

/// What a walk found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Walk {
    /// The entry of the list that matched, and where.
    Found(String, PathBuf),
    /// More than the limit to look through.
    TooBig,
    /// Nothing of a secret name.
    Clean,
}

/// A folder's identity and change time.
type Stamp = (u64, i64, i64);

fn stamp(dir: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some((m.ino(), m.ctime(), m.ctime_nsec()))
}

/// One finished walk: its result, the folders it listed with their stamps
/// (taken before listing), and when they were last found unchanged.
struct Known {
    walk: Walk,
    dirs: Vec<(PathBuf, Option<Stamp>)>,
    checked: Instant,
}

impl Known {
    fn still_true(&self) -> bool {
        self.dirs.iter().all(|(d, s)| stamp(d) == *s)
    }
}

/// The remembered walks, by folder, for the places in force.
static KNOWN: Mutex<Option<HashMap<PathBuf, Arc<Known>>>> = Mutex::new(None);
/// Folders queued for the background walker.
static QUEUED: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
/// Remembered walks at most (the oldest checked are dropped first).
const KNOWN_KEPT: usize = 256;

/// Forget every remembered walk (the places changed).
pub fn forget() {
    *KNOWN.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

fn remembered(dir: &Path) -> Option<Arc<Known>> {
    let known = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    known.as_ref()?.get(dir).cloned()
}

fn remember(dir: &Path, known: Known) {
    let mut all = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    let all = all.get_or_insert_with(HashMap::new);
    if all.len() >= KNOWN_KEPT && !all.contains_key(dir) {
        let oldest = all
            .iter()
            .min_by_key(|(_, k)| k.checked)
            .map(|(d, _)| d.clone());
        if let Some(oldest) = oldest {
            all.remove(&oldest);
        }
    }
    all.insert(dir.to_path_buf(), Arc::new(known));
}

/// The walk of `dir` as a decision reads it; `budget` is what is left of
/// the command's [`SYNC_LIMIT`] (spent here by a walk done now). `None`:
/// not known yet (a background walk is under way).
pub fn walk(dir: &Path, places: &SecretPlaces, budget: &Cell<usize>) -> Option<Walk> {
    if let Some(known) = remembered(dir) {
        if known.dirs.len() <= CHECK_NOW_DIRS {
            if known.still_true() {
                return Some(known.walk.clone());
            }
        } else {
            if known.checked.elapsed() > RECHECK_AFTER {
                queue(dir, places);
            }
            return Some(known.walk.clone());
        }
    }
    match walk_tree(dir, places, budget.get()) {
        Some(known) => {
            budget.set(budget.get().saturating_sub(known.seen));
            let walk = known.known.walk.clone();
            remember(dir, known.known);
            Some(walk)
        }
        None => {
            budget.set(0);
            queue(dir, places);
            None
        }
    }
}

/// Ask the background walker to (re)check `dir`.
fn queue(dir: &Path, places: &SecretPlaces) {
    static WORKER: OnceLock<Mutex<Sender<(PathBuf, SecretPlaces)>>> = OnceLock::new();
    let mut queued = QUEUED.lock().unwrap_or_else(|e| e.into_inner());
    if !queued
        .get_or_insert_with(HashSet::new)
        .insert(dir.to_path_buf())
    {
        return;
    }
    drop(queued);
    let worker = WORKER.get_or_init(|| {
        let (tx, rx) = channel::<(PathBuf, SecretPlaces)>();
        let _ = std::thread::Builder::new()
            .name("vigil-secret-walk".into())
            .spawn(move || {
                for (dir, places) in rx {
                    background(&dir, &places);
                }
            });
        Mutex::new(tx)
    });
    let sent = worker
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((dir.to_path_buf(), places.clone()));
    if sent.is_err() {
        unqueue(dir);
    }
}

fn unqueue(dir: &Path) {
    if let Some(q) = QUEUED.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        q.remove(dir);
    }
}

/// The background walker's job: check a remembered walk, walk again when a
/// folder changed (or none is remembered).
fn background(dir: &Path, places: &SecretPlaces) {
    let fresh = match remembered(dir) {
        Some(known) if known.still_true() => Known {
            walk: known.walk.clone(),
            dirs: known.dirs.clone(),
            checked: Instant::now(),
        },
        _ => match walk_tree(dir, places, WALK_LIMIT) {
            Some(w) => w.known,
            None => Known {
                walk: Walk::TooBig,
                dirs: Vec::new(),
                checked: Instant::now(),
            },
        },
    };
    remember(dir, fresh);
    unqueue(dir);
}

/// A walk and how many entries it looked at.
struct Walked {
    known: Known,
    seen: usize,
}

/// Walk the tree under `dir` for an entry of a secret name, looking at no
/// more than `limit` entries (`None`: it had more). At [`WALK_LIMIT`] the
/// answer for a larger tree is [`Walk::TooBig`].
fn walk_tree(dir: &Path, places: &SecretPlaces, limit: usize) -> Option<Walked> {
    let mut dirs = Vec::new();
    let mut seen = 0usize;
    let mut pending = vec![dir.to_path_buf()];
    let done = |walk, dirs, seen| {
        Some(Walked {
            known: Known {
                walk,
                dirs,
                checked: Instant::now(),
            },
            seen,
        })
    };
    while let Some(d) = pending.pop() {
        dirs.push((d.clone(), stamp(&d)));
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > limit {
                return (limit >= WALK_LIMIT).then(|| done(Walk::TooBig, dirs, seen))?;
            }
            let Ok(kind) = e.file_type() else { continue };
            let name = e.file_name();
            let path = d.join(&name);
            if let Some(entry) = secret_entry(&path, &name, kind.is_symlink(), places) {
                return done(Walk::Found(entry, path), dirs, seen);
            }
            if kind.is_dir() {
                pending.push(path);
            }
        }
    }
    done(Walk::Clean, dirs, seen)
}

/// The entry of the list `path` is (the absolute places beneath the walked
/// folder were checked before the walk: here only names, and where a
/// symlink leads).
fn secret_entry(
    path: &Path,
    name: &std::ffi::OsStr,
    symlink: bool,
    places: &SecretPlaces,
) -> Option<String> {
    if symlink {
        let real = resolve_local(path).unwrap_or_else(|_| path.to_path_buf());
        places.matches(&real).map(str::to_string)
    } else {
        let name = name.to_string_lossy();
        places
            .names()
            .find(|g| glob_name(g, &name))
            .map(str::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_config::secrets::SecretsConfig;

    fn places() -> SecretPlaces {
        SecretPlaces::new(&SecretsConfig::default(), None, &[])
    }

    /// `walk` until it answers (the background walker finishing).
    fn answer(dir: &Path) -> Walk {
        for _ in 0..500 {
            if let Some(w) = walk(dir, &places(), &Cell::new(SYNC_LIMIT)) {
                return w;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no answer for {}", dir.display());
    }

    #[test]
    fn a_small_tree_is_answered_now_and_a_change_is_seen_at_once() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        let budget = Cell::new(SYNC_LIMIT);
        assert_eq!(walk(tmp.path(), &places(), &budget), Some(Walk::Clean));
        assert!(budget.get() < SYNC_LIMIT, "the walk spent the budget");
        std::fs::write(tmp.path().join("a/b/.env"), "K=v").unwrap();
        let got = walk(tmp.path(), &places(), &Cell::new(SYNC_LIMIT));
        assert!(
            matches!(&got, Some(Walk::Found(_, at)) if at.ends_with("a/b/.env")),
            "{got:?}"
        );
    }

    #[test]
    fn a_large_tree_is_walked_in_the_background_and_the_decision_reads_it() {
        let tmp = tempfile::tempdir().unwrap();
        for i in 0..(SYNC_LIMIT + 50) {
            std::fs::write(tmp.path().join(format!("f{i}")), "").unwrap();
        }
        std::fs::create_dir(tmp.path().join("zz")).unwrap();
        std::fs::write(tmp.path().join("zz/.netrc"), "").unwrap();
        // Not known yet: the decision does not list past its budget.
        assert_eq!(walk(tmp.path(), &places(), &Cell::new(SYNC_LIMIT)), None);
        let got = answer(tmp.path());
        assert!(
            matches!(&got, Walk::Found(_, at) if at.ends_with("zz/.netrc")),
            "{got:?}"
        );
        // A spent budget: a second large tree is not listed now at all.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("main.rs"), "").unwrap();
        assert_eq!(walk(other.path(), &places(), &Cell::new(0)), None);
        assert_eq!(answer(other.path()), Walk::Clean);
    }
}
