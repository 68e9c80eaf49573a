//! Cost of a preview: the same command run bare (`/bin/sh -c` in the
//! directory) and previewed (the helper builds the throwaway view: mount,
//! PID and network namespaces, overlays on a tmpfs, the seccomp network
//! watch; runs it; reads the effects from the upper layer and diffs them;
//! tears it down), interleaved in one run so load hits both alike. Two
//! commands: `touch x` and `sed -i s/a/b/ big` on a 1 MB text file (every
//! line changes: the diff is computed and cut at its cap). Prints p50 / p99
//! of each, the difference and the ratio.
//!
//! Run with `cargo bench --bench preview` (N with VIGIL_BENCH_N, default
//! 40). The goal: a preview costs at most 150 ms more than the bare run.

#[path = "support/stats.rs"]
mod stats;

use std::path::Path;
use std::time::{Duration, Instant};

use stats::{load, ms, pct};
use vigil::exec::preview::{PreviewOptions, preview};
use vigil::exec::sandbox;

/// A directory with `big`: 1 MiB of text lines holding `a`s.
fn setup(dir: &Path) {
    let line = "a quick brown fox jumps over a lazy dog, again and again\n";
    let text = line.repeat((1 << 20) / line.len() + 1);
    std::fs::write(dir.join("big"), &text.as_bytes()[..1 << 20]).expect("write big");
    let _ = std::fs::remove_file(dir.join("x"));
}

async fn bare(cmd: &str, dir: &Path) -> Duration {
    setup(dir);
    let start = Instant::now();
    let out = tokio::process::Command::new("/bin/sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .process_group(0)
        .output()
        .await
        .expect("sh runs");
    let took = start.elapsed();
    assert!(out.status.success(), "{out:?}");
    took
}

async fn previewed(cmd: &str, dir: &Path) -> Duration {
    setup(dir);
    let start = Instant::now();
    let report = preview(cmd, dir, PreviewOptions::default())
        .await
        .expect("the preview runs");
    let took = start.elapsed();
    assert_eq!(report.exit_code, Some(0), "{}", report.to_text());
    assert_eq!(report.files.len(), 1, "{}", report.to_text());
    took
}

async fn measure(cmd: &str, n: usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    for _ in 0..3 {
        bare(cmd, dir.path()).await;
        previewed(cmd, dir.path()).await;
    }
    let (mut b, mut p) = (Vec::new(), Vec::new());
    for i in 0..n {
        if i % 2 == 0 {
            b.push(bare(cmd, dir.path()).await);
            p.push(previewed(cmd, dir.path()).await);
        } else {
            p.push(previewed(cmd, dir.path()).await);
            b.push(bare(cmd, dir.path()).await);
        }
    }
    b.sort();
    p.sort();
    let (b50, b99, p50, p99) = (
        ms(pct(&b, 50)),
        ms(pct(&b, 99)),
        ms(pct(&p, 50)),
        ms(pct(&p, 99)),
    );
    println!("`{cmd}`, N = {n} each, interleaved");
    println!("  bare      : p50 {b50:8.3} ms  p99 {b99:8.3} ms");
    println!("  previewed : p50 {p50:8.3} ms  p99 {p99:8.3} ms");
    println!(
        "  overhead  : p50 {:+8.3} ms ({:.1}x)  p99 {:+8.3} ms ({:.1}x)",
        p50 - b50,
        p50 / b50,
        p99 - b99,
        p99 / b99
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::var("VIGIL_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    sandbox::set_helper(env!("CARGO_BIN_EXE_vigil-sandbox"));
    println!("preview cost, load average before: {}", load());
    measure("touch x", n).await;
    measure("sed -i s/a/b/ big", n).await;
    println!("load average after: {}", load());
}
