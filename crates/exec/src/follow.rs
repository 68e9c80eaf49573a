//! Output files for a plain run: the child's stdout and stderr are pipes
//! that the kernel empties into two private temporary files
//! ([`super::pump`]), so a flood is never copied through vigil on its way to
//! disk; this module follows
//! what was appended (bounded per tick) into the run's windows, counts and
//! live view, and at the end moves a file that outgrew the head window to
//! the spill folder, as tmux mode does with its pane's files.
//!
//! It must never read a whole output file into memory, never leave a
//! temporary file behind (the files have no name from the start: they go
//! with their last descriptor, also when vigil is killed), and never report
//! a spill file that does not hold every byte: a copy that fails is named
//! in the capture's spill error.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::bulk::{self, Bulk};
use super::capture::{Capture, Retain, keep_in_spill};
use super::pump::{Pumps, pipes_into};
use super::store::{Store, Utf8Chunker};
use super::{ExecError, OutputFn, OutputStream};

/// Bytes read from a file at a time: one pipe's worth, as the pipes were
/// read, so a chunk fits the live view's budget for an interval
/// (`vigil_tools::live`, a crate above this one) and a flood is shown in slices, not skipped.
const READ_CHUNK: usize = 64 * 1024;
/// How often the files are looked at when they had nothing new.
const TICK: Duration = Duration::from_millis(10);
/// At most this many bytes of one stream are taken per tick while the
/// command runs, so one tick never holds a worker for long (a few ms) yet
/// keeps up with a flood (1.6 GB/s at one tick per 10 ms): a reader that
/// fell behind would do the rest after the command ended, adding to its
/// wall time.
pub const TICK_MAX: usize = 16 * 1024 * 1024;

/// One stream's file (unnamed) and how far it was read.
struct Followed {
    file: File,
    read: u64,
    chunker: Utf8Chunker,
}

/// The two output files of one run and the captures they feed.
pub struct FileOutputs {
    streams: [Followed; 2],
    pub stores: [Store; 2],
    on_output: Option<OutputFn>,
    buf: Vec<u8>,
    /// Most bytes kept of each stream ([`Retain::cap`]).
    cap: Option<u64>,
}

impl FileOutputs {
    /// Create the two temporary files (unnamed, in the system temporary
    /// folder; the spill folder is only written at the end, so a full spill
    /// folder never fails the command itself).
    pub fn create(retain: &Retain, on_output: Option<OutputFn>) -> std::io::Result<Self> {
        Self::create_in(&std::env::temp_dir(), retain, on_output)
    }

    fn create_in(
        dir: &std::path::Path,
        retain: &Retain,
        on_output: Option<OutputFn>,
    ) -> std::io::Result<Self> {
        let one = || -> std::io::Result<Followed> {
            Ok(Followed {
                file: tempfile::tempfile_in(dir)?,
                read: 0,
                chunker: Utf8Chunker::default(),
            })
        };
        let streams = [one()?, one()?];
        let stores = [0, 1].map(|_| Store::Capture(Box::new(Capture::windows_only(retain.window))));
        Ok(FileOutputs {
            streams,
            stores,
            on_output,
            buf: vec![0u8; READ_CHUNK],
            cap: retain.cap,
        })
    }

    /// The child's stdout and stderr: pipes pumped into the two files.
    pub fn stdio(&self) -> std::io::Result<([Stdio; 2], Pumps)> {
        let [o, e] = &self.streams;
        pipes_into([o.file.try_clone()?, e.file.try_clone()?], self.cap)
    }

    /// Take what was appended to each file, at most `max` bytes per stream;
    /// returns true when a stream had more than that waiting.
    pub fn pull(&mut self, max: usize) -> bool {
        let mut more = false;
        for i in 0..2 {
            more |= self.pull_one(i, max);
        }
        more
    }

    fn pull_one(&mut self, i: usize, max: usize) -> bool {
        let mut taken = 0;
        while taken < max {
            let stream = &mut self.streams[i];
            let n = match stream.file.read_at(&mut self.buf, stream.read) {
                Ok(0) | Err(_) => return false,
                Ok(n) => n,
            };
            stream.read += n as u64;
            taken += n;
            let bytes = &self.buf[..n];
            self.stores[i].push(bytes);
            if let Some(f) = &self.on_output {
                let text = self.streams[i].chunker.push(bytes);
                if !text.is_empty() {
                    f(which(i), &text);
                }
            }
        }
        true
    }

