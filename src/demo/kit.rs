//! The small toolkit every demo tool body is written with: typed argument access that turns a
//! missing or mistyped argument into a [`ToolError`] (never a panic), the [`DemoTool`] adapter
//! from a plain handler function to the async [`Tool`] trait, poison-tolerant locking and id
//! counters.
//!
//! Never does: I/O of any kind. Handlers are synchronous and short; they hold one owner's lock
//! at a time (two when a tool spans owners, always in [`DemoWorld`] field order).

use std::sync::Arc;

use serde_json::{Map, Value};

use super::world::DemoWorld;
use crate::catalog::{BoxFuture, CallContext, Tool, ToolError, ToolOutput};

/// A tool body: validated arguments in, JSON details out.
pub(crate) type Handler = fn(&DemoWorld, &Args<'_>) -> Result<ToolOutput, ToolError>;

/// The result type of every handler.
pub(crate) type Reply = Result<ToolOutput, ToolError>;

/// Adapts a [`Handler`] over a shared [`DemoWorld`] into a [`Tool`].
pub(crate) struct DemoTool {
    pub(crate) world: Arc<DemoWorld>,
    pub(crate) handler: Handler,
}

impl Tool for DemoTool {
    fn call<'a>(
        &'a self,
        _ctx: &'a CallContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args = Args::new(&args)?;
            (self.handler)(&self.world, &args)
        })
    }
}

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

    /// An optional string.
    pub(crate) fn opt_str(&self, key: &str) -> Result<Option<&'a str>, ToolError> {
        match self.value(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(other) => Err(wrong(key, "string", other)),
        }
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
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                        .map(|f| f as i64)
                })
                .map(Some)
                .ok_or_else(|| wrong(key, "integer", &Value::Number(n.clone()))),
            Some(other) => Err(wrong(key, "integer", other)),
        }
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
        match self.value(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(other) => Err(wrong(key, "number", other)),
        }
    }

    /// An optional boolean with a default.
    pub(crate) fn bool_or(&self, key: &str, default: bool) -> Result<bool, ToolError> {
        match self.value(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(other) => Err(wrong(key, "boolean", other)),
        }
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
