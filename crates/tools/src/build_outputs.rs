//! Builds and tests inside their outputs, for `approval = "by_effect"`: a
//! trial whose only effects are files made or changed beneath folders the
//! repository's git ignores and named as outputs are (`target/`, `build/`,
//! `__pycache__/`, `node_modules/.cache/`; not `node_modules/` or `.venv/`,
//! whose code the operator's tools run later) names those folders, its
//! write-set; when the command is a known build of the tree's sources
//! ([`super::build_command`]), the call
//! then runs for real in the kernel sandbox allowed to write beneath
//! exactly them (and a private `TMPDIR`), unasked.
//!
//! Why a second run in the sandbox rather than copying the view's layer
//! out: the view's layer is a size-limited tmpfs that goes with the view,
//! a build's outputs are large and time-stamped (copying them would make
//! the next build's freshness checks read the copy's times), and a real
//! run confined to the write-set cannot do anything the trial was not seen
//! to do (no network, no write elsewhere, no secret place), so what the
//! model is told is what really happened.
//!
//! It only reads: the report, the real tree's folders, and `git
//! check-ignore` (run with hooks and fsmonitor off). It never decides
//! alone: anything it cannot read for sure (a list cut short, a symlink, a
//! deletion of an output folder itself, `.git/`, a folder that is not a
//! real folder) makes the call asked.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use vigil_protocol::preview::{EffectKind, FileEffect, PreviewReport};

/// The write-set of a trial, when every effect lies inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct WriteSet {
    /// Output folders (absolute, top-most first), each ignored by git.
    pub dirs: Vec<PathBuf>,
    /// Those of them the real tree does not have yet: made (empty) just
    /// before the run.
    pub missing: Vec<PathBuf>,
}

impl WriteSet {
    /// The folders as the operator reads them (`target/, build/`),
    /// relative to `tree`.
    pub fn names(&self, tree: &Path) -> String {
        let names: Vec<String> = self
            .dirs
            .iter()
            .map(|d| format!("{}/", d.strip_prefix(tree).unwrap_or(d).display()))
            .collect();
        names.join(", ")
    }

    #[cfg(test)]
    fn make_missing(&self) -> Result<(), String> {
        make_missing(&self.missing)
    }
}

impl super::OutputsRun {
    /// Make the output folders the real tree lacks, just before the run
    /// (their parents were plain folders when the set was read).
    pub(super) fn make_missing(&self) -> Result<(), String> {
        make_missing(&self.missing)
    }
}

fn make_missing(missing: &[PathBuf]) -> Result<(), String> {
    for d in missing {
        match std::fs::create_dir(d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && real_dir(d) => {}
            Err(e) => return Err(format!("cannot make {}: {e}", d.display())),
        }
    }
    Ok(())
}

/// The write-set of `report` (a trial in the working tree `tree`), or why
/// there is none. `Err` is a reason for the card, never a failure.
pub(super) fn write_set(report: &PreviewReport, tree: &Path) -> Result<WriteSet, String> {
    only_file_effects(report)?;
    let mut rels = Vec::new();
    for e in &report.files {
        rels.push(effect_rel(e, tree)?);
    }
    let ignored = check_ignore(tree, &candidates(&report.files, &rels))?;
    let mut dirs = BTreeSet::new();
    for (e, rel) in report.files.iter().zip(&rels) {
        let dir = output_dir(e, rel, &ignored).ok_or_else(|| {
            format!(
                "changes {}, which git does not ignore here",
                tree.join(rel).display()
            )
        })?;
        dirs.insert(dir);
    }
    let top: Vec<PathBuf> = dirs
        .iter()
        .filter(|d| !dirs.iter().any(|o| o != *d && d.starts_with(o)))
        .cloned()
        .collect();
    let mut set = WriteSet {
        dirs: Vec::new(),
        missing: Vec::new(),
    };
    for rel in top {
        let at = tree.join(&rel);
        if std::fs::symlink_metadata(&at).is_ok() {
            if !real_dir(&at) {
                return Err(format!("{} is not a plain folder", at.display()));
            }
        } else {
            let parent = at.parent().unwrap_or(tree);
            if !real_dir(parent) {
                return Err(format!(
                    "{} would need folders made that git does not ignore",
                    at.display()
                ));
            }
            set.missing.push(at.clone());
        }
        set.dirs.push(at);
    }
    Ok(set)
}

/// Only changed files, and a complete list of them. Writes the view
/// refused outside its writable places (cargo's lock in `~/.cargo`) and
/// reads outside the readable world (`/sys/fs/cgroup`) are no reason to
/// ask: the real run is confined the same way (the same readable world,
/// writes only beneath the write-set), so it meets the same refusals. A
/// secret place, the network, a process left behind or a bound of the
/// view is.
fn only_file_effects(r: &PreviewReport) -> Result<(), String> {
    let clean = r.files_cut == 0
        && r.secrets.is_empty()
        && r.bound_hit.is_none()
        && r.leftovers.is_empty()
        && !r.hit_time_limit
        && !r.hit_size_limit
        && !r.hit_task_limit
        && r.refused
            .iter()
            .all(|c| vigil_protocol::preview::is_lookup(&c.address));
    match (clean, r.files.is_empty()) {
        (true, false) => Ok(()),
        (true, true) => Err("no file changed".into()),
        (false, _) => Err("it does more than change files".into()),
    }
}

