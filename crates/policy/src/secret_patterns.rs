//! Patterns that might name a secret place, compared with the places
//! without touching any file: shell globs over one name, brace expansions,
//! and words that still expand (`$D/.env`, `~op/.netrc`) whose literal parts
//! are enough to tell. [`super::secret_reads`] uses them for operands it
//! cannot resolve to one path.
//!
//! Matching is linear in the pattern and the name (no backtracking blow-up
//! on hostile `*a*a*a…` text), and a brace word yields at most
//! [`MAX_BRACES`] alternatives.

use std::path::{Component, Path};

use vigil_config::secrets::{SecretPlaces, glob_name};

/// Most alternatives one brace word is expanded into (the rest is treated
/// as a glob).
pub const MAX_BRACES: usize = 64;

/// A word that still expands: the secret entry its literal parts reach, and
/// whether surely (`true`) or possibly. A literal component matching a name
/// entry (`$D/.env`) is sure; a glob component, or literal components that
/// spell a home place's tail after an unknown start (`~op/.config/gh`),
/// possible.
pub fn opaque_entry(
    word: &str,
    places: &SecretPlaces,
    home: Option<&Path>,
) -> Option<(String, bool)> {
    let parts: Vec<&str> = word.split('/').collect();
    let by_name = parts.iter().find_map(|part| {
        if part.contains(['$', '`']) || part.is_empty() {
            return None;
        }
        let glob = part.contains(['*', '?', '[']);
        places.names().find_map(|name| {
            let sure = !glob && glob_name(name, part);
            let may = glob && (shell_glob(part, name) || shell_glob(name, part));
            (sure || may).then(|| (name.to_string(), sure))
        })
    });
    by_name.or_else(|| home_tail(&parts, places, home?).map(|e| (e, false)))
}

/// A place under `home` whose path below it appears in `parts` as a run of
/// components (what `~user/…` or `$X/…` would lead to if it were home).
fn home_tail(parts: &[&str], places: &SecretPlaces, home: &Path) -> Option<String> {
    places.roots().find_map(|(entry, root)| {
        let rel = names_of(root?.strip_prefix(home).ok()?);
        let found = !rel.is_empty()
            && parts
                .windows(rel.len())
                .any(|w| w.iter().zip(&rel).all(|(p, r)| *p == r || shell_glob(p, r)));
        found.then(|| entry.to_string())
    })
}

/// The names of `p`'s normal components.
pub fn names_of(p: &Path) -> Vec<String> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// Whether a pattern's names could match `root` or a path beneath it.
pub fn pattern_reaches(pattern: &[String], root: &[String]) -> bool {
    pattern.len() >= root.len()
        && pattern
            .iter()
            .zip(root)
            .all(|(p, r)| p == r || shell_glob(p, r))
}

/// The words a brace expansion makes of `word` (`a{b,c}d` → `abd`, `acd`;
/// a sequence `{1..9}` becomes `*`), at most [`MAX_BRACES`]; a word
/// without braces is itself.
pub fn braces(word: &str) -> Vec<String> {
    let mut done = Vec::new();
    let mut pending = vec![word.to_string()];
    while let Some(w) = pending.pop() {
        match first_group(&w) {
            None => done.push(w),
            Some((open, close, alternatives)) => {
                if done.len() + pending.len() + alternatives.len() > MAX_BRACES {
                    done.push(flattened(&w));
                    continue;
                }
                for alt in alternatives {
                    pending.push(format!("{}{alt}{}", &w[..open], &w[close + 1..]));
                }
            }
        }
    }
    done
}

/// `w` with every group that expands turned into `*`.
fn flattened(w: &str) -> String {
    let mut w = w.to_string();
    while let Some((open, close, _)) = first_group(&w) {
        w = format!("{}*{}", &w[..open], &w[close + 1..]);
    }
    w
}

/// The first `{…}` group that expands: its byte range and alternatives.
fn first_group(w: &str) -> Option<(usize, usize, Vec<String>)> {
    let bytes = w.as_bytes();
    for open in (0..bytes.len()).filter(|i| bytes[*i] == b'{') {
        let mut depth = 0;
        let mut cuts = Vec::new();
        for (i, b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        let inner = &w[open + 1..i];
                        if !cuts.is_empty() {
                            let mut alts = Vec::new();
                            let mut from = open + 1;
                            for c in cuts.iter().chain(std::iter::once(&i)) {
                                alts.push(w[from..*c].to_string());
                                from = c + 1;
                            }
                            return Some((open, i, alts));
                        }
                        if inner.contains("..") {
                            return Some((open, i, vec!["*".into()]));
                        }
                        break;
                    }
                }
                b',' if depth == 1 => cuts.push(i),
                _ => {}
            }
        }
    }
    None
}

/// One piece of a glob.
#[derive(Clone, Copy, PartialEq)]
enum Piece {
    Star,
    /// `?` or a `[…]` class: any one character.
    One,
    Char(char),
}

fn pieces(pattern: &str) -> Vec<Piece> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => out.push(Piece::Star),
            '?' => out.push(Piece::One),
            '[' => match chars[i + 1..].iter().position(|c| *c == ']') {
                Some(end) => {
                    out.push(Piece::One);
                    i += end + 1;
                }
                None => out.push(Piece::Char('[')),
            },
            c => out.push(Piece::Char(c)),
        }
        i += 1;
    }
    out
}

/// A shell glob over one name: `*`, `?`, `[…]` (any one character); a
/// leading `.` is only matched by a pattern that starts with one.
pub fn shell_glob(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let p = pieces(pattern);
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match p.get(pi) {
            Some(Piece::Star) => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(Piece::One) => {
                pi += 1;
                ni += 1;
            }
            Some(Piece::Char(c)) if *c == n[ni] => {
                pi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|x| *x == Piece::Star)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_one_name_in_linear_time() {
        assert!(shell_glob(".ss*", ".ssh"));
        assert!(!shell_glob("*", ".ssh"));
        assert!(shell_glob("id_?d25519", "id_ed25519"));
        assert!(shell_glob("[.]env", "xenv"));
        assert!(!shell_glob("*.md", ".env"));
        assert!(shell_glob(".env*", ".env.*"));
        assert!(shell_glob("a*b*c", "aXbYc"));
        assert!(!shell_glob("a*b*c", "aXbY"));
        let hostile = format!("{}b", "*a".repeat(40));
        let name = "a".repeat(200);
        let start = std::time::Instant::now();
        assert!(!shell_glob(&hostile, &name));
        // Backtracking would take longer than the universe's age; linear
        // is microseconds. The bound only catches the former.
        assert!(start.elapsed() < std::time::Duration::from_secs(30));
    }

    #[test]
    fn braces_expand_and_stay_bounded() {
        let mut got = braces("~/.{ssh,aws}/{id,x}");
        got.sort();
        assert_eq!(got, ["~/.aws/id", "~/.aws/x", "~/.ssh/id", "~/.ssh/x"]);
        assert_eq!(braces("a{1..9}b"), ["a*b"]);
        assert_eq!(braces("plain{x}"), ["plain{x}"]);
        let many = "{a,b}".repeat(12);
        let got = braces(&many);
        assert!(got.len() <= MAX_BRACES, "{}", got.len());
        assert!(got.iter().all(|w| !w.contains('{')), "{got:?}");
    }
}
