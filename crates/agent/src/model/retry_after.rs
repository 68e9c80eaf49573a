//! A `Retry-After` header (RFC 9110 §10.2.3) as whole seconds to wait:
//! delta-seconds, or an HTTP date in any of its three forms (read by the
//! `httpdate` crate, the one hyper uses). Pure: the clock is an argument.

use std::time::SystemTime;

/// Seconds to wait from `now`: delta-seconds as given (fractions rounded
/// up), an HTTP date as the time left until it (rounded up; a date in the
/// past is 0). `None` when the value is neither.
pub fn retry_after_secs(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| secs.ceil() as u64);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(match at.duration_since(now) {
        Ok(left) => left.as_secs() + u64::from(left.subsec_nanos() > 0),
        Err(_) => 0,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn delta_seconds_and_all_three_date_forms() {
        let now = at(1_445_412_480) + Duration::from_millis(250);
        assert_eq!(retry_after_secs("120", now), Some(120));
        assert_eq!(retry_after_secs(" 1.5 ", now), Some(2));
        assert_eq!(retry_after_secs("-1", now), None);
        // 07:28:30 is 29.75 s after `now`: rounded up.
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(30)
        );
        let start = at(1_445_412_480);
        for form in [
            "Wed, 21 Oct 2015 08:28:00 GMT",
            "Wednesday, 21-Oct-15 08:28:00 GMT",
            "Wed Oct 21 08:28:00 2015",
        ] {
            assert_eq!(retry_after_secs(form, start), Some(3600), "{form}");
        }
        // In the past (or this very second, already begun): no wait.
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(0)
        );
        assert_eq!(
            retry_after_secs("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(0)
        );
    }

    #[test]
    fn garbage_is_no_wait_at_all() {
        let now = at(1_445_412_480);
        for bad in [
            "",
            "tomorrow",
            "NaN",
            "inf",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
        ] {
            assert_eq!(retry_after_secs(bad, now), None, "{bad:?}");
        }
    }
}
