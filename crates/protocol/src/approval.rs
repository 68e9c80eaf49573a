//! What a gated call shows the operator, what the operator can answer, and
//! how a decision is recorded: the approval half of the contract.
//!
//! [`Answer`] is what a console may send; [`ApprovalDecision`] is what the
//! agent records (an answer, or a decision nobody was asked for). Data and
//! its pure helpers only: nothing here decides or runs anything.

use serde::{Deserialize, Serialize};

/// A risk level, either the model's own label or the console's estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn parse(s: &str) -> Option<Risk> {
        match s.trim().to_ascii_lowercase().as_str() {
            "low" => Some(Risk::Low),
            "medium" => Some(Risk::Medium),
            "high" => Some(Risk::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// What a gated tool call wants to do, as described by the tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateInfo {
    /// The action in one line (the command, keys, URL, path...).
    pub action: String,
    /// The model's claims, when the tool's schema carries them.
    pub model_risk: Option<Risk>,
    pub mutation: Option<bool>,
    pub privesc: Option<bool>,
    pub why: Option<String>,
    /// The argument an operator's edit replaces (e.g. `command`), if editable.
    pub editable_field: Option<String>,
}

impl GateInfo {
    /// A shell command's gate: the command, editable, with no claims.
    pub fn shell(command: &str) -> GateInfo {
        GateInfo {
            action: command.to_string(),
            model_risk: None,
            mutation: None,
            privesc: None,
            why: None,
            editable_field: Some("command".into()),
        }
    }
}

/// One pending approval as the console shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    pub id: u64,
    pub call_id: String,
    pub tool: String,
    /// Where it will run (local, tmux session, ssh host, container).
    pub target: String,
    pub gate: GateInfo,
    /// vigil's own risk estimate, computed from the action (never the
    /// model's label).
    pub estimate: Risk,
    /// Why vigil rates it as it does (the parse error for a command the
    /// shell parser rejects, the flag not on the allow-list…), shown to the
    /// operator with the request.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub estimate_reason: String,
    /// Decided without the operator (a session rule or the policy): the
    /// `ApprovalResolved` with the decision follows at once, and an answer
    /// to it would find nothing pending.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub automatic: bool,
    /// What a file-changing call would do to the file, for the diff card
    /// (None: not a file change, or the tool cannot say).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<FileChange>,
    /// What vigil found out about the call itself (never the model's
    /// word): the digest a session rule keys on, the resolved paths, every
    /// argument, the directory it will run in.
    #[serde(default, skip_serializing_if = "no_facts")]
    pub facts: Box<CallFacts>,
    /// What an answer to this card must carry back
    /// ([`crate::AgentCommand::Approval`]'s `token`): made by the agent for
    /// this request alone (128 random bits from the kernel, hex), so a client
    /// that never received the card cannot answer it. Empty only in logs
    /// written before tokens existed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub token: String,
}

#[allow(clippy::borrowed_box)] // serde hands the field as it is
fn no_facts(facts: &Box<CallFacts>) -> bool {
    facts.is_empty()
}

/// What vigil itself established about a gated call before asking: filled
/// by the registry and the tool, shown on the card, read by rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallFacts {
    /// SHA-256 (hex) of the tool's name, its full canonical arguments and
    /// the resolved paths: a session rule on a call that is not a shell
    /// command approves exactly this (see [`ApprovalRequest::session_key`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    /// The canonical paths the call writes or reads (symlinks and `..`
    /// resolved on this machine, lexically elsewhere): what `path` rules
    /// match and where the write must land.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// The paths as the model wrote them (absolute, `..` applied without
    /// following symlinks) where that differs from [`CallFacts::paths`]:
    /// `deny` and `ask` path rules match these as well.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub written: Vec<String>,
    /// Where the path the model wrote really leads, when that is not what
    /// it says: `/root/.profile (via symlink notes.txt)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<String>,
    /// Every argument in full (pretty JSON), for tools whose one-line
    /// action cannot show them all (MCP tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// The directory a command will run in (a managed pane's current
    /// directory, the process directory of plain runs), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The command would run in a managed pane's shell (whose state the
    /// throwaway view does not have).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_pane: bool,
    /// Why this call is asked when something other than the mode made it
    /// wait: under `approval = "by_effect"` the trial's effects or the rule
    /// that kept it out of the view; an `ask` rule; a hook; a command whose
    /// program cannot be told. Shown on the card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial: Option<String>,
    /// For a shell command: the session rules its card can offer, judged by
    /// the agent with the rule grammar it will apply (`vigil_policy::prefix_rule`),
    /// so a console needs no parser of its own.
    #[serde(default, skip_serializing_if = "PrefixChoices::is_empty")]
    pub prefix_rules: PrefixChoices,
    /// What each `[[hooks.decide]]` hook that saw the call answered, one
    /// line each (`hook `no-rm` (c.toml:3): deny — why`). Shown on the card.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<String>,
}

