//! The query-latency workload behind `benches/search.rs` and `toolsearch bench search`: the
//! pooled real catalogs of `shared/eval/` grown to N tools, English dev queries, the same
//! queries misspelled, and non-English requests; per-query p50/p99 of each series, with the
//! ranker's typo tolerance and lexicon off as the same-run baseline.
//!
//! Owns: [`Workload`] (catalog and query series), [`run_search_bench`] and its
//! [`SearchBenchReport`].
//! Never does: time index building or the first touch of a query (each query runs once,
//! untimed, before its timed runs in every round); accept an empty answer to a non-English
//! request (that series checks every result); read anything but the files it is pointed at.
//! Invariants: the series interleave query by query in rotating order, so machine noise falls
//! on all of them alike; one index serves every series (the settings are query-side only).

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use crate::catalog::file::load_catalog_file;
use crate::catalog::{CatalogSnapshot, Descriptor, Source, tool_id};
use crate::policy::{Authorized, Policy};
use crate::search::{SearchIndex, SearchSettings};

/// The evaluation sets pooled into the catalog, in this order.
pub const SETS: [&str; 4] = ["bfcl", "livemcpbench", "seal_tools", "toolbench"];

/// Dev queries taken from each set.
pub const QUERIES_PER_SET: usize = 64;

/// Non-English requests of the kinds a tool catalog serves (written for this benchmark, not
/// taken from an evaluation set): Chinese, German, French, Indonesian.
pub const NON_ENGLISH: [&str; 24] = [
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

/// The ranker's settings without typo tolerance and lexicon (the ranker before them).
pub const PLAIN: SearchSettings = SearchSettings {
    typo_tolerance: false,
    multilingual: false,
};

/// The benchmark's tools and query series.
#[derive(Debug, Clone)]
pub struct Workload {
    /// The pooled tools of every set (owners prefixed `<set>-`).
    pub pool: Vec<Descriptor>,
    /// English dev queries, [`QUERIES_PER_SET`] per set.
    pub english: Vec<String>,
    /// The first five words of each English query with its longest word misspelled.
    pub misspelled: Vec<String>,
}

impl Workload {
    /// Loads `<eval_dir>/<set>/catalog.jsonl` and `queries.dev.jsonl` for every set of [`SETS`].
    pub fn load(eval_dir: &Path) -> Result<Workload, String> {
        let mut pool = Vec::new();
        let mut english = Vec::new();
        for set in SETS {
            let path = eval_dir.join(set).join("catalog.jsonl");
            let loaded = load_catalog_file(&path, Source::Plugin)
                .map_err(|e| format!("the search bench needs {}: {e}", path.display()))?;
            for mut tool in loaded.descriptors {
                tool.owner = format!("{set}-{}", tool.owner);
                tool.id = tool_id(tool.source, &tool.owner, &tool.name);
                pool.push(tool);
            }
            let path = eval_dir.join(set).join("queries.dev.jsonl");
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("the search bench needs {}: {e}", path.display()))?;
            english.extend(
                text.lines()
                    .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                    .filter_map(|v| v["query"].as_str().map(str::to_string))
                    .take(QUERIES_PER_SET),
            );
        }
        if english.is_empty() {
            return Err(format!("no dev queries in {}", eval_dir.display()));
        }
        let misspelled = misspell(&english);
        Ok(Workload {
            pool,
            english,
            misspelled,
        })
    }

    /// `n` tools: an even sample of the pool, or the pool replicated with suffixed names and
    /// owners (`<name>_<round>`) until there are `n`.
    pub fn catalog(&self, n: usize) -> CatalogSnapshot {
        let pool = &self.pool;
        let mut tools = Vec::with_capacity(n);
        if n <= pool.len() {
            let step = pool.len() as f64 / n.max(1) as f64;
            tools.extend((0..n).map(|i| pool[(i as f64 * step) as usize].clone()));
        } else if !pool.is_empty() {
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
                        copy.id = tool_id(copy.source, &copy.owner, &copy.name);
                    }
                    tools.push(copy);
                }
                round += 1;
            }
        }
        CatalogSnapshot::build(tools)
    }
}

