//! The hostile file and rule cases of `tests/sandbox/rule_evasion.rs`, as data:
//! the directory every row runs in, the session-rule rows (a first call the
//! operator approves for the session, then one that must be asked) and the
//! path-rule rows (a write that a rule must not admit, or must deny). Add a
//! row for every bypass found.
#![allow(dead_code)]

use std::path::Path;

/// A row's directory: `notes/sub/`, `app/secrets/`, `app/x/`,
/// `home/.bashrc` and a `victim` outside `notes/`, `notes/link` → `victim`
/// (a symlink), `notes/hard` (a hard link to `victim`), `app/s2` →
/// `app/secrets`.
pub fn layout(dir: &Path) {
    for d in [
        "notes/sub",
        "app/secrets",
        "app/x",
        "app/web",
        "app/store",
        "home",
    ] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("victim"), "keep\n").unwrap();
    std::fs::write(dir.join("home/.bashrc"), "keep\n").unwrap();
    std::fs::write(dir.join("notes/a.txt"), "one\n").unwrap();
    std::os::unix::fs::symlink(dir.join("victim"), dir.join("notes/link")).unwrap();
    std::os::unix::fs::symlink(dir.join("app/secrets"), dir.join("app/s2")).unwrap();
    std::fs::hard_link(dir.join("victim"), dir.join("notes/hard")).unwrap();
    // A denied tree's name under a rule's wildcard that leads elsewhere.
    std::os::unix::fs::symlink(dir.join("app/store"), dir.join("app/web/vault")).unwrap();
}

/// Whether the layout's files outside `notes/` are as they were, and
/// nothing was written below `notes/sub/`.
pub fn intact(dir: &Path) -> bool {
    let keep = |p: &str| std::fs::read_to_string(dir.join(p)).ok().as_deref() == Some("keep\n");
    keep("victim")
        && keep("home/.bashrc")
        && !dir.join("app/secrets/key").exists()
        && !dir.join("app/store/key").exists()
        && !dir.join("notes/sub/deep.txt").exists()
}

pub fn fill(template: &str, dir: &Path) -> String {
    template.replace("{D}", &dir.display().to_string())
}

/// One session-rule row: `first` is approved with `a`; then `between`
/// changes the filesystem; `second` must be asked.
pub struct SessionRow {
    pub class: &'static str,
    pub tool: &'static str,
    pub first: &'static str,
    pub between: Option<fn(&Path)>,
    pub second: &'static str,
}

pub fn swap_to_victim(dir: &Path) {
    std::fs::remove_file(dir.join("notes/a.txt")).unwrap();
    std::os::unix::fs::symlink(dir.join("victim"), dir.join("notes/a.txt")).unwrap();
}

pub const LONG: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\
xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

pub fn session_rows() -> Vec<SessionRow> {
    vec![
        SessionRow {
            class: "same summary, other call",
            tool: "write_file",
            first: r#"{"path": "{D}/notes/a.txt", "content": "safe\n"}"#,
            between: None,
            second: r#"{"path": "{D}/notes/a.txt", "content": "evil\n"}"#,
        },
        SessionRow {
            class: "same summary, other call",
            tool: "edit",
            first: r#"{"command": "str_replace", "path": "{D}/notes/a.txt", "old_str": "one", "new_str": "two"}"#,
            between: None,
            second: r#"{"command": "str_replace", "path": "{D}/notes/a.txt", "old_str": "two", "new_str": "import os; os.system('id')"}"#,
        },
        SessionRow {
            class: "same summary, other call",
            tool: "edit",
            first: r#"{"command": "str_replace", "path": "{D}/notes/a.txt", "old_str": "one", "new_str": "two"}"#,
            between: None,
            second: r#"{"command": "insert", "path": "{D}/notes/a.txt", "insert_line": 0, "new_str": "import os; os.system('id')"}"#,
        },
        SessionRow {
            class: "same summary, other call",
            tool: "srv__write",
            first: "{\"note\": \"LONG\", \"path\": \"/srv/ok\"}",
            between: None,
            second: "{\"note\": \"LONG\", \"path\": \"/etc/cron.d/evil\"}",
        },
        SessionRow {
            class: "same summary, other call",
            tool: "write_file",
            first: r#"{"path": "{D}/notes/a.txt", "content": "safe\n"}"#,
            between: None,
            second: r#"{"path": "{D}/home/.bashrc", "content": "evil\n"}"#,
        },
        SessionRow {
            class: "symlink swap",
            tool: "write_file",
            first: r#"{"path": "{D}/notes/a.txt", "content": "safe\n"}"#,
            between: Some(swap_to_victim),
            second: r#"{"path": "{D}/notes/a.txt", "content": "safe\n"}"#,
        },
    ]
}

/// What must become of a path-rule row's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The rule does not admit it: the operator is asked.
    Asked,
    /// A deny rule catches it.
    Denied,
    /// The rule admits the path, but the write refuses it (a hard link:
    /// another name's file would change).
    Refused,
}

/// One path-rule row: under `rule`, a `write_file` of `path` (relative to
/// the row's directory) must not change anything outside `notes/`.
pub struct PathRow {
    pub class: &'static str,
    pub rule: &'static str,
    pub path: &'static str,
    pub expect: Expect,
}

pub const ALLOW_NOTES: &str =
    "[[approval.rules]]\ntool = \"write_file\"\npath = \"notes/*\"\ndecision = \"allow\"\n";
pub const DENY_SECRETS: &str = "[[approval.rules]]\ntool = \"*\"\npath = \"app/secrets/*\"\n\
decision = \"deny\"\n[[approval.rules]]\ntool = \"write_file\"\npath = \"app/**\"\n\
decision = \"allow\"\n";

/// A deny whose wildcard part holds a symlink: the call's canonical path
/// (`app/store/key`) is outside the glob, the written one inside.
pub const DENY_VAULT: &str = "[[approval.rules]]\ntool = \"*\"\npath = \"app/*/vault/**\"\n\
decision = \"deny\"\n[[approval.rules]]\ntool = \"write_file\"\npath = \"app/**\"\n\
decision = \"allow\"\n";

pub const PATH_ROWS: &[PathRow] = &[
    PathRow {
        class: "star crosses a slash",
        rule: ALLOW_NOTES,
        path: "notes/sub/deep.txt",
        expect: Expect::Asked,
    },
    PathRow {
        class: "hard link",
        rule: ALLOW_NOTES,
        path: "notes/hard",
        expect: Expect::Refused,
    },
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/../home/.bashrc",
        expect: Expect::Asked,
    },
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/../victim",
        expect: Expect::Asked,
    },
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/link",
        expect: Expect::Asked,
    },
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/sub/../../victim",
        expect: Expect::Asked,
    },
    PathRow {
        class: "path-rule escape",
        rule: DENY_SECRETS,
        path: "app/x/../secrets/key",
        expect: Expect::Denied,
    },
    PathRow {
        class: "path-rule escape",
        rule: DENY_SECRETS,
        path: "app/s2/key",
        expect: Expect::Denied,
    },
    PathRow {
        class: "deny through a symlink under its wildcard",
        rule: DENY_VAULT,
        path: "app/web/vault/key",
        expect: Expect::Denied,
    },
];
