//! The sandbox's hostile table, by class, on this kernel through the real
//! helper (`vigil-sandbox`): as root through `run_shell`'s path
//! (`ExecutionContext` with `sandbox: true`), and as an ordinary user
//! (uid 65534 through `setpriv`, the helper started directly) where the
//! case allows. Each row names the class it stands for; each checks the
//! effect from outside (a marker process's limits and priority, the
//! machine's IPC objects and keys, a socket's and a terminal's reader, a
//! secret's reader), and a control shows the same action works unsandboxed.

mod common;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use vigil::config::secrets::{SecretPlaces, SecretsConfig};
use vigil::exec::{ExecutionContext, RunOutcome, RunRequest, sandbox};

use common::contain::{Marker, drained, ipc_and_keys, pty, reach, reach_in, winsize};

/// A home of this test process holding secrets (the secret list is set
/// once per process: defaults with this home, plus a vigil folder).
struct Home {
    home: PathBuf,
    vigil: PathBuf,
}

fn home() -> &'static Home {
    static HOME: OnceLock<Home> = OnceLock::new();
    HOME.get_or_init(|| {
        let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
        // Earlier runs' homes (their processes are gone) go first.
        for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("vigil-contain-") {
                if pid.parse().is_ok_and(|p: i32| !common::alive(p)) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let base = tmp.join(format!("vigil-contain-{}", std::process::id()));
        let home = base.join("home");
        let vigil = home.join(".config/vigil");
        for d in [home.join(".ssh"), vigil.clone()] {
            std::fs::create_dir_all(&d).unwrap();
        }
        for (f, text) in [
            (".ssh/id_ed25519", "PRIVATE-KEY-1f2e"),
            (".netrc", "machine x password NETRC-PW-77"),
            (".config/vigil/config.toml", "api_key = \"sk-CONFIG-KEY-9\""),
            ("notes.txt", "plain notes"),
        ] {
            std::fs::write(home.join(f), text).unwrap();
        }
        open_up(&base);
        let places = SecretPlaces::new(
            &SecretsConfig::default(),
            Some(&home),
            std::slice::from_ref(&vigil),
        );
        sandbox::set_secret_places(places);
        sandbox::set_helper(common::sandbox_helper_bin());
        Home { home, vigil }
    })
}

/// Everything under `dir` readable (and folders enterable) by anyone, so
/// the ordinary user's control can read what the sandbox must not.
fn open_up(dir: &Path) {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
    }
}

fn req(cmd: &str, sandboxed: bool) -> RunRequest {
    RunRequest {
        command: cmd.into(),
        timeout: Some(Duration::from_secs(30)),
        sandbox: sandboxed,
        ..Default::default()
    }
}

