//! The preview's honesty as a property: whatever a command does in the
//! view, nothing outside the writable layer changes. Random combinations
//! drawn from a catalogue of hostile actions (issue 25, item 3, and the
//! class of each) run in the real view on this kernel; after each case the
//! outside is compared with before: files (type, mode, content) in a folder
//! outside every writable root and in the real working tree, the machine's
//! SysV objects, POSIX queues and keys, a marker process (alive, limits,
//! priority, affinity, I/O class), a pseudo-terminal's reader and size, a
//! FIFO's reader, a unix datagram socket, a TCP listener, and no daemon
//! left. The seed is printed on failure (`VIGIL_HONESTY_SEED` replays it).

use super::common;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::contain::{Marker, drained, ipc_and_keys, pty, reach, winsize};
use sha2::{Digest, Sha256};
use vigil::exec::preview::{PreviewOptions, preview};
use vigil::exec::sandbox;
use vigil_protocol::preview::PreviewReport;

/// The hostile actions (`{OUT}` a folder outside every writable root,
/// `{PTS}` a terminal the test reads, `{PID}` a marker process, `{SOCK}`
/// a datagram socket, `{PORT}` a TCP listener, `{REACH}` the script).
const CATALOGUE: &[(&str, &str)] = &[
    ("write", "echo x > {OUT}/f"),
    ("append", "echo x >> {OUT}/f"),
    ("truncate", "truncate -s 0 {OUT}/f"),
    ("chmod", "chmod 777 {OUT}/f"),
    ("rename", "mv {OUT}/f {OUT}/g"),
    ("link", "ln {OUT}/f {OUT}/h; ln -s /etc {OUT}/s"),
    ("mkfifo", "mkfifo {OUT}/p2; mknod {OUT}/n c 1 3"),
    (
        "inside",
        "echo in > inside.txt; mkfifo inside.fifo; chmod 600 inside.txt; mkdir -p d/e",
    ),
    ("pty", "printf X > {PTS}; stty -F {PTS} cols 7 rows 3"),
    (
        "pty-alias",
        "printf X > {OUT}/ptyalias; stty -F {OUT}/ptyalias cols 9",
    ),
    (
        "fifo",
        "timeout 1 sh -c 'echo X > {OUT}/fifo'; timeout 1 cat {OUT}/fifo",
    ),
    ("sockets", "python3 {REACH} sockets {SOCK}"),
    ("dgram-race", "python3 {REACH} dgram-race {SOCK}"),
    (
        "ipc",
        "python3 {REACH} ipc; ipcmk -Q; ipcmk -M 4096; ipcmk -S 1",
    ),
    ("keys", "python3 {REACH} keys vigil-contain-view"),
    (
        "daemons",
        "setsid sleep 9{PID}1 & nohup sleep 9{PID}2 >/dev/null 2>&1 & (sleep 9{PID}3 &)",
    ),
    (
        "marker",
        "prlimit --pid {PID} --nofile=5:5 --cpu=1:2; renice -n 10 -p {PID}; \
         ionice -c3 -p {PID}; taskset -p 1 {PID}; kill -9 {PID}",
    ),
    (
        "pid-calls",
        "python3 {REACH} pids {PID}; python3 {REACH} pids 1",
    ),
    ("tcp", "bash -c 'echo x > /dev/tcp/127.0.0.1/{PORT}'"),
    (
        "devices",
        "head -c1 /dev/sda; cat /dev/ptmx; true > /dev/tty; ls /dev/pts; head -c1 /dev/mem",
    ),
    (
        "capabilities",
        "grep CapEff /proc/self/status; cat /etc/shadow; touch /etc/vigil-view; \
         chown 1:1 inside.txt 2>/dev/null; echo ctty=$(cut -d' ' -f7 /proc/self/stat)",
    ),
];

/// The world outside the view, and its observers.
struct World {
    out: PathBuf,
    _out_dir: tempfile::TempDir,
    repo: PathBuf,
    _repo_dir: tempfile::TempDir,
    pts: PathBuf,
    master: OwnedFd,
    _slave: OwnedFd,
    fifo_reader: OwnedFd,
    sock: UnixDatagram,
    tcp: TcpListener,
    marker: Marker,
}

