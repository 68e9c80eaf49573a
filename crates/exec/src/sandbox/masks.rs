//! Which places a run nobody approved must not read: the secret places of
//! the configuration ([`vigil_config::secrets::SecretPlaces`]) that exist,
//! plus every file or folder of a secret name (`.env`, `.env.*`, `.ssh`…)
//! found by a bounded walk of the run's working tree. The sandbox helper
//! and the preview's view receive them as `--mask PATH` arguments and mask
//! them with the kernel (the sandbox through Landlock, the view with
//! mounts).
//!
//! The list is set once per process from the configuration
//! ([`set_secret_places`]); until then the defaults apply. A tree's walk is
//! remembered with the change time of every folder it listed and reused
//! while none changed (an entry added, removed or renamed changes its
//! folder), so a repeated run pays a `stat` per folder, not a listing. This
//! module only lists paths; it never reads a file's contents.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use vigil_config::secrets::SecretPlaces;

/// Folders the name walk lists at most (a huge tree is cut there: names
/// deeper or later are a stated limit).
pub const WALK_MAX_DIRS: usize = 2_000;
/// How deep the name walk goes beneath the working tree.
pub const WALK_MAX_DEPTH: usize = 8;
/// Folders the name walk never enters (their contents are not a project's
/// own files, and they are large).
const WALK_SKIP: &[&str] = &[".git", "node_modules", "target", ".venv", "__pycache__"];

static PLACES: OnceLock<SecretPlaces> = OnceLock::new();

/// Use `places` for every later run (set once, from the configuration, at
/// start-up; a second call is ignored).
pub fn set_secret_places(places: SecretPlaces) {
    let _ = PLACES.set(places);
}

/// The secret places in force.
pub fn secret_places() -> &'static SecretPlaces {
    PLACES.get_or_init(SecretPlaces::default)
}

/// The git top level holding `dir`, else `dir`.
pub fn working_tree(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(dir)
        .to_path_buf()
}

/// The places to mask for a run in `cwd` (or vigil's directory).
pub fn masks_for(cwd: Option<&Path>) -> Vec<PathBuf> {
    let places = secret_places();
    let mut out = places.existing_roots();
    let dir = cwd
        .map(Path::to_path_buf)
        .or_else(|| std::env::current_dir().ok())
        .and_then(|d| d.canonicalize().ok());
    if let Some(dir) = dir {
        let tree = working_tree(&dir);
        if tree != Path::new("/") {
            named_beneath(places, &tree, &mut out);
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A folder's identity and change time: a new, removed or renamed entry
/// changes it (and so does setting its times back).
type Stamp = (u64, i64, i64);

fn stamp(dir: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some((m.ino(), m.ctime(), m.ctime_nsec()))
}

/// One walk: the folders it listed (stamped before listing) and what it
/// found. Still true while every folder has the same stamp.
struct Walk {
    dirs: Vec<(PathBuf, Option<Stamp>)>,
    found: Vec<PathBuf>,
}

impl Walk {
    fn still_true(&self) -> bool {
        self.dirs.iter().all(|(d, s)| stamp(d) == *s)
    }
}

/// Walks of recent working trees (a few; the oldest is dropped).
static WALKS: std::sync::Mutex<Vec<(PathBuf, std::sync::Arc<Walk>)>> =
    std::sync::Mutex::new(Vec::new());
const WALKS_KEPT: usize = 8;

/// Every entry of a secret name beneath `tree` (see [`walk`]), from the
/// last walk of that tree when none of its folders changed since.
fn named_beneath(places: &SecretPlaces, tree: &Path, out: &mut Vec<PathBuf>) {
    let cached = WALKS
        .lock()
        .ok()
        .and_then(|w| w.iter().find(|(t, _)| t == tree).map(|(_, w)| w.clone()));
    let walked = match cached {
        Some(w) if w.still_true() => w,
        _ => {
            let w = std::sync::Arc::new(walk(places, tree));
            if let Ok(mut all) = WALKS.lock() {
                all.retain(|(t, _)| t != tree);
                if all.len() >= WALKS_KEPT {
                    all.remove(0);
                }
                all.push((tree.to_path_buf(), w.clone()));
            }
            w
        }
    };
    out.extend(walked.found.iter().cloned());
}

/// Walk `tree` for entries of a secret name (bounded, see the constants);
/// a secret folder is listed, not entered.
fn walk(places: &SecretPlaces, tree: &Path) -> Walk {
    let mut w = Walk {
        dirs: Vec::new(),
        found: Vec::new(),
    };
    let mut queue = std::collections::VecDeque::from([(tree.to_path_buf(), 0usize)]);
    while let Some((dir, depth)) = queue.pop_front() {
        if w.dirs.len() >= WALK_MAX_DIRS {
            break;
        }
        w.dirs.push((dir.clone(), stamp(&dir)));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if places.is_secret_name(name) {
                w.found.push(entry.path());
                continue;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && depth < WALK_MAX_DEPTH && !WALK_SKIP.contains(&name) {
                queue.push_back((entry.path(), depth + 1));
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_config::secrets::SecretsConfig;

    #[test]
    fn secret_names_are_found_in_the_tree_and_not_entered() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        std::fs::create_dir_all(t.join("app/.ssh/deep")).unwrap();
        std::fs::create_dir_all(t.join("node_modules/x")).unwrap();
        for f in [
            "app/.env",
            "app/.env.local",
            "app/main.rs",
            "node_modules/x/.env",
        ] {
            std::fs::write(t.join(f), "x").unwrap();
        }
        let places = SecretPlaces::new(&SecretsConfig::default(), None, &[]);
        let mut out = Vec::new();
        named_beneath(&places, t, &mut out);
        out.sort();
        assert_eq!(
            out,
            [
                t.join("app/.env"),
                t.join("app/.env.local"),
                t.join("app/.ssh")
            ]
        );
    }
}
