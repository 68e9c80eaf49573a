//! Which words of one simple command name a file: its operands, the paths
//! inside other words (`--opt=VALUE`, `if=VALUE`, `-fPATH`, `@PATH`,
//! `REV:PATH`), the targets of its redirections, and whether its program
//! reads whole trees beneath a folder operand. [`super::secret_reads`]
//! resolves what these name.
//!
//! Pure text: it never touches the filesystem and never decides.

/// Programs that read every file beneath a folder operand when recursing.
const RECURSIVE_ALWAYS: &[&str] = &["rg", "ag", "ack", "tar", "zip", "7z", "bsdtar", "cpio"];
/// Programs that read whole trees with one of these short flags (or
/// `--recursive`, `--dereference-recursive`, `--archive`, `-d recurse`).
const RECURSIVE_WITH_FLAG: &[(&str, &str)] = &[
    ("grep", "rR"),
    ("egrep", "rR"),
    ("fgrep", "rR"),
    ("zgrep", "rR"),
    ("cp", "rRa"),
    ("scp", "r"),
    ("rsync", "ra"),
    ("diff", "r"),
];

/// Recursive searchers that read the working directory when no path is given.
pub fn searches_here_by_default(words: &[String]) -> bool {
    let program = words.first().map(String::as_str).unwrap_or_default();
    let base = vigil_shell::program_name(program);
    matches!(
        base,
        "rg" | "ag" | "ack" | "grep" | "egrep" | "fgrep" | "zgrep"
    )
}

/// A path inside a word that is not one (`-f/etc/x`, `@~/.netrc`,
/// `host:/x`): from its first `~/` or `/` on.
pub fn embedded_path(word: &str) -> Option<&str> {
    if word.starts_with('/') || word.starts_with("~/") {
        return None;
    }
    let at = word.find("~/").or_else(|| word.find('/'))?;
    Some(&word[at..])
}

/// `REV:PATH`, `host:PATH` → `PATH` (`git show HEAD:.env` reads `.env`
/// from the repository).
pub fn after_colon(word: &str) -> Option<&str> {
    word.split_once(':')
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty() && !v.starts_with("//"))
}

/// `--name=VALUE`, `if=VALUE` → `VALUE`.
pub fn option_value(word: &str) -> Option<&str> {
    word.split_once('=')
        .map(|(_, v)| v)
        .filter(|v| !v.is_empty())
}

/// Whether the command reads whole trees beneath its folder operands.
pub fn is_recursive(words: &[String]) -> bool {
    let Some(program) = words.first() else {
        return false;
    };
    let base = vigil_shell::program_name(program);
    if RECURSIVE_ALWAYS.contains(&base) {
        return true;
    }
    let Some((_, flags)) = RECURSIVE_WITH_FLAG.iter().find(|(p, _)| *p == base) else {
        return false;
    };
    words[1..].iter().any(|w| {
        matches!(
            w.as_str(),
            "--recursive" | "--dereference-recursive" | "--archive" | "recurse"
        ) || w.starts_with("--directories=recurse")
            || (w.starts_with('-') && !w.starts_with("--") && w.contains(|c| flags.contains(c)))
    })
}

/// The file a redirection reads or writes (`< f`, `2> f`, `&>> f`), or
/// `None` for a here-document, here-string or descriptor copy.
pub fn redirect_target(text: &str) -> Option<String> {
    let t = text.trim().trim_start_matches(|c: char| c.is_ascii_digit());
    if t.starts_with("<<") {
        return None;
    }
    let rest = t.trim_start_matches(['<', '>', '&', '|']).trim();
    if rest.is_empty() || (t.contains('&') && rest.chars().all(|c| c.is_ascii_digit() || c == '-'))
    {
        return None;
    }
    Some(rest.replace(['\'', '"', '\\'], ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn redirect_targets() {
        assert_eq!(redirect_target("< f").as_deref(), Some("f"));
        assert_eq!(redirect_target("2>>'x y'").as_deref(), Some("x y"));
        assert_eq!(redirect_target("&> out").as_deref(), Some("out"));
        assert_eq!(redirect_target(">&3"), None);
        assert_eq!(redirect_target("<<< word"), None);
        assert_eq!(redirect_target("<<EOF"), None);
    }

    #[test]
    fn paths_inside_words() {
        assert_eq!(option_value("--file=/x"), Some("/x"));
        assert_eq!(option_value("if=/x"), Some("/x"));
        assert_eq!(option_value("--x="), None);
        assert_eq!(embedded_path("-f/etc/x"), Some("/etc/x"));
        assert_eq!(embedded_path("@~/.netrc"), Some("~/.netrc"));
        assert_eq!(embedded_path("/abs"), None);
        assert_eq!(after_colon("HEAD:.env"), Some(".env"));
        assert_eq!(after_colon("https://x/y"), None);
    }

    #[test]
    fn recursive_readers() {
        for yes in [
            "grep -r x .",
            "grep -Rn x .",
            "rg x",
            "tar cf - .",
            "cp -a a b",
        ] {
            assert!(is_recursive(&words(yes)), "{yes}");
        }
        for no in ["grep -n x f", "ls -la", "cat -A f", "cp a b"] {
            assert!(!is_recursive(&words(no)), "{no}");
        }
    }
}
