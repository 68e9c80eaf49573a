//! Previews in the real throwaway view on this kernel (namespaces,
//! overlayfs, tmpfs, seccomp user notification): each command's effects
//! are reported exactly, and the real files, the repository and its refs
//! stay byte-identical (every file's mode and SHA-256 before and after).

use super::common;

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sha2::{Digest, Sha256};
use vigil::exec::preview::{PreviewOptions, preview};
use vigil::exec::sandbox;
use vigil_protocol::preview::{EffectKind, PreviewReport};

fn git(repo: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository with one commit: `f` ("a\nb\nabc\n"), `dir/` with two files.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(repo.join("dir")).unwrap();
    std::fs::write(repo.join("f"), "a\nb\nabc\n").unwrap();
    std::fs::write(repo.join("dir/one"), "1\n").unwrap();
    std::fs::write(repo.join("dir/two"), "2\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.email", "t@example.com"]);
    git(&repo, &["config", "user.name", "t"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    (tmp, repo)
}

/// Every path under `dir` with its mode and content hash.
fn fingerprint(dir: &Path) -> BTreeMap<PathBuf, (u32, String)> {
    let mut all = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let hash = if meta.is_file() {
                format!("{:x}", Sha256::digest(std::fs::read(&p).unwrap()))
            } else {
                String::new()
            };
            all.insert(p.clone(), (meta.permissions().mode(), hash));
            if meta.is_dir() {
                stack.push(p);
            }
        }
    }
    all
}

async fn run(cmd: &str, cwd: &Path, opts: PreviewOptions) -> PreviewReport {
    sandbox::set_helper(common::sandbox_helper_bin());
    preview(cmd, cwd, opts)
        .await
        .unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

fn changes(r: &PreviewReport, root: &Path) -> Vec<(EffectKind, String)> {
    r.files
        .iter()
        .map(|f| {
            let rel = f.path.strip_prefix(root).unwrap_or(&f.path);
            (f.kind, rel.display().to_string())
        })
        .collect()
}

/// Preview `cmd` in a fresh repo; the real tree must not change.
async fn in_repo(cmd: &str) -> (PreviewReport, PathBuf, tempfile::TempDir) {
    let (tmp, repo) = repo();
    let before = fingerprint(&repo);
    let report = run(cmd, &repo, PreviewOptions::default()).await;
    assert_eq!(before, fingerprint(&repo), "{cmd} changed the real tree");
    let repo = repo.canonicalize().unwrap();
    (report, repo, tmp)
}

#[tokio::test]
async fn sed_in_place_shows_one_modified_file_with_its_diff() {
    let (r, repo, _tmp) = in_repo("sed -i s/a/b/ f").await;
    assert_eq!(r.exit_code, Some(0), "{}", r.to_text());
    assert_eq!(changes(&r, &repo), [(EffectKind::Modified, "f".into())]);
    let diff = r.files[0].diff.as_deref().unwrap();
    assert!(diff.contains("-a\n") && diff.contains("+b\n"), "{diff}");
    assert!(diff.contains("-abc\n") && diff.contains("+bbc\n"), "{diff}");
    assert!(!r.hit_time_limit && !r.hit_size_limit);
}

#[tokio::test]
async fn rm_rf_shows_the_directory_deleted() {
    let (r, repo, _tmp) = in_repo("rm -rf dir").await;
    assert_eq!(changes(&r, &repo), [(EffectKind::Deleted, "dir".into())]);
    assert!(r.files[0].dir);
    assert_eq!(r.files[0].note.as_deref(), Some("held 2 files"));
}

#[tokio::test]
async fn touch_shows_one_created_file() {
    let (r, repo, _tmp) = in_repo("touch new && echo done").await;
    assert_eq!(changes(&r, &repo), [(EffectKind::Created, "new".into())]);
    assert_eq!(r.output_head, "done\n");
    assert_eq!(r.files[0].new.as_ref().unwrap().size, 0);
    assert_eq!(r.files[0].note.as_deref(), Some("empty"));
}

#[tokio::test]
async fn git_commit_changes_only_the_repository_database() {
    let (r, repo, _tmp) = in_repo("echo more >> f && git commit -q -am x").await;
    assert_eq!(r.exit_code, Some(0), "{}", r.to_text());
    let c = changes(&r, &repo);
    assert!(c.contains(&(EffectKind::Modified, "f".into())), "{c:?}");
    assert!(
        c.contains(&(EffectKind::Modified, ".git/refs/heads/main".into())),
        "{c:?}"
    );
    assert!(
        c.contains(&(EffectKind::Modified, ".git/index".into())),
        "{c:?}"
    );
    let objects = c.iter().filter(|(k, p)| {
        *k == EffectKind::Created && p.starts_with(".git/objects/") && !p.ends_with('/')
    });
    assert!(objects.count() >= 3, "commit, tree and blob objects: {c:?}");
    let outside: Vec<_> = c
        .iter()
        .filter(|(_, p)| p != "f" && !p.starts_with(".git/"))
        .collect();
    assert!(outside.is_empty(), "{outside:?}");
    let index = r
        .files
        .iter()
        .find(|f| f.path.ends_with(".git/index"))
        .unwrap();
    assert_eq!(index.note.as_deref(), Some("binary"));
    assert_eq!(index.new.as_ref().unwrap().sha256.len(), 64);
}

#[tokio::test]
async fn a_tcp_connect_is_refused_and_reported() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}'; echo rc=$?");
    let r = run(&cmd, dir.path(), PreviewOptions::default()).await;
    // Besides the TCP connect, the C library may try daemons' unix sockets
    // (nscd, for a user look-up when the environment has no USER): those
    // are refused too, and listed.
    let tcp: Vec<_> = r
        .refused
        .iter()
        .filter(|c| !c.address.starts_with("unix:"))
        .collect();
    assert_eq!(tcp.len(), 1, "{}", r.to_text());
    assert_eq!(tcp[0].address, format!("127.0.0.1:{port}"));
    assert_eq!(tcp[0].call, "connect");
    assert_eq!(tcp[0].program, "bash");
    assert!(
        r.output_head.contains("Connection refused"),
        "{}",
        r.output_head
    );
    assert!(r.needs_network());
    let err = listener.accept().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WouldBlock, "a connection got out");
}

