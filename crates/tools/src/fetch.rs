//! `fetch_url`: one HTTP GET for the model, behind SSRF protection.
//!
//! Requests run from this machine with `reqwest`, never through a proxy and
//! never following redirects by themselves: every hop is re-checked by the
//! [`SsrfPolicy`], DNS answers are filtered by its resolver, and the peer
//! address is checked again. The body is read up to a byte limit and the model
//! sees the first 8000 chars (the rest spilled). This module must never send
//! credentials or cookies and never reach an address the policy refuses.
//!
//! A fetch carries whatever the model puts in the URL to the host it names,
//! so it asks the operator by default; it runs unasked only for a host the
//! operator listed in `[tools] fetch_unasked_hosts`, and such an unasked
//! fetch follows a redirect only to another listed host.

use std::time::Duration;
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use reqwest::Url;
use serde_json::{Value, json};

use super::ssrf::{Refusal, SsrfPolicy};
use super::truncate::{self, Keep};
use super::{FailureClass, Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};
use vigil_protocol::approval::GateInfo;

/// Settings for [`FetchUrl`] (`[tools] fetch_*`).
#[derive(Debug, Clone, PartialEq)]
pub struct FetchConfig {
    /// Allow private/loopback/link-local... addresses (internal networks).
    pub allow_private: bool,
    /// Exact `ip:port` endpoints exempt from the address checks.
    pub allow_endpoints: Vec<std::net::SocketAddr>,
    /// When non-empty, only these domains (and subdomains).
    pub allow_domains: Vec<String>,
    /// Never these domains (and subdomains).
    pub deny_domains: Vec<String>,
    /// Whole-request time limit (each hop).
    pub timeout: Duration,
    /// Most body bytes read; the rest is not downloaded.
    pub max_bytes: usize,
    /// Chars of the body the model sees.
    pub result_chars: usize,
    /// Redirect hops followed (each re-checked).
    pub max_redirects: usize,
    /// Ask the operator before a fetch (except to `unasked_hosts`).
    pub confirm: bool,
    /// Hosts fetched without asking: `docs.rs` is that host exactly,
    /// `*.rust-lang.org` its subdomains.
    pub unasked_hosts: Vec<String>,
}

impl Default for FetchConfig {
    fn default() -> Self {
        FetchConfig {
            allow_private: false,
            allow_endpoints: Vec::new(),
            allow_domains: Vec::new(),
            deny_domains: Vec::new(),
            timeout: Duration::from_secs(30),
            max_bytes: 2 * 1024 * 1024,
            result_chars: 8000,
            max_redirects: 5,
            confirm: true,
            unasked_hosts: Vec::new(),
        }
    }
}

impl FetchConfig {
    pub fn policy(&self) -> SsrfPolicy {
        SsrfPolicy {
            allow_private: self.allow_private,
            allow_endpoints: self.allow_endpoints.clone(),
            allow_domains: self.allow_domains.clone(),
            deny_domains: self.deny_domains.clone(),
            hosts: Vec::new(),
            own: Default::default(),
        }
    }

    /// Whether `url` may be fetched without asking: every fetch when the
    /// operator turned asking off, else a host on `unasked_hosts`.
    pub fn unasked(&self, url: &Url) -> bool {
        !self.confirm
            || url
                .host_str()
                .is_some_and(|h| host_listed(h, &self.unasked_hosts))
    }
}

/// Whether `host` is on `list` (`name` exactly, `*.name` for subdomains;
/// case and a trailing dot ignored).
pub fn host_listed(host: &str, list: &[String]) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    list.iter().any(|entry| {
        let e = entry.trim().trim_end_matches('.').to_ascii_lowercase();
        match e.strip_prefix("*.") {
            Some(parent) => h.ends_with(&format!(".{parent}")),
            None => h == e,
        }
    })
}

/// A fetched response, body possibly cut at the byte limit.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    pub final_url: String,
    pub status: u16,
    pub content_type: String,
    pub body: Vec<u8>,
    /// True when the body was longer than the byte limit.
    pub cut_at_limit: bool,
}

