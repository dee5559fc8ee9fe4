//! `weather` (plugin) and `weather-mcp` (an MCP server's tools, implemented in memory here):
//! conditions, forecasts, alerts and air quality from a fixed table of cities on the demo date.
//! Forecast days vary by a fixed pattern; sunrise and sunset come from a simple solar model
//! (declination and hour angle), good to a few minutes.

use serde_json::{Value, json};

use super::super::clock::{
    DAY, DEMO_NOW, days_from_civil, format_date, format_offset, parse_date, zone,
};
use super::super::kit::{Args, Reply, fail, not_found, ok, round_to};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "current_weather" => current_weather,
        "weather_forecast" => weather_forecast,
        "weather_alerts" => weather_alerts,
        "sunrise_sunset" => sunrise_sunset,
        "uv_index" => uv_index,
        "historical_weather" => historical_weather,
        "compare_cities_weather" => compare_cities_weather,
        _ => return None,
    })
}

pub(crate) fn mcp_handler(name: &str) -> Option<Handler> {
    Some(match name {
        "get_forecast" => mcp_forecast,
        "get_current_conditions" => mcp_current,
        "get_air_quality" => mcp_air_quality,
        _ => return None,
    })
}

pub(crate) struct City {
    pub(crate) name: &'static str,
    pub(crate) lat: f64,
    pub(crate) lon: f64,
    tz: &'static str,
    temp_c: f64,
    condition: &'static str,
    humidity: i64,
    wind_kph: f64,
    aqi: i64,
    pollutant: &'static str,
    uv: f64,
    alerts: &'static [&'static str],
}

pub(crate) const CITIES: [City; 9] = [
    City {
        name: "London",
        lat: 51.5074,
        lon: -0.1278,
        tz: "Europe/London",
        temp_c: 11.0,
        condition: "Light rain",
        humidity: 82,
        wind_kph: 19.0,
        aqi: 38,
        pollutant: "NO2",
        uv: 1.0,
        alerts: &[],
    },
    City {
        name: "Paris",
        lat: 48.8566,
        lon: 2.3522,
        tz: "Europe/Paris",
        temp_c: 13.0,
        condition: "Partly cloudy",
        humidity: 70,
        wind_kph: 12.0,
        aqi: 45,
        pollutant: "PM2.5",
        uv: 2.0,
        alerts: &[],
    },
    City {
        name: "Berlin",
        lat: 52.52,
        lon: 13.405,
        tz: "Europe/Berlin",
        temp_c: 7.0,
        condition: "Overcast",
        humidity: 76,
        wind_kph: 15.0,
        aqi: 41,
        pollutant: "PM10",
        uv: 1.0,
        alerts: &[],
    },
    City {
        name: "Lisbon",
        lat: 38.7223,
        lon: -9.1393,
        tz: "Europe/Lisbon",
        temp_c: 17.0,
        condition: "Sunny",
        humidity: 58,
        wind_kph: 10.0,
        aqi: 22,
        pollutant: "O3",
        uv: 4.0,
        alerts: &[],
    },
    City {
        name: "New York",
        lat: 40.7128,
        lon: -74.006,
        tz: "America/New_York",
        temp_c: 2.0,
        condition: "Snow showers",
        humidity: 88,
        wind_kph: 24.0,
        aqi: 52,
        pollutant: "PM2.5",
        uv: 1.0,
        alerts: &["Winter weather advisory until 18:00 local time: 5-10 cm of snow"],
    },
    City {
        name: "San Francisco",
        lat: 37.7749,
        lon: -122.4194,
        tz: "America/Los_Angeles",
        temp_c: 14.0,
        condition: "Fog",
        humidity: 90,
        wind_kph: 17.0,
        aqi: 30,
        pollutant: "O3",
        uv: 3.0,
        alerts: &[],
    },
    City {
        name: "Tokyo",
        lat: 35.6762,
        lon: 139.6503,
        tz: "Asia/Tokyo",
        temp_c: 12.0,
        condition: "Clear",
        humidity: 45,
        wind_kph: 36.0,
        aqi: 48,
        pollutant: "PM2.5",
        uv: 3.0,
        alerts: &["Strong wind advisory: gusts up to 70 km/h"],
    },
    City {
        name: "Sydney",
        lat: -33.8688,
        lon: 151.2093,
        tz: "Australia/Sydney",
        temp_c: 26.0,
        condition: "Sunny",
        humidity: 62,
        wind_kph: 14.0,
        aqi: 25,
        pollutant: "O3",
        uv: 9.0,
        alerts: &["High UV warning: UV index 9 (very high)"],
    },
    City {
        name: "Mumbai",
        lat: 19.076,
        lon: 72.8777,
        tz: "Asia/Kolkata",
        temp_c: 31.0,
        condition: "Haze",
        humidity: 66,
        wind_kph: 9.0,
        aqi: 162,
        pollutant: "PM2.5",
        uv: 8.0,
        alerts: &["Air quality alert: unhealthy for sensitive groups"],
    },
];

