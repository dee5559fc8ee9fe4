//! `maps-mcp`: an MCP server's geocoding and routing tools, implemented in memory over a
//! fixed gazetteer. Distances are great-circle (haversine) times a 1.3 street-detour factor;
//! durations use a fixed speed per travel mode.

use serde_json::{Value, json};

use super::super::kit::{Args, Reply, fail, matches_all, not_found, ok, round_to};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "geocode" => geocode,
        "reverse_geocode" => reverse_geocode,
        "get_directions" => get_directions,
        "search_places" => search_places,
        _ => return None,
    })
}

struct Place {
    name: &'static str,
    city: &'static str,
    kind: &'static str,
    lat: f64,
    lon: f64,
}

const PLACES: [Place; 20] = [
    Place {
        name: "London",
        city: "London",
        kind: "city",
        lat: 51.5074,
        lon: -0.1278,
    },
    Place {
        name: "Big Ben",
        city: "London",
        kind: "landmark",
        lat: 51.5007,
        lon: -0.1246,
    },
    Place {
        name: "Tower Bridge",
        city: "London",
        kind: "landmark",
        lat: 51.5055,
        lon: -0.0754,
    },
    Place {
        name: "British Museum",
        city: "London",
        kind: "museum",
        lat: 51.5194,
        lon: -0.127,
    },
    Place {
        name: "Monmouth Coffee",
        city: "London",
        kind: "cafe",
        lat: 51.5051,
        lon: -0.0911,
    },
    Place {
        name: "Prufrock Coffee",
        city: "London",
        kind: "cafe",
        lat: 51.5197,
        lon: -0.1094,
    },
    Place {
        name: "Paris",
        city: "Paris",
        kind: "city",
        lat: 48.8566,
        lon: 2.3522,
    },
    Place {
        name: "Eiffel Tower",
        city: "Paris",
        kind: "landmark",
        lat: 48.8584,
        lon: 2.2945,
    },
    Place {
        name: "Louvre Museum",
        city: "Paris",
        kind: "museum",
        lat: 48.8606,
        lon: 2.3376,
    },
    Place {
        name: "Cafe de Flore",
        city: "Paris",
        kind: "cafe",
        lat: 48.854,
        lon: 2.3326,
    },
    Place {
        name: "Berlin",
        city: "Berlin",
        kind: "city",
        lat: 52.52,
        lon: 13.405,
    },
    Place {
        name: "Brandenburg Gate",
        city: "Berlin",
        kind: "landmark",
        lat: 52.5163,
        lon: 13.3777,
    },
    Place {
        name: "Lisbon",
        city: "Lisbon",
        kind: "city",
        lat: 38.7223,
        lon: -9.1393,
    },
    Place {
        name: "Belem Tower",
        city: "Lisbon",
        kind: "landmark",
        lat: 38.6916,
        lon: -9.216,
    },
    Place {
        name: "New York",
        city: "New York",
        kind: "city",
        lat: 40.7128,
        lon: -74.006,
    },
    Place {
        name: "Times Square",
        city: "New York",
        kind: "landmark",
        lat: 40.758,
        lon: -73.9855,
    },
    Place {
        name: "Tokyo",
        city: "Tokyo",
        kind: "city",
        lat: 35.6762,
        lon: 139.6503,
    },
    Place {
        name: "Shibuya Crossing",
        city: "Tokyo",
        kind: "landmark",
        lat: 35.6595,
        lon: 139.7005,
    },
    Place {
        name: "Sydney Opera House",
        city: "Sydney",
        kind: "landmark",
        lat: -33.8568,
        lon: 151.2153,
    },
    Place {
        name: "Mumbai",
        city: "Mumbai",
        kind: "city",
        lat: 19.076,
        lon: 72.8777,
    },
];

/// Great-circle distance in km.
fn haversine(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (la1, lo1, la2, lo2) = (
        a.0.to_radians(),
        a.1.to_radians(),
        b.0.to_radians(),
        b.1.to_radians(),
    );
    let h = ((la2 - la1) / 2.0).sin().powi(2)
        + la1.cos() * la2.cos() * ((lo2 - lo1) / 2.0).sin().powi(2);
    2.0 * 6371.0 * h.sqrt().asin()
}

