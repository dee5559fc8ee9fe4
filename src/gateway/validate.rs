//! Input and output validation of trusted tools with `jsonschema` (SPEC ).
//!
//! - Validators compile lazily, once per tool per snapshot, and are cached.
//! - A trusted schema that does not compile is normalized where the intent is clear (draft-04
//!   boolean `exclusiveMinimum`/`exclusiveMaximum` next to `minimum`/`maximum`; a `required`
//!   that is not an array of strings is dropped); otherwise the tool stays searchable and
//!   describable and its calls fail closed with an error naming the schema problem.
//! - Errors carry the JSON path, the reason, a did-you-mean for misspelled properties
//!   (Levenshtein distance ≤ min(3, max(1, ceil(len/3))), at most 3) and the expected input
//!   signature.
//!
//! Untrusted (MCP, client) schemas are never compiled here: they are left to their own
//! execution boundary. Normalization walks at most [`NORMALIZE_NODE_CAP`] nodes.

use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

/// Most schema nodes normalization visits.
pub const NORMALIZE_NODE_CAP: usize = 20_000;
/// Most validation errors reported for one call.
pub const MAX_REPORTED_ERRORS: usize = 5;

/// A compiled schema, or why it cannot be compiled.
pub(crate) type Compiled = Result<Arc<jsonschema::Validator>, String>;

/// Lazily compiled validators of one snapshot: input and output per catalog position.
pub(crate) struct ValidatorCache {
    inputs: Vec<OnceLock<Compiled>>,
    outputs: Vec<OnceLock<Compiled>>,
}

