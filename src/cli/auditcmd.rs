//! `vigil audit verify SESSION` and `vigil audit export SESSION`: check a
//! session's decision record against its hash chain and the head store
//! (naming the first broken entry), or print the lines it verified as JSON
//! lines for a team's log store. It reads files and prints; it never
//! changes a record, and export never prints a line it did not verify
//! (unless told to, and then it says the record is broken).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use crate::agent::record::audit::chain::AUDIT_FILE;
use crate::agent::record::audit::verify::{read_record, verify, verify_text};
use crate::agent::record::session::SessionStore;
use crate::cli::args::AuditAction;
use crate::cli::headless::exit;
use crate::config::Config;
use vigil_protocol::text::json_for_terminal;

/// Run one `vigil audit` action; returns the exit code (0: the record
/// verifies; 1: it does not; 2: no such session).
pub fn run(config: &Config, action: AuditAction) -> i32 {
    match action {
        AuditAction::Verify { session } => run_verify(config, &session),
        AuditAction::Export {
            session,
            raw,
            unverified,
        } => run_export(config, &session, raw, unverified),
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
            "vigil: no session {} in {} (see `vigil sessions`)",
            clean(&id),
            store.root().display()
        );
        return Err(exit::USAGE);
    }
    Ok((id, dir))
}

/// A name from the command line or the disk, safe to print.
fn clean(s: &str) -> String {
    vigil_protocol::text::sanitize(s)
}

fn run_verify(config: &Config, wanted: &str) -> i32 {
    let (id, dir) = match find(config, wanted) {
        Ok(found) => found,
        Err(code) => return code,
    };
    match verify(&id, &dir, &config.data_dir()) {
        Ok(v) => {
            println!(
                "session {}: the decision record verifies: {} entries, checked against {}",
                clean(&id),
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
                "vigil: session {}: the decision record ({}) is broken: {}",
                clean(&id),
                clean(&dir.join(AUDIT_FILE).display().to_string()),
                clean(&broken.to_string())
            );
            exit::FAILED
        }
    }
}

/// Read the record once, verify that text, and print that same text.
fn run_export(config: &Config, wanted: &str, raw: bool, unverified: bool) -> i32 {
    let (id, dir) = match find(config, wanted) {
        Ok(found) => found,
        Err(code) => return code,
    };
    let checked = read_record(&dir).map(|text| {
        let verdict = verify_text(&id, &text, &config.data_dir());
        (text, verdict)
    });
    let (text, verdict) = match checked {
        Ok(found) => found,
        Err(e) => {
            eprintln!("vigil: session {}: {}", clean(&id), clean(&e.to_string()));
            return exit::FAILED;
        }
    };
    if let Err(broken) = &verdict {
        let broken = clean(&broken.to_string());
        if !unverified {
            eprintln!(
                "vigil: session {}: the decision record does not verify, nothing exported \
                 (--unverified prints it anyway): {broken}",
                clean(&id)
            );
            return exit::FAILED;
        }
        eprintln!(
            "vigil: session {}: exporting a record that does not verify: {broken}",
            clean(&id)
        );
    }
    let out = if raw || !std::io::stdout().is_terminal() {
        text
    } else {
        text.split_inclusive('\n').map(json_for_terminal).collect()
    };
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(out.as_bytes())
        .and_then(|_| stdout.flush())
        .is_err()
    {
        return exit::FAILED;
    }
    match verdict {
        Ok(_) => exit::OK,
        Err(_) => exit::FAILED,
    }
}
