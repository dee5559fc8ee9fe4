//! The resolve stage: turn a `tool_call` request of any accepted shape into (tool, arguments)
//! (SPEC ).
//!
//! Accepted shapes: `{id, args}`, `{name, args}`, `{toolId, args}` (also `tool_id`, `tool`),
//! `input`/`arguments` instead of `args`, flattened `{id, path: …}` with no `args`, dotted keys
//! (`args.path`), an empty `args: {}` next to flattened fields, and `args` given as a JSON
//! string. Selector fields that resolve to two different tools are rejected as ambiguous
//! instead of guessed; a selector field that resolves to no tool stays a target argument (a
//! tool may well have a `name` parameter).

use serde_json::{Map, Value};

use super::outcome::{CallError, ErrorKind, Operation, Recovery};
use crate::search::SearchIndex;
use crate::search::lookup::{self, Resolution};

/// Fields that may name the tool, in order of precedence.
const SELECTORS: [&str; 5] = ["id", "toolId", "tool_id", "tool", "name"];
/// Fields that may hold the arguments, in order of precedence.
const ARG_FIELDS: [&str; 3] = ["args", "input", "arguments"];

/// What the request names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Target {
    /// An allowed catalog tool (position in the index's view).
    Catalog(u32),
    /// An allowed direct-only tool (its id).
    Direct(String),
}

/// A parsed request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) target: Target,
    pub(crate) args: Value,
}

fn bad(message: impl Into<String>) -> CallError {
    CallError::new(ErrorKind::BadRequest, None, message)
}

/// A lookup failure as the model's error: its kind and its structured recovery.
pub(crate) fn lookup_error(error: lookup::LookupError) -> CallError {
    let message = error.to_string();
    match error {
        lookup::LookupError::Unknown { suggestions, .. } => {
            CallError::new(ErrorKind::UnknownTool, None, message)
                .recover(Recovery::Search { suggestions })
        }
        lookup::LookupError::Ambiguous { candidates, .. } => {
            let candidates = candidates
                .into_iter()
                .take(lookup::MAX_AMBIGUOUS_LISTED)
                .collect();
            CallError::new(ErrorKind::Ambiguous, None, message)
                .recover(Recovery::PickId { candidates })
        }
    }
}

/// How one selector value resolves, direct-only tools included.
fn resolve_selector(index: &SearchIndex, selector: &str) -> Result<Option<Target>, CallError> {
    match lookup::resolve(index, selector) {
        Resolution::Found(position) => Ok(Some(Target::Catalog(position))),
        Resolution::Ambiguous(candidates) => Err(lookup_error(lookup::LookupError::Ambiguous {
            selector: selector.to_string(),
            candidates,
        })),
        Resolution::NotFound => Ok(index
            .view()
            .get_direct(selector.trim())
            .map(|d| Target::Direct(d.id.clone()))),
    }
}

/// What a call names, as its caller holds it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Call<'a> {
    /// A request in any accepted shape (as a model writes it).
    Shaped(&'a Value),
    /// A tool id (or name) and its arguments (as code that already holds the id gives it).
    Id { id: &'a str, args: &'a Value },
}

impl<'a> Call<'a> {
    /// The string that names the tool, when there is one (the first selector field of a
    /// request object, or a bare string).
    pub(crate) fn selector(self) -> Option<&'a str> {
        match self {
            Call::Id { id, .. } => Some(id),
            Call::Shaped(Value::String(text)) => Some(text),
            Call::Shaped(Value::Object(map)) => SELECTORS
                .iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str)),
            Call::Shaped(_) => None,
        }
    }
}

/// Resolves a call of either kind.
pub(crate) fn resolve(index: &SearchIndex, call: Call<'_>) -> Result<Parsed, CallError> {
    match call {
        Call::Shaped(request) => parse(index, request),
        Call::Id { id, args } => by_id(index, id, args),
    }
}

/// Resolves a tool id and its arguments: the same answer as parsing `{"id": id, "args": args}`,
/// without building that request.
fn by_id(index: &SearchIndex, id: &str, args: &Value) -> Result<Parsed, CallError> {
    let target = match resolve_selector(index, id)? {
        Some(target) => target,
        None => {
            return Err(lookup_error(lookup::LookupError::Unknown {
                selector: id.to_string(),
                suggestions: lookup::suggestions(index, id),
            }));
        }
    };
    Ok(Parsed {
        target,
        args: Value::Object(argument_object("args", args)?),
    })
}

/// Parses a `tool_call` request.
pub(crate) fn parse(index: &SearchIndex, request: &Value) -> Result<Parsed, CallError> {
    let Value::Object(map) = request else {
        return Err(bad(format!(
            "a call takes a tool id and an object of arguments, got {}",
            crate::catalog::json_kind(request)
        ))
        .recover(Recovery::Usage {
            operation: Operation::Call,
        }));
    };
    let (target, consumed) = selected(index, map)?;
    let explicit = explicit_arguments(map)?;
    let flattened = flattened_arguments(map, &consumed);
    let args = match explicit {
        Some(explicit) if explicit.is_empty() => flattened,
        Some(explicit) => merge(explicit, flattened)?,
        None => flattened,
    };
    Ok(Parsed {
        target,
        args: Value::Object(args),
    })
}

