//! The small toolkit every demo tool body is written with: typed argument access that turns a
//! missing or mistyped argument into a [`ToolError`] (never a panic), poison-tolerant locking
//! and id counters, and the pieces the tools share: lookup of records by id with a "no such" error
//! ([`Kind`]), the bookkeeping and reply of update tools ([`Changed`]), listing replies, tag
//! filters and unique-name checks.
//!
//! Never does: I/O of any kind, or know the demo world or any tool. Handlers are synchronous and
//! short; they hold one owner's lock at a time (two when a tool spans owners, always in the demo
//! world's field order).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::catalog::{ToolError, ToolOutput};

/// The result type of every handler.
pub(crate) type Reply = Result<ToolOutput, ToolError>;

/// A JSON details result.
pub(crate) fn ok(details: Value) -> Reply {
    Ok(ToolOutput::json(details))
}

/// A JSON details result with display text.
pub(crate) fn ok_text(details: Value, text: impl Into<String>) -> Reply {
    Ok(ToolOutput {
        text: Some(text.into()),
        details: Some(details),
        sent: None,
    })
}

/// An error for the model.
#[cold]
pub(crate) fn fail(message: impl Into<String>) -> ToolError {
    ToolError::new(message)
}

/// "No such thing" with a hint on how to find valid ids.
#[cold]
pub(crate) fn not_found(kind: &str, id: &str, hint: &str) -> ToolError {
    ToolError::new(format!("no {kind} {id:?}; {hint}"))
}

/// The next id of a sequence: `prefix` + counter, counter incremented.
pub(crate) fn next_id(prefix: &str, counter: &mut u64) -> String {
    let id = format!("{prefix}{counter}");
    *counter += 1;
    id
}

/// What a record kept by id is called and how to find valid ids: the words of its "no such"
/// error.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Kind {
    name: &'static str,
    hint: &'static str,
}

impl Kind {
    /// A record kind named `name`, whose "no such" errors end with `hint`.
    pub(crate) const fn new(name: &'static str, hint: &'static str) -> Kind {
        Kind { name, hint }
    }

    /// The "no such record" error for `id`.
    #[cold]
    pub(crate) fn missing(self, id: &str) -> ToolError {
        not_found(self.name, id, self.hint)
    }

    /// The record `id` of `records`.
    pub(crate) fn get<'m, V>(
        self,
        records: &'m BTreeMap<String, V>,
        id: &str,
    ) -> Result<&'m V, ToolError> {
        records.get(id).ok_or_else(|| self.missing(id))
    }

    /// The record `id` of `records`, for changing it.
    pub(crate) fn get_mut<'m, V>(
        self,
        records: &'m mut BTreeMap<String, V>,
        id: &str,
    ) -> Result<&'m mut V, ToolError> {
        records.get_mut(id).ok_or_else(|| self.missing(id))
    }

    /// Removes the record `id` from `records` and returns it.
    pub(crate) fn take<V>(
        self,
        records: &mut BTreeMap<String, V>,
        id: &str,
    ) -> Result<V, ToolError> {
        records.remove(id).ok_or_else(|| self.missing(id))
    }

    /// Succeeds when `records` has a record `id`.
    pub(crate) fn check<V>(self, records: &BTreeMap<String, V>, id: &str) -> Result<(), ToolError> {
        self.get(records, id).map(drop)
    }
}

/// The fields an update tool changed, in the order it changed them (serializes as their names).
#[derive(Debug, Default, Serialize)]
pub(crate) struct Changed(Vec<&'static str>);

impl Changed {
    /// Notes `field` as changed.
    pub(crate) fn note(&mut self, field: &'static str) {
        self.0.push(field);
    }

    /// Stores `value` in `slot` and notes `field` as changed, when a value is given.
    pub(crate) fn set<T>(
        &mut self,
        field: &'static str,
        slot: &mut T,
        value: Option<impl Into<T>>,
    ) {
        if let Some(value) = value {
            *slot = value.into();
            self.note(field);
        }
    }

    /// The update reply: `details`, with `hint` as the text when nothing changed.
    pub(crate) fn reply(&self, details: Value, hint: &str) -> Reply {
        if self.0.is_empty() {
            ok_text(details, hint)
        } else {
            ok(details)
        }
    }
}

/// A listing: `{key: items, "total": how many items}`.
pub(crate) fn listed(key: &str, items: impl IntoIterator<Item = Value>) -> Value {
    let items: Vec<Value> = items.into_iter().collect();
    let total = items.len();
    json!({key: items, "total": total})
}

/// A listing of the first `limit` items: `{key: those items, "total": how many there are}`.
pub(crate) fn listed_first(
    key: &str,
    limit: usize,
    items: impl ExactSizeIterator<Item = Value>,
) -> Value {
    let total = items.len();
    let shown: Vec<Value> = items.take(limit).collect();
    json!({key: shown, "total": total})
}

/// Whether a record with `tags` passes an optional tag filter (no filter passes all).
pub(crate) fn tagged(tags: &[String], tag: Option<&str>) -> bool {
    tag.is_none_or(|t| tags.iter().any(|x| x == t))
}

/// Refuses `name` when it already names one of `taken` (ASCII case ignored).
pub(crate) fn unique_name<'n>(
    kind: &str,
    name: &str,
    mut taken: impl Iterator<Item = &'n String>,
) -> Result<(), ToolError> {
    if taken.any(|n| n.eq_ignore_ascii_case(name)) {
        return Err(fail(format!("a {kind} named {name:?} already exists")));
    }
    Ok(())
}

