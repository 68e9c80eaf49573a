//! Lazy tool visibility: which tool domains (`web`, `mcp:NAME`, ...) the
//! model is shown in the current turn.
//!
//! Core tools (no domain) are always shown. Hidden domains are shown once
//! `request_tools` reveals them, from the next model round, until the turn
//! ends; blocked domains are never shown. Visibility only grows within a
//! turn: a fresh [`Visibility`] is made at every turn start. This module
//! decides what is shown and whether a call may run; it never executes a
//! tool and never puts a hidden tool's schema anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use super::{ToolDefinition, ToolRegistry};

/// Which domains the operator hid or blocked (from the config).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DomainPolicy {
    /// Hidden until requested.
    pub hidden: BTreeSet<String>,
    /// Never shown; the value says why (for `request_tools`' answer).
    pub blocked: BTreeMap<String, String>,
}

impl DomainPolicy {
    pub fn is_empty(&self) -> bool {
        self.hidden.is_empty() && self.blocked.is_empty()
    }
}

/// The visible set of one turn. Cheap to clone; clones share the state.
#[derive(Debug, Clone, Default)]
pub struct Visibility {
    hidden: Arc<Mutex<BTreeSet<String>>>,
}

impl Visibility {
    /// Everything visible (nothing hidden).
    pub fn everything() -> Self {
        Visibility::default()
    }

    /// `hidden` (which includes blocked domains) is not shown.
    pub fn hiding(hidden: impl IntoIterator<Item = String>) -> Self {
        Visibility {
            hidden: Arc::new(Mutex::new(hidden.into_iter().collect())),
        }
    }

    /// Whether tools of `domain` (`None`: core) are shown.
    pub fn is_visible(&self, domain: Option<&str>) -> bool {
        domain.is_none_or(|d| !lock(&self.hidden).contains(d))
    }

    /// Show `domain` from now on; true when it was hidden.
    pub fn reveal(&self, domain: &str) -> bool {
        lock(&self.hidden).remove(domain)
    }
}

impl ToolRegistry {
    /// A fresh visible set for a new turn: every hidden and blocked domain
    /// hidden.
    pub fn visibility(&self) -> Visibility {
        let p = self.domain_policy();
        Visibility::hiding(p.hidden.iter().chain(p.blocked.keys()).cloned())
    }

    /// The definitions of the visible tools, sorted by name.
    pub fn visible_definitions(&self, visibility: &Visibility) -> Vec<ToolDefinition> {
        self.definitions()
            .into_iter()
            .filter(|d| {
                self.get(&d.function.name)
                    .is_none_or(|t| visibility.is_visible(t.domain()))
            })
            .collect()
    }

    /// Every domain with the names of its tools, sorted.
    pub fn domains(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for name in self.names() {
            if let Some(domain) = self.get(&name).and_then(|t| t.domain()) {
                out.entry(domain.to_string()).or_default().push(name);
            }
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visibility_only_grows_and_clones_share_it() {
        let v = Visibility::hiding(["web".to_string(), "mcp:x".to_string()]);
        assert!(v.is_visible(None));
        assert!(!v.is_visible(Some("web")));
        let seen_by_tool = v.clone();
        assert!(seen_by_tool.reveal("web"));
        assert!(!seen_by_tool.reveal("web"), "already visible");
        assert!(v.is_visible(Some("web")));
        assert!(!v.is_visible(Some("mcp:x")));
        assert!(Visibility::everything().is_visible(Some("anything")));
    }
}
