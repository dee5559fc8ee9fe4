//! The demo clock and the calendar arithmetic the demo tools share, in std only.
//!
//! The demo never reads the host clock: "now" is fixed at [`DEMO_NOW`] (Monday
//! 2026-03-02T09:00:00Z), so every result is reproducible and tests can pin them. Dates are
//! proleptic Gregorian (Howard Hinnant's `days_from_civil`); time zones are a fixed table of
//! offsets as they stand on the demo date — there are no daylight-saving transitions.
//!
//! Bounds: years 1..=9999 only, so every timestamp fits an `i64` with room to spare.

use super::kit::fail;
use crate::catalog::ToolError;

/// Unix seconds of the fixed demo "now": Monday 2026-03-02T09:00:00Z.
pub(crate) const DEMO_NOW: i64 = 1_772_442_000;

/// Seconds per day.
pub(crate) const DAY: i64 = 86_400;

/// Days since 1970-01-01 of a civil date.
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day number.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Whether `year` is a Gregorian leap year.
pub(crate) fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days in a month.
pub(crate) fn month_days(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Weekday names, Monday first.
pub(crate) const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Month names.
pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Monday = 0 … Sunday = 6 (1970-01-01 was a Thursday).
pub(crate) fn weekday_index(days: i64) -> usize {
    (days + 3).rem_euclid(7) as usize
}

/// The weekday name of a day number.
pub(crate) fn weekday(days: i64) -> &'static str {
    WEEKDAYS[weekday_index(days)]
}

