//! Big outputs with real processes and the real managed tmux pane: the
//! spill file holds exactly the command's bytes (compared with `cmp`), the
//! model sees the same head+tail view and trailer it saw when every byte
//! was held in memory, the session's `events.jsonl` holds no bulk output,
//! and bad input (a binary flood, a full spill folder) ends in a clear
//! result while the agent carries on.
//!
//! The 1 GB cases run with the rest (about 20 s for both in a debug build).
//! The tests of this file run one at a time: they measure this process's
//! peak RSS, which a neighbour holding a gigabyte would spoil.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use vigil::exec::ExecutionContext;
use vigil::tools::output_view::text_of;
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::truncate::{self, Keep};
use vigil::tools::{ToolContext, ToolRegistry, ToolRun};

const LIMIT: usize = 4000;

/// Held by every test of this file for its whole run.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// One test on this machine's plain processes and one in the managed pane.
macro_rules! on_both_targets {
    ($plain:ident, $managed:ident, $body:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $plain() {
            let _one = ONE_AT_A_TIME.lock().await;
            $body(ExecutionContext::local()).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $managed() {
            let _one = ONE_AT_A_TIME.lock().await;
            let (backend, _server) = common::start("bash").await;
            $body(ExecutionContext::from_arc(backend)).await;
        }
    };
}

async fn flood_3m(exec: ExecutionContext) {
    flood_is_exact(exec, 3_000_000).await;
}

on_both_targets!(
    a_plain_flood_is_spilled_exactly_with_the_old_view,
    a_managed_pane_flood_is_spilled_exactly_with_the_old_view,
    flood_3m
);
on_both_targets!(
    a_binary_flood_is_raw_in_the_spill_plain,
    a_binary_flood_is_raw_in_the_spill_managed_pane,
    binary_flood
);
on_both_targets!(
    a_full_spill_folder_is_a_clear_error_plain,
    a_full_spill_folder_is_a_clear_error_managed_pane,
    full_disk
);

async fn run_shell(exec: ExecutionContext, command: &str, spill: &Path) -> ToolRun {
    let mut r = ToolRegistry::new();
    r.register(RunShell::new(
        exec,
        ShellConfig {
            confirm: false,
            ..Default::default()
        },
    ));
    let ctx = ToolContext::new("c1").with_spill_dir(spill.to_path_buf());
    let args = json!({"command": command, "risk": "low", "mutation": false,
                      "privesc": false, "why": "flood test"});
    r.execute_with_context("run_shell", &args.to_string(), &ctx)
        .await
}

fn result(run: &ToolRun) -> &Value {
    &run.output.as_ref().expect("ran").result
}

/// `sh -c producer | cmp - file` succeeds: the file holds exactly what the
/// producer writes.
fn same_bytes(producer: &str, file: &Path) -> bool {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!("{producer} | cmp -s - '{}'", file.display()))
        .status()
        .expect("cmp runs");
    status.success()
}

/// The view the model got when run_shell held every byte: the old cut of
/// the spill file's text and the old trailer.
fn old_view(spill: &Path) -> String {
    let raw = std::fs::read(spill).expect("spill readable");
    let (text, lossy) = text_of(&raw);
    let mut cut = truncate::cut(&text, LIMIT, Keep::HeadTail).text;
    cut.push_str(&truncate::trailer(
        text.chars().count() as u64,
        raw.len() as u64,
        lossy,
        spill,
    ));
    cut
}

/// Run `seq 1 n`, check the spill and the view; returns this process's
/// peak RSS (MiB) during the run itself, before the checks (`old_view`
/// reads the whole spill into memory).
async fn flood_is_exact(exec: ExecutionContext, n: u64) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    reset_hwm();
    let run = run_shell(exec, &format!("seq 1 {n}"), dir.path()).await;
    let peak = vm_hwm_mib();
    assert!(run.ok(), "{}", run.model_text);
    let out = run.output.as_ref().unwrap();
    assert_eq!(out.spill.len(), 1, "{:?}", out.spill);
    let spill = &out.spill[0];
    assert!(same_bytes(&format!("seq 1 {n}"), spill), "spill differs");
    assert_eq!(
        result(&run)["stdout"],
        old_view(spill),
        "same view as before"
    );
    assert_eq!(result(&run)["exit_code"], 0);
    peak
}

async fn binary_flood(exec: ExecutionContext) {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("random.bin");
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "head -c 20000000 /dev/urandom > '{}'",
            src.display()
        ))
        .status()
        .unwrap();
    assert!(made.success());
    let spill_dir = dir.path().join("spill");
    let run = run_shell(exec, &format!("cat '{}'", src.display()), &spill_dir).await;
    assert!(run.ok(), "{}", run.model_text);
    let out = run.output.as_ref().unwrap();
    let spill = &out.spill[0];
    assert!(same_bytes(&format!("cat '{}'", src.display()), spill));
    assert_eq!(result(&run)["stdout"], old_view(spill));
    assert!(
        result(&run)["note"]
            .as_str()
            .unwrap()
            .contains("not valid UTF-8")
    );
    assert!(
        result(&run)["stdout"]
            .as_str()
            .unwrap()
            .contains("20000000 bytes, raw, not valid UTF-8")
    );
}

/// A 1 MiB tmpfs mounted on a temporary folder (we are root here), unmounted
/// on drop.
struct TinyDisk {
    dir: tempfile::TempDir,
}

