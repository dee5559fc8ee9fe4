//! Search benchmarks: index build and query latency at 1k, 10k and 100k tools.
//!
//! Tools are sampled from the pooled real catalogs of `../shared/eval/` (8,935 tools, owners
//! `<set>`); 10k and 100k replicate them with suffixed names and owners. English queries come
//! from the dev sets (`query_plain`: the same with typo tolerance and the lexicon off);
//! `query_typo` uses the first words of the same queries with the longest word misspelled (two
//! inner letters swapped, or one dropped); `query_non_english` cycles through Chinese, German,
//! French and Indonesian requests written for this bench. Every timed loop checks its result,
//! so a broken path cannot look fast. The workload is `toolsearch::lab::search`'s, the same as
//! `toolsearch bench search` (which reports per-query p50/p99 rather than criterion's means).

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolsearch::lab::search::{NON_ENGLISH, PLAIN, Workload};
use toolsearch::{Authorized, Gateway, IndexCache, Policy, SearchIndex};

fn eval_dir() -> std::path::PathBuf {
    std::env::var_os("TOOLSEARCH_SHARED")
        .map(|p| Path::new(&p).join("eval"))
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval"))
}

fn bench_search(c: &mut Criterion) {
    let workload = Workload::load(&eval_dir()).unwrap();
    let (queries, typos) = (&workload.english, &workload.misspelled);
    assert!(typos.len() > 32, "too few misspelled queries");
    // A batch is 16 short queries (the first words of dev queries) within R-5.3's 512 bytes.
    let short: Vec<String> = queries
        .iter()
        .step_by(queries.len() / 16)
        .take(16)
        .map(|q| {
            q.split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ")
                .chars()
                .take(28)
                .collect()
        })
        .collect();
    let batch_request = json!({
        "queries": short.iter().map(|q| json!({"query": q, "limit": 3})).collect::<Vec<_>>()
    });
    for n in [1_000usize, 10_000, 100_000] {
        let view = Authorized::new(workload.catalog(n), Policy::allow_all());
        assert_eq!(view.len(), n);

        let mut group = c.benchmark_group(format!("search_{n}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(if n >= 100_000 { 20 } else { 5 }));
        group.bench_function(BenchmarkId::new("build", n), |b| {
            b.iter(|| {
                let index = SearchIndex::build(black_box(&view)).unwrap();
                assert_eq!(index.stats().documents, n);
                index
            })
        });
        group.finish();

        // The batch goes through the gateway's `tool_search`, sharing the index.
        let cache = std::sync::Arc::new(IndexCache::new());
        let index = cache.get(&view).unwrap();
        let gateway = Gateway::builder(view.snapshot().clone())
            .index_cache(cache.clone())
            .build()
            .unwrap();
        assert_eq!(cache.builds(), 1, "the gateway reuses the index");
        let mut group = c.benchmark_group(format!("search_{n}"));
        group.sample_size(50);
        let mut next = 0;
        group.bench_function(BenchmarkId::new("query", n), |b| {
            b.iter(|| {
                let query = &queries[next % queries.len()];
                next += 1;
                let hits = index.rank(black_box(query), 8);
                assert!(hits.len() <= 8);
                hits
            })
        });
        // The same English queries with typo tolerance and the lexicon off (the ranker before
        // them): the same-run baseline for the cost of both.
        let plain = PLAIN;
        let mut next = 0;
        group.bench_function(BenchmarkId::new("query_plain", n), |b| {
            b.iter(|| {
                let query = &queries[next % queries.len()];
                next += 1;
                let hits = index.rank_with(black_box(query), 8, &plain);
                assert!(hits.len() <= 8);
                hits
            })
        });
        let mut next = 0;
        group.bench_function(BenchmarkId::new("query_typo", n), |b| {
            b.iter(|| {
                let query = &typos[next % typos.len()];
                next += 1;
                let hits = index.rank(black_box(query), 8);
                assert!(hits.len() <= 8);
                hits
            })
        });
        let mut next = 0;
        group.bench_function(BenchmarkId::new("query_non_english", n), |b| {
            b.iter(|| {
                let query = NON_ENGLISH[next % NON_ENGLISH.len()];
                next += 1;
                let hits = index.rank(black_box(query), 8);
                assert!(!hits.is_empty(), "{query:?} found nothing");
                hits
            })
        });
        group.bench_function(BenchmarkId::new("batch16", n), |b| {
            b.iter(|| {
                let response = gateway.search(black_box(&batch_request)).unwrap().to_json();
                assert_eq!(response["results"].as_array().map(Vec::len), Some(16));
                response
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_search);
criterion_main!(benches);
