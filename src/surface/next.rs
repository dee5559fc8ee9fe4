//! The next step after a search in code mode: when a cell's value is a search answer, the call
//! of its best hit, worded so that a small model sends it.
//!
//! Small models that search in code mode tend to search again, or to answer in prose, instead
//! of calling what they found. Replayed against Qwen2.5-Coder-1.5B (temperature 0), a body with
//! `"…"` placeholders was explained to the user or copied as it stood, and a step without the
//! argument names was answered by searching again; what it sent was the body with one `?` per
//! argument and the instruction to put the request's values there. So a cell whose value is
//! search hits (an array of hits, or a batch's groups), or that failed after a search found
//! something, gets one line: `Now call tool_search_code with {"code": "return await
//! openclaw.tools.call(<id>, {a: ?, b: ?});"} with the values from the request in place of each
//! ?.` — the first hit by its exact id, its required properties (all of them when none is
//! required, up to [`MAX_ARGUMENTS`]); `{}` and ready to run as written when it takes none.
//!
//! A model that calls the bridge functions by name instead (`openclaw.tools.search` as a tool,
//! or as a JSON object in its text, which lenient parsing recovers) gets the step in that shape:
//! `Now call openclaw.tools.call with {"id": <id>, "args": {"a": ?}} with the values from the
//! request in place of each ?.` ([`Next::as_bridge_call`]). Replayed against the same model, the
//! cell wording after such a search was answered by repeating the search, an empty answer, or a
//! call without the id; the bridge wording was answered by the call, id and values filled in.
//!
//! Owns: recognising a search answer in a cell's value and wording the step. Never does: run
//! anything, look up a tool outside the allowed index it is given (a hit the index does not know
//! gets no step), or put untrusted text in the step beyond the hit's id and property names,
//! both JSON-escaped.

use serde_json::{Map, Value};

use crate::search::SearchIndex;

/// Most properties in the arguments of the step.
pub const MAX_ARGUMENTS: usize = 8;

/// The step after a search answer: the tool it calls and the line the model reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Next {
    /// The id of the tool the step calls.
    pub id: String,
    /// The line the model reads as `next`.
    pub text: String,
    /// The argument names the step asks for.
    arguments: Vec<String>,
}

impl Next {
    /// The step worded as a bridge-function call, for a model that calls `openclaw.tools.*` by
    /// name.
    pub(crate) fn as_bridge_call(&self) -> String {
        let arguments: Vec<String> = self
            .arguments
            .iter()
            .map(|name| format!("{}: ?", Value::from(name.as_str())))
            .collect();
        format!(
            "Now call openclaw.tools.call with {{\"id\": {}, \"args\": {{{}}}}}{}.",
            Value::from(self.id.as_str()),
            arguments.join(", "),
            fill(&arguments)
        )
    }
}

/// The instruction to fill in the placeholders, when there are any.
fn fill(arguments: &[String]) -> &'static str {
    if arguments.is_empty() {
        ""
    } else {
        " with the values from the request in place of each ?"
    }
}

/// The step after a cell whose `value` is a search answer, or `None` when it is not one (or its
/// first hit is not an allowed tool).
pub(crate) fn after_search(index: &SearchIndex, value: &Value) -> Option<Next> {
    let hit = first_hit(value)?;
    let id = hit.get("id")?.as_str()?;
    let tool = index.tool(index.position_of(id)?)?;
    let names = argument_names(&tool.input_schema);
    let arguments: Vec<String> = names
        .iter()
        .map(|name| format!("{}: ?", key(name)))
        .collect();
    let body = if arguments.is_empty() {
        format!(
            "return await openclaw.tools.call({}, {{}});",
            Value::from(id)
        )
    } else {
        format!(
            "return await openclaw.tools.call({}, {{{}}});",
            Value::from(id),
            arguments.join(", ")
        )
    };
    Some(Next {
        id: id.to_string(),
        text: format!(
            "Now call tool_search_code with {{\"code\": {}}}{}.",
            Value::from(body),
            fill(&arguments)
        ),
        arguments: names,
    })
}

/// The properties the step names: the required ones, or all of them when none is required, up
/// to [`MAX_ARGUMENTS`].
fn argument_names(schema: &Value) -> Vec<String> {
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
    names
        .into_iter()
        .take(MAX_ARGUMENTS)
        .map(str::to_string)
        .collect()
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    #[test]
    fn steps_name_required_arguments_with_a_placeholder_each() {
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
        let names = argument_names(&schema);
        assert_eq!(names, ["release_order_ref", "count", "dry-run"]);
        assert_eq!(key("dry-run"), "\"dry-run\"");
        assert_eq!(key("count"), "count");
        assert_eq!(
            argument_names(&json!({"properties": {"a": {}, "b": {}}})),
            ["a", "b"]
        );
        assert!(argument_names(&json!({"type": "object"})).is_empty());
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
