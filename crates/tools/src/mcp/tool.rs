//! [`McpTool`]: one tool of an MCP server, behind the ordinary [`Tool`]
//! contract. Its definition is the server's JSON Schema under the
//! namespaced name; calls are gated unless the server or the tool is trusted;
//! results are mapped into the envelope (text blocks joined, other content
//! described, long text cut with the full text spilled) and `isError`
//! results become failures with a class.
//!
//! It never decides approvals (the registry asks) and never reaches the
//! server except through [`McpServer`].

use std::sync::Arc;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use rmcp::model::{CallToolResult, ContentBlock, Tool as ListedTool};
use serde_json::{Map, Value, json};

use super::{McpServer, domain_of, namespaced};
use crate::registry::summarize_args;
use crate::truncate::{self, Keep};
use crate::{FailureClass, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_protocol::approval::GateInfo;

/// Characters of a result the model sees (the rest is spilled).
pub const RESULT_CHARS: usize = 10_000;

/// One tool of one MCP server.
pub struct McpTool {
    server: Arc<McpServer>,
    /// `server__tool`.
    name: String,
    /// The server's own name for it.
    remote: String,
    description: String,
    parameters: Value,
    trusted: bool,
    /// `Some(false)` when the server says it only reads, `Some(true)` when
    /// it says it is destructive.
    mutation: Option<bool>,
    domain: String,
}

impl McpTool {
    pub fn from_listed(server: Arc<McpServer>, listed: &ListedTool) -> Self {
        let remote = listed.name.to_string();
        let cfg = server.config();
        let trusted = cfg.trusted || cfg.trusted_tools.iter().any(|t| t == &remote);
        let annotations = listed
            .annotations
            .as_ref()
            .map(|a| serde_json::to_value(a).unwrap_or(Value::Null));
        let mutation = annotations.and_then(|a| {
            if a["readOnlyHint"] == json!(true) {
                Some(false)
            } else if a["destructiveHint"] == json!(true) {
                Some(true)
            } else {
                None
            }
        });
        let summary = listed
            .description
            .as_deref()
            .or(listed.title.as_deref())
            .unwrap_or("(no description)");
        McpTool {
            name: namespaced(server.name(), &remote),
            description: format!("[MCP server `{}`] {summary}", server.name()),
            parameters: schema_for_openai(&listed.input_schema),
            domain: domain_of(server.name()),
            server,
            remote,
            trusted,
            mutation,
        }
    }

    /// The server-side name of the tool.
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    pub fn server(&self) -> &Arc<McpServer> {
        &self.server
    }
}

/// The server's input schema, made acceptable to OpenAI-style APIs: an
/// object type with `properties`, without `$schema`.
fn schema_for_openai(schema: &Map<String, Value>) -> Value {
    let mut s = schema.clone();
    s.remove("$schema");
    s.entry("type").or_insert_with(|| json!("object"));
    s.entry("properties").or_insert_with(|| json!({}));
    Value::Object(s)
}

#[async_trait]
impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(&self.name, &self.description, self.parameters.clone())
    }

    fn domain(&self) -> Option<&str> {
        Some(&self.domain)
    }

    fn gate(&self, args: &Value) -> Option<GateInfo> {
        if self.trusted {
            return None;
        }
        Some(GateInfo {
            action: self.summary(args).unwrap_or_default(),
            model_risk: None,
            mutation: self.mutation,
            privesc: None,
            why: None,
            editable_field: None,
        })
    }

    /// Every argument, in full: the action line is cut at 160 characters,
    /// the card shows all of this (and a session rule keys on all of it).
    async fn facts(&self, args: &Value) -> vigil_protocol::approval::CallFacts {
        vigil_protocol::approval::CallFacts {
            arguments: Some(
                serde_json::to_string_pretty(args).unwrap_or_else(|_| args.to_string()),
            ),
            ..Default::default()
        }
    }

    fn summary(&self, args: &Value) -> Option<String> {
        Some(format!(
            "{}.{} {}",
            self.server.name(),
            self.remote,
            summarize_args(args)
        ))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args = match &call.args {
            Value::Object(map) => map.clone(),
            _ => {
                return Err(ToolError::InvalidArguments(
                    "arguments must be a JSON object".into(),
                ));
            }
        };
        let result = self.server.call(&self.remote, args).await?;
        map_result(&self.name, result, ctx)
    }
}

