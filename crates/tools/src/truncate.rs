//! Cutting tool output down to what the model may see, always at character
//! boundaries, and keeping the full text in a spill file when anything is cut.
//!
//! Limits count Unicode scalar values (chars), as the seeds' tables do. A
//! spill file holds the exact bytes the tool produced, even when they are not
//! UTF-8 and the model saw a lossy decoding. This module never decides
//! limits: callers pass them.

use std::path::{Path, PathBuf};

/// Which part of an over-long text the model keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Keep {
    /// The beginning; `...[truncated]` is appended.
    Head,
    /// The end; `[truncated N chars from start]` is prepended.
    Tail,
    /// The beginning and the end with a marker in between.
    HeadTail,
}

use vigil_protocol::tool::ModelSaw;

/// What a cut to `limit` chars keeping `keep` leaves the model.
pub fn model_saw(limit: usize, keep: Keep) -> ModelSaw {
    match keep {
        Keep::Head => ModelSaw::Head { chars: limit },
        Keep::Tail => ModelSaw::HeadTail {
            head: 0,
            tail: limit,
        },
        Keep::HeadTail => ModelSaw::HeadTail {
            head: limit / 2,
            tail: limit - limit / 2,
        },
    }
}

/// The outcome of cutting one text.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    pub text: String,
    /// Number of chars removed (0: untouched).
    pub removed: usize,
}

impl Cut {
    pub fn truncated(&self) -> bool {
        self.removed > 0
    }
}

/// Byte offset of the `n`th char of `s` (or `s.len()` when shorter).
fn byte_at_char(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map(|(i, _)| i).unwrap_or(s.len())
}

/// Cut `s` to at most `limit` chars of content, keeping the part `keep` says.
/// The marker added on a cut is not counted in `limit`.
pub fn cut(s: &str, limit: usize, keep: Keep) -> Cut {
    let total = s.chars().count();
    if total <= limit {
        return Cut {
            text: s.to_string(),
            removed: 0,
        };
    }
    cut_ends(s, s, total, limit, keep)
}

/// The cut of a text longer than `limit` chars known only by its start
/// `head` and its end `tail` (each holding at least the chars the cut keeps)
/// and its length in chars: the same text [`cut`] makes of the whole.
pub fn cut_ends(head: &str, tail: &str, total: usize, limit: usize, keep: Keep) -> Cut {
    let removed = total.saturating_sub(limit);
    let text = match keep {
        Keep::Head => format!("{}...[truncated]", first_chars(head, limit)),
        Keep::Tail => format!(
            "[truncated {removed} chars from start]{}",
            last_chars(tail, limit)
        ),
        Keep::HeadTail => {
            let h = limit / 2;
            format!(
                "{}\n...[truncated {removed} chars]...\n{}",
                first_chars(head, h),
                last_chars(tail, limit - h)
            )
        }
    };
    Cut { text, removed }
}

/// The first `n` chars of `s` (all of it when shorter).
fn first_chars(s: &str, n: usize) -> &str {
    &s[..byte_at_char(s, n)]
}

/// The last `n` chars of `s` (all of it when shorter).
fn last_chars(s: &str, n: usize) -> &str {
    if n == 0 {
        return "";
    }
    let start = s
        .char_indices()
        .rev()
        .nth(n - 1)
        .map(|(i, _)| i)
        .unwrap_or(0);
    &s[start..]
}

/// Write `full` to a new file in `dir` named after `label` and return its path.
/// The file is readable by the user only.
pub fn spill(dir: &Path, label: &str, full: &[u8]) -> std::io::Result<PathBuf> {
    use std::io::Write;
    let (mut f, path) = vigil_exec::capture::create_spill(dir, label)?;
    f.write_all(full)?;
    prune(dir, &path, SPILL_MAX_FILES, SPILL_MAX_BYTES);
    Ok(path)
}

/// Retention: a spill directory keeps at most this many files...
pub const SPILL_MAX_FILES: usize = 1000;
/// ...and at most this many bytes; the oldest files go first.
pub const SPILL_MAX_BYTES: u64 = 512 * 1024 * 1024;

/// Delete the oldest spill files in `dir` until at most `max_files` files and
/// `max_bytes` bytes remain; `keep` (the newest) is never deleted. Spill names
/// start with a fixed-width millisecond stamp, so name order is age order.
pub fn prune(dir: &Path, keep: &Path, max_files: usize, max_bytes: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut files: Vec<(PathBuf, u64)> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| (e.path(), e.metadata().map(|m| m.len()).unwrap_or(0)))
        .collect();
    files.sort();
    let mut count = files.len();
    let mut bytes: u64 = files.iter().map(|(_, n)| n).sum();
    for (path, len) in files {
        if count <= max_files && bytes <= max_bytes {
            break;
        }
        if path == keep {
            continue;
        }
        if std::fs::remove_file(&path).is_ok() {
            count -= 1;
            bytes = bytes.saturating_sub(len);
        }
    }
}

/// Cut `s` for the model and, when anything was cut and a spill directory is
/// given, keep the full text and name the file in the trailer.
pub fn cut_with_spill(
    s: &str,
    limit: usize,
    keep: Keep,
    spill_dir: Option<&Path>,
    label: &str,
) -> (Cut, Option<PathBuf>) {
    cut_with_spill_raw(s, s.as_bytes(), limit, keep, spill_dir, label)
}