impl World {
    fn new(owner: Option<u32>) -> World {
        let out_dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let out = out_dir.path().to_path_buf();
        std::fs::write(out.join("f"), "orig\n").unwrap();
        let (master, slave, pts) = pty();
        let major_minor = std::fs::metadata(&pts).unwrap();
        let rdev = std::os::unix::fs::MetadataExt::rdev(&major_minor);
        let run = |args: &[&str]| {
            assert!(
                Command::new(args[0])
                    .args(&args[1..])
                    .status()
                    .unwrap()
                    .success()
            )
        };
        let (maj, min) = (libc::major(rdev).to_string(), libc::minor(rdev).to_string());
        let alias = out.join("ptyalias").display().to_string();
        run(&["mknod", &alias, "c", &maj, &min]);
        let fifo = out.join("fifo").display().to_string();
        run(&["mkfifo", &fifo]);
        // SAFETY: opening the test's own FIFO, non-blocking, for reading.
        let fifo_reader = unsafe {
            let p = std::ffi::CString::new(fifo.clone()).unwrap();
            OwnedFd::from_raw_fd(libc::open(p.as_ptr(), libc::O_RDONLY | libc::O_NONBLOCK))
        };
        let sock = UnixDatagram::bind(out.join("sock")).unwrap();
        sock.set_nonblocking(true).unwrap();
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        tcp.set_nonblocking(true).unwrap();
        let repo_dir = tempfile::tempdir().unwrap();
        let repo = repo_dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::write(repo.join("tracked"), "keep\n").unwrap();
        let mut sleep = match owner {
            Some(uid) => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={uid}"))
                    .arg(format!("--regid={uid}"))
                    .args(["--clear-groups", "sleep", "1000"]);
                c
            }
            None => {
                let mut c = Command::new("sleep");
                c.arg("1000");
                c
            }
        };
        let marker = Marker::start(&mut sleep);
        for p in [&out, &repo, &repo_dir.path().to_path_buf()] {
            open_up(p);
        }
        World {
            out,
            _out_dir: out_dir,
            repo,
            _repo_dir: repo_dir,
            pts,
            master,
            _slave: slave,
            fifo_reader,
            sock,
            tcp,
            marker,
        }
    }

    fn script(&self, actions: &[usize]) -> String {
        actions
            .iter()
            .map(|&i| {
                CATALOGUE[i]
                    .1
                    .replace("{OUT}", &self.out.display().to_string())
                    .replace("{PTS}", &self.pts.display().to_string())
                    .replace("{PID}", &self.marker.pid().to_string())
                    .replace("{SOCK}", &self.out.join("sock").display().to_string())
                    .replace("{PORT}", &self.tcp.local_addr().unwrap().port().to_string())
                    .replace("{REACH}", &reach())
            })
            .map(|a| format!("( {a} ) 2>&1"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Everything observable from outside.
    fn snapshot(&self) -> BTreeMap<String, String> {
        let mut s = BTreeMap::new();
        for (k, v) in fingerprint(&self.out)
            .into_iter()
            .chain(fingerprint(&self.repo))
        {
            s.insert(k, v);
        }
        for line in ipc_and_keys() {
            s.insert(line, String::new());
        }
        s.insert("marker".into(), self.marker.state());
        s.insert("winsize".into(), format!("{:?}", winsize(&self.master)));
        s
    }

    /// What reached the test's readers during the case (nothing may).
    fn received(&self) -> Vec<String> {
        let mut got = Vec::new();
        let pty = drained(&self.master);
        if !pty.is_empty() {
            got.push(format!("the terminal read {pty:?}"));
        }
        let mut buf = [0u8; 256];
        // SAFETY: reading the test's own FIFO into a local buffer.
        let n = unsafe { libc::read(self.fifo_reader.as_raw_fd(), buf.as_mut_ptr().cast(), 256) };
        if n > 0 {
            got.push("the FIFO got data".into());
        }
        while let Ok(n) = self.sock.recv(&mut buf) {
            got.push(format!("a datagram: {:?}", &buf[..n]));
        }
        match self.tcp.accept() {
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            other => got.push(format!("a TCP connection: {other:?}")),
        }
        let daemons = format!("^sleep 9{}[123]$", self.marker.pid());
        let ps = Command::new("pgrep")
            .args(["-f", &daemons])
            .output()
            .unwrap();
        if !ps.stdout.is_empty() {
            got.push(format!(
                "a daemon lives: {}",
                String::from_utf8_lossy(&ps.stdout)
            ));
        }
        if !common::alive(self.marker.pid() as i32) {
            got.push("the marker died".into());
        }
        got
    }
}

fn open_up(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
}

/// Every entry under `dir`: type, mode and content hash.
fn fingerprint(dir: &Path) -> BTreeMap<String, String> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let t = meta.file_type();
            let what = if t.is_file() {
                format!("file {:x}", Sha256::digest(std::fs::read(&p).unwrap()))
            } else if t.is_dir() {
                stack.push(p.clone());
                "dir".into()
            } else if t.is_fifo() {
                "fifo".into()
            } else if t.is_socket() {
                "socket".into()
            } else if t.is_symlink() {
                format!("link {:?}", std::fs::read_link(&p).unwrap())
            } else {
                "device".into()
            };
            all.insert(
                p.display().to_string(),
                format!("{what} {:o}", meta.permissions().mode()),
            );
        }
    }
    all
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn seed() -> u64 {
    std::env::var("VIGIL_HONESTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        })
}

fn opts() -> PreviewOptions {
    PreviewOptions {
        time_limit: Duration::from_secs(8),
        ..PreviewOptions::default()
    }
}

/// Run `actions` in the view and check the outside.
async fn case(world: &World, actions: &[usize], seed: u64) -> PreviewReport {
    case_as(world, actions, seed, false).await
}

/// [`case`] as a preview, or as a `by_effect` trial: the environment this
/// test runs with (every variable, terminal and socket ones included)
/// and bash reading the command, stderr apart.
async fn case_as(world: &World, actions: &[usize], seed: u64, trial: bool) -> PreviewReport {
    let names: Vec<&str> = actions.iter().map(|&i| CATALOGUE[i].0).collect();
    let script = world.script(actions);
    let before = world.snapshot();
    let made = if trial {
        let run = vigil::exec::preview::Run {
            env: Some(std::env::vars_os().collect()),
            shell: Some("/bin/bash".into()),
            ..Default::default()
        };
        vigil::exec::preview::trial(&script, &world.repo, opts(), run)
            .await
            .map(|(report, _)| report)
    } else {
        preview(&script, &world.repo, opts()).await
    };
    let report = made.unwrap_or_else(|e| panic!("seed {seed} {names:?}: {e}"));
    let after = world.snapshot();
    let changed: Vec<_> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(v))
        .map(|(k, _)| k)
        .chain(after.keys().filter(|k| !before.contains_key(*k)))
        .collect();
    let received = world.received();
    assert!(
        changed.is_empty() && received.is_empty(),
        "seed {seed} {names:?}: outside changed {changed:?}, received {received:?}\n{}",
        report.to_text()
    );
    report
}