/// The envelope's `result` for a call result, or a failure for `isError`.
pub fn map_result(
    label: &str,
    result: CallToolResult,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut parts: Vec<String> = result.content.iter().map(describe).collect();
    if parts.iter().all(|p| p.trim().is_empty())
        && let Some(structured) = &result.structured_content
    {
        parts = vec![structured.to_string()];
    }
    let text = parts.join("\n");
    if result.is_error == Some(true) {
        let message = if text.trim().is_empty() {
            "the tool reported an error without a message".to_string()
        } else {
            truncate::cut(&text, RESULT_CHARS, Keep::Head).text
        };
        return Err(ToolError::failed(FailureClass::ExecutionFailed, message));
    }
    let (cut, spill) = truncate::cut_with_spill(
        &text,
        RESULT_CHARS,
        Keep::Head,
        ctx.spill_dir.as_deref(),
        label,
    );
    Ok(ToolOutput {
        truncated: cut.truncated(),
        result: Value::String(cut.text),
        spill: spill.into_iter().collect(),
        ..Default::default()
    })
}

/// Text blocks as they are; anything else as one bracketed line.
fn describe(block: &ContentBlock) -> String {
    if let ContentBlock::Text(t) = block {
        return t.text.clone();
    }
    let v = serde_json::to_value(block).unwrap_or(Value::Null);
    let kind = v["type"].as_str().unwrap_or("content");
    let res = if v["resource"].is_object() {
        &v["resource"]
    } else {
        &v
    };
    if let Some(text) = res["text"].as_str() {
        return text.to_string();
    }
    let mut line = format!("[{kind}");
    for key in ["uri", "mimeType", "name"] {
        if let Some(s) = res[key].as_str() {
            line.push_str(&format!(" {key}={s}"));
        }
    }
    if let Some(data) = res["data"].as_str().or(res["blob"].as_str()) {
        line.push_str(&format!(", {} base64 chars not shown", data.len()));
    }
    line.push(']');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(v: Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_is_joined_and_other_content_described() {
        let r = result(json!({"content": [
            {"type": "text", "text": "a \"quoted\"\nline"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "inner"}}
        ]}));
        let out = map_result("t", r, &ToolContext::default()).unwrap();
        assert_eq!(
            out.result,
            json!(
                "a \"quoted\"\nline\n[image mimeType=image/png, 4 base64 chars not shown]\ninner"
            )
        );
    }

    #[test]
    fn errors_are_failures_and_structured_content_is_used_alone() {
        let r = result(json!({"content": [{"type": "text", "text": "boom"}], "isError": true}));
        let e = map_result("t", r, &ToolContext::default()).unwrap_err();
        assert_eq!(e.class(), FailureClass::ExecutionFailed);
        assert!(e.to_string().contains("boom"));
        let r = result(json!({"content": [], "structuredContent": {"sum": 3}}));
        let out = map_result("t", r, &ToolContext::default()).unwrap();
        assert_eq!(out.result, json!("{\"sum\":3}"));
    }

    #[test]
    fn long_text_is_cut_and_spilled() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::default().with_spill_dir(dir.path().to_path_buf());
        let r =
            result(json!({"content": [{"type": "text", "text": "x".repeat(RESULT_CHARS * 2)}]}));
        let out = map_result("t", r, &ctx).unwrap();
        assert!(out.truncated);
        assert_eq!(out.spill.len(), 1);
    }

    #[test]
    fn schemas_get_an_object_type_and_lose_dollar_schema() {
        let s: Map<String, Value> =
            serde_json::from_value(json!({"$schema": "x", "required": []})).unwrap();
        assert_eq!(
            schema_for_openai(&s),
            json!({"type": "object", "properties": {}, "required": []})
        );
    }
}
