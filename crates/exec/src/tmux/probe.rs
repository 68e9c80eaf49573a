//! Is the pane's shell at its prompt? vigil types a probe line that sources
//! a tiny script; the script answers with a secret-tagged marker in the
//! pane's output and an `ok` file. A probe left unanswered for its whole
//! wait is followed by Ctrl-C and another probe.
//!
//! A slow shell is not a stuck one: on a loaded machine a shell that is
//! still reading its rc files, or is starved of CPU, answers late. So every
//! probe gets the same wait (a shell that was slow once is slow again), the
//! first probe of a shell that is still starting gets a long one, and an
//! answer from any earlier probe of the same confirmation counts (a late
//! shell may run the first line after the second was typed).
//!
//! This module types probes and Ctrl-C only, never a command, and never
//! leaves a probe's files behind.

use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::mpsc::Receiver;
use tokio::time::Instant;

use super::control::Event;
use super::manager::{PaneRef, TmuxManager};
use super::script::{self, Marker, MarkerScanner};
use crate::ExecError;

/// How long a probe may take before Ctrl-C is sent and another is typed.
const PROBE_WAIT: Duration = Duration::from_secs(6);
/// The first probe's wait when the pane's shell may still be starting (its
/// rc files on a loaded machine): nothing runs there that Ctrl-C could stop.
const PROBE_WAIT_STARTING: Duration = Duration::from_secs(20);
const PROBE_TRIES: usize = 3;

/// One probe typed into the pane: its marker scanner and its files.
struct Probe {
    scanner: MarkerScanner,
    path: String,
    ok: String,
}

/// Make sure the shell is at its prompt: source a probe and wait for its
/// answer, sending Ctrl-C between tries. `starting`: the pane's shell may
/// still be starting up (the first probe then waits longer).
pub(super) async fn confirm_prompt(
    mgr: &TmuxManager,
    pane: &PaneRef,
    starting: bool,
) -> Result<(), ExecError> {
    // One subscription for every try, so a late answer to an earlier probe
    // is still seen.
    let mut events = pane.control.subscribe();
    let mut probes = Vec::with_capacity(PROBE_TRIES);
    let mut answered = Ok(false);
    for attempt in 0..PROBE_TRIES {
        if let Err(e) = type_probe(mgr, pane, &mut probes).await {
            answered = Err(e);
            break;
        }
        let wait = if attempt == 0 && starting {
            PROBE_WAIT_STARTING
        } else {
            PROBE_WAIT
        };
        answered = any_answer(mgr, pane, &mut events, &mut probes, wait).await;
        if !matches!(answered, Ok(false)) {
            break;
        }
        pane.control.fire(&format!("send-keys -t {} C-c", pane.id));
    }
    let files: Vec<String> = probes
        .iter()
        .flat_map(|p| [p.path.clone(), p.ok.clone()])
        .collect();
    mgr.remove(&files).await;
    if answered? {
        pane.slot.dirty.store(false, Ordering::SeqCst);
        pane.slot.typed.store(false, Ordering::SeqCst);
        pane.slot.fresh.store(false, Ordering::SeqCst);
        return Ok(());
    }
    Err(ExecError::Failed(format!(
        "the shell in pane `{}` did not come back to its prompt after Ctrl-C; look at it with \
         capture-pane and get it back with send-keys (e.g. C-c, q, or Enter)",
        pane.name
    )))
}

/// Save a new probe script on the target and type the line that sources it.
async fn type_probe(
    mgr: &TmuxManager,
    pane: &PaneRef,
    probes: &mut Vec<Probe>,
) -> Result<(), ExecError> {
    let id = mgr.next_id();
    let token = format!("{}:{id}", mgr.secret());
    let probe = Probe {
        scanner: MarkerScanner::new(&token),
        path: format!("{}/{id}.sh", mgr.dir()),
        ok: format!("{}/{id}.ok", mgr.dir()),
    };
    let buffer = format!("vigil-{id}");
    let mut lines =
        super::run::save_lines(&buffer, &probe.path, &script::probe(&token, &probe.ok)).to_vec();
    lines.push(format!("delete-buffer -b {buffer}"));
    lines.extend(super::run::type_lines(
        &pane.id,
        &format!(" . {}", probe.path),
    ));
    // Pushed first: its files are removed even when typing fails halfway.
    probes.push(probe);
    super::run::all_ok(&pane.control, lines).await
}

/// Whether any probe answered within `wait`: its marker in the pane's
/// output, or, when output was dropped (a paused pane under load) or the
/// wait ran out, its `ok` file.
async fn any_answer(
    mgr: &TmuxManager,
    pane: &PaneRef,
    events: &mut Receiver<Event>,
    probes: &mut [Probe],
    wait: Duration,
) -> Result<bool, ExecError> {
    let deadline = Instant::now() + wait;
    loop {
        tokio::select! {
            ev = events.recv() => match ev {
                Some(Event::Output { pane: p, data }) if p == pane.id => {
                    if probes.iter_mut().any(|pr| pr.scanner.push(&data).contains(&Marker::Probe)) {
                        return Ok(true);
                    }
                }
                Some(Event::Lagged) if any_ok_file(mgr, probes).await => return Ok(true),
                Some(Event::Closed) | None => {
                    return Err(super::run::lost(pane, "the tmux server went away"));
                }
                Some(_) => {}
            },
            _ = tokio::time::sleep_until(deadline) => return Ok(any_ok_file(mgr, probes).await),
        }
    }
}

async fn any_ok_file(mgr: &TmuxManager, probes: &[Probe]) -> bool {
    for p in probes {
        if !mgr.read_from(&p.ok, 0).await.is_empty() {
            return true;
        }
    }
    false
}

/// Right after a command's exit marker the shell may not have printed its
/// prompt yet; a line typed then is echoed by the terminal as well as by the
/// shell, and the pane keeps a stray ` . N.sh` line. Wait a moment for the
/// prompt's bytes (a prompt that ends the line, or an empty one, costs at
/// most `wait`).
pub(super) async fn prompt_printed(pane: &PaneRef, wait: Duration) {
    let mut events = pane.control.subscribe();
    let _ = tokio::time::timeout(wait, async {
        loop {
            match events.recv().await {
                Some(Event::Output { pane: p, .. }) if p == pane.id => return,
                Some(Event::Closed) | None => return,
                Some(_) => {}
            }
        }
    })
    .await;
}
