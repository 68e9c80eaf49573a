//! The model key inside vigil's own processes, against a command of the
//! same user: vigil runs as an ordinary user (uid 65534 here, through
//! `setpriv`), holds `VIGIL_API_KEY` in its environment and memory, and a
//! process of that user tries to read them through `/proc`. vigil marks
//! itself not dumpable, so `environ` and `maps` are refused; a dumpable
//! process of the same user holding the same key is read without trouble
//! (the control: the attack works where nothing stops it).

use super::common;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const KEY: &str = "sk-planted-dumpable-5d1f83";
const NOBODY: u32 = 65534;

/// `setpriv` to uid/gid 65534 with no groups, then `program`.
fn as_nobody(program: &str) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .process_group(0);
    c
}

/// What the user gets reading `/proc/PID/FILE`.
fn read_proc(pid: u32, file: &str) -> Output {
    as_nobody("cat")
        .arg(format!("/proc/{pid}/{file}"))
        .output()
        .expect("cat as nobody")
}

/// Ends the process group of `child` (one this test created) on drop.
struct Group(Child);

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: kill(2) of the process group this test created.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// The real agent process as uid 65534, with the key in its environment;
/// returns it and its pid (from its ready line).
fn agent(dir: &std::path::Path) -> (Group, u32) {
    let mut cmd = as_nobody(env!("CARGO_BIN_EXE_vigil"));
    cmd.args([
        "--no-tmux",
        "--base-url",
        "http://127.0.0.1:9",
        "--model",
        "m",
    ])
    .arg("__agent")
    .env("VIGIL_API_KEY", KEY)
    .env("VIGIL_RUNTIME_DIR", dir.join("rt"))
    .env("VIGIL_DATA_DIR", dir.join("data"))
    .env("HOME", dir.join("home"))
    .env("XDG_CONFIG_HOME", dir.join("xdg"))
    .current_dir(dir)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = cmd.spawn().expect("vigil __agent as nobody");
    let stdout = child.stdout.take().expect("stdout");
    let group = Group(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("a ready line");
    let ready: serde_json::Value = serde_json::from_str(&line).expect("JSON ready line");
    let pid = ready["ready"]["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("{line}")) as u32;
    (group, pid)
}

#[test]
fn a_command_of_the_same_user_cannot_read_the_agents_environment_or_memory_map() {
    let tmp = tempfile::tempdir().unwrap();
    std::os::unix::fs::chown(tmp.path(), Some(NOBODY), Some(NOBODY)).unwrap();

    // The control: a dumpable process of that user, same key.
    let mut control = as_nobody("sleep");
    control.arg("60").env("VIGIL_API_KEY", KEY);
    let control = Group(control.spawn().expect("sleep as nobody"));
    // Read it only once it is `sleep`: before the exec it is still setpriv
    // changing its uid (not dumpable then), which a busy machine can show.
    let comm = format!("/proc/{}/comm", control.0.id());
    let became = common::eventually(Duration::from_secs(60), || {
        let c = std::fs::read_to_string(&comm).ok()?;
        (c.trim() == "sleep").then_some(())
    });
    assert!(became.is_some(), "the control never became sleep");
    let seen = read_proc(control.0.id(), "environ");
    assert!(seen.status.success(), "{seen:?}");
    assert!(String::from_utf8_lossy(&seen.stdout).contains(KEY));
    assert!(read_proc(control.0.id(), "maps").status.success());

    let (_agent, pid) = agent(tmp.path());
    for file in ["environ", "maps"] {
        let got = read_proc(pid, file);
        let err = String::from_utf8_lossy(&got.stderr);
        assert!(!got.status.success(), "/proc/{pid}/{file} was read");
        assert!(err.contains("Permission denied"), "{file}: {err}");
        assert!(!String::from_utf8_lossy(&got.stdout).contains(KEY));
    }
    // The process is there and still answers to its status file (0444).
    let status = read_proc(pid, "status");
    assert!(status.status.success(), "{status:?}");
    assert!(String::from_utf8_lossy(&status.stdout).contains("Uid:\t65534"));
}
