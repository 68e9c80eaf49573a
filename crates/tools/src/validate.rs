//! Schema-driven argument validation, run by the registry before the approval
//! gate and before any tool executes.
//!
//! From a tool's JSON schema it finds missing required keys, empty required
//! strings, wrong types, bad enum values and unknown keys, and answers with a
//! message that lists the accepted arguments (types, required marked) and one
//! literal example call built from the schema, so a model can copy it. A few
//! harmless mistakes are repaired instead, each with a note: stringified JSON
//! where an object/array is wanted, `"true"`/`"false"` for booleans, a
//! differently-cased enum value. Integral floats count as integers.
//!
//! It must never execute anything and never reject what the schema allows.
//! Required strings must be non-empty unless the schema says `"minLength": 0`.

use serde_json::{Map, Value, json};

use super::ToolDefinition;

/// Arguments that passed validation, possibly repaired.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    /// The arguments to execute with (a JSON object).
    pub args: Value,
    /// One line per repair made, for the model.
    pub notes: Vec<String>,
}

/// Check `args` against the definition's `parameters` schema.
/// `Err` carries the complete message for the model.
pub fn validate(def: &ToolDefinition, args: Value) -> Result<Validated, String> {
    let schema = &def.function.parameters;
    let name = &def.function.name;
    let Value::Object(mut map) = args else {
        return Err(report(def, &["arguments must be a JSON object".into()]));
    };
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let closed = schema["additionalProperties"] == Value::Bool(false);

    let mut problems = Vec::new();
    let mut notes = Vec::new();

    // Optional keys sent as null mean "not given".
    map.retain(|k, v| !v.is_null() || required.contains(&k.as_str()));

    if closed {
        for key in map.keys() {
            if !props.contains_key(key) {
                problems.push(format!("unknown argument `{key}`"));
            }
        }
    }
    for key in &required {
        match map.get(*key) {
            None | Some(Value::Null) => {
                let ty = props.get(*key).map(type_label).unwrap_or_default();
                problems.push(format!("missing required argument `{key}` ({ty})"));
            }
            Some(Value::String(s))
                if s.trim().is_empty()
                    && props.get(*key).and_then(|p| p.get("minLength")) != Some(&json!(0)) =>
            {
                problems.push(format!("required argument `{key}` must not be empty"));
            }
            _ => {}
        }
    }
    for (key, prop) in &props {
        if let Some(value) = map.get_mut(key) {
            check(key, prop, value, &mut problems, &mut notes);
        }
    }
    if problems.is_empty() {
        Ok(Validated {
            args: Value::Object(map),
            notes: notes.into_iter().map(|n| format!("{name}: {n}")).collect(),
        })
    } else {
        Err(report(def, &problems))
    }
}

