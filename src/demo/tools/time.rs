//! `time`: clocks, time zones, date arithmetic and natural-language dates on the fixed demo
//! clock (see `clock`). `when` also finds the next event of that name on the calendar.

use serde_json::{Value, json};

use super::super::clock::{
    DAY, DEMO_NOW, MONTHS, ZONES, civil_from_days, days_from_civil, format_date, format_offset,
    format_utc, human_duration, is_leap, offset_suffix, parse_date, parse_timestamp, weekday,
    weekday_index, zone, zone_of_city,
};
use super::super::kit::{Args, Reply, fail, matches_all, ok, ok_text};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "now" => now,
        "convert_timezone" => convert_timezone,
        "format_timestamp" => format_timestamp,
        "parse_date" => parse_date_phrase,
        "add_duration" => add_duration,
        "time_between" => time_between,
        "day_of_week" => day_of_week,
        "list_timezones" => list_timezones,
        "when" => when,
        "unix_to_iso" => unix_to_iso,
        "iso_to_unix" => iso_to_unix,
        "week_number" => week_number,
        "is_leap_year" => is_leap_year,
        "business_days_between" => business_days_between,
        "countdown" => countdown,
        "world_clock" => world_clock,
        _ => return None,
    })
}

/// Latest timestamp the demo accepts (end of year 9999).
const MAX_TS: i64 = 253_402_300_799;

fn now(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let z = zone(args.str_or("timezone", "UTC")?)?;
    let local_days = (DEMO_NOW + i64::from(z.offset) * 60).div_euclid(DAY);
    ok(json!({
        "utc": format_utc(DEMO_NOW),
        "local": format_offset(DEMO_NOW, z.offset),
        "timezone": z.name,
        "offset": offset_suffix(z.offset).replace('Z', "+00:00"),
        "unix": DEMO_NOW,
        "weekday": weekday(local_days),
    }))
}

fn convert_timezone(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let input = args.str("timestamp")?;
    let ts = parse_timestamp(input)?;
    let z = zone(args.str("to_timezone")?)?;
    ok(
        json!({"input": input, "output": format_offset(ts, z.offset), "timezone": z.name, "offset": offset_suffix(z.offset).replace('Z', "+00:00")}),
    )
}

fn rfc2822(ts: i64, offset: i32) -> String {
    let local = ts + i64::from(offset) * 60;
    let days = local.div_euclid(DAY);
    let (y, m, d) = civil_from_days(days);
    let secs = local.rem_euclid(DAY);
    let sign = if offset < 0 { '-' } else { '+' };
    format!(
        "{}, {d:02} {} {y} {:02}:{:02}:{:02} {sign}{:02}{:02}",
        &weekday(days)[..3],
        &MONTHS[m as usize - 1][..3],
        secs / 3600,
        secs % 3600 / 60,
        secs % 60,
        offset.unsigned_abs() / 60,
        offset.unsigned_abs() % 60
    )
}

fn human(ts: i64, offset: i32, zone_name: &str) -> String {
    let local = ts + i64::from(offset) * 60;
    let days = local.div_euclid(DAY);
    let (y, m, d) = civil_from_days(days);
    let secs = local.rem_euclid(DAY);
    let (h, mi) = (secs / 3600, secs % 3600 / 60);
    let (h12, ampm) = match h {
        0 => (12, "AM"),
        1..=11 => (h, "AM"),
        12 => (12, "PM"),
        _ => (h - 12, "PM"),
    };
    format!(
        "{}, {} {d}, {y} at {h12}:{mi:02} {ampm} ({zone_name})",
        weekday(days),
        MONTHS[m as usize - 1]
    )
}

fn format_timestamp(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let ts = parse_timestamp(args.str("timestamp")?)?;
    let style = args.str("style")?;
    let z = zone(args.str_or("timezone", "UTC")?)?;
    let formatted = match style {
        "iso8601" => format_offset(ts, z.offset),
        "rfc2822" => rfc2822(ts, z.offset),
        "human" => human(ts, z.offset, z.name),
        "date_only" => format_date((ts + i64::from(z.offset) * 60).div_euclid(DAY)),
        "unix" => ts.to_string(),
        other => {
            return Err(fail(format!(
                "style must be iso8601, rfc2822, human, date_only or unix, got {other:?}"
            )));
        }
    };
    ok_text(
        json!({"formatted": formatted, "style": style, "timezone": z.name}),
        formatted.clone(),
    )
}

