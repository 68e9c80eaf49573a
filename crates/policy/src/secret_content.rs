//! Text that looks like a secret, found in a command's output: what a
//! `by_effect` trial must not hand to the model unasked, whatever file or
//! variable it came from (a key file under an unmasked name, a committed
//! `.env` printed by `git show`, a password in a URL).
//!
//! Strong shapes only (key blocks, well-known token prefixes, `NAME=value`
//! with a secret-sounding name, credentials in a URL), so ordinary output
//! is not flagged. Pure: reads text, decides nothing.

/// Well-known token prefixes and the least length of what follows.
const PREFIXES: &[(&str, usize)] = &[
    ("AKIA", 16),
    ("ASIA", 16),
    ("ghp_", 30),
    ("gho_", 30),
    ("ghs_", 30),
    ("ghu_", 30),
    ("github_pat_", 30),
    ("glpat-", 20),
    ("xoxb-", 20),
    ("xoxp-", 20),
    ("xoxa-", 20),
    ("sk-ant-", 20),
    ("sk-proj-", 20),
    ("hf_", 30),
    ("npm_", 30),
];

/// Parts of a variable name that make its value a secret.
const SECRET_NAMES: &[&str] = &[
    "PASSWORD",
    "PASSWD",
    "SECRET",
    "TOKEN",
    "API_KEY",
    "APIKEY",
    "ACCESS_KEY",
    "PRIVATE_KEY",
    "CLIENT_SECRET",
];

/// What in `text` looks like a secret, in words (`None`: nothing).
pub fn find(text: &str) -> Option<String> {
    if text.contains("PRIVATE KEY-----") || text.contains("PRIVATE KEY BLOCK-----") {
        return Some("a private key block".into());
    }
    for line in text.lines() {
        if let Some(what) = token(line)
            .or_else(|| assignment(line))
            .or_else(|| url(line))
        {
            return Some(what);
        }
    }
    None
}

fn token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

fn token(line: &str) -> Option<String> {
    for (prefix, least) in PREFIXES {
        let mut from = 0;
        while let Some(at) = line[from..].find(prefix) {
            let start = from + at;
            let before_ok = line[..start]
                .chars()
                .next_back()
                .is_none_or(|c| !token_char(c));
            let rest = &line[start + prefix.len()..];
            let len = rest.chars().take_while(|c| token_char(*c)).count();
            if before_ok && len >= *least {
                return Some(format!("a token starting `{prefix}`"));
            }
            from = start + prefix.len();
        }
    }
    None
}

/// `NAME=value` / `NAME: value` with a secret-sounding NAME and a value of
/// four characters or more.
fn assignment(line: &str) -> Option<String> {
    let line = line.trim_start().trim_start_matches("export ").trim_start();
    let (name, value) = line.split_once(['=', ':'])?;
    let name = name.trim().trim_matches('"');
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let upper = name.to_ascii_uppercase();
    let value = value.trim().trim_matches(['"', '\'']);
    let secret = SECRET_NAMES.iter().any(|s| upper.contains(s));
    (secret && value.len() >= 4 && !value.starts_with(['$', '<', '*']))
        .then(|| format!("a value of `{name}`"))
}

/// `scheme://user:password@host`.
fn url(line: &str) -> Option<String> {
    let at = line.find("://")?;
    let rest = &line[at + 3..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '/')
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, password) = userinfo.split_once(':')?;
    (password.len() >= 3).then(|| "a password in a URL".into())
}

#[cfg(test)]
mod tests {
    use super::find;

    #[test]
    fn secret_shapes_are_found() {
        for text in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\nabc",
            "key = AKIAIOSFODNN7EXAMPLE",
            "export GITHUB_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyz",
            "DB_PASSWORD=hunter22",
            "origin  https://bob:s3cr3t@github.com/x/y (fetch)",
            "API_KEY: \"abcd1234\"",
        ] {
            assert!(find(text).is_some(), "{text}");
        }
    }

    #[test]
    fn ordinary_output_is_not_flagged() {
        for text in [
            "total 12\ndrwxr-xr-x 2 root root 4096 src",
            "fn main() { println!(\"hi\"); }",
            "PASSWORD=\nTOKEN=$TOKEN",
            "see https://github.com/x/y for details",
            "AKIA is a prefix",
            "tokens: 3",
            "Author: Alice Example <alice@example.com>",
        ] {
            assert!(find(text).is_none(), "{text}");
        }
    }
}
