//! Hooks see every call they name, and never widen; no switch skips the
//! deny rules or the hooks. Through the real `vigil exec --json` binary
//! against a scripted model, with real hook scripts and real files:
//! - a PreToolUse guard matching `Read` blocks `read_file` (an ungated
//!   tool) and gets the call under that CLI's name and input;
//! - with `[tools] shell_confirm = false`, a `deny` rule and a deny hook
//!   still stop `rm` (the control without them runs it);
//! - a Bash guard blocks `rm` typed by `send-keys` into a managed pane
//!   (real tmux, a private server the test kills);
//! - a hook's `allow` on `fetch_url` or on a call of a real MCP server (no
//!   sandbox for either) still asks, where the same allow on a shell
//!   command runs it unasked.

use super::{hooks_common, mcp_support};

use hooks_common::{Home, one_command, script};
use serde_json::Value;

/// A scenario where the model calls `tool` with `arguments` once.
fn one_call(tool: &str, arguments: &Value) -> String {
    format!(
        r#"
[[rule]]
when = {{ role = "user" }}
times = 1
text = "Calling it."
[[rule.tool_calls]]
name = "{tool}"
raw_arguments = {args:?}

[[rule]]
when = {{ role = "tool" }}
text = "done"
"#,
        args = arguments.to_string()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_on_read_blocks_read_file() {
    let home = Home::new();
    let secret = home.file("notes.txt");
    std::fs::write(&secret, "the guarded words").unwrap();
    let input = home.file("in.json");
    let guard = script(
        &home,
        "no-read.sh",
        &format!(
            "cat > {:?}\necho 'reads are blocked' >&2\nexit 2",
            input.display().to_string()
        ),
    );
    let config = format!(
        "[[hooks.decide]]\nname = \"no-read\"\nformat = \"pretooluse\"\ncommand = {guard}\n\
         match = {{ tools = [\"Read\"] }}\n"
    );
    let path = secret.display().to_string();
    let scenario = one_call("read_file", &serde_json::json!({ "path": path }));
    let run = home.exec(&config, &scenario, &["--auto-approve"]).await;
    let resolved = run.resolved();
    assert_eq!(resolved["decided_by"]["by"], "hook", "{resolved}");
    assert_eq!(resolved["decided_by"]["reason"], "reads are blocked");
    assert!(run.of("tool_started").is_empty(), "the read never ran");
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    assert_eq!(got["tool_name"], "Read", "{got}");
    assert_eq!(got["tool_input"]["file_path"], path, "{got}");

    // Control: the same read with the guard on another tool reads.
    let config = config.replace("tools = [\"Read\"]", "tools = [\"Write\"]");
    let run = home.exec(&config, &scenario, &["--auto-approve"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.of("approval_resolved").is_empty(), "an ungated read");
    let done = run.of("tool_completed");
    assert_eq!(done.len(), 1, "the control read ran: {:?}", run.events);
    assert_eq!(done[0]["summary"]["ok"], true, "{}", done[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_confirm_false_keeps_deny_rules_and_hooks() {
    let home = Home::new();
    let deny_hook = script(
        &home,
        "no.sh",
        "cat >/dev/null\necho '{\"version\":1,\"decision\":\"deny\",\"reason\":\"no rm\"}'",
    );
    let off = "[tools]\nshell_confirm = false\n";
    for (guard, by) in [
        (
            "[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"deny\"\n".to_string(),
            "policy_rule",
        ),
        (
            format!("[[hooks.decide]]\ncommand = {deny_hook}\nmatch = {{ command = \"rm\" }}\n"),
            "hook",
        ),
    ] {
        for form in ["rm -f {}", "env rm -f {}", "sh -c 'rm -f {}'"] {
            let canary = home.file("canary");
            std::fs::write(&canary, "keep").unwrap();
            let command = form.replace("{}", &canary.display().to_string());
            let run = home
                .exec(&format!("{off}{guard}"), &one_command(&command), &[])
                .await;
            assert!(canary.exists(), "{by} `{command}` ran: {:?}", run.events);
            assert_eq!(run.resolved()["decided_by"]["by"], by, "{command}");
            assert!(run.of("tool_started").is_empty(), "{command}");
        }
    }
    // An unknown program is asked even with asking switched off.
    let rule = "[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"deny\"\n";
    let run = home
        .exec(
            &format!("{off}{rule}"),
            &one_command("X=rm; $X -f nope"),
            &[],
        )
        .await;
    assert_eq!(run.code, 3, "asked: {:?}", run.events);
    // Control: with asking off and no guard, rm runs unasked.
    let canary = home.file("canary");
    std::fs::write(&canary, "x").unwrap();
    let command = format!("env rm -f {}", canary.display());
    let run = home.exec(off, &one_command(&command), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!canary.exists(), "the control ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_allow_never_runs_fetch_url_unasked() {
    let home = Home::new();
    let yes = script(
        &home,
        "yes.sh",
        "cat >/dev/null\necho '{\"version\":1,\"decision\":\"allow\",\"reason\":\"fine\"}'",
    );
    let config =
        format!("[agent]\napproval = \"ask\"\n[[hooks.decide]]\nname = \"yes\"\ncommand = {yes}\n");
    let scenario = one_call(
        "fetch_url",
        &serde_json::json!({ "url": "http://127.0.0.1:9/leak?data=secret" }),
    );
    let run = home.exec(&config, &scenario, &[]).await;
    assert_eq!(run.code, 3, "asked: {:?}", run.events);
    let request = run.request();
    assert_ne!(request["automatic"], true, "{request}");
    let why = request["facts"]["trial"].as_str().unwrap_or_default();
    assert!(why.contains("no sandbox"), "{request}");
    assert!(run.of("tool_started").is_empty());

    // Control: the same allow on a shell command runs it unasked.
    let run = home.exec(&config, &one_command("true"), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.resolved()["decision"]["decision"], "approve_unasked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_allow_never_runs_an_mcp_call_unasked() {
    let home = Home::new();
    let yes = script(
        &home,
        "yes.sh",
        "cat >/dev/null\necho '{\"version\":1,\"decision\":\"allow\",\"reason\":\"fine\"}'",
    );
    let config = format!(
        "[agent]\napproval = \"auto_low\"\n{}[[hooks.decide]]\nname = \"yes\"\ncommand = {yes}\n",
        mcp_support::everything_toml("")
    );
    let scenario = one_call(
        "everything__echo",
        &serde_json::json!({ "message": "carried out" }),
    );
    let run = home.exec(&config, &scenario, &[]).await;
    assert_eq!(run.code, 3, "asked: {:?}", run.events);
    let request = run.request();
    assert_eq!(request["tool"], "everything__echo", "{request}");
    assert_ne!(request["automatic"], true, "{request}");
    let why = request["facts"]["trial"].as_str().unwrap_or_default();
    assert!(why.contains("no sandbox"), "{request}");
    assert!(run.of("tool_started").is_empty(), "the MCP call never ran");

    // Control: the operator's own approval runs the same call on the real
    // server (the harness can see it run).
    let run = home.exec(&config, &scenario, &["--auto-approve"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let done = run.of("tool_completed");
    assert_eq!(done.len(), 1, "the control ran: {:?}", run.events);
    assert_eq!(done[0]["summary"]["ok"], true, "{}", done[0]);
}

/// A private tmux server for one test, killed (only it) when dropped.
struct TmuxServer(String);

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .output();
        // Its socket file too, when the server left it behind.
        let uid = unsafe_free_uid();
        let _ = std::fs::remove_file(format!("/tmp/tmux-{uid}/{}", self.0));
    }
}

/// This process's uid, from /proc (no libc call).
fn unsafe_free_uid() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next().map(str::to_string))
        })
        .unwrap_or_default()
}

/// A scenario where the model types `text` into the managed pane, Enter.
fn typed(text: &str) -> String {
    one_call(
        "send-keys",
        &serde_json::json!({
            "literal_text": text, "enter": true, "risk": "low", "mutation": true,
            "privesc": false, "why": "the hook test types"
        }),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bash_guard_blocks_rm_typed_by_send_keys() {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_err()
    {
        eprintln!("skipped: tmux is not installed");
        return;
    }
    let home = Home::new();
    let server = TmuxServer(format!("vigil-hooks-{}", std::process::id()));
    let input = home.file("in.json");
    let guard = script(
        &home,
        "bash-guard.sh",
        &format!(
            "cat > {in:?}\ngrep -q '\"command\":\"rm ' {in:?} && {{ echo 'rm is blocked' >&2; exit 2; }}\nexit 0",
            in = input.display().to_string()
        ),
    );
    let config = format!(
        "[tmux]\nsocket = {:?}\n[[hooks.decide]]\nname = \"bash-guard\"\nformat = \"pretooluse\"\n\
         command = {guard}\nmatch = {{ tools = [\"Bash\"], command = [\"rm\"] }}\n",
        server.0
    );
    let canary = home.file("canary");
    std::fs::write(&canary, "keep").unwrap();
    let text = format!("rm -f {}", canary.display());
    let run = home
        .exec_tmux(&config, &typed(&text), &["--auto-approve"])
        .await;
    let resolved = run.resolved();
    assert_eq!(
        resolved["decided_by"]["by"], "hook",
        "{resolved}\n{}",
        run.stderr
    );
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    assert_eq!(got["tool_name"], "Bash", "{got}");
    assert_eq!(got["tool_input"]["command"], text, "{got}");

    // Control: text the guard lets through is typed and runs in the pane.
    // send-keys does not wait, and a stopping vigil ends the session it
    // made: a `run_shell` of `true` after it, in the same pane, returns
    // only once the shell has read and run the typed line before it.
    let marker = home.file("marker");
    let typed_then_true = typed(&format!("touch {}", marker.display())).replace(
        "\n[[rule]]\nwhen = { role = \"tool\" }",
        &format!(
            "[[rule.tool_calls]]\nname = \"run_shell\"\nraw_arguments = {:?}\n\n[[rule]]\nwhen = {{ role = \"tool\" }}",
            r#"{"command": "true", "risk": "low", "mutation": false, "privesc": false, "why": "the control waits"}"#
        ),
    );
    assert!(typed_then_true.contains("run_shell"), "{typed_then_true}");
    let run = home
        .exec_tmux(&config, &typed_then_true, &["--auto-approve"])
        .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let done = run.of("tool_completed");
    assert_eq!(done.len(), 2, "both calls ran: {done:#?}\n{}", run.stderr);
    assert_eq!(done[1]["summary"]["ok"], true, "{done:#?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !marker.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(marker.exists(), "the control's keys arrived and ran");
    assert!(canary.exists(), "the blocked rm never reached the pane");
}
