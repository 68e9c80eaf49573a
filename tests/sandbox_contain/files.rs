//! Rows on files: secret places and their neighbours, a repository's hook,
//! and metadata of files outside and of its own.

use super::*;

// ---- secrets ---------------------------------------------------------------

#[tokio::test]
async fn secret_places_read_as_denied_and_their_neighbours_stay_readable() {
    let h = home();
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    std::fs::create_dir_all(repo.path().join("app/cfg")).unwrap();
    for (f, t) in [
        (".env", "DB_PASSWORD=ENV-SECRET-1"),
        ("app/cfg/.env.production", "TOKEN=ENV-SECRET-2"),
        ("app/main.rs", "fn main() {}"),
    ] {
        std::fs::write(repo.path().join(f), t).unwrap();
    }
    let hd = h.home.display();
    let cmd = format!(
        "cat {hd}/.ssh/id_ed25519 {hd}/.netrc {}/config.toml /etc/shadow .env app/cfg/.env.production; \
         grep -rs SECRET . {hd}; cat app/main.rs /etc/passwd > /dev/null && echo neighbours=ok",
        h.vigil.display()
    );
    let out = boxed_in(&cmd, repo.path()).await;
    let (said, err) = (text(&out.stdout), text(&out.stderr));
    for secret in [
        "PRIVATE-KEY",
        "NETRC-PW",
        "sk-CONFIG",
        "ENV-SECRET",
        "root:",
    ] {
        assert!(!said.contains(secret), "{secret} was read: {said}");
    }
    assert!(said.contains("neighbours=ok"), "{said}\n{err}");
    assert_eq!(err.matches("Permission denied").count(), 6, "{err}");
    // Control: unsandboxed the same reads succeed.
    let plain = plain(&format!("cd {} && {cmd}", repo.path().display())).await;
    assert!(text(&plain.stdout).contains("ENV-SECRET-2"));
}

#[test]
fn as_a_user_secret_places_read_as_denied_too() {
    let h = home();
    let repo = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::write(repo.path().join(".env"), "ENV-SECRET-3").unwrap();
    std::fs::write(repo.path().join("readme"), "hello").unwrap();
    open_up(repo.path());
    let cmd = format!(
        "cat .env {0}/.netrc {0}/.ssh/id_ed25519; cat readme",
        h.home.display()
    );
    let out = nobody_boxed(&cmd, repo.path());
    let said = text(&out.stdout);
    assert_eq!(said, "hello", "{out:?}");
    let control = nobody_plain(&cmd, repo.path());
    assert!(
        text(&control.stdout).contains("ENV-SECRET-3"),
        "{control:?}"
    );
}

/// Issue 25, item 4, as it happened: a repository's `core.fsmonitor` hook
/// runs under a low `git status` and re-limits a process outside
/// (`prlimit --cpu=1:2` killed it with SIGXCPU) and the agent itself (here
/// the test process stands for it: `--nofile=4`).
#[tokio::test]
async fn a_repositorys_hook_under_git_status_reaches_no_process() {
    let marker = Marker::start(Command::new("sleep").arg("300"));
    let before = marker.state();
    let me = std::process::id();
    let my_limits = std::fs::read_to_string(format!("/proc/{me}/limits")).unwrap();
    let repo = tempfile::tempdir().unwrap();
    let r = repo.path();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(args)
            .current_dir(r)
            .output()
            .unwrap();
        assert!(ok.status.success(), "{ok:?}");
    };
    git(&["init", "-q"]);
    let hook = r.join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nprlimit --pid {} --cpu=1:2; prlimit --pid {me} --nofile=4:4; \
             echo hook-ran >&2\n",
            marker.pid()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(&["config", "core.fsmonitor", &hook.display().to_string()]);
    let out = boxed_in("git status --short; echo done", r).await;
    let err = text(&out.stderr);
    assert!(err.contains("hook-ran"), "the hook did not run: {out:?}");
    assert!(err.contains("Operation not permitted"), "{err}");
    assert_eq!(before, marker.state(), "the marker was re-limited");
    assert_eq!(
        my_limits,
        std::fs::read_to_string(format!("/proc/{me}/limits")).unwrap(),
        "the agent's limits changed"
    );
    assert!(common::alive(marker.pid() as i32));
}

// ---- file metadata: mode, owner, times, xattrs/ACLs, flags, locks -------

/// Every metadata change of `f` a read-only run might try, one
/// `NAME=STATUS` line each.
fn metadata_attempts(f: &Path) -> String {
    let f = f.display();
    format!(
        "chmod 4755 {f}; echo chmod=$?; chown 65534 {f}; echo chown=$?; \
         touch -m -d 1970-01-01 {f}; echo utime=$?; \
         python3 -c 'import os,sys; os.setxattr(sys.argv[1], \"user.red\", b\"1\")' {f} 2>/dev/null; \
         echo xattr=$?; \
         python3 -c 'import fcntl,sys; f=open(sys.argv[1]); fcntl.fcntl(f, fcntl.F_SETLEASE, fcntl.F_RDLCK)' {f} 2>/dev/null; \
         echo lease=$?; flock -n {f} true 2>/dev/null; echo flock=$?; \
         chattr +A {f} 2>/dev/null; echo chattr=$?"
    )
}

/// Mode, owner, mtime and extended attributes of `f`.
fn meta_state(f: &Path) -> String {
    let out = Command::new("stat")
        .args(["-c", "%a %u %Y"])
        .arg(f)
        .output()
        .unwrap();
    let attrs = Command::new("python3")
        .args([
            "-c",
            "import os,sys; print(sorted(os.listxattr(sys.argv[1])))",
        ])
        .arg(f)
        .output()
        .unwrap();
    format!(
        "{} {}",
        text(&out.stdout).trim(),
        text(&attrs.stdout).trim()
    )
}

#[tokio::test]
async fn no_metadata_of_an_outside_file_changes_as_root() {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let f = dir.path().join("rootid");
    std::fs::write(&f, "x").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = meta_state(&f);
    let out = boxed(&metadata_attempts(&f)).await;
    let said = text(&out.stdout);
    for (call, status) in results(&said) {
        assert_ne!(status, "0", "[file metadata] {call} went through: {said}");
    }
    assert_eq!(
        before,
        meta_state(&f),
        "the file's metadata changed: {said}"
    );
    // The control: unsandboxed, the same attempts change it.
    let out = plain(&metadata_attempts(&f)).await;
    let r = results(&text(&out.stdout));
    for call in ["chmod", "utime", "xattr"] {
        assert!(r.contains(&(call.into(), "0".into())), "{call}: {r:?}");
    }
    assert_ne!(before, meta_state(&f));
}

#[test]
fn no_metadata_of_its_own_files_changes_as_a_user() {
    // An ordinary user owns its key folder: the sandbox must not open it to
    // everyone (the mask covers reading, this covers the mode).
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    open_up(dir.path());
    let f = dir.path().join("mine");
    std::fs::write(&f, "x").unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&f, Some(65534), Some(65534)).unwrap();
    let before = meta_state(&f);
    let out = nobody_boxed(&metadata_attempts(&f), dir.path());
    let said = text(&out.stdout);
    for (call, status) in results(&said) {
        assert_ne!(status, "0", "[file metadata] {call} went through: {said}");
    }
    assert_eq!(before, meta_state(&f), "{said}");
    let out = nobody_plain(
        &format!("chmod 644 {}; echo chmod=$?", f.display()),
        dir.path(),
    );
    assert!(text(&out.stdout).contains("chmod=0"), "control: {out:?}");
}
