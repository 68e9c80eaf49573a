//! `web_search`: search the web through DuckDuckGo's HTML endpoint and return
//! at most 8 numbered results (title, URL, snippet).
//!
//! The page is fetched with [`fetch::get`] (so the SSRF policy applies to the
//! configurable base URL and every redirect) and parsed with `scraper`
//! selectors, with a fallback extractor for changed layouts and a diagnostic
//! when nothing parses. Result links are unwrapped from DuckDuckGo's
//! `/l/?uddg=` redirect form. This module must never follow result links.

use std::time::Duration;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use reqwest::Url;
use scraper::{ElementRef, Html, Selector};
use serde_json::{Value, json};

use super::fetch;
use super::ssrf::SsrfPolicy;
use super::{FailureClass, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_protocol::approval::GateInfo;

/// Settings for [`WebSearch`] (`[tools] search_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchConfig {
    /// The HTML endpoint; the query goes in `q`.
    pub base_url: String,
    /// Results returned (at most).
    pub max_results: usize,
    pub timeout: Duration,
    /// Most bytes of the results page read.
    pub max_bytes: usize,
    /// Exact `ip:port` endpoints exempt from the SSRF address checks (a
    /// self-hosted mirror, or a test server).
    pub allow_endpoints: Vec<std::net::SocketAddr>,
    /// Ask the operator before each search (`[tools] search_confirm`, on
    /// by default there): a query carries whatever the model puts in it to
    /// a third party. Off in this struct's default (tests and embedders).
    pub confirm: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            base_url: "https://html.duckduckgo.com/html/".into(),
            max_results: 8,
            timeout: Duration::from_secs(20),
            max_bytes: 2 * 1024 * 1024,
            allow_endpoints: Vec::new(),
            confirm: false,
        }
    }
}

/// One search result.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    pub title: String,
    pub url: String,
    pub snippet: String,
}

/// The real target of a DuckDuckGo result link (`//duckduckgo.com/l/?uddg=`),
/// or the link itself when it is not wrapped.
pub fn unwrap_link(href: &str) -> String {
    let base = Url::parse("https://duckduckgo.com/").ok();
    let parsed = base.and_then(|b| b.join(href.trim()).ok());
    if let Some(u) = &parsed
        && let Some((_, target)) = u.query_pairs().find(|(k, _)| k == "uddg")
    {
        return target.into_owned();
    }
    match parsed {
        Some(u) if href.starts_with("//") || href.starts_with('/') => u.to_string(),
        _ => href.trim().to_string(),
    }
}

