//! Rows that name another process, leave one behind, or reach the kernel's
//! per-process knobs.

use super::*;

// ---- other processes: every call that names one ------------------------

#[tokio::test]
async fn no_call_that_names_another_process_reaches_it_as_root() {
    let marker = Marker::start(Command::new("sleep").arg("300"));
    let before = marker.state();
    let out = boxed(&format!("python3 {} pids {}", reach(), marker.pid())).await;
    all_refused(&text(&out.stdout), &[], "root");
    assert_eq!(before, marker.state(), "the marker was changed");
    assert!(common::alive(marker.pid() as i32));
    // The helper itself, the command's parent, is out of reach too.
    let out = boxed(&format!("python3 {} pids $PPID; echo still=here", reach())).await;
    let said = text(&out.stdout);
    all_refused(&said, &["still"], "the helper");
    assert!(said.contains("still=here"), "{said}");
    // The control: unsandboxed the same calls reach a process.
    let victim = Marker::start(Command::new("sleep").arg("300"));
    let out = plain(&format!("python3 {} pids {}", reach(), victim.pid())).await;
    let r = results(&text(&out.stdout));
    for call in [
        "prlimit64",
        "setpriority",
        "sched_setaffinity",
        "ioprio_set",
    ] {
        assert!(r.contains(&(call.into(), "ok".into())), "{call}: {r:?}");
    }
}

#[test]
fn no_call_that_names_another_process_reaches_it_as_a_user() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let mut m = as_nobody(Path::new("/bin/sleep"));
    m.arg("300");
    let marker = Marker::start(&mut m);
    let before = marker.state();
    let cmd = format!("python3 {} pids {}", reach_in(dir.path()), marker.pid());
    let out = nobody_boxed(&cmd, dir.path());
    all_refused(&text(&out.stdout), &[], "nobody");
    assert_eq!(before, marker.state(), "the marker was changed");
    // Control: the same user, unsandboxed, re-limits its own process.
    let out = nobody_plain(&cmd, dir.path());
    let r = results(&text(&out.stdout));
    assert!(r.contains(&("prlimit64".into(), "ok".into())), "{r:?}");
}

// ---- processes left behind ----------------------------------------------

#[tokio::test]
async fn the_command_cannot_kill_its_helper_and_nothing_it_started_survives() {
    let out = boxed(
        "sleep 3300 & echo $!; (sleep 3301 &) ; sh -c 'sleep 3302 & echo $!'; \
         kill -9 $PPID; echo k=$?; kill -STOP $PPID; echo s=$?; kill -9 0",
    )
    .await;
    let said = text(&out.stdout);
    assert!(said.contains("k=1") && said.contains("s=1"), "{said}");
    assert_eq!(out.exit_code, None, "killed by its own SIGKILL: {out:?}");
    let pids: Vec<i32> = said.lines().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(pids.len(), 2, "{said}");
    common::assert_all_gone(&pids, "a command that killed its group");
    let ps = Command::new("pgrep")
        .args(["-f", "^sleep 330[012]$"])
        .output()
        .unwrap();
    assert!(ps.stdout.is_empty(), "left behind: {}", text(&ps.stdout));
}

/// A process that outlives its helper (something outside killed
/// `vigil-sandbox`, as a hook could) is killed with the call, and the call
/// returns.
#[tokio::test(flavor = "multi_thread")]
async fn a_process_outliving_a_killed_helper_ends_with_the_call() {
    home();
    let tag = format!("{}", 3000 + std::process::id() % 500);
    let cmd = format!("sleep {tag}7 & sleep {tag}8; echo not-here");
    let run = tokio::spawn({
        let cmd = cmd.clone();
        async move { sandbox::run(&cmd, None, Some(Duration::from_secs(60)), None).await }
    });
    let sleeper = common::eventually(Duration::from_secs(60), || find(&format!("sleep {tag}7")));
    let Some(sleeper) = sleeper else {
        panic!("the sandboxed sleep never started: {:?}", run.await);
    };
    let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap();
    let pgid: i32 = stat
        .rsplit_once(") ")
        .unwrap()
        .1
        .split(' ')
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    // The group's leader is the helper this test's call started.
    let leader = std::fs::read_to_string(format!("/proc/{pgid}/cmdline")).unwrap();
    assert!(leader.contains("__sandbox"), "{leader}");
    // SAFETY: kill(2) of the helper process this test's call started.
    unsafe { libc::kill(pgid, libc::SIGKILL) };
    let ended = tokio::time::timeout(Duration::from_secs(10), run).await;
    assert!(ended.is_ok(), "the call did not return");
    assert!(
        common::gone_within(sleeper, Duration::from_secs(30)),
        "the process left behind survived the call"
    );
    assert!(find(&format!("sleep {tag}8")).is_none());
}

