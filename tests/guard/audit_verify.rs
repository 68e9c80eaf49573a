//! The decision record end to end through the real binary: a `vigil exec`
//! session with four decisions (approve-all, a deny rule with its
//! `file:line`, a hook's answer noted), then `vigil audit verify` on the
//! clean record (exit 0), on an edited line, a deleted line, two swapped
//! lines and a file cut short at a line and inside one (exit 1, naming the
//! first broken entry), `vigil audit export` as JSON lines, and a resumed
//! session continuing the chain.

use super::hooks_common;

use hooks_common::{Home, script};
use serde_json::Value;

fn call(n: &str, command: &str, when: &str) -> String {
    format!(
        "[[rule]]\nwhen = {when}\ntimes = 1\ntext = \"call {n}\"\n[[rule.tool_calls]]\n\
         name = \"run_shell\"\n[rule.tool_calls.arguments]\ncommand = {command:?}\n\
         risk = \"low\"\nmutation = false\nprivesc = false\nwhy = \"audit test\"\n\n"
    )
}

fn scenario() -> String {
    let mut s = String::new();
    s += &call("one", "echo one", "{ role = \"user\" }");
    s += &call(
        "two",
        "rm -f nothing-here",
        "{ role = \"tool\", contains = \"one\" }",
    );
    s += &call(
        "three",
        "echo three",
        "{ role = \"tool\", contains = \"denied\" }",
    );
    s += &call(
        "four",
        "echo four",
        "{ role = \"tool\", contains = \"three\" }",
    );
    s += "[[rule]]\nwhen = { role = \"tool\" }\ntext = \"done\"\n";
    s
}

/// A recorded session of four decisions; its id and record's path.
async fn recorded(home: &Home) -> (String, std::path::PathBuf) {
    let hook = script(
        home,
        "note.sh",
        "cat >/dev/null\necho '{\"version\":1,\"decision\":\"allow\",\"reason\":\"echo is fine\"}'",
    );
    let config = format!(
        "[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"deny\"\n\n\
         [[hooks.decide]]\nname = \"echo-ok\"\ncommand = {hook}\nmatch = {{ command = [\"echo\"] }}\n"
    );
    let run = home.exec(&config, &scenario(), &["--auto-approve"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.of("approval_resolved").len(), 4, "{:#?}", run.events);
    let id = run.session();
    let path = home.data().join("sessions").join(&id).join("audit.jsonl");
    (id, path)
}

fn verify(home: &Home, id: &str) -> (i32, String) {
    let (code, out, err) = home.vigil(&["audit", "verify", id]);
    (code, format!("{out}{err}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_record_verifies_and_every_tampering_is_named() {
    let home = Home::new();
    let (id, path) = recorded(&home).await;
    let clean = std::fs::read_to_string(&path).unwrap();
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("verifies: 4 entries"), "{said}");

    // Export: four JSON lines saying who decided.
    let (code, out, err) = home.vigil(&["audit", "export", &id]);
    assert_eq!(code, 0, "{err}");
    let entries: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[0]["action"], "echo one");
    assert_eq!(entries[0]["decided_by"]["name"], "approve all");
    assert_eq!(entries[0]["policy_mode"]["mode"], "approve_all");
    assert!(
        entries[0]["hooks"][0].as_str().unwrap().contains("echo-ok"),
        "{}",
        entries[0]
    );
    assert_eq!(entries[1]["approved"], false);
    let rule = entries[1]["decided_by"]["rule"].as_str().unwrap();
    assert!(rule.contains("config.toml:1"), "{rule}");
    assert!(
        entries
            .iter()
            .enumerate()
            .all(|(i, e)| e["seq"] == i as u64 + 1)
    );
    assert_eq!(entries[1]["prev"], entries[0]["hash"]);

    let lines: Vec<&str> = clean.lines().collect();
    let write = |ls: &[String]| std::fs::write(&path, ls.join("\n") + "\n").unwrap();
    let own = |ls: &[&str]| ls.iter().map(|s| s.to_string()).collect::<Vec<String>>();

    // An edited line.
    let mut edited = own(&lines);
    edited[1] = edited[1].replace("\"approved\":false", "\"approved\":true");
    assert_ne!(edited[1], lines[1]);
    write(&edited);
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("entry 2 (line 2) was changed"), "{said}");

    // A deleted line.
    let mut deleted = own(&lines);
    deleted.remove(2);
    write(&deleted);
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("entry 3 is missing (deleted): line 3 holds entry 4"),
        "{said}"
    );

    // Two swapped lines.
    let mut swapped = own(&lines);
    swapped.swap(1, 2);
    write(&swapped);
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("out of order at line 2: entry 3 stands where entry 2 belongs"),
        "{said}"
    );

    // Cut short at a line: the head kept apart says four.
    write(&own(&lines[..2]));
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(
        said.contains("cut short (or its last entries deleted): it ends after entry 2"),
        "{said}"
    );
    assert!(said.contains("entries 3 to 4 are gone"), "{said}");

    // Cut inside the last line.
    std::fs::write(&path, &clean[..clean.len() - 40]).unwrap();
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("line 4: not an entry"), "{said}");

    // Put back: it verifies again.
    std::fs::write(&path, &clean).unwrap();
    assert_eq!(verify(&home, &id).0, 0);

    // A resumed session continues the same chain.
    let again = call("five", "echo five", "{ role = \"user\" }")
        + "[[rule]]\nwhen = { role = \"tool\" }\ntext = \"done\"\n";
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let resume = ["resume", id.as_str(), "--exec", "go on", "--json"];
    let run = home
        .run(&config, &again, &["--auto-approve"], &resume)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("verifies: 5 entries"), "{said}");
    let (code, said) = verify(&home, "no-such-session");
    assert_eq!(code, 2, "{said}");
}

