//! What a model server's `/models` said about a model's context window,
//! remembered per server (base URL) and model name in one small JSON file in
//! the data directory (`<data_dir>/model-windows.json`), so the list is asked
//! once per server and not at every start. An entry older than its age limit
//! (a day by default) is asked again.
//!
//! It never fails anything: a file that cannot be read or parsed is treated
//! as empty (and rewritten whole on the next write); a write that fails is
//! logged and forgotten. It never stores the API key or anything but the
//! base URL, the model name, the window and when it was asked.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The file name inside the data directory.
pub const FILE_NAME: &str = "model-windows.json";

/// How long a remembered answer is used without asking again.
pub const MAX_AGE: Duration = Duration::from_secs(24 * 60 * 60);

/// The remembered answers, in one file.
#[derive(Debug, Clone)]
pub struct DiscoverCache {
    file: PathBuf,
    max_age: Duration,
}

/// A remembered answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Remembered {
    /// The window the server published (None: it published none).
    pub window: Option<u64>,
    /// How long ago it was asked.
    pub age: Duration,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    base_url: String,
    model: String,
    window: Option<u64>,
    /// Seconds since the Unix epoch.
    asked_at: u64,
}

impl DiscoverCache {
    /// The cache in `data_dir`, with the default age limit.
    pub fn in_data_dir(data_dir: &Path) -> Self {
        Self::at(data_dir.join(FILE_NAME), MAX_AGE)
    }

    /// The cache in `file`, entries used for at most `max_age`.
    pub fn at(file: PathBuf, max_age: Duration) -> Self {
        DiscoverCache { file, max_age }
    }

    /// The file it lives in.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The answer remembered for `model` at `base_url`, if it is fresh.
    pub fn get(&self, base_url: &str, model: &str) -> Option<Remembered> {
        let now = now_secs();
        let base_url = normal(base_url);
        self.read()
            .entries
            .into_iter()
            .find(|e| e.base_url == base_url && e.model == model)
            .and_then(|e| {
                // An entry from the future (a clock set back) is not trusted.
                let age = Duration::from_secs(now.checked_sub(e.asked_at)?);
                (age <= self.max_age).then_some(Remembered {
                    window: e.window,
                    age,
                })
            })
    }

    /// Remember `window` for `model` at `base_url` (stale entries dropped).
    pub fn put(&self, base_url: &str, model: &str, window: Option<u64>) {
        let now = now_secs();
        let base_url = normal(base_url);
        let mut cache = self.read();
        cache.entries.retain(|e| {
            let fresh = now
                .checked_sub(e.asked_at)
                .is_some_and(|age| Duration::from_secs(age) <= self.max_age);
            fresh && !(e.base_url == base_url && e.model == model)
        });
        cache.entries.push(Entry {
            base_url: base_url.to_string(),
            model: model.to_string(),
            window,
            asked_at: now,
        });
        if let Err(e) = self.write(&cache) {
            tracing::info!(file = %self.file.display(), "model window not remembered: {e}");
        }
    }

    fn read(&self) -> CacheFile {
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return CacheFile::default();
        };
        serde_json::from_str(&text).unwrap_or_else(|e| {
            tracing::info!(file = %self.file.display(), "model window cache ignored: {e}");
            CacheFile::default()
        })
    }

    /// Written to a temporary file beside it, then renamed over it: a reader
    /// never sees half a file.
    fn write(&self, cache: &CacheFile) -> std::io::Result<()> {
        let dir = self.file.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let text = serde_json::to_string_pretty(cache).map_err(std::io::Error::other)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        std::io::Write::write_all(&mut tmp, text.as_bytes())?;
        tmp.persist(&self.file).map_err(|e| e.error)?;
        Ok(())
    }
}

/// `http://h/v1/` and `http://h/v1` are one server.
fn normal(base_url: &str) -> &str {
    base_url.trim_end_matches('/')
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembered_per_server_and_model() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiscoverCache::in_data_dir(dir.path());
        assert_eq!(cache.get("http://a/v1", "m"), None);
        cache.put("http://a/v1/", "m", Some(4096));
        cache.put("http://b/v1", "m", None);
        assert_eq!(cache.get("http://a/v1", "m").unwrap().window, Some(4096));
        assert_eq!(cache.get("http://b/v1", "m").unwrap().window, None);
        assert_eq!(cache.get("http://a/v1", "other"), None);
        cache.put("http://a/v1", "m", Some(8192));
        assert_eq!(cache.get("http://a/v1", "m").unwrap().window, Some(8192));
    }

    #[test]
    fn stale_entries_are_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.json");
        let old = now_secs() - 100;
        let text = format!(
            r#"{{"entries":[{{"base_url":"http://a/v1","model":"m","window":4096,"asked_at":{old}}}]}}"#
        );
        std::fs::write(&file, text).unwrap();
        let short = DiscoverCache::at(file.clone(), Duration::from_secs(10));
        assert_eq!(short.get("http://a/v1", "m"), None);
        let long = DiscoverCache::at(file, Duration::from_secs(1000));
        assert_eq!(long.get("http://a/v1", "m").unwrap().window, Some(4096));
    }

    #[test]
    fn a_corrupt_file_is_ignored_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let cache = DiscoverCache::in_data_dir(dir.path());
        std::fs::write(cache.file(), "{not json").unwrap();
        assert_eq!(cache.get("http://a/v1", "m"), None);
        cache.put("http://a/v1", "m", Some(1000));
        assert_eq!(cache.get("http://a/v1", "m").unwrap().window, Some(1000));
        let text = std::fs::read_to_string(cache.file()).unwrap();
        assert!(
            serde_json::from_str::<serde_json::Value>(&text).is_ok(),
            "{text}"
        );
    }
}