fn text_of(el: ElementRef) -> String {
    el.text()
        .collect::<Vec<_>>()
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn selector(s: &str) -> Option<Selector> {
    Selector::parse(s).ok()
}

/// Parse a results page: the `.result` layout first, then any `uddg=` links.
pub fn parse_results(html: &str, max: usize) -> Vec<SearchResult> {
    let doc = Html::parse_document(html);
    let mut out: Vec<SearchResult> = Vec::new();
    let push = |out: &mut Vec<SearchResult>, r: SearchResult| {
        if out.len() < max && !r.url.is_empty() && !out.iter().any(|o| o.url == r.url) {
            out.push(r);
        }
    };
    if let (Some(result), Some(link), Some(snippet)) = (
        selector(".result"),
        selector(".result__a"),
        selector(".result__snippet"),
    ) {
        for el in doc.select(&result) {
            let classes = el.value().attr("class").unwrap_or_default();
            if classes.contains("result--ad") {
                continue;
            }
            let Some(a) = el.select(&link).next() else {
                continue;
            };
            let href = a.value().attr("href").unwrap_or_default();
            push(
                &mut out,
                SearchResult {
                    title: text_of(a),
                    url: unwrap_link(href),
                    snippet: el.select(&snippet).next().map(text_of).unwrap_or_default(),
                },
            );
        }
    }
    if out.is_empty()
        && let Some(links) = selector(r#"a[href*="uddg="]"#)
    {
        for a in doc.select(&links) {
            let title = text_of(a);
            if title.is_empty() {
                continue;
            }
            let href = a.value().attr("href").unwrap_or_default();
            push(
                &mut out,
                SearchResult {
                    title,
                    url: unwrap_link(href),
                    snippet: String::new(),
                },
            );
        }
    }
    out
}

/// The seed's numbered format.
pub fn format_results(results: &[SearchResult]) -> String {
    results
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut s = format!("{}. {}\n   {}", i + 1, r.title, r.url);
            if !r.snippet.is_empty() {
                s.push_str(&format!("\n   {}", r.snippet));
            }
            s
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The `web_search` tool.
pub struct WebSearch {
    config: SearchConfig,
}

impl WebSearch {
    pub fn new(config: SearchConfig) -> Self {
        WebSearch { config }
    }
}

const DESCRIPTION: &str = "Search the web (DuckDuckGo, no API key) and return up to 8 results, \
each with a title, URL and snippet, numbered.

When to use: finding documentation, error messages, release notes or pages whose URL you do not \
know yet.

When NOT to use: reading a page whose URL you already have (use fetch_url); anything on the \
target machine (use run_shell); questions answerable from files you can read.

Disambiguation: web_search returns a list of links with short snippets; follow up with fetch_url \
on one result to read it.

Example: {\"query\": \"nginx 502 bad gateway upstream prematurely closed\"}";

#[async_trait]
impl Tool for WebSearch {
    fn name(&self) -> &str {
        "web_search"
    }

    fn domain(&self) -> Option<&str> {
        Some("web")
    }

    /// Gated when `confirm` is set: the card shows the whole query.
    fn gate(&self, args: &Value) -> Option<GateInfo> {
        if !self.config.confirm {
            return None;
        }
        Some(GateInfo {
            action: format!(
                "search the web for {:?}",
                args["query"].as_str().unwrap_or_default()
            ),
            model_risk: None,
            mutation: Some(false),
            privesc: None,
            why: None,
            editable_field: Some("query".into()),
        })
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "web_search",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to search for."}
                },
                "required": ["query"],
                "additionalProperties": false,
                "examples": [{"query": "rust tokio tutorial"}]
            }),
        )
    }

    fn summary(&self, args: &Value) -> Option<String> {
        Some(format!("search {}", args["query"].as_str()?))
    }

    async fn execute(&self, call: &ToolCall, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let v: &Value = super::object_args(call)?;
        let query = v["query"]
            .as_str()
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| ToolError::InvalidArguments("`query` is required".into()))?;
        let mut url = Url::parse(&self.config.base_url).map_err(|e| {
            ToolError::failed(
                FailureClass::ExecutionFailed,
                format!(
                    "the search base URL {} is invalid: {e}",
                    self.config.base_url
                ),
            )
        })?;
        url.query_pairs_mut().append_pair("q", query);
        let policy = SsrfPolicy {
            allow_endpoints: self.config.allow_endpoints.clone(),
            ..Default::default()
        };
        let page = fetch::get(
            url.as_str(),
            &policy,
            self.config.timeout,
            self.config.max_bytes,
            5,
        )
        .await?;
        if !(200..300).contains(&page.status) {
            return Err(ToolError::failed(
                FailureClass::ExecutionFailed,
                format!("the search page answered HTTP {}", page.status),
            ));
        }
        let html = String::from_utf8_lossy(&page.body);
        let results = parse_results(&html, self.config.max_results);
        if results.is_empty() {
            let no_results = selector(".no-results")
                .is_some_and(|s| Html::parse_document(&html).select(&s).next().is_some());
            let text = if no_results {
                format!("No results found for \"{query}\".")
            } else {
                format!(
                    "No results could be parsed from the search page (HTTP {}, {} bytes, \
                     content type {:?}). The page layout may have changed or the search was \
                     blocked; try again later or rephrase the query.",
                    page.status,
                    page.body.len(),
                    page.content_type
                )
            };
            return Ok(ToolOutput::text(text.clone()).with_timeline(text));
        }
        Ok(ToolOutput::text(format_results(&results))
            .with_timeline(format!("searched \"{query}\" ({} results)", results.len())))
    }
}
