//! `[[hooks.decide]]` end to end through the real binary (`vigil exec
//! --json` against a scripted model): a hook that denies `rm`, one that
//! allows `make test` (which then runs unasked, and never over a deny or
//! ask rule), an allowed write still refused by the kernel sandbox, one that hangs past its limit and one that crashes (both
//! ask; its process group is killed), one over real HTTP, and the
//! PreToolUse form (a faithful exit-2 fixture, and the real
//! `claude-safety-guard` from PyPI when it is installed).

use super::common;
use super::hooks_common;

use std::io::{BufRead, BufReader, Read, Write};
use std::time::{Duration, Instant};

use hooks_common::{Home, one_command, script};
use serde_json::Value;

fn read_json(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_denies_rm_and_sees_the_parsed_call() {
    let home = Home::new();
    let victim = home.file("victim.txt");
    std::fs::write(&victim, "keep me").unwrap();
    let input = home.file("in.json");
    let hook = script(
        &home,
        "deny.sh",
        &format!(
            "cat > {:?}\nprintf '%s' '{{\"version\":1,\"decision\":\"deny\",\"reason\":\"no rm here\"}}'",
            input.display().to_string()
        ),
    );
    let config = format!(
        "[[hooks.decide]]\nname = \"no-rm\"\ncommand = {hook}\nmatch = {{ command = [\"rm\"] }}\n"
    );
    let command = format!("rm -f {}", victim.display());
    let run = home.exec(&config, &one_command(&command), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let resolved = run.resolved();
    assert_eq!(resolved["decided_by"]["by"], "hook", "{resolved}");
    let hook_name = resolved["decided_by"]["hook"].as_str().unwrap();
    assert!(
        hook_name.contains("no-rm") && hook_name.contains("config.toml:1"),
        "{hook_name}"
    );
    assert_eq!(
        resolved["decision"]["decision"], "deny_with_reason",
        "{resolved}"
    );
    assert!(
        resolved["decision"]["value"]
            .as_str()
            .unwrap()
            .contains("no rm here")
    );
    assert!(victim.exists(), "the denied rm never ran");
    assert!(run.of("tool_started").is_empty(), "nothing started");

    let got = read_json(&input);
    assert_eq!(got["version"], 1);
    assert_eq!(got["event"], "decide");
    assert_eq!(got["tool"], "run_shell");
    assert_eq!(got["action"], command);
    assert_eq!(got["arguments"]["command"], command);
    assert_eq!(got["command"]["commands"][0][0], "rm");
    assert_eq!(got["command"]["plain"], true);
    assert!(got["estimate"]["risk"].is_string(), "{got}");
    assert_eq!(got["model"]["why"], "the hook test asks");
    assert_eq!(got["session_id"].as_str(), Some(run.session().as_str()));
    assert!(got["target"].is_string() && got["cwd"].is_string(), "{got}");
}

fn allow_make_test(home: &Home, rule: &str) -> String {
    let marker = home.file("asked.txt");
    let hook = script(
        home,
        "allow.sh",
        &format!(
            "cat > {:?}\necho '{{\"version\":1,\"decision\":\"allow\",\"reason\":\"tests are fine\"}}'",
            marker.display().to_string()
        ),
    );
    format!(
        "{rule}\n[[hooks.decide]]\nname = \"tests-ok\"\ncommand = {hook}\n\
         match = {{ tools = [\"run_shell\"], command = [\"make\", \"test\"] }}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allow_hook_runs_make_test_unasked_but_never_over_a_deny_or_ask_rule() {
    // Alone: the hook's allow stands in for the operator (sandboxed run).
    let home = Home::new();
    std::fs::write(home.file("Makefile"), "test:\n\t@echo made-test\n").unwrap();
    let config = allow_make_test(&home, "");
    let run = home.exec(&config, &one_command("make test"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let resolved = run.resolved();
    assert_eq!(resolved["decided_by"]["by"], "hook", "{resolved}");
    assert_eq!(
        resolved["decision"]["decision"], "approve_unasked",
        "{resolved}"
    );
    let done = run.of("tool_completed");
    assert_eq!(done.len(), 1, "make test ran once");
    assert_eq!(done[0]["summary"]["exit_code"], 0, "{:?}", done[0]);

    // A deny rule wins: the hook is not even asked.
    let home = Home::new();
    let rule = "[[approval.rules]]\ncommand = [\"make\", \"test\"]\ndecision = \"deny\"\n";
    let config = allow_make_test(&home, rule);
    let run = home.exec(&config, &one_command("make test"), &[]).await;
    let resolved = run.resolved();
    assert_eq!(resolved["decided_by"]["by"], "policy_rule", "{resolved}");
    assert!(
        resolved["decided_by"]["rule"]
            .as_str()
            .unwrap()
            .contains("config.toml:1")
    );
    assert_eq!(resolved["decision"]["decision"], "deny_with_reason");
    assert!(run.of("tool_started").is_empty());
    assert!(
        !home.file("asked.txt").exists(),
        "a deny rule stops before the hooks"
    );

    // An ask rule still asks (vigil exec has no operator: exit 3, nothing runs).
    let home = Home::new();
    let rule = "[[approval.rules]]\ncommand = [\"make\", \"test\"]\ndecision = \"ask\"\n";
    let config = allow_make_test(&home, rule);
    let run = home.exec(&config, &one_command("make test"), &[]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let request = run.request();
    assert_eq!(request["automatic"], Value::Null, "it waited: {request}");
    let hooks = request["facts"]["hooks"][0].as_str().unwrap();
    assert!(
        hooks.contains("tests-ok") && hooks.contains("allow"),
        "{hooks}"
    );
    assert!(run.of("tool_started").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_that_hangs_or_crashes_asks_and_never_allows() {
    // Hangs past its 1 s limit: asked, and its process group is killed.
    let home = Home::new();
    let pid_file = home.file("hook.pid");
    let hook = script(
        &home,
        "hang.sh",
        &format!(
            "echo $$ > {:?}\nexec sleep 60",
            pid_file.display().to_string()
        ),
    );
    let config = format!("[[hooks.decide]]\nname = \"slow\"\ncommand = {hook}\ntimeout_secs = 1\n");
    let started = Instant::now();
    let run = home
        .exec(&config, &one_command("touch made.txt"), &[])
        .await;
    assert_eq!(
        run.code, 3,
        "asked, and vigil exec has no operator: {}",
        run.stderr
    );
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "the hook was not waited for"
    );
    let line = run.request()["facts"]["hooks"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        line.contains("slow") && line.contains("failed") && line.contains("ask"),
        "{line}"
    );
    assert!(line.contains("timed out"), "{line}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        common::gone_within(pid, Duration::from_secs(30)),
        "the hook's sleep {pid} was killed"
    );
    assert!(!home.file("made.txt").exists());

    // Crashes (killed by a signal): asked.
    let home = Home::new();
    let hook = script(&home, "crash.sh", "cat >/dev/null\nkill -SEGV $$");
    let config = format!("[[hooks.decide]]\nname = \"crashy\"\ncommand = {hook}\n");
    let run = home
        .exec(&config, &one_command("touch made.txt"), &[])
        .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    let line = run.request()["facts"]["hooks"][0]
        .as_str()
        .unwrap()
        .to_string();
    assert!(line.contains("crashy") && line.contains("failed"), "{line}");

    // A nonsense answer with on_failure = "deny": denied, saying why.
    let home = Home::new();
    let hook = script(&home, "babble.sh", "cat >/dev/null\necho 'sure, go ahead'");
    let config =
        format!("[[hooks.decide]]\nname = \"babble\"\ncommand = {hook}\non_failure = \"deny\"\n");
    let run = home
        .exec(&config, &one_command("touch made.txt"), &[])
        .await;
    let resolved = run.resolved();
    assert_eq!(resolved["decided_by"]["by"], "hook", "{resolved}");
    assert!(
        resolved["decided_by"]["reason"]
            .as_str()
            .unwrap()
            .contains("not answer v1 JSON")
    );
    assert!(!home.file("made.txt").exists());
}

/// A one-request HTTP server answering `answer`; the request body comes
/// back on the channel.
fn http_hook(answer: &'static str) -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/decide", listener.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line.trim().is_empty() {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let _ = tx.send(String::from_utf8_lossy(&body).into_owned());
        let mut stream = stream;
        let reply = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        );
        stream.write_all(reply.as_bytes()).unwrap();
    });
    (url, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_over_http_decides() {
    let home = Home::new();
    let (url, bodies) =
        http_hook(r#"{"version":1,"decision":"deny","reason":"the server says no"}"#);
    let config = format!("[[hooks.decide]]\nname = \"server\"\nurl = {url:?}\ntimeout_secs = 5\n");
    let run = home.exec(&config, &one_command("rm -rf build"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let resolved = run.resolved();
    assert_eq!(resolved["decided_by"]["by"], "hook");
    assert_eq!(resolved["decided_by"]["reason"], "the server says no");
    let body: Value =
        serde_json::from_str(&bodies.recv_timeout(Duration::from_secs(5)).unwrap()).unwrap();
    assert_eq!(body["version"], 1);
    assert_eq!(
        body["command"]["commands"][0],
        serde_json::json!(["rm", "-rf", "build"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pretooluse_hook_blocks_with_exit_2_and_reads_its_input() {
    let home = Home::new();
    let input = home.file("pre.json");
    // A faithful fixture of the common PreToolUse guard: block `rm` with
    // exit code 2 and the reason on stderr, say nothing otherwise.
    let hook = script(
        &home,
        "pre.sh",
        &format!(
            "cat > {:?}\ngrep -q '\"command\":\"rm ' {:?} && {{ echo 'rm is blocked by policy' >&2; exit 2; }}\nexit 0",
            input.display().to_string(),
            input.display().to_string()
        ),
    );
    let config =
        format!("[[hooks.decide]]\nname = \"guard\"\nformat = \"pretooluse\"\ncommand = {hook}\n");
    let run = home.exec(&config, &one_command("rm -rf build"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let resolved = run.resolved();
    assert_eq!(
        resolved["decided_by"]["reason"], "rm is blocked by policy",
        "{resolved}"
    );
    let got = read_json(&input);
    assert_eq!(got["hook_event_name"], "PreToolUse");
    assert_eq!(got["tool_name"], "Bash");
    assert_eq!(got["tool_input"]["command"], "rm -rf build");
    assert_eq!(got["session_id"].as_str(), Some(run.session().as_str()));
    assert!(
        got["transcript_path"]
            .as_str()
            .unwrap()
            .ends_with("messages.jsonl")
    );

    // Silence (exit 0, nothing printed) is no opinion: the mode asks.
    let home = Home::new();
    let hook = script(&home, "pre.sh", "cat >/dev/null\nexit 0");
    let config = format!("[[hooks.decide]]\nformat = \"pretooluse\"\ncommand = {hook}\n");
    let run = home
        .exec(&config, &one_command("touch made.txt"), &[])
        .await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.request()["facts"]["hooks"][0]
            .as_str()
            .unwrap()
            .contains("abstain")
    );
}

/// The real guard from PyPI (`claude-safety-guard`, installed by `.ci/run`
/// into tests/.venv with its hash pinned): `VIGIL_TEST_GUARD`, else
/// tests/.venv, else PATH.
fn real_guard() -> Option<String> {
    let candidates = [
        std::env::var("VIGIL_TEST_GUARD").ok(),
        Some(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/.venv/bin/claude-safety-guard"
            )
            .into(),
        ),
    ];
    if let Some(found) = candidates
        .into_iter()
        .flatten()
        .find(|p| std::path::Path::new(p).exists())
    {
        return Some(found);
    }
    let on_path = std::process::Command::new("sh")
        .args(["-c", "command -v claude-safety-guard"])
        .output()
        .ok()?;
    let path = String::from_utf8_lossy(&on_path.stdout).trim().to_string();
    (!path.is_empty()).then_some(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_claude_safety_guard_works_unchanged() {
    let Some(guard) = real_guard() else {
        assert!(
            std::env::var_os("VIGIL_SKIP_LLAMA").is_some(),
            "claude-safety-guard is not in tests/.venv: run .ci/run (or set VIGIL_SKIP_LLAMA=1 \
             to skip the tests that need tests/.venv)"
        );
        eprintln!("VIGIL_SKIP_LLAMA: the real guard is not tried");
        return;
    };
    let home = Home::new();
    let config = format!(
        "[[hooks.decide]]\nname = \"safety-guard\"\nformat = \"pretooluse\"\ncommand = [{guard:?}, \"hook\"]\n"
    );
    // Denied by the guard's own catalogue (it never runs: the repo is fake).
    let run = home
        .exec(&config, &one_command("git push --force origin main"), &[])
        .await;
    let resolved = run.resolved();
    assert_eq!(
        resolved["decided_by"]["by"], "hook",
        "{resolved}\n{}",
        run.stderr
    );
    assert_eq!(resolved["decision"]["decision"], "deny_with_reason");
    assert!(run.of("tool_started").is_empty());
    // Allowed by it: runs unasked (sandboxed).
    let home = Home::new();
    let run = home.exec(&config, &one_command("echo guarded"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.resolved()["decision"]["decision"], "approve_unasked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_allow_runs_the_call_inside_the_sandbox() {
    let home = Home::new();
    let hook = script(
        &home,
        "yes.sh",
        "cat >/dev/null\necho '{\"version\":1,\"decision\":\"allow\",\"reason\":\"fine\"}'",
    );
    let config = format!("[[hooks.decide]]\nname = \"yes\"\ncommand = {hook}\n");
    let target = home.file("made.txt");
    let command = format!("touch {}", target.display());
    let run = home.exec(&config, &one_command(&command), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.resolved()["decision"]["decision"], "approve_unasked");
    let done = run.of("tool_completed");
    assert_eq!(done.len(), 1);
    assert_ne!(
        done[0]["summary"]["exit_code"], 0,
        "the sandbox refused the write: {}",
        done[0]
    );
    assert!(
        !target.exists(),
        "an allowed call still runs in the kernel sandbox"
    );
}

#[test]
fn policy_check_names_the_hooks_a_command_would_meet() {
    let home = Home::new();
    let cfg = home.file("config.toml");
    std::fs::write(
        &cfg,
        "[[hooks.decide]]\nname = \"no-rm\"\ncommand = \"exit 9\"\nmatch = { command = [\"rm\"] }\n",
    )
    .unwrap();
    let cfg = cfg.display().to_string();
    let (code, out, err) =
        home.vigil(&["--config", &cfg, "policy", "check", "--", "sudo rm -rf x"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("hooks:     `no-rm` ("), "{out}");
    assert!(out.contains("not run here"), "{out}");
    let (_, out, _) = home.vigil(&["--config", &cfg, "policy", "check", "--", "ls"]);
    assert!(!out.contains("hooks:"), "{out}");
}
