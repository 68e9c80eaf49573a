//! A real podman for tests: a private store (`--root`/`--runroot` under the
//! temp dir, shared by every test binary and kept between runs), the `runc`
//! runtime (crun fails on this kind of machine), and a busybox-static image
//! built locally once (no registry is reachable) under a lock file.
//! Containers are removed on drop. Failing to set any of this up returns
//! the reason; tests fail with it, never skip.
#![allow(dead_code)]

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

pub const IMAGE: &str = "localhost/vigil-test-busybox";

/// The private store and the global arguments that select it.
pub struct Store {
    pub dir: PathBuf,
}

impl Store {
    /// `--root DIR --runroot DIR --runtime runc`.
    pub fn global_args(&self) -> Vec<String> {
        vec![
            "--root".into(),
            self.dir.join("root").display().to_string(),
            "--runroot".into(),
            self.dir.join("runroot").display().to_string(),
            "--runtime".into(),
            "runc".into(),
        ]
    }

    pub fn podman(&self) -> Command {
        let mut c = Command::new("podman");
        c.args(self.global_args()).stdin(Stdio::null());
        c
    }

    fn ok(&self, args: &[&str]) -> Result<String, String> {
        let out = self
            .podman()
            .args(args)
            .output()
            .map_err(|e| format!("cannot run podman (apt-get install podman runc): {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "podman {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// Open the store, building the image if it is not there yet.
    pub fn open() -> Result<Store, String> {
        let uid = unsafe { libc::geteuid() };
        let dir = std::env::temp_dir().join(format!("vigil-test-podman-{uid}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let store = Store { dir };
        if !Path::new("/usr/bin/busybox").exists() && !Path::new("/bin/busybox").exists() {
            return Err("busybox is not installed (apt-get install busybox-static)".into());
        }
        let lock = std::fs::File::create(store.dir.join("build.lock"))
            .map_err(|e| format!("lock file: {e}"))?;
        // SAFETY: flock on a descriptor we own; released when `lock` drops.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err("cannot lock the podman test store".into());
        }
        if store.ok(&["image", "exists", IMAGE]).is_err() {
            store.build_image()?;
        }
        drop(lock);
        Ok(store)
    }

    fn build_image(&self) -> Result<(), String> {
        let work = tempfile::tempdir().map_err(|e| e.to_string())?;
        let rootfs = work.path().join("rootfs");
        for d in ["bin", "etc", "tmp", "root"] {
            std::fs::create_dir_all(rootfs.join(d)).map_err(|e| e.to_string())?;
        }
        let busybox = ["/bin/busybox", "/usr/bin/busybox"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .ok_or("no busybox")?;
        std::fs::copy(busybox, rootfs.join("bin/busybox")).map_err(|e| e.to_string())?;
        let list = Command::new(busybox)
            .arg("--list")
            .output()
            .map_err(|e| e.to_string())?;
        for applet in String::from_utf8_lossy(&list.stdout).lines() {
            let link = rootfs.join("bin").join(applet.trim());
            if !applet.trim().is_empty() && !link.exists() {
                std::os::unix::fs::symlink("busybox", &link).map_err(|e| e.to_string())?;
            }
        }
        std::fs::write(rootfs.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")
            .map_err(|e| e.to_string())?;
        std::fs::write(rootfs.join("etc/group"), "root:x:0:\n").map_err(|e| e.to_string())?;
        let tar = work.path().join("img.tar");
        let out = Command::new("tar")
            .arg("-C")
            .arg(&rootfs)
            .arg("-cf")
            .arg(&tar)
            .arg(".")
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("tar: {}", String::from_utf8_lossy(&out.stderr)));
        }
        let tar = tar.display().to_string();
        self.ok(&["import", "--change", "CMD [\"/bin/sh\"]", &tar, IMAGE])?;
        Ok(())
    }
}

/// A running container from the test image, removed on drop.
pub struct Container {
    pub name: String,
    global: Vec<String>,
}

impl Container {
    pub fn start(store: &Store, tag: &str) -> Result<Container, String> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "vigil-{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        store.ok(&[
            "run",
            "-d",
            "--name",
            &name,
            "--network",
            "none",
            "--ulimit",
            "nofile=1024:1024",
            "--ulimit",
            "nproc=1024:1024",
            IMAGE,
            "sleep",
            "3600",
        ])?;
        Ok(Container {
            name,
            global: store.global_args(),
        })
    }

    pub fn stop(&self) -> Result<(), String> {
        let out = Command::new("podman")
            .args(&self.global)
            .args(["stop", "-t", "0", &self.name])
            .output()
            .map_err(|e| e.to_string())?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).into_owned())
        }
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("podman")
            .args(&self.global)
            .args(["rm", "-f", "-t", "0", &self.name])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
