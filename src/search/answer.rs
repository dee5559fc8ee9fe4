//! One query's answer: the ranked hits, how many allowed tools matched, whether the list was
//! cut, and the `select:NAME[,NAME…]` form that loads named tools.
//!
//! - [`answer`] answers one query. `select:a, b` resolves each name as describe does
//!   ([`lookup::resolve`]: id, name, external id, lenient forms), then in the exact-name forms of
//!   `exact.rs`, and returns those tools in the order named, duplicates collapsed, at most the
//!   max limit; any other query is ranked ([`SearchIndex::ranking`]).
//! - "Matched" ([`Answer::matched`]) is the number of allowed tools that share at least one term
//!   with the analysed query (a literal word or its stem, a lexicon translation, an intent
//!   expansion or a typo candidate) plus the tools the query names exactly; for `select:`, the
//!   distinct tools the names resolved to. "Truncated" means one thing everywhere: fewer hits are
//!   shown than matched — cut by the limit or, in a batch, by the response budget.
//! - [`Answer::note`] words that for the model: a short line beside the hits.
//!
//! Only allowed tools are ever counted, resolved or suggested: the index holds nothing else, so
//! a denied name answers exactly like a name that does not exist.

use serde::Serialize;

use super::lookup::{self, Resolution};
use super::{RankedHit, RankerKind, SearchIndex, SearchSettings};
use crate::config::input::echo;

/// The prefix of the multi-name form (case-insensitive, after trimming).
pub const SELECT_PREFIX: &str = "select:";

/// Most names a note lists as not found; the rest are counted.
pub const MAX_MISSING_LISTED: usize = 8;

/// The names of a `select:` query — trimmed, blanks dropped, repeats collapsed, in the order
/// given — or `None` for any other query.
pub fn select_names(query: &str) -> Option<Vec<&str>> {
    let query = query.trim();
    let head = query.get(..SELECT_PREFIX.len())?;
    if !head.eq_ignore_ascii_case(SELECT_PREFIX) {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for name in query[SELECT_PREFIX.len()..].split(',').map(str::trim) {
        if !name.is_empty() && !names.contains(&name) {
            names.push(name);
        }
    }
    Some(names)
}

/// Why a `select:` query cannot run — no names, or more than `max` (the max search limit) —
/// else `None` (also for any other query).
pub fn select_error(query: &str, max: usize) -> Option<String> {
    let names = select_names(query)?;
    if names.is_empty() {
        return Some(
            "\"select:\" needs tool names after it, separated by commas: \"select:name_a,name_b\""
                .to_string(),
        );
    }
    (names.len() > max).then(|| {
        format!(
            "\"select:\" takes at most {max} names (the max search limit, maxSearchLimit) and got {}; split them over several queries",
            names.len()
        )
    })
}

/// A `select:` name that named no allowed tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MissingName {
    /// The name as given.
    pub name: String,
    /// Up to three allowed ids that look close.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub did_you_mean: Vec<String>,
}

/// One query's answer before rendering.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answer {
    /// The hits, best first (for `select:`, in the order named).
    pub ranked: Vec<RankedHit>,
    /// Allowed tools that matched (see the module doc).
    pub matched: usize,
    /// The limit the list was cut to.
    pub limit: usize,
    /// Whether this was a `select:` query.
    pub select: bool,
    /// `select:` names that named no allowed tool, in the order given.
    pub missing: Vec<MissingName>,
    /// Which ranker answered (`select:` answers are lexical: exact names only).
    pub ranker: RankerKind,
}

/// Answers one query: `select:` names (at most `max_limit` tools), or the ranking cut to `limit`.
/// Callers refuse a `select:` query [`select_error`] objects to before getting here.
pub fn answer(
    index: &SearchIndex,
    query: &str,
    limit: usize,
    max_limit: usize,
    settings: &SearchSettings,
) -> Answer {
    let Some(names) = select_names(query) else {
        let (ranking, ranker) = index.answer_ranking(query, limit, settings);
        return Answer {
            ranked: ranking.hits,
            matched: ranking.matched,
            limit,
            select: false,
            missing: Vec::new(),
            ranker,
        };
    };
    let mut positions: Vec<u32> = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        let found = named(index, name);
        if found.is_empty() {
            missing.push(MissingName {
                name: name.to_string(),
                did_you_mean: lookup::suggestions(index, name),
            });
        }
        for position in found {
            if !positions.contains(&position) {
                positions.push(position);
            }
        }
    }
    Answer {
        matched: positions.len(),
        ranked: positions
            .into_iter()
            .take(max_limit)
            .map(|position| RankedHit {
                position,
                score: 0.0,
                exact: true,
                literal: false,
                tier: 0,
            })
            .collect(),
        limit: max_limit,
        select: true,
        missing,
        ranker: RankerKind::Lexical,
    }
}