    /// Take everything still in the files and end the decoders.
    fn drain(&mut self) {
        while self.pull(TICK_MAX) {}
        for i in 0..2 {
            if let Some(f) = &self.on_output {
                let rest = self.streams[i].chunker.finish();
                if !rest.is_empty() {
                    f(which(i), &rest);
                }
            }
        }
    }

    /// Keep a file that outgrew the head window in the spill folder (the
    /// others just close). Returns the stores.
    pub async fn finish(self, retain: &Retain) -> [Store; 2] {
        let [o, e] = self.streams;
        let mut stores = self.stores;
        for (store, (stream, label)) in stores
            .iter_mut()
            .zip([o, e].into_iter().zip(&retain.labels))
        {
            place(store, stream.file, retain, label).await;
        }
        stores
    }
}

/// Follows a run's files on a low-priority thread of its own
/// ([`super::bulk`]), so reading and counting a flood never holds a runtime
/// worker (which also drives the timers and the terminal input the console
/// waits for) nor outranks them for a CPU. Dropping it (the run was
/// abandoned: a trial whose card was answered first, a process that exits)
/// stops the thread without reading the rest: the files close with it (or
/// with the process).
pub struct Follower {
    stop: Arc<AtomicBool>,
    /// Set on drop: the thread stops without reading the rest.
    abandoned: Arc<AtomicBool>,
    thread: Option<Bulk<FileOutputs>>,
}

impl Follower {
    pub fn start(mut files: FileOutputs) -> std::io::Result<Follower> {
        let stop = Arc::new(AtomicBool::new(false));
        let abandoned = Arc::new(AtomicBool::new(false));
        let (flag, gone) = (stop.clone(), abandoned.clone());
        let thread = bulk::spawn("vigil-follow", move || {
            while !flag.load(Ordering::Acquire) {
                if !files.pull(TICK_MAX) {
                    std::thread::sleep(TICK);
                }
            }
            if !gone.load(Ordering::Acquire) {
                files.drain();
            }
            files
        })?;
        Ok(Follower {
            stop,
            abandoned,
            thread: Some(thread),
        })
    }

    /// The run is over: take the rest of the files and hand them back.
    pub async fn stop(mut self) -> Result<FileOutputs, ExecError> {
        self.stop.store(true, Ordering::Release);
        let Some(thread) = self.thread.take() else {
            return Err(ExecError::Failed(
                "the output follower was stopped twice".into(),
            ));
        };
        thread
            .join()
            .await
            .map_err(|e| ExecError::Failed(format!("following the command's output failed: {e}")))
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.abandoned.store(true, Ordering::Release);
        self.stop.store(true, Ordering::Release);
    }
}

/// Keep `file` in the spill folder when its stream outgrew the head window
/// (the temporary file closes either way).
async fn place(store: &mut Store, file: File, retain: &Retain, label: &str) {
    let Store::Capture(c) = store else {
        return;
    };
    let Some(dir) = retain.spill_dir.clone() else {
        return;
    };
    if c.total() <= retain.window as u64 {
        return;
    }
    let label = label.to_string();
    let moved = tokio::task::spawn_blocking(move || keep_in_spill(&file, &dir, &label))
        .await
        .unwrap_or_else(|e| Err(format!("keeping the output file failed: {e}")));
    c.set_spill(moved);
}

