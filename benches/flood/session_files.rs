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

/// The console's own slow-frame log lines (`vigil::latency`, written when
/// `VIGIL_LOG` asks for them) as (ms after Enter, the line's fields), so a
/// slow key seen from outside can be told apart: the console waited or drew
/// long (it is in the log), or the key reached it late (it is not).
/// None when the console wrote no log.
pub fn slow_frames(data: &Path, enter_ms: i64) -> Option<Vec<(i64, String)>> {
    let text = std::fs::read_to_string(data.join("vigil.log")).ok()?;
    let found = text
        .lines()
        .filter(|l| l.contains("slow frame"))
        .filter_map(|l| {
            let at = rfc3339_ms(l.split_whitespace().next()?)? - enter_ms;
            let fields = l.split("slow frame").nth(1).unwrap_or("").trim();
            (at >= -5).then(|| (at, fields.to_string()))
        })
        .collect();
    Some(found)
}

/// Unix ms of a `YYYY-MM-DDTHH:MM:SS.ffffffZ` UTC stamp.
fn rfc3339_ms(stamp: &str) -> Option<i64> {
    let (date, time) = stamp.trim_end_matches('Z').split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let secs: f64 = t.next()?.parse().ok()?;
    // Days since the epoch (civil calendar, Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + min * 60) * 1000 + (secs * 1000.0) as i64)
}
