//! Keeping a command's output without holding it: the bytes stream to a
//! spill file as they arrive, memory keeps only a head window and a tail
//! ring (what the model's head+tail view needs) plus the counts a view and
//! its trailer name (bytes, chars of the lossy decoding, whether it was
//! valid UTF-8).
//!
//! A [`Capture`] is fed chunks by whoever reads the output (a child's pipe,
//! a file a tmux pane writes); [`Capture::finish`] gives the [`Captured`]
//! summary. This module never decides how much the model sees (callers pass
//! the window) and never loses the exact bytes silently: a spill file that
//! cannot be written is named in [`Captured::spill_error`].

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What a run keeps of its output when the caller does not want it all in
/// memory ([`super::RunRequest::retain`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Retain {
    /// Folder for the spill files (created when needed); `None`: the bytes
    /// beyond the windows are counted, not kept.
    pub spill_dir: Option<PathBuf>,
    /// File name labels for stdout and stderr (`run_shell-stdout`, …).
    pub labels: [String; 2],
    /// Bytes kept in memory at each end of each stream.
    pub window: usize,
    /// Most bytes of each stream kept at all (a trial's output: past it
    /// the rest is read and dropped, [`Captured::capped`]); `None`: all.
    pub cap: Option<u64>,
}

/// One stream's output as a capture left it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Captured {
    /// The first bytes (all of them when `total <= head.len()`).
    pub head: Vec<u8>,
    /// The last bytes (between one and two windows once the stream
    /// outgrew both); empty when the head holds everything.
    pub tail: Vec<u8>,
    /// Bytes the stream carried.
    pub total: u64,
    /// Chars of the stream's lossy UTF-8 decoding.
    pub chars: u64,
    /// True when some bytes were not valid UTF-8.
    pub lossy: bool,
    /// The file holding every byte, when the head could not.
    pub spill: Option<PathBuf>,
    /// Why the spill file is missing or incomplete.
    pub spill_error: Option<String>,
    /// The stream went past [`Retain::cap`]: only that much was kept.
    pub capped: bool,
}

impl Captured {
    /// Every byte of the stream, when the two windows hold all of it.
    pub fn whole(&self) -> Option<Vec<u8>> {
        if (self.head.len() + self.tail.len()) as u64 != self.total {
            return None;
        }
        let mut all = self.head.clone();
        all.extend_from_slice(&self.tail);
        Some(all)
    }

    /// A capture of bytes held in memory (no file, no limit).
    pub fn of(bytes: &[u8]) -> Captured {
        let mut c = Capture::new(bytes.len(), None);
        c.push(bytes);
        c.finish()
    }
}

/// Create a new private file in `dir` named `STAMP-LABEL-N.txt` (the spill
/// naming scheme: name order is age order).
pub fn create_spill(dir: &Path, label: &str) -> std::io::Result<(File, PathBuf)> {
    claim_spill(dir, label, |path| {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        opts.open(path)
    })
}

