//! Describe and lenient name resolution (SPEC R-6).
//!
//! Resolution order: exact id; exact name; exact external id; then the lenient forms — a
//! dotted `owner.name`, a `__`-encoded `owner__name`, an `owner:name` id suffix, and finally a
//! case-insensitive match of any of those. Each step answers only when it identifies exactly
//! one tool; more than one distinct tool is an ambiguity error listing the (allowed) candidates
//! and asking for the id. Nothing resolves to a denied tool, because the index
//! holds allowed tools only: describing a denied tool answers exactly like an unknown one
//! suggestions included.
//!
//! Nor does a selector that names a denied tool fall back to another one: a step whose exact
//! test also matches a denied tool (its id, name, external id or raw upstream name; its owner
//! and name in a lenient form) ends the resolution — only that step's allowed matches may
//! answer, never a later, more lenient step. So with `mcp:evil:a.b` denied, the selector
//! `mcp:evil:a.b` (or `evil.a.b`, `evil:a.b`) is unknown, not the allowed `mcp:evil:A.B`.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::{Hit, SearchIndex};
use crate::catalog::Descriptor;

/// Most did-you-mean suggestions offered for an unknown tool.
pub const MAX_SUGGESTIONS: usize = 3;
/// Most candidates listed in an ambiguity error.
pub const MAX_AMBIGUOUS_LISTED: usize = 10;

/// How a selector resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Exactly one allowed tool (its position in the view).
    Found(u32),
    /// Several allowed tools match; their ids, sorted.
    Ambiguous(Vec<String>),
    /// No allowed tool matches.
    NotFound,
}

/// A selector that did not resolve to exactly one tool. Its text is neutral (it names no
/// control): the gateway attaches the structured recovery and the surface words it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// Unknown (or denied — indistinguishable by design) tool.
    #[error("{}", unknown_message(.selector, .suggestions))]
    Unknown {
        /// The selector as given.
        selector: String,
        /// Up to three allowed ids that look close.
        suggestions: Vec<String>,
    },
    /// Several tools share the name.
    #[error("{}", ambiguous_message(.selector, .candidates))]
    Ambiguous {
        /// The selector as given.
        selector: String,
        /// The allowed ids it could mean.
        candidates: Vec<String>,
    },
}

fn unknown_message(selector: &str, suggestions: &[String]) -> String {
    let mut text = format!("Unknown tool {:?}.", crate::config::input::echo(selector));
    if !suggestions.is_empty() {
        text.push_str(" Did you mean ");
        text.push_str(
            &suggestions
                .iter()
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
        text.push('?');
    }
    text
}

fn ambiguous_message(selector: &str, candidates: &[String]) -> String {
    let listed: Vec<String> = candidates
        .iter()
        .take(MAX_AMBIGUOUS_LISTED)
        .map(|c| format!("{c:?}"))
        .collect();
    let more = candidates.len().saturating_sub(MAX_AMBIGUOUS_LISTED);
    let mut text = format!(
        "{:?} is ambiguous: it matches {} tools: {}",
        crate::config::input::echo(selector),
        candidates.len(),
        listed.join(", ")
    );
    if more > 0 {
        text.push_str(&format!(" and {more} more"));
    }
    text.push('.');
    text
}

/// What `tool_describe` returns: the compact hit plus the exact schemas. Serialized as
/// one flat object: the hit's fields, then `input_schema` and `output_schema`.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    /// The compact hit.
    pub hit: Hit,
    /// The exact input schema.
    pub input_schema: Value,
    /// The output schema, for trusted tools that declare one (`null` otherwise).
    pub output_schema: Option<Value>,
    /// An MCP tool's behaviour hints, when its server gave any (omitted otherwise).
    pub annotations: Option<Value>,
}

// Serialized through `into_json` (one field list) rather than `#[serde(flatten)]`, which buffers
// every field, schemas included, into an intermediate tree first.
impl Serialize for Described {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.clone().into_json().serialize(serializer)
    }
}

impl Described {
    /// The JSON object (same shape as its `Serialize`), built by moving the fields instead of
    /// copying the schemas once more.
    pub fn into_json(self) -> Value {
        let hit = self.hit;
        let mut map = serde_json::Map::with_capacity(9);
        map.insert("id".into(), Value::String(hit.id));
        map.insert("name".into(), Value::String(hit.name));
        map.insert(
            "source".into(),
            Value::String(hit.source.as_str().to_owned()),
        );
        map.insert("owner".into(), Value::String(hit.owner));
        map.insert("description".into(), Value::String(hit.description));
        map.insert("input".into(), Value::String(hit.input));
        if let Some(output) = hit.output {
            map.insert("output".into(), Value::String(output));
        }
        map.insert("input_schema".into(), self.input_schema);
        map.insert(
            "output_schema".into(),
            self.output_schema.unwrap_or(Value::Null),
        );
        if let Some(annotations) = self.annotations {
            map.insert("annotations".into(), annotations);
        }
        Value::Object(map)
    }
}

impl fmt::Display for Described {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} — {}", self.hit.id, self.hit.description)
    }
}

fn one_or_many(index: &SearchIndex, mut positions: Vec<u32>) -> Option<Resolution> {
    positions.sort_unstable();
    positions.dedup();
    match positions.len() {
        0 => None,
        1 => Some(Resolution::Found(positions[0])),
        _ => Some(Resolution::Ambiguous(
            positions
                .into_iter()
                .filter_map(|p| index.tool(p).map(|t| t.id.clone()))
                .collect(),
        )),
    }
}

