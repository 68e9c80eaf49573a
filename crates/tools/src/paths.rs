//! The path policy for the file tools (`read_file`, `write_file`, `edit`):
//! which paths the model may touch on the target.
//!
//! A path is resolved first — on the local machine every symlink (dangling
//! ones included) and every `..` is followed component by component; on other
//! targets the path must be absolute and is normalised lexically — and only
//! then checked: it must lie under an allowed root (none configured:
//! anywhere); system places (`/etc`, `/boot`, `/proc/*/environ`, ...) are
//! refused unless an allowed root explicitly lies inside them; and the secret
//! places ([`vigil_config::secrets`], the one list every tool reads) are
//! refused for writing (unless explicitly allowed the same way) and reported
//! for reading, so the read asks the operator every time (an allowed root
//! does not change that: a secret read is always a fresh decision). This
//! module never reads file contents and never lets a path through that it
//! could not resolve.

use std::path::{Component, Path, PathBuf};

use super::{FailureClass, ToolError};
use vigil_config::secrets::SecretPlaces;
pub use vigil_policy::resolve::{resolve_lexical, resolve_local};

/// System places refused both ways unless explicitly allowed.
pub const SYSTEM_ROOTS: &[&str] = &["/etc", "/boot"];

/// Entries of `/proc/<pid>/` (and of `/proc/<pid>/task/<tid>/`, where
/// `/proc/thread-self` leads) that leak secrets or lead elsewhere: a
/// process's environment holds vigil's API key, its command line may.
const PROC_SECRETS: &[&str] = &[
    "environ",
    "mem",
    "root",
    "cwd",
    "fd",
    "fdinfo",
    "map_files",
    "auxv",
    "cmdline",
    "pagemap",
];

/// Which paths the file tools may use. `[tools] files_allowed_paths` fills
/// `allowed_roots`; `[secrets]` (through [`vigil_config::Config::secret_places`])
/// fills `secrets`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathPolicy {
    /// Paths must lie under one of these; empty: anywhere not refused.
    pub allowed_roots: Vec<String>,
    /// The secret places: a read asks, a write is refused.
    pub secrets: SecretPlaces,
    /// vigil's data folder: the spill files in it (beneath a `spill`
    /// folder) are read without asking — each holds the whole output of a
    /// call the model was given a part of.
    pub data_dir: Option<PathBuf>,
}

impl Default for PathPolicy {
    /// No allowed roots; the secret places installed for this process.
    fn default() -> Self {
        PathPolicy {
            allowed_roots: Vec::new(),
            secrets: vigil_policy::secret_reads::installed(),
            data_dir: None,
        }
    }
}

/// A path the policy lets a reader use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadPath {
    /// The resolved path the tool must use.
    pub real: String,
    /// The secret-place entry it lies in, if it does (the read must ask).
    pub secret: Option<String>,
    /// A local path outside what a command that runs unasked may read (the
    /// readable world of `vigil_exec::sandbox::world`: the working tree,
    /// the system places, the tool homes, `[sandbox] readable_add`), not a
    /// spill file of vigil's and not under an allowed root the operator
    /// named: the read asks (ungated, it is refused).
    pub outside: bool,
}

/// A regular file with other names: one of them may lie in a secret place
/// (a hard link made earlier to a key), so its read is treated like one.
fn hard_link(resolved: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(resolved).ok()?;
    (meta.is_file() && meta.nlink() > 1).then(|| {
        format!(
            "a hard link: {} names share this file, one may be a secret place",
            meta.nlink()
        )
    })
}

fn refuse(msg: String) -> ToolError {
    ToolError::failed(FailureClass::PermissionDenied, msg)
}

/// The refusal of a read outside the readable places that nobody decided
/// (it ran ungated): `how` says what would ask.
pub fn outside_refusal(path: &str, how: &str) -> ToolError {
    refuse(format!(
        "refused: {path} lies outside the readable places (what vigil lets run unasked may \
         read: the working tree, the system's program places, the tool homes and [sandbox] \
         readable_add); {how}"
    ))
}

/// The refusal of a secret read that had no fresh operator decision: `how`
/// says what would ask.
pub fn secret_refusal(path: &str, entry: &str, how: &str) -> ToolError {
    refuse(format!(
        "refused: {path} is in a secret place (`{entry}`) and reading it needs the operator's \
         own approval of this very call (no rule or policy can give it); {how}"
    ))
}

