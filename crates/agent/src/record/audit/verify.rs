//! Checking a session's decision record against its hash chain and the
//! head store (`<data dir>/audit-heads/<id>.json`, the only head it
//! trusts; a head in the session's own `meta.json` is never read): the
//! first entry that is not what was written is named — changed, missing
//! (deleted), out of order (swapped), cut short (truncated), a key given
//! twice, a line not in the writer's canonical form — or the record
//! verifies. Every line must be byte for byte what the writer writes for
//! the entry it holds, so no line can read one way here and another way
//! to a log store. It reads files and never writes one.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use super::chain::{AUDIT_FILE, Head, genesis, hash_of, line_of, read_head_copy};
use super::strict::duplicate_key;

/// What the head store is called in what verify says.
pub const HEAD_STORE: &str = "the head store";

/// A record that verifies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub entries: u64,
    /// The last entry's hash (the genesis value for an empty record).
    pub last: String,
    /// Which head it was checked against (none for an empty record).
    pub heads: Vec<&'static str>,
}

/// The first thing wrong with a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Broken {
    #[error("line {line}: not an entry (expected entry {seq}): the line was edited or cut short")]
    Unreadable { line: usize, seq: u64 },
    #[error(
        "line {line} (expected entry {seq}) gives the key `{key}` twice: a reader that keeps \
         the first and one that keeps the last read different entries"
    )]
    DuplicateKey { line: usize, seq: u64, key: String },
    #[error("entry {seq} (line {line}) was changed: its content does not match its hash")]
    Changed { line: usize, seq: u64 },
    #[error(
        "entry {seq} (line {line}) is not written as vigil writes it (key order, spacing, \
         escapes or numbers were changed): the line was edited"
    )]
    NotCanonical { line: usize, seq: u64 },
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
        "the record has {0} entries but the head store has no head for it (its head file in \
         audit-heads/ is gone)"
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

/// The record's text as it is on disk now (empty when there is none yet).
pub fn read_record(dir: &Path) -> Result<String, Broken> {
    let path = dir.join(AUDIT_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| Broken::Io {
            path: path.display().to_string(),
            message: "not UTF-8: the file was edited".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Broken::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        }),
    }
}

/// Verify the record of session `id` in `dir` against the head store in
/// `data_dir`.
pub fn verify(id: &str, dir: &Path, data_dir: &Path) -> Result<Verified, Broken> {
    let text = read_record(dir)?;
    verify_text(id, &text, data_dir)
}