/// The effect's path relative to `tree`, when it is one a build may make.
fn effect_rel(e: &FileEffect, tree: &Path) -> Result<PathBuf, String> {
    let shown = e.path.display();
    let rel = e
        .path
        .strip_prefix(tree)
        .map_err(|_| format!("changes {shown}, outside the working tree"))?;
    let plain = rel.components().all(|c| match c {
        Component::Normal(n) => n != ".git",
        _ => false,
    });
    if !plain || rel.as_os_str().is_empty() {
        return Err(format!("changes {shown}"));
    }
    let odd = e.note.as_deref().is_some_and(|n| {
        n.starts_with("symlink") || n.contains("hard link") || n == "special file"
    });
    if odd {
        return Err(format!(
            "changes {shown} ({})",
            e.note.as_deref().unwrap_or("")
        ));
    }
    Ok(rel.to_path_buf())
}

/// Every folder above each path (`a/`, `a/b/`), and each path itself.
fn candidates(files: &[FileEffect], rels: &[PathBuf]) -> Vec<String> {
    let mut out = BTreeSet::new();
    for (e, rel) in files.iter().zip(rels) {
        let mut at = PathBuf::new();
        let parts: Vec<_> = rel.components().collect();
        for (i, c) in parts.iter().enumerate() {
            at.push(c);
            let last = i + 1 == parts.len();
            let name = at.to_string_lossy().into_owned();
            out.insert(if last && !e.dir {
                name
            } else {
                format!("{name}/")
            });
        }
    }
    out.into_iter().collect()
}

/// Names of folders that hold what a build or a test makes: caches and
/// outputs the next build makes again, never code another program loads
/// from there. An allow-list: an ignored folder of another name
/// (`node_modules/`, `.venv/`, `.direnv/`, `vendor/`, `.vscode/`, `.idea/`)
/// holds what the operator's tools run or read later, and writing there is
/// asked.
pub(super) const OUTPUT_NAMES: &[&str] = &[
    "target",
    "build",
    "_build",
    "dist",
    "out",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "htmlcov",
    "coverage",
    ".nyc_output",
    ".gradle",
    ".parcel-cache",
    ".turbo",
    "zig-cache",
    ".zig-cache",
    "zig-out",
];

/// Ignored folders of dependencies whose `.cache/` alone is a build's
/// (babel, eslint, webpack write `node_modules/.cache/`).
const CACHE_HOLDERS: &[&str] = &["node_modules"];

/// The top-most ignored folder holding the effect: a folder above it, or
/// the effect itself when it is a folder made new, named as outputs are
/// ([`OUTPUT_NAMES`]; `node_modules/.cache/`). A deletion or replacement
/// of the folder itself is no output's change, and a file git tracks is
/// never an output (git does not call it ignored, wherever it is).
fn output_dir(e: &FileEffect, rel: &Path, ignored: &BTreeSet<String>) -> Option<PathBuf> {
    if !e.dir && !ignored.contains(&*rel.to_string_lossy()) {
        return None;
    }
    let parts: Vec<_> = rel.components().collect();
    let mut at = PathBuf::new();
    for (i, c) in parts.iter().enumerate() {
        at.push(c);
        let last = i + 1 == parts.len();
        if last && !(e.dir && e.kind == EffectKind::Created) {
            return None;
        }
        if ignored.contains(&format!("{}/", at.to_string_lossy())) {
            let name = c.as_os_str().to_str().unwrap_or("");
            if OUTPUT_NAMES.contains(&name) {
                return Some(at);
            }
            let cache = parts.get(i + 1).is_some_and(|n| n.as_os_str() == ".cache");
            // `.cache` itself is the effect: only when made new.
            let beneath = i + 2 < parts.len() || (e.dir && e.kind == EffectKind::Created);
            if CACHE_HOLDERS.contains(&name) && cache && beneath {
                at.push(".cache");
                return Some(at);
            }
            return None;
        }
    }
    None
}

/// Which of `paths` (relative to `tree`) git ignores there: one `git
/// check-ignore`, its config's programs off (fsmonitor, hooks).
fn check_ignore(tree: &Path, paths: &[String]) -> Result<BTreeSet<String>, String> {
    let mut child = Command::new("git")
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "--no-optional-locks",
            "check-ignore",
            "--stdin",
            "-z",
        ])
        .current_dir(tree)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("git check-ignore could not run: {e}"))?;
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p.as_bytes());
        input.push(0);
    }
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| format!("git check-ignore failed: {e}"))?;
    let _ = writer.join();
    // 0: some ignored; 1: none; anything else: not a repository, an error.
    match out.status.code() {
        Some(0) | Some(1) => Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()),
        _ => Err("git could not say what it ignores here (not a repository?)".into()),
    }
}

/// A folder that is itself a folder, reached without a symlink.
fn real_dir(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()) && p.canonicalize().is_ok_and(|c| c == p)
}

#[cfg(test)]
#[path = "build_outputs_tests.rs"]
mod tests;
