//! Whole-console snapshots: a scripted sequence of agent events rendered into
//! a TestBackend at 100×30 and 80×24.

use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::app::App;
use crate::tests::app_tests::request;
use vigil_protocol::{
    AgentEvent, ApprovalDecision, MirrorTarget, OutputStream, ToolSummary, TurnOutcome,
};

fn render(app: &App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
    terminal.draw(|f| app.draw(f)).expect("draw");
    let buffer = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..height {
        let mut line = String::new();
        for x in 0..width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn started(mirror: Option<MirrorTarget>) -> App {
    let mut app = App::new(Instant::now());
    app.on_agent_event(AgentEvent::SessionStarted {
        model: "scripted-demo".into(),
        target: "local".into(),
        demo: true,
        mirror,
        tools: vec!["run_shell".into(), "read_file".into()],
    });
    app
}

/// Session started, a streamed answer, one finished tool call with output,
/// and a second call waiting for approval.
pub(crate) fn waiting_for_approval() -> App {
    let mut app = started(None);
    app.note_sent("free some disk space in /tmp");
    let events = vec![
        AgentEvent::TurnStarted {
            user: "free some disk space in /tmp".into(),
        },
        AgentEvent::AssistantDelta {
            text: "Let me look at what is ".into(),
        },
        AgentEvent::AssistantDelta {
            text: "using space first.".into(),
        },
        AgentEvent::AssistantMessage {
            text: "Let me look at what is using space first.".into(),
        },
        AgentEvent::ToolCallRequested {
            call_id: "c1".into(),
            name: "run_shell".into(),
            arguments: r#"{"command":"du -sh /tmp/*"}"#.into(),
        },
        AgentEvent::ToolStarted {
            call_id: "c1".into(),
            name: "run_shell".into(),
            summary: "du -sh /tmp/*".into(),
        },
        AgentEvent::ToolOutput {
            call_id: "c1".into(),
            stream: OutputStream::Stdout,
            text: "1.2G\t/tmp/cache\n4.0K\t/tmp/notes\n".into(),
        },
        AgentEvent::ToolOutput {
            call_id: "c1".into(),
            stream: OutputStream::Stderr,
            text: "du: cannot read directory '/tmp/private': Permission denied\n".into(),
        },
        AgentEvent::ToolCompleted {
            call_id: "c1".into(),
            name: "run_shell".into(),
            summary: ToolSummary {
                ok: true,
                exit_code: Some(1),
                duration_ms: 240,
                truncated: false,
                spill: vec![],
                seen: Vec::new(),
                error: None,
            },
        },
        AgentEvent::AssistantDelta {
            text: "/tmp/cache takes 1.2G. I will remove it.".into(),
        },
        AgentEvent::AssistantMessage {
            text: "/tmp/cache takes 1.2G. I will remove it.".into(),
        },
        AgentEvent::ToolCallRequested {
            call_id: "c2".into(),
            name: "run_shell".into(),
            arguments: r#"{"command":"rm -rf /tmp/cache"}"#.into(),
        },
        AgentEvent::ApprovalRequested {
            request: request(1, "c2", "rm -rf /tmp/cache"),
        },
    ];
    for ev in events {
        app.on_agent_event(ev);
    }
    app
}

/// The approval was granted, the command ran, and the turn finished.
fn turn_finished() -> App {
    let mut app = waiting_for_approval();
    let events = vec![
        AgentEvent::ApprovalResolved {
            id: 1,
            decision: ApprovalDecision::ApproveOnce,
            decided_by: Default::default(),
            previewed: false,
            answered_by: None,
        },
        AgentEvent::ToolStarted {
            call_id: "c2".into(),
            name: "run_shell".into(),
            summary: "rm -rf /tmp/cache".into(),
        },
        AgentEvent::ToolInfo {
            call_id: "c2".into(),
            text: "approved by operator".into(),
        },
        AgentEvent::ToolCompleted {
            call_id: "c2".into(),
            name: "run_shell".into(),
            summary: ToolSummary {
                ok: true,
                exit_code: Some(0),
                duration_ms: 1_840,
                truncated: true,
                spill: vec!["/home/op/.local/state/vigil/spill/c2.out".into()],
                seen: Vec::new(),
                error: None,
            },
        },
        AgentEvent::AssistantMessage {
            text: "Removed /tmp/cache; 1.2G freed.".into(),
        },
        AgentEvent::TurnFinished {
            outcome: TurnOutcome::Completed,
        },
    ];
    for ev in events {
        app.on_agent_event(ev);
    }
    app
}

#[test]
fn startup_80x24() {
    insta::assert_snapshot!(render(&App::new(Instant::now()), 80, 24));
}

#[test]
fn waiting_for_approval_100x30() {
    insta::assert_snapshot!(render(&waiting_for_approval(), 100, 30));
}

#[test]
fn waiting_for_approval_80x24() {
    insta::assert_snapshot!(render(&waiting_for_approval(), 80, 24));
}

/// The smallest layout keeps a one-line banner for the waiting approval
/// over the pane shown alone; Tab shows the card, which alone can be
/// answered.
#[test]
fn waiting_for_approval_40x12() {
    let mut app = waiting_for_approval();
    let banner = render(&app, 40, 12);
    app.on_key(crate::tests::app_tests::key(crossterm::event::KeyCode::Tab));
    let card = render(&app, 40, 12);
    insta::assert_snapshot!(format!("{banner}\n{card}"));
}

#[test]
fn turn_finished_100x30() {
    insta::assert_snapshot!(render(&turn_finished(), 100, 30));
}

#[test]
fn turn_finished_80x24() {
    insta::assert_snapshot!(render(&turn_finished(), 80, 24));
}

#[test]
fn mirror_target_80x24() {
    let app = started(Some(MirrorTarget {
        server_args: vec!["-L".into(), "vigil".into()],
        pane: "%3".into(),
    }));
    insta::assert_snapshot!(render(&app, 80, 24));
}

fn mirrored() -> App {
    let mut app = started(Some(MirrorTarget {
        server_args: vec!["-L".into(), "vigil".into()],
        pane: "%3".into(),
    }));
    app.mirror_mut().set_content(
        "$ uname -a\nLinux box 6.1.0 x86_64 GNU/Linux\n$ df -h / | tail -1\n\
         \x1b[32m/dev/sda1\x1b[0m  40G  12G  26G  32% /\n$ \n\n\n",
    );
    app
}

#[test]
fn mirror_content_100x30() {
    insta::assert_snapshot!(render(&mirrored(), 100, 30));
}

#[test]
fn mirror_passthrough_100x30() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = mirrored();
    app.set_focus(crate::app::Focus::Mirror);
    let cmds = app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(cmds.is_empty() && app.mirror.typing());
    app.on_agent_event(AgentEvent::OperatorKeys {
        keys: vec![
            vigil_protocol::PaneKey::Text("echo typed-by-operator".into()),
            vigil_protocol::PaneKey::Key("Enter".into()),
        ],
    });
    insta::assert_snapshot!(render(&app, 100, 30));
}

#[test]
fn tiny_terminal_does_not_panic() {
    let app = turn_finished();
    for (w, h) in [(1, 1), (10, 3), (20, 5), (0, 0), (200, 2)] {
        render(&app, w, h);
    }
}