/// The pid of a process whose command line is `text`.
fn find(text: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let line = String::from_utf8_lossy(&line).replace('\0', " ");
        (line.trim_end() == text && common::alive(pid)).then_some(pid)
    })
}

#[test]
fn as_a_user_the_helper_survives_and_cleans_up_too() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let out = nobody_boxed(
        "sleep 3303 & kill -9 $PPID; echo k=$?; kill -9 0",
        dir.path(),
    );
    assert!(text(&out.stdout).contains("k=1"), "{out:?}");
    let ps = Command::new("pgrep")
        .args(["-f", "^sleep 3303$"])
        .output()
        .unwrap();
    assert!(ps.stdout.is_empty(), "left behind: {}", text(&ps.stdout));
}

// ---- the rest that reaches another process or the kernel ----------------

/// What `reach.py others` may change on the marker besides its limits.
fn knobs(pid: u32) -> String {
    ["oom_score_adj", "timerslack_ns", "comm"]
        .map(|k| std::fs::read_to_string(format!("/proc/{pid}/{k}")).unwrap_or_default())
        .join("|")
}

#[tokio::test]
async fn sigio_proc_knobs_and_kernel_objects_stay_out_of_reach_as_root() {
    // SIGIO through F_SETOWN (its default action ends the owner), writes to
    // another process's /proc knobs, its environment and memory, and
    // userfaultfd, bpf, fanotify.
    let marker = Marker::start(Command::new("sleep").arg("300"));
    let before = (marker.state(), knobs(marker.pid()));
    let cmd = format!("python3 {} others {}", reach(), marker.pid());
    let out = boxed(&cmd).await;
    // F_SETOWN itself works; the signal must not arrive.
    all_refused(&text(&out.stdout), &["f_setown_sigio_sent"], "root");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        common::alive(marker.pid() as i32),
        "SIGIO reached the marker"
    );
    assert_eq!(before, (marker.state(), knobs(marker.pid())));
    // The control: unsandboxed the same calls reach it (SIGIO ends it).
    let victim = Marker::start(Command::new("sleep").arg("300"));
    let out = plain(&format!("python3 {} others {}", reach(), victim.pid())).await;
    let r = results(&text(&out.stdout));
    for call in [
        "proc_oom_score_adj",
        "proc_comm",
        "userfaultfd",
        "bpf_map_create",
    ] {
        assert!(r.contains(&(call.into(), "ok".into())), "{call}: {r:?}");
    }
    let gone = common::eventually(Duration::from_secs(60), || {
        (!common::alive(victim.pid() as i32)).then_some(())
    });
    assert!(gone.is_some(), "control: SIGIO did not end the victim");
}

#[test]
fn sigio_and_proc_knobs_stay_out_of_reach_as_a_user() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let mut m = as_nobody(Path::new("/bin/sleep"));
    m.arg("300");
    let marker = Marker::start(&mut m);
    let ready = common::eventually(Duration::from_secs(60), || {
        knobs(marker.pid()).contains("sleep").then_some(())
    });
    assert!(ready.is_some(), "the marker never became sleep");
    let before = (marker.state(), knobs(marker.pid()));
    let cmd = format!("python3 {} others {}", reach_in(dir.path()), marker.pid());
    let out = nobody_boxed(&cmd, dir.path());
    all_refused(&text(&out.stdout), &["f_setown_sigio_sent"], "nobody");
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        common::alive(marker.pid() as i32),
        "SIGIO reached the marker"
    );
    assert_eq!(before, (marker.state(), knobs(marker.pid())));
    // Control: the same user, unsandboxed, reaches its own process.
    let out = nobody_plain(&cmd, dir.path());
    let r = results(&text(&out.stdout));
    assert!(r.contains(&("proc_comm".into(), "ok".into())), "{r:?}");
    let gone = common::eventually(Duration::from_secs(60), || {
        (!common::alive(marker.pid() as i32)).then_some(())
    });
    assert!(gone.is_some(), "control: SIGIO did not end the marker");
}
