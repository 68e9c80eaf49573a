//! Bounds of a trial, for every user: a flood to stdout, memory, task and
//! fork bombs.

use std::path::Path;

use super::common;
use super::world::{NOBODY, World, chown_all, config, scripted};

/// `vigil policy check --preview -- COMMAND` as the world's user.
fn preview_as(world: &World, command: &str) -> String {
    let bin = common::vigil_bin();
    let mut cmd = world.as_user(bin.to_str().unwrap());
    cmd.args([
        "policy",
        "check",
        "--preview",
        "--time-limit",
        "20",
        "--",
        command,
    ]);
    let out = cmd.output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn bombs_are_stopped(uid: Option<u32>) {
    let world = World::new(uid);
    let cases = [
        (
            "python3 -c 'x = bytearray(3 * 1024**3)'",
            &["memory past", "process limit"][..],
        ),
        (
            "python3 -c 'import threading, time\nfor _ in range(900): threading.Thread(target=time.sleep, args=(8,)).start()'",
            &["processes and threads", "process limit"][..],
        ),
        (
            "f(){ f|f& };f; sleep 5",
            &["processes and threads", "process limit"][..],
        ),
    ];
    for (command, bound) in cases {
        let said = preview_as(&world, command);
        assert!(
            bound.iter().any(|b| said.contains(b)),
            "{uid:?} {command}: no bound named\n{said}"
        );
    }
}

#[test]
fn memory_and_task_bombs_are_stopped_with_the_bound_named_as_root() {
    bombs_are_stopped(None);
}

#[test]
fn memory_and_task_bombs_are_stopped_with_the_bound_named_as_an_ordinary_user() {
    bombs_are_stopped(Some(NOBODY));
}

/// Total bytes of the files beneath `dir`.
fn bytes_beneath(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn a_flood_is_capped(uid: Option<u32>) {
    let world = World::new(uid);
    let tmp = world.base.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    if let Some(uid) = uid {
        chown_all(&tmp, uid);
    }
    let command = "head -c 2000000000 /dev/zero; echo flooded".to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt.block_on(scripted(std::slice::from_ref(&command)));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch = {
        let (stop, dirs) = (stop.clone(), [tmp.clone(), world.base.join("data")]);
        std::thread::spawn(move || {
            let mut most = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                most = most.max(dirs.iter().map(|d| bytes_beneath(d)).sum::<u64>());
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            most
        })
    };
    let cfg = config("by_effect", false);
    let path = world.base.join("flood.toml");
    std::fs::write(&path, &cfg).unwrap();
    let bin = common::vigil_bin();
    let mut cmd = world.as_user(bin.to_str().unwrap());
    cmd.arg("--config")
        .arg(&path)
        .args(["exec", "run case-0."])
        .env("TMPDIR", &tmp)
        .env("VIGIL_BASE_URL", server.base_url())
        .env("VIGIL_MODEL", "stores");
    let out = cmd.output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let most = watch.join().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "not asked: {said}");
    let cap = 64 * 1024 * 1024;
    assert!(most <= cap + 1024 * 1024, "{most} bytes on the disk");
    assert!(bytes_beneath(&tmp) + bytes_beneath(&world.base.join("data")) < cap);
}

#[test]
fn a_trial_flooding_stdout_is_capped_on_the_disk_and_asked_as_root() {
    a_flood_is_capped(None);
}

#[test]
fn a_trial_flooding_stdout_is_capped_on_the_disk_and_asked_as_an_ordinary_user() {
    a_flood_is_capped(Some(NOBODY));
}

/// The same flood as a trial of `run_shell` (in this process): asked, the
/// bound named, its spill gone.
#[test]
fn a_trial_flooding_stdout_names_the_bound() {
    use vigil::tools::shell::{RunShell, ShellConfig};
    use vigil::tools::{Tool, ToolContext, Trial};
    vigil::exec::sandbox::set_helper(common::sandbox_helper_bin());
    let world = World::new(None);
    let spill = world.base.join("spill");
    let shell = RunShell::new(
        vigil::exec::ExecutionContext::local(),
        ShellConfig::default(),
    );
    let mut ctx = ToolContext::new("t").with_spill_dir(spill.clone());
    ctx.approved_cwd = Some(world.proj.display().to_string());
    let args = serde_json::json!({
        "command": "head -c 2000000000 /dev/zero", "risk": "low", "mutation": false,
        "privesc": false, "why": "t",
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    match rt.block_on(shell.trial(&vigil::tools::call_as_sent(&shell, &args.to_string()), &ctx)) {
        Trial::Asks { why, .. } => assert!(why.contains("output past 64 MB"), "{why}"),
        Trial::Clean(out) => panic!("ran unasked: {:?}", out.result),
        Trial::InPane(why) => panic!("ran in the pane unasked: {why}"),
        Trial::Outputs(run) => panic!("ran in its outputs unasked: {}", run.names),
    }
    assert_eq!(bytes_beneath(&spill), 0, "the trial's spill stayed");
}
