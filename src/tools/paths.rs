//! The path policy for the file tools (`read_file`, `write_file`, `edit`):
//! which paths the model may touch on the target.
//!
//! A path is resolved first — on the local machine every symlink (dangling
//! ones included) and every `..` is followed component by component; on other
//! targets the path must be absolute and is normalised lexically — and only
//! then checked: it must lie under an allowed root (none configured: anywhere),
//! and sensitive places (`/etc`, `/boot`, `.ssh`/`.aws`/`.gnupg` directories,
//! `/proc/*/environ`, ...) are refused unless an allowed root explicitly lies
//! inside them. This module never reads file contents and never lets a path
//! through that it could not resolve.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::{FailureClass, ToolError};

/// Sensitive roots refused unless explicitly allowed (`~` is the local home).
pub const DEFAULT_SENSITIVE_ROOTS: &[&str] = &[
    "/etc",
    "/boot",
    "/root/.ssh",
    "/root/.aws",
    "/root/.gnupg",
    "/run/secrets",
    "/var/run/secrets",
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
];

/// Directory names that are sensitive wherever they appear (covers every
/// user's home on any target).
pub const DEFAULT_SENSITIVE_NAMES: &[&str] = &[".ssh", ".aws", ".gnupg"];

/// Entries of `/proc/<pid>/` that leak secrets or lead elsewhere.
const PROC_SECRETS: &[&str] = &["environ", "mem", "root", "cwd", "fd", "map_files", "auxv"];

/// Most symlinks followed while resolving one path.
const MAX_LINKS: u32 = 40;

/// Which paths the file tools may use. `[tools] files_allowed_paths` fills
/// `allowed_roots`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPolicy {
    /// Paths must lie under one of these; empty: anywhere not sensitive.
    pub allowed_roots: Vec<String>,
    /// Refused unless an allowed root lies inside them.
    pub sensitive_roots: Vec<String>,
    /// Directory names refused wherever they appear (unless allowed).
    pub sensitive_names: Vec<String>,
}

