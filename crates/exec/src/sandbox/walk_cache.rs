//! The readable world's walks kept on disk, so that a new vigil process
//! (every `vigil exec`, every agent's first command) checks a place's
//! folders (about 15 000 under `/usr`, some 30 ms) instead of walking its
//! entries again (about 135 000, some 350 ms).
//!
//! A kept walk is used only when it is fresh ([`MAX_AGE`]), written by this
//! user and writable by nobody else, and none of the folders it listed has
//! changed since; the caller checks the last ([`super::world`]). The age
//! bound keeps what an in-process walk already allows: a file made
//! unreadable to others after a walk, without its folder changing, counts
//! as readable until the next walk. A kept walk is as trusted as the config
//! file beside it: whoever may write one may write the other.
//!
//! Kept in `$XDG_CACHE_HOME/vigil/walks` (else `~/.cache/vigil/walks`), one
//! file per place and depth, replaced whole (a new file renamed over the
//! old). Every failure here means only "walk again": nothing is reported
//! and nothing panics. This module never decides what is readable.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A folder's identity and change time (see `world`).
pub type Stamp = (u64, i64, i64);

/// One walk as kept: the folders it listed with their stamps, and what it
/// found (or why the place is not readable).
pub struct Kept {
    pub dirs: Vec<(PathBuf, Option<Stamp>)>,
    pub found: Result<Vec<PathBuf>, String>,
}

/// How long a kept walk may stand in for a new one.
pub const MAX_AGE: Duration = Duration::from_secs(600);

const HEADER: &str = "vigil-walk 1";

/// The folder of kept walks, if this user has a cache folder.
fn folder() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
        Some(p) if p.is_absolute() => p,
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
    };
    base.is_absolute().then(|| base.join("vigil").join("walks"))
}

/// The file of `place` walked to `depth`, in `folder`.
fn file(folder: &Path, place: &Path, depth: usize) -> PathBuf {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in place.as_os_str().as_encoded_bytes() {
        h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
    }
    folder.join(format!("{h:016x}-{depth}"))
}

/// Written by this user, writable by nobody else.
fn ours(meta: &std::fs::Metadata) -> bool {
    // SAFETY: geteuid(2) has no preconditions.
    meta.uid() == unsafe { libc::geteuid() } && meta.mode() & 0o022 == 0
}

/// The kept walk of `place` at `depth`, if there is a fresh one of ours.
pub fn load(place: &Path, depth: usize) -> Option<Kept> {
    load_from(&folder()?, place, depth)
}

fn load_from(folder: &Path, place: &Path, depth: usize) -> Option<Kept> {
    let path = file(folder, place, depth);
    let dir = std::fs::symlink_metadata(path.parent()?).ok()?;
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !dir.is_dir() || !ours(&dir) || !meta.is_file() || !ours(&meta) {
        return None;
    }
    let age = SystemTime::now()
        .duration_since(meta.modified().ok()?)
        .ok()?;
    if age > MAX_AGE {
        return None;
    }
    parse(&std::fs::read_to_string(&path).ok()?, place, depth)
}

fn parse(text: &str, place: &Path, depth: usize) -> Option<Kept> {
    let mut lines = text.lines();
    if lines.next()? != HEADER || lines.next()? != format!("{depth} {}", place.display()) {
        return None;
    }
    let mut kept = Kept {
        dirs: Vec::new(),
        found: Ok(Vec::new()),
    };
    for line in lines {
        let (kind, rest) = line.split_once(' ')?;
        match kind {
            "D" => kept.dirs.push(dir_line(rest)?),
            "F" => kept.found.as_mut().ok()?.push(PathBuf::from(rest)),
            "E" => kept.found = Err(rest.to_string()),
            _ => return None,
        }
    }
    Some(kept)
}

/// `ino ctime nsec path`, or `- path` for a folder that had no stamp.
fn dir_line(rest: &str) -> Option<(PathBuf, Option<Stamp>)> {
    if let Some(path) = rest.strip_prefix("- ") {
        return Some((PathBuf::from(path), None));
    }
    let mut parts = rest.splitn(4, ' ');
    let ino = parts.next()?.parse().ok()?;
    let ctime = parts.next()?.parse().ok()?;
    let nsec = parts.next()?.parse().ok()?;
    Some((PathBuf::from(parts.next()?), Some((ino, ctime, nsec))))
}

/// Keep this walk (best effort; a path that is not one line of UTF-8 is
/// not kept, and the next process walks again).
pub fn store(place: &Path, depth: usize, kept: &Kept) {
    if let Some(folder) = folder() {
        store_in(&folder, place, depth, kept);
    }
}

