//! Start-up cost of the kernel sandbox: the same command run through
//! `ExecutionContext::local()` unsandboxed (`sh -c`, own process group) and
//! sandboxed (the `vigil __sandbox` helper: capabilities dropped, Landlock,
//! seccomp, then `/bin/sh -c`, and the clean-up of its group), interleaved
//! in one run so load hits both alike. Prints p50 / p99 of the wall time of
//! each, the difference and the ratio, and the CPU time the started
//! processes used (user + system, from `getrusage(RUSAGE_CHILDREN)`), which
//! other load on the machine does not inflate.
//!
//! Run with `cargo bench --bench sandbox` (N with VIGIL_BENCH_N, default
//! 300; the command with VIGIL_BENCH_CMD, default `true`; the helper with
//! VIGIL_BENCH_HELPER, default the small `vigil-sandbox`; give it the
//! `vigil` binary to measure the full binary's `__sandbox` mode).

#[path = "support/stats.rs"]
mod stats;

use std::time::{Duration, Instant};

use stats::{load, ms, pct};
use vigil::exec::{ExecutionContext, RunRequest, sandbox};

/// User + system time of every reaped child so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

#[derive(Default)]
struct Samples {
    wall: Vec<Duration>,
    cpu: Duration,
}

impl Samples {
    async fn once(&mut self, ctx: &ExecutionContext, cmd: &str, sandboxed: bool) {
        let req = RunRequest {
            command: cmd.into(),
            sandbox: sandboxed,
            ..Default::default()
        };
        let (start, cpu) = (Instant::now(), children_cpu());
        let out = ctx.run(req, None).await.expect("the command runs");
        self.wall.push(start.elapsed());
        self.cpu += children_cpu() - cpu;
        assert_eq!(out.exit_code, Some(0), "{out:?}");
    }

    /// p50, p99 and CPU time per run, in ms.
    fn summary(&mut self) -> (f64, f64, f64) {
        self.wall.sort();
        let cpu = ms(self.cpu) / self.wall.len() as f64;
        (ms(pct(&self.wall, 50)), ms(pct(&self.wall, 99)), cpu)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let n: usize = std::env::var("VIGIL_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let cmd = std::env::var("VIGIL_BENCH_CMD").unwrap_or_else(|_| "true".into());
    let helper = std::env::var("VIGIL_BENCH_HELPER")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_vigil-sandbox").into());
    sandbox::set_helper(&helper);
    sandbox::probe().expect("the sandbox is available on this machine");
    let ctx = ExecutionContext::local();
    let (mut plain, mut boxed) = (Samples::default(), Samples::default());
    // Warm both paths (page cache), then forget the warm-up.
    for _ in 0..10 {
        plain.once(&ctx, &cmd, false).await;
        boxed.once(&ctx, &cmd, true).await;
    }
    let (mut plain, mut boxed) = (Samples::default(), Samples::default());
    let load_before = load();
    for i in 0..n {
        // Alternate which goes first so neither always follows the other.
        if i % 2 == 0 {
            plain.once(&ctx, &cmd, false).await;
            boxed.once(&ctx, &cmd, true).await;
        } else {
            boxed.once(&ctx, &cmd, true).await;
            plain.once(&ctx, &cmd, false).await;
        }
    }
    let (p50, p99, pcpu) = plain.summary();
    let (b50, b99, bcpu) = boxed.summary();
    println!("sandbox start-up, `{cmd}`, N = {n} each, interleaved, helper {helper}");
    println!("load average before: {load_before}; after: {}", load());
    println!("unsandboxed sh -c : p50 {p50:.3} ms  p99 {p99:.3} ms  cpu {pcpu:.3} ms/run");
    println!("sandboxed         : p50 {b50:.3} ms  p99 {b99:.3} ms  cpu {bcpu:.3} ms/run");
    println!(
        "overhead          : p50 {:+.3} ms ({:.2}x)  p99 {:+.3} ms ({:.2}x)  cpu {:+.3} ms/run",
        b50 - p50,
        b50 / p50,
        b99 - p99,
        b99 / p99,
        bcpu - pcpu,
    );
    masks_cost();
}

/// vigil's side of the secret masks (the configured places plus the name
/// walk of the working tree, here the current directory), and how many
/// Landlock read rules the helper then makes.
fn masks_cost() {
    let mut walls = Vec::new();
    let mut masks = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        masks = sandbox::masks_for(None);
        walls.push(t.elapsed());
    }
    walls.sort();
    let mut excluded = sandbox::readable::real_places(&masks);
    excluded.push("/dev".into());
    let t = Instant::now();
    let rules = sandbox::readable::readable_beneath(&excluded).map_or(0, |r| r.len());
    println!(
        "masks             : {} places, listed in p50 {:.3} ms; {rules} read rules, listed in {:.3} ms",
        masks.len(),
        ms(pct(&walls, 50)),
        ms(t.elapsed()),
    );
}
