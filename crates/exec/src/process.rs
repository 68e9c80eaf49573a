//! Running one child process: own process group, live output, timeout, and
//! killing the whole group on timeout or when the caller drops the future.
//!
//! The [`tokio::process::Command`] comes from a transport; this module only
//! starts it, feeds stdin, forwards output chunks (always valid UTF-8) as they
//! arrive, and collects the raw bytes: from the pipes, or, when the run keeps
//! a spill folder, from the files the pipes are pumped into
//! ([`super::follow`]). It must never leave a timed-out or
//! cancelled command running, and never kill anything after a normal exit.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use super::capture::Retain;
use super::follow::{FileOutputs, Follower};
use super::pump::Pumps;
pub use super::store::{Store, Utf8Chunker};
use super::{ExecError, OutputFn, OutputStream, RunOutcome};

/// How long to keep reading after the process exited, in case a background
/// child it left behind still holds the pipes open.
const DRAIN_GRACE: Duration = Duration::from_millis(250);

/// How a run that is given up on (timed out, or its future dropped) ends.
#[derive(Clone, Copy)]
enum Ending {
    /// Its process group is killed.
    Group,
    /// Its process group is killed, also when the leader exits by itself
    /// (see [`run_contained`]).
    Contained,
    /// The leader is asked to stop and given this long to end what it
    /// started ([`super::stopping`]); only then is it killed.
    Asked(Duration),
}

/// Ends a run that was given up on when dropped (see [`Ending`]), unless
/// disarmed after the leader was reaped.
struct GroupGuard {
    pgid: Option<i32>,
    ending: Ending,
}

impl GroupGuard {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        match (self.ending, self.pgid) {
            (Ending::Asked(grace), Some(pid)) => super::stopping::stop_detached(pid as u32, grace),
            _ => self.kill(),
        }
    }
}

/// SIGKILL every member of process group `pgid`.
fn kill_group(pgid: i32) {
    if pgid <= 1 {
        return;
    }
    // SAFETY: kill(2) has no memory-safety preconditions; a negative pid
    // addresses the process group.
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
}

/// Build an outcome from the two stores (`captured` is set when they were
/// captures).
pub fn outcome(exit_code: Option<i32>, stores: [Store; 2], notes: Vec<String>) -> RunOutcome {
    let [o, e] = stores;
    let ((stdout, co), (stderr, ce)) = (o.finish(), e.finish());
    let captured = match (co, ce) {
        (Some(a), Some(b)) => Some(Box::new([a, b])),
        _ => None,
    };
    RunOutcome {
        exit_code,
        stdout,
        stderr,
        dispatched: None,
        notes,
        captured,
    }
}

/// Read size from the pipes: big enough that a flood costs few wake-ups.
const CHUNK: usize = 64 * 1024;

/// Read `reader` to EOF into `store`, forwarding decoded chunks to `on_output`.
async fn pump<R: AsyncRead + Unpin>(
    mut reader: R,
    which: OutputStream,
    buf: &mut Store,
    on_output: Option<&OutputFn>,
) {
    let mut chunker = Utf8Chunker::default();
    let mut chunk = vec![0u8; CHUNK];
    loop {
        match reader.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.push(&chunk[..n]);
                if let Some(f) = on_output {
                    let text = chunker.push(&chunk[..n]);
                    if !text.is_empty() {
                        f(which, &text);
                    }
                }
            }
        }
    }
    if let Some(f) = on_output {
        let rest = chunker.finish();
        if !rest.is_empty() {
            f(which, &rest);
        }
    }
}

/// Feed the child's stdin, then close it. A child that exits without reading
/// is not an error.
async fn feed(stdin: Option<tokio::process::ChildStdin>, input: Option<Vec<u8>>) {
    if let (Some(mut stdin), Some(input)) = (stdin, input) {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    }
}

/// Wait for exit while reading both pipes; returns the exit code.
async fn drive(
    child: &mut Child,
    input: Option<Vec<u8>>,
    stores: &mut [Store; 2],
    on_output: Option<&OutputFn>,
    contain: bool,
) -> Result<Option<i32>, ExecError> {
    let [stdout, stderr] = stores;
    let out_pipe = child.stdout.take();
    let err_pipe = child.stderr.take();
    let in_pipe = child.stdin.take();
    let io = async {
        let read_out = async {
            if let Some(p) = out_pipe {
                pump(p, OutputStream::Stdout, stdout, on_output).await;
            }
        };
        let read_err = async {
            if let Some(p) = err_pipe {
                pump(p, OutputStream::Stderr, stderr, on_output).await;
            }
        };
        tokio::join!(feed(in_pipe, input), read_out, read_err);
    };
    tokio::pin!(io);
    let status = tokio::select! {
        _ = &mut io => exited(child, contain).await,
        status = exited(child, contain) => {
            // Pick up what is still buffered; a background child that keeps
            // the pipes open must not hold the call hostage.
            let _ = tokio::time::timeout(DRAIN_GRACE, &mut io).await;
            status
        }
    };
    let status = status.map_err(|e| ExecError::Failed(format!("waiting for the command: {e}")))?;
    Ok(status.code())
}

