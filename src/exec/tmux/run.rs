//! Running one command in a managed pane: dispatch through the control
//! client, completion from secret-tagged markers, exact output from files.
//!
//! The pane's shell sources a small wrapper (see [`super::script`]) whose
//! stdout and stderr go through FIFOs to `tee`s that keep the exact bytes in
//! files and show them in the pane. Completion, exit code and "stream
//! finished" arrive as invisible OSC markers in control-mode `%output`; the
//! scrollback is never polled and never parsed for output. This module
//! must never type into a pane whose shell is not at its prompt, and must
//! send Ctrl-C whenever it gives up on a command (timeout or cancel).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::TmuxError;
use super::control::{Control, Event};
use super::guard::guard_shared_shell;
use super::manager::{PaneRef, PaneSlot, TmuxManager};
use super::script::{self, CmdFiles, Marker, MarkerScanner, is_shell, tq};
use crate::exec::process::Utf8Chunker;
use crate::exec::{ExecError, OutputFn, OutputStream, RunOutcome, RunRequest};

/// How long to wait for the output copiers after the exit marker.
const DRAIN_GRACE: Duration = Duration::from_millis(250);
/// How long a probe may take before Ctrl-C is sent again.
const PROBE_WAIT: Duration = Duration::from_millis(1500);
const PROBE_TRIES: usize = 3;
/// How long after a detached dispatch the pane's foreground process is
/// not trusted yet.
const DETACH_SETTLE: Duration = Duration::from_millis(300);

/// Sends Ctrl-C to the pane when a run is abandoned (future dropped).
struct CancelGuard {
    control: Arc<Control>,
    pane: String,
    slot: Arc<PaneSlot>,
    armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if self.armed {
            self.control
                .fire(&format!("send-keys -t {} C-c", self.pane));
            self.slot.dirty.store(true, Ordering::SeqCst);
        }
    }
}

/// Write `content` to `path` on the target through the tmux server.
fn save_lines(buffer: &str, path: &str, content: &str) -> [String; 2] {
    [
        format!("set-buffer -b {buffer} {}", tq(content)),
        format!("save-buffer -b {buffer} {}", tq(path)),
    ]
}

/// Clear whatever the operator left on the command line, then type `line`.
fn type_lines(pane: &str, line: &str) -> [String; 3] {
    [
        format!("send-keys -t {pane} C-e C-u"),
        format!("send-keys -t {pane} -l -- {}", tq(line)),
        format!("send-keys -t {pane} Enter"),
    ]
}

async fn all_ok(control: &Control, lines: Vec<String>) -> Result<(), ExecError> {
    for r in control.batch(&lines).await {
        r.map_err(|e| ExecError::Failed(format!("could not dispatch to tmux: {e}")))?;
    }
    Ok(())
}

fn lost(pane: &PaneRef, what: &str) -> ExecError {
    ExecError::Failed(format!(
        "{what} while the command ran in pane `{}` of tmux session {}; its terminal state \
         (working directory, environment, running programs) was lost; the next command recreates it",
        pane.name, pane.session
    ))
}

/// Make sure the shell is at its prompt: source a probe and wait for its
/// marker, sending Ctrl-C between tries.
async fn confirm_prompt(mgr: &TmuxManager, pane: &PaneRef) -> Result<(), ExecError> {
    for attempt in 0..PROBE_TRIES {
        let id = mgr.next_id();
        let token = format!("{}:{id}", mgr.secret());
        let path = format!("{}/{id}.sh", mgr.dir());
        let mut events = pane.control.subscribe();
        let mut lines = save_lines(&format!("vigil-{id}"), &path, &script::probe(&token)).to_vec();
        lines.push(format!("delete-buffer -b vigil-{id}"));
        lines.extend(type_lines(&pane.id, &format!(" . {path}")));
        all_ok(&pane.control, lines).await?;
        let mut scanner = MarkerScanner::new(&token);
        let wait = if attempt == 0 {
            PROBE_WAIT * 2
        } else {
            PROBE_WAIT
        };
        let deadline = Instant::now() + wait;
        let seen = loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(Event::Output { pane: p, data }) if p == pane.id => {
                        if scanner.push(&data).contains(&Marker::Probe) {
                            break true;
                        }
                    }
                    Some(Event::Closed) | None => return Err(lost(pane, "the tmux server went away")),
                    Some(_) => {}
                },
                _ = tokio::time::sleep_until(deadline) => break false,
            }
        };
        mgr.remove(&[path]).await;
        if seen {
            pane.slot.dirty.store(false, Ordering::SeqCst);
            return Ok(());
        }
        pane.control.fire(&format!("send-keys -t {} C-c", pane.id));
    }
    Err(ExecError::Failed(format!(
        "the shell in pane `{}` did not come back to its prompt after Ctrl-C; look at it with \
         capture-pane and get it back with send-keys (e.g. C-c, q, or Enter)",
        pane.name
    )))
}

