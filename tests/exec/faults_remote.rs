//! Remote faults injected against the real binary (`vigil exec --json
//! --no-tmux`, plain ssh and container paths), and what the operator sees:
//! - the ssh ControlMaster killed while a command runs: that call fails
//!   with "the connection was lost … whether the command finished is
//!   unknown" (not a fake exit 255), the next command re-establishes the
//!   master and says so, the turn completes;
//! - the container stopped while a command runs in it: that call ends
//!   killed (exit 137, as podman reports it), the next one fails with "is
//!   not running" naming the container (vigil never restarts a
//!   container); the turn still ends with the model's answer.
//!
//! In both, nothing recorded is lost: every session line is valid JSON and
//! every completed call is in it.
//!
//! The managed-tmux variants live in `tests/faults.rs`; the master killed
//! between commands in `tests/remote_ssh.rs`.

use super::common;

use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use common::podman::{Container, Store};
use common::sshd::{Sshd, processes, sleeping};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use vigil_scripted::{Scenario, ScriptedServer};

/// `first` runs, then `sleep SECS` (the call the fault hits), then `after`;
/// the model's last answer quotes the last tool result.
fn scenario(first: &str, secs: u32, after: &str) -> String {
    format!(
        r#"
[[rule]]
when = {{ role = "user" }}
[[rule.tool_calls]]
name = "run_shell"
arguments = {{ command = "{first}", risk = "low", mutation = false, privesc = false, why = "t" }}
[[rule]]
when = {{ role = "tool" }}
[[rule.tool_calls]]
name = "run_shell"
arguments = {{ command = "sleep {secs}", risk = "low", mutation = false, privesc = false, why = "t" }}
[[rule]]
when = {{ role = "tool" }}
[[rule.tool_calls]]
name = "run_shell"
arguments = {{ command = "{after}", risk = "low", mutation = false, privesc = false, why = "t" }}
[[rule]]
when = {{ role = "tool" }}
text = "FINAL: {{last_tool}}"
"#
    )
}

/// What one faulted run left: its JSON events and its data directory.
struct Run {
    events: Vec<Value>,
    code: Option<i32>,
    data: tempfile::TempDir,
}

impl Run {
    /// The `tool_completed` events, in order.
    fn completed(&self) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == "tool_completed")
            .collect()
    }

    fn text(&self) -> String {
        self.events
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Every session line is JSON, and each of `calls` is recorded.
    fn session_keeps(&self, calls: &[&str]) {
        let sessions = self.data.path().join("sessions");
        let mut lines = Vec::new();
        for entry in std::fs::read_dir(&sessions).expect("sessions").flatten() {
            let text = std::fs::read_to_string(entry.path().join("events.jsonl")).unwrap();
            for line in text.lines() {
                let v: Value = serde_json::from_str(line)
                    .unwrap_or_else(|e| panic!("bad session line {line:?}: {e}"));
                lines.push(v.to_string());
            }
        }
        for call in calls {
            assert!(
                lines.iter().any(|l| l.contains(call)),
                "{call} recorded: {lines:#?}"
            );
        }
    }
}

