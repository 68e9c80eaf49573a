//! A managed pane's shell holds a variable its start-up file set, of a
//! name that does not look like a secret's (`PROJ_DB`), and an alias and a
//! function holding the same text: under `by_effect` no command the model
//! runs unasked gets any of it to the model — not the trial's replay
//! (`alias`, `type dbf`, `declare -f`: only what vigil defined is
//! replayed), not a
//! "state-only" command that prints the shell's state in the pane
//! (`export -p`, `set`, `declare -p`), not one that launders the name into
//! the replay (`export PROJ_DB`, a nameref, an assignment that never ran:
//! `cd /nowhere && PROJ_DB=1`) or reads it through an
//! indirection the text does not name (`${!N}`, zsh's `${(P)N}`). Each row
//! is one model turn of several calls, in a bash and a zsh pane, as root
//! and as an ordinary user. The control: the pane does hold it (`approve_all`
//! lets `echo $PROJ_DB` through).

use super::common;
use super::world::{MARKER, NOBODY, World, leaked, scripted_turns};

/// Rows: (shell, the calls of one turn). `*` rows run in both shells.
const ROWS: &[(&str, &[&str])] = &[
    ("*", &["alias"]),
    ("*", &["type dbc"]),
    ("*", &["type dbf"]),
    ("*", &["dbf"]),
    ("bash", &["declare -f"]),
    ("zsh", &["functions"]),
    ("*", &["export -p"]),
    ("*", &["set"]),
    ("*", &["export"]),
    ("bash", &["declare -p PROJ_DB"]),
    ("bash", &["declare -x"]),
    ("zsh", &["typeset PROJ_DB"]),
    ("zsh", &["typeset -p PROJ_DB"]),
    ("*", &["export PROJ_DB", "echo $PROJ_DB"]),
    ("*", &["cd /nowhere-at-all && PROJ_DB=1", "echo $PROJ_DB"]),
    ("bash", &["local PROJ_DB=1", "echo $PROJ_DB"]),
    (
        "*",
        &["cd /nowhere-at-all || export PROJ_DB=1", "echo $PROJ_DB"],
    ),
    ("*", &["readonly PROJ_DB", "env"]),
    ("*", &["typeset PROJ_DB", "echo v=$PROJ_DB"]),
    ("bash", &["N=PROJ_DB; cd ${!N}"]),
    ("bash", &["N=PROJ_DB; cd \"${!N}\"x"]),
    ("bash", &["declare -n R=PROJ_DB", "cd \"$R\""]),
    ("bash", &["N=PROJ_DB; export X=${!N}", "echo $X"]),
    ("zsh", &["N=PROJ_DB; cd ${(P)N}"]),
    ("zsh", &["N=PROJ_DB; X=${(P)N}", "echo $X"]),
];

fn config(approval: &str, shell: &str) -> String {
    format!(
        "[agent]\napproval = \"{approval}\"\n[model]\nretry_attempts = 1\n\
         [tmux]\nmode = \"on\"\nshell = \"{shell}\"\n"
    )
}

/// The start-up files of both shells set the variable.
fn rc_files(world: &World) {
    let line = format!(
        "export PROJ_DB=postgres-{MARKER}\nalias dbc='psql postgres-{MARKER}'\n\
         dbf() {{ echo postgres-{MARKER}; }}\n"
    );
    for rc in [".bashrc", ".profile", ".zshrc", ".zshenv"] {
        super::world::write(&world.home.join(rc), &line, 0o644);
        if let Some(uid) = world.uid {
            super::world::chown_all(&world.home.join(rc), uid);
        }
    }
}

fn the_pane_keeps_its_variables(uid: Option<u32>) {
    let world = World::new(uid);
    rc_files(&world);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut failures = Vec::new();
    for shell in ["bash", "zsh"] {
        let rows = ROWS.iter().filter(|(s, _)| *s == "*" || *s == shell);
        for (_, calls) in rows {
            // A fresh model and pane (tmux server) per row: what one row
            // laundered must not explain another's result.
            let calls: Vec<String> = calls.iter().map(|c| c.to_string()).collect();
            let server = rt.block_on(scripted_turns(std::slice::from_ref(&calls)));
            let socket = Socket::new(uid);
            world.exec(&server, 0, &config("by_effect", shell), &socket.0);
            if let Some(sent) = leaked(&server) {
                let at = sent.find(MARKER).unwrap_or(0);
                let from = sent[..at]
                    .char_indices()
                    .rev()
                    .nth(300)
                    .map_or(0, |(i, _)| i);
                let to = (at + 100).min(sent.len());
                let around = sent.get(from..to).unwrap_or("?");
                failures.push(format!("{shell} {calls:?} let it out: …{around}…"));
            }
        }
        // The control: the pane holds it, and the harness sees it pass.
        let socket = Socket::new(uid);
        let control = rt.block_on(scripted_turns(&[vec!["echo $PROJ_DB".to_string()]]));
        let out = world.exec(&control, 0, &config("approve_all", shell), &socket.0);
        assert!(
            leaked(&control).is_some(),
            "{shell}: the pane does not hold the variable: {out:?}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

/// A tmux server name, its server ended and its socket removed when
/// dropped (the user's socket folder too when this made it).
struct Socket(String, Option<u32>, bool);

impl Socket {
    fn new(uid: Option<u32>) -> Socket {
        let name = common::socket();
        let dir = uid.map(|u| std::path::PathBuf::from(format!("/tmp/tmux-{u}")));
        let made = dir.as_ref().is_some_and(|d| !d.exists());
        Socket(name, uid, made)
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _server = common::Server {
            socket: self.0.clone(),
        };
        if let Some(uid) = self.1 {
            let dir = std::path::PathBuf::from(format!("/tmp/tmux-{uid}"));
            let _ = std::fs::remove_file(dir.join(&self.0));
            if self.2 {
                let _ = std::fs::remove_dir(&dir);
            }
        }
    }
}

#[test]
fn no_pane_variable_reaches_the_model_as_root() {
    the_pane_keeps_its_variables(None);
}

#[test]
fn no_pane_variable_reaches_the_model_as_an_ordinary_user() {
    the_pane_keeps_its_variables(Some(NOBODY));
}
