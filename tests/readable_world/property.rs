//! A property: random files outside the readable world never show in a
//! clean trial's output.

use std::path::{Path, PathBuf};

use super::common;
use super::world::{World, write};

/// Random files of random modes and names in random places outside the
/// readable world (home, /tmp, /var/tmp, and owner-only files in /etc),
/// read by random commands in clean trials: no clean trial's output holds
/// any of their contents.
#[test]
fn no_clean_trial_shows_a_file_outside_the_readable_world() {
    vigil::exec::sandbox::set_helper(common::sandbox_helper_bin());
    let seed = std::env::var("VIGIL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    let mut rng = fastrand::Rng::with_seed(seed);
    let world = World::new(None);
    let mut guard = Vec::new();
    let mut files = Vec::new();
    for i in 0..24 {
        let name: String = (0..rng.usize(1..9))
            .map(|_| {
                rng.choice(b"abcdefxyz._-".iter())
                    .map(|c| *c as char)
                    .unwrap()
            })
            .collect();
        let name = format!("{}{name}{i}", if rng.bool() { "." } else { "" });
        let dir = match rng.usize(0..4) {
            0 => world.home.join(format!("d{}", rng.u8(..))),
            1 => PathBuf::from("/tmp"),
            2 => PathBuf::from("/var/tmp"),
            _ => PathBuf::from("/etc"),
        };
        let mode = if dir == Path::new("/etc") {
            0o600
        } else {
            *rng.choice(&[0o600, 0o644, 0o640, 0o400, 0o604]).unwrap()
        };
        let path = dir.join(name);
        let content = format!("PROPERTY-{seed}-{i}-{}", rng.u64(..));
        write(&path, &format!("{content}\n"), mode);
        if !path.starts_with(&world.base) {
            guard.push(Removed(path.clone()));
        }
        files.push((path, content));
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    let opts = vigil::exec::preview::PreviewOptions {
        time_limit: std::time::Duration::from_secs(5),
        ..Default::default()
    };
    for (i, (path, content)) in files.iter().enumerate() {
        let p = path.display().to_string();
        let (dir, file) = (path.parent().unwrap().display(), path.file_name().unwrap());
        let file = file.to_string_lossy();
        let command = match rng.usize(0..5) {
            0 => format!("cat '{p}'"),
            1 => format!("head -c 200 \"$(printf %s '{p}')\""),
            2 => format!("cd '{dir}' && cat -- '{file}'"),
            3 => format!("find '{dir}' -maxdepth 1 -type f -name '{file}' -exec cat {{}} +"),
            _ => format!("grep -rh PROPERTY '{dir}'"),
        };
        let (report, out) = rt
            .block_on(vigil::exec::preview::trial(
                &command,
                &world.proj,
                opts,
                vigil::exec::preview::Run::default(),
            ))
            .unwrap_or_else(|e| panic!("seed {seed} case {i}: {command}: {e}"));
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if report.effects().is_empty() {
            for (_, c) in &files {
                assert!(
                    !said.contains(c.as_str()),
                    "seed {seed} case {i}: a clean trial of `{command}` showed {c}"
                );
            }
        }
        // None of these files exists in the view: its own content never
        // shows, clean or not.
        assert!(
            !said.contains(content.as_str()),
            "seed {seed}: {command}: {said}"
        );
    }
}

/// Removes a file made outside the test's folder, on drop.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
