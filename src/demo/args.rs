//! [`example_args`]: a small, deterministic argument generator for JSON Schemas.
//!
//! It builds the smallest plausible valid argument object: required properties only, each
//! value taken from the schema's own `examples[0]`, then `default`, then `const`, then the
//! first `enum` value, else a type-appropriate placeholder that respects `minimum`/`maximum`
//! (and their exclusive forms), `minLength`/`maxLength`, `minItems` and the `date`,
//! `date-time`, `email` and `uri` formats. Demo schemas put `examples` on id-like fields so
//! the generated arguments hit the seeded [`super::DemoWorld`].
//!
//! Never does: `$ref` resolution, `pattern` synthesis, or anything random. Bounds: recursion
//! stops at depth 8 (deeper values become `null`); arrays get at most `minItems` (≤ 8) items.

use serde_json::{Map, Value, json};

/// Deepest nesting the generator follows.
const MAX_DEPTH: usize = 8;

/// A valid argument object for `schema`: required properties only, deterministic.
///
/// For a schema that is not an object schema the value for that schema is returned as is
/// (a string schema gives a string, and so on); `{}` and non-schemas give `{}`.
pub fn example_args(schema: &Value) -> Value {
    match value_for(schema, 0) {
        Value::Null if !declares_null(schema) => Value::Object(Map::new()),
        other => other,
    }
}

fn declares_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The first type named by `type` (a string or the first non-null entry of an array).
fn first_type(schema: &Value) -> Option<&str> {
    match schema.get("type")? {
        Value::String(t) => Some(t.as_str()),
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or_else(|| types.iter().find_map(Value::as_str)),
        _ => None,
    }
}

fn value_for(schema: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        return Value::Object(Map::new());
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(first) = map
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|examples| examples.first())
    {
        return first.clone();
    }
    if let Some(default) = map.get("default") {
        return default.clone();
    }
    if let Some(constant) = map.get("const") {
        return constant.clone();
    }
    if let Some(first) = map
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|values| values.first())
    {
        return first.clone();
    }
    for union in ["anyOf", "oneOf"] {
        if let Some(first) = map
            .get(union)
            .and_then(Value::as_array)
            .and_then(|variants| variants.first())
        {
            return value_for(first, depth + 1);
        }
    }
    let kind = first_type(schema).or_else(|| map.contains_key("properties").then_some("object"));
    match kind {
        Some("object") => object_for(map, depth),
        Some("array") => {
            let count = map
                .get("minItems")
                .and_then(Value::as_u64)
                .unwrap_or(0)
                .min(8) as usize;
            let item = map.get("items").cloned().unwrap_or(json!({}));
            Value::Array((0..count).map(|_| value_for(&item, depth + 1)).collect())
        }
        Some("string") => string_for(map),
        Some("integer") => number_for(map, true),
        Some("number") => number_for(map, false),
        Some("boolean") => Value::Bool(false),
        Some("null") => Value::Null,
        _ => Value::Object(Map::new()),
    }
}

fn object_for(map: &Map<String, Value>, depth: usize) -> Value {
    let properties = map.get("properties").and_then(Value::as_object);
    let mut out = Map::new();
    if let Some(required) = map.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            let property = properties.and_then(|p| p.get(key)).unwrap_or(&Value::Null);
            let value = match property {
                Value::Null => Value::String("example".to_string()),
                schema => value_for(schema, depth + 1),
            };
            out.insert(key.to_string(), value);
        }
    }
    Value::Object(out)
}

fn string_for(map: &Map<String, Value>) -> Value {
    let base = match map.get("format").and_then(Value::as_str) {
        Some("date") => "2026-03-02",
        Some("date-time") => "2026-03-02T09:00:00Z",
        Some("time") => "09:00:00Z",
        Some("email") => "user@example.com",
        Some("uri") | Some("url") => "https://example.com/",
        Some("uuid") => "00000000-0000-4000-8000-000000000000",
        _ => "example",
    };
    let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
    let max = map
        .get("maxLength")
        .and_then(Value::as_u64)
        .map_or(usize::MAX, |m| m as usize);
    let mut text = base.to_string();
    while text.chars().count() < min.min(4096) {
        text.push('x');
    }
    if text.chars().count() > max {
        text = text.chars().take(max).collect();
    }
    Value::String(text)
}

fn number_for(map: &Map<String, Value>, integer: bool) -> Value {
    let num = |key: &str| map.get(key).and_then(Value::as_f64);
    let step = if integer { 1.0 } else { 0.5 };
    let lower = match (num("minimum"), num("exclusiveMinimum")) {
        (Some(min), Some(ex)) => Some(min.max(ex + step)),
        (Some(min), None) => Some(min),
        (None, Some(ex)) => Some(ex + step),
        (None, None) => None,
    };
    let upper = match (num("maximum"), num("exclusiveMaximum")) {
        (Some(max), Some(ex)) => Some(max.min(ex - step)),
        (Some(max), None) => Some(max),
        (None, Some(ex)) => Some(ex - step),
        (None, None) => None,
    };
    let mut value = lower.unwrap_or(1.0);
    if let Some(upper) = upper
        && value > upper
    {
        value = upper;
    }
    if integer {
        let value = if lower.is_some() {
            value.ceil()
        } else {
            value.floor()
        };
        json!(value as i64)
    } else {
        json!(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_only_with_examples_defaults_enums_and_bounds() {
        let schema = json!({
            "type": "object",
            "properties": {
                "id": {"type": "string", "examples": ["evt_1"]},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "limit": {"type": "integer", "minimum": 5, "maximum": 9},
                "ratio": {"type": "number", "exclusiveMinimum": 0},
                "when": {"type": "string", "format": "date-time"},
                "name": {"type": "string", "minLength": 10},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
                "flag": {"type": "boolean", "default": true},
                "optional": {"type": "string"}
            },
            "required": ["id", "mode", "limit", "ratio", "when", "name", "tags", "flag"]
        });
        assert_eq!(
            example_args(&schema),
            json!({
                "id": "evt_1", "mode": "a", "limit": 5, "ratio": 0.5,
                "when": "2026-03-02T09:00:00Z", "name": "examplexxx",
                "tags": ["example", "example"], "flag": true
            })
        );
    }

    #[test]
    fn empty_and_odd_schemas_give_objects() {
        assert_eq!(example_args(&json!({})), json!({}));
        assert_eq!(example_args(&json!(true)), json!({}));
        assert_eq!(example_args(&json!({"type": "object"})), json!({}));
    }
}
