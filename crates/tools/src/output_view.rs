//! The model's view of one command output stream built from what a
//! [`Capture`](vigil_exec::capture::Capture) kept (head window, tail ring,
//! counts, spill file) instead of the whole output: the same head+tail text
//! and trailer [`truncate::cut_with_spill_raw`] makes of every byte.
//!
//! It never reads the spill file back (a 1 GB output costs two windows of
//! memory here) and never hides a spill that failed: the error is returned
//! for the tool's result.

use std::path::{Path, PathBuf};

use super::truncate::{self, Cut, Keep};
use vigil_exec::capture::Captured;

/// Bytes a capture must keep at each end for a view of `limit` chars: four
/// bytes a char, plus room for the decoder to resynchronise.
pub fn window_for(limit: usize) -> usize {
    limit.saturating_mul(4).saturating_add(8)
}

/// One stream as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamView {
    pub cut: Cut,
    /// The file holding every byte, when the text was cut.
    pub spill: Option<PathBuf>,
    /// Some bytes were not valid UTF-8 (replaced with U+FFFD).
    pub lossy: bool,
    /// Why the full output could not be kept.
    pub spill_error: Option<String>,
}

/// Lossy text of `bytes` plus whether anything was replaced.
pub fn text_of(bytes: &[u8]) -> (String, bool) {
    match std::str::from_utf8(bytes) {
        Ok(s) => (s.to_string(), false),
        Err(_) => (String::from_utf8_lossy(bytes).into_owned(), true),
    }
}

/// The lossy decoding of the start of a longer stream: an incomplete
/// sequence at the very end is left out (the next bytes would complete it).
fn decode_head(bytes: &[u8]) -> String {
    let mut chunker = vigil_exec::store::Utf8Chunker::default();
    chunker.push(bytes)
}

/// The view of `c` for the model, cut to `limit` chars as `keep` says; a cut
/// names the spill file (written now from memory when the windows hold
/// every byte and no file exists yet).
pub fn view(
    c: &Captured,
    limit: usize,
    keep: Keep,
    spill_dir: Option<&Path>,
    label: &str,
) -> StreamView {
    let whole = c.whole();
    let cut = match &whole {
        Some(raw) => truncate::cut(&text_of(raw).0, limit, keep),
        None => {
            let head = decode_head(&c.head);
            let tail = String::from_utf8_lossy(&c.tail);
            let total = usize::try_from(c.chars).unwrap_or(usize::MAX);
            truncate::cut_ends(&head, &tail, total, limit, keep)
        }
    };
    let mut out = StreamView {
        cut,
        spill: None,
        lossy: c.lossy,
        spill_error: c.spill_error.clone(),
    };
    if !out.cut.truncated() {
        // Nothing was cut: a spill file made while the output streamed is
        // not needed.
        if let Some(p) = &c.spill {
            let _ = std::fs::remove_file(p);
        }
        return out;
    }
    let path = match (&c.spill, &whole, spill_dir) {
        (Some(p), _, _) => Some(p.clone()),
        (None, Some(raw), Some(dir)) if c.spill_error.is_none() => {
            match truncate::spill(dir, label, raw) {
                Ok(p) => return with_trailer(out, c, p, false),
                Err(e) => {
                    out.spill_error = Some(format!(
                        "the full output could not be saved in {}: {e}",
                        dir.display()
                    ));
                    None
                }
            }
        }
        _ => None,
    };
    match path {
        Some(p) => with_trailer(out, c, p, true),
        None => out,
    }
}

/// Name the spill file after the cut; `prune`: apply the folder's
/// retention (already done when [`truncate::spill`] wrote it).
fn with_trailer(mut out: StreamView, c: &Captured, path: PathBuf, prune: bool) -> StreamView {
    if prune {
        if let Some(dir) = path.parent() {
            truncate::prune(
                dir,
                &path,
                truncate::SPILL_MAX_FILES,
                truncate::SPILL_MAX_BYTES,
            );
        }
    }
    out.cut
        .text
        .push_str(&truncate::trailer(c.chars, c.total, c.lossy, &path));
    out.spill = Some(path);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use vigil_exec::capture::Capture;
    use vigil_exec::test_support::mixed;

    /// The view from windows equals the view today's code makes of every
    /// byte (text, trailer with the spill file's name and size, note),
    /// for every keep mode, valid and invalid UTF-8, chunked any way.
    #[test]
    fn the_windowed_view_is_the_old_whole_view() {
        for seed in 0..12 {
            let ascii: Vec<u8> = (0..30_000u32).map(|i| b'a' + (i % 26) as u8).collect();
            let data = if seed % 3 == 0 {
                ascii
            } else {
                mixed(30_000, seed)
            };
            for keep in [Keep::Head, Keep::Tail, Keep::HeadTail] {
                for limit in [0, 1, 7, 100, 1000] {
                    let dir = tempfile::tempdir().unwrap();
                    let mut c = Capture::new(
                        window_for(limit),
                        Some((dir.path().to_path_buf(), "run".into())),
                    );
                    for part in data.chunks(1 + seed as usize * 97) {
                        c.push(part);
                    }
                    let new = view(&c.finish(), limit, keep, Some(dir.path()), "run");
                    let path = new.spill.clone().expect("cut and spilled");
                    assert_eq!(std::fs::read(&path).unwrap(), data);
                    let old_dir = tempfile::tempdir().unwrap();
                    let (text, lossy) = text_of(&data);
                    let (old, old_path) = truncate::cut_with_spill_raw(
                        &text,
                        &data,
                        limit,
                        keep,
                        Some(old_dir.path()),
                        "run",
                    );
                    let old_path = old_path.unwrap();
                    let old_text = old
                        .text
                        .replace(&old_path.display().to_string(), &path.display().to_string());
                    assert_eq!(new.cut.text, old_text, "seed {seed} {keep:?} {limit}");
                    assert_eq!(new.cut.removed, old.removed);
                    assert_eq!(new.lossy, lossy);
                }
            }
        }
    }

    #[test]
    fn small_output_is_untouched_and_leaves_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let c = vigil_exec::capture::Captured::of(b"ok\n");
        let v = view(&c, 100, Keep::HeadTail, Some(dir.path()), "run");
        assert_eq!(v.cut.text, "ok\n");
        assert!(v.spill.is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
