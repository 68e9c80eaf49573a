//! A resumed session on screen: the restored conversation and tools pane
//! (100×30), the history view with an interrupted call (120×30), and opening a
//! restored call's output (kept from its result, or read from its spill
//! file when it was cut for the model).

use std::path::PathBuf;
use std::time::Instant;

use crossterm::event::KeyCode;

use crate::app::{App, Focus, Overlay};
use crate::io::{IoRequest, perform};
use crate::tests::app_tests::key;
use crate::tests::view_tests::screen;
use vigil_protocol::{AgentEvent, HistoryEntry, ToolRecord, ToolSummary};

fn entry(role: &str, text: &str, call_id: Option<&str>) -> HistoryEntry {
    HistoryEntry {
        role: role.into(),
        text: text.into(),
        call_id: call_id.map(str::to_string),
    }
}

fn finished(exit: i32, ms: u64, spill: Option<PathBuf>) -> ToolSummary {
    ToolSummary {
        ok: true,
        exit_code: Some(exit),
        duration_ms: ms,
        truncated: spill.is_some(),
        spill: spill.into_iter().collect(),
        seen: Vec::new(),
        error: None,
    }
}

fn record(id: &str, command: &str, summary: Option<ToolSummary>, started: bool) -> ToolRecord {
    ToolRecord {
        call_id: id.into(),
        name: "run_shell".into(),
        arguments: format!(r#"{{"command":"{command}","risk":"low"}}"#),
        started,
        summary,
        decided: None,
    }
}

/// A session that ran `uname -a`, a long build whose output was cut (the
/// full output in `spill`), and was killed while `make install` ran.
fn resumed(spill: PathBuf) -> App {
    let mut app = App::new(Instant::now());
    app.on_agent_event(AgentEvent::SessionStarted {
        model: "test-model".into(),
        target: "local".into(),
        demo: false,
        mirror: None,
        tools: vec!["run_shell".into()],
    });
    let uname = r#"{"harness_timestamp":{"source":"harness","unix_millis":1},"result":{"exit_code":0,"stderr":"","stdout":"Linux build-01 6.8.0 x86_64 GNU/Linux\n"}}"#;
    let make = r#"{"harness_timestamp":{"source":"harness","unix_millis":2},"result":{"exit_code":2,"stderr":"make: *** [all] Error 2","stdout":"cc -c main.c\n[... 4000 lines cut ...]\nlink failed\n"}}"#;
    let history = vec![
        entry("user", "which system is this? then build the project", None),
        entry("assistant", "Let me look first.", None),
        entry("tool", uname, Some("c1")),
        entry("assistant", "Linux 6.8. Building now.", None),
        entry("tool", make, Some("c2")),
        entry(
            "assistant",
            "The build failed at the link step; installing what there is.",
            None,
        ),
        entry("tool", "Tool error: vigil stopped", Some("c3")),
    ];
    let tools = vec![
        record("c1", "uname -a", Some(finished(0, 34, None)), true),
        ToolRecord {
            decided: Some("approved by operator".into()),
            ..record(
                "c2",
                "make all",
                Some(finished(2, 83_000, Some(spill))),
                true,
            )
        },
        record("c3", "make install", None, true),
    ];
    let interrupted = vec![tools[2].clone()];
    app.on_agent_event(AgentEvent::SessionRestored {
        id: "1795440000000-4242".into(),
        history,
        tools,
        standing_approvals: Vec::new(),
        standing_prefixes: Vec::new(),
        interrupted,
    });
    app
}

#[test]
fn restored_conversation_and_tools_100x30() {
    let app = resumed(PathBuf::from("/data/sessions/s/spill/c2-stdout.txt"));
    insta::assert_snapshot!(screen(&app, 100, 30));
}

#[test]
fn restored_history_view_120x30() {
    let mut app = resumed(PathBuf::from("/data/sessions/s/spill/c2-stdout.txt"));
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('h')));
    insta::assert_snapshot!(screen(&app, 120, 30));
}

#[test]
fn a_restored_call_opens_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("c2-stdout.txt");
    std::fs::write(
        &spill,
        "cc -c main.c\nevery line of the build\nlink failed\n",
    )
    .unwrap();
    let mut app = resumed(spill.clone());
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('h')));
    // The newest is selected (the interrupted install); up twice: uname.
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Enter));
    let Overlay::History {
        viewer: Some(viewer),
    } = &app.overlay
    else {
        panic!("the viewer is open");
    };
    let text = viewer.content().expect("kept output").text.to_string();
    assert!(text.contains("Linux build-01 6.8.0"), "{text}");
    // The cut build: its full output comes from the spill file.
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::Down));
    app.on_key(key(KeyCode::Enter));
    let requests = app.take_io();
    let Some(IoRequest::LoadOutput { files, .. }) = requests.first() else {
        panic!("the spill file is read: {requests:?}");
    };
    assert_eq!(files[0].1, spill);
    app.on_io(perform(requests.into_iter().next().unwrap()));
    let Overlay::History {
        viewer: Some(viewer),
    } = &app.overlay
    else {
        panic!("the viewer is open");
    };
    let text = viewer.content().expect("loaded").text.to_string();
    assert!(text.contains("every line of the build"), "{text}");
}
