//! Tool search: the BM25 ranker on tantivy (SPEC R-3), compact hits, batch search
//! and describe / lenient name lookup.
//!
//! Owns:
//! - [`SearchIndex`]: one in-RAM tantivy index per (snapshot, policy) holding only the allowed
//!   tools, so corpus statistics (N, document frequencies, average length) come from allowed
//!   tools only and a denied tool can neither appear nor move a ranking. Built
//!   once and shared through [`IndexCache`]; never rebuilt per call or per code cell.
//! - Ranking: every tool the query names exactly first — its id, name, external id,
//!   raw upstream name or provider-safe name, as given, ignoring case, with `_ - . / :` and
//!   spaces read as one separator, or with camelCase split (`exact.rs`) — a rule in front of
//!   the ranker, never a boost; then hits matching at least one literal query term, then BM25
//!   score, then id. A ranking also counts the allowed tools that matched ([`Ranking`]).
//! - [`Hit`]: compact, prompt-safe results with signatures; untrusted tools get
//!   `input: "unknown"` and no `output`.
//! - [`answer`]: one query's answer — hits, how many allowed tools matched, whether the list
//!   was cut, a note for the model — and the `select:NAME,…` form.
//! - [`batch`]: the `tool_search` request parser and the 4,000-character budget.
//! - [`lookup`]: describe, ambiguity errors and did-you-mean suggestions.
//! - `semantic` (feature `semantic`): the sentence-embedding model directory, the embedder and
//!   the vector cache; `hybrid`: the lexical ranking fused with sentence-vector cosine.
//!
//! Never does: policy decisions (it receives an [`crate::policy::Authorized`] view) or calls.
//! Bounds: limits per [`crate::config::SearchLimits`] (default 8, max 20, ceiling 50).

pub mod analyzer;
pub mod answer;
pub mod batch;
mod exact;
mod hit;
#[cfg(feature = "semantic")]
pub mod hybrid;
mod index;
pub mod lexicon;
pub mod lookup;
mod segment;
#[cfg(feature = "semantic")]
pub mod semantic;
mod stem;
mod typo;

pub use exact::words;
pub use hit::{Hit, compact_text};
pub use index::{
    BuildError, IndexCache, IndexStats, RankedHit, RankerKind, Ranking, SearchIndex, SearchSettings,
};

use serde_json::Value;

use crate::config::SearchLimits;

/// A limit that is not a positive integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("limit must be a positive integer (got {got}); omit it or pass null for the default")]
pub struct LimitError {
    /// The offending value as JSON, cut to 60 characters.
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
                _ => Err(LimitError {
                    got: short(limit.unwrap_or(&Value::Null)),
                }),
            }
        }
        Some(other) => Err(LimitError { got: short(other) }),
    }
}

/// `value` as JSON for an error message: at most 60 characters (59 and `…`), counted after
/// JSON's escaping, so an attacker-sized or control-character value stays short.
pub(crate) fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 60 {
        format!("{}…", text.chars().take(59).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::resolve_limit;
    use serde_json::{Value, json};

    #[test]
    fn limits_follow_r_3_8() {
        let limits = crate::config::SearchLimits::default();
        assert_eq!(resolve_limit(None, limits), Ok(8));
        assert_eq!(resolve_limit(Some(&Value::Null), limits), Ok(8));
        assert_eq!(resolve_limit(Some(&json!(3)), limits), Ok(3));
        assert_eq!(resolve_limit(Some(&json!(500)), limits), Ok(20));
        for bad in [json!(0), json!(-1), json!(2.5), json!("5"), json!(true)] {
            assert!(resolve_limit(Some(&bad), limits).is_err(), "{bad}");
        }
        let local = crate::config::SearchLimits::local();
        assert_eq!((local.default_limit(), local.max_limit()), (5, 10));
        let clamped = crate::config::SearchLimits::new(100, 900);
        assert_eq!((clamped.default_limit(), clamped.max_limit()), (50, 50));
        let clamped = crate::config::SearchLimits::new(0, 0);
        assert_eq!((clamped.default_limit(), clamped.max_limit()), (1, 1));
    }
}
