use super::*;

#[test]
fn statements_split_outside_quotes_only() {
    let t = "a='x\ny'\nb=\"q\\\"\nr\"\nc=$'it\\'s'\n";
    assert_eq!(
        statements(t).unwrap(),
        vec!["a='x\ny'", "b=\"q\\\"\nr\"", "c=$'it\\'s'"]
    );
    assert_eq!(statements("a='open\n"), None);
}

#[test]
fn secrets_specials_and_read_only_are_not_replayed() {
    let dumps = Dumps {
        vars: "declare -x FOO=\"1\"\ndeclare -- BAR=\"two\nlines\"\ndeclare -r RO=\"x\"\n\
               declare -x GITHUB_TOKEN=\"ghp_x\"\ndeclare -i SECONDS=\"3\"\n"
            .into(),
        functions: "greet () \n{ \n    echo hi\n}\n".into(),
        aliases: "alias ll='ls -l'\n".into(),
        options: "set -o pipefail\nset -o monitor\nshopt -s globstar\n".into(),
        umask: "0027\n".into(),
        ..Dumps::default()
    };
    let r = replay(ShellKind::Bash, &dumps, &|_| true).unwrap();
    assert!(r.prelude.contains("declare -x FOO=\"1\""));
    assert!(r.prelude.contains("BAR=\"two\nlines\""));
    assert!(!r.prelude.contains("RO="));
    assert!(!r.prelude.contains("ghp_x"));
    assert!(!r.prelude.contains("SECONDS"));
    assert!(r.prelude.contains("greet ()"));
    assert!(r.prelude.contains("alias ll='ls -l'"));
    assert!(r.prelude.contains("set -o pipefail"));
    assert!(!r.prelude.contains("monitor"));
    assert!(r.prelude.contains("umask 0027"));
    assert_eq!(r.withheld, vec!["GITHUB_TOKEN".to_string()]);
}

#[test]
fn a_command_names_the_variables_it_assigns() {
    let names = |t: &str| assigned_names(&vigil_shell::Command::read(t));
    assert_eq!(names("X=1"), vec!["X"]);
    assert_eq!(names("export A=1 B; declare -x C='$2'"), vec!["A", "C"]);
    assert_eq!(names("cd sub && ls"), Vec::<String>::new());
    assert_eq!(names("f() { Y=2; }; X=1; export Z=3 &"), vec!["X"]);
    // A value vigil did not write: read from input or a file, another
    // variable's (perhaps withheld from the trial), a name alone (the
    // pane's own variable), a reference.
    for t in [
        "read -p 'name? ' -r N M",
        "read -a ARR",
        "printf -v OUT %s x; mapfile -t LINES",
        "X=$(cat ~/.secret)",
        "X=`cat f`",
        "N=DB; X=${!N}",
        "X=\"$DB\"",
        "export DB",
        "declare -n R=DB",
        "typeset -nx R=DB",
        "local DB=1",
    ] {
        assert!(names(t).iter().all(|n| n == "N"), "{t}: {:?}", names(t));
    }
    // Not in the pane's own shell for sure: a pipeline's member, a
    // background job, a coprocess, a group in a pipeline, a function.
    for t in [
        "export X=1 | cat",
        "X=1 | true",
        "{ X=1; } | cat",
        "X=1 &",
        "coproc X=1",
        "f() { X=1; }",
        "true && { X=1; }",
        "cd /nowhere && X=1",
        "cd /nowhere || export X=1",
        "if false; then X=1; fi",
    ] {
        assert!(names(t).is_empty(), "{t}: {:?}", names(t));
    }
    // Not an assignment in the pane: an argument, a prefix, a
    // subshell's, another shell's.
    assert!(names("echo X=1").is_empty());
    assert!(names("X=1 make").is_empty());
    assert!(names("(export X=1); echo $(Y=2)").is_empty());
    assert!(names("sh -c 'export X=1'").is_empty());
}

#[test]
fn a_command_names_the_functions_and_aliases_it_defines() {
    let names = |t: &str| defined_names(&vigil_shell::Command::read(t));
    assert_eq!(
        names("greet() { echo hi; }; alias hi='echo alias-ok' ll='ls -l'; X=1"),
        vec!["greet", "hi", "ll"]
    );
    assert!(names("alias; alias ll; type greet").is_empty());
    assert!(names("true && alias a=b; (alias c=d); alias e=f | cat").is_empty());
}

#[test]
fn only_allowed_variables_are_replayed() {
    let dumps = Dumps {
        vars: "declare -x HOME=\"/root\"\ndeclare -- MINE=\"agent\"\n\
               declare -x DATABASE_URL=\"postgres://u:p@h/db\"\ndeclare -- SSHPASS=\"pw\"\n"
            .into(),
        ..Dumps::default()
    };
    let allowed = |n: &str| n == "HOME" || n == "MINE";
    let r = replay(ShellKind::Bash, &dumps, &allowed).unwrap();
    assert!(r.prelude.contains("HOME=") && r.prelude.contains("MINE="));
    assert!(!r.prelude.contains("postgres") && !r.prelude.contains("pw"));
    assert_eq!(
        r.withheld,
        vec!["DATABASE_URL".to_string(), "SSHPASS".to_string()]
    );
    assert_eq!(
        r.exported,
        vec!["HOME".to_string(), "DATABASE_URL".to_string()]
    );
}

#[test]
fn dash_exports_and_read_only_names() {
    let dumps = Dumps {
        vars: "X='1'\nRO='2'\nOUTSIDE='db://u:p@h'\n".into(),
        exports: "export X='1'\n".into(),
        readonly: "readonly RO='2'\n".into(),
        ..Dumps::default()
    };
    let r = replay(ShellKind::Dash, &dumps, &|n| n != "OUTSIDE").unwrap();
    assert!(r.prelude.contains("X='1'\nexport X='1'"));
    assert!(!r.prelude.contains("RO="));
    assert!(!r.prelude.contains("db://"));
    assert_eq!(r.withheld, vec!["OUTSIDE".to_string()]);
}
