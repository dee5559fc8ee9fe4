//! `units`: unit conversion over a fixed table of factors to each dimension's base unit
//! (exact where the definitions are exact: 1 mi = 1609.344 m, 1 lb = 0.45359237 kg, …).
//! Temperatures and fuel economy are not linear factors and have their own tools.

use serde_json::{Value, json};

use super::super::kit::{Args, Reply, fail, ok, ok_text};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "convert_units" => convert_units,
        "convert_temperature" => convert_temperature,
        "list_units" => list_units,
        "convert_data_size" => convert_data_size,
        "convert_fuel_economy" => convert_fuel_economy,
        "convert_pressure" => convert_pressure,
        "convert_angle" => convert_angle,
        "parse_quantity" => parse_quantity,
        "format_quantity" => format_quantity,
        "cooking_conversion" => cooking_conversion,
        _ => return None,
    })
}

struct Unit {
    symbol: &'static str,
    name: &'static str,
    dimension: &'static str,
    /// Multiply by this to get the dimension's base unit.
    factor: f64,
    aliases: &'static [&'static str],
}

const fn u(
    symbol: &'static str,
    name: &'static str,
    dimension: &'static str,
    factor: f64,
    aliases: &'static [&'static str],
) -> Unit {
    Unit {
        symbol,
        name,
        dimension,
        factor,
        aliases,
    }
}

