//! The red team's forms (2026-11-29) against a command guard: each must
//! be seen (a run of the guarded program) or asked (a blind spot); plain
//! commands stay judged.

use super::blind_spot;
use vigil_shell::Command;

fn seen_or_asked(text: &str, program: &str) -> bool {
    let c = Command::read(text);
    let seen = c.runs.runs.iter().any(|r| r.iter().any(|w| w == program));
    seen || blind_spot(&c).is_some()
}

#[test]
fn every_form_the_red_team_ran_is_seen_or_asked() {
    for text in [
        "echo ${y:-$(rm -f C)}",
        "echo \"${y:=$(rm -f C)}\"",
        "echo $(( $(rm -f C) 0 ))",
        "echo $((`rm -f C`))",
        "case $(rm -f C) in *) ;; esac",
        "for i in $(rm -f C); do :; done",
        "[[ $(rm -f C) ]]",
        "bash -c '[[ -n $(rm -f C) ]]'",
        "trap 'rm -f C' 0",
        "alias r='rm -f C'\nr",
        ". /dev/stdin <<E\nrm -f C\nE",
        "exec 3<<E\nrm -f C\nE\n. /dev/fd/3",
        "sh s",
        ". ./s",
        "./s",
        "sh -c 'echo ${y:-$(rm -f C)}'",
        "echo 'rm -f C' | xargs -I% sh -c %",
        "bash -c 'source <(echo rm -f C)'",
        "bash -c 'hash -p /bin/rm ls; ls -f C'",
        "bash -c 'mapfile -C \"rm -f C;:\" -c 1 <<< a'",
        "bash -c \"PS4='\\$(rm -f C)'; set -x; :\"",
        "su -s /bin/rm root -- -f C",
        "busybox chroot / rm -f C",
        "busybox awk 'BEGIN{system(\"rm -f C\")}'",
        "rbash -c 'rm -f C'",
        "timeout 3 watch -n .5 rm -f C",
        "script -qc 'rm -f C' /dev/null",
        "runuser -u root -- rm -f C",
        "unshare rm -f C",
        "strace -f -o /dev/null rm -f C",
        "awk 'BEGIN{system(\"rm -f C\")}'",
        "perl -e 'system(\"rm -f C\")'",
        "python3 -c 'import os; os.system(\"rm -f C\")'",
        "git -c core.fsmonitor='rm -f C' status",
        "git rebase --exec 'rm -f C' HEAD~1",
        "GIT_SSH_COMMAND='rm -f C' git ls-remote ssh://x/y",
        "git fetch --upload-pack='rm -f C; git-upload-pack' .",
        "git clone -u 'rm -f C' . d",
        "sort --compress-program=./x a",
        // Tried after the session's change (2026-11-29), for real as root
        // and as uid 65534: `git grep -O<pager>` runs the pager on the
        // matching files, so `-Orm` deleted them past a rule on rm.
        "git grep -Orm -e foo",
        "git grep --open-files-in-pager=rm -e foo",
        "ssh-agent rm -f C",
        "exec -a x rm -f C",
        "command -p rm -f C",
        "env -i X=1 rm -f C",
        "env -S'rm -f C'",
        "env -vS'rm -f C'",
        "timeout 5 env -vS'rm -f C'",
        "su -c'rm -f C'",
        "systemd-run -p X=Y rm -f C",
    ] {
        assert!(
            seen_or_asked(text, "rm"),
            "a guard on rm is blind to: {text}"
        );
    }
    for text in [
        "git -c alias.p=push p origin master",
        "git config alias.pp push && git pp origin master",
        "git rebase -x 'git push origin master' HEAD~1",
        "git send-pack ../remote.git master",
        "git submodule foreach git push",
    ] {
        let c = Command::read(text);
        let pushes = c
            .runs
            .runs
            .iter()
            .any(|r| r.len() > 1 && r[0] == "git" && r[1] == "push");
        assert!(pushes || blind_spot(&c).is_some(), "blind to: {text}");
    }
}

#[test]
fn plain_commands_stay_judged() {
    for text in [
        "ls -la",
        "rm -f build/x",
        "git status",
        "git -C . log -3",
        "git push origin main",
        "grep -rn foo src | wc -l",
        "cat a b > c",
        "env -i LANG=C rm -f x",
        "timeout 5 rm -f x",
        "sh -c 'rm -f x'",
        "x=1; echo $x",
        "LANG=C sort a",
        "cd sub && ls",
    ] {
        let c = Command::read(text);
        assert_eq!(blind_spot(&c), None, "{text}: {:?}", c.runs);
    }
}
