//! The tool definitions' share of the context window: when the visible
//! definitions would take more than [`TOOL_SHARE`] of the window, they are
//! sent shorter ([`Detail::Compact`], then [`Detail::Minimal`]); when even
//! the minimal ones do not fit, the tools of lazy domains (`web`,
//! `mcp:NAME`) are left out of the round, largest first, and, when the
//! model can ask for them (`request_tools`), revealed again on request.
//! What was shortened or left out is logged and told once per change.
//!
//! It decides what is sent; it never changes a tool, never runs one, and
//! never drops a core tool (no domain).

use crate::run::context::ContextBudget;
use vigil_tools::ToolDefinition;
use vigil_tools::shorten::{Detail, definitions_chars, shortened};

/// The share of the context window the tool definitions may take.
pub const TOOL_SHARE: f64 = 0.25;

/// The definitions one round sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Fitted {
    pub definitions: Vec<ToolDefinition>,
    pub detail: Detail,
    /// Tools of lazy domains left out of this round, by name.
    pub left_out: Vec<String>,
    /// Characters of the full definitions, and of those sent.
    pub full_chars: usize,
    pub sent_chars: usize,
}

impl Fitted {
    /// What was shortened, for the log and the operator; None when the
    /// definitions went as written.
    pub fn describe(&self, limit: u64) -> Option<String> {
        if self.detail == Detail::Full && self.left_out.is_empty() {
            return None;
        }
        let mut text = format!(
            "tool definitions sent {} ({} → {} chars) to stay within {:.0}% of the \
             {limit}-token context window",
            self.detail.name(),
            self.full_chars,
            self.sent_chars,
            TOOL_SHARE * 100.0
        );
        if !self.left_out.is_empty() {
            text.push_str(&format!("; left out: {}", self.left_out.join(", ")));
        }
        Some(text)
    }
}

/// The most detailed form of `visible` that fits the share of `budget`'s
/// window. `domain_of` names a tool's lazy domain (None: a core tool).
pub fn fit(
    visible: Vec<ToolDefinition>,
    budget: &ContextBudget,
    domain_of: &dyn Fn(&str) -> Option<String>,
) -> Fitted {
    let allowed = (budget.limit as f64 * TOOL_SHARE) as u64;
    let full_chars = definitions_chars(&visible);
    let fits = |defs: &[ToolDefinition]| budget.tokens_of(definitions_chars(defs)) <= allowed;
    let mut level = Detail::Full;
    let mut defs = visible.clone();
    for detail in Detail::ALL {
        level = detail;
        defs = visible.iter().map(|d| shortened(d, detail)).collect();
        if fits(&defs) {
            break;
        }
    }
    let mut left_out = Vec::new();
    while !fits(&defs) {
        let largest = defs
            .iter()
            .enumerate()
            .filter(|(_, d)| domain_of(&d.function.name).is_some())
            .max_by_key(|(_, d)| definitions_chars(std::slice::from_ref(*d)));
        let Some((at, _)) = largest else { break };
        left_out.push(defs.remove(at).function.name);
    }
    left_out.sort();
    Fitted {
        sent_chars: definitions_chars(&defs),
        definitions: defs,
        detail: level,
        left_out,
        full_chars,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, prose: usize) -> ToolDefinition {
        ToolDefinition::function(
            name,
            &format!("Does {name}. {}", "More words. ".repeat(prose)),
            json!({"type": "object", "properties": {"a": {"type": "string", "description": "x".repeat(prose)}}, "required": ["a"]}),
        )
    }

    fn no_domain(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_roomy_window_gets_them_as_written() {
        let defs = vec![tool("a", 50), tool("b", 50)];
        let f = fit(defs.clone(), &ContextBudget::new(100_000, 0), &no_domain);
        assert_eq!((&f.definitions, f.detail), (&defs, Detail::Full));
        assert_eq!(f.describe(100_000), None);
    }

    #[test]
    fn a_small_window_gets_them_shorter_and_is_told() {
        let defs = vec![tool("a", 80), tool("b", 80)];
        let f = fit(defs, &ContextBudget::new(1000, 0), &no_domain);
        assert_eq!(f.detail, Detail::Compact);
        assert!(f.sent_chars < f.full_chars && f.left_out.is_empty());
        assert!(f.describe(1000).unwrap().contains("sent compact"));
    }

    #[test]
    fn lazy_domains_are_left_out_when_nothing_else_helps_core_never() {
        let defs = vec![tool("core", 1), tool("web_a", 1), tool("web_b", 1)];
        let web = |n: &str| n.starts_with("web").then(|| "web".to_string());
        let f = fit(defs, &ContextBudget::new(60, 0), &web);
        assert_eq!(f.detail, Detail::Minimal);
        assert_eq!(f.left_out, ["web_a", "web_b"]);
        assert_eq!(f.definitions[0].function.name, "core");
        assert!(f.describe(60).unwrap().contains("left out: web_a, web_b"));
    }
}
