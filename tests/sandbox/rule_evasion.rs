//! Hostile file, MCP and rule cases against the approval gate: a rule
//! approves exactly what the operator (or the policy file) saw, and nothing
//! that merely reads the same.
//!
//! Classes covered (each has rows below, and a control row that shows the
//! harness sees a call run unasked, so the rows can fail):
//! - **same summary, other call**: a session rule (`a`) on a `write_file`,
//!   `edit` or MCP call approves only the same full arguments (a write of
//!   other content of the same length, an edit with other text or another
//!   edit command, an MCP call differing after character 160: all asked).
//! - **symlink swap**: a path that resolves elsewhere than when the rule or
//!   the operator approved it is asked (session rule) or refused at write
//!   time (an approval already given), and nothing is written through it.
//! - **path-rule escape**: `..`, a symlink or a deeper directory under an
//!   `allow` glob is not admitted (`*` never crosses `/`); a `deny` glob
//!   catches a path that reaches it through `..` or a symlink.
//! - **hard link**: a file under an allowed glob that is another name of a
//!   file outside it is refused when nobody approved the write just now.
//! - **summary words**: a path rule never matches words of a summary (an MCP
//!   tool's path rule is refused at start-up, naming file and line).
//!
//! The session and swap rows go through the registry and the broker the
//! console uses (an operator answers `a` to the first call), and the MCP
//! row also for real through the agent with the real `everything` MCP
//! server (`tests/console_facts.rs` does the `write_file` row through the
//! real binary in tmux); the path-rule
//! rows also run for real through the `vigil exec` binary against the
//! scripted model, with `approval = "ask"` and the rows' rules in the policy
//! file: exit 3 (asked, nobody to answer) or denied by the rule, and nothing
//! written, where the control row writes its file and exits 0.

use super::common;
use super::mcp_support;
#[path = "../rule_evasion/table.rs"]
mod table;

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use vigil::agent::approval::{ApprovalBroker, Policy};
use vigil::config::Config;
use vigil::exec::ExecutionContext;
use vigil::policy::gate::Approver;
use vigil::policy::rules::PolicyRules;
use vigil::tools::edit::{Edit, EditConfig};
use vigil::tools::files::WriteFile;
use vigil::tools::registry::summarize_args;
use vigil::tools::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolRegistry};
use vigil_protocol::AgentEvent;
use vigil_protocol::approval::{ApprovalDecision, CallFacts, FileChange, GateInfo};
use vigil_scripted::{Scenario, ScriptedServer};

use table::{
    ALLOW_NOTES, Expect, LONG, PATH_ROWS, fill, intact, layout, session_rows, swap_to_victim,
};

#[test]
fn the_tables_cover_every_class() {
    let session: Vec<&str> = session_rows().iter().map(|r| r.class).collect();
    for class in ["same summary, other call", "symlink swap"] {
        assert!(session.contains(&class), "{class}");
    }
    for tool in ["write_file", "edit", "srv__write"] {
        assert!(session_rows().iter().any(|r| r.tool == tool), "{tool}");
    }
    for class in ["path-rule escape", "star crosses a slash", "hard link"] {
        assert!(PATH_ROWS.iter().any(|r| r.class == class), "{class}");
    }
    for expect in [Expect::Asked, Expect::Denied, Expect::Refused] {
        assert!(PATH_ROWS.iter().any(|r| r.expect == expect), "{expect:?}");
    }
}

/// A stand-in for an MCP tool (`srv__write`): gated, its action line the
/// registry's 160-character summary, every argument in its facts.
struct FakeMcp;

#[async_trait]
impl Tool for FakeMcp {
    fn name(&self) -> &str {
        "srv__write"
    }
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "srv__write",
            "[MCP server `srv`] write",
            json!({"type": "object", "properties": {}}),
        )
    }
    fn gate(&self, args: &Value) -> Option<GateInfo> {
        Some(GateInfo {
            action: format!("srv.write {}", summarize_args(args)),
            model_risk: None,
            mutation: None,
            privesc: None,
            why: None,
            editable_field: None,
        })
    }
    async fn facts(&self, args: &Value) -> CallFacts {
        CallFacts {
            arguments: Some(args.to_string()),
            ..Default::default()
        }
    }
    async fn execute(
        &self,
        _call: &vigil::policy::call::ToolCall,
        _ctx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text("ok"))
    }
}

struct Harness {
    registry: Arc<ToolRegistry>,
    broker: Arc<ApprovalBroker>,
    events: mpsc::UnboundedReceiver<AgentEvent>,
}

