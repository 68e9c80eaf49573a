//! App behaviour added for the operator jobs: reason / edit / policy modals,
//! help, zoom, mouse focus, the history view and its viewer, theme cycling.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use crate::app::{App, Focus, Overlay};
use crate::io::{IoRequest, perform};
use crate::style::theme::Theme;
use crate::tests::app_tests::{key, request};
use vigil_protocol::{
    AgentCommand, AgentEvent, ApprovalDecision, ApprovalPolicy, OutputStream, ToolSummary,
};

fn app() -> App {
    let mut app = App::new(Instant::now());
    app.on_agent_event(AgentEvent::SessionStarted {
        model: "scripted".into(),
        target: "local".into(),
        demo: false,
        mirror: None,
        tools: vec!["run_shell".into()],
    });
    app
}

fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        app.on_key(key(KeyCode::Char(c)));
    }
}

pub(crate) fn screen(app: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).expect("backend");
    t.draw(|f| app.draw(f)).expect("draw");
    let b = t.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| b[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn finished_call(
    app: &mut App,
    id: &str,
    out: &str,
    truncated: bool,
    spill: Vec<std::path::PathBuf>,
) {
    app.on_agent_event(AgentEvent::ToolStarted {
        call_id: id.into(),
        name: "run_shell".into(),
        summary: format!("cmd-{id}"),
    });
    app.on_agent_event(AgentEvent::ToolOutput {
        call_id: id.into(),
        stream: OutputStream::Stdout,
        text: out.into(),
    });
    app.on_agent_event(AgentEvent::ToolCompleted {
        call_id: id.into(),
        name: "run_shell".into(),
        summary: ToolSummary {
            ok: true,
            exit_code: Some(0),
            duration_ms: 12,
            truncated,
            // What run_shell reports of a cut stdout with the default limits.
            seen: spill
                .iter()
                .map(|_| {
                    let cfg = vigil_tools::shell::ShellConfig::default();
                    vigil_tools::truncate::model_saw(cfg.stdout_limit, cfg.keep)
                })
                .collect(),
            spill,
            error: None,
        },
    });
}

#[test]
fn r_denies_with_the_typed_reason() {
    let mut app = app();
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(5, "c1", "rm -rf /srv"),
    });
    crate::tests::app_tests::look_at_approvals(&mut app);
    assert!(app.on_key(key(KeyCode::Char('r'))).is_empty());
    // Approval keys typed into the reason box are just text.
    typed(&mut app, "not on prod, y");
    assert!(screen(&app, 100, 30).contains("deny with a reason"));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![AgentCommand::Approval {
            id: 5,
            decision: vigil_protocol::Answer::DenyWithReason("not on prod, y".into()),
            token: "token-5".into(),
        }]
    );
    assert!(app.modal.is_none());
}

#[test]
fn e_runs_the_edited_command() {
    let mut app = app();
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(6, "c1", "rm -rf /tmp/cache"),
    });
    crate::tests::app_tests::look_at_approvals(&mut app);
    app.on_key(key(KeyCode::Char('e')));
    for _ in 0.."cache".len() {
        app.on_key(key(KeyCode::Backspace));
    }
    typed(&mut app, "old");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![AgentCommand::Approval {
            id: 6,
            decision: vigil_protocol::Answer::ApproveEdited("rm -rf /tmp/old".into()),
            token: "token-6".into(),
        }]
    );
}

#[test]
fn esc_closes_a_modal_without_answering() {
    let mut app = app();
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(1, "c1", "ls"),
    });
    crate::tests::app_tests::look_at_approvals(&mut app);
    app.on_key(key(KeyCode::Char('r')));
    assert!(app.on_key(key(KeyCode::Esc)).is_empty());
    assert!(app.modal.is_none());
    assert_eq!(app.approvals.unanswered(), 1);
    // The request vanishing (cancelled turn) closes its modal.
    app.on_key(key(KeyCode::Char('e')));
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id: 1,
        decision: ApprovalDecision::DenyWithReason("cancelled".into()),
        decided_by: Default::default(),
        previewed: false,
        answered_by: None,
    });
    assert!(app.modal.is_none());
}

#[test]
fn policy_menu_sends_set_policy_and_shows_it() {
    let mut app = app();
    app.set_policy_shown(ApprovalPolicy::Ask);
    app.set_focus(Focus::Conversation);
    app.on_key(key(KeyCode::Char('p')));
    app.on_key(key(KeyCode::Char('6')));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![AgentCommand::SetPolicy {
            policy: ApprovalPolicy::ApproveAllFor { minutes: 15 }
        }]
    );
    let s = screen(&app, 100, 30);
    assert!(s.contains("policy: approve all, 15m left"), "{s}");
}

