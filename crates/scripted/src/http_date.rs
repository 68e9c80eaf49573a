//! HTTP dates (RFC 9110 §5.6.7), as `Retry-After` carries them: parsing the
//! preferred IMF-fixdate form (`Sun, 06 Nov 1994 08:49:37 GMT`) and the
//! obsolete asctime form (`Sun Nov  6 08:49:37 1994`), and formatting
//! IMF-fixdate (for the scripted server).
//!
//! The obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) is rejected:
//! its two-digit year is ambiguous and no current server sends it; a caller
//! treats it like any other unparseable value. The weekday must be a valid
//! name but is not checked against the date. Leap seconds (`:60`) are
//! rejected.
//!
//! Pure functions over text and [`SystemTime`]: no I/O, no clock reads.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Parse an HTTP date (IMF-fixdate or asctime); `None` for anything else.
pub fn parse(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    let (day_name, rest) = text.split_at_checked(3)?;
    DAYS.contains(&day_name).then_some(())?;
    if let Some(rest) = rest.strip_prefix(", ") {
        imf_fixdate(rest)
    } else {
        asctime(rest.strip_prefix(' ')?)
    }
}

/// `06 Nov 1994 08:49:37 GMT` (after the day name and the comma).
fn imf_fixdate(rest: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts[..] else {
        return None;
    };
    (day.len() == 2 && year.len() == 4).then_some(())?;
    to_time(digits(year)?, month, digits(day)?, time)
}

/// `Nov  6 08:49:37 1994` (after the day name): the day is padded with a
/// space, not a zero.
fn asctime(rest: &str) -> Option<SystemTime> {
    let (month, rest) = rest.split_at_checked(4)?;
    let month = month.strip_suffix(' ')?;
    let (day, rest) = rest.split_at_checked(3)?;
    let day = day.strip_suffix(' ')?;
    let day = day.strip_prefix(' ').unwrap_or(day);
    let (time, year) = rest.split_once(' ')?;
    (year.len() == 4).then_some(())?;
    to_time(digits(year)?, month, digits(day)?, time)
}

/// Validated fields as a point in time (from 1970 on).
fn to_time(year: u64, month: &str, day: u64, time: &str) -> Option<SystemTime> {
    let month = MONTHS.iter().position(|m| *m == month)? as u64 + 1;
    let parts: Vec<&str> = time.split(':').collect();
    let [h, m, s] = parts[..] else {
        return None;
    };
    if [h, m, s].iter().any(|p| p.len() != 2) {
        return None;
    }
    let (h, m, s) = (digits(h)?, digits(m)?, digits(s)?);
    if year < 1970 || day == 0 || day > days_in_month(year, month) || h > 23 || m > 59 || s > 59 {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some(UNIX_EPOCH + Duration::from_secs(days * 86_400 + h * 3600 + m * 60 + s))
}

/// ASCII digits only (no sign, no spaces), as a number.
fn digits(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn is_leap(year: u64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (year ≥ 1970).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let before_year: u64 = (1970..year)
        .map(|y| if is_leap(y) { 366 } else { 365 })
        .sum();
    let before_month: u64 = (1..month).map(|m| days_in_month(year, m)).sum();
    before_year + before_month + day - 1
}

/// The IMF-fixdate of `time` (whole seconds, truncated).
pub fn format(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (mut days, rem) = (secs / 86_400, secs % 86_400);
    let weekday = DAYS[((days + 4) % 7) as usize];
    let mut year = 1970;
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let mut month = 1;
    while days >= days_in_month(year, month) {
        days -= days_in_month(year, month);
        month += 1;
    }
    format!(
        "{weekday}, {:02} {} {year} {:02}:{:02}:{:02} GMT",
        days + 1,
        MONTHS[month as usize - 1],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// A `Retry-After` value as whole seconds to wait from `now`: delta-seconds
/// as given (fractions rounded up), an HTTP date as the time left until it
/// (rounded up; a date in the past is 0). `None` when the value is neither.
pub fn retry_after_secs(value: &str, now: SystemTime) -> Option<u64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| secs.ceil() as u64);
    }
    let at = parse(value)?;
    Some(match at.duration_since(now) {
        Ok(left) => left.as_secs() + u64::from(left.subsec_nanos() > 0),
        Err(_) => 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn imf_fixdate_parses() {
        // RFC 9110's own example.
        assert_eq!(
            parse("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(at(784_111_777))
        );
        assert_eq!(
            parse("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(at(1_445_412_480))
        );
        assert_eq!(parse("Thu, 01 Jan 1970 00:00:00 GMT"), Some(at(0)));
        assert_eq!(
            parse("Tue, 29 Feb 2000 23:59:59 GMT"),
            Some(at(951_868_799))
        );
        assert_eq!(
            parse("  Fri, 31 Dec 2027 12:00:00 GMT "),
            Some(at(1_830_254_400))
        );
    }

    #[test]
    fn asctime_parses_and_rfc850_is_rejected() {
        assert_eq!(parse("Sun Nov  6 08:49:37 1994"), Some(at(784_111_777)));
        assert_eq!(parse("Wed Oct 21 07:28:00 2015"), Some(at(1_445_412_480)));
        assert_eq!(parse("Sunday, 06-Nov-94 08:49:37 GMT"), None);
    }

    #[test]
    fn garbage_is_rejected() {
        for bad in [
            "",
            "soon",
            "Sun, 06 Nov 1994 08:49:37",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT",
            "Xyz, 06 Nov 1994 08:49:37 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:49:60 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Sun Nov 6 08:49:37 1994",
            "Sun Nov  6 08:49:37 94",
            "Sün, 06 Nov 1994 08:49:37 GMT",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn format_round_trips() {
        assert_eq!(format(at(784_111_777)), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(format(at(951_868_799)), "Tue, 29 Feb 2000 23:59:59 GMT");
        for secs in [0, 86_399, 951_782_400, 1_445_412_480, 4_102_444_800] {
            assert_eq!(parse(&format(at(secs))), Some(at(secs)), "{secs}");
        }
        // Sub-second parts are truncated.
        assert_eq!(format(at(10) + Duration::from_millis(999)), format(at(10)));
    }

    #[test]
    fn retry_after_in_both_forms() {
        let now = at(1_445_412_480) + Duration::from_millis(250);
        assert_eq!(retry_after_secs("120", now), Some(120));
        assert_eq!(retry_after_secs(" 1.5 ", now), Some(2));
        assert_eq!(retry_after_secs("-1", now), None);
        // 07:28:30 is 29.75 s after `now`: rounded up.
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(30)
        );
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 08:28:00 GMT", at(1_445_412_480)),
            Some(3600)
        );
        // In the past (or this very second, already begun): no wait.
        assert_eq!(
            retry_after_secs("Wed, 21 Oct 2015 07:28:00 GMT", now),
            Some(0)
        );
        assert_eq!(
            retry_after_secs("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(0)
        );
        assert_eq!(retry_after_secs("tomorrow", now), None);
        assert_eq!(retry_after_secs("NaN", now), None);
        assert_eq!(retry_after_secs("inf", now), None);
    }
}