fn positions_where(index: &SearchIndex, keep: impl Fn(&Descriptor) -> bool) -> Vec<u32> {
    index
        .view()
        .tools()
        .enumerate()
        .filter(|(_, t)| keep(t))
        .map(|(i, _)| i as u32)
        .collect()
}

/// Resolves a tool selector leniently but never ambiguously.
pub fn resolve(index: &SearchIndex, selector: &str) -> Resolution {
    let selector = selector.trim();
    if selector.is_empty() {
        return Resolution::NotFound;
    }
    if let Some(position) = index.position_of(selector) {
        return Resolution::Found(position);
    }
    let view = index.view();
    // The selector is exactly a denied tool's id, name or external id: only an allowed tool
    // matching it exactly as well may answer (same step), nothing more lenient.
    let names_denied = view.names_denied(selector);
    if names_denied && view.snapshot().position(selector).is_some() {
        // A denied tool's exact id: ids are unique, no other tool is meant.
        return Resolution::NotFound;
    }
    // Candidates equal ignoring case: the index keeps them per lowercased name/id/external id.
    let folded = index.folded_matches(selector);
    let exact_name: Vec<u32> = folded
        .iter()
        .copied()
        .filter(|&p| index.tool(p).is_some_and(|t| t.name == selector))
        .collect();
    if let Some(found) = one_or_many(index, exact_name) {
        return found;
    }
    let exact_external: Vec<u32> = folded
        .iter()
        .copied()
        .filter(|&p| {
            index
                .tool(p)
                .is_some_and(|t| t.external_id.as_deref() == Some(selector))
        })
        .collect();
    if let Some(found) = one_or_many(index, exact_external) {
        return found;
    }
    if names_denied {
        return Resolution::NotFound;
    }
    // Lenient forms, case-sensitive first, then ignoring case.
    for fold in [false, true] {
        let eq = |a: &str, b: &str| {
            if fold {
                a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
            } else {
                a == b
            }
        };
        let mut matches = Vec::new();
        let mut names_denied_pair = false;
        for (separator, skip) in [(".", 1), ("__", 2), (":", 1)] {
            let mut start = 0;
            while let Some(found) = selector[start..].find(separator) {
                let split = start + found;
                let (owner, name) = (&selector[..split], &selector[split + skip..]);
                if !owner.is_empty() && !name.is_empty() {
                    matches.extend(positions_where(index, |t| {
                        eq(&t.owner, owner) && eq(&t.name, name)
                    }));
                    names_denied_pair |= !fold && view.names_denied_pair(owner, name);
                }
                start = split + skip;
            }
        }
        if fold {
            matches.extend(folded.iter().copied());
        }
        if let Some(found) = one_or_many(index, matches) {
            return found;
        }
        if names_denied_pair {
            // `owner.name` of a denied tool: never its case-insensitive neighbour.
            return Resolution::NotFound;
        }
    }
    Resolution::NotFound
}

/// Up to three allowed ids close to `selector`: near spellings first, then search hits.
pub fn suggestions(index: &SearchIndex, selector: &str) -> Vec<String> {
    let wanted = selector.trim().to_lowercase();
    let mut scored: Vec<(usize, u32)> = Vec::new();
    if !wanted.is_empty() {
        let budget = (wanted.chars().count() / 3).clamp(2, 6);
        let wanted_len = wanted.chars().count();
        for (position, tool) in index.view().tools().enumerate() {
            let mut best = usize::MAX;
            for key in [
                Some(tool.name.as_str()),
                Some(tool.id.as_str()),
                tool.external_id.as_deref(),
            ]
            .into_iter()
            .flatten()
            {
                let len = key.chars().count();
                if len.abs_diff(wanted_len) > budget {
                    continue;
                }
                let distance = strsim::levenshtein(&key.to_lowercase(), &wanted);
                best = best.min(distance);
            }
            if best <= budget {
                scored.push((best, position as u32));
            }
        }
    }
    scored.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, position) in scored {
        if let Some(tool) = index.tool(position)
            && !out.contains(&tool.id)
        {
            out.push(tool.id.clone());
        }
        if out.len() == MAX_SUGGESTIONS {
            return out;
        }
    }
    for ranked in index.rank(selector, MAX_SUGGESTIONS * 2) {
        if let Some(tool) = index.tool(ranked.position)
            && !out.contains(&tool.id)
        {
            out.push(tool.id.clone());
        }
        if out.len() == MAX_SUGGESTIONS {
            break;
        }
    }
    out
}

/// Resolves `selector` to one allowed tool, or the error the model should see.
pub fn find(index: &SearchIndex, selector: &str) -> Result<u32, LookupError> {
    match resolve(index, selector) {
        Resolution::Found(position) => Ok(position),
        Resolution::Ambiguous(candidates) => Err(LookupError::Ambiguous {
            selector: selector.to_string(),
            candidates,
        }),
        Resolution::NotFound => Err(LookupError::Unknown {
            selector: selector.to_string(),
            suggestions: suggestions(index, selector),
        }),
    }
}

/// `tool_describe`: the compact hit, the exact input schema, and the output schema for
/// trusted tools.
pub fn describe(index: &SearchIndex, selector: &str) -> Result<Described, LookupError> {
    let position = find(index, selector)?;
    let (Some(tool), Some(hit)) = (index.tool(position), index.hit(position)) else {
        return Err(LookupError::Unknown {
            selector: selector.to_string(),
            suggestions: Vec::new(),
        });
    };
    Ok(Described {
        hit,
        input_schema: (*tool.input_schema).clone(),
        output_schema: if tool.is_trusted() {
            tool.output_schema.clone()
        } else {
            None
        },
        annotations: tool.annotations.clone(),
    })
}

#[cfg(test)]
#[path = "lookup_tests.rs"]
mod tests;