/// Streams new bytes of the output files to the callback.
struct Streamer {
    on_output: OutputFn,
    offsets: [u64; 2],
    chunkers: [Utf8Chunker; 2],
}

impl Streamer {
    fn emit(&mut self, i: usize, bytes: &[u8]) {
        self.offsets[i] += bytes.len() as u64;
        let text = self.chunkers[i].push(bytes);
        if !text.is_empty() {
            (self.on_output)(which(i), &text);
        }
    }

    async fn pull(&mut self, mgr: &TmuxManager, files: &CmdFiles) {
        for (i, ext) in ["o", "e"].iter().enumerate() {
            let new = mgr.read_from(&files.path(ext), self.offsets[i]).await;
            if !new.is_empty() {
                self.emit(i, &new);
            }
        }
    }

    /// Emit what the final files hold beyond what was streamed.
    fn finish(&mut self, out: &[u8], err: &[u8]) {
        for (i, full) in [out, err].iter().enumerate() {
            let from = usize::try_from(self.offsets[i])
                .unwrap_or(usize::MAX)
                .min(full.len());
            let rest = full[from..].to_vec();
            if !rest.is_empty() {
                self.emit(i, &rest);
            }
            let tail = self.chunkers[i].finish();
            if !tail.is_empty() {
                (self.on_output)(which(i), &tail);
            }
        }
    }
}

fn which(i: usize) -> OutputStream {
    if i == 0 {
        OutputStream::Stdout
    } else {
        OutputStream::Stderr
    }
}

