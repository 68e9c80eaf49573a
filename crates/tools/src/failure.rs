//! Failure classes: what kind of failure a tool call ended in, with a short
//! hint telling the model how (or whether) to retry.
//!
//! Classes are carried structurally (by [`ToolError::class`] and the
//! [`ToolError::Failed`] variant) and are never guessed from message text.
//! It also defines the canonical form of a call's arguments, by which the
//! registry recognises repeated identical failures. This module only names,
//! describes and compares; it never runs or retries anything.

use serde::{Deserialize, Serialize};

use super::ToolError;
use vigil_exec::ExecError;

/// What kind of failure a tool call ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The arguments did not fit the tool's schema or meaning.
    InvalidArguments,
    /// The tool name is not registered.
    UnknownTool,
    /// A file, directory or resource does not exist.
    NotFound,
    /// The target or a policy refused access.
    PermissionDenied,
    /// The action ran out of time.
    Timeout,
    /// The operator denied the call.
    Denied,
    /// The action is not possible on this target.
    Unsupported,
    /// The action ran and failed.
    ExecutionFailed,
    /// The same failing call was repeated and not run again.
    Suppressed,
}

impl FailureClass {
    /// The class as the model and the logs see it (`not_found`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::InvalidArguments => "invalid_arguments",
            FailureClass::UnknownTool => "unknown_tool",
            FailureClass::NotFound => "not_found",
            FailureClass::PermissionDenied => "permission_denied",
            FailureClass::Timeout => "timeout",
            FailureClass::Denied => "denied",
            FailureClass::Unsupported => "unsupported",
            FailureClass::ExecutionFailed => "execution_failed",
            FailureClass::Suppressed => "suppressed",
        }
    }

    /// One sentence on how to retry, for the model.
    pub fn hint(self) -> &'static str {
        match self {
            FailureClass::InvalidArguments => {
                "Fix the arguments to match the schema shown and call again."
            }
            FailureClass::UnknownTool => "Call one of the available tools listed instead.",
            FailureClass::NotFound => {
                "Check the path or name (list the parent directory first); do not retry unchanged."
            }
            FailureClass::PermissionDenied => {
                "Access is refused; choose another path or target, or ask the operator. Do not retry unchanged."
            }
            FailureClass::Timeout => {
                "Retry with a longer wait, or narrow the work so it finishes sooner."
            }
            FailureClass::Denied => {
                "The operator refused this call; ask them or take a different approach."
            }
            FailureClass::Unsupported => {
                "This is not possible on the current target; use another tool or approach."
            }
            FailureClass::ExecutionFailed => {
                "Read the error, change the call, and retry only if the change addresses it."
            }
            FailureClass::Suppressed => {
                "Change the arguments or use a different approach; this exact call will not be run again."
            }
        }
    }
}

impl std::fmt::Display for FailureClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ToolError {
    /// A failure of an attempted action with an explicit class.
    pub fn failed(class: FailureClass, message: impl Into<String>) -> Self {
        ToolError::Failed {
            class,
            message: message.into(),
        }
    }

    /// The failure class, decided by the variant (never by the text).
    pub fn class(&self) -> FailureClass {
        match self {
            ToolError::InvalidArguments(_) => FailureClass::InvalidArguments,
            ToolError::ExecutionFailed(_) => FailureClass::ExecutionFailed,
            ToolError::Failed { class, .. } => *class,
        }
    }
}

impl From<ExecError> for ToolError {
    fn from(e: ExecError) -> Self {
        let class = match &e {
            ExecError::Timeout { .. } => FailureClass::Timeout,
            ExecError::NotFound(_) => FailureClass::NotFound,
            ExecError::PermissionDenied(_) => FailureClass::PermissionDenied,
            ExecError::NotSupported(_) => FailureClass::Unsupported,
            ExecError::Spawn { .. } | ExecError::Io(_) | ExecError::Failed(_) => {
                FailureClass::ExecutionFailed
            }
        };
        ToolError::failed(class, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn classes_come_from_variants_not_text() {
        // A message mentioning "not found" stays execution_failed.
        let e = ToolError::ExecutionFailed("file not found".into());
        assert_eq!(e.class(), FailureClass::ExecutionFailed);
        let e = ToolError::failed(FailureClass::NotFound, "whatever");
        assert_eq!(e.class(), FailureClass::NotFound);
        assert_eq!(e.to_string(), "execution failed: whatever");
        let e: ToolError = ExecError::Timeout {
            limit: Duration::from_secs(3),
            partial: Box::default(),
        }
        .into();
        assert_eq!(e.class(), FailureClass::Timeout);
        let e: ToolError = ExecError::PermissionDenied("cannot read /x".into()).into();
        assert_eq!(e.class(), FailureClass::PermissionDenied);
    }

    #[test]
    fn every_class_has_a_name_and_hint() {
        use FailureClass::*;
        for c in [
            InvalidArguments,
            UnknownTool,
            NotFound,
            PermissionDenied,
            Timeout,
            Denied,
            Unsupported,
            ExecutionFailed,
            Suppressed,
        ] {
            assert!(!c.hint().is_empty());
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
        }
    }
}
