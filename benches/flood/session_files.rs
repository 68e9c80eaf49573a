//! What the flood bench reads from a vigil session's folder: file sizes and
//! the recorded events' times. Never writes.

use std::path::{Path, PathBuf};

/// Bytes in every file under `dir` whose path contains `part`.
pub fn bytes_under(dir: &Path, part: &str) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(|e| e.ok())
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                bytes_under(&p, part)
            } else if p.to_string_lossy().contains(part) {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            } else {
                0
            }
        })
        .sum()
}

pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The session's recorded events as (ms after Enter, type): where a turn's
/// fixed costs go (`VIGIL_FLOOD_TIMELINE=1` prints it).
pub fn timeline(data: &Path, enter_ms: i64) -> Vec<(i64, String)> {
    let mut files = Vec::new();
    find_named(data, "events.jsonl", &mut files);
    let mut out = Vec::new();
    for f in files {
        for line in std::fs::read_to_string(f).unwrap_or_default().lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let at = v["at_ms"].as_i64().unwrap_or(0) - enter_ms;
            let kind = v["event"]["type"].as_str().unwrap_or("?").to_string();
            if at >= -5 {
                out.push((at, kind));
            }
        }
    }
    out.sort();
    out
}

fn find_named(dir: &Path, name: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let p = e.path();
        if p.is_dir() {
            find_named(&p, name, found);
        } else if p.file_name().is_some_and(|n| n == name) {
            found.push(p);
        }
    }
}