/// Run `cmd` to completion in its own process group.
///
/// `input`: bytes written to stdin before it is closed (`None`: stdin is
/// `/dev/null`). `timeout`: kill the group and return
/// [`ExecError::Timeout`] with the partial output. Dropping the returned
/// future kills the group too.
pub async fn run(
    cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
) -> Result<RunOutcome, ExecError> {
    run_retaining(cmd, input, timeout, on_output, None).await
}

/// [`run`], keeping only what `retain` asks for in memory (the rest of the
/// output streams to spill files as it arrives; see [`RunOutcome::captured`]).
///
/// With a spill folder the child's pipes are emptied into files by the
/// kernel and the files are followed ([`FileOutputs`]); otherwise (and when
/// the files cannot be created) vigil reads the pipes itself.
pub async fn run_retaining(
    cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
    retain: Option<&Retain>,
) -> Result<RunOutcome, ExecError> {
    run_with(cmd, input, timeout, on_output, retain, Ending::Group).await
}

/// [`run_retaining`] for a command that cleans up after itself (the sandbox
/// helper's preview mode): given up on, it is asked to stop (SIGTERM) and
/// killed only if it has not ended within `grace`; its group is never
/// killed. Dropping the future asks it too, and an exiting vigil waits for
/// it ([`super::stopping::settle`]).
pub async fn run_asked(
    cmd: Command,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
    retain: Option<&Retain>,
    grace: Duration,
) -> Result<RunOutcome, ExecError> {
    let ending = Ending::Asked(grace);
    run_with(cmd, None, timeout, on_output, retain, ending).await
}

/// [`run_retaining`] for a command whose whole process group is the call
/// (the sandbox: nothing in it may start a group of its own): when the
/// leader exits, whatever is left of its group is killed before the leader
/// is reaped (its zombie keeps the group's number from being reused), so a
/// process that outlived a killed helper ends with the call.
pub async fn run_contained(
    cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
    retain: Option<&Retain>,
) -> Result<RunOutcome, ExecError> {
    run_with(cmd, input, timeout, on_output, retain, Ending::Contained).await
}

/// The leader's exit status; with `contain`, its group is killed first
/// (see [`run_contained`]).
async fn exited(child: &mut Child, contain: bool) -> std::io::Result<std::process::ExitStatus> {
    if contain && let Some(pid) = child.id() {
        exit_unreaped(pid).await;
        kill_group(pid as i32);
    }
    child.wait().await
}

/// Wait until `pid` (our child) has exited, without reaping it.
async fn exit_unreaped(pid: u32) {
    let Some(fd) = super::stopping::pidfd(pid) else {
        return;
    };
    // SAFETY: `fd` is an open descriptor the AsyncFd owns until it drops.
    let watch = unsafe {
        tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
    };
    if let Ok(watch) = watch {
        let _ = watch.readable().await;
    }
}

