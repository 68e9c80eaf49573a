//! The last few parses, shared: a call's command is read once however many
//! checks read it. Keyed by the exact text; a handful of entries, newest
//! first, so memory stays bounded whatever the commands.

use std::sync::{Arc, Mutex};

use super::Script;

/// How many texts are kept.
const KEPT: usize = 16;

static RECENT: Mutex<Vec<(String, Arc<Script>)>> = Mutex::new(Vec::new());

/// The parse of `text`, from the recent ones or made now with `parse`.
pub(crate) fn get_or_parse(text: &str, parse: fn(&str) -> Script) -> Arc<Script> {
    if let Ok(mut recent) = RECENT.lock()
        && let Some(at) = recent.iter().position(|(t, _)| t == text)
    {
        let hit = recent.remove(at);
        let script = hit.1.clone();
        recent.insert(0, hit);
        return script;
    }
    let script = Arc::new(parse(text));
    if let Ok(mut recent) = RECENT.lock() {
        recent.insert(0, (text.to_string(), script.clone()));
        recent.truncate(KEPT);
    }
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_parsed_once_and_old_ones_make_room() {
        let a = crate::parse("echo shared-parse-probe");
        let b = crate::parse("echo shared-parse-probe");
        assert!(Arc::ptr_eq(&a, &b), "the second read is the first parse");
        for i in 0..KEPT {
            crate::parse(&format!("echo filler {i}"));
        }
        let c = crate::parse("echo shared-parse-probe");
        assert!(!Arc::ptr_eq(&a, &c), "pushed out after {KEPT} newer texts");
        assert_eq!(*a, *c);
    }
}
