//! The validation message every built-in tool's schema produces, snapshot
//! tested: the problems, the accepted arguments and the literal example call.
//! Also: the definitions carry the routing mini-sections and the required
//! fields the issue names.

use serde_json::{Value, json};
use vigil::exec::ExecutionContext;
use vigil::tools::ToolDefinition;
use vigil::tools::ToolRegistry;
use vigil::tools::edit::{Edit, EditConfig};
use vigil::tools::fetch::{FetchConfig, FetchUrl};
use vigil::tools::files::{ReadFile, WriteFile};
use vigil::tools::search::{SearchConfig, WebSearch};
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::time::TimeTool;
use vigil::tools::validate::{example_args, validate};

/// Every built-in tool, as the owner would register them all.
fn all_tools() -> ToolRegistry {
    let ctx = ExecutionContext::local();
    let mut r = ToolRegistry::new();
    r.register(RunShell::new(ctx.clone(), ShellConfig::default()));
    r.register(ReadFile::new(ctx.clone()));
    r.register(WriteFile::new(ctx.clone(), true));
    r.register(TimeTool::new());
    r.register(Edit::new(ctx.clone(), EditConfig::default()));
    r.register(FetchUrl::new(FetchConfig::default()));
    r.register(WebSearch::new(SearchConfig::default()));
    r
}

fn def(name: &str) -> ToolDefinition {
    all_tools()
        .definitions()
        .into_iter()
        .find(|d| d.function.name == name)
        .expect("registered")
}

fn message(name: &str, args: Value) -> String {
    validate(&def(name), args).expect_err("should be invalid")
}

#[test]
fn run_shell_validation_message() {
    insta::assert_snapshot!(message(
        "run_shell",
        json!({"command": "ls", "risk": "extreme", "mutation": "maybe", "cmd": "x"})
    ));
}

#[test]
fn read_file_validation_message() {
    insta::assert_snapshot!(message("read_file", json!({"file": "/tmp/x"})));
}

#[test]
fn write_file_validation_message() {
    insta::assert_snapshot!(message("write_file", json!({"path": "", "content": 5})));
}

#[test]
fn time_validation_message() {
    insta::assert_snapshot!(message("time", json!({"format": "weekly"})));
}

#[test]
fn edit_validation_message() {
    insta::assert_snapshot!(message(
        "edit",
        json!({"command": "replace", "path": "/srv/x", "insert_line": 2.5, "view_range": [1, "end"]})
    ));
}

#[test]
fn fetch_url_validation_message() {
    insta::assert_snapshot!(message("fetch_url", json!({"url": ["https://a.example"]})));
}

#[test]
fn web_search_validation_message() {
    insta::assert_snapshot!(message("web_search", json!({"q": "tokio"})));
}

#[test]
fn every_example_call_validates() {
    for d in all_tools().definitions() {
        let ex = example_args(&d.function.parameters);
        assert!(
            validate(&d, ex.clone()).is_ok(),
            "{}: {ex}",
            d.function.name
        );
    }
}

#[test]
fn every_definition_has_the_routing_sections() {
    for d in all_tools().definitions() {
        let text = &d.function.description;
        for section in [
            "When to use",
            "When NOT to use",
            "Disambiguation",
            "Example",
        ] {
            assert!(
                text.contains(&format!("{section}:")) || text.contains(&format!("{section}s:")),
                "{} lacks {section}",
                d.function.name
            );
        }
        let p = &d.function.parameters;
        assert_eq!(p["type"], "object", "{}", d.function.name);
        for (key, prop) in p["properties"].as_object().unwrap() {
            assert!(
                prop["description"].is_string(),
                "{}.{key} has no description",
                d.function.name
            );
        }
        for r in p["required"].as_array().into_iter().flatten() {
            let r = r.as_str().unwrap();
            assert!(
                p["properties"].get(r).is_some(),
                "{} requires undeclared {r}",
                d.function.name
            );
        }
    }
}

fn required(name: &str) -> Vec<String> {
    def(name).function.parameters["required"]
        .as_array()
        .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn required_fields_are_in_the_schemas() {
    assert_eq!(
        required("run_shell"),
        ["command", "risk", "mutation", "privesc", "why"]
    );
    assert_eq!(required("read_file"), ["path"]);
    assert_eq!(required("write_file"), ["path", "content"]);
    assert!(required("time").is_empty());
    assert_eq!(required("edit"), ["command", "path"]);
    assert_eq!(required("fetch_url"), ["url"]);
    assert_eq!(required("web_search"), ["query"]);
    assert_eq!(all_tools().names().len(), 7);
    // The registry names every tool it holds.
    let names = all_tools().names();
    for d in all_tools().definitions() {
        assert!(names.contains(&d.function.name));
        assert_eq!(
            all_tools().get(&d.function.name).unwrap().name(),
            d.function.name
        );
    }
}
