//! Sessions with the real binary: `kill -9` in the middle of a turn, then
//! `vigil resume --last --exec`, `vigil sessions`; `--json` output; exit
//! codes; and an API key planted in the environment that must appear in no
//! artefact of the run (session files, spill files, log, stdout, stderr).

use super::common;

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "slow job" }
text = "Starting."
[[rule.tool_calls]]
name = "run_shell"
arguments = { command = "echo first-done", risk = "low", mutation = false, privesc = false, why = "t" }
[[rule]]
when = { role = "tool", contains = "first-done" }
[[rule.tool_calls]]
name = "run_shell"
arguments = { command = "echo $$ > PIDFILE; sleep 30", risk = "low", mutation = false, privesc = false, why = "t" }
[[rule]]
when = { role = "user", contains = "loop" }
[[rule.tool_calls]]
name = "time"
[[rule]]
when = { role = "tool" }
times = 0
[[rule.tool_calls]]
name = "time"
[[rule]]
when = { role = "user" }
times = 0
text = "echo: {last_user}"
"#;

const KEY: &str = "sk-planted-7f3a9c1e5b";

struct Env {
    server: ScriptedServer,
    dir: tempfile::TempDir,
    pidfile: std::path::PathBuf,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let text = SCENARIO.replace("PIDFILE", &pidfile.display().to_string());
    let server = ScriptedServer::start(Scenario::from_toml_str(&text).unwrap())
        .await
        .unwrap();
    std::fs::write(
        dir.path().join("cfg.toml"),
        "[model]\nretry_base_ms = 10\n[agent]\nmax_rounds = 3\n",
    )
    .unwrap();
    Env {
        server,
        dir,
        pidfile,
    }
}

fn command(env: &Env, args: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(common::vigil_bin());
    cmd.arg("--no-tmux")
        .arg("--config")
        .arg(env.dir.path().join("cfg.toml"))
        .args(args)
        .env("VIGIL_BASE_URL", env.server.base_url())
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", env.dir.path())
        // `resume --exec` holds the session's lock in the runtime directory.
        .env("VIGIL_RUNTIME_DIR", env.dir.path().join("run"))
        .env("VIGIL_API_KEY", KEY)
        .env_remove("VIGIL_LOG")
        .stdin(Stdio::null());
    cmd
}

async fn vigil(env: &Env, args: &[&str]) -> Output {
    tokio::time::timeout(Duration::from_secs(30), command(env, args).output())
        .await
        .expect("vigil finished in time")
        .expect("vigil ran")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json_lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn kill_9_mid_turn_then_resume_loses_no_completed_call() {
    let env = env().await;
    let mut child = command(&env, &["exec", "--json", "--auto-approve", "slow job"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let wait_for_sleep = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["type"] == "tool_started" && v["summary"].as_str().unwrap().contains("sleep 30") {
                return;
            }
        }
        panic!("vigil ended before the slow call started");
    };
    tokio::time::timeout(Duration::from_secs(20), wait_for_sleep)
        .await
        .unwrap();
    let shell_pid: i32 = loop {
        if let Ok(t) = std::fs::read_to_string(&env.pidfile)
            && let Ok(pid) = t.trim().parse()
        {
            break pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // SAFETY: plain kill(2) on the child we spawned and on the orphaned
    // process group of its slow command.
    unsafe {
        libc::kill(child.id().unwrap() as i32, libc::SIGKILL);
    }
    let _ = child.wait().await;
    unsafe {
        libc::kill(-shell_pid, libc::SIGKILL);
        libc::kill(shell_pid, libc::SIGKILL);
    }

    let out = vigil(
        &env,
        &[
            "resume",
            "--last",
            "--exec",
            "continue",
            "--json",
            "--auto-approve",
        ],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = json_lines(&out);
    let restored = events
        .iter()
        .find(|e| e["type"] == "session_restored")
        .expect("session_restored event");
    let interrupted = restored["interrupted"].as_array().unwrap();
    assert_eq!(interrupted.len(), 1, "{restored:#}");
    assert!(
        interrupted[0]["arguments"]
            .as_str()
            .unwrap()
            .contains("sleep 30")
    );
    assert_eq!(interrupted[0]["started"], true);
    let tools = restored["tools"].as_array().unwrap();
    assert!(
        tools[0]["summary"]["ok"] == true,
        "the completed call is kept"
    );
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "notice"
                && e["text"].as_str().unwrap().contains("interrupted call"))
    );
    // The model saw the completed result and the interruption.
    let last = env.server.requests().pop().unwrap();
    let body = last.to_string();
    assert!(body.contains("first-done"), "{body}");
    assert!(body.contains("outcome is unknown"), "{body}");
    assert_eq!(
        last["messages"].as_array().unwrap().last().unwrap()["content"],
        "continue"
    );

    let out = vigil(&env, &["sessions"]).await;
    let listing = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(listing.lines().count(), 2, "{listing}");
    assert!(listing.contains("echo: continue"), "{listing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_exit_codes_and_no_key_in_any_artefact() {
    let env = env().await;
    // Budget exhausted: max_rounds = 3 and the model keeps calling tools.
    let out = vigil(&env, &["-vv", "exec", "--json", "loop forever"]).await;
    assert_eq!(out.status.code(), Some(6), "{}", text(&out.stderr));
    let events = json_lines(&out);
    assert!(events.iter().all(|e| e["type"].is_string()));
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "turn_failed" && e["kind"] == "budget_exhausted")
    );
    assert_eq!(events.last().unwrap()["type"], "turn_finished");
    assert!(events.iter().any(|e| e["type"] == "context_usage"));

    // The key was really sent...
    let headers = env.server.request_headers();
    assert!(
        headers[0]
            .iter()
            .any(|(k, v)| k == "authorization" && v == &format!("Bearer {KEY}"))
    );
    // ...and is in no artefact.
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(!text(bytes).contains(KEY), "key in {name}");
    }
    let mut files = 0;
    scan(env.dir.path(), &mut files);
    assert!(files >= 4, "session files and log were written ({files})");
    let log = std::fs::read_to_string(env.dir.path().join("vigil.log")).unwrap_or_default();
    assert!(log.contains("model request"), "-vv logs requests: {log}");

    // Unknown session: a usage error.
    let out = vigil(&env, &["resume", "no-such-session", "--exec", "x"]).await;
    assert_eq!(out.status.code(), Some(2));
}

fn scan(dir: &Path, files: &mut usize) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            scan(&path, files);
        } else if path.extension().is_none_or(|e| e != "toml") {
            *files += 1;
            let content = std::fs::read(&path).unwrap();
            assert!(
                !text(&content).contains(KEY),
                "the API key leaked into {}",
                path.display()
            );
        }
    }
}