/// `cmd` in the sandbox, started in `cwd` (its working tree's secret
/// names are masked).
async fn boxed_in(cmd: &str, cwd: &Path) -> RunOutcome {
    home();
    sandbox::run(cmd, Some(cwd), Some(Duration::from_secs(30)), None)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// `cmd` as `run_shell` runs a call nobody approved.
async fn boxed(cmd: &str) -> RunOutcome {
    home();
    ExecutionContext::local()
        .run(req(cmd, true), None)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

async fn plain(cmd: &str) -> RunOutcome {
    home();
    ExecutionContext::local()
        .run(req(cmd, false), None)
        .await
        .unwrap()
}

fn as_nobody(program: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home().home)
        .stdin(Stdio::null())
        .process_group(0);
    c
}

/// `cmd` in the sandbox as uid 65534 (the helper started directly, with
/// the masks vigil would pass for `cwd`).
fn nobody_boxed(cmd: &str, cwd: &Path) -> Output {
    let mut c = as_nobody(&common::sandbox_helper_bin());
    c.arg(sandbox::helper::MODE)
        .args(sandbox::helper_args(Some(cwd)));
    c.args(["--", "/bin/sh", "-c", cmd]).current_dir(cwd);
    c.output().unwrap()
}

fn nobody_plain(cmd: &str, cwd: &Path) -> Output {
    let mut c = as_nobody(Path::new("/bin/sh"));
    c.args(["-c", cmd]).current_dir(cwd);
    c.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `NAME=RESULT` lines of reach.py.
fn results(out: &str) -> Vec<(String, String)> {
    out.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn all_refused(out: &str, except: &[&str], what: &str) {
    let r = results(out);
    assert!(r.len() > 3, "{what}: {out}");
    for (name, got) in r {
        if !except.contains(&name.as_str()) {
            assert_ne!(got, "ok", "{what}: {name} went through\n{out}");
        }
    }
}

// ---- other processes: every call that names one ------------------------

#[tokio::test]
async fn no_call_that_names_another_process_reaches_it_as_root() {
    let marker = Marker::start(Command::new("sleep").arg("300"));
    let before = marker.state();
    let out = boxed(&format!("python3 {} pids {}", reach(), marker.pid())).await;
    all_refused(&text(&out.stdout), &[], "root");
    assert_eq!(before, marker.state(), "the marker was changed");
    assert!(common::alive(marker.pid() as i32));
    // The helper itself, the command's parent, is out of reach too.
    let out = boxed(&format!("python3 {} pids $PPID; echo still=here", reach())).await;
    let said = text(&out.stdout);
    all_refused(&said, &["still"], "the helper");
    assert!(said.contains("still=here"), "{said}");
    // The control: unsandboxed the same calls reach a process.
    let victim = Marker::start(Command::new("sleep").arg("300"));
    let out = plain(&format!("python3 {} pids {}", reach(), victim.pid())).await;
    let r = results(&text(&out.stdout));
    for call in [
        "prlimit64",
        "setpriority",
        "sched_setaffinity",
        "ioprio_set",
    ] {
        assert!(r.contains(&(call.into(), "ok".into())), "{call}: {r:?}");
    }
}

#[test]
fn no_call_that_names_another_process_reaches_it_as_a_user() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let mut m = as_nobody(Path::new("/bin/sleep"));
    m.arg("300");
    let marker = Marker::start(&mut m);
    let before = marker.state();
    let cmd = format!("python3 {} pids {}", reach_in(dir.path()), marker.pid());
    let out = nobody_boxed(&cmd, dir.path());
    all_refused(&text(&out.stdout), &[], "nobody");
    assert_eq!(before, marker.state(), "the marker was changed");
    // Control: the same user, unsandboxed, re-limits its own process.
    let out = nobody_plain(&cmd, dir.path());
    let r = results(&text(&out.stdout));
    assert!(r.contains(&("prlimit64".into(), "ok".into())), "{r:?}");
}

// ---- processes left behind ----------------------------------------------

#[tokio::test]
async fn the_command_cannot_kill_its_helper_and_nothing_it_started_survives() {
    let out = boxed(
        "sleep 3300 & echo $!; (sleep 3301 &) ; sh -c 'sleep 3302 & echo $!'; \
         kill -9 $PPID; echo k=$?; kill -STOP $PPID; echo s=$?; kill -9 0",
    )
    .await;
    let said = text(&out.stdout);
    assert!(said.contains("k=1") && said.contains("s=1"), "{said}");
    assert_eq!(out.exit_code, None, "killed by its own SIGKILL: {out:?}");
    let pids: Vec<i32> = said.lines().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(pids.len(), 2, "{said}");
    common::assert_all_gone(&pids, "a command that killed its group");
    let ps = Command::new("pgrep")
        .args(["-f", "^sleep 330[012]$"])
        .output()
        .unwrap();
    assert!(ps.stdout.is_empty(), "left behind: {}", text(&ps.stdout));
}

/// A process that outlives its helper (something outside killed
/// `vigil-sandbox`, as a hook could) is killed with the call, and the call
/// returns.
#[tokio::test(flavor = "multi_thread")]
async fn a_process_outliving_a_killed_helper_ends_with_the_call() {
    home();
    let tag = format!("{}", 3000 + std::process::id() % 500);
    let cmd = format!("sleep {tag}7 & sleep {tag}8; echo not-here");
    let run = tokio::spawn({
        let cmd = cmd.clone();
        async move { sandbox::run(&cmd, None, Some(Duration::from_secs(60)), None).await }
    });
    let sleeper = common::eventually(Duration::from_secs(60), || find(&format!("sleep {tag}7")));
    let Some(sleeper) = sleeper else {
        panic!("the sandboxed sleep never started: {:?}", run.await);
    };
    let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap();
    let pgid: i32 = stat
        .rsplit_once(") ")
        .unwrap()
        .1
        .split(' ')
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    // The group's leader is the helper this test's call started.
    let leader = std::fs::read_to_string(format!("/proc/{pgid}/cmdline")).unwrap();
    assert!(leader.contains("__sandbox"), "{leader}");
    // SAFETY: kill(2) of the helper process this test's call started.
    unsafe { libc::kill(pgid, libc::SIGKILL) };
    let ended = tokio::time::timeout(Duration::from_secs(10), run).await;
    assert!(ended.is_ok(), "the call did not return");
    assert!(
        common::gone_within(sleeper, Duration::from_secs(30)),
        "the process left behind survived the call"
    );
    assert!(find(&format!("sleep {tag}8")).is_none());
}

/// The pid of a process whose command line is `text`.
fn find(text: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let line = String::from_utf8_lossy(&line).replace('\0', " ");
        (line.trim_end() == text && common::alive(pid)).then_some(pid)
    })
}

