//! [`TmuxManager`]: vigil's managed sessions and panes on a private tmux
//! server, reached through any [`Transport`].
//!
//! It creates, adopts, recreates and kills sessions and panes that carry
//! vigil's ownership options (`@vigil-owner` on sessions, `@vigil-pane` on
//! panes), canonicalises names to the owner prefix, enforces the limits,
//! and offers capture / send-keys for the tools. It must never touch a
//! session or pane it does not own, never kill the shared pane or the
//! default session, and never talk to any tmux server but its own socket.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::control::Control;
use super::script::tq;
pub use super::slot::PaneSlot;
use super::{TmuxError, TmuxOptions};
use crate::transport::{self, Transport, sh_quote};
use crate::{ExecError, RunOutcome};
use vigil_protocol::pane::MirrorTarget;

pub use super::names::{
    SHARED, canonical_pane, canonical_session, owner_prefix, random_hex, server_args,
};

/// How every tmux process on the target starts: outside any tmux the
/// caller may be in, and with `-u`. Without `-u`, a client whose locale is
/// not UTF-8 (the usual case for `ssh host cmd` and `podman exec`) gets
/// tabs and every non-ASCII character replaced by `_` in what tmux prints.
const TMUX_EXEC: &str = "unset TMUX TMUX_PANE; exec tmux -u";

/// Longest a one-off tmux process may take.
const TMUX_TIMEOUT: Duration = Duration::from_secs(10);

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A resolved managed pane.
#[derive(Clone)]
pub struct PaneRef {
    pub session: String,
    pub name: String,
    /// tmux pane id (`%N`).
    pub id: String,
    pub control: Arc<Control>,
    pub slot: Arc<PaneSlot>,
}

/// What tmux says about a pane right now.
#[derive(Debug, Clone, PartialEq)]
pub struct PaneState {
    pub in_mode: bool,
    pub alternate_on: bool,
    pub current_command: String,
    /// The pane's terminal device on the target (`/dev/pts/N`).
    pub tty: String,
    /// The cursor's column: 0 while a shell has not printed its prompt yet.
    pub cursor_x: u32,
}

const LOST: &str = "terminal state (working directory, environment, shell variables, running \
programs) was lost";

/// Managed sessions and panes on one private tmux server.
pub struct TmuxManager {
    pub(super) transport: Arc<dyn Transport>,
    pub(super) opts: TmuxOptions,
    pub(super) default_session: String,
    pub(super) secret: String,
    pub(super) dir: String,
    pub(super) controls: tokio::sync::Mutex<HashMap<String, Arc<Control>>>,
    pub(super) slots: Mutex<HashMap<(String, String), Arc<PaneSlot>>>,
    /// Sessions and panes vigil created (recreated when they vanish).
    pub(super) known_sessions: Mutex<HashSet<String>>,
    pub(super) known_panes: Mutex<HashSet<(String, String)>>,
    /// Sessions this manager created itself (removed when a local agent
    /// stops).
    pub(super) created_sessions: Mutex<HashSet<String>>,
    pub(super) shared_pane: Mutex<String>,
    pub(super) next_id: AtomicU64,
    pub(super) changes: watch::Sender<u64>,
    /// The transport's epoch the control clients were made in.
    pub(super) controls_epoch: AtomicU64,
    /// Output files on a remote target, without a process per read.
    pub(super) fetch: super::fetch::Fetcher,
    /// The default session's name, held against other vigils.
    _claim: Option<super::claim::Claim>,
    /// The local command directory, held while this agent lives.
    held: Mutex<Option<super::leftovers::Held>>,
}

