//! docs/protocol.md is checked against the types of the `vigil-protocol`
//! crate: every event, command, client and server message type is listed;
//! every example in the events and commands tables is read by the type and
//! written back unchanged (a renamed, removed or newly required field fails);
//! every field of the welcome's `AgentInfo` and of an approval request's
//! `facts` is named. A new variant or field fails here until the page says
//! it. The lists come from the types themselves (serde's own variant lists,
//! struct literals the compiler makes complete).

use std::collections::BTreeSet;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use vigil_protocol::wire::{AgentInfo, AgentState, ClientMsg, ServerMsg};
use vigil_protocol::{
    AgentCommand, AgentEvent, Answer, ApprovalPolicy, CallFacts, MirrorTarget, PrefixChoice,
    PrefixChoices,
};

fn page() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/protocol.md");
    std::fs::read_to_string(path).expect("docs/protocol.md")
}

/// The text of the section headed `## title`.
fn section(page: &str, title: &str) -> String {
    let start = page
        .find(&format!("\n## {title}\n"))
        .unwrap_or_else(|| panic!("docs/protocol.md has no section `{title}`"));
    let rest = &page[start + 4 + title.len()..];
    rest[..rest.find("\n## ").unwrap_or(rest.len())].to_string()
}

/// The variant names serde knows for `T` (tagged by `tag`), read from the
/// error it gives for a name that is none of them.
fn variants<T: DeserializeOwned>(tag: &str) -> BTreeSet<String> {
    let probe = format!(r#"{{"{tag}":"no such variant"}}"#);
    let err = serde_json::from_str::<T>(&probe)
        .err()
        .expect("a made-up variant is refused")
        .to_string();
    let list = err
        .split("expected one of ")
        .nth(1)
        .unwrap_or_else(|| panic!("no variant list in `{err}`"));
    list.split(", ")
        .map(|v| v.split('`').nth(1).expect("a quoted name").to_string())
        .collect()
}

/// `(name, example)` of every `| `name` | `{…}` |` row of a section.
fn rows(section: &str) -> Vec<(String, String)> {
    section
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.trim().trim_matches('|').split(" | ").collect();
            let [name, example] = cells.as_slice() else {
                return None;
            };
            let name = name.trim().strip_prefix('`')?.strip_suffix('`')?;
            let example = example.trim().strip_prefix('`')?.strip_suffix('`')?;
            example
                .starts_with('{')
                .then(|| (name.to_string(), example.to_string()))
        })
        .collect()
}

/// Each example is read by `T` and written back to the same JSON.
fn round_trips<T: DeserializeOwned + Serialize>(rows: &[(String, String)]) {
    for (name, example) in rows {
        let written: Value = serde_json::from_str(example)
            .unwrap_or_else(|e| panic!("`{name}`: the example is not JSON ({e}): {example}"));
        assert_eq!(written["type"], Value::from(name.as_str()), "{example}");
        let read: T = serde_json::from_value(written.clone())
            .unwrap_or_else(|e| panic!("`{name}`: the type cannot read the example ({e})"));
        let back = serde_json::to_value(&read).expect("serialise");
        assert_eq!(
            back, written,
            "`{name}`: the type writes this example differently; make the page say\n{back}"
        );
    }
}

fn named(page: &str, name: &str) -> bool {
    page.contains(&format!("`{name}`")) || page.contains(&format!("\"{name}\""))
}

#[test]
fn every_event_is_listed_with_an_example_the_type_reads_back() {
    let page = page();
    let rows = rows(&section(&page, "Events"));
    let listed: BTreeSet<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(listed, variants::<AgentEvent>("type"), "the Events table");
    round_trips::<AgentEvent>(&rows);
}

#[test]
fn every_command_is_listed_with_an_example_the_type_reads_back() {
    let page = page();
    let rows = rows(&section(&page, "Commands"));
    let listed: BTreeSet<String> = rows.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(
        listed,
        variants::<AgentCommand>("type"),
        "the Commands table"
    );
    round_trips::<AgentCommand>(&rows);
    let commands = section(&page, "Commands");
    for answer in variants::<Answer>("decision") {
        assert!(named(&commands, &answer), "answer `{answer}` not described");
    }
    for mode in variants::<ApprovalPolicy>("mode") {
        assert!(named(&commands, &mode), "policy `{mode}` not described");
    }
}

#[test]
fn every_message_type_is_in_its_table() {
    let page = page();
    let client = section(&page, "Messages from the client");
    for kind in variants::<ClientMsg>("type") {
        assert!(named(&client, &kind), "client message `{kind}` not listed");
    }
    let server = section(&page, "Messages from the agent");
    for kind in variants::<ServerMsg>("type") {
        assert!(named(&server, &kind), "server message `{kind}` not listed");
    }
}

/// The keys of a value's JSON object.
fn keys(value: impl Serialize) -> Vec<String> {
    match serde_json::to_value(value).expect("serialise") {
        Value::Object(map) => map.keys().cloned().collect(),
        other => panic!("not an object: {other}"),
    }
}

#[test]
fn every_field_of_the_welcome_and_of_facts_is_named() {
    let page = page();
    // Struct literals: a new field does not compile here until it is added,
    // and then fails below until the page names it.
    let info = AgentInfo {
        id: "1".into(),
        pid: 1,
        model: "m".into(),
        target: "local".into(),
        demo: true,
        state: AgentState::Idle,
        pending_approvals: 0,
        consoles: 1,
        started_ms: 0,
        socket: "/tmp/1.sock".into(),
        mirror: Some(MirrorTarget {
            server_args: vec![],
            pane: "%1".into(),
        }),
        leaves_behind: Some("2 tmux sessions".into()),
        policy: Some(ApprovalPolicy::Ask),
    };
    let hello = section(&page, "Hello and roles");
    for key in keys(&info) {
        assert!(named(&hello, &key), "AgentInfo field `{key}` not described");
    }
    let facts = CallFacts {
        digest: "d".into(),
        paths: vec!["/p".into()],
        written: vec!["/w".into()],
        resolved: Some("r".into()),
        arguments: Some("{}".into()),
        cwd: Some("/".into()),
        in_pane: true,
        trial: Some("t".into()),
        hooks: vec!["hook `h` (c.toml:1): deny — no".into()],
        prefix_rules: PrefixChoices {
            prefixes: vec![PrefixChoice {
                prefix: "ls".into(),
                refused: Some("no".into()),
            }],
            none_because: Some("n".into()),
        },
    };
    let client = section(&page, "Messages from the client");
    for key in keys(&facts).into_iter().chain(keys(&facts.prefix_rules)) {
        assert!(
            named(&client, &key),
            "CallFacts field `{key}` not described"
        );
    }
    for key in keys(&facts.prefix_rules.prefixes[0]) {
        assert!(
            named(&client, &key),
            "PrefixChoice field `{key}` not described"
        );
    }
}