#[test]
fn as_a_user_the_helper_survives_and_cleans_up_too() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let out = nobody_boxed(
        "sleep 3303 & kill -9 $PPID; echo k=$?; kill -9 0",
        dir.path(),
    );
    assert!(text(&out.stdout).contains("k=1"), "{out:?}");
    let ps = Command::new("pgrep")
        .args(["-f", "^sleep 3303$"])
        .output()
        .unwrap();
    assert!(ps.stdout.is_empty(), "left behind: {}", text(&ps.stdout));
}

// ---- IPC and keyrings -----------------------------------------------------

#[tokio::test]
async fn no_ipc_object_or_key_is_made_or_reached() {
    let before = ipc_and_keys();
    let r = reach();
    let out = boxed(&format!(
        "python3 {r} ipc; python3 {r} keys vigil-contain-root; ipcmk -Q; ipcmk -M 4096; ipcmk -S 1"
    ))
    .await;
    all_refused(&text(&out.stdout), &[], "root");
    assert_eq!(before, ipc_and_keys(), "{out:?}");
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let r = reach_in(dir.path());
    let out = nobody_boxed(
        &format!("python3 {r} ipc; python3 {r} keys vigil-contain-nobody"),
        dir.path(),
    );
    all_refused(&text(&out.stdout), &[], "nobody");
    assert_eq!(before, ipc_and_keys(), "{out:?}");
}

// ---- sockets ---------------------------------------------------------------

#[tokio::test]
async fn no_socket_reaches_an_outside_unix_socket_or_netlink_peer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let listener = UnixDatagram::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = reach();
    let p = path.display();
    let out = boxed(&format!(
        "python3 {r} sockets {p}; python3 {r} dgram-race {p}; ip -br link >/dev/null; echo ip=$?"
    ))
    .await;
    let said = text(&out.stdout);
    all_refused(&said, &["netlink_route", "ip"], "root");
    assert!(
        said.contains("ip=0") && said.contains("netlink_route=ok"),
        "{said}"
    );
    let mut buf = [0u8; 64];
    assert!(
        listener.recv(&mut buf).is_err(),
        "a datagram arrived: {said}"
    );
    // Control: unsandboxed the datagram arrives.
    let out = plain(&format!("python3 {r} sockets {p}")).await;
    assert!(
        text(&out.stdout).contains("socket_unix_dgram=ok"),
        "{out:?}"
    );
    assert!(listener.recv(&mut buf).is_ok());
}

// ---- terminals, FIFOs, devices --------------------------------------------

