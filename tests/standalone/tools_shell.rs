//! `run_shell`, `read_file` and `write_file` end to end: real processes and
//! real files, through the registry the agent uses.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use vigil::exec::ExecutionContext;
use vigil::policy::gate::FixedApprover;
use vigil::tools::files::{ReadFile, WriteFile};
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::time::TimeTool;
use vigil::tools::truncate::Keep;
use vigil::tools::{FailureClass, Tool, ToolContext, ToolError, ToolRegistry, ToolStream};
use vigil_protocol::approval::ApprovalDecision;

fn shell(config: ShellConfig) -> RunShell {
    RunShell::new(ExecutionContext::local(), config)
}

fn quiet() -> ShellConfig {
    ShellConfig {
        confirm: false,
        ..Default::default()
    }
}

fn args(command: &str) -> Value {
    json!({"command": command, "risk": "low", "mutation": false, "privesc": false,
           "why": "test"})
}

type Events = Arc<Mutex<Vec<(ToolStream, Instant)>>>;

fn recording_ctx() -> (Events, ToolContext) {
    let events: Events = Arc::default();
    let e = events.clone();
    let ctx = ToolContext::new("call-1").with_sink(Arc::new(move |ev| {
        e.lock().unwrap().push((ev, Instant::now()));
    }));
    (events, ctx)
}

#[tokio::test]
async fn result_has_exit_code_and_both_streams() {
    let out = shell(quiet())
        .execute_text(
            &args("echo out; echo err >&2; exit 7").to_string(),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        out.result,
        json!({"exit_code": 7, "stdout": "out\n", "stderr": "err\n"})
    );
    assert_eq!(out.exit_code, Some(7));
    assert!(!out.truncated);
    assert!(out.spill.is_empty());
}

#[tokio::test]
async fn output_is_streamed_to_the_sink_while_running() {
    let (events, ctx) = recording_ctx();
    let mut reg = ToolRegistry::new();
    reg.register(shell(quiet()));
    // The registry (not the tool) reports Started, after the approval gate.
    let run = reg
        .execute_with_context(
            "run_shell",
            &args("echo a; sleep 1; echo b >&2").to_string(),
            &ctx,
        )
        .await;
    assert!(run.ok(), "{}", run.model_text);
    let done = Instant::now();
    let events = events.lock().unwrap();
    assert!(
        matches!(&events[0].0, ToolStream::Started { summary } if summary.starts_with("echo a"))
    );
    let (first, at) = &events[1];
    assert_eq!(first, &ToolStream::Stdout("a\n".into()));
    assert!(done - *at >= Duration::from_millis(700));
    assert!(
        events
            .iter()
            .any(|(e, _)| e == &ToolStream::Stderr("b\n".into()))
    );
}

#[tokio::test]
async fn long_output_is_cut_keeping_the_end_and_spilled() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = ToolContext::default().with_spill_dir(dir.path().to_path_buf());
    let cmd = "seq 1 5000; echo 'FATAL: disk full' >&2";
    let out = shell(ShellConfig {
        stdout_limit: 200,
        ..quiet()
    })
    .execute_text(&args(cmd).to_string(), &ctx)
    .await
    .unwrap();
    assert!(out.truncated);
    let stdout = out.result["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("1\n2\n"));
    assert!(stdout.contains("5000\n"), "the tail survives HeadTail");
    assert!(stdout.contains("truncated"));
    assert_eq!(out.result["stderr"], "FATAL: disk full\n");
    assert_eq!(out.spill.len(), 1);
    let full = std::fs::read_to_string(&out.spill[0]).unwrap();
    assert_eq!(full.lines().count(), 5000);

    let head = shell(ShellConfig {
        stdout_limit: 10,
        keep: Keep::Head,
        ..quiet()
    })
    .execute_text(&args("seq 1 100").to_string(), &ToolContext::default())
    .await
    .unwrap();
    assert_eq!(head.result["stdout"], "1\n2\n3\n4\n5\n...[truncated]");
    assert!(head.spill.is_empty(), "no spill dir, no spill");
}

