//! The preview card under a waiting command: `v` asks the agent for a
//! preview (the card says it runs), the report arrives and the card shows
//! the verdict, the changed files, the diff, refused connections and the
//! output; scrolled and zoomed like the diff card. `r` then offers the
//! preview as the deny reason.

use std::path::PathBuf;

use crossterm::event::KeyCode;

use crate::app::{App, Focus};
use crate::tests::app_tests::{app, key, request};
use crate::tests::view_tests::screen;
use vigil_protocol::{
    AgentCommand, AgentEvent, EffectKind, FileEffect, PreviewOutcome, PreviewReport,
    RefusedConnection,
};

fn waiting() -> App {
    let mut app = app();
    let r = request(
        1,
        "c1",
        "sed -i s/listen 80/listen 8080/ site.conf && curl -s http://ci/hook",
    );
    app.on_agent_event(AgentEvent::ToolCallRequested {
        call_id: "c1".into(),
        name: "run_shell".into(),
        arguments: "{}".into(),
    });
    app.on_agent_event(AgentEvent::ApprovalRequested { request: r });
    crate::tests::app_tests::look_at_approvals(&mut app);
    app.set_focus(Focus::Approvals);
    app
}

pub(crate) fn report() -> PreviewReport {
    let diff = "--- a/site.conf\n+++ b/site.conf\n@@ -1,3 +1,3 @@\n server {\n-    listen 80;\n+    listen 8080;\n     root /srv/www;\n";
    PreviewReport {
        command: "sed …".into(),
        cwd: PathBuf::from("/srv/app"),
        exit_code: Some(6),
        files: vec![
            FileEffect {
                path: PathBuf::from("/srv/app/site.conf"),
                kind: EffectKind::Modified,
                dir: false,
                diff: Some(diff.into()),
                diff_cut: false,
                old: None,
                new: None,
                note: None,
            },
            FileEffect {
                path: PathBuf::from("/srv/app/cache"),
                kind: EffectKind::Deleted,
                dir: true,
                diff: None,
                diff_cut: false,
                old: None,
                new: None,
                note: Some("held 12 files".into()),
            },
        ],
        refused: vec![RefusedConnection {
            address: "10.0.0.7:80".into(),
            call: "connect".into(),
            program: "curl".into(),
            times: 1,
        }],
        time_limit_ms: 10_000,
        size_limit: 256 << 20,
        output_head: "curl: (7) Failed to connect\n".into(),
        output_bytes: 28,
        limits: vec![
            "a preview cannot reproduce network effects, time, randomness or remote state".into(),
        ],
        ..PreviewReport::default()
    }
}

#[test]
fn v_asks_for_a_preview_and_the_card_shows_its_effects_100x30() {
    let mut app = waiting();
    let sent = app.on_key(key(KeyCode::Char('v')));
    assert_eq!(sent, vec![AgentCommand::Preview { id: 1 }]);
    let running = screen(&app, 100, 30);
    assert!(
        running.contains("previewing in a throwaway view"),
        "{running}"
    );
    let outcome = PreviewOutcome::Report {
        report: Box::new(report()),
    };
    app.on_agent_event(AgentEvent::PreviewReady { id: 1, outcome });
    let shown = screen(&app, 100, 30);
    app.on_key(key(KeyCode::Char('z')));
    let zoomed = screen(&app, 100, 30);
    app.on_key(key(KeyCode::Enter));
    let viewer = screen(&app, 100, 30);
    insta::assert_snapshot!(format!("{running}\n{shown}\n{zoomed}\n{viewer}"));
}

#[test]
fn a_second_v_sends_nothing_and_r_quotes_the_preview() {
    let mut app = waiting();
    assert_eq!(app.on_key(key(KeyCode::Char('v'))).len(), 1);
    assert!(app.on_key(key(KeyCode::Char('v'))).is_empty());
    let outcome = PreviewOutcome::Report {
        report: Box::new(report()),
    };
    app.on_agent_event(AgentEvent::PreviewReady { id: 1, outcome });
    app.on_key(key(KeyCode::Char('r')));
    let sent = app.on_key(key(KeyCode::Enter));
    let [
        AgentCommand::Approval {
            id: 1, decision, ..
        },
    ] = sent.as_slice()
    else {
        panic!("{sent:?}");
    };
    let vigil_protocol::Answer::DenyWithReason(reason) = decision else {
        panic!("{decision:?}");
    };
    assert!(
        reason.starts_with("the preview showed: exit 6 · 2 changes"),
        "{reason}"
    );
    assert!(reason.contains("M /srv/app/site.conf (+1 -1)"), "{reason}");
}

#[test]
fn an_unavailable_preview_says_why() {
    let mut app = waiting();
    app.on_key(key(KeyCode::Char('v')));
    let why = "preview unavailable on this target: it needs this machine's kernel".to_string();
    app.on_agent_event(AgentEvent::PreviewReady {
        id: 1,
        outcome: PreviewOutcome::Unavailable { why },
    });
    let s = screen(&app, 100, 30);
    assert!(s.contains("preview unavailable on this target"), "{s}");
}
