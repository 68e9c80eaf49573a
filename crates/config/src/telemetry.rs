//! `[telemetry]`: where OpenTelemetry spans for turns, tool calls and
//! approval decisions go (OTLP over HTTP, protobuf; docs/audit.md). Plain
//! data with its own checks; it never sends anything.

use serde::Deserialize;

use super::ConfigError;

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    /// The receiver's base URL (`http://127.0.0.1:4318`); spans are POSTed
    /// to `<otlp_endpoint>/v1/traces`. None: no export.
    pub otlp_endpoint: Option<String>,
    /// The `service.name` resource attribute.
    pub service_name: String,
    /// Seconds one export may take.
    pub timeout_secs: u64,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            otlp_endpoint: None,
            service_name: "vigil".into(),
            timeout_secs: 5,
        }
    }
}

impl TelemetryConfig {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, message: String| ConfigError::Invalid {
            key: format!("telemetry.{key}"),
            message,
        };
        if let Some(url) = &self.otlp_endpoint
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(bad(
                "otlp_endpoint",
                format!("`{url}` must start with http:// or https://"),
            ));
        }
        if !(1..=60).contains(&self.timeout_secs) {
            return Err(bad(
                "timeout_secs",
                format!("{} is outside 1..=60", self.timeout_secs),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;
    use std::path::Path;

    #[test]
    fn the_section_parses_and_bad_values_are_named() {
        let text = "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n";
        let cfg = Config::from_toml(text, Path::new("t.toml")).expect("parses");
        assert_eq!(
            cfg.telemetry.otlp_endpoint.as_deref(),
            Some("http://127.0.0.1:4318")
        );
        assert_eq!(cfg.telemetry.service_name, "vigil");
        let bad = Config::from_toml("[telemetry]\notlp_endpoint = \"udp://x\"\n", Path::new("t"));
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("telemetry.otlp_endpoint")
        );
        let bad = Config::from_toml("[telemetry]\ntimeout_secs = 0\n", Path::new("t"));
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("telemetry.timeout_secs")
        );
    }
}
