//! Session files: every event and every conversation message of a session,
//! appended as JSON lines the moment they happen, under
//! `<data_dir>/sessions/<id>/` (`events.jsonl`, `messages.jsonl`,
//! `meta.json`, and the `spill/` directory for full tool outputs).
//!
//! Live output deltas ([`AgentEvent::ToolOutput`]) are not recorded: they
//! are a best-effort view, and a tool's output is recorded once, as its
//! result (head and tail) in `messages.jsonl` and the exact bytes in `spill/`,
//! so `events.jsonl` never grows with a command's output.
//!
//! Each line is written with one `write` call on an append-only file, so a
//! `kill -9` loses at most the line being written. Files are created mode
//! 0600 (directories 0700), and every line passes the [`Redactor`] first: no
//! API key ever reaches the disk. This module also lists and prunes
//! sessions; reading a session back for resume lives in
//! [`crate::record::restore`]. It never talks to the model or the console.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::types::ChatMessage;
use crate::record::redact::Redactor;
use vigil_protocol::AgentEvent;
use vigil_tools::envelope::unix_millis;

pub const EVENTS_FILE: &str = "events.jsonl";
pub const MESSAGES_FILE: &str = "messages.jsonl";
pub const META_FILE: &str = "meta.json";

/// Why a session could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no session {0} (see `vigil sessions`)")]
    NotFound(String),
    #[error("no sessions recorded yet")]
    NoneYet,
    #[error("bad session file {path}: {message}")]
    Bad { path: PathBuf, message: String },
    #[error(
        "session {id} cannot be resumed: its decision record does not verify ({broken}); \
         vigil never extends a broken record (see `vigil audit verify {id}`; start a new session)"
    )]
    RecordBroken {
        id: String,
        broken: crate::record::audit::verify::Broken,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SessionError + '_ {
    move |source| SessionError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What `meta.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMeta {
    pub id: String,
    pub started_ms: u64,
    pub model: String,
    pub target: String,
    /// How the session was started, so `vigil resume` starts it the same
    /// way (absent in sessions recorded before vigil kept it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launch>,
}

/// The model and the target a session was started with: what `vigil
/// resume` uses unless the command line or the environment says otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// The model name sent in requests (None: the demo's scripted model).
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub base_url: Option<String>,
    /// The built-in scripted demo model.
    #[serde(default)]
    pub demo: bool,
    /// `user@host[:port]` of an SSH target.
    #[serde(default)]
    pub ssh: Option<String>,
    /// The container's name, for a container target.
    #[serde(default)]
    pub container: Option<String>,
    /// `[tmux] mode`: "auto", "on" or "off".
    #[serde(default)]
    pub tmux: Option<String>,
}

/// One line of `events.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventLine {
    pub at_ms: u64,
    pub event: AgentEvent,
}

/// One line of `messages.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageLine {
    pub at_ms: u64,
    pub message: ChatMessage,
}

impl Launch {
    /// How a session started from `config` is recorded (`demo`: the
    /// built-in scripted model).
    pub fn of(config: &vigil_config::Config, demo: bool) -> Launch {
        use vigil_config::TmuxMode;
        Launch {
            model: (!demo).then(|| config.model.model.clone()),
            base_url: (!demo).then(|| config.model.base_url.clone()),
            demo,
            ssh: config.ssh.target.clone(),
            container: config.container.name.clone(),
            tmux: Some(
                match config.tmux.mode {
                    TmuxMode::Auto => "auto",
                    TmuxMode::On => "on",
                    TmuxMode::Off => "off",
                }
                .to_string(),
            ),
        }
    }
}

/// Where sessions live: `<data_dir>/sessions`.
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
}

/// The appending end of one session.
#[derive(Debug)]
pub struct SessionWriter {
    id: String,
    dir: PathBuf,
    events: Mutex<File>,
    messages: Mutex<File>,
    redactor: Redactor,
}

/// A line of `vigil sessions`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionInfo {
    pub id: String,
    pub started_ms: u64,
    pub model: String,
    pub turns: usize,
    pub last_message: String,
}

fn now_ms() -> u64 {
    unix_millis() as u64
}

