//! The JSON envelope every tool result is wrapped in before the model sees it:
//! `{"harness_timestamp":{"source":"harness","unix_millis":N},"result":...}`.

use serde_json::{Value, json};

/// Milliseconds since the Unix epoch, from the harness's clock.
pub fn unix_millis() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// Wrap a result in the envelope, stamped now.
pub fn wrap(result: Value) -> Value {
    wrap_at(result, unix_millis())
}

/// Wrap a result in the envelope with an explicit timestamp.
pub fn wrap_at(result: Value, millis: u128) -> Value {
    json!({
        "harness_timestamp": { "source": "harness", "unix_millis": millis as u64 },
        "result": result,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_has_harness_timestamp_and_result() {
        let v = wrap_at(json!({"exit_code": 0}), 1_772_283_708_794);
        assert_eq!(
            v.to_string(),
            r#"{"harness_timestamp":{"source":"harness","unix_millis":1772283708794},"result":{"exit_code":0}}"#
        );
    }

    #[test]
    fn wrap_uses_current_clock() {
        let before = unix_millis() as u64;
        let v = wrap(json!("x"));
        let ts = v["harness_timestamp"]["unix_millis"].as_u64().unwrap();
        assert!(ts >= before);
        assert_eq!(v["harness_timestamp"]["source"], "harness");
    }
}