fn refused(msg: String) -> ToolError {
    ToolError::failed(FailureClass::PermissionDenied, format!("refused: {msg}"))
}

/// GET `url` under `policy`, following up to `max_redirects` re-checked hops.
/// Shared by `fetch_url` and `web_search`.
pub async fn get(
    url: &str,
    policy: &SsrfPolicy,
    timeout: Duration,
    max_bytes: usize,
    max_redirects: usize,
) -> Result<Fetched, ToolError> {
    get_checked(url, policy, timeout, max_bytes, max_redirects, &|_| Ok(())).await
}

/// [`get`], with `redirect_ok` asked about every redirect target too.
pub async fn get_checked(
    url: &str,
    policy: &SsrfPolicy,
    timeout: Duration,
    max_bytes: usize,
    max_redirects: usize,
    redirect_ok: &(dyn Fn(&Url) -> Result<(), String> + Sync),
) -> Result<Fetched, ToolError> {
    let mut current = Url::parse(url.trim())
        .map_err(|e| ToolError::InvalidArguments(format!("`{url}` is not a valid URL: {e}")))?;
    let client = crate::http::client_builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .dns_resolver(policy.resolver())
        .user_agent(concat!("vigil/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ToolError::failed(FailureClass::ExecutionFailed, e.to_string()))?;
    for hop in 0..=max_redirects {
        policy.check_url(&current).map_err(refused)?;
        let mut resp = client.get(current.clone()).send().await.map_err(|e| {
            let class = if e.is_timeout() {
                FailureClass::Timeout
            } else {
                FailureClass::ExecutionFailed
            };
            // The resolver's refusal sits in the source chain; find it by type.
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                if let Some(r) = s.downcast_ref::<Refusal>() {
                    return ToolError::failed(FailureClass::PermissionDenied, r.to_string());
                }
                msg = format!("{msg}: {s}");
                src = s.source();
            }
            ToolError::failed(class, format!("GET {current} failed: {msg}"))
        })?;
        if let Some(peer) = resp.remote_addr() {
            policy.check_addr(peer).map_err(refused)?;
        }
        let status = resp.status();
        if status.is_redirection()
            && let Some(loc) = resp.headers().get(reqwest::header::LOCATION)
        {
            if hop == max_redirects {
                return Err(ToolError::failed(
                    FailureClass::ExecutionFailed,
                    format!("too many redirects (more than {max_redirects})"),
                ));
            }
            let loc = loc.to_str().unwrap_or_default();
            current = current.join(loc).map_err(|e| {
                ToolError::failed(
                    FailureClass::ExecutionFailed,
                    format!("bad redirect target {loc:?}: {e}"),
                )
            })?;
            redirect_ok(&current).map_err(refused)?;
            continue;
        }
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let mut body = Vec::new();
        let mut cut_at_limit = false;
        loop {
            let chunk = resp.chunk().await.map_err(|e| {
                let class = if e.is_timeout() {
                    FailureClass::Timeout
                } else {
                    FailureClass::ExecutionFailed
                };
                ToolError::failed(class, format!("reading the body of {current} failed: {e}"))
            })?;
            let Some(chunk) = chunk else { break };
            let room = max_bytes.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut_at_limit = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(Fetched {
            final_url: current.to_string(),
            status: status.as_u16(),
            content_type,
            body,
            cut_at_limit,
        });
    }
    Err(ToolError::failed(
        FailureClass::ExecutionFailed,
        format!("too many redirects (more than {max_redirects})"),
    ))
}

/// The `fetch_url` tool.
pub struct FetchUrl {
    config: FetchConfig,
    policy: SsrfPolicy,
}

impl FetchUrl {
    pub fn new(config: FetchConfig) -> Self {
        let policy = config.policy();
        FetchUrl { config, policy }
    }

    /// Replace the policy (e.g. to add static host overrides).
    pub fn with_policy(mut self, policy: SsrfPolicy) -> Self {
        self.policy = policy;
        self
    }
}

const DESCRIPTION: &str = "Fetch a web page or HTTP API with a GET request from the console's \
machine and return the status, content type and the first 8000 characters of the body (the full \
body is saved to a file named in the result when cut). Only public http/https addresses are \
allowed: localhost, private, link-local, this machine's own and other internal addresses are \
refused, on every redirect too. The operator is asked before a fetch unless the host is one they \
allowed. No authentication, cookies or custom headers.

When to use: reading documentation, release notes, a public API's JSON, or a page whose URL you \
already know (for example from web_search).

When NOT to use: finding pages (use web_search first); reaching services on the target machine \
or its private network (use run_shell with curl on the target, which the operator can approve); \
downloading large files.

Disambiguation: fetch_url runs on the console's machine, not on the execution target; web_search \
returns a list of results, fetch_url returns one page's content.

Example: {\"url\": \"https://www.rust-lang.org/\"}";

#[async_trait]
impl Tool for FetchUrl {
    fn name(&self) -> &str {
        "fetch_url"
    }

    fn domain(&self) -> Option<&str> {
        Some("web")
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "fetch_url",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "url": {"type": "string",
                            "description": "Absolute http:// or https:// URL to GET."}
                },
                "required": ["url"],
                "additionalProperties": false,
                "examples": [{"url": "https://www.rust-lang.org/"}]
            }),
        )
    }

    /// Asked unless the URL's host is one the operator lets through
    /// unasked (a URL that does not parse is not asked for: it fails
    /// before anything is sent).
    fn gate(&self, args: &Value) -> Option<GateInfo> {
        let url = args["url"].as_str().unwrap_or_default().trim();
        if Url::parse(url).ok().is_none_or(|u| self.config.unasked(&u)) {
            return None;
        }
        Some(GateInfo {
            action: format!("GET {}", args["url"].as_str().unwrap_or_default()),
            model_risk: None,
            mutation: Some(false),
            privesc: None,
            why: None,
            editable_field: Some("url".into()),
        })
    }

    fn summary(&self, args: &Value) -> Option<String> {
        Some(format!("GET {}", args["url"].as_str()?))
    }

    async fn execute(&self, call: &ToolCall, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let v: &Value = super::object_args(call)?;
        let url = v["url"]
            .as_str()
            .filter(|u| !u.trim().is_empty())
            .ok_or_else(|| ToolError::InvalidArguments("`url` is required".into()))?;
        // Nobody saw this URL: it may only lead to another unasked host.
        let unasked = !ctx.asked;
        let redirect_ok = |to: &Url| {
            if !unasked || self.config.unasked(to) {
                return Ok(());
            }
            Err(format!(
                "{url} redirects to {to}, whose host is not one the operator lets through \
                 unasked (fetch_unasked_hosts); fetch {to} itself to ask the operator"
            ))
        };
        let got = get_checked(
            url,
            &self.policy,
            self.config.timeout,
            self.config.max_bytes,
            self.config.max_redirects,
            &redirect_ok,
        )
        .await?;
        let text = String::from_utf8_lossy(&got.body);
        let (cut, spill) = truncate::cut_with_spill(
            &text,
            self.config.result_chars,
            Keep::Head,
            ctx.spill_dir.as_deref(),
            "fetch_url",
        );
        let mut result = json!({
            "url": got.final_url,
            "status": got.status,
            "content_type": got.content_type,
            "body": cut.text,
        });
        if got.cut_at_limit {
            result["note"] = json!(format!(
                "the body is longer than {} bytes; only that much was downloaded",
                self.config.max_bytes
            ));
        }
        Ok(ToolOutput {
            truncated: cut.truncated() || got.cut_at_limit,
            result,
            spill: spill.into_iter().collect(),
            timeline: Some(format!(
                "GET {} → {} {} ({} bytes)",
                got.final_url,
                got.status,
                got.content_type,
                got.body.len()
            )),
            ..Default::default()
        })
    }
}