impl SessionStore {
    pub fn new(data_dir: &Path) -> Self {
        SessionStore {
            root: data_dir.join("sessions"),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn dir_of(&self, id: &str) -> PathBuf {
        self.root.join(id)
    }

    /// A new session with a fresh id (`<unix millis>-<pid>`).
    pub fn create(
        &self,
        model: &str,
        target: &str,
        redactor: Redactor,
    ) -> Result<SessionWriter, SessionError> {
        self.create_with(model, target, None, redactor)
    }

    /// [`SessionStore::create`], recording how the session was started.
    pub fn create_with(
        &self,
        model: &str,
        target: &str,
        launch: Option<Launch>,
        redactor: Redactor,
    ) -> Result<SessionWriter, SessionError> {
        let started_ms = now_ms();
        let id = format!("{started_ms}-{}", std::process::id());
        let dir = self.dir_of(&id);
        make_private_dir(&self.root)?;
        make_private_dir(&dir)?;
        let meta = SessionMeta {
            id: id.clone(),
            started_ms,
            model: model.to_string(),
            target: target.to_string(),
            launch,
        };
        let path = dir.join(META_FILE);
        let text = serde_json::to_string_pretty(&meta).unwrap_or_default();
        let mut f = open_private(&path, false)?;
        f.write_all(redactor.apply(&text).as_bytes())
            .map_err(io(&path))?;
        SessionWriter::open(id, dir, redactor)
    }

    /// A session's `meta.json`.
    pub fn meta(&self, id: &str) -> Result<SessionMeta, SessionError> {
        let path = self.dir_of(id).join(META_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(id.to_string()));
            }
            Err(e) => return Err(io(&path)(e)),
        };
        serde_json::from_str(&text).map_err(|e| SessionError::Bad {
            path,
            message: e.to_string(),
        })
    }

    /// Re-open an existing session for appending: only when its decision
    /// record verifies against the head store (a broken record is never
    /// extended, docs/audit.md).
    pub fn reopen(&self, id: &str, redactor: Redactor) -> Result<SessionWriter, SessionError> {
        let dir = self.dir_of(id);
        if !dir.join(META_FILE).exists() {
            return Err(SessionError::NotFound(id.to_string()));
        }
        let data_dir = self.root.parent().unwrap_or(&self.root);
        crate::record::audit::verify::verify(id, &dir, data_dir).map_err(|broken| {
            SessionError::RecordBroken {
                id: id.to_string(),
                broken,
            }
        })?;
        SessionWriter::open(id.to_string(), dir, redactor)
    }

    /// The most recently started session's id.
    pub fn latest(&self) -> Result<String, SessionError> {
        self.metas()?
            .pop()
            .map(|(_, m)| m.id)
            .ok_or(SessionError::NoneYet)
    }

    /// Every readable session with its turns and last message, oldest
    /// first (reads each session's events: for the `sessions` list only).
    pub fn list(&self) -> Result<Vec<SessionInfo>, SessionError> {
        Ok(self
            .metas()?
            .into_iter()
            .map(|(dir, meta)| info(&dir, meta))
            .collect())
    }

    /// Every readable session's folder and metadata, oldest first: one
    /// small file per session, so starting vigil (which prunes) never reads
    /// old records.
    fn metas(&self) -> Result<Vec<(PathBuf, SessionMeta)>, SessionError> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&self.root)(e)),
        };
        let mut out: Vec<(PathBuf, SessionMeta)> = entries
            .flatten()
            .filter_map(|e| {
                let text = std::fs::read_to_string(e.path().join(META_FILE)).ok()?;
                Some((e.path(), serde_json::from_str(&text).ok()?))
            })
            .collect();
        out.sort_by_key(|(_, m)| (m.started_ms, m.id.clone()));
        Ok(out)
    }

    /// Delete sessions older than `max_age` and all but the newest `keep`;
    /// `except` is never deleted. Returns how many were removed.
    pub fn prune(&self, max_age: Option<Duration>, keep: usize, except: &str) -> usize {
        let Ok(list) = self.metas() else { return 0 };
        let now = now_ms();
        let total = list.len();
        let mut removed = 0;
        for (i, (_, s)) in list.iter().enumerate() {
            let too_old = max_age
                .is_some_and(|age| now.saturating_sub(s.started_ms) > age.as_millis() as u64);
            let too_many = total - i > keep;
            if s.id != except
                && (too_old || too_many)
                && std::fs::remove_dir_all(self.dir_of(&s.id)).is_ok()
            {
                removed += 1;
            }
        }
        removed
    }
}

/// A session's line in the `sessions` list: its turns and last message,
/// from its events.
fn info(dir: &Path, meta: SessionMeta) -> SessionInfo {
    let mut turns = 0;
    let mut last_message = String::new();
    for line in read_lines::<EventLine>(&dir.join(EVENTS_FILE)) {
        match line.event {
            AgentEvent::TurnStarted { user } => {
                turns += 1;
                last_message = format!("you: {user}");
            }
            AgentEvent::AssistantMessage { text } if !text.trim().is_empty() => {
                last_message = text;
            }
            _ => {}
        }
    }
    SessionInfo {
        id: meta.id,
        started_ms: meta.started_ms,
        model: meta.model,
        turns,
        last_message,
    }
}

