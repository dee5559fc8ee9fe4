//! `tool_search` requests: the single and batch forms and their rules (SPEC R-5).
//!
//! - `{query, limit?}` → an array of hits; `{queries: [{query, limit?}, …]}` →
//!   `{results: [{query, candidates, matched, truncated?, not_found?}], truncated?}` in request
//!   order. Beside the hits, every answer says how many allowed tools matched and
//!   whether the list was cut (`answer.rs`): in a batch group as `matched` and `truncated`; for
//!   the single form in [`SingleSearch`] (its [`SearchResponse::note`] is the line a model reads beside the
//!   array, its [`SearchResponse::signal`] the same for machines).
//! - `select:NAME,…` as a query loads those tools (`answer.rs`); more names than the max limit
//!   is an error naming the bound.
//! - A non-blank scalar `query` next to a non-empty batch runs first with the top-level limit;
//!   with a non-empty batch and a blank or absent scalar, a non-null top-level `limit` is an
//!   error; `queries: []` with a non-blank scalar is the scalar form; a blank scalar without a
//!   batch returns `[]`; neither a scalar nor a non-empty batch is an error.
//! - At most 16 queries, each ≤ 512 characters, the serialized query list ≤ 512 UTF-8 bytes,
//!   per-query limits (omitted = default, each clamped to the max) summing to ≤ 50; an invalid
//!   batch fails as one request.
//! - Batch responses fit 4,000 characters of compact JSON: descriptions are compacted to 180
//!   characters; while over budget the lowest-ranked candidate of the largest group is dropped
//!   and the group and the response are marked `truncated`. A group is `truncated` too
//!   when its limit cut it: the word means fewer candidates than matching tools, whatever cut.
//!
//! "Characters" are Unicode scalar values. The parser never panics on any JSON.

use serde::Serialize;
use serde_json::{Map, Value};

use super::answer::{self, Answer, MissingName};
use super::hit::compact_text;
use super::{Hit, RankedHit, RankerKind, SearchIndex, SearchSettings, resolve_limit, short};
use crate::config::SearchLimits;

/// Most queries in one batch.
pub const MAX_QUERIES: usize = 16;
/// Longest single query, in characters.
pub const MAX_QUERY_CHARS: usize = 512;
/// Largest serialized query list, in UTF-8 bytes.
pub const MAX_QUERY_LIST_BYTES: usize = 512;
/// Largest sum of per-query limits in one batch.
pub const MAX_LIMIT_SUM: usize = 50;
/// Budget of a batch response, in characters of compact JSON.
pub const BATCH_BUDGET_CHARS: usize = 4_000;
/// Descriptions in batch candidates are compacted to this many characters.
pub const BATCH_DESCRIPTION_CHARS: usize = 180;

/// A `tool_search` request that cannot run; the message says how to fix it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid search request: {0}")]
pub struct BatchError(pub String);

/// One parsed query with its resolved limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuerySpec {
    /// The query text.
    pub query: String,
    /// Resolved, clamped limit.
    pub limit: usize,
}

/// A parsed `tool_search` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchRequest {
    /// The single form: answered with an array of hits.
    Single(QuerySpec),
    /// A blank scalar without a batch: answered with `[]`.
    Empty,
    /// The batch form, in request order (a combined scalar query first).
    Batch(Vec<QuerySpec>),
}

/// One group of a batch response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchGroup {
    /// The query as given.
    pub query: String,
    /// Ranked candidates.
    pub candidates: Vec<Hit>,
    /// Allowed tools that matched the query (`answer.rs`).
    pub matched: usize,
    /// Set when fewer candidates are shown than matched: cut by the limit or by the budget.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    /// `select:` names that named no allowed tool.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_found: Vec<MissingName>,
    /// What the group covers, for the note (not serialized).
    #[serde(skip)]
    answer: Answer,
}

/// A batch response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BatchResponse {
    /// One group per query, in request order.
    pub results: Vec<BatchGroup>,
    /// Set when any group was truncated.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// The single form's answer: R-5.1's candidate array and what it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct SingleSearch {
    /// The hits, best first.
    pub hits: Vec<Hit>,
    /// What the query covered (`None` for a blank query).
    answer: Option<Answer>,
}

impl SingleSearch {
    /// Allowed tools that matched.
    pub fn matched(&self) -> usize {
        self.answer.as_ref().map_or(0, |a| a.matched)
    }

    /// Whether fewer hits are shown than matched.
    pub fn truncated(&self) -> bool {
        self.answer
            .as_ref()
            .is_some_and(|a| a.truncated(self.hits.len()))
    }

    /// `select:` names that named no allowed tool.
    pub fn not_found(&self) -> &[MissingName] {
        self.answer.as_ref().map_or(&[], |a| a.missing.as_slice())
    }