/// Rounds for display (JSON numbers in results).
pub(crate) fn round_to(value: f64, decimals: i32) -> f64 {
    let factor = 10f64.powi(decimals);
    (value * factor).round() / factor
}

/// Lowercased words of a text (for the small in-memory searches).
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether every word of `query` occurs in `haystack` (case-insensitive substring match).
pub(crate) fn matches_all(haystack: &str, query: &str) -> bool {
    let hay = haystack.to_lowercase();
    let terms = words(query);
    !terms.is_empty() && terms.iter().all(|t| hay.contains(t.as_str()))
}

/// How many distinct words of `query` occur in `haystack`.
pub(crate) fn match_count(haystack: &str, query: &str) -> usize {
    let hay = haystack.to_lowercase();
    let mut terms = words(query);
    terms.sort();
    terms.dedup();
    terms.iter().filter(|t| hay.contains(t.as_str())).count()
}

/// Typed access to a call's argument object.
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Wraps the arguments; they must be a JSON object.
    pub(crate) fn new(value: &'a Value) -> Result<Args<'a>, ToolError> {
        match value {
            Value::Object(map) => Ok(Args { map }),
            other => Err(fail(format!(
                "arguments must be a JSON object, got {}",
                crate::catalog::json_kind(other)
            ))),
        }
    }

    /// The raw value of `key`, when present and not null.
    pub(crate) fn value(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// A required string.
    pub(crate) fn str(&self, key: &str) -> Result<&'a str, ToolError> {
        self.opt_str(key)?.ok_or_else(|| missing(key, "string"))
    }

    /// The value of `key` as `convert` reads it, when present; a value it cannot read is an
    /// error that names the `expected` type.
    fn typed<T>(
        &self,
        key: &str,
        expected: &str,
        convert: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Result<Option<T>, ToolError> {
        match self.value(key) {
            None => Ok(None),
            Some(value) => convert(value)
                .map(Some)
                .ok_or_else(|| wrong(key, expected, value)),
        }
    }

    /// An optional string.
    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ToolError> {
        self.typed(key, "string", Value::as_str)
    }

    /// A required string with surrounding white space removed, which must not be blank.
    pub(crate) fn trimmed(&self, key: &str) -> Result<&'a str, ToolError> {
        let text = self.str(key)?.trim();
        if text.is_empty() {
            return Err(fail(format!("{key} must not be empty")));
        }
        Ok(text)
    }

    /// An optional string with a default.
    pub(crate) fn str_or(&self, key: &str, default: &'a str) -> Result<&'a str, ToolError> {
        Ok(self.opt_str(key)?.unwrap_or(default))
    }

    /// A required integer.
    pub(crate) fn i64(&self, key: &str) -> Result<i64, ToolError> {
        self.opt_i64(key)?.ok_or_else(|| missing(key, "integer"))
    }

    /// An optional integer (a float with no fraction is accepted).
    pub(crate) fn opt_i64(&self, key: &str) -> Result<Option<i64>, ToolError> {
        self.typed(key, "integer", |value| {
            value.as_i64().or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            })
        })
    }

    /// An optional integer with a default.
    pub(crate) fn i64_or(&self, key: &str, default: i64) -> Result<i64, ToolError> {
        Ok(self.opt_i64(key)?.unwrap_or(default))
    }

    /// A required number.
    pub(crate) fn f64(&self, key: &str) -> Result<f64, ToolError> {
        self.opt_f64(key)?.ok_or_else(|| missing(key, "number"))
    }

    /// An optional number.
    pub(crate) fn opt_f64(&self, key: &str) -> Result<Option<f64>, ToolError> {
        self.typed(key, "number", Value::as_f64)
    }

    /// An optional boolean with a default.
    pub(crate) fn bool_or(&self, key: &str, default: bool) -> Result<bool, ToolError> {
        Ok(self
            .typed(key, "boolean", Value::as_bool)?
            .unwrap_or(default))
    }

    /// A required array of strings.
    pub(crate) fn str_list(&self, key: &str) -> Result<Vec<String>, ToolError> {
        self.opt_str_list(key)?
            .ok_or_else(|| missing(key, "array of strings"))
    }

    /// An optional array of strings.
    pub(crate) fn opt_str_list(&self, key: &str) -> Result<Option<Vec<String>>, ToolError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(wrong(key, "array of strings", other)),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(other) => Err(wrong(key, "array of strings", other)),
        }
    }

    /// A required array of numbers.
    pub(crate) fn num_list(&self, key: &str) -> Result<Vec<f64>, ToolError> {
        match self.value(key) {
            None => Err(missing(key, "array of numbers")),
            Some(value) => numbers(key, value),
        }
    }

    /// A required array of arrays of numbers (rows of a matrix).
    pub(crate) fn matrix(&self, key: &str) -> Result<Vec<Vec<f64>>, ToolError> {
        match self.value(key) {
            Some(Value::Array(rows)) => rows.iter().map(|row| numbers(key, row)).collect(),
            Some(other) => Err(wrong(key, "array of number arrays", other)),
            None => Err(missing(key, "array of number arrays")),
        }
    }
}

fn numbers(key: &str, value: &Value) -> Result<Vec<f64>, ToolError> {
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_f64()
                    .ok_or_else(|| wrong(key, "array of numbers", item))
            })
            .collect(),
        other => Err(wrong(key, "array of numbers", other)),
    }
}

#[cold]
fn missing(key: &str, expected: &str) -> ToolError {
    fail(format!("missing required argument `{key}` ({expected})"))
}

#[cold]
fn wrong(key: &str, expected: &str, got: &Value) -> ToolError {
    fail(format!(
        "argument `{key}` must be {expected}, got {}",
        crate::catalog::json_kind(got)
    ))
}
