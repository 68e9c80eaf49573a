//! Hooks the operator's organisation configures (docs/hooks.md):
//! `[[hooks.decide]]` programs or endpoints that see a gated call before
//! it is decided and answer allow / deny / ask ([`DecideHooks`]), and
//! `[[hooks.on]]` programs told about the session's life ([`lifecycle`]).
//!
//! This module asks the hooks and reports their verdicts; how a verdict
//! combines with the policy file and the approval mode is the broker's
//! (`approval/hooked.rs`): a deny anywhere wins, a hook's allow never skips
//! a deny or ask rule nor the containment a call would otherwise need. A
//! hook that fails (crash, time-out, nonsense) never allows: its
//! `on_failure` (ask, or deny) stands in for its answer. It never renders.

pub mod decide;
pub mod lifecycle;
pub mod pretooluse;
pub mod run;

use std::time::Duration;

use serde_json::Value;

use decide::{Answer, Input, Verdict};
use vigil_config::hooks::{DecideHookConfig, HookFormat, HooksConfig, OnFailure};
use vigil_protocol::approval::ApprovalRequest;
use vigil_shell::Command;

/// One configured decide hook.
#[derive(Debug, Clone)]
struct Hook {
    /// `name (file:line)`.
    label: String,
    config: DecideHookConfig,
}

/// The decide hooks of a session, in the order they are configured.
#[derive(Debug, Clone, Default)]
pub struct DecideHooks {
    hooks: Vec<Hook>,
    session_id: Option<String>,
    /// The session's `messages.jsonl` (PreToolUse's `transcript_path`).
    transcript: Option<String>,
}

impl DecideHooks {
    /// The hooks of `config` (None: none configured).
    pub fn from_config(config: &HooksConfig) -> Option<DecideHooks> {
        let hooks: Vec<Hook> = config
            .decide
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let h = h.get_ref().clone();
                let name = h
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("hooks.decide[{}]", i + 1));
                Hook {
                    label: format!("`{name}` ({})", config.decide_origin(i)),
                    config: h,
                }
            })
            .collect();
        (!hooks.is_empty()).then(|| DecideHooks {
            hooks,
            ..Default::default()
        })
    }

    /// The session the hooks are told about.
    pub fn for_session(mut self, id: Option<String>, transcript: Option<String>) -> Self {
        self.session_id = id;
        self.transcript = transcript;
        self
    }

    /// The hooks (`name (file:line)`) whose matcher takes a call of `tool`.
    pub fn matching(&self, tool: &str, command: Option<&Command>) -> Vec<String> {
        self.hooks
            .iter()
            .filter(|h| decide::matches(&h.config.matcher, tool, command))
            .map(|h| h.label.clone())
            .collect()
    }

    /// Whether some hook's matcher names a call of `tool` at all (then an
    /// ungated call of it is shown to the hooks too).
    pub fn sees_tool(&self, tool: &str) -> bool {
        self.hooks.iter().any(|h| {
            let tools = &h.config.matcher.tools;
            tools.is_empty() || tools.iter().any(|t| decide::names_tool(t, tool))
        })
    }

    /// Whether some hook matches commands of `tool` by their words (then a
    /// command whose programs cannot be told must be asked).
    pub fn guards_commands(&self, tool: &str) -> bool {
        self.hooks.iter().any(|h| {
            let m = &h.config.matcher;
            !m.command.is_empty()
                && (m.tools.is_empty() || m.tools.iter().any(|t| decide::names_tool(t, tool)))
        })
    }

    /// Ask every hook whose matcher takes the call, in order, stopping at
    /// the first deny. Empty: no hook takes it.
    pub async fn consult(
        &self,
        request: &ApprovalRequest,
        command: Option<&Command>,
        arguments: Value,
    ) -> Vec<Verdict> {
        let input = Input::of(request, command, arguments, self.session_id.clone());
        let mut verdicts = Vec::new();
        for hook in &self.hooks {
            if !decide::matches(&hook.config.matcher, &request.tool, command) {
                continue;
            }
            let verdict = self.ask(hook, &input).await;
            if verdict.failed {
                tracing::warn!("decide {}", verdict.line());
            }
            let deny = verdict.answer == Answer::Deny;
            verdicts.push(verdict);
            if deny {
                break;
            }
        }
        verdicts
    }

    async fn ask(&self, hook: &Hook, input: &Input) -> Verdict {
        let answered = self.answer(hook, input).await;
        let (answer, reason, failed) = match answered {
            Ok((answer, reason)) => (answer, reason, false),
            Err(why) => {
                let answer = match hook.config.on_failure() {
                    OnFailure::Ask => Answer::Ask,
                    OnFailure::Deny => Answer::Deny,
                };
                (answer, why, true)
            }
        };
        Verdict {
            hook: hook.label.clone(),
            answer,
            reason,
            failed,
        }
    }

    async fn answer(&self, hook: &Hook, input: &Input) -> Result<(Answer, String), String> {
        let c = &hook.config;
        let pre = c.format == HookFormat::Pretooluse;
        let body = if pre {
            pretooluse::input(input, self.transcript.clone())
        } else {
            serde_json::to_value(input).map_err(|e| e.to_string())?
        };
        let mut bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        let timeout = Duration::from_secs(c.timeout_secs);
        match (&c.command, &c.url) {
            (Some(command), _) => {
                let out = run::command(command, bytes, timeout).await?;
                if pre {
                    return pretooluse::read_exit(out.code, &out.stdout, &out.stderr);
                }
                match out.code {
                    Some(0) => decide::read_answer(&out.stdout),
                    Some(code) => Err(format!(
                        "exited with code {code}: {}",
                        decide::clip(&out.stderr)
                    )),
                    None => Err("killed by a signal".into()),
                }
            }
            (None, Some(url)) => {
                let text = run::post(url, bytes, timeout).await?;
                if pre {
                    pretooluse::read_json(&text)
                } else {
                    decide::read_answer(&text)
                }
            }
            (None, None) => Err("no command and no url".into()),
        }
    }
}
