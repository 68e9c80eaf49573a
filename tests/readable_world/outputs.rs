//! A build that runs unasked inside its outputs (`by_effect`: its trial
//! only touched `target/`, which git ignores) but whose real run does more
//! than its trial (it tells the two apart by its process id: the view has
//! its own) stays confined: through symlinks already in `target/` it reads
//! no store and writes no source, a hard link to a source is refused, as
//! are a FIFO, a write beside the tree and a lock on a file outside
//! `target/`. As root and as an ordinary user; each row's control is that
//! the real run did happen (its stamp is in `target/`).

use super::world::{MARKER, NOBODY, World, leaked, scripted};

/// Only the real run (a process id the view's own namespace never
/// reaches) does the rest; both make `target/stamp`.
fn divergent(rest: &str) -> String {
    format!("if [ $$ -gt 99 ]; then {rest}; fi; touch target/stamp")
}

fn rows() -> Vec<(String, String)> {
    [
        (
            "read through a symlink",
            "cat target/hub; base64 target/hub",
        ),
        ("copy through a symlink", "cat target/hub > target/copy"),
        ("write through a symlink", "echo pwned >> target/w"),
        (
            "hard link to a source",
            "ln notes.txt target/h; echo pwned >> target/h",
        ),
        ("write beside the tree", "echo pwned > ../outside"),
        ("a FIFO", "mkfifo target/fifo"),
        (
            "lock a source",
            "flock -n -x notes.txt -c 'touch target/locked-source'",
        ),
        (
            "lock a file of the machine",
            "flock -n -s /etc/passwd -c 'touch target/locked-home'",
        ),
    ]
    .iter()
    .map(|(what, rest)| (what.to_string(), divergent(rest)))
    .collect()
}

fn config() -> String {
    "[agent]\napproval = \"by_effect\"\n[model]\nretry_attempts = 1\n[tmux]\nmode = \"off\"\n"
        .into()
}

fn confined_despite_the_trial(uid: Option<u32>) {
    let world = World::new(uid);
    let proj = &world.proj;
    std::fs::write(proj.join(".gitignore"), "target/\n").unwrap();
    super::world::write(&world.home.join(".profile"), "# profile\n", 0o644);
    std::fs::create_dir_all(proj.join("target")).unwrap();
    let hub = world.home.join(".config/hub");
    std::os::unix::fs::symlink(&hub, proj.join("target/hub")).unwrap();
    std::os::unix::fs::symlink("../notes.txt", proj.join("target/w")).unwrap();
    if let Some(uid) = uid {
        super::world::chown_all(&world.base, uid);
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut failures = Vec::new();
    for (what, command) in rows() {
        let _ = std::fs::remove_file(proj.join("target/stamp"));
        let server = rt.block_on(scripted(std::slice::from_ref(&command)));
        let out = world.exec(&server, 0, &config(), "unused");
        if !proj.join("target/stamp").exists() {
            failures.push(format!("[{what}] the real run did not happen: {out:?}"));
        }
        if leaked(&server).is_some() {
            failures.push(format!("[{what}] a store reached the model"));
        }
        let copy = std::fs::read_to_string(proj.join("target/copy")).unwrap_or_default();
        let notes = std::fs::read_to_string(proj.join("notes.txt")).unwrap();
        let linked = std::os::unix::fs::MetadataExt::nlink(
            &std::fs::metadata(proj.join("notes.txt")).unwrap(),
        ) != 1;
        let made = ["fifo", "locked-source", "locked-home"]
            .iter()
            .filter(|f| std::fs::symlink_metadata(proj.join("target").join(f)).is_ok())
            .collect::<Vec<_>>();
        if copy.contains(MARKER)
            || notes != "plain notes\n"
            || world.base.join("outside").exists()
            || linked
            || !made.is_empty()
        {
            failures.push(format!(
                "[{what}] it got out: copy {copy:?}, notes {notes:?} (linked: {linked}), made \
                 {made:?}: {out:?}"
            ));
        }
    }
    // The control of the locks: one on a file of its outputs is taken
    // (opened for reading only, as `flock(1)` opens it).
    std::fs::write(proj.join("target/lockfile"), "").unwrap();
    let command = divergent("flock -n -x target/lockfile -c 'touch target/locked-inside'");
    let server = rt.block_on(scripted(std::slice::from_ref(&command)));
    let out = world.exec(&server, 0, &config(), "unused");
    if !proj.join("target/locked-inside").exists() {
        failures.push(format!("a lock inside its outputs was refused: {out:?}"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

#[test]
fn a_build_that_does_more_for_real_stays_in_its_outputs_as_root() {
    confined_despite_the_trial(None);
}

#[test]
fn a_build_that_does_more_for_real_stays_in_its_outputs_as_an_ordinary_user() {
    confined_despite_the_trial(Some(NOBODY));
}
