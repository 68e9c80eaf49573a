//! `Retry-After` in its HTTP-date form (RFC 9110), end to end: the scripted
//! server answers 429/503 with an IMF-fixdate relative to the moment it
//! answers, and the agent's announced retry delay is the time left until that
//! date, bounded by `retry_max_secs`, and zero for a date in the past.
//! Assertions are on the announced delays, not on elapsed time.

use super::common;

use common::until;
use vigil::agent::approval::Policy;
use vigil::agent::assemble::{Running, StartOptions, start_agent_with};
use vigil::config::Config;
use vigil_protocol::{AgentCommand, AgentEvent, TurnOutcome};
use vigil_scripted::{Scenario, ScriptedServer};

async fn start(
    scenario: &str,
    max_secs: u64,
    base_ms: u64,
) -> (Running, ScriptedServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Scenario::from_toml_str(scenario).unwrap())
        .await
        .unwrap();
    let mut c = Config::default();
    c.model.base_url = server.base_url();
    c.model.model = "test-model".into();
    c.model.retry_base_ms = base_ms;
    c.model.retry_max_secs = max_secs;
    c.paths.data_dir = Some(dir.path().to_path_buf());
    c.tmux.mode = vigil::config::TmuxMode::Off;
    let running = start_agent_with(&c, false, Policy::Ask, StartOptions::default())
        .await
        .unwrap();
    (running, server, dir)
}

/// Send `text` as the operator and collect events until `stop`.
async fn say(
    running: &mut Running,
    text: &str,
    stop: impl Fn(&AgentEvent) -> bool,
) -> Vec<AgentEvent> {
    let message = AgentCommand::UserMessage { text: text.into() };
    running.commands.send(message).unwrap();
    until(&mut running.events, stop).await
}

/// Whether the turn ended, and how.
fn ended(ev: &[AgentEvent], outcome: TurnOutcome) -> bool {
    matches!(ev.last(), Some(AgentEvent::TurnFinished { outcome: o }) if *o == outcome)
}

fn turn_finished(e: &AgentEvent) -> bool {
    matches!(e, AgentEvent::TurnFinished { .. })
}

/// The announced delays of the retries in `ev`, in order.
fn delays(ev: &[AgentEvent]) -> Vec<u64> {
    ev.iter()
        .filter_map(|e| match e {
            AgentEvent::RetryScheduled { delay_ms, .. } => Some(*delay_ms),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn http_date_retry_after_is_the_time_left_until_the_date() {
    // An hour ahead, under a two-hour cap: the wait is the hour (to the
    // second the date has; the test only waits for the announcement).
    let (mut running, _server, _dir) = start(
        "[[rule]]\nstatus = 429\nretry_after_date = 3600\n[[rule]]\ntext = \"never\"\n",
        7200,
        10,
    )
    .await;
    let ev = say(&mut running, "hi", |e| {
        matches!(e, AgentEvent::RetryScheduled { .. })
    })
    .await;
    let [delay] = delays(&ev)[..] else {
        panic!("one retry: {ev:#?}")
    };
    assert!(
        (3_590_000..=3_600_000).contains(&delay),
        "about an hour, not the 10 ms backoff: {delay} ms"
    );
    running.commands.send(AgentCommand::Cancel).unwrap();
    let ev = until(&mut running.events, turn_finished).await;
    assert!(ended(&ev, TurnOutcome::Cancelled), "{ev:#?}");
}

#[tokio::test]
async fn http_date_retry_after_is_capped_and_a_past_date_means_no_wait() {
    // The backoff alone would be 400..800 ms for the second attempt's wait
    // and 200..400 ms for the first: both announced delays come from the
    // dates instead (capped at 1 s; a date an hour ago is no wait).
    let (mut running, _server, _dir) = start(
        r#"
        [[rule]]
        status = 429
        retry_after_date = 3600
        [[rule]]
        status = 503
        retry_after_date = -3600
        [[rule]]
        text = "fine now"
        "#,
        1,
        400,
    )
    .await;
    let ev = say(&mut running, "hi", turn_finished).await;
    assert!(ended(&ev, TurnOutcome::Completed), "{ev:#?}");
    assert_eq!(delays(&ev), vec![1000, 0], "{ev:#?}");
    assert!(
        ev.iter()
            .any(|e| matches!(e, AgentEvent::AssistantMessage { text } if text == "fine now"))
    );
}