const CONDITIONS: [&str; 6] = [
    "Sunny",
    "Partly cloudy",
    "Overcast",
    "Light rain",
    "Showers",
    "Clear",
];
const SWING: [f64; 7] = [0.0, 1.5, -1.0, 2.0, 0.5, -2.5, 1.0];

pub(crate) fn city(name: &str) -> Result<&'static City, ToolError> {
    let wanted = name.split(',').next().unwrap_or(name).trim();
    CITIES
        .iter()
        .find(|c| c.name.eq_ignore_ascii_case(wanted))
        .ok_or_else(|| {
            not_found(
                "city",
                wanted,
                &format!(
                    "covered cities: {}",
                    CITIES.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
                ),
            )
        })
}

fn index_of(c: &City) -> usize {
    CITIES.iter().position(|x| x.name == c.name).unwrap_or(0)
}

/// (high, low, condition, precipitation %) for `offset` days after the demo date.
fn day_forecast(c: &City, offset: usize) -> (f64, f64, &'static str, i64) {
    let i = index_of(c);
    let high = c.temp_c + 2.0 + SWING[(i + offset) % 7];
    let low = high - 6.0 - (offset % 3) as f64;
    let condition = if offset == 0 {
        c.condition
    } else {
        CONDITIONS[(i * 3 + offset) % CONDITIONS.len()]
    };
    let rain = match condition {
        "Light rain" => 60,
        "Showers" => 75,
        "Snow showers" => 80,
        "Overcast" => 30,
        "Partly cloudy" => 15,
        _ => 5,
    };
    (high, low, condition, rain)
}

fn c_to_f(c: f64) -> f64 {
    round_to(c * 9.0 / 5.0 + 32.0, 1)
}

fn conditions_json(c: &City, imperial: bool) -> Value {
    let feels = c.temp_c - c.wind_kph / 10.0;
    let (temperature, feels_like, wind) = if imperial {
        (
            c_to_f(c.temp_c),
            c_to_f(feels),
            round_to(c.wind_kph / 1.609_344, 1),
        )
    } else {
        (c.temp_c, round_to(feels, 1), c.wind_kph)
    };
    json!({
        "city": c.name,
        "temperature": temperature,
        "feels_like": feels_like,
        "condition": c.condition,
        "humidity_percent": c.humidity,
        "wind_speed": wind,
        "units": if imperial { "imperial" } else { "metric" },
    })
}

fn current_weather(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("city")?)?;
    let imperial = match args.str_or("units", "metric")? {
        "metric" => false,
        "imperial" => true,
        other => {
            return Err(fail(format!(
                "units must be metric or imperial, got {other:?}"
            )));
        }
    };
    ok(conditions_json(c, imperial))
}

fn weather_forecast(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("city")?)?;
    let days = args.i64_or("days", 3)?.clamp(1, 7) as usize;
    let today = DEMO_NOW.div_euclid(DAY);
    let list: Vec<Value> = (0..days)
        .map(|d| {
            let (high, low, condition, rain) = day_forecast(c, d);
            json!({"date": format_date(today + d as i64), "high_c": high, "low_c": low, "condition": condition, "precipitation_percent": rain})
        })
        .collect();
    ok(json!({"city": c.name, "days": list}))
}

fn weather_alerts(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("city")?)?;
    let alerts: Vec<Value> = c.alerts.iter().map(|a| json!({"headline": a, "severity": if a.contains("warning") || a.contains("alert") { "warning" } else { "advisory" }})).collect();
    ok(json!({"city": c.name, "alerts": alerts, "active": !alerts.is_empty()}))
}

/// (sunrise, sunset) unix seconds for a day at a place (NOAA-style approximation).
fn sun_times(c: &City, day: i64) -> Option<(i64, i64)> {
    let (year, _, _) = super::super::clock::civil_from_days(day);
    let n = (day - days_from_civil(year, 1, 1) + 1) as f64;
    let declination = (23.44f64).to_radians() * ((360.0 / 365.0) * (n + 284.0)).to_radians().sin();
    let lat = c.lat.to_radians();
    let cos_h = ((-0.833f64).to_radians().sin() - lat.sin() * declination.sin())
        / (lat.cos() * declination.cos());
    if !(-1.0..=1.0).contains(&cos_h) {
        return None;
    }
    let half_day_hours = cos_h.acos().to_degrees() / 15.0;
    // Equation of time (minutes), then solar noon in UTC.
    let b = (360.0 / 365.0 * (n - 81.0)).to_radians();
    let eot = 9.87 * (2.0 * b).sin() - 7.53 * b.cos() - 1.5 * b.sin();
    let noon_utc_hours = 12.0 - c.lon / 15.0 - eot / 60.0;
    let midnight = day * DAY;
    let at = |hours: f64| midnight + (hours * 3600.0).round() as i64;
    Some((
        at(noon_utc_hours - half_day_hours),
        at(noon_utc_hours + half_day_hours),
    ))
}

