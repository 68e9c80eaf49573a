//! Reading a session back for `vigil resume`: the conversation as the model
//! must see it, the tool history, the standing approvals, and the calls that
//! were interrupted when the session stopped (crash, `kill -9`).
//!
//! The conversation is repaired so the next request is valid: each
//! assistant message with tool calls is followed by exactly one result per
//! call, in the model's order; a call without a recorded result gets a stub
//! saying it was interrupted. This module only reads files; it never writes
//! or contacts anything.

use std::collections::HashMap;

use crate::model::types::{ChatMessage, Role};
use crate::record::session::{
    EVENTS_FILE, EventLine, MESSAGES_FILE, MessageLine, SessionError, SessionStore, read_lines,
};
use vigil_protocol::{AgentEvent, ApprovalDecision, HistoryEntry, ToolRecord};

/// A session as read back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Restored {
    pub id: String,
    /// The repaired conversation (including the recorded system prompt).
    pub messages: Vec<ChatMessage>,
    /// The stub results added for interrupted calls (to append to the file).
    pub stubs: Vec<ChatMessage>,
    pub tools: Vec<ToolRecord>,
    pub standing: Vec<(String, String)>,
    /// `(tool, prefix)` session rules.
    pub prefixes: Vec<(String, String)>,
    pub interrupted: Vec<ToolRecord>,
}

/// What an interrupted call's result says to the model.
pub const INTERRUPTED: &str = "Tool error: vigil stopped (the process ended) before this call \
finished; its outcome is unknown. Check the machine's state before assuming anything.";

impl Restored {
    pub fn load(store: &SessionStore, id: &str) -> Result<Restored, SessionError> {
        let dir = store.dir_of(id);
        if !dir.join(crate::record::session::META_FILE).exists() {
            return Err(SessionError::NotFound(id.to_string()));
        }
        let events: Vec<EventLine> = read_lines(&dir.join(EVENTS_FILE));
        let raw: Vec<ChatMessage> = read_lines::<MessageLine>(&dir.join(MESSAGES_FILE))
            .into_iter()
            .map(|l| l.message)
            .collect();
        let (tools, Rules { standing, prefixes }) = history_from_events(&events);
        let mut restored = Restored {
            id: id.to_string(),
            tools,
            standing,
            prefixes,
            ..Restored::default()
        };
        restored.repair(raw);
        Ok(restored)
    }

    fn repair(&mut self, raw: Vec<ChatMessage>) {
        let mut i = 0;
        while i < raw.len() {
            let msg = &raw[i];
            i += 1;
            if msg.role == Role::Tool {
                // A result with no call before it: drop it.
                continue;
            }
            self.messages.push(msg.clone());
            if msg.role != Role::Assistant || msg.tool_calls.is_empty() {
                continue;
            }
            let mut results: HashMap<String, ChatMessage> = HashMap::new();
            while i < raw.len() && raw[i].role == Role::Tool {
                if let Some(id) = raw[i].tool_call_id.clone() {
                    results.entry(id).or_insert_with(|| raw[i].clone());
                }
                i += 1;
            }
            for call in &msg.tool_calls {
                match results.remove(&call.id) {
                    Some(result) => self.messages.push(result),
                    None => {
                        let stub = ChatMessage::tool(call.id.clone(), INTERRUPTED);
                        self.messages.push(stub.clone());
                        self.stubs.push(stub);
                        let record = self
                            .tools
                            .iter()
                            .find(|t| t.call_id == call.id)
                            .cloned()
                            .unwrap_or(ToolRecord {
                                call_id: call.id.clone(),
                                name: call.function.name.clone(),
                                arguments: call.function.arguments.clone(),
                                started: false,
                                summary: None,
                                decided: None,
                            });
                        self.interrupted.push(record);
                    }
                }
            }
        }
    }

    /// The conversation for the console (system prompt left out).
    pub fn history(&self) -> Vec<HistoryEntry> {
        self.messages
            .iter()
            .filter(|m| m.role != Role::System)
            .map(|m| HistoryEntry {
                role: match m.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                    Role::Tool => "tool",
                    Role::System => "system",
                }
                .to_string(),
                text: m.content.clone(),
                call_id: m.tool_call_id.clone(),
            })
            .collect()
    }

    /// The event the console gets on resume.
    pub fn event(&self) -> AgentEvent {
        AgentEvent::SessionRestored {
            id: self.id.clone(),
            history: self.history(),
            tools: self.tools.clone(),
            standing_approvals: self.standing.clone(),
            standing_prefixes: self.prefixes.clone(),
            interrupted: self.interrupted.clone(),
        }
    }
}

