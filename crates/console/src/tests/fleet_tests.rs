//! The fleet in the console: other agents' calls in the approval queue
//! (labelled, oldest first, answered through the fleet feed and never as
//! this agent's command), and the agents overlay (snapshots, switching).

use crossterm::event::KeyCode;

use crate::app::{App, Focus, Overlay};
use crate::tests::app_tests::{key, press, request};
use crate::tests::snapshot_tests::waiting_for_approval;
use crate::tests::view_tests::screen;
use vigil_client::Leaving;
use vigil_protocol::fleet::{FleetAgent, FleetAnswer, FleetPending, FleetView};
use vigil_protocol::wire::{AgentInfo, AgentState};
use vigil_protocol::{AgentCommand, AgentEvent, ApprovalDecision, DecidedBy};

const THIS: &str = "1795448379644-aaa111";
const OTHER: &str = "1795448379999-bbb222";
/// The views' clock: an hour and a bit after the agents started.
const NOW_MS: u64 = 1_795_452_000_000;

fn info(id: &str, model: &str, target: &str, state: AgentState, pending: usize) -> AgentInfo {
    AgentInfo {
        id: id.into(),
        pid: 4242,
        model: model.into(),
        target: target.into(),
        demo: false,
        state,
        pending_approvals: pending,
        consoles: 1,
        started_ms: 1_795_448_379_644,
        socket: format!("/run/user/1000/vigil/{id}.sock").into(),
        mirror: None,
        leaves_behind: None,
        policy: None,
    }
}

/// This agent and another one whose call #1 waits (asked long ago: it is
/// older than anything this console saw).
fn fleet() -> FleetView {
    let mut other = info(OTHER, "llama-3-70b", "ssh ops@db1", AgentState::Waiting, 1);
    other.started_ms += 600_000;
    FleetView {
        agents: vec![
            FleetAgent {
                info: info(THIS, "scripted-demo", "local", AgentState::Waiting, 1),
                this: true,
            },
            FleetAgent {
                info: other,
                this: false,
            },
        ],
        pending: vec![FleetPending {
            agent: OTHER.into(),
            label: "bbb222 llama-3-70b".into(),
            asked_ms: 1_000,
            request: request(1, "o1", "systemctl restart postgresql"),
        }],
    }
}

fn attached_with_fleet() -> App {
    let mut app = waiting_for_approval();
    app.set_attached(true);
    app.set_fleet(fleet(), NOW_MS);
    app
}

#[test]
fn labelled_queue_100x30() {
    let app = attached_with_fleet();
    insta::assert_snapshot!(screen(&app, 100, 30));
}

#[test]
fn agents_overlay_80x24() {
    let mut app = attached_with_fleet();
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('g')));
    insta::assert_snapshot!(screen(&app, 80, 24));
}

#[test]
fn another_agents_call_is_answered_through_the_fleet_never_as_this_agents_command() {
    let mut app = attached_with_fleet();
    assert_eq!(app.approvals.len(), 2);
    // Oldest first: the other agent's call, though this one has the same id.
    app.set_focus(Focus::Approvals);
    press(&mut app, KeyCode::Up);
    let selected = app.approvals.selected().unwrap();
    assert_eq!(selected.agent.as_ref().map(|a| a.id.as_str()), Some(OTHER));
    // Edit, preview, session rules are that agent's business.
    assert!(press(&mut app, KeyCode::Char('e')).is_empty());
    assert!(
        app.modal.is_none(),
        "an edit modal opened for another agent's call"
    );
    assert!(
        app.flash
            .as_deref()
            .unwrap_or("")
            .contains("bbb222 llama-3-70b")
    );
    assert!(press(&mut app, KeyCode::Char('y')).is_empty());
    assert_eq!(
        app.take_fleet_answers(),
        vec![FleetAnswer {
            agent: OTHER.into(),
            id: 1,
            decision: vigil_protocol::Answer::ApproveOnce,
        }]
    );
    // This agent's resolution of its own #1 leaves the other's alone.
    app.on_agent_event(AgentEvent::ApprovalResolved {
        id: 1,
        decision: ApprovalDecision::Deny,
        decided_by: DecidedBy::Operator,
        previewed: false,
        answered_by: None,
    });
    assert_eq!(app.approvals.len(), 1);
    assert!(app.approvals.selected().unwrap().agent.is_some());
    // The other agent resolved it: the fleet drops it, and it goes.
    let mut view = fleet();
    view.pending.clear();
    app.set_fleet(view, NOW_MS);
    assert!(app.approvals.is_empty());
}

#[test]
fn this_agents_call_still_goes_to_this_agent() {
    let mut app = attached_with_fleet();
    app.set_focus(Focus::Approvals);
    press(&mut app, KeyCode::Down);
    assert!(app.approvals.selected().unwrap().agent.is_none());
    assert_eq!(
        press(&mut app, KeyCode::Char('n')),
        vec![AgentCommand::Approval {
            id: 1,
            decision: vigil_protocol::Answer::Deny,
            token: "token-1".into(),
        }]
    );
    assert!(app.take_fleet_answers().is_empty());
}

#[test]
fn enter_on_another_agent_leaves_to_switch_and_on_this_one_stays() {
    let mut app = attached_with_fleet();
    app.set_focus(Focus::Tools);
    let footer = screen(&app, 160, 30);
    assert!(footer.contains("g agents"), "{footer}");
    app.on_key(key(KeyCode::Char('g')));
    assert!(matches!(app.overlay, Overlay::Agents { selected: 0 }));
    app.on_key(key(KeyCode::Enter));
    assert!(!app.should_quit(), "Enter on this agent left");
    app.on_key(key(KeyCode::Char('g')));
    app.on_key(key(KeyCode::Down));
    assert!(
        app.on_key(key(KeyCode::Enter)).is_empty(),
        "a switch stops nothing"
    );
    assert!(app.should_quit());
    assert_eq!(app.leaving(), Leaving::Switch(OTHER.into()));
}

#[test]
fn the_agents_key_is_refused_without_an_agent_process() {
    let mut app = waiting_for_approval();
    app.set_focus(Focus::Tools);
    app.on_key(key(KeyCode::Char('g')));
    assert!(matches!(app.overlay, Overlay::None));
    assert!(app.flash.as_deref().unwrap_or("").contains("vigil attach"));
}