    /// Why each hit ranked where it did (score, tier, exact), hit by hit.
    pub fn ranked(&self) -> &[RankedHit] {
        self.answer.as_ref().map_or(&[], |a| a.ranked.as_slice())
    }
}

impl SearchResponse {
    /// Which ranker answered (hybrid when any query of a batch was answered by it); `None` for
    /// a blank query.
    pub fn ranker(&self) -> Option<RankerKind> {
        match self {
            SearchResponse::Single(single) => single.answer.as_ref().map(|a| a.ranker),
            SearchResponse::Batch(batch) => batch.results.iter().map(|g| g.answer.ranker).max(),
        }
    }
}

/// A search answer as a model and a machine read it: the JSON, and beside it what it
/// covers (see [`SearchResponse::render`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    /// R-5.1's JSON: the single form's hit array or the batch object.
    pub body: Value,
    /// The single form's `{matched, truncated, not_found?}` (a batch's groups carry theirs).
    pub signal: Option<Value>,
    /// The line for the model beside the body, when there is one.
    pub note: Option<String>,
}

impl Searched {
    /// The body as compact JSON with the note on a line of its own (a tool result's text).
    pub fn text(&self) -> String {
        match &self.note {
            Some(note) => format!("{}\n{note}", self.body),
            None => self.body.to_string(),
        }
    }
}

/// What a request yields.
#[derive(Debug, Clone, PartialEq)]
pub enum SearchResponse {
    /// The single form.
    Single(SingleSearch),
    /// The batch form.
    Batch(BatchResponse),
}

impl SearchResponse {
    /// The JSON returned to the model: the single form's candidate array, or the batch
    /// object (which carries each group's `matched` and `truncated` itself).
    pub fn to_json(&self) -> Value {
        match self {
            SearchResponse::Single(single) => {
                serde_json::to_value(&single.hits).unwrap_or(Value::Null)
            }
            SearchResponse::Batch(batch) => serde_json::to_value(batch).unwrap_or(Value::Null),
        }
    }

    /// What the answer covers, as JSON for machines: `{matched, truncated, not_found?}` for the
    /// single form; `None` for a batch (its groups carry it).
    pub fn signal(&self) -> Option<Value> {
        let SearchResponse::Single(single) = self else {
            return None;
        };
        let mut signal = Map::new();
        signal.insert("matched".into(), single.matched().into());
        signal.insert("truncated".into(), single.truncated().into());
        if !single.not_found().is_empty() {
            signal.insert(
                "not_found".into(),
                serde_json::to_value(single.not_found()).unwrap_or_default(),
            );
        }
        Some(Value::Object(signal))
    }

    /// The answer as a model and a machine read it (`max_limit`: the max search limit, named in
    /// the note's advice).
    pub fn render(&self, max_limit: usize) -> Searched {
        Searched {
            body: self.to_json(),
            signal: self.signal(),
            note: self.note(max_limit),
        }
    }

    /// The single form as one object, `{hits, matched, truncated, not_found?, note?}` (the CLI's
    /// `search --json` and what a code cell's bridge receives); a batch as [`SearchResponse::to_json`]
    /// plus its `note`, when there is one.
    pub fn to_object(&self, max_limit: usize) -> Value {
        let mut object = match (self.signal(), self.to_json()) {
            (Some(Value::Object(mut signal)), hits) => {
                signal.insert("hits".into(), hits);
                signal
            }
            (_, Value::Object(batch)) => batch,
            (_, other) => return other,
        };
        if let Some(note) = self.note(max_limit) {
            object.insert("note".into(), note.into());
        }
        Value::Object(object)
    }

    /// The line a model reads beside the hits: for the single form always (how many matched,
    /// whether all are shown, names not found); for a batch only when a group was cut or named
    /// a missing tool. `None` for a blank query.
    pub fn note(&self, max_limit: usize) -> Option<String> {
        match self {
            SearchResponse::Single(single) => single
                .answer
                .as_ref()
                .map(|answer| answer.note(single.hits.len(), false, max_limit)),
            SearchResponse::Batch(batch) => {
                let lines: Vec<String> = batch
                    .results
                    .iter()
                    .filter(|group| group.truncated || !group.not_found.is_empty())
                    .map(|group| {
                        let budget_cut = group.candidates.len() < group.answer.ranked.len();
                        format!(
                            "{:?}: {}",
                            crate::config::input::echo(&group.query).to_string(),
                            group
                                .answer
                                .note(group.candidates.len(), budget_cut, max_limit)
                        )
                    })
                    .collect();
                (!lines.is_empty()).then(|| lines.join("\n"))
            }
        }
    }
}

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

fn error(message: impl Into<String>) -> BatchError {
    BatchError(message.into())
}

