//! The tool registry: holds the tools, lists their definitions in a stable
//! order, and runs one call through the single path every call takes —
//! lookup, argument parsing, the approval gate, execution, the envelope.
//!
//! It never renders and never decides approvals itself: it asks its
//! [`Approver`].

use std::sync::Arc;

use serde_json::{Value, json};

use super::envelope;
use super::gate::{ApprovalDecision, Approver, FixedApprover};
use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, ToolStream};

/// The result of running one call through the registry.
#[derive(Debug, Clone)]
pub struct ToolRun {
    /// Exactly what goes back to the model as the tool message.
    pub model_text: String,
    /// The tool's output when it ran and succeeded.
    pub output: Option<ToolOutput>,
    /// The error when it failed (including unknown tools and bad arguments).
    pub error: Option<ToolError>,
    /// The operator's decision, for gated calls.
    pub decision: Option<ApprovalDecision>,
}

impl ToolRun {
    pub fn ok(&self) -> bool {
        self.error.is_none() && !self.denied()
    }

    pub fn denied(&self) -> bool {
        matches!(
            self.decision,
            Some(ApprovalDecision::Deny | ApprovalDecision::DenyWithReason(_))
        )
    }

    fn failed(error: ToolError) -> Self {
        ToolRun {
            model_text: format!("Tool error: {error}"),
            output: None,
            error: Some(error),
            decision: None,
        }
    }
}

/// The message a denied call returns to the model.
pub const DENIED: &str = "Command execution denied by user.";

/// Holds every registered tool.
pub struct ToolRegistry {
    tools: Vec<Box<dyn Tool>>,
    approver: Arc<dyn Approver>,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolRegistry {
    /// An empty registry whose gated calls are denied (fail closed) until an
    /// approver is set.
    pub fn new() -> Self {
        ToolRegistry {
            tools: Vec::new(),
            approver: Arc::new(FixedApprover(ApprovalDecision::DenyWithReason(
                "no operator is available to approve this call".into(),
            ))),
        }
    }

    pub fn set_approver(&mut self, approver: Arc<dyn Approver>) {
        self.approver = approver;
    }

    /// Add a tool. A tool with the same name replaces the earlier one.
    pub fn register(&mut self, tool: impl Tool + 'static) {
        self.register_boxed(Box::new(tool));
    }

    pub fn register_boxed(&mut self, tool: Box<dyn Tool>) {
        self.tools.retain(|t| t.name() != tool.name());
        self.tools.push(tool);
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.tools.iter().map(|t| t.name().to_string()).collect();
        names.sort();
        names
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.iter().find(|t| t.name() == name).map(|t| &**t)
    }

    /// Definitions sorted by name, so the prompt prefix stays stable.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let mut defs: Vec<ToolDefinition> = self.tools.iter().map(|t| t.definition()).collect();
        defs.sort_by(|a, b| a.function.name.cmp(&b.function.name));
        defs
    }

    /// Run a call without a stream sink.
    pub async fn execute(&self, name: &str, arguments: &str) -> ToolRun {
        self.execute_with_context(name, arguments, &ToolContext::default())
            .await
    }

    /// Run a call: look the tool up, parse the arguments, ask the approver when
    /// the tool is gated, execute, and wrap the result in the envelope.
    pub async fn execute_with_context(
        &self,
        name: &str,
        arguments: &str,
        ctx: &ToolContext,
    ) -> ToolRun {
        let Some(tool) = self.get(name) else {
            return ToolRun::failed(ToolError::InvalidArguments(format!(
                "unknown tool `{name}`; available tools: {}",
                self.names().join(", ")
            )));
        };
        let raw = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let args: Value = match serde_json::from_str(raw) {
            Ok(v @ Value::Object(_)) => v,
            Ok(other) => {
                return ToolRun::failed(ToolError::InvalidArguments(format!(
                    "arguments must be a JSON object, got {}",
                    json_kind(&other)
                )));
            }
            Err(e) => {
                return ToolRun::failed(ToolError::InvalidArguments(format!(
                    "arguments are not valid JSON: {e}"
                )));
            }
        };

        let mut effective = raw.to_string();
        let mut decision = None;
        if let Some(gate) = tool.gate(&args) {
            let d = self.approver.decide(&ctx.call_id, name, &gate).await;
            match &d {
                ApprovalDecision::Deny => {
                    return denied_run(DENIED.to_string(), d);
                }
                ApprovalDecision::DenyWithReason(reason) => {
                    let text = format!("Command execution denied by user. Reason: {reason}");
                    return denied_run(text, d);
                }
                ApprovalDecision::ApproveEdited(new_action) => {
                    if let Some(field) = &gate.editable_field {
                        let mut edited = args.clone();
                        edited[field.as_str()] = Value::String(new_action.clone());
                        effective = edited.to_string();
                    }
                }
                ApprovalDecision::ApproveOnce | ApprovalDecision::ApproveSession => {}
            }
            decision = Some(d);
        }

        let summary = match tool.gate(&args) {
            Some(g) => match &decision {
                Some(ApprovalDecision::ApproveEdited(cmd)) => cmd.clone(),
                _ => g.action,
            },
            None => summarize_args(&args),
        };
        ctx.emit(ToolStream::Started { summary });
        let result = tool.execute(&effective, ctx).await;
        ctx.emit(ToolStream::Completed);
        match result {
            Ok(output) => {
                let mut env = envelope::wrap(output.result.clone());
                if let Some(ApprovalDecision::ApproveEdited(cmd)) = &decision {
                    env["operator"] = json!({
                        "note": "the operator edited this call before approving it",
                        "edited_to": cmd,
                    });
                }
                ToolRun {
                    model_text: env.to_string(),
                    output: Some(output),
                    error: None,
                    decision,
                }
            }
            Err(e) => {
                let mut run = ToolRun::failed(e);
                run.decision = decision;
                run
            }
        }
    }
}

fn denied_run(text: String, decision: ApprovalDecision) -> ToolRun {
    ToolRun {
        model_text: envelope::wrap(Value::String(text)).to_string(),
        output: None,
        error: None,
        decision: Some(decision),
    }
}

/// One line describing a call's arguments, for timelines.
pub fn summarize_args(args: &Value) -> String {
    let text = match args {
        Value::Object(map) if map.len() == 1 => match map.values().next() {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => String::new(),
        },
        Value::Object(map) if map.is_empty() => String::new(),
        other => other.to_string(),
    };
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    super::truncate::cut(&one_line, 160, super::truncate::Keep::Head).text
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::GateInfo;
    use async_trait::async_trait;
    use std::sync::atomic::{AtomicUsize, Ordering};

    struct Echo;
    #[async_trait]
    impl Tool for Echo {
        fn name(&self) -> &str {
            "echo"
        }
        fn definition(&self) -> ToolDefinition {
            ToolDefinition::function("echo", "echo", json!({"type":"object"}))
        }
        async fn execute(&self, a: &str, _c: &ToolContext) -> Result<ToolOutput, ToolError> {
            let v: Value = crate::tools::parse_args(a)?;
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
        async fn execute(&self, a: &str, _c: &ToolContext) -> Result<ToolOutput, ToolError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            let v: Value = crate::tools::parse_args(a)?;
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
            "Tool error: invalid arguments: unknown tool `nope`; available tools: echo, gated"
        );
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
}
