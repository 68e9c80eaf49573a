//! Hostile tool output through the registry with real processes: 100 MB of
//! output, binary bytes and invalid UTF-8, a 10 MB single line, and
//! terminal escapes that try to move the cursor, set the title or clear the
//! screen. The model's view is cut to the limits (lossy UTF-8, U+FFFD for
//! each bad sequence), the spill file holds the exact bytes the command
//! wrote (local backend and the managed tmux pane alike), nothing panics,
//! the console's tool pane and full-output viewer stay bounded and
//! sanitised, and every pane but the mirror renders the escapes as nothing.

use super::common;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;
use vigil::console::app::App;
use vigil::console::panes::tools::{MAX_LINE_CHARS, MAX_LINES_PER_CALL, ToolsPane};
use vigil::console::panes::viewer::ModelView;
use vigil::exec::ExecutionContext;
use vigil::tools::shell::{RunShell, ShellConfig};
use vigil::tools::{ToolContext, ToolRegistry, ToolRun, ToolStream};
use vigil_protocol::{AgentEvent, OutputStream, ToolSummary};

const LIMIT: usize = 4000;

fn registry(exec: ExecutionContext) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    r.register(RunShell::new(
        exec,
        ShellConfig {
            confirm: false,
            ..Default::default()
        },
    ));
    r
}

/// Run `command` through the registry; live output goes into a console
/// tools pane, as the agent forwards it.
async fn run(command: &str, spill: &Path) -> (ToolRun, ToolsPane, usize) {
    run_on(ExecutionContext::local(), command, spill).await
}

/// [`run`] on another execution target.
async fn run_on(
    exec: ExecutionContext,
    command: &str,
    spill: &Path,
) -> (ToolRun, ToolsPane, usize) {
    let pane = Arc::new(Mutex::new(ToolsPane::default()));
    let streamed = Arc::new(Mutex::new(0usize));
    let (p, s) = (pane.clone(), streamed.clone());
    p.lock().unwrap().started("c1", "run_shell", command);
    let ctx = ToolContext::new("c1")
        .with_spill_dir(spill.to_path_buf())
        .with_sink(Arc::new(move |ev| {
            let (stream, text) = match ev {
                ToolStream::Stdout(t) => (OutputStream::Stdout, t),
                ToolStream::Stderr(t) => (OutputStream::Stderr, t),
                ToolStream::Info(t) => {
                    // "[N bytes not shown live…]": counted as accounted for.
                    if let Some(n) = t
                        .strip_prefix('[')
                        .and_then(|r| r.split(" bytes not shown live").next())
                        .and_then(|n| n.parse::<usize>().ok())
                    {
                        *s.lock().unwrap() += n;
                    }
                    p.lock().unwrap().info("c1", &t);
                    return;
                }
                _ => return,
            };
            *s.lock().unwrap() += text.len();
            p.lock().unwrap().output("c1", stream, &text);
        }));
    let args = json!({"command": command, "risk": "low", "mutation": false,
                      "privesc": false, "why": "hostile output test"});
    let out = registry(exec)
        .execute_with_context("run_shell", &args.to_string(), &ctx)
        .await;
    let pane = std::mem::take(&mut *pane.lock().unwrap());
    let n = *streamed.lock().unwrap();
    (out, pane, n)
}

fn assert_pane_bounded(pane: &ToolsPane) {
    let call = pane.call("c1").expect("call in pane");
    assert!(
        call.output.lines().len() <= MAX_LINES_PER_CALL,
        "{} lines",
        call.output.lines().len()
    );
    for l in call.output.lines().iter() {
        assert!(l.text.chars().count() <= MAX_LINE_CHARS + 1, "line bound");
        assert!(!l.text.chars().any(|c| c.is_control()), "sanitised");
    }
}

fn stdout_of(run: &ToolRun) -> String {
    let out = run.output.as_ref().expect("ran");
    out.result["stdout"].as_str().expect("stdout").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megabytes_are_cut_for_the_model_and_spilled_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (run, pane, streamed) = run("yes 0123456789abcdef | head -c 100000000", dir.path()).await;
    assert!(run.ok(), "{}", run.model_text);
    assert!(
        run.model_text.len() < 3 * LIMIT,
        "model view {}",
        run.model_text.len()
    );
    assert!(stdout_of(&run).chars().count() < LIMIT + 300);
    let out = run.output.as_ref().unwrap();
    assert!(out.truncated);
    assert_eq!(out.spill.len(), 1);
    let meta = std::fs::metadata(&out.spill[0]).unwrap();
    assert_eq!(meta.len(), 100_000_000, "spilled in full");
    // Live output is best effort: every byte was shown or reported as not
    // shown, and the last lines come again at the end (≤ 8 KiB).
    assert!(
        (100_000_000..=100_000_000 + 8192).contains(&streamed),
        "every byte shown live or reported as not shown: {streamed}"
    );
    assert_pane_bounded(&pane);
    assert_eq!(
        pane.call("c1").unwrap().output.lines().len(),
        MAX_LINES_PER_CALL
    );
    eprintln!("100 MB round trip: {:?}", started.elapsed());
}

