//! Long-run driver for the in-tree fuzzer (`tests/fuzzing/`):
//! `cargo bench --bench fuzz -- --iters 1000000 [--target NAME] [--seed N]`.
//! `--corpus DIR` instead writes each target's seeds to `DIR/<target>/`
//! (the starting corpus for the libFuzzer wrappers in `fuzz/`).
//! Prints, per target, the iterations, unique crashes (grouped by panic
//! location) and time; exits non-zero when anything crashed. Results and
//! the command are recorded in `docs/fuzzing.md`.

#[path = "../tests/fuzzing/mod.rs"]
mod fuzzing;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let iters: u64 = value("--iters")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let seed: u64 = value("--seed")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let only = value("--target");
    let targets: Vec<_> = fuzzing::targets::all()
        .into_iter()
        .filter(|t| only.as_deref().is_none_or(|o| o == t.name))
        .collect();
    if targets.is_empty() {
        eprintln!("no target named {only:?}");
        return ExitCode::FAILURE;
    }
    if let Some(dir) = value("--corpus") {
        for t in &targets {
            let d = std::path::Path::new(&dir).join(t.name);
            let written = std::fs::create_dir_all(&d).and_then(|()| {
                t.seeds
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, seed)| std::fs::write(d.join(format!("seed-{i}")), seed))
            });
            if let Err(e) = written {
                eprintln!("cannot write {}: {e}", d.display());
                return ExitCode::FAILURE;
            }
            println!("{}: {} seeds", d.display(), t.seeds.len());
        }
        return ExitCode::SUCCESS;
    }
    println!(
        "{:<14} {:>12} {:>8} {:>10} {:>10}",
        "target", "iterations", "crashes", "seconds", "µs/iter"
    );
    let mut total_crashes = 0;
    for t in &targets {
        fuzzing::quiet_hook();
        let r = fuzzing::run(t, iters, seed);
        fuzzing::restore_hook();
        let secs = r.elapsed.as_secs_f64();
        println!(
            "{:<14} {:>12} {:>8} {:>10.1} {:>10.2}",
            r.name,
            r.iterations,
            r.crashes.len(),
            secs,
            secs * 1e6 / r.iterations.max(1) as f64
        );
        for (k, input) in &r.crashes {
            println!("  crash: {k}\n    input: {}", fuzzing::show_input(input));
        }
        total_crashes += r.crashes.len();
    }
    if total_crashes == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