/// The session's approval rules: exact `(tool, action)` pairs and
/// `(tool, prefix)` rules, each in the order first approved.
#[derive(Default)]
struct Rules {
    standing: Vec<(String, String)>,
    prefixes: Vec<(String, String)>,
}

fn add_new(list: &mut Vec<(String, String)>, pair: (String, String)) {
    if !list.contains(&pair) {
        list.push(pair);
    }
}

/// Tool records and approval rules from the event log.
fn history_from_events(events: &[EventLine]) -> (Vec<ToolRecord>, Rules) {
    let mut tools: Vec<ToolRecord> = Vec::new();
    let mut requests: HashMap<u64, (String, String, Option<String>)> = HashMap::new();
    let mut calls: HashMap<u64, String> = HashMap::new();
    let mut rules = Rules::default();
    for line in events {
        match &line.event {
            AgentEvent::ToolCallRequested {
                call_id,
                name,
                arguments,
            } => tools.push(ToolRecord {
                call_id: call_id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
                started: false,
                summary: None,
                decided: None,
            }),
            AgentEvent::ToolStarted { call_id, .. } => {
                if let Some(t) = tools.iter_mut().rev().find(|t| &t.call_id == call_id) {
                    t.started = true;
                }
            }
            AgentEvent::ToolCompleted {
                call_id, summary, ..
            } => {
                if let Some(t) = tools.iter_mut().rev().find(|t| &t.call_id == call_id) {
                    t.summary = Some(summary.clone());
                }
            }
            AgentEvent::ToolCancelled { call_id, .. } => {
                if let Some(t) = tools.iter_mut().rev().find(|t| &t.call_id == call_id) {
                    t.summary = Some(vigil_protocol::ToolSummary::cancelled());
                }
            }
            AgentEvent::ApprovalRequested { request } => {
                calls.insert(request.id, request.call_id.clone());
                requests.insert(
                    request.id,
                    (
                        request.tool.clone(),
                        request.gate.action.clone(),
                        request.session_key(),
                    ),
                );
            }
            AgentEvent::ApprovalResolved {
                id,
                decision,
                decided_by,
                previewed,
                ..
            } => {
                let call = calls.get(id);
                if let Some(t) = tools.iter_mut().rev().find(|t| Some(&t.call_id) == call) {
                    t.decided = Some(decided_by.record(decision, *previewed));
                }
                let Some((tool, action, key)) = requests.get(id) else {
                    continue;
                };
                match decision {
                    // The broker keys an exact rule as the request does (a
                    // file or MCP call by its full arguments); a call with
                    // no key made no rule.
                    ApprovalDecision::ApproveSession => {
                        if let Some(key) = key {
                            add_new(&mut rules.standing, (tool.clone(), key.clone()));
                        }
                    }
                    ApprovalDecision::ApprovePrefix(p) if p == action => {
                        if let Some(key) = key {
                            add_new(&mut rules.standing, (tool.clone(), key.clone()));
                        }
                    }
                    // The broker made a rule only of a valid prefix.
                    ApprovalDecision::ApprovePrefix(p)
                        if vigil_policy::prefix_rule::rule_error(p, action).is_none() =>
                    {
                        add_new(&mut rules.prefixes, (tool.clone(), p.clone()));
                    }
                    _ => {}
                }
            }
            // A rule revoked later is gone: the latest list wins.
            AgentEvent::SessionRules { exact, prefixes } => {
                rules.standing = exact.clone();
                rules.prefixes = prefixes.clone();
            }
            AgentEvent::SessionRestored {
                standing_approvals,
                standing_prefixes,
                ..
            } => {
                for pair in standing_approvals {
                    add_new(&mut rules.standing, pair.clone());
                }
                for pair in standing_prefixes {
                    add_new(&mut rules.prefixes, pair.clone());
                }
            }
            _ => {}
        }
    }
    (tools, rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::types::{FunctionCall, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "time".into(),
                arguments: "{}".into(),
            },
        }
    }

    #[test]
    fn results_are_reordered_and_missing_ones_stubbed() {
        let mut r = Restored::default();
        r.repair(vec![
            ChatMessage::system("s"),
            ChatMessage::user("u"),
            ChatMessage::assistant("", vec![call("a"), call("b"), call("c")]),
            ChatMessage::tool("c", "C"),
            ChatMessage::tool("a", "A"),
        ]);
        let ids: Vec<_> = r.messages[3..]
            .iter()
            .map(|m| (m.tool_call_id.clone().unwrap(), m.content.clone()))
            .collect();
        assert_eq!(ids[0], ("a".into(), "A".into()));
        assert_eq!(ids[1].0, "b");
        assert_eq!(ids[1].1, INTERRUPTED);
        assert_eq!(ids[2], ("c".into(), "C".into()));
        assert_eq!(r.interrupted.len(), 1);
        assert_eq!(r.interrupted[0].call_id, "b");
        assert_eq!(r.stubs.len(), 1);
        assert_eq!(r.history().len(), 5);
    }

    #[test]
    fn prefix_rules_come_back_from_the_log_and_old_logs_still_read() {
        use vigil_protocol::approval::{ApprovalRequest, GateInfo, Risk};
        let request = |id: u64, action: &str| EventLine {
            at_ms: 0,
            event: AgentEvent::ApprovalRequested {
                request: ApprovalRequest {
                    id,
                    call_id: format!("c{id}"),
                    tool: "run_shell".into(),
                    target: "local".into(),
                    gate: GateInfo {
                        action: action.into(),
                        model_risk: None,
                        mutation: None,
                        privesc: None,
                        why: None,
                        editable_field: Some("command".into()),
                    },
                    estimate: Risk::Medium,
                    estimate_reason: String::new(),
                    automatic: false,
                    change: None,
                    token: String::new(),
                    facts: Default::default(),
                },
            },
        };
        let resolved = |id: u64, decision: ApprovalDecision| EventLine {
            at_ms: 0,
            event: AgentEvent::ApprovalResolved {
                id,
                decision,
                decided_by: Default::default(),
                previewed: false,
                answered_by: None,
            },
        };
        let events = vec![
            request(1, "git status -s"),
            resolved(1, ApprovalDecision::ApprovePrefix("git status".into())),
            request(2, "make all"),
            resolved(2, ApprovalDecision::ApprovePrefix("make all".into())),
            request(3, "ls x"),
            resolved(3, ApprovalDecision::ApprovePrefix("cat".into())),
        ];
        let (_, rules) = history_from_events(&events);
        assert_eq!(
            rules.prefixes,
            vec![("run_shell".into(), "git status".into())]
        );
        assert_eq!(
            rules.standing,
            vec![("run_shell".into(), "make all".into())]
        );
        // Each gated call keeps how it was decided.
        let mut with_calls = vec![EventLine {
            at_ms: 0,
            event: AgentEvent::ToolCallRequested {
                call_id: "c1".into(),
                name: "run_shell".into(),
                arguments: "{}".into(),
            },
        }];
        with_calls.extend(events[..2].iter().cloned());
        let (tools, _) = history_from_events(&with_calls);
        assert_eq!(
            tools[0].decided.as_deref(),
            Some("approved by operator · rule `git status …` added")
        );
        // A SessionRestored line written before prefix rules existed.
        let old = r#"{"at_ms":1,"event":{"type":"session_restored","id":"s","history":[],"tools":[],"standing_approvals":[["run_shell","ls"]],"interrupted":[]}}"#;
        let line: EventLine = serde_json::from_str(old).expect("old line parses");
        let (_, rules) = history_from_events(&[line]);
        assert_eq!(rules.standing, vec![("run_shell".into(), "ls".into())]);
        assert!(rules.prefixes.is_empty());
    }

    #[test]
    fn a_write_rule_comes_back_keyed_on_its_digest_and_a_keyless_one_not_at_all() {
        use vigil_protocol::approval::{ApprovalRequest, CallFacts, EXACT_MARK, GateInfo, Risk};
        let request = |id: u64, digest: &str| EventLine {
            at_ms: 0,
            event: AgentEvent::ApprovalRequested {
                request: ApprovalRequest {
                    id,
                    call_id: format!("c{id}"),
                    tool: "write_file".into(),
                    target: "local".into(),
                    gate: GateInfo {
                        action: "write /w/a (5 bytes)".into(),
                        model_risk: None,
                        mutation: Some(true),
                        privesc: None,
                        why: None,
                        editable_field: None,
                    },
                    estimate: Risk::Medium,
                    estimate_reason: String::new(),
                    automatic: false,
                    change: None,
                    token: String::new(),
                    facts: Box::new(CallFacts {
                        digest: digest.into(),
                        ..Default::default()
                    }),
                },
            },
        };
        let session = |id: u64| EventLine {
            at_ms: 0,
            event: AgentEvent::ApprovalResolved {
                id,
                decision: ApprovalDecision::ApproveSession,
                decided_by: Default::default(),
                previewed: false,
                answered_by: None,
            },
        };
        // A log written before digests: the rule would cover any write
        // with that summary, so it does not come back.
        let events = vec![request(1, "ab12"), session(1), request(2, ""), session(2)];
        let (_, rules) = history_from_events(&events);
        assert_eq!(
            rules.standing,
            vec![(
                "write_file".into(),
                format!("write /w/a (5 bytes) {EXACT_MARK}ab12")
            )]
        );
    }
}