/// Every byte value, then pseudo-random bytes: plenty of invalid UTF-8.
fn binary_bytes() -> Vec<u8> {
    let mut raw: Vec<u8> = (0..=255u8).cycle().take(40_000).collect();
    raw.extend((0..60_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    raw
}

/// `cat` a binary file through run_shell on `exec`: the model sees cut,
/// lossy text; the spill file holds the bytes `cat` wrote; the console's
/// tool pane and full-output viewer show them sanitised.
async fn binary_output_is_spilled_raw(exec: ExecutionContext) {
    let dir = tempfile::tempdir().unwrap();
    let raw_path = dir.path().join("raw.bin");
    let raw = binary_bytes();
    assert!(std::str::from_utf8(&raw).is_err());
    std::fs::write(&raw_path, &raw).unwrap();
    let spill = dir.path().join("spill");
    let (run, pane, _) = run_on(exec, &format!("cat {}", raw_path.display()), &spill).await;
    assert!(run.ok(), "{}", run.model_text);
    let out = run.output.as_ref().unwrap();
    assert!(out.truncated);
    let stdout = stdout_of(&run);
    assert!(stdout.chars().count() < LIMIT + 300);
    assert!(stdout.contains('\u{fffd}'), "the model sees lossy text");
    assert!(
        stdout.contains("100000 bytes, raw, not valid UTF-8"),
        "{stdout}"
    );
    assert!(!run.model_text.contains('\u{1b}') || run.model_text.contains("\\u001b"));
    assert_eq!(out.spill.len(), 1);
    let spilled = std::fs::read(&out.spill[0]).unwrap();
    assert!(spilled == raw, "the spill holds the exact bytes");
    assert_pane_bounded(&pane);
    // The full-output viewer reads the raw spill and shows it sanitised.
    let loaded = vigil::console::io::perform(vigil::console::io::IoRequest::LoadOutput {
        call_id: "c1".into(),
        files: vec![("stdout".into(), out.spill[0].clone(), ModelView::All)],
    });
    let vigil::console::io::IoResult::Loaded { result, .. } = loaded else {
        panic!("loaded");
    };
    let content = result.expect("viewer content");
    assert!(
        content.text.contains('\u{fffd}'),
        "bad bytes shown as U+FFFD"
    );
    for l in &content.lines {
        let line = &content.text[l.start..l.end];
        assert!(!line.chars().any(|c| c.is_control()), "sanitised: {line:?}");
    }
}

#[tokio::test]
async fn binary_output_is_lossy_for_the_model_and_raw_in_the_spill() {
    binary_output_is_spilled_raw(ExecutionContext::local()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_output_from_the_managed_pane_is_raw_in_the_spill() {
    let (backend, _server) = common::start("bash").await;
    binary_output_is_spilled_raw(ExecutionContext::from_arc(backend)).await;
}

#[tokio::test]
async fn a_ten_megabyte_line_is_cut_and_spilled_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let (run, pane, _) = run("head -c 10000000 /dev/zero | tr '\\0' x", dir.path()).await;
    assert!(run.ok());
    let out = run.output.as_ref().unwrap();
    assert!(out.truncated);
    assert!(stdout_of(&run).chars().count() < LIMIT + 300);
    let spilled = std::fs::read(&out.spill[0]).unwrap();
    assert_eq!(spilled.len(), 10_000_000);
    assert!(spilled.iter().all(|&b| b == b'x'));
    assert_pane_bounded(&pane);
    // One line, split only where a "bytes not shown live" line interrupts
    // it (and once more for its end, shown again when the run is over).
    let lines = pane.call("c1").unwrap().output.lines().clone();
    let markers = lines
        .iter()
        .filter(|l| l.kind == vigil::console::panes::tool_lines::LineKind::Info)
        .count();
    assert!(
        lines.len() <= 2 * markers + 2,
        "still one line between markers: {} lines, {markers} markers",
        lines.len()
    );
}

const HOSTILE: &str = "\x1b[2J\x1b[H\x1b]0;pwned-title\x07\x1b[10;10Hmoved\x1b[?1049h\
\u{9b}31mred\x1b[6n\x1bP+q544e\x1b\\\x1b]52;c;aGk=\x07\u{202e}gnp.exe\rback\x08\x07 visible";

#[tokio::test]
async fn escapes_from_a_real_process_are_neutralised_in_the_tool_pane() {
    let dir = tempfile::tempdir().unwrap();
    let cmd =
        "printf '\\033[2J\\033[H\\033]0;pwned-title\\007\\033[10;10Hmoved\\033[?1049h visible\\n'";
    let (run, pane, _) = run(cmd, dir.path()).await;
    assert!(run.ok());
    let call = pane.call("c1").unwrap();
    let text: String = call.output.lines().iter().map(|l| l.text.clone()).collect();
    assert_eq!(text, "moved visible");
    assert!(!text.contains("pwned"));
}

fn no_escapes_on_screen(app: &App) -> String {
    let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap();
    term.draw(|f| app.draw(f)).unwrap();
    let buf = term.backend().buffer().clone();
    let mut screen = String::new();
    for (i, cell) in buf.content().iter().enumerate() {
        let sym = cell.symbol();
        assert!(
            !sym.chars()
                .any(|c| c.is_control() || matches!(c, '\u{202a}'..='\u{202e}')),
            "control char {sym:?} in cell {i}"
        );
        screen.push_str(sym);
        if (i + 1) % 120 == 0 {
            screen.push('\n');
        }
    }
    screen
}

#[test]
fn every_pane_but_the_mirror_renders_escapes_as_nothing() {
    let mut app = App::new(Instant::now());
    let ev = |app: &mut App, e: AgentEvent| app.on_agent_event(e);
    ev(
        &mut app,
        AgentEvent::SessionStarted {
            model: format!("model{HOSTILE}"),
            target: format!("target{HOSTILE}"),
            demo: false,
            mirror: None,
            tools: vec!["run_shell".into()],
        },
    );
    ev(
        &mut app,
        AgentEvent::TurnStarted {
            user: format!("user{HOSTILE}"),
        },
    );
    ev(
        &mut app,
        AgentEvent::AssistantDelta {
            text: format!("delta{HOSTILE}"),
        },
    );
    ev(
        &mut app,
        AgentEvent::AssistantMessage {
            text: format!("message{HOSTILE}"),
        },
    );
    ev(
        &mut app,
        AgentEvent::ToolCallRequested {
            call_id: "c1".into(),
            name: format!("run_shell{HOSTILE}"),
            arguments: json!({"command": format!("ls{HOSTILE}")}).to_string(),
        },
    );
    ev(
        &mut app,
        AgentEvent::ToolStarted {
            call_id: "c1".into(),
            name: "run_shell".into(),
            summary: format!("summary{HOSTILE}"),
        },
    );
    for i in 0..2_000 {
        ev(
            &mut app,
            AgentEvent::ToolOutput {
                call_id: "c1".into(),
                stream: if i % 2 == 0 {
                    OutputStream::Stdout
                } else {
                    OutputStream::Stderr
                },
                text: format!("line {i}{HOSTILE}\n"),
            },
        );
    }
    ev(
        &mut app,
        AgentEvent::ToolInfo {
            call_id: "c1".into(),
            text: format!("info{HOSTILE}"),
        },
    );
    ev(
        &mut app,
        AgentEvent::ToolCompleted {
            call_id: "c1".into(),
            name: "run_shell".into(),
            summary: ToolSummary {
                ok: false,
                exit_code: Some(1),
                duration_ms: 5,
                truncated: true,
                spill: vec![format!("/tmp/spill{HOSTILE}").into()],
                seen: Vec::new(),
                error: Some(format!("error{HOSTILE}")),
            },
        },
    );
    ev(
        &mut app,
        AgentEvent::Notice {
            text: format!("notice{HOSTILE}"),
        },
    );
    ev(
        &mut app,
        AgentEvent::Error {
            message: format!("error{HOSTILE}"),
        },
    );
    let screen = no_escapes_on_screen(&app);
    assert!(
        screen.contains("visible"),
        "the text itself is shown:\n{screen}"
    );
    assert!(
        !screen.contains("pwned-title"),
        "OSC payloads are dropped:\n{screen}"
    );
    assert!(
        !screen.contains("544e"),
        "DCS payloads are dropped:\n{screen}"
    );
}