const UNITS: &[Unit] = &[
    // length, base m
    u("m", "metre", "length", 1.0, &["meter", "meters", "metres"]),
    u(
        "km",
        "kilometre",
        "length",
        1000.0,
        &["kilometer", "kilometers", "kilometres"],
    ),
    u(
        "cm",
        "centimetre",
        "length",
        0.01,
        &["centimeter", "centimeters"],
    ),
    u(
        "mm",
        "millimetre",
        "length",
        0.001,
        &["millimeter", "millimeters"],
    ),
    u("um", "micrometre", "length", 1e-6, &["µm", "micron"]),
    u("nm", "nanometre", "length", 1e-9, &["nanometer"]),
    u("mi", "mile", "length", 1609.344, &["mile", "miles"]),
    u("yd", "yard", "length", 0.9144, &["yard", "yards"]),
    u("ft", "foot", "length", 0.3048, &["foot", "feet", "'"]),
    u("in", "inch", "length", 0.0254, &["inch", "inches", "\""]),
    u("nmi", "nautical mile", "length", 1852.0, &["nautical mile"]),
    // mass, base kg
    u(
        "kg",
        "kilogram",
        "mass",
        1.0,
        &["kilogram", "kilograms", "kilo", "kilos"],
    ),
    u("g", "gram", "mass", 0.001, &["gram", "grams"]),
    u(
        "mg",
        "milligram",
        "mass",
        1e-6,
        &["milligram", "milligrams"],
    ),
    u(
        "t",
        "tonne",
        "mass",
        1000.0,
        &["tonne", "tonnes", "metric ton"],
    ),
    u(
        "lb",
        "pound",
        "mass",
        0.453_592_37,
        &["lbs", "pound", "pounds"],
    ),
    u(
        "oz",
        "ounce",
        "mass",
        0.028_349_523_125,
        &["ounce", "ounces"],
    ),
    u("st", "stone", "mass", 6.350_293_18, &["stone"]),
    // volume, base l
    u(
        "l",
        "litre",
        "volume",
        1.0,
        &["L", "liter", "liters", "litre", "litres"],
    ),
    u(
        "ml",
        "millilitre",
        "volume",
        0.001,
        &["mL", "milliliter", "milliliters"],
    ),
    u(
        "m3",
        "cubic metre",
        "volume",
        1000.0,
        &["m^3", "cubic meter"],
    ),
    u(
        "gal",
        "US gallon",
        "volume",
        3.785_411_784,
        &["gallon", "gallons"],
    ),
    u(
        "gal_uk",
        "imperial gallon",
        "volume",
        4.546_09,
        &["imperial gallon"],
    ),
    u(
        "qt",
        "US quart",
        "volume",
        0.946_352_946,
        &["quart", "quarts"],
    ),
    u("pt", "US pint", "volume", 0.473_176_473, &["pint", "pints"]),
    u("cup", "US cup", "volume", 0.236_588_236_5, &["cups"]),
    u(
        "floz",
        "US fluid ounce",
        "volume",
        0.029_573_529_562_5,
        &["fl oz", "fluid ounce"],
    ),
    u(
        "tbsp",
        "tablespoon",
        "volume",
        0.014_786_764_781_25,
        &["tablespoon", "tablespoons"],
    ),
    u(
        "tsp",
        "teaspoon",
        "volume",
        0.004_928_921_593_75,
        &["teaspoon", "teaspoons"],
    ),
    // area, base m2
    u("m2", "square metre", "area", 1.0, &["m^2", "sqm"]),
    u("km2", "square kilometre", "area", 1e6, &["km^2"]),
    u("cm2", "square centimetre", "area", 1e-4, &["cm^2"]),
    u("ha", "hectare", "area", 1e4, &["hectare", "hectares"]),
    u("acre", "acre", "area", 4_046.856_422_4, &["acres"]),
    u(
        "ft2",
        "square foot",
        "area",
        0.092_903_04,
        &["sqft", "ft^2"],
    ),
    u("mi2", "square mile", "area", 2_589_988.110_336, &["mi^2"]),
    // speed, base m/s
    u("m/s", "metre per second", "speed", 1.0, &["mps"]),
    u(
        "km/h",
        "kilometre per hour",
        "speed",
        1.0 / 3.6,
        &["kph", "kmh"],
    ),
    u("mph", "mile per hour", "speed", 0.447_04, &["mi/h"]),
    u(
        "kn",
        "knot",
        "speed",
        1852.0 / 3600.0,
        &["knot", "knots", "kt"],
    ),
    u("ft/s", "foot per second", "speed", 0.3048, &["fps"]),
    // time, base s
    u("s", "second", "time", 1.0, &["sec", "second", "seconds"]),
    u(
        "ms",
        "millisecond",
        "time",
        0.001,
        &["millisecond", "milliseconds"],
    ),
    u("min", "minute", "time", 60.0, &["minute", "minutes"]),
    u("h", "hour", "time", 3600.0, &["hr", "hour", "hours"]),
    u("day", "day", "time", 86_400.0, &["d", "days"]),
    u("week", "week", "time", 604_800.0, &["wk", "weeks"]),
    u(
        "year",
        "Julian year",
        "time",
        31_557_600.0,
        &["yr", "years"],
    ),
    // data, base B
    u("B", "byte", "data", 1.0, &["byte", "bytes"]),
    u("bit", "bit", "data", 0.125, &["bits", "b"]),
    u("KB", "kilobyte", "data", 1e3, &["kB"]),
    u("MB", "megabyte", "data", 1e6, &[]),
    u("GB", "gigabyte", "data", 1e9, &[]),
    u("TB", "terabyte", "data", 1e12, &[]),
    u("KiB", "kibibyte", "data", 1024.0, &[]),
    u("MiB", "mebibyte", "data", 1_048_576.0, &[]),
    u("GiB", "gibibyte", "data", 1_073_741_824.0, &[]),
    u("TiB", "tebibyte", "data", 1_099_511_627_776.0, &[]),
    // energy, base J
    u("J", "joule", "energy", 1.0, &["joule", "joules"]),
    u("kJ", "kilojoule", "energy", 1000.0, &["kilojoule"]),
    u("cal", "calorie", "energy", 4.184, &["calorie", "calories"]),
    u(
        "kcal",
        "kilocalorie",
        "energy",
        4184.0,
        &["Cal", "kilocalorie", "kilocalories"],
    ),
    u("Wh", "watt-hour", "energy", 3600.0, &["watt hour"]),
    u("kWh", "kilowatt-hour", "energy", 3.6e6, &["kwh"]),
    u(
        "BTU",
        "British thermal unit",
        "energy",
        1_055.055_852_62,
        &["btu"],
    ),
    u(
        "eV",
        "electronvolt",
        "energy",
        1.602_176_634e-19,
        &["electronvolt"],
    ),
    // pressure, base Pa
    u("Pa", "pascal", "pressure", 1.0, &["pascal"]),
    u("kPa", "kilopascal", "pressure", 1000.0, &["kilopascal"]),
    u("bar", "bar", "pressure", 1e5, &[]),
    u(
        "psi",
        "pound per square inch",
        "pressure",
        6_894.757_293_168,
        &[],
    ),
    u(
        "atm",
        "standard atmosphere",
        "pressure",
        101_325.0,
        &["atmosphere"],
    ),
    u(
        "mmHg",
        "millimetre of mercury",
        "pressure",
        133.322_387_415,
        &["torr"],
    ),
    // angle, base rad
    u("rad", "radian", "angle", 1.0, &["radian", "radians"]),
    u(
        "deg",
        "degree",
        "angle",
        std::f64::consts::PI / 180.0,
        &["°", "degree", "degrees"],
    ),
    u(
        "grad",
        "gradian",
        "angle",
        std::f64::consts::PI / 200.0,
        &["gon", "gradian"],
    ),
    u(
        "turn",
        "turn",
        "angle",
        std::f64::consts::TAU,
        &["rev", "revolution", "turns"],
    ),
];