/// The first five words of each query with its longest alphabetic word (≥ 5 letters)
/// misspelled: two middle letters swapped (even queries) or the middle one dropped (odd), so
/// the word is unknown to the index and typo tolerance runs.
pub fn misspell(queries: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, query) in queries.iter().enumerate() {
        let words: Vec<&str> = query.split_whitespace().take(5).collect();
        let Some((at, longest)) = words
            .iter()
            .enumerate()
            .filter(|(_, w)| w.chars().all(char::is_alphabetic))
            .max_by_key(|(_, w)| w.chars().count())
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
    out
}

/// Per-query latency of one series, in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    /// Timed searches.
    pub samples: usize,
    /// Median.
    pub p50_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Mean.
    pub mean_us: f64,
}

impl Latency {
    fn of(mut samples: Vec<f64>) -> Latency {
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| {
            if samples.is_empty() {
                0.0
            } else {
                samples[((samples.len() - 1) as f64 * q).round() as usize]
            }
        };
        Latency {
            samples: samples.len(),
            p50_us: at(0.5),
            p99_us: at(0.99),
            mean_us: samples.iter().sum::<f64>() / samples.len().max(1) as f64,
        }
    }

    fn json(&self) -> Value {
        json!({"samples": self.samples, "p50_us": round2(self.p50_us),
               "p99_us": round2(self.p99_us), "mean_us": round2(self.mean_us)})
    }
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// What [`run_search_bench`] measured.
#[derive(Debug, Clone)]
pub struct SearchBenchReport {
    /// Tools in the index.
    pub tools: usize,
    /// Index build time, ms.
    pub build_ms: f64,
    /// Rounds over every series.
    pub rounds: usize,
    /// English dev queries, default settings (typo tolerance and lexicon on).
    pub english: Latency,
    /// The same queries with [`PLAIN`] settings (the same-run baseline).
    pub english_plain: Latency,
    /// Misspelled queries, default settings.
    pub misspelled: Latency,
    /// [`NON_ENGLISH`], default settings.
    pub non_english: Latency,
}

impl SearchBenchReport {
    /// The report as JSON (what `toolsearch bench search --json` prints).
    pub fn json(&self) -> Value {
        json!({
            "tools": self.tools,
            "build_ms": round2(self.build_ms),
            "rounds": self.rounds,
            "english": self.english.json(),
            "english_plain": self.english_plain.json(),
            "misspelled": self.misspelled.json(),
            "non_english": self.non_english.json(),
            "ratio_english_over_plain_p50": round2(self.english.p50_us / self.english_plain.p50_us.max(f64::MIN_POSITIVE)),
        })
    }
}

/// Builds the index of `workload.catalog(tools)` and times every query of every series
/// `rounds` times (each query once untimed first in each round). A non-English request that
/// finds nothing is an error, as is a catalog or query file that does not load.
pub fn run_search_bench(
    workload: &Workload,
    tools: usize,
    rounds: usize,
) -> Result<SearchBenchReport, String> {
    let view = Authorized::new(workload.catalog(tools), Policy::allow_all());
    let started = Instant::now();
    let index = SearchIndex::build(&view).map_err(|e| e.to_string())?;
    let build_ms = started.elapsed().as_secs_f64() * 1e3;
    let on = SearchSettings::default();
    let time = |query: &str, settings: &SearchSettings| {
        let started = Instant::now();
        let hits = index.rank_with(query, 8, settings);
        (started.elapsed().as_secs_f64() * 1e6, hits.len())
    };
    let (mut english, mut plain, mut misspelled, mut foreign) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        for (k, query) in workload.english.iter().enumerate() {
            std::hint::black_box(index.rank_with(query, 8, &PLAIN));
            if (k + round) % 2 == 0 {
                english.push(time(query, &on).0);
                plain.push(time(query, &PLAIN).0);
            } else {
                plain.push(time(query, &PLAIN).0);
                english.push(time(query, &on).0);
            }
        }
        for query in &workload.misspelled {
            std::hint::black_box(index.rank_with(query, 8, &on));
            misspelled.push(time(query, &on).0);
        }
        for query in NON_ENGLISH {
            std::hint::black_box(index.rank_with(query, 8, &on));
            let (us, found) = time(query, &on);
            if found == 0 {
                return Err(format!("{query:?} found nothing in {tools} tools"));
            }
            foreign.push(us);
        }
    }
    Ok(SearchBenchReport {
        tools,
        build_ms,
        rounds,
        english: Latency::of(english),
        english_plain: Latency::of(plain),
        misspelled: Latency::of(misspelled),
        non_english: Latency::of(foreign),
    })
}