/// The registry with the real file tools and the fake MCP tool, behind the
/// console's broker (`ask`, a target that can sandbox), with `rules`
/// (policy-file TOML) anchored at `dir`.
fn harness(dir: &Path, rules: &str) -> Harness {
    let (tx, events) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    broker.set_can_sandbox(true);
    let cfg = Config::from_toml(rules, Path::new("rules.toml")).unwrap();
    broker.set_rules(PolicyRules::from_config_at(&cfg.approval, dir));
    let ctx = ExecutionContext::local();
    let mut registry = ToolRegistry::new();
    registry.register(WriteFile::new(ctx.clone(), true));
    registry.register(Edit::new(ctx, EditConfig::default()));
    registry.register(FakeMcp);
    registry.set_approver(broker.clone());
    Harness {
        registry: Arc::new(registry),
        broker,
        events,
    }
}

/// How a call was decided.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// The operator was asked (and gave `answer`).
    Asked,
    /// Approved without asking.
    Unasked,
    /// Denied without asking (a deny rule).
    Denied,
}

impl Harness {
    /// Run one call; an operator who is asked answers `answer`.
    async fn call(
        &mut self,
        tool: &str,
        args: &Value,
        answer: vigil_protocol::Answer,
    ) -> (Seen, bool) {
        let reg = self.registry.clone();
        let (tool, args) = (tool.to_string(), args.to_string());
        let task = tokio::spawn(async move { reg.execute(&tool, &args).await });
        let seen = loop {
            match self.events.recv().await.expect("an approval request") {
                AgentEvent::ApprovalRequested { request } if request.automatic => {
                    match self.events.recv().await {
                        Some(AgentEvent::ApprovalResolved { decision, .. })
                            if decision.is_approved() =>
                        {
                            break Seen::Unasked;
                        }
                        _ => break Seen::Denied,
                    }
                }
                AgentEvent::ApprovalRequested { request } => {
                    // The request is announced just before it is queued.
                    while !self.broker.resolve(request.id, answer.clone().into()) {
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    }
                    break Seen::Asked;
                }
                _ => {}
            }
        };
        let run = task.await.unwrap();
        (seen, run.ok())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_rule_approves_only_the_exact_call_the_operator_saw() {
    let mut failures = Vec::new();
    for row in session_rows() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        layout(&d);
        let mut h = harness(&d, "");
        let args = |t: &str| -> Value {
            serde_json::from_str(&fill(t, &d).replace("LONG", LONG)).unwrap()
        };
        let (seen, _) = h
            .call(
                row.tool,
                &args(row.first),
                vigil_protocol::Answer::ApproveSession,
            )
            .await;
        assert_eq!(seen, Seen::Asked, "[{}] the first call is asked", row.class);
        // The control: the very same call again runs unasked.
        if row.between.is_none() {
            let (again, _) = h
                .call(row.tool, &args(row.first), vigil_protocol::Answer::Deny)
                .await;
            if again != Seen::Unasked {
                failures.push(format!("[control] {} {} → {again:?}", row.tool, row.first));
            }
        }
        if let Some(change) = row.between {
            change(&d);
        }
        let (seen, ran) = h
            .call(row.tool, &args(row.second), vigil_protocol::Answer::Deny)
            .await;
        if seen != Seen::Asked || ran || !intact(&d) {
            failures.push(format!(
                "[{}] {} {} → {seen:?}, ran {ran}, intact {}",
                row.class,
                row.tool,
                row.second,
                intact(&d)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An approver that approves once, after swapping `notes/a.txt` for a
/// symlink to the victim: the swap lands between the approval and the
/// write.
struct SwapThenApprove(std::path::PathBuf);

#[async_trait]
impl Approver for SwapThenApprove {
    async fn decide(&self, _c: &str, _t: &str, _g: &GateInfo) -> ApprovalDecision {
        swap_to_victim(&self.0);
        ApprovalDecision::ApproveOnce
    }
    async fn decide_change(
        &self,
        c: &str,
        t: &str,
        g: &GateInfo,
        _change: Option<FileChange>,
    ) -> ApprovalDecision {
        self.decide(c, t, g).await
    }
}

#[tokio::test]
async fn a_symlink_swapped_in_after_the_approval_redirects_nothing() {
    for (tool, args) in [
        (
            "write_file",
            r#"{"path": "{D}/notes/a.txt", "content": "evil\n"}"#,
        ),
        (
            "edit",
            r#"{"command": "str_replace", "path": "{D}/notes/a.txt", "old_str": "keep", "new_str": "evil"}"#,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        layout(&d);
        let ctx = ExecutionContext::local();
        let mut registry = ToolRegistry::new();
        registry.register(WriteFile::new(ctx.clone(), true));
        registry.register(Edit::new(ctx, EditConfig::default()));
        registry.set_approver(Arc::new(SwapThenApprove(d.clone())));
        let run = registry.execute(tool, &fill(args, &d)).await;
        assert!(!run.ok(), "{tool}: {}", run.model_text);
        assert!(
            run.model_text.contains("now resolves to"),
            "{tool}: {}",
            run.model_text
        );
        assert!(intact(&d), "{tool} wrote through the swapped link");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn path_rules_see_canonical_paths_through_the_broker() {
    let mut failures = Vec::new();
    for row in PATH_ROWS {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        layout(&d);
        let mut h = harness(&d, row.rule);
        let args = json!({"path": d.join(row.path), "content": "evil\n"});
        let (seen, ran) = h
            .call("write_file", &args, vigil_protocol::Answer::Deny)
            .await;
        let want = match row.expect {
            Expect::Asked => Seen::Asked,
            Expect::Denied => Seen::Denied,
            Expect::Refused => Seen::Unasked,
        };
        if seen != want || ran || !intact(&d) {
            failures.push(format!(
                "[{}] {} → {seen:?}, ran {ran}",
                row.class, row.path
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The control: a plain path under the allowed glob runs unasked.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    layout(&d);
    let mut h = harness(&d, ALLOW_NOTES);
    let args = json!({"path": d.join("notes/new.txt"), "content": "fine\n"});
    let (seen, ran) = h
        .call("write_file", &args, vigil_protocol::Answer::Deny)
        .await;
    assert_eq!((seen, ran), (Seen::Unasked, true));
    assert_eq!(
        std::fs::read_to_string(d.join("notes/new.txt")).unwrap(),
        "fine\n"
    );
}

#[test]
fn a_path_rule_on_an_mcp_tool_is_refused_at_start_up() {
    let text = "[agent]\nname = \"x\"\n[[approval.rules]]\ntool = \"srv__write\"\n\
                path = \"/srv/*\"\ndecision = \"allow\"\n";
    let e = Config::from_toml(text, Path::new("/etc/v.toml"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/etc/v.toml:3") && e.contains("declares no path"),
        "{e}"
    );
}

// ---- For real: `vigil exec` against the scripted model ----

/// Escape `s` as a TOML basic string.
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A scenario in which `case-N.` makes a `write_file` of `paths[N]`.
fn scenario(paths: &[&str]) -> String {
    let mut s = String::from("model = \"rules\"\nchunk_delay_ms = 0\n");
    for (i, path) in paths.iter().enumerate() {
        s.push_str(&format!(
            "[[rule]]\nwhen = {{ role = \"user\", contains = \"case-{i}.\" }}\ntimes = 0\n\
             [[rule.tool_calls]]\nname = \"write_file\"\n[rule.tool_calls.arguments]\n\
             path = {}\ncontent = \"evil\\n\"\n",
            toml_str(path)
        ));
    }
    s.push_str("[[rule]]\nwhen = { role = \"tool\" }\ntimes = 0\ntext = \"done\"\n");
    s
}

/// `vigil exec "run case-I."` in `dir` with `rules` as its policy file.
async fn exec(server: &ScriptedServer, dir: &Path, rules: &str, i: usize) -> std::process::Output {
    let data = dir.join(".vigil-data");
    let cfg = dir.join(".vigil.toml");
    std::fs::write(
        &cfg,
        format!("[agent]\napproval = \"ask\"\n[model]\nretry_attempts = 1\n[tmux]\nmode = \"off\"\n{rules}"),
    )
    .unwrap();
    let mut cmd = tokio::process::Command::new(common::vigil_bin());
    cmd.current_dir(dir)
        .arg("--config")
        .arg(&cfg)
        .args(["exec", &format!("run case-{i}.")])
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "rules")
        .env("VIGIL_DATA_DIR", &data)
        .env_remove("VIGIL_API_KEY")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("vigil exec finished in time")
        .expect("vigil exec ran")
}

#[tokio::test(flavor = "multi_thread")]
async fn path_rules_hold_for_real_through_vigil_exec() {
    let mut paths: Vec<&str> = PATH_ROWS.iter().map(|r| r.path).collect();
    paths.push("notes/new.txt");
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario(&paths)).unwrap())
        .await
        .unwrap();
    let mut failures = Vec::new();
    for (i, row) in PATH_ROWS.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        layout(&d);
        let out = exec(&server, &d, row.rule, i).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        // Asked with nobody to answer: exit 3; denied by the rule: the
        // model is told and the turn ends.
        let held = match row.expect {
            Expect::Denied => stdout.contains("denied by policy rule 1"),
            Expect::Asked => out.status.code() == Some(3),
            Expect::Refused => stdout.contains("is a hard link"),
        };
        if !held || !intact(&d) {
            failures.push(format!(
                "[{}] {}: exit {:?}, intact {}\n{stdout}{}",
                row.class,
                row.path,
                out.status.code(),
                intact(&d),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The control: the allowed path is written unasked, exit 0.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().canonicalize().unwrap();
    layout(&d);
    let out = exec(&server, &d, ALLOW_NOTES, PATH_ROWS.len()).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(d.join("notes/new.txt")).unwrap(),
        "evil\n"
    );
}

#[tokio::test]
async fn a_path_rule_on_an_mcp_tool_stops_vigil_exec_with_the_reason() {
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario(&["x"])).unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let rule =
        "[[approval.rules]]\ntool = \"srv__write\"\npath = \"/srv/*\"\ndecision = \"allow\"\n";
    let out = exec(&server, dir.path(), rule, 0).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("declares no path") && stderr.contains(".vigil.toml"),
        "{stderr}"
    );
}

// ---- For real: the agent with the real MCP server ----

/// The agent (`Policy::Ask`, plain processes) with the real `everything`
/// MCP server, and a model whose `mcp-a` / `mcp-b` calls `echo` with
/// messages that differ only after character 160.
#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_session_rule_covers_only_the_exact_arguments_for_real() {
    use vigil::agent::assemble::start_agent;
    use vigil_protocol::AgentCommand;
    // This test process is not vigil: the sandbox (what an unasked call
    // needs) is the real binary's helper mode.
    vigil::exec::sandbox::set_helper(common::vigil_bin());
    let scenario = format!(
        "model = \"rules\"\nchunk_delay_ms = 0\n\
         [[rule]]\nwhen = {{ role = \"user\", contains = \"mcp-a\" }}\ntimes = 0\ntext = \"a\"\n\
         [[rule.tool_calls]]\nname = \"everything__echo\"\narguments = {{ message = \"{LONG}-AAA\" }}\n\
         [[rule]]\nwhen = {{ role = \"user\", contains = \"mcp-b\" }}\ntimes = 0\ntext = \"b\"\n\
         [[rule.tool_calls]]\nname = \"everything__echo\"\narguments = {{ message = \"{LONG}-BBB\" }}\n\
         [[rule]]\nwhen = {{ role = \"tool\" }}\ntimes = 0\ntext = \"done\"\n"
    );
    let server = ScriptedServer::start(Scenario::from_toml_str(&scenario).unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "[model]\nbase_url = {:?}\nmodel = \"rules\"\n[paths]\ndata_dir = {:?}\n{}",
        server.base_url(),
        dir.path().display().to_string(),
        mcp_support::everything_toml("")
    );
    let mut config = Config::from_toml(&text, Path::new("test.toml")).unwrap();
    config.tmux.mode = vigil::config::TmuxMode::Off;
    let mut running = start_agent(&config, false, Policy::Ask).await.unwrap();
    // One turn; the operator answers a request with `answer`. Returns the
    // request (None: nobody was asked) and whether it was decided unasked.
    let mut turn = async |text: &str, answer: vigil_protocol::Answer| {
        running
            .commands
            .send(AgentCommand::UserMessage { text: text.into() })
            .unwrap();
        let mut asked = None;
        let mut unasked = false;
        loop {
            let events = mcp_support::until(&mut running.events, |e| {
                matches!(
                    e,
                    AgentEvent::ApprovalRequested { .. } | AgentEvent::TurnFinished { .. }
                )
            })
            .await;
            match events.last().cloned() {
                Some(AgentEvent::ApprovalRequested { request }) if request.automatic => {
                    unasked = true;
                }
                Some(AgentEvent::ApprovalRequested { request }) => {
                    running
                        .commands
                        .send(AgentCommand::Approval {
                            id: request.id,
                            decision: answer.clone(),
                            token: request.token.clone(),
                        })
                        .unwrap();
                    asked = Some(request);
                }
                _ => return (asked, unasked),
            }
        }
    };
    let (first, _) = turn("mcp-a", vigil_protocol::Answer::ApproveSession).await;
    let first = first.expect("the first call is asked");
    // The action line is cut; the card's arguments are whole.
    assert!(!first.gate.action.contains("-AAA"), "{}", first.gate.action);
    let all = first.facts.arguments.as_deref().unwrap_or_default();
    assert!(all.contains("-AAA"), "{all}");
    assert_eq!(first.facts.digest.len(), 64);
    // The same call again: covered, unasked (the control).
    let (again, unasked) = turn("mcp-a again", vigil_protocol::Answer::Deny).await;
    assert!(
        again.is_none() && unasked,
        "the exact call is covered: {again:?} {unasked}"
    );
    // Differs only after character 160: asked.
    let (other, unasked) = turn("mcp-b", vigil_protocol::Answer::Deny).await;
    let other = other.expect("a call differing after character 160 is asked");
    assert!(!unasked);
    assert_eq!(
        other.gate.action, first.gate.action,
        "the summaries are the same"
    );
    // Stopped, its record closed, before its data folder is removed.
    assert!(running.finish(std::time::Duration::from_secs(30)).await);
}
