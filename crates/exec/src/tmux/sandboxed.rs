//! A sandboxed command (`RunRequest::sandbox`) for a managed pane.
//!
//! The pane's shell is shared: an earlier, operator-approved command may
//! have left functions (bash even accepts one named `/usr/bin/vigil`),
//! aliases, a DEBUG trap, `PROMPT_COMMAND`, zsh hooks, `PATH`, exported
//! `BASH_FUNC_*` or `LD_PRELOAD`, and the operator may be typing into it.
//! Any line typed there, even one starting the helper by absolute path,
//! passes through that state first, and a trap or `LD_PRELOAD` runs code
//! before the helper could confine anything. So the shell is never
//! involved: vigil starts the sandbox helper itself ([`sandbox::run`], by
//! absolute path, no shell lookup), in the pane's working directory, with
//! the clean environment, and shows the command and its output on the
//! pane's terminal so the operator still sees it there — as inert text
//! ([`super::inert`]: escapes and other controls made visible, so a
//! contained command cannot set the pane's title, switch its screen or
//! hide text; the model's copy of the output is unchanged, and the
//! operator's own commands in the pane are never touched). The shell's
//! state can neither hijack the run nor be changed by it. Output, exit code,
//! timeout and cancel are those of a plain sandboxed run; the pane's run
//! lock keeps it from interleaving with another command in that pane.
//! This module never types into the pane and never runs anything on a
//! target that is not this machine.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::manager::{PaneRef, TmuxManager};
use crate::{ExecError, OutputFn, RunOutcome, RunRequest, sandbox};

/// The pane's working directory and terminal device.
async fn where_is(pane: &PaneRef) -> Result<(String, String), ExecError> {
    let line = pane
        .control
        .cmd(&format!(
            "display -p -t {} \"#{{pane_tty}} #{{pane_current_path}}\"",
            pane.id
        ))
        .await?
        .join("");
    let (tty, cwd) = line.split_once(' ').unwrap_or((line.as_str(), ""));
    Ok((cwd.to_string(), tty.to_string()))
}

/// The pane's terminal, written without ever blocking the run: when the
/// terminal cannot take more (tmux is slow to read it), the rest of the
/// echo is dropped and counted. The run's output itself is never affected.
struct PaneEcho {
    file: std::fs::File,
    dropped: u64,
}

type Echo = Option<Arc<Mutex<PaneEcho>>>;

/// Opens the pane's terminal for the echo (best effort: a terminal that
/// went away only loses the echo).
fn pane_echo(tty: &str) -> Echo {
    use std::os::unix::fs::OpenOptionsExt;
    if !tty.starts_with("/dev/") {
        return None;
    }
    let file = std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(tty)
        .ok()?;
    Some(Arc::new(Mutex::new(PaneEcho { file, dropped: 0 })))
}

/// Write `text` on the pane as inert text (see the module doc).
fn show(tty: &Echo, text: &str) {
    let Some(t) = tty else { return };
    let text = &super::inert::inert(text);
    let Ok(mut e) = t.lock() else { return };
    if e.dropped > 0 {
        e.dropped += text.len() as u64;
        return;
    }
    let mut rest = text.as_bytes();
    while !rest.is_empty() {
        match e.file.write(rest) {
            Ok(0) | Err(_) => {
                e.dropped += rest.len() as u64;
                return;
            }
            Ok(n) => rest = &rest[n..],
        }
    }
}

/// Say how much of the echo the pane did not get, once the run is over.
fn dropped_note(tty: &Echo) -> Option<String> {
    let t = tty.as_ref()?;
    let mut e = t.lock().ok()?;
    let n = std::mem::take(&mut e.dropped);
    (n > 0).then(|| format!("\n[vigil: {n} bytes not shown in the pane]\n"))
}

/// The first line of `command`, marked when more follows.
fn headline(command: &str) -> String {
    let mut lines = command.lines();
    let first = lines.next().unwrap_or_default();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

/// Run `req` in the sandbox for the pane it names (see the module doc).
pub async fn run_sandboxed(
    mgr: &TmuxManager,
    req: RunRequest,
    on_output: Option<OutputFn>,
) -> Result<RunOutcome, ExecError> {
    if !mgr.transport().is_local() {
        return Err(ExecError::NotSupported(format!(
            "sandboxed run refused: the kernel sandbox is only enforced on this machine, not on {}",
            mgr.transport().label()
        )));
    }
    if req.detach {
        return Err(ExecError::NotSupported(
            "a sandboxed command cannot be detached (wait=false): it must end with the call".into(),
        ));
    }
    let pane = mgr
        .resolve(req.session.as_deref(), req.pane.as_deref())
        .await
        .map_err(ExecError::from)?;
    let _turn = pane.slot.run.lock().await;
    let (cwd, tty) = where_is(&pane).await?;
    let cwd = (!cwd.is_empty()).then(|| PathBuf::from(cwd));
    let echo = pane_echo(&tty);
    show(
        &echo,
        &format!("\n[vigil: sandboxed] $ {}\n", headline(&req.command)),
    );
    let to_pane = echo.clone();
    let forward: OutputFn = Arc::new(move |which, text: &str| {
        show(&to_pane, text);
        if let Some(f) = &on_output {
            f(which, text);
        }
    });
    let retain = req.retain.as_ref();
    let result = sandbox::run_retaining(
        &req.command,
        cwd.as_deref(),
        req.timeout,
        Some(forward),
        retain,
        &req.grants,
    )
    .await;
    if let Some(note) = dropped_note(&echo) {
        // The terminal may still be full: give it a moment, best effort.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        show(&echo, &note);
    }
    let end = match &result {
        Ok(out) => match out.exit_code {
            Some(code) => format!("[vigil: sandboxed run exited {code}]\n"),
            None => "[vigil: sandboxed run killed by a signal]\n".into(),
        },
        Err(e) => format!("[vigil: sandboxed run failed: {e}]\n"),
    };
    show(&echo, &end);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headlines_show_the_first_line() {
        assert_eq!(headline("ls -l"), "ls -l");
        assert_eq!(headline("echo a\necho b"), "echo a …");
        assert_eq!(headline(""), "");
    }
}
