//! Outside observers for the containment tests (sandbox and preview): a
//! marker process whose limits and priorities must not change, the
//! machine's IPC objects and keys, a pseudo-terminal the test owns, and
//! the hostile-call script.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

/// The hostile-call script (tests/fixtures/contain/reach.py).
pub fn reach() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/contain/reach.py"
    )
    .into()
}

/// The hostile-call script copied into `dir` (readable by anyone): a
/// sandboxed run reads its working tree, not the test's sources.
pub fn reach_in(dir: &std::path::Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let to = dir.join("reach.py");
    std::fs::copy(reach(), &to).unwrap();
    std::fs::set_permissions(&to, std::fs::Permissions::from_mode(0o644)).unwrap();
    to.display().to_string()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Ends the process group of a marker this test started, on drop.
pub struct Marker(pub std::process::Child);

impl Marker {
    pub fn start(cmd: &mut Command) -> Marker {
        Marker(cmd.process_group(0).spawn().unwrap())
    }
    pub fn pid(&self) -> u32 {
        self.0.id()
    }
    /// What another process could change: limits, nice, affinity, policy.
    pub fn state(&self) -> String {
        let pid = self.pid();
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let fields: Vec<&str> = stat.rsplit_once(") ").unwrap().1.split(' ').collect();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let cpus = status.lines().find(|l| l.starts_with("Cpus_allowed_list"));
        let io = Command::new("ionice")
            .args(["-p", &pid.to_string()])
            .output();
        format!(
            "{limits}\nnice={} policy={} {cpus:?} io={}",
            fields[16],
            fields[38],
            io.map(|o| text(&o.stdout)).unwrap_or_default()
        )
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        // SAFETY: kill(2) of the process group this test created.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// The machine's IPC objects and keys, as seen from outside.
pub fn ipc_and_keys() -> BTreeSet<String> {
    let mut all = BTreeSet::new();
    for f in ["msg", "shm", "sem"] {
        let t = std::fs::read_to_string(format!("/proc/sysvipc/{f}")).unwrap_or_default();
        all.extend(t.lines().skip(1).map(|l| format!("{f}: {l}")));
    }
    if let Ok(d) = std::fs::read_dir("/dev/mqueue") {
        all.extend(d.flatten().map(|e| format!("mq: {:?}", e.file_name())));
    }
    // The POSIX queue reach.py makes (the machine may not mount
    // /dev/mqueue): it must not exist outside.
    // SAFETY: mq_open with a NUL-terminated name, read-only, no creation;
    // the descriptor is closed at once.
    let mq = unsafe { libc::mq_open(c"/vigil-contain".as_ptr(), libc::O_RDONLY) };
    if mq >= 0 {
        all.insert("mq: /vigil-contain exists".into());
        // SAFETY: closing the descriptor just opened.
        unsafe { libc::mq_close(mq) };
    }
    // Every user's key count and quota (root does not see other users'
    // keys in /proc/keys).
    let users = std::fs::read_to_string("/proc/key-users").unwrap_or_default();
    all.extend(users.lines().map(|l| format!("key-users: {l}")));
    let keys = std::fs::read_to_string("/proc/keys").unwrap_or_default();
    all.extend(
        keys.lines()
            .filter(|l| l.contains("vigil-contain"))
            .map(|l| format!("key: {l}")),
    );
    all
}

/// A pseudo-terminal this test owns: (master, slave, slave path).
pub fn pty() -> (OwnedFd, OwnedFd, PathBuf) {
    let (mut m, mut s) = (0, 0);
    let mut name = [0 as libc::c_char; 64];
    // SAFETY: openpty writes two descriptors and the slave's name (64
    // bytes are plenty); no termios or winsize given.
    let rc = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            name.as_mut_ptr(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: openpty returned two fresh descriptors we now own; the name
    // is NUL-terminated.
    unsafe {
        let path = std::ffi::CStr::from_ptr(name.as_ptr())
            .to_string_lossy()
            .into_owned();
        libc::fcntl(m, libc::F_SETFL, libc::O_NONBLOCK);
        (
            OwnedFd::from_raw_fd(m),
            OwnedFd::from_raw_fd(s),
            path.into(),
        )
    }
}

pub fn winsize(fd: &OwnedFd) -> (u16, u16) {
    // SAFETY: TIOCGWINSZ writes one winsize.
    let mut w: libc::winsize = unsafe { std::mem::zeroed() };
    unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCGWINSZ, &mut w) };
    (w.ws_row, w.ws_col)
}

/// What the test's side of the terminal received (nothing expected).
pub fn drained(master: &OwnedFd) -> Vec<u8> {
    let mut buf = [0u8; 4096];
    // SAFETY: reading into a local buffer from a non-blocking descriptor.
    let n = unsafe { libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    buf[..n.max(0) as usize].to_vec()
}
