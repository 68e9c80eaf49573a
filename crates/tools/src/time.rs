//! `time`: the harness's wall-clock time in the format the model asks for,
//! plus the common UTC fields (`unix_millis`, `iso_8601_utc`, `rfc_2822_utc`).
//!
//! The calendar is the `time` crate's (UTC only). This tool reports the
//! harness clock, never the target's, and never runs anything.

use std::time::{SystemTime, UNIX_EPOCH};
use vigil_policy::call::ToolCall;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput};

/// Formats the tool accepts, default first.
pub const FORMATS: [&str; 7] = [
    "epoch", "epoch_ms", "epoch_ns", "iso", "rfc2822", "date", "time",
];

/// A UTC instant, formatted the ways the tool (and `vigil sessions`) print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime(time::OffsetDateTime);

impl UtcTime {
    /// Milliseconds since the Unix epoch (clamped to what the calendar holds).
    pub fn from_unix_millis(ms: i64) -> Self {
        let nanos = i128::from(ms) * 1_000_000;
        UtcTime(
            time::OffsetDateTime::from_unix_timestamp_nanos(nanos)
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH),
        )
    }

    /// `2024-02-25T22:26:40.000Z`
    pub fn iso(&self) -> String {
        format!(
            "{}T{}.{:03}Z",
            self.date(),
            self.time(),
            self.0.millisecond()
        )
    }

    /// `Sun, 25 Feb 2024 22:26:40 +0000`
    pub fn rfc2822(&self) -> String {
        let d = self.0;
        let weekday = &d.weekday().to_string()[..3];
        let month = &d.month().to_string()[..3];
        format!(
            "{weekday}, {:02} {month} {:04} {} +0000",
            d.day(),
            d.year(),
            self.time()
        )
    }

    /// `2024-02-25`
    pub fn date(&self) -> String {
        let d = self.0;
        format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
    }

    /// `22:26:40`
    pub fn time(&self) -> String {
        let d = self.0;
        format!("{:02}:{:02}:{:02}", d.hour(), d.minute(), d.second())
    }
}

/// The tool's result for an instant given in nanoseconds since the epoch.
pub fn snapshot(unix_nanos: u128, format: &str) -> Result<Value, String> {
    let ms = i64::try_from(unix_nanos / 1_000_000).unwrap_or(i64::MAX);
    let t = UtcTime::from_unix_millis(ms);
    let value = match format {
        "epoch" => json!(unix_nanos / 1_000_000_000),
        "epoch_ms" => json!(ms),
        "epoch_ns" => json!(u64::try_from(unix_nanos).unwrap_or(u64::MAX)),
        "iso" => json!(t.iso()),
        "rfc2822" => json!(t.rfc2822()),
        "date" => json!(t.date()),
        "time" => json!(t.time()),
        other => {
            return Err(format!(
                "unknown format \"{other}\"; accepted: {}",
                FORMATS.join(", ")
            ));
        }
    };
    Ok(json!({
        "format": format,
        "value": value,
        "unix_millis": ms,
        "iso_8601_utc": t.iso(),
        "rfc_2822_utc": t.rfc2822(),
    }))
}

const DESCRIPTION: &str = "Return the current wall-clock time of the harness (the machine running \
vigil, not the target) in UTC. The result holds `value` in the requested format plus \
`unix_millis`, `iso_8601_utc` and `rfc_2822_utc`.

When to use: timestamping notes or actions, working out how long something took, or checking \
today's date before reasoning about log ages or certificate expiry.

When NOT to use: to learn the target machine's clock or time zone (use run_shell with `date`), or \
to wait (this tool returns at once).

Disambiguation: every tool result already carries harness_timestamp; call time when you need a \
specific format or the calendar fields.

