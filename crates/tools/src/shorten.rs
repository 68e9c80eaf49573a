//! Shorter tool definitions for small context windows: the same tools, the
//! same names and argument types, with less prose. [`Detail::Compact`]
//! keeps each description's first sentence and drops the schema's
//! descriptions, examples, defaults and titles; [`Detail::Minimal`] also
//! keeps only the required arguments and cuts the sentence shorter.
//!
//! Pure: it never changes what a tool accepts (a call with an argument the
//! shortened schema left out still validates against the full schema) and
//! never decides when to shorten (the agent's context budget does).

use serde_json::{Map, Value};

use super::ToolDefinition;

/// How much of a definition is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Detail {
    /// As the tool wrote it.
    Full,
    /// First sentence; schema without prose.
    Compact,
    /// A short first sentence; required arguments only.
    Minimal,
}

impl Detail {
    /// The levels from most to least detailed.
    pub const ALL: [Detail; 3] = [Detail::Full, Detail::Compact, Detail::Minimal];

    pub fn name(self) -> &'static str {
        match self {
            Detail::Full => "full",
            Detail::Compact => "compact",
            Detail::Minimal => "minimal",
        }
    }
}

/// Schema keys that are prose, not shape.
const PROSE: [&str; 5] = [
    "description",
    "examples",
    "default",
    "title",
    "additionalProperties",
];

/// `def` at `detail`.
pub fn shortened(def: &ToolDefinition, detail: Detail) -> ToolDefinition {
    let (chars, required_only) = match detail {
        Detail::Full => return def.clone(),
        Detail::Compact => (160, false),
        Detail::Minimal => (72, true),
    };
    let mut out = def.clone();
    out.function.description = first_sentence(&def.function.description, chars);
    out.function.parameters = bare(&def.function.parameters, required_only);
    out
}

/// Characters of the definitions as sent (their JSON).
pub fn definitions_chars(defs: &[ToolDefinition]) -> usize {
    serde_json::to_string(defs).map_or(0, |s| s.len())
}

/// The first sentence of `text`, at most `max` characters (cut with `…`).
pub fn first_sentence(text: &str, max: usize) -> String {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|(i, c)| {
            *c == '\n' || (matches!(c, '.' | '!' | '?') && text[i + 1..].starts_with(' '))
        })
        .map_or(text.len(), |(i, c)| if c == '\n' { i } else { i + 1 });
    let sentence = text[..end].trim();
    match sentence.char_indices().nth(max.saturating_sub(1)) {
        Some((i, _)) => format!("{}…", &sentence[..i]),
        None => sentence.to_string(),
    }
}

/// A schema without its prose; with `required_only`, the top level keeps
/// only the required properties.
fn bare(schema: &Value, required_only: bool) -> Value {
    let Value::Object(map) = schema else {
        return schema.clone();
    };
    let required: Vec<&str> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    for (key, value) in map {
        if PROSE.contains(&key.as_str()) {
            continue;
        }
        let value = match (key.as_str(), value) {
            ("properties", Value::Object(props)) => Value::Object(
                props
                    .iter()
                    .filter(|(name, _)| !required_only || required.contains(&name.as_str()))
                    .map(|(name, prop)| (name.clone(), bare(prop, false)))
                    .collect(),
            ),
            (_, Value::Object(_)) => bare(value, false),
            (_, Value::Array(items)) => {
                Value::Array(items.iter().map(|v| bare(v, false)).collect())
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shell() -> ToolDefinition {
        ToolDefinition::function(
            "run_shell",
            "Run a shell command on the target. Long output is cut.\n\nWhen to use: always.",
            json!({
                "type": "object",
                "additionalProperties": false,
                "examples": [{"command": "df -h"}],
                "properties": {
                    "command": {"type": "string", "description": "The command."},
                    "risk": {"type": "string", "enum": ["low", "high"], "description": "Risk."},
                    "wait": {"type": ["boolean", "string"], "description": "How long."}
                },
                "required": ["command", "risk"]
            }),
        )
    }

    #[test]
    fn compact_keeps_the_shape_and_the_first_sentence() {
        let c = shortened(&shell(), Detail::Compact);
        assert_eq!(c.function.description, "Run a shell command on the target.");
        let p = &c.function.parameters;
        assert_eq!(
            p["properties"]["risk"],
            json!({"type": "string", "enum": ["low", "high"]})
        );
        assert!(p["properties"]["wait"].is_object());
        assert!(p.get("examples").is_none() && p.get("additionalProperties").is_none());
        assert_eq!(p["required"], json!(["command", "risk"]));
        assert!(definitions_chars(&[c]) < definitions_chars(&[shell()]));
    }

    #[test]
    fn minimal_keeps_the_required_arguments_only() {
        let m = shortened(&shell(), Detail::Minimal);
        let props = m.function.parameters["properties"].as_object().unwrap();
        assert_eq!(props.keys().collect::<Vec<_>>(), ["command", "risk"]);
        assert_eq!(shortened(&shell(), Detail::Full), shell());
    }

    #[test]
    fn sentences_are_cut_at_the_limit_and_on_the_first_line() {
        assert_eq!(first_sentence("abc def ghi", 5), "abc …");
        assert_eq!(first_sentence("one line\nsecond", 50), "one line");
        assert_eq!(first_sentence("v1.2 is out. Next.", 50), "v1.2 is out.");
        assert_eq!(first_sentence("", 5), "");
    }
}
