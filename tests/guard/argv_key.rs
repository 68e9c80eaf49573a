//! A key given with `--api-key` leaves vigil's command line at once: the
//! real binary restarts itself with the key in its (private) environment,
//! so `ps` (which a low command may run and hand to the model) never shows
//! it, and the key still reaches the model server.

use super::common;

use std::io::Read;
use std::net::TcpListener;
use std::time::{Duration, Instant};

const KEY: &str = "sk-ARGV-SECRET-4711";

#[test]
fn the_key_is_not_in_the_command_line_and_still_reaches_the_server() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[model]\nretry_attempts = 1\n").unwrap();
    let mut child = std::process::Command::new(common::vigil_bin())
        .arg("--config")
        .arg(&cfg)
        .args(["--api-key", KEY, "--no-tmux", "exec", "hello"])
        .env(
            "VIGIL_BASE_URL",
            format!("http://{}/v1", listener.local_addr().unwrap()),
        )
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", dir.path())
        .env_remove("VIGIL_API_KEY")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once vigil talks to the server it is past its start (and restart).
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => panic!("vigil never reached the server: {e}"),
        }
    };
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", child.id())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request = vec![0u8; 16 * 1024];
    let n = stream.read(&mut request).unwrap_or(0);
    let request = String::from_utf8_lossy(&request[..n]).to_string();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!cmdline.contains(KEY), "the key is in ps: {cmdline}");
    assert!(!cmdline.contains("--api-key"), "{cmdline}");
    assert!(
        cmdline.contains("exec hello"),
        "the rest of the command line stays: {cmdline}"
    );
    assert!(
        request.contains(KEY),
        "the key still authenticates:\n{request}"
    );
    assert!(stderr.contains("moved to the environment"), "{stderr}");
}