/// The tool a request's selector fields name, and the fields that named it.
fn selected<'m>(
    index: &SearchIndex,
    map: &'m Map<String, Value>,
) -> Result<(Target, Vec<&'m str>), CallError> {
    // Which selector fields name a tool, and which tool.
    let mut resolved: Vec<(&str, Target)> = Vec::new();
    let mut ambiguous: Vec<(&str, Vec<String>)> = Vec::new();
    let mut first_error: Option<CallError> = None;
    let mut first_unresolved: Option<&str> = None;
    for field in SELECTORS {
        let Some(Value::String(selector)) = map.get(field) else {
            continue;
        };
        match resolve_selector(index, selector) {
            Ok(Some(target)) => resolved.push((field, target)),
            Ok(None) => {
                first_unresolved.get_or_insert(selector.as_str());
            }
            Err(error) => {
                if let Resolution::Ambiguous(candidates) = lookup::resolve(index, selector) {
                    ambiguous.push((field, candidates));
                }
                first_error.get_or_insert(error);
            }
        }
    }
    let target = match resolved.as_slice() {
        [] => {
            if let Some(error) = first_error {
                return Err(error);
            }
            let Some(selector) = first_unresolved else {
                return Err(bad("the call names no tool id").recover(Recovery::Usage {
                    operation: Operation::Call,
                }));
            };
            return Err(lookup_error(lookup::LookupError::Unknown {
                selector: selector.to_string(),
                suggestions: lookup::suggestions(index, selector),
            }));
        }
        [(first_field, first), rest @ ..] => {
            if let Some((field, other)) = rest.iter().find(|(_, t)| t != first) {
                return Err(two_tools(index, (first_field, first), (field, other)));
            }
            first.clone()
        }
    };
    // Selector fields that named this tool are consumed; an ambiguous one is consumed too when
    // the resolved tool is among its candidates (it meant the same tool).
    let target_id = target_id(index, &target);
    let mut consumed: Vec<&str> = resolved.iter().map(|(field, _)| *field).collect();
    consumed.extend(
        ambiguous
            .iter()
            .filter(|(_, candidates)| candidates.contains(&target_id))
            .map(|(field, _)| *field),
    );
    Ok((target, consumed))
}

/// The id of a resolved target (empty for a position the index no longer holds).
fn target_id(index: &SearchIndex, target: &Target) -> String {
    match target {
        Target::Catalog(p) => index.tool(*p).map(|d| d.id.clone()).unwrap_or_default(),
        Target::Direct(id) => id.clone(),
    }
}

/// The error of a request whose selector fields name two different tools.
fn two_tools(index: &SearchIndex, first: (&str, &Target), other: (&str, &Target)) -> CallError {
    let (first_field, first) = first;
    let (other_field, other) = other;
    CallError::new(
        ErrorKind::Ambiguous,
        None,
        format!(
            "the request names two different tools ({:?} by {:?} and {:?} by {:?}); give one tool id in \"id\" and the arguments in \"args\"",
            target_id(index, first),
            first_field,
            target_id(index, other),
            other_field
        ),
    )
    .recover(Recovery::PickId {
        candidates: vec![target_id(index, first), target_id(index, other)],
    })
}

/// One argument field's value as an object of arguments: an object, `null` (none), or an object
/// sent as a JSON string (weak models do).
fn argument_object(field: &str, value: &Value) -> Result<Map<String, Value>, CallError> {
    match value {
        Value::Object(object) => Ok(object.clone()),
        Value::Null => Ok(Map::new()),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(object)) => Ok(object),
            _ => Err(bad(format!(
                "\"{field}\" must be an object of arguments, got a string that is not a JSON object"
            ))),
        },
        other => Err(bad(format!(
            "\"{field}\" must be an object of arguments, got {}",
            crate::catalog::json_kind(other)
        ))),
    }
}

/// The explicit argument object, if any: the first argument field; a later one may only be
/// empty.
fn explicit_arguments(map: &Map<String, Value>) -> Result<Option<Map<String, Value>>, CallError> {
    let mut explicit: Option<(Map<String, Value>, &str)> = None;
    for field in ARG_FIELDS {
        let Some(value) = map.get(field) else {
            continue;
        };
        let object = argument_object(field, value)?;
        match &explicit {
            Some((_, first_field)) => {
                if !object.is_empty() {
                    return Err(bad(format!(
                        "arguments given twice (in \"{first_field}\" and \"{field}\"); send them once in \"args\""
                    )));
                }
            }
            None => explicit = Some((object, field)),
        }
    }
    Ok(explicit.map(|(object, _)| object))
}

/// Everything but the consumed selectors and the argument fields is a flattened argument;
/// `args.x` means `x`.
fn flattened_arguments(map: &Map<String, Value>, consumed: &[&str]) -> Map<String, Value> {
    let mut flattened = Map::new();
    for (key, value) in map {
        if consumed.contains(&key.as_str()) || ARG_FIELDS.contains(&key.as_str()) {
            continue;
        }
        let key = ARG_FIELDS
            .iter()
            .find_map(|prefix| key.strip_prefix(prefix).and_then(|k| k.strip_prefix('.')))
            .unwrap_or(key);
        if key.is_empty() {
            continue;
        }
        flattened.insert(key.to_string(), value.clone());
    }
    flattened
}

/// Flattened arguments added to a non-empty explicit object; one given in both with different
/// values is an error.
fn merge(
    mut explicit: Map<String, Value>,
    flattened: Map<String, Value>,
) -> Result<Map<String, Value>, CallError> {
    for (key, value) in flattened {
        match explicit.get(&key) {
            Some(existing) if *existing != value => {
                return Err(bad(format!(
                    "argument {:?} is given twice with different values (inside and outside \"args\"); put all arguments in \"args\"",
                    crate::config::input::echo(&key)
                )));
            }
            _ => {
                explicit.insert(key, value);
            }
        }
    }
    Ok(explicit)
}