/// The stream of index `i` (0: stdout, 1: stderr).
pub(crate) fn which(i: usize) -> OutputStream {
    if i == 0 {
        OutputStream::Stdout
    } else {
        OutputStream::Stderr
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use super::*;
    use crate::process::run_retaining;

    /// The output files never have a name: nothing is left in the
    /// temporary folder whatever ends the run (a process killed mid-run
    /// once left its files there), and what is written is still followed.
    #[test]
    fn the_output_files_have_no_name_and_are_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let r = retain(Path::new("/nonexistent"));
        let mut files = FileOutputs::create_in(tmp.path(), &r, None).unwrap();
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
        use std::io::Write;
        files.streams[0].file.write_all(b"hello\n").unwrap();
        files.pull(TICK_MAX);
        let Store::Capture(c) = &files.stores[0] else {
            panic!("a capture");
        };
        assert_eq!(c.total(), 6);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    use crate::test_support::sh;

    fn retain(dir: &Path) -> Retain {
        Retain {
            spill_dir: Some(dir.to_path_buf()),
            labels: ["out".into(), "err".into()],
            window: 1000,
            cap: None,
        }
    }

    fn seq(n: u32) -> Vec<u8> {
        (1..=n)
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .into_bytes()
    }

    #[tokio::test]
    async fn a_flood_is_followed_spilled_exactly_and_streamed() {
        let dir = tempfile::tempdir().unwrap();
        let live: Arc<Mutex<[String; 2]>> = Arc::default();
        let l = live.clone();
        let f: OutputFn = Arc::new(move |s, t: &str| {
            l.lock().unwrap()[usize::from(s == OutputStream::Stderr)].push_str(t);
        });
        let out = run_retaining(
            sh("seq 1 300000; printf 'e\\303\\251' >&2"),
            None,
            None,
            Some(f),
            Some(&retain(dir.path())),
        )
        .await
        .unwrap();
        let want = seq(300_000);
        let [o, e] = *out.captured.expect("captured");
        assert_eq!(o.total, want.len() as u64);
        assert_eq!(o.head, want[..1000]);
        assert!(want.ends_with(&o.tail) && o.tail.len() >= 1000);
        assert_eq!(o.chars, want.len() as u64);
        let spill = o.spill.expect("spilled");
        assert_eq!(std::fs::read(&spill).unwrap(), want, "exact bytes");
        assert!(
            spill
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .contains("-out-")
        );
        assert_eq!(e.whole().unwrap(), "eé".as_bytes());
        assert!(e.spill.is_none(), "a small stream is not spilled");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let live = live.lock().unwrap();
        assert_eq!(live[0].as_bytes(), want, "every byte reached the callback");
        assert_eq!(live[1], "eé");
    }

    #[tokio::test]
    async fn a_timeout_keeps_what_the_files_hold() {
        let dir = tempfile::tempdir().unwrap();
        let err = run_retaining(
            sh("seq 1 100000; sleep 100"),
            None,
            Some(Duration::from_millis(700)),
            None,
            Some(&retain(dir.path())),
        )
        .await
        .unwrap_err();
        let ExecError::Timeout { partial, .. } = err else {
            panic!("expected a timeout, got {err:?}");
        };
        let [o, _] = *partial.captured.expect("captured");
        let spill = o.spill.expect("spilled");
        assert_eq!(std::fs::read(spill).unwrap(), seq(100_000));
    }

    #[tokio::test]
    async fn stdin_and_background_writers_behave_as_with_pipes() {
        let dir = tempfile::tempdir().unwrap();
        let out = run_retaining(
            sh("cat; (sleep 0.05; echo later) &"),
            Some(b"hello\n".to_vec()),
            None,
            None,
            Some(&retain(dir.path())),
        )
        .await
        .unwrap();
        assert_eq!(out.exit_code, Some(0));
        let [o, _] = *out.captured.expect("captured");
        assert_eq!(o.whole().unwrap(), b"hello\nlater\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_writer_left_behind_cannot_grow_the_spill_file() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "seq 1 100000; (sh -c 'echo $$ > {p}; sleep 0.6; exec yes') &",
            p = pidfile.display()
        );
        let out = run_retaining(sh(&script), None, None, None, Some(&retain(dir.path())))
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(0));
        let [o, _] = *out.captured.expect("captured");
        let spill = o.spill.expect("spilled");
        let size = std::fs::metadata(&spill).unwrap().len();
        assert_eq!(size, seq(100_000).len() as u64);
        // `yes` starts after the run ended: its first write meets a closed
        // pipe and it dies, where a file would have grown without end.
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let start = std::time::Instant::now();
        // SAFETY: signal 0 only asks whether the process (ours) still exists.
        while unsafe { libc::kill(pid, 0) } == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "yes kept running"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(std::fs::metadata(&spill).unwrap().len(), size);
    }
}
