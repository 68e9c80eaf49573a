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
            .or_else(|| inline_assignment(line))
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

/// A secret-sounding NAME anywhere in a line with a literal value: quoted
/// after `=` or `:` (`"password": "x…"`, `TOKEN = 'x…'`), or unquoted right
/// after `=` (`ENV DB_PASSWORD=x…`, `env A=b TOKEN=x… ./run`). A value that
/// is code (`token: &str`, `password = get()`) is not one.
fn inline_assignment(line: &str) -> Option<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while from < line.len() {
        let rest = &line[from..];
        let Some(start) = rest.find(ident) else { break };
        let len = rest[start..]
            .find(|c: char| !ident(c))
            .unwrap_or(rest.len() - start);
        let name = &rest[start..start + len];
        from += start + len;
        let upper = name.to_ascii_uppercase();
        if !SECRET_NAMES.iter().any(|s| upper.contains(s)) {
            continue;
        }
        let after = line[from..].trim_start_matches(['"', '\'']);
        let unquoted_eq = after.starts_with('=') && !after.starts_with("==");
        let spaced = after.trim_start();
        let Some(value) = spaced.strip_prefix(['=', ':']) else {
            continue;
        };
        let value = value.trim_start();
        let literal = match value.chars().next() {
            Some(q @ ('"' | '\'')) => value[1..].split(q).next().unwrap_or(""),
            Some(_) if unquoted_eq => value
                .split(|c: char| c.is_whitespace() || matches!(c, ';' | ',' | '"' | '\''))
                .next()
                .unwrap_or(""),
            _ => "",
        };
        if literal.len() >= 4 && !literal.starts_with(['$', '<', '*', '{', '%']) {
            return Some(format!("a value of `{name}`"));
        }
    }
    None
}

/// `scheme://user:password@host`, wherever on the line.
fn url(line: &str) -> Option<String> {
    line.match_indices("://").find_map(|(at, _)| {
        let rest = &line[at + 3..];
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '/')
            .unwrap_or(rest.len());
        let (userinfo, _) = rest[..end].rsplit_once('@')?;
        let (_, password) = userinfo.split_once(':')?;
        (password.len() >= 3).then(|| "a password in a URL".into())
    })
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
            // Not at the start of a line, or not the first URL on it.
            "ENV DB_PASSWORD=Hunter2Secret",
            "Run: env DB_USER=app DB_PASSWORD=Hunter2Secret ./serve",
            "{\"db\": {\"password\": \"Hunter2Secret\"}, \"port\": 5432}",
            "let api_key = \"abcd1234efgh\";",
            "Docs at http://docs.example.com; mirror: https://deploy:S3cretPass@git.example.com/p.git",
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
            "fn check(token: &str, password: String) -> bool {",
            "let password = read_password()?;",
            "if cfg.api_key == other.api_key {",
        ] {
            assert!(find(text).is_none(), "{text}");
        }
    }
}