#[test]
fn help_lists_bindings_and_any_key_closes_it() {
    let mut app = app();
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('?')));
    // Tall enough for the approvals section (a shorter screen scrolls).
    let s = screen(&app, 100, 34);
    assert!(s.contains("deny with a reason for the model"), "{s}");
    app.on_key(key(KeyCode::Char('x')));
    assert!(matches!(app.overlay, Overlay::None));
}

#[test]
fn zoom_toggles_and_approvals_still_show_in_the_status_bar() {
    let mut app = app();
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('z')));
    assert_eq!(app.zoomed(), Some(Focus::Tools));
    app.on_agent_event(AgentEvent::ApprovalRequested {
        request: request(2, "c9", "reboot"),
    });
    let s = screen(&app, 80, 24);
    assert!(s.contains("waiting for you: 1 approval"), "{s}");
    assert!(
        !s.contains("approvals (1)"),
        "pane hidden while zoomed: {s}"
    );
    assert!(
        s.contains("⚠ 1 approval waiting (Tab shows it): run_shell reboot"),
        "{s}"
    );
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('z')));
    assert_eq!(app.zoomed(), None);
}

#[test]
fn mouse_click_focuses_and_wheel_scrolls() {
    let mut app = app();
    for i in 0..100 {
        app.on_agent_event(AgentEvent::Notice {
            text: format!("n{i}"),
        });
    }
    screen(&app, 100, 30);
    let click = |col, row, kind| MouseEvent {
        kind,
        column: col,
        row,
        modifiers: KeyModifiers::NONE,
    };
    assert!(app.on_mouse(click(70, 3, MouseEventKind::Down(MouseButton::Left))));
    assert_eq!(app.focus(), Focus::Tools);
    assert!(app.on_mouse(click(5, 5, MouseEventKind::ScrollUp)));
    assert!(!app.conversation.scroll.is_following());
    app.set_focus(Focus::Conversation);
    app.on_key(key(KeyCode::Char('f')));
    assert!(app.conversation.scroll.is_following());
}

#[test]
fn history_opens_kept_output_and_searches() {
    let mut app = app();
    finished_call(&mut app, "c1", "alpha\nbeta\n", false, vec![]);
    finished_call(&mut app, "c2", "gamma\n", false, vec![]);
    app.set_focus(Focus::Conversation);
    app.on_key(key(KeyCode::Char('h')));
    let s = screen(&app, 100, 30);
    assert!(s.contains("history · 2 tool calls"), "{s}");
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Enter));
    let s = screen(&app, 100, 30);
    assert!(s.contains("output · run_shell cmd-c1"), "{s}");
    assert!(s.contains("M│alpha"), "{s}");
    app.on_key(key(KeyCode::Char('/')));
    typed(&mut app, "beta");
    app.on_key(key(KeyCode::Enter));
    let s = screen(&app, 100, 30);
    assert!(s.contains("/beta 1/1"), "{s}");
    // Save proposes a path in the save dir and queues the write.
    app.set_save_dir("/tmp/x".into());
    app.on_key(key(KeyCode::Char('s')));
    app.on_key(key(KeyCode::Enter));
    let io = app.take_io();
    assert!(
        matches!(&io[..], [IoRequest::Save { path, .. }] if path.ends_with("vigil-output-c1.txt")),
        "{io:?}"
    );
    app.on_key(key(KeyCode::Esc));
    app.on_key(key(KeyCode::Esc));
    assert!(matches!(app.overlay, Overlay::None));
}

#[test]
fn truncated_output_loads_from_the_spill_file_off_the_ui() {
    let dir = tempfile::tempdir().unwrap();
    let spill = dir.path().join("171-run_shell-stdout-0.txt");
    let full: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    std::fs::write(&spill, &full).unwrap();
    let mut app = app();
    finished_call(&mut app, "c1", "1\n2\n", true, vec![spill]);
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('h')));
    app.on_key(key(KeyCode::Enter));
    assert!(screen(&app, 100, 30).contains("reading the full output"));
    let reqs = app.take_io();
    assert_eq!(reqs.len(), 1);
    for r in reqs {
        app.on_io(perform(r));
    }
    let s = screen(&app, 100, 30);
    assert!(s.contains("run_shell-stdout"), "{s}");
    assert!(s.contains("M│1"), "{s}");
    // The middle was cut for the model.
    app.on_key(key(KeyCode::Char('/')));
    typed(&mut app, "1500");
    app.on_key(key(KeyCode::Enter));
    let s = screen(&app, 100, 30);
    assert!(s.contains(" │1500"), "{s}");
    app.on_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    let s = screen(&app, 100, 30);
    assert!(s.contains("M│3000"), "{s}");
}

