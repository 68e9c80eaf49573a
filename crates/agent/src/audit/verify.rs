//! Checking a session's decision record against its hash chain and its
//! head: the first entry that is not what was written is named — changed,
//! missing (deleted), out of order (swapped), cut short (truncated) — or
//! the record verifies. It reads files and never writes one.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::chain::{AUDIT_FILE, Head, genesis, hash_of, read_head_copy, read_meta_head};

/// A record that verifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub entries: u64,
    /// Which copies of the head it was checked against.
    pub heads: Vec<&'static str>,
}

/// The first thing wrong with a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Broken {
    #[error("line {line}: not an entry (expected entry {seq}): the line was edited or cut short")]
    Unreadable { line: usize, seq: u64 },
    #[error("entry {seq} (line {line}) was changed: its content does not match its hash")]
    Changed { line: usize, seq: u64 },
    #[error("entry {seq} is missing (deleted): line {line} holds entry {found}")]
    Missing { line: usize, seq: u64, found: u64 },
    #[error(
        "entries out of order at line {line}: entry {found} stands where entry {seq} belongs \
         (lines swapped or moved)"
    )]
    OutOfOrder { line: usize, seq: u64, found: u64 },
    #[error(
        "entry {seq} (line {line}) does not follow entry {before}: entry {before} was changed \
         and re-hashed, or replaced"
    )]
    Relinked { line: usize, seq: u64, before: u64 },
    #[error(
        "the record was cut short (or its last entries deleted): it ends after entry {kept} but \
         its head ({which}) says {entries} entries ({})", gone(*kept, *entries)
    )]
    Truncated {
        kept: u64,
        entries: u64,
        which: &'static str,
    },
    #[error(
        "the record does not end where its head ({which}) says: {found} entries, the head says \
         {entries} with another last hash (the chain was rewritten)"
    )]
    HeadMismatch {
        found: u64,
        entries: u64,
        which: &'static str,
    },
    #[error(
        "the record has {0} entries but no head was kept for it (meta.json and the head copy are gone)"
    )]
    NoHead(u64),
    #[error("cannot read {path}: {message}")]
    Io { path: String, message: String },
}

/// Which entries a cut record lost, in words.
fn gone(kept: u64, entries: u64) -> String {
    if kept + 1 == entries {
        format!("entry {entries} is gone")
    } else {
        format!("entries {} to {entries} are gone", kept + 1)
    }
}

/// Verify the record of session `id` in `dir` (`data_dir` holds the head
/// copy).
pub fn verify(id: &str, dir: &Path, data_dir: &Path) -> Result<Verified, Broken> {
    let path = dir.join(AUDIT_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => {
            return Err(Broken::Io {
                path: path.display().to_string(),
                message: e.to_string(),
            });
        }
    };
    let n = walk(id, &text)?;
    let heads = [
        ("meta.json", read_meta_head(dir)),
        ("the head copy", read_head_copy(data_dir, id)),
    ];
    let last = last_hash(id, &text);
    let mut checked = Vec::new();
    for (which, head) in heads {
        let Some(head) = head else { continue };
        check_head(&head, n, &last, which)?;
        checked.push(which);
    }
    if checked.is_empty() && n > 0 {
        return Err(Broken::NoHead(n));
    }
    Ok(Verified {
        entries: n,
        heads: checked,
    })
}

fn check_head(head: &Head, n: u64, last: &str, which: &'static str) -> Result<(), Broken> {
    if head.entries > n {
        return Err(Broken::Truncated {
            kept: n,
            entries: head.entries,
            which,
        });
    }
    if head.entries != n || head.hash != last {
        return Err(Broken::HeadMismatch {
            found: n,
            entries: head.entries,
            which,
        });
    }
    Ok(())
}

/// The entries' lines (blank lines count as lines: an emptied line is a
/// change).
fn lines(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.split('\n').collect();
    if v.last() == Some(&"") {
        v.pop();
    }
    v
}

fn seq_of(v: &Value) -> Option<u64> {
    v.get("seq").and_then(Value::as_u64)
}