#[tokio::test]
async fn nothing_outside_the_writable_layer_changes_whatever_runs_in_the_view() {
    sandbox::set_helper(common::sandbox_helper_bin());
    let world = World::new(None);
    let seed = seed();
    // Every action at once, then random combinations.
    let all: Vec<usize> = (0..CATALOGUE.len()).collect();
    let r = case(&world, &all, seed).await;
    let out = r.output_head.clone() + &r.output_tail;
    assert!(
        out.contains("CapEff:\t0000000000000000"),
        "root keeps capabilities: {out}"
    );
    assert!(!out.contains("root:"), "/etc/shadow was read: {out}");
    assert!(out.contains("ctty=0\n"), "a controlling terminal: {out}");
    let mut rng = Rng(seed);
    for _ in 0..24 {
        let n = 1 + rng.below(4);
        let actions: Vec<usize> = (0..n).map(|_| rng.below(CATALOGUE.len())).collect();
        case(&world, &actions, seed).await;
    }
}

/// A `by_effect` trial is the same view with the real environment and the
/// pane's shell: every action at once, then random combinations, change
/// nothing outside, and the trial says what it tried.
#[tokio::test]
async fn in_a_trial_nothing_outside_changes_either() {
    sandbox::set_helper(common::sandbox_helper_bin());
    let world = World::new(None);
    let seed = seed();
    let all: Vec<usize> = (0..CATALOGUE.len()).collect();
    let r = case_as(&world, &all, seed, true).await;
    assert!(!r.effects().is_empty(), "{}", r.to_text());
    let mut rng = Rng(seed);
    for _ in 0..12 {
        let n = 1 + rng.below(4);
        let actions: Vec<usize> = (0..n).map(|_| rng.below(CATALOGUE.len())).collect();
        case_as(&world, &actions, seed, true).await;
    }
}