#[tokio::test]
async fn sleep_stops_at_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let opts = PreviewOptions {
        time_limit: Duration::from_millis(800),
        ..PreviewOptions::default()
    };
    let r = run("sleep 100", dir.path(), opts).await;
    assert!(r.hit_time_limit, "{}", r.to_text());
    assert_eq!(r.exit_code, None);
    assert!(r.duration_ms < 5000, "{}", r.duration_ms);
    assert!(r.to_text().contains("time limit: stopped after 800 ms"));
}

#[tokio::test]
async fn a_big_write_stops_at_the_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let opts = PreviewOptions {
        size_limit: 8 << 20,
        ..PreviewOptions::default()
    };
    let r = run("head -c 50000000 /dev/zero > big", dir.path(), opts).await;
    assert!(r.hit_size_limit, "{}", r.to_text());
    assert_ne!(r.exit_code, Some(0));
    assert!(
        r.output_head.contains("No space left on device"),
        "{}",
        r.output_head
    );
    let text = r.to_text();
    assert!(text.contains("size limit: the view's 8 MB"), "{text}");
    assert!(!dir.path().join("big").exists());
}

#[tokio::test]
async fn processes_left_behind_are_reported_and_killed() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        "sleep 37 & sleep 0.3; echo started",
        dir.path(),
        PreviewOptions::default(),
    )
    .await;
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.leftovers.len(), 1, "{}", r.to_text());
    assert_eq!(r.leftovers[0].command, "sleep 37");
    let ps = Command::new("pgrep")
        .args(["-f", "^sleep 37$"])
        .output()
        .unwrap();
    assert!(ps.stdout.is_empty(), "sleep 37 still runs");
}

#[tokio::test]
async fn writes_outside_the_writable_roots_fail_in_the_view() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        "touch /etc/vigil-preview-probe; echo rc=$?",
        dir.path(),
        PreviewOptions::default(),
    )
    .await;
    assert!(
        r.output_head.contains("Read-only file system"),
        "{}",
        r.output_head
    );
    assert!(r.files.is_empty());
    assert!(!Path::new("/etc/vigil-preview-probe").exists());
}

