//! The next step after a search in code mode: when a cell's value is a search answer, the cell
//! that calls its best hit, ready to send.
//!
//! Small models that search in code mode tend to search again, or to answer in prose, instead
//! of calling what they found. A cell whose value is search hits (an array of hits, or a batch's
//! groups), or that failed after a search found something, gets one line telling the model the
//! exact next call: `tool_search_code` with a body
//! that calls the first hit by its exact id, with an arguments object built from the tool's
//! input schema — its required properties (all of them when none is required, up to
//! [`MAX_ARGUMENTS`]) with a placeholder per type for the model to fill in from the request.
//!
//! Owns: recognising a search answer in a cell's value and wording the step. Never does: run
//! anything, look up a tool outside the allowed index it is given (a hit the index does not know
//! gets no step), or put untrusted text in the step beyond the hit's id and property names,
//! both JSON-escaped.

use serde_json::{Map, Value, json};

use crate::search::SearchIndex;

/// Most properties in the arguments skeleton.
pub const MAX_ARGUMENTS: usize = 8;

/// The step after a cell whose `value` is a search answer, or `None` when it is not one (or its
/// first hit is not an allowed tool).
pub(crate) fn after_search(index: &SearchIndex, value: &Value) -> Option<String> {
    let hit = first_hit(value)?;
    let id = hit.get("id")?.as_str()?;
    let tool = index.tool(index.position_of(id)?)?;
    let arguments = skeleton(&tool.input_schema);
    let body = format!(
        "return await openclaw.tools.call({}, {arguments});",
        Value::from(id)
    );
    let request = json!({ "code": body });
    let input = hit
        .get("input")
        .and_then(Value::as_str)
        .map(|signature| format!(" (input: {signature})"))
        .unwrap_or_default();
    Some(format!(
        "Next step: call tool_search_code with {request} to run {id}{input}, with the values from the request in place of each \u{2026} (or use another hit's id if it fits the request better).",
        id = Value::from(id)
    ))
}

/// The first hit of a search answer: an array of hits, the bridge's `{hits, …}`, or a batch
/// `{results: [{candidates}]}`.
fn first_hit(value: &Value) -> Option<&Value> {
    let hits = match value {
        Value::Array(hits) => hits,
        Value::Object(object) if object.get("hits").is_some_and(Value::is_array) => {
            object.get("hits")?.as_array()?
        }
        Value::Object(object) => object
            .get("results")?
            .as_array()?
            .iter()
            .find_map(|group| {
                group
                    .get("candidates")?
                    .as_array()
                    .filter(|c| !c.is_empty())
            })?,
        _ => return None,
    };
    let hit = hits.first()?;
    // A hit has an id and an input signature; other arrays of objects are not search answers.
    (hit.get("id").is_some_and(Value::is_string) && hit.get("input").is_some()).then_some(hit)
}

/// A JavaScript object literal of the schema's properties with a placeholder per type.
fn skeleton(schema: &Value) -> String {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let names: Vec<&str> = if required.is_empty() {
        properties.keys().map(String::as_str).collect()
    } else {
        required
    };
    let fields: Vec<String> = names
        .into_iter()
        .take(MAX_ARGUMENTS)
        .map(|name| {
            let placeholder = match properties
                .get(name)
                .and_then(|p| p.get("type"))
                .and_then(Value::as_str)
            {
                Some("number" | "integer") => "0",
                Some("boolean") => "false",
                Some("array") => "[]",
                Some("object") => "{}",
                _ => "\"\u{2026}\"",
            };
            format!("{}: {placeholder}", key(name))
        })
        .collect();
    if fields.is_empty() {
        "{}".into()
    } else {
        format!("{{{}}}", fields.join(", "))
    }
}

/// A property name as an object-literal key: bare when it is an identifier, else JSON-quoted.
fn key(name: &str) -> String {
    let mut chars = name.chars();
    let identifier = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if identifier {
        name.to_string()
    } else {
        Value::from(name).to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn skeletons_take_required_properties_with_typed_placeholders() {
        let schema = json!({
            "type": "object",
            "properties": {
                "release_order_ref": {"type": "string"},
                "count": {"type": "integer"},
                "dry-run": {"type": "boolean"},
                "note": {"type": "string"}
            },
            "required": ["release_order_ref", "count", "dry-run"]
        });
        assert_eq!(
            skeleton(&schema),
            "{release_order_ref: \"\u{2026}\", count: 0, \"dry-run\": false}"
        );
        assert_eq!(
            skeleton(&json!({"properties": {"a": {"type": "array"}}})),
            "{a: []}"
        );
        assert_eq!(skeleton(&json!({"type": "object"})), "{}");
    }

    #[test]
    fn only_search_answers_have_a_first_hit() {
        let hit = json!({"id": "plugin:a:b", "name": "b", "input": "{ x: string }"});
        assert_eq!(first_hit(&json!([hit.clone()])), Some(&hit));
        let batch = json!({"results": [{"candidates": []}, {"candidates": [hit.clone()]}]});
        assert_eq!(first_hit(&batch), Some(&hit));
        let bridge = json!({"hits": [hit.clone()], "matched": 3, "truncated": false});
        assert_eq!(first_hit(&bridge), Some(&hit));
        for value in [
            json!([]),
            json!([{"id": "x"}]),
            json!({"tool": "plugin:a:b", "result": {}}),
            json!("plugin:a:b"),
        ] {
            assert_eq!(first_hit(&value), None, "{value}");
        }
    }
}