/// Run one command in a managed pane.
pub async fn run_in_pane(
    mgr: &TmuxManager,
    req: RunRequest,
    on_output: Option<OutputFn>,
) -> Result<RunOutcome, ExecError> {
    guard_shared_shell(&req.command).map_err(ExecError::Failed)?;
    let pane = mgr
        .resolve(req.session.as_deref(), req.pane.as_deref())
        .await
        .map_err(ExecError::from)?;
    let _turn = pane.slot.run.lock().await;
    let mut notes = pane.slot.take_notes();

    let mut state = mgr.pane_state(&pane).await.map_err(ExecError::from)?;
    let detached = pane.slot.busy.lock().map(|b| b.clone()).unwrap_or(None);
    if let Some((_, cmd, when)) = detached {
        // Right after dispatch the shell may not have started the command
        // yet: give it a moment before trusting the foreground process.
        let settle = when + DETACH_SETTLE;
        if is_shell(&state.current_command) && std::time::Instant::now() < settle {
            tokio::time::sleep_until(settle.into()).await;
            state = mgr.pane_state(&pane).await.map_err(ExecError::from)?;
        }
        if !is_shell(&state.current_command) {
            return Err(ExecError::Failed(format!(
                "pane `{}` is still running the detached command `{cmd}`; poll it with \
                 capture-pane, stop it with send-keys C-c, or use another pane",
                pane.name
            )));
        }
        // Done or interrupted (its exit marker may never come): check the
        // prompt before typing.
        if let Ok(mut b) = pane.slot.busy.lock() {
            *b = None;
        }
        pane.slot.dirty.store(true, Ordering::SeqCst);
    }
    if state.in_mode {
        // The operator was scrolling: leave copy mode so keys reach the shell.
        pane.control
            .cmd(&format!("copy-mode -q -t {}", pane.id))
            .await?;
    }
    if pane.slot.dirty.load(Ordering::SeqCst) {
        confirm_prompt(mgr, &pane).await?;
        state = mgr.pane_state(&pane).await.map_err(ExecError::from)?;
    }
    if state.alternate_on {
        return Err(ExecError::Failed(format!(
            "a full-screen program (`{}`) holds pane `{}` on its alternate screen; nothing was \
             typed. Look at it with capture-pane (include_alternate_screen: true) and quit it with \
             send-keys (e.g. q, :q Enter, or C-c) before running commands",
            state.current_command, pane.name
        )));
    }
    if !is_shell(&state.current_command) {
        return Err(ExecError::Failed(format!(
            "pane `{}` is busy running `{}` (the shell is not at its prompt); look with \
             capture-pane, stop it with send-keys C-c, or use another pane",
            pane.name, state.current_command
        )));
    }

    let id = mgr.next_id();
    let files = CmdFiles {
        dir: mgr.dir().to_string(),
        id,
    };
    let token = format!("{}:{id}", mgr.secret());
    mgr.prepare_fifos(&[files.path("of"), files.path("ef")]);
    let mut events = pane.control.subscribe();
    let buffer = format!("vigil-{id}");
    let mut lines = Vec::with_capacity(8);
    lines.extend(save_lines(&buffer, &files.path("c"), &req.command));
    lines.extend(save_lines(
        &buffer,
        &files.path("sh"),
        &script::wrapper(&files, &token),
    ));
    lines.push(format!("delete-buffer -b {buffer}"));
    lines.extend(type_lines(&pane.id, &format!(" . {}", files.path("sh"))));
    let mut guard = CancelGuard {
        control: pane.control.clone(),
        pane: pane.id.clone(),
        slot: pane.slot.clone(),
        armed: true,
    };
    all_ok(&pane.control, lines).await?;

    if req.detach {
        guard.armed = false;
        if let Ok(mut b) = pane.slot.busy.lock() {
            *b = Some((
                token.clone(),
                req.command.clone(),
                std::time::Instant::now(),
            ));
        }
        tokio::spawn(watch_detached(
            events,
            token,
            pane.id.clone(),
            pane.slot.clone(),
            files.all(),
            mgr.transport().is_local(),
        ));
        let mut msg = format!(
            "command dispatched to tmux pane {} (`{}` in session {}); it runs in the background \
             of the conversation. Poll its output with capture-pane (e.g. {{\"delay\": \"5s\"}}), \
             stop it with send-keys {{\"keys\": [\"C-c\"]}}",
            pane.id, pane.name, pane.session
        );
        for n in &notes {
            msg.push_str("\nnote: ");
            msg.push_str(n);
        }
        return Ok(RunOutcome {
            dispatched: Some(msg),
            notes,
            ..Default::default()
        });
    }

    let mut scanner = MarkerScanner::new(&token);
    let mut streamer = on_output.map(|f| Streamer {
        on_output: f,
        offsets: [0, 0],
        chunkers: Default::default(),
    });
    let debounce = if mgr.transport().is_local() {
        Duration::from_millis(15)
    } else {
        Duration::from_millis(250)
    };
    let deadline = req.timeout.map(|t| Instant::now() + t);
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let mut rc: Option<i32> = None;
    let (mut out_done, mut err_done) = (false, false);
    let mut drain_until: Option<Instant> = None;
    let mut stream_at: Option<Instant> = None;

    let timed_out = loop {
        if rc.is_some() && out_done && err_done {
            break false;
        }
        tokio::select! {
            ev = events.recv() => match ev {
                Some(Event::Output { pane: p, data }) if p == pane.id => {
                    for m in scanner.push(&data) {
                        match m {
                            Marker::Exit(code) => {
                                rc = Some(code);
                                drain_until = Some(Instant::now() + DRAIN_GRACE);
                            }
                            Marker::StdoutDone => out_done = true,
                            Marker::StderrDone => err_done = true,
                            Marker::Probe => {}
                        }
                    }
                    if streamer.is_some() && stream_at.is_none() && rc.is_none() {
                        stream_at = Some(Instant::now() + debounce);
                    }
                }
                Some(Event::Output { .. }) => {}
                Some(Event::Changed) => {
                    if !mgr.pane_exists(&pane).await {
                        guard.armed = false;
                        mgr.remove(&files.all()).await;
                        return Err(lost(&pane, "the pane was killed"));
                    }
                }
                Some(Event::Closed) | None => {
                    guard.armed = false;
                    return Err(lost(&pane, "the tmux server or session went away"));
                }
            },
            _ = tokio::time::sleep_until(stream_at.unwrap_or(far)), if stream_at.is_some() => {
                stream_at = None;
                if let Some(s) = streamer.as_mut() {
                    s.pull(mgr, &files).await;
                }
            }
            _ = tokio::time::sleep_until(drain_until.unwrap_or(far)), if drain_until.is_some() => {
                break false;
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                break true;
            }
        }
    };

    if timed_out {
        pane.control.fire(&format!("send-keys -t {} C-c", pane.id));
        pane.slot.dirty.store(true, Ordering::SeqCst);
        guard.armed = false;
        // Let the copiers see the end of the interrupted streams.
        let until = Instant::now() + DRAIN_GRACE;
        while !(out_done && err_done) {
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(Event::Output { pane: p, data }) if p == pane.id => {
                        for m in scanner.push(&data) {
                            match m {
                                Marker::StdoutDone => out_done = true,
                                Marker::StderrDone => err_done = true,
                                _ => {}
                            }
                        }
                    }
                    Some(Event::Closed) | None => break,
                    _ => {}
                },
                _ = tokio::time::sleep_until(until) => break,
            }
        }
        let (stdout, stderr) = read_results(mgr, &files).await;
        if let Some(s) = streamer.as_mut() {
            s.finish(&stdout, &stderr);
        }
        return Err(ExecError::Timeout {
            limit: req.timeout.unwrap_or_default(),
            partial: Box::new(RunOutcome {
                exit_code: None,
                stdout,
                stderr,
                dispatched: None,
                notes,
            }),
        });
    }
    guard.armed = false;
    drop(guard);

    let ((stdout, stderr), after) = tokio::join!(read_results(mgr, &files), mgr.pane_state(&pane));
    if let Some(s) = streamer.as_mut() {
        s.finish(&stdout, &stderr);
    }
    if let Ok(st) = after {
        if st.alternate_on {
            notes.push(format!(
                "a full-screen program (`{}`) was left on the pane's alternate screen; its screen \
                 is not part of this output. Use capture-pane (include_alternate_screen: true) to \
                 see it and send-keys to quit it",
                st.current_command
            ));
        }
    }
    Ok(RunOutcome {
        exit_code: rc,
        stdout,
        stderr,
        dispatched: None,
        notes,
    })
}