#[tokio::test]
async fn invalid_utf8_is_replaced_and_noted() {
    let out = shell(quiet())
        .execute_text(
            &args(r"printf 'ok\377\n'").to_string(),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert_eq!(out.result["stdout"], "ok\u{FFFD}\n");
    assert!(out.result["note"].as_str().unwrap().contains("UTF-8"));
    let clean = shell(quiet())
        .execute_text(&args("echo fine").to_string(), &ToolContext::default())
        .await
        .unwrap();
    assert!(clean.result.get("note").is_none());
}

#[tokio::test]
async fn timeouts_kill_and_report_partial_output() {
    let mut a = args("echo begun; sleep 300");
    a["wait"] = json!("500ms");
    let start = Instant::now();
    let e = shell(quiet())
        .execute_text(&a.to_string(), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_eq!(e.class(), FailureClass::Timeout);
    let ToolError::Failed { message: msg, .. } = e else {
        panic!("expected a classified failure, got {e:?}");
    };
    assert!(msg.starts_with("command timed out after 0.500s"), "{msg}");
    assert!(
        msg.contains("partial output") && msg.contains("begun"),
        "{msg}"
    );

    let mut a = args("sleep 5");
    a["wait"] = json!(1);
    let e = shell(quiet())
        .execute_text(&a.to_string(), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("timed out after 1s"), "{e}");
}

#[tokio::test]
async fn denylisted_commands_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let cfg = ShellConfig {
        denylist: vigil::policy::denylist::Denylist::read(&["shutdown".into()]),
        ..quiet()
    };
    let cmd = format!("touch {}; \"shut\"down  -h now", marker.display());
    let e = shell(cfg)
        .execute_text(&args(&cmd).to_string(), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(e.class(), FailureClass::PermissionDenied);
    assert!(e.to_string().contains("`shutdown`"), "{e}");
    assert!(!marker.exists());
}

/// A denylisted program named by its path on a line the shell runs before
/// a syntax error: the text does not parse, so the one fallback reading
/// decides, and it names the program by its base name (a red-team try after
/// the fallbacks were merged; before, `/usr/bin/touch` slipped past `touch`).
#[tokio::test]
async fn a_denylisted_program_by_path_before_a_syntax_error_never_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let cfg = ShellConfig {
        denylist: vigil::policy::denylist::Denylist::read(&["touch".into()]),
        ..quiet()
    };
    for cmd in [
        format!("/usr/bin/touch {}\n'", marker.display()),
        format!("x=1; /usr/bin/touch {} \"", marker.display()),
    ] {
        let e = shell(cfg.clone())
            .execute_text(&args(&cmd).to_string(), &ToolContext::default())
            .await
            .unwrap_err();
        assert_eq!(e.class(), FailureClass::PermissionDenied, "{cmd}");
        assert!(!marker.exists(), "{cmd}");
    }
}

#[tokio::test]
async fn detach_without_tmux_is_a_clear_failure() {
    let mut a = args("sleep 1");
    a["wait"] = json!(false);
    let e = shell(quiet())
        .execute_text(&a.to_string(), &ToolContext::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("tmux"), "{e}");
}

#[tokio::test]
async fn registry_gates_runs_edits_and_wraps() {
    let mut reg = ToolRegistry::new();
    reg.register(shell(ShellConfig::default()));
    reg.register(ReadFile::new(ExecutionContext::local()));
    reg.register(WriteFile::new(ExecutionContext::local(), true));
    reg.register(TimeTool::new());
    assert_eq!(
        reg.names(),
        ["read_file", "run_shell", "time", "write_file"]
    );

    // Fail closed: nothing runs without an operator.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("m");
    let run = reg
        .execute(
            "run_shell",
            &args(&format!("touch {}", marker.display())).to_string(),
        )
        .await;
    assert!(run.denied());
    assert!(!marker.exists());

    reg.set_approver(Arc::new(FixedApprover(ApprovalDecision::ApproveEdited(
        "echo edited".into(),
    ))));
    let run = reg
        .execute("run_shell", &args("echo original").to_string())
        .await;
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    assert_eq!(v["result"]["stdout"], "edited\n");
    assert_eq!(v["result"]["exit_code"], 0);
    assert_eq!(v["harness_timestamp"]["source"], "harness");

    reg.set_approver(Arc::new(FixedApprover(ApprovalDecision::ApproveOnce)));
    let path = dir.path().join("f.txt");
    let run = reg
        .execute(
            "write_file",
            &json!({"path": path, "content": "abc"}).to_string(),
        )
        .await;
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    assert_eq!(v["result"], format!("Wrote 3 bytes to {}", path.display()));
    let run = reg
        .execute("read_file", &json!({"path": path}).to_string())
        .await;
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    assert_eq!(v["result"], "abc");

    let run = reg.execute("time", r#"{"format":"date"}"#).await;
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    assert_eq!(v["result"]["value"].as_str().unwrap().len(), 10);

    let run = reg.execute("run_shell", r#"{"command":"ls"}"#).await;
    assert!(
        run.model_text.starts_with("Tool error: invalid arguments"),
        "{}",
        run.model_text
    );
}

/// Run a tool on argument text, as sent (not through the registry).
trait ExecuteText {
    async fn execute_text(
        &self,
        text: &str,
        ctx: &ToolContext,
    ) -> Result<vigil::tools::ToolOutput, vigil::tools::ToolError>;
}

impl<T: Tool> ExecuteText for T {
    async fn execute_text(
        &self,
        text: &str,
        ctx: &ToolContext,
    ) -> Result<vigil::tools::ToolOutput, vigil::tools::ToolError> {
        self.execute(&vigil::tools::call_as_sent(self, text), ctx)
            .await
    }
}