impl PathPolicy {
    /// A policy allowing only `roots` (plus the default refusals).
    pub fn allowing(roots: &[&str]) -> Self {
        PathPolicy {
            allowed_roots: roots.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    /// Resolve `path` and check it for writing. `local`: the target's
    /// filesystem is this machine's. Returns the resolved path the tool
    /// must use.
    pub fn check(&self, path: &str, local: bool) -> Result<String, ToolError> {
        let (resolved, allowed) = self.confined(path, local)?;
        let why = self.system(&resolved).or_else(|| {
            self.secret(&resolved)
                .map(|e| format!("secret place `{e}`"))
        });
        if let Some(why) = why
            && !self.explicit(&resolved, &allowed)
        {
            return Err(self.sensitive(path, &resolved, &why));
        }
        Ok(resolved.to_string_lossy().into_owned())
    }

    /// Resolve `path` and check it for reading: refused where a write is,
    /// except in a secret place, which is named instead (the read asks).
    pub fn check_read(&self, path: &str, local: bool) -> Result<ReadPath, ToolError> {
        let (resolved, allowed) = self.confined(path, local)?;
        if let Some(why) = self.system(&resolved)
            && !self.explicit(&resolved, &allowed)
        {
            return Err(self.sensitive(path, &resolved, &why));
        }
        let secret = self.secret(&resolved).map(str::to_string);
        let secret = secret.or_else(|| local.then(|| hard_link(&resolved)).flatten());
        Ok(ReadPath {
            secret,
            outside: local && !self.readable_unasked(&resolved, &allowed),
            real: resolved.to_string_lossy().into_owned(),
        })
    }

    /// Whether a read of `p` (resolved, local) may run unasked: beneath an
    /// allowed root the operator named, a spill file of vigil's, or in the
    /// readable world of vigil's working tree. An allow-list: every other
    /// place asks, whatever it holds.
    fn readable_unasked(&self, p: &Path, allowed: &[PathBuf]) -> bool {
        if allowed.iter().any(|r| p.starts_with(r)) {
            return true;
        }
        let spill = self
            .data_dir
            .as_ref()
            .and_then(|d| d.canonicalize().ok())
            .and_then(|d| p.strip_prefix(d).ok().map(Path::to_path_buf))
            .is_some_and(|rest| rest.components().any(|c| c.as_os_str() == "spill"));
        if spill {
            return true;
        }
        let Ok(tree) = std::env::current_dir().and_then(|d| d.canonicalize()) else {
            return false;
        };
        vigil_exec::sandbox::world::world(&tree).reads(p)
    }

    /// The resolved path and the allowed roots, or why the path is outside.
    fn confined(&self, path: &str, local: bool) -> Result<(PathBuf, Vec<PathBuf>), ToolError> {
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
        Ok((resolved, allowed))
    }

    /// Whether an allowed root that is itself refused contains `resolved`
    /// (the operator opened that place on purpose).
    fn explicit(&self, resolved: &Path, allowed: &[PathBuf]) -> bool {
        allowed.iter().any(|r| {
            resolved.starts_with(r) && (self.system(r).is_some() || self.secret(r).is_some())
        })
    }

    fn sensitive(&self, path: &str, resolved: &Path, why: &str) -> ToolError {
        let shown = if resolved.as_os_str() == path {
            String::new()
        } else {
            format!(" (resolves to {})", resolved.display())
        };
        refuse(format!(
            "{path}{shown} is in a sensitive location ({why}); the file tools may not \
             touch it unless the operator allows it in [tools] files_allowed_paths"
        ))
    }

    /// The secret-place entry `p` (resolved) lies in.
    pub fn secret(&self, p: &Path) -> Option<&str> {
        self.secrets.matches(p)
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

    /// Why `p` (resolved) is a refused system place, if it is.
    fn system(&self, p: &Path) -> Option<String> {
        if let Some(root) = SYSTEM_ROOTS.iter().find(|r| p.starts_with(r)) {
            return Some(format!("under {root}"));
        }
        // Any depth below a process: `/proc/PID/task/TID/environ` is the
        // same environment as `/proc/PID/environ`.
        let mut names = p.components();
        if names.next() != Some(Component::RootDir)
            || names.next() != Some(Component::Normal("proc".as_ref()))
        {
            return None;
        }
        names.skip(1).find_map(|c| match c {
            Component::Normal(entry) if PROC_SECRETS.iter().any(|s| entry == *s) => {
                Some(format!("/proc/*/{}", entry.to_string_lossy()))
            }
            _ => None,
        })
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
    fn a_process_environment_is_refused_at_any_depth_and_a_hard_link_asks() {
        let p = PathPolicy::default();
        for path in [
            "/proc/thread-self/environ",
            "/proc/self/task/1/environ",
            "/proc/42/task/43/environ",
            "/proc/self/cmdline",
            "/proc/thread-self/cmdline",
        ] {
            let e = p.check_read(path, true).expect_err(path);
            assert_eq!(e.class(), FailureClass::PermissionDenied, "{e}");
        }
        assert!(p.check_read("/proc/self/status", true).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let (one, two) = (dir.path().join("one"), dir.path().join("two"));
        std::fs::write(&one, "k").unwrap();
        assert_eq!(
            p.check_read(&one.to_string_lossy(), true).unwrap().secret,
            None
        );
        std::fs::hard_link(&one, &two).unwrap();
        let read = p.check_read(&two.to_string_lossy(), true).unwrap();
        assert!(
            read.secret.unwrap().contains("hard link"),
            "a hard link reads as a secret"
        );
        assert!(p.check_read("/proc/loadavg", true).is_ok());
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
    fn secret_places_are_named_for_reads_and_refused_for_writes() {
        let dir = tempfile::tempdir().unwrap();
        let base = resolve_local(dir.path()).unwrap();
        let home = base.join("home");
        let secrets = SecretPlaces::new(
            &Default::default(),
            Some(&home),
            &[home.join(".config/vigil")],
        );
        let p = PathPolicy {
            allowed_roots: Vec::new(),
            secrets: secrets.clone(),
            data_dir: None,
        };
        let s = |p: PathBuf| p.display().to_string();
        let key = s(home.join(".ssh/id_ed25519"));
        let own = s(home.join(".config/vigil/config.toml"));
        let env = s(base.join("app/.env"));
        for (path, entry) in [
            (&key, "~/.ssh"),
            (&own, own.trim_end_matches("/config.toml")),
            (&env, ".env"),
        ] {
            let r = p.check_read(path, true).unwrap();
            assert_eq!(r.secret.as_deref(), Some(entry), "{path}");
            let m = denied(p.check(path, true));
            assert!(m.contains("secret place"), "{m}");
        }
        // Through a symlink too.
        std::fs::create_dir_all(&home).unwrap();
        std::os::unix::fs::symlink(home.join(".netrc"), base.join("notes")).unwrap();
        let r = p.check_read(&s(base.join("notes")), true).unwrap();
        assert_eq!(r.secret.as_deref(), Some("~/.netrc"));
        assert_eq!(r.real, s(home.join(".netrc")));
        assert_eq!(
            p.check_read(&s(base.join("x.txt")), true).unwrap().secret,
            None
        );
        // An explicitly allowed root opens writes; a read still asks.
        let opened = PathPolicy {
            allowed_roots: vec![s(home.join(".ssh"))],
            secrets,
            data_dir: None,
        };
        assert!(opened.check(&key, true).is_ok());
        assert!(opened.check_read(&key, true).unwrap().secret.is_some());
        // System places stay refused for reads.
        assert!(p.check_read("/etc/hostname", true).is_err());
    }

    #[test]
    fn a_read_outside_the_readable_places_is_named_unless_vigil_or_the_operator_opened_it() {
        let outside = tempfile::tempdir_in("/var/tmp").unwrap();
        let data = outside.path().join("data");
        let spill = data.join("sessions/s1/spill");
        std::fs::create_dir_all(&spill).unwrap();
        let (note, spilled) = (outside.path().join("token.txt"), spill.join("out.txt"));
        std::fs::write(&note, "x").unwrap();
        std::fs::write(&spilled, "x").unwrap();
        let s = |p: &Path| p.display().to_string();
        let p = PathPolicy {
            data_dir: Some(data.clone()),
            ..PathPolicy::default()
        };
        // Not in the readable world of the working tree (this crate).
        assert!(p.check_read(&s(&note), true).unwrap().outside);
        // The tree itself, a system place and a spill file of vigil's are.
        assert!(!p.check_read("Cargo.toml", true).unwrap().outside);
        assert!(!p.check_read("/usr/bin/env", true).unwrap().outside);
        assert!(!p.check_read(&s(&spilled), true).unwrap().outside);
        // Elsewhere in vigil's data folder is not (its records).
        std::fs::write(data.join("sessions/s1/events.jsonl"), "x").unwrap();
        let record = s(&data.join("sessions/s1/events.jsonl"));
        assert!(p.check_read(&record, true).unwrap().outside);
        // An allowed root the operator named opens it; another target's
        // filesystem is not this machine's world.
        let opened = PathPolicy {
            allowed_roots: vec![s(outside.path())],
            ..PathPolicy::default()
        };
        assert!(!opened.check_read(&s(&note), true).unwrap().outside);
        assert!(!p.check_read(&s(&note), false).unwrap().outside);
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
