//! Small helpers the benchmarks share: percentiles, milliseconds and the
//! load average printed next to the figures.

use std::time::Duration;

/// The `p`th percentile of sorted samples.
pub fn pct(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The machine's 1, 5 and 15 minute load averages.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
