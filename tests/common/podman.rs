//! A real podman for tests: a private store (`--root`/`--runroot` under the
//! temp dir, shared by every test binary and kept between runs), the `runc`
//! runtime (crun fails on this kind of machine), and a busybox-static image
//! built locally once (no registry is reachable) under a lock file; a second
//! image adds this machine's tmux (binary, `ldd` libraries with the loader,
//! terminfo, the C.UTF-8 locale tmux insists on) for the managed pane.
//! Containers are removed on drop. Failing to set any of this up returns
//! the reason; tests fail with it, never skip.
#![allow(dead_code)]

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

pub const IMAGE: &str = "localhost/vigil-test-busybox";

/// The same image plus this machine's tmux: the binary, the shared
/// libraries `ldd` names (the dynamic loader included) and the terminfo
/// entries tmux and its panes use.
pub const TMUX_IMAGE: &str = "localhost/vigil-test-busybox-tmux";

/// Terminfo entries copied into the tmux image (relative to a terminfo dir).
const TERMINFO: &[&str] = &[
    "s/screen",
    "s/screen-256color",
    "t/tmux",
    "t/tmux-256color",
    "x/xterm",
    "x/xterm-256color",
    "d/dumb",
];

/// One store (and image build) per test binary; panics with the reason
/// when podman cannot be set up (tests fail, never skip).
pub fn store() -> &'static Store {
    static STORE: std::sync::OnceLock<Result<Store, String>> = std::sync::OnceLock::new();
    match STORE.get_or_init(Store::open) {
        Ok(s) => s,
        Err(why) => panic!("cannot set up a real podman: {why}"),
    }
}

/// A running container from the tmux image; panics with the reason.
pub fn tmux_container(tag: &str) -> Container {
    let image = store()
        .tmux_image()
        .unwrap_or_else(|why| panic!("cannot build the tmux image: {why}"));
    Container::start_image(store(), tag, image)
        .unwrap_or_else(|why| panic!("cannot start a container: {why}"))
}

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
        // Kept between runs (images are built once per machine), so it lives
        // in the CI cache beside the wheels, never among the temp entries
        // a run must leave as it found them.
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(std::path::PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
            .unwrap_or_else(std::env::temp_dir);
        let dir = cache.join(format!("vigil-ci/podman-{uid}"));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let store = Store { dir };
        if !Path::new("/usr/bin/busybox").exists() && !Path::new("/bin/busybox").exists() {
            return Err("busybox is not installed (apt-get install busybox-static)".into());
        }
        store.ensure_image(IMAGE, false)?;
        Ok(store)
    }

    /// The tmux image, built on first use.
    pub fn tmux_image(&self) -> Result<&'static str, String> {
        self.ensure_image(TMUX_IMAGE, true)?;
        Ok(TMUX_IMAGE)
    }

    /// Build `image` unless it exists, under a lock shared by every test
    /// process using the store.
    fn ensure_image(&self, image: &str, with_tmux: bool) -> Result<(), String> {
        let lock = std::fs::File::create(self.dir.join("build.lock"))
            .map_err(|e| format!("lock file: {e}"))?;
        // SAFETY: flock on a descriptor we own; released when `lock` drops.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err("cannot lock the podman test store".into());
        }
        if self.ok(&["image", "exists", image]).is_err() {
            self.build_image(image, with_tmux)?;
        }
        Ok(())
    }

    fn build_image(&self, image: &str, with_tmux: bool) -> Result<(), String> {
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
        if with_tmux {
            add_tmux(&rootfs)?;
        }
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
        self.ok(&["import", "--change", "CMD [\"/bin/sh\"]", &tar, image])?;
        Ok(())
    }
}

/// Copy `host` (following symlinks) to the same path under `rootfs`.
fn copy_in(rootfs: &Path, host: &Path) -> Result<(), String> {
    let rel = host
        .strip_prefix("/")
        .map_err(|_| format!("{host:?} is not absolute"))?;
    let dest = rootfs.join(rel);
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::copy(host, &dest).map_err(|e| format!("copy {}: {e}", host.display()))?;
    Ok(())
}

/// This machine's tmux, its libraries (from `ldd`) and terminfo.
fn add_tmux(rootfs: &Path) -> Result<(), String> {
    let which = Command::new("sh")
        .args(["-c", "command -v tmux"])
        .output()
        .map_err(|e| e.to_string())?;
    let tmux = String::from_utf8_lossy(&which.stdout).trim().to_string();
    if tmux.is_empty() {
        return Err("tmux is not installed on this machine".into());
    }
    copy_in(rootfs, Path::new(&tmux))?;
    let ldd = Command::new("ldd")
        .arg(&tmux)
        .output()
        .map_err(|e| format!("ldd: {e}"))?;
    if !ldd.status.success() {
        return Err(format!(
            "ldd {tmux}: {}",
            String::from_utf8_lossy(&ldd.stderr)
        ));
    }
    // `libx.so => /lib/…/libx.so (0x…)` and the loader as `/lib64/ld-….so (0x…)`.
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        let path = match line.split_once("=>") {
            Some((_, rest)) => rest.split_whitespace().next(),
            None => line.split_whitespace().next(),
        };
        if let Some(p) = path.filter(|p| p.starts_with('/')) {
            copy_in(rootfs, Path::new(p))?;
        }
    }
    let mut found = 0;
    for entry in TERMINFO {
        let host = ["/lib/terminfo", "/usr/share/terminfo", "/etc/terminfo"]
            .iter()
            .map(|d| Path::new(d).join(entry))
            .find(|p| p.exists());
        if let Some(host) = host {
            let dest = rootfs.join("usr/share/terminfo").join(entry);
            std::fs::create_dir_all(dest.parent().unwrap()).map_err(|e| e.to_string())?;
            std::fs::copy(&host, &dest).map_err(|e| format!("{}: {e}", host.display()))?;
            found += 1;
        }
    }
    if found == 0 {
        return Err("no terminfo entries for screen/tmux/xterm on this machine".into());
    }
    // tmux refuses to start without a UTF-8 locale it can load.
    let locale = Path::new("/usr/lib/locale/C.utf8");
    let entries = std::fs::read_dir(locale)
        .map_err(|e| format!("{}: {e} (tmux needs a C.UTF-8 locale)", locale.display()))?;
    for e in entries.flatten() {
        let p = e.path();
        if p.is_file() {
            copy_in(rootfs, &p)?;
        } else if p.is_dir() {
            for inner in std::fs::read_dir(&p).map_err(|e| e.to_string())?.flatten() {
                copy_in(rootfs, &inner.path())?;
            }
        }
    }
    Ok(())
}

/// A running container from the test image, removed on drop.
pub struct Container {
    pub name: String,
    global: Vec<String>,
}

impl Container {
    pub fn start(store: &Store, tag: &str) -> Result<Container, String> {
        Container::start_image(store, tag, IMAGE)
    }

    /// A container from `image` (e.g. [`Store::tmux_image`]).
    pub fn start_image(store: &Store, tag: &str, image: &str) -> Result<Container, String> {
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
            image,
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
