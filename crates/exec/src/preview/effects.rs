//! Reading a command's effects from an overlay's upper layer.
//!
//! After the run, every path the command changed under a writable root is
//! in that root's upper directory: a regular file there is created (not in
//! the lower, real directory) or modified (in it); a character device 0:0
//! is a whiteout (deleted); a directory with the `overlay.opaque` xattr
//! replaced the real one. Text files get a unified diff against the real
//! file (capped), anything else size and SHA-256.
//!
//! It only reads (the upper layer and the real files); it never writes and
//! never follows a symlink out of the layer.

use std::fs::Metadata;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;
use std::time::Duration;

use sha2::{Digest, Sha256};
use similar::TextDiff;

use vigil_protocol::preview::{Blob, EffectKind, FileEffect};

/// Largest file diffed as text (each side).
pub const DIFF_MAX_FILE: u64 = 2 * 1024 * 1024;
/// Largest diff kept per file.
pub const DIFF_MAX_BYTES: usize = 64 * 1024;
/// Largest file hashed.
const HASH_MAX: u64 = 256 * 1024 * 1024;
/// How long one diff may take before it falls back to a coarser one.
const DIFF_TIMEOUT: Duration = Duration::from_millis(30);

/// Caps on what the walk collects, and how diffs name files.
#[derive(Debug, Clone, Copy)]
pub struct Caps<'a> {
    /// Most effects listed (the rest are counted).
    pub max_effects: usize,
    /// Total diff bytes over all files.
    pub max_diff_total: usize,
    /// Diff headers name files relative to this directory (the command's
    /// working directory) when they are under it.
    pub relative_to: &'a Path,
}

impl Default for Caps<'_> {
    fn default() -> Self {
        Caps {
            max_effects: 2000,
            max_diff_total: 512 * 1024,
            relative_to: Path::new("/"),
        }
    }
}

/// One writable root: where it is on the machine, its upper layer and a
/// path that still reaches the real (lower) directory.
pub struct Layer<'a> {
    pub real: &'a Path,
    pub upper: &'a Path,
    pub lower: &'a Path,
}

/// What the walk found: effects in path order and how many were left out.
#[derive(Debug, Default)]
pub struct Found {
    pub effects: Vec<FileEffect>,
    pub cut: usize,
    diff_total: usize,
}

/// Walk each layer's upper directory (see the module doc).
pub fn collect(layers: &[Layer<'_>], caps: Caps<'_>) -> Found {
    let mut found = Found::default();
    for layer in layers {
        walk(layer, Path::new(""), caps, &mut found);
    }
    drop_parents(&mut found.effects);
    found
}

/// Leave out a created directory when something inside it is listed (the
/// file says it; `A objects/52/` above `A objects/52/6e2c…` is noise).
fn drop_parents(effects: &mut Vec<FileEffect>) {
    let keep: Vec<bool> = effects
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let parent = e.dir && e.kind == EffectKind::Created;
            let holds_next = effects
                .get(i + 1)
                .is_some_and(|next| next.path.starts_with(&e.path));
            !(parent && holds_next)
        })
        .collect();
    let mut flags = keep.into_iter();
    effects.retain(|_| flags.next().unwrap_or(true));
}

fn walk(layer: &Layer<'_>, rel: &Path, caps: Caps<'_>, found: &mut Found) {
    let Ok(dir) = std::fs::read_dir(layer.upper.join(rel)) else {
        return;
    };
    let mut names: Vec<_> = dir.filter_map(Result::ok).map(|e| e.file_name()).collect();
    names.sort();
    for name in names {
        let rel = rel.join(name);
        let Ok(meta) = std::fs::symlink_metadata(layer.upper.join(&rel)) else {
            continue;
        };
        let lower = std::fs::symlink_metadata(layer.lower.join(&rel)).ok();
        if let Some(effect) = judge(layer, &rel, &meta, lower.as_ref(), caps, found) {
            if found.effects.len() < caps.max_effects {
                found.effects.push(effect);
            } else {
                found.cut += 1;
            }
        }
        if meta.is_dir() {
            walk(layer, &rel, caps, found);
        }
    }
}

fn effect(layer: &Layer<'_>, rel: &Path, kind: EffectKind) -> FileEffect {
    FileEffect {
        path: layer.real.join(rel),
        kind,
        dir: false,
        diff: None,
        diff_cut: false,
        old: None,
        new: None,
        note: None,
    }
}

