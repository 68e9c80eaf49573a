//! The hash chain of a session's decision record (`audit.jsonl`): each
//! entry carries the hash of the one before (`prev`) and its own (`hash`,
//! SHA-256 over `prev` and the entry's canonical JSON), the first one
//! chained to a value derived from the session id. The chain's head (how
//! many entries, the last hash) is kept apart from the session's
//! directory, in the head store `<data_dir>/audit-heads/<id>.json`, so
//! cutting or rewriting the file shows. The head store is the only head:
//! nothing here reads a head from the session directory (its `meta.json`
//! is writable by whoever can edit the record).
//!
//! A chain continues only a record that verifies against the head store
//! ([`super::verify`]); a broken record is never extended (every append is
//! refused, and a resume refuses to start: `SessionStore::reopen`).
//!
//! It appends and hashes; it never decides what an entry says
//! ([`super::record`]) and never judges a chain itself.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The record's file in a session's directory.
pub const AUDIT_FILE: &str = "audit.jsonl";

/// How many entries the chain holds and the last one's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Head {
    pub entries: u64,
    pub hash: String,
}

/// The `prev` of a session's first entry.
pub fn genesis(session_id: &str) -> String {
    hex(&Sha256::digest(
        format!("vigil audit v1 {session_id}").as_bytes(),
    ))
}

/// The hash of an entry's `body` (every field but `hash`) chained to `prev`.
pub fn hash_of(prev: &str, body: &Value) -> String {
    let mut h = Sha256::new();
    h.update(prev.as_bytes());
    h.update(b"\n");
    h.update(canonical(body).as_bytes());
    hex(&h.finalize())
}

/// An entry's line as the writer writes it: the canonical JSON of `body`
/// (every field but `hash`) with `"hash"` added as the last key, and a
/// newline. Verify compares each line's bytes with this.
pub fn line_of(body: &Value, hash: &str) -> String {
    let mut line = canonical(body);
    line.truncate(line.len().saturating_sub(1));
    if line.len() > 1 {
        line.push(',');
    }
    line.push_str(&format!("\"hash\":\"{hash}\"}}\n"));
    line
}

/// JSON with every object's keys sorted, no whitespace.
pub fn canonical(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{}:{}", Value::String((*k).clone()), canonical(&map[*k])))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a session's head lives: the head store, outside its directory.
pub fn head_file(data_dir: &Path, session_id: &str) -> PathBuf {
    data_dir
        .join("audit-heads")
        .join(format!("{session_id}.json"))
}

/// [`head_file`], with the head store's folder made (in an existing data
/// directory only) so that appends never have to make it.
fn head_store(data_dir: &Path, session_id: &str) -> PathBuf {
    let file = head_file(data_dir, session_id);
    if let Some(folder) = file.parent() {
        // Any failure shows at the first append, which cannot write there.
        let _ = std::fs::create_dir(folder);
    }
    file
}

/// Appends entries to one session's record and keeps its head.
#[derive(Debug)]
pub struct Chain {
    session_id: String,
    dir: PathBuf,
    head_copy: PathBuf,
    head: Head,
    /// Set when the record did not verify at open: nothing is appended.
    broken: Option<super::verify::Broken>,
    /// Masks known secrets in each entry (the process-wide redactor).
    redactor: std::sync::Arc<crate::record::redact::Redactor>,
}

impl Chain {
    /// The chain of the session in `dir`, continuing the record after it
    /// verified against the head store (a resumed session), else from the
    /// start. A record that does not verify gives a chain that refuses
    /// every append ([`Chain::broken`] says why).
    pub fn open(session_id: &str, dir: &Path, data_dir: &Path) -> Chain {
        let (head, broken) = match super::verify::verify(session_id, dir, data_dir) {
            Ok(v) => (
                Head {
                    entries: v.entries,
                    hash: v.last,
                },
                None,
            ),
            Err(b) => (
                Head {
                    entries: 0,
                    hash: genesis(session_id),
                },
                Some(b),
            ),
        };
        Chain {
            session_id: session_id.to_string(),
            dir: dir.to_path_buf(),
            head_copy: head_store(data_dir, session_id),
            head,
            broken,
            redactor: crate::record::redact::current(),
        }
    }

    /// Why this chain refuses to grow (its record did not verify at open).
    pub fn broken(&self) -> Option<&super::verify::Broken> {
        self.broken.as_ref()
    }

    /// The same chain, masking what `redactor` knows.
    pub fn with_redactor(self, redactor: crate::record::redact::Redactor) -> Chain {
        Chain {
            redactor: std::sync::Arc::new(redactor),
            ..self
        }
    }

    pub fn head(&self) -> &Head {
        &self.head
    }

    /// Append `body` (an object) as the next entry, then store the head.
    pub fn append(&mut self, body: Value) -> std::io::Result<()> {
        if let Some(broken) = &self.broken {
            return Err(std::io::Error::other(format!(
                "the record is broken and is not extended: {broken}"
            )));
        }
        let Value::Object(mut map) = body else {
            return Err(std::io::Error::other("an entry must be an object"));
        };
        map.insert("seq".into(), (self.head.entries + 1).into());
        map.insert("session_id".into(), self.session_id.clone().into());
        map.insert("prev".into(), self.head.hash.clone().into());
        // No secret reaches the disk (as in every session file): the hash
        // covers the text as written.
        let body = Value::Object(map);
        let redacted = self.redactor.apply(&canonical(&body));
        let body = serde_json::from_str(&redacted).unwrap_or(body);
        let hash = hash_of(&self.head.hash, &body);
        let line = line_of(&body, &hash);
        let path = self.dir.join(AUDIT_FILE);
        let mut f = open_append(&path)?;
        f.write_all(line.as_bytes())?;
        self.head = Head {
            entries: self.head.entries + 1,
            hash,
        };
        self.store_head()
    }

    fn store_head(&self) -> std::io::Result<()> {
        let head = serde_json::to_value(&self.head).map_err(std::io::Error::other)?;
        // The head store's folder is made when the chain opens, never here:
        // a data directory removed under a running agent (or being removed)
        // is not made again by its record; the write fails instead.
        write_atomic(&self.head_copy, &head.to_string())
    }
}

/// The head the head store keeps for a session, if any.
pub fn read_head_copy(data_dir: &Path, session_id: &str) -> Option<Head> {
    let text = std::fs::read_to_string(head_file(data_dir, session_id)).ok()?;
    serde_json::from_str(&text).ok()
}

fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    {
        let mut o = std::fs::OpenOptions::new();
        o.create(true).write(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
        let mut f = o.open(&tmp)?;
        f.write_all(text.as_bytes())?;
    }
    std::fs::rename(tmp, path)
}
