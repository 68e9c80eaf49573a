//! `web_search` against fixture pages served by a real HTTP server on
//! loopback (the base URL is configurable; the server's endpoint is the one
//! explicit SSRF opt-in).

use super::http_support;

use std::sync::{Arc, Mutex};

use http_support::{Reply, serve};
use serde_json::{Value, json};
use vigil::tools::search::{SearchConfig, WebSearch, unwrap_link};
use vigil::tools::{FailureClass, ToolRegistry, ToolRun};

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("fixture")
}

/// Serve `page` and record the request targets.
async fn search(page: &str, query: &str) -> (ToolRun, Vec<String>) {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s = seen.clone();
    let body = page.to_string();
    let addr = serve(Arc::new(move |target: &str| {
        s.lock().unwrap().push(target.to_string());
        Reply::ok("text/html; charset=utf-8", body.clone())
    }))
    .await;
    let mut r = ToolRegistry::new();
    r.register(WebSearch::new(SearchConfig {
        base_url: format!("http://{addr}/html/"),
        allow_endpoints: vec![addr],
        ..Default::default()
    }));
    let run = r
        .execute("web_search", &json!({"query": query}).to_string())
        .await;
    let seen = seen.lock().unwrap().clone();
    (run, seen)
}

fn text(run: &ToolRun) -> String {
    assert!(run.ok(), "{}", run.model_text);
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    v["result"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn results_are_numbered_unwrapped_and_capped_at_8() {
    let (run, seen) = search(&fixture("ddg_results.html"), "rust tokio & tutorial").await;
    assert_eq!(seen, ["/html/?q=rust+tokio+%26+tutorial"]);
    let out = text(&run);
    assert!(out.starts_with(
        "1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n   Tokio is an event-driven, \
         non-blocking I/O platform for writing asynchronous applications.\n\n\
         2. Tutorial | Tokio - An asynchronous Rust runtime\n   https://tokio.rs/tokio/tutorial\n"
    ), "{out}");
    assert!(!out.contains("Sponsored"), "ads are skipped");
    assert!(out.contains("8. Tokio on crates.io"), "{out}");
    assert!(!out.contains("9. ") && !out.contains("ninth"), "{out}");
    assert!(
        out.contains("https://example.com/search?q=a b&x=1"),
        "{out}"
    );
    assert!(out.contains("Snippet with & entity <tag>."), "{out}");
    assert!(!out.contains("uddg"), "{out}");
    assert_eq!(
        run.timeline(),
        "searched \"rust tokio & tutorial\" (8 results)"
    );
}

#[tokio::test]
async fn a_changed_layout_falls_back_to_uddg_links() {
    let (run, _) = search(&fixture("ddg_changed_layout.html"), "tokio").await;
    let out = text(&run);
    assert_eq!(
        out,
        "1. Tokio - An asynchronous Rust runtime\n   https://tokio.rs/\n\n2. tokio - Rust\n   https://docs.rs/tokio/"
    );
}

#[tokio::test]
async fn nothing_parsed_gives_a_diagnostic_and_no_results_says_so() {
    let (run, _) = search(&fixture("ddg_unparseable.html"), "tokio").await;
    let out = text(&run);
    assert!(
        out.starts_with("No results could be parsed from the search page (HTTP 200"),
        "{out}"
    );
    assert!(out.contains("layout may have changed"), "{out}");
    let (run, _) = search(&fixture("ddg_no_results.html"), "zzqx").await;
    assert_eq!(text(&run), "No results found for \"zzqx\".");
}

#[tokio::test]
async fn the_search_endpoint_is_under_the_ssrf_policy() {
    let mut r = ToolRegistry::new();
    r.register(WebSearch::new(SearchConfig {
        base_url: "http://127.0.0.1:9/html/".into(),
        ..Default::default()
    }));
    let run = r.execute("web_search", r#"{"query":"x"}"#).await;
    assert_eq!(
        run.class,
        Some(FailureClass::PermissionDenied),
        "{}",
        run.model_text
    );
    let run = r.execute("web_search", r#"{"query":"  "}"#).await;
    assert_eq!(run.class, Some(FailureClass::InvalidArguments));
}

#[test]
fn links_are_unwrapped() {
    assert_eq!(
        unwrap_link("//duckduckgo.com/l/?uddg=https%3A%2F%2Ftokio.rs%2F%3Fa%3D1%26b%3D2&rut=x"),
        "https://tokio.rs/?a=1&b=2"
    );
    assert_eq!(
        unwrap_link("https://duckduckgo.com/l/?uddg=https%3A%2F%2Fa.example%2F"),
        "https://a.example/"
    );
    assert_eq!(
        unwrap_link("https://plain.example/x"),
        "https://plain.example/x"
    );
}

#[test]
fn a_search_asks_when_confirm_is_set_and_shows_the_whole_query() {
    use vigil::tools::Tool;
    let query = format!("{} tail-after-160", "x".repeat(200));
    let args = json!({ "query": query });
    let asked = WebSearch::new(SearchConfig {
        confirm: true,
        ..Default::default()
    });
    let gate = asked
        .gate(&args)
        .expect("the search waits for the operator");
    assert!(gate.action.contains("tail-after-160"), "{}", gate.action);
    assert!(
        WebSearch::new(SearchConfig::default())
            .gate(&args)
            .is_none()
    );
    // The product default asks.
    assert!(vigil::config::Config::default().tools.search_confirm);
}