fn sunrise_sunset(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("city")?)?;
    let day = parse_date(args.str_or("date", "2026-03-02")?)?;
    let offset = zone(c.tz)?.offset;
    let (rise, set) = sun_times(c, day)
        .ok_or_else(|| fail("the sun does not rise or set at this place on that day"))?;
    let length = set - rise;
    ok(json!({
        "city": c.name,
        "date": format_date(day),
        "sunrise": format_offset(rise, offset),
        "sunset": format_offset(set, offset),
        "day_length": format!("{}h {:02}m", length / 3600, length % 3600 / 60),
    }))
}

fn uv_index(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("city")?)?;
    let (level, advice) = match c.uv {
        u if u < 3.0 => ("low", "No protection needed."),
        u if u < 6.0 => (
            "moderate",
            "Wear sunglasses; use SPF 30+ if outside for long.",
        ),
        u if u < 8.0 => (
            "high",
            "Reduce time in the sun between 11:00 and 16:00; SPF 30+.",
        ),
        u if u < 11.0 => ("very high", "Avoid midday sun; shirt, hat, SPF 50+."),
        _ => ("extreme", "Stay indoors at midday."),
    };
    ok(json!({"city": c.name, "uv_index": c.uv, "level": level, "advice": advice}))
}

fn historical_weather(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("city")?)?;
    let day = parse_date(args.str("date")?)?;
    let today = DEMO_NOW.div_euclid(DAY);
    if day >= today {
        return Err(fail(
            "historical_weather covers past dates only; use weather_forecast for today and later",
        ));
    }
    let back = (today - day) as usize;
    let (high, low, condition, rain) = day_forecast(c, back % 7 + 1);
    let seasonal = if c.lat >= 0.0 {
        -((back as f64) / 30.0).min(6.0)
    } else {
        ((back as f64) / 30.0).min(6.0)
    };
    ok(
        json!({"city": c.name, "date": format_date(day), "high_c": round_to(high + seasonal, 1), "low_c": round_to(low + seasonal, 1), "condition": condition, "precipitation_mm": rain / 10}),
    )
}

fn compare_cities_weather(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let names = args.str_list("cities")?;
    if names.len() < 2 {
        return Err(fail("give at least two cities to compare"));
    }
    let mut rows: Vec<&City> = names.iter().map(|n| city(n)).collect::<Result<_, _>>()?;
    rows.sort_by(|a, b| b.temp_c.total_cmp(&a.temp_c));
    let warmest = rows.first().map(|c| c.name);
    let list: Vec<Value> = rows
        .iter()
        .map(|c| json!({"city": c.name, "temperature_c": c.temp_c, "condition": c.condition}))
        .collect();
    ok(
        json!({"cities": list, "warmest": warmest, "spread_c": rows.first().map(|c| c.temp_c).unwrap_or(0.0) - rows.last().map(|c| c.temp_c).unwrap_or(0.0)}),
    )
}

fn mcp_forecast(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("location")?)?;
    let hours = args.i64_or("hours", 12)?.clamp(1, 48);
    let offset = zone(c.tz)?.offset;
    let list: Vec<Value> = (1..=hours)
        .map(|h| {
            let at = DEMO_NOW + h * 3600;
            let local_hour = ((at + i64::from(offset) * 60).rem_euclid(DAY) / 3600) as f64;
            // Warmest mid-afternoon, coolest before dawn.
            let temp = c.temp_c + 4.0 * ((local_hour - 9.0) / 24.0 * std::f64::consts::TAU).sin();
            json!({"time": format_offset(at, offset), "temp_c": round_to(temp, 1), "precip_chance": (h * 7 + index_of(c) as i64 * 11) % 60})
        })
        .collect();
    ok(json!({"location": c.name, "hourly": list}))
}

fn mcp_current(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("location")?)?;
    let mut current = conditions_json(c, false);
    if let Some(map) = current.as_object_mut() {
        map.insert(
            "observed_at".to_string(),
            json!(format_offset(DEMO_NOW, zone(c.tz)?.offset)),
        );
        map.insert("source".to_string(), json!("weather-mcp"));
    }
    ok(current)
}

fn mcp_air_quality(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let c = city(args.str("location")?)?;
    let category = match c.aqi {
        0..=50 => "Good",
        51..=100 => "Moderate",
        101..=150 => "Unhealthy for sensitive groups",
        151..=200 => "Unhealthy",
        _ => "Very unhealthy",
    };
    ok(
        json!({"location": c.name, "aqi": c.aqi, "category": category, "main_pollutant": c.pollutant}),
    )
}
