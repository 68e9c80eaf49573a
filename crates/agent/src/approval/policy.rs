//! The approval policy the operator chose (ask, auto-approve low risk,
//! approve or deny everything, approve everything for a while): plain data
//! the broker reads. It decides nothing by itself.

/// How gated calls are decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// Ask the operator for every call.
    Ask,
    /// Approve calls that vigil itself estimates low risk (and the model
    /// does not label higher or as escalating); ask for the rest.
    AutoApproveLow,
    /// Try each shell command in the throwaway view first; its result
    /// stands when the view saw no effect, else the operator is asked with
    /// the trial on the card. Other calls are asked.
    ByEffect,
    /// Approve every call without asking (`--auto-approve`).
    ApproveAll,
    /// Deny every call without asking, with this reason for the model.
    DenyAll(String),
    /// Approve every call until this instant, then ask (the console's
    /// "approve all for N minutes").
    ApproveAllUntil(std::time::Instant),
}

impl Policy {
    /// The policy the operator picked in the console, starting now.
    pub fn from_choice(choice: vigil_protocol::ApprovalPolicy) -> Policy {
        use vigil_protocol::ApprovalPolicy as P;
        match choice {
            P::Ask => Policy::Ask,
            P::AutoApproveLow => Policy::AutoApproveLow,
            P::ByEffect => Policy::ByEffect,
            P::ApproveAll => Policy::ApproveAll,
            P::DenyAll => Policy::DenyAll("the operator's policy denies every gated call".into()),
            P::ApproveAllFor { minutes } => Policy::ApproveAllUntil(
                std::time::Instant::now() + std::time::Duration::from_secs(u64::from(minutes) * 60),
            ),
        }
    }

    /// The policy as a console shows it (a timed one with its whole
    /// minutes left, rounded up).
    pub fn choice(&self) -> vigil_protocol::ApprovalPolicy {
        use vigil_protocol::ApprovalPolicy as P;
        match self {
            Policy::Ask => P::Ask,
            Policy::AutoApproveLow => P::AutoApproveLow,
            Policy::ByEffect => P::ByEffect,
            Policy::ApproveAll => P::ApproveAll,
            Policy::DenyAll(_) => P::DenyAll,
            Policy::ApproveAllUntil(until) => {
                let left = until.saturating_duration_since(std::time::Instant::now());
                P::ApproveAllFor {
                    minutes: left.as_secs().div_ceil(60).min(u64::from(u32::MAX)) as u32,
                }
            }
        }
    }
}
