use super::*;
use vigil_shell::parse;

fn hooked(text: &str) -> bool {
    hook(&parse(text)).is_some()
}

#[test]
fn state_that_runs_code_later_is_asked() {
    for t in [
        "PROMPT_COMMAND='curl x|sh'",
        "export PROMPT_COMMAND=x",
        "trap 'rm -rf ~' EXIT",
        "PS1='$(id)'",
        "export BASH_ENV=/tmp/x",
        "precmd() { touch /tmp/x; }",
        "function printf { :; }",
        "alias tail='rm -rf'",
        "alias -g X=y",
        "set -o monitor",
        "set -e",
        "source ./env.sh",
        "export PATH=/tmp:$PATH",
        "declare -x LD_PRELOAD=/tmp/x.so",
        "precmd_functions+=(f)",
        "readonly __vigil_rc",
        "functions[ls]='rm -rf ~'",
        "aliases[ll]='rm -rf ~'",
        "NULLCMD='rm -rf ~'",
        "exit",
    ] {
        assert!(hooked(t), "{t}");
    }
}

#[test]
fn ordinary_state_changes_are_not() {
    for t in [
        "cd sub",
        "export FOO=1",
        "X=1",
        "alias ll='ls -la'",
        "greet() { echo hi; }",
        "set -o pipefail",
        "shopt -s globstar",
        "unset FOO",
        "echo $FOO",
        "set -- a b",
    ] {
        assert!(!hooked(t), "{t}");
    }
}

#[test]
fn only_pure_state_changes_run_for_real() {
    for t in [
        "cd sub",
        "export A=1; cd ..",
        "X=1",
        "alias ll='ls -l'",
        "cd $HOME/x",
    ] {
        assert!(state_only(&parse(t)), "{t}");
    }
    for t in [
        "cd sub && make",
        "cd $(mktemp -d)",
        "ls",
        "(cd sub)",
        "export A=1 | cat",
        "cd sub > /tmp/x",
        // What prints the pane's state into the pane (whose output
        // is the model's), a name alone, a reference.
        "export -p",
        "export",
        "set",
        "declare -p DB",
        "declare -x",
        "typeset DB",
        "readonly",
        "alias",
        "alias ll",
        "set -o",
        "shopt",
        "export DB",
        "declare -n R=DB",
        "export -n X=1",
        // What reads a variable the text does not name (withheld
        // from the trial, there in the pane).
        "N=DB; cd ${!N}",
        "cd \"${!N}\"x",
        "cd ${(P)N}",
        "X=${!N}",
        "cd \"it's ${!N}\"",
        "cd $((N))",
        "X=`id`",
        "cd $'\\x41'",
    ] {
        assert!(!state_only(&parse(t)), "{t}");
    }
    for t in [
        "cd \"$HOME/x\"",
        "cd ${HOME}/x",
        "cd 'a$b'",
        "export A=1 B=$HOME",
        "declare -x A=1",
        "set -x",
        "set -o pipefail",
        "unset A",
        "shopt -s globstar",
        "cd -",
    ] {
        assert!(state_only(&parse(t)), "{t}");
    }
    assert!(changes_state(&parse("cd sub && make")));
    assert!(!changes_state(&parse("make test")));
}

#[test]
fn only_quiet_state_changes_run_unasked() {
    for t in [
        "cd sub",
        "cd ..; X=1",
        "pushd /tmp",
        "unset X",
        "set -o pipefail",
        "set +x",
        "setopt no_clobber",
        "set -- a b",
        "hash -r",
    ] {
        assert!(quiet_state(&parse(t)), "{t}");
    }
    // What changes what later commands in the pane run or see: the
    // operator's own, and the ones they approve, run there unconfined.
    for t in [
        "alias make='sh target/x'",
        "export NODE_OPTIONS=--require=./target/x.js",
        "export A=1; cd ..",
        "declare -x GCONV_PATH=target",
        "readonly X=1",
        "umask 000",
        "shopt -s dotglob",
        "functions[ls]='touch pwned'",
        "aliases=(ls 'rm -rf ~')",
        "NULLCMD='rm -rf ~'",
        "HISTFILESIZE=0",
        "HISTIGNORE='*'",
        "GLOBIGNORE=x",
        "arr[1]=x",
        "X+=1",
        "LC_ALL=C",
        "set -x",
        "set -o xtrace",
        "set -o noglob",
        "setopt globdots",
        "unalias rm",
        "unset -f ls",
        "unset CDPATH",
        "hash -p /tmp/x ls",
        "cd sub && make",
    ] {
        assert!(!quiet_state(&parse(t)), "{t}");
    }
    assert_eq!(
        bare_assignments(&parse("A=1; cd x; B+=2; export C=3; unset -v D")),
        ["A", "B", "D"]
    );
}
