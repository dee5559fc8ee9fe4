//! Search benchmarks: index build and query latency at 1k, 10k and 100k tools.
//!
//! Tools are sampled from the pooled real catalogs of `../shared/eval/` (8,935 tools, owners
//! `<set>`); 10k and 100k replicate them with suffixed names and owners. English queries come
//! from the dev sets (`query_plain`: the same with typo tolerance and the lexicon off);
//! `query_typo` uses the first words of the same queries with the longest word misspelled (two
//! inner letters swapped, or one dropped); `query_non_english` cycles through Chinese, German, French and Indonesian requests written for this bench. Every timed
//! loop checks its result, so a broken path cannot look fast.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolsearch::{
    Authorized, CatalogSnapshot, Descriptor, Gateway, IndexCache, Policy, SearchIndex,
    SearchSettings, Source, load_catalog_file,
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

/// Short dev queries with their longest word misspelled: swap two inner letters (even
/// positions) or drop one (odd), so the word is unknown and typo tolerance runs.
fn misspelled(queries: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        let words: Vec<&str> = q.split_whitespace().take(5).collect();
        let Some((at, longest)) = words
            .iter()
            .enumerate()
            .filter(|(_, w)| w.chars().all(char::is_alphabetic))
            .max_by_key(|(_, w)| w.len())
        else {
            continue;
        };
        let mut chars: Vec<char> = longest.chars().collect();
        if chars.len() < 5 {
            continue;
        }
        let mid = chars.len() / 2;
        if i % 2 == 0 {
            chars.swap(mid - 1, mid);
        } else {
            chars.remove(mid);
        }
        let mut typo: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        typo[at] = chars.into_iter().collect();
        out.push(typo.join(" "));
    }
    assert!(out.len() > 32, "too few misspelled queries");
    out
}

/// Non-English requests of the kinds a tool catalog serves (written for this bench).
const NON_ENGLISH: [&str; 24] = [
    "创建一个新的问题",
    "删除这个文件",
    "查看明天的天气预报",
    "给团队发送邮件",
    "列出仓库的所有分支",
    "把这段文字翻译成法语",
    "Neue Datei im Ordner anlegen",
    "E-Mail an das Team senden",
    "Wettervorhersage für morgen anzeigen",
    "Alle offenen Aufgaben auflisten",
    "Termin im Kalender löschen",
    "Bild verkleinern und speichern",
    "créer un nouveau dossier",
    "envoyer un message au canal",
    "supprimer les anciens fichiers",
    "afficher la météo de demain",
    "traduire ce texte en allemand",
    "rechercher des notes sur le projet",
    "buat tugas baru untuk besok",
    "kirim pesan ke saluran tim",
    "hapus berkas lama",
    "tampilkan cuaca hari ini",
    "cari catatan tentang rapat",
    "ubah ukuran gambar",
];

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
    let typos = misspelled(&queries);
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
        // The same English queries with typo tolerance and the lexicon off (the ranker before
        // them): the same-run baseline for the cost of both.
        let plain = SearchSettings {
            typo_tolerance: false,
            multilingual: false,
        };
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