#[tokio::test]
async fn no_terminal_fifo_or_device_outside_is_opened() {
    let (master, _slave, pts) = pty();
    let size = winsize(&master);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o666)).unwrap();
    // SAFETY: opening the test's own FIFO, non-blocking, for reading.
    let reader = unsafe {
        let p = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        OwnedFd::from_raw_fd(libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK))
    };
    let (p, f) = (pts.display(), fifo.display());
    let cmd = format!(
        "printf X > {p}; echo pty=$?; stty -F {p} cols 7; echo stty=$?; \
         timeout 2 sh -c 'echo X > {f}'; echo fifo=$?; true > /dev/tty; echo devtty=$?; \
         head -c1 /dev/ptmx; echo ptmx=$?; true > /dev/shm/vigil-contain; echo shm=$?; \
         true > /dev/mqueue/vigil-contain; echo mq=$?; \
         echo ctty=$(cut -d' ' -f7 /proc/self/stat)"
    );
    let out = boxed(&cmd).await;
    let said = text(&out.stdout);
    for step in ["pty", "stty", "fifo", "devtty", "ptmx", "shm", "mq"] {
        assert!(
            !said.contains(&format!("\n{step}=0")) && !said.starts_with(&format!("{step}=0")),
            "{step}: {said}"
        );
    }
    assert!(said.contains("ctty=0\n"), "{said}");
    assert!(drained(&master).is_empty(), "the terminal got output");
    assert_eq!(size, winsize(&master), "the terminal was resized");
    let mut buf = [0u8; 8];
    // SAFETY: reading the test's own FIFO into a local buffer.
    let n = unsafe { libc::read(reader.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
    assert!(n <= 0, "the FIFO got data");
    assert!(!Path::new("/dev/shm/vigil-contain").exists());
    // Control: unsandboxed, the terminal gets it.
    plain(&format!("printf X > {p}")).await;
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(drained(&master), b"X");
}

/// The helper started with a terminal as its controlling terminal and on
/// descriptors 0 and 2: the command gets neither.
#[test]
fn a_terminal_given_to_the_helper_does_not_reach_the_command() {
    home();
    let (master, slave, _) = pty();
    let (a, b) = (slave.try_clone().unwrap(), slave.try_clone().unwrap());
    let out = Command::new("setsid")
        .arg("--ctty")
        .arg(common::sandbox_helper_bin())
        .arg(sandbox::helper::MODE)
        .args(sandbox::helper_args(None))
        .args(["--", "/bin/sh", "-c"])
        .arg(
            "echo ctty=$(cut -d' ' -f7 /proc/self/stat); echo in=$(readlink /proc/self/fd/0); \
             echo err=$(readlink /proc/self/fd/2); echo X >&2; echo X >&0",
        )
        .stdin(Stdio::from(a))
        .stderr(Stdio::from(b))
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(said.contains("ctty=0\n"), "{said}");
    assert!(
        said.contains("in=/dev/null\n") && said.contains("err=/dev/null\n"),
        "{said}"
    );
    assert!(drained(&master).is_empty(), "the terminal got output");
}

// ---- secrets ---------------------------------------------------------------

#[tokio::test]
async fn secret_places_read_as_denied_and_their_neighbours_stay_readable() {
    let h = home();
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    std::fs::create_dir_all(repo.path().join("app/cfg")).unwrap();
    for (f, t) in [
        (".env", "DB_PASSWORD=ENV-SECRET-1"),
        ("app/cfg/.env.production", "TOKEN=ENV-SECRET-2"),
        ("app/main.rs", "fn main() {}"),
    ] {
        std::fs::write(repo.path().join(f), t).unwrap();
    }
    let hd = h.home.display();
    let cmd = format!(
        "cat {hd}/.ssh/id_ed25519 {hd}/.netrc {}/config.toml /etc/shadow .env app/cfg/.env.production; \
         grep -rs SECRET . {hd}; cat app/main.rs /etc/passwd > /dev/null && echo neighbours=ok",
        h.vigil.display()
    );
    let out = boxed_in(&cmd, repo.path()).await;
    let (said, err) = (text(&out.stdout), text(&out.stderr));
    for secret in [
        "PRIVATE-KEY",
        "NETRC-PW",
        "sk-CONFIG",
        "ENV-SECRET",
        "root:",
    ] {
        assert!(!said.contains(secret), "{secret} was read: {said}");
    }
    assert!(said.contains("neighbours=ok"), "{said}\n{err}");
    assert_eq!(err.matches("Permission denied").count(), 6, "{err}");
    // Control: unsandboxed the same reads succeed.
    let plain = plain(&format!("cd {} && {cmd}", repo.path().display())).await;
    assert!(text(&plain.stdout).contains("ENV-SECRET-2"));
}

#[test]
fn as_a_user_secret_places_read_as_denied_too() {
    let h = home();
    let repo = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::write(repo.path().join(".env"), "ENV-SECRET-3").unwrap();
    std::fs::write(repo.path().join("readme"), "hello").unwrap();
    open_up(repo.path());
    let cmd = format!(
        "cat .env {0}/.netrc {0}/.ssh/id_ed25519; cat readme",
        h.home.display()
    );
    let out = nobody_boxed(&cmd, repo.path());
    let said = text(&out.stdout);
    assert_eq!(said, "hello", "{out:?}");
    let control = nobody_plain(&cmd, repo.path());
    assert!(
        text(&control.stdout).contains("ENV-SECRET-3"),
        "{control:?}"
    );
}

/// Issue 25, item 4, as it happened: a repository's `core.fsmonitor` hook
/// runs under a low `git status` and re-limits a process outside
/// (`prlimit --cpu=1:2` killed it with SIGXCPU) and the agent itself (here
/// the test process stands for it: `--nofile=4`).
#[tokio::test]
async fn a_repositorys_hook_under_git_status_reaches_no_process() {
    let marker = Marker::start(Command::new("sleep").arg("300"));
    let before = marker.state();
    let me = std::process::id();
    let my_limits = std::fs::read_to_string(format!("/proc/{me}/limits")).unwrap();
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(r)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{ok:?}");
    };
    git(&["init", "-q"]);
    let hook = r.join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nprlimit --pid {} --cpu=1:2; prlimit --pid {me} --nofile=4:4; \
             echo hook-ran >&2\n",
            marker.pid()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(&["config", "core.fsmonitor", &hook.display().to_string()]);
    let out = boxed_in("git status --short; echo done", r).await;
    let err = text(&out.stderr);
    assert!(err.contains("hook-ran"), "the hook did not run: {out:?}");
    assert!(err.contains("Operation not permitted"), "{err}");
    assert_eq!(before, marker.state(), "the marker was re-limited");
    assert_eq!(
        my_limits,
        std::fs::read_to_string(format!("/proc/{me}/limits")).unwrap(),
        "the agent's limits changed"
    );
    assert!(common::alive(marker.pid() as i32));
}

