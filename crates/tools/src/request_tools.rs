//! `request_tools {domains, reason}`: the model's way to see a hidden tool
//! domain. It answers with the domains added (and their tool names), already
//! visible, blocked (with why) and unknown, and reveals the added ones in the
//! turn's [`Visibility`](crate::visibility::Visibility) so they are sent from the next model round.
//!
//! It never returns a schema and never reveals a blocked domain.

use std::collections::BTreeMap;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::visibility::DomainPolicy;
use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, args_of};

pub const NAME: &str = "request_tools";

/// The tool. Built after every other tool is registered, from the
/// registry's domains and the operator's policy.
pub struct RequestTools {
    /// Domain → its tool names.
    domains: BTreeMap<String, Vec<String>>,
    policy: DomainPolicy,
}

#[derive(Deserialize)]
struct Args {
    domains: Vec<String>,
    #[allow(dead_code)]
    reason: String,
}

impl RequestTools {
    pub fn new(domains: BTreeMap<String, Vec<String>>, policy: DomainPolicy) -> Self {
        RequestTools { domains, policy }
    }

    fn requestable(&self) -> Vec<String> {
        self.policy
            .hidden
            .iter()
            .filter(|d| self.domains.contains_key(*d) && !self.policy.blocked.contains_key(*d))
            .map(|d| format!("{d} ({})", self.domains[d].join(", ")))
            .collect()
    }
}

#[async_trait]
impl Tool for RequestTools {
    fn name(&self) -> &str {
        NAME
    }

    fn definition(&self) -> ToolDefinition {
        let hidden = self.requestable();
        let list = if hidden.is_empty() {
            "(none)".to_string()
        } else {
            hidden.join("; ")
        };
        ToolDefinition::function(
            NAME,
            &format!(
                "Make hidden tool domains available. Their tools can be called from your \
                 next step on, for the rest of this turn. Hidden domains: {list}."
            ),
            json!({
                "type": "object",
                "properties": {
                    "domains": {
                        "type": "array",
                        "items": {"type": "string"},
                        "description": "Domain names, e.g. [\"web\"].",
                        "examples": [["web"]]
                    },
                    "reason": {
                        "type": "string",
                        "description": "Why these tools are needed (shown to the operator)."
                    }
                },
                "required": ["domains", "reason"],
                "additionalProperties": false
            }),
        )
    }

    fn summary(&self, args: &Value) -> Option<String> {
        let domains: Vec<&str> = args["domains"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        Some(format!(
            "{} — {}",
            domains.join(", "),
            args["reason"].as_str().unwrap_or_default()
        ))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let args: Args = args_of(call)?;
        let mut added = serde_json::Map::new();
        let mut already = Vec::new();
        let mut blocked = serde_json::Map::new();
        let mut unknown = Vec::new();
        for domain in args.domains.iter().map(|d| d.trim()) {
            if let Some(why) = self.policy.blocked.get(domain) {
                blocked.insert(domain.to_string(), json!(why));
                continue;
            }
            let Some(tools) = self.domains.get(domain) else {
                unknown.push(domain.to_string());
                continue;
            };
            let newly = match ctx.visibility() {
                Some(v) => v.reveal(domain),
                None => false,
            };
            if newly {
                added.insert(domain.to_string(), json!(tools));
            } else {
                already.push(domain.to_string());
            }
        }
        let mut result = json!({
            "added": added,
            "already_visible": already,
            "blocked": blocked,
            "unknown": unknown,
        });
        if !added.is_empty() {
            result["note"] = json!("the added tools can be called from your next step on");
        }
        if !unknown.is_empty() {
            let known: Vec<&String> = self
                .domains
                .keys()
                .chain(self.policy.blocked.keys())
                .collect();
            result["known_domains"] = json!(known);
        }
        let timeline = format!(
            "added {} · already visible {} · blocked {} · unknown {}",
            added.len(),
            already.len(),
            blocked.len(),
            unknown.len()
        );
        Ok(ToolOutput::new(result).with_timeline(timeline))
    }
}
