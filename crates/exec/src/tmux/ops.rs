//! The operations the tmux tools need on [`TmuxManager`]: creating and
//! killing managed sessions and panes (ownership, limits, protection),
//! capture, send-keys, and out-of-band file access on the target.
//!
//! Kept apart from session bookkeeping in [`super::manager`]. Nothing here
//! may act on a session or pane vigil does not own, kill the default session
//! or the shared pane, or talk to a server other than vigil's own.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::TmuxError;
use super::control::Control;
use super::manager::{SHARED, TmuxManager, canonical_pane, lock};
use super::script::tq;
use crate::transport::sh_quote;
use vigil_protocol::pane::PaneKey;

/// Longest a helper process on the target may take.
const HELPER_TIMEOUT: Duration = Duration::from_secs(10);

impl TmuxManager {
    /// Managed sessions owned by this agent.
    pub async fn managed_sessions(&self) -> Result<Vec<String>, TmuxError> {
        let out = self
            .tmux(&["list-sessions", "-F", "#{session_name} #{@vigil-owner}"])
            .await
            .unwrap_or_default();
        Ok(out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, o)| *o == self.opts.agent_name)
            .map(|(s, _)| s.to_string())
            .collect())
    }

    /// On exit, when the operator chose so: kill every session this agent
    /// owns on its server (the default one included) and remove the
    /// command directory. Sessions of other owners are never touched.
    /// Returns the sessions killed.
    pub async fn remove_all(&self) -> Result<Vec<String>, TmuxError> {
        let sessions = self.managed_sessions().await?;
        self.controls.lock().await.clear();
        lock(&self.known_sessions).clear();
        for s in &sessions {
            self.tmux(&["kill-session", "-t", &format!("={s}")]).await?;
        }
        self.forget_dir().await;
        Ok(sessions)
    }

    /// On a local stop: kill the sessions this agent created (never one it
    /// found, nor another agent's), then remove the command directory.
    /// tmux ends the private server with its last session.
    pub async fn remove_created(&self) {
        let created: Vec<String> = lock(&self.created_sessions).drain().collect();
        self.controls.lock().await.clear();
        lock(&self.known_sessions).clear();
        for s in &created {
            let _ = self.tmux(&["kill-session", "-t", &format!("={s}")]).await;
        }
        self.forget_dir().await;
    }

    /// Remove the command directory on the target (best effort).
    pub async fn forget_dir(&self) {
        let _ = self
            .helper(&format!("rm -rf {}", sh_quote(&self.dir)), HELPER_TIMEOUT)
            .await;
    }

    /// Create or reuse a managed session (with its shared pane).
    pub async fn create_session(&self, name: &str) -> Result<String, TmuxError> {
        let session = self.session_name(Some(name));
        let existing = self.managed_sessions().await?;
        if existing.contains(&session) {
            self.resolve(Some(&session), None).await?;
            return Ok(format!(
                "reused managed tmux session {session} (pane `{SHARED}` ready)"
            ));
        }
        if existing.len() >= self.opts.max_sessions {
            return Err(TmuxError::Refused(format!(
                "limit reached: {} managed tmux sessions (max_sessions = {}); kill one first",
                existing.len(),
                self.opts.max_sessions
            )));
        }
        lock(&self.known_sessions).insert(session.clone());
        let pane = self.resolve(Some(&session), None).await?;
        pane.slot.take_notes();
        Ok(format!(
            "created managed tmux session {session} with pane `{SHARED}` ({})",
            pane.id
        ))
    }

    /// Kill a managed session other than the default one.
    pub async fn kill_session(&self, name: &str) -> Result<String, TmuxError> {
        let session = self.session_name(Some(name));
        if session == self.default_session {
            return Err(TmuxError::Refused(format!(
                "{session} is the default shared session and cannot be killed"
            )));
        }
        match self.session_owner(&session).await {
            None => {
                return Err(TmuxError::Missing(format!("no tmux session {session}")));
            }
            Some(o) if o != self.opts.agent_name => {
                return Err(TmuxError::Refused(format!(
                    "tmux session {session} is not managed by vigil agent `{}`",
                    self.opts.agent_name
                )));
            }
            Some(_) => {}
        }
        lock(&self.known_sessions).remove(&session);
        lock(&self.known_panes).retain(|(s, _)| *s != session);
        self.controls.lock().await.remove(&session);
        self.tmux(&["kill-session", "-t", &format!("={session}")])
            .await?;
        Ok(format!("killed managed tmux session {session}"))
    }

    /// Create or reuse a managed pane (a window of its own) in a session.
    pub async fn create_pane(
        &self,
        session: Option<&str>,
        name: &str,
    ) -> Result<String, TmuxError> {
        let session = self.session_name(session);
        let name = canonical_pane(name);
        let (control, _) = self.ensure_session(&session).await?;
        let panes = self.list_panes(&control, &session).await?;
        if let Some((id, _)) = panes.iter().find(|(_, n)| *n == name) {
            return Ok(format!(
                "reused managed pane `{name}` ({id}) in tmux session {session}"
            ));
        }
        if name == SHARED {
            let p = self.resolve(Some(&session), None).await?;
            return Ok(format!(
                "managed pane `{SHARED}` ({}) in tmux session {session} is ready",
                p.id
            ));
        }
        if panes.len() >= self.opts.max_panes {
            return Err(TmuxError::Refused(format!(
                "limit reached: {} managed panes in tmux session {session} (max_panes = {}); kill one first",
                panes.len(),
                self.opts.max_panes
            )));
        }
        let id = self.new_pane(&control, &session, &name).await?;
        lock(&self.known_panes).insert((session.clone(), name.clone()));
        self.slot(&session, &name)
            .dirty
            .store(true, Ordering::SeqCst);
        Ok(format!(
            "created managed pane `{name}` ({id}) in tmux session {session}"
        ))
    }

    /// Kill a managed pane other than the shared one.
    pub async fn kill_pane(&self, session: Option<&str>, name: &str) -> Result<String, TmuxError> {
        let session = self.session_name(session);
        let name = canonical_pane(name);
        if name == SHARED {
            return Err(TmuxError::Refused(
                "the shared pane is protected and cannot be killed".into(),
            ));
        }
        let (control, _) = self.ensure_session(&session).await?;
        let panes = self.list_panes(&control, &session).await?;
        let Some((id, _)) = panes.iter().find(|(_, n)| *n == name) else {
            return Err(TmuxError::Missing(format!(
                "no managed pane `{name}` in tmux session {session} (unmanaged panes are never killed)"
            )));
        };
        lock(&self.known_panes).remove(&(session.clone(), name.clone()));
        control.cmd(&format!("kill-pane -t {id}")).await?;
        Ok(format!(
            "killed managed pane `{name}` ({id}) in tmux session {session}"
        ))
    }

    /// Run `capture-pane -p` with extra flags on a pane id or raw target.
    pub async fn capture(&self, target: &str, flags: &[String]) -> Result<String, TmuxError> {
        let control = self.any_control().await?;
        let mut line = format!("capture-pane -p -t {}", tq(target));
        for f in flags {
            line.push(' ');
            line.push_str(&tq(f));
        }
        Ok(control.cmd(&line).await?.join("\n"))
    }

    /// Whether a pane (id or raw target) is on its alternate screen.
    pub async fn alternate_on(&self, target: &str) -> Result<bool, TmuxError> {
        let control = self.any_control().await?;
        let out = control
            .cmd(&format!(
                "display -p -t {} \"#{{alternate_on}}\"",
                tq(target)
            ))
            .await?;
        Ok(out.join("").trim() == "1")
    }

    /// Type literal text, then key names, then Enter.
    pub async fn send_keys(
        &self,
        target: &str,
        literal: Option<&str>,
        keys: &[String],
        enter: bool,
    ) -> Result<(), TmuxError> {
        let control = self.any_control().await?;
        let mut lines = Vec::new();
        if let Some(text) = literal.filter(|t| !t.is_empty()) {
            lines.push(format!("send-keys -t {} -l -- {}", tq(target), tq(text)));
        }
        for k in keys {
            lines.push(format!("send-keys -t {} {}", tq(target), tq(k)));
        }
        if enter {
            lines.push(format!("send-keys -t {} Enter", tq(target)));
        }
        // Keys may leave a shell at a continuation prompt (`echo "open`),
        // where the next command would be swallowed: every managed pane's
        // next run confirms its prompt first (one probe; the target string
        // can name a pane many ways, so all are marked).
        for slot in lock(&self.slots).values() {
            slot.typed.store(true, Ordering::SeqCst);
        }
        for r in control.batch(&lines).await {
            r?;
        }
        Ok(())
    }

    /// The operator's key passthrough from the console: type `keys` into
    /// the shared pane, in order, in one batch. Literal text goes with
    /// `send-keys -l`; key names must pass [`PaneKey::valid_key_name`]. The
    /// pane is marked dirty so the agent's next command first confirms the
    /// shell is back at its prompt (the operator may have left a half-typed
    /// line or started a program).
    pub async fn send_operator_keys(&self, keys: &[PaneKey]) -> Result<(), TmuxError> {
        if keys.is_empty() {
            return Ok(());
        }
        let pane = self.resolve(None, None).await?;
        let mut lines = Vec::with_capacity(keys.len());
        for k in keys {
            match k {
                PaneKey::Text(t) if t.is_empty() => {}
                PaneKey::Text(t) => {
                    lines.push(format!("send-keys -t {} -l -- {}", pane.id, tq(t)));
                }
                PaneKey::Key(name) if PaneKey::valid_key_name(name) => {
                    lines.push(format!("send-keys -t {} {}", pane.id, tq(name)));
                }
                PaneKey::Key(name) => {
                    return Err(TmuxError::Failed(format!("not a tmux key name: {name:?}")));
                }
            }
        }
        pane.slot.dirty.store(true, Ordering::SeqCst);
        for r in pane.control.batch(&lines).await {
            r?;
        }
        Ok(())
    }

    /// The default session's control client (recreating it if needed).
    async fn any_control(&self) -> Result<Arc<Control>, TmuxError> {
        Ok(self.resolve(None, None).await?.control)
    }

    /// Read a file on the target from `offset` to its current end.
    pub async fn read_from(&self, path: &str, offset: u64) -> Vec<u8> {
        if self.transport.is_local() {
            use tokio::io::{AsyncReadExt, AsyncSeekExt};
            let Ok(mut f) = tokio::fs::File::open(path).await else {
                return Vec::new();
            };
            if f.seek(std::io::SeekFrom::Start(offset)).await.is_err() {
                return Vec::new();
            }
            let mut buf = Vec::new();
            let _ = f.read_to_end(&mut buf).await;
            return buf;
        }
        if let Some(bytes) = self.fetch.read_from(path, offset).await {
            return bytes;
        }
        let script = format!("tail -c +{} {} 2>/dev/null", offset + 1, sh_quote(path));
        self.helper(&script, HELPER_TIMEOUT)
            .await
            .map(|o| o.stdout)
            .unwrap_or_default()
    }

    /// Create `path` on the target if nobody has (`O_EXCL`); true when this
    /// call created it.
    pub async fn claim(&self, path: &str) -> bool {
        if self.transport.is_local() {
            return std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
                .is_ok();
        }
        let script = format!(
            "( set -C; : >{} ) 2>/dev/null && echo claimed",
            sh_quote(path)
        );
        self.helper(&script, HELPER_TIMEOUT)
            .await
            .is_ok_and(|o| o.stdout.starts_with(b"claimed"))
    }

    /// Remove files on the target (best effort).
    pub async fn remove(&self, paths: &[String]) {
        if self.transport.is_local() {
            for p in paths {
                let _ = tokio::fs::remove_file(p).await;
            }
            return;
        }
        if self.fetch.remove(paths).await {
            return;
        }
        let mut script = String::from("rm -f");
        for p in paths {
            script.push(' ');
            script.push_str(&sh_quote(p));
        }
        let _ = self.helper(&script, HELPER_TIMEOUT).await;
    }

    /// Make FIFOs ahead of the command when the target is this machine
    /// (the wrapper makes them itself elsewhere).
    pub fn prepare_fifos(&self, paths: &[String]) {
        if !self.transport.is_local() {
            return;
        }
        for p in paths {
            if let Ok(c) = std::ffi::CString::new(p.as_str()) {
                // SAFETY: `c` is a valid NUL-terminated path for mkfifo(3).
                unsafe {
                    libc::mkfifo(c.as_ptr(), 0o600);
                }
            }
        }
    }
}