/// Like [`cut_with_spill`] for text decoded from `raw` (lossily when `raw`
/// is not valid UTF-8): the model gets `text` cut, the spill file gets the
/// exact `raw` bytes, so "full output" is what the command produced.
pub fn cut_with_spill_raw(
    text: &str,
    raw: &[u8],
    limit: usize,
    keep: Keep,
    spill_dir: Option<&Path>,
    label: &str,
) -> (Cut, Option<PathBuf>) {
    let mut c = cut(text, limit, keep);
    if !c.truncated() {
        return (c, None);
    }
    let Some(dir) = spill_dir else {
        return (c, None);
    };
    match spill(dir, label, raw) {
        Ok(path) => {
            let chars = text.chars().count() as u64;
            let lossy = raw != text.as_bytes();
            c.text
                .push_str(&trailer(chars, raw.len() as u64, lossy, &path));
            (c, Some(path))
        }
        Err(e) => {
            tracing::warn!("could not write spill file: {e}");
            (c, None)
        }
    }
}

/// The line naming the spill file after a cut: its size in chars, or in
/// bytes when the output was not valid UTF-8 (`lossy`).
pub fn trailer(chars: u64, bytes: u64, lossy: bool, path: &Path) -> String {
    let size = if lossy {
        format!("{bytes} bytes, raw, not valid UTF-8")
    } else {
        format!("{chars} chars")
    };
    format!("\n[full output ({size}) saved to {}]", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_untouched() {
        let c = cut("hello", 5, Keep::Head);
        assert_eq!(c.text, "hello");
        assert!(!c.truncated());
    }

    #[test]
    fn head_cut_appends_marker() {
        let c = cut("abcdefgh", 3, Keep::Head);
        assert_eq!(c.text, "abc...[truncated]");
        assert_eq!(c.removed, 5);
    }

    #[test]
    fn tail_cut_names_removed_count() {
        let c = cut("abcdefgh", 3, Keep::Tail);
        assert_eq!(c.text, "[truncated 5 chars from start]fgh");
    }

    #[test]
    fn head_tail_keeps_both_ends() {
        let c = cut("0123456789", 4, Keep::HeadTail);
        assert_eq!(c.text, "01\n...[truncated 6 chars]...\n89");
    }

    #[test]
    fn cuts_respect_multibyte_boundaries() {
        let s = "é".repeat(10) + &"日本".repeat(10) + "🦀🦀🦀";
        for limit in 0..s.chars().count() {
            for keep in [Keep::Head, Keep::Tail, Keep::HeadTail] {
                let c = cut(&s, limit, keep);
                assert_eq!(c.removed, s.chars().count() - limit);
                // Content chars kept equals the limit.
                let kept: usize = match keep {
                    Keep::Head => c.text.trim_end_matches("...[truncated]").chars().count(),
                    Keep::Tail => c
                        .text
                        .split(']')
                        .skip(1)
                        .collect::<Vec<_>>()
                        .join("]")
                        .chars()
                        .count(),
                    Keep::HeadTail => {
                        let parts: Vec<&str> = c.text.split("\n...[truncated").collect();
                        let tail = parts[1].split("]...\n").nth(1).unwrap();
                        parts[0].chars().count() + tail.chars().count()
                    }
                };
                assert_eq!(kept, limit, "{keep:?} {limit}");
            }
        }
    }

    #[test]
    fn retention_drops_the_oldest_spill_files_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut paths = Vec::new();
        for i in 0..5 {
            let p = dir.path().join(format!("{:013}-x-0.txt", 1_000 + i));
            std::fs::write(&p, vec![b'a'; 10]).unwrap();
            paths.push(p);
        }
        prune(dir.path(), &paths[4], 3, u64::MAX);
        let left: Vec<bool> = paths.iter().map(|p| p.exists()).collect();
        assert_eq!(left, [false, false, true, true, true]);
        prune(dir.path(), &paths[4], 100, 15);
        let left: Vec<bool> = paths.iter().map(|p| p.exists()).collect();
        assert_eq!(
            left,
            [false, false, false, false, true],
            "byte cap keeps the newest"
        );
    }

    #[test]
    fn spill_keeps_full_text_and_names_file() {
        let dir = tempfile::tempdir().unwrap();
        let s = "x".repeat(100);
        let (c, path) = cut_with_spill(&s, 10, Keep::Head, Some(dir.path()), "run_shell stdout");
        let path = path.expect("spilled");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), s);
        assert!(c.text.contains(&path.display().to_string()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn spill_keeps_raw_bytes_when_the_model_sees_lossy_text() {
        let dir = tempfile::tempdir().unwrap();
        let raw: Vec<u8> = b"ok \xff\xfe\x00 bad "
            .iter()
            .copied()
            .cycle()
            .take(300)
            .collect();
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (c, path) = cut_with_spill_raw(&text, &raw, 10, Keep::Head, Some(dir.path()), "x");
        let path = path.expect("spilled");
        assert_eq!(std::fs::read(&path).unwrap(), raw, "exact bytes");
        assert!(c.text.starts_with("ok \u{fffd}\u{fffd}"), "{}", c.text);
        assert!(
            c.text.contains("300 bytes, raw, not valid UTF-8"),
            "{}",
            c.text
        );
    }
}
