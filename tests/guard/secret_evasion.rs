//! Secrets must not reach the model without a card, and `fetch_url` must not
//! carry anything out unasked ([`table`]):
//!
//! - the broker (`vigil policy check`, the broker the agent uses, with the
//!   usual prefix rules as policy `allow` rules): every secret row is rated
//!   high, names its secret entry, and is asked;
//! - for real: every row through the `vigil exec` binary against the
//!   scripted model with `approval = "auto_low"`, as plain processes and in a
//!   managed tmux pane: exit 3 (asked, nobody to answer), and no secret byte
//!   in anything the model was sent;
//! - `read_file` on a secret place asks in `ask` mode and under `auto_low`;
//!   `read_file` and `edit`'s view of a store nobody listed, outside the
//!   readable world, ask in every mode but `approve_all`;
//! - `fetch_url` is asked by default, runs unasked only for a host the
//!   operator listed, and never reaches this machine's own non-loopback
//!   address (a real server bound on it gets nothing).
//!
//! Controls show the harness sees a leak: with `approve_all` the secret does
//! reach the model; plain reads run.

use super::common;
#[path = "../evasion/secrets_table.rs"]
mod table;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use table::{MARKER, PLAIN_ROWS, SECRET_READS, SECRET_ROWS, USUAL_RULES};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use vigil::agent::approval::NO_SANDBOX;
use vigil_scripted::{Scenario, ScriptedServer};

/// A home full of secrets and a project beside it.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    proj: PathBuf,
    cfg: PathBuf,
    data: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

impl World {
    /// `approval` and `extra` (more TOML) in the config vigil starts with.
    fn new(approval: &str, tmux: bool, extra: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let base = vigil::tools::paths::resolve_local(dir.path()).unwrap();
        let (home, proj) = (base.join("home"), base.join("proj"));
        for f in [
            ".ssh/id_ed25519",
            ".config/vigil/config.toml",
            ".config/gh/hosts.yml",
            ".config/gcloud/credentials.db",
            ".netrc",
            ".git-credentials",
            ".docker/config.json",
            ".kube/config",
        ] {
            write(&home.join(f), &format!("token password {MARKER}-{f}\n"));
        }
        write(&proj.join(".env"), &format!("TOKEN={MARKER}-env\n"));
        write(
            &proj.join(".env.local"),
            &format!("TOKEN={MARKER}-env-local\n"),
        );
        for f in [".envrc", ".env-production", ".env_local"] {
            write(&proj.join(f), &format!("TOKEN={MARKER}{f}\n"));
        }
        write(&proj.join("notes.txt"), "plain notes\n");
        std::fs::create_dir(proj.join("sub")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), proj.join("keys")).unwrap();
        std::os::unix::fs::symlink(home.join(".netrc"), proj.join("notes-link")).unwrap();
        let cfg = base.join("etc-vigil/vigil.toml");
        write(
            &cfg,
            &format!("# {MARKER}-config\n{}", config(approval, tmux, extra)),
        );
        World {
            _dir: dir,
            home,
            proj,
            cfg,
            data: base.join("data"),
        }
    }

    fn fill(&self, text: &str) -> String {
        text.replace("{HOME}", &self.home.display().to_string())
            .replace("{PROJ}", &self.proj.display().to_string())
            .replace("{CFG}", &self.cfg.display().to_string())
    }

    /// The `vigil` binary with this world's home, directory and config.
    fn vigil(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(common::vigil_bin());
        cmd.current_dir(&self.proj)
            .arg("--config")
            .arg(&self.cfg)
            .env("HOME", &self.home)
            .env("VIGIL_DATA_DIR", &self.data)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_DATA_HOME")
            .env_remove("VIGIL_API_KEY")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// `vigil exec "run case-I."` against `server`.
    async fn exec(&self, server: &ScriptedServer, i: usize, socket: &str) -> Output {
        let mut cmd = self.vigil();
        cmd.args(["exec", &format!("run case-{i}.")])
            .env("VIGIL_BASE_URL", server.base_url())
            .env("VIGIL_MODEL", "secrets")
            .env("VIGIL_TMUX_SOCKET", socket);
        let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output());
        out.await.expect("in time").expect("vigil exec ran")
    }
}

