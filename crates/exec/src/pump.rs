//! Pipes that empty themselves into files: a plain run's stdout and stderr
//! stay pipes (so a writer the command leaves behind meets a closed pipe
//! when vigil stops reading, exactly as before), and a blocking thread moves
//! what arrives into the run's output file with `splice(2)`, inside the
//! kernel: no byte is copied through vigil's memory on the way to disk.
//!
//! It must never block a runtime worker (each pump is a low-priority
//! thread of its own, [`super::bulk`]), never keep the read end open after [`Pumps::stop`], and never
//! lose a byte that reached the pipe before the stop (it is drained first).

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::bulk::{self, Bulk};

/// The most one `splice` moves (the pipe holds 64 KiB unless enlarged).
const SPLICE_MAX: usize = 1 << 20;
/// How long the thread waits for data before it looks at the stop flag.
const POLL_MS: i32 = 20;

/// One pipe's pump.
struct Pump {
    stop: Arc<AtomicBool>,
    eof: Arc<AtomicBool>,
    /// Set once the cap was reached and bytes were dropped.
    capped: Arc<AtomicBool>,
    thread: Bulk<std::io::Result<u64>>,
}

/// The pumps of a run's two streams.
pub struct Pumps {
    each: Vec<Pump>,
}

/// One pipe per file: the write ends go to the child, the read ends are
/// pumped into the files (each written at its current offset); past `cap`
/// bytes a stream's further bytes are read and dropped ([`Pumps::capped`]).
pub fn pipes_into<const N: usize>(
    files: [File; N],
    cap: Option<u64>,
) -> std::io::Result<([Stdio; N], Pumps)> {
    let mut each = Vec::with_capacity(N);
    let mut writers = Vec::with_capacity(N);
    for file in files {
        let (read, write) = pipe()?;
        writers.push(Stdio::from(write));
        each.push(Pump::start(read, file, cap)?);
    }
    let writers = writers
        .try_into()
        .map_err(|_| std::io::Error::other("a pipe per file"))?;
    Ok((writers, Pumps { each }))
}

impl Pump {
    fn start(read: OwnedFd, file: File, cap: Option<u64>) -> std::io::Result<Pump> {
        let stop = Arc::new(AtomicBool::new(false));
        let eof = Arc::new(AtomicBool::new(false));
        let capped = Arc::new(AtomicBool::new(false));
        let (s, e, c) = (stop.clone(), eof.clone(), capped.clone());
        let thread = bulk::spawn("vigil-pump", move || {
            let moved = pump(&read, file, &s, Cap { at: cap, hit: &c });
            if matches!(moved, Ok(Some(_))) {
                e.store(true, Ordering::Release);
            }
            // Dropping `read` here closes the pipe: a writer still holding
            // the other end gets EPIPE/SIGPIPE, as with vigil's old pipes.
            moved.map(|m| m.unwrap_or_default())
        })?;
        Ok(Pump {
            stop,
            eof,
            capped,
            thread,
        })
    }
}

impl Pumps {
    /// For each stream, whether its cap was reached and bytes dropped.
    pub fn capped(&self) -> Vec<bool> {
        self.each
            .iter()
            .map(|p| p.capped.load(Ordering::Acquire))
            .collect()
    }

    /// True when every writer closed its end (the command and anything it
    /// left behind are done writing).
    pub fn all_closed(&self) -> bool {
        self.each.iter().all(|p| p.eof.load(Ordering::Acquire))
    }

    /// Wait until every writer closed its end, for at most `grace`.
    pub async fn settle(&self, grace: Duration) {
        let start = Instant::now();
        while !self.all_closed() && start.elapsed() < grace {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Move what is still in the pipes, then close them. Returns the bytes
    /// each pump moved, or the first error.
    pub async fn stop(self) -> std::io::Result<Vec<u64>> {
        for p in &self.each {
            p.stop.store(true, Ordering::Release);
        }
        let mut moved = Vec::new();
        for p in self.each {
            let n = p.thread.join().await.map_err(std::io::Error::other)??;
            moved.push(n);
        }
        Ok(moved)
    }
}

/// A pipe: (read end, non-blocking, close-on-exec; write end, blocking).
fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both are open descriptors we now own.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: plain fcntl on a descriptor we own.
    let flags = unsafe { libc::fcntl(read.as_raw_fd(), libc::F_GETFL) };
    // SAFETY: as above; only O_NONBLOCK is added.
    if flags < 0
        || unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0
    {
        return Err(std::io::Error::last_os_error());
    }
    Ok((read, write))
}

/// Most bytes a pump writes, and the flag it sets past them.
struct Cap<'a> {
    at: Option<u64>,
    hit: &'a AtomicBool,
}