/// Parses a `tool_search` argument object.
pub fn parse_search_request(
    args: &Value,
    limits: SearchLimits,
) -> Result<SearchRequest, BatchError> {
    let Value::Object(map) = args else {
        return Err(error(
            "expected an object: {\"query\": \"...\", \"limit\"?: n} or {\"queries\": [{\"query\": \"...\", \"limit\"?: n}, ...]}",
        ));
    };
    for key in map.keys() {
        if !matches!(key.as_str(), "query" | "limit" | "queries") {
            return Err(error(format!(
                "unknown field {:?}; accepted fields are query, limit and queries",
                crate::config::input::echo(key)
            )));
        }
    }
    let scalar = match map.get("query") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(other) => {
            return Err(error(format!(
                "\"query\" must be a string, got {}",
                short(other)
            )));
        }
    };
    let top_limit = map.get("limit");
    let batch = parse_batch_entries(map, limits)?;
    let scalar_present = scalar.is_some_and(|q| !is_blank(q));

    match (scalar_present, batch.is_empty()) {
        (true, true) => Ok(SearchRequest::Single(scalar_spec(
            scalar, top_limit, limits,
        )?)),
        (false, true) => {
            if scalar.is_some() {
                // A blank scalar without a batch: nothing to search for.
                check_top_limit(top_limit, limits)?;
                Ok(SearchRequest::Empty)
            } else {
                Err(error(
                    "give a non-blank \"query\", or a non-empty \"queries\" list of {\"query\": \"...\"} objects",
                ))
            }
        }
        (true, false) => {
            let mut all = vec![scalar_spec(scalar, top_limit, limits)?];
            all.extend(batch);
            check_batch(&all)?;
            Ok(SearchRequest::Batch(all))
        }
        (false, false) => {
            if top_limit.is_some_and(|l| !l.is_null()) {
                return Err(error(
                    "a top-level \"limit\" applies only to the top-level \"query\"; put limits inside each {\"query\", \"limit\"} entry of \"queries\"",
                ));
            }
            check_batch(&batch)?;
            Ok(SearchRequest::Batch(batch))
        }
    }
}

fn check_top_limit(limit: Option<&Value>, limits: SearchLimits) -> Result<usize, BatchError> {
    resolve_limit(limit, limits).map_err(|e| error(e.to_string()))
}

fn scalar_spec(
    scalar: Option<&str>,
    limit: Option<&Value>,
    limits: SearchLimits,
) -> Result<QuerySpec, BatchError> {
    let query = scalar.unwrap_or_default().to_string();
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(error(format!(
            "\"query\" is longer than {MAX_QUERY_CHARS} characters; search for the capability in a few words"
        )));
    }
    if let Some(problem) = answer::select_error(&query, limits.max_limit()) {
        return Err(error(problem));
    }
    Ok(QuerySpec {
        query,
        limit: check_top_limit(limit, limits)?,
    })
}

fn parse_batch_entries(
    map: &Map<String, Value>,
    limits: SearchLimits,
) -> Result<Vec<QuerySpec>, BatchError> {
    let entries = match map.get("queries") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(other) => {
            return Err(error(format!(
                "\"queries\" must be an array of {{\"query\": \"...\", \"limit\"?: n}} objects, got {}",
                short(other)
            )));
        }
    };
    if entries.len() > MAX_QUERIES {
        return Err(error(format!(
            "at most {MAX_QUERIES} queries per request (got {})",
            entries.len()
        )));
    }
    let mut out = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let (query, limit) = match entry {
            // A bare string is accepted as {"query": string}.
            Value::String(text) => (text.as_str(), None),
            Value::Object(fields) => {
                for key in fields.keys() {
                    if key != "query" && key != "limit" {
                        return Err(error(format!(
                            "queries[{i}]: unknown field {:?}; each entry is {{\"query\": \"...\", \"limit\"?: n}}",
                            crate::config::input::echo(key)
                        )));
                    }
                }
                match fields.get("query") {
                    Some(Value::String(text)) => (text.as_str(), fields.get("limit")),
                    Some(other) => {
                        return Err(error(format!(
                            "queries[{i}].query must be a string, got {}",
                            short(other)
                        )));
                    }
                    None => return Err(error(format!("queries[{i}] has no \"query\""))),
                }
            }
            other => {
                return Err(error(format!(
                    "queries[{i}] must be {{\"query\": \"...\", \"limit\"?: n}}, got {}",
                    short(other)
                )));
            }
        };
        if is_blank(query) {
            return Err(error(format!(
                "queries[{i}].query is blank; remove it or say what capability to find"
            )));
        }
        if query.chars().count() > MAX_QUERY_CHARS {
            return Err(error(format!(
                "queries[{i}].query is longer than {MAX_QUERY_CHARS} characters"
            )));
        }
        if let Some(problem) = answer::select_error(query, limits.max_limit()) {
            return Err(error(format!("queries[{i}]: {problem}")));
        }
        let limit =
            resolve_limit(limit, limits).map_err(|e| error(format!("queries[{i}]: {e}")))?;
        out.push(QuerySpec {
            query: query.to_string(),
            limit,
        });
    }
    Ok(out)
}