/// Resident memory of this process, MiB (0 where `/proc` is not there).
#[cfg(feature = "semantic")]
fn rss_mib() -> f64 {
    super::cells::proc_kib("/proc/self/status", "VmRSS:") as f64 / 1024.0
}

/// What [`run_hybrid_search_bench`] measured: the cost of getting the hybrid ranker ready
/// and of a hybrid query, beside the lexical ranker's in the same run.
#[cfg(feature = "semantic")]
#[derive(Debug, Clone)]
pub struct HybridSearchReport {
    /// Tools in the index.
    pub tools: usize,
    /// Rounds over every series.
    pub rounds: usize,
    /// Lexical index build, ms.
    pub build_ms: f64,
    /// Loading the model and reading the vector cache, ms.
    pub open_ms: f64,
    /// Getting every tool's vector (from the cache, or embedded now), ms.
    pub vectors_ms: f64,
    /// Tool vectors found in the cache.
    pub cached: usize,
    /// Tool vectors embedded now.
    pub computed: usize,
    /// A second start in the same process over the same catalog: model, cache, lexical index
    /// and tool vectors, ms.
    pub restart_ms: f64,
    /// Tool vectors the second start embedded (0 with a writable cache).
    pub restart_computed: usize,
    /// Resident memory with the lexical index built, then with the model loaded and the cache
    /// read (every vector it holds for this model), then with every tool vector attached, MiB.
    pub rss_mib: [f64; 3],
    /// English dev queries, lexical ranker (the same-run baseline).
    pub lexical: Latency,
    /// English dev queries, hybrid ranker, the query never seen before: embedding + fusion.
    pub english: Latency,
    /// The query embedding alone (part of `english`).
    pub embedding: Latency,
    /// Fusion alone, the vector given (part of `english`).
    pub fusion: Latency,
    /// English dev queries asked again (their vector among the recent queries).
    pub repeated: Latency,
    /// Misspelled queries, hybrid, never seen before.
    pub misspelled: Latency,
    /// [`NON_ENGLISH`], hybrid, never seen before (Chinese ones are not embedded).
    pub non_english: Latency,
}

#[cfg(feature = "semantic")]
impl HybridSearchReport {
    /// Tool vectors embedded per second when any were (0 otherwise).
    pub fn embedded_per_s(&self) -> f64 {
        if self.computed == 0 || self.vectors_ms <= 0.0 {
            0.0
        } else {
            self.computed as f64 / (self.vectors_ms / 1e3)
        }
    }

    /// The report as JSON (what `toolsearch bench search --ranker hybrid --json` prints).
    pub fn json(&self) -> Value {
        json!({
            "ranker": "hybrid",
            "tools": self.tools,
            "rounds": self.rounds,
            "build_ms": round2(self.build_ms),
            "open_ms": round2(self.open_ms),
            "vectors": {"ms": round2(self.vectors_ms), "cached": self.cached,
                        "computed": self.computed, "embedded_per_s": round2(self.embedded_per_s())},
            "restart": {"ms": round2(self.restart_ms), "computed": self.restart_computed},
            "rss_mib": {"before_model": round2(self.rss_mib[0]), "model_and_cache": round2(self.rss_mib[1]),
                        "ready": round2(self.rss_mib[2])},
            "lexical": self.lexical.json(),
            "english": self.english.json(),
            "embedding": self.embedding.json(),
            "fusion": self.fusion.json(),
            "repeated": self.repeated.json(),
            "misspelled": self.misspelled.json(),
            "non_english": self.non_english.json(),
            "ratio_english_over_lexical_p50": round2(self.english.p50_us / self.lexical.p50_us.max(f64::MIN_POSITIVE)),
        })
    }
}

