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
//! pane's terminal so the operator still sees it there. The shell's state
//! can neither hijack the run nor be changed by it. Output, exit code,
//! timeout and cancel are those of a plain sandboxed run; the pane's run
//! lock keeps it from interleaving with another command in that pane.
//! This module never types into the pane and never runs anything on a
//! target that is not this machine.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::manager::{PaneRef, TmuxManager};
use crate::exec::{ExecError, OutputFn, RunOutcome, RunRequest, sandbox};

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

/// Writes what the run shows to the pane's terminal (best effort: a
/// terminal that went away only loses the echo).
fn pane_echo(tty: &str) -> Option<Arc<Mutex<std::fs::File>>> {
    if !tty.starts_with("/dev/") {
        return None;
    }
    let f = std::fs::OpenOptions::new().append(true).open(tty).ok()?;
    Some(Arc::new(Mutex::new(f)))
}

fn show(tty: &Option<Arc<Mutex<std::fs::File>>>, text: &str) {
    if let Some(t) = tty {
        if let Ok(mut f) = t.lock() {
            let _ = f.write_all(text.as_bytes());
        }
    }
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
    )
    .await;
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