/// The prefix rules a command's card can offer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixChoices {
    /// Each prefix of the command's words as written, shortest first (the
    /// whole command is always an exact rule), with why it cannot be a rule
    /// (None: it can).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<PrefixChoice>,
    /// Why no prefix of this command can be a rule (it is not one plain
    /// command); the exact command can still be approved for the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub none_because: Option<String>,
}

/// One prefix of a command's words and whether it can be a session rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixChoice {
    pub prefix: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl PrefixChoices {
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty() && self.none_because.is_none()
    }

    /// The prefixes that can be rules, shortest first, then `command`
    /// itself (an exact rule); none when no prefix can be a rule.
    pub fn candidates(&self, command: &str) -> Vec<String> {
        if self.none_because.is_some() {
            return Vec::new();
        }
        let mut out: Vec<String> = self
            .prefixes
            .iter()
            .filter(|c| c.refused.is_none())
            .map(|c| c.prefix.clone())
            .collect();
        out.push(command.trim().to_string());
        out.dedup();
        out
    }

    /// Why the typed `text` cannot be the session rule for `command`
    /// (None: it can). Spaces between words do not matter.
    pub fn error(&self, text: &str, command: &str) -> Option<String> {
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let text = words(text);
        if text == words(command) {
            return None;
        }
        if text.is_empty() {
            return Some("the prefix is empty".into());
        }
        if let Some(why) = &self.none_because {
            return Some(why.clone());
        }
        match self.prefixes.iter().find(|c| words(&c.prefix) == text) {
            Some(choice) => choice.refused.clone(),
            None => Some("the prefix is not the start of the command's words".into()),
        }
    }
}

impl CallFacts {
    pub fn is_empty(&self) -> bool {
        *self == CallFacts::default()
    }
}