/// Builds the index of `workload.catalog(tools)`, opens the vector store with `open` (model
/// and cache), gets every tool's vector, then times a second start, and every query of every
/// series `rounds` times: the lexical ranking, and the hybrid one for a query never seen
/// (embedded now: the embedding and the fusion timed apart and together) and for a repeated
/// one. A non-English request that finds nothing is an error.
#[cfg(feature = "semantic")]
pub fn run_hybrid_search_bench(
    workload: &Workload,
    tools: usize,
    rounds: usize,
    open: &dyn Fn() -> Result<std::sync::Arc<crate::search::semantic::VectorStore>, String>,
) -> Result<HybridSearchReport, String> {
    use crate::search::hybrid::{Attached, DenseIndex, Fusion, dense_weight, hybrid_ranking};
    let ms = |started: Instant| started.elapsed().as_secs_f64() * 1e3;
    let catalog = workload.catalog(tools);
    let view = Authorized::new(catalog.clone(), Policy::allow_all());
    let started = Instant::now();
    let index = SearchIndex::build(&view).map_err(|e| e.to_string())?;
    let build_ms = ms(started);
    let rss_before = rss_mib();

    let started = Instant::now();
    let store = open()?;
    let open_ms = ms(started);
    let rss_model = rss_mib();
    let started = Instant::now();
    let (dense, embedded) = DenseIndex::build(&index, &store).map_err(|e| e.to_string())?;
    let vectors_ms = ms(started);
    let fusion = Fusion::default();
    index.attach_dense(std::sync::Arc::new(Attached {
        dense,
        store: store.clone(),
        fusion,
    }));
    let rss_ready = rss_mib();

    // A second start: everything again from the files, nothing shared with the first.
    let started = Instant::now();
    let (restart_computed, restart_ms) = {
        let store = open()?;
        let view = Authorized::new(catalog, Policy::allow_all());
        let index = SearchIndex::build(&view).map_err(|e| e.to_string())?;
        let (_, again) = DenseIndex::build(&index, &store).map_err(|e| e.to_string())?;
        (again.computed, ms(started))
    };

    let attached = index.dense().ok_or("the tool vectors were not attached")?;
    let on = SearchSettings::default();
    let embedder = store.embedder().clone();
    // A query never seen: embedded now (not through the recent queries), then fused.
    let cold = |query: &str| -> Result<(f64, f64, usize), String> {
        let started = Instant::now();
        let vector = if dense_weight(query, &fusion) > 0.0 {
            embedder.embed_one(query).map_err(|e| e.to_string())?
        } else {
            Vec::new()
        };
        let embedded = started.elapsed().as_secs_f64() * 1e6;
        let fused = Instant::now();
        let ranking = hybrid_ranking(&index, &attached.dense, query, &vector, 8, &on, &fusion);
        let fused = fused.elapsed().as_secs_f64() * 1e6;
        Ok((embedded, fused, ranking.hits.len()))
    };
    let (mut lexical, mut english, mut embedding, mut fused, mut repeated) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut misspelled, mut foreign) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        for query in &workload.english {
            std::hint::black_box(index.ranking(query, 8, &on));
            let started = Instant::now();
            std::hint::black_box(index.ranking(query, 8, &on));
            lexical.push(started.elapsed().as_secs_f64() * 1e6);
            let (embed_us, fuse_us, _) = cold(query)?;
            embedding.push(embed_us);
            fused.push(fuse_us);
            english.push(embed_us + fuse_us);
            if round == 0 {
                std::hint::black_box(index.answer_ranking(query, 8, &on));
            }
            let started = Instant::now();
            std::hint::black_box(index.answer_ranking(query, 8, &on));
            repeated.push(started.elapsed().as_secs_f64() * 1e6);
        }
        for query in &workload.misspelled {
            let (embed_us, fuse_us, _) = cold(query)?;
            misspelled.push(embed_us + fuse_us);
        }
        for query in NON_ENGLISH {
            let (embed_us, fuse_us, found) = cold(query)?;
            if found == 0 {
                return Err(format!("{query:?} found nothing in {tools} tools"));
            }
            foreign.push(embed_us + fuse_us);
        }
    }
    Ok(HybridSearchReport {
        tools,
        rounds,
        build_ms,
        open_ms,
        vectors_ms,
        cached: embedded.cached,
        computed: embedded.computed,
        restart_ms,
        restart_computed,
        rss_mib: [rss_before, rss_model, rss_ready],
        lexical: Latency::of(lexical),
        english: Latency::of(english),
        embedding: Latency::of(embedding),
        fusion: Latency::of(fused),
        repeated: Latency::of(repeated),
        misspelled: Latency::of(misspelled),
        non_english: Latency::of(foreign),
    })
}