/// The allowed tools one `select:` name stands for: what describe resolves it to (every
/// candidate when several tools share the name), else the tools it names in an exact-name form.
/// A name that is exactly a denied tool's stops at describe's answer (unknown), as describe does.
fn named(index: &SearchIndex, name: &str) -> Vec<u32> {
    match lookup::resolve(index, name) {
        Resolution::Found(position) => vec![position],
        Resolution::Ambiguous(ids) => ids.iter().filter_map(|id| index.position_of(id)).collect(),
        Resolution::NotFound if index.view().names_denied(name.trim()) => Vec::new(),
        Resolution::NotFound => index.named(name.trim()),
    }
}

impl Answer {
    /// Whether fewer hits are shown than matched (`shown`: the hits actually returned).
    pub fn truncated(&self, shown: usize) -> bool {
        shown < self.matched
    }

    /// The line beside the hits that tells the model what the list covers (`shown`: the hits
    /// returned; `budget_cut`: a batch's budget dropped some), e.g. "8 of 37 matching tools
    /// shown; refine the query or raise limit (at most 20)". `max`: the max search limit.
    pub fn note(&self, shown: usize, budget_cut: bool, max: usize) -> String {
        let mut parts = Vec::new();
        let matched = self.matched;
        let what = if self.select { "selected" } else { "matching" };
        if shown < matched {
            let advice = if budget_cut {
                "cut to fit the batch answer; search this query on its own".to_string()
            } else if self.select {
                format!("select fewer names (at most {max} tools are shown)")
            } else if self.limit < max {
                format!("refine the query or raise limit (at most {max})")
            } else {
                format!("refine the query ({max} is the most one search shows)")
            };
            parts.push(format!("{shown} of {matched} {what} tools shown; {advice}"));
        } else if matched == 0 && !self.select {
            parts.push("no tool matched; try other words".to_string());
        } else if matched == 1 {
            parts.push(format!("the only {what} tool is shown"));
        } else if matched > 0 {
            parts.push(format!("all {matched} {what} tools shown"));
        }
        if !self.missing.is_empty() {
            let mut listed: Vec<String> = self
                .missing
                .iter()
                .take(MAX_MISSING_LISTED)
                .map(|missing| {
                    let mut text = format!("{:?}", echo(&missing.name).to_string());
                    if !missing.did_you_mean.is_empty() {
                        text.push_str(&format!(
                            " (did you mean {}?)",
                            missing
                                .did_you_mean
                                .iter()
                                .map(|id| format!("{id:?}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    text
                })
                .collect();
            let more = self.missing.len().saturating_sub(MAX_MISSING_LISTED);
            if more > 0 {
                listed.push(format!("and {more} more"));
            }
            parts.push(format!("no tool is named {}", listed.join(", ")));
        }
        let mut text = parts.join("; ");
        if let Some(first) = text.get(..1) {
            text = first.to_uppercase() + &text[1..];
        }
        text.push('.');
        text
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::{Answer, select_error, select_names};

    #[test]
    fn select_names_are_trimmed_and_collapsed() {
        assert_eq!(
            select_names("  SELECT: a ,b,, c ,a "),
            Some(vec!["a", "b", "c"])
        );
        assert_eq!(select_names("selection of tools"), None);
        assert_eq!(select_names("sel"), None);
        assert_eq!(select_names("séle"), None);
        assert!(select_error("select:", 4).is_some());
        assert_eq!(select_error("select:a,b,c,d", 4), None);
        let error = select_error("select:a,b,c,d,e", 4).unwrap();
        assert!(error.contains("at most 4"), "{error}");
        assert_eq!(select_error("create issue", 4), None);
    }

    #[test]
    fn notes_say_what_the_list_covers() {
        let answer = |matched, limit| Answer {
            matched,
            limit,
            ..Answer::default()
        };
        // (matched, limit, shown, the note)
        let cases = [
            (
                37,
                8,
                8,
                "8 of 37 matching tools shown; refine the query or raise limit (at most 20).",
            ),
            (
                37,
                20,
                20,
                "20 of 37 matching tools shown; refine the query (20 is the most one search shows).",
            ),
            (3, 8, 3, "All 3 matching tools shown."),
            (1, 8, 1, "The only matching tool is shown."),
            (0, 8, 0, "No tool matched; try other words."),
        ];
        for (matched, limit, shown, note) in cases {
            assert_eq!(answer(matched, limit).note(shown, false, 20), note);
        }
        assert!(answer(9, 8).note(5, true, 20).contains("5 of 9"));
    }
}
