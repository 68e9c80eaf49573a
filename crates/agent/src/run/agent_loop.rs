//! The agent loop proper: one task takes [`AgentCommand`]s on one channel
//! and runs at most one job at a time (a turn, a retried round or a
//! compaction). Messages are queued while a job runs, a cancel drops the
//! running job, `Retry` re-runs the last failed round, `Compact` shrinks the
//! context on demand; commands for the approval broker go to
//! [`crate::run::desk`], the operator's keys to [`crate::run::pane_keys`].
//!
//! It never renders, never reads the terminal and never waits on anything
//! but the command channel and the running job.

use std::collections::VecDeque;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use crate::approval::ApprovalBroker;
use crate::run::cancel::close_dangling_calls;
use crate::run::desk;
use crate::run::pane_keys::PaneKeys;
use crate::run::shared::Shared;
use crate::run::turn::{continue_turn, run_turn};
use vigil_protocol::{AgentCommand, AgentEvent, PaneKey, TurnOutcome};

/// A running job: a turn (which ends with `TurnFinished`) or a compaction.
type Job = Pin<Box<dyn Future<Output = Option<TurnOutcome>> + Send>>;

/// The loop's state: what it shares with the jobs, where commands go, the
/// queued messages and the running job.
pub(crate) struct AgentLoop {
    shared: Arc<Shared>,
    broker: Arc<ApprovalBroker>,
    pane_keys: Option<PaneKeys>,
    queue: VecDeque<String>,
    job: Option<Job>,
    /// The running job is a turn (a cancel then closes its calls and says
    /// `TurnFinished`), not a compaction.
    job_is_turn: bool,
}

impl AgentLoop {
    pub(crate) fn new(
        shared: Arc<Shared>,
        broker: Arc<ApprovalBroker>,
        pane_keys: Option<PaneKeys>,
    ) -> Self {
        AgentLoop {
            shared,
            broker,
            pane_keys,
            queue: VecDeque::new(),
            job: None,
            job_is_turn: false,
        }
    }

    /// Take commands until `Quit` or the channel closes, then stop.
    pub(crate) async fn run(mut self, mut commands: mpsc::UnboundedReceiver<AgentCommand>) {
        loop {
            self.start_queued();
            tokio::select! {
                cmd = commands.recv() => {
                    let Some(cmd) = cmd else { break };
                    if self.on_command(cmd).is_break() {
                        break;
                    }
                }
                outcome = async {
                    match self.job.as_mut() {
                        Some(job) => job.await,
                        None => std::future::pending().await,
                    }
                } => self.on_job_done(outcome),
            }
        }
        self.stop();
    }

    /// With no job running, the next queued message starts a turn.
    fn start_queued(&mut self) {
        if self.job.is_none()
            && let Some(text) = self.queue.pop_front()
        {
            self.start(Box::pin(run_turn(self.shared.clone(), text)), true);
        }
    }

    fn start(&mut self, job: Job, is_turn: bool) {
        self.job = Some(job);
        self.job_is_turn = is_turn;
    }

    fn on_job_done(&mut self, outcome: Option<TurnOutcome>) {
        self.job = None;
        if let Some(outcome) = outcome {
            self.emit(AgentEvent::TurnFinished { outcome });
        }
    }

    /// One command; `Break` ends the loop.
    fn on_command(&mut self, cmd: AgentCommand) -> ControlFlow<()> {
        let (broker, shared) = (&self.broker, &self.shared);
        match cmd {
            AgentCommand::Quit => return ControlFlow::Break(()),
            AgentCommand::UserMessage { text } => self.on_message(text),
            AgentCommand::Approval {
                id,
                decision,
                token,
            } => desk::answer(broker, shared, id, decision, &token),
            AgentCommand::Preview { id } => desk::preview(broker, shared, id),
            AgentCommand::PaneKeys { keys } => self.on_pane_keys(keys),
            AgentCommand::RevokeRule { tool, rule, prefix } => {
                desk::revoke(broker, shared, &tool, &rule, prefix)
            }
            AgentCommand::SetPolicy { policy } => desk::set_policy(broker, policy),
            AgentCommand::RestoredRules { keep } => desk::restored_rules(broker, shared, keep),
            AgentCommand::Cancel => self.on_cancel(),
            AgentCommand::Retry => self.on_retry(),
            AgentCommand::Compact => self.on_compact(),
        }
        ControlFlow::Continue(())
    }

    /// A message is queued; it starts a turn when no job runs.
    fn on_message(&mut self, text: String) {
        if text.trim().is_empty() {
            return;
        }
        if self.job.is_some() {
            self.emit(AgentEvent::Notice {
                text: "message queued: it is sent when the current turn ends".into(),
            });
        }
        self.queue.push_back(text);
    }

    /// The operator types: never gated, never queued behind a turn.
    fn on_pane_keys(&mut self, keys: Vec<PaneKey>) {
        match &self.pane_keys {
            Some(tx) => {
                let _ = tx.send(keys);
            }
            None => self.emit(AgentEvent::Notice {
                text: "no managed tmux pane to type into: commands run as plain processes".into(),
            }),
        }
    }

    fn on_cancel(&mut self) {
        let Some(running) = self.job.take() else {
            return;
        };
        // Dropping the job stops the model stream and kills the running
        // commands (their guards kill the process groups).
        drop(running);
        if self.job_is_turn {
            close_dangling_calls(&self.shared);
            self.emit(AgentEvent::TurnFinished {
                outcome: TurnOutcome::Cancelled,
            });
        } else {
            self.emit(AgentEvent::Notice {
                text: "compaction cancelled".into(),
            });
        }
    }

    fn on_retry(&mut self) {
        if self.job.is_some() {
            self.emit(AgentEvent::Notice {
                text: "a turn is running; nothing to retry".into(),
            });
        } else if self.shared.last_failed.swap(false, Ordering::SeqCst) {
            let why = "retrying the last failed model round".to_string();
            self.start(Box::pin(continue_turn(self.shared.clone(), why)), true);
        } else {
            self.emit(AgentEvent::Notice {
                text: "the last turn did not fail; nothing to retry".into(),
            });
        }
    }

    fn on_compact(&mut self) {
        if self.job.is_some() {
            self.emit(AgentEvent::Notice {
                text: "a turn is running; it compacts by itself near the limit".into(),
            });
            return;
        }
        let s = self.shared.clone();
        let job = Box::pin(async move {
            crate::run::compact::maybe_compact(&s, true).await;
            None
        });
        self.start(job, false);
    }

    /// The end of the session: the running job is dropped (its stream stops,
    /// its commands are killed) and the key passthrough task ends with its
    /// sender. Queued messages are never sent.
    fn stop(self) {
        let AgentLoop { job, pane_keys, .. } = self;
        drop(job);
        drop(pane_keys);
    }

    fn emit(&self, event: AgentEvent) {
        self.shared.emit(event);
    }
}
