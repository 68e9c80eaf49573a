//! A build that runs unasked inside its outputs (`by_effect`: a test of
//! the tree's sources whose trial only touched `target/` and
//! `__pycache__/`, which git ignores) but whose real run does more than its
//! trial (it tells the two apart by its process id: the view has its own)
//! stays confined: through symlinks already in `target/` it reads
//! no store and writes no source, a hard link to a source is refused, as
//! are a FIFO, a write beside the tree, a lock on a file outside
//! `target/`, a connection to another program's abstract socket and a
//! process left behind. As root and as an ordinary user; each row's control is that
//! the real run did happen (its stamp is in `target/`).

use super::world::{MARKER, NOBODY, World, leaked, scripted};

/// A test of the tree's sources (a build vigil knows: `python3 -m
/// unittest`) whose real run only (a process id the view's own namespace
/// never reaches) runs `rest`; both make `target/stamp`.
fn divergent(proj: &std::path::Path, rest: &str) -> String {
    let test = format!(
        "import os, unittest\n\nclass T(unittest.TestCase):\n    def test_it(self):\n        \
         if os.getpid() > 99:\n            os.system({rest:?})\n        \
         open('target/stamp', 'w').close()\n"
    );
    std::fs::write(proj.join("test_div.py"), test).unwrap();
    "python3 -m unittest -q test_div".into()
}

/// A program listening on an abstract socket nobody listed (no file, no
/// permission bits): the confined real run must not reach it.
struct Canary {
    name: String,
    listener: std::os::unix::net::UnixListener,
}

impl Canary {
    fn new() -> Canary {
        use std::os::linux::net::SocketAddrExt;
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("vigil-canary-{}-{n}", std::process::id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&name).unwrap();
        let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
        listener.set_nonblocking(true).unwrap();
        Canary { name, listener }
    }

    /// Whether anything connected since the last look.
    fn reached(&self) -> bool {
        self.listener.accept().is_ok()
    }
}

/// The argument that names this run's left-behind `sleep` (root and the
/// ordinary user run side by side: one each).
fn sleep_arg(uid: Option<u32>) -> String {
    format!(
        "{}.{}",
        9000 + std::process::id() % 1000,
        uid.map_or(1, |_| 2)
    )
}

fn rows(canary: &Canary, uid: Option<u32>) -> Vec<(String, String)> {
    let reach = format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); \
         s.connect(chr(0) + '{}'); s.send(b'x')\"",
        canary.name
    );
    let stay = format!(
        "setsid sleep {} < /dev/null > /dev/null 2>&1 &",
        sleep_arg(uid)
    );
    let mut rows: Vec<(String, String)> = vec![
        ("another program's abstract socket".into(), reach),
        ("a process left behind".into(), stay),
    ];
    rows.extend(
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
                "flock -n -x notes.txt touch target/locked-source",
            ),
            (
                "lock a file of the machine",
                "flock -n -s /etc/passwd touch target/locked-home",
            ),
        ]
        .iter()
        .map(|(what, rest)| (what.to_string(), rest.to_string())),
    );
    rows
}

/// The divergent test running `rest` for real, run through `vigil exec`
/// past its trial; its output and the model server (what reached it).
fn run_divergent(
    world: &World,
    rt: &tokio::runtime::Runtime,
    uid: Option<u32>,
    rest: &str,
) -> (std::process::Output, vigil_scripted::ScriptedServer) {
    let command = divergent(&world.proj, rest);
    if let Some(uid) = uid {
        super::world::chown_all(&world.proj.join("test_div.py"), uid);
    }
    let server = rt.block_on(scripted(std::slice::from_ref(&command)));
    (past_the_trial(world, &server), server)
}

/// One `vigil exec` of row 0 that got past its trial: a trial slower than
/// a moment shows its card while it runs, and `vigil exec`, with nobody to
/// answer, stops there (exit 3, the "still running" card); on a loaded
/// machine that run is made again, a few times at most. Only a run whose
/// trial finished can make the row's stamp.
fn past_the_trial(world: &World, server: &vigil_scripted::ScriptedServer) -> std::process::Output {
    let mut out = world.exec(server, 0, &config(), "unused");
    for _ in 0..3 {
        let slow = out.status.code() == Some(3)
            && String::from_utf8_lossy(&out.stdout).contains("(still running)");
        if !slow {
            break;
        }
        out = world.exec(server, 0, &config(), "unused");
    }
    out
}

fn config() -> String {
    "[agent]\napproval = \"by_effect\"\n[model]\nretry_attempts = 1\n[tmux]\nmode = \"off\"\n"
        .into()
}

fn confined_despite_the_trial(uid: Option<u32>) {
    let world = World::new(uid);
    let proj = &world.proj;
    std::fs::write(proj.join(".gitignore"), "target/\n__pycache__/\n").unwrap();
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
    let canary = Canary::new();
    // The control: without vigil the canary is reached.
    let direct = {
        use std::os::linux::net::SocketAddrExt;
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(&canary.name).unwrap();
        std::os::unix::net::UnixStream::connect_addr(&addr)
    };
    assert!(direct.is_ok() && canary.reached(), "the canary listens");
    for (what, rest) in rows(&canary, uid) {
        let _ = std::fs::remove_file(proj.join("target/stamp"));
        let (out, server) = run_divergent(&world, &rt, uid, &rest);
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
        if canary.reached() {
            failures.push(format!(
                "[{what}] it reached another program's socket: {out:?}"
            ));
        }
        let left = super::common::pids_with(format!("sleep\0{}", sleep_arg(uid)).as_bytes());
        for &pid in &left {
            // SAFETY: kill(2) of the sleep with this test's own argument.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        if !left.is_empty() {
            failures.push(format!("[{what}] a process outlived the run: {out:?}"));
        }
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
    // Not a build of the sources: a command that writes only outputs
    // (a crafted `.pyc` the operator's python would load later) is asked,
    // and nobody answers here.
    for command in [
        "python3 -c \"open('target/crafted', 'w').write('x')\"",
        "mkdir -p __pycache__ && cp notes.txt __pycache__/notes.cpython-311.pyc",
        // GNU make takes `--eva` for `--eval`: a makefile from the command
        // line (found by an attacker: it ran unasked and wrote a .pyc).
        "make --eva 'x:;mkdir -p target && echo x > target/crafted' x",
    ] {
        let server = rt.block_on(scripted(&[command.to_string()]));
        let out = world.exec(&server, 0, &config(), "unused");
        let crafted = ["target/crafted", "__pycache__/notes.cpython-311.pyc"];
        if crafted.iter().any(|f| proj.join(f).exists()) {
            failures.push(format!("[{command}] ran unasked in the outputs: {out:?}"));
        }
    }
    // The control of the locks: one on a file of its outputs is taken
    // (opened for reading only, as `flock(1)` opens it).
    std::fs::write(proj.join("target/lockfile"), "").unwrap();
    let rest = "flock -n -x target/lockfile touch target/locked-inside";
    let (out, _) = run_divergent(&world, &rt, uid, rest);
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
