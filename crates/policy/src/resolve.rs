//! Where a path on this machine really leads: every symlink met (dangling
//! ones included) is replaced by its target and `..` pops after that, the
//! way the kernel walks it. The file tools check the result against their
//! path policy and the risk estimate against the secret places.
//!
//! It only reads directory entries and symlinks (`lstat`, `readlink`); it
//! never opens a file, and a loop or an unreadable link is an error, never
//! a guess.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Most symlinks followed while resolving one path.
const MAX_LINKS: u32 = 40;

/// Components of `p` as owned names, `..` kept as `..`.
fn parts(p: &Path) -> VecDeque<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// Resolve an absolute path on this machine: every symlink met is replaced by
/// its target (even when the target does not exist), `..` pops after that.
pub fn resolve_local(abs: &Path) -> Result<PathBuf, String> {
    let mut pending = parts(abs);
    let mut out = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&name);
        let is_link = std::fs::symlink_metadata(&candidate)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        if !is_link {
            out = candidate;
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(format!(
                "too many symlinks while resolving {}",
                abs.display()
            ));
        }
        let target = std::fs::read_link(&candidate)
            .map_err(|e| format!("cannot read symlink {}: {e}", candidate.display()))?;
        if target.is_absolute() {
            out = PathBuf::from("/");
        }
        let mut next = parts(&target);
        next.extend(pending);
        pending = next;
    }
    Ok(out)
}

/// Normalise an absolute path without looking at any filesystem.
pub fn resolve_lexical(abs: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for name in parts(abs) {
        if name == ".." {
            out.pop();
        } else {
            out.push(name);
        }
    }
    out
}
