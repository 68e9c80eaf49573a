//! Snapshots of the diff review card: an `edit` waiting for approval with
//! its coloured unified diff (scrolled, then zoomed), a new file showing
//! its content, and a binary file saying so.

use crossterm::event::KeyCode;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use crate::app::{App, Focus};
use crate::tests::app_tests::{app, key, request};
use crate::tests::view_tests::screen;
use vigil_protocol::AgentEvent;
use vigil_protocol::FileChange;

/// An nginx config of 40 lines with two far-apart changes.
fn config_change() -> FileChange {
    let before: String = (1..=40)
        .map(|i| format!("    setting_{i:02} value_{i};\n"))
        .collect();
    let after = before
        .replace("setting_05 value_5;", "setting_05 value_five;")
        .replace("    setting_30 value_30;\n", "");
    FileChange::Modify {
        path: "/etc/nginx/nginx.conf".into(),
        before,
        after,
    }
}

fn waiting_with(change: FileChange, tool: &str, action: &str) -> App {
    let mut app = app();
    let mut r = request(1, "c1", action);
    r.tool = tool.into();
    r.gate.editable_field = None;
    r.gate.why = Some("tune the config".into());
    r.change = Some(change);
    app.on_agent_event(AgentEvent::ToolCallRequested {
        call_id: "c1".into(),
        name: tool.into(),
        arguments: "{}".into(),
    });
    app.on_agent_event(AgentEvent::ApprovalRequested { request: r });
    app.set_focus(Focus::Approvals);
    app
}

#[test]
fn edit_diff_card_scrolled_and_zoomed_100x30() {
    let mut app = waiting_with(
        config_change(),
        "edit",
        "edit str_replace /etc/nginx/nginx.conf",
    );
    let top = screen(&app, 100, 30);
    app.on_key(key(KeyCode::PageDown));
    let scrolled = screen(&app, 100, 30);
    app.on_key(key(KeyCode::Char('z')));
    let zoomed = screen(&app, 100, 30);
    insta::assert_snapshot!(format!("{top}\n{scrolled}\n{zoomed}"));
}

#[test]
fn new_and_binary_files_80x24() {
    let create = FileChange::Create {
        path: "/etc/motd".into(),
        content: "Welcome to web-1.\nManaged by vigil.\n".into(),
    };
    let new = screen(
        &waiting_with(create, "write_file", "write /etc/motd (36 bytes)"),
        80,
        24,
    );
    let binary = FileChange::of_write("/usr/bin/tool", Some(&[0x7f, 0x45, 0xff, 0]), "text");
    let bin = screen(
        &waiting_with(binary, "write_file", "write /usr/bin/tool (4 bytes)"),
        80,
        24,
    );
    insta::assert_snapshot!(format!("{new}\n{bin}"));
}

#[test]
fn added_lines_are_green_and_removed_lines_red() {
    let app = waiting_with(
        config_change(),
        "edit",
        "edit str_replace /etc/nginx/nginx.conf",
    );
    let mut t = Terminal::new(TestBackend::new(100, 30)).expect("backend");
    t.draw(|f| app.draw(f)).expect("draw");
    let b = t.backend().buffer();
    let colour_of_row_starting = |mark: &str| {
        (0..30u16).find_map(|y| {
            let row: String = (0..100u16).map(|x| b[(x, y)].symbol()).collect();
            let x = row.find(mark)? as u16;
            Some(b[(x, y)].fg)
        })
    };
    let theme = app.theme();
    assert_eq!(colour_of_row_starting("+    setting_05"), theme.ok.fg);
    assert_eq!(colour_of_row_starting("-    setting_05"), theme.bad.fg);
    assert_ne!(theme.ok.fg, Some(Color::Reset));
}

#[test]
fn page_keys_scroll_only_the_selected_diff() {
    let mut app = waiting_with(
        config_change(),
        "edit",
        "edit str_replace /etc/nginx/nginx.conf",
    );
    let before = screen(&app, 100, 30);
    app.on_key(key(KeyCode::PageDown));
    assert_ne!(before, screen(&app, 100, 30), "PageDown moves the diff");
    app.on_key(key(KeyCode::Home));
    assert_eq!(before, screen(&app, 100, 30), "Home goes back to the top");
}