fn check_batch(all: &[QuerySpec]) -> Result<(), BatchError> {
    if all.len() > MAX_QUERIES {
        return Err(error(format!(
            "at most {MAX_QUERIES} queries per request, counting the top-level query (got {})",
            all.len()
        )));
    }
    let list: Vec<&str> = all.iter().map(|q| q.query.as_str()).collect();
    let bytes = serde_json::to_string(&list)
        .map(|s| s.len())
        .unwrap_or(usize::MAX);
    if bytes > MAX_QUERY_LIST_BYTES {
        return Err(error(format!(
            "the queries together take {bytes} bytes as JSON; keep them under {MAX_QUERY_LIST_BYTES} (short English capability phrases work best)"
        )));
    }
    let sum: usize = all.iter().map(|q| q.limit).sum();
    if sum > MAX_LIMIT_SUM {
        return Err(error(format!(
            "the limits add up to {sum}; they may add up to at most {MAX_LIMIT_SUM} (omitted limits count as the default)"
        )));
    }
    Ok(())
}

/// Runs a parsed request against an index.
pub fn execute(
    index: &SearchIndex,
    request: &SearchRequest,
    limits: SearchLimits,
) -> SearchResponse {
    let settings = SearchSettings::default();
    let answer_of = |spec: &QuerySpec| {
        answer::answer(
            index,
            &spec.query,
            spec.limit,
            limits.max_limit(),
            &settings,
        )
    };
    let hits_of = |answer: &Answer| -> Vec<Hit> {
        answer
            .ranked
            .iter()
            .filter_map(|ranked| index.hit(ranked.position))
            .collect()
    };
    match request {
        SearchRequest::Empty => SearchResponse::Single(SingleSearch {
            hits: Vec::new(),
            answer: None,
        }),
        SearchRequest::Single(spec) => {
            let answer = answer_of(spec);
            SearchResponse::Single(SingleSearch {
                hits: hits_of(&answer),
                answer: Some(answer),
            })
        }
        SearchRequest::Batch(specs) => {
            let results: Vec<BatchGroup> = specs
                .iter()
                .map(|spec| {
                    let answer = answer_of(spec);
                    let candidates: Vec<Hit> = hits_of(&answer)
                        .into_iter()
                        .map(|mut hit| {
                            hit.description =
                                compact_text(&hit.description, BATCH_DESCRIPTION_CHARS);
                            hit
                        })
                        .collect();
                    BatchGroup {
                        query: spec.query.clone(),
                        matched: answer.matched,
                        truncated: answer.truncated(candidates.len()),
                        not_found: answer.missing.clone(),
                        candidates,
                        answer,
                    }
                })
                .collect();
            let mut response = BatchResponse {
                truncated: results.iter().any(|group| group.truncated),
                results,
            };
            fit_budget(&mut response, BATCH_BUDGET_CHARS);
            SearchResponse::Batch(response)
        }
    }
}

/// Parses and runs a `tool_search` argument object.
pub fn run(
    index: &SearchIndex,
    args: &Value,
    limits: SearchLimits,
) -> Result<SearchResponse, BatchError> {
    Ok(execute(index, &parse_search_request(args, limits)?, limits))
}

fn json_chars<T: Serialize>(value: &T) -> usize {
    serde_json::to_string(value)
        .map(|s| s.chars().count())
        .unwrap_or(usize::MAX)
}

/// Drops the lowest-ranked candidate of the largest group until the response fits.
pub fn fit_budget(response: &mut BatchResponse, budget: usize) {
    // `,"truncated":true` as it appears in a group and in the response.
    const FLAG: usize = 17;
    let mut total = json_chars(response);
    while total > budget {
        let Some((largest, _)) = response
            .results
            .iter()
            .enumerate()
            .filter(|(_, g)| !g.candidates.is_empty())
            // The largest group; the first one on ties, so the result is deterministic.
            .max_by(|a, b| {
                a.1.candidates
                    .len()
                    .cmp(&b.1.candidates.len())
                    .then(b.0.cmp(&a.0))
            })
        else {
            break;
        };
        let group = &mut response.results[largest];
        let Some(dropped) = group.candidates.pop() else {
            break;
        };
        total -= json_chars(&dropped) + usize::from(!group.candidates.is_empty());
        if !group.truncated {
            group.truncated = true;
            total += FLAG;
        }
        if !response.truncated {
            response.truncated = true;
            total += FLAG;
        }
        if total <= budget {
            // Recount once for certainty; the incremental count is exact for our shapes.
            total = json_chars(response);
        }
    }
}

#[cfg(test)]
#[path = "batch_tests.rs"]
mod tests;
