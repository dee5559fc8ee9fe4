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
        [(_, first), rest @ ..] => {
            if let Some((field, other)) = rest.iter().find(|(_, t)| t != first) {
                let describe = |t: &Target| match t {
                    Target::Catalog(p) => index.tool(*p).map(|d| d.id.clone()).unwrap_or_default(),
                    Target::Direct(id) => id.clone(),
                };
                return Err(CallError::new(
                    ErrorKind::Ambiguous,
                    None,
                    format!(
                        "the request names two different tools ({:?} by {:?} and {:?} by {:?}); give one tool id in \"id\" and the arguments in \"args\"",
                        describe(first),
                        resolved[0].0,
                        describe(other),
                        field
                    ),
                )
                .recover(Recovery::PickId {
                    candidates: vec![describe(first), describe(other)],
                }));
            }
            first.clone()
        }
    };
    // Selector fields that named this tool are consumed; an ambiguous one is consumed too when
    // the resolved tool is among its candidates (it meant the same tool).
    let target_id = match &target {
        Target::Catalog(p) => index.tool(*p).map(|d| d.id.clone()).unwrap_or_default(),
        Target::Direct(id) => id.clone(),
    };
    let mut consumed: Vec<&str> = resolved.iter().map(|(field, _)| *field).collect();
    consumed.extend(
        ambiguous
            .iter()
            .filter(|(_, candidates)| candidates.contains(&target_id))
            .map(|(field, _)| *field),
    );

    // The explicit argument object, if any.
    let mut explicit: Option<Map<String, Value>> = None;
    let mut explicit_field = None;
    for field in ARG_FIELDS {
        let Some(value) = map.get(field) else {
            continue;
        };
        let object = match value {
            Value::Object(object) => object.clone(),
            Value::Null => Map::new(),
            // Weak models sometimes send the arguments as a JSON string.
            Value::String(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(object)) => object,
                _ => {
                    return Err(bad(format!(
                        "\"{field}\" must be an object of arguments, got a string that is not a JSON object"
                    )));
                }
            },
            other => {
                return Err(bad(format!(
                    "\"{field}\" must be an object of arguments, got {}",
                    crate::catalog::json_kind(other)
                )));
            }
        };
        if explicit.is_some() {
            if !object.is_empty() {
                return Err(bad(format!(
                    "arguments given twice (in \"{}\" and \"{field}\"); send them once in \"args\"",
                    explicit_field.unwrap_or("args")
                )));
            }
            continue;
        }
        explicit = Some(object);
        explicit_field = Some(field);
    }

    // Everything else is a flattened argument; `args.x` means `x`.
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

    let args = match explicit {
        Some(explicit) if explicit.is_empty() => flattened,
        Some(mut explicit) => {
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
            explicit
        }
        None => flattened,
    };
    Ok(Parsed {
        target,
        args: Value::Object(args),
    })
}
