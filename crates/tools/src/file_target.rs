//! Where a file tool's call really lands, for the approval and for the
//! write: the canonical path ([`PathPolicy::check`]: symlinks and `..`
//! resolved), what the card says when that is not the path the model wrote
//! (`/root/.profile (via symlink /work/notes.txt)`), and the check at write
//! time that the path still resolves to what the approval named.
//!
//! It never writes and never reads file contents; a path the policy refuses
//! names no target (the call fails when it runs, and no `path` rule can
//! match it).

use std::path::{Component, Path, PathBuf};

use super::paths::{PathPolicy, resolve_lexical};
use super::{FailureClass, ToolContext, ToolError};
use vigil_protocol::approval::CallFacts;

/// The facts of a call acting on `path`: its canonical path and, when that
/// is not what the model wrote, where it leads and through which symlink.
pub fn facts(paths: &PathPolicy, path: &str, local: bool) -> CallFacts {
    match paths.check(path, local) {
        Ok(real) => facts_of(real, path, local),
        Err(_) => CallFacts::default(),
    }
}

/// [`facts`] for a read: the read check (a secret place resolves, and asks).
pub fn read_facts(paths: &PathPolicy, path: &str, local: bool) -> CallFacts {
    match paths.check_read(path, local) {
        Ok(read) => facts_of(read.real, path, local),
        Err(_) => CallFacts::default(),
    }
}

fn facts_of(real: String, path: &str, local: bool) -> CallFacts {
    let written = absolute(path, local);
    let resolved = (written.as_deref() != Some(real.as_str())).then(|| {
        let via = written.as_deref().filter(|_| local).and_then(first_symlink);
        let linked = linked_note(&real, local);
        match via {
            Some(link) => format!("{real} (via symlink {}){linked}", link.display()),
            None => format!("{real}{linked}"),
        }
    });
    let resolved = resolved.or_else(|| {
        let linked = linked_note(&real, local);
        (!linked.is_empty()).then(|| format!("{real}{linked}"))
    });
    // The written path, `..` applied lexically: what a deny rule on the
    // tree it names must still catch when a symlink leads elsewhere.
    let lexical = written
        .map(|w| {
            resolve_lexical(Path::new(&w))
                .to_string_lossy()
                .into_owned()
        })
        .filter(|w| *w != real);
    CallFacts {
        paths: vec![real],
        written: lexical.into_iter().collect(),
        resolved,
        ..CallFacts::default()
    }
}

/// `path` made absolute as the model wrote it (relative: from this
/// process's directory, where the file tools resolve it), `..` kept.
fn absolute(path: &str, local: bool) -> Option<String> {
    let p = Path::new(path.trim());
    if p.is_absolute() {
        return Some(p.to_string_lossy().into_owned());
    }
    if !local {
        return None;
    }
    let cwd = std::env::current_dir().ok()?;
    Some(cwd.join(p).to_string_lossy().into_owned())
}

/// The first component of `abs` (as written, `..` applied as met) that is
/// a symlink on this machine.
fn first_symlink(abs: &str) -> Option<PathBuf> {
    let mut at = PathBuf::from("/");
    for c in Path::new(abs).components() {
        match c {
            Component::Normal(n) => at.push(n),
            Component::ParentDir => {
                at = resolve_lexical(&at.join(".."));
                continue;
            }
            _ => continue,
        }
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Some(at);
        }
    }
    None
}

/// ` (a hard link: N names share this file)` when the existing file has
/// other names: writing it changes them all.
fn linked_note(real: &str, local: bool) -> String {
    use std::os::unix::fs::MetadataExt;
    if !local {
        return String::new();
    }
    match std::fs::symlink_metadata(real) {
        Ok(m) if m.is_file() && m.nlink() > 1 => {
            format!(" (a hard link: {} names share this file)", m.nlink())
        }
        _ => String::new(),
    }
}

/// Refuse a gated call whose path now resolves elsewhere than the
/// approval named (a symlink changed after the operator or the rule saw
/// it), and, for a call nobody approved just now, a file with other hard
/// links (the write would change a file known by another name).
pub fn check_bound(
    ctx: &ToolContext,
    shown: &str,
    real: &str,
    local: bool,
) -> Result<(), ToolError> {
    if let Some(approved) = &ctx.approved_paths
        && !approved.iter().any(|p| p == real)
    {
        let named = if approved.is_empty() {
            "no path".to_string()
        } else {
            approved.join(", ")
        };
        return Err(ToolError::failed(
            FailureClass::PermissionDenied,
            format!(
                "refused: {shown} now resolves to {real}, but the approval named {named} (a \
                 symlink or directory changed after it was approved); nothing was written"
            ),
        ));
    }
    if ctx.sandboxed && !linked_note(real, local).is_empty() {
        return Err(ToolError::failed(
            FailureClass::PermissionDenied,
            format!(
                "refused: {real} is a hard link (other names share the file), and this call \
                 was not approved by the operator; it needs an operator's approval"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlinked_write_names_its_real_target_and_the_link() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let profile = base.join("profile");
        std::fs::write(&profile, "x").unwrap();
        let link = base.join("notes.txt");
        std::os::unix::fs::symlink(&profile, &link).unwrap();
        let f = facts(&PathPolicy::default(), link.to_str().unwrap(), true);
        assert_eq!(f.paths, vec![profile.display().to_string()]);
        assert_eq!(
            f.resolved.as_deref(),
            Some(format!("{} (via symlink {})", profile.display(), link.display()).as_str())
        );
        // A plain path says nothing more.
        let plain = facts(&PathPolicy::default(), profile.to_str().unwrap(), true);
        assert_eq!(plain.resolved, None);
        // `..` is resolved, and shown.
        std::fs::create_dir(base.join("a")).unwrap();
        let dotted = format!("{}/a/../profile", base.display());
        let f = facts(&PathPolicy::default(), &dotted, true);
        assert_eq!(f.paths, vec![profile.display().to_string()]);
        assert_eq!(f.resolved, Some(profile.display().to_string()));
        // A refused path names nothing.
        assert!(facts(&PathPolicy::default(), "/etc/passwd", true).is_empty());
    }

    #[test]
    fn hard_links_are_named_and_refused_unasked() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let a = base.join("a");
        std::fs::write(&a, "x").unwrap();
        std::fs::hard_link(&a, base.join("b")).unwrap();
        let f = facts(&PathPolicy::default(), a.to_str().unwrap(), true);
        assert!(f.resolved.unwrap().contains("a hard link: 2 names"));
        let real = a.to_str().unwrap();
        let ctx = ToolContext {
            approved_paths: Some(vec![real.to_string()]),
            ..ToolContext::default()
        };
        assert!(check_bound(&ctx, real, real, true).is_ok());
        let unasked = ToolContext {
            sandboxed: true,
            ..ctx
        };
        let e = check_bound(&unasked, real, real, true).unwrap_err();
        assert!(e.to_string().contains("hard link"), "{e}");
    }

    #[test]
    fn a_path_that_moved_after_the_approval_is_refused() {
        let ctx = ToolContext {
            approved_paths: Some(vec!["/tmp/notes.txt".into()]),
            ..ToolContext::default()
        };
        let e = check_bound(&ctx, "notes.txt", "/root/.profile", true).unwrap_err();
        assert!(
            e.to_string().contains("now resolves to /root/.profile"),
            "{e}"
        );
        // Not gated: nothing to compare with.
        assert!(check_bound(&ToolContext::default(), "x", "/root/.profile", true).is_ok());
    }
}
