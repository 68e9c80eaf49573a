//! A client in a process of its own for the agent socket tests: this test
//! binary run again with `--exact helper_proc::helper_client` (as another
//! user through `setpriv` when asked), its process group killed on drop.
#![allow(dead_code)]

/// Run this test binary's [`helper_client`] as a separate process (as
/// another user when `as_nobody`), its own process group.
pub fn helper(socket: &std::path::Path, mode: &str, as_nobody: bool) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let exe = std::env::current_exe().expect("test exe");
    let mut cmd = if as_nobody {
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(exe);
        c
    } else {
        std::process::Command::new(exe)
    };
    cmd.args([
        "--exact",
        "helper_proc::helper_client",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("VIGIL_TEST_HELPER_SOCKET", socket)
    .env("VIGIL_TEST_HELPER_MODE", mode)
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .process_group(0);
    cmd
}

/// Not a test on its own: the client process the tests start.
/// `try`: connect, say hello, print what happened. `slow`: attach as a
/// console, say "attached", then read slowly forever.
#[test]
#[ignore]
fn helper_client() {
    use std::io::{BufRead, Write};
    let (Ok(socket), Ok(mode)) = (
        std::env::var("VIGIL_TEST_HELPER_SOCKET"),
        std::env::var("VIGIL_TEST_HELPER_MODE"),
    ) else {
        return;
    };
    let mut stream = match std::os::unix::net::UnixStream::connect(&socket) {
        Ok(s) => s,
        Err(e) => {
            println!("RESULT connect failed: {e}");
            return;
        }
    };
    let role = if mode == "slow" { "console" } else { "control" };
    let hello = format!(
        "{{\"type\":\"hello\",\"protocol\":2,\"role\":\"{role}\",\"last_seq\":0,\"name\":\"{mode}\"}}\n"
    );
    let _ = stream.write_all(hello.as_bytes());
    let mut reader = std::io::BufReader::new(stream);
    let mut line = String::new();
    let _ = reader.read_line(&mut line);
    println!("RESULT {}", line.trim());
    let _ = std::io::stdout().flush();
    if mode == "slow" {
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
}

/// A helper process whose group (created by the test) is killed on drop.
pub struct Reaped(pub std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// The helper's first `RESULT` line.
pub fn helper_result(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let out = child.stdout.take().expect("stdout");
    let mut all = String::new();
    for line in std::io::BufReader::new(out).lines() {
        let line = line.expect("helper output");
        if let Some(at) = line.find("RESULT ") {
            return line[at + 7..].to_string();
        }
        all += &line;
        all.push('\n');
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    panic!("the helper said nothing; its output:\n{all}\nits stderr:\n{err}");
}
