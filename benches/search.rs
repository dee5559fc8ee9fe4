//! Search benchmarks: index build and query latency at 1k, 10k and 100k tools.
//!
//! Tools are sampled from the pooled real catalogs of `../shared/eval/` (8,935 tools, owners
//! `<set>`); 10k and 100k replicate them with suffixed names and owners. Queries come from the
//! dev sets. Every timed loop checks its result, so a broken path cannot look fast.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolsearch::{
    Authorized, CatalogSnapshot, Descriptor, Gateway, IndexCache, Policy, SearchIndex, Source,
    load_catalog_file,
};

const SETS: [&str; 4] = ["bfcl", "livemcpbench", "seal_tools", "toolbench"];

fn eval_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval")
}

fn pooled() -> Vec<Descriptor> {
    let mut out = Vec::new();
    for set in SETS {
        let path = eval_dir().join(set).join("catalog.jsonl");
        let loaded = load_catalog_file(&path, Source::Plugin)
            .unwrap_or_else(|e| panic!("the bench needs {}: {e}", path.display()));
        for mut tool in loaded.descriptors {
            tool.owner = format!("{set}-{}", tool.owner);
            tool.id = toolsearch::tool_id(tool.source, &tool.owner, &tool.name);
            out.push(tool);
        }
    }
    out
}

fn queries() -> Vec<String> {
    let mut out = Vec::new();
    for set in SETS {
        let text = std::fs::read_to_string(eval_dir().join(set).join("queries.dev.jsonl"))
            .unwrap_or_default();
        for line in text.lines().take(64) {
            if let Ok(v) = serde_json::from_str::<Value>(line)
                && let Some(q) = v["query"].as_str()
            {
                out.push(q.to_string());
            }
        }
    }
    assert!(!out.is_empty(), "no dev queries found");
    out
}

/// `n` tools: a deterministic sample of the pool, or the pool replicated with suffixes.
fn catalog_of(pool: &[Descriptor], n: usize) -> CatalogSnapshot {
    let mut tools = Vec::with_capacity(n);
    if n <= pool.len() {
        let step = pool.len() as f64 / n as f64;
        tools.extend((0..n).map(|i| pool[(i as f64 * step) as usize].clone()));
    } else {
        let mut round = 0;
        while tools.len() < n {
            for tool in pool {
                if tools.len() == n {
                    break;
                }
                let mut copy = tool.clone();
                if round > 0 {
                    copy.name = format!("{}_{round}", tool.name);
                    copy.owner = format!("{}{round}", tool.owner);
                    copy.id = toolsearch::tool_id(copy.source, &copy.owner, &copy.name);
                }
                tools.push(copy);
            }
            round += 1;
        }
    }
    CatalogSnapshot::build(tools)
}

fn bench_search(c: &mut Criterion) {
    let pool = pooled();
    let queries = queries();
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
        let view = Authorized::new(catalog_of(&pool, n), Policy::allow_all());
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
        group.bench_function(BenchmarkId::new("batch16", n), |b| {
            b.iter(|| {
                let response = gateway.search(black_box(&batch_request)).unwrap();
                assert_eq!(response["results"].as_array().map(Vec::len), Some(16));
                response
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench_search);
criterion_main!(benches);