impl SessionWriter {
    fn open(id: String, dir: PathBuf, redactor: Redactor) -> Result<SessionWriter, SessionError> {
        let events = open_private(&dir.join(EVENTS_FILE), true)?;
        let messages = open_private(&dir.join(MESSAGES_FILE), true)?;
        Ok(SessionWriter {
            id,
            dir,
            events: Mutex::new(events),
            messages: Mutex::new(messages),
            redactor,
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn spill_dir(&self) -> PathBuf {
        self.dir.join("spill")
    }

    /// Append one event (one write, no buffering).
    pub fn record_event(&self, event: &AgentEvent) {
        let line = EventLine {
            at_ms: now_ms(),
            event: event.clone(),
        };
        self.append(&self.events, &line, EVENTS_FILE);
    }

    /// Append one conversation message.
    pub fn record_message(&self, message: &ChatMessage) {
        let line = MessageLine {
            at_ms: now_ms(),
            message: message.clone(),
        };
        self.append(&self.messages, &line, MESSAGES_FILE);
    }

    fn append<T: Serialize>(&self, file: &Mutex<File>, value: &T, name: &str) {
        let Ok(text) = serde_json::to_string(value) else {
            return;
        };
        let mut line = self.redactor.apply(&text);
        line.push('\n');
        let mut f = file.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = f.write_all(line.as_bytes()) {
            tracing::warn!("cannot append to session file {name}: {e}");
        }
    }
}

/// Record every event but live deltas in the session (when there is one),
/// an operator's resolution naming the console that answered, then pass it
/// on. Runs until every sender is gone.
pub async fn tee(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<AgentEvent>,
    writer: Option<std::sync::Arc<SessionWriter>>,
    tx: tokio::sync::mpsc::UnboundedSender<AgentEvent>,
    answers: std::sync::Arc<crate::record::answers::AnswerBook>,
) {
    while let Some(mut event) = rx.recv().await {
        answers.stamp(&mut event);
        if let Some(w) = writer.as_ref().filter(|_| recorded(&event)) {
            w.record_event(&event);
        }
        // A gone receiver (console quit) must not stop the recording.
        let _ = tx.send(event);
    }
}

/// Whether `event` goes to `events.jsonl`: live deltas do not (the
/// result and the spill file hold a command's output, the assistant's
/// message its streamed text).
fn recorded(event: &AgentEvent) -> bool {
    !matches!(
        event,
        AgentEvent::ToolOutput { .. } | AgentEvent::AssistantDelta { .. }
    )
}

/// Every line of a JSON-lines file that parses (a torn last line is skipped).
pub fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Vec<T> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn make_private_dir(dir: &Path) -> Result<(), SessionError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    }
    Ok(())
}

fn open_private(path: &Path, append: bool) -> Result<File, SessionError> {
    let mut opts = OpenOptions::new();
    if append {
        opts.append(true).create(true);
    } else {
        opts.write(true).create(true).truncate(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_private_redacted_lines_and_lists_them() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        let w = store
            .create("m", "local", Redactor::new(vec!["sk-planted".into()]))
            .unwrap();
        w.record_event(&AgentEvent::TurnStarted {
            user: "use sk-planted please".into(),
        });
        w.record_event(&AgentEvent::AssistantMessage {
            text: "done".into(),
        });
        w.record_message(&ChatMessage::user("hi"));
        let text = std::fs::read_to_string(w.dir().join(EVENTS_FILE)).unwrap();
        assert!(!text.contains("sk-planted") && text.contains("<redacted>"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(w.dir().join(EVENTS_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let list = store.list().unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].turns, 1);
        assert_eq!(list[0].last_message, "done");
        assert_eq!(store.latest().unwrap(), w.id());
    }

    #[test]
    fn prune_keeps_the_newest_and_the_current() {
        let tmp = tempfile::tempdir().unwrap();
        let store = SessionStore::new(tmp.path());
        for i in 0..4u64 {
            let id = format!("{i}-1");
            let dir = store.dir_of(&id);
            std::fs::create_dir_all(&dir).unwrap();
            let meta = SessionMeta {
                id,
                started_ms: i,
                model: "m".into(),
                target: "t".into(),
                launch: None,
            };
            std::fs::write(dir.join(META_FILE), serde_json::to_string(&meta).unwrap()).unwrap();
        }
        assert_eq!(store.prune(None, 2, "0-1"), 1);
        let ids: Vec<_> = store.list().unwrap().into_iter().map(|s| s.id).collect();
        assert_eq!(ids, vec!["0-1", "2-1", "3-1"]);
        assert_eq!(store.prune(Some(Duration::from_secs(1)), 100, "3-1"), 2);
    }

    #[test]
    fn torn_last_line_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("x.jsonl");
        std::fs::write(
            &p,
            "{\"at_ms\":1,\"message\":{\"role\":\"user\",\"content\":\"a\"}}\n{\"at_ms\":2,\"mes",
        )
        .unwrap();
        let lines: Vec<MessageLine> = read_lines(&p);
        assert_eq!(lines.len(), 1);
    }
}