/// Parses phrases like "tomorrow 3pm", "next friday 10am", "in 3 days", "2026-03-10 14:00".
fn parse_phrase(text: &str, offset: i32) -> Result<i64, ToolError> {
    let lower = text.trim().to_lowercase();
    if let Ok(ts) = parse_timestamp(&lower) {
        return Ok(ts);
    }
    let local_now = DEMO_NOW + i64::from(offset) * 60;
    let today = local_now.div_euclid(DAY);
    let words: Vec<&str> = lower.split_whitespace().collect();
    let mut day: Option<i64> = None;
    let mut seconds: Option<i64> = None;
    let mut i = 0;
    let bad = || {
        fail(format!(
            "cannot understand the date {text:?}; try \"tomorrow 3pm\", \"next friday\", \"in 2 weeks\" or 2026-03-10"
        ))
    };
    while i < words.len() {
        let w = words[i];
        match w {
            "today" | "tonight" => day = Some(today),
            "tomorrow" => day = Some(today + 1),
            "yesterday" => day = Some(today - 1),
            "noon" | "midday" => seconds = Some(12 * 3600),
            "midnight" => seconds = Some(0),
            "at" | "on" | "the" => {}
            "next" | "this" => {
                let target = words.get(i + 1).copied().ok_or_else(bad)?;
                if let Some(index) = weekday_from(target) {
                    let current = weekday_index(today) as i64;
                    let mut delta = (index as i64 - current).rem_euclid(7);
                    if delta == 0 {
                        delta = 7;
                    }
                    day = Some(today + delta);
                } else if target == "week" {
                    day = Some(today + 7 - weekday_index(today) as i64);
                } else if target == "month" {
                    let (y, m, _) = civil_from_days(today);
                    let (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                    day = Some(days_from_civil(y, m, 1));
                } else {
                    return Err(bad());
                }
                i += 1;
            }
            "in" => {
                let amount: i64 = words
                    .get(i + 1)
                    .and_then(|n| n.parse().ok())
                    .filter(|n: &i64| (-100_000..=100_000).contains(n))
                    .ok_or_else(bad)?;
                let unit = words.get(i + 2).copied().ok_or_else(bad)?;
                let unit = unit.trim_end_matches('s');
                let delta = match unit {
                    "minute" | "min" => amount * 60,
                    "hour" => amount * 3600,
                    "day" => amount * DAY,
                    "week" => amount * 7 * DAY,
                    _ => return Err(bad()),
                };
                return Ok(DEMO_NOW + delta);
            }
            _ => {
                if let Some(index) = weekday_from(w) {
                    let current = weekday_index(today) as i64;
                    let delta = (index as i64 - current).rem_euclid(7);
                    day = Some(today + if delta == 0 { 7 } else { delta });
                } else if let Ok(d) = parse_date(w) {
                    day = Some(d);
                } else if let Some(secs) = clock_time(w) {
                    seconds = Some(secs);
                } else {
                    return Err(bad());
                }
            }
        }
        i += 1;
    }
    if day.is_none() && seconds.is_none() {
        return Err(bad());
    }
    let day = day.unwrap_or(today);
    let secs = seconds.unwrap_or(if day == today {
        local_now.rem_euclid(DAY)
    } else {
        9 * 3600
    });
    Ok(day * DAY + secs - i64::from(offset) * 60)
}

fn weekday_from(word: &str) -> Option<usize> {
    ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
        .iter()
        .position(|p| {
            word.starts_with(p) && word.len() >= 3 && word.chars().all(char::is_alphabetic)
        })
}

/// `3pm`, `10am`, `14:30`, `9:15am`.
fn clock_time(word: &str) -> Option<i64> {
    let (body, pm) = if let Some(b) = word.strip_suffix("pm") {
        (b, Some(true))
    } else if let Some(b) = word.strip_suffix("am") {
        (b, Some(false))
    } else {
        (word, None)
    };
    let (h, m) = match body.split_once(':') {
        Some((h, m)) => (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?),
        None if pm.is_some() => (body.parse::<i64>().ok()?, 0),
        None => return None,
    };
    let h = match pm {
        Some(true) if (1..=11).contains(&h) => h + 12,
        Some(false) if h == 12 => 0,
        Some(_) if !(1..=12).contains(&h) => return None,
        _ => h,
    };
    ((0..24).contains(&h) && (0..60).contains(&m)).then_some(h * 3600 + m * 60)
}

fn parse_date_phrase(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    let z = zone(args.str_or("timezone", "UTC")?)?;
    let ts = parse_phrase(text, z.offset)?;
    let local_days = (ts + i64::from(z.offset) * 60).div_euclid(DAY);
    ok(
        json!({"text": text, "timestamp": format_offset(ts, z.offset), "date": format_date(local_days), "weekday": weekday(local_days)}),
    )
}

fn checked(ts: i64) -> Result<i64, ToolError> {
    if (-62_135_596_800..=MAX_TS).contains(&ts) {
        Ok(ts)
    } else {
        Err(fail("the result falls outside years 1 to 9999"))
    }
}

fn add_duration(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let ts = parse_timestamp(args.str("timestamp")?)?;
    let days = args.i64("days")?.clamp(-3_000_000, 3_000_000);
    let hours = args.i64_or("hours", 0)?.clamp(-72_000_000, 72_000_000);
    let minutes = args
        .i64_or("minutes", 0)?
        .clamp(-4_320_000_000, 4_320_000_000);
    let result = checked(ts + days * DAY + hours * 3600 + minutes * 60)?;
    ok(
        json!({"result": format_utc(result), "weekday": weekday(result.div_euclid(DAY)), "added_seconds": result - ts}),
    )
}

fn time_between(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let start = parse_timestamp(args.str("start")?)?;
    let end = parse_timestamp(args.str("end")?)?;
    let seconds = end - start;
    ok(json!({
        "seconds": seconds,
        "minutes": seconds / 60,
        "hours": seconds as f64 / 3600.0,
        "days": seconds as f64 / DAY as f64,
        "human": human_duration(seconds),
    }))
}

fn day_of_week(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let day = parse_date(args.str("date")?)?;
    let (_, m, d) = civil_from_days(day);
    let index = weekday_index(day);
    ok_text(
        json!({"date": format_date(day), "weekday": weekday(day), "iso_weekday": index + 1, "is_weekend": index >= 5}),
        format!(
            "{} {} {d} is a {}",
            format_date(day),
            MONTHS[m as usize - 1],
            weekday(day)
        ),
    )
}

fn list_timezones(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let region = args.str_or("region", "all")?;
    let zones: Vec<Value> = ZONES
        .iter()
        .filter(|z| region == "all" || z.name.starts_with(&format!("{region}/")))
        .map(|z| json!({"name": z.name, "offset": offset_suffix(z.offset).replace('Z', "+00:00"), "city": z.city}))
        .collect();
    ok(json!({"region": region, "timezones": zones}))
}

/// Easter Sunday (Anonymous Gregorian algorithm).
fn easter(year: i64) -> i64 {
    let (a, b, c) = (year % 19, year / 100, year % 100);
    let (d, e) = (b / 4, b % 4);
    let f = (b + 8) / 25;
    let g = (b - f + 1) / 3;
    let h = (19 * a + b - d - g + 15) % 30;
    let (i, k) = (c / 4, c % 4);
    let l = (32 + 2 * e + 2 * i - h - k) % 7;
    let m = (a + 11 * h + 22 * l) / 451;
    let month = (h + l - 7 * m + 114) / 31;
    let day = (h + l - 7 * m + 114) % 31 + 1;
    days_from_civil(year, month as u32, day as u32)
}

fn holiday(name: &str, year: i64) -> Option<(&'static str, i64)> {
    let n = name.to_lowercase();
    let fixed = |label: &'static str, m: u32, d: u32| Some((label, days_from_civil(year, m, d)));
    if n.contains("christmas") || n == "xmas" {
        fixed("Christmas Day", 12, 25)
    } else if n.contains("new year") {
        fixed("New Year's Day", 1, 1)
    } else if n.contains("halloween") {
        fixed("Halloween", 10, 31)
    } else if n.contains("valentine") {
        fixed("Valentine's Day", 2, 14)
    } else if n.contains("independence") || n.contains("july 4") || n.contains("fourth of july") {
        fixed("Independence Day (US)", 7, 4)
    } else if n.contains("easter") {
        Some(("Easter Sunday", easter(year)))
    } else if n.contains("thanksgiving") {
        // Fourth Thursday of November.
        let first = days_from_civil(year, 11, 1);
        let to_thursday = (3 - weekday_index(first) as i64).rem_euclid(7);
        Some(("Thanksgiving (US)", first + to_thursday + 21))
    } else {
        None
    }
}

fn when(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.str("event")?.trim();
    if name.is_empty() {
        return Err(fail("event must not be empty"));
    }
    let today = DEMO_NOW.div_euclid(DAY);
    let (year, _, _) = civil_from_days(today);
    let found = match holiday(name, year) {
        Some((_, d)) if d < today => {
            holiday(name, year + 1).map(|(label, d)| (label.to_string(), d, "holiday"))
        }
        Some((label, d)) => Some((label.to_string(), d, "holiday")),
        None => {
            let cal = lock(&world.calendar);
            cal.events
                .values()
                .filter(|e| e.start >= DEMO_NOW && matches_all(&e.title, name))
                .min_by_key(|e| e.start)
                .map(|e| (e.title.clone(), e.start.div_euclid(DAY), "calendar"))
        }
    };
    let (label, day, source) = found.ok_or_else(|| {
        fail(format!("no holiday or upcoming calendar event matches {name:?}; known holidays: Christmas, New Year, Easter, Halloween, Valentine's Day, Thanksgiving, Independence Day"))
    })?;
    let days_until = day - today;
    ok_text(
        json!({"event": label, "date": format_date(day), "days_until": days_until, "weekday": weekday(day), "source": source}),
        format!(
            "{label} is on {} {} ({days_until} days from now)",
            weekday(day),
            format_date(day)
        ),
    )
}

fn unix_to_iso(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let unix = checked(args.i64("unix")?)?;
    ok(json!({"timestamp": format_utc(unix), "weekday": weekday(unix.div_euclid(DAY))}))
}

fn iso_to_unix(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let ts = parse_timestamp(args.str("timestamp")?)?;
    ok(json!({"unix": ts, "unix_ms": ts * 1000, "normalized": format_utc(ts)}))
}

fn iso_week(day: i64) -> (i64, i64) {
    // The ISO week belongs to the year of its Thursday.
    let thursday = day - weekday_index(day) as i64 + 3;
    let (year, _, _) = civil_from_days(thursday);
    let week = (thursday - days_from_civil(year, 1, 1)) / 7 + 1;
    (year, week)
}

fn week_number(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let day = parse_date(args.str("date")?)?;
    let (year, week) = iso_week(day);
    ok(
        json!({"iso_week": week, "iso_year": year, "label": format!("{year}-W{week:02}"), "weekday": weekday(day)}),
    )
}

fn is_leap_year(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let year = args.i64("year")?;
    if !(1..=9999).contains(&year) {
        return Err(fail("year must be between 1 and 9999"));
    }
    let next = (year + 1..).find(|y| is_leap(*y)).unwrap_or(year);
    ok(
        json!({"year": year, "is_leap_year": is_leap(year), "days": if is_leap(year) { 366 } else { 365 }, "next_leap_year": next}),
    )
}

fn business_days_between(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let start = parse_date(args.str("start")?)?;
    let end = parse_date(args.str("end")?)?;
    let (lo, hi, sign) = if end >= start {
        (start, end, 1)
    } else {
        (end, start, -1)
    };
    if hi - lo > 366 * 100 {
        return Err(fail("range too long (max 100 years)"));
    }
    let business = (lo..hi).filter(|d| weekday_index(*d) < 5).count() as i64;
    ok(
        json!({"business_days": sign * business, "calendar_days": sign * (hi - lo), "weekend_days": (hi - lo) - business}),
    )
}

fn countdown(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let target = parse_timestamp(args.str("target")?)?;
    let left = target - DEMO_NOW;
    ok_text(
        json!({"target": format_utc(target), "seconds_left": left, "days": left / DAY, "hours": left % DAY / 3600, "minutes": left % 3600 / 60, "passed": left < 0}),
        if left < 0 {
            format!("{} ago", human_duration(-left))
        } else {
            format!("{} to go", human_duration(left))
        },
    )
}

fn world_clock(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let cities = args.opt_str_list("cities")?.unwrap_or_else(|| {
        vec![
            "London".to_string(),
            "New York".to_string(),
            "Tokyo".to_string(),
        ]
    });
    if cities.is_empty() {
        return Err(fail("give at least one city"));
    }
    let mut rows = Vec::new();
    for city in cities {
        let z =
            zone_of_city(&city).ok_or_else(|| fail(format!("no time zone known for {city:?}")))?;
        let local = DEMO_NOW + i64::from(z.offset) * 60;
        let secs = local.rem_euclid(DAY);
        rows.push(json!({"city": z.city, "timezone": z.name, "time": format!("{:02}:{:02}", secs / 3600, secs % 3600 / 60), "weekday": weekday(local.div_euclid(DAY))}));
    }
    ok(json!({"utc": format_utc(DEMO_NOW), "clocks": rows}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_resolve_against_the_demo_clock() {
        assert_eq!(
            parse_phrase("tomorrow 3pm", 0).map(format_utc),
            Ok("2026-03-03T15:00:00Z".to_string())
        );
        assert_eq!(
            parse_phrase("next friday 10am", 0).map(format_utc),
            Ok("2026-03-06T10:00:00Z".to_string())
        );
        assert_eq!(
            parse_phrase("in 3 days", 0).map(format_utc),
            Ok("2026-03-05T09:00:00Z".to_string())
        );
        assert!(parse_phrase("whenever", 0).is_err());
        assert!(parse_phrase("in 9223372036854775807 days", 0).is_err());
    }

    #[test]
    fn holidays_and_weeks() {
        assert_eq!(format_date(easter(2026)), "2026-04-05");
        assert_eq!(iso_week(days_from_civil(2026, 3, 2)), (2026, 10));
        assert_eq!(iso_week(days_from_civil(2027, 1, 1)), (2026, 53));
    }
}