/// Read both output files and remove the command's files.
async fn read_results(mgr: &TmuxManager, files: &CmdFiles) -> (Vec<u8>, Vec<u8>) {
    let (po, pe) = (files.path("o"), files.path("e"));
    let (o, e) = tokio::join!(mgr.read_from(&po, 0), mgr.read_from(&pe, 0));
    mgr.remove(&files.all()).await;
    (o, e)
}

/// Follow a detached command until its exit marker, then clear the pane's
/// busy flag. Files are left for the operator's own tooling only on
/// remote targets where removal would cost a round trip per command.
async fn watch_detached(
    mut events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    token: String,
    pane: String,
    slot: Arc<PaneSlot>,
    files: Vec<String>,
    local: bool,
) {
    let mut scanner = MarkerScanner::new(&token);
    while let Some(ev) = events.recv().await {
        match ev {
            Event::Output { pane: p, data }
                if p == pane
                    && scanner
                        .push(&data)
                        .iter()
                        .any(|m| matches!(m, Marker::Exit(_))) =>
            {
                if let Ok(mut b) = slot.busy.lock() {
                    if b.as_ref().is_some_and(|(t, _, _)| *t == token) {
                        *b = None;
                    }
                }
                break;
            }
            Event::Closed => return,
            _ => {}
        }
        let still_ours = slot
            .busy
            .lock()
            .map(|b| b.as_ref().is_some_and(|(t, _, _)| *t == token))
            .unwrap_or(false);
        if !still_ours {
            break;
        }
    }
    if local {
        for f in files {
            let _ = tokio::fs::remove_file(f).await;
        }
    }
}

impl From<TmuxError> for ExecError {
    fn from(e: TmuxError) -> Self {
        match e {
            TmuxError::Exec(e) => e,
            other => ExecError::Failed(other.to_string()),
        }
    }
}