Example: {\"format\": \"iso\"}";

/// The `time` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeTool;

impl TimeTool {
    pub fn new() -> Self {
        TimeTool
    }
}

#[async_trait]
impl Tool for TimeTool {
    fn name(&self) -> &str {
        "time"
    }

    fn definition(&self) -> ToolDefinition {
        ToolDefinition::function(
            "time",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "format": {
                        "type": "string",
                        "enum": FORMATS,
                        "description": "epoch (seconds, default), epoch_ms, epoch_ns, iso (2025-02-26T12:34:56.789Z), rfc2822 (Wed, 26 Feb 2025 12:34:56 +0000), date (2025-02-26) or time (12:34:56)."
                    }
                },
                "additionalProperties": false,
                "examples": [{"format": "iso"}]
            }),
        )
    }

    async fn execute(&self, call: &ToolCall, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let v: &Value = super::object_args(call)?;
        let format = match &v["format"] {
            Value::Null => "epoch".to_string(),
            Value::String(s) if s.trim().is_empty() => "epoch".to_string(),
            Value::String(s) => s.trim().to_ascii_lowercase(),
            other => {
                return Err(ToolError::InvalidArguments(format!(
                    "`format` must be a string, got {other}"
                )));
            }
        };
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        snapshot(nanos, &format)
            .map(ToolOutput::new)
            .map_err(ToolError::InvalidArguments)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: u128 = 1_708_900_000_123_456_789;

    #[test]
    fn known_instants_convert() {
        let t = UtcTime::from_unix_millis(1_708_900_000_000);
        assert_eq!(t.iso(), "2024-02-25T22:26:40.000Z");
        assert_eq!(t.rfc2822(), "Sun, 25 Feb 2024 22:26:40 +0000");
        let epoch = UtcTime::from_unix_millis(0);
        assert_eq!(epoch.rfc2822(), "Thu, 01 Jan 1970 00:00:00 +0000");
        // Leap day, and the day after in a century non-leap year.
        assert_eq!(
            UtcTime::from_unix_millis(951_782_400_000).date(),
            "2000-02-29"
        );
        assert_eq!(
            UtcTime::from_unix_millis(4_107_542_400_000).rfc2822(),
            "Mon, 01 Mar 2100 00:00:00 +0000"
        );
        assert_eq!(
            UtcTime::from_unix_millis(-1).iso(),
            "1969-12-31T23:59:59.999Z"
        );
    }

    #[test]
    fn every_format_and_the_common_fields() {
        let cases = [
            ("epoch", json!(1_708_900_000u64)),
            ("epoch_ms", json!(1_708_900_000_123u64)),
            ("epoch_ns", json!(1_708_900_000_123_456_789u64)),
            ("iso", json!("2024-02-25T22:26:40.123Z")),
            ("rfc2822", json!("Sun, 25 Feb 2024 22:26:40 +0000")),
            ("date", json!("2024-02-25")),
            ("time", json!("22:26:40")),
        ];
        for (f, want) in cases {
            let v = snapshot(T, f).unwrap();
            assert_eq!(v["value"], want, "{f}");
            assert_eq!(v["unix_millis"], json!(1_708_900_000_123u64));
            assert_eq!(v["iso_8601_utc"], "2024-02-25T22:26:40.123Z");
            assert_eq!(v["rfc_2822_utc"], "Sun, 25 Feb 2024 22:26:40 +0000");
        }
        let e = snapshot(T, "unix").unwrap_err();
        assert!(e.contains("rfc2822") && e.contains("unix"), "{e}");
    }

    #[tokio::test]
    async fn tool_reports_the_current_clock() {
        let before = crate::envelope::unix_millis() as u64;
        let out = TimeTool::new()
            .execute(&crate::test_call(""), &ToolContext::default())
            .await
            .unwrap();
        let after = crate::envelope::unix_millis() as u64;
        let secs = out.result["value"].as_u64().unwrap();
        assert!(secs >= before / 1000 && secs <= after / 1000);
        let ms = out.result["unix_millis"].as_u64().unwrap();
        assert!(ms >= before && ms <= after);
        let out = TimeTool::new()
            .execute(
                &crate::test_call(r#"{"format":"ISO"}"#),
                &ToolContext::default(),
            )
            .await
            .unwrap();
        assert!(out.result["value"].as_str().unwrap().ends_with('Z'));
        let e = TimeTool::new()
            .execute(
                &crate::test_call(r#"{"format":"weekday"}"#),
                &ToolContext::default(),
            )
            .await
            .unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments(_)));
    }

    #[test]
    fn definition_has_routing_sections() {
        let d = TimeTool::new().definition();
        for s in [
            "When to use:",
            "When NOT to use:",
            "Disambiguation:",
            "Example:",
        ] {
            assert!(d.function.description.contains(s), "{s}");
        }
        assert_eq!(
            d.function.parameters["properties"]["format"]["enum"][0],
            "epoch"
        );
    }
}
