//! The console's only file I/O: reading a call's spill files for the
//! full-output viewer and saving that output to a file. Requests are data;
//! [`perform`] runs on a blocking thread (`spawn_blocking`) and its result
//! comes back to the UI through the event loop, so no frame ever waits on
//! a disk.

use std::path::PathBuf;
use std::sync::Arc;

use crate::panes::viewer::{Content, ModelView, Section, build};

/// Spill files bigger than this are shown up to this size.
pub const MAX_READ: u64 = 256 * 1024 * 1024;

/// Work the App wants done off the UI task.
#[derive(Debug, Clone, PartialEq)]
pub enum IoRequest {
    /// Read these spill files (label, path, what the model saw) for a viewer.
    LoadOutput {
        call_id: String,
        files: Vec<(String, PathBuf, ModelView)>,
    },
    /// Write the viewer's text to a file.
    Save { path: PathBuf, text: Arc<str> },
}

/// What came back.
#[derive(Debug)]
pub enum IoResult {
    Loaded {
        call_id: String,
        result: Result<Content, String>,
    },
    Saved {
        path: PathBuf,
        result: Result<usize, String>,
    },
}

/// Do the work (blocking).
pub fn perform(req: IoRequest) -> IoResult {
    match req {
        IoRequest::LoadOutput { call_id, files } => {
            let mut sections = Vec::new();
            let mut failure = None;
            for (label, path, view) in files {
                match read_capped(&path) {
                    Ok((text, cut)) => {
                        let mut label = format!("{label} · {}", path.display());
                        if cut {
                            label.push_str(&format!(" · first {} MiB only", MAX_READ >> 20));
                        }
                        sections.push(Section { label, text, view });
                    }
                    Err(e) => failure = Some(format!("{}: {e}", path.display())),
                }
            }
            let result = match (sections.is_empty(), failure) {
                (true, Some(why)) => Err(why),
                _ => Ok(build(&sections)),
            };
            IoResult::Loaded { call_id, result }
        }
        IoRequest::Save { path, text } => {
            let result = write_new(&path, text.as_bytes())
                .map(|()| text.len())
                .map_err(|e| e.to_string());
            IoResult::Saved { path, result }
        }
    }
}

fn read_capped(path: &std::path::Path) -> std::io::Result<(String, bool)> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(len.min(MAX_READ) as usize);
    file.take(MAX_READ).read_to_end(&mut bytes)?;
    Ok((String::from_utf8_lossy(&bytes).into_owned(), len > MAX_READ))
}

/// Write a saved output readable by its owner only (outputs hold whatever
/// the commands printed, secrets included).
fn write_new(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    // An existing file keeps its mode on open: tighten it too.
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_spill_files_and_saves() {
        let dir = tempfile::tempdir().unwrap();
        let spill = dir.path().join("out.txt");
        std::fs::write(&spill, "a\nb\n").unwrap();
        let IoResult::Loaded { result, .. } = perform(IoRequest::LoadOutput {
            call_id: "c1".into(),
            files: vec![("stdout".into(), spill.clone(), ModelView::All)],
        }) else {
            panic!("wrong result")
        };
        let content = result.unwrap();
        assert_eq!(content.lines.len(), 3, "header and two lines");
        let target = dir.path().join("saved/out.txt");
        let IoResult::Saved { result, .. } = perform(IoRequest::Save {
            path: target.clone(),
            text: content.text.clone(),
        }) else {
            panic!("wrong result")
        };
        assert!(result.is_ok());
        assert!(std::fs::read_to_string(&target).unwrap().contains("a\nb"));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&target).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "saved outputs are private");
        assert_eq!(content.saved_text(), "a\nb\n", "no banner line");
        let IoResult::Loaded { result, .. } = perform(IoRequest::LoadOutput {
            call_id: "c1".into(),
            files: vec![("x".into(), dir.path().join("missing"), ModelView::All)],
        }) else {
            panic!("wrong result")
        };
        assert!(result.unwrap_err().contains("missing"));
    }
}