/// The config: `approval`, the usual rules as policy `allow`s, `extra`.
fn config(approval: &str, tmux: bool, extra: &str) -> String {
    let mode = if tmux { "on" } else { "off" };
    let mut s = format!(
        "[agent]\napproval = \"{approval}\"\n[model]\nretry_attempts = 1\n[tmux]\nmode = \"{mode}\"\n"
    );
    for rule in USUAL_RULES
        .iter()
        .chain(SECRET_ROWS.iter().filter_map(|r| r.rule.as_ref()))
    {
        let words: Vec<String> = rule.split(' ').map(|w| format!("{w:?}")).collect();
        s.push_str(&format!(
            "[[approval.rules]]\ncommand = [{}]\ndecision = \"allow\"\n",
            words.join(", ")
        ));
    }
    s.push_str(extra);
    s
}

/// One tool call: a tool name and its arguments as TOML lines.
type Call = (&'static str, String);

fn shell_call(command: &str) -> Call {
    let args = format!(
        "command = {command:?}\nrisk = \"low\"\nmutation = false\nprivesc = false\nwhy = \"harmless\"\n"
    );
    ("run_shell", args)
}

/// A scenario in which the prompt `case-I.` makes call I.
async fn scripted(calls: &[Call]) -> ScriptedServer {
    let mut s = String::from("model = \"secrets\"\nchunk_delay_ms = 0\n");
    for (i, (tool, args)) in calls.iter().enumerate() {
        s.push_str(&format!(
            "[[rule]]\nwhen = {{ role = \"user\", contains = \"case-{i}.\" }}\ntimes = 0\n\
             [[rule.tool_calls]]\nname = \"{tool}\"\n[rule.tool_calls.arguments]\n{args}"
        ));
    }
    s.push_str("[[rule]]\nwhen = { role = \"tool\" }\ntimes = 0\ntext = \"done\"\n");
    ScriptedServer::start(Scenario::from_toml_str(&s).unwrap())
        .await
        .unwrap()
}

/// Everything the model was sent, as one text.
fn sent(server: &ScriptedServer) -> String {
    serde_json::to_string(&server.requests()).unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Why a run is not a clean "asked, nothing ran", if it is not.
fn not_asked(out: &Output) -> Option<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let wrong = out.status.code() != Some(3)
        || stdout.contains(NO_SANDBOX)
        || stdout.contains(MARKER)
        || !stdout.contains("approval needed");
    wrong.then(|| text(out))
}

/// Why a `by_effect` run let a secret out or ran unasked, if it did:
/// every secret row must be asked (by its text or by what the view saw).
fn not_held_by_effect(out: &Output) -> Option<String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let wrong = out.status.code() != Some(3)
        || stdout.contains(MARKER)
        || !stdout.contains("approval needed");
    wrong.then(|| text(out))
}

/// Run every call for real in `world`; the failures.
async fn run_all(world: &World, calls: &[Call], labels: &[String]) -> Vec<String> {
    run_all_judged(world, calls, labels, not_asked).await
}

async fn run_all_judged(
    world: &World,
    calls: &[Call],
    labels: &[String],
    judge: fn(&Output) -> Option<String>,
) -> Vec<String> {
    let server = scripted(calls).await;
    let tmux_server = common::Server {
        socket: common::socket(),
    };
    let mut failures = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        let out = world.exec(&server, i, &tmux_server.socket).await;
        if let Some(why) = judge(&out) {
            failures.push(format!("{label}: {why}"));
        }
    }
    if sent(&server).contains(MARKER) {
        failures.push(format!("a secret reached the model: {}", sent(&server)));
    }
    failures
}

