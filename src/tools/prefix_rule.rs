//! Session prefix rules: which shell commands a prefix the operator approved
//! ("approve `git status` and whatever follows it for the session") covers.
//!
//! A prefix covers a command only when the command starts with it at a word
//! boundary and the command chains, substitutes or redirects nothing (no
//! `;`, `&`, `|`, backtick, `$(`, `<`, `>` or line break anywhere in it, quoted
//! or not: this module does not parse shell quoting, so it refuses instead).
//! A command the operator approved exactly is matched elsewhere, by equality.
//!
//! It only compares text; it never decides on its own (the approval broker
//! also asks for anything vigil rates high) and never runs anything.

/// Characters that let a command do more than its first program: chaining
/// (`;`, `&`, `|`, line breaks), command substitution (backtick; `$(` is
/// caught by `(`) and redirection (`<`, `>`).
const CHAINING: &[char] = &[';', '&', '|', '`', '<', '>', '\n', '\r', '('];

/// Whether `command` contains anything that could run or redirect beyond the
/// first program.
pub fn chains(command: &str) -> bool {
    command.contains(CHAINING)
}

/// Whether the prefix rule `prefix` covers `command`.
pub fn covers(prefix: &str, command: &str) -> bool {
    if prefix_error(prefix).is_some() || chains(command) {
        return false;
    }
    match command.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with([' ', '\t']),
        None => false,
    }
}

/// Why `prefix` cannot be a session rule for `command`, or `None` when it
/// can (it must be a word-boundary prefix of the command that chains
/// nothing itself).
pub fn rule_error(prefix: &str, command: &str) -> Option<String> {
    if let Some(e) = prefix_error(prefix) {
        return Some(e);
    }
    match command.strip_prefix(prefix) {
        Some(rest) if rest.is_empty() || rest.starts_with([' ', '\t']) => None,
        Some(_) => Some("the prefix must end at a word boundary of the command".into()),
        None => Some("the text is not the start of the command".into()),
    }
}

fn prefix_error(prefix: &str) -> Option<String> {
    if prefix.trim().is_empty() {
        return Some("the prefix is empty".into());
    }
    if prefix != prefix.trim() {
        return Some("the prefix must not start or end with a space".into());
    }
    if chains(prefix) {
        return Some("a prefix cannot contain ; & | ` $( < > or a line break".into());
    }
    None
}

/// The word-boundary prefixes of `command` a rule may use, shortest first
/// (empty when the command chains before its second word).
pub fn candidates(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_word = false;
    for (i, c) in command.char_indices() {
        let space = c == ' ' || c == '\t';
        if space && in_word {
            out.push(command[..i].to_string());
        }
        in_word = !space;
    }
    if in_word {
        out.push(command.to_string());
    }
    out.retain(|p| rule_error(p, command).is_none());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_table() {
        // (prefix, command, covered)
        let table: &[(&str, &str, bool)] = &[
            ("git status", "git status", true),
            ("git status", "git status -s", true),
            ("git status", "git status\t--short", true),
            ("git", "git log --oneline", true),
            // Word boundary.
            ("git status", "git statusx", false),
            ("git stat", "git status", false),
            ("git status", "git", false),
            ("git status", " git status", false),
            // Chaining, substitution and redirection never match a prefix.
            ("git status", "git status; rm -rf /", false),
            ("git status", "git status ; rm -rf /", false),
            ("git status", "git status && rm -rf /", false),
            ("git status", "git status || rm -rf /", false),
            ("git status", "git status & rm -rf /", false),
            ("git status", "git status | sh", false),
            ("git status", "git status `rm -rf /`", false),
            ("git status", "git status $(rm -rf /)", false),
            ("git status", "git status\nrm -rf /", false),
            ("git status", "git status\r\nrm -rf /", false),
            ("git status", "git status > /etc/passwd", false),
            ("git status", "git status >> ~/.bashrc", false),
            ("git status", "git status < /dev/zero", false),
            ("git status", "git status <(rm -rf /)", false),
            ("git status", "git status 'a;b'", false),
            // A bad prefix covers nothing.
            ("", "git status", false),
            ("git ", "git status", false),
            ("git;", "git; rm -rf /", false),
        ];
        for (prefix, command, want) in table {
            assert_eq!(
                covers(prefix, command),
                *want,
                "covers({prefix:?}, {command:?})"
            );
        }
    }

    #[test]
    fn rules_must_be_word_prefixes_that_chain_nothing() {
        assert_eq!(rule_error("git status", "git status -s"), None);
        assert_eq!(rule_error("git status -s", "git status -s"), None);
        assert!(rule_error("git stat", "git status").is_some());
        assert!(rule_error("make", "git status").is_some());
        assert!(rule_error("", "git status").is_some());
        assert!(rule_error("git status;", "git status; ls").is_some());
    }

    #[test]
    fn candidates_are_word_prefixes_shortest_first() {
        assert_eq!(
            candidates("git  status -s"),
            vec!["git", "git  status", "git  status -s"]
        );
        assert_eq!(candidates("ls; rm x"), Vec::<String>::new());
        assert_eq!(candidates("touch a && ls"), vec!["touch", "touch a"]);
    }
}
