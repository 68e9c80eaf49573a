//! Tests of the registry's single call path.

use super::*;
use async_trait::async_trait;
use std::sync::atomic::{AtomicUsize, Ordering};
use vigil_policy::call::ToolCall;
use vigil_protocol::approval::GateInfo;

struct Echo;
#[async_trait]
impl Tool for Echo {
    fn name(&self) -> &str {
        "echo"
    }
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function("echo", "echo", json!({"type":"object"}))
    }
    async fn execute(&self, a: &ToolCall, _c: &ToolContext) -> Result<ToolOutput, ToolError> {
        let v: Value = a.args.clone();
        Ok(ToolOutput::new(v))
    }
}

struct Gated(Arc<AtomicUsize>);
#[async_trait]
impl Tool for Gated {
    fn name(&self) -> &str {
        "gated"
    }
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function("gated", "g", json!({"type":"object"}))
    }
    fn gate(&self, args: &Value) -> Option<GateInfo> {
        Some(GateInfo {
            action: args["command"].as_str().unwrap_or("").into(),
            model_risk: None,
            mutation: None,
            privesc: None,
            why: None,
            editable_field: Some("command".into()),
        })
    }
    async fn execute(&self, a: &ToolCall, _c: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let v: Value = a.args.clone();
        Ok(ToolOutput::new(v["command"].clone()))
    }
}

#[tokio::test]
async fn definitions_are_sorted_and_unknown_names_list_alternatives() {
    let mut r = ToolRegistry::new();
    r.register(Gated(Arc::default()));
    r.register(Echo);
    let names: Vec<_> = r
        .definitions()
        .into_iter()
        .map(|d| d.function.name)
        .collect();
    assert_eq!(names, ["echo", "gated"]);
    let run = r.execute("nope", "{}").await;
    assert_eq!(
        run.model_text,
        format!(
            "Tool error: invalid arguments: unknown tool `nope`; available tools: echo, gated\n\
             [class: unknown_tool] {}",
            FailureClass::UnknownTool.hint()
        )
    );
    assert_eq!(run.class, Some(FailureClass::UnknownTool));
}

#[tokio::test]
async fn results_are_wrapped_in_the_envelope() {
    let mut r = ToolRegistry::new();
    r.register(Echo);
    let run = r.execute("echo", r#"{"a":1}"#).await;
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    assert_eq!(v["result"], json!({"a":1}));
    assert_eq!(v["harness_timestamp"]["source"], "harness");
    let bad = r.execute("echo", "[1]").await;
    assert!(bad.model_text.starts_with("Tool error: invalid arguments"));
    let bad = r.execute("echo", "{nope").await;
    assert!(bad.model_text.contains("not valid JSON"));
}

/// Fails every time, counting executions.
struct Failing(Arc<AtomicUsize>);
#[async_trait]
impl Tool for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "failing",
            "f",
            json!({"type":"object","properties":{"path":{"type":"string"},
                   "n":{"type":"integer"}},"required":["path"]}),
        )
    }
    async fn execute(&self, _a: &ToolCall, _c: &ToolContext) -> Result<ToolOutput, ToolError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(ToolError::failed(FailureClass::NotFound, "no such file"))
    }
}

#[tokio::test]
async fn identical_failures_are_suppressed_for_good() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut r = ToolRegistry::new();
    r.register(Failing(count.clone()));
    let first = r.execute("failing", r#"{"path":"/x","n":1}"#).await;
    assert_eq!(first.class, Some(FailureClass::NotFound));
    assert!(
        first
            .model_text
            .starts_with("Tool error: execution failed: no such file")
    );
    assert!(first.model_text.contains("[class: not_found]"));
    // Same call, keys reordered and the integer as an integral float.
    let second = r.execute("failing", r#"{ "n": 1.0, "path": "/x" }"#).await;
    assert!(!second.suppressed);
    assert_eq!(count.load(Ordering::SeqCst), 2);
    let mut texts = Vec::new();
    for _ in 0..3 {
        let run = r.execute("failing", r#"{"path":"/x","n":1}"#).await;
        assert!(run.suppressed && !run.ok());
        assert_eq!(run.class, Some(FailureClass::Suppressed));
        texts.push(run.model_text);
    }
    assert_eq!(count.load(Ordering::SeqCst), 2, "never re-executed");
    assert!(texts.iter().all(|t| t == &texts[0]), "deterministic");
    assert!(texts[0].starts_with("Tool error: "), "{}", texts[0]);
    assert!(texts[0].contains("already failed 2 times"), "{}", texts[0]);
    // A different call still runs.
    r.execute("failing", r#"{"path":"/y"}"#).await;
    assert_eq!(count.load(Ordering::SeqCst), 3);
    // Validation failures count too, and are suppressed the same way.
    for _ in 0..2 {
        let run = r.execute("failing", r#"{"path":""}"#).await;
        assert_eq!(run.class, Some(FailureClass::InvalidArguments));
    }
    assert!(r.execute("failing", r#"{"path":""}"#).await.suppressed);
    r.clear_failures();
    assert!(
        !r.execute("failing", r#"{"path":"/x","n":1}"#)
            .await
            .suppressed
    );
}

#[tokio::test]
async fn validation_runs_before_the_gate_and_repairs_are_noted() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut r = ToolRegistry::new();
    r.set_approver(Arc::new(FixedApprover(ApprovalDecision::ApproveOnce)));
    r.register(Failing(count.clone()));
    let run = r.execute("failing", r#"{"n":2}"#).await;
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert!(run.model_text.contains("missing required argument `path`"));
    assert!(
        run.model_text
            .contains("Example call: failing {\"path\":\"<path>\"}")
    );

    struct Obj;
    #[async_trait]
    impl Tool for Obj {
        fn name(&self) -> &str {
            "obj"
        }
        fn definition(&self) -> ToolDefinition {
            ToolDefinition::function(
                "obj",
                "o",
                json!({"type":"object","properties":{"o":{"type":"object"}},"required":["o"]}),
            )
        }
        async fn execute(&self, a: &ToolCall, _c: &ToolContext) -> Result<ToolOutput, ToolError> {
            let v: Value = a.args.clone();
            Ok(ToolOutput::new(v["o"].clone()).with_timeline("got an object"))
        }
    }
    r.register(Obj);
    let run = r.execute("obj", r#"{"o":"{\"k\":1}"}"#).await;
    assert!(run.ok(), "{}", run.model_text);
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    assert_eq!(v["result"], json!({"k": 1}));
    assert_eq!(v["notes"].as_array().unwrap().len(), 1);
    assert_eq!(run.timeline(), "got an object");
}

#[tokio::test]
async fn gated_calls_fail_closed_and_edits_replace_the_field() {
    let count = Arc::new(AtomicUsize::new(0));
    let mut r = ToolRegistry::new();
    r.register(Gated(count.clone()));
    let run = r.execute("gated", r#"{"command":"rm -rf /"}"#).await;
    assert!(run.denied());
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert!(run.model_text.contains("denied by user"));

    r.set_approver(Arc::new(FixedApprover(ApprovalDecision::ApproveEdited(
        "ls".into(),
    ))));
    let run = r.execute("gated", r#"{"command":"rm -rf /"}"#).await;
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    assert_eq!(v["result"], "ls");
    assert_eq!(v["operator"]["edited_to"], "ls");
}
