//! Running one command in a managed pane: dispatch through the control
//! client, completion from secret-tagged markers, exact output from files.
//!
//! The pane's shell sources a small wrapper (see [`super::script`]) that
//! sends the command's stdout and stderr straight to files on the target
//! (exact bytes, any length, no extra process) and prints an invisible OSC
//! marker with the exit code. Completion arrives as that marker in
//! control-mode `%output`; the scrollback is never polled and never parsed
//! for output. While a command runs, new bytes in the files go to the
//! output callback and (on this machine) to the pane's terminal, so the
//! operator sees them live. This module must never type into a pane whose
//! shell is not at its prompt, and must send Ctrl-C whenever it gives up on
//! a command (timeout or cancel).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::time::Instant;

use super::TmuxError;
use super::control::{Control, Event};
use super::guard::guard_shared_shell;
use super::manager::{PaneRef, PaneSlot, PaneState, TmuxManager};
use super::probe::{confirm_prompt, prompt_printed};
use super::script::{self, CmdFiles, Marker, MarkerScanner, is_shell, tq};
use super::stream::Streamer;
use crate::process::outcome;
use crate::{ExecError, OutputFn, RunOutcome, RunRequest};

/// How long after a detached dispatch the pane's foreground process is
/// not trusted yet.
const DETACH_SETTLE: Duration = Duration::from_millis(300);
/// How long to wait for a shell's prompt before typing (see `prompt_printed`).
const PROMPT_WAIT: Duration = Duration::from_millis(150);
/// The same for a shell that was just started or interrupted (checked once).
const PROMPT_WAIT_NEW: Duration = Duration::from_millis(1000);

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

/// Write `content` to `path` on the target through the tmux server. The
/// control client is attached by then ([`Control::start`] waits for it), so
/// the server writes the file itself before it runs the next line; for an
/// unattached client it would ask the client to, and carry on at once.
pub(super) fn save_lines(buffer: &str, path: &str, content: &str) -> [String; 2] {
    [
        format!("set-buffer -b {buffer} {}", tq(content)),
        format!("save-buffer -b {buffer} {}", tq(path)),
    ]
}

/// Clear whatever the operator left on the command line, then type `line`.
pub(super) fn type_lines(pane: &str, line: &str) -> [String; 3] {
    [
        format!("send-keys -t {pane} C-e C-u"),
        format!("send-keys -t {pane} -l -- {}", tq(line)),
        format!("send-keys -t {pane} Enter"),
    ]
}

pub(super) async fn all_ok(control: &Control, lines: Vec<String>) -> Result<(), ExecError> {
    for r in control.batch(&lines).await {
        r.map_err(|e| ExecError::Failed(format!("could not dispatch to tmux: {e}")))?;
    }
    Ok(())
}

/// How long a typed command line may take to start before vigil claims it
/// (see [`script::wrapper`]'s start claim). Looked at with the status file
/// (at 1, 3, 7, 15 s…), so the claim comes at 15 s: a line the shell
/// discarded is rare, a shell starved of CPU for seconds is not.
const NEVER_STARTED: Duration = Duration::from_secs(10);

fn never_started(pane: &PaneRef) -> ExecError {
    ExecError::Failed(format!(
        "the command line typed into pane `{}` of tmux session {} never started (the shell \
         discarded it, e.g. with an interrupt that arrived with it); nothing ran; run the \
         command again",
        pane.name, pane.session
    ))
}

pub(super) fn lost(pane: &PaneRef, what: &str) -> ExecError {
    ExecError::Failed(format!(
        "{what} while the command ran in pane `{}` of tmux session {}; its terminal state \
         (working directory, environment, running programs) was lost; the next command recreates it",
        pane.name, pane.session
    ))
}