/// The effect one upper entry stands for, if any.
fn judge(
    layer: &Layer<'_>,
    rel: &Path,
    meta: &Metadata,
    lower: Option<&Metadata>,
    caps: Caps<'_>,
    found: &mut Found,
) -> Option<FileEffect> {
    let ft = meta.file_type();
    if ft.is_char_device() && meta.rdev() == 0 {
        return Some(deleted(layer, rel, lower?));
    }
    if ft.is_dir() {
        return dir_effect(layer, rel, lower);
    }
    let kind = if lower.is_some() {
        EffectKind::Modified
    } else {
        EffectKind::Created
    };
    let mut e = effect(layer, rel, kind);
    if ft.is_symlink() {
        let target = std::fs::read_link(layer.upper.join(rel)).unwrap_or_default();
        e.note = Some(format!("symlink → {}", target.display()));
    } else if ft.is_file() {
        file_content(layer, rel, lower, caps, found, &mut e);
        // The view copies the file up and so breaks the link; a real run
        // changes every name, some perhaps outside the writable folders.
        if let Some(n) = lower
            .filter(|m| m.is_file() && m.nlink() > 1)
            .map(|m| m.nlink())
        {
            let link = format!(
                "a hard link: a real run changes all {n} names of this file, the others not shown"
            );
            e.note = Some(match e.note.take() {
                Some(note) => format!("{note}; {link}"),
                None => link,
            });
        }
    } else {
        e.note = Some("special file".into());
    }
    Some(e)
}

fn deleted(layer: &Layer<'_>, rel: &Path, lower: &Metadata) -> FileEffect {
    let mut e = effect(layer, rel, EffectKind::Deleted);
    if lower.is_dir() {
        e.dir = true;
        e.note = Some(format!(
            "held {}",
            count_files(&layer.lower.join(rel), 100_000)
        ));
    } else if lower.is_file() {
        e.old = blob(&layer.lower.join(rel), lower.len());
    }
    e
}

fn dir_effect(layer: &Layer<'_>, rel: &Path, lower: Option<&Metadata>) -> Option<FileEffect> {
    let upper = std::fs::symlink_metadata(layer.upper.join(rel)).ok();
    let mut e = match lower {
        None => effect(layer, rel, EffectKind::Created),
        Some(m) if m.is_dir() && is_opaque(&layer.upper.join(rel)) => {
            let mut e = effect(layer, rel, EffectKind::Replaced);
            e.note = Some(format!(
                "it held {}",
                count_files(&layer.lower.join(rel), 100_000)
            ));
            e
        }
        Some(m) if !m.is_dir() => effect(layer, rel, EffectKind::Modified),
        // Copied up for a change inside it, or its own mode or owner
        // changed (a hooks folder opened to everyone is an effect).
        Some(m) => {
            let now = upper?;
            let (was, is) = (m.mode() & 0o7777, now.mode() & 0o7777);
            let mut notes = Vec::new();
            if was != is {
                notes.push(format!("mode {was:o} → {is:o}"));
            }
            if (m.uid(), m.gid()) != (now.uid(), now.gid()) {
                notes.push(format!(
                    "owner {}:{} → {}:{}",
                    m.uid(),
                    m.gid(),
                    now.uid(),
                    now.gid()
                ));
            }
            if notes.is_empty() {
                return None;
            }
            let mut e = effect(layer, rel, EffectKind::Modified);
            e.note = Some(notes.join(", "));
            e
        }
    };
    e.dir = true;
    Some(e)
}

/// Whether overlay marked the directory opaque (it replaced the lower one).
fn is_opaque(path: &Path) -> bool {
    ["trusted.overlay.opaque", "user.overlay.opaque"]
        .iter()
        .any(|name| xattr(path, name).is_some_and(|v| v == b"y"))
}

fn xattr(path: &Path, name: &str) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let n = std::ffi::CString::new(name).ok()?;
    let mut buf = [0u8; 16];
    // SAFETY: both strings are NUL-terminated; the kernel writes at most
    // `buf.len()` bytes into `buf`.
    let len =
        unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    usize::try_from(len).ok().map(|l| buf[..l].to_vec())
}