fn secret_row_calls(world: &World) -> (Vec<Call>, Vec<String>) {
    SECRET_ROWS
        .iter()
        .map(|r| {
            let command = world.fill(r.command);
            (shell_call(&command), format!("[{}] {command}", r.class))
        })
        .unzip()
}

#[test]
fn the_table_covers_every_member_of_the_class() {
    for class in [
        "absolute path",
        "vigil's own config",
        "tilde",
        "relative path",
        "dot-dot",
        "symlink",
        "cd",
        "glob",
        "variable",
        "redirection",
        "option value",
        "recursive read",
        "substitution",
        "brace",
        "path inside a word",
        "command's own directory",
        "prefix-rule smuggling",
    ] {
        assert!(SECRET_ROWS.iter().any(|r| r.class == class), "{class}");
    }
}

/// The broker the agent uses (`vigil policy check`), with the usual rules
/// as `allow` rules: every row rated high, its entry named, asked.
#[tokio::test(flavor = "multi_thread")]
async fn every_secret_row_is_rated_high_and_asked_by_the_broker() {
    let world = World::new("auto_low", false, "");
    let mut failures = Vec::new();
    for row in SECRET_ROWS {
        let command = world.fill(row.command);
        let out = world
            .vigil()
            .args(["policy", "check", "--", &command])
            .output()
            .await
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = |key: &str| {
            let found = report.lines().find(|l| l.starts_with(key));
            found.unwrap_or_default().to_string()
        };
        let (estimate, decision) = (line("estimate:"), line("decision:"));
        let ok = estimate.starts_with("estimate:  high")
            && estimate.contains("secret")
            && decision.starts_with("decision:  ask");
        if !ok {
            failures.push(format!("[{}] {command}:\n{report}", row.class));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Plain reads in the same place stay low.
    for (command, _) in PLAIN_ROWS {
        let mut check = world.vigil();
        let out = check
            .args(["policy", "check", "--", command])
            .output()
            .await;
        let report = String::from_utf8_lossy(&out.unwrap().stdout).into_owned();
        assert!(report.contains("estimate:  low"), "{report}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_secret_row_is_asked_for_real_as_plain_processes() {
    let world = World::new("auto_low", false, "");
    let (calls, labels) = secret_row_calls(&world);
    let failures = run_all(&world, &calls, &labels).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn every_secret_row_is_asked_for_real_in_a_managed_tmux_pane() {
    let world = World::new("auto_low", true, "");
    let (calls, labels) = secret_row_calls(&world);
    let failures = run_all(&world, &calls, &labels).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Under `by_effect` every secret row is asked too, as plain processes and
/// in a managed pane: none runs in the view with its result sent on.
#[tokio::test(flavor = "multi_thread")]
async fn by_effect_asks_for_every_secret_row() {
    for tmux in [false, true] {
        let world = World::new("by_effect", tmux, "");
        let (calls, labels) = secret_row_calls(&world);
        let failures = run_all_judged(&world, &calls, &labels, not_held_by_effect).await;
        assert!(
            failures.is_empty(),
            "tmux {tmux}: {}",
            failures.join("\n\n")
        );
    }
}

/// A store nobody listed (a registry login, a sync tool's config, a token
/// file outside the tree) is no secret place, but outside the readable
/// world: `read_file` and `edit`'s view ask for it in `ask`, `auto_low` and
/// `by_effect`, and nothing of it reaches the model (found by an attacker:
/// they were read unasked in every mode).
#[tokio::test(flavor = "multi_thread")]
async fn reads_outside_the_readable_world_ask_in_every_mode() {
    for approval in ["ask", "auto_low", "by_effect"] {
        let world = World::new(approval, false, "");
        let unlisted = [
            "{HOME}/.config/containers/auth.json",
            "{HOME}/.config/rclone/rclone.conf",
            "{PROJ}/../outside/token.txt",
        ];
        let mut calls = Vec::new();
        let mut labels = Vec::new();
        for path in unlisted {
            let path = world.fill(path);
            write(
                Path::new(&path),
                &format!("{{\"auth\": \"{MARKER}-unlisted\"}}\n"),
            );
            calls.extend(reads_of(&path));
            labels.extend([format!("[read_file] {path}"), format!("[edit view] {path}")]);
        }
        held(approval, run_all(&world, &calls, &labels).await);
    }
}

/// The two file tools that show a file's text: `read_file` and `edit`'s view.
fn reads_of(path: &str) -> [Call; 2] {
    let path = format!("path = {path:?}\n");
    [
        ("read_file", path.clone()),
        ("edit", format!("command = \"view\"\n{path}")),
    ]
}

/// Fail with every row that got through, under `what`.
fn held(what: &str, failures: Vec<String>) {
    assert!(failures.is_empty(), "{what}:\n{}", failures.join("\n\n"));
}

/// A secret inside the readable world (a file of the tree that is no
/// secret place): a run nobody asked for (auto_low, a `cat` rule) has its
/// output withheld, also the partial output of one that timed out;
/// `read_file` and `edit`'s view ask; a capture of the pane it ran in is
/// refused (found by attackers: each handed a token in a remote's URL or a
/// password to the model).
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_in_the_tree_reaches_the_model_from_no_unasked_call() {
    let cat_rule = "[[approval.rules]]\ncommand = [\"cat\"]\ndecision = \"allow\"\n";
    for (approval, extra, tmux) in [
        ("auto_low", "", false),
        ("by_effect", cat_rule, false),
        ("auto_low", "", true),
    ] {
        let world = World::new(approval, tmux, extra);
        let ini = world.proj.join("settings.ini");
        write(
            &ini,
            &format!("[db]\nurl = https://bot:{MARKER}-pw-1234@db.example.com/x\n"),
        );
        let slow = "command = \"cat settings.ini; sleep 10\"\nrisk = \"low\"\nmutation = false\n\
                    privesc = false\nwhy = \"harmless\"\nwait = \"2s\"\n";
        let mut calls = vec![shell_call("cat settings.ini")];
        calls.extend(reads_of(&ini.display().to_string()));
        calls.push(("run_shell", slow.to_string()));
        if tmux {
            calls.push(("capture-pane", "start = \"-\"\n".to_string()));
        }
        let labels: Vec<String> = calls.iter().map(|(t, a)| format!("{t} {a}")).collect();
        let failures = run_all_judged(&world, &calls, &labels, |_| None).await;
        held(&format!("{approval} (tmux {tmux})"), failures);
    }
}

/// `read_file` on a secret place asks, in `ask` mode and under `auto_low`.
#[tokio::test(flavor = "multi_thread")]
async fn read_file_on_a_secret_place_asks_in_every_mode() {
    for approval in ["ask", "auto_low"] {
        let world = World::new(approval, false, "");
        let (calls, labels): (Vec<Call>, Vec<String>) = SECRET_READS
            .iter()
            .map(|(class, path)| {
                let path = world.fill(path);
                (
                    ("read_file", format!("path = {path:?}\n")),
                    format!("[{class}] {path}"),
                )
            })
            .unzip();
        let failures = run_all(&world, &calls, &labels).await;
        assert!(
            failures.is_empty(),
            "{approval}:\n{}",
            failures.join("\n\n")
        );
    }
}

/// The harness sees a leak: approved by the operator's blanket choice the
/// secret reaches the model; plain reads run unasked.
#[tokio::test(flavor = "multi_thread")]
async fn the_harness_sees_what_gets_through() {
    let world = World::new("approve_all", false, "");
    let key = world.fill("cat {HOME}/.ssh/id_ed25519");
    let read = ("read_file", world.fill("path = \"{PROJ}/.env\"\n"));
    let server = scripted(&[shell_call(&key), read]).await;
    for i in 0..2 {
        let out = world.exec(&server, i, "unused").await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    let got = sent(&server);
    assert!(got.contains(&format!("{MARKER}-.ssh/id_ed25519")), "{got}");
    assert!(got.contains(&format!("{MARKER}-env")), "{got}");

    for approval in ["ask", "auto_low"] {
        let world = World::new(approval, false, "");
        let (command, shows) = PLAIN_ROWS[0];
        let calls = [
            ("read_file", world.fill("path = \"{PROJ}/notes.txt\"\n")),
            shell_call(command),
        ];
        let server = scripted(&calls).await;
        let read = world.exec(&server, 0, "unused").await;
        assert_eq!(read.status.code(), Some(0), "{approval}: {}", text(&read));
        if approval == "auto_low" {
            let ran = world.exec(&server, 1, "unused").await;
            assert_eq!(ran.status.code(), Some(0), "{}", text(&ran));
        }
        assert!(sent(&server).contains(shows), "{}", sent(&server));
    }
}

/// A server on `ip` counting its requests (its body holds the marker).
async fn serve_on(ip: IpAddr) -> Option<(SocketAddr, Arc<AtomicUsize>)> {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.ok()?;
    let addr = listener.local_addr().ok()?;
    let hits = Arc::new(AtomicUsize::new(0));
    let seen = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            seen.fetch_add(1, Ordering::SeqCst);
            let mut head = Vec::new();
            let mut chunk = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match sock.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&chunk[..n]),
                }
            }
            let body = format!("fetched-{MARKER}");
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(reply.as_bytes()).await;
            let _ = sock.shutdown().await;
        }
    });
    Some((addr, hits))
}

fn fetch_call(url: &str) -> Call {
    ("fetch_url", format!("url = {url:?}\n"))
}

/// Asked by default (even for an address private fetches may reach), run
/// unasked only for a listed host.
#[tokio::test(flavor = "multi_thread")]
async fn fetch_url_asks_unless_the_host_is_listed() {
    let (addr, hits) = serve_on(IpAddr::from([127, 0, 0, 1])).await.unwrap();
    let url = format!("http://{addr}/?d=c2VjcmV0");
    let asked = World::new("auto_low", false, "[tools]\nfetch_allow_private = true\n");
    let server_a = scripted(&[fetch_call(&url)]).await;
    let out = asked.exec(&server_a, 0, "unused").await;
    assert!(not_asked(&out).is_none(), "{}", text(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the host was reached");

    let listed = World::new(
        "auto_low",
        false,
        "[tools]\nfetch_allow_private = true\nfetch_unasked_hosts = [\"127.0.0.1\"]\n",
    );
    let server_b = scripted(&[fetch_call(&url)]).await;
    let out = listed.exec(&server_b, 0, "unused").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let got = sent(&server_b);
    assert!(got.contains(&format!("fetched-{MARKER}")), "{got}");
}

/// This machine's own non-loopback address: refused even listed and with
/// private addresses allowed; the server bound on it gets nothing.
#[tokio::test(flavor = "multi_thread")]
async fn fetch_url_never_reaches_this_machines_own_address() {
    let own = vigil::tools::own_addrs::interface_addresses()
        .into_iter()
        .find(|ip| ip.is_ipv4() && !ip.is_loopback());
    let Some((addr, hits)) = (match own {
        Some(ip) => serve_on(ip).await,
        None => None,
    }) else {
        eprintln!("no non-loopback IPv4 interface address to bind: skipped");
        return;
    };
    let extra = format!(
        "[tools]\nfetch_allow_private = true\nfetch_unasked_hosts = [\"{}\"]\n",
        addr.ip()
    );
    let world = World::new("auto_low", false, &extra);
    let server = scripted(&[fetch_call(&format!("http://{addr}/?d=x"))]).await;
    let out = world.exec(&server, 0, "unused").await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let got = sent(&server);
    assert!(got.contains("an address of this machine"), "{got}");
    assert!(!got.contains(MARKER), "{got}");
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the server was reached");
}
