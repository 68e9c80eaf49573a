//! Tests that a call is read once: a gated `run_shell` call through the
//! registry and this broker (its rules, the denylist, the estimate, the
//! prefix choices on the card, the tool's execution) parses its command
//! exactly one time, and every reader decides on that same reading.

use std::sync::Arc;

use tokio::sync::mpsc;
use vigil_exec::ExecutionContext;
use vigil_tools::ToolRegistry;
use vigil_tools::shell::{RunShell, ShellConfig};

use super::{ApprovalBroker, Policy};
use vigil_policy::denylist::Denylist;
use vigil_policy::rules::PolicyRules;
use vigil_protocol::AgentEvent;

fn registry(broker: Arc<ApprovalBroker>, denylist: &[&str]) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    let config = ShellConfig {
        denylist: Denylist::read(&denylist.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        ..Default::default()
    };
    r.register(RunShell::new(ExecutionContext::local(), config));
    r.set_approver(broker);
    r
}

fn rules(text: &str) -> PolicyRules {
    let config =
        vigil_config::Config::from_toml(text, std::path::Path::new("r.toml")).expect("rules parse");
    PolicyRules::from_config(&config.approval)
}

fn args(command: &str) -> String {
    serde_json::json!({"command": command, "risk": "low", "mutation": false,
        "privesc": false, "why": "read-once test"})
    .to_string()
}

#[tokio::test(flavor = "current_thread")]
async fn a_gated_command_is_parsed_once_on_its_whole_way() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::ApproveAll));
    broker.set_can_sandbox(true);
    broker.set_denylist(vec!["rm -rf /".into()]);
    broker.set_rules(rules(
        "[[approval.rules]]\ncommand = [\"git\", \"push\"]\ndecision = \"deny\"\n",
    ));
    let reg = registry(broker, &["rm -rf /"]);
    let before = vigil_shell::parses();
    let run = reg
        .execute("run_shell", &args("echo read-once probe"))
        .await;
    assert!(run.ok(), "{}", run.model_text);
    assert_eq!(
        vigil_shell::parses() - before,
        1,
        "the command was parsed more than once on its way"
    );
    // The card carried what was read: the prefix choices of that reading.
    let mut prefixes = None;
    while let Ok(event) = rx.try_recv() {
        if let AgentEvent::ApprovalRequested { request } = event {
            prefixes = Some(request.facts.prefix_rules.prefixes.len());
        }
    }
    assert_eq!(prefixes, Some(2), "echo / echo read-once");
}

#[tokio::test(flavor = "current_thread")]
async fn every_reader_sees_the_wrapped_program_of_the_one_reading() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::ApproveAll));
    broker.set_can_sandbox(true);
    broker.set_rules(rules(
        "[[approval.rules]]\ncommand = [\"git\", \"push\"]\ndecision = \"deny\"\n",
    ));
    let reg = registry(broker, &["rm -rf /tmp/vigil-read-once-never"]);
    // The deny rule reads the call's runs: git behind env and -C.
    let run = reg
        .execute("run_shell", &args("env git -C . push origin HEAD"))
        .await;
    assert!(run.denied(), "{}", run.model_text);
    // The denylist reads the same runs: through sh -c.
    let run = reg
        .execute(
            "run_shell",
            &args("sh -c 'rm -rf /tmp/vigil-read-once-never'"),
        )
        .await;
    assert!(!run.ok(), "{}", run.model_text);
    assert!(run.model_text.contains("denylist"), "{}", run.model_text);
}