/// Walk the chain; Ok: how many entries it holds.
fn walk(id: &str, text: &str) -> Result<u64, Broken> {
    let lines = lines(text);
    let parsed: Vec<Option<Value>> = lines.iter().map(|l| serde_json::from_str(l).ok()).collect();
    let present: HashSet<u64> = parsed.iter().flatten().filter_map(seq_of).collect();
    let mut prev = genesis(id);
    let mut expected = 1u64;
    for (i, v) in parsed.iter().enumerate() {
        let line = i + 1;
        let Some(mut v) = v.clone().filter(|v| v.is_object()) else {
            return Err(Broken::Unreadable {
                line,
                seq: expected,
            });
        };
        let seq = seq_of(&v).ok_or(Broken::Unreadable {
            line,
            seq: expected,
        })?;
        let hash = v
            .as_object_mut()
            .and_then(|o| o.remove("hash"))
            .and_then(|h| h.as_str().map(String::from))
            .unwrap_or_default();
        let own_prev = v
            .get("prev")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if hash_of(&own_prev, &v) != hash {
            return Err(Broken::Changed { line, seq });
        }
        if seq > expected && !present.contains(&expected) {
            return Err(Broken::Missing {
                line,
                seq: expected,
                found: seq,
            });
        }
        if seq != expected {
            return Err(Broken::OutOfOrder {
                line,
                seq: expected,
                found: seq,
            });
        }
        if own_prev != prev {
            return Err(Broken::Relinked {
                line,
                seq,
                before: seq - 1,
            });
        }
        prev = hash;
        expected += 1;
    }
    Ok(expected - 1)
}

/// The last entry's hash (the genesis value for an empty record).
fn last_hash(id: &str, text: &str) -> String {
    lines(text)
        .last()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|v| v.get("hash").and_then(Value::as_str).map(String::from))
        .unwrap_or_else(|| genesis(id))
}

#[cfg(test)]
mod tests {
    use super::super::chain::Chain;
    use super::*;
    use serde_json::json;

    /// A session directory with a chain of `n` entries.
    fn session(n: u64) -> (tempfile::TempDir, std::path::PathBuf) {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("sessions").join("s1");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("meta.json"), r#"{"id":"s1"}"#).unwrap();
        let mut chain = Chain::open("s1", &dir, data.path());
        for i in 0..n {
            chain
                .append(json!({"call_id": format!("c{i}"), "decision": "deny"}))
                .unwrap();
        }
        (data, dir)
    }

    fn rewrite(dir: &Path, f: impl FnOnce(&mut Vec<String>)) {
        let path = dir.join(AUDIT_FILE);
        let mut lines: Vec<String> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        f(&mut lines);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }

    #[test]
    fn no_secret_reaches_the_record_and_it_still_verifies() {
        let secret = "sk-audit-record-secret-0042";
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("s2");
        std::fs::create_dir_all(&dir).unwrap();
        let redactor = crate::redact::Redactor::new([secret.to_string()]);
        let mut chain = Chain::open("s2", &dir, data.path()).with_redactor(redactor);
        chain
            .append(json!({"action": format!("curl -H 'k: {secret}' x")}))
            .unwrap();
        let text = std::fs::read_to_string(dir.join(AUDIT_FILE)).unwrap();
        assert!(
            !text.contains(secret) && text.contains(crate::redact::MASK),
            "{text}"
        );
        assert_eq!(verify("s2", &dir, data.path()).unwrap().entries, 1);
    }

    #[test]
    fn each_kind_of_tampering_is_named_and_a_clean_record_verifies() {
        let (data, dir) = session(4);
        let ok = verify("s1", &dir, data.path()).unwrap();
        assert_eq!(ok.entries, 4);
        assert_eq!(ok.heads.len(), 2);

        rewrite(&dir, |l| l[1] = l[1].replace("deny", "allow"));
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert_eq!(e, Broken::Changed { line: 2, seq: 2 });

        let (data, dir) = session(4);
        rewrite(&dir, |l| {
            l.remove(2);
        });
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert_eq!(
            e,
            Broken::Missing {
                line: 3,
                seq: 3,
                found: 4
            }
        );

        let (data, dir) = session(4);
        rewrite(&dir, |l| l.swap(1, 2));
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert_eq!(
            e,
            Broken::OutOfOrder {
                line: 2,
                seq: 2,
                found: 3
            }
        );

        let (data, dir) = session(4);
        rewrite(&dir, |l| l.truncate(2));
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert!(
            matches!(
                e,
                Broken::Truncated {
                    kept: 2,
                    entries: 4,
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("entries 3 to 4 are gone"), "{e}");
        let (data, dir) = session(4);
        rewrite(&dir, |l| l.truncate(3));
        let e = verify("s1", &dir, data.path()).unwrap_err().to_string();
        assert!(
            e.contains("ends after entry 3") && e.contains("entry 4 is gone"),
            "{e}"
        );

        let (data, dir) = session(3);
        let path = dir.join(AUDIT_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 30]).unwrap();
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert_eq!(e, Broken::Unreadable { line: 3, seq: 3 });
    }
}