/// SHA-256 (hex) of a call: the tool, its canonical arguments (keys
/// sorted, no whitespace) and the resolved paths, each part
/// length-prefixed so no two different calls share the input.
pub fn call_digest(tool: &str, canonical_arguments: &str, paths: &[String]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(tool.as_bytes());
    part(canonical_arguments.as_bytes());
    for p in paths {
        part(p.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl ApprovalRequest {
    /// Whether the call's action is a shell command (its text is the whole
    /// call a rule can approve).
    pub fn is_command(&self) -> bool {
        is_command(&self.tool, &self.gate)
    }

    /// What an "approve for the session" rule on this call is keyed on: a
    /// shell command's text; for any other tool its action and the digest
    /// of its full arguments and resolved paths, so the rule approves that
    /// exact call and nothing that merely reads the same. `None`: the call
    /// carries no digest, and no rule can be made of it.
    pub fn session_key(&self) -> Option<String> {
        session_key(&self.tool, &self.gate, &self.facts)
    }
}

/// Whether `tool`'s action is a shell command.
pub fn is_command(tool: &str, gate: &GateInfo) -> bool {
    tool == "run_shell" || gate.editable_field.as_deref() == Some("command")
}

/// See [`ApprovalRequest::session_key`].
pub fn session_key(tool: &str, gate: &GateInfo, facts: &CallFacts) -> Option<String> {
    if is_command(tool, gate) {
        return Some(gate.action.clone());
    }
    if facts.digest.is_empty() {
        return None;
    }
    Some(format!("{} {EXACT_MARK}{}", gate.action, facts.digest))
}

/// What joins an action and its digest in a session rule's key.
pub const EXACT_MARK: &str = "· exact arguments sha256:";

/// Largest file (before or after) a preview carries as text.
pub const MAX_PREVIEW: usize = 512 * 1024;

/// What a write or edit would change, read on the target before asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FileChange {
    /// The file does not exist yet: this is its content.
    Create { path: String, content: String },
    /// A text file now holding `before` would hold `after`.
    Modify {
        path: String,
        before: String,
        after: String,
    },
    /// No diff can be shown (binary, too large, unreadable): why.
    Opaque { path: String, why: String },
}

impl FileChange {
    /// The preview of writing `after` over a file whose current bytes are
    /// `before` (None: the file does not exist).
    pub fn of_write(path: &str, before: Option<&[u8]>, after: &str) -> FileChange {
        let path = path.to_string();
        let opaque = |why: String| FileChange::Opaque {
            path: path.clone(),
            why,
        };
        if after.len() > MAX_PREVIEW {
            return opaque(format!(
                "the new content is {} bytes: too large to show",
                after.len()
            ));
        }
        match before {
            None => FileChange::Create {
                path: path.clone(),
                content: after.to_string(),
            },
            Some(b) if b.len() > MAX_PREVIEW => {
                opaque(format!("the file is {} bytes: too large to diff", b.len()))
            }
            Some(b) => match std::str::from_utf8(b) {
                Ok(text) => FileChange::Modify {
                    path: path.clone(),
                    before: text.to_string(),
                    after: after.to_string(),
                },
                Err(_) => opaque(format!(
                    "the file is binary ({} bytes): it would be replaced by {} bytes of text",
                    b.len(),
                    after.len()
                )),
            },
        }
    }
}

/// What a console may answer to a waiting approval (the `decision` of an
/// `approval` command). Decisions nobody answers ([`ApprovalDecision::ApproveUnasked`],
/// [`ApprovalDecision::TryInView`]) are not in it, so no client can send one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "value", rename_all = "snake_case")]
pub enum Answer {
    /// Run this call once.
    ApproveOnce,
    /// Run it, and approve the same action for the rest of the session.
    ApproveSession,
    /// Run it, and approve for the rest of the session every command that
    /// starts with these words (see [`PrefixChoices`]).
    ApprovePrefix(String),
    /// Run this edited action instead (the model is told).
    ApproveEdited(String),
    /// Do not run it.
    Deny,
    /// Do not run it; the reason reaches the model.
    DenyWithReason(String),
}

impl Answer {
    pub fn is_approved(&self) -> bool {
        ApprovalDecision::from(self.clone()).is_approved()
    }
}

impl From<Answer> for ApprovalDecision {
    fn from(answer: Answer) -> Self {
        match answer {
            Answer::ApproveOnce => ApprovalDecision::ApproveOnce,
            Answer::ApproveSession => ApprovalDecision::ApproveSession,
            Answer::ApprovePrefix(p) => ApprovalDecision::ApprovePrefix(p),
            Answer::ApproveEdited(a) => ApprovalDecision::ApproveEdited(a),
            Answer::Deny => ApprovalDecision::Deny,
            Answer::DenyWithReason(r) => ApprovalDecision::DenyWithReason(r),
        }
    }
}

/// How a gated call was decided, as the agent records it: an operator's
/// [`Answer`], or a decision taken without asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", content = "value", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call once.
    ApproveOnce,
    /// Run it, and approve the same action for the rest of the session.
    ApproveSession,
    /// Run it, and approve for the rest of the session every command that
    /// starts with this prefix at a word boundary and chains nothing (see
    /// `vigil_policy::prefix_rule`); vigil still asks for commands it
    /// rates high.
    ApprovePrefix(String),
    /// Run an edited action instead (the model is told).
    ApproveEdited(String),
    /// Approved without the operator: by the policy or a rule set earlier,
    /// never by an answer to this request. The text names what decided it
    /// (`by policy: auto-approve low risk`, ``by session rule `git status …` ``).
    /// Such a call runs in the kernel sandbox.
    ApproveUnasked(String),
    /// `approval = "by_effect"`: run it in the throwaway view first; the
    /// registry then reports the trial back (`tools::TrialApprover`).
    /// Never an answer to the operator.
    TryInView,
    /// Do not run it.
    Deny,
    /// Do not run it; the reason reaches the model.
    DenyWithReason(String),
}

impl ApprovalDecision {
    pub fn is_approved(&self) -> bool {
        matches!(
            self,
            ApprovalDecision::ApproveOnce
                | ApprovalDecision::ApproveSession
                | ApprovalDecision::ApprovePrefix(_)
                | ApprovalDecision::ApproveEdited(_)
                | ApprovalDecision::ApproveUnasked(_)
        )
    }

    /// What decided an unasked approval (`None` for the operator's own
    /// answers and denials).
    pub fn decided_by(&self) -> Option<&str> {
        match self {
            ApprovalDecision::ApproveUnasked(by) => Some(by),
            _ => None,
        }
    }
}
