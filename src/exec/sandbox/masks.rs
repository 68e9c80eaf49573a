//! Which places a run nobody approved must not read: the secret places of
//! the configuration ([`crate::config::secrets::SecretPlaces`]) that exist,
//! plus every file or folder of a secret name (`.env`, `.env.*`, `.ssh`…)
//! found by a bounded walk of the run's working tree. The sandbox helper
//! and the preview's view receive them as `--mask PATH` arguments and mask
//! them with the kernel (the sandbox through Landlock, the view with
//! mounts).
//!
//! The list is set once per process from the configuration
//! ([`set_secret_places`]); until then the defaults apply. This module only
//! lists paths; it never reads a file's contents.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::config::secrets::SecretPlaces;

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

/// Every entry of a secret name beneath `tree` (bounded, see the
/// constants); a secret folder is listed, not entered.
fn named_beneath(places: &SecretPlaces, tree: &Path, out: &mut Vec<PathBuf>) {
    let mut queue = std::collections::VecDeque::from([(tree.to_path_buf(), 0usize)]);
    let mut listed = 0;
    while let Some((dir, depth)) = queue.pop_front() {
        if listed >= WALK_MAX_DIRS {
            return;
        }
        listed += 1;
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if places.is_secret_name(name) {
                out.push(entry.path());
                continue;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir && depth < WALK_MAX_DEPTH && !WALK_SKIP.contains(&name) {
                queue.push_back((entry.path(), depth + 1));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::secrets::SecretsConfig;

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