/// Base unit symbol of each dimension.
fn base(dimension: &str) -> &'static str {
    match dimension {
        "length" => "m",
        "mass" => "kg",
        "volume" => "l",
        "area" => "m2",
        "speed" => "m/s",
        "time" => "s",
        "data" => "B",
        "energy" => "J",
        "pressure" => "Pa",
        _ => "rad",
    }
}

fn unit(symbol: &str) -> Result<&'static Unit, ToolError> {
    let s = symbol.trim();
    UNITS
        .iter()
        .find(|u| u.symbol == s || u.aliases.contains(&s))
        .or_else(|| {
            UNITS.iter().find(|u| {
                u.symbol.eq_ignore_ascii_case(s)
                    || u.aliases.iter().any(|a| a.eq_ignore_ascii_case(s))
            })
        })
        .ok_or_else(|| {
            fail(format!(
                "unknown unit {symbol:?}; list_units shows the supported symbols per dimension"
            ))
        })
}

/// Rounds to 10 significant digits so 0.1 + 0.2 style noise does not show.
fn tidy(value: f64) -> f64 {
    if value == 0.0 || !value.is_finite() {
        return value;
    }
    let magnitude = value.abs().log10().floor() as i32;
    let factor = 10f64.powi(9 - magnitude);
    if !factor.is_finite() || factor == 0.0 {
        return value;
    }
    (value * factor).round() / factor
}

/// Converts the call's `value` from `from_unit` to `to_unit` (both units of `only`, when given):
/// the value, the result and the two units.
fn convert(
    args: &Args<'_>,
    only: Option<&str>,
) -> Result<(f64, f64, &'static Unit, &'static Unit), ToolError> {
    let value = args.f64("value")?;
    let (from, to) = (args.str("from_unit")?, args.str("to_unit")?);
    if !value.is_finite() {
        return Err(fail("value must be a finite number"));
    }
    let (f, t) = (unit(from)?, unit(to)?);
    if f.dimension != t.dimension {
        return Err(fail(format!(
            "cannot convert {} ({}) to {} ({})",
            f.symbol, f.dimension, t.symbol, t.dimension
        )));
    }
    if let Some(dimension) = only
        && f.dimension != dimension
    {
        return Err(fail(format!(
            "{} is a unit of {}, not {dimension}",
            f.symbol, f.dimension
        )));
    }
    let result = tidy(value * f.factor / t.factor);
    if !result.is_finite() {
        return Err(fail("the result is out of range"));
    }
    Ok((value, result, f, t))
}

fn convert_units(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (value, result, f, t) = convert(args, None)?;
    ok_text(
        json!({"value": value, "from_unit": f.symbol, "to_unit": t.symbol, "result": result, "dimension": f.dimension}),
        format!("{value} {} = {result} {}", f.symbol, t.symbol),
    )
}

