//! The allow-list's tests: what is low, what is not, and how GNU long
//! options are expanded.

use super::*;

fn ok(cmd: &str) -> bool {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    check(&words).is_ok()
}

#[test]
fn allowed_programs_and_flags() {
    for cmd in [
        "ls -la /tmp",
        "ls --all --human",
        "ps -e",
        "ps -el -u root",
        "cat /proc/loadavg /proc/self/status",
        "cat /proc/./cpuinfo",
        "grep -r x src/procedures",
        "cat src/proc/mod.rs",
        "head -5 f",
        "head -n 5 f",
        "head -n5 f",
        "tail --lines=3 f",
        "tail --li 3 f",
        "grep -rn -e foo .",
        "grep -A 3 x f",
        "sort -k 2 -t , -n f",
        "sort --num f",
        "git status -s",
        "git log --oneline -3",
        "git log -n 3",
        "git diff --stat",
        "git branch -a",
        "date +%s",
        "date -u",
        "uname -a",
        "echo -n hi there",
        "wc -l -- -o",
        "cat /proc/self/status",
        "head -c 8 /dev/urandom",
        "cat /dev/null",
        "ls -la /dev",
        "ls devices/x",
    ] {
        assert!(
            ok(cmd),
            "{cmd}: {:?}",
            check(&cmd.split_whitespace().collect::<Vec<_>>())
        );
    }
}

#[test]
fn everything_else_is_refused() {
    for cmd in [
        "sed -n p f",
        "awk 1 f",
        "find .",
        "env",
        "xargs ls",
        "printenv",
        "uniq a b",
        "sort -o out f",
        "sort --output=out f",
        "sort --o out f",
        "sort --compress-program=sh f",
        "sort --comp sh f",
        "sort -T /tmp f",
        "file -C -m x",
        "git diff --output=x",
        "git log --output=x",
        "git branch new",
        "git branch -D main",
        "git branch -f main HEAD~1",
        "git -c alias.x=!sh x",
        "git -C /tmp status",
        "git push",
        "git",
        "date 010100002030",
        "date -s now",
        "hostname evil",
        "tail -f log",
        "ls --color=always",
        "ls --a",
        "grep -f pats x",
        "/bin/ls",
        "./ls",
        "ｌｓ",
        "ls -ｌ",
        "printf -v x y",
        "head --lines",
        "cat /proc/self/environ",
        "cat /proc/1/environ",
        "head -c 999 /proc//1234/./environ",
        "tail /proc/1/task/1/environ/",
        "grep -a KEY /proc/thread-self/environ",
        "cat environ",
        "wc -c -- /proc/1/environ",
        "cat /proc/3318/cmdline",
        "cat /proc/self/../1/status",
        "grep -r -l x /proc/self/../1/task/1/",
        "grep -r x /proc",
        "grep -r x /proc/",
        "ls -l /proc/self/../12230/fd/",
        "ls /proc/self/fd",
        "cat ../1/status",
        "cat proc/1/maps",
        "cat /proc/./1/../2/stat",
        "cat /proc/self/cmdline",
        "head /proc/../proc/1/status",
        "tail -c 99 /proc/1/root/etc/hostname",
        "ps -ef",
        "ps -eF",
        "ps -e -o args",
        "head -c 1 /dev/watchdog",
        "cat //dev/./sda",
        "wc -c /dev/ptmx",
        "head -c 1 /proc/self/root/dev/ptmx",
    ] {
        assert!(!ok(cmd), "{cmd} must not be low");
    }
}

#[test]
fn abbreviations_expand_to_exactly_one_allowed_option() {
    let sort = PROGRAMS.iter().find(|s| s.name == "sort").unwrap();
    assert_eq!(expand(sort, "rev"), Some(("reverse", false)));
    assert_eq!(expand(sort, "k"), Some(("key", true)));
    assert_eq!(expand(sort, "o"), None);
    let ls = PROGRAMS.iter().find(|s| s.name == "ls").unwrap();
    assert_eq!(expand(ls, "al"), None, "all / almost-all");
    assert_eq!(expand(ls, "all"), Some(("all", false)), "exact wins");
}
