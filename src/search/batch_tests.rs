//! Batch search rules and the response budget, on the parser and runner directly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::SearchIndex;
use crate::SearchLimits;
use crate::search::batch::{self, BATCH_BUDGET_CHARS, QuerySpec, SearchRequest, SearchResponse};
use crate::{Authorized, Policy};
use crate::{CatalogSnapshot, Descriptor, Source};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};

fn limits() -> SearchLimits {
    SearchLimits::default()
}

fn spec(query: &str, limit: usize) -> QuerySpec {
    QuerySpec {
        query: query.into(),
        limit,
    }
}

#[test]
fn single_and_batch_forms_follow_r_5_2() {
    let parse = |v: Value| batch::parse_search_request(&v, limits());
    assert_eq!(
        parse(json!({"query": "mail"})),
        Ok(SearchRequest::Single(spec("mail", 8)))
    );
    assert_eq!(
        parse(json!({"query": "mail", "limit": 3, "queries": []})),
        Ok(SearchRequest::Single(spec("mail", 3)))
    );
    assert_eq!(parse(json!({"query": "  "})), Ok(SearchRequest::Empty));
    assert_eq!(
        parse(
            json!({"query": "mail", "limit": 2, "queries": [{"query": "cal", "limit": 4}, "web"]})
        ),
        Ok(SearchRequest::Batch(vec![
            spec("mail", 2),
            spec("cal", 4),
            spec("web", 8)
        ]))
    );
    assert_eq!(
        parse(json!({"query": "", "queries": [{"query": "cal"}]})),
        Ok(SearchRequest::Batch(vec![spec("cal", 8)]))
    );
    let errors = [
        json!({}),
        json!({"queries": []}),
        json!({"query": null}),
        json!({"queries": [{"query": "cal"}], "limit": 3}),
        json!({"query": " ", "queries": [{"query": "cal"}], "limit": 3}),
        json!({"queries": [{"query": " "}]}),
        json!({"queries": [{"q": "x"}]}),
        json!({"queries": "x"}),
        json!({"query": 3}),
        json!({"query": "x", "limit": 0}),
        json!({"query": "x", "extra": 1}),
        json!("x"),
    ];
    for value in errors {
        assert!(parse(value.clone()).is_err(), "{value} should be rejected");
    }
}

#[test]
fn batch_bounds_follow_r_5_3() {
    let parse = |v: Value| batch::parse_search_request(&v, limits());
    let refusal = |v: Value| parse(v).unwrap_err().to_string();
    // `n` queries `q0`, `q1`, …, each with `limit` when there is one.
    let queries = |n: usize, limit: Option<u32>| -> Vec<Value> {
        (0..n)
            .map(|i| match limit {
                Some(limit) => json!({"query": format!("q{i}"), "limit": limit}),
                None => json!({"query": format!("q{i}")}),
            })
            .collect()
    };
    assert!(parse(json!({"queries": queries(16, Some(3))})).is_ok());
    assert!(refusal(json!({"queries": queries(17, Some(1))})).contains("at most 16"));
    // 16 in the batch plus a scalar query is 17.
    let sixteen = queries(16, Some(1));
    assert!(parse(json!({"query": "x", "limit": 1, "queries": sixteen})).is_err());
    // Limits sum to at most 50 (omitted limits count as the default, 8).
    assert!(refusal(json!({"queries": queries(7, None)})).contains("add up to 56"));
    assert!(
        parse(json!({"queries": queries(2, Some(999))})).is_ok(),
        "each limit is clamped to 20 first"
    );
    // One query at most 512 characters; the whole list at most 512 bytes.
    assert!(
        parse(json!({"queries": [{"query": "é".repeat(512)}]})).is_err(),
        "1024+ bytes"
    );
    assert!(parse(json!({"queries": [{"query": "x".repeat(513)}]})).is_err());
    assert!(parse(json!({"query": "x".repeat(500)})).is_ok());
    assert!(
        parse(json!({"queries": [{"query": "a".repeat(250)}, {"query": "b".repeat(250)}]})).is_ok()
    );
    assert!(
        parse(json!({"queries": [{"query": "a".repeat(260)}, {"query": "b".repeat(260)}]}))
            .is_err()
    );
}