fn to_celsius(value: f64, scale: &str) -> Result<f64, ToolError> {
    Ok(match scale {
        "C" => value,
        "F" => (value - 32.0) * 5.0 / 9.0,
        "K" => value - 273.15,
        other => return Err(fail(format!("scale must be C, F or K, got {other:?}"))),
    })
}

fn convert_temperature(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let value = args.f64("value")?;
    let c = to_celsius(value, args.str("from")?)?;
    if c < -273.15 - 1e-9 || !c.is_finite() {
        return Err(fail("that temperature is below absolute zero"));
    }
    let (f, k) = (c * 9.0 / 5.0 + 32.0, c + 273.15);
    let result = match args.str("to")? {
        "C" => c,
        "F" => f,
        "K" => k,
        other => return Err(fail(format!("scale must be C, F or K, got {other:?}"))),
    };
    ok(
        json!({"celsius": tidy(c), "fahrenheit": tidy(f), "kelvin": tidy(k), "result": tidy(result)}),
    )
}

fn list_units(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let dimension = args.str("dimension")?;
    let units: Vec<Value> = UNITS
        .iter()
        .filter(|u| u.dimension == dimension)
        .map(|u| json!({"symbol": u.symbol, "name": u.name, "in_base_unit": u.factor}))
        .collect();
    if units.is_empty() {
        return Err(fail(format!(
            "unknown dimension {dimension:?}; use length, mass, volume, area, speed, time, data, energy, pressure or angle"
        )));
    }
    ok(json!({"dimension": dimension, "base_unit": base(dimension), "units": units}))
}

fn convert_data_size(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let value = args.f64("value")?;
    if value < 0.0 {
        return Err(fail("a data size cannot be negative"));
    }
    let from = unit(args.str("from_unit")?)?;
    if from.dimension != "data" {
        return Err(fail(format!("{} is not a data unit", from.symbol)));
    }
    let bytes = value * from.factor;
    let mut decimal = serde_json::Map::new();
    let mut binary = serde_json::Map::new();
    for symbol in ["KB", "MB", "GB", "TB"] {
        decimal.insert(
            symbol.to_string(),
            json!(tidy(bytes / unit(symbol)?.factor)),
        );
    }
    for symbol in ["KiB", "MiB", "GiB", "TiB"] {
        binary.insert(
            symbol.to_string(),
            json!(tidy(bytes / unit(symbol)?.factor)),
        );
    }
    ok(
        json!({"bytes": tidy(bytes), "bits": tidy(bytes * 8.0), "decimal": decimal, "binary": binary}),
    )
}

fn convert_fuel_economy(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let value = args.f64("value")?;
    if value <= 0.0 || !value.is_finite() {
        return Err(fail("value must be a positive number"));
    }
    // 1 mpg (US) = 235.214583 L/100km; 1 mpg (UK) = 282.480936 L/100km (both reciprocal).
    let (us, uk) = (235.214_583_3, 282.480_936_3);
    let l100 = match args.str("from")? {
        "l_per_100km" => value,
        "mpg_us" => us / value,
        "mpg_uk" => uk / value,
        other => {
            return Err(fail(format!(
                "from must be l_per_100km, mpg_us or mpg_uk, got {other:?}"
            )));
        }
    };
    ok(
        json!({"l_per_100km": tidy(l100), "mpg_us": tidy(us / l100), "mpg_uk": tidy(uk / l100), "km_per_l": tidy(100.0 / l100)}),
    )
}

fn convert_pressure(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (value, result, f, t) = convert(args, Some("pressure"))?;
    ok(
        json!({"result": result, "from_unit": f.symbol, "to_unit": t.symbol, "pascals": tidy(value * f.factor)}),
    )
}

fn convert_angle(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (value, result, f, t) = convert(args, Some("angle"))?;
    let radians = value * f.factor;
    ok(
        json!({"result": result, "from_unit": f.symbol, "to_unit": t.symbol, "normalized_degrees": tidy(radians.to_degrees().rem_euclid(360.0))}),
    )
}