impl TinyDisk {
    fn mount() -> TinyDisk {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("mount runs");
        assert!(
            status.success(),
            "mounting a 1 MiB tmpfs needs root (this test proves ENOSPC on a real filesystem)"
        );
        TinyDisk { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

async fn full_disk(exec: ExecutionContext) {
    let disk = TinyDisk::mount();
    let run = run_shell(exec.clone(), "seq 1 1000000", &disk.path()).await;
    assert!(run.ok(), "the command itself succeeded: {}", run.model_text);
    let r = result(&run);
    let err = r["spill_error"]
        .as_str()
        .expect("the spill error is in the result");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(err.contains("could not be saved"), "{err}");
    // The model still sees the head and the tail.
    let stdout = r["stdout"].as_str().unwrap();
    assert!(stdout.starts_with("1\n2\n3\n"), "{stdout}");
    assert!(stdout.ends_with("999999\n1000000\n"), "{stdout}");
    assert!(run.output.as_ref().unwrap().spill.is_empty());
    // The agent carries on: the next command runs and reports normally.
    let next = run_shell(exec, "echo after", &disk.path()).await;
    assert_eq!(result(&next)["stdout"], "after\n");
}

/// Start a new peak: VmHWM is per process and tests share one (writing
/// "5" to clear_refs resets it, Linux ≥ 4.0).
fn reset_hwm() {
    std::fs::write("/proc/self/clear_refs", "5").expect("reset VmHWM");
}

fn vm_hwm_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|v| v.parse::<u64>().ok())
            })
        })
        .unwrap_or(0)
        / 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_is_spilled_exactly_in_flat_memory() {
    let _one = ONE_AT_A_TIME.lock().await;
    let plain = flood_is_exact(ExecutionContext::local(), 111_111_111).await;
    let (backend, _server) = common::start("bash").await;
    let pane = flood_is_exact(ExecutionContext::from_arc(backend), 111_111_111).await;
    assert!(plain < 128, "test process peak RSS {plain} MiB (plain)");
    assert!(
        pane < 128,
        "test process peak RSS {pane} MiB (managed pane)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gigabyte_without_a_newline_is_spilled_exactly_in_flat_memory() {
    let _one = ONE_AT_A_TIME.lock().await;
    let producer = "head -c 1000000000 /dev/zero | tr '\\0' x";
    let dir = tempfile::tempdir().unwrap();
    reset_hwm();
    let run = run_shell(ExecutionContext::local(), producer, dir.path()).await;
    let peak = vm_hwm_mib();
    assert!(run.ok(), "{}", run.model_text);
    let spill = run.output.as_ref().unwrap().spill[0].clone();
    assert!(same_bytes(producer, &spill));
    let stdout = result(&run)["stdout"].as_str().unwrap().to_string();
    assert!(
        stdout.contains("...[truncated 999996000 chars]..."),
        "{stdout}"
    );
    assert!(stdout.contains("(1000000000 chars) saved to"), "{stdout}");
    assert!(peak < 128, "test process peak RSS {peak} MiB");
}

const FLOOD_SCENARIO: &str = r#"
[[rule]]
when = { role = "user", contains = "flood" }
text = "Flooding."
[[rule.tool_calls]]
name = "run_shell"
[rule.tool_calls.arguments]
command = "seq 1 2000000"
risk = "low"
mutation = false
privesc = false
why = "flood test"

[[rule]]
when = { role = "tool" }
text = "Finished."
"#;

/// Sizes of the files named `name` anywhere under `dir`.
fn sizes_of(dir: &Path, name: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(sizes_of(&p, name));
        } else if p
            .file_name()
            .is_some_and(|f| f.to_string_lossy().contains(name))
        {
            out.push(e.metadata().unwrap().len());
        }
    }
    out
}

async fn session_stays_small(extra: &[&str]) {
    use vigil_scripted::{Scenario, ScriptedServer};
    let server = ScriptedServer::start(Scenario::from_toml_str(FLOOD_SCENARIO).unwrap())
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tmux = common::Server {
        socket: common::socket(),
    };
    let out = tokio::process::Command::new(common::vigil_bin())
        .args(["exec", "flood please", "--auto-approve"])
        .args(extra)
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "test")
        .env("VIGIL_DATA_DIR", dir.path())
        .env("VIGIL_TMUX_SOCKET", &tmux.socket)
        .env_remove("VIGIL_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("vigil ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("bytes not shown live"),
        "the live view says what it left out"
    );
    assert!(
        stdout.len() < 4 << 20,
        "live output is bounded: {} bytes",
        stdout.len()
    );
    let events = sizes_of(dir.path(), "events.jsonl");
    assert_eq!(events.len(), 1);
    assert!(
        events[0] < 64 * 1024,
        "events.jsonl holds no bulk output: {events:?}"
    );
    let spills = sizes_of(&dir.path().join("sessions"), "run_shell-stdout");
    assert_eq!(spills, vec![14_888_896], "one spill file with every byte");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_file_stays_small_plain() {
    let _one = ONE_AT_A_TIME.lock().await;
    session_stays_small(&["--no-tmux"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_file_stays_small_managed_pane() {
    let _one = ONE_AT_A_TIME.lock().await;
    session_stays_small(&[]).await;
}