/// Addresses of `sendmsg` and `sendto` are recorded, secret places read as
/// denied in the view, and the inside actions do show as effects (the
/// property is not vacuous).
#[tokio::test]
async fn the_report_still_shows_what_happened_inside() {
    sandbox::set_helper(common::sandbox_helper_bin());
    let world = World::new(None);
    let inside = CATALOGUE.iter().position(|(n, _)| *n == "inside").unwrap();
    let udp = "python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for f in (lambda: s.sendmsg([b'a'], [], 0, ('192.0.2.1', 9)), lambda: s.sendto(b'b', ('192.0.2.2', 9))):
    try: f()
    except OSError as e: print(e)\"; ";
    std::fs::create_dir_all(world.repo.join("app")).unwrap();
    std::fs::write(world.repo.join("app/.env.local"), "TOKEN=VIEW-SECRET-7\n").unwrap();
    let secrets = "cat app/.env.local /etc/shadow; grep -rs VIEW-SECRET . ; ";
    let script = format!("{udp}{secrets}{}", world.script(&[inside]));
    let r = preview(&script, &world.repo, opts()).await.unwrap();
    let out = r.output_head.clone() + &r.output_tail;
    assert!(
        !out.contains("VIEW-SECRET-7") && !out.contains("root:"),
        "{out}"
    );
    // The masked places read as empty, and the report names each read.
    assert!(
        r.secrets.iter().any(|s| s.ends_with("app/.env.local"))
            && r.secrets.iter().any(|s| s == "/etc/shadow"),
        "{:?}",
        r.secrets
    );
    let paths: Vec<String> = r
        .files
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    assert!(paths.iter().any(|p| p.ends_with("inside.txt")), "{paths:?}");
    let refused: Vec<&str> = r.refused.iter().map(|c| c.address.as_str()).collect();
    assert!(
        refused.contains(&"192.0.2.1:9") && refused.contains(&"192.0.2.2:9"),
        "{refused:?}"
    );
}

/// As an ordinary user (the view in a user namespace), every action at
/// once changes nothing outside either.
#[test]
fn as_a_user_nothing_outside_changes_either() {
    let world = World::new(Some(65534));
    let all: Vec<usize> = (0..CATALOGUE.len()).collect();
    let script = world.script(&all);
    let staging = tempfile::tempdir_in("/dev/shm").unwrap();
    open_up(staging.path());
    let before = world.snapshot();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::sandbox_helper_bin())
        .args(["__sandbox", "--preview"])
        .args(vigil::exec::preview::world_args(
            &vigil::exec::sandbox::world::world(Path::new("/nonexistent")),
        ))
        .arg("--staging")
        .arg(staging.path())
        .arg("--cwd")
        .arg(&world.repo)
        .arg("--root")
        .arg(&world.repo)
        .args([
            "--time-ms",
            "8000",
            "--size",
            "8388608",
            "--",
            "/bin/sh",
            "-c",
        ])
        .arg(&script)
        .current_dir(&world.repo)
        .env("HOME", &world.repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    let after = world.snapshot();
    let changed: Vec<_> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(v))
        .collect();
    assert!(changed.is_empty(), "{changed:?}\n{said}");
    assert_eq!(before.len(), after.len(), "{after:?}");
    assert_eq!(world.received(), Vec::<String>::new(), "{said}");
    assert!(said.contains("CapEff:\t0000000000000000"), "{said}");
}

/// A terminal handed to the helper (controlling terminal, descriptors 0
/// and 5) reaches no command in the view: descriptor 0 is `/dev/null`,
/// nothing above 2 is inherited, no controlling terminal, and the
/// terminal's reader gets nothing.
#[test]
fn a_terminal_given_to_the_view_does_not_reach_the_command() {
    use std::os::unix::process::CommandExt;
    let (master, slave, _) = pty();
    let staging = tempfile::tempdir_in("/dev/shm").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let raw = slave.as_raw_fd();
    let mut cmd = Command::new("setsid");
    cmd.arg("--ctty")
        .arg(common::sandbox_helper_bin())
        .args(["__sandbox", "--preview"])
        .args(vigil::exec::preview::world_args(
            &vigil::exec::sandbox::world::world(Path::new("/nonexistent")),
        ))
        .arg("--staging")
        .arg(staging.path())
        .arg("--cwd")
        .arg(dir.path())
        .arg("--root")
        .arg(dir.path())
        .args([
            "--time-ms",
            "5000",
            "--size",
            "8388608",
            "--",
            "/bin/sh",
            "-c",
        ])
        .arg(
            "echo ctty=$(cut -d' ' -f7 /proc/self/stat); ls /proc/self/fd | tr '\\n' ' '; echo; \
             readlink /proc/self/fd/0; echo X >&5; echo X > /dev/tty",
        )
        .current_dir(dir.path())
        .stdin(std::process::Stdio::from(slave.try_clone().unwrap()));
    // SAFETY: dup2 in the child before exec, onto descriptor 5.
    unsafe {
        cmd.pre_exec(move || {
            libc::dup2(raw, 5);
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.starts_with("ctty=0\n0 1 2 3 \n/dev/null\n"), "{said}");
    std::thread::sleep(Duration::from_millis(50));
    assert!(drained(&master).is_empty(), "the terminal got output");
}