/// Run one command in a managed pane.
pub async fn run_in_pane(
    mgr: &TmuxManager,
    req: RunRequest,
    on_output: Option<OutputFn>,
) -> Result<RunOutcome, ExecError> {
    guard_shared_shell(&req.command, req.read.as_deref()).map_err(ExecError::Failed)?;
    let pane = mgr
        .resolve(req.session.as_deref(), req.pane.as_deref())
        .await
        .map_err(ExecError::from)?;
    let _turn = pane.slot.run.lock().await;
    let mut notes = pane.slot.take_notes();
    let state = ready_pane(mgr, &pane).await?;
    match req.read.as_deref() {
        Some(read) => pane.slot.assigns(read),
        None => pane.slot.assigns(&vigil_shell::Command::read(&req.command)),
    }

    let id = mgr.next_id();
    let files = CmdFiles {
        dir: mgr.dir().to_string(),
        id,
    };
    let token = format!("{}:{id}", mgr.secret());
    let events = pane.control.subscribe();
    let mut guard = type_command(mgr, &pane, &req, &files, &token).await?;
    if req.detach {
        guard.armed = false;
        return Ok(hand_off_detached(
            mgr, &pane, &req, files, token, events, notes,
        ));
    }

    let local = mgr.transport().is_local();
    let streamer = Streamer::new(
        on_output,
        req.retain.as_ref(),
        local,
        (local && state.tty.starts_with('/')).then(|| state.tty.clone()),
        files.path("live"),
    );
    let (waited, streamer) =
        wait_for_exit(mgr, &pane, &req, &files, &token, events, streamer).await;
    let rc = match waited {
        Ok(Some(rc)) => Some(rc),
        Ok(None) => {
            // Timed out: interrupt it, and give it a moment to flush.
            pane.control.fire(&format!("send-keys -t {} C-c", pane.id));
            pane.slot.dirty.store(true, Ordering::SeqCst);
            guard.armed = false;
            tokio::time::sleep(Duration::from_millis(50)).await;
            let stores = collect(mgr, &files, streamer, &req).await;
            return Err(ExecError::Timeout {
                limit: req.timeout.unwrap_or_default(),
                partial: Box::new(outcome(None, stores, notes)),
            });
        }
        Err(e) => {
            guard.armed = false;
            return Err(e);
        }
    };
    guard.armed = false;
    drop(guard);

    let (stores, after) = tokio::join!(collect(mgr, &files, streamer, &req), mgr.pane_state(&pane));
    if let Ok(st) = after
        && st.alternate_on
    {
        notes.push(format!(
            "a full-screen program (`{}`) was left on the pane's alternate screen; its screen \
             is not part of this output. Use capture-pane (include_alternate_screen: true) to \
             see it and send-keys to quit it",
            st.current_command
        ));
    }
    Ok(outcome(rc, stores, notes))
}

