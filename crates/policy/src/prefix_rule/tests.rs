use super::*;

#[test]
fn prefix_table() {
    // (prefix, command, covered)
    let table: &[(&str, &str, bool)] = &[
        ("git status", "git status", true),
        ("git status", "git status -s", true),
        ("git status", "git status\t--short", true),
        ("git status", "'git' \"status\" -s", true),
        ("git log", "git log --oneline", true),
        ("rm", "rm old.log other.log", true),
        // Word boundary.
        ("git status", "git statusx", false),
        ("git stat", "git status", false),
        ("git status", "git", false),
        // Chaining, substitution and redirection never match a prefix.
        ("git status", "git status; rm -rf /", false),
        ("git status", "git status && rm -rf /", false),
        ("git status", "git status || rm -rf /", false),
        ("git status", "git status & rm -rf /", false),
        ("git status", "git status | sh", false),
        ("git status", "git status `rm -rf /`", false),
        ("git status", "git status $(rm -rf /)", false),
        ("git status", "git status\nrm -rf /", false),
        ("git status", "git status > /etc/passwd", false),
        ("git status", "git status >> ~/.bashrc", false),
        ("git status", "git status < /dev/zero", false),
        ("git status", "git status <(rm -rf /)", false),
        ("git status", "GIT_EXTERNAL_DIFF=x git status", false),
        // Arguments smuggled after the prefix.
        ("git log", "git log --output=/tmp/x", false),
        ("git push origin", "git push origin +HEAD~1:main", false),
        ("git push origin", "git push origin main", false),
        ("git branch", "git branch -D main", false),
        ("find .", "find . -delete", false),
        ("find .", "find . -exec rm {} +", false),
        ("sed -n", "sed -n 'e rm x'", false),
        ("sed -n", "sed -n 1p f", false),
        ("rm", "rm -rf /", false),
        ("rm", "rm -- -x", false),
        ("sort", "sort -o out f", false),
        ("ls", "ls $HOME", false),
        ("ls", "ls *", false),
        // Other processes' details through /proc, however the path is
        // spelled (found by an attacker: `grep -r` walked /proc).
        ("grep -r", "grep -r secret /proc", false),
        ("cat", "cat /proc/self/../1/status", false),
        ("rm", "rm /proc/self/../1/x", false),
        ("cat", "cat /proc/loadavg", true),
        // A bad or bare code-running prefix covers nothing.
        ("", "git status", false),
        ("git ", "git status", false),
        ("git", "git log", false),
        ("env", "env ls", false),
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
fn rules_must_be_word_prefixes_of_one_plain_command() {
    assert_eq!(rule_error("git status", "git status -s"), None);
    assert_eq!(rule_error("git status -s", "git status -s"), None);
    assert!(rule_error("git stat", "git status").is_some());
    assert!(rule_error("make", "git status").is_some());
    assert!(rule_error("", "git status").is_some());
    assert!(rule_error("git status;", "git status; ls").is_some());
    assert!(rule_error("touch", "touch a && ls").is_some());
}

#[test]
fn a_bare_code_runner_is_refused_with_a_sentence() {
    for program in [
        "git", "find", "sed", "awk", "xargs", "env", "bash", "python3", "make",
    ] {
        let e = rule_error(program, &format!("{program} x")).expect(program);
        assert!(e.contains("run any code"), "{program}: {e}");
    }
    assert_eq!(rule_error("git log", "git log -3"), None);
}

#[test]
fn candidates_are_word_prefixes_shortest_first() {
    assert_eq!(
        candidates("git  status -s"),
        vec!["git status", "git  status -s"]
    );
    assert_eq!(candidates("ls; rm x"), Vec::<String>::new());
    assert_eq!(candidates("touch a && ls"), Vec::<String>::new());
    assert_eq!(candidates("touch a"), vec!["touch", "touch a"]);
}
