//! Threads for bulk output work (pumping a flood into its file, following
//! the file): each runs on a thread of its own at a lower CPU priority than
//! the rest of vigil, so on a busy machine the console's keys and frames
//! are scheduled before the bytes of a flood.
//!
//! It never raises a priority (only lowers its own thread's) and never
//! lends a lowered thread to other work: the thread ends with its job.

use tokio::sync::oneshot;

/// How much nicer than vigil a bulk thread is (CFS gives a nice-10 thread
/// about a tenth of a nice-0 one's share when both want the CPU).
const NICER: i32 = 10;

/// A running bulk job.
pub struct Bulk<T>(oneshot::Receiver<std::thread::Result<T>>);

/// Run `job` on a new low-priority thread named `name`.
pub fn spawn<T: Send + 'static>(
    name: &str,
    job: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<Bulk<T>> {
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            lower_own_priority();
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            let _ = tx.send(done);
        })?;
    Ok(Bulk(rx))
}

impl<T> Bulk<T> {
    /// Wait for the job's result.
    pub async fn join(self) -> Result<T, String> {
        match self.0.await {
            Ok(Ok(t)) => Ok(t),
            Ok(Err(_)) => Err("a bulk output thread panicked".into()),
            Err(_) => Err("a bulk output thread vanished".into()),
        }
    }
}

/// Make the calling thread nicer by [`NICER`] (best effort: a failure
/// leaves it at vigil's own priority).
fn lower_own_priority() {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) } as libc::id_t;
    // SAFETY: getpriority/setpriority on our own thread id; on Linux
    // PRIO_PROCESS with a thread id applies to that thread only.
    unsafe {
        *libc::__errno_location() = 0;
        let now = libc::getpriority(libc::PRIO_PROCESS, tid);
        if *libc::__errno_location() == 0 {
            libc::setpriority(libc::PRIO_PROCESS, tid, (now + NICER).min(19));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        // SAFETY: as in lower_own_priority.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::getpriority(libc::PRIO_PROCESS, tid)
        }
    }

    #[tokio::test]
    async fn a_bulk_job_runs_nicer_than_its_caller_and_returns_its_result() {
        let mine = own_nice();
        let theirs = spawn("t", own_nice).unwrap().join().await.unwrap();
        assert_eq!(theirs, (mine + NICER).min(19));
        assert_eq!(own_nice(), mine, "the caller's priority is untouched");
        let err = spawn("p", || -> u8 { panic!("boom") })
            .unwrap()
            .join()
            .await;
        assert!(err.unwrap_err().contains("panicked"));
    }
}