/// Verify `text`, a record of session `id`, against the head store in
/// `data_dir` (what `vigil audit export` prints is this very text).
pub fn verify_text(id: &str, text: &str, data_dir: &Path) -> Result<Verified, Broken> {
    let (n, last) = walk(id, text)?;
    let Some(head) = read_head_copy(data_dir, id) else {
        if n > 0 {
            return Err(Broken::NoHead(n));
        }
        return Ok(Verified {
            entries: 0,
            last,
            heads: Vec::new(),
        });
    };
    check_head(&head, n, &last, HEAD_STORE)?;
    Ok(Verified {
        entries: n,
        last,
        heads: vec![HEAD_STORE],
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
/// change), each without its newline. A last line without a newline is
/// kept as it is (and fails the canonical check: the writer ends every
/// line).
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

/// Walk the chain; Ok: how many entries it holds and the last hash.
fn walk(id: &str, text: &str) -> Result<(u64, String), Broken> {
    let lines = lines(text);
    let ends_cleanly = text.is_empty() || text.ends_with('\n');
    let parsed: Vec<Option<Value>> = lines.iter().map(|l| serde_json::from_str(l).ok()).collect();
    let present: HashSet<u64> = parsed.iter().flatten().filter_map(seq_of).collect();
    let mut prev = genesis(id);
    let mut expected = 1u64;
    for (i, v) in parsed.iter().enumerate() {
        let line = i + 1;
        if let Some(key) = duplicate_key(lines[i]) {
            return Err(Broken::DuplicateKey {
                line,
                seq: expected,
                key,
            });
        }
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
        let last_line = i + 1 == lines.len();
        let written = line_of(&v, &hash);
        if written.strip_suffix('\n') != Some(lines[i]) || (last_line && !ends_cleanly) {
            return Err(Broken::NotCanonical { line, seq });
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
    Ok((expected - 1, prev))
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
                .append(json!({"approved": false, "call_id": format!("c{i}"), "decision": "deny"}))
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
    fn a_head_store_removed_under_a_running_chain_is_not_made_again() {
        let (data, dir) = session(1);
        let mut chain = Chain::open("s1", &dir, data.path());
        let heads = data.path().join("audit-heads");
        std::fs::remove_dir_all(&heads).unwrap();
        let appended = chain.append(json!({"decision": "deny"}));
        assert!(appended.is_err(), "the head cannot be kept: {appended:?}");
        assert!(!heads.exists(), "the head store was made again");
    }

    #[test]
    fn no_secret_reaches_the_record_and_it_still_verifies() {
        let secret = "sk-audit-record-secret-0042";
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("s2");
        std::fs::create_dir_all(&dir).unwrap();
        let redactor = crate::record::redact::Redactor::new([secret.to_string()]);
        let mut chain = Chain::open("s2", &dir, data.path()).with_redactor(redactor);
        chain
            .append(json!({"action": format!("curl -H 'k: {secret}' x")}))
            .unwrap();
        let text = std::fs::read_to_string(dir.join(AUDIT_FILE)).unwrap();
        assert!(
            !text.contains(secret) && text.contains(crate::record::redact::MASK),
            "{text}"
        );
        assert_eq!(verify("s2", &dir, data.path()).unwrap().entries, 1);
    }

    #[test]
    fn each_kind_of_tampering_is_named_and_a_clean_record_verifies() {
        let (data, dir) = session(4);
        let ok = verify("s1", &dir, data.path()).unwrap();
        assert_eq!(ok.entries, 4);
        assert_eq!(ok.heads, [HEAD_STORE]);

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

    /// Re-chain `lines` from the start, as someone who read the writer
    /// would: every entry re-hashed, `seq` and `prev` rewritten.
    fn rechain(id: &str, lines: &[String]) -> (Vec<String>, Head) {
        let mut prev = genesis(id);
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            let mut v: Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("hash");
            o.insert("seq".into(), json!(i as u64 + 1));
            o.insert("prev".into(), json!(prev));
            let hash = hash_of(&prev, &v);
            out.push(line_of(&v, &hash).trim_end().to_string());
            prev = hash;
        }
        let head = Head {
            entries: out.len() as u64,
            hash: prev,
        };
        (out, head)
    }

    #[test]
    fn a_line_that_reads_two_ways_or_is_not_written_as_the_writer_writes_fails() {
        // The same key twice, the added one first: serde_json keeps the
        // last (the hash still matches), a first-wins reader sees `true`.
        let (data, dir) = session(3);
        rewrite(&dir, |l| {
            l[1] = l[1].replacen('{', "{\"approved\":true,", 1)
        });
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert!(
            matches!(&e, Broken::DuplicateKey { line: 2, key, .. } if key == "approved"),
            "{e}"
        );
        // …and twice at the end.
        let (data, dir) = session(3);
        rewrite(&dir, |l| {
            l[0] = l[0].replacen(
                "\"decision\":\"deny\"",
                "\"decision\":\"deny\",\"decision\":\"deny\"",
                1,
            )
        });
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert!(matches!(e, Broken::DuplicateKey { line: 1, .. }), "{e}");

        // Same values, other bytes: spacing, an escape, key order, a
        // number's form, a missing last newline. Each keeps the hash.
        type Change = fn(&str) -> String;
        let cases: [(&str, Change); 4] = [
            ("a space", |l| l.replacen(":", ": ", 1)),
            ("an escape", |l| l.replacen("\"deny\"", "\"\\u0064eny\"", 1)),
            ("key order", |l| {
                let body = l.strip_prefix('{').unwrap();
                let (first, rest) = body.split_once(',').unwrap();
                format!("{{{},{first}}}", rest.trim_end_matches('}'))
            }),
            ("the hash first", |l| {
                let (body, hash) = l.rsplit_once(",\"hash\":").unwrap();
                format!("{{\"hash\":{},{}", hash.trim_end_matches('}'), &body[1..]) + "}"
            }),
        ];
        for (what, change) in cases {
            let (data, dir) = session(3);
            rewrite(&dir, |l| l[1] = change(&l[1]));
            let e = verify("s1", &dir, data.path()).unwrap_err();
            assert_eq!(e, Broken::NotCanonical { line: 2, seq: 2 }, "{what}");
        }
        let (data, dir) = session(2);
        let path = dir.join(AUDIT_FILE);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.trim_end()).unwrap();
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert_eq!(
            e,
            Broken::NotCanonical { line: 2, seq: 2 },
            "no last newline"
        );
    }

    #[test]
    fn a_number_in_another_form_fails() {
        let data = tempfile::tempdir().unwrap();
        let dir = data.path().join("s3");
        std::fs::create_dir_all(&dir).unwrap();
        let mut chain = Chain::open("s3", &dir, data.path());
        chain.append(json!({"at_ms": 1.5, "n": 10})).unwrap();
        assert!(verify("s3", &dir, data.path()).is_ok());
        for (from, to) in [("1.5", "15e-1"), ("1.5", "1.50"), ("10", "1e1")] {
            let path = dir.join(AUDIT_FILE);
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
            assert!(verify("s3", &dir, data.path()).is_err(), "{from} -> {to}");
            std::fs::write(&path, text).unwrap();
        }
    }

    #[test]
    fn a_rechained_record_with_its_head_in_meta_json_fails_and_is_never_extended() {
        let (data, dir) = session(4);
        let lines: Vec<String> = std::fs::read_to_string(dir.join(AUDIT_FILE))
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        let mut kept = lines.clone();
        kept.remove(1);
        let (rechained, head) = rechain("s1", &kept);
        std::fs::write(dir.join(AUDIT_FILE), rechained.join("\n") + "\n").unwrap();
        let meta = json!({"id": "s1", "audit_head": head});
        std::fs::write(dir.join("meta.json"), meta.to_string()).unwrap();
        let e = verify("s1", &dir, data.path()).unwrap_err();
        assert!(
            matches!(
                e,
                Broken::Truncated {
                    kept: 3,
                    entries: 4,
                    which: HEAD_STORE
                }
            ),
            "{e}"
        );
        // A chain opened on it refuses to grow, and the head store keeps
        // saying four.
        let mut chain = Chain::open("s1", &dir, data.path());
        assert!(chain.broken().is_some());
        let err = chain.append(json!({"call_id": "c9"})).unwrap_err();
        assert!(err.to_string().contains("not extended"), "{err}");
        assert_eq!(read_head_copy(data.path(), "s1").unwrap().entries, 4);
        assert!(verify("s1", &dir, data.path()).is_err());
        // Without its head file, a record with entries does not verify.
        let (data, dir) = session(1);
        std::fs::remove_file(super::super::chain::head_file(data.path(), "s1")).unwrap();
        assert_eq!(verify("s1", &dir, data.path()), Err(Broken::NoHead(1)));
    }

    #[test]
    fn a_good_chain_continues_where_the_head_store_says() {
        let (data, dir) = session(2);
        let mut chain = Chain::open("s1", &dir, data.path());
        assert_eq!(chain.head().entries, 2);
        chain.append(json!({"call_id": "c3"})).unwrap();
        assert_eq!(verify("s1", &dir, data.path()).unwrap().entries, 3);
    }
}