fn resolve(query: &str) -> Result<&'static Place, ToolError> {
    let plain = query.replace(['é', 'è'], "e");
    // Most specific first: a landmark whose name and city both match beats the city itself.
    PLACES
        .iter()
        .find(|p| p.kind != "city" && matches_all(&plain, p.name))
        .or_else(|| {
            PLACES
                .iter()
                .find(|p| p.kind == "city" && matches_all(&plain, p.city))
        })
        .or_else(|| {
            PLACES
                .iter()
                .find(|p| matches_all(&format!("{} {}", p.name, p.city), &plain))
        })
        .ok_or_else(|| {
            not_found(
                "place",
                query,
                "known places include Big Ben, Eiffel Tower, Times Square and major cities",
            )
        })
}

fn place_json(p: &Place) -> Value {
    json!({"name": p.name, "city": p.city, "kind": p.kind, "lat": p.lat, "lon": p.lon})
}

fn geocode(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let address = args.str("address")?;
    let p = resolve(address)?;
    ok(
        json!({"query": address, "match": place_json(p), "formatted_address": format!("{}, {}", p.name, p.city)}),
    )
}

fn reverse_geocode(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (lat, lon) = (args.f64("lat")?, args.f64("lon")?);
    if !(-90.0..=90.0).contains(&lat) || !(-180.0..=180.0).contains(&lon) {
        return Err(fail("lat must be within ±90 and lon within ±180"));
    }
    let (p, d) = PLACES
        .iter()
        .map(|p| (p, haversine((lat, lon), (p.lat, p.lon))))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .ok_or_else(|| fail("the gazetteer is empty"))?;
    ok(json!({"nearest": place_json(p), "distance_m": (d * 1000.0).round()}))
}

fn get_directions(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (from, to) = (
        resolve(args.str("origin")?)?,
        resolve(args.str("destination")?)?,
    );
    if from.name == to.name {
        return Err(fail("origin and destination are the same place"));
    }
    let mode = args.str_or("mode", "walking")?;
    let kmh = match mode {
        "walking" => 5.0,
        "cycling" => 15.0,
        "driving" => 30.0,
        "transit" => 22.0,
        other => {
            return Err(fail(format!(
                "mode must be driving, walking, cycling or transit, got {other:?}"
            )));
        }
    };
    let straight = haversine((from.lat, from.lon), (to.lat, to.lon));
    if straight > 1000.0 && mode != "driving" {
        return Err(fail(format!(
            "{} to {} is {:.0} km; only driving routes are offered that far",
            from.name, to.name, straight
        )));
    }
    let distance = straight * 1.3;
    let minutes = (distance / kmh * 60.0).ceil() as i64;
    ok(json!({
        "origin": from.name,
        "destination": to.name,
        "mode": mode,
        "distance_km": round_to(distance, 2),
        "duration_minutes": minutes,
        "summary": format!("{:.1} km {mode}, about {minutes} min", distance),
    }))
}

fn search_places(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?.trim().to_lowercase();
    let near = resolve(args.str("near")?)?;
    let kind = query.trim_end_matches('s');
    let kind = match kind {
        "coffee" | "coffee shop" | "café" => "cafe",
        "sight" | "attraction" | "monument" => "landmark",
        other => other,
    };
    let mut hits: Vec<(f64, &Place)> = PLACES
        .iter()
        .filter(|p| p.kind != "city" && (p.kind == kind || matches_all(p.name, &query)))
        .map(|p| (haversine((near.lat, near.lon), (p.lat, p.lon)), p))
        .filter(|(d, _)| *d <= 25.0)
        .collect();
    hits.sort_by(|a, b| a.0.total_cmp(&b.0));
    let results: Vec<Value> = hits
        .iter()
        .map(|(d, p)| json!({"name": p.name, "kind": p.kind, "distance_km": round_to(*d, 2)}))
        .collect();
    ok(json!({"near": near.name, "results": results}))
}