/// Run `vigil exec` with `args` and `config` against `scenario`; once the
/// `sleep SECS` call runs on the target, call `inject`.
async fn faulted_run(
    scenario: String,
    config: &str,
    args: &[&str],
    secs: u32,
    inject: impl FnOnce(),
) -> Run {
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario).unwrap())
        .await
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let cfg = data.path().join("config.toml");
    std::fs::write(&cfg, config).unwrap();
    let mut child = tokio::process::Command::new(common::vigil_bin())
        .args(["--no-tmux", "--config"])
        .arg(&cfg)
        .args(["exec", "--json", "--auto-approve", "go"])
        .args(args)
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", data.path())
        .env_remove("VIGIL_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events = Vec::new();
    let marker = secs.to_string();
    let mut inject = Some(inject);
    let all = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            let started = v["type"] == "tool_started"
                && v["summary"].as_str().unwrap_or("").contains("sleep");
            events.push(v);
            if started {
                common::eventually(Duration::from_secs(60), || {
                    (!sleeping(&marker).is_empty()).then_some(())
                })
                .expect("the sleep runs on the target");
                (inject.take().expect("one sleep"))();
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(90), all)
        .await
        .expect("vigil finished in time (no hang after the fault)");
    let code = child.wait().await.unwrap().code();
    for pid in sleeping(&marker) {
        // SAFETY: kill(2) on a leftover `sleep` this test started.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    assert!(inject.is_none(), "the fault was injected: {events:#?}");
    Run { events, code, data }
}

fn ssh_config(s: &Sshd) -> String {
    let opts: Vec<String> = s.trust_options().iter().map(|o| format!("{o:?}")).collect();
    format!(
        "[ssh]\nidentity_file = {:?}\noptions = [{}]\n",
        s.client_key.display().to_string(),
        opts.join(", ")
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ssh_master_killed_mid_command_fails_the_call_and_the_next_reconnects() {
    let s = Sshd::start().unwrap_or_else(|why| panic!("cannot start a real sshd: {why}"));
    let port = s.port.to_string();
    let config = ssh_config(&s);
    let target = s.target();
    let run = faulted_run(
        scenario("echo before-fault", 293, "echo after-fault"),
        &config,
        &["--ssh", &target],
        293,
        || {
            let masters = processes(|a| {
                a.starts_with("ssh ")
                    && a.contains("ControlMaster=yes")
                    && a.contains(&format!("-p {port} "))
            });
            assert_eq!(masters.len(), 1, "one master for this target: {masters:?}");
            // SAFETY: kill(2) on the master vigil started for this test's sshd.
            unsafe { libc::kill(masters[0] as i32, libc::SIGKILL) };
        },
    )
    .await;
    let text = run.text();
    assert_eq!(run.code, Some(0), "the turn completes:\n{text}");
    let done = run.completed();
    assert_eq!(done.len(), 3, "{text}");
    assert_eq!(done[0]["summary"]["ok"], true, "{text}");
    let error = done[1]["summary"]["error"].as_str().unwrap_or_default();
    assert_eq!(done[1]["summary"]["ok"], false, "{text}");
    assert!(
        error.contains("the connection was lost") && error.contains("unknown"),
        "the lost connection is named: {error}"
    );
    assert_eq!(
        done[2]["summary"]["ok"], true,
        "the next command works: {text}"
    );
    assert!(text.contains("after-fault"), "{text}");
    assert!(
        text.contains("re-established"),
        "the operator is told: {text}"
    );
    run.session_keeps(&["before-fault", "sleep 293", "after-fault"]);
}

fn store() -> &'static Store {
    static STORE: OnceLock<Result<Store, String>> = OnceLock::new();
    match STORE.get_or_init(Store::open) {
        Ok(s) => s,
        Err(why) => panic!("cannot set up a real podman: {why}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_container_stopped_mid_command_fails_the_call_clearly() {
    let c = Container::start(store(), "fault")
        .unwrap_or_else(|why| panic!("cannot start a container: {why}"));
    let engine_args: Vec<String> = store()
        .global_args()
        .iter()
        .map(|a| format!("{a:?}"))
        .collect();
    let config = format!(
        "[container]\nengine = \"podman\"\nengine_args = [{}]\n",
        engine_args.join(", ")
    );
    let run = faulted_run(
        scenario("echo before-fault", 294, "echo after-fault"),
        &config,
        &["--container", &c.name],
        294,
        || c.stop().expect("podman stop"),
    )
    .await;
    let text = run.text();
    assert_eq!(
        run.code,
        Some(0),
        "the turn ends with the model's answer:\n{text}"
    );
    let done = run.completed();
    assert_eq!(done.len(), 3, "{text}");
    assert_eq!(done[0]["summary"]["ok"], true, "{text}");
    // The faulted command died with the container: the call says so rather
    // than passing podman's exit 137 off as the command's own.
    let faulted = &done[1]["summary"];
    let why = faulted["error"].as_str().unwrap_or_default();
    assert!(
        faulted["ok"] == false
            && why.contains(&format!(
                "container `{}` stopped while the command ran",
                c.name
            ))
            && why.contains("whether the command finished is unknown"),
        "the faulted call names the stopped container: {text}"
    );
    let next = done[2]["summary"]["error"].as_str().unwrap_or_default();
    assert!(
        next.contains("is not running") && next.contains(&c.name),
        "the next call names the stopped container: {next}"
    );
    run.session_keeps(&[
        "before-fault",
        "sleep 294",
        "stopped while the command ran",
        "is not running",
    ]);
}
