//! What tool processes inherit, through the real binary: `vigil exec` with
//! the scripted model runs `env` in plain and tmux mode, and an MCP stdio
//! server dumps its environment; none of them sees vigil's key variables or
//! secret-looking names, and `[tools] env_passthrough` keeps one on purpose.
//! With `[tools] shell_always_sandboxed` the same path runs the kernel
//! sandbox: a write fails in both modes.

use super::common;

use std::process::Output;

use vigil_scripted::{Scenario, ScriptedServer};

const SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "show" }
text = "Looking."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "COMMAND"
risk = "low"
mutation = false
privesc = false
why = "test"

[[rule]]
when = { role = "tool" }
text = "Finished."
"#;

/// Secrets in vigil's own environment, and what must reach tools.
const SECRETS: &[(&str, &str)] = &[
    ("VIGIL_API_KEY", "sk-vigil-0001"),
    ("LLM_CRED", "cred-0002"),
    ("GITHUB_TOKEN", "ghp-0003"),
    ("DB_PASSWORD", "pw-0004"),
    ("aws_secret_access_key", "aws-0005"),
    ("MY_BUILD_HOOK", "hook-0006"),
];
const KEPT: &[(&str, &str)] = &[
    ("PLAIN_SETTING", "visible-0007"),
    ("CI_JOB_TOKEN", "ci-0008"),
];

struct Env {
    server: ScriptedServer,
    dir: tempfile::TempDir,
    config: std::path::PathBuf,
    tmux: common::Server,
}

async fn env(command: &str, extra_config: &str) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let text = SCENARIO.replace("COMMAND", command);
    let server = ScriptedServer::start(Scenario::from_toml_str(&text).unwrap())
        .await
        .unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[model]\nretry_base_ms = 10\napi_key_env = \"LLM_CRED\"\n\
             [tools]\nenv_passthrough = [\"CI_JOB_TOKEN\"]\nenv_exclude = [\"*_HOOK\"]\n{extra_config}"
        ),
    )
    .unwrap();
    Env {
        server,
        dir,
        config,
        tmux: common::Server {
            socket: common::socket(),
        },
    }
}

async fn vigil(env: &Env, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(common::vigil_bin());
    cmd.arg("--config")
        .arg(&env.config)
        .args(args)
        .env("VIGIL_BASE_URL", env.server.base_url())
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", env.dir.path())
        .env("VIGIL_TMUX_SOCKET", &env.tmux.socket)
        .envs(SECRETS.iter().copied())
        .envs(KEPT.iter().copied())
        .stdin(std::process::Stdio::null());
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("vigil finished in time")
        .expect("vigil ran")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn assert_clean(said: &str) {
    for (name, value) in SECRETS {
        assert!(
            !said.contains(value),
            "{name}'s value reached a tool:\n{said}"
        );
        assert!(
            !said.contains(&format!("{name}=")),
            "{name} reached a tool:\n{said}"
        );
    }
}

async fn env_in_mode(mode: &str) {
    let e = env("env | sort; echo END-OF-ENV", "").await;
    let out = vigil(
        &e,
        &["exec", "show the environment", "--auto-approve", mode],
    )
    .await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", text(&out.stderr));
    assert!(said.contains("END-OF-ENV"), "{mode}: {said}");
    assert_clean(&said);
    // In tmux mode the command really ran in a pane.
    assert_eq!(
        said.contains("TMUX_PANE="),
        mode == "--tmux",
        "{mode}: {said}"
    );
    for (name, value) in KEPT {
        assert!(
            said.contains(&format!("{name}={value}")),
            "{mode}: {name} missing:\n{said}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_commands_see_no_secrets() {
    env_in_mode("--no-tmux").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tmux_pane_commands_see_no_secrets() {
    env_in_mode("--tmux").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_stdio_servers_see_no_secrets() {
    let dump = tempfile::tempdir().unwrap();
    let file = dump.path().join("mcp-env");
    let extra = format!(
        "[mcp.servers.envdump]\ncommand = \"sh\"\nargs = [\"-c\", \"env > {}\"]\n\
         env = {{ DELIBERATE_TOKEN = \"set-by-config\" }}\n",
        file.display()
    );
    let e = env("true", &extra).await;
    let _ = vigil(&e, &["--no-tmux", "tool", "list"]).await;
    let said = std::fs::read_to_string(&file).expect("the MCP server ran");
    assert_clean(&said);
    assert!(said.contains("PLAIN_SETTING=visible-0007"), "{said}");
    // A variable the server's own config sets is deliberate.
    assert!(said.contains("DELIBERATE_TOKEN=set-by-config"), "{said}");
}

async fn sandboxed_in_mode(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("marker");
    let command = format!(
        "touch {}; echo touch=$?; printenv PLAIN_SETTING; cat /proc/$PPID/comm; echo END",
        marker.display()
    );
    let e = env(&command, "shell_always_sandboxed = true\n").await;
    let out = vigil(&e, &["exec", "show it", "--auto-approve", mode]).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}\n{}", text(&out.stderr));
    assert!(
        said.contains("touch=1") && said.contains("END"),
        "{mode}: {said}"
    );
    // The real binary found the small helper next to itself.
    assert!(said.contains("vigil-sandbox\n"), "{mode}: {said}");
    // The sandbox's environment is an allow-list.
    assert!(!said.contains("visible-0007"), "{mode}: {said}");
    assert!(!marker.exists(), "{mode}: the sandboxed call wrote a file");
}

#[tokio::test(flavor = "multi_thread")]
async fn always_sandboxed_shell_cannot_write_in_plain_mode() {
    sandboxed_in_mode("--no-tmux").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn always_sandboxed_shell_cannot_write_in_tmux_mode() {
    sandboxed_in_mode("--tmux").await;
}
