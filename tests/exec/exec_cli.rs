//! `vigil exec` and `vigil tool` end to end: the real binary as a subprocess
//! against the scripted model server on loopback.

use super::common;

use std::process::Output;

use serde_json::Value;
use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "touch" }
text = "Touching."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "printf 'one\\ntwo'; touch MARKER"
risk = "low"
mutation = true
privesc = false
why = "test"

[[rule]]
when = { role = "tool" }
text = "Finished."
"#;

struct Env {
    server: ScriptedServer,
    dir: tempfile::TempDir,
    marker: std::path::PathBuf,
    /// vigil's private tmux server for this test (killed on drop).
    tmux: common::Server,
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let text = SCENARIO.replace("MARKER", &marker.display().to_string());
    let server = ScriptedServer::start(Scenario::from_toml_str(&text).unwrap())
        .await
        .unwrap();
    Env {
        server,
        dir,
        marker,
        tmux: common::Server {
            socket: common::socket(),
        },
    }
}

async fn vigil(env: &Env, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(common::vigil_bin());
    if !args.contains(&"--config") {
        // Fast retries keep the failure tests short.
        let cfg = env.dir.path().join("fast.toml");
        std::fs::write(&cfg, "[model]\nretry_base_ms = 10\nretry_attempts = 3\n").unwrap();
        cmd.arg("--config").arg(cfg);
    }
    cmd.args(args)
        .env("VIGIL_BASE_URL", env.server.base_url())
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", env.dir.path())
        // `exec --resume` holds the session's lock in the runtime directory.
        .env("VIGIL_RUNTIME_DIR", env.dir.path().join("run"))
        .env("VIGIL_TMUX_SOCKET", &env.tmux.socket)
        .env_remove("VIGIL_API_KEY")
        .stdin(std::process::Stdio::null());
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("vigil finished in time")
        .expect("vigil ran")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_with_auto_approve_runs_and_prints_events() {
    let env = env().await;
    let out = vigil(&env, &["exec", "please touch it", "--auto-approve"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("Touching."), "{stdout}");
    assert!(stdout.contains("▶ run_shell: printf"), "{stdout}");
    assert!(stdout.contains("  │ one\n  │ two\n"), "{stdout}");
    assert!(stdout.contains("✓ run_shell: exit 0"), "{stdout}");
    assert!(stdout.trim_end().ends_with("Finished."), "{stdout}");
    assert!(env.marker.exists());
    // The managed tmux layer's command directory goes with vigil.
    let prefix = format!("vigil-{}-", env.tmux.socket);
    let left: Vec<String> = std::fs::read_dir("/tmp")
        .unwrap()
        .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left in /tmp after exit: {left:?}");
    // And its tmux session (its pane's shell) and server: nothing runs on.
    let sessions = env.tmux.tmux(&["list-sessions", "-F", "#{session_name}"]);
    assert!(sessions.trim().is_empty(), "left running: {sessions}");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_fails_closed_when_approval_is_needed() {
    let env = env().await;
    let out = vigil(&env, &["exec", "please touch it"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "stderr:\n{stderr}");
    assert!(stderr.contains("--auto-approve"), "{stderr}");
    assert!(!env.marker.exists(), "the gated command must not run");
}

#[tokio::test(flavor = "multi_thread")]
async fn demo_exec_runs_the_low_risk_call_by_itself() {
    let env = env().await;
    let out = vigil(&env, &["--demo", "exec", "show me"]).await;
    let stdout = text(&out.stdout);
    let uname = std::process::Command::new("uname")
        .arg("-s")
        .output()
        .unwrap();
    let kernel = text(&uname.stdout).trim().to_string();
    assert!(
        stdout.contains("▶ run_shell: uname -a") && stdout.contains(&kernel),
        "{stdout}"
    );
    // Nobody was asked for it; the gated mutation after it still fails
    // closed (no operator in exec).
    let asked: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("? approval needed"))
        .collect();
    assert!(asked.iter().all(|l| !l.contains("uname")), "{stdout}");
    assert!(asked.iter().any(|l| l.contains(": mkdir -p")), "{stdout}");
    assert_eq!(out.status.code(), Some(3), "{stdout}");
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_resume_talks_to_the_server_given_now() {
    let env = env().await;
    let out = vigil(&env, &["exec", "hello there"]).await;
    let stderr = text(&out.stderr);
    let id = stderr
        .lines()
        .find_map(|l| l.strip_prefix("vigil: session "))
        .expect("the session id")
        .trim()
        .to_string();
    let first = env.server.requests().len();
    // The server moved: --base-url wins over VIGIL_BASE_URL (the helper
    // sets it to the old server) and over where the session was recorded.
    let moved = ScriptedServer::start(Scenario::from_toml_str(SCENARIO).unwrap())
        .await
        .unwrap();
    let url = moved.base_url();
    let out = vigil(
        &env,
        &["exec", "--resume", &id, "again", "--base-url", &url],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(moved.requests().len(), 1, "the moved server answered");
    assert_eq!(
        env.server.requests().len(),
        first,
        "the old one was not asked"
    );
    let last = moved.requests().pop().unwrap().to_string();
    assert!(
        last.contains("hello there"),
        "the history was resumed: {last}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn exec_against_a_dead_server_exits_non_zero_with_the_reason() {
    let env = env().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = format!("http://127.0.0.1:{port}/v1");
    let out = vigil(&env, &["exec", "hi", "--base-url", &url]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("cannot reach"), "{stderr}");
    // Each line names the server once.
    for line in stderr.lines().filter(|l| l.contains("cannot reach")) {
        assert_eq!(line.matches(url.as_str()).count(), 1, "{line}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_call_prints_the_envelope_and_fails_closed_without_a_terminal() {
    let env = env().await;
    let out = vigil(&env, &["tool", "call", "time", r#"{"format":"iso"}"#]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(v["harness_timestamp"]["source"], "harness");
    assert!(v["result"]["value"].as_str().unwrap().ends_with('Z'));

    let args = format!(
        r#"{{"command":"touch {}","risk":"low","mutation":true,"privesc":false,"why":"t"}}"#,
        env.marker.display()
    );
    let out = vigil(&env, &["tool", "call", "run_shell", &args]).await;
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stdout).contains("denied by user"));
    assert!(!env.marker.exists());
    let out = vigil(
        &env,
        &["--auto-approve", "tool", "call", "run_shell", &args],
    )
    .await;
    assert_eq!(out.status.code(), Some(0));
    assert!(env.marker.exists());

    let out = vigil(&env, &["tool", "list", "--json"]).await;
    let defs: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert!(
        defs.as_array()
            .unwrap()
            .iter()
            .any(|d| d["function"]["name"] == "run_shell")
    );
    // Without --json: a short readable listing, one block per tool.
    let out = vigil(&env, &["tool", "list"]).await;
    let listing = text(&out.stdout);
    assert!(
        listing.lines().any(|l| l.starts_with("run_shell ")) && listing.contains("command*"),
        "{listing}"
    );
    assert!(listing.lines().count() < 60, "{listing}");
    assert!(!listing.contains("\"properties\""), "{listing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_config_file_names_file_line_and_key() {
    let env = env().await;
    let path = env.dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "[tools]\nshell_enabled = true\nshel_confirm = false\n[model]\nmodle = \"x\"\n",
    )
    .unwrap();
    let out = vigil(&env, &["--config", path.to_str().unwrap(), "exec", "hi"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.toml") && stderr.contains("line 3") && stderr.contains("shel_confirm"),
        "{stderr}"
    );
    // Every mistake, in file order.
    let first = stderr.find("line 3").unwrap();
    let second = stderr.find("line 5").expect("the second mistake");
    assert!(first < second && stderr.contains("modle"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_call_reaches_every_builtin_through_the_same_path() {
    let env = env().await;
    let out = vigil(&env, &["tool", "list", "--json"]).await;
    let defs: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap())
        .collect();
    for want in [
        "edit",
        "fetch_url",
        "read_file",
        "run_shell",
        "time",
        "web_search",
        "write_file",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }

    // Validation answers before anything runs, with a literal example.
    let out = vigil(&env, &["tool", "call", "run_shell", r#"{"command":"ls"}"#]).await;
    assert_eq!(out.status.code(), Some(1));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("Tool error: invalid arguments"),
        "{stdout}"
    );
    assert!(
        stdout.contains("risk") && stdout.contains("Example"),
        "{stdout}"
    );

    // edit creates and replaces through the CLI (gated: auto-approved here),
    // outside vigil's data directory (a secret place the file tools refuse).
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("notes.txt");
    let create = format!(
        r#"{{"command":"create","path":"{}","file_text":"a\tb\n"}}"#,
        file.display()
    );
    let out = vigil(&env, &["--auto-approve", "tool", "call", "edit", &create]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\tb\n");
    let replace = format!(
        r#"{{"command":"str_replace","path":"{}","old_str":"b","new_str":"c"}}"#,
        file.display()
    );
    let out = vigil(&env, &["--auto-approve", "tool", "call", "edit", &replace]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "a\tc\n",
        "tabs kept"
    );
    // Creating over an existing file is refused.
    let out = vigil(&env, &["--auto-approve", "tool", "call", "edit", &create]).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));

    // fetch_url asks by default (nobody to ask here: 3), and approved it
    // still refuses the loopback model server (SSRF defence on by default).
    let url = format!(r#"{{"url":"{}/models"}}"#, env.server.base_url());
    let out = vigil(&env, &["tool", "call", "fetch_url", &url]).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let out = vigil(&env, &["--auto-approve", "tool", "call", "fetch_url", &url]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("Tool error"),
        "{}",
        text(&out.stdout)
    );
}

/// `vigil policy check -- sh -c 'touch x'` checks the command as typed:
/// the words stay words (`sh -c 'touch x'`), never `sh -c touch x`; one
/// argument is a whole command line.
#[tokio::test(flavor = "multi_thread")]
async fn policy_check_keeps_the_words_it_was_given() {
    let env = env().await;
    let out = vigil(&env, &["policy", "check", "--", "sh", "-c", "touch x"]).await;
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("command:   sh -c 'touch x'\n"), "{stdout}");
    let out = vigil(&env, &["policy", "check", "ls -l /tmp"]).await;
    let stdout = text(&out.stdout);
    assert!(stdout.contains("command:   ls -l /tmp\n"), "{stdout}");
}

/// `vigil ps --help`, `vigil policy check --help` and the other commands
/// that start no agent list their own flags and the few global ones they
/// read, not the agent's (`--demo`, `--model`, `--tmux`…).
#[tokio::test(flavor = "multi_thread")]
async fn client_subcommands_list_only_their_flags() {
    let env = env().await;
    for (sub, own) in [("ps", "--prune"), ("attach", "--watch"), ("stop", "--keep")] {
        let out = vigil(&env, &[sub, "--help"]).await;
        let help = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{help}");
        assert!(help.contains(own) && help.contains("--config"), "{help}");
        for other in ["--demo", "--auto-approve", "--tmux", "--ssh", "--base-url"] {
            assert!(!help.contains(other), "{sub} lists {other}:\n{help}");
        }
    }
    // Nested ones too: `policy check` reads the policy, never a model.
    for (sub, own, other) in [
        (
            &["policy", "check"][..],
            "--preview",
            &["--model", "--api-key", "--demo", "--ssh"][..],
        ),
        (
            &["policy", "replay"],
            "--data-dir",
            &["--model", "--base-url", "--tmux"],
        ),
        (
            &["audit", "verify"],
            "--data-dir",
            &["--model", "--auto-approve", "--tmux"],
        ),
        (
            &["tool", "call"],
            "--ssh",
            &["--model", "--api-key", "--demo", "--no-color"],
        ),
    ] {
        let args = [sub, &["--help"]].concat();
        let out = vigil(&env, &args).await;
        let help = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{help}");
        assert!(help.contains(own) && help.contains("--config"), "{help}");
        for other in other {
            assert!(!help.contains(other), "{sub:?} lists {other}:\n{help}");
        }
    }
    let help = text(&vigil(&env, &["exec", "--help"]).await.stdout);
    assert!(help.contains("--auto-approve"), "{help}");
}

/// An unknown top-level key and a typo in `[console.keys]` are reported
/// together, each with its line.
#[tokio::test(flavor = "multi_thread")]
async fn a_config_reports_a_bad_key_binding_with_the_other_mistakes() {
    let env = env().await;
    let path = env.dir.path().join("keys.toml");
    std::fs::write(
        &path,
        "colour = \"blue\"\n[console]\nbell = false\n[console.keys]\ncancle = \"x\"\n",
    )
    .unwrap();
    let out = vigil(&env, &["--config", path.to_str().unwrap(), "ps"]).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("2 mistakes"), "{stderr}");
    assert!(
        stderr.contains("line 1") && stderr.contains("colour"),
        "{stderr}"
    );
    assert!(
        stderr.contains("line 5: console.keys.cancle: unknown action"),
        "{stderr}"
    );
}