/// `lines` chained again from the start, as someone who read the writer
/// would: every entry re-hashed, `seq` and `prev` rewritten; the head.
fn rechain(id: &str, lines: &[&str]) -> (String, Value) {
    use vigil::agent::record::audit::chain::{genesis, hash_of, line_of};
    let mut prev = genesis(id);
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("hash");
        o.insert("seq".into(), (i as u64 + 1).into());
        o.insert("prev".into(), prev.clone().into());
        let hash = hash_of(&prev, &v);
        out.push_str(&line_of(&v, &hash));
        prev = hash;
    }
    let head = serde_json::json!({"entries": lines.len(), "hash": prev});
    (out, head)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_laundered_record_fails_verify_is_not_exported_and_is_never_resumed() {
    let home = Home::new();
    let (id, path) = recorded(&home).await;
    let clean = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = clean.lines().collect();

    // A duplicate key: `"approved": true` before the denied entry's own
    // `false` (serde_json keeps the last; the hash still matches).
    assert!(lines[1].contains("\"approved\":false"), "{}", lines[1]);
    let twice = lines[1].replacen('{', "{\"approved\":true,", 1);
    let mut edited: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    edited[1] = twice;
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("gives the key `approved` twice"), "{said}");
    // Export verifies first and prints nothing of a broken record.
    let (code, out, err) = home.vigil(&["audit", "export", &id]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("nothing exported"), "{err}");
    let (code, out, _) = home.vigil(&["audit", "export", &id, "--unverified"]);
    assert_eq!(code, 1);
    assert_eq!(out.lines().count(), 4, "{out}");
    // A space after a colon: same values, other bytes.
    edited[1] = lines[1].replacen("\":", "\": ", 1);
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("not written as vigil writes it"), "{said}");

    // Launder: drop the denied entry, re-chain the rest, set the head in
    // meta.json to match.
    let kept = [lines[0], lines[2], lines[3]];
    let (rechained, head) = rechain(&id, &kept);
    std::fs::write(&path, &rechained).unwrap();
    let meta_path = path.with_file_name("meta.json");
    let mut meta: Value =
        serde_json::from_str(&std::fs::read_to_string(&meta_path).unwrap()).unwrap();
    meta["audit_head"] = head;
    std::fs::write(&meta_path, meta.to_string()).unwrap();
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("head store"), "{said}");

    // Resume it for one turn through the real binary: refused, and the
    // record and the head store are left as they were.
    let head_file = home.data().join("audit-heads").join(format!("{id}.json"));
    let heads_before = std::fs::read_to_string(&head_file).unwrap();
    let again = call("five", "echo five", "{ role = \"user\" }")
        + "[[rule]]\nwhen = { role = \"tool\" }\ntext = \"done\"\n";
    let config = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    let resume = ["resume", id.as_str(), "--exec", "go on", "--json"];
    let run = home
        .run(&config, &again, &["--auto-approve"], &resume)
        .await;
    assert_ne!(
        run.code, 0,
        "a broken record was resumed: {:#?}",
        run.events
    );
    assert!(
        run.stderr.contains("cannot be resumed") && run.stderr.contains("does not verify"),
        "{}",
        run.stderr
    );
    assert!(run.of("approval_resolved").is_empty(), "{:#?}", run.events);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), rechained);
    assert_eq!(std::fs::read_to_string(&head_file).unwrap(), heads_before);
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 1, "{said}");

    // Put back: it verifies and resumes.
    std::fs::write(&path, &clean).unwrap();
    let run = home
        .run(&config, &again, &["--auto-approve"], &resume)
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let (code, said) = verify(&home, &id);
    assert_eq!(code, 0, "{said}");
    assert!(said.contains("verifies: 5 entries"), "{said}");
}