impl Drop for TmuxManager {
    /// The command directory of a local target goes with the manager, on
    /// every way out (a remote one is removed by [`Self::forget_dir`] when
    /// vigil leaves). Sessions and panes stay: they are the operator's.
    fn drop(&mut self) {
        if self.transport.is_local() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

impl TmuxManager {
    /// Connect to (or start) the private server and the default session.
    pub async fn start(
        transport: Arc<dyn Transport>,
        opts: TmuxOptions,
    ) -> Result<Arc<TmuxManager>, TmuxError> {
        let prefix = owner_prefix(&opts.agent_name);
        let (default_session, claim) = match &opts.session {
            Some(s) if !s.trim().is_empty() => (canonical_session(&prefix, s), None),
            _ => super::claim::claim(&transport.label(), &opts.socket, &prefix),
        };
        let dir = super::leftovers::command_dir(transport.is_local(), &opts.socket);
        let (changes, _) = watch::channel(0u64);
        let mgr = Arc::new(TmuxManager {
            fetch: super::fetch::Fetcher::new(transport.clone()),
            controls_epoch: AtomicU64::new(transport.epoch()),
            transport,
            opts,
            default_session: default_session.clone(),
            secret: random_hex(),
            dir,
            controls: tokio::sync::Mutex::new(HashMap::new()),
            slots: Mutex::new(HashMap::new()),
            known_sessions: Mutex::new(HashSet::from([default_session.clone()])),
            known_panes: Mutex::new(HashSet::new()),
            // A claimed default session is this agent's alone (even left
            // by one killed uncleanly): it goes when this agent stops.
            created_sessions: Mutex::new(claim.iter().map(|_| default_session.clone()).collect()),
            shared_pane: Mutex::new(String::new()),
            next_id: AtomicU64::new(1),
            changes,
            _claim: claim,
            held: Mutex::new(None),
        });
        mgr.make_dir().await?;
        if mgr.transport.is_local() {
            *lock(&mgr.held) = super::leftovers::hold(std::path::Path::new(&mgr.dir));
        }
        let pane = mgr.resolve(None, None).await?;
        // Starting a new session is not news for the model.
        pane.slot.take_notes();
        if mgr.transport.is_local() {
            mgr.refuse_own_pane(&pane).await?;
        }
        Ok(mgr)
    }

    async fn make_dir(&self) -> Result<(), TmuxError> {
        let script = format!("mkdir -p -m 700 {}", sh_quote(&self.dir));
        let out = self.helper(&script, TMUX_TIMEOUT).await?;
        if out.exit_code != Some(0) {
            return Err(TmuxError::Failed(format!(
                "cannot create {}: {}",
                self.dir,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Refuse to run from inside the managed pane itself (the agent would
    /// type into its own console).
    async fn refuse_own_pane(&self, pane: &PaneRef) -> Result<(), TmuxError> {
        let (Ok(tmux), Ok(tmux_pane)) = (std::env::var("TMUX"), std::env::var("TMUX_PANE")) else {
            return Ok(());
        };
        let ours = pane
            .control
            .cmd("display -p \"#{socket_path}\"")
            .await?
            .join("");
        let theirs = tmux.split(',').next().unwrap_or_default();
        if theirs == ours && tmux_pane == pane.id {
            return Err(TmuxError::Refused(format!(
                "vigil is running inside its own managed pane ({} in session {}); start it from \
                 another terminal and attach with: {}",
                pane.id,
                pane.session,
                self.attach_command()
            )));
        }
        Ok(())
    }

    pub fn options(&self) -> &TmuxOptions {
        &self.opts
    }

    pub fn transport(&self) -> &Arc<dyn Transport> {
        &self.transport
    }

    pub fn default_session(&self) -> &str {
        &self.default_session
    }

    pub(crate) fn secret(&self) -> &str {
        &self.secret
    }

    /// The per-session directory on the target for command files.
    pub fn dir(&self) -> &str {
        &self.dir
    }

    pub(crate) fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// tmux arguments that select the private server.
    pub fn server_args(&self) -> Vec<String> {
        server_args(&self.opts.socket)
    }

    /// `tmux -L sock attach -t session`.
    pub fn attach_command(&self) -> String {
        let mut parts = vec!["tmux".to_string()];
        parts.extend(self.server_args().iter().map(|a| sh_quote(a)));
        parts.push("attach".into());
        parts.push("-t".into());
        parts.push(sh_quote(&self.default_session));
        parts.join(" ")
    }

    /// The line shown at startup.
    pub fn startup_notice(&self) -> String {
        format!(
            "commands run in tmux session {} (pane `{SHARED}`, {}); watch or take over with: {}",
            self.default_session,
            self.transport.label(),
            self.attach_command()
        )
    }

    /// The shared pane of the default session, for the console's mirror.
    pub fn mirror_target(&self) -> MirrorTarget {
        MirrorTarget {
            server_args: self.server_args(),
            pane: lock(&self.shared_pane).clone(),
        }
    }

    /// Bumped on every output of any pane in a managed session (and on
    /// layout changes); idle panes cost nothing.
    pub fn subscribe_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The mirror's view of the shared pane: `capture-pane -e -p`.
    pub async fn capture_mirror(&self) -> Result<String, TmuxError> {
        let pane = self.resolve(None, None).await?;
        let lines = pane
            .control
            .cmd(&format!("capture-pane -e -p -t {}", pane.id))
            .await?;
        Ok(lines.join("\n"))
    }

    /// Canonical managed session name.
    pub fn session_name(&self, name: Option<&str>) -> String {
        match name {
            Some(n) if !n.trim().is_empty() => {
                canonical_session(&owner_prefix(&self.opts.agent_name), n)
            }
            _ => self.default_session.clone(),
        }
    }

    pub(super) fn slot(&self, session: &str, pane: &str) -> Arc<PaneSlot> {
        lock(&self.slots)
            .entry((session.to_string(), pane.to_string()))
            .or_default()
            .clone()
    }

    /// Run a short script on the target through the transport: the
    /// transport is made ready first (a dead ssh master is re-established
    /// there, with a notice), exactly as for plain commands, and a failure
    /// of the transport itself is reported as such.
    pub(super) async fn helper(
        &self,
        script: &str,
        timeout: Duration,
    ) -> Result<RunOutcome, ExecError> {
        transport::run(&self.transport, script, None, Some(timeout), None).await
    }

    /// One tmux process through the transport (for work that cannot go
    /// through a control client: starting servers and sessions).
    pub async fn tmux(&self, args: &[&str]) -> Result<String, TmuxError> {
        let mut script = String::from(TMUX_EXEC);
        for a in self
            .server_args()
            .iter()
            .map(String::as_str)
            .chain(args.iter().copied())
        {
            script.push(' ');
            script.push_str(&sh_quote(a));
        }
        let out = self.helper(&script, TMUX_TIMEOUT).await?;
        if out.exit_code != Some(0) {
            return Err(TmuxError::Failed(format!(
                "tmux {}: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `None`: no such session; `Some("")`: a session nobody owns.
    pub(super) async fn session_owner(&self, session: &str) -> Option<String> {
        let t = format!("={session}:");
        // `show-options -q` succeeds even for a missing session.
        let out = self
            .tmux(&[
                "display-message",
                "-p",
                "-t",
                &t,
                "#{session_name}\t#{@vigil-owner}",
            ])
            .await
            .ok()?;
        let (name, owner) = out.trim_end_matches('\n').split_once('\t')?;
        (name == session).then(|| owner.to_string())
    }

    /// The control client of a managed session, creating or recreating the
    /// session when vigil owns it. Returns whether it was (re)created.
    pub(super) async fn ensure_session(
        &self,
        session: &str,
    ) -> Result<(Arc<Control>, bool), TmuxError> {
        // Make the target reachable first: a dead ssh master is
        // re-established here (with a notice), and that connection took
        // every control client with it, even those whose end has not been
        // noticed yet.
        self.transport.prepare().await?;
        let mut controls = self.controls.lock().await;
        let epoch = self.transport.epoch();
        if self.controls_epoch.swap(epoch, Ordering::SeqCst) != epoch {
            controls.clear();
        }
        if let Some(c) = controls.get(session) {
            if !c.is_closed() {
                return Ok((c.clone(), false));
            }
            controls.remove(session);
        }
        let created = match self.session_owner(session).await {
            Some(owner) if owner == self.opts.agent_name => false,
            Some(_) => {
                return Err(TmuxError::Refused(format!(
                    "tmux session {session} exists but is not managed by vigil agent `{}`",
                    self.opts.agent_name
                )));
            }
            None => {
                if !lock(&self.known_sessions).contains(session) {
                    return Err(TmuxError::Missing(format!(
                        "no managed tmux session {session} (create it with tmux-create-session)"
                    )));
                }
                self.new_session(session).await?;
                true
            }
        };
        let mut cmd_script = String::from(TMUX_EXEC);
        for a in self.server_args() {
            cmd_script.push(' ');
            cmd_script.push_str(&sh_quote(&a));
        }
        cmd_script.push_str(&format!(
            " -C attach -t {}",
            sh_quote(&format!("={session}"))
        ));
        let control = Control::start(
            self.transport.shell(&cmd_script, true),
            self.changes.clone(),
        )
        .await?;
        // The attach answers with one block of its own; make sure it is up.
        control.cmd("display -p ok").await?;
        if created {
            lock(&self.created_sessions).insert(session.to_string());
            control
                .cmd(&format!(
                    "set-option -t {session} @vigil-owner {}",
                    tq(&self.opts.agent_name)
                ))
                .await?;
        }
        controls.insert(session.to_string(), control.clone());
        Ok((control, created))
    }

    async fn new_session(&self, session: &str) -> Result<(), TmuxError> {
        let (w, h) = (self.opts.width.to_string(), self.opts.height.to_string());
        let mut args = vec![
            "new-session",
            "-d",
            "-s",
            session,
            "-n",
            SHARED,
            "-x",
            &w,
            "-y",
            &h,
        ];
        if let Some(shell) = &self.opts.shell {
            args.push(shell);
        }
        self.tmux(&args).await?;
        self.slot(session, SHARED)
            .fresh
            .store(true, Ordering::SeqCst);
        Ok(())
    }

    /// Managed panes of a session: (pane id, pane name).
    pub(super) async fn list_panes(
        &self,
        control: &Control,
        session: &str,
    ) -> Result<Vec<(String, String)>, TmuxError> {
        let lines = control
            .cmd(&format!(
                "list-panes -s -t ={session} -F \"#{{pane_id}} #{{@vigil-pane}}\""
            ))
            .await?;
        Ok(lines
            .iter()
            .filter_map(|l| {
                let (id, name) = l.split_once(' ')?;
                (!name.trim().is_empty()).then(|| (id.to_string(), name.trim().to_string()))
            })
            .collect())
    }

    pub(super) async fn new_pane(
        &self,
        control: &Control,
        session: &str,
        name: &str,
    ) -> Result<String, TmuxError> {
        let mut line = format!(
            "new-window -d -t ={session}: -n {} -P -F \"#{{pane_id}}\"",
            tq(name)
        );
        if let Some(shell) = &self.opts.shell {
            line.push(' ');
            line.push_str(&tq(shell));
        }
        let id = control.cmd(&line).await?.join("").trim().to_string();
        self.slot(session, name).fresh.store(true, Ordering::SeqCst);
        self.mark_pane(control, &id, name).await?;
        Ok(id)
    }

    async fn mark_pane(&self, control: &Control, id: &str, name: &str) -> Result<(), TmuxError> {
        let res = control
            .batch(&[
                format!("set-option -p -t {id} @vigil-pane {}", tq(name)),
                format!("select-pane -t {id} -T {}", tq(name)),
            ])
            .await;
        for r in res {
            r?;
        }
        Ok(())
    }

    /// Find (or, for the shared pane and panes vigil created, recreate) a
    /// managed pane. `None` selectors mean the default session / shared pane.
    pub async fn resolve(
        &self,
        session: Option<&str>,
        pane: Option<&str>,
    ) -> Result<PaneRef, TmuxError> {
        let session = self.session_name(session);
        let name = match pane {
            Some(p) if !p.trim().is_empty() => canonical_pane(p),
            _ => SHARED.to_string(),
        };
        let slot = self.slot(&session, &name);
        let (control, created) = self.ensure_session(&session).await?;
        let panes = self.list_panes(&control, &session).await?;
        let found = panes
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(id, _)| id.clone());
        let id = match found {
            Some(id) => id,
            None if created && name == SHARED => {
                // A brand-new session: its first pane is the shared one.
                let id = control
                    .cmd(&format!(
                        "display -p -t ={session}:{SHARED}.0 \"#{{pane_id}}\""
                    ))
                    .await?
                    .join("")
                    .trim()
                    .to_string();
                self.mark_pane(&control, &id, SHARED).await?;
                id
            }
            None => {
                let known = name == SHARED
                    || lock(&self.known_panes).contains(&(session.clone(), name.clone()));
                if !known {
                    return Err(TmuxError::Missing(format!(
                        "no managed pane `{name}` in tmux session {session} (create it with tmux-create-pane)"
                    )));
                }
                let id = self.new_pane(&control, &session, &name).await?;
                slot.dirty.store(true, Ordering::SeqCst);
                slot.note(format!(
                    "the pane `{name}` of tmux session {session} had disappeared and was recreated; its {LOST}"
                ));
                id
            }
        };
        if created {
            slot.dirty.store(true, Ordering::SeqCst);
            slot.note(format!(
                "tmux session {session} had disappeared (server or session killed) and was recreated; its {LOST}"
            ));
        }
        if !slot.seen.swap(true, Ordering::SeqCst) {
            // A shell we never talked to: confirm its prompt first.
            slot.dirty.store(true, Ordering::SeqCst);
        }
        if session == self.default_session && name == SHARED {
            *lock(&self.shared_pane) = id.clone();
        }
        Ok(PaneRef {
            session,
            name,
            id,
            control,
            slot,
        })
    }

    /// The pane's mode, screen and foreground program.
    pub async fn pane_state(&self, pane: &PaneRef) -> Result<PaneState, TmuxError> {
        let out = pane
            .control
            .cmd(&format!(
                "display -p -t {} \"#{{pane_in_mode}} #{{alternate_on}} #{{cursor_x}} #{{pane_tty}} #{{pane_current_command}}\"",
                pane.id
            ))
            .await?
            .join("");
        let mut it = out.splitn(5, ' ');
        Ok(PaneState {
            in_mode: it.next() == Some("1"),
            alternate_on: it.next() == Some("1"),
            cursor_x: it.next().and_then(|x| x.parse().ok()).unwrap_or(0),
            tty: it.next().unwrap_or_default().to_string(),
            current_command: it.next().unwrap_or_default().trim().to_string(),
        })
    }

    /// Whether a pane id still exists.
    pub async fn pane_exists(&self, pane: &PaneRef) -> bool {
        pane.control
            .cmd(&format!("display -p -t {} \"#{{pane_id}}\"", pane.id))
            .await
            .is_ok_and(|l| l.join("").trim() == pane.id)
    }
}
