//! A small seeded mutation fuzzer that runs on stable Rust, shared by the
//! CI smoke test (`tests/fuzz_smoke.rs`) and the long-run driver
//! (`benches/fuzz.rs`).
//!
//! Each [`Target`] has a corpus of valid seeds and a list of interesting
//! tokens. An input is a seed (or a splice of two) put through one to
//! eight mutations: bit flips, interesting bytes, token inserts, deletions,
//! duplications and truncation. A few mutants are kept as new seeds so the
//! corpus drifts. Panics are caught (`catch_unwind`) and grouped by their
//! source location into unique crashes, each kept with its smallest input.
//! There is no coverage feedback: this is a robustness net, not a
//! replacement for libFuzzer (see `fuzz/` and `docs/fuzzing.md`).
#![allow(dead_code)]

pub mod targets;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// xorshift64*: fast, seedable, good enough for mutation choices.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform-ish in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One fuzz target: a name, seeds, tokens and the function under test.
pub struct Target {
    pub name: &'static str,
    pub seeds: Vec<Vec<u8>>,
    pub tokens: Vec<Vec<u8>>,
    pub run: fn(&[u8]),
}

/// Run the target called `name` on `data` once, crashing as it would
/// (used by the libFuzzer wrappers in `fuzz/`, which supply the inputs).
pub fn run_named(name: &str, data: &[u8]) {
    type Runs = Vec<(&'static str, fn(&[u8]))>;
    static RUNS: std::sync::OnceLock<Runs> = std::sync::OnceLock::new();
    let runs = RUNS.get_or_init(|| targets::all().iter().map(|t| (t.name, t.run)).collect());
    let run = runs
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no fuzz target `{name}`"))
        .1;
    run(data)
}

/// What a run found.
#[derive(Debug)]
pub struct Report {
    pub name: &'static str,
    pub iterations: u64,
    /// Panic location + message -> smallest input that caused it.
    pub crashes: BTreeMap<String, Vec<u8>>,
    pub elapsed: Duration,
}

const INTERESTING: [u8; 16] = [
    0, 0x07, 0x1b, b'\\', b'"', b'\n', b'\r', b'{', b'}', b'[', b']', b';', 0x7f, 0x9b, 0xc3, 0xff,
];

/// Mutate `input` in place one to eight times.
pub fn mutate(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>], tokens: &[Vec<u8>]) {
    let rounds = 1 + rng.below(8);
    for _ in 0..rounds {
        let len = input.len();
        match rng.below(9) {
            0 if len > 0 => {
                let i = rng.below(len);
                input[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                input[i] = INTERESTING[rng.below(INTERESTING.len())];
            }
            2 if !tokens.is_empty() => {
                let t = &tokens[rng.below(tokens.len())];
                let at = rng.below(len + 1);
                input.splice(at..at, t.iter().copied());
            }
            3 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(16)).min(len);
                input.drain(a..b);
            }
            4 if len > 0 => {
                let a = rng.below(len);
                let b = (a + 1 + rng.below(32)).min(len);
                let piece: Vec<u8> = input[a..b].to_vec();
                let at = rng.below(len + 1);
                input.splice(at..at, piece);
            }
            5 if !corpus.is_empty() => {
                // Splice: our head with another seed's tail.
                let other = &corpus[rng.below(corpus.len())];
                let cut = rng.below(len + 1);
                let from = rng.below(other.len() + 1);
                input.truncate(cut);
                input.extend_from_slice(&other[from..]);
            }
            6 if len > 0 => input.truncate(rng.below(len)),
            7 => {
                let at = rng.below(len + 1);
                input.insert(at, rng.next() as u8);
            }
            _ => {
                // Repeat a token many times (deep nesting, long runs).
                if let Some(t) = tokens.get(rng.below(tokens.len().max(1))) {
                    let n = 1 + rng.below(64);
                    let at = rng.below(len + 1);
                    let rep: Vec<u8> = t.iter().copied().cycle().take(t.len() * n).collect();
                    input.splice(at..at, rep);
                }
            }
        }
    }
    input.truncate(64 * 1024);
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Install a panic hook that records the panic instead of printing it.
/// Returns the previous hook's replacement guard: call [`restore_hook`].
pub fn quiet_hook() {
    panic::set_hook(Box::new(|info| {
        let loc = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let first = msg.lines().next().unwrap_or("").chars().take(160);
        LAST_PANIC
            .with(|p| *p.borrow_mut() = Some(format!("{loc}: {}", first.collect::<String>())));
    }));
}

pub fn restore_hook() {
    let _ = panic::take_hook();
}

/// Run `target` for `iterations` generated inputs (the seeds first).
pub fn run(target: &Target, iterations: u64, seed: u64) -> Report {
    let mut rng = Rng::new(seed ^ fxhash(target.name.as_bytes()));
    let mut corpus = target.seeds.clone();
    let mut crashes: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let start = Instant::now();
    let mut input = Vec::new();
    for i in 0..iterations {
        input.clear();
        if (i as usize) < target.seeds.len() {
            input.extend_from_slice(&target.seeds[i as usize]);
        } else {
            input.extend_from_slice(&corpus[rng.below(corpus.len())]);
            mutate(&mut rng, &mut input, &corpus, &target.tokens);
        }
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| (target.run)(&input)));
        if outcome.is_err() {
            let key = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_else(|| "unknown panic".into());
            let slot = crashes.entry(key).or_insert_with(|| input.clone());
            if input.len() < slot.len() {
                *slot = input.clone();
            }
        } else if rng.below(512) == 0 && corpus.len() < 512 {
            corpus.push(input.clone());
        }
    }
    Report {
        name: target.name,
        iterations,
        crashes,
        elapsed: start.elapsed(),
    }
}

fn fxhash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Render a crash input for a report: lossy text, escaped, capped.
pub fn show_input(input: &[u8]) -> String {
    let s = String::from_utf8_lossy(&input[..input.len().min(400)]);
    format!("{s:?}")
}
