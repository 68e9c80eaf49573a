//! A real OpenSSH server on 127.0.0.1 for tests: generated host and client
//! keys in a temporary directory, a free port, killed on drop. Starting it
//! either works or returns why it could not (tests fail with that reason;
//! they never skip).
#![allow(dead_code)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub user: String,
    /// Private key the server accepts.
    pub client_key: PathBuf,
    /// A known_hosts file that trusts this server's host key.
    pub known_hosts: PathBuf,
    child: Child,
}

fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn keygen(path: &Path) -> Result<(), String> {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path))
    .map(|_| ())
}

/// The account tests log in as, when the machine has it: a second name for
/// uid 0 whose login shell is /bin/sh and whose home has no shell rc files.
/// Root's own ~/.bashrc (here it runs `pyenv init`, which takes a lock and
/// can stall for 60 s when many shells start at once) would otherwise run
/// before every remote command. It is machine setup, like the packages:
/// `.ci/run` makes it (once, idempotently) and the tests never add or change
/// an account; without it they log in as the current user.
fn test_user() -> Result<String, String> {
    const NAME: &str = "vigilssh";
    let exists = Command::new("id")
        .arg(NAME)
        .output()
        .is_ok_and(|o| o.status.success());
    if exists {
        Ok(NAME.to_string())
    } else {
        Err(format!("no account {NAME} (.ci/run makes it)"))
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot bind: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("no local address: {e}"))
}

impl Sshd {
    /// Start sshd; `Err` says why it could not.
    pub fn start() -> Result<Sshd, String> {
        let sshd = ["/usr/sbin/sshd", "/usr/local/sbin/sshd"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .ok_or("sshd is not installed (apt-get install openssh-server; .ci/run does)")?;
        // Privilege separation directory; sshd refuses to start without it.
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = tempfile::Builder::new()
            .prefix("vigil-sshd-")
            .tempdir()
            .map_err(|e| format!("tempdir: {e}"))?;
        let d = dir.path();
        keygen(&d.join("hostkey"))?;
        keygen(&d.join("client_key"))?;
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys"))
            .map_err(|e| format!("authorized_keys: {e}"))?;
        let user = test_user().or_else(|_| run(Command::new("id").arg("-un")))?;
        let hostpub =
            std::fs::read_to_string(d.join("hostkey.pub")).map_err(|e| format!("host key: {e}"))?;
        let mut last = String::new();
        for _ in 0..5 {
            let port = free_port()?;
            let config = d.join("sshd_config");
            let text = format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/hostkey\nPidFile {d}/sshd.pid\n\
                 PermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nAuthorizedKeysFile {d}/authorized_keys\n\
                 StrictModes no\nMaxSessions 100\nMaxStartups 100\nLogLevel ERROR\n",
                d = d.display()
            );
            std::fs::write(&config, text).map_err(|e| format!("sshd_config: {e}"))?;
            run(Command::new(sshd).arg("-t").arg("-f").arg(&config))?;
            let log = std::fs::File::create(d.join("sshd.log")).map_err(|e| e.to_string())?;
            let mut child = Command::new(sshd)
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| format!("cannot start sshd: {e}"))?;
            let start = Instant::now();
            let up = loop {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    break true;
                }
                if let Ok(Some(_)) = child.try_wait() {
                    break false;
                }
                if start.elapsed() > Duration::from_secs(10) {
                    break false;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            if up {
                let known_hosts = d.join("known_hosts");
                let mut f = std::fs::File::create(&known_hosts).map_err(|e| e.to_string())?;
                writeln!(f, "[127.0.0.1]:{port} {}", hostpub.trim()).map_err(|e| e.to_string())?;
                return Ok(Sshd {
                    port,
                    user,
                    client_key: d.join("client_key"),
                    known_hosts,
                    child,
                    dir,
                });
            }
            let _ = child.kill();
            let _ = child.wait();
            last = std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default();
        }
        Err(format!("sshd did not come up: {}", last.trim()))
    }

    /// `user@127.0.0.1:port`.
    pub fn target(&self) -> String {
        format!("{}@127.0.0.1:{}", self.user, self.port)
    }

    /// `-o` options that trust exactly this server.
    pub fn trust_options(&self) -> Vec<String> {
        vec![
            format!("UserKnownHostsFile={}", self.known_hosts.display()),
            "StrictHostKeyChecking=yes".to_string(),
        ]
    }

    /// An `[ssh]` config section that logs in with `key` and trusts exactly
    /// this server.
    pub fn config_toml(&self, key: &Path) -> String {
        let opts: Vec<String> = self
            .trust_options()
            .iter()
            .map(|o| format!("{o:?}"))
            .collect();
        format!(
            "[ssh]\nidentity_file = {:?}\noptions = [{}]\n",
            key.display().to_string(),
            opts.join(", ")
        )
    }

    /// A second key the server does not accept.
    pub fn stranger_key(&self) -> Result<PathBuf, String> {
        let p = self.dir.path().join("stranger_key");
        if !p.exists() {
            keygen(&p)?;
        }
        Ok(p)
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Pids of live `sleep` processes whose arguments contain `marker` (the test
/// server is local, so remote processes are visible here).
pub fn sleeping(marker: &str) -> Vec<u32> {
    // Only the command itself, not an ssh/sh wrapper quoting it.
    processes(|args| args.starts_with("sleep ") && args.contains(marker))
}

/// Pids of live (not zombie) processes, other than this one, whose
/// space-joined arguments satisfy `pred`.
pub fn processes(pred: impl Fn(&str) -> bool) -> Vec<u32> {
    let me = std::process::id();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if state.starts_with('Z') {
            continue;
        }
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if pred(&text) {
            found.push(pid);
        }
    }
    found
}