#[test]
fn policy_check_preview_prints_the_effects_from_the_command_line() {
    let (tmp, repo) = repo();
    let before = fingerprint(&repo);
    let cfg = tmp.path().join("empty.toml");
    std::fs::write(&cfg, "").unwrap();
    let out = Command::new(common::vigil_bin())
        .arg("--config")
        .arg(&cfg)
        .args([
            "policy",
            "check",
            "--preview",
            "--",
            "sed",
            "-i",
            "s/a/b/",
            "f",
        ])
        .current_dir(&repo)
        .env("VIGIL_DATA_DIR", tmp.path().join("data"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("decision:  ask"), "{text}");
    assert!(text.contains("preview:   exit 0 · 1 change"), "{text}");
    let repo_c = repo.canonicalize().unwrap();
    assert!(
        text.contains(&format!("M {}/f (+2 -2)", repo_c.display())),
        "{text}"
    );
    assert!(text.contains("+bbc"), "{text}");
    assert!(text.contains("cannot reproduce network effects"), "{text}");
    assert_eq!(before, fingerprint(&repo));
}

/// The `by effect:` line is by_effect's own reading of the trial, not only
/// the report's: output holding a key is asked (the agent asks it too), a
/// plain read is not.
#[test]
fn policy_check_preview_reads_the_trial_as_by_effect_does() {
    let (tmp, repo) = repo();
    std::fs::write(
        repo.join("deploy_backup"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    .unwrap();
    let cfg = tmp.path().join("empty.toml");
    std::fs::write(&cfg, "").unwrap();
    let check = |command: &str| {
        let out = Command::new(common::vigil_bin())
            .arg("--config")
            .arg(&cfg)
            .args(["policy", "check", "--preview", "--", command])
            .current_dir(&repo)
            .env("VIGIL_DATA_DIR", tmp.path().join("data"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let key = check("cat deploy_backup");
    assert!(
        key.contains("by effect: asks: tried in the view: its output holds what looks like a secret (a private key block)"),
        "{key}"
    );
    // What the broker asks before any trial is asked here too (the view
    // has no such process, so its trial alone saw nothing).
    let other = check("cat /usr/../dev/fd/../../1/status");
    assert!(
        other.contains("by effect: asks: not tried in the view (rule `processes`)"),
        "{other}"
    );
    let plain = check("cat f");
    assert!(
        plain.contains(
            "by effect: no effects: its result stands, unasked (by_effect would not ask)"
        ),
        "{plain}"
    );
}

#[tokio::test]
async fn a_preview_rule_previews_for_real_and_the_decision_records_it() {
    use std::sync::Arc;
    use vigil::agent::approval::{ApprovalBroker, Policy};
    use vigil::policy::gate::Approver;
    use vigil::policy::rules::PolicyRules;
    use vigil_protocol::approval::GateInfo;
    use vigil_protocol::{AgentEvent, ApprovalDecision, PreviewOutcome};

    sandbox::set_helper(common::sandbox_helper_bin());
    let text = "[[approval.rules]]\ncommand = [\"rm\"]\ndecision = \"ask\"\npreview = true\n";
    let config = vigil::config::Config::from_toml(text, Path::new("p.toml")).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    broker.set_rules(PolicyRules::from_config(&config.approval));
    broker.set_can_sandbox(true);
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep me\n").unwrap();
    let gate = GateInfo {
        action: format!("rm -f {}", victim.display()),
        model_risk: None,
        mutation: Some(true),
        privesc: Some(false),
        why: None,
        editable_field: Some("command".into()),
    };
    let b = broker.clone();
    let task = tokio::spawn(async move { b.decide("c1", "run_shell", &gate).await });
    let Some(AgentEvent::ApprovalRequested { request }) = rx.recv().await else {
        panic!("a request")
    };
    let ready = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
    let Ok(Some(AgentEvent::PreviewReady { id, outcome })) = ready else {
        panic!("the automatic preview: {ready:?}")
    };
    assert_eq!(id, request.id);
    let PreviewOutcome::Report { report } = outcome else {
        panic!("{outcome:?}")
    };
    // The victim lies in /tmp, outside the working tree: the view's /tmp
    // is its own (empty), so the removal is named as a write the view
    // could not show, not as a change.
    let victim_real = victim.canonicalize().unwrap().display().to_string();
    assert!(
        report.writes_refused.contains(&victim_real),
        "{}",
        report.to_text()
    );
    assert!(
        report
            .effects()
            .iter()
            .any(|e| e.contains("writes outside")),
        "{}",
        report.to_text()
    );
    assert!(victim.exists(), "the preview removed the real file");
    broker.resolve(id, ApprovalDecision::Deny);
    task.await.unwrap();
    let Some(AgentEvent::ApprovalResolved { previewed, .. }) = rx.recv().await else {
        panic!("the decision")
    };
    assert!(previewed, "the record says a preview was seen");
}

/// Not root: the helper makes a user namespace (mapping the user to 0) and
/// mounts the overlay with `userxattr`. Run as `nobody` on the user's own
/// file.
#[test]
fn an_unprivileged_user_previews_through_a_user_namespace() {
    use std::os::unix::fs::chown;
    let dir = tempfile::tempdir().unwrap();
    let staging = tempfile::tempdir_in("/dev/shm").unwrap();
    for d in [dir.path(), staging.path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let f = dir.path().join("f");
    std::fs::write(&f, "hello\n").unwrap();
    chown(&f, Some(65534), Some(65534)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::sandbox_helper_bin())
        .args(["__sandbox", "--preview"])
        .args(vigil::exec::preview::world_args(
            &vigil::exec::sandbox::world::world(Path::new("/nonexistent")),
        ))
        .arg("--staging")
        .arg(staging.path())
        .arg("--cwd")
        .arg(dir.path())
        .arg("--root")
        .arg(dir.path())
        .args(["--time-ms", "5000", "--size", "8388608", "--"])
        .args(["/bin/sh", "-c", "sed -i s/hello/bye/ f"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = std::fs::read(staging.path().join("report.json")).unwrap();
    let r: PreviewReport = serde_json::from_slice(&json).unwrap();
    assert_eq!(
        changes(&r, dir.path()),
        [(EffectKind::Modified, "f".into())]
    );
    assert!(r.files[0].diff.as_deref().unwrap().contains("+bye"));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), "hello\n");
}

#[tokio::test]
async fn appending_to_a_hard_link_says_every_name_changes() {
    // The view copies `notes.txt` up and so breaks its link: the report
    // must say a real run changes the other name too (here one outside the
    // repository, standing for a file outside every writable folder).
    let (tmp, repo) = repo();
    let outside = tmp.path().join("victim");
    std::fs::write(&outside, "keep\n").unwrap();
    std::fs::hard_link(&outside, repo.join("notes.txt")).unwrap();
    let r = run(
        "echo appended >> notes.txt",
        &repo,
        PreviewOptions::default(),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep\n");
    let repo = repo.canonicalize().unwrap();
    assert_eq!(
        changes(&r, &repo),
        [(EffectKind::Modified, "notes.txt".into())]
    );
    let note = r.files[0].note.as_deref().unwrap_or_default();
    assert!(
        note.contains("hard link") && note.contains("all 2 names"),
        "{note}"
    );
    assert!(r.to_text().contains("hard link"), "{}", r.to_text());
}

/// The control groups named for helper `pid` (`vigil-view-PID`) anywhere
/// in the cgroup file systems.
fn view_groups(pid: i32) -> Vec<PathBuf> {
    let name = format!("vigil-view-{pid}");
    let mut found = Vec::new();
    let mut stack = vec![(PathBuf::from("/sys/fs/cgroup"), 0)];
    while let Some((dir, depth)) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            if !is_dir {
                continue;
            }
            if e.file_name().to_string_lossy() == name {
                found.push(e.path());
            } else if depth < 8 {
                stack.push((e.path(), depth + 1));
            }
        }
    }
    found
}

/// A preview given up on while its command runs (the call was cancelled, or
/// vigil is exiting: its future is dropped) asks its helper to stop; once
/// `stopping::settle` has returned (vigil calls it as it exits), no process
/// of the view is left, the one that made a session of its own included,
/// and the view's control groups are removed.
#[tokio::test]
async fn a_view_given_up_on_leaves_no_process_and_no_control_group() {
    sandbox::set_helper(common::sandbox_helper_bin());
    let dir = tempfile::tempdir().unwrap();
    let tag = format!("{}.{}", 40 + std::process::id() % 50, std::process::id());
    let sleep = format!("sleep {tag}");
    let cmd = format!("setsid {sleep} & {sleep}");
    let view = preview(&cmd, dir.path(), PreviewOptions::default());
    let cwd = dir.path().canonicalize().unwrap();
    let helper_arg = format!("--cwd\0{}\0", cwd.display());
    let sleeping = format!("sleep\0{tag}\0");
    // What the view made is looked at while it still runs: the select
    // below drops (gives up on) the preview as it returns.
    let running = async {
        for _ in 0..3000 {
            let helpers = common::pids_with(helper_arg.as_bytes());
            if common::pids_with(sleeping.as_bytes()).len() >= 2 && !helpers.is_empty() {
                return helpers
                    .iter()
                    .flat_map(|p| view_groups(*p))
                    .collect::<Vec<PathBuf>>();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the view's two sleeps never ran");
    };
    let groups = tokio::select! {
        r = view => panic!("the preview ended by itself: {r:?}"),
        g = running => g,
    };
    vigil::exec::stopping::settle();
    assert_eq!(
        common::pids_with(sleeping.as_bytes()),
        Vec::<i32>::new(),
        "the view's processes are gone"
    );
    let left: Vec<&PathBuf> = groups.iter().filter(|g| g.exists()).collect();
    assert!(left.is_empty(), "control groups left: {left:?}");
    let root = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap()) == 0;
    if root {
        assert!(!groups.is_empty(), "as root the view has control groups");
    }
}