#[test]
fn theme_key_cycles_through_the_given_themes() {
    let mut app = app();
    let themes: Vec<Theme> = ["dark", "light", "high-contrast"]
        .into_iter()
        .filter_map(Theme::builtin)
        .collect();
    app.set_themes(themes);
    app.set_focus(Focus::Conversation);
    app.on_key(key(KeyCode::Char('t')));
    assert_eq!(app.theme().name, "light");
    assert!(screen(&app, 80, 24).contains("theme: light"));
    app.on_key(key(KeyCode::Char('t')));
    app.on_key(key(KeyCode::Char('t')));
    assert_eq!(app.theme().name, "dark");
}

#[test]
fn configured_keys_replace_the_defaults() {
    let mut app = app();
    let mut o = std::collections::BTreeMap::new();
    o.insert("zoom".to_string(), "ctrl-z".to_string());
    o.insert("help".to_string(), "f1".to_string());
    app.set_keymap(crate::keys::Keymap::from_config(&o).unwrap());
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('z')));
    assert_eq!(app.zoomed(), None);
    app.on_key(KeyEvent::new(KeyCode::Char('z'), KeyModifiers::CONTROL));
    assert_eq!(app.zoomed(), Some(Focus::Tools));
    app.on_key(key(KeyCode::F(1)));
    assert!(matches!(app.overlay, Overlay::Help { .. }));
    assert!(screen(&app, 100, 30).contains("F1"));
}

#[test]
fn ten_thousand_entries_render_only_the_visible_rows() {
    let fill = |n: usize| {
        let mut a = app();
        for i in 0..n {
            a.on_agent_event(AgentEvent::AssistantMessage {
                text: format!("entry {i} with **bold** and `code`\n- a list item"),
            });
        }
        a
    };
    let (small, big) = (fill(100), fill(10_000));
    let s = screen(&big, 100, 30);
    assert!(s.contains("entry 9999"), "{s}");
    // Against a baseline in the same process (under the same load): a
    // hundred times the entries costs about the same, not a hundred times
    // more.
    let time = |a: &App| {
        let start = Instant::now();
        for _ in 0..20 {
            screen(a, 100, 30);
        }
        start.elapsed()
    };
    let (base, many) = (time(&small), time(&big));
    // (Plus 250 ms: a scheduler pause in a short measurement is not cost.)
    let bound = base * 10 + std::time::Duration::from_millis(250);
    assert!(
        many < bound,
        "10 000 entries {many:?}, 100 entries {base:?}"
    );
}

#[test]
fn ten_thousand_entries_wrap_only_what_the_frame_shows() {
    let mut app = app();
    for i in 0..10_000 {
        app.on_agent_event(AgentEvent::TurnStarted {
            user: format!("question {i}"),
        });
        app.on_agent_event(AgentEvent::AssistantMessage {
            text: format!("Answer {i}:\n- one\n- two\n```\nls -l\n```"),
        });
    }
    let s = screen(&app, 100, 30);
    assert!(s.contains("Answer 9999:"), "{s}");
    let exact = app.conversation.exact_heights();
    assert!(exact < 40, "{exact} entries wrapped for one frame");
    app.set_focus(Focus::Conversation);
    app.on_key(key(KeyCode::Home));
    let s = screen(&app, 100, 30);
    assert!(s.contains("> question 0"), "{s}");
    assert!(!s.contains("Answer 9999:"));
    app.on_key(key(KeyCode::PageDown));
    let s = screen(&app, 100, 30);
    // 9 rows a turn, 23 rows a page: turn 3 is in view, turn 0 is not.
    assert!(
        s.contains("> question 3") && !s.contains("question 0"),
        "{s}"
    );
    app.on_key(key(KeyCode::End));
    let s = screen(&app, 100, 30);
    assert!(s.contains("Answer 9999:"), "{s}");
    assert!(app.conversation.exact_heights() < 80);
}