/// The JSON types a schema allows (`[]`: any).
fn types_of(prop: &Value) -> Vec<&str> {
    match &prop["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn matches_type(ty: &str, v: &Value) -> bool {
    match ty {
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(is_integral),
        _ => true,
    }
}

fn is_integral(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a number with a fraction",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Check (and where harmless, repair) one value against its schema.
fn check(
    key: &str,
    prop: &Value,
    value: &mut Value,
    problems: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let types = types_of(prop);
    if !types.is_empty() && !types.iter().any(|t| matches_type(t, value)) {
        match repair(&types, value) {
            Some((fixed, note)) => {
                *value = fixed;
                notes.push(format!("`{key}` {note}"));
            }
            None => {
                problems.push(format!(
                    "`{key}` must be {}, got {}",
                    type_label(prop),
                    kind(value)
                ));
                return;
            }
        }
    }
    // Integral floats become integers so tools can read them as such.
    if types.contains(&"integer")
        && let Some(f) = value.as_f64().filter(|_| value.is_f64())
        && is_integral(f)
    {
        *value = json!(f as i64);
    }
    if let Some(allowed) = prop["enum"].as_array()
        && !allowed.contains(value)
    {
        let folded = value.as_str().and_then(|s| {
            allowed
                .iter()
                .find(|a| a.as_str().is_some_and(|a| a.eq_ignore_ascii_case(s.trim())))
        });
        match folded {
            Some(a) => {
                notes.push(format!("`{key}` was read as {a}"));
                *value = a.clone();
            }
            None => problems.push(format!(
                "`{key}` must be one of {}, got {value}",
                enum_list(allowed)
            )),
        }
    }
    if let (Some(items), Value::Array(elems)) = (prop.get("items"), &mut *value) {
        for (i, elem) in elems.iter_mut().enumerate() {
            check(&format!("{key}[{i}]"), items, elem, problems, notes);
        }
    }
    if let Some(min) = prop["minLength"].as_u64()
        && let Some(s) = value.as_str()
        && (s.chars().count() as u64) < min
    {
        problems.push(format!("`{key}` must be at least {min} characters long"));
    }
}

/// A harmless repair for a value of the wrong type, with its note.
fn repair(types: &[&str], value: &Value) -> Option<(Value, String)> {
    let s = value.as_str()?;
    let t = s.trim();
    for ty in types {
        match *ty {
            "object" | "array" => {
                if let Ok(parsed) = serde_json::from_str::<Value>(t)
                    && matches_type(ty, &parsed)
                {
                    return Some((
                        parsed,
                        format!("was a string holding JSON; it was parsed as an {ty}"),
                    ));
                }
            }
            "boolean" if t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false") => {
                let b = t.eq_ignore_ascii_case("true");
                return Some((
                    Value::Bool(b),
                    format!("was the string {value}; it was read as the boolean {b}"),
                ));
            }
            _ => {}
        }
    }
    None
}

fn enum_list(allowed: &[Value]) -> String {
    allowed
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `string`, `boolean | string | integer`, `string: one of "a", "b"`,
/// `array of integer`.
fn type_label(prop: &Value) -> String {
    let types = types_of(prop);
    let mut label = if types.is_empty() {
        "any".to_string()
    } else {
        types.join(" | ")
    };
    if types == ["array"]
        && let Some(item) = prop.get("items")
    {
        label = format!("array of {}", type_label(item));
    }
    if let Some(allowed) = prop["enum"].as_array() {
        label.push_str(&format!(": one of {}", enum_list(allowed)));
    }
    label
}

/// The complete message: the problems, the accepted arguments and an example.
pub fn report(def: &ToolDefinition, problems: &[String]) -> String {
    let mut out = format!(
        "`{}` was called with invalid arguments:\n",
        def.function.name
    );
    for p in problems {
        out.push_str(&format!("- {p}\n"));
    }
    out.push_str(&usage(def));
    out
}

/// The accepted arguments, one per line, and one literal example call.
pub fn usage(def: &ToolDefinition) -> String {
    let schema = &def.function.parameters;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = String::from("Accepted arguments:\n");
    match schema["properties"].as_object() {
        Some(props) if !props.is_empty() => {
            // Required first, in the schema's `required` order, then the rest.
            let mut keys: Vec<&String> = Vec::new();
            for r in &required {
                if let Some((k, _)) = props.get_key_value(*r) {
                    keys.push(k);
                }
            }
            keys.extend(props.keys().filter(|k| !required.contains(&k.as_str())));
            for key in keys {
                let prop = &props[key];
                let req = if required.contains(&key.as_str()) {
                    ", required"
                } else {
                    ""
                };
                out.push_str(&format!("- {key} ({}{req})", type_label(prop)));
                if let Some(d) = prop["description"].as_str() {
                    out.push_str(&format!(": {d}"));
                }
                out.push('\n');
            }
        }
        _ => out.push_str("- (none)\n"),
    }
    out.push_str(&format!(
        "Example call: {} {}",
        def.function.name,
        example_args(schema)
    ));
    out
}

/// One literal argument object from the schema: its `examples[0]` when it
/// has one, otherwise the required keys filled from each property's
/// `examples`, `default`, first enum value or a placeholder of its type.
pub fn example_args(schema: &Value) -> Value {
    if let Some(ex) = schema["examples"].as_array().and_then(|e| e.first())
        && ex.is_object()
    {
        return ex.clone();
    }
    let mut map = Map::new();
    let props = schema["properties"].as_object();
    if let (Some(props), Some(required)) = (props, schema["required"].as_array()) {
        for key in required.iter().filter_map(Value::as_str) {
            if let Some(prop) = props.get(key) {
                map.insert(key.to_string(), example_value(key, prop));
            }
        }
    }
    Value::Object(map)
}

fn example_value(key: &str, prop: &Value) -> Value {
    if let Some(ex) = prop["examples"].as_array().and_then(|e| e.first()) {
        return ex.clone();
    }
    if let Some(d) = prop.get("default") {
        return d.clone();
    }
    if let Some(first) = prop["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    match types_of(prop).first().copied().unwrap_or("string") {
        "boolean" => json!(false),
        "integer" | "number" => json!(1),
        "array" => json!([]),
        "object" => json!({}),
        _ => json!(format!("<{key}>")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def() -> ToolDefinition {
        ToolDefinition::function(
            "demo",
            "d",
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Where.", "examples": ["/tmp/x"]},
                    "mode": {"type": "string", "enum": ["view", "create"]},
                    "n": {"type": "integer"},
                    "flag": {"type": "boolean"},
                    "range": {"type": "array", "items": {"type": "integer"}},
                    "opts": {"type": "object"},
                    "body": {"type": "string", "minLength": 0}
                },
                "required": ["path", "mode", "body"],
                "additionalProperties": false
            }),
        )
    }

    fn ok(args: Value) -> Validated {
        validate(&def(), args).expect("valid")
    }

    fn err(args: Value) -> String {
        validate(&def(), args).expect_err("invalid")
    }

    #[test]
    fn valid_arguments_pass_untouched() {
        let args = json!({"path": "/a", "mode": "view", "body": "", "n": 3,
                          "range": [1, -1], "opts": {"a": 1}, "flag": true});
        let v = ok(args.clone());
        assert_eq!(v.args, args);
        assert!(v.notes.is_empty());
    }

    #[test]
    fn problems_are_listed_with_usage_and_example() {
        let m = err(json!({"path": " ", "mode": "edit", "n": "x", "extra": 1}));
        assert!(m.contains("unknown argument `extra`"), "{m}");
        assert!(
            m.contains("required argument `path` must not be empty"),
            "{m}"
        );
        assert!(
            m.contains("missing required argument `body` (string)"),
            "{m}"
        );
        assert!(
            m.contains("`mode` must be one of \"view\", \"create\", got \"edit\""),
            "{m}"
        );
        assert!(m.contains("`n` must be integer, got a string"), "{m}");
        assert!(m.contains("- path (string, required): Where."), "{m}");
        assert!(
            m.ends_with(r#"Example call: demo {"body":"<body>","mode":"view","path":"/tmp/x"}"#),
            "{m}"
        );
    }

    #[test]
    fn harmless_mistakes_are_repaired_with_notes() {
        let v = ok(json!({"path": "/a", "mode": "VIEW", "body": "b", "n": 4.0,
                          "range": "[1, 2.0]", "opts": "{\"k\": true}", "flag": "False"}));
        assert_eq!(v.args["mode"], "view");
        assert_eq!(v.args["n"], json!(4));
        assert!(v.args["n"].is_i64());
        assert_eq!(v.args["range"], json!([1, 2]));
        assert_eq!(v.args["opts"], json!({"k": true}));
        assert_eq!(v.args["flag"], json!(false));
        assert_eq!(v.notes.len(), 4, "{:?}", v.notes);
        assert!(
            v.notes
                .iter()
                .any(|n| n.contains("`range` was a string holding JSON"))
        );
    }

    #[test]
    fn fractions_and_wrong_item_types_fail() {
        let m = err(json!({"path": "/a", "mode": "view", "body": "", "n": 1.5}));
        assert!(
            m.contains("`n` must be integer, got a number with a fraction"),
            "{m}"
        );
        let m = err(json!({"path": "/a", "mode": "view", "body": "", "range": [1, "x"]}));
        assert!(m.contains("`range[1]` must be integer"), "{m}");
        let m = err(json!({"path": "/a", "mode": "view", "body": "", "flag": "yes"}));
        assert!(m.contains("`flag` must be boolean"), "{m}");
        let m = validate(&def(), json!([1])).unwrap_err();
        assert!(m.contains("must be a JSON object"), "{m}");
    }

    #[test]
    fn optional_nulls_are_dropped_required_nulls_are_missing() {
        let v = ok(json!({"path": "/a", "mode": "view", "body": "", "n": null}));
        assert!(v.args.get("n").is_none());
        let m = err(json!({"path": null, "mode": "view", "body": ""}));
        assert!(m.contains("missing required argument `path`"), "{m}");
    }

    #[test]
    fn schema_level_examples_win() {
        let s = json!({"type": "object", "properties": {"q": {"type": "string"}},
                       "required": ["q"], "examples": [{"q": "rust tokio"}]});
        assert_eq!(example_args(&s), json!({"q": "rust tokio"}));
        let s = json!({"type": "object", "properties": {"q": {"type": "string"},
                       "k": {"type": "integer", "default": 5}}, "required": ["q", "k"]});
        assert_eq!(example_args(&s), json!({"q": "<q>", "k": 5}));
    }
}
