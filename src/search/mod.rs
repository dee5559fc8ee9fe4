//! Tool search: the BM25 ranker on tantivy (SPEC R-3), compact hits, batch search
//! and describe / lenient name lookup.
//!
//! Owns:
//! - [`SearchIndex`]: one in-RAM tantivy index per (snapshot, policy) holding only the allowed
//!   tools, so corpus statistics (N, document frequencies, average length) come from allowed
//!   tools only and a denied tool can neither appear nor move a ranking. Built
//!   once and shared through [`IndexCache`]; never rebuilt per call or per code cell.
//! - Ranking: exact matches first (a trimmed query equal to an id, case-sensitive;
//!   otherwise equal to a name, id or external id case-insensitively), then hits matching at
//!   least one literal query term, then BM25 score, then id.
//! - [`Hit`]: compact, prompt-safe results with signatures; untrusted tools get
//!   `input: "unknown"` and no `output`.
//! - [`batch`]: the `tool_search` request parser and the 4,000-character budget.
//! - [`lookup`]: describe, ambiguity errors and did-you-mean suggestions.
//!
//! Never does: policy decisions (it receives an [`crate::policy::Authorized`] view) or calls.
//! Bounds: limits per [`crate::config::SearchLimits`] (default 8, max 20, ceiling 50).

pub mod analyzer;
pub mod batch;
mod hit;
mod index;
pub mod lexicon;
pub mod lookup;
mod segment;

pub use hit::{Hit, compact_text};
pub use index::{
    BuildError, IndexCache, IndexStats, MAX_FUZZY_CANDIDATES, MAX_FUZZY_QUERY_WORDS,
    MAX_FUZZY_WORDS, RankedHit, SearchIndex, SearchSettings,
};

use serde_json::Value;

use crate::config::SearchLimits;

/// A limit that is not a positive integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("limit must be a positive integer (got {got}); omit it or pass null for the default")]
pub struct LimitError {
    /// The offending value as JSON.
    pub got: String,
}

/// Resolves a request's `limit`: absent or `null` → default; a positive integer →
/// clamped to the max; anything else is an error.
pub fn resolve_limit(limit: Option<&Value>, limits: SearchLimits) -> Result<usize, LimitError> {
    match limit {
        None | Some(Value::Null) => Ok(limits.default_limit()),
        Some(Value::Number(n)) => {
            let as_int = n.as_u64().or_else(|| {
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 1.0)
                    .map(|f| f as u64)
            });
            match as_int {
                Some(v) if v >= 1 => {
                    Ok((v.min(usize::MAX as u64) as usize).min(limits.max_limit()))
                }
                _ => Err(LimitError { got: n.to_string() }),
            }
        }
        Some(other) => Err(LimitError {
            got: other.to_string(),
        }),
    }
}
