//! CI smoke run of the in-tree fuzzer (`tests/fuzzing/`): every target gets
//! a short seeded run and must finish with no crash. The long run is
//! `cargo bench --bench fuzz` (see `docs/fuzzing.md`).

mod fuzzing;

use std::sync::Mutex;

/// The panic hook is process-wide: one target at a time.
static HOOK: Mutex<()> = Mutex::new(());

fn smoke(name: &str, iterations: u64) {
    let target = fuzzing::targets::all()
        .into_iter()
        .find(|t| t.name == name)
        .expect("target exists");
    let _guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    fuzzing::quiet_hook();
    let report = fuzzing::run(&target, iterations, 0x5eed);
    fuzzing::restore_hook();
    let crashes: Vec<String> = report
        .crashes
        .iter()
        .map(|(k, input)| format!("{k}\n  input: {}", fuzzing::show_input(input)))
        .collect();
    assert!(
        crashes.is_empty(),
        "{name}: {} unique crash(es) in {iterations} iterations:\n{}",
        crashes.len(),
        crashes.join("\n")
    );
}

/// Iterations per target in CI; `VIGIL_FUZZ_SMOKE_ITERS` overrides.
fn iters(default: u64) -> u64 {
    std::env::var("VIGIL_FUZZ_SMOKE_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn every_target_is_tested_here() {
    let names: Vec<&str> = fuzzing::targets::all().iter().map(|t| t.name).collect();
    let here = include_str!("fuzz_smoke.rs");
    for n in names {
        assert!(
            here.contains(&format!("smoke(\"{n}\"")),
            "no smoke test for {n}"
        );
    }
}

#[test]
fn the_fuzzer_reports_a_planted_crash() {
    let target = fuzzing::Target {
        name: "planted",
        seeds: vec![b"abc".to_vec()],
        tokens: vec![b"BOOM".to_vec()],
        run: |d| assert!(!d.windows(4).any(|w| w == b"BOOM"), "planted"),
    };
    let _guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    fuzzing::quiet_hook();
    let report = fuzzing::run(&target, 2_000, 1);
    fuzzing::restore_hook();
    assert_eq!(report.crashes.len(), 1, "{:?}", report.crashes);
}

#[test]
fn sse() {
    smoke("sse", iters(20_000));
}
#[test]
fn anthropic_sse() {
    smoke("anthropic_sse", iters(20_000));
}
#[test]
fn validate() {
    smoke("validate", iters(20_000));
}
#[test]
fn tmux_output() {
    smoke("tmux_output", iters(20_000));
}
#[test]
fn ansi_mirror() {
    smoke("ansi_mirror", iters(5_000));
}
#[test]
fn sanitize() {
    smoke("sanitize", iters(20_000));
}
#[test]
fn config() {
    smoke("config", iters(5_000));
}
#[test]
fn theme() {
    smoke("theme", iters(5_000));
}
#[test]
fn json_tags() {
    smoke("json_tags", iters(20_000));
}
#[test]
fn risk() {
    smoke("risk", iters(20_000));
}

#[test]
fn shell() {
    smoke("shell", iters(20_000));
}