/// `YYYY-MM-DD` of a day number.
pub(crate) fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` of unix seconds.
pub(crate) fn format_utc(ts: i64) -> String {
    format_offset(ts, 0)
}

/// RFC 3339 of unix seconds shown at a UTC offset in minutes (`Z` for zero).
pub(crate) fn format_offset(ts: i64, offset_minutes: i32) -> String {
    let local = ts + i64::from(offset_minutes) * 60;
    let days = local.div_euclid(DAY);
    let secs = local.rem_euclid(DAY);
    let (h, mi, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    format!(
        "{}T{h:02}:{mi:02}:{s:02}{}",
        format_date(days),
        offset_suffix(offset_minutes)
    )
}

/// `Z`, `+09:00`, `-05:00`, `+05:30`.
pub(crate) fn offset_suffix(offset_minutes: i32) -> String {
    if offset_minutes == 0 {
        return "Z".to_string();
    }
    let sign = if offset_minutes < 0 { '-' } else { '+' };
    let abs = offset_minutes.unsigned_abs();
    format!("{sign}{:02}:{:02}", abs / 60, abs % 60)
}

fn digits(text: &str, what: &str) -> Result<u32, ToolError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(fail(format!("invalid {what} {text:?}")));
    }
    text.parse()
        .map_err(|_| fail(format!("invalid {what} {text:?}")))
}

/// Parses `YYYY-MM-DD` into a day number.
pub(crate) fn parse_date(text: &str) -> Result<i64, ToolError> {
    let bad = || {
        fail(format!(
            "invalid date {text:?}; use YYYY-MM-DD, e.g. 2026-03-02"
        ))
    };
    let mut parts = text.trim().split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d) = (
        i64::from(digits(y, "year")?),
        digits(m, "month")?,
        digits(d, "day")?,
    );
    if y < 1 || !(1..=12).contains(&m) || d < 1 || d > month_days(y, m) {
        return Err(bad());
    }
    Ok(days_from_civil(y, m, d))
}

/// Parses an RFC 3339 timestamp (`2026-03-02T09:00:00Z`, `…+02:00`, fractional seconds
/// ignored, no offset = UTC) or a bare date (midnight UTC) into unix seconds.
pub(crate) fn parse_timestamp(text: &str) -> Result<i64, ToolError> {
    let text = text.trim();
    let bad = || {
        fail(format!(
            "invalid timestamp {text:?}; use RFC 3339, e.g. 2026-03-02T09:00:00Z"
        ))
    };
    if text.len() == 10 {
        return Ok(parse_date(text)? * DAY);
    }
    if text.len() < 16 || !text.is_char_boundary(10) || !text.is_char_boundary(11) {
        return Err(bad());
    }
    let days = parse_date(&text[..10]).map_err(|_| bad())?;
    if !matches!(text.as_bytes()[10], b'T' | b't' | b' ') {
        return Err(bad());
    }
    let rest = &text[11..];
    // Split off the offset: Z, +HH:MM or -HH:MM.
    let (clock, offset_minutes) = if let Some(clock) = rest.strip_suffix(['Z', 'z']) {
        (clock, 0i64)
    } else if let Some(pos) = rest.rfind(['+', '-']) {
        let (clock, offset) = rest.split_at(pos);
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let hm = &offset[1..];
        let (h, m) = hm.split_once(':').ok_or_else(bad)?;
        let (h, m) = (digits(h, "offset")?, digits(m, "offset")?);
        if h > 18 || m > 59 {
            return Err(bad());
        }
        (clock, sign * (i64::from(h) * 60 + i64::from(m)))
    } else {
        (rest, 0)
    };
    let clock = clock.split('.').next().unwrap_or(clock);
    let mut fields = clock.split(':');
    let h = digits(fields.next().unwrap_or(""), "hour")?;
    let mi = digits(fields.next().unwrap_or(""), "minute")?;
    let s = match fields.next() {
        Some(s) => digits(s, "second")?,
        None => 0,
    };
    if fields.next().is_some() || h > 23 || mi > 59 || s > 60 {
        return Err(bad());
    }
    Ok(days * DAY + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s) - offset_minutes * 60)
}

/// A time zone of the demo table.
pub(crate) struct Zone {
    /// IANA name.
    pub(crate) name: &'static str,
    /// UTC offset on the demo date, in minutes.
    pub(crate) offset: i32,
    /// A city shown by the world clock.
    pub(crate) city: &'static str,
}

/// Supported zones with their offsets on the demo date (no DST transitions are modelled).
pub(crate) const ZONES: [Zone; 16] = [
    Zone {
        name: "UTC",
        offset: 0,
        city: "UTC",
    },
    Zone {
        name: "Europe/London",
        offset: 0,
        city: "London",
    },
    Zone {
        name: "Europe/Lisbon",
        offset: 0,
        city: "Lisbon",
    },
    Zone {
        name: "Europe/Paris",
        offset: 60,
        city: "Paris",
    },
    Zone {
        name: "Europe/Berlin",
        offset: 60,
        city: "Berlin",
    },
    Zone {
        name: "Europe/Madrid",
        offset: 60,
        city: "Madrid",
    },
    Zone {
        name: "Africa/Cairo",
        offset: 120,
        city: "Cairo",
    },
    Zone {
        name: "Africa/Lagos",
        offset: 60,
        city: "Lagos",
    },
    Zone {
        name: "Asia/Kolkata",
        offset: 330,
        city: "Mumbai",
    },
    Zone {
        name: "Asia/Singapore",
        offset: 480,
        city: "Singapore",
    },
    Zone {
        name: "Asia/Tokyo",
        offset: 540,
        city: "Tokyo",
    },
    Zone {
        name: "Australia/Sydney",
        offset: 660,
        city: "Sydney",
    },
    Zone {
        name: "America/New_York",
        offset: -300,
        city: "New York",
    },
    Zone {
        name: "America/Chicago",
        offset: -360,
        city: "Chicago",
    },
    Zone {
        name: "America/Los_Angeles",
        offset: -480,
        city: "San Francisco",
    },
    Zone {
        name: "America/Sao_Paulo",
        offset: -180,
        city: "São Paulo",
    },
];

/// The zone named `name` (case-insensitive; a few common abbreviations accepted).
pub(crate) fn zone(name: &str) -> Result<&'static Zone, ToolError> {
    let wanted = match name.trim().to_ascii_uppercase().as_str() {
        "Z" | "GMT" | "ETC/UTC" => "UTC".to_string(),
        "EST" | "ET" => "America/New_York".to_string(),
        "CST" | "CT" => "America/Chicago".to_string(),
        "PST" | "PT" => "America/Los_Angeles".to_string(),
        "CET" => "Europe/Paris".to_string(),
        "JST" => "Asia/Tokyo".to_string(),
        "IST" => "Asia/Kolkata".to_string(),
        _ => name.trim().to_string(),
    };
    ZONES
        .iter()
        .find(|z| z.name.eq_ignore_ascii_case(&wanted))
        .ok_or_else(|| {
            fail(format!(
                "unknown time zone {name:?}; use an IANA name such as Europe/Paris (list_timezones shows all)"
            ))
        })
}

/// The zone of a city name (for the world clock).
pub(crate) fn zone_of_city(city: &str) -> Option<&'static Zone> {
    ZONES.iter().find(|z| z.city.eq_ignore_ascii_case(city))
}

/// `3 days 4 hours 5 minutes` for a non-negative number of seconds.
pub(crate) fn human_duration(seconds: i64) -> String {
    let s = seconds.abs();
    let (d, h, m) = (s / DAY, s % DAY / 3600, s % 3600 / 60);
    let mut parts = Vec::new();
    if d > 0 {
        parts.push(format!("{d} day{}", if d == 1 { "" } else { "s" }));
    }
    if h > 0 {
        parts.push(format!("{h} hour{}", if h == 1 { "" } else { "s" }));
    }
    if m > 0 || parts.is_empty() {
        parts.push(format!("{m} minute{}", if m == 1 { "" } else { "s" }));
    }
    let text = parts.join(" ");
    if seconds < 0 {
        format!("-{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_now_is_monday_march_second() {
        assert_eq!(format_utc(DEMO_NOW), "2026-03-02T09:00:00Z");
        assert_eq!(weekday(DEMO_NOW / DAY), "Monday");
    }

    #[test]
    fn timestamps_round_trip_with_offsets() {
        assert_eq!(parse_timestamp("2026-03-02T18:00:00+09:00"), Ok(DEMO_NOW));
        assert_eq!(parse_timestamp("2026-03-02T09:00Z"), Ok(DEMO_NOW));
        assert_eq!(parse_timestamp("2026-03-02T09:00:00.250Z"), Ok(DEMO_NOW));
        assert_eq!(format_offset(DEMO_NOW, 330), "2026-03-02T14:30:00+05:30");
        assert!(parse_timestamp("2026-02-30T00:00:00Z").is_err());
        assert!(parse_timestamp("tomorrow").is_err());
        assert!(parse_timestamp("2026-03-02Té9:00:00Z").is_err());
    }

    #[test]
    fn civil_conversions_agree() {
        for days in [-1_000_000, -1, 0, 1, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