// ---- file metadata: mode, owner, times, xattrs/ACLs, flags, locks -------

/// Every metadata change of `f` a read-only run might try, one
/// `NAME=STATUS` line each.
fn metadata_attempts(f: &Path) -> String {
    let f = f.display();
    format!(
        "chmod 4755 {f}; echo chmod=$?; chown 65534 {f}; echo chown=$?; \
         touch -m -d 1970-01-01 {f}; echo utime=$?; \
         python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.red\", b\"1\")' {f} 2>/dev/null; \
         echo xattr=$?; \
         python3 -c 'import fcntl,sys; f=open(sys.argv[1]); fcntl.fcntl(f, fcntl.F_SETLEASE, fcntl.F_RDLCK)' {f} 2>/dev/null; \
         echo lease=$?; flock -n {f} true 2>/dev/null; echo flock=$?; \
         chattr +A {f} 2>/dev/null; echo chattr=$?"
    )
}

/// Mode, owner, mtime and extended attributes of `f`.
fn meta_state(f: &Path) -> String {
    let out = Command::new("stat")
        .args(["-c", "%a %u %Y"])
        .arg(f)
        .output()
        .unwrap();
    let attrs = Command::new("python3")
        .args([
            "-c",
            "import os,sys; print(sorted(os.listxattr(sys.argv[1])))",
        ])
        .arg(f)
        .output()
        .unwrap();
    format!(
        "{} {}",
        text(&out.stdout).trim(),
        text(&attrs.stdout).trim()
    )
}

#[tokio::test]
async fn no_metadata_of_an_outside_file_changes_as_root() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("rootid");
    std::fs::write(&f, "x").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = meta_state(&f);
    let out = boxed(&metadata_attempts(&f)).await;
    let said = text(&out.stdout);
    for (call, status) in results(&said) {
        assert_ne!(status, "0", "[file metadata] {call} went through: {said}");
    }
    assert_eq!(
        before,
        meta_state(&f),
        "the file's metadata changed: {said}"
    );
    // The control: unsandboxed, the same attempts change it.
    let out = plain(&metadata_attempts(&f)).await;
    let r = results(&text(&out.stdout));
    for call in ["chmod", "utime", "xattr"] {
        assert!(r.contains(&(call.into(), "0".into())), "{call}: {r:?}");
    }
    assert_ne!(before, meta_state(&f));
}

