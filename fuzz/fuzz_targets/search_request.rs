//! The `tool_search` request parser (single and batch forms) on an arbitrary JSON value.
//! Invariants: every accepted query has a limit in 1..=max; a batch holds at most
//! 16 non-blank queries of at most 512 characters, at most 512 bytes as a JSON list, with limits
//! summing to at most 50; an error names the problem and echoes at most a bounded prefix of
//! the input; parsing is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolsearch::fuzzing::{
    MAX_LIMIT_SUM, MAX_QUERIES, MAX_QUERY_CHARS, MAX_QUERY_LIST_BYTES, SearchLimits, SearchRequest,
    parse_search_request,
};

/// Longest error message: the longest fixed text plus bounded echoes of the input.
const MAX_ERROR_CHARS: usize = 512;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some(args) = toolsearch_fuzz::json(rest) else {
        return;
    };
    let limits = if selector & 1 == 0 {
        SearchLimits::default()
    } else {
        SearchLimits::local()
    };
    let result = parse_search_request(&args, limits);
    assert_eq!(
        result,
        parse_search_request(&args, limits),
        "not deterministic"
    );
    let max = limits.max_limit();
    match result {
        Err(error) => {
            let chars = error.to_string().chars().count();
            assert!(chars <= MAX_ERROR_CHARS, "error of {chars} chars: {error}");
        }
        Ok(SearchRequest::Empty) => {}
        Ok(SearchRequest::Single(spec)) => {
            assert!(!spec.query.trim().is_empty(), "blank single query accepted");
            assert!(spec.query.chars().count() <= MAX_QUERY_CHARS);
            assert!((1..=max).contains(&spec.limit), "limit {}", spec.limit);
        }
        Ok(SearchRequest::Batch(specs)) => {
            assert!(
                !specs.is_empty() && specs.len() <= MAX_QUERIES,
                "{} queries",
                specs.len()
            );
            let mut sum = 0;
            for spec in &specs {
                assert!(!spec.query.trim().is_empty(), "blank query in a batch");
                assert!(spec.query.chars().count() <= MAX_QUERY_CHARS);
                assert!((1..=max).contains(&spec.limit), "limit {}", spec.limit);
                sum += spec.limit;
            }
            assert!(sum <= MAX_LIMIT_SUM, "limits sum to {sum}");
            let list: Vec<&str> = specs.iter().map(|s| s.query.as_str()).collect();
            let bytes = serde_json::to_string(&list)
                .map(|s| s.len())
                .unwrap_or(usize::MAX);
            assert!(bytes <= MAX_QUERY_LIST_BYTES, "query list of {bytes} bytes");
        }
    }
});