/// The pane's state once it is ready to take a command: a finished detached
/// command forgotten, copy mode left, the prompt confirmed when needed. A
/// pane that is busy or holds a full-screen program is refused, with what
/// to do about it.
async fn ready_pane(mgr: &TmuxManager, pane: &PaneRef) -> Result<PaneState, ExecError> {
    let mut state = mgr.pane_state(pane).await.map_err(ExecError::from)?;
    let detached = pane.slot.busy.lock().map(|b| b.clone()).unwrap_or(None);
    if let Some((_, cmd, when)) = detached {
        // Right after dispatch the shell may not have started the command
        // yet: give it a moment before trusting the foreground process.
        let settle = when + DETACH_SETTLE;
        if is_shell(&state.current_command) && std::time::Instant::now() < settle {
            tokio::time::sleep_until(settle.into()).await;
            state = mgr.pane_state(pane).await.map_err(ExecError::from)?;
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
    // After the agent's own keys, only a shell in the foreground is probed
    // (its Ctrl-C clears a continued line); a program started with keys is
    // never interrupted: it gets the busy / alternate-screen answer below.
    let typed = pane.slot.typed.load(Ordering::SeqCst)
        && is_shell(&state.current_command)
        && !state.alternate_on;
    if pane.slot.dirty.load(Ordering::SeqCst) || typed {
        // A new pane's shell may still be reading its rc files (its
        // foreground may even be `env` or an rc file's command yet).
        let starting = pane.slot.fresh.load(Ordering::SeqCst)
            || (state.cursor_x == 0 && is_shell(&state.current_command));
        if state.cursor_x == 0 {
            prompt_printed(pane, PROMPT_WAIT_NEW).await;
        }
        confirm_prompt(mgr, pane, starting).await?;
        state = mgr.pane_state(pane).await.map_err(ExecError::from)?;
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
    if state.cursor_x == 0 {
        prompt_printed(pane, PROMPT_WAIT).await;
    }
    Ok(state)
}

/// Save the command and its wrapper on the target and type the line that
/// sources the wrapper. The guard interrupts the command if the call is
/// dropped before it ends.
async fn type_command(
    mgr: &TmuxManager,
    pane: &PaneRef,
    req: &RunRequest,
    files: &CmdFiles,
    token: &str,
) -> Result<CancelGuard, ExecError> {
    let wrapper = if req.detach {
        mgr.prepare_fifos(&[files.path("of"), files.path("ef")]);
        script::wrapper_detached(files, token)
    } else {
        script::wrapper(files, token, &req.command)
    };
    let buffer = format!("vigil-{}", files.id);
    let mut lines = Vec::with_capacity(8);
    lines.extend(save_lines(&buffer, &files.path("c"), &req.command));
    lines.extend(save_lines(&buffer, &files.path("sh"), &wrapper));
    lines.push(format!("delete-buffer -b {buffer}"));
    lines.extend(type_lines(&pane.id, &format!(" . {}", files.path("sh"))));
    let guard = CancelGuard {
        control: pane.control.clone(),
        pane: pane.id.clone(),
        slot: pane.slot.clone(),
        armed: true,
    };
    all_ok(&pane.control, lines).await?;
    Ok(guard)
}

/// A detached command: mark the pane busy, watch for its end in the
/// background, and tell the model how to follow it.
fn hand_off_detached(
    mgr: &TmuxManager,
    pane: &PaneRef,
    req: &RunRequest,
    files: CmdFiles,
    token: String,
    events: tokio::sync::mpsc::Receiver<Event>,
    notes: Vec<String>,
) -> RunOutcome {
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
    RunOutcome {
        dispatched: Some(msg),
        notes,
        ..Default::default()
    }
}

/// Follow the command until its exit marker: `Ok(Some(code))` when it
/// ended, `Ok(None)` when the timeout passed first, an error when the pane
/// or the server went away. Output is followed on the way.
async fn wait_for_exit(
    mgr: &TmuxManager,
    pane: &PaneRef,
    req: &RunRequest,
    files: &CmdFiles,
    token: &str,
    mut events: tokio::sync::mpsc::Receiver<Event>,
    mut streamer: Streamer,
) -> (Result<Option<i32>, ExecError>, Streamer) {
    let mut scanner = MarkerScanner::new(token);
    let local = mgr.transport().is_local();
    // Following the files costs a read per tick on this machine and a
    // process elsewhere; commands shorter than one tick never pay it.
    let follow = local || streamer.has_output_fn();
    let tick = if local {
        Duration::from_millis(25)
    } else {
        Duration::from_millis(250)
    };
    let deadline = req.timeout.map(|t| Instant::now() + t);
    let far = Instant::now() + Duration::from_secs(86_400 * 365);
    let mut next_pull = Instant::now() + tick;
    let mut lagged = false;
    // The second witness of the end: the wrapper's status file, looked at
    // after 1 s, then ever less often (up to every 8 s), so an exit marker
    // that never reached this control client (a connection replaced under
    // it, output dropped) ends the wait late instead of never.
    let mut witness_every = Duration::from_secs(1);
    let mut next_witness = Instant::now() + witness_every;
    let typed_at = Instant::now();
    // Known once a claim found the wrapper's own: never asked again.
    let mut started = false;
    loop {
        tokio::select! {
            ev = events.recv() => match ev {
                Some(Event::Output { pane: p, data }) if p == pane.id => {
                    for m in scanner.push(&data) {
                        if let Marker::Exit(code) = m {
                            return (Ok(Some(code)), streamer);
                        }
                    }
                }
                Some(Event::Output { .. }) => {}
                Some(Event::Lagged) => lagged = true,
                Some(Event::Changed) => {
                    if !mgr.pane_exists(pane).await {
                        mgr.remove(&files.all()).await;
                        return (Err(lost(pane, "the pane was killed")), streamer);
                    }
                }
                Some(Event::Closed) | None => {
                    return (Err(lost(pane, "the tmux server or session went away")), streamer);
                }
            },
            _ = tokio::time::sleep_until(next_pull), if follow || lagged => {
                if follow {
                    streamer.pull(mgr, files, true).await;
                }
                if lagged {
                    // The exit marker may have been in output tmux or a full
                    // channel dropped: the wrapper's status file tells.
                    if let Some(code) = exit_file(mgr, files).await {
                        return (Ok(Some(code)), streamer);
                    }
                }
                next_pull = Instant::now() + tick;
            }
            _ = tokio::time::sleep_until(next_witness) => {
                if let Some(code) = exit_file(mgr, files).await {
                    tracing::debug!(pane = %pane.id, "the exit marker was missed; the status file says {code}");
                    return (Ok(Some(code)), streamer);
                }
                // A line the shell discarded never starts: after a while,
                // claim the start so that it never can, and say so.
                if !started && typed_at.elapsed() >= NEVER_STARTED {
                    if mgr.claim(&files.path("st")).await {
                        mgr.remove(&files.all()).await;
                        return (Err(never_started(pane)), streamer);
                    }
                    started = true;
                }
                witness_every = (witness_every * 2).min(Duration::from_secs(8));
                next_witness = Instant::now() + witness_every;
            }
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)), if deadline.is_some() => {
                return (Ok(None), streamer);
            }
        }
    }
}

/// Take the rest of both output files, move a file that outgrew the
/// windows to the spill folder, and remove the command's files.
async fn collect(
    mgr: &TmuxManager,
    files: &CmdFiles,
    mut streamer: Streamer,
    req: &RunRequest,
) -> [crate::store::Store; 2] {
    streamer.finish(mgr, files).await;
    streamer.place(files, req.retain.as_ref()).await;
    mgr.remove(&files.all()).await;
    streamer.stores
}

/// The exit status the wrapper left in its status file, once it exists
/// (the shell is then printing its marker and returning to the prompt).
async fn exit_file(mgr: &TmuxManager, files: &CmdFiles) -> Option<i32> {
    let bytes = mgr.read_from(&files.path("rc"), 0).await;
    let code = std::str::from_utf8(&bytes).ok()?.trim().parse().ok()?;
    // Let the shell finish printing its marker and prompt.
    tokio::time::sleep(Duration::from_millis(50)).await;
    Some(code)
}

/// Follow a detached command until its exit marker, then clear the pane's
/// busy flag. Files are left for the operator's own tooling only on
/// remote targets where removal would cost a round trip per command.
async fn watch_detached(
    mut events: tokio::sync::mpsc::Receiver<Event>,
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
