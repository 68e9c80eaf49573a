use super::*;

fn words(text: &str) -> Vec<Vec<Option<String>>> {
    parse(text)
        .commands
        .iter()
        .map(|c| {
            c.words
                .iter()
                .map(|w| w.literal().map(str::to_string))
                .collect()
        })
        .collect()
}

fn lit(ws: &[&str]) -> Vec<Option<String>> {
    ws.iter().map(|w| Some(w.to_string())).collect()
}

#[test]
fn quotes_and_escapes_are_removed_from_literal_words() {
    assert_eq!(words("ls -la /tmp"), vec![lit(&["ls", "-la", "/tmp"])]);
    assert_eq!(words("'sudo' ls"), vec![lit(&["sudo", "ls"])]);
    assert_eq!(words("s\"u\"do ls"), vec![lit(&["sudo", "ls"])]);
    assert_eq!(words("r\\m x"), vec![lit(&["rm", "x"])]);
    assert_eq!(
        words("echo \"a\\$b\" 'c d'"),
        vec![lit(&["echo", "a$b", "c d"])]
    );
    assert_eq!(words("echo \"a\\qb\""), vec![lit(&["echo", "a\\qb"])]);
    assert_eq!(words("ls \\\n -l"), vec![lit(&["ls", "-l"])]);
}

#[test]
fn expanding_words_are_not_literal() {
    for text in [
        "echo $HOME",
        "echo ${x:=y}",
        "echo ${x@P}",
        "echo $(id)",
        "echo `id`",
        "echo $((1+2))",
        "ls *.rs",
        "ls a?",
        "ls [ab]",
        "echo {a,b}",
        "echo {1..3}",
        "ls ~",
        "ls ~root",
        "echo $'\\x2d'",
        "echo $\"hi\"",
        "echo \"$HOME\"",
        "ls @(a|b)",
    ] {
        let s = parse(text);
        assert!(s.error.is_none(), "{text}: {:?}", s.error);
        assert!(s.features.expansion, "{text}: {s:?}");
        assert!(!s.is_plain(), "{text}");
    }
}

#[test]
fn features_are_flagged() {
    let f = |t: &str| parse(t).features.clone();
    assert!(f("sleep 9 &").background);
    assert!(f("a | b").pipeline);
    assert!(f("a; b").list && f("a && b").list && f("a\nb").list);
    assert!(f("(ls)").subshell);
    assert!(f("{ ls; }").compound);
    assert!(f("if true; then ls; fi").compound);
    assert!(f("f() { ls; }").function);
    assert!(f("cat <<EOF\nx\nEOF").here_doc);
    assert!(f("cat <<< x").here_doc);
    assert!(f("diff <(ls) <(ls)").process_substitution);
    assert!(f("! ls").pipeline_prefix);
    assert!(f("time ls").pipeline_prefix);
    assert!(f("echo $(rm x)").command_substitution);
    let s = parse("echo $(sudo rm -rf /)");
    assert_eq!(s.commands.len(), 2);
    let inner = s.commands.iter().find(|c| c.program() == Some("sudo"));
    assert_eq!(inner.map(|c| c.place), Some(Place::Subshell));
}

#[test]
fn assignments_and_redirections_are_separated() {
    let s = parse("FOO=1 PATH=/x ls > /dev/null 2>&1 >&2 >out 2>>err <in");
    let c = &s.commands[0];
    assert_eq!(c.assignments, vec!["FOO=1", "PATH=/x"]);
    assert_eq!(c.words.len(), 1);
    assert_eq!(c.redirects[0], Redirect::DevNull);
    assert_eq!(c.redirects[1], Redirect::DupFd);
    assert_eq!(c.redirects[2], Redirect::DupFd);
    assert!(matches!(c.redirects[3], Redirect::Other(_)));
    assert!(matches!(c.redirects[4], Redirect::Other(_)));
    assert!(matches!(c.redirects[5], Redirect::Other(_)));
    let s = parse("ls >&FILE");
    assert!(
        matches!(s.commands[0].redirects[0], Redirect::Other(_)),
        "{s:?}"
    );
    let s = parse("ls &>/dev/null");
    assert_eq!(s.commands[0].redirects[0], Redirect::DevNull, "{s:?}");
}

#[test]
fn parse_errors_are_reported_not_panicked() {
    for text in [
        "echo 'open",
        "if then",
        "ls )",
        "a &&",
        "$(",
        "echo \"x",
        "((",
        "{",
    ] {
        let s = parse(text);
        assert!(s.error.is_some(), "{text}: {s:?}");
        assert!(s.commands.is_empty());
        assert!(!s.is_plain());
        assert!(s.not_plain_reason().unwrap().contains("parser"), "{text}");
    }
}

#[test]
fn a_plain_single_command_is_one() {
    assert!(parse("git status -s").single().is_some());
    assert!(parse("git status | cat").single().is_none());
    assert!(parse("").commands.is_empty());
}

#[test]
fn deep_parentheses_are_an_error_not_a_hang() {
    // brush-parser backtracks exponentially on nested arithmetic.
    for open in ["$((", "((", "(", "$("] {
        let text = format!(
            "echo {}1{}",
            open.repeat(30),
            ")".repeat(30 * open.matches('(').count())
        );
        let start = std::time::Instant::now();
        let script = parse(&text);
        assert!(script.error.is_some(), "{text}");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "{text}"
        );
    }
    let ok = parse("echo $(( (1 + (2 * (3 - 1))) ))");
    assert!(ok.error.is_none(), "{:?}", ok.error);
}

#[test]
fn top_level_is_what_the_reading_shell_runs_whatever_happens() {
    let top = |text: &str| -> Vec<String> {
        parse(text)
            .commands
            .iter()
            .filter(|c| c.top_level)
            .map(|c| c.assignments.join(" ") + &c.loose_words().join(" "))
            .collect()
    };
    assert_eq!(top("A=1; cd x; B=2"), ["A=1", "cd x", "B=2"]);
    assert_eq!(top("cd x && A=1 || B=2"), ["cd x"]);
    let defined = |text: &str| parse(text).functions;
    assert_eq!(
        defined("f() { :; }; function g { :; }; h() { :; } &"),
        ["f", "g"]
    );
    assert!(defined("true && f() { :; }").is_empty());
    assert!(defined("if true; then f() { :; }; fi").is_empty());
    for text in [
        "A=1 | cat",
        "{ A=1; } | cat",
        "A=1 &",
        "coproc A=1",
        "(A=1)",
        "f() { A=1; }",
        "if true; then A=1; fi",
        "! A=1",
        "echo $(A=1)",
    ] {
        assert!(
            top(text).iter().all(|c| c.starts_with("echo")),
            "{text}: {:?}",
            top(text)
        );
    }
}
