//! Reading one record line strictly: a JSON object in which no object has
//! the same key twice. serde_json keeps the last of two equal keys without
//! a word, so `{"approved":true,…,"approved":false}` would read as one
//! thing here and as another to a reader that keeps the first; the record
//! refuses such a line instead of choosing.
//!
//! It only reads text; it never writes and never judges the chain.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// The first key an object of `line` holds twice (None: none does, or
/// the line is not JSON at all — the caller finds that out on its own).
pub fn duplicate_key(line: &str) -> Option<String> {
    let err = serde_json::from_str::<Checked>(line).err()?;
    let text = err.to_string();
    let rest = text.strip_prefix(MARK)?;
    // serde_json appends " at line L column C".
    let key = rest.rsplit_once(" at line ").map_or(rest, |(k, _)| k);
    // The key comes from the file: safe to print, and short.
    let key: String = vigil_protocol::text::sanitize(key)
        .chars()
        .take(80)
        .collect();
    Some(key)
}

/// Where the error names the key it found twice.
const MARK: &str = "duplicate key: ";

/// Any JSON value, walked only to look at the keys of its objects.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Walk)
    }
}

struct Walk;

impl<'de> Visitor<'de> for Walk {
    type Value = Checked;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("{MARK}{key}")));
            }
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_twice_is_named_at_any_depth_and_a_clean_line_passes() {
        assert_eq!(
            duplicate_key(r#"{"approved":true,"a":1,"approved":false}"#).as_deref(),
            Some("approved")
        );
        assert_eq!(
            duplicate_key(r#"{"x":[{"k":1,"k":2}]}"#).as_deref(),
            Some("k")
        );
        // Escapes are read first: "\u0061" is the key "a".
        assert_eq!(duplicate_key(r#"{"a":1,"\u0061":2}"#).as_deref(), Some("a"));
        assert_eq!(
            duplicate_key(r#"{"a":1,"b":{"a":2},"c":[1,"a",null]}"#),
            None
        );
        assert_eq!(duplicate_key("not json"), None);
        assert_eq!(
            duplicate_key("{\"\\u001b[2Jk\":1,\"\\u001b[2Jk\":2}").as_deref(),
            Some("k"),
            "a key is named without its escapes"
        );
    }
}
