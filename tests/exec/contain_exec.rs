//! Issue 25 through the real binary: `vigil exec` runs a low-risk call
//! nobody approved (the scripted model asks for it), so it runs in the
//! kernel sandbox, where the working tree's `.env` files, read by something
//! the risk estimate cannot see (a repository's `core.fsmonitor` hook under
//! a low `git status`; a named `.env` is rated high and asked), read as
//! denied (calls on other processes are asked for there:
//! `tests/sandbox_contain/` runs them through the same sandboxed path).

use super::common;

use std::process::Output;

use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "look" }
text = "Looking."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "git status --short; cat readme"
risk = "low"
mutation = false
privesc = false
why = "look around"

[[rule]]
when = { role = "tool" }
text = "Done."
"#;

async fn vigil(dir: &std::path::Path, server: &ScriptedServer, socket: &str) -> Output {
    let cfg = dir.join("fast.toml");
    std::fs::write(
        &cfg,
        "[agent]\napproval = \"auto_low\"\n[model]\nretry_base_ms = 10\nretry_attempts = 3\n",
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(common::vigil_bin());
    cmd.arg("--config")
        .arg(cfg)
        .args(["exec", "please look"])
        .current_dir(dir.join("repo"))
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", dir.join("data"))
        .env("VIGIL_TMUX_SOCKET", socket)
        .env_remove("VIGIL_API_KEY")
        .stdin(std::process::Stdio::null());
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("vigil finished in time")
        .expect("vigil ran")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unasked_call_in_vigil_exec_cannot_read_env_files() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    for args in [
        &["init", "-q"][..],
        &["config", "core.fsmonitor", "cat .env .env.local >&2 #"],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
    std::fs::write(repo.join(".env"), "DB_PASSWORD=EXEC-SECRET-41\n").unwrap();
    std::fs::write(repo.join(".env.local"), "TOKEN=EXEC-SECRET-42\n").unwrap();
    std::fs::write(repo.join("readme"), "hello\n").unwrap();
    let server = ScriptedServer::start(Scenario::from_toml_str(SCENARIO).unwrap())
        .await
        .unwrap();
    let tmux = common::Server {
        socket: common::socket(),
    };
    let out = vigil(dir.path(), &server, &tmux.socket).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("▶ run_shell: git status"), "{stdout}");
    assert!(
        !stdout.contains("? approval needed"),
        "it was asked: {stdout}"
    );
    assert!(stdout.contains("│ hello"), "{stdout}");
    assert!(
        !stdout.contains("EXEC-SECRET"),
        "a secret reached the model: {stdout}"
    );
    assert!(stdout.contains("Permission denied"), "{stdout}");
}