impl ValidatorCache {
    pub(crate) fn new(tools: usize) -> Self {
        ValidatorCache {
            inputs: (0..tools).map(|_| OnceLock::new()).collect(),
            outputs: (0..tools).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The input validator of the tool at snapshot `position`.
    pub(crate) fn input(&self, position: usize, schema: &Value) -> Compiled {
        match self.inputs.get(position) {
            Some(slot) => slot.get_or_init(|| compile(schema, "input")).clone(),
            None => compile(schema, "input"),
        }
    }

    /// The output validator of the tool at snapshot `position`.
    pub(crate) fn output(&self, position: usize, schema: &Value) -> Compiled {
        match self.outputs.get(position) {
            Some(slot) => slot.get_or_init(|| compile(schema, "output")).clone(),
            None => compile(schema, "output"),
        }
    }
}

/// Compiles `schema`, normalizing draft-04 leftovers first when the raw schema fails.
pub(crate) fn compile(schema: &Value, what: &str) -> Compiled {
    let options = || jsonschema::options().should_validate_formats(false);
    match options().build(schema) {
        Ok(validator) => Ok(Arc::new(validator)),
        Err(first) => {
            let mut normalized = schema.clone();
            let mut budget = NORMALIZE_NODE_CAP;
            if normalize(&mut normalized, &mut budget)
                && let Ok(validator) = options().build(&normalized)
            {
                return Ok(Arc::new(validator));
            }
            Err(format!(
                "its {what} schema is invalid ({}{})",
                first,
                describe_location(first.schema_path().as_str())
            ))
        }
    }
}

fn describe_location(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

/// Rewrites clear-intent draft-04 constructs in place; returns whether anything changed.
fn normalize(schema: &mut Value, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let mut changed = false;
    match schema {
        Value::Object(map) => {
            for (flag, bound) in [
                ("exclusiveMinimum", "minimum"),
                ("exclusiveMaximum", "maximum"),
            ] {
                if let Some(Value::Bool(exclusive)) = map.get(flag).cloned() {
                    map.remove(flag);
                    if exclusive && let Some(limit) = map.remove(bound) {
                        map.insert(flag.to_string(), limit);
                    }
                    changed = true;
                }
            }
            if let Some(required) = map.get("required") {
                let valid = required
                    .as_array()
                    .is_some_and(|items| items.iter().all(Value::is_string));
                if !valid && !matches!(required, Value::Bool(_)) {
                    map.remove("required");
                    changed = true;
                } else if let Value::Bool(_) = required {
                    // Draft-03 style `required: true` on a property: meaningless here.
                    map.remove("required");
                    changed = true;
                }
            }
            for value in map.values_mut() {
                changed |= normalize(value, budget);
            }
        }
        Value::Array(items) => {
            for item in items {
                changed |= normalize(item, budget);
            }
        }
        _ => {}
    }
    changed
}

/// One problem with the arguments, rendered for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    /// JSON pointer of the offending value (`/` for the root).
    pub(crate) path: String,
    /// What is wrong, with a did-you-mean when one applies.
    pub(crate) reason: String,
}

/// Validates `instance`; returns the problems (empty when valid).
pub(crate) fn problems(
    validator: &jsonschema::Validator,
    schema: &Value,
    instance: &Value,
) -> Vec<Problem> {
    if validator.is_valid(instance) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for error in validator
        .iter_errors(instance)
        .take(MAX_REPORTED_ERRORS * 2)
    {
        let path = error.instance_path().as_str().to_string();
        let path = if path.is_empty() {
            "/".to_string()
        } else {
            path
        };
        let placeholder = error
            .instance()
            .as_str()
            .filter(|text| is_placeholder(text));
        let reason = match error.kind() {
            // A value copied from an example's skeleton ("…", "<value>"): say what to put there.
            _ if placeholder.is_some() => format!(
                "{} is a placeholder: put the real value from the user's request here",
                short(error.instance())
            ),
            ValidationErrorKind::Required { property } => {
                let name = property.as_str().unwrap_or_default();
                format!(
                    "missing required property {:?}",
                    crate::config::input::echo(name)
                )
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let known = known_properties(schema, &path);
                unexpected
                    .iter()
                    .map(|name| {
                        let suggestions = did_you_mean(name, &known);
                        if suggestions.is_empty() {
                            format!("unexpected property {:?}", crate::config::input::echo(name))
                        } else {
                            format!(
                                "unexpected property {:?} (did you mean {}?)",
                                crate::config::input::echo(name),
                                suggestions
                                    .iter()
                                    .map(|s| format!("{s:?}"))
                                    .collect::<Vec<_>>()
                                    .join(" or ")
                            )
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            }
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    jsonschema::error::TypeKind::Single(t) => t.to_string(),
                    jsonschema::error::TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                format!("expected {expected}, got {}", json_type(error.instance()))
            }
            ValidationErrorKind::Enum { options } => {
                let allowed = options
                    .as_array()
                    .map(|values| {
                        values
                            .iter()
                            .take(12)
                            .map(Value::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default();
                format!(
                    "{} is not one of the allowed values: {allowed}",
                    short(error.instance())
                )
            }
            _ => cut(&error.to_string(), 200),
        };
        out.push(Problem { path, reason });
        if out.len() == MAX_REPORTED_ERRORS {
            break;
        }
    }
    pair_misspellings(&mut out);
    out
}

/// Whether `text` is a placeholder rather than a value: only dots or ellipses (`...`, `…`), or
/// one short `<name>`.
fn is_placeholder(text: &str) -> bool {
    let text = text.trim();
    (!text.is_empty() && text.chars().all(|c| c == '.' || c == '\u{2026}'))
        || (text.len() <= 64
            && text.starts_with('<')
            && text.ends_with('>')
            && !text[1..text.len() - 1].contains(['<', '>']))
}

/// When a required property is missing and an unexpected one looks like it, say so on the
/// missing one too.
fn pair_misspellings(problems: &mut [Problem]) {
    let unexpected: Vec<(String, String)> = problems
        .iter()
        .filter_map(|p| {
            let start = p.reason.find("unexpected property \"")? + "unexpected property \"".len();
            let end = p.reason[start..].find('"')? + start;
            Some((p.path.clone(), p.reason[start..end].to_string()))
        })
        .collect();
    for problem in problems.iter_mut() {
        let Some(name) = problem
            .reason
            .strip_prefix("missing required property \"")
            .and_then(|r| r.strip_suffix('"'))
        else {
            continue;
        };
        let name = name.to_string();
        let candidates: Vec<String> = unexpected
            .iter()
            .filter(|(path, _)| *path == problem.path)
            .map(|(_, u)| u.clone())
            .collect();
        if let Some(close) = did_you_mean(&name, &candidates).first() {
            problem
                .reason
                .push_str(&format!(" (you sent {close:?}: a misspelling?)"));
        }
    }
}

/// Property names the schema declares at `pointer` (object properties reached through
/// `properties` and `items`).
fn known_properties(schema: &Value, pointer: &str) -> Vec<String> {
    let mut node = schema;
    for segment in pointer.split('/').filter(|s| !s.is_empty()) {
        let next = if segment.parse::<usize>().is_ok() {
            node.get("items")
        } else {
            node.get("properties").and_then(|p| p.get(segment))
        };
        match next {
            Some(next) => node = next,
            None => return Vec::new(),
        }
    }
    node.get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// Up to three candidates within distance min(3, max(1, ceil(len/3))) of `name`.
pub(crate) fn did_you_mean(name: &str, candidates: &[String]) -> Vec<String> {
    let length = name.chars().count();
    let limit = length.div_ceil(3).clamp(1, 3);
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .filter(|c| c.as_str() != name)
        .map(|c| (strsim::levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, c)| c.clone()).collect()
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn short(value: &Value) -> String {
    cut(&value.to_string(), 80)
}

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let mut out: String = text.chars().take(max - 1).collect();
        out.push('…');
        out
    }
}

/// Renders problems plus the expected signature as the text the model sees.
pub(crate) fn render(tool_id: &str, problems: &[Problem], signature: &str) -> String {
    let mut text = format!("Invalid arguments for {tool_id}:");
    for problem in problems {
        text.push_str(&format!("\n- {}: {}", problem.path, problem.reason));
    }
    text.push_str(&format!("\nExpected input: {signature}"));
    text.push_str("\nFix the arguments and call again.");
    text
}

#[cfg(test)]
mod tests {
    use super::is_placeholder;

    #[test]
    fn placeholders_are_dots_ellipses_or_one_short_name_in_angle_brackets() {
        for text in ["...", "\u{2026}", " .. ", "<release_order_ref>", "<value>"] {
            assert!(is_placeholder(text), "{text}");
        }
        for text in ["", "RO-20417", "a...b", "<b>bold</b>", "x < y", "Wait..."] {
            assert!(!is_placeholder(text), "{text}");
        }
    }
}