fn wordy_index() -> SearchIndex {
    let tools = (0..60).map(|i| {
        Descriptor::new(Source::Plugin, &format!("owner{i}"), &format!("calendar_tool_{i}"))
            .description(format!(
                "Calendar tool number {i}: manages events, meetings, invitations and reminders across many accounts with plenty of descriptive text to make the response long enough"
            ))
            .input_schema(json!({"type":"object","properties":{"event_id":{"type":"string"}},"required":["event_id"]}))
    });
    SearchIndex::build(&Authorized::new(
        CatalogSnapshot::build(tools),
        Policy::allow_all(),
    ))
    .unwrap()
}

#[test]
fn batch_responses_fit_the_budget_by_dropping_the_lowest_ranked_of_the_largest_group() {
    let index = wordy_index();
    let request = json!({"queries": [
        {"query": "calendar events", "limit": 20},
        {"query": "meetings invitations", "limit": 20},
        {"query": "reminders", "limit": 5},
    ]});
    let SearchResponse::Batch(response) = batch::run(&index, &request, limits()).unwrap() else {
        panic!("batch form expected")
    };
    let text = serde_json::to_string(&response).unwrap();
    assert!(
        text.chars().count() <= BATCH_BUDGET_CHARS,
        "{} chars",
        text.chars().count()
    );
    assert!(response.truncated);
    assert_eq!(response.results.len(), 3, "every query keeps its group");
    let sizes: Vec<usize> = response
        .results
        .iter()
        .map(|g| g.candidates.len())
        .collect();
    // Groups were trimmed from the largest down, so they end up level (±1), the small one intact.
    assert!(sizes[0].abs_diff(sizes[1]) <= 1, "{sizes:?}");
    assert!(response.results[0].truncated && response.results[1].truncated);
    // What remains is a prefix of each query's own ranking.
    let full = index.search("calendar events", 20);
    let kept: Vec<&str> = response.results[0]
        .candidates
        .iter()
        .map(|h| h.id.as_str())
        .collect();
    let prefix: Vec<&str> = full
        .iter()
        .take(kept.len())
        .map(|h| h.id.as_str())
        .collect();
    assert_eq!(kept, prefix);
    for group in &response.results {
        for hit in &group.candidates {
            assert!(hit.description.chars().count() <= 180);
        }
    }
}

#[test]
fn a_valid_query_that_matches_nothing_gives_an_empty_group() {
    let index = wordy_index();
    let request = json!({"queries": [{"query": "calendar", "limit": 1}, {"query": "zzzz qqqq"}]});
    let SearchResponse::Batch(response) = batch::run(&index, &request, limits()).unwrap() else {
        panic!()
    };
    assert_eq!(response.results[1].candidates, vec![]);
    assert_eq!(response.results[1].matched, 0);
    assert!(!response.results[1].truncated);
    // The limit cut the first group: `truncated` means fewer candidates than matched.
    assert!(response.results[0].matched > 1);
    assert!(response.results[0].truncated && response.truncated);
    let json = SearchResponse::Batch(response).to_json();
    assert!(
        json["results"][1].get("truncated").is_none(),
        "flags appear only when set: {json}"
    );
    assert_eq!(json["results"][1]["matched"], 0);
}

#[test]
fn a_batch_that_is_not_cut_is_not_truncated() {
    let index = wordy_index();
    let request = json!({"queries": [{"query": "zzzz qqqq"}, {"query": "yyyy"}]});
    let SearchResponse::Batch(response) = batch::run(&index, &request, limits()).unwrap() else {
        panic!()
    };
    assert!(!response.truncated);
    let response = SearchResponse::Batch(response);
    assert!(response.to_json().get("truncated").is_none());
    assert_eq!(response.note(20), None);
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::from),
        prop_oneof![Just("query"), Just("queries"), Just("limit")].prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("query".to_string()),
                    Just("queries".to_string()),
                    Just("limit".to_string()),
                    ".{0,8}"
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// the parser never panics on arbitrary JSON, and whatever it accepts runs.
    #[test]
    fn the_batch_parser_never_panics(value in arbitrary_json()) {
        if let Ok(request) = batch::parse_search_request(&value, limits())
            && let SearchRequest::Batch(specs) = &request {
                prop_assert!(specs.len() <= 16);
                prop_assert!(specs.iter().map(|s| s.limit).sum::<usize>() <= 50);
            }
    }
}
