//! The hostile file and rule cases of `tests/rule_evasion.rs`, as data:
//! the directory every row runs in, the session-rule rows (a first call the
//! operator approves for the session, then one that must be asked) and the
//! path-rule rows (a write that a rule must not admit, or must deny). Add a
//! row for every bypass found.
#![allow(dead_code)]

use std::path::Path;

/// A row's directory: `notes/`, `app/secrets/`, `app/x/`, `home/.bashrc`
/// and a `victim` outside `notes/`, `notes/link` → `victim`, `app/s2` →
/// `app/secrets`.
pub fn layout(dir: &Path) {
    for d in ["notes", "app/secrets", "app/x", "home"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("victim"), "keep\n").unwrap();
    std::fs::write(dir.join("home/.bashrc"), "keep\n").unwrap();
    std::fs::write(dir.join("notes/a.txt"), "one\n").unwrap();
    std::os::unix::fs::symlink(dir.join("victim"), dir.join("notes/link")).unwrap();
    std::os::unix::fs::symlink(dir.join("app/secrets"), dir.join("app/s2")).unwrap();
}

/// Whether the layout's files outside `notes/` are as they were.
pub fn intact(dir: &Path) -> bool {
    let keep = |p: &str| std::fs::read_to_string(dir.join(p)).ok().as_deref() == Some("keep\n");
    keep("victim") && keep("home/.bashrc") && !dir.join("app/secrets/key").exists()
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
            class: "symlink swap",
            tool: "write_file",
            first: r#"{"path": "{D}/notes/a.txt", "content": "safe\n"}"#,
            between: Some(swap_to_victim),
            second: r#"{"path": "{D}/notes/a.txt", "content": "safe\n"}"#,
        },
    ]
}

/// One path-rule row: under `rule`, a `write_file` of `path` (relative to
/// the row's directory) must not run unasked (`deny`: must be denied).
pub struct PathRow {
    pub class: &'static str,
    pub rule: &'static str,
    pub path: &'static str,
    pub denied: bool,
}

pub const ALLOW_NOTES: &str =
    "[[approval.rules]]\ntool = \"write_file\"\npath = \"notes/*\"\ndecision = \"allow\"\n";
pub const DENY_SECRETS: &str = "[[approval.rules]]\ntool = \"*\"\npath = \"app/secrets/*\"\n\
decision = \"deny\"\n[[approval.rules]]\ntool = \"write_file\"\npath = \"app/**\"\n\
decision = \"allow\"\n";

pub const PATH_ROWS: &[PathRow] = &[
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/../home/.bashrc",
        denied: false,
    },
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/../victim",
        denied: false,
    },
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/link",
        denied: false,
    },
    PathRow {
        class: "path-rule escape",
        rule: ALLOW_NOTES,
        path: "notes/sub/../../victim",
        denied: false,
    },
    PathRow {
        class: "path-rule escape",
        rule: DENY_SECRETS,
        path: "app/x/../secrets/key",
        denied: true,
    },
    PathRow {
        class: "path-rule escape",
        rule: DENY_SECRETS,
        path: "app/s2/key",
        denied: true,
    },
];