/// The first spill name in `dir` for which `claim` does not find an
/// existing file (`claim` must fail with `AlreadyExists` then).
fn claim_spill<T>(
    dir: &Path,
    label: &str,
    mut claim: impl FnMut(&Path) -> std::io::Result<T>,
) -> std::io::Result<(T, PathBuf)> {
    std::fs::create_dir_all(dir)?;
    let safe: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let stamp = unix_millis();
    let mut n = 0u32;
    loop {
        let path = dir.join(format!("{stamp}-{safe}-{n}.txt"));
        match claim(&path) {
            Ok(t) => return Ok((t, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Move `src` to a new spill file in `dir` (a hard link under a new name,
/// or a copy across filesystems); the result is private to the user.
///
/// Never a rename over a placeholder: ext4 flushes a file renamed over
/// another one (0.23 s for a fresh 169 MB output on this machine).
pub fn move_to_spill(src: &Path, dir: &Path, label: &str) -> Result<PathBuf, String> {
    if let Ok(((), path)) = claim_spill(dir, label, |path| std::fs::hard_link(src, path)) {
        let _ = std::fs::remove_file(src);
        return Ok(private(path));
    }
    let (file, path) = create_spill(dir, label)
        .map_err(|e| format!("could not create a spill file in {}: {e}", dir.display()))?;
    drop(file);
    if let Err(e) = std::fs::copy(src, &path) {
        let _ = std::fs::remove_file(&path);
        return Err(format!(
            "the full output could not be saved to {}: {e}",
            path.display()
        ));
    }
    Ok(private(path))
}

/// Keep the whole of `file` (an unnamed temporary file: it has no path)
/// as a spill file in `dir`: linked there when the file systems allow
/// (nothing is copied), else copied.
pub fn keep_in_spill(file: &File, dir: &Path, label: &str) -> Result<PathBuf, String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStrExt;
    let own = format!("/proc/self/fd/{}\0", file.as_raw_fd());
    let linked = claim_spill(dir, label, |path| {
        let to = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: two NUL-terminated paths; AT_SYMLINK_FOLLOW links the
        // file the descriptor's magic link names (allowed for O_TMPFILE).
        let rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                own.as_ptr().cast(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    });
    if let Ok(((), path)) = linked {
        return Ok(private(path));
    }
    let (mut dst, path) = create_spill(dir, label)
        .map_err(|e| format!("could not create a spill file in {}: {e}", dir.display()))?;
    let copied = File::open(own.trim_end_matches('\0'))
        .and_then(|mut src| std::io::copy(&mut src, &mut dst));
    if let Err(e) = copied {
        let _ = std::fs::remove_file(&path);
        return Err(format!(
            "the full output could not be saved to {}: {e}",
            path.display()
        ));
    }
    Ok(private(path))
}

/// Make `path` readable by its owner only.
fn private(path: PathBuf) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600));
    }
    path
}

/// Milliseconds since the epoch (spill names start with it).
fn unix_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Counts the chars of a stream's lossy UTF-8 decoding chunk by chunk,
/// exactly as [`String::from_utf8_lossy`] would over the whole stream.
#[derive(Debug, Default)]
pub struct LossyCount {
    /// An incomplete sequence held back from the previous chunk (≤ 3 bytes).
    pending: Vec<u8>,
    pub chars: u64,
    pub lossy: bool,
}

impl LossyCount {
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pending.is_empty() {
            self.scan(bytes);
        } else {
            let mut joined = std::mem::take(&mut self.pending);
            joined.extend_from_slice(bytes);
            self.scan(&joined);
        }
    }

    /// Scan `bytes`; an incomplete sequence at the end goes to `pending`.
    fn scan(&mut self, mut bytes: &[u8]) {
        loop {
            match std::str::from_utf8(bytes) {
                Ok(text) => {
                    self.chars += count_chars(text);
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // The prefix is valid by construction.
                    if let Ok(text) = std::str::from_utf8(&bytes[..valid]) {
                        self.chars += count_chars(text);
                    }
                    match e.error_len() {
                        Some(bad) => {
                            self.chars += 1;
                            self.lossy = true;
                            bytes = &bytes[valid + bad..];
                        }
                        None => {
                            self.pending = bytes[valid..].to_vec();
                            return;
                        }
                    }
                }
            }
        }
    }

    /// End of stream: an incomplete sequence becomes one U+FFFD.
    pub fn finish(&mut self) {
        if !self.pending.is_empty() {
            self.pending.clear();
            self.chars += 1;
            self.lossy = true;
        }
    }
}

/// Chars in valid UTF-8 (ASCII, the common case of a flood, is its length;
/// otherwise std's word-at-a-time count, several times faster than a
/// byte loop on a flood).
fn count_chars(text: &str) -> u64 {
    if text.is_ascii() {
        text.len() as u64
    } else {
        text.chars().count() as u64
    }
}

/// Takes one stream's bytes: head window, tail ring, counts, spill file.
pub struct Capture {
    window: usize,
    head: Vec<u8>,
    /// The last bytes; trimmed to `window` whenever it doubles.
    tail: Vec<u8>,
    total: u64,
    count: LossyCount,
    /// Where overflowing bytes go: a directory and a label, opened lazily.
    spill_to: Option<(PathBuf, String)>,
    file: Option<(File, PathBuf)>,
    spill_error: Option<String>,
    /// The bytes are already in a file someone else wrote (tmux mode).
    external: bool,
    /// That file, once the caller moved it to its final place.
    external_path: Option<PathBuf>,
}

impl Capture {
    /// A capture that opens a spill file in `spill_to` (dir, label) once the
    /// output outgrows the head window.
    pub fn new(window: usize, spill_to: Option<(PathBuf, String)>) -> Self {
        Capture {
            window,
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
            count: LossyCount::default(),
            spill_to,
            file: None,
            spill_error: None,
            external: false,
            external_path: None,
        }
    }

    /// A capture for bytes that are already stored in a file (it only keeps
    /// the windows and counts; the caller moves the file, see
    /// [`Capture::set_spill`]).
    pub fn windows_only(window: usize) -> Self {
        let mut c = Capture::new(window, None);
        c.external = true;
        c
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    /// Add the next bytes of the stream.
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        self.count.push(bytes);
        let room = self.window.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        if rest.is_empty() {
            return;
        }
        if !self.external && self.file.is_none() && self.spill_error.is_none() {
            self.open_spill();
        }
        self.write_spill(rest);
        self.tail.extend_from_slice(rest);
        if self.tail.len() > 2 * self.window.max(1) {
            let cut = self.tail.len() - self.window;
            self.tail.drain(..cut);
        }
    }

    fn open_spill(&mut self) {
        let Some((dir, label)) = &self.spill_to else {
            return;
        };
        match create_spill(dir, label) {
            Ok((mut f, path)) => match f.write_all(&self.head) {
                Ok(()) => self.file = Some((f, path)),
                Err(e) => self.fail(&path, &e),
            },
            Err(e) => {
                self.spill_error = Some(format!(
                    "could not create a spill file in {}: {e}",
                    dir.display()
                ));
            }
        }
    }

    fn write_spill(&mut self, bytes: &[u8]) {
        let Some((f, path)) = self.file.as_mut() else {
            return;
        };
        if let Err(e) = f.write_all(bytes) {
            let path = path.clone();
            self.fail(&path, &e);
        }
    }

    /// The spill file cannot take more: say so and stop writing (the file
    /// keeps what it got).
    fn fail(&mut self, path: &Path, e: &std::io::Error) {
        self.spill_error = Some(format!(
            "the full output could not be saved to {} after {} bytes: {e}",
            path.display(),
            self.total
        ));
        self.file = None;
    }

    /// Name the file that holds the bytes (tmux mode), or why it could not.
    pub fn set_spill(&mut self, spill: Result<PathBuf, String>) {
        match spill {
            Ok(p) => self.external_path = Some(p),
            Err(e) => self.spill_error = Some(e),
        }
    }

    /// The end of the stream.
    pub fn finish(mut self) -> Captured {
        self.count.finish();
        let spill = match self.file.take() {
            Some((_, path)) => Some(path),
            None => self.external_path.take(),
        };
        Captured {
            head: self.head,
            tail: self.tail,
            total: self.total,
            chars: self.count.chars,
            lossy: self.count.lossy,
            spill,
            spill_error: self.spill_error,
            capped: false,
        }
    }
}

/// Give freed memory back to the system after a big output (glibc keeps
/// freed heap otherwise, and a flood's peak would stay resident).
pub fn release_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::mixed;

    /// An unnamed file is kept whole: linked on the same file system,
    /// copied across (/dev/shm is another one here), private either way.
    #[test]
    fn an_unnamed_file_is_kept_whole_on_the_same_and_on_another_file_system() {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let src_dir = tempfile::tempdir().unwrap();
        let mut file = tempfile::tempfile_in(src_dir.path()).unwrap();
        let body: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        file.write_all(&body).unwrap();
        let same = tempfile::tempdir_in(src_dir.path()).unwrap();
        let other = tempfile::tempdir_in("/dev/shm").unwrap();
        for dir in [same.path(), other.path()] {
            let kept = keep_in_spill(&file, dir, "out").unwrap();
            assert_eq!(std::fs::read(&kept).unwrap(), body, "{}", kept.display());
            let mode = std::fs::metadata(&kept).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert_eq!(std::fs::read_dir(src_dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn chunked_counts_equal_the_whole_lossy_decoding() {
        for seed in 0..20 {
            let data = mixed(5_000, seed);
            let whole = String::from_utf8_lossy(&data);
            for chunk in [1, 2, 3, 5, 64, 4096] {
                let mut c = LossyCount::default();
                for part in data.chunks(chunk) {
                    c.push(part);
                }
                c.finish();
                assert_eq!(
                    c.chars,
                    whole.chars().count() as u64,
                    "seed {seed} chunk {chunk}"
                );
                assert_eq!(c.lossy, std::str::from_utf8(&data).is_err());
            }
        }
    }

    #[test]
    fn a_big_stream_keeps_two_windows_and_spills_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let data = mixed(200_000, 7);
        let mut c = Capture::new(1000, Some((dir.path().to_path_buf(), "x y".into())));
        for part in data.chunks(777) {
            c.push(part);
        }
        let done = c.finish();
        assert_eq!(done.head, data[..1000]);
        assert!(done.tail.len() >= 1000 && done.tail.len() <= 2000);
        assert!(data.ends_with(&done.tail));
        assert_eq!(done.total, data.len() as u64);
        let path = done.spill.clone().expect("spilled");
        assert!(
            path.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .contains("-x_y-0.txt")
        );
        assert_eq!(std::fs::read(&path).unwrap(), data, "exact bytes");
        assert!(done.whole().is_none());
    }

    #[test]
    fn a_small_stream_stays_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Capture::new(1000, Some((dir.path().to_path_buf(), "x".into())));
        c.push(b"hello\n");
        let done = c.finish();
        assert_eq!(done.whole().unwrap(), b"hello\n");
        assert!(done.spill.is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_full_disk_is_named_and_the_windows_survive() {
        // Not a directory: creating the spill file fails.
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, b"").unwrap();
        let mut c = Capture::new(10, Some((blocker.join("sub"), "x".into())));
        c.push(&[b'a'; 100]);
        let done = c.finish();
        assert!(done.spill.is_none());
        let err = done.spill_error.expect("error named");
        assert!(err.contains("could not create a spill file"), "{err}");
        assert_eq!(done.total, 100);
        assert_eq!(done.head.len(), 10);
    }
}
