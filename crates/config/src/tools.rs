//! `[tools]`: which built-in tools are registered and how each is gated
//! and limited. Plain data (each tool's layer checks its own part); it
//! never reads a file or the environment.

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ToolsConfig {
    /// Register `run_shell`.
    pub shell_enabled: bool,
    /// Register `read_file` and `write_file`.
    pub files_enabled: bool,
    /// Register `time`.
    pub time_enabled: bool,
    /// Ask the operator before every `run_shell`.
    pub shell_confirm: bool,
    /// Run every `run_shell` command under the kernel sandbox, approved or
    /// not (a read-only agent); refused where the sandbox is unavailable.
    pub shell_always_sandboxed: bool,
    /// Ask the operator before every `write_file`.
    pub write_confirm: bool,
    /// Commands containing any of these (after normalising spaces and
    /// quotes) are refused without asking.
    pub shell_denylist: Vec<String>,
    /// Register `edit` (view / create / str_replace / insert / undo_edit).
    pub edit_enabled: bool,
    /// Ask the operator before every mutating `edit`.
    pub edit_confirm: bool,
    /// Roots the file tools may touch (empty: anywhere but the sensitive
    /// places such as /etc, /boot and ~/.ssh, which need an explicit root).
    pub files_allowed_paths: Vec<String>,
    /// Register `fetch_url`.
    pub fetch_enabled: bool,
    /// Ask the operator before a fetch (on by default: a URL can carry
    /// anything the model read to the host it names); hosts on
    /// `fetch_unasked_hosts` are fetched without asking.
    pub fetch_confirm: bool,
    /// Hosts `fetch_url` may reach without asking: `docs.rs` is that host
    /// exactly, `*.rust-lang.org` its subdomains. A redirect from an unasked
    /// fetch is followed only to another host on this list.
    pub fetch_unasked_hosts: Vec<String>,
    /// Allow fetching loopback and private addresses (off: SSRF defence).
    pub fetch_allow_private: bool,
    /// Only these domains (and their subdomains) may be fetched, when set.
    pub fetch_allow_domains: Vec<String>,
    /// These domains (and their subdomains) are never fetched.
    pub fetch_deny_domains: Vec<String>,
    /// Seconds a fetch may take.
    pub fetch_timeout_secs: u64,
    /// Largest response body read, in bytes.
    pub fetch_max_bytes: usize,
    /// Register `web_search`.
    pub search_enabled: bool,
    /// Ask the operator before every web search (the query leaves the
    /// machine).
    pub search_confirm: bool,
    /// The DuckDuckGo HTML endpoint (change it to use a mirror).
    pub search_base_url: String,
    /// Tool domains (`web`, `mcp:NAME`) not shown to the model until it asks
    /// for them with `request_tools`.
    pub hidden_domains: Vec<String>,
    /// Tool domains never shown, even when asked for.
    pub blocked_domains: Vec<String>,
    /// Variable names tool processes keep even though they look secret.
    pub env_passthrough: Vec<String>,
    /// More name patterns (`*` wildcards, any case) kept from tool processes.
    pub env_exclude: Vec<String>,
}

impl Default for ToolsConfig {
    fn default() -> Self {
        ToolsConfig {
            shell_enabled: true,
            files_enabled: true,
            time_enabled: true,
            shell_confirm: true,
            shell_always_sandboxed: false,
            write_confirm: true,
            shell_denylist: Vec::new(),
            edit_enabled: true,
            edit_confirm: true,
            files_allowed_paths: Vec::new(),
            fetch_enabled: true,
            fetch_confirm: true,
            fetch_unasked_hosts: Vec::new(),
            fetch_allow_private: false,
            fetch_allow_domains: Vec::new(),
            fetch_deny_domains: Vec::new(),
            fetch_timeout_secs: 30,
            fetch_max_bytes: 2 * 1024 * 1024,
            search_enabled: true,
            search_confirm: true,
            search_base_url: "https://html.duckduckgo.com/html/".into(),
            hidden_domains: Vec::new(),
            blocked_domains: Vec::new(),
            env_passthrough: Vec::new(),
            env_exclude: Vec::new(),
        }
    }
}