fn parse_quantity(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    // Split "2.5kg" into "2.5 kg"; then read (number, unit) pairs.
    let mut spaced = String::new();
    let mut previous_digit = false;
    for c in text.chars() {
        let digit = c.is_ascii_digit() || c == '.';
        if previous_digit && !digit && !c.is_whitespace() && c != ',' {
            spaced.push(' ');
        }
        spaced.push(if c == ',' { ' ' } else { c });
        previous_digit = digit;
    }
    let tokens: Vec<&str> = spaced.split_whitespace().filter(|t| *t != "and").collect();
    if tokens.is_empty() || !tokens.len().is_multiple_of(2) {
        return Err(fail(format!(
            "cannot read {text:?}; write number-unit pairs like \"5 ft 11 in\" or \"2.5kg\""
        )));
    }
    let mut dimension: Option<&str> = None;
    let mut total = 0.0;
    for pair in tokens.chunks(2) {
        let number: f64 = pair[0]
            .parse()
            .map_err(|_| fail(format!("{:?} is not a number", pair[0])))?;
        let unit = unit(pair[1])?;
        if dimension.is_some_and(|d| d != unit.dimension) {
            return Err(fail("all parts of a quantity must share one dimension"));
        }
        dimension = Some(unit.dimension);
        total += number * unit.factor;
    }
    let dimension = dimension.unwrap_or("length");
    ok(
        json!({"text": text, "si_value": tidy(total), "si_unit": base(dimension), "dimension": dimension}),
    )
}

fn format_quantity(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let value = args.f64("value")?;
    let unit_symbol = args.str("unit")?;
    if !["m", "g", "B", "s", "W", "Hz"].contains(&unit_symbol) {
        return Err(fail("unit must be one of m, g, B, s, W, Hz"));
    }
    let precision = args.i64_or("precision", 2)?.clamp(0, 6) as usize;
    let prefixes = [
        (1e12, "T"),
        (1e9, "G"),
        (1e6, "M"),
        (1e3, "k"),
        (1.0, ""),
        (1e-3, "m"),
        (1e-6, "µ"),
        (1e-9, "n"),
    ];
    let magnitude = value.abs();
    let (scale, prefix) = prefixes
        .iter()
        .copied()
        .find(|(s, _)| magnitude >= *s)
        .unwrap_or((1e-9, "n"));
    let (scale, prefix) = if magnitude == 0.0 {
        (1.0, "")
    } else {
        (scale, prefix)
    };
    let scaled = value / scale;
    let prefix = if unit_symbol == "B" && prefix == "k" {
        "K"
    } else {
        prefix
    };
    let formatted = format!("{scaled:.precision$} {prefix}{unit_symbol}");
    ok_text(
        json!({"formatted": formatted, "scaled_value": tidy(scaled), "prefix": prefix}),
        formatted.clone(),
    )
}

fn cooking_conversion(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let value = args.f64("value")?;
    if value < 0.0 || !value.is_finite() {
        return Err(fail("value must be a non-negative number"));
    }
    let ingredient = args.str_or("ingredient", "water")?;
    let density = match ingredient {
        "water" => 1.0,
        "flour" => 0.53,
        "sugar" => 0.85,
        "butter" => 0.911,
        "milk" => 1.03,
        other => {
            return Err(fail(format!(
                "unknown ingredient {other:?}; use water, flour, sugar, butter or milk"
            )));
        }
    };
    let ml = |measure: &str| -> Result<f64, ToolError> {
        Ok(match measure {
            "g" => 1.0 / density,
            "cup" | "tbsp" | "tsp" | "ml" => unit(measure)?.factor * 1000.0,
            other => return Err(fail(format!("unknown kitchen measure {other:?}"))),
        })
    };
    let (from, to) = (args.str("from_unit")?, args.str("to_unit")?);
    let result = tidy(value * ml(from)? / ml(to)?);
    ok_text(
        json!({"result": result, "unit": to, "ingredient": ingredient, "grams_per_ml": density}),
        format!("{value} {from} of {ingredient} ≈ {result} {to}"),
    )
}
