//! Where a sandboxed command may read: beneath the readable places of its
//! world ([`super::world`]) except the excluded places within them (every
//! masked secret place, every entry unreadable to others).
//!
//! Landlock only allows, and a right granted on a folder reaches all that
//! is beneath it, so each place is granted as a complement: a place
//! holding an excluded place is not granted whole but entered, and its own
//! entries granted the same way, down to the excluded place itself, which
//! gets no rule. Symbolic links get no rule (the place they lead to is
//! reached through its real path).
//!
//! This module only lists paths; it never opens a file's contents and never
//! applies anything.

use std::path::{Path, PathBuf};

/// Most rules the walk makes (an excluded place in a folder of a million
/// entries must not stall the start): past it the walk fails.
pub const MAX_RULES: usize = 20_000;

/// The real (symlink-free) form of each excluded place that exists.
pub fn real_places(places: &[PathBuf]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = places
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The paths to grant read access beneath, so that everything under `/`
/// is readable but `excluded` (real paths, see [`real_places`]).
pub fn readable_beneath(excluded: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    readable_within(&[PathBuf::from("/")], excluded)
}

/// The paths to grant read access beneath, so that everything beneath
/// `places` is readable but `excluded` (all real paths).
pub fn readable_within(places: &[PathBuf], excluded: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    readable_and_entered(places, excluded).map(|(whole, _)| whole)
}

/// [`readable_within`], and the folders entered on the way to an excluded
/// place (they must still be listed: a working tree holding a `.env`).
pub fn readable_and_entered(
    places: &[PathBuf],
    excluded: &[PathBuf],
) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
    let (mut out, mut entered) = (Vec::new(), Vec::new());
    for place in places {
        let p = bytes(place);
        if excluded.iter().any(|x| within(p, bytes(x))) {
            continue;
        }
        if excluded.iter().any(|x| within(bytes(x), p)) {
            entered.push(place.clone());
            walk(place, excluded, &mut out, &mut entered)?;
        } else {
            out.push(place.clone());
        }
    }
    Ok((out, entered))
}

/// Whether `a` is `b` or beneath it (byte prefix at a `/` boundary; both
/// real, normalised paths).
fn within(a: &[u8], b: &[u8]) -> bool {
    a.starts_with(b) && (a.len() == b.len() || b == b"/" || a[b.len()] == b'/')
}

fn bytes(p: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    p.as_os_str().as_bytes()
}

fn walk(
    dir: &Path,
    excluded: &[PathBuf],
    out: &mut Vec<PathBuf>,
    entered: &mut Vec<PathBuf>,
) -> Result<(), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let p = bytes(&path);
        if kind.is_symlink() || excluded.iter().any(|x| within(p, bytes(x))) {
            continue;
        }
        if excluded.iter().any(|x| within(bytes(x), p)) {
            if kind.is_dir() {
                entered.push(path.clone());
                walk(&path, excluded, out, entered)?;
            }
            continue;
        }
        if out.len() >= MAX_RULES {
            return Err(format!(
                "more than {MAX_RULES} read rules are needed around the masked places"
            ));
        }
        out.push(path);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_complement_skips_the_excluded_place_and_keeps_its_siblings() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        for d in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a/secret"), root.join("a/link")).unwrap();
        let (mut out, mut entered) = (Vec::new(), Vec::new());
        walk(&root, &[root.join("a/secret")], &mut out, &mut entered).unwrap();
        assert_eq!(entered, [root.join("a")]);
        out.sort();
        assert_eq!(
            out,
            [root.join("a/file"), root.join("a/open"), root.join("b")]
        );
        let all = readable_beneath(&[PathBuf::from("/dev")]).unwrap();
        assert!(all.contains(&PathBuf::from("/etc")));
        assert!(!all.iter().any(|p| p.starts_with("/dev")));
        assert!(readable_beneath(&[PathBuf::from("/")]).unwrap().is_empty());
        let within = readable_within(&[root.join("a"), root.join("b")], &[root.join("a/secret")]);
        let mut within = within.unwrap();
        within.sort();
        assert_eq!(
            within,
            [root.join("a/file"), root.join("a/open"), root.join("b")]
        );
    }
}