async fn run_with(
    mut cmd: Command,
    input: Option<Vec<u8>>,
    timeout: Option<Duration>,
    on_output: Option<OutputFn>,
    retain: Option<&Retain>,
    ending: Ending,
) -> Result<RunOutcome, ExecError> {
    let contain = matches!(ending, Ending::Contained);
    let program = cmd.as_std().get_program().to_string_lossy().into_owned();
    let mut files = retain
        .filter(|r| r.spill_dir.is_some())
        .and_then(|r| FileOutputs::create(r, on_output.clone()).ok());
    let (out, err, pumps) = match files.as_ref().map(FileOutputs::stdio) {
        Some(Ok(([out, err], pumps))) => (out, err, Some(pumps)),
        _ => {
            files = None;
            (Stdio::piped(), Stdio::piped(), None)
        }
    };
    let follower = match files {
        Some(f) => Some(Follower::start(f).map_err(|e| ExecError::Spawn {
            program: program.clone(),
            message: format!("cannot start following its output: {e}"),
        })?),
        None => None,
    };
    cmd.process_group(0)
        .stdin(if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(out)
        .stderr(err)
        .kill_on_drop(!matches!(ending, Ending::Asked(_)));
    let spawned = cmd.spawn();
    // The command holds our copies of the pipes' write ends: without this
    // the pumps would never see the last writer go.
    drop(cmd);
    let mut child = spawned.map_err(|e| ExecError::Spawn {
        program: program.clone(),
        message: e.to_string(),
    })?;
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    let mut guard = GroupGuard { pgid: pid, ending };

    let mut stores = Store::pair(retain);
    let driven = {
        let work = async {
            match &pumps {
                Some(p) => drive_files(&mut child, input, p, contain).await,
                None => drive(&mut child, input, &mut stores, on_output.as_ref(), contain).await,
            }
        };
        match timeout {
            Some(limit) => tokio::time::timeout(limit, work).await.ok(),
            None => Some(work.await),
        }
    };
    if driven.is_none() {
        match ending {
            Ending::Asked(grace) => super::stopping::stop(&mut child, grace).await,
            _ => {
                guard.kill();
                let _ = child.wait().await;
            }
        }
    }
    // The leader was reaped (or waiting failed): leave the group alone.
    guard.disarm();
    let mut capped = Vec::new();
    if let Some(p) = pumps {
        capped = p.capped();
        // Closes the pipes: a writer left behind meets EPIPE, as before.
        p.stop()
            .await
            .map_err(|e| ExecError::Failed(format!("saving the command's output: {e}")))?;
    }
    if let (Some(f), Some(r)) = (follower, retain) {
        stores = f.stop().await?.finish(r).await;
    }
    let mark = |mut out: RunOutcome| {
        if let Some(c) = out.captured.as_deref_mut() {
            for (c, hit) in c.iter_mut().zip(&capped) {
                c.capped = *hit;
            }
        }
        out
    };
    match driven {
        Some(result) => Ok(mark(outcome(result?, stores, Vec::new()))),
        None => Err(ExecError::Timeout {
            limit: timeout.unwrap_or_default(),
            partial: Box::new(outcome(None, stores, Vec::new())),
        }),
    }
}

/// Wait for exit while the pipes are pumped into files and followed
/// elsewhere (stdin is fed as with plain pipes); then, as the pipes were
/// read, wait for the last writer to close them for at most
/// [`DRAIN_GRACE`]. Returns the exit code.
async fn drive_files(
    child: &mut Child,
    input: Option<Vec<u8>>,
    pumps: &Pumps,
    contain: bool,
) -> Result<Option<i32>, ExecError> {
    let feeding = feed(child.stdin.take(), input);
    tokio::pin!(feeding);
    let mut fed = false;
    let status = loop {
        tokio::select! {
            status = exited(child, contain) => break status,
            () = &mut feeding, if !fed => fed = true,
        }
    };
    let status = status.map_err(|e| ExecError::Failed(format!("waiting for the command: {e}")))?;
    pumps.settle(DRAIN_GRACE).await;
    Ok(status.code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use crate::test_support::sh;

    /// True while `pid` exists and is not a zombie.
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                !state.starts_with('Z') && !state.starts_with('X')
            }
            Err(_) => false,
        }
    }

    async fn gone_within(pid: i32, d: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < d {
            if !alive(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        !alive(pid)
    }

    type Log = Arc<Mutex<Vec<(OutputStream, String, Instant)>>>;

    fn recorder() -> (Log, OutputFn) {
        let log: Log = Arc::default();
        let l = log.clone();
        let f: OutputFn = Arc::new(move |s, t: &str| {
            l.lock().unwrap().push((s, t.to_string(), Instant::now()));
        });
        (log, f)
    }

    #[tokio::test]
    async fn output_streams_before_exit() {
        let (log, f) = recorder();
        let start = Instant::now();
        let out = run(sh("echo a; sleep 1; echo b"), None, None, Some(f))
            .await
            .unwrap();
        let done = Instant::now();
        assert_eq!(out.stdout, b"a\nb\n");
        let log = log.lock().unwrap();
        let first = log.first().expect("a chunk");
        assert_eq!(first.1, "a\n");
        assert!(
            done - first.2 >= Duration::from_millis(700),
            "first chunk came late"
        );
        assert!(done - start >= Duration::from_millis(900));
    }

    #[tokio::test]
    async fn exit_codes_and_separate_streams() {
        let out = run(sh("echo out; echo err >&2; exit 3"), None, None, None)
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout, b"out\n");
        assert_eq!(out.stderr, b"err\n");
        let ok = run(sh("true"), None, None, None).await.unwrap();
        assert_eq!(ok.exit_code, Some(0));
        let killed = run(sh("kill -9 $$"), None, None, None).await.unwrap();
        assert_eq!(killed.exit_code, None);
    }

    #[tokio::test]
    async fn stderr_chunks_are_labelled() {
        let (log, f) = recorder();
        run(sh("echo e >&2"), None, None, Some(f)).await.unwrap();
        let log = log.lock().unwrap();
        assert_eq!(log.len(), 1);
        assert_eq!(log[0].0, OutputStream::Stderr);
        assert_eq!(log[0].1, "e\n");
    }

    #[tokio::test]
    async fn timeout_kills_the_group_and_keeps_partial_output() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!(
            "sleep 100 & echo $! > {}; echo started; wait",
            pidfile.display()
        );
        let start = Instant::now();
        let err = run(sh(&script), None, Some(Duration::from_millis(500)), None)
            .await
            .unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(60));
        match err {
            ExecError::Timeout { limit, partial } => {
                assert_eq!(limit, Duration::from_millis(500));
                assert_eq!(partial.stdout, b"started\n");
            }
            other => panic!("expected timeout, got {other:?}"),
        }
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            gone_within(pid, Duration::from_secs(30)).await,
            "grandchild survived"
        );
    }

    #[tokio::test]
    async fn dropping_the_future_kills_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let script = format!("sleep 100 & echo $! > {}; wait", pidfile.display());
        let fut = run(sh(&script), None, None, None);
        let res = tokio::time::timeout(Duration::from_millis(500), fut).await;
        assert!(res.is_err(), "should still be running");
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            gone_within(pid, Duration::from_secs(30)).await,
            "grandchild survived cancel"
        );
    }

    #[tokio::test]
    async fn background_children_do_not_hold_the_call() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        // The sleeper keeps the output pipe open far longer than the bound.
        let script = format!("echo hi; sleep 300 & echo $! > {}", pidfile.display());
        let start = Instant::now();
        let out = run(sh(&script), None, None, None).await.unwrap();
        assert_eq!(out.stdout, b"hi\n");
        assert!(start.elapsed() < Duration::from_secs(60));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // SAFETY: the sleeper this test started (its group may be gone).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }

    #[tokio::test]
    async fn utf8_split_across_writes_is_reassembled() {
        let (log, f) = recorder();
        // "é" is \303\251; the two bytes arrive in separate writes.
        let out = run(
            sh(r"printf '\303'; sleep 0.3; printf '\251x'"),
            None,
            None,
            Some(f),
        )
        .await
        .unwrap();
        assert_eq!(out.stdout, "éx".as_bytes());
        let log = log.lock().unwrap();
        let text: String = log.iter().map(|c| c.1.as_str()).collect();
        assert_eq!(text, "éx");
        assert!(!text.contains('\u{FFFD}'));
    }

    #[tokio::test]
    async fn truncated_utf8_at_end_becomes_replacement() {
        let (log, f) = recorder();
        run(sh(r"printf 'a\303'"), None, None, Some(f))
            .await
            .unwrap();
        let text: String = log.lock().unwrap().iter().map(|c| c.1.clone()).collect();
        assert_eq!(text, "a\u{FFFD}");
    }

    #[test]
    fn chunker_holds_back_incomplete_sequences() {
        let mut c = Utf8Chunker::default();
        let crab = "🦀".as_bytes();
        assert_eq!(c.push(&crab[..1]), "");
        assert_eq!(c.push(&crab[1..3]), "");
        assert_eq!(c.push(&crab[3..]), "🦀");
        assert_eq!(c.push(b"a\xffb"), "a\u{FFFD}b");
        assert_eq!(c.finish(), "");
    }

    #[tokio::test]
    async fn stdin_bytes_are_delivered() {
        let out = run(sh("cat; echo done"), Some(b"hello\n".to_vec()), None, None)
            .await
            .unwrap();
        assert_eq!(out.stdout, b"hello\ndone\n");
        // Large input to a reader that ignores it must not hang.
        let out = run(sh("true"), Some(vec![b'x'; 1 << 20]), None, None)
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(0));
    }

    #[tokio::test]
    async fn spawn_failure_names_the_program() {
        let err = run(Command::new("/nonexistent/vigil-test"), None, None, None)
            .await
            .unwrap_err();
        match err {
            ExecError::Spawn { program, .. } => assert_eq!(program, "/nonexistent/vigil-test"),
            other => panic!("expected spawn error, got {other:?}"),
        }
    }
}