fn store_in(dir: &Path, place: &Path, depth: usize, kept: &Kept) {
    let Some(text) = render(place, depth, kept) else {
        return;
    };
    let path = file(dir, place, depth);
    if std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .is_err()
    {
        return;
    }
    let tmp = dir.join(format!(".{}.{}", std::process::id(), nonce()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if written.is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

fn nonce() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

fn render(place: &Path, depth: usize, kept: &Kept) -> Option<String> {
    let one_line = |p: &Path| p.to_str().filter(|s| !s.contains('\n')).map(str::to_owned);
    let mut out = format!("{HEADER}\n{depth} {}\n", one_line(place)?);
    for (dir, stamp) in &kept.dirs {
        let dir = one_line(dir)?;
        match stamp {
            Some((ino, ctime, nsec)) => out.push_str(&format!("D {ino} {ctime} {nsec} {dir}\n")),
            None => out.push_str(&format!("D - {dir}\n")),
        }
    }
    match &kept.found {
        Ok(found) => {
            for f in found {
                out.push_str(&format!("F {}\n", one_line(f)?));
            }
        }
        Err(why) => out.push_str(&format!("E {}\n", why.replace('\n', " "))),
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_walk_is_read_back_as_written_and_only_for_its_place_and_depth() {
        let kept = Kept {
            dirs: vec![
                (PathBuf::from("/p/a b"), Some((7, -3, 999))),
                (PathBuf::from("/p/gone"), None),
            ],
            found: Ok(vec![PathBuf::from("/p/a b/key file")]),
        };
        let text = render(Path::new("/p"), 3, &kept).unwrap();
        let back = parse(&text, Path::new("/p"), 3).unwrap();
        assert_eq!(back.dirs, kept.dirs);
        assert_eq!(back.found, kept.found);
        assert!(parse(&text, Path::new("/q"), 3).is_none());
        assert!(parse(&text, Path::new("/p"), 4).is_none());
        let refused = Kept {
            dirs: vec![],
            found: Err("too many".into()),
        };
        let text = render(Path::new("/p"), 1, &refused).unwrap();
        assert_eq!(
            parse(&text, Path::new("/p"), 1).unwrap().found,
            refused.found
        );
        // A path of two lines is not kept at all.
        let two = Kept {
            dirs: vec![(PathBuf::from("/p/x\ny"), None)],
            found: Ok(vec![]),
        };
        assert!(render(Path::new("/p"), 1, &two).is_none());
        assert!(parse("vigil-walk 1\n1 /p\nX what\n", Path::new("/p"), 1).is_none());
    }

    #[test]
    fn only_a_fresh_walk_of_ours_that_nobody_else_may_write_is_used() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("walks");
        let kept = Kept {
            dirs: vec![(PathBuf::from("/p"), Some((1, 2, 3)))],
            found: Ok(vec![PathBuf::from("/p/key")]),
        };
        store_in(&dir, Path::new("/p"), 5, &kept);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let path = file(&dir, Path::new("/p"), 5);
        assert_eq!(mode(&path), 0o600);
        let back = load_from(&dir, Path::new("/p"), 5).expect("kept");
        assert_eq!((back.dirs, back.found), (kept.dirs, kept.found));
        assert!(load_from(&dir, Path::new("/p"), 4).is_none());
        // Writable by others: not used.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o622)).unwrap();
        assert!(load_from(&dir, Path::new("/p"), 5).is_none());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(load_from(&dir, Path::new("/p"), 5).is_some());
        // Older than MAX_AGE: not used.
        let old = SystemTime::now() - MAX_AGE - Duration::from_secs(1);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_modified(old).unwrap();
        assert!(load_from(&dir, Path::new("/p"), 5).is_none());
        // Hostile: a walk that lists nothing hidden, planted by another user
        // (here uid 65534) in a folder this user reads: not used, whatever
        // its mode. Tried for real when the tests run as root.
        // SAFETY: geteuid(2) has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            let fresh = SystemTime::now();
            f.set_modified(fresh).unwrap();
            assert!(load_from(&dir, Path::new("/p"), 5).is_some());
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            assert!(load_from(&dir, Path::new("/p"), 5).is_none());
            std::os::unix::fs::chown(&path, Some(0), Some(0)).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            assert!(
                load_from(&dir, Path::new("/p"), 5).is_none(),
                "a folder of another's"
            );
            std::os::unix::fs::chown(&dir, Some(0), Some(0)).unwrap();
            // A folder others may write: another user could swap the file.
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
            assert!(
                load_from(&dir, Path::new("/p"), 5).is_none(),
                "an open folder"
            );
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        // Nothing but the one file is left in the folder.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    }
}
