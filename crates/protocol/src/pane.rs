//! What the operator (or the model) types into a managed pane, as tmux takes
//! it: literal text or a tmux key name. Plain data with its checks; sending
//! keys is `vigil_exec::tmux::ops`'s job.

use serde::{Deserialize, Serialize};

/// One thing typed into a tmux pane: literal text (sent with
/// `send-keys -l`) or a tmux key name (`Enter`, `BSpace`, `C-c`, `Up`…).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum PaneKey {
    Text(String),
    Key(String),
}

impl PaneKey {
    /// How the keys read in the tool stream: text as typed, `⏎` for Enter,
    /// other keys as `⟨C-c⟩`.
    pub fn describe(keys: &[PaneKey]) -> String {
        let mut out = String::new();
        for k in keys {
            match k {
                PaneKey::Text(t) => out.push_str(t),
                PaneKey::Key(k) if k == "Enter" => out.push('⏎'),
                PaneKey::Key(k) => {
                    out.push('⟨');
                    out.push_str(k);
                    out.push('⟩');
                }
            }
        }
        out
    }

    /// A key name tmux can be given safely: letters, digits and `-`, as in
    /// `Enter`, `C-c`, `M-x`, `F5`, `S-Up` (literal text takes `Text`).
    pub fn valid_key_name(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 16
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    }
}

/// A tmux pane the console may mirror.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorTarget {
    /// tmux arguments that select the server (e.g. `["-L", "vigil"]`).
    pub server_args: Vec<String>,
    /// The pane target (`%3` or `session:window.pane`).
    pub pane: String,
}