/// Move everything from `read` into `file` until every writer closed the
/// pipe (`Some(bytes)`) or `stop` was set and the pipe is empty (`None`);
/// past the cap, bytes are read and dropped.
fn pump(
    read: &OwnedFd,
    mut file: File,
    stop: &AtomicBool,
    cap: Cap<'_>,
) -> std::io::Result<Option<u64>> {
    let mut total = 0u64;
    let mut spliced = true;
    let mut buf = Vec::new();
    loop {
        let room = cap
            .at
            .map_or(SPLICE_MAX as u64, |c| c.saturating_sub(total));
        let got = if room == 0 {
            let dropped = drop_some(read, &mut buf);
            if matches!(dropped, Ok(n) if n > 0) {
                cap.hit.store(true, Ordering::Release);
            }
            match dropped {
                Ok(0) => return Ok(Some(total)),
                Ok(_) => continue,
                other => other,
            }
        } else if spliced {
            match splice(read, &file, room.min(SPLICE_MAX as u64) as usize) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    // The file system takes no splice: copy instead.
                    spliced = false;
                    continue;
                }
                other => other,
            }
        } else {
            copy(read, &mut file, &mut buf, room.min(64 * 1024) as usize)
        };
        match got {
            Ok(0) => return Ok(Some(total)),
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if stop.load(Ordering::Acquire) {
                    return Ok(None);
                }
                wait_readable(read);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

fn splice(read: &OwnedFd, file: &File, len: usize) -> std::io::Result<usize> {
    // SAFETY: both descriptors are open for the call; null offsets mean
    // "the pipe" and "the file's own offset".
    let n = unsafe {
        libc::splice(
            read.as_raw_fd(),
            std::ptr::null_mut(),
            file.as_raw_fd(),
            std::ptr::null_mut(),
            len,
            libc::SPLICE_F_MOVE | libc::SPLICE_F_NONBLOCK,
        )
    };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Read what is in the pipe into `buf` and forget it (past the cap).
fn drop_some(read: &OwnedFd, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    buf.resize(64 * 1024, 0);
    // SAFETY: as in `copy`.
    let mut pipe = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(read.as_raw_fd()) });
    pipe.read(buf)
}

/// The fallback: read at most `len` bytes into `buf`, write them out.
fn copy(read: &OwnedFd, file: &mut File, buf: &mut Vec<u8>, len: usize) -> std::io::Result<usize> {
    buf.resize(len.max(1), 0);
    // SAFETY: `read` stays open while the borrowed File lives; ManuallyDrop
    // keeps it from being closed twice.
    let mut pipe = std::mem::ManuallyDrop::new(unsafe { File::from_raw_fd(read.as_raw_fd()) });
    let n = pipe.read(buf)?;
    file.write_all(&buf[..n])?;
    Ok(n)
}

/// Sleep until `read` has data or its writers are gone, or [`POLL_MS`].
fn wait_readable(read: &OwnedFd) {
    let mut fd = libc::pollfd {
        fd: read.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    unsafe { libc::poll(&mut fd, 1, POLL_MS) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bytes_reach_the_file_and_a_writer_left_behind_meets_a_closed_pipe() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let file = File::create(&path).unwrap();
        let ([w], pumps) = pipes_into([file], None).unwrap();
        // The child writes 2.6 MB and leaves a writer behind that starts
        // writing once the pumps were stopped.
        let go = dir.path().join("go");
        let script = format!(
            "seq 1 400000; (while [ ! -e {go} ]; do sleep 0.02; done; \
             while :; do echo more || exit 7; done) &",
            go = go.display()
        );
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(script)
            .stdout(w)
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id().unwrap() as i32;
        assert!(child.wait().await.unwrap().success());
        pumps.settle(Duration::from_millis(100)).await;
        assert!(!pumps.all_closed(), "the background writer holds the pipe");
        pumps.stop().await.unwrap();
        std::fs::write(&go, "").unwrap();
        let want: String = (1..=400_000).map(|i| format!("{i}\n")).collect();
        // The writer wakes into a closed pipe and ends (SIGPIPE or EPIPE).
        let start = Instant::now();
        // SAFETY: signal 0 only checks that our own group still exists.
        while unsafe { libc::kill(-pgid, 0) } == 0 {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the writer never stopped"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let got = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            got, want,
            "the file holds exactly what came before the stop"
        );
    }
}