impl Default for PathPolicy {
    fn default() -> Self {
        PathPolicy {
            allowed_roots: Vec::new(),
            sensitive_roots: DEFAULT_SENSITIVE_ROOTS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            sensitive_names: DEFAULT_SENSITIVE_NAMES
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

fn refuse(msg: String) -> ToolError {
    ToolError::failed(FailureClass::PermissionDenied, msg)
}

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

impl PathPolicy {
    /// A policy allowing only `roots` (plus the default sensitive rules).
    pub fn allowing(roots: &[&str]) -> Self {
        PathPolicy {
            allowed_roots: roots.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// Resolve `path` and check it. `local`: the target's filesystem is this
    /// machine's. Returns the resolved path the tool must use.
    pub fn check(&self, path: &str, local: bool) -> Result<String, ToolError> {
        let home = if local {
            std::env::var_os("HOME")
        } else {
            None
        };
        let resolved = self.resolve(path, local)?;
        let allowed: Vec<PathBuf> = self
            .allowed_roots
            .iter()
            .filter_map(|r| self.resolve(r, local).ok())
            .collect();
        if !self.allowed_roots.is_empty() && !allowed.iter().any(|r| resolved.starts_with(r)) {
            return Err(refuse(format!(
                "{path} is outside the allowed paths ({}); use a path under one of them",
                self.allowed_roots.join(", ")
            )));
        }
        if let Some(why) = self.sensitive(&resolved, home.as_deref().map(Path::new)) {
            let explicit = allowed.iter().any(|r| {
                resolved.starts_with(r)
                    && self.sensitive(r, home.as_deref().map(Path::new)).is_some()
            });
            if !explicit {
                let shown = if resolved.as_os_str() == path {
                    String::new()
                } else {
                    format!(" (resolves to {})", resolved.display())
                };
                return Err(refuse(format!(
                    "{path}{shown} is in a sensitive location ({why}); the file tools may not \
                     touch it unless the operator allows it in [tools] files_allowed_paths"
                )));
            }
        }
        Ok(resolved.to_string_lossy().into_owned())
    }

    fn resolve(&self, path: &str, local: bool) -> Result<PathBuf, ToolError> {
        let path = path.trim();
        if path.is_empty() {
            return Err(ToolError::InvalidArguments("the path is empty".into()));
        }
        if path == "~" || path.starts_with("~/") {
            return Err(ToolError::InvalidArguments(format!(
                "{path}: `~` is not expanded; give the absolute path"
            )));
        }
        let expanded = PathBuf::from(path);
        if !expanded.is_absolute() {
            if !local {
                return Err(ToolError::InvalidArguments(format!(
                    "{path} is relative; on this target give an absolute path"
                )));
            }
            let cwd = std::env::current_dir()
                .map_err(|e| refuse(format!("cannot resolve {path}: {e}")))?;
            return resolve_local(&cwd.join(expanded)).map_err(refuse);
        }
        if local {
            resolve_local(&expanded).map_err(refuse)
        } else {
            Ok(resolve_lexical(&expanded))
        }
    }

    /// Why `p` (resolved) is sensitive, if it is.
    fn sensitive(&self, p: &Path, home: Option<&Path>) -> Option<String> {
        for root in &self.sensitive_roots {
            let root_path = match (root.strip_prefix("~/"), home) {
                (Some(rest), Some(h)) => h.join(rest),
                (Some(_), None) => continue,
                _ => PathBuf::from(root),
            };
            if p.starts_with(&root_path) {
                return Some(format!("under {root}"));
            }
        }
        for c in p.components() {
            if let Component::Normal(n) = c
                && self.sensitive_names.iter().any(|s| n == s.as_str())
            {
                return Some(format!("inside a {} directory", n.to_string_lossy()));
            }
        }
        let names: Vec<_> = p.components().collect();
        if let [
            Component::RootDir,
            Component::Normal(proc_),
            Component::Normal(_),
            Component::Normal(entry),
            ..,
        ] = names.as_slice()
            && *proc_ == "proc"
            && PROC_SECRETS.iter().any(|s| entry == s)
        {
            return Some(format!("/proc/*/{}", entry.to_string_lossy()));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn denied(r: Result<String, ToolError>) -> String {
        let e = r.expect_err("should be refused");
        assert_eq!(e.class(), FailureClass::PermissionDenied, "{e}");
        e.to_string()
    }

    #[test]
    fn sensitive_places_are_refused_by_default() {
        let p = PathPolicy::default();
        for path in [
            "/etc/passwd",
            "/etc",
            "/boot/vmlinuz",
            "/root/.ssh/id_rsa",
            "/home/ops/.ssh/authorized_keys",
            "/home/ops/.aws/credentials",
            "/proc/1/environ",
            "/proc/self/environ",
            "/tmp/../etc/shadow",
            "/var/run/secrets/kubernetes.io/token",
        ] {
            let m = denied(p.check(path, false));
            assert!(m.contains("sensitive"), "{m}");
        }
        assert_eq!(p.check("/tmp/x/../y", false).unwrap(), "/tmp/y");
        assert_eq!(p.check("/var/log/syslog", true).unwrap(), "/var/log/syslog");
    }

    #[test]
    fn symlinks_are_followed_before_the_check() {
        let dir = tempfile::tempdir().unwrap();
        let base = resolve_local(dir.path()).unwrap();
        let link = base.join("innocent");
        std::os::unix::fs::symlink("/etc", &link).unwrap();
        let p = PathPolicy::default();
        let m = denied(p.check(&format!("{}/passwd", link.display()), true));
        assert!(m.contains("resolves to /etc/passwd"), "{m}");
        // A dangling link to a sensitive place is refused too.
        let dangling = base.join("new.conf");
        std::os::unix::fs::symlink("/etc/vigil-does-not-exist.conf", &dangling).unwrap();
        denied(p.check(dangling.to_str().unwrap(), true));
        // `..` after a symlink is taken from the link's target.
        std::fs::create_dir(base.join("real")).unwrap();
        std::fs::create_dir(base.join("real/sub")).unwrap();
        std::os::unix::fs::symlink(base.join("real/sub"), base.join("s")).unwrap();
        let got = p
            .check(&format!("{}/s/../f", base.display()), true)
            .unwrap();
        assert_eq!(got, base.join("real/f").to_str().unwrap());
        // Loops are refused, not spun on.
        std::os::unix::fs::symlink(base.join("loop"), base.join("loop")).unwrap();
        denied(p.check(base.join("loop/x").to_str().unwrap(), true));
    }

    #[test]
    fn allowed_roots_confine_and_can_open_sensitive_places() {
        let dir = tempfile::tempdir().unwrap();
        let root = resolve_local(dir.path()).unwrap();
        let r = root.to_str().unwrap();
        let p = PathPolicy::allowing(&[r, "/etc/nginx"]);
        assert!(p.check(&format!("{r}/a/b"), true).is_ok());
        assert!(p.check("/etc/nginx/nginx.conf", false).is_ok());
        let m = denied(p.check("/etc/passwd", false));
        assert!(m.contains("outside the allowed paths"), "{m}");
        denied(p.check(&format!("{r}/../escape"), true));
        denied(p.check("/var/log/syslog", false));
        // Allowing `/` does not open sensitive places.
        let p = PathPolicy::allowing(&["/"]);
        denied(p.check("/etc/passwd", false));
    }

    #[test]
    fn unusable_paths_are_invalid_arguments() {
        let p = PathPolicy::default();
        for (path, local) in [
            ("relative/x", false),
            ("~/x", false),
            ("~/x", true),
            ("", true),
        ] {
            let e = p.check(path, local).unwrap_err();
            assert_eq!(e.class(), FailureClass::InvalidArguments, "{path}");
        }
    }
}
