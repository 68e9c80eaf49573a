//! The table of wrapper forms: each one shows the program it runs, with
//! the words after the wrapper; what cannot be told is unresolved.

use super::{parse, program_runs};

/// Whether `text` is seen running `words` (a run starting with them).
fn runs_with(text: &str, words: &[&str]) -> bool {
    let runs = program_runs(&parse(text), text);
    runs.runs
        .iter()
        .any(|r| r.len() >= words.len() && r.iter().zip(words).all(|(a, b)| a == b))
}

fn unresolved(text: &str) -> bool {
    !program_runs(&parse(text), text).resolved()
}

#[test]
fn every_wrapper_form_shows_the_program_it_runs() {
    let rm: &[&str] = &["rm", "-f", "x"];
    for text in [
        "rm -f x",
        "env rm -f x",
        "env -i A=1 B=2 rm -f x",
        "env -u HOME -C /tmp rm -f x",
        "env --unset=HOME -- rm -f x",
        "env -S 'rm -f x'",
        "timeout 5 rm -f x",
        "timeout -s KILL -k 1 5s rm -f x",
        "timeout --signal=TERM 5 rm -f x",
        "nice rm -f x",
        "nice -n 10 rm -f x",
        "nice -5 rm -f x",
        "nohup rm -f x",
        "command rm -f x",
        "command -p rm -f x",
        "exec rm -f x",
        "exec -a name rm -f x",
        "stdbuf -oL rm -f x",
        "stdbuf -o L -e 0 rm -f x",
        "setsid rm -f x",
        "setsid -f rm -f x",
        "ionice -c 3 rm -f x",
        "chrt -b 0 rm -f x",
        "taskset 0x1 rm -f x",
        "taskset -c 0,1 rm -f x",
        "time rm -f x",
        "sudo rm -f x",
        "sudo -u x rm -f x",
        "sudo -n -E -u root -g wheel HOME=/ rm -f x",
        "sudo --user=x -- rm -f x",
        "doas rm -f x",
        "doas -u x rm -f x",
        "busybox rm -f x",
        "toybox rm -f x",
        "/usr/bin/env /bin/rm -f x",
        "xargs rm -f x",
        "xargs -0 -n 1 -P 4 rm -f x",
        "xargs -I{} rm -f x",
        "find . -name '*.o' -exec rm -f x \\;",
        "find . -execdir rm -f x {} +",
        "find . -ok rm -f x \\;",
        "find . -okdir rm -f x \\;",
        "sh -c 'rm -f x'",
        "bash -lc 'rm -f x'",
        "zsh -c 'echo; rm -f x'",
        "dash -ec 'rm -f x' name",
        "su -c 'rm -f x'",
        "su - root -c 'rm -f x'",
        "su --command='rm -f x' root",
        "eval 'rm -f x'",
        "eval rm -f x",
        "sudo env timeout 5 sh -c 'xargs rm -f x'",
        "sudo -u x env A=1 nice -n 5 bash -c \"eval 'busybox rm -f x'\"",
        "echo x | xargs -r rm -f x",
        "a=$(sh -c 'rm -f x')",
        "$HOME/bin/../../bin/rm -f x",
        "~/rm -f x",
    ] {
        assert!(
            runs_with(text, rm),
            "{text}: {:?}",
            program_runs(&parse(text), text)
        );
        assert!(
            !unresolved(text),
            "{text}: {:?}",
            program_runs(&parse(text), text)
        );
    }
}

#[test]
fn global_options_do_not_hide_the_subcommand() {
    for (text, words) in [
        ("git -C . push origin", &["git", "push", "origin"][..]),
        ("git -c a.b=c --no-pager push", &["git", "push"]),
        ("git --git-dir=.git --work-tree . push", &["git", "push"]),
        ("git -P -C /x -C y push", &["git", "push"]),
        (
            "cargo -C sub +nightly --locked publish",
            &["cargo", "publish"],
        ),
        ("make -C sub install", &["make", "install"]),
        (
            "make --directory=sub -j4 install",
            &["make", "-j4", "install"],
        ),
        ("sudo git -C . push", &["git", "push"]),
        ("git -c 'alias.x=!rm -f y' x", &["rm", "-f", "y"]),
    ] {
        assert!(
            runs_with(text, words),
            "{text}: {:?}",
            program_runs(&parse(text), text)
        );
    }
    assert!(!runs_with("git log push", &["git", "push"]));
}

#[test]
fn what_cannot_be_told_is_unresolved_and_plain_commands_are_not() {
    for text in [
        "$CMD args",
        "\"$X\" -rf /",
        "$(echo rm) -f x",
        "eval \"$X\"",
        "eval $X",
        "sh -c \"$X\"",
        "bash -c $X",
        "su -c \"$X\"",
        "env $X rm",
        "sudo $OPTS rm",
        "timeout $T rm",
        "git $SUB",
        "curl -s http://x | sh",
        "echo rm | bash",
        "/bin/$P x",
        "r*m x",
        "find . -exec $X {} \\;",
    ] {
        let runs = program_runs(&parse(text), text);
        let why = runs.why_unknown().unwrap_or_default();
        assert!(
            why.starts_with("cannot tell which program runs: "),
            "{text}: {runs:?}"
        );
    }
    for text in [
        "ls -la",
        "git status",
        "git commit -m \"$MSG\"",
        "echo $HOME",
        "grep -rn foo src | wc -l",
        "command -v rm",
        "bash build.sh",
        "python3 -c 'print(1)'",
        "cat *.txt",
    ] {
        assert!(
            !unresolved(text),
            "{text}: {:?}",
            program_runs(&parse(text), text)
        );
    }
    assert!(!runs_with("command -v rm", &["rm"]));
    assert!(!runs_with("echo 'rm -f x'", &["rm"]));
}

#[test]
fn nesting_is_bounded() {
    let mut text = "rm -f x".to_string();
    for _ in 0..20 {
        text = format!("eval {text}");
    }
    let runs = program_runs(&parse(&text), &text);
    assert!(!runs.resolved(), "{runs:?}");
    let mut text = "rm".to_string();
    for _ in 0..40 {
        text = format!("env {text}");
    }
    assert!(unresolved(&text));
    // A broken text inside `sh -c` is read on its words.
    assert!(runs_with("sh -c 'rm -f x \"unclosed'", &["rm"]));
}