/// "3 files", counting at most `max`.
fn count_files(dir: &Path, max: usize) -> String {
    let mut n = 0usize;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => stack.push(entry.path()),
                _ => n += 1,
            }
            if n >= max {
                return format!("{max}+ files");
            }
        }
    }
    if n == 1 {
        "1 file".into()
    } else {
        format!("{n} files")
    }
}

fn blob(path: &Path, size: u64) -> Option<Blob> {
    if size > HASH_MAX {
        return Some(Blob {
            size,
            sha256: String::new(),
        });
    }
    let bytes = std::fs::read(path).ok()?;
    Some(Blob {
        size,
        sha256: hex(&Sha256::digest(&bytes)),
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn file_content(
    layer: &Layer<'_>,
    rel: &Path,
    lower: Option<&Metadata>,
    caps: Caps<'_>,
    found: &mut Found,
    e: &mut FileEffect,
) {
    let upper_path = layer.upper.join(rel);
    let lower_path = layer.lower.join(rel);
    let new_len = std::fs::metadata(&upper_path).map(|m| m.len()).unwrap_or(0);
    let old_len = lower.filter(|m| m.is_file()).map(Metadata::len);
    e.new = blob(&upper_path, new_len);
    e.old = old_len.and_then(|l| blob(&lower_path, l));
    if e.old.is_some() && e.old == e.new {
        e.note = Some("content unchanged: mode, owner or times only".into());
        return;
    }
    if new_len > DIFF_MAX_FILE || old_len.unwrap_or(0) > DIFF_MAX_FILE {
        e.note = Some("too large to diff".into());
        return;
    }
    let new = std::fs::read(&upper_path).unwrap_or_default();
    let old = match old_len {
        Some(_) => std::fs::read(&lower_path).unwrap_or_default(),
        None => Vec::new(),
    };
    if new.is_empty() && old.is_empty() {
        e.note = Some("empty".into());
        return;
    }
    let (Some(new), Some(old)) = (as_text(&new), as_text(&old)) else {
        e.note = Some("binary".into());
        return;
    };
    if found.diff_total >= caps.max_diff_total {
        e.note = Some("diff left out: the report's diff budget is spent".into());
        return;
    }
    let real = layer.real.join(rel);
    let name = real
        .strip_prefix(caps.relative_to)
        .unwrap_or(&real)
        .display()
        .to_string();
    let (text, cut) = unified(old, new, &name, old_len.is_some());
    found.diff_total += text.len();
    e.diff = Some(text);
    e.diff_cut = cut;
}

/// Text when it has no NUL in its first 8 KiB and is UTF-8.
fn as_text(bytes: &[u8]) -> Option<&str> {
    if bytes.iter().take(8192).any(|&b| b == 0) {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

/// A unified diff with `a/`/`b/` headers, cut at [`DIFF_MAX_BYTES`] on a
/// line boundary; also whether it was cut.
pub fn unified(old: &str, new: &str, name: &str, existed: bool) -> (String, bool) {
    let diff = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new);
    let from = if existed {
        format!("a/{name}")
    } else {
        "/dev/null".into()
    };
    let mut text = format!("--- {from}\n+++ b/{name}\n");
    let mut udiff = diff.unified_diff();
    udiff.context_radius(3);
    // Hunk by hunk, stopping at the cap: a file whose every line changed
    // is not laid out whole only to be cut.
    for hunk in udiff.iter_hunks() {
        text.push_str(&hunk.to_string());
        if text.len() > DIFF_MAX_BYTES {
            return cut_at_line(text, DIFF_MAX_BYTES);
        }
    }
    (text, false)
}

fn cut_at_line(mut text: String, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
    text.truncate(end);
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_file_diffs_against_dev_null_and_long_diffs_are_cut() {
        let (d, cut) = unified("", "hello\n", "x", false);
        assert!(d.starts_with("--- /dev/null\n+++ b/x\n"), "{d}");
        assert!(d.contains("+hello"));
        assert!(!cut);
        let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let (d, cut) = unified("", &big, "x", false);
        assert!(cut);
        assert!(d.len() <= DIFF_MAX_BYTES && d.ends_with('\n'));
    }

    #[test]
    fn binary_is_told_by_nul_or_bad_utf8() {
        assert!(as_text(b"plain\n").is_some());
        assert!(as_text(b"a\0b").is_none());
        assert!(as_text(&[0xff, 0xfe]).is_none());
    }
}
