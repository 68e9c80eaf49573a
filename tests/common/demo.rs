//! The folder the demo's scripted tour writes (`/tmp/vigil-demo`): a test
//! that runs the demo and approves its write holds [`DemoDir`], so one such
//! test at a time has the folder, made anew (a file left by an earlier run
//! turned the tour's "new file" card into an empty diff), and removed after
//! (`.ci/leftovers` names it otherwise).
#![allow(dead_code)]

/// Held while a test runs the demo.
pub struct DemoDir(std::sync::MutexGuard<'static, ()>);

const DEMO_DIR: &str = "/tmp/vigil-demo";

impl DemoDir {
    pub fn take() -> DemoDir {
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let held = ONE.lock().unwrap_or_else(|e| e.into_inner());
        let _ = std::fs::remove_dir_all(DEMO_DIR);
        DemoDir(held)
    }
}

impl Drop for DemoDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(DEMO_DIR);
    }
}
