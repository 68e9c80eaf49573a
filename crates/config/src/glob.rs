//! The one glob of vigil's configuration: policy-file rules (`path`,
//! `pattern`), secret names and places, and the tool environment's
//! allow/deny names all match with [`glob_matches`], one syntax:
//!
//! - `*` any run of characters, `?` any one character; in a path (`paths`)
//!   neither matches `/`;
//! - `**` any run of characters, `/` included;
//! - every other character matches itself (no classes, no braces: a
//!   name with `[` in it means that name).
//!
//! It runs in time proportional to the pattern's length times the text's
//! and memory proportional to the text's, however many stars a pattern
//! has (no backtracking). A shell word's glob (`cat ~/.ss?/id_*`) is the
//! shell's grammar, not this one: `vigil_policy::secret_patterns` reads
//! those. It never touches the file system.

/// One piece of a pattern.
#[derive(Clone, Copy, PartialEq)]
enum Tok {
    Lit(char),
    One,
    Star,
    Deep,
}

fn tokens(glob: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(match c {
            '*' if chars.peek() == Some(&'*') => {
                chars.next();
                Tok::Deep
            }
            '*' => Tok::Star,
            '?' => Tok::One,
            c => Tok::Lit(c),
        });
    }
    out
}

/// Whether `glob` matches the whole of `text`. `paths`: `*` and `?` stop at
/// `/` (a path or a name); otherwise they match any character (a command
/// line, where `/` is just a character).
pub fn glob_matches(glob: &str, text: &str, paths: bool) -> bool {
    let toks = tokens(glob);
    let t: Vec<char> = text.chars().collect();
    let n = t.len();
    let free = |c: &char| !paths || *c != '/';
    // next[j]: the pattern after the current piece matches t[j..].
    let mut next = vec![false; n + 1];
    next[n] = true;
    let mut cur = vec![false; n + 1];
    for tok in toks.iter().rev() {
        for j in (0..=n).rev() {
            let here = t.get(j);
            cur[j] = match tok {
                Tok::Deep => next[j] || (here.is_some() && cur[j + 1]),
                Tok::Star => next[j] || (here.is_some_and(free) && cur[j + 1]),
                Tok::One => here.is_some_and(free) && next[j + 1],
                Tok::Lit(c) => here == Some(c) && next[j + 1],
            };
        }
        std::mem::swap(&mut cur, &mut next);
    }
    next[0]
}

#[cfg(test)]
mod tests {
    use super::glob_matches;

    #[test]
    fn one_syntax_for_names_paths_and_command_lines() {
        let table: &[(&str, &str, bool, bool)] = &[
            // names
            (".env.*", ".env.local", true, true),
            (".env.*", ".env", true, false),
            ("*", "x", true, true),
            ("a*b*c", "aXbYc", true, true),
            ("a*b*c", "aXc", true, false),
            ("ab*ab", "ab", true, false),
            ("AWS_*", "AWS_SECRET", true, true),
            ("id_?sa", "id_rsa", true, true),
            ("[x]", "[x]", true, true),
            ("[x]", "x", true, false),
            // paths
            ("/w/notes/*", "/w/notes/a.txt", true, true),
            ("/w/notes/*", "/w/notes/sub/a.txt", true, false),
            ("/w/notes/*", "/w/notesX/a", true, false),
            ("/w/notes/**", "/w/notes/sub/a.txt", true, true),
            ("/w/**/key", "/w/app/secrets/key", true, true),
            ("/w/*.txt", "/w/d/a.txt", true, false),
            ("/w/?", "/w//", true, false),
            ("/w/?", "/w/a", true, true),
            // command lines: `*` crosses `/`
            ("git log *", "git log -3", false, true),
            ("*", "", false, true),
            ("a?c", "abc", false, true),
            ("git log *", "git status", false, false),
            ("git", "git log", false, false),
            ("*--output*", "git log --output=x", false, true),
            ("rm *", "rm -rf /tmp/x", false, true),
            ("rm *", "rm -rf /tmp/x", true, false),
        ];
        for (glob, text, paths, want) in table {
            assert_eq!(
                glob_matches(glob, text, *paths),
                *want,
                "{glob:?} vs {text:?} (paths: {paths})"
            );
        }
    }

    #[test]
    fn many_stars_stay_fast() {
        let long = format!("/{}", "a".repeat(4000));
        let glob = "/**a**a**a**a**a**a**b";
        let started = std::time::Instant::now();
        assert!(!glob_matches(glob, &long, true));
        assert!(!glob_matches("*a*a*a*a*a*a*a*b", &long, false));
        assert!(started.elapsed() < std::time::Duration::from_secs(30));
    }
}
