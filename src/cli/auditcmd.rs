//! `vigil audit verify SESSION` and `vigil audit export SESSION`: check a
//! session's decision record against its hash chain and head (naming the
//! first broken entry), or print its entries as JSON lines for a team's
//! log store. It reads files and prints; it never changes a record.

use std::path::PathBuf;

use crate::agent::audit::chain::AUDIT_FILE;
use crate::agent::audit::verify::verify;
use crate::agent::session::SessionStore;
use crate::cli::args::AuditAction;
use crate::cli::headless::exit;
use crate::config::Config;

/// Run one `vigil audit` action; returns the exit code (0: the record
/// verifies; 1: it does not; 2: no such session).
pub fn run(config: &Config, action: AuditAction) -> i32 {
    match action {
        AuditAction::Verify { session } => run_verify(config, &session),
        AuditAction::Export { session } => run_export(config, &session),
    }
}

/// The session's id and directory (`last`: the newest session).
fn find(config: &Config, wanted: &str) -> Result<(String, PathBuf), i32> {
    let store = SessionStore::new(&config.data_dir());
    let id = if wanted == "last" {
        store.latest().map_err(|e| {
            eprintln!("vigil: {e}");
            exit::USAGE
        })?
    } else {
        wanted.to_string()
    };
    let dir = store.dir_of(&id);
    if id.contains('/') || !dir.is_dir() {
        eprintln!(
            "vigil: no session {id} in {} (see `vigil sessions`)",
            store.root().display()
        );
        return Err(exit::USAGE);
    }
    Ok((id, dir))
}

fn run_verify(config: &Config, wanted: &str) -> i32 {
    let (id, dir) = match find(config, wanted) {
        Ok(found) => found,
        Err(code) => return code,
    };
    match verify(&id, &dir, &config.data_dir()) {
        Ok(v) => {
            println!(
                "session {id}: the decision record verifies: {} entries, checked against {}",
                v.entries,
                if v.heads.is_empty() {
                    "nothing (no entries yet)".to_string()
                } else {
                    v.heads.join(" and ")
                }
            );
            exit::OK
        }
        Err(broken) => {
            eprintln!(
                "vigil: session {id}: the decision record ({}) is broken: {broken}",
                dir.join(AUDIT_FILE).display()
            );
            exit::FAILED
        }
    }
}

fn run_export(config: &Config, wanted: &str) -> i32 {
    let (id, dir) = match find(config, wanted) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let text = std::fs::read_to_string(dir.join(AUDIT_FILE)).unwrap_or_default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        println!("{line}");
    }
    match verify(&id, &dir, &config.data_dir()) {
        Ok(_) => exit::OK,
        Err(broken) => {
            eprintln!("vigil: session {id}: exported, but the record does not verify: {broken}");
            exit::FAILED
        }
    }
}