#[test]
fn no_metadata_of_its_own_files_changes_as_a_user() {
    // An ordinary user owns its key folder: the sandbox must not open it to
    // everyone (the mask covers reading, this covers the mode).
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let f = dir.path().join("mine");
    std::fs::write(&f, "x").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
    let before = meta_state(&f);
    let out = nobody_boxed(&metadata_attempts(&f), dir.path());
    let said = text(&out.stdout);
    for (call, status) in results(&said) {
        assert_ne!(status, "0", "[file metadata] {call} went through: {said}");
    }
    assert_eq!(before, meta_state(&f), "{said}");
    let out = nobody_plain(
        &format!("chmod 644 {}; echo chmod=$?", f.display()),
        dir.path(),
    );
    assert!(text(&out.stdout).contains("chmod=0"), "control: {out:?}");
}

// ---- the rest that reaches another process or the kernel ----------------

/// What `reach.py others` may change on the marker besides its limits.
fn knobs(pid: u32) -> String {
    ["oom_score_adj", "timerslack_ns", "comm"]
        .map(|k| std::fs::read_to_string(format!("/proc/{pid}/{k}")).unwrap_or_default())
        .join("|")
}

#[tokio::test]
async fn sigio_proc_knobs_and_kernel_objects_stay_out_of_reach_as_root() {
    // SIGIO through F_SETOWN (its default action ends the owner), writes to
    // another process's /proc knobs, its environment and memory, and
    // userfaultfd, bpf, fanotify.
    let marker = Marker::start(Command::new("sleep").arg("300"));
    let before = (marker.state(), knobs(marker.pid()));
    let cmd = format!("python3 {} others {}", reach(), marker.pid());
    let out = boxed(&cmd).await;
    // F_SETOWN itself works; the signal must not arrive.
    all_refused(&text(&out.stdout), &["f_setown_sigio_sent"], "root");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        common::alive(marker.pid() as i32),
        "SIGIO reached the marker"
    );
    assert_eq!(before, (marker.state(), knobs(marker.pid())));
    // The control: unsandboxed the same calls reach it (SIGIO ends it).
    let victim = Marker::start(Command::new("sleep").arg("300"));
    let out = plain(&format!("python3 {} others {}", reach(), victim.pid())).await;
    let r = results(&text(&out.stdout));
    for call in [
        "proc_oom_score_adj",
        "proc_comm",
        "userfaultfd",
        "bpf_map_create",
    ] {
        assert!(r.contains(&(call.into(), "ok".into())), "{call}: {r:?}");
    }
    let gone = common::eventually(Duration::from_secs(60), || {
        (!common::alive(victim.pid() as i32)).then_some(())
    });
    assert!(gone.is_some(), "control: SIGIO did not end the victim");
}

#[test]
fn sigio_and_proc_knobs_stay_out_of_reach_as_a_user() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let mut m = as_nobody(Path::new("/bin/sleep"));
    m.arg("300");
    let marker = Marker::start(&mut m);
    let ready = common::eventually(Duration::from_secs(60), || {
        knobs(marker.pid()).contains("sleep").then_some(())
    });
    assert!(ready.is_some(), "the marker never became sleep");
    let before = (marker.state(), knobs(marker.pid()));
    let cmd = format!("python3 {} others {}", reach_in(dir.path()), marker.pid());
    let out = nobody_boxed(&cmd, dir.path());
    all_refused(&text(&out.stdout), &["f_setown_sigio_sent"], "nobody");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        common::alive(marker.pid() as i32),
        "SIGIO reached the marker"
    );
    assert_eq!(before, (marker.state(), knobs(marker.pid())));
    // Control: the same user, unsandboxed, reaches its own process.
    let out = nobody_plain(&cmd, dir.path());
    let r = results(&text(&out.stdout));
    assert!(r.contains(&("proc_comm".into(), "ok".into())), "{r:?}");
    let gone = common::eventually(Duration::from_secs(60), || {
        (!common::alive(marker.pid() as i32)).then_some(())
    });
    assert!(gone.is_some(), "control: SIGIO did not end the marker");
}
